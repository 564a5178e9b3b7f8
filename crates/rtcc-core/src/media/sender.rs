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
//! Around the controller it keeps the transport's safety nets, each switchable:
//! - **Retransmissions and FEC** ([`VideoSender::queue_retransmission`],
//!   [`VideoSender::queue_fec`]) go through the pacer's priority lane, so they are paced, count
//!   in bytes in flight and reach the controller through `on_packet_sent` like media. The encoder
//!   gets the controller's target less what retransmissions and FEC took of the bytes sent in the
//!   last second (libwebrtc's rule, [`super::protection`]), so media and repairs together stay
//!   at the target.
//! - **A retransmission timeout** (RFC 6298, [`crate::rto::RtoTimer`]) for window-based
//!   controllers (a `cwnd` in their decision): if nothing is acknowledged for an RTO while bytes
//!   are in flight, everything in flight is declared lost and forgotten, the controller's
//!   `on_rto` runs (it collapses its window) and the timer backs off, up to [`VIDEO_RTO_MAX`].
//!   Without it a window that
//!   is full of packets lost in an outage never opens again: no feedback comes back for them.
//! - **The media range** ([`crate::video::range`], [`VideoSender::set_media`]): a rate-based
//!   controller's target and pacing rate are never below the flow's minimum bitrate (30 kbit/s
//!   by default, libwebrtc's minimum video bitrate), so a sender keeps probing the path even when
//!   no feedback arrives, and no target exceeds the maximum.
//! - **Quality scaling** ([`super::degradation`]): resolution and frame rate follow the target
//!   under a degradation preference (WebRTC's `balanced` by default).
//! - **A bounded sender queue** ([`super::queue_limit`]): the pacer drains its queue within 2 s
//!   and the encoder backs off while the queue is long (libwebrtc's pacer and pacer pushback).
//! - **A frame dropper** ([`super::frame_dropper`]): frames are skipped while the encoder's
//!   output runs ahead of its target.
//!
//! The simulator, a live transport and a user's own stack all drive the same object.

use super::degradation::{Degradation, Preference, Step};
use super::encoder::{EncodedFrame, Encoder};
use super::frame_dropper::FrameDropper;
use super::pacer::{Pacer, PacerPoll, QueuedPacket};
use super::protection::ProtectionRates;
use super::queue_limit::{drain_rate, Pushback};
use crate::cc::{Controller, Decision, EncodeAction, FrameAction, FrameView};
use crate::packet::TransportFeedback;
use crate::packet::{
    FeedbackReport, FrameAck, FrameInfo, PacketKind, RateReport, SendHistory, SentPacket,
};
use crate::rto::RtoTimer;
use crate::units::{earliest, Rate, Time};
use crate::video::{MediaRange, Packetizer, Resolution};

/// The video sender's largest RTO, also after backoff: one second, RFC 6298's initial RTO. A
/// real-time flow must keep probing a path that lost everything (after an outage, or in a long
/// loss burst) instead of backing off towards TCP's two minutes: the media behind it is useless
/// seconds later anyway. Our judgment call; libwebrtc, rate-based, never stops sending at all.
pub const VIDEO_RTO_MAX: crate::units::Duration = crate::units::Duration(1_000_000_000);

/// A packet the sender releases, with what the wire layer needs to build it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Outgoing {
    pub packet: SentPacket,
    /// For a retransmission, the RTP sequence number it repeats; for FEC, the parity packet's
    /// id given to [`VideoSender::queue_fec`]; 0 otherwise.
    pub ref_id: u64,
}

/// Why the sender skipped a captured frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Skip {
    /// The degradation policy's frame rate is below the source's.
    FrameRate,
    /// A second of queue at the pacing rate (pacer pushback).
    Pushback,
    /// The encoder's output ran ahead of its target (frame dropper).
    Dropper,
}

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
    /// RFC 6298 RTT estimator, and the retransmission timer for window-based controllers when
    /// `rto_enabled` (otherwise it is never armed and only estimates the RTT).
    rto: RtoTimer,
    rto_enabled: bool,
    range: MediaRange,
    /// Video, retransmission and FEC bytes sent in the last second.
    protection: ProtectionRates,
    /// The encoder's share of the target while the pacer queue is long.
    /// `None`: switched off (stock libwebrtc runs it behind a field trial).
    pushback: Option<Pushback>,
    degradation: Degradation,
    /// The policy's step last applied to the encoder.
    applied_step: Option<Step>,
    /// Source frames owed to the encoder at the policy's frame rate.
    fps_credit: f64,
    /// The frame dropper, unless switched off.
    dropper: Option<FrameDropper>,
    /// Frames the sender skipped, by [`Skip`] reason.
    skipped: [u64; 3],
}

impl VideoSender {
    pub fn new(
        controller: Box<dyn Controller>,
        encoder: Box<dyn Encoder>,
        mut packetizer: Packetizer,
        fps: f64,
        padding_size: u32,
    ) -> Self {
        packetizer.min_packets = packetizer
            .min_packets
            .max(controller.min_packets_per_frame());
        let padding_size = controller
            .decision()
            .padding_size
            .map_or(padding_size, |s| s.min(padding_size));
        let degradation = Self::policy(
            encoder.as_ref(),
            Preference::Balanced,
            &MediaRange::default(),
            fps,
        );
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
            rto: RtoTimer::with_max(VIDEO_RTO_MAX),
            rto_enabled: true,
            range: MediaRange::default(),
            protection: ProtectionRates::default(),
            pushback: Some(Pushback::default()),
            degradation,
            applied_step: None,
            fps_credit: 1.0, // the first captured frame is encoded
            dropper: Some(FrameDropper::default()),
            skipped: [0; 3],
        }
    }

    /// The degradation policy for `encoder` under `preference` within `range`, at `fps`.
    fn policy(
        encoder: &dyn Encoder,
        preference: Preference,
        range: &MediaRange,
        fps: f64,
    ) -> Degradation {
        let floor = |res, fps| encoder.bitrate_limits(res, fps).map_or(Rate::ZERO, |l| l.0);
        Degradation::new(
            preference,
            encoder.source_resolution(),
            range.min_fps,
            fps,
            &floor,
        )
    }

    /// Switch pacer pushback on (the default) or off. Off, the encoder gets its whole target
    /// however long the pacer queue grows (the pacer still drains it within 2 s and the frame
    /// dropper still holds the encoder to its target), as in libwebrtc without the
    /// `WebRTC-PacerPushbackExperiment` field trial.
    pub fn set_pushback(&mut self, on: bool) {
        self.pushback = on.then(Pushback::default);
    }

    /// Switch the frame dropper on (the default) or off. Off, every frame the controller and the
    /// frame-rate gate keep is encoded and sent, however far the encoder's output runs ahead of
    /// its target: a cloud-gaming server that never drops a frame (C³G's keeps the frame rate,
    /// c3g_rtvl.txt §IV).
    pub fn set_frame_dropper(&mut self, on: bool) {
        self.dropper = on.then(FrameDropper::default);
    }

    /// Set the flow's media range and degradation preference (before the first frame).
    pub fn set_media(&mut self, range: MediaRange, preference: Preference) {
        self.degradation = Self::policy(self.encoder.as_ref(), preference, &range, self.fps);
        self.range = range;
    }

    /// The degradation policy's steps and the current one.
    pub fn degradation(&self) -> &Degradation {
        &self.degradation
    }

    /// Switch the retransmission timeout on (the default) or off.
    pub fn set_rto_enabled(&mut self, on: bool) {
        self.rto_enabled = on;
        if !on {
            self.rto.stop();
        }
    }

    /// The controller's target rate (with the floor), what retransmissions are budgeted against.
    pub fn target_rate(&self) -> Rate {
        self.effective_decision().target_bitrate
    }

    /// The controller's decision inside the media range: a rate-based controller's target and
    /// pacing rate never below the minimum, every target at most the maximum.
    fn effective_decision(&self) -> Decision {
        let mut d = self.controller.decision();
        let min = self.range.min_bitrate;
        if d.cwnd.is_none() {
            d.target_bitrate = d.target_bitrate.max(min);
            d.pacing_rate = d.pacing_rate.map(|p| p.max(min));
        }
        if let Some(max) = self.range.max_bitrate {
            d.target_bitrate = d.target_bitrate.min(max);
        }
        d
    }

    pub fn controller(&self) -> &dyn Controller {
        self.controller.as_ref()
    }

    /// The decision the sender acts on (the controller's, with the rate floor).
    pub fn decision(&self) -> Decision {
        self.effective_decision()
    }

    pub fn pacer(&self) -> &Pacer {
        &self.pacer
    }

    pub fn in_flight(&self) -> u64 {
        self.history.in_flight()
    }

    /// The transport-wide sequence number the next packet gets.
    pub fn next_transport_seq(&self) -> u64 {
        self.history.next_seq()
    }

    /// Encode and packetise the frame captured at `now`.
    ///
    /// Before the encoder runs, in order: the controller's frame action (pause, reset,
    /// resolution), the degradation policy (resolution and frame rate for the target), the
    /// frame-rate gate, the pacer pushback and the frame dropper; any of them may skip the frame
    /// (an empty frame, counted by the metrics as a frame the viewer never saw).
    pub fn on_frame_captured(&mut self, now: Time, frame: u64) -> FrameInfo {
        let view = FrameView {
            oldest_queued: self.pacer.oldest_enqueue_time(),
            resolution: self.encoder.resolution(),
        };
        let (action, controller_scales) = match self.controller.frame_controller() {
            Some(f) => (f.frame_action(now, &view), f.adapts_resolution()),
            None => (FrameAction::default(), false),
        };
        if action.encode == EncodeAction::Reset {
            self.reset_encoder();
        }
        let decision = self.effective_decision();
        // What the encoder gets: the target less what repairs took (libwebrtc's protection rule).
        let nominal = self.protection.encoder_target(now, decision.target_bitrate);
        let fps = self.scale_quality(now, nominal, action.resolution, controller_scales);
        // The frame-rate gate keeps `fps` of the source's frames, evenly spread.
        self.fps_credit += fps / self.fps;
        let rate_keeps = self.fps_credit >= 1.0 - 1e-9;
        if rate_keeps {
            self.fps_credit -= 1.0;
        }
        // Pacer pushback: the encoder's share of the target while the queue is long.
        let drain_at = decision.pacing_rate.unwrap_or(decision.target_bitrate);
        let queued = self.pacer.queued_bytes();
        let share = self
            .pushback
            .as_mut()
            .map_or(1.0, |p| p.on_frame(queued, drain_at));
        let paused = action.encode == EncodeAction::Skip; // by the controller
        let target = Rate(nominal.bps() * share);
        // Why the sender skips a frame the controller wanted, first reason first.
        let skip = if paused {
            if let Some(d) = &mut self.dropper {
                d.on_paused(now, target);
            }
            None
        } else if !rate_keeps {
            Some(Skip::FrameRate)
        } else if share <= 0.0 {
            Some(Skip::Pushback)
        } else if self
            .dropper
            .as_mut()
            .is_some_and(|d| d.should_drop(now, target))
        {
            Some(Skip::Dropper)
        } else {
            None
        };
        if let Some(reason) = skip {
            self.skipped[reason as usize] += 1;
        }
        let encode = !paused && skip.is_none();
        let mut encoded = self
            .encoder
            .encode(now, if encode { target } else { Rate::ZERO }, fps);
        let real_codec = self.encoder.drops_internally();
        if encode && real_codec && encoded.size == 0 {
            // A real codec's own frame dropper (libvpx's `rc_dropframe_thresh`) skipped it.
            self.skipped[Skip::Dropper as usize] += 1;
        }
        if encoded.size > 0
            && !real_codec
            && self
                .dropper
                .as_mut()
                .is_some_and(|d| !d.accept(encoded.size))
        {
            // Too far above the target to send: discarded, as the encoder's own rate control
            // drops a frame that would overflow its buffer.
            self.skipped[Skip::Dropper as usize] += 1;
            if encoded.keyframe {
                self.encoder.request_keyframe();
            }
            encoded = EncodedFrame::skipped(encoded.resolution);
        }
        if encoded.size > 0 {
            if let Some(d) = &mut self.dropper {
                d.on_encoded(encoded.size, encoded.keyframe, fps);
            }
        }
        self.last_encoded = Some(encoded);
        let count = self.packetizer.count(encoded.size) as u16;
        for (i, size) in self.packetizer.packet_sizes(encoded.size).enumerate() {
            self.pacer
                .push(QueuedPacket::media(size, frame, i as u16, count, now));
        }
        let info = FrameInfo {
            frame,
            capture_time: now,
            size: encoded.size,
            // The encoder's target before the sender's own skipping (also when the controller
            // paused the frame: a pause skips a frame, the rate asked for stands).
            target: nominal,
            packets: count,
            keyframe: encoded.keyframe,
        };
        if let Some(f) = self.controller.frame_controller() {
            // The controller sees the target the encoder was given (pushback included), so a
            // short frame under pushback does not read as an encoder undershooting.
            let given = if encoded.size > 0 { target } else { Rate::ZERO };
            f.on_frame_encoded(
                now,
                &FrameInfo {
                    target: given,
                    ..info
                },
            );
        }
        self.pacer_wake = None;
        info
    }

    /// Quality scaling at a capture with the encoder's `nominal` target: set the encoder's
    /// resolution to the policy's step (or to the controller's own choice, `requested`, capped at
    /// it, when the controller scales itself) and return the frame rate to code at.
    fn scale_quality(
        &mut self,
        now: Time,
        nominal: Rate,
        requested: Option<Resolution>,
        controller_scales: bool,
    ) -> f64 {
        let step = self.degradation.on_frame(now, nominal);
        let resolution = if controller_scales {
            match (requested.or(self.encoder.resolution()), step.resolution) {
                (Some(wanted), Some(cap)) if wanted.rung() < cap.rung() => Some(cap),
                (wanted, _) => wanted,
            }
        } else if self.applied_step != Some(step) {
            // Only a change of step moves the resolution, so a caller's own
            // `set_resolution` stands until the policy moves.
            self.applied_step = Some(step);
            step.resolution
        } else {
            None
        };
        if let Some(res) = resolution.filter(|&r| self.encoder.resolution() != Some(r)) {
            // A model without this rung keeps its resolution.
            let _ = self.encoder.set_resolution(res);
        }
        if controller_scales {
            self.fps
        } else {
            step.fps
        }
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

    /// Queue a retransmission of the media packet sent as RTP sequence number `rtp_seq`.
    pub fn queue_retransmission(&mut self, now: Time, original: &SentPacket, rtp_seq: u64) {
        self.pacer.push(QueuedPacket {
            kind: PacketKind::Retransmission,
            ref_id: rtp_seq,
            ..QueuedPacket::media(
                original.size,
                original.frame.unwrap_or(0),
                original.index_in_frame,
                original.packets_in_frame,
                now,
            )
        });
        self.pacer_wake = None;
    }

    /// Queue a parity packet of `size` bytes on the wire, known to the caller as `id`.
    pub fn queue_fec(&mut self, now: Time, size: u32, id: u64) {
        self.pacer.push(QueuedPacket {
            kind: PacketKind::Fec,
            ref_id: id,
            ..QueuedPacket::media(size, 0, 0, 0, now)
        });
        self.pacer_wake = None;
    }

    /// The next packet to put on the wire at `now`, if any.
    pub fn poll_transmit(&mut self, now: Time) -> Option<Outgoing> {
        // The pacer said to wait until `pacer_wake`, and nothing that could change that has
        // happened since (every such input clears it): no need to ask again. Most calls end
        // here, once per packet after the one released.
        if self.pacer_wake.is_some_and(|t| now < t) {
            return None;
        }
        let mut decision = self.effective_decision();
        // The pacer empties its queue within 2 s (libwebrtc's kMaxExpectedQueueLength).
        if let (Some(pacing), Some(drain)) = (
            decision.pacing_rate,
            drain_rate(
                self.pacer.queued_bytes(),
                self.pacer.average_queue_time(now),
            ),
        ) {
            decision.pacing_rate = Some(pacing.max(drain));
        }
        let probe = decision.probe;
        let in_flight = self.history.in_flight();
        let blank = SentPacket {
            seq: 0,
            size: 0,
            send_time: now,
            frame: None,
            index_in_frame: 0,
            packets_in_frame: 0,
            kind: PacketKind::Padding,
            in_flight: 0,
        };
        let queued = |q: QueuedPacket| {
            let packet = SentPacket {
                size: q.size,
                frame: (q.kind != PacketKind::Fec).then_some(q.frame),
                index_in_frame: q.index_in_frame,
                packets_in_frame: q.packets_in_frame,
                kind: q.kind,
                ..blank
            };
            (packet, q.ref_id)
        };
        let (mut pkt, ref_id) =
            match self
                .pacer
                .poll_with_probe(now, &decision, probe.as_ref(), in_flight)
            {
                PacerPoll::Media(q) => queued(q),
                PacerPoll::Padding(size) => (SentPacket { size, ..blank }, 0),
                PacerPoll::Probe { media: Some(q), .. } => queued(q),
                PacerPoll::Probe {
                    media: None, size, ..
                } => (
                    SentPacket {
                        size,
                        kind: PacketKind::Probe,
                        ..blank
                    },
                    0,
                ),
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
        self.protection.on_sent(now, pkt.kind, pkt.size);
        // The retransmission timer guards window-based controllers only (a `cwnd`).
        if self.rto_enabled && decision.cwnd.is_some() {
            self.rto.on_send(now);
        }
        self.controller.on_packet_sent(now, &pkt);
        Some(Outgoing {
            packet: pkt,
            ref_id,
        })
    }

    /// Feedback from the receiver arrived at `now`.
    pub fn on_feedback(&mut self, now: Time, fb: &TransportFeedback) {
        self.history.on_feedback(now, fb, &mut self.report);
        if !self.report.packets.is_empty() {
            let window_based = self.controller.decision().cwnd.is_some();
            let outstanding = window_based && self.history.in_flight() > 0;
            if let Some(rtt) = self.report.latest_rtt() {
                self.rto.on_rtt_sample(rtt);
                if self.rto_enabled {
                    self.rto.restart(now, outstanding);
                }
            }
            self.controller.on_feedback(now, &self.report);
        }
        self.pacer_wake = None;
    }

    /// The smoothed round-trip time, once feedback has given a sample.
    pub fn srtt(&self) -> Option<crate::units::Duration> {
        self.rto.srtt()
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

    /// A rate report from the receiver arrived at `now`.
    pub fn on_rate_report(&mut self, now: Time, report: &RateReport) {
        self.controller.on_rate_report(now, report);
        self.pacer_wake = None;
    }

    /// When to call [`VideoSender::handle_timeout`] (pacer release or controller timer).
    pub fn poll_timeout(&self) -> Option<Time> {
        earliest(self.pacer_wake, self.controller_timeout())
    }

    /// When the controller's own timer or the retransmission timer fires next (a change of
    /// controller state worth logging).
    pub fn controller_timeout(&self) -> Option<Time> {
        earliest(self.controller.next_timeout(), self.rto.deadline())
    }

    pub fn handle_timeout(&mut self, now: Time) {
        if self.controller.next_timeout().is_some_and(|t| t <= now) {
            self.controller.on_timeout(now);
            self.pacer_wake = None; // the rates may have changed
        }
        // Never armed while switched off.
        if self.rto.poll_expired(now) {
            // RFC 6298 §5.4–5.6: what is in flight is presumed lost (the receiver NACKs the
            // media it misses); the controller restarts from a small window.
            self.history.clear_in_flight();
            self.controller.on_rto(now, 0);
            self.pacer_wake = None;
        }
        if self.pacer_wake.is_some_and(|t| t <= now) {
            self.pacer_wake = None;
        }
    }

    /// Stop: drop queued media and forget what is in flight.
    pub fn stop(&mut self, now: Time) {
        self.pacer.clear();
        self.pacer_wake = None;
        self.controller.on_stop(now);
    }

    /// Append the controller's decision and internal signals to `out`.
    pub fn state(&self, out: &mut Vec<(&'static str, f64)>) {
        let d = self.effective_decision();
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
        let step = self.degradation.current();
        out.push(("encoder_fps", step.fps));
        if let Some(r) = step.resolution {
            out.push(("policy_height", r.height as f64));
        }
        for (reason, name) in [
            (Skip::FrameRate, "skipped_frame_rate"),
            (Skip::Pushback, "skipped_pushback"),
            (Skip::Dropper, "skipped_dropper"),
        ] {
            out.push((name, self.skipped[reason as usize] as f64));
        }
        self.controller.state(out);
    }
}
