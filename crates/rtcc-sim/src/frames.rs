//! A streaming run's frame log: each flow's frames held only until they settle.
//!
//! A run that keeps its logs holds every frame record to the end (108,000 for an hour at
//! 30 fps) and summarises them there. A streaming run holds a window instead: frames enter it
//! as they are encoded, take the sender's and the receiver's events while there, and leave from
//! the front once settled, into the flow's [`FrameStats`] and the frame sink, in frame order.
//!
//! A frame is settled when nothing can change it or its derived values any more:
//!
//! - the receiver decided it (shown, undecodable, or given up on). Its jitter buffer ignores
//!   packets of a frame it has passed, and the sender sends a frame's packets before any later
//!   frame's, so neither end touches the record after that;
//! - its delay is known: it completed, or a later frame did (a frame never completed waits for
//!   the earliest completion of a later frame: completions come in time order, so the first one
//!   seen among later frames is the earliest);
//! - its latency is known: it was shown, or a later frame was (frames are shown in frame order,
//!   so the first later frame shown is the next one shown);
//! - and [`SETTLE_AFTER`] has passed since its capture, a margin on top of the rules above.
//!
//! At the end of the run the frames still held settle as they are, with the run's end standing
//! in for events that never came, as for a kept log. Completions go to the statistics as they
//! happen (the freeze rule wants them in time order). A record changed after it left the
//! window would be a broken rule above: it fails the tests' debug assertion.

use std::collections::VecDeque;

use rtcc_core::media::jitter_buffer::FrameEvent;
use rtcc_core::metrics::frame_stats::{derive, Later};
use rtcc_core::metrics::{FrameRecord, FrameStats};
use rtcc_core::{Duration, Time};

/// A settled frame as the frame log holds it: the record, and its delay (`None` for a frame
/// the encoder skipped) and latency ([`derive`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SettledFrame {
    pub record: FrameRecord,
    pub delay: Option<Duration>,
    pub latency: Duration,
}

/// How long after its capture a frame is held at least (see the module header).
pub const SETTLE_AFTER: Duration = Duration(1_000_000_000);

#[derive(Clone, Copy)]
enum Which {
    Completion,
    Display,
}

struct Held {
    record: FrameRecord,
    /// The receiver decided the frame.
    decided: bool,
    later: Later,
}

/// One flow's frames not settled yet, and the statistics of those that settled (see the module
/// header).
#[derive(Default)]
pub struct FrameWindow {
    stats: FrameStats,
    held: VecDeque<Held>,
    /// Frame number of `held[0]`.
    first: u64,
    /// Every frame before these has its own completion or a later one's, and its own display
    /// or a later one's (or none can come).
    completion_mark: u64,
    display_mark: u64,
}

impl FrameWindow {
    fn get_mut(&mut self, frame: u64) -> Option<&mut Held> {
        if frame < self.first {
            debug_assert!(
                false,
                "frame {frame} changed after it settled (the window starts at {})",
                self.first
            );
            return None;
        }
        self.held.get_mut((frame - self.first) as usize)
    }

    /// The encoder produced the next frame.
    pub fn push(&mut self, record: FrameRecord) {
        debug_assert_eq!(
            record.frame,
            self.first + self.held.len() as u64,
            "frames are encoded in order"
        );
        self.held.push_back(Held {
            record,
            decided: false,
            later: Later::default(),
        });
    }

    /// A media packet of `frame` left the sender at `now`.
    pub fn on_media_sent(&mut self, frame: u64, now: Time) {
        if let Some(h) = self.get_mut(frame) {
            h.record.on_media_sent(now);
        }
    }

    /// The receiver reported `event` (`to_run_clock` moves its times to the run's clock);
    /// a completion goes to the statistics at once.
    pub fn on_event(&mut self, event: FrameEvent, to_run_clock: impl Fn(Time) -> Time) {
        let frame = event.frame();
        let Some(h) = self.get_mut(frame) else {
            return;
        };
        h.record.apply(event, to_run_clock);
        h.decided |= !matches!(event, FrameEvent::Complete { .. });
        let (complete, display) = (h.record.complete, h.record.display);
        match event {
            FrameEvent::Complete { .. } if h.record.packets > 0 => {
                let at = complete.expect("a complete frame has its completion");
                self.stats.completed(at);
                self.mark_later(frame, at, Which::Completion);
            }
            FrameEvent::Displayed { .. } => {
                let at = display.expect("a shown frame has its display time");
                self.mark_later(frame, at, Which::Display)
            }
            _ => {}
        }
    }

    /// Give `at` to every frame before `frame` from the mark on that has no such instant of
    /// its own (frames before the mark have one, or a later frame's): the first such event
    /// after a frame is the one its derived value takes.
    fn mark_later(&mut self, frame: u64, at: Time, which: Which) {
        let mark = match which {
            Which::Completion => &mut self.completion_mark,
            Which::Display => &mut self.display_mark,
        };
        let from = (*mark).max(self.first);
        *mark = (*mark).max(frame + 1);
        for n in from..frame {
            let h = &mut self.held[(n - self.first) as usize];
            match which {
                Which::Completion if h.record.complete.is_none() => {
                    h.later.completion.get_or_insert(at);
                }
                Which::Display if h.record.display.is_none() => {
                    h.later.display.get_or_insert(at);
                }
                _ => {}
            }
        }
    }

    /// Move the settled frames at the front into the statistics and `out`, in frame order, at
    /// `now`.
    pub fn settle(&mut self, now: Time, out: &mut Vec<SettledFrame>) {
        while let Some(h) = self.held.front() {
            let r = &h.record;
            let delay_known =
                r.packets == 0 || r.complete.is_some() || h.later.completion.is_some();
            let latency_known = r.display.is_some() || h.later.display.is_some();
            if !(h.decided && delay_known && latency_known && now >= r.capture + SETTLE_AFTER) {
                break;
            }
            // Both values are known: no end of run stands in for either.
            self.pop(now, out);
        }
    }

    /// The run ended at `end`: every frame still held settles as it is; the flow's statistics.
    pub fn finish(mut self, end: Time, out: &mut Vec<SettledFrame>) -> FrameStats {
        while !self.held.is_empty() {
            self.pop(end, out);
        }
        self.stats
    }

    fn pop(&mut self, end: Time, out: &mut Vec<SettledFrame>) {
        let h = self.held.pop_front().expect("a frame held");
        self.first += 1;
        let (delay, latency) = derive(&h.record, h.later, end);
        self.stats.add(&h.record, delay, latency);
        out.push(SettledFrame {
            record: h.record,
            delay,
            latency,
        });
    }
}
