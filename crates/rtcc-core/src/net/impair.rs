//! Link impairments applied to packets as they leave a link: loss, delay jitter and aggregation.
//!
//! Applied in this order to each departing packet:
//! 1. **Loss**: independent (Bernoulli, probability `p`), or bursty with the Gilbert–Elliott
//!    two-state chain (the model behind netem's `loss gemodel p r 1-h 1-k`): in each packet the
//!    chain moves Good→Bad with probability `p` and Bad→Good with `r`, then the packet is lost
//!    with `loss_good` in Good and `loss_bad` in Bad. The mean burst length is `1/r` packets and
//!    the stationary loss rate `(p·loss_bad + r·loss_good)/(p + r)`.
//!    Or the same two states in *time* (`model = "gilbert-elliott-time"`, a fading channel):
//!    Good and Bad periods of exponentially distributed length with means `good` and `bad`
//!    (seconds, not packets), the stationary loss rate
//!    `(good·loss_good + bad·loss_bad)/(good + bad)`. Which to use: the per-packet chain models a
//!    loss process driven by the traffic (a queue's overflow pattern, netem's model); the timed
//!    one a channel that fades whatever is sent (radio, a flapping route). With the per-packet
//!    chain a sender that slows down stays inside a burst for as many *packets*, which can be
//!    seconds for a flow that backs off to a few packets a second; with the timed one a burst
//!    ends on time. Its periods come from a generator of their own, so every flow run over a
//!    seed meets the same fades, whatever it sends.
//!    Or independent losses whose probability changes in steps over time ([`LossModel::Steps`],
//!    an OpenNetLab trace's per-pattern `loss`): each packet is lost with the probability in
//!    force when it leaves the link, one uniform draw per packet as for `Random`.
//! 2. **Jitter**, one of:
//!    - *uniform, without reordering* (`jitter = "5ms"`): each packet gets an extra delay drawn
//!      uniformly from `[0, jitter)`, but never leaves before the packet ahead of it on the link
//!      (release = max(previous release, departure + extra)), as on a real link where one queue
//!      serves in order. (netem's jitter reorders unless rate-limited; this one never does.)
//!    - *RFC 8868's bounded PDV* ([`super::pdv`]): a clipped, folded Gaussian per packet, either
//!      free to reorder (RBPDV) or keeping each flow's order (NR-RBPDV).
//!    - *sub-millisecond* ([`super::sub_ms_jitter`]): uniform or truncated exponential below a
//!      bound of at most 1 ms, without reordering unless asked, so that a path's delay is not
//!      exact (what renews a minimum-RTT filter on equal samples).
//! 3. **Aggregation**: packets are released in batches at the ends of consecutive `interval`s
//!    (a packet released in `[k·T, (k+1)·T)` is delivered at `(k+1)·T`), as Wi-Fi block-acks and
//!    LTE transport blocks deliver bursts.
//!
//! All randomness comes from a seeded generator, so a run is reproducible.

use super::pdv::{Pdv, PdvConfig};
use super::steps::Steps;
use super::sub_ms_jitter::SubMsJitter;
use crate::units::{Duration, Time};
use rand_chacha::ChaCha8Rng;
use rand_core::{Rng, SeedableRng};
use serde::Deserialize;
use std::sync::Arc;

/// How packets are lost.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum LossModel {
    #[default]
    None,
    Random {
        p: f64,
    },
    GilbertElliott {
        p: f64,
        r: f64,
        loss_good: f64,
        loss_bad: f64,
    },
    /// The two states in time: mean Good and Bad period lengths.
    GilbertElliottTime {
        good: Duration,
        bad: Duration,
        loss_good: f64,
        loss_bad: f64,
    },
    /// Independent losses, the probability following a schedule (an OpenNetLab trace's).
    Steps(Arc<Steps<f64>>),
}

/// Extra delay per packet after the link.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Jitter {
    /// Uniform in `[0, d)`, never reordering across the link (`Duration::ZERO`: none).
    Uniform(Duration),
    /// RFC 8868 §4.5's bounded PDV ([`super::pdv`]).
    Pdv(PdvConfig),
    /// Below a millisecond, uniform or exponential ([`super::sub_ms_jitter`]).
    SubMs(SubMsJitter),
}

impl Default for Jitter {
    fn default() -> Self {
        Jitter::Uniform(Duration::ZERO)
    }
}

/// Impairments of one direction of a link.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ImpairmentConfig {
    pub loss: LossModel,
    pub jitter: Jitter,
    pub aggregation: Option<Duration>,
}

impl ImpairmentConfig {
    pub fn is_none(&self) -> bool {
        *self == ImpairmentConfig::default()
    }
}

/// `loss = 0.01`, `loss = { model = "gilbert-elliott", p = 0.01, r = 0.3 }` or
/// `loss = { model = "gilbert-elliott-time", good = "10s", bad = "200ms" }` in a scenario.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct LossTable {
    model: String,
    p: Option<f64>,
    r: Option<f64>,
    good: Option<String>,
    bad: Option<String>,
    loss_good: Option<f64>,
    loss_bad: Option<f64>,
}

const LOSS_MODELS: &str = "random, gilbert-elliott, gilbert-elliott-time";

impl LossModel {
    /// Read a scenario's `loss` value (a probability, or a table); errors say what is allowed.
    pub fn from_value(v: &serde_json::Value) -> Result<LossModel, String> {
        let prob = |name: &str, x: f64| {
            if (0.0..=1.0).contains(&x) {
                Ok(x)
            } else {
                Err(format!(
                    "{name} must be a probability between 0 and 1, got {x}"
                ))
            }
        };
        if let Some(p) = v.as_f64() {
            return Ok(LossModel::Random {
                p: prob("loss", p)?,
            });
        }
        let t: LossTable = serde_json::from_value(v.clone()).map_err(|e| {
            format!("{e}; write a probability (loss = 0.01) or a table {{ model = \"random\" | \"gilbert-elliott\" (p, r) | \"gilbert-elliott-time\" (good, bad), loss_good, loss_bad }}")
        })?;
        let p = || {
            t.p.ok_or_else(|| format!("the {} model needs p", t.model))
                .and_then(|p| prob("p", p))
        };
        // Each model's own fields, and no other's (a field of another model would be ignored).
        let fields: &[&str] = match t.model.as_str() {
            "random" => &["p"],
            "gilbert-elliott" => &["p", "r", "loss_good", "loss_bad"],
            "gilbert-elliott-time" => &["good", "bad", "loss_good", "loss_bad"],
            _ => &[],
        };
        let given = [
            ("p", t.p.is_some()),
            ("r", t.r.is_some()),
            ("good", t.good.is_some()),
            ("bad", t.bad.is_some()),
            ("loss_good", t.loss_good.is_some()),
            ("loss_bad", t.loss_bad.is_some()),
        ];
        if !fields.is_empty() {
            if let Some((name, _)) = given.iter().find(|(n, set)| *set && !fields.contains(n)) {
                return Err(format!(
                    "the {} model takes {}, not {name}",
                    t.model,
                    fields.join(", ")
                ));
            }
        }
        let loss_good = prob("loss_good", t.loss_good.unwrap_or(0.0))?;
        let loss_bad = prob("loss_bad", t.loss_bad.unwrap_or(1.0))?;
        match t.model.as_str() {
            "random" => Ok(LossModel::Random { p: p()? }),
            "gilbert-elliott" => {
                let r =
                    t.r.ok_or("the gilbert-elliott model needs r (the Bad→Good probability)")?;
                if r <= 0.0 {
                    return Err("r must be > 0 (otherwise a burst never ends)".into());
                }
                Ok(LossModel::GilbertElliott {
                    p: p()?,
                    r: prob("r", r)?,
                    loss_good,
                    loss_bad,
                })
            }
            "gilbert-elliott-time" => {
                let period = |name: &str, v: &Option<String>| -> Result<Duration, String> {
                    let text = v.as_deref().ok_or_else(|| {
                        format!("the gilbert-elliott-time model needs {name} (its mean period, e.g. \"1s\")")
                    })?;
                    let d = Duration::parse(text).map_err(|e| format!("{name}: {e}"))?;
                    // Judgment call: at least 1 ms. Shorter periods flip the state more often
                    // than packets leave a fast link and are a per-packet model in disguise.
                    if d < Duration::from_millis(1) {
                        return Err(format!("{name} must be at least 1ms, got {text:?}"));
                    }
                    Ok(d)
                };
                Ok(LossModel::GilbertElliottTime {
                    good: period("good", &t.good)?,
                    bad: period("bad", &t.bad)?,
                    loss_good,
                    loss_bad,
                })
            }
            other => Err(format!(
                "unknown loss model {other:?}; valid models: {LOSS_MODELS}"
            )),
        }
    }
}

pub struct Impairments {
    config: ImpairmentConfig,
    pdv: Option<Pdv>,
    rng: ChaCha8Rng,
    bad_state: bool,
    last_release: Time,
    /// The timed model's periods: their own generator (the fades do not depend on the traffic)
    /// and when the current period ends.
    fading: ChaCha8Rng,
    state_until: Time,
}

/// Seed offset of the timed loss model's generator.
const FADING_STREAM: u64 = 0x6661_6469_6e67; // "fading"

/// A uniform draw in [0, 1) from 53 random bits.
pub(super) fn uniform(rng: &mut ChaCha8Rng) -> f64 {
    (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
}

impl Impairments {
    pub fn new(config: ImpairmentConfig, seed: u64) -> Impairments {
        Impairments {
            pdv: match config.jitter {
                Jitter::Pdv(p) => Some(Pdv::new(p)),
                Jitter::Uniform(_) | Jitter::SubMs(_) => None,
            },
            config,
            rng: ChaCha8Rng::seed_from_u64(seed),
            bad_state: false,
            last_release: Time::ZERO,
            fading: ChaCha8Rng::seed_from_u64(seed ^ FADING_STREAM),
            state_until: Time::ZERO,
        }
    }

    /// The timed model's state at `t`: periods are drawn in order up to `t` (exponential, with
    /// the mean of the state they belong to), the first a Good one starting at 0.
    fn fading_state(&mut self, t: Time, good: Duration, bad: Duration) -> bool {
        while t >= self.state_until {
            if self.state_until > Time::ZERO || self.bad_state {
                self.bad_state = !self.bad_state;
            }
            let mean = if self.bad_state { bad } else { good };
            // Inverse transform of 1 − U, U in [0, 1): never ln 0.
            let length = -(1.0 - uniform(&mut self.fading)).ln() * mean.0 as f64;
            self.state_until += Duration((length.round() as u64).max(1));
        }
        self.bad_state
    }

    pub fn config(&self) -> &ImpairmentConfig {
        &self.config
    }

    /// A packet of `flow` of `size` bytes left the link at `t`: when it is released (`None` if
    /// it is lost).
    pub fn on_departure(&mut self, t: Time, flow: u32, size: u32) -> Option<Time> {
        let lost = match self.config.loss {
            LossModel::None => false,
            LossModel::Random { p } => uniform(&mut self.rng) < p,
            LossModel::Steps(ref steps) => uniform(&mut self.rng) < steps.at(t),
            LossModel::GilbertElliott {
                p,
                r,
                loss_good,
                loss_bad,
            } => {
                let flip = uniform(&mut self.rng) < if self.bad_state { r } else { p };
                self.bad_state ^= flip;
                uniform(&mut self.rng) < if self.bad_state { loss_bad } else { loss_good }
            }
            LossModel::GilbertElliottTime {
                good,
                bad,
                loss_good,
                loss_bad,
            } => {
                let bad_now = self.fading_state(t, good, bad);
                uniform(&mut self.rng) < if bad_now { loss_bad } else { loss_good }
            }
        };
        if lost {
            return None;
        }
        let mut release = t;
        match &mut self.pdv {
            Some(pdv) => release = pdv.release(t, flow, size, &mut self.rng),
            None => {
                // Whether this jitter keeps packets in order (RFC 8868's has its own state above).
                let in_order = match self.config.jitter {
                    Jitter::Uniform(j) => {
                        if j.0 > 0 {
                            release += Duration(self.rng.next_u64() % j.0);
                        }
                        true
                    }
                    Jitter::SubMs(j) => {
                        release += j.draw(&mut self.rng);
                        !j.reorder
                    }
                    Jitter::Pdv(_) => true,
                };
                if in_order {
                    release = release.max(self.last_release);
                    self.last_release = release;
                }
            }
        }
        // Batching is monotone, so it keeps whatever order the jitter left.
        if let Some(iv) = self.config.aggregation.filter(|d| d.0 > 0) {
            release = Time((release.0 / iv.0 + 1) * iv.0);
        }
        Some(release)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(cfg: ImpairmentConfig, n: u64) -> Vec<Option<Time>> {
        let mut imp = Impairments::new(cfg, 5);
        (0..n)
            .map(|i| imp.on_departure(Time::from_millis(i), 0, 1000))
            .collect()
    }

    #[test]
    fn random_loss_has_its_rate() {
        let cfg = ImpairmentConfig {
            loss: LossModel::Random { p: 0.1 },
            ..Default::default()
        };
        let lost = run(cfg, 100_000).iter().filter(|r| r.is_none()).count();
        assert!((lost as f64 / 1e5 - 0.1).abs() < 0.005, "{lost}");
    }

    #[test]
    fn stepped_loss_follows_its_schedule() {
        // 0 for the first 50 s, 20 % for the next 50 s (one packet per ms).
        let steps = Steps::new(vec![(Time::ZERO, 0.0), (Time::from_millis(50_000), 0.2)]).unwrap();
        let cfg = ImpairmentConfig {
            loss: LossModel::Steps(Arc::new(steps)),
            ..Default::default()
        };
        let out = run(cfg.clone(), 100_000);
        assert!(out[..50_000].iter().all(|r| r.is_some()), "no loss at 0");
        let lost = out[50_000..].iter().filter(|r| r.is_none()).count() as f64 / 5e4;
        // Binomial, n = 50,000, p = 0.2: σ = 0.0018; 5σ.
        assert!((lost - 0.2).abs() < 0.009, "{lost}");
        assert_eq!(out, run(cfg, 100_000), "same seed, same losses");
    }

    #[test]
    fn gilbert_elliott_losses_come_in_bursts_of_mean_one_over_r() {
        let loss = LossModel::GilbertElliott {
            p: 0.01,
            r: 0.25,
            loss_good: 0.0,
            loss_bad: 1.0,
        };
        let out = run(
            ImpairmentConfig {
                loss,
                ..Default::default()
            },
            200_000,
        );
        let lost = out.iter().filter(|r| r.is_none()).count() as f64;
        // Stationary loss p/(p + r) = 0.01/0.26 = 3.85 %.
        assert!(
            (lost / 2e5 - 0.0385).abs() < 0.004,
            "loss rate {}",
            lost / 2e5
        );
        let bursts = out
            .windows(2)
            .filter(|w| w[0].is_some() && w[1].is_none())
            .count() as f64;
        let mean_burst = lost / bursts;
        assert!(
            (mean_burst - 4.0).abs() < 0.3,
            "mean burst {mean_burst}, expected 1/r = 4"
        );
    }

    #[test]
    fn timed_bursts_last_their_mean_in_seconds_whatever_the_packet_rate() {
        // Good 2 s and Bad 0.5 s on average: 20 % of the time Bad, and every packet in a Bad
        // period lost. A sender at 1000 packets/s and one at 10 packets/s meet the same fades:
        // the same loss rate and bursts of the same length in seconds (0.5 s = 500 or 5 packets).
        let loss = LossModel::GilbertElliottTime {
            good: Duration::from_millis(2000),
            bad: Duration::from_millis(500),
            loss_good: 0.0,
            loss_bad: 1.0,
        };
        let cfg = ImpairmentConfig {
            loss,
            ..Default::default()
        };
        let fates = |gap_ms: u64, n: u64| -> Vec<(u64, bool)> {
            let mut imp = Impairments::new(cfg.clone(), 5);
            (0..n)
                .map(|i| {
                    let t = Time::from_millis(i * gap_ms);
                    (i * gap_ms, imp.on_departure(t, 0, 1000).is_none())
                })
                .collect()
        };
        let busy = fates(1, 2_000_000); // 2000 s at 1000 packets/s
        let sparse = fates(100, 20_000); // the same 2000 s at 10 packets/s
        for (name, out) in [("busy", &busy), ("sparse", &sparse)] {
            let lost = out.iter().filter(|x| x.1).count() as f64 / out.len() as f64;
            assert!((lost - 0.2).abs() < 0.02, "{name}: loss rate {lost}");
        }
        // The sparse sender's fates are the busy one's at the same instants.
        let at: std::collections::HashMap<u64, bool> = busy.iter().copied().collect();
        assert!(
            sparse.iter().all(|(t, l)| at[t] == *l),
            "one channel for every sender"
        );
        // Mean Bad period in seconds, from the busy sender's runs of losses.
        let runs = busy.windows(2).filter(|w| !w[0].1 && w[1].1).count() as f64;
        let lost_ms = busy.iter().filter(|x| x.1).count() as f64;
        let mean_ms = lost_ms / runs;
        assert!(
            (mean_ms - 500.0).abs() < 50.0,
            "mean Bad period {mean_ms} ms"
        );
    }

    #[test]
    fn jitter_never_reorders_and_aggregation_batches() {
        let cfg = ImpairmentConfig {
            jitter: Jitter::Uniform(Duration::from_millis(20)),
            ..Default::default()
        };
        let out: Vec<Time> = run(cfg, 1000).into_iter().map(|r| r.unwrap()).collect();
        assert!(
            out.windows(2).all(|w| w[0] <= w[1]),
            "release order = departure order"
        );
        assert!(out
            .iter()
            .enumerate()
            .all(|(i, t)| *t >= Time::from_millis(i as u64)));
        let cfg = ImpairmentConfig {
            aggregation: Some(Duration::from_millis(10)),
            ..Default::default()
        };
        let out: Vec<u64> = run(cfg, 25)
            .into_iter()
            .map(|r| r.unwrap().0 / 1_000_000)
            .collect();
        assert_eq!(
            &out[..12],
            &[10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 20, 20]
        );
    }

    #[test]
    fn loss_values_are_checked() {
        assert!(LossModel::from_value(&serde_json::json!(1.5)).is_err());
        let e =
            LossModel::from_value(&serde_json::json!({"model": "burst", "p": 0.1})).unwrap_err();
        assert!(e.contains("gilbert-elliott-time"), "{e}");
        let timed = LossModel::from_value(
            &serde_json::json!({"model": "gilbert-elliott-time", "good": "10s", "bad": "200ms"}),
        )
        .unwrap();
        assert_eq!(
            timed,
            LossModel::GilbertElliottTime {
                good: Duration::from_millis(10_000),
                bad: Duration::from_millis(200),
                loss_good: 0.0,
                loss_bad: 1.0
            }
        );
        for (bad, what) in [
            (
                serde_json::json!({"model": "gilbert-elliott-time", "good": "1s"}),
                "needs bad",
            ),
            (
                serde_json::json!({"model": "gilbert-elliott-time", "good": "1s", "bad": "1us"}),
                "at least 1ms",
            ),
            (
                serde_json::json!({"model": "gilbert-elliott-time", "p": 0.1, "good": "1s", "bad": "1s"}),
                "not p",
            ),
            (
                serde_json::json!({"model": "gilbert-elliott", "r": 0.5}),
                "needs p",
            ),
            (
                serde_json::json!({"model": "gilbert-elliott", "p": 0.1, "r": 0.5, "bad": "1s"}),
                "not bad",
            ),
            (
                serde_json::json!({"model": "random", "p": 0.1, "r": 0.5}),
                "not r",
            ),
        ] {
            let e = LossModel::from_value(&bad).unwrap_err();
            assert!(e.contains(what), "{bad}: {e}");
        }
        let ge = LossModel::from_value(
            &serde_json::json!({"model": "gilbert-elliott", "p": 0.1, "r": 0.5}),
        )
        .unwrap();
        assert_eq!(
            ge,
            LossModel::GilbertElliott {
                p: 0.1,
                r: 0.5,
                loss_good: 0.0,
                loss_bad: 1.0
            }
        );
    }
}
