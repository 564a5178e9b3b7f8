//! `kind = "video"` (the default): a video flow driven by a controller. The sender captures
//! frames (`fps`, with optional capture jitter), encodes them with an encoder model at the
//! controller's target inside the flow's media range, adapts like a real sender (WebRTC's
//! degradation preference, pacer pushback, frame dropper), packetises them into RTP and paces
//! them out; the receiver reassembles, repairs (NACK/RTX, FEC), plays out and sends feedback.

use super::{Building, Checking, Common, EcnFlag, FlowConfig};
use crate::controller::{ControllerRecipe, CouplingSpec};
use crate::error::{At, FieldError};
use crate::seeds::derive_seed;
use crate::MAX_PACKET;
use rtcc_core::cc::{FeedbackPolicy, Params};
use rtcc_core::endpoint::video_send::Ssrcs;
use rtcc_core::endpoint::{
    AckAt, Endpoint, FrameAckConfig, Recovery, VideoRecvEndpoint, VideoSendEndpoint,
};
use rtcc_core::media::degradation::Preference;
use rtcc_core::media::encoder::EncoderConfig;
use rtcc_core::media::range::{MediaRange, DEFAULT_MIN_BITRATE, DEFAULT_MIN_FPS};
use rtcc_core::media::source::JitterModel;
use rtcc_core::media::{FrameSource, Packetizer, VideoSender};
use rtcc_core::packet::EcnMode;
use rtcc_core::{Bytes, Duration, Rate};
use serde::Deserialize;

/// A video flow's fields.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VideoSpec {
    pub controller: Option<String>,
    #[serde(default)]
    pub params: Params,
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
    pub padding_size: Option<Bytes>,
    pub feedback: Option<FeedbackPolicy>,
    /// Loss recovery and liveness: `recovery = { nack = false, fec = 4 }`.
    pub recovery: Option<RecoverySpec>,
    /// When the receiver acknowledges frames, for controllers that ask for frame
    /// acknowledgements: `frame_ack = { at = "display", presentation_timeout = "100ms" }`.
    pub frame_ack: Option<FrameAckSpec>,
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
    /// Peak-constrained rate control: the encoder's video buffering verifier in frames of its
    /// target, a number of at least 1 or `"off"` (default off).
    pub vbv: Option<serde_json::Value>,
    /// The sender marks its data ECN-capable (ECT(0), RFC 3168) and the receiver reports CE
    /// marks (default false: Not-ECT).
    pub ecn: Option<EcnFlag>,
    /// Coupled congestion control with the sender's other flows (RFC 8699): the flow's
    /// controller runs inside a `coupled` wrapper, `coupling = { group = "sender1",
    /// priority = 2.0 }`.
    pub coupling: Option<CouplingSpec>,
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
    /// The sender serves a keyframe request at most this often (default 300ms, libwebrtc's).
    pub keyframe_request_interval: Option<Duration>,
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

/// A video flow, resolved.
#[derive(Debug, Clone)]
pub struct VideoFlow {
    pub controller: ControllerRecipe,
    pub fps: f64,
    pub frame_jitter: Duration,
    pub frame_jitter_model: JitterModel,
    pub encoder: EncoderConfig,
    pub payload: Bytes,
    pub overhead: Bytes,
    pub padding_size: Bytes,
    pub feedback: FeedbackPolicy,
    pub recovery: Recovery,
    /// When the receiver acknowledges frames (if the feedback policy asks for acknowledgements).
    pub frame_ack: FrameAckConfig,
    pub media: MediaRange,
    pub degradation: Preference,
    pub pushback: bool,
    pub frame_dropper: bool,
    /// The encoder's video buffering verifier in frames of its target (`None`: off).
    pub vbv: Option<f64>,
    /// The encoder as the scenario or the controller's defaults wrote it (`"ideal"` if neither).
    pub encoder_value: serde_json::Value,
    /// The media fields the flow took from its controller's defaults, in field order.
    pub media_defaults: Vec<&'static str>,
    pub ecn: EcnMode,
}

impl VideoSpec {
    pub(crate) fn resolve(
        self,
        common: &Common,
        check: &Checking,
    ) -> Result<super::FlowKind, FieldError> {
        let at = common.at;
        let fps = self.fps.unwrap_or(super::DEFAULT_FPS);
        if !(fps > 0.0 && fps <= 1000.0) {
            return Err(at.err(
                "fps",
                format!("{fps} is not a frame rate between 0 and 1000"),
            ));
        }
        let frame_jitter = self.frame_jitter.unwrap_or(Duration::ZERO);
        if frame_jitter.as_secs_f64() >= 1.0 / fps {
            return Err(at.err(
                "frame_jitter",
                format!(
                    "{frame_jitter} must be shorter than the frame interval ({:.3}ms)",
                    1e3 / fps
                ),
            ));
        }
        let frame_jitter_model = match &self.frame_jitter_model {
            Some(m) => JitterModel::parse(m).map_err(|e| at.err("frame_jitter_model", e))?,
            None => JitterModel::Grid,
        };
        let payload = self.payload.unwrap_or(super::DEFAULT_PAYLOAD);
        let overhead = self.overhead.unwrap_or(Bytes(0));
        if payload.0 == 0 || payload.0 + overhead.0 > MAX_PACKET {
            return Err(at.err(
                "payload",
                format!(
                    "payload {payload} + overhead {overhead} must be between 1B and {MAX_PACKET}B"
                ),
            ));
        }
        let padding_size = self.padding_size.unwrap_or(Bytes(1200));
        if padding_size.0 == 0 || padding_size.0 > MAX_PACKET {
            return Err(at.err(
                "padding_size",
                format!("{padding_size} must be between 1B and {MAX_PACKET}B"),
            ));
        }
        let recovery = self.recovery(at)?;
        let frame_ack = match &self.frame_ack {
            None => FrameAckConfig::default(),
            Some(spec) => spec.resolve(at)?,
        };
        let media = MediaRange {
            min_bitrate: self.min_bitrate.unwrap_or(DEFAULT_MIN_BITRATE),
            start_bitrate: self.start_bitrate,
            max_bitrate: self.max_bitrate,
            // A source slower than the default lowest rate is coded at its own rate.
            min_fps: self.min_fps.unwrap_or(DEFAULT_MIN_FPS.min(fps)),
        };
        media.validate().map_err(|(field, m)| at.err(field, m))?;
        if media.min_fps > fps {
            return Err(at.err(
                "min_fps",
                format!(
                    "{} is above the flow's frame rate fps = {fps}",
                    media.min_fps
                ),
            ));
        }
        let ecn = self.ecn.unwrap_or_default().0;
        let ctx = check.context(common, Some((fps, payload, media)), ecn);
        let controller = ControllerRecipe::check(
            at,
            self.controller.as_deref(),
            self.params,
            self.coupling.as_ref(),
            &ctx,
            check.registry,
        )?;
        super::check_l4s_video(at, &controller.name, ecn)?;
        // The media settings: the scenario's, else the controller's (`MediaDefaults`), else rtcc's.
        let theirs = controller.media.clone();
        let taken = &mut Vec::new();
        let encoder_value = pick(self.encoder, theirs.encoder, "encoder", taken);
        let degradation = pick(self.degradation, theirs.degradation, "degradation", taken);
        let pushback = pick(self.pushback, theirs.pushback, "pushback", taken).unwrap_or(true);
        let frame_dropper = pick(
            self.frame_dropper,
            theirs.frame_dropper,
            "frame_dropper",
            taken,
        )
        .unwrap_or(true);
        // A controller's default that does not read names the controller, not the scenario.
        let whose = |taken: &[&str], field: &str, m: String| match taken.contains(&field) {
            true => format!("{m} (the default of controller {:?})", controller.name),
            false => m,
        };
        let encoder = match &encoder_value {
            None => EncoderConfig::Ideal,
            Some(v) => EncoderConfig::from_value(v, check.base_dir)
                .map_err(|(sub, m)| at.sub_err("encoder", &sub, whose(taken, "encoder", m)))?,
        };
        // The VBV: the scenario's (`"off"` included), else the controller's where the encoder
        // models one (a controller's default is left out for a model that does not: its flows
        // still run with a recorded trace or a real codec).
        let own_vbv = match &self.vbv {
            None => None,
            Some(v) if v.as_str() == Some("off") => Some(None),
            Some(v) => {
                let k = v.as_f64().ok_or_else(|| {
                    at.err(
                        "vbv",
                        format!("expected a number of frames or \"off\", got {v}"),
                    )
                })?;
                rtcc_core::media::encoder::check_vbv(k)
                    .map_err(|m| at.err("vbv", format!("{m} (or \"off\")")))?;
                Some(Some(k))
            }
        };
        if matches!(own_vbv, Some(Some(_))) && !encoder.models_vbv() {
            return Err(at.err(
                "vbv",
                format!(
                    "the {} encoder has no peak-constrained rate control (lagged and x264 have one; ideal frames are exact)",
                    encoder.name()
                ),
            ));
        }
        let theirs_vbv = theirs.vbv.filter(|_| encoder.models_vbv()).map(Some);
        let vbv = pick(own_vbv, theirs_vbv, "vbv", taken).flatten();
        let encoder = encoder.with_vbv(vbv);
        let media_defaults = std::mem::take(taken);
        // An external model (a real codec) is opened for this flow: it needs its name and rate.
        let encoder = match encoder {
            EncoderConfig::External(e) => {
                EncoderConfig::External(std::sync::Arc::new(e.for_flow(&common.name, fps)))
            }
            other => other,
        };
        let degradation = match &degradation {
            None => Preference::Balanced,
            Some(p) => Preference::parse(p)
                .map_err(|e| at.err("degradation", whose(&media_defaults, "degradation", e)))?,
        };
        let feedback = self.feedback.unwrap_or(controller.feedback);
        feedback
            .check()
            .map_err(|(key, problem)| at.sub_err("feedback", key, problem))?;
        Ok(super::FlowKind::Video(VideoFlow {
            controller,
            fps,
            frame_jitter,
            frame_jitter_model,
            encoder,
            payload,
            overhead,
            padding_size,
            feedback,
            recovery,
            frame_ack,
            media,
            degradation,
            pushback,
            frame_dropper,
            vbv,
            encoder_value: encoder_value.unwrap_or_else(|| serde_json::json!("ideal")),
            media_defaults,
            ecn,
        }))
    }

    fn recovery(&self, at: At) -> Result<Recovery, FieldError> {
        let r = self.recovery.clone().unwrap_or_default();
        if r.fec.is_some_and(|k| !(1..=16).contains(&k)) {
            return Err(at.err(
                "recovery.fec",
                "protects 1 to 16 media packets per parity packet",
            ));
        }
        if r.min_rate.is_some() {
            return Err(at.err(
                "recovery.min_rate",
                "the floor of the rate is the flow's media range now: write min_bitrate = \"30kbps\" on the flow",
            ));
        }
        let defaults = Recovery::default();
        Ok(Recovery {
            nack: r.nack.unwrap_or(defaults.nack),
            fec_group: r.fec,
            keyframe_requests: self.keyframe_requests.unwrap_or(true),
            rto: r.rto.unwrap_or(defaults.rto),
            playout_delay: r.playout_delay.unwrap_or(defaults.playout_delay),
            nack_delay: r.nack_delay.unwrap_or(defaults.nack_delay),
            keyframe_request_interval: r
                .keyframe_request_interval
                .unwrap_or(defaults.keyframe_request_interval),
        })
    }
}

/// A media field: `own` if the scenario wrote it, else the controller's default `theirs`, whose
/// `field` name then joins `taken`.
fn pick<T>(
    own: Option<T>,
    theirs: Option<T>,
    field: &'static str,
    taken: &mut Vec<&'static str>,
) -> Option<T> {
    own.or_else(|| {
        taken.extend(theirs.is_some().then_some(field));
        theirs
    })
}

impl FrameAckSpec {
    /// The receiver's mode, or the bad field and what is wrong with it.
    fn resolve(&self, at: At) -> Result<FrameAckConfig, FieldError> {
        let defaults = FrameAckConfig::default();
        let at_ = match &self.at {
            None => defaults.at,
            Some(s) => AckAt::parse(s).map_err(|m| at.err("frame_ack.at", m))?,
        };
        if let Some(t) = self.presentation_timeout {
            if at_ != AckAt::Display {
                return Err(at.err(
                    "frame_ack.presentation_timeout",
                    "applies only to a receiver that acknowledges at display: add at = \"display\"",
                ));
            }
            if t.0 == 0 {
                return Err(at.err("frame_ack.presentation_timeout", "must be longer than 0ms"));
            }
        }
        Ok(FrameAckConfig {
            at: at_,
            presentation_timeout: self
                .presentation_timeout
                .unwrap_or(defaults.presentation_timeout),
        })
    }
}

impl VideoFlow {
    pub(crate) fn endpoints(
        &self,
        f: &FlowConfig,
        b: &Building,
    ) -> Result<[Box<dyn Endpoint>; 2], String> {
        let i = b.index;
        let ssrcs = b.ssrcs.unwrap_or(Ssrcs::for_flow(i as u32));
        let ctx = f.context(Some(b.capacity.clone()), b.coupling);
        // Seed stream 3 << 32 | i: the encoder's randomness is independent of the frame
        // source's (stream i) and of the links' (1 << 32, 2 << 32).
        let enc = self
            .encoder
            .build(derive_seed(b.seed, (3 << 32) | i as u64))?;
        let packetizer = Packetizer {
            payload: self.payload,
            overhead: self.overhead,
            min_packets: 1,
        };
        let mut sender = VideoSender::new(
            b.controller(&self.controller, &ctx)?,
            enc,
            packetizer,
            self.fps,
            self.padding_size.0 as u32,
        );
        sender.set_media(self.media, self.degradation);
        sender.set_pushback(self.pushback);
        sender.set_frame_dropper(self.frame_dropper);
        let source = FrameSource::new(
            f.start,
            self.fps,
            self.frame_jitter,
            derive_seed(b.seed, i as u64),
        )
        .with_model(self.frame_jitter_model);
        let mut send = VideoSendEndpoint::new(sender, source, ssrcs, self.recovery);
        send.set_ecn(self.ecn);
        let mut recv = VideoRecvEndpoint::new(
            f.receiver_start(),
            ssrcs.media,
            self.feedback,
            self.recovery,
        )
        .with_streams(ssrcs)
        .with_frame_acks(self.frame_ack);
        recv.set_ecn(self.ecn);
        Ok([Box::new(send), Box::new(recv)])
    }
}
