//! The receiver's jitter buffer: assembles frames from the packets that arrive, holds them until
//! they can be decoded in order, and releases them to the decoder and the display.
//!
//! Everything it knows comes from the packets (rtcc's frame descriptor header extension: frame id,
//! the packet's index and the frame's packet count, keyframe flag, the frame it predicts from; the
//! RTP timestamp for the capture instant), never from the sender's state.
//!
//! - A frame is **complete** when all its packets are in (first transmissions, retransmissions or
//!   FEC recoveries alike).
//! - Frames are **released in frame order**. A complete frame is decoded if it is a keyframe or
//!   its reference was decoded ([`Playout`] keeps that chain and asks for keyframes); otherwise it
//!   is undecodable and dropped.
//! - An **incomplete** frame holds back every later frame while its missing packets may still
//!   come. Without loss recovery it is abandoned as soon as a later frame is complete (nothing
//!   can repair it). With NACK on it waits up to `max_wait` after a later frame completed (the
//!   receiver sets it from the RTT: time for a few retransmission rounds), then it is abandoned:
//!   a frame too old to display is not worth waiting for. A reference frame of which no packet
//!   was ever seen is waited for in the same way.
//! - The **display time** is the decode time, or later with a playout delay: frame `f` is shown
//!   at `capture_f + min transit + playout_delay` (the smallest `arrival − capture` seen estimates
//!   the clock offset plus the propagation delay, as libwebrtc's timing module does with its
//!   jitter estimate replaced by the fixed delay), never before the previous frame.

use super::playout::{FrameOutcome, Playout};
use crate::units::{Duration, Time};
use std::collections::{BTreeMap, VecDeque};

/// One packet as the jitter buffer sees it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FramePacket {
    /// Frame id (unwrapped).
    pub frame: u64,
    pub index: u16,
    pub count: u16,
    pub keyframe: bool,
    /// The frame it predicts from (`None` for a keyframe or the first frame).
    pub reference: Option<u64>,
    /// Unwrapped RTP sequence number of the packet.
    pub seq: u64,
    /// Bytes on the wire.
    pub size: u32,
    /// Capture instant from the RTP timestamp, on the sender's media clock.
    pub capture: Time,
    /// Came from a retransmission or an FEC recovery.
    pub recovered: bool,
}

/// What happened to a frame, in the order it happened.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FrameEvent {
    /// Every packet is in.
    Complete {
        frame: u64,
        first_receive: Time,
        last_receive: Time,
        at: Time,
        size: u32,
        /// At least one packet came from a retransmission or FEC.
        recovered: bool,
    },
    /// Decoded and shown at `at`.
    Displayed { frame: u64, at: Time },
    /// Complete, but its reference was never decoded.
    Undecodable { frame: u64 },
    /// Given up on before it was complete.
    Abandoned { frame: u64 },
}

impl FrameEvent {
    /// The frame the event is about.
    pub fn frame(&self) -> u64 {
        match *self {
            FrameEvent::Complete { frame, .. }
            | FrameEvent::Displayed { frame, .. }
            | FrameEvent::Undecodable { frame }
            | FrameEvent::Abandoned { frame } => frame,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct JitterBufferConfig {
    /// Wait for missing packets (NACK or FEC may still bring them); off: abandon an incomplete
    /// frame as soon as a later one is complete.
    pub wait_for_missing: bool,
    /// How long an incomplete frame may hold back a complete later one.
    pub max_wait: Duration,
    /// Extra delay before display (0: show frames as soon as they decode).
    pub playout_delay: Duration,
}

impl Default for JitterBufferConfig {
    fn default() -> Self {
        JitterBufferConfig {
            wait_for_missing: false,
            max_wait: Duration::from_millis(400),
            playout_delay: Duration::ZERO,
        }
    }
}

#[derive(Debug)]
struct Slot {
    keyframe: bool,
    reference: Option<u64>,
    count: u16,
    received: Vec<bool>,
    n_received: u16,
    first: Time,
    last: Time,
    bytes: u32,
    complete_at: Option<Time>,
    recovered: bool,
    capture: Time,
    /// Sequence number of the frame's first packet.
    first_seq: u64,
}

#[derive(Debug)]
pub struct JitterBuffer {
    config: JitterBufferConfig,
    frames: BTreeMap<u64, Slot>,
    /// Highest frame id released (decoded, undecodable or abandoned).
    released_up_to: Option<u64>,
    /// The sequence number after the last packet of the newest frame released or given up on
    /// (the packets before it are no longer wanted once no frame is held).
    next_wanted_seq: Option<u64>,
    playout: Playout,
    events: VecDeque<FrameEvent>,
    /// When waiting for a missing frame ends.
    wake: Option<Time>,
    /// `max_wait` changed since the last release: the next packet re-evaluates the waits.
    deadline_moved: bool,
    /// Smallest `arrival − capture` seen, in ns.
    min_transit: Option<i128>,
}

impl JitterBuffer {
    pub fn new(config: JitterBufferConfig, playout: Playout) -> JitterBuffer {
        JitterBuffer {
            config,
            frames: BTreeMap::new(),
            released_up_to: None,
            next_wanted_seq: None,
            playout,
            events: VecDeque::new(),
            wake: None,
            deadline_moved: false,
            min_transit: None,
        }
    }

    pub fn set_max_wait(&mut self, d: Duration) {
        if d != self.config.max_wait {
            self.config.max_wait = d;
            self.deadline_moved = true; // a pending wait may now end at another time
        }
    }

    pub fn playout(&mut self) -> &mut Playout {
        &mut self.playout
    }

    /// Sequence number of the first packet of the oldest frame still held (packets before it
    /// are no longer wanted).
    pub fn oldest_wanted_seq(&self) -> Option<u64> {
        self.frames
            .values()
            .next()
            .map(|s| s.first_seq)
            .or(self.next_wanted_seq)
    }

    /// A packet arrived at `now` (receiver clock).
    pub fn insert(&mut self, now: Time, p: &FramePacket) {
        let transit = now.0 as i128 - p.capture.0 as i128;
        self.min_transit = Some(self.min_transit.map_or(transit, |m| m.min(transit)));
        if self.released_up_to.is_some_and(|r| p.frame <= r) || p.count == 0 || p.index >= p.count {
            return; // late (its frame is gone), or not a valid position
        }
        let slot = self.frames.entry(p.frame).or_insert_with(|| Slot {
            keyframe: p.keyframe,
            reference: p.reference,
            count: p.count,
            received: vec![false; p.count as usize],
            n_received: 0,
            first: now,
            last: now,
            bytes: 0,
            complete_at: None,
            recovered: false,
            capture: p.capture,
            first_seq: p.seq.saturating_sub(p.index as u64),
        });
        if slot.count != p.count || slot.received[p.index as usize] {
            return; // a duplicate, or a packet that disagrees with its frame's others
        }
        slot.received[p.index as usize] = true;
        slot.n_received += 1;
        slot.last = now;
        slot.bytes += p.size;
        slot.recovered |= p.recovered;
        if slot.n_received == slot.count {
            slot.complete_at = Some(now);
            self.events.push_back(FrameEvent::Complete {
                frame: p.frame,
                first_receive: slot.first,
                last_receive: slot.last,
                at: now,
                size: slot.bytes,
                recovered: slot.recovered,
            });
        }
        // Only a newly complete frame, or a wait whose length changed, can release anything
        // before the next timeout.
        if slot.complete_at == Some(now) || self.deadline_moved {
            self.release(now);
        }
    }

    /// When a waiting frame's time runs out.
    pub fn poll_timeout(&self) -> Option<Time> {
        self.wake
    }

    pub fn handle_timeout(&mut self, now: Time) {
        if self.wake.is_some_and(|t| t <= now) {
            self.release(now);
        }
    }

    pub fn poll_event(&mut self) -> Option<FrameEvent> {
        self.events.pop_front()
    }

    fn abandon(&mut self, frame: u64) {
        self.pass(frame);
        self.events.push_back(FrameEvent::Abandoned { frame });
    }

    /// Move past `frame` (released or given up on): forget it, and report the frames before it
    /// of which no packet ever arrived (lost whole, or skipped by the encoder: the receiver
    /// cannot tell) as given up on.
    fn pass(&mut self, frame: u64) {
        if let Some(slot) = self.frames.remove(&frame) {
            let next = slot.first_seq + slot.count as u64;
            self.next_wanted_seq = Some(self.next_wanted_seq.map_or(next, |n| n.max(next)));
        }
        if let Some(u) = self.released_up_to {
            // Frame ids are unwrapped within half their 16-bit range of each other.
            for unseen in (u + 1..frame).take(1 << 15) {
                self.events
                    .push_back(FrameEvent::Abandoned { frame: unseen });
            }
        }
        self.released_up_to = Some(self.released_up_to.map_or(frame, |u| u.max(frame)));
    }

    /// Whether waiting for something that a frame completed at `complete_at` needs is over.
    fn wait_over(&mut self, now: Time, complete_at: Time) -> bool {
        let until = complete_at + self.config.max_wait;
        if !self.config.wait_for_missing || now >= until {
            return true;
        }
        self.wake = Some(until);
        false
    }

    /// Release every frame that can go, in frame order.
    fn release(&mut self, now: Time) {
        self.wake = None;
        self.deadline_moved = false;
        // A complete keyframe behind the head needs nothing before it: the buffer jumps to it
        // at once instead of waiting for repairs (libwebrtc's frame buffer decodes from a
        // keyframe without the frames before it; they may never come, e.g. after the sender
        // reset its encoder). Frames only leave from the front, so the newest one is enough.
        let newest_keyframe = self
            .frames
            .iter()
            .rev()
            .find(|(_, s)| s.keyframe && s.complete_at.is_some())
            .map(|(&k, _)| k);
        while let Some((&f, slot)) = self.frames.first_key_value() {
            let (keyframe, reference, capture) = (slot.keyframe, slot.reference, slot.capture);
            let keyframe_behind = newest_keyframe.is_some_and(|k| k > f);
            match slot.complete_at {
                Some(done) => {
                    // A reference that has not been released, and of which nothing is held:
                    // none of its packets arrived (yet).
                    let unseen_reference = reference
                        .filter(|&r| !keyframe && r < f)
                        .filter(|&r| self.released_up_to.is_none_or(|u| r > u));
                    if let Some(r) = unseen_reference {
                        if !keyframe_behind && !self.wait_over(now, done) {
                            return;
                        }
                        self.abandon(r);
                    }
                    self.pass(f);
                    let shown_at = self.render_time(now, capture);
                    let event = match self
                        .playout
                        .on_frame_complete(shown_at, f, keyframe, reference)
                    {
                        FrameOutcome::Displayed(at) => FrameEvent::Displayed { frame: f, at },
                        FrameOutcome::Undecodable => FrameEvent::Undecodable { frame: f },
                    };
                    self.events.push_back(event);
                }
                None => {
                    if !keyframe_behind {
                        let later = self.frames.range(f + 1..).find_map(|(_, s)| s.complete_at);
                        let Some(done) = later else {
                            return; // nothing complete behind it: keep waiting for its packets
                        };
                        if !self.wait_over(now, done) {
                            return;
                        }
                    }
                    self.abandon(f);
                }
            }
        }
    }

    /// When a frame captured at `capture` is shown if it decodes at `now`.
    fn render_time(&self, now: Time, capture: Time) -> Time {
        if self.config.playout_delay == Duration::ZERO {
            return now;
        }
        let target =
            capture.0 as i128 + self.min_transit.unwrap_or(0) + self.config.playout_delay.0 as i128;
        Time(target.clamp(now.0 as i128, u64::MAX as i128) as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Time {
        Time::from_millis(v)
    }

    fn pkt(frame: u64, index: u16, count: u16, seq: u64) -> FramePacket {
        FramePacket {
            frame,
            index,
            count,
            keyframe: frame == 0,
            reference: frame.checked_sub(1),
            seq,
            size: 100,
            capture: ms(frame * 33),
            recovered: false,
        }
    }

    /// A buffer that waits up to 100 ms for repairs.
    fn waiting_100ms() -> JitterBuffer {
        let cfg = JitterBufferConfig {
            wait_for_missing: true,
            max_wait: ms(100) - Time::ZERO,
            ..Default::default()
        };
        JitterBuffer::new(cfg, Playout::default())
    }

    fn drain(j: &mut JitterBuffer) -> Vec<FrameEvent> {
        std::iter::from_fn(|| j.poll_event()).collect()
    }

    #[test]
    fn without_recovery_an_incomplete_frame_is_abandoned_when_a_later_one_completes() {
        let mut j = JitterBuffer::new(JitterBufferConfig::default(), Playout::default());
        j.insert(ms(10), &pkt(0, 0, 1, 0));
        j.insert(ms(40), &pkt(1, 0, 2, 1)); // frame 1's second packet (seq 2) is lost
        j.insert(ms(75), &pkt(2, 0, 1, 3));
        let ev = drain(&mut j);
        assert!(ev.contains(&FrameEvent::Displayed {
            frame: 0,
            at: ms(10)
        }));
        assert!(ev.contains(&FrameEvent::Abandoned { frame: 1 }));
        assert!(
            ev.contains(&FrameEvent::Undecodable { frame: 2 }),
            "frame 2 predicts from the abandoned frame 1: {ev:?}"
        );
    }

    #[test]
    fn with_nack_a_missing_packet_holds_later_frames_until_it_arrives() {
        let cfg = JitterBufferConfig {
            wait_for_missing: true,
            ..Default::default()
        };
        let mut j = JitterBuffer::new(cfg, Playout::default());
        j.insert(ms(10), &pkt(0, 0, 1, 0));
        j.insert(ms(40), &pkt(1, 0, 2, 1));
        j.insert(ms(75), &pkt(2, 0, 1, 3));
        drain(&mut j);
        assert_eq!(
            j.poll_timeout(),
            Some(ms(475)),
            "frame 2 waits for frame 1 up to max_wait after it completed"
        );
        let mut retransmitted = pkt(1, 1, 2, 2);
        retransmitted.recovered = true;
        j.insert(ms(120), &retransmitted);
        let ev = drain(&mut j);
        assert!(matches!(
            ev[0],
            FrameEvent::Complete {
                frame: 1,
                recovered: true,
                ..
            }
        ));
        assert_eq!(
            &ev[1..],
            &[
                FrameEvent::Displayed {
                    frame: 1,
                    at: ms(120)
                },
                FrameEvent::Displayed {
                    frame: 2,
                    at: ms(120)
                }
            ],
            "both frames are shown once the repair arrives, in order"
        );
    }

    #[test]
    fn with_nack_a_frame_is_given_up_after_max_wait() {
        let mut j = waiting_100ms();
        j.insert(ms(10), &pkt(0, 0, 1, 0));
        // Frame 1 is entirely lost; frame 2 (predicting from 1) completes at 75 ms.
        j.insert(ms(75), &pkt(2, 0, 1, 3));
        drain(&mut j);
        assert_eq!(j.poll_timeout(), Some(ms(175)));
        j.handle_timeout(ms(175));
        let ev = drain(&mut j);
        assert_eq!(
            ev,
            vec![
                FrameEvent::Abandoned { frame: 1 },
                FrameEvent::Undecodable { frame: 2 }
            ]
        );
        assert!(j.playout().poll_keyframe_request(ms(175)));
    }

    #[test]
    fn frames_lost_whole_are_reported_and_their_packets_no_longer_wanted() {
        let mut j = waiting_100ms();
        j.insert(ms(10), &pkt(0, 0, 1, 0));
        // Frames 1 and 2 (seq 1, 2) are lost whole; frame 3 predicts from 2.
        j.insert(ms(110), &pkt(3, 0, 1, 3));
        j.handle_timeout(ms(210));
        let ev = drain(&mut j);
        assert!(
            ev.contains(&FrameEvent::Abandoned { frame: 1 })
                && ev.contains(&FrameEvent::Abandoned { frame: 2 }),
            "both lost frames are reported, not only frame 3's reference: {ev:?}"
        );
        // Nothing is held now; packets before frame 3's end are no longer wanted.
        assert_eq!(j.oldest_wanted_seq(), Some(4));
    }

    #[test]
    fn with_nack_a_complete_keyframe_ends_the_wait_at_once() {
        let cfg = JitterBufferConfig {
            wait_for_missing: true,
            ..Default::default()
        };
        let mut j = JitterBuffer::new(cfg, Playout::default());
        j.insert(ms(10), &pkt(0, 0, 1, 0));
        j.insert(ms(40), &pkt(1, 0, 3, 1)); // the rest of frame 1 never comes (encoder reset)
        let keyframe = FramePacket {
            keyframe: true,
            reference: None,
            ..pkt(2, 0, 1, 4)
        };
        j.insert(ms(75), &keyframe);
        let ev = drain(&mut j);
        assert!(
            ev.contains(&FrameEvent::Abandoned { frame: 1 })
                && ev.contains(&FrameEvent::Displayed {
                    frame: 2,
                    at: ms(75)
                }),
            "the keyframe is shown when it completes, not after max_wait: {ev:?}"
        );
        assert_eq!(j.poll_timeout(), None);
    }

    #[test]
    fn a_playout_delay_shows_frames_at_capture_plus_min_transit_plus_delay() {
        let cfg = JitterBufferConfig {
            playout_delay: Duration::from_millis(50),
            ..Default::default()
        };
        let mut j = JitterBuffer::new(cfg, Playout::default());
        j.insert(ms(20), &pkt(0, 0, 1, 0)); // transit 20 ms
        j.insert(ms(63), &pkt(1, 0, 1, 1)); // transit 30 ms (10 ms of jitter)
        let shown: Vec<_> = drain(&mut j)
            .into_iter()
            .filter_map(|e| match e {
                FrameEvent::Displayed { at, .. } => Some(at),
                _ => None,
            })
            .collect();
        assert_eq!(shown, vec![ms(70), ms(103)], "capture + 20 ms + 50 ms");
    }
}
