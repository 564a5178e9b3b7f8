//! Queue configuration: what a scenario's `queue` field says, and how it becomes a queue.
//!
//! Two forms deserialize into [`QueueConfig`]:
//! - a string, a drop-tail limit as always: `"1000pkts"`, `"150KB"`, `"120ms"`, `"unlimited"`;
//! - a table with a `kind`, an optional `preset`, and any parameters to override:
//!
//! ```toml
//! queue = { kind = "codel", target = "5ms", interval = "100ms", limit = "1000pkts" }
//! queue = { kind = "pie", preset = "linux-3.16" }
//! queue = { kind = "sfq" }
//! queue = { kind = "fq_codel", target = "13ms" }
//! queue = { kind = "droptail", limit = "300ms" }
//! queue = { kind = "sfq", preset = "gcc-aqm" }        # Table 1 of the GCC × AQM paper
//! ```
//!
//! Every kind has the presets `linux` (the default: today's Linux defaults) and `gcc-aqm` (the
//! settings of Table 1 of Carlucci, De Cicco & Mascolo, "Controlling Queuing Delays for
//! Real-Time Communication: The Interplay of E2E and AQM Algorithms", 2016); PIE also has
//! `linux-3.16` (the kernel of that paper's testbed). Parameters given in the table override
//! the preset's. Some presets depend on the link's rate (a 300 ms buffer, CoDel's 13 ms target at
//! 1 Mbit/s), so they are resolved by [`QueueConfig::build`] / [`QueueConfig::resolve`], given the
//! link's nominal rate. Unknown kinds, presets and fields are rejected with the valid ones listed;
//! values that do not depend on the rate are checked when the configuration is read.
//!
//! | kind | fields |
//! |---|---|
//! | `droptail` | `limit`, `mark_threshold` (a limit-like step: ECN marking above it) |
//! | `codel` | `target`, `interval`, `limit`, `mtu`, `ecn` (true/false), `ce_threshold` |
//! | `pie` | `target`, `tupdate`, `burst`, `alpha`, `beta`, `limit`, `estimator` (`"timestamp"` or `"dq-rate"`), `mtu`, `ecn` |
//! | `sfq` | `limit` (packets, or a time converted to 1500-byte packets at the link rate), `depth`, `flows`, `divisor`, `quantum` |
//! | `fq_codel` | `target`, `interval`, `limit` (as for sfq), `flows`, `quantum`, `drop_batch`, `mtu`, `mtu_guard` (`"qdisc"` or `"flow"`), `ecn`, `ce_threshold` |
//!
//! ECN marking (`ecn`, `ce_threshold`, `mark_threshold`) is off unless written, in every preset:
//! only packets of flows with `ecn = true` can be marked (see `docs/queues.md`).
//!
//! `docs/queues.md` documents each discipline, its defaults and the presets.

use super::{
    Codel, CodelParams, DropTail, FqCodel, FqCodelParams, MtuGuard, NetPacket, Pie, PieEstimator,
    PieParams, Queue, QueueLimit, Sfq, SfqParams,
};
use crate::units::{Bytes, Duration, Rate};
use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use std::fmt;

/// The queue kinds, as written in a configuration.
pub const QUEUE_KINDS: [&str; 5] = ["droptail", "codel", "pie", "sfq", "fq_codel"];

/// Linux's default `txqueuelen`, the drop-tail default.
pub const DEFAULT_DROPTAIL_LIMIT: QueueLimit = QueueLimit::Packets(1000);

/// Named parameter sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Preset {
    /// Today's Linux defaults.
    #[default]
    Linux,
    /// Linux 3.16 (PIE only: its algorithm differs from today's).
    Linux316,
    /// Table 1 of the GCC × AQM paper.
    GccAqm,
}

impl Preset {
    pub fn name(self) -> &'static str {
        match self {
            Preset::Linux => "linux",
            Preset::Linux316 => "linux-3.16",
            Preset::GccAqm => "gcc-aqm",
        }
    }
}

/// Drop-tail configuration.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DropTailConfig {
    /// `linux`: 1000 packets; `gcc-aqm`: 300 ms at the link's nominal rate, in bytes.
    pub preset: Preset,
    pub limit: Option<QueueLimit>,
    /// Mark ECN-capable arrivals that take the queue past this (default: never).
    pub mark_threshold: Option<QueueLimit>,
}

/// CoDel configuration (unset fields come from the preset).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CodelConfig {
    pub preset: Preset,
    pub target: Option<Duration>,
    pub interval: Option<Duration>,
    pub limit: Option<QueueLimit>,
    pub mtu: Option<Bytes>,
    /// Mark instead of dropping ECN-capable packets (default false).
    pub ecn: Option<bool>,
    pub ce_threshold: Option<Duration>,
}

/// PIE configuration.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PieConfig {
    pub preset: Preset,
    pub target: Option<Duration>,
    pub tupdate: Option<Duration>,
    pub burst: Option<Duration>,
    pub alpha: Option<f64>,
    pub beta: Option<f64>,
    pub limit: Option<QueueLimit>,
    pub estimator: Option<PieEstimator>,
    pub mtu: Option<Bytes>,
    /// Mark instead of dropping ECN-capable packets while p ≤ 10 % (default false).
    pub ecn: Option<bool>,
}

/// SFQ configuration.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SfqConfig {
    pub preset: Preset,
    /// Packets, or a time converted to 1500-byte packets at the link's nominal rate.
    pub limit: Option<QueueLimit>,
    pub depth: Option<u32>,
    pub flows: Option<u32>,
    pub divisor: Option<u32>,
    pub quantum: Option<Bytes>,
}

/// fq_codel configuration.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FqCodelConfig {
    pub preset: Preset,
    pub target: Option<Duration>,
    pub interval: Option<Duration>,
    /// Packets, or a time converted to 1500-byte packets at the link's nominal rate.
    pub limit: Option<QueueLimit>,
    pub flows: Option<u32>,
    pub quantum: Option<Bytes>,
    pub drop_batch: Option<u32>,
    pub mtu: Option<Bytes>,
    pub mtu_guard: Option<MtuGuard>,
    /// Mark instead of dropping ECN-capable packets (default false; Linux's default is true).
    pub ecn: Option<bool>,
    pub ce_threshold: Option<Duration>,
}

/// A queue as configured: a kind, a preset and overrides.
#[derive(Debug, Clone, PartialEq)]
pub enum QueueConfig {
    DropTail(DropTailConfig),
    Codel(CodelConfig),
    Pie(PieConfig),
    Sfq(SfqConfig),
    FqCodel(FqCodelConfig),
}

impl Default for QueueConfig {
    /// Drop-tail, 1000 packets.
    fn default() -> Self {
        QueueConfig::DropTail(DropTailConfig::default())
    }
}

impl From<QueueLimit> for QueueConfig {
    fn from(limit: QueueLimit) -> Self {
        QueueConfig::DropTail(DropTailConfig {
            preset: Preset::Linux,
            limit: Some(limit),
            mark_threshold: None,
        })
    }
}

/// A configuration resolved for a link: every parameter known.
#[derive(Debug, Clone, PartialEq)]
pub enum QueueParams {
    DropTail {
        limit: QueueLimit,
        mark_threshold: Option<QueueLimit>,
    },
    Codel {
        codel: CodelParams,
        limit: QueueLimit,
    },
    Pie(PieParams),
    Sfq(SfqParams),
    FqCodel(FqCodelParams),
}

/// Bytes of the full-size packets a time limit is converted to for packet-limited kinds.
const FULL_PACKET: f64 = 1500.0;
/// Table 1's drop-tail and SFQ buffer: 300 ms at the link rate.
const GCC_AQM_BUFFER: Duration = Duration(300_000_000);
/// Below this rate, Table 1's CoDel target is 13 ms (the paper: "13 ms at 1 Mbps, 5 ms
/// otherwise"; its rates are 1, 2, 5, 10, 50 and 100 Mbit/s, and the midpoint of 1 and 2 keeps
/// a trace whose mean is near 1 Mbit/s on the 1 Mbit/s side).
const GCC_AQM_CODEL_13MS_BELOW: Rate = Rate(1.5e6);

fn check_rate(rate: Rate, what: &str) -> Result<(), String> {
    if rate.0 > 0.0 {
        Ok(())
    } else {
        Err(format!(
            "{what} depends on the link rate, which must be positive (got {} bit/s)",
            rate.0
        ))
    }
}

/// `d` of data at `rate`, in 1500-byte packets, rounded up, at least 1.
fn packets_in(rate: Rate, d: Duration, what: &str) -> Result<u32, String> {
    check_rate(rate, what)?;
    let n = (rate.bytes_in(d) / FULL_PACKET).ceil();
    Ok(n.clamp(1.0, u32::MAX as f64) as u32)
}

/// A limit for the kinds that count packets.
fn packet_limit(kind: &str, limit: QueueLimit, rate: Rate) -> Result<u32, String> {
    match limit {
        QueueLimit::Packets(n) if n >= 1 => Ok(n.min(u32::MAX as u64) as u32),
        QueueLimit::Packets(_) => Err(format!("{kind}: limit must be at least 1 packet")),
        QueueLimit::Time(d) if d.0 > 0 => packets_in(rate, d, &format!("{kind}: a limit in time")),
        QueueLimit::Time(_) => Err(format!("{kind}: limit must be positive")),
        QueueLimit::Bytes(_) | QueueLimit::Unlimited => Err(format!(
            "{kind}: limit counts packets: write packets (\"127pkts\") or a time (\"300ms\", \
             converted to 1500-byte packets at the link rate), not {limit}"
        )),
    }
}

/// A limit for the kinds that take any [`QueueLimit`].
fn any_limit(kind: &str, limit: QueueLimit) -> Result<QueueLimit, String> {
    match limit {
        QueueLimit::Packets(0) => Err(format!("{kind}: limit must be at least 1 packet")),
        QueueLimit::Bytes(0) | QueueLimit::Time(Duration(0)) => {
            Err(format!("{kind}: limit must be positive"))
        }
        l => Ok(l),
    }
}

fn mtu_of(kind: &str, mtu: Bytes) -> Result<u32, String> {
    u32::try_from(mtu.0).map_err(|_| format!("{kind}: mtu {mtu} is too large"))
}

fn quantum_of(kind: &str, q: Bytes) -> Result<u32, String> {
    u32::try_from(q.0).map_err(|_| format!("{kind}: quantum {q} is too large"))
}

impl QueueConfig {
    /// The kind, as written in a configuration.
    pub fn kind(&self) -> &'static str {
        match self {
            QueueConfig::DropTail(_) => "droptail",
            QueueConfig::Codel(_) => "codel",
            QueueConfig::Pie(_) => "pie",
            QueueConfig::Sfq(_) => "sfq",
            QueueConfig::FqCodel(_) => "fq_codel",
        }
    }

    /// The preset.
    pub fn preset(&self) -> Preset {
        match self {
            QueueConfig::DropTail(c) => c.preset,
            QueueConfig::Codel(c) => c.preset,
            QueueConfig::Pie(c) => c.preset,
            QueueConfig::Sfq(c) => c.preset,
            QueueConfig::FqCodel(c) => c.preset,
        }
    }

    /// Every parameter, for a link whose mean (or nominal) rate is `link_rate`.
    pub fn resolve(&self, link_rate: Rate) -> Result<QueueParams, String> {
        let kind = self.kind();
        let gcc = self.preset() == Preset::GccAqm;
        let what = format!("{kind}: the gcc-aqm preset");
        match self {
            QueueConfig::DropTail(c) => {
                let limit = match (c.limit, gcc) {
                    (Some(l), _) => l,
                    (None, true) => {
                        check_rate(link_rate, &what)?;
                        let b = link_rate.bytes_in(GCC_AQM_BUFFER).round();
                        QueueLimit::Bytes(b.min(u64::MAX as f64) as u64)
                    }
                    (None, false) => DEFAULT_DROPTAIL_LIMIT,
                };
                let mark_threshold = c
                    .mark_threshold
                    .map(|t| any_limit(&format!("{kind} mark_threshold"), t))
                    .transpose()?;
                Ok(QueueParams::DropTail {
                    limit,
                    mark_threshold,
                })
            }
            QueueConfig::Codel(c) => {
                let mut codel = CodelParams::default();
                if gcc {
                    check_rate(link_rate, &what)?;
                    if link_rate.0 < GCC_AQM_CODEL_13MS_BELOW.0 {
                        codel.target = Duration::from_millis(13);
                    }
                }
                codel.target = c.target.unwrap_or(codel.target);
                codel.interval = c.interval.unwrap_or(codel.interval);
                if let Some(m) = c.mtu {
                    codel.mtu = mtu_of(kind, m)?;
                }
                codel.ecn = c.ecn.unwrap_or(codel.ecn);
                codel.ce_threshold = c.ce_threshold.or(codel.ce_threshold);
                codel.validate().map_err(|e| format!("{kind}: {e}"))?;
                let limit = any_limit(kind, c.limit.unwrap_or(QueueLimit::Packets(1000)))?;
                Ok(QueueParams::Codel { codel, limit })
            }
            QueueConfig::Pie(c) => {
                let mut p = match c.preset {
                    Preset::Linux => PieParams::linux(),
                    // Table 1: target 20 ms, t_update 30 ms, 1000 packets, Linux (3.16) PIE.
                    Preset::Linux316 | Preset::GccAqm => PieParams::linux_3_16(),
                };
                p.target = c.target.unwrap_or(p.target);
                p.tupdate = c.tupdate.unwrap_or(p.tupdate);
                p.max_burst = c.burst.unwrap_or(p.max_burst);
                p.alpha = c.alpha.unwrap_or(p.alpha);
                p.beta = c.beta.unwrap_or(p.beta);
                p.estimator = c.estimator.unwrap_or(p.estimator);
                if let Some(l) = c.limit {
                    p.limit = any_limit(kind, l)?;
                }
                if let Some(m) = c.mtu {
                    p.mtu = mtu_of(kind, m)?;
                }
                p.ecn = c.ecn.unwrap_or(p.ecn);
                p.validate().map_err(|e| format!("{kind}: {e}"))?;
                Ok(QueueParams::Pie(p))
            }
            QueueConfig::Sfq(c) => {
                let mut p = SfqParams::linux();
                p.depth = c.depth.unwrap_or(p.depth);
                p.flows = c.flows.unwrap_or(p.flows);
                p.divisor = c.divisor.unwrap_or(p.divisor);
                if let Some(q) = c.quantum {
                    p.quantum = quantum_of(kind, q)?;
                }
                // The rules below (caps on flows and depth) are checked before the limit's.
                p.validate().map_err(|e| format!("{kind}: {e}"))?;
                p.flows = p.flows.min(p.divisor);
                let limit = match (c.limit, gcc) {
                    (Some(l), _) => Some(packet_limit(kind, l, link_rate)?),
                    (None, true) => Some(packets_in(link_rate, GCC_AQM_BUFFER, &what)?),
                    (None, false) => None,
                };
                if let Some(l) = limit {
                    p = p.with_limit(l);
                }
                p.validate().map_err(|e| format!("{kind}: {e}"))?;
                Ok(QueueParams::Sfq(p))
            }
            QueueConfig::FqCodel(c) => {
                let mut p = FqCodelParams::linux();
                if gcc {
                    p.codel.target = Duration::from_millis(13);
                }
                p.codel.target = c.target.unwrap_or(p.codel.target);
                p.codel.interval = c.interval.unwrap_or(p.codel.interval);
                if let Some(m) = c.mtu {
                    p.codel.mtu = mtu_of(kind, m)?;
                }
                if let Some(l) = c.limit {
                    p.limit = packet_limit(kind, l, link_rate)?;
                }
                p.flows = c.flows.unwrap_or(p.flows);
                if let Some(q) = c.quantum {
                    p.quantum = quantum_of(kind, q)?;
                }
                p.drop_batch = c.drop_batch.unwrap_or(p.drop_batch);
                p.mtu_guard = c.mtu_guard.unwrap_or(p.mtu_guard);
                p.codel.ecn = c.ecn.unwrap_or(p.codel.ecn);
                p.codel.ce_threshold = c.ce_threshold.or(p.codel.ce_threshold);
                p.validate().map_err(|e| format!("{kind}: {e}"))?;
                Ok(QueueParams::FqCodel(p))
            }
        }
    }

    /// Build the queue for a link whose mean (or nominal) rate is `link_rate`; `seed` drives
    /// the queue's randomness (PIE's drops, the flow hash of SFQ and fq_codel).
    pub fn build<P: NetPacket + Send + 'static>(
        &self,
        link_rate: Rate,
        seed: u64,
    ) -> Result<Box<dyn Queue<P>>, String> {
        let kind = self.kind();
        let prefix = |e: super::InvalidParam| format!("{kind}: {e}");
        Ok(match self.resolve(link_rate)? {
            QueueParams::DropTail {
                limit,
                mark_threshold,
            } => Box::new(DropTail::new(limit).with_mark_threshold(mark_threshold)),
            QueueParams::Codel { codel, limit } => Box::new(Codel::new(codel, limit)),
            QueueParams::Pie(p) => Box::new(Pie::new(p, seed).map_err(prefix)?),
            QueueParams::Sfq(p) => Box::new(Sfq::new(p, seed).map_err(prefix)?),
            QueueParams::FqCodel(p) => Box::new(FqCodel::new(p, seed).map_err(prefix)?),
        })
    }

    /// Check everything that does not depend on the link rate.
    pub fn validate(&self) -> Result<(), String> {
        self.resolve(Rate::from_mbps(1.0)).map(|_| ())
    }

    /// The fields a table of this kind accepts.
    pub fn fields(kind: &str) -> &'static [&'static str] {
        match kind {
            "droptail" => &["kind", "preset", "limit", "mark_threshold"],
            "codel" => &[
                "kind",
                "preset",
                "target",
                "interval",
                "limit",
                "mtu",
                "ecn",
                "ce_threshold",
            ],
            "pie" => &[
                "kind",
                "preset",
                "target",
                "tupdate",
                "burst",
                "alpha",
                "beta",
                "limit",
                "estimator",
                "mtu",
                "ecn",
            ],
            "sfq" => &[
                "kind", "preset", "limit", "depth", "flows", "divisor", "quantum",
            ],
            "fq_codel" => &[
                "kind",
                "preset",
                "target",
                "interval",
                "limit",
                "flows",
                "quantum",
                "drop_batch",
                "mtu",
                "mtu_guard",
                "ecn",
                "ce_threshold",
            ],
            _ => &[],
        }
    }

    /// The presets a kind accepts.
    pub fn presets(kind: &str) -> &'static [Preset] {
        match kind {
            "pie" => &[Preset::Linux, Preset::Linux316, Preset::GccAqm],
            _ => &[Preset::Linux, Preset::GccAqm],
        }
    }

    /// Read a table form: `(field, value)` pairs.
    fn from_table(entries: &[(String, Scalar)]) -> Result<QueueConfig, String> {
        let kinds = QUEUE_KINDS.join(", ");
        for (i, (k, _)) in entries.iter().enumerate() {
            if entries[..i].iter().any(|(j, _)| j == k) {
                return Err(format!("queue field {k:?} is given twice"));
            }
        }
        let kind = match entries.iter().find(|(k, _)| k == "kind") {
            None => {
                return Err(format!(
                    "a queue table needs a \"kind\": one of {kinds} (or write a drop-tail \
                     limit as a string, like \"100pkts\")"
                ))
            }
            Some((_, Scalar::Str(s))) => s.as_str(),
            Some((_, other)) => {
                return Err(format!(
                    "queue kind must be a string, one of {kinds}; found {}",
                    other.describe()
                ))
            }
        };
        let Some(&kind) = QUEUE_KINDS.iter().find(|&&k| k == kind) else {
            return Err(format!("unknown queue kind {kind:?}; valid kinds: {kinds}"));
        };
        let valid = QueueConfig::fields(kind);
        for (k, _) in entries {
            if !valid.contains(&k.as_str()) {
                return Err(format!(
                    "{kind} queue has no field {k:?}; valid fields: {}",
                    valid.join(", ")
                ));
            }
        }
        let f = Fields { kind, entries };
        let preset = f.preset()?;
        let config = match kind {
            "droptail" => QueueConfig::DropTail(DropTailConfig {
                preset,
                limit: f.limit()?,
                mark_threshold: f.limit_named("mark_threshold")?,
            }),
            "codel" => QueueConfig::Codel(CodelConfig {
                preset,
                target: f.duration("target")?,
                interval: f.duration("interval")?,
                limit: f.limit()?,
                mtu: f.bytes("mtu")?,
                ecn: f.boolean("ecn")?,
                ce_threshold: f.duration("ce_threshold")?,
            }),
            "pie" => QueueConfig::Pie(PieConfig {
                preset,
                target: f.duration("target")?,
                tupdate: f.duration("tupdate")?,
                burst: f.duration("burst")?,
                alpha: f.number("alpha")?,
                beta: f.number("beta")?,
                limit: f.limit()?,
                estimator: f.choice(
                    "estimator",
                    &[
                        ("timestamp", PieEstimator::Timestamp),
                        ("dq-rate", PieEstimator::DequeueRate),
                    ],
                )?,
                mtu: f.bytes("mtu")?,
                ecn: f.boolean("ecn")?,
            }),
            "sfq" => QueueConfig::Sfq(SfqConfig {
                preset,
                limit: f.limit()?,
                depth: f.count("depth", true)?,
                flows: f.count("flows", false)?,
                divisor: f.count("divisor", false)?,
                quantum: f.bytes("quantum")?,
            }),
            _ => QueueConfig::FqCodel(FqCodelConfig {
                preset,
                target: f.duration("target")?,
                interval: f.duration("interval")?,
                limit: f.limit()?,
                flows: f.count("flows", false)?,
                quantum: f.bytes("quantum")?,
                drop_batch: f.count("drop_batch", true)?,
                mtu: f.bytes("mtu")?,
                mtu_guard: f.choice(
                    "mtu_guard",
                    &[("qdisc", MtuGuard::Qdisc), ("flow", MtuGuard::Flow)],
                )?,
                ecn: f.boolean("ecn")?,
                ce_threshold: f.duration("ce_threshold")?,
            }),
        };
        config.validate()?;
        Ok(config)
    }
}

/// A table value, before it is read as a field.
#[derive(Debug, Clone, PartialEq)]
enum Scalar {
    Str(String),
    Int(i128),
    Float(f64),
    Bool(bool),
    Table,
    List,
    Null,
}

impl Scalar {
    fn describe(&self) -> String {
        match self {
            Scalar::Str(s) => format!("{s:?}"),
            Scalar::Int(i) => i.to_string(),
            Scalar::Float(f) => f.to_string(),
            Scalar::Bool(b) => b.to_string(),
            Scalar::Table => "a table".into(),
            Scalar::List => "a list".into(),
            Scalar::Null => "nothing".into(),
        }
    }
}

impl<'de> Deserialize<'de> for Scalar {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Scalar;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string or a number")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Scalar, E> {
                Ok(Scalar::Str(v.to_string()))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Scalar, E> {
                Ok(Scalar::Str(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Scalar, E> {
                Ok(Scalar::Int(v as i128))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Scalar, E> {
                Ok(Scalar::Int(v as i128))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Scalar, E> {
                Ok(Scalar::Float(v))
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<Scalar, E> {
                Ok(Scalar::Bool(v))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Scalar, E> {
                Ok(Scalar::Null)
            }
            fn visit_none<E: de::Error>(self) -> Result<Scalar, E> {
                Ok(Scalar::Null)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Scalar, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Scalar::Table)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Scalar, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Scalar::List)
            }
        }
        d.deserialize_any(V)
    }
}

/// The fields of one table, read with messages that name the kind and the field.
struct Fields<'a> {
    kind: &'static str,
    entries: &'a [(String, Scalar)],
}

impl Fields<'_> {
    fn get(&self, name: &str) -> Option<&Scalar> {
        self.entries.iter().find(|(k, _)| k == name).map(|(_, v)| v)
    }

    fn err(&self, name: &str, msg: impl fmt::Display) -> String {
        format!("{} {name}: {msg}", self.kind)
    }

    fn string(&self, name: &str, expected: &str) -> Result<Option<&str>, String> {
        match self.get(name) {
            None => Ok(None),
            Some(Scalar::Str(s)) => Ok(Some(s)),
            Some(v) => Err(self.err(name, format!("expected {expected}, found {}", v.describe()))),
        }
    }

    fn preset(&self) -> Result<Preset, String> {
        let valid = QueueConfig::presets(self.kind);
        let names: Vec<&str> = valid.iter().map(|p| p.name()).collect();
        let expected = format!("a preset name ({})", names.join(", "));
        match self.string("preset", &expected)? {
            None => Ok(Preset::Linux),
            Some(s) => valid
                .iter()
                .copied()
                .find(|p| p.name() == s)
                .ok_or_else(|| {
                    format!(
                        "{} preset {s:?} is unknown; valid presets: {}",
                        self.kind,
                        names.join(", ")
                    )
                }),
        }
    }

    fn duration(&self, name: &str) -> Result<Option<Duration>, String> {
        self.string(name, "a duration with a unit, like \"5ms\"")?
            .map(|s| Duration::parse(s).map_err(|e| self.err(name, e)))
            .transpose()
    }

    fn limit(&self) -> Result<Option<QueueLimit>, String> {
        self.limit_named("limit")
    }

    fn limit_named(&self, name: &str) -> Result<Option<QueueLimit>, String> {
        let expected = "a limit like \"1000pkts\", \"150KB\", \"300ms\" or \"unlimited\"";
        self.string(name, expected)?
            .map(|s| QueueLimit::parse(s).map_err(|e| self.err(name, e)))
            .transpose()
    }

    fn boolean(&self, name: &str) -> Result<Option<bool>, String> {
        match self.get(name) {
            None => Ok(None),
            Some(Scalar::Bool(b)) => Ok(Some(*b)),
            Some(v) => Err(self.err(
                name,
                format!("expected true or false, found {}", v.describe()),
            )),
        }
    }

    fn bytes(&self, name: &str) -> Result<Option<Bytes>, String> {
        self.string(name, "a size with a unit, like \"1514B\"")?
            .map(|s| Bytes::parse(s).map_err(|e| self.err(name, e)))
            .transpose()
    }

    /// A whole number ≥ 1 (for `packets`, also written `"127pkts"`).
    fn count(&self, name: &str, packets: bool) -> Result<Option<u32>, String> {
        let n = match self.get(name) {
            None => return Ok(None),
            Some(Scalar::Int(n)) => *n,
            Some(Scalar::Str(s)) if packets => match QueueLimit::parse(s) {
                Ok(QueueLimit::Packets(n)) => n as i128,
                _ => {
                    return Err(self.err(
                        name,
                        format!(
                        "expected a whole number of packets, like 64 or \"64pkts\", found {s:?}"
                    ),
                    ))
                }
            },
            Some(v) => {
                return Err(self.err(
                    name,
                    format!("expected a whole number, found {}", v.describe()),
                ))
            }
        };
        if n < 1 || n > u32::MAX as i128 {
            return Err(self.err(name, format!("must be between 1 and {}, not {n}", u32::MAX)));
        }
        Ok(Some(n as u32))
    }

    fn number(&self, name: &str) -> Result<Option<f64>, String> {
        match self.get(name) {
            None => Ok(None),
            Some(Scalar::Int(n)) => Ok(Some(*n as f64)),
            Some(Scalar::Float(x)) => Ok(Some(*x)),
            Some(v) => Err(self.err(name, format!("expected a number, found {}", v.describe()))),
        }
    }

    fn choice<T: Copy>(&self, name: &str, options: &[(&str, T)]) -> Result<Option<T>, String> {
        let names: Vec<&str> = options.iter().map(|o| o.0).collect();
        let expected = format!("one of {}", names.join(", "));
        match self.string(name, &expected)? {
            None => Ok(None),
            Some(s) => options
                .iter()
                .find(|o| o.0 == s)
                .map(|o| Some(o.1))
                .ok_or_else(|| self.err(name, format!("{s:?} is not {expected}"))),
        }
    }
}

impl<'de> Deserialize<'de> for QueueConfig {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = QueueConfig;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                write!(
                    f,
                    "a drop-tail limit (\"100pkts\", \"150KB\", \"120ms\", \"unlimited\") or a \
                     table with a kind ({})",
                    QUEUE_KINDS.join(", ")
                )
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<QueueConfig, E> {
                QueueLimit::parse(v)
                    .map(QueueConfig::from)
                    .map_err(E::custom)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<QueueConfig, A::Error> {
                let mut entries = Vec::new();
                while let Some(k) = map.next_key::<String>()? {
                    let v: Scalar = map.next_value()?;
                    entries.push((k, v));
                }
                QueueConfig::from_table(&entries).map_err(de::Error::custom)
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<QueueConfig, E> {
                Err(E::custom(format!(
                    "{v} has no unit: write a drop-tail limit like \"{v}pkts\", or a table \
                     with a kind ({})",
                    QUEUE_KINDS.join(", ")
                )))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<QueueConfig, E> {
                self.visit_i64(v as i64)
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<QueueConfig, E> {
                Err(E::custom(format!(
                    "{v} is not a queue: write a drop-tail limit like \"100pkts\", or a table \
                     with a kind ({})",
                    QUEUE_KINDS.join(", ")
                )))
            }
        }
        d.deserialize_any(V)
    }
}

impl fmt::Display for QueueConfig {
    /// The configuration as it would be written: a plain limit for a drop-tail with only a
    /// limit, otherwise an inline table.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let QueueConfig::DropTail(DropTailConfig {
            preset: Preset::Linux,
            limit: Some(l),
            mark_threshold: None,
        }) = self
        {
            return write!(f, "\"{l}\"");
        }
        let mut parts = vec![format!("kind = \"{}\"", self.kind())];
        if self.preset() != Preset::Linux {
            parts.push(format!("preset = \"{}\"", self.preset().name()));
        }
        let mut s = |k: &str, v: Option<String>| {
            if let Some(v) = v {
                parts.push(format!("{k} = {v}"));
            }
        };
        let q = |v: &dyn fmt::Display| format!("\"{v}\"");
        match self {
            QueueConfig::DropTail(c) => {
                s("limit", c.limit.map(|v| q(&v)));
                s("mark_threshold", c.mark_threshold.map(|v| q(&v)));
            }
            QueueConfig::Codel(c) => {
                s("target", c.target.map(|v| q(&v)));
                s("interval", c.interval.map(|v| q(&v)));
                s("limit", c.limit.map(|v| q(&v)));
                s("mtu", c.mtu.map(|v| q(&v)));
                s("ecn", c.ecn.map(|v| v.to_string()));
                s("ce_threshold", c.ce_threshold.map(|v| q(&v)));
            }
            QueueConfig::Pie(c) => {
                s("target", c.target.map(|v| q(&v)));
                s("tupdate", c.tupdate.map(|v| q(&v)));
                s("burst", c.burst.map(|v| q(&v)));
                s("alpha", c.alpha.map(|v| format!("{v:?}")));
                s("beta", c.beta.map(|v| format!("{v:?}")));
                s("limit", c.limit.map(|v| q(&v)));
                s(
                    "estimator",
                    c.estimator.map(|e| match e {
                        PieEstimator::Timestamp => "\"timestamp\"".into(),
                        PieEstimator::DequeueRate => "\"dq-rate\"".into(),
                    }),
                );
                s("mtu", c.mtu.map(|v| q(&v)));
                s("ecn", c.ecn.map(|v| v.to_string()));
            }
            QueueConfig::Sfq(c) => {
                s("limit", c.limit.map(|v| q(&v)));
                s("depth", c.depth.map(|v| v.to_string()));
                s("flows", c.flows.map(|v| v.to_string()));
                s("divisor", c.divisor.map(|v| v.to_string()));
                s("quantum", c.quantum.map(|v| q(&v)));
            }
            QueueConfig::FqCodel(c) => {
                s("target", c.target.map(|v| q(&v)));
                s("interval", c.interval.map(|v| q(&v)));
                s("limit", c.limit.map(|v| q(&v)));
                s("flows", c.flows.map(|v| v.to_string()));
                s("quantum", c.quantum.map(|v| q(&v)));
                s("drop_batch", c.drop_batch.map(|v| v.to_string()));
                s("mtu", c.mtu.map(|v| q(&v)));
                s(
                    "mtu_guard",
                    c.mtu_guard.map(|g| match g {
                        MtuGuard::Qdisc => "\"qdisc\"".into(),
                        MtuGuard::Flow => "\"flow\"".into(),
                    }),
                );
                s("ecn", c.ecn.map(|v| v.to_string()));
                s("ce_threshold", c.ce_threshold.map(|v| q(&v)));
            }
        }
        write!(f, "{{ {} }}", parts.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::Tp;
    use super::*;
    use crate::units::Time;

    #[derive(Debug, serde::Deserialize)]
    struct W {
        queue: QueueConfig,
    }

    fn toml(s: &str) -> Result<QueueConfig, String> {
        toml::from_str::<W>(&format!("queue = {s}"))
            .map(|w| w.queue)
            .map_err(|e| e.to_string())
    }

    fn json(s: &str) -> Result<QueueConfig, String> {
        serde_json::from_str::<QueueConfig>(s).map_err(|e| e.to_string())
    }

    fn err(s: &str) -> String {
        match toml(s) {
            Ok(c) => panic!("{s} parsed as {c:?}"),
            Err(e) => e,
        }
    }

    const MBPS: f64 = 1e6;

    #[test]
    fn strings_are_drop_tail_limits_as_before() {
        for (s, l) in [
            ("\"120ms\"", QueueLimit::Time(Duration::from_millis(120))),
            ("\"100pkts\"", QueueLimit::Packets(100)),
            ("\"150KB\"", QueueLimit::Bytes(150_000)),
            ("\"unlimited\"", QueueLimit::Unlimited),
        ] {
            let c = toml(s).unwrap();
            assert_eq!(c, QueueConfig::from(l));
            assert_eq!(
                c.resolve(Rate(MBPS)).unwrap(),
                QueueParams::DropTail {
                    limit: l,
                    mark_threshold: None
                }
            );
            assert_eq!(json(s).unwrap(), c);
        }
        assert!(err("\"120\"").contains("pkts"));
        let e = err("100");
        assert!(e.contains("\"100pkts\"") && e.contains("fq_codel"), "{e}");
        assert_eq!(
            QueueConfig::default().resolve(Rate(MBPS)).unwrap(),
            QueueParams::DropTail {
                limit: QueueLimit::Packets(1000),
                mark_threshold: None
            }
        );
    }

    #[test]
    fn every_kind_reads_from_a_table() {
        assert_eq!(
            toml(r#"{ kind = "codel", target = "5ms", interval = "100ms", limit = "1000pkts" }"#)
                .unwrap(),
            QueueConfig::Codel(CodelConfig {
                target: Some(Duration::from_millis(5)),
                interval: Some(Duration::from_millis(100)),
                limit: Some(QueueLimit::Packets(1000)),
                ..CodelConfig::default()
            })
        );
        assert_eq!(
            toml(r#"{ kind = "pie", preset = "linux-3.16" }"#).unwrap(),
            QueueConfig::Pie(PieConfig {
                preset: Preset::Linux316,
                ..PieConfig::default()
            })
        );
        assert_eq!(
            toml(r#"{ kind = "sfq" }"#).unwrap(),
            QueueConfig::Sfq(SfqConfig::default())
        );
        assert_eq!(
            toml(r#"{ kind = "fq_codel", target = "13ms" }"#).unwrap(),
            QueueConfig::FqCodel(FqCodelConfig {
                target: Some(Duration::from_millis(13)),
                ..FqCodelConfig::default()
            })
        );
        assert_eq!(
            toml(r#"{ kind = "droptail", limit = "300ms" }"#).unwrap(),
            QueueConfig::from(QueueLimit::Time(Duration::from_millis(300)))
        );
        // Every field of every kind, as TOML and as JSON (the simulator's path).
        let pie = toml(
            r#"{ kind = "pie", target = "10ms", tupdate = "20ms", burst = "0ms", alpha = 0.25,
                 beta = 2, limit = "200KB", estimator = "dq-rate", mtu = "1500B" }"#,
        )
        .unwrap();
        let QueueParams::Pie(p) = pie.resolve(Rate(MBPS)).unwrap() else {
            panic!()
        };
        assert_eq!(
            (p.target, p.tupdate, p.max_burst),
            (
                Duration::from_millis(10),
                Duration::from_millis(20),
                Duration::ZERO
            )
        );
        assert_eq!((p.alpha, p.beta, p.mtu), (0.25, 2.0, 1500));
        assert_eq!(
            (p.limit, p.estimator),
            (QueueLimit::Bytes(200_000), PieEstimator::DequeueRate)
        );
        // Everything else stays today's Linux.
        assert_eq!(p.scaling, PieParams::linux().scaling);
        let sfq = json(
            r#"{"kind": "sfq", "limit": "64pkts", "depth": "20pkts", "flows": 16, "divisor": 256,
                "quantum": "3000B"}"#,
        )
        .unwrap();
        assert_eq!(
            sfq.resolve(Rate(MBPS)).unwrap(),
            QueueParams::Sfq(SfqParams {
                limit: 64,
                depth: 20,
                flows: 16,
                divisor: 256,
                quantum: 3000
            })
        );
        let fq = json(
            r#"{"kind": "fq_codel", "target": "13ms", "interval": "150ms", "limit": "500pkts",
                "flows": 64, "quantum": "300B", "drop_batch": 8, "mtu": "1500B",
                "mtu_guard": "flow"}"#,
        )
        .unwrap();
        let QueueParams::FqCodel(p) = fq.resolve(Rate(MBPS)).unwrap() else {
            panic!()
        };
        assert_eq!(
            (p.codel.target, p.codel.interval, p.codel.mtu),
            (Duration::from_millis(13), Duration::from_millis(150), 1500)
        );
        assert_eq!(
            (p.limit, p.flows, p.quantum, p.drop_batch, p.mtu_guard),
            (500, 64, 300, 8, MtuGuard::Flow)
        );
        let codel = json(r#"{"kind": "codel", "mtu": "9000B", "limit": "unlimited"}"#).unwrap();
        assert_eq!(
            codel.resolve(Rate(MBPS)).unwrap(),
            QueueParams::Codel {
                codel: CodelParams {
                    mtu: 9000,
                    ..CodelParams::default()
                },
                limit: QueueLimit::Unlimited
            }
        );
    }

    #[test]
    fn errors_name_the_field_and_list_the_valid_ones() {
        let cases: &[(&str, &[&str])] = &[
            (
                r#"{ kind = "codl" }"#,
                &[
                    "unknown queue kind \"codl\"",
                    "valid kinds: droptail, codel, pie, sfq, fq_codel",
                ],
            ),
            (
                r#"{ target = "5ms" }"#,
                &["needs a \"kind\"", "droptail, codel, pie, sfq, fq_codel"],
            ),
            (r#"{ kind = 3 }"#, &["kind must be a string", "found 3"]),
            (
                r#"{ kind = "codel", targt = "5ms" }"#,
                &[
                    "codel queue has no field \"targt\"",
                    "valid fields: kind, preset, target, interval, limit, mtu",
                ],
            ),
            (
                r#"{ kind = "sfq", target = "5ms" }"#,
                &[
                    "sfq queue has no field \"target\"",
                    "depth, flows, divisor, quantum",
                ],
            ),
            (
                r#"{ kind = "codel", target = "5" }"#,
                &["codel target:", "invalid duration \"5\""],
            ),
            (
                r#"{ kind = "codel", target = 5 }"#,
                &["codel target: expected a duration", "found 5"],
            ),
            (
                r#"{ kind = "codel", target = { ms = 5 } }"#,
                &["codel target:", "found a table"],
            ),
            (
                r#"{ kind = "codel", interval = "0ms" }"#,
                &["codel: interval must be positive"],
            ),
            (
                r#"{ kind = "fq_codel", target = "0ms" }"#,
                &["fq_codel: target must be positive"],
            ),
            (
                r#"{ kind = "codel", limit = "0pkts" }"#,
                &["codel: limit must be at least 1 packet"],
            ),
            (
                r#"{ kind = "pie", preset = "linux-3.1" }"#,
                &[
                    "pie preset \"linux-3.1\" is unknown",
                    "valid presets: linux, linux-3.16, gcc-aqm",
                ],
            ),
            (
                r#"{ kind = "codel", preset = "linux-3.16" }"#,
                &["valid presets: linux, gcc-aqm"],
            ),
            (
                r#"{ kind = "pie", tupdate = "0s" }"#,
                &["pie: tupdate must be positive"],
            ),
            (
                r#"{ kind = "pie", alpha = "fast" }"#,
                &["pie alpha: expected a number"],
            ),
            (r#"{ kind = "pie", beta = -1 }"#, &["pie: beta must be"]),
            (
                r#"{ kind = "pie", estimator = "little" }"#,
                &["pie estimator:", "one of timestamp, dq-rate"],
            ),
            (
                r#"{ kind = "sfq", limit = "150KB" }"#,
                &["sfq: limit counts packets"],
            ),
            (
                r#"{ kind = "sfq", divisor = 1000 }"#,
                &["sfq: divisor must be a power of two"],
            ),
            (
                r#"{ kind = "sfq", depth = 0 }"#,
                &["sfq depth: must be between 1 and"],
            ),
            (
                r#"{ kind = "sfq", depth = 200 }"#,
                &["sfq: depth must be between 1 and 127"],
            ),
            (
                r#"{ kind = "sfq", flows = 1.5 }"#,
                &["sfq flows: expected a whole number, found 1.5"],
            ),
            (
                r#"{ kind = "fq_codel", quantum = "100B" }"#,
                &["fq_codel: quantum must be between 256 bytes and 1 MiB"],
            ),
            (
                r#"{ kind = "fq_codel", drop_batch = -1 }"#,
                &["fq_codel drop_batch: must be between 1 and"],
            ),
            (
                r#"{ kind = "fq_codel", mtu_guard = "both" }"#,
                &["fq_codel mtu_guard:", "one of qdisc, flow"],
            ),
            (
                r#"{ kind = "fq_codel", limit = "unlimited" }"#,
                &["fq_codel: limit counts packets"],
            ),
            (
                r#"{ kind = "droptail", limit = "lots" }"#,
                &["droptail limit:", "\"lots\""],
            ),
        ];
        for (input, needles) in cases {
            let e = err(input);
            for n in *needles {
                assert!(e.contains(n), "{input}: {e:?} lacks {n:?}");
            }
        }
        // JSON too, and duplicate keys.
        let e = json(r#"{"kind": "codel", "kind": "pie"}"#).unwrap_err();
        assert!(e.contains("given twice"), "{e}");
    }

    fn resolve(s: &str, mbps: f64) -> QueueParams {
        toml(s).unwrap().resolve(Rate(mbps * MBPS)).unwrap()
    }

    #[test]
    fn gcc_aqm_presets_resolve_per_link_rate() {
        // DropTail: 300 ms at the nominal rate, in bytes (a bfifo).
        let dt = r#"{ kind = "droptail", preset = "gcc-aqm" }"#;
        assert_eq!(
            resolve(dt, 1.0),
            QueueParams::DropTail {
                limit: QueueLimit::Bytes(37_500),
                mark_threshold: None
            }
        );
        assert_eq!(
            resolve(dt, 10.0),
            QueueParams::DropTail {
                limit: QueueLimit::Bytes(375_000),
                mark_threshold: None
            }
        );
        // CoDel: 13 ms at 1 Mbit/s, 5 ms otherwise; interval 100 ms; 1000 packets.
        let codel = r#"{ kind = "codel", preset = "gcc-aqm" }"#;
        for (mbps, target) in [(1.0, 13), (2.0, 5), (5.0, 5), (100.0, 5)] {
            assert_eq!(
                resolve(codel, mbps),
                QueueParams::Codel {
                    codel: CodelParams {
                        target: Duration::from_millis(target),
                        ..CodelParams::default()
                    },
                    limit: QueueLimit::Packets(1000)
                },
                "{mbps} Mbps"
            );
        }
        // Overrides win over the preset.
        let QueueParams::Codel { codel: c, .. } = resolve(
            r#"{ kind = "codel", preset = "gcc-aqm", target = "25ms" }"#,
            1.0,
        ) else {
            panic!()
        };
        assert_eq!(c.target, Duration::from_millis(25));
        // PIE: target 20 ms, t_update 30 ms, 1000 packets, the 3.16 algorithm.
        let QueueParams::Pie(p) = resolve(r#"{ kind = "pie", preset = "gcc-aqm" }"#, 1.0) else {
            panic!()
        };
        assert_eq!(p, PieParams::linux_3_16());
        assert_eq!(
            (p.target, p.tupdate, p.limit),
            (
                Duration::from_millis(20),
                Duration::from_millis(30),
                QueueLimit::Packets(1000)
            )
        );
        assert_eq!(p.estimator, PieEstimator::DequeueRate);
        assert_eq!(
            resolve(r#"{ kind = "pie" }"#, 1.0),
            QueueParams::Pie(PieParams::linux())
        );
        // SFQ: 300 ms as a packet limit (1500-byte packets, rounded up), Linux's other defaults,
        // and tc's rule flows = min(flows, limit).
        let sfq = r#"{ kind = "sfq", preset = "gcc-aqm" }"#;
        for (mbps, limit, flows) in [
            (1.0, 25, 25),
            (2.0, 50, 50),
            (10.0, 250, 128),
            (100.0, 2500, 128),
            (0.5, 13, 13),
        ] {
            assert_eq!(
                resolve(sfq, mbps),
                QueueParams::Sfq(SfqParams {
                    limit,
                    flows,
                    ..SfqParams::linux()
                }),
                "{mbps} Mbps"
            );
        }
        // The same with an explicit time limit.
        assert_eq!(
            resolve(r#"{ kind = "sfq", limit = "300ms" }"#, 2.0),
            resolve(sfq, 2.0)
        );
        // fq_codel: target 13 ms, interval 100 ms, 10 240 packets.
        let QueueParams::FqCodel(p) = resolve(r#"{ kind = "fq_codel", preset = "gcc-aqm" }"#, 1.0)
        else {
            panic!()
        };
        assert_eq!(
            p,
            FqCodelParams {
                codel: CodelParams {
                    target: Duration::from_millis(13),
                    ..CodelParams::default()
                },
                ..FqCodelParams::linux()
            }
        );
        assert_eq!(
            resolve(r#"{ kind = "fq_codel", preset = "gcc-aqm" }"#, 100.0),
            QueueParams::FqCodel(p)
        );
        // A rate-dependent preset needs a positive rate.
        for kind in ["droptail", "codel", "sfq"] {
            let c = toml(&format!("{{ kind = \"{kind}\", preset = \"gcc-aqm\" }}")).unwrap();
            let e = c.resolve(Rate(0.0)).unwrap_err();
            assert!(e.contains("link rate"), "{e}");
            assert!(c.resolve(Rate(f64::NAN)).is_err());
        }
        // An infinite rate saturates instead of failing.
        assert!(toml(sfq).unwrap().resolve(Rate(f64::INFINITY)).is_ok());
    }

    #[test]
    fn build_makes_working_queues() {
        for s in [
            "\"100pkts\"",
            r#"{ kind = "droptail", preset = "gcc-aqm" }"#,
            r#"{ kind = "codel" }"#,
            r#"{ kind = "codel", preset = "gcc-aqm" }"#,
            r#"{ kind = "pie" }"#,
            r#"{ kind = "pie", preset = "linux-3.16" }"#,
            r#"{ kind = "pie", preset = "gcc-aqm" }"#,
            r#"{ kind = "sfq" }"#,
            r#"{ kind = "sfq", preset = "gcc-aqm" }"#,
            r#"{ kind = "fq_codel" }"#,
            r#"{ kind = "fq_codel", preset = "gcc-aqm" }"#,
        ] {
            let c = toml(s).unwrap();
            let mut q = c.build::<Tp>(Rate(10.0 * MBPS), 7).unwrap();
            let p = Tp {
                id: 1,
                size: 1200,
                flow: 3,
                ecn: crate::packet::Ecn::Ect0,
            };
            q.enqueue(Time::ZERO, p, Rate(10.0 * MBPS)).unwrap();
            assert_eq!((q.len_packets(), q.len_bytes()), (1, 1200), "{s}");
            let mut d = Vec::new();
            assert_eq!(q.dequeue(Time(1_000_000), &mut d), Some(p), "{s}");
            assert!(q.is_empty() && d.is_empty());
        }
        let e = toml(r#"{ kind = "sfq", preset = "gcc-aqm" }"#)
            .unwrap()
            .build::<Tp>(Rate(0.0), 1)
            .err()
            .unwrap();
        assert!(e.contains("link rate"), "{e}");
    }

    #[test]
    fn display_writes_what_reads_back() {
        for s in [
            "\"100pkts\"",
            "\"unlimited\"",
            r#"{ kind = "droptail" }"#,
            r#"{ kind = "droptail", preset = "gcc-aqm" }"#,
            r#"{ kind = "codel", preset = "gcc-aqm", target = "20ms", interval = "150ms", limit = "300ms", mtu = "1500B" }"#,
            r#"{ kind = "pie", preset = "linux-3.16", target = "5ms", tupdate = "10ms", burst = "0ms", alpha = 0.5, beta = 2.0, limit = "100pkts", estimator = "timestamp", mtu = "9000B" }"#,
            r#"{ kind = "sfq", limit = "300ms", depth = 64, flows = 32, divisor = 512, quantum = "3028B" }"#,
            r#"{ kind = "fq_codel", preset = "gcc-aqm", limit = "1000pkts", flows = 16, quantum = "300B", drop_batch = 4, mtu_guard = "flow" }"#,
        ] {
            let c = toml(s).unwrap();
            let written = c.to_string();
            assert_eq!(toml(&written).unwrap(), c, "{s} → {written}");
        }
        assert_eq!(
            toml(r#"{ kind = "codel", target = "13ms" }"#)
                .unwrap()
                .to_string(),
            r#"{ kind = "codel", target = "13ms" }"#
        );
    }
}
