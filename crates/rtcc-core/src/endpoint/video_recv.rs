//! The video receiver endpoint: parses RTP, records arrivals for transport-wide feedback,
//! repairs losses (NACK, FEC), assembles and releases frames in its jitter buffer, decodes, and
//! sends back only the RTCP its sender's controller asks for.
//!
//! RTCP it sends, each in the compound datagram of the moment it is due (one datagram per
//! arrival or timer at most, like the simulator's former combined messages):
//! - **transport-wide feedback** (draft-holmer-rmcat-transport-wide-cc-extensions-01) every
//!   `interval` of the controller's [`FeedbackPolicy`], and when a frame's last packet arrives
//!   if the policy asks for per-frame feedback;
//! - a **frame acknowledgement** when a frame is complete, only if the policy asks for them;
//! - **generic NACK** (RFC 4585 §6.2.1) with the [`NackRequester`]'s timing, when NACK is on;
//! - **PLI** (RFC 4585 §6.3.1) when a frame cannot be decoded ([`Playout`] paces the requests),
//!   or when the NACK list overflows;
//! - a **receiver report** (RFC 3550 §6.4.2) every second (libwebrtc's video RTCP interval).
//!
//! Recovered packets (RTX, FEC) complete frames but are not reported in transport-wide feedback
//! under their original number (the retransmission has its own transport-wide number; an FEC
//! recovery has none), as in libwebrtc.

use super::{rtp_time, unwrap_near, Endpoint, EndpointEvent, Recovery, Transmit};
use super::{PT_FEC, PT_MEDIA, PT_RTX};
use crate::cc::FeedbackPolicy;
use crate::media::jitter_buffer::{FrameEvent, FramePacket, JitterBuffer, JitterBufferConfig};
use crate::media::nack::NackRequester;
use crate::media::{ArrivalRecorder, Playout};
use crate::packet::Ecn;
use crate::units::{earliest, Duration, Time};
use crate::wire::fec::{self, FecHeader};
use crate::wire::rtcp::ccfb::MAX_REPORTS;
use crate::wire::rtcp::{
    ntp_middle32, ntp_time, CcfbBlock, CcfbMetric, CcfbReport, FrameAckMessage, Nack, Pli,
    ReceiverReport, ReportBlock, RtcpPacket, TransportCcFeedback,
};
use crate::wire::rtp::{is_rtcp, RtpHeader};
use crate::wire::SeqUnwrapper;
use std::collections::VecDeque;

/// Receiver reports go out this often (libwebrtc's default video RTCP interval).
pub const REPORT_INTERVAL: Duration = Duration(1_000_000_000);
/// Media packets kept for FEC recovery.
const FEC_WINDOW: usize = 96;
/// Largest number of statuses in one transport-wide feedback message.
const MAX_STATUSES_PER_MESSAGE: usize = 4096;
/// The receiver's own SSRC (it sends no media).
const RECEIVER_SSRC: u32 = 1;

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
        }
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
    pub fn set_ecn(&mut self, on: bool) {
        self.ecn = on;
    }

    fn on_rtp(&mut self, now: Time, datagram: &[u8], size: u32, ecn: Ecn) {
        let (h, len) = match RtpHeader::parse(datagram) {
            Ok(v) => v,
            Err(_) => {
                self.malformed += 1;
                return;
            }
        };
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
        if self.ecn && !fb.ecn.is_empty() {
            // RFC 8888 carries the ECN bits (transport-wide feedback has no room for them):
            // one block per at most 16384 numbers, first in the compound so that the sender has
            // the codepoints when the transport-wide feedback on the same packets arrives.
            // Arrival offsets are against the newest arrival reported (the report's time);
            // the sender takes its times from the transport-wide feedback.
            let report_time = fb.receive_times.iter().flatten().max().copied();
            let report_time = report_time.unwrap_or_default();
            for (k, times) in fb.receive_times.chunks(MAX_REPORTS).enumerate() {
                let from = k * MAX_REPORTS;
                let mut block = CcfbBlock::from_receive_times(
                    self.media_ssrc,
                    (fb.base_seq + from as u64) as u16,
                    times,
                    report_time,
                );
                for (m, ecn) in block.metrics.iter_mut().zip(&fb.ecn[from..]) {
                    if let Some(CcfbMetric { ecn: bits, .. }) = m {
                        *bits = ecn.bits();
                    }
                }
                self.pending.push(RtcpPacket::Ccfb(CcfbReport {
                    sender_ssrc: RECEIVER_SSRC,
                    blocks: vec![block],
                    report_timestamp: ntp_middle32(ntp_time(report_time)),
                }));
            }
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
            if let FrameEvent::Complete {
                frame,
                first_receive,
                last_receive,
                at,
                size,
                ..
            } = e
            {
                if self.policy.frame_acks {
                    self.pending.push(RtcpPacket::FrameAck(FrameAckMessage {
                        sender_ssrc: RECEIVER_SSRC,
                        media_ssrc: self.media_ssrc,
                        frame_id: frame as u16,
                        first_receive,
                        last_receive,
                        complete: at,
                        size,
                    }));
                }
            }
            if matches!(e, FrameEvent::Abandoned { .. }) {
                if let (Some(n), Some(seq)) = (&mut self.nack, self.jitter.oldest_wanted_seq()) {
                    n.clear_up_to(seq);
                }
            }
            self.events.push_back(EndpointEvent::Frame(e));
        }
        if let Some(n) = &mut self.nack {
            // Frames wait for repairs a few round trips (two or three NACK rounds).
            let wait = Duration(4 * n.rtt().0)
                .clamp(Duration::from_millis(100), Duration::from_millis(1000));
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
        let timers = earliest(
            self.next_feedback,
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
        self.jitter.handle_timeout(now);
        self.after_input(now);
    }

    fn poll_event(&mut self) -> Option<EndpointEvent> {
        self.events.pop_front()
    }

    fn malformed(&self) -> u64 {
        self.malformed
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
}
