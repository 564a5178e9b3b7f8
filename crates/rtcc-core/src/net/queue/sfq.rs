//! SFQ, stochastic fairness queueing (McKenney, INFOCOM 1990; Linux `net/sched/sch_sfq.c`).
//!
//! # The idea
//!
//! Give every flow its own FIFO and serve the FIFOs in turn, so that a flow that sends more than
//! its share only delays itself. Keeping a FIFO per flow exactly would need unbounded state, so
//! SFQ hashes each flow into one of `divisor` buckets (1024) and keeps a queue per *bucket*: two
//! flows that share a bucket share a queue (the "stochastic" part; the kernel re-keys the hash
//! only if asked to, `perturb`, off by default). At most `flows` buckets (128) may hold packets at
//! once; an arrival for another bucket while all slots are busy is dropped.
//!
//! # Service: byte-based round robin
//!
//! Active slots sit on a ring in order of activation (a newly active slot joins at the *end* of
//! the round: serving new flows first could starve old ones). The slot at the head of the ring
//! sends packets while its credit (`allot`) is positive, each packet costing its size; when the
//! credit is used up the slot gets one more `quantum` (1514 bytes, one Ethernet MTU) and the ring
//! moves on. This is deficit round robin: over a round every backlogged slot sends about one
//! quantum of bytes, whatever its packet sizes. A slot that empties leaves the ring and, when
//! it becomes active again, starts a fresh credit of one quantum. Credits are counted in units of
//! 8 bytes, rounded up per packet (`SFQ_ALLOT_SIZE`), as in the kernel; flows whose packet sizes
//! are not multiples of 8 bytes are therefore charged up to 7 bytes more per packet.
//!
//! # Limits and drops
//!
//! An arrival is refused if its slot already holds `depth` packets (127). Otherwise it is queued,
//! and if the qdisc then holds more than `limit` packets (127), the **last packet of the longest
//! slot** is dropped (ties: the slot that most recently reached that length). When the arriving
//! packet's own slot is the longest, that packet is the one dropped. If every slot holds a
//! single packet, the slot next in line loses its packet.
//!
//! # Defaults and their sources (`sch_sfq.c`)
//!
//! | parameter | default | source |
//! |---|---|---|
//! | `limit` | 127 packets | `q->limit = SFQ_MAX_DEPTH` in `sfq_init()` |
//! | `depth` | 127 packets per slot | `SFQ_MAX_DEPTH` (also the maximum) |
//! | `flows` | 128 active slots | `SFQ_DEFAULT_FLOWS` |
//! | `divisor` | 1024 buckets | `SFQ_DEFAULT_HASH_DIVISOR` (a power of two ≤ 65536) |
//! | `quantum` | 1514 bytes | `psched_mtu()` |
//!
//! Setting a `limit` (as `tc` does) also applies `sfq_change()`'s rule: `limit = min(limit,
//! depth × flows)` and `flows = min(flows, limit)` ([`SfqParams::with_limit`]).
//!
//! # Fidelity notes
//!
//! The kernel's keyed flow hash is replaced by a seeded hash of the flow id (so runs are
//! reproducible and collisions depend on the seed). No RED (`qth_min` ...), no `headdrop`, no
//! periodic perturbation.

use super::{FlowHasher, InvalidParam, NetPacket, Queue, LINUX_MTU};
use crate::units::{Rate, Time};
use std::collections::VecDeque;

/// Most packets a slot may hold (`SFQ_MAX_DEPTH`).
pub const SFQ_MAX_DEPTH: u32 = 127;
/// Most active slots (`SFQ_MAX_FLOWS`).
pub const SFQ_MAX_FLOWS: u32 = 0x10000 - SFQ_MAX_DEPTH - 1;

/// SFQ's parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SfqParams {
    /// Most packets in the whole qdisc.
    pub limit: u32,
    /// Most packets in one slot.
    pub depth: u32,
    /// Most slots holding packets at once.
    pub flows: u32,
    /// Hash buckets (a power of two).
    pub divisor: u32,
    /// Bytes of credit a slot gets per round.
    pub quantum: u32,
}

impl Default for SfqParams {
    fn default() -> Self {
        SfqParams::linux()
    }
}

impl SfqParams {
    /// Linux's defaults: 127 packets, depth 127, 128 flows, 1024 buckets, quantum 1514.
    pub fn linux() -> SfqParams {
        SfqParams {
            limit: SFQ_MAX_DEPTH,
            depth: SFQ_MAX_DEPTH,
            flows: 128,
            divisor: 1024,
            quantum: LINUX_MTU,
        }
    }

    /// Set the limit as `tc qdisc ... sfq limit N` does: capped at `depth × flows`, and no more
    /// slots than packets.
    pub fn with_limit(self, limit: u32) -> SfqParams {
        let limit = limit.min(self.depth.saturating_mul(self.flows));
        SfqParams {
            limit,
            flows: self.flows.min(limit),
            ..self
        }
    }

    pub fn validate(&self) -> Result<(), InvalidParam> {
        if self.limit == 0 {
            return Err(InvalidParam::NoPacket("limit"));
        }
        if !(1..=SFQ_MAX_DEPTH).contains(&self.depth) {
            return Err(InvalidParam::Depth {
                max: SFQ_MAX_DEPTH,
                value: self.depth,
            });
        }
        if !(1..=SFQ_MAX_FLOWS).contains(&self.flows) {
            return Err(InvalidParam::Flows {
                max: SFQ_MAX_FLOWS,
                value: self.flows,
            });
        }
        if !self.divisor.is_power_of_two() || self.divisor > 65_536 {
            return Err(InvalidParam::Divisor(self.divisor));
        }
        if self.quantum == 0 {
            return Err(InvalidParam::NotPositive("quantum"));
        }
        Ok(())
    }
}

/// Credit units: 8 bytes, rounded up.
fn allot_size(bytes: u32) -> i64 {
    (bytes as i64 + 7) / 8
}

struct Slot<P> {
    packets: VecDeque<P>,
    backlog: u64,
    bucket: usize,
    /// Credit, in units of 8 bytes.
    allot: i64,
    /// When the slot's length last changed (ties of the longest-slot drop).
    stamp: u64,
}

/// The SFQ queue discipline.
pub struct Sfq<P> {
    params: SfqParams,
    hasher: FlowHasher,
    /// Bucket → slot holding its packets.
    buckets: Vec<Option<u32>>,
    slots: Vec<Slot<P>>,
    free: Vec<u32>,
    /// Active slots; the front is served next, the back is the kernel's `tail`.
    ring: VecDeque<u32>,
    qlen: usize,
    bytes: u64,
    clock: u64,
    scaled_quantum: i64,
    evicted: Vec<P>,
}

impl<P: NetPacket> Sfq<P> {
    /// An SFQ; `seed` keys its flow hash.
    pub fn new(params: SfqParams, seed: u64) -> Result<Sfq<P>, InvalidParam> {
        params.validate()?;
        let flows = params.flows.min(params.divisor);
        let params = SfqParams { flows, ..params };
        Ok(Sfq {
            hasher: FlowHasher::new(seed),
            buckets: vec![None; params.divisor as usize],
            slots: (0..flows)
                .map(|_| Slot {
                    packets: VecDeque::new(),
                    backlog: 0,
                    bucket: 0,
                    allot: 0,
                    stamp: 0,
                })
                .collect(),
            free: (0..flows).rev().collect(),
            ring: VecDeque::new(),
            qlen: 0,
            bytes: 0,
            clock: 0,
            scaled_quantum: allot_size(params.quantum),
            evicted: Vec::new(),
            params,
        })
    }

    pub fn params(&self) -> &SfqParams {
        &self.params
    }

    /// The hash bucket of `flow`.
    pub fn bucket_of(&self, flow: u32) -> usize {
        (self.hasher.hash32(flow) & (self.params.divisor - 1)) as usize
    }

    /// Slots holding packets.
    pub fn active_slots(&self) -> usize {
        self.ring.len()
    }

    fn touch(&mut self, x: u32) {
        self.clock += 1;
        self.slots[x as usize].stamp = self.clock;
    }

    /// The queue holds more than `limit`: drop one packet (`sfq_drop()`). Returns the slot it
    /// came from and the packet.
    fn drop_one(&mut self) -> Option<(u32, P)> {
        let longest = self
            .ring
            .iter()
            .map(|&x| {
                (
                    self.slots[x as usize].packets.len(),
                    self.slots[x as usize].stamp,
                    x,
                )
            })
            .max()?;
        let x = if longest.0 > 1 {
            longest.2
        } else {
            // Every slot holds one packet: the one next in line loses it.
            let x = self.ring.pop_front()?;
            self.buckets[self.slots[x as usize].bucket] = None;
            x
        };
        let slot = &mut self.slots[x as usize];
        let pkt = slot.packets.pop_back()?;
        slot.backlog -= pkt.size() as u64;
        self.bytes -= pkt.size() as u64;
        self.qlen -= 1;
        if slot.packets.is_empty() {
            self.free.push(x);
        }
        self.touch(x);
        Some((x, pkt))
    }
}

impl<P: NetPacket + Send> Queue<P> for Sfq<P> {
    fn enqueue(&mut self, _now: Time, pkt: P, _link_rate: Rate) -> Result<(), P> {
        let bucket = self.bucket_of(pkt.flow());
        let x = match self.buckets[bucket] {
            Some(x) => {
                if self.slots[x as usize].packets.len() >= self.params.depth as usize {
                    return Err(pkt);
                }
                x
            }
            None => {
                let Some(x) = self.free.pop() else {
                    return Err(pkt);
                };
                self.buckets[bucket] = Some(x);
                let slot = &mut self.slots[x as usize];
                slot.bucket = bucket;
                slot.backlog = 0;
                x
            }
        };
        let size = pkt.size() as u64;
        let slot = &mut self.slots[x as usize];
        slot.backlog += size;
        slot.packets.push_back(pkt);
        if slot.packets.len() == 1 {
            // A newly active slot joins at the end of the round with a fresh quantum.
            slot.allot = self.scaled_quantum;
            self.ring.push_back(x);
        }
        self.bytes += size;
        self.qlen += 1;
        self.touch(x);
        if self.qlen <= self.params.limit as usize {
            return Ok(());
        }
        match self.drop_one() {
            // A packet dropped from the arrival's own slot is its tail: the arrival itself.
            Some((from, p)) if from == x => Err(p),
            Some((_, p)) => {
                self.evicted.push(p);
                Ok(())
            }
            None => Ok(()),
        }
    }

    fn dequeue(&mut self, _now: Time, dropped: &mut Vec<P>) -> Option<P> {
        dropped.append(&mut self.evicted);
        loop {
            let &x = self.ring.front()?;
            let slot = &mut self.slots[x as usize];
            if slot.allot <= 0 {
                slot.allot += self.scaled_quantum;
                self.ring.rotate_left(1);
                continue;
            }
            let pkt = slot.packets.pop_front()?;
            let size = pkt.size();
            slot.backlog -= size as u64;
            if slot.packets.is_empty() {
                self.buckets[slot.bucket] = None;
                self.ring.pop_front();
                self.free.push(x);
            } else {
                slot.allot -= allot_size(size);
            }
            self.bytes -= size as u64;
            self.qlen -= 1;
            self.touch(x);
            return Some(pkt);
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
    use proptest::prelude::*;

    const R: Rate = Rate(1e6);

    /// `n` flow ids that land in distinct buckets of `q`.
    fn distinct_flows<P: NetPacket>(q: &Sfq<P>, n: usize) -> Vec<u32> {
        let mut seen = std::collections::HashSet::new();
        (0..)
            .filter(|&f| seen.insert(q.bucket_of(f)))
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

    fn serve_all(q: &mut Sfq<Tp>) -> Vec<Tp> {
        let mut d = Vec::new();
        let out: Vec<Tp> = std::iter::from_fn(|| q.dequeue(Time::ZERO, &mut d)).collect();
        assert!(d.is_empty());
        out
    }

    #[test]
    fn flows_take_turns_in_order_of_activation() {
        let mut q = Sfq::new(SfqParams::linux(), 1).unwrap();
        let f = distinct_flows(&q, 3);
        // Flow 0 arrives with 4 packets, then flows 1 and 2: one full-size packet per turn
        // (1514 bytes cost 190 credit units, exactly a quantum).
        let mut id = 0;
        for &flow in &f {
            for _ in 0..4 {
                q.enqueue(Time::ZERO, tp(id, 1514, flow), R).unwrap();
                id += 1;
            }
        }
        let order: Vec<u32> = serve_all(&mut q).iter().map(|p| p.flow).collect();
        let expect: Vec<u32> = (0..4).flat_map(|_| f.iter().copied()).collect();
        assert_eq!(order, expect);
        // Within a flow, order is kept.
        assert_eq!(q.active_slots(), 0);
    }

    #[test]
    fn a_new_flow_joins_at_the_end_of_the_round() {
        let mut q = Sfq::new(SfqParams::linux(), 2).unwrap();
        let f = distinct_flows(&q, 3);
        for i in 0..3 {
            q.enqueue(Time::ZERO, tp(i, 1514, f[0]), R).unwrap();
            q.enqueue(Time::ZERO, tp(10 + i, 1514, f[1]), R).unwrap();
        }
        let mut d = Vec::new();
        assert_eq!(q.dequeue(Time::ZERO, &mut d).unwrap().flow, f[0]);
        // Flow 2 becomes active now: it is served after flow 1 (the rest of this round).
        q.enqueue(Time::ZERO, tp(20, 1514, f[2]), R).unwrap();
        let order: Vec<u32> = serve_all(&mut q).iter().map(|p| p.flow).collect();
        assert_eq!(order, vec![f[1], f[2], f[0], f[1], f[0], f[1]]);
    }

    #[test]
    fn byte_round_robin_is_fair_across_packet_sizes() {
        // Flow A sends 1496-byte packets, flow B 496-byte ones (multiples of 8 bytes, so the
        // credit units are exact), 60 of each always queued. At the end of every round the bytes
        // served to each differ by less than one quantum.
        let mut q = Sfq::new(SfqParams::linux().with_limit(254), 3).unwrap();
        let f = distinct_flows(&q, 2);
        let (rounds, _, _, dropped) =
            check_drr_byte_fairness(&mut q, (f[0], f[1]), (1496, 496), 60, 5000);
        assert!(rounds > 1000);
        assert_eq!(dropped, 0);
    }

    #[test]
    fn overflow_drops_the_tail_of_the_longest_slot() {
        let mut q = Sfq::new(SfqParams::linux().with_limit(10), 4).unwrap();
        let f = distinct_flows(&q, 3);
        let (a, b, c) = (f[0], f[1], f[2]);
        let mut id = 0;
        let mut add = |q: &mut Sfq<Tp>, flow: u32| {
            id += 1;
            let r = q.enqueue(Time::ZERO, tp(id, 1000, flow), R);
            let mut ev = Vec::new();
            q.drain_dropped(&mut ev);
            (id, r, ev)
        };
        for flow in [a, a, a, a, a, a, b, b, b, c] {
            let (_, r, ev) = add(&mut q, flow);
            assert!(r.is_ok() && ev.is_empty());
        }
        assert_eq!(q.len_packets(), 10);
        // An eleventh packet (flow B): A is the longest (6), its last packet (id 6) goes.
        let (_, r, ev) = add(&mut q, b);
        assert!(r.is_ok());
        assert_eq!(ev.iter().map(|p| p.id).collect::<Vec<_>>(), vec![6]);
        // A 5, B 4, C 1. C arrives: A still the longest, id 5 goes.
        let (_, r, ev) = add(&mut q, c);
        assert!(r.is_ok());
        assert_eq!(ev.iter().map(|p| p.id).collect::<Vec<_>>(), vec![5]);
        // A 4, B 4, C 2. B arrives: B is the longest (5), and the arrival is its tail.
        let (bid, r, ev) = add(&mut q, b);
        assert_eq!(r.map_err(|p| p.id), Err(bid));
        assert!(ev.is_empty());
        // A 4, B 4 (B most recently reached 4), C 2. C arrives: the tie goes to B.
        let (_, r, ev) = add(&mut q, c);
        assert!(r.is_ok());
        assert_eq!(ev.len(), 1);
        assert_eq!(ev[0].flow, b);
        assert_eq!(q.len_packets(), 10);
        assert_eq!(q.len_bytes(), 10_000);
    }

    #[test]
    fn when_every_slot_holds_one_packet_the_next_in_line_loses_it() {
        // Defaults: 127 packets, 128 slots. 128 flows with one packet each: the 128th arrival
        // overflows and the first flow's packet (next to be served) is dropped.
        let mut q = Sfq::new(SfqParams::linux(), 5).unwrap();
        let f = distinct_flows(&q, 128);
        for (i, &flow) in f.iter().enumerate() {
            assert!(q.enqueue(Time::ZERO, tp(i as u64, 100, flow), R).is_ok());
        }
        let mut ev = Vec::new();
        q.drain_dropped(&mut ev);
        assert_eq!(ev.iter().map(|p| p.id).collect::<Vec<_>>(), vec![0]);
        assert_eq!(q.len_packets(), 127);
        assert_eq!(q.active_slots(), 127);
        let served = serve_all(&mut q);
        assert_eq!(served[0].id, 1);
    }

    #[test]
    fn per_slot_depth_and_active_slot_limits() {
        let mut q = Sfq::new(SfqParams::linux().with_limit(20_000), 6).unwrap();
        assert_eq!(q.params().limit, 127 * 128);
        let f = distinct_flows(&q, 129);
        for i in 0..127 {
            assert!(q.enqueue(Time::ZERO, tp(i, 100, f[0]), R).is_ok());
        }
        assert!(q.enqueue(Time::ZERO, tp(999, 100, f[0]), R).is_err());
        for &flow in &f[1..128] {
            assert!(q.enqueue(Time::ZERO, tp(0, 100, flow), R).is_ok());
        }
        assert_eq!(q.active_slots(), 128);
        // A 129th bucket finds no free slot.
        assert!(q.enqueue(Time::ZERO, tp(0, 100, f[128]), R).is_err());
        // A flow sharing a bucket with an active one is queued with it.
        let mut g = 1000;
        while q.bucket_of(g) != q.bucket_of(f[5]) {
            g += 1;
        }
        assert!(q.enqueue(Time::ZERO, tp(0, 100, g), R).is_ok());
    }

    #[test]
    fn with_limit_follows_tc() {
        let p = SfqParams::linux().with_limit(25);
        assert_eq!((p.limit, p.flows), (25, 25));
        let p = SfqParams {
            depth: 10,
            flows: 4,
            ..SfqParams::linux()
        }
        .with_limit(100);
        assert_eq!((p.limit, p.flows), (40, 4));
        assert_eq!(SfqParams::linux().limit, 127);
        assert_eq!(SfqParams::linux().flows, 128);
        for bad in [
            SfqParams {
                divisor: 1000,
                ..SfqParams::linux()
            },
            SfqParams {
                depth: 128,
                ..SfqParams::linux()
            },
            SfqParams {
                quantum: 0,
                ..SfqParams::linux()
            },
            SfqParams {
                limit: 0,
                ..SfqParams::linux()
            },
            SfqParams {
                flows: 0,
                ..SfqParams::linux()
            },
        ] {
            assert!(Sfq::<Tp>::new(bad, 1).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_link_reports_packets_dropped_to_make_room() {
        use crate::net::{Capacity, Link, LinkOutput};
        let params = SfqParams::linux().with_limit(4);
        let f = distinct_flows(&Sfq::<Tp>::new(params, 8).unwrap(), 2);
        let mut link = Link::new(
            Capacity::Constant(Rate(1e6)),
            Box::new(Sfq::<Tp>::new(params, 8).unwrap()),
        );
        let mut out = LinkOutput::default();
        // Four packets of flow A: one goes on the wire, three wait. Two of flow B: the second
        // overflows the limit of 4 and A's last packet makes room.
        for id in 0..4 {
            link.enqueue(Time::ZERO, tp(id, 1000, f[0]), &mut out);
        }
        for id in 10..12 {
            link.enqueue(Time::ZERO, tp(id, 1000, f[1]), &mut out);
        }
        assert_eq!(
            out.dropped.iter().map(|p| p.id).collect::<Vec<_>>(),
            vec![3]
        );
        assert_eq!(link.queue().len_packets(), 4);
    }

    proptest! {
        #[test]
        fn sfq_conserves_packets(ops in ops(), limit in 1u32..60, depth in 1u32..20, flows in 1u32..8,
                                 divisor_log in 0u32..11, quantum in 64u32..3000, seed in 0u64..100) {
            let params = SfqParams { depth, flows, divisor: 1 << divisor_log, quantum, ..SfqParams::linux() }
                .with_limit(limit);
            check_conservation(&mut Sfq::new(params, seed).unwrap(), &ops)?;
        }
    }
}
