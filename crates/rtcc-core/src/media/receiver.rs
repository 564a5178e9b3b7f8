//! The receiver: records packet arrivals on its own clock, assembles frames, and builds the
//! feedback that goes back to the sender.
//!
//! Feedback follows transport-wide congestion control: a report covers every sequence number
//! from the first not yet reported to the highest received, each with its receive time or "not
//! received" (inside one flow packets are never reordered, so a gap is a loss). A frame is
//! complete when all its packets have arrived; its acknowledgement carries the receive times of
//! its first and last packets (what SQP's bandwidth samples and C3G's round-trip video latency
//! are computed from).

use crate::packet::{FrameAck, TransportFeedback};
use crate::units::{Duration, Time};
use std::collections::{HashMap, VecDeque};

/// A packet as it arrives at the receiver.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ArrivedPacket {
    pub seq: u64,
    pub size: u32,
    pub frame: Option<u64>,
    pub index_in_frame: u16,
    pub packets_in_frame: u16,
}

#[derive(Debug, Clone, Copy)]
struct Assembly {
    received: u16,
    first: Time,
    last: Time,
    bytes: u32,
}

#[derive(Debug)]
pub struct Receiver {
    /// Receiver clock = true time + offset.
    clock_offset: Duration,
    /// Receive times from `report_from` on (None = not (yet) received).
    pending: VecDeque<Option<Time>>,
    report_from: u64,
    frames: HashMap<u64, Assembly>,
    /// Frames completed, highest id, to forget stale partial frames.
    highest_complete: Option<u64>,
}

impl Receiver {
    pub fn new(clock_offset: Duration) -> Receiver {
        Receiver {
            clock_offset,
            pending: VecDeque::new(),
            report_from: 0,
            frames: HashMap::new(),
            highest_complete: None,
        }
    }

    /// The receiver's clock at true time `now`.
    pub fn local_time(&self, now: Time) -> Time {
        now + self.clock_offset
    }

    /// Record an arrival at true time `now`; returns the frame acknowledgement if the packet
    /// completes its frame.
    pub fn on_packet(&mut self, now: Time, pkt: &ArrivedPacket) -> Option<FrameAck> {
        let local = self.local_time(now);
        if pkt.seq >= self.report_from {
            let idx = (pkt.seq - self.report_from) as usize;
            if idx >= self.pending.len() {
                self.pending.resize(idx + 1, None);
            }
            self.pending[idx] = Some(local);
        }
        let frame = pkt.frame?;
        if self.highest_complete.is_some_and(|h| frame <= h) && !self.frames.contains_key(&frame) {
            return None; // a duplicate or very late packet of an old frame
        }
        let a = self.frames.entry(frame).or_insert(Assembly {
            received: 0,
            first: local,
            last: local,
            bytes: 0,
        });
        a.received += 1;
        a.last = local;
        a.bytes += pkt.size;
        if a.received < pkt.packets_in_frame {
            return None;
        }
        let a = self.frames.remove(&frame).unwrap();
        self.highest_complete = Some(self.highest_complete.map_or(frame, |h| h.max(frame)));
        // Older partial frames can no longer complete (no reordering): forget them.
        self.frames.retain(|&f, _| f > frame);
        Some(FrameAck {
            frame,
            first_receive_time: a.first,
            last_receive_time: a.last,
            complete_time: local,
            size: a.bytes,
        })
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
        let receive_times: Vec<Option<Time>> = self.pending.drain(..).collect();
        let base_seq = self.report_from;
        self.report_from += receive_times.len() as u64;
        Some(TransportFeedback {
            base_seq,
            receive_times,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arrive(
        r: &mut Receiver,
        t: u64,
        seq: u64,
        frame: u64,
        idx: u16,
        n: u16,
    ) -> Option<FrameAck> {
        r.on_packet(
            Time(t),
            &ArrivedPacket {
                seq,
                size: 100,
                frame: Some(frame),
                index_in_frame: idx,
                packets_in_frame: n,
            },
        )
    }

    #[test]
    fn reports_gaps_as_losses_and_acks_complete_frames() {
        let mut r = Receiver::new(Duration(1000));
        assert!(arrive(&mut r, 10, 0, 0, 0, 2).is_none());
        let ack = arrive(&mut r, 20, 1, 0, 1, 2).unwrap();
        assert_eq!(
            (ack.first_receive_time, ack.last_receive_time, ack.size),
            (Time(1010), Time(1020), 200)
        );
        // seq 2 (frame 1, first of two) is lost; seq 3 arrives.
        assert!(arrive(&mut r, 40, 3, 1, 1, 2).is_none());
        let fb = r.build_feedback().unwrap();
        assert_eq!(fb.base_seq, 0);
        assert_eq!(
            fb.receive_times,
            vec![Some(Time(1010)), Some(Time(1020)), None, Some(Time(1040))]
        );
        assert!(r.build_feedback().is_none(), "nothing new to report");
        // Frame 2 completes; frame 1 can never complete and is forgotten.
        assert!(arrive(&mut r, 50, 4, 2, 0, 1).is_some());
        assert_eq!(r.build_feedback().unwrap().base_seq, 4);
    }
}
