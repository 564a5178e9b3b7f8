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

/// Prefix sums over a flow's packets, shared by every window.
struct Stream<'a> {
    packets: &'a [SentPacket],
    /// `cum[i]`: bytes of packets before `i`; `lost_before[i]`: packets before `i` that never
    /// arrived.
    cum: Vec<u64>,
    lost_before: Vec<u32>,
}

impl<'a> Stream<'a> {
    fn new(packets: &'a [SentPacket]) -> Self {
        let mut cum = Vec::with_capacity(packets.len() + 1);
        let mut lost_before = Vec::with_capacity(packets.len() + 1);
        let (mut bytes, mut lost) = (0u64, 0u32);
        cum.push(bytes);
        lost_before.push(lost);
        for p in packets {
            bytes += p.size as u64;
            lost += p.recv.is_none() as u32;
            cum.push(bytes);
            lost_before.push(lost);
        }
        Stream {
            packets,
            cum,
            lost_before,
        }
    }
}

/// Eq. 10 over `packets` (in ingress order) for the slots `start + k·interval < stop`, then the
/// frames' delays. `end` is the end of the run.
pub fn simulate(
    packets: &[SentPacket],
    start: Time,
    stop: Time,
    interval: Duration,
    n: u32,
    end: Time,
) -> Vec<SimulatedFrame> {
    simulate_stream(&Stream::new(packets), start, stop, interval, n, end)
}

fn simulate_stream(
    stream: &Stream,
    start: Time,
    stop: Time,
    interval: Duration,
    n: u32,
    end: Time,
) -> Vec<SimulatedFrame> {
    if interval.0 == 0 || stop <= start {
        return Vec::new();
    }
    let (packets, cum, lost_before) = (stream.packets, &stream.cum, &stream.lost_before);
    let n = n.max(1) as usize;
    let slots = ((stop - start).0.div_ceil(interval.0)) as usize;
    // bound[k]: the first packet with ingress at or after slot boundary k (start + k·I), for
    // every boundary a window reaches; found in one forward walk, so the bytes sent between
    // two boundaries are a difference of prefix sums.
    let mut bound = Vec::with_capacity(slots + n + 1);
    let mut i = packets.partition_point(|p| p.ingress < start);
    for k in 0..=slots + n {
        let t = start + Duration(interval.0 * k as u64);
        while i < packets.len() && packets[i].ingress < t {
            i += 1;
        }
        bound.push(i);
    }
    let sent = |a: usize, b: usize| (cum[bound[b]] - cum[bound[a]]) as f64;

    let mut frames = Vec::with_capacity(slots);
    let mut pending = 0.0f64;
    // Position in the byte stream (from the flow's first packet) where the next frame begins.
    let mut begin = cum[bound[0]] as f64;
    // The packets carrying a frame's first and last bytes only move forward, frame by frame.
    let (mut first, mut last) = (0usize, 0usize);
    let eps = 1e-6;
    for k in 0..slots {
        let t = start + Duration(interval.0 * k as u64);
        let one = sent(k, k + 1);
        let window = sent(k, k + n);
        let size = ((window - pending) / n as f64).max(one - pending).max(0.0);
        pending = (pending + size - one).max(0.0);
        let complete = if size > 0.0 {
            // Packets carrying bytes [begin, begin + size): the first whose end passes `begin`
            // to the first whose end reaches the frame's last byte.
            while first < packets.len() && (cum[first + 1] as f64) <= begin + eps {
                first += 1;
            }
            last = last.max(first);
            while last < packets.len() && (cum[last + 1] as f64) < begin + size - eps {
                last += 1;
            }
            if last < packets.len() && lost_before[last + 1] == lost_before[first] {
                packets[last].recv
            } else {
                None
            }
        } else {
            None
        };
        begin += size;
        frames.push(SimulatedFrame {
            slot: t,
            bytes: size,
            complete,
            delay: Duration::ZERO,
        });
    }
    // Display times, newest first: an incomplete frame is shown with the next complete one.
    let mut shown_at = end;
    for f in frames.iter_mut().rev() {
        if f.bytes <= 0.0 {
            f.delay = interval;
            continue;
        }
        if let Some(c) = f.complete {
            shown_at = shown_at.min(c);
        }
        f.delay = shown_at - f.slot;
    }
    frames
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

/// Eq. 10 and the frame delays for each window of [`WINDOWS`].
pub fn summarize(
    packets: &[SentPacket],
    start: Time,
    stop: Time,
    interval: Duration,
    end: Time,
) -> Vec<SqpFrameDelay> {
    let stream = Stream::new(packets);
    WINDOWS
        .iter()
        .map(|&n| {
            let frames = simulate_stream(&stream, start, stop, interval, n, end);
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
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

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
