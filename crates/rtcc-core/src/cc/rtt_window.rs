//! RTT helpers shared by the delay-based window controllers (`copa`, `rocc`): one RTT sample per
//! acknowledged packet, and windowed minimum / maximum filters over those samples.
//!
//! Per-packet samples. Copa (Arun & Balakrishnan, NSDI 2018, §2.1: "on every ACK") and RoCC
//! (the Linux module that accompanies CCmatic, HotNets 2022) read one RTT per acknowledgement.
//! The TCP endpoint acknowledges every packet (or every second one), but a video receiver sends
//! one transport-feedback report per interval or frame, and `feedback arrival − send time` then
//! also counts how long each packet waited for the report. That wait is known exactly from the
//! receiver's own clock: the report was built after its newest packet arrived, so a packet
//! received `d` earlier (receiver clock) waited `d` longer. The sample of packet `i` is
//!
//! ```text
//! rtt_i = (feedback_time − send_i) − (recv_newest − recv_i)
//! ```
//!
//! which is the packet's forward delay plus the report's reverse delay: what a per-packet ACK
//! sent on arrival would have measured, up to the receiver's report-building time. Only
//! differences of receive times are used, so an offset between the two clocks does not matter
//! (`packet.rs`). With one packet per report it is `feedback_time − send_time`, the TCP sample.
//! The sample is dated `send_i + rtt_i`, when that ACK would have arrived. The raw
//! `feedback_time − send_i` is kept as well (`held`): it is how long the packet occupied the
//! window, which is what a window-limited sender's rate depends on (`cwnd / held`). Within a
//! report the newest packets have waited least, so a per-packet EWMA read after the report
//! leans toward them; [`mean_held`] gives the report's byte-weighted mean instead, one sample
//! per report.
//!
//! Windowed extremes. Copa's `RTTstanding` (minimum over the last srtt/2), `RTTmin` (minimum
//! over 10 s) and its mode switch's `RTTmax` (maximum over the last four RTTs) are minima and
//! maxima over sliding time windows whose length may change from sample to sample. They are
//! kept exactly with a monotone deque (as genericCC's `ExtremeWindow` in `rtt-window.cc`
//! does): a new sample evicts the older samples it dominates, and samples older than the window
//! are dropped from the front, so the front is always the extreme of the window. The newest
//! sample is never dropped, so the filter is never empty once fed.

use crate::packet::FeedbackReport;
use crate::units::{Duration, Time};
use std::collections::VecDeque;

/// One acknowledged packet's RTT sample.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct RttSample {
    /// Sender clock at which a per-packet ACK would have arrived (`send + rtt`).
    pub at: Time,
    pub rtt: Duration,
    pub seq: u64,
    pub size: u32,
    /// Receiver clock at which the packet arrived.
    pub received: Time,
    /// `feedback_time − send_time`: how long the packet held its place in the window, report
    /// wait included.
    pub held: Duration,
}

/// The RTT samples of the packets a report acknowledges, in report order.
pub(crate) fn rtt_samples(report: &FeedbackReport, out: &mut Vec<RttSample>) {
    out.clear();
    let Some(newest) = report.packets.iter().filter_map(|p| p.receive_time).max() else {
        return;
    };
    for p in &report.packets {
        let Some(received) = p.receive_time else {
            continue;
        };
        let raw = report.feedback_time - p.sent.send_time;
        let waited = newest - received;
        let rtt = Duration(raw.0.saturating_sub(waited.0).max(1));
        out.push(RttSample {
            at: p.sent.send_time + rtt,
            rtt,
            seq: p.sent.seq,
            size: p.sent.size,
            received,
            held: raw,
        });
    }
}

/// Byte-weighted mean `held` time of a report's samples.
pub(crate) fn mean_held(samples: &[RttSample]) -> Option<Duration> {
    let bytes: u128 = samples.iter().map(|s| s.size as u128).sum();
    if bytes == 0 {
        return None;
    }
    let sum: u128 = samples
        .iter()
        .map(|s| s.held.0 as u128 * s.size as u128)
        .sum();
    Some(Duration((sum / bytes) as u64))
}

/// Minimum or maximum of the samples of a sliding time window.
#[derive(Debug, Clone)]
pub(crate) struct WindowedExtreme {
    keep_min: bool,
    /// Monotone from front (the extreme) to back (the newest sample).
    q: VecDeque<(Time, Duration)>,
}

impl WindowedExtreme {
    pub fn min() -> Self {
        WindowedExtreme {
            keep_min: true,
            q: VecDeque::new(),
        }
    }

    pub fn max() -> Self {
        WindowedExtreme {
            keep_min: false,
            q: VecDeque::new(),
        }
    }

    /// Add a sample taken at `at` and forget samples older than `at − window`.
    pub fn update(&mut self, at: Time, v: Duration, window: Duration) {
        let dominated = |old: Duration| {
            if self.keep_min {
                old >= v
            } else {
                old <= v
            }
        };
        while self.q.back().is_some_and(|&(_, old)| dominated(old)) {
            self.q.pop_back();
        }
        self.q.push_back((at, v));
        self.expire(at, window);
    }

    /// Forget samples older than `now − window` (the newest one always stays).
    pub fn expire(&mut self, now: Time, window: Duration) {
        while self.q.len() > 1 && self.q.front().is_some_and(|&(t, _)| t + window < now) {
            self.q.pop_front();
        }
    }

    pub fn get(&self) -> Option<Duration> {
        self.q.front().map(|&(_, v)| v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::{PacketKind, PacketResult, SentPacket};

    fn ms(x: u64) -> Duration {
        Duration::from_millis(x)
    }

    #[test]
    fn the_minimum_follows_its_window_exactly() {
        let mut f = WindowedExtreme::min();
        let w = ms(100);
        f.update(Time::from_millis(0), ms(50), w);
        f.update(Time::from_millis(40), ms(70), w);
        f.update(Time::from_millis(80), ms(60), w);
        assert_eq!(f.get(), Some(ms(50)));
        // At 101 ms the 0 ms sample has left; 70 was evicted by the later 60.
        f.update(Time::from_millis(101), ms(90), w);
        assert_eq!(f.get(), Some(ms(60)));
        // A shorter window applies from the next sample on.
        f.update(Time::from_millis(200), ms(95), ms(10));
        assert_eq!(f.get(), Some(ms(95)));
        // A sample exactly `window` old is still inside.
        f.update(Time::from_millis(210), ms(99), ms(10));
        assert_eq!(f.get(), Some(ms(95)));
    }

    #[test]
    fn the_maximum_is_the_mirror_image() {
        let mut f = WindowedExtreme::max();
        let w = ms(100);
        f.update(Time::from_millis(0), ms(50), w);
        f.update(Time::from_millis(50), ms(40), w);
        assert_eq!(f.get(), Some(ms(50)));
        f.update(Time::from_millis(120), ms(45), w);
        assert_eq!(
            f.get(),
            Some(ms(45)),
            "50 left at 100 ms, 40 was evicted by 45"
        );
    }

    #[test]
    fn batched_feedback_yields_per_packet_samples() {
        // Three packets sent 1 ms apart, each with a 30 ms forward delay, reported together
        // 10 ms after the last one arrived (receiver clock 1 s ahead): every sample is 40 ms.
        let pkt = |seq: u64| PacketResult {
            sent: SentPacket {
                seq,
                size: 1200,
                send_time: Time::from_millis(seq),
                frame: None,
                index_in_frame: 0,
                packets_in_frame: 0,
                kind: PacketKind::Media,
                in_flight: 0,
            },
            receive_time: Some(Time::from_millis(1000 + seq + 30)),
            ecn: crate::packet::Ecn::NotEct,
        };
        let mut lost = pkt(3);
        lost.receive_time = None;
        let report = FeedbackReport {
            feedback_time: Time::from_millis(2 + 40),
            packets: vec![pkt(0), pkt(1), pkt(2), lost],
            in_flight: 0,
            recovery: None,
        };
        let mut out = vec![];
        rtt_samples(&report, &mut out);
        assert_eq!(out.len(), 3);
        for (i, s) in out.iter().enumerate() {
            assert_eq!(s.rtt, ms(40));
            assert_eq!(s.at, Time::from_millis(i as u64 + 40));
            assert_eq!(s.held, ms(42 - i as u64));
        }
        assert_eq!(mean_held(&out), Some(ms(41)));
    }
}
