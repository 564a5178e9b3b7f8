//! The MMSys 2024 bandwidth-estimation challenge's observation: 15 features of the packets a
//! receiver got, each over 5 short (60 ms) and 5 long (600 ms) monitor intervals, 150 values.
//!
//! Source: ACM MMSys 2024 Grand Challenge "Offline Reinforcement Learning for Bandwidth
//! Estimation in Real Time Communications" (Khairy et al., microsoft/RL4BandwidthEstimationChallenge):
//! its published feature list and layout — feature `f` (1..15) over interval `j` (0..9) at
//! index `(f − 1)·10 + j`, intervals 0–4 the short ones going back 60, 120, … 300 ms, 5–9 the
//! long ones going back 600, … 3,000 ms, "the last timestamp is the last packet's timestamp".
//! The challenge's own extraction ran inside Teams and is not public; where its one-line
//! definitions leave a choice, rtcc's reading is (each checked against an independent Python
//! implementation and hand-worked numbers in `tests/test_mmsys24_features.py`):
//!
//! - intervals are half-open, `(T − (k+1)·L, T − k·L]`, anchored at `T` (the agent's anchor:
//!   the newest reported arrival, see `cc::agent`);
//! - 1 receiving rate: bytes · 8 over the interval's *length* (not its first-to-last span);
//! - 4 queuing delay: mean delay minus the minimum delay seen up to the interval's end;
//!   5 delay: mean delay minus the challenge's fixed 200 ms; 6 minimum seen delay: up to the
//!   interval's end (0 before any packet);
//! - 7 delay ratio: mean / minimum delay in the interval, 0 when that minimum is not positive
//!   (unsynchronised clocks); 8 mean minus minimum;
//! - 9, 10 inter-arrival mean and population standard deviation of consecutive arrivals inside
//!   the interval (0 with fewer than two packets);
//! - 11 loss ratio `lost / (lost + received)` and 12 mean gap size given a gap, where a
//!   packet's lost count is the gap between its sequence number and the largest before it
//!   (OpenNetLab's receiver takes the gap to the previous packet's, which counts a reordered
//!   packet's gap twice);
//! - 13–15 shares of video (media, retransmissions, FEC), audio and probing (padding, probes)
//!   packets among those received;
//! - every feature of an interval without packets is 0, except 6.

use super::{Arrival, ArrivalHistory, PacketClass};

/// Values in the vector.
pub const LEN: usize = 150;
/// Features, each over [`INTERVALS`] intervals.
pub const FEATURES: usize = 15;
pub const INTERVALS: usize = 10;
/// The short and long monitor intervals, ms.
pub const SHORT_MS: f64 = 60.0;
pub const LONG_MS: f64 = 600.0;
/// Feature 5 subtracts this fixed base delay (ms).
pub const BASE_DELAY_MS: f64 = 200.0;

/// `(start, end]` of interval `j` at anchor `t` (ms).
pub fn interval(anchor_ms: f64, j: usize) -> (f64, f64) {
    let (len, k) = if j < 5 {
        (SHORT_MS, j)
    } else {
        (LONG_MS, j - 5)
    };
    let end = anchor_ms - k as f64 * len;
    (end - len, end)
}

/// What one interval accumulates.
#[derive(Default, Clone, Copy)]
struct Acc {
    packets: u64,
    bytes: u64,
    delay_sum: f64,
    delay_min: f64,
    prev_arrival: Option<f64>,
    gap_sum: f64,
    gap_sq_sum: f64,
    lost: u64,
    loss_events: u64,
    video: u64,
    audio: u64,
    probe: u64,
}

impl Acc {
    fn add(&mut self, p: &Arrival) {
        let d = p.delay_ms();
        self.delay_min = if self.packets == 0 {
            d
        } else {
            self.delay_min.min(d)
        };
        self.packets += 1;
        self.bytes += p.size as u64;
        self.delay_sum += d;
        if let Some(prev) = self.prev_arrival {
            let gap = p.arrival_ms - prev;
            self.gap_sum += gap;
            self.gap_sq_sum += gap * gap;
        }
        self.prev_arrival = Some(p.arrival_ms);
        self.lost += p.lost_before;
        self.loss_events += (p.lost_before > 0) as u64;
        match p.class {
            PacketClass::Video => self.video += 1,
            PacketClass::Audio => self.audio += 1,
            PacketClass::Probe => self.probe += 1,
            PacketClass::Other => {}
        }
    }
}

/// Write the 150 values at anchor `anchor_ms` (receiver clock) into `out`.
pub fn observe(history: &ArrivalHistory, anchor_ms: f64, out: &mut [f32]) {
    assert_eq!(out.len(), LEN, "the mmsys24 observation has {LEN} values");
    let bounds: [(f64, f64); INTERVALS] = std::array::from_fn(|j| interval(anchor_ms, j));
    let mut acc = [Acc::default(); INTERVALS];
    // Minimum delay up to each interval's end: a running minimum in arrival order, read as
    // the walk passes each end.
    let mut running_min = history.forgotten_min_delay_ms();
    let mut min_at_end: [Option<f64>; INTERVALS] = [None; INTERVALS];
    let mut ends: [(f64, usize); INTERVALS] = std::array::from_fn(|j| (bounds[j].1, j));
    ends.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut next_end = 0;
    let oldest_start = anchor_ms - 5.0 * LONG_MS;
    for p in history.packets() {
        while next_end < INTERVALS && p.arrival_ms > ends[next_end].0 {
            min_at_end[ends[next_end].1] = running_min;
            next_end += 1;
        }
        if next_end == INTERVALS {
            break; // past the anchor
        }
        let d = p.delay_ms();
        running_min = Some(running_min.map_or(d, |m: f64| m.min(d)));
        if p.arrival_ms <= oldest_start {
            continue;
        }
        for (j, &(start, end)) in bounds.iter().enumerate() {
            if p.arrival_ms > start && p.arrival_ms <= end {
                acc[j].add(p);
            }
        }
    }
    for &(_, j) in &ends[next_end..] {
        min_at_end[j] = running_min;
    }
    for (j, a) in acc.iter().enumerate() {
        let len_ms = bounds[j].1 - bounds[j].0;
        let min_seen = min_at_end[j].unwrap_or(0.0);
        let n = a.packets as f64;
        let mut f = [0.0f64; FEATURES];
        f[5] = min_seen;
        if a.packets > 0 {
            let mean_delay = a.delay_sum / n;
            f[0] = a.bytes as f64 * 8.0 / (len_ms / 1000.0);
            f[1] = n;
            f[2] = a.bytes as f64;
            f[3] = mean_delay - min_seen;
            f[4] = mean_delay - BASE_DELAY_MS;
            f[6] = if a.delay_min > 0.0 {
                mean_delay / a.delay_min
            } else {
                0.0
            };
            f[7] = mean_delay - a.delay_min;
            if a.packets >= 2 {
                let gaps = n - 1.0;
                let mean_gap = a.gap_sum / gaps;
                f[8] = mean_gap;
                f[9] = (a.gap_sq_sum / gaps - mean_gap * mean_gap).max(0.0).sqrt();
            }
            f[10] = a.lost as f64 / (a.lost as f64 + n);
            if a.loss_events > 0 {
                f[11] = a.lost as f64 / a.loss_events as f64;
            }
            f[12] = a.video as f64 / n;
            f[13] = a.audio as f64 / n;
            f[14] = a.probe as f64 / n;
        }
        for (k, v) in f.iter().enumerate() {
            out[k * INTERVALS + j] = *v as f32;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn history(packets: &[(f64, f64, u32, u64, PacketClass)]) -> ArrivalHistory {
        let mut h = ArrivalHistory::default();
        for &(a, s, size, seq, class) in packets {
            h.push(a, s, size, seq, class);
        }
        h
    }

    fn at(out: &[f32], feature: usize, slot: usize) -> f32 {
        out[(feature - 1) * INTERVALS + slot]
    }

    #[test]
    fn two_packets_in_the_newest_short_interval() {
        // 1000 B at 950 ms (sent 900: 50 ms), 500 B at 990 ms (sent 930: 60 ms), seq 0 then 3.
        let h = history(&[
            (950.0, 900.0, 1000, 0, PacketClass::Video),
            (990.0, 930.0, 500, 3, PacketClass::Probe),
        ]);
        let mut out = [0.0; LEN];
        observe(&h, 1000.0, &mut out);
        assert_eq!(
            at(&out, 1, 0),
            1500.0 * 8.0 / 0.06,
            "rate over the 60 ms interval"
        );
        assert_eq!(at(&out, 2, 0), 2.0);
        assert_eq!(at(&out, 3, 0), 1500.0);
        assert_eq!(at(&out, 4, 0), 5.0, "mean 55 minus the minimum 50");
        assert_eq!(at(&out, 5, 0), 55.0 - 200.0);
        assert_eq!(at(&out, 6, 0), 50.0);
        assert_eq!(at(&out, 7, 0), 55.0 / 50.0);
        assert_eq!(at(&out, 8, 0), 5.0);
        assert_eq!(at(&out, 9, 0), 40.0, "one gap of 40 ms");
        assert_eq!(at(&out, 10, 0), 0.0);
        assert_eq!(
            at(&out, 11, 0),
            2.0 / 4.0,
            "2 lost before seq 3, 2 received"
        );
        assert_eq!(at(&out, 12, 0), 2.0);
        assert_eq!(at(&out, 13, 0), 0.5);
        assert_eq!(at(&out, 15, 0), 0.5);
        // The newest long interval holds the same packets; the older ones are empty but
        // remember no delay (nothing had arrived by their end).
        assert_eq!(at(&out, 1, 5), 1500.0 * 8.0 / 0.6);
        assert_eq!(at(&out, 2, 1), 0.0);
        assert_eq!(at(&out, 6, 1), 0.0, "nothing had arrived by 940 ms");
    }

    #[test]
    fn a_packet_on_a_boundary_belongs_to_the_older_interval() {
        let h = history(&[(940.0, 900.0, 100, 0, PacketClass::Video)]);
        let mut out = [0.0; LEN];
        observe(&h, 1000.0, &mut out);
        assert_eq!(at(&out, 2, 0), 0.0);
        assert_eq!(
            at(&out, 2, 1),
            1.0,
            "(880, 940] holds a packet arriving at 940"
        );
        assert_eq!(
            at(&out, 6, 0),
            40.0,
            "the newest interval still remembers it"
        );
    }

    #[test]
    fn packets_after_the_anchor_are_not_read() {
        let h = history(&[(1010.0, 900.0, 100, 0, PacketClass::Video)]);
        let mut out = [1.0; LEN];
        observe(&h, 1000.0, &mut out);
        assert!(out.iter().all(|&v| v == 0.0), "{out:?}");
    }
}
