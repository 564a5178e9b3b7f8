//! SQP's parameters: defaults with their sources, and validation into [`SqpParams`].

use super::min_owd::Anchor;
use super::update::Bounds;
use crate::units::{Duration, Rate};
use crate::video::packetizer::{Packetizer, MIN_SPLIT_PAYLOAD};
use serde::Deserialize;

/// SQP's parameters (see the table in the module header for sources).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SqpConfig {
    /// Pacing multiplier m: each frame is paced at m × B. Default 2.0 (§4.5).
    #[serde(default = "default_m")]
    pub pacing_multiplier: f64,
    /// Target multiplier T applied to every sample. Default 0.9 (§4.5).
    #[serde(default = "default_t")]
    pub target_multiplier: f64,
    /// Step size δ of Eq. 4. Default 320 kbps (§4.4).
    #[serde(default = "default_step")]
    pub step: Rate,
    /// Reward weight r of Eq. 4. Default 0.25 (§4.4).
    #[serde(default = "default_reward")]
    pub reward: f64,
    /// Δ_min window as a multiple of sRTT. Default 2.0 (§4.3, §5.3).
    #[serde(default = "default_window")]
    pub min_owd_window: f64,
    /// What the Δ_min window is anchored at: "frame" (default) or "feedback".
    #[serde(default = "default_anchor")]
    pub min_owd_anchor: String,
    /// Eq. 2's undershoot correction. Default true.
    #[serde(default = "default_true")]
    pub undershoot_correction: bool,
    /// Packet-level correction of Eq. 1: "none" (as printed, default), "numerator" (F minus
    /// the first packet) or "dispersion" (dispersion extended by one packet).
    #[serde(default = "default_train_correction")]
    pub train_correction: String,
    /// Hysteresis band between the estimate and the encoder target. Default 0.05.
    #[serde(default = "default_hysteresis")]
    pub hysteresis: f64,
    /// Estimate before the first sample. Default 2 Mbps.
    #[serde(default = "default_initial")]
    pub initial_rate: Rate,
    /// Lowest estimate. Default: the flow's minimum bitrate (never below two packets per frame).
    #[serde(default)]
    pub min_rate: Option<Rate>,
    /// Highest estimate. Default 100 Mbps.
    #[serde(default = "default_max")]
    pub max_rate: Rate,
}

fn default_m() -> f64 {
    2.0
}
fn default_t() -> f64 {
    0.9
}
fn default_step() -> Rate {
    Rate::from_kbps(320.0)
}
fn default_reward() -> f64 {
    0.25
}
fn default_window() -> f64 {
    2.0
}
fn default_anchor() -> String {
    "frame".into()
}
fn default_true() -> bool {
    true
}
fn default_train_correction() -> String {
    "none".into()
}
fn default_hysteresis() -> f64 {
    0.05
}
fn default_initial() -> Rate {
    Rate::from_mbps(2.0)
}
fn default_max() -> Rate {
    Rate::from_mbps(100.0)
}

/// Largest fraction of the estimate one update may remove (judgment: never more than halve).
pub const MAX_DECREASE: f64 = 0.5;
/// Fallback feedback interval: QUIC's default `max_ack_delay` (RFC 9000 §18.2).
pub const FEEDBACK_INTERVAL: Duration = Duration(25_000_000);

/// How an `n`-packet train enters Eq. 1. The paper's analysis is fluid; at packet level the
/// dispersion `R_end − R_start` spans `n − 1` packets while `F` counts `n` (see `docs/sqp.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrainCorrection {
    /// `F / (R_end − S_start − Δ_min)` as printed (reads `n/(n−1)` high on an idle link).
    None,
    /// `(F − first packet)` in the numerator: the packet-train estimate `(n−1)L/Δ` of [35].
    Numerator,
    /// The dispersion extended by the first packet's time at the train's own receive rate:
    /// the whole train's drain time, `T_d` of Eq. 5–6.
    Dispersion,
}

/// Validated parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SqpParams {
    pub m: f64,
    pub t: f64,
    pub delta: f64,
    pub r: f64,
    pub window: f64,
    pub anchor: Anchor,
    pub eq2: bool,
    pub train_correction: TrainCorrection,
    pub hysteresis: f64,
    pub initial: f64,
    pub bounds: Bounds,
}

impl SqpConfig {
    /// Check every value; `fps` gives the two-packet floor, `default_min` is the lowest
    /// estimate when `min_rate` is not set (the flow's minimum bitrate).
    pub fn validate(&self, fps: f64, default_min: Rate) -> Result<SqpParams, String> {
        let finite = |name: &str, v: f64, ok: bool, what: &str| {
            if v.is_finite() && ok {
                Ok(())
            } else {
                Err(format!("{name} must be {what}, got {v}"))
            }
        };
        let m = self.pacing_multiplier;
        finite(
            "pacing_multiplier",
            m,
            m > 1.0,
            "a number > 1 (§4.5: m > 1)",
        )?;
        let t = self.target_multiplier;
        finite(
            "target_multiplier",
            t,
            t > 0.0 && t <= 1.0,
            "a number in (0, 1]",
        )?;
        finite(
            "step",
            self.step.bps(),
            self.step.bps() > 0.0,
            "a positive rate",
        )?;
        finite("reward", self.reward, self.reward > 0.0, "a number > 0")?;
        finite(
            "min_owd_window",
            self.min_owd_window,
            self.min_owd_window > 0.0,
            "a number > 0 (a multiple of sRTT)",
        )?;
        finite(
            "hysteresis",
            self.hysteresis,
            (0.0..1.0).contains(&self.hysteresis),
            "a number in [0, 1)",
        )?;
        let anchor = Anchor::parse(&self.min_owd_anchor)?;
        let train_correction = match self.train_correction.as_str() {
            "none" => TrainCorrection::None,
            "numerator" => TrainCorrection::Numerator,
            "dispersion" => TrainCorrection::Dispersion,
            s => {
                return Err(format!(
                    "train_correction must be \"none\", \"numerator\" or \"dispersion\", got {s:?}"
                ))
            }
        };
        if !(fps > 0.0 && fps.is_finite()) {
            return Err(format!("needs a positive frame rate, got {fps} fps"));
        }
        let two_packets = Packetizer::two_packet_floor_bps(fps);
        let min_rate = match self.min_rate {
            None => default_min.bps().max(two_packets),
            Some(r) if r.bps() >= two_packets - 1e-6 && r.bps().is_finite() => r.bps(),
            Some(r) => {
                return Err(format!(
                    "min_rate {r} is below {}, the rate at which each frame is two packets of \
                     at least {MIN_SPLIT_PAYLOAD} bytes at {fps} fps: a one-packet frame has no \
                     dispersion and SQP's sample (Eq. 1) is undefined; raise min_rate",
                    Rate(two_packets)
                ))
            }
        };
        let max_rate = self.max_rate.bps();
        if !(max_rate.is_finite() && max_rate >= min_rate) {
            return Err(format!(
                "max_rate {} must be at least min_rate {}",
                self.max_rate,
                Rate(min_rate)
            ));
        }
        let initial = self.initial_rate.bps();
        if !(initial.is_finite() && initial > 0.0) {
            return Err(format!(
                "initial_rate must be positive, got {}",
                self.initial_rate
            ));
        }
        Ok(SqpParams {
            m,
            t,
            delta: self.step.bps(),
            r: self.reward,
            window: self.min_owd_window,
            anchor,
            eq2: self.undershoot_correction,
            train_correction,
            hysteresis: self.hysteresis,
            initial: initial.clamp(min_rate, max_rate),
            bounds: Bounds {
                min_rate,
                max_rate,
                max_decrease: MAX_DECREASE,
            },
        })
    }
}
