//! Sub-millisecond path jitter: a small random extra delay per packet, as every real path has
//! (interrupt coalescing, NIC and switch queues, scheduler wake-ups), bounded below a
//! millisecond and by default never reordering.
//!
//! Why it exists. rtcc's path delay is exact: with an empty queue every packet's RTT is the same
//! number of nanoseconds. Controllers that keep a windowed *minimum* RTT and renew it on an
//! equal sample then never see it expire. BBRv2 (Google's v2alpha `tcp_bbr2.c`) enters
//! PROBE_RTT when no RTT sample has been at or below `probe_rtt_min_us` for 5 s, and an exact
//! path renews that minimum with every round trip that starts from an empty queue, so PROBE_RTT
//! never runs; on a real path the minimum is an outlier of the jitter's lower tail and is only
//! matched by chance, so PROBE_RTT comes every 5 s as its authors designed. (BBR v1 needs a
//! *strictly* lower sample and expires its 10 s filter on an exact path too.) A jitter well
//! below a millisecond restores that without moving anything a controller reads at the
//! millisecond scale (`docs/bbr_dash.md`, negative controls).
//!
//! The model (`jitter = { model = "sub-ms", ... }` on a link, `docs/scenarios.md`): each packet
//! leaving the link gets an extra delay `X`, drawn
//! - `dist = "uniform"`: uniformly from `[0, max)`;
//! - `dist = "exponential"`: from an exponential distribution of mean `mean` truncated to
//!   `[0, max)` (by inversion, `X = −mean · ln(1 − U·(1 − e^(−max/mean)))`, so there is no
//!   atom at the bound), the shape of measured host and switch delay noise: mostly near zero,
//!   a thin tail.
//!
//! `max` is at most 1 ms. With `reorder = false` (the default) a packet never leaves before the
//! one that left the link ahead of it (release = max(previous release, departure + X)), as on a
//! path where one FIFO serves everything; `reorder = true` releases each packet at departure +
//! X, and packets closer together than the jitter may swap (netem's jitter does that unless it
//! is rate-limited, `tc-netem(8)`).
//!
//! Randomness comes from the link's seeded impairment generator: the same seed gives the same
//! delays.

use crate::units::Duration;
use rand_chacha::ChaCha8Rng;

/// The largest `max` the model accepts.
pub const SUB_MS_JITTER_BOUND: Duration = Duration(1_000_000);

/// The distribution of the extra delay.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SubMsDist {
    Uniform,
    Exponential { mean: Duration },
}

/// Sub-millisecond jitter settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SubMsJitter {
    pub dist: SubMsDist,
    /// Every extra delay is below this (≤ 1 ms).
    pub max: Duration,
    /// Let packets overtake one another (default: never).
    pub reorder: bool,
}

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Table {
    model: String,
    dist: Option<String>,
    max: Option<String>,
    mean: Option<String>,
    reorder: Option<bool>,
}

impl SubMsJitter {
    /// Read `{ model = "sub-ms", dist = "uniform" | "exponential", max, mean, reorder }`.
    /// Errors are `(field, message)`; the field is empty for the table itself.
    pub fn from_value(v: &serde_json::Value) -> Result<SubMsJitter, (String, String)> {
        let t: Table = serde_json::from_value(v.clone()).map_err(|e| {
            (
                String::new(),
                format!("{e}; the sub-ms model takes dist, max, mean (exponential) and reorder"),
            )
        })?;
        if t.model != "sub-ms" {
            return Err((
                "model".into(),
                format!("expected \"sub-ms\", got {:?}", t.model),
            ));
        }
        let duration =
            |name: &str, text: &Option<String>| -> Result<Option<Duration>, (String, String)> {
                text.as_deref()
                    .map(|s| Duration::parse(s).map_err(|e| (name.to_string(), e.to_string())))
                    .transpose()
            };
        let max = duration("max", &t.max)?.ok_or_else(|| {
            (
                "max".to_string(),
                "the sub-ms model needs max, the bound of every extra delay (e.g. \"500us\")"
                    .to_string(),
            )
        })?;
        if max.0 == 0 || max > SUB_MS_JITTER_BOUND {
            return Err((
                "max".into(),
                format!(
                    "must be above 0 and at most 1ms, got {max}; for larger jitter use \
                     jitter = \"5ms\" or an RFC 8868 model"
                ),
            ));
        }
        let mean = duration("mean", &t.mean)?;
        let dist = match (t.dist.as_deref().unwrap_or("uniform"), mean) {
            ("uniform", None) => SubMsDist::Uniform,
            ("uniform", Some(_)) => {
                return Err((
                    "mean".into(),
                    "the uniform distribution has no mean to set (it is max / 2); use dist = \
                     \"exponential\" for a mean of your own"
                        .into(),
                ))
            }
            ("exponential", None) => {
                return Err((
                    "mean".into(),
                    "the exponential distribution needs mean (e.g. \"100us\")".into(),
                ))
            }
            ("exponential", Some(m)) => {
                if m.0 == 0 || m >= max {
                    return Err((
                        "mean".into(),
                        format!("must be above 0 and below max ({max}), got {m}"),
                    ));
                }
                SubMsDist::Exponential { mean: m }
            }
            (other, _) => {
                return Err((
                    "dist".into(),
                    format!("unknown distribution {other:?}; valid: uniform, exponential"),
                ))
            }
        };
        Ok(SubMsJitter {
            dist,
            max,
            reorder: t.reorder.unwrap_or(false),
        })
    }

    /// One extra delay, in `[0, max)`.
    pub fn draw(&self, rng: &mut ChaCha8Rng) -> Duration {
        let u = super::impair::uniform(rng);
        let x = match self.dist {
            SubMsDist::Uniform => u * self.max.0 as f64,
            SubMsDist::Exponential { mean } => {
                let m = mean.0 as f64;
                let tail = (-(self.max.0 as f64) / m).exp();
                -m * (1.0 - u * (1.0 - tail)).ln()
            }
        };
        // Rounding may reach max itself; keep the bound strict.
        Duration((x as u64).min(self.max.0 - 1))
    }
}

#[cfg(test)]
mod tests {
    use super::super::impair::{ImpairmentConfig, Impairments, Jitter};
    use super::*;
    use crate::units::Time;
    use rand_core::SeedableRng;

    fn exp(mean_us: u64, max_us: u64) -> SubMsJitter {
        SubMsJitter {
            dist: SubMsDist::Exponential {
                mean: Duration::from_micros(mean_us),
            },
            max: Duration::from_micros(max_us),
            reorder: false,
        }
    }

    #[test]
    fn every_draw_is_below_the_bound_and_the_exponential_has_its_truncated_mean() {
        let j = exp(100, 500);
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let n = 200_000;
        let draws: Vec<u64> = (0..n).map(|_| j.draw(&mut rng).0).collect();
        assert!(draws.iter().all(|&d| d < 500_000));
        // Mean of an exponential (mean m) truncated at b: m − b·e^(−b/m)/(1 − e^(−b/m)).
        let (m, b) = (100_000.0f64, 500_000.0f64);
        let expected = m - b * (-b / m).exp() / (1.0 - (-b / m).exp());
        let mean = draws.iter().sum::<u64>() as f64 / n as f64;
        // Standard error ≈ 100 µs / √200000 ≈ 0.22 µs; allow 5σ.
        assert!((mean - expected).abs() < 1_200.0, "{mean} vs {expected}");
        let uni = SubMsJitter {
            dist: SubMsDist::Uniform,
            max: Duration::from_micros(800),
            reorder: false,
        };
        let draws: Vec<u64> = (0..n).map(|_| uni.draw(&mut rng).0).collect();
        assert!(draws.iter().all(|&d| d < 800_000));
        let mean = draws.iter().sum::<u64>() as f64 / n as f64;
        assert!((mean - 400_000.0).abs() < 3_000.0, "{mean}");
    }

    fn releases(j: SubMsJitter, seed: u64, gap_ns: u64) -> Vec<Time> {
        let mut imp = Impairments::new(
            ImpairmentConfig {
                jitter: Jitter::SubMs(j),
                ..Default::default()
            },
            seed,
        );
        (0..5_000)
            .map(|i| imp.on_departure(Time(i * gap_ns), 0, 1500).unwrap())
            .collect()
    }

    #[test]
    fn without_reorder_packets_keep_their_order_and_with_it_they_may_swap() {
        // 10 µs apart, jitter up to 500 µs: without the rule many would overtake.
        let keep = releases(exp(100, 500), 7, 10_000);
        assert!(keep.windows(2).all(|w| w[0] <= w[1]));
        for (i, r) in keep.iter().enumerate() {
            let sent = i as u64 * 10_000;
            // Held at least to its own draw, never more than the bound past the latest
            // departure ahead of it plus its own.
            assert!(
                r.0 >= sent && r.0 < sent + 500_000,
                "packet {i} released at {r:?}"
            );
        }
        let free = releases(
            SubMsJitter {
                reorder: true,
                ..exp(100, 500)
            },
            7,
            10_000,
        );
        assert!(
            free.windows(2).any(|w| w[0] > w[1]),
            "reorder = true never reordered"
        );
    }

    #[test]
    fn the_same_seed_gives_the_same_delays_and_another_seed_others() {
        let a = releases(exp(100, 500), 11, 1_000_000);
        assert_eq!(a, releases(exp(100, 500), 11, 1_000_000));
        assert_ne!(a, releases(exp(100, 500), 12, 1_000_000));
        // 1 ms apart and under 500 µs of jitter: each packet's extra delay is its own draw.
        assert!(a
            .iter()
            .enumerate()
            .all(|(i, r)| r.0 - i as u64 * 1_000_000 < 500_000));
    }

    #[test]
    fn bad_tables_are_named_errors() {
        let err = |v: serde_json::Value| SubMsJitter::from_value(&v).unwrap_err();
        use serde_json::json;
        assert_eq!(err(json!({"model": "sub-ms"})).0, "max");
        assert_eq!(err(json!({"model": "sub-ms", "max": "2ms"})).0, "max");
        assert_eq!(err(json!({"model": "sub-ms", "max": "0us"})).0, "max");
        assert_eq!(
            err(json!({"model": "sub-ms", "max": "500us", "dist": "exponential"})).0,
            "mean"
        );
        assert_eq!(
            err(json!({"model": "sub-ms", "max": "500us", "dist": "exponential", "mean": "600us"}))
                .0,
            "mean"
        );
        assert_eq!(
            err(json!({"model": "sub-ms", "max": "500us", "mean": "100us"})).0,
            "mean"
        );
        assert_eq!(
            err(json!({"model": "sub-ms", "max": "500us", "dist": "normal"})).0,
            "dist"
        );
        assert_eq!(
            err(json!({"model": "sub-ms", "max": "500us", "sigma": 1})).0,
            ""
        );
        let ok = SubMsJitter::from_value(
            &json!({"model": "sub-ms", "dist": "exponential", "mean": "100us", "max": "900us", "reorder": true}),
        )
        .unwrap();
        assert_eq!(
            ok,
            SubMsJitter {
                reorder: true,
                ..exp(100, 900)
            }
        );
    }
}
