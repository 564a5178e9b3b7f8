//! Sans-IO endpoints: the two ends of every flow, speaking real wire formats.
//!
//! Each endpoint is a state machine driven like quinn-proto's `Connection`:
//!
//! - [`Endpoint::handle_datagram`] when a datagram arrives (its bytes and its size on the wire),
//! - [`Endpoint::poll_transmit`] until it returns `None`, sending what it returns,
//! - [`Endpoint::poll_timeout`] to learn when to call [`Endpoint::handle_timeout`] next,
//! - [`Endpoint::poll_event`] for what happened (frames encoded, completed, shown), for logs.
//!
//! Every `now` is the endpoint's own clock. Nothing here reads a clock or a socket: the simulator
//! drives endpoints from its event queue (moving the datagrams through its links), a live
//! transport drives the same objects from UDP sockets and timers.
//!
//! | endpoint | sends | receives |
//! |---|---|---|
//! | [`VideoSendEndpoint`] | RTP media, RTX retransmissions, FEC, padding | RTCP: transport-wide feedback, frame acks, rate reports, NACK, PLI, receiver reports |
//! | [`VideoRecvEndpoint`] | RTCP (only the feedback its controller asks for, plus NACK/PLI/RR) | RTP |
//! | [`TcpSendEndpoint`] / [`TcpRecvEndpoint`] | segments / delayed ACKs | ACKs / segments |
//! | [`ShortTcpSendEndpoint`] / [`TcpRecvEndpoint`] | downloads interleaved with idle periods / delayed ACKs | ACKs / segments |
//! | [`CbrSendEndpoint`] / [`Sink`] | constant-rate datagrams / nothing | nothing / anything |
//! | [`DashServerEndpoint`] / [`DashClientEndpoint`] | video segments over TCP connections / segment requests and ACKs | requests and ACKs / segments |
//!
//! A media datagram's bytes end with its headers: the encoded video payload is not materialised
//! (its size is part of the datagram's size on the wire), so a simulation moves a few dozen bytes
//! per packet while links and queues see the real sizes.

pub mod cbr;
pub mod dash;
mod ecn_feedback;
pub mod frame_acks;
pub mod rate_reports;
pub mod short_tcp;
pub mod tcp;
pub mod video_recv;
pub mod video_send;

pub use cbr::{CbrSendEndpoint, Sink};
pub use dash::{DashClientEndpoint, DashServerEndpoint};
pub use frame_acks::{AckAt, FrameAckConfig};
pub use short_tcp::{Download, ShortTcpSendEndpoint};
pub use tcp::{TcpRecvEndpoint, TcpSendEndpoint};
pub use video_recv::VideoRecvEndpoint;
pub use video_send::VideoSendEndpoint;

use crate::dash::qoe::SegmentRecord;
use crate::media::jitter_buffer::FrameEvent;
use crate::packet::{Ecn, PacketKind};
use crate::units::{Duration, Rate, Time};
use crate::video::quality::Resolution;

/// RTP payload types rtcc's endpoints use (dynamic range, RFC 3551 §6).
pub const PT_MEDIA: u8 = 96;
/// Retransmissions (RFC 4588 RTX: the original sequence number first in the payload).
pub const PT_RTX: u8 = 97;
/// XOR parity packets ([`crate::wire::fec`]).
pub const PT_FEC: u8 = 98;
/// Padding and probe filler, on the RTX stream as libwebrtc sends it.
pub const PT_PADDING: u8 = 99;
/// Segments of the TCP-like bulk sender (rtcc's TCP model uses RTP framing on the wire).
pub const PT_TCP: u8 = 100;
/// Constant-rate datagrams.
pub const PT_CBR: u8 = 101;
/// DASH segment requests (an HTTP GET, modelled as one datagram).
pub const PT_DASH_REQUEST: u8 = 102;

/// A datagram to send: its bytes were written to the caller's buffer.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Transmit {
    /// Bytes on the wire (what links and queues carry).
    pub size: u32,
    /// What the datagram is (for logs; not on the wire).
    pub kind: PacketKind,
    /// Transport-wide sequence number, for packets that have one.
    pub seq: Option<u64>,
    /// The frame whose data it carries.
    pub frame: Option<u64>,
    /// The ECN codepoint of its IP header (RFC 3168 §5): ECT(0) for the data of a flow that
    /// uses ECN, Not-ECT otherwise (and for feedback, as RFC 3168 §6.1.4 wants for pure ACKs).
    /// A real sender sets it on the socket (`IP_TOS`).
    pub ecn: Ecn,
}

impl Transmit {
    /// An RTCP datagram (feedback, acknowledgements): `bytes` copied into `buf`, its size on the
    /// wire with IPv4 and UDP headers.
    pub fn control(bytes: &[u8], buf: &mut Vec<u8>) -> Transmit {
        buf.clear();
        buf.extend_from_slice(bytes);
        Transmit {
            size: bytes.len() as u32 + crate::wire::IP_UDP_OVERHEAD,
            kind: PacketKind::Control,
            seq: None,
            frame: None,
            ecn: Ecn::NotEct,
        }
    }
}

/// A frame as the encoder produced it (for logs).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EncodedFrameInfo {
    pub frame: u64,
    pub capture: Time,
    pub size: u32,
    pub target: Rate,
    pub packets: u16,
    pub keyframe: bool,
    pub psnr_db: Option<f64>,
    pub resolution: Option<Resolution>,
}

/// What an endpoint reports for logs and metrics.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum EndpointEvent {
    /// The sender encoded a frame.
    FrameEncoded(EncodedFrameInfo),
    /// The receiver completed, showed or gave up on a frame (times on the receiver's clock).
    Frame(FrameEvent),
    /// A DASH client appended a segment (times on the client's clock).
    Segment(SegmentRecord),
    /// A short TCP flow's sender had a download's last byte acknowledged (its own clock).
    Download(Download),
}

/// The sans-IO interface every endpoint has.
pub trait Endpoint: Send {
    /// A datagram arrived at `now`: `datagram` is its bytes, `size` its size on the wire.
    /// Malformed datagrams are counted and dropped, never a panic.
    fn handle_datagram(&mut self, now: Time, datagram: &[u8], size: u32);
    /// [`Endpoint::handle_datagram`] with the ECN codepoint its IP header arrived with (what a
    /// socket reports with `IP_RECVTOS`). Receivers of flows that use ECN override it to report
    /// CE marks; the default ignores the codepoint.
    fn handle_datagram_with_ecn(&mut self, now: Time, datagram: &[u8], size: u32, _ecn: Ecn) {
        self.handle_datagram(now, datagram, size);
    }
    /// The next datagram to send at `now`: written to `buf` (cleared first).
    fn poll_transmit(&mut self, now: Time, buf: &mut Vec<u8>) -> Option<Transmit>;
    /// When to call [`Endpoint::handle_timeout`] next.
    fn poll_timeout(&self) -> Option<Time>;
    fn handle_timeout(&mut self, now: Time);
    fn poll_event(&mut self) -> Option<EndpointEvent> {
        None
    }
    /// Pause (`false`) or resume sending; controller and encoder state are kept.
    fn set_active(&mut self, _now: Time, _active: bool) {}
    /// Stop for good: drop what is queued, send nothing more.
    fn close(&mut self, _now: Time) {}
    /// When the controller's own timers fire next (its state is worth logging then).
    fn controller_timeout(&self) -> Option<Time> {
        None
    }
    /// Controller and transport signals for logs, e.g. `("target_bps", 2e6)`.
    fn state(&self, _out: &mut Vec<(&'static str, f64)>) {}
    /// Datagrams that could not be parsed.
    fn malformed(&self) -> u64 {
        0
    }
    /// Datagrams and messages that parsed but were refused: another stream's SSRC, a sequence
    /// number or frame id implausibly far ahead, a keyframe request sooner than the sender
    /// serves them.
    fn discarded(&self) -> u64 {
        0
    }
}

/// Loss recovery and liveness of a video flow, each switchable (all on by default, as in every
/// real stack; FEC off by default, as in libwebrtc without a loss-protection request).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Recovery {
    /// NACK-based retransmission on an RTX stream.
    pub nack: bool,
    /// XOR FEC: one parity packet per this many media packets (`None`: off).
    pub fec_group: Option<u16>,
    /// The receiver asks for a keyframe (PLI) when a frame cannot be decoded.
    pub keyframe_requests: bool,
    /// Retransmission timeout for window-based controllers.
    pub rto: bool,
    /// Fixed playout delay of the receiver's jitter buffer.
    pub playout_delay: Duration,
    /// How long the receiver waits before its first NACK for a missing packet.
    pub nack_delay: Duration,
    /// The sender serves a keyframe request (PLI) at most this often (libwebrtc
    /// `EncoderRtcpFeedback`'s `kMinKeyframeSendIntervalMs`, 300 ms).
    pub keyframe_request_interval: Duration,
}

impl Default for Recovery {
    fn default() -> Self {
        Recovery {
            nack: true,
            fec_group: None,
            keyframe_requests: true,
            rto: true,
            playout_delay: Duration::ZERO,
            nack_delay: Duration::ZERO,
            keyframe_request_interval: video_send::MIN_KEYFRAME_REQUEST_INTERVAL,
        }
    }
}

/// The 64-bit value of a wrapped `bits`-bit counter `v` closest to `reference`.
pub(crate) fn unwrap_near(reference: u64, v: u64, bits: u32) -> u64 {
    let modulus = 1u64 << bits;
    let mask = modulus - 1;
    let base = reference & !mask;
    let candidate = base | (v & mask);
    let half = modulus / 2;
    if candidate > reference && candidate - reference > half && candidate >= modulus {
        candidate - modulus
    } else if candidate < reference && reference - candidate > half {
        candidate + modulus
    } else {
        candidate
    }
}

/// RTP media clock: 90 kHz for video (RFC 3551 §5).
pub(crate) fn rtp_timestamp(t: Time) -> u32 {
    // 90 000 / 10^9 = 9 / 10^5, split so that nothing overflows (and no 128-bit division on
    // the per-packet path).
    let ticks = t.0 / 100_000 * 9 + t.0 % 100_000 * 9 / 100_000;
    (ticks & 0xFFFF_FFFF) as u32
}

/// The instant of an unwrapped 90 kHz timestamp.
pub(crate) fn rtp_time(ticks: u64) -> Time {
    // 10^9 / 90 000 = 10^5 / 9.
    Time(ticks / 9 * 100_000 + ticks % 9 * 100_000 / 9)
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod unit_tests {
    use super::*;

    #[test]
    fn unwrap_near_picks_the_closest_value_across_wraps() {
        assert_eq!(unwrap_near(70_000, 4_464, 16), 70_000, "same value");
        assert_eq!(unwrap_near(65_535, 0, 16), 65_536, "just after the wrap");
        assert_eq!(unwrap_near(65_537, 65_535, 16), 65_535, "just before it");
        assert_eq!(unwrap_near(3, 65_535, 16), 65_535, "never below zero");
        assert_eq!(unwrap_near(1 << 33, 5, 32), (1 << 33) + 5);
    }

    #[test]
    fn rtp_timestamps_are_90_khz() {
        assert_eq!(rtp_timestamp(Time::from_millis(1000)), 90_000);
        assert_eq!(rtp_time(90_000), Time::from_millis(1000));
        for ns in [0, 11_111, 99_999, 100_000, 123_456_789_012, u64::MAX / 2] {
            let exact = (ns as u128 * 90_000 / 1_000_000_000) as u64;
            assert_eq!(rtp_timestamp(Time(ns)), exact as u32, "{ns} ns");
            let back = (exact as u128 * 1_000_000_000 / 90_000) as u64;
            assert_eq!(rtp_time(exact), Time(back), "{exact} ticks");
        }
    }
}
