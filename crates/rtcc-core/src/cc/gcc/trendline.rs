//! The trendline estimator (`webrtc` profile): the slope of the one-way delay over the last
//! packet groups, which estimates `(send rate − capacity) / capacity` while a queue builds.
//!
//! For each completed group pair the inter-arrival module gives `d = Δarrival − Δsend` (ms), the
//! change in one-way delay between the two groups. The estimator accumulates it,
//! `acc ← acc + d`, smooths it, `s ← 0.9 · s + 0.1 · acc`, and keeps the last 20 points
//! `(arrival time − first arrival time, s)`. Once the window is full, the trend is the
//! least-squares slope `Σ(x − x̄)(y − ȳ) / Σ(x − x̄)²` of those points (until then, and when all
//! x are equal, the previous trend is kept). A slope of 0.1 means the delay grows by 0.1 ms per
//! ms: the sender is 10 % above the bottleneck's rate. The over-use detector then compares
//! `min(n, 60) · trend · 4` with its adaptive threshold (`overuse.rs`).
//!
//! Constants (libwebrtc `goog_cc/trendline_estimator.cc`, `delay_based_bwe.cc`):
//! `kDefaultTrendlineWindowSize = 20`, `kDefaultTrendlineSmoothingCoeff = 0.9`,
//! `kDefaultTrendlineThresholdGain = 4.0` (applied by the detector), `kDeltaCounterMax = 1000`.

use std::collections::VecDeque;

/// Points in the regression window.
pub const WINDOW: usize = 20;
/// Weight of the previous smoothed delay.
pub const SMOOTHING: f64 = 0.9;
/// The detector's `threshold_gain`.
pub const THRESHOLD_GAIN: f64 = 4.0;
/// Cap on the group counter.
pub const DELTA_COUNTER_MAX: u32 = 1000;

#[derive(Debug, Clone)]
pub struct Trendline {
    num_deltas: u32,
    first_arrival_ms: Option<f64>,
    accumulated_ms: f64,
    smoothed_ms: f64,
    /// (arrival − first arrival, smoothed delay), oldest first.
    history: VecDeque<(f64, f64)>,
    trend: f64,
}

impl Default for Trendline {
    fn default() -> Self {
        Trendline {
            num_deltas: 0,
            first_arrival_ms: None,
            accumulated_ms: 0.0,
            smoothed_ms: 0.0,
            history: VecDeque::with_capacity(WINDOW + 1),
            trend: 0.0,
        }
    }
}

impl Trendline {
    /// Groups seen (at most 1000).
    pub fn num_deltas(&self) -> u32 {
        self.num_deltas
    }
    /// The current slope.
    pub fn trend(&self) -> f64 {
        self.trend
    }
    pub fn smoothed_delay_ms(&self) -> f64 {
        self.smoothed_ms
    }

    /// Add one group pair: receive and send deltas (ms) and the later group's arrival time (ms,
    /// receiver clock). Returns the trend.
    pub fn update(&mut self, recv_delta_ms: f64, send_delta_ms: f64, arrival_ms: f64) -> f64 {
        let delta = recv_delta_ms - send_delta_ms;
        self.num_deltas = (self.num_deltas + 1).min(DELTA_COUNTER_MAX);
        let first = *self.first_arrival_ms.get_or_insert(arrival_ms);
        self.accumulated_ms += delta;
        self.smoothed_ms = SMOOTHING * self.smoothed_ms + (1.0 - SMOOTHING) * self.accumulated_ms;
        self.history
            .push_back((arrival_ms - first, self.smoothed_ms));
        if self.history.len() > WINDOW {
            self.history.pop_front();
        }
        if self.history.len() == WINDOW {
            if let Some(slope) = linear_fit_slope(self.history.iter().copied()) {
                self.trend = slope;
            }
        }
        self.trend
    }
}

/// Least-squares slope of `points`, `None` if all x are equal (or there are none).
pub fn linear_fit_slope(points: impl Iterator<Item = (f64, f64)> + Clone) -> Option<f64> {
    let (mut n, mut sx, mut sy) = (0.0, 0.0, 0.0);
    for (x, y) in points.clone() {
        n += 1.0;
        sx += x;
        sy += y;
    }
    if n == 0.0 {
        return None;
    }
    let (xm, ym) = (sx / n, sy / n);
    let (mut num, mut den) = (0.0, 0.0);
    for (x, y) in points {
        num += (x - xm) * (y - ym);
        den += (x - xm) * (x - xm);
    }
    (den != 0.0).then(|| num / den)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slope_fits_a_line_exactly() {
        let pts = [(0.0, 1.0), (1.0, 3.0), (2.0, 5.0), (4.0, 9.0)];
        assert_eq!(linear_fit_slope(pts.iter().copied()), Some(2.0));
        assert_eq!(linear_fit_slope([(1.0, 1.0), (1.0, 2.0)].into_iter()), None);
    }

    #[test]
    fn a_constant_delay_ramp_gives_its_slope_through_the_smoothing() {
        // Groups every 5 ms of send time arriving 5.5 ms apart: the queue grows 0.5 ms per
        // group, i.e. 0.1 ms per ms of arrival time (the sender is 10 % over capacity).
        let mut t = Trendline::default();
        let mut trend = 0.0;
        for i in 1..=19 {
            trend = t.update(5.5, 5.0, 5.5 * i as f64);
        }
        assert_eq!(trend, 0.0, "no trend before the window of 20 is full");
        // Exact slope of the first full window. The accumulated delay after k groups is 0.5 k
        // and the smoothed delay s_k = 0.9 s_{k−1} + 0.05 k, i.e.
        // s_k = 0.5 (k − 9 (1 − 0.9^k)); x_k = 5.5 (k − 1).
        let s = |k: f64| 0.5 * (k - 9.0 * (1.0 - 0.9f64.powf(k)));
        let pts: Vec<(f64, f64)> = (1..=20)
            .map(|k| (5.5 * (k - 1) as f64, s(k as f64)))
            .collect();
        let expected = linear_fit_slope(pts.iter().copied()).unwrap();
        trend = t.update(5.5, 5.0, 5.5 * 20.0);
        assert!((trend - expected).abs() < 1e-12, "{trend} vs {expected}");
        assert!(
            (0.059..0.0592).contains(&trend),
            "the smoothing lags early on: {trend}"
        );
        // In steady state the smoothed delay trails the ramp by a constant: slope = 0.5/5.5.
        for i in 21..=200 {
            trend = t.update(5.5, 5.0, 5.5 * i as f64);
        }
        assert!((trend - 0.5 / 5.5).abs() < 1e-9, "{trend}");
        // A draining queue gives a negative slope of the same kind.
        let mut t = Trendline::default();
        for i in 1..=200 {
            trend = t.update(4.0, 5.0, 4.0 * i as f64);
        }
        assert!((trend + 0.25).abs() < 1e-9, "{trend}");
        assert_eq!(t.num_deltas(), 200);
    }
}
