//! Drop-tail: first in, first out; an arrival that does not fit is dropped.
//!
//! The limit is a [`QueueLimit`]: packets (Linux `pfifo`, and the default `txqueuelen` of 1000
//! packets), bytes (`bfifo`), or a time converted at the link's current rate (so a "300 ms"
//! buffer follows a varying link), or none.
//!
//! # ECN: a marking threshold (RFC 3168 §5; the step marking of DCTCP, RFC 8257 §3.1)
//!
//! With a `mark_threshold` (a [`QueueLimit`] too, default none), an ECN-capable arrival that
//! takes the queue past the threshold is accepted with CE set, the instantaneous-queue step of
//! DCTCP's "K" (RFC 8257 §3.1: "mark ... if the queue occupancy is greater than K upon its
//! arrival"; in Linux, RED with `min = max` and `ecn`). Precisely: it is marked when the threshold
//! would refuse it as a limit: a packet threshold of K marks arrivals that find K or more packets
//! queued, a byte threshold those that take the backlog above it, and a time threshold those
//! whose backlog (with the arrival) takes longer than that to send at the link's current rate,
//! the queueing delay the arrival will see. Not-ECT arrivals are never marked and never dropped
//! early: every packet, ECT or not, is dropped only when the queue is full (`limit`).

use super::{NetPacket, Queue, QueueLimit};
use crate::units::{Rate, Time};
use std::collections::VecDeque;

/// First in, first out; arrivals that do not fit are dropped.
pub struct DropTail<P> {
    limit: QueueLimit,
    mark_threshold: Option<QueueLimit>,
    packets: VecDeque<P>,
    bytes: u64,
    ecn_marks: u64,
}

impl<P> DropTail<P> {
    pub fn new(limit: QueueLimit) -> Self {
        DropTail {
            limit,
            mark_threshold: None,
            packets: VecDeque::new(),
            bytes: 0,
            ecn_marks: 0,
        }
    }

    /// Mark ECN-capable arrivals that take the queue past `threshold` (see the module
    /// documentation); `None`: never mark.
    pub fn with_mark_threshold(mut self, threshold: Option<QueueLimit>) -> Self {
        self.mark_threshold = threshold;
        self
    }

    pub fn limit(&self) -> QueueLimit {
        self.limit
    }

    pub fn mark_threshold(&self) -> Option<QueueLimit> {
        self.mark_threshold
    }

    /// Arrivals marked CE.
    pub fn ecn_marks(&self) -> u64 {
        self.ecn_marks
    }
}

impl<P: NetPacket + Send> Queue<P> for DropTail<P> {
    fn enqueue(&mut self, _now: Time, mut pkt: P, link_rate: Rate) -> Result<(), P> {
        let (queued, bytes, size) = (self.packets.len(), self.bytes, pkt.size());
        if !self.limit.admits(queued, bytes, size, link_rate) {
            return Err(pkt);
        }
        if let Some(threshold) = self.mark_threshold {
            if !threshold.admits(queued, bytes, size, link_rate) && pkt.set_ce() {
                self.ecn_marks += 1;
            }
        }
        self.bytes += pkt.size() as u64;
        self.packets.push_back(pkt);
        Ok(())
    }
    fn dequeue(&mut self, _now: Time, _dropped: &mut Vec<P>) -> Option<P> {
        let p = self.packets.pop_front()?;
        self.bytes -= p.size() as u64;
        Some(p)
    }
    fn len_packets(&self) -> usize {
        self.packets.len()
    }
    fn len_bytes(&self) -> u64 {
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{check_conservation, ops, Tp, P};
    use super::*;
    use crate::packet::Ecn;
    use crate::units::Duration;
    use proptest::prelude::*;

    #[test]
    fn serves_in_order_and_refuses_what_does_not_fit() {
        let mut q = DropTail::new(QueueLimit::Bytes(2500));
        let r = Rate(1e6);
        assert!(q.enqueue(Time::ZERO, P(1000, 0), r).is_ok());
        assert!(q.enqueue(Time::ZERO, P(1000, 1), r).is_ok());
        assert_eq!(q.enqueue(Time::ZERO, P(1000, 2), r), Err(P(1000, 2)));
        assert!(q.enqueue(Time::ZERO, P(500, 3), r).is_ok());
        let mut d = Vec::new();
        let order: Vec<u32> = std::iter::from_fn(|| q.dequeue(Time::ZERO, &mut d))
            .map(|p| p.1)
            .collect();
        assert_eq!(order, vec![0, 1, 3]);
        assert!(d.is_empty());
    }

    #[test]
    fn marks_ect_arrivals_past_the_threshold_and_drops_only_when_full() {
        // Threshold 3 packets, limit 5: arrivals that find 3 or 4 packets queued are marked if
        // ECT; the sixth arrival is dropped, ECT or not.
        let mut q =
            DropTail::new(QueueLimit::Packets(5)).with_mark_threshold(Some(QueueLimit::Packets(3)));
        let r = Rate(1e6);
        let tp = |id: u64, ecn| Tp {
            id,
            size: 1000,
            flow: 0,
            ecn,
        };
        let codepoints = [
            Ecn::Ect0,
            Ecn::Ect0,
            Ecn::Ect0,
            Ecn::Ect0,
            Ecn::NotEct,
            Ecn::Ect0,
        ];
        let mut refused = Vec::new();
        for (id, &ecn) in codepoints.iter().enumerate() {
            if let Err(p) = q.enqueue(Time::ZERO, tp(id as u64, ecn), r) {
                refused.push(p.id);
            }
        }
        assert_eq!(
            refused,
            vec![5],
            "only the arrival that finds the queue full"
        );
        let mut d = Vec::new();
        let out: Vec<Ecn> = std::iter::from_fn(|| q.dequeue(Time::ZERO, &mut d))
            .map(|p| p.ecn)
            .collect();
        assert_eq!(
            out,
            vec![Ecn::Ect0, Ecn::Ect0, Ecn::Ect0, Ecn::Ce, Ecn::NotEct],
            "the fourth arrival found 3 queued: marked; the fifth is Not-ECT: unmarked"
        );
        assert_eq!(q.ecn_marks(), 1);
    }

    #[test]
    fn a_time_threshold_follows_the_link_rate() {
        // 10 ms at 1 Mbit/s = 1250 bytes: a 1000-byte arrival behind 1000 bytes is marked,
        // one into an empty queue is not; at 2 Mbit/s (2500 bytes) neither is.
        let threshold = Some(QueueLimit::Time(Duration::from_millis(10)));
        for (rate, expect) in [(1e6, vec![false, true]), (2e6, vec![false, false])] {
            let mut q = DropTail::new(QueueLimit::Unlimited).with_mark_threshold(threshold);
            for id in 0..2 {
                let p = Tp {
                    id,
                    size: 1000,
                    flow: 0,
                    ecn: Ecn::Ect1,
                };
                q.enqueue(Time::ZERO, p, Rate(rate)).unwrap();
            }
            let mut d = Vec::new();
            let marked: Vec<bool> = std::iter::from_fn(|| q.dequeue(Time::ZERO, &mut d))
                .map(|p| p.ecn.is_ce())
                .collect();
            assert_eq!(marked, expect, "{rate} bit/s");
        }
    }

    proptest! {
        #[test]
        fn droptail_conserves_packets(ops in proptest::collection::vec((any::<bool>(), 1u32..1500), 1..400),
                                      limit in 1u64..50) {
            let mut q = DropTail::new(QueueLimit::Packets(limit));
            let (mut enq, mut deq, mut dropped) = (0usize, 0usize, 0usize);
            let mut out = Vec::new();
            for (push, size) in ops {
                if push {
                    enq += 1;
                    if q.enqueue(Time::ZERO, P(size, 0), Rate(1e6)).is_err() { dropped += 1; }
                } else if q.dequeue(Time::ZERO, &mut out).is_some() { deq += 1; }
                prop_assert!(q.len_packets() as u64 <= limit);
            }
            prop_assert_eq!(enq, deq + dropped + out.len() + q.len_packets());
        }

        #[test]
        fn droptail_conserves_packets_and_bytes(ops in ops(), limit in prop_oneof![
            (1u64..60).prop_map(QueueLimit::Packets),
            (1u64..60_000).prop_map(QueueLimit::Bytes),
            (1u64..200).prop_map(|ms| QueueLimit::Time(Duration::from_millis(ms))),
        ], threshold in proptest::option::of((1u64..40).prop_map(QueueLimit::Packets))) {
            check_conservation(&mut DropTail::new(limit).with_mark_threshold(threshold), &ops)?;
        }
    }
}
