//! CoDel, "controlled delay" (Nichols & Jacobson; RFC 8289; Linux `include/net/codel.h`,
//! `include/net/codel_impl.h` and `net/sched/sch_codel.c`).
//!
//! # The idea
//!
//! A buffer that absorbs a burst is good: the burst drains within about a round trip. A queue
//! that never drains, a *standing* queue, is only delay. CoDel tells them apart by the
//! **sojourn time** of each packet (the time from its enqueue to its dequeue), measured as it
//! leaves: if the sojourn has stayed at or above `target` for a whole `interval`, even the
//! packets that found the queue at its shortest waited too long, and the queue is standing.
//! `interval` is chosen to cover a typical round trip (100 ms), so that a sender has had the time
//! to react to a first drop before CoDel considers dropping again; `target` is a small fraction of
//! it (5 ms), enough to keep the link busy.
//!
//! # The state machine (one instance per queue: [`CodelState`])
//!
//! At every dequeue the head packet is checked ("should drop?"):
//! - if its sojourn is below `target`, or the bytes left behind it are at most one MTU (a queue of
//!   one packet is no standing queue, and dropping it would idle the link), the queue is "good":
//!   forget any start of a bad period;
//! - otherwise, on the first bad packet, remember `first_above_time = now + interval`; once
//!   `now` is past `first_above_time` (the queue has been bad for a whole interval) the answer
//!   is "drop".
//!
//! Not dropping, and the answer is "drop": **enter the dropping state**. Drop the head packet, take
//! the next one, and schedule the next drop at `drop_next = now + interval/√count`. `count` is
//! normally 1, but if the previous dropping state ended recently (`now - drop_next < 16 ×
//! interval`) and had dropped more than once since it began (`count - lastcount > 1`), CoDel
//! restarts at the drop rate that controlled the queue last time, `count - lastcount`, instead
//! of ramping up again from one drop per interval.
//!
//! Dropping: as soon as a head packet is "good", **leave** the dropping state. Otherwise, every
//! time `now` reaches `drop_next`: `count += 1`, drop the head, take the next, and if it too
//! should be dropped, move `drop_next` by `interval/√count` (from the previous `drop_next`, not
//! from `now`). Under a persistent standing queue the gaps between drops are therefore
//! 100, 70.7, 57.7, 50, 44.7, 40.8, … ms: the **control law**. A TCP sender's throughput goes as
//! 1/√(drop rate), so a drop rate that grows as √count lowers it roughly linearly in time until
//! the queue drains below `target`.
//!
//! # Defaults and their sources
//!
//! | parameter | default | source |
//! |---|---|---|
//! | `target` | 5 ms | RFC 8289 §4.3; `codel_params_init()` |
//! | `interval` | 100 ms | RFC 8289 §4.2; `codel_params_init()` |
//! | `limit` | 1000 packets (tail drop) | `DEFAULT_CODEL_LIMIT`, `sch_codel.c` |
//! | `mtu` | 1514 bytes | `params->mtu = psched_mtu(dev)`, `sch_codel.c` (Linux ≥ 4.x; 3.x compared with `maxpacket`, the largest packet seen, which equals the MTU once one full-size packet has passed) |
//!
//! # Fidelity notes
//!
//! - Time is kept in nanoseconds (Linux: 1024-ns units) and `interval/√count` is computed exactly
//!   (Linux keeps a Newton-iterated fixed-point 1/√count, which is approximate right after the
//!   count re-use rule and converges within a few drops).
//! - Comparisons follow the kernel: "bad for an interval" is `now > first_above_time`
//!   (`codel_time_after`), "time for the next drop" is `now >= drop_next`, and a sojourn equal to
//!   `target` counts as above it.
//! - The "bytes left behind" in the MTU guard are counted after the head is removed, as in the
//!   kernel; [`CodelSource::backlog`] says which backlog (fq_codel can use its whole queue's or
//!   the flow's).
//!
//! # ECN (RFC 8289 §5 "ECN marking", RFC 3168; Linux `codel_dequeue()` in `codel_impl.h`)
//!
//! With `ecn` on, wherever the control law would drop the head packet and that packet is
//! ECN-capable (ECT(0), ECT(1), or already CE), CoDel sets CE and **sends it** instead:
//! - entering the dropping state: the head is marked, the state is entered exactly as after a
//!   drop (same `count` re-use rule, same `drop_next`), and the marked packet is the one
//!   dequeued;
//! - in the dropping state, when `now ≥ drop_next`: `count += 1`, the head is marked,
//!   `drop_next` moves by `interval/√count` and the dequeue ends there (Linux's `goto end`: one
//!   mark per dequeue, where drops may come several in a row).
//!
//! So an ECT flow gets its signals at the same instants a Not-ECT flow would lose packets
//! (tested below), and Not-ECT packets are still dropped. Linux's `sch_codel` has `ecn` off by
//! default (`codel_params_init()`), rtcc too. Tail drops at `limit` are drops, ECT or not.
//!
//! `ce_threshold` (Linux ≥ 4.2, `TCA_CODEL_CE_THRESHOLD`; off by default) is independent of
//! `ecn`: after the control law has run, the packet about to be sent is marked CE if it is
//! ECN-capable and the last sojourn CoDel measured is **above** the threshold
//! (`codel_time_after(vars->ldelay, params->ce_threshold)`), a step marking for DCTCP-like
//! senders that never drops.

use super::{InvalidParam, NetPacket, Queue, QueueLimit, Stamped, LINUX_MTU};
use crate::units::{Duration, Rate, Time};
use std::collections::VecDeque;

/// CoDel's parameters (shared by every flow of an fq_codel).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CodelParams {
    /// Acceptable standing sojourn time.
    pub target: Duration,
    /// How long the sojourn must stay above `target` before dropping starts; the base of the
    /// control law.
    pub interval: Duration,
    /// Never drop while the bytes left behind the head are at most this much.
    pub mtu: u32,
    /// Mark ECN-capable packets CE instead of dropping them (RFC 8289 §5). Default off (Linux
    /// `sch_codel`'s default; Linux's fq_codel turns it on, rtcc's does not).
    pub ecn: bool,
    /// Mark every ECN-capable packet sent after a sojourn above this (Linux `ce_threshold`);
    /// `None` (default): off.
    pub ce_threshold: Option<Duration>,
}

impl Default for CodelParams {
    fn default() -> Self {
        CodelParams {
            target: Duration::from_millis(5),
            interval: Duration::from_millis(100),
            mtu: LINUX_MTU,
            ecn: false,
            ce_threshold: None,
        }
    }
}

impl CodelParams {
    pub fn validate(&self) -> Result<(), InvalidParam> {
        if self.target.0 == 0 {
            return Err(InvalidParam::NotPositive("target"));
        }
        if self.interval.0 == 0 {
            return Err(InvalidParam::NotPositive("interval"));
        }
        Ok(())
    }
}

/// The FIFO a [`CodelState`] manages: CoDel pops packets from it and looks at the backlog left.
pub trait CodelSource<P> {
    /// Remove the head packet (with its enqueue time), updating the backlog.
    fn pop(&mut self) -> Option<(Time, P)>;
    /// Bytes the MTU guard compares with `mtu`, after the last `pop`.
    fn backlog(&self) -> u64;
}

/// CoDel's per-queue state machine (Linux `struct codel_vars`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CodelState {
    /// Drops since entering the dropping state (plus the re-used count).
    count: u32,
    /// `count` when the dropping state was last entered.
    lastcount: u32,
    dropping: bool,
    /// When the sojourn has been above target for an interval (unset while below).
    first_above_time: Option<Time>,
    /// When the next drop is due in the dropping state.
    drop_next: Time,
    /// Sojourn of the last packet looked at.
    ldelay: Duration,
    /// Packets marked CE by the control law (`ecn`) and by `ce_threshold` (Linux `ecn_mark`,
    /// `ce_mark`).
    ecn_marks: u64,
    ce_threshold_marks: u64,
}

impl CodelState {
    pub fn new() -> CodelState {
        CodelState::default()
    }
    pub fn count(&self) -> u32 {
        self.count
    }
    pub fn lastcount(&self) -> u32 {
        self.lastcount
    }
    pub fn dropping(&self) -> bool {
        self.dropping
    }
    pub fn drop_next(&self) -> Time {
        self.drop_next
    }
    /// Sojourn time of the last packet looked at.
    pub fn last_sojourn(&self) -> Duration {
        self.ldelay
    }
    /// ECN-capable packets the control law marked instead of dropping.
    pub fn ecn_marks(&self) -> u64 {
        self.ecn_marks
    }
    /// ECN-capable packets marked for a sojourn above `ce_threshold`.
    pub fn ce_threshold_marks(&self) -> u64 {
        self.ce_threshold_marks
    }
    /// Raise `count` (fq_codel does, by the number of packets it drops from a flow when it
    /// overflows, "to increase the signal strength").
    pub fn add_count(&mut self, n: u32) {
        self.count = self.count.wrapping_add(n);
    }

    /// `t + interval/√count`.
    fn control_law(t: Time, interval: Duration, count: u32) -> Time {
        let gap = interval.0 as f64 / (count.max(1) as f64).sqrt();
        t + Duration(gap.round() as u64)
    }

    /// Whether `head` (just popped; `backlog` bytes remain behind it) may be dropped.
    fn should_drop(
        &mut self,
        head: Option<Time>,
        backlog: u64,
        p: &CodelParams,
        now: Time,
    ) -> bool {
        let Some(enqueued) = head else {
            self.first_above_time = None;
            return false;
        };
        self.ldelay = now - enqueued;
        if self.ldelay < p.target || backlog <= p.mtu as u64 {
            self.first_above_time = None;
            return false;
        }
        match self.first_above_time {
            None => {
                self.first_above_time = Some(now + p.interval);
                false
            }
            Some(t) => now > t,
        }
    }

    /// Dequeue from `src` at `now`: the packet to send, if any; packets CoDel drops go to
    /// `dropped` (Linux `codel_dequeue()`). With `ecn`, ECN-capable packets are marked where
    /// others are dropped (see the module documentation).
    pub fn dequeue<P: NetPacket, S: CodelSource<P>>(
        &mut self,
        p: &CodelParams,
        now: Time,
        src: &mut S,
        dropped: &mut Vec<P>,
    ) -> Option<P> {
        let mut head = src.pop();
        if head.is_none() {
            self.dropping = false;
            return None;
        }
        let drop = self.should_drop(head.as_ref().map(|h| h.0), src.backlog(), p, now);
        if self.dropping {
            if !drop {
                // The sojourn went below target: leave the dropping state.
                self.dropping = false;
            } else {
                // Drop as many as are due (a large backlog may make several due at once).
                while self.dropping && now >= self.drop_next {
                    self.count = self.count.wrapping_add(1);
                    if p.ecn && head.as_mut().is_some_and(|(_, pkt)| pkt.set_ce()) {
                        // Marked instead of dropped: schedule the next signal and send it.
                        self.ecn_marks += 1;
                        self.drop_next = Self::control_law(self.drop_next, p.interval, self.count);
                        break;
                    }
                    if let Some((_, pkt)) = head.take() {
                        dropped.push(pkt);
                    }
                    head = src.pop();
                    if self.should_drop(head.as_ref().map(|h| h.0), src.backlog(), p, now) {
                        self.drop_next = Self::control_law(self.drop_next, p.interval, self.count);
                    } else {
                        self.dropping = false;
                    }
                }
            }
        } else if drop {
            if p.ecn && head.as_mut().is_some_and(|(_, pkt)| pkt.set_ce()) {
                self.ecn_marks += 1;
            } else {
                if let Some((_, pkt)) = head.take() {
                    dropped.push(pkt);
                }
                head = src.pop();
                // Looks at the new head only to keep `first_above_time` current.
                self.should_drop(head.as_ref().map(|h| h.0), src.backlog(), p, now);
            }
            self.dropping = true;
            // Re-use the drop rate of the last dropping state if it ended recently.
            let delta = self.count.saturating_sub(self.lastcount);
            let since_last = now.0 as i128 - self.drop_next.0 as i128;
            self.count = if delta > 1 && since_last < 16 * p.interval.0 as i128 {
                delta
            } else {
                1
            };
            self.lastcount = self.count;
            self.drop_next = Self::control_law(now, p.interval, self.count);
        }
        if let (Some(threshold), Some((_, pkt))) = (p.ce_threshold, head.as_mut()) {
            if self.ldelay > threshold && pkt.set_ce() {
                self.ce_threshold_marks += 1;
            }
        }
        head.map(|(_, pkt)| pkt)
    }
}

/// The packets of a CoDel queue, as its [`CodelSource`].
struct Fifo<P> {
    packets: VecDeque<Stamped<P>>,
    bytes: u64,
}

impl<P: NetPacket> CodelSource<P> for Fifo<P> {
    fn pop(&mut self) -> Option<(Time, P)> {
        let s = self.packets.pop_front()?;
        self.bytes -= s.pkt.size() as u64;
        Some((s.at, s.pkt))
    }
    fn backlog(&self) -> u64 {
        self.bytes
    }
}

/// The CoDel queue discipline (Linux `sch_codel`): one FIFO, tail drop at `limit`, CoDel at
/// dequeue.
pub struct Codel<P> {
    params: CodelParams,
    limit: QueueLimit,
    fifo: Fifo<P>,
    state: CodelState,
}

impl<P> Codel<P> {
    /// Linux's defaults: target 5 ms, interval 100 ms, 1000 packets.
    pub fn linux() -> Codel<P> {
        Codel::new(CodelParams::default(), QueueLimit::Packets(1000))
    }

    pub fn new(params: CodelParams, limit: QueueLimit) -> Codel<P> {
        Codel {
            params,
            limit,
            fifo: Fifo {
                packets: VecDeque::new(),
                bytes: 0,
            },
            state: CodelState::new(),
        }
    }

    pub fn params(&self) -> &CodelParams {
        &self.params
    }
    pub fn limit(&self) -> QueueLimit {
        self.limit
    }
    pub fn state(&self) -> &CodelState {
        &self.state
    }
}

impl<P: NetPacket + Send> Queue<P> for Codel<P> {
    fn enqueue(&mut self, now: Time, pkt: P, link_rate: Rate) -> Result<(), P> {
        if !self.limit.admits(
            self.fifo.packets.len(),
            self.fifo.bytes,
            pkt.size(),
            link_rate,
        ) {
            return Err(pkt);
        }
        self.fifo.bytes += pkt.size() as u64;
        self.fifo.packets.push_back(Stamped { at: now, pkt });
        Ok(())
    }
    fn dequeue(&mut self, now: Time, dropped: &mut Vec<P>) -> Option<P> {
        self.state
            .dequeue(&self.params, now, &mut self.fifo, dropped)
    }
    fn len_packets(&self) -> usize {
        self.fifo.packets.len()
    }
    fn len_bytes(&self) -> u64 {
        self.fifo.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{check_conservation, ops, Tp, P};
    use super::*;
    use crate::packet::Ecn;
    use proptest::prelude::*;

    const MS: u64 = 1_000_000;
    const US: u64 = 1_000;
    /// Start of the state-machine tests, so that every packet's enqueue time is after zero.
    const T0: u64 = 1_000 * MS;

    /// A source whose packets carry chosen enqueue times, with a chosen backlog behind them.
    struct Fake {
        packets: VecDeque<(Time, P)>,
        behind: u64,
    }
    impl CodelSource<P> for Fake {
        fn pop(&mut self) -> Option<(Time, P)> {
            self.packets.pop_front()
        }
        fn backlog(&self) -> u64 {
            self.behind
        }
    }

    /// One dequeue at `now` of a packet that has waited `sojourn`, with a standing backlog of
    /// 10 000 bytes behind every packet (a second packet with the same sojourn is ready in
    /// case CoDel drops the first). Returns how many were dropped.
    fn step(c: &mut CodelState, p: &CodelParams, now: u64, sojourn: u64) -> usize {
        let at = Time(now.saturating_sub(sojourn));
        let mut src = Fake {
            packets: (0..8).map(|i| (at, P(1000, i))).collect(),
            behind: 10_000,
        };
        let mut dropped = Vec::new();
        let out = c.dequeue(p, Time(now), &mut src, &mut dropped);
        assert!(out.is_some());
        dropped.len()
    }

    #[test]
    fn drop_gaps_follow_interval_over_sqrt_count() {
        // A queue that never drains: prefill 500 packets, then one arrival and one departure
        // every 100 µs, so every packet waits about 50 ms.
        let mut q = Codel::<P>::linux();
        let r = Rate(1e9);
        for i in 0..500 {
            q.enqueue(Time::ZERO, P(100, i), r).unwrap();
        }
        let mut drop_times = Vec::new();
        let mut drop_nexts = Vec::new();
        let mut dropped = Vec::new();
        for k in 0..20_000u64 {
            let now = Time(k * 100 * US);
            q.enqueue(now, P(100, 0), r).unwrap();
            let before = dropped.len();
            let next_before = q.state().drop_next();
            q.dequeue(now, &mut dropped).unwrap();
            if dropped.len() > before {
                assert_eq!(dropped.len(), before + 1, "one drop at a time at this rate");
                drop_times.push(now.0);
                if q.state().drop_next() != next_before {
                    drop_nexts.push(q.state().drop_next().0);
                }
            }
            if drop_times.len() == 12 {
                break;
            }
        }
        // The head's sojourn reaches 5 ms at t = 5 ms; dropping starts once t > 105 ms, i.e. at
        // the 105.1 ms dequeue, and the next drop is scheduled 100 ms later.
        assert_eq!(drop_times[0], 105 * MS + 100 * US);
        assert_eq!(drop_nexts[0], 205 * MS + 100 * US);
        // drop_next advances by interval/√count from itself: 100, 70.7, 57.7, 50, 44.7, …
        for (i, w) in drop_nexts.windows(2).enumerate() {
            let count = (i + 2) as f64;
            let expect = (100.0 * MS as f64 / count.sqrt()).round() as u64;
            assert_eq!(w[1] - w[0], expect, "gap {i}");
        }
        let gaps_ms: Vec<f64> = drop_nexts
            .windows(2)
            .take(3)
            .map(|w| ((w[1] - w[0]) as f64 / MS as f64 * 10.0).round() / 10.0)
            .collect();
        assert_eq!(gaps_ms, vec![70.7, 57.7, 50.0]);
        // Each drop happens at the first dequeue at or after its due time (100 µs grid).
        for (t, due) in drop_times[1..].iter().zip(&drop_nexts) {
            assert!(*t >= *due && *t < *due + 100 * US, "{t} vs {due}");
        }
        assert_eq!(q.state().count() as usize, drop_times.len());
    }

    #[test]
    fn no_drop_below_target() {
        // Every packet waits 4.9 ms (just under target), for ten seconds, behind a big backlog.
        let mut c = CodelState::new();
        let p = CodelParams::default();
        for k in 0..10_000u64 {
            assert_eq!(step(&mut c, &p, k * MS, 4_900 * US), 0);
        }
        assert!(!c.dropping());
        // At exactly the target it counts as above: drops start after an interval.
        let drops: usize = (10_000..10_300u64)
            .map(|k| step(&mut c, &p, k * MS, 5 * MS))
            .sum();
        assert!(drops > 0);
    }

    #[test]
    fn no_drop_with_at_most_one_mtu_behind() {
        // One packet at a time, each having waited 50 ms: a single packet is no standing queue.
        let mut q = Codel::<P>::linux();
        let mut dropped = Vec::new();
        for k in 0..200u64 {
            q.enqueue(Time(k * 50 * MS), P(1500, 0), Rate(1e6)).unwrap();
            assert!(q.dequeue(Time((k + 1) * 50 * MS), &mut dropped).is_some());
        }
        // Two packets of 700 bytes: 700 bytes behind the head ≤ 1514.
        for k in 200..400u64 {
            for _ in 0..2 {
                q.enqueue(Time(k * 50 * MS), P(700, 0), Rate(1e6)).unwrap();
            }
            for _ in 0..2 {
                assert!(q.dequeue(Time((k + 1) * 50 * MS), &mut dropped).is_some());
            }
        }
        assert!(dropped.is_empty());
        assert!(!q.state().dropping());
        // The guard is on the bytes behind the head: 1515 bytes behind, and CoDel drops.
        let mut c = CodelState::new();
        let p = CodelParams::default();
        let mut dropped = Vec::new();
        for k in 0..300u64 {
            let at = Time((k * MS).saturating_sub(50 * MS));
            let mut src = Fake {
                packets: (0..4).map(|i| (at, P(1000, i))).collect(),
                behind: 1515,
            };
            c.dequeue(&p, Time(k * MS), &mut src, &mut dropped);
        }
        assert!(!dropped.is_empty());
    }

    #[test]
    fn leaves_dropping_when_the_sojourn_falls_below_target() {
        let mut c = CodelState::new();
        let p = CodelParams::default();
        // Above target from t = 0: first_above = 100 ms, first drop at the first dequeue after.
        let mut first = None;
        for k in 0..=101u64 {
            if step(&mut c, &p, T0 + k * MS, 20 * MS) > 0 {
                first.get_or_insert(k);
            }
        }
        assert_eq!(first, Some(101));
        assert!(c.dropping());
        assert_eq!(c.count(), 1);
        assert_eq!(c.drop_next(), Time(T0 + 201 * MS));
        // A packet below target ends the dropping state at once, and is sent.
        assert_eq!(step(&mut c, &p, T0 + 102 * MS, MS), 0);
        assert!(!c.dropping());
        // Back above target: a whole interval must pass again before the next drop.
        for k in 103..=203u64 {
            assert_eq!(step(&mut c, &p, T0 + k * MS, 20 * MS), 0, "t = {k} ms");
        }
        assert_eq!(step(&mut c, &p, T0 + 204 * MS, 20 * MS), 1);
        assert!(c.dropping());
    }

    /// Drive `c` above target from `start` until it has made `drops` drops in one dropping
    /// state, then put it below target. Returns the time it left.
    fn episode(c: &mut CodelState, p: &CodelParams, start: u64, drops: u32) -> u64 {
        let mut t = start;
        loop {
            step(c, p, t, 20 * MS);
            if c.dropping() && c.count() - c.lastcount() + 1 >= drops {
                break;
            }
            t += MS;
        }
        t += MS;
        step(c, p, t, 0);
        assert!(!c.dropping());
        t
    }

    #[test]
    fn re_entering_soon_reuses_the_last_drop_rate() {
        let p = CodelParams::default();
        let mut c = CodelState::new();
        // First state: entered with count 1, then 4 more drops: count 5, lastcount 1.
        let left = episode(&mut c, &p, T0, 5);
        assert_eq!((c.count(), c.lastcount()), (5, 1));
        let old_next = c.drop_next();
        // Re-enter soon: delta = 5 - 1 = 4 > 1, so count restarts at 4 and the next drop is
        // interval/√4 = 50 ms away.
        let mut t = left + MS;
        let entered = loop {
            if step(&mut c, &p, t, 20 * MS) > 0 {
                break t;
            }
            t += MS;
        };
        assert!(Time(entered) - old_next < Duration(16 * p.interval.0));
        assert_eq!((c.count(), c.lastcount()), (4, 4));
        assert_eq!(c.drop_next(), Time(entered + 50 * MS));
    }

    #[test]
    fn re_entering_after_16_intervals_starts_over() {
        let p = CodelParams::default();
        let mut c = CodelState::new();
        let left = episode(&mut c, &p, T0, 5);
        assert_eq!(c.count(), 5);
        // Stay below target for 2 s (> 16 × 100 ms past drop_next), then go above again.
        let mut t = left;
        while t < left + 2_000 * MS {
            t += MS;
            step(&mut c, &p, t, 0);
        }
        let entered = loop {
            t += MS;
            if step(&mut c, &p, t, 20 * MS) > 0 {
                break t;
            }
        };
        assert_eq!((c.count(), c.lastcount()), (1, 1));
        assert_eq!(c.drop_next(), Time(entered + 100 * MS));
    }

    #[test]
    fn a_delta_of_one_does_not_reuse() {
        // A state that dropped only once more than it started with (delta = 1) restarts at 1.
        let p = CodelParams::default();
        let mut c = CodelState::new();
        let left = episode(&mut c, &p, T0, 2);
        assert_eq!((c.count(), c.lastcount()), (2, 1));
        let mut t = left;
        loop {
            t += MS;
            if step(&mut c, &p, t, 20 * MS) > 0 {
                break;
            }
        }
        assert_eq!(c.count(), 1);
    }

    #[test]
    fn tail_drops_at_the_limit_and_empty_queue_leaves_dropping() {
        let mut q = Codel::<P>::new(CodelParams::default(), QueueLimit::Packets(3));
        for i in 0..3 {
            q.enqueue(Time::ZERO, P(100, i), Rate(1e6)).unwrap();
        }
        assert_eq!(q.enqueue(Time::ZERO, P(100, 9), Rate(1e6)), Err(P(100, 9)));
        let mut d = Vec::new();
        while q.dequeue(Time(MS), &mut d).is_some() {}
        assert!(q.is_empty() && q.len_bytes() == 0 && !q.state().dropping());
    }

    #[test]
    fn drops_a_run_of_packets_when_several_are_due() {
        // In the dropping state with a very short interval, one dequeue long after drop_next
        // drops several packets in a row (the while loop of codel_dequeue).
        let p = CodelParams {
            target: Duration::from_millis(1),
            interval: Duration::from_millis(10),
            mtu: 0,
            ..CodelParams::default()
        };
        let mut c = CodelState::new();
        for k in 0..=11u64 {
            step(&mut c, &p, T0 + k * MS, 50 * MS);
        }
        assert!(c.dropping());
        let mut src = Fake {
            packets: (0..100).map(|i| (Time(0), P(1000, i))).collect(),
            behind: 50_000,
        };
        let mut dropped = Vec::new();
        let out = c.dequeue(&p, Time(T0 + 60 * MS), &mut src, &mut dropped);
        // drop_next was 21 ms; due drops at 21, 28.07, 33.85, 38.85, 43.32, 47.4, 51.18, 54.72,
        // 58.05 ms (gaps 10/√count) are all before 60 ms: nine drops, then the tenth packet is sent.
        assert_eq!(dropped.len(), 9);
        assert_eq!(out, Some(P(1000, 9)));
        assert_eq!(c.count(), 10);
    }

    /// The drop-gaps workload (a queue that never drains, one arrival and one departure every
    /// 100 µs behind 500 prefilled packets) with packets of codepoint `ecn`, through a CoDel
    /// whose `ecn` switch is `marking`. Returns the instants of the first 12 signals, each a
    /// drop or a mark, and how many of them were drops.
    fn signal_instants(ecn: Ecn, marking: bool) -> (Vec<u64>, usize) {
        let params = CodelParams {
            ecn: marking,
            ..CodelParams::default()
        };
        let mut q = Codel::<Tp>::new(params, QueueLimit::Packets(1000));
        let r = Rate(1e9);
        let pkt = |id: u64| Tp {
            id,
            size: 100,
            flow: 0,
            ecn,
        };
        for i in 0..500 {
            q.enqueue(Time::ZERO, pkt(i), r).unwrap();
        }
        let (mut instants, mut drops) = (Vec::new(), 0);
        let mut dropped = Vec::new();
        for k in 0..20_000u64 {
            let now = Time(k * 100 * US);
            q.enqueue(now, pkt(500 + k), r).unwrap();
            let before = dropped.len();
            let out = q.dequeue(now, &mut dropped).unwrap();
            let signals = dropped.len() - before + out.ecn.is_ce() as usize;
            assert!(signals <= 1, "one signal at a time at this rate");
            if signals == 1 {
                instants.push(now.0);
                drops += dropped.len() - before;
            }
            if instants.len() == 12 {
                break;
            }
        }
        (instants, drops)
    }

    #[test]
    fn ecn_marks_at_the_instants_it_would_drop() {
        let (drop_instants, drops) = signal_instants(Ecn::Ect0, false);
        assert_eq!(drops, 12, "without ecn an ECT packet is dropped");
        let (mark_instants, drops) = signal_instants(Ecn::Ect0, true);
        assert_eq!(drops, 0, "with ecn every signal to an ECT flow is a mark");
        assert_eq!(mark_instants, drop_instants);
        // ECT(1) is marked like ECT(0) (RFC 3168 §5: routers treat them alike).
        assert_eq!(signal_instants(Ecn::Ect1, true), (drop_instants.clone(), 0));
        // Not-ECT packets are dropped whatever the switch says.
        assert_eq!(signal_instants(Ecn::NotEct, true), (drop_instants, 12));
    }

    #[test]
    fn ce_threshold_marks_ect_packets_above_it_and_never_drops() {
        // Sojourns of 3 ms: below target (no control law), above a 2 ms threshold.
        let p = CodelParams {
            ce_threshold: Some(Duration::from_millis(2)),
            ..CodelParams::default()
        };
        let mut c = CodelState::new();
        let mut dropped = Vec::new();
        for (k, ecn) in [(0u64, Ecn::Ect0), (1, Ecn::NotEct), (2, Ecn::Ect1)] {
            let now = T0 + k * MS;
            let mut src = Fake2 {
                packets: VecDeque::from([(
                    Time(now - 3 * MS),
                    Tp {
                        id: k,
                        size: 1000,
                        flow: 0,
                        ecn,
                    },
                )]),
            };
            let out = c.dequeue(&p, Time(now), &mut src, &mut dropped).unwrap();
            assert_eq!(out.ecn.is_ce(), ecn.is_ecn_capable(), "{ecn:?}");
        }
        // At exactly the threshold: not above it, no mark.
        let mut src = Fake2 {
            packets: VecDeque::from([(
                Time(T0),
                Tp {
                    id: 9,
                    size: 1000,
                    flow: 0,
                    ecn: Ecn::Ect0,
                },
            )]),
        };
        let out = c
            .dequeue(&p, Time(T0 + 2 * MS), &mut src, &mut dropped)
            .unwrap();
        assert_eq!(out.ecn, Ecn::Ect0);
        assert!(dropped.is_empty());
        assert_eq!((c.ce_threshold_marks(), c.ecn_marks()), (2, 0));
    }

    /// A source of [`Tp`] packets with chosen enqueue times and nothing behind them.
    struct Fake2 {
        packets: VecDeque<(Time, Tp)>,
    }
    impl CodelSource<Tp> for Fake2 {
        fn pop(&mut self) -> Option<(Time, Tp)> {
            self.packets.pop_front()
        }
        fn backlog(&self) -> u64 {
            0
        }
    }

    proptest! {
        #[test]
        fn codel_conserves_packets(ops in ops(), limit in 1u64..80, target_ms in 1u64..10, interval_ms in 5u64..100,
                                   ecn in any::<bool>(), ce_threshold_ms in proptest::option::of(0u64..20)) {
            let params = CodelParams {
                target: Duration::from_millis(target_ms),
                interval: Duration::from_millis(interval_ms),
                mtu: LINUX_MTU,
                ecn,
                ce_threshold: ce_threshold_ms.map(Duration::from_millis),
            };
            check_conservation(&mut Codel::new(params, QueueLimit::Packets(limit)), &ops)?;
        }
    }
}
