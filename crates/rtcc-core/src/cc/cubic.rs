//! `cubic`: TCP CUBIC (RFC 9438) with HyStart, as Linux runs it (`net/ipv4/tcp_cubic.c`).
//!
//! CUBIC replaces Reno's linear congestion avoidance by a cubic function of the time since the
//! last window reduction, so that its growth does not depend on the RTT and a large window is
//! regained quickly. Slow start, recovery episodes, timeouts and the "grow only when the window
//! limits" rule are Reno's (see `reno.rs`); what differs:
//!
//! - Multiplicative decrease (RFC 9438 §4.6, Linux `cubictcp_recalc_ssthresh`): on a loss,
//!   `W_max = cwnd` and `ssthresh = cwnd = max(β·cwnd, 2 MSS)` with β_cubic = 0.7 (RFC 9438
//!   §4.6; Linux `beta = 717/1024`).
//! - Fast convergence (RFC 9438 §4.7, Linux `fast_convergence = 1`): if the window at the loss is
//!   below the previous `W_max`, the flow is losing ground to a newcomer and releases bandwidth
//!   faster: `W_max = cwnd·(1 + β)/2`.
//! - Window growth (RFC 9438 §4.2, Linux `bictcp_update`): the congestion-avoidance epoch starts
//!   at the first ACK after the reduction, with `cwnd_epoch = cwnd` and
//!
//!   ```text
//!   K = cbrt((W_max − cwnd_epoch) / C)          (0 and origin cwnd_epoch if W_max ≤ cwnd_epoch)
//!   W_cubic(t) = C·(t − K)³ + W_max             (segments; t in seconds since the epoch)
//!   target = W_cubic(t + RTT)                   (Linux uses the minimum RTT, `delay_min`)
//!   ```
//!
//!   with C = 0.4 (RFC 9438 §5; Linux `bic_scale = 41` → 41·10/1024 ≈ 0.4). Each ACK of one
//!   segment adds `(target − cwnd) / cwnd` segments, so `cwnd` reaches the target one RTT later:
//!   concave up to `W_max` (reached after K seconds), flat around it, convex beyond. The growth
//!   is capped at 1.5× per RTT (RFC 9438 §4.2, Linux `cnt ≥ 2`); when no `W_max` is known yet
//!   (after HyStart or a timeout) it is capped at 5 % per RTT until the curve takes over (Linux
//!   `cnt ≤ 20` while `last_max_cwnd == 0`).
//! - Reno-friendly region (RFC 9438 §4.3, Linux `tcp_friendliness = 1`): an estimate of what
//!   Reno with the same β would have, `W_est = cwnd_epoch + α·(segments acked)/cwnd`, with
//!   α_cubic = 3(1 − β)/(1 + β) ≈ 0.53 (Linux `beta_scale`); when `W_est` is above the cubic
//!   curve the window follows `W_est` instead (short RTTs and small windows).
//! - Timeout (RFC 9438 §4.8, Linux `cubictcp_state(TCP_CA_Loss)`): `ssthresh` as on a loss,
//!   `cwnd = 1 MSS`, and the state is reset: `W_max` forgotten (the next epoch has K = 0),
//!   `delay_min` forgotten, HyStart re-armed.
//! - Idle periods (Linux `cubictcp_cwnd_event(CA_EVENT_TX_START)`): when a packet leaves with
//!   nothing in flight, the epoch start moves forward by the idle time, so an application-limited
//!   pause does not count as time on the curve.
//!
//! HyStart (Ha and Rhee, "Taming the elephants: new TCP slow start", 2011; Linux
//! `hystart_update`) leaves slow start before it overflows the buffer, by setting
//! `ssthresh = cwnd` when either signal fires (only once `cwnd ≥ 16` segments,
//! `hystart_low_window`):
//! - ACK train: ACKs closer than 2 ms apart (`hystart_ack_delta_us`) form a train from the start
//!   of the round; when the train has lasted more than `delay_min / 2`, the window already fills
//!   the path. Without pacing the threshold is `(delay_min + cushion) / 2`; with pacing (which
//!   can spread a window over the RTT) it is `delay_min + cushion`. Linux's cushion
//!   (`hystart_ack_delay`) is `min(1 ms, 4 segments / pacing rate)`, computed for TSO/GRO
//!   aggregates; with no segmentation offload here the aggregate is one segment.
//! - Delay increase: the smallest RTT of the round, once at least 8 samples
//!   (`HYSTART_MIN_SAMPLES`) have been taken, exceeds `delay_min + clamp(delay_min / 8, 4 ms,
//!   16 ms)` (`HYSTART_DELAY_THRESH`): a queue is building.
//!
//! A round starts when the first packet sent after the previous round start is acknowledged.
//! `delay_min` is the smallest RTT seen, ignoring the first second after a reduction (Linux
//! `cubictcp_acked`). Judgment calls: arithmetic is in floating point on the RFC's equations
//! (not Linux's fixed point and jiffies; β and C are 0.7 and 0.4 exactly), the target is
//! recomputed on every ACK (Linux at most once per jiffy unless cwnd changed), and `W_est` grows
//! continuously as in the RFC (Linux in whole segments).

use super::params::controller_config;
use super::reno::tcp_param_doc;
use super::reno::{check_window, default_initial_cwnd, default_mss, Window, TCP_FEEDBACK};
use super::{
    boxed, build_fn, parse_config, Controller, ControllerContext, ControllerError, ControllerInfo,
};
use super::{Decision, Params};
use crate::packet::{FeedbackReport, SentPacket};
use crate::units::{Bytes, Duration, Time};

/// Linux `hystart_low_window`.
const HYSTART_LOW_WINDOW: f64 = 16.0;
/// Linux `hystart_ack_delta_us`.
const HYSTART_ACK_DELTA: Duration = Duration(2_000_000);
/// Linux `HYSTART_MIN_SAMPLES`.
const HYSTART_MIN_SAMPLES: u32 = 8;
/// Linux `HYSTART_DELAY_MIN` / `HYSTART_DELAY_MAX`.
const HYSTART_DELAY_MIN: Duration = Duration(4_000_000);
const HYSTART_DELAY_MAX: Duration = Duration(16_000_000);
/// Linux `hystart_ack_delay`'s cap (`USEC_PER_MSEC`).
const HYSTART_CUSHION_MAX: Duration = Duration(1_000_000);
/// Linux `cubictcp_acked`: delay samples are ignored for one second (`HZ`) after a reduction.
const DELAY_SAMPLE_HOLDOFF: Duration = Duration(1_000_000_000);

controller_config! {
    /// CUBIC's parameters (Linux's defaults).
    pub struct CubicConfig {
        #[doc = tcp_param_doc!(mss)]
        pub mss: Bytes = default_mss(),
        #[doc = tcp_param_doc!(initial_cwnd)]
        pub initial_cwnd: u32 = default_initial_cwnd(),
        #[doc = tcp_param_doc!(pacing)]
        pub pacing: bool = false,
        /// HyStart slow-start exit (ACK train and delay increase)
        ///
        /// Linux `hystart = 1`, both detectors.
        pub hystart: bool = true,
        /// lower W_max faster when the window shrinks (RFC 9438 4.7)
        ///
        /// Linux `fast_convergence = 1`.
        pub fast_convergence: bool = true,
        /// never grow slower than Reno with the same beta (RFC 9438 4.3)
        ///
        /// The Reno-friendly region, Linux `tcp_friendliness = 1`.
        pub reno_friendly: bool = true,
        /// multiplicative decrease factor (RFC 9438 4.6)
        ///
        /// β_cubic; Linux uses 717/1024.
        pub beta: f64 = 0.7,
        /// cubic scaling constant, segments per second cubed (RFC 9438 5)
        ///
        /// C, Linux `bic_scale`.
        pub c: f64 = 0.4,
    }
}

/// Which HyStart detector ended slow start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HyStartExit {
    AckTrain = 1,
    Delay = 2,
}

#[derive(Debug, Clone)]
struct HyStart {
    found: Option<HyStartExit>,
    round_start: Time,
    last_ack: Time,
    end_seq: u64,
    curr_rtt: Option<Duration>,
    samples: u32,
}

pub struct Cubic {
    w: Window,
    cfg: CubicConfig,
    alpha: f64,
    /// Segments; 0 when unknown (Linux `last_max_cwnd`).
    w_max: f64,
    k: f64,
    origin: f64,
    epoch_start: Option<Time>,
    w_est: f64,
    target: f64,
    delay_min: Option<Duration>,
    hy: HyStart,
}

impl Cubic {
    pub fn new(cfg: CubicConfig, now: Time) -> Result<Cubic, String> {
        check_window(cfg.mss, cfg.initial_cwnd)?;
        if !(cfg.beta > 0.0 && cfg.beta < 1.0) {
            return Err(format!("beta must be in (0, 1), got {}", cfg.beta));
        }
        if !(cfg.c > 0.0 && cfg.c.is_finite()) {
            return Err(format!("c must be a positive number, got {}", cfg.c));
        }
        let hy = HyStart {
            found: None,
            round_start: now,
            last_ack: now,
            end_seq: 0,
            curr_rtt: None,
            samples: 0,
        };
        Ok(Cubic {
            w: Window::new(cfg.mss, cfg.initial_cwnd, cfg.pacing),
            alpha: 3.0 * (1.0 - cfg.beta) / (1.0 + cfg.beta),
            cfg,
            w_max: 0.0,
            k: 0.0,
            origin: 0.0,
            epoch_start: None,
            w_est: 0.0,
            target: 0.0,
            delay_min: None,
            hy,
        })
    }

    fn cwnd_segments(&self) -> f64 {
        self.w.cwnd as f64 / self.w.mss as f64
    }

    fn hystart_reset(&mut self, now: Time) {
        self.hy.round_start = now;
        self.hy.last_ack = now;
        self.hy.end_seq = self.w.episodes.next_seq();
        self.hy.curr_rtt = None;
        self.hy.samples = 0;
    }

    /// Linux `cubictcp_acked` and `hystart_update`.
    fn on_delay(&mut self, now: Time, delay: Duration, newest_acked: Option<u64>) {
        if self
            .epoch_start
            .is_some_and(|e| now - e < DELAY_SAMPLE_HOLDOFF)
        {
            return;
        }
        let delay = delay.max(Duration(1_000));
        let delay_min = self.delay_min.map_or(delay, |d| d.min(delay));
        self.delay_min = Some(delay_min);
        if !self.cfg.hystart || self.hy.found.is_some() || !self.w.in_slow_start() {
            return;
        }
        if newest_acked.is_some_and(|s| s >= self.hy.end_seq) {
            self.hystart_reset(now);
        }
        if self.cwnd_segments() < HYSTART_LOW_WINDOW {
            return;
        }
        if now - self.hy.last_ack <= HYSTART_ACK_DELTA {
            self.hy.last_ack = now;
            let rate = self.w.linux_pacing_rate();
            let cushion = rate.transmit_time(4 * self.w.mss).min(HYSTART_CUSHION_MAX);
            let mut threshold = delay_min + cushion;
            if !self.cfg.pacing {
                threshold = Duration(threshold.0 / 2);
            }
            if now - self.hy.round_start > threshold {
                self.exit_slow_start(HyStartExit::AckTrain);
                return;
            }
        }
        self.hy.curr_rtt = Some(self.hy.curr_rtt.map_or(delay, |c| c.min(delay)));
        if self.hy.samples < HYSTART_MIN_SAMPLES {
            self.hy.samples += 1;
        } else {
            let thresh = Duration(delay_min.0 / 8).clamp(HYSTART_DELAY_MIN, HYSTART_DELAY_MAX);
            if self.hy.curr_rtt.is_some_and(|c| c > delay_min + thresh) {
                self.exit_slow_start(HyStartExit::Delay);
            }
        }
    }

    fn exit_slow_start(&mut self, why: HyStartExit) {
        self.hy.found = Some(why);
        self.w.ssthresh = self.w.cwnd;
    }

    /// Linux `cubictcp_recalc_ssthresh`: returns the new ssthresh in bytes.
    fn reduction(&mut self) -> u64 {
        self.epoch_start = None;
        let cwnd = self.cwnd_segments();
        self.w_max = if cwnd < self.w_max && self.cfg.fast_convergence {
            cwnd * (1.0 + self.cfg.beta) / 2.0
        } else {
            cwnd
        };
        (self.w.cwnd as f64 * self.cfg.beta) as u64
    }

    /// Linux `bictcp_update`: segments to acknowledge per one-segment increase.
    fn acks_per_increase(&mut self, now: Time, acked: u64) -> f64 {
        let cwnd = self.cwnd_segments();
        let epoch = match self.epoch_start {
            Some(e) => e,
            None => {
                self.epoch_start = Some(now);
                self.w_est = cwnd;
                if self.w_max <= cwnd {
                    self.k = 0.0;
                    self.origin = cwnd;
                } else {
                    self.k = ((self.w_max - cwnd) / self.cfg.c).cbrt();
                    self.origin = self.w_max;
                }
                now
            }
        };
        let rtt = self.delay_min.unwrap_or(Duration::ZERO);
        let t = (now - epoch + rtt).as_secs_f64();
        self.target = self.origin + self.cfg.c * (t - self.k).powi(3);
        let mut cnt = if self.target > cwnd {
            cwnd / (self.target - cwnd)
        } else {
            100.0 * cwnd
        };
        if self.w_max == 0.0 {
            cnt = cnt.min(20.0);
        }
        if self.cfg.reno_friendly {
            self.w_est += self.alpha * (acked as f64 / self.w.mss as f64) / cwnd;
            if self.w_est > cwnd {
                cnt = cnt.min(cwnd / (self.w_est - cwnd));
            }
        }
        cnt.max(2.0)
    }
}

impl Controller for Cubic {
    fn on_packet_sent(&mut self, now: Time, pkt: &SentPacket) {
        if pkt.in_flight <= pkt.size as u64 {
            if let (Some(e), Some(last)) = (self.epoch_start, self.w.last_send) {
                self.epoch_start = Some((e + (now - last)).min(now));
            }
        }
        self.w.on_packet_sent(now, pkt);
    }

    fn on_feedback(&mut self, now: Time, report: &FeedbackReport) {
        let a = self.w.on_report(report);
        if let Some(rtt) = a.rtt {
            self.on_delay(now, rtt, a.newest_acked_seq);
        }
        if a.episode.new_episode {
            self.w.save_prior(true);
            let ss = self.reduction();
            self.w.reduce_to(ss);
        }
        if a.acked == 0 || !self.w.may_grow() {
            return;
        }
        let mut acked = a.acked;
        if self.w.in_slow_start() {
            acked = self.w.slow_start(acked, None);
        }
        if acked > 0 {
            let cnt = self.acks_per_increase(now, acked);
            self.w.additive_increase(acked, cnt);
        }
    }

    fn on_rto(&mut self, now: Time, in_flight: u64) {
        if self.w.episodes.on_rto() {
            self.w.save_prior(true);
            self.w.ssthresh = self.reduction().max(2 * self.w.mss);
        }
        self.w.collapse(in_flight);
        // Linux bictcp_reset + bictcp_hystart_reset on entering TCP_CA_Loss.
        self.w_max = 0.0;
        self.k = 0.0;
        self.origin = 0.0;
        self.epoch_start = None;
        self.w_est = 0.0;
        self.target = 0.0;
        self.delay_min = None;
        self.hy.found = None;
        self.hystart_reset(now);
    }

    /// An ECN-Echo reduces as a loss does (Linux `tcp_enter_cwr()` calls `bictcp_recalc_ssthresh`,
    /// the same β = 0.7 and fast-convergence `w_max` as a fast retransmit), once per window.
    /// Linux 6.x: `cubictcp` undoes with `tcp_reno_undo_cwnd` (window and `ssthresh` back);
    /// the state that `bictcp_reset` cleared at the timeout (`W_max`, the epoch, HyStart) stays
    /// cleared.
    fn on_undo(&mut self, _now: Time) {
        self.w.undo();
    }

    fn uses_prr(&self) -> bool {
        true
    }

    fn on_ecn_echo(&mut self, _now: Time) {
        if self.w.episodes.on_ecn_echo() {
            self.w.save_prior(false);
            let ss = self.reduction();
            self.w.reduce_to(ss);
        }
    }

    /// Linux `tcp_cwnd_restart` (Reno's window rule); cubic itself ignores
    /// `CA_EVENT_CWND_RESTART`, and its epoch moves past the idle time when the next packet
    /// leaves (`on_packet_sent`).
    fn on_idle_restart(&mut self, _now: Time) {
        self.w.restart_after_idle();
    }

    fn decision(&self) -> Decision {
        self.w.decision()
    }

    fn state(&self, out: &mut Vec<(&'static str, f64)>) {
        self.w.state(out);
        out.push(("w_max_packets", self.w_max));
        out.push(("k_s", self.k));
        out.push(("w_cubic_target_packets", self.target));
        out.push(("w_est_packets", self.w_est));
        out.push((
            "epoch_start_s",
            self.epoch_start.map_or(f64::NAN, |e| e.as_secs_f64()),
        ));
        out.push((
            "delay_min_ms",
            self.delay_min.map_or(f64::NAN, |d| d.as_millis_f64()),
        ));
        out.push((
            "hystart_exit",
            self.hy.found.map_or(0.0, |f| f as u8 as f64),
        ));
    }
}

pub fn info() -> ControllerInfo {
    ControllerInfo {
        name: "cubic".into(),
        summary: "TCP CUBIC (RFC 9438) with HyStart and Linux's defaults.".into(),
        params: CubicConfig::param_docs(),
        feedback: TCP_FEEDBACK,
        media: Default::default(),
        build: build_fn(build),
    }
}

fn build(params: &Params, ctx: &ControllerContext) -> Result<Box<dyn Controller>, ControllerError> {
    let config: CubicConfig = parse_config("cubic", params)?;
    boxed("cubic", Cubic::new(config, ctx.now))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::delivery_rate::testpath::Path;
    use crate::units::Rate;

    const MSS: u64 = 1500;

    fn cubic(params: &str) -> Cubic {
        let p: Params = toml::from_str(params).unwrap();
        Cubic::new(parse_config("cubic", &p).unwrap(), Time::ZERO).unwrap()
    }

    use crate::cc::test_support::signal as get;

    fn segments(c: &dyn Controller) -> f64 {
        c.decision().cwnd.unwrap() as f64 / MSS as f64
    }

    /// One loss once `pkt.in_flight` reaches `w` segments, then a pure `rtt_ms` delay.
    fn one_loss(rtt_ms: u64, w: u64, until: Time, params: &str) -> (Cubic, Vec<(Time, f64)>) {
        let mut p = Path::new(Duration::from_millis(rtt_ms), None);
        let mut fired = false;
        p.dropper = Box::new(move |pkt| {
            let hit = !fired && pkt.in_flight >= w * MSS;
            fired |= hit;
            hit
        });
        let mut c = cubic(params);
        let mut trace = vec![];
        p.run(&mut c, until, |t, c, _| trace.push((t, segments(c))));
        (c, trace)
    }

    #[test]
    fn window_growth_follows_the_cubic_function_after_a_loss() {
        let (c, trace) = one_loss(100, 100, Time::from_millis(14_000), "");
        // The loss hit in the fifth slow-start round; W_max is the window when it was detected.
        let w_max = get(&c, "w_max_packets");
        let k = get(&c, "k_s");
        assert!((160.0..200.0).contains(&w_max), "{w_max}");
        assert!(
            (k - (w_max * 0.3 / 0.4).cbrt()).abs() < 1e-9,
            "K = cbrt(W_max (1 - beta) / C)"
        );
        assert_eq!(
            get(&c, "ssthresh_packets"),
            (w_max * MSS as f64 * 0.7).floor() / MSS as f64
        );
        let epoch = Time::from_secs_f64(get(&c, "epoch_start_s"));
        let w_cubic = |t: f64| 0.4 * (t - k).powi(3) + w_max;
        // Between ACK bursts (every 100 ms, sampled mid-way), over two K: concave, plateau,
        // convex. The window may lead the curve by one RTT (the target is W_cubic(t + RTT))
        // and lags by at most the one segment it grows in.
        let mut checked = 0;
        let mut worst: f64 = 0.0;
        for i in 0.. {
            let t = 0.05 + 0.1 * i as f64;
            if t > 2.0 * k {
                break;
            }
            let at = epoch + Duration::from_secs_f64(t);
            let Some(&(_, cw)) = trace.iter().rev().find(|x| x.0 <= at) else {
                continue;
            };
            let lead = w_cubic(t + 0.1) - w_cubic(t);
            let err = cw - w_cubic(t);
            assert!(
                err <= lead.max(0.0) + 1.0 && err >= -1.0,
                "t = {t:.2}: cwnd {cw} vs {}",
                w_cubic(t)
            );
            worst = worst.max(err.abs());
            checked += 1;
        }
        assert!(checked > 90, "{checked}");
        assert!(worst < 4.0, "{worst}");
        // At t = K the window is W_max (the plateau).
        let at_k = trace
            .iter()
            .rev()
            .find(|x| x.0 <= epoch + Duration::from_secs_f64(k))
            .unwrap()
            .1;
        assert!((at_k - w_max).abs() <= 1.0, "{at_k} vs {w_max}");
    }

    #[test]
    fn short_paths_grow_like_reno_with_the_same_beta() {
        // 10 ms RTT, loss at ~20 segments: W_cubic is nearly flat for seconds (K ≈ 2.5 s), and
        // the Reno-friendly estimate grows alpha = 3 (1 - 0.7) / 1.7 = 0.529 segments per RTT.
        let (c, trace) = one_loss(10, 20, Time::from_millis(3000), "");
        let epoch = Time::from_secs_f64(get(&c, "epoch_start_s"));
        let at = |s: f64| {
            trace
                .iter()
                .rev()
                .find(|x| x.0 <= epoch + Duration::from_secs_f64(s))
                .unwrap()
                .1
        };
        let start = at(0.005);
        let grown = at(1.005) - start; // 100 round trips
        assert!((grown - 52.9).abs() <= 2.0, "{grown}");
        let (c, trace) = one_loss(10, 20, Time::from_millis(3000), "reno_friendly = false");
        let epoch = Time::from_secs_f64(get(&c, "epoch_start_s"));
        let at = |s: f64| {
            trace
                .iter()
                .rev()
                .find(|x| x.0 <= epoch + Duration::from_secs_f64(s))
                .unwrap()
                .1
        };
        assert!(
            at(1.005) - at(0.005) < 20.0,
            "without it the cubic curve is far slower"
        );
    }

    #[test]
    fn fast_convergence_lowers_w_max_when_the_window_shrinks() {
        let mut p = Path::new(Duration::from_millis(50), None);
        let mut fired = 0;
        p.dropper = Box::new(move |pkt| {
            // First loss near 100 segments in flight, second one 300 packets later.
            let hit =
                (fired == 0 && pkt.in_flight >= 100 * MSS) || (fired > 0 && pkt.seq == fired + 300);
            if fired == 0 && hit {
                fired = pkt.seq;
            }
            hit
        });
        let mut c = cubic("hystart = false");
        let mut trace = vec![];
        p.run(&mut c, Time::from_millis(3000), |_, c, r| {
            trace.push((r.lost_count(), segments(c), get(c, "w_max_packets")));
        });
        let losses: Vec<usize> = (0..trace.len()).filter(|&i| trace[i].0 > 0).collect();
        assert_eq!(losses.len(), 2);
        let before_first = trace[losses[0] - 1].1;
        assert_eq!(trace[losses[0]].2, before_first, "first loss: W_max = cwnd");
        assert_eq!(
            trace[losses[0]].1,
            (before_first * MSS as f64 * 0.7).floor() / MSS as f64
        );
        let before_second = trace[losses[1] - 1].1;
        assert!(before_second < before_first);
        assert!(
            (trace[losses[1]].2 - before_second * 0.85).abs() < 1e-9,
            "W_max = cwnd (1 + beta) / 2"
        );
    }

    /// Slow start on a pure `base_ms` delay that grows by `step_us` for the packets of the
    /// fourth round (80 of them); returns the HyStart exit and the ssthresh it set.
    fn hystart_on_delay_step(base_ms: u64, step_us: u64) -> (f64, f64) {
        let base = Duration::from_millis(base_ms);
        let mut p = Path::new(base, None);
        let mut c = cubic("");
        p.run(&mut c, Time(5 * base.0 / 2), |_, _, _| {});
        assert_eq!(segments(&c), 40.0);
        p.base_rtt = base + Duration::from_micros(step_us);
        let end = p.now + Duration(2 * base.0);
        p.run(&mut c, end, |_, _, _| {});
        (get(&c, "hystart_exit"), get(&c, "ssthresh_packets"))
    }

    #[test]
    fn hystart_delay_threshold_is_an_eighth_of_the_min_rtt_clamped_to_4_to_16_ms() {
        // 40 ms: threshold 5 ms. The exit is at the 9th ACK of the round after the step, when
        // 8 ACKs have added 8 segments to the 80: ssthresh = 88.
        assert_eq!(hystart_on_delay_step(40, 5_500), (2.0, 88.0));
        assert_eq!(hystart_on_delay_step(40, 4_500).0, 0.0);
        // 200 ms: 25 ms clamped to 16 ms.
        assert_eq!(hystart_on_delay_step(200, 16_500), (2.0, 88.0));
        assert_eq!(hystart_on_delay_step(200, 15_500).0, 0.0);
        // 16 ms: 2 ms raised to 4 ms.
        assert_eq!(hystart_on_delay_step(16, 4_500), (2.0, 88.0));
        assert_eq!(hystart_on_delay_step(16, 3_500).0, 0.0);
    }

    #[test]
    fn hystart_ack_train_exits_when_the_train_outlasts_half_the_min_rtt() {
        // 12 Mbit/s (1 ms per segment) behind a 100 ms delay: delay_min = 101 ms, the train
        // threshold (101 + 1) / 2 = 51 ms. The round of 80 ACKs arrives back to back, 1 ms
        // apart; the train passes 51 ms at its 53rd ACK (52 ms after the first), when the
        // window is 80 + 52 = 132 segments.
        let mut p = Path::new(Duration::from_millis(100), Some(Rate::from_mbps(12.0)));
        let mut c = cubic("");
        p.run(&mut c, Time::from_millis(1500), |_, _, _| {});
        assert_eq!(get(&c, "hystart_exit"), 1.0);
        assert_eq!(get(&c, "ssthresh_packets"), 132.0);
        assert_eq!(get(&c, "delay_min_ms"), 101.0);
        // Plain slow start on the same path keeps doubling.
        let mut p = Path::new(Duration::from_millis(100), Some(Rate::from_mbps(12.0)));
        let mut c = cubic("hystart = false");
        p.run(&mut c, Time::from_millis(1500), |_, _, _| {});
        assert!(segments(&c) > 300.0);
    }

    #[test]
    fn a_timeout_resets_to_one_segment_and_forgets_w_max() {
        let (mut c, _) = one_loss(100, 100, Time::from_millis(3000), "");
        let cw = segments(&c);
        c.on_rto(Time::from_millis(3000), 0);
        assert_eq!(segments(&c), 1.0);
        assert_eq!(
            get(&c, "ssthresh_packets"),
            (cw * MSS as f64 * 0.7).floor() / MSS as f64
        );
        assert_eq!(get(&c, "w_max_packets"), 0.0);
    }

    #[test]
    fn pacing_follows_linux_ratios() {
        let mut p = Path::new(Duration::from_millis(100), None);
        let mut c = cubic("pacing = true\nhystart = false");
        p.run(&mut c, Time::from_millis(150), |_, _, _| {});
        let d = c.decision();
        let base = 20.0 * 12_000.0 / 0.1;
        assert!((d.pacing_rate.unwrap().bps() - 2.0 * base).abs() < 1e-6);
        assert!((d.target_bitrate.bps() - base).abs() < 1e-6);
        c.on_rto(Time::from_millis(150), 0);
        let d = c.decision();
        // cwnd 1 < ssthresh 14 / 2: still 2x.
        assert!((d.pacing_rate.unwrap().bps() - 2.0 * 12_000.0 / 0.1).abs() < 1e-6);
    }
}
