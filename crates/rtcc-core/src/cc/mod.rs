//! Rate and congestion controllers behind one trait, and a registry that builds them by name.
//!
//! A [`Controller`] is sans-IO: it is told what happened (a packet was sent, feedback arrived,
//! a frame was acknowledged, a timer fired), always with the current time, and it answers with a
//! [`Decision`]: the encoder's target bitrate, the pacing rate, an optional congestion window and
//! a padding rate. The same controller object therefore runs in the simulator, in a live
//! transport or in a user's own media stack.
//!
//! Controllers are created from a name and a table of parameters by [`create`]. Each controller
//! has a `Config` struct whose fields are its parameters (with documented defaults); unknown
//! names and unknown parameters are rejected with the list of valid ones.

use crate::media::quality::Resolution;
use crate::packet::{FeedbackReport, FrameAck, FrameInfo, SentPacket};
use crate::units::{Bytes, Duration, Rate, Time};
use serde::de::DeserializeOwned;
use std::sync::Arc;

pub mod bbr;
pub mod copa;
pub mod cubic;
pub mod delivery_rate;
pub mod fixed;
pub mod gcc;
pub mod oracle;
pub mod reno;
pub mod rocc;
pub(crate) mod rtt_window;
pub mod sqp;
pub mod vidaptive;

/// What the controller asks of the sender right now.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Decision {
    /// Bitrate the encoder should aim for.
    pub target_bitrate: Rate,
    /// Rate at which the pacer releases packets; `None` sends as fast as they come.
    pub pacing_rate: Option<Rate>,
    /// Limit on bytes in flight; `None` for rate-based controllers.
    pub cwnd: Option<u64>,
    /// Rate of padding to send when no media is waiting (0 for none).
    pub padding_rate: Rate,
}

impl Decision {
    pub fn rate_only(target: Rate, pacing: Option<Rate>) -> Decision {
        Decision {
            target_bitrate: target,
            pacing_rate: pacing,
            cwnd: None,
            padding_rate: Rate::ZERO,
        }
    }
}

/// A request to send a bandwidth probe: a short cluster of packets at `rate`, faster than the
/// pacing rate, whose arrival spacing tells the controller whether the path carries that rate
/// (libwebrtc's `ProbeClusterConfig`, sent by its `BitrateProber`). A controller asks for one
/// through [`Controller::probe`].
///
/// The pacer sends the cluster's packets `rate` apart (by size) from its first one, taking queued
/// media first and padding of `padding_size` bytes (kind `Probe`) when no media waits, until both
/// `min_bytes` and `min_packets` have left ([`ProbeCluster::is_complete`]). Every packet the
/// sender sends while the controller asks for a cluster is a packet of that cluster, so the
/// controller can count them in `on_packet_sent`. A pacer sends each id once and ids only grow:
/// a controller keeps asking for a cluster until it has seen it complete, then asks for the next
/// one (or none).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ProbeCluster {
    pub id: u32,
    pub rate: Rate,
    pub min_bytes: u32,
    pub min_packets: u32,
    /// Wire size of the padding packets of the cluster (at least 1 byte is sent).
    pub padding_size: u32,
}

impl ProbeCluster {
    /// Whether `packets` packets totalling `bytes` complete the cluster.
    pub fn is_complete(&self, bytes: u64, packets: u32) -> bool {
        bytes >= self.min_bytes as u64 && packets >= self.min_packets
    }
}

/// What the sender shows a controller when a frame has just been captured
/// ([`Controller::frame_action`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FrameView {
    /// When the oldest media packet still in the pacer queue was queued (`None`: empty queue).
    pub oldest_queued: Option<Time>,
    /// The resolution the encoder codes at (`None` for models without a ladder).
    pub resolution: Option<Resolution>,
}

/// What to do with a captured frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EncodeAction {
    /// Encode it at the controller's target.
    #[default]
    Encode,
    /// Skip it: the encoder is paused for this frame (a target of 0).
    Skip,
    /// Reset the encoder first (flush the pacer queue, restart from a keyframe), then encode it.
    Reset,
}

/// A controller's answer to [`Controller::frame_action`].
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct FrameAction {
    pub encode: EncodeAction,
    /// Code this frame and the following ones at this resolution (`None`: keep it).
    pub resolution: Option<Resolution>,
}

/// How often the receiver should send feedback for this controller.
#[derive(Debug, Clone, Copy, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FeedbackPolicy {
    /// Send a report every `interval` while there is something to report.
    pub interval: Option<Duration>,
    /// Send a report as soon as the last packet of a frame arrives.
    #[serde(default)]
    pub per_frame: bool,
    /// Send a per-frame acknowledgement when a frame is complete (for controllers with
    /// frame-level hooks).
    #[serde(default)]
    pub frame_acks: bool,
}

impl Default for FeedbackPolicy {
    /// Transport-wide feedback every 50 ms (libwebrtc sends it every 50–250 ms depending on rate).
    fn default() -> Self {
        FeedbackPolicy {
            interval: Some(Duration::from_millis(50)),
            per_frame: false,
            frame_acks: false,
        }
    }
}

/// One rate/congestion controller.
pub trait Controller: Send {
    /// A packet left the sender.
    fn on_packet_sent(&mut self, _now: Time, _pkt: &SentPacket) {}
    /// Feedback arrived: per-packet receive times (receiver clock) or losses.
    fn on_feedback(&mut self, now: Time, report: &FeedbackReport);
    /// The receiver has a frame whole.
    fn on_frame_ack(&mut self, _now: Time, _ack: &FrameAck) {}
    /// The encoder produced a frame (before it is packetised).
    fn on_frame_encoded(&mut self, _now: Time, _frame: &FrameInfo) {}
    /// A retransmission timeout fired at the sender: everything in flight is presumed lost and
    /// has been forgotten (RFC 6298 §5); window-based controllers collapse their window
    /// (RFC 5681 §3.1). The losses are not reported again through `on_feedback`.
    fn on_rto(&mut self, _now: Time) {}
    /// A timer set through [`Controller::next_timeout`] expired.
    fn on_timeout(&mut self, _now: Time) {}
    /// When the controller next wants [`Controller::on_timeout`]; `None` for never.
    fn next_timeout(&self) -> Option<Time> {
        None
    }
    /// What the sender should do now.
    fn decision(&self) -> Decision;
    /// A bandwidth-probe cluster to send now, if any (see [`ProbeCluster`]).
    fn probe(&self) -> Option<ProbeCluster> {
        None
    }
    /// A frame was captured at `now` and is about to be encoded: the controller may skip it,
    /// reset the encoder first or change the resolution. The default encodes it unchanged.
    fn frame_action(&mut self, _now: Time, _view: &FrameView) -> FrameAction {
        FrameAction::default()
    }
    /// Largest padding packet the controller wants (the sender uses the smaller of this and the
    /// flow's padding size); `None` keeps the flow's.
    fn padding_size(&self) -> Option<u32> {
        None
    }
    /// Internal signals for logs and plots (name, value), e.g. `("trend", 0.3)`.
    fn state(&self, _out: &mut Vec<(&'static str, f64)>) {}
}

/// A view of the bottleneck's capacity, for reference controllers that are allowed to know it.
pub trait CapacityView: Send + Sync {
    /// Bytes the link can carry in `[from, to)`.
    fn bytes_between(&self, from: Time, to: Time) -> f64;
}

/// What a controller may know about where it runs when it is created.
#[derive(Clone)]
pub struct ControllerContext {
    /// Creation time (the flow's start).
    pub now: Time,
    /// Frame rate of the video source.
    pub fps: f64,
    /// Largest media payload per packet.
    pub max_payload: Bytes,
    /// Capacity of the forward bottleneck (only reference controllers such as `oracle` use it).
    pub capacity: Option<Arc<dyn CapacityView>>,
}

/// Parameters as written in a scenario (`params = { rate = "5Mbps" }`).
pub type Params = toml::Table;

/// A registry error that says what is valid.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ControllerError {
    #[error("unknown controller {name:?}; valid controllers: {valid}")]
    UnknownController { name: String, valid: String },
    #[error("controller {controller:?} has no parameter {param:?}; valid parameters: {valid}")]
    UnknownParam {
        controller: String,
        param: String,
        valid: String,
    },
    #[error("controller {controller:?}: {message}")]
    BadParams { controller: String, message: String },
}

/// A parameter's documentation for `rtcc controllers` and the docs.
#[derive(Debug, Clone, Copy)]
pub struct ParamDoc {
    pub name: &'static str,
    /// Default as it would be written in a scenario; empty if the parameter is required.
    pub default: &'static str,
    pub doc: &'static str,
}

/// Creates a controller from its parameters.
pub type BuildFn = fn(&Params, &ControllerContext) -> Result<Box<dyn Controller>, ControllerError>;

/// A registered controller.
pub struct ControllerInfo {
    pub name: &'static str,
    pub summary: &'static str,
    pub params: &'static [ParamDoc],
    pub feedback: FeedbackPolicy,
    pub build: BuildFn,
}

/// Every controller rtcc knows, in the order they appear in comparisons.
pub fn registry() -> &'static [ControllerInfo] {
    static REGISTRY: &[ControllerInfo] = &[
        fixed::INFO,
        oracle::INFO,
        gcc::INFO,
        sqp::INFO,
        reno::INFO,
        cubic::INFO,
        bbr::INFO,
        copa::INFO,
        rocc::INFO,
        vidaptive::INFO,
    ];
    REGISTRY
}

pub fn lookup(name: &str) -> Result<&'static ControllerInfo, ControllerError> {
    registry()
        .iter()
        .find(|c| c.name == name)
        .ok_or_else(|| ControllerError::UnknownController {
            name: name.to_string(),
            valid: registry()
                .iter()
                .map(|c| c.name)
                .collect::<Vec<_>>()
                .join(", "),
        })
}

/// Build a controller from its registered name and parameters.
pub fn create(
    name: &str,
    params: &Params,
    ctx: &ControllerContext,
) -> Result<Box<dyn Controller>, ControllerError> {
    let info = lookup(name)?;
    check_params(info, params)?;
    (info.build)(params, ctx)
}

/// Reject parameters the controller does not have (before deserialising, so the message lists
/// the valid names even for controllers with many fields).
pub fn check_params(info: &ControllerInfo, params: &Params) -> Result<(), ControllerError> {
    for key in params.keys() {
        if !info.params.iter().any(|p| p.name == key) {
            return Err(ControllerError::UnknownParam {
                controller: info.name.to_string(),
                param: key.clone(),
                valid: if info.params.is_empty() {
                    "(none)".to_string()
                } else {
                    info.params
                        .iter()
                        .map(|p| p.name)
                        .collect::<Vec<_>>()
                        .join(", ")
                },
            });
        }
    }
    Ok(())
}

/// Box a controller for the registry, turning its constructor's message into a registry error.
pub fn boxed<C: Controller + 'static>(
    controller: &str,
    built: Result<C, String>,
) -> Result<Box<dyn Controller>, ControllerError> {
    built
        .map(|c| Box::new(c) as Box<dyn Controller>)
        .map_err(|message| ControllerError::BadParams {
            controller: controller.to_string(),
            message,
        })
}

/// Deserialise a controller's `Config` from its parameter table.
pub fn parse_config<C: DeserializeOwned>(
    controller: &str,
    params: &Params,
) -> Result<C, ControllerError> {
    toml::Value::Table(params.clone())
        .try_into()
        .map_err(|e: toml::de::Error| ControllerError::BadParams {
            controller: controller.to_string(),
            message: e.message().trim().to_string(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    struct TenMbps;
    impl CapacityView for TenMbps {
        fn bytes_between(&self, from: Time, to: Time) -> f64 {
            Rate::from_mbps(10.0).bytes_in(to - from)
        }
    }

    fn ctx() -> ControllerContext {
        ControllerContext {
            now: Time::ZERO,
            fps: 30.0,
            max_payload: Bytes(1200),
            capacity: Some(Arc::new(TenMbps)),
        }
    }

    #[test]
    fn unknown_controller_lists_valid_names() {
        let e = create("nosuch", &Params::new(), &ctx()).err().unwrap();
        let msg = e.to_string();
        assert!(msg.contains("fixed") && msg.contains("oracle"), "{msg}");
    }

    #[test]
    fn unknown_param_lists_valid_params() {
        let params: Params = toml::from_str("rat = \"1Mbps\"").unwrap();
        let e = create("fixed", &params, &ctx()).err().unwrap().to_string();
        assert!(e.contains("\"rat\"") && e.contains("rate"), "{e}");
    }

    #[test]
    fn bad_value_names_the_problem() {
        let params: Params = toml::from_str("rate = 5").unwrap();
        let e = create("fixed", &params, &ctx()).err().unwrap().to_string();
        assert!(e.contains("has no unit"), "{e}");
        let e = create("fixed", &Params::new(), &ctx())
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.contains("rate"),
            "a missing required parameter is named: {e}"
        );
    }

    #[test]
    fn every_registered_controller_builds_with_documented_defaults() {
        for info in registry() {
            let mut params = Params::new();
            for p in info.params {
                if p.default.is_empty() {
                    params.insert(p.name.into(), toml::Value::String("1Mbps".into()));
                }
            }
            let c = (info.build)(&params, &ctx());
            assert!(c.is_ok(), "{} failed to build: {:?}", info.name, c.err());
        }
    }
}
