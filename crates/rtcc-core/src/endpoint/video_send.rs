//! The video sender endpoint: frame source, encoder, packetizer, pacer and controller (the
//! [`VideoSender`]) behind RTP on the wire, with retransmissions and FEC.
//!
//! What goes out (RFC 3550 RTP, one-byte header extensions of RFC 8285):
//! - **media** on the media SSRC with payload type [`PT_MEDIA`]: the transport-wide sequence
//!   number (draft-holmer-rmcat-transport-wide-cc-extensions-01), abs-send-time, and rtcc's frame
//!   descriptor (frame id, packet index and count, keyframe flag, the frame it predicts from), the
//!   90 kHz RTP timestamp of the capture instant, the marker bit on a frame's last packet;
//! - **retransmissions** on the RTX SSRC ([`PT_RTX`], RFC 4588: the original sequence number
//!   first in the payload), asked for by the receiver's NACKs. As libwebrtc's
//!   `RTPSender::ReSendPacket` with its `RtpPacketHistory`: a packet is resent only while it is in
//!   the history (sent within the last max(1 s, 3 × SRTT), `kMinPacketDuration` and
//!   `kMinPacketDurationRtt`); the first NACK for a packet is always served, a later one not
//!   within one SRTT of the last retransmission (`RtpPacketHistory::VerifyRtt`: that copy may
//!   still be in flight), and only within the retransmission budget (at most the target rate
//!   over 500 ms, [`crate::media::protection::RetransmissionBudget`]);
//! - **FEC** (optional) on the FEC SSRC ([`PT_FEC`]): one XOR parity packet after every `k`
//!   media packets or at the end of a frame, whichever comes first ([`crate::wire::fec`]);
//! - **padding and probes** on the RTX SSRC ([`PT_PADDING`]), as libwebrtc pads on RTX.
//!
//! Retransmissions, FEC, padding and media all carry transport-wide sequence numbers and pass
//! through the pacer, so the controller sees all of them (`on_packet_sent`, feedback).
//!
//! What comes back (RTCP compound datagrams): transport-wide feedback (into the controller),
//! frame acknowledgements, late ones of lost frames included (for frame-level controllers), rate
//! reports (into the controller's `on_rate_report`), generic NACK (retransmissions), PLI (the
//! next frame is a keyframe) and receiver reports (counted only). NACKs and PLIs about another
//! SSRC than the flow's media stream are ignored, and a PLI within the flow's
//! `keyframe_request_interval` ([`MIN_KEYFRAME_REQUEST_INTERVAL`], 300 ms, by default) of the
//! last one served, as in libwebrtc; both are counted in [`Endpoint::discarded`].

use super::ecn_feedback::EcnReport;
use super::{
    rtp_timestamp, unwrap_near, EncodedFrameInfo, Endpoint, EndpointEvent, Recovery, Transmit,
    PT_FEC, PT_MEDIA, PT_PADDING, PT_RTX,
};
use crate::media::protection::RetransmissionBudget;
use crate::media::{FrameSource, VideoSender};
use crate::packet::{
    Ecn, EcnMode, FrameAck, PacketKind, RateReport, SentPacket, TransportFeedback,
};
use crate::units::{earliest, Duration, Time};
use crate::wire::fec::{FecEncoder, FecHeader};
use crate::wire::rtcp::{self, RtcpPacket};
use crate::wire::rtp::{abs_send_time, FrameDescriptor, RtpHeader};
use std::collections::VecDeque;

/// libwebrtc `RtpPacketHistory::kMinPacketDuration`: packets stay resendable at least this long.
pub const HISTORY_MIN_AGE: Duration = Duration(1_000_000_000);
/// libwebrtc `kMinPacketDurationRtt`: ... and at least this many SRTTs.
pub const HISTORY_RTTS: u64 = 3;

/// libwebrtc `EncoderRtcpFeedback`'s `kMinKeyframeSendIntervalMs`: a keyframe request (PLI)
/// sooner than this after the last one served is ignored, so that a burst of requests (a
/// receiver's, or forged ones) costs one keyframe, not one each.
pub const MIN_KEYFRAME_REQUEST_INTERVAL: Duration = Duration(300_000_000);

/// SSRCs of a flow's streams.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ssrcs {
    pub media: u32,
    pub rtx: u32,
    pub fec: u32,
}

impl Ssrcs {
    /// Deterministic SSRCs for flow `i` (a real stack draws them at random).
    pub fn for_flow(i: u32) -> Ssrcs {
        let base = 0x5254_0000 | (i & 0x3FFF) << 2;
        Ssrcs {
            media: base,
            rtx: base | 1,
            fec: base | 2,
        }
    }
}

/// A media packet that may be retransmitted.
#[derive(Debug, Clone, Copy)]
struct HistoryEntry {
    rtp_seq: u64,
    packet: SentPacket,
    descriptor: FrameDescriptor,
    timestamp: u32,
    marker: bool,
    last_sent: Time,
    retransmitted: bool,
}

#[derive(Debug, Clone, Copy)]
struct FrameMeta {
    capture: Time,
    keyframe: bool,
    reference: Option<u64>,
}

pub struct VideoSendEndpoint {
    sender: VideoSender,
    source: FrameSource,
    ssrcs: Ssrcs,
    recovery: Recovery,
    next_capture: Option<Time>,
    active: bool,
    closed: bool,
    /// Next RTP sequence numbers (unwrapped) of the media and RTX streams.
    media_seq: u64,
    rtx_seq: u64,
    fec_seq: u64,
    /// Recent frames, by id from `frames_from`.
    frames: VecDeque<FrameMeta>,
    frames_from: u64,
    /// The latest frame with packets (the next P-frame's reference).
    last_encoded: Option<u64>,
    history: VecDeque<HistoryEntry>,
    fec: Option<FecEncoder>,
    fec_count: u16,
    /// Parity packets waiting in the pacer, by id.
    fec_pending: VecDeque<(u64, FecHeader, Vec<u8>)>,
    fec_next_id: u64,
    events: VecDeque<EndpointEvent>,
    malformed: u64,
    /// NACKs and PLIs refused (another SSRC, too soon).
    discarded: u64,
    /// When the last keyframe request was served.
    last_keyframe_request: Option<Time>,
    /// libwebrtc's retransmission rate limit.
    budget: RetransmissionBudget,
    /// The codepoint of every RTP packet: ECT(0) with RTP over ECN (RFC 6679), else Not-ECT.
    ecn: Ecn,
    /// The codepoints of the last RFC 8888 report, until the transport-wide feedback of the
    /// same compound joins them.
    ecn_report: EcnReport,
}

impl VideoSendEndpoint {
    /// A transport-wide sequence number as the receiver echoes it (16 bits), unwrapped near the
    /// newest one sent.
    fn unwrap_transport_seq(&self, seq: u16) -> u64 {
        let newest = self.sender.next_transport_seq().saturating_sub(1);
        unwrap_near(newest, seq as u64, 16)
    }

    /// A sender whose first frame is captured at the source's first instant.
    pub fn new(
        mut sender: VideoSender,
        mut source: FrameSource,
        ssrcs: Ssrcs,
        recovery: Recovery,
    ) -> VideoSendEndpoint {
        sender.set_rto_enabled(recovery.rto);
        let (_, first) = source.next_capture();
        VideoSendEndpoint {
            sender,
            source,
            ssrcs,
            recovery,
            next_capture: Some(first),
            active: true,
            closed: false,
            media_seq: 0,
            rtx_seq: 0,
            fec_seq: 0,
            frames: VecDeque::new(),
            frames_from: 0,
            last_encoded: None,
            history: VecDeque::new(),
            fec: recovery.fec_group.map(|_| FecEncoder::new()),
            fec_count: 0,
            fec_pending: VecDeque::new(),
            fec_next_id: 0,
            events: VecDeque::new(),
            malformed: 0,
            discarded: 0,
            last_keyframe_request: None,
            budget: RetransmissionBudget::default(),
            ecn: Ecn::NotEct,
            ecn_report: EcnReport::default(),
        }
    }

    pub fn sender(&self) -> &VideoSender {
        &self.sender
    }

    fn frame_meta(&self, frame: u64) -> Option<&FrameMeta> {
        frame
            .checked_sub(self.frames_from)
            .and_then(|i| self.frames.get(i as usize))
    }

    fn capture(&mut self, now: Time) {
        let frame = self.frames_from + self.frames.len() as u64;
        let info = self.sender.on_frame_captured(now, frame);
        let encoded = self.sender.last_encoded().copied();
        let reference = if info.keyframe {
            None
        } else {
            self.last_encoded
        };
        if info.packets > 0 {
            self.last_encoded = Some(frame);
        }
        self.frames.push_back(FrameMeta {
            capture: now,
            keyframe: info.keyframe,
            reference,
        });
        // Frame metadata is needed while its packets may still be (re)sent.
        while self.frames.len() > 4096 {
            self.frames.pop_front();
            self.frames_from += 1;
        }
        self.events
            .push_back(EndpointEvent::FrameEncoded(EncodedFrameInfo {
                frame,
                capture: now,
                size: info.size,
                target: info.target,
                packets: info.packets,
                keyframe: info.keyframe,
                psnr_db: encoded.and_then(|e| e.psnr_db),
                resolution: encoded.and_then(|e| e.resolution),
            }));
    }

    /// Forget history older than the retransmission horizon.
    fn trim_history(&mut self, now: Time) {
        let srtt = self.sender.srtt().unwrap_or(Duration::ZERO);
        let horizon = HISTORY_MIN_AGE.max(Duration(srtt.0 * HISTORY_RTTS));
        while self
            .history
            .front()
            .is_some_and(|e| now.saturating_since(e.packet.send_time) > horizon)
        {
            self.history.pop_front();
        }
    }

    fn on_nack(&mut self, now: Time, lost: &[u16]) {
        if !self.recovery.nack {
            return;
        }
        self.trim_history(now);
        let srtt = self.sender.srtt().unwrap_or(Duration::ZERO);
        let newest = self.media_seq.saturating_sub(1);
        for &s in lost {
            let seq = unwrap_near(newest, s as u64, 16);
            let Some(first) = self.history.front().map(|e| e.rtp_seq) else {
                return;
            };
            let Some(e) = seq
                .checked_sub(first)
                .and_then(|i| self.history.get_mut(i as usize))
            else {
                continue; // too old (or never sent): give up on it
            };
            if e.retransmitted && now.saturating_since(e.last_sent) < srtt {
                continue; // resent within the last RTT: the copy may still arrive
            }
            let mut copy = e.packet;
            copy.size += 2; // RFC 4588: the original sequence number
            if !self
                .budget
                .try_use(now, copy.size, self.sender.target_rate())
            {
                continue; // over the retransmission budget: the receiver asks again later
            }
            e.last_sent = now;
            e.retransmitted = true;
            self.sender.queue_retransmission(now, &copy, seq);
        }
    }

    fn on_rtcp(&mut self, now: Time, datagram: &[u8]) {
        let packets = match rtcp::parse_compound(datagram) {
            Ok(p) => p,
            Err(_) => {
                self.malformed += 1;
                return;
            }
        };
        for p in packets {
            match p {
                RtcpPacket::TransportCc(fb) => {
                    let base = self.unwrap_transport_seq(fb.base_seq);
                    let ecn = self.ecn_report.take(base, fb.receive_times.len());
                    let feedback = TransportFeedback {
                        base_seq: base,
                        receive_times: fb.receive_times,
                        ecn,
                        ecn_echo: false,
                    };
                    self.sender.on_feedback(now, &feedback);
                }
                RtcpPacket::Ccfb(report) => {
                    let newest = self.sender.next_transport_seq().saturating_sub(1);
                    self.ecn_report.on_report(&report, newest);
                }
                RtcpPacket::FrameAck(a) => {
                    let newest = (self.frames_from + self.frames.len() as u64).saturating_sub(1);
                    let frame = unwrap_near(newest, a.frame_id as u64, 16);
                    self.sender.on_frame_ack(
                        now,
                        &FrameAck {
                            frame,
                            first_receive_time: a.first_receive,
                            last_receive_time: a.last_receive,
                            complete_time: a.complete,
                            size: a.size,
                            lost: a.lost,
                        },
                    );
                }
                RtcpPacket::RateReport(r) => {
                    let report = RateReport {
                        window_start: r.window_start,
                        window_end: r.window_end,
                        bytes: r.bytes,
                        packets: r.packets,
                        last: r.last.map(|(seq, at)| (self.unwrap_transport_seq(seq), at)),
                    };
                    self.sender.on_rate_report(now, &report);
                }
                RtcpPacket::Nack(n) if n.media_ssrc == self.ssrcs.media => {
                    self.on_nack(now, &n.lost)
                }
                RtcpPacket::Pli(p) if p.media_ssrc == self.ssrcs.media => {
                    let too_soon = self.last_keyframe_request.is_some_and(|t| {
                        now.saturating_since(t) < self.recovery.keyframe_request_interval
                    });
                    if too_soon {
                        self.discarded += 1;
                    } else {
                        self.last_keyframe_request = Some(now);
                        self.sender.request_keyframe();
                    }
                }
                RtcpPacket::Nack(_) | RtcpPacket::Pli(_) => self.discarded += 1,
                _ => {}
            }
        }
    }

    /// Send RTP ECT(0) (RFC 6679), or ECT(1) for an L4S flow (RFC 9331), and read the
    /// receiver's ECN reports. Default off.
    pub fn set_ecn(&mut self, mode: impl Into<EcnMode>) {
        self.ecn = mode.into().codepoint();
    }

    /// Write the RTP packet for `pkt` (released by the pacer) into `buf`.
    fn write_packet(&mut self, now: Time, pkt: &SentPacket, ref_id: u64, buf: &mut Vec<u8>) {
        let mut header = RtpHeader {
            transport_seq: Some(pkt.seq as u16),
            abs_send_time: Some(abs_send_time(now)),
            ..RtpHeader::default()
        };
        match pkt.kind {
            PacketKind::Media => {
                let frame = pkt.frame.unwrap_or(0);
                let meta = self.frame_meta(frame).copied().unwrap_or(FrameMeta {
                    capture: now,
                    keyframe: false,
                    reference: None,
                });
                let descriptor = FrameDescriptor {
                    keyframe: meta.keyframe,
                    frame_id: frame as u16,
                    index: pkt.index_in_frame,
                    count: pkt.packets_in_frame,
                    reference_delta: meta.reference.map_or(0, |r| (frame - r) as u16),
                };
                let rtp_seq = self.media_seq;
                self.media_seq += 1;
                header.ssrc = self.ssrcs.media;
                header.payload_type = PT_MEDIA;
                header.sequence = rtp_seq as u16;
                header.timestamp = rtp_timestamp(meta.capture);
                header.marker = pkt.is_last_of_frame();
                header.frame = Some(descriptor);
                header.encode(buf);
                self.history.push_back(HistoryEntry {
                    rtp_seq,
                    packet: *pkt,
                    descriptor,
                    timestamp: header.timestamp,
                    marker: header.marker,
                    last_sent: now,
                    retransmitted: false,
                });
                if self.history.len().is_multiple_of(64) {
                    self.trim_history(now);
                }
                self.protect(now, buf, pkt.size, rtp_seq as u16, header.marker);
            }
            PacketKind::Retransmission => {
                header.ssrc = self.ssrcs.rtx;
                header.payload_type = PT_RTX;
                header.sequence = self.rtx_seq as u16;
                self.rtx_seq += 1;
                let original = self
                    .history
                    .front()
                    .and_then(|f| ref_id.checked_sub(f.rtp_seq))
                    .and_then(|i| self.history.get(i as usize))
                    .filter(|e| e.rtp_seq == ref_id);
                if let Some(e) = original {
                    header.timestamp = e.timestamp;
                    header.marker = e.marker;
                    header.frame = Some(e.descriptor);
                }
                header.encode(buf);
                buf.extend_from_slice(&(ref_id as u16).to_be_bytes());
            }
            PacketKind::Fec => {
                header.ssrc = self.ssrcs.fec;
                header.payload_type = PT_FEC;
                header.sequence = self.fec_seq as u16;
                self.fec_seq += 1;
                header.encode(buf);
                while self
                    .fec_pending
                    .front()
                    .is_some_and(|(id, ..)| *id < ref_id)
                {
                    self.fec_pending.pop_front();
                }
                if let Some((_, fec_header, parity)) = self
                    .fec_pending
                    .pop_front()
                    .filter(|(id, ..)| *id == ref_id)
                {
                    fec_header.encode(buf);
                    buf.extend_from_slice(&parity);
                }
            }
            // The pacer never holds control packets; should one appear it goes out as filler.
            PacketKind::Padding | PacketKind::Probe | PacketKind::Control => {
                header.ssrc = self.ssrcs.rtx;
                header.payload_type = PT_PADDING;
                header.sequence = self.rtx_seq as u16;
                self.rtx_seq += 1;
                header.encode(buf);
            }
        }
    }

    /// Add a media packet to the current FEC group; close the group after `k` packets or at
    /// the end of a frame and queue its parity packet.
    fn protect(&mut self, now: Time, contents: &[u8], size: u32, seq: u16, end_of_frame: bool) {
        let (Some(enc), Some(k)) = (&mut self.fec, self.recovery.fec_group) else {
            return;
        };
        if enc.protect(contents, size, seq).is_err() {
            // The packet cannot join this group (it spans more than the 16 numbers one parity
            // packet covers): close the group and start the next one with this packet.
            self.finish_fec_group(now);
            let Some(enc) = &mut self.fec else { return };
            if enc.protect(contents, size, seq).is_err() {
                return; // contents over 64 KiB: left unprotected
            }
        }
        self.fec_count += 1;
        if self.fec_count >= k || end_of_frame {
            self.finish_fec_group(now);
        }
    }

    /// Queue the parity packet of the current FEC group, if it has packets.
    fn finish_fec_group(&mut self, now: Time) {
        let protected = std::mem::take(&mut self.fec_count) as usize;
        let Some((header, parity)) = self.fec.as_mut().and_then(|enc| enc.finish()) else {
            return;
        };
        let id = self.fec_next_id;
        self.fec_next_id += 1;
        // On the wire: as large as the largest protected packet, plus the FEC header.
        let newest = self.history.iter().rev().take(protected.max(1));
        let largest = newest.map(|e| e.packet.size).max().unwrap_or(0);
        self.fec_pending.push_back((id, header, parity));
        self.sender
            .queue_fec(now, largest + FecHeader::LEN as u32, id);
    }
}

impl Endpoint for VideoSendEndpoint {
    fn handle_datagram(&mut self, now: Time, datagram: &[u8], _size: u32) {
        if self.closed {
            return;
        }
        if crate::wire::rtp::is_rtcp(datagram) {
            self.on_rtcp(now, datagram);
        } else {
            self.malformed += 1; // a sender expects nothing but RTCP
        }
    }

    fn poll_transmit(&mut self, now: Time, buf: &mut Vec<u8>) -> Option<Transmit> {
        if self.closed || (!self.active && self.sender.pacer().queued_packets() == 0) {
            return None;
        }
        let out = self.sender.poll_transmit(now)?;
        let pkt = out.packet;
        buf.clear();
        self.write_packet(now, &pkt, out.ref_id, buf);
        Some(Transmit {
            size: pkt.size,
            kind: pkt.kind,
            seq: Some(pkt.seq),
            frame: pkt.frame,
            ecn: self.ecn,
        })
    }

    fn poll_timeout(&self) -> Option<Time> {
        if self.closed {
            return None;
        }
        let capture = self.next_capture.filter(|_| self.active);
        earliest(capture, self.sender.poll_timeout())
    }

    fn handle_timeout(&mut self, now: Time) {
        if self.closed {
            return;
        }
        self.sender.handle_timeout(now);
        while self.active && self.next_capture.is_some_and(|t| t <= now) {
            let at = self.next_capture.unwrap_or(now);
            self.capture(at);
            self.next_capture = Some(self.source.next_capture().1);
        }
    }

    fn poll_event(&mut self) -> Option<EndpointEvent> {
        self.events.pop_front()
    }

    fn set_active(&mut self, now: Time, active: bool) {
        if active && !self.active {
            // Resume on the frame clock: the next capture instant not in the past.
            while self.next_capture.is_some_and(|t| t < now) {
                self.next_capture = Some(self.source.next_capture().1);
            }
        }
        self.active = active;
    }

    fn close(&mut self, now: Time) {
        self.closed = true;
        self.sender.stop(now);
    }

    fn controller_timeout(&self) -> Option<Time> {
        self.sender.controller_timeout()
    }

    fn state(&self, out: &mut Vec<(&'static str, f64)>) {
        self.sender.state(out);
    }

    fn malformed(&self) -> u64 {
        self.malformed
    }

    fn discarded(&self) -> u64 {
        self.discarded
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ssrcs_of_different_flows_differ() {
        let a = Ssrcs::for_flow(0);
        let b = Ssrcs::for_flow(1);
        assert_ne!(a.media, b.media);
        assert_ne!(a.media, a.rtx);
        assert_ne!(a.rtx, a.fec);
    }
}
