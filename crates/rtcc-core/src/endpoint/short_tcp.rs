//! The sending end of a short TCP flow (RFC 8867 §5.7): downloads of random sizes interleaved
//! with random idle periods ([`crate::short_tcp`] draws both), over the TCP model
//! ([`crate::tcp::BulkSender`]); the receiving end is the ordinary [`super::TcpRecvEndpoint`].
//!
//! How a download is carried:
//! - **A fresh connection per download.** RFC 8868's model speaks of connections started to
//!   fetch each burst of data, and a browser fetching a resource after ten idle seconds either
//!   opens a new connection or restarts slow start on an idle one (RFC 5681 §4.1). So each
//!   download gets a new controller from the flow's factory (slow start from the initial
//!   window) and a new RTO timer ([`BulkSender::new_transfer`]); the handshake is not modelled,
//!   as nowhere in the TCP model.
//! - **The file is data, the wire carries headers.** A file of `size` bytes is cut into
//!   segments of `mss − 52` data bytes ([`crate::tcp::TCP_IP_HEADER`]), each `mss` bytes on the
//!   wire (the last one too, as every segment of the finite application is).
//! - **Idle starts when the last byte is acknowledged.** The client is done when the last byte
//!   arrives, waits its idle period, and its next request reaches the server half an RTT after
//!   it leaves; the server learns of the last byte half an RTT after it arrives. Counting the
//!   idle period from the acknowledgement at the sender therefore puts the next download where
//!   the client's request would start it. A download's completion time is likewise measured at
//!   the sender, from its start to the acknowledgement of its last byte: the client's time from
//!   sending the request to receiving the last byte.
//!
//! Completed downloads are reported as [`EndpointEvent::Download`].

use super::dash::ControllerFactory;
use super::tcp::{receive_acks, transmit_segment};
use super::{Endpoint, EndpointEvent, Transmit};
use crate::short_tcp::ShortFlowGenerator;
use crate::tcp::{App, BulkSender, TCP_IP_HEADER};
use crate::units::Time;
use std::collections::VecDeque;

/// One completed download: when it started, when its last byte was acknowledged, its size in
/// data bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Download {
    pub start: Time,
    pub end: Time,
    pub bytes: u64,
}

pub struct ShortTcpSendEndpoint {
    sender: BulkSender,
    generator: ShortFlowGenerator,
    make: ControllerFactory,
    mss: u32,
    ssrc: u32,
    /// The download under way: its start and size in data bytes.
    current: Option<(Time, u64)>,
    /// While idle: when the next download starts.
    next_start: Option<Time>,
    events: VecDeque<EndpointEvent>,
    closed: bool,
    malformed: u64,
}

impl ShortTcpSendEndpoint {
    /// A flow starting at `start` with segments of `mss` bytes on the wire (more than the 52
    /// bytes of headers); `make` builds each download's controller.
    pub fn new(
        generator: ShortFlowGenerator,
        mut make: ControllerFactory,
        mss: u32,
        ssrc: u32,
        start: Time,
    ) -> ShortTcpSendEndpoint {
        debug_assert!(mss > TCP_IP_HEADER);
        let mut generator = generator;
        let first = if generator.config().starts_on {
            start
        } else {
            start + generator.next_idle()
        };
        // Nothing to send until the first download: a finite transfer of no bytes.
        let sender = BulkSender::new(make(start), mss, App::Finite { bytes: 0 }, start);
        ShortTcpSendEndpoint {
            sender,
            generator,
            make,
            mss,
            ssrc,
            current: None,
            next_start: Some(first),
            events: VecDeque::new(),
            closed: false,
            malformed: 0,
        }
    }

    pub fn sender(&self) -> &BulkSender {
        &self.sender
    }

    /// Send data ECT(0) and react to ECN-Echo (RFC 3168), every download. Default off.
    pub fn set_ecn(&mut self, mode: impl Into<crate::packet::EcnMode>) {
        self.sender.set_ecn(mode);
    }

    /// Wire bytes of a file of `bytes` data bytes: whole `mss` segments of `mss − 52` data.
    fn wire_bytes(&self, bytes: u64) -> u64 {
        let data = (self.mss - TCP_IP_HEADER) as u64;
        bytes.div_ceil(data) * self.mss as u64
    }

    fn start_download(&mut self, now: Time) {
        let size = self.generator.next_size();
        let controller = (self.make)(now);
        self.sender
            .new_transfer(now, self.wire_bytes(size), controller);
        self.current = Some((now, size));
        self.next_start = None;
    }

    /// After an acknowledgement: a download whose last byte is acknowledged is reported and an
    /// idle period starts.
    fn check_completion(&mut self) {
        if let (Some((start, bytes)), Some(end)) = (self.current, self.sender.completed_at()) {
            self.events
                .push_back(EndpointEvent::Download(Download { start, end, bytes }));
            self.current = None;
            self.next_start = Some(end + self.generator.next_idle());
        }
    }
}

impl Endpoint for ShortTcpSendEndpoint {
    fn handle_datagram(&mut self, now: Time, datagram: &[u8], _size: u32) {
        if self.closed {
            return;
        }
        if !receive_acks(&mut self.sender, now, datagram) {
            self.malformed += 1;
            return;
        }
        self.check_completion();
    }

    fn poll_transmit(&mut self, now: Time, buf: &mut Vec<u8>) -> Option<Transmit> {
        if self.closed || self.current.is_none() {
            return None;
        }
        transmit_segment(&mut self.sender, now, self.ssrc, buf)
    }

    fn poll_timeout(&self) -> Option<Time> {
        if self.closed {
            return None;
        }
        match self.current {
            Some(_) => self.sender.poll_timeout(),
            None => self.next_start,
        }
    }

    fn handle_timeout(&mut self, now: Time) {
        if self.closed {
            return;
        }
        if self.next_start.is_some_and(|t| t <= now) {
            self.start_download(now);
        } else if self.current.is_some() {
            self.sender.handle_timeout(now);
        }
    }

    fn poll_event(&mut self) -> Option<EndpointEvent> {
        self.events.pop_front()
    }

    fn close(&mut self, _now: Time) {
        self.closed = true;
    }

    fn controller_timeout(&self) -> Option<Time> {
        self.current.and_then(|_| self.sender.poll_timeout())
    }

    fn state(&self, out: &mut Vec<(&'static str, f64)>) {
        self.sender.state(out);
    }

    fn malformed(&self) -> u64 {
        self.malformed
    }
}
