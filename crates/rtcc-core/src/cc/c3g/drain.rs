//! The reactive branch (§IV-A, Eq. 2): within a congestion episode, drain when RTVL~1 (the
//! period's samples extrapolated one period ahead) or RTVL~2 (the newest RTVL plus the queue
//! qdData drained at μ̄) would pass RTVL_th; a drain holds λ_hold = max(v_min, μ̄ − qdData/Δt)
//! for T_drain, then jumps to the operating point λ_OOP = μ̄. qdData is at least what the
//! paper's RTVL model reads (RTVL − RTVL_min)·μ̄, and T_drain is capped at [`MAX_DRAIN`] (ours).
//! The module header of `c3g` gives the equations and the judgment calls.

use super::meter::Period;
use super::rtvl::extrapolate;
use super::{C3g, Phase};
use crate::units::{Duration, Time};

/// The longest drain (ours): T_drain = qdData/(μ̄ − v_min) grows without bound as μ̄ nears
/// v_min; an outage would hold the floor long after the link came back.
const MAX_DRAIN: Duration = Duration(2_000_000_000);

/// Window of RTVL_min for the queue estimate at a drain (ours; BBR's RTprop window is 10 s).
pub(super) const RTVL_MIN_WINDOW: Duration = Duration(10_000_000_000);

impl C3g {
    /// RTVL(t_last): the period's newest sample, else the last period's RTVL.
    fn last_rtvl(&self, p: &Period) -> Option<f64> {
        p.rtvl.last().map(|s| s.1).or(self.previous_rtvl)
    }

    pub(super) fn drain_needed(&self, p: &Period, next: Time) -> bool {
        let th = self.cfg.rtvl_threshold.as_millis_f64();
        let by_trend = extrapolate(&p.rtvl, next).is_some_and(|r| r > th);
        let by_queue = match self.last_rtvl(p) {
            Some(last) if p.received_bps > 0.0 => {
                last + self.queued_bits / p.received_bps * 1e3 > th
            }
            _ => false,
        };
        by_trend || by_queue
    }

    /// The bits queued as the paper's model reads them from RTVL (§III-B:
    /// RTVL = RTVL_min + qdData / c_btl), with RTVL_min the smallest sample of the last 10 s.
    pub(super) fn queued_by_rtvl(&self, p: &Period) -> f64 {
        let floor = self.rtvl_floor.iter().map(|s| s.1).reduce(f64::min);
        match (floor, self.last_rtvl(p)) {
            (Some(f), Some(l)) => ((l - f).max(0.0) / 1e3) * p.received_bps,
            _ => 0.0,
        }
    }

    pub(super) fn drain(&mut self, p: &Period, now: Time) {
        let dt = self.cfg.interval.as_secs_f64();
        // μ̄(t_drain), the capacity while the queue is full: the median of the window's reports,
        // each the paper's μ(t) of one Δt (ours). The window's mean would still hold arrivals
        // from before a capacity drop (8.1 Mbit/s 150 ms after a drop to 7), and λ_OOP at that
        // rate overflows the queue again right after the drain; the newest report alone reads a
        // burst of lost packets as the capacity (0.35 Mbit/s on a 4 Mbit/s link).
        let mu = p.received_median_bps;
        // qdData sums only the periods above ε, so a queue that grew slowly before the episode
        // is missed and would stand after the drain; the RTVL model's estimate covers it (ours).
        self.queued_bits = self.queued_bits.max(self.queued_by_rtvl(p));
        let drain_rate = mu - self.queued_bits / dt; // Eq. 2
        let hold = drain_rate.max(self.min_rate);
        let seconds = if mu - hold > 0.0 {
            self.queued_bits / (mu - hold)
        } else {
            // μ̄ at or below v_min: hold the floor until μ̄ could have emptied the queue.
            self.queued_bits / mu.max(1.0)
        }
        .min(MAX_DRAIN.as_secs_f64());
        // The period that forced the drain is rated and stored, so its rate carries the bad R.
        if let Some((lambda, rating)) = self.rate_period() {
            let key = self.key(lambda);
            self.states.insert(key, rating);
        }
        self.drains += 1;
        self.phase = Phase::Drain {
            until: now + Duration::from_secs_f64(seconds.max(dt)),
            oop: mu.max(self.min_rate),
        };
        self.set_lambda(hold);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::c3g::meter::median;
    use crate::cc::c3g::tests::{c3g, ms};

    #[test]
    fn rtvl_2_adds_the_queue_drained_at_the_received_rate() {
        // RTVL~2 = 80 ms + 210 kbit / 7 Mbit/s = 110 ms > 100 ms: drain; with 140 kbit, 100 ms: not.
        let mut c = c3g();
        let p = Period {
            received_bps: 7e6,
            rtvl: vec![(ms(1000), 80.0)],
            ..Period::default()
        };
        c.queued_bits = 210e3;
        assert!(c.drain_needed(&p, ms(1100)));
        c.queued_bits = 140e3;
        assert!(!c.drain_needed(&p, ms(1100)));
    }

    #[test]
    fn a_drain_never_holds_the_floor_for_more_than_two_seconds() {
        // μ̄ just above v_min (3 Mbit/s) with 1 Mbit queued: qd/(μ̄ − v_min) would be 100 s.
        let mut c = c3g();
        c.queued_bits = 1e6;
        let p = Period {
            received_bps: 3.01e6,
            received_median_bps: 3.01e6,
            ..Period::default()
        };
        c.drain(&p, ms(1000));
        assert!(matches!(c.phase, Phase::Drain { until, .. } if until == ms(3000)));
    }

    #[test]
    fn lambda_oop_is_the_median_report_not_the_windows_mean() {
        // Reports of 10.5, 7, 7 and 7 Mbit/s: the capacity fell to 7 a report ago. The window's
        // mean (7.9) would overflow the queue again after the drain; so would one report that a
        // loss burst emptied read as the capacity.
        assert_eq!(median(vec![10.5e6, 7e6, 7e6, 7e6]), Some(7e6));
        assert_eq!(median(vec![4e6, 0.35e6, 4e6]), Some(4e6));
        assert_eq!(median(vec![]), None);
        let mut c = c3g();
        c.queued_bits = 100e3;
        let p = Period {
            received_bps: 7.9e6,
            received_median_bps: 7e6,
            ..Period::default()
        };
        c.drain(&p, ms(1000));
        assert!(matches!(c.phase, Phase::Drain { oop, .. } if oop == 7e6));
    }

    #[test]
    fn a_drain_empties_the_queue_in_one_period_or_holds_v_min_longer() {
        // μ̄ 7 Mbit/s with 100 kbit queued: 7 − 0.1/0.1 = 6 Mbit/s for one period, then 7.
        let mut c = c3g();
        let p = Period {
            received_bps: 7e6,
            received_median_bps: 7e6,
            ..Period::default()
        };
        c.queued_bits = 100e3;
        c.drain(&p, ms(1000));
        assert!((c.lambda_target - 6e6).abs() < 1.0);
        assert_eq!(
            c.phase,
            Phase::Drain {
                until: ms(1100),
                oop: 7e6
            }
        );
        // 700 kbit queued: Eq. 2 asks for 0, v_min (3 Mbit/s) holds for 0.7/(7 − 3) = 175 ms.
        let mut c = c3g();
        c.queued_bits = 700e3;
        c.drain(&p, ms(1000));
        assert!((c.lambda_target - 3e6).abs() < 1.0);
        assert_eq!(
            c.phase,
            Phase::Drain {
                until: ms(1175),
                oop: 7e6
            }
        );
    }
}
