//! SQP's simulated video over any flow's packets (SQP §6.2, Eq. 10).
//!
//! To compare video and non-video senders the same way, SQP turns a flow's sent bytes into a
//! synthetic video: for the frame slot starting at `t` (slots `I` apart from the flow's start),
//!
//! ```text
//!   F(t) = max( (S(t, t + n·I) − p) / n,  S(t, t + I) − p,  0 )               (Eq. 10)
//! ```
//!
//! where `S(t1, t2)` is the bytes the flow sent (bottleneck ingress) in `[t1, t2)`, `p` the bytes
//! of earlier frames not yet sent at `t`, and `n` the smoothing window in frames. The first term
//! spreads what the next `n` slots carry evenly; the second makes sure no byte sent in this slot
//! is wasted. After the slot, `p ← p + F(t) − S(t, t + I)` (never negative by construction).
//! `n` bounds the sender-side wait to `n` frames.
//!
//! The frames are then "transmitted" over the flow's actual packets: frame bytes are laid FIFO
//! onto the flow's byte stream, and a frame is complete when every packet that carries one of
//! its bytes has arrived; its delay is that arrival minus `t`. A zero-size frame's delay is the
//! time until the next frame, `I` (§6.2). A frame one of whose packets was lost never completes
//! and takes the completion time of the next frame that does (it cannot be shown before that
//! one), and frames after the last completed one take the end of the run: the convention of the
//! other frame-delay metric (`docs/metrics.md`).
//!
//! The simulated frame bitrate is `F(t)·8 / I`. The paper reports the P90 frame delay and the
//! P10 and P90 frame bitrates, with `n` from 1 to 32 frames (Fig. 15b).

use super::packet_stats::DelaySample;
use super::spill::SpillFile;
use crate::units::{Duration, Time};
use serde::Serialize;
use std::collections::VecDeque;

/// One packet of the flow: bottleneck ingress time, bytes, arrival at the receiver (`None` if
/// lost or still in flight at the end).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SentPacket {
    pub ingress: Time,
    pub size: u32,
    pub recv: Option<Time>,
}

impl SentPacket {
    /// A logged packet as Eq. 10 sees it (its ingress is its first link's enqueue).
    pub fn of(p: &super::PacketRecord) -> SentPacket {
        SentPacket {
            ingress: p.enqueue,
            size: p.size,
            recv: p.recv,
        }
    }
}

/// One simulated frame.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SimulatedFrame {
    /// Start of the frame's slot (its "capture" time).
    pub slot: Time,
    /// Eq. 10's frame size, in bytes.
    pub bytes: f64,
    /// When every byte of the frame had arrived (`None` if it never did; zero-size frames have
    /// none either).
    pub complete: Option<Time>,
    /// Frame delay under the conventions above.
    pub delay: Duration,
}

/// The windows of Fig. 15b.
pub const WINDOWS: [u32; 6] = [1, 2, 4, 8, 16, 32];

/// One packet as the frame walk needs it: the flow's bytes through it, the packets lost through
/// it, and its arrival.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Carried {
    cum_end: u64,
    lost_through: u32,
    recv: Option<Time>,
}

/// Packets [`Eq10::push`] takes between two moves of the windows.
const ADVANCE_EVERY: usize = 1024;

/// A frame's completion time when it never completed (16 bytes a slot instead of 24).
const NEVER: Time = Time(u64::MAX);

/// Slots a [`SlotLog`] holds in memory before it moves them to its file (128 KB).
const SLOTS_IN_MEMORY: usize = 1 << 13;

/// One window's slots (Eq. 10's bytes and when the frame was complete), appended in slot
/// order: the newest [`SLOTS_IN_MEMORY`] in memory, those before in an anonymous temporary file
/// (16 bytes each), so an hour of 30 fps slots (108,000 per window) does not stay in memory. The
/// frame walk reads them back newest first ([`SlotLog::newest_first`]). If no temporary file
/// can be written the slots stay in memory.
#[derive(Debug, Default)]
struct SlotLog {
    memory: Vec<(f64, Time)>,
    file: SpillFile,
}

impl SlotLog {
    fn in_file(&self) -> usize {
        (self.file.len() / 16) as usize
    }

    fn len(&self) -> usize {
        self.in_file() + self.memory.len()
    }

    fn push(&mut self, slot: (f64, Time)) {
        self.memory.push(slot);
        if self.memory.len() >= SLOTS_IN_MEMORY {
            let mut bytes = Vec::with_capacity(16 * self.memory.len());
            for (size, complete) in &self.memory {
                bytes.extend_from_slice(&size.to_bits().to_le_bytes());
                bytes.extend_from_slice(&complete.0.to_le_bytes());
            }
            if self.file.append(&bytes) {
                self.memory.clear();
            }
        }
    }

    /// Every slot, the newest first.
    fn newest_first(&self) -> impl Iterator<Item = (f64, Time)> + '_ {
        let in_file = self.in_file();
        let from_file = (0..in_file.div_ceil(SLOTS_IN_MEMORY))
            .rev()
            .flat_map(move |c| {
                let (from, to) = (
                    c * SLOTS_IN_MEMORY,
                    ((c + 1) * SLOTS_IN_MEMORY).min(in_file),
                );
                let bytes = self.file.read(16 * from as u64, 16 * (to - from));
                let word = |b: &[u8]| u64::from_le_bytes(b.try_into().expect("8 bytes"));
                let slots: Vec<(f64, Time)> = bytes
                    .chunks_exact(16)
                    .map(|r| (f64::from_bits(word(&r[..8])), Time(word(&r[8..]))))
                    .collect();
                slots.into_iter().rev()
            });
        self.memory.iter().rev().copied().chain(from_file)
    }
}

/// A key whose unsigned order is `f64::total_cmp`'s order (so a [`DelaySample`] can rank
/// frame sizes), and back.
fn order_key(x: f64) -> u64 {
    let bits = x.to_bits();
    match bits >> 63 {
        1 => !bits,
        _ => bits | 1 << 63,
    }
}

fn from_order_key(key: u64) -> f64 {
    f64::from_bits(match key >> 63 {
        1 => key & !(1 << 63),
        _ => !key,
    })
}

/// One window `n`'s frames, computed slot by slot as soon as the packets they need are known.
#[derive(Debug)]
struct Window {
    n: usize,
    /// The next slot to size (`frames.len()`), and its size once computed (its completion may
    /// still wait for packets).
    sized: Option<f64>,
    /// `p` of Eq. 10, and where the next frame's bytes begin in the flow's byte stream.
    pending: f64,
    begin: f64,
    /// Packet indices carrying the current frame's first and last bytes (only move forward).
    first: usize,
    last: usize,
    /// Per slot: Eq. 10's bytes and when the frame was complete ([`NEVER`] if it was not).
    frames: SlotLog,
}

/// Eq. 10 and the frame walk for every window of [`WINDOWS`] over a flow's packets, fed in
/// bottleneck-ingress order as they become known ([`Eq10::push`]), in memory that does not grow
/// with the run: it keeps the packets of the last `max n + 1` slots (and up to
/// [`ADVANCE_EVERY`] more, and at most as many again not cut yet) and one entry per slot,
/// where a batch computation kept every packet (32 bytes each for SQP's triple, plus 12 for its
/// prefix sums). The slots themselves go to a temporary file as they are made ([`SlotLog`]),
/// and the boundaries no window needs any more are dropped, so an hour's run holds no more than
/// a minute's. The arithmetic is the batch computation's, step for step, so the result is
/// the same to the bit whether a run streams its packets or keeps them.
#[derive(Debug)]
pub struct Eq10 {
    start: Time,
    interval: Duration,
    end: Time,
    /// Slots `start + k·I < stop`, and the boundaries a window reaches (`slots + max n`).
    slots: usize,
    last_boundary: usize,
    /// Bytes sent before each slot boundary known so far (the first packet with ingress at or
    /// after the boundary is not counted), from boundary `boundary_first` on (those before are
    /// behind every window).
    boundary_cum: VecDeque<u64>,
    boundary_first: usize,
    /// Packets from index `base` on (earlier ones are no longer needed). A `Vec` whose front
    /// is cut at an advance once the packets to cut are as many as those kept: the frame walk
    /// bisects it, which takes one slice (a `VecDeque` is two).
    packets: Vec<Carried>,
    base: usize,
    bytes: u64,
    lost: u32,
    last_ingress: Time,
    /// Packets pushed since the windows last moved.
    since_advance: usize,
    advance_every: usize,
    /// A packet came with an ingress earlier than its predecessor's: the result would be
    /// wrong (a batch caller sorts first; see [`Eq10::out_of_order`]).
    out_of_order: bool,
    finished: bool,
    /// Every window has all its frames.
    done: bool,
    windows: Vec<Window>,
}

impl Eq10 {
    /// Frames of `interval` for the slots `start + k·I < stop` of a run of length `end`.
    pub fn new(start: Time, stop: Time, interval: Duration, end: Time) -> Eq10 {
        let slots = if interval.0 == 0 || stop <= start {
            0
        } else {
            (stop - start).0.div_ceil(interval.0) as usize
        };
        let max_n = *WINDOWS.iter().max().expect("windows") as usize;
        Eq10 {
            start,
            interval,
            end,
            slots,
            last_boundary: slots + max_n,
            boundary_cum: VecDeque::new(),
            boundary_first: 0,
            packets: Default::default(),
            base: 0,
            bytes: 0,
            lost: 0,
            last_ingress: Time::ZERO,
            since_advance: 0,
            advance_every: ADVANCE_EVERY,
            out_of_order: false,
            finished: false,
            done: slots == 0,
            windows: WINDOWS
                .iter()
                .map(|&n| Window {
                    n: n as usize,
                    sized: None,
                    pending: 0.0,
                    begin: 0.0,
                    first: 0,
                    last: 0,
                    frames: SlotLog::default(),
                })
                .collect(),
        }
    }

    /// Packets pushed (and kept) so far: the index after the last.
    fn count(&self) -> usize {
        self.base + self.packets.len()
    }

    fn boundary(&self, k: usize) -> Time {
        self.start + Duration(self.interval.0 * k as u64)
    }

    /// Boundaries closed so far.
    fn boundaries(&self) -> usize {
        self.boundary_first + self.boundary_cum.len()
    }

    /// Bytes sent before boundary `k` (closed, and not behind every window).
    fn cum_at(&self, k: usize) -> u64 {
        self.boundary_cum[k - self.boundary_first]
    }

    /// The next packet in ingress order.
    pub fn push(&mut self, p: &SentPacket) {
        debug_assert!(!self.finished, "push after finish");
        self.out_of_order |= p.ingress < self.last_ingress;
        self.last_ingress = p.ingress;
        if self.done {
            return; // every frame is known: later packets change nothing
        }
        // Boundaries at or before this packet's ingress close with the bytes before it.
        while self.boundaries() <= self.last_boundary
            && p.ingress >= self.boundary(self.boundaries())
        {
            self.boundary_cum.push_back(self.bytes);
        }
        self.bytes += p.size as u64;
        self.lost += p.recv.is_none() as u32;
        self.packets.push(Carried {
            cum_end: self.bytes,
            lost_through: self.lost,
            recv: p.recv,
        });
        // The windows move every ADVANCE_EVERY packets: a frame waiting for its last byte
        // resumes then with the packets sent since (when a frame is computed changes, not
        // what), and a batch at a time keeps a flow's windows in cache among many flows.
        self.since_advance += 1;
        if self.since_advance >= self.advance_every {
            self.advance();
        }
    }

    /// Whether packets came out of ingress order (their result is then not Eq. 10's).
    pub fn out_of_order(&self) -> bool {
        self.out_of_order
    }

    /// Size and walk every frame the known packets allow, then forget the packets no window
    /// needs any more.
    fn advance(&mut self) {
        self.since_advance = 0;
        for w in 0..self.windows.len() {
            self.advance_window(w);
        }
        let keep_from = self
            .windows
            .iter()
            .filter(|w| w.frames.len() < self.slots)
            .map(|w| w.first)
            .min();
        self.done = keep_from.is_none();
        let keep_from = keep_from.unwrap_or(self.count());
        // The packets no window needs are cut once they are at least as many as those kept, so
        // that the copy of the kept ones costs at most one move per packet cut.
        let unneeded = keep_from.saturating_sub(self.base);
        if unneeded > 0 && 2 * unneeded >= self.packets.len() {
            self.packets.drain(..unneeded);
            self.base = keep_from;
        }
        // Every window is past the boundaries before its next slot.
        let behind_all = self.windows.iter().map(|w| w.frames.len()).min();
        while self.boundary_first < behind_all.unwrap_or(0) && !self.boundary_cum.is_empty() {
            self.boundary_cum.pop_front();
            self.boundary_first += 1;
        }
    }

    fn advance_window(&mut self, w: usize) {
        let eps = 1e-6;
        loop {
            let win = &self.windows[w];
            let k = win.frames.len();
            if k == self.slots {
                return;
            }
            let size = match win.sized {
                Some(size) => size,
                None => {
                    if self.boundaries() <= k + win.n {
                        return; // slot k + n has not ended yet
                    }
                    let c = |i: usize| self.cum_at(i);
                    let one = (c(k + 1) - c(k)) as f64;
                    let window = (c(k + win.n) - c(k)) as f64;
                    let first_begin = (k == 0).then(|| c(0) as f64);
                    let win = &mut self.windows[w];
                    if let Some(begin) = first_begin {
                        win.begin = begin;
                    }
                    let size = ((window - win.pending) / win.n as f64)
                        .max(one - win.pending)
                        .max(0.0);
                    win.pending = (win.pending + size - one).max(0.0);
                    win.sized = Some(size);
                    size
                }
            };
            let (begin, mut first, mut last) = {
                let win = &self.windows[w];
                (win.begin, win.first, win.last)
            };
            let complete = if size > 0.0 {
                // Packets carrying bytes [begin, begin + size): the first whose end passes
                // `begin` to the first whose end reaches the frame's last byte. Byte counts are
                // integers (exact as f64 below 2^53), so `cum ≤ x` is `cum ≤ ⌊x⌋` and
                // `cum < y` is `cum < ⌈y⌉`: the same comparisons, without a conversion per
                // packet.
                // `cum_end` never decreases, so each walk forward is a bisection of the packets
                // ahead of it.
                let through = (begin + eps).floor().max(0.0) as u64;
                let before = (begin + size - eps).ceil().max(0.0) as u64;
                let count = self.count();
                let ahead = |from: usize| &self.packets[from - self.base..];
                first += ahead(first).partition_point(|p| p.cum_end <= through);
                last = last.max(first);
                last += ahead(last).partition_point(|p| p.cum_end < before);
                let win = &mut self.windows[w];
                (win.first, win.last) = (first, last);
                if last == count && !self.finished {
                    return; // the frame's last byte is in a packet not yet sent
                }
                if last < count {
                    let lp = self.packets[last - self.base];
                    let fp = self.packets[first - self.base];
                    let lost_before_first = fp.lost_through - fp.recv.is_none() as u32;
                    (lp.lost_through == lost_before_first)
                        .then_some(lp.recv)
                        .flatten()
                } else {
                    None
                }
            } else {
                None
            };
            let win = &mut self.windows[w];
            win.begin += size;
            win.sized = None;
            win.frames.push((size, complete.unwrap_or(NEVER)));
        }
    }

    /// No more packets: close the boundaries after the last one and finish every frame.
    fn finish(&mut self) {
        if self.finished {
            return;
        }
        self.finished = true;
        if self.slots == 0 {
            return;
        }
        while self.boundaries() <= self.last_boundary {
            self.boundary_cum.push_back(self.bytes);
        }
        self.advance();
    }

    /// Window `n`'s frames with their delays (`n` one of [`WINDOWS`]).
    pub fn frames(&mut self, n: u32) -> Vec<SimulatedFrame> {
        self.finish();
        let Some(w) = self.windows.iter().find(|w| w.n == n as usize) else {
            return Vec::new();
        };
        let mut frames: Vec<SimulatedFrame> = self.walk(w).collect();
        frames.reverse();
        frames
    }

    /// Window `w`'s frames newest first, each with its delay: a zero-size frame waits `I`, and
    /// an incomplete frame is shown with the next complete one (the end of the run after the
    /// last).
    fn walk<'a>(&'a self, w: &'a Window) -> impl Iterator<Item = SimulatedFrame> + 'a {
        let mut shown_at = self.end;
        (0..w.frames.len())
            .rev()
            .zip(w.frames.newest_first())
            .map(move |(k, (bytes, complete))| {
                let complete = (complete != NEVER).then_some(complete);
                let slot = self.boundary(k);
                let delay = if bytes <= 0.0 {
                    self.interval
                } else {
                    if let Some(c) = complete {
                        shown_at = shown_at.min(c);
                    }
                    shown_at - slot
                };
                SimulatedFrame {
                    slot,
                    bytes,
                    complete,
                    delay,
                }
            })
    }

    /// The summary of every window of [`WINDOWS`]: [`Eq10::frames`]'s delays and sizes walked
    /// newest first from the slot log into exact samples, ranked there instead of sorted in a
    /// vector of frames (the same numbers to the bit).
    pub fn summary(&mut self) -> Vec<SqpFrameDelay> {
        self.finish();
        let seconds = self.interval.as_secs_f64();
        let mut out = Vec::with_capacity(WINDOWS.len());
        for w in &self.windows {
            let (mut delays, mut sizes) = (DelaySample::default(), DelaySample::default());
            for f in self.walk(w) {
                delays.push(f.delay);
                sizes.push(Duration(order_key(f.bytes)));
            }
            let ms = |v: u64| Duration(v).as_millis_f64();
            let bps = |key: u64| from_order_key(key) * 8.0 / seconds;
            let d = delays.percentiles_by(&[50.0, 90.0, 95.0, 99.0], ms);
            let r = sizes.percentiles_by(&[10.0, 50.0, 90.0], bps);
            out.push(SqpFrameDelay {
                n: w.n as u32,
                frame_interval_ms: self.interval.as_millis_f64(),
                frame_delay_ms: DelayPercentiles {
                    p50: d[0],
                    p90: d[1],
                    p95: d[2],
                    p99: d[3],
                },
                frame_bitrate_bps: BitratePercentiles {
                    p10: r[0],
                    p50: r[1],
                    p90: r[2],
                },
            });
        }
        out
    }
}

/// Eq. 10 over `packets` (in ingress order) for the slots `start + k·interval < stop`, then the
/// frames' delays, for window `n` (one of [`WINDOWS`]). `end` is the end of the run.
pub fn simulate(
    packets: &[SentPacket],
    start: Time,
    stop: Time,
    interval: Duration,
    n: u32,
    end: Time,
) -> Vec<SimulatedFrame> {
    let mut eq10 = Eq10::new(start, stop, interval, end);
    for p in packets {
        eq10.push(p);
    }
    eq10.frames(n)
}

/// P50/P90/P95/P99, `None` when empty.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Default)]
pub struct DelayPercentiles {
    pub p50: Option<f64>,
    pub p90: Option<f64>,
    pub p95: Option<f64>,
    pub p99: Option<f64>,
}

/// P10/P50/P90, `None` when empty.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Default)]
pub struct BitratePercentiles {
    pub p10: Option<f64>,
    pub p50: Option<f64>,
    pub p90: Option<f64>,
}

/// The summary of one window `n`, as written to `summary.json`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SqpFrameDelay {
    /// Smoothing window n, in frames.
    pub n: u32,
    /// Frame interval I used for the slots.
    pub frame_interval_ms: f64,
    pub frame_delay_ms: DelayPercentiles,
    pub frame_bitrate_bps: BitratePercentiles,
}

/// Eq. 10 and the frame delays for each window of [`WINDOWS`], over `packets` in any order
/// (sorted by ingress here when they are not).
pub fn summarize(
    packets: &[SentPacket],
    start: Time,
    stop: Time,
    interval: Duration,
    end: Time,
) -> Vec<SqpFrameDelay> {
    let mut eq10 = Eq10::new(start, stop, interval, end);
    if packets.windows(2).any(|w| w[1].ingress < w[0].ingress) {
        let mut sorted = packets.to_vec();
        sorted.sort_by_key(|p| p.ingress);
        sorted.iter().for_each(|p| eq10.push(p));
    } else {
        packets.iter().for_each(|p| eq10.push(p));
    }
    eq10.summary()
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::metrics::percentile;

    /// A window's summary from its frames, the plain way (sort and interpolate): what
    /// [`Eq10::summary`] computes without holding the frames.
    fn window_summary(n: u32, interval: Duration, frames: &[SimulatedFrame]) -> SqpFrameDelay {
        let mut delays: Vec<f64> = frames.iter().map(|f| f.delay.as_millis_f64()).collect();
        let mut rates: Vec<f64> = frames
            .iter()
            .map(|f| f.bytes * 8.0 / interval.as_secs_f64())
            .collect();
        delays.sort_by(|a, b| a.total_cmp(b));
        rates.sort_by(|a, b| a.total_cmp(b));
        SqpFrameDelay {
            n,
            frame_interval_ms: interval.as_millis_f64(),
            frame_delay_ms: DelayPercentiles {
                p50: percentile(&delays, 50.0),
                p90: percentile(&delays, 90.0),
                p95: percentile(&delays, 95.0),
                p99: percentile(&delays, 99.0),
            },
            frame_bitrate_bps: BitratePercentiles {
                p10: percentile(&rates, 10.0),
                p50: percentile(&rates, 50.0),
                p90: percentile(&rates, 90.0),
            },
        }
    }
    use proptest::prelude::*;

    /// Eq. 10 computed the plain way, with every packet and its prefix sums in hand: the
    /// reference the streaming [`Eq10`] must match to the bit.
    fn batch(
        p: &[SentPacket],
        start: Time,
        stop: Time,
        iv: Duration,
        n: usize,
        end: Time,
    ) -> Vec<(f64, Option<Time>, Duration)> {
        let slots = ((stop - start).0.div_ceil(iv.0)) as usize;
        let mut cum = vec![0u64];
        let mut lost = vec![0u32];
        for q in p {
            cum.push(cum.last().unwrap() + q.size as u64);
            lost.push(lost.last().unwrap() + q.recv.is_none() as u32);
        }
        let at = |k: usize| start + Duration(iv.0 * k as u64);
        let bound: Vec<usize> = (0..=slots + n)
            .map(|k| p.partition_point(|q| q.ingress < at(k)))
            .collect();
        let sent = |a: usize, b: usize| (cum[bound[b]] - cum[bound[a]]) as f64;
        let (mut pending, mut begin, mut out) = (0.0f64, cum[bound[0]] as f64, Vec::new());
        for k in 0..slots {
            let size = ((sent(k, k + n) - pending) / n as f64)
                .max(sent(k, k + 1) - pending)
                .max(0.0);
            pending = (pending + size - sent(k, k + 1)).max(0.0);
            let first = (0..p.len())
                .find(|&i| cum[i + 1] as f64 > begin + 1e-6)
                .unwrap_or(p.len());
            let last = (first..p.len())
                .find(|&i| cum[i + 1] as f64 >= begin + size - 1e-6)
                .unwrap_or(p.len());
            let complete = (size > 0.0 && last < p.len() && lost[last + 1] == lost[first])
                .then(|| p[last].recv)
                .flatten();
            begin += size;
            out.push((size, complete, Duration::ZERO));
        }
        let mut shown = end;
        for k in (0..out.len()).rev() {
            let f = &mut out[k];
            if f.0 <= 0.0 {
                f.2 = iv;
                continue;
            }
            if let Some(c) = f.1 {
                shown = shown.min(c);
            }
            f.2 = shown - at(k);
        }
        out
    }

    proptest! {
        /// Fed one packet at a time, Eq. 10 gives every window's frames exactly as the batch
        /// computation over the whole log: sizes, completions (losses, gaps of silence, bursts
        /// at one instant, packets before the start and after the stop) and delays.
        #[test]
        fn streaming_eq10_matches_the_batch_computation_to_the_bit(
            gaps in proptest::collection::vec((0u64..40, 1u32..3000, proptest::option::weighted(0.9, 1u64..300)), 0..400),
            start_ms in 0u64..50, life_ms in 1u64..600, iv_ms in 1u64..40,
        ) {
            let (mut t, mut packets) = (0u64, Vec::new());
            for (gap, size, transit) in gaps {
                t += gap;
                packets.push(SentPacket { ingress: Time::from_millis(t), size, recv: transit.map(|d| Time::from_millis(t + d)) });
            }
            let (start, stop) = (Time::from_millis(start_ms), Time::from_millis(start_ms + life_ms));
            let (iv, end) = (Duration::from_millis(iv_ms), Time::from_millis(start_ms + life_ms + 500));
            // Moving the windows after every packet, every few, or only at the end.
            for every in [1, 7, ADVANCE_EVERY] {
                let mut eq10 = Eq10::new(start, stop, iv, end);
                eq10.advance_every = every;
                packets.iter().for_each(|p| eq10.push(p));
                for n in WINDOWS {
                    let want = batch(&packets, start, stop, iv, n as usize, end);
                    let got: Vec<_> = eq10.frames(n).iter().map(|f| (f.bytes, f.complete, f.delay)).collect();
                    prop_assert_eq!(got, want, "n = {}, moved every {} packets", n, every);
                }
                let plain: Vec<SqpFrameDelay> = WINDOWS.iter().map(|&n| window_summary(n, iv, &eq10.frames(n))).collect();
                prop_assert_eq!(eq10.summary(), plain, "moved every {} packets", every);
            }
        }
    }

    fn ms(v: u64) -> Time {
        Time::from_millis(v)
    }

    #[test]
    fn slots_past_the_memory_limit_go_to_a_file_and_come_back_the_same() {
        // 30,000 slots of 1 ms (more than three files' chunks), an uneven sender with losses.
        let packets: Vec<SentPacket> = (0..40_000u64)
            .map(|i| {
                let t = i * 3 / 4;
                pkt(
                    t,
                    200 + (i * 7919 % 1300) as u32,
                    (i % 97 != 0).then_some(t + 20 + i % 11),
                )
            })
            .collect();
        let (start, stop, iv, end) = (ms(0), ms(30_000), Duration::from_millis(1), ms(31_000));
        let mut eq10 = Eq10::new(start, stop, iv, end);
        packets.iter().for_each(|p| eq10.push(p));
        assert!(
            eq10.windows
                .iter()
                .all(|w| w.frames.in_file() > 2 * SLOTS_IN_MEMORY),
            "the slots went to the file"
        );
        assert!(
            eq10.boundary_cum.len() < 2 * ADVANCE_EVERY,
            "boundaries behind every window are dropped ({} kept)",
            eq10.boundary_cum.len()
        );
        for n in WINDOWS {
            let want = batch(&packets, start, stop, iv, n as usize, end);
            let got: Vec<_> = eq10
                .frames(n)
                .iter()
                .map(|f| (f.bytes, f.complete, f.delay))
                .collect();
            assert_eq!(got, want, "n = {n}");
        }
        let plain: Vec<SqpFrameDelay> = WINDOWS
            .iter()
            .map(|&n| window_summary(n, iv, &eq10.frames(n)))
            .collect();
        assert_eq!(eq10.summary(), plain);
    }

    #[test]
    fn the_order_key_sorts_as_total_cmp() {
        let mut x = [3.5, -0.0, 0.0, 1e-300, -2.0, f64::INFINITY, 1e9, 0.25];
        let mut keys: Vec<u64> = x.iter().map(|&v| order_key(v)).collect();
        x.sort_by(|a, b| a.total_cmp(b));
        keys.sort_unstable();
        let back: Vec<u64> = keys.iter().map(|&k| from_order_key(k).to_bits()).collect();
        assert_eq!(back, x.map(f64::to_bits));
    }

    fn pkt(ingress_ms: u64, size: u32, recv_ms: Option<u64>) -> SentPacket {
        SentPacket {
            ingress: ms(ingress_ms),
            size,
            recv: recv_ms.map(ms),
        }
    }

    #[test]
    fn a_smooth_sender_gives_one_frame_per_slot_of_what_it_sent() {
        // 1000 bytes at the start of every 10 ms slot, each arriving 25 ms later.
        let packets: Vec<SentPacket> = (0..10)
            .map(|k| pkt(10 * k, 1000, Some(10 * k + 25)))
            .collect();
        for n in [1, 4] {
            let f = simulate(
                &packets,
                ms(0),
                ms(100),
                Duration::from_millis(10),
                n,
                ms(200),
            );
            assert_eq!(f.len(), 10);
            // With n = 4 the last slots see fewer bytes ahead, but the second term of Eq. 10
            // never lets a sent byte go unused.
            for (k, fr) in f.iter().enumerate() {
                assert_eq!(fr.slot, ms(10 * k as u64));
                assert!(
                    (fr.bytes - 1000.0).abs() < 1e-9,
                    "n={n} slot {k}: {}",
                    fr.bytes
                );
                assert_eq!(fr.delay, Duration::from_millis(25));
            }
        }
    }

    #[test]
    fn a_bursty_sender_is_smoothed_over_n_and_frames_wait_for_the_burst() {
        // Silent for three slots, then 4000 bytes at 35 ms (four packets, arriving at 50..53 ms).
        let packets: Vec<SentPacket> = (0..4).map(|i| pkt(35, 1000, Some(50 + i))).collect();
        let iv = Duration::from_millis(10);
        // n = 1: F = S(t, t + I): frames 0..2 are empty (delay I), frame 3 has all 4000 bytes.
        let f = simulate(&packets, ms(0), ms(40), iv, 1, ms(100));
        let sizes: Vec<f64> = f.iter().map(|f| f.bytes).collect();
        assert_eq!(sizes, vec![0.0, 0.0, 0.0, 4000.0]);
        assert_eq!(f[0].delay, iv);
        assert_eq!(f[3].delay, Duration::from_millis(53 - 30));
        // n = 4: F(0) = 4000/4 = 1000, p = 1000; F(10) = max((4000 − 1000)/4, −1000) = 750,
        // p = 1750; F(20) = max((4000 − 1750)/4, −1750) = 562.5, p = 2312.5;
        // F(30) = max((4000 − 2312.5)/4, 4000 − 2312.5) = 1687.5, p = 0.
        let f = simulate(&packets, ms(0), ms(40), iv, 4, ms(100));
        let sizes: Vec<f64> = f.iter().map(|f| f.bytes).collect();
        assert_eq!(sizes, vec![1000.0, 750.0, 562.5, 1687.5]);
        // Bytes [0, 1000) are packet 0 (50 ms); [1000, 1750) packet 1 (51 ms); [1750, 2312.5)
        // packets 1–2 (52 ms); [2312.5, 4000) packets 2–3 (53 ms).
        let delays: Vec<Duration> = f.iter().map(|f| f.delay).collect();
        assert_eq!(
            delays,
            vec![
                Duration::from_millis(50),
                Duration::from_millis(41),
                Duration::from_millis(32),
                Duration::from_millis(23)
            ]
        );
    }

    #[test]
    fn a_frame_with_a_lost_packet_is_shown_with_the_next_complete_one() {
        let packets = vec![
            pkt(0, 1000, Some(20)),
            pkt(10, 1000, None),
            pkt(20, 1000, Some(40)),
        ];
        let f = simulate(
            &packets,
            ms(0),
            ms(40),
            Duration::from_millis(10),
            1,
            ms(100),
        );
        assert_eq!(f[1].complete, None);
        assert_eq!(
            f[1].delay,
            Duration::from_millis(30),
            "shown at 40 ms with frame 2"
        );
        assert_eq!(f[2].delay, Duration::from_millis(20));
        assert_eq!(f[3].bytes, 0.0);
        assert_eq!(
            f[3].delay,
            Duration::from_millis(10),
            "empty: the time to the next"
        );
        let s = summarize(&packets, ms(0), ms(40), Duration::from_millis(10), ms(100));
        assert_eq!(s.len(), WINDOWS.len());
        assert_eq!(s[0].n, 1);
        assert_eq!(s[0].frame_bitrate_bps.p90, Some(800_000.0));
    }
}
