//! The TCP model's endpoints: the bulk sender ([`BulkSender`]) on the wire, and a receiver that
//! acknowledges with delayed ACKs.
//!
//! rtcc's TCP is a model (see [`crate::tcp`]), framed on the wire with rtcc's own formats: a
//! segment is an RTP header ([`PT_TCP`]) carrying the transport-wide sequence number, its size on
//! the wire is the segment's full size; an acknowledgement is a transport-wide feedback message
//! (what SACK carries: which segments arrived), its size on the wire the encoded size.
//!
//! The receiver acknowledges every second segment, at once when a segment arrives out of order
//! (a gap) or fills one, and otherwise after at most [`DELAYED_ACK_TIMEOUT`] (RFC 5681 §4.2,
//! RFC 1122 §4.2.3.2), or every segment with delayed ACKs off. A report lists the segments from
//! the last one reported on, a missing one as not (yet) received; a segment that arrives after
//! its number was reported missing (reordered) is reported in a message of its own in the next
//! acknowledgement, as SACK would report it, so the sender's RACK can tell reordering from loss.
//!
//! ECN (RFC 3168 §6.1, both ends set with `set_ecn`): the sender's data segments carry ECT(0) in
//! the IP header ([`Transmit::ecn`]) and the CWR flag in the RTP header's marker bit (unused by
//! `PT_TCP` otherwise). The receiver keeps TCP's ECN-Echo state: a CE-marked segment sets it, a
//! segment with CWR clears it (CWR is looked at first, as Linux's `tcp_ecn_accept_cwr()` runs
//! before `tcp_ecn_check_ce()`, so a CWR segment that is itself CE keeps it set), and while it is
//! set every acknowledgement carries an [`EcnEchoMessage`] after its feedback. A CE mark that
//! starts echoing is acknowledged at once (Linux enters quick-ACK mode in `__tcp_ecn_check_ce()`).
//!
//! L4S (`set_ecn(EcnMode::L4s)` at both ends): data segments carry ECT(1) and every
//! acknowledgement reports each segment's codepoint, as Accurate ECN (RFC 9768) lets a receiver
//! do, carried in an RFC 8888 report ahead of the transport-wide feedback in the same compound
//! ([`super::ecn_feedback`]); there is no ECN-Echo state. A CE segment that follows a segment
//! that was not CE is acknowledged at once (RFC 9768 §3.2.2.5.1's change-triggered ACK), so
//! delayed ACKs stay on while every segment is marked.

use super::ecn_feedback::{push_ecn_reports, EcnReport};
use super::{unwrap_near, Endpoint, Transmit, PT_TCP};
use crate::media::ArrivalRecorder;
use crate::packet::{Ecn, EcnMode, TransportFeedback};
use crate::tcp::BulkSender;
use crate::units::{Duration, Time};
use crate::wire::rtcp::{self, EcnEchoMessage, RtcpPacket, TransportCcFeedback};
use crate::wire::rtp::{is_rtcp, RtpHeader};
use crate::wire::SeqUnwrapper;

/// Linux's minimum delayed-ACK timeout (`TCP_DELACK_MIN`, 40 ms); RFC 1122 allows up to 500 ms.
pub const DELAYED_ACK_TIMEOUT: Duration = Duration(40_000_000);

/// A segment on the wire: an RTP header (`PT_TCP`) carrying its transport-wide sequence number;
/// `buf` is cleared first.
/// `cwr` sets the marker bit, the model's CWR flag.
pub(super) fn write_segment_header(buf: &mut Vec<u8>, seq: u64, ssrc: u32, cwr: bool) {
    buf.clear();
    RtpHeader {
        marker: cwr,
        payload_type: PT_TCP,
        sequence: seq as u16,
        ssrc,
        transport_seq: Some(seq as u16),
        ..RtpHeader::default()
    }
    .encode(buf);
}

/// The sender's next segment, if it has one to send now, written into `buf` as it goes on the
/// wire (its header, its CWR flag and its ECN codepoint).
pub(super) fn transmit_segment(
    sender: &mut BulkSender,
    now: Time,
    ssrc: u32,
    buf: &mut Vec<u8>,
) -> Option<Transmit> {
    let pkt = sender.poll_transmit(now)?;
    write_segment_header(buf, pkt.seq, ssrc, sender.last_segment_cwr());
    Some(Transmit {
        size: pkt.size,
        kind: pkt.kind,
        seq: Some(pkt.seq),
        frame: None,
        ecn: sender.ecn_codepoint(&pkt),
    })
}

/// A datagram from the receiver given to the sender: its acknowledgements, with the ECN-Echo
/// and the per-packet codepoints (an L4S receiver's RFC 8888 report) the same compound packet
/// carries. `false` if it is not RTCP the sender can read.
pub(super) fn receive_acks(sender: &mut BulkSender, now: Time, datagram: &[u8]) -> bool {
    let Ok(packets) = rtcp::parse_compound(datagram) else {
        return false;
    };
    let ecn_echo = packets.iter().any(|p| matches!(p, RtcpPacket::EcnEcho(_)));
    let mut codepoints = EcnReport::default();
    for p in packets {
        match p {
            RtcpPacket::TransportCc(fb) => {
                apply_feedback(sender, now, fb, ecn_echo, &mut codepoints);
            }
            RtcpPacket::Ccfb(report) if sender.ecn_mode() == EcnMode::L4s => {
                codepoints.on_report(&report, sender.next_seq().saturating_sub(1));
            }
            _ => {}
        }
    }
    true
}

/// An acknowledgement (transport-wide feedback, 16-bit sequence numbers) given to a sender:
/// its base is unwrapped near the sender's newest sequence number. `ecn_echo`: the
/// acknowledgement carried ECN-Echo; `codepoints`: the RFC 8888 report that came before it.
pub(super) fn apply_feedback(
    sender: &mut BulkSender,
    now: Time,
    fb: TransportCcFeedback,
    ecn_echo: bool,
    codepoints: &mut EcnReport,
) {
    let next = sender.next_seq();
    let base_seq = unwrap_near(next.saturating_sub(1), fb.base_seq as u64, 16);
    let feedback = TransportFeedback {
        base_seq,
        ecn: codepoints.take(base_seq, fb.receive_times.len()),
        receive_times: fb.receive_times,
        ecn_echo,
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
        if !self.closed && !receive_acks(&mut self.sender, now, datagram) {
            self.malformed += 1;
        }
    }

    fn poll_transmit(&mut self, now: Time, buf: &mut Vec<u8>) -> Option<Transmit> {
        if self.closed {
            return None;
        }
        transmit_segment(&mut self.sender, now, self.ssrc, buf)
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
    /// RFC 3168: echo CE marks (the connection negotiated ECN); L4S: report every codepoint.
    ecn: EcnMode,
    /// ECN-Echo is set on every acknowledgement until a segment with CWR arrives.
    ecn_echo: bool,
    /// Segments that arrived CE-marked.
    ce_received: u64,
    /// The last data segment arrived CE-marked (L4S change-triggered ACKs).
    last_ce: bool,
    /// Segments that arrived after a report named them missing: number, time, codepoint.
    late: Vec<(u64, Time, Ecn)>,
}

impl TcpRecvEndpoint {
    pub fn new(media_ssrc: u32, delayed_ack: bool) -> TcpRecvEndpoint {
        TcpRecvEndpoint {
            ecn: EcnMode::Off,
            ecn_echo: false,
            ce_received: 0,
            last_ce: false,
            late: Vec::new(),
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

    /// Echo CE marks to the sender (`true`, RFC 3168 §6.1.3) or report every segment's
    /// codepoint ([`EcnMode::L4s`]). Default off.
    pub fn set_ecn(&mut self, mode: impl Into<EcnMode>) {
        self.ecn = mode.into();
    }

    /// Segments that arrived CE-marked.
    pub fn ce_received(&self) -> u64 {
        self.ce_received
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
        let l4s = self.ecn == EcnMode::L4s;
        let late = self.late.drain(..).map(|(seq, t, ecn)| TransportFeedback {
            base_seq: seq,
            receive_times: vec![Some(t)],
            ecn: if l4s { vec![ecn] } else { Vec::new() },
            ecn_echo: false,
        });
        let reports: Vec<TransportFeedback> = self
            .arrivals
            .build_feedback()
            .into_iter()
            .chain(late)
            .collect();
        if reports.is_empty() {
            return;
        }
        let mut bytes = self.out.take().unwrap_or_default();
        for fb in &reports {
            if l4s {
                let mut ccfb = Vec::new();
                push_ecn_reports(&mut ccfb, 1, self.media_ssrc, fb);
                for r in ccfb {
                    let encoded = r.encode(&mut bytes);
                    debug_assert!(
                        encoded.is_ok(),
                        "an RFC 8888 block of at most 16384 packets fits"
                    );
                }
            }
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
        }
        if self.ecn_echo {
            let echo = EcnEchoMessage { sender_ssrc: 1 };
            let encoded = echo.encode(&mut bytes);
            debug_assert!(encoded.is_ok());
        }
        self.out = Some(bytes);
    }
}

impl Endpoint for TcpRecvEndpoint {
    fn handle_datagram(&mut self, now: Time, datagram: &[u8], size: u32) {
        self.handle_datagram_with_ecn(now, datagram, size, Ecn::NotEct);
    }

    fn handle_datagram_with_ecn(&mut self, now: Time, datagram: &[u8], _size: u32, ecn: Ecn) {
        if is_rtcp(datagram) {
            return;
        }
        let Some((ts, cwr)) = RtpHeader::parse(datagram)
            .ok()
            .and_then(|(h, _)| Some((h.transport_seq?, h.marker)))
        else {
            self.malformed += 1;
            return;
        };
        let seq = self.seq.unwrap(ts);
        self.unacked += 1;
        let mut quick_ack = false;
        if ecn.is_ce() {
            self.ce_received += 1;
        }
        if self.arrivals.reports_from().is_some_and(|from| seq < from) {
            // Reported missing before: reported on its own, at once (RFC 5681 §4.2, a segment
            // that fills a gap).
            self.late.push((seq, now, ecn));
            quick_ack = true;
        } else if self.ecn == EcnMode::L4s {
            self.arrivals.on_packet_with_ecn(now, seq, ecn);
        } else {
            self.arrivals.on_packet(now, seq);
        }
        if self.ecn == EcnMode::L4s {
            quick_ack |= ecn.is_ce() && !self.last_ce;
            self.last_ce = ecn.is_ce();
        }
        if self.ecn == EcnMode::Classic {
            // RFC 3168 §6.1.3: CWR ends the echo, a CE mark (re)starts it.
            if cwr {
                self.ecn_echo = false;
            }
            if ecn.is_ce() {
                quick_ack = !self.ecn_echo;
                self.ecn_echo = true;
            }
        }
        // RFC 5681 §4.2: ACK at least every second full-size segment, at once when out of order.
        if quick_ack || !self.delayed_ack || self.unacked >= 2 || self.arrivals.has_gap() {
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
