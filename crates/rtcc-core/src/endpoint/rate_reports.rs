//! The video receiver's rate reports (the RTCP APP "RTRR" message,
//! [`crate::wire::rtcp::RateReportMessage`]), for controllers that ask for them
//! (`FeedbackPolicy::rate_reports`).
//!
//! C³G's client measures the received rate μ as "the total amount of bytes of all UDP packets
//! received within a time window of Δt" and reports it to the server every Δt (c3g_rtvl.txt
//! §V-A). The [`RateReporter`] does that on a fixed grid from the receiver's start: every RTP
//! datagram adds its wire size and one packet to the current window, the newest arrival that
//! carries a transport-wide sequence number is remembered, and at each grid instant the window
//! (previous report, now] is closed into a report and a new one opens. A window in which nothing
//! arrived gives a report of 0 bytes: the sender learns that nothing got through, which silence
//! alone would not tell it.
//!
//! Judgment calls:
//! - every datagram that is not RTCP counts, also one whose RTP header does not parse: it
//!   crossed the path like any other (the paper counts "all UDP packets");
//! - when the receiver is called late for a report (a live transport's timer fires after the grid
//!   instant, or several instants passed at once), one report covers the whole time since the
//!   previous one, ending at the moment it is built, and the grid resumes at the next instant
//!   after it: windows stay contiguous and no empty window is invented.

use crate::units::{Duration, Time};
use crate::wire::rtcp::RateReportMessage;

/// Counts what the receiver gets and closes a window every `interval`.
#[derive(Debug, Clone)]
pub struct RateReporter {
    interval: Duration,
    sender_ssrc: u32,
    media_ssrc: u32,
    /// The current window opened here (the previous report, or the receiver's start).
    window_start: Time,
    /// The next grid instant at which a report is due.
    next_at: Time,
    bytes: u64,
    packets: u32,
    /// Transport-wide sequence number (16 bits, as on the wire) and arrival of the newest arrival
    /// in the window that carries one.
    last: Option<(u16, Time)>,
}

impl RateReporter {
    /// A reporter started at `now`: its first report is due at `now + interval`. Scenarios
    /// refuse an interval of 0; here it is taken as 1 ns, so that the grid still advances.
    pub fn new(now: Time, interval: Duration, sender_ssrc: u32, media_ssrc: u32) -> RateReporter {
        let interval = Duration(interval.0.max(1));
        RateReporter {
            interval,
            sender_ssrc,
            media_ssrc,
            window_start: now,
            next_at: now + interval,
            bytes: 0,
            packets: 0,
            last: None,
        }
    }

    /// A datagram of `size` wire bytes arrived at `now`; `transport_seq` is its transport-wide
    /// sequence number, if it has one.
    pub fn on_datagram(&mut self, now: Time, size: u32, transport_seq: Option<u16>) {
        self.bytes += u64::from(size);
        self.packets = self.packets.saturating_add(1);
        if let Some(seq) = transport_seq {
            self.last = Some((seq, now));
        }
    }

    /// When the next report is due.
    pub fn poll_timeout(&self) -> Time {
        self.next_at
    }

    /// The report of the window ending `now`, if one is due; the next window opens at `now`.
    pub fn poll(&mut self, now: Time) -> Option<RateReportMessage> {
        if now < self.next_at {
            return None;
        }
        let report = RateReportMessage {
            sender_ssrc: self.sender_ssrc,
            media_ssrc: self.media_ssrc,
            window_start: self.window_start,
            window_end: now,
            bytes: std::mem::take(&mut self.bytes),
            packets: std::mem::take(&mut self.packets),
            last: self.last.take(),
        };
        self.window_start = now;
        // The first grid instant after `now` (several may have passed on a late call).
        let missed = (now - self.next_at).0 / self.interval.0 + 1;
        self.next_at += Duration(missed * self.interval.0);
        Some(report)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_follow_the_grid_and_a_late_call_makes_one_longer_window() {
        let ms = Time::from_millis;
        let mut r = RateReporter::new(ms(1000), Duration::from_millis(50), 1, 7);
        assert_eq!(r.poll_timeout(), ms(1050));
        r.on_datagram(ms(1010), 1200, Some(65535));
        r.on_datagram(ms(1020), 300, None);
        assert_eq!(r.poll(ms(1049)), None, "not due yet");
        let a = r.poll(ms(1050)).unwrap();
        assert_eq!(
            (a.window_start, a.window_end, a.bytes, a.packets, a.last),
            (ms(1000), ms(1050), 1500, 2, Some((65535, ms(1010)))),
            "the newest arrival with a transport-wide number"
        );
        assert_eq!(r.poll(ms(1050)), None, "one report per grid instant");
        let b = r.poll(ms(1100)).unwrap();
        assert_eq!(
            (b.window_start, b.window_end, b.bytes, b.packets, b.last),
            (ms(1050), ms(1100), 0, 0, None),
            "silence is reported"
        );
        r.on_datagram(ms(1110), 1000, Some(0));
        let c = r.poll(ms(1230)).unwrap();
        assert_eq!(
            (c.window_start, c.window_end, c.bytes),
            (ms(1100), ms(1230), 1000)
        );
        assert_eq!(r.poll_timeout(), ms(1250), "back on the grid");
    }
}
