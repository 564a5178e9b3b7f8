//! Metrics: pure functions over per-frame logs and per-packet statistics ([`PacketStats`],
//! gathered from the packet log as a run goes, so a run need not hold the log).
//!
//! Every metric is defined here once and documented in `docs/metrics.md` with its formula and
//! where the definition comes from. Times in the logs are true (simulator) time, never a
//! receiver's offset clock.

use crate::endpoint::EncodedFrameInfo;
use crate::media::jitter_buffer::FrameEvent;
use crate::packet::PacketKind;
use crate::units::{Duration, Time};
use serde::Serialize;

pub mod audio;
pub mod downloads;
pub mod frame_stats;
pub mod packet_stats;
pub mod playout;
pub mod spill;
pub mod sqp_frame_delay;

pub use frame_stats::FrameStats;
pub use packet_stats::{arrival_windows, PacketStats};

/// One packet on the forward path.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PacketRecord {
    pub flow: u32,
    pub seq: u64,
    pub kind: PacketKind,
    pub size: u32,
    pub frame: Option<u64>,
    pub send: Time,
    /// Arrival at the bottleneck queue.
    pub enqueue: Time,
    /// Departure from the bottleneck (`None` if dropped or still queued at the end).
    pub depart: Option<Time>,
    /// Arrival at the receiver (`None` if lost or still in flight at the end).
    pub recv: Option<Time>,
    pub dropped: bool,
    /// The ECN codepoint the packet arrived with (as sent if never received).
    pub ecn: crate::packet::Ecn,
}

/// One encoded frame.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FrameRecord {
    pub flow: u32,
    pub frame: u64,
    pub capture: Time,
    pub size: u32,
    pub target_bps: f64,
    pub packets: u16,
    pub first_send: Option<Time>,
    pub last_send: Option<Time>,
    /// When the receiver had every packet of the frame.
    pub complete: Option<Time>,
    /// Decodable on its own (otherwise it predicts from the previous non-empty frame).
    pub keyframe: bool,
    /// The encoder model's PSNR estimate (`None` for models without a quality model).
    pub psnr_db: Option<f64>,
    /// Resolution the frame was coded at (`None` for models without one).
    pub resolution: Option<crate::video::quality::Resolution>,
    /// When the receiver showed it (`None`: never shown).
    pub display: Option<Time>,
    /// Completed thanks to a retransmission or FEC.
    pub recovered: bool,
    /// The receiver gave up on it (never complete) or could not decode it.
    pub unrecoverable: bool,
}

impl FrameRecord {
    /// A frame as the encoder produced it; sending and receiving fill in the rest. The simulator
    /// and the live runtime both record frames through these methods.
    pub fn encoded(flow: u32, f: &EncodedFrameInfo) -> FrameRecord {
        FrameRecord {
            flow,
            frame: f.frame,
            capture: f.capture,
            size: f.size,
            target_bps: f.target.bps(),
            packets: f.packets,
            first_send: None,
            last_send: None,
            complete: None,
            keyframe: f.keyframe,
            psnr_db: f.psnr_db,
            resolution: f.resolution,
            display: None,
            recovered: false,
            unrecoverable: false,
        }
    }

    /// A media packet of the frame was sent at `t`.
    pub fn on_media_sent(&mut self, t: Time) {
        self.first_send.get_or_insert(t);
        self.last_send = Some(t);
    }

    /// Apply what the receiver reported about this frame; `to_run_clock` moves the receiver's
    /// times to the run's clock.
    pub fn apply(&mut self, event: FrameEvent, to_run_clock: impl Fn(Time) -> Time) {
        match event {
            FrameEvent::Complete { at, recovered, .. } => {
                self.complete = Some(to_run_clock(at));
                self.recovered = recovered;
            }
            FrameEvent::Displayed { at, .. } => self.display = Some(to_run_clock(at)),
            // A frame the encoder skipped has no packets: the receiver, which cannot tell it
            // from a lost one, gives up on it, but nothing was lost.
            FrameEvent::Undecodable { .. } | FrameEvent::Abandoned { .. } => {
                self.unrecoverable |= self.packets > 0;
            }
        }
    }
}

/// Apply what the receiver reported about a frame to `frames` (indexed by frame number; an
/// unknown frame is ignored); `to_run_clock` moves the receiver's times to the run's clock.
pub fn apply_frame_event(
    frames: &mut [FrameRecord],
    event: FrameEvent,
    to_run_clock: impl Fn(Time) -> Time,
) {
    if let Some(r) = frames.get_mut(event.frame() as usize) {
        r.apply(event, to_run_clock);
    }
}

/// P50/P95/P99 of a sample, `None` when empty.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Default)]
pub struct Percentiles {
    pub p50: Option<f64>,
    pub p95: Option<f64>,
    pub p99: Option<f64>,
}

impl Percentiles {
    pub fn of(values: &mut [f64]) -> Percentiles {
        values.sort_by(|a, b| a.total_cmp(b));
        Self::of_sorted(values)
    }

    /// [`Percentiles::of`] values already in `total_cmp` order, or of a sorted copy of them.
    pub fn of_any(values: &[f64]) -> Percentiles {
        if values.is_sorted_by(|a, b| a.total_cmp(b).is_le()) {
            Self::of_sorted(values)
        } else {
            Self::of(&mut values.to_vec())
        }
    }

    fn of_sorted(values: &[f64]) -> Percentiles {
        Percentiles {
            p50: percentile(values, 50.0),
            p95: percentile(values, 95.0),
            p99: percentile(values, 99.0),
        }
    }
}

/// Percentile of sorted values with linear interpolation between closest ranks (NumPy's default
/// `linear` method): rank `h = (n - 1) p / 100`, value `x[⌊h⌋] + (h - ⌊h⌋)(x[⌊h⌋+1] - x[⌊h⌋])`.
pub fn percentile(sorted: &[f64], p: f64) -> Option<f64> {
    percentile_at(sorted.len(), p, |i| sorted[i])
}

/// The ranks percentile `p` of `n` sorted values interpolates between, and the weight of the
/// upper one ([`percentile`]'s rule); `None` for no values.
pub fn percentile_ranks(n: usize, p: f64) -> Option<(usize, usize, f64)> {
    if n == 0 {
        return None;
    }
    let h = (n - 1) as f64 * p / 100.0;
    let lo = h.floor() as usize;
    Some((lo, (lo + 1).min(n - 1), h - lo as f64))
}

/// [`percentile`] of `n` sorted values read through `value(i)`.
pub fn percentile_at(n: usize, p: f64, value: impl Fn(usize) -> f64) -> Option<f64> {
    let (lo, hi, weight) = percentile_ranks(n, p)?;
    let (x_lo, x_hi) = (value(lo), value(hi));
    Some(x_lo + weight * (x_hi - x_lo))
}

/// Frame delay of each frame, in frame order: capture to complete reception, each frame's own
/// completion. A frame that never completes takes the earliest completion of a later frame (the
/// viewer waits for it until then: the seeds' convention); frames after the last completed one
/// take `end`. Empty (skipped) frames have no value.
///
/// A frame repaired late (a retransmission completing it after later frames) keeps its own,
/// later completion: until 2026-11 a completed frame took the earliest completion of itself and
/// every later frame, which counted such frames as earlier than they completed (16 % off at P99
/// on the LTE-like demo with sqp).
pub fn frame_delays(frames: &[FrameRecord], end: Time) -> Vec<Option<Duration>> {
    let later = frame_stats::later_events(frames);
    frames
        .iter()
        .zip(later)
        .map(|(f, later)| frame_stats::derive(f, later, end).0)
        .collect()
}

/// Freezes: gaps between consecutive instants (frame completions in time order, or display
/// times) longer than `max(3 × mean gap, mean gap + 150 ms)` (the WebRTC freeze rule used by the
/// seeds), with the mean taken over the whole flow. Returns (count, total duration of the
/// freezing gaps). `instants` must be in time order.
pub fn freezes(instants: &[Time]) -> (usize, Duration) {
    let mut counter = frame_stats::FreezeCounter::default();
    for &t in instants {
        counter.push(t);
    }
    counter.freezes()
}

/// Jain's fairness index `(Σx)² / (n Σx²)` of a set of throughputs (1 = equal shares).
pub fn jain_index(x: &[f64]) -> Option<f64> {
    let sum: f64 = x.iter().sum();
    let sq: f64 = x.iter().map(|v| v * v).sum();
    if x.is_empty() || sq <= 0.0 {
        return None;
    }
    Some(sum * sum / (x.len() as f64 * sq))
}

/// A flow's active interval and the bytes it received in each window from time zero, for
/// fairness.
pub struct FlowWindows<'a> {
    pub start: Time,
    pub stop: Time,
    pub bytes: &'a [u64],
}

/// Mean Jain's index over consecutive windows of `window` (the flows' `bytes` bins), counting in
/// each window only the flows active for all of it (and windows with at least two such flows).
pub fn windowed_jain(flows: &[FlowWindows], window: Duration) -> Option<f64> {
    if flows.len() < 2 || window.0 == 0 {
        return None;
    }
    let nwin = flows.iter().map(|f| f.bytes.len()).max().unwrap_or(0);
    let mut sum = 0.0;
    let mut count = 0;
    for w in 0..nwin {
        let (ws, we) = (Time(w as u64 * window.0), Time((w as u64 + 1) * window.0));
        let x: Vec<f64> = flows
            .iter()
            .filter(|f| f.start <= ws && f.stop >= we)
            .map(|f| f.bytes.get(w).copied().unwrap_or(0) as f64)
            .collect();
        if x.len() >= 2 {
            if let Some(j) = jain_index(&x) {
                sum += j;
                count += 1;
            }
        }
    }
    (count > 0).then(|| sum / count as f64)
}

/// The window of the per-flow rate series (convergence, time below the minimum).
pub const RATE_WINDOW: Duration = Duration(1_000_000_000);
/// The band around the final rate a converged flow stays in.
pub const CONVERGENCE_BAND: f64 = 0.10;

/// Convergence time of a rate series (`rates[k]` over window `k`): the start of the first
/// window from which every window stays within ±[`CONVERGENCE_BAND`] of the final rate, the
/// mean of the last 10 s (or of the last quarter of the series if that is shorter). `None` for
/// a series too short to judge (under 4 windows), a final rate of 0, or a last window outside
/// the band. RFC 8867 asks for the time to converge; the band and the final window are ours.
pub fn convergence_time(rates: &[f64], window: Duration) -> Option<f64> {
    if rates.len() < 4 {
        return None;
    }
    let tail = ((10.0 / window.as_secs_f64()).round() as usize).clamp(1, rates.len() / 4);
    let last = &rates[rates.len() - tail..];
    let fin = last.iter().sum::<f64>() / tail as f64;
    if fin <= 0.0 {
        return None;
    }
    let inside = |r: &f64| (r / fin - 1.0).abs() <= CONVERGENCE_BAND;
    let first_in = rates.len() - rates.iter().rev().take_while(|r| inside(r)).count();
    (first_in < rates.len()).then(|| first_in as f64 * window.as_secs_f64())
}

/// Metrics of one flow.
#[derive(Debug, Clone, Serialize)]
pub struct FlowSummary {
    pub name: String,
    pub controller: String,
    pub start_s: f64,
    pub stop_s: f64,
    pub frame_delay_ms: Percentiles,
    pub frames_sent: usize,
    pub frames_delivered: usize,
    pub frame_rate_fps: f64,
    pub freezes: usize,
    pub freeze_time_s: f64,
    /// Keyframes among the frames sent.
    pub keyframes: usize,
    /// Frames decoded and shown ([`playout`]).
    pub frames_displayed: usize,
    /// Frames received complete but not decodable (their reference was lost).
    pub frames_undecodable: usize,
    pub display_rate_fps: f64,
    /// Freezes on display times (the rule of [`freezes`]).
    pub display_freezes: usize,
    pub display_freeze_time_s: f64,
    /// Capture → display for every captured frame, a frame never shown (skipped, lost,
    /// undecodable) taking the next shown frame's display time ([`playout::frame_latencies`]).
    pub frame_latency_ms: Percentiles,
    /// Capture → the frame's last packet leaving the sender, for every encoded frame: the wait
    /// in the sender's own queue (pacer), which the network never sees.
    pub sender_wait_ms: Percentiles,
    /// Captured frames the sender did not encode (paused by the controller, or skipped by the
    /// frame-rate gate, the pacer pushback or the frame dropper).
    pub frames_skipped: usize,
    /// The pipeline's efficiency: bits of the frames shown over the bits the encoder's target
    /// asked for while the flow captured (Σ target × frame interval over every captured frame).
    /// What the sender skipped, the network lost and the receiver could not decode all count
    /// against it (`None` without frames or with a zero target).
    pub displayed_share: Option<f64>,
    /// Mean PSNR of the frames shown (`None` without a quality model).
    pub psnr_db: Option<f64>,
    pub video_bitrate_bps: f64,
    pub throughput_bps: f64,
    /// Time from the flow's start until its throughput (1 s windows) stays within ±10 % of its
    /// final rate (the mean over the last 10 s of its life, or its last quarter if shorter);
    /// `None` if it never does ([`convergence_time`]).
    pub convergence_s: Option<f64>,
    /// Share of the flow's 1 s windows whose received bitrate is below its minimum bitrate
    /// (video flows; `None` for others).
    pub below_min_share: Option<f64>,
    pub utilization: Option<f64>,
    pub loss_rate: Option<f64>,
    pub packets_sent: usize,
    pub packets_lost: usize,
    pub one_way_delay_ms: Percentiles,
    pub queuing_delay_ms: Percentiles,
    /// Retransmitted packets (NACK/RTX for video, lost segments for TCP).
    pub retransmissions: usize,
    /// FEC parity packets sent.
    pub fec_packets: usize,
    /// Frames completed thanks to a retransmission or FEC.
    pub frames_recovered: usize,
    /// Frames the receiver gave up on (never complete) or could not decode.
    pub frames_unrecoverable: usize,
    /// Bytes (on the wire) of everything the receiver sent back: feedback, acknowledgements,
    /// NACKs, keyframe requests, receiver reports.
    pub feedback_bytes: u64,
    /// Feedback bit rate over the capacity of the link it travels (`None` when unlimited).
    pub feedback_share: Option<f64>,
    /// SQP's simulated video (§6.2, Eq. 10) for each smoothing window n; filled in by the
    /// caller that knows the flow's frame interval ([`sqp_frame_delay::summarize`]).
    pub sqp_frame_delay: Vec<sqp_frame_delay::SqpFrameDelay>,
    /// A DASH session's QoE (`dash` flows only; absent from the JSON of other flows), filled
    /// in by the caller from the flow's segment records ([`crate::dash::qoe::summarize`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dash: Option<crate::dash::qoe::DashSummary>,
    /// Data packets that reached the receiver CE-marked (flows with `ecn = true` only; absent
    /// from the JSON of other flows), filled in by the caller that counted them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ce_marked: Option<u64>,
    /// An audio flow's RFC 3550 interarrival jitter (`audio` flows only; absent from the JSON of
    /// other flows), filled in by the caller from the flow's transit times ([`audio`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub audio: Option<audio::AudioSummary>,
    /// A short TCP flow's completed downloads (absent from the JSON of other flows), filled in
    /// by the caller from its download records ([`downloads`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub short_tcp: Option<downloads::DownloadSummary>,
}

/// Inputs for one flow's summary.
pub struct FlowLog<'a> {
    pub name: &'a str,
    pub controller: &'a str,
    /// `"video"`, `"tcp"` or `"cbr"`: fairness is computed among flows of one kind.
    pub kind: &'a str,
    /// The flow's minimum bitrate (video flows).
    pub min_bitrate: Option<f64>,
    pub start: Time,
    pub stop: Time,
    /// The flow's packets, gathered as the run went ([`PacketStats`]).
    pub packets: &'a PacketStats,
    /// The flow's frames, in frame order: their records, or (a run that streamed its frame
    /// log) only what the summary needs from them, gathered as the run went.
    pub frames: Frames<'a>,
    /// Bytes the receiver sent back, and what the link they travel could carry meanwhile
    /// (infinite when unlimited).
    pub feedback_bytes: u64,
    pub feedback_capacity_bytes: f64,
}

/// A flow's frames as a summary sees them.
#[derive(Clone, Copy)]
pub enum Frames<'a> {
    Records(&'a [FrameRecord]),
    Gathered(&'a FrameStats),
}

/// Summarise one flow. `capacity_bytes(from, to)` is what the bottleneck could carry.
/// `end` is the end of the run (frames still waiting then take it as their display time).
pub fn summarize_flow(
    log: &FlowLog,
    end: Time,
    capacity_bytes: &dyn Fn(Time, Time) -> f64,
) -> FlowSummary {
    let active = (log.stop - log.start).as_secs_f64().max(1e-9);
    let gathered;
    let frame_stats = match log.frames {
        Frames::Records(records) => {
            gathered = FrameStats::of(records, end);
            &gathered
        }
        Frames::Gathered(stats) => stats,
    };
    let fs = frame_stats.summary();
    let stats = log.packets;
    let cap = capacity_bytes(log.start, log.stop);
    let counted = stats.sent - stats.in_flight_at_end;
    let rates = stats.received_rates();
    FlowSummary {
        name: log.name.to_string(),
        controller: log.controller.to_string(),
        start_s: log.start.as_secs_f64(),
        stop_s: log.stop.as_secs_f64(),
        frame_delay_ms: fs.frame_delay_ms,
        frames_sent: fs.frames_sent,
        frames_delivered: fs.frames_delivered,
        frame_rate_fps: fs.frames_delivered as f64 / active,
        freezes: fs.freezes.0,
        freeze_time_s: fs.freezes.1.as_secs_f64(),
        keyframes: fs.keyframes,
        frames_displayed: fs.frames_displayed,
        frames_undecodable: fs.frames_delivered - fs.frames_displayed,
        display_rate_fps: fs.frames_displayed as f64 / active,
        display_freezes: fs.display_freezes.0,
        display_freeze_time_s: fs.display_freezes.1.as_secs_f64(),
        frame_latency_ms: fs.frame_latency_ms,
        sender_wait_ms: fs.sender_wait_ms,
        frames_skipped: fs.frames_skipped,
        displayed_share: fs.displayed_share,
        psnr_db: fs.psnr_db,
        video_bitrate_bps: fs.video_bits / active,
        throughput_bps: stats.received_bytes as f64 * 8.0 / active,
        convergence_s: convergence_time(&rates, RATE_WINDOW),
        below_min_share: log
            .min_bitrate
            .filter(|_| !rates.is_empty())
            .map(|m| rates.iter().filter(|&&r| r < m).count() as f64 / rates.len() as f64),
        utilization: (cap.is_finite() && cap > 0.0).then(|| stats.departed_in_life as f64 / cap),
        loss_rate: (counted > 0).then(|| stats.lost as f64 / counted as f64),
        packets_sent: stats.sent,
        packets_lost: stats.lost,
        one_way_delay_ms: stats.one_way_delay.percentiles(),
        queuing_delay_ms: stats.queuing_delay.percentiles(),
        retransmissions: stats.retransmissions,
        fec_packets: stats.fec_packets,
        frames_recovered: fs.frames_recovered,
        frames_unrecoverable: fs.frames_unrecoverable,
        feedback_bytes: log.feedback_bytes,
        feedback_share: (log.feedback_capacity_bytes.is_finite()
            && log.feedback_capacity_bytes > 0.0)
            .then(|| log.feedback_bytes as f64 / log.feedback_capacity_bytes),
        sqp_frame_delay: Vec::new(),
        dash: None,
        ce_marked: None,
        audio: None,
        short_tcp: None,
    }
}

/// Metrics over all flows together.
#[derive(Debug, Clone, Serialize)]
pub struct TotalSummary {
    pub throughput_bps: f64,
    pub utilization: Option<f64>,
    pub loss_rate: Option<f64>,
    /// Mean capacity of the forward bottleneck over the run (`None` if unlimited).
    pub capacity_bps: Option<f64>,
    /// Mean Jain's index over 500 ms windows among the flows of one kind: the video flows if
    /// there are two or more, else the TCP flows, else the constant-rate ones (`None` with
    /// fewer than two concurrent flows of a kind). Mixing kinds would rate a 20 kbit/s
    /// constant-rate probe as unfair to the video beside it.
    pub jain_index: Option<f64>,
    /// The same index for each kind of flow present (`None` for a kind with fewer than two
    /// concurrent flows).
    pub jain_index_by_kind: std::collections::BTreeMap<String, Option<f64>>,
}

/// The window of the fairness index.
pub const JAIN_WINDOW: Duration = Duration(500_000_000);

/// Totals over all flows, between the first start and the last stop.
pub fn summarize_total(
    flows: &[FlowLog],
    duration: Time,
    capacity_bytes: &dyn Fn(Time, Time) -> f64,
) -> TotalSummary {
    let start = flows.iter().map(|f| f.start).min().unwrap_or(Time::ZERO);
    let stop = flows.iter().map(|f| f.stop).max().unwrap_or(duration);
    let active = (stop - start).as_secs_f64().max(1e-9);
    let received: u64 = flows.iter().map(|f| f.packets.received_bytes).sum();
    let departed: u64 = flows.iter().map(|f| f.packets.departed_in_span).sum();
    let lost: usize = flows.iter().map(|f| f.packets.lost).sum();
    let counted: usize = flows
        .iter()
        .map(|f| f.packets.sent - f.packets.in_flight_at_end)
        .sum();
    let cap = capacity_bytes(start, stop);
    let whole = capacity_bytes(Time::ZERO, duration);
    let jain_of = |kind: &str| {
        let input: Vec<FlowWindows> = flows
            .iter()
            .filter(|f| f.kind == kind)
            .map(|f| FlowWindows {
                start: f.start,
                stop: f.stop,
                bytes: &f.packets.fairness_bytes,
            })
            .collect();
        windowed_jain(&input, JAIN_WINDOW)
    };
    let mut by_kind = std::collections::BTreeMap::new();
    for f in flows {
        if !by_kind.contains_key(f.kind) {
            by_kind.insert(f.kind.to_string(), jain_of(f.kind));
        }
    }
    let count = |kind: &str| flows.iter().filter(|f| f.kind == kind).count();
    let main_kind = ["video", "tcp", "dash", "cbr"]
        .into_iter()
        .find(|&k| count(k) >= 2);
    TotalSummary {
        throughput_bps: received as f64 * 8.0 / active,
        utilization: (cap.is_finite() && cap > 0.0).then(|| departed as f64 / cap),
        loss_rate: (counted > 0).then(|| lost as f64 / counted as f64),
        capacity_bps: whole
            .is_finite()
            .then(|| whole * 8.0 / duration.as_secs_f64().max(1e-9)),
        jain_index: main_kind.and_then(|k| by_kind.get(k).copied().flatten()),
        jain_index_by_kind: by_kind,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_interpolate_like_numpy() {
        let v = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(percentile(&v, 50.0), Some(2.5));
        assert_eq!(percentile(&v, 100.0), Some(4.0));
        assert!((percentile(&v, 95.0).unwrap() - 3.85).abs() < 1e-12);
        assert_eq!(percentile(&[], 50.0), None);
    }

    fn frame(i: u64, capture_ms: u64, complete_ms: Option<u64>) -> FrameRecord {
        FrameRecord {
            flow: 0,
            frame: i,
            capture: Time::from_millis(capture_ms),
            size: 1000,
            target_bps: 0.0,
            packets: 1,
            first_send: None,
            last_send: None,
            complete: complete_ms.map(Time::from_millis),
            keyframe: i == 0,
            psnr_db: None,
            resolution: None,
            display: None,
            recovered: false,
            unrecoverable: false,
        }
    }

    #[test]
    fn the_displayed_share_counts_only_shown_frames_against_the_whole_target() {
        // 4 frames 25 ms apart at 320 kbit/s: 1000 B each is exactly the target; one not shown.
        let f: Vec<FrameRecord> = (0..4)
            .map(|i| FrameRecord {
                target_bps: 320_000.0,
                ..frame(i, 25 * i, Some(25 * i + 10))
            })
            .collect();
        let shown = [Some(Time::ZERO), None, Some(Time::ZERO), Some(Time::ZERO)];
        let f: Vec<FrameRecord> = f
            .into_iter()
            .zip(shown)
            .map(|(f, display)| FrameRecord { display, ..f })
            .collect();
        let end = Time::from_millis(1000);
        let share = FrameStats::of(&f, end).summary().displayed_share.unwrap();
        assert!(
            (share - 0.75).abs() < 1e-12,
            "3 of 4 target-sized frames: {share}"
        );
        assert_eq!(
            FrameStats::of(&f[..1], end).summary().displayed_share,
            None,
            "one frame has no interval"
        );
    }

    #[test]
    fn a_lost_frame_takes_the_next_completed_frames_time() {
        let f = [
            frame(0, 0, Some(30)),
            frame(1, 33, None),
            frame(2, 66, Some(100)),
            frame(3, 100, None),
        ];
        let end = Time::from_millis(1000);
        let d: Vec<Option<f64>> = frame_delays(&f, end)
            .iter()
            .map(|d| d.map(|d| d.as_millis_f64()))
            .collect();
        assert_eq!(
            d,
            vec![Some(30.0), Some(67.0), Some(34.0), Some(900.0)],
            "the last frame waits until the end"
        );
    }

    #[test]
    fn a_frame_repaired_late_keeps_its_own_completion() {
        // Frame 1 completes at 400 ms (a retransmission), after frames 2 and 3; frame 4 is lost.
        let f = [
            frame(0, 0, Some(30)),
            frame(1, 33, Some(400)),
            frame(2, 66, Some(100)),
            frame(3, 100, Some(130)),
            frame(4, 133, None),
            frame(5, 166, Some(500)),
        ];
        let d: Vec<Option<f64>> = frame_delays(&f, Time::from_millis(1000))
            .iter()
            .map(|d| d.map(|d| d.as_millis_f64()))
            .collect();
        assert_eq!(
            d,
            vec![
                Some(30.0),
                Some(367.0),
                Some(34.0),
                Some(30.0),
                Some(367.0),
                Some(334.0)
            ],
            "a repaired frame counts from its own completion, a lost one until the next completion"
        );
    }

    #[test]
    fn freezes_follow_the_webrtc_rule() {
        // 30 fps with one 500 ms gap: mean gap over 11 gaps ≈ 75 ms; threshold max(225, 225) ms.
        let mut t: Vec<Time> = (0..11).map(|i| Time::from_millis(i * 33)).collect();
        t.push(Time::from_millis(330 + 500));
        let (n, total) = freezes(&t);
        assert_eq!(n, 1);
        assert_eq!(total, Duration::from_millis(500));
        let steady: Vec<Time> = (0..100).map(|i| Time::from_millis(i * 33)).collect();
        assert_eq!(freezes(&steady).0, 0);
    }

    #[test]
    fn convergence_is_when_the_rate_enters_the_final_band_for_good() {
        let w = RATE_WINDOW;
        // Ramp 0.2, 0.5, 0.8, then ±5 % around 1.0 for 20 windows: converged at 3 s.
        let mut r = vec![0.2, 0.5, 0.8];
        r.extend((0..20).map(|i| if i % 2 == 0 { 1.05 } else { 0.95 }));
        assert_eq!(convergence_time(&r, w), Some(3.0));
        // A dip outside the band late resets it.
        r[15] = 0.7;
        assert_eq!(convergence_time(&r, w), Some(16.0));
        // Still oscillating ±30 % at the end: never.
        let osc: Vec<f64> = (0..20)
            .map(|i| if i % 2 == 0 { 1.3 } else { 0.7 })
            .collect();
        assert_eq!(convergence_time(&osc, w), None);
        assert_eq!(convergence_time(&[1.0, 1.0], w), None, "too short to judge");
        assert_eq!(convergence_time(&[0.0; 8], w), None);
    }

    #[test]
    fn fairness_is_among_flows_of_one_kind_and_an_empty_flow_has_no_negative_zero() {
        let pkt = |t_ms: u64, size: u32| PacketRecord {
            flow: 0,
            seq: 0,
            kind: PacketKind::Media,
            size,
            frame: None,
            send: Time::from_millis(t_ms),
            enqueue: Time::from_millis(t_ms),
            depart: Some(Time::from_millis(t_ms)),
            recv: Some(Time::from_millis(t_ms)),
            dropped: false,
            ecn: Default::default(),
        };
        // Three equal video flows (1000 B every 10 ms) and a 20 kbit/s constant-rate probe.
        let video: Vec<PacketRecord> = (0..400).map(|i| pkt(i * 10, 1000)).collect();
        let probe: Vec<PacketRecord> = (0..80).map(|i| pkt(i * 50, 125)).collect();
        let end = Time::from_millis(4000);
        let stats = |packets: &[PacketRecord]| -> &'static PacketStats {
            Box::leak(Box::new(PacketStats::of(
                packets,
                Time::ZERO,
                end,
                (Time::ZERO, end),
                end,
            )))
        };
        let log = |kind: &'static str, packets: &'static PacketStats| FlowLog {
            name: "f",
            controller: "c",
            kind,
            min_bitrate: None,
            start: Time::ZERO,
            stop: Time::from_millis(4000),
            packets,
            frames: Frames::Records(&[]),
            feedback_bytes: 0,
            feedback_capacity_bytes: f64::INFINITY,
        };
        let (video, probe) = (stats(&video), stats(&probe));
        let flows = [
            log("video", video),
            log("video", video),
            log("video", video),
            log("cbr", probe),
        ];
        let t = summarize_total(&flows, Time::from_millis(4000), &|_, _| f64::INFINITY);
        assert_eq!(t.jain_index, Some(1.0), "three equal video flows are fair");
        assert_eq!(t.jain_index_by_kind["video"], Some(1.0));
        assert_eq!(t.jain_index_by_kind["cbr"], None, "one cbr flow: no index");
        let s = summarize_flow(&flows[3], Time::from_millis(4000), &|_, _| f64::INFINITY);
        assert!(s.video_bitrate_bps == 0.0 && s.video_bitrate_bps.is_sign_positive());
    }

    #[test]
    fn jain_is_one_for_equal_shares_and_one_over_n_for_a_hog() {
        assert_eq!(jain_index(&[5.0, 5.0, 5.0]), Some(1.0));
        assert!((jain_index(&[1.0, 0.0, 0.0, 0.0]).unwrap() - 0.25).abs() < 1e-12);
        let w = Duration::from_millis(500);
        let flow = |bytes| FlowWindows {
            start: Time::ZERO,
            stop: Time::from_millis(1000),
            bytes,
        };
        let equal = [flow(&[5000, 5000]), flow(&[5000, 5000])];
        assert_eq!(windowed_jain(&equal, w), Some(1.0));
        let hog = [flow(&[10_000, 10_000]), flow(&[0, 0])];
        assert_eq!(windowed_jain(&hog, w), Some(0.5));
        let late = FlowWindows {
            start: Time::from_millis(500),
            ..flow(&[0, 0])
        };
        assert_eq!(
            windowed_jain(&[flow(&[10_000, 10_000]), late], w),
            Some(0.5),
            "the first window has one active flow and is not counted"
        );
    }
}
