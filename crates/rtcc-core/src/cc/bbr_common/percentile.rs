//! The BBR-S / BBR2-S bandwidth estimator of Vargas et al. ("BBR Bufferbloat in DASH Video",
//! WWW '21, §7), `bw_estimator = "percentile"`.
//!
//! BBR's bottleneck-bandwidth estimate is the maximum delivery-rate sample of a window (v1: the
//! last 10 rounds; v2: the last one or two bandwidth-probing cycles). Behind a token-bucket
//! shaper with a deep buffer, the bucket's burst lets some flights through faster than the
//! token rate and a single such sample lifts the maximum (the paper's §6). BBR-S replaces the
//! maximum by a high percentile of the recent samples (§7.1):
//!
//! 1. every ACK that carries a valid delivery-rate sample of a *non*-application-limited
//!    flight adds it to a history of the last `HIST_SIZE` = 100 samples;
//! 2. the estimate is the history's 85th percentile (`HIST_PERCENTILE`); it replaces the
//!    maximum everywhere the controller reads it (pacing rate, window target, full-pipe test,
//!    DRAIN exit, gain-cycle tests, ACK aggregation). The original filter is still fed, as
//!    the authors' code does, so its value stays observable (`max_filter_bw_bps`).
//!
//! Two readings of that description are implemented (`percentile_reading`):
//!
//! - `"code"` (default): what the released `bbrs.c` / `bbr2s.c` do, as the extraction's §3.2
//!   paraphrases them. An index starts at 0 and is incremented *before* each write, wrapping to
//!   0 after 99; the history counts as full once the index has wrapped (the 100th sample).
//!   Until then the estimate is the newest sample (the code's comment says "max", the code
//!   returns the newest slot it did not sort); from then on it is `sorted[85]` of the 100
//!   samples (ascending, 0-based: the 86th smallest, slightly above the nearest-rank 85th
//!   percentile). Feeding 1..100 gives 86; 100 samples of which `k` are spikes give the normal
//!   value while `k ≤ 14` and the spike from `k = 15` on.
//! - `"text"`: only what the paper's text specifies (§7.1, §7.2): the same 100-sample history of
//!   non-app-limited samples and "the 85th percentile", read with the usual nearest-rank
//!   definition (the `⌈0.85 n⌉`-th smallest of the `n` samples held, `sorted[84]` once full),
//!   computed over the samples held also while fewer than 100 have been seen (the text
//!   describes no warm-up). For BBR2-S the text adds "we set the estimated bandwidth to be 85 %
//!   of the value": `bbr2` multiplies the percentile by 0.85 ([`BBR2S_TEXT_SCALE`]); `bbr`
//!   does not (the text gives BBR-S no such factor). So the differences from `"code"` are the
//!   order statistic (85th against 86th smallest), the warm-up (percentile of what is held
//!   against the newest sample) and, for v2 only, the 0.85 factor.
//!
//! One judgment call applies to both readings: the released code keeps one module-global
//! history shared by every connection and never reset (extraction §3.2, §3.4-1); here each
//! controller (each flow) has its own, as the paper's text implies and the extraction's §3.5 and
//! §7 #3 recommend. A process-wide history would also make a flow's result depend on which
//! flows ran before it in the same process, which rtcc's determinism rules out.

use crate::cc::Params;
use serde::{Deserialize, Serialize};

/// BBR-S history size: "we use a sample history size of 100" (paper §7.1).
pub const HIST_SIZE: usize = 100;
/// BBR-S `hist_percentile` = 85 (paper §7.1; the code's `P`, used as `sorted[85]`).
pub const HIST_PERCENTILE: usize = 85;
/// BBR2-S as the paper's text describes it: "we set the estimated bandwidth to be 85 % of the
/// value" (§7.2). The released `bbr2s.c` has no such factor (extraction §3.2).
pub const BBR2S_TEXT_SCALE: f64 = 0.85;

/// Which bottleneck-bandwidth estimate the controller reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum BwEstimator {
    /// The version's own windowed maximum (Linux).
    Max,
    /// BBR-S / BBR2-S: a percentile of the last 100 non-app-limited samples.
    Percentile,
}

/// How `bw_estimator = "percentile"` is read (see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PercentileReading {
    /// What the authors' released code does.
    Code,
    /// What the paper's text says.
    Text,
}

/// The BBR-S / BBR2-S sample history and its percentile (bytes per second).
#[derive(Debug, Clone)]
pub struct PercentileFilter {
    reading: PercentileReading,
    hist: [f64; HIST_SIZE],
    /// The code's write index: incremented before each write, wrapping after `HIST_SIZE - 1`.
    idx: usize,
    /// The code's `full`: the index has wrapped once.
    full: bool,
    /// Samples inserted so far (the text reading's warm-up).
    count: u64,
    est: f64,
}

impl PercentileFilter {
    pub fn new(reading: PercentileReading) -> PercentileFilter {
        PercentileFilter {
            reading,
            hist: [0.0; HIST_SIZE],
            idx: 0,
            full: false,
            count: 0,
            est: 0.0,
        }
    }

    /// The current estimate (0 before the first sample).
    pub fn estimate(&self) -> f64 {
        self.est
    }

    /// Samples inserted so far.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Insert a non-app-limited delivery-rate sample (the caller filters app-limited ones).
    pub fn insert(&mut self, bw: f64) {
        self.count += 1;
        self.idx += 1;
        if self.idx > HIST_SIZE - 1 {
            self.full = true;
            self.idx = 0;
        }
        self.hist[self.idx] = bw;
        self.est = match self.reading {
            PercentileReading::Code if self.full => {
                self.order_statistic(HIST_SIZE, HIST_PERCENTILE)
            }
            PercentileReading::Code => bw,
            PercentileReading::Text => {
                let n = (self.count as usize).min(HIST_SIZE);
                let rank = (HIST_PERCENTILE * n).div_ceil(100);
                self.order_statistic(n, rank - 1)
            }
        };
    }

    /// The `k`-th smallest (0-based) of the `n` newest samples.
    fn order_statistic(&self, n: usize, k: usize) -> f64 {
        let mut held = [0.0f64; HIST_SIZE];
        if n == HIST_SIZE {
            held = self.hist;
        } else {
            // Before the first wrap the samples sit in slots 1..=idx.
            held[..n].copy_from_slice(&self.hist[1..=n]);
        }
        let held = &mut held[..n];
        held.select_nth_unstable_by(k, f64::total_cmp);
        held[k]
    }
}

/// `params` with `bw_estimator = "percentile"` unless it says otherwise (`bbr-s`, `bbr2-s`).
pub(crate) fn with_percentile(params: &Params) -> Params {
    let mut p = params.clone();
    p.entry("bw_estimator")
        .or_insert_with(|| toml::Value::String("percentile".into()));
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fed(reading: PercentileReading, samples: impl IntoIterator<Item = f64>) -> f64 {
        let mut f = PercentileFilter::new(reading);
        for s in samples {
            f.insert(s);
        }
        f.estimate()
    }

    #[test]
    fn the_code_reading_takes_sorted_85_of_the_last_100_samples() {
        // Extraction §6.3: "feed 1..100 ⇒ est = 86" (ascending, 0-based index 85).
        assert_eq!(
            fed(PercentileReading::Code, (1..=100).map(f64::from)),
            86.0,
            "sorted[85] of 1..100 is the 86th smallest"
        );
        // The window slides: 1..200 keeps 101..200, whose sorted[85] is 186.
        assert_eq!(
            fed(PercentileReading::Code, (1..=200).map(f64::from)),
            186.0
        );
        // Extraction §6.3: 100 samples of 25 then k spikes of 250 (all within the last 100):
        // up to 14 spikes leave 25, 15 or more give 250.
        for k in 0..=30 {
            let est = fed(
                PercentileReading::Code,
                std::iter::repeat_n(25.0, 100).chain(std::iter::repeat_n(250.0, k)),
            );
            let expect = if k <= 14 { 25.0 } else { 250.0 };
            assert_eq!(est, expect, "{k} spikes among the last 100 samples");
        }
    }

    #[test]
    fn the_code_reading_returns_the_newest_sample_during_warm_up() {
        // Extraction §3.2 / §7 #4: before the index wraps (99 samples) the code returns the
        // newest sample, not the maximum its comment promises.
        let mut f = PercentileFilter::new(PercentileReading::Code);
        for (i, s) in [5.0, 50.0, 7.0, 3.0].into_iter().enumerate() {
            f.insert(s);
            assert_eq!(f.estimate(), s, "sample {i}: the newest");
        }
        for k in 5..=99 {
            f.insert(k as f64);
            assert_eq!(f.estimate(), k as f64, "sample {k} is still warm-up");
        }
        f.insert(1000.0);
        assert_eq!(f.count(), 100);
        // The 100 samples held: 5, 50, 7, 3, 5..=99, 1000. Sorted: 3, 5, 5, 6, 7, 7, 8, ...,
        // so value v ≥ 8 sits at index v − 2 up to 49, then 50, 50 and v ≥ 51 at index v − 1:
        // sorted[85] is 86.
        assert_eq!(f.estimate(), 86.0, "the 100th sample fills the history");
    }

    #[test]
    fn the_text_reading_is_the_nearest_rank_85th_percentile_of_what_is_held() {
        // Nearest rank: the ⌈0.85 × 100⌉ = 85th smallest of 1..100 is 85.
        assert_eq!(fed(PercentileReading::Text, (1..=100).map(f64::from)), 85.0);
        // With k spikes the 85th smallest stays normal while 100 − k ≥ 85.
        for k in 0..=30 {
            let est = fed(
                PercentileReading::Text,
                std::iter::repeat_n(25.0, 100).chain(std::iter::repeat_n(250.0, k)),
            );
            let expect = if k <= 15 { 25.0 } else { 250.0 };
            assert_eq!(est, expect, "{k} spikes (text reading)");
        }
        // Warm-up: the percentile of the samples held (⌈0.85 × 4⌉ = 4th smallest of 4, then
        // ⌈0.85 × 10⌉ = 9th smallest of 10).
        assert_eq!(fed(PercentileReading::Text, [5.0, 50.0, 7.0, 3.0]), 50.0);
        assert_eq!(fed(PercentileReading::Text, (1..=10).map(f64::from)), 9.0);
        assert_eq!(fed(PercentileReading::Text, [42.0]), 42.0);
    }
}
