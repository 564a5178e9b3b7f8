//! Packet delay variation (PDV) of RFC 8868 §4.5: Random Bounded PDV (RBPDV, §4.5.1) and its
//! no-reordering variant (§4.5.2, "Approximately Random Subject to No-Reordering Bounded PDV",
//! which the RFC abbreviates both NR-RBPDV and NR-RPVD), with the truncated Gaussian the RFC
//! recommends (§4.5.3).
//!
//! **The sample.** §4.5.3 draws each packet's PDV sample as
//! `z(n) ~ |max(min(N(0, std²), N_STD·std), −N_STD·std)|`: a Gaussian of standard deviation
//! `std`, clipped (not redrawn) at ±`N_STD`·`std`, then folded to its absolute value. So `z` lies
//! in `[0, N_STD·std]`, and `N_STD·std` itself has probability `2(1 − Φ(N_STD))` (0.27 % for the
//! recommended `N_STD = 3`). With `c = N_STD`, `φ`/`Φ` the standard normal density/CDF:
//!
//! ```text
//! E[z]  = std · (2φ(0)·(1 − e^(−c²/2)) + 2c·(1 − Φ(c)))
//! E[z²] = std² · ((2Φ(c) − 1) − 2c·φ(c) + 2c²·(1 − Φ(c)))
//! ```
//!
//! Recommended values (§4.5.3): `std = 5 ms`, `N_STD = 3`.
//!
//! **RBPDV (§4.5.1).** Packet `n`, sent at `s(n)` (here: when it leaves the bottleneck), is
//! emitted at `j(n) = z(n) + x_mean + s(n)`. The RFC's `x_mean` is a constant base delay; in a
//! scenario that is the link's `delay`, added after this model, so here `j(n) = s(n) + z(n)`.
//! Each packet draws its own `z`, so whenever the spread of `z` (up to `N_STD·std`) exceeds the
//! spacing of two packets, they can arrive in the opposite order: RBPDV reorders.
//!
//! **NR-RBPDV (§4.5.2).** The same `j(n)`, then, in order for `n = 2, 3, …` of one flow: if
//! `j(n) < j(n−1) + serial(n−1)`, `j(n)` becomes `j(n−1) + serial(n−1)`, where `serial(n−1)` is
//! the serialisation time of packet `n−1` at "the lowest bottleneck link rate (or other
//! appropriate rate)": packet `n` leaves right behind packet `n−1`, as from a per-flow queue
//! that stalled. Packets of a flow never reorder; other flows are not held back (the rule is
//! per flow). The rate is the scenario's `serial_rate`, by default the link's peak rate
//! (`Capacity::peak_rate`: exact for a constant capacity; a schedule's highest step). Judgment
//! call: the RFC's "lowest bottleneck link rate" assumes a fixed link; on a scheduled one, the
//! lowest (or the mean) rate would space a flow's packets wider than the link serves them in its
//! faster steps and cap the flow there, which is no delay variation. On an unlimited link
//! without one, `serial` is 0.
//!
//! §4.5 says that a flow competing with the RTP flow must get the no-reordering model, and that
//! RBPDV is given for information only. rtcc's TCP model takes a reordered segment as lost
//! ([`crate::tcp`]), so RBPDV on a path with TCP flows causes spurious retransmissions.

use crate::units::{Duration, Rate, Time};
use rand_chacha::ChaCha8Rng;
use rand_core::Rng;

/// RFC 8868 §4.5.3's recommended standard deviation.
pub const DEFAULT_STD: Duration = Duration(5_000_000);
/// RFC 8868 §4.5.3's recommended truncation, in standard deviations.
pub const DEFAULT_N_STD: f64 = 3.0;

/// Which of RFC 8868's PDV models.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PdvModel {
    /// Random Bounded PDV (§4.5.1): independent samples, may reorder.
    Rbpdv,
    /// No-reordering bounded PDV (§4.5.2): a flow's packets keep their order, each at least
    /// its predecessor's serialisation time behind it.
    NrRbpdv,
}

/// A PDV model and its parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PdvConfig {
    pub model: PdvModel,
    /// Standard deviation of the Gaussian before clipping (`std`).
    pub std: Duration,
    /// Clipping bound in standard deviations (`N_STD`).
    pub n_std: f64,
    /// NR-RBPDV: the rate of `serial(n)`; `None` for 0 (back to back at one instant).
    pub serial_rate: Option<Rate>,
}

impl PdvConfig {
    /// Read a scenario's `jitter = { model = "rbpdv" | "nr-rbpdv", std, n_std, serial_rate }`;
    /// `link_rate` is the default `serial_rate` (`None`: an unlimited link). Errors give the
    /// bad sub-field (empty for the table itself) and what is allowed.
    pub fn from_value(
        v: &serde_json::Value,
        link_rate: Option<Rate>,
    ) -> Result<PdvConfig, (String, String)> {
        const FIELDS: [&str; 4] = ["model", "std", "n_std", "serial_rate"];
        let obj = v.as_object().ok_or_else(|| {
            (
                String::new(),
                format!("expected a duration (\"5ms\", uniform) or a table {{ model = \"nr-rbpdv\", std = \"5ms\", n_std = 3 }}, got {v}"),
            )
        })?;
        if let Some(k) = obj.keys().find(|k| !FIELDS.contains(&k.as_str())) {
            return Err((
                k.clone(),
                format!("unknown field; the PDV models take {}", FIELDS.join(", ")),
            ));
        }
        let model = match obj.get("model").and_then(|m| m.as_str()) {
            Some("rbpdv") => PdvModel::Rbpdv,
            Some("nr-rbpdv") | Some("nr-rpvd") => PdvModel::NrRbpdv,
            _ => {
                return Err((
                    "model".into(),
                    format!(
                        "expected \"rbpdv\" or \"nr-rbpdv\" (RFC 8868 §4.5), got {}",
                        obj.get("model").map_or("nothing".into(), |m| m.to_string())
                    ),
                ))
            }
        };
        let text = |k: &str| -> Result<Option<&str>, (String, String)> {
            match obj.get(k) {
                None => Ok(None),
                Some(x) => x.as_str().map(Some).ok_or_else(|| {
                    (
                        k.to_string(),
                        format!("expected a string with a unit, got {x}"),
                    )
                }),
            }
        };
        let std = match text("std")? {
            None => DEFAULT_STD,
            Some(s) => Duration::parse(s).map_err(|e| ("std".to_string(), e.to_string()))?,
        };
        if std.0 == 0 {
            return Err(("std".into(), "must be longer than 0ms".into()));
        }
        let n_std = match obj.get("n_std") {
            None => DEFAULT_N_STD,
            Some(x) => match x.as_f64() {
                Some(n) if n > 0.0 && n <= 10.0 => n,
                _ => {
                    return Err((
                        "n_std".into(),
                        format!("expected a number of standard deviations in (0, 10], got {x}"),
                    ))
                }
            },
        };
        let serial_rate = match text("serial_rate")? {
            None => link_rate,
            Some(_) if model == PdvModel::Rbpdv => {
                return Err((
                    "serial_rate".into(),
                    "applies only to the no-reordering model: model = \"nr-rbpdv\"".into(),
                ))
            }
            Some(s) => {
                let r = Rate::parse(s).map_err(|e| ("serial_rate".to_string(), e.to_string()))?;
                if r.bps().is_nan() || r.bps() <= 0.0 {
                    return Err(("serial_rate".into(), "must be a positive rate".into()));
                }
                Some(r)
            }
        };
        Ok(PdvConfig {
            model,
            std,
            n_std,
            serial_rate: serial_rate.filter(|r| r.bps().is_finite() && r.bps() > 0.0),
        })
    }

    /// The largest sample, `N_STD · std`.
    pub fn bound(&self) -> Duration {
        Duration((self.std.0 as f64 * self.n_std).round() as u64)
    }
}

/// The PDV of one direction of a link: its configuration and the per-flow state of NR-RBPDV.
#[derive(Debug, Clone)]
pub struct Pdv {
    config: PdvConfig,
    /// Per flow: `j(n−1)` and `serial(n−1)` of its last packet (NR-RBPDV).
    last: Vec<Option<(Time, Duration)>>,
}

/// A uniform number in (0, 1] (53 bits).
fn unit_open(rng: &mut ChaCha8Rng) -> f64 {
    ((rng.next_u64() >> 11) + 1) as f64 / (1u64 << 53) as f64
}

/// A standard normal sample (Box–Muller, one of the pair).
fn standard_normal(rng: &mut ChaCha8Rng) -> f64 {
    let (u1, u2) = (unit_open(rng), unit_open(rng));
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

impl Pdv {
    pub fn new(config: PdvConfig) -> Pdv {
        Pdv {
            config,
            last: Vec::new(),
        }
    }

    pub fn config(&self) -> &PdvConfig {
        &self.config
    }

    /// One sample `z(n) = |clip(N(0, std²), ±N_STD·std)|` (§4.5.3).
    pub fn sample(&self, rng: &mut ChaCha8Rng) -> Duration {
        let c = self.config.n_std;
        let z = standard_normal(rng).clamp(-c, c).abs();
        Duration((z * self.config.std.0 as f64).round() as u64)
    }

    /// When a packet of `flow` of `size` bytes that left the link at `s` is emitted, `j(n)`.
    pub fn release(&mut self, s: Time, flow: u32, size: u32, rng: &mut ChaCha8Rng) -> Time {
        let mut j = s + self.sample(rng);
        if self.config.model == PdvModel::NrRbpdv {
            let i = flow as usize;
            if self.last.len() <= i {
                self.last.resize(i + 1, None);
            }
            if let Some((prev, serial)) = self.last[i] {
                j = j.max(prev + serial);
            }
            let serial = self
                .config
                .serial_rate
                .map_or(Duration::ZERO, |r| r.transmit_time(size as u64));
            self.last[i] = Some((j, serial));
        }
        j
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_core::SeedableRng;

    /// erf by its Taylor series (converges everywhere; 60 terms are exact to f64 for |x| ≤ 3).
    fn erf(x: f64) -> f64 {
        let (mut term, mut sum) = (x, x);
        for n in 1..60 {
            term *= -x * x / n as f64;
            sum += term / (2 * n + 1) as f64;
        }
        sum * 2.0 / std::f64::consts::PI.sqrt()
    }

    fn phi(x: f64) -> f64 {
        (-x * x / 2.0).exp() / (2.0 * std::f64::consts::PI).sqrt()
    }

    fn cdf(x: f64) -> f64 {
        0.5 * (1.0 + erf(x / std::f64::consts::SQRT_2))
    }

    /// E[z]/std and E[z²]/std² of the clipped, folded Gaussian (module header).
    fn moments(c: f64) -> (f64, f64) {
        let tail = 1.0 - cdf(c);
        let m1 = 2.0 * phi(0.0) * (1.0 - (-c * c / 2.0).exp()) + 2.0 * c * tail;
        let m2 = (2.0 * cdf(c) - 1.0) - 2.0 * c * phi(c) + 2.0 * c * c * tail;
        (m1, m2)
    }

    fn config(model: PdvModel, serial_rate: Option<Rate>) -> PdvConfig {
        PdvConfig {
            model,
            std: DEFAULT_STD,
            n_std: DEFAULT_N_STD,
            serial_rate,
        }
    }

    #[test]
    fn samples_follow_the_clipped_folded_gaussian() {
        let pdv = Pdv::new(config(PdvModel::Rbpdv, None));
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let n = 200_000;
        let z: Vec<f64> = (0..n)
            .map(|_| pdv.sample(&mut rng).as_millis_f64())
            .collect();
        let (m1, m2) = moments(3.0);
        let std = 5.0;
        let (mean, sd) = (m1 * std, (m2 - m1 * m1).sqrt() * std);
        // 3.986 ms and 2.998 ms for std = 5 ms, N_STD = 3.
        assert!(
            (mean - 3.986).abs() < 0.001 && (sd - 2.998).abs() < 0.001,
            "{mean} {sd}"
        );
        let got_mean = z.iter().sum::<f64>() / n as f64;
        let got_sd = (z.iter().map(|x| (x - got_mean).powi(2)).sum::<f64>() / n as f64).sqrt();
        // The sample mean's standard error is sd/√n = 0.0067 ms: 5 of them is 0.034 ms.
        assert!(
            (got_mean - mean).abs() < 5.0 * sd / (n as f64).sqrt(),
            "mean {got_mean} vs {mean}"
        );
        // The sample sd's standard error is about sd/√(2n) (0.0048 ms); 5 of them, plus the
        // excess-kurtosis term (it is bounded, 2× covers it): 0.05 ms.
        assert!((got_sd - sd).abs() < 0.05, "sd {got_sd} vs {sd}");
        assert!(z.iter().all(|&x| (0.0..=15.0).contains(&x)), "bounded");
        // The clip puts 2(1 − Φ(3)) = 0.27 % at exactly 15 ms: expect 540 of 200 000, binomial
        // sd √(540) = 23; allow 5 sd.
        let at_bound = z.iter().filter(|&&x| x == 15.0).count() as f64;
        let expected = 2.0 * (1.0 - cdf(3.0)) * n as f64;
        assert!(
            (at_bound - expected).abs() < 5.0 * expected.sqrt(),
            "{at_bound} at the bound, expected {expected}"
        );
        // The median of |N(0, 1)| is Φ⁻¹(0.75) = 0.6745: 3.372 ms. Its sample's standard error
        // is √(p(1−p)/n)/f(median), f = 2φ(0.6745)/std = 0.1271 /ms: 0.0088 ms; 5 of them.
        let mut sorted = z.clone();
        sorted.sort_by(f64::total_cmp);
        let median = sorted[n / 2];
        assert!((median - 0.6745 * std).abs() < 0.045, "median {median}");
    }

    #[test]
    fn rbpdv_reorders_and_nr_rbpdv_never_does() {
        // 1000-byte packets every 1 ms: the 15 ms spread exceeds the spacing.
        let departures = |pdv: &mut Pdv| -> Vec<Time> {
            let mut rng = ChaCha8Rng::seed_from_u64(3);
            (0..5000)
                .map(|k| pdv.release(Time::from_millis(k), 0, 1000, &mut rng))
                .collect()
        };
        let free = departures(&mut Pdv::new(config(PdvModel::Rbpdv, None)));
        assert!(free.windows(2).any(|w| w[1] < w[0]), "RBPDV reorders");
        let rate = Rate(8e6); // 1000 B take 1 ms.
        let nr = departures(&mut Pdv::new(config(PdvModel::NrRbpdv, Some(rate))));
        assert!(
            nr.windows(2)
                .all(|w| w[1] >= w[0] + Duration::from_millis(1)),
            "NR-RBPDV: each packet at least serial(n−1) = 1 ms behind the one before"
        );
        for (k, (&a, &b)) in free.iter().zip(&nr).enumerate() {
            assert!(b >= a, "the rule only delays ({k})");
            assert!(a <= Time::from_millis(k as u64 + 15), "RBPDV bounded");
        }
    }

    #[test]
    fn the_no_reordering_rule_is_per_flow_and_the_same_seed_gives_the_same_delays() {
        let mut pdv = Pdv::new(config(PdvModel::NrRbpdv, Some(Rate(1e3))));
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        // At 1 kbit/s flow 0's 1000-byte packet takes 8 s to serialise, flow 1's 10-byte one
        // 80 ms: each flow's next packet waits for its own predecessor only.
        let a0 = pdv.release(Time::ZERO, 0, 1000, &mut rng);
        let b0 = pdv.release(Time::ZERO, 1, 10, &mut rng);
        let a1 = pdv.release(Time::from_millis(1), 0, 1000, &mut rng);
        let b1 = pdv.release(Time::from_millis(1), 1, 10, &mut rng);
        assert_eq!(a1, a0 + Duration::from_millis(8000));
        assert_eq!(b1, b0 + Duration::from_millis(80));
        let run = |seed| {
            let mut pdv = Pdv::new(config(PdvModel::Rbpdv, None));
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            (0..100)
                .map(|k| pdv.release(Time::from_millis(k), 0, 100, &mut rng))
                .collect::<Vec<_>>()
        };
        assert_eq!(run(9), run(9));
        assert_ne!(run(9), run(10));
    }
}
