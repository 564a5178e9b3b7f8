//! SQP's bandwidth estimate update (SQP §4.4, Eq. 3–4) and the hysteresis filter between the
//! estimate and the encoder (§4.1).
//!
//! Eq. 3 maximises `log(1 + α·B) − β·(B − e)²`: a logarithmic reward for a higher estimate and a
//! quadratic penalty for overestimating, with `e` chosen so that the optimum is `B = S`. One
//! gradient step at the current `B`, constants folded into the step size `δ`, is Eq. 4:
//!
//! ```text
//!   B' = B + δ · ( r·(S/B − 1) − (B/S − 1) )
//! ```
//!
//! where `S` is the *target-multiplied* sample `T·S_raw` (§4.5: "SQP multiplies bandwidth
//! samples with a target multiplier T<1 before calculating the bandwidth estimate"). The step
//! depends only on the ratio `x = S/B`: `δ·g(x)` with `g(x) = r(x − 1) − (1/x − 1)`, whose only
//! positive root is `x = 1`, so increases and decreases are additive in absolute rate ("linear
//! increase … linear decrease", §5.2), e.g. `+206.25 kbit/s` per frame when a flow is far
//! below the link (`x = T·m = 1.8`) and `−360 kbit/s` at `x = 0.5`.
//!
//! The paper gives no bounds; Eq. 4 can drive `B` negative when `x` is small, and where `δ`
//! is large next to `B` one step can cross the optimum. Judgment calls (named in
//! `docs/sqp.md`): an update never moves `B` past `S`, never more than halves `B` nor cuts it
//! below a level the caller gives (half the target-multiplied rate at which the path delivered
//! the sampled frame), and `B` stays within `[min_rate, max_rate]`.

/// Eq. 4's step for estimate `b` and target-multiplied sample `s` (both bit/s), step size
/// `delta` (bit/s) and reward weight `r`. `s = 0` (a frame with every packet lost) gives −∞.
pub fn eq4_step(b: f64, s: f64, delta: f64, r: f64) -> f64 {
    if s <= 0.0 {
        return f64::NEG_INFINITY;
    }
    delta * (r * (s / b - 1.0) - (b / s - 1.0))
}

/// Bounds on the estimate (judgment calls: the paper gives none).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bounds {
    pub min_rate: f64,
    pub max_rate: f64,
    /// Largest fraction of `B` one update may remove (0.5: never more than halve).
    pub max_decrease: f64,
}

/// One update: Eq. 4, then the bounds.
pub fn update(b: f64, s_target: f64, delta: f64, r: f64, bounds: &Bounds) -> f64 {
    update_keeping(b, s_target, delta, r, bounds, 0.0)
}

/// One update that, besides never more than halving `b`, never decreases below `keep`.
pub fn update_keeping(
    b: f64,
    s_target: f64,
    delta: f64,
    r: f64,
    bounds: &Bounds,
    keep: f64,
) -> f64 {
    let next = b + eq4_step(b, s_target, delta, r);
    // A gradient step of Eq. 3 moves towards its optimum `B = S` and never past it.
    let next = if s_target >= b {
        next.min(s_target)
    } else {
        next.max(s_target)
    };
    let lowest = (b * (1.0 - bounds.max_decrease)).max(keep.min(b));
    next.max(lowest).clamp(bounds.min_rate, bounds.max_rate)
}

/// The "simple hysteresis filter" between SQP's estimate and the encoder (§4.1), whose
/// parameters the paper does not give. Ours is conservative, as §4.2/§6.10 describe the bridge
/// ("conservative rate control mechanisms that serve as a bridge between the bandwidth estimate
/// and the encoder bitrate to reduce the frequency of encoder bitrate updates"): the encoder
/// target follows a lower estimate at once (the encoder is never asked for more than SQP
/// estimates) and a higher one only when the estimate exceeds it by more than `band`. The
/// resulting undershoot is what Eq. 2 corrects. `band = 0` passes the estimate through (the
/// paper's "perfect encoder" of §4.1).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hysteresis {
    pub band: f64,
    target: Option<f64>,
}

impl Hysteresis {
    pub fn new(band: f64) -> Hysteresis {
        Hysteresis { band, target: None }
    }

    /// The encoder target for estimate `b`.
    pub fn apply(&mut self, b: f64) -> f64 {
        let t = match self.target {
            Some(t) if b >= t && b <= t * (1.0 + self.band) => t,
            _ => b,
        };
        self.target = Some(t);
        t
    }

    pub fn target(&self) -> Option<f64> {
        self.target
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DELTA: f64 = 320e3;
    const R: f64 = 0.25;

    #[test]
    fn eq4_steps_match_the_hand_computed_table() {
        // step(x) = δ (r (x − 1) − (1/x − 1)), δ = 320 kbit/s, r = 0.25, at B = 10 Mbit/s.
        let b = 10e6;
        let table = [
            (0.10, -2_952_000.0),
            (0.25, -1_020_000.0),
            (0.50, -360_000.0),
            (0.80, -96_000.0),
            (0.90, -43_555.555_555_555_6),
            (1.00, 0.0),
            (1.10, 37_090.909_090_909_1),
            (1.20, 69_333.333_333_333_3),
            (1.50, 146_666.666_666_666_7),
            (1.80, 206_222.222_222_222_2),
            (2.00, 240_000.0),
            (3.00, 373_333.333_333_333_3),
        ];
        for (x, expected) in table {
            let got = eq4_step(b, x * b, DELTA, R);
            assert!(
                (got - expected).abs() < 1e-6,
                "x = {x}: step {got}, expected {expected}"
            );
        }
        // The step depends on the ratio only ("linear", additive in absolute rate).
        assert!((eq4_step(1e6, 1.8e6, DELTA, R) - eq4_step(30e6, 54e6, DELTA, R)).abs() < 1e-6);
        assert_eq!(eq4_step(b, 0.0, DELTA, R), f64::NEG_INFINITY);
    }

    #[test]
    fn a_fixed_sample_is_approached_with_the_predicted_time_constant() {
        // Near x = 1, g'(1) = 1 + r, so the gap B − S shrinks by a factor (1 − (1+r)δ/S) per
        // update: the time constant is S / ((1 + r) δ) updates = 45 updates at S = 18 Mbit/s.
        let bounds = Bounds {
            min_rate: 0.0,
            max_rate: f64::INFINITY,
            max_decrease: 0.5,
        };
        let s = 18e6;
        let mut b = s * 0.98;
        let gap0 = s - b;
        let mut n = 0;
        while s - b > gap0 / std::f64::consts::E {
            b = update(b, s, DELTA, R, &bounds);
            n += 1;
        }
        let tau = s / ((1.0 + R) * DELTA);
        assert!(
            (n as f64 - tau).abs() <= 0.1 * tau,
            "{n} updates vs τ = {tau}"
        );
        for _ in 0..2000 {
            b = update(b, s, DELTA, R, &bounds);
        }
        assert!((b - s).abs() < 1.0, "converges to T·S_raw: {b}");
    }

    #[test]
    fn the_bounds_hold() {
        let bounds = Bounds {
            min_rate: 500e3,
            max_rate: 50e6,
            max_decrease: 0.5,
        };
        assert_eq!(update(10e6, 0.0, DELTA, R, &bounds), 5e6, "at most halved");
        assert_eq!(update(10e6, 1e5, DELTA, R, &bounds), 5e6);
        assert_eq!(update(600e3, 1e3, DELTA, R, &bounds), 500e3, "floor");
        assert_eq!(update(49.99e6, 200e6, DELTA, R, &bounds), 50e6, "ceiling");
    }

    #[test]
    fn hysteresis_follows_decreases_at_once_and_increases_past_the_band() {
        let mut h = Hysteresis::new(0.05);
        assert_eq!(h.apply(10e6), 10e6);
        assert_eq!(h.apply(10.4e6), 10e6, "within 5 %: held");
        assert_eq!(h.apply(10.6e6), 10.6e6, "past 5 %: follows");
        assert_eq!(h.apply(10.5e6), 10.5e6, "a decrease is followed at once");
        let mut none = Hysteresis::new(0.0);
        assert_eq!(none.apply(3e6), 3e6);
        assert_eq!(none.apply(3.01e6), 3.01e6);
    }
}
