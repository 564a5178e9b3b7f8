//! Drop-tail: first in, first out; an arrival that does not fit is dropped.
//!
//! The limit is a [`QueueLimit`]: packets (Linux `pfifo`, and the default `txqueuelen` of 1000
//! packets), bytes (`bfifo`), or a time converted at the link's current rate (so a "300 ms"
//! buffer follows a varying link), or none.

use super::{NetPacket, Queue, QueueLimit};
use crate::units::{Rate, Time};
use std::collections::VecDeque;

/// First in, first out; arrivals that do not fit are dropped.
pub struct DropTail<P> {
    limit: QueueLimit,
    packets: VecDeque<P>,
    bytes: u64,
}

impl<P> DropTail<P> {
    pub fn new(limit: QueueLimit) -> Self {
        DropTail {
            limit,
            packets: VecDeque::new(),
            bytes: 0,
        }
    }

    pub fn limit(&self) -> QueueLimit {
        self.limit
    }
}

impl<P: NetPacket + Send> Queue<P> for DropTail<P> {
    fn enqueue(&mut self, _now: Time, pkt: P, link_rate: Rate) -> Result<(), P> {
        if !self
            .limit
            .admits(self.packets.len(), self.bytes, pkt.size(), link_rate)
        {
            return Err(pkt);
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
    use super::super::tests::{check_conservation, ops, P};
    use super::*;
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
        ]) {
            check_conservation(&mut DropTail::new(limit), &ops)?;
        }
    }
}
