//! The proactive branch (§IV-B, Eq. 3): exploration periods of T_exp = (g_max − g + 1)·Δt, each
//! rated by R(λ̄) (Eq. 3, larger is worse) and stored in the state dictionary S keyed on λ̄ in
//! steps of λ_exp,min; the decision tree picks the next target among λ₊, λ₌ and λ₋ from the fresh
//! rating and the stored ones, and the gain g follows the choice.

use super::meter::Period;
use super::C3g;

/// The candidate a finished exploration period leads to (§IV-B).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Choice {
    Up,
    Same,
    Down,
}

/// The decision tree of §IV-B: `fresh` is R(λ̄) of the period just rated, `same` and `up` the
/// stored ratings of λ₌ and λ₊ (`None`: not in the dictionary). Larger R is worse; ties take the
/// "otherwise" branch.
pub fn decide(fresh: f64, same: Option<f64>, up: Option<f64>) -> Choice {
    match (same, up) {
        (None, None) => Choice::Up, // A.a
        (None, Some(u)) => {
            if u > fresh {
                Choice::Up
            } else {
                Choice::Same
            }
        } // A.b
        (Some(s), None) => {
            if s > fresh {
                Choice::Up
            } else {
                Choice::Same
            }
        } // B.a
        (Some(_), Some(u)) if u > fresh => Choice::Up, // B.b.1
        (Some(s), Some(_)) => {
            if s > fresh {
                Choice::Same
            } else {
                Choice::Down
            }
        } // B.b.2
    }
}

/// What an exploration period gathers for its rating.
#[derive(Debug, Clone, Default)]
pub(super) struct PeriodTotals {
    rtvl: Vec<f64>,
    queued_kbit: f64,
    sent_bps: f64,
    retransmitted: f64,
    periods: u32,
    frames: u32,
    lost_frames: u32,
}

impl PeriodTotals {
    pub(super) fn add(&mut self, p: &Period, queued_kbit: f64) {
        self.rtvl.extend(p.rtvl.iter().map(|s| s.1));
        self.queued_kbit += queued_kbit;
        self.sent_bps += p.sent_bps;
        self.retransmitted += p.retransmitted;
        self.periods += 1;
        self.frames += p.frames;
        self.lost_frames += p.lost_frames;
    }

    fn mean_sent_bps(&self) -> f64 {
        self.sent_bps / self.periods.max(1) as f64
    }

    /// Eq. 3 with the terms of §V-B (units in the module header).
    fn rating(&self, w: &[f64; 6]) -> Option<f64> {
        let lambda_kbps = self.mean_sent_bps() / 1e3;
        if self.rtvl.is_empty() || lambda_kbps <= 0.0 {
            return None;
        }
        let n = self.rtvl.len() as f64;
        let mean = self.rtvl.iter().sum::<f64>() / n;
        let sd = (self.rtvl.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n).sqrt();
        let max = self.rtvl.iter().copied().fold(f64::MIN, f64::max);
        let r = 100.0 * self.retransmitted / self.periods.max(1) as f64;
        let l = 100.0 * self.lost_frames as f64 / self.frames.max(1) as f64;
        Some(
            (w[0] * mean + w[1] * sd + w[2] * max + w[3] * self.queued_kbit + w[4] * r + w[5] * l)
                / lambda_kbps,
        )
    }
}

impl C3g {
    pub(super) fn key(&self, bps: f64) -> i64 {
        (bps / self.cfg.step.bps()).round() as i64
    }

    pub(super) fn start_period(&mut self) {
        self.periods_left = self.cfg.g_max - self.gain + 1;
        self.totals = PeriodTotals::default();
    }

    /// The exploration period so far: its mean λ̄ and its rating (`None` without an RTVL sample).
    pub(super) fn rate_period(&self) -> Option<(f64, f64)> {
        let lambda = self.totals.mean_sent_bps();
        let rating = self.totals.rating(&self.cfg.weights)?;
        Some((lambda, rating))
    }

    /// End of an exploration period: the decision tree and the gain.
    pub(super) fn finish_period(&mut self) {
        let Some((lambda, fresh)) = self.rate_period() else {
            // Nothing was acknowledged: no rating, keep the target and look again.
            self.start_period();
            return;
        };
        let step = self.gain as f64 * self.cfg.step.bps();
        let same = self.states.get(&self.key(lambda)).copied();
        let up = self.states.get(&self.key(lambda + step)).copied();
        self.lookups += 2;
        self.hits += same.is_some() as u64 + up.is_some() as u64;
        let choice = decide(fresh, same, up);
        self.states.insert(self.key(lambda), fresh);
        let (next, gain) = match choice {
            Choice::Up => (lambda + step, self.gain + 1),
            Choice::Same => (lambda, self.gain),
            Choice::Down => (lambda - step, self.gain.saturating_sub(1)),
        };
        self.gain = gain.clamp(self.cfg.g_min, self.cfg.g_max);
        self.last_choice = Some(choice);
        self.set_lambda(next);
        self.start_period();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::c3g::tests::c3g;
    use crate::cc::c3g::C3gConfig;

    #[test]
    fn the_decision_tree_has_the_papers_eight_leaves() {
        // A.a: nothing known → λ₊. A.b: λ₊ known; it rated worse than R(λ̄) now → λ₊, else λ₌.
        assert_eq!(decide(1.0, None, None), Choice::Up);
        assert_eq!(decide(1.0, None, Some(2.0)), Choice::Up);
        assert_eq!(decide(1.0, None, Some(0.5)), Choice::Same);
        // B.a: λ₌ known, λ₊ not: λ₌ was worse before → λ₊, else λ₌.
        assert_eq!(decide(1.0, Some(2.0), None), Choice::Up);
        assert_eq!(decide(1.0, Some(0.5), None), Choice::Same);
        // B.b.1 and B.b.2: the only λ₋ leaf is both stored states rating better than now.
        assert_eq!(decide(1.0, Some(0.5), Some(2.0)), Choice::Up);
        assert_eq!(decide(1.0, Some(2.0), Some(0.5)), Choice::Same);
        assert_eq!(decide(1.0, Some(0.5), Some(0.5)), Choice::Down);
        assert_eq!(
            decide(1.0, Some(1.0), Some(1.0)),
            Choice::Down,
            "ties take 'otherwise'"
        );
    }

    #[test]
    fn the_rating_is_eq_3_in_ms_kbit_and_kbit_per_second() {
        // RTVL samples with mean 40 ms, (population) sd 5 ms and max 45 ms at λ̄ = 7 Mbit/s:
        // (1·40 + 10·5 + 1·45 + 2·0) / 7000 kbit/s.
        let mut t = PeriodTotals {
            rtvl: vec![35.0, 45.0, 35.0, 45.0],
            sent_bps: 7e6,
            periods: 1,
            ..PeriodTotals::default()
        };
        let w = C3gConfig::default().weights;
        let r = t.rating(&w).unwrap();
        assert!((r - 135.0 / 7000.0).abs() < 1e-12, "{r}");
        // 100 kbit queued and one lost frame in ten add d·qd + f·l̄ (l̄ in %).
        t.queued_kbit = 100.0;
        t.lost_frames = 1;
        t.frames = 10;
        let worse = t.rating(&w).unwrap();
        assert!((worse - (135.0 + 2.0 * 100.0 + 10.0 * 10.0) / 7000.0).abs() < 1e-12);
        assert_eq!(
            PeriodTotals::default().rating(&w),
            None,
            "no sample, no rating"
        );
    }

    #[test]
    fn exploration_periods_shrink_and_steps_grow_with_the_gain() {
        let mut c = c3g();
        for (g, periods, step) in [(1, 50, 10e3), (50, 1, 500e3)] {
            c.gain = g;
            c.start_period();
            assert_eq!(
                c.periods_left, periods,
                "T_exp = (g_max − g + 1)·Δt at g = {g}"
            );
            assert_eq!(c.gain as f64 * c.cfg.step.bps(), step);
        }
    }

    #[test]
    fn ten_increases_from_the_smallest_gain_add_550_kbits_over_455_periods() {
        // With nothing stored every choice is λ₊ (case A.a): g goes 1, 2, ..., 10, the steps
        // add 10 + 20 + ... + 100 = 550 kbit/s, the periods last 50 + 49 + ... + 41 = 455 Δt.
        let mut c = c3g();
        let start = c.lambda_target;
        let mut periods = 0;
        for g in 1..=10 {
            assert_eq!(c.gain, g);
            periods += c.periods_left;
            c.totals = PeriodTotals {
                rtvl: vec![30.0, 40.0],
                sent_bps: c.lambda_target,
                periods: 1,
                ..PeriodTotals::default()
            };
            c.finish_period();
            assert_eq!(c.last_choice, Some(Choice::Up));
        }
        assert_eq!(periods, 455);
        assert!((c.lambda_target - start - 550e3).abs() < 1e-6);
    }
}
