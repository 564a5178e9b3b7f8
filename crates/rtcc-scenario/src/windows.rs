//! Windowed metrics of a run: what the RMCAT rules (`python/rtcc/rmcat.py`, docs/rmcat.md)
//! measure on the per-window received rates and capacities of a run's facts ([`crate::facts`]).
//!
//! Every quantity lives on 1 s windows from time zero ([`WINDOW`]): window `k` is `[k, k+1)` s.
//! A window is *inside* a period `[start, stop)` when it lies wholly in it (up to 1 ns of
//! rounding), so a flow that starts at 20.5 s is active from window 21.
//!
//! - [`window_mask`]: the windows wholly inside some periods.
//! - [`shared_periods`]: when every one of a set of flows is active, less a settling time.
//! - [`jain`]: Jain's fairness index `(Σx)² / (n·Σx²)` of two or more values.
//! - [`windowed_jain`]: Jain's index of a set of flows' mean rates over the windows of their
//!   shared period (the RMCAT `fairness` rule and the table's Jain column).
//! - [`share_convergence`]: from a time on, the first window in which every flow's trailing
//!   mean rate is within a band of its target (the RMCAT `converges` rule).
//!
//! The means are numpy's (`ndarray.mean`: pairwise summation, [`mean`]) and the sums are taken
//! in the order the Python rules took them before they moved here, so the rules' values are
//! what they were to the last bit.

use rtcc_core::metrics::{jain_index, RATE_WINDOW};
use rtcc_core::Duration;

/// The windows of the rates and capacities: 1 s from time zero (the per-flow rate window of
/// the summary, [`RATE_WINDOW`]).
pub const WINDOW: Duration = RATE_WINDOW;

/// [`WINDOW`] in seconds.
pub fn window_s() -> f64 {
    WINDOW.as_secs_f64()
}

/// Tolerance (s) by which a period's bounds may miss a window's edge and still count as on it.
const EDGE_S: f64 = 1e-9;

/// numpy's `add.reduce` of float64 (pairwise summation: blocks of 8 interleaved partial sums up
/// to 128 values, halves beyond), so a mean here is bit for bit `ndarray.mean()`.
fn pairwise_sum(x: &[f64]) -> f64 {
    const BLOCK: usize = 128;
    let n = x.len();
    if n < 8 {
        let mut res = 0.0;
        for v in x {
            res += v;
        }
        res
    } else if n <= BLOCK {
        let mut r = [x[0], x[1], x[2], x[3], x[4], x[5], x[6], x[7]];
        let whole = n - n % 8;
        let mut i = 8;
        while i < whole {
            for (j, acc) in r.iter_mut().enumerate() {
                *acc += x[i + j];
            }
            i += 8;
        }
        let mut res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for v in &x[whole..] {
            res += v;
        }
        res
    } else {
        let half = n / 2;
        let half = half - half % 8;
        pairwise_sum(&x[..half]) + pairwise_sum(&x[half..])
    }
}

/// The mean of `x` as numpy computes it (NaN when empty).
pub fn mean(x: &[f64]) -> f64 {
    pairwise_sum(x) / x.len() as f64
}

/// Which of `n` windows lie wholly inside one of `periods` (`[start, stop)` in seconds).
pub fn window_mask(n: usize, periods: &[(f64, f64)]) -> Vec<bool> {
    let w = window_s();
    let mut mask = vec![false; n];
    for &(start, stop) in periods {
        let first = (start / w - EDGE_S).ceil().max(0.0) as usize;
        let last = ((stop / w + EDGE_S).floor().max(0.0) as usize).min(n);
        for m in mask.iter_mut().take(last).skip(first) {
            *m = true;
        }
    }
    mask
}

/// The overlaps of two sets of periods, in order.
fn intersect(a: &[(f64, f64)], b: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let mut out = Vec::new();
    for &(s1, e1) in a {
        for &(s2, e2) in b {
            let (s, e) = (s1.max(s2), e1.min(e2));
            if e > s {
                out.push((s, e));
            }
        }
    }
    out.sort_by(|x, y| x.0.total_cmp(&y.0).then(x.1.total_cmp(&y.1)));
    out
}

/// When every one of the flows (each given by its active periods) is active, less the first
/// `settle_s` of each such interval (intervals no longer than that are left out).
pub fn shared_periods(periods: &[&[(f64, f64)]], settle_s: f64) -> Vec<(f64, f64)> {
    let Some((first, rest)) = periods.split_first() else {
        return Vec::new();
    };
    let mut shared = first.to_vec();
    for p in rest {
        shared = intersect(&shared, p);
    }
    shared
        .into_iter()
        .filter(|&(s, e)| e - s > settle_s)
        .map(|(s, e)| (s + settle_s, e))
        .collect()
}

/// Jain's fairness index `(Σx)² / (n·Σx²)`: 1 when all are equal, 1/n when one takes
/// everything; `None` for fewer than two values or when all are zero.
pub fn jain(values: &[f64]) -> Option<f64> {
    if values.len() < 2 {
        return None;
    }
    jain_index(values)
}

/// Jain's index of the flows' mean rates (`rates[k][w]`: flow `k`'s rate in window `w`, all of
/// one length) over the windows wholly inside their shared period (every flow active, from
/// `settle_s` after the last (re)join), with that period; `None` for fewer than two flows, no
/// such window, or flows that received nothing.
pub fn windowed_jain(
    rates: &[&[f64]],
    periods: &[&[(f64, f64)]],
    settle_s: f64,
) -> Option<(f64, Vec<(f64, f64)>)> {
    if rates.len() < 2 || rates.len() != periods.len() {
        return None;
    }
    let shared = shared_periods(periods, settle_s);
    let mask = window_mask(rates[0].len(), &shared);
    if !mask.iter().any(|&m| m) {
        return None;
    }
    let means: Vec<f64> = rates
        .iter()
        .map(|r| {
            let inside: Vec<f64> = r.iter().zip(&mask).filter(|x| *x.1).map(|x| *x.0).collect();
            mean(&inside)
        })
        .collect();
    jain(&means).map(|j| (j, shared))
}

/// `rate`'s trailing mean over `smooth` windows (fewer at the start, the missing ones counted as
/// zero): numpy's `convolve(rate, ones(smooth) / smooth)[:len(rate)]`, summed in window order.
pub fn trailing_mean(rate: &[f64], smooth: usize) -> Vec<f64> {
    let smooth = smooth.max(1);
    let k = 1.0 / smooth as f64;
    (0..rate.len())
        .map(|i| {
            let mut s = 0.0;
            for v in &rate[(i + 1).saturating_sub(smooth)..=i] {
                s += v * k;
            }
            s
        })
        .collect()
}

/// Seconds from `from_s` to the end of the first window in which every flow's `smooth`-window
/// trailing mean rate ([`trailing_mean`]) is within ±`band` of its target (`targets[k]` for
/// `rates[k]`), looking from the `smooth`-th window after `from_s` (the first whose trailing
/// mean lies wholly after it) up to the last window that ends by `to_s`; infinity if it never
/// is.
pub fn share_convergence(
    rates: &[&[f64]],
    targets: &[f64],
    from_s: f64,
    to_s: f64,
    band: f64,
    smooth: usize,
) -> f64 {
    let w = window_s();
    let smooth = smooth.max(1);
    let smoothed: Vec<Vec<f64>> = rates.iter().map(|r| trailing_mean(r, smooth)).collect();
    let n = smoothed.iter().map(Vec::len).min().unwrap_or(0);
    let first = (from_s / w).ceil().max(0.0) as usize + smooth - 1;
    let stop = ((to_s / w).floor().max(0.0) as usize).min(n);
    for i in first..stop {
        let near = smoothed
            .iter()
            .zip(targets)
            .all(|(r, &t)| (r[i] - t).abs() <= band * t);
        if near {
            return (i + 1) as f64 * w - from_s;
        }
    }
    f64::INFINITY
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn means_are_numpys_pairwise_sums() {
        // Below 8 values: a plain sum.
        assert_eq!(mean(&[1.0, 2.0, 4.0]), 7.0 / 3.0);
        // 0.1 ten times: numpy's pairwise sum is ((0.1+0.1)+(0.1+0.1))+((0.1+0.1)+(0.1+0.1))
        // + 0.1 + 0.1 = 1.0 exactly, where a running sum ends at 0.9999999999999999.
        let tenths = [0.1; 10];
        let running: f64 = tenths.iter().fold(0.0, |a, b| a + b);
        assert_eq!(running, 0.9999999999999999);
        assert_eq!(pairwise_sum(&tenths), 1.0);
        assert_eq!(mean(&tenths), 0.1);
        // Beyond 128 values the halves are summed apart: 200 values split at 96.
        let x: Vec<f64> = (0..200).map(|i| 1.0 / (i + 1) as f64).collect();
        assert_eq!(
            pairwise_sum(&x),
            pairwise_sum(&x[..96]) + pairwise_sum(&x[96..])
        );
        assert!(mean(&[]).is_nan());
    }

    #[test]
    fn windows_inside_periods_are_the_whole_ones() {
        let m = window_mask(6, &[(0.5, 3.0), (4.0, 10.0)]);
        assert_eq!(m, [false, true, true, false, true, true]);
        // Bounds a rounding error off a window's edge count as on it.
        let m = window_mask(4, &[(1.0 + 1e-12, 3.0 - 1e-12)]);
        assert_eq!(m, [false, true, true, false]);
        assert_eq!(window_mask(3, &[]), [false; 3]);
    }

    #[test]
    fn shared_periods_are_the_overlaps_less_the_settling_time() {
        let a: &[(f64, f64)] = &[(0.0, 120.0)];
        let b: &[(f64, f64)] = &[(0.0, 40.0), (60.0, 120.0)];
        let c: &[(f64, f64)] = &[(20.0, 120.0)];
        assert_eq!(
            shared_periods(&[a, b, c], 10.0),
            vec![(30.0, 40.0), (70.0, 120.0)]
        );
        // An overlap no longer than the settling time is left out.
        assert_eq!(shared_periods(&[b, c], 20.0), vec![(80.0, 120.0)]);
        assert!(shared_periods(&[], 0.0).is_empty());
    }

    #[test]
    fn jain_of_hand_computed_values() {
        assert_eq!(jain(&[1.0, 1.0, 1.0]), Some(1.0));
        assert_eq!(jain(&[1.0, 0.0, 0.0]), Some(1.0 / 3.0));
        // (1 + 0.5)² / (2 · (1 + 0.25)) = 2.25 / 2.5
        assert_eq!(jain(&[1.0, 0.5]), Some(0.9));
        assert_eq!(jain(&[1.0]), None);
        assert_eq!(jain(&[0.0, 0.0]), None);
    }

    #[test]
    fn windowed_jain_takes_the_mean_rates_of_the_shared_windows() {
        // Two flows over 6 windows; b joins at 2 s, so with 1 s to settle they share [3, 6):
        // a's mean there is (2 + 2 + 2) / 3 = 2, b's (1 + 1 + 4) / 3 = 2: equal shares, although
        // a had the link to itself before.
        let a = [4.0, 4.0, 4.0, 2.0, 2.0, 2.0];
        let b = [0.0, 0.0, 0.0, 1.0, 1.0, 4.0];
        let pa: &[(f64, f64)] = &[(0.0, 6.0)];
        let pb: &[(f64, f64)] = &[(2.0, 6.0)];
        let (j, shared) = windowed_jain(&[&a, &b], &[pa, pb], 1.0).unwrap();
        assert_eq!((j, shared), (1.0, vec![(3.0, 6.0)]));
        // Without settling, [2, 6): a's mean is 2.5, b's 1.5: 16 / (2 · (6.25 + 2.25)) = 16 / 17.
        let (j, _) = windowed_jain(&[&a, &b], &[pa, pb], 0.0).unwrap();
        assert_eq!(j, 16.0 / 17.0);
        assert!(windowed_jain(&[&a], &[pa], 0.0).is_none(), "one flow");
        assert!(
            windowed_jain(&[&a, &b], &[pa, pb], 4.0).is_none(),
            "no shared window"
        );
    }

    #[test]
    fn convergence_is_the_end_of_the_first_window_near_every_target() {
        // Trailing 2-window means from the join at 2 s: windows 3 on (the first whose mean lies
        // after the join). a: 6 → (6+4)/2 = 5, (4+4)/2 = 4; b: (0+2)/2 = 1, (2+4)/2 = 3, (4+4)/2
        // = 4. Targets 4 ± 25 %, i.e. [3, 5]: window 3 has b at 1; window 4 has a at 4 and b at
        // 3, both in: converged at the end of window 4, 5 s, 3 s after the join.
        let a = [8.0, 8.0, 6.0, 4.0, 4.0, 4.0, 4.0];
        let b = [0.0, 0.0, 0.0, 2.0, 4.0, 4.0, 4.0];
        assert_eq!(
            trailing_mean(&b, 2),
            vec![0.0, 0.0, 0.0, 1.0, 3.0, 4.0, 4.0]
        );
        assert_eq!(
            trailing_mean(&a, 2)[0],
            4.0,
            "the missing window counts as zero"
        );
        let took = share_convergence(&[&a, &b], &[4.0, 4.0], 2.0, 7.0, 0.25, 2);
        assert_eq!(took, 3.0);
        // A tighter band (±10 %: [3.6, 4.4]) waits for b's mean of 4 in window 5.
        assert_eq!(
            share_convergence(&[&a, &b], &[4.0, 4.0], 2.0, 7.0, 0.1, 2),
            4.0
        );
        // Never, when the windows end before that.
        assert_eq!(
            share_convergence(&[&a, &b], &[4.0, 4.0], 2.0, 5.0, 0.1, 2),
            f64::INFINITY
        );
    }
}
