//! `rocc`: RoCC ("Robust Congestion Control"), the delay-controlling window rule from the
//! CCmatic work (Agarwal, Arun, Ray, Martins and Seshan, HotNets 2022: the paper Vidaptive cites
//! as its reference [9]), as Vidaptive (Karimi et al., arXiv 2309.16869, §4) runs it with
//! γ = 0.5.
//!
//! The rule (Vidaptive §4: "RoCC sets the congestion window to a small constant more than the
//! number of bytes received in the last (1+γ)·rtt_min interval"):
//!
//! ```text
//! cwnd = (bytes delivered in the last (1 + γ)·RTTmin) + α
//! ```
//!
//! Why it controls delay. A flow that delivers at rate r has r·(1+γ)·RTTmin + α bytes in
//! flight, so its RTT is `cwnd / r = (1+γ)·RTTmin + α/r`: the queueing delay settles at
//! γ·RTTmin + α/r whatever the link rate (Vidaptive: "RoCC aims to maintain a network queueing
//! delay of γ·rtt_min"; 20 ms at 40 ms propagation RTT and γ = 0.5). If the link slows down,
//! fewer bytes are delivered per interval and the window shrinks within (1+γ)·RTTmin; if it
//! speeds up, the window grows by the factor the delivery rate grew. From a small window the
//! rule grows by itself, geometrically, because the interval holds more than one RTT of
//! deliveries: paced at cwnd/RTTmin, cwnd ∝ e^{xt/RTTmin} with `x = e^{−x} − e^{−(2+γ)x}`,
//! ×1.26 per RTT for γ = 0.5 (×1.37 if each window left as one burst,
//! `W_{k+1} = W_k + γ·W_{k−1}`). Flows sharing a bottleneck converge to equal shares through α:
//! with a common RTT R, `r_i·R = r_i·(1+γ)·RTTmin + α` gives every flow the same `α / (R − T)`.
//! That holds when the flows agree on RTTmin; a flow that arrives while the standing queue is
//! present measures a larger RTTmin, a longer interval, and gets more (the late-comer effect of
//! every delay-based scheme whose queue does not drain).
//!
//! Constants and judgment calls. The reference is the CCmatic authors' Linux module
//! `simple_rocc` (`tcp_simple_rocc.c` in their `rocc_kernel` repository):
//! - γ = 0.5 (Vidaptive §5.1). The Linux module counts over 2·RTTmin, i.e. γ = 1.
//! - α = 2 packets: the module's `rocc_alpha` = 2 (Vidaptive only says "a small constant").
//!   The window never goes below 2 packets (`rocc_min_cwnd`).
//! - RTTmin is the smallest RTT sample since the flow started (Vidaptive: "the minimum observed
//!   RTT"; the module keeps the smallest smoothed RTT, never expired). Samples are taken per
//!   acknowledged packet (`rtt_window.rs`).
//! - "Bytes received in the interval" is counted by receive time, on the receiver's clock: the
//!   packets whose arrival lies within (1+γ)·RTTmin before the newest arrival reported. With
//!   per-packet ACKs this is the module's count of packets acknowledged in the interval; with
//!   batched video feedback it stays exact where ACK-arrival times would lump a report's
//!   packets together. The module approximates the interval with 16 buckets of RTTmin/4; here
//!   it is exact.
//! - Application-limited intervals (module: "do not decrease cwnd if app limited"): a smaller
//!   window is applied only if at least one packet delivered in the interval left with a full
//!   window (no room for another full packet, as Linux `tcp_is_cwnd_limited`); otherwise the
//!   delivery count measured the application, not the path, and the window is kept. The module
//!   reads the socket's own mark (`rs->is_app_limited`: the write queue ran empty), which a
//!   sans-IO controller cannot see. Inferring it from gaps between sends (`delivery_rate.rs`)
//!   would also read the pauses that RoCC's own shrinking window causes as application pauses;
//!   the window-full test does not depend on timing.
//! - Pacing at `cwnd / RTTmin` (the module's rate): faster than the delivery rate, so the window
//!   binds. RoCC ignores losses (an earlier module cut the pacing rate when more than 1/16 of
//!   the packets were lost, "not CCAC approved"; `simple_rocc` has it commented out).
//! - Before the first RTT sample the window is the initial 10 packets (RFC 6928) and unpaced.
//!   A retransmission timeout sets the 2-packet minimum; the next acknowledgement recomputes the
//!   window from the delivery history.
//!
//! The encoder target is `cwnd / srtt` (Vidaptive §3.2's CC-Rate), with srtt the smoothed time
//! a packet holds its place in the window, `feedback arrival − send` (RFC 6298 EWMA, 333 ms
//! before the first sample as RFC 9002 §6.2.2): the ordinary srtt with per-packet ACKs, and the
//! rate the window actually carries with batched video feedback (see `copa.rs`).

use super::copa::WINDOW_FEEDBACK;
use super::params::controller_config;
use super::reno::tcp_param_doc;
use super::reno::{check_window, default_initial_cwnd, default_mss, Rtt};
use super::rtt_window::{mean_held, rtt_samples, RttSample};
use super::{
    boxed, build_fn, parse_config, Controller, ControllerContext, ControllerError, ControllerInfo,
};
use super::{Decision, Params};
use crate::packet::{FeedbackReport, SentPacket};
use crate::units::{Bytes, Duration, Rate, Time};
use std::collections::VecDeque;

/// Smallest window in packets (Linux module `rocc_min_cwnd`).
const MIN_CWND_PACKETS: u64 = 2;

controller_config! {
    /// RoCC's parameters.
    pub struct RoccConfig {
        /// interval (1+gamma)*RTTmin; the queueing delay settles near gamma*RTTmin
        ///
        /// γ; 0.5 as in Vidaptive §5.1.
        pub gamma: f64 = 0.5,
        /// packets added to the delivered bytes
        ///
        /// α; 2 as the Linux module's `rocc_alpha`.
        pub alpha: f64 = 2.0,
        #[doc = tcp_param_doc!(mss)]
        ///
        /// Also the packet of the α and minimum-window units.
        pub mss: Bytes = default_mss(),
        #[doc = tcp_param_doc!(initial_cwnd)]
        ///
        /// The window before the first RTT sample.
        pub initial_cwnd: u32 = default_initial_cwnd(),
    }
}

pub struct Rocc {
    gamma: f64,
    mss: u64,
    alpha_bytes: u64,
    cwnd: u64,
    rtt: Rtt,
    /// Smoothed `feedback − send` (the time a packet holds its place in the window).
    held: Rtt,
    min_rtt: Option<Duration>,
    /// Delivered packets: receive time (receiver clock), bytes, sent with a full window.
    history: VecDeque<(Time, u64, bool)>,
    /// Bytes, and packets sent with a full window, in `history`.
    delivered_in_window: u64,
    window_limited_in_window: usize,
    newest_receive: Option<Time>,
    /// Packets in flight: sequence number, sent with a full window.
    sent_full: VecDeque<(u64, bool)>,
    samples: Vec<RttSample>,
}

impl Rocc {
    pub fn new(cfg: RoccConfig) -> Result<Rocc, String> {
        check_window(cfg.mss, cfg.initial_cwnd)?;
        if !(cfg.gamma > 0.0 && cfg.gamma <= 10.0) {
            return Err(format!("gamma must be in (0, 10], got {}", cfg.gamma));
        }
        if !(cfg.alpha >= 0.0 && cfg.alpha <= 1000.0) {
            return Err(format!(
                "alpha must be 0 to 1000 packets, got {}",
                cfg.alpha
            ));
        }
        Ok(Rocc {
            gamma: cfg.gamma,
            mss: cfg.mss.0,
            alpha_bytes: (cfg.alpha * cfg.mss.0 as f64).round() as u64,
            cwnd: cfg.mss.0 * cfg.initial_cwnd as u64,
            rtt: Rtt::default(),
            held: Rtt::default(),
            min_rtt: None,
            history: VecDeque::new(),
            delivered_in_window: 0,
            window_limited_in_window: 0,
            newest_receive: None,
            sent_full: VecDeque::new(),
            samples: Vec::new(),
        })
    }

    /// Whether packet `seq` left with a full window (forgets it and everything before).
    fn take_window_full(&mut self, seq: u64) -> bool {
        while self.sent_full.front().is_some_and(|&(s, _)| s < seq) {
            self.sent_full.pop_front();
        }
        match self.sent_full.front() {
            Some(&(s, full)) if s == seq => {
                self.sent_full.pop_front();
                full
            }
            _ => false,
        }
    }

    /// The counting interval (1+γ)·RTTmin.
    fn interval(&self) -> Option<Duration> {
        self.min_rtt
            .map(|m| Duration((m.0 as f64 * (1.0 + self.gamma)).round() as u64))
    }
}

impl Controller for Rocc {
    fn on_packet_sent(&mut self, _now: Time, pkt: &SentPacket) {
        // No room for another full packet after this one: the window, not the application,
        // limited the sender (Linux `tcp_is_cwnd_limited`).
        let full = pkt.in_flight + self.mss > self.cwnd;
        if self.sent_full.back().is_none_or(|&(s, _)| s < pkt.seq) {
            self.sent_full.push_back((pkt.seq, full));
        }
    }

    fn on_feedback(&mut self, _now: Time, report: &FeedbackReport) {
        let mut samples = std::mem::take(&mut self.samples);
        rtt_samples(report, &mut samples);
        if let Some(h) = mean_held(&samples) {
            self.held.on_sample(h);
        }
        for s in &samples {
            self.rtt.on_sample(s.rtt);
            self.min_rtt = Some(self.min_rtt.map_or(s.rtt, |m| m.min(s.rtt)));
            self.newest_receive = Some(
                self.newest_receive
                    .map_or(s.received, |t| t.max(s.received)),
            );
            let full = self.take_window_full(s.seq);
            self.history.push_back((s.received, s.size as u64, full));
            self.delivered_in_window += s.size as u64;
            self.window_limited_in_window += full as usize;
        }
        let delivered_now = !samples.is_empty();
        self.samples = samples;
        let (Some(interval), Some(newest)) = (self.interval(), self.newest_receive) else {
            return;
        };
        // The interval only shrinks (RTTmin never grows), so what leaves it never returns.
        while let Some(&(t, bytes, full)) = self.history.front() {
            if t + interval > newest {
                break;
            }
            self.history.pop_front();
            self.delivered_in_window -= bytes;
            self.window_limited_in_window -= full as usize;
        }
        if !delivered_now {
            return;
        }
        let mut cwnd = self.delivered_in_window + self.alpha_bytes;
        if self.window_limited_in_window == 0 && cwnd < self.cwnd {
            cwnd = self.cwnd;
        }
        self.cwnd = cwnd.max(MIN_CWND_PACKETS * self.mss);
    }

    fn on_rto(&mut self, _now: Time, _in_flight: u64) {
        self.cwnd = MIN_CWND_PACKETS * self.mss;
        self.sent_full.clear();
    }

    fn decision(&self) -> Decision {
        let target = Rate(self.cwnd as f64 * 8.0 / self.held.srtt_or_initial().as_secs_f64());
        let pacing = self
            .min_rtt
            .map(|m| Rate(self.cwnd as f64 * 8.0 / m.as_secs_f64().max(1e-9)));
        let mut d = Decision::rate_only(target, pacing);
        d.cwnd = Some(self.cwnd);
        d
    }

    fn state(&self, out: &mut Vec<(&'static str, f64)>) {
        let ms = |d: Option<Duration>| d.map_or(f64::NAN, |d| d.as_millis_f64());
        let mss = self.mss as f64;
        out.push(("cwnd_packets", self.cwnd as f64 / mss));
        out.push(("srtt_ms", ms(self.rtt.srtt)));
        out.push(("held_rtt_ms", ms(self.held.srtt)));
        out.push(("min_rtt_ms", ms(self.min_rtt)));
        out.push(("interval_ms", ms(self.interval())));
        out.push((
            "delivered_in_interval_packets",
            self.delivered_in_window as f64 / mss,
        ));
        out.push((
            "app_limited",
            (self.window_limited_in_window == 0) as u8 as f64,
        ));
    }
}

pub fn info() -> ControllerInfo {
    ControllerInfo {
        name: "rocc".into(),
        summary: "RoCC (CCmatic, as in Vidaptive): cwnd = bytes delivered in the last \
                  (1+gamma)*RTTmin + alpha."
            .into(),
        params: RoccConfig::param_docs(),
        feedback: WINDOW_FEEDBACK,
        media: Default::default(),
        build: build_fn(build),
    }
}

fn build(
    params: &Params,
    _ctx: &ControllerContext,
) -> Result<Box<dyn Controller>, ControllerError> {
    let config: RoccConfig = parse_config("rocc", params)?;
    boxed("rocc", Rocc::new(config))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::delivery_rate::testpath::Path;
    use crate::packet::{PacketKind, PacketResult};

    const MSS: u64 = 1500;

    fn rocc(params: &str) -> Rocc {
        let p: Params = toml::from_str(params).unwrap();
        Rocc::new(parse_config("rocc", &p).unwrap()).unwrap()
    }

    use crate::cc::test_support::signal as get;

    /// Packets 0–3 leave with room in the window (the application had no more); later ones
    /// with a full window.
    fn packet(seq: u64, t_ms: u64) -> SentPacket {
        SentPacket {
            seq,
            size: 1500,
            send_time: Time::from_millis(t_ms),
            frame: None,
            index_in_frame: 0,
            packets_in_frame: 0,
            kind: PacketKind::Media,
            in_flight: if seq < 4 { 1500 } else { 1_000_000 },
        }
    }

    #[test]
    fn the_window_is_what_arrived_in_the_last_one_and_a_half_min_rtts_plus_two_packets() {
        // One packet every 10 ms, 20 ms each way: RTTmin = 40 ms, interval 60 ms, and every
        // acknowledgement sees the arrivals of (newest − 60 ms, newest]: six packets.
        let mut c = rocc("");
        let mut cwnd = vec![];
        for k in 0..20u64 {
            if k >= 4 {
                let sent = packet(k - 4, 10 * (k - 4));
                let now = Time::from_millis(10 * k);
                let r = FeedbackReport {
                    feedback_time: now,
                    packets: vec![PacketResult {
                        sent,
                        receive_time: Some(sent.send_time + Duration::from_millis(20)),
                        ecn: crate::packet::Ecn::NotEct,
                    }],
                    in_flight: 0,
                    recovery: None,
                };
                c.on_feedback(now, &r);
                cwnd.push(c.decision().cwnd.unwrap() / MSS);
            }
            c.on_packet_sent(Time::from_millis(10 * k), &packet(k, 10 * k));
        }
        assert_eq!(get(&c, "min_rtt_ms"), 40.0);
        assert_eq!(get(&c, "interval_ms"), 60.0);
        // Packets 0–3 left with room in the window: while the interval holds only them it is
        // application limited and the smaller window (1 to 4 packets + 2) is not applied; the
        // initial 10 packets stay. Packet 4, the first sent with a full window, arrives at
        // 60 ms: the interval (0, 60] ms holds five packets, so 5 + 2; from packet 5 on six
        // packets: 6 + 2.
        assert_eq!(cwnd[..4], [10; 4]);
        assert_eq!(cwnd[4], 7);
        assert!(cwnd[5..].iter().all(|&w| w == 8), "{cwnd:?}");
        assert_eq!(get(&c, "delivered_in_interval_packets"), 6.0);
        assert_eq!(get(&c, "app_limited"), 0.0);
        // γ = 1 (the Linux module's 2·RTTmin): 80 ms, eight packets, a 10-packet window.
        let mut c = rocc("gamma = 1.0\nalpha = 2");
        for k in 0..30u64 {
            if k >= 4 {
                let sent = packet(k - 4, 10 * (k - 4));
                let now = Time::from_millis(10 * k);
                let r = FeedbackReport {
                    feedback_time: now,
                    packets: vec![PacketResult {
                        sent,
                        receive_time: Some(sent.send_time + Duration::from_millis(20)),
                        ecn: crate::packet::Ecn::NotEct,
                    }],
                    in_flight: 0,
                    recovery: None,
                };
                c.on_feedback(now, &r);
            }
            c.on_packet_sent(Time::from_millis(10 * k), &packet(k, 10 * k));
        }
        assert_eq!(c.decision().cwnd, Some(10 * MSS));
        assert_eq!(get(&c, "delivered_in_interval_packets"), 8.0);
    }

    #[test]
    fn on_a_saturated_link_the_queue_settles_at_gamma_min_rtt_plus_alpha() {
        // 12 Mbit/s (a packet per ms), 40 ms: RTTmin = 41 ms (with the packet's own
        // serialisation), interval 61.5 ms, arrivals 1 ms apart: 62 packets in any interval,
        // so cwnd = 62 + 2 = 64 packets and RTT = 64 ms: a queue of 23 ms
        // = γ·RTTmin + α/C = 20.5 + 2 ms, rounded to whole arrivals.
        let mut p = Path::new(Duration::from_millis(40), Some(Rate::from_mbps(12.0)));
        let mut c = rocc("");
        let mut late = vec![];
        p.run(&mut c, Time::from_millis(5000), |t, c, _| {
            if t > Time::from_millis(3000) {
                late.push(c.decision().cwnd.unwrap() / MSS);
            }
        });
        assert_eq!(get(&c, "min_rtt_ms"), 41.0);
        assert!(late.iter().all(|&w| w == 64), "{:?}", &late[..20]);
        let srtt = get(&c, "srtt_ms");
        assert!((srtt - 64.0).abs() < 0.5, "srtt {srtt}");
        let d = c.decision();
        assert!((d.pacing_rate.unwrap().bps() - 64.0 * 12_000.0 / 0.041).abs() < 1.0);
        assert!((d.target_bitrate.bps() - 64.0 * 12_000.0 / (srtt / 1e3)).abs() < 1e3);
    }

    #[test]
    fn from_a_small_window_the_window_grows_about_1_26_times_per_round_trip() {
        // No bottleneck, R = 100 ms. The window is what arrived in the last 1.5 R, i.e. what
        // was sent from 2.5 R to R ago, sent at the pacing rate cwnd/R. With cwnd ∝ e^{xt/R}:
        // x = e^{−x} − e^{−(2+γ)x}, so x = 0.2349 and the window grows 1.265× per round trip
        // once the window is large enough for α to add under 2 % (from about 80 packets).
        let mut p = Path::new(Duration::from_millis(100), None);
        let mut c = rocc("");
        let mut at = vec![];
        for k in 1..=14u64 {
            p.run(&mut c, Time::from_millis(100 * k + 50), |_, _, _| {});
            at.push(c.decision().cwnd.unwrap() as f64 / MSS as f64);
        }
        let ratios: Vec<f64> = at.windows(2).map(|w| w[1] / w[0]).collect();
        assert!(at[8] > 80.0, "{at:?}");
        for r in &ratios[8..] {
            assert!((r - 1.265).abs() < 0.02, "{at:?} {ratios:?}");
        }
    }

    #[test]
    fn an_application_limited_flow_keeps_its_window() {
        // A 1 Mbit/s application on 12 Mbit/s: 7.5 kB arrive per interval, less than the
        // initial 15 kB, but the interval is application limited, so the window stays.
        let mut p = Path::new(Duration::from_millis(40), Some(Rate::from_mbps(12.0)));
        p.app_rate = Some(Rate::from_mbps(1.0));
        let mut c = rocc("");
        p.run(&mut c, Time::from_millis(5000), |_, _, _| {});
        assert_eq!(c.decision().cwnd, Some(10 * MSS));
        assert_eq!(get(&c, "app_limited"), 1.0);
    }

    #[test]
    fn a_timeout_drops_to_two_packets_and_the_next_ack_recomputes() {
        let mut p = Path::new(Duration::from_millis(40), Some(Rate::from_mbps(12.0)));
        let mut c = rocc("");
        p.run(&mut c, Time::from_millis(2000), |_, _, _| {});
        p.rto(&mut c);
        assert_eq!(c.decision().cwnd, Some(2 * MSS));
        let t = p.now;
        p.run(&mut c, t + Duration::from_millis(200), |_, _, _| {});
        assert!(c.decision().cwnd.unwrap() > 2 * MSS);
    }

    #[test]
    fn parameters_are_checked() {
        let ctx = crate::cc::test_support::context();
        for bad in ["gamma = 0", "gamma = -1", "alpha = -1", "initial_cwnd = 0"] {
            let p: Params = toml::from_str(bad).unwrap();
            assert!(crate::cc::create("rocc", &p, &ctx).is_err(), "{bad}");
        }
        let p: Params = toml::from_str("gamma = 0.25\nalpha = 3").unwrap();
        assert!(crate::cc::create("rocc", &p, &ctx).is_ok());
    }
}
