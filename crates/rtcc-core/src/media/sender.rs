//! A video sender, sans-IO: encoder, packetizer, pacer, send history and a controller, wired the
//! way a real-time media stack wires them.
//!
//! Drive it like quinn-proto's connection:
//! - call [`VideoSender::on_frame_captured`] at each capture instant (the encoder reads the
//!   controller's target, the frame is packetised into the pacer queue);
//! - call [`VideoSender::poll_transmit`] until it returns `None` and put the packets on the wire;
//! - call [`VideoSender::on_feedback`] / [`VideoSender::on_frame_ack`] when the receiver's
//!   messages arrive;
//! - ask [`VideoSender::poll_timeout`] when to come back, and call
//!   [`VideoSender::handle_timeout`] then.
//!
//! The encoder's controls are reachable through the sender: [`VideoSender::request_keyframe`]
//! (a receiver's keyframe request), [`VideoSender::reset_encoder`] (flush the pacer and restart
//! from a keyframe) and [`VideoSender::set_resolution`]; a target of 0 skips a frame (pause).
//! [`VideoSender::last_encoded`] has the encoder's view of the latest frame (PSNR, resolution).
//!
//! The simulator, a live transport and a user's own stack all drive the same object.

use super::encoder::{EncodedFrame, Encoder};
use super::pacer::{Pacer, PacerPoll, QueuedPacket};
use super::packetizer::Packetizer;
use super::quality::Resolution;
use crate::cc::{Controller, Decision, EncodeAction, FrameAction, FrameView};
use crate::packet::TransportFeedback;
use crate::packet::{FeedbackReport, FrameAck, FrameInfo, PacketKind, SendHistory, SentPacket};
use crate::units::{Rate, Time};

pub struct VideoSender {
    controller: Box<dyn Controller>,
    encoder: Box<dyn Encoder>,
    packetizer: Packetizer,
    pacer: Pacer,
    history: SendHistory,
    fps: f64,
    /// Reused buffer for joined feedback.
    report: FeedbackReport,
    pacer_wake: Option<Time>,
    /// The encoder's output for the latest captured frame.
    last_encoded: Option<EncodedFrame>,
}

impl VideoSender {
    pub fn new(
        controller: Box<dyn Controller>,
        encoder: Box<dyn Encoder>,
        packetizer: Packetizer,
        fps: f64,
        padding_size: u32,
    ) -> Self {
        let padding_size = controller
            .decision()
            .padding_size
            .map_or(padding_size, |s| s.min(padding_size));
        VideoSender {
            controller,
            encoder,
            packetizer,
            pacer: Pacer::new(padding_size),
            history: SendHistory::new(),
            fps,
            report: FeedbackReport::default(),
            pacer_wake: None,
            last_encoded: None,
        }
    }

    pub fn controller(&self) -> &dyn Controller {
        self.controller.as_ref()
    }

    pub fn decision(&self) -> Decision {
        self.controller.decision()
    }

    pub fn pacer(&self) -> &Pacer {
        &self.pacer
    }

    pub fn in_flight(&self) -> u64 {
        self.history.in_flight()
    }

    /// Encode and packetise the frame captured at `now`.
    pub fn on_frame_captured(&mut self, now: Time, frame: u64) -> FrameInfo {
        let view = FrameView {
            oldest_queued: self.pacer.oldest_enqueue_time(),
            resolution: self.encoder.resolution(),
        };
        let action = self
            .controller
            .frame_controller()
            .map_or_else(FrameAction::default, |f| f.frame_action(now, &view));
        if action.encode == EncodeAction::Reset {
            self.reset_encoder();
        }
        if let Some(res) = action.resolution {
            if self.encoder.resolution() != Some(res) {
                // A model without this rung keeps its resolution: the controller asked only.
                let _ = self.encoder.set_resolution(res);
            }
        }
        let target = if action.encode == EncodeAction::Skip {
            Rate::ZERO
        } else {
            self.controller.decision().target_bitrate
        };
        let encoded = self.encoder.encode(now, target, self.fps);
        self.last_encoded = Some(encoded);
        let count = encoded.size.div_ceil(self.packetizer.payload.0 as u32) as u16;
        for (i, size) in self.packetizer.packet_sizes(encoded.size).enumerate() {
            self.pacer.push(QueuedPacket {
                size,
                frame,
                index_in_frame: i as u16,
                packets_in_frame: count,
                enqueued: now,
            });
        }
        let info = FrameInfo {
            frame,
            capture_time: now,
            size: encoded.size,
            target,
            packets: count,
            keyframe: encoded.keyframe,
        };
        if let Some(f) = self.controller.frame_controller() {
            f.on_frame_encoded(now, &info);
        }
        self.pacer_wake = None;
        info
    }

    /// What the encoder produced for the latest captured frame (its PSNR estimate and
    /// resolution, when the model has them).
    pub fn last_encoded(&self) -> Option<&EncodedFrame> {
        self.last_encoded.as_ref()
    }

    /// Make the next encoded frame a keyframe (a receiver asked for one).
    pub fn request_keyframe(&mut self) {
        self.encoder.request_keyframe();
    }

    /// Encoder reset: drop every queued media packet and restart the encoder from a keyframe.
    /// Returns the packets dropped.
    pub fn reset_encoder(&mut self) -> usize {
        self.encoder.reset();
        self.pacer_wake = None;
        self.pacer.clear()
    }

    /// The resolution frames are coded at (`None` for encoder models without one).
    pub fn resolution(&self) -> Option<Resolution> {
        self.encoder.resolution()
    }

    /// Code the following frames at `res` (the next one is a keyframe).
    pub fn set_resolution(&mut self, res: Resolution) -> Result<(), String> {
        self.encoder.set_resolution(res)
    }

    /// The next packet to put on the wire at `now`, if any.
    pub fn poll_transmit(&mut self, now: Time) -> Option<SentPacket> {
        let decision = self.controller.decision();
        let probe = decision.probe;
        let in_flight = self.history.in_flight();
        let mut pkt = match self
            .pacer
            .poll_with_probe(now, &decision, probe.as_ref(), in_flight)
        {
            PacerPoll::Media(q) => SentPacket {
                seq: 0,
                size: q.size,
                send_time: now,
                frame: Some(q.frame),
                index_in_frame: q.index_in_frame,
                packets_in_frame: q.packets_in_frame,
                kind: PacketKind::Media,
                in_flight: 0,
            },
            PacerPoll::Padding(size) => SentPacket {
                seq: 0,
                size,
                send_time: now,
                frame: None,
                index_in_frame: 0,
                packets_in_frame: 0,
                kind: PacketKind::Padding,
                in_flight: 0,
            },
            PacerPoll::Probe { media, size, .. } => SentPacket {
                seq: 0,
                size,
                send_time: now,
                frame: media.map(|q| q.frame),
                index_in_frame: media.map_or(0, |q| q.index_in_frame),
                packets_in_frame: media.map_or(0, |q| q.packets_in_frame),
                kind: if media.is_some() {
                    PacketKind::Media
                } else {
                    PacketKind::Probe
                },
                in_flight: 0,
            },
            PacerPoll::WaitUntil(t) => {
                self.pacer_wake = Some(t);
                return None;
            }
            PacerPoll::Idle => {
                self.pacer_wake = None;
                return None;
            }
        };
        pkt = self.history.on_sent(pkt);
        self.controller.on_packet_sent(now, &pkt);
        Some(pkt)
    }

    /// Feedback from the receiver arrived at `now`.
    pub fn on_feedback(&mut self, now: Time, fb: &TransportFeedback) {
        self.history.on_feedback(now, fb, &mut self.report);
        if !self.report.packets.is_empty() {
            self.controller.on_feedback(now, &self.report);
        }
        self.pacer_wake = None;
    }

    /// The last joined feedback report (for logging).
    pub fn last_report(&self) -> &FeedbackReport {
        &self.report
    }

    pub fn on_frame_ack(&mut self, now: Time, ack: &FrameAck) {
        if let Some(f) = self.controller.frame_controller() {
            f.on_frame_ack(now, ack);
        }
        self.pacer_wake = None;
    }

    /// When to call [`VideoSender::handle_timeout`] (pacer release or controller timer).
    pub fn poll_timeout(&self) -> Option<Time> {
        match (self.pacer_wake, self.controller.next_timeout()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    pub fn handle_timeout(&mut self, now: Time) {
        if self.controller.next_timeout().is_some_and(|t| t <= now) {
            self.controller.on_timeout(now);
        }
        if self.pacer_wake.is_some_and(|t| t <= now) {
            self.pacer_wake = None;
        }
    }

    /// Stop: drop queued media and forget what is in flight.
    pub fn stop(&mut self) {
        self.pacer.clear();
        self.pacer_wake = None;
    }

    /// Append the controller's decision and internal signals to `out`.
    pub fn state(&self, out: &mut Vec<(&'static str, f64)>) {
        let d = self.controller.decision();
        out.push(("target_bps", d.target_bitrate.bps()));
        if let Some(p) = d.pacing_rate {
            out.push(("pacing_bps", p.bps()));
        }
        if let Some(c) = d.cwnd {
            out.push(("cwnd_bytes", c as f64));
        }
        if d.padding_rate.bps() > 0.0 {
            out.push(("padding_bps", d.padding_rate.bps()));
        }
        if let Some(p) = d.probe {
            out.push(("probe_bps", p.rate.bps()));
        }
        out.push(("in_flight_bytes", self.history.in_flight() as f64));
        self.controller.state(out);
    }
}
