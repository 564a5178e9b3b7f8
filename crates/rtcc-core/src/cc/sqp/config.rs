//! SQP's parameters: defaults with their sources, and validation into [`SqpParams`].

use super::min_owd::Anchor;
use super::update::Bounds;
use crate::cc::params::controller_config;
use crate::units::{Duration, Rate};
use crate::video::packetizer::{Packetizer, MIN_SPLIT_PAYLOAD};

controller_config! {
    /// SQP's parameters (see the table in the module header for sources).
    pub struct SqpConfig {
        /// m: each frame is paced at m × the estimate (§4.5)
        pub pacing_multiplier: f64 = 2.0,
        /// T: samples are multiplied by T before the update (§4.5)
        pub target_multiplier: f64 = 0.9,
        /// δ: step size of the update rule, Eq. 4 (§4.4)
        pub step: Rate = Rate::from_kbps(320.0),
        /// frame rate at which δ is one update's step (the paper's 60 fps); 0: δ per update
        ///
        /// At another frame rate each update moves `δ·step_fps/fps`, so the estimate moves as
        /// far per second as at the paper's 60 fps.
        pub step_fps: f64 = 60.0,
        /// no decrease goes below this share of T × the rate the path delivered the sampled
        /// train at (0: none)
        ///
        /// The judgment bound against Eq. 1's penalty counted once per frame in flight.
        pub delivery_floor: f64 = 0.4,
        /// r: reward weight of the update rule, Eq. 4 (§4.4)
        pub reward: f64 = 0.25,
        /// window of the minimum one-way delay, as a multiple of sRTT (§4.3)
        ///
        /// §5.3 sweeps it.
        pub min_owd_window: f64 = 2.0,
        /// window end: "frame" (the sampled frame) or "feedback" (the feedback's arrival)
        pub min_owd_anchor: String = "frame".into(),
        /// use Eq. 2 (extrapolate small frames to B·I) instead of Eq. 1
        pub undershoot_correction: bool = true,
        /// packet-level form of Eq. 1: "none" (as printed), "numerator" (F minus the first
        /// packet) or "dispersion" (dispersion plus one packet time)
        pub train_correction: String = "none".into(),
        /// encoder target follows decreases at once, increases beyond this fraction (§4.1)
        ///
        /// The hysteresis band between the estimate and the encoder target.
        pub hysteresis: f64 = 0.05,
        /// estimate before the first sample (libwebrtc's start bitrate)
        pub initial_rate: Rate = Rate::from_kbps(300.0),
        /// lowest estimate; cannot be below 2 x 50 B x 8 x fps (every frame two packets; a
        /// one-packet frame has no dispersion)
        ///
        /// `None`: the flow's minimum bitrate, never below two packets per frame.
        #[doc_default = "the flow's min_bitrate"]
        pub min_rate: Option<Rate> = None,
        /// highest estimate (the application's cap)
        pub max_rate: Rate = Rate::from_mbps(100.0),
    }
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
    /// Share of `T` × the sampled train's delivery rate below which no decrease goes.
    pub delivery_floor: f64,
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
        finite(
            "step_fps",
            self.step_fps,
            self.step_fps >= 0.0,
            "a frame rate >= 0 (0: the step per update)",
        )?;
        finite(
            "delivery_floor",
            self.delivery_floor,
            (0.0..=1.0).contains(&self.delivery_floor),
            "a number in [0, 1]",
        )?;
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
            delta: if self.step_fps > 0.0 {
                self.step.bps() * self.step_fps / fps
            } else {
                self.step.bps()
            },
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
            delivery_floor: self.delivery_floor,
        })
    }
}
