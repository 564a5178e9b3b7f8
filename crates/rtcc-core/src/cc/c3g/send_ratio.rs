//! ρ, the ratio of what was sent to what the encoder was asked for (§V-C: "the λ(t)/v(t) ratio of
//! previous iterations"): C³G and `c3g-bbr` decide a send rate λ_target, and the encoder is asked
//! for v = λ_target / ρ, since an encoder "does not necessarily" give λ "exactly and even less
//! instantly". ρ is an exponential average clamped to [0.5, 2], learned only from periods whose
//! target has held long enough for the encoder to follow it (`ENCODER_SETTLE` for `c3g`, none
//! for `c3g-bbr`, whose gains change the target every period) and not from drains.

use crate::units::Duration;
use std::collections::VecDeque;

/// How long the encoder's target must hold before λ̄ / v says anything about the ratio ρ (ours):
/// longer than an encoder takes to follow a new target (`lagged`'s 90 % settling: 0.5 s up in
/// the C³G testbed, 2 s by default, where ρ then learns only on long holds) plus the rate window.
pub(super) const ENCODER_SETTLE: Duration = Duration(1_000_000_000);

/// The encoder target for a desired send rate, and the ratio ρ = λ̄ / v it learns (§V-C).
///
/// ρ is an exponential average with a 2 s time constant (ours; the paper says only "the λ(t)/v(t)
/// ratio of previous iterations"). One period's λ̄ holds three frames and swings by ±20 %; a
/// fast average would pass that noise to the encoder's target, and an encoder that follows
/// decreases faster than increases (`lagged`: 0.2 s down, 0.5 s up here) then undershoots on
/// average.
#[derive(Debug, Clone)]
pub struct SendRatio {
    rho: f64,
    gain: f64,
    last_target: Option<f64>,
    /// The targets of the newest periods, as many as span `SETTLE`.
    recent_targets: VecDeque<f64>,
    settle_periods: usize,
}

impl SendRatio {
    const TIME_CONSTANT: f64 = 2.0;
    /// How far the target may move within `settle` and still count as held.
    const HELD: f64 = 0.05;

    /// For a control period of `interval`, learning only once the target has held for `settle`
    /// (at most one period: always).
    pub fn new(interval: Duration, settle: Duration) -> SendRatio {
        SendRatio {
            rho: 1.0,
            gain: (interval.as_secs_f64() / Self::TIME_CONSTANT).min(1.0),
            last_target: None,
            recent_targets: VecDeque::new(),
            settle_periods: (settle.0.div_ceil(interval.0.max(1))).max(1) as usize,
        }
    }

    /// Learn from a period in which the encoder was asked for the last target and `sent_bps`
    /// went out. Only once the target has held for `settle` (c3g: `ENCODER_SETTLE`): an encoder
    /// follows a new target with a lag (`lagged`: 0.5 s up), and reading that lag as the ratio
    /// would set every later target too high: after each drain λ̄ / v is low while the encoder
    /// climbs back, so drains every second or so pulled ρ to 0.8 and the target to 1.25 times
    /// λ_target once the encoder caught up (ours; the paper says only that v "does not
    /// necessarily" give λ "exactly and even less instantly").
    pub fn learn(&mut self, sent_bps: f64) {
        let Some(v) = self.last_target else { return };
        self.remember(v);
        let (lo, hi) = self
            .recent_targets
            .iter()
            .fold((f64::MAX, f64::MIN), |(lo, hi), &x| (lo.min(x), hi.max(x)));
        let held =
            self.recent_targets.len() == self.settle_periods && hi <= lo * (1.0 + Self::HELD);
        if held && v > 0.0 && sent_bps > 0.0 {
            self.rho = (self.rho + self.gain * (sent_bps / v - self.rho)).clamp(0.5, 2.0);
        }
    }

    /// A period not to learn from (a drain, whose λ̄ is the queue's, not the encoder's); its
    /// target still counts as one the encoder was asked for.
    pub fn skip(&mut self) {
        if let Some(v) = self.last_target {
            self.remember(v);
        }
    }

    fn remember(&mut self, v: f64) {
        self.recent_targets.push_back(v);
        while self.recent_targets.len() > self.settle_periods {
            self.recent_targets.pop_front();
        }
    }

    /// The encoder target for a desired send rate `lambda` (bit/s).
    pub fn target(&mut self, lambda: f64) -> f64 {
        let v = lambda / self.rho;
        self.last_target = Some(v);
        v
    }

    pub fn rho(&self) -> f64 {
        self.rho
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ratio_learns_only_from_a_target_the_encoder_had_time_to_follow() {
        // Δt = 50 ms, settle 1 s: 20 periods at one target before λ̄ / v counts.
        let mut r = SendRatio::new(Duration::from_millis(50), ENCODER_SETTLE);
        r.target(10e6);
        for _ in 0..19 {
            r.learn(5e6); // an encoder still climbing to the target
        }
        assert_eq!(r.rho(), 1.0, "the encoder's lag was read as the ratio");
        r.learn(9e6);
        assert!(r.rho() < 1.0, "a held target teaches ρ");
        // A drain's target breaks the hold, even though its periods teach nothing themselves.
        let rho = r.rho();
        r.target(3e6);
        r.skip();
        r.target(10e6);
        for _ in 0..19 {
            r.learn(5e6);
        }
        assert_eq!(r.rho(), rho, "learned within a second of the drain");
        // c3g-bbr's setting (no settle) learns from every period.
        let mut r = SendRatio::new(Duration::from_millis(100), Duration::ZERO);
        r.target(10e6);
        r.learn(5e6);
        assert!(r.rho() < 1.0);
    }
}
