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
//! - Applications: backlogged (always data), on/off (backlogged during "on"), or a finite
//!   transfer (a short flow) that completes when all its bytes are acknowledged.
//! - Not modelled: the receive window (never limiting), handshakes, header options, ECN.

use crate::cc::Controller;
use crate::packet::{FeedbackReport, PacketKind, SendHistory, SentPacket, TransportFeedback};
use crate::units::{Duration, Time};

use crate::rto::RtoTimer;
pub use crate::rto::{RTO_INITIAL, RTO_MAX, RTO_MIN};

/// What the application gives the sender.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum App {
    /// Always has data.
    Backlogged,
    /// Has data during `on`, none during `off`, repeating from the flow's start.
    OnOff { on: Duration, off: Duration },
    /// Sends `bytes` and is done when all are acknowledged.
    Finite { bytes: u64 },
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
    /// Lost segments waiting to be retransmitted.
    retransmit_pending: u64,
    next_release: Time,
    pacing_wake: Option<Time>,
    /// End of the current off period of an on/off source, while the sender waits for it.
    app_wake: Option<Time>,
    rto: RtoTimer,
    /// RTO expiries, retransmitted segments.
    pub timeouts: u64,
    pub retransmissions: u64,
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
                _ => u64::MAX,
            },
            acked: 0,
            completed_at: None,
            retransmit_pending: 0,
            next_release: start,
            pacing_wake: None,
            // The first segments go out at the start.
            app_wake: Some(start),
            rto: RtoTimer::default(),
            timeouts: 0,
            retransmissions: 0,
        }
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
        self.pacing_wake = None;
        self.app_wake = None;
        let retransmit = self.retransmit_pending > 0;
        if self.completed_at.is_some() {
            return None;
        }
        if !retransmit && !self.app_has_data(now) {
            self.app_wake = self.next_on(now);
            return None;
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
        if let Some(rate) = pacing {
            self.next_release = self.next_release.max(now) + rate.transmit_time(self.mss as u64);
        }
        let kind = if retransmit {
            self.retransmit_pending -= 1;
            self.retransmissions += 1;
            PacketKind::Retransmission
        } else {
            if let App::Finite { .. } = self.app {
                self.unsent = self.unsent.saturating_sub(self.mss as u64);
            }
            PacketKind::Media
        };
        let pkt = self.history.on_sent(SentPacket {
            seq: 0,
            size: self.mss,
            send_time: now,
            frame: None,
            index_in_frame: 0,
            packets_in_frame: 0,
            kind,
            in_flight: 0,
        });
        self.rto.on_send(now);
        self.controller.on_packet_sent(now, &pkt);
        Some(pkt)
    }

    /// An acknowledgement arrived.
    pub fn on_feedback(&mut self, now: Time, fb: &TransportFeedback) {
        self.history.on_feedback(now, fb, &mut self.report);
        if self.report.packets.is_empty() {
            return;
        }
        let mut newest_ack: Option<Time> = None;
        for p in &self.report.packets {
            match p.receive_time {
                Some(_) => {
                    self.acked += p.sent.size as u64;
                    newest_ack =
                        Some(newest_ack.map_or(p.sent.send_time, |t| t.max(p.sent.send_time)));
                }
                None => self.retransmit_pending += 1,
            }
        }
        if let Some(sent) = newest_ack {
            self.rto.on_rtt_sample(now - sent);
            // RFC 6298 §5.3: restart the timer when new data is acknowledged.
            self.rto.restart(now, self.history.in_flight() > 0);
        }
        if self.history.in_flight() == 0 && self.retransmit_pending == 0 {
            self.rto.stop();
        }
        self.controller.on_feedback(now, &self.report);
        if let App::Finite { bytes } = self.app {
            if self.completed_at.is_none() && self.acked >= bytes {
                self.completed_at = Some(now);
                self.rto.stop();
            }
        }
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
            let lost = self.history.in_flight().div_ceil(self.mss as u64);
            self.history.clear_in_flight();
            self.retransmit_pending += lost;
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

    #[test]
    fn a_finite_transfer_completes_when_all_bytes_are_acknowledged() {
        let mut s = BulkSender::new(
            Box::new(Window(10)),
            1500,
            App::Finite { bytes: 4000 },
            Time::ZERO,
        );
        let sent: Vec<_> = std::iter::from_fn(|| s.poll_transmit(Time::ZERO)).collect();
        assert_eq!(sent.len(), 3, "4000 bytes need three 1500-byte segments");
        s.on_feedback(Time::from_millis(30), &ack(0..3, &[]));
        assert_eq!(s.completed_at(), Some(Time::from_millis(30)));
        assert!(s.poll_transmit(Time::from_millis(30)).is_none());
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
}
