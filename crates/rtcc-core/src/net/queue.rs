//! Queues in front of a link, behind one interface.
//!
//! A queue may drop at enqueue (drop-tail) or at dequeue (AQMs such as CoDel drop the head when
//! its sojourn time is too long), so `dequeue` reports its drops. Queues see packets through
//! [`NetPacket`], which gives their size, flow (for fair queueing) and enqueue time.
//!
//! Conservation holds for every queue: enqueued = dequeued + dropped + still queued.

use crate::units::{Bytes, Duration, Rate, Time};
use serde::Serialize;
use std::collections::VecDeque;

/// What a queue needs to know about a packet.
pub trait NetPacket {
    /// Bytes on the wire.
    fn size(&self) -> u32;
    /// Flow the packet belongs to (for per-flow queueing).
    fn flow(&self) -> u32;
}

/// A queue discipline.
pub trait Queue<P>: Send {
    /// Offer a packet; `Err` gives it back if the queue drops it.
    fn enqueue(&mut self, now: Time, pkt: P, link_rate: Rate) -> Result<(), P>;
    /// Take the next packet to transmit; packets dropped on the way out go to `dropped`.
    fn dequeue(&mut self, now: Time, dropped: &mut Vec<P>) -> Option<P>;
    fn len_packets(&self) -> usize;
    fn len_bytes(&self) -> u64;
    fn is_empty(&self) -> bool {
        self.len_packets() == 0
    }
}

/// A queue's capacity as written in a scenario: `"100pkts"`, `"150KB"`, `"120ms"` (of the link's
/// current rate) or `"unlimited"`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub enum QueueLimit {
    Packets(u64),
    Bytes(u64),
    Time(Duration),
    Unlimited,
}

impl QueueLimit {
    pub fn parse(input: &str) -> Result<QueueLimit, String> {
        let s = input.trim();
        if s == "unlimited" {
            return Ok(QueueLimit::Unlimited);
        }
        for suffix in ["pkts", "packets", "pkt"] {
            if let Some(n) = s.strip_suffix(suffix) {
                return n.trim().parse::<u64>().map(QueueLimit::Packets).map_err(|_| {
                    format!("invalid queue limit {input:?}: the packet count must be a whole number")
                });
            }
        }
        if s.ends_with('s') {
            return Duration::parse(s)
                .map(QueueLimit::Time)
                .map_err(|e| e.to_string());
        }
        if s.ends_with('B') {
            return Bytes::parse(s)
                .map(|b| QueueLimit::Bytes(b.0))
                .map_err(|e| e.to_string());
        }
        Err(format!(
            "invalid queue limit {input:?}: expected packets (\"100pkts\"), bytes (\"150KB\"), \
             time at the link's rate (\"120ms\") or \"unlimited\""
        ))
    }

    /// Whether a queue holding `packets`/`bytes` has room for `size` more bytes.
    /// A time limit is converted at `link_rate`, and never below one full-size packet (1500
    /// bytes), so a link in an outage still queues one packet rather than dropping everything.
    pub fn admits(&self, packets: usize, bytes: u64, size: u32, link_rate: Rate) -> bool {
        match *self {
            QueueLimit::Unlimited => true,
            QueueLimit::Packets(n) => (packets as u64) < n,
            QueueLimit::Bytes(b) => bytes + size as u64 <= b,
            QueueLimit::Time(d) => {
                let limit = link_rate.bytes_in(d).max(1500.0);
                (bytes + size as u64) as f64 <= limit
            }
        }
    }
}

impl<'de> serde::Deserialize<'de> for QueueLimit {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        QueueLimit::parse(&s).map_err(serde::de::Error::custom)
    }
}

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
pub(crate) mod tests {
    use super::*;
    use proptest::prelude::*;

    #[derive(Debug, Clone, Copy, PartialEq)]
    pub struct P(pub u32, pub u32);
    impl NetPacket for P {
        fn size(&self) -> u32 {
            self.0
        }
        fn flow(&self) -> u32 {
            self.1
        }
    }

    #[test]
    fn parses_limits() {
        assert_eq!(
            QueueLimit::parse("100pkts").unwrap(),
            QueueLimit::Packets(100)
        );
        assert_eq!(
            QueueLimit::parse("150KB").unwrap(),
            QueueLimit::Bytes(150_000)
        );
        assert_eq!(
            QueueLimit::parse("120ms").unwrap(),
            QueueLimit::Time(Duration::from_millis(120))
        );
        assert_eq!(
            QueueLimit::parse("unlimited").unwrap(),
            QueueLimit::Unlimited
        );
        let e = QueueLimit::parse("120").unwrap_err();
        assert!(e.contains("pkts") && e.contains("ms"), "{e}");
        assert!(QueueLimit::parse("1.5pkts").is_err());
    }

    #[test]
    fn time_limit_follows_the_link_rate() {
        // 100 ms at 1 Mbps = 12 500 bytes.
        let l = QueueLimit::Time(Duration::from_millis(100));
        assert!(l.admits(0, 11_000, 1500, Rate(1e6)));
        assert!(!l.admits(0, 11_001, 1500, Rate(1e6)));
        assert!(
            l.admits(0, 0, 1500, Rate(0.0)),
            "an outage still queues one packet"
        );
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
    }
}
