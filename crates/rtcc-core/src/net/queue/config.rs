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
//! queue = { kind = "dualpi2" }                         # L4S: RFC 9332 with Linux's defaults
//! ```
//!
//! Every kind has the presets `linux` (the default: today's Linux defaults) and `gcc-aqm` (the
//! settings of Table 1 of Carlucci, De Cicco & Mascolo, "Controlling Queuing Delays for
//! Real-Time Communication: The Interplay of E2E and AQM Algorithms", 2016); PIE also has
//! `linux-3.16` (the kernel of that paper's testbed); DualPI2, newer than that paper, has only
//! `linux`. Parameters given in the table override
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
//! | `dualpi2` | `target`, `tupdate`, `alpha`, `beta`, `step_thresh` (a sojourn like `"1ms"` or a length like `"5pkts"`), `min_qlen_step`, `coupling`, `drop_overload`, `c_protection` (percent), `limit`, `mtu` |
//!
//! ECN marking (`ecn`, `ce_threshold`, `mark_threshold`) is off unless written, in every preset:
//! only packets of flows with `ecn = true` (or `"l4s"`) can be marked (see `docs/queues.md`).
//! DualPI2 always marks: it is an ECN AQM by design.
//!
//! `docs/queues.md` documents each discipline, its defaults and the presets.
//!
//! # How a table is read
//!
//! Each kind's fields are declared by its configuration struct ([`CodelConfig`], ...), which
//! derives `Deserialize`: a field names the reader of its value (a duration, a limit, a size, a
//! count, a number, a flag), and PIE's `estimator` and fq_codel's `mtu_guard` are enums. What
//! comes before the struct is dispatched by hand, because serde's own messages for it would be
//! vague ("data did not match any variant"): the value's shape (a string is a drop-tail limit, a
//! table has a `kind`), fields given twice, and the kind. The table then goes to its kind's
//! struct through a deserializer that rejects the fields the struct does not declare, checks the
//! preset against the kind (PIE has one more), and hands over the values in the order the struct
//! declares them. Errors are [`QueueConfigError`]s: they name the kind, the field, what it takes
//! and what was found, like `codel target: expected a duration with a unit, like "5ms", found 5`.
//! (A kind's struct read alone, outside a [`QueueConfig`], has neither the preset check nor
//! [`QueueConfig::validate`].)

use super::{
    Codel, CodelParams, DropTail, DualPi2, DualPi2Params, FqCodel, FqCodelParams, InvalidParam,
    MtuGuard, NetPacket, Pie, PieEstimator, PieParams, Queue, QueueLimit, Sfq, SfqParams,
    StepThreshold,
};
use crate::units::{Bytes, Duration, Rate};
use serde::de::{
    self, DeserializeSeed, Deserializer, IgnoredAny, IntoDeserializer, MapAccess, SeqAccess,
    Unexpected, Visitor,
};
use serde::Deserialize;
use std::fmt;

/// The queue kinds, as written in a configuration.
pub const QUEUE_KINDS: [&str; 6] = ["droptail", "codel", "pie", "sfq", "fq_codel", "dualpi2"];

/// Linux's default `txqueuelen`, the drop-tail default.
pub const DEFAULT_DROPTAIL_LIMIT: QueueLimit = QueueLimit::Packets(1000);

/// Named parameter sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
pub enum Preset {
    /// Today's Linux defaults.
    #[default]
    #[serde(rename = "linux")]
    Linux,
    /// Linux 3.16 (PIE only: its algorithm differs from today's).
    #[serde(rename = "linux-3.16")]
    Linux316,
    /// Table 1 of the GCC × AQM paper.
    #[serde(rename = "gcc-aqm")]
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
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DropTailConfig {
    /// `linux`: 1000 packets; `gcc-aqm`: 300 ms at the link's nominal rate, in bytes.
    pub preset: Preset,
    #[serde(deserialize_with = "limit")]
    pub limit: Option<QueueLimit>,
    /// Mark ECN-capable arrivals that take the queue past this (default: never).
    #[serde(deserialize_with = "limit")]
    pub mark_threshold: Option<QueueLimit>,
}

/// CoDel configuration (unset fields come from the preset).
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CodelConfig {
    pub preset: Preset,
    #[serde(deserialize_with = "duration")]
    pub target: Option<Duration>,
    #[serde(deserialize_with = "duration")]
    pub interval: Option<Duration>,
    #[serde(deserialize_with = "limit")]
    pub limit: Option<QueueLimit>,
    #[serde(deserialize_with = "size")]
    pub mtu: Option<Bytes>,
    /// Mark instead of dropping ECN-capable packets (default false).
    #[serde(deserialize_with = "flag")]
    pub ecn: Option<bool>,
    #[serde(deserialize_with = "duration")]
    pub ce_threshold: Option<Duration>,
}

/// PIE configuration.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PieConfig {
    pub preset: Preset,
    #[serde(deserialize_with = "duration")]
    pub target: Option<Duration>,
    #[serde(deserialize_with = "duration")]
    pub tupdate: Option<Duration>,
    #[serde(deserialize_with = "duration")]
    pub burst: Option<Duration>,
    #[serde(deserialize_with = "number")]
    pub alpha: Option<f64>,
    #[serde(deserialize_with = "number")]
    pub beta: Option<f64>,
    #[serde(deserialize_with = "limit")]
    pub limit: Option<QueueLimit>,
    pub estimator: Option<PieEstimator>,
    #[serde(deserialize_with = "size")]
    pub mtu: Option<Bytes>,
    /// Mark instead of dropping ECN-capable packets while p ≤ 10 % (default false).
    #[serde(deserialize_with = "flag")]
    pub ecn: Option<bool>,
}

/// SFQ configuration.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SfqConfig {
    pub preset: Preset,
    /// Packets, or a time converted to 1500-byte packets at the link's nominal rate.
    #[serde(deserialize_with = "limit")]
    pub limit: Option<QueueLimit>,
    #[serde(deserialize_with = "packets")]
    pub depth: Option<u32>,
    #[serde(deserialize_with = "count")]
    pub flows: Option<u32>,
    #[serde(deserialize_with = "count")]
    pub divisor: Option<u32>,
    #[serde(deserialize_with = "size")]
    pub quantum: Option<Bytes>,
}

/// fq_codel configuration.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FqCodelConfig {
    pub preset: Preset,
    #[serde(deserialize_with = "duration")]
    pub target: Option<Duration>,
    #[serde(deserialize_with = "duration")]
    pub interval: Option<Duration>,
    /// Packets, or a time converted to 1500-byte packets at the link's nominal rate.
    #[serde(deserialize_with = "limit")]
    pub limit: Option<QueueLimit>,
    #[serde(deserialize_with = "count")]
    pub flows: Option<u32>,
    #[serde(deserialize_with = "size")]
    pub quantum: Option<Bytes>,
    #[serde(deserialize_with = "packets")]
    pub drop_batch: Option<u32>,
    #[serde(deserialize_with = "size")]
    pub mtu: Option<Bytes>,
    pub mtu_guard: Option<MtuGuard>,
    /// Mark instead of dropping ECN-capable packets (default false; Linux's default is true).
    #[serde(deserialize_with = "flag")]
    pub ecn: Option<bool>,
    #[serde(deserialize_with = "duration")]
    pub ce_threshold: Option<Duration>,
}

/// DualPI2 configuration (RFC 9332, Linux `sch_dualpi2`).
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DualPi2Config {
    pub preset: Preset,
    #[serde(deserialize_with = "duration")]
    pub target: Option<Duration>,
    #[serde(deserialize_with = "duration")]
    pub tupdate: Option<Duration>,
    #[serde(deserialize_with = "number")]
    pub alpha: Option<f64>,
    #[serde(deserialize_with = "number")]
    pub beta: Option<f64>,
    /// The L queue's step: a sojourn (`"1ms"`) or a length (`"5pkts"`).
    #[serde(deserialize_with = "limit")]
    pub step_thresh: Option<QueueLimit>,
    /// Step-mark only packets that found at least this many packets in the L queue.
    #[serde(deserialize_with = "number")]
    pub min_qlen_step: Option<f64>,
    #[serde(deserialize_with = "number")]
    pub coupling: Option<f64>,
    #[serde(deserialize_with = "flag")]
    pub drop_overload: Option<bool>,
    /// The classic queue's weight in the round robin, percent.
    #[serde(deserialize_with = "number")]
    pub c_protection: Option<f64>,
    #[serde(deserialize_with = "limit")]
    pub limit: Option<QueueLimit>,
    #[serde(deserialize_with = "size")]
    pub mtu: Option<Bytes>,
}

/// A queue as configured: a kind, a preset and overrides.
#[derive(Debug, Clone, PartialEq)]
pub enum QueueConfig {
    DropTail(DropTailConfig),
    Codel(CodelConfig),
    Pie(PieConfig),
    Sfq(SfqConfig),
    FqCodel(FqCodelConfig),
    DualPi2(DualPi2Config),
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
    DualPi2(DualPi2Params),
}

/// What is wrong with a queue configuration, as read or as resolved for a link.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum QueueConfigError {
    #[error("queue field {0:?} is given twice")]
    DuplicateField(String),
    #[error(
        "a queue table needs a \"kind\": one of {kinds} (or write a drop-tail limit as a string, \
         like \"100pkts\")",
        kinds = QUEUE_KINDS.join(", ")
    )]
    MissingKind,
    /// The `kind` is not a string; `.0` is what was found.
    #[error("queue kind must be a string, one of {kinds}; found {0}", kinds = QUEUE_KINDS.join(", "))]
    KindNotAString(String),
    #[error("unknown queue kind {0:?}; valid kinds: {kinds}", kinds = QUEUE_KINDS.join(", "))]
    UnknownKind(String),
    /// A field the kind's configuration does not declare; `valid` are those it does.
    #[error("{kind} queue has no field {field:?}; valid fields: kind, {fields}", fields = .valid.join(", "))]
    UnknownField {
        kind: &'static str,
        field: String,
        valid: &'static [&'static str],
    },
    #[error("{kind} preset {name:?} is unknown; valid presets: {names}", names = preset_names(kind))]
    UnknownPreset { kind: &'static str, name: String },
    /// A field's value is not what the field takes.
    #[error("{kind} {field}: {reason}")]
    Field {
        kind: &'static str,
        field: String,
        reason: String,
    },
    /// A bare integer where a queue was expected (a wrapped `u64` above `i64::MAX`).
    #[error(
        "{0} has no unit: write a drop-tail limit like \"{0}pkts\", or a table with a kind ({kinds})",
        kinds = QUEUE_KINDS.join(", ")
    )]
    NoUnit(i64),
    #[error(
        "{0} is not a queue: write a drop-tail limit like \"100pkts\", or a table with a kind \
         ({kinds})",
        kinds = QUEUE_KINDS.join(", ")
    )]
    NotAQueue(f64),
    /// Any other message serde gives while reading a table into its kind's struct.
    #[error("{0}")]
    Other(String),
    /// A parameter that depends on the link rate (`what`: the gcc-aqm preset, a limit in time),
    /// at a rate that is not positive.
    #[error("{kind}: {what} depends on the link rate, which must be positive (got {rate} bit/s)")]
    NeedsLinkRate {
        kind: &'static str,
        what: &'static str,
        rate: f64,
    },
    /// A limit (`field`: `limit`, or drop-tail's `mark_threshold`) of 0 packets.
    #[error("{}: limit must be at least 1 packet", place(kind, field))]
    NoPacket {
        kind: &'static str,
        field: &'static str,
    },
    /// A limit of 0 bytes or 0 s.
    #[error("{}: limit must be positive", place(kind, field))]
    EmptyLimit {
        kind: &'static str,
        field: &'static str,
    },
    /// Bytes or `unlimited` for a kind that counts packets.
    #[error(
        "{kind}: limit counts packets: write packets (\"127pkts\") or a time (\"300ms\", \
         converted to 1500-byte packets at the link rate), not {limit}"
    )]
    NotPackets {
        kind: &'static str,
        limit: QueueLimit,
    },
    /// A size (`mtu`, `quantum`) that does not fit the kernel's 32 bits.
    #[error("{kind}: {field} {value} is too large")]
    TooLarge {
        kind: &'static str,
        field: &'static str,
        value: Bytes,
    },
    /// The resolved parameters are out of the discipline's range.
    #[error("{kind}: {source}")]
    Param {
        kind: &'static str,
        source: InvalidParam,
    },
}

impl de::Error for QueueConfigError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        QueueConfigError::Other(msg.to_string())
    }
}

/// Where a limit's problem is: the kind for its `limit`, `droptail mark_threshold` for another.
fn place(kind: &str, field: &str) -> String {
    if field == "limit" {
        kind.to_string()
    } else {
        format!("{kind} {field}")
    }
}

/// The presets a kind takes, as a list for messages.
fn preset_names(kind: &str) -> String {
    let names: Vec<&str> = QueueConfig::presets(kind)
        .iter()
        .map(|p| p.name())
        .collect();
    names.join(", ")
}

/// Bytes of the full-size packets a time limit is converted to for packet-limited kinds.
const FULL_PACKET: f64 = 1500.0;
/// Table 1's drop-tail and SFQ buffer: 300 ms at the link rate.
const GCC_AQM_BUFFER: Duration = Duration(300_000_000);
/// Below this rate, Table 1's CoDel target is 13 ms (the paper: "13 ms at 1 Mbps, 5 ms
/// otherwise"; its rates are 1, 2, 5, 10, 50 and 100 Mbit/s, and the midpoint of 1 and 2 keeps
/// a trace whose mean is near 1 Mbit/s on the 1 Mbit/s side).
const GCC_AQM_CODEL_13MS_BELOW: Rate = Rate(1.5e6);
/// What of a `gcc-aqm` configuration depends on the link rate.
const GCC_AQM: &str = "the gcc-aqm preset";

fn check_rate(rate: Rate, kind: &'static str, what: &'static str) -> Result<(), QueueConfigError> {
    if rate.0 > 0.0 {
        Ok(())
    } else {
        Err(QueueConfigError::NeedsLinkRate {
            kind,
            what,
            rate: rate.0,
        })
    }
}

/// `d` of data at `rate`, in 1500-byte packets, rounded up, at least 1.
fn packets_in(
    rate: Rate,
    d: Duration,
    kind: &'static str,
    what: &'static str,
) -> Result<u32, QueueConfigError> {
    check_rate(rate, kind, what)?;
    let n = (rate.bytes_in(d) / FULL_PACKET).ceil();
    Ok(n.clamp(1.0, u32::MAX as f64) as u32)
}

/// A limit for the kinds that count packets.
fn packet_limit(
    kind: &'static str,
    limit: QueueLimit,
    rate: Rate,
) -> Result<u32, QueueConfigError> {
    let field = "limit";
    match limit {
        QueueLimit::Packets(n) if n >= 1 => Ok(n.min(u32::MAX as u64) as u32),
        QueueLimit::Packets(_) => Err(QueueConfigError::NoPacket { kind, field }),
        QueueLimit::Time(d) if d.0 > 0 => packets_in(rate, d, kind, "a limit in time"),
        QueueLimit::Time(_) => Err(QueueConfigError::EmptyLimit { kind, field }),
        QueueLimit::Bytes(_) | QueueLimit::Unlimited => {
            Err(QueueConfigError::NotPackets { kind, limit })
        }
    }
}

/// A limit (`field`) for the kinds that take any [`QueueLimit`].
fn any_limit(
    kind: &'static str,
    field: &'static str,
    limit: QueueLimit,
) -> Result<QueueLimit, QueueConfigError> {
    match limit {
        QueueLimit::Packets(0) => Err(QueueConfigError::NoPacket { kind, field }),
        QueueLimit::Bytes(0) | QueueLimit::Time(Duration(0)) => {
            Err(QueueConfigError::EmptyLimit { kind, field })
        }
        l => Ok(l),
    }
}

/// A size the kernel keeps in 32 bits (`mtu`, `quantum`).
fn u32_bytes(
    kind: &'static str,
    field: &'static str,
    value: Bytes,
) -> Result<u32, QueueConfigError> {
    u32::try_from(value.0).map_err(|_| QueueConfigError::TooLarge { kind, field, value })
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
            QueueConfig::DualPi2(_) => "dualpi2",
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
            QueueConfig::DualPi2(c) => c.preset,
        }
    }

    /// Every parameter, for a link whose mean (or nominal) rate is `link_rate`; the error is
    /// [`QueueConfig::params`]'s, as its message.
    pub fn resolve(&self, link_rate: Rate) -> Result<QueueParams, String> {
        self.params(link_rate).map_err(|e| e.to_string())
    }

    /// Every parameter, for a link whose mean (or nominal) rate is `link_rate`.
    pub fn params(&self, link_rate: Rate) -> Result<QueueParams, QueueConfigError> {
        let kind = self.kind();
        let gcc = self.preset() == Preset::GccAqm;
        let invalid = |source| QueueConfigError::Param { kind, source };
        match self {
            QueueConfig::DropTail(c) => {
                let limit = match (c.limit, gcc) {
                    (Some(l), _) => l,
                    (None, true) => {
                        check_rate(link_rate, kind, GCC_AQM)?;
                        let b = link_rate.bytes_in(GCC_AQM_BUFFER).round();
                        QueueLimit::Bytes(b.min(u64::MAX as f64) as u64)
                    }
                    (None, false) => DEFAULT_DROPTAIL_LIMIT,
                };
                let mark_threshold = c
                    .mark_threshold
                    .map(|t| any_limit(kind, "mark_threshold", t))
                    .transpose()?;
                Ok(QueueParams::DropTail {
                    limit,
                    mark_threshold,
                })
            }
            QueueConfig::Codel(c) => {
                let mut codel = CodelParams::default();
                if gcc {
                    check_rate(link_rate, kind, GCC_AQM)?;
                    if link_rate.0 < GCC_AQM_CODEL_13MS_BELOW.0 {
                        codel.target = Duration::from_millis(13);
                    }
                }
                codel.target = c.target.unwrap_or(codel.target);
                codel.interval = c.interval.unwrap_or(codel.interval);
                if let Some(m) = c.mtu {
                    codel.mtu = u32_bytes(kind, "mtu", m)?;
                }
                codel.ecn = c.ecn.unwrap_or(codel.ecn);
                codel.ce_threshold = c.ce_threshold.or(codel.ce_threshold);
                codel.validate().map_err(invalid)?;
                let limit = any_limit(kind, "limit", c.limit.unwrap_or(QueueLimit::Packets(1000)))?;
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
                    p.limit = any_limit(kind, "limit", l)?;
                }
                if let Some(m) = c.mtu {
                    p.mtu = u32_bytes(kind, "mtu", m)?;
                }
                p.ecn = c.ecn.unwrap_or(p.ecn);
                p.validate().map_err(invalid)?;
                Ok(QueueParams::Pie(p))
            }
            QueueConfig::Sfq(c) => {
                let mut p = SfqParams::linux();
                p.depth = c.depth.unwrap_or(p.depth);
                p.flows = c.flows.unwrap_or(p.flows);
                p.divisor = c.divisor.unwrap_or(p.divisor);
                if let Some(q) = c.quantum {
                    p.quantum = u32_bytes(kind, "quantum", q)?;
                }
                // The rules below (caps on flows and depth) are checked before the limit's.
                p.validate().map_err(invalid)?;
                p.flows = p.flows.min(p.divisor);
                let limit = match (c.limit, gcc) {
                    (Some(l), _) => Some(packet_limit(kind, l, link_rate)?),
                    (None, true) => Some(packets_in(link_rate, GCC_AQM_BUFFER, kind, GCC_AQM)?),
                    (None, false) => None,
                };
                if let Some(l) = limit {
                    p = p.with_limit(l);
                }
                p.validate().map_err(invalid)?;
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
                    p.codel.mtu = u32_bytes(kind, "mtu", m)?;
                }
                if let Some(l) = c.limit {
                    p.limit = packet_limit(kind, l, link_rate)?;
                }
                p.flows = c.flows.unwrap_or(p.flows);
                if let Some(q) = c.quantum {
                    p.quantum = u32_bytes(kind, "quantum", q)?;
                }
                p.drop_batch = c.drop_batch.unwrap_or(p.drop_batch);
                p.mtu_guard = c.mtu_guard.unwrap_or(p.mtu_guard);
                p.codel.ecn = c.ecn.unwrap_or(p.codel.ecn);
                p.codel.ce_threshold = c.ce_threshold.or(p.codel.ce_threshold);
                p.validate().map_err(invalid)?;
                Ok(QueueParams::FqCodel(p))
            }
            QueueConfig::DualPi2(c) => {
                let mut p = DualPi2Params::linux();
                p.target = c.target.unwrap_or(p.target);
                p.tupdate = c.tupdate.unwrap_or(p.tupdate);
                p.alpha = c.alpha.unwrap_or(p.alpha);
                p.beta = c.beta.unwrap_or(p.beta);
                p.step = match c.step_thresh {
                    None => p.step,
                    Some(QueueLimit::Time(d)) => StepThreshold::Sojourn(d),
                    Some(QueueLimit::Packets(n)) => {
                        StepThreshold::Packets(n.min(u32::MAX as u64) as u32)
                    }
                    Some(other) => {
                        return Err(QueueConfigError::Field {
                            kind,
                            field: "step_thresh".into(),
                            reason: format!(
                                "expected a sojourn time (\"1ms\") or a number of packets \
                                 (\"5pkts\"), not {other}"
                            ),
                        })
                    }
                };
                if let Some(n) = c.min_qlen_step {
                    if !(0.0..=u32::MAX as f64).contains(&n) || n.fract() != 0.0 {
                        return Err(QueueConfigError::Field {
                            kind,
                            field: "min_qlen_step".into(),
                            reason: format!(
                                "expected a whole number of packets, 0 or more, not {n}"
                            ),
                        });
                    }
                    p.min_qlen_step = n as u32;
                }
                p.coupling = c.coupling.unwrap_or(p.coupling);
                p.drop_overload = c.drop_overload.unwrap_or(p.drop_overload);
                if let Some(w) = c.c_protection {
                    if !(0.0..=100.0).contains(&w) || w.fract() != 0.0 {
                        return Err(QueueConfigError::Field {
                            kind,
                            field: "c_protection".into(),
                            reason: format!("expected a whole percentage from 0 to 100, not {w}"),
                        });
                    }
                    p.c_protection = w as u8;
                }
                if let Some(l) = c.limit {
                    p.limit = any_limit(kind, "limit", l)?;
                }
                if let Some(m) = c.mtu {
                    p.mtu = u32_bytes(kind, "mtu", m)?;
                }
                p.validate().map_err(invalid)?;
                Ok(QueueParams::DualPi2(p))
            }
        }
    }

    /// Build the queue for a link whose mean (or nominal) rate is `link_rate`; `seed` drives
    /// the queue's randomness (PIE's drops, the flow hash of SFQ and fq_codel). The error is a
    /// [`QueueConfigError`]'s message.
    pub fn build<P: NetPacket + Send + 'static>(
        &self,
        link_rate: Rate,
        seed: u64,
    ) -> Result<Box<dyn Queue<P>>, String> {
        let kind = self.kind();
        let invalid = |source| QueueConfigError::Param { kind, source }.to_string();
        Ok(match self.resolve(link_rate)? {
            QueueParams::DropTail {
                limit,
                mark_threshold,
            } => Box::new(DropTail::new(limit).with_mark_threshold(mark_threshold)),
            QueueParams::Codel { codel, limit } => Box::new(Codel::new(codel, limit)),
            QueueParams::Pie(p) => Box::new(Pie::new(p, seed).map_err(invalid)?),
            QueueParams::Sfq(p) => Box::new(Sfq::new(p, seed).map_err(invalid)?),
            QueueParams::FqCodel(p) => Box::new(FqCodel::new(p, seed).map_err(invalid)?),
            QueueParams::DualPi2(p) => Box::new(DualPi2::new(p, seed).map_err(invalid)?),
        })
    }

    /// Check everything that does not depend on the link rate.
    pub fn validate(&self) -> Result<(), QueueConfigError> {
        self.params(Rate::from_mbps(1.0)).map(|_| ())
    }

    /// The presets a kind accepts.
    pub fn presets(kind: &str) -> &'static [Preset] {
        match kind {
            "pie" => &[Preset::Linux, Preset::Linux316, Preset::GccAqm],
            "dualpi2" => &[Preset::Linux],
            _ => &[Preset::Linux, Preset::GccAqm],
        }
    }

    /// Read a table form: `(field, value)` pairs as written.
    fn from_table(entries: &[(String, Scalar)]) -> Result<QueueConfig, QueueConfigError> {
        for (i, (k, _)) in entries.iter().enumerate() {
            if entries[..i].iter().any(|(j, _)| j == k) {
                return Err(QueueConfigError::DuplicateField(k.clone()));
            }
        }
        let kind = match entries.iter().find(|(k, _)| k == "kind") {
            None => return Err(QueueConfigError::MissingKind),
            Some((_, Scalar::Str(s))) => s,
            Some((_, other)) => return Err(QueueConfigError::KindNotAString(other.describe())),
        };
        let Some(&kind) = QUEUE_KINDS.iter().find(|&&k| k == kind) else {
            return Err(QueueConfigError::UnknownKind(kind.clone()));
        };
        let table = Table { kind, entries };
        let config = match kind {
            "droptail" => QueueConfig::DropTail(DropTailConfig::deserialize(table)?),
            "codel" => QueueConfig::Codel(CodelConfig::deserialize(table)?),
            "pie" => QueueConfig::Pie(PieConfig::deserialize(table)?),
            "sfq" => QueueConfig::Sfq(SfqConfig::deserialize(table)?),
            "dualpi2" => QueueConfig::DualPi2(DualPi2Config::deserialize(table)?),
            _ => QueueConfig::FqCodel(FqCodelConfig::deserialize(table)?),
        };
        config.validate()?;
        Ok(config)
    }
}

impl<'de> Deserialize<'de> for QueueConfig {
    /// Dispatch on the value's shape: a string is a drop-tail limit, a table has a kind, a
    /// number is a mistake worth its own message.
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
                Err(E::custom(QueueConfigError::NoUnit(v)))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<QueueConfig, E> {
                self.visit_i64(v as i64)
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<QueueConfig, E> {
                Err(E::custom(QueueConfigError::NotAQueue(v)))
            }
        }
        d.deserialize_any(V)
    }
}

/// A table value, kept as written until its field's type reads it.
#[derive(Debug, Clone, PartialEq)]
enum Scalar {
    Str(String),
    Int(i64),
    UInt(u64),
    Float(f64),
    Bool(bool),
    Table,
    List,
    Null,
}

impl Scalar {
    fn unexpected(&self) -> Unexpected<'_> {
        match self {
            Scalar::Str(s) => Unexpected::Str(s),
            Scalar::Int(n) => Unexpected::Signed(*n),
            Scalar::UInt(n) => Unexpected::Unsigned(*n),
            Scalar::Float(x) => Unexpected::Float(*x),
            Scalar::Bool(b) => Unexpected::Bool(*b),
            Scalar::Table => Unexpected::Map,
            Scalar::List => Unexpected::Seq,
            Scalar::Null => Unexpected::Unit,
        }
    }

    fn describe(&self) -> String {
        found(self.unexpected())
    }
}

/// A value as the messages name it: `"5"`, `5`, `1.5`, `true`, `a table`, `a list`, `nothing`.
fn found(value: Unexpected) -> String {
    match value {
        Unexpected::Str(s) => format!("{s:?}"),
        Unexpected::Signed(n) => n.to_string(),
        Unexpected::Unsigned(n) => n.to_string(),
        Unexpected::Float(x) => x.to_string(),
        Unexpected::Bool(b) => b.to_string(),
        Unexpected::Map => "a table".into(),
        Unexpected::Seq => "a list".into(),
        Unexpected::Unit => "nothing".into(),
        other => other.to_string(),
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
                Ok(Scalar::Int(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Scalar, E> {
                Ok(Scalar::UInt(v))
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

/// A queue table (its `kind` known) as the deserializer of that kind's configuration struct.
/// Before the struct sees any value it rejects the fields the struct does not declare and checks
/// the preset against the kind (`Preset` itself knows every preset, not which kind takes which);
/// then it hands over the values in the order the struct declares them, so that of several
/// mistakes the same one is always reported first.
struct Table<'a> {
    kind: &'static str,
    entries: &'a [(String, Scalar)],
}

impl Table<'_> {
    fn check_preset(&self) -> Result<(), QueueConfigError> {
        let kind = self.kind;
        match self.entries.iter().find(|(k, _)| k == "preset") {
            None => Ok(()),
            Some((_, Scalar::Str(name))) => {
                if QueueConfig::presets(kind).iter().any(|p| p.name() == name) {
                    Ok(())
                } else {
                    let name = name.clone();
                    Err(QueueConfigError::UnknownPreset { kind, name })
                }
            }
            Some((_, other)) => Err(QueueConfigError::Field {
                kind,
                field: "preset".into(),
                reason: format!(
                    "expected a preset name ({}), found {}",
                    preset_names(kind),
                    other.describe()
                ),
            }),
        }
    }
}

impl<'de> Deserializer<'de> for Table<'_> {
    type Error = QueueConfigError;

    /// Every field but `kind`, as written.
    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, QueueConfigError> {
        let written = self.entries.iter().filter(|(k, _)| k != "kind");
        visitor.visit_map(Fields::new(self.kind, written))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, QueueConfigError> {
        let kind = self.kind;
        let undeclared = |(k, _): &&(String, Scalar)| k != "kind" && !fields.contains(&k.as_str());
        if let Some((field, _)) = self.entries.iter().find(undeclared) {
            let field = field.clone();
            let valid = fields;
            return Err(QueueConfigError::UnknownField { kind, field, valid });
        }
        self.check_preset()?;
        let declared = fields
            .iter()
            .filter_map(|f| self.entries.iter().find(|(k, _)| k == f));
        visitor.visit_map(Fields::new(kind, declared))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf option
        unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier ignored_any
    }
}

/// The fields of a [`Table`], each value read through [`Value`]; a value's error gets the kind
/// and the field's name.
struct Fields<'a> {
    kind: &'static str,
    entries: std::vec::IntoIter<&'a (String, Scalar)>,
    /// The entry whose key was handed over last.
    current: Option<&'a (String, Scalar)>,
}

impl<'a> Fields<'a> {
    fn new(kind: &'static str, entries: impl Iterator<Item = &'a (String, Scalar)>) -> Self {
        let entries = entries.collect::<Vec<_>>().into_iter();
        Fields {
            kind,
            entries,
            current: None,
        }
    }
}

impl<'de> MapAccess<'de> for Fields<'_> {
    type Error = QueueConfigError;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, QueueConfigError> {
        let Some(entry) = self.entries.next() else {
            return Ok(None);
        };
        self.current = Some(entry);
        seed.deserialize(entry.0.as_str().into_deserializer())
            .map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> Result<V::Value, QueueConfigError> {
        let (field, value) = self.current.take().expect("a value is read after its key");
        seed.deserialize(Value(value))
            .map_err(|e| QueueConfigError::Field {
                kind: self.kind,
                field: field.clone(),
                reason: e.0,
            })
    }
}

/// One value of a table, as a deserializer whose errors say what the field takes and what was
/// found, in the configuration's words: `expected true or false, found 5`, `found a table`,
/// `"little" is not one of timestamp, dq-rate`.
struct Value<'a>(&'a Scalar);

/// What is wrong with one value ([`Fields`] adds where it is).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct ValueError(String);

impl de::Error for ValueError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        ValueError(msg.to_string())
    }

    fn invalid_type(unexpected: Unexpected, expected: &dyn de::Expected) -> Self {
        ValueError(format!("expected {expected}, found {}", found(unexpected)))
    }

    fn unknown_variant(variant: &str, expected: &'static [&'static str]) -> Self {
        ValueError(format!("{variant:?} is not one of {}", expected.join(", ")))
    }
}

impl<'de> Deserializer<'de> for Value<'_> {
    type Error = ValueError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ValueError> {
        match self.0 {
            Scalar::Str(s) => visitor.visit_str(s),
            Scalar::Int(n) => visitor.visit_i64(*n),
            Scalar::UInt(n) => visitor.visit_u64(*n),
            Scalar::Float(x) => visitor.visit_f64(*x),
            Scalar::Bool(b) => visitor.visit_bool(*b),
            Scalar::Null => visitor.visit_unit(),
            Scalar::Table | Scalar::List => {
                Err(de::Error::invalid_type(self.0.unexpected(), &visitor))
            }
        }
    }

    /// Present: a field that is absent never reaches its value's reader.
    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ValueError> {
        visitor.visit_some(self)
    }

    /// An enum is written as one of its names.
    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, ValueError> {
        match self.0 {
            Scalar::Str(s) => visitor.visit_enum(s.as_str().into_deserializer()),
            other => Err(ValueError(format!(
                "expected one of {}, found {}",
                variants.join(", "),
                other.describe()
            ))),
        }
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf unit
        unit_struct newtype_struct seq tuple tuple_struct map struct identifier ignored_any
    }
}

// The readers of the fields' values (`deserialize_with`), named after what they read.

/// A value written as text and read by `.1`, like `"5ms"`; `.0` says what is expected.
struct Text<T, E>(&'static str, fn(&str) -> Result<T, E>);

impl<T, E: fmt::Display> Visitor<'_> for Text<T, E> {
    type Value = Option<T>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(self.0)
    }
    fn visit_str<Er: de::Error>(self, v: &str) -> Result<Option<T>, Er> {
        (self.1)(v).map(Some).map_err(Er::custom)
    }
}

fn duration<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
    let expected = "a duration with a unit, like \"5ms\"";
    d.deserialize_any(Text(expected, Duration::parse))
}

fn limit<'de, D: Deserializer<'de>>(d: D) -> Result<Option<QueueLimit>, D::Error> {
    let expected = "a limit like \"1000pkts\", \"150KB\", \"300ms\" or \"unlimited\"";
    d.deserialize_any(Text(expected, QueueLimit::parse))
}

fn size<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Bytes>, D::Error> {
    d.deserialize_any(Text("a size with a unit, like \"1514B\"", Bytes::parse))
}

/// `true` or `false`.
struct Flag;

impl Visitor<'_> for Flag {
    type Value = Option<bool>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("true or false")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Option<bool>, E> {
        Ok(Some(v))
    }
}

fn flag<'de, D: Deserializer<'de>>(d: D) -> Result<Option<bool>, D::Error> {
    d.deserialize_any(Flag)
}

/// Any number, whole or not.
struct Number;

impl Visitor<'_> for Number {
    type Value = Option<f64>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a number")
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Option<f64>, E> {
        Ok(Some(v as f64))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Option<f64>, E> {
        Ok(Some(v as f64))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Option<f64>, E> {
        Ok(Some(v))
    }
}

fn number<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    d.deserialize_any(Number)
}

/// A whole number from 1 to `u32::MAX`; a count of `packets` may also be written `"64pkts"`.
struct Count {
    packets: bool,
}

impl Count {
    fn within<E: de::Error>(n: i128) -> Result<Option<u32>, E> {
        if n < 1 || n > u32::MAX as i128 {
            return Err(E::custom(format!(
                "must be between 1 and {}, not {n}",
                u32::MAX
            )));
        }
        Ok(Some(n as u32))
    }
}

impl Visitor<'_> for Count {
    type Value = Option<u32>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a whole number")
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Option<u32>, E> {
        Count::within(v as i128)
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Option<u32>, E> {
        Count::within(v as i128)
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Option<u32>, E> {
        if !self.packets {
            return Err(E::invalid_type(Unexpected::Str(v), &self));
        }
        match QueueLimit::parse(v) {
            Ok(QueueLimit::Packets(n)) => Count::within(n as i128),
            _ => Err(E::custom(format!(
                "expected a whole number of packets, like 64 or \"64pkts\", found {v:?}"
            ))),
        }
    }
}

fn count<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    d.deserialize_any(Count { packets: false })
}

fn packets<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    d.deserialize_any(Count { packets: true })
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
            QueueConfig::DualPi2(c) => {
                s("target", c.target.map(|v| q(&v)));
                s("tupdate", c.tupdate.map(|v| q(&v)));
                s("alpha", c.alpha.map(|v| format!("{v:?}")));
                s("beta", c.beta.map(|v| format!("{v:?}")));
                s("step_thresh", c.step_thresh.map(|v| q(&v)));
                s("min_qlen_step", c.min_qlen_step.map(|v| format!("{v:?}")));
                s("coupling", c.coupling.map(|v| format!("{v:?}")));
                s("drop_overload", c.drop_overload.map(|v| v.to_string()));
                s("c_protection", c.c_protection.map(|v| format!("{v:?}")));
                s("limit", c.limit.map(|v| q(&v)));
                s("mtu", c.mtu.map(|v| q(&v)));
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
            r#"{ kind = "dualpi2" }"#,
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
    fn dualpi2_reads_linux_defaults_and_overrides() {
        assert_eq!(
            resolve(r#"{ kind = "dualpi2" }"#, 100.0),
            QueueParams::DualPi2(DualPi2Params::linux())
        );
        let QueueParams::DualPi2(p) = resolve(
            r#"{ kind = "dualpi2", step_thresh = "2ms", coupling = 3, c_protection = 50, limit = "1000pkts" }"#,
            100.0,
        ) else {
            panic!()
        };
        assert_eq!(p.step, StepThreshold::Sojourn(Duration::from_millis(2)));
        assert_eq!((p.coupling, p.c_protection), (3.0, 50));
        assert_eq!(p.limit, QueueLimit::Packets(1000));
        let QueueParams::DualPi2(p) =
            resolve(r#"{ kind = "dualpi2", step_thresh = "3pkts" }"#, 100.0)
        else {
            panic!()
        };
        assert_eq!(p.step, StepThreshold::Packets(3));
        for (s, words) in [
            (
                r#"{ kind = "dualpi2", step_thresh = "3KB" }"#,
                &["dualpi2 step_thresh", "sojourn time"][..],
            ),
            (
                r#"{ kind = "dualpi2", c_protection = 120 }"#,
                &["dualpi2 c_protection", "0 to 100"][..],
            ),
            (
                r#"{ kind = "dualpi2", coupling = 0 }"#,
                &["dualpi2: coupling must be"][..],
            ),
            (
                r#"{ kind = "dualpi2", preset = "gcc-aqm" }"#,
                &[
                    "dualpi2 preset \"gcc-aqm\" is unknown",
                    "valid presets: linux",
                ][..],
            ),
            (
                r#"{ kind = "dualpi2", ecn = true }"#,
                &["dualpi2 queue has no field \"ecn\""][..],
            ),
        ] {
            let e = toml(s).unwrap_err();
            for w in words {
                assert!(e.contains(w), "{s}: {e} lacks {w:?}");
            }
        }
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
            r#"{ kind = "dualpi2", target = "20ms", tupdate = "10ms", alpha = 0.3, beta = 4.0, step_thresh = "5pkts", min_qlen_step = 2.0, coupling = 1.5, drop_overload = false, c_protection = 20.0, limit = "250ms", mtu = "1500B" }"#,
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
