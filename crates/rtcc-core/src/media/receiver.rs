//! The receiver's record of packet arrivals, from which it builds transport-wide feedback.
//!
//! Feedback follows transport-wide congestion control: a report covers every transport-wide
//! sequence number from the first not yet reported to the highest received, each with its
//! receive time (receiver clock) or "not received" (inside one flow packets are never reordered,
//! so a gap is a loss). Arrivals older than what was already reported are ignored.

use crate::packet::{Ecn, TransportFeedback};
use crate::units::Time;
use std::collections::VecDeque;

#[derive(Debug, Default, Clone)]
pub struct ArrivalRecorder {
    /// Receive times from `report_from` on (None = not (yet) received).
    pending: VecDeque<Option<Time>>,
    /// The ECN codepoint of each entry of `pending` (Not-ECT where nothing arrived), kept only
    /// once an ECN-capable packet has arrived: until then it stays empty and reports carry no
    /// codepoints, so a flow without ECN pays nothing per packet.
    pending_ecn: VecDeque<Ecn>,
    /// Some packet arrived ECN-capable: reports carry the codepoints (RFC 8888 style).
    ecn_seen: bool,
    report_from: u64,
    started: bool,
}

impl ArrivalRecorder {
    pub fn new() -> ArrivalRecorder {
        ArrivalRecorder::default()
    }

    /// Transport-wide sequence number `seq` arrived at `now` (receiver clock). The first
    /// arrival starts the record (a receiver joining a stream does not report what came before).
    pub fn on_packet(&mut self, now: Time, seq: u64) {
        self.on_packet_with_ecn(now, seq, Ecn::NotEct);
    }

    /// [`ArrivalRecorder::on_packet`] for a packet that arrived with the ECN codepoint `ecn`
    /// (the IP header's, as the receiver's socket reports it).
    pub fn on_packet_with_ecn(&mut self, now: Time, seq: u64, ecn: Ecn) {
        if !self.started {
            self.started = true;
            self.report_from = seq;
        }
        if seq < self.report_from {
            return;
        }
        let idx = (seq - self.report_from) as usize;
        if idx == self.pending.len() {
            self.pending.push_back(Some(now)); // the usual case: the next number
        } else {
            if idx > self.pending.len() {
                self.pending.resize(idx + 1, None);
            }
            self.pending[idx] = Some(now);
        }
        self.ecn_seen |= ecn.is_ecn_capable();
        if self.ecn_seen {
            self.pending_ecn.resize(self.pending.len(), Ecn::NotEct);
            self.pending_ecn[idx] = ecn;
        }
    }

    /// The first sequence number the next report covers, once something arrived: an arrival
    /// below it comes after its number was reported missing.
    pub fn reports_from(&self) -> Option<u64> {
        self.started.then_some(self.report_from)
    }

    /// Whether something not yet reported is missing (a later packet arrived first): a TCP
    /// receiver acknowledges at once then (RFC 5681 §4.2).
    pub fn has_gap(&self) -> bool {
        self.pending.iter().any(|r| r.is_none())
    }

    /// Whether a report would carry anything.
    pub fn has_feedback(&self) -> bool {
        !self.pending.is_empty()
    }

    /// Build a report of everything up to the highest received sequence number.
    pub fn build_feedback(&mut self) -> Option<TransportFeedback> {
        // pending always ends with a received packet (it only grows on arrivals).
        if self.pending.is_empty() {
            return None;
        }
        let receive_times = take_all(&mut self.pending);
        let ecn = take_all(&mut self.pending_ecn);
        let base_seq = self.report_from;
        self.report_from += receive_times.len() as u64;
        Some(TransportFeedback {
            base_seq,
            receive_times,
            ecn,
            ecn_echo: false,
        })
    }
}

/// Everything `q` holds, in order, leaving it empty (with its room): its two halves copied
/// whole, where a drain moves one entry at a time.
fn take_all<T: Copy>(q: &mut VecDeque<T>) -> Vec<T> {
    let (front, back) = q.as_slices();
    let all = [front, back].concat();
    q.clear();
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_gaps_as_losses_once() {
        let mut r = ArrivalRecorder::new();
        r.on_packet(Time(1010), 0);
        r.on_packet(Time(1020), 1);
        r.on_packet(Time(1040), 3);
        assert!(r.has_gap());
        let fb = r.build_feedback().unwrap();
        assert_eq!(fb.base_seq, 0);
        assert_eq!(
            fb.receive_times,
            vec![Some(Time(1010)), Some(Time(1020)), None, Some(Time(1040))]
        );
        assert!(r.build_feedback().is_none(), "nothing new to report");
        r.on_packet(Time(1050), 2);
        assert!(
            r.build_feedback().is_none(),
            "a packet already reported lost stays so"
        );
        r.on_packet(Time(1060), 4);
        let fb = r.build_feedback().unwrap();
        assert_eq!(fb.base_seq, 4);
        assert!(
            fb.ecn.is_empty(),
            "no ECN-capable arrival: no codepoints reported"
        );
    }

    #[test]
    fn reports_the_ecn_codepoint_of_each_arrival() {
        let mut r = ArrivalRecorder::new();
        r.on_packet_with_ecn(Time(10), 0, Ecn::Ect0);
        r.on_packet_with_ecn(Time(30), 2, Ecn::Ce);
        r.on_packet_with_ecn(Time(20), 1, Ecn::Ect0);
        let fb = r.build_feedback().unwrap();
        assert_eq!(fb.ecn, vec![Ecn::Ect0, Ecn::Ect0, Ecn::Ce]);
        r.on_packet_with_ecn(Time(50), 4, Ecn::Ce);
        let fb = r.build_feedback().unwrap();
        assert_eq!(fb.receive_times, vec![None, Some(Time(50))]);
        assert_eq!(fb.ecn, vec![Ecn::NotEct, Ecn::Ce]);
    }
}
