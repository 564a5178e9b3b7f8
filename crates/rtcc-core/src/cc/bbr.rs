//! `bbr`: BBR v1 (Bottleneck Bandwidth and Round-trip propagation time), as in Linux
//! `net/ipv4/tcp_bbr.c` (Cardwell et al., "BBR: Congestion-Based Congestion Control",
//! ACM Queue 14(5), 2016).
//!
//! BBR does not read losses or delay as congestion signals; it builds a model of the path from
//! every ACK and paces at it:
//!
//! ```text
//! btl_bw      = max(delivery-rate samples over the last 10 round trips)
//! min_rtt     = min(RTT samples over the last 10 s)
//! pacing_rate = pacing_gain × btl_bw × (1 − 1 %)
//! cwnd        = cwnd_gain × btl_bw × min_rtt + 3 × quantum   (+ ACK-aggregation allowance)
//! ```
//!
//! Delivery-rate samples come from `delivery_rate.rs`. A round trip ends when a packet sent
//! after the previous round's end is acknowledged (`prior_delivered ≥ next_rtt_delivered`).
//! The bandwidth filter here is an exact windowed maximum over the last 10 rounds (Linux
//! `bbr_bw_rtts` = `CYCLE_LEN + 2`; Linux keeps Nichols' three-sample approximation of it).
//! App-limited samples enter it only if they raise the maximum.
//!
//! Modes (Linux `bbr_update_model`, called on every ACK):
//! - STARTUP: pacing and cwnd gain `bbr_high_gain` = 2/ln 2 ≈ 2.885 (739/256 in Linux's fixed
//!   point), the smallest gain that doubles the delivery rate every round. The pipe is deemed
//!   full when three consecutive non-app-limited rounds (`bbr_full_bw_cnt`) fail to raise
//!   `btl_bw` by 25 % (`bbr_full_bw_thresh`) over the last value that did.
//! - DRAIN: pacing gain 1/2.885 (88/256), cwnd gain 2.885, until the packets in flight fit one
//!   estimated BDP (plus the quantization budget), which drains the queue STARTUP built.
//! - PROBE_BW: cwnd gain 2 (`bbr_cwnd_gain`) and a pacing-gain cycle of eight phases
//!   [1.25, 0.75, 1, 1, 1, 1, 1, 1], each about one min_rtt long (wall-clock, from the delivery
//!   time at which it started). The 1.25 phase probes for bandwidth and lasts until inflight
//!   reaches 1.25 × BDP (or a loss); the 0.75 phase drains what probing queued and ends early
//!   once inflight is down to one BDP. The cycle starts at a random phase other than 0.75
//!   (`bbr_cycle_rand` = 7, `CYCLE_LEN − 1 − random(7)` then one step), here drawn from a ChaCha8
//!   stream seeded by `seed` and the flow's start time.
//! - PROBE_RTT: when no RTT sample has matched or lowered min_rtt for 10 s
//!   (`bbr_min_rtt_win_sec`), cwnd is capped at 4 packets (`bbr_cwnd_min_target`) until inflight
//!   has fallen to 4 packets and then for max(200 ms, one round) (`bbr_probe_rtt_mode_ms`); then
//!   the previous cwnd is restored and BBR returns to PROBE_BW (or STARTUP if the pipe was never
//!   filled). The min_rtt timestamp restarts then, so PROBE_RTT recurs every ~10 s in a flow that
//!   keeps a queue.
//!
//! Window (Linux `bbr_set_cwnd`): the target is `cwnd_gain × BDP` in packets (rounded up) plus
//! the ACK-aggregation allowance (the largest excess of acknowledged data over `btl_bw × epoch`
//! in the last 5–10 rounds, capped at 100 ms of `btl_bw`, after the pipe is full), then
//! `bbr_quantization_budget`: + 3 × the send quantum (Linux `bbr_tso_segs_goal`: about 1 ms of
//! data at the pacing rate, `sk_pacing_shift` = 10, at least 1 packet below 1.2 Mbit/s and 2
//! above, at most 127; with no segmentation offload a quantum is whole packets), rounded up to
//! an even number of packets, + 2 packets in the 1.25 phase. Below the target the window grows
//! by the acknowledged bytes (slow-start-like); after the pipe is full it is cut to the target.
//! Loss recovery (Linux `bbr_set_cwnd_to_recover_or_restore`): lost bytes are subtracted; the
//! first round of recovery keeps packet conservation (`cwnd = max(cwnd, inflight + acked)`,
//! starting from `inflight + acked`); the window in force before recovery is restored when
//! recovery ends. A timeout sets cwnd to one packet and resets the full-bandwidth baseline.
//! Before the first RTT sample the pacing rate is `2.885 × initial cwnd / 1 ms`
//! (`bbr_init_pacing_rate_from_rtt`), then re-derived from the first smoothed RTT; until the
//! pipe is full the pacing rate never decreases (`bbr_set_pacing_rate`).
//!
//! BBR-S (Vargas et al., WWW '21; `bw_estimator = "percentile"`, or the name `bbr-s`): the
//! windowed maximum is replaced, everywhere it is read, by the 85th percentile of the last 100
//! non-app-limited delivery-rate samples; the maximum is still kept and logged as
//! `max_filter_bw_bps`. The two readings of the paper (its released code, its text) are
//! described in `bbr_common/percentile.rs`. With the default `"max"` nothing changes.
//!
//! State signals (`Controller::state`), for time-in-state accounting: `mode` is 0 STARTUP,
//! 1 DRAIN, 2 PROBE_BW, 3 PROBE_RTT (Linux `enum bbr_mode`); `cycle_idx` is the PROBE_BW gain
//! phase (0 is the 1.25 probe, 1 the 0.75 drain, 2–7 cruising at 1.0); `btl_bw_bps` is the
//! estimate the model uses.
//!
//! Long-term ("policer") bandwidth (`bbr_common/lt_bw.rs`, Linux `bbr_lt_bw_sampling`): after
//! two sampling intervals of at least 4 rounds with ≥ 20 % loss and delivery rates within 1/8
//! of each other, BBR deems the flow policed and uses their average instead of the filter (Linux
//! `bbr_bw()`: pacing rate, window, ACK aggregation and the packets in the network), with
//! PROBE_BW's gain held at 1, for 48 round trips. The filter (`bbr_max_bw()`) still decides the
//! full pipe, DRAIN's exit and the gain-cycle phases, as in Linux.
//!
//! Left out: TSO autosizing; the
//! earliest-departure-time correction of inflight (`bbr_packets_in_net_at_edt`) uses the
//! departure time the pacing rate gives the next packet. The encoder target is
//! `min(cwnd / srtt, pacing_rate)`: what the window allows, never more than BBR sends.

use super::bbr_common::{bbr_config, with_percentile, BwEstimator, PercentileFilter};
use super::bbr_common::{bdp_packets, full_bw_round, gains, grow_cwnd, saved_cwnd};
use super::bbr_common::{seeded_rng, tso_segs_goal, window_decision, AckAggregation};
use super::bbr_common::{LongTermBw, LtAck, LtEvent};
use super::bbr_common::{Pacing, ProbeRtt, ProbeRttAck, Rounds};
use super::bbr_common::{CWND_MIN_TARGET, CYCLE_RAND, EXTRA_ACKED_WIN_RTTS, FULL_BW_CNT};
use super::bbr_common::{HIGH_GAIN, MIN_RTT_WIN, PACING_GAIN};
use super::delivery_rate::{AckSummary, DeliveryRateEstimator, SendLimits};
use super::reno::{check_window, CaState, Episodes, Rtt, TCP_FEEDBACK};
use super::{
    boxed, build_fn, parse_config, Controller, ControllerContext, ControllerError, ControllerInfo,
};
use super::{Decision, Params};
use crate::packet::{FeedbackReport, SentPacket};
use crate::units::{Duration, Time};
use rand_chacha::ChaCha8Rng;
use rand_core::Rng;
use std::collections::VecDeque;

/// Linux `bbr_bw_rtts` = `CYCLE_LEN + 2`.
const BW_RTTS: u64 = 10;

pub use super::bbr_common::Mode;

bbr_config! {
    /// BBR v1's parameters (`bbr`, `bbr-s`).
    pub struct BbrConfig {
        /// seed of the random gain-cycle start phase (mixed with the start time)
        seed,
    }
}

/// Exact maximum of the samples of the last `window` rounds (monotonic deque).
#[derive(Debug, Clone)]
struct WindowedMax {
    window: u64,
    q: VecDeque<(u64, f64)>,
}

impl WindowedMax {
    fn update(&mut self, round: u64, v: f64) {
        while self.q.back().is_some_and(|b| b.1 <= v) {
            self.q.pop_back();
        }
        self.q.push_back((round, v));
        while self.q.front().is_some_and(|f| f.0 + self.window <= round) {
            self.q.pop_front();
        }
    }
    fn get(&self) -> f64 {
        self.q.front().map_or(0.0, |f| f.1)
    }
}

pub struct Bbr {
    mss: u64,
    init_cwnd: u64,
    rate: DeliveryRateEstimator,
    rtt: Rtt,
    episodes: Episodes,
    rng: ChaCha8Rng,
    mode: Mode,
    /// Bytes per second.
    bw: WindowedMax,
    /// BBR-S: the percentile estimator that replaces `bw` when configured.
    pct: Option<PercentileFilter>,
    /// The last delivery-rate sample, bytes per second (Linux `tcpi_delivery_rate`; NaN before
    /// the first), logged to show what the filters are fed.
    last_sample: f64,
    min_rtt: Option<Duration>,
    min_rtt_stamp: Time,
    rounds: Rounds,
    round_start: bool,
    full_bw: f64,
    full_bw_cnt: u32,
    full_bw_reached: bool,
    cycle_idx: usize,
    cycle_stamp: Time,
    pacing_gain: f64,
    cwnd_gain: f64,
    probe_rtt: ProbeRtt,
    idle_restart: bool,
    prev_ca_state: CaState,
    packet_conservation: bool,
    prior_cwnd: u64,
    cwnd: u64,
    pacing: Pacing,
    aggregation: AckAggregation,
    lt: LongTermBw,
}

impl Bbr {
    pub fn new(cfg: BbrConfig, now: Time) -> Result<Bbr, String> {
        check_window(cfg.mss, cfg.initial_cwnd)?;
        let mss = cfg.mss.0;
        Ok(Bbr {
            mss,
            init_cwnd: cfg.initial_cwnd as u64,
            rate: DeliveryRateEstimator::new(),
            rtt: Rtt::default(),
            episodes: Episodes::new(),
            rng: seeded_rng(cfg.seed, now),
            mode: Mode::Startup,
            bw: WindowedMax {
                window: BW_RTTS,
                q: VecDeque::new(),
            },
            pct: (cfg.bw_estimator == BwEstimator::Percentile)
                .then(|| PercentileFilter::new(cfg.percentile_reading)),
            last_sample: f64::NAN,
            min_rtt: None,
            min_rtt_stamp: now,
            rounds: Rounds::default(),
            round_start: false,
            full_bw: 0.0,
            full_bw_cnt: 0,
            full_bw_reached: false,
            cycle_idx: 0,
            cycle_stamp: now,
            pacing_gain: HIGH_GAIN,
            cwnd_gain: HIGH_GAIN,
            probe_rtt: ProbeRtt::default(),
            idle_restart: false,
            prev_ca_state: CaState::Open,
            packet_conservation: false,
            prior_cwnd: 0,
            cwnd: cfg.initial_cwnd as u64 * mss,
            pacing: Pacing::new(now, cfg.initial_cwnd as u64 * mss),
            aggregation: AckAggregation::new(now),
            lt: LongTermBw::default(),
        })
    }

    /// Linux `bbr_max_bw`: the windowed maximum, or BBR-S's percentile when configured.
    fn max_bw(&self) -> f64 {
        match &self.pct {
            Some(p) => p.estimate(),
            None => self.bw.get(),
        }
    }

    /// Linux `bbr_bw`: the policed rate while the long-term estimator holds one, else
    /// [`Bbr::max_bw`].
    fn bw(&self) -> f64 {
        self.lt.rate().unwrap_or_else(|| self.max_bw())
    }

    /// Linux `bbr_lt_bw_sampling`, on an acknowledgement with a valid rate sample or (`timeout`)
    /// at a retransmission timeout, which counts as a loss.
    fn lt_bw_sampling(&mut self, losses: u64, is_app_limited: bool) {
        let ack = LtAck {
            round_start: self.round_start,
            losses,
            is_app_limited,
            delivered: self.rate.delivered(),
            lost: self.rate.lost(),
            delivered_time: self.rate.delivered_time(),
            probe_bw: self.mode == Mode::ProbeBw,
        };
        match self.lt.on_ack(&ack) {
            LtEvent::Policed => self.pacing_gain = 1.0,
            LtEvent::Expired => self.reset_probe_bw(),
            LtEvent::None => {}
        }
    }

    /// Linux `bbr_set_pacing_rate`.
    fn set_pacing_rate(&mut self, bw: f64, gain: f64) {
        let (srtt, full) = (self.rtt.srtt, self.full_bw_reached);
        self.pacing.set(bw, gain, srtt, self.cwnd, full);
    }

    /// Linux `bbr_tso_segs_goal`, in packets.
    fn quantum(&self) -> u64 {
        tso_segs_goal(self.pacing.rate(), self.mss, 0)
    }

    /// Linux `bbr_bdp`: `ceil(bw × min_rtt × gain)` in packets.
    fn bdp(&self, bw: f64, gain: f64) -> u64 {
        bdp_packets(bw, self.min_rtt, gain, self.mss, self.init_cwnd)
    }

    /// Linux `bbr_quantization_budget`, in packets.
    fn quantization_budget(&self, packets: u64) -> u64 {
        let mut c = packets + 3 * self.quantum();
        c = (c + 1) & !1;
        if self.mode == Mode::ProbeBw && self.cycle_idx == 0 {
            c += 2;
        }
        c
    }

    /// Linux `bbr_inflight`, in bytes.
    fn inflight(&self, bw: f64, gain: f64) -> u64 {
        self.quantization_budget(self.bdp(bw, gain)) * self.mss
    }

    /// Linux `bbr_packets_in_net_at_edt`, in bytes.
    fn in_net_at_edt(&self, now: Time, inflight: u64) -> u64 {
        let quantum = self.quantum() * self.mss;
        self.pacing
            .in_net_at_edt(now, inflight, self.bw(), self.pacing_gain, quantum)
    }

    /// Linux `bbr_save_cwnd`.
    fn save_cwnd(&mut self) {
        self.prior_cwnd = saved_cwnd(self.prior_cwnd, self.cwnd, self.prev_ca_state, self.mode);
    }

    fn advance_cycle_phase(&mut self) {
        self.cycle_idx = (self.cycle_idx + 1) % PACING_GAIN.len();
        self.cycle_stamp = self.rate.delivered_time();
    }

    fn reset_probe_bw(&mut self) {
        self.mode = Mode::ProbeBw;
        let r = (self.rng.next_u64() % CYCLE_RAND) as usize;
        self.cycle_idx = PACING_GAIN.len() - 1 - r;
        self.advance_cycle_phase();
    }

    fn reset_mode(&mut self) {
        if self.full_bw_reached {
            self.reset_probe_bw();
        } else {
            self.mode = Mode::Startup;
        }
    }

    fn update_bw(&mut self, s: &AckSummary) {
        self.round_start = false;
        let Some(rs) = s.sample else { return };
        if self
            .rounds
            .on_sample(rs.prior_delivered, self.rate.delivered())
        {
            self.round_start = true;
            self.packet_conservation = false;
        }
        self.lt_bw_sampling(s.lost, rs.is_app_limited);
        let bw = rs.bytes_per_sec();
        self.last_sample = bw;
        if !rs.is_app_limited || bw >= self.bw.get() {
            self.bw.update(self.rounds.count(), bw);
        }
        if let Some(p) = &mut self.pct {
            if !rs.is_app_limited {
                p.insert(bw);
            }
        }
    }

    /// Linux `bbr_update_ack_aggregation`.
    fn update_ack_aggregation(&mut self, s: &AckSummary) {
        if s.acked == 0 || s.sample.is_none() {
            return;
        }
        let now = self.rate.delivered_time();
        let bw = self.bw();
        self.aggregation.update(
            self.round_start,
            EXTRA_ACKED_WIN_RTTS,
            s.acked,
            now,
            bw,
            self.cwnd,
            self.mss,
        );
    }

    /// Linux `bbr_ack_aggregation_cwnd`, in packets.
    fn aggregation_cwnd(&self, bw: f64) -> u64 {
        if !self.full_bw_reached {
            return 0;
        }
        self.aggregation.allowance(bw) / self.mss
    }

    fn is_next_cycle_phase(&self, now: Time, s: &AckSummary) -> bool {
        let full_length = self
            .min_rtt
            .is_some_and(|m| self.rate.delivered_time() - self.cycle_stamp > m);
        let gain = self.pacing_gain;
        if gain == 1.0 {
            return full_length;
        }
        let inflight = self.in_net_at_edt(now, s.prior_in_flight);
        let bw = self.max_bw();
        if gain > 1.0 {
            return full_length && (s.lost > 0 || inflight >= self.inflight(bw, gain));
        }
        full_length || inflight <= self.inflight(bw, 1.0)
    }

    /// Linux `bbr_check_full_bw_reached`.
    fn check_full_bw_reached(&mut self, app_limited: bool) {
        if self.full_bw_reached || !self.round_start || app_limited {
            return;
        }
        (self.full_bw, self.full_bw_cnt) =
            full_bw_round(self.full_bw, self.full_bw_cnt, self.max_bw());
        self.full_bw_reached = self.full_bw_cnt >= FULL_BW_CNT;
    }

    fn check_drain(&mut self, now: Time, s: &AckSummary) {
        if self.mode == Mode::Startup && self.full_bw_reached {
            self.mode = Mode::Drain;
        }
        let bdp = self.inflight(self.max_bw(), 1.0);
        if self.mode == Mode::Drain && self.in_net_at_edt(now, s.in_flight) <= bdp {
            self.reset_probe_bw();
        }
    }

    fn check_probe_rtt_done(&mut self, now: Time) {
        if !self.probe_rtt.elapsed(now) {
            return;
        }
        self.min_rtt_stamp = now;
        self.cwnd = self.cwnd.max(self.prior_cwnd);
        self.reset_mode();
    }

    /// Linux `bbr_update_min_rtt` (PROBE_RTT entry and exit).
    fn update_min_rtt(&mut self, now: Time, s: &AckSummary) {
        let expired = now > self.min_rtt_stamp + MIN_RTT_WIN;
        if let Some(r) = s.rtt {
            if self.min_rtt.is_none_or(|m| r < m) || expired {
                self.min_rtt = Some(r);
                self.min_rtt_stamp = now;
            }
        }
        if expired && !self.idle_restart && self.mode != Mode::ProbeRtt {
            self.mode = Mode::ProbeRtt;
            self.save_cwnd();
            self.probe_rtt.enter();
        }
        if self.mode == Mode::ProbeRtt {
            self.rate.mark_app_limited(s.in_flight);
            let drained = s.in_flight <= CWND_MIN_TARGET * self.mss;
            match self.probe_rtt.on_ack(now, drained, self.round_start) {
                ProbeRttAck::Drained => self.rounds.restart(self.rate.delivered()),
                ProbeRttAck::RoundDone => self.check_probe_rtt_done(now),
                ProbeRttAck::Waiting => {}
            }
        }
        // tcp_bbr.c bbr_update_min_rtt: `if (rs->delivered > 0) bbr->idle_restart = 0;`, with
        // rs->delivered set even when tcp_rate_gen discards a too-short interval.
        if s.delivered.is_some_and(|d| d > 0) {
            self.idle_restart = false;
        }
    }

    fn update_gains(&mut self) {
        (self.pacing_gain, self.cwnd_gain) = gains(self.mode, self.cycle_idx);
        if self.mode == Mode::ProbeBw && self.lt.rate().is_some() {
            self.pacing_gain = 1.0; // no probing above a policed rate
        }
    }

    /// Linux `bbr_set_cwnd_to_recover_or_restore`: the window and whether it is conserving.
    fn recover_or_restore(&mut self, s: &AckSummary) -> (u64, bool) {
        let state = self.episodes.state;
        let prev = self.prev_ca_state;
        let mut cwnd = self.cwnd;
        if s.lost > 0 {
            cwnd = cwnd.saturating_sub(s.lost).max(self.mss);
        }
        if state == CaState::Recovery && prev != CaState::Recovery {
            self.packet_conservation = true;
            self.rounds.restart(self.rate.delivered());
            cwnd = s.in_flight + s.acked;
        } else if prev >= CaState::Recovery && state < CaState::Recovery {
            cwnd = cwnd.max(self.prior_cwnd);
            self.packet_conservation = false;
        }
        self.prev_ca_state = state;
        if self.packet_conservation {
            return (cwnd.max(s.in_flight + s.acked), true);
        }
        (cwnd, false)
    }

    /// Linux `bbr_set_cwnd`.
    fn set_cwnd(&mut self, s: &AckSummary, bw: f64) {
        let mut cwnd = self.cwnd;
        if s.acked > 0 {
            let (c, conserving) = self.recover_or_restore(s);
            cwnd = c;
            if !conserving {
                let packets = self.bdp(bw, self.cwnd_gain) + self.aggregation_cwnd(bw);
                let target = self.quantization_budget(packets) * self.mss;
                let early = self.rate.delivered() < self.init_cwnd * self.mss;
                let floor = CWND_MIN_TARGET * self.mss;
                cwnd = grow_cwnd(cwnd, s.acked, target, self.full_bw_reached, early, floor);
            }
        }
        if self.mode == Mode::ProbeRtt {
            cwnd = cwnd.min(CWND_MIN_TARGET * self.mss);
        }
        self.cwnd = cwnd;
    }
}

impl Controller for Bbr {
    fn on_app_limited(&mut self, in_flight: u64) {
        self.rate.mark_app_limited(in_flight);
    }

    fn on_packet_sent(&mut self, now: Time, pkt: &SentPacket) {
        self.episodes.on_sent(pkt.seq);
        let from_idle = pkt.in_flight <= pkt.size as u64;
        let limits = SendLimits {
            cwnd: Some(self.cwnd),
            pacing_rate: Some(self.pacing.rate()),
        };
        self.rate.on_packet_sent(now, pkt, limits);
        if from_idle && self.rate.is_app_limited() {
            // Linux bbr_cwnd_event(CA_EVENT_TX_START) while app-limited.
            self.idle_restart = true;
            self.aggregation.restart_epoch(now);
            match self.mode {
                Mode::ProbeBw => self.set_pacing_rate(self.bw(), 1.0),
                Mode::ProbeRtt => self.check_probe_rtt_done(now),
                _ => {}
            }
        }
        self.pacing.on_sent(now, pkt.size);
    }

    fn on_feedback(&mut self, now: Time, report: &FeedbackReport) {
        if self.episodes.on_report(report).new_episode {
            self.save_cwnd(); // Linux bbr_ssthresh, called on entering recovery
        }
        let s = self.rate.on_feedback(now, report);
        if let Some(r) = s.rtt {
            self.rtt.on_sample(r);
        }
        self.update_bw(&s);
        self.update_ack_aggregation(&s);
        if self.mode == Mode::ProbeBw && self.is_next_cycle_phase(now, &s) {
            self.advance_cycle_phase();
        }
        self.check_full_bw_reached(s.sample.is_some_and(|r| r.is_app_limited));
        self.check_drain(now, &s);
        self.update_min_rtt(now, &s);
        self.update_gains();
        let bw = self.bw();
        self.set_pacing_rate(bw, self.pacing_gain);
        self.set_cwnd(&s, bw);
    }

    fn on_rto(&mut self, _now: Time, in_flight: u64) {
        if self.episodes.on_rto() {
            self.save_cwnd();
        }
        // Linux bbr_set_state(TCP_CA_Loss) and tcp_enter_loss.
        self.prev_ca_state = CaState::Loss;
        self.full_bw = 0.0;
        self.round_start = true;
        self.lt_bw_sampling(self.mss, false);
        // tcp_enter_loss: one packet above what is still in flight.
        self.cwnd = in_flight + self.mss;
        self.rate.on_rto();
    }

    fn decision(&self) -> Decision {
        window_decision(self.cwnd, self.rtt.srtt_or_initial(), self.pacing.rate())
    }

    fn state(&self, out: &mut Vec<(&'static str, f64)>) {
        let mss = self.mss as f64;
        out.push(("mode", self.mode as u8 as f64));
        out.push(("cwnd_packets", self.cwnd as f64 / mss));
        out.push(("btl_bw_bps", self.bw() * 8.0));
        out.push(("lt_bw_bps", self.lt.estimate() * 8.0));
        out.push(("lt_use_bw", self.lt.rate().is_some() as u8 as f64));
        out.push((
            "min_rtt_ms",
            self.min_rtt.map_or(f64::NAN, |d| d.as_millis_f64()),
        ));
        out.push(("pacing_gain", self.pacing_gain));
        out.push(("cwnd_gain", self.cwnd_gain));
        out.push(("pacing_bps", self.pacing.rate().bps()));
        out.push(("round_count", self.rounds.count() as f64));
        out.push(("full_bw_reached", self.full_bw_reached as u8 as f64));
        out.push(("full_bw_cnt", self.full_bw_cnt as f64));
        out.push(("cycle_idx", self.cycle_idx as f64));
        out.push(("extra_acked_packets", self.aggregation.max() as f64 / mss));
        out.push(("probe_rtt_count", self.probe_rtt.count() as f64));
        out.push(("ca_state", self.episodes.state.log_code()));
        out.push(("app_limited", self.rate.is_app_limited() as u8 as f64));
        out.push(("delivery_rate_bps", self.last_sample * 8.0));
        if self.pct.is_some() {
            // BBR-S also feeds the original filter; its value shows what BBR would estimate.
            out.push(("max_filter_bw_bps", self.bw.get() * 8.0));
        }
    }
}

pub fn info() -> ControllerInfo {
    ControllerInfo {
        name: "bbr".into(),
        summary: "BBR v1 as in Linux tcp_bbr.c (model-based: bottleneck bandwidth and min RTT)."
            .into(),
        params: BbrConfig::param_docs(),
        feedback: TCP_FEEDBACK,
        media: Default::default(),
        build: build_fn(|params, ctx| build("bbr", params, ctx)),
    }
}

/// `bbr-s`: `bbr` with `bw_estimator = "percentile"` by default (Vargas et al.'s BBR-S).
pub fn info_s() -> ControllerInfo {
    ControllerInfo {
        name: "bbr-s".into(),
        summary: "BBR-S (Vargas et al., WWW '21): bbr with the 85th-percentile bandwidth \
                  estimator (bw_estimator = \"percentile\" by default)."
            .into(),
        media: Default::default(),
        build: build_fn(|params, ctx| build("bbr-s", &with_percentile(params), ctx)),
        ..info()
    }
}

fn build(
    name: &str,
    params: &Params,
    ctx: &ControllerContext,
) -> Result<Box<dyn Controller>, ControllerError> {
    let config: BbrConfig = parse_config(name, params)?;
    boxed(name, Bbr::new(config, ctx.now))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::bbr_common::{CWND_GAIN, DRAIN_GAIN, FULL_BW_THRESH, PROBE_RTT_TIME};
    use crate::cc::delivery_rate::testpath::Path;
    use crate::units::Rate;

    const MSS: u64 = 1500;

    fn bbr(seed: u64) -> Bbr {
        let p: Params = toml::from_str(&format!("seed = {seed}")).unwrap();
        Bbr::new(parse_config("bbr", &p).unwrap(), Time::ZERO).unwrap()
    }

    /// BBR-S (`bw_estimator = "percentile"`) with the given reading.
    fn bbr_s(reading: &str) -> Bbr {
        let p: Params = toml::from_str(&format!(
            "bw_estimator = \"percentile\"\npercentile_reading = \"{reading}\""
        ))
        .unwrap();
        Bbr::new(parse_config("bbr", &p).unwrap(), Time::ZERO).unwrap()
    }

    /// An ACK of one 1500-byte packet carrying a rate sample of `bw` bytes/s over 10 ms.
    fn ack_with_sample(bw: f64, app_limited: bool) -> AckSummary {
        use crate::cc::delivery_rate::RateSample;
        let interval = Duration::from_millis(10);
        AckSummary {
            acked: 1500,
            sample: Some(RateSample {
                delivered: (bw * interval.as_secs_f64()).round() as u64,
                interval,
                send_elapsed: interval,
                ack_elapsed: interval,
                prior_delivered: 0,
                is_app_limited: app_limited,
                tx_in_flight: 15_000,
                lost: 0,
            }),
            ..AckSummary::default()
        }
    }

    #[test]
    fn the_linux_constants_and_the_gain_cycle_start_e0() {
        // Extraction §6.3 E0, against tcp_bbr.c's fixed-point definitions (BBR_UNIT = 256).
        assert_eq!(256 * 2885 / 1000 + 1, 739, "bbr_high_gain's formula");
        assert_eq!(256 * 1000 / 2885, 88, "bbr_drain_gain's formula");
        assert_eq!(HIGH_GAIN * 256.0, 739.0, "STARTUP gain 739/256");
        assert_eq!(DRAIN_GAIN * 256.0, 88.0, "DRAIN gain 88/256");
        assert_eq!(CWND_GAIN * 256.0, 512.0, "PROBE_BW cwnd gain 2");
        assert_eq!(
            PACING_GAIN.map(|g| g * 256.0),
            [320.0, 192.0, 256.0, 256.0, 256.0, 256.0, 256.0, 256.0],
            "the PROBE_BW cycle {{5/4, 3/4, 1 × 6}}"
        );
        assert_eq!(FULL_BW_THRESH * 256.0, 320.0, "bbr_full_bw_thresh = 5/4");
        assert_eq!(FULL_BW_CNT, 3);
        assert_eq!(BW_RTTS, 10, "bbr_bw_rtts = CYCLE_LEN + 2");
        assert_eq!(MIN_RTT_WIN, Duration::from_millis(10_000));
        assert_eq!(PROBE_RTT_TIME, Duration::from_millis(200));
        assert_eq!(CWND_MIN_TARGET, 4);
        // The pipe is full exactly on the third counted round without 25 % growth.
        let mut b = bbr(1);
        b.bw.update(1, 100.0);
        b.round_start = true;
        b.check_full_bw_reached(false);
        for (round, reached) in [(2, false), (3, false), (4, true)] {
            b.bw.update(round, 124.0);
            b.check_full_bw_reached(false);
            assert_eq!(
                b.full_bw_reached, reached,
                "round {round}: {} non-growth rounds counted",
                b.full_bw_cnt
            );
        }
        // The random start phase is never index 1 (the 0.75 drain phase) and covers the rest.
        let mut seen = [false; 8];
        for seed in 0..1000 {
            let mut b = bbr(seed);
            b.reset_probe_bw();
            assert_ne!(
                b.cycle_idx, 1,
                "seed {seed} started PROBE_BW in the 0.75 phase"
            );
            seen[b.cycle_idx] = true;
        }
        assert_eq!(seen, [true, false, true, true, true, true, true, true]);
    }

    #[test]
    fn bbr_s_reads_the_percentile_skips_app_limited_samples_and_still_feeds_the_max() {
        let mut b = bbr_s("code");
        b.min_rtt = Some(Duration::from_millis(40));
        b.update_bw(&ack_with_sample(1e6, false));
        assert_eq!(b.max_bw(), 1e6, "warm-up: the newest sample");
        // An app-limited sample above the estimate: the Linux max filter takes it (it raises
        // the maximum), the percentile history does not (paper §7.1: non-app-limited only).
        b.update_bw(&ack_with_sample(9e6, true));
        assert_eq!(b.max_bw(), 1e6, "app-limited samples are not inserted");
        assert_eq!(b.pct.as_ref().unwrap().count(), 1);
        assert_eq!(b.bw.get(), 9e6, "the original filter is still fed");
        assert_eq!(get(&b, "max_filter_bw_bps"), 72e6);
        assert_eq!(
            get(&b, "btl_bw_bps"),
            8e6,
            "btl_bw is the percentile estimate"
        );
        // The estimate is what the model uses: the window target follows it, not the max.
        assert_eq!(b.bdp(b.max_bw(), 1.0), 27, "1 MB/s × 40 ms = 26.7 packets");
        // A plain bbr never logs the extra signal.
        let mut s = vec![];
        bbr(1).state(&mut s);
        assert!(s.iter().all(|x| x.0 != "max_filter_bw_bps"));
    }

    #[test]
    fn bbr_s_forgets_a_faster_past_after_86_samples_while_the_max_holds_ten_rounds() {
        let mut p = path();
        let mut c = bbr_s("code");
        p.run(&mut c, Time::from_millis(3000), |_, _, _| {});
        assert!(
            (get(&c, "btl_bw_bps") - 12e6).abs() < 1.0,
            "every steady sample is the link rate: {}",
            get(&c, "btl_bw_bps")
        );
        p.rate = Some(Rate::from_mbps(6.0));
        let t0 = p.now;
        let r0 = get(&c, "round_count");
        let mut dropped_at = None;
        p.run(&mut c, t0 + Duration::from_millis(2000), |t, c, _| {
            if dropped_at.is_none() && get(c, "btl_bw_bps") <= 6.1e6 {
                dropped_at = Some((t, get(c, "round_count"), get(c, "max_filter_bw_bps")));
            }
        });
        let (t, round, max) = dropped_at.expect("the percentile estimate reaches 6 Mbit/s");
        // At 6 Mbit/s an ACK comes every 2 ms: the 86 samples that push the old rate above
        // sorted[85] take about 172 ms, plus the flight that mixes both rates.
        let after = (t - t0).as_millis_f64();
        assert!(
            after < 600.0,
            "the estimate fell {after} ms after the change"
        );
        assert!(
            round < r0 + 10.0,
            "within the max filter's 10 rounds: {round} vs {r0}"
        );
        assert_eq!(max, 12e6, "the max filter still holds the old rate then");
    }

    use crate::cc::test_support::signal as get;

    /// 12 Mbit/s (one packet per ms) behind 40 ms: min_rtt 41 ms, BDP 41 packets.
    fn path() -> Path {
        Path::new(Duration::from_millis(40), Some(Rate::from_mbps(12.0)))
    }

    #[test]
    fn the_bandwidth_filter_is_the_max_over_ten_rounds() {
        let mut f = WindowedMax {
            window: BW_RTTS,
            q: VecDeque::new(),
        };
        f.update(0, 10.0);
        for r in 1..10 {
            f.update(r, 5.0 + r as f64 * 0.1);
            assert_eq!(f.get(), 10.0, "round {r}");
        }
        f.update(10, 5.0);
        assert_eq!(f.get(), 5.9, "the round-0 sample leaves after ten rounds");
        f.update(19, 1.0);
        assert_eq!(f.get(), 5.0, "the round-9 sample leaves at round 19");
        f.update(20, 1.0);
        assert_eq!(f.get(), 1.0);
    }

    #[test]
    fn full_bandwidth_is_declared_after_three_rounds_without_25_percent_growth() {
        let mut b = bbr(1);
        let step = |b: &mut Bbr, round: u64, bw: f64, app_limited: bool| {
            b.bw.update(round, bw);
            b.round_start = true;
            b.check_full_bw_reached(app_limited);
            (b.full_bw, b.full_bw_cnt, b.full_bw_reached)
        };
        assert_eq!(step(&mut b, 1, 1.0, false), (1.0, 0, false));
        assert_eq!(step(&mut b, 2, 2.0, false), (2.0, 0, false));
        assert_eq!(
            step(&mut b, 3, 2.4, false),
            (2.0, 1, false),
            "+20 % is not growth"
        );
        assert_eq!(
            step(&mut b, 4, 2.5, false),
            (2.5, 0, false),
            "+25 % over 2.0 is"
        );
        assert_eq!(step(&mut b, 5, 3.0, false), (2.5, 1, false));
        assert_eq!(
            step(&mut b, 6, 3.0, true),
            (2.5, 1, false),
            "app-limited rounds do not count"
        );
        assert_eq!(step(&mut b, 7, 3.1, false), (2.5, 2, false));
        b.round_start = false;
        b.check_full_bw_reached(false);
        assert_eq!(b.full_bw_cnt, 2, "only round starts count");
        assert_eq!(step(&mut b, 8, 3.1, false), (2.5, 3, true));
    }

    #[test]
    fn startup_fills_the_pipe_then_drains_and_paces_at_the_link_rate() {
        let mut p = path();
        let mut c = bbr(1);
        // (round, btl_bw) at each round start while in STARTUP, and the round that left it.
        let mut rounds: Vec<(f64, f64)> = vec![];
        let mut exit_round = None;
        p.run(&mut c, Time::from_millis(3000), |_, c, _| {
            let (round, mode) = (get(c, "round_count"), get(c, "mode"));
            if mode == 0.0 && rounds.last().is_none_or(|r| r.0 < round) {
                rounds.push((round, get(c, "btl_bw_bps")));
            }
            if mode != 0.0 && exit_round.is_none() {
                exit_round = Some(round);
            }
        });
        // The last round whose bandwidth grew 25 % over the reference, then three more.
        let mut reference = 0.0;
        let mut last_growth = 0.0;
        for &(round, bw) in &rounds {
            if bw >= 1.25 * reference {
                reference = bw;
                last_growth = round;
            }
        }
        assert_eq!(exit_round, Some(last_growth + 3.0), "{rounds:?}");
        // Samples on the saturated link are exactly its rate; min_rtt is propagation + one
        // serialisation.
        assert!((get(&c, "btl_bw_bps") - 12e6).abs() < 1e-3);
        assert_eq!(get(&c, "min_rtt_ms"), 41.0);
        assert_eq!(get(&c, "mode"), 2.0);
        let gain = get(&c, "pacing_gain");
        assert!((get(&c, "pacing_bps") - gain * 12e6 * 0.99).abs() < 1e-3);
        // cwnd = 2 BDP (82 packets) + aggregation allowance + 3 quanta of 2 packets, rounded up
        // to even, + 2 in the probing phase.
        let extra = get(&c, "extra_acked_packets").floor() as u64;
        let probe = if get(&c, "cycle_idx") == 0.0 { 2 } else { 0 };
        let expect = ((82 + extra + 6 + 1) & !1) + probe;
        assert_eq!(get(&c, "cwnd_packets"), expect as f64);
        assert!(
            extra <= 2,
            "per-packet ACKs at the link rate hardly aggregate: {extra}"
        );
    }

    #[test]
    fn probe_bw_cycles_the_gains_starting_anywhere_but_the_drain_phase() {
        let mut p = path();
        let mut c = bbr(7);
        let mut phases: Vec<(Time, usize)> = vec![];
        p.run(&mut c, Time::from_millis(6000), |t, c, _| {
            let idx = get(c, "cycle_idx") as usize;
            if get(c, "mode") == 2.0 && phases.last().is_none_or(|x| x.1 != idx) {
                phases.push((t, idx));
            }
        });
        assert!(phases.len() > 50, "{phases:?}");
        assert_ne!(phases[0].1, 1, "never starts in the 0.75 phase");
        for w in phases.windows(2) {
            assert_eq!(w[1].1, (w[0].1 + 1) % 8, "{phases:?}");
            let len = (w[1].0 - w[0].0).as_millis_f64();
            // A phase lasts one min_rtt (41 ms) of delivery time, measured at 1 ms ACKs; the
            // 1.25 phase also waits for inflight to reach 1.25 BDP (+ quantization budget).
            let ok = match w[0].1 {
                0 => (42.0..=120.0).contains(&len),
                // The 0.75 phase ends early once inflight is down to one BDP.
                1 => len > 0.0 && len <= 43.0,
                _ => (42.0..=43.0).contains(&len),
            };
            assert!(ok, "phase {} lasted {len} ms", w[0].1);
        }
        // The random start phase: any of the seven phases but 0.75, each seen over many seeds.
        let mut seen = [0u32; 8];
        for seed in 0..700 {
            let mut b = bbr(seed);
            b.full_bw_reached = true;
            b.reset_probe_bw();
            seen[b.cycle_idx] += 1;
        }
        assert_eq!(seen[1], 0);
        assert!(
            seen.iter()
                .enumerate()
                .all(|(i, n)| i == 1 || (70..130).contains(n)),
            "{seen:?}"
        );
    }

    #[test]
    fn probe_rtt_every_ten_seconds_for_200_ms_at_four_packets() {
        let mut p = path();
        let mut c = bbr(1);
        let mut entries = vec![];
        let mut exits = vec![];
        let mut in_probe_rtt = false;
        p.run(&mut c, Time::from_millis(22_000), |t, c, _| {
            let now_in = get(c, "mode") == 3.0;
            if now_in {
                assert_eq!(c.decision().cwnd, Some(4 * MSS));
            }
            if now_in && !in_probe_rtt {
                entries.push(t);
            }
            if !now_in && in_probe_rtt {
                exits.push(t);
            }
            in_probe_rtt = now_in;
        });
        assert_eq!(entries.len(), 2, "{entries:?}");
        assert_eq!(exits.len(), 2);
        // min_rtt (41 ms) was first measured at 41 ms and never undercut; the filter expires
        // 10 s later, at the first ACK after 10.041 s.
        let first = entries[0].as_millis_f64();
        assert!((10_041.0..10_043.0).contains(&first), "{first}");
        for (e, x) in entries.iter().zip(&exits) {
            let held = (*x - *e).as_millis_f64();
            // Inflight falls to 4 packets within about one RTT, then 200 ms and one round.
            assert!((241.0..400.0).contains(&held), "{held}");
        }
        // The next one comes 10 s after the previous exit.
        let gap = (entries[1] - exits[0]).as_millis_f64();
        assert!((10_000.0..10_003.0).contains(&gap), "{gap}");
        assert_eq!(get(&c, "probe_rtt_count"), 2.0);
    }

    #[test]
    fn the_bandwidth_estimate_holds_ten_rounds_after_the_link_slows_down() {
        let mut p = path();
        let mut c = bbr(1);
        p.run(&mut c, Time::from_millis(3000), |_, _, _| {});
        let r0 = get(&c, "round_count");
        p.rate = Some(Rate::from_mbps(6.0));
        let mut trace = vec![];
        p.run(&mut c, Time::from_millis(6000), |_, c, _| {
            trace.push((get(c, "round_count"), get(c, "btl_bw_bps")));
        });
        for &(round, bw) in &trace {
            if round <= r0 + 9.0 {
                assert!(bw >= 12e6 - 1.0, "round {round}: {bw}");
            }
            if round >= r0 + 12.0 {
                assert!(bw <= 6.0e6 * 1.01, "round {round}: {bw}");
            }
        }
        assert!(trace.last().unwrap().0 > r0 + 20.0);
    }

    #[test]
    fn loss_recovery_conserves_packets_and_restores_the_window() {
        let mut p = path();
        p.dropper = Box::new(|pkt| pkt.seq == 2000);
        let mut c = bbr(1);
        let mut seen = vec![];
        p.run(&mut c, Time::from_millis(3000), |_, c, r| {
            seen.push((
                r.lost_count(),
                r.in_flight,
                c.decision().cwnd.unwrap(),
                get(c, "ca_state"),
            ));
        });
        let i = seen.iter().position(|x| x.0 == 1).unwrap();
        let before = seen[i - 1].2;
        // Entering recovery: cwnd = inflight + acked (one packet).
        assert_eq!(seen[i].2, seen[i].1 + MSS);
        assert_eq!(seen[i].3, 1.0);
        let end = i + seen[i..].iter().position(|x| x.3 == 0.0).unwrap();
        assert!(
            seen[end].2 >= before,
            "restored: {} vs {before}",
            seen[end].2
        );
    }

    #[test]
    fn a_timeout_cuts_to_one_packet_and_recovery_restores_the_window() {
        let mut p = path();
        let mut c = bbr(1);
        p.run(&mut c, Time::from_millis(3000), |_, _, _| {});
        let before = c.decision().cwnd.unwrap();
        p.rto(&mut c);
        assert_eq!(c.decision().cwnd, Some(MSS));
        assert_eq!(get(&c, "ca_state"), 2.0);
        let mut after = vec![];
        let t = p.now + Duration::from_millis(100);
        p.run(&mut c, t, |_, c, _| after.push(c.decision().cwnd.unwrap()));
        assert!(after[0] >= before.min(82 * MSS), "{} vs {before}", after[0]);
        assert_eq!(get(&c, "ca_state"), 0.0);
    }

    #[test]
    fn an_ack_of_new_data_ends_the_idle_restart_even_without_a_rate_sample() {
        // tcp_bbr.c bbr_update_min_rtt clears idle_restart when rs->delivered > 0, which
        // tcp_rate_gen fills before it discards an interval below min_rtt.
        let mut c = bbr(1);
        c.idle_restart = true;
        let s = AckSummary {
            acked: 1500,
            delivered: Some(3000),
            sample: None,
            ..AckSummary::default()
        };
        c.update_min_rtt(Time::from_millis(1), &s);
        assert!(!c.idle_restart, "PROBE_RTT is no longer held off");
        c.idle_restart = true;
        let s = AckSummary {
            acked: 1500,
            ..AckSummary::default()
        };
        c.update_min_rtt(Time::from_millis(2), &s);
        assert!(
            c.idle_restart,
            "no send-time snapshot: Linux rs->delivered = -1"
        );
    }
}
