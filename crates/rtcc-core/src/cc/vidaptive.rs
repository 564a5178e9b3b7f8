//! `vidaptive`: Vidaptive (Karimi, Fouladi, Sivaraman & Alizadeh, "Vidaptive: Efficient and
//! Responsive Rate Control for Real-Time Video on Variable Networks", arXiv 2309.16869 v1).
//!
//! Vidaptive runs a window-based, delay-controlling congestion controller (Copa with δ = 0.9 by
//! default, or RoCC with γ = 0.5; §3.2, §4, §5.1; here any registered controller with a window,
//! by name) as if the video were a backlogged flow, and fits the encoder to that controller's
//! rate instead of the other way round:
//!
//! - **Transport (§3.2).** The pacer is gated by the wrapped controller's window and pacing rate.
//!   When the window and the pacer allow a packet but no media waits, a *dummy* (padding) packet
//!   of at most 200 B is sent instead, so the window controller always sees a full pipe. Dummies
//!   never wait behind or in front of media (the pacer sends padding only when its media queue is
//!   empty), pause in the 5 ms before each frame capture (a dummy sent just before a frame would
//!   only delay it if the link were degrading), are rate-limited to the maximum video bitrate
//!   (12 Mbit/s) and stop altogether once the video target reaches it.
//! - **Latency safeguards (§3.3).** At each capture, if the oldest media packet in the pacer queue
//!   has waited more than τ = 33 ms the frame is skipped (the encoder pauses); if more than 1 s,
//!   the encoder is reset: the pacer's media queue is flushed and the frame is coded as a keyframe.
//! - **Encoder target (§3.4, App. A.1, Algorithm 1).** target = α·CC-Rate with CC-Rate =
//!   cwnd / smoothed RTT (the wrapped controller's target). α is chosen before each encoded frame
//!   by hindsight optimisation over the frames whose last packet left the pacer in the last
//!   T = 1 s ([`find_alpha`]), trading a frame-rate score against a bitrate score with λ = 0.5.
//! - **Resolution (§3.4, App. A.2, Algorithm 2).** One rung down after more than 15 consecutive
//!   frames with N/T ≤ 5 frame/s, one rung up after more than 30 consecutive frames with
//!   α* > 0.9 and enc_ratio < 0.9, at most once per T ([`ResolutionRule`]).
//!
//! Pseudo-code typos of the paper's Algorithms 1 and 2 are corrected as `docs/vidaptive.md`
//! explains (the objective uses the candidate α and f_max, the candidate is τ·α_i/d_i, the
//! outage rule steps α *down* by 0.15, IncRes is +1).
//!
//! Ablation switches (§5.3): `dummies = false` (no padding), `safeguards = false` (no pause and
//! no reset), `alpha = 1.0` (a fixed α instead of the optimisation) and
//! `adapt_resolution = false`.

use super::params::controller_config;
use super::{
    copa, parse_config, Controller, ControllerContext, ControllerError, ControllerInfo, Decision,
    EncodeAction, FeedbackPolicy, FrameAction, FrameController, FrameView, Params, Registry,
};
use crate::packet::{FeedbackReport, FrameAck, FrameInfo, PacketKind, RateReport, SentPacket};
use crate::units::{Bytes, Duration, Rate, Time};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::sync::Arc;

/// Smallest α (Algorithm 1, `α_min`).
pub const ALPHA_MIN: f64 = 0.05;
/// Largest α (Algorithm 1, `α_max`).
pub const ALPHA_MAX: f64 = 1.0;
/// α step down per frame while the frame rate is below [`MIN_FRAME_RATE`] (Algorithm 1).
pub const OUTAGE_STEP: f64 = 0.15;
/// Frames per second at or below which the window is an outage (Algorithms 1 and 2).
pub const MIN_FRAME_RATE: f64 = 5.0;
/// enc_ratio below which the encoder undershoots (Algorithm 2, `MinEncRatio`).
pub const MIN_ENC_RATIO: f64 = 0.9;
/// α* above which an undershooting encoder asks for more pixels (Algorithm 2).
pub const INC_ALPHA: f64 = 0.9;
/// Consecutive Decrease signals needed, exclusive (Algorithm 2, `ResDownThresh`).
pub const RES_DOWN_THRESH: u32 = 15;
/// Consecutive Increase signals needed, exclusive (Algorithm 2, `ResUpThresh`).
pub const RES_UP_THRESH: u32 = 30;

/// How α is chosen.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, Serialize)]
#[serde(untagged)]
pub enum AlphaRule {
    /// A fixed α in [0.05, 1].
    Fixed(f64),
    /// `"auto"`: Algorithm 1.
    Auto(Auto),
}

/// The word `"auto"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Auto {
    Auto,
}

impl AlphaRule {
    fn fixed(self) -> Option<f64> {
        match self {
            AlphaRule::Fixed(a) => Some(a),
            AlphaRule::Auto(_) => None,
        }
    }
}

controller_config! {
    /// Vidaptive's parameters (§5.1's values unless marked).
    pub struct VidaptiveConfig {
        /// wrapped controller: any registered controller with a window (copa, rocc, bbr, cubic,
        /// reno, ...)
        pub cc: String = "copa".into(),
        /// parameters of the wrapped controller, e.g. { initial_cwnd = 20 }
        pub cc_params: Params = Params::new(),
        /// Copa's delta (cc = "copa", unless cc_params sets it)
        pub delta: f64 = 0.9,
        /// RoCC's gamma (cc = "rocc", unless cc_params sets it)
        pub gamma: f64 = 0.5,
        /// send dummy padding when the window allows and no media waits
        pub dummies: bool = true,
        /// largest dummy packet
        ///
        /// §4.
        pub dummy_size: Bytes = Bytes(200),
        /// no dummies this long before each capture
        ///
        /// §3.2.
        pub blackout: Duration = Duration::from_millis(5),
        /// cap on the encoder target and on the dummy rate; no dummies once the target reaches it
        pub max_bitrate: Rate = Rate::from_mbps(12.0),
        /// encoder pause (oldest queued packet older than tau) and reset (older than
        /// reset_after)
        pub safeguards: bool = true,
        /// pause threshold, also the on-time delay of the alpha optimisation
        ///
        /// τ: pause when the oldest queued packet is older (also Algorithm 1's τ).
        pub tau: Duration = Duration::from_millis(33),
        /// reset threshold: flush the pacer queue and code a keyframe
        ///
        /// Reset when the oldest queued packet is older (§3.3).
        pub reset_after: Duration = Duration::from_millis(1000),
        /// "auto": hindsight optimisation (Algorithm 1); a number in [0.05, 1]: that fixed
        /// alpha (ablation)
        pub alpha: AlphaRule = AlphaRule::Auto(Auto::Auto),
        /// weight of frame rate against bitrate in the alpha optimisation
        ///
        /// λ.
        pub lambda: f64 = 0.5,
        /// T: optimisation window and least time between resolution changes
        pub window: Duration = Duration::from_millis(1000),
        /// step the encoder's resolution ladder (Algorithm 2)
        pub adapt_resolution: bool = true,
    }
}

/// The constants of Algorithm 1.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AlphaParams {
    /// λ in (0, 1).
    pub lambda: f64,
    /// τ, seconds.
    pub tau: f64,
    /// Camera frame rate f_max (1/Δ).
    pub fmax: f64,
    /// T, seconds.
    pub window: f64,
}

impl Default for AlphaParams {
    fn default() -> Self {
        AlphaParams {
            lambda: 0.5,
            tau: 0.033,
            fmax: 30.0,
            window: 1.0,
        }
    }
}

/// Eq. 4–6: `λ/(1−λ)·F̃(x) + B̃(x)` for α = `x` over the normalised delays `k` (d_i/α_i, s).
pub fn objective(x: f64, k: &[f64], p: &AlphaParams) -> f64 {
    if k.is_empty() {
        return 0.0;
    }
    let n = k.len() as f64;
    // A tolerance so that x_i·k_i == τ exactly at a breakpoint counts as on time.
    let f = k
        .iter()
        .filter(|&&ki| x * ki <= p.tau * (1.0 + 1e-9))
        .count() as f64
        / n;
    let b = (p.fmax * k.iter().map(|&ki| x * ki).sum::<f64>() / n).min(1.0);
    p.lambda / (1.0 - p.lambda) * f + b
}

/// Algorithm 1 (corrected): α* from the window's samples `(d_i seconds, α_i)`. With N/T at or
/// below 5 frame/s the window is an outage and α steps down by 0.15 from `alpha_prev` (floor
/// 0.05); otherwise the best of α_max and the candidates τ·α_i/d_i in [α_min, α_max), ties
/// keeping the larger α.
pub fn find_alpha(samples: &[(f64, f64)], alpha_prev: f64, p: &AlphaParams) -> f64 {
    let n = samples.len() as f64;
    if n / p.window <= MIN_FRAME_RATE {
        return (alpha_prev - OUTAGE_STEP).max(ALPHA_MIN);
    }
    let mut k: Vec<f64> = samples
        .iter()
        .map(|&(d, a)| d.max(0.0) / a.max(ALPHA_MIN))
        .filter(|v| v.is_finite())
        .collect();
    k.sort_by(f64::total_cmp);
    let mut best = ALPHA_MAX;
    let mut best_obj = objective(ALPHA_MAX, &k, p);
    for &ki in &k {
        if ki > p.tau / ALPHA_MAX && ki <= p.tau / ALPHA_MIN {
            let x = p.tau / ki;
            let o = objective(x, &k, p);
            if best_obj < o {
                best_obj = o;
                best = x;
            }
        }
    }
    best
}

/// Algorithm 2's direction for one frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResSignal {
    Decrease = -1,
    Hold = 0,
    Increase = 1,
}

/// Algorithm 2 (corrected): counts consecutive equal signals and changes the resolution after
/// more than [`RES_DOWN_THRESH`] Decreases or more than [`RES_UP_THRESH`] Increases, never
/// twice within T.
#[derive(Debug, Clone)]
pub struct ResolutionRule {
    window: Duration,
    prev: ResSignal,
    count: u32,
    last_change: Time,
}

impl ResolutionRule {
    /// A rule whose first change may come T after `start`.
    pub fn new(window: Duration, start: Time) -> ResolutionRule {
        ResolutionRule {
            window,
            prev: ResSignal::Hold,
            count: 0,
            last_change: start,
        }
    }

    /// One frame: `n` samples in the window, the frame's α*, the encoder's output over target.
    pub fn step(&mut self, n: usize, alpha: f64, enc_ratio: f64, now: Time) -> ResSignal {
        let t = self.window.as_secs_f64().max(1e-9);
        let sig = if n as f64 / t <= MIN_FRAME_RATE {
            ResSignal::Decrease
        } else if enc_ratio < MIN_ENC_RATIO && alpha > INC_ALPHA {
            ResSignal::Increase
        } else {
            ResSignal::Hold
        };
        if sig == self.prev && sig != ResSignal::Hold {
            self.count += 1;
        } else {
            self.count = 0;
        }
        self.prev = sig;
        if now.saturating_since(self.last_change) > self.window {
            let fire = match sig {
                ResSignal::Decrease => self.count > RES_DOWN_THRESH,
                ResSignal::Increase => self.count > RES_UP_THRESH,
                ResSignal::Hold => false,
            };
            if fire {
                self.last_change = now;
                self.count = 0;
                return sig;
            }
        }
        ResSignal::Hold
    }
}

/// A frame queued in the pacer whose last packet has not left yet.
#[derive(Debug, Clone, Copy)]
struct Pending {
    frame: u64,
    enqueued: Time,
    alpha: f64,
}

/// An encoded frame, for enc_ratio.
#[derive(Debug, Clone, Copy)]
struct Encoded {
    at: Time,
    bytes: f64,
    /// Bytes the target allotted the frame (target / fps).
    budget: f64,
}

pub struct Vidaptive {
    cfg: VidaptiveConfig,
    inner: Box<dyn Controller>,
    frame_interval: Duration,
    alpha_params: AlphaParams,
    alpha: f64,
    /// When the first frame was encoded (the low-N rule applies from T later).
    first_encode: Option<Time>,
    pending: VecDeque<Pending>,
    /// (last packet sent, d_i seconds, α_i).
    samples: VecDeque<(Time, f64, f64)>,
    encoded: VecDeque<Encoded>,
    resolution: ResolutionRule,
    last_capture: Option<Time>,
    in_blackout: bool,
    enc_ratio: f64,
    paused: u64,
    resets: u64,
    resolution_changes: u64,
}

impl Vidaptive {
    pub fn new(
        cfg: VidaptiveConfig,
        inner: Box<dyn Controller>,
        now: Time,
        fps: f64,
    ) -> Result<Vidaptive, String> {
        if !(fps.is_finite() && fps > 0.0) {
            return Err(format!("the frame rate must be positive, got {fps}"));
        }
        if !(cfg.lambda > 0.0 && cfg.lambda < 1.0) {
            return Err(format!("lambda must be in (0, 1), got {}", cfg.lambda));
        }
        if let Some(a) = cfg.alpha.fixed() {
            if !(ALPHA_MIN..=ALPHA_MAX).contains(&a) {
                return Err(format!("alpha must be in [0.05, 1], got {a}"));
            }
        }
        if cfg.window.0 == 0 {
            return Err("window must be positive".into());
        }
        if cfg.tau.0 == 0 || cfg.reset_after <= cfg.tau {
            return Err(format!(
                "need 0 < tau < reset_after, got {} and {}",
                cfg.tau, cfg.reset_after
            ));
        }
        if cfg.blackout.as_secs_f64() >= 1.0 / fps {
            return Err(format!(
                "blackout must be shorter than a frame interval, got {}",
                cfg.blackout
            ));
        }
        if cfg.dummy_size.0 == 0 || cfg.dummy_size.0 > u32::MAX as u64 {
            return Err(format!(
                "dummy_size must be positive, got {}",
                cfg.dummy_size
            ));
        }
        if !cfg.max_bitrate.bps().is_finite() || cfg.max_bitrate.bps() <= 0.0 {
            return Err(format!(
                "max_bitrate must be positive, got {}",
                cfg.max_bitrate
            ));
        }
        Ok(Vidaptive {
            frame_interval: Duration::from_secs_f64(1.0 / fps),
            alpha_params: AlphaParams {
                lambda: cfg.lambda,
                tau: cfg.tau.as_secs_f64(),
                fmax: fps,
                window: cfg.window.as_secs_f64(),
            },
            alpha: cfg.alpha.fixed().unwrap_or(ALPHA_MAX),
            first_encode: None,
            pending: VecDeque::new(),
            samples: VecDeque::new(),
            encoded: VecDeque::new(),
            resolution: ResolutionRule::new(cfg.window, now),
            last_capture: None,
            in_blackout: false,
            enc_ratio: 1.0,
            paused: 0,
            resets: 0,
            resolution_changes: 0,
            inner,
            cfg,
        })
    }

    /// CC-Rate: the wrapped controller's cwnd / smoothed RTT.
    fn cc_rate(&self) -> Rate {
        self.inner.decision().target_bitrate
    }

    fn video_target(&self) -> Rate {
        Rate(self.alpha * self.cc_rate().bps()).min(self.cfg.max_bitrate)
    }

    /// When the blackout before the next capture starts.
    fn blackout_start(&self) -> Option<Time> {
        if !self.cfg.dummies || self.cfg.blackout.0 == 0 || self.in_blackout {
            return None;
        }
        let next = self.last_capture? + self.frame_interval;
        Some(Time(next.0.saturating_sub(self.cfg.blackout.0)))
    }

    fn prune(&mut self, now: Time) {
        let from = Time(now.0.saturating_sub(self.cfg.window.0));
        while self.samples.front().is_some_and(|s| s.0 < from) {
            self.samples.pop_front();
        }
        while self.encoded.front().is_some_and(|e| e.at < from) {
            self.encoded.pop_front();
        }
    }

    /// Encoded bytes over the bytes the targets allotted, in the window (keyframes excluded).
    fn compute_enc_ratio(&self) -> f64 {
        let (bytes, budget) = self
            .encoded
            .iter()
            .fold((0.0, 0.0), |(b, t), e| (b + e.bytes, t + e.budget));
        if budget > 0.0 {
            bytes / budget
        } else {
            1.0
        }
    }
}

impl Controller for Vidaptive {
    fn on_packet_sent(&mut self, now: Time, pkt: &SentPacket) {
        self.inner.on_packet_sent(now, pkt);
        if pkt.kind != PacketKind::Media {
            return;
        }
        let Some(frame) = pkt.frame else { return };
        if pkt.index_in_frame as u32 + 1 < pkt.packets_in_frame as u32 {
            return;
        }
        // The frame's last packet left: d_i is its time in the pacer queue. Frames leave in
        // order, so older pending frames are gone too.
        while let Some(p) = self.pending.front().copied() {
            if p.frame > frame {
                break;
            }
            self.pending.pop_front();
            if p.frame == frame {
                let d = now.saturating_since(p.enqueued).as_secs_f64();
                self.samples.push_back((now, d, p.alpha));
            }
        }
    }

    fn on_feedback(&mut self, now: Time, report: &FeedbackReport) {
        self.inner.on_feedback(now, report);
    }

    fn on_rto(&mut self, now: Time, in_flight: u64) {
        self.inner.on_rto(now, in_flight);
    }

    fn on_rate_report(&mut self, now: Time, report: &RateReport) {
        self.inner.on_rate_report(now, report);
    }

    fn on_timeout(&mut self, now: Time) {
        if self.blackout_start().is_some_and(|t| t <= now) {
            self.in_blackout = true;
        }
        if self.inner.next_timeout().is_some_and(|t| t <= now) {
            self.inner.on_timeout(now);
        }
    }

    fn next_timeout(&self) -> Option<Time> {
        match (self.inner.next_timeout(), self.blackout_start()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn decision(&self) -> Decision {
        let inner = self.inner.decision();
        let target = self.video_target();
        let padding = if self.cfg.dummies && !self.in_blackout && target < self.cfg.max_bitrate {
            self.cfg.max_bitrate
        } else {
            Rate::ZERO
        };
        Decision {
            target_bitrate: target,
            pacing_rate: inner.pacing_rate,
            cwnd: inner.cwnd,
            padding_rate: padding,
            probe: None,
            padding_size: self.cfg.dummies.then_some(self.cfg.dummy_size.0 as u32),
        }
    }

    fn frame_controller(&mut self) -> Option<&mut dyn FrameController> {
        Some(self)
    }

    fn state(&self, out: &mut Vec<(&'static str, f64)>) {
        self.inner.state(out);
        out.push(("alpha", self.alpha));
        out.push(("cc_rate_bps", self.cc_rate().bps()));
        out.push(("enc_ratio", self.enc_ratio));
        out.push(("frames_in_window", self.samples.len() as f64));
        out.push(("paused_frames", self.paused as f64));
        out.push(("resets", self.resets as f64));
        out.push(("resolution_changes", self.resolution_changes as f64));
        out.push(("dummy_blackout", self.in_blackout as u8 as f64));
    }
}

/// The frame hooks: Vidaptive decides what happens to each frame itself (the wrapped
/// controller's own `frame_action` is not asked), and passes acks and encoded frames on.
impl FrameController for Vidaptive {
    fn on_frame_ack(&mut self, now: Time, ack: &FrameAck) {
        if let Some(f) = self.inner.frame_controller() {
            f.on_frame_ack(now, ack);
        }
    }

    fn on_frame_encoded(&mut self, now: Time, frame: &FrameInfo) {
        if let Some(f) = self.inner.frame_controller() {
            f.on_frame_encoded(now, frame);
        }
        if frame.packets == 0 || frame.size == 0 {
            return;
        }
        self.first_encode.get_or_insert(now);
        self.pending.push_back(Pending {
            frame: frame.frame,
            enqueued: now,
            alpha: self.alpha,
        });
        if !frame.keyframe {
            self.encoded.push_back(Encoded {
                at: now,
                bytes: frame.size as f64,
                budget: frame.target.bps() / 8.0 * self.frame_interval.as_secs_f64(),
            });
        }
    }

    fn frame_action(&mut self, now: Time, view: &FrameView) -> FrameAction {
        self.last_capture = Some(now);
        self.in_blackout = false;
        self.prune(now);
        let mut encode = EncodeAction::Encode;
        if self.cfg.safeguards {
            if let Some(oldest) = view.oldest_queued {
                let age = now.saturating_since(oldest);
                if age > self.cfg.reset_after {
                    // Everything queued is flushed; those frames never leave.
                    encode = EncodeAction::Reset;
                    self.pending.clear();
                    self.resets += 1;
                } else if age > self.cfg.tau {
                    self.paused += 1;
                    return FrameAction {
                        encode: EncodeAction::Skip,
                        resolution: None,
                    };
                }
            }
        }
        let window = self.cfg.window;
        let n = self.samples.len();
        match self.cfg.alpha.fixed() {
            Some(a) => self.alpha = a,
            None => {
                // Startup: no frame can have left before the first one was encoded, so the
                // low-frame-rate rule waits for a full window of samples.
                let startup = self
                    .first_encode
                    .is_none_or(|t| now.saturating_since(t) < window);
                let low = n as f64 / window.as_secs_f64() <= MIN_FRAME_RATE;
                if !(startup && low) {
                    let s: Vec<(f64, f64)> = self.samples.iter().map(|s| (s.1, s.2)).collect();
                    self.alpha = find_alpha(&s, self.alpha, &self.alpha_params);
                }
            }
        }
        self.enc_ratio = self.compute_enc_ratio();
        let mut resolution = None;
        if self.cfg.adapt_resolution {
            if let Some(current) = view.resolution {
                let n_rule = if self
                    .first_encode
                    .is_none_or(|t| now.saturating_since(t) < window)
                {
                    // Startup counts as a full window (no Decrease before frames could leave).
                    usize::MAX
                } else {
                    n
                };
                let next = match self
                    .resolution
                    .step(n_rule, self.alpha, self.enc_ratio, now)
                {
                    ResSignal::Decrease => current.step_down(),
                    ResSignal::Increase => current.step_up(),
                    ResSignal::Hold => None,
                };
                if next.is_some() {
                    self.resolution_changes += 1;
                }
                resolution = next;
            }
        }
        FrameAction { encode, resolution }
    }

    /// Algorithm 2 steps the resolution; the sender's degradation policy only caps it.
    fn adapts_resolution(&self) -> bool {
        self.cfg.adapt_resolution
    }
}

pub fn info() -> ControllerInfo {
    ControllerInfo {
        name: "vidaptive".into(),
        summary:
            "Vidaptive (arXiv 2309.16869): a window controller (Copa by default) as a backlogged \
             flow via dummies; encoder target alpha*CC-Rate, pause/reset, resolution."
                .into(),
        params: VidaptiveConfig::param_docs(),
        // The wrapped controller may act on frame acks: ask for them.
        feedback: FeedbackPolicy {
            frame_acks: true,
            ..copa::WINDOW_FEEDBACK
        },
        media: Default::default(),
        build: Arc::new(build),
    }
}

fn build(
    params: &Params,
    ctx: &ControllerContext,
    registry: &Registry,
) -> Result<Box<dyn Controller>, ControllerError> {
    let bad = |message: String| ControllerError::BadParams {
        controller: "vidaptive".into(),
        message,
    };
    let cfg: VidaptiveConfig = parse_config("vidaptive", params)?;
    let mut inner_params = cfg.cc_params.clone();
    let default = match cfg.cc.as_str() {
        "copa" => Some(("delta", cfg.delta)),
        "rocc" => Some(("gamma", cfg.gamma)),
        _ => None,
    };
    if let Some((key, value)) = default {
        inner_params.entry(key).or_insert(value.into());
    }
    let inner = registry
        .create(&cfg.cc, &inner_params, ctx)
        .map_err(|e| match e {
            ControllerError::UnknownController { .. } => bad(no_window(&cfg.cc, ctx, registry)),
            e => bad(format!("cc = {:?}: {e}", cfg.cc)),
        })?;
    if !has_window(&cfg.cc, inner.as_ref()) {
        return Err(bad(no_window(&cfg.cc, ctx, registry)));
    }
    Vidaptive::new(cfg, inner, ctx.now, ctx.fps)
        .map(|v| Box::new(v) as Box<dyn Controller>)
        .map_err(bad)
}

/// Whether the controller registered as `name` can be wrapped: it has a congestion window.
fn has_window(name: &str, c: &dyn Controller) -> bool {
    name != "vidaptive" && c.decision().cwnd.is_some()
}

/// The error for a `cc` that is not a window controller, naming those that are (the registered
/// controllers that build with default parameters and have a window).
fn no_window(name: &str, ctx: &ControllerContext, registry: &Registry) -> String {
    let valid: Vec<&str> = registry
        .names()
        .filter(|n| {
            registry
                .create(n, &Params::new(), ctx)
                .is_ok_and(|c| has_window(n, c.as_ref()))
        })
        .collect();
    format!(
        "cc = {name:?} is not a registered window controller (its decision must have a cwnd); \
            valid: {}",
        valid.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::create;
    use rand_chacha::ChaCha8Rng;
    use rand_core::{Rng, SeedableRng};

    const EPS: f64 = 1e-9;

    /// Samples (d_i seconds, α_i).
    type Window = Vec<(f64, f64)>;

    fn ms(v: &[f64]) -> Vec<f64> {
        v.iter().map(|d| d / 1000.0).collect()
    }

    /// Samples (d seconds, α) from delays in ms, each repeated `times`.
    fn samples(delays_ms: &[f64], alpha: f64, times: usize) -> Vec<(f64, f64)> {
        let mut s = Vec::new();
        for _ in 0..times {
            for d in ms(delays_ms) {
                s.push((d, alpha));
            }
        }
        s
    }

    fn best(s: &[(f64, f64)], lambda: f64) -> (f64, f64) {
        let p = AlphaParams {
            lambda,
            ..Default::default()
        };
        let a = find_alpha(s, 0.6, &p);
        let mut k: Vec<f64> = s.iter().map(|&(d, a)| d / a).collect();
        k.sort_by(f64::total_cmp);
        (a, objective(a, &k, &p))
    }

    #[test]
    fn rate_reports_reach_the_wrapped_controller() {
        use crate::cc::test_support::{recorder, report};
        let (inner, got) = recorder();
        let cfg: VidaptiveConfig = parse_config("vidaptive", &Params::new()).unwrap();
        let mut v = Vidaptive::new(cfg, inner, Time::ZERO, 30.0).unwrap();
        v.on_rate_report(Time::from_millis(1070), &report());
        assert_eq!(
            *got.lock().unwrap(),
            vec![(Time::from_millis(1070), report())]
        );
    }

    #[test]
    fn u1_alpha_test_vectors() {
        // (case, samples, α*, objective) with τ = 33 ms, f_max = 30, λ = 0.5, α' = 0.6, T = 1 s.
        let mut c = samples(&[25.0], 1.0, 27);
        c.extend(samples(&[100.0], 1.0, 3));
        let d: Vec<(f64, f64)> = c.iter().map(|&(d, _)| (d, 0.5)).collect();
        let cases: Vec<(&str, Window, f64, f64)> = vec![
            (
                "A",
                samples(&[10.0, 20.0, 30.0, 40.0, 50.0], 1.0, 6),
                0.66,
                1.594,
            ),
            ("B", samples(&[20.0], 1.0, 30), 1.0, 1.6),
            ("C", c, 1.0, 1.875),
            ("D", d, 0.66, 1.9),
            ("F", samples(&[60.0], 1.0, 30), 0.55, 1.99),
        ];
        for (name, s, alpha, obj) in cases {
            let (a, o) = best(&s, 0.5);
            assert!((a - alpha).abs() < 1e-6, "case {name}: α* {a}");
            assert!((o - obj).abs() < 1e-6, "case {name}: objective {o}");
        }
        // E: N = 5 in T = 1 s is an outage: α steps down by 0.15 from α' = 0.6.
        let e = samples(&[20.0], 1.0, 5);
        assert!((find_alpha(&e, 0.6, &AlphaParams::default()) - 0.45).abs() < EPS);
        // λ sweep on case A.
        let a = samples(&[10.0, 20.0, 30.0, 40.0, 50.0], 1.0, 6);
        for (lambda, want) in [(0.2, 1.0), (0.5, 0.66), (0.7, 0.66), (0.99, 0.66)] {
            let (got, _) = best(&a, lambda);
            assert!((got - want).abs() < 1e-6, "λ = {lambda}: α* {got}");
        }
    }

    #[test]
    fn u1_alpha_properties_on_random_windows() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let mut uniform = move || (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        for _ in 0..500 {
            let n = 6 + (uniform() * 40.0) as usize;
            let s: Vec<(f64, f64)> = (0..n)
                .map(|_| {
                    let a = ALPHA_MIN + uniform() * (ALPHA_MAX - ALPHA_MIN);
                    (uniform() * 0.3, a)
                })
                .collect();
            let mut prev = f64::INFINITY;
            for lambda in [0.1, 0.2, 0.35, 0.5, 0.7, 0.9, 0.99] {
                let p = AlphaParams {
                    lambda,
                    ..Default::default()
                };
                let a = find_alpha(&s, 0.6, &p);
                assert!((ALPHA_MIN..=ALPHA_MAX).contains(&a), "α* {a} out of range");
                // λ ↑ never raises α*.
                assert!(a <= prev + EPS, "λ = {lambda}: α* {a} above {prev}");
                prev = a;
                // α* is at least as good as any α on a fine grid (the candidate set suffices).
                let mut k: Vec<f64> = s.iter().map(|&(d, a)| d / a).collect();
                k.sort_by(f64::total_cmp);
                let o = objective(a, &k, &p);
                for i in 1..=200 {
                    let x = ALPHA_MIN + (ALPHA_MAX - ALPHA_MIN) * i as f64 / 200.0;
                    assert!(objective(x, &k, &p) <= o + 1e-9, "α {x} beats α* {a}");
                }
            }
            // Every frame on time at its α: the full target.
            let on_time: Vec<(f64, f64)> = s.iter().map(|&(d, a)| (d.min(0.033 * a), a)).collect();
            assert_eq!(find_alpha(&on_time, 0.3, &AlphaParams::default()), 1.0);
        }
    }

    #[test]
    fn u1_an_outage_steps_alpha_down_by_0_15_to_the_floor() {
        let p = AlphaParams::default();
        let mut a = 1.0;
        let mut seen = vec![];
        for _ in 0..10 {
            a = find_alpha(&samples(&[500.0], 1.0, 3), a, &p);
            seen.push(a);
        }
        let want = [0.85, 0.7, 0.55, 0.4, 0.25, 0.1, 0.05, 0.05, 0.05, 0.05];
        for (g, w) in seen.iter().zip(want) {
            assert!((g - w).abs() < 1e-9, "{seen:?}");
        }
        // An empty window is an outage too.
        assert!((find_alpha(&[], 0.5, &p) - 0.35).abs() < EPS);
    }

    fn frame_time(k: u64) -> Time {
        Time::from_secs_f64(2.0 + k as f64 / 30.0)
    }

    #[test]
    fn u2_sustained_low_frame_rate_steps_down_once_per_window_after_17_frames() {
        let mut r = ResolutionRule::new(Duration::from_millis(1000), Time::ZERO);
        let mut changes = vec![];
        for k in 0..120 {
            if r.step(3, 0.5, 1.0, frame_time(k)) == ResSignal::Decrease {
                changes.push(k);
            }
        }
        assert_eq!(changes[0], 16, "the 17th Decrease changes: {changes:?}");
        for w in changes.windows(2) {
            assert!(
                frame_time(w[1]).saturating_since(frame_time(w[0])) > Duration::from_millis(1000),
                "{changes:?}"
            );
        }
        // 120 frames = 4 s: a change at 17 frames, then one per T (31 frames).
        assert_eq!(changes.len(), 4, "{changes:?}");
    }

    #[test]
    fn u2_increase_needs_high_alpha_and_undershoot_for_32_frames() {
        let mut r = ResolutionRule::new(Duration::from_millis(1000), Time::ZERO);
        let first = (0..100)
            .find(|&k| r.step(30, 0.95, 0.8, frame_time(k)) == ResSignal::Increase)
            .unwrap();
        assert_eq!(first, 31, "the 32nd Increase changes");
        // α* not above 0.9, or the encoder meeting its target: hold.
        let mut r = ResolutionRule::new(Duration::from_millis(1000), Time::ZERO);
        for k in 0..100 {
            assert_eq!(r.step(30, 0.9, 0.8, frame_time(k)), ResSignal::Hold);
            assert_eq!(r.step(30, 1.0, 0.95, frame_time(k)), ResSignal::Hold);
        }
    }

    #[test]
    fn u2_mixed_signals_reset_the_count_and_no_change_within_t_of_the_start() {
        let mut r = ResolutionRule::new(Duration::from_millis(1000), Time::ZERO);
        for k in 0..300 {
            // 16 Decreases, then one frame at a good rate: never 17 in a row.
            let n = if k % 17 == 16 { 30 } else { 3 };
            assert_eq!(r.step(n, 0.5, 1.0, frame_time(k)), ResSignal::Hold, "{k}");
        }
        // Within T of the start nothing changes, however many signals.
        let mut r = ResolutionRule::new(Duration::from_millis(1000), Time::ZERO);
        for k in 0..30 {
            let t = Time::from_secs_f64(k as f64 / 30.0);
            assert_eq!(r.step(3, 0.5, 1.0, t), ResSignal::Hold);
        }
    }

    use crate::cc::test_support::context as ctx;

    #[test]
    fn u3_dummy_blackout_covers_the_5_ms_before_each_capture() {
        let p: Params = Params::new();
        let mut c = create("vidaptive", &p, &ctx()).unwrap();
        let view = FrameView {
            oldest_queued: None,
            resolution: None,
        };
        let dt = 1.0 / 30.0;
        for k in 0..3 {
            let capture = Time::from_secs_f64(k as f64 * dt);
            c.frame_controller().unwrap().frame_action(capture, &view);
            assert_eq!(c.decision().padding_rate, Rate::from_mbps(12.0));
            let start = c.next_timeout().expect("a blackout timer");
            let want = Time::from_secs_f64((k + 1) as f64 * dt - 0.005);
            assert!(start.0.abs_diff(want.0) <= 1_000, "{start:?} vs {want:?}");
            c.on_timeout(Time(start.0 - 1));
            assert_eq!(c.decision().padding_rate, Rate::from_mbps(12.0), "early");
            c.on_timeout(start);
            assert_eq!(c.decision().padding_rate, Rate::ZERO, "in the blackout");
            assert_eq!(c.next_timeout(), None, "no timer until the capture");
        }
        // Without dummies there is no blackout timer at all.
        let p: Params = toml::from_str("dummies = false").unwrap();
        let mut c = create("vidaptive", &p, &ctx()).unwrap();
        c.frame_controller()
            .unwrap()
            .frame_action(Time::ZERO, &view);
        assert_eq!(c.next_timeout(), None);
    }

    #[test]
    fn parameters_are_checked() {
        for bad in [
            "alpha = 0.0",
            "alpha = \"fixed\"",
            "lambda = 1.0",
            "tau = \"2s\"",
            "cc = \"sqp\"",
            "cc = \"nosuch\"",
            "cc_params = { nosuch = 1 }",
            "delta = 0.0",
            "dummy_size = \"0B\"",
            "blackout = \"40ms\"",
        ] {
            let p: Params = toml::from_str(bad).unwrap();
            assert!(create("vidaptive", &p, &ctx()).is_err(), "{bad}");
        }
    }
}
