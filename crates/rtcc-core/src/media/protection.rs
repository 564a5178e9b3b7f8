//! How much of the target rate the encoder gets when the sender also retransmits and sends FEC.
//!
//! The controller's target is for everything the flow sends. libwebrtc leaves the encoder what
//! the protection does not use (`FecControllerDefault::UpdateFecRates`,
//! modules/video_coding/fec_controller_default.cc): with the rates *sent* over the last second
//! (`RtpSenderEgress`'s 1000 ms `RateStatistics`) of video `V`, retransmissions `N` and FEC `F`,
//!
//! ```text
//!   overhead = min( (N + F) / (V + N + F), 0.5 )          (0.5: WebRTC-ProtectionOverheadRateThreshold)
//!   encoder target = target · (1 − overhead)
//! ```
//!
//! so a loss burst that is being repaired lowers the encoder's rate by what the repairs cost, and
//! media plus repairs stay at the target. Padding and probes count in none of the three.
//!
//! Retransmissions themselves are budgeted ([`RetransmissionBudget`]): libwebrtc's
//! `RTPSender::ReSendPacket` serves a NACK only if the retransmission rate over the last 500 ms
//! (`kRetransmitWindowSizeMs`) stays within the current target (`RateLimiter`, its maximum set
//! from the bandwidth estimate by `RtpTransportControllerSend`); a refused packet is asked for
//! again a round trip later. After an outage this keeps a flood of requests for packets lost in
//! a full queue from taking the whole link.

use crate::packet::PacketKind;
use crate::units::{Duration, Rate, Time};
use std::collections::VecDeque;

/// libwebrtc's retransmission window (`kRetransmitWindowSizeMs`).
pub const RETRANSMIT_WINDOW: Duration = Duration(500_000_000);

/// Bytes retransmitted in the last [`RETRANSMIT_WINDOW`], against a budget of the target rate.
#[derive(Debug, Default, Clone)]
pub struct RetransmissionBudget {
    used: VecDeque<(Time, u32)>,
    bytes: u64,
}

impl RetransmissionBudget {
    /// Take `size` bytes at `now` if the rate over the window stays within `max`.
    pub fn try_use(&mut self, now: Time, size: u32, max: Rate) -> bool {
        while let Some(&(t, b)) = self.used.front() {
            if now.saturating_since(t) < RETRANSMIT_WINDOW {
                break;
            }
            self.bytes -= b as u64;
            self.used.pop_front();
        }
        let allowed = max.bps() / 8.0 * RETRANSMIT_WINDOW.as_secs_f64();
        if (self.bytes + size as u64) as f64 > allowed {
            return false;
        }
        self.used.push_back((now, size));
        self.bytes += size as u64;
        true
    }
}

/// libwebrtc's send-rate window (`kBitrateStatisticsWindowMs`).
pub const RATE_WINDOW: Duration = Duration(1_000_000_000);
/// Largest share of the target protection may take (`overhead_threshold_` default).
pub const MAX_OVERHEAD: f64 = 0.5;

/// Bytes sent in the last [`RATE_WINDOW`] as video, retransmissions and FEC.
#[derive(Debug, Default, Clone)]
pub struct ProtectionRates {
    sent: VecDeque<(Time, u8, u32)>,
    /// Bytes in the window: video, retransmission, FEC.
    bytes: [u64; 3],
}

fn class(kind: PacketKind) -> Option<u8> {
    match kind {
        PacketKind::Media => Some(0),
        PacketKind::Retransmission => Some(1),
        PacketKind::Fec => Some(2),
        PacketKind::Padding | PacketKind::Probe | PacketKind::Control => None,
    }
}

impl ProtectionRates {
    pub fn on_sent(&mut self, now: Time, kind: PacketKind, size: u32) {
        if let Some(c) = class(kind) {
            self.sent.push_back((now, c, size));
            self.bytes[c as usize] += size as u64;
        }
        // The window is trimmed when it is read (once per frame); here only often enough to
        // bound its memory.
        if self.sent.len() >= 4096 {
            self.expire(now);
        }
    }

    fn expire(&mut self, now: Time) {
        while let Some(&(t, c, size)) = self.sent.front() {
            if now.saturating_since(t) < RATE_WINDOW {
                break;
            }
            self.bytes[c as usize] -= size as u64;
            self.sent.pop_front();
        }
    }

    /// Share of the sent bytes that were protection, capped at [`MAX_OVERHEAD`].
    pub fn overhead(&mut self, now: Time) -> f64 {
        self.expire(now);
        let total: u64 = self.bytes.iter().sum();
        if total == 0 {
            return 0.0;
        }
        ((self.bytes[1] + self.bytes[2]) as f64 / total as f64).min(MAX_OVERHEAD)
    }

    /// What the encoder gets of `target`.
    pub fn encoder_target(&mut self, now: Time, target: Rate) -> Rate {
        Rate(target.bps() * (1.0 - self.overhead(now)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repairs_take_their_share_of_the_target_for_one_second() {
        let mut p = ProtectionRates::default();
        let t = Time::from_millis;
        assert_eq!(
            p.encoder_target(t(0), Rate(1e6)),
            Rate(1e6),
            "nothing sent yet"
        );
        for i in 0..8 {
            p.on_sent(t(i * 10), PacketKind::Media, 1000);
        }
        p.on_sent(t(80), PacketKind::Retransmission, 1000);
        p.on_sent(t(90), PacketKind::Fec, 1000);
        p.on_sent(t(95), PacketKind::Padding, 50_000);
        // 2 of 10 kB were protection; padding does not count.
        assert!((p.overhead(t(100)) - 0.2).abs() < 1e-12);
        assert_eq!(p.encoder_target(t(100), Rate(1e6)), Rate(0.8e6));
        // A second later the repairs have left the window.
        p.on_sent(t(1085), PacketKind::Media, 1000);
        assert_eq!(p.overhead(t(1091)), 0.0);
    }

    #[test]
    fn retransmissions_stay_within_the_target_over_half_a_second() {
        let mut b = RetransmissionBudget::default();
        let t = Time::from_millis;
        // 1 Mbit/s: 62 500 bytes per 500 ms.
        let sent = (0..100)
            .filter(|_| b.try_use(t(0), 1000, Rate(1e6)))
            .count();
        assert_eq!(sent, 62);
        assert!(!b.try_use(t(499), 1000, Rate(1e6)));
        assert!(b.try_use(t(500), 1000, Rate(1e6)), "the window moved on");
    }

    #[test]
    fn protection_never_takes_more_than_half() {
        let mut p = ProtectionRates::default();
        p.on_sent(Time::ZERO, PacketKind::Retransmission, 10_000);
        p.on_sent(Time::ZERO, PacketKind::Media, 1_000);
        assert_eq!(p.overhead(Time::ZERO), MAX_OVERHEAD);
    }
}
