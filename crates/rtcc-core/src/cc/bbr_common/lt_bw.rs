//! BBR's long-term ("policer") bandwidth estimator, Linux `tcp_bbr.c` (`bbr_lt_bw_sampling()`,
//! `bbr_lt_bw_interval_done()`, `bbr_reset_lt_bw_sampling()`; added in Linux 4.10 by Neal
//! Cardwell, "tcp_bbr: add a BBR long-term ("policer") bandwidth estimator").
//!
//! A token-bucket policer lets a burst through and then drops everything above its rate. BBR's
//! windowed-maximum filter remembers the burst's delivery rate for ten round trips and keeps
//! sending above the policed rate, so it loses a large share of its packets for as long as the
//! policer holds. The long-term estimator notices the pattern, two sampling intervals in a row
//! with heavy loss and about the same delivery rate, and then paces at their average:
//!
//! 1. Sampling starts at the first loss (so that the policer has used up its tokens; an interval
//!    that began earlier would include the burst and overestimate the rate). It restarts if the
//!    flow becomes application-limited (its rate then says nothing about the path).
//! 2. An interval lasts at least 4 round trips (`bbr_lt_intvl_min_rtts`) and at most 16
//!    (reset beyond), and ends at a loss once the loss ratio over the interval is at least 20 %
//!    (`bbr_lt_loss_thresh` = 50/256). Its rate is the packets delivered over the interval's
//!    time, measured between delivery timestamps in whole milliseconds.
//! 3. If the previous interval's rate is within 1/8 (`bbr_lt_bw_ratio`) or 4 kbit/s
//!    (`bbr_lt_bw_diff`) of this one, the flow is deemed policed: `lt_bw` becomes their average,
//!    BBR uses it instead of the windowed maximum, and PROBE_BW's pacing gain is held at 1 (no
//!    probing above a rate a policer will drop). Otherwise this interval becomes the previous one.
//! 4. After 48 round trips in PROBE_BW (`bbr_lt_bw_max_rtts`) BBR stops using `lt_bw`, starts
//!    sampling afresh and restarts its gain cycle, in case the policer has gone.
//!
//! A retransmission timeout counts as a loss and as the end of a round (`bbr_set_state()`).
//! Rates here are bytes per second (Linux: packets per µs in 2⁻²⁴ units); the loss ratio is
//! bytes lost over bytes delivered, which is Linux's packet ratio for full-size segments.

use crate::units::Time;

/// Linux `bbr_lt_intvl_min_rtts`: the shortest sampling interval, in round trips.
pub(crate) const LT_INTVL_MIN_RTTS: u32 = 4;
/// Linux `bbr_lt_loss_thresh` = 50 (of 256): the loss ratio (lost / delivered) that ends an
/// interval, about 20 %.
pub(crate) const LT_LOSS_THRESH: f64 = 50.0 / 256.0;
/// Linux `bbr_lt_bw_ratio` = `BBR_UNIT / 8`: two intervals' rates this close are "the same".
pub(crate) const LT_BW_RATIO: f64 = 1.0 / 8.0;
/// Linux `bbr_lt_bw_diff` = 4000 / 8 bytes per second: or this close, in absolute terms.
pub(crate) const LT_BW_DIFF: f64 = 4000.0 / 8.0;
/// Linux `bbr_lt_bw_max_rtts`: round trips in PROBE_BW before `lt_bw` is dropped.
pub(crate) const LT_BW_MAX_RTTS: u32 = 48;

/// What one acknowledgement tells the estimator.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LtAck {
    /// This acknowledgement ended a round trip.
    pub round_start: bool,
    /// Bytes newly declared lost (Linux `rs->losses`, in packets).
    pub losses: u64,
    pub is_app_limited: bool,
    /// The connection's totals so far: bytes delivered and lost, and when delivery last grew.
    pub delivered: u64,
    pub lost: u64,
    pub delivered_time: Time,
    /// BBR is in PROBE_BW.
    pub probe_bw: bool,
}

/// What the caller must do after [`LongTermBw::on_ack`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LtEvent {
    None,
    /// The flow is now deemed policed: hold the pacing gain at 1.
    Policed,
    /// `lt_bw` was dropped after 48 rounds: restart PROBE_BW's gain cycle.
    Expired,
}

#[derive(Debug, Clone, Default)]
pub(crate) struct LongTermBw {
    /// The policed rate estimate, bytes per second (0: none).
    lt_bw: f64,
    use_bw: bool,
    is_sampling: bool,
    rtt_cnt: u32,
    /// The interval's start: delivery time in whole milliseconds, delivered and lost bytes.
    last_stamp_ms: u64,
    last_delivered: u64,
    last_lost: u64,
}

impl LongTermBw {
    /// The rate BBR should use instead of its filter, when the flow is deemed policed.
    pub fn rate(&self) -> Option<f64> {
        self.use_bw.then_some(self.lt_bw)
    }

    /// The last interval's (or the policed) rate, bytes per second, 0 if none; for logs.
    pub fn estimate(&self) -> f64 {
        self.lt_bw
    }

    /// `bbr_reset_lt_bw_sampling_interval()`.
    fn reset_interval(&mut self, a: &LtAck) {
        self.last_stamp_ms = a.delivered_time.0 / 1_000_000;
        self.last_delivered = a.delivered;
        self.last_lost = a.lost;
        self.rtt_cnt = 0;
    }

    /// `bbr_reset_lt_bw_sampling()`.
    fn reset(&mut self, a: &LtAck) {
        self.lt_bw = 0.0;
        self.use_bw = false;
        self.is_sampling = false;
        self.reset_interval(a);
    }

    /// `bbr_lt_bw_interval_done()`.
    fn interval_done(&mut self, bw: f64, a: &LtAck) -> LtEvent {
        if self.lt_bw > 0.0 {
            let diff = (bw - self.lt_bw).abs();
            if diff <= LT_BW_RATIO * self.lt_bw || diff <= LT_BW_DIFF {
                self.lt_bw = (bw + self.lt_bw) / 2.0;
                self.use_bw = true;
                self.rtt_cnt = 0;
                return LtEvent::Policed;
            }
        }
        self.lt_bw = bw;
        self.reset_interval(a);
        LtEvent::None
    }

    /// `bbr_lt_bw_sampling()`, on an acknowledgement with a valid rate sample (or a timeout).
    pub fn on_ack(&mut self, a: &LtAck) -> LtEvent {
        if self.use_bw {
            if a.probe_bw && a.round_start {
                self.rtt_cnt += 1;
                if self.rtt_cnt >= LT_BW_MAX_RTTS {
                    self.reset(a);
                    return LtEvent::Expired;
                }
            }
            return LtEvent::None;
        }
        if !self.is_sampling {
            if a.losses == 0 {
                return LtEvent::None;
            }
            self.reset_interval(a);
            self.is_sampling = true;
        }
        if a.is_app_limited {
            self.reset(a);
            return LtEvent::None;
        }
        if a.round_start {
            self.rtt_cnt += 1;
        }
        if self.rtt_cnt < LT_INTVL_MIN_RTTS {
            return LtEvent::None;
        }
        if self.rtt_cnt > 4 * LT_INTVL_MIN_RTTS {
            self.reset(a);
            return LtEvent::None;
        }
        if a.losses == 0 {
            return LtEvent::None;
        }
        let lost = a.lost - self.last_lost;
        let delivered = a.delivered - self.last_delivered;
        if delivered == 0 || (lost as f64) < LT_LOSS_THRESH * delivered as f64 {
            return LtEvent::None;
        }
        let t_ms = (a.delivered_time.0 / 1_000_000).saturating_sub(self.last_stamp_ms);
        if t_ms < 1 {
            return LtEvent::None;
        }
        let bw = delivered as f64 / (t_ms as f64 / 1000.0);
        self.interval_done(bw, a)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1500;

    /// A policed flow: every round of `ms` milliseconds delivers `per_round` packets and loses
    /// `lost` (at the end of the round, with the round's last acknowledgement).
    struct Flow {
        lt: LongTermBw,
        delivered: u64,
        lost: u64,
        t_ms: u64,
    }

    impl Flow {
        fn new() -> Flow {
            Flow {
                lt: LongTermBw::default(),
                delivered: 0,
                lost: 0,
                t_ms: 0,
            }
        }
        fn round(&mut self, ms: u64, per_round: u64, lost: u64) -> LtEvent {
            let mut last = LtEvent::None;
            for i in 0..per_round {
                self.delivered += MSS;
                self.t_ms += ms / per_round;
                let end = i + 1 == per_round;
                if end {
                    self.lost += lost * MSS;
                }
                let ev = self.lt.on_ack(&LtAck {
                    round_start: i == 0,
                    losses: if end { lost * MSS } else { 0 },
                    is_app_limited: false,
                    delivered: self.delivered,
                    lost: self.lost,
                    delivered_time: Time(self.t_ms * 1_000_000),
                    probe_bw: true,
                });
                if ev != LtEvent::None {
                    last = ev;
                }
            }
            last
        }
    }

    #[test]
    fn two_lossy_intervals_at_the_same_rate_mean_a_policer() {
        let mut f = Flow::new();
        // 10 packets per 10 ms round (1.5 MB/s), 3 of them lost each round (30 %).
        let mut events = Vec::new();
        for _ in 0..12 {
            events.push(f.round(10, 10, 3));
        }
        let policed = events.iter().position(|e| *e == LtEvent::Policed);
        // The first loss starts sampling; the first interval closes after 4 more rounds, the
        // second 4 rounds later, and they agree.
        assert_eq!(policed, Some(8), "{events:?}");
        let rate = f.lt.rate().expect("policed");
        assert!((rate - 1.5e6).abs() < 0.02 * 1.5e6, "{rate}");
    }

    #[test]
    fn light_loss_or_changing_rates_are_not_a_policer() {
        let mut f = Flow::new();
        for _ in 0..30 {
            assert_eq!(f.round(10, 10, 1), LtEvent::None, "10 % loss is below 20 %");
        }
        assert_eq!(f.lt.rate(), None);
        // Heavy loss, but the rate doubles from one interval to the next.
        let mut f = Flow::new();
        for r in 0..16 {
            let per_round = if r < 6 { 10 } else { 20 };
            assert_eq!(f.round(10, per_round, per_round * 3 / 10), LtEvent::None);
        }
        assert_eq!(f.lt.rate(), None);
    }

    #[test]
    fn lt_bw_expires_after_48_rounds_in_probe_bw() {
        let mut f = Flow::new();
        for _ in 0..9 {
            f.round(10, 10, 3);
        }
        assert!(f.lt.rate().is_some());
        let mut expired_at = None;
        for r in 0..60 {
            if f.round(10, 10, 0) == LtEvent::Expired {
                expired_at = Some(r);
                break;
            }
        }
        assert_eq!(expired_at, Some(47), "the 48th round trip in PROBE_BW");
        assert_eq!(f.lt.rate(), None);
    }

    #[test]
    fn an_app_limited_sample_restarts_sampling() {
        let mut f = Flow::new();
        for _ in 0..5 {
            f.round(10, 10, 3);
        }
        f.lt.on_ack(&LtAck {
            round_start: false,
            losses: 0,
            is_app_limited: true,
            delivered: f.delivered,
            lost: f.lost,
            delivered_time: Time(f.t_ms * 1_000_000),
            probe_bw: true,
        });
        assert_eq!(
            f.lt.estimate(),
            0.0,
            "the first interval's rate is forgotten"
        );
        assert!(!f.lt.is_sampling);
    }
}
