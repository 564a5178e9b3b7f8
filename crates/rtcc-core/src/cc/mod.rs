//! Rate and congestion controllers behind one trait, and a registry that builds them by name.
//!
//! A [`Controller`] is sans-IO: it is told what happened (a packet was sent, feedback arrived,
//! a timer fired), always with the current time, and it answers with a [`Decision`]: the
//! encoder's target bitrate, the pacing rate, an optional congestion window, a padding rate and
//! size, and an optional bandwidth probe. Controllers that act on video frames also implement
//! [`FrameController`]. The same controller object therefore runs in the simulator, in a live
//! transport or in a user's own media stack.
//!
//! Controllers are created from a name and a table of parameters by a [`Registry`]
//! ([`Registry::builtin`] has rtcc's own; users register more). Each controller has a `Config`
//! struct whose fields are its parameters, declared once with their defaults and docs
//! (`params.rs` derives the documentation `rtcc controllers` shows); unknown names and unknown
//! parameters are rejected with the list of valid ones.

use crate::packet::{FeedbackReport, FrameAck, FrameInfo, RateReport, SentPacket};
use crate::units::{Bytes, Duration, Rate, Time};
use crate::video::quality::Resolution;
use serde::de::DeserializeOwned;
use std::sync::Arc;

pub mod agent;
pub mod bbr;
pub mod bbr2;
pub mod bbr_common;
pub mod c3g;
pub mod c3g_bbr;
pub mod copa;
pub mod coupled;
pub mod cubic;
pub mod delivery_rate;
pub mod fixed;
pub mod gcc;
pub mod nada;
pub mod oracle;
pub(crate) mod params;
pub mod prague;
mod registry;
pub mod reno;
pub mod rocc;
pub(crate) mod rtt_window;
pub mod scream;
pub mod sqp;
pub mod vidaptive;

pub use registry::{
    build_fn, check_params, create, lookup, registry, BuildFn, ControllerError, ControllerInfo,
    ParamDoc, Registry,
};

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
    /// A bandwidth-probe cluster to send now, if any (see [`ProbeCluster`]).
    pub probe: Option<ProbeCluster>,
    /// Largest padding packet the controller wants (the sender uses the smaller of this and the
    /// flow's padding size); `None` keeps the flow's. The sender reads it once, when it is built.
    pub padding_size: Option<u32>,
}

impl Decision {
    pub fn rate_only(target: Rate, pacing: Option<Rate>) -> Decision {
        Decision {
            target_bitrate: target,
            pacing_rate: pacing,
            cwnd: None,
            padding_rate: Rate::ZERO,
            probe: None,
            padding_size: None,
        }
    }
}

/// A request to send a bandwidth probe: a short cluster of packets at `rate`, faster than the
/// pacing rate, whose arrival spacing tells the controller whether the path carries that rate
/// (libwebrtc's `ProbeClusterConfig`, sent by its `BitrateProber`). A controller asks for one
/// through [`Decision::probe`].
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
/// ([`FrameController::frame_action`]).
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

/// A controller's answer to [`FrameController::frame_action`].
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct FrameAction {
    pub encode: EncodeAction,
    /// Code this frame and the following ones at this resolution (`None`: keep it).
    pub resolution: Option<Resolution>,
}

/// The shortest feedback or rate-report interval a policy may ask for.
pub const MIN_FEEDBACK_INTERVAL: Duration = Duration(1_000_000);

/// How often the receiver should send feedback for this controller.
#[derive(Debug, Clone, Copy, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FeedbackPolicy {
    /// Send a report every `interval` while there is something to report.
    pub interval: Option<Duration>,
    /// Send a report as soon as the last packet of a frame arrives.
    #[serde(default)]
    pub per_frame: bool,
    /// Send a per-frame acknowledgement ([`FrameController::on_frame_ack`]) when the receiver has
    /// a frame whole. Only controllers that use them ask for them.
    #[serde(default)]
    pub frame_acks: bool,
    /// Send a rate report ([`Controller::on_rate_report`]) every this long: the bytes and packets
    /// the receiver got since its previous report (C³G's μ, reported every Δt). `None`: none.
    /// Only video receivers send them.
    #[serde(default)]
    pub rate_reports: Option<Duration>,
}

impl FeedbackPolicy {
    /// Whether the receiver can follow this policy: `Err((field, problem))`, with `field` the key
    /// at fault (`""` for the policy as a whole), for the caller to name where it was written.
    pub fn check(&self) -> Result<(), (&'static str, &'static str)> {
        if self.interval.is_none() && !self.per_frame {
            return Err(("", "set an interval, per_frame = true, or both"));
        }
        // Judgment call: at least 1 ms. Real feedback comes every 10–250 ms (transport-wide
        // feedback 50–250 ms, RFC 8888 about once per frame); shorter intervals only flood the
        // reverse path, and "1ns" made a 5 s run take minutes (a report per nanosecond of
        // simulated time) or grow memory until the core aborted.
        let too_short = |d: Option<Duration>| d.is_some_and(|d| d < MIN_FEEDBACK_INTERVAL);
        if too_short(self.interval) {
            return Err(("interval", "must be at least 1ms"));
        }
        if too_short(self.rate_reports) {
            return Err(("rate_reports", "must be at least 1ms"));
        }
        Ok(())
    }
}

impl Default for FeedbackPolicy {
    /// Transport-wide feedback every 50 ms (libwebrtc sends it every 50–250 ms depending on rate).
    fn default() -> Self {
        FeedbackPolicy {
            interval: Some(Duration::from_millis(50)),
            per_frame: false,
            frame_acks: false,
            rate_reports: None,
        }
    }
}

/// The media settings a controller needs to work as its paper describes (its testbed's sender),
/// declared beside its [`FeedbackPolicy`] in its [`ControllerInfo`]. A video flow takes each one
/// its scenario does not write; a value the scenario writes always wins. Each is written as a
/// scenario's `[[flows]]` field of the same name (docs/scenarios.md); `None` leaves rtcc's own
/// default (`encoder = "ideal"`, `degradation = "balanced"`, `pushback` and `frame_dropper` on,
/// no `vbv`).
/// A run's `facts.json` shows the settings each video flow ran with and which came from here.
#[derive(Debug, Clone, Default, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MediaDefaults {
    /// The encoder model: a name (`"lagged"`) or a table (`{ model = "lagged", noise = 0.1 }`).
    pub encoder: Option<serde_json::Value>,
    /// Quality scaling, WebRTC's degradation preference (`"disabled"`, `"balanced"`, ...).
    pub degradation: Option<String>,
    /// Pacer pushback.
    pub pushback: Option<bool>,
    /// The frame dropper.
    pub frame_dropper: Option<bool>,
    /// Peak-constrained rate control: the encoder's video buffering verifier, in frames of its
    /// target (no frame above that many frame targets). Applied where the flow's encoder models
    /// it ([`crate::media::encoder::EncoderConfig::models_vbv`]), left out elsewhere.
    pub vbv: Option<f64>,
}

impl MediaDefaults {
    /// The field names, as a scenario writes them.
    pub const FIELDS: [&'static str; 5] =
        ["encoder", "degradation", "pushback", "frame_dropper", "vbv"];

    /// Whether the controller declares none.
    pub fn is_empty(&self) -> bool {
        *self == MediaDefaults::default()
    }

    /// Whether a video flow can take these settings: `Err((field, problem))`. An encoder table
    /// that names a file reads it relative to `base_dir`.
    pub fn check(&self, base_dir: &std::path::Path) -> Result<(), (String, String)> {
        if let Some(v) = &self.encoder {
            crate::media::encoder::EncoderConfig::from_value(v, base_dir).map_err(|(sub, m)| {
                let field = if sub.is_empty() {
                    "encoder".into()
                } else {
                    format!("encoder.{sub}")
                };
                (field, m)
            })?;
        }
        if let Some(p) = &self.degradation {
            crate::media::degradation::Preference::parse(p)
                .map_err(|m| ("degradation".to_string(), m))?;
        }
        if let Some(k) = self.vbv {
            crate::media::encoder::check_vbv(k).map_err(|m| ("vbv".to_string(), m))?;
        }
        Ok(())
    }
}

/// One rate/congestion controller.
pub trait Controller: Send {
    /// A packet left the sender.
    fn on_packet_sent(&mut self, _now: Time, _pkt: &SentPacket) {}
    /// Feedback arrived: per-packet receive times (receiver clock) or losses.
    fn on_feedback(&mut self, now: Time, report: &FeedbackReport);
    /// A retransmission timeout fired at the sender. `in_flight`: the bytes still in flight
    /// after the timeout marked what it presumes lost (those losses are not reported again
    /// through `on_feedback`). The TCP sender marks as Linux's `tcp_timeout_mark_lost` does
    /// (the head, and what was sent at least RACK.rtt ago), so `in_flight` may be above zero;
    /// the video sender forgets everything (RFC 6298 §5) and passes 0. Window-based
    /// controllers collapse their window (RFC 5681 §3.1) to Linux's `tcp_enter_loss` value,
    /// `in_flight` plus one segment (one segment when nothing is left in flight).
    fn on_rto(&mut self, _now: Time, _in_flight: u64) {}
    /// The TCP sender found its last window reduction spurious and undoes it (Linux
    /// `tcp_undo_cwnd_reduction`, reached from `tcp_try_undo_loss` and `tcp_try_undo_recovery`
    /// after a retransmission timeout: F-RTO, RFC 5682 §3.1, judged the timeout spurious, every
    /// retransmission came back as a DSACK, or the original of the head arrived). Loss-based
    /// windows restore the window and `ssthresh` saved when they reduced (Reno and Cubic:
    /// `tcp_reno_undo_cwnd`, `cwnd = max(cwnd, prior_cwnd)`, and `ssthresh` back to the prior
    /// one if it was larger) and leave their recovery state. Default: nothing (Linux's
    /// `bbr_undo_cwnd` keeps the current window too).
    fn on_undo(&mut self, _now: Time) {}
    /// Whether the TCP sender spreads this controller's window reduction in fast recovery with
    /// proportional rate reduction (RFC 6937 as Linux `tcp_cwnd_reduction` runs it): true for
    /// controllers whose Linux module leaves recovery to the TCP stack (no `cong_control` hook:
    /// Reno, Cubic); false (the default) for those that set their own window in recovery (BBR's
    /// packet conservation) or are not Linux's.
    fn uses_prr(&self) -> bool {
        false
    }
    /// A TCP sender starts transmitting again after an idle period longer than its RTO with
    /// nothing in flight (Linux `tcp_cwnd_restart` and `CA_EVENT_TX_START`, applied when
    /// `net.ipv4.tcp_slow_start_after_idle` is 1): window-based controllers may restart their
    /// window (RFC 5681 §4.1, RFC 2861) or their pacing. Default: nothing.
    fn on_idle_restart(&mut self, _now: Time) {}
    /// A TCP sender with a send buffer found, as the application wrote, less than one MSS of
    /// written data unsent with the window open and no loss waiting (Linux
    /// `tcp_rate_check_app_limited` at each `sendmsg`): mark the connection application-limited
    /// with `in_flight` bytes outstanding. Controllers with a delivery-rate estimator (BBR,
    /// BBRv2) set its app-limited bubble; the default does nothing (without a send buffer the
    /// sender never calls it, and the estimators infer the bubble from send gaps).
    fn on_app_limited(&mut self, _in_flight: u64) {}
    /// A TCP sender that uses ECN got an acknowledgement with ECN-Echo (RFC 3168 §6.1.2): a
    /// router marked one of its packets CE instead of dropping it. The sender calls this at most
    /// once per window of data (Linux `tcp_enter_cwr()` only from the Open state) and
    /// retransmits nothing. Loss-based windows reduce as for a fast retransmit (Reno, Cubic);
    /// the default does nothing (BBR, like Linux's `tcp_bbr`, ignores ECN; controllers that
    /// read CE marks per packet see them in [`PacketResult::ecn`](crate::packet::PacketResult)).
    fn on_ecn_echo(&mut self, _now: Time) {}
    /// A rate report arrived: what the receiver got in its last window (receiver clock; sent
    /// only if [`FeedbackPolicy::rate_reports`] is set, one per interval, also for a window in
    /// which nothing arrived). Default: nothing.
    fn on_rate_report(&mut self, _now: Time, _report: &RateReport) {}
    /// A timer set through [`Controller::next_timeout`] expired.
    fn on_timeout(&mut self, _now: Time) {}
    /// When the controller next wants [`Controller::on_timeout`]; `None` for never.
    fn next_timeout(&self) -> Option<Time> {
        None
    }
    /// What the sender should do now.
    fn decision(&self) -> Decision;
    /// The frame-level hooks, for controllers that act on video frames (`None`: it does not).
    /// The packets a frame must have at least: SQP's bandwidth sample is a frame's dispersion,
    /// which a one-packet frame does not have, so it asks for 2 and the packetizer cuts small
    /// frames in halves ([`crate::video::packetizer`]). Default 1.
    fn min_packets_per_frame(&self) -> u32 {
        1
    }
    fn frame_controller(&mut self) -> Option<&mut dyn FrameController> {
        None
    }
    /// Internal signals for logs and plots (name, value), e.g. `("trend", 0.3)`.
    fn state(&self, _out: &mut Vec<(&'static str, f64)>) {}
    /// Make `rate` the controller's rate from now on, as if it had computed it itself: the
    /// coupled congestion control of RFC 8699 (§5.3, `coupled.rs`) hands each flow its share of
    /// the aggregate and requires the controller to use it as its new rate. Returns whether the
    /// controller can (default: it cannot, and is left unchanged). Setting the rate the
    /// controller already has changes nothing, so `set_rate(now, decision().target_bitrate)`
    /// asks whether it can without side effects.
    fn set_rate(&mut self, _now: Time, _rate: Rate) -> bool {
        false
    }
    /// The flow stopped for good: nothing more will be sent (the controller may still be asked
    /// for its state). Default: nothing.
    fn on_stop(&mut self, _now: Time) {}
}

/// The optional frame-level side of a [`Controller`], reached through
/// [`Controller::frame_controller`]: a video sender calls it, a bulk (TCP) sender never does.
pub trait FrameController {
    /// The receiver has a frame whole (sent only if [`FeedbackPolicy::frame_acks`] is set).
    fn on_frame_ack(&mut self, _now: Time, _ack: &FrameAck) {}
    /// The encoder produced a frame (before it is packetised).
    fn on_frame_encoded(&mut self, _now: Time, _frame: &FrameInfo) {}
    /// A frame was captured at `now` and is about to be encoded: the controller may skip it,
    /// reset the encoder first or change the resolution. The default encodes it unchanged.
    fn frame_action(&mut self, _now: Time, _view: &FrameView) -> FrameAction {
        FrameAction::default()
    }
    /// The controller chooses the resolution itself (Vidaptive): the sender's degradation
    /// policy then only caps it at what the target supports and leaves the frame rate alone.
    fn adapts_resolution(&self) -> bool {
        false
    }
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
    /// The flow's media range: controllers with a start rate or rate bounds of their own take
    /// these as defaults ([`crate::video::range`]).
    pub media: crate::video::range::MediaRange,
    /// Capacity of the forward bottleneck (only reference controllers such as `oracle` use it).
    pub capacity: Option<Arc<dyn CapacityView>>,
    /// The flow-state exchanges of this run, shared by the flows it builds (RFC 8699 coupling,
    /// [`coupled`]): one object per simulation run, so runs stay independent. `None` where flows
    /// cannot share one (the live transport runs one flow per process); `coupled` refuses then.
    pub coupling: Option<coupled::CouplingGroups>,
    /// How the flow uses ECN (`ecn` in a scenario): controllers whose reaction to a CE mark
    /// differs between classic ECN and L4S (`scream`) take their default from it.
    pub ecn: crate::packet::EcnMode,
}

/// Parameters as written in a scenario (`params = { rate = "5Mbps" }`).
pub type Params = toml::Table;

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

/// What the controllers' tests share: a controller's signal, a plain context, and controllers for
/// the tests of controllers that wrap others.
#[cfg(test)]
pub(crate) mod test_support {
    use super::{Controller, ControllerContext, Decision};
    use crate::packet::{FeedbackReport, RateReport};
    use crate::units::{Bytes, Rate, Time};
    use std::sync::{Arc, Mutex};

    /// The value of `c`'s signal `key` ([`Controller::state`]); a test fails if it has none.
    pub fn signal(c: &dyn Controller, key: &str) -> f64 {
        let mut s = vec![];
        c.state(&mut s);
        s.iter()
            .find(|x| x.0 == key)
            .map(|x| x.1)
            .unwrap_or_else(|| panic!("no signal {key:?}"))
    }

    /// A context at time 0: 30 frame/s, 1200-byte payloads, the default media range, no
    /// capacity view and no coupling.
    pub fn context() -> ControllerContext {
        ControllerContext {
            now: Time::ZERO,
            fps: 30.0,
            max_payload: Bytes(1200),
            media: Default::default(),
            capacity: None,
            coupling: None,
            ecn: crate::packet::EcnMode::Off,
        }
    }

    /// The rate reports a controller got, with the times they arrived.
    pub type Reports = Arc<Mutex<Vec<(Time, RateReport)>>>;

    /// A controller at a rate it takes from anyone (paced at it), keeping the rate reports it
    /// gets.
    pub struct RateReportRecorder {
        pub rate: Rate,
        pub reports: Reports,
    }

    impl Controller for RateReportRecorder {
        fn on_feedback(&mut self, _now: Time, _report: &FeedbackReport) {}
        fn on_rate_report(&mut self, now: Time, report: &RateReport) {
            self.reports.lock().unwrap().push((now, *report));
        }
        fn decision(&self) -> Decision {
            Decision::rate_only(self.rate, Some(self.rate))
        }
        fn set_rate(&mut self, _now: Time, rate: Rate) -> bool {
            self.rate = rate;
            true
        }
    }

    /// A recorder at 1 Mbit/s and the list it fills.
    pub fn recorder() -> (Box<dyn Controller>, Reports) {
        let reports = Reports::default();
        let c = RateReportRecorder {
            rate: Rate::from_mbps(1.0),
            reports: reports.clone(),
        };
        (Box::new(c), reports)
    }

    /// A report of 6250 bytes in 50 ms (1 Mbit/s).
    pub fn report() -> RateReport {
        RateReport {
            window_start: Time::from_millis(1000),
            window_end: Time::from_millis(1050),
            bytes: 6250,
            packets: 5,
            last: Some((70_000, Time::from_millis(1049))),
        }
    }
}
