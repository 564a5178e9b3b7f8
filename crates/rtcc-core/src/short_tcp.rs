//! Short TCP flows (RFC 8867 §5.7, with RFC 8868's TCP traffic model): the random
//! file sizes and idle times of a flow that alternates downloads and idle periods.
//!
//! RFC 8867 §5.7 ("Media Flow Competing with Short TCP Flows") models each short TCP flow as "a
//! sequence of file downloads interleaved with idle periods", and of its ten short flows two
//! start in the ON state and eight in the OFF state. RFC 8868's traffic model gives the numbers:
//! each download fetches "small (30-50 KB) amounts of data, evenly distributed", and "the idle
//! period between bursts ... is typically derived from an exponential distribution with the mean
//! value of 10 seconds". So here, per flow:
//!
//! - a file size is uniform over the whole bytes of `[min_size, max_size]`
//!   (defaults 30 000 and 50 000 bytes: RFC 8868's KB read as 1000 bytes);
//! - an idle period is exponential with mean `mean_idle` (default 10 s), drawn by inversion,
//!   `−mean · ln(U)` with `U` uniform in (0, 1], and rounded to whole nanoseconds;
//! - a flow that starts ON downloads at its start; one that starts OFF first waits an idle
//!   period. Which flows start OFF is the scenario's choice (`initial = "off"` on eight of ten
//!   flows reproduces §5.7).
//!
//! RFC 8868 describes a burst as "30 connections start simultaneously"; RFC 8867 §5.7 has ten
//! flows each downloading in sequence, which is what one short flow here is: one download at a
//! time (as cisco's ns3-rmcat models §5.7). A burst of parallel connections is several short
//! flows. How a download is carried (a fresh connection each, the idle period starting when the
//! last byte is acknowledged) is the endpoint's: [`crate::endpoint::short_tcp`].
//!
//! The generator owns its random stream (seeded per flow), so a flow's sizes and idle times do
//! not depend on what the network does to it, and the same seed gives the same sequence.

use crate::units::Duration;
use rand_chacha::ChaCha8Rng;
use rand_core::{Rng, SeedableRng};

/// RFC 8868's smallest and largest download, and mean idle time.
pub const DEFAULT_MIN_SIZE: u64 = 30_000;
pub const DEFAULT_MAX_SIZE: u64 = 50_000;
pub const DEFAULT_MEAN_IDLE: Duration = Duration(10_000_000_000);

/// A short flow's traffic model.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ShortFlowConfig {
    /// File sizes are uniform over `[min_size, max_size]` bytes of data.
    pub min_size: u64,
    pub max_size: u64,
    /// Mean of the exponential idle period.
    pub mean_idle: Duration,
    /// Starts with a download (ON) or with an idle period (OFF).
    pub starts_on: bool,
}

impl Default for ShortFlowConfig {
    fn default() -> Self {
        ShortFlowConfig {
            min_size: DEFAULT_MIN_SIZE,
            max_size: DEFAULT_MAX_SIZE,
            mean_idle: DEFAULT_MEAN_IDLE,
            starts_on: true,
        }
    }
}

/// Draws a short flow's file sizes and idle periods.
#[derive(Debug, Clone)]
pub struct ShortFlowGenerator {
    config: ShortFlowConfig,
    rng: ChaCha8Rng,
}

impl ShortFlowGenerator {
    pub fn new(config: ShortFlowConfig, seed: u64) -> ShortFlowGenerator {
        ShortFlowGenerator {
            config,
            rng: ChaCha8Rng::seed_from_u64(seed),
        }
    }

    pub fn config(&self) -> &ShortFlowConfig {
        &self.config
    }

    /// The next file's size in bytes, uniform over `[min_size, max_size]`.
    pub fn next_size(&mut self) -> u64 {
        let span = self.config.max_size - self.config.min_size + 1;
        // Multiply-shift maps 64 random bits onto the span with a bias below span / 2^64.
        let offset = ((self.rng.next_u64() as u128 * span as u128) >> 64) as u64;
        self.config.min_size + offset
    }

    /// The next idle period, exponential with mean `mean_idle`.
    pub fn next_idle(&mut self) -> Duration {
        let u = ((self.rng.next_u64() >> 11) + 1) as f64 / (1u64 << 53) as f64;
        Duration((-(self.config.mean_idle.0 as f64) * u.ln()).round() as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const N: usize = 100_000;

    #[test]
    fn sizes_are_uniform_over_the_rfc_range() {
        let mut g = ShortFlowGenerator::new(ShortFlowConfig::default(), 11);
        let sizes: Vec<u64> = (0..N).map(|_| g.next_size()).collect();
        assert!(sizes.iter().all(|s| (30_000..=50_000).contains(s)));
        assert_eq!(sizes.iter().min(), Some(&30_000), "both ends are reached");
        assert_eq!(sizes.iter().max(), Some(&50_000));
        // Mean 40 000 B, sd 20 000/√12 = 5774 B: the sample mean's standard error is
        // 5774/√N = 18.3 B; 5 of them.
        let mean = sizes.iter().sum::<u64>() as f64 / N as f64;
        assert!(
            (mean - 40_000.0).abs() < 5.0 * 5774.0 / (N as f64).sqrt(),
            "{mean}"
        );
        // Kolmogorov–Smirnov against the uniform CDF: the 0.1 % critical value of
        // sup|F_n − F| is 1.95/√N = 0.0062.
        let mut sorted: Vec<f64> = sizes.iter().map(|&s| s as f64).collect();
        sorted.sort_by(f64::total_cmp);
        let d = ks(&sorted, |x| (x - 30_000.0 + 1.0) / 20_001.0);
        assert!(d < 1.95 / (N as f64).sqrt(), "KS distance {d}");
    }

    #[test]
    fn idle_periods_are_exponential_with_the_rfc_mean() {
        let mut g = ShortFlowGenerator::new(ShortFlowConfig::default(), 12);
        let idle: Vec<f64> = (0..N).map(|_| g.next_idle().as_secs_f64()).collect();
        // Mean 10 s, sd 10 s: standard error 10/√N = 0.032 s; 5 of them.
        let mean = idle.iter().sum::<f64>() / N as f64;
        assert!(
            (mean - 10.0).abs() < 5.0 * 10.0 / (N as f64).sqrt(),
            "{mean}"
        );
        // The median is 10 ln 2 = 6.931 s; the sample median's standard error is
        // √(0.25/N)/f(median), f(median) = 0.5/10 per s: 0.032 s; 5 of them.
        let mut sorted = idle.clone();
        sorted.sort_by(f64::total_cmp);
        assert!((sorted[N / 2] - 6.931).abs() < 0.16, "{}", sorted[N / 2]);
        let d = ks(&sorted, |x| 1.0 - (-x / 10.0).exp());
        assert!(d < 1.95 / (N as f64).sqrt(), "KS distance {d}");
    }

    #[test]
    fn the_same_seed_gives_the_same_sequence_and_parameters_are_followed() {
        let cfg = ShortFlowConfig {
            min_size: 1000,
            max_size: 1000,
            mean_idle: Duration::from_millis(500),
            starts_on: false,
        };
        let draw = |seed| {
            let mut g = ShortFlowGenerator::new(cfg, seed);
            (0..50)
                .map(|_| (g.next_size(), g.next_idle()))
                .collect::<Vec<_>>()
        };
        assert_eq!(draw(5), draw(5));
        assert_ne!(draw(5), draw(6));
        assert!(draw(5).iter().all(|&(s, _)| s == 1000));
    }

    /// sup |F_n(x) − F(x)| over sorted samples. At tied (discrete) values the lower step is
    /// compared with F(x) rather than F(x−): for the sizes that overstates the distance by at
    /// most 1/20 001, against a threshold of 0.0062.
    fn ks(sorted: &[f64], cdf: impl Fn(f64) -> f64) -> f64 {
        let n = sorted.len() as f64;
        sorted
            .iter()
            .enumerate()
            .map(|(i, &x)| {
                let f = cdf(x);
                (f - i as f64 / n).abs().max(((i + 1) as f64 / n - f).abs())
            })
            .fold(0.0, f64::max)
    }
}
