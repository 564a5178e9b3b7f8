//! Flows: what each flow of a scenario sends, as a tagged enum with one file per kind.
//!
//! A flow is written as one `[[flows]]` table. Its `kind` (default `"video"`) picks the file
//! that reads the rest: [`video`], [`cbr`], [`audio`], [`tcp`] (which hands `app = { model =
//! "short" }` to [`short_tcp`]) or [`dash`]. Each of those files holds its kind's spec (the
//! fields it takes, as a struct serde reads with `deny_unknown_fields`), the checks of their
//! values, the resolved flow, and the endpoints the flow is built into. The fields every kind
//! takes (name, timing, direction, hops, delays) are [`CommonSpec`], read here.
//!
//! How a table becomes a flow ([`FlowConfig::from_value`]):
//! 1. its keys are split between [`CommonSpec`] and the kind's spec by the field lists of the
//!    two structs (read off their `Deserialize` implementations, [`fields::fields_of`]), so a
//!    field of another kind is refused by name ("a cbr flow does not take this field (only
//!    video flows do)") and an unknown one with the fields the kind takes;
//! 2. serde reads each part, recording the path of a value it cannot read
//!    (`flows[0].recovery.fec`);
//! 3. the common part is checked and resolved ([`Common`]), then the kind's part, which builds
//!    and checks the flow's controller recipe ([`crate::ControllerRecipe`]).
//!
//! Adding a field to a kind touches that kind's file only; adding a kind is a new file and one
//! line in [`FlowKind`] and in [`KINDS`] (docs/architecture.md walks through both).

pub mod audio;
pub mod cbr;
pub mod dash;
pub mod fields;
pub mod short_tcp;
pub mod tcp;
pub mod video;

use crate::controller::ControllerRecipe;
use crate::error::{At, FieldError};
use crate::path::{resolve_flow_hops, HopConfig};
use rtcc_core::cc::{self, ControllerContext, Registry};
use rtcc_core::endpoint::Endpoint;
use rtcc_core::media::range::MediaRange;
use rtcc_core::packet::EcnMode;
use rtcc_core::{Bytes, Duration, Time};
use serde::de::DeserializeOwned;
use serde::Deserialize;
use std::ops::Range;
use std::path::Path;
use std::sync::Arc;

pub use audio::AudioFlow;
pub use cbr::CbrFlow;
pub use dash::DashFlow;
pub use short_tcp::ShortTcpFlow;
pub use tcp::TcpFlow;
pub use video::VideoFlow;

/// Default frame rate.
pub const DEFAULT_FPS: f64 = 30.0;
/// Default media payload per packet.
pub const DEFAULT_PAYLOAD: Bytes = Bytes(1200);

/// What a flow sends, with the settings of its kind.
// One value per flow of a scenario, built once per run: boxing the video variant to shrink the
// others would buy nothing but an indirection.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone)]
pub enum FlowKind {
    /// A video flow driven by a controller.
    Video(VideoFlow),
    /// Constant-rate cross traffic, no feedback, no congestion response (a UDP flow, like
    /// iperf's).
    Cbr(CbrFlow),
    /// Constant-rate RTP audio, not rate-adapted.
    Audio(AudioFlow),
    /// A TCP-like flow under a window-based controller.
    Tcp(TcpFlow),
    /// Short TCP downloads on fresh connections (RFC 8867 §5.7, `app = { model = "short" }`).
    ShortTcp(ShortTcpFlow),
    /// A DASH session: a server sending video segments over TCP to a player.
    Dash(DashFlow),
}

/// A kind's spec's field names.
type FieldList = fn() -> &'static [&'static str];

/// The kinds, as written in a scenario, with their spec's field lists.
const KINDS: &[(&str, FieldList)] = &[
    ("video", fields::fields_of::<video::VideoSpec>),
    ("cbr", fields::fields_of::<cbr::CbrSpec>),
    ("audio", fields::fields_of::<audio::AudioSpec>),
    ("tcp", fields::fields_of::<tcp::TcpSpec>),
    ("dash", fields::fields_of::<dash::DashSpec>),
];

/// A flow, resolved: what every kind has, and its kind's own settings.
#[derive(Debug, Clone)]
pub struct FlowConfig {
    pub name: String,
    pub kind: FlowKind,
    pub start: Time,
    pub stop: Time,
    /// Periods during which the sender is active, in order (one period `[start, stop]` when the
    /// scenario gives no schedule).
    pub active: Vec<(Time, Time)>,
    /// The flow's data goes over the reverse links (last hop first).
    pub reverse: bool,
    /// The hops the flow crosses (indices into [`crate::Scenario::hops`], in path order): its
    /// data crosses their forward links in order, its feedback their reverse links in reverse
    /// order (the other way round for a `reverse` flow).
    pub hops: Range<usize>,
    pub extra_delay: Duration,
    pub clock_offset: Duration,
}

/// The input files flow `index`'s table names (a video flow's `encoder = { model = "trace",
/// file = ... }`), as its kind reads them, each with where it is named.
pub(crate) fn file_references(
    index: usize,
    value: &serde_json::Value,
    base_dir: &Path,
) -> Vec<crate::path::FileReference> {
    let kind = value
        .get("kind")
        .and_then(|k| k.as_str())
        .unwrap_or("video");
    let Some(encoder) = value.get("encoder").filter(|_| kind == "video") else {
        return Vec::new();
    };
    rtcc_core::media::encoder::referenced_files(encoder, base_dir)
        .into_iter()
        .map(|(key, path)| crate::path::FileReference {
            location: vec!["flows".into(), index.into(), "encoder".into(), key.into()],
            path,
            suffix: String::new(),
        })
        .collect()
}

/// The fields every kind of flow takes.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommonSpec {
    pub name: Option<String>,
    /// `"video"` (default), `"cbr"`, `"audio"`, `"tcp"` or `"dash"`.
    pub kind: Option<String>,
    pub start: Option<Duration>,
    pub stop: Option<Duration>,
    /// On/off schedule: `[["0s", "40s"], ["60s", "120s"]]`; the flow is paused between the
    /// periods with its controller and encoder state kept (RFC 8867 §5.8).
    pub active: Option<Vec<(Duration, Duration)>>,
    /// `"forward"` (default) or `"reverse"`: which link carries the flow's data.
    pub direction: Option<String>,
    /// The hops the flow crosses, by name: a contiguous run in path order (default: all).
    pub hops: Option<Vec<String>>,
    pub extra_delay: Option<Duration>,
    pub clock_offset: Option<Duration>,
}

/// The common fields, checked: what a kind's file needs to resolve the rest.
#[derive(Debug, Clone)]
pub struct Common {
    pub at: At,
    pub name: String,
    pub start: Time,
    pub stop: Time,
    /// The flow gave an `active` schedule (some kinds refuse one).
    pub scheduled: bool,
    pub active: Vec<(Time, Time)>,
    pub reverse: bool,
    pub hops: Range<usize>,
    pub extra_delay: Duration,
    pub clock_offset: Duration,
}

/// What checking a flow may look at besides its own table.
pub struct Checking<'a> {
    /// Relative files (encoder traces) are read from here.
    pub base_dir: &'a Path,
    pub duration: Duration,
    pub hops: &'a [HopConfig],
    /// The scenario lists `[[path.hops]]` (a flow may then name the hops it crosses).
    pub hops_listed: bool,
    pub registry: &'a Registry,
    /// The flow groups of the flows checked so far, so a group's flows agree on its algorithm.
    pub groups: &'a cc::coupled::CouplingGroups,
}

impl Checking<'_> {
    /// What the controller of a flow of `common` is told when it is built, during the check.
    pub fn context(
        &self,
        common: &Common,
        video: Option<(f64, Bytes, MediaRange)>,
        ecn: EcnMode,
    ) -> ControllerContext {
        let capacity = crate::scenario::path_capacity(self.hops, &common.hops, common.reverse);
        controller_context(
            common.start,
            video,
            Some(Arc::new(capacity)),
            Some(self.groups),
            ecn,
        )
    }
}

/// What a flow's controller may know when it is created: a video flow's frame rate, payload
/// and media range (`video`; other flows have the defaults), the capacity it may be told, and
/// the run's flow groups (`None` where flows cannot share them), and how the flow uses ECN.
pub fn controller_context(
    start: Time,
    video: Option<(f64, Bytes, MediaRange)>,
    capacity: Option<Arc<dyn cc::CapacityView>>,
    coupling: Option<&cc::coupled::CouplingGroups>,
    ecn: EcnMode,
) -> ControllerContext {
    let (fps, max_payload, media) =
        video.unwrap_or((DEFAULT_FPS, DEFAULT_PAYLOAD, MediaRange::default()));
    ControllerContext {
        now: start,
        fps,
        max_payload,
        media,
        capacity,
        coupling: coupling.cloned(),
        ecn,
    }
}

/// What building a flow's endpoints needs besides the flow.
pub struct Building<'a> {
    /// The run's seed: every random stream of the flow is derived from it.
    pub seed: u64,
    /// The flow's index in the scenario (its seed streams and SSRCs).
    pub index: usize,
    /// What the flow's controller is told of the path ([`crate::Scenario::controller_capacity`]).
    pub capacity: &'a Arc<dyn cc::CapacityView>,
    pub registry: &'a Registry,
    /// The run's flow groups (RFC 8699); `None` where flows cannot share them.
    pub coupling: Option<&'a cc::coupled::CouplingGroups>,
    /// A video flow's SSRCs; `None`: `Ssrcs::for_flow(index)` (a live run with SRTP derives them
    /// from its key).
    pub ssrcs: Option<rtcc_core::endpoint::video_send::Ssrcs>,
}

impl Building<'_> {
    /// Build the flow's controller from its recipe.
    pub fn controller(
        &self,
        recipe: &ControllerRecipe,
        ctx: &ControllerContext,
    ) -> Result<Box<dyn cc::Controller>, String> {
        recipe
            .build(ctx, self.registry)
            .map_err(|e| format!("flows[{}]: {e}", self.index))
    }
}

impl FlowConfig {
    /// Read and check flow `index` from its table in the scenario.
    pub fn from_value(
        index: usize,
        value: serde_json::Value,
        check: &Checking,
    ) -> Result<FlowConfig, FieldError> {
        let at = At(index);
        let serde_json::Value::Object(table) = value else {
            return Err(FieldError::new(
                format!("flows[{index}]"),
                format!("expected a table of the flow's fields, got {value}"),
            ));
        };
        let kind = match table.get("kind") {
            None => "video".to_string(),
            Some(serde_json::Value::String(k)) => k.clone(),
            Some(other) => {
                return Err(at.err("kind", format!("invalid type: {other}, expected a string")))
            }
        };
        let names: Vec<&str> = KINDS.iter().map(|(k, _)| *k).collect();
        let Some((_, own_fields)) = KINDS.iter().find(|(k, _)| *k == kind) else {
            return Err(at.err(
                "kind",
                format!(
                    "unknown flow kind {kind:?}; valid kinds: {}",
                    names.join(", ")
                ),
            ));
        };
        let common_fields = fields::fields_of::<CommonSpec>();
        let own_fields = own_fields();
        let mut common = serde_json::Map::new();
        let mut own = serde_json::Map::new();
        for (key, v) in table {
            if common_fields.contains(&key.as_str()) {
                common.insert(key, v);
            } else if own_fields.contains(&key.as_str()) {
                own.insert(key, v);
            } else {
                return Err(at.err(&key, misplaced(&kind, &key, common_fields, own_fields)));
            }
        }
        let common: CommonSpec = read(at, common)?;
        let common = common.check(at, check)?;
        let kind = match kind.as_str() {
            "video" => video::VideoSpec::resolve(read(at, own)?, &common, check)?,
            "cbr" => cbr::CbrSpec::resolve(read(at, own)?, &common)?,
            "audio" => audio::AudioSpec::resolve(read(at, own)?, &common)?,
            "tcp" => tcp::TcpSpec::resolve(read(at, own)?, &common, check)?,
            "dash" => dash::DashSpec::resolve(read(at, own)?, &common, check)?,
            _ => unreachable!("every kind of KINDS is resolved"),
        };
        Ok(FlowConfig {
            name: common.name,
            kind,
            start: common.start,
            stop: common.stop,
            active: common.active,
            reverse: common.reverse,
            hops: common.hops,
            extra_delay: common.extra_delay,
            clock_offset: common.clock_offset,
        })
    }

    /// The flow's video settings, if it is a video flow.
    pub fn video(&self) -> Option<&VideoFlow> {
        match &self.kind {
            FlowKind::Video(v) => Some(v),
            _ => None,
        }
    }

    /// The flow's controller recipe (`None` for constant-rate flows).
    pub fn controller(&self) -> Option<&ControllerRecipe> {
        match &self.kind {
            FlowKind::Video(v) => Some(&v.controller),
            FlowKind::Tcp(t) => Some(&t.controller),
            FlowKind::ShortTcp(s) => Some(&s.controller),
            FlowKind::Dash(d) => Some(&d.controller),
            FlowKind::Cbr(_) | FlowKind::Audio(_) => None,
        }
    }

    /// The controller's registry name, `"cbr"` for constant-rate flows (`cbr` and `audio`).
    pub fn controller_name(&self) -> &str {
        self.controller().map_or("cbr", |c| c.name.as_str())
    }

    /// ECN-capable data (ECT(0), or ECT(1) for L4S) and CE reports back (RFC 3168; RFC 8888
    /// for video, ECN-Echo for TCP, per-packet reports for L4S TCP).
    pub fn ecn(&self) -> EcnMode {
        match &self.kind {
            FlowKind::Video(v) => v.ecn,
            FlowKind::Cbr(c) => c.ecn,
            FlowKind::Audio(a) => a.ecn,
            FlowKind::Tcp(t) => t.ecn,
            FlowKind::ShortTcp(s) => s.ecn,
            FlowKind::Dash(_) => EcnMode::Off,
        }
    }

    /// What the flow's controller may know when it is created ([`controller_context`]).
    pub fn context(
        &self,
        capacity: Option<Arc<dyn cc::CapacityView>>,
        coupling: Option<&cc::coupled::CouplingGroups>,
    ) -> ControllerContext {
        let video = self.video().map(|v| (v.fps, v.payload, v.media));
        controller_context(self.start, video, capacity, coupling, self.ecn())
    }

    /// Build the flow's two endpoints, `[A (sender), B (receiver)]`.
    pub fn endpoints(&self, b: &Building) -> Result<[Box<dyn Endpoint>; 2], String> {
        match &self.kind {
            FlowKind::Video(v) => v.endpoints(self, b),
            FlowKind::Cbr(c) => Ok(c.endpoints(self, b)),
            FlowKind::Audio(a) => Ok(a.endpoints(self, b)),
            FlowKind::Tcp(t) => t.endpoints(self, b),
            FlowKind::ShortTcp(s) => s.endpoints(self, b),
            FlowKind::Dash(d) => d.endpoints(self, b),
        }
    }

    /// B's clock at the flow's start.
    pub fn receiver_start(&self) -> Time {
        self.start + self.clock_offset
    }
}

impl FlowKind {
    /// `"video"`, `"cbr"`, `"audio"`, `"tcp"` or `"dash"`, as written in a scenario.
    pub fn name(&self) -> &'static str {
        match self {
            FlowKind::Video(_) => "video",
            FlowKind::Cbr(_) => "cbr",
            FlowKind::Audio(_) => "audio",
            FlowKind::Tcp(_) | FlowKind::ShortTcp(_) => "tcp",
            FlowKind::Dash(_) => "dash",
        }
    }

    /// A flow without a controller (constant rate): `cbr` and `audio`.
    pub fn is_unadapted(&self) -> bool {
        matches!(self, FlowKind::Cbr(_) | FlowKind::Audio(_))
    }

    /// An `audio` flow's packet: its interval and its size on the wire.
    pub fn audio_packet(&self) -> Option<(Duration, u64)> {
        match self {
            FlowKind::Audio(a) => Some(a.packet()),
            _ => None,
        }
    }
}

/// Why `key` is not a field of a `kind` flow: it belongs to other kinds (named), or to none.
fn misplaced(kind: &str, key: &str, common: &[&str], own: &[&str]) -> String {
    let owners: Vec<&str> = KINDS
        .iter()
        .filter(|(_, fields)| fields().contains(&key))
        .map(|(k, _)| *k)
        .collect();
    if owners.is_empty() {
        let expected: Vec<String> = common.iter().chain(own).map(|f| format!("`{f}`")).collect();
        format!(
            "unknown field `{key}`, expected one of {}",
            expected.join(", ")
        )
    } else {
        format!(
            "a {kind} flow does not take this field (only {} flows do)",
            owners.join(" and ")
        )
    }
}

/// Read one part of a flow's table with serde, naming the field of a value it cannot read.
fn read<T: DeserializeOwned>(
    at: At,
    part: serde_json::Map<String, serde_json::Value>,
) -> Result<T, FieldError> {
    serde_path_to_error::deserialize(serde_json::Value::Object(part)).map_err(|e| {
        let path = e.path().to_string();
        let field = match path.as_str() {
            "." => format!("flows[{}]", at.0),
            p => at.field(p),
        };
        FieldError::new(field, e.into_inner().to_string())
    })
}

impl CommonSpec {
    fn check(self, at: At, check: &Checking) -> Result<Common, FieldError> {
        let duration = check.duration;
        if let Some(periods) = &self.active {
            if self.start.is_some() || self.stop.is_some() {
                return Err(at.err(
                    "active",
                    "give either an active schedule or start/stop, not both",
                ));
            }
            if periods.is_empty() {
                return Err(at.err("active", "needs at least one period"));
            }
            for (k, w) in periods.iter().enumerate() {
                if w.0 >= w.1 || (k > 0 && periods[k - 1].1 >= w.0) {
                    return Err(at.err(
                        &format!("active[{k}]"),
                        format!(
                            "periods must be [from, to] with from < to, in order and apart; got [{}, {}]",
                            w.0, w.1
                        ),
                    ));
                }
            }
        }
        let start = self
            .active
            .as_ref()
            .and_then(|p| p.first().map(|w| w.0))
            .unwrap_or(self.start.unwrap_or(Duration::ZERO));
        let stop = self
            .active
            .as_ref()
            .and_then(|p| p.last().map(|w| w.1))
            .unwrap_or(self.stop.unwrap_or(duration));
        if stop > duration {
            return Err(at.err(
                "stop",
                format!("{stop} is after the end of the run ({duration})"),
            ));
        }
        if start >= stop {
            return Err(at.err(
                "start",
                format!("{start} must be before the flow's stop ({stop})"),
            ));
        }
        let reverse = match self.direction.as_deref() {
            None | Some("forward") => false,
            Some("reverse") => true,
            Some(other) => {
                return Err(at.err(
                    "direction",
                    format!("unknown direction {other:?}; valid: forward, reverse"),
                ))
            }
        };
        let hops = match &self.hops {
            None => 0..check.hops.len(),
            Some(_) if !check.hops_listed => {
                return Err(at.err(
                    "hops",
                    "names hops of [[path.hops]]; this scenario has one link pair ([path.forward]), which every flow crosses",
                ))
            }
            Some(names) => resolve_flow_hops(names, check.hops, &at.field("hops"))?,
        };
        let active = match &self.active {
            Some(p) => p.iter().map(|w| (Time(w.0 .0), Time(w.1 .0))).collect(),
            None => vec![(Time(start.0), Time(stop.0))],
        };
        Ok(Common {
            at,
            name: self.name.unwrap_or_else(|| format!("flow{}", at.0)),
            start: Time(start.0),
            stop: Time(stop.0),
            scheduled: self.active.is_some(),
            active,
            reverse,
            hops,
            extra_delay: self.extra_delay.unwrap_or(Duration::ZERO),
            clock_offset: self.clock_offset.unwrap_or(Duration::ZERO),
        })
    }
}

/// `ecn = true` (RFC 3168, ECT(0)), `false`, or `"l4s"` (ECT(1), RFC 9331): a value whose
/// error says what is allowed.
#[derive(Debug, Clone, Copy, Default)]
pub struct EcnFlag(pub EcnMode);

impl<'de> Deserialize<'de> for EcnFlag {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<EcnFlag, D::Error> {
        match serde_json::Value::deserialize(d)? {
            serde_json::Value::Bool(b) => Ok(EcnFlag(b.into())),
            serde_json::Value::String(s) if s == "l4s" => Ok(EcnFlag(EcnMode::L4s)),
            other => Err(serde::de::Error::custom(format!(
                "expected true or false (RFC 3168 ECN, ECT(0)) or \"l4s\" (ECT(1)), found {other}"
            ))),
        }
    }
}

/// The builtin video controllers that answer CE marks smoothly, by the share marked, so that
/// they may send ECT(1) (RFC 9331 §4.3 asks an L4S sender to respond to the marks): `scream`,
/// SCReAM v2, L4S's reference video sender, whose window backs off by `l4sAlpha/2` with
/// `l4sAlpha` following the marked fraction; `prague`, whose rate goes as `1/p` (DCTCP's scalable
/// response); and `nada`, whose price term grows with the marked share (`DMARK·(p_mark/PMRREF)²`,
/// RFC 8698 §4.2) so that its rate rests where that price meets `PRIO·XREF·RMAX / r` (§4.3): it
/// goes as `1/p_mark²`, not L4S's `1/p`, but it neither ignores a mark nor halves on one, and over
/// DualPI2 it keeps the L queue under 2 ms beside Prague (`crates/rtcc-sim/tests/l4s.rs`). A
/// controller that ignores CE (gcc) would fill the L4S queue; one that halves on every mark would
/// starve in it.
pub(crate) const L4S_VIDEO_CONTROLLERS: [&str; 3] = ["nada", "prague", "scream"];

/// A video flow's `ecn = "l4s"` needs a controller of [`L4S_VIDEO_CONTROLLERS`]; controllers
/// registered by the user are trusted to answer the marks.
pub(crate) fn check_l4s_video(at: At, controller: &str, mode: EcnMode) -> Result<(), FieldError> {
    let builtin = rtcc_core::cc::registry().lookup(controller).is_ok();
    if mode == EcnMode::L4s && builtin && !L4S_VIDEO_CONTROLLERS.contains(&controller) {
        return Err(at.err(
            "ecn",
            format!(
                "ecn = \"l4s\" puts the flow in an L4S queue, whose frequent marks its controller \
                 must answer by the share marked (RFC 9331 §4.3): {} do; {controller} does not \
                 (write ecn = true for RFC 3168 ECN)",
                L4S_VIDEO_CONTROLLERS.join(", ")
            ),
        ));
    }
    Ok(())
}

/// A flow's `packet_size`: `default` when absent, else between 1 byte and a full packet.
pub(crate) fn packet_size(at: At, given: Option<Bytes>, default: u64) -> Result<Bytes, FieldError> {
    let size = given.unwrap_or(Bytes(default));
    if size.0 == 0 || size.0 > crate::MAX_PACKET {
        return Err(at.err(
            "packet_size",
            format!("{size} must be between 1B and {}B", crate::MAX_PACKET),
        ));
    }
    Ok(size)
}
