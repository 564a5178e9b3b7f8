//! `c3g-bbr`: the application-level BBR that C³G is compared with (the seed `c3g_rtvl.txt`,
//! §VI-A, Fig. 7).
//!
//! The paper's cloud-gaming server sends video over UDP, so it rebuilt BBR (Cardwell et al.,
//! 2016) from C³G's own measurements instead of TCP's ([`super::c3g::Meter`], every Δt):
//!
//! ```text
//!   RTprop   = min RTVL over the last 2·Δt                 (TCP's RTT → the frame round trip)
//!   BtlBW    = max μ̄ over the last 10 periods               (the delivery rate → bits received)
//!   inflight = (λ − μ) · w',  w' = 1 s       (bits sent minus bits received over the last second)
//!   BDP      = BtlBW · RTprop;   congestion ⇔ inflight > BDP                   (§III-A, Fig. 5a)
//! ```
//!
//! and applied BBR's gains "directly to the target encoding bitrate λ(t)" rather than to a
//! pacing rate, once per iteration (one iteration = Δt):
//!
//! - **Startup**: λ ×2 per iteration (twice the rate sent in the last one, ours: an encoder that
//!   lags would otherwise leave the target far ahead); on congestion λ ×0.5 "to allow the
//!   bottleneck queue to drain", and then (or on reaching the plateau, the flow's maximum rate)
//!   ProbeBW. The first `warmup` (2 s, ours) only measures, at the start rate.
//! - **ProbeBW**: gain cycling. λ ×1.25 (a probe); whenever congestion is detected, λ ×0.75 and
//!   then ×1 for six iterations, in which congestion is not checked again (the queue a probe built
//!   takes a while to drain; cutting again at every congested iteration would take the rate to the
//!   floor). A probe the path carries is consolidated (Fig. 5a). One probe per 8 iterations:
//!   BBR's 8-phase gain cycle (probe, drain, six cruise phases) is the cycle the paper follows
//!   (judgment calls; the text does not say when the next probe comes).
//! - No ProbeRTT: cutting to 4 packets every 10 s would wreck the picture.
//!
//! On a deep buffer this design floods it, and the paper's testbed never showed it (its limiter
//! dropped what waited over 100 ms, §VI-B): once a standing queue forms, the smallest RTVL of
//! 2Δt is that queue, so BDP grows with it and the inflight test, which only sees a second of
//! λ − μ, stops firing; the probes go on and the queue fills (docs/c3g.md: frame latency P95 of
//! 4–48 s on the cellular traces with 1000 packets of buffer). `rtprop_window` (BBR's own
//! filter, §III-A) and `cut_during_hold` are there to show it; their defaults are the paper's.
//!
//! The encoder target is λ mapped through the same λ/v ratio as C³G ([`super::c3g::SendRatio`]),
//! never below the flow's minimum. BtlBW's 10-period window is ours (BBR uses 6–10 RTTs; §III-A);
//! λ and μ in `inflight` are sums over the last w' = 1 s of periods (our reading of "(λ(t) −
//! μ(t))·w'": one period's difference times a second would count a frame that straddles two
//! periods as a second's worth of queue).

use super::c3g::{
    catch_up, feedback_every, period_rtvl, rate_bounds, testbed_media, Meter, SendRatio,
};
use super::params::controller_config;
use super::{
    build_fn, parse_config, Controller, ControllerContext, ControllerError, ControllerInfo,
    Decision, FeedbackPolicy, FrameController, Params,
};
use crate::packet::{FeedbackReport, FrameAck, FrameInfo, RateReport, SentPacket};
use crate::units::{Duration, Rate, Time};
use std::collections::VecDeque;

controller_config! {
    /// `c3g-bbr`'s parameters.
    pub struct C3gBbrConfig {
        /// iteration and report period Δt
        ///
        /// 100 ms: at 50 ms the congestion test (inflight against a BDP from two periods of
        /// RTVL) fires on frame-size noise and the rate sinks to half the link (48 % channel use
        /// over the paper's test set).
        pub interval: Duration = Duration::from_millis(100),
        /// lowest target
        #[doc_default = "the flow's min_bitrate"]
        pub min_rate: Option<Rate> = None,
        /// first target
        ///
        /// `None`: the flow's `start_bitrate`, else 300 kbit/s.
        #[doc_default = "the flow's start_bitrate, else 300kbps"]
        pub start_rate: Option<Rate> = None,
        /// Startup plateau and highest target
        ///
        /// `None`: the flow's `max_bitrate`, else 50 Mbit/s.
        #[doc_default = "the flow's max_bitrate, else 50Mbps"]
        pub max_rate: Option<Rate> = None,
        /// start in ProbeBW
        ///
        /// The paper's drop tests start at a known rate.
        pub skip_startup: bool = false,
        /// an unacknowledged frame this long after a later one counts as lost
        ///
        /// For a receiver that sends no late acknowledgements of lost frames (see `c3g`'s).
        pub lost_frame_timeout: Duration = Duration::from_millis(100),
        /// measure only, at the start rate, for this long
        ///
        /// The first keyframe and a half-measured μ̄ look like a queue (ours, as for `c3g`).
        pub warmup: Duration = Duration::from_millis(2000),
        /// window of RTprop, the smallest RTVL
        ///
        /// `None`: two periods, the paper's "w = 2Δt" (§VI-A.1). Behind a standing queue the
        /// smallest RTVL of 2Δt is the queue itself, so BDP grows with the queue and inflight
        /// never passes it: on a deep buffer the paper's BBR fills it (docs/c3g.md). BBR's own
        /// filter spans "tens of seconds to minutes" (§III-A); `"10s"` is Linux BBR's.
        #[doc_default = "2 periods (the paper's 2Δt)"]
        pub rtprop_window: Option<Duration> = None,
        /// check congestion in the six ×1 iterations after a cut too
        ///
        /// The paper's ProbeBW is "reduced (×0.75) and then stabilized (×1) for six
        /// iterations" (§VI-A.2); `false` reads the six as a hold with no check, so the rate
        /// falls by at most ×0.75 per seven iterations. `true` cuts at every congested
        /// iteration, the reading of the extraction's B2.
        pub cut_during_hold: bool = false,
    }
}

/// Periods over which BtlBW is the largest μ̄.
const BTLBW_PERIODS: usize = 10;
/// Iterations at ×1 after a cut, and the length of the gain cycle.
const CRUISE: u32 = 6;
const CYCLE: u32 = 8;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Startup,
    ProbeBw,
}

pub struct C3gBbr {
    cfg: C3gBbrConfig,
    meter: Meter,
    ratio: SendRatio,
    min_rate: f64,
    max_rate: f64,
    next_tick: Time,
    observe_until: Time,
    lambda: f64,
    target: Rate,
    mode: Mode,
    /// Iterations until the next probe, and iterations left at ×1 after a cut.
    until_probe: u32,
    cruise: u32,
    received: VecDeque<f64>,
    /// λ̄ − μ̄ of the periods of the last second.
    differences: VecDeque<f64>,
    /// RTVL samples of the last `rtprop_window` (time, ms), and that window.
    recent_rtvl: VecDeque<(Time, f64)>,
    rtprop_window: Duration,
    previous_rtvl: Option<f64>,
    // For the logs.
    btlbw: f64,
    rtprop_ms: f64,
    inflight: f64,
    congestion: bool,
}

impl C3gBbr {
    pub fn new(cfg: C3gBbrConfig, ctx: &ControllerContext) -> Result<C3gBbr, String> {
        if cfg.interval.0 == 0 {
            return Err("interval must be longer than 0ms".into());
        }
        let (min, start, max) = rate_bounds(cfg.min_rate, cfg.start_rate, cfg.max_rate, ctx)?;
        // Its gains change the target every period, so waiting for a held target would never learn.
        let mut ratio = SendRatio::new(cfg.interval, Duration::ZERO);
        let target = Rate(ratio.target(start));
        Ok(C3gBbr {
            // λ and μ per period: BBR's inflight sums them over a second anyway.
            meter: Meter::new(cfg.lost_frame_timeout, cfg.interval),
            ratio,
            min_rate: min,
            max_rate: max,
            next_tick: ctx.now + cfg.interval,
            observe_until: ctx.now + cfg.warmup,
            lambda: start,
            target,
            mode: if cfg.skip_startup {
                Mode::ProbeBw
            } else {
                Mode::Startup
            },
            until_probe: CYCLE - 1,
            cruise: 0,
            received: VecDeque::new(),
            differences: VecDeque::new(),
            recent_rtvl: VecDeque::new(),
            rtprop_window: cfg.rtprop_window.unwrap_or(Duration(2 * cfg.interval.0)),
            previous_rtvl: None,
            btlbw: 0.0,
            rtprop_ms: f64::NAN,
            inflight: 0.0,
            congestion: false,
            cfg,
        })
    }

    fn tick(&mut self, now: Time) {
        let dt = self.cfg.interval;
        let p = self.meter.close(now, dt);
        self.ratio.learn(p.sent_bps);
        self.previous_rtvl = period_rtvl(&p, self.previous_rtvl);
        self.received.push_back(p.received_bps);
        if self.received.len() > BTLBW_PERIODS {
            self.received.pop_front();
        }
        self.recent_rtvl.extend(p.rtvl.iter().copied());
        while self
            .recent_rtvl
            .front()
            .is_some_and(|&(t, _)| t + self.rtprop_window < now)
        {
            self.recent_rtvl.pop_front();
        }
        self.btlbw = self.received.iter().copied().fold(0.0, f64::max);
        // RTprop: the smallest RTVL of the window (the period's RTVL when none came).
        self.rtprop_ms = self
            .recent_rtvl
            .iter()
            .map(|s| s.1)
            .reduce(f64::min)
            .or(self.previous_rtvl)
            .unwrap_or(f64::NAN);
        self.differences.push_back(p.sent_bps - p.received_bps);
        let per_second = (1.0 / dt.as_secs_f64()).round().max(1.0) as usize;
        while self.differences.len() > per_second {
            self.differences.pop_front();
        }
        // Bits sent minus bits received over the last second.
        self.inflight = self.differences.iter().sum::<f64>() * dt.as_secs_f64();
        let bdp = self.btlbw * self.rtprop_ms / 1e3;
        self.congestion =
            self.rtprop_ms.is_finite() && self.inflight > bdp && now >= self.observe_until;
        let warming_up = now < self.observe_until;
        match self.mode {
            _ if warming_up => {} // measure only: the first keyframe is not a queue
            Mode::Startup => {
                if self.congestion {
                    self.lambda *= 0.5;
                    self.mode = Mode::ProbeBw;
                    self.cruise = CRUISE;
                } else {
                    // Twice what went out, so an encoder that lags does not leave the target
                    // doubling far ahead of the rate actually sent.
                    self.lambda = (2.0 * p.sent_bps).max(self.lambda);
                    if self.lambda >= self.max_rate {
                        self.mode = Mode::ProbeBw;
                    }
                }
            }
            Mode::ProbeBw => {
                if self.cruise > 0 && !(self.cfg.cut_during_hold && self.congestion) {
                    self.cruise -= 1;
                } else if self.congestion {
                    self.lambda *= 0.75;
                    self.cruise = CRUISE;
                    self.until_probe = CRUISE;
                } else if self.until_probe > 0 {
                    self.until_probe -= 1;
                } else {
                    self.lambda *= 1.25;
                    self.until_probe = CYCLE - 1;
                }
            }
        }
        self.lambda = self.lambda.clamp(self.min_rate, self.max_rate);
        self.target = Rate(self.ratio.target(self.lambda));
    }
}

impl Controller for C3gBbr {
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
        Decision::rate_only(self.target, None)
    }

    fn frame_controller(&mut self) -> Option<&mut dyn FrameController> {
        Some(self)
    }

    fn state(&self, out: &mut Vec<(&'static str, f64)>) {
        out.push(("btlbw_bps", self.btlbw));
        out.push(("rtprop_ms", self.rtprop_ms));
        out.push(("inflight_bits", self.inflight));
        out.push(("congestion", self.congestion as u8 as f64));
        out.push(("lambda_target_bps", self.lambda));
        out.push(("target_bps", self.target.bps()));
        out.push(("startup", (self.mode == Mode::Startup) as u8 as f64));
        out.push(("rtvl_ms", self.previous_rtvl.unwrap_or(f64::NAN)));
    }
}

impl FrameController for C3gBbr {
    fn on_frame_ack(&mut self, now: Time, ack: &FrameAck) {
        self.meter.on_frame_ack(now, ack);
    }

    fn on_frame_encoded(&mut self, _now: Time, frame: &FrameInfo) {
        self.meter.on_frame_encoded(frame);
    }
}

pub fn info() -> ControllerInfo {
    ControllerInfo {
        name: "c3g-bbr".into(),
        summary: "C3G's baseline: BBR rebuilt at the application level from RTVL and the bits \
                  received (gains on the encoder target)."
            .into(),
        params: C3gBbrConfig::param_docs(),
        // μ from transport-wide feedback, not from rate reports (docs/c3g.md: with the report's
        // μ, a report period behind λ̄, the inflight test reads every increase as a queue).
        feedback: FeedbackPolicy {
            rate_reports: None,
            ..feedback_every(C3gBbrConfig::default().interval)
        },
        // The platform C³G ran on, which the paper's BBR ran on too (§VI-A, §VI-B).
        media: testbed_media(),
        build: build_fn(build),
    }
}

fn build(params: &Params, ctx: &ControllerContext) -> Result<Box<dyn Controller>, ControllerError> {
    let cfg: C3gBbrConfig = parse_config("c3g-bbr", params)?;
    super::boxed("c3g-bbr", C3gBbr::new(cfg, ctx))
}
