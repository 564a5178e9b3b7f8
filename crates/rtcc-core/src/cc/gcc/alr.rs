//! The application-limited-region (ALR) detector (`webrtc` profile): is the sender using much
//! less than its estimate because the application has less to send?
//!
//! A byte budget fills at 65 % of the estimate and is drained by every packet sent; it holds at
//! most 500 ms of that rate (and may go as negative). When the budget is more than 80 % full the
//! sender has been sending well below 65 % of the estimate: ALR starts; it ends when the budget
//! falls below 50 %. In ALR the probe controller may send periodic probes (`probe.rs`) and, when
//! ALR ends, the acknowledged-bitrate estimator is told to expect a fast rate change.
//!
//! Constants (libwebrtc `goog_cc/alr_detector.h/.cc`, `modules/pacing/interval_budget.cc`):
//! `kDefaultAlrBandwidthUsagePercent = 65`, `kDefaultAlrStartBudgetLevelPercent = 80`,
//! `kDefaultAlrStopBudgetLevelPercent = 50`, budget window `kWindowMs = 500`, built with
//! `can_build_up_underuse = true`.

pub const USAGE_FRACTION: f64 = 0.65;
pub const START_LEVEL: f64 = 0.8;
pub const STOP_LEVEL: f64 = 0.5;
pub const WINDOW_MS: f64 = 500.0;

#[derive(Debug, Clone, Default)]
pub struct AlrDetector {
    target_bps: f64,
    max_bytes: f64,
    remaining: f64,
    last_send_ms: Option<f64>,
    start_ms: Option<f64>,
}

impl AlrDetector {
    pub fn new(estimate_bps: f64) -> Self {
        let mut d = AlrDetector::default();
        d.set_estimate(estimate_bps);
        d
    }

    /// When the current application-limited region started, if the sender is in one.
    pub fn start_ms(&self) -> Option<f64> {
        self.start_ms
    }

    pub fn set_estimate(&mut self, bps: f64) {
        self.target_bps = bps * USAGE_FRACTION;
        self.max_bytes = WINDOW_MS / 1000.0 * self.target_bps / 8.0;
        self.remaining = self.remaining.clamp(-self.max_bytes, self.max_bytes);
    }

    /// Fraction of the budget left (may be negative).
    pub fn level(&self) -> f64 {
        if self.max_bytes > 0.0 {
            self.remaining / self.max_bytes
        } else {
            0.0
        }
    }

    pub fn on_bytes_sent(&mut self, bytes: u32, now_ms: f64) {
        let Some(last) = self.last_send_ms.replace(now_ms) else {
            return;
        };
        self.remaining = (self.remaining - bytes as f64).max(-self.max_bytes);
        let added = self.target_bps * (now_ms - last) / 1000.0 / 8.0;
        self.remaining = (self.remaining + added).min(self.max_bytes);
        let level = self.level();
        if level > START_LEVEL && self.start_ms.is_none() {
            self.start_ms = Some(now_ms);
        } else if level < STOP_LEVEL && self.start_ms.is_some() {
            self.start_ms = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sending_a_third_of_the_estimate_is_application_limited_and_full_rate_is_not() {
        // Estimate 1 Mbps: the budget fills at 650 kbit/s and holds 40 625 bytes.
        let mut d = AlrDetector::new(1e6);
        // 1000 bytes every 24 ms = 333 kbit/s: the budget grows by 1950 − 1000 bytes per
        // packet, passing 80 % (32 500 bytes) at the 35th packet after the first.
        let mut t = 0.0;
        let mut started = None;
        for _ in 0..60 {
            d.on_bytes_sent(1000, t);
            if started.is_none() && d.start_ms().is_some() {
                started = Some(t);
            }
            t += 24.0;
        }
        assert_eq!(started, Some(35.0 * 24.0));
        // Sending at 1 Mbps (1000 bytes every 8 ms) drains it at 350 kbit/s: ALR ends below 50 %.
        while d.start_ms().is_some() {
            d.on_bytes_sent(1000, t);
            t += 8.0;
            assert!(t < 10_000.0);
        }
        assert!(d.level() < STOP_LEVEL);
    }
}
