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

use super::{
    build_fn, parse_config, Controller, ControllerContext, ControllerError, ControllerInfo,
    Decision, FeedbackPolicy, FrameController, ParamDoc, Params,
};
use crate::packet::{FeedbackReport, FrameAck, FrameInfo, PacketKind, RateReport, SentPacket};
use crate::units::{Duration, Rate, Time};
use serde::Deserialize;
use std::collections::{BTreeMap, VecDeque};

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct C3gConfig {
    /// Control period Δt (open in the paper). Default 50 ms: of the periods swept (33, 50, 100,
    /// 200 ms; `experiments/c3g/tables.py`, docs/c3g.md) it is the one closest to the paper on the
    /// increase test (EP 43 ± 12 s against 36 ± 16 s) and on its stability (channel use 94 %
    /// against 93-96 %, RTVL 41-43 ms against 37-40); 33 ms climbs faster (31 ± 10 s), 100 ms
    /// and 200 ms slower (90 and 140 s; 200 ms misses 180 s in 30 of 60 runs). The receiver's rate reports follow the feedback policy (every 50 ms by
    /// default): a flow with another Δt sets `feedback.rate_reports` to it, as the paper's
    /// client reports every Δt.
    #[serde(default = "default_interval")]
    pub interval: Duration,
    /// Playability threshold RTVL_th (§IV-A). Default 100 ms.
    #[serde(default = "default_threshold")]
    pub rtvl_threshold: Duration,
    /// Largest exploration gain g_max (§IV-B). Default 50.
    #[serde(default = "default_g_max")]
    pub g_max: u32,
    /// Smallest exploration gain g_min (open). Default 1: the paper's g is "an integer between 1
    /// and g_max", and its slowest, most cautious step (10 kbit/s per 50Δt) is the one it resets to.
    #[serde(default = "default_g_min")]
    pub g_min: u32,
    /// Exploration step per unit of gain λ_exp,min (§IV-B). Default 10 kbit/s.
    #[serde(default = "default_step")]
    pub step: Rate,
    /// Weights (a, b, c, d, e, f) of the rating function (Eq. 3; e and f open). Default
    /// [1, 10, 1, 2, 10, 10]: the paper's (1, 10, 1, 2); e = f = 10 make one percent of
    /// retransmitted bits or lost frames weigh like 1 ms of RTVL spread (b = 10), the term the
    /// paper weighs most, since losses hurt a game as much as latency jitter (ours).
    #[serde(default = "default_weights")]
    pub weights: [f64; 6],
    /// Lowest target v_min (open). Default: the flow's `min_bitrate`, the rate below which the
    /// scenario says the stream is not worth sending (the testbed sets 3 Mbit/s, the 720p30
    /// encoder's rate at QP 40).
    pub min_rate: Option<Rate>,
    /// Start target. Default: the flow's `start_bitrate`, else 300 kbit/s (libwebrtc's default
    /// start), within the bounds.
    pub start_rate: Option<Rate>,
    /// Highest target. Default: the flow's `max_bitrate`, else 50 Mbit/s.
    pub max_rate: Option<Rate>,
    /// Periods over which ε keeps the largest λ̄ − μ̄ with no RTVL rise (open). Default 50: the
    /// paper updates ε "periodically"; 50 periods (2.5 s at 50 ms) hold a few exploration steps,
    /// so ε follows a change of rate without remembering one outlier for long. It is a span of
    /// time, not a count of calm periods: while RTVL keeps rising no period is calm, and ε falls
    /// back to its floor instead of holding an old value (one learned in a run's first second stayed
    /// for 14 s while RTVL climbed from 60 to 470 ms).
    #[serde(default = "default_epsilon_periods")]
    pub epsilon_periods: usize,
    /// ε's floor as a fraction of λ̄ (ours; the paper's ε has no start). Default 0.02: before any
    /// calm period, and on a quiet link, ε would be 0 and every jitter congestion; a queue that
    /// grows by 2 % of the rate or less stays hidden, and takes 5 s or more to add 100 ms. The
    /// floor is also never under two packets per rate window (`EDGE_PACKETS`).
    #[serde(default = "default_epsilon_floor")]
    pub epsilon_floor: f64,
    /// A frame not acknowledged this long after a later frame was counts as lost (the client's
    /// 100 ms presentation timeout, §V-B): the fallback for a receiver that sends no late
    /// acknowledgements (`frame_ack = { at = "complete" }`, the default). Default 100 ms.
    #[serde(default = "default_lost_frame_timeout")]
    pub lost_frame_timeout: Duration,
    /// After the warm-up, double the target every period, up to twice what was sent, until RTVL
    /// is about to pass the threshold, then drain to the operating point (ours, after BBR's
    /// Startup; the paper's server always starts from a known v_init). Default:
    /// on when the flow has no start rate (`start_rate` or the flow's `start_bitrate`), since
    /// exploration alone climbs 10 kbit/s per 2.5 s at first.
    pub startup: Option<bool>,
    /// What resets the exploration gain to g_min: `"drain"` (default) or `"congestion"` (every
    /// Eq. 1 detection, the paper's literal wording).
    #[serde(default)]
    pub gain_reset: GainReset,
    /// λ̄ and μ̄ are rates over this window, whole periods of at least Δt (ours). Default 200 ms:
    /// at 30 frame/s a 50 ms window holds one frame or two, so λ̄ swings by ±50 % from one
    /// period to the next and ε, learning those swings, hides a queue that grows slowly (seen:
    /// RTVL from 70 to 200 ms with no congestion flagged). 200 ms holds six frames.
    #[serde(default = "default_rate_window")]
    pub rate_window: Duration,
    /// Observe only (ε and ρ learn; no drain, no exploration) for this long from the start: the
    /// first keyframe and a half-measured μ̄ would otherwise trigger a drain to a rate measured
    /// before anything arrived (ours; the paper's tests start from a running stream). Default 2 s.
    #[serde(default = "default_warmup")]
    pub warmup: Duration,
}

/// What resets C³G's exploration gain (see the module header).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GainReset {
    #[default]
    Drain,
    Congestion,
}

fn default_rate_window() -> Duration {
    Duration::from_millis(200)
}

fn default_warmup() -> Duration {
    Duration::from_millis(2000)
}

fn default_interval() -> Duration {
    Duration::from_millis(50)
}
fn default_threshold() -> Duration {
    Duration::from_millis(100)
}
fn default_g_max() -> u32 {
    50
}
fn default_g_min() -> u32 {
    1
}
fn default_step() -> Rate {
    Rate::from_kbps(10.0)
}
fn default_weights() -> [f64; 6] {
    [1.0, 10.0, 1.0, 2.0, 10.0, 10.0]
}
fn default_epsilon_periods() -> usize {
    50
}
fn default_epsilon_floor() -> f64 {
    0.02
}
fn default_lost_frame_timeout() -> Duration {
    Duration::from_millis(100)
}

/// One control period's measurements.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Period {
    /// λ̄ and μ̄ in bit/s: bits sent, and bits reported received, over the rate window (the
    /// period, or the few periods that make up `rate_window`).
    pub sent_bps: f64,
    pub received_bps: f64,
    /// The median μ of the rate reports in the window (each over one report interval, the
    /// paper's μ(t) of one Δt); `received_bps` without reports.
    pub received_median_bps: f64,
    /// λ̄ over μ̄'s window moved back to the sender's clock by the base one-way delay (bit/s):
    /// bits sent in the window whose packets μ̄ would count had none of them queued, so
    /// λ̄_aligned − μ̄ is the growth of the bottleneck queue over the window (§V-A: "the server's
    /// responsibility to calculate λ(t) for the same time window used by the client for μ(t)").
    /// `sent_bps` when no new arrival was reported.
    pub sent_aligned_bps: f64,
    /// Share of the period's sent bits that were retransmissions (r).
    pub retransmitted: f64,
    /// RTVL samples of the period: (acknowledgement time, RTVL in ms), in order.
    pub rtvl: Vec<(Time, f64)>,
    /// Frames whose RTVL was sampled, and those among them that were lost.
    pub frames: u32,
    pub lost_frames: u32,
    /// Age of the oldest frame still waiting for its acknowledgement (ms).
    pub oldest_pending_ms: Option<f64>,
}

impl Period {
    pub fn mean_rtvl(&self) -> Option<f64> {
        (!self.rtvl.is_empty())
            .then(|| self.rtvl.iter().map(|s| s.1).sum::<f64>() / self.rtvl.len() as f64)
    }
}

/// C³G's measurements (§III-B, §V-A), shared with `c3g-bbr`: bits sent and received per period,
/// and the RTVL of every frame from its encoding to its acknowledgement.
#[derive(Debug, Clone)]
pub struct Meter {
    lost_frame_timeout: Duration,
    /// λ̄ and μ̄ are rates over this window (at least one period).
    rate_window: Duration,
    /// Bits sent in the recent periods (newest last), enough to cover `rate_window`.
    sent_periods: VecDeque<f64>,
    sent_bytes: u64,
    retransmitted_bytes: u64,
    /// The largest packet sent so far (bytes).
    largest_packet: u32,
    /// Reported arrivals (receiver clock, bytes) within the rate window of the newest, and the
    /// newest arrival at the previous close.
    arrivals: VecDeque<(Time, u32)>,
    newest_at_close: Option<Time>,
    /// The receiver's rate reports (§V-A: μ every Δt), newest last: (window start, window end,
    /// bytes), receiver clock, those whose windows end within the rate window of the newest.
    reports: VecDeque<(Time, Time, u64)>,
    /// When the newest report arrived (sender clock).
    last_report_at: Option<Time>,
    /// Packets sent (transport-wide sequence number, sender clock, bytes), kept to cover μ̄'s
    /// window moved to the sender's clock and to time the packet a rate report names.
    sent_log: VecDeque<(u64, Time, u32)>,
    /// The smallest receive − send time (ns; receiver clock minus sender clock) of the period's
    /// reported packets, and of each recent period over `BASE_DELAY_WINDOW`: the base one-way
    /// delay plus the clocks' offset.
    period_offset: Option<i64>,
    offsets: VecDeque<(Time, i64)>,
    /// Encoded frames not acknowledged yet: (frame, S_0, when a later frame was first
    /// acknowledged).
    pending: VecDeque<(u64, Time, Option<Time>)>,
    rtvl: Vec<(Time, f64)>,
    frames: u32,
    lost_frames: u32,
}

impl Meter {
    pub fn new(lost_frame_timeout: Duration, rate_window: Duration) -> Meter {
        Meter {
            lost_frame_timeout,
            rate_window,
            sent_periods: VecDeque::new(),
            sent_bytes: 0,
            retransmitted_bytes: 0,
            largest_packet: 0,
            arrivals: VecDeque::new(),
            newest_at_close: None,
            reports: VecDeque::new(),
            last_report_at: None,
            sent_log: VecDeque::new(),
            period_offset: None,
            offsets: VecDeque::new(),
            pending: VecDeque::new(),
            rtvl: Vec::new(),
            frames: 0,
            lost_frames: 0,
        }
    }

    pub fn on_packet_sent(&mut self, pkt: &SentPacket) {
        self.sent_bytes += pkt.size as u64;
        self.largest_packet = self.largest_packet.max(pkt.size);
        self.sent_log.push_back((pkt.seq, pkt.send_time, pkt.size));
        if pkt.kind == PacketKind::Retransmission {
            self.retransmitted_bytes += pkt.size as u64;
        }
    }

    /// Whole periods of `interval` in the rate window (at least one).
    fn periods(&self, interval: Duration) -> usize {
        (self.rate_window.0.div_ceil(interval.0.max(1))).max(1) as usize
    }

    /// The rate window as whole periods of `interval`: what λ̄ and μ̄ are rates over.
    pub fn window(&self, interval: Duration) -> Duration {
        Duration(interval.0 * self.periods(interval) as u64)
    }

    /// The largest packet sent so far (bytes).
    pub fn largest_packet(&self) -> u32 {
        self.largest_packet
    }

    pub fn on_feedback(&mut self, report: &FeedbackReport) {
        for p in report.received() {
            let at = p.receive_time.expect("received() has a receive time");
            self.arrivals.push_back((at, p.sent.size));
            self.note_offset(at, p.sent.send_time);
        }
    }

    /// A rate report: μ over its window, and the newest packet it counted, whose send time gives
    /// one more sample of the receiver's clock against the sender's.
    pub fn on_rate_report(&mut self, now: Time, report: &RateReport) {
        if report.window_end <= report.window_start {
            return; // an empty window says nothing about a rate
        }
        self.last_report_at = Some(now);
        self.reports
            .push_back((report.window_start, report.window_end, report.bytes));
        if let Some((seq, arrival)) = report.last {
            let i = self.sent_log.partition_point(|p| p.0 < seq);
            if let Some(&(_, sent, _)) = self.sent_log.get(i).filter(|p| p.0 == seq) {
                self.note_offset(arrival, sent);
            }
        }
    }

    fn note_offset(&mut self, arrival: Time, sent: Time) {
        let offset = arrival.0 as i64 - sent.0 as i64;
        self.period_offset = Some(self.period_offset.map_or(offset, |o| o.min(offset)));
    }

    pub fn on_frame_encoded(&mut self, frame: &FrameInfo) {
        if frame.size > 0 {
            self.pending
                .push_back((frame.frame, frame.capture_time, None));
        }
    }

    /// S_ACK = `now`: the sender's clock when the acknowledgement arrives. A late
    /// acknowledgement flagged lost (a receiver that acknowledges at display, §V-B) counts its
    /// frame as lost, with the same RTVL = S_ACK − S_0.
    pub fn on_frame_ack(&mut self, now: Time, ack: &FrameAck) {
        if let Some(i) = self.pending.iter().position(|&(f, ..)| f == ack.frame) {
            let (_, s0, _) = self.pending.remove(i).expect("found above");
            self.rtvl.push((now, (now - s0).as_millis_f64()));
            self.frames += 1;
            if ack.lost {
                self.lost_frames += 1;
            }
        }
        for (f, _, overtaken) in self.pending.iter_mut() {
            if *f > ack.frame {
                break;
            }
            overtaken.get_or_insert(now);
        }
    }

    /// Close the period ending at `now` (`interval` long) and start the next.
    pub fn close(&mut self, now: Time, interval: Duration) -> Period {
        // A frame a later one overtook `lost_frame_timeout` ago, or waiting longer than
        // `PENDING_LIMIT` (no acknowledgement comes at all): the late acknowledgement of a lost
        // frame, for a receiver that sends none itself (it acknowledges at completion). A
        // receiver that acknowledges at display sends its late acknowledgement together with
        // the later frame's, so this never fires for it while the reverse path delivers.
        while let Some(&(_, s0, overtaken)) = self.pending.front() {
            let timed_out = overtaken.is_some_and(|t| now >= t + self.lost_frame_timeout);
            if !(timed_out || now >= s0 + PENDING_LIMIT) {
                break;
            }
            self.pending.pop_front();
            self.rtvl.push((now, (now - s0).as_millis_f64()));
            self.frames += 1;
            self.lost_frames += 1;
        }
        // λ̄: bits sent in the last `periods` periods; μ̄: arrivals in the newest window of the
        // receiver's clock, 0 if nothing new was reported.
        let periods = self.periods(interval);
        let window = self.window(interval);
        let secs = window.as_secs_f64();
        let sent_bits = self.sent_bytes as f64 * 8.0;
        self.sent_periods.push_back(sent_bits);
        while self.sent_periods.len() > periods {
            self.sent_periods.pop_front();
        }
        // μ̄ and the receiver-clock window it covers: the receiver's rate reports when it sends
        // them (§V-A; a period with no new report keeps the last), else the arrivals the
        // transport-wide feedback reported in the newest window (0 if nothing new came).
        let newest = self.arrivals.iter().map(|a| a.0).max();
        let fresh = newest.filter(|&n| self.newest_at_close.is_none_or(|old| n > old));
        self.newest_at_close = newest.or(self.newest_at_close);
        if let Some(n) = newest {
            self.arrivals.retain(|a| a.0 + window > n);
        }
        // Reports that stopped coming (both directions down, or the reverse path alone) leave μ̄
        // unknown: read as nothing received, as when no feedback reports new arrivals, once the
        // newest is older than two report windows (one may just be late at a tick).
        let silent = match (self.reports.back(), self.last_report_at) {
            (Some(&(from, to, _)), Some(at)) => now > at + Duration(2 * (to - from).0),
            _ => false,
        };
        let measured = if silent {
            None
        } else if let Some(&(_, newest_end, _)) = self.reports.back() {
            self.reports.retain(|r| r.1 + window > newest_end);
            let span: u64 = self.reports.iter().map(|r| (r.1 - r.0).0).sum();
            let bytes: u64 = self.reports.iter().map(|r| r.2).sum();
            let first_start = self.reports.front().map_or(newest_end, |r| r.0);
            // Each report is the paper's μ(t) of one Δt (§V-A); their median, for a drain.
            let each = self
                .reports
                .iter()
                .map(|r| r.2 as f64 * 8.0 / (r.1 - r.0).as_secs_f64());
            let median = median(each.collect());
            Some((
                first_start,
                newest_end,
                Duration(span),
                bytes as f64 * 8.0,
                median,
            ))
        } else {
            fresh.map(|n| {
                let bits = self.arrivals.iter().map(|a| a.1 as f64 * 8.0).sum();
                (Time(n.0.saturating_sub(window.0)), n, window, bits, None)
            })
        };
        if let Some(o) = self.period_offset.take() {
            self.offsets.push_back((now, o));
        }
        while self
            .offsets
            .front()
            .is_some_and(|&(t, _)| t + BASE_DELAY_WINDOW < now)
        {
            self.offsets.pop_front();
        }
        while self
            .sent_log
            .front()
            .is_some_and(|&(_, t, _)| t + SENT_LOG_KEEP + window < now)
        {
            self.sent_log.pop_front();
        }
        let sent_bps = self.sent_periods.iter().sum::<f64>() / secs;
        let base = self.offsets.iter().map(|o| o.1).min();
        let (received_bps, sent_aligned_bps, received_median_bps) = match measured {
            Some((from, to, span, bits, median)) if span.0 > 0 => {
                let span_secs = span.as_secs_f64();
                let aligned = base.map_or(sent_bps, |base| {
                    // μ̄ counts arrivals in (from, to]; without queueing they were sent in
                    // (from − base, to − base] by the sender's clock.
                    let (start, end) = (from.0 as i64 - base, to.0 as i64 - base);
                    let after =
                        |edge: i64| self.sent_log.partition_point(|p| p.1 .0 as i64 <= edge);
                    let bits: f64 = self
                        .sent_log
                        .range(after(start)..after(end))
                        .map(|&(_, _, size)| size as f64 * 8.0)
                        .sum();
                    bits / span_secs
                });
                (bits / span_secs, aligned, median)
            }
            _ => (0.0, sent_bps, None),
        };
        let period = Period {
            sent_bps,
            received_bps,
            received_median_bps: received_median_bps.unwrap_or(received_bps),
            sent_aligned_bps,
            retransmitted: if sent_bits > 0.0 {
                self.retransmitted_bytes as f64 * 8.0 / sent_bits
            } else {
                0.0
            },
            rtvl: std::mem::take(&mut self.rtvl),
            frames: self.frames,
            lost_frames: self.lost_frames,
            oldest_pending_ms: self
                .pending
                .front()
                .map(|&(_, s0, _)| (now - s0).as_millis_f64()),
        };
        self.sent_bytes = 0;
        self.retransmitted_bytes = 0;
        self.frames = 0;
        self.lost_frames = 0;
        period
    }
}

/// Run the periods due by `now` and return the next period's end. A host that called late (more
/// than a period missed) gets one period closed at `now`, not a burst of empty ones after one
/// that holds everything sent in the gap.
pub fn catch_up(next: Time, now: Time, interval: Duration, mut tick: impl FnMut(Time)) -> Time {
    if next > now {
        return next;
    }
    if now >= next + interval {
        tick(now);
        return now + interval;
    }
    tick(next);
    next + interval
}

/// The RTVL of a period as the detector reads it: the mean of its samples, or, when no
/// acknowledgement came, at least the age of the oldest frame still waiting (otherwise the
/// detector would go blind exactly when the queue is deepest; judgment call A11).
pub fn period_rtvl(p: &Period, previous: Option<f64>) -> Option<f64> {
    p.mean_rtvl()
        .or_else(|| match (previous, p.oldest_pending_ms) {
            (Some(prev), Some(age)) => Some(prev.max(age)),
            (prev, age) => prev.or(age),
        })
}

/// The encoder target for a desired send rate, and the ratio ρ = λ̄ / v it learns (§V-C).
///
/// ρ is an exponential average with a 2 s time constant (ours; the paper says only "the λ(t)/v(t)
/// ratio of previous iterations"). One period's λ̄ holds three frames and swings by ±20 %; a
/// fast average would pass that noise to the encoder's target, and an encoder that follows
/// decreases faster than increases (`lagged`: 0.2 s down, 0.5 s up here) then undershoots on
/// average.
#[derive(Debug, Clone)]
pub struct SendRatio {
    rho: f64,
    gain: f64,
    last_target: Option<f64>,
    /// The targets of the newest periods, as many as span `SETTLE`.
    recent_targets: VecDeque<f64>,
    settle_periods: usize,
}

impl SendRatio {
    const TIME_CONSTANT: f64 = 2.0;
    /// How far the target may move within `settle` and still count as held.
    const HELD: f64 = 0.05;

    /// For a control period of `interval`, learning only once the target has held for `settle`
    /// (at most one period: always).
    pub fn new(interval: Duration, settle: Duration) -> SendRatio {
        SendRatio {
            rho: 1.0,
            gain: (interval.as_secs_f64() / Self::TIME_CONSTANT).min(1.0),
            last_target: None,
            recent_targets: VecDeque::new(),
            settle_periods: (settle.0.div_ceil(interval.0.max(1))).max(1) as usize,
        }
    }

    /// Learn from a period in which the encoder was asked for the last target and `sent_bps`
    /// went out. Only once the target has held for `settle` (c3g: `ENCODER_SETTLE`): an encoder
    /// follows a new target with a lag (`lagged`: 0.5 s up), and reading that lag as the ratio
    /// would set every later target too high: after each drain λ̄ / v is low while the encoder
    /// climbs back, so drains every second or so pulled ρ to 0.8 and the target to 1.25 times
    /// λ_target once the encoder caught up (ours; the paper says only that v "does not
    /// necessarily" give λ "exactly and even less instantly").
    pub fn learn(&mut self, sent_bps: f64) {
        let Some(v) = self.last_target else { return };
        self.remember(v);
        let (lo, hi) = self
            .recent_targets
            .iter()
            .fold((f64::MAX, f64::MIN), |(lo, hi), &x| (lo.min(x), hi.max(x)));
        let held =
            self.recent_targets.len() == self.settle_periods && hi <= lo * (1.0 + Self::HELD);
        if held && v > 0.0 && sent_bps > 0.0 {
            self.rho = (self.rho + self.gain * (sent_bps / v - self.rho)).clamp(0.5, 2.0);
        }
    }

    /// A period not to learn from (a drain, whose λ̄ is the queue's, not the encoder's); its
    /// target still counts as one the encoder was asked for.
    pub fn skip(&mut self) {
        if let Some(v) = self.last_target {
            self.remember(v);
        }
    }

    fn remember(&mut self, v: f64) {
        self.recent_targets.push_back(v);
        while self.recent_targets.len() > self.settle_periods {
            self.recent_targets.pop_front();
        }
    }

    /// The encoder target for a desired send rate `lambda` (bit/s).
    pub fn target(&mut self, lambda: f64) -> f64 {
        let v = lambda / self.rho;
        self.last_target = Some(v);
        v
    }

    pub fn rho(&self) -> f64 {
        self.rho
    }
}

/// ε, the noise filter of Eq. 1's first condition (§V-A): "periodically updated to hold the
/// maximum value of λ(t) − μ(t) reported without signs of an increasing RTVL". It holds the
/// largest such difference of the last `memory` (a span of time: while RTVL keeps rising nothing
/// is learned, and ε falls back to its floor rather than keep a value from long ago).
#[derive(Debug, Clone)]
pub struct Epsilon {
    calm: VecDeque<(Time, f64)>,
    memory: Duration,
    /// The value last returned (bit/s), for the logs.
    pub current: f64,
}

impl Epsilon {
    pub fn new(memory: Duration) -> Epsilon {
        Epsilon {
            calm: VecDeque::new(),
            memory,
            current: 0.0,
        }
    }

    /// A calm period's λ̄ − μ̄ (bit/s).
    pub fn learn(&mut self, now: Time, diff: f64) {
        self.calm.push_back((now, diff));
    }

    /// ε at `now`: the largest difference of the memory, at least `floor` (bit/s); older ones
    /// are forgotten.
    pub fn value(&mut self, now: Time, floor: f64) -> f64 {
        while self
            .calm
            .front()
            .is_some_and(|&(t, _)| t + self.memory <= now)
        {
            self.calm.pop_front();
        }
        self.current = self.calm.iter().map(|c| c.1).fold(floor, f64::max);
        self.current
    }
}

/// The median of `values` (`None` when empty).
fn median(mut values: Vec<f64>) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    Some(if values.len() % 2 == 1 {
        values[mid]
    } else {
        (values[mid - 1] + values[mid]) / 2.0
    })
}

/// ε's floor (bit/s): `share` of λ̄, and at least [`EDGE_PACKETS`] of the largest packet per
/// rate `window`.
pub fn epsilon_floor(share: f64, sent_bps: f64, largest_packet: u32, window: Duration) -> f64 {
    let edges = EDGE_PACKETS * largest_packet as f64 * 8.0 / window.as_secs_f64();
    (share * sent_bps).max(edges)
}

/// Whether RTVL samples show a sign of increase: their least-squares line rises.
pub fn rose(samples: &[(Time, f64)]) -> bool {
    fit(samples).is_some_and(|(_, _, _, slope)| slope > 0.0)
}

/// The least-squares line through (time, value) samples: the first sample's time, the mean time
/// after it (s), the mean value and the slope (per s). `None` under 2 samples or when they share
/// one time.
fn fit(samples: &[(Time, f64)]) -> Option<(Time, f64, f64, f64)> {
    if samples.len() < 2 {
        return None;
    }
    let t0 = samples[0].0;
    let x = |t: Time| (t - t0).as_secs_f64();
    let n = samples.len() as f64;
    let mx = samples.iter().map(|s| x(s.0)).sum::<f64>() / n;
    let my = samples.iter().map(|s| s.1).sum::<f64>() / n;
    let sxx: f64 = samples.iter().map(|s| (x(s.0) - mx).powi(2)).sum();
    if sxx <= 0.0 {
        return None;
    }
    let sxy: f64 = samples.iter().map(|s| (x(s.0) - mx) * (s.1 - my)).sum();
    Some((t0, mx, my, sxy / sxx))
}

/// Linear least-squares extrapolation of (time, value) samples to `at` (`None` under 2 samples
/// or when they share one time).
pub fn extrapolate(samples: &[(Time, f64)], at: Time) -> Option<f64> {
    fit(samples).map(|(t0, mx, my, slope)| my + slope * ((at - t0).as_secs_f64() - mx))
}

/// The candidate a finished exploration period leads to (§IV-B).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Choice {
    Up,
    Same,
    Down,
}

/// The decision tree of §IV-B: `fresh` is R(λ̄) of the period just rated, `same` and `up` the
/// stored ratings of λ₌ and λ₊ (`None`: not in the dictionary). Larger R is worse; ties take the
/// "otherwise" branch.
pub fn decide(fresh: f64, same: Option<f64>, up: Option<f64>) -> Choice {
    match (same, up) {
        (None, None) => Choice::Up, // A.a
        (None, Some(u)) => {
            if u > fresh {
                Choice::Up
            } else {
                Choice::Same
            }
        } // A.b
        (Some(s), None) => {
            if s > fresh {
                Choice::Up
            } else {
                Choice::Same
            }
        } // B.a
        (Some(_), Some(u)) if u > fresh => Choice::Up, // B.b.1
        (Some(s), Some(_)) => {
            if s > fresh {
                Choice::Same
            } else {
                Choice::Down
            }
        } // B.b.2
    }
}

/// What an exploration period gathers for its rating.
#[derive(Debug, Clone, Default)]
struct PeriodTotals {
    rtvl: Vec<f64>,
    queued_kbit: f64,
    sent_bps: f64,
    retransmitted: f64,
    periods: u32,
    frames: u32,
    lost_frames: u32,
}

impl PeriodTotals {
    fn add(&mut self, p: &Period, queued_kbit: f64) {
        self.rtvl.extend(p.rtvl.iter().map(|s| s.1));
        self.queued_kbit += queued_kbit;
        self.sent_bps += p.sent_bps;
        self.retransmitted += p.retransmitted;
        self.periods += 1;
        self.frames += p.frames;
        self.lost_frames += p.lost_frames;
    }

    fn mean_sent_bps(&self) -> f64 {
        self.sent_bps / self.periods.max(1) as f64
    }

    /// Eq. 3 with the terms of §V-B (units in the module header).
    fn rating(&self, w: &[f64; 6]) -> Option<f64> {
        let lambda_kbps = self.mean_sent_bps() / 1e3;
        if self.rtvl.is_empty() || lambda_kbps <= 0.0 {
            return None;
        }
        let n = self.rtvl.len() as f64;
        let mean = self.rtvl.iter().sum::<f64>() / n;
        let sd = (self.rtvl.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n).sqrt();
        let max = self.rtvl.iter().copied().fold(f64::MIN, f64::max);
        let r = 100.0 * self.retransmitted / self.periods.max(1) as f64;
        let l = 100.0 * self.lost_frames as f64 / self.frames.max(1) as f64;
        Some(
            (w[0] * mean + w[1] * sd + w[2] * max + w[3] * self.queued_kbit + w[4] * r + w[5] * l)
                / lambda_kbps,
        )
    }
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

/// A frame not acknowledged after this long counts as lost even when no later frame was
/// acknowledged (an outage), so the meter never holds more than this of frames.
const PENDING_LIMIT: Duration = Duration(10_000_000_000);

/// The longest drain (ours): T_drain = qdData/(μ̄ − v_min) grows without bound as μ̄ nears
/// v_min; an outage would hold the floor long after the link came back.
const MAX_DRAIN: Duration = Duration(2_000_000_000);

/// Window of the base one-way delay that aligns λ̄'s window with μ̄'s (ours, as RTVL_min's).
const BASE_DELAY_WINDOW: Duration = Duration(10_000_000_000);

/// How long sent packets are remembered beyond the rate window: enough for μ̄'s window moved
/// back to the sender's clock, behind a queue and a reverse path of a few seconds.
const SENT_LOG_KEEP: Duration = Duration(5_000_000_000);

/// How long the encoder's target must hold before λ̄ / v says anything about the ratio ρ (ours):
/// longer than an encoder takes to follow a new target (`lagged`'s 90 % settling: 0.5 s up in
/// the C³G testbed, 2 s by default, where ρ then learns only on long holds) plus the rate window.
const ENCODER_SETTLE: Duration = Duration(1_000_000_000);

/// Packets a rate window's λ̄ − μ̄ is uncertain by, one at each edge (ε's absolute floor): λ̄'s
/// window is moved back by the base one-way delay, so behind a standing queue μ̄'s window holds
/// what was sent a queueing delay earlier, and the two can differ by a packet (at low rates, a
/// whole frame) at either edge.
const EDGE_PACKETS: f64 = 2.0;

/// Window of RTVL_min for the queue estimate at a drain (ours; BBR's RTprop window is 10 s).
const RTVL_MIN_WINDOW: Duration = Duration(10_000_000_000);

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

    fn key(&self, bps: f64) -> i64 {
        (bps / self.cfg.step.bps()).round() as i64
    }

    fn set_lambda(&mut self, lambda: f64) {
        self.lambda_target = lambda.clamp(self.min_rate, self.max_rate);
        self.target = Rate(self.ratio.target(self.lambda_target));
    }

    fn start_period(&mut self) {
        self.periods_left = self.cfg.g_max - self.gain + 1;
        self.totals = PeriodTotals::default();
    }

    /// The exploration period so far: its mean λ̄ and its rating (`None` without an RTVL sample).
    fn rate_period(&self) -> Option<(f64, f64)> {
        let lambda = self.totals.mean_sent_bps();
        let rating = self.totals.rating(&self.cfg.weights)?;
        Some((lambda, rating))
    }

    /// End of an exploration period: the decision tree and the gain.
    fn finish_period(&mut self) {
        let Some((lambda, fresh)) = self.rate_period() else {
            // Nothing was acknowledged: no rating, keep the target and look again.
            self.start_period();
            return;
        };
        let step = self.gain as f64 * self.cfg.step.bps();
        let same = self.states.get(&self.key(lambda)).copied();
        let up = self.states.get(&self.key(lambda + step)).copied();
        self.lookups += 2;
        self.hits += same.is_some() as u64 + up.is_some() as u64;
        let choice = decide(fresh, same, up);
        self.states.insert(self.key(lambda), fresh);
        let (next, gain) = match choice {
            Choice::Up => (lambda + step, self.gain + 1),
            Choice::Same => (lambda, self.gain),
            Choice::Down => (lambda - step, self.gain.saturating_sub(1)),
        };
        self.gain = gain.clamp(self.cfg.g_min, self.cfg.g_max);
        self.last_choice = Some(choice);
        self.set_lambda(next);
        self.start_period();
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

    /// RTVL(t_last): the period's newest sample, else the last period's RTVL.
    fn last_rtvl(&self, p: &Period) -> Option<f64> {
        p.rtvl.last().map(|s| s.1).or(self.previous_rtvl)
    }

    fn drain_needed(&self, p: &Period, next: Time) -> bool {
        let th = self.cfg.rtvl_threshold.as_millis_f64();
        let by_trend = extrapolate(&p.rtvl, next).is_some_and(|r| r > th);
        let by_queue = match self.last_rtvl(p) {
            Some(last) if p.received_bps > 0.0 => {
                last + self.queued_bits / p.received_bps * 1e3 > th
            }
            _ => false,
        };
        by_trend || by_queue
    }

    /// The bits queued as the paper's model reads them from RTVL (§III-B:
    /// RTVL = RTVL_min + qdData / c_btl), with RTVL_min the smallest sample of the last 10 s.
    fn queued_by_rtvl(&self, p: &Period) -> f64 {
        let floor = self.rtvl_floor.iter().map(|s| s.1).reduce(f64::min);
        match (floor, self.last_rtvl(p)) {
            (Some(f), Some(l)) => ((l - f).max(0.0) / 1e3) * p.received_bps,
            _ => 0.0,
        }
    }

    fn drain(&mut self, p: &Period, now: Time) {
        let dt = self.cfg.interval.as_secs_f64();
        // μ̄(t_drain), the capacity while the queue is full: the median of the window's reports,
        // each the paper's μ(t) of one Δt (ours). The window's mean would still hold arrivals
        // from before a capacity drop (8.1 Mbit/s 150 ms after a drop to 7), and λ_OOP at that
        // rate overflows the queue again right after the drain; the newest report alone reads a
        // burst of lost packets as the capacity (0.35 Mbit/s on a 4 Mbit/s link).
        let mu = p.received_median_bps;
        // qdData sums only the periods above ε, so a queue that grew slowly before the episode
        // is missed and would stand after the drain; the RTVL model's estimate covers it (ours).
        self.queued_bits = self.queued_bits.max(self.queued_by_rtvl(p));
        let drain_rate = mu - self.queued_bits / dt; // Eq. 2
        let hold = drain_rate.max(self.min_rate);
        let seconds = if mu - hold > 0.0 {
            self.queued_bits / (mu - hold)
        } else {
            // μ̄ at or below v_min: hold the floor until μ̄ could have emptied the queue.
            self.queued_bits / mu.max(1.0)
        }
        .min(MAX_DRAIN.as_secs_f64());
        // The period that forced the drain is rated and stored, so its rate carries the bad R.
        if let Some((lambda, rating)) = self.rate_period() {
            let key = self.key(lambda);
            self.states.insert(key, rating);
        }
        self.drains += 1;
        self.phase = Phase::Drain {
            until: now + Duration::from_secs_f64(seconds.max(dt)),
            oop: mu.max(self.min_rate),
        };
        self.set_lambda(hold);
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

pub fn info() -> ControllerInfo {
    ControllerInfo {
        name: "c3g".into(),
        summary: "Cloud-gaming control from round-trip video latency: drains on predicted RTVL \
                  over 100 ms, explores with a history-rated variable gain (C3G)."
            .into(),
        params: vec![
            ParamDoc::new("interval", "50ms", "control period Δt"),
            ParamDoc::new("rtvl_threshold", "100ms", "playability threshold RTVL_th"),
            ParamDoc::new("g_max", "50", "largest exploration gain"),
            ParamDoc::new("g_min", "1", "smallest exploration gain"),
            ParamDoc::new("step", "10kbps", "exploration step per unit of gain"),
            ParamDoc::new(
                "weights",
                "[1, 10, 1, 2, 10, 10]",
                "rating weights a, b, c, d (RTVL mean, sd, max, queued kbit), e, f (retransmitted %, lossy frames %)",
            ),
            ParamDoc::new("min_rate", "the flow's min_bitrate", "lowest target v_min"),
            ParamDoc::new(
                "start_rate",
                "the flow's start_bitrate, else 300kbps",
                "first target",
            ),
            ParamDoc::new("max_rate", "the flow's max_bitrate, else 50Mbps", "highest target"),
            ParamDoc::new(
                "epsilon_periods",
                "50",
                "periods over which ε keeps the largest λ−μ without RTVL rise",
            ),
            ParamDoc::new("epsilon_floor", "0.02", "ε's floor as a fraction of λ"),
            ParamDoc::new(
                "lost_frame_timeout",
                "100ms",
                "an unacknowledged frame this long after a later one counts as lost (receivers without late acks)",
            ),
            ParamDoc::new(
                "startup",
                "on without a start rate",
                "after the warm-up, double the target every period until RTVL would pass the threshold, then drain",
            ),
            ParamDoc::new(
                "gain_reset",
                "drain",
                "what resets the exploration gain: drain or congestion (the paper's wording)",
            ),
            ParamDoc::new(
                "rate_window",
                "200ms",
                "λ and μ are rates over this window (whole periods)",
            ),
            ParamDoc::new("warmup", "2s", "observe only for this long from the start"),
        ],
        feedback: feedback_every(default_interval()),
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
    use crate::media::range::MediaRange;

    fn ms(v: u64) -> Time {
        Time::from_millis(v)
    }

    fn ctx() -> ControllerContext {
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
        }
    }

    /// C³G with Δt = 100 ms (the extraction's worked examples use it).
    fn c3g() -> C3g {
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

    #[test]
    fn the_decision_tree_has_the_papers_eight_leaves() {
        // A.a: nothing known → λ₊. A.b: λ₊ known; it rated worse than R(λ̄) now → λ₊, else λ₌.
        assert_eq!(decide(1.0, None, None), Choice::Up);
        assert_eq!(decide(1.0, None, Some(2.0)), Choice::Up);
        assert_eq!(decide(1.0, None, Some(0.5)), Choice::Same);
        // B.a: λ₌ known, λ₊ not: λ₌ was worse before → λ₊, else λ₌.
        assert_eq!(decide(1.0, Some(2.0), None), Choice::Up);
        assert_eq!(decide(1.0, Some(0.5), None), Choice::Same);
        // B.b.1 and B.b.2: the only λ₋ leaf is both stored states rating better than now.
        assert_eq!(decide(1.0, Some(0.5), Some(2.0)), Choice::Up);
        assert_eq!(decide(1.0, Some(2.0), Some(0.5)), Choice::Same);
        assert_eq!(decide(1.0, Some(0.5), Some(0.5)), Choice::Down);
        assert_eq!(
            decide(1.0, Some(1.0), Some(1.0)),
            Choice::Down,
            "ties take 'otherwise'"
        );
    }

    #[test]
    fn the_rating_is_eq_3_in_ms_kbit_and_kbit_per_second() {
        // RTVL samples with mean 40 ms, (population) sd 5 ms and max 45 ms at λ̄ = 7 Mbit/s:
        // (1·40 + 10·5 + 1·45 + 2·0) / 7000 kbit/s.
        let mut t = PeriodTotals {
            rtvl: vec![35.0, 45.0, 35.0, 45.0],
            sent_bps: 7e6,
            periods: 1,
            ..PeriodTotals::default()
        };
        let w = default_weights();
        let r = t.rating(&w).unwrap();
        assert!((r - 135.0 / 7000.0).abs() < 1e-12, "{r}");
        // 100 kbit queued and one lost frame in ten add d·qd + f·l̄ (l̄ in %).
        t.queued_kbit = 100.0;
        t.lost_frames = 1;
        t.frames = 10;
        let worse = t.rating(&w).unwrap();
        assert!((worse - (135.0 + 2.0 * 100.0 + 10.0 * 10.0) / 7000.0).abs() < 1e-12);
        assert_eq!(
            PeriodTotals::default().rating(&w),
            None,
            "no sample, no rating"
        );
    }

    #[test]
    fn rtvl_1_extrapolates_the_periods_samples() {
        // (0, 60), (33, 70), (67, 80) ms → about 120 ms at 200 ms.
        let s = [(ms(0), 60.0), (ms(33), 70.0), (ms(67), 80.0)];
        let r = extrapolate(&s, ms(200)).unwrap();
        assert!((r - 119.7).abs() < 0.5, "{r}");
        assert_eq!(extrapolate(&s[..1], ms(200)), None);
    }

    #[test]
    fn exploration_periods_shrink_and_steps_grow_with_the_gain() {
        let mut c = c3g();
        for (g, periods, step) in [(1, 50, 10e3), (50, 1, 500e3)] {
            c.gain = g;
            c.start_period();
            assert_eq!(
                c.periods_left, periods,
                "T_exp = (g_max − g + 1)·Δt at g = {g}"
            );
            assert_eq!(c.gain as f64 * c.cfg.step.bps(), step);
        }
    }

    #[test]
    fn ten_increases_from_the_smallest_gain_add_550_kbits_over_455_periods() {
        // With nothing stored every choice is λ₊ (case A.a): g goes 1, 2, ..., 10, the steps
        // add 10 + 20 + ... + 100 = 550 kbit/s, the periods last 50 + 49 + ... + 41 = 455 Δt.
        let mut c = c3g();
        let start = c.lambda_target;
        let mut periods = 0;
        for g in 1..=10 {
            assert_eq!(c.gain, g);
            periods += c.periods_left;
            c.totals = PeriodTotals {
                rtvl: vec![30.0, 40.0],
                sent_bps: c.lambda_target,
                periods: 1,
                ..PeriodTotals::default()
            };
            c.finish_period();
            assert_eq!(c.last_choice, Some(Choice::Up));
        }
        assert_eq!(periods, 455);
        assert!((c.lambda_target - start - 550e3).abs() < 1e-6);
    }

    #[test]
    fn rtvl_2_adds_the_queue_drained_at_the_received_rate() {
        // RTVL~2 = 80 ms + 210 kbit / 7 Mbit/s = 110 ms > 100 ms: drain; with 140 kbit, 100 ms: not.
        let mut c = c3g();
        let p = Period {
            received_bps: 7e6,
            rtvl: vec![(ms(1000), 80.0)],
            ..Period::default()
        };
        c.queued_bits = 210e3;
        assert!(c.drain_needed(&p, ms(1100)));
        c.queued_bits = 140e3;
        assert!(!c.drain_needed(&p, ms(1100)));
    }

    /// A 1250-byte media packet, number `seq`, sent at `at`.
    fn packet(seq: u64, at: Time) -> SentPacket {
        SentPacket {
            seq,
            size: 1250,
            send_time: at,
            frame: None,
            index_in_frame: 0,
            packets_in_frame: 1,
            kind: PacketKind::Media,
            in_flight: 0,
        }
    }

    /// A meter fed 1250-byte packets sent at `sends` (sender clock), which arrive at
    /// `arrival(i)` (receiver clock), and the receiver's rate reports every 50 ms of its clock
    /// for the second from `from`; returns the period closed at 1 s.
    fn meter_with_reports(sends: &[Time], arrival: impl Fn(u64) -> Time, from: Time) -> Period {
        let mut m = Meter::new(Duration::from_millis(100), Duration::from_millis(200));
        let mut arrived = Vec::new();
        for (i, &t) in sends.iter().enumerate() {
            m.on_packet_sent(&packet(i as u64, t));
            arrived.push((i as u64, arrival(i as u64)));
        }
        let mut start = from;
        while let Some(end) = Some(start + Duration::from_millis(50))
            .filter(|&e| e <= from + Duration::from_millis(1000))
        {
            let window: Vec<_> = arrived
                .iter()
                .filter(|a| a.1 > start && a.1 <= end)
                .collect();
            m.on_rate_report(
                ms(1000),
                &RateReport {
                    window_start: start,
                    window_end: end,
                    bytes: 1250 * window.len() as u64,
                    packets: window.len() as u32,
                    last: window.last().map(|a| (a.0, a.1)),
                },
            );
            start = end;
        }
        m.close(ms(1000), Duration::from_millis(50))
    }

    #[test]
    fn reports_that_stop_coming_read_as_nothing_received() {
        let mut m = Meter::new(Duration::from_millis(100), Duration::from_millis(200));
        for i in 0..100 {
            m.on_packet_sent(&packet(i, ms(10 * i)));
        }
        for k in 0..20u64 {
            let report = RateReport {
                window_start: ms(50 * k),
                window_end: ms(50 * (k + 1)),
                bytes: 6250,
                packets: 5,
                last: Some((5 * k + 4, ms(50 * k + 45))),
            };
            m.on_rate_report(ms(50 * (k + 1) + 5), &report);
        }
        let dt = Duration::from_millis(50);
        let p = m.close(ms(1050), dt);
        assert!((p.received_bps - 1e6).abs() < 1e3, "μ̄ = {}", p.received_bps);
        // One report window late: maybe a report that missed this tick; μ̄ holds.
        let p = m.close(ms(1100), dt);
        assert!((p.received_bps - 1e6).abs() < 1e3, "μ̄ = {}", p.received_bps);
        // Two windows and more without a report: the receiver (or the way back) is gone.
        let p = m.close(ms(1150), dt);
        assert_eq!(
            p.received_bps, 0.0,
            "no report for 145 ms (report windows of 50 ms): μ̄ must read 0, not the last value"
        );
    }

    #[test]
    fn mu_comes_from_the_rate_reports_and_lambda_from_their_window_on_the_senders_clock() {
        // 1 Mbit/s (a packet every 10 ms) to 800 ms, then 2 Mbit/s; 100 ms one way, no queue, the
        // receiver's clock 1000 s ahead. μ̄'s window, the last 200 ms of reports, holds what was
        // sent in 700-900 ms: 1.5 Mbit/s, as λ̄ over that window (the sender's own last 200 ms
        // sent 2 Mbit/s).
        let sends: Vec<Time> = (0..80)
            .map(|i| ms(10 * i))
            .chain((0..40).map(|i| ms(800 + 5 * i)))
            .collect();
        let offset = Duration::from_secs_f64(1000.0);
        let at = sends.clone();
        let p = meter_with_reports(
            &sends,
            |i| at[i as usize] + Duration::from_millis(100) + offset,
            ms(0) + offset,
        );
        assert!(
            (p.received_bps - 1.5e6).abs() < 1e3,
            "μ̄ = {}",
            p.received_bps
        );
        assert!(
            (p.sent_aligned_bps - p.received_bps).abs() < 1e3,
            "no queue, so λ̄ over μ̄'s window equals μ̄: {} against {}",
            p.sent_aligned_bps,
            p.received_bps
        );
        // 1 Mbit/s into 0.8 Mbit/s (a packet every 12.5 ms, the first after 5 ms): the queue
        // gains 0.2 Mbit/s, which is λ̄ − μ̄ over the same window.
        let sends: Vec<Time> = (0..100).map(|i| ms(10 * i)).collect();
        let p = meter_with_reports(&sends, |i| ms(5) + Duration::from_micros(12_500 * i), ms(0));
        assert!(
            (p.received_bps - 0.8e6).abs() < 0.05e6,
            "μ̄ = {}",
            p.received_bps
        );
        let gain = p.sent_aligned_bps - p.received_bps;
        assert!(
            (gain - 0.2e6).abs() < 0.05e6,
            "λ̄ − μ̄ is the queue's growth, 0.2 Mbit/s: {gain}"
        );
    }

    /// Frame `n` of a 30 frame/s stream of 1000-byte frames.
    fn frame_at_30fps(n: u64) -> FrameInfo {
        FrameInfo {
            frame: n,
            capture_time: ms(33 * n),
            size: 1000,
            target: Rate::from_mbps(1.0),
            packets: 1,
            keyframe: false,
        }
    }

    /// The receiver's acknowledgement of frame `n` (`lost`: a late one of a frame given up on).
    fn frame_ack(n: u64, lost: bool) -> FrameAck {
        FrameAck {
            frame: n,
            first_receive_time: ms(0),
            last_receive_time: ms(0),
            complete_time: ms(0),
            size: 1000,
            lost,
        }
    }

    #[test]
    fn a_lost_frame_is_declared_while_later_acknowledgements_keep_coming() {
        // 30 frame/s, every frame acknowledged 40 ms after capture except frame 3.
        let mut m = Meter::new(Duration::from_millis(100), Duration::from_millis(100));
        let mut lost_at = None;
        for n in 0..60u64 {
            m.on_frame_encoded(&frame_at_30fps(n));
            if n != 3 {
                m.on_frame_ack(ms(33 * n + 40), &frame_ack(n, false));
            }
            if n % 3 == 2 {
                let p = m.close(ms(33 * n + 41), Duration::from_millis(100));
                if p.lost_frames > 0 && lost_at.is_none() {
                    lost_at = Some(33 * n + 41);
                }
            }
        }
        // Frame 4's acknowledgement at 172 ms overtakes it: lost at the first close after 272 ms
        // (the closes are at 41 ms + 99 ms·k).
        assert_eq!(lost_at, Some(305));
    }

    #[test]
    fn a_drain_never_holds_the_floor_for_more_than_two_seconds() {
        // μ̄ just above v_min (3 Mbit/s) with 1 Mbit queued: qd/(μ̄ − v_min) would be 100 s.
        let mut c = c3g();
        c.queued_bits = 1e6;
        let p = Period {
            received_bps: 3.01e6,
            received_median_bps: 3.01e6,
            ..Period::default()
        };
        c.drain(&p, ms(1000));
        assert!(matches!(c.phase, Phase::Drain { until, .. } if until == ms(3000)));
    }

    #[test]
    fn the_ratio_learns_only_from_a_target_the_encoder_had_time_to_follow() {
        // Δt = 50 ms, settle 1 s: 20 periods at one target before λ̄ / v counts.
        let mut r = SendRatio::new(Duration::from_millis(50), ENCODER_SETTLE);
        r.target(10e6);
        for _ in 0..19 {
            r.learn(5e6); // an encoder still climbing to the target
        }
        assert_eq!(r.rho(), 1.0, "the encoder's lag was read as the ratio");
        r.learn(9e6);
        assert!(r.rho() < 1.0, "a held target teaches ρ");
        // A drain's target breaks the hold, even though its periods teach nothing themselves.
        let rho = r.rho();
        r.target(3e6);
        r.skip();
        r.target(10e6);
        for _ in 0..19 {
            r.learn(5e6);
        }
        assert_eq!(r.rho(), rho, "learned within a second of the drain");
        // c3g-bbr's setting (no settle) learns from every period.
        let mut r = SendRatio::new(Duration::from_millis(100), Duration::ZERO);
        r.target(10e6);
        r.learn(5e6);
        assert!(r.rho() < 1.0);
    }

    #[test]
    fn epsilon_holds_the_largest_calm_difference_of_its_memory_then_its_floor() {
        let mut e = Epsilon::new(Duration::from_millis(2500));
        e.learn(ms(1000), 400e3);
        e.learn(ms(1050), 100e3);
        assert_eq!(e.value(ms(3000), 50e3), 400e3);
        // No calm period since: at 3.5 s the difference learned at 1 s is 2.5 s old.
        assert_eq!(e.value(ms(3500), 50e3), 100e3);
        assert_eq!(
            e.value(ms(3550), 50e3),
            50e3,
            "nothing calm left: the floor"
        );
    }

    #[test]
    fn epsilons_floor_is_two_packets_per_window_at_low_rates_and_2_percent_above() {
        let w = Duration::from_millis(200);
        // 30 kbit/s of 1200-byte packets: 2 × 9600 bit / 0.2 s = 96 kbit/s, not 0.6.
        assert!((epsilon_floor(0.02, 30e3, 1200, w) - 96e3).abs() < 1e-6);
        // 7 Mbit/s: 2 % (140 kbit/s) is the larger.
        assert!((epsilon_floor(0.02, 7e6, 1200, w) - 140e3).abs() < 1e-6);
    }

    #[test]
    fn rtvl_that_rose_over_the_window_is_a_sign_of_congestion() {
        let up = [
            (ms(0), 40.0),
            (ms(50), 38.0),
            (ms(100), 45.0),
            (ms(150), 47.0),
        ];
        let flat = [
            (ms(0), 40.0),
            (ms(50), 44.0),
            (ms(100), 38.0),
            (ms(150), 40.0),
        ];
        assert!(rose(&up));
        assert!(!rose(&flat));
        assert!(!rose(&[(ms(0), 40.0)]) && !rose(&[]));
    }

    #[test]
    fn lambda_oop_is_the_median_report_not_the_windows_mean() {
        // Reports of 10.5, 7, 7 and 7 Mbit/s: the capacity fell to 7 a report ago. The window's
        // mean (7.9) would overflow the queue again after the drain; so would one report that a
        // loss burst emptied read as the capacity.
        assert_eq!(median(vec![10.5e6, 7e6, 7e6, 7e6]), Some(7e6));
        assert_eq!(median(vec![4e6, 0.35e6, 4e6]), Some(4e6));
        assert_eq!(median(vec![]), None);
        let mut c = c3g();
        c.queued_bits = 100e3;
        let p = Period {
            received_bps: 7.9e6,
            received_median_bps: 7e6,
            ..Period::default()
        };
        c.drain(&p, ms(1000));
        assert!(matches!(c.phase, Phase::Drain { oop, .. } if oop == 7e6));
    }

    #[test]
    fn a_late_host_gets_one_period_closed_now() {
        let dt = Duration::from_millis(50);
        let mut ticks = Vec::new();
        assert_eq!(catch_up(ms(100), ms(90), dt, |t| ticks.push(t)), ms(100));
        assert_eq!(catch_up(ms(100), ms(120), dt, |t| ticks.push(t)), ms(150));
        assert_eq!(catch_up(ms(150), ms(900), dt, |t| ticks.push(t)), ms(950));
        assert_eq!(ticks, vec![ms(100), ms(900)]);
    }

    #[test]
    fn a_drain_empties_the_queue_in_one_period_or_holds_v_min_longer() {
        // μ̄ 7 Mbit/s with 100 kbit queued: 7 − 0.1/0.1 = 6 Mbit/s for one period, then 7.
        let mut c = c3g();
        let p = Period {
            received_bps: 7e6,
            received_median_bps: 7e6,
            ..Period::default()
        };
        c.queued_bits = 100e3;
        c.drain(&p, ms(1000));
        assert!((c.lambda_target - 6e6).abs() < 1.0);
        assert_eq!(
            c.phase,
            Phase::Drain {
                until: ms(1100),
                oop: 7e6
            }
        );
        // 700 kbit queued: Eq. 2 asks for 0, v_min (3 Mbit/s) holds for 0.7/(7 − 3) = 175 ms.
        let mut c = c3g();
        c.queued_bits = 700e3;
        c.drain(&p, ms(1000));
        assert!((c.lambda_target - 3e6).abs() < 1.0);
        assert_eq!(
            c.phase,
            Phase::Drain {
                until: ms(1175),
                oop: 7e6
            }
        );
    }

    #[test]
    fn an_unacknowledged_frame_counts_as_lost_after_the_timeout() {
        let mut m = Meter::new(Duration::from_millis(100), Duration::from_millis(100));
        for n in 0..3 {
            m.on_frame_encoded(&frame_at_30fps(n));
        }
        m.on_frame_ack(ms(40), &frame_ack(0, false));
        m.on_frame_ack(ms(110), &frame_ack(2, false)); // frame 1 never comes
        let p = m.close(ms(200), Duration::from_millis(100));
        assert_eq!(
            (p.frames, p.lost_frames),
            (2, 0),
            "not yet: 90 ms since frame 2"
        );
        let p = m.close(ms(210), Duration::from_millis(100));
        assert_eq!((p.frames, p.lost_frames), (1, 1));
        assert!(
            (p.rtvl[0].1 - (210.0 - 33.0)).abs() < 1e-9,
            "RTVL = now − S_0"
        );
    }

    #[test]
    fn a_late_acknowledgement_flagged_lost_counts_the_frame_lost_at_its_arrival() {
        let mut m = Meter::new(Duration::from_millis(100), Duration::from_millis(100));
        for n in 0..3 {
            m.on_frame_encoded(&frame_at_30fps(n));
        }
        m.on_frame_ack(ms(40), &frame_ack(0, false));
        // The display receiver sends frame 1's late acknowledgement right after frame 2's.
        m.on_frame_ack(ms(150), &frame_ack(2, false));
        m.on_frame_ack(ms(150), &frame_ack(1, true));
        let p = m.close(ms(160), Duration::from_millis(100));
        assert_eq!(
            (p.frames, p.lost_frames),
            (3, 1),
            "no wait for the fallback timeout"
        );
        assert!(
            (p.rtvl[2].1 - (150.0 - 33.0)).abs() < 1e-9,
            "RTVL = S_ACK − S_0 of the late acknowledgement"
        );
        let p = m.close(ms(400), Duration::from_millis(100));
        assert_eq!(
            (p.frames, p.lost_frames),
            (0, 0),
            "counted once: the fallback has nothing left"
        );
    }
}
