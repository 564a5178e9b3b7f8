//! What a run's summary needs from a flow's frames, gathered one frame at a time.
//!
//! The frame metrics ([`super::FlowSummary`]'s frame delay, latency, freezes, shares) were
//! computed from the whole frame log at the end of a run, so an hour of video held 108,000
//! frame records until then. A streaming run instead hands each frame here once it is settled
//! (the receiver decided it, and the later events its derived values wait for have happened;
//! `rtcc_sim` decides that) and may then write the record out; a run that kept its frames hands
//! them all over at the end ([`FrameStats::of`]). What stays is counters, sums in frame order,
//! the freeze rule's long gaps, and three exact samples ([`DelaySample`], a few bytes a frame,
//! moved to a temporary file past 4 MB).
//!
//! Two values of a frame depend on later frames (module [`super::playout`] and
//! [`super::frame_delays`]): a frame never completed takes the earliest completion of a later
//! frame, and a frame never shown takes the display of the next frame shown. [`Later`] carries
//! those two instants; [`derive`] turns a record and its [`Later`] into the frame's delay and
//! latency, the one rule both ways of gathering use. Fed the same frames in frame order and the
//! completions in time order, every metric comes out bit for bit as from the whole log: sums
//! run in the same order, percentiles are exact ranks, and freezes need only the gaps that could
//! be freezes (the rule's threshold is at least 150 ms, so shorter gaps are counted, not kept).

use super::packet_stats::DelaySample;
use super::{FrameRecord, Percentiles};
use crate::units::{Duration, Time};

/// The later events a frame's derived values wait for: the earliest completion of any later
/// frame, and the display of the nearest later frame that was shown (`None`: none, yet).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Later {
    pub completion: Option<Time>,
    pub display: Option<Time>,
}

/// A frame's delay (capture → its completion, or `later.completion`, or `end`; `None` for a
/// frame the encoder skipped) and latency (capture → its display, or `later.display`, or `end`).
pub fn derive(f: &FrameRecord, later: Later, end: Time) -> (Option<Duration>, Duration) {
    let delay = (f.packets > 0).then(|| f.complete.or(later.completion).unwrap_or(end) - f.capture);
    let shown_at = f.display.or(later.display).unwrap_or(end);
    (delay, shown_at.saturating_since(f.capture))
}

/// Each frame's [`Later`] in a whole log (one flow, in frame order).
pub fn later_events(frames: &[FrameRecord]) -> Vec<Later> {
    let mut out = vec![Later::default(); frames.len()];
    let mut next = Later::default();
    for (i, f) in frames.iter().enumerate().rev() {
        out[i] = next;
        if let Some(c) = f.complete.filter(|_| f.packets > 0) {
            next.completion = Some(next.completion.map_or(c, |n| n.min(c)));
        }
        if f.display.is_some() {
            next.display = f.display;
        }
    }
    out
}

/// Gaps between instants shorter than this are never freezes ([`super::freezes`]: the
/// threshold is `max(3 × mean gap, mean gap + 150 ms)`).
const NEVER_A_FREEZE_S: f64 = 0.150;

/// The freeze rule ([`super::freezes`]) over instants pushed in time order.
#[derive(Debug, Default, Clone)]
pub struct FreezeCounter {
    len: usize,
    first: Time,
    last: Time,
    /// The gaps longer than [`NEVER_A_FREEZE_S`], in order.
    long_gaps: Vec<Duration>,
}

impl FreezeCounter {
    pub fn push(&mut self, t: Time) {
        if self.len == 0 {
            self.first = t;
        } else {
            debug_assert!(
                t >= self.last,
                "freezes are gaps between consecutive instants: push them in time order"
            );
            let gap = t - self.last;
            if gap.as_secs_f64() > NEVER_A_FREEZE_S {
                self.long_gaps.push(gap);
            }
        }
        self.last = t;
        self.len += 1;
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// (count, total duration) of the freezing gaps.
    pub fn freezes(&self) -> (usize, Duration) {
        if self.len < 3 {
            return (0, Duration::ZERO);
        }
        let mean = (self.last - self.first).as_secs_f64() / (self.len - 1) as f64;
        let threshold = (3.0 * mean).max(mean + NEVER_A_FREEZE_S);
        let freezing = self
            .long_gaps
            .iter()
            .filter(|g| g.as_secs_f64() > threshold);
        freezing.fold((0, Duration::ZERO), |(n, total), &g| (n + 1, total + g))
    }
}

/// A flow's frame statistics (see the module header).
#[derive(Debug, Default)]
pub struct FrameStats {
    /// Every frame record, the encoder's skipped (empty) frames too.
    frames: usize,
    /// Frames with at least one packet, and of those the keyframes.
    sent: usize,
    keyframes: usize,
    recovered: usize,
    unrecoverable: usize,
    video_bits: f64,
    psnr_sum: f64,
    psnr_count: usize,
    /// Completions of frames with packets, in time order ([`FrameStats::completed`]).
    completions: FreezeCounter,
    /// Display times, in frame order (which is their time order).
    shown: FreezeCounter,
    delay: DelaySample,
    latency: DelaySample,
    sender_wait: DelaySample,
    /// For the displayed share: the first frame's capture, the previous frame's capture and
    /// target (its bits need the next capture), and the two sums.
    first_capture: Option<Time>,
    previous: Option<(Time, f64)>,
    target_bits: f64,
    shown_bits: f64,
}

/// The frame metrics of a flow summary ([`super::FlowSummary`]'s fields of the same names).
#[derive(Debug, Clone, PartialEq)]
pub struct FrameSummary {
    pub frame_delay_ms: Percentiles,
    pub frames_sent: usize,
    pub frames_delivered: usize,
    pub freezes: (usize, Duration),
    pub keyframes: usize,
    pub frames_displayed: usize,
    pub display_freezes: (usize, Duration),
    pub frame_latency_ms: Percentiles,
    pub sender_wait_ms: Percentiles,
    pub frames_skipped: usize,
    pub displayed_share: Option<f64>,
    pub psnr_db: Option<f64>,
    pub video_bits: f64,
    pub frames_recovered: usize,
    pub frames_unrecoverable: usize,
}

impl FrameStats {
    /// The statistics of a whole log (one flow, in frame order) in a run that ended at `end`.
    pub fn of(frames: &[FrameRecord], end: Time) -> FrameStats {
        let mut stats = FrameStats::default();
        let mut completions: Vec<Time> = frames
            .iter()
            .filter(|f| f.packets > 0)
            .filter_map(|f| f.complete)
            .collect();
        completions.sort_unstable();
        for t in completions {
            stats.completed(t);
        }
        for (f, later) in frames.iter().zip(later_events(frames)) {
            let (delay, latency) = derive(f, later, end);
            stats.add(f, delay, latency);
        }
        stats
    }

    /// A frame with packets completed at `t`; called in time order.
    pub fn completed(&mut self, t: Time) {
        self.completions.push(t);
    }

    /// The next frame in frame order, settled, with its delay and latency ([`derive`]).
    pub fn add(&mut self, f: &FrameRecord, delay: Option<Duration>, latency: Duration) {
        self.frames += 1;
        if let Some(d) = delay {
            self.delay.push(d);
        }
        self.latency.push(latency);
        if f.packets > 0 {
            self.sent += 1;
            self.keyframes += f.keyframe as usize;
            self.video_bits += f.size as f64 * 8.0;
            if let Some(t) = f.last_send {
                self.sender_wait.push(t - f.capture);
            }
        }
        self.recovered += f.recovered as usize;
        self.unrecoverable += f.unrecoverable as usize;
        if let Some(t) = f.display {
            self.shown.push(t);
            self.shown_bits += f.size as f64 * 8.0;
            if let Some(p) = f.psnr_db {
                self.psnr_sum += p;
                self.psnr_count += 1;
            }
        }
        if let Some((capture, target)) = self.previous {
            self.target_bits += target * (f.capture - capture).as_secs_f64();
        }
        self.first_capture.get_or_insert(f.capture);
        self.previous = Some((f.capture, f.target_bps));
    }

    /// The metrics, once every frame was added.
    pub fn summary(&self) -> FrameSummary {
        // The last frame stands for the target over the mean interval between captures.
        let displayed_share = match (self.first_capture, self.previous) {
            (Some(first), Some((last, target))) if self.frames >= 2 => {
                let mean_interval = (last - first).as_secs_f64() / (self.frames - 1) as f64;
                let target_bits = self.target_bits + target * mean_interval;
                (target_bits > 0.0).then(|| self.shown_bits / target_bits)
            }
            _ => None,
        };
        FrameSummary {
            frame_delay_ms: self.delay.percentiles(),
            frames_sent: self.sent,
            frames_delivered: self.completions.len(),
            freezes: self.completions.freezes(),
            keyframes: self.keyframes,
            frames_displayed: self.shown.len(),
            display_freezes: self.shown.freezes(),
            frame_latency_ms: self.latency.percentiles(),
            sender_wait_ms: self.sender_wait.percentiles(),
            frames_skipped: self.frames - self.sent,
            displayed_share,
            psnr_db: (self.psnr_count > 0).then(|| self.psnr_sum / self.psnr_count as f64),
            video_bits: self.video_bits,
            frames_recovered: self.recovered,
            frames_unrecoverable: self.unrecoverable,
        }
    }
}
