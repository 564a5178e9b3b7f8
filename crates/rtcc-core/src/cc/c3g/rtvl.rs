//! Reading RTVL (§III-B, §IV-A): the RTVL of a period as the detector reads it
//! ([`period_rtvl`]), and the least-squares line through RTVL samples, whose slope is a "sign of
//! an increasing RTVL" ([`rose`]: ε learns only without one) and whose value one period ahead is
//! the prediction RTVL~1 ([`extrapolate`]).

use super::meter::Period;
use crate::units::Time;

/// The RTVL of a period as the detector reads it: the mean of its samples, or, when no
/// acknowledgement came, at least the age of the oldest frame still waiting (otherwise the
/// detector would go blind exactly when the queue is deepest; judgment call A11).
pub fn period_rtvl(p: &Period, previous: Option<f64>) -> Option<f64> {
    p.mean_rtvl()
        .or_else(|| match (previous, p.oldest_pending_ms) {
            (Some(prev), Some(age)) => Some(prev.max(age)),
            (prev, age) => prev.or(age),
        })
}

/// Whether RTVL samples show a sign of increase: their least-squares line rises.
pub fn rose(samples: &[(Time, f64)]) -> bool {
    fit(samples).is_some_and(|(_, _, _, slope)| slope > 0.0)
}

/// The least-squares line through (time, value) samples: the first sample's time, the mean time
/// after it (s), the mean value and the slope (per s). `None` under 2 samples or when they share
/// one time.
fn fit(samples: &[(Time, f64)]) -> Option<(Time, f64, f64, f64)> {
    if samples.len() < 2 {
        return None;
    }
    let t0 = samples[0].0;
    let x = |t: Time| (t - t0).as_secs_f64();
    let n = samples.len() as f64;
    let mx = samples.iter().map(|s| x(s.0)).sum::<f64>() / n;
    let my = samples.iter().map(|s| s.1).sum::<f64>() / n;
    let sxx: f64 = samples.iter().map(|s| (x(s.0) - mx).powi(2)).sum();
    if sxx <= 0.0 {
        return None;
    }
    let sxy: f64 = samples.iter().map(|s| (x(s.0) - mx) * (s.1 - my)).sum();
    Some((t0, mx, my, sxy / sxx))
}

/// Linear least-squares extrapolation of (time, value) samples to `at` (`None` under 2 samples
/// or when they share one time).
pub fn extrapolate(samples: &[(Time, f64)], at: Time) -> Option<f64> {
    fit(samples).map(|(t0, mx, my, slope)| my + slope * ((at - t0).as_secs_f64() - mx))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::c3g::tests::ms;

    #[test]
    fn rtvl_1_extrapolates_the_periods_samples() {
        // (0, 60), (33, 70), (67, 80) ms → about 120 ms at 200 ms.
        let s = [(ms(0), 60.0), (ms(33), 70.0), (ms(67), 80.0)];
        let r = extrapolate(&s, ms(200)).unwrap();
        assert!((r - 119.7).abs() < 0.5, "{r}");
        assert_eq!(extrapolate(&s[..1], ms(200)), None);
    }

    #[test]
    fn rtvl_that_rose_over_the_window_is_a_sign_of_congestion() {
        let up = [
            (ms(0), 40.0),
            (ms(50), 38.0),
            (ms(100), 45.0),
            (ms(150), 47.0),
        ];
        let flat = [
            (ms(0), 40.0),
            (ms(50), 44.0),
            (ms(100), 38.0),
            (ms(150), 40.0),
        ];
        assert!(rose(&up));
        assert!(!rose(&flat));
        assert!(!rose(&[(ms(0), 40.0)]) && !rose(&[]));
    }
}
