//! The path: its hops in order, each a link in each direction with its capacity, propagation
//! delay, queue and impairments, resolved from `[path.forward]` / `[path.reverse]` (one link
//! pair) or `[[path.hops]]` (several bottlenecks in a row, RFC 8867 §6.3), and the hops a flow
//! crosses. Files a link names (schedules, traces) are read here, relative to the scenario.

use crate::ScenarioError;
use crate::MAX_PACKET;
use rtcc_core::net::impair::{ImpairmentConfig, Jitter, LossModel};
use rtcc_core::net::netem::{NetemConfig, DEFAULT_NETEM_LIMIT};
use rtcc_core::net::pdv::PdvConfig;
use rtcc_core::net::{
    Capacity, MahimahiTrace, OpenNetLabTrace, QueueConfig, QueueLimit, Schedule, Steps,
};
use rtcc_core::{Bytes, Duration, Rate, Time};
use serde::Deserialize;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The path: one link pair (`[path.forward]`, `[path.reverse]`) or several hops in a row
/// (`[[path.hops]]`), not both.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PathSpec {
    pub forward: Option<LinkSpec>,
    pub reverse: Option<LinkSpec>,
    pub hops: Option<Vec<HopSpec>>,
}

/// One hop of a multi-hop path: a named link pair, written like `[path.forward]` and
/// `[path.reverse]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HopSpec {
    pub name: String,
    pub forward: LinkSpec,
    pub reverse: Option<LinkSpec>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkSpec {
    /// Constant rate.
    pub capacity: Option<Rate>,
    /// Piecewise-constant rate: a file of `<time> <rate>` lines or an inline list of
    /// `["<time>", "<rate>"]` pairs (read in [`resolve_link`], so errors name the bad item).
    pub schedule: Option<serde_json::Value>,
    /// A mahimahi trace file.
    pub trace: Option<String>,
    /// A token-bucket shaper (Linux `tbf`): `{ rate = "5Mbps", burst = "15KB" }`.
    pub token_bucket: Option<TokenBucketSpec>,
    /// One-way propagation delay.
    pub delay: Option<Duration>,
    /// Queue discipline: a drop-tail limit (`"120ms"`) or `{ kind = "codel", ... }`.
    pub queue: Option<QueueConfig>,
    /// Packet loss: a probability or `{ model = "gilbert-elliott", p, r, ... }`.
    pub loss: Option<serde_json::Value>,
    /// Extra delay per packet: uniform in `[0, jitter)` never reordering (`"5ms"`), or RFC 8868's
    /// bounded PDV (`{ model = "nr-rbpdv", std = "5ms", n_std = 3 }`), read in [`resolve_link`].
    pub jitter: Option<serde_json::Value>,
    /// Release departures in batches at the end of each interval.
    pub aggregation: Option<Duration>,
    /// A netem-style delay stage in front of the queue: `{ delay = "50ms", limit = 1000 }`
    /// (`rtcc_core::net::netem`).
    pub netem: Option<NetemSpec>,
}

/// `netem = { delay = "50ms", limit = 1000 }`: Linux netem's delay and packet limit.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetemSpec {
    pub delay: Duration,
    /// Packets the stage holds: an integer or `"1000pkts"` (default 1000, netem's).
    pub limit: Option<serde_json::Value>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenBucketSpec {
    pub rate: Rate,
    pub burst: Bytes,
    /// The line behind the bucket, which serialises what it releases (Linux: the NIC). Default
    /// 1 Gbit/s; `"0"` is not accepted (use a large rate for an unlimited line).
    pub line_rate: Option<Rate>,
    /// Bytes counted per packet beyond its IP size, as `tc` counts the link-layer header.
    /// Default 14B (Ethernet).
    pub overhead: Option<Bytes>,
}

/// An input file a scenario names: where it is named (the keys and list indices from the
/// scenario's top, e.g. `["path", "hops", 1, "forward", "trace"]`), the file the core reads for
/// it, and what follows the name's `#` that is not part of the file (an OpenNetLab trace's
/// direction; empty for none).
#[derive(Debug, Clone, PartialEq)]
pub struct FileReference {
    pub location: Vec<serde_json::Value>,
    pub path: PathBuf,
    pub suffix: String,
}

impl LinkSpec {
    /// The input files the link names (a schedule file, a trace), as [`resolve_link`] reads
    /// them: `(key, file, suffix)`.
    fn files(&self, base_dir: &Path) -> Vec<(&'static str, PathBuf, String)> {
        let mut out = Vec::new();
        if let Some(serde_json::Value::String(f)) = &self.schedule {
            out.push(("schedule", resolve(base_dir, f), String::new()));
        }
        if let Some(f) = &self.trace {
            match opennetlab_trace(f) {
                Some((file, _)) => {
                    let suffix = f.rsplit_once('#').map_or("", |(_, d)| d);
                    out.push(("trace", resolve(base_dir, file), suffix.to_string()));
                }
                None => out.push(("trace", resolve(base_dir, f), String::new())),
            }
        }
        out
    }
}

impl PathSpec {
    /// The input files the path's links name, each with where it is named.
    pub fn file_references(&self, base_dir: &Path) -> Vec<FileReference> {
        let mut links: Vec<(Vec<serde_json::Value>, &LinkSpec)> = Vec::new();
        for (side, link) in [("forward", &self.forward), ("reverse", &self.reverse)] {
            if let Some(link) = link {
                links.push((vec!["path".into(), side.into()], link));
            }
        }
        for (i, hop) in self.hops.iter().flatten().enumerate() {
            let at = |side: &str| vec!["path".into(), "hops".into(), i.into(), side.into()];
            links.push((at("forward"), &hop.forward));
            if let Some(r) = &hop.reverse {
                links.push((at("reverse"), r));
            }
        }
        links
            .into_iter()
            .flat_map(|(at, link)| {
                link.files(base_dir)
                    .into_iter()
                    .map(move |(key, path, suffix)| {
                        let mut location = at.clone();
                        location.push(key.into());
                        FileReference {
                            location,
                            path,
                            suffix,
                        }
                    })
            })
            .collect()
    }
}

/// tbf's default line behind the bucket: a gigabit NIC (seed bbr_dash §6.1).
pub const DEFAULT_TBF_LINE_RATE_BPS: f64 = 1e9;
/// What `tc` adds to each packet's length on Ethernet: the 14-byte MAC header.
pub const DEFAULT_TBF_OVERHEAD: u64 = 14;

/// A link, resolved.
#[derive(Debug, Clone)]
pub struct LinkConfig {
    pub capacity: Capacity,
    /// The propagation delay after the link; with [`LinkConfig::delay_steps`], its smallest
    /// value (the base delay reports and facts give).
    pub delay: Duration,
    /// A propagation delay that changes in steps (an OpenNetLab trace's `rtt / 2` per pattern),
    /// in force for a packet when it leaves the link's impairments. The delay line stays first
    /// in, first out per flow: when the delay drops, a packet never arrives before one of its
    /// flow that left the link before it (it arrives with it), as in a real delay line.
    pub delay_steps: Option<Arc<Steps<Duration>>>,
    pub queue: QueueConfig,
    /// Mean capacity over the run, which sizes queues given relative to the rate (presets).
    pub nominal_rate: Rate,
    pub impairments: ImpairmentConfig,
    /// A netem-style delay stage in front of the queue (none by default).
    pub netem: Option<NetemConfig>,
}

/// One hop of the path: a link in each direction. A one-link scenario (`[path.forward]`) has
/// one hop named [`SINGLE_HOP_NAME`].
#[derive(Debug, Clone)]
pub struct HopConfig {
    pub name: String,
    pub forward: LinkConfig,
    pub reverse: LinkConfig,
}

/// The most hops a path may have (a hop index must fit the simulator's 16-bit packet field).
pub const MAX_HOPS: usize = 1024;

/// The name of the one hop of a scenario written with `[path.forward]`.
pub const SINGLE_HOP_NAME: &str = "path";

/// The path's hops: the one link pair of `[path.forward]` / `[path.reverse]`, or each
/// `[[path.hops]]` entry (names unique and non-empty), every link resolved by [`resolve_link`].
pub(crate) fn resolve_path(
    spec: &PathSpec,
    base_dir: &Path,
    duration: Duration,
) -> Result<Vec<HopConfig>, (String, String)> {
    let hop = |name: &str, forward: &LinkSpec, reverse: Option<&LinkSpec>, field: &str| {
        let forward = resolve_link(
            forward,
            &format!("{field}forward"),
            base_dir,
            None,
            duration,
        )?;
        let reverse = match reverse {
            Some(r) => resolve_link(
                r,
                &format!("{field}reverse"),
                base_dir,
                Some((forward.delay, forward.delay_steps.clone())),
                duration,
            )?,
            None => LinkConfig {
                capacity: Capacity::Unlimited,
                delay: forward.delay,
                delay_steps: forward.delay_steps.clone(),
                queue: QueueConfig::default(),
                nominal_rate: Rate(f64::INFINITY),
                impairments: ImpairmentConfig::default(),
                netem: None,
            },
        };
        Ok::<_, (String, String)>(HopConfig {
            name: name.into(),
            forward,
            reverse,
        })
    };
    match (&spec.hops, &spec.forward) {
        (None, Some(forward)) => Ok(vec![hop(
            SINGLE_HOP_NAME,
            forward,
            spec.reverse.as_ref(),
            "path.",
        )?]),
        (None, None) => Err((
            "path".into(),
            "the path needs [path.forward] (one link pair) or [[path.hops]] (several hops in a row)"
                .into(),
        )),
        (Some(_), Some(_)) => Err((
            "path.hops".into(),
            "give either [path.forward] / [path.reverse] (one link pair) or [[path.hops]] (each hop with its forward and reverse), not both".into(),
        )),
        (Some(_), None) if spec.reverse.is_some() => Err((
            "path.reverse".into(),
            "with [[path.hops]], each hop takes its own reverse link: path.hops[i].reverse".into(),
        )),
        (Some(specs), None) => {
            if specs.is_empty() || specs.len() > MAX_HOPS {
                return Err((
                    "path.hops".into(),
                    format!("needs 1 to {MAX_HOPS} hops, got {}", specs.len()),
                ));
            }
            let mut hops: Vec<HopConfig> = Vec::with_capacity(specs.len());
            for (i, h) in specs.iter().enumerate() {
                let field = format!("path.hops[{i}].");
                if h.name.trim().is_empty() {
                    return Err((format!("{field}name"), "must not be empty".into()));
                }
                if hops.iter().any(|g| g.name == h.name) {
                    return Err((
                        format!("{field}name"),
                        format!("{:?} is used by two hops; hop names must be unique", h.name),
                    ));
                }
                hops.push(hop(&h.name, &h.forward, h.reverse.as_ref(), &field)?);
            }
            Ok(hops)
        }
    }
}

/// A flow's `hops`: names of hops of `[[path.hops]]`, a contiguous run in path order.
pub(crate) fn resolve_flow_hops(
    names: &[String],
    hops: &[HopConfig],
    field: &str,
) -> Result<Range<usize>, (String, String)> {
    let all = || {
        hops.iter()
            .map(|h| format!("{:?}", h.name))
            .collect::<Vec<_>>()
            .join(", ")
    };
    if names.is_empty() {
        return Err((
            field.into(),
            format!("needs at least one hop; the path's hops: {}", all()),
        ));
    }
    let mut indices = Vec::with_capacity(names.len());
    for (k, name) in names.iter().enumerate() {
        let Some(i) = hops.iter().position(|h| &h.name == name) else {
            return Err((
                format!("{field}[{k}]"),
                format!("unknown hop {name:?}; the path's hops: {}", all()),
            ));
        };
        indices.push(i);
    }
    if indices.windows(2).any(|w| w[1] != w[0] + 1) {
        return Err((
            field.into(),
            format!(
                "must be a contiguous run of hops in path order (the path's hops: {}); got {names:?}",
                all()
            ),
        ));
    }
    Ok(indices[0]..indices[indices.len() - 1] + 1)
}

/// Resolve one link on its own, written like a scenario's `[path.forward]` table (the live
/// emulator's links): `field` names it in errors, relative files are read from `base_dir`, and a
/// link without a capacity is unlimited. Rates of time-based queue limits are the capacity's mean
/// over an hour.
pub fn link_from_spec(
    spec: &LinkSpec,
    field: &str,
    base_dir: &Path,
) -> Result<LinkConfig, ScenarioError> {
    let hour = Duration::from_secs_f64(3600.0);
    resolve_link(spec, field, base_dir, Some((Duration::ZERO, None)), hour).map_err(
        |(field, message)| ScenarioError {
            source_name: "link".into(),
            field,
            message,
        },
    )
}

/// The delay a link takes when its spec gives none: `None` for a forward link (no delay), else
/// the forward link's (a reverse link, or the live emulator's links: zero).
type DefaultDelay = Option<(Duration, Option<Arc<Steps<Duration>>>)>;

fn resolve_link(
    spec: &LinkSpec,
    field: &str,
    base_dir: &Path,
    default_delay: DefaultDelay,
    duration: Duration,
) -> Result<LinkConfig, (String, String)> {
    let at = |name: &str| format!("{field}.{name}");
    let given: Vec<&str> = [
        ("capacity", spec.capacity.is_some()),
        ("schedule", spec.schedule.is_some()),
        ("trace", spec.trace.is_some()),
        ("token_bucket", spec.token_bucket.is_some()),
    ]
    .iter()
    .filter(|(_, g)| *g)
    .map(|(n, _)| *n)
    .collect();
    if given.len() > 1 {
        return Err((
            field.into(),
            format!(
                "give only one of capacity, schedule, trace or token_bucket (got {})",
                given.join(", ")
            ),
        ));
    }
    // What an OpenNetLab trace gives beyond capacity: its loss and delay steps, and the file.
    let mut onl: Option<(OpenNetLabTrace, PathBuf)> = None;
    let capacity = if let Some(r) = spec.capacity {
        if r.bps() <= 0.0 {
            return Err((
                at("capacity"),
                "must be a positive rate, e.g. \"20Mbps\"".into(),
            ));
        }
        Capacity::Constant(r)
    } else if let Some(schedule) = &spec.schedule {
        let s = match schedule {
            serde_json::Value::String(f) => Schedule::from_file(&resolve(base_dir, f)),
            serde_json::Value::Array(items) => {
                Schedule::new(inline_steps(items, &at("schedule"))?, "inline schedule")
            }
            other => {
                return Err((
                    at("schedule"),
                    format!(
                    "expected a file name or a list of [\"<time>\", \"<rate>\"] pairs, got {other}"
                ),
                ))
            }
        };
        Capacity::Schedule(Arc::new(s.map_err(|e| (at("schedule"), e.to_string()))?))
    } else if let Some(f) = &spec.trace {
        if let Some((file, direction)) = opennetlab_trace(f) {
            let path = resolve(base_dir, file);
            let text = rtcc_core::net::capacity::read_input_file(&path, "trace")
                .map_err(|e| (at("trace"), format!("{}: {e}", path.display())))?;
            let t = OpenNetLabTrace::parse(&text, direction, &path.display().to_string())
                .map_err(|e| (at("trace"), e.to_string()))?;
            let capacity = Capacity::Schedule(Arc::new(t.capacity.clone()));
            onl = Some((t, path));
            capacity
        } else {
            let t = MahimahiTrace::from_file(&resolve(base_dir, f))
                .map_err(|e| (at("trace"), e.to_string()))?;
            Capacity::Trace(Arc::new(t))
        }
    } else if let Some(tb) = &spec.token_bucket {
        if tb.rate.bps() <= 0.0 {
            return Err((at("token_bucket.rate"), "must be a positive rate".into()));
        }
        let line_rate = tb.line_rate.unwrap_or(Rate(DEFAULT_TBF_LINE_RATE_BPS));
        if line_rate.bps().is_nan() || line_rate.bps() <= 0.0 {
            return Err((
                at("token_bucket.line_rate"),
                "must be a positive rate".into(),
            ));
        }
        let overhead = tb.overhead.map_or(DEFAULT_TBF_OVERHEAD, |b| b.0);
        if overhead > 1000 {
            return Err((
                at("token_bucket.overhead"),
                format!("{overhead}B per packet is not a link-layer header"),
            ));
        }
        if tb.burst.0 < MAX_PACKET + overhead {
            return Err((
                at("token_bucket.burst"),
                format!(
                    "{} is smaller than one full-size packet ({MAX_PACKET}B + {overhead}B of \
                     overhead), which could never pass",
                    tb.burst
                ),
            ));
        }
        Capacity::TokenBucket {
            rate: tb.rate,
            burst: tb.burst.0,
            line_rate,
            overhead: overhead as u32,
        }
    } else if default_delay.is_some() {
        Capacity::Unlimited
    } else {
        return Err((
            field.into(),
            "the link needs a capacity: capacity = \"20Mbps\", schedule = \"file\", trace = \"file\" or token_bucket = { rate, burst }".into(),
        ));
    };
    let nominal_rate = match &capacity {
        Capacity::Unlimited => Rate(f64::INFINITY),
        c => Rate(c.bytes_between(Time::ZERO, Time(duration.0)) * 8.0 / duration.as_secs_f64()),
    };
    // The default is 1000 packets of drop-tail, Linux's default `txqueuelen`.
    let queue = spec.queue.clone().unwrap_or_default();
    queue.resolve(nominal_rate).map_err(|e| (at("queue"), e))?;
    // A trace that gives a non-zero loss (rtt) owns the link's loss (delay): the scenario's
    // `loss` (`delay`) as well is an error naming both, not a second loss process or a sum.
    let conflict = |key: &str, source: &Option<String>, path: &PathBuf, what: &str| {
        (
            at(key),
            format!(
                "the trace {} gives this link's {what} per pattern ({}); remove {key} here, \
                 or use a trace without it",
                path.display(),
                source.as_deref().unwrap_or("")
            ),
        )
    };
    let (trace_loss, trace_delay) = match &onl {
        Some((t, path)) => {
            if t.loss.is_some() && spec.loss.is_some() {
                return Err(conflict("loss", &t.loss_source, path, "loss rate"));
            }
            if t.delay.is_some() && spec.delay.is_some() {
                return Err(conflict(
                    "delay",
                    &t.rtt_source,
                    path,
                    "delay (rtt / 2 each way)",
                ));
            }
            (t.loss.clone(), t.delay.clone())
        }
        None => (None, None),
    };
    let loss = match (&spec.loss, trace_loss) {
        (_, Some(steps)) => LossModel::Steps(Arc::new(steps)),
        (None, None) => LossModel::None,
        (Some(v), None) => LossModel::from_value(v).map_err(|e| (at("loss"), e))?,
    };
    let (delay, delay_steps) = match (spec.delay, trace_delay) {
        (_, Some(steps)) => {
            let base = steps.values().min().unwrap_or(Duration::ZERO);
            (base, Some(Arc::new(steps)))
        }
        (Some(d), None) => (d, None),
        (None, None) => default_delay.unwrap_or((Duration::ZERO, None)),
    };
    let jitter = match &spec.jitter {
        None => Jitter::default(),
        Some(serde_json::Value::String(d)) => {
            Jitter::Uniform(Duration::parse(d).map_err(|e| (at("jitter"), e.to_string()))?)
        }
        Some(v) if v.get("model").and_then(|m| m.as_str()) == Some("sub-ms") => Jitter::SubMs(
            rtcc_core::net::sub_ms_jitter::SubMsJitter::from_value(v).map_err(|(sub, m)| {
                let field = if sub.is_empty() {
                    at("jitter")
                } else {
                    at(&format!("jitter.{sub}"))
                };
                (field, m)
            })?,
        ),
        Some(v) => {
            // NR-RBPDV's serial(n) defaults to the link's peak rate: at its mean rate, a
            // scheduled link's high steps would be capped at the mean by the spacing.
            let link_rate = capacity.peak_rate();
            Jitter::Pdv(PdvConfig::from_value(v, link_rate).map_err(|(sub, m)| {
                let field = if sub.is_empty() {
                    at("jitter")
                } else {
                    at(&format!("jitter.{sub}"))
                };
                (field, m)
            })?)
        }
    };
    if let (Jitter::SubMs(j), Some(_)) = (&jitter, &delay_steps) {
        if j.reorder {
            return Err((
                at("jitter.reorder"),
                "this link's delay follows a trace (rtt), whose delay line keeps each flow's \
                 packets in order; reorder = true cannot hold there"
                    .into(),
            ));
        }
    }
    if let (Jitter::Pdv(p), Some(_)) = (&jitter, &delay_steps) {
        if p.model == rtcc_core::net::pdv::PdvModel::Rbpdv {
            return Err((
                at("jitter"),
                "rbpdv sends packets ahead of their flow's earlier ones, but this link's delay \
                 follows a trace (rtt), whose delay line keeps each flow's packets in order; \
                 use nr-rbpdv or a uniform jitter"
                    .into(),
            ));
        }
    }
    let netem = match &spec.netem {
        None => None,
        Some(n) => Some(resolve_netem(n).map_err(|(sub, m)| (at(&format!("netem.{sub}")), m))?),
    };
    if netem.is_some() && matches!(capacity, Capacity::Unlimited) {
        return Err((
            at("netem"),
            "a delay stage sits in front of a link's queue, and this link has no capacity \
             (so no queue); give it a capacity or put the stage on the forward link"
                .into(),
        ));
    }
    Ok(LinkConfig {
        netem,
        capacity,
        delay,
        delay_steps,
        queue,
        nominal_rate,
        impairments: ImpairmentConfig {
            loss,
            jitter,
            aggregation: spec.aggregation.filter(|d| d.0 > 0),
        },
    })
}

/// A netem stage's settings; errors name the field (`delay`, `limit`).
fn resolve_netem(n: &NetemSpec) -> Result<NetemConfig, (&'static str, String)> {
    let limit = match &n.limit {
        None => DEFAULT_NETEM_LIMIT as u64,
        Some(v) => {
            // A number, or a queue limit's packet count ("1000pkts").
            let packets = match (v.as_u64(), v.as_str().map(QueueLimit::parse)) {
                (Some(k), _) => Some(k),
                (None, Some(Ok(QueueLimit::Packets(k)))) => Some(k),
                _ => None,
            };
            match packets {
                Some(k) if (1..=u32::MAX as u64).contains(&k) => k,
                _ => {
                    return Err((
                        "limit",
                        format!(
                            "netem's limit counts packets: a whole number from 1 (e.g. 1000 or \"1000pkts\"), got {v}"
                        ),
                    ))
                }
            }
        }
    };
    NetemConfig::new(n.delay, limit as u32).map_err(|e| match e {
        rtcc_core::net::NetemError::ZeroLimit => ("limit", e.to_string()),
        rtcc_core::net::NetemError::DelayTooLong(_) => ("delay", e.to_string()),
    })
}

/// Read `[["0s", "20Mbps"], ["40s", "5Mbps"]]`.
fn inline_steps(
    items: &[serde_json::Value],
    field: &str,
) -> Result<Vec<(Time, Rate)>, (String, String)> {
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let at = format!("{field}[{i}]");
            let pair = item.as_array().filter(|a| a.len() == 2);
            let (Some(t), Some(r)) = (
                pair.and_then(|a| a[0].as_str()),
                pair.and_then(|a| a[1].as_str()),
            ) else {
                return Err((
                    at,
                    format!("expected a pair like [\"40s\", \"5Mbps\"], got {item}"),
                ));
            };
            let t = Duration::parse(t).map_err(|e| (at.clone(), e.to_string()))?;
            let r = Rate::parse(r).map_err(|e| (at.clone(), e.to_string()))?;
            Ok((Time(t.0), r))
        })
        .collect()
}

/// An OpenNetLab JSON trace (`file.json`, `file.json#uplink` or `file.json#downlink`): the file
/// and the direction to read (default `uplink`, the sender's side in AlphaRTC's emulator).
fn opennetlab_trace(spec: &str) -> Option<(&str, &str)> {
    let (file, direction) = spec.rsplit_once('#').unwrap_or((spec, "uplink"));
    file.to_ascii_lowercase()
        .ends_with(".json")
        .then_some((file, direction))
}

/// `file` relative to the scenario's folder, with `..` taken lexically (as Python's
/// `os.path.abspath` does): a scenario reached through a symbolic link (the repository's
/// `experiments/` and `traces/` link into the package's data) names the files next to the link,
/// e.g. `../../../shared/traces` beside the checkout.
pub(crate) fn resolve(base: &Path, file: &str) -> PathBuf {
    use std::path::Component;
    let joined = base.join(file);
    let mut out = PathBuf::new();
    for part in joined.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                if matches!(out.components().next_back(), Some(Component::Normal(_))) {
                    out.pop();
                } else {
                    out.push(part);
                }
            }
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod resolve_tests {
    use super::resolve;
    use std::path::{Path, PathBuf};

    #[test]
    fn parent_steps_are_taken_lexically() {
        let base = Path::new("/repo/experiments/vidaptive");
        assert_eq!(
            resolve(base, "../../../shared/t.trace"),
            PathBuf::from("/shared/t.trace")
        );
        assert_eq!(
            resolve(base, "./a/../b.trace"),
            PathBuf::from("/repo/experiments/vidaptive/b.trace")
        );
        assert_eq!(resolve(base, "/abs/x.trace"), PathBuf::from("/abs/x.trace"));
        assert_eq!(resolve(Path::new("rel"), "../../x"), PathBuf::from("../x"));
    }
}
