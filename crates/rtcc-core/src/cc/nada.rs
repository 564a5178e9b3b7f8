//! `nada`: NADA, Network-Assisted Dynamic Adaptation (Zhu, Pan, Ramalho, Mena et al., RFC 8698,
//! 2020), the RMCAT group's unified delay-, loss- and ECN-based rate controller for real-time
//! media.
//!
//! NADA folds every congestion signal into one number, the aggregated congestion signal `x_curr`,
//! in milliseconds of "equivalent delay", and steers the reference rate `r_ref` so that `x_curr`
//! settles where its price balances the flow's share: `x_curr = PRIO·XREF·RMAX / r_ref`. A flow
//! alone on a link of capacity C < RMAX therefore holds a standing queue of about XREF·RMAX/C
//! (15 ms at 1 Mbit/s with the RFC's 10 ms and 1.5 Mbit/s), and flows that see the same signal
//! share in proportion to their PRIO.
//!
//! What the receiver measures (RFC 8698 §4.2), per packet and over the last LOGWIN:
//!
//! - the queuing delay `d_queue = d_fwd − d_base`, the one-way delay above the smallest seen (the
//!   clocks' offset cancels), through a 15-tap minimum filter that removes spikes;
//! - the loss ratio `p_loss` and the ECN marking ratio `p_mark` over LOGWIN, each smoothed with
//!   ALPHA once per update;
//! - Eq. (1), the non-linear warping: while a loss is recent (within MULTILOSS average loss
//!   intervals, counted in packets as RFC 5348 §5.4 averages them) a queue beyond QTH counts less
//!   and less, `d_tilde = QTH·exp(−LAMBDA·(d_queue − QTH)/QTH)`, so that against a loss-based flow
//!   that fills a deep buffer NADA competes on losses instead of yielding to the delay;
//! - Eq. (2), `x_curr = d_tilde + DMARK·(p_mark/PMRREF)² + DLOSS·(p_loss/PLRREF)²`;
//! - the mode: accelerated ramp-up (`rmode = 0`) while nothing was lost in LOGWIN and every
//!   packet's queuing delay in LOGWIN stayed under QEPS, gradual update (`rmode = 1`) otherwise;
//! - the receiving rate `r_recv` over LOGWIN.
//!
//! What the sender does with them every DELTA (§4.3):
//!
//! - accelerated ramp-up, Eqs. (3)–(4): `γ = min(GAMMA_MAX, QBOUND / (rtt + DELTA + DFILT))`
//!   and `r_ref = max(r_ref, (1 + γ)·r_recv)`, a rise that cannot build more than QBOUND of queue
//!   before the feedback says so;
//! - gradual update, Eqs. (5)–(7): `x_offset = x_curr − PRIO·XREF·RMAX/r_ref`,
//!   `x_diff = x_curr − x_prev`, `r_ref ← r_ref − KAPPA·(δ/TAU)·(x_offset/TAU)·r_ref
//!   − KAPPA·ETA·(x_diff/TAU)·r_ref`: a proportional term that drives `x_curr` to the flow's
//!   price and a derivative term that damps the loop;
//! - `r_ref` stays within [RMIN, RMAX].
//!
//! The rate shaping buffer (§4.4, Eqs. (8)–(9)): media the encoder produced but the sender has not
//! sent yet lowers the encoder's target and raises the sending rate, both by `8·buffer_len·FPS`
//! scaled by BETA_V and BETA_S, so that a large frame drains within a few frame intervals without
//! the encoder adding more behind it: `r_vin = max(RMIN, r_ref − BETA_V·8·buffer_len·FPS)`,
//! `r_send = min(RMAX, r_ref + BETA_S·8·buffer_len·FPS)`.
//!
//! Judgment calls (each also in `docs/controllers.md`):
//!
//! - **Where the receiver's statistics are computed.** rtcc's feedback carries every packet's
//!   arrival time and ECN codepoint (transport-wide feedback, RFC 8888-like), so the statistics
//!   of §4.2 are computed at the sender from that feedback, exactly as the receiver would compute
//!   them from the same packets (the sender-based form Cisco's ns-3 reference uses). Feedback
//!   comes every DELTA = 100 ms (§5.3).
//! - **RMIN, the start and RMAX** are the flow's media range when the scenario gives one (RFC
//!   8868's 150 kbit/s – 1.5 Mbit/s in the RMCAT cases). Otherwise RMIN is the flow's minimum
//!   bitrate (the floor every controller shares), the start the RFC's RMIN, 150 kbit/s (§4.3
//!   starts r_ref there), and RMAX the RFC's 1.5 Mbit/s. RMAX is also NADA's price scale:
//!   raising it to use a faster link raises the standing queue at a given rate in proportion
//!   (XREF·RMAX/r).
//! - **The update interval δ** is the time since the last update, capped at TAU: after an outage
//!   without feedback one update must not act as if it had seen many. Updates closer than DELTA/2
//!   wait for the next feedback (the reference's 50 % leniency).
//! - **The ramp-up test reads the filtered queuing delay**: "no build-up of queuing delay" is
//!   checked on the minimum filter's output for every packet of LOGWIN, not on each raw sample
//!   (the reference reads raw samples). §4.2 filters d_queue to remove what is not queuing; under
//!   RFC 8868's jitter (RFC 8867 §5.1: up to 30 ms, standard deviation 10 ms) raw samples pass
//!   QEPS = 10 ms every few packets, and NADA never left the gradual mode (5.1: 24 s to ramp up,
//!   5.2 and 5.3 never).
//! - **d_base** is the smallest one-way delay since the flow started (§4.2 does not say how long
//!   to remember it). A route change that lowers the delay resets it by itself; one that raises
//!   it, or clocks that drift apart in a live run, is read as queue from then on (the reference
//!   forgets its base after 500 ms without feedback).
//! - **Loss intervals** are counted in packets between loss *events* (a run of consecutive
//!   losses is one event, as the reference's sequence gaps are; RFC 5348 groups losses within an
//!   RTT; the first interval from the flow's first packet) and averaged with RFC 5348 §5.4's weights
//!   over the last eight (1, 1, 1, 1, 0.8, 0.6, 0.4, 0.2). A loss is "recent" while the packets
//!   since it number fewer than MULTILOSS average intervals; after that the queuing delay counts
//!   unwarped at once. Unlike RFC 5348's average (and the reference's), the open interval is not
//!   averaged in: it is the quantity compared with the average, and with it inside (weight 1 of
//!   at most 6, times MULTILOSS = 7) a loss would stay "recent" forever. The reference also
//!   blends warped and unwarped delay over one more interval; the RFC does not.
//! - **`x_curr` is capped at XMAX = 500 ms**, as Cisco's reference caps it (`NADA_PARAM_XMAX`);
//!   RFC 8698 has no cap. Without one, heavy loss makes the loss penalty huge (40 % loss is
//!   DLOSS·40² = 16 s of "delay") and its swings from one update to the next, through the
//!   derivative term, throw the rate between RMIN and RMAX every few updates (measured: 61 % loss
//!   on a 100 kbit/s link, the rate at 1.5 Mbit/s a third of the time). Capped, a flow under
//!   heavy loss settles where the price equals XMAX.
//! - **buffer_len** is the media bytes the encoder produced minus those sent, reset to zero when
//!   the sender reports its queue empty at a frame capture (so frames the sender's own queue
//!   bound discards never count forever).

use super::params::controller_config;
use super::{
    boxed, build_fn, parse_config, Controller, ControllerContext, ControllerError, ControllerInfo,
    Decision, FeedbackPolicy, FrameAction, FrameController, FrameView, Params,
};
use crate::packet::{FeedbackReport, FrameInfo, PacketKind, SentPacket};
use crate::units::{Duration, Rate, Time};
use std::collections::VecDeque;

/// RFC 8698 §4.2: "a 15-tap minimum filter" over the queuing-delay samples.
const MIN_FILTER_TAPS: usize = 15;
/// RFC 5348 §5.4: the weights of the last eight loss intervals, newest first.
const LOSS_INTERVAL_WEIGHTS: [f64; 8] = [1.0, 1.0, 1.0, 1.0, 0.8, 0.6, 0.4, 0.2];
/// RFC 8698 Figure 3's RMIN, where the sender starts (§4.3: r_ref begins at RMIN), and RMAX when
/// neither the parameters nor the flow's media range set one.
const RFC_START: Rate = Rate(150_000.0);
const RFC_RMAX: Rate = Rate(1_500_000.0);

controller_config! {
    /// NADA's parameters: RFC 8698 Figure 3's defaults.
    pub struct NadaConfig {
        /// weight of the flow's priority (PRIO)
        pub prio: f64 = 1.0,
        /// reference congestion level (XREF)
        pub xref: Duration = Duration::from_millis(10),
        /// scaling of the gradual rate update (KAPPA)
        pub kappa: f64 = 0.5,
        /// scaling of the gradual update's derivative term (ETA)
        pub eta: f64 = 2.0,
        /// upper bound of the RTT in the gradual update (TAU)
        pub tau: Duration = Duration::from_millis(500),
        /// update interval and Eq. 3's DELTA (feedback itself comes every 100 ms)
        pub delta: Duration = Duration::from_millis(100),
        /// observation window of the receiver's statistics (LOGWIN)
        pub logwin: Duration = Duration::from_millis(500),
        /// queuing delay below which ramp-up stays accelerated (QEPS)
        pub qeps: Duration = Duration::from_millis(10),
        /// bound on the filtering delay (DFILT)
        pub dfilt: Duration = Duration::from_millis(120),
        /// upper bound on the rate increase ratio in accelerated ramp-up (GAMMA_MAX)
        pub gamma_max: f64 = 0.5,
        /// upper bound on the self-inflicted queuing delay during ramp-up (QBOUND)
        pub qbound: Duration = Duration::from_millis(50),
        /// loss intervals after which a loss no longer warps the delay (MULTILOSS)
        pub multiloss: f64 = 7.0,
        /// queuing delay above which warping starts (QTH)
        pub qth: Duration = Duration::from_millis(50),
        /// exponent scaling of the warping (LAMBDA)
        pub lambda: f64 = 0.5,
        /// reference packet loss ratio (PLRREF)
        pub plrref: f64 = 0.01,
        /// reference ECN marking ratio (PMRREF)
        pub pmrref: f64 = 0.01,
        /// delay penalty of a loss ratio at PLRREF (DLOSS)
        pub dloss: Duration = Duration::from_millis(10),
        /// delay penalty of a marking ratio at PMRREF (DMARK)
        pub dmark: Duration = Duration::from_millis(2),
        /// cap on the aggregated congestion signal (XMAX; from Cisco's reference, not the RFC)
        pub xmax: Duration = Duration::from_millis(500),
        /// rate shaping: how much queued media raises the sending rate (BETA_S)
        pub beta_s: f64 = 0.1,
        /// rate shaping: how much queued media lowers the encoder's target (BETA_V)
        pub beta_v: f64 = 0.1,
        /// smoothing of the loss and marking ratios (ALPHA)
        pub alpha: f64 = 0.1,
        /// lowest rate (RMIN)
        #[doc_default = "the flow's min_bitrate"]
        pub min_rate: Option<Rate> = None,
        /// rate before the first update
        #[doc_default = "the flow's start_bitrate, else 150kbps"]
        pub start_rate: Option<Rate> = None,
        /// highest rate (RMAX), also the scale of the flow's price XREF*RMAX/r
        #[doc_default = "the flow's max_bitrate, else 1.5Mbps"]
        pub max_rate: Option<Rate> = None,
    }
}

/// One reported packet, kept for LOGWIN.
#[derive(Debug, Clone, Copy)]
struct Observation {
    sent: Time,
    /// Receive time (receiver clock) and size; `None` if lost.
    received: Option<(Time, u32)>,
    marked: bool,
    /// Queuing delay (ms) of a received packet, through the minimum filter.
    d_queue_ms: f64,
}

/// The receiver-side statistics of RFC 8698 §4.2, fed with per-packet feedback.
#[derive(Debug, Clone, Default)]
struct ReceiverStats {
    /// Smallest one-way delay seen (ns, receiver clock minus sender clock: may be negative).
    d_base: Option<i64>,
    /// The last 15 queuing-delay samples (ms), for the minimum filter.
    recent_d_queue: VecDeque<f64>,
    window: VecDeque<Observation>,
    /// Packets since the last loss event began (RFC 5348's I_0), and the completed intervals,
    /// newest first.
    current_interval: u64,
    intervals: VecDeque<u64>,
    losses_seen: bool,
    /// The last packet reported was lost: a further loss belongs to the same loss event.
    in_loss_event: bool,
    p_loss: f64,
    p_mark: f64,
}

impl ReceiverStats {
    fn observe(&mut self, report: &FeedbackReport, logwin: Duration) {
        for p in &report.packets {
            let (received, d_queue_ms) = match p.receive_time {
                Some(at) => {
                    // The receiver's clock may be offset from the sender's: only differences
                    // of one-way delays are used.
                    let d_fwd = at.0 as i64 - p.sent.send_time.0 as i64;
                    let base = self.d_base.map_or(d_fwd, |b| b.min(d_fwd));
                    self.d_base = Some(base);
                    let q = (d_fwd - base) as f64 / 1e6;
                    if self.recent_d_queue.len() == MIN_FILTER_TAPS {
                        self.recent_d_queue.pop_front();
                    }
                    self.recent_d_queue.push_back(q);
                    self.current_interval += 1;
                    self.in_loss_event = false;
                    let filtered = self.d_queue_ms().unwrap_or(q);
                    (Some((at, p.sent.size)), filtered)
                }
                None if self.in_loss_event => {
                    // A burst is one loss event: its later losses count into the new interval.
                    self.current_interval += 1;
                    (None, 0.0)
                }
                None => {
                    if self.intervals.len() == LOSS_INTERVAL_WEIGHTS.len() {
                        self.intervals.pop_back();
                    }
                    // RFC 5348: the distance between two loss events' first losses, in
                    // sequence numbers (this one included).
                    self.intervals.push_front(self.current_interval + 1);
                    self.current_interval = 0;
                    self.losses_seen = true;
                    self.in_loss_event = true;
                    (None, 0.0)
                }
            };
            self.window.push_back(Observation {
                sent: p.sent.send_time,
                received,
                marked: p.is_ce(),
                d_queue_ms,
            });
        }
        // LOGWIN by send time (one clock for lost and received packets alike). Sequence numbers
        // are given in send order, so the newest is the last reported.
        if let Some(newest) = self.window.back().map(|o| o.sent) {
            while self
                .window
                .front()
                .is_some_and(|o| o.sent + logwin < newest)
            {
                self.window.pop_front();
            }
        }
    }

    /// Smooth the loss and marking ratios of the window into `p_loss`, `p_mark` (once per update).
    fn smooth_ratios(&mut self, alpha: f64) {
        let n = self.window.len();
        if n == 0 {
            return;
        }
        let lost = self.window.iter().filter(|o| o.received.is_none()).count();
        let marked = self.window.iter().filter(|o| o.marked).count();
        self.p_loss += alpha * (lost as f64 / n as f64 - self.p_loss);
        self.p_mark += alpha * (marked as f64 / n as f64 - self.p_mark);
    }

    /// The 15-tap minimum of the queuing delay (ms); `None` before the first arrival.
    fn d_queue_ms(&self) -> Option<f64> {
        self.recent_d_queue.iter().copied().reduce(f64::min)
    }

    /// The average loss interval in packets, the last eight weighted as RFC 5348 §5.4 weighs them
    /// (`None` before the first loss). Only closed intervals: the open one is what is compared
    /// with it (see the module's judgment calls).
    fn average_loss_interval(&self) -> Option<f64> {
        if self.intervals.is_empty() {
            return None;
        }
        let weights = &LOSS_INTERVAL_WEIGHTS[..self.intervals.len()];
        let sum: f64 = self
            .intervals
            .iter()
            .zip(weights)
            .map(|(&i, w)| i as f64 * w)
            .sum();
        Some(sum / weights.iter().sum::<f64>())
    }

    /// Whether the last loss is recent: fewer than MULTILOSS average intervals of packets ago.
    fn loss_is_recent(&self, multiloss: f64) -> bool {
        self.losses_seen
            && self
                .average_loss_interval()
                .is_some_and(|avg| (self.current_interval as f64) < multiloss * avg)
    }

    /// Accelerated ramp-up allowed: nothing lost in the window and every packet's queuing delay
    /// in it under `qeps`.
    fn congestion_free(&self, qeps_ms: f64) -> bool {
        self.window
            .iter()
            .all(|o| o.received.is_some() && o.d_queue_ms < qeps_ms)
    }

    /// Bytes received in the last `logwin` of arrivals, as a rate.
    fn receiving_rate(&self, logwin: Duration) -> Option<Rate> {
        let arrivals = self.window.iter().filter_map(|o| o.received);
        let newest = arrivals.clone().map(|(t, _)| t).max()?;
        let bytes: u64 = arrivals
            .filter(|&(t, _)| t + logwin > newest)
            .map(|(_, s)| s as u64)
            .sum();
        Some(Rate(bytes as f64 * 8.0 / logwin.as_secs_f64()))
    }
}

pub struct Nada {
    cfg: NadaConfig,
    rmin: Rate,
    rmax: Rate,
    fps: f64,
    r_ref: Rate,
    r_recv: Rate,
    stats: ReceiverStats,
    x_curr_ms: f64,
    x_prev_ms: f64,
    warped: bool,
    accelerated: bool,
    rtt: Option<Duration>,
    last_update: Option<Time>,
    /// Media bytes encoded and not yet sent (the rate shaping buffer's length).
    buffer_bytes: u64,
}

impl Nada {
    pub fn new(cfg: NadaConfig, rmin: Rate, start: Rate, rmax: Rate, fps: f64) -> Nada {
        Nada {
            rmin,
            rmax,
            fps,
            r_ref: start,
            r_recv: Rate::ZERO,
            stats: ReceiverStats::default(),
            x_curr_ms: 0.0,
            x_prev_ms: 0.0,
            warped: false,
            accelerated: true,
            rtt: None,
            last_update: None,
            buffer_bytes: 0,
            cfg,
        }
    }

    /// Eq. (1): the warped queuing delay (ms).
    fn warp(&self, d_queue_ms: f64) -> f64 {
        let qth = self.cfg.qth.as_millis_f64();
        if d_queue_ms < qth {
            d_queue_ms
        } else {
            qth * (-self.cfg.lambda * (d_queue_ms - qth) / qth).exp()
        }
    }

    /// Eq. (2): the aggregated congestion signal (ms).
    fn aggregate(&mut self, d_queue_ms: f64) -> f64 {
        self.warped = self.stats.loss_is_recent(self.cfg.multiloss);
        let d_tilde = if self.warped {
            self.warp(d_queue_ms)
        } else {
            d_queue_ms
        };
        let mark = self.stats.p_mark / self.cfg.pmrref;
        let loss = self.stats.p_loss / self.cfg.plrref;
        let x = d_tilde
            + self.cfg.dmark.as_millis_f64() * mark * mark
            + self.cfg.dloss.as_millis_f64() * loss * loss;
        x.min(self.cfg.xmax.as_millis_f64())
    }

    fn update(&mut self, delta: Duration) {
        self.stats.smooth_ratios(self.cfg.alpha);
        let Some(d_queue) = self.stats.d_queue_ms() else {
            return; // nothing arrived yet
        };
        self.x_prev_ms = self.x_curr_ms;
        self.x_curr_ms = self.aggregate(d_queue);
        if let Some(r) = self.stats.receiving_rate(self.cfg.logwin) {
            self.r_recv = r;
        }
        self.accelerated = self.stats.congestion_free(self.cfg.qeps.as_millis_f64());
        let r = self.r_ref.bps();
        let r_new = if self.accelerated {
            // Eqs. (3)–(4).
            let rtt_ms = self.rtt.map_or(0.0, |d| d.as_millis_f64());
            let horizon = rtt_ms + self.cfg.delta.as_millis_f64() + self.cfg.dfilt.as_millis_f64();
            let gamma = self
                .cfg
                .gamma_max
                .min(self.cfg.qbound.as_millis_f64() / horizon);
            r.max((1.0 + gamma) * self.r_recv.bps())
        } else {
            // Eqs. (5)–(7).
            let tau = self.cfg.tau.as_millis_f64();
            let price = self.cfg.prio * self.cfg.xref.as_millis_f64() * self.rmax.bps() / r;
            let x_offset = self.x_curr_ms - price;
            let x_diff = self.x_curr_ms - self.x_prev_ms;
            r - self.cfg.kappa * (delta.as_millis_f64() / tau) * (x_offset / tau) * r
                - self.cfg.kappa * self.cfg.eta * (x_diff / tau) * r
        };
        self.r_ref = Rate(r_new.clamp(self.rmin.bps(), self.rmax.bps()));
    }

    /// Eqs. (8)–(9): the encoder's target and the sending rate.
    fn shaped(&self) -> (Rate, Rate) {
        let backlog = 8.0 * self.buffer_bytes as f64 * self.fps;
        let r = self.r_ref.bps();
        let r_vin = (r - self.cfg.beta_v * backlog).max(self.rmin.bps());
        let r_send = (r + self.cfg.beta_s * backlog).min(self.rmax.bps());
        (Rate(r_vin), Rate(r_send.max(r_vin)))
    }
}

impl Controller for Nada {
    fn on_packet_sent(&mut self, _now: Time, pkt: &SentPacket) {
        if pkt.kind == PacketKind::Media {
            self.buffer_bytes = self.buffer_bytes.saturating_sub(pkt.size as u64);
        }
    }

    fn on_feedback(&mut self, now: Time, report: &FeedbackReport) {
        self.stats.observe(report, self.cfg.logwin);
        if let Some(rtt) = report.latest_rtt() {
            self.rtt = Some(rtt);
        }
        let Some(last) = self.last_update else {
            self.last_update = Some(now);
            return;
        };
        let since = now - last;
        if since.0 < self.cfg.delta.0 / 2 {
            return;
        }
        self.update(since.min(self.cfg.tau));
        self.last_update = Some(now);
    }

    fn decision(&self) -> Decision {
        let (target, pacing) = self.shaped();
        Decision::rate_only(target, Some(pacing))
    }

    fn frame_controller(&mut self) -> Option<&mut dyn FrameController> {
        Some(self)
    }

    fn state(&self, out: &mut Vec<(&'static str, f64)>) {
        let (target, pacing) = self.shaped();
        out.push(("r_ref_bps", self.r_ref.bps()));
        out.push(("target_bps", target.bps()));
        out.push(("pacing_bps", pacing.bps()));
        out.push(("r_recv_bps", self.r_recv.bps()));
        out.push(("x_curr_ms", self.x_curr_ms));
        out.push(("d_queue_ms", self.stats.d_queue_ms().unwrap_or(f64::NAN)));
        out.push((
            "price_ms",
            self.cfg.prio * self.cfg.xref.as_millis_f64() * self.rmax.bps() / self.r_ref.bps(),
        ));
        out.push(("p_loss", self.stats.p_loss));
        out.push(("p_mark", self.stats.p_mark));
        out.push(("rmode", if self.accelerated { 0.0 } else { 1.0 }));
        out.push(("warped", self.warped as u8 as f64));
        out.push(("buffer_bytes", self.buffer_bytes as f64));
    }
}

impl FrameController for Nada {
    fn on_frame_encoded(&mut self, _now: Time, frame: &FrameInfo) {
        self.buffer_bytes += frame.size as u64;
    }

    fn frame_action(&mut self, _now: Time, view: &FrameView) -> FrameAction {
        if view.oldest_queued.is_none() {
            self.buffer_bytes = 0;
        }
        FrameAction::default()
    }
}

impl NadaConfig {
    fn validate(&self) -> Result<(), String> {
        let positive = [
            ("prio", self.prio),
            ("kappa", self.kappa),
            ("multiloss", self.multiloss),
            ("plrref", self.plrref),
            ("pmrref", self.pmrref),
        ];
        for (name, v) in positive {
            if !(v.is_finite() && v > 0.0) {
                return Err(format!("{name} must be positive, got {v}"));
            }
        }
        let bounded = [
            ("eta", self.eta),
            ("gamma_max", self.gamma_max),
            ("lambda", self.lambda),
            ("beta_s", self.beta_s),
            ("beta_v", self.beta_v),
        ];
        for (name, v) in bounded {
            if !(v.is_finite() && (0.0..=10.0).contains(&v)) {
                return Err(format!("{name} must be 0 to 10, got {v}"));
            }
        }
        if !(self.alpha > 0.0 && self.alpha <= 1.0) {
            return Err(format!("alpha must be in (0, 1], got {}", self.alpha));
        }
        for (name, d) in [
            ("xref", self.xref),
            ("tau", self.tau),
            ("delta", self.delta),
            ("logwin", self.logwin),
            ("qth", self.qth),
            ("xmax", self.xmax),
        ] {
            if d.0 == 0 {
                return Err(format!("{name} must be longer than 0"));
            }
        }
        Ok(())
    }
}

/// Feedback every DELTA (RFC 8698 §5.3: "the receiver sends feedback every DELTA").
pub const NADA_FEEDBACK: FeedbackPolicy = FeedbackPolicy {
    interval: Some(Duration(100_000_000)),
    per_frame: false,
    frame_acks: false,
    rate_reports: None,
};

pub fn info() -> ControllerInfo {
    ControllerInfo {
        name: "nada".into(),
        summary: "NADA (RFC 8698): one congestion signal from delay, loss and ECN; accelerated \
                  ramp-up or gradual update towards x = PRIO*XREF*RMAX/r."
            .into(),
        params: NadaConfig::param_docs(),
        feedback: NADA_FEEDBACK,
        media: Default::default(),
        build: build_fn(build),
    }
}

fn build(params: &Params, ctx: &ControllerContext) -> Result<Box<dyn Controller>, ControllerError> {
    let config: NadaConfig = parse_config("nada", params)?;
    let bad = |message: String| ControllerError::BadParams {
        controller: "nada".into(),
        message,
    };
    config.validate().map_err(bad)?;
    let rmin = config.min_rate.unwrap_or(ctx.media.min_bitrate);
    let rmax = config
        .max_rate
        .or(ctx.media.max_bitrate)
        .unwrap_or(RFC_RMAX);
    let start = config
        .start_rate
        .or(ctx.media.start_bitrate)
        .unwrap_or(RFC_START.max(rmin).min(rmax));
    if !(rmin.bps() > 0.0 && rmin <= start && start <= rmax && rmax.bps().is_finite()) {
        return Err(bad(format!(
            "rates must satisfy 0 < min_rate <= start_rate <= max_rate, got {rmin} / {start} / {rmax}"
        )));
    }
    boxed("nada", Ok(Nada::new(config, rmin, start, rmax, ctx.fps)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::{Ecn, PacketResult};

    fn nada(params: &str, media: crate::video::range::MediaRange) -> Nada {
        let p: Params = toml::from_str(params).unwrap();
        let cfg: NadaConfig = parse_config("nada", &p).unwrap();
        let rmin = cfg.min_rate.unwrap_or(media.min_bitrate);
        let rmax = cfg.max_rate.or(media.max_bitrate).unwrap_or(RFC_RMAX);
        let start = cfg.start_rate.unwrap_or(RFC_START);
        Nada::new(cfg, rmin, start, rmax, 30.0)
    }

    use crate::cc::test_support::signal as get;

    /// A sender that sends a 1250-byte packet every `gap_ms` and hears about them every 100 ms,
    /// with each packet's one-way delay (or loss) chosen by `fate(seq)`.
    struct Feed {
        seq: u64,
        now_ms: u64,
        gap_ms: u64,
        pending: Vec<PacketResult>,
    }

    impl Feed {
        fn new(gap_ms: u64) -> Feed {
            Feed {
                seq: 0,
                now_ms: 0,
                gap_ms,
                pending: vec![],
            }
        }

        /// Run `ms` of time; `fate(seq)` is the packet's one-way delay in ms, `None` for lost.
        fn run(&mut self, c: &mut Nada, ms: u64, fate: &mut dyn FnMut(u64) -> Option<u64>) {
            let end = self.now_ms + ms;
            while self.now_ms < end {
                self.now_ms += self.gap_ms;
                let sent = SentPacket {
                    seq: self.seq,
                    size: 1250,
                    send_time: Time::from_millis(self.now_ms),
                    frame: None,
                    index_in_frame: 0,
                    packets_in_frame: 0,
                    kind: PacketKind::Media,
                    in_flight: 0,
                };
                c.on_packet_sent(sent.send_time, &sent);
                self.pending.push(PacketResult {
                    sent,
                    receive_time: fate(self.seq).map(|d| Time::from_millis(self.now_ms + d)),
                    ecn: Ecn::NotEct,
                });
                self.seq += 1;
                if self.now_ms.is_multiple_of(100) {
                    // Feedback 20 ms after the newest packet (the reverse path).
                    let now = Time::from_millis(self.now_ms + 20);
                    let report = FeedbackReport {
                        feedback_time: now,
                        packets: std::mem::take(&mut self.pending),
                        in_flight: 0,
                        recovery: None,
                    };
                    c.on_feedback(now, &report);
                }
            }
        }
    }

    #[test]
    fn the_warping_is_eq_1() {
        let c = nada("", Default::default());
        assert_eq!(
            c.warp(40.0),
            40.0,
            "below QTH the queuing delay counts as it is"
        );
        assert_eq!(c.warp(50.0), 50.0, "continuous at QTH");
        // QTH·exp(−LAMBDA·(d − QTH)/QTH): 50·e^(−0.5) at 100 ms, 50·e^(−2.5) at 300 ms.
        assert!((c.warp(100.0) - 50.0 * (-0.5f64).exp()).abs() < 1e-9);
        assert!((c.warp(300.0) - 50.0 * (-2.5f64).exp()).abs() < 1e-9);
    }

    #[test]
    fn with_no_queue_the_rate_ramps_up_by_one_plus_gamma_times_what_arrives() {
        // 1 Mbit/s arriving (a 1250-byte packet every 10 ms), 20 ms each way, no queue: the
        // accelerated mode with γ = min(0.5, QBOUND / (rtt + DELTA + DFILT)). The RTT a report
        // shows is its newest packet's: sent 20 ms before the report arrives, 50/(20 + 100 + 120).
        let mut c = nada("", Default::default());
        let mut f = Feed::new(10);
        f.run(&mut c, 1000, &mut |_| Some(20));
        assert_eq!(get(&c, "rmode"), 0.0);
        assert!(
            (get(&c, "r_recv_bps") - 1e6).abs() < 1.0,
            "{}",
            get(&c, "r_recv_bps")
        );
        let gamma = 50.0 / 240.0;
        let expected = (1.0 + gamma) * 1e6;
        assert!(
            (get(&c, "r_ref_bps") - expected).abs() < 1.0,
            "{}",
            get(&c, "r_ref_bps")
        );
    }

    #[test]
    fn a_standing_queue_drives_the_rate_to_where_x_equals_the_price() {
        // Every packet after the first waits 30 ms more: gradual mode, x_curr = 30 ms, and
        // Eq. (7) settles where x_offset = 0: r = PRIO·XREF·RMAX / x = 10·1.5M/30 = 500 kbit/s,
        // from above and from below.
        for start in ["1.2Mbps", "200kbps"] {
            let mut c = nada(&format!("start_rate = \"{start}\""), Default::default());
            let mut f = Feed::new(10);
            f.run(&mut c, 200_000, &mut |seq| {
                Some(if seq == 0 { 20 } else { 50 })
            });
            assert_eq!(get(&c, "rmode"), 1.0);
            assert!((get(&c, "x_curr_ms") - 30.0).abs() < 1e-6);
            let r = get(&c, "r_ref_bps");
            assert!((r - 500e3).abs() < 5e3, "from {start}: {r}");
        }
        // A larger RMAX raises the price: the same queue then holds 1 Mbit/s.
        let mut c = nada(
            "start_rate = \"600kbps\"\nmax_rate = \"3Mbps\"",
            Default::default(),
        );
        let mut f = Feed::new(10);
        f.run(&mut c, 200_000, &mut |seq| {
            Some(if seq == 0 { 20 } else { 50 })
        });
        assert!(
            (get(&c, "r_ref_bps") - 1e6).abs() < 1e4,
            "{}",
            get(&c, "r_ref_bps")
        );
    }

    #[test]
    fn a_rising_queue_cuts_the_rate_through_the_derivative_term() {
        // Eq. (7)'s second term: x rising by 20 ms in one interval cuts KAPPA·ETA·20/TAU = 4 %.
        let mut c = nada("start_rate = \"1Mbps\"", Default::default());
        let mut f = Feed::new(10);
        f.run(&mut c, 2000, &mut |seq| {
            Some(if seq == 0 { 20 } else { 35 })
        });
        let before = get(&c, "r_ref_bps");
        let x_before = get(&c, "x_curr_ms");
        f.run(&mut c, 100, &mut |_| Some(55));
        let f15: f64 = 15.0; // the 15-tap minimum filter still holds older samples: x stays
        assert!((get(&c, "x_curr_ms") - f15).abs() < 1e-9 && x_before == 15.0);
        f.run(&mut c, 100, &mut |_| Some(55));
        assert_eq!(
            get(&c, "x_curr_ms"),
            35.0,
            "ten packets at 35 ms and the filter's 15 taps"
        );
        let after = get(&c, "r_ref_bps");
        // Over the two updates: proportional terms (x_offset = x − 15M/r) and one derivative cut.
        let r1 = before - 0.5 * 0.2 * ((15.0 - 1.5e7 / before) / 500.0) * before;
        let r2 =
            r1 - 0.5 * 0.2 * ((35.0 - 1.5e7 / r1) / 500.0) * r1 - 0.5 * 2.0 * (20.0 / 500.0) * r1;
        assert!((after - r2).abs() < 1.0, "{after} vs {r2}");
    }

    #[test]
    fn losses_add_their_penalty_and_warp_a_deep_queue() {
        // One packet in 50 lost (2 %) and a 150 ms queue: the loss is recent, so the queue
        // counts as QTH·e^(−LAMBDA·2) = 18.4 ms, and the smoothed loss ratio is about 0.02 (a
        // 500 ms window holds 51 packets and one or two losses), a penalty of about
        // DLOSS·(0.02/0.01)² = 40 ms.
        let mut c = nada("start_rate = \"1Mbps\"", Default::default());
        let mut f = Feed::new(10);
        f.run(&mut c, 60_000, &mut |seq| match seq {
            0 => Some(20),
            s if s % 50 == 49 => None,
            _ => Some(170),
        });
        assert_eq!(get(&c, "warped"), 1.0);
        assert_eq!(get(&c, "rmode"), 1.0);
        let p = get(&c, "p_loss");
        assert!((0.018..0.03).contains(&p), "{p}");
        let expected = 50.0 * (-0.5f64 * 2.0).exp() + 10.0 * (p / 0.01) * (p / 0.01);
        assert!((get(&c, "x_curr_ms") - expected).abs() < 1e-6);
        // The average loss interval is 50 packets; 7 of them without a loss and the queue
        // counts in full again.
        assert!((c.stats.average_loss_interval().unwrap() - 50.0).abs() < 1.0);
        f.run(&mut c, 4000, &mut |_| Some(170));
        assert_eq!(get(&c, "warped"), 0.0, "350 packets without a loss");
        assert!(get(&c, "x_curr_ms") > 150.0);
    }

    #[test]
    fn the_average_loss_interval_weighs_the_last_eight_as_rfc_5348() {
        let mut s = ReceiverStats {
            intervals: [100, 100, 100, 100].into_iter().collect(),
            current_interval: 500,
            ..Default::default()
        };
        assert_eq!(
            s.average_loss_interval(),
            Some(100.0),
            "the open interval is not averaged in"
        );
        assert!(!s.loss_is_recent(7.0), "no loss seen yet");
        s.losses_seen = true;
        assert!(s.loss_is_recent(7.0), "500 packets < 7 × 100");
        s.current_interval = 700;
        assert!(!s.loss_is_recent(7.0));
        s.intervals = (1..=8).map(|i| i * 10).collect(); // 10 (newest) .. 80
        let w = LOSS_INTERVAL_WEIGHTS;
        let expected: f64 =
            (1..=8).map(|i| i as f64 * 10.0 * w[i - 1]).sum::<f64>() / w.iter().sum::<f64>();
        assert!((s.average_loss_interval().unwrap() - expected).abs() < 1e-9);
    }

    #[test]
    fn a_burst_of_losses_is_one_loss_event() {
        // 20 packets lost in a row every 200: one loss event per 200 packets, so the average
        // interval is 200 (not 1, as counting each lost packet would make it), and the loss
        // stays recent for 7 × 200 packets after the last burst.
        let mut c = nada("start_rate = \"1Mbps\"", Default::default());
        let mut f = Feed::new(10);
        f.run(&mut c, 20_000, &mut |seq| (seq % 200 < 180).then_some(30));
        let avg = c.stats.average_loss_interval().unwrap();
        assert!((avg - 200.0).abs() < 1e-9, "average loss interval {avg}");
        f.run(&mut c, 10_000, &mut |_| Some(30));
        assert!(
            c.stats.loss_is_recent(7.0),
            "1000 packets after the burst, fewer than 1400"
        );
        f.run(&mut c, 5_000, &mut |_| Some(30));
        assert!(!c.stats.loss_is_recent(7.0), "1500 packets after the burst");
    }

    #[test]
    fn queued_media_lowers_the_target_and_raises_the_sending_rate() {
        // Eqs. (8)–(9): 10,000 bytes waiting at 30 frame/s is 2.4 Mbit/s of backlog; BETA 0.1.
        let mut c = nada("start_rate = \"1Mbps\"", Default::default());
        let frame = FrameInfo {
            frame: 0,
            capture_time: Time::ZERO,
            size: 10_000,
            target: Rate::from_mbps(1.0),
            packets: 8,
            keyframe: false,
        };
        c.on_frame_encoded(Time::ZERO, &frame);
        let d = c.decision();
        assert!((d.target_bitrate.bps() - 760e3).abs() < 1e-6);
        assert!((d.pacing_rate.unwrap().bps() - 1.24e6).abs() < 1e-6);
        // Sent: the buffer drains and both rates return to r_ref.
        let mut f = Feed::new(10);
        f.run(&mut c, 80, &mut |_| Some(20));
        assert_eq!(get(&c, "buffer_bytes"), 0.0);
        assert_eq!(
            c.decision().target_bitrate,
            c.decision().pacing_rate.unwrap()
        );
        // An empty sender queue at a capture resets what the controller counted.
        c.on_frame_encoded(Time::ZERO, &frame);
        let view = FrameView {
            oldest_queued: None,
            resolution: None,
        };
        c.frame_action(Time::ZERO, &view);
        assert_eq!(get(&c, "buffer_bytes"), 0.0);
    }

    #[test]
    fn after_an_outage_one_update_counts_at_most_tau() {
        let mut c = nada("start_rate = \"1Mbps\"", Default::default());
        let mut f = Feed::new(10);
        f.run(&mut c, 3000, &mut |seq| {
            Some(if seq == 0 { 20 } else { 50 })
        });
        let before = get(&c, "r_ref_bps");
        // Ten seconds of silence, then one report: δ is capped at TAU = 500 ms, not 10 s.
        f.now_ms += 10_000;
        f.pending.clear();
        f.run(&mut c, 100, &mut |_| Some(50));
        let after = get(&c, "r_ref_bps");
        let x_offset = 30.0 - 1.5e7 / before;
        let capped = before - 0.5 * (500.0 / 500.0) * (x_offset / 500.0) * before;
        assert!((after - capped).abs() < 1.0, "{after} vs {capped}");
    }

    #[test]
    fn parameters_and_rates_are_checked() {
        let ctx = crate::cc::test_support::context();
        for bad in [
            "prio = 0",
            "kappa = -1",
            "alpha = 0",
            "alpha = 2",
            "tau = \"0ms\"",
            "gamma_max = -0.1",
            "min_rate = \"2Mbps\"",
            "start_rate = \"3Mbps\"",
        ] {
            let p: Params = toml::from_str(bad).unwrap();
            assert!(crate::cc::create("nada", &p, &ctx).is_err(), "{bad}");
        }
        let p: Params = toml::from_str("prio = 2\nmax_rate = \"6Mbps\"").unwrap();
        assert!(crate::cc::create("nada", &p, &ctx).is_ok());
    }
}
