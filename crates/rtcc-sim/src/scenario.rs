//! Scenario files: what to simulate, validated before the run.
//!
//! A scenario is TOML (or the same structure as JSON, which is how the Python front passes the
//! scenarios it builds). Parsing happens in two steps: serde turns the text into the `*Spec`
//! structs below, recording the path of any field it cannot read (`flows[0].params.rate`), then
//! [`Scenario::from_spec`] checks every value and resolves files into a ready-to-run
//! [`Scenario`]. Every error names the field, the bad value and what is allowed.
//! `docs/scenarios.md` is the reference for users.

use crate::path::PathCapacity;
use rtcc_core::cc::{self, ControllerContext, FeedbackPolicy, Params, Registry};
use rtcc_core::dash::{AbrKind, BufferTargets, DashConfig, HttpVersion};
use rtcc_core::endpoint::{AckAt, FrameAckConfig, Recovery};
use rtcc_core::media::degradation::Preference;
use rtcc_core::media::encoder::EncoderConfig;
use rtcc_core::media::range::{MediaRange, DEFAULT_MIN_BITRATE, DEFAULT_MIN_FPS};
use rtcc_core::media::source::JitterModel;
use rtcc_core::metrics::PacketStats;
use rtcc_core::net::impair::{ImpairmentConfig, Jitter, LossModel};
use rtcc_core::net::pdv::PdvConfig;
use rtcc_core::net::{Capacity, MahimahiTrace, QueueConfig, Schedule};
use rtcc_core::short_tcp::ShortFlowConfig;
use rtcc_core::tcp::App;
use rtcc_core::{Bytes, Duration, Rate, Time};
use serde::Deserialize;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// An invalid scenario: which field, and what is wrong with it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{source_name}: {field}: {message}")]
pub struct ScenarioError {
    /// The scenario's file name (or "scenario").
    pub source_name: String,
    /// Dotted path of the field, e.g. `flows[1].params.rate` (empty for the whole file).
    pub field: String,
    pub message: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioSpec {
    pub name: Option<String>,
    pub duration: Duration,
    pub seed: Option<u64>,
    pub path: PathSpec,
    pub flows: Vec<FlowSpec>,
}

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

/// tbf's default line behind the bucket: a gigabit NIC (seed bbr_dash §6.1).
pub const DEFAULT_TBF_LINE_RATE_BPS: f64 = 1e9;
/// What `tc` adds to each packet's length on Ethernet: the 14-byte MAC header.
pub const DEFAULT_TBF_OVERHEAD: u64 = 14;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowSpec {
    pub name: Option<String>,
    /// `"video"` (default), `"cbr"` (constant-rate UDP-like cross traffic), `"audio"`
    /// (constant-rate RTP audio), `"tcp"` or `"dash"`.
    pub kind: Option<String>,
    pub controller: Option<String>,
    /// Sending rate of a `cbr` flow, payload rate of an `audio` flow.
    pub rate: Option<Rate>,
    /// `audio`: media per packet (default 20ms).
    pub ptime: Option<Duration>,
    /// Packet size of a `cbr` flow, segment size of a `tcp` flow.
    pub packet_size: Option<Bytes>,
    /// Application of a `tcp` flow: `{ model = "bulk" | "onoff" | "finite" | "short", ... }`.
    pub app: Option<serde_json::Value>,
    /// A `tcp` receiver acknowledges every second segment (or after 40 ms) instead of each.
    pub delayed_ack: Option<bool>,
    /// The sender restarts its window after an idle period longer than its RTO (Linux
    /// `tcp_slow_start_after_idle`): `tcp` flows (default false) and `dash` servers (default true).
    pub slow_start_after_idle: Option<bool>,
    /// `dash`: `"h2"` (default) or `"h1"`.
    pub http: Option<String>,
    /// `dash`: the ABR, `"dynamic"` (default), `"throughput"`, `"bola"`, `"bba"`, `"rb"`, `"festive"`.
    pub abr: Option<String>,
    /// `dash`: number of segments (default 127).
    pub segments: Option<u64>,
    /// `dash`: media per segment (default 5 s).
    pub segment_duration: Option<Duration>,
    /// `dash`: the bitrate ladder, ascending rates (default the seed's 11 rungs, 1–25 Mbit/s).
    pub ladder: Option<Vec<Rate>>,
    /// `dash`: dash.js's buffer targets: a duration (all of them) or a table.
    pub buffer_target: Option<serde_json::Value>,
    /// `dash`: `"nominal"` (bitrate × duration) or a positive number scaling that.
    pub segment_sizes: Option<serde_json::Value>,
    /// `dash`: the server's interface rate (`"1Gbps"` default) or `"unlimited"`.
    pub line_rate: Option<serde_json::Value>,
    #[serde(default)]
    pub params: Params,
    pub start: Option<Duration>,
    pub stop: Option<Duration>,
    pub fps: Option<f64>,
    pub frame_jitter: Option<Duration>,
    /// How the frame jitter accumulates: `"grid"` (default) or `"walk"`.
    pub frame_jitter_model: Option<String>,
    /// A model name (`"lagged"`) or a table (`{ model = "lagged", up = "2s" }`), read in
    /// [`EncoderConfig::from_value`] so errors name the bad sub-field.
    pub encoder: Option<serde_json::Value>,
    /// The receiver asks for a keyframe when a frame cannot be decoded (default true).
    pub keyframe_requests: Option<bool>,
    /// Largest media payload per packet (smaller frames are cut into two smaller packets).
    pub payload: Option<Bytes>,
    pub overhead: Option<Bytes>,
    /// The media range: the encoder's target stays in `[min_bitrate, max_bitrate]`.
    pub min_bitrate: Option<Rate>,
    pub start_bitrate: Option<Rate>,
    pub max_bitrate: Option<Rate>,
    /// Lowest frame rate of the degradation policy (`fps` is the highest).
    pub min_fps: Option<f64>,
    /// WebRTC's degradation preference: `"balanced"` (default), `"maintain-framerate"`,
    /// `"maintain-resolution"` or `"disabled"`.
    pub degradation: Option<String>,
    /// Pacer pushback: the encoder backs off while the pacer queue is long (default true).
    pub pushback: Option<bool>,
    /// The frame dropper: frames are skipped while the encoder runs ahead of its target
    /// (default true).
    pub frame_dropper: Option<bool>,
    pub padding_size: Option<Bytes>,
    pub extra_delay: Option<Duration>,
    pub clock_offset: Option<Duration>,
    pub feedback: Option<FeedbackPolicy>,
    /// Loss recovery and liveness (video flows): `recovery = { nack = false, fec = 4 }`.
    pub recovery: Option<RecoverySpec>,
    /// When the receiver acknowledges frames, for controllers that ask for frame acknowledgements
    /// (video flows): `frame_ack = { at = "display", presentation_timeout = "100ms" }`.
    pub frame_ack: Option<FrameAckSpec>,
    /// `"forward"` (default) or `"reverse"`: which link carries the flow's data.
    pub direction: Option<String>,
    /// The hops the flow crosses, by name: a contiguous run in path order (default: all).
    pub hops: Option<Vec<String>>,
    /// On/off schedule: `[["0s", "40s"], ["60s", "120s"]]`; the flow is paused between the
    /// periods with its controller and encoder state kept (RFC 8867 §5.8).
    pub active: Option<Vec<(Duration, Duration)>>,
    /// The sender marks its data ECN-capable (ECT(0), RFC 3168) and the receiver reports CE
    /// marks (default false: Not-ECT). Video, cbr and tcp flows.
    pub ecn: Option<serde_json::Value>,
    /// Coupled congestion control with the sender's other flows (RFC 8699): the flow's
    /// controller becomes the inner controller of a `coupled` wrapper,
    /// `coupling = { group = "sender1", priority = 2.0 }` (video flows).
    pub coupling: Option<CouplingSpec>,
}

/// A flow's coupling as written in a scenario.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CouplingSpec {
    /// The flow group: flows of one sender sharing a bottleneck (required).
    pub group: String,
    /// The flow's priority, > 0 (default 1).
    pub priority: Option<f64>,
    /// `"active"` (default) or `"conservative"` (RFC 8699 §5.3.1 / §5.3.2).
    pub algorithm: Option<cc::coupled::Algorithm>,
}

/// A validated coupling: the flow's controller runs inside `coupled` in `group`.
#[derive(Debug, Clone, PartialEq)]
pub struct Coupling {
    pub group: String,
    pub priority: f64,
    pub algorithm: cc::coupled::Algorithm,
}

/// Loss recovery of a video flow as written in a scenario; every field is optional.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecoverySpec {
    /// NACK-based retransmission on an RTX stream (default true).
    pub nack: Option<bool>,
    /// XOR FEC: one parity packet per this many media packets, 1–16 (default: off).
    pub fec: Option<u16>,
    /// Retransmission timeout for window-based controllers (default true).
    pub rto: Option<bool>,
    /// Moved to the flow's `min_bitrate`; kept only to say so.
    pub min_rate: Option<Rate>,
    /// Fixed playout delay of the receiver's jitter buffer (default 0ms).
    pub playout_delay: Option<Duration>,
    /// Delay before the receiver's first NACK for a missing packet (default 0ms).
    pub nack_delay: Option<Duration>,
}

/// A video receiver's frame acknowledgements as written in a scenario; every field is optional.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FrameAckSpec {
    /// `"complete"` (default: when the frame's last packet is in) or `"display"` (just before it
    /// is shown; frames given up on are acknowledged late, flagged lost).
    pub at: Option<String>,
    /// With `at = "display"`: a frame whose last packet comes later than this after its first is
    /// lost (default 100ms, C³G's client).
    pub presentation_timeout: Option<Duration>,
}

impl FrameAckSpec {
    /// The receiver's mode, or the bad field (under `field`, e.g. `flows[0].frame_ack`) and what
    /// is wrong with it.
    fn resolve(&self, field: &str) -> Result<FrameAckConfig, (String, String)> {
        let defaults = FrameAckConfig::default();
        let at = match &self.at {
            None => defaults.at,
            Some(s) => AckAt::parse(s).map_err(|m| (format!("{field}.at"), m))?,
        };
        if let Some(t) = self.presentation_timeout {
            if at != AckAt::Display {
                return Err((
                    format!("{field}.presentation_timeout"),
                    "applies only to a receiver that acknowledges at display: add at = \"display\""
                        .into(),
                ));
            }
            if t.0 == 0 {
                return Err((
                    format!("{field}.presentation_timeout"),
                    "must be longer than 0ms".into(),
                ));
            }
        }
        Ok(FrameAckConfig {
            at,
            presentation_timeout: self
                .presentation_timeout
                .unwrap_or(defaults.presentation_timeout),
        })
    }
}

/// A link, resolved.
#[derive(Debug, Clone)]
pub struct LinkConfig {
    pub capacity: Capacity,
    pub delay: Duration,
    pub queue: QueueConfig,
    /// Mean capacity over the run, which sizes queues given relative to the rate (presets).
    pub nominal_rate: Rate,
    pub impairments: ImpairmentConfig,
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

/// What a flow sends.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FlowKind {
    /// A video flow driven by a controller.
    Video,
    /// Constant-rate cross traffic: `packet_size`-byte packets evenly spaced at `rate`, no
    /// feedback, no congestion response (a UDP flow, like iperf's).
    Cbr { rate: Rate, packet_size: Bytes },
    /// A TCP-like flow: `mss`-byte segments under a window-based controller.
    Tcp {
        app: App,
        delayed_ack: bool,
        mss: Bytes,
        slow_start_after_idle: bool,
    },
    /// A short TCP flow (RFC 8867 §5.7, `app = { model = "short" }`): downloads of random
    /// sizes, each on a fresh connection, interleaved with random idle periods.
    ShortTcp {
        config: ShortFlowConfig,
        delayed_ack: bool,
        mss: Bytes,
    },
    /// Constant-rate RTP audio, not rate-adapted: one packet of `rate · ptime` payload bytes plus
    /// `overhead` bytes of RTP/UDP/IP headers every `ptime`.
    Audio {
        rate: Rate,
        ptime: Duration,
        overhead: Bytes,
    },
    /// A DASH session: a server sending video segments over TCP connections to a player that
    /// requests them ([`FlowConfig::dash`] has its settings).
    Dash,
}

impl FlowKind {
    /// `"video"`, `"cbr"`, `"audio"`, `"tcp"` or `"dash"`, as written in a scenario.
    pub fn name(&self) -> &'static str {
        match self {
            FlowKind::Video => "video",
            FlowKind::Cbr { .. } => "cbr",
            FlowKind::Audio { .. } => "audio",
            FlowKind::Tcp { .. } | FlowKind::ShortTcp { .. } => "tcp",
            FlowKind::Dash => "dash",
        }
    }

    /// A flow without a controller (constant rate): `cbr` and `audio`.
    pub fn is_unadapted(&self) -> bool {
        matches!(self, FlowKind::Cbr { .. } | FlowKind::Audio { .. })
    }

    /// An `audio` flow's packet: its interval and its size on the wire.
    pub fn audio_packet(&self) -> Option<(Duration, u64)> {
        match *self {
            FlowKind::Audio {
                rate,
                ptime,
                overhead,
            } => Some((ptime, audio_payload(rate, ptime) + overhead.0)),
            _ => None,
        }
    }
}

/// A flow, resolved.
#[derive(Debug, Clone)]
pub struct FlowConfig {
    pub name: String,
    pub kind: FlowKind,
    /// The controller's registry name (`"cbr"` for constant-rate flows).
    pub controller: String,
    pub params: Params,
    pub start: Time,
    pub stop: Time,
    pub fps: f64,
    pub frame_jitter: Duration,
    pub frame_jitter_model: JitterModel,
    pub encoder: EncoderConfig,
    /// The receiver sends keyframe requests (picture-loss indications) when frames cannot be
    /// decoded.
    pub keyframe_requests: bool,
    pub payload: Bytes,
    pub overhead: Bytes,
    pub padding_size: Bytes,
    pub extra_delay: Duration,
    pub clock_offset: Duration,
    pub feedback: FeedbackPolicy,
    pub recovery: Recovery,
    /// When the receiver acknowledges frames (if the feedback policy asks for acknowledgements).
    pub frame_ack: FrameAckConfig,
    pub media: MediaRange,
    pub degradation: Preference,
    pub pushback: bool,
    pub frame_dropper: bool,
    /// The flow's data goes over the reverse links (last hop first).
    pub reverse: bool,
    /// The hops the flow crosses (indices into [`Scenario::hops`], in path order): its data
    /// crosses their forward links in order, its feedback their reverse links in reverse order
    /// (the other way round for a `reverse` flow).
    pub hops: Range<usize>,
    /// Periods during which the sender is active, in order (one period `[start, stop]` when the
    /// scenario gives no schedule).
    pub active: Vec<(Time, Time)>,
    /// The session of a `dash` flow.
    pub dash: Option<DashConfig>,
    /// ECN-capable data (ECT(0)) and CE reports back (RFC 3168; RFC 8888 for video, ECN-Echo
    /// for TCP).
    pub ecn: bool,
    /// Coupled with the other flows of its group (RFC 8699); `None`: its controller alone.
    pub coupling: Option<Coupling>,
}

/// A validated scenario, ready to run.
#[derive(Debug, Clone)]
pub struct Scenario {
    pub name: String,
    pub duration: Duration,
    pub seed: u64,
    /// The path's hops in order (one for a `[path.forward]` scenario).
    pub hops: Vec<HopConfig>,
    pub flows: Vec<FlowConfig>,
}

/// Default frame rate.
pub const DEFAULT_FPS: f64 = 30.0;
/// Default media payload per packet.
pub const DEFAULT_PAYLOAD: Bytes = Bytes(1200);
/// Largest packet on the wire (one mahimahi delivery opportunity, an Ethernet MTU).
pub const MAX_PACKET: u64 = 1500;

/// Runs estimated to log more packets than this are refused by the command line unless asked
/// for (`--allow-large`): the log is streamed to disk (about 0.5 GB of Parquet), and the summary's
/// per-packet data (about 60 bytes a packet, [`rtcc_core::metrics::PacketStats`]) takes about
/// 3 GB, an eighth of the development machine's memory.
pub const MAX_ESTIMATED_PACKETS: f64 = 50e6;

/// The rate assumed for a flow on an unlimited link whose own rate is not fixed (a controller
/// could go far higher; this is for the estimate of a run's size only).
const UNBOUNDED_FLOW_RATE_BPS: f64 = 1e9;

impl Scenario {
    /// The span of the run's totals: from the first flow's start to the last one's stop (the whole
    /// run without flows).
    pub fn flow_span(&self) -> (Time, Time) {
        let start = self.flows.iter().map(|f| f.start).min();
        let stop = self.flows.iter().map(|f| f.stop).max();
        (
            start.unwrap_or(Time::ZERO),
            stop.unwrap_or(Time(self.duration.0)),
        )
    }

    /// An upper estimate of how many data packets a run sends (and logs): per flow, what its link
    /// can carry while it is active (a constant-rate flow's own rate if lower; 1 Gbit/s for a
    /// controlled flow on an unlimited link), in 1200-byte packets.
    pub fn estimated_packets(&self) -> f64 {
        self.flows
            .iter()
            .map(|f| {
                let secs = (f.stop - f.start).as_secs_f64();
                let link_bytes = self.data_capacity(f).bytes_between(f.start, f.stop);
                let (own_bytes, packet) = match f.kind {
                    FlowKind::Cbr { rate, packet_size } => {
                        (rate.bps() / 8.0 * secs, packet_size.0.max(1) as f64)
                    }
                    FlowKind::Audio { .. } => {
                        let (ptime, size) = f.kind.audio_packet().expect("an audio flow");
                        (size as f64 * secs / ptime.as_secs_f64(), size as f64)
                    }
                    _ => (f64::INFINITY, 1200.0),
                };
                let bytes = link_bytes.min(own_bytes);
                let bytes = if bytes.is_finite() {
                    bytes
                } else {
                    UNBOUNDED_FLOW_RATE_BPS / 8.0 * secs
                };
                bytes / packet
            })
            .sum()
    }

    /// Read and validate a TOML scenario file; relative file paths inside it are resolved
    /// against the file's folder.
    pub fn from_file(path: &Path) -> Result<Scenario, ScenarioError> {
        let source_name = path.display().to_string();
        let text = rtcc_core::net::capacity::read_input_file(path, "the scenario file").map_err(
            |message| ScenarioError {
                source_name: source_name.clone(),
                field: String::new(),
                message,
            },
        )?;
        let base = path.parent().unwrap_or(Path::new("."));
        let default_name = path.file_stem().map(|s| s.to_string_lossy().to_string());
        Self::from_toml_str(&text, base, &source_name, default_name)
    }

    pub fn from_toml_str(
        text: &str,
        base_dir: &Path,
        source_name: &str,
        default_name: Option<String>,
    ) -> Result<Scenario, ScenarioError> {
        Self::from_toml_str_with_registry(text, base_dir, source_name, default_name, cc::registry())
    }

    /// [`Scenario::from_toml_str`], with controllers looked up in `registry`.
    pub fn from_toml_str_with_registry(
        text: &str,
        base_dir: &Path,
        source_name: &str,
        default_name: Option<String>,
        registry: &Registry,
    ) -> Result<Scenario, ScenarioError> {
        let value: toml::Value = toml::from_str(text).map_err(|e| ScenarioError {
            source_name: source_name.into(),
            field: String::new(),
            message: format!("invalid TOML: {}", e.to_string().trim()),
        })?;
        let json = serde_json::to_value(value).map_err(|e| ScenarioError {
            source_name: source_name.into(),
            field: String::new(),
            message: e.to_string(),
        })?;
        Self::from_json_value(json, base_dir, source_name, default_name, registry)
    }

    pub fn from_json_str(
        text: &str,
        base_dir: &Path,
        source_name: &str,
    ) -> Result<Scenario, ScenarioError> {
        Self::from_json_str_with_registry(text, base_dir, source_name, cc::registry())
    }

    /// [`Scenario::from_json_str`], with controllers looked up in `registry`.
    pub fn from_json_str_with_registry(
        text: &str,
        base_dir: &Path,
        source_name: &str,
        registry: &Registry,
    ) -> Result<Scenario, ScenarioError> {
        let json: serde_json::Value = serde_json::from_str(text).map_err(|e| ScenarioError {
            source_name: source_name.into(),
            field: String::new(),
            message: format!("invalid JSON: {e}"),
        })?;
        Self::from_json_value(json, base_dir, source_name, None, registry)
    }

    fn from_json_value(
        json: serde_json::Value,
        base_dir: &Path,
        source_name: &str,
        default_name: Option<String>,
        registry: &Registry,
    ) -> Result<Scenario, ScenarioError> {
        let spec: ScenarioSpec = serde_path_to_error::deserialize(json).map_err(|e| {
            let field = e.path().to_string();
            ScenarioError {
                source_name: source_name.into(),
                field: if field == "." { String::new() } else { field },
                message: e.into_inner().to_string(),
            }
        })?;
        Self::from_spec_with_registry(spec, base_dir, source_name, default_name, registry)
    }

    /// Check every value and resolve files.
    pub fn from_spec(
        spec: ScenarioSpec,
        base_dir: &Path,
        source_name: &str,
        default_name: Option<String>,
    ) -> Result<Scenario, ScenarioError> {
        Self::from_spec_with_registry(spec, base_dir, source_name, default_name, cc::registry())
    }

    /// [`Scenario::from_spec`], with controllers looked up in `registry`.
    pub fn from_spec_with_registry(
        spec: ScenarioSpec,
        base_dir: &Path,
        source_name: &str,
        default_name: Option<String>,
        registry: &Registry,
    ) -> Result<Scenario, ScenarioError> {
        let err = |field: &str, message: String| ScenarioError {
            source_name: source_name.into(),
            field: field.into(),
            message,
        };
        if spec.duration.0 == 0 {
            return Err(err("duration", "must be longer than 0s".into()));
        }
        let duration = spec.duration;
        let hops = resolve_path(&spec.path, base_dir, duration).map_err(|(f, m)| err(&f, m))?;
        let hops_listed = spec.path.hops.is_some();
        if spec.flows.is_empty() {
            return Err(err(
                "flows",
                "at least one flow is needed ([[flows]] with a controller)".into(),
            ));
        }
        let mut flows = Vec::new();
        // Flow groups of the validation builds, so a group's flows must agree on its algorithm.
        let validation_groups = cc::coupled::CouplingGroups::default();
        for (i, f) in spec.flows.into_iter().enumerate() {
            let at = |field: &str| format!("flows[{i}].{field}");
            let name = f.name.clone().unwrap_or_else(|| format!("flow{i}"));
            if flows.iter().any(|g: &FlowConfig| g.name == name) {
                return Err(err(
                    &at("name"),
                    format!("{name:?} is used by two flows; flow names must be unique"),
                ));
            }
            if let Some(periods) = &f.active {
                if f.start.is_some() || f.stop.is_some() {
                    return Err(err(
                        &at("active"),
                        "give either an active schedule or start/stop, not both".into(),
                    ));
                }
                if periods.is_empty() {
                    return Err(err(&at("active"), "needs at least one period".into()));
                }
                for (k, w) in periods.iter().enumerate() {
                    if w.0 >= w.1 || (k > 0 && periods[k - 1].1 >= w.0) {
                        return Err(err(
                            &at(&format!("active[{k}]")),
                            format!(
                                "periods must be [from, to] with from < to, in order and apart; got [{}, {}]",
                                w.0, w.1
                            ),
                        ));
                    }
                }
            }
            let start = f
                .active
                .as_ref()
                .and_then(|p| p.first().map(|w| w.0))
                .unwrap_or(f.start.unwrap_or(Duration::ZERO));
            let stop = f
                .active
                .as_ref()
                .and_then(|p| p.last().map(|w| w.1))
                .unwrap_or(f.stop.unwrap_or(duration));
            if stop > duration {
                return Err(err(
                    &at("stop"),
                    format!("{stop} is after the end of the run ({duration})"),
                ));
            }
            if start >= stop {
                return Err(err(
                    &at("start"),
                    format!("{start} must be before the flow's stop ({stop})"),
                ));
            }
            let fps = f.fps.unwrap_or(DEFAULT_FPS);
            if !(fps > 0.0 && fps <= 1000.0) {
                return Err(err(
                    &at("fps"),
                    format!("{fps} is not a frame rate between 0 and 1000"),
                ));
            }
            let frame_jitter = f.frame_jitter.unwrap_or(Duration::ZERO);
            if frame_jitter.as_secs_f64() >= 1.0 / fps {
                return Err(err(
                    &at("frame_jitter"),
                    format!(
                        "{frame_jitter} must be shorter than the frame interval ({:.3}ms)",
                        1e3 / fps
                    ),
                ));
            }
            let frame_jitter_model = match &f.frame_jitter_model {
                Some(m) => JitterModel::parse(m).map_err(|e| err(&at("frame_jitter_model"), e))?,
                None => JitterModel::Grid,
            };
            let kind = resolve_kind(&f, &at).map_err(|(field, m)| err(&field, m))?;
            let dash = match kind {
                FlowKind::Dash => Some(resolve_dash(&f, &at).map_err(|(field, m)| err(&field, m))?),
                _ => None,
            };
            let encoder = match &f.encoder {
                None => EncoderConfig::Ideal,
                Some(v) => EncoderConfig::from_value(v, base_dir).map_err(|(sub, m)| {
                    let field = if sub.is_empty() {
                        at("encoder")
                    } else {
                        at(&format!("encoder.{sub}"))
                    };
                    err(&field, m)
                })?,
            };
            let payload = f.payload.unwrap_or(DEFAULT_PAYLOAD);
            // An audio flow's overhead is its own (checked in resolve_kind), not video's.
            let overhead = match kind {
                FlowKind::Audio { .. } => Bytes(0),
                _ => f.overhead.unwrap_or(Bytes(0)),
            };
            if payload.0 == 0 || payload.0 + overhead.0 > MAX_PACKET {
                return Err(err(
                    &at("payload"),
                    format!("payload {payload} + overhead {overhead} must be between 1B and {MAX_PACKET}B"),
                ));
            }
            let padding_size = f.padding_size.unwrap_or(Bytes(1200));
            if padding_size.0 == 0 || padding_size.0 > MAX_PACKET {
                return Err(err(
                    &at("padding_size"),
                    format!("{padding_size} must be between 1B and {MAX_PACKET}B"),
                ));
            }
            let controller = match (kind, &f.controller) {
                // Neither has a controller: "cbr" says so (an audio flow is constant-rate too).
                (FlowKind::Cbr { .. } | FlowKind::Audio { .. }, _) => "cbr".to_string(),
                (_, Some(c)) => c.clone(),
                (_, None) => {
                    return Err(err(
                        &at("controller"),
                        format!(
                            "a video, tcp or dash flow needs a controller; valid controllers: {}",
                            registry.names().collect::<Vec<_>>().join(", ")
                        ),
                    ));
                }
            };
            let preferred = match kind {
                FlowKind::Video
                | FlowKind::Tcp { .. }
                | FlowKind::ShortTcp { .. }
                | FlowKind::Dash => {
                    // A hand-built `coupled` controller asks for its inner controller's feedback.
                    let inner = match (controller.as_str(), f.params.get("inner")) {
                        ("coupled", Some(toml::Value::String(inner))) => inner.clone(),
                        _ => controller.clone(),
                    };
                    registry
                        .lookup(&inner)
                        .map_err(|e| err(&at("controller"), e.to_string()))?
                        .feedback
                }
                FlowKind::Cbr { .. } | FlowKind::Audio { .. } => FeedbackPolicy::default(),
            };
            let feedback = f.feedback.unwrap_or(preferred);
            // Only video flows take `feedback` (KIND_FIELDS), and only their receivers send
            // rate reports; other receivers ignore a controller's wish for them.
            feedback.check().map_err(|(key, problem)| {
                let field = if key.is_empty() {
                    at("feedback")
                } else {
                    at(&format!("feedback.{key}"))
                };
                err(&field, problem.into())
            })?;
            let reverse = match f.direction.as_deref() {
                None | Some("forward") => false,
                Some("reverse") => true,
                Some(other) => {
                    return Err(err(
                        &at("direction"),
                        format!("unknown direction {other:?}; valid: forward, reverse"),
                    ))
                }
            };
            let flow_hops = match &f.hops {
                None => 0..hops.len(),
                Some(_) if !hops_listed => {
                    return Err(err(
                        &at("hops"),
                        "names hops of [[path.hops]]; this scenario has one link pair ([path.forward]), which every flow crosses".into(),
                    ))
                }
                Some(names) => {
                    resolve_flow_hops(names, &hops, &at("hops")).map_err(|(f, m)| err(&f, m))?
                }
            };
            let coupling = match &f.coupling {
                None => None,
                Some(c) => {
                    let priority = c.priority.unwrap_or(1.0);
                    if !(priority.is_finite() && priority > 0.0) {
                        return Err(err(
                            &at("coupling.priority"),
                            format!("must be a positive number, got {priority}"),
                        ));
                    }
                    if c.group.is_empty() {
                        return Err(err(
                            &at("coupling.group"),
                            "must name the flow group (flows of one sender sharing a bottleneck)"
                                .into(),
                        ));
                    }
                    Some(Coupling {
                        group: c.group.clone(),
                        priority,
                        algorithm: c.algorithm.unwrap_or_default(),
                    })
                }
            };
            let ecn = match &f.ecn {
                None => false,
                Some(serde_json::Value::Bool(b)) => *b,
                Some(other) => {
                    return Err(err(
                        &at("ecn"),
                        format!("expected true or false, found {other}"),
                    ))
                }
            };
            let r = f.recovery.clone().unwrap_or_default();
            if r.fec.is_some_and(|k| !(1..=16).contains(&k)) {
                return Err(err(
                    &at("recovery.fec"),
                    "protects 1 to 16 media packets per parity packet".into(),
                ));
            }
            if r.min_rate.is_some() {
                return Err(err(
                    &at("recovery.min_rate"),
                    "the floor of the rate is the flow's media range now: write min_bitrate = \"30kbps\" on the flow".into(),
                ));
            }
            let defaults = Recovery::default();
            let recovery = Recovery {
                nack: r.nack.unwrap_or(defaults.nack),
                fec_group: r.fec,
                keyframe_requests: f.keyframe_requests.unwrap_or(true),
                rto: r.rto.unwrap_or(defaults.rto),
                playout_delay: r.playout_delay.unwrap_or(defaults.playout_delay),
                nack_delay: r.nack_delay.unwrap_or(defaults.nack_delay),
            };
            let frame_ack = match &f.frame_ack {
                None => FrameAckConfig::default(),
                Some(_) if kind != FlowKind::Video => {
                    return Err(err(
                        &at("frame_ack"),
                        "frame acknowledgements are sent by a video flow's receiver".into(),
                    ))
                }
                Some(spec) => spec
                    .resolve(&at("frame_ack"))
                    .map_err(|(field, m)| err(&field, m))?,
            };
            if f.active.is_some()
                && matches!(kind, FlowKind::Tcp { .. } | FlowKind::ShortTcp { .. })
            {
                return Err(err(
                    &at("active"),
                    "a TCP flow pauses through its application: app = { model = \"onoff\", on = \"2s\", off = \"3s\" }; active schedules are for video, cbr and audio flows".into(),
                ));
            }
            if f.active.is_some() && kind == FlowKind::Dash {
                return Err(err(
                    &at("active"),
                    "a DASH session runs from start to stop (its player pauses by itself); active schedules are for video, cbr and audio flows".into(),
                ));
            }
            let media = MediaRange {
                min_bitrate: f.min_bitrate.unwrap_or(DEFAULT_MIN_BITRATE),
                start_bitrate: f.start_bitrate,
                max_bitrate: f.max_bitrate,
                // A source slower than the default lowest rate is coded at its own rate.
                min_fps: f.min_fps.unwrap_or(DEFAULT_MIN_FPS.min(fps)),
            };
            media.validate().map_err(|(field, m)| err(&at(field), m))?;
            if media.min_fps > fps {
                return Err(err(
                    &at("min_fps"),
                    format!(
                        "{} is above the flow's frame rate fps = {fps}",
                        media.min_fps
                    ),
                ));
            }
            let degradation = match &f.degradation {
                None => Preference::Balanced,
                Some(p) => Preference::parse(p).map_err(|e| err(&at("degradation"), e))?,
            };
            let active = match &f.active {
                Some(p) => p.iter().map(|w| (Time(w.0 .0), Time(w.1 .0))).collect(),
                None => vec![(Time(start.0), Time(stop.0))],
            };
            let flow = FlowConfig {
                name,
                kind,
                controller,
                params: f.params,
                start: Time(start.0),
                stop: Time(stop.0),
                fps,
                frame_jitter,
                frame_jitter_model,
                encoder,
                keyframe_requests: f.keyframe_requests.unwrap_or(true),
                payload,
                overhead,
                padding_size,
                extra_delay: f.extra_delay.unwrap_or(Duration::ZERO),
                clock_offset: f.clock_offset.unwrap_or(Duration::ZERO),
                feedback,
                recovery,
                frame_ack,
                media,
                degradation,
                pushback: f.pushback.unwrap_or(true),
                frame_dropper: f.frame_dropper.unwrap_or(true),
                reverse,
                hops: flow_hops,
                active,
                dash,
                ecn,
                coupling,
            };
            // Build the controller once now so that bad parameters fail before the run.
            if !kind.is_unadapted() {
                let ctx = flow.context(
                    Some(Arc::new(path_capacity(&hops, &flow, false))),
                    Some(&validation_groups),
                );
                registry
                    .create(&flow.controller, &flow.params, &ctx)
                    .map_err(|e| {
                        let field = match &e {
                            cc::ControllerError::UnknownParam { param, .. } => {
                                at(&format!("params.{param}"))
                            }
                            _ => at("params"),
                        };
                        err(&field, e.to_string())
                    })?;
                if flow.coupling.is_some() {
                    let (name, params) = flow.controller_spec();
                    registry
                        .create(&name, &params, &ctx)
                        .map_err(|e| err(&at("coupling"), e.to_string()))?;
                }
            }
            flows.push(flow);
        }
        Ok(Scenario {
            name: spec
                .name
                .or(default_name)
                .unwrap_or_else(|| "scenario".into()),
            duration,
            seed: spec.seed.unwrap_or(1),
            hops,
            flows,
        })
    }
}

/// The capacity along `flow`'s hops in one direction: their forward links (`reverse_links`
/// false) or their reverse links.
fn path_capacity(hops: &[HopConfig], flow: &FlowConfig, reverse_links: bool) -> PathCapacity {
    PathCapacity::new(
        hops[flow.hops.clone()]
            .iter()
            .map(|h| match reverse_links {
                false => h.forward.capacity.clone(),
                true => h.reverse.capacity.clone(),
            })
            .collect(),
    )
}

impl Scenario {
    /// Whether the path has more than one hop.
    pub fn is_multi_hop(&self) -> bool {
        self.hops.len() > 1
    }

    /// What `flow`'s data can get through its hops (the tightest of its links at each instant,
    /// [`PathCapacity`]): over their forward links, or their reverse links for a `reverse`
    /// flow.
    pub fn data_capacity(&self, flow: &FlowConfig) -> PathCapacity {
        path_capacity(&self.hops, flow, flow.reverse)
    }

    /// The empty per-packet statistics of `flow`: its interval, the run's span, the propagation
    /// its queuing delays leave out, and each packet's transit kept for audio's jitter.
    pub fn packet_stats(&self, flow: &FlowConfig) -> PacketStats {
        let mut stats = PacketStats::new(
            flow.start,
            flow.stop,
            self.flow_span(),
            Time(self.duration.0),
        )
        .keeping_transits(flow.kind.audio_packet().is_some());
        stats.set_propagation_between_links(self.propagation_between_links(flow));
        stats
    }

    /// From the first start to the last stop of the flows that cross hop `h` (`None` if none
    /// does): the span over which the hop's utilisation counts.
    pub fn hop_span(&self, h: usize) -> Option<(Time, Time)> {
        let crossing = self.flows.iter().filter(|f| f.hops.contains(&h));
        let start = crossing.clone().map(|f| f.start).min();
        let stop = crossing.map(|f| f.stop).max();
        start.zip(stop)
    }

    /// What `flow`'s controller is told of the path ([`ControllerContext::capacity`], for
    /// reference controllers such as `oracle`): the links its data crosses, tightest at each
    /// instant (the reverse links for a `direction = "reverse"` flow; until paths had hops,
    /// every flow was told the forward link's).
    pub fn controller_capacity(&self, flow: &FlowConfig) -> PathCapacity {
        self.data_capacity(flow)
    }

    /// The propagation delay `flow`'s data takes between its first link and its last: the
    /// delays of the links it crosses before the last (zero on one link pair).
    pub fn propagation_between_links(&self, flow: &FlowConfig) -> Duration {
        let hops = &self.hops[flow.hops.clone()];
        // Reverse links are crossed last hop first, so the first hop's is the last crossed.
        let crossed_before_last = match flow.reverse {
            true => &hops[1..],
            false => &hops[..hops.len() - 1],
        };
        crossed_before_last
            .iter()
            .map(|h| match flow.reverse {
                true => h.reverse.delay,
                false => h.forward.delay,
            })
            .fold(Duration::ZERO, |a, d| a + d)
    }

    /// What `flow`'s feedback can get through its hops (the links opposite its data's).
    pub fn feedback_capacity(&self, flow: &FlowConfig) -> PathCapacity {
        path_capacity(&self.hops, flow, !flow.reverse)
    }

    /// The forward links of every hop: the run's totals measure against their tightest.
    pub fn forward_capacity(&self) -> PathCapacity {
        PathCapacity::new(
            self.hops
                .iter()
                .map(|h| h.forward.capacity.clone())
                .collect(),
        )
    }

    /// The link pair of a one-hop scenario, or an error naming `what` cannot take several hops
    /// (the live transport emulates one link pair).
    pub fn single_hop(&self, what: &str) -> Result<&HopConfig, String> {
        match self.hops.as_slice() {
            [only] => Ok(only),
            hops => Err(format!(
                "{what} emulates one link pair ([path.forward] and [path.reverse]); this scenario's path has {} hops ([[path.hops]]: {}), which only the simulator runs",
                hops.len(),
                hops.iter().map(|h| h.name.as_str()).collect::<Vec<_>>().join(", ")
            )),
        }
    }
}

impl FlowConfig {
    /// What the flow's controller may know when it is created; `coupling` holds the run's flow
    /// groups (`None` where flows cannot share them).
    pub fn context(
        &self,
        capacity: Option<Arc<dyn cc::CapacityView>>,
        coupling: Option<&cc::coupled::CouplingGroups>,
    ) -> ControllerContext {
        ControllerContext {
            now: self.start,
            fps: self.fps,
            max_payload: self.payload,
            media: self.media,
            capacity,
            coupling: coupling.cloned(),
        }
    }

    /// The controller to build and its parameters: the flow's own, or for a coupled flow
    /// `coupled` wrapping it (`inner`, `inner_params`, `group`, `priority`, `algorithm`).
    pub fn controller_spec(&self) -> (String, Params) {
        let Some(c) = &self.coupling else {
            return (self.controller.clone(), self.params.clone());
        };
        let mut params = Params::new();
        params.insert("inner".into(), toml::Value::String(self.controller.clone()));
        params.insert(
            "inner_params".into(),
            toml::Value::Table(self.params.clone()),
        );
        params.insert("group".into(), toml::Value::String(c.group.clone()));
        params.insert("priority".into(), toml::Value::Float(c.priority));
        let algorithm = match c.algorithm {
            cc::coupled::Algorithm::Active => "active",
            cc::coupled::Algorithm::Conservative => "conservative",
        };
        params.insert("algorithm".into(), toml::Value::String(algorithm.into()));
        ("coupled".into(), params)
    }
}

/// Fields that only some kinds of flow take (the others are common to all).
const KIND_FIELDS: &[(&str, &[&str])] = &[
    (
        "video",
        &[
            "controller",
            "params",
            "fps",
            "frame_jitter",
            "frame_jitter_model",
            "encoder",
            "keyframe_requests",
            "payload",
            "overhead",
            "padding_size",
            "feedback",
            "recovery",
            "min_bitrate",
            "start_bitrate",
            "max_bitrate",
            "min_fps",
            "degradation",
            "pushback",
            "frame_dropper",
            "ecn",
            "coupling",
        ],
    ),
    ("cbr", &["rate", "packet_size", "ecn"]),
    ("audio", &["rate", "ptime", "overhead", "ecn"]),
    (
        "tcp",
        &[
            "controller",
            "params",
            "packet_size",
            "app",
            "delayed_ack",
            "slow_start_after_idle",
            "ecn",
        ],
    ),
    (
        "dash",
        &[
            "controller",
            "params",
            "packet_size",
            "delayed_ack",
            "slow_start_after_idle",
            "http",
            "abr",
            "segments",
            "segment_duration",
            "ladder",
            "buffer_target",
            "segment_sizes",
            "line_rate",
        ],
    ),
];

/// Which flow kind, with its own fields checked; fields of other kinds are rejected by name.
fn resolve_kind(f: &FlowSpec, at: &dyn Fn(&str) -> String) -> Result<FlowKind, (String, String)> {
    let kind = f.kind.as_deref().unwrap_or("video");
    let Some((_, own)) = KIND_FIELDS.iter().find(|(k, _)| *k == kind) else {
        return Err((
            at("kind"),
            format!("unknown flow kind {kind:?}; valid kinds: video, cbr, audio, tcp, dash"),
        ));
    };
    let given = [
        ("controller", f.controller.is_some()),
        ("params", !f.params.is_empty()),
        ("fps", f.fps.is_some()),
        ("frame_jitter", f.frame_jitter.is_some()),
        ("frame_jitter_model", f.frame_jitter_model.is_some()),
        ("encoder", f.encoder.is_some()),
        ("keyframe_requests", f.keyframe_requests.is_some()),
        ("payload", f.payload.is_some()),
        ("overhead", f.overhead.is_some()),
        ("padding_size", f.padding_size.is_some()),
        ("feedback", f.feedback.is_some()),
        ("recovery", f.recovery.is_some()),
        ("min_bitrate", f.min_bitrate.is_some()),
        ("start_bitrate", f.start_bitrate.is_some()),
        ("max_bitrate", f.max_bitrate.is_some()),
        ("min_fps", f.min_fps.is_some()),
        ("degradation", f.degradation.is_some()),
        ("pushback", f.pushback.is_some()),
        ("frame_dropper", f.frame_dropper.is_some()),
        ("rate", f.rate.is_some()),
        ("ptime", f.ptime.is_some()),
        ("packet_size", f.packet_size.is_some()),
        ("app", f.app.is_some()),
        ("delayed_ack", f.delayed_ack.is_some()),
        ("slow_start_after_idle", f.slow_start_after_idle.is_some()),
        ("http", f.http.is_some()),
        ("abr", f.abr.is_some()),
        ("segments", f.segments.is_some()),
        ("segment_duration", f.segment_duration.is_some()),
        ("ladder", f.ladder.is_some()),
        ("buffer_target", f.buffer_target.is_some()),
        ("segment_sizes", f.segment_sizes.is_some()),
        ("line_rate", f.line_rate.is_some()),
        ("ecn", f.ecn.is_some()),
        ("coupling", f.coupling.is_some()),
    ];
    if let Some((field, _)) = given.iter().find(|(name, g)| *g && !own.contains(name)) {
        let owners: Vec<&str> = KIND_FIELDS
            .iter()
            .filter(|(_, fs)| fs.contains(field))
            .map(|(k, _)| *k)
            .collect();
        return Err((
            at(field),
            format!(
                "a {kind} flow does not take this field (only {} flows do)",
                owners.join(" and ")
            ),
        ));
    }
    let packet_size = |default: u64| -> Result<Bytes, (String, String)> {
        let size = f.packet_size.unwrap_or(Bytes(default));
        if size.0 == 0 || size.0 > MAX_PACKET {
            return Err((
                at("packet_size"),
                format!("{size} must be between 1B and {MAX_PACKET}B"),
            ));
        }
        Ok(size)
    };
    match kind {
        "video" => Ok(FlowKind::Video),
        "cbr" => {
            let rate = f.rate.ok_or_else(|| {
                (
                    at("rate"),
                    "a cbr flow needs a rate, e.g. rate = \"5Mbps\"".to_string(),
                )
            })?;
            if rate.bps() <= 0.0 {
                return Err((at("rate"), "must be a positive rate".into()));
            }
            let packet_size = packet_size(MAX_PACKET)?;
            // The simulator's clock ticks in nanoseconds: a packet interval that rounds to 0
            // would send without time passing, for ever.
            if rate.transmit_time(packet_size.0) < Duration(1) {
                return Err((
                    at("rate"),
                    format!(
                        "{rate} sends {}-byte packets less than 1 ns apart; use larger packets or a lower rate",
                        packet_size.0
                    ),
                ));
            }
            Ok(FlowKind::Cbr { rate, packet_size })
        }
        "audio" => resolve_audio(f, at),
        "dash" => {
            packet_size(MAX_PACKET)?;
            Ok(FlowKind::Dash)
        }
        _ => {
            let delayed_ack = f.delayed_ack.unwrap_or(false);
            let mss = packet_size(MAX_PACKET)?;
            match resolve_app(f.app.as_ref()).map_err(|(sub, m)| {
                let field = if sub.is_empty() {
                    at("app")
                } else {
                    at(&format!("app.{sub}"))
                };
                (field, m)
            })? {
                TcpApp::Sender(app) => Ok(FlowKind::Tcp {
                    app,
                    delayed_ack,
                    mss,
                    slow_start_after_idle: f.slow_start_after_idle.unwrap_or(false),
                }),
                TcpApp::Short(config) => {
                    if f.slow_start_after_idle.is_some() {
                        return Err((
                            at("slow_start_after_idle"),
                            "a short flow opens a fresh connection for each download (slow start from the initial window); remove this field".into(),
                        ));
                    }
                    if mss.0 <= rtcc_core::tcp::TCP_IP_HEADER as u64 {
                        return Err((
                            at("packet_size"),
                            format!(
                                "{mss} leaves no room for data after 52 bytes of TCP/IP headers"
                            ),
                        ));
                    }
                    Ok(FlowKind::ShortTcp {
                        config,
                        delayed_ack,
                        mss,
                    })
                }
            }
        }
    }
}

/// An Opus-like default: 32 kbit/s of payload (RFC 7587 §3.1.1 puts fullband speech at
/// 28–40 kbit/s) in 20 ms packets (Opus's and WebRTC's default frame).
pub const DEFAULT_AUDIO_RATE_BPS: f64 = 32_000.0;
pub const DEFAULT_PTIME: Duration = Duration(20_000_000);
/// RTP (12), UDP (8) and IPv4 (20) headers of an audio packet.
pub const DEFAULT_AUDIO_OVERHEAD: Bytes = Bytes(40);

/// Payload bytes per audio packet: `rate · ptime / 8`, rounded to whole bytes.
fn audio_payload(rate: Rate, ptime: Duration) -> u64 {
    (rate.bps() * ptime.as_secs_f64() / 8.0).round() as u64
}

/// An `audio` flow: `rate` of payload in one packet per `ptime`, plus `overhead` bytes.
fn resolve_audio(f: &FlowSpec, at: &dyn Fn(&str) -> String) -> Result<FlowKind, (String, String)> {
    let rate = f.rate.unwrap_or(Rate(DEFAULT_AUDIO_RATE_BPS));
    if !(rate.bps() > 0.0 && rate.bps().is_finite()) {
        return Err((
            at("rate"),
            format!("{rate} must be a positive payload rate, e.g. \"32kbps\""),
        ));
    }
    let ptime = f.ptime.unwrap_or(DEFAULT_PTIME);
    if ptime < Duration::from_millis(1) || ptime > Duration::from_millis(1000) {
        return Err((
            at("ptime"),
            format!(
                "{ptime} is not a packet time between 1ms and 1000ms (audio codecs use 10-120ms)"
            ),
        ));
    }
    let overhead = f.overhead.unwrap_or(DEFAULT_AUDIO_OVERHEAD);
    let payload = audio_payload(rate, ptime);
    if payload == 0 {
        return Err((
            at("rate"),
            format!("{rate} carries less than one byte per {ptime} packet"),
        ));
    }
    if payload + overhead.0 > MAX_PACKET {
        return Err((
            at("rate"),
            format!("{rate} in {ptime} packets is {payload}B of payload, + {overhead} of headers, over {MAX_PACKET}B: lower the rate or the ptime"),
        ));
    }
    Ok(FlowKind::Audio {
        rate,
        ptime,
        overhead,
    })
}

/// The session of a `dash` flow, every field checked.
fn resolve_dash(f: &FlowSpec, at: &dyn Fn(&str) -> String) -> Result<DashConfig, (String, String)> {
    let defaults = DashConfig::default();
    let http = match &f.http {
        None => defaults.http,
        Some(h) => HttpVersion::parse(h).map_err(|m| (at("http"), m))?,
    };
    let abr = match &f.abr {
        None => defaults.abr,
        Some(a) => AbrKind::parse(a).map_err(|m| (at("abr"), m))?,
    };
    let segments = match f.segments {
        None => defaults.segments,
        Some(n) if (1..=100_000).contains(&n) => n as usize,
        Some(n) => return Err((at("segments"), format!("{n} is not between 1 and 100000"))),
    };
    let segment_duration = f.segment_duration.unwrap_or(defaults.segment_duration);
    if segment_duration < Duration::from_millis(100)
        || segment_duration > Duration::from_secs_f64(60.0)
    {
        return Err((
            at("segment_duration"),
            format!("{segment_duration} is not between 100ms and 60s"),
        ));
    }
    let ladder_bps = match &f.ladder {
        None => defaults.ladder_bps.clone(),
        Some(rates) => {
            if rates.is_empty() {
                return Err((
                    at("ladder"),
                    "needs at least one rate, e.g. [\"1Mbps\", \"5Mbps\"]".into(),
                ));
            }
            for (i, r) in rates.iter().enumerate() {
                if r.bps().is_nan() || r.bps() <= 0.0 {
                    return Err((
                        at(&format!("ladder[{i}]")),
                        format!("{r} must be a positive rate"),
                    ));
                }
                if i > 0 && r.bps() <= rates[i - 1].bps() {
                    return Err((
                        at(&format!("ladder[{i}]")),
                        format!(
                            "{r} is not above {}: the ladder goes up, lowest rung first",
                            rates[i - 1]
                        ),
                    ));
                }
            }
            if rates.len() > u16::MAX as usize {
                return Err((at("ladder"), "too many rungs".into()));
            }
            rates.iter().map(|r| r.bps()).collect()
        }
    };
    let buffer = resolve_buffer_target(f.buffer_target.as_ref()).map_err(|(sub, m)| {
        let field = if sub.is_empty() {
            at("buffer_target")
        } else {
            at(&format!("buffer_target.{sub}"))
        };
        (field, m)
    })?;
    let segment_size_scale = match &f.segment_sizes {
        None => 1.0,
        Some(serde_json::Value::String(s)) if s == "nominal" => 1.0,
        Some(v) => match v.as_f64() {
            Some(x) if x > 0.0 && x <= 10.0 => x,
            _ => {
                return Err((
                    at("segment_sizes"),
                    format!("expected \"nominal\" (bitrate x duration) or a scale of it between 0 and 10 (e.g. 0.9), got {v}"),
                ))
            }
        },
    };
    let line_rate = match &f.line_rate {
        None => defaults.line_rate,
        Some(serde_json::Value::String(s)) if s == "unlimited" => None,
        Some(serde_json::Value::String(s)) => {
            let r = Rate::parse(s).map_err(|e| (at("line_rate"), e.to_string()))?;
            if r.bps().is_nan() || r.bps() < 1e6 {
                return Err((at("line_rate"), format!("{r} is below 1Mbps")));
            }
            Some(r)
        }
        Some(other) => {
            return Err((
                at("line_rate"),
                format!("expected a rate (\"1Gbps\") or \"unlimited\", got {other}"),
            ))
        }
    };
    let cfg = DashConfig {
        http,
        abr,
        segments,
        segment_duration,
        ladder_bps,
        buffer,
        segment_size_scale,
        packet_size: f.packet_size.map_or(MAX_PACKET, |b| b.0) as u32,
        delayed_ack: f.delayed_ack.unwrap_or(defaults.delayed_ack),
        slow_start_after_idle: f
            .slow_start_after_idle
            .unwrap_or(defaults.slow_start_after_idle),
        line_rate,
    };
    if cfg.packet_size <= rtcc_core::tcp::TCP_IP_HEADER + 100 {
        return Err((
            at("packet_size"),
            format!(
                "{}B leaves no room for data after 52 bytes of TCP/IP headers",
                cfg.packet_size
            ),
        ));
    }
    let largest = (0..cfg.ladder_bps.len())
        .map(|q| cfg.segment_bytes(0, q))
        .max()
        .unwrap_or(0);
    if largest > u32::MAX as u64 / 2 {
        return Err((at("ladder"), "a segment would be larger than 2 GB".into()));
    }
    Ok(cfg)
}

/// `buffer_target = "60s"` (every target) or `{ stable, top_quality, top_quality_long_form,
/// long_form_threshold }`, each optional. Errors name the sub-field.
fn resolve_buffer_target(v: Option<&serde_json::Value>) -> Result<BufferTargets, (String, String)> {
    let mut t = BufferTargets::default();
    let Some(v) = v else {
        return Ok(t);
    };
    let dur = |sub: &str, x: &serde_json::Value| -> Result<Duration, (String, String)> {
        let s = x.as_str().ok_or_else(|| {
            (
                sub.to_string(),
                format!("expected a duration like \"12s\", got {x}"),
            )
        })?;
        let d = Duration::parse(s).map_err(|e| (sub.to_string(), e.to_string()))?;
        if d.0 == 0 {
            return Err((sub.to_string(), "must be longer than 0s".into()));
        }
        Ok(d)
    };
    match v {
        serde_json::Value::String(_) => {
            let d = dur("", v)?;
            t.stable = d;
            t.top_quality = d;
            t.top_quality_long_form = d;
        }
        serde_json::Value::Object(o) => {
            for (k, x) in o {
                let d = dur(k, x)?;
                match k.as_str() {
                    "stable" => t.stable = d,
                    "top_quality" => t.top_quality = d,
                    "top_quality_long_form" => t.top_quality_long_form = d,
                    "long_form_threshold" => t.long_form_threshold = d,
                    _ => {
                        return Err((
                            k.clone(),
                            "unknown field; buffer_target takes stable, top_quality, top_quality_long_form, long_form_threshold".into(),
                        ))
                    }
                }
            }
        }
        other => {
            return Err((
                String::new(),
                format!("expected a duration (\"60s\") or a table {{ stable = \"12s\", top_quality = \"30s\", top_quality_long_form = \"60s\", long_form_threshold = \"600s\" }}, got {other}"),
            ))
        }
    }
    Ok(t)
}

/// What a `tcp` flow's application is: one the TCP sender runs itself, or short flows'
/// downloads and idle periods, which their own endpoint drives.
enum TcpApp {
    Sender(App),
    Short(ShortFlowConfig),
}

/// `{ model = "bulk" }`, `{ model = "onoff", on = "1s", off = "1s" }`, `{ model = "finite", size = "1MB" }`,
/// `{ model = "short", min_size, max_size, mean_idle, initial }`. Errors give the bad sub-field
/// (empty for the table itself).
fn resolve_app(v: Option<&serde_json::Value>) -> Result<TcpApp, (String, String)> {
    const ALLOWED: &str = "expected { model = \"bulk\" }, { model = \"onoff\", on = \"1s\", off = \"1s\" }, { model = \"finite\", size = \"1MB\" } or { model = \"short\" }";
    let whole = |m: String| (String::new(), m);
    let Some(v) = v else {
        return Ok(TcpApp::Sender(App::Backlogged));
    };
    let obj = v
        .as_object()
        .ok_or_else(|| whole(format!("{ALLOWED}, got {v}")))?;
    let get = |k: &str| obj.get(k).and_then(|x| x.as_str());
    let unknown = |allowed: &[&str]| obj.keys().find(|k| !allowed.contains(&k.as_str())).cloned();
    let duration = |k: &str| -> Result<Duration, (String, String)> {
        Duration::parse(
            get(k).ok_or_else(|| whole(format!("the onoff model needs {k} (a duration)")))?,
        )
        .map_err(|e| whole(e.to_string()))
    };
    match get("model") {
        Some("bulk") => match unknown(&["model"]) {
            Some(k) => Err(whole(format!("the bulk model takes no field {k:?}"))),
            None => Ok(TcpApp::Sender(App::Backlogged)),
        },
        Some("onoff") => {
            if let Some(k) = unknown(&["model", "on", "off"]) {
                return Err(whole(format!(
                    "unknown field {k:?}; the onoff model takes on, off"
                )));
            }
            let (on, off) = (duration("on")?, duration("off")?);
            if on.0 == 0 {
                return Err(whole("on must be longer than 0s".into()));
            }
            Ok(TcpApp::Sender(App::OnOff { on, off }))
        }
        Some("finite") => {
            if let Some(k) = unknown(&["model", "size"]) {
                return Err(whole(format!(
                    "unknown field {k:?}; the finite model takes size"
                )));
            }
            let size = Bytes::parse(
                get("size")
                    .ok_or_else(|| whole("the finite model needs size (e.g. \"1MB\")".into()))?,
            )
            .map_err(|e| whole(e.to_string()))?;
            if size.0 == 0 {
                return Err(whole("size must be more than 0B".into()));
            }
            Ok(TcpApp::Sender(App::Finite { bytes: size.0 }))
        }
        Some("short") => resolve_short(obj).map(TcpApp::Short),
        _ => Err(whole(ALLOWED.into())),
    }
}

/// `app = { model = "short", min_size = "30KB", max_size = "50KB", mean_idle = "10s",
/// initial = "on" }`, every field optional (RFC 8868's values by default).
fn resolve_short(
    obj: &serde_json::Map<String, serde_json::Value>,
) -> Result<ShortFlowConfig, (String, String)> {
    const FIELDS: [&str; 5] = ["model", "min_size", "max_size", "mean_idle", "initial"];
    if let Some(k) = obj.keys().find(|k| !FIELDS.contains(&k.as_str())) {
        return Err((
            k.clone(),
            "unknown field; the short model takes min_size, max_size, mean_idle, initial".into(),
        ));
    }
    let text = |k: &str| -> Result<Option<&str>, (String, String)> {
        match obj.get(k) {
            None => Ok(None),
            Some(x) => x
                .as_str()
                .map(Some)
                .ok_or_else(|| (k.to_string(), format!("expected a string, got {x}"))),
        }
    };
    let size = |k: &str, default: u64| -> Result<u64, (String, String)> {
        match text(k)? {
            None => Ok(default),
            Some(s) => {
                let b = Bytes::parse(s).map_err(|e| (k.to_string(), e.to_string()))?;
                if b.0 == 0 {
                    return Err((k.to_string(), "must be more than 0B".into()));
                }
                Ok(b.0)
            }
        }
    };
    let defaults = ShortFlowConfig::default();
    let min_size = size("min_size", defaults.min_size)?;
    let max_size = size("max_size", defaults.max_size)?;
    if max_size < min_size {
        return Err((
            "max_size".into(),
            format!("{max_size}B is below min_size ({min_size}B)"),
        ));
    }
    let mean_idle = match text("mean_idle")? {
        None => defaults.mean_idle,
        Some(s) => Duration::parse(s).map_err(|e| ("mean_idle".to_string(), e.to_string()))?,
    };
    if mean_idle.0 == 0 {
        return Err(("mean_idle".into(), "must be longer than 0s".into()));
    }
    let starts_on = match text("initial")? {
        None | Some("on") => true,
        Some("off") => false,
        Some(other) => {
            return Err((
                "initial".into(),
                format!("{other:?} is not a state; valid: on (download first), off (idle first)"),
            ))
        }
    };
    Ok(ShortFlowConfig {
        min_size,
        max_size,
        mean_idle,
        starts_on,
    })
}

/// The path's hops: the one link pair of `[path.forward]` / `[path.reverse]`, or each
/// `[[path.hops]]` entry (names unique and non-empty), every link resolved by [`resolve_link`].
fn resolve_path(
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
                Some(forward.delay),
                duration,
            )?,
            None => LinkConfig {
                capacity: Capacity::Unlimited,
                delay: forward.delay,
                queue: QueueConfig::default(),
                nominal_rate: Rate(f64::INFINITY),
                impairments: ImpairmentConfig::default(),
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
fn resolve_flow_hops(
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
    resolve_link(spec, field, base_dir, Some(Duration::ZERO), hour).map_err(|(field, message)| {
        ScenarioError {
            source_name: "link".into(),
            field,
            message,
        }
    })
}

fn resolve_link(
    spec: &LinkSpec,
    field: &str,
    base_dir: &Path,
    default_delay: Option<Duration>,
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
            let text = std::fs::read_to_string(&path).map_err(|e| {
                (
                    at("trace"),
                    format!("{}: cannot read trace: {e}", path.display()),
                )
            })?;
            let s = Schedule::parse_opennetlab(&text, direction, &path.display().to_string())
                .map_err(|e| (at("trace"), e.to_string()))?;
            Capacity::Schedule(Arc::new(s))
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
    let loss = match &spec.loss {
        None => LossModel::None,
        Some(v) => LossModel::from_value(v).map_err(|e| (at("loss"), e))?,
    };
    let jitter = match &spec.jitter {
        None => Jitter::default(),
        Some(serde_json::Value::String(d)) => {
            Jitter::Uniform(Duration::parse(d).map_err(|e| (at("jitter"), e.to_string()))?)
        }
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
    Ok(LinkConfig {
        capacity,
        delay: spec.delay.or(default_delay).unwrap_or(Duration::ZERO),
        queue,
        nominal_rate,
        impairments: ImpairmentConfig {
            loss,
            jitter,
            aggregation: spec.aggregation.filter(|d| d.0 > 0),
        },
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
fn resolve(base: &Path, file: &str) -> PathBuf {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Scenario, ScenarioError> {
        Scenario::from_toml_str(text, Path::new("."), "test.toml", None)
    }

    #[test]
    fn a_constant_rate_faster_than_the_clock_is_an_error_not_a_hang() {
        let e = parse(
            "duration = \"1s\"\n[path.forward]\ncapacity = \"1Mbps\"\n[[flows]]\nkind = \"cbr\"\nrate = \"10000Gbps\"\npacket_size = \"1B\"\n",
        )
        .unwrap_err();
        assert!(e.to_string().contains("less than 1 ns apart"), "{e}");
    }

    #[test]
    fn a_runs_size_is_estimated_from_its_links_and_constant_rates() {
        // 20 Mbit/s for 10 s in 1200-byte packets, plus a 1 Mbit/s constant-rate flow of
        // 1500-byte packets on the same link.
        let sc = parse(
            "duration = \"10s\"\n[path.forward]\ncapacity = \"20Mbps\"\n[[flows]]\ncontroller = \"gcc\"\n\
             [[flows]]\nkind = \"cbr\"\nrate = \"1Mbps\"\n",
        )
        .unwrap();
        let expected = 20e6 / 8.0 * 10.0 / 1200.0 + 1e6 / 8.0 * 10.0 / 1500.0;
        assert!((sc.estimated_packets() - expected).abs() < 1.0);
        // 100 Gbit/s for 5 s is over the limit the command line enforces.
        let big = parse(
            "duration = \"5s\"\n[path.forward]\ncapacity = \"100Gbps\"\n[[flows]]\ncontroller = \"gcc\"\n",
        )
        .unwrap();
        assert!(big.estimated_packets() > MAX_ESTIMATED_PACKETS);
    }

    const OK: &str = r#"
duration = "10s"
[path.forward]
capacity = "10Mbps"
delay = "20ms"
queue = "100ms"
[[flows]]
controller = "fixed"
params = { rate = "5Mbps" }
"#;

    #[test]
    fn a_minimal_scenario_gets_documented_defaults() {
        let s = parse(OK).unwrap();
        assert_eq!(s.seed, 1);
        assert_eq!(s.flows[0].name, "flow0");
        assert_eq!(s.flows[0].fps, 30.0);
        assert_eq!(s.flows[0].payload, Bytes(1200));
        assert_eq!(
            s.hops[0].reverse.delay,
            Duration::from_millis(20),
            "reverse delay defaults to forward's"
        );
        assert!(matches!(s.hops[0].reverse.capacity, Capacity::Unlimited));
    }

    fn error_of(text: &str) -> ScenarioError {
        parse(text).unwrap_err()
    }

    #[test]
    fn frame_ack_defaults_to_completion_and_names_its_bad_fields() {
        use rtcc_core::endpoint::{AckAt, FrameAckConfig};
        assert_eq!(
            parse(OK).unwrap().flows[0].frame_ack,
            FrameAckConfig::default()
        );
        assert_eq!(FrameAckConfig::default().at, AckAt::Complete);
        let with = |line: &str| format!("{OK}{line}\n");
        let s = parse(&with("frame_ack = { at = \"display\" }")).unwrap();
        assert_eq!(s.flows[0].frame_ack.at, AckAt::Display);
        assert_eq!(
            s.flows[0].frame_ack.presentation_timeout,
            Duration::from_millis(100)
        );
        let s = parse(&with(
            "frame_ack = { at = \"display\", presentation_timeout = \"150ms\" }",
        ))
        .unwrap();
        assert_eq!(
            s.flows[0].frame_ack.presentation_timeout,
            Duration::from_millis(150)
        );
        let e = error_of(&with("frame_ack = { at = \"shown\" }"));
        assert_eq!(e.field, "flows[0].frame_ack.at");
        assert!(e.message.contains("complete, display"), "{e}");
        let e = error_of(&with("frame_ack = { presentation_timeout = \"50ms\" }"));
        assert_eq!(e.field, "flows[0].frame_ack.presentation_timeout");
        assert!(e.message.contains("at = \"display\""), "{e}");
        let e = error_of(&with(
            "frame_ack = { at = \"display\", presentation_timeout = \"0ms\" }",
        ));
        assert_eq!(e.field, "flows[0].frame_ack.presentation_timeout");
        let e = error_of(&with("frame_ack = { at = \"display\", timeout = \"1s\" }"));
        assert!(e.message.contains("presentation_timeout"), "{e}");
        let e = error_of(
            "duration = \"1s\"\n[path.forward]\ncapacity = \"1Mbps\"\n[[flows]]\nkind = \"cbr\"\n\
             rate = \"100kbps\"\nframe_ack = { at = \"display\" }\n",
        );
        assert_eq!(e.field, "flows[0].frame_ack");
    }

    #[test]
    fn rate_reports_parse_default_to_none_and_name_their_bad_fields() {
        use rtcc_core::cc::FeedbackPolicy;
        assert_eq!(parse(OK).unwrap().flows[0].feedback.rate_reports, None);
        let with = |line: &str| format!("{OK}{line}\n");
        let s = parse(&with(
            "feedback = { interval = \"20ms\", frame_acks = true, rate_reports = \"50ms\" }",
        ))
        .unwrap();
        assert_eq!(
            s.flows[0].feedback,
            FeedbackPolicy {
                interval: Some(Duration::from_millis(20)),
                per_frame: false,
                frame_acks: true,
                rate_reports: Some(Duration::from_millis(50)),
            }
        );
        let e = error_of(&with(
            "feedback = { interval = \"20ms\", rate_reports = \"0ms\" }",
        ));
        assert_eq!(e.field, "flows[0].feedback.rate_reports");
        assert!(e.message.contains("longer than 0ms"), "{e}");
        let e = error_of(&with(
            "feedback = { interval = \"20ms\", rate_reports = \"often\" }",
        ));
        assert!(e.to_string().contains("rate_reports"), "{e}");
    }

    #[test]
    fn errors_name_the_field_the_value_and_what_is_allowed() {
        let e = error_of(&OK.replace("\"10Mbps\"", "\"10Mbmps\""));
        assert_eq!(e.field, "path.forward.capacity");
        assert!(
            e.message.contains("10Mbmps") && e.message.contains("Mbps"),
            "{e}"
        );

        let e = error_of(&OK.replace("\"10Mbps\"", "10"));
        assert!(e.message.contains("has no unit"), "{e}");

        let e = error_of(&OK.replace("controller = \"fixed\"", "controller = \"nosuch\""));
        assert_eq!(e.field, "flows[0].controller");
        assert!(e.message.contains("fixed, oracle"), "{e}");

        let e = error_of(&OK.replace("rate = \"5Mbps\"", "rat = \"5Mbps\""));
        assert_eq!(e.field, "flows[0].params.rat");
        assert!(e.message.contains("valid parameters: rate"), "{e}");

        let e = error_of(&OK.replace("delay = \"20ms\"", "dealy = \"20ms\""));
        assert_eq!(e.field, "path.forward.dealy");
        assert!(
            e.message.contains("unknown field `dealy`") && e.message.contains("delay"),
            "{e}"
        );

        let e = error_of(&OK.replace("queue = \"100ms\"", "queue = \"100\""));
        assert_eq!(e.field, "path.forward.queue");
        assert!(e.message.contains("pkts"), "{e}");

        let e = error_of(&OK.replace("[[flows]]", "[[flows]]\nstop = \"20s\""));
        assert_eq!(e.field, "flows[0].stop");

        let e = error_of(&OK.replace(
            "capacity = \"10Mbps\"",
            "capacity = \"10Mbps\"\ntrace = \"x\"",
        ));
        assert!(e.message.contains("only one"), "{e}");

        let e = error_of(&OK.replace("capacity = \"10Mbps\"", "trace = \"does/not/exist.trace\""));
        assert_eq!(e.field, "path.forward.trace");
        assert!(
            e.message.contains("does/not/exist.trace") && e.message.contains("cannot read"),
            "{e}"
        );

        let e = error_of("duration = \"10s\"\n[path.forward\n");
        assert!(e.message.contains("invalid TOML"), "{e}");

        let e = error_of(&OK.replace("[[flows]]", "[[flows]]\nfps = 0"));
        assert_eq!(e.field, "flows[0].fps");
        // A source below the default lowest frame rate (10) is fine; an explicit one above the
        // source is not.
        let slow = parse(&OK.replace("[[flows]]", "[[flows]]\nfps = 5")).unwrap();
        assert_eq!(slow.flows[0].media.min_fps, 5.0);
        let e = error_of(&OK.replace("[[flows]]", "[[flows]]\nfps = 5\nmin_fps = 8"));
        assert_eq!(e.field, "flows[0].min_fps");
    }

    #[test]
    fn cbr_flows_need_a_rate_and_take_no_video_fields() {
        let cbr = OK.to_string() + "[[flows]]\nkind = \"cbr\"\nrate = \"2Mbps\"\n";
        let s = parse(&cbr).unwrap();
        let kind = s.flows[1].kind;
        assert_eq!(
            kind,
            FlowKind::Cbr {
                rate: Rate(2e6),
                packet_size: Bytes(1500)
            }
        );
        assert_eq!(s.flows[1].controller, "cbr");
        let e = error_of(&(OK.to_string() + "[[flows]]\nkind = \"cbr\"\n"));
        assert_eq!(e.field, "flows[1].rate");
        let e = error_of(
            &(OK.to_string()
                + "[[flows]]\nkind = \"cbr\"\nrate = \"1Mbps\"\ncontroller = \"fixed\"\n"),
        );
        assert_eq!(e.field, "flows[1].controller");
        let e = error_of(&(OK.to_string() + "[[flows]]\nkind = \"quic\"\n"));
        assert!(e.message.contains("video, cbr, audio, tcp, dash"), "{e}");
        let e = error_of(&OK.replace("[[flows]]", "[[flows]]\nrate = \"1Mbps\""));
        assert_eq!(e.field, "flows[0].rate");
        let e = error_of(&OK.replace("controller = \"fixed\"", ""));
        assert!(
            e.field == "flows[0].controller" && e.message.contains("fixed"),
            "{e}"
        );
    }

    #[test]
    fn tcp_flows_take_a_controller_and_an_application() {
        let tcp = |extra: &str| OK.to_string() + "[[flows]]\nkind = \"tcp\"\n" + extra;
        let s = parse(&tcp("controller = \"fixed\"\nparams = { rate = \"1Mbps\" }\napp = { model = \"finite\", size = \"1MB\" }\ndelayed_ack = true\n")).unwrap();
        let kind = s.flows[1].kind;
        assert_eq!(
            kind,
            FlowKind::Tcp {
                app: App::Finite { bytes: 1_000_000 },
                delayed_ack: true,
                mss: Bytes(1500),
                slow_start_after_idle: false,
            }
        );
        let e = error_of(&tcp(""));
        assert_eq!(e.field, "flows[1].controller");
        let e = error_of(&tcp(
            "controller = \"fixed\"\nparams = { rate = \"1Mbps\" }\nfps = 30\n",
        ));
        assert!(
            e.field == "flows[1].fps" && e.message.contains("only video flows"),
            "{e}"
        );
        let e = error_of(&tcp("controller = \"fixed\"\nparams = { rate = \"1Mbps\" }\napp = { model = \"onoff\", on = \"1s\" }\n"));
        assert!(
            e.field == "flows[1].app" && e.message.contains("off"),
            "{e}"
        );
        let e = error_of(&tcp("controller = \"fixed\"\nparams = { rate = \"1Mbps\" }\napp = { model = \"poisson\" }\n"));
        assert!(e.message.contains("finite"), "{e}");
    }

    #[test]
    fn dash_flows_get_the_seeds_session_and_bad_values_name_their_field() {
        let dash = |extra: &str| {
            OK.to_string() + "[[flows]]\nkind = \"dash\"\ncontroller = \"cubic\"\n" + extra
        };
        let s = parse(&dash("")).unwrap();
        assert_eq!(s.flows[1].kind, FlowKind::Dash);
        let cfg = s.flows[1].dash.as_ref().unwrap();
        assert_eq!(cfg, &DashConfig::default(), "the seed's session by default");
        assert_eq!(
            (cfg.segments, cfg.ladder_bps.len(), cfg.ladder_bps[10]),
            (127, 11, 25e6)
        );
        let s = parse(&dash(
            "http = \"h1\"\nabr = \"festive\"\nsegments = 10\nsegment_duration = \"2s\"\nladder = [\"1Mbps\", \"3Mbps\"]\nbuffer_target = { stable = \"20s\" }\nsegment_sizes = 0.9\nline_rate = \"unlimited\"\nslow_start_after_idle = false\n",
        ))
        .unwrap();
        let cfg = s.flows[1].dash.as_ref().unwrap();
        assert_eq!(
            (
                cfg.http,
                cfg.abr,
                cfg.segments,
                cfg.ladder_bps.clone(),
                cfg.buffer.stable,
                cfg.segment_size_scale,
                cfg.line_rate,
                cfg.slow_start_after_idle
            ),
            (
                HttpVersion::H1,
                AbrKind::Festive,
                10,
                vec![1e6, 3e6],
                Duration::from_secs_f64(20.0),
                0.9,
                None,
                false
            )
        );
        for (extra, field, says) in [
            (
                "abr = \"mpc\"",
                "flows[1].abr",
                "valid: dynamic, throughput, bola, bba, rb, festive",
            ),
            ("http = \"h3\"", "flows[1].http", "valid: h2, h1"),
            ("ladder = []", "flows[1].ladder", "at least one rate"),
            (
                "ladder = [\"5Mbps\", \"1Mbps\"]",
                "flows[1].ladder[1]",
                "the ladder goes up",
            ),
            (
                "ladder = [\"5Mbps\", \"5Mbps\"]",
                "flows[1].ladder[1]",
                "not above",
            ),
            ("ladder = [\"5Mbs\"]", "flows[1].ladder[0]", "5Mbs"),
            ("segments = 0", "flows[1].segments", "between 1 and 100000"),
            (
                "segment_duration = \"10ms\"",
                "flows[1].segment_duration",
                "between 100ms and 60s",
            ),
            (
                "segment_sizes = \"real\"",
                "flows[1].segment_sizes",
                "nominal",
            ),
            (
                "buffer_target = { stabel = \"12s\" }",
                "flows[1].buffer_target.stabel",
                "takes stable",
            ),
            (
                "buffer_target = { stable = 12 }",
                "flows[1].buffer_target.stable",
                "a duration",
            ),
            ("line_rate = \"fast\"", "flows[1].line_rate", "fast"),
            (
                "app = { model = \"bulk\" }",
                "flows[1].app",
                "only tcp flows",
            ),
            ("fps = 30", "flows[1].fps", "only video flows"),
            (
                "active = [[\"0s\", \"5s\"]]",
                "flows[1].active",
                "from start to stop",
            ),
        ] {
            let e = error_of(&dash(extra));
            assert!(
                e.field == field && e.message.contains(says),
                "{extra}: expected an error at {field} saying {says:?}, got {e}"
            );
        }
        let e = error_of(&(OK.to_string() + "[[flows]]\nkind = \"dash\"\n"));
        assert!(
            e.field == "flows[1].controller" && e.message.contains("cubic"),
            "a dash flow needs its server's controller: {e}"
        );
        let e = error_of(
            &(OK.to_string()
                + "[[flows]]\nkind = \"tcp\"\ncontroller = \"cubic\"\nabr = \"bola\"\n"),
        );
        assert!(
            e.field == "flows[1].abr" && e.message.contains("only dash flows"),
            "{e}"
        );
    }

    #[test]
    fn audio_flows_get_opus_like_defaults_and_bad_values_name_their_field() {
        let audio = |extra: &str| OK.to_string() + "[[flows]]\nkind = \"audio\"\n" + extra;
        let s = parse(&audio("")).unwrap();
        let kind = s.flows[1].kind;
        assert_eq!(
            kind,
            FlowKind::Audio {
                rate: Rate(32_000.0),
                ptime: Duration::from_millis(20),
                overhead: Bytes(40)
            }
        );
        assert_eq!(kind.audio_packet(), Some((Duration::from_millis(20), 120)));
        assert_eq!(
            (kind.name(), s.flows[1].controller.as_str()),
            ("audio", "cbr")
        );
        let s = parse(&audio("active = [[\"0s\", \"2s\"], [\"5s\", \"8s\"]]\n")).unwrap();
        assert_eq!(s.flows[1].active.len(), 2, "audio pauses like cbr");
        for (extra, field, says) in [
            (
                "ptime = \"0ms\"",
                "flows[1].ptime",
                "between 1ms and 1000ms",
            ),
            ("rate = \"0bps\"", "flows[1].rate", "positive"),
            (
                "rate = \"1Mbps\"\nptime = \"100ms\"",
                "flows[1].rate",
                "over 1500B",
            ),
            (
                "rate = \"100bps\"\nptime = \"10ms\"",
                "flows[1].rate",
                "less than one byte",
            ),
            (
                "packet_size = \"100B\"",
                "flows[1].packet_size",
                "only cbr and tcp and dash",
            ),
            ("controller = \"gcc\"", "flows[1].controller", "only video"),
        ] {
            let e = error_of(&audio(extra));
            assert!(
                e.field == field && e.message.contains(says),
                "{extra}: expected an error at {field} saying {says:?}, got {e}"
            );
        }
    }

    #[test]
    fn short_tcp_flows_get_rfc_8868_defaults_and_bad_values_name_their_field() {
        use rtcc_core::short_tcp::ShortFlowConfig;
        let short = |app: &str| {
            OK.to_string()
                + "[[flows]]\nkind = \"tcp\"\ncontroller = \"reno\"\napp = { model = \"short\""
                + app
                + " }\n"
        };
        let s = parse(&short("")).unwrap();
        assert_eq!(
            s.flows[1].kind,
            FlowKind::ShortTcp {
                config: ShortFlowConfig::default(),
                delayed_ack: false,
                mss: Bytes(1500)
            }
        );
        assert_eq!(
            (
                ShortFlowConfig::default().min_size,
                ShortFlowConfig::default().max_size
            ),
            (30_000, 50_000)
        );
        assert_eq!(s.flows[1].kind.name(), "tcp");
        let s = parse(&short(
            ", min_size = \"10KB\", max_size = \"20KB\", mean_idle = \"2s\", initial = \"off\"",
        ))
        .unwrap();
        assert_eq!(
            s.flows[1].kind,
            FlowKind::ShortTcp {
                config: ShortFlowConfig {
                    min_size: 10_000,
                    max_size: 20_000,
                    mean_idle: Duration::from_secs_f64(2.0),
                    starts_on: false
                },
                delayed_ack: false,
                mss: Bytes(1500)
            }
        );
        for (app, field, says) in [
            (", initial = \"idle\"", "flows[1].app.initial", "valid: on"),
            (
                ", min_size = \"50KB\", max_size = \"40KB\"",
                "flows[1].app.max_size",
                "below min_size",
            ),
            (
                ", mean_idle = \"0s\"",
                "flows[1].app.mean_idle",
                "longer than 0s",
            ),
            (
                ", min_size = \"0B\"",
                "flows[1].app.min_size",
                "more than 0B",
            ),
            (", size = \"1MB\"", "flows[1].app.size", "takes min_size"),
        ] {
            let e = error_of(&short(app));
            assert!(
                e.field == field && e.message.contains(says),
                "{app}: expected an error at {field} saying {says:?}, got {e}"
            );
        }
        let e = error_of(&(short("") + "slow_start_after_idle = true\n"));
        assert!(
            e.field == "flows[1].slow_start_after_idle" && e.message.contains("fresh connection"),
            "{e}"
        );
        let e = error_of(&(short("") + "active = [[\"0s\", \"1s\"]]\n"));
        assert_eq!(e.field, "flows[1].active");
    }

    #[test]
    fn jitter_is_a_duration_or_an_rfc_8868_pdv_table() {
        use rtcc_core::net::impair::Jitter;
        use rtcc_core::net::pdv::{PdvConfig, PdvModel};
        let with = |j: &str| {
            OK.replace(
                "queue = \"100ms\"",
                &format!("queue = \"100ms\"\njitter = {j}"),
            )
        };
        assert_eq!(
            parse(&with("\"5ms\"")).unwrap().hops[0]
                .forward
                .impairments
                .jitter,
            Jitter::Uniform(Duration::from_millis(5))
        );
        assert_eq!(
            parse(&with("{ model = \"nr-rbpdv\" }")).unwrap().hops[0]
                .forward
                .impairments
                .jitter,
            Jitter::Pdv(PdvConfig {
                model: PdvModel::NrRbpdv,
                std: Duration::from_millis(5),
                n_std: 3.0,
                serial_rate: Some(Rate(10e6)),
            }),
            "RFC 8868 §4.5.3's std and N_STD; serial(n) at the link's rate"
        );
        let j = parse(&with("{ model = \"rbpdv\", std = \"2ms\", n_std = 2.5 }"))
            .unwrap()
            .hops[0]
            .forward
            .impairments
            .jitter;
        assert!(
            matches!(j, Jitter::Pdv(p) if p.model == PdvModel::Rbpdv && p.std == Duration::from_millis(2) && p.n_std == 2.5)
        );
        for (j, field, says) in [
            (
                "{ model = \"gauss\" }",
                "path.forward.jitter.model",
                "nr-rbpdv",
            ),
            (
                "{ model = \"rbpdv\", sigma = \"5ms\" }",
                "path.forward.jitter.sigma",
                "std, n_std",
            ),
            (
                "{ model = \"rbpdv\", serial_rate = \"1Mbps\" }",
                "path.forward.jitter.serial_rate",
                "no-reordering",
            ),
            (
                "{ model = \"nr-rbpdv\", std = \"0ms\" }",
                "path.forward.jitter.std",
                "longer than 0ms",
            ),
            (
                "{ model = \"nr-rbpdv\", n_std = 0 }",
                "path.forward.jitter.n_std",
                "(0, 10]",
            ),
            ("\"5\"", "path.forward.jitter", "unit"),
            ("5", "path.forward.jitter", "a duration"),
        ] {
            let e = error_of(&with(j));
            assert!(
                e.field == field && e.message.contains(says),
                "{j}: expected an error at {field} saying {says:?}, got {e}"
            );
        }
    }

    #[test]
    fn json_and_toml_give_the_same_scenario() {
        let json = r#"{"duration":"10s","path":{"forward":{"capacity":"10Mbps","delay":"20ms","queue":"100ms"}},
                       "flows":[{"controller":"fixed","params":{"rate":"5Mbps"}}]}"#;
        let a = Scenario::from_json_str(json, Path::new("."), "py").unwrap();
        let b = parse(OK).unwrap();
        assert_eq!(format!("{:?}", a.flows), format!("{:?}", b.flows));
        let e = Scenario::from_json_str(&json.replace("\"10s\"", "10"), Path::new("."), "py")
            .unwrap_err();
        assert_eq!(e.field, "duration");
    }
}
