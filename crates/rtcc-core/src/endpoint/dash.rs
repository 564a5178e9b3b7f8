//! A DASH session's two ends: an HTTP server sending segments over rtcc's TCP model
//! ([`crate::tcp`]), and a client running the player ([`crate::dash::player`]) that requests
//! them.
//!
//! - Connections. HTTP/2: one persistent connection carries every request, one at a time (the
//!   player never has two outstanding). HTTP/1.1: a pool of up to 6 persistent connections
//!   (Chrome's per-host limit); a request goes to the most recently used idle connection, as
//!   Chromium's socket pool picks it, and a new connection is opened only when none is idle.
//!   dash.js requests one segment at a time for a video-only stream, so only one connection is
//!   busy at a time and the others are never opened; what differs from HTTP/2 is that nginx
//!   closes a keep-alive connection after `keepalive_requests` requests (100 in the nginx of
//!   2020), so the 101st segment goes over a new connection with a new controller (a fresh
//!   slow start, or BBR's STARTUP), and larger request and response headers. Handshakes (TCP,
//!   TLS) are not modelled: a new connection costs no round trip.
//! - A request is one datagram on the reverse path (its size on the wire is an HTTP GET's,
//!   [`crate::dash::HttpVersion::request_size`]), sent on its connection right after that
//!   connection's pending delayed ACK (which a real request would carry). A request whose
//!   response has not started after `max(1 s, 3 × the last time to first byte)` is sent again
//!   (doubling); the server ignores duplicates.
//! - The server queues the response (response headers plus the segment's bytes) on the
//!   connection's sender, which keeps its congestion state between responses and may restart
//!   its window after idle (`slow_start_after_idle`, Linux's default). Its packets leave through
//!   a network interface of `line_rate` (1 Gbit/s by default, the seed's testbed): a window
//!   sent at once reaches the bottleneck spread at that rate. With `send_buffer` set, the
//!   server writes each response into a socket buffer of that size as room frees
//!   (`tcp/sndbuf.rs`); by default the whole response is in the socket at once.
//! - Segments are RTP-framed like rtcc's TCP segments (payload type [`PT_TCP`], the
//!   connection's SSRC, the transport-wide sequence number), followed by the piece of the
//!   stream they carry (response, offset, length); the client acknowledges each connection
//!   with its own [`TcpRecvEndpoint`] (delayed ACKs by default) and reassembles responses from
//!   the pieces. A response's first byte is its first piece to arrive; it is complete when every
//!   piece has.

use super::tcp::{apply_feedback, write_segment_header, TcpRecvEndpoint};
use super::{Endpoint, EndpointEvent, Transmit, PT_DASH_REQUEST, PT_TCP};
use crate::cc::Controller;
use crate::dash::player::Player;
use crate::dash::DashConfig;
use crate::packet::PacketKind;
use crate::tcp::{App, BulkSender, TCP_IP_HEADER};
use crate::units::{Duration, Time};
use crate::wire::rtcp::{self, RtcpPacket};
use crate::wire::rtp::{is_rtcp, RtpHeader};
use std::collections::VecDeque;

/// Builds a connection's controller when the connection opens (at `now`).
pub type ControllerFactory = Box<dyn FnMut(Time) -> Box<dyn Controller> + Send>;

/// Bytes after the RTP header of a request: id (u32), segment (u32), quality (u16), 0 (u16).
const REQUEST_PAYLOAD: usize = 12;
/// The first wait for a response before the request is sent again.
const REQUEST_TIMEOUT: Duration = Duration(1_000_000_000);

/// The SSRC of connection `k` of a flow whose media SSRC is `base`.
fn conn_ssrc(base: u32, k: usize) -> u32 {
    base.wrapping_add((k as u32) << 20)
}

fn conn_of(base: u32, ssrc: u32) -> usize {
    (ssrc.wrapping_sub(base) >> 20) as usize
}

fn be32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

struct ServerConn {
    sender: BulkSender,
    ssrc: u32,
    /// The highest request id queued (duplicates are ignored).
    last_request: Option<u32>,
}

/// The HTTP server: one TCP sender per connection.
pub struct DashServerEndpoint {
    cfg: DashConfig,
    make: ControllerFactory,
    conns: Vec<ServerConn>,
    ssrc_base: u32,
    /// The connection polled first (round robin), and the one that sent last (for state logs).
    next: usize,
    active: usize,
    /// The interface is busy until then (`line_rate`), and a packet waits for it.
    nic_free: Time,
    nic_wake: Option<Time>,
    closed: bool,
    malformed: u64,
}

impl DashServerEndpoint {
    pub fn new(cfg: DashConfig, make: ControllerFactory, ssrc_base: u32) -> DashServerEndpoint {
        DashServerEndpoint {
            cfg,
            make,
            conns: Vec::new(),
            ssrc_base,
            next: 0,
            active: 0,
            nic_free: Time::ZERO,
            nic_wake: None,
            closed: false,
            malformed: 0,
        }
    }

    /// The sender of connection `k`, if it opened.
    pub fn sender(&self, k: usize) -> Option<&BulkSender> {
        self.conns.get(k).map(|c| &c.sender)
    }

    pub fn connections(&self) -> usize {
        self.conns.len()
    }

    fn on_request(&mut self, now: Time, k: usize, payload: &[u8]) {
        let (Some(id), Some(segment), Some(q)) = (
            be32(payload, 0),
            be32(payload, 4),
            payload.get(8..10).map(|b| u16::from_be_bytes([b[0], b[1]])),
        ) else {
            self.malformed += 1;
            return;
        };
        let (segment, quality) = (segment as usize, q as usize);
        if segment >= self.cfg.segments || quality > self.cfg.top() {
            self.malformed += 1;
            return;
        }
        if k == self.conns.len() {
            let mut sender = BulkSender::new(
                (self.make)(now),
                self.cfg.packet_size,
                App::Responses {
                    header: TCP_IP_HEADER,
                },
                now,
            );
            sender.set_slow_start_after_idle(self.cfg.slow_start_after_idle);
            if let Some(cap) = self.cfg.send_buffer {
                // Checked when the scenario was read; a buffer refused here stays unmodelled.
                let _ = sender.set_send_buffer(cap);
            }
            self.conns.push(ServerConn {
                sender,
                ssrc: conn_ssrc(self.ssrc_base, k),
                last_request: None,
            });
        } else if k > self.conns.len() {
            self.malformed += 1;
            return;
        }
        let c = &mut self.conns[k];
        if c.last_request.is_some_and(|last| id <= last) {
            return; // a resent request already being served
        }
        c.last_request = Some(id);
        let bytes = self.cfg.segment_bytes(segment, quality) + self.cfg.http.response_header();
        c.sender.queue_response(id as u64, bytes);
    }
}

impl Endpoint for DashServerEndpoint {
    fn handle_datagram(&mut self, now: Time, datagram: &[u8], _size: u32) {
        if self.closed {
            return;
        }
        if is_rtcp(datagram) {
            let Ok(packets) = rtcp::parse_compound(datagram) else {
                self.malformed += 1;
                return;
            };
            for p in packets {
                if let RtcpPacket::TransportCc(fb) = p {
                    let Some(c) = self.conns.get_mut(conn_of(self.ssrc_base, fb.media_ssrc)) else {
                        self.malformed += 1;
                        continue;
                    };
                    apply_feedback(&mut c.sender, now, fb, false, &mut Default::default());
                }
            }
            return;
        }
        match RtpHeader::parse(datagram) {
            Ok((h, at)) if h.payload_type == PT_DASH_REQUEST => {
                let k = conn_of(self.ssrc_base, h.ssrc);
                self.on_request(now, k, &datagram[at..]);
            }
            _ => self.malformed += 1,
        }
    }

    fn poll_transmit(&mut self, now: Time, buf: &mut Vec<u8>) -> Option<Transmit> {
        self.nic_wake = None;
        if self.closed || self.conns.is_empty() {
            return None;
        }
        if self.cfg.line_rate.is_some() && now < self.nic_free {
            self.nic_wake = Some(self.nic_free);
            return None;
        }
        let n = self.conns.len();
        for j in 0..n {
            let k = (self.next + j) % n;
            let c = &mut self.conns[k];
            let Some((pkt, seg)) = c.sender.poll_transmit_segment(now) else {
                continue;
            };
            write_segment_header(buf, pkt.seq, c.ssrc, false);
            buf.extend_from_slice(&(seg.response as u32).to_be_bytes());
            buf.extend_from_slice(&(seg.offset as u32).to_be_bytes());
            buf.extend_from_slice(&seg.len.to_be_bytes());
            self.next = (k + 1) % n;
            self.active = k;
            if let Some(rate) = self.cfg.line_rate {
                self.nic_free = now + rate.transmit_time(pkt.size as u64);
            }
            return Some(Transmit {
                size: pkt.size,
                kind: pkt.kind,
                seq: None,
                frame: None,
                ecn: crate::packet::Ecn::NotEct,
            });
        }
        None
    }

    fn poll_timeout(&self) -> Option<Time> {
        if self.closed {
            return None;
        }
        self.conns
            .iter()
            .filter_map(|c| c.sender.poll_timeout())
            .chain(self.nic_wake)
            .min()
    }

    fn handle_timeout(&mut self, now: Time) {
        if self.closed {
            return;
        }
        for c in &mut self.conns {
            if c.sender.poll_timeout().is_some_and(|t| t <= now) {
                c.sender.handle_timeout(now);
            }
        }
    }

    fn close(&mut self, _now: Time) {
        self.closed = true;
    }

    fn controller_timeout(&self) -> Option<Time> {
        if self.closed {
            return None;
        }
        self.conns
            .iter()
            .filter_map(|c| c.sender.poll_timeout())
            .min()
    }

    fn state(&self, out: &mut Vec<(&'static str, f64)>) {
        if let Some(c) = self.conns.get(self.active) {
            c.sender.state(out);
            out.push(("connection", self.active as f64));
            out.push(("idle_restarts", c.sender.idle_restarts as f64));
        }
    }

    fn malformed(&self) -> u64 {
        self.malformed
    }
}

struct ClientConn {
    recv: TcpRecvEndpoint,
    ssrc: u32,
    /// Requests sent on it.
    served: u32,
    last_used: Time,
    busy: bool,
    open: bool,
}

struct Outstanding {
    id: u32,
    conn: usize,
    /// Response bytes (headers and media).
    bytes: u64,
    received: u64,
    /// Pieces received, by index (offset / payload).
    pieces: Vec<u64>,
    sent_at: Time,
    started: bool,
    resend_at: Time,
    timeout: Duration,
    datagram: Vec<u8>,
}

/// The browser: the dash.js-like player and its HTTP connections.
pub struct DashClientEndpoint {
    player: Player,
    conns: Vec<ClientConn>,
    ssrc_base: u32,
    payload: u64,
    outstanding: Option<Outstanding>,
    /// Requests waiting to be sent, with their connection's index.
    out: VecDeque<Vec<u8>>,
    next_id: u32,
    last_ttfb: Duration,
    events: VecDeque<EndpointEvent>,
    malformed: u64,
    /// Requests sent again after a timeout.
    pub resent_requests: u64,
}

impl DashClientEndpoint {
    /// A session whose first request leaves at `start` (the client's clock).
    pub fn new(cfg: DashConfig, start: Time, ssrc_base: u32) -> DashClientEndpoint {
        DashClientEndpoint {
            payload: cfg.packet_size.saturating_sub(TCP_IP_HEADER).max(1) as u64,
            player: Player::new(cfg, start),
            conns: Vec::new(),
            ssrc_base,
            outstanding: None,
            out: VecDeque::new(),
            next_id: 1,
            last_ttfb: Duration::ZERO,
            events: VecDeque::new(),
            malformed: 0,
            resent_requests: 0,
        }
    }

    pub fn player(&self) -> &Player {
        &self.player
    }

    /// Connections opened so far.
    pub fn connections(&self) -> usize {
        self.conns.len()
    }

    /// The connection for the next request (Chromium: the most recently used idle one).
    fn pick_connection(&mut self, now: Time) -> Option<usize> {
        let cfg = self.player.config();
        let (limit, per_conn, delayed_ack) = (
            cfg.http.max_connections(),
            cfg.http.keepalive_requests(),
            cfg.delayed_ack,
        );
        let idle = (0..self.conns.len())
            .filter(|&k| {
                let c = &self.conns[k];
                c.open && !c.busy && c.served < per_conn
            })
            .max_by_key(|&k| (self.conns[k].last_used, std::cmp::Reverse(k)));
        if idle.is_some() {
            return idle;
        }
        if self.conns.iter().filter(|c| c.open).count() >= limit {
            return None;
        }
        let k = self.conns.len();
        let ssrc = conn_ssrc(self.ssrc_base, k);
        self.conns.push(ClientConn {
            recv: TcpRecvEndpoint::new(ssrc, delayed_ack),
            ssrc,
            served: 0,
            last_used: now,
            busy: false,
            open: true,
        });
        Some(k)
    }

    /// Send what the player wants requested now.
    fn start_requests(&mut self, now: Time) {
        if self.outstanding.is_some() {
            return;
        }
        let Some(r) = self.player.poll_request(now) else {
            return;
        };
        let Some(k) = self.pick_connection(now) else {
            // Not reachable with one request at a time; keep the request for later.
            return;
        };
        let c = &mut self.conns[k];
        c.busy = true;
        c.served += 1;
        c.last_used = now;
        c.recv.flush_ack();
        let id = self.next_id;
        self.next_id += 1;
        let mut datagram = Vec::with_capacity(32);
        RtpHeader {
            payload_type: PT_DASH_REQUEST,
            sequence: id as u16,
            ssrc: c.ssrc,
            ..RtpHeader::default()
        }
        .encode(&mut datagram);
        datagram.extend_from_slice(&id.to_be_bytes());
        datagram.extend_from_slice(&(r.segment as u32).to_be_bytes());
        datagram.extend_from_slice(&(r.quality as u16).to_be_bytes());
        datagram.extend_from_slice(&[0, 0]);
        debug_assert_eq!(datagram.len() - 12, REQUEST_PAYLOAD);
        let bytes = r.bytes + self.player.config().http.response_header();
        let pieces = bytes.div_ceil(self.payload);
        let timeout = REQUEST_TIMEOUT.max(Duration(self.last_ttfb.0.saturating_mul(3)));
        self.out.push_back(datagram.clone());
        self.outstanding = Some(Outstanding {
            id,
            conn: k,
            bytes,
            received: 0,
            pieces: vec![0; pieces.div_ceil(64) as usize],
            sent_at: now,
            started: false,
            resend_at: now + timeout,
            timeout,
            datagram,
        });
    }

    fn on_segment(&mut self, now: Time, k: usize, trailer: &[u8]) {
        let (Some(id), Some(offset), Some(len)) =
            (be32(trailer, 0), be32(trailer, 4), be32(trailer, 8))
        else {
            self.malformed += 1;
            return;
        };
        let Some(o) = self
            .outstanding
            .as_mut()
            .filter(|o| o.id == id && o.conn == k)
        else {
            return; // a late duplicate
        };
        let piece = offset as u64 / self.payload;
        let (word, bit) = ((piece / 64) as usize, piece % 64);
        let Some(w) = o.pieces.get_mut(word) else {
            self.malformed += 1;
            return;
        };
        if *w & (1 << bit) != 0 {
            return;
        }
        *w |= 1 << bit;
        o.received += len as u64;
        if !o.started {
            o.started = true;
            self.last_ttfb = now - o.sent_at;
            self.player.on_first_byte(now);
        }
        if o.received < o.bytes {
            return;
        }
        let o = self.outstanding.take().expect("checked above");
        let per_conn = self.player.config().http.keepalive_requests();
        let c = &mut self.conns[o.conn];
        c.busy = false;
        c.last_used = now;
        if c.served >= per_conn {
            c.open = false; // the server closes it after this response
        }
        self.player.on_complete(now);
        while let Some(mut rec) = self.player.poll_event() {
            rec.connection = o.conn as u32;
            self.events.push_back(EndpointEvent::Segment(rec));
        }
    }
}

impl Endpoint for DashClientEndpoint {
    fn handle_datagram(&mut self, now: Time, datagram: &[u8], size: u32) {
        match RtpHeader::parse(datagram) {
            Ok((h, at)) if h.payload_type == PT_TCP && !is_rtcp(datagram) => {
                let k = conn_of(self.ssrc_base, h.ssrc);
                let Some(c) = self.conns.get_mut(k).filter(|c| c.ssrc == h.ssrc) else {
                    self.malformed += 1;
                    return;
                };
                c.recv.handle_datagram(now, datagram, size);
                self.on_segment(now, k, &datagram[at..]);
                self.start_requests(now);
            }
            _ => self.malformed += 1,
        }
    }

    fn poll_transmit(&mut self, now: Time, buf: &mut Vec<u8>) -> Option<Transmit> {
        for c in &mut self.conns {
            if let Some(t) = c.recv.poll_transmit(now, buf) {
                return Some(t);
            }
        }
        let req = self.out.pop_front()?;
        buf.clear();
        buf.extend_from_slice(&req);
        Some(Transmit {
            size: self.player.config().http.request_size(),
            kind: PacketKind::Control,
            seq: None,
            frame: None,
            ecn: crate::packet::Ecn::NotEct,
        })
    }

    fn poll_timeout(&self) -> Option<Time> {
        let resend = self
            .outstanding
            .as_ref()
            .filter(|o| !o.started)
            .map(|o| o.resend_at);
        self.conns
            .iter()
            .filter_map(|c| c.recv.poll_timeout())
            .chain(self.player.poll_timeout())
            .chain(resend)
            .min()
    }

    fn handle_timeout(&mut self, now: Time) {
        for c in &mut self.conns {
            if c.recv.poll_timeout().is_some_and(|t| t <= now) {
                c.recv.handle_timeout(now);
            }
        }
        self.player.handle_timeout(now);
        if let Some(o) = self
            .outstanding
            .as_mut()
            .filter(|o| !o.started && o.resend_at <= now)
        {
            o.timeout = Duration(o.timeout.0.saturating_mul(2));
            o.resend_at = now + o.timeout;
            self.out.push_back(o.datagram.clone());
            self.resent_requests += 1;
        }
        self.start_requests(now);
    }

    fn poll_event(&mut self) -> Option<EndpointEvent> {
        self.events.pop_front()
    }

    fn state(&self, out: &mut Vec<(&'static str, f64)>) {
        out.push(("buffer_s", self.player.buffer_s()));
        out.push(("quality", self.player.quality() as f64));
    }

    fn malformed(&self) -> u64 {
        self.malformed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::{parse_config, Params};
    use crate::dash::player::Phase;
    use crate::dash::AbrKind;

    fn cubic(now: Time) -> Box<dyn Controller> {
        Box::new(
            crate::cc::cubic::Cubic::new(parse_config("cubic", &Params::new()).unwrap(), now)
                .unwrap(),
        )
    }

    /// A lossless path of `mbps` with `one_way` delay each way: datagrams are queued FIFO at the
    /// rate in the forward direction.
    fn run(
        cfg: DashConfig,
        mbps: f64,
        one_way: Duration,
        until: Time,
    ) -> (
        DashServerEndpoint,
        DashClientEndpoint,
        Vec<crate::dash::qoe::SegmentRecord>,
    ) {
        let mut server = DashServerEndpoint::new(cfg.clone(), Box::new(cubic), 7);
        let mut client = DashClientEndpoint::new(cfg, Time::ZERO, 7);
        // (arrival, to_client, bytes, size)
        let mut wire: Vec<(Time, bool, Vec<u8>, u32)> = Vec::new();
        let mut link_free = Time::ZERO;
        let mut records = vec![];
        let mut now = Time::ZERO;
        let mut buf = Vec::new();
        let mut steps = 0u64;
        while now <= until {
            steps += 1;
            assert!(
                steps < 10_000_000,
                "stuck at {now:?}: client {:?} server {:?} wire {}",
                client.poll_timeout(),
                server.poll_timeout(),
                wire.len()
            );
            while let Some(t) = client.poll_transmit(now, &mut buf) {
                wire.push((now + one_way, false, buf.clone(), t.size));
            }
            while let Some(t) = server.poll_transmit(now, &mut buf) {
                let depart = link_free.max(now)
                    + crate::units::Rate(mbps * 1e6).transmit_time(t.size as u64);
                link_free = depart;
                wire.push((depart + one_way, true, buf.clone(), t.size));
            }
            while let Some(EndpointEvent::Segment(r)) = client.poll_event() {
                records.push(r);
            }
            let next_wire = wire.iter().map(|w| w.0).min();
            let Some(next) = [next_wire, client.poll_timeout(), server.poll_timeout()]
                .into_iter()
                .flatten()
                .min()
            else {
                break;
            };
            now = next.max(now);
            if let Some(i) = wire.iter().position(|w| w.0 == now) {
                let (_, to_client, bytes, size) = wire.remove(i);
                if to_client {
                    client.handle_datagram(now, &bytes, size);
                } else {
                    server.handle_datagram(now, &bytes, size);
                }
            } else {
                if client.poll_timeout().is_some_and(|t| t <= now) {
                    client.handle_timeout(now);
                }
                if server.poll_timeout().is_some_and(|t| t <= now) {
                    server.handle_timeout(now);
                }
            }
            if client.player().phase() == Phase::Ended {
                break;
            }
        }
        (server, client, records)
    }

    #[test]
    fn a_session_over_a_clean_fast_path_plays_through_and_uses_one_h2_connection() {
        let cfg = DashConfig {
            segments: 12,
            abr: AbrKind::Throughput,
            ..DashConfig::default()
        };
        let (server, client, records) = run(
            cfg,
            100.0,
            Duration::from_millis(20),
            Time::from_secs_f64(200.0),
        );
        assert_eq!(records.len(), 12);
        assert_eq!(client.player().phase(), Phase::Ended);
        assert_eq!(client.player().stalls(), 0);
        assert_eq!((server.connections(), client.connections()), (1, 1));
        assert_eq!(
            records[0].quality, 0,
            "the first segment at the initial rung"
        );
        assert!(
            records.iter().skip(3).all(|r| r.quality == 10),
            "100 Mbit/s carries the top rung: {:?}",
            records.iter().map(|r| r.quality).collect::<Vec<_>>()
        );
        assert_eq!(client.malformed() + server.malformed(), 0);
        assert_eq!(client.resent_requests, 0);
    }

    #[test]
    fn h1_opens_a_new_connection_after_keepalive_requests() {
        let cfg = DashConfig {
            segments: 103,
            http: crate::dash::HttpVersion::H1,
            segment_duration: Duration::from_millis(1000),
            ladder_bps: vec![100e3, 200e3],
            ..DashConfig::default()
        };
        let (server, client, records) = run(
            cfg,
            50.0,
            Duration::from_millis(5),
            Time::from_secs_f64(300.0),
        );
        assert_eq!(records.len(), 103);
        assert_eq!(
            (server.connections(), client.connections()),
            (2, 2),
            "nginx closes the connection after 100 requests"
        );
        assert!(records[..100].iter().all(|r| r.connection == 0));
        assert!(records[100..].iter().all(|r| r.connection == 1));
    }
}
