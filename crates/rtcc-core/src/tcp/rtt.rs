//! Linux's RTT estimator and RTO (`tcp_rtt_estimator`, `__tcp_set_rto`, `tcp_bound_rto` in
//! `net/ipv4/tcp_input.c`), which differ from RFC 6298's formula in one way that matters:
//! the variance term is at least `TCP_RTO_MIN`, so `RTO = SRTT + max(4·mdev, 200 ms)`, not
//! `max(SRTT + 4·RTTVAR, 200 ms)`. On a path with a standing queue (SRTT ≫ 200 ms, little
//! variance) RFC 6298's RTO sits just above the RTT; Linux's stays 200 ms above it.
//!
//! - `SRTT`: `7/8·SRTT + 1/8·R`; the first sample sets `SRTT = R`, `mdev = R/2`
//!   (so the first RTO is `3·R`, at least `R + 200 ms`).
//! - `mdev` (the mean deviation, kept as 4× it as Linux keeps `mdev_us`): `3/4·mdev + 1/4·|err|`,
//!   but when the sample is below SRTT and the error exceeds `mdev/4`, with 1/32 gain instead of
//!   1/4 (Linux's Eifel-like damping: a falling RTT does not inflate the RTO).
//! - `mdev_max`: the largest `mdev` of the current round trip, at least `TCP_RTO_MIN`; `rttvar`
//!   follows it up at once and down by a quarter of the gap once per round trip (when the
//!   cumulative ACK passes the `SND.NXT` recorded at the round's start, Linux `rtt_seq`).
//! - `RTO = SRTT + rttvar`, at most `TCP_RTO_MAX` (120 s); 1 s before any sample
//!   (`TCP_TIMEOUT_INIT`); doubled on each expiry (`icsk_rto << 1` in `tcp_retransmit_timer`)
//!   until the next sample recomputes it.

use crate::rto::{RTO_INITIAL, RTO_MAX, RTO_MIN};
use crate::units::Duration;

#[derive(Debug, Clone, Copy)]
pub struct LinuxRtt {
    srtt: Option<Duration>,
    /// 4 × the mean deviation (Linux `mdev_us`), and its maximum this round (`mdev_max_us`).
    mdev: u64,
    mdev_max: u64,
    rttvar: u64,
    /// The round ends when the cumulative ACK passes this sequence number (`rtt_seq`).
    rtt_seq: u64,
    rto: Duration,
}

impl Default for LinuxRtt {
    fn default() -> Self {
        LinuxRtt {
            srtt: None,
            mdev: 0,
            mdev_max: 0,
            rttvar: 0,
            rtt_seq: 0,
            rto: RTO_INITIAL,
        }
    }
}

impl LinuxRtt {
    pub fn srtt(&self) -> Option<Duration> {
        self.srtt
    }
    pub fn rto(&self) -> Duration {
        self.rto
    }

    /// A sample `r`; `una_passed(seq)`: whether the cumulative ACK has passed `seq`;
    /// `snd_nxt`: the next sequence number. Resets any backoff.
    pub fn on_sample(&mut self, r: Duration, una_passed: impl Fn(u64) -> bool, snd_nxt: u64) {
        let min = RTO_MIN.0;
        let m = r.0.max(1) as i128;
        match self.srtt {
            None => {
                self.srtt = Some(Duration(m as u64));
                self.mdev = (m as u64) * 2;
                self.rttvar = self.mdev.max(min);
                self.mdev_max = self.rttvar;
                self.rtt_seq = snd_nxt;
            }
            Some(srtt) => {
                let srtt = srtt.0 as i128;
                let mut err = m - srtt;
                let new_srtt = srtt + err / 8;
                let mdev = self.mdev as i128;
                if err < 0 {
                    err = -err - mdev / 4;
                    if err > 0 {
                        err /= 8;
                    }
                } else {
                    err -= mdev / 4;
                }
                self.mdev = (mdev + err / 4).max(0) as u64;
                if self.mdev > self.mdev_max {
                    self.mdev_max = self.mdev;
                    self.rttvar = self.rttvar.max(self.mdev_max);
                }
                if una_passed(self.rtt_seq) {
                    if self.mdev_max < self.rttvar {
                        self.rttvar -= (self.rttvar - self.mdev_max) / 4;
                    }
                    self.rtt_seq = snd_nxt;
                    self.mdev_max = min;
                }
                self.srtt = Some(Duration(new_srtt.max(1) as u64));
            }
        }
        let srtt = self.srtt.unwrap_or_default();
        self.rto = (srtt + Duration(self.rttvar)).min(RTO_MAX);
    }

    /// An expiry: the RTO doubles, up to `TCP_RTO_MAX`.
    pub fn back_off(&mut self) {
        self.rto = Duration(self.rto.0.saturating_mul(2)).min(RTO_MAX);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rto_stays_200_ms_above_a_steady_rtt() {
        let ms = Duration::from_millis;
        let mut t = LinuxRtt::default();
        assert_eq!(t.rto(), ms(1000));
        t.on_sample(ms(100), |_| false, 10);
        assert_eq!(t.rto(), ms(300), "3 × the first sample");
        for i in 0..200 {
            t.on_sample(ms(350), |s| s <= i, i + 1);
        }
        let rto = t.rto();
        assert!(
            rto > ms(549) && rto < ms(560),
            "SRTT 350 ms + the 200 ms floor: {rto:?}"
        );
        t.back_off();
        assert!(t.rto() > ms(1099), "doubled");
        t.on_sample(ms(350), |_| true, 300);
        assert!(t.rto() < ms(560), "a sample resets the backoff");
    }
}
