//! RACK, the time-based loss detection of RFC 8985 §6 (Linux `net/ipv4/tcp_recovery.c`): a
//! packet is lost once a packet sent after it has been delivered and it has been outstanding for
//! longer than `RACK.rtt + reo_wnd`.
//!
//! rtcc numbers every transmission (a retransmission gets a sequence number of its own), so the
//! sequence number orders transmissions by send time and a delivery is never ambiguous: there is
//! no retransmission ambiguity to guard against (RFC 8985 §6.2 step 1's timestamp and min-RTT
//! checks, Linux `tcp_rack_advance`'s `TCPCB_RETRANS` test).
//!
//! - `RACK.xmit_ts` / `RACK.end_seq`: the send time and number of the most recently sent
//!   delivered packet; `RACK.rtt`: the RTT of the packet last processed, packets of an ACK being
//!   processed in send order (§6.2 step 2, Linux `tcp_rack_advance`).
//! - Reordering (§6.2 step 3, Linux `tcp_check_sack_reordering`): a packet delivered after a
//!   packet sent later than it (its number below `RACK.fack`, the highest delivered) means the
//!   path reorders; `reordering_seen` stays set for the connection.
//! - The reordering window (§6.2 step 4, Linux `tcp_rack_reo_wnd`): zero while no reordering
//!   has been seen and the sender is in loss recovery or has `DupThresh` (3) packets delivered
//!   above a hole (RACK then marks at once, as the duplicate-ACK threshold would); otherwise
//!   `min(reo_wnd_mult · min_rtt / 4, SRTT)`. `min_rtt` is the windowed minimum of Linux
//!   (`tcp_min_rtt`, `sysctl_tcp_min_rtt_wlen` = 300 s).
//! - The window grows with DSACKs (§6.2 step 4, Linux `tcp_rack_update_reo_wnd`): a duplicate
//!   delivery (here: a piece of the stream delivered a second time, what a DSACK reports) raises
//!   `reo_wnd_mult` by one, at most once per round trip (until the cumulative ACK passes the
//!   `SND.NXT` of the increase), and keeps it for 16 loss recoveries (`reo_wnd_persist`), after
//!   which it falls back to 1.
//! - Detection (§6.2 step 5, Linux `tcp_rack_detect_loss`): each outstanding packet sent before
//!   `RACK.xmit_ts` whose deadline `xmit_ts + RACK.rtt + reo_wnd` has passed is lost; for those
//!   not yet due the reordering timer is set to the latest deadline (§6.3, `tcp_rack_mark_lost`;
//!   Linux adds two jiffies of timer slack, rtcc's clock is exact and adds none).

use crate::units::{Duration, Time};

/// RFC 8985 §6.2 `DupThresh` (Linux `sysctl_tcp_reordering`, 3).
pub const DUP_THRESH: usize = 3;
/// Loss recoveries a grown reordering window is kept for (RFC 8985 §6.2, Linux
/// `TCP_RACK_RECOVERY_THRESH`).
pub const REO_WND_PERSIST: u32 = 16;
/// Window of the minimum-RTT filter (Linux `sysctl_tcp_min_rtt_wlen`, 300 s).
pub const MIN_RTT_WINDOW: Duration = Duration(300_000_000_000);

#[derive(Debug, Clone)]
pub struct Rack {
    /// `RACK.xmit_ts` and `RACK.end_seq`: the most recently sent delivered packet.
    xmit: Option<(Time, u64)>,
    /// `RACK.rtt`.
    rtt: Duration,
    /// `RACK.fack`: the highest sequence number delivered.
    fack: Option<u64>,
    /// `RACK.reordering_seen`.
    pub reordering_seen: bool,
    /// Windowed minimum RTT and when it was taken.
    min_rtt: Option<(Duration, Time)>,
    /// `RACK.reo_wnd_mult`, `RACK.reo_wnd_persist`, `RACK.dsack_round`.
    reo_wnd_mult: u32,
    reo_wnd_persist: u32,
    dsack_round: Option<u64>,
    /// A delivery since the last detection (Linux `rack.advanced`).
    advanced: bool,
}

impl Default for Rack {
    fn default() -> Self {
        Rack {
            xmit: None,
            rtt: Duration::ZERO,
            fack: None,
            reordering_seen: false,
            min_rtt: None,
            reo_wnd_mult: 1,
            reo_wnd_persist: 0,
            dsack_round: None,
            advanced: false,
        }
    }
}

impl Rack {
    /// Packet `seq`, sent at `sent`, was delivered (reported at `now`). Call in ascending order
    /// of `seq` within one acknowledgement.
    pub fn on_delivered(&mut self, seq: u64, sent: Time, now: Time) {
        match self.fack {
            Some(f) if seq < f => self.reordering_seen = true,
            _ => self.fack = Some(seq),
        }
        self.rtt = now - sent;
        self.advanced = true;
        if self.xmit.is_none_or(|x| (sent, seq) > x) {
            self.xmit = Some((sent, seq));
        }
    }

    /// An RTT sample for the windowed minimum.
    pub fn on_rtt_sample(&mut self, rtt: Duration, now: Time) {
        let expired = self.min_rtt.is_some_and(|(_, t)| now - t > MIN_RTT_WINDOW);
        if expired || self.min_rtt.is_none_or(|(m, _)| rtt <= m) {
            self.min_rtt = Some((rtt, now));
        }
    }

    pub fn min_rtt(&self) -> Option<Duration> {
        self.min_rtt.map(|(m, _)| m)
    }

    /// RFC 8985 §6.2 step 4's DSACK rule. `dsack`: this acknowledgement reported a duplicate
    /// delivery; `una_passed(round)`: the cumulative ACK has passed `round`; `snd_nxt`: the next
    /// sequence number.
    pub fn update_reo_wnd(&mut self, dsack: bool, una_passed: impl Fn(u64) -> bool, snd_nxt: u64) {
        if self.dsack_round.is_some_and(&una_passed) {
            self.dsack_round = None;
        }
        if dsack && self.dsack_round.is_none() {
            self.reo_wnd_mult = self.reo_wnd_mult.saturating_add(1);
            self.reo_wnd_persist = REO_WND_PERSIST;
            self.dsack_round = Some(snd_nxt);
        }
    }

    /// A loss recovery ended (RFC 8985 §6.2 step 4).
    pub fn on_recovery_exit(&mut self) {
        self.reo_wnd_persist = self.reo_wnd_persist.saturating_sub(1);
        if self.reo_wnd_persist == 0 {
            self.reo_wnd_mult = 1;
        }
    }

    pub fn reo_wnd_mult(&self) -> u32 {
        self.reo_wnd_mult
    }

    /// The reordering window: `in_recovery` (fast recovery or after an RTO), `sacked` packets
    /// delivered above the lowest undelivered one.
    pub fn reo_wnd(&self, in_recovery: bool, sacked: usize, srtt: Option<Duration>) -> Duration {
        if !self.reordering_seen && (in_recovery || sacked >= DUP_THRESH) {
            return Duration::ZERO;
        }
        let Some(min_rtt) = self.min_rtt() else {
            return Duration::ZERO;
        };
        let wnd = Duration(min_rtt.0 / 4 * self.reo_wnd_mult as u64);
        srtt.map_or(wnd, |s| wnd.min(s))
    }

    /// `RACK.rtt`: the RTT of the packet last delivered (zero before any).
    pub fn rtt(&self) -> Duration {
        self.rtt
    }

    /// Ask for a detection pass (Linux `tcp_undo_cwnd_reduction` sets `rack.advanced` so that
    /// the packets an undo put back in flight are judged again).
    pub fn force_advance(&mut self) {
        self.advanced = true;
    }

    /// Whether a detection pass is due (a delivery since the last), clearing the flag.
    pub fn take_advanced(&mut self) -> bool {
        std::mem::take(&mut self.advanced)
    }

    /// For an outstanding packet `seq` sent at `sent`: `None` if it was not sent before the most
    /// recently sent delivered packet (RACK cannot judge it yet), else the time left until it
    /// is lost (zero: lost now).
    pub fn remaining(
        &self,
        seq: u64,
        sent: Time,
        reo_wnd: Duration,
        now: Time,
    ) -> Option<Duration> {
        let (xt, xs) = self.xmit?;
        if (sent, seq) >= (xt, xs) {
            return None;
        }
        let deadline = sent + self.rtt + reo_wnd;
        Some(if deadline > now {
            deadline - now
        } else {
            Duration::ZERO
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Time {
        Time::from_millis(v)
    }

    #[test]
    fn a_packet_is_lost_once_a_later_one_is_delivered_and_its_deadline_passes() {
        let mut r = Rack::default();
        r.on_rtt_sample(Duration::from_millis(40), ms(40));
        // Packets 0..4 sent 1 ms apart; 0 is delivered at 40 ms, 2 at 42 ms (1 is missing).
        r.on_delivered(0, ms(0), ms(40));
        r.on_delivered(2, ms(2), ms(42));
        let wnd = r.reo_wnd(false, 1, Some(Duration::from_millis(40)));
        assert_eq!(wnd, Duration::from_millis(10), "min_rtt / 4");
        assert_eq!(
            r.remaining(1, ms(1), wnd, ms(42)),
            Some(Duration::from_millis(9)),
            "1 + 40 + 10 - 42"
        );
        assert_eq!(
            r.remaining(3, ms(3), wnd, ms(42)),
            None,
            "sent after packet 2"
        );
        assert_eq!(r.remaining(1, ms(1), wnd, ms(51)), Some(Duration::ZERO));
        assert_eq!(
            r.reo_wnd(false, 3, Some(Duration::from_millis(40))),
            Duration::ZERO,
            "three delivered above the hole: the duplicate-ACK threshold"
        );
        assert_eq!(r.reo_wnd(true, 1, None), Duration::ZERO, "in recovery");
        assert!(!r.reordering_seen);
        r.on_delivered(1, ms(1), ms(45));
        assert!(r.reordering_seen, "delivered below RACK.fack");
        assert_eq!(
            r.reo_wnd(true, 3, Some(Duration::from_millis(40))),
            Duration::from_millis(10),
            "once reordering is seen the window stays"
        );
    }

    #[test]
    fn dsacks_grow_the_window_once_per_round_and_sixteen_recoveries_shrink_it() {
        let mut r = Rack {
            reordering_seen: true,
            ..Rack::default()
        };
        r.on_rtt_sample(Duration::from_millis(40), ms(0));
        let srtt = Some(Duration::from_millis(100));
        r.update_reo_wnd(true, |_| false, 50);
        r.update_reo_wnd(true, |_| false, 60);
        assert_eq!(r.reo_wnd_mult(), 2, "one increase per round trip");
        r.update_reo_wnd(true, |round| round <= 55, 70);
        assert_eq!(
            r.reo_wnd_mult(),
            3,
            "the round ended: the next DSACK counts"
        );
        assert_eq!(r.reo_wnd(false, 0, srtt), Duration::from_millis(30));
        assert_eq!(
            r.reo_wnd(false, 0, Some(Duration::from_millis(20))),
            Duration::from_millis(20),
            "bounded by SRTT"
        );
        for _ in 0..15 {
            r.on_recovery_exit();
        }
        assert_eq!(r.reo_wnd_mult(), 3);
        r.on_recovery_exit();
        assert_eq!(r.reo_wnd_mult(), 1);
    }
}
