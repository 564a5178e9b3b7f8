//! The receiver's NACK requester: which media packets to ask the sender to retransmit, and when.
//!
//! Timing follows libwebrtc's `modules/video_coding/nack_requester.cc`:
//!
//! - a packet is **missing** when a later sequence number arrives first (inside one stream packets
//!   are not reordered by rtcc's links, so every gap is a loss); it is requested at once
//!   (`send_nack_delay` 0 ms, the default), or after a chosen delay ([`NackRequester::with_delay`]:
//!   C³G's client asks for packets not received 30 ms on, c3g_rtvl.txt §V-B);
//! - a request is **repeated** every round-trip time while the packet stays missing
//!   (libwebrtc's `kDefaultRttMs` = 100 ms until an RTT is known), at most
//!   [`MAX_NACK_RETRIES`] = 10 times (`kMaxNackRetries`), then the requester gives up;
//! - at most [`MAX_NACK_PACKETS`] = 1000 packets are tracked (`kMaxNackPackets`). When a gap would
//!   go beyond that, the packets before the newest keyframe that still leaves some are dropped
//!   (they are not needed to decode from it), keyframe by keyframe; if the list is still too
//!   long, it is cleared, the gap itself is not requested, and the caller is told to ask for a
//!   keyframe (`AddPacketsToNack` and `RemovePacketsUntilKeyFrame`). Asking for thousands of
//!   packets after an outage would only bury the link in retransmissions of frames nobody will
//!   show;
//! - packets of frames the receiver no longer wants (it gave up on them, or a keyframe made them
//!   useless) are removed with [`NackRequester::clear_up_to`].
//!
//! The RTT comes from the requester itself (our judgment call; libwebrtc takes it from RTCP): a
//! packet that arrives after it was requested gives a sample `arrival − first request`, smoothed
//! with gain 1/8 as RFC 6298 smooths RTT (timed from the last request, the estimate could only
//! fall, since requests repeat every estimated RTT). That sample includes the sender's pacing delay, which is
//! what a repeated request should wait for anyway.

use crate::units::{Duration, Time};
use std::collections::{BTreeMap, BTreeSet};

/// libwebrtc `kMaxNackRetries`.
pub const MAX_NACK_RETRIES: u32 = 10;
/// libwebrtc `kMaxNackPackets`.
pub const MAX_NACK_PACKETS: usize = 1000;
/// libwebrtc `kMaxPacketAge`: packets (and keyframes) this many numbers behind the newest are
/// forgotten.
pub const MAX_PACKET_AGE: u64 = 10_000;
/// libwebrtc `kDefaultRttMs`: the RTT assumed before a sample.
pub const DEFAULT_RTT: Duration = Duration(100_000_000);

#[derive(Debug, Clone, Copy)]
struct Missing {
    /// When the gap was seen.
    detected_at: Time,
    /// When the last request for it was sent (`None`: not yet).
    requested_at: Option<Time>,
    /// When the first request was sent.
    first_requested_at: Option<Time>,
    retries: u32,
}

#[derive(Debug, Clone)]
pub struct NackRequester {
    newest: Option<u64>,
    missing: BTreeMap<u64, Missing>,
    /// First packets of keyframes seen (libwebrtc's `keyframe_list_`).
    keyframes: BTreeSet<u64>,
    rtt: Duration,
    /// Packets given up on (retries exhausted or list overflow) since the last call to
    /// [`NackRequester::take_given_up`].
    given_up: u64,
    keyframe_needed: bool,
    /// How long a missing packet waits before its first request.
    delay: Duration,
}

impl Default for NackRequester {
    fn default() -> Self {
        NackRequester {
            newest: None,
            missing: BTreeMap::new(),
            keyframes: BTreeSet::new(),
            rtt: DEFAULT_RTT,
            given_up: 0,
            keyframe_needed: false,
            delay: Duration::ZERO,
        }
    }
}

impl NackRequester {
    /// A requester whose first request for a missing packet waits `delay` (libwebrtc's
    /// `send_nack_delay`).
    pub fn with_delay(delay: Duration) -> NackRequester {
        NackRequester {
            delay,
            ..NackRequester::default()
        }
    }

    /// The round-trip time repeated requests wait for.
    pub fn rtt(&self) -> Duration {
        self.rtt
    }

    /// Packets still missing.
    pub fn missing(&self) -> usize {
        self.missing.len()
    }

    /// Media packet `seq` (unwrapped RTP sequence number) arrived at `now`; `keyframe_start`: it
    /// is the first packet of a keyframe.
    pub fn on_packet(&mut self, now: Time, seq: u64, keyframe_start: bool) {
        if keyframe_start {
            self.keyframes.insert(seq);
            let oldest = seq.saturating_sub(MAX_PACKET_AGE);
            while self.keyframes.first().is_some_and(|&k| k < oldest) {
                self.keyframes.pop_first();
            }
        }
        let Some(newest) = self.newest else {
            self.newest = Some(seq);
            return;
        };
        if seq > newest {
            self.newest = Some(seq);
            if seq > newest + 1 {
                self.add_gap(now, newest + 1, seq);
            }
        } else if let Some(m) = self.missing.remove(&seq) {
            // Measured from the first request: requests repeat every RTT estimate, so timing
            // from the last one could only ever pull the estimate down (a copy answering a
            // later request makes the sample too long, the safe direction).
            if let Some(at) = m.first_requested_at {
                let sample = now.saturating_since(at);
                self.rtt = Duration((7 * self.rtt.0 + sample.0) / 8);
            }
        }
    }

    /// Packets `from..to` are missing, seen at `now`.
    fn add_gap(&mut self, now: Time, from: u64, to: u64) {
        self.missing = self.missing.split_off(&to.saturating_sub(MAX_PACKET_AGE));
        let new = (to - from) as usize;
        if self.missing.len() + new > MAX_NACK_PACKETS {
            while self.missing.len() + new > MAX_NACK_PACKETS && self.remove_until_keyframe() {}
            if self.missing.len() + new > MAX_NACK_PACKETS {
                self.given_up += (self.missing.len() + new) as u64;
                self.missing.clear();
                self.keyframe_needed = true;
                return;
            }
        }
        for s in from..to {
            self.missing.insert(
                s,
                Missing {
                    detected_at: now,
                    requested_at: None,
                    first_requested_at: None,
                    retries: 0,
                },
            );
        }
    }

    /// Drop the missing packets before the oldest keyframe that is newer than some of them;
    /// false if no keyframe does.
    fn remove_until_keyframe(&mut self) -> bool {
        while let Some(&k) = self.keyframes.first() {
            let before = self.missing.range(..k).count();
            if before > 0 {
                self.given_up += before as u64;
                self.missing = self.missing.split_off(&k);
                return true;
            }
            self.keyframes.pop_first(); // too old to remove anything
        }
        false
    }

    /// Forget missing packets below `seq` (their frames are no longer wanted).
    pub fn clear_up_to(&mut self, seq: u64) {
        self.missing = self.missing.split_off(&seq);
    }

    /// The sequence numbers to request at `now`; each counts as requested.
    pub fn poll_requests(&mut self, now: Time, out: &mut Vec<u64>) {
        out.clear();
        if self.missing.is_empty() {
            return; // the usual case, once per arriving packet
        }
        let (rtt, delay) = (self.rtt, self.delay);
        let mut exhausted = Vec::new();
        for (&seq, m) in self.missing.iter_mut() {
            let due = m.requested_at.map_or(m.detected_at + delay, |t| t + rtt);
            if now < due {
                continue;
            }
            if m.retries >= MAX_NACK_RETRIES {
                exhausted.push(seq);
                continue;
            }
            m.retries += 1;
            m.requested_at = Some(now);
            m.first_requested_at.get_or_insert(now);
            out.push(seq);
        }
        for seq in exhausted {
            self.missing.remove(&seq);
            self.given_up += 1;
        }
    }

    /// When a request is next due.
    pub fn poll_timeout(&self) -> Option<Time> {
        if self.missing.is_empty() {
            return None;
        }
        self.missing
            .values()
            .map(|m| {
                m.requested_at
                    .map_or(m.detected_at + self.delay, |t| t + self.rtt)
            })
            .min()
    }

    /// Packets given up on since the last call.
    pub fn take_given_up(&mut self) -> u64 {
        std::mem::take(&mut self.given_up)
    }

    /// Whether the list overflowed since the last call (the receiver should ask for a keyframe).
    pub fn take_keyframe_needed(&mut self) -> bool {
        std::mem::take(&mut self.keyframe_needed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Time {
        Time::from_millis(v)
    }

    #[test]
    fn with_a_delay_a_gap_is_requested_only_if_still_missing_after_it() {
        // C³G's client: packets not received 30 ms on are requested (c3g_rtvl.txt §V-B).
        let mut n = NackRequester::with_delay(Duration::from_millis(30));
        let mut out = Vec::new();
        n.on_packet(ms(0), 10, true);
        n.on_packet(ms(1), 13, false);
        n.poll_requests(ms(1), &mut out);
        assert!(out.is_empty(), "not at once");
        assert_eq!(n.poll_timeout(), Some(ms(31)));
        n.on_packet(ms(20), 12, false); // late, not lost: never requested
        n.poll_requests(ms(31), &mut out);
        assert_eq!(out, vec![11]);
        assert_eq!(
            n.poll_timeout(),
            Some(ms(131)),
            "then every RTT, as without a delay"
        );
    }

    #[test]
    fn requests_a_gap_at_once_then_every_rtt_and_gives_up_after_ten_tries() {
        let mut n = NackRequester::default();
        let mut out = Vec::new();
        n.on_packet(ms(0), 10, true);
        n.on_packet(ms(1), 13, false);
        n.poll_requests(ms(1), &mut out);
        assert_eq!(out, vec![11, 12], "a gap is requested at once");
        n.poll_requests(ms(50), &mut out);
        assert!(out.is_empty(), "not again within the 100 ms default RTT");
        assert_eq!(n.poll_timeout(), Some(ms(101)));
        n.on_packet(ms(60), 11, false);
        assert_eq!(n.missing(), 1, "11 arrived (retransmitted)");
        assert!(n.rtt() < DEFAULT_RTT, "a 59 ms sample pulls the RTT down");
        let mut t = 1;
        let mut requests = 1;
        loop {
            t += 200;
            n.poll_requests(ms(t), &mut out);
            if out.is_empty() {
                break;
            }
            requests += 1;
        }
        assert_eq!(requests, MAX_NACK_RETRIES, "ten requests, then none");
        assert_eq!(n.take_given_up(), 1);
        assert_eq!(n.missing(), 0);
    }

    #[test]
    fn the_rtt_follows_a_long_path_from_packets_requested_once() {
        // 300 ms round trips: each loss is repaired 300 ms after its first request. Sampling
        // from the last of several requests would keep the estimate at or below 100 ms.
        let mut n = NackRequester::default();
        let mut out = Vec::new();
        let mut t = 0;
        n.on_packet(ms(t), 0, true);
        for k in 0..50u64 {
            let lost = 2 * k + 1;
            t += 10;
            n.on_packet(ms(t), lost + 1, false);
            n.poll_requests(ms(t), &mut out);
            assert_eq!(out, vec![lost]);
            let requested = t;
            // Requests repeat every RTT estimate until the copy arrives 300 ms later.
            while t + 10 < requested + 300 {
                t += 10;
                n.poll_requests(ms(t), &mut out);
            }
            t = requested + 300;
            n.on_packet(ms(t), lost, false);
        }
        assert!(
            n.rtt() > Duration::from_millis(250),
            "the estimate follows the 300 ms path: {:?}",
            n.rtt()
        );
    }

    #[test]
    fn a_gap_beyond_the_list_clears_it_and_asks_for_a_keyframe() {
        let mut n = NackRequester::default();
        n.on_packet(ms(0), 0, true);
        n.on_packet(ms(1), 5, false);
        assert_eq!(n.missing(), 4);
        n.on_packet(ms(2), MAX_NACK_PACKETS as u64 + 11, false);
        assert_eq!(
            n.missing(),
            0,
            "nothing requested: the list and the gap are dropped"
        );
        assert!(n.take_keyframe_needed());
        assert_eq!(n.take_given_up(), 4 + MAX_NACK_PACKETS as u64 + 5);
    }

    #[test]
    fn a_full_list_first_drops_what_a_newer_keyframe_made_useless() {
        let mut n = NackRequester::default();
        n.on_packet(ms(0), 0, true);
        n.on_packet(ms(1), 601, false); // 1..=600 missing
        n.on_packet(ms(2), 602, true); // a keyframe starts at 602
        n.on_packet(ms(3), 1003, false); // 603..=1002 missing: 1000 in all
        assert_eq!(n.missing(), 1000);
        n.on_packet(ms(4), 1005, false); // one more: over the limit
        assert_eq!(
            n.missing(),
            401,
            "the 600 before the keyframe at 602 are dropped"
        );
        assert!(
            !n.take_keyframe_needed(),
            "the keyframe at 602 is enough to decode from"
        );
        assert_eq!(n.take_given_up(), 600);
    }
}
