//! The pacer: releases queued media packets no faster than the controller's pacing rate and no
//! more than its congestion window allows, and fills idle time with padding when asked.
//!
//! Pacing is a leaky bucket without burst credit: after a packet of `s` bytes leaves at `t`, the
//! next may leave at `max(t, previous release) + s / pacing_rate`, so an idle period earns no
//! burst. Padding is only sent while no media waits, at the controller's padding rate (and within
//! the same pacing and window limits).
//!
//! Probing: while the controller asks for a [`ProbeCluster`] the pacer has not finished, every
//! packet leaves on the cluster's schedule instead of the pacing rate (libwebrtc's
//! `BitrateProber`: the k-th packet at `start + (bytes before it) / rate`), queued media first and
//! padding of the cluster's size when no media waits, until the cluster is complete. Probe packets
//! are charged to the pacing budget like any other, so media resumes at the pacing rate after the
//! burst. The window still applies.
//!
//! Retransmissions and FEC packets wait in a priority lane that is served before queued media (as
//! libwebrtc's `PacketRouter`/pacer priorities put retransmissions and FEC ahead of video); they are
//! paced and windowed like media, so they count in the rate and the window the controller sets.

use crate::cc::{Decision, ProbeCluster};
use crate::packet::PacketKind;
use crate::units::{Duration, Rate, Time};
use std::collections::VecDeque;

/// A media packet waiting in the pacer queue.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QueuedPacket {
    pub size: u32,
    pub frame: u64,
    pub index_in_frame: u16,
    pub packets_in_frame: u16,
    pub enqueued: Time,
    /// `Media`, `Retransmission` or `Fec` (the latter two go in the priority lane).
    pub kind: PacketKind,
    /// For a retransmission, the RTP sequence number it repeats; for FEC, the sender's id of
    /// the parity packet; 0 for media.
    pub ref_id: u64,
}

impl QueuedPacket {
    /// A media packet of `frame`.
    pub fn media(size: u32, frame: u64, index: u16, count: u16, enqueued: Time) -> QueuedPacket {
        QueuedPacket {
            size,
            frame,
            index_in_frame: index,
            packets_in_frame: count,
            enqueued,
            kind: PacketKind::Media,
            ref_id: 0,
        }
    }
}

/// What the pacer says when polled.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum PacerPoll {
    /// Send this media packet now.
    Media(QueuedPacket),
    /// Send a padding packet of this many bytes now.
    Padding(u32),
    /// Send a packet of probe cluster `cluster` now: the media packet if there is one, else a
    /// padding packet of `size` bytes (`size` is the media packet's size otherwise).
    Probe {
        cluster: u32,
        media: Option<QueuedPacket>,
        size: u32,
    },
    /// Nothing may leave before this time.
    WaitUntil(Time),
    /// Nothing to send (empty queue and no padding), or the window is full: wait for an event.
    Idle,
}

#[derive(Debug, Default)]
pub struct Pacer {
    /// Retransmissions and FEC first (the first `priority` packets), then media.
    queue: VecDeque<QueuedPacket>,
    priority: usize,
    queued_bytes: u64,
    /// Sum of the queued packets' enqueue times (ns), for their average wait.
    enqueued_sum: u128,
    /// Earliest time the pacing budget allows the next packet.
    next_release: Time,
    /// Earliest time the padding budget allows the next padding packet.
    next_padding: Time,
    padding_size: u32,
    /// The probe cluster being sent, if any.
    probe: Option<ProbeProgress>,
    /// Clusters with ids below this one are complete (ids only grow).
    probes_done_below: u32,
}

#[derive(Debug, Clone, Copy)]
struct ProbeProgress {
    id: u32,
    start: Time,
    bytes: u64,
    packets: u32,
}

impl Pacer {
    pub fn new(padding_size: u32) -> Pacer {
        Pacer {
            padding_size,
            ..Default::default()
        }
    }

    /// Queue a packet: media at the back of the media queue, retransmissions and FEC at the
    /// back of the priority lane.
    pub fn push(&mut self, pkt: QueuedPacket) {
        self.queued_bytes += pkt.size as u64;
        self.enqueued_sum += pkt.enqueued.0 as u128;
        match pkt.kind {
            PacketKind::Retransmission | PacketKind::Fec => {
                self.queue.insert(self.priority, pkt);
                self.priority += 1;
            }
            _ => self.queue.push_back(pkt),
        }
    }

    /// The next packet to leave: the priority lane first.
    fn pop_next(&mut self) -> Option<QueuedPacket> {
        let p = self.queue.pop_front()?;
        self.priority = self.priority.saturating_sub(1);
        self.queued_bytes -= p.size as u64;
        self.enqueued_sum -= p.enqueued.0 as u128;
        Some(p)
    }

    pub fn queued_bytes(&self) -> u64 {
        self.queued_bytes
    }

    pub fn queued_packets(&self) -> usize {
        self.queue.len()
    }

    /// How long the queued packets have waited on average (libwebrtc's
    /// `PrioritizedPacketQueue::AverageQueueTime`).
    pub fn average_queue_time(&self, now: Time) -> Duration {
        match self.queue.len() {
            0 => Duration::ZERO,
            n => {
                // The sum of enqueue times fits 64 bits (584 years of nanoseconds) unless the
                // queue holds millions of packets in an hour-long run; only then the slower
                // 128-bit division, which gives the same quotient.
                let mean = match u64::try_from(self.enqueued_sum) {
                    Ok(sum) => sum / n as u64,
                    Err(_) => (self.enqueued_sum / n as u128) as u64,
                };
                Duration(now.0.saturating_sub(mean))
            }
        }
    }

    /// When the oldest queued media packet was queued.
    pub fn oldest_enqueue_time(&self) -> Option<Time> {
        self.queue.get(self.priority).map(|p| p.enqueued)
    }

    /// Drop everything queued (flow stopped, encoder reset); returns the packets dropped.
    pub fn clear(&mut self) -> usize {
        let n = self.queue.len();
        self.queue.clear();
        self.priority = 0;
        self.queued_bytes = 0;
        self.enqueued_sum = 0;
        n
    }

    /// Decide what may leave at `now` given the controller's decision and the bytes in flight.
    /// A returned packet is considered sent: the budgets are charged.
    pub fn poll(&mut self, now: Time, decision: &Decision, in_flight: u64) -> PacerPoll {
        self.poll_with_probe(now, decision, None, in_flight)
    }

    /// [`Pacer::poll`] while the controller may be asking for a probe cluster.
    pub fn poll_with_probe(
        &mut self,
        now: Time,
        decision: &Decision,
        probe: Option<&ProbeCluster>,
        in_flight: u64,
    ) -> PacerPoll {
        if let Some(cwnd) = decision.cwnd {
            if in_flight >= cwnd {
                return PacerPoll::Idle;
            }
        }
        let pacing = decision.pacing_rate.filter(|r| r.bps() > 0.0);
        if let Some(c) = probe {
            if c.id >= self.probes_done_below && c.rate.bps() > 0.0 {
                return self.poll_probe(now, c, pacing);
            }
        }
        if pacing.is_some() && now < self.next_release {
            if self.queue.is_empty() && decision.padding_rate.bps() <= 0.0 {
                return PacerPoll::Idle;
            }
            return PacerPoll::WaitUntil(self.next_release);
        }
        if let Some(pkt) = self.pop_next() {
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

    /// The next packet of cluster `c`, or when it may leave.
    fn poll_probe(&mut self, now: Time, c: &ProbeCluster, pacing: Option<Rate>) -> PacerPoll {
        let mut p = match self.probe {
            Some(p) if p.id == c.id => p,
            _ => ProbeProgress {
                id: c.id,
                start: now,
                bytes: 0,
                packets: 0,
            },
        };
        let due = p.start + c.rate.transmit_time(p.bytes);
        if now < due {
            self.probe = Some(p);
            return PacerPoll::WaitUntil(due);
        }
        let media = self.pop_next();
        let size = match &media {
            Some(m) => m.size,
            None => c.padding_size.max(1),
        };
        p.bytes += size as u64;
        p.packets += 1;
        self.charge(now, size, pacing);
        if c.is_complete(p.bytes, p.packets) {
            self.probes_done_below = c.id + 1;
            self.probe = None;
        } else {
            self.probe = Some(p);
        }
        PacerPoll::Probe {
            cluster: c.id,
            media,
            size,
        }
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
        QueuedPacket::media(size, 0, 0, 1, Time::ZERO)
    }

    #[test]
    fn retransmissions_and_fec_go_before_queued_media() {
        let mut p = Pacer::new(0);
        p.push(pkt(1000));
        let rtx = QueuedPacket {
            kind: PacketKind::Retransmission,
            ref_id: 7,
            ..pkt(900)
        };
        p.push(rtx);
        let d = Decision::rate_only(Rate(1e6), None);
        assert_eq!(
            p.poll(Time::ZERO, &d, 0),
            PacerPoll::Media(rtx),
            "a retransmission jumps the media queue"
        );
        assert_eq!(p.queued_bytes(), 1000);
        assert!(matches!(p.poll(Time::ZERO, &d, 0), PacerPoll::Media(m) if m.size == 1000));
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

    #[test]
    fn a_probe_cluster_goes_at_its_own_rate_media_first_then_padding_and_only_once() {
        let mut p = Pacer::new(1200);
        p.push(pkt(1000));
        // Pacing at 1 Mbps would space 1000-byte packets 8 ms apart; the probe runs at 4 Mbps.
        let d = Decision::rate_only(Rate(0.4e6), Some(Rate(1e6)));
        let mut c = ProbeCluster {
            id: 0,
            rate: Rate(4e6),
            min_bytes: 2000,
            min_packets: 3,
            padding_size: 500,
        };
        let media = match p.poll_with_probe(Time::ZERO, &d, Some(&c), 0) {
            PacerPoll::Probe {
                cluster: 0,
                media: Some(m),
                size: 1000,
            } => m,
            other => panic!("{other:?}"),
        };
        assert_eq!(media.size, 1000);
        // 1000 bytes at 4 Mbps = 2 ms until the next probe packet.
        let at = |ms| Time::from_millis(ms);
        assert_eq!(
            p.poll_with_probe(at(0), &d, Some(&c), 0),
            PacerPoll::WaitUntil(at(2))
        );
        let padding = PacerPoll::Probe {
            cluster: 0,
            media: None,
            size: 500,
        };
        assert_eq!(p.poll_with_probe(at(2), &d, Some(&c), 0), padding);
        // 1500 bytes sent: the third packet is due at 3 ms; 2000 bytes and 3 packets complete it.
        assert_eq!(
            p.poll_with_probe(at(2), &d, Some(&c), 0),
            PacerPoll::WaitUntil(at(3))
        );
        assert_eq!(p.poll_with_probe(at(3), &d, Some(&c), 0), padding);
        // The cluster is done: the same request is not sent again. The 2000 probe bytes were
        // charged to the 1 Mbps pacing budget (16 ms from the first packet at 0 ms).
        p.push(pkt(1000));
        assert_eq!(
            p.poll_with_probe(at(3), &d, Some(&c), 0),
            PacerPoll::WaitUntil(at(16))
        );
        assert!(matches!(
            p.poll_with_probe(at(16), &d, Some(&c), 0),
            PacerPoll::Media(_)
        ));
        // A new id starts a new cluster.
        c.id = 1;
        assert!(matches!(
            p.poll_with_probe(at(16), &d, Some(&c), 0),
            PacerPoll::Probe { cluster: 1, .. }
        ));
    }
}
