//! PIE, "Proportional Integral controller Enhanced" (Pan et al., HPSR 2013; RFC 8033; Linux
//! `net/sched/sch_pie.c` and `include/net/pie.h`).
//!
//! # The idea
//!
//! PIE keeps the queueing delay near `target` by dropping arrivals at random with a probability
//! `p` that a controller recomputes every `tupdate` from an estimate of the queueing delay:
//!
//! ```text
//! p ← p + α·(qdelay − target) + β·(qdelay − qdelay_old)        (delays in seconds, α, β in 1/s)
//! ```
//!
//! The α term integrates the error: as long as the delay stays above target, `p` keeps growing,
//! and it shrinks while the delay is below. The β term reacts to the *trend*: a delay that grew
//! since the last update raises `p` at once, one that fell lowers it, which damps the loop. Drops
//! happen at **enqueue**, so a dropped packet never took buffer space, and the controller is
//! cheap: one update per `tupdate`, one random draw per packet.
//!
//! # The pieces around the controller
//!
//! - **Auto-tuning of the gains** (RFC 8033 §4.2): with α = 0.125 and β = 1.25 a 10 ms error
//!   would move `p` by whole percents per update, far too much when `p` is 0.1 %. The gains are
//!   divided by a factor that grows as `p` falls. Linux 3.16 had three levels (p < 1 %: ÷8,
//!   p < 10 %: ÷2, else ×1); today's Linux and RFC 8033 go down in steps of ×10 in `p` (÷2 below
//!   10 %, then ÷4 more per decade, to ÷2048 below 0.0001 %).
//! - **Caps** (RFC 8033 §5.5): when `p ≥ 10 %` an update may raise it by at most 2 %; if the
//!   delay exceeds 250 ms, 2 % is added on top.
//! - **Decay** (RFC 8033 §4.2): after two updates in a row that saw no delay at all, `p` is cut
//!   (×0.98 in 3.16; `p − p/64` in today's Linux), skipped when the zero only means that the
//!   drain rate is not known yet.
//! - **Delay estimate**: either the *timestamp* estimator (RFC 8033 §4.3, today's Linux default):
//!   the sojourn time of the last dequeued packet (0 once the queue is empty); or the
//!   *dequeue-rate* estimator (RFC 8033 §5.2, Linux 3.16): by Little's law,
//!   `qdelay = backlog / avg_dq_rate`. The drain rate is measured only while there is a real
//!   queue: a measurement cycle starts at a dequeue that leaves at least `dq_threshold` bytes
//!   (10 000 in 3.16, 16 384 today), and ends once that many bytes have left; the cycle's rate is
//!   averaged with weight 1/8. Until a first cycle completes the delay reads 0, so PIE does not
//!   act on a queue that never reaches the threshold (80 ms of data at 1 Mbit/s in 3.16).
//! - **Burst allowance** (RFC 8033 §4.4): no early drop at all until `max_burst` of queueing
//!   has been seen, so that a short burst passes untouched. With the timestamp estimator it
//!   counts down by the time between dequeues; with the dequeue-rate estimator by the length of
//!   each completed measurement cycle.
//! - **Early-drop guards** (`drop_early`): never drop while burst allowance remains; nor when the
//!   delay is below target/2 and `p < 20 %`; nor with fewer than two MTUs queued (like RED's
//!   min_th). Then drop with probability `p`. Today's Linux de-randomizes (RFC 8033 §5.4): it
//!   accumulates `p` over arrivals since the last drop and never drops before the sum reaches
//!   0.85, always drops once it reaches 8.5.
//! - **Reset**: when the delay has been below target/2 for two updates and `p` is 0 (and, with the
//!   dequeue-rate estimator, a rate has been measured), the burst allowance is restored and the
//!   rate measurement starts over.
//! - **Tail drop** at `limit` (1000 packets) before any of this.
//!
//! # Defaults and their sources
//!
//! | parameter | [`PieParams::linux`] (default) | [`PieParams::linux_3_16`] | source |
//! |---|---|---|---|
//! | `target` | 15 ms | 20 ms | RFC 8033 §4.2; `pie_params_init()` in `include/net/pie.h` (5.x) and in 3.16 `sch_pie.c` |
//! | `tupdate` | 15 ms | 30 ms | same |
//! | `max_burst` | 150 ms | 100 ms | RFC 8033 §4.4; `pie_vars_init()` |
//! | `alpha`, `beta` | 0.125, 1.25 per s | same | RFC 8033 §4.2; `alpha = 2`, `beta = 20` in units of 1/16 |
//! | `limit` | 1000 packets | same | `pie_params_init()` |
//! | `estimator` | timestamp | dequeue rate | `dq_rate_estimator` off by default since Linux 5.1 |
//! | `dq_threshold` | 16 384 bytes | 10 000 bytes | `QUEUE_THRESHOLD` |
//! | `scaling` | fine (RFC 8033) | coarse (3 levels) | `pie_calculate_probability()` / 3.16 `calculate_probability()` |
//! | `decay` | 1/64 | 0.02 | same functions |
//! | `derandomize` | on | off | `accu_prob` in `pie_drop_early()` (5.x) |
//! | `mtu` | 1514 bytes | same | `psched_mtu()` |
//! | `ecn` | off | same | `pie_params_init()`: `params->ecn = false` |
//! | first update | 500 ms after time zero | same | `mod_timer(..., jiffies + HZ / 2)` in `pie_init()` |
//!
//! # Fidelity notes
//!
//! - Probabilities, gains and rates are floating point (Linux: fixed point scaled to 2³² or 2⁵⁶,
//!   with truncations and, in 3.16, a 32-bit `delta` that can overflow on delay jumps of about
//!   a second). The delay estimate is truncated to whole nanoseconds.
//! - The update timer is simulated exactly but lazily: before handling an event at `now`, every
//!   update due at or before `now` runs on the backlog the queue held then (it cannot have changed
//!   between events). Updates are at `500 ms + k·tupdate` on the caller's clock.
//! - No byte mode (off by default in Linux).
//!
//! # ECN (RFC 8033 §5.1; Linux `pie_qdisc_enqueue()`)
//!
//! With `ecn` on (off by default, as in Linux), an arrival that `drop_early` picks is **marked**
//! CE and enqueued instead of dropped if it is ECN-capable and the drop probability is at most
//! 10 % (`q->vars.prob <= MAX_PROB / 10`); above 10 %, or for a Not-ECT packet, it is dropped.
//! RFC 8033 §5.1: past that probability the queue is likely overloaded by flows that do not
//! respond, and marking would let it grow. So at `p ≤ 10 %` the share of ECT arrivals marked is
//! the share a Not-ECT flow would lose, at the same arrivals (the random draws are the same), and
//! above 10 % ECT packets are dropped like any other. Tail drops at `limit` stay drops.
//!
//! De-randomization detail, as in Linux: the accumulated probability `accu_prob` is reset when a
//! random draw picks a packet (in `pie_drop_early()`) and on every drop, but not when a packet
//! picked because `accu_prob ≥ 8.5` is marked; such a sum keeps forcing marks until the next
//! drop (or until `p` is 0). It takes about 77 draws in a row without a pick at `p = 10 %`.

use super::{InvalidParam, NetPacket, Queue, QueueLimit, Stamped, LINUX_MTU};
use crate::units::{Duration, Rate, Time};
use rand_chacha::ChaCha8Rng;
use rand_core::{Rng, SeedableRng};
use std::collections::VecDeque;

/// How PIE estimates the queueing delay (named in a configuration as below).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
pub enum PieEstimator {
    /// Sojourn time of the last dequeued packet (RFC 8033 §4.3; Linux ≥ 5.1 default).
    #[serde(rename = "timestamp")]
    Timestamp,
    /// Backlog divided by the measured drain rate, Little's law (RFC 8033 §5.2; Linux 3.16).
    #[serde(rename = "dq-rate")]
    DequeueRate,
}

/// How the gains shrink when the drop probability is small.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PieScaling {
    /// Linux 3.16: ÷8 below 1 %, ÷2 below 10 %.
    Coarse,
    /// RFC 8033 §4.2 and today's Linux: ÷2 below 10 %, then ÷4 more per decade down to 10⁻⁶.
    Fine,
}

/// PIE's parameters; see the module documentation for the two Linux variants.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PieParams {
    /// Target queueing delay.
    pub target: Duration,
    /// Period of the probability updates.
    pub tupdate: Duration,
    /// Burst allowance: no early drop until this much queueing has been seen.
    pub max_burst: Duration,
    /// Integral gain, per second.
    pub alpha: f64,
    /// Proportional gain, per second.
    pub beta: f64,
    /// Tail-drop limit.
    pub limit: QueueLimit,
    pub estimator: PieEstimator,
    /// Bytes a drain-rate measurement cycle needs (dequeue-rate estimator only).
    pub dq_threshold: u64,
    pub scaling: PieScaling,
    /// Fraction of `p` removed by an update after two updates without delay.
    pub decay: f64,
    /// Accumulate `p` between drops (RFC 8033 §5.4).
    pub derandomize: bool,
    /// No early drop with fewer than `2 × mtu` bytes queued.
    pub mtu: u32,
    /// Time of the first update on the caller's clock.
    pub first_update: Duration,
    /// Mark ECN-capable arrivals instead of dropping them early while `p ≤ 10 %`.
    pub ecn: bool,
}

/// Highest drop probability at which PIE marks ECN-capable packets instead of dropping them
/// (RFC 8033 §5.1; Linux `MAX_PROB / 10`).
pub const PIE_MARK_MAX_PROB: f64 = 0.1;

impl Default for PieParams {
    fn default() -> Self {
        PieParams::linux()
    }
}

impl PieParams {
    /// Today's Linux (≥ 5.1, aligned with RFC 8033).
    pub fn linux() -> PieParams {
        PieParams {
            target: Duration::from_millis(15),
            tupdate: Duration::from_millis(15),
            max_burst: Duration::from_millis(150),
            alpha: 0.125,
            beta: 1.25,
            limit: QueueLimit::Packets(1000),
            estimator: PieEstimator::Timestamp,
            dq_threshold: 16_384,
            scaling: PieScaling::Fine,
            decay: 1.0 / 64.0,
            derandomize: true,
            mtu: LINUX_MTU,
            first_update: Duration::from_millis(500),
            ecn: false,
        }
    }

    /// Linux 3.16's `sch_pie.c`, the kernel of the seed paper's testbed.
    pub fn linux_3_16() -> PieParams {
        PieParams {
            target: Duration::from_millis(20),
            tupdate: Duration::from_millis(30),
            max_burst: Duration::from_millis(100),
            estimator: PieEstimator::DequeueRate,
            dq_threshold: 10_000,
            scaling: PieScaling::Coarse,
            decay: 0.02,
            derandomize: false,
            ..PieParams::linux()
        }
    }

    pub fn validate(&self) -> Result<(), InvalidParam> {
        if self.target.0 == 0 {
            return Err(InvalidParam::NotPositive("target"));
        }
        if self.tupdate.0 == 0 {
            return Err(InvalidParam::NotPositive("tupdate"));
        }
        for (name, value) in [("alpha", self.alpha), ("beta", self.beta)] {
            if !value.is_finite() || value < 0.0 {
                return Err(InvalidParam::NegativeGain { name, value });
            }
        }
        if !(0.0..=1.0).contains(&self.decay) {
            return Err(InvalidParam::Decay(self.decay));
        }
        if self.dq_threshold == 0 {
            return Err(InvalidParam::NotPositive("dq_threshold"));
        }
        Ok(())
    }

    /// The factor the gains are multiplied by at drop probability `p`.
    pub fn gain_scale(&self, p: f64) -> f64 {
        if p >= 0.1 {
            return 1.0;
        }
        match self.scaling {
            PieScaling::Coarse => {
                if p < 0.01 {
                    1.0 / 8.0
                } else {
                    0.5
                }
            }
            PieScaling::Fine => {
                // ÷4 more for each decade below 1 %, down to p < 10⁻⁶.
                let mut scale = 0.5;
                let mut power = 100u32;
                while p < 1.0 / power as f64 && power <= 1_000_000 {
                    scale /= 4.0;
                    power *= 10;
                }
                scale
            }
        }
    }
}

/// PIE's variables (Linux `struct pie_vars` plus the probability).
#[derive(Debug, Clone, PartialEq)]
struct PieVars {
    prob: f64,
    accu_prob: f64,
    qdelay: Duration,
    qdelay_old: Duration,
    burst_time: Duration,
    /// Timestamp estimator: time of the last dequeue; dequeue-rate: start of the cycle.
    dq_tstamp: Option<Time>,
    /// Bytes dequeued in the current measurement cycle (none: no cycle running).
    dq_count: Option<u64>,
    /// Average drain rate, bytes per second (0: not measured).
    avg_dq_rate: f64,
}

impl PieVars {
    fn new(p: &PieParams) -> PieVars {
        PieVars {
            prob: 0.0,
            accu_prob: 0.0,
            qdelay: Duration::ZERO,
            qdelay_old: Duration::ZERO,
            burst_time: p.max_burst,
            dq_tstamp: None,
            dq_count: None,
            avg_dq_rate: 0.0,
        }
    }

    /// `pie_vars_init()`: restore the burst allowance and restart the rate measurement.
    fn reset(&mut self, p: &PieParams) {
        self.burst_time = p.max_burst;
        self.dq_tstamp = None;
        self.accu_prob = 0.0;
        self.dq_count = None;
        self.avg_dq_rate = 0.0;
    }

    /// One probability update, with `backlog` bytes queued (`pie_calculate_probability()`).
    fn update(&mut self, p: &PieParams, backlog: u64) {
        let (qdelay, qdelay_old) = match p.estimator {
            PieEstimator::DequeueRate => {
                let old = self.qdelay;
                self.qdelay_old = self.qdelay;
                let q = if self.avg_dq_rate > 0.0 {
                    Duration((backlog as f64 / self.avg_dq_rate * 1e9) as u64)
                } else {
                    Duration::ZERO
                };
                (q, old)
            }
            PieEstimator::Timestamp => (self.qdelay, self.qdelay_old),
        };
        // A zero delay with packets queued only means the drain rate is unknown: no decay.
        let mut decay_ok = !(qdelay.0 == 0 && backlog != 0);
        let scale = p.gain_scale(self.prob);
        let (alpha, beta) = (p.alpha * scale, p.beta * scale);
        let secs = |d: Duration| d.as_secs_f64();
        let mut delta =
            alpha * (secs(qdelay) - secs(p.target)) + beta * (secs(qdelay) - secs(qdelay_old));
        // Rise by at most 2 % per update once p ≥ 10 %.
        if delta > 0.02 && self.prob >= 0.1 {
            delta = 0.02;
        }
        // Very high delay: rise fast.
        if qdelay > Duration::from_millis(250) {
            delta += 0.02;
        }
        let mut prob = self.prob + delta;
        if prob > 1.0 {
            prob = 1.0;
            decay_ok = false;
        } else if prob < 0.0 {
            prob = 0.0;
        }
        if qdelay.0 == 0 && qdelay_old.0 == 0 && decay_ok {
            prob -= prob * p.decay;
        }
        self.prob = prob;
        self.qdelay = qdelay;
        let half = Duration(p.target.0 / 2);
        if self.qdelay < half
            && self.qdelay_old < half
            && self.prob == 0.0
            && (p.estimator == PieEstimator::Timestamp || self.avg_dq_rate > 0.0)
        {
            self.reset(p);
        }
        if p.estimator == PieEstimator::Timestamp {
            self.qdelay_old = qdelay;
        }
    }

    fn reduce_burst(&mut self, by: Duration) {
        self.burst_time = Duration(self.burst_time.0.saturating_sub(by.0));
    }

    /// Account for a dequeue at `now` of `size` bytes that entered at `enqueued`, leaving
    /// `backlog` bytes (`pie_process_dequeue()`).
    fn on_dequeue(&mut self, p: &PieParams, now: Time, size: u32, enqueued: Time, backlog: u64) {
        match p.estimator {
            PieEstimator::Timestamp => {
                self.qdelay = now - enqueued;
                let dtime = self.dq_tstamp.map_or(Duration::ZERO, |t| now - t);
                self.dq_tstamp = Some(now);
                if backlog == 0 {
                    self.qdelay = Duration::ZERO;
                }
                self.reduce_burst(dtime);
            }
            PieEstimator::DequeueRate => {
                if backlog >= p.dq_threshold && self.dq_count.is_none() {
                    self.dq_tstamp = Some(now);
                    self.dq_count = Some(0);
                }
                let Some(count) = self.dq_count.as_mut() else {
                    return;
                };
                *count += size as u64;
                if *count < p.dq_threshold {
                    return;
                }
                let start = self.dq_tstamp.unwrap_or(now);
                let dtime = now - start;
                if dtime.0 == 0 {
                    return;
                }
                let rate = *count as f64 / dtime.as_secs_f64();
                self.avg_dq_rate = if self.avg_dq_rate == 0.0 {
                    rate
                } else {
                    self.avg_dq_rate - self.avg_dq_rate / 8.0 + rate / 8.0
                };
                if backlog < p.dq_threshold {
                    self.dq_count = None;
                } else {
                    self.dq_count = Some(0);
                    self.dq_tstamp = Some(now);
                }
                self.reduce_burst(dtime);
            }
        }
    }
}

/// The PIE queue discipline (Linux `sch_pie`): one FIFO, early drops at enqueue.
pub struct Pie<P> {
    params: PieParams,
    vars: PieVars,
    packets: VecDeque<Stamped<P>>,
    bytes: u64,
    next_update: Time,
    rng: ChaCha8Rng,
    /// ECN-capable arrivals marked instead of dropped (Linux `ecn_mark`).
    ecn_marks: u64,
}

impl<P> Pie<P> {
    /// A PIE queue; `seed` drives its drop decisions.
    pub fn new(params: PieParams, seed: u64) -> Result<Pie<P>, InvalidParam> {
        params.validate()?;
        Ok(Pie {
            vars: PieVars::new(&params),
            params,
            packets: VecDeque::new(),
            bytes: 0,
            next_update: Time::ZERO + params.first_update,
            rng: ChaCha8Rng::seed_from_u64(seed),
            ecn_marks: 0,
        })
    }

    pub fn params(&self) -> &PieParams {
        &self.params
    }
    /// Drop probability as of the last update.
    pub fn probability(&self) -> f64 {
        self.vars.prob
    }
    /// Current queueing-delay estimate.
    pub fn qdelay(&self) -> Duration {
        self.vars.qdelay
    }
    /// Burst allowance left.
    pub fn burst_allowance(&self) -> Duration {
        self.vars.burst_time
    }
    /// ECN-capable arrivals marked CE instead of dropped.
    pub fn ecn_marks(&self) -> u64 {
        self.ecn_marks
    }
    /// Measured drain rate in bytes per second (dequeue-rate estimator; 0 until measured).
    pub fn dq_rate(&self) -> f64 {
        self.vars.avg_dq_rate
    }

    /// Run every probability update due at or before `now` (events call this themselves).
    pub fn update_to(&mut self, now: Time) {
        let step = self.params.tupdate;
        while self.next_update <= now {
            let before = self.vars.clone();
            self.vars.update(&self.params, self.bytes);
            self.next_update += step;
            if self.next_update == Time::MAX {
                break; // the end of time: no further update can be due
            }
            if self.vars == before && self.next_update <= now {
                // A fixed point: with the backlog unchanged, later updates change nothing.
                let skipped = (now - self.next_update).0 / step.0 + 1;
                self.next_update += Duration(step.0.saturating_mul(skipped));
            }
        }
    }

    fn uniform(&mut self) -> f64 {
        (self.rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Whether to drop an arrival early (`pie_drop_early()`); `backlog` is before it.
    fn drop_early(&mut self, backlog: u64) -> bool {
        let v = &mut self.vars;
        let p = &self.params;
        if v.burst_time.0 > 0 {
            return false;
        }
        if v.qdelay < Duration(p.target.0 / 2) && v.prob < 0.2 {
            return false;
        }
        if backlog < 2 * p.mtu as u64 {
            return false;
        }
        if p.derandomize {
            if v.prob == 0.0 {
                v.accu_prob = 0.0;
            } else {
                v.accu_prob += v.prob;
            }
            if v.accu_prob < 0.85 {
                return false;
            }
            if v.accu_prob >= 8.5 {
                return true;
            }
        }
        let prob = self.vars.prob;
        let picked = self.uniform() < prob;
        if picked && self.params.derandomize {
            // Linux resets the sum here, so a pick that becomes a mark restarts it too.
            self.vars.accu_prob = 0.0;
        }
        picked
    }
}

impl<P: NetPacket + Send> Queue<P> for Pie<P> {
    fn enqueue(&mut self, now: Time, pkt: P, link_rate: Rate) -> Result<(), P> {
        self.update_to(now);
        let fits = self
            .params
            .limit
            .admits(self.packets.len(), self.bytes, pkt.size(), link_rate);
        let mut pkt = pkt;
        if !fits {
            self.vars.accu_prob = 0.0;
            return Err(pkt);
        }
        if self.drop_early(self.bytes) {
            // RFC 8033 §5.1: mark an ECN-capable packet while p ≤ 10 %, otherwise drop.
            let mark = self.params.ecn && self.vars.prob <= PIE_MARK_MAX_PROB && pkt.set_ce();
            if !mark {
                self.vars.accu_prob = 0.0;
                return Err(pkt);
            }
            self.ecn_marks += 1;
        }
        self.bytes += pkt.size() as u64;
        self.packets.push_back(Stamped { at: now, pkt });
        Ok(())
    }

    fn dequeue(&mut self, now: Time, _dropped: &mut Vec<P>) -> Option<P> {
        self.update_to(now);
        let s = self.packets.pop_front()?;
        let size = s.pkt.size();
        self.bytes -= size as u64;
        self.vars
            .on_dequeue(&self.params, now, size, s.at, self.bytes);
        Some(s.pkt)
    }

    fn len_packets(&self) -> usize {
        self.packets.len()
    }
    fn len_bytes(&self) -> u64 {
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{check_conservation, ops, Tp, P};
    use super::*;
    use crate::packet::Ecn;
    use proptest::prelude::*;

    const MS: u64 = 1_000_000;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    /// Run one update of fresh timestamp-mode variables holding `p`, `qdelay`, `qdelay_old`.
    fn one_update(params: &PieParams, p: f64, qdelay_ms: u64, old_ms: u64, backlog: u64) -> f64 {
        let mut v = PieVars::new(params);
        v.prob = p;
        match params.estimator {
            PieEstimator::Timestamp => {
                v.qdelay = Duration::from_millis(qdelay_ms);
                v.qdelay_old = Duration::from_millis(old_ms);
            }
            PieEstimator::DequeueRate => {
                // qdelay = backlog / rate: a rate of 1 byte per µs makes it `backlog` µs.
                v.avg_dq_rate = 1e6;
                v.qdelay = Duration::from_millis(old_ms);
                assert_eq!(backlog, qdelay_ms * 1000);
            }
        }
        v.update(params, backlog);
        v.prob
    }

    #[test]
    fn linux_3_16_probability_updates_by_hand() {
        let p = PieParams::linux_3_16();
        // p < 1 %: α/8 = 0.015625, β/8 = 0.15625. qdelay 30 ms, old 20 ms, target 20 ms:
        // Δp = 0.015625·0.010 + 0.15625·0.010 = 0.00171875.
        assert!(close(one_update(&p, 0.0, 30, 20, 30_000), 0.00171875));
        // 1 % ≤ p < 10 %: α/2, β/2. qdelay 40, old 30: 0.0625·0.02 + 0.625·0.01 = 0.0075.
        assert!(close(one_update(&p, 0.05, 40, 30, 40_000), 0.0575));
        // p ≥ 10 %: full gains, 0.125·0.04 + 1.25·0.03 = 0.0425, capped at +2 %.
        assert!(close(one_update(&p, 0.15, 60, 30, 60_000), 0.17));
        // Below 10 % the cap does not apply: p = 0.09, same delays: ÷2 gains → 0.02125.
        assert!(close(one_update(&p, 0.09, 60, 30, 60_000), 0.11125));
        // Delay above 250 ms adds 2 % after the cap: 0.125·0.28 = 0.035 → 0.02 + 0.02.
        assert!(close(one_update(&p, 0.15, 300, 300, 300_000), 0.19));
        // Falling delay lowers p: p = 0.05, qdelay 10, old 30: 0.0625·(−0.01) + 0.625·(−0.02).
        assert!(close(
            one_update(&p, 0.05, 10, 30, 10_000),
            0.05 - 0.000625 - 0.0125
        ));
        // Never below zero.
        assert_eq!(one_update(&p, 0.001, 0, 100, 0), 0.0);
        // Idle (no delay twice): 0.5 + 0.125·(−0.02) = 0.4975, then ×0.98.
        assert!(close(one_update(&p, 0.5, 0, 0, 0), 0.4975 * 0.98));
    }

    #[test]
    fn linux_probability_updates_by_hand() {
        let p = PieParams::linux();
        // target 15 ms; qdelay 25, old 15: Δp = (α·0.010 + β·0.010)·scale = 0.01375·scale.
        for (prob, scale) in [
            (0.5, 1.0),
            (0.1, 1.0),
            (0.05, 1.0 / 2.0),
            (0.005, 1.0 / 8.0),
            (0.0005, 1.0 / 32.0),
            (0.00005, 1.0 / 128.0),
            (0.000005, 1.0 / 512.0),
            (0.0000005, 1.0 / 2048.0),
            (0.0, 1.0 / 2048.0),
        ] {
            assert_eq!(p.gain_scale(prob), scale, "p = {prob}");
            let got = one_update(&p, prob, 25, 15, 1);
            assert!(close(got, prob + 0.01375 * scale), "p = {prob}: {got}");
        }
        // The same small p under 3.16's coarse table: ÷8 for everything below 1 %.
        assert_eq!(PieParams::linux_3_16().gain_scale(0.0000005), 1.0 / 8.0);
        // Idle decay is p/64: 0.5 + 0.125·(−0.015) = 0.498125, then − 1/64 of it.
        assert!(close(
            one_update(&p, 0.5, 0, 0, 0),
            0.498125 * (1.0 - 1.0 / 64.0)
        ));
        // A zero delay with a backlog (the estimate is not ready) does not decay.
        assert!(close(one_update(&p, 0.5, 0, 0, 3000), 0.498125));
        // The cap applies from 10 %: 0.125·0.085 + 1.25·0.085 = 0.116875 → +0.02.
        assert!(close(one_update(&p, 0.1, 100, 15, 1), 0.12));
    }

    #[test]
    fn a_sequence_of_updates_in_timestamp_mode() {
        // Drive the controller with a sequence of measured delays, one per update.
        let p = PieParams::linux();
        let mut v = PieVars::new(&p);
        let mut expect = 0.0f64;
        let mut old = 0.0f64;
        for ms in [20u64, 30, 30, 40, 25, 15] {
            v.qdelay = Duration::from_millis(ms);
            v.update(&p, 10_000);
            let q = ms as f64 / 1000.0;
            let scale = p.gain_scale(expect);
            expect = (expect + scale * (0.125 * (q - 0.015) + 1.25 * (q - old))).max(0.0);
            old = q;
            assert!(close(v.prob, expect), "{ms} ms: {} vs {expect}", v.prob);
        }
        // First step by hand: 0.0 → (0.125·0.005 + 1.25·0.020)/2048 = 0.025625/2048.
        let mut w = PieVars::new(&p);
        w.qdelay = Duration::from_millis(20);
        w.update(&p, 10_000);
        assert!(close(w.prob, 0.025625 / 2048.0));
    }

    #[test]
    fn dequeue_rate_estimator_measures_cycles_of_10000_bytes() {
        let mut q = Pie::<P>::new(PieParams::linux_3_16(), 1).unwrap();
        let r = Rate(1e6);
        // 30 packets of 1000 bytes at 600 ms, then one dequeue per ms.
        for i in 0..30 {
            q.enqueue(Time(600 * MS), P(1000, i), r).unwrap();
        }
        let mut d = Vec::new();
        for k in 0..10u64 {
            q.dequeue(Time((601 + k) * MS), &mut d).unwrap();
        }
        // The cycle started at the first dequeue (29 000 bytes left ≥ 10 000) and counted that
        // packet too: 10 000 bytes in 9 ms (601 → 610 ms).
        assert!((q.dq_rate() - 10_000.0 / 0.009).abs() < 1e-6);
        assert_eq!(q.burst_allowance(), Duration::from_millis(91));
        // The next cycle: 10 packets from 611 to 620 ms (the previous cycle ended at 610 with
        // 20 000 bytes left, so the new one started there): 10 000 bytes in 10 ms.
        for k in 0..10u64 {
            q.dequeue(Time((611 + k) * MS), &mut d).unwrap();
        }
        let first = 10_000.0 / 0.009;
        let avg = first - first / 8.0 + (10_000.0 / 0.010) / 8.0;
        assert!((q.dq_rate() - avg).abs() < 1e-6);
        assert_eq!(q.burst_allowance(), Duration::from_millis(81));
        // Updates run at 500 + k·30 ms on the backlog of that moment. The one at 620 ms ran
        // just before the dequeue at 620 ms: 11 000 bytes queued and only the first rate known.
        // The one at 650 ms sees 10 000 bytes and the averaged rate.
        q.update_to(Time(650 * MS));
        let qd1 = Duration((11_000.0 / first * 1e9) as u64).as_secs_f64();
        let p1 = (0.125 * (qd1 - 0.020) + 1.25 * (qd1 - 0.0)) / 8.0;
        let qd2 = Duration((10_000.0 / avg * 1e9) as u64);
        assert_eq!(q.qdelay(), qd2);
        let qd2 = qd2.as_secs_f64();
        let p2 = p1 + (0.125 * (qd2 - 0.020) + 1.25 * (qd2 - qd1)) / 8.0;
        // By hand: qdelay 9.9 ms then 9.114 ms; p ≈ 0.0013891 then ≈ 0.0010961.
        assert!((qd1 - 0.0099).abs() < 1e-9 && (qd2 - 0.009114).abs() < 1e-6);
        assert!((p1 - 0.00138906).abs() < 1e-8 && (p2 - 0.00109614).abs() < 1e-7);
        assert!(close(q.probability(), p2), "{} vs {p2}", q.probability());
    }

    #[test]
    fn without_a_measured_rate_the_3_16_delay_reads_zero() {
        // A queue that never reaches 10 000 bytes: 9 packets of 1000 bytes, refilled forever.
        let mut q = Pie::<P>::new(PieParams::linux_3_16(), 1).unwrap();
        let mut d = Vec::new();
        for k in 0..2000u64 {
            while q.len_bytes() < 9_000 {
                q.enqueue(Time(k * 10 * MS), P(1000, 0), Rate(1e6)).unwrap();
            }
            q.dequeue(Time(k * 10 * MS), &mut d);
        }
        assert_eq!(q.dq_rate(), 0.0);
        assert_eq!(q.qdelay(), Duration::ZERO);
        assert_eq!(q.probability(), 0.0);
        assert_eq!(q.burst_allowance(), Duration::from_millis(100));
    }

    #[test]
    fn timestamp_burst_allowance_counts_time_between_dequeues_and_resets_when_idle() {
        let mut q = Pie::<P>::new(PieParams::linux(), 1).unwrap();
        let mut d = Vec::new();
        for i in 0..20 {
            q.enqueue(Time(100 * MS), P(1000, i), Rate(1e6)).unwrap();
        }
        // The first dequeue has no previous one: no reduction; then 10 ms per dequeue.
        for k in 0..10u64 {
            q.dequeue(Time((110 + 10 * k) * MS), &mut d).unwrap();
        }
        assert_eq!(q.burst_allowance(), Duration::from_millis(150 - 90));
        assert_eq!(q.qdelay(), Duration::from_millis(100));
        for k in 10..20u64 {
            q.dequeue(Time((110 + 10 * k) * MS), &mut d).unwrap();
        }
        assert_eq!(q.burst_allowance(), Duration::ZERO);
        // Emptied: delay 0. Idle updates bring p to 0 and then reset the allowance.
        assert_eq!(q.qdelay(), Duration::ZERO);
        q.update_to(Time(10_000 * MS));
        assert_eq!(q.probability(), 0.0);
        assert_eq!(q.burst_allowance(), Duration::from_millis(150));
    }

    #[test]
    fn no_early_drop_while_burst_allowance_remains() {
        let mut q = Pie::<P>::new(PieParams::linux(), 3).unwrap();
        q.vars.prob = 1.0;
        q.vars.qdelay = Duration::from_millis(100);
        for i in 0..500 {
            assert!(q.enqueue(Time::ZERO, P(1500, i), Rate(1e6)).is_ok());
        }
    }

    /// A PIE whose updates never come (first update far away) with a forced state.
    fn forced<Q>(params: PieParams, prob: f64, qdelay_ms: u64) -> Pie<Q> {
        let mut q = Pie::<Q>::new(
            PieParams {
                first_update: Duration::from_secs_f64(1e6),
                limit: QueueLimit::Unlimited,
                ..params
            },
            7,
        )
        .unwrap();
        q.vars.prob = prob;
        q.vars.burst_time = Duration::ZERO;
        q.vars.qdelay = Duration::from_millis(qdelay_ms);
        q
    }

    #[test]
    fn early_drop_guards() {
        let r = Rate(1e6);
        // Low delay (< target/2) and p < 20 %: no drop even at p = 19 %.
        let mut q = forced(PieParams::linux_3_16(), 0.19, 9);
        for i in 0..1000 {
            assert!(q.enqueue(Time::ZERO, P(1500, i), r).is_ok());
        }
        // Low delay but p ≥ 20 %: drops.
        let mut q = forced(PieParams::linux_3_16(), 0.5, 9);
        let drops = (0..1000)
            .filter(|&i| q.enqueue(Time::ZERO, P(1500, i), r).is_err())
            .count();
        assert!(drops > 350 && drops < 650, "{drops}");
        // Fewer than two MTUs queued: never.
        let mut q = forced(PieParams::linux_3_16(), 1.0, 50);
        assert!(q.enqueue(Time::ZERO, P(1500, 0), r).is_ok());
        assert!(q.enqueue(Time::ZERO, P(1500, 1), r).is_ok());
        assert_eq!(q.len_bytes(), 3000); // < 3028 = 2 × 1514
        assert!(q.enqueue(Time::ZERO, P(20, 2), r).is_ok());
        // 3020 < 3028 still; now 3040 ≥ 3028: p = 1 drops everything.
        assert!(q.enqueue(Time::ZERO, P(20, 3), r).is_ok());
        assert!(q.enqueue(Time::ZERO, P(20, 4), r).is_err());
    }

    #[test]
    fn drops_with_probability_p() {
        // 3.16 (no de-randomization): the drop fraction follows p.
        let r = Rate(1e6);
        for prob in [0.05, 0.3] {
            let mut q = forced(PieParams::linux_3_16(), prob, 50);
            let n = 20_000;
            let drops = (0..n)
                .filter(|&i| q.enqueue(Time::ZERO, P(1500, i), r).is_err())
                .count() as f64;
            let sd = (n as f64 * prob * (1.0 - prob)).sqrt();
            assert!(
                (drops - n as f64 * prob).abs() < 5.0 * sd,
                "p = {prob}: {drops}"
            );
        }
    }

    /// `n` arrivals of codepoint `ecn` into a forced PIE (probability `prob`, delay 50 ms, never
    /// updated) with its `ecn` switch `marking`: the indices of the arrivals dropped and of
    /// those marked.
    fn early_signals(
        params: PieParams,
        prob: f64,
        ecn: Ecn,
        marking: bool,
        n: u64,
    ) -> (Vec<u64>, Vec<u64>) {
        let mut q = forced(
            PieParams {
                ecn: marking,
                ..params
            },
            prob,
            50,
        );
        let (mut drops, mut marks) = (Vec::new(), Vec::new());
        for id in 0..n {
            let p = Tp {
                id,
                size: 1500,
                flow: 0,
                ecn,
            };
            if q.enqueue(Time::ZERO, p, Rate(1e6)).is_err() {
                drops.push(id);
            }
        }
        let mut d = Vec::new();
        while let Some(p) = q.dequeue(Time::ZERO, &mut d) {
            if p.ecn.is_ce() {
                marks.push(p.id);
            }
        }
        assert_eq!(q.ecn_marks() as usize, marks.len());
        (drops, marks)
    }

    #[test]
    fn marks_ect_packets_with_probability_p_up_to_10_percent_and_drops_above() {
        let n = 20_000u64;
        for prob in [0.02, 0.05, 0.1, 0.15, 0.3] {
            // 3.16 (no de-randomization): every arrival past the guards is picked with
            // probability p. The picks of an ECT flow are marks up to 10 % and drops above.
            let (drops, marks) = early_signals(PieParams::linux_3_16(), prob, Ecn::Ect0, true, n);
            let (signals, other) = if prob <= PIE_MARK_MAX_PROB {
                (marks.len(), drops.len())
            } else {
                (drops.len(), marks.len())
            };
            assert_eq!(other, 0, "p = {prob}");
            let sd = (n as f64 * prob * (1.0 - prob)).sqrt();
            assert!(
                (signals as f64 - n as f64 * prob).abs() < 5.0 * sd,
                "p = {prob}: {signals} of {n}"
            );
            // The same arrivals as a Not-ECT flow loses (the same random draws).
            let (not_ect_drops, none) =
                early_signals(PieParams::linux_3_16(), prob, Ecn::NotEct, true, n);
            assert!(none.is_empty());
            let picked = if prob <= PIE_MARK_MAX_PROB {
                &marks
            } else {
                &drops
            };
            assert_eq!(picked, &not_ect_drops, "p = {prob}");
        }
    }

    #[test]
    fn derandomized_marks_replace_drops_one_for_one() {
        // Today's Linux at p = 5 %: the marks of an ECT flow fall on the arrivals a Not-ECT
        // flow loses, spaced by the accumulated probability as drops are.
        let n = 20_000;
        let (drops, marks) = early_signals(PieParams::linux(), 0.05, Ecn::Ect0, true, n);
        assert!(drops.is_empty());
        let (not_ect_drops, _) = early_signals(PieParams::linux(), 0.05, Ecn::NotEct, true, n);
        assert_eq!(marks, not_ect_drops);
        // Without the switch an ECT flow is dropped like any other.
        let (ect_drops, none) = early_signals(PieParams::linux(), 0.05, Ecn::Ect0, false, n);
        assert!(none.is_empty());
        assert_eq!(ect_drops, not_ect_drops);
    }

    #[test]
    fn derandomized_drops_are_spaced() {
        // Today's Linux at p = 10 %: the accumulated probability must reach 0.85 (9 arrivals)
        // before a drop is possible, and reaching 8.5 forces one (86 arrivals: 85 × 0.1 falls
        // just short of 8.5, in the kernel's fixed point as in floating point).
        let r = Rate(1e6);
        let mut q = forced(PieParams::linux(), 0.1, 50);
        let mut last_drop: Option<u32> = None;
        let mut gaps = Vec::new();
        for i in 0..20_000u32 {
            if q.enqueue(Time::ZERO, P(1500, i), r).is_err() {
                if let Some(l) = last_drop {
                    gaps.push(i - l);
                }
                last_drop = Some(i);
            }
        }
        assert!(gaps.len() > 500);
        assert!(gaps.iter().all(|&g| (9..=86).contains(&g)), "{gaps:?}");
        let mean = gaps.iter().sum::<u32>() as f64 / gaps.len() as f64;
        // Geometric after 8 free arrivals: mean ≈ 8 + 1/0.1 = 18.
        assert!((mean - 18.0).abs() < 1.5, "{mean}");
    }

    #[test]
    fn tail_drop_at_the_limit() {
        let mut q = Pie::<P>::new(
            PieParams {
                limit: QueueLimit::Packets(5),
                ..PieParams::linux()
            },
            1,
        )
        .unwrap();
        for i in 0..5 {
            assert!(q.enqueue(Time::ZERO, P(100, i), Rate(1e6)).is_ok());
        }
        assert_eq!(q.enqueue(Time::ZERO, P(100, 5), Rate(1e6)), Err(P(100, 5)));
    }

    #[test]
    fn a_standing_queue_raises_p_and_drops() {
        // 1 Mbit/s link (one 1250-byte packet per 10 ms) offered 2 Mbit/s: PIE pushes the delay
        // down towards target with drops, where a FIFO would grow without bound.
        for params in [PieParams::linux(), PieParams::linux_3_16()] {
            let mut q = Pie::<P>::new(params, 11).unwrap();
            let mut d = Vec::new();
            let mut drops = 0;
            let mut delays = Vec::new();
            for k in 0..6000u64 {
                let t = Time(k * 5 * MS);
                if q.enqueue(t, P(1250, 0), Rate(1e6)).is_err() {
                    drops += 1;
                }
                if k % 2 == 0 {
                    q.dequeue(t, &mut d);
                }
                if k > 3000 {
                    delays.push(q.len_bytes() as f64 / 125.0); // ms at 1 Mbit/s
                }
            }
            let mean = delays.iter().sum::<f64>() / delays.len() as f64;
            assert!(drops > 1000, "{drops}");
            assert!(mean < 4.0 * params.target.as_millis_f64(), "{mean} ms");
            assert!(q.probability() > 0.1);
        }
    }

    #[test]
    fn invalid_params_are_refused() {
        for bad in [
            PieParams {
                tupdate: Duration::ZERO,
                ..PieParams::linux()
            },
            PieParams {
                target: Duration::ZERO,
                ..PieParams::linux()
            },
            PieParams {
                alpha: -1.0,
                ..PieParams::linux()
            },
            PieParams {
                beta: f64::NAN,
                ..PieParams::linux()
            },
        ] {
            assert!(Pie::<P>::new(bad, 1).is_err());
        }
    }

    proptest! {
        #[test]
        fn pie_conserves_packets(ops in ops(), limit in 1u64..200, old in any::<bool>(), seed in 0u64..1000,
                                 ecn in any::<bool>()) {
            let base = if old { PieParams::linux_3_16() } else { PieParams::linux() };
            let params = PieParams {
                limit: QueueLimit::Packets(limit),
                max_burst: Duration::from_millis(20),
                first_update: Duration::ZERO,
                dq_threshold: 3000,
                ecn,
                ..base
            };
            check_conservation(&mut Pie::new(params, seed).unwrap(), &ops)?;
        }
    }
}
