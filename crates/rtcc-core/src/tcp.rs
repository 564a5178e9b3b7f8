//! A TCP-like bulk sender, sans-IO: the data path around a window-based [`Controller`] (Reno,
//! Cubic, BBR), used for cross traffic.
//!
//! What is modelled, and what is not:
//! - Full-size segments (`mss` bytes on the wire), numbered like every other rtcc packet. The
//!   receiver acknowledges with transport feedback (per-packet receive times), which carries what
//!   SACK carries: which segments arrived. Inside one flow there is no reordering, so a segment is
//!   lost as soon as a later one has been acknowledged (the effect of SACK with a reordering
//!   threshold of one; RFC 6675 waits for three, which only changes detection by two packets).
//! - Lost segments are retransmitted before new data (as SACK recovery does); a retransmission
//!   replaces the lost segment, so goodput equals throughput.
//! - The retransmission timer follows RFC 6298: SRTT/RTTVAR from every new RTT sample,
//!   RTO = SRTT + max(G, 4·RTTVAR) with Linux's 200 ms minimum (`TCP_RTO_MIN`) and 120 s maximum
//!   (`TCP_RTO_MAX`), 1 s before the first sample, doubled on each expiry (exponential backoff),
//!   restarted when new data is acknowledged. On expiry everything in flight is declared lost,
//!   queued for retransmission and the controller is told ([`Controller::on_rto`]).
//! - The controller's `cwnd` limits bytes in flight; its `pacing_rate`, if any, spaces segments
//!   (a leaky bucket without burst credit, like the video pacer).
//! - Applications: backlogged (always data), on/off (backlogged during "on"), a finite
//!   transfer (a short flow) that completes when all its bytes are acknowledged, or responses
//!   (a persistent connection of a request/response protocol such as HTTP): data exists only
//!   once a response has been queued ([`BulkSender::queue_response`]), the connection is idle in
//!   between and keeps its congestion state from one response to the next.
//! - Every packet carries a piece of the byte stream ([`DataSegment`]): a retransmission carries
//!   the lost packet's piece again, so a receiver can reassemble the stream. For the responses
//!   application a segment carries at most `mss − header` bytes of one response (the last one of
//!   a response is shorter: a response never shares a segment with the next one, as when the
//!   server has nothing more queued when it sends the tail); the other applications send
//!   full-size `mss` packets.
//! - Slow start after idle (Linux `net.ipv4.tcp_slow_start_after_idle`, off unless
//!   [`BulkSender::set_slow_start_after_idle`]): when new data is about to be sent with nothing
//!   outstanding and more than one RTO since the last data packet left, the controller is told
//!   ([`Controller::on_idle_restart`]); Reno and Cubic restart their window from
//!   `min(cwnd, initial window)` (RFC 5681 §4.1, Linux `tcp_cwnd_restart`). Linux checks when the
//!   application writes (`tcp_slow_start_after_idle_check`); here it is checked when the data is
//!   first polled, which is the same instant (the sender polls as soon as data is queued).
//! - ECN (RFC 3168 §6.1), off unless [`BulkSender::set_ecn`] (a flow's `ecn = true`; the
//!   handshake's negotiation is assumed to succeed): new data segments are sent ECT(0),
//!   retransmissions Not-ECT (§6.1.5). An acknowledgement with ECN-Echo (the receiver saw a CE
//!   mark and has not yet seen CWR, §6.1.3) makes the sender react **at most once per window
//!   of data** (§6.1.2; Linux `tcp_enter_cwr()`, whose CWR state lasts until a packet sent after
//!   it is acknowledged): the controller is told ([`Controller::on_ecn_echo`]; Reno and Cubic
//!   reduce as for a fast retransmit, BBR ignores it as Linux's does), nothing is retransmitted,
//!   and the next new data segment carries CWR so that the receiver stops echoing.
//! - L4S (a flow's `ecn = "l4s"`, RFC 9331 §4): every data segment, retransmissions included, is
//!   sent ECT(1) (Accurate ECN, RFC 9768 §3.2.7.1, lets a sender set ECT on retransmissions,
//!   and a Not-ECT retransmission would leave the L4S queue for the classic one); the receiver
//!   reports each segment's codepoint (Accurate ECN's per-packet information, carried here as
//!   an RFC 8888 report), and the controller reads the CE marks from
//!   [`PacketResult::ecn`](crate::packet::PacketResult) in its reports. There is no ECN-Echo,
//!   CWR or once-per-window reaction in the sender: a scalable controller (Prague) decides how
//!   to respond.
//! - Not modelled: the receive window (never limiting), handshakes, header options.

use crate::cc::Controller;
use crate::packet::{
    Ecn, EcnMode, FeedbackReport, PacketKind, SendHistory, SentPacket, TransportFeedback,
};
use crate::units::{Duration, Time};

use crate::rto::RtoTimer;
pub use crate::rto::{RTO_INITIAL, RTO_MAX, RTO_MIN};
use std::collections::VecDeque;

/// Bytes of IPv4 (20), TCP (20) and the timestamp option (12) in every segment: a 1500-byte
/// packet carries Linux's usual MSS of 1448 bytes.
pub const TCP_IP_HEADER: u32 = 52;

/// What the application gives the sender.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum App {
    /// Always has data.
    Backlogged,
    /// Has data during `on`, none during `off`, repeating from the flow's start.
    OnOff { on: Duration, off: Duration },
    /// Sends `bytes` and is done when all are acknowledged.
    Finite { bytes: u64 },
    /// A persistent request/response connection: sends the responses queued with
    /// [`BulkSender::queue_response`], each cut into segments of at most `mss − header` bytes
    /// of payload (`header` bytes of headers on the wire each), and is idle in between.
    Responses { header: u32 },
}

/// The piece of the byte stream a packet carries: `len` bytes at `offset` of response
/// `response` (for applications without responses, `response` is 0 and `offset` counts bytes of
/// the whole stream).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DataSegment {
    pub response: u64,
    pub offset: u64,
    pub len: u32,
}

/// A response waiting to be sent (the responses application).
#[derive(Debug, Clone, Copy)]
struct Response {
    id: u64,
    size: u64,
    sent: u64,
}

pub struct BulkSender {
    controller: Box<dyn Controller>,
    history: SendHistory,
    report: FeedbackReport,
    mss: u32,
    app: App,
    start: Time,
    /// New data not yet sent (finite transfers).
    unsent: u64,
    /// Data bytes acknowledged (finite transfers complete when this reaches the size).
    acked: u64,
    completed_at: Option<Time>,
    /// Lost segments waiting to be retransmitted (their piece of the stream and wire size).
    retransmit: VecDeque<(DataSegment, u32)>,
    /// The piece of the stream and the wire size of each unreported packet, in sequence order
    /// from the oldest (the packets [`SendHistory`] holds).
    outstanding: VecDeque<(u64, DataSegment, u32)>,
    /// Bytes of the stream sent so far (applications without responses).
    stream_offset: u64,
    /// The first packet of the current transfer ([`BulkSender::new_transfer`]): reports of older
    /// packets belong to a connection that is gone, so they neither count towards this
    /// transfer's acknowledged bytes nor queue a retransmission.
    transfer_first_seq: u64,
    /// Responses queued and not yet wholly sent (the responses application).
    responses: VecDeque<Response>,
    /// When the last data packet (new or retransmitted) left.
    last_data_send: Option<Time>,
    slow_start_after_idle: bool,
    next_release: Time,
    pacing_wake: Option<Time>,
    /// End of the current off period of an on/off source, while the sender waits for it.
    app_wake: Option<Time>,
    rto: RtoTimer,
    /// RTO expiries, retransmitted segments.
    pub timeouts: u64,
    pub retransmissions: u64,
    /// Times the window was restarted after an idle period ([`Controller::on_idle_restart`]).
    pub idle_restarts: u64,
    /// RFC 3168 ECN (data ECT(0), ECN-Echo acted on) or L4S (data ECT(1), per-packet marks).
    ecn: EcnMode,
    /// The next new data segment carries CWR.
    cwr_pending: bool,
    /// The segment last released carries CWR.
    last_cwr: bool,
    /// While reacting to an ECN-Echo: the first sequence number sent after the reaction; the
    /// reaction window ends when a packet from there on is acknowledged.
    cwr_until: Option<u64>,
    /// ECN-Echo reactions ([`Controller::on_ecn_echo`] calls).
    pub ecn_reactions: u64,
}

impl BulkSender {
    pub fn new(controller: Box<dyn Controller>, mss: u32, app: App, start: Time) -> BulkSender {
        BulkSender {
            controller,
            history: SendHistory::new(),
            report: FeedbackReport::default(),
            mss,
            app,
            start,
            unsent: match app {
                App::Finite { bytes } => bytes,
                App::Responses { .. } => 0,
                _ => u64::MAX,
            },
            acked: 0,
            completed_at: None,
            retransmit: VecDeque::new(),
            outstanding: VecDeque::new(),
            transfer_first_seq: 0,
            stream_offset: 0,
            responses: VecDeque::new(),
            last_data_send: None,
            slow_start_after_idle: false,
            next_release: start,
            pacing_wake: None,
            // The first segments go out at the start.
            app_wake: Some(start),
            rto: RtoTimer::default(),
            timeouts: 0,
            retransmissions: 0,
            idle_restarts: 0,
            ecn: EcnMode::Off,
            cwr_pending: false,
            last_cwr: false,
            cwr_until: None,
            ecn_reactions: 0,
        }
    }

    /// Use ECN: `true` or [`EcnMode::Classic`] for RFC 3168 (send new data ECT(0), react to
    /// ECN-Echo), [`EcnMode::L4s`] for L4S (send ECT(1), marks reach the controller per packet).
    /// Default off.
    pub fn set_ecn(&mut self, mode: impl Into<EcnMode>) {
        self.ecn = mode.into();
    }

    pub fn ecn_mode(&self) -> EcnMode {
        self.ecn
    }

    /// The ECN codepoint for a segment this sender released: ECT(0) for new data of an RFC 3168
    /// flow, Not-ECT for its retransmissions (RFC 3168 §6.1.5); ECT(1) for every data segment of
    /// an L4S flow; Not-ECT for flows without ECN.
    pub fn ecn_codepoint(&self, pkt: &SentPacket) -> Ecn {
        match self.ecn {
            EcnMode::Classic if pkt.kind != PacketKind::Media => Ecn::NotEct,
            mode => mode.codepoint(),
        }
    }

    /// Whether the segment last released carries the CWR flag (RFC 3168 §6.1.2: the first new
    /// data segment after a reaction to ECN-Echo).
    pub fn last_segment_cwr(&self) -> bool {
        self.last_cwr
    }

    /// Linux `net.ipv4.tcp_slow_start_after_idle`: tell the controller when sending resumes after
    /// an idle period longer than the RTO ([`Controller::on_idle_restart`]). Default off.
    pub fn set_slow_start_after_idle(&mut self, on: bool) {
        self.slow_start_after_idle = on;
    }

    /// Start a new finite transfer of `bytes` bytes on the wire at `now` as a fresh connection
    /// (short TCP flows, [`crate::endpoint::short_tcp`]): `controller` replaces the old one
    /// (slow start from its initial window), the RTO timer starts over (1 s before the first
    /// RTT sample), and nothing of the old connection is left to retransmit. The packet
    /// numbering continues, as the flow's receiver numbers arrivals per flow; segments still
    /// unreported from before stay outstanding and are matched as they are reported.
    pub fn new_transfer(&mut self, now: Time, bytes: u64, controller: Box<dyn Controller>) {
        self.controller = controller;
        self.app = App::Finite { bytes };
        self.unsent = bytes;
        self.acked = 0;
        self.completed_at = None;
        self.retransmit.clear();
        self.transfer_first_seq = self.history.next_seq();
        self.rto = RtoTimer::default();
        self.last_data_send = None;
        self.next_release = now;
        self.pacing_wake = None;
        self.app_wake = Some(now);
        self.cwr_pending = false;
        self.last_cwr = false;
        self.cwr_until = None;
    }

    /// Queue a response of `bytes` bytes (the responses application), identified by `id` in the
    /// [`DataSegment`]s that carry it. It is sent after the responses queued before it.
    pub fn queue_response(&mut self, id: u64, bytes: u64) {
        debug_assert!(matches!(self.app, App::Responses { .. }));
        if bytes > 0 {
            self.responses.push_back(Response {
                id,
                size: bytes,
                sent: 0,
            });
        }
    }

    /// Responses queued and not yet wholly sent.
    pub fn queued_responses(&self) -> usize {
        self.responses.len()
    }

    /// Bytes in flight.
    pub fn in_flight(&self) -> u64 {
        self.history.in_flight()
    }

    pub fn controller(&self) -> &dyn Controller {
        self.controller.as_ref()
    }

    /// The sequence number the next segment gets.
    pub fn next_seq(&self) -> u64 {
        self.history.next_seq()
    }

    /// When a finite transfer had all its bytes acknowledged.
    pub fn completed_at(&self) -> Option<Time> {
        self.completed_at
    }

    pub fn srtt(&self) -> Option<Duration> {
        self.rto.srtt()
    }

    pub fn rto(&self) -> Duration {
        self.rto.rto()
    }

    /// Whether the application has new data at `now`.
    fn app_has_data(&self, now: Time) -> bool {
        match self.app {
            App::Backlogged => true,
            App::Finite { .. } => self.unsent > 0,
            App::Responses { .. } => !self.responses.is_empty(),
            App::OnOff { on, off } => {
                let period = (on + off).0.max(1);
                (now.0.saturating_sub(self.start.0) % period) < on.0
            }
        }
    }

    /// When an off period of an on/off source ends.
    fn next_on(&self, now: Time) -> Option<Time> {
        let App::OnOff { on, off } = self.app else {
            return None;
        };
        let period = (on + off).0.max(1);
        let since = now.0.saturating_sub(self.start.0);
        Some(Time(self.start.0 + (since / period + 1) * period))
    }

    /// The next segment to send at `now`, if the window, pacing and application allow.
    pub fn poll_transmit(&mut self, now: Time) -> Option<SentPacket> {
        self.poll_transmit_segment(now).map(|(pkt, _)| pkt)
    }

    /// [`BulkSender::poll_transmit`], with the piece of the stream the packet carries.
    pub fn poll_transmit_segment(&mut self, now: Time) -> Option<(SentPacket, DataSegment)> {
        self.pacing_wake = None;
        self.app_wake = None;
        let retransmit = !self.retransmit.is_empty();
        if self.completed_at.is_some() {
            return None;
        }
        if !retransmit && !self.app_has_data(now) {
            self.app_wake = self.next_on(now);
            return None;
        }
        // Linux tcp_slow_start_after_idle_check: new data, nothing outstanding, idle for more
        // than an RTO since the last data packet left.
        if self.slow_start_after_idle
            && !retransmit
            && self.history.in_flight() == 0
            && self
                .last_data_send
                .is_some_and(|t| now - t > self.rto.rto())
        {
            self.idle_restarts += 1;
            // Counted once per idle period, even if pacing holds the packet back.
            self.last_data_send = Some(now);
            self.controller.on_idle_restart(now);
        }
        let decision = self.controller.decision();
        if decision
            .cwnd
            .is_some_and(|c| self.history.in_flight() + self.mss as u64 > c.max(self.mss as u64))
        {
            return None;
        }
        let pacing = decision.pacing_rate.filter(|r| r.bps() > 0.0);
        if pacing.is_some() && now < self.next_release {
            self.pacing_wake = Some(self.next_release);
            return None;
        }
        let (kind, segment, size) = if let Some((segment, size)) = self.retransmit.pop_front() {
            self.retransmissions += 1;
            (PacketKind::Retransmission, segment, size)
        } else {
            let (segment, size) = self.next_data();
            (PacketKind::Media, segment, size)
        };
        if let Some(rate) = pacing {
            self.next_release = self.next_release.max(now) + rate.transmit_time(size as u64);
        }
        self.last_cwr = self.cwr_pending && kind == PacketKind::Media;
        if self.last_cwr {
            self.cwr_pending = false;
        }
        let pkt = self.history.on_sent(SentPacket {
            seq: 0,
            size,
            send_time: now,
            frame: None,
            index_in_frame: 0,
            packets_in_frame: 0,
            kind,
            in_flight: 0,
        });
        self.outstanding.push_back((pkt.seq, segment, size));
        self.last_data_send = Some(now);
        self.rto.on_send(now);
        self.controller.on_packet_sent(now, &pkt);
        Some((pkt, segment))
    }

    /// The next piece of new data and its wire size.
    fn next_data(&mut self) -> (DataSegment, u32) {
        match self.app {
            App::Responses { header } => {
                let payload = self.mss.saturating_sub(header).max(1) as u64;
                let r = self
                    .responses
                    .front_mut()
                    .expect("a response is queued when there is data");
                let len = payload.min(r.size - r.sent);
                let segment = DataSegment {
                    response: r.id,
                    offset: r.sent,
                    len: len as u32,
                };
                r.sent += len;
                if r.sent >= r.size {
                    self.responses.pop_front();
                }
                (segment, len as u32 + header)
            }
            app => {
                if let App::Finite { .. } = app {
                    self.unsent = self.unsent.saturating_sub(self.mss as u64);
                }
                let segment = DataSegment {
                    response: 0,
                    offset: self.stream_offset,
                    len: self.mss,
                };
                self.stream_offset += self.mss as u64;
                (segment, self.mss)
            }
        }
    }

    /// An acknowledgement arrived.
    pub fn on_feedback(&mut self, now: Time, fb: &TransportFeedback) {
        self.history.on_feedback(now, fb, &mut self.report);
        if self.report.packets.is_empty() {
            return;
        }
        let mut newest_ack: Option<Time> = None;
        for p in &self.report.packets {
            // Reports list the oldest unreported packets in order, as `outstanding` holds them.
            let (seq, segment, size) = self
                .outstanding
                .pop_front()
                .expect("a reported packet is outstanding");
            debug_assert_eq!(seq, p.sent.seq);
            if seq < self.transfer_first_seq {
                continue; // the previous connection's
            }
            match p.receive_time {
                Some(_) => {
                    if self.cwr_until.is_some_and(|first| p.sent.seq >= first) {
                        // A packet sent after the last reaction arrived: a window has passed.
                        self.cwr_until = None;
                    }
                    self.acked += p.sent.size as u64;
                    newest_ack =
                        Some(newest_ack.map_or(p.sent.send_time, |t| t.max(p.sent.send_time)));
                }
                None => self.retransmit.push_back((segment, size)),
            }
        }
        if let Some(sent) = newest_ack {
            self.rto.on_rtt_sample(now - sent);
            // RFC 6298 §5.3: restart the timer when new data is acknowledged.
            self.rto.restart(now, self.history.in_flight() > 0);
        }
        if self.history.in_flight() == 0 && self.retransmit.is_empty() {
            self.rto.stop();
        }
        self.controller.on_feedback(now, &self.report);
        if self.ecn == EcnMode::Classic && fb.ecn_echo {
            self.on_ecn_echo(now);
        }
        if let App::Finite { bytes } = self.app {
            if self.completed_at.is_none() && self.acked >= bytes {
                self.completed_at = Some(now);
                self.rto.stop();
            }
        }
    }

    /// RFC 3168 §6.1.2: react to ECN-Echo at most once per window of data, without
    /// retransmitting; the next new data segment tells the receiver with CWR.
    fn on_ecn_echo(&mut self, now: Time) {
        if self.cwr_until.is_some() {
            return;
        }
        self.cwr_until = Some(self.history.next_seq());
        self.cwr_pending = true;
        self.ecn_reactions += 1;
        self.controller.on_ecn_echo(now);
    }

    /// When to call [`BulkSender::handle_timeout`].
    pub fn poll_timeout(&self) -> Option<Time> {
        [
            self.pacing_wake,
            self.rto.deadline(),
            self.controller.next_timeout(),
            self.app_wake,
        ]
        .into_iter()
        .flatten()
        .min()
    }

    pub fn handle_timeout(&mut self, now: Time) {
        if self.controller.next_timeout().is_some_and(|t| t <= now) {
            self.controller.on_timeout(now);
        }
        if self.rto.poll_expired(now) {
            // RFC 6298 §5.4–5.6: everything outstanding is retransmitted, the timer backs off.
            self.timeouts += 1;
            self.history.clear_in_flight();
            self.retransmit
                .extend(self.outstanding.drain(..).map(|(_, seg, size)| (seg, size)));
            self.controller.on_rto(now);
        }
    }

    pub fn state(&self, out: &mut Vec<(&'static str, f64)>) {
        let d = self.controller.decision();
        if let Some(c) = d.cwnd {
            out.push(("cwnd_bytes", c as f64));
        }
        if let Some(p) = d.pacing_rate {
            out.push(("pacing_bps", p.bps()));
        }
        out.push(("in_flight_bytes", self.history.in_flight() as f64));
        if let Some(s) = self.rto.srtt() {
            out.push(("srtt_ms", s.as_millis_f64()));
        }
        out.push(("rto_ms", self.rto.rto().as_millis_f64()));
        self.controller.state(out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::{fixed, parse_config, Decision, Params};
    use crate::units::Rate;

    /// A fixed window of `n` segments, for exercising the data path.
    struct Window(u64);
    impl Controller for Window {
        fn on_feedback(&mut self, _now: Time, _r: &FeedbackReport) {}
        fn decision(&self) -> Decision {
            Decision {
                cwnd: Some(self.0 * 1500),
                ..Decision::rate_only(Rate::ZERO, None)
            }
        }
    }

    fn ack(seqs: std::ops::Range<u64>, lost: &[u64]) -> TransportFeedback {
        TransportFeedback {
            ecn: Vec::new(),
            ecn_echo: false,
            base_seq: seqs.start,
            receive_times: seqs
                .map(|s| (!lost.contains(&s)).then_some(Time(s)))
                .collect(),
        }
    }

    #[test]
    fn the_window_limits_what_is_in_flight_and_losses_are_retransmitted_first() {
        let mut s = BulkSender::new(Box::new(Window(4)), 1500, App::Backlogged, Time::ZERO);
        let sent: Vec<_> = std::iter::from_fn(|| s.poll_transmit(Time::ZERO)).collect();
        assert_eq!(sent.len(), 4);
        s.on_feedback(Time::from_millis(50), &ack(0..3, &[1]));
        let next = s.poll_transmit(Time::from_millis(50)).unwrap();
        assert_eq!(next.kind, PacketKind::Retransmission);
        assert_eq!(
            s.poll_transmit(Time::from_millis(50)).unwrap().kind,
            PacketKind::Media
        );
        assert_eq!(s.srtt(), Some(Duration::from_millis(50)));
        assert_eq!(
            s.rto(),
            RTO_MIN,
            "50 ms + 4 × 25 ms = 150 ms is raised to the 200 ms minimum"
        );
    }

    #[test]
    fn rto_declares_everything_lost_and_backs_off() {
        let mut s = BulkSender::new(Box::new(Window(3)), 1500, App::Backlogged, Time::ZERO);
        while s.poll_transmit(Time::ZERO).is_some() {}
        assert_eq!(
            s.poll_timeout(),
            Some(Time::from_millis(1000)),
            "1 s before any RTT sample"
        );
        s.handle_timeout(Time::from_millis(1000));
        assert_eq!(s.timeouts, 1);
        assert_eq!(s.rto(), Duration::from_millis(2000));
        let resent: Vec<_> =
            std::iter::from_fn(|| s.poll_transmit(Time::from_millis(1000))).collect();
        assert_eq!(resent.len(), 3);
        assert!(resent.iter().all(|p| p.kind == PacketKind::Retransmission));
    }

    /// A 4000-byte transfer with its first window (three 1500-byte segments) sent at 0.
    fn finite_transfer_sent() -> BulkSender {
        let mut s = BulkSender::new(
            Box::new(Window(10)),
            1500,
            App::Finite { bytes: 4000 },
            Time::ZERO,
        );
        let sent = std::iter::from_fn(|| s.poll_transmit(Time::ZERO)).count();
        assert_eq!(sent, 3, "4000 bytes need three 1500-byte segments");
        s
    }

    #[test]
    fn a_finite_transfer_completes_when_all_bytes_are_acknowledged() {
        let mut s = finite_transfer_sent();
        s.on_feedback(Time::from_millis(30), &ack(0..3, &[]));
        assert_eq!(s.completed_at(), Some(Time::from_millis(30)));
        assert!(s.poll_transmit(Time::from_millis(30)).is_none());
    }

    #[test]
    fn a_new_transfer_ignores_reports_of_the_previous_connections_packets() {
        let mut s = finite_transfer_sent();
        s.on_feedback(Time::from_millis(30), &ack(0..2, &[]));
        // Packets 2 and 3 of the old connection are still unreported when the next one opens.
        s.new_transfer(Time::from_millis(40), 1000, Box::new(Window(10)));
        s.on_feedback(Time::from_millis(50), &ack(2..3, &[]));
        assert_eq!(
            s.completed_at(),
            None,
            "an old packet's acknowledgement does not complete the new download"
        );
        let first = s
            .poll_transmit(Time::from_millis(50))
            .expect("the new download's data");
        assert_eq!(first.kind, PacketKind::Media);
        s.on_feedback(Time::from_millis(60), &ack(3..4, &[]));
        assert_eq!(s.completed_at(), Some(Time::from_millis(60)));
    }

    #[test]
    fn responses_are_cut_into_segments_of_one_response_and_losses_resend_the_same_piece() {
        let app = App::Responses {
            header: TCP_IP_HEADER,
        };
        let mut s = BulkSender::new(Box::new(Window(100)), 1500, app, Time::ZERO);
        assert!(
            s.poll_transmit(Time::ZERO).is_none(),
            "nothing to send before a response is queued"
        );
        s.queue_response(7, 3000);
        s.queue_response(8, 100);
        let sent: Vec<_> = std::iter::from_fn(|| s.poll_transmit_segment(Time::ZERO)).collect();
        let pieces: Vec<(u64, u64, u32, u32)> = sent
            .iter()
            .map(|(p, d)| (d.response, d.offset, d.len, p.size))
            .collect();
        assert_eq!(
            pieces,
            vec![
                (7, 0, 1448, 1500),
                (7, 1448, 1448, 1500),
                (7, 2896, 104, 156),
                (8, 0, 100, 152)
            ],
            "1448 payload bytes per 1500-byte packet; a response's tail is its own short segment"
        );
        // The second packet is lost (the third was acknowledged): its piece is sent again.
        s.on_feedback(Time::from_millis(50), &ack(0..3, &[1]));
        let (p, d) = s.poll_transmit_segment(Time::from_millis(50)).unwrap();
        assert_eq!(p.kind, PacketKind::Retransmission);
        assert_eq!((d.response, d.offset, d.len, p.size), (7, 1448, 1448, 1500));
        assert!(s.poll_transmit(Time::from_millis(50)).is_none());
    }

    fn reno_cwnd(s: &BulkSender) -> u64 {
        s.controller().decision().cwnd.unwrap()
    }

    /// A Reno sender that grew its window over two responses (100 ms RTT), then sends a third
    /// response `idle` after the last acknowledgement.
    fn reno_after_idle(idle: Duration, restart: bool) -> BulkSender {
        let params: Params = toml::from_str("abc_l = 0").unwrap();
        let c = crate::cc::reno::Reno::new(parse_config("reno", &params).unwrap()).unwrap();
        let app = App::Responses { header: 0 };
        let mut s = BulkSender::new(Box::new(c), 1500, app, Time::ZERO);
        s.set_slow_start_after_idle(restart);
        let mut now = Time::ZERO;
        for id in 0..2 {
            s.queue_response(id, 40 * 1500);
            while s.queued_responses() > 0 || s.in_flight() > 0 {
                let sent: Vec<_> = std::iter::from_fn(|| s.poll_transmit(now)).collect();
                now += Duration::from_millis(100);
                if let (Some(a), Some(b)) = (sent.first(), sent.last()) {
                    s.on_feedback(now, &ack(a.seq..b.seq + 1, &[]));
                }
            }
        }
        assert_eq!(
            reno_cwnd(&s),
            80 * 1500,
            "slow start grew 10 -> 80 segments over the two responses (the tail of the first \
             used too little of the window to grow it)"
        );
        s.queue_response(2, 1500);
        assert!(s.poll_transmit(now + idle).is_some());
        s
    }

    #[test]
    fn slow_start_after_idle_restarts_the_window_only_after_an_rto_of_silence() {
        // 100 ms RTT samples: the RTO is at Linux's 200 ms minimum.
        let s = reno_after_idle(Duration::from_millis(3000), true);
        assert_eq!(s.idle_restarts, 1);
        assert_eq!(
            reno_cwnd(&s),
            10 * 1500,
            "min(cwnd, initial window) after 3 s idle (RFC 5681 4.1)"
        );
        let ss = s
            .controller()
            .decision()
            .cwnd
            .map(|_| {
                let mut out = vec![];
                s.controller().state(&mut out);
                out.iter()
                    .find(|(n, _)| *n == "ssthresh_packets")
                    .unwrap()
                    .1
            })
            .unwrap();
        assert_eq!(
            ss,
            f64::INFINITY,
            "ssthresh = max(ssthresh, 3/4 cwnd) stays infinite before any loss \
             (tcp_current_ssthresh): the whole window is slow-started again"
        );
        // The last data left 100 ms before its acknowledgement: 50 ms later it is 150 ms.
        let short = reno_after_idle(Duration::from_millis(50), true);
        assert_eq!(
            short.idle_restarts, 0,
            "150 ms is shorter than the 200 ms RTO"
        );
        assert_eq!(reno_cwnd(&short), 80 * 1500);
        let off = reno_after_idle(Duration::from_millis(3000), false);
        assert_eq!(off.idle_restarts, 0, "the switch turns the restart off");
        assert_eq!(
            reno_cwnd(&off),
            80 * 1500,
            "without it the connection keeps its window across the idle period"
        );
    }

    #[test]
    fn an_on_off_source_is_silent_while_off() {
        let params: Params = toml::from_str("rate = \"1Mbps\"\npacing_factor = 0").unwrap();
        let c = fixed::Fixed::new(parse_config("fixed", &params).unwrap()).unwrap();
        let app = App::OnOff {
            on: Duration::from_millis(100),
            off: Duration::from_millis(100),
        };
        let mut s = BulkSender::new(Box::new(c), 1500, app, Time::ZERO);
        assert!(s.poll_transmit(Time::from_millis(50)).is_some());
        assert!(s.poll_transmit(Time::from_millis(150)).is_none());
        assert_eq!(
            s.poll_timeout(),
            Some(Time::from_millis(200)),
            "wakes when the next on period starts"
        );
        assert!(s.poll_transmit(Time::from_millis(250)).is_some());
    }

    /// An acknowledgement of `seqs` with ECN-Echo set or not.
    fn ack_ece(seqs: std::ops::Range<u64>, ece: bool) -> TransportFeedback {
        TransportFeedback {
            ecn_echo: ece,
            ..ack(seqs, &[])
        }
    }

    fn ecn_sender(controller: &str) -> BulkSender {
        let params = Params::default();
        let c: Box<dyn Controller> = match controller {
            "reno" => Box::new(
                crate::cc::reno::Reno::new(parse_config("reno", &params).unwrap()).unwrap(),
            ),
            _ => Box::new(
                crate::cc::cubic::Cubic::new(parse_config("cubic", &params).unwrap(), Time::ZERO)
                    .unwrap(),
            ),
        };
        let mut s = BulkSender::new(c, 1500, App::Backlogged, Time::ZERO);
        s.set_ecn(true);
        s
    }

    #[test]
    fn ecn_echo_reduces_the_window_once_per_window_without_retransmitting() {
        for (name, beta) in [("reno", 0.5), ("cubic", 0.7)] {
            let mut s = ecn_sender(name);
            let mut twin = ecn_sender(name);
            let t0 = Time::ZERO;
            // The initial window, 10 segments, all new data: ECT(0), no CWR.
            let sent: Vec<_> = std::iter::from_fn(|| s.poll_transmit(t0)).collect();
            assert_eq!(sent.len(), 10);
            assert!(sent.iter().all(|p| s.ecn_codepoint(p) == Ecn::Ect0));
            assert!(!s.last_segment_cwr());
            while twin.poll_transmit(t0).is_some() {}
            // Segments 0..5 acknowledged with ECN-Echo: the window is cut as for a loss.
            let t1 = Time::from_millis(100);
            twin.on_feedback(t1, &ack_ece(0..5, false));
            s.on_feedback(t1, &ack_ece(0..5, true));
            let (cut, full) = (reno_cwnd(&s) as f64, reno_cwnd(&twin) as f64);
            assert!(
                (cut - beta * full).abs() <= 1500.0,
                "{name}: {cut} vs {beta} × {full}"
            );
            assert_eq!((s.ecn_reactions, s.retransmissions, s.timeouts), (1, 0, 0));
            // The next new segment carries CWR, the one after does not.
            let after = reno_cwnd(&s);
            let first = s.poll_transmit(t1);
            if let Some(p) = first {
                assert!(s.last_segment_cwr(), "{name}");
                assert_eq!(p.kind, PacketKind::Media);
            }
            // The rest of the old window (5..10) echoes again: the same window, no new cut.
            s.on_feedback(Time::from_millis(110), &ack_ece(5..10, true));
            assert_eq!(s.ecn_reactions, 1, "{name}: once per window of data");
            assert!(reno_cwnd(&s) <= after, "{name}: no growth while reduced");
            // A packet sent after the reaction acknowledged with ECN-Echo: a new window, a new
            // reaction.
            let p = std::iter::from_fn(|| s.poll_transmit(Time::from_millis(110)))
                .last()
                .unwrap();
            assert!(!s.last_segment_cwr());
            let before = reno_cwnd(&s);
            s.on_feedback(Time::from_millis(210), &ack_ece(10..p.seq + 1, true));
            assert_eq!(s.ecn_reactions, 2, "{name}");
            assert!(reno_cwnd(&s) < before, "{name}");
            assert_eq!(s.retransmissions, 0);
        }
    }

    #[test]
    fn without_ecn_echo_is_ignored_and_data_is_not_ect() {
        let mut s = BulkSender::new(Box::new(Window(4)), 1500, App::Backlogged, Time::ZERO);
        let p = s.poll_transmit(Time::ZERO).unwrap();
        assert_eq!(s.ecn_codepoint(&p), Ecn::NotEct);
        s.on_feedback(Time::from_millis(10), &ack_ece(0..1, true));
        assert_eq!(s.ecn_reactions, 0);
    }
}
