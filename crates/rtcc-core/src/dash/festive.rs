//! FESTIVE (Jiang, Sekar and Zhang, "Improving fairness, efficiency, and stability in HTTP-based
//! adaptive video streaming with FESTIVE", CoNEXT 2012), as Pensieve's dash.js fork implements
//! it (`getBitrateFestive`, `getCombinedScore`):
//!
//! 1. The target rung `b_target`: the highest at or below 0.85 × the predicted throughput `w`
//!    ([`super::pensieve`], a harmonic mean over the last 5 downloads); the lowest if none.
//! 2. Gradual switching: from the current rung `b`, a step up to `b + 1` is considered only after
//!    more than `b` consecutive decisions whose target was above `b` (`switchUpThreshold[b] =
//!    b`); a target below `b` considers `b − 1` at once; the reference rung is `b_ref`.
//! 3. Delayed update: when `b_ref ≠ b`, each candidate `x ∈ {b, b_ref}` is scored
//!    `2^n + α · |bitrate(x) / min(w, bitrate(b_ref)) − 1|` with α = 12, where `n` counts the
//!    switches among the last 5 qualities plus one if `x ≠ b`; the lower score wins (a tie keeps
//!    `b`). Moving up clears the consecutive-up count.
//!
//! The fork starts its "previous quality" at 1 whatever the first segment was; here it is the
//! quality actually requested (the player's initial one for the first segment).

use super::{pensieve, Abr, AbrContext, AbrDecision, AbrInput, Rule};
use crate::units::Duration;

/// `p`: the share of the prediction FESTIVE targets.
pub const TARGET_SHARE: f64 = 0.85;
/// `alpha`: the weight of efficiency against stability.
pub const ALPHA: f64 = 12.0;

pub struct Festive {
    ctx: AbrContext,
    /// The quality of every decision so far (`qualityLog`).
    log: Vec<usize>,
    switch_up_count: usize,
}

impl Festive {
    pub fn new(ctx: AbrContext) -> Festive {
        Festive {
            ctx,
            log: Vec::new(),
            switch_up_count: 0,
        }
    }

    /// `getStabilityScore`: 2^(switches among the last `horizon` logged qualities, plus one if
    /// `b` differs from the current).
    fn stability(&self, b: usize, current: usize) -> f64 {
        let mut n = 0;
        let last = self.log.len() - 1;
        if last >= 1 {
            let from = (last + 1).saturating_sub(pensieve::HORIZON);
            n += (from..last)
                .filter(|&i| self.log[i] != self.log[i + 1])
                .count();
        }
        if b != current {
            n += 1;
        }
        2f64.powi(n as i32)
    }

    /// `getEfficiencyScore`.
    fn efficiency(&self, b: usize, b_ref: usize, w: f64) -> f64 {
        (self.ctx.ladder_bps[b] / w.min(self.ctx.ladder_bps[b_ref]) - 1.0).abs()
    }

    fn score(&self, b: usize, b_ref: usize, current: usize, w: f64) -> f64 {
        self.stability(b, current) + ALPHA * self.efficiency(b, b_ref, w)
    }

    /// One decision from quality `current` with prediction `w` bit/s.
    pub fn decide(&mut self, current: usize, w: f64) -> usize {
        self.log.push(current);
        let target = self.ctx.highest_at_most(TARGET_SHARE * w);
        let b_ref = if target > current {
            self.switch_up_count += 1;
            if self.switch_up_count > current {
                current + 1
            } else {
                current
            }
        } else if target < current {
            self.switch_up_count = 0;
            current - 1
        } else {
            self.switch_up_count = 0;
            current
        };
        if b_ref == current {
            return current;
        }
        let stay = self.score(current, b_ref, current, w);
        let go = self.score(b_ref, b_ref, current, w);
        if stay <= go {
            current
        } else {
            if b_ref > current {
                self.switch_up_count = 0;
            }
            b_ref
        }
    }
}

impl Abr for Festive {
    fn choose(&mut self, input: &AbrInput) -> AbrDecision {
        let quality = if input.downloads.is_empty() {
            input.quality
        } else {
            self.decide(input.quality, pensieve::predict(input.downloads))
        };
        AbrDecision {
            quality,
            delay: Duration::ZERO,
            rule: Rule::Festive,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_util::ctx;
    use super::*;

    #[test]
    fn festive_climbs_one_rung_after_more_than_b_consecutive_up_signals() {
        let mut f = Festive::new(ctx());
        // 30 Mbit/s predicted: target 0.85 x 30 = 25.5 -> the top rung, far above.
        // From rung 0: one up signal (1 > 0) gives b_ref = 1; stay scores 2^0 + 12 |1/2.5 - 1|
        // = 8.2, going 2^1 + 12 |2.5/2.5 - 1| = 2: up.
        assert_eq!(f.decide(0, 30e6), 1);
        // From rung 1 a single up signal is not more than 1: stay.
        assert_eq!(f.decide(1, 30e6), 1);
        // The second consecutive one is: consider 2. Switches among the last qualities
        // [0, 1, 1]: one. stay 2^1 + 12 |2.5/5 - 1| = 8, go 2^2 + 0 = 4: up.
        assert_eq!(f.decide(1, 30e6), 2);
        // From rung 2 it takes three up signals.
        assert_eq!(f.decide(2, 30e6), 2);
        assert_eq!(f.decide(2, 30e6), 2);
        assert_eq!(f.decide(2, 30e6), 3);
    }

    #[test]
    fn festive_steps_down_one_rung_when_the_target_is_lower_unless_stability_wins() {
        let mut f = Festive::new(ctx());
        // At rung 5 (12.5) with 10 Mbit/s predicted: target 8.5 -> rung 3, so b_ref = 4 (10).
        // stay: 2^0 + 12 |12.5/10 - 1| = 4; go: 2^1 + 12 |10/10 - 1| = 2: down one rung.
        assert_eq!(f.decide(5, 10e6), 4);
        // At rung 4 with 11.5 Mbit/s predicted: target 0.85 x 11.5 = 9.775 -> rung 3, b_ref = 3
        // (7.5). Switches among [5, 4]: one. stay: 2^1 + 12 |10/7.5 - 1| = 6; go: 2^2 + 0 = 4:
        // down.
        assert_eq!(f.decide(4, 11.5e6), 3);
        // A prediction slightly under a rung's share: at rung 3 with 8.6 Mbit/s the target is
        // 7.31 -> rung 2, b_ref = 2 (5); switches among [5, 4, 3]: two. stay: 2^2 + 12 |7.5/5 -
        // 1| = 10; go: 2^3 + 0 = 8: down.
        assert_eq!(f.decide(3, 8.6e6), 2);
    }
}
