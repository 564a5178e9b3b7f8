//! A TCP-like bulk sender, sans-IO: the data path around a window-based [`Controller`] (Reno,
//! Cubic, BBR), used for cross traffic.
//!
//! What is modelled, and what is not:
//! - Full-size segments (`mss` bytes on the wire), numbered like every other rtcc packet (a
//!   retransmission gets a number of its own). The receiver acknowledges with transport feedback
//!   (per-packet receive times), which carries what SACK carries: which segments arrived, and a
//!   piece of the stream that arrives twice (a DSACK).
//! - Loss detection is RACK-TLP (RFC 8985, `tcp/rack.rs`, `tcp/tlp.rs`); lost segments are
//!   retransmitted before new data; goodput counts each piece of the stream once.
//! - Fast recovery (RACK marked a loss from the Open state, Linux `tcp_enter_recovery`) lasts
//!   until the cumulative ACK passes what was sent when it began; every report tells the
//!   controller where it stands ([`LossRecovery`]), and window controllers reduce once per
//!   recovery, however many of its packets (retransmissions included) are lost. For
//!   controllers that ask for it ([`Controller::uses_prr`]: Reno, Cubic) the sender spreads the
//!   window reduction with proportional rate reduction (RFC 6937 as Linux `tcp_cwnd_reduction`
//!   runs it): the first acknowledgement always sends the fast retransmit, then `ssthresh /
//!   prior_cwnd` of what is delivered while more than `ssthresh` is in flight, and as much as is
//!   delivered (+1 when the cumulative ACK advances) below it. Without it a window cut at once
//!   to `ssthresh` below what is in flight sends nothing until enough is delivered, and a lost
//!   tail then ends in a timeout.
//! - The retransmission timer is Linux's (`tcp/rtt.rs`: RTO = SRTT + max(4·mdev, 200 ms), 1 s
//!   before the first sample, doubled on each expiry, restarted when the cumulative ACK
//!   advances). On expiry ([`BulkSender::handle_timeout`], Linux `tcp_retransmit_timer`,
//!   `tcp_enter_loss`, `tcp_timeout_mark_lost`) the head and what was sent at least RACK.rtt
//!   ago are marked lost, the head is retransmitted at once, and the controller is told with
//!   what is still in flight ([`Controller::on_rto`]).
//! - After a timeout (Linux `tcp_process_loss`): the reduction is undone
//!   ([`Controller::on_undo`], `tcp_undo_cwnd_reduction`) when the original of the head arrives
//!   (`tcp_packet_delayed`, what TCP timestamps show), when every retransmission comes back as a
//!   DSACK, or when F-RTO (RFC 5682 §3.1 with SACK, Linux's default `tcp_frto = 2`) finds the
//!   timeout spurious: a segment sent before it and never retransmitted is acknowledged. F-RTO
//!   runs unless the timeout interrupts a fast recovery; on the first acknowledgement that
//!   advances the cumulative ACK it sends new data instead of retransmissions (step 2.b), and a
//!   duplicate or SACK after that shows the loss was real (step 3.a). Recovery that completes
//!   with every retransmission DSACKed is undone too (`tcp_try_undo_recovery`); the undos
//!   Linux runs inside fast recovery (`tcp_try_undo_partial`, `tcp_try_undo_dsack`) are not
//!   modelled.
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
//! - A send buffer (off by default, [`BulkSender::set_send_buffer`], `tcp/sndbuf.rs`; the
//!   responses application only): queued responses are written into the socket up to a cap of
//!   unacknowledged payload, the application writes again once the buffer is at most two-thirds
//!   full, and each write marks the connection application-limited as Linux's
//!   `tcp_rate_check_app_limited` does ([`Controller::on_app_limited`]). Without it every
//!   response is in the socket the moment it is queued.
//! - Not modelled: the receive window (never limiting), handshakes, header options.

mod prr;
mod rack;
mod rtt;
mod scoreboard;
pub mod sndbuf;
mod tlp;

use crate::cc::Controller;
use crate::packet::{
    Ecn, EcnMode, FeedbackReport, LossRecovery, PacketKind, PacketResult, SentPacket,
    TransportFeedback,
};
use crate::units::{Duration, Time};

pub use crate::rto::{RTO_INITIAL, RTO_MAX, RTO_MIN};
use prr::Prr;
use rack::Rack;
use rtt::LinuxRtt;
use scoreboard::{Scoreboard, State};
use sndbuf::{SendBuffer, SendBufferError};
use std::collections::{BTreeSet, VecDeque};
pub use tlp::Probe;

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

/// The loss-recovery state (Linux `icsk_ca_state`; Disorder is [`Scoreboard::disorder`], CWR
/// the ECN reaction's `cwr_until`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Recovery {
    Open,
    /// Fast recovery after RACK marked a loss, until the cumulative ACK passes `high_seq`
    /// (Linux `tcp_enter_recovery`, `high_seq = snd_nxt`).
    Fast {
        high_seq: u64,
    },
    /// After an RTO, until the cumulative ACK passes `high_seq` (Linux `TCP_CA_Loss`).
    Loss {
        high_seq: u64,
    },
}

/// Linux's one retransmission timer and what it is armed for (`icsk_pending`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Timer {
    /// RACK's reordering timer (`ICSK_TIME_REO_TIMEOUT`).
    Reo,
    /// The tail loss probe (`ICSK_TIME_LOSS_PROBE`).
    Probe,
    /// The retransmission timeout (`ICSK_TIME_RETRANS`).
    Rto,
}

pub struct BulkSender {
    controller: Box<dyn Controller>,
    board: Scoreboard,
    report: FeedbackReport,
    mss: u32,
    app: App,
    start: Time,
    /// New data not yet sent (finite transfers).
    unsent: u64,
    /// Data bytes acknowledged (finite transfers complete when this reaches the size).
    acked: u64,
    completed_at: Option<Time>,
    /// Lost pieces of the stream waiting to be retransmitted, lowest (oldest data) first.
    retransmit: BTreeSet<u64>,
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
    /// SRTT and the RTO with its backoff (the deadline is `timer`'s).
    rto: LinuxRtt,
    timer: Option<(Time, Timer)>,
    rack: Rack,
    recovery: Recovery,
    /// A probe waiting to be sent, and `tlp_high_seq` of the one outstanding.
    probe: Option<Probe>,
    tlp_high_seq: Option<u64>,
    /// PRR while in fast recovery, for controllers that use it ([`Controller::uses_prr`]).
    prr: Option<Prr>,
    /// F-RTO runs for the current timeout (Linux `tp->frto`), and the piece id from which new
    /// data counts as sent after the timeout (Linux `high_seq` in sequence space; `high_seq` of
    /// [`Recovery::Loss`] counts transmissions).
    frto: bool,
    frto_high_piece: u64,
    /// F-RTO step 2.b: send new data before retransmissions until the next acknowledgement
    /// (Linux `REXMIT_NEW`).
    frto_new_data: bool,
    /// Linux `undo_marker` (`Some`: a reduction may be undone) with `undo_retrans`: the
    /// retransmissions since then not yet reported back as DSACKs (-1: none yet).
    undo_retrans: Option<i64>,
    /// Linux `retrans_stamp`: when the first retransmission of the current episode left.
    retrans_stamp: Option<Time>,
    /// Linux `icsk_retransmits`: timeouts since the cumulative ACK last advanced.
    rto_retransmits: u32,
    /// The head, which the timeout retransmits at once, whatever the window
    /// (`tcp_retransmit_timer` calls `tcp_retransmit_skb` itself).
    rto_head: Option<u64>,
    /// RTO expiries, retransmitted segments (tail loss probes that retransmit included).
    pub timeouts: u64,
    pub retransmissions: u64,
    /// Tail loss probes sent, and duplicate deliveries (DSACKs: a spurious retransmission).
    pub loss_probes: u64,
    pub dsacks: u64,
    /// Window reductions undone (Linux `TCPLossUndo` and `TCPFullUndo`), and timeouts that
    /// F-RTO found spurious (`TCPSpuriousRTOs`).
    pub undos: u64,
    pub spurious_rtos: u64,
    /// Times the window was restarted after an idle period ([`Controller::on_idle_restart`]).
    pub idle_restarts: u64,
    /// The send buffer, if modelled (`tcp/sndbuf.rs`), with the payload bytes the application
    /// has queued, written into the socket, sent as new data, and had delivered.
    sndbuf: Option<SendBuffer>,
    app_bytes: u64,
    written: u64,
    sent_payload: u64,
    delivered_payload: u64,
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
            board: Scoreboard::default(),
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
            retransmit: BTreeSet::new(),
            transfer_first_seq: 0,
            stream_offset: 0,
            responses: VecDeque::new(),
            last_data_send: None,
            slow_start_after_idle: false,
            next_release: start,
            pacing_wake: None,
            // The first segments go out at the start.
            app_wake: Some(start),
            rto: LinuxRtt::default(),
            timer: None,
            rack: Rack::default(),
            recovery: Recovery::Open,
            probe: None,
            tlp_high_seq: None,
            prr: None,
            frto: false,
            frto_high_piece: 0,
            frto_new_data: false,
            undo_retrans: None,
            retrans_stamp: None,
            rto_retransmits: 0,
            rto_head: None,
            timeouts: 0,
            retransmissions: 0,
            loss_probes: 0,
            dsacks: 0,
            undos: 0,
            spurious_rtos: 0,
            idle_restarts: 0,
            sndbuf: None,
            app_bytes: 0,
            written: 0,
            sent_payload: 0,
            delivered_payload: 0,
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
    /// (slow start from its initial window), the RTO timer and RACK start over (1 s before the
    /// first RTT sample), and nothing of the old connection is left to retransmit. The packet
    /// numbering continues, as the flow's receiver numbers arrivals per flow; segments still
    /// unreported from before stay in flight and are matched as they are reported.
    pub fn new_transfer(&mut self, now: Time, bytes: u64, controller: Box<dyn Controller>) {
        self.controller = controller;
        self.app = App::Finite { bytes };
        self.unsent = bytes;
        self.acked = 0;
        self.completed_at = None;
        self.retransmit.clear();
        self.board.forget_pieces();
        self.transfer_first_seq = self.board.next_seq();
        self.rto = LinuxRtt::default();
        self.timer = None;
        self.rack = Rack::default();
        self.recovery = Recovery::Open;
        self.probe = None;
        self.tlp_high_seq = None;
        self.prr = None;
        self.frto = false;
        self.frto_new_data = false;
        self.undo_retrans = None;
        self.retrans_stamp = None;
        self.rto_retransmits = 0;
        self.rto_head = None;
        self.last_data_send = None;
        self.next_release = now;
        self.pacing_wake = None;
        self.app_wake = Some(now);
        self.cwr_pending = false;
        self.last_cwr = false;
        self.cwr_until = None;
    }

    /// Queue a response of `bytes` bytes (the responses application), identified by `id` in the
    /// [`DataSegment`]s that carry it. It is sent after the responses queued before it (with a
    /// send buffer, once the application could write it into the socket).
    pub fn queue_response(&mut self, id: u64, bytes: u64) {
        debug_assert!(matches!(self.app, App::Responses { .. }));
        if bytes > 0 {
            self.responses.push_back(Response {
                id,
                size: bytes,
                sent: 0,
            });
            self.app_bytes += bytes;
            self.write_to_socket();
        }
    }

    /// Model a send buffer of `cap` bytes of payload (`tcp/sndbuf.rs`); the responses
    /// application only (the others have no writes to gate).
    pub fn set_send_buffer(&mut self, cap: crate::units::Bytes) -> Result<(), SendBufferError> {
        self.sndbuf = Some(SendBuffer::new(cap)?);
        Ok(())
    }

    /// The send buffer, if modelled.
    pub fn send_buffer(&self) -> Option<&SendBuffer> {
        self.sndbuf.as_ref()
    }

    /// The application writes what it has pending, if the send buffer lets it
    /// (`tcp_sendmsg_locked`): the app-limited check first, then the copy.
    fn write_to_socket(&mut self) {
        let pending = self.app_bytes - self.written;
        let queued = self.socket_queued();
        let Some(sb) = self.sndbuf.as_mut() else {
            return;
        };
        if pending == 0 || !sb.may_write(queued) {
            return;
        }
        let payload = match self.app {
            App::Responses { header } => self.response_payload(header),
            _ => self.mss as u64,
        };
        let in_flight = self.board.in_flight_bytes();
        let window_full = self
            .controller
            .decision()
            .cwnd
            .is_some_and(|c| in_flight + self.mss as u64 > c.max(self.mss as u64));
        let app_limited = sndbuf::app_limited_at_write(
            self.written_unsent(),
            payload,
            window_full,
            !self.retransmit.is_empty(),
        );
        if app_limited {
            self.controller.on_app_limited(in_flight);
        }
        let sb = self.sndbuf.as_mut().expect("a send buffer (checked above)");
        sb.app_limited_marks += app_limited as u64;
        self.written += sb.write(queued, pending);
    }

    /// Payload bytes of one segment of a response (the MSS less the response's header).
    fn response_payload(&self, header: u32) -> u64 {
        self.mss.saturating_sub(header).max(1) as u64
    }

    /// Written payload not delivered yet: what the send buffer holds.
    fn socket_queued(&self) -> u64 {
        self.written - self.delivered_payload.min(self.written)
    }

    /// Written payload not sent yet.
    fn written_unsent(&self) -> u64 {
        self.written - self.sent_payload
    }

    /// Responses queued and not yet wholly sent.
    pub fn queued_responses(&self) -> usize {
        self.responses.len()
    }

    /// Bytes in flight (RFC 6675's `pipe`: segments neither delivered nor marked lost).
    pub fn in_flight(&self) -> u64 {
        self.board.in_flight_bytes()
    }

    pub fn controller(&self) -> &dyn Controller {
        self.controller.as_ref()
    }

    /// The sequence number the next segment gets.
    pub fn next_seq(&self) -> u64 {
        self.board.next_seq()
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

    /// RACK's reordering window multiplier (1 unless DSACKs grew it).
    pub fn reo_wnd_mult(&self) -> u32 {
        self.rack.reo_wnd_mult()
    }

    /// Whether the application has new data at `now`.
    fn app_has_data(&self, now: Time) -> bool {
        match self.app {
            App::Backlogged => true,
            App::Finite { .. } => self.unsent > 0,
            App::Responses { header } => match (&self.sndbuf, self.responses.front()) {
                (_, None) => false,
                (None, Some(_)) => true,
                // With a send buffer, only what was written: a full segment, or the tail of
                // the response.
                (Some(_), Some(r)) => {
                    let unsent = self.written_unsent();
                    unsent > 0 && unsent >= self.response_payload(header).min(r.size - r.sent)
                }
            },
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
        if self.completed_at.is_some() {
            return None;
        }
        if let Some(probe) = self.probe.take() {
            // RFC 8985 §7.3: the probe goes out whatever the window (Linux `tcp_write_xmit` with
            // `push_one = 2`) and the pacing.
            let sent = match probe {
                Probe::NewData if self.app_has_data(now) => Some(self.send_new(now)),
                Probe::Retransmit(id) if !self.board.piece_delivered(id) => {
                    Some(self.send_retransmission(now, id))
                }
                _ => None,
            };
            if let Some(sent) = sent {
                self.loss_probes += 1;
                self.tlp_high_seq = Some(self.board.next_seq());
                // Linux `tcp_send_loss_probe`: the RTO restarts from now.
                self.timer = Some((now + self.rto.rto(), Timer::Rto));
                return Some(sent);
            }
        }
        if let Some(id) = self.rto_head.take() {
            // Linux `tcp_retransmit_timer`: the head goes out at once, whatever the window.
            if !self.board.piece_delivered(id) {
                self.retransmit.remove(&id);
                return Some(self.send_retransmission(now, id));
            }
        }
        self.retransmit
            .retain(|&id| !self.board.piece_delivered(id));
        // F-RTO step 2.b (Linux `REXMIT_NEW`): new data first, if there is any.
        let retransmit = if self.frto_new_data && self.app_has_data(now) {
            None
        } else {
            self.retransmit.first().copied()
        };
        if retransmit.is_none() && !self.app_has_data(now) {
            self.app_wake = self.next_on(now);
            return None;
        }
        // Linux tcp_slow_start_after_idle_check: new data, nothing outstanding, idle for more
        // than an RTO since the last data packet left.
        if self.slow_start_after_idle
            && retransmit.is_none()
            && self.board.in_flight_bytes() == 0
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
        let in_flight = self.board.in_flight_bytes();
        let blocked = match self.active_prr() {
            // In fast recovery PRR sets the window: packets, as Linux counts it.
            Some(p) => self.board.packets_in_flight() as u64 >= p.cwnd(),
            None => decision
                .cwnd
                .is_some_and(|c| in_flight + self.mss as u64 > c.max(self.mss as u64)),
        };
        if blocked {
            return None;
        }
        let pacing = decision.pacing_rate.filter(|r| r.bps() > 0.0);
        if pacing.is_some() && now < self.next_release {
            self.pacing_wake = Some(self.next_release);
            return None;
        }
        Some(match retransmit {
            Some(id) => {
                self.retransmit.remove(&id);
                let head = self.board.head().map(|(h, _)| h) == Some(id);
                let sent = self.send_retransmission(now, id);
                // Linux `tcp_xmit_retransmit_queue`: retransmitting the head restarts the RTO
                // (unless RACK's timer is pending).
                if head && self.timer.is_none_or(|(_, k)| k != Timer::Reo) {
                    self.timer = Some((now + self.rto.rto(), Timer::Rto));
                }
                sent
            }
            None => {
                let prior_outstanding = self.board.outstanding();
                let sent = self.send_new(now);
                // Linux `tcp_event_new_data_sent`: start the RTO if nothing was outstanding
                // (or move a pending probe's to the RTO); then `tcp_schedule_loss_probe`.
                if !prior_outstanding || self.timer.is_some_and(|(_, k)| k == Timer::Probe) {
                    self.rearm_rto(now);
                }
                self.schedule_probe(now, false);
                sent
            }
        })
    }

    fn send_new(&mut self, now: Time) -> (SentPacket, DataSegment) {
        let (segment, size) = self.next_data();
        let id = self.board.new_piece(segment, size, now);
        let pkt = self.release(now, PacketKind::Media, size, id);
        (pkt, segment)
    }

    fn send_retransmission(&mut self, now: Time, id: u64) -> (SentPacket, DataSegment) {
        let p = *self.board.piece(id).expect("an undelivered piece is held");
        self.retransmissions += 1;
        // Linux `__tcp_retransmit_skb`: the episode's first retransmission stamps it, and every
        // one counts towards the DSACKs that would prove them all spurious.
        self.retrans_stamp.get_or_insert(now);
        if let Some(u) = &mut self.undo_retrans {
            *u = (*u).max(0) + 1;
        }
        let pkt = self.release(now, PacketKind::Retransmission, p.size, id);
        (pkt, p.segment)
    }

    fn release(&mut self, now: Time, kind: PacketKind, size: u32, piece: u64) -> SentPacket {
        if let Some(rate) = self
            .controller
            .decision()
            .pacing_rate
            .filter(|r| r.bps() > 0.0)
        {
            self.next_release = self.next_release.max(now) + rate.transmit_time(size as u64);
        }
        self.last_cwr = self.cwr_pending && kind == PacketKind::Media;
        if self.last_cwr {
            self.cwr_pending = false;
        }
        let pkt = self.board.on_sent(
            SentPacket {
                seq: 0,
                size,
                send_time: now,
                frame: None,
                index_in_frame: 0,
                packets_in_frame: 0,
                kind,
                in_flight: 0,
            },
            Some(piece),
        );
        self.last_data_send = Some(now);
        if let Some(p) = self.prr.as_mut() {
            p.on_sent();
        }
        if self.timer.is_none() {
            self.timer = Some((now + self.rto.rto(), Timer::Rto));
        }
        self.controller.on_packet_sent(now, &pkt);
        pkt
    }

    /// The next piece of new data and its wire size.
    fn next_data(&mut self) -> (DataSegment, u32) {
        match self.app {
            App::Responses { header } => {
                let payload = self.response_payload(header);
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
                self.sent_payload += len;
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

    /// Linux `tcp_rearm_rto`: the RTO from now, or, if RACK's timer or a probe was pending, from
    /// the head's last transmission (at least 1 µs ahead).
    fn rearm_rto(&mut self, now: Time) {
        if !self.board.outstanding() {
            self.timer = None;
            return;
        }
        let rto = self.rto.rto();
        let at = match (self.timer, self.board.head()) {
            (Some((_, Timer::Reo | Timer::Probe)), Some((_, head))) => {
                (head.last_sent + rto).max(now + Duration(1_000))
            }
            _ => now + rto,
        };
        self.timer = Some((at, Timer::Rto));
    }

    /// Linux `tcp_schedule_loss_probe`; `on_ack`: armed by an acknowledgement (the RTO it must
    /// not pass is a full RTO from now), else by a send (the time left on the head's RTO).
    fn schedule_probe(&mut self, now: Time, on_ack: bool) -> bool {
        let packets = self.board.packets_in_flight();
        if packets == 0 || self.recovery != Recovery::Open || self.board.disorder() {
            return false;
        }
        let rto = self.rto.rto();
        let rto_left = if on_ack {
            Some(rto)
        } else {
            self.board.head().map(|(_, h)| (h.last_sent + rto) - now)
        };
        let pto = tlp::pto(self.rto.srtt(), packets, rto_left);
        self.timer = Some((now + pto, Timer::Probe));
        true
    }

    /// An acknowledgement arrived.
    pub fn on_feedback(&mut self, now: Time, fb: &TransportFeedback) {
        self.report.feedback_time = now;
        self.report.packets.clear();
        self.frto_new_data = false;
        let recovery_before = self.recovery;
        let head_before = self.board.head().map(|(id, _)| id);
        let mut newest_sent: Option<Time> = None;
        let mut dsack = false;
        // For PRR, F-RTO and the undo checks: pieces newly delivered (and whether they were
        // ever retransmitted), and the send time of the transmission that filled the head (the
        // timestamp its acknowledgement would echo).
        let mut newly_delivered = 0u64;
        let mut delivered_pieces: Vec<(u64, bool)> = Vec::new();
        let mut head_fill_sent: Option<Time> = None;
        for (i, rt) in fb.receive_times.iter().enumerate() {
            let Some(rt) = *rt else { continue };
            let seq = fb.base_seq + i as u64;
            let Some(d) = self.board.deliver(seq) else {
                continue; // unknown, or reported before
            };
            if d.duplicate {
                dsack = true;
                self.dsacks += 1;
                // Linux `tcp_check_dsack`: a DSACK proves one retransmission spurious.
                if let Some(u) = self.undo_retrans.as_mut().filter(|u| **u > 0) {
                    *u -= 1;
                }
            }
            let current = seq >= self.transfer_first_seq;
            if current && !d.duplicate && d.piece.is_some() {
                self.acked += d.pkt.size as u64;
            }
            if let Some(id) = d.piece.filter(|_| !d.duplicate) {
                newly_delivered += 1;
                let piece = self.board.piece(id);
                if current && self.sndbuf.is_some() {
                    self.delivered_payload += piece.map_or(0, |p| p.segment.len as u64);
                }
                let retransmitted = piece.is_some_and(|p| p.retransmitted);
                delivered_pieces.push((id, retransmitted));
                if Some(id) == head_before {
                    head_fill_sent = Some(d.pkt.send_time);
                }
            }
            if self.cwr_until.is_some_and(|first| seq >= first) {
                // A packet sent after the last reaction arrived: a window has passed.
                self.cwr_until = None;
            }
            self.rack.on_delivered(seq, d.pkt.send_time, now);
            newest_sent = Some(newest_sent.map_or(d.pkt.send_time, |t| t.max(d.pkt.send_time)));
            // A packet whose loss the controller was told of is not reported again.
            if d.prior != (State::Lost { reported: true }) {
                self.report.packets.push(PacketResult {
                    sent: d.pkt,
                    receive_time: Some(rt),
                    ecn: fb.ecn.get(i).copied().unwrap_or_default(),
                });
            }
        }
        if newest_sent.is_none() {
            return; // nothing new
        }
        if let Some(sent) = newest_sent {
            let rtt = now - sent;
            // Linux `tcp_ack_update_rtt`: a sample resets the backoff.
            let board = &self.board;
            self.rto
                .on_sample(rtt, |seq| board.una_passed(seq), board.next_seq());
            self.rack.on_rtt_sample(rtt, now);
        }
        self.board.pop_settled();
        let advanced = self.board.head().map(|(id, _)| id) != head_before;
        if advanced {
            self.rto_retransmits = 0; // Linux `tcp_ack`: FLAG_SND_UNA_ADVANCED
        }
        let board = &self.board;
        self.rack
            .update_reo_wnd(dsack, |round| board.una_passed(round), board.next_seq());
        if self.tlp_high_seq.is_some_and(|h| self.board.una_passed(h)) {
            self.tlp_high_seq = None; // tcp_process_tlp_ack: the probe's episode is over
        }
        // Linux `tcp_packet_delayed`: the head was filled by a transmission sent before the
        // episode's first retransmission (its timestamp echo is older than `retrans_stamp`).
        let packet_delayed = self
            .retrans_stamp
            .is_some_and(|rs| head_fill_sent.is_some_and(|t| t < rs));
        let head_now = self.board.head().map(|(id, _)| id);
        let data_sacked = delivered_pieces
            .iter()
            .any(|&(id, _)| head_now.is_some_and(|h| id > h));
        let orig_acked = |high: u64| delivered_pieces.iter().any(|&(id, r)| !r && id < high);
        self.process_loss(now, advanced, packet_delayed, data_sacked, orig_acked);
        // Linux `tcp_fastretrans_alert`: the recovery ends (D) before this acknowledgement's
        // losses are looked for (E), so a loss of data sent after the recovery point that it
        // reveals starts the next recovery at once.
        self.check_recovery_exit(now, packet_delayed);
        let (reo_armed, newly_lost) = if self.rack.take_advanced() {
            self.detect_losses(now)
        } else {
            (false, 0)
        };
        // Linux `tcp_ack`: "reset TLP/RTO timer when RACK doesn't set" (FLAG_SET_XMIT_TIMER,
        // set when the cumulative ACK advanced).
        if advanced && !reo_armed && !self.schedule_probe(now, true) {
            self.rearm_rto(now);
        }
        if !self.board.outstanding() {
            self.timer = None;
        }
        if self.recovery == Recovery::Open && advanced && !self.board.disorder() {
            self.retrans_stamp = None; // tcp_try_to_open: no retransmission outstanding
        }
        self.report.packets.sort_by_key(|p| p.sent.seq);
        self.report.in_flight = self.board.in_flight_bytes();
        self.report.recovery = Some(self.loss_recovery(recovery_before));
        if !self.report.packets.is_empty() {
            self.controller.on_feedback(now, &self.report);
        }
        self.prr_update(newly_delivered, newly_lost, advanced);
        if self.ecn == EcnMode::Classic && fb.ecn_echo {
            self.on_ecn_echo(now);
        }
        if let App::Finite { bytes } = self.app {
            if self.completed_at.is_none() && self.acked >= bytes {
                self.completed_at = Some(now);
                self.timer = None;
            }
        }
        // Freed memory wakes a waiting writer (`tcp_check_space`), after the ACK is processed.
        self.write_to_socket();
    }

    /// The loss recovery a report tells the controller of ([`LossRecovery`]), given the state
    /// before the report: a fast recovery different from the one before (a new recovery point)
    /// was entered on this report.
    fn loss_recovery(&self, before: Recovery) -> LossRecovery {
        match self.recovery {
            Recovery::Open => LossRecovery::Open,
            Recovery::Fast { .. } if self.recovery != before => LossRecovery::Entered,
            _ => LossRecovery::Ongoing,
        }
    }

    /// PRR, if it runs: fast recovery with a controller that uses it.
    fn active_prr(&self) -> Option<Prr> {
        self.prr
            .filter(|_| matches!(self.recovery, Recovery::Fast { .. }))
    }

    /// PRR's window after an acknowledgement that delivered `newly` packets and let RACK mark
    /// `newly_lost` (`tcp/prr.rs`), with the controller's reduced window as `ssthresh`.
    fn prr_update(&mut self, newly: u64, newly_lost: u64, una_advanced: bool) {
        let Some(mut p) = self.active_prr() else {
            return;
        };
        let mss = (self.mss as u64).max(1);
        let ssthresh = self
            .controller
            .decision()
            .cwnd
            .map_or(u64::MAX / 4, |c| (c / mss).max(1));
        let pipe = self.board.packets_in_flight() as u64;
        p.on_ack(newly, newly_lost, una_advanced, ssthresh, pipe);
        self.prr = Some(p);
    }

    /// Whether the reduction of this episode may be undone (Linux `tcp_may_undo`): every
    /// retransmission came back as a DSACK, or the head was filled by an original.
    fn may_undo(&self, packet_delayed: bool) -> bool {
        self.undo_retrans.is_some_and(|u| u == 0 || packet_delayed)
    }

    /// Linux `tcp_process_loss` after a timeout (the undo and F-RTO, RFC 5682 §3.1 with SACK,
    /// `net.ipv4.tcp_frto = 2`):
    /// - an acknowledgement that advances the cumulative ACK undoes the timeout if it may be
    ///   undone ([`BulkSender::may_undo`], `tcp_try_undo_loss`);
    /// - with F-RTO running: (step 3.b) an acknowledgement of a segment sent before the timeout
    ///   and never retransmitted shows that not everything was lost: the timeout was spurious,
    ///   undo; (step 2.b) the first acknowledgement that advances the cumulative ACK without
    ///   completing the recovery sends new data instead of retransmissions; (step 3.a) if new
    ///   data was sent and the next acknowledgement is a duplicate or SACKs data, the loss was
    ///   real and F-RTO ends (retransmission goes on as usual).
    fn process_loss(
        &mut self,
        now: Time,
        una_advanced: bool,
        packet_delayed: bool,
        data_sacked: bool,
        orig_acked: impl Fn(u64) -> bool,
    ) {
        let Recovery::Loss { high_seq } = self.recovery else {
            return;
        };
        if una_advanced && self.may_undo(packet_delayed) {
            self.undo(now, true);
            return;
        }
        if !self.frto {
            return;
        }
        if orig_acked(self.frto_high_piece) {
            self.spurious_rtos += 1;
            self.undo(now, true);
            return;
        }
        let recovered = self.board.una_passed(high_seq);
        if self.board.next_piece() > self.frto_high_piece {
            if data_sacked || !una_advanced {
                self.frto = false; // step 3.a: the loss was real
            }
        } else if una_advanced && !recovered {
            self.recovery = Recovery::Loss {
                high_seq: self.board.next_seq(),
            };
            self.frto_high_piece = self.board.next_piece();
            if self.app_has_data(now) {
                self.frto_new_data = true; // step 2.b
            } else {
                self.frto = false;
            }
        }
    }

    /// Linux `tcp_undo_cwnd_reduction`: the controller restores its window
    /// ([`Controller::on_undo`]); with `unmark`, what was marked lost goes back in flight
    /// (each piece's latest transmission) and off the retransmission queue, and RACK judges it
    /// again (`tcp_try_undo_loss`); the sender is Open again.
    fn undo(&mut self, now: Time, unmark: bool) {
        if unmark {
            for (seq, id) in self.board.lost_latest() {
                self.board.unmark_lost(seq);
                self.retransmit.remove(&id);
            }
            self.rack.force_advance();
        }
        self.controller.on_undo(now);
        self.undos += 1;
        self.undo_retrans = None;
        self.rto_retransmits = 0;
        self.rto_head = None;
        self.frto = false;
        self.frto_new_data = false;
        self.prr = None;
        if self.recovery != Recovery::Open {
            self.recovery = Recovery::Open;
            self.rack.on_recovery_exit();
        }
    }

    /// RACK's detection pass (RFC 8985 §6.2 step 5, Linux `tcp_rack_detect_loss`): marks the
    /// packets past their deadline lost, adds them to the report and queues their pieces for
    /// retransmission; arms RACK's reordering timer for the rest. Returns whether it armed the
    /// timer, and how many it marked lost.
    fn detect_losses(&mut self, now: Time) -> (bool, u64) {
        let in_recovery = self.recovery != Recovery::Open;
        let reo_wnd = self
            .rack
            .reo_wnd(in_recovery, self.board.sacked(), self.rto.srtt());
        let mut lost = Vec::new();
        let mut wait = None;
        for seq in self.board.in_flight_seqs() {
            let e = self.board.entry(seq).expect("in flight");
            match self.rack.remaining(seq, e.pkt.send_time, reo_wnd, now) {
                None => break, // sent after RACK.xmit_ts, and so is everything later
                Some(Duration::ZERO) => lost.push(seq),
                // Sent later, so due later: the last one before RACK.xmit_ts is due last.
                Some(left) => wait = Some(left),
            }
        }
        let n = lost.len() as u64;
        for seq in lost {
            let e = self.board.mark_lost(seq, true).expect("in flight");
            self.report.packets.push(PacketResult {
                sent: e.pkt,
                receive_time: None,
                ecn: Ecn::NotEct,
            });
            if let Some(id) = e.piece.filter(|&id| !self.board.piece_delivered(id)) {
                self.retransmit.insert(id);
            }
        }
        if n > 0 && self.recovery == Recovery::Open {
            // Linux `tcp_enter_recovery` (and `tcp_init_cwnd_reduction` clears the probe;
            // `tcp_init_undo` opens the undo record).
            self.recovery = Recovery::Fast {
                high_seq: self.board.next_seq(),
            };
            self.tlp_high_seq = None;
            self.probe = None;
            self.init_undo();
            let mss = (self.mss as u64).max(1);
            self.prr = self.controller.uses_prr().then(|| {
                let prior_cwnd = self.controller.decision().cwnd.map_or(1, |c| c / mss);
                Prr::new(prior_cwnd, self.board.packets_in_flight() as u64)
            });
        }
        if let Some(left) = wait {
            self.timer = Some((now + left, Timer::Reo));
            return (true, n);
        }
        if self.timer.is_some_and(|(_, k)| k == Timer::Reo) {
            self.rearm_rto(now);
        }
        (false, n)
    }

    /// Linux `tcp_init_undo`: a reduction begins that may later be undone; the retransmissions
    /// in flight may still come back as DSACKs.
    fn init_undo(&mut self) {
        let out = self.board.retransmissions_in_flight() as i64;
        self.undo_retrans = Some(if out > 0 { out } else { -1 });
    }

    /// Recovery (fast or after an RTO) ends once the cumulative ACK passes `high_seq`; if the
    /// reduction may be undone it is (Linux `tcp_try_undo_recovery`).
    fn check_recovery_exit(&mut self, now: Time, packet_delayed: bool) {
        let (Recovery::Fast { high_seq } | Recovery::Loss { high_seq }) = self.recovery else {
            return;
        };
        if self.board.una_passed(high_seq) {
            if self.may_undo(packet_delayed) {
                self.undo(now, false);
                return;
            }
            self.recovery = Recovery::Open;
            self.rack.on_recovery_exit();
            self.prr = None;
            self.frto = false;
            self.undo_retrans = None;
        }
    }

    /// RFC 3168 §6.1.2: react to ECN-Echo at most once per window of data, without
    /// retransmitting; the next new data segment tells the receiver with CWR.
    fn on_ecn_echo(&mut self, now: Time) {
        if self.cwr_until.is_some() {
            return;
        }
        self.cwr_until = Some(self.board.next_seq());
        self.cwr_pending = true;
        self.ecn_reactions += 1;
        self.controller.on_ecn_echo(now);
    }

    /// When to call [`BulkSender::handle_timeout`].
    pub fn poll_timeout(&self) -> Option<Time> {
        [
            self.pacing_wake,
            self.timer.map(|(t, _)| t),
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
        let Some((_, kind)) = self.timer.filter(|(t, _)| *t <= now) else {
            return;
        };
        self.timer = None;
        if !self.board.outstanding() {
            return;
        }
        match kind {
            Timer::Reo => self.on_reo_timeout(now),
            Timer::Probe => self.on_probe_timeout(now),
            Timer::Rto => self.on_rto(now),
        }
    }

    /// Linux `tcp_rack_reo_timeout`: mark what is now past its deadline lost (the controller
    /// hears of it as a report without deliveries) and rearm the RTO.
    fn on_reo_timeout(&mut self, now: Time) {
        self.report.feedback_time = now;
        self.report.packets.clear();
        self.timer = Some((now, Timer::Reo));
        let recovery_before = self.recovery;
        let was_open = self.recovery == Recovery::Open;
        let (rearmed, lost) = self.detect_losses(now);
        if !self.report.packets.is_empty() {
            self.report.in_flight = self.board.in_flight_bytes();
            self.report.recovery = Some(self.loss_recovery(recovery_before));
            self.controller.on_feedback(now, &self.report);
        }
        if was_open {
            // `tcp_rack_reo_timeout`: entering recovery runs `tcp_cwnd_reduction(sk, 1, 0)`.
            self.prr_update(1, lost, false);
        }
        if !rearmed && self.timer.is_none_or(|(_, k)| k != Timer::Rto) {
            self.rearm_rto(now);
        }
    }

    /// Linux `tcp_send_loss_probe`: one probe per tail-loss episode; it is sent by the next
    /// [`BulkSender::poll_transmit`]. Without one to send, the RTO takes over.
    fn on_probe_timeout(&mut self, now: Time) {
        // Until the probe leaves, the RTO stands as `tcp_rearm_rto` leaves it.
        self.timer = Some((now, Timer::Probe));
        self.rearm_rto(now);
        if self.tlp_high_seq.is_some() {
            return; // at most one probe outstanding
        }
        self.probe = if self.app_has_data(now) {
            Some(Probe::NewData)
        } else {
            self.board
                .last_in_flight()
                .and_then(|e| e.piece)
                .filter(|&id| !self.board.piece_delivered(id))
                .map(Probe::Retransmit)
        };
    }

    /// RFC 6298 §5.4–5.7 as Linux runs them (`tcp_retransmit_timer`, `tcp_enter_loss`,
    /// `tcp_timeout_mark_lost`):
    /// - What is marked lost: the head (the lowest undelivered piece) always; any other piece
    ///   only if its last transmission left at least RACK.rtt ago (`tcp_rack_skb_timeout(tp,
    ///   skb, 0) <= 0`: Linux passes a reordering window of 0 here). Segments sent more
    ///   recently stay in flight, to be delivered, or marked by RACK later. The marked pieces
    ///   are queued for retransmission; their losses are not reported to the controller.
    /// - The controller is told with what is left in flight ([`Controller::on_rto`]; Linux sets
    ///   `cwnd = in_flight + 1`); the head is retransmitted at once, whatever the window.
    /// - The undo record opens (`tcp_init_undo`) only if this timeout reduces a window not yet
    ///   reduced: from Open, after the previous recovery completed, or after an undo.
    /// - F-RTO (RFC 5682 §3.1 step 1) runs unless the timeout interrupts a fast recovery
    ///   (`new_recovery || icsk_retransmits`): a repeated timeout on the same head runs it.
    /// - The probe is disarmed, the timer backs off (`icsk_rto << 1`) and restarts.
    fn on_rto(&mut self, now: Time) {
        self.timeouts += 1;
        let new_recovery = self.recovery == Recovery::Open;
        let fresh = match self.recovery {
            Recovery::Open => true,
            Recovery::Fast { high_seq } => self.board.una_passed(high_seq),
            Recovery::Loss { high_seq } => {
                self.board.una_passed(high_seq) || self.rto_retransmits == 0
            }
        };
        let head = self.board.head().map(|(id, _)| id);
        let rack_rtt = self.rack.rtt();
        let board = &self.board;
        let seqs: Vec<u64> = board
            .in_flight_seqs()
            .filter(|&seq| {
                let piece = board.entry(seq).and_then(|e| e.piece);
                match piece.and_then(|id| board.piece(id).map(|p| (id, p.last_sent))) {
                    Some((id, _)) if Some(id) == head => true,
                    Some((_, last)) => now - last >= rack_rtt,
                    None => true,
                }
            })
            .collect();
        for seq in seqs {
            let e = self.board.mark_lost(seq, false).expect("in flight");
            if let Some(id) = e.piece.filter(|&id| !self.board.piece_delivered(id)) {
                self.retransmit.insert(id);
            }
        }
        if fresh {
            self.init_undo();
        }
        self.frto = new_recovery || self.rto_retransmits > 0;
        self.rto_retransmits += 1;
        self.frto_new_data = false;
        self.frto_high_piece = self.board.next_piece();
        self.recovery = Recovery::Loss {
            high_seq: self.board.next_seq(),
        };
        self.prr = None;
        self.tlp_high_seq = None;
        self.probe = None;
        self.controller.on_rto(now, self.board.in_flight_bytes());
        self.rto.back_off();
        self.timer = Some((now + self.rto.rto(), Timer::Rto));
        self.rto_head = head.filter(|&id| !self.board.piece_delivered(id));
    }

    pub fn state(&self, out: &mut Vec<(&'static str, f64)>) {
        let d = self.controller.decision();
        if let Some(c) = d.cwnd {
            out.push(("cwnd_bytes", c as f64));
        }
        if let Some(p) = d.pacing_rate {
            out.push(("pacing_bps", p.bps()));
        }
        out.push(("in_flight_bytes", self.board.in_flight_bytes() as f64));
        if let Some(s) = self.rto.srtt() {
            out.push(("srtt_ms", s.as_millis_f64()));
        }
        out.push(("rto_ms", self.rto.rto().as_millis_f64()));
        out.push(("timeouts", self.timeouts as f64));
        out.push(("loss_probes", self.loss_probes as f64));
        out.push(("retransmissions", self.retransmissions as f64));
        out.push(("dsacks", self.dsacks as f64));
        out.push(("undos", self.undos as f64));
        out.push(("spurious_rtos", self.spurious_rtos as f64));
        if let Some(sb) = &self.sndbuf {
            out.push(("sndbuf_writes", sb.writes as f64));
            out.push(("sndbuf_app_limited_marks", sb.app_limited_marks as f64));
            out.push(("sndbuf_queued_bytes", self.socket_queued() as f64));
        }
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
        // RACK: 1 is not lost before 50 ms (RACK.rtt) + 12.5 ms (min_rtt / 4) after it left.
        let t = Time(62_500_000);
        assert_eq!(s.poll_timeout(), Some(t), "RACK's reordering timer");
        assert_eq!(
            s.poll_transmit(Time::from_millis(50)).unwrap().kind,
            PacketKind::Media,
            "two delivered: room for two"
        );
        s.handle_timeout(t);
        let next = s.poll_transmit(t).unwrap();
        assert_eq!(next.kind, PacketKind::Retransmission);
        assert_eq!(s.srtt(), Some(Duration::from_millis(50)));
        assert_eq!(
            s.rto(),
            Duration::from_millis(250),
            "Linux: SRTT + max(4 × 25 ms, 200 ms)"
        );
    }

    #[test]
    fn rto_declares_everything_lost_and_backs_off() {
        let mut s = BulkSender::new(Box::new(Window(3)), 1500, App::Backlogged, Time::ZERO);
        while s.poll_transmit(Time::ZERO).is_some() {}
        let t1 = Time::from_millis(1000);
        assert_eq!(
            s.poll_timeout(),
            Some(t1),
            "the probe timeout is 1 s before any RTT sample"
        );
        s.handle_timeout(t1);
        let probe = s
            .poll_transmit(t1)
            .expect("a tail loss probe, beyond the window");
        assert_eq!(probe.kind, PacketKind::Media, "new data when there is some");
        assert_eq!((s.loss_probes, s.timeouts), (1, 0));
        assert!(s.poll_transmit(t1).is_none(), "one probe");
        let t2 = Time::from_millis(2000);
        assert_eq!(
            s.poll_timeout(),
            Some(t2),
            "the RTO restarts from the probe"
        );
        s.handle_timeout(t2);
        assert_eq!(s.timeouts, 1);
        assert_eq!(s.in_flight(), 0, "everything outstanding is lost");
        assert_eq!(s.rto(), Duration::from_millis(2000));
        assert_eq!(
            s.poll_timeout(),
            Some(Time::from_millis(4000)),
            "backed off"
        );
        let resent: Vec<_> = std::iter::from_fn(|| s.poll_transmit(t2)).collect();
        assert_eq!(resent.len(), 3, "the window's worth");
        assert!(resent.iter().all(|p| p.kind == PacketKind::Retransmission));
        assert_eq!(
            resent.iter().map(|p| p.seq).collect::<Vec<_>>(),
            vec![4, 5, 6],
            "numbered anew"
        );
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
        let t = s.poll_timeout().expect("RACK's reordering timer");
        s.handle_timeout(t);
        let (p, d) = s.poll_transmit_segment(t).unwrap();
        assert_eq!(p.kind, PacketKind::Retransmission);
        assert_eq!((d.response, d.offset, d.len, p.size), (7, 1448, 1448, 1500));
        assert!(s.poll_transmit(t).is_none());
    }

    /// A fixed window that counts the app-limited marks the sender gives it.
    struct Marks(u64, std::sync::Arc<std::sync::atomic::AtomicU64>);
    impl Controller for Marks {
        fn on_feedback(&mut self, _now: Time, _r: &FeedbackReport) {}
        fn on_app_limited(&mut self, _in_flight: u64) {
            self.1.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        fn decision(&self) -> Decision {
            Decision {
                cwnd: Some(self.0 * 1500),
                ..Decision::rate_only(Rate::ZERO, None)
            }
        }
    }

    #[test]
    fn a_send_buffer_gates_writes_at_two_thirds_and_marks_each_starved_write_app_limited() {
        use std::sync::atomic::Ordering::Relaxed;
        let marks = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let app = App::Responses { header: 0 };
        // A window of 100 segments, far above the 15-segment buffer: the buffer binds.
        let mut s = BulkSender::new(Box::new(Marks(100, marks.clone())), 1500, app, Time::ZERO);
        s.set_send_buffer(crate::units::Bytes(15 * 1500)).unwrap();
        s.queue_response(1, 60 * 1500);
        // The first write fills the buffer: 15 segments, and nothing more until room frees.
        // It found nothing unsent and the window open: app-limited.
        let first = send_all(&mut s, Time::ZERO);
        assert_eq!(first.len(), 15);
        assert_eq!(marks.load(Relaxed), 1);
        let sb = s.send_buffer().unwrap();
        assert_eq!((sb.writes, sb.app_limited_marks), (1, 1));
        // Four delivered: 11 of 15 queued, above two-thirds (10): no write.
        s.on_feedback(ms(100), &ack(0..4, &[]));
        assert!(s.poll_transmit(ms(100)).is_none());
        assert_eq!(s.send_buffer().unwrap().writes, 1);
        // The fifth brings it to two-thirds: the writer wakes and writes five segments, again
        // onto an empty queue with the window open, so again app-limited.
        s.on_feedback(ms(101), &ack(4..5, &[]));
        assert_eq!(s.send_buffer().unwrap().writes, 2);
        assert_eq!(send_all(&mut s, ms(101)).len(), 5);
        assert_eq!(marks.load(Relaxed), 2);
        // With a window smaller than the buffer the window binds, writes find data unsent, and
        // no write is app-limited.
        let marks = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let mut s = BulkSender::new(
            Box::new(Marks(5, marks.clone())),
            1500,
            App::Responses { header: 0 },
            Time::ZERO,
        );
        s.set_send_buffer(crate::units::Bytes(15 * 1500)).unwrap();
        s.queue_response(1, 60 * 1500);
        assert_eq!(
            marks.load(Relaxed),
            1,
            "the very first write finds an empty socket"
        );
        let mut now = Time::ZERO;
        let mut next = 0;
        for _ in 0..20 {
            let sent = send_all(&mut s, now);
            now += Duration::from_millis(100);
            if let (Some(a), Some(b)) = (sent.first(), sent.last()) {
                s.on_feedback(now, &ack(a.seq..b.seq + 1, &[]));
                next = b.seq + 1;
            }
        }
        assert_eq!(next, 60, "every segment of the response went out");
        assert!(s.send_buffer().unwrap().writes > 3);
        assert_eq!(
            marks.load(Relaxed),
            1,
            "later writes found a window's worth unsent"
        );
        assert!(matches!(
            s.set_send_buffer(crate::units::Bytes(100)),
            Err(SendBufferError::TooSmall(_))
        ));
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

    fn ms(v: u64) -> Time {
        Time::from_millis(v)
    }

    fn send_all(s: &mut BulkSender, now: Time) -> Vec<SentPacket> {
        std::iter::from_fn(|| s.poll_transmit(now)).collect()
    }

    #[test]
    fn a_tail_loss_is_repaired_through_a_probe_instead_of_a_timeout() {
        // Ten segments, 100 ms RTT; the last three are lost.
        let app = App::Finite { bytes: 15_000 };
        let mut s = BulkSender::new(Box::new(Window(20)), 1500, app, Time::ZERO);
        assert_eq!(send_all(&mut s, Time::ZERO).len(), 10);
        s.on_feedback(ms(100), &ack(0..7, &[]));
        // SRTT 100 ms, RTO 300 ms: the probe first, 2·SRTT + 2 ms after the ACK.
        assert_eq!(s.rto(), Duration::from_millis(300));
        assert_eq!(s.poll_timeout(), Some(ms(302)));
        s.handle_timeout(ms(302));
        let probe = s.poll_transmit(ms(302)).expect("the probe");
        assert_eq!(
            (probe.seq, probe.kind),
            (10, PacketKind::Retransmission),
            "no new data: the last segment again"
        );
        // Its acknowledgement shows RACK that 7 and 8, sent 302 ms before it, are lost.
        s.on_feedback(ms(402), &ack(10..11, &[]));
        let resent: Vec<_> = std::iter::from_fn(|| s.poll_transmit_segment(ms(402))).collect();
        let offsets: Vec<_> = resent.iter().map(|(_, d)| d.offset).collect();
        assert_eq!(
            offsets,
            vec![7 * 1500, 8 * 1500],
            "9 arrived with the probe"
        );
        assert!(resent
            .iter()
            .all(|(p, _)| p.kind == PacketKind::Retransmission));
        s.on_feedback(ms(502), &ack(11..13, &[]));
        assert_eq!(s.completed_at(), Some(ms(502)));
        assert_eq!((s.timeouts, s.loss_probes, s.retransmissions), (0, 1, 3));
        assert_eq!(s.poll_timeout(), None, "nothing outstanding, no timer");
    }

    #[test]
    fn reordering_inside_the_window_is_not_a_loss_and_a_spurious_retransmission_widens_it() {
        let mut s = BulkSender::new(Box::new(Window(10)), 1500, App::Backlogged, Time::ZERO);
        for i in 0..10 {
            assert_eq!(s.poll_transmit(ms(i)).unwrap().seq, i, "one a millisecond");
        }
        s.on_feedback(ms(100), &ack(0..2, &[]));
        // 3 arrives before 2: RACK waits RACK.rtt (100 ms) + min_rtt / 4 (24.75 ms) from 2's send.
        s.on_feedback(ms(103), &ack(3..4, &[]));
        assert_eq!(s.poll_timeout(), Some(Time(126_750_000)));
        s.on_feedback(ms(110), &ack(2..3, &[]));
        assert_eq!(s.retransmissions, 0, "2 was late, not lost");
        assert!(s.rack.reordering_seen);
        // 5 is later still: past its deadline (5 + 100 + 24.75 ms) it is retransmitted ...
        s.on_feedback(ms(104), &ack(4..5, &[]));
        s.on_feedback(ms(106), &ack(6..7, &[]));
        let t = Time(129_750_000);
        assert_eq!(s.poll_timeout(), Some(t));
        s.handle_timeout(t);
        let r = s.poll_transmit(t).unwrap();
        assert_eq!((r.seq, r.kind), (10, PacketKind::Retransmission));
        // ... then arrives, and so does its retransmission: a DSACK, the window doubles.
        s.on_feedback(ms(131), &ack(5..6, &[]));
        assert_eq!(s.reo_wnd_mult(), 1);
        s.on_feedback(ms(230), &ack(10..11, &[]));
        assert_eq!((s.dsacks, s.reo_wnd_mult()), (1, 2));
    }

    #[test]
    fn a_lost_window_and_a_lost_probe_end_in_a_timeout_and_the_sender_recovers() {
        let params: Params = toml::from_str("abc_l = 0").unwrap();
        let c = crate::cc::reno::Reno::new(parse_config("reno", &params).unwrap()).unwrap();
        let app = App::Finite { bytes: 30 * 1500 };
        let mut s = BulkSender::new(Box::new(c), 1500, app, Time::ZERO);
        assert_eq!(send_all(&mut s, Time::ZERO).len(), 10);
        s.on_feedback(ms(100), &ack(0..10, &[]));
        assert_eq!(
            send_all(&mut s, ms(100)).len(),
            20,
            "slow start doubled the window"
        );
        // The whole second window is lost (a burst at a tiny buffer), and so is the probe.
        assert_eq!(s.poll_timeout(), Some(ms(302)));
        s.handle_timeout(ms(302));
        assert_eq!(
            s.poll_transmit(ms(302)).unwrap().kind,
            PacketKind::Retransmission
        );
        assert_eq!(s.poll_timeout(), Some(ms(602)), "the RTO, from the probe");
        s.handle_timeout(ms(602));
        assert_eq!(s.timeouts, 1);
        assert_eq!(reno_cwnd(&s), 1500, "the loss window");
        assert_eq!(s.rto(), Duration::from_millis(600), "backed off");
        let (p, d) = s.poll_transmit_segment(ms(602)).unwrap();
        assert_eq!(
            (p.kind, d.offset),
            (PacketKind::Retransmission, 10 * 1500),
            "the head"
        );
        assert!(s.poll_transmit(ms(602)).is_none(), "one segment");
        let mut now = ms(602);
        let mut pending = vec![p];
        for _ in 0..20 {
            now += Duration::from_millis(100);
            let (a, b) = (pending[0].seq, pending.last().unwrap().seq);
            s.on_feedback(now, &ack(a..b + 1, &[]));
            if s.completed_at().is_some() {
                break;
            }
            pending = send_all(&mut s, now);
            assert!(!pending.is_empty(), "never stalls");
        }
        assert!(
            s.completed_at().is_some_and(|t| t < ms(1300)),
            "{:?}",
            s.completed_at()
        );
        assert_eq!(s.timeouts, 1);
        assert_eq!(
            (s.undos, s.spurious_rtos),
            (0, 0),
            "a real timeout: only retransmissions come back, nothing is undone"
        );
        assert_eq!(
            s.rto(),
            Duration::from_millis(300),
            "samples reset the backoff"
        );
    }

    fn reno_sender(app: App) -> BulkSender {
        let params: Params = toml::from_str("abc_l = 0").unwrap();
        let c = crate::cc::reno::Reno::new(parse_config("reno", &params).unwrap()).unwrap();
        BulkSender::new(Box::new(c), 1500, app, Time::ZERO)
    }

    /// A Reno sender with 20 segments in flight (sent at 100 ms, 100 ms RTT) and the probe
    /// (new data, seq 30, at 302 ms) whose acknowledgements are all held back until the RTO
    /// fires at 602 ms: everything is marked lost, the window is one segment and the head
    /// (piece 10) leaves again as seq 31.
    fn reno_after_delay_spike() -> BulkSender {
        let mut s = reno_sender(App::Backlogged);
        assert_eq!(send_all(&mut s, Time::ZERO).len(), 10);
        s.on_feedback(ms(100), &ack(0..10, &[]));
        assert_eq!(send_all(&mut s, ms(100)).len(), 20);
        s.handle_timeout(ms(302));
        assert_eq!(s.poll_transmit(ms(302)).unwrap().seq, 30, "the probe");
        assert_eq!(s.poll_timeout(), Some(ms(602)));
        s.handle_timeout(ms(602));
        assert_eq!(s.timeouts, 1);
        assert_eq!(reno_cwnd(&s), 1500, "nothing left in flight: one segment");
        let (p, d) = s.poll_transmit_segment(ms(602)).unwrap();
        assert_eq!(
            (p.seq, p.kind, d.offset),
            (31, PacketKind::Retransmission, 15_000)
        );
        s
    }

    #[test]
    fn a_timeout_in_a_delay_spike_is_undone_when_the_originals_arrive() {
        let mut s = reno_after_delay_spike();
        // The spike ends: every original arrives, the head among them (sent before the
        // retransmission: `tcp_packet_delayed`).
        s.on_feedback(ms(650), &ack(10..31, &[]));
        assert_eq!(s.undos, 1, "the window reduction is undone");
        assert!(
            reno_cwnd(&s) >= 20 * 1500,
            "back to the 20 segments before the timeout: {}",
            reno_cwnd(&s)
        );
        assert_eq!(s.recovery, Recovery::Open);
        // The needless retransmission comes back as a DSACK.
        s.on_feedback(ms(702), &ack(31..32, &[]));
        assert_eq!((s.dsacks, s.retransmissions, s.timeouts), (1, 1, 1));
    }

    #[test]
    fn f_rto_finds_a_timeout_spurious_when_data_sent_before_it_is_sacked() {
        let mut s = reno_after_delay_spike();
        // Everything but the head's original arrives: segments sent before the timeout and never
        // retransmitted are SACKed, so not everything was lost (RFC 5682 §3.1 step 3.b).
        s.on_feedback(ms(650), &ack(11..31, &[]));
        assert_eq!((s.spurious_rtos, s.undos), (1, 1));
        assert!(reno_cwnd(&s) >= 20 * 1500, "{}", reno_cwnd(&s));
        assert_eq!(s.recovery, Recovery::Open);
        // The head's retransmission completes the repair; nothing else was resent.
        s.on_feedback(ms(702), &ack(31..32, &[]));
        assert_eq!((s.retransmissions, s.timeouts, s.dsacks), (1, 1, 0));
        assert!(!s.board.disorder());
    }

    #[test]
    fn at_a_timeout_segments_sent_less_than_rack_rtt_ago_stay_in_flight() {
        let mut s = BulkSender::new(Box::new(Window(10)), 1500, App::Backlogged, Time::ZERO);
        assert_eq!(send_all(&mut s, Time::ZERO).len(), 10);
        // 0 is lost: three SACKs at 100 ms mark it (fast recovery); its retransmission (seq 10)
        // and three new segments (11..13) leave at once, and the head's RTO runs to 400 ms.
        s.on_feedback(ms(100), &ack(1..4, &[]));
        let sent = send_all(&mut s, ms(100));
        assert_eq!(sent.len(), 4);
        assert_eq!(
            (sent[0].seq, sent[0].kind),
            (10, PacketKind::Retransmission)
        );
        // Late SACKs of 4..6 (380 ms: RACK.rtt is now 380 ms) let three more leave (14..16).
        s.on_feedback(ms(380), &ack(4..7, &[]));
        assert_eq!(send_all(&mut s, ms(380)).len(), 3);
        assert_eq!(s.poll_timeout(), Some(ms(400)));
        s.handle_timeout(ms(400));
        assert_eq!(s.timeouts, 1);
        // Lost: the head (its retransmission) and 7..9, out for 400 ms. Segments 11..16, sent
        // 300 and 20 ms ago, are younger than RACK.rtt and stay in flight.
        assert_eq!(s.in_flight(), 6 * 1500);
        let resent: Vec<u64> = std::iter::from_fn(|| s.poll_transmit_segment(ms(400)))
            .map(|(p, d)| {
                assert_eq!(p.kind, PacketKind::Retransmission);
                d.offset / 1500
            })
            .collect();
        assert_eq!(
            resent,
            vec![0, 7, 8, 9],
            "the head at once, then the window's room"
        );
    }

    /// A Reno sender at 20 segments (10 sent at 0, 20 at 100 ms, 100 ms RTT) whose segment 10
    /// is lost: three SACKs at 200 ms start a fast recovery (`ssthresh` 10 segments, prior
    /// window 20, 16 in flight after the loss).
    fn reno_in_fast_recovery() -> BulkSender {
        let mut s = reno_sender(App::Backlogged);
        assert_eq!(send_all(&mut s, Time::ZERO).len(), 10);
        s.on_feedback(ms(100), &ack(0..10, &[]));
        assert_eq!(send_all(&mut s, ms(100)).len(), 20);
        s.on_feedback(ms(200), &ack(10..14, &[10]));
        assert!(matches!(s.recovery, Recovery::Fast { high_seq: 30 }));
        assert_eq!(reno_cwnd(&s), 10 * 1500, "Reno halves its window once");
        s
    }

    #[test]
    fn prr_spreads_the_reduction_and_recovery_ends_at_ssthresh() {
        let mut s = reno_in_fast_recovery();
        // RFC 6937: ceil(ssthresh · prr_delivered / RecoverFS) − prr_out = ceil(10 · 3 / 20) = 2:
        // the fast retransmit and one new segment, where an immediate cut to 10 segments with
        // 16 in flight would send nothing.
        let sent = send_all(&mut s, ms(200));
        let kinds: Vec<_> = sent.iter().map(|p| p.kind).collect();
        assert_eq!(kinds, [PacketKind::Retransmission, PacketKind::Media]);
        // Five more delivered (14..19): ceil(10 · 8 / 20) − 2 = 2, half of what was delivered.
        s.on_feedback(ms(210), &ack(14..19, &[]));
        assert_eq!(send_all(&mut s, ms(210)).len(), 2);
        // The rest and the retransmission arrive: the cumulative ACK passes the recovery point,
        // the window is `ssthresh` (Linux `tcp_end_cwnd_reduction`) and congestion avoidance
        // resumes on the same acknowledgement: 15 segments acknowledged add one to 10.
        s.on_feedback(ms(300), &ack(19..34, &[]));
        assert_eq!(s.recovery, Recovery::Open);
        assert_eq!(reno_cwnd(&s), 11 * 1500);
    }

    #[test]
    fn a_lost_retransmission_does_not_reduce_the_window_again() {
        let mut s = reno_in_fast_recovery();
        let sent = send_all(&mut s, ms(200));
        assert_eq!((sent[0].seq, sent[1].seq), (30, 31));
        // Everything but the retransmission (30) arrives; RACK marks it lost. The recovery goes
        // on (segment 10 is still missing): Linux reduces once per recovery, RFC 6675 §5 once per
        // window of data.
        s.on_feedback(ms(300), &ack(14..32, &[30]));
        assert!(matches!(s.recovery, Recovery::Fast { high_seq: 30 }));
        assert_eq!(reno_cwnd(&s), 10 * 1500, "one reduction");
        let resent = send_all(&mut s, ms(300));
        assert_eq!(
            resent[0].kind,
            PacketKind::Retransmission,
            "segment 10 again"
        );
        assert_eq!(
            resent.len(),
            10,
            "PRR below ssthresh: up to ssthresh in flight"
        );
    }

    #[test]
    fn a_loss_revealed_as_the_recovery_ends_starts_the_next_one() {
        let mut s = reno_in_fast_recovery();
        send_all(&mut s, ms(200));
        s.on_feedback(ms(300), &ack(14..30, &[]));
        // The new segment sent in the recovery (31) is lost: the acknowledgement that delivers
        // the retransmission (30) ends the recovery and reveals the loss, which is a new
        // congestion event (data sent after the recovery point): a second reduction.
        let sent = send_all(&mut s, ms(300));
        let n = sent.len() as u64;
        s.on_feedback(ms(400), &ack(30..32 + n, &[31]));
        assert!(matches!(s.recovery, Recovery::Fast { high_seq } if high_seq == 32 + n));
        assert_eq!(reno_cwnd(&s), 5 * 1500);
    }
}
