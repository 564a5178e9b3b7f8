//! `gcc`: Google Congestion Control, the rate controller of WebRTC and the baseline every other
//! controller is compared against. Two profiles share the registry name:
//!
//! - `profile = "webrtc"` (default): today's send-side GCC as libwebrtc's `goog_cc` implements
//!   it, driven by transport-wide feedback (`webrtc.rs`). A delay-based estimate (inter-arrival
//!   grouping → trendline slope → over-use detector with adaptive threshold → AIMD with a
//!   link-capacity estimate) caps a loss-based estimate (2 % / 10 % thresholds); the
//!   acknowledged bitrate anchors decreases and limits increases; probes (3× and 6× the start
//!   rate at start-up, optionally every 5 s while application limited) discover capacity faster
//!   than the 8 %/s ramp; packets are paced at 2.5× the target.
//! - `profile = "paper"`: GCC as the seed describes it (Carlucci, De Cicco, Mascolo, "Controlling
//!   Queuing Delays for Real-Time Communication: The Interplay of E2E and AQM Algorithms", §2.2):
//!   a receiver-side Kalman arrival-time filter, over-use detector and Increase/Decrease/Hold
//!   rate controller sending A_r in REMB messages (`remb.rs`, `kalman.rs`), and the sender's
//!   loss-based controller of Eq. (2) with `A_s = min(A_s, A_r)` (`paper.rs`).
//!
//! Components, one file each, each citing its sources and constants: `inter_arrival.rs`,
//! `trendline.rs`, `overuse.rs` (shared by both profiles), `aimd.rs`, `acked_bitrate.rs`,
//! `loss_based.rs`, `probe.rs`, `probe_estimator.rs`, `alr.rs`, `kalman.rs`, `remb.rs`.
//! Constants were checked against libwebrtc (`modules/congestion_controller/goog_cc/`,
//! `modules/remote_bitrate_estimator/`, `modules/pacing/`) and draft-ietf-rmcat-gcc-02.
//!
//! Defaults (libwebrtc): start 300 kbps (`BitrateConstraints`' `kDefaultStartBitrateBps`), min
//! 30 kbps (`kDefaultMinVideoBitrateBps`), max 30 Mbps (`AimdRateControl`'s
//! `max_configured_bitrate_`), pacing factor 2.5 (`kDefaultPaceMultiplier`), back-off 0.85
//! (`kDefaultBackoffFactor`; the paper profile's α, inside the seed's [0.8, 0.95]).
//!
//! Judgment calls (all in `docs/gcc.md`): both profiles ask for feedback at the end of every
//! frame and every 50 ms (the paper's receiver-side logic runs on the receive times this
//! feedback carries, see `paper.rs`; for `webrtc` it is a little more frequent than libwebrtc's
//! 50–100 ms transport feedback); the `paper` detector scales the Kalman offset by min(n, 60)
//! before comparing it with γ, as the paper's Chrome did, because the seed's literal reading
//! cannot reproduce the seed's own results (`overuse.rs`; `offset_scaling = "none"` gives the
//! literal reading); η = 1.08 per second and A_r starting at R after 500 ms
//! (`remb.rs`); periodic ALR probing off by default as for libwebrtc camera streams (`probe.rs`);
//! the simulator's exact receive times are not rounded to milliseconds.

use super::params::controller_config;
use super::{
    build_fn, parse_config, Controller, ControllerContext, ControllerError, ControllerInfo,
};
use super::{FeedbackPolicy, Params};
use crate::units::{Duration, Rate};
use serde::{Deserialize, Serialize};

pub mod acked_bitrate;
pub mod aimd;
pub mod alr;
pub mod inter_arrival;
pub mod kalman;
pub mod loss_based;
pub mod loss_based_v2;
pub mod overuse;
pub mod paper;
pub mod probe;
pub mod probe_estimator;
pub mod remb;
pub mod trendline;
pub mod webrtc;

/// How the `paper` profile's detector scales the Kalman offset before comparing it with γ.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum OffsetScaling {
    /// `T = min(n, 60) · m`, as the paper's Chrome compared it (default).
    #[default]
    Chrome,
    /// `T = m`, the seed's text read literally.
    None,
}

/// How the `paper` profile's receiver groups packets before its Kalman filter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Grouping {
    /// One group per video frame (default): the seed's §2.2 ("the video frames are the
    /// groups", with t_i and T_i the times of a frame's last packet).
    #[default]
    Frame,
    /// libwebrtc's receive-side grouping: packets sent within 5 ms of a group's first, with
    /// burst merging (`inter_arrival.rs`, the same rules as the `webrtc` profile).
    Burst,
}

/// Which GCC.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Profile {
    /// libwebrtc's send-side `goog_cc`.
    #[default]
    Webrtc,
    /// The seed's §2.2 receiver-side GCC with REMB and Eq. (2).
    Paper,
}

controller_config! {
    /// GCC's parameters (defaults from libwebrtc, see the module header).
    pub struct GccConfig {
        /// "webrtc" (libwebrtc goog_cc, transport-wide feedback) or "paper" (GCC-AQM paper §2.2:
        /// Kalman filter, REMB, Eq. 2)
        pub profile: Profile = Profile::Webrtc,
        /// target before any estimate
        pub start_bitrate: Rate = Rate::from_kbps(300.0),
        /// lowest target
        pub min_bitrate: Rate = Rate::from_kbps(30.0),
        /// highest target and probe rate
        pub max_bitrate: Rate = Rate::from_mbps(30.0),
        /// pacing rate as a multiple of the target; 0 disables pacing
        pub pacing_factor: f64 = 2.5,
        /// decrease factor on the measured rate (AIMD beta; the paper's alpha)
        ///
        /// Multiplicative decrease on the measured rate: AIMD's β (`webrtc`) or the remote rate
        /// controller's α (`paper`).
        pub backoff: f64 = 0.85,
        /// webrtc only: probe at 3x and 6x the start bitrate at start-up
        #[doc_default = "true"]
        pub initial_probing: Option<bool> = None,
        /// webrtc only: probe at 2x the estimate every 5 s while application limited
        #[doc_default = "false"]
        pub alr_probing: Option<bool> = None,
        /// paper only: "chrome" compares min(n, 60) x the Kalman offset with the threshold (as
        /// the measured Chrome), "none" the offset itself (the seed's text)
        #[doc_default = "chrome"]
        pub offset_scaling: Option<OffsetScaling> = None,
        /// paper only: "frame" makes each video frame one group of the Kalman filter (the seed),
        /// "burst" groups packets sent within 5 ms as libwebrtc does
        #[doc_default = "frame"]
        pub grouping: Option<Grouping> = None,
        /// webrtc only: loss-based estimator, "v1" (2 % / 10 % loss rules) or "v2" (libwebrtc's
        /// LossBasedBweV2, as Chrome runs it)
        #[doc_default = "v1"]
        pub loss_based: Option<loss_based_v2::LossBasedVersion> = None,
    }
}

impl GccConfig {
    /// Check the parameters; the error names the bad one.
    pub fn validate(&self) -> Result<(), String> {
        let (min, start, max) = (
            self.min_bitrate.bps(),
            self.start_bitrate.bps(),
            self.max_bitrate.bps(),
        );
        if min <= 0.0 {
            return Err(format!(
                "min_bitrate must be positive, got {}",
                self.min_bitrate
            ));
        }
        if !(min <= start && start <= max) {
            return Err(format!(
                "bitrates must satisfy min_bitrate <= start_bitrate <= max_bitrate, got {} / {} / \
                    {}",
                self.min_bitrate, self.start_bitrate, self.max_bitrate
            ));
        }
        if !(self.pacing_factor >= 0.0 && self.pacing_factor.is_finite()) {
            return Err(format!(
                "pacing_factor must be a finite number >= 0, got {}",
                self.pacing_factor
            ));
        }
        if !(self.backoff > 0.0 && self.backoff < 1.0) {
            return Err(format!(
                "backoff must be between 0 and 1 (exclusive), got {}",
                self.backoff
            ));
        }
        if self.profile == Profile::Paper {
            for (name, set) in [
                ("initial_probing", self.initial_probing.is_some()),
                ("alr_probing", self.alr_probing.is_some()),
            ] {
                if set {
                    return Err(format!(
                        "{name} applies to profile \"webrtc\" only (the paper's GCC does not probe)"
                    ));
                }
            }
            if self.loss_based.is_some() {
                return Err(
                    "loss_based applies to profile \"webrtc\" only (the paper's GCC uses the \
                     seed's Eq. (2) loss controller)"
                        .into(),
                );
            }
        } else if self.offset_scaling.is_some() {
            return Err(
                "offset_scaling applies to profile \"paper\" only (the webrtc trendline detector \
                 always scales by min(n, 60) · 4)"
                    .into(),
            );
        } else if self.grouping.is_some() {
            return Err(
                "grouping applies to profile \"paper\" only (the webrtc profile always groups \
                 by 5 ms bursts)"
                    .into(),
            );
        }
        Ok(())
    }
}

pub fn info() -> ControllerInfo {
    ControllerInfo {
        name: "gcc".into(),
        summary:
            "Google Congestion Control: libwebrtc's send-side goog_cc (profile \"webrtc\") or the \
             GCC-AQM paper's receiver-side GCC with REMB (profile \"paper\")."
                .into(),
        params: GccConfig::param_docs(),
        feedback: FeedbackPolicy {
            interval: Some(Duration(50_000_000)),
            per_frame: true,
            frame_acks: false,
            rate_reports: None,
        },
        media: Default::default(),
        build: build_fn(build),
    }
}

fn build(params: &Params, ctx: &ControllerContext) -> Result<Box<dyn Controller>, ControllerError> {
    let mut config: GccConfig = parse_config("gcc", params)?;
    (config.min_bitrate, config.start_bitrate, config.max_bitrate) = ctx.media.controller_rates(
        params,
        ["min_bitrate", "start_bitrate", "max_bitrate"],
        (config.min_bitrate, config.start_bitrate, config.max_bitrate),
    );
    config
        .validate()
        .map_err(|message| ControllerError::BadParams {
            controller: "gcc".into(),
            message,
        })?;
    Ok(match config.profile {
        Profile::Webrtc => Box::new(webrtc::WebRtcGcc::new(
            &config,
            ctx.now,
            ctx.max_payload.0.min(u32::MAX as u64) as u32,
        )),
        Profile::Paper => Box::new(paper::PaperGcc::new(&config)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::test_support::context as ctx;

    fn build_err(toml_text: &str) -> String {
        let params: Params = toml::from_str(toml_text).unwrap();
        match super::super::create("gcc", &params, &ctx()) {
            Ok(_) => panic!("{toml_text:?} was accepted"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn bad_parameters_are_messages_that_name_the_parameter() {
        let e = build_err("start_bitrate = \"10kbps\"");
        assert!(e.contains("min_bitrate <= start_bitrate"), "{e}");
        let e = build_err("start_bitrate = \"300kbps\"\nmax_bitrate = \"100kbps\"");
        assert!(e.contains("start_bitrate <= max_bitrate"), "{e}");
        let e = build_err("min_bitrate = \"0kbps\"");
        assert!(e.contains("min_bitrate must be positive"), "{e}");
        let e = build_err("backoff = 1.0");
        assert!(e.contains("backoff"), "{e}");
        let e = build_err("pacing_factor = -1.0");
        assert!(e.contains("pacing_factor"), "{e}");
        let e = build_err("profile = \"chrome\"");
        assert!(e.contains("webrtc") && e.contains("paper"), "{e}");
        let e = build_err("profile = \"paper\"\nalr_probing = true");
        assert!(
            e.contains("alr_probing applies to profile \"webrtc\""),
            "{e}"
        );
        let e = build_err("offset_scaling = \"none\"");
        assert!(
            e.contains("offset_scaling applies to profile \"paper\""),
            "{e}"
        );
        let e = build_err("profile = \"paper\"\noffset_scaling = \"x\"");
        assert!(e.contains("chrome") && e.contains("none"), "{e}");
        let e = build_err("start = \"1Mbps\"");
        assert!(e.contains("start_bitrate"), "lists the valid names: {e}");
    }

    #[test]
    fn both_profiles_start_at_the_start_bitrate_paced_at_2_5x() {
        for profile in ["webrtc", "paper"] {
            let params: Params = toml::from_str(&format!("profile = \"{profile}\"")).unwrap();
            let c = super::super::create("gcc", &params, &ctx()).unwrap();
            let d = c.decision();
            assert_eq!(d.target_bitrate, Rate(300e3), "{profile}");
            assert_eq!(d.pacing_rate, Some(Rate(750e3)), "{profile}");
            // Only webrtc probes: its first cluster (3 × 300 kbps) is ready at once.
            assert_eq!(
                c.decision().probe.map(|p| p.rate),
                (profile == "webrtc").then_some(Rate(900e3))
            );
        }
    }
}
