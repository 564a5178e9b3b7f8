//! `c3g`: cloud-gaming rate control from the round-trip video latency (C³G, Alós et al., IEEE
//! Access 7, 2019; the seed `c3g_rtvl.txt`).
//!
//! # The signal (§III-B, §V)
//!
//! A cloud-gaming server cares about one delay: from the moment a frame enters its encoder (S_0)
//! to the moment the client says it has the frame decoded (S_ACK), the **round-trip video
//! latency** RTVL = S_ACK − S_0. It holds the encoding, the downlink queue, the decoding and the
//! acknowledgement's way back, and a game is playable while it stays under 100 ms. The receiver
//! acknowledges every frame: "just before displaying it" in the paper, and in rtcc when the
//! flow's receiver is set so (`frame_ack = { at = "display" }`, [`crate::endpoint::frame_acks`]),
//! otherwise when it has the frame whole (the default). A frame that misses the client's
//! presentation timeout (100 ms from its first packet) or never completes is acknowledged late
//! by the paper's client, "after a later frame has been received, and with a low priority"; the
//! display receiver does the same, flagging the acknowledgement lost, and the [`Meter`] counts
//! the frame lost with RTVL = S_ACK − S_0. A receiver that acknowledges at completion gives up on
//! such a frame silently, so the [`Meter`] stands in for the late acknowledgement: a frame not
//! acknowledged when a later frame was acknowledged `lost_frame_timeout` ago counts as lost, with
//! RTVL = now − S_0 (judgment call A8 of the extraction; the fallback, kept for such receivers).
//!
//! Every control period Δt the controller reads λ̄ (bits it sent over the rate window / its
//! length, media and repairs alike), μ̄ (bits the receiver got, from its rate reports: the paper's
//! client counts the bytes of every UDP packet received since its previous report and sends the
//! count every Δt on TCP keep-alives, §V-A; rtcc's receiver sends an RTCP APP "RTRR" every
//! `feedback.rate_reports`, which C³G's feedback policy sets to Δt, and μ̄ sums the reports of the
//! newest rate window; without reports, it falls back on the arrivals the transport-wide
//! feedback reports) and the RTVL samples of the period. "It is therefore the server's
//! responsibility to calculate λ(t) for the same time window used by the client for μ(t)"
//! (§V-A): for the test λ̄ − μ̄ > ε, λ̄ is taken over μ̄'s window moved back to the sender's clock
//! by the base one-way delay (the smallest arrival − send time of the last 10 s, which holds the
//! clocks' offset; a report names its newest packet for this), so that λ̄ − μ̄ is what the
//! bottleneck queue gained over the window. What is left of the misalignment the paper's ε exists
//! for is the frames' own burstiness: a frame sent at once arrives spread over its transmission.
//!
//! # Congestion and drain: the reactive branch (§III-C, §IV-A, Eqs. 1–2)
//!
//! ```text
//!   congestion = λ̄ − μ̄ > ε  and  RTVL̄(now) > RTVL̄(previous period)            (Eq. 1, §V-A)
//! ```
//!
//! ε filters the misalignment noise of λ and μ (they are measured at different ends): it holds
//! the largest λ̄ − μ̄ seen over the last `epsilon_periods`·Δt in periods whose RTVL did not rise,
//! neither since the previous period nor over the rate window the difference covers (and, ours,
//! stayed under RTVL_th with no frame lost: a full queue's RTVL is high but flat), and at
//! least `epsilon_floor` × λ̄ and two packets per rate window (our floor: a quiet link would
//! otherwise drive ε to 0 and flag every jitter, and at low rates a packet crossing a window's
//! edge is far more than 2 % of λ̄). Congestion alone changes nothing but anchors an episode, in
//! which the bits sent and not received add up: qdData += (λ̄ − μ̄)·Δt for every period with λ̄ − μ̄ > ε. The episode ends when
//! congestion is gone and λ̄ − μ̄ ≤ ε. Within an episode, two predictions of RTVL at the next
//! period decide whether the queue must be drained:
//!
//! ```text
//!   RTVL~1 = the period's RTVL samples extrapolated linearly to now + Δt
//!   RTVL~2 = RTVL(last sample) + qdData / μ̄
//!   drain if RTVL~1 > RTVL_th or RTVL~2 > RTVL_th                  (RTVL_th = 100 ms, §IV-A)
//!   λ_drain = μ̄ − qdData / Δt                                          (Eq. 2: empty it in Δt)
//! ```
//!
//! qdData at a drain is at least (RTVL − RTVL_min)·μ̄, the queue the paper's own model reads from
//! RTVL (§III-B, RTVL = RTVL_min + qdData/c_btl; RTVL_min over 10 s, ours): the sum of the
//! periods above ε misses a queue that grew slowly, which would otherwise stand after the drain.
//! The target cannot go below v_min, so it holds λ_hold = max(v_min, λ_drain) for
//! T_drain = qdData / (μ̄ − λ_hold) (Δt when not clamped, the paper's qdData/(μ̄ − v_min) when
//! clamped), then jumps to λ_OOP = μ̄ measured at the drain, the operating point, and exploration
//! starts again there with the smallest gain. The paper's retransmission correction
//! (λ_drain = (1 − r)·μ̄ − qdData/Δt, §V-B) is not applied: rtcc's sender already pays
//! retransmissions from the target (`media::protection`), so applying it again would drain twice
//! (judgment call A6; the log shows r).
//!
//! # Exploration: the proactive branch (§IV-B, Eq. 3)
//!
//! Exploration runs in periods of T_exp = (g_max − g + 1)·Δt with a step λ_exp = g·10 kbit/s,
//! g ∈ [g_min, g_max] = [1, 50]: a small gain explores slowly in small steps, a large one fast in
//! large ones. At the end of a period its rating is
//!
//! ```text
//!   R(λ̄) = [a·RTVL̄ + b·σ(RTVL) + c·max(RTVL) + d·qdData + e·r + f·l̄] / λ̄     (Eq. 3, §V-B)
//! ```
//!
//! (larger is worse; (a, b, c, d) = (1, 10, 1, 2) from the paper, e = f = 10 ours; RTVL in ms,
//! qdData in kbit, λ̄ in kbit/s, r and the lossy-frame share l̄ in %). The rated state joins a
//! dictionary keyed on λ̄ in 10 kbit/s steps, and a decision tree picks the next target among
//! λ₊ = λ̄ + λ_exp, λ₌ = λ̄ and λ₋ = λ̄ − λ_exp, favouring increases (`decide`, §IV-B cases A, B).
//! g goes up after λ₊, stays after λ₌, down after λ₋, and back to g_min when the queue is
//! drained. The paper says g is initialised "since congestion was last detected"; read literally
//! (`gain_reset = "congestion"`), every Eq. 1 detection restarts exploration, and in rtcc's
//! simulation Eq. 1 fires on the encoder's frame-size noise alone about ten times a minute at half
//! the capacity, so the rate never climbs back after a capacity increase (EP unbounded against the
//! paper's 36 s). The default resets on a drain (judgment call A12 of the extraction).
//!
//! # Actuation (§IV, §V-C)
//!
//! Only the encoder's target changes, never the frame rate: the desired send rate λ_target is
//! turned into an encoder target v = λ_target / ρ with ρ the recent ratio of what was sent to what
//! the encoder was asked for (an EWMA outside drains, clamped to [0.5, 2], learned only once the
//! target has held for a second, so that the encoder's lag behind a new target is not read as
//! the ratio). The scenario's
//! `degradation = "disabled"` keeps the resolution and frame rate as the paper's server does.
//!
//! Constants the paper leaves open, with our defaults: Δt = 50 ms (swept 33–200 ms in
//! `experiments/c3g/tables.py`; the closest to the paper's increase result with its channel
//! use), v_min = the flow's `min_bitrate`, e = f = 10, g_min = 1, ε as above.
//!
//! Mechanisms, one file each: `meter.rs` (λ̄, μ̄, the RTVL samples of a period), `rtvl.rs` (a
//! period's RTVL and the least-squares trend), `epsilon.rs` (ε), `drain.rs` (the reactive
//! branch), `exploration.rs` (the proactive branch) and `send_ratio.rs` (ρ). This file holds the
//! configuration and the period's state machine (`tick`) that ties them together.

use super::params::controller_config;
use super::{
    build_fn, parse_config, Controller, ControllerContext, ControllerError, ControllerInfo,
    Decision, FeedbackPolicy, FrameController, MediaDefaults, Params,
};
use crate::packet::{FeedbackReport, FrameAck, FrameInfo, RateReport, SentPacket};
use crate::units::{Duration, Rate, Time};
use drain::RTVL_MIN_WINDOW;
use exploration::PeriodTotals;
use send_ratio::ENCODER_SETTLE;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, VecDeque};

mod drain;
pub mod epsilon;
pub mod exploration;
pub mod meter;
pub mod rtvl;
pub mod send_ratio;

pub use epsilon::{epsilon_floor, Epsilon};
pub use exploration::{decide, Choice};
pub use meter::{catch_up, Meter, Period};
pub use rtvl::{extrapolate, period_rtvl, rose};
pub use send_ratio::SendRatio;

controller_config! {
    /// C³G's parameters.
    pub struct C3gConfig {
        /// control period Δt
        ///
        /// Open in the paper. 50 ms: of the periods swept (33, 50, 100, 200 ms;
        /// `experiments/c3g/tables.py`, docs/c3g.md) it is the one closest to the paper on the
        /// increase test (EP 43 ± 12 s against 36 ± 16 s) and on its stability (channel use 94 %
        /// against 93-96 %, RTVL 41-43 ms against 37-40); 33 ms climbs faster (31 ± 10 s), 100 ms
        /// and 200 ms slower (90 and 140 s; 200 ms misses 180 s in 30 of 60 runs). The receiver's
        /// rate reports follow the feedback policy (every 50 ms by default): a flow with another
        /// Δt sets `feedback.rate_reports` to it, as the paper's client reports every Δt.
        pub interval: Duration = Duration::from_millis(50),
        /// playability threshold RTVL_th
        ///
        /// §IV-A.
        pub rtvl_threshold: Duration = Duration::from_millis(100),
        /// largest exploration gain
        ///
        /// g_max (§IV-B).
        pub g_max: u32 = 50,
        /// smallest exploration gain
        ///
        /// g_min (open): the paper's g is "an integer between 1 and g_max", and its slowest, most
        /// cautious step (10 kbit/s per 50Δt) is the one it resets to.
        pub g_min: u32 = 1,
        /// exploration step per unit of gain
        ///
        /// λ_exp,min (§IV-B).
        pub step: Rate = Rate::from_kbps(10.0),
        /// rating weights a, b, c, d (RTVL mean, sd, max, queued kbit), e, f (retransmitted %,
        /// lossy frames %)
        ///
        /// Eq. 3; e and f are open. The paper's (1, 10, 1, 2); e = f = 10 make one percent of
        /// retransmitted bits or lost frames weigh like 1 ms of RTVL spread (b = 10), the term
        /// the paper weighs most, since losses hurt a game as much as latency jitter (ours).
        pub weights: [f64; 6] = [1.0, 10.0, 1.0, 2.0, 10.0, 10.0],
        /// lowest target v_min
        ///
        /// Open. `None`: the flow's `min_bitrate`, the rate below which the scenario says the
        /// stream is not worth sending (the testbed sets 3 Mbit/s, the 720p30 encoder's rate at
        /// QP 40).
        #[doc_default = "the flow's min_bitrate"]
        pub min_rate: Option<Rate> = None,
        /// first target
        ///
        /// `None`: the flow's `start_bitrate`, else 300 kbit/s (libwebrtc's default start),
        /// within the bounds.
        #[doc_default = "the flow's start_bitrate, else 300kbps"]
        pub start_rate: Option<Rate> = None,
        /// highest target
        ///
        /// `None`: the flow's `max_bitrate`, else 50 Mbit/s.
        #[doc_default = "the flow's max_bitrate, else 50Mbps"]
        pub max_rate: Option<Rate> = None,
        /// periods over which ε keeps the largest λ−μ without RTVL rise
        ///
        /// Open: the paper updates ε "periodically"; 50 periods (2.5 s at 50 ms) hold a few
        /// exploration steps, so ε follows a change of rate without remembering one outlier for
        /// long. It is a span of time, not a count of calm periods: while RTVL keeps rising no
        /// period is calm, and ε falls back to its floor instead of holding an old value (one
        /// learned in a run's first second stayed for 14 s while RTVL climbed from 60 to
        /// 470 ms).
        pub epsilon_periods: usize = 50,
        /// ε's floor as a fraction of λ
        ///
        /// Ours; the paper's ε has no start. Before any calm period, and on a quiet link, ε
        /// would be 0 and every jitter congestion; with 0.02 a queue that grows by 2 % of the
        /// rate or less stays hidden, and takes 5 s or more to add 100 ms. The floor is also
        /// never under two packets per rate window (`EDGE_PACKETS`).
        pub epsilon_floor: f64 = 0.02,
        /// an unacknowledged frame this long after a later one counts as lost (receivers without
        /// late acks)
        ///
        /// The client's 100 ms presentation timeout (§V-B): the fallback for a receiver that
        /// sends no late acknowledgements (`frame_ack = { at = "complete" }`, the default).
        pub lost_frame_timeout: Duration = Duration::from_millis(100),
        /// after the warm-up, double the target every period until RTVL would pass the
        /// threshold, then drain
        ///
        /// Each doubling goes up to twice what was sent; the drain is to the operating point
        /// (ours, after BBR's Startup; the paper's server always starts from a known v_init).
        /// `None`: on when the flow has no start rate (`start_rate` or the flow's
        /// `start_bitrate`), since exploration alone climbs 10 kbit/s per 2.5 s at first.
        #[doc_default = "on without a start rate"]
        pub startup: Option<bool> = None,
        /// what resets the exploration gain: drain or congestion (the paper's wording)
        ///
        /// The gain goes back to g_min; `"congestion"` resets it at every Eq. 1 detection, the
        /// paper's literal wording.
        pub gain_reset: GainReset = GainReset::Drain,
        /// λ and μ are rates over this window (whole periods)
        ///
        /// Whole periods of at least Δt (ours). At 30 frame/s a 50 ms window holds one frame
        /// or two, so λ̄ swings by ±50 % from one period to the next and ε, learning those
        /// swings, hides a queue that grows slowly (seen: RTVL from 70 to 200 ms with no
        /// congestion flagged). 200 ms holds six frames.
        pub rate_window: Duration = Duration::from_millis(200),
        /// observe only for this long from the start
        ///
        /// ε and ρ learn; no drain, no exploration. The first keyframe and a half-measured μ̄
        /// would otherwise trigger a drain to a rate measured before anything arrived (ours;
        /// the paper's tests start from a running stream).
        pub warmup: Duration = Duration::from_millis(2000),
    }
}

/// What resets C³G's exploration gain (see the module header).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum GainReset {
    Drain,
    Congestion,
}

/// The lowest, start and highest targets (bit/s): the controller's parameters, else the flow's
/// media range, else v_min = `min_bitrate`, [`DEFAULT_START_BPS`] and 50 Mbit/s.
pub fn rate_bounds(
    min: Option<Rate>,
    start: Option<Rate>,
    max: Option<Rate>,
    ctx: &ControllerContext,
) -> Result<(f64, f64, f64), String> {
    let min = min.unwrap_or(ctx.media.min_bitrate).bps();
    let max = max
        .or(ctx.media.max_bitrate)
        .unwrap_or(Rate::from_mbps(50.0))
        .bps();
    if min > max {
        return Err(format!(
            "min_rate ({min} bit/s) is above max_rate ({max} bit/s)"
        ));
    }
    let start = start
        .or(ctx.media.start_bitrate)
        .map_or(DEFAULT_START_BPS, |r| r.bps());
    Ok((min, start.clamp(min, max), max))
}

/// The start target when neither the controller nor the flow gives one (libwebrtc's default start
/// bitrate; the paper's server always starts from a known v_init).
pub const DEFAULT_START_BPS: f64 = 300e3;

#[derive(Debug, Clone, Copy, PartialEq)]
enum Phase {
    Explore,
    /// Holding `hold` until `until`, then jumping to `oop` (bit/s).
    Drain {
        until: Time,
        oop: f64,
    },
}

pub struct C3g {
    cfg: C3gConfig,
    meter: Meter,
    ratio: SendRatio,
    min_rate: f64,
    max_rate: f64,
    next_tick: Time,
    /// End of the observe-only warm-up.
    observe_until: Time,
    /// In Startup (see [`C3gConfig::startup`]).
    startup: bool,
    /// The desired send rate λ_target (bit/s) and the encoder target it maps to.
    lambda_target: f64,
    target: Rate,
    phase: Phase,
    previous_rtvl: Option<f64>,
    /// ε and its history.
    epsilon: Epsilon,
    /// The smallest RTVL sample of each recent period, over `RTVL_MIN_WINDOW` (RTVL_min).
    rtvl_floor: VecDeque<(Time, f64)>,
    /// The RTVL samples of the newest rate window (the window λ̄ − μ̄ covers).
    window_rtvl: VecDeque<(Time, f64)>,
    episode: bool,
    queued_bits: f64,
    gain: u32,
    periods_left: u32,
    totals: PeriodTotals,
    /// Ratings by λ̄ in steps of `step` (the state dictionary S).
    states: BTreeMap<i64, f64>,
    lookups: u64,
    hits: u64,
    /// For the logs.
    last: Period,
    congestion: bool,
    drains: u64,
    last_choice: Option<Choice>,
}

impl C3g {
    pub fn new(cfg: C3gConfig, ctx: &ControllerContext) -> Result<C3g, String> {
        if cfg.interval.0 == 0 {
            return Err("interval must be longer than 0ms".into());
        }
        if cfg.g_min == 0 || cfg.g_min > cfg.g_max {
            return Err(format!(
                "need 1 <= g_min <= g_max, got g_min = {} and g_max = {}",
                cfg.g_min, cfg.g_max
            ));
        }
        if cfg.step.bps() <= 0.0 {
            return Err(format!("step must be above 0, got {}", cfg.step));
        }
        if cfg.rate_window.0 == 0 {
            return Err("rate_window must be longer than 0ms".into());
        }
        if cfg.weights.iter().any(|w| !(w.is_finite() && *w >= 0.0)) {
            return Err(format!(
                "weights must be finite and >= 0, got {:?}",
                cfg.weights
            ));
        }
        if !(cfg.epsilon_floor.is_finite() && cfg.epsilon_floor >= 0.0) {
            return Err(format!(
                "epsilon_floor must be >= 0, got {}",
                cfg.epsilon_floor
            ));
        }
        let (min, start, max) = rate_bounds(cfg.min_rate, cfg.start_rate, cfg.max_rate, ctx)?;
        let known_start = cfg.start_rate.or(ctx.media.start_bitrate).is_some();
        let mut ratio = SendRatio::new(cfg.interval, ENCODER_SETTLE);
        let target = Rate(ratio.target(start));
        let periods_left = cfg.g_max - cfg.g_min + 1;
        Ok(C3g {
            meter: Meter::new(cfg.lost_frame_timeout, cfg.rate_window),
            ratio,
            min_rate: min,
            max_rate: max,
            next_tick: ctx.now + cfg.interval,
            observe_until: ctx.now + cfg.warmup,
            startup: cfg.startup.unwrap_or(!known_start),
            lambda_target: start,
            target,
            phase: Phase::Explore,
            previous_rtvl: None,
            epsilon: Epsilon::new(Duration(cfg.interval.0 * cfg.epsilon_periods as u64)),
            rtvl_floor: VecDeque::new(),
            window_rtvl: VecDeque::new(),
            episode: false,
            queued_bits: 0.0,
            gain: cfg.g_min,
            periods_left,
            totals: PeriodTotals::default(),
            states: BTreeMap::new(),
            lookups: 0,
            hits: 0,
            last: Period::default(),
            congestion: false,
            drains: 0,
            last_choice: None,
            cfg,
        })
    }

    fn set_lambda(&mut self, lambda: f64) {
        self.lambda_target = lambda.clamp(self.min_rate, self.max_rate);
        self.target = Rate(self.ratio.target(self.lambda_target));
    }

    fn tick(&mut self, now: Time) {
        let dt = self.cfg.interval;
        let p = self.meter.close(now, dt);
        let rtvl = period_rtvl(&p, self.previous_rtvl);
        if let Some(m) = p.rtvl.iter().map(|s| s.1).reduce(f64::min) {
            self.rtvl_floor.push_back((now, m));
        }
        while self
            .rtvl_floor
            .front()
            .is_some_and(|&(t, _)| t + RTVL_MIN_WINDOW < now)
        {
            self.rtvl_floor.pop_front();
        }
        let rising = matches!((rtvl, self.previous_rtvl), (Some(a), Some(b)) if a > b);
        self.window_rtvl.extend(p.rtvl.iter().copied());
        let window_start = Time(now.0.saturating_sub(self.cfg.rate_window.0));
        while self
            .window_rtvl
            .front()
            .is_some_and(|s| s.0 <= window_start)
        {
            self.window_rtvl.pop_front();
        }
        let diff = p.sent_aligned_bps - p.received_bps;
        // ε learns from calm periods once both ends are measured (the first periods' λ̄ holds the
        // first keyframe and μ̄ nothing yet). Calm means no "signs of an increasing RTVL" (§V-A)
        // over the window λ̄ − μ̄ covers, not only since the last period (ours: a difference is
        // the queue's growth over its window, and a window whose queue grew shows it in its
        // RTVL; the period's mean alone let ε learn the queue's own growth, up to 7 % of λ̄).
        // Calm also means under the threshold with no lost frame: a full queue keeps RTVL high
        // but flat, and learning from it would raise ε to the overload itself and hide the
        // congestion for good.
        // Nor during Startup, whose doublings open a gap between λ̄ and μ̄ of a round trip's worth
        // that is no measurement noise (learning it blinds Eq. 1 to the queue Startup leaves).
        let calm = !rising
            && !rose(self.window_rtvl.make_contiguous())
            && !self.startup
            && matches!(self.phase, Phase::Explore)
            && rtvl.is_some_and(|r| r < self.cfg.rtvl_threshold.as_millis_f64())
            && p.lost_frames == 0;
        if calm && p.received_bps > 0.0 && self.previous_rtvl.is_some() {
            self.epsilon.learn(now, diff);
        }
        // ε's floor: a share of λ̄, and the packets that straddle the window's two edges, which
        // λ̄ and μ̄ may count on different sides (ours, `EDGE_PACKETS`): at 30 kbit/s a 200 ms
        // window holds six one-packet frames, and a 2 % floor (0.6 kbit/s) flagged every frame
        // that crossed an edge, drained at base RTVL and held the flow near v_min on the cellular
        // traces.
        let floor = epsilon_floor(
            self.cfg.epsilon_floor,
            p.sent_bps,
            self.meter.largest_packet(),
            self.meter.window(dt),
        );
        let epsilon = self.epsilon.value(now, floor);
        if let Some(r) = rtvl {
            self.previous_rtvl = Some(r);
        }

        if let Phase::Drain { until, oop } = self.phase {
            self.ratio.skip();
            if now >= until {
                self.phase = Phase::Explore;
                self.episode = false;
                self.queued_bits = 0.0;
                self.gain = self.cfg.g_min;
                self.set_lambda(oop);
                self.start_period();
            }
            self.last = p;
            return;
        }
        self.ratio.learn(p.sent_bps);
        if now < self.observe_until {
            self.set_lambda(self.lambda_target);
            self.last = p;
            return;
        }

        self.congestion = diff > epsilon && rising;
        if self.startup {
            // Startup ends when the queue it builds would take RTVL over the threshold: a drain
            // then takes the rate to μ̄, the operating point. (Eq. 1 alone fires at every doubling:
            // μ̄ lags λ̄ by a round trip.)
            let th = self.cfg.rtvl_threshold.as_millis_f64();
            let rtvl_next = extrapolate(&p.rtvl, now + dt).or(rtvl).unwrap_or(0.0);
            if rtvl_next > th || self.lambda_target >= self.max_rate {
                self.startup = false;
                if rtvl_next > th {
                    self.queued_bits = self.queued_by_rtvl(&p);
                    self.drain(&p, now);
                    self.last = p;
                    return;
                }
            } else {
                self.set_lambda((2.0 * p.sent_bps).max(self.lambda_target));
                self.last = p;
                return;
            }
        }
        if self.congestion {
            if !self.episode {
                self.episode = true;
                self.queued_bits = 0.0;
            }
            if self.cfg.gain_reset == GainReset::Congestion {
                self.gain = self.cfg.g_min;
            }
        }
        let mut queued_now = 0.0;
        if self.episode && diff > epsilon {
            queued_now = diff * dt.as_secs_f64();
            self.queued_bits += queued_now;
        }
        if !self.congestion && diff <= epsilon {
            self.episode = false;
            self.queued_bits = 0.0;
        }
        self.totals.add(&p, queued_now / 1e3);

        if self.episode && self.drain_needed(&p, now + dt) {
            self.drain(&p, now);
        } else {
            self.periods_left = self.periods_left.saturating_sub(1);
            if self.periods_left == 0 {
                self.finish_period();
            }
        }
        self.last = p;
    }
}

impl Controller for C3g {
    fn on_packet_sent(&mut self, _now: Time, pkt: &SentPacket) {
        self.meter.on_packet_sent(pkt);
    }

    fn on_feedback(&mut self, _now: Time, report: &FeedbackReport) {
        self.meter.on_feedback(report);
    }

    fn on_rate_report(&mut self, now: Time, report: &RateReport) {
        self.meter.on_rate_report(now, report);
    }

    fn on_timeout(&mut self, now: Time) {
        self.next_tick = catch_up(self.next_tick, now, self.cfg.interval, |t| self.tick(t));
    }

    fn next_timeout(&self) -> Option<Time> {
        Some(self.next_tick)
    }

    fn decision(&self) -> Decision {
        // No pacing: a cloud-gaming server sends each frame as it leaves the encoder.
        Decision::rate_only(self.target, None)
    }

    fn frame_controller(&mut self) -> Option<&mut dyn FrameController> {
        Some(self)
    }

    fn state(&self, out: &mut Vec<(&'static str, f64)>) {
        out.push(("lambda_bps", self.last.sent_bps));
        out.push(("mu_bps", self.last.received_bps));
        out.push(("lambda_aligned_bps", self.last.sent_aligned_bps));
        out.push(("epsilon_bps", self.epsilon.current));
        out.push(("rtvl_ms", self.previous_rtvl.unwrap_or(f64::NAN)));
        out.push(("queued_kbit", self.queued_bits / 1e3));
        out.push(("congestion", self.congestion as u8 as f64));
        out.push((
            "draining",
            matches!(self.phase, Phase::Drain { .. }) as u8 as f64,
        ));
        out.push(("lambda_target_bps", self.lambda_target));
        out.push(("target_bps", self.target.bps()));
        out.push(("rho", self.ratio.rho()));
        out.push(("gain", self.gain as f64));
        out.push(("retransmitted", self.last.retransmitted));
        out.push((
            "state_hit_rate",
            self.hits as f64 / self.lookups.max(1) as f64,
        ));
        out.push(("drains", self.drains as f64));
        out.push(("startup", self.startup as u8 as f64));
    }
}

impl FrameController for C3g {
    fn on_frame_ack(&mut self, now: Time, ack: &FrameAck) {
        self.meter.on_frame_ack(now, ack);
    }

    fn on_frame_encoded(&mut self, _now: Time, frame: &FrameInfo) {
        self.meter.on_frame_encoded(frame);
    }
}

/// Feedback C³G needs, with a rate report every `report_every`: per-frame acknowledgements
/// (RTVL), the receiver's rate reports (μ, §V-A: every Δt in the paper's client, though "not
/// required by our C³G algorithm"; a flow whose Δt differs from the default sets its own
/// `feedback`), and transport-wide reports every 20 ms, which μ̄ falls back on when a flow's
/// feedback sends no rate reports.
pub fn feedback_every(report_every: Duration) -> FeedbackPolicy {
    FeedbackPolicy {
        interval: Some(Duration::from_millis(20)),
        per_frame: false,
        frame_acks: true,
        rate_reports: Some(report_every),
    }
}

/// The media settings of the paper's server, which both `c3g` and `c3g-bbr` ask for
/// ([`MediaDefaults`]; a scenario's own fields win): it changes only the encoder's target bitrate,
/// never the frame rate ("we decided not to act on it to modify λ(t), but only on the target
/// bitrate for the video encoder", §IV; both algorithms ran on one platform coding 720p at
/// 30 frame/s, §VI-A, §VI-B), and its client shows every frame, with errors if it must (§V-B). So
/// no quality scaling and no frame dropper. With rtcc's defaults instead, a drain to a low target
/// made the dropper skip every frame for up to a second and quality scaling lower the frame rate;
/// the RTVL of that silence set off a second drain, which read the silence as the capacity
/// (docs/c3g.md: 21-44 % of the link after a 9 → 6 Mbit/s drop, 86 % without them). The encoder
/// stays the scenario's, but runs peak-constrained with a VBV of one frame where its model has
/// one (`vbv = 1`): the testbed's encoder used "a peak-constrained bitrate control" (§VI-A), and
/// "it is good encoding practice [in cloud gaming] to … set the VBV size to the target frame
/// size" (§II). Without it a scene cut, which VP8 codes as one frame of 6–11 frame budgets,
/// overflows the testbed's 100 ms queue (docs/c3g.md: 79.5 % of the link with 0.77 % loss after
/// the drop, 94.2 % with 0.01 % with it).
pub fn testbed_media() -> MediaDefaults {
    MediaDefaults {
        degradation: Some("disabled".into()),
        frame_dropper: Some(false),
        vbv: Some(1.0),
        ..MediaDefaults::default()
    }
}

pub fn info() -> ControllerInfo {
    ControllerInfo {
        name: "c3g".into(),
        summary: "Cloud-gaming control from round-trip video latency: drains on predicted RTVL \
                  over 100 ms, explores with a history-rated variable gain (C3G)."
            .into(),
        params: C3gConfig::param_docs(),
        feedback: feedback_every(C3gConfig::default().interval),
        media: testbed_media(),
        build: build_fn(build),
    }
}

fn build(params: &Params, ctx: &ControllerContext) -> Result<Box<dyn Controller>, ControllerError> {
    let cfg: C3gConfig = parse_config("c3g", params)?;
    super::boxed("c3g", C3g::new(cfg, ctx))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::video::range::MediaRange;

    pub(super) fn ms(v: u64) -> Time {
        Time::from_millis(v)
    }

    pub(super) fn ctx() -> ControllerContext {
        ControllerContext {
            now: Time::ZERO,
            fps: 30.0,
            max_payload: crate::units::Bytes(1200),
            media: MediaRange {
                min_bitrate: Rate::from_mbps(3.0),
                start_bitrate: Some(Rate::from_mbps(7.0)),
                max_bitrate: Some(Rate::from_mbps(25.0)),
                min_fps: 10.0,
            },
            capacity: None,
            coupling: None,
            ecn: crate::packet::EcnMode::Off,
        }
    }

    /// C³G with Δt = 100 ms (the extraction's worked examples use it).
    pub(super) fn c3g() -> C3g {
        let params: Params = toml::from_str("interval = \"100ms\"").unwrap();
        C3g::new(parse_config("c3g", &params).unwrap(), &ctx()).unwrap()
    }

    #[test]
    fn inconsistent_rate_bounds_are_an_error_not_a_panic() {
        let params: Params = toml::from_str("min_rate = \"10Mbps\"\nmax_rate = \"5Mbps\"").unwrap();
        let e = C3g::new(parse_config("c3g", &params).unwrap(), &ctx())
            .err()
            .unwrap();
        assert!(e.contains("above max_rate"), "{e}");
        let cfg = parse_config("c3g-bbr", &params).unwrap();
        let e = super::super::c3g_bbr::C3gBbr::new(cfg, &ctx())
            .err()
            .unwrap();
        assert!(e.contains("above max_rate"), "{e}");
    }
}
