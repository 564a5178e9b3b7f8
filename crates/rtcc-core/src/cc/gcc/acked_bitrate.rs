//! The acknowledged-bitrate estimator (`webrtc` profile): how fast the receiver is getting this
//! flow's bytes, from the receive times in transport feedback. AIMD decreases to β times this
//! rate, caps increases at 1.5 times it, and the probe controller and link-capacity estimator
//! read it too.
//!
//! Bytes are summed over fixed windows of receive time (500 ms until the first estimate, 150 ms
//! after); each full window gives a sample `8 · bytes / window` (kbit/s). The first sample is
//! the estimate; later samples are fused in a one-dimensional Bayesian update whose sample
//! uncertainty grows with the distance from the current estimate:
//!
//! ```text
//! u   = 10 · |est − sample| / est            sample variance  u²
//! p   = var + 5                              (the rate may drift between samples)
//! est = (u² · est + p · sample) / (u² + p)   var = u² · p / (u² + p)
//! ```
//!
//! so a sample close to the estimate moves it a lot and an outlier little. A gap longer than a
//! window restarts the window. After an application-limited period ends, the next packet sent
//! later adds 200 to the variance so the estimate can follow the rate increase quickly.
//!
//! Constants (libwebrtc `goog_cc/bitrate_estimator.cc`, `acknowledged_bitrate_estimator.cc`):
//! `kInitialRateWindowMs = 500`, `kRateWindowMs = 150`, uncertainty scale 10, initial variance
//! 50, +5 per update, `ExpectFastRateChange` +200 (the symmetry cap and floor default to 0).

/// First window, ms.
pub const INITIAL_WINDOW_MS: f64 = 500.0;
/// Window after the first estimate, ms.
pub const WINDOW_MS: f64 = 150.0;
pub const UNCERTAINTY_SCALE: f64 = 10.0;
pub const INITIAL_VARIANCE: f64 = 50.0;
pub const VARIANCE_GROWTH: f64 = 5.0;
pub const FAST_CHANGE_VARIANCE: f64 = 200.0;

#[derive(Debug, Clone)]
pub struct AckedBitrate {
    sum_bytes: f64,
    window_ms: f64,
    prev_ms: Option<f64>,
    estimate_kbps: Option<f64>,
    variance: f64,
    alr_ended_ms: Option<f64>,
}

impl Default for AckedBitrate {
    fn default() -> Self {
        AckedBitrate {
            sum_bytes: 0.0,
            window_ms: 0.0,
            prev_ms: None,
            estimate_kbps: None,
            variance: INITIAL_VARIANCE,
            alr_ended_ms: None,
        }
    }
}

impl AckedBitrate {
    /// The estimate, bps.
    pub fn bitrate_bps(&self) -> Option<f64> {
        self.estimate_kbps.map(|k| k * 1000.0)
    }

    /// The application-limited region ended at `now_ms` (sender clock).
    pub fn set_alr_ended(&mut self, now_ms: f64) {
        self.alr_ended_ms = Some(now_ms);
    }

    /// A packet of `bytes` sent at `send_ms` (sender clock) arrived at `receive_ms` (receiver
    /// clock). Packets must come in receive-time order.
    pub fn update(&mut self, receive_ms: f64, send_ms: f64, bytes: u32) {
        if self.alr_ended_ms.is_some_and(|t| send_ms > t) {
            self.variance += FAST_CHANGE_VARIANCE;
            self.alr_ended_ms = None;
        }
        let window = if self.estimate_kbps.is_none() {
            INITIAL_WINDOW_MS
        } else {
            WINDOW_MS
        };
        let Some(sample) = self.update_window(receive_ms, bytes, window) else {
            return;
        };
        let Some(est) = self.estimate_kbps else {
            self.estimate_kbps = Some(sample);
            return;
        };
        let u = UNCERTAINTY_SCALE * (est - sample).abs() / est;
        let sample_var = u * u;
        let pred_var = self.variance + VARIANCE_GROWTH;
        self.estimate_kbps =
            Some(((sample_var * est + pred_var * sample) / (sample_var + pred_var)).max(0.0));
        self.variance = sample_var * pred_var / (sample_var + pred_var);
    }

    fn update_window(&mut self, now: f64, bytes: u32, window: f64) -> Option<f64> {
        if self.prev_ms.is_some_and(|p| now < p) {
            self.prev_ms = None;
            self.sum_bytes = 0.0;
            self.window_ms = 0.0;
        }
        if let Some(p) = self.prev_ms {
            self.window_ms += now - p;
            if now - p > window {
                self.sum_bytes = 0.0;
                self.window_ms %= window;
            }
        }
        self.prev_ms = Some(now);
        let mut sample = None;
        if self.window_ms >= window {
            sample = Some(8.0 * self.sum_bytes / window);
            self.window_ms -= window;
            self.sum_bytes = 0.0;
        }
        self.sum_bytes += bytes as f64;
        sample
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 1000-byte packets every `gap` ms from `t0`, `n` of them; returns the next time.
    fn feed(e: &mut AckedBitrate, t0: f64, gap: f64, n: usize) -> f64 {
        let mut t = t0;
        for _ in 0..n {
            e.update(t, t, 1000);
            t += gap;
        }
        t
    }

    #[test]
    fn the_first_500ms_window_is_the_estimate_then_samples_are_fused() {
        let mut e = AckedBitrate::default();
        // 1000 bytes every 8 ms = 1 Mbps: packets at 0..496 ms fill the first window.
        let t = feed(&mut e, 0.0, 8.0, 63);
        assert_eq!(e.bitrate_bps(), None);
        // The packet at 504 ms closes it: 8 · 63 000 B / 500 ms = 1008 kbit/s.
        let t = feed(&mut e, t, 8.0, 1);
        assert_eq!(e.bitrate_bps(), Some(1_008_000.0));
        // Now 2 Mbps (every 4 ms from 508 ms). The next window started at 500 ms; it closes at
        // the first packet at or after 650 ms (652 ms) and holds the packets at 504..648 ms.
        let t = feed(&mut e, t - 4.0, 4.0, 36);
        assert_eq!(e.bitrate_bps(), Some(1_008_000.0));
        feed(&mut e, t, 4.0, 1);
        let (est, s): (f64, f64) = (1008.0, 8.0 * 37_000.0 / 150.0);
        let u2 = (10.0 * (s - est) / est).powi(2);
        let p = 50.0 + 5.0;
        let fused = (u2 * est + p * s) / (u2 + p);
        assert!((e.bitrate_bps().unwrap() - fused * 1000.0).abs() < 1e-6);
        assert!(
            fused > 1300.0 && fused < 1400.0,
            "a doubling moves it about a third of the way: {fused}"
        );
    }
}
