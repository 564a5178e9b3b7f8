//! `prague`: TCP Prague, the scalable congestion control of L4S (RFC 9330 §4.3; Briscoe et al.,
//! "Implementing the 'Prague Requirements' for L4S", Netdev 0x13, 2019; the L4S team's
//! `net/ipv4/tcp_prague.c`, which builds on DCTCP, RFC 8257).
//!
//! # The idea
//!
//! A classic TCP halves its window on a congestion signal, so the queue must absorb half a
//! window's worth of bursts and its rate goes as `1/√p`. A *scalable* sender reduces in proportion
//! to how much of its traffic was marked: a queue that marks immediately, at a shallow threshold
//! (DualPI2's L queue marks past 1 ms), then gives it a steady stream of small signals, about two
//! per round trip whatever the rate, and the queue stays nearly empty. Prague is DCTCP made safe
//! for the Internet: it uses ECT(1) to reach an L4S queue and Accurate ECN feedback to count marks.
//!
//! # The algorithm
//!
//! - **Marked fraction** (RFC 8257 §3.3, `prague_update_alpha()`): over each round trip (from a
//!   packet sent to its acknowledgement) the sender counts the bytes acknowledged and those
//!   acknowledged CE-marked, `F = marked / acked`, and folds it into an average:
//!   `α ← (1 − g)·α + g·F`, with `g = 1/16`. `α` starts at 1, so that the first marks of a new
//!   flow halve its window as a classic flow's would (`PRAGUE_MAX_ALPHA` at init).
//! - **Reduction** (RFC 8257 §3.3, `prague_enter_cwr()`): in a round trip in which a mark
//!   arrived, once: `cwnd ← cwnd · (1 − α/2)` and `ssthresh ← cwnd`. A flow marked on every
//!   packet halves like Reno; one marked on 2 % of its packets (α ≈ 0.02) gives up 1 %.
//!   The window does not grow for the rest of that round (Linux's CWR state).
//! - **Increase**: slow start below `ssthresh` (the first mark ends it), then one segment per
//!   round trip (Reno's additive increase; RFC 8257 §3.3 keeps it).
//! - **Loss** falls back to classic behaviour (RFC 9330 §4.3's "Reno-friendly on loss"): the
//!   window halves as Reno's does, once per window of losses; a timeout collapses it to one
//!   segment. Prague's L4S queue rarely drops, so this is the path for a classic bottleneck.
//! - **Pacing** is on (Linux Prague requires it): `cwnd/srtt` times 2 while `cwnd < ssthresh/2`
//!   and 1.2 after, Linux's `tcp_update_pacing_rate`.
//!
//! The per-packet marks come from the flow's L4S feedback (`ecn = "l4s"` on a TCP flow: ECT(1)
//! data, Accurate ECN's per-packet codepoints, see [`crate::tcp`]); Prague reads them from
//! [`PacketResult::ecn`](crate::packet::PacketResult) and has no use for ECN-Echo.
//!
//! # Left out
//!
//! Linux Prague's RTT independence (scaling the additive increase for flows whose RTT is below
//! a 25 ms target, so that short-RTT flows do not take more than their share), its fractional
//! window below 2 segments and its classic-ECN-AQM detection are not modelled: in a mix of flows
//! with different RTTs, the shorter-RTT Prague flow takes more, as DCTCP's would.

use super::params::controller_config;
use super::reno::TCP_FEEDBACK;
use super::reno::{check_window, default_initial_cwnd, default_mss, tcp_param_doc, Window};
use super::{boxed, build_fn, parse_config, Controller, ControllerContext, ControllerError};
use super::{ControllerInfo, Decision, Params};
use crate::packet::{FeedbackReport, SentPacket};
use crate::units::{Bytes, Time};

controller_config! {
    /// TCP Prague's parameters.
    pub struct PragueConfig {
        #[doc = tcp_param_doc!(mss)]
        pub mss: Bytes = default_mss(),
        #[doc = tcp_param_doc!(initial_cwnd)]
        pub initial_cwnd: u32 = default_initial_cwnd(),
        #[doc = tcp_param_doc!(pacing)]
        ///
        /// On: Linux Prague paces its packets.
        pub pacing: bool = true,
        /// gain of the marked-fraction average (RFC 8257 3.3)
        ///
        /// g = 1/16, `prague_shift_g = 4` (DCTCP's `dctcp_shift_g`).
        pub g: f64 = 1.0 / 16.0,
    }
}

pub struct Prague {
    w: Window,
    g: f64,
    /// The average marked fraction, from 1.
    alpha: f64,
    /// Bytes acknowledged, and of those CE-marked, in the current round.
    acked: u64,
    marked: u64,
    /// The round ends when a packet numbered from here on is acknowledged.
    round_end: u64,
    /// Reductions for CE marks.
    pub reductions: u64,
}

impl Prague {
    pub fn new(config: PragueConfig) -> Result<Prague, String> {
        check_window(config.mss, config.initial_cwnd)?;
        if !(config.g > 0.0 && config.g <= 1.0) {
            return Err(format!("g must be in (0, 1], got {}", config.g));
        }
        Ok(Prague {
            w: Window::new(config.mss, config.initial_cwnd, config.pacing),
            g: config.g,
            alpha: 1.0,
            acked: 0,
            marked: 0,
            round_end: 0,
            reductions: 0,
        })
    }

    /// The average marked fraction.
    pub fn alpha(&self) -> f64 {
        self.alpha
    }
}

impl Controller for Prague {
    fn on_packet_sent(&mut self, now: Time, pkt: &SentPacket) {
        self.w.on_packet_sent(now, pkt);
    }

    fn on_feedback(&mut self, _now: Time, report: &FeedbackReport) {
        let ce: u64 = report
            .received()
            .filter(|p| p.is_ce())
            .map(|p| p.sent.size as u64)
            .sum();
        let a = self.w.on_report(report);
        self.acked += a.acked;
        self.marked += ce;
        // End of a round: fold its marked fraction into alpha.
        if a.newest_acked_seq.is_some_and(|s| s >= self.round_end) {
            if self.acked > 0 {
                let f = self.marked as f64 / self.acked as f64;
                self.alpha += self.g * (f - self.alpha);
            }
            self.acked = 0;
            self.marked = 0;
            self.round_end = self.w.episodes.next_seq();
        }
        if a.episode.new_episode {
            // A loss: classic halving (Reno's ssthresh).
            let ss = self.w.cwnd / 2;
            self.w.reduce_to(ss);
        } else if ce > 0 && self.w.episodes.on_ecn_echo() {
            // Once per round trip, in proportion to the marked fraction.
            let cut = (self.w.cwnd as f64 * self.alpha / 2.0) as u64;
            let ss = self.w.cwnd.saturating_sub(cut);
            self.w.reduce_to(ss);
            self.reductions += 1;
        }
        self.w.reno_growth(a.acked, Some(2 * self.w.mss));
    }

    fn on_rto(&mut self, _now: Time, in_flight: u64) {
        if self.w.episodes.on_rto() {
            self.w.ssthresh = (self.w.cwnd / 2).max(2 * self.w.mss);
        }
        self.w.collapse(in_flight);
    }

    fn on_idle_restart(&mut self, _now: Time) {
        self.w.restart_after_idle();
    }

    fn decision(&self) -> Decision {
        self.w.decision()
    }

    fn state(&self, out: &mut Vec<(&'static str, f64)>) {
        self.w.state(out);
        out.push(("alpha", self.alpha));
    }
}

pub fn info() -> ControllerInfo {
    ControllerInfo {
        name: "prague".into(),
        summary: "TCP Prague, L4S's scalable TCP (DCTCP's reduction by half the marked share per \
                  RTT; needs ecn = \"l4s\")."
            .into(),
        params: PragueConfig::param_docs(),
        feedback: TCP_FEEDBACK,
        media: Default::default(),
        build: build_fn(build),
    }
}

fn build(
    params: &Params,
    _ctx: &ControllerContext,
) -> Result<Box<dyn Controller>, ControllerError> {
    let config: PragueConfig = parse_config("prague", params)?;
    boxed("prague", Prague::new(config))
}

#[cfg(test)]
mod tests {
    use super::super::reno::CaState;
    use super::*;
    use crate::packet::{Ecn, PacketKind, PacketResult};
    use crate::units::Duration;

    const MSS: u64 = 1500;

    fn prague() -> Prague {
        Prague::new(parse_config("prague", &Params::new()).unwrap()).unwrap()
    }

    /// Whether the window is held after a reduction for marks (Linux's CWR state).
    fn in_cwr(p: &Prague) -> bool {
        p.w.episodes.state == CaState::Cwr
    }

    /// A full-size data segment sent at `t`, the `i`-th of a burst.
    fn segment(seq: u64, t: Time, i: u64) -> SentPacket {
        SentPacket {
            seq,
            size: MSS as u32,
            send_time: t,
            frame: None,
            index_in_frame: 0,
            packets_in_frame: 0,
            kind: PacketKind::Media,
            in_flight: (i + 1) * MSS,
        }
    }

    /// Send `n` packets from `seq` at `t`; 20 ms later each is acknowledged by its own report,
    /// the first `marked` of them CE. Returns the time of the last report.
    fn round(c: &mut Prague, seq: &mut u64, t: Time, n: u64, marked: u64) -> Time {
        let mut sent = Vec::new();
        for i in 0..n {
            let p = segment(*seq, t, i);
            c.on_packet_sent(t, &p);
            sent.push(p);
            *seq += 1;
        }
        let at = t + Duration::from_millis(20);
        for (i, p) in sent.iter().enumerate() {
            let report = FeedbackReport {
                feedback_time: at,
                packets: vec![PacketResult {
                    sent: *p,
                    receive_time: Some(at),
                    ecn: if (i as u64) < marked {
                        Ecn::Ce
                    } else {
                        Ecn::Ect1
                    },
                }],
                in_flight: (n - 1 - i as u64) * MSS,
                recovery: None,
            };
            c.on_feedback(at, &report);
        }
        at
    }

    fn cwnd(c: &Prague) -> u64 {
        c.decision().cwnd.unwrap() / MSS
    }

    #[test]
    fn the_first_mark_halves_the_window_and_ends_slow_start() {
        let mut c = prague();
        let (mut seq, mut t) = (0, Time::ZERO);
        t = round(&mut c, &mut seq, t, 10, 0);
        assert_eq!(cwnd(&c), 20, "slow start doubles");
        assert!(
            c.alpha() > 0.8,
            "alpha starts at 1 and has seen two rounds: {}",
            c.alpha()
        );
        let alpha = c.alpha();
        round(&mut c, &mut seq, t, 20, 1);
        // The mark comes back on the round's first acknowledgement, at a window of 20: a new
        // flow's first mark cuts it as a classic flow's would (alpha near 1), and the window
        // stays there for the rest of the round.
        let expect = 20 - (20.0 * alpha / 2.0) as u64;
        assert!(cwnd(&c).abs_diff(expect) <= 1, "{} vs {expect}", cwnd(&c));
        assert!(!c.w.in_slow_start());
        assert!(in_cwr(&c));
        assert_eq!(c.reductions, 1, "once per round trip");
    }

    #[test]
    fn alpha_converges_to_the_marked_fraction_and_the_cut_to_half_of_it() {
        let mut c = prague();
        let (mut seq, mut t) = (0, Time::ZERO);
        // Hold the window near 100 packets and mark 10 % of each round's packets.
        c.w.cwnd = 100 * MSS;
        c.w.ssthresh = 100 * MSS;
        for _ in 0..200 {
            let n = cwnd(&c);
            t = round(&mut c, &mut seq, t, n, n / 10);
            c.w.cwnd = 100 * MSS;
        }
        assert!((c.alpha() - 0.1).abs() < 0.01, "alpha {}", c.alpha());
        // One more marked round: cwnd 100 → 100 · (1 − 0.05) = 95.
        round(&mut c, &mut seq, t, 100, 10);
        assert_eq!(cwnd(&c), 95);
    }

    #[test]
    fn one_reduction_per_round_and_growth_without_marks() {
        let mut c = prague();
        let (mut seq, mut t) = (0, Time::ZERO);
        c.w.cwnd = 50 * MSS;
        c.w.ssthresh = 50 * MSS;
        c.alpha = 0.2;
        c.round_end = 50;
        t = round(&mut c, &mut seq, t, 50, 5);
        assert_eq!(
            c.reductions, 1,
            "five marks in one round trip: one reduction"
        );
        assert_eq!(cwnd(&c), 45, "50 · (1 − 0.2/2)");
        // CWR ends when a packet sent after the reduction is acknowledged.
        t = round(&mut c, &mut seq, t, 10, 0);
        assert!(!in_cwr(&c));
        let before = cwnd(&c);
        for _ in 0..5 {
            let n = cwnd(&c);
            t = round(&mut c, &mut seq, t, n, 0);
        }
        assert_eq!(cwnd(&c), before + 5, "one segment per round trip");
        assert_eq!(c.reductions, 1);
    }

    #[test]
    fn a_loss_halves_the_window_like_reno() {
        let mut c = prague();
        c.w.cwnd = 40 * MSS;
        c.w.ssthresh = 40 * MSS;
        c.alpha = 0.01;
        let t = Time::ZERO;
        let sent: Vec<SentPacket> = (0..40)
            .map(|i| {
                let p = segment(i, t, i);
                c.on_packet_sent(t, &p);
                p
            })
            .collect();
        let at = t + Duration::from_millis(20);
        let report = FeedbackReport {
            feedback_time: at,
            packets: sent
                .iter()
                .map(|p| PacketResult {
                    sent: *p,
                    receive_time: (p.seq != 3).then_some(at),
                    ecn: Ecn::Ect1,
                })
                .collect(),
            in_flight: 0,
            recovery: None,
        };
        c.on_feedback(at, &report);
        assert_eq!(cwnd(&c), 20);
    }

    #[test]
    fn bad_gain_is_refused() {
        let mut p = Params::new();
        p.insert("g".into(), toml::Value::Float(0.0));
        assert!(build(&p, &crate::cc::test_support::context()).is_err());
    }
}
