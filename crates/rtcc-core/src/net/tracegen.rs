//! A seeded generator of LTE-like capacity traces in mahimahi format.
//!
//! Real cellular downlinks (the Verizon/AT&T/T-Mobile traces mahimahi ships) vary on a scale of
//! seconds, swing by a factor of several around their mean, and drop out for a few hundred
//! milliseconds now and then. The model reproduces those three features and nothing more:
//!
//! 1. Slow fading: the log of the rate follows a Gauss–Markov (AR(1)) process sampled every
//!    `STEP` = 50 ms with correlation time `coherence` (default 2 s) and standard deviation
//!    `sigma` (default 0.6, so the rate's 5th–95th percentiles span roughly 0.3× to 2.4× the
//!    median): `x[k+1] = ρ x[k] + √(1-ρ²) ε`, `ρ = exp(-STEP / coherence)`, rate ∝ `exp(σ x)`.
//! 2. Outages: a two-state Markov chain enters an outage on average every `outage_every`
//!    (default 20 s) and stays in it for a mean `outage_mean` (default 300 ms, exponential);
//!    the rate is zero during an outage.
//! 3. The rate is capped at 4× the mean (a cell's peak) and the whole series is then scaled so
//!    that the trace's mean capacity is exactly the requested one.
//!
//! The rate becomes delivery opportunities by integration: each millisecond emits as many
//! 1500-byte opportunities as the accumulated rate has earned. The trace's last line is the
//! requested duration so that it loops with that period. Same seed, same trace, byte for byte.

use crate::units::{Duration, Rate};
use rand_chacha::ChaCha8Rng;
use rand_core::{Rng, SeedableRng};

const STEP_MS: u64 = 50;

/// Why no trace could be generated.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LteTraceError {
    #[error("duration must be at least 1s, got {0}")]
    TooShort(Duration),
    #[error("mean rate must be positive, got {0}")]
    MeanNotPositive(Rate),
    #[error("the generated trace is all outage; use another seed")]
    AllOutage,
}

#[derive(Debug, Clone)]
pub struct LteTraceConfig {
    pub seed: u64,
    pub duration: Duration,
    pub mean: Rate,
    pub sigma: f64,
    pub coherence: Duration,
    pub outage_every: Duration,
    pub outage_mean: Duration,
}

impl LteTraceConfig {
    pub fn new(seed: u64, duration: Duration, mean: Rate) -> Self {
        LteTraceConfig {
            seed,
            duration,
            mean,
            sigma: 0.6,
            coherence: Duration::from_millis(2000),
            outage_every: Duration::from_millis(20_000),
            outage_mean: Duration::from_millis(300),
        }
    }
}

fn uniform(rng: &mut ChaCha8Rng) -> f64 {
    // 53 random bits in (0, 1).
    ((rng.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
}

fn normal(rng: &mut ChaCha8Rng) -> f64 {
    let (u1, u2) = (uniform(rng), uniform(rng));
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

/// Generate the trace: millisecond offsets of delivery opportunities, the last one equal to the
/// duration. Errors on a duration under 1 s or a mean rate that is not positive.
pub fn generate_lte(cfg: &LteTraceConfig) -> Result<Vec<u64>, LteTraceError> {
    let duration_ms = cfg.duration.0 / 1_000_000;
    if duration_ms < 1000 {
        return Err(LteTraceError::TooShort(cfg.duration));
    }
    if !(cfg.mean.bps() > 0.0 && cfg.mean.bps().is_finite()) {
        return Err(LteTraceError::MeanNotPositive(cfg.mean));
    }
    let mut rng = ChaCha8Rng::seed_from_u64(cfg.seed);
    let steps = duration_ms.div_ceil(STEP_MS) as usize;
    let rho = (-(STEP_MS as f64) / cfg.coherence.as_millis_f64().max(1.0)).exp();
    let p_enter = STEP_MS as f64 / cfg.outage_every.as_millis_f64().max(1.0);
    let p_leave = STEP_MS as f64 / cfg.outage_mean.as_millis_f64().max(1.0);
    let mut x = normal(&mut rng);
    let mut outage = false;
    let mut rates = Vec::with_capacity(steps);
    for _ in 0..steps {
        x = rho * x + (1.0 - rho * rho).sqrt() * normal(&mut rng);
        outage = if outage {
            uniform(&mut rng) >= p_leave
        } else {
            uniform(&mut rng) < p_enter
        };
        rates.push(if outage { 0.0 } else { (cfg.sigma * x).exp() });
    }
    // Cap at 4× the mean, then scale to the requested mean (twice, since the cap moves it).
    for _ in 0..2 {
        let m = rates.iter().sum::<f64>() / rates.len() as f64;
        if m <= 0.0 {
            return Err(LteTraceError::AllOutage);
        }
        for r in rates.iter_mut() {
            *r = (*r / m).min(4.0);
        }
    }
    let m = rates.iter().sum::<f64>() / rates.len() as f64;
    let bits_per_opportunity = 1500.0 * 8.0;
    let mut credit = 0.0;
    let mut out = Vec::new();
    for ms in 0..duration_ms {
        let r = rates[(ms / STEP_MS) as usize] / m * cfg.mean.bps();
        credit += r / 1000.0 / bits_per_opportunity;
        while credit >= 1.0 {
            credit -= 1.0;
            out.push(ms);
        }
    }
    out.push(duration_ms);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::capacity::MahimahiTrace;

    #[test]
    fn generates_a_valid_trace_with_the_requested_mean_deterministically() {
        let cfg = LteTraceConfig::new(3, Duration::from_millis(60_000), Rate::from_mbps(6.0));
        let a = generate_lte(&cfg).unwrap();
        assert_eq!(a, generate_lte(&cfg).unwrap(), "same seed, same trace");
        let text: String = a.iter().map(|v| format!("{v}\n")).collect();
        let tr = MahimahiTrace::parse(&text, "gen").unwrap();
        let mean = tr.mean_rate().mbps();
        assert!((mean - 6.0).abs() < 0.01, "mean {mean} Mbit/s");
        let other = generate_lte(&LteTraceConfig::new(4, cfg.duration, cfg.mean)).unwrap();
        assert_ne!(a, other);
        // It varies: 1-second capacities span at least a factor of 3.
        let per_s: Vec<usize> = (0..60)
            .map(|s| a.iter().filter(|&&t| t / 1000 == s).count())
            .collect();
        let (lo, hi) = (per_s.iter().min().unwrap(), per_s.iter().max().unwrap());
        assert!(
            *hi as f64 > 3.0 * (*lo as f64).max(1.0),
            "min {lo} max {hi} per second"
        );
        assert!(
            generate_lte(&LteTraceConfig::new(1, Duration::from_millis(10), cfg.mean)).is_err()
        );
    }
}
