//! DualPI2, the DualQ Coupled AQM of L4S (RFC 9332; De Schepper et al., "PI²: A Linearized AQM
//! for both Classic and Scalable TCP", CoNEXT 2016; Linux `net/sched/sch_dualpi2.c`).
//!
//! # The idea
//!
//! Two kinds of senders share one bottleneck. *Classic* senders (Reno, Cubic) halve their window
//! on a congestion signal and need a queue about as deep as their RTT to keep the link busy; their
//! rate goes as `1 / √p` in the signal probability `p`. *Scalable* senders (DCTCP, TCP Prague,
//! SCReAM v2) reduce in proportion to the share of marked packets, so a tiny, shallow queue keeps
//! them busy, and their rate goes as `1 / p`. L4S (RFC 9330) gives scalable traffic its own queue,
//! picked by the ECT(1) codepoint (RFC 9331), with an immediate, shallow marking threshold, and
//! *couples* the two queues' signals so that the two kinds get about the same rate:
//!
//! ```text
//! p' ← p' + α·(qdelay − target) + β·(qdelay − qdelay_old)    every tupdate (PI on the delay)
//! classic queue:  drop (or mark an ECT(0) packet) with probability  p_C  = p'²
//! L4S queue:      mark with probability                             p_CL = k·p'   (k = 2)
//!                 and also mark every packet that waited more than the step threshold (1 ms)
//! ```
//!
//! Squaring the classic probability makes the classic rate `1/√(p'²) = 1/p'`, linear in `p'` like
//! the scalable rate `1/(k·p')`: one PI controller (PI², "PI improved with a square") drives
//! both, and with `k = 2` their windows come out about equal at equal RTTs (RFC 9332 §2.1). The
//! controller works on the *base* probability `p'`, which keeps it linear and stable over the
//! whole range (RFC 9332 §2.4). The step marks come from the L queue's own "native" AQM: they act
//! within a packet time, where the coupled marks follow the PI's slow pace.
//!
//! # The pieces
//!
//! - **Classifier** (RFC 9332 §2.3, Linux `dualpi2_skb_classify()`): ECT(1) and CE go to the L
//!   queue, Not-ECT and ECT(0) to the classic queue (`ecn_mask = ECT(1)`: `ect & 0b01 != 0`).
//! - **Scheduler** (RFC 9332 §2.4.1, Linux's "classic protection"): the L queue has priority, but
//!   a weighted round robin in bytes keeps a backlogged classic queue from starving: a credit
//!   counter moves by `wc × size` when the L queue is served while the classic queue waits, and by
//!   `−wl × size` the other way (`wc = 10 %`, `wl = 90 %`); the L queue is served while the credit
//!   is ≤ 0. It starts at `mtu × (wc − wl)`, in favour of L, and is reset whenever both are empty.
//! - **Signals at dequeue** (Linux `must_drop()`, `drop_early = false`): nothing is dropped or
//!   marked while less than two MTUs stay queued (like RED's `min_th`). Otherwise an L packet is
//!   marked with probability `k·p'`; a classic packet draws twice against `p'` (probability `p'²`)
//!   and is marked if ECT(0), dropped otherwise. The step mark is applied after, to L packets
//!   whose sojourn exceeds `step_thresh`.
//! - **Overload** (RFC 9332 §4.2.1; `drop_overload`, on by default): once `k·p' > 1` the
//!   scalable marks saturate; from there on the L queue also *drops* with probability `p'²`, as
//!   the classic queue does, and ECT(0) classic packets are dropped instead of marked, which
//!   keeps unresponsive traffic from filling the buffer. With `drop_overload` off `p'` is capped at
//!   `1/k` and both queues grow to the limit instead.
//! - **PI update** (Linux `calculate_probability()`): every `tupdate` the delay is the larger of
//!   the two queues' head sojourn times (RFC 9332's pseudocode uses the classic queue's only;
//!   Linux takes the maximum so that an overloaded L queue raises `p'` too), and `p'` stays in
//!   `[0, 1]`.
//! - **Limit**: arrivals beyond `limit` packets (both queues together) are dropped, ECT or not.
//!
//! # Defaults and their sources
//!
//! | parameter | default | source |
//! |---|---|---|
//! | `target` | 15 ms | RFC 9332 Appendix A; `dualpi2_reset_default()` |
//! | `tupdate` | 16 ms | same |
//! | `alpha` | 0.16 per s | RFC 9332 A.1; Linux "~0.16 Hz" (41/256 = 0.1602) |
//! | `beta` | 3.2 per s | same; Linux "~3.2 Hz" (819/256 = 3.1992); both for a 10 dB stability margin up to 100 ms RTT |
//! | `step_thresh` | 1 ms of sojourn | same; RFC 9332 §A.1's ramp has `minTh` 800 µs + 400 µs |
//! | `min_qlen_step` | 0 packets | mainline Linux: the step applies whatever the L queue's length (RFC 9332 §A.1's `Th_len` of 1 packet, "more than one queued", and the L4S team's module are 2 here) |
//! | `coupling` | 2 | RFC 9332 §2.1 (window fairness at equal RTT) |
//! | `drop_overload` | on | same |
//! | `c_protection` | 10 % | same (`wc`) |
//! | `limit` | 10 000 packets | same ("125 ms at 1 Gbit/s"); RFC 9332 suggests 250 ms at the link rate |
//! | `mtu` | 1514 bytes | `psched_mtu()`, as for PIE |
//! | first update | `tupdate` after time zero | mainline `dualpi2_init()` starts its hrtimer at now + `tupdate` (the L4S team's out-of-tree module waited `HZ / 2`, as `sch_pie` does) |
//!
//! The gains are RFC 9332's: each update moves `p'` by `α` per second of delay error (a 10 ms
//! excess adds 0.0016). Linux keeps them in fixed point (1/256 Hz over netlink, 64 ns inside);
//! here they are floating point.
//!
//! # Fidelity notes
//!
//! - Probabilities are `f64` draws against a seeded ChaCha stream (Linux: `u32` against
//!   `prandom_u32()`); the update timer runs lazily, like PIE's: every update due at or before an
//!   event runs before it, on the queue the event found (it cannot have changed in between).
//! - Drops and marks happen at dequeue only (Linux's default `drop_early = false`); GSO
//!   splitting, byte-mode steps (`step_thresh` in packets is supported) and the `memlimit` of
//!   later kernels are not modelled, and `ecn_mask` is fixed to ECT(1).

use super::{InvalidParam, NetPacket, Queue, QueueLimit, Stamped, LINUX_MTU};
use crate::packet::Ecn;
use crate::units::{Duration, Rate, Time};
use rand_chacha::ChaCha8Rng;
use rand_core::{Rng, SeedableRng};
use std::collections::VecDeque;

/// Where the L queue's step marking starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepThreshold {
    /// A packet's sojourn time in the L queue (Linux's default, 1 ms).
    Sojourn(Duration),
    /// The L queue's length in packets after the dequeue (`step_packets`).
    Packets(u32),
}

/// DualPI2's parameters (Linux `dualpi2_reset_default()`; see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DualPi2Params {
    /// Queueing delay the PI controller aims for.
    pub target: Duration,
    /// Period of the probability updates.
    pub tupdate: Duration,
    /// Integral gain, per second.
    pub alpha: f64,
    /// Proportional gain, per second.
    pub beta: f64,
    pub step: StepThreshold,
    /// Apply the step only to packets that found at least this many packets in the L queue.
    pub min_qlen_step: u32,
    /// `k`: L marking probability = k × base probability.
    pub coupling: f64,
    /// Drop from both queues once `k·p' > 1` (else cap `p'` at `1/k`).
    pub drop_overload: bool,
    /// The classic queue's share of the round robin, percent (`wc`; `wl = 100 − wc`).
    pub c_protection: u8,
    /// Tail-drop limit over both queues.
    pub limit: QueueLimit,
    /// No drop or mark with fewer than `2 × mtu` bytes queued.
    pub mtu: u32,
    /// Time of the first update on the caller's clock.
    pub first_update: Duration,
}

impl Default for DualPi2Params {
    fn default() -> Self {
        DualPi2Params::linux()
    }
}

impl DualPi2Params {
    /// Linux's defaults.
    pub fn linux() -> DualPi2Params {
        DualPi2Params {
            target: Duration::from_millis(15),
            tupdate: Duration::from_millis(16),
            alpha: 0.16,
            beta: 3.2,
            step: StepThreshold::Sojourn(Duration::from_millis(1)),
            min_qlen_step: 0,
            coupling: 2.0,
            drop_overload: true,
            c_protection: 10,
            limit: QueueLimit::Packets(10_000),
            mtu: LINUX_MTU,
            first_update: Duration::from_millis(16),
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
        if !(self.coupling.is_finite() && self.coupling >= 1.0 && self.coupling <= 255.0) {
            return Err(InvalidParam::Coupling(self.coupling));
        }
        if self.c_protection > 100 {
            return Err(InvalidParam::CProtection(self.c_protection));
        }
        Ok(())
    }
}

/// Which of the two queues a packet is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lane {
    Classic,
    L4s,
}

/// A queued packet: its enqueue time, and whether the step may mark it.
struct Entry<P> {
    stamped: Stamped<P>,
    apply_step: bool,
}

/// The DualPI2 queue discipline (Linux `sch_dualpi2`): a classic and an L4S FIFO behind one
/// limit, one PI² controller, signals at dequeue.
pub struct DualPi2<P> {
    params: DualPi2Params,
    classic: VecDeque<Entry<P>>,
    l4s: VecDeque<Entry<P>>,
    bytes: u64,
    /// The base probability `p'`.
    prob: f64,
    /// Head sojourn times at the last update (Linux `qdelay_c`, `qdelay_l`).
    qdelay_c: Duration,
    qdelay_l: Duration,
    /// Round-robin credit in bytes × percent: the L queue is served while it is ≤ 0.
    credit: i64,
    next_update: Time,
    rng: ChaCha8Rng,
    /// CE marks applied, coupled and step (Linux `ecn_mark`; a packet marked by both counts
    /// twice, as there).
    ecn_marks: u64,
    /// Of those, marks of the step (Linux `step_marks`).
    step_marks: u64,
    /// Packets dropped at dequeue by the AQM.
    aqm_drops: u64,
}

impl<P> DualPi2<P> {
    /// A DualPI2 queue; `seed` drives its drop and mark decisions.
    pub fn new(params: DualPi2Params, seed: u64) -> Result<DualPi2<P>, InvalidParam> {
        params.validate()?;
        Ok(DualPi2 {
            params,
            classic: VecDeque::new(),
            l4s: VecDeque::new(),
            bytes: 0,
            prob: 0.0,
            qdelay_c: Duration::ZERO,
            qdelay_l: Duration::ZERO,
            credit: initial_credit(&params),
            next_update: Time::ZERO + params.first_update,
            rng: ChaCha8Rng::seed_from_u64(seed),
            ecn_marks: 0,
            step_marks: 0,
            aqm_drops: 0,
        })
    }

    pub fn params(&self) -> &DualPi2Params {
        &self.params
    }
    /// The base probability `p'` as of the last update.
    pub fn base_probability(&self) -> f64 {
        self.prob
    }
    /// The classic queue's drop (or mark) probability, `p'²`.
    pub fn classic_probability(&self) -> f64 {
        self.prob * self.prob
    }
    /// The L queue's coupled mark probability, `min(k·p', 1)`.
    pub fn coupled_probability(&self) -> f64 {
        (self.params.coupling * self.prob).min(1.0)
    }
    /// CE marks applied by the coupling and the step together (a packet marked by both counts
    /// twice, as Linux's `ecn_mark` does).
    pub fn ecn_marks(&self) -> u64 {
        self.ecn_marks
    }
    /// Packets marked CE by the L queue's step.
    pub fn step_marks(&self) -> u64 {
        self.step_marks
    }
    /// Packets the AQM dropped (not counting arrivals refused at the limit).
    pub fn aqm_drops(&self) -> u64 {
        self.aqm_drops
    }
    /// Packets in the classic queue and in the L queue.
    pub fn lens(&self) -> (usize, usize) {
        (self.classic.len(), self.l4s.len())
    }

    /// Run every probability update due at or before `now` (events call this themselves).
    pub fn update_to(&mut self, now: Time) {
        let step = self.params.tupdate;
        while self.next_update <= now {
            let at = self.next_update;
            let before = (self.prob, self.qdelay_c, self.qdelay_l);
            self.update(at);
            self.next_update += step;
            if self.next_update == Time::MAX {
                break;
            }
            let idle = self.classic.is_empty() && self.l4s.is_empty();
            if idle
                && before == (self.prob, self.qdelay_c, self.qdelay_l)
                && self.next_update <= now
            {
                // Empty queues and an unchanged state: the updates due before `now` change
                // nothing either (no packet arrived in between).
                let skipped = (now - self.next_update).0 / step.0 + 1;
                self.next_update += Duration(step.0.saturating_mul(skipped));
            }
        }
    }

    /// One PI² update at `at` (`calculate_probability()`).
    fn update(&mut self, at: Time) {
        let head = |q: &VecDeque<Entry<P>>| q.front().map_or(Duration::ZERO, |e| at - e.stamped.at);
        let qdelay_old = self.qdelay_c.max(self.qdelay_l);
        self.qdelay_c = head(&self.classic);
        self.qdelay_l = head(&self.l4s);
        let qdelay = self.qdelay_c.max(self.qdelay_l);
        let secs = |d: Duration| d.as_secs_f64();
        let delta = self.params.alpha * (secs(qdelay) - secs(self.params.target))
            + self.params.beta * (secs(qdelay) - secs(qdelay_old));
        let cap = if self.params.drop_overload {
            1.0
        } else {
            1.0 / self.params.coupling
        };
        self.prob = (self.prob + delta).clamp(0.0, cap);
    }

    fn roll(&mut self, p: f64) -> bool {
        ((self.rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64) < p
    }

    /// Two draws against `p'`: probability `p'²`, as Linux's `dualpi2_squared_roll()`.
    fn squared_roll(&mut self) -> bool {
        let p = self.prob;
        self.roll(p) && self.roll(p)
    }

    /// The AQM's verdict on a packet leaving `lane` (Linux `must_drop()`): `true` to drop it;
    /// marks it CE when that is the signal.
    fn must_drop(&mut self, lane: Lane, pkt: &mut P) -> bool
    where
        P: NetPacket,
    {
        if self.bytes < 2 * self.params.mtu as u64 {
            return false;
        }
        let coupled = self.params.coupling * self.prob;
        let overloaded = coupled > 1.0;
        let (drop, mark) = match lane {
            // Overload: a classic drop (p'²) if asked, a mark for every other L packet.
            Lane::L4s if overloaded => {
                let drop = self.params.drop_overload && self.squared_roll();
                (drop, !drop)
            }
            Lane::L4s => (false, self.roll(coupled)),
            // p'²: a mark for ECT(0), a drop for Not-ECT and for everything on overload.
            Lane::Classic => {
                let hit = self.squared_roll();
                let drop = hit && (overloaded || pkt.ecn() == Ecn::NotEct);
                (drop, hit && !drop)
            }
        };
        if mark && pkt.set_ce() {
            self.ecn_marks += 1;
        }
        drop
    }
}

fn initial_credit(p: &DualPi2Params) -> i64 {
    let wc = p.c_protection as i64;
    p.mtu as i64 * (wc - (100 - wc))
}

impl<P: NetPacket + Send> Queue<P> for DualPi2<P> {
    fn enqueue(&mut self, now: Time, pkt: P, link_rate: Rate) -> Result<(), P> {
        self.update_to(now);
        let queued = self.classic.len() + self.l4s.len();
        if !self
            .params
            .limit
            .admits(queued, self.bytes, pkt.size(), link_rate)
        {
            return Err(pkt);
        }
        self.bytes += pkt.size() as u64;
        // RFC 9331 §5.1: ECT(1) and CE identify L4S packets (Linux `ecn_mask = ECT(1)`).
        if matches!(pkt.ecn(), Ecn::Ect1 | Ecn::Ce) {
            let apply_step = self.l4s.len() >= self.params.min_qlen_step as usize;
            self.l4s.push_back(Entry {
                stamped: Stamped { at: now, pkt },
                apply_step,
            });
        } else {
            self.classic.push_back(Entry {
                stamped: Stamped { at: now, pkt },
                apply_step: false,
            });
        }
        Ok(())
    }

    fn dequeue(&mut self, now: Time, dropped: &mut Vec<P>) -> Option<P> {
        self.update_to(now);
        loop {
            let from_l4s = !self.l4s.is_empty() && (self.classic.is_empty() || self.credit <= 0);
            let (lane, entry) = if from_l4s {
                let e = self.l4s.pop_front().expect("the L queue is not empty");
                (Lane::L4s, e)
            } else if let Some(e) = self.classic.pop_front() {
                (Lane::Classic, e)
            } else {
                self.credit = initial_credit(&self.params);
                return None;
            };
            // The credit moves only while the other queue waits: +wc per byte served from L,
            // −wl per byte from the classic queue.
            let (other_waiting, weight) = match lane {
                Lane::L4s => (!self.classic.is_empty(), self.params.c_protection as i64),
                Lane::Classic => (
                    !self.l4s.is_empty(),
                    -(100 - self.params.c_protection as i64),
                ),
            };
            let credit_change = if other_waiting {
                weight * entry.stamped.pkt.size() as i64
            } else {
                0
            };
            let Entry {
                stamped: Stamped { at, mut pkt },
                apply_step,
            } = entry;
            self.bytes -= pkt.size() as u64;
            if self.must_drop(lane, &mut pkt) {
                self.aqm_drops += 1;
                dropped.push(pkt);
                continue;
            }
            if lane == Lane::L4s && apply_step {
                let over = match self.params.step {
                    StepThreshold::Sojourn(t) => now - at > t,
                    StepThreshold::Packets(n) => self.l4s.len() > n as usize,
                };
                if over && pkt.set_ce() {
                    self.ecn_marks += 1;
                    self.step_marks += 1;
                }
            }
            self.credit += credit_change;
            return Some(pkt);
        }
    }

    fn len_packets(&self) -> usize {
        self.classic.len() + self.l4s.len()
    }
    fn len_bytes(&self) -> u64 {
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{check_conservation, ops, Tp};
    use super::*;
    use proptest::prelude::*;

    const MS: u64 = 1_000_000;

    fn pkt(id: u64, ecn: Ecn) -> Tp {
        Tp {
            id,
            size: 1500,
            flow: 0,
            ecn,
        }
    }

    /// A queue whose base probability is forced to `p` and that never updates it.
    fn forced(p: f64, params: DualPi2Params) -> DualPi2<Tp> {
        let mut q = DualPi2::new(
            DualPi2Params {
                first_update: Duration(u64::MAX / 2),
                ..params
            },
            7,
        )
        .unwrap();
        q.prob = p;
        q
    }

    /// About `n` packets of codepoint `ecn` leave a standing backlog at base probability `p`:
    /// how many were served, how many of those came out CE-marked, and how many were dropped.
    fn signals(p: f64, ecn: Ecn, n: u64, params: DualPi2Params) -> (u64, u64, u64) {
        let mut q = forced(p, params);
        let rate = Rate::from_mbps(10.0);
        let mut dropped = Vec::new();
        let (mut marked, mut id) = (0, 0);
        let mut served = 0;
        while served + (dropped.len() as u64) < n {
            // Keep 40 packets queued: a run of drops inside one dequeue never takes the queue
            // below the two-MTU floor, under which nothing is signalled.
            while q.len_packets() < 40 {
                q.enqueue(Time::ZERO, pkt(id, ecn), rate).unwrap();
                id += 1;
            }
            // No sojourn at all: the step never fires.
            let p = q.dequeue(Time::ZERO, &mut dropped).unwrap();
            served += 1;
            marked += p.ecn.is_ce() as u64;
        }
        (served, marked, dropped.len() as u64)
    }

    fn within(got: u64, n: u64, p: f64) -> bool {
        let expect = n as f64 * p;
        let sd = (n as f64 * p * (1.0 - p)).sqrt();
        (got as f64 - expect).abs() <= 4.0 * sd + 1.0
    }

    #[test]
    fn the_pi_update_follows_rfc_9332() {
        // RFC 9332 A.1: p' += alpha·(curq − target) + beta·(curq − prevq), with the Linux gains.
        let mut q: DualPi2<Tp> = DualPi2::new(DualPi2Params::linux(), 1).unwrap();
        let rate = Rate::from_mbps(1.0);
        assert_eq!(q.params().first_update, q.params().tupdate);
        for i in 0..20 {
            q.enqueue(Time::from_millis(10), pkt(i, Ecn::NotEct), rate)
                .unwrap();
        }
        // The first update at tupdate = 16 ms: the head came at 10 ms and has waited 6 ms;
        // prevq was 0. Below target, the integral term pulls down, the proportional one up.
        q.update_to(Time::from_millis(16));
        let first = 0.16 * (0.006 - 0.015) + 3.2 * 0.006;
        assert!(
            (q.base_probability() - first).abs() < 1e-12,
            "{} vs {first}",
            q.base_probability()
        );
        // The next at 32 ms: the head has waited 22 ms, prevq 6 ms.
        q.update_to(Time::from_millis(32));
        let second = first + 0.16 * (0.022 - 0.015) + 3.2 * 0.016;
        assert!((q.base_probability() - second).abs() < 1e-12);
        assert!((q.classic_probability() - second * second).abs() < 1e-12);
        assert!((q.coupled_probability() - (2.0 * second).min(1.0)).abs() < 1e-12);
        // Empty queues below target pull p' down, and never below 0.
        let mut dropped = Vec::new();
        while q.dequeue(Time::from_millis(517), &mut dropped).is_some() {}
        q.update_to(Time::from_millis(10_000));
        assert_eq!(q.base_probability(), 0.0);
    }

    #[test]
    fn an_arrival_after_an_idle_spell_is_seen_by_the_next_update() {
        // Idle through the first updates (p' stays 0), then a burst at 105 ms: the update at
        // 112 ms (16 ms × 7) must see its 7 ms head sojourn, not be skipped as idle.
        let mut q: DualPi2<Tp> = DualPi2::new(DualPi2Params::linux(), 1).unwrap();
        let rate = Rate::from_mbps(1.0);
        q.update_to(Time::from_millis(100));
        for i in 0..10 {
            q.enqueue(Time::from_millis(105), pkt(i, Ecn::NotEct), rate)
                .unwrap();
        }
        q.update_to(Time::from_millis(112));
        assert_eq!(q.qdelay_c, Duration::from_millis(7));
        let expect = 0.16 * (0.007 - 0.015) + 3.2 * 0.007;
        assert!((q.base_probability() - expect).abs() < 1e-12);
    }

    #[test]
    fn the_update_reads_the_larger_head_sojourn_of_the_two_queues() {
        let mut q: DualPi2<Tp> = DualPi2::new(DualPi2Params::linux(), 1).unwrap();
        let rate = Rate::from_mbps(1.0);
        q.enqueue(Time::from_millis(10), pkt(0, Ecn::NotEct), rate)
            .unwrap();
        q.enqueue(Time::from_millis(5), pkt(1, Ecn::Ect1), rate)
            .unwrap();
        q.update_to(Time::from_millis(16));
        assert_eq!(q.qdelay_c, Duration::from_millis(6));
        assert_eq!(q.qdelay_l, Duration::from_millis(11));
        let expect = 0.16 * (0.011 - 0.015) + 3.2 * 0.011;
        assert!((q.base_probability() - expect).abs() < 1e-12);
    }

    #[test]
    fn classic_packets_are_dropped_with_p_squared_and_l4s_marked_with_k_p() {
        let p = 0.2;
        let linux = DualPi2Params::linux();
        let (served, marked, dropped) = signals(p, Ecn::NotEct, 40_000, linux);
        assert_eq!(marked, 0, "a Not-ECT packet is never marked");
        let n = served + dropped;
        assert!(
            within(dropped, n, p * p),
            "dropped {dropped} of {n}, p² = {}",
            p * p
        );
        let (n, marked, dropped) = signals(p, Ecn::Ect0, 40_000, linux);
        assert_eq!(
            dropped, 0,
            "ECT(0) in the classic queue is marked, not dropped"
        );
        assert!(within(marked, n, p * p), "marked {marked} of {n}");
        let (n, marked, dropped) = signals(p, Ecn::Ect1, 40_000, linux);
        assert_eq!(dropped, 0);
        assert!(
            within(marked, n, 2.0 * p),
            "marked {marked} of {n}, k·p = {}",
            2.0 * p
        );
    }

    #[test]
    fn overload_drops_from_both_queues_unless_told_not_to() {
        // k·p' = 1.2 > 1: every L packet is marked or dropped, a drop with probability p'².
        let p = 0.6;
        let linux = DualPi2Params::linux();
        let (served, marked, dropped) = signals(p, Ecn::Ect1, 20_000, linux);
        assert!(
            within(dropped, served + dropped, p * p),
            "dropped {dropped}"
        );
        assert_eq!(marked, served, "every L packet gets a signal");
        let (served, marked, dropped) = signals(p, Ecn::Ect0, 20_000, linux);
        assert_eq!(
            marked, 0,
            "overload drops ECT(0) classic packets instead of marking"
        );
        assert!(within(dropped, served + dropped, p * p));
        let keep = DualPi2Params {
            drop_overload: false,
            ..linux
        };
        let (served, marked, dropped) = signals(p, Ecn::Ect1, 20_000, keep);
        assert_eq!(
            (marked, dropped),
            (served, 0),
            "no drop_overload: L packets are only marked"
        );
        // And the controller then caps p' at 1/k.
        let mut q: DualPi2<Tp> = DualPi2::new(keep, 1).unwrap();
        for i in 0..100 {
            q.enqueue(Time::ZERO, pkt(i, Ecn::NotEct), Rate::from_mbps(1.0))
                .unwrap();
        }
        q.update_to(Time::from_millis(5_000));
        assert_eq!(q.base_probability(), 0.5);
    }

    #[test]
    fn no_signal_with_less_than_two_mtus_queued() {
        let mut q = forced(1.0, DualPi2Params::linux());
        let rate = Rate::from_mbps(1.0);
        let mut dropped = Vec::new();
        q.enqueue(Time::ZERO, pkt(0, Ecn::NotEct), rate).unwrap();
        q.enqueue(Time::ZERO, pkt(1, Ecn::NotEct), rate).unwrap();
        // After taking the first, 1500 bytes stay: below 2 × 1514.
        assert!(q.dequeue(Time::ZERO, &mut dropped).is_some());
        assert!(q.dequeue(Time::ZERO, &mut dropped).is_some());
        assert!(dropped.is_empty());
    }

    #[test]
    fn the_step_marks_l4s_packets_that_waited_more_than_1ms() {
        let mut q = forced(0.0, DualPi2Params::linux());
        let rate = Rate::from_mbps(1.0);
        let mut dropped = Vec::new();
        for i in 0..4 {
            q.enqueue(Time::ZERO, pkt(i, Ecn::Ect1), rate).unwrap();
        }
        let at = |us: u64| Time::ZERO + Duration::from_micros(us);
        assert!(
            !q.dequeue(at(1000), &mut dropped).unwrap().ecn.is_ce(),
            "exactly 1 ms: no mark"
        );
        assert!(q.dequeue(at(1001), &mut dropped).unwrap().ecn.is_ce());
        // ECT(1) becomes CE; a CE packet stays CE and is counted.
        assert_eq!(q.dequeue(at(5000), &mut dropped).unwrap().ecn, Ecn::Ce);
        assert_eq!((q.ecn_marks(), q.step_marks()), (2, 2));
        // Classic packets never see the step, however long they wait.
        q.enqueue(Time::ZERO, pkt(9, Ecn::Ect0), rate).unwrap();
        q.dequeue(at(1001), &mut dropped).unwrap(); // the last L packet
        assert_eq!(q.dequeue(at(90_000), &mut dropped).unwrap().ecn, Ecn::Ect0);
        // In packets: mark when more than n stay in the L queue.
        let mut q = forced(
            0.0,
            DualPi2Params {
                step: StepThreshold::Packets(2),
                ..DualPi2Params::linux()
            },
        );
        for i in 0..5 {
            q.enqueue(Time::ZERO, pkt(i, Ecn::Ect1), rate).unwrap();
        }
        let marks: Vec<bool> = (0..5)
            .map(|_| q.dequeue(Time::ZERO, &mut dropped).unwrap().ecn.is_ce())
            .collect();
        assert_eq!(
            marks,
            [true, true, false, false, false],
            "4, 3, 2, 1, 0 left"
        );
    }

    #[test]
    fn ect1_and_ce_go_to_the_l_queue_ect0_and_not_ect_to_the_classic_one() {
        let mut q = forced(0.0, DualPi2Params::linux());
        let rate = Rate::from_mbps(1.0);
        for (i, e) in [Ecn::NotEct, Ecn::Ect0, Ecn::Ect1, Ecn::Ce]
            .into_iter()
            .enumerate()
        {
            q.enqueue(Time::ZERO, pkt(i as u64, e), rate).unwrap();
        }
        assert_eq!(q.lens(), (2, 2));
        // The L queue goes first (the credit starts in its favour).
        let mut dropped = Vec::new();
        let order: Vec<u64> = (0..4)
            .map(|_| q.dequeue(Time::ZERO, &mut dropped).unwrap().id)
            .collect();
        assert_eq!(order, [2, 3, 0, 1]);
    }

    #[test]
    fn a_backlogged_classic_queue_gets_its_ten_percent() {
        let mut q = forced(0.0, DualPi2Params::linux());
        let rate = Rate::from_mbps(1.0);
        let mut dropped = Vec::new();
        let (mut id, mut bytes) = (0u64, [0u64; 2]);
        for _ in 0..20 {
            q.enqueue(Time::ZERO, pkt(id, Ecn::NotEct), rate).unwrap();
            q.enqueue(Time::ZERO, pkt(id + 1, Ecn::Ect1), rate).unwrap();
            id += 2;
        }
        for _ in 0..10_000 {
            let p = q.dequeue(Time::ZERO, &mut dropped).unwrap();
            let l4s = p.ecn == Ecn::Ect1;
            bytes[l4s as usize] += p.size as u64;
            q.enqueue(Time::ZERO, pkt(id, p.ecn), rate).unwrap();
            id += 1;
        }
        let share = bytes[0] as f64 / (bytes[0] + bytes[1]) as f64;
        assert!((share - 0.10).abs() < 0.005, "classic share {share}");
    }

    #[test]
    fn the_limit_counts_both_queues() {
        let params = DualPi2Params {
            limit: QueueLimit::Packets(3),
            ..DualPi2Params::linux()
        };
        let mut q: DualPi2<Tp> = DualPi2::new(params, 1).unwrap();
        let rate = Rate::from_mbps(1.0);
        q.enqueue(Time::ZERO, pkt(0, Ecn::NotEct), rate).unwrap();
        q.enqueue(Time::ZERO, pkt(1, Ecn::Ect1), rate).unwrap();
        q.enqueue(Time::ZERO, pkt(2, Ecn::Ect1), rate).unwrap();
        assert!(q.enqueue(Time::ZERO, pkt(3, Ecn::Ect1), rate).is_err());
    }

    #[test]
    fn a_standing_classic_queue_drives_p_until_the_delay_is_near_target() {
        // A 10 Mbit/s server fed at 12 Mbit/s by Not-ECT traffic: without a drop the queue would
        // grow without bound; PI² holds it near 15 ms.
        let mut q: DualPi2<Tp> = DualPi2::new(DualPi2Params::linux(), 3).unwrap();
        let rate = Rate::from_mbps(10.0);
        let mut dropped = Vec::new();
        let (mut t_in, mut t_out, mut id) = (0u64, 0u64, 0u64);
        let mut delays = Vec::new();
        let end = 60_000 * MS;
        while t_in < end || t_out < end {
            if t_in <= t_out {
                let _ = q.enqueue(Time(t_in), pkt(id, Ecn::NotEct), rate);
                id += 1;
                t_in += 1_000_000; // 12 Mbit/s of 1500-byte packets: 1 per ms
            } else {
                q.dequeue(Time(t_out), &mut dropped);
                t_out += 1_200_000; // 10 Mbit/s: 1.2 ms per packet
                if t_out > 20_000 * MS {
                    delays.push(q.qdelay_c.as_millis_f64());
                }
            }
        }
        let mean = delays.iter().sum::<f64>() / delays.len() as f64;
        assert!(
            (10.0..=20.0).contains(&mean),
            "mean classic delay {mean} ms (target 15)"
        );
        assert!(q.aqm_drops() > 0);
    }

    #[test]
    fn invalid_params_are_refused() {
        let bad = [
            DualPi2Params {
                tupdate: Duration::ZERO,
                ..DualPi2Params::linux()
            },
            DualPi2Params {
                coupling: 0.5,
                ..DualPi2Params::linux()
            },
            DualPi2Params {
                alpha: f64::NAN,
                ..DualPi2Params::linux()
            },
            DualPi2Params {
                c_protection: 101,
                ..DualPi2Params::linux()
            },
        ];
        for p in bad {
            assert!(DualPi2::<Tp>::new(p, 0).is_err(), "{p:?}");
        }
    }

    proptest! {
        #[test]
        fn dualpi2_conserves_packets(ops in ops(), limit in 1u64..200, p in 0.0f64..1.0,
                                     seed in 0u64..1000) {
            let params = DualPi2Params {
                limit: QueueLimit::Packets(limit),
                ..DualPi2Params::linux()
            };
            let mut q: DualPi2<Tp> = DualPi2::new(params, seed).unwrap();
            q.prob = p;
            check_conservation(&mut q, &ops)?;
        }
    }
}
