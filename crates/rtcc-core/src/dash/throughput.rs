//! dash.js's throughput estimate and `ThroughputRule` (dash.js v3.0.3,
//! `src/streaming/rules/ThroughputHistory.js`, `src/streaming/rules/abr/ThroughputRule.js`,
//! `AbrController.getQualityForBitrate`), with its default settings (`Settings.js`):
//! sliding-window average, `bandwidthSafetyFactor` 0.9, `useDeadTimeLatency` true,
//! `cacheLoadThresholds.video` 50 ms.
//!
//! - A sample per media segment: `round(8 · bytes / download time)` kbit/s, the download time
//!   from the first to the last byte (the request's latency excluded, `useDeadTimeLatency`), at
//!   least 1 ms; and the latency, first byte − request, at least 1 ms. The last 20 are kept.
//! - A download faster than 50 ms is taken for a cache hit: ignored once uncached samples
//!   exist; if only cache hits exist they are used, and the first uncached sample clears them.
//! - The average is the mean of the last 4 samples (video on demand), widened by one sample for
//!   each pair of consecutive samples whose ratio is at least 1.3 or at most 1/1.3, counted from
//!   the *start* of the kept array (dash.js compares `arr[i]` with `arr[i − 1]` for `i` from 1,
//!   the oldest samples, not the newest ones: kept as dash.js does it). The safe average is
//!   0.9 × that. The latency average is the mean of the last 4 latencies.
//! - `ThroughputRule`: once the buffer is loaded (`BUFFER_LOADED`) and a sample exists, the
//!   quality for the safe average throughput and the latency; otherwise no opinion.
//! - The quality for a throughput `T` and latency `L` (`getQualityForBitrate`): if `L` exceeds a
//!   segment's duration, the lowest; otherwise the highest rung with bitrate ≤ `T · (1 − L / d)`
//!   (the "dead time" while waiting for the first byte), the lowest if none.

use super::{AbrContext, AbrInput, BufferState, Download};
use std::collections::VecDeque;

/// `MAX_MEASUREMENTS_TO_KEEP`.
const MAX_SAMPLES: usize = 20;
/// `AVERAGE_THROUGHPUT_SAMPLE_AMOUNT_VOD`, `AVERAGE_LATENCY_SAMPLE_AMOUNT`.
const SAMPLES_VOD: usize = 4;
/// `THROUGHPUT_INCREASE_SCALE`, `THROUGHPUT_DECREASE_SCALE`.
const VARIATION_SCALE: f64 = 1.3;
/// `bandwidthSafetyFactor`.
pub const SAFETY_FACTOR: f64 = 0.9;
/// `cacheLoadThresholds.video`, ms.
const CACHE_THRESHOLD_MS: f64 = 50.0;

/// dash.js's `ThroughputHistory` for the video type.
#[derive(Debug, Clone, Default)]
pub struct ThroughputHistory {
    /// kbit/s, oldest first.
    throughput: VecDeque<f64>,
    /// ms, oldest first.
    latency: VecDeque<f64>,
    has_cached_entries: bool,
}

impl ThroughputHistory {
    pub fn new() -> Self {
        Self::default()
    }

    /// A media segment download finished.
    pub fn push(&mut self, d: &Download) {
        let latency_ms = d.latency().as_millis_f64().max(1.0);
        let download_ms = d.download_time().as_millis_f64().max(1.0);
        let throughput = (8.0 * d.bytes as f64 / download_ms).round();
        if download_ms < CACHE_THRESHOLD_MS {
            if !self.throughput.is_empty() && !self.has_cached_entries {
                return;
            }
            self.has_cached_entries = true;
        } else if self.has_cached_entries {
            self.throughput.clear();
            self.latency.clear();
            self.has_cached_entries = false;
        }
        self.throughput.push_back(throughput);
        if self.throughput.len() > MAX_SAMPLES {
            self.throughput.pop_front();
        }
        self.latency.push_back(latency_ms);
        if self.latency.len() > MAX_SAMPLES {
            self.latency.pop_front();
        }
    }

    /// dash.js `getSampleSize` for throughput (VOD).
    fn throughput_sample_size(&self) -> usize {
        let arr = &self.throughput;
        let mut size = SAMPLES_VOD;
        if size >= arr.len() {
            return arr.len();
        }
        let mut i = 1;
        while i < size {
            let ratio = arr[i] / arr[i - 1];
            if ratio >= VARIATION_SCALE || ratio <= 1.0 / VARIATION_SCALE {
                size += 1;
                if size == arr.len() {
                    break;
                }
            }
            i += 1;
        }
        size
    }

    /// Mean throughput, kbit/s (`None` without samples).
    pub fn average_kbps(&self) -> Option<f64> {
        let n = self.throughput_sample_size();
        (n > 0).then(|| self.throughput.iter().rev().take(n).sum::<f64>() / n as f64)
    }

    /// 0.9 × the mean, kbit/s.
    pub fn safe_average_kbps(&self) -> Option<f64> {
        self.average_kbps().map(|a| a * SAFETY_FACTOR)
    }

    /// Mean latency of the last 4 downloads, ms.
    pub fn average_latency_ms(&self) -> Option<f64> {
        let n = SAMPLES_VOD.min(self.latency.len());
        (n > 0).then(|| self.latency.iter().rev().take(n).sum::<f64>() / n as f64)
    }

    pub fn samples(&self) -> usize {
        self.throughput.len()
    }
}

/// dash.js `getQualityForBitrate`: the rung for `kbps` (NaN gives the lowest) after the dead
/// time of `latency_ms`.
pub fn quality_for_bitrate(ctx: &AbrContext, kbps: f64, latency_ms: Option<f64>) -> usize {
    let mut kbps = kbps;
    if let Some(l) = latency_ms.filter(|l| *l > 0.0) {
        let latency_s = l / 1000.0;
        if latency_s > ctx.segment_duration_s {
            return 0;
        }
        kbps *= 1.0 - latency_s / ctx.segment_duration_s;
    }
    if kbps.is_nan() {
        return 0;
    }
    ctx.highest_at_most(kbps * 1000.0)
}

/// dash.js `ThroughputRule.getMaxIndex` (called only while the buffer-occupancy rule is not in
/// use): `None` for no opinion.
pub fn throughput_rule(
    ctx: &AbrContext,
    history: &ThroughputHistory,
    input: &AbrInput,
) -> Option<usize> {
    let safe = history.safe_average_kbps()?;
    if input.buffer_state != Some(BufferState::Loaded) {
        return None;
    }
    Some(quality_for_bitrate(ctx, safe, history.average_latency_ms()))
}

#[cfg(test)]
mod tests {
    use super::super::test_util::{ctx, download, input};
    use super::*;

    #[test]
    fn the_estimate_is_0_9_times_the_mean_of_the_last_four_samples() {
        let mut h = ThroughputHistory::new();
        // Five steady downloads at 20, 20, 22, 24, 24 Mbit/s (no ratio beyond 1.3).
        for (i, rate) in [20.0, 20.0, 22.0, 24.0, 24.0].into_iter().enumerate() {
            h.push(&download(
                i,
                8,
                rate * 2.0,
                2.0,
                100.0,
                10.0 * (i + 1) as f64,
            ));
        }
        assert_eq!(
            h.average_kbps(),
            Some(22_500.0),
            "mean of the last four: (20 + 22 + 24 + 24) / 4 Mbit/s"
        );
        assert_eq!(h.safe_average_kbps(), Some(20_250.0), "0.9 x 22.5 Mbit/s");
        assert_eq!(h.average_latency_ms(), Some(100.0));
        // 20.25 Mbit/s after a 100 ms dead time of a 5 s segment: 19.845 Mbit/s -> 17.5 (rung 7).
        let q = throughput_rule(&ctx(), &h, &input(&[], 6.0, 8, 60.0));
        assert_eq!(
            q,
            Some(7),
            "20.25 x (1 - 0.1 / 5) = 19.85 Mbit/s is below the 20 Mbit/s rung"
        );
    }

    #[test]
    fn variable_samples_widen_the_window_counting_from_the_oldest() {
        let mut h = ThroughputHistory::new();
        // 10, 20 (ratio 2: widen), 20, 20, 20, 20 Mbit/s: the mean of the last five.
        for (i, rate) in [10.0, 20.0, 20.0, 20.0, 20.0, 20.0].into_iter().enumerate() {
            h.push(&download(i, 4, rate, 1.0, 50.0, (i + 1) as f64 * 5.0));
        }
        assert_eq!(
            h.average_kbps(),
            Some(20_000.0),
            "the last five are all 20 Mbit/s"
        );
        let mut h2 = ThroughputHistory::new();
        // 20 x 5 then 10: the newest variation is not looked at (dash.js scans from the
        // oldest), so the window stays four wide: (20 + 20 + 20 + 10) / 4.
        for (i, rate) in [20.0, 20.0, 20.0, 20.0, 20.0, 10.0].into_iter().enumerate() {
            h2.push(&download(i, 4, rate, 1.0, 50.0, (i + 1) as f64 * 5.0));
        }
        assert_eq!(h2.average_kbps(), Some(17_500.0));
    }

    #[test]
    fn fast_downloads_count_as_cache_hits() {
        let mut h = ThroughputHistory::new();
        h.push(&download(0, 0, 5.0, 1.0, 50.0, 5.0));
        // 40 ms: a cache hit, ignored once an uncached sample exists.
        h.push(&download(1, 0, 5.0, 0.04, 50.0, 10.0));
        assert_eq!(h.samples(), 1);
        assert_eq!(h.average_kbps(), Some(5_000.0));
    }

    #[test]
    fn the_rule_waits_for_a_loaded_buffer_and_a_long_latency_gives_the_lowest_rung() {
        let mut h = ThroughputHistory::new();
        let c = ctx();
        assert_eq!(
            throughput_rule(&c, &h, &input(&[], 0.0, 0, 0.0)),
            None,
            "no sample yet"
        );
        h.push(&download(0, 0, 50.0, 2.0, 6000.0, 10.0));
        let mut i = input(&[], 0.3, 0, 10.0);
        i.buffer_state = Some(BufferState::Empty);
        assert_eq!(
            throughput_rule(&c, &h, &i),
            None,
            "a stalled buffer is not loaded"
        );
        i.buffer_state = Some(BufferState::Loaded);
        assert_eq!(
            throughput_rule(&c, &h, &i),
            Some(0),
            "a 6 s latency exceeds the 5 s segment: the lowest rung"
        );
    }
}
