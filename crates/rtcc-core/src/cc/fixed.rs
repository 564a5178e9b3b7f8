//! `fixed`: a constant target bitrate.
//!
//! The simplest honest controller: the encoder is asked for `rate` for the whole run, whatever the
//! network does, and packets are paced at `pacing_factor × rate` (2.5 by default, libwebrtc's
//! pacing factor) so that a frame leaves as a short burst rather than at once. It is the baseline
//! that shows what the path alone does to a video flow (a rate below capacity sees only
//! propagation and serialisation; a rate above it fills the queue and loses the excess).

use super::params::controller_config;
use super::{
    boxed, build_fn, parse_config, Controller, ControllerContext, ControllerError, ControllerInfo,
};
use super::{Decision, FeedbackPolicy, Params};
use crate::packet::FeedbackReport;
use crate::units::{Rate, Time};

controller_config! {
    /// `fixed`'s parameters.
    pub struct FixedConfig {
        /// target bitrate, e.g. "5Mbps" (required)
        pub rate: Rate,
        /// pacing rate as a multiple of the target; 0 sends each frame at once
        ///
        /// 2.5 is libwebrtc's `PacingController` default pacing factor.
        pub pacing_factor: f64 = 2.5,
    }
}

pub struct Fixed {
    decision: Decision,
}

impl Fixed {
    pub fn new(config: FixedConfig) -> Result<Fixed, String> {
        if config.rate.bps() <= 0.0 {
            return Err("rate must be positive".into());
        }
        if !(config.pacing_factor >= 0.0 && config.pacing_factor.is_finite()) {
            return Err(format!(
                "pacing_factor must be a finite number >= 0, got {}",
                config.pacing_factor
            ));
        }
        let pacing =
            (config.pacing_factor > 0.0).then_some(Rate(config.rate.0 * config.pacing_factor));
        Ok(Fixed {
            decision: Decision::rate_only(config.rate, pacing),
        })
    }
}

impl Controller for Fixed {
    fn on_feedback(&mut self, _now: Time, _report: &FeedbackReport) {}
    fn decision(&self) -> Decision {
        self.decision
    }
}

pub fn info() -> ControllerInfo {
    ControllerInfo {
        name: "fixed".into(),
        summary: "Constant target bitrate, whatever the network does (baseline).".into(),
        params: FixedConfig::param_docs(),
        feedback: FeedbackPolicy {
            interval: Some(crate::units::Duration(50_000_000)),
            per_frame: false,
            frame_acks: false,
            rate_reports: None,
        },
        media: Default::default(),
        build: build_fn(build),
    }
}

fn build(
    params: &Params,
    _ctx: &ControllerContext,
) -> Result<Box<dyn Controller>, ControllerError> {
    let config: FixedConfig = parse_config("fixed", params)?;
    boxed("fixed", Fixed::new(config))
}
