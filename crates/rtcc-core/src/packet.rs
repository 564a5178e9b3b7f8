//! What a sender knows about its packets and what the receiver tells it back.
//!
//! The information flow follows transport-wide congestion control feedback (the RTP header
//! extension that libwebrtc's send-side GCC uses):
//!
//! 1. The sender numbers every packet it puts on the wire with a transport-wide sequence number
//!    and remembers it as a [`SentPacket`] in a [`SendHistory`].
//! 2. The receiver records the arrival time of each sequence number on *its own* clock and
//!    periodically returns a [`TransportFeedback`]: for a contiguous range of sequence numbers,
//!    the receive time of each or "not received". A packet is reported lost when a later one was
//!    received before the report was built (no reordering is assumed inside one flow).
//! 3. The sender joins the feedback with its history into a [`FeedbackReport`] — each packet with
//!    its send time, size, frame and receive time — which is what every controller consumes.
//!
//! Frame-level controllers additionally get a [`FrameAck`] when the receiver has a frame whole,
//! and controllers that ask for them a [`RateReport`] every fixed interval: what the receiver got
//! in that window, in bytes and packets.
//! Receive times are on the receiver's clock: controllers must only use differences between
//! them (or against send times with an unknown offset), never absolute one-way delays.

use crate::units::{Rate, Time};
use std::collections::VecDeque;

/// Why a packet was sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum PacketKind {
    /// Encoded video.
    Media = 0,
    /// Filler bytes that carry no video (bandwidth probing, keeping a flow backlogged).
    Padding = 1,
    /// A retransmitted media packet.
    Retransmission = 2,
    /// Filler bytes of a bandwidth-probe cluster (media sent inside a cluster stays `Media`; see
    /// [`crate::cc::ProbeCluster`]).
    Probe = 3,
    /// A forward-error-correction (XOR parity) packet.
    Fec = 4,
    /// Feedback and control (RTCP, TCP acknowledgements).
    Control = 5,
}

impl TryFrom<u8> for PacketKind {
    type Error = String;
    /// The code a packet log stores (`PacketKind as u8`).
    fn try_from(code: u8) -> Result<PacketKind, String> {
        Ok(match code {
            0 => PacketKind::Media,
            1 => PacketKind::Padding,
            2 => PacketKind::Retransmission,
            3 => PacketKind::Probe,
            4 => PacketKind::Fec,
            5 => PacketKind::Control,
            other => return Err(format!("unknown packet kind {other}")),
        })
    }
}

/// The two ECN bits of the IP header (RFC 3168 §5): whether the transport is ECN-capable and
/// whether a router marked congestion on the way.
///
/// | bits | codepoint |
/// |---|---|
/// | 00 | Not-ECT: the transport does not do ECN; a congested AQM drops the packet |
/// | 01 | ECT(1): ECN-capable (RFC 3168 treats it as ECT(0); L4S gives it a meaning, RFC 9331) |
/// | 10 | ECT(0): ECN-capable, what RFC 3168 senders set |
/// | 11 | CE: congestion experienced, set by an AQM instead of dropping an ECT packet |
///
/// A router may only change ECT(0)/ECT(1) into CE (RFC 3168 §5: "Routers treat the ECT(0) and
/// ECT(1) codepoints as equivalent"), never the other way, and never touches Not-ECT packets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[repr(u8)]
pub enum Ecn {
    #[default]
    NotEct = 0b00,
    Ect1 = 0b01,
    Ect0 = 0b10,
    Ce = 0b11,
}

impl Ecn {
    /// What an RFC 3168 sender puts on its data: ECT(0) when the flow uses ECN, else Not-ECT.
    pub fn sent(ecn_capable: bool) -> Ecn {
        if ecn_capable {
            Ecn::Ect0
        } else {
            Ecn::NotEct
        }
    }
    /// The codepoint of the two low bits of `bits` (how the wire carries it, e.g. RFC 8888's
    /// per-packet ECN field).
    pub fn from_bits(bits: u8) -> Ecn {
        match bits & 0b11 {
            0b00 => Ecn::NotEct,
            0b01 => Ecn::Ect1,
            0b10 => Ecn::Ect0,
            _ => Ecn::Ce,
        }
    }
    /// The two bits.
    pub fn bits(self) -> u8 {
        self as u8
    }
    /// ECT(0), ECT(1) or CE: the transport declared itself ECN-capable.
    pub fn is_ecn_capable(self) -> bool {
        self != Ecn::NotEct
    }
    pub fn is_ce(self) -> bool {
        self == Ecn::Ce
    }
    /// What an AQM does instead of a drop (Linux `INET_ECN_set_ce()`): an ECT packet becomes CE
    /// and `true` is returned (a CE packet stays CE, also `true`: it was marked before);
    /// a Not-ECT packet cannot be marked (`false`: drop it).
    pub fn set_ce(&mut self) -> bool {
        if self.is_ecn_capable() {
            *self = Ecn::Ce;
            true
        } else {
            false
        }
    }
}

/// How a flow uses ECN: which codepoint its data carries and what its receiver reports back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum EcnMode {
    /// Not-ECT: congested queues drop the flow's packets.
    #[default]
    Off,
    /// RFC 3168 (and RFC 6679 for RTP): data is ECT(0); a TCP receiver echoes CE with
    /// ECN-Echo once per round trip, a video receiver reports each codepoint (RFC 8888).
    Classic,
    /// L4S (RFC 9330, RFC 9331): data is ECT(1), which an L4S queue (DualPI2) serves in its
    /// low-latency queue with an immediate, shallow mark; every receiver reports each packet's
    /// codepoint (Accurate ECN for TCP, RFC 8888 for RTP), and the sender reduces in proportion
    /// to the share marked.
    L4s,
}

impl EcnMode {
    /// The codepoint of the flow's data.
    pub fn codepoint(self) -> Ecn {
        match self {
            EcnMode::Off => Ecn::NotEct,
            EcnMode::Classic => Ecn::Ect0,
            EcnMode::L4s => Ecn::Ect1,
        }
    }
    pub fn is_on(self) -> bool {
        self != EcnMode::Off
    }
    /// As a scenario writes it: `false`, `true`, `"l4s"`.
    pub fn name(self) -> &'static str {
        match self {
            EcnMode::Off => "false",
            EcnMode::Classic => "true",
            EcnMode::L4s => "\"l4s\"",
        }
    }
}

impl From<bool> for EcnMode {
    /// `true`: RFC 3168 ECN, what `ecn = true` has always meant.
    fn from(on: bool) -> EcnMode {
        if on {
            EcnMode::Classic
        } else {
            EcnMode::Off
        }
    }
}

/// A packet as the sender put it on the wire.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SentPacket {
    /// Transport-wide sequence number, consecutive from 0 for each flow.
    pub seq: u64,
    /// Bytes on the wire.
    pub size: u32,
    /// Sender clock.
    pub send_time: Time,
    /// Frame this packet belongs to (media only).
    pub frame: Option<u64>,
    /// Position of this packet in its frame, from 0.
    pub index_in_frame: u16,
    /// Number of packets of its frame.
    pub packets_in_frame: u16,
    pub kind: PacketKind,
    /// Bytes in flight (sent, neither acknowledged nor declared lost) including this packet.
    pub in_flight: u64,
}

impl SentPacket {
    pub fn is_last_of_frame(&self) -> bool {
        self.frame.is_some() && self.index_in_frame + 1 == self.packets_in_frame
    }
}

/// Feedback as it travels on the wire: receive times for consecutive sequence numbers.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TransportFeedback {
    /// Sequence number of `receive_times[0]`.
    pub base_seq: u64,
    /// Receive time on the receiver's clock, `None` if the packet did not arrive.
    pub receive_times: Vec<Option<Time>>,
    /// The ECN codepoint each packet arrived with, parallel to `receive_times` (RFC 8888 carries
    /// it); empty when the feedback does not report ECN (transport-wide feedback alone), which
    /// controllers see as Not-ECT.
    pub ecn: Vec<Ecn>,
    /// A TCP acknowledgement's ECN-Echo flag (RFC 3168 §6.1.3): the receiver saw a CE mark and
    /// has not yet seen the sender's CWR.
    pub ecn_echo: bool,
}

/// One packet's outcome as the controller sees it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PacketResult {
    pub sent: SentPacket,
    /// Receiver clock; `None` if lost.
    pub receive_time: Option<Time>,
    /// The ECN codepoint the packet arrived with ([`Ecn::Ce`]: a router marked congestion
    /// instead of dropping it); Not-ECT when lost or when the feedback does not report ECN.
    pub ecn: Ecn,
}

impl PacketResult {
    /// Received with a congestion-experienced mark.
    pub fn is_ce(&self) -> bool {
        self.ecn.is_ce()
    }
}

/// What a controller gets when feedback arrives.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FeedbackReport {
    /// Sender clock at which the feedback arrived.
    pub feedback_time: Time,
    /// Reported packets in sequence order.
    pub packets: Vec<PacketResult>,
    /// Bytes still in flight after this report.
    pub in_flight: u64,
    /// A TCP sender's loss recovery as this report leaves it ([`crate::tcp::BulkSender`]);
    /// `None` from senders that keep none (the video sender). Window controllers reduce once per
    /// recovery and end their recovery episode with the sender's when it is given (`cc/reno.rs`,
    /// `Episodes`).
    pub recovery: Option<LossRecovery>,
}

/// A TCP sender's loss-recovery state after a feedback report (Linux `icsk_ca_state`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LossRecovery {
    /// Not in loss recovery (Linux Open, Disorder or CWR).
    Open,
    /// The report's losses started a fast recovery (Linux `tcp_enter_recovery`), possibly right
    /// after the previous recovery ended on the same report.
    Entered,
    /// In fast recovery, or in the recovery after a timeout, since an earlier report: until the
    /// cumulative ACK passes the recovery point.
    Ongoing,
}

impl FeedbackReport {
    pub fn received(&self) -> impl Iterator<Item = &PacketResult> {
        self.packets.iter().filter(|p| p.receive_time.is_some())
    }
    /// Packets that arrived CE-marked.
    pub fn ce_count(&self) -> usize {
        self.packets.iter().filter(|p| p.is_ce()).count()
    }
    pub fn lost_count(&self) -> usize {
        self.packets
            .iter()
            .filter(|p| p.receive_time.is_none())
            .count()
    }
    /// Round-trip time sampled on the newest received packet (send → feedback arrival).
    pub fn latest_rtt(&self) -> Option<crate::units::Duration> {
        self.received()
            .map(|p| p.sent.send_time)
            .max()
            .map(|t| self.feedback_time - t)
    }
}

/// The receiver's acknowledgement of a frame: when it was complete (or displayed, as the flow's
/// receiver is configured), or, with `lost`, a late acknowledgement of a frame it gave up on.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FrameAck {
    pub frame: u64,
    /// Receiver clock: arrival of the frame's first and last packets.
    pub first_receive_time: Time,
    pub last_receive_time: Time,
    /// Receiver clock at which the frame was complete (for a lost frame: when the receiver gave
    /// up on it, if nothing of it arrived).
    pub complete_time: Time,
    pub size: u32,
    /// The receiver gave up on the frame (it missed the presentation timeout or was never
    /// complete) and acknowledged it late, after a later frame ([`crate::endpoint::frame_acks`]).
    pub lost: bool,
}

/// The receiver's count of what it got in one window, sent every fixed interval when the
/// controller's policy asks ([`crate::cc::FeedbackPolicy::rate_reports`]). C³G's client measures
/// the received rate μ this way and reports it every Δt (c3g_rtvl.txt §V-A).
///
/// All times are on the receiver's clock (truncated to whole microseconds on the wire). The
/// windows of consecutive reports are contiguous: a report's `window_start` is the previous
/// report's `window_end` (the receiver's start for the first one).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RateReport {
    /// The end of the previous window (exclusive).
    pub window_start: Time,
    /// When the receiver built this report (inclusive).
    pub window_end: Time,
    /// Wire bytes of every RTP datagram received in `(window_start, window_end]`: media,
    /// retransmissions, FEC, padding and probes, each counted with the size the receiver got it
    /// with. A datagram arriving at the very instant of a report counts in the window the
    /// receiver handled it in (before or after building the report).
    pub bytes: u64,
    /// How many datagrams those bytes are.
    pub packets: u32,
    /// The transport-wide sequence number of the packet that arrived last in the window (of
    /// those that carry one) and its arrival time, for the sender to align its clock with the
    /// receiver's; `None` when no such packet arrived. The sender unwraps the 16-bit number on
    /// the wire against its own numbering.
    pub last: Option<(u64, Time)>,
}

impl RateReport {
    /// The received rate over the window, bytes × 8 / window length (μ); `None` for an empty
    /// window.
    pub fn rate(&self) -> Option<Rate> {
        let window = self.window_end.saturating_since(self.window_start);
        (window.0 > 0).then(|| Rate(self.bytes as f64 * 8.0 / window.as_secs_f64()))
    }
}

/// A frame as the encoder produced it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FrameInfo {
    pub frame: u64,
    pub capture_time: Time,
    pub size: u32,
    /// The encoder's target at this capture (also for a frame the controller paused or the
    /// sender skipped: the rate asked for stands).
    pub target: Rate,
    pub packets: u16,
    pub keyframe: bool,
}

/// The sender's record of packets in flight, which turns wire feedback into reports.
///
/// Feedback for a sequence number is used once; a report that repeats or precedes already
/// reported numbers is ignored for those numbers (feedback may be duplicated on a real path).
#[derive(Debug, Default, Clone)]
pub struct SendHistory {
    /// Packets from `first_seq` on that have not yet been reported.
    unreported: VecDeque<SentPacket>,
    first_seq: u64,
    next_seq: u64,
    in_flight: u64,
}

impl SendHistory {
    pub fn new() -> Self {
        Self::default()
    }
    /// The sequence number the next packet gets.
    pub fn next_seq(&self) -> u64 {
        self.next_seq
    }
    pub fn in_flight(&self) -> u64 {
        self.in_flight
    }
    /// Record a packet about to be sent; returns it with its sequence number and in-flight
    /// count filled in.
    pub fn on_sent(&mut self, mut pkt: SentPacket) -> SentPacket {
        pkt.seq = self.next_seq;
        self.next_seq += 1;
        self.in_flight += pkt.size as u64;
        pkt.in_flight = self.in_flight;
        self.unreported.push_back(pkt);
        pkt
    }
    /// Join feedback with the history. Packets of the range that were sent but precede the
    /// range are left in flight (a later report covers them).
    pub fn on_feedback(&mut self, now: Time, fb: &TransportFeedback, out: &mut FeedbackReport) {
        out.feedback_time = now;
        out.packets.clear();
        for (i, rt) in fb.receive_times.iter().enumerate() {
            let seq = fb.base_seq + i as u64;
            if seq < self.first_seq || seq >= self.next_seq {
                continue;
            }
            // Everything before `seq` that is still unreported stays in flight; pop up to it.
            while self.first_seq < seq {
                // Not covered by this report (skipped range): keep waiting would block the
                // queue forever, so such packets are declared lost. The receiver never skips
                // numbers it could still report, so this only happens after lost feedback.
                if let Some(p) = self.unreported.pop_front() {
                    self.in_flight -= p.size as u64;
                    out.packets.push(PacketResult {
                        sent: p,
                        receive_time: None,
                        ecn: Ecn::NotEct,
                    });
                }
                self.first_seq += 1;
            }
            if let Some(p) = self.unreported.pop_front() {
                self.in_flight -= p.size as u64;
                self.first_seq += 1;
                out.packets.push(PacketResult {
                    sent: p,
                    receive_time: *rt,
                    ecn: fb.ecn.get(i).copied().unwrap_or_default(),
                });
            }
        }
        out.in_flight = self.in_flight;
    }
    /// Forget everything in flight (a flow that stops or resets).
    pub fn clear_in_flight(&mut self) {
        self.first_seq = self.next_seq;
        self.unreported.clear();
        self.in_flight = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pkt(size: u32, t: u64) -> SentPacket {
        SentPacket {
            seq: 0,
            size,
            send_time: Time(t),
            frame: Some(0),
            index_in_frame: 0,
            packets_in_frame: 1,
            kind: PacketKind::Media,
            in_flight: 0,
        }
    }

    #[test]
    fn feedback_joins_history_and_releases_in_flight() {
        let mut h = SendHistory::new();
        for i in 0..4 {
            h.on_sent(pkt(1000, i));
        }
        assert_eq!(h.in_flight(), 4000);
        let fb = TransportFeedback {
            base_seq: 0,
            receive_times: vec![Some(Time(10)), None, Some(Time(12))],
            ..Default::default()
        };
        let mut r = FeedbackReport::default();
        h.on_feedback(Time(50), &fb, &mut r);
        assert_eq!(r.packets.len(), 3);
        assert_eq!(r.lost_count(), 1);
        assert_eq!(r.in_flight, 1000, "one packet is still unreported");
        // A duplicate report changes nothing.
        h.on_feedback(Time(60), &fb, &mut r);
        assert!(r.packets.is_empty());
        assert_eq!(h.in_flight(), 1000);
    }

    #[test]
    fn ecn_codepoints_reach_the_report() {
        let mut h = SendHistory::new();
        for i in 0..3 {
            h.on_sent(pkt(100, i));
        }
        let fb = TransportFeedback {
            base_seq: 0,
            receive_times: vec![Some(Time(10)), None, Some(Time(12))],
            ecn: vec![Ecn::Ect0, Ecn::NotEct, Ecn::Ce],
            ecn_echo: false,
        };
        let mut r = FeedbackReport::default();
        h.on_feedback(Time(50), &fb, &mut r);
        let got: Vec<Ecn> = r.packets.iter().map(|p| p.ecn).collect();
        assert_eq!(got, vec![Ecn::Ect0, Ecn::NotEct, Ecn::Ce]);
        assert_eq!(r.ce_count(), 1);
    }

    #[test]
    fn marking_follows_rfc_3168() {
        for bits in 0..4u8 {
            assert_eq!(Ecn::from_bits(bits).bits(), bits);
        }
        let mut e = Ecn::NotEct;
        assert!(!e.set_ce(), "Not-ECT cannot be marked");
        assert_eq!(e, Ecn::NotEct);
        for start in [Ecn::Ect0, Ecn::Ect1, Ecn::Ce] {
            let mut e = start;
            assert!(e.set_ce());
            assert_eq!(e, Ecn::Ce);
        }
    }

    #[test]
    fn a_gap_left_by_lost_feedback_is_declared_lost() {
        let mut h = SendHistory::new();
        for i in 0..4 {
            h.on_sent(pkt(100, i));
        }
        let fb = TransportFeedback {
            base_seq: 2,
            receive_times: vec![Some(Time(10)), Some(Time(11))],
            ..Default::default()
        };
        let mut r = FeedbackReport::default();
        h.on_feedback(Time(50), &fb, &mut r);
        assert_eq!(r.packets.len(), 4);
        assert_eq!(r.lost_count(), 2);
        assert_eq!(h.in_flight(), 0);
    }
}
