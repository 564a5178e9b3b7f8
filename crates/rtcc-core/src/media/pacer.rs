//! The pacer: releases queued media packets no faster than the controller's pacing rate and no
//! more than its congestion window allows, and fills idle time with padding when asked.
//!
//! Pacing is a leaky bucket without burst credit: after a packet of `s` bytes leaves at `t`, the
//! next may leave at `max(t, previous release) + s / pacing_rate`, so an idle period earns no
//! burst. Padding is only sent while no media waits, at the controller's padding rate (and within
//! the same pacing and window limits).

use crate::cc::Decision;
use crate::units::{Rate, Time};
use std::collections::VecDeque;

/// A media packet waiting in the pacer queue.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QueuedPacket {
    pub size: u32,
    pub frame: u64,
    pub index_in_frame: u16,
    pub packets_in_frame: u16,
    pub enqueued: Time,
}

/// What the pacer says when polled.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum PacerPoll {
    /// Send this media packet now.
    Media(QueuedPacket),
    /// Send a padding packet of this many bytes now.
    Padding(u32),
    /// Nothing may leave before this time.
    WaitUntil(Time),
    /// Nothing to send (empty queue and no padding), or the window is full: wait for an event.
    Idle,
}

#[derive(Debug, Default)]
pub struct Pacer {
    queue: VecDeque<QueuedPacket>,
    queued_bytes: u64,
    /// Earliest time the pacing budget allows the next packet.
    next_release: Time,
    /// Earliest time the padding budget allows the next padding packet.
    next_padding: Time,
    padding_size: u32,
}

impl Pacer {
    pub fn new(padding_size: u32) -> Pacer {
        Pacer {
            padding_size,
            ..Default::default()
        }
    }

    pub fn push(&mut self, pkt: QueuedPacket) {
        self.queued_bytes += pkt.size as u64;
        self.queue.push_back(pkt);
    }

    pub fn queued_bytes(&self) -> u64 {
        self.queued_bytes
    }

    pub fn queued_packets(&self) -> usize {
        self.queue.len()
    }

    /// Time the oldest queued packet has waited.
    pub fn oldest_enqueue_time(&self) -> Option<Time> {
        self.queue.front().map(|p| p.enqueued)
    }

    /// Drop everything queued (flow stopped, encoder reset); returns the packets dropped.
    pub fn clear(&mut self) -> usize {
        let n = self.queue.len();
        self.queue.clear();
        self.queued_bytes = 0;
        n
    }

    /// Decide what may leave at `now` given the controller's decision and the bytes in flight.
    /// A returned packet is considered sent: the budgets are charged.
    pub fn poll(&mut self, now: Time, decision: &Decision, in_flight: u64) -> PacerPoll {
        if let Some(cwnd) = decision.cwnd {
            if in_flight >= cwnd {
                return PacerPoll::Idle;
            }
        }
        let pacing = decision.pacing_rate.filter(|r| r.bps() > 0.0);
        if pacing.is_some() && now < self.next_release {
            if self.queue.is_empty() && decision.padding_rate.bps() <= 0.0 {
                return PacerPoll::Idle;
            }
            return PacerPoll::WaitUntil(self.next_release);
        }
        if let Some(pkt) = self.queue.pop_front() {
            self.queued_bytes -= pkt.size as u64;
            self.charge(now, pkt.size, pacing);
            return PacerPoll::Media(pkt);
        }
        let padding = decision.padding_rate;
        if padding.bps() <= 0.0 || self.padding_size == 0 {
            return PacerPoll::Idle;
        }
        if now < self.next_padding {
            return PacerPoll::WaitUntil(self.next_padding);
        }
        self.next_padding =
            self.next_padding.max(now) + padding.transmit_time(self.padding_size as u64);
        self.charge(now, self.padding_size, pacing);
        PacerPoll::Padding(self.padding_size)
    }

    fn charge(&mut self, now: Time, size: u32, pacing: Option<Rate>) {
        if let Some(rate) = pacing {
            self.next_release = self.next_release.max(now) + rate.transmit_time(size as u64);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pkt(size: u32) -> QueuedPacket {
        QueuedPacket {
            size,
            frame: 0,
            index_in_frame: 0,
            packets_in_frame: 1,
            enqueued: Time::ZERO,
        }
    }

    #[test]
    fn paces_at_the_pacing_rate_without_burst_credit() {
        let mut p = Pacer::new(0);
        for _ in 0..3 {
            p.push(pkt(1250));
        }
        // 1250 bytes at 10 Mbps = 1 ms between releases.
        let d = Decision::rate_only(Rate(4e6), Some(Rate(10e6)));
        assert!(matches!(p.poll(Time::ZERO, &d, 0), PacerPoll::Media(_)));
        assert_eq!(
            p.poll(Time::ZERO, &d, 0),
            PacerPoll::WaitUntil(Time::from_millis(1))
        );
        assert!(matches!(
            p.poll(Time::from_millis(1), &d, 0),
            PacerPoll::Media(_)
        ));
        // Idle for a long time earns nothing: the next packet after a pause still spaces 1 ms.
        p.push(pkt(1250));
        assert!(matches!(
            p.poll(Time::from_millis(100), &d, 0),
            PacerPoll::Media(_)
        ));
        assert!(matches!(
            p.poll(Time::from_millis(100), &d, 0),
            PacerPoll::WaitUntil(_)
        ));
    }

    #[test]
    fn window_blocks_and_padding_fills_only_idle_time() {
        let mut p = Pacer::new(200);
        p.push(pkt(1000));
        let mut d = Decision::rate_only(Rate(1e6), None);
        d.cwnd = Some(1000);
        assert_eq!(p.poll(Time::ZERO, &d, 1000), PacerPoll::Idle, "window full");
        assert!(matches!(p.poll(Time::ZERO, &d, 0), PacerPoll::Media(_)));
        d.padding_rate = Rate(1.6e6); // 200 bytes every 1 ms
        assert_eq!(p.poll(Time::ZERO, &d, 0), PacerPoll::Padding(200));
        assert_eq!(
            p.poll(Time::ZERO, &d, 0),
            PacerPoll::WaitUntil(Time::from_millis(1))
        );
        p.push(pkt(500));
        assert!(
            matches!(p.poll(Time::ZERO, &d, 0), PacerPoll::Media(_)),
            "media goes before padding"
        );
    }
}
