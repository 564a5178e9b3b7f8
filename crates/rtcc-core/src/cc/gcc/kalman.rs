//! The arrival-time filter of the `paper` profile: a Kalman filter that extracts the one-way
//! queuing-delay variation m(t_i) from the measured delay variation of video frames.
//!
//! The seed (GCC-AQM §2.2, Eq. 3) models the measured one-way delay variation between frames
//! i−1 and i, `d_m(t_i) = (t_i − t_{i−1}) − (T_i − T_{i−1})` (receive minus send spacing), as
//! `d(t_i) = ΔL(t_i)/C(t_i) + m(t_i) + n(t_i)`: the size difference over the capacity, the
//! queuing-delay variation, and Gaussian jitter. The paper gives no filter parameters; this is
//! the two-state filter of the WebRTC code of the paper's era (`overuse_estimator.cc` with
//! `OverUseDetectorOptions`), whose state is θ = [1/C, m] (ms per byte, ms):
//!
//! - predict: `E ← E + Q`, `Q = diag(1e-13, 1e-3)`; if the detector says over-using while m
//!   falls, or under-using while m rises, `E[1][1] += 10 · Q[1]` (the state is changing fast);
//! - residual `z = d_m − ΔL · θ₀ − θ₁` with `h = [ΔL, 1]`;
//! - measurement noise: only while the detector is normal, `z` clipped to ±3√σ² updates
//!   `avg ← β·avg + (1−β)·z`, `σ² ← max(1, β·σ² + (1−β)(avg − z)²)` with
//!   `β = (1 − α)^(30 · T_min / 1000)`, `α = 0.01` for the first 300 groups then 0.002, and
//!   `T_min` the smallest send-time delta of the last 60 groups (α is tuned for 30 fps);
//! - gain `K = E h / (σ² + hᵀ E h)`, `θ ← θ + K z`, `E ← (I − K hᵀ) E`.
//!
//! Initial values: θ = [8/512, 0], `E = diag(100, 0.1)`, avg 0, σ² = 50; the group counter is
//! capped at 1000 (`kDeltaCounterMax`), the send-delta history holds 60 groups
//! (`kMinFramePeriodHistoryLength`).

use super::overuse::Usage;
use std::collections::VecDeque;

pub const PROCESS_NOISE: [f64; 2] = [1e-13, 1e-3];
pub const INITIAL_E: [[f64; 2]; 2] = [[100.0, 0.0], [0.0, 0.1]];
pub const INITIAL_SLOPE: f64 = 8.0 / 512.0;
pub const INITIAL_VAR_NOISE: f64 = 50.0;
pub const MIN_FRAME_PERIOD_HISTORY: usize = 60;
pub const DELTA_COUNTER_MAX: u32 = 1000;

#[derive(Debug, Clone)]
pub struct Kalman {
    slope: f64,
    offset: f64,
    prev_offset: f64,
    e: [[f64; 2]; 2],
    avg_noise: f64,
    var_noise: f64,
    num_deltas: u32,
    send_deltas: VecDeque<f64>,
}

impl Default for Kalman {
    fn default() -> Self {
        Kalman {
            slope: INITIAL_SLOPE,
            offset: 0.0,
            prev_offset: 0.0,
            e: INITIAL_E,
            avg_noise: 0.0,
            var_noise: INITIAL_VAR_NOISE,
            num_deltas: 0,
            send_deltas: VecDeque::with_capacity(MIN_FRAME_PERIOD_HISTORY),
        }
    }
}

impl Kalman {
    /// m̂, ms.
    pub fn offset(&self) -> f64 {
        self.offset
    }
    /// Estimated 1/C, ms per byte.
    pub fn slope(&self) -> f64 {
        self.slope
    }
    pub fn var_noise(&self) -> f64 {
        self.var_noise
    }
    pub fn num_deltas(&self) -> u32 {
        self.num_deltas
    }

    /// One frame pair: receive and send deltas (ms), size difference (bytes), and the detector's
    /// current signal. Returns m̂.
    pub fn update(&mut self, recv_ms: f64, send_ms: f64, size_delta: f64, usage: Usage) -> f64 {
        let min_period = self.min_frame_period(send_ms);
        let d = recv_ms - send_ms;
        self.num_deltas = (self.num_deltas + 1).min(DELTA_COUNTER_MAX);
        self.e[0][0] += PROCESS_NOISE[0];
        self.e[1][1] += PROCESS_NOISE[1];
        if (usage == Usage::Overusing && self.offset < self.prev_offset)
            || (usage == Usage::Underusing && self.offset > self.prev_offset)
        {
            self.e[1][1] += 10.0 * PROCESS_NOISE[1];
        }
        let h = [size_delta, 1.0];
        let eh = [
            self.e[0][0] * h[0] + self.e[0][1] * h[1],
            self.e[1][0] * h[0] + self.e[1][1] * h[1],
        ];
        let residual = d - self.slope * h[0] - self.offset;
        if usage == Usage::Normal {
            let max = 3.0 * self.var_noise.sqrt();
            self.update_noise(residual.clamp(-max, max), min_period);
        }
        let denom = self.var_noise + h[0] * eh[0] + h[1] * eh[1];
        let k = [eh[0] / denom, eh[1] / denom];
        let ikh = [
            [1.0 - k[0] * h[0], -k[0] * h[1]],
            [-k[1] * h[0], 1.0 - k[1] * h[1]],
        ];
        let e = self.e;
        self.e = [
            [
                ikh[0][0] * e[0][0] + ikh[0][1] * e[1][0],
                ikh[0][0] * e[0][1] + ikh[0][1] * e[1][1],
            ],
            [
                ikh[1][0] * e[0][0] + ikh[1][1] * e[1][0],
                ikh[1][0] * e[0][1] + ikh[1][1] * e[1][1],
            ],
        ];
        self.slope += k[0] * residual;
        self.prev_offset = self.offset;
        self.offset += k[1] * residual;
        self.offset
    }

    fn min_frame_period(&mut self, send_ms: f64) -> f64 {
        if self.send_deltas.len() >= MIN_FRAME_PERIOD_HISTORY {
            self.send_deltas.pop_front();
        }
        let min = self.send_deltas.iter().copied().fold(send_ms, f64::min);
        self.send_deltas.push_back(send_ms);
        min
    }

    fn update_noise(&mut self, residual: f64, period_ms: f64) {
        let alpha: f64 = if self.num_deltas > 300 { 0.002 } else { 0.01 };
        let beta = (1.0 - alpha).powf(period_ms * 30.0 / 1000.0);
        self.avg_noise = beta * self.avg_noise + (1.0 - beta) * residual;
        let dev = self.avg_noise - residual;
        self.var_noise = (beta * self.var_noise + (1.0 - beta) * dev * dev).max(1.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_update_is_the_textbook_kalman_step() {
        // Equal frame sizes (ΔL = 0): only the offset moves. Predicted E11 = 0.1 + 0.001;
        // the frame period is 1000/30 ms, so β = 0.99^1 and the noise estimate becomes
        // avg = 0.01·z, σ² = 0.99·50 + 0.01·(0.99 z)² with z = 2 ms.
        let mut k = Kalman::default();
        let m = k.update(1000.0 / 30.0 + 2.0, 1000.0 / 30.0, 0.0, Usage::Normal);
        let z: f64 = 2.0;
        let var = 0.99 * 50.0 + 0.01 * (0.99 * z).powi(2);
        let gain = 0.101 / (var + 0.101);
        assert!((k.var_noise() - var).abs() < 1e-12);
        assert!((m - gain * z).abs() < 1e-12, "{m}");
        assert_eq!(k.slope(), INITIAL_SLOPE, "ΔL = 0 says nothing about 1/C");
    }

    #[test]
    fn a_queue_building_up_is_tracked_and_over_use_speeds_the_filter_up() {
        // A queue growing by 2 ms per frame (the sender ~6 % above a 30 fps link), then 4 ms.
        let period = 1000.0 / 30.0;
        let mut k = Kalman::default();
        let mut trace = Vec::new();
        for _ in 0..300 {
            trace.push(k.update(period + 2.0, period, 0.0, Usage::Normal));
        }
        // Monotone convergence from below. σ² starts at 50, so the gain starts near
        // 0.1 / 50 and the filter is slow at first: still below half the ramp after 4 s.
        assert!(trace.windows(2).all(|w| w[1] > w[0] && w[1] < 2.0));
        assert!(trace[29] < 0.2, "after one second: {}", trace[29]);
        assert!(trace[119] < 1.0, "after four seconds: {}", trace[119]);
        let m = k.offset();
        assert!((m - 2.0).abs() < 0.1, "after 300 frames: {m}");
        // As the residuals shrink the noise estimate decays toward its floor of 1 ms².
        assert!(
            k.var_noise() > 1.0 && k.var_noise() < 3.0,
            "{}",
            k.var_noise()
        );
        // A step to 4 ms/frame: with σ² ≈ 2.5 the gain is about √(q/σ²) ≈ 0.02 per frame.
        for _ in 0..200 {
            k.update(period + 4.0, period, 0.0, Usage::Normal);
        }
        assert!((k.offset() - 4.0).abs() < 0.05, "{}", k.offset());
        // While the detector says over-using and m̂ falls, the extra process noise makes the
        // filter follow a drain faster than it would in the normal state.
        let (mut a, mut b) = (k.clone(), k.clone());
        for _ in 0..10 {
            a.update(period - 3.0, period, 0.0, Usage::Normal);
            b.update(period - 3.0, period, 0.0, Usage::Overusing);
        }
        assert!(b.offset() < a.offset(), "{} vs {}", b.offset(), a.offset());
    }
}
