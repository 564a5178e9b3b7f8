//! Receiver playout, sans-IO: which complete frames can be decoded and shown, and when the
//! receiver should ask the sender for a keyframe.
//!
//! The decoder model is the simplest one that captures what loss does to predictive video:
//!
//! - a **keyframe** decodes on its own;
//! - a **P-frame** predicts from the previous *encoded* frame (its reference; skipped frames are
//!   not references) and decodes only if that frame was decoded. A lost or incomplete frame
//!   therefore makes every following P-frame undecodable until the next keyframe that arrives
//!   complete (libvpx's default VP8 real-time configuration predicts from the last frame;
//!   golden/alt-ref frames and temporal layers, which can shorten such runs, are not modelled);
//! - frames are shown **in order**, as soon as they are complete and decodable, with no jitter
//!   buffer and no decoding time (our judgment call: the seed does not describe its receiver's
//!   buffering):
//!   a frame's display time is its completion time, or the previous display time if that is later.
//!
//! **Keyframe requests.** When a complete frame cannot be decoded the receiver asks for a
//! keyframe (a picture-loss indication, RFC 4585 §6.3.1) and repeats the request, at most once per
//! `request_interval`, while frames stay undecodable (the request or the keyframe itself may be
//! lost). The 200 ms default is our judgment (a few round trips on the paths studied; the seeds
//! do not say how their receivers request keyframes).
//!
//! Completions must be fed in frame order (the receiver delivers them so: packets of one flow are
//! not reordered and an older incomplete frame is abandoned once a newer one completes).
//! [`crate::metrics::playout`] runs the same state machine over a whole frame log.

use crate::units::{Duration, Time};

/// Default spacing of repeated keyframe requests.
pub const DEFAULT_REQUEST_INTERVAL: Duration = Duration(200_000_000);

/// What happened to a complete frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameOutcome {
    /// Decoded and shown at this time.
    Displayed(Time),
    /// Its reference was not decoded: not shown.
    Undecodable,
}

#[derive(Debug, Clone)]
pub struct Playout {
    last_decoded: Option<u64>,
    last_display: Option<Time>,
    request_interval: Duration,
    last_request: Option<Time>,
    request_due: bool,
}

impl Default for Playout {
    fn default() -> Self {
        Playout::new(DEFAULT_REQUEST_INTERVAL)
    }
}

impl Playout {
    pub fn new(request_interval: Duration) -> Playout {
        Playout {
            last_decoded: None,
            last_display: None,
            request_interval,
            last_request: None,
            request_due: false,
        }
    }

    /// Frame `frame` is complete at `now`. `reference` is the frame it predicts from (the
    /// previous encoded frame), ignored for a keyframe.
    pub fn on_frame_complete(
        &mut self,
        now: Time,
        frame: u64,
        keyframe: bool,
        reference: Option<u64>,
    ) -> FrameOutcome {
        let decodable = keyframe || (reference.is_some() && reference == self.last_decoded);
        if !decodable {
            if self
                .last_request
                .is_none_or(|t| now.saturating_since(t) >= self.request_interval)
            {
                self.request_due = true;
            }
            return FrameOutcome::Undecodable;
        }
        self.last_decoded = Some(frame);
        let shown = self.last_display.map_or(now, |t| t.max(now));
        self.last_display = Some(shown);
        FrameOutcome::Displayed(shown)
    }

    /// Whether to send a keyframe request now (then it counts as sent).
    pub fn poll_keyframe_request(&mut self, now: Time) -> bool {
        if !self.request_due {
            return false;
        }
        self.request_due = false;
        self.last_request = Some(now);
        true
    }

    /// The last frame decoded.
    pub fn last_decoded(&self) -> Option<u64> {
        self.last_decoded
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Time {
        Time::from_millis(v)
    }

    #[test]
    fn a_lost_reference_breaks_the_chain_until_a_keyframe_and_asks_for_one() {
        let mut p = Playout::default();
        assert_eq!(
            p.on_frame_complete(ms(10), 0, true, None),
            FrameOutcome::Displayed(ms(10))
        );
        assert_eq!(
            p.on_frame_complete(ms(43), 1, false, Some(0)),
            FrameOutcome::Displayed(ms(43))
        );
        assert!(!p.poll_keyframe_request(ms(43)));
        // Frame 2 is lost: 3 and 4 predict from frames that were never decoded.
        assert_eq!(
            p.on_frame_complete(ms(110), 3, false, Some(2)),
            FrameOutcome::Undecodable
        );
        assert!(
            p.poll_keyframe_request(ms(110)),
            "the first undecodable frame asks"
        );
        assert!(!p.poll_keyframe_request(ms(111)), "once");
        assert_eq!(
            p.on_frame_complete(ms(143), 4, false, Some(3)),
            FrameOutcome::Undecodable
        );
        assert!(!p.poll_keyframe_request(ms(143)), "not again within 200 ms");
        assert_eq!(
            p.on_frame_complete(ms(320), 5, false, Some(4)),
            FrameOutcome::Undecodable
        );
        assert!(p.poll_keyframe_request(ms(320)), "again after 200 ms");
        // The keyframe restores decoding; its successor decodes too.
        assert_eq!(
            p.on_frame_complete(ms(350), 6, true, None),
            FrameOutcome::Displayed(ms(350))
        );
        assert_eq!(
            p.on_frame_complete(ms(380), 7, false, Some(6)),
            FrameOutcome::Displayed(ms(380))
        );
        assert_eq!(p.last_decoded(), Some(7));
    }

    #[test]
    fn frames_are_shown_in_order_never_before_the_previous_one() {
        let mut p = Playout::default();
        p.on_frame_complete(ms(100), 0, true, None);
        // A completion time earlier than the previous display (possible only in hand-made logs)
        // is shown right after it.
        assert_eq!(
            p.on_frame_complete(ms(90), 1, false, Some(0)),
            FrameOutcome::Displayed(ms(100))
        );
        // The first complete frame of a flow is a P-frame whose keyframe was lost.
        let mut p = Playout::default();
        assert_eq!(
            p.on_frame_complete(ms(5), 1, false, Some(0)),
            FrameOutcome::Undecodable
        );
    }
}
