//! Delivery-rate estimation: how fast the network is delivering this flow's data right now.
//!
//! The estimator follows draft-cheng-iccrg-delivery-rate-estimation-02 ("Delivery Rate
//! Estimation", Cheng, Cardwell, Hassas Yeganeh, Jacobson), as implemented in Linux
//! `net/ipv4/tcp_rate.c`. BBR's bandwidth model is built on it; any other controller that wants
//! a goodput sample per ACK can use it as well.
//!
//! The connection keeps three counters (the draft's per-connection state `C.*`):
//! - `delivered`: bytes delivered so far (acknowledged by the receiver);
//! - `delivered_time`: when `delivered` last grew (the arrival time of that ACK at the sender);
//! - `first_sent_time`: the send time of the packet most recently acknowledged, i.e. the start
//!   of the current "send phase".
//!
//! Each packet is stamped, when it is sent, with a snapshot of those counters and with whether
//! the application was the bottleneck at that moment (the draft's per-packet state `P.*`, Linux
//! `tcp_rate_skb_sent`). If nothing is in flight when a packet leaves, the flow restarts from
//! idle and both clocks are reset to the send time, so that an ACK measures only the network's
//! time.
//!
//! When an ACK (here: a feedback report) acknowledges packets, the most recently *sent* of them
//! (latest send time, then highest sequence number) defines the sample (Linux
//! `tcp_rate_skb_delivered`):
//!
//! ```text
//! delivered_in_interval = C.delivered - P.delivered
//! send_elapsed          = P.send_time - P.first_sent_time      (send phase of the window)
//! ack_elapsed           = C.delivered_time - P.delivered_time  (ACK phase of the window)
//! interval              = max(send_elapsed, ack_elapsed)
//! delivery_rate         = delivered_in_interval / interval
//! ```
//!
//! Taking the longer of the two phases makes the rate `min(send rate, ack rate)`: ACK compression
//! can make ACKs arrive faster than the bottleneck could ever deliver, but data cannot be
//! delivered faster than it was sent. A sample whose interval is shorter than the minimum RTT is
//! discarded (Linux `tcp_rate_gen`: such a sample can only come from a spurious retransmission
//! or a reneging receiver). The minimum RTT used for that check is the smallest RTT sample of
//! the last 300 s (Linux `sysctl_tcp_min_rtt_wlen` = 300 s).
//!
//! Application-limited samples (the draft's "application-limited phases"). A flow that has
//! nothing to send delivers less than the network could carry; its samples must not be read as
//! the path's capacity. The connection
//! marks an "app-limited bubble" `C.app_limited = C.delivered + in_flight` (at least 1) when the
//! sender ran out of data; every packet sent while the bubble is not yet delivered carries
//! `is_app_limited`, and the mark clears once `C.delivered` passes it. Linux learns that the
//! write queue ran empty from the socket (`tcp_rate_check_app_limited`); a sans-IO controller
//! does not see the sender's queue, so [`DeliveryRateEstimator::on_packet_sent`] infers it from
//! the send times: if the previous packet left with room in the congestion window and the next
//! one leaves more than two pacing intervals plus 1 ms later, the sender had nothing to send in
//! between and the bubble is marked then. Because `delivered + in_flight` does not change when
//! ACKs arrive, marking at the end of the gap gives the same bubble as marking at its start.
//! Controllers that know better call [`DeliveryRateEstimator::mark_app_limited`] themselves
//! (BBR does during PROBE_RTT). As in Linux (`tcp_init_sock` sets `app_limited = ~0U`), the
//! packets sent before the first delivery are app-limited.
//!
//! Units: bytes and nanoseconds; rates are returned as [`Rate`] (bits per second).

use crate::packet::{FeedbackReport, SentPacket};
use crate::units::{Duration, Rate, Time};
use std::collections::VecDeque;

/// Window of the minimum-RTT filter used to discard too-short intervals (Linux
/// `sysctl_tcp_min_rtt_wlen`, 300 s).
const MIN_RTT_WINDOW: Duration = Duration(300_000_000_000);
/// Slack added to two pacing intervals before a gap between sends counts as the application
/// running out of data.
const GAP_SLACK: Duration = Duration(1_000_000);

/// The connection's delivery state when a packet was sent (the draft's per-packet `P.*`).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Snapshot {
    send_time: Time,
    delivered: u64,
    delivered_time: Time,
    first_sent_time: Time,
    is_app_limited: bool,
    /// Bytes in flight just after the packet left, itself included (Linux `tx.in_flight`).
    tx_in_flight: u64,
    /// `C.lost` when the packet left (Linux v2alpha `tx.lost`).
    lost: u64,
}

/// A valid delivery-rate sample.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateSample {
    /// Bytes delivered over the interval.
    pub delivered: u64,
    /// `max(send_elapsed, ack_elapsed)`.
    pub interval: Duration,
    pub send_elapsed: Duration,
    pub ack_elapsed: Duration,
    /// `C.delivered` when the sampled packet was sent (BBR counts rounds with it).
    pub prior_delivered: u64,
    /// The sampled packet was sent inside an app-limited bubble.
    pub is_app_limited: bool,
    /// Bytes in flight when the sampled packet was sent, itself included (Linux
    /// `rs->tx_in_flight`, which BBRv2 compares losses with).
    pub tx_in_flight: u64,
    /// Bytes declared lost between the sampled packet's send and this report, this report's
    /// losses included (Linux v2alpha `rs->lost = tp->lost - tx.lost`).
    pub lost: u64,
}

impl RateSample {
    /// `delivered / interval`.
    pub fn rate(&self) -> Rate {
        Rate(self.delivered as f64 * 8.0 / self.interval.as_secs_f64())
    }

    /// `delivered / interval` in bytes per second (BBR's bandwidth sample).
    pub fn bytes_per_sec(&self) -> f64 {
        self.delivered as f64 / self.interval.as_secs_f64()
    }
}

/// What one feedback report meant for the connection.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct AckSummary {
    /// Bytes newly acknowledged.
    pub acked: u64,
    /// Bytes newly declared lost.
    pub lost: u64,
    /// Bytes in flight before the report (`in_flight + acked + lost`).
    pub prior_in_flight: u64,
    /// Bytes in flight after the report.
    pub in_flight: u64,
    /// Feedback arrival minus send time of the newest acknowledged packet.
    pub rtt: Option<Duration>,
    /// The delivery-rate sample, if this report produced a valid one.
    pub sample: Option<RateSample>,
    /// Linux `rs->delivered`: bytes delivered since the newest acknowledged packet was sent,
    /// whenever one of the acknowledged packets carried a send-time snapshot, even when the
    /// interval is too short for a sample (`tcp_rate_gen` sets `rs->delivered` before it
    /// discards such an interval); `None` where Linux has -1.
    pub delivered: Option<u64>,
}

/// A packet this report declared lost, with its send-time snapshot (what Linux v2alpha's
/// `skb_marked_lost` hook reads from the lost skb).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LostPacket {
    pub seq: u64,
    pub size: u64,
    /// Bytes in flight just after it was sent, itself included (`tx.in_flight`).
    pub tx_in_flight: u64,
    /// Bytes declared lost since it was sent, itself and the losses reported before it in the
    /// same report included (`tp->lost - tx.lost` when the skb is marked).
    pub lost: u64,
    /// It was sent inside an app-limited bubble.
    pub is_app_limited: bool,
}

/// What limited the sender when a packet left, for the app-limited inference.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct SendLimits {
    /// Congestion window in bytes, if any.
    pub cwnd: Option<u64>,
    /// Pacing rate, if any.
    pub pacing_rate: Option<Rate>,
}

#[derive(Debug, Clone, Copy)]
struct LastSend {
    time: Time,
    /// Earliest time the pacer would have released the next packet.
    release: Time,
    /// No full-size packet fitted in the window after this one.
    window_full: bool,
}

/// Per-packet delivery-rate sampler (draft-cheng-iccrg-delivery-rate-estimation).
#[derive(Debug, Clone)]
pub struct DeliveryRateEstimator {
    delivered: u64,
    delivered_time: Time,
    first_sent_time: Time,
    lost: u64,
    /// `C.app_limited`: 0 when not app-limited, else the end of the bubble in delivered bytes.
    app_limited_until: u64,
    min_rtt: Option<(Duration, Time)>,
    /// Snapshots of the packets in flight, in sending (and sequence) order.
    sent: VecDeque<(u64, Option<Snapshot>)>,
    last_send: Option<LastSend>,
    /// The packets the last report declared lost (with a snapshot), in report order.
    lost_packets: Vec<LostPacket>,
}

impl Default for DeliveryRateEstimator {
    fn default() -> Self {
        Self::new()
    }
}

impl DeliveryRateEstimator {
    pub fn new() -> Self {
        DeliveryRateEstimator {
            delivered: 0,
            delivered_time: Time::ZERO,
            first_sent_time: Time::ZERO,
            lost: 0,
            app_limited_until: 1,
            min_rtt: None,
            sent: VecDeque::new(),
            last_send: None,
            lost_packets: Vec::new(),
        }
    }

    /// Bytes delivered so far (`C.delivered`).
    pub fn delivered(&self) -> u64 {
        self.delivered
    }
    /// When `delivered` last grew (`C.delivered_time`, Linux `delivered_mstamp`).
    pub fn delivered_time(&self) -> Time {
        self.delivered_time
    }
    /// Bytes declared lost so far.
    pub fn lost(&self) -> u64 {
        self.lost
    }
    pub fn is_app_limited(&self) -> bool {
        self.app_limited_until != 0
    }
    /// The packets the last [`DeliveryRateEstimator::on_feedback`] declared lost, in report
    /// order (packets forgotten by a timeout are not reported again).
    pub fn lost_packets(&self) -> &[LostPacket] {
        &self.lost_packets
    }
    /// Smallest RTT sample of the last 300 s.
    pub fn min_rtt(&self) -> Option<Duration> {
        self.min_rtt.map(|(d, _)| d)
    }

    /// The sender has run out of data with `in_flight` bytes outstanding (sets the draft's
    /// `C.app_limited`).
    pub fn mark_app_limited(&mut self, in_flight: u64) {
        self.app_limited_until = (self.delivered + in_flight).max(1);
    }

    /// A packet left; `limits` are the controller's window and pacing rate at that moment.
    pub fn on_packet_sent(&mut self, now: Time, pkt: &SentPacket, limits: SendLimits) {
        let before = pkt.in_flight.saturating_sub(pkt.size as u64);
        if let Some(prev) = self.last_send {
            let interval = prev.release - prev.time;
            let gap_end = prev.release + interval + GAP_SLACK;
            if !prev.window_full && now > gap_end {
                self.mark_app_limited(before);
            }
        }
        if before == 0 {
            self.first_sent_time = now;
            self.delivered_time = now;
        }
        let snap = Snapshot {
            send_time: now,
            delivered: self.delivered,
            delivered_time: self.delivered_time,
            first_sent_time: self.first_sent_time,
            is_app_limited: self.is_app_limited(),
            tx_in_flight: pkt.in_flight,
            lost: self.lost,
        };
        if self.sent.back().is_none_or(|(s, _)| *s < pkt.seq) {
            self.sent.push_back((pkt.seq, Some(snap)));
        }
        let pace = limits
            .pacing_rate
            .filter(|r| r.bps() > 0.0)
            .map_or(Duration::ZERO, |r| r.transmit_time(pkt.size as u64));
        self.last_send = Some(LastSend {
            time: now,
            release: now + pace,
            window_full: limits
                .cwnd
                .is_some_and(|c| pkt.in_flight + pkt.size as u64 > c),
        });
    }

    fn take(&mut self, seq: u64) -> Option<Snapshot> {
        let i = self.sent.binary_search_by_key(&seq, |e| e.0).ok()?;
        let snap = self.sent[i].1.take();
        while self.sent.front().is_some_and(|e| e.1.is_none()) {
            self.sent.pop_front();
        }
        snap
    }

    /// Join a feedback report: count deliveries and losses and take a rate sample.
    pub fn on_feedback(&mut self, now: Time, report: &FeedbackReport) -> AckSummary {
        let (mut acked, mut lost) = (0u64, 0u64);
        let mut chosen: Option<(u64, Snapshot)> = None;
        self.lost_packets.clear();
        for p in &report.packets {
            let snap = self.take(p.sent.seq);
            if p.receive_time.is_none() {
                lost += p.sent.size as u64;
                if let Some(s) = snap {
                    self.lost_packets.push(LostPacket {
                        seq: p.sent.seq,
                        size: p.sent.size as u64,
                        tx_in_flight: s.tx_in_flight,
                        lost: self.lost + lost - s.lost,
                        is_app_limited: s.is_app_limited,
                    });
                }
                continue;
            }
            acked += p.sent.size as u64;
            if let Some(s) = snap {
                let newer =
                    chosen.is_none_or(|(cs, c)| (s.send_time, p.sent.seq) > (c.send_time, cs));
                if newer {
                    chosen = Some((p.sent.seq, s));
                }
            }
        }
        let rtt = if acked > 0 { report.latest_rtt() } else { None };
        if let Some(r) = rtt {
            let expired = self.min_rtt.is_some_and(|(_, t)| now - t > MIN_RTT_WINDOW);
            if expired || self.min_rtt.is_none_or(|(m, _)| r <= m) {
                self.min_rtt = Some((r, now));
            }
        }
        self.delivered += acked;
        self.lost += lost;
        if acked > 0 {
            self.delivered_time = now;
        }
        if self.app_limited_until != 0 && self.delivered > self.app_limited_until {
            self.app_limited_until = 0;
        }
        let delivered = chosen.map(|(_, s)| self.delivered - s.delivered);
        let sample = chosen.and_then(|(_, s)| {
            self.first_sent_time = s.send_time;
            let send_elapsed = s.send_time - s.first_sent_time;
            let ack_elapsed = now - s.delivered_time;
            let interval = send_elapsed.max(ack_elapsed);
            let too_short = interval.0 == 0 || self.min_rtt().is_some_and(|m| interval < m);
            (!too_short).then_some(RateSample {
                delivered: self.delivered - s.delivered,
                interval,
                send_elapsed,
                ack_elapsed,
                prior_delivered: s.delivered,
                is_app_limited: s.is_app_limited,
                tx_in_flight: s.tx_in_flight,
                lost: self.lost - s.lost,
            })
        });
        AckSummary {
            acked,
            lost,
            prior_in_flight: report.in_flight + acked + lost,
            in_flight: report.in_flight,
            rtt,
            sample,
            delivered,
        }
    }

    /// A retransmission timeout: everything in flight is forgotten and will not be reported.
    pub fn on_rto(&mut self) {
        self.sent.clear();
        self.last_send = None;
    }
}

/// A deterministic path for unit tests: a sender limited by the controller's window and pacing
/// rate (and optionally by an application rate), a FIFO bottleneck of fixed rate with no
/// buffer limit, a fixed base RTT, one acknowledgement per packet, and losses chosen by the
/// test, reported with the acknowledgement of the next delivered packet (SACK-style).
#[cfg(test)]
pub(crate) mod testpath {
    use crate::cc::Controller;
    use crate::packet::{FeedbackReport, PacketKind, PacketResult, SentPacket};
    use crate::units::{Duration, Rate, Time};
    use std::collections::VecDeque;

    type Dropper = Box<dyn FnMut(&SentPacket) -> bool>;

    pub(crate) struct Path {
        pub now: Time,
        pub base_rtt: Duration,
        /// Bottleneck rate; `None` for a pure delay.
        pub rate: Option<Rate>,
        /// Application rate; `None` for a backlogged sender.
        pub app_rate: Option<Rate>,
        pub mss: u32,
        pub dropper: Dropper,
        pub sent_bytes: u64,
        seq: u64,
        in_flight: u64,
        link_free: Time,
        next_release: Time,
        acks: VecDeque<(Time, SentPacket, Time)>,
        dropped: VecDeque<SentPacket>,
    }

    impl Path {
        pub fn new(base_rtt: Duration, rate: Option<Rate>) -> Path {
            Path {
                now: Time::ZERO,
                base_rtt,
                rate,
                app_rate: None,
                mss: 1500,
                dropper: Box::new(|_| false),
                sent_bytes: 0,
                seq: 0,
                in_flight: 0,
                link_free: Time::ZERO,
                next_release: Time::ZERO,
                acks: VecDeque::new(),
                dropped: VecDeque::new(),
            }
        }

        pub fn in_flight(&self) -> u64 {
            self.in_flight
        }

        /// Send what the controller allows now; returns when the next send may happen.
        fn send(&mut self, c: &mut dyn Controller) -> Option<Time> {
            loop {
                let d = c.decision();
                let mss = self.mss as u64;
                if d.cwnd.is_some_and(|w| self.in_flight + mss > w.max(mss)) {
                    return None;
                }
                if let Some(app) = self.app_rate {
                    let allowed = (app.bytes_in(self.now - Time::ZERO) + 0.01) as u64;
                    if self.sent_bytes + mss > allowed {
                        let t = app.transmit_time(self.sent_bytes + mss);
                        return Some(Time::ZERO + t);
                    }
                }
                if let Some(p) = d.pacing_rate.filter(|p| p.bps() > 0.0) {
                    if self.now < self.next_release {
                        return Some(self.next_release);
                    }
                    self.next_release = self.next_release.max(self.now) + p.transmit_time(mss);
                }
                self.in_flight += mss;
                self.sent_bytes += mss;
                let pkt = SentPacket {
                    seq: self.seq,
                    size: self.mss,
                    send_time: self.now,
                    frame: None,
                    index_in_frame: 0,
                    packets_in_frame: 0,
                    kind: PacketKind::Media,
                    in_flight: self.in_flight,
                };
                self.seq += 1;
                c.on_packet_sent(self.now, &pkt);
                if (self.dropper)(&pkt) {
                    self.dropped.push_back(pkt);
                    continue;
                }
                let depart = match self.rate {
                    Some(r) => self.now.max(self.link_free) + r.transmit_time(mss),
                    None => self.now,
                };
                self.link_free = depart;
                let half = Duration(self.base_rtt.0 / 2);
                self.acks
                    .push_back((depart + self.base_rtt, pkt, depart + half));
            }
        }

        /// Run until `until`, calling `on_ack` after every acknowledgement.
        pub fn run(
            &mut self,
            c: &mut dyn Controller,
            until: Time,
            mut on_ack: impl FnMut(Time, &dyn Controller, &FeedbackReport),
        ) {
            let mut report = FeedbackReport::default();
            loop {
                let wake = self.send(c);
                let next_ack = self.acks.front().map(|a| a.0);
                let next = match (wake, next_ack) {
                    (Some(a), Some(b)) => a.min(b),
                    (a, b) => match a.or(b) {
                        Some(t) => t,
                        None => return,
                    },
                };
                if next > until {
                    self.now = until;
                    return;
                }
                self.now = next;
                if next_ack != Some(next) {
                    continue;
                }
                let Some((_, pkt, recv)) = self.acks.pop_front() else {
                    return;
                };
                report.feedback_time = self.now;
                report.packets.clear();
                while self.dropped.front().is_some_and(|d| d.seq < pkt.seq) {
                    let d = self.dropped.pop_front().unwrap_or(pkt);
                    self.in_flight -= d.size as u64;
                    report.packets.push(PacketResult {
                        sent: d,
                        receive_time: None,
                        ecn: crate::packet::Ecn::NotEct,
                    });
                }
                self.in_flight -= pkt.size as u64;
                report.packets.push(PacketResult {
                    sent: pkt,
                    receive_time: Some(recv),
                    ecn: crate::packet::Ecn::NotEct,
                });
                report.in_flight = self.in_flight;
                c.on_feedback(self.now, &report);
                on_ack(self.now, c, &report);
            }
        }

        /// A retransmission timeout: everything in flight is forgotten.
        pub fn rto(&mut self, c: &mut dyn Controller) {
            self.acks.clear();
            self.dropped.clear();
            self.in_flight = 0;
            c.on_rto(self.now, 0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::testpath::Path;
    use super::*;
    use crate::cc::{Controller, Decision};

    /// A fixed window around the estimator, recording every sample.
    struct Probe {
        est: DeliveryRateEstimator,
        cwnd: u64,
        samples: Vec<(Time, RateSample)>,
    }
    impl Controller for Probe {
        fn on_packet_sent(&mut self, now: Time, pkt: &SentPacket) {
            let limits = SendLimits {
                cwnd: Some(self.cwnd),
                pacing_rate: None,
            };
            self.est.on_packet_sent(now, pkt, limits);
        }
        fn on_rto(&mut self, _now: Time, _in_flight: u64) {
            self.est.on_rto();
        }
        fn on_feedback(&mut self, now: Time, report: &FeedbackReport) {
            if let Some(s) = self.est.on_feedback(now, report).sample {
                self.samples.push((now, s));
            }
        }
        fn decision(&self) -> Decision {
            let mut d = Decision::rate_only(Rate::ZERO, None);
            d.cwnd = Some(self.cwnd);
            d
        }
    }

    fn probe(cwnd_packets: u64) -> Probe {
        Probe {
            est: DeliveryRateEstimator::new(),
            cwnd: cwnd_packets * 1500,
            samples: vec![],
        }
    }

    #[test]
    fn samples_on_a_saturated_link_equal_the_link_rate() {
        // 12 Mbit/s: one 1500-byte packet per ms; 40 ms base RTT, so the BDP is 40 packets and
        // a 60-packet window keeps a standing queue of 20: the link never idles.
        let mut p = Path::new(Duration::from_millis(40), Some(Rate::from_mbps(12.0)));
        let mut c = probe(60);
        p.run(&mut c, Time::from_millis(1000), |_, _, _| {});
        // The first window was sent in one burst at t = 0 from an idle connection: its samples
        // include the first RTT and are low, and they are app-limited (before first delivery).
        let (_, first) = c.samples[0];
        assert!(first.is_app_limited);
        assert_eq!(first.delivered, 1500);
        assert_eq!(first.ack_elapsed, Duration::from_millis(41));
        // The second window (sent one per ACK from 41 ms) still has the idle start in its send
        // phase: packet 60 + j, sent at 41 + j ms, follows packet j sent at 0. From the third
        // window on (ACKs after 160 ms) every sample is exactly the link rate.
        let second = c
            .samples
            .iter()
            .find(|(t, _)| *t == Time::from_millis(151))
            .unwrap()
            .1;
        assert_eq!(second.send_elapsed, Duration::from_millis(91));
        let steady: Vec<_> = c
            .samples
            .iter()
            .filter(|(t, _)| *t > Time::from_millis(160))
            .collect();
        assert!(steady.len() > 800, "one sample per ACK: {}", steady.len());
        for (t, s) in steady {
            assert!(
                (s.rate().bps() - 12e6).abs() < 1e-3,
                "at {t:?}: {:?} {}",
                s,
                s.rate()
            );
            assert!(!s.is_app_limited);
            // The interval spans one window of ACKs: 60 packets at 1 ms each.
            assert_eq!(s.interval, Duration::from_millis(60));
        }
    }

    fn pkt(seq: u64, ms: u64, in_flight_packets: u64) -> SentPacket {
        SentPacket {
            seq,
            size: 1500,
            send_time: Time::from_millis(ms),
            frame: None,
            index_in_frame: 0,
            packets_in_frame: 0,
            kind: crate::packet::PacketKind::Media,
            in_flight: in_flight_packets * 1500,
        }
    }

    fn ack(now_ms: u64, pkts: &[SentPacket], in_flight: u64) -> FeedbackReport {
        FeedbackReport {
            feedback_time: Time::from_millis(now_ms),
            packets: pkts
                .iter()
                .map(|p| crate::packet::PacketResult {
                    sent: *p,
                    receive_time: Some(p.send_time),
                    ecn: crate::packet::Ecn::NotEct,
                })
                .collect(),
            in_flight,
            recovery: None,
        }
    }

    #[test]
    fn ack_compression_cannot_raise_the_rate_above_the_send_rate() {
        let mut e = DeliveryRateEstimator::new();
        let limits = SendLimits {
            cwnd: Some(15_000),
            pacing_rate: None,
        };
        // Window A: packets 0..9 sent 1 ms apart from idle, each acknowledged 50 ms later.
        let a: Vec<_> = (0..10).map(|k| pkt(k, k, k + 1)).collect();
        let mut b = vec![];
        for p in &a {
            e.on_packet_sent(p.send_time, p, limits);
        }
        for k in 0..10u64 {
            let now = 50 + k;
            e.on_feedback(
                Time::from_millis(now),
                &ack(now, &a[k as usize..k as usize + 1], 0),
            );
            // Window B: one packet per ACK.
            let p = pkt(10 + k, now, 10);
            e.on_packet_sent(p.send_time, &p, limits);
            b.push(p);
        }
        // Window B's ten ACKs arrive compressed into one report at 105 ms.
        let s = e.on_feedback(Time::from_millis(105), &ack(105, &b, 0));
        let r = s.sample.unwrap();
        assert_eq!(r.delivered, 15_000);
        assert_eq!(
            r.ack_elapsed,
            Duration::from_millis(46),
            "105 ms - the ACK at 59 ms"
        );
        assert_eq!(
            r.send_elapsed,
            Duration::from_millis(50),
            "59 ms - packet 9 sent at 9 ms"
        );
        assert_eq!(
            r.interval, r.send_elapsed,
            "the longer phase: the send rate is the bound"
        );
        assert!((r.rate().bps() - 2.4e6).abs() < 1e-6, "{}", r.rate());
        assert_eq!(s.rtt, Some(Duration::from_millis(46)));
        assert!(!r.is_app_limited);
    }

    #[test]
    fn an_application_limited_sender_marks_its_samples() {
        // The application produces 6 Mbit/s on a 12 Mbit/s link with a window that never
        // limits: every gap between sends is an app-limited bubble.
        let mut p = Path::new(Duration::from_millis(40), Some(Rate::from_mbps(12.0)));
        p.app_rate = Some(Rate::from_mbps(6.0));
        let mut c = probe(1000);
        p.run(&mut c, Time::from_millis(1000), |_, _, _| {});
        let steady: Vec<_> = c
            .samples
            .iter()
            .filter(|(t, _)| *t > Time::from_millis(100))
            .collect();
        assert!(steady.len() > 400);
        for (_, s) in steady {
            assert!(s.is_app_limited);
            assert!((s.rate().bps() - 6e6).abs() < 1e-3, "{}", s.rate());
        }
        // The same sender with a 10-packet window is window-limited, never app-limited.
        let mut p = Path::new(Duration::from_millis(40), Some(Rate::from_mbps(12.0)));
        let mut c = probe(10);
        p.run(&mut c, Time::from_millis(1000), |_, _, _| {});
        assert!(c
            .samples
            .iter()
            .filter(|(t, _)| *t > Time::from_millis(100))
            .all(|(_, s)| !s.is_app_limited));
    }

    #[test]
    fn samples_and_lost_packets_carry_inflight_at_send_and_losses_since() {
        // What BBRv2's loss-rate test reads (Linux rs->tx_in_flight, rs->lost, and the lost
        // skb's tx.in_flight / tp->lost - tx.lost in skb_marked_lost).
        struct Losses {
            est: DeliveryRateEstimator,
            seen: Vec<(Vec<LostPacket>, Option<RateSample>)>,
        }
        impl Controller for Losses {
            fn on_packet_sent(&mut self, now: Time, pkt: &SentPacket) {
                self.est.on_packet_sent(now, pkt, SendLimits::default());
            }
            fn on_feedback(&mut self, now: Time, report: &FeedbackReport) {
                let s = self.est.on_feedback(now, report);
                self.seen.push((self.est.lost_packets().to_vec(), s.sample));
            }
            fn decision(&self) -> Decision {
                let mut d = Decision::rate_only(Rate::ZERO, None);
                d.cwnd = Some(15_000);
                d
            }
        }
        let mut p = Path::new(Duration::from_millis(40), Some(Rate::from_mbps(12.0)));
        p.dropper = Box::new(|pkt| pkt.seq == 5 || pkt.seq == 6);
        let mut c = Losses {
            est: DeliveryRateEstimator::new(),
            seen: vec![],
        };
        p.run(&mut c, Time::from_millis(200), |_, _, _| {});
        // The first window left in one burst: packet k with k + 1 packets in flight.
        let (lost, sample) = c.seen.iter().find(|x| !x.0.is_empty()).unwrap();
        let pk = |n: u64| n * 1500;
        assert_eq!(lost.len(), 2, "5 and 6, reported with the ACK of 7");
        assert_eq!(
            (lost[0].seq, lost[0].tx_in_flight, lost[0].lost),
            (5, pk(6), pk(1))
        );
        assert_eq!(
            (lost[1].seq, lost[1].tx_in_flight, lost[1].lost),
            (6, pk(7), pk(2))
        );
        let s = sample.unwrap();
        assert_eq!(
            (s.tx_in_flight, s.lost),
            (pk(8), pk(2)),
            "the sample of packet 7"
        );
        // A later sample counts only the losses since its packet was sent.
        let later = c.seen.last().unwrap().1.unwrap();
        assert_eq!(later.lost, 0, "no loss after the first window");
        assert!(c.seen.last().unwrap().0.is_empty());
    }

    #[test]
    fn losses_are_counted_and_an_rto_forgets_what_was_in_flight() {
        let mut p = Path::new(Duration::from_millis(40), Some(Rate::from_mbps(12.0)));
        p.dropper = Box::new(|pkt| pkt.seq == 5 || pkt.seq == 6);
        let mut c = probe(10);
        p.run(&mut c, Time::from_millis(200), |_, _, _| {});
        assert_eq!(c.est.lost(), 3000);
        assert_eq!(c.est.delivered(), p.sent_bytes - 3000 - p.in_flight());
        p.rto(&mut c);
        assert!(c.est.sent.is_empty());
        assert_eq!(c.est.min_rtt(), Some(Duration::from_millis(41)));
    }
}
