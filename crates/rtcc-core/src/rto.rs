//! The retransmission timer of RFC 6298, used by the video sender (the TCP-like bulk sender runs
//! Linux's variant, `tcp/rtt.rs`, with the same constants).
//!
//! - Every RTT sample `R` updates the smoothed RTT and its variation (§2.2–2.3):
//!   first sample `SRTT = R, RTTVAR = R/2`; then `RTTVAR = 3/4·RTTVAR + 1/4·|SRTT − R|`,
//!   `SRTT = 7/8·SRTT + 1/8·R`; and `RTO = SRTT + 4·RTTVAR`, clamped to Linux's
//!   `[TCP_RTO_MIN, TCP_RTO_MAX]` = [200 ms, 120 s].
//! - Before any sample the RTO is 1 s (§2.1).
//! - The timer runs while data is outstanding, is restarted when new data is acknowledged
//!   (§5.3), and on expiry the RTO doubles (§5.5, exponential backoff) until the next sample.

use crate::units::{Duration, Time};

/// Linux `TCP_RTO_MIN`.
pub const RTO_MIN: Duration = Duration(200_000_000);
/// Linux `TCP_RTO_MAX`.
pub const RTO_MAX: Duration = Duration(120_000_000_000);
/// RFC 6298 §2.1: the RTO before any RTT sample.
pub const RTO_INITIAL: Duration = Duration(1_000_000_000);

#[derive(Debug, Clone, Copy)]
pub struct RtoTimer {
    /// Largest RTO, also after backoff (RFC 6298 §2.5 allows any cap of at least 60 s for
    /// TCP; real-time senders use a lower one, see [`RtoTimer::with_max`]).
    max: Duration,
    srtt: Option<Duration>,
    rttvar: Duration,
    rto: Duration,
    deadline: Option<Time>,
    /// Expiries so far.
    pub expiries: u64,
}

impl Default for RtoTimer {
    fn default() -> Self {
        RtoTimer {
            max: RTO_MAX,
            srtt: None,
            rttvar: Duration::ZERO,
            rto: RTO_INITIAL,
            deadline: None,
            expiries: 0,
        }
    }
}

impl RtoTimer {
    /// A timer whose RTO never exceeds `max` (nor backs off beyond it).
    pub fn with_max(max: Duration) -> RtoTimer {
        RtoTimer {
            max,
            ..RtoTimer::default()
        }
    }

    pub fn srtt(&self) -> Option<Duration> {
        self.srtt
    }
    pub fn rto(&self) -> Duration {
        self.rto
    }
    /// When the timer fires, if it runs.
    pub fn deadline(&self) -> Option<Time> {
        self.deadline
    }

    /// A new RTT sample (§2.2–2.3); resets any backoff.
    pub fn on_rtt_sample(&mut self, r: Duration) {
        match self.srtt {
            None => {
                self.srtt = Some(r);
                self.rttvar = Duration(r.0 / 2);
            }
            Some(srtt) => {
                let diff = Duration(srtt.0.abs_diff(r.0));
                self.rttvar = Duration((3 * self.rttvar.0 + diff.0) / 4);
                self.srtt = Some(Duration((7 * srtt.0 + r.0) / 8));
            }
        }
        let rto = self.srtt.unwrap_or(r) + Duration(4 * self.rttvar.0);
        self.rto = rto.clamp(RTO_MIN, self.max.max(RTO_MIN));
    }

    /// New data was acknowledged (§5.3): restart the timer if data is still outstanding,
    /// stop it otherwise.
    pub fn restart(&mut self, now: Time, outstanding: bool) {
        self.deadline = outstanding.then_some(now + self.rto);
    }

    /// Data was sent (§5.1): start the timer if it is not running.
    pub fn on_send(&mut self, now: Time) {
        self.deadline.get_or_insert(now + self.rto);
    }

    pub fn stop(&mut self) {
        self.deadline = None;
    }

    /// Whether the timer fired at `now`; if so it is stopped and the RTO backs off (§5.5).
    pub fn poll_expired(&mut self, now: Time) -> bool {
        if self.deadline.is_none_or(|t| t > now) {
            return false;
        }
        self.expiries += 1;
        self.rto = Duration(self.rto.0.saturating_mul(2)).min(self.max);
        self.deadline = None;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn follows_rfc_6298_and_backs_off() {
        let mut t = RtoTimer::default();
        assert_eq!(t.rto(), RTO_INITIAL, "1 s before any sample (§2.1)");
        t.on_rtt_sample(Duration::from_millis(100));
        // SRTT 100, RTTVAR 50: RTO = 100 + 200 = 300 ms.
        assert_eq!(t.rto(), Duration::from_millis(300));
        t.on_send(Time::ZERO);
        assert_eq!(t.deadline(), Some(Time::from_millis(300)));
        assert!(!t.poll_expired(Time::from_millis(299)));
        assert!(t.poll_expired(Time::from_millis(300)));
        assert_eq!(
            t.rto(),
            Duration::from_millis(600),
            "doubled on expiry (§5.5)"
        );
        assert_eq!(t.deadline(), None);
        for _ in 0..100 {
            t.on_rtt_sample(Duration::from_millis(10));
        }
        assert_eq!(t.rto(), RTO_MIN, "clamped to Linux's 200 ms minimum");
    }
}
