//! Scenario files: what to simulate, validated before the run.
//!
//! A scenario is TOML (or the same structure as JSON, which is how the Python front passes the
//! scenarios it builds). serde turns the text into [`ScenarioSpec`], recording the path of any
//! field it cannot read (`path.forward.queue`); [`Scenario::from_spec`] then resolves the path
//! ([`crate::path`]) and each flow ([`crate::flow`], one file per kind), checking every value, so
//! that every error names the field, the bad value and what is allowed. `docs/scenarios.md` is
//! the reference for users.

use crate::capacity::PathCapacity;
use crate::error::{FieldError, ScenarioError};
use crate::flow::{Building, Checking, FlowConfig, FlowKind};
use crate::path::{resolve_path, FileReference, HopConfig, PathSpec};
use rtcc_core::cc::{self, CapacityView, Registry};
use rtcc_core::endpoint::Endpoint;
use rtcc_core::metrics::PacketStats;
use rtcc_core::{Duration, Time};
use serde::Deserialize;
use std::ops::Range;
use std::path::Path;
use std::sync::Arc;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioSpec {
    pub name: Option<String>,
    pub duration: Duration,
    pub seed: Option<u64>,
    pub path: PathSpec,
    /// Each flow's table, read by its kind's file ([`FlowConfig::from_value`]).
    pub flows: Vec<serde_json::Value>,
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
        let whole = |message: String| ScenarioError {
            source_name: source_name.into(),
            field: String::new(),
            message,
        };
        let value: toml::Value = toml::from_str(text)
            .map_err(|e| whole(format!("invalid TOML: {}", e.to_string().trim())))?;
        let json = serde_json::to_value(value).map_err(|e| whole(e.to_string()))?;
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
        Self::resolve(spec, base_dir, default_name, registry).map_err(|e| e.in_file(source_name))
    }

    fn resolve(
        spec: ScenarioSpec,
        base_dir: &Path,
        default_name: Option<String>,
        registry: &Registry,
    ) -> Result<Scenario, FieldError> {
        if spec.duration.0 == 0 {
            return Err(FieldError::new("duration", "must be longer than 0s"));
        }
        let duration = spec.duration;
        let hops = resolve_path(&spec.path, base_dir, duration)?;
        if spec.flows.is_empty() {
            return Err(FieldError::new(
                "flows",
                "at least one flow is needed ([[flows]] with a controller)",
            ));
        }
        // Flow groups of the checks, so a group's flows must agree on its algorithm.
        let groups = cc::coupled::CouplingGroups::default();
        let check = Checking {
            base_dir,
            duration,
            hops: &hops,
            hops_listed: spec.path.hops.is_some(),
            registry,
            groups: &groups,
        };
        let mut flows: Vec<FlowConfig> = Vec::with_capacity(spec.flows.len());
        for (i, value) in spec.flows.into_iter().enumerate() {
            let flow = FlowConfig::from_value(i, value, &check)?;
            if flows.iter().any(|g| g.name == flow.name) {
                return Err(FieldError::new(
                    format!("flows[{i}].name"),
                    format!(
                        "{:?} is used by two flows; flow names must be unique",
                        flow.name
                    ),
                ));
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

    /// The input files a scenario (JSON, as a scenario file reads; it may be partial) names —
    /// link schedules and traces, frame-size traces — each with where it is named and the file
    /// the core reads for it (relative names against `base_dir`, as a run resolves them). A
    /// front that runs scenarios elsewhere (Ray workers) ships these files and rewrites those
    /// places. Errors name a `path` field that cannot be read.
    pub fn referenced_files(
        json: &serde_json::Value,
        base_dir: &Path,
    ) -> Result<Vec<FileReference>, ScenarioError> {
        let mut out = Vec::new();
        if let Some(path) = json.get("path") {
            let spec: PathSpec = serde_path_to_error::deserialize(path.clone()).map_err(|e| {
                let inner = e.path().to_string();
                ScenarioError {
                    source_name: "scenario".into(),
                    field: if inner == "." {
                        "path".into()
                    } else {
                        format!("path.{inner}")
                    },
                    message: e.into_inner().to_string(),
                }
            })?;
            out.extend(spec.file_references(base_dir));
        }
        if let Some(serde_json::Value::Array(flows)) = json.get("flows") {
            for (i, flow) in flows.iter().enumerate() {
                out.extend(crate::flow::file_references(i, flow, base_dir));
            }
        }
        Ok(out)
    }

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
                let (own_bytes, packet) = match &f.kind {
                    FlowKind::Cbr(c) => (c.rate.bps() / 8.0 * secs, c.packet_size.0.max(1) as f64),
                    FlowKind::Audio(a) => {
                        let (ptime, size) = a.packet();
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

    /// Whether the path has more than one hop.
    pub fn is_multi_hop(&self) -> bool {
        self.hops.len() > 1
    }

    /// What `flow`'s data can get through its hops (the tightest of its links at each instant,
    /// [`PathCapacity`]): over their forward links, or their reverse links for a `reverse`
    /// flow.
    pub fn data_capacity(&self, flow: &FlowConfig) -> PathCapacity {
        path_capacity(&self.hops, &flow.hops, flow.reverse)
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
        .keeping_transits(flow.kind.audio_packet().is_some())
        .with_sqp_frames(self.sqp_frame_interval(flow), Time(self.duration.0));
        stats.set_propagation_between_links(self.propagation_between_links(flow));
        stats
    }

    /// The frame interval of SQP's simulated video (Eq. 10) over `flow`'s packets: a video
    /// flow's slots follow its own frame rate, any other flow's the first video flow's (60 fps,
    /// SQP's, when there is none), so video and non-video senders are turned into frames the
    /// same way.
    pub fn sqp_frame_interval(&self, flow: &FlowConfig) -> Duration {
        let reference_fps = self
            .flows
            .iter()
            .find_map(|f| f.video())
            .map_or(crate::outcome::SQP_METRIC_FPS, |v| v.fps);
        let fps = flow.video().map_or(reference_fps, |v| v.fps);
        Duration::from_secs_f64(1.0 / fps)
    }

    /// From the first start to the last stop of the flows that cross hop `h` (`None` if none
    /// does): the span over which the hop's utilisation counts.
    pub fn hop_span(&self, h: usize) -> Option<(Time, Time)> {
        let crossing = self.flows.iter().filter(|f| f.hops.contains(&h));
        let start = crossing.clone().map(|f| f.start).min();
        let stop = crossing.map(|f| f.stop).max();
        start.zip(stop)
    }

    /// What `flow`'s controller is told of the path ([`cc::ControllerContext::capacity`], for
    /// reference controllers such as `oracle`): the links its data crosses, tightest at each
    /// instant (the reverse links for a `direction = "reverse"` flow).
    pub fn controller_capacity(&self, flow: &FlowConfig) -> PathCapacity {
        self.data_capacity(flow)
    }

    /// The propagation delay `flow`'s data takes between its first link and its last: the
    /// delays of the links it crosses before the last (zero on one link pair), plus the fixed
    /// hold of every netem-style delay stage in front of those links' queues (time between a
    /// packet's first enqueue and its last departure that is not queuing).
    pub fn propagation_between_links(&self, flow: &FlowConfig) -> Duration {
        let hops = &self.hops[flow.hops.clone()];
        let stages = hops
            .iter()
            .filter_map(|h| match flow.reverse {
                true => h.reverse.netem,
                false => h.forward.netem,
            })
            .fold(Duration::ZERO, |a, n| a + n.delay);
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
            .fold(stages, |a, d| a + d)
    }

    /// What `flow`'s feedback can get through its hops (the links opposite its data's).
    pub fn feedback_capacity(&self, flow: &FlowConfig) -> PathCapacity {
        path_capacity(&self.hops, &flow.hops, !flow.reverse)
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

    /// Build flow `i`'s two endpoints, `[A (sender), B (receiver)]`: its controller (from
    /// `registry`, told `capacity`, [`Scenario::controller_capacity`]), encoder model,
    /// packetizer, loss recovery and feedback policy, every seed derived from the scenario's.
    /// The simulator and the live transport (`rtcc-live send` / `recv`) both build their flows
    /// here, so a flow is the same object in both. `f` is `self.flows[i]` or an adjusted copy of
    /// it (the live transport's); of `self` only the seed is read. `coupling` is the run's flow
    /// groups (RFC 8699, shared by every flow of one run); `None` where flows cannot share them,
    /// and a coupled flow is then refused. `ssrcs`: a video flow's SSRCs (`None`: the flow's
    /// deterministic ones, `Ssrcs::for_flow(i)`).
    pub fn flow_endpoints(
        &self,
        i: usize,
        f: &FlowConfig,
        capacity: &Arc<dyn CapacityView>,
        registry: &Registry,
        coupling: Option<&cc::coupled::CouplingGroups>,
        ssrcs: Option<rtcc_core::endpoint::video_send::Ssrcs>,
    ) -> Result<[Box<dyn Endpoint>; 2], String> {
        f.endpoints(&Building {
            seed: self.seed,
            index: i,
            capacity,
            registry,
            coupling,
            ssrcs,
        })
    }
}

/// The capacity along the hops `hops` in one direction: their forward links (`reverse_links`
/// false) or their reverse links.
pub(crate) fn path_capacity(
    hops: &[HopConfig],
    crossed: &Range<usize>,
    reverse_links: bool,
) -> PathCapacity {
    PathCapacity::new(
        hops[crossed.clone()]
            .iter()
            .map(|h| match reverse_links {
                false => h.forward.capacity.clone(),
                true => h.reverse.capacity.clone(),
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flow::{AudioFlow, CbrFlow, ShortTcpFlow, TcpFlow};
    use rtcc_core::dash::{AbrKind, DashConfig, HttpVersion};
    use rtcc_core::net::Capacity;
    use rtcc_core::packet::EcnMode;
    use rtcc_core::tcp::App;
    use rtcc_core::{Bytes, Rate};

    fn video(f: &FlowConfig) -> &crate::flow::VideoFlow {
        f.video().expect("a video flow")
    }

    fn short_of(s: &Scenario) -> (rtcc_core::short_tcp::ShortFlowConfig, bool, Bytes) {
        match &s.flows[1].kind {
            FlowKind::ShortTcp(ShortTcpFlow {
                config,
                delayed_ack,
                mss,
                ..
            }) => (*config, *delayed_ack, *mss),
            other => panic!("a short tcp flow, got {other:?}"),
        }
    }

    fn session(f: &FlowConfig) -> &DashConfig {
        match &f.kind {
            FlowKind::Dash(d) => &d.session,
            other => panic!("a dash flow, got {other:?}"),
        }
    }

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
        assert_eq!(video(&s.flows[0]).fps, 30.0);
        assert_eq!(video(&s.flows[0]).payload, Bytes(1200));
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
            video(&parse(OK).unwrap().flows[0]).frame_ack,
            FrameAckConfig::default()
        );
        assert_eq!(FrameAckConfig::default().at, AckAt::Complete);
        let with = |line: &str| format!("{OK}{line}\n");
        let s = parse(&with("frame_ack = { at = \"display\" }")).unwrap();
        assert_eq!(video(&s.flows[0]).frame_ack.at, AckAt::Display);
        assert_eq!(
            video(&s.flows[0]).frame_ack.presentation_timeout,
            Duration::from_millis(100)
        );
        let s = parse(&with(
            "frame_ack = { at = \"display\", presentation_timeout = \"150ms\" }",
        ))
        .unwrap();
        assert_eq!(
            video(&s.flows[0]).frame_ack.presentation_timeout,
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
    fn a_vbv_reaches_the_encoders_that_model_one_and_is_refused_by_the_others() {
        use rtcc_core::media::encoder::EncoderConfig;
        let flow = |lines: &str| {
            parse(&format!(
                "duration = \"1s\"\n[path.forward]\ncapacity = \"10Mbps\"\n[[flows]]\n{lines}\n"
            ))
            .map(|s| video(&s.flows[0]).clone())
        };
        let peak = |v: &crate::flow::VideoFlow| match &v.encoder {
            EncoderConfig::Lagged(c) => c.peak,
            other => panic!("{}", other.name()),
        };
        // C³G's testbed encoder is peak-constrained (§VI-A): its default reaches `lagged`.
        let v = flow("controller = \"c3g\"\nencoder = \"lagged\"").unwrap();
        assert_eq!((peak(&v), v.vbv), (Some(1.0), Some(1.0)));
        assert!(v.media_defaults.contains(&"vbv"));
        // The scenario's value wins, "off" included; any controller takes one.
        let v = flow("controller = \"c3g\"\nencoder = \"lagged\"\nvbv = \"off\"").unwrap();
        assert_eq!((peak(&v), v.vbv), (None, None));
        let v = flow("controller = \"gcc\"\nencoder = \"lagged\"\nvbv = 2.5").unwrap();
        assert_eq!((peak(&v), v.media_defaults.len()), (Some(2.5), 0));
        assert_eq!(
            peak(&flow("controller = \"gcc\"\nencoder = \"lagged\"").unwrap()),
            None
        );
        // A recorded trace cannot be constrained: a controller's default is left out, the
        // scenario's own value is an error naming the model.
        let trace = format!(
            "encoder = {{ model = \"trace\", file = \"{}/../../traces/lagged-720p-1500kbps-seed1.frames\" }}",
            env!("CARGO_MANIFEST_DIR")
        );
        let v = flow(&format!("controller = \"c3g\"\n{trace}")).unwrap();
        assert!(v.vbv.is_none() && !v.media_defaults.contains(&"vbv"));
        let e = flow(&format!("controller = \"gcc\"\nvbv = 1\n{trace}")).unwrap_err();
        assert_eq!(e.field, "flows[0].vbv");
        assert!(e.to_string().contains("trace encoder"), "{e}");
        for bad in ["0.5", "\"on\"", "true"] {
            let e = flow(&format!(
                "controller = \"gcc\"\nencoder = \"lagged\"\nvbv = {bad}"
            ))
            .unwrap_err();
            assert_eq!(e.field, "flows[0].vbv", "{bad}: {e}");
        }
    }

    #[test]
    fn a_controllers_media_defaults_fill_only_what_the_scenario_leaves_out() {
        use rtcc_core::cc::{ControllerInfo, MediaDefaults, Registry};
        use rtcc_core::media::degradation::Preference;
        use rtcc_core::media::encoder::EncoderConfig;
        let flow = |lines: &str| {
            let s = parse(&format!(
                "duration = \"1s\"\n[path.forward]\ncapacity = \"10Mbps\"\n[[flows]]\n{lines}\n"
            ))
            .unwrap();
            video(&s.flows[0]).clone()
        };
        let settings = |v: &crate::flow::VideoFlow| (v.degradation, v.pushback, v.frame_dropper);
        // C³G's server changes only the bitrate (§IV) and its client shows every frame (§V-B).
        let v = flow("controller = \"c3g\"");
        assert_eq!(settings(&v), (Preference::Disabled, true, false));
        assert_eq!(v.media_defaults, ["degradation", "frame_dropper", "vbv"]);
        assert_eq!(
            flow("controller = \"c3g-bbr\"").media_defaults,
            v.media_defaults
        );
        // What the scenario writes wins, field by field.
        let v = flow("controller = \"c3g\"\ndegradation = \"balanced\"");
        assert_eq!(settings(&v), (Preference::Balanced, true, false));
        assert_eq!(v.media_defaults, ["frame_dropper", "vbv"]);
        let v = flow(
            "controller = \"c3g\"\ndegradation = \"balanced\"\nframe_dropper = true\nvbv = \"off\"",
        );
        assert_eq!(settings(&v), (Preference::Balanced, true, true));
        assert!(v.media_defaults.is_empty() && v.vbv.is_none());
        // A controller that declares none gets rtcc's defaults.
        let v = flow("controller = \"gcc\"");
        assert_eq!(settings(&v), (Preference::Balanced, true, true));
        assert!(v.media_defaults.is_empty() && v.encoder_value == "ideal");

        // An encoder and pushback from a registered controller's defaults; a bad default names
        // the controller, not the scenario.
        let with_media = |media: MediaDefaults| {
            let mut r = Registry::builtin();
            let fixed = r.lookup("fixed").unwrap().clone();
            r.register(ControllerInfo {
                name: "steady".into(),
                media,
                ..fixed
            })
            .unwrap();
            r
        };
        let r = with_media(MediaDefaults {
            encoder: Some(serde_json::json!({ "model": "lagged", "noise": 0.1 })),
            pushback: Some(false),
            ..MediaDefaults::default()
        });
        let steady = |lines: &str| {
            let text = format!(
                "duration = \"1s\"\n[path.forward]\ncapacity = \"10Mbps\"\n[[flows]]\n\
                 controller = \"steady\"\nparams = {{ rate = \"1Mbps\" }}\n{lines}\n"
            );
            Scenario::from_toml_str_with_registry(&text, Path::new("."), "t.toml", None, &r)
                .map(|s| video(&s.flows[0]).clone())
        };
        let v = steady("").unwrap();
        assert!(matches!(&v.encoder, EncoderConfig::Lagged(c) if c.noise == 0.1));
        assert_eq!(v.encoder_value["noise"], 0.1);
        assert_eq!(settings(&v), (Preference::Balanced, false, true));
        assert_eq!(v.media_defaults, ["encoder", "pushback"]);
        let v = steady("encoder = \"ideal\"\npushback = true").unwrap();
        assert!(matches!(v.encoder, EncoderConfig::Ideal) && v.pushback);
        assert!(v.media_defaults.is_empty());
        let r = with_media(MediaDefaults {
            degradation: Some("sideways".into()),
            ..MediaDefaults::default()
        });
        let text = "duration = \"1s\"\n[path.forward]\ncapacity = \"10Mbps\"\n[[flows]]\n\
                    controller = \"steady\"\nparams = { rate = \"1Mbps\" }\n";
        let e = Scenario::from_toml_str_with_registry(text, Path::new("."), "t.toml", None, &r)
            .unwrap_err();
        assert_eq!(e.field, "flows[0].degradation");
        assert!(
            e.message.contains("the default of controller \"steady\""),
            "{e}"
        );
    }

    #[test]
    fn rate_reports_parse_default_to_none_and_name_their_bad_fields() {
        use rtcc_core::cc::FeedbackPolicy;
        assert_eq!(
            video(&parse(OK).unwrap().flows[0]).feedback.rate_reports,
            None
        );
        let with = |line: &str| format!("{OK}{line}\n");
        let s = parse(&with(
            "feedback = { interval = \"20ms\", frame_acks = true, rate_reports = \"50ms\" }",
        ))
        .unwrap();
        assert_eq!(
            video(&s.flows[0]).feedback,
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
        assert!(e.message.contains("at least 1ms"), "{e}");
        // Below the floor: "1ns" used to hang a run (interval) or grow memory until the core
        // aborted (rate reports).
        let e = error_of(&with("feedback = { interval = \"1ns\" }"));
        assert_eq!(e.field, "flows[0].feedback.interval");
        assert!(e.message.contains("at least 1ms"), "{e}");
        let e = error_of(&with(
            "feedback = { interval = \"20ms\", rate_reports = \"999us\" }",
        ));
        assert_eq!(e.field, "flows[0].feedback.rate_reports");
        assert!(parse(&with(
            "feedback = { interval = \"1ms\", rate_reports = \"1ms\" }"
        ))
        .is_ok());
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
        assert_eq!(video(&slow.flows[0]).media.min_fps, 5.0);
        let e = error_of(&OK.replace("[[flows]]", "[[flows]]\nfps = 5\nmin_fps = 8"));
        assert_eq!(e.field, "flows[0].min_fps");
    }

    #[test]
    fn cbr_flows_need_a_rate_and_take_no_video_fields() {
        let cbr = OK.to_string() + "[[flows]]\nkind = \"cbr\"\nrate = \"2Mbps\"\n";
        let s = parse(&cbr).unwrap();
        let FlowKind::Cbr(cbr) = s.flows[1].kind else {
            panic!("a cbr flow")
        };
        assert_eq!(
            cbr,
            CbrFlow {
                rate: Rate(2e6),
                packet_size: Bytes(1500),
                ecn: EcnMode::Off
            }
        );
        assert_eq!(s.flows[1].controller_name(), "cbr");
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
        let FlowKind::Tcp(TcpFlow {
            app,
            delayed_ack,
            mss,
            slow_start_after_idle,
            ..
        }) = &s.flows[1].kind
        else {
            panic!("a tcp flow")
        };
        assert_eq!(
            (*app, *delayed_ack, *mss, *slow_start_after_idle),
            (App::Finite { bytes: 1_000_000 }, true, Bytes(1500), false)
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
        assert_eq!(s.flows[1].kind.name(), "dash");
        let cfg = session(&s.flows[1]);
        assert_eq!(cfg, &DashConfig::default(), "the seed's session by default");
        assert_eq!(
            (cfg.segments, cfg.ladder_bps.len(), cfg.ladder_bps[10]),
            (127, 11, 25e6)
        );
        let s = parse(&dash(
            "http = \"h1\"\nabr = \"festive\"\nsegments = 10\nsegment_duration = \"2s\"\nladder = [\"1Mbps\", \"3Mbps\"]\nbuffer_target = { stable = \"20s\" }\nsegment_sizes = 0.9\nline_rate = \"unlimited\"\nslow_start_after_idle = false\n",
        ))
        .unwrap();
        let cfg = session(&s.flows[1]);
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
                "send_buffer = \"4KB\"",
                "flows[1].send_buffer",
                "SOCK_MIN_SNDBUF",
            ),
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
        assert_eq!(
            session(&parse(&dash("send_buffer = \"2MB\"")).unwrap().flows[1]).send_buffer,
            Some(rtcc_core::Bytes(2_000_000))
        );
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
        let kind = &s.flows[1].kind;
        let FlowKind::Audio(audio_flow) = kind else {
            panic!("an audio flow")
        };
        assert_eq!(
            *audio_flow,
            AudioFlow {
                rate: Rate(32_000.0),
                ptime: Duration::from_millis(20),
                overhead: Bytes(40),
                ecn: EcnMode::Off
            }
        );
        assert_eq!(kind.audio_packet(), Some((Duration::from_millis(20), 120)));
        assert_eq!(
            (kind.name(), s.flows[1].controller_name()),
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
            short_of(&s),
            (ShortFlowConfig::default(), false, Bytes(1500))
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
            short_of(&s),
            (
                ShortFlowConfig {
                    min_size: 10_000,
                    max_size: 20_000,
                    mean_idle: Duration::from_secs_f64(2.0),
                    starts_on: false
                },
                false,
                Bytes(1500)
            )
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
    fn a_netem_stage_and_sub_ms_jitter_are_link_options_with_named_errors() {
        use rtcc_core::net::impair::Jitter;
        use rtcc_core::net::netem::NetemConfig;
        let with =
            |extra: &str| OK.replace("queue = \"100ms\"", &format!("queue = \"100ms\"\n{extra}"));
        let s = parse(&with("netem = { delay = \"30ms\" }")).unwrap();
        assert_eq!(
            s.hops[0].forward.netem,
            Some(NetemConfig {
                delay: Duration::from_millis(30),
                limit: 1000
            }),
            "netem's default limit"
        );
        // The stage's hold is not queuing: it counts with the links' delays for the metrics.
        assert_eq!(
            s.propagation_between_links(&s.flows[0]),
            Duration::from_millis(30)
        );
        for limit in ["1000", "\"1000pkts\""] {
            let s = parse(&with(&format!(
                "netem = {{ delay = \"5ms\", limit = {limit} }}"
            )))
            .unwrap();
            assert_eq!(s.hops[0].forward.netem.unwrap().limit, 1000);
        }
        let s = parse(&with(
            "jitter = { model = \"sub-ms\", dist = \"exponential\", mean = \"100us\", max = \"900us\" }",
        ))
        .unwrap();
        assert!(matches!(s.hops[0].forward.impairments.jitter, Jitter::SubMs(j) if !j.reorder));
        for (extra, field, says) in [
            (
                "netem = { delay = \"5ms\", limit = 0 }",
                "path.forward.netem.limit",
                "counts packets",
            ),
            (
                "netem = { delay = \"5ms\", limit = \"150KB\" }",
                "path.forward.netem.limit",
                "counts packets",
            ),
            (
                "netem = { delay = \"5ms\", limit = 1.5 }",
                "path.forward.netem.limit",
                "whole number",
            ),
            (
                "netem = { delay = \"20s\" }",
                "path.forward.netem.delay",
                "10s",
            ),
            (
                "netem = { delay = \"5ms\", jitter = \"1ms\" }",
                "path.forward.netem",
                "unknown field",
            ),
            ("netem = { limit = 10 }", "path.forward.netem", "delay"),
            (
                "jitter = { model = \"sub-ms\", max = \"2ms\" }",
                "path.forward.jitter.max",
                "at most 1ms",
            ),
            (
                "jitter = { model = \"sub-ms\" }",
                "path.forward.jitter.max",
                "needs max",
            ),
            (
                "jitter = { model = \"sub-ms\", max = \"500us\", dist = \"exponential\" }",
                "path.forward.jitter.mean",
                "needs mean",
            ),
        ] {
            let e = error_of(&with(extra));
            assert!(
                e.field.starts_with(field) && e.message.contains(says),
                "{extra}: expected an error at {field} saying {says:?}, got {e}"
            );
        }
        // A reverse link without a capacity has no queue to put a stage in front of.
        let e = error_of(&(OK.to_string() + "[path.reverse]\nnetem = { delay = \"5ms\" }\n"));
        assert!(
            e.field == "path.reverse.netem" && e.message.contains("no capacity"),
            "{e}"
        );
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
    fn referenced_files_are_where_the_core_reads_them() {
        let json = serde_json::json!({
            "path": {"hops": [
                {"name": "a", "forward": {"capacity": "1Mbps", "schedule": null}},
                {"name": "b", "forward": {"trace": "../t/b.trace"},
                 "reverse": {"schedule": "r.sched", "trace": "o.json#downlink"}}]},
            "flows": [{"encoder": {"model": "trace", "file": "f.frames"}},
                      {"encoder": "lagged"},
                      {"kind": "cbr", "encoder": {"model": "trace", "file": "x"}}]});
        let found = Scenario::referenced_files(&json, Path::new("/s/d")).unwrap();
        let brief: Vec<(String, String, String)> = found
            .iter()
            .map(|f| {
                (
                    serde_json::Value::Array(f.location.clone()).to_string(),
                    f.path.display().to_string(),
                    f.suffix.clone(),
                )
            })
            .collect();
        let want = [
            (r#"["path","hops",1,"forward","trace"]"#, "/s/t/b.trace", ""),
            (
                r#"["path","hops",1,"reverse","schedule"]"#,
                "/s/d/r.sched",
                "",
            ),
            (
                r#"["path","hops",1,"reverse","trace"]"#,
                "/s/d/o.json",
                "downlink",
            ),
            (r#"["flows",0,"encoder","file"]"#, "/s/d/f.frames", ""),
        ];
        let want: Vec<(String, String, String)> = want
            .iter()
            .map(|(a, b, c)| (a.to_string(), b.to_string(), c.to_string()))
            .collect();
        assert_eq!(brief, want);
        // An inline schedule names no file; a path field that cannot be read is named.
        let inline = serde_json::json!({"path": {"forward": {"schedule": [["0s", "1Mbps"]]}}});
        assert!(Scenario::referenced_files(&inline, Path::new("."))
            .unwrap()
            .is_empty());
        let e = Scenario::referenced_files(
            &serde_json::json!({"path": {"forward": {"trace": 3}}}),
            Path::new("."),
        )
        .unwrap_err();
        assert_eq!(e.field, "path.forward.trace");
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
