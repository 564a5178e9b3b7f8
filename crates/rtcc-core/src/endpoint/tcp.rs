//! The TCP model's endpoints: the bulk sender ([`BulkSender`]) on the wire, and a receiver that
//! acknowledges with delayed ACKs.
//!
//! rtcc's TCP is a model (see [`crate::tcp`]), framed on the wire with rtcc's own formats: a
//! segment is an RTP header ([`PT_TCP`]) carrying the transport-wide sequence number, its size on
//! the wire is the segment's full size; an acknowledgement is a transport-wide feedback message
//! (what SACK carries: which segments arrived), its size on the wire the encoded size.
//!
//! The receiver acknowledges every second segment, at once when a segment arrives out of order
//! (a gap), and otherwise after at most [`DELAYED_ACK_TIMEOUT`] (RFC 5681 §4.2, RFC 1122
//! §4.2.3.2), or every segment with delayed ACKs off.

use super::{unwrap_near, Endpoint, Transmit, PT_TCP};
use crate::media::ArrivalRecorder;
use crate::packet::TransportFeedback;
use crate::tcp::BulkSender;
use crate::units::{Duration, Time};
use crate::wire::rtcp::{self, RtcpPacket, TransportCcFeedback};
use crate::wire::rtp::{is_rtcp, RtpHeader};
use crate::wire::SeqUnwrapper;

/// Linux's minimum delayed-ACK timeout (`TCP_DELACK_MIN`, 40 ms); RFC 1122 allows up to 500 ms.
pub const DELAYED_ACK_TIMEOUT: Duration = Duration(40_000_000);

/// A segment on the wire: an RTP header (`PT_TCP`) carrying its transport-wide sequence number;
/// `buf` is cleared first.
pub(super) fn write_segment_header(buf: &mut Vec<u8>, seq: u64, ssrc: u32) {
    buf.clear();
    RtpHeader {
        payload_type: PT_TCP,
        sequence: seq as u16,
        ssrc,
        transport_seq: Some(seq as u16),
        ..RtpHeader::default()
    }
    .encode(buf);
}

/// An acknowledgement (transport-wide feedback, 16-bit sequence numbers) given to a sender:
/// its base is unwrapped near the sender's newest sequence number.
pub(super) fn apply_feedback(sender: &mut BulkSender, now: Time, fb: TransportCcFeedback) {
    let next = sender.next_seq();
    let feedback = TransportFeedback {
        base_seq: unwrap_near(next.saturating_sub(1), fb.base_seq as u64, 16),
        receive_times: fb.receive_times,
    };
    sender.on_feedback(now, &feedback);
}

pub struct TcpSendEndpoint {
    sender: BulkSender,
    ssrc: u32,
    closed: bool,
    malformed: u64,
}

impl TcpSendEndpoint {
    pub fn new(sender: BulkSender, ssrc: u32) -> TcpSendEndpoint {
        TcpSendEndpoint {
            sender,
            ssrc,
            closed: false,
            malformed: 0,
        }
    }

    pub fn sender(&self) -> &BulkSender {
        &self.sender
    }
}

impl Endpoint for TcpSendEndpoint {
    fn handle_datagram(&mut self, now: Time, datagram: &[u8], _size: u32) {
        if self.closed {
            return;
        }
        let Ok(packets) = rtcp::parse_compound(datagram) else {
            self.malformed += 1;
            return;
        };
        for p in packets {
            if let RtcpPacket::TransportCc(fb) = p {
                apply_feedback(&mut self.sender, now, fb);
            }
        }
    }

    fn poll_transmit(&mut self, now: Time, buf: &mut Vec<u8>) -> Option<Transmit> {
        if self.closed {
            return None;
        }
        let pkt = self.sender.poll_transmit(now)?;
        write_segment_header(buf, pkt.seq, self.ssrc);
        Some(Transmit {
            size: pkt.size,
            kind: pkt.kind,
            seq: Some(pkt.seq),
            frame: None,
        })
    }

    fn poll_timeout(&self) -> Option<Time> {
        (!self.closed).then(|| self.sender.poll_timeout()).flatten()
    }

    fn handle_timeout(&mut self, now: Time) {
        if !self.closed {
            self.sender.handle_timeout(now);
        }
    }

    fn close(&mut self, _now: Time) {
        self.closed = true;
    }

    fn controller_timeout(&self) -> Option<Time> {
        // An RTO changes the controller too: log the state when it fires.
        self.sender.poll_timeout()
    }

    fn state(&self, out: &mut Vec<(&'static str, f64)>) {
        self.sender.state(out);
    }

    fn malformed(&self) -> u64 {
        self.malformed
    }
}

pub struct TcpRecvEndpoint {
    arrivals: ArrivalRecorder,
    seq: SeqUnwrapper,
    media_ssrc: u32,
    delayed_ack: bool,
    unacked: u32,
    delack_at: Option<Time>,
    feedback_count: u8,
    out: Option<Vec<u8>>,
    malformed: u64,
}

impl TcpRecvEndpoint {
    pub fn new(media_ssrc: u32, delayed_ack: bool) -> TcpRecvEndpoint {
        TcpRecvEndpoint {
            arrivals: ArrivalRecorder::new(),
            seq: SeqUnwrapper::new(),
            media_ssrc,
            delayed_ack,
            unacked: 0,
            delack_at: None,
            feedback_count: 0,
            out: None,
            malformed: 0,
        }
    }

    /// Acknowledge now what is not yet acknowledged (a delayed ACK rides on data the receiver
    /// sends: the request of a request/response protocol).
    pub fn flush_ack(&mut self) {
        if self.unacked > 0 {
            self.acknowledge();
        }
    }

    fn acknowledge(&mut self) {
        self.unacked = 0;
        self.delack_at = None;
        let Some(fb) = self.arrivals.build_feedback() else {
            return;
        };
        let mut bytes = self.out.take().unwrap_or_default();
        for m in TransportCcFeedback::build(
            1,
            self.media_ssrc,
            fb.base_seq as u16,
            self.feedback_count,
            &fb.receive_times,
            4096,
        ) {
            self.feedback_count = self.feedback_count.wrapping_add(1);
            let encoded = RtcpPacket::TransportCc(m).encode(&mut bytes);
            debug_assert!(encoded.is_ok(), "feedback built to fit: {encoded:?}");
        }
        self.out = Some(bytes);
    }
}

impl Endpoint for TcpRecvEndpoint {
    fn handle_datagram(&mut self, now: Time, datagram: &[u8], _size: u32) {
        if is_rtcp(datagram) {
            return;
        }
        let Some(ts) = RtpHeader::parse(datagram)
            .ok()
            .and_then(|(h, _)| h.transport_seq)
        else {
            self.malformed += 1;
            return;
        };
        let seq = self.seq.unwrap(ts);
        self.arrivals.on_packet(now, seq);
        self.unacked += 1;
        // RFC 5681 §4.2: ACK at least every second full-size segment, at once when out of order.
        if !self.delayed_ack || self.unacked >= 2 || self.arrivals.has_gap() {
            self.acknowledge();
        } else if self.delack_at.is_none() {
            self.delack_at = Some(now + DELAYED_ACK_TIMEOUT);
        }
    }

    fn poll_transmit(&mut self, _now: Time, buf: &mut Vec<u8>) -> Option<Transmit> {
        Some(Transmit::control(&self.out.take()?, buf))
    }

    fn poll_timeout(&self) -> Option<Time> {
        self.delack_at
    }

    fn handle_timeout(&mut self, now: Time) {
        if self.delack_at.is_some_and(|t| t <= now) {
            self.acknowledge();
        }
    }

    fn malformed(&self) -> u64 {
        self.malformed
    }
}
