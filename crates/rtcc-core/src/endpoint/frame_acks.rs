//! When the video receiver acknowledges a frame (the RTCP APP "RTFA" message,
//! [`crate::wire::rtcp::FrameAckMessage`]), for controllers that ask for frame acknowledgements
//! (`FeedbackPolicy::frame_acks`: `c3g`, `c3g-bbr`).
//!
//! Two receivers, chosen per flow (`frame_ack = { at = ... }` in a scenario):
//!
//! - **`at = "complete"`** (default): a frame is acknowledged the moment its last packet is in,
//!   whether it is ever shown or not. A frame that never completes is never acknowledged; a
//!   controller that needs to hear about it has to time it out itself (`c3g`'s
//!   `lost_frame_timeout`).
//! - **`at = "display"`**: the receiver of C³G's paper (c3g_rtvl.txt §V-A, §V-B, Fig. 1). The
//!   client acknowledges a frame "just before displaying it", so the acknowledgement leaves at
//!   the frame's display time in the playout model (rtcc decodes instantly: the display time is
//!   when the jitter buffer releases the frame in order, or later with a playout delay), and the
//!   server's RTVL = S_ACK − S_0 holds everything that kept the frame from the screen, the wait
//!   behind an earlier frame being repaired included. The client's **presentation timeout**
//!   (100 ms in PlayGiga's client) is imposed on C_n − C_1, the time from a frame's first packet
//!   to its last: a frame not complete within it, or never complete (abandoned by the jitter
//!   buffer, or of which nothing arrived), is **lost**. Its acknowledgement carries the L flag
//!   and is sent late, with low priority, right after the acknowledgement of a later frame (the
//!   paper: "after a later frame has been received"), which bounds the RTVL the server sees for
//!   it (the paper's RTVL_max, about 350 ms) instead of leaving it unbounded.
//!
//! Judgment calls of the display receiver (the paper's client decodes a frame with missing
//! packets "with decoding errors" and shows it; rtcc's playout model does not show what it
//! cannot decode):
//! - a complete frame whose reference was lost (undecodable in rtcc) is acknowledged when it is
//!   released, not lost: all its packets came, and the paper's decoder would show it, with the
//!   errors it inherits (its per-frame loss l is 0);
//! - a frame that missed the presentation timeout but was repaired and shown later is still
//!   lost: the paper's client would have shown it incomplete at the timeout;
//! - a lost frame's acknowledgement holds its packets' receive times when it completed late, and
//!   otherwise the moment the receiver gave up on it in all three times, with size 0;
//! - frames the encoder skipped look lost to the receiver (it cannot tell them apart) and get a
//!   lost acknowledgement too; a sender ignores acknowledgements of frames it never sent.

use crate::media::jitter_buffer::FrameEvent;
use crate::units::{Duration, Time};
use crate::wire::rtcp::FrameAckMessage;
use std::collections::{BTreeMap, VecDeque};

/// PlayGiga's client's presentation timeout (c3g_rtvl.txt §V-B).
pub const DEFAULT_PRESENTATION_TIMEOUT: Duration = Duration(100_000_000);

/// When a frame is acknowledged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AckAt {
    /// When its last packet is in.
    #[default]
    Complete,
    /// Just before it is displayed; frames given up on are acknowledged late, flagged lost.
    Display,
}

impl AckAt {
    pub fn parse(s: &str) -> Result<AckAt, String> {
        match s {
            "complete" => Ok(AckAt::Complete),
            "display" => Ok(AckAt::Display),
            other => Err(format!("unknown {other:?}; valid: complete, display")),
        }
    }
}

/// A video receiver's frame acknowledgement mode.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FrameAckConfig {
    pub at: AckAt,
    /// With [`AckAt::Display`]: a frame whose last packet comes later than this after its first
    /// is lost.
    pub presentation_timeout: Duration,
}

impl Default for FrameAckConfig {
    fn default() -> Self {
        FrameAckConfig {
            at: AckAt::Complete,
            presentation_timeout: DEFAULT_PRESENTATION_TIMEOUT,
        }
    }
}

/// Turns the jitter buffer's frame events into frame acknowledgements, sans-IO.
#[derive(Debug)]
pub struct FrameAcker {
    config: FrameAckConfig,
    sender_ssrc: u32,
    media_ssrc: u32,
    /// Display mode: complete frames not released yet.
    complete: BTreeMap<u64, FrameAckMessage>,
    /// Acknowledgements due at a display time (in display order, so in frame order).
    due: VecDeque<(Time, u64, FrameAckMessage)>,
    /// Lost frames' acknowledgements, waiting for a later frame's (in frame order).
    late: VecDeque<(u64, FrameAckMessage)>,
}

impl FrameAcker {
    pub fn new(config: FrameAckConfig, sender_ssrc: u32, media_ssrc: u32) -> FrameAcker {
        FrameAcker {
            config,
            sender_ssrc,
            media_ssrc,
            complete: BTreeMap::new(),
            due: VecDeque::new(),
            late: VecDeque::new(),
        }
    }

    /// How long the client waits for an incomplete frame before it moves on: the presentation
    /// timeout when frames are acknowledged at display (the paper's client skips a frame that
    /// misses it, §V-B), none otherwise.
    pub fn display_deadline(&self) -> Option<Duration> {
        (self.config.at == AckAt::Display).then_some(self.config.presentation_timeout)
    }

    fn message(
        &self,
        frame: u64,
        first: Time,
        last: Time,
        complete: Time,
        size: u32,
    ) -> FrameAckMessage {
        FrameAckMessage {
            sender_ssrc: self.sender_ssrc,
            media_ssrc: self.media_ssrc,
            frame_id: frame as u16,
            first_receive: first,
            last_receive: last,
            complete,
            size,
            lost: false,
        }
    }

    /// A frame event of the jitter buffer at `now`, in the order the buffer gave them.
    pub fn on_event(&mut self, now: Time, e: &FrameEvent) {
        match (*e, self.config.at) {
            (
                FrameEvent::Complete {
                    frame,
                    first_receive,
                    last_receive,
                    at,
                    size,
                    ..
                },
                mode,
            ) => {
                let m = self.message(frame, first_receive, last_receive, at, size);
                match mode {
                    AckAt::Complete => self.due.push_back((now, frame, m)),
                    AckAt::Display => {
                        self.complete.insert(frame, m);
                    }
                }
            }
            (_, AckAt::Complete) => {}
            (FrameEvent::Displayed { frame, at }, AckAt::Display) => self.released(frame, at),
            (FrameEvent::Undecodable { frame }, AckAt::Display) => self.released(frame, now),
            (FrameEvent::Abandoned { frame }, AckAt::Display) => {
                let m = self
                    .complete
                    .remove(&frame)
                    .unwrap_or_else(|| self.message(frame, now, now, now, 0));
                self.late
                    .push_back((frame, FrameAckMessage { lost: true, ..m }));
            }
        }
    }

    /// A complete frame left the jitter buffer, to be shown at `shown`.
    fn released(&mut self, frame: u64, shown: Time) {
        let Some(m) = self.complete.remove(&frame) else {
            return;
        };
        if m.complete.saturating_since(m.first_receive) > self.config.presentation_timeout {
            self.late
                .push_back((frame, FrameAckMessage { lost: true, ..m }));
        } else {
            self.due.push_back((shown, frame, m));
        }
    }

    /// When the next acknowledgement is due (a display time ahead).
    pub fn poll_timeout(&self) -> Option<Time> {
        self.due.front().map(|d| d.0)
    }

    /// Append the acknowledgements due by `now`, each followed by the late acknowledgements of
    /// the lost frames before it.
    pub fn poll(&mut self, now: Time, out: &mut Vec<FrameAckMessage>) {
        while self.due.front().is_some_and(|d| d.0 <= now) {
            let (_, frame, m) = self.due.pop_front().expect("checked above");
            out.push(m);
            while self.late.front().is_some_and(|l| l.0 < frame) {
                out.push(self.late.pop_front().expect("checked above").1);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Time {
        Time::from_millis(v)
    }

    fn complete(frame: u64, first: u64, at: u64) -> FrameEvent {
        FrameEvent::Complete {
            frame,
            first_receive: ms(first),
            last_receive: ms(at),
            at: ms(at),
            size: 1000,
            recovered: false,
        }
    }

    fn displayed(frame: u64, at: u64) -> FrameEvent {
        FrameEvent::Displayed { frame, at: ms(at) }
    }

    fn display() -> FrameAcker {
        FrameAcker::new(
            FrameAckConfig {
                at: AckAt::Display,
                presentation_timeout: Duration::from_millis(100),
            },
            1,
            2,
        )
    }

    fn polled(a: &mut FrameAcker, now: u64) -> Vec<(u16, bool)> {
        let mut out = Vec::new();
        a.poll(ms(now), &mut out);
        out.iter().map(|m| (m.frame_id, m.lost)).collect()
    }

    #[test]
    fn complete_mode_acknowledges_at_completion_and_never_late() {
        let mut a = FrameAcker::new(FrameAckConfig::default(), 1, 2);
        a.on_event(ms(10), &complete(0, 5, 10));
        a.on_event(ms(10), &displayed(0, 10));
        a.on_event(ms(50), &FrameEvent::Abandoned { frame: 1 });
        assert_eq!(polled(&mut a, 50), vec![(0, false)]);
        assert_eq!(a.poll_timeout(), None);
    }

    #[test]
    fn display_mode_waits_for_the_display_time() {
        let mut a = display();
        a.on_event(ms(10), &complete(0, 5, 10));
        assert_eq!(polled(&mut a, 10), vec![], "complete, not shown yet");
        a.on_event(ms(20), &displayed(0, 60));
        assert_eq!(
            a.poll_timeout(),
            Some(ms(60)),
            "a playout delay: shown at 60 ms"
        );
        assert_eq!(polled(&mut a, 59), vec![]);
        assert_eq!(polled(&mut a, 60), vec![(0, false)]);
    }

    #[test]
    fn a_frame_given_up_on_is_acknowledged_lost_after_the_next_frame() {
        let mut a = display();
        a.on_event(ms(10), &complete(0, 5, 10));
        a.on_event(ms(10), &displayed(0, 10));
        // Frame 1 was never complete; frame 2 is, and waits behind it until it is abandoned.
        a.on_event(ms(80), &complete(2, 75, 80));
        a.on_event(ms(200), &FrameEvent::Abandoned { frame: 1 });
        // Frame 3 completed 150 ms after its first packet: past the presentation timeout.
        a.on_event(ms(200), &displayed(2, 200));
        a.on_event(ms(260), &complete(3, 110, 260));
        a.on_event(ms(260), &displayed(3, 260));
        assert_eq!(polled(&mut a, 260), vec![(0, false), (2, false), (1, true)]);
        a.on_event(ms(270), &complete(4, 265, 270));
        a.on_event(ms(270), &FrameEvent::Undecodable { frame: 4 });
        let mut out = Vec::new();
        a.poll(ms(270), &mut out);
        assert_eq!(
            out.iter().map(|m| (m.frame_id, m.lost)).collect::<Vec<_>>(),
            vec![(4, false), (3, true)],
            "undecodable but whole: acknowledged; the late frame 3 follows it"
        );
        assert_eq!(
            (out[1].first_receive, out[1].complete, out[1].size),
            (ms(110), ms(260), 1000),
            "a frame that completed late keeps its times"
        );
    }
}
