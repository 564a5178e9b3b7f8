//! Constant-rate cross traffic: one datagram of `size` bytes every `interval`, no feedback, and
//! the sink that receives it.

use super::{Endpoint, Transmit, PT_CBR};
use crate::packet::{Ecn, PacketKind};
use crate::units::{Duration, Time};
use crate::wire::rtp::RtpHeader;

pub struct CbrSendEndpoint {
    interval: Duration,
    size: u32,
    ssrc: u32,
    next: Time,
    sent: u64,
    active: bool,
    closed: bool,
    ecn: Ecn,
}

impl CbrSendEndpoint {
    /// Packet `k` leaves at `start + k·interval`.
    pub fn new(start: Time, interval: Duration, size: u32, ssrc: u32) -> CbrSendEndpoint {
        CbrSendEndpoint {
            interval,
            size,
            ssrc,
            next: start,
            sent: 0,
            active: true,
            closed: false,
            ecn: Ecn::NotEct,
        }
    }

    /// Send every datagram ECT(0) (an ECN-capable flow; it does not react to marks: CBR has no
    /// feedback). Default Not-ECT.
    pub fn set_ecn(&mut self, mode: impl Into<crate::packet::EcnMode>) {
        self.ecn = mode.into().codepoint();
    }
}

impl Endpoint for CbrSendEndpoint {
    fn handle_datagram(&mut self, _now: Time, _datagram: &[u8], _size: u32) {}

    fn poll_transmit(&mut self, now: Time, buf: &mut Vec<u8>) -> Option<Transmit> {
        if self.closed || !self.active || now < self.next {
            return None;
        }
        // No drift beyond 1 ns per packet: the interval is already whole nanoseconds.
        self.next += self.interval;
        buf.clear();
        RtpHeader {
            payload_type: PT_CBR,
            sequence: self.sent as u16,
            ssrc: self.ssrc,
            ..RtpHeader::default()
        }
        .encode(buf);
        self.sent += 1;
        Some(Transmit {
            size: self.size,
            kind: PacketKind::Media,
            seq: None,
            frame: None,
            ecn: self.ecn,
        })
    }

    fn poll_timeout(&self) -> Option<Time> {
        (!self.closed && self.active).then_some(self.next)
    }

    fn handle_timeout(&mut self, _now: Time) {}

    fn set_active(&mut self, now: Time, active: bool) {
        if active && !self.active {
            // Resume on the original schedule: the next slot not in the past.
            while self.next < now {
                self.next += self.interval;
            }
        }
        self.active = active;
    }

    fn close(&mut self, _now: Time) {
        self.closed = true;
    }
}

/// Receives anything and answers nothing.
#[derive(Debug, Default)]
pub struct Sink;

impl Endpoint for Sink {
    fn handle_datagram(&mut self, _now: Time, _datagram: &[u8], _size: u32) {}
    fn poll_transmit(&mut self, _now: Time, _buf: &mut Vec<u8>) -> Option<Transmit> {
        None
    }
    fn poll_timeout(&self) -> Option<Time> {
        None
    }
    fn handle_timeout(&mut self, _now: Time) {}
}
