//! The video receiver endpoint: parses RTP, records arrivals for transport-wide feedback,
//! repairs losses (NACK, FEC), assembles and releases frames in its jitter buffer, decodes, and
//! sends back only the RTCP its sender's controller asks for.
//!
//! RTCP it sends, each in the compound datagram of the moment it is due (one datagram per
//! arrival or timer at most, like the simulator's former combined messages):
//! - **transport-wide feedback** (draft-holmer-rmcat-transport-wide-cc-extensions-01) every
//!   `interval` of the controller's [`FeedbackPolicy`], and when a frame's last packet arrives
//!   if the policy asks for per-frame feedback;
//! - a **frame acknowledgement** when a frame is complete, or when it is displayed, with late
//!   acknowledgements of the frames given up on ([`super::frame_acks`], the flow's `frame_ack`),
//!   only if the policy asks for them;
//! - a **rate report** every `rate_reports` of the policy from the receiver's start, only if the
//!   policy asks for them: the bytes and packets of every RTP datagram received since the previous
//!   one ([`super::rate_reports`]);
//! - **generic NACK** (RFC 4585 §6.2.1) with the [`NackRequester`]'s timing, when NACK is on;
//! - **PLI** (RFC 4585 §6.3.1) when a frame cannot be decoded ([`Playout`] paces the requests),
//!   or when the NACK list overflows;
//! - a **receiver report** (RFC 3550 §6.4.2) every second (libwebrtc's video RTCP interval).
//!
//! Recovered packets (RTX, FEC) complete frames but are not reported in transport-wide feedback
//! under their original number (the retransmission has its own transport-wide number; an FEC
//! recovery has none), as in libwebrtc.
//!
//! **What it refuses** (a buggy or hostile peer must not break the flow with one packet):
//! datagrams of another stream (SSRCs other than the flow's, once [`VideoRecvEndpoint::with_streams`]
//! names them, as every scenario flow does), and a packet whose transport-wide sequence number,
//! media sequence number or frame id lands implausibly far ahead of the newest one
//! ([`JumpGuard`]: [`TRANSPORT_SEQ_WINDOW`], [`MEDIA_SEQ_WINDOW`] and [`FRAME_ID_WINDOW`]).
//! Accepting such a packet would report every number in between as lost and every later packet
//! as already reported (the sender would never get another acknowledgement), or give up every
//! frame in between. A real jump (a long loss run) is accepted from the packet after it. Both
//! are counted in [`Endpoint::discarded`].

use super::ecn_feedback::push_ecn_reports;
use super::frame_acks::{FrameAckConfig, FrameAcker};
use super::rate_reports::RateReporter;
use super::video_send::Ssrcs;
use super::{rtp_time, unwrap_near, Endpoint, EndpointEvent, Recovery, Transmit};
use super::{PT_FEC, PT_MEDIA, PT_RTX};
use crate::cc::FeedbackPolicy;
use crate::media::jitter_buffer::{FrameEvent, FramePacket, JitterBuffer, JitterBufferConfig};
use crate::media::nack::NackRequester;
use crate::media::{ArrivalRecorder, Playout};
use crate::packet::Ecn;
use crate::units::{earliest, Duration, Time};
use crate::wire::fec::{self, FecHeader};
use crate::wire::rtcp::{
    FrameAckMessage, Nack, Pli, ReceiverReport, ReportBlock, RtcpPacket, TransportCcFeedback,
};
use crate::wire::rtp::{is_rtcp, RtpHeader};
use crate::wire::seq::JumpGuard;
use crate::wire::SeqUnwrapper;
use std::collections::VecDeque;

/// Receiver reports go out this often (libwebrtc's default video RTCP interval).
pub const REPORT_INTERVAL: Duration = Duration(1_000_000_000);
/// Media packets kept for FEC recovery.
const FEC_WINDOW: usize = 96;
/// Largest number of statuses in one transport-wide feedback message.
const MAX_STATUSES_PER_MESSAGE: usize = 4096;
/// The receiver's own SSRC (it sends no media).
pub const RECEIVER_SSRC: u32 = 1;
/// A transport-wide sequence number more than this far ahead of the newest is held back
/// ([`JumpGuard`]): about 1 s of packets lost in a row at 100 Mbit/s, 48 s at 2 Mbit/s; a quarter
/// of the 16-bit space, so that a jump is never confused with a wrap. Judgment call.
pub const TRANSPORT_SEQ_WINDOW: u64 = 1 << 13;
/// The same for media sequence numbers.
pub const MEDIA_SEQ_WINDOW: u64 = 1 << 13;
/// ... and for frame ids: 1,024 frames, 34 s at 30 frame/s. Judgment call.
pub const FRAME_ID_WINDOW: u64 = 1 << 10;

pub struct VideoRecvEndpoint {
    policy: FeedbackPolicy,
    recovery: Recovery,
    media_ssrc: u32,
    arrivals: ArrivalRecorder,
    transport_seq: SeqUnwrapper,
    /// Newest unwrapped media sequence number, frame id and RTP timestamp.
    newest_seq: Option<u64>,
    newest_frame: Option<u64>,
    newest_ts: Option<u64>,
    jitter: JitterBuffer,
    nack: Option<NackRequester>,
    /// Frame acknowledgements, when the policy asks for them.
    frame_acks: Option<FrameAcker>,
    ack_scratch: Vec<FrameAckMessage>,
    /// Rate reports, when the policy asks for them.
    rate_reports: Option<RateReporter>,
    /// Recent media packets (sequence number, contents, wire size) for FEC recovery.
    fec_window: VecDeque<(u16, Vec<u8>, u32)>,
    /// Parity packets that could not recover anything yet.
    fec_parity: VecDeque<(FecHeader, Vec<u8>)>,
    next_feedback: Option<Time>,
    next_report: Time,
    feedback_count: u8,
    /// RTCP packets to send in the next datagram.
    pending: Vec<RtcpPacket>,
    /// Encoded datagrams waiting to be polled.
    out: VecDeque<Vec<u8>>,
    events: VecDeque<EndpointEvent>,
    received_media: u64,
    malformed: u64,
    /// Report the ECN codepoint of each packet (an RFC 8888 report with every transport-wide
    /// feedback).
    ecn: bool,
    nack_scratch: Vec<u64>,
    /// The flow's streams, when named: RTP of any other SSRC is refused.
    streams: Option<Ssrcs>,
    foreign: u64,
    transport_guard: JumpGuard,
    seq_guard: JumpGuard,
    frame_guard: JumpGuard,
}

impl VideoRecvEndpoint {
    /// A receiver created at `now` (its clock) for the stream `media_ssrc`.
    pub fn new(
        now: Time,
        media_ssrc: u32,
        policy: FeedbackPolicy,
        recovery: Recovery,
    ) -> VideoRecvEndpoint {
        let jitter = JitterBuffer::new(
            JitterBufferConfig {
                wait_for_missing: recovery.nack || recovery.fec_group.is_some(),
                playout_delay: recovery.playout_delay,
                ..JitterBufferConfig::default()
            },
            Playout::default(),
        );
        VideoRecvEndpoint {
            policy,
            recovery,
            media_ssrc,
            arrivals: ArrivalRecorder::new(),
            transport_seq: SeqUnwrapper::new(),
            newest_seq: None,
            newest_frame: None,
            newest_ts: None,
            jitter,
            nack: recovery
                .nack
                .then(|| NackRequester::with_delay(recovery.nack_delay)),
            frame_acks: policy
                .frame_acks
                .then(|| FrameAcker::new(FrameAckConfig::default(), RECEIVER_SSRC, media_ssrc)),
            ack_scratch: Vec::new(),
            rate_reports: policy
                .rate_reports
                .map(|iv| RateReporter::new(now, iv, RECEIVER_SSRC, media_ssrc)),
            fec_window: VecDeque::new(),
            fec_parity: VecDeque::new(),
            next_feedback: policy.interval.map(|iv| now + iv),
            next_report: now + REPORT_INTERVAL,
            feedback_count: 0,
            pending: Vec::new(),
            out: VecDeque::new(),
            events: VecDeque::new(),
            received_media: 0,
            malformed: 0,
            ecn: false,
            nack_scratch: Vec::new(),
            streams: None,
            foreign: 0,
            transport_guard: JumpGuard::new(TRANSPORT_SEQ_WINDOW),
            seq_guard: JumpGuard::new(MEDIA_SEQ_WINDOW),
            frame_guard: JumpGuard::new(FRAME_ID_WINDOW),
        }
    }

    /// Accept RTP of these streams only (media, RTX with padding, FEC).
    pub fn with_streams(mut self, streams: Ssrcs) -> VideoRecvEndpoint {
        self.streams = Some(streams);
        self
    }

    /// Whether a packet with header `h` belongs to the flow and continues its numbers
    /// plausibly (module documentation).
    fn accepts(&mut self, h: &RtpHeader) -> bool {
        if let Some(s) = self.streams {
            if ![s.media, s.rtx, s.fec].contains(&h.ssrc) {
                self.foreign += 1;
                return false;
            }
        }
        if let Some(ts) = h.transport_seq {
            let seq = self.transport_seq.peek(ts);
            if !self.transport_guard.admit(self.transport_seq.last(), seq) {
                return false;
            }
        }
        let near =
            |newest: Option<u64>, v: u64, bits| newest.map_or(v, |n| unwrap_near(n, v, bits));
        if h.payload_type == PT_MEDIA {
            let seq = near(self.newest_seq, h.sequence as u64, 16);
            if !self.seq_guard.admit(self.newest_seq, seq) {
                return false;
            }
        }
        if let Some(d) = h.frame {
            let frame = near(self.newest_frame, d.frame_id as u64, 16);
            if !self.frame_guard.admit(self.newest_frame, frame) {
                return false;
            }
        }
        true
    }

    /// Acknowledge frames as `config` says (default: when complete). Only with a policy that
    /// asks for frame acknowledgements.
    pub fn with_frame_acks(mut self, config: FrameAckConfig) -> VideoRecvEndpoint {
        if self.policy.frame_acks {
            self.frame_acks = Some(FrameAcker::new(config, RECEIVER_SSRC, self.media_ssrc));
        }
        self
    }

    fn unwrap(newest: &mut Option<u64>, v: u64, bits: u32) -> u64 {
        let u = match *newest {
            Some(n) => unwrap_near(n, v, bits),
            None => v,
        };
        *newest = Some(newest.map_or(u, |n| n.max(u)));
        u
    }

    /// A media packet (first transmission, retransmission or FEC recovery) with header `h`.
    fn on_media(&mut self, now: Time, h: &RtpHeader, size: u32, recovered: bool) {
        let seq = Self::unwrap(&mut self.newest_seq, h.sequence as u64, 16);
        self.received_media += 1;
        let keyframe_start = h.frame.is_some_and(|d| d.keyframe && d.index == 0);
        if let Some(n) = &mut self.nack {
            n.on_packet(now, seq, keyframe_start);
        }
        let Some(d) = h.frame else {
            return;
        };
        let frame = Self::unwrap(&mut self.newest_frame, d.frame_id as u64, 16);
        let ts = Self::unwrap(&mut self.newest_ts, h.timestamp as u64, 32);
        self.jitter.insert(
            now,
            &FramePacket {
                frame,
                index: d.index,
                count: d.count,
                keyframe: d.keyframe,
                reference: (d.reference_delta > 0)
                    .then(|| frame.checked_sub(d.reference_delta as u64))
                    .flatten(),
                seq,
                size,
                capture: rtp_time(ts),
                recovered,
            },
        );
        let last_of_frame = d.index + 1 == d.count;
        if self.policy.per_frame && last_of_frame {
            self.queue_feedback();
        }
    }

    /// Report the ECN codepoints packets arrive with (RFC 8888 reports). Default off.
    pub fn set_ecn(&mut self, mode: impl Into<crate::packet::EcnMode>) {
        self.ecn = mode.into().is_on();
    }

    fn on_rtp(&mut self, now: Time, datagram: &[u8], size: u32, ecn: Ecn) {
        let (h, len) = match RtpHeader::parse(datagram) {
            Ok(v) => v,
            Err(_) => {
                self.malformed += 1;
                return;
            }
        };
        if !self.accepts(&h) {
            return;
        }
        if let Some(r) = &mut self.rate_reports {
            r.on_datagram(now, size, h.transport_seq);
        }
        if let Some(ts) = h.transport_seq {
            let seq = self.transport_seq.unwrap(ts);
            self.arrivals.on_packet_with_ecn(now, seq, ecn);
        }
        match h.payload_type {
            PT_MEDIA => {
                if self.recovery.fec_group.is_some() {
                    // The sender protects a media packet's materialised contents, its headers:
                    // payload bytes a live transport sends after them are not part of it.
                    self.remember_for_fec(h.sequence, datagram[..len].to_vec(), size);
                }
                self.on_media(now, &h, size, false);
                self.try_fec(now);
            }
            PT_RTX => {
                let Some(osn) = datagram.get(len..len + 2) else {
                    self.malformed += 1;
                    return;
                };
                let original = RtpHeader {
                    ssrc: self.media_ssrc,
                    payload_type: PT_MEDIA,
                    sequence: u16::from_be_bytes([osn[0], osn[1]]),
                    transport_seq: None,
                    ..h
                };
                self.on_media(now, &original, size.saturating_sub(2), true);
            }
            PT_FEC => match FecHeader::parse(&datagram[len..]) {
                Ok((fh, flen)) => {
                    if self.fec_parity.len() == 8 {
                        self.fec_parity.pop_front();
                    }
                    self.fec_parity
                        .push_back((fh, datagram[len + flen..].to_vec()));
                    self.try_fec(now);
                }
                Err(_) => self.malformed += 1,
            },
            _ => {} // padding and probes: only their arrival matters
        }
    }

    /// Keep a media packet for FEC recovery: the newest [`FEC_WINDOW`] only, so that a 16-bit
    /// sequence number never stands for two packets in the window.
    fn remember_for_fec(&mut self, seq: u16, contents: Vec<u8>, size: u32) {
        while self.fec_window.len() >= FEC_WINDOW {
            self.fec_window.pop_front();
        }
        self.fec_window.push_back((seq, contents, size));
    }

    /// Recover what the parity packets held can recover.
    fn try_fec(&mut self, now: Time) {
        if self.fec_parity.is_empty() {
            return;
        }
        let mut i = 0;
        while i < self.fec_parity.len() {
            let (header, parity) = &self.fec_parity[i];
            let others: Vec<(u16, &[u8], u32)> = self
                .fec_window
                .iter()
                .filter(|(s, ..)| {
                    let off = s.wrapping_sub(header.base_seq);
                    off < 16 && header.mask & (1 << off) != 0
                })
                .map(|(s, c, z)| (*s, c.as_slice(), *z))
                .collect();
            let protected = header.mask.count_ones() as usize;
            if others.len() >= protected {
                self.fec_parity.remove(i); // nothing missing: done with it
                continue;
            }
            match fec::recover(header, parity, &others) {
                Ok(Some((_, contents, size))) => {
                    self.fec_parity.remove(i);
                    if let Ok((h, _)) = RtpHeader::parse(&contents) {
                        let h = RtpHeader {
                            transport_seq: None,
                            ..h
                        };
                        self.remember_for_fec(h.sequence, contents, size);
                        self.on_media(now, &h, size, true);
                    }
                }
                Ok(None) => i += 1,
                Err(_) => {
                    self.malformed += 1;
                    self.fec_parity.remove(i);
                }
            }
        }
    }

    fn queue_feedback(&mut self) {
        let Some(fb) = self.arrivals.build_feedback() else {
            return;
        };
        if self.ecn {
            // First in the compound, so that the sender has the codepoints when the
            // transport-wide feedback on the same packets arrives.
            push_ecn_reports(&mut self.pending, RECEIVER_SSRC, self.media_ssrc, &fb);
        }
        for m in TransportCcFeedback::build(
            RECEIVER_SSRC,
            self.media_ssrc,
            fb.base_seq as u16,
            self.feedback_count,
            &fb.receive_times,
            MAX_STATUSES_PER_MESSAGE,
        ) {
            self.feedback_count = self.feedback_count.wrapping_add(1);
            self.pending.push(RtcpPacket::TransportCc(m));
        }
    }

    /// Act on what the jitter buffer and the NACK requester decided, then encode what is due.
    fn after_input(&mut self, now: Time) {
        while let Some(e) = self.jitter.poll_event() {
            if let Some(a) = &mut self.frame_acks {
                a.on_event(now, &e);
            }
            if matches!(e, FrameEvent::Abandoned { .. }) {
                if let (Some(n), Some(seq)) = (&mut self.nack, self.jitter.oldest_wanted_seq()) {
                    n.clear_up_to(seq);
                }
            }
            self.events.push_back(EndpointEvent::Frame(e));
        }
        if let Some(a) = &mut self.frame_acks {
            a.poll(now, &mut self.ack_scratch);
            self.pending
                .extend(self.ack_scratch.drain(..).map(RtcpPacket::FrameAck));
        }
        if let Some(n) = &mut self.nack {
            // Frames wait for repairs a few round trips (two or three NACK rounds).
            let mut wait = Duration(4 * n.rtt().0)
                .clamp(Duration::from_millis(100), Duration::from_millis(1000));
            if let Some(deadline) = self.frame_acks.as_ref().and_then(|a| a.display_deadline()) {
                wait = wait.min(deadline); // the client shows no frame later than this
            }
            self.jitter.set_max_wait(wait);
            n.poll_requests(now, &mut self.nack_scratch);
            if !self.nack_scratch.is_empty() {
                self.pending.push(RtcpPacket::Nack(Nack {
                    sender_ssrc: RECEIVER_SSRC,
                    media_ssrc: self.media_ssrc,
                    lost: self.nack_scratch.iter().map(|&s| s as u16).collect(),
                }));
            }
            if n.take_keyframe_needed() {
                self.pending.push(self.pli());
            }
        }
        if self.recovery.keyframe_requests && self.jitter.playout().poll_keyframe_request(now) {
            self.pending.push(self.pli());
        }
        if !self.pending.is_empty() {
            let mut bytes = Vec::new();
            for p in self.pending.drain(..) {
                // Only messages this endpoint built itself are encoded: they always fit.
                let encoded = p.encode(&mut bytes);
                debug_assert!(encoded.is_ok(), "{p:?} does not encode: {encoded:?}");
            }
            self.out.push_back(bytes);
        }
    }

    fn pli(&self) -> RtcpPacket {
        RtcpPacket::Pli(Pli {
            sender_ssrc: RECEIVER_SSRC,
            media_ssrc: self.media_ssrc,
        })
    }

    fn receiver_report(&self) -> RtcpPacket {
        let highest = self.newest_seq.unwrap_or(0);
        let expected = highest + 1;
        let lost = expected.saturating_sub(self.received_media);
        RtcpPacket::ReceiverReport(ReceiverReport {
            sender_ssrc: RECEIVER_SSRC,
            blocks: vec![ReportBlock {
                ssrc: self.media_ssrc,
                fraction_lost: 0,
                cumulative_lost: lost.min(0x7F_FFFF) as i32,
                extended_highest_seq: highest as u32,
                jitter: 0,
                last_sr: 0,
                delay_since_last_sr: 0,
            }],
        })
    }
}

impl Endpoint for VideoRecvEndpoint {
    fn handle_datagram(&mut self, now: Time, datagram: &[u8], size: u32) {
        self.handle_datagram_with_ecn(now, datagram, size, Ecn::NotEct);
    }

    fn handle_datagram_with_ecn(&mut self, now: Time, datagram: &[u8], size: u32, ecn: Ecn) {
        if is_rtcp(datagram) {
            return; // sender reports: nothing a receiver here needs
        }
        self.on_rtp(now, datagram, size, ecn);
        self.after_input(now);
    }

    fn poll_transmit(&mut self, _now: Time, buf: &mut Vec<u8>) -> Option<Transmit> {
        Some(Transmit::control(&self.out.pop_front()?, buf))
    }

    fn poll_timeout(&self) -> Option<Time> {
        let nack = self.nack.as_ref().and_then(|n| n.poll_timeout());
        let acks = self.frame_acks.as_ref().and_then(|a| a.poll_timeout());
        let rates = self.rate_reports.as_ref().map(|r| r.poll_timeout());
        let timers = earliest(
            earliest(earliest(self.next_feedback, acks), rates),
            earliest(nack, self.jitter.poll_timeout()),
        );
        Some(timers.map_or(self.next_report, |t| t.min(self.next_report)))
    }

    fn handle_timeout(&mut self, now: Time) {
        if let (Some(at), Some(iv)) = (self.next_feedback, self.policy.interval) {
            if at <= now {
                self.queue_feedback();
                self.next_feedback = Some(at + iv);
            }
        }
        if self.next_report <= now {
            if self.received_media > 0 {
                let rr = self.receiver_report();
                self.pending.push(rr);
            }
            self.next_report += REPORT_INTERVAL;
        }
        if let Some(m) = self.rate_reports.as_mut().and_then(|r| r.poll(now)) {
            self.pending.push(RtcpPacket::RateReport(m));
        }
        self.jitter.handle_timeout(now);
        self.after_input(now);
    }

    fn poll_event(&mut self) -> Option<EndpointEvent> {
        self.events.pop_front()
    }

    fn malformed(&self) -> u64 {
        self.malformed
    }

    fn discarded(&self) -> u64 {
        self.foreign
            + self.transport_guard.rejected()
            + self.seq_guard.rejected()
            + self.frame_guard.rejected()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::fec::FecEncoder;
    use crate::wire::rtp::FrameDescriptor;

    #[test]
    fn fec_keeps_recovering_across_sequence_number_wraps_with_a_bounded_window() {
        // Groups of 4 one-packet frames plus a parity packet, the second of each group lost,
        // for more than 65 536 media packets.
        let recovery = Recovery {
            nack: false,
            fec_group: Some(4),
            ..Recovery::default()
        };
        let policy = FeedbackPolicy {
            interval: None,
            per_frame: false,
            frame_acks: false,
            rate_reports: None,
        };
        let mut rx = VideoRecvEndpoint::new(Time::ZERO, 7, policy, recovery);
        let (mut recovered, mut recovered_late) = (0, 0);
        let total: u64 = 70_000;
        for group in 0..total / 4 {
            let mut enc = FecEncoder::new();
            for k in 0..4 {
                let seq = group * 4 + k;
                let mut b = Vec::new();
                RtpHeader {
                    marker: true,
                    payload_type: PT_MEDIA,
                    sequence: seq as u16,
                    timestamp: (seq * 3000) as u32,
                    ssrc: 7,
                    transport_seq: Some(seq as u16),
                    abs_send_time: None,
                    frame: Some(FrameDescriptor {
                        keyframe: seq == 0,
                        frame_id: seq as u16,
                        index: 0,
                        count: 1,
                        reference_delta: u16::from(seq > 0),
                    }),
                }
                .encode(&mut b);
                enc.protect(&b, 1200, seq as u16).unwrap();
                if k != 1 {
                    rx.handle_datagram(Time::from_millis(seq * 33), &b, 1200);
                }
            }
            let (header, parity) = enc.finish().unwrap();
            let mut b = Vec::new();
            RtpHeader {
                payload_type: PT_FEC,
                sequence: group as u16,
                ssrc: 9,
                ..RtpHeader::default()
            }
            .encode(&mut b);
            header.encode(&mut b);
            b.extend_from_slice(&parity);
            rx.handle_datagram(Time::from_millis(group * 4 * 33 + 100), &b, 1210);
            while let Some(e) = rx.poll_event() {
                if let EndpointEvent::Frame(FrameEvent::Complete {
                    recovered: true,
                    frame,
                    ..
                }) = e
                {
                    recovered += 1;
                    if frame >= 66_000 {
                        recovered_late += 1;
                    }
                }
            }
            assert!(rx.fec_window.len() <= FEC_WINDOW);
        }
        assert_eq!(rx.malformed(), 0, "no parity packet is rejected");
        assert_eq!(recovered, total / 4, "every lost packet is recovered");
        assert!(recovered_late > 0, "also after the 16-bit wrap");
    }

    use crate::endpoint::frame_acks::{AckAt, FrameAckConfig};

    fn acking() -> FeedbackPolicy {
        FeedbackPolicy {
            interval: None,
            per_frame: false,
            frame_acks: true,
            rate_reports: None,
        }
    }

    fn display_acks() -> FrameAckConfig {
        FrameAckConfig {
            at: AckAt::Display,
            presentation_timeout: Duration::from_millis(100),
        }
    }

    /// Packet `index` of `count` of frame `frame` (33 ms apart; frame 0 the keyframe), RTP
    /// sequence number `seq`.
    fn media(seq: u16, frame: u16, index: u16, count: u16) -> Vec<u8> {
        crate::endpoint::tests::media_packet(seq, frame, index, count, frame == 0)
    }

    /// A frame acknowledgement as sent: (ms sent, frame id, lost).
    type SentAck = (u64, u16, bool);

    /// Feed `(ms, datagram)` in order (timers in between), and return every datagram the
    /// receiver sent and the frame acknowledgements in it.
    fn drive(
        rx: &mut VideoRecvEndpoint,
        arrivals: &[(u64, Vec<u8>)],
        until_ms: u64,
    ) -> (Vec<Vec<u8>>, Vec<SentAck>) {
        let (mut out, mut acks, mut buf) = (Vec::new(), Vec::new(), Vec::new());
        let mut collect = |rx: &mut VideoRecvEndpoint, now: Time| {
            while rx.poll_transmit(now, &mut buf).is_some() {
                for p in crate::wire::rtcp::parse_compound(&buf).unwrap() {
                    if let RtcpPacket::FrameAck(a) = p {
                        acks.push((now.0 / 1_000_000, a.frame_id, a.lost));
                    }
                }
                out.push(std::mem::take(&mut buf));
            }
        };
        let mut next = 0;
        loop {
            let arrival = arrivals.get(next).map(|a| Time::from_millis(a.0));
            let timer = rx
                .poll_timeout()
                .filter(|&t| t <= Time::from_millis(until_ms));
            match (arrival, timer) {
                (Some(a), t) if t.is_none_or(|t| a <= t) => {
                    rx.handle_datagram(a, &arrivals[next].1, 1200);
                    next += 1;
                    collect(rx, a);
                }
                (_, Some(t)) => {
                    rx.handle_timeout(t);
                    collect(rx, t);
                }
                _ => break,
            }
        }
        (out, acks)
    }

    /// Frame 0 at 20 ms; frame 1's second packet late (at `late_ms`); frame 2 at 80 ms.
    fn late_second_packet(late_ms: u64) -> Vec<(u64, Vec<u8>)> {
        vec![
            (20, media(0, 0, 0, 1)),
            (50, media(1, 1, 0, 2)),
            (80, media(3, 2, 0, 1)),
            (late_ms, media(2, 1, 1, 2)),
            (late_ms + 20, media(4, 3, 0, 1)),
        ]
    }

    #[test]
    fn at_display_a_frame_is_acknowledged_when_it_is_shown() {
        let mut rx = VideoRecvEndpoint::new(Time::ZERO, 7, acking(), Recovery::default())
            .with_frame_acks(display_acks());
        let (_, acks) = drive(&mut rx, &late_second_packet(120), 400);
        // Frame 2 was complete at 80 ms but shown after frame 1, completed at 120 ms: within
        // the 100 ms presentation timeout from frame 1's first packet (50 ms).
        assert_eq!(
            acks,
            vec![
                (20, 0, false),
                (120, 1, false),
                (120, 2, false),
                (140, 3, false)
            ]
        );
        let mut rx = VideoRecvEndpoint::new(Time::ZERO, 7, acking(), Recovery::default());
        let (_, acks) = drive(&mut rx, &late_second_packet(120), 400);
        assert_eq!(
            acks,
            vec![
                (20, 0, false),
                (80, 2, false),
                (120, 1, false),
                (140, 3, false)
            ],
            "the default acknowledges at completion"
        );
    }

    #[test]
    fn a_frame_past_the_presentation_timeout_is_acknowledged_lost_after_the_next_frame() {
        let mut rx = VideoRecvEndpoint::new(Time::ZERO, 7, acking(), Recovery::default())
            .with_frame_acks(display_acks());
        // Frame 1's last packet 110 ms after its first: shown, but late for the presentation.
        let (_, acks) = drive(&mut rx, &late_second_packet(160), 400);
        assert_eq!(
            acks,
            vec![
                (20, 0, false),
                (160, 2, false),
                (160, 1, true),
                (180, 3, false)
            ]
        );
    }

    #[test]
    fn at_display_the_client_waits_for_a_repair_no_longer_than_the_presentation_timeout() {
        // With NACK on, an incomplete frame holds later ones back while repairs may come: a few
        // round trips (4 x the 100 ms default RTT here). The paper's client presents no frame
        // later than its 100 ms timeout, so frame 1 is given up on 100 ms after frame 2 is
        // complete, not 400 ms.
        let arrivals = vec![
            (20, media(0, 0, 0, 1)),
            (50, media(1, 1, 0, 2)),
            (80, media(3, 2, 0, 1)),
        ];
        let mut rx = VideoRecvEndpoint::new(Time::ZERO, 7, acking(), Recovery::default())
            .with_frame_acks(display_acks());
        let (_, acks) = drive(&mut rx, &arrivals, 1000);
        assert_eq!(acks, vec![(20, 0, false), (180, 2, false), (180, 1, true)]);
        let mut rx = VideoRecvEndpoint::new(Time::ZERO, 7, acking(), Recovery::default());
        let (_, acks) = drive(&mut rx, &arrivals, 1000);
        assert_eq!(
            acks,
            vec![(20, 0, false), (80, 2, false)],
            "acknowledged when complete, the default receiver's frames wait as before"
        );
        let abandoned = std::iter::from_fn(|| rx.poll_event())
            .filter(|e| matches!(e, EndpointEvent::Frame(FrameEvent::Abandoned { frame: 1 })))
            .count();
        assert_eq!(abandoned, 1);
    }

    #[test]
    fn a_frame_never_complete_is_acknowledged_lost_after_a_later_one() {
        // No NACK: frame 1 is abandoned as soon as frame 2 is complete; frame 2 cannot be
        // decoded (its reference is gone) but came whole, so it is acknowledged, then frame 1.
        let recovery = Recovery {
            nack: false,
            ..Recovery::default()
        };
        let mut rx = VideoRecvEndpoint::new(Time::ZERO, 7, acking(), recovery)
            .with_frame_acks(display_acks());
        let arrivals = vec![
            (20, media(0, 0, 0, 1)),
            (50, media(1, 1, 0, 2)),
            (80, media(3, 2, 0, 1)),
        ];
        let (_, acks) = drive(&mut rx, &arrivals, 400);
        assert_eq!(acks, vec![(20, 0, false), (80, 2, false), (80, 1, true)]);
    }

    #[test]
    fn the_default_receiver_acknowledges_each_frame_when_complete_and_nothing_else() {
        // Losses, repairs that come late and frames given up on: one acknowledgement per
        // complete frame, in the datagram of its completion, none flagged lost; the same with
        // the default set explicitly.
        let mut arrivals: Vec<(u64, Vec<u8>)> = (0..60u16)
            .filter(|k| k % 7 != 3)
            .map(|k| (20 + 33 * k as u64 / 2, media(2 * k, k, 0, 2)))
            .chain((0..60u16).filter(|k| k % 5 != 1).map(|k| {
                let late = 150 * u64::from(k % 3 == 0);
                (20 + 33 * k as u64 / 2 + late, media(2 * k + 1, k, 1, 2))
            }))
            .collect();
        arrivals.sort_by_key(|a| a.0);
        let mut rx = VideoRecvEndpoint::new(Time::ZERO, 7, acking(), Recovery::default());
        let plain = drive(&mut rx, &arrivals, 3000);
        let mut completions = Vec::new();
        while let Some(EndpointEvent::Frame(e)) = rx.poll_event() {
            if let FrameEvent::Complete { frame, at, .. } = e {
                completions.push((at.0 / 1_000_000, frame as u16, false));
            }
        }
        assert_eq!(plain.1, completions);
        assert!(
            completions.len() > 20,
            "{} frames complete",
            completions.len()
        );
        let explicit = drive(
            &mut VideoRecvEndpoint::new(Time::ZERO, 7, acking(), Recovery::default())
                .with_frame_acks(FrameAckConfig::default()),
            &arrivals,
            3000,
        );
        assert_eq!(plain, explicit);
    }
}
