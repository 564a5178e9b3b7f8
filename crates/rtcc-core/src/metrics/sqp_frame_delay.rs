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

use super::percentile;
use crate::units::{Duration, Time};
use serde::Serialize;

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

/// One window `n`'s frames, computed slot by slot as soon as the packets they need are known.
#[derive(Debug, Clone, PartialEq)]
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
    frames: Vec<(f64, Time)>,
}

/// Eq. 10 and the frame walk for every window of [`WINDOWS`] over a flow's packets, fed in
/// bottleneck-ingress order as they become known ([`Eq10::push`]), in memory that does not grow
/// with the run: it keeps the packets of the last `max n + 1` slots (and up to
/// [`ADVANCE_EVERY`] more) and one entry per slot,
/// where a batch computation kept every packet (32 bytes each for SQP's triple, plus 12 for its
/// prefix sums). The arithmetic is the batch computation's, step for step, so the result is
/// the same to the bit whether a run streams its packets or keeps them.
#[derive(Debug, Clone, PartialEq)]
pub struct Eq10 {
    start: Time,
    interval: Duration,
    end: Time,
    /// Slots `start + k·I < stop`, and the boundaries a window reaches (`slots + max n`).
    slots: usize,
    last_boundary: usize,
    /// Bytes sent before each slot boundary known so far (the first packet with ingress at or
    /// after the boundary is not counted).
    boundary_cum: Vec<u64>,
    /// Packets from index `base` on (earlier ones are no longer needed).
    packets: std::collections::VecDeque<Carried>,
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
            boundary_cum: Vec::new(),
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
                    frames: Vec::with_capacity(slots),
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

    /// The next packet in ingress order.
    pub fn push(&mut self, p: &SentPacket) {
        debug_assert!(!self.finished, "push after finish");
        self.out_of_order |= p.ingress < self.last_ingress;
        self.last_ingress = p.ingress;
        if self.done {
            return; // every frame is known: later packets change nothing
        }
        // Boundaries at or before this packet's ingress close with the bytes before it.
        while self.boundary_cum.len() <= self.last_boundary
            && p.ingress >= self.boundary(self.boundary_cum.len())
        {
            self.boundary_cum.push(self.bytes);
        }
        self.bytes += p.size as u64;
        self.lost += p.recv.is_none() as u32;
        self.packets.push_back(Carried {
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
        while self.base < keep_from {
            self.packets.pop_front();
            self.base += 1;
        }
    }

    fn advance_window(&mut self, w: usize) {
        let eps = 1e-6;
        let cum = |this: &Eq10, i: usize| this.packets[i - this.base].cum_end;
        loop {
            let win = &self.windows[w];
            let k = win.frames.len();
            if k == self.slots {
                return;
            }
            let size = match win.sized {
                Some(size) => size,
                None => {
                    if self.boundary_cum.len() <= k + win.n {
                        return; // slot k + n has not ended yet
                    }
                    let c = &self.boundary_cum;
                    let one = (c[k + 1] - c[k]) as f64;
                    let window = (c[k + win.n] - c[k]) as f64;
                    let win = &mut self.windows[w];
                    if k == 0 {
                        win.begin = c[0] as f64;
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
                let through = (begin + eps).floor().max(0.0) as u64;
                let before = (begin + size - eps).ceil().max(0.0) as u64;
                let count = self.count();
                while first < count && cum(self, first) <= through {
                    first += 1;
                }
                last = last.max(first);
                while last < count && cum(self, last) < before {
                    last += 1;
                }
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
        while self.boundary_cum.len() <= self.last_boundary {
            self.boundary_cum.push(self.bytes);
        }
        self.advance();
    }

    /// Window `n`'s frames with their delays (`n` one of [`WINDOWS`]).
    pub fn frames(&mut self, n: u32) -> Vec<SimulatedFrame> {
        self.finish();
        let Some(w) = self.windows.iter().find(|w| w.n == n as usize) else {
            return Vec::new();
        };
        let mut frames: Vec<SimulatedFrame> = w
            .frames
            .iter()
            .enumerate()
            .map(|(k, &(bytes, complete))| SimulatedFrame {
                slot: self.boundary(k),
                bytes,
                complete: (complete != NEVER).then_some(complete),
                delay: Duration::ZERO,
            })
            .collect();
        // Display times, newest first: an incomplete frame is shown with the next complete one.
        let mut shown_at = self.end;
        for f in frames.iter_mut().rev() {
            if f.bytes <= 0.0 {
                f.delay = self.interval;
                continue;
            }
            if let Some(c) = f.complete {
                shown_at = shown_at.min(c);
            }
            f.delay = shown_at - f.slot;
        }
        frames
    }

    /// The summary of every window of [`WINDOWS`].
    pub fn summary(&mut self) -> Vec<SqpFrameDelay> {
        let interval = self.interval;
        WINDOWS
            .iter()
            .map(|&n| window_summary(n, interval, &self.frames(n)))
            .collect()
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

#[cfg(test)]
mod tests {
    use super::*;
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
            }
        }
    }

    fn ms(v: u64) -> Time {
        Time::from_millis(v)
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
