//! fq_codel, flow queueing with CoDel (RFC 8290; Linux `net/sched/sch_fq_codel.c`, modern
//! semantics).
//!
//! # The idea
//!
//! Two mechanisms, each fixing what the other cannot:
//! - **Flow queueing**: packets are hashed by flow into `flows` (1024) queues served by a
//!   byte-based deficit round robin, so a bulk flow cannot make a light one wait behind its
//!   backlog;
//! - **CoDel on every queue** ([`CodelState`], one per flow queue): a flow that keeps a standing
//!   queue of its own gets CoDel's head drops, and only that flow.
//!
//! # Scheduling: new flows and old flows
//!
//! Queues with packets are on one of two lists. A queue that becomes active (it was on neither
//! list) joins the tail of **new_flows** with a credit (`deficit`) of one `quantum` (1514 bytes).
//! Each dequeue looks at the head of new_flows, or of **old_flows** if new_flows is empty:
//! - credit used up (`deficit ≤ 0`): add a quantum, move the queue to the tail of old_flows, look
//!   again;
//! - otherwise run CoDel's dequeue on that queue; a packet that comes out costs its size in
//!   credit. If the queue turns out empty, it leaves the lists, except that an empty queue
//!   taken from new_flows while old_flows is not empty goes to the tail of old_flows first (so
//!   that a flow cannot stay "new" forever by sending one packet at a time and starve the others).
//!
//! New flows therefore go first for one quantum: a sparse flow (a video call's few packets per
//! frame, DNS, ACKs) whose queue empties at every visit keeps that priority, while bulk flows
//! share the rest byte-fairly.
//!
//! # Overflow
//!
//! When an arrival brings the total above `limit` (10 240 packets), fq_codel finds the **fattest**
//! queue (most bytes; ties: the lowest index) and drops packets from its **head**, up to
//! `drop_batch` (64) of them and until half of its bytes are gone, and raises that queue's
//! CoDel `count` by the number dropped. The arrival itself is dropped only if it was the whole of
//! the fattest queue.
//!
//! # CoDel's one-MTU guard
//!
//! CoDel does not drop while at most one MTU is left behind the head packet. Linux's
//! `sch_fq_codel.c` (3.x to today) passes the **whole qdisc's** backlog to that test
//! (`codel_dequeue(sch, &sch->qstats.backlog, ...)`), so a flow with a single packet queued
//! can lose it while other flows are backlogged ([`MtuGuard::Qdisc`], the default). The mac80211
//! variant of fq_codel and ns-3 use the flow's own backlog ([`MtuGuard::Flow`]).
//!
//! # Defaults and their sources (`fq_codel_init()` and `codel_params_init()`)
//!
//! | parameter | default | source |
//! |---|---|---|
//! | `target` | 5 ms | `codel_params_init()`; RFC 8290 §5.2 |
//! | `interval` | 100 ms | same |
//! | `limit` | 10 240 packets | `sch->limit = 10*1024` |
//! | `flows` | 1024 queues | `q->flows_cnt = 1024` |
//! | `quantum` | 1514 bytes | `psched_mtu()` (the kernel accepts 256 bytes to 1 MiB) |
//! | `drop_batch` | 64 packets | `q->drop_batch_size = 64` (Linux ≥ 4.7; 1 before) |
//! | `mtu` | 1514 bytes | `q->cparams.mtu = psched_mtu()` |
//! | `mtu_guard` | qdisc backlog | see above |
//! | `ecn` | off (**Linux: on**) | `q->cparams.ecn = true` in `fq_codel_init()`; see ECN below |
//! | `ce_threshold` | off | `codel_params_init()`: `CODEL_DISABLED_THRESHOLD` |
//!
//! # Fidelity notes
//!
//! The kernel's keyed flow hash is replaced by a seeded hash of the flow id
//! (`reciprocal_scale(hash, flows)` picks the queue, as in the kernel). No `memory_limit` (32 MB
//! of socket-buffer memory, which the default limit does not reach with full-size packets).
//!
//! # ECN (RFC 8290, RFC 3168; Linux `fq_codel_init()`, `codel_dequeue()`)
//!
//! Each flow queue's CoDel marks exactly as [`super::Codel`] does (`ecn`: an ECN-capable head
//! that the control law would drop is marked CE and sent; `ce_threshold`: every ECN-capable
//! packet leaving after a sojourn above the threshold is marked). Overflow drops from the fattest
//! flow (`fq_codel_drop()`) stay drops, ECT or not. **Linux turns `ecn` on by default for
//! fq_codel** (`q->cparams.ecn = true`; `tc-fq_codel(8)`: `ecn` unless `noecn`); rtcc keeps
//! it off by default so that results of existing scenarios do not move (`ecn = true` in the
//! queue table gives Linux's behaviour). Packets of flows that are not ECN-capable, the default,
//! are dropped either way.

use super::codel::{CodelParams, CodelSource, CodelState};
use super::{FlowHasher, InvalidParam, NetPacket, Queue, Stamped, LINUX_MTU};
use crate::units::{Rate, Time};
use std::collections::VecDeque;

/// Largest quantum the kernel accepts (`FQ_CODEL_QUANTUM_MAX`).
pub const FQ_CODEL_QUANTUM_MAX: u32 = 1 << 20;

/// Which backlog CoDel's one-MTU guard looks at (named in a configuration in lower case).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MtuGuard {
    /// The whole qdisc's (Linux `sch_fq_codel.c`).
    Qdisc,
    /// The flow queue's own (mac80211's fq_codel, ns-3).
    Flow,
}

/// fq_codel's parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FqCodelParams {
    /// CoDel's target, interval and MTU, shared by every flow queue.
    pub codel: CodelParams,
    /// Most packets in the whole qdisc.
    pub limit: u32,
    /// Number of flow queues.
    pub flows: u32,
    /// Bytes of credit per round.
    pub quantum: u32,
    /// Most packets dropped from the fattest queue on overflow.
    pub drop_batch: u32,
    pub mtu_guard: MtuGuard,
}

impl Default for FqCodelParams {
    fn default() -> Self {
        FqCodelParams::linux()
    }
}

impl FqCodelParams {
    /// Linux's defaults.
    pub fn linux() -> FqCodelParams {
        FqCodelParams {
            codel: CodelParams::default(),
            limit: 10_240,
            flows: 1024,
            quantum: LINUX_MTU,
            drop_batch: 64,
            mtu_guard: MtuGuard::Qdisc,
        }
    }

    pub fn validate(&self) -> Result<(), InvalidParam> {
        self.codel.validate()?;
        if self.limit == 0 {
            return Err(InvalidParam::NoPacket("limit"));
        }
        if !(1..=65_536).contains(&self.flows) {
            return Err(InvalidParam::Flows {
                max: 65_536,
                value: self.flows,
            });
        }
        if !(256..=FQ_CODEL_QUANTUM_MAX).contains(&self.quantum) {
            return Err(InvalidParam::FqCodelQuantum(self.quantum));
        }
        if self.drop_batch == 0 {
            return Err(InvalidParam::NoPacket("drop_batch"));
        }
        Ok(())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum List {
    New,
    Old,
}

struct Flow<P> {
    packets: VecDeque<Stamped<P>>,
    backlog: u64,
    deficit: i64,
    codel: CodelState,
    list: Option<List>,
}

/// A flow queue seen by its CoDel: pops update the flow's and the qdisc's counters.
struct FlowSource<'a, P> {
    packets: &'a mut VecDeque<Stamped<P>>,
    backlog: &'a mut u64,
    qlen: &'a mut usize,
    bytes: &'a mut u64,
    guard: MtuGuard,
}

impl<P: NetPacket> CodelSource<P> for FlowSource<'_, P> {
    fn pop(&mut self) -> Option<(Time, P)> {
        let s = self.packets.pop_front()?;
        let size = s.pkt.size() as u64;
        *self.backlog -= size;
        *self.bytes -= size;
        *self.qlen -= 1;
        Some((s.at, s.pkt))
    }
    fn backlog(&self) -> u64 {
        match self.guard {
            MtuGuard::Qdisc => *self.bytes,
            MtuGuard::Flow => *self.backlog,
        }
    }
}

/// The fq_codel queue discipline.
pub struct FqCodel<P> {
    params: FqCodelParams,
    hasher: FlowHasher,
    flows: Vec<Flow<P>>,
    new_flows: VecDeque<u32>,
    old_flows: VecDeque<u32>,
    qlen: usize,
    bytes: u64,
    evicted: Vec<P>,
}

impl<P: NetPacket> FqCodel<P> {
    /// An fq_codel; `seed` keys its flow hash.
    pub fn new(params: FqCodelParams, seed: u64) -> Result<FqCodel<P>, InvalidParam> {
        params.validate()?;
        Ok(FqCodel {
            hasher: FlowHasher::new(seed),
            flows: (0..params.flows)
                .map(|_| Flow {
                    packets: VecDeque::new(),
                    backlog: 0,
                    deficit: 0,
                    codel: CodelState::new(),
                    list: None,
                })
                .collect(),
            new_flows: VecDeque::new(),
            old_flows: VecDeque::new(),
            qlen: 0,
            bytes: 0,
            evicted: Vec::new(),
            params,
        })
    }

    pub fn params(&self) -> &FqCodelParams {
        &self.params
    }

    /// The queue `flow` hashes to.
    pub fn queue_of(&self, flow: u32) -> usize {
        ((self.hasher.hash32(flow) as u64 * self.params.flows as u64) >> 32) as usize
    }

    /// CoDel state of queue `idx`.
    pub fn codel_state(&self, idx: usize) -> Option<&CodelState> {
        self.flows.get(idx).map(|f| &f.codel)
    }

    /// Bytes queued in queue `idx`.
    pub fn queue_backlog(&self, idx: usize) -> u64 {
        self.flows.get(idx).map_or(0, |f| f.backlog)
    }

    /// Whether queue `idx` is on the new-flows list.
    pub fn is_new(&self, idx: usize) -> bool {
        self.flows
            .get(idx)
            .is_some_and(|f| f.list == Some(List::New))
    }

    /// Overflow: drop from the head of the fattest queue (`fq_codel_drop()`). Returns the
    /// queue's index and the dropped packets, oldest first.
    fn drop_from_fattest(&mut self) -> (usize, Vec<P>) {
        let mut fattest = 0;
        let mut max = 0;
        for (i, f) in self.flows.iter().enumerate() {
            if f.backlog > max {
                max = f.backlog;
                fattest = i;
            }
        }
        let threshold = max / 2;
        let flow = &mut self.flows[fattest];
        let mut out = Vec::new();
        let mut len = 0u64;
        while let Some(s) = flow.packets.pop_front() {
            let size = s.pkt.size() as u64;
            len += size;
            flow.backlog -= size;
            self.bytes -= size;
            self.qlen -= 1;
            out.push(s.pkt);
            if out.len() >= self.params.drop_batch as usize || len >= threshold {
                break;
            }
        }
        // Tell CoDel to increase its signal strength too.
        flow.codel.add_count(out.len() as u32);
        (fattest, out)
    }
}

impl<P: NetPacket + Send> Queue<P> for FqCodel<P> {
    fn enqueue(&mut self, now: Time, pkt: P, _link_rate: Rate) -> Result<(), P> {
        let idx = self.queue_of(pkt.flow());
        let size = pkt.size() as u64;
        let flow = &mut self.flows[idx];
        flow.packets.push_back(Stamped { at: now, pkt });
        flow.backlog += size;
        if flow.list.is_none() {
            flow.list = Some(List::New);
            flow.deficit = self.params.quantum as i64;
            self.new_flows.push_back(idx as u32);
        }
        self.bytes += size;
        self.qlen += 1;
        if self.qlen <= self.params.limit as usize {
            return Ok(());
        }
        let (fattest, mut dropped) = self.drop_from_fattest();
        if fattest == idx && self.flows[idx].packets.is_empty() {
            // The batch emptied the arrival's own queue: its last packet is the arrival.
            let arrival = dropped.pop();
            self.evicted.append(&mut dropped);
            if let Some(p) = arrival {
                return Err(p);
            }
            return Ok(());
        }
        self.evicted.append(&mut dropped);
        Ok(())
    }

    fn dequeue(&mut self, now: Time, dropped: &mut Vec<P>) -> Option<P> {
        dropped.append(&mut self.evicted);
        let FqCodel {
            params,
            flows,
            new_flows,
            old_flows,
            qlen,
            bytes,
            ..
        } = self;
        loop {
            let (from_new, idx) = match new_flows.front() {
                Some(&i) => (true, i),
                None => (false, *old_flows.front()?),
            };
            let flow = &mut flows[idx as usize];
            if flow.deficit <= 0 {
                flow.deficit += params.quantum as i64;
                if from_new {
                    new_flows.pop_front();
                } else {
                    old_flows.pop_front();
                }
                old_flows.push_back(idx);
                flow.list = Some(List::Old);
                continue;
            }
            let mut src = FlowSource {
                packets: &mut flow.packets,
                backlog: &mut flow.backlog,
                qlen,
                bytes,
                guard: params.mtu_guard,
            };
            match flow.codel.dequeue(&params.codel, now, &mut src, dropped) {
                Some(pkt) => {
                    flow.deficit -= pkt.size() as i64;
                    return Some(pkt);
                }
                None => {
                    if from_new {
                        new_flows.pop_front();
                    } else {
                        old_flows.pop_front();
                    }
                    if from_new && !old_flows.is_empty() {
                        // Force a pass through old_flows (no starvation by "new" flows).
                        old_flows.push_back(idx);
                        flow.list = Some(List::Old);
                    } else {
                        flow.list = None;
                    }
                }
            }
        }
    }

    fn len_packets(&self) -> usize {
        self.qlen
    }
    fn len_bytes(&self) -> u64 {
        self.bytes
    }
    fn drain_dropped(&mut self, out: &mut Vec<P>) {
        out.append(&mut self.evicted);
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{check_conservation, check_drr_byte_fairness, ops, Tp};
    use super::*;
    use crate::packet::Ecn;
    use crate::units::Duration;
    use proptest::prelude::*;

    const R: Rate = Rate(1e6);
    const MS: u64 = 1_000_000;

    fn distinct_flows<P: NetPacket>(q: &FqCodel<P>, n: usize) -> Vec<u32> {
        let mut seen = std::collections::HashSet::new();
        (0..)
            .filter(|&f| seen.insert(q.queue_of(f)))
            .take(n)
            .collect()
    }

    fn tp(id: u64, size: u32, flow: u32) -> Tp {
        Tp {
            id,
            size,
            flow,
            ecn: crate::packet::Ecn::NotEct,
        }
    }

    #[test]
    fn a_sparse_flow_goes_before_a_backlogged_one() {
        let mut q = FqCodel::new(FqCodelParams::linux(), 1).unwrap();
        let f = distinct_flows(&q, 2);
        let (bulk, sparse) = (f[0], f[1]);
        for i in 0..10 {
            q.enqueue(Time::ZERO, tp(i, 500, bulk), R).unwrap();
        }
        let mut d = Vec::new();
        let mut next = |q: &mut FqCodel<Tp>| q.dequeue(Time::ZERO, &mut d).unwrap().id;
        // The bulk flow's first quantum (1514 bytes: four 500-byte packets), then a fresh
        // quantum on old_flows.
        for id in 0..5 {
            assert_eq!(next(&mut q), id);
        }
        assert!(!q.is_new(q.queue_of(bulk)));
        // A packet of a flow with nothing queued jumps ahead of the backlog.
        q.enqueue(Time::ZERO, tp(100, 200, sparse), R).unwrap();
        assert!(q.is_new(q.queue_of(sparse)));
        assert_eq!(next(&mut q), 100);
        // The next visit finds its queue empty: it moves to old_flows (behind the bulk flow)
        // rather than leaving, so a packet sent now gets no priority and waits for the bulk
        // flow's remaining credit (28 bytes after packet 5: one more packet).
        assert_eq!(next(&mut q), 5);
        q.enqueue(Time::ZERO, tp(101, 200, sparse), R).unwrap();
        assert!(!q.is_new(q.queue_of(sparse)));
        assert_eq!(next(&mut q), 6);
        assert_eq!(next(&mut q), 101);
        // Found empty again, on old_flows this time, it leaves the lists: new again.
        assert_eq!(next(&mut q), 7);
        q.enqueue(Time::ZERO, tp(102, 200, sparse), R).unwrap();
        assert!(q.is_new(q.queue_of(sparse)));
        assert_eq!(next(&mut q), 102);
    }

    #[test]
    fn drr_gives_backlogged_flows_equal_bytes() {
        // 1500-byte and 500-byte packets, both flows always backlogged (no CoDel: no time
        // passes). At every round boundary the bytes differ by less than one quantum.
        let mut q = FqCodel::new(FqCodelParams::linux(), 2).unwrap();
        let f = distinct_flows(&q, 2);
        let (rounds, bytes_a, bytes_b, dropped) =
            check_drr_byte_fairness(&mut q, (f[0], f[1]), (1500, 500), 20, 10_000);
        assert!(rounds > 2000, "{rounds}");
        // Over the run, the shares are equal to within one packet.
        assert!(bytes_a.abs_diff(bytes_b) <= 1500 + 1514);
        assert_eq!(dropped, 0);
    }

    #[test]
    fn overflow_drops_a_batch_from_the_head_of_the_fattest_flow() {
        let params = FqCodelParams {
            limit: 15,
            ..FqCodelParams::linux()
        };
        let mut q = FqCodel::new(params, 3).unwrap();
        let f = distinct_flows(&q, 3);
        // A: 5 × 1500 bytes (fattest in bytes); B: 10 × 100 bytes (more packets).
        for i in 0..5 {
            q.enqueue(Time::ZERO, tp(i, 1500, f[0]), R).unwrap();
        }
        for i in 10..20 {
            q.enqueue(Time::ZERO, tp(i, 100, f[1]), R).unwrap();
        }
        let mut ev = Vec::new();
        q.drain_dropped(&mut ev);
        assert!(ev.is_empty());
        // The 16th packet: drop from A's head until half its 7500 bytes are gone: 3 packets.
        assert!(q.enqueue(Time::ZERO, tp(30, 100, f[2]), R).is_ok());
        q.drain_dropped(&mut ev);
        assert_eq!(ev.iter().map(|p| p.id).collect::<Vec<_>>(), vec![0, 1, 2]);
        assert_eq!(q.len_packets(), 13);
        assert_eq!(q.queue_backlog(q.queue_of(f[0])), 3000);
        assert_eq!(q.codel_state(q.queue_of(f[0])).unwrap().count(), 3);

        // With a batch of 2, only two go.
        let mut q = FqCodel::new(
            FqCodelParams {
                drop_batch: 2,
                ..params
            },
            3,
        )
        .unwrap();
        for i in 0..5 {
            q.enqueue(Time::ZERO, tp(i, 1500, f[0]), R).unwrap();
        }
        for i in 10..20 {
            q.enqueue(Time::ZERO, tp(i, 100, f[1]), R).unwrap();
        }
        q.enqueue(Time::ZERO, tp(30, 100, f[2]), R).unwrap();
        let mut ev = Vec::new();
        q.drain_dropped(&mut ev);
        assert_eq!(ev.iter().map(|p| p.id).collect::<Vec<_>>(), vec![0, 1]);
    }

    #[test]
    fn the_arrival_is_dropped_when_it_is_the_whole_fattest_flow() {
        let mut q = FqCodel::new(
            FqCodelParams {
                limit: 1,
                ..FqCodelParams::linux()
            },
            4,
        )
        .unwrap();
        let f = distinct_flows(&q, 2);
        q.enqueue(Time::ZERO, tp(0, 1000, f[0]), R).unwrap();
        assert_eq!(
            q.enqueue(Time::ZERO, tp(1, 1500, f[1]), R)
                .map_err(|p| p.id),
            Err(1)
        );
        let mut ev = Vec::new();
        q.drain_dropped(&mut ev);
        assert!(ev.is_empty());
        // A smaller arrival makes the other flow the fattest: it loses its packet.
        assert!(q.enqueue(Time::ZERO, tp(2, 500, f[1]), R).is_ok());
        q.drain_dropped(&mut ev);
        assert_eq!(ev.iter().map(|p| p.id).collect::<Vec<_>>(), vec![0]);
        let mut d = Vec::new();
        assert_eq!(q.dequeue(Time::ZERO, &mut d).unwrap().id, 2);
    }

    /// 1 ms per packet link; a bulk flow offered twice that, a sparse flow one packet per 20 ms.
    fn bulk_and_sparse(guard: MtuGuard) -> (usize, usize, u64) {
        let params = FqCodelParams {
            mtu_guard: guard,
            ..FqCodelParams::linux()
        };
        let mut q = FqCodel::new(params, 5).unwrap();
        let f = distinct_flows(&q, 2);
        let (bulk, sparse) = (f[0], f[1]);
        let mut d = Vec::new();
        let mut id = 0;
        let mut max_sparse_delay = 0;
        let mut sent_at = std::collections::HashMap::new();
        for k in 0..3000u64 {
            let now = Time(k * MS);
            for _ in 0..2 {
                q.enqueue(now, tp(id, 1000, bulk), R).unwrap();
                id += 1;
            }
            // (From 10 ms on, once the bulk flow has used its first quantum as a new flow.)
            if k % 20 == 10 {
                q.enqueue(now, tp(id, 200, sparse), R).unwrap();
                sent_at.insert(id, now);
                id += 1;
            }
            if let Some(p) = q.dequeue(now, &mut d) {
                if p.flow == sparse {
                    max_sparse_delay = max_sparse_delay.max((now - sent_at[&p.id]).0);
                }
            }
        }
        let bulk_drops = d.iter().filter(|p| p.flow == bulk).count();
        let sparse_drops = d.iter().filter(|p| p.flow == sparse).count();
        (bulk_drops, sparse_drops, max_sparse_delay)
    }

    #[test]
    fn codel_drops_the_standing_flow_and_spares_the_sparse_one() {
        for guard in [MtuGuard::Qdisc, MtuGuard::Flow] {
            let (bulk, sparse, delay) = bulk_and_sparse(guard);
            assert!(bulk > 100, "{guard:?}: {bulk}");
            assert_eq!(sparse, 0, "{guard:?}");
            assert_eq!(delay, 0, "{guard:?}: the sparse flow is served at once");
        }
    }

    #[test]
    fn the_mtu_guard_looks_at_the_chosen_backlog() {
        // Flow A: 150 packets of 1000 bytes; flow B: 200 packets of 5 bytes (1000 bytes in
        // all), both at time 0, one dequeue per ms, and a quantum so large that A is served for
        // 100 ms and then B for 200 ms. B's packets wait over 100 ms, with never more than
        // 1000 bytes of B behind them, but with A's 50 000 bytes in the qdisc.
        let run = |guard| {
            let params = FqCodelParams {
                quantum: 100_000,
                mtu_guard: guard,
                ..FqCodelParams::linux()
            };
            let mut q = FqCodel::new(params, 6).unwrap();
            let f = distinct_flows(&q, 2);
            for i in 0..150 {
                q.enqueue(Time::ZERO, tp(i, 1000, f[0]), R).unwrap();
            }
            for i in 0..200 {
                q.enqueue(Time::ZERO, tp(1000 + i, 5, f[1]), R).unwrap();
            }
            let mut d = Vec::new();
            for k in 0..400u64 {
                q.dequeue(Time(k * MS), &mut d);
            }
            d.iter().filter(|p| p.flow == f[1]).count()
        };
        assert!(
            run(MtuGuard::Qdisc) > 0,
            "Linux: the qdisc's backlog counts"
        );
        assert_eq!(
            run(MtuGuard::Flow),
            0,
            "the flow's own backlog never exceeds one MTU"
        );
    }

    #[test]
    fn ecn_marks_the_standing_ect_flow_instead_of_dropping_it() {
        // The bulk-and-sparse workload with two bulk flows, one ECN-capable, one not, each
        // offered the whole link: CoDel signals both, by marks to the first and drops to the
        // second.
        let params = FqCodelParams {
            codel: CodelParams {
                ecn: true,
                ..CodelParams::default()
            },
            ..FqCodelParams::linux()
        };
        let mut q = FqCodel::new(params, 5).unwrap();
        let f = distinct_flows(&q, 2);
        let (ect, not_ect) = (f[0], f[1]);
        let (mut d, mut id, mut marked) = (Vec::new(), 0, 0);
        for k in 0..3000u64 {
            let now = Time(k * MS);
            for (flow, ecn) in [(ect, Ecn::Ect0), (not_ect, Ecn::NotEct)] {
                q.enqueue(
                    now,
                    Tp {
                        id,
                        size: 1000,
                        flow,
                        ecn,
                    },
                    R,
                )
                .unwrap();
                id += 1;
            }
            if let Some(p) = q.dequeue(now, &mut d) {
                assert!(!p.ecn.is_ce() || p.flow == ect);
                marked += p.ecn.is_ce() as usize;
            }
        }
        assert!(marked > 100, "{marked}");
        assert!(
            d.iter().all(|p| p.flow == not_ect),
            "the ECT flow loses nothing"
        );
        assert!(d.len() > 100, "{}", d.len());
    }

    #[test]
    fn ce_threshold_marks_ect_packets_that_waited_longer() {
        // One flow at a time, packets waiting 0.5 ms or 3 ms against a 1 ms threshold (far
        // below target: CoDel's control law never acts).
        let params = FqCodelParams {
            codel: CodelParams {
                ce_threshold: Some(Duration::from_millis(1)),
                ..CodelParams::default()
            },
            ..FqCodelParams::linux()
        };
        let mut q = FqCodel::new(params, 8).unwrap();
        let mut d = Vec::new();
        for (k, (wait_us, ecn, expect_ce)) in [
            (500, Ecn::Ect0, false),
            (3000, Ecn::Ect0, true),
            (3000, Ecn::NotEct, false),
            (3000, Ecn::Ce, true),
        ]
        .into_iter()
        .enumerate()
        {
            let t = Time(k as u64 * 10 * MS);
            q.enqueue(
                t,
                Tp {
                    id: k as u64,
                    size: 1000,
                    flow: 1,
                    ecn,
                },
                R,
            )
            .unwrap();
            let p = q
                .dequeue(t + Duration::from_micros(wait_us), &mut d)
                .unwrap();
            assert_eq!(p.ecn.is_ce(), expect_ce, "{wait_us} µs, {ecn:?}");
        }
        assert!(d.is_empty());
    }

    #[test]
    fn invalid_params_are_refused() {
        let l = FqCodelParams::linux();
        for bad in [
            FqCodelParams { quantum: 255, ..l },
            FqCodelParams {
                quantum: FQ_CODEL_QUANTUM_MAX + 1,
                ..l
            },
            FqCodelParams { flows: 0, ..l },
            FqCodelParams { flows: 65_537, ..l },
            FqCodelParams { limit: 0, ..l },
            FqCodelParams { drop_batch: 0, ..l },
            FqCodelParams {
                codel: CodelParams {
                    interval: Duration::ZERO,
                    ..l.codel
                },
                ..l
            },
        ] {
            assert!(FqCodel::<Tp>::new(bad, 1).is_err(), "{bad:?}");
        }
    }

    proptest! {
        #[test]
        fn fq_codel_conserves_packets(ops in ops(), limit in 1u32..60, flows_log in 0u32..11,
                                      quantum in 256u32..3000, batch in 1u32..70,
                                      target_ms in 1u64..10, interval_ms in 5u64..100,
                                      per_flow in any::<bool>(), seed in 0u64..100,
                                      ecn in any::<bool>(), ce_threshold_ms in proptest::option::of(0u64..20)) {
            let params = FqCodelParams {
                codel: CodelParams {
                    target: Duration::from_millis(target_ms),
                    interval: Duration::from_millis(interval_ms),
                    mtu: LINUX_MTU,
                    ecn,
                    ce_threshold: ce_threshold_ms.map(Duration::from_millis),
                },
                limit,
                flows: 1 << flows_log,
                quantum,
                drop_batch: batch,
                mtu_guard: if per_flow { MtuGuard::Flow } else { MtuGuard::Qdisc },
            };
            check_conservation(&mut FqCodel::new(params, seed).unwrap(), &ops)?;
        }
    }
}
