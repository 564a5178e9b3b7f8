//! Queues in front of a link, behind one interface.
//!
//! A queue may drop at enqueue (drop-tail, PIE, and the fair queues that make room by dropping
//! from their longest flow) or at dequeue (CoDel and fq_codel drop the head when its sojourn time
//! has been too long), so `dequeue` reports its drops, and packets that a fair queue drops to make
//! room for an arrival are handed over by [`Queue::drain_dropped`]. Queues see packets through
//! [`NetPacket`], which gives their size and flow; a queue that needs sojourn times stamps each
//! packet with the `now` of its enqueue.
//!
//! Disciplines, one file each (see `docs/queues.md`):
//! - [`DropTail`]: first in, first out, arrivals that do not fit are dropped;
//! - [`Codel`]: CoDel (RFC 8289, Linux `sch_codel`), with its state machine [`CodelState`]
//!   split out so that [`FqCodel`] runs one per flow;
//! - [`Pie`]: PIE (RFC 8033, Linux `sch_pie`), today's Linux algorithm and the Linux 3.16 one;
//! - [`Sfq`]: stochastic fairness queueing (Linux `sch_sfq`);
//! - [`FqCodel`]: flow queueing with CoDel (RFC 8290, Linux `sch_fq_codel`);
//! - [`DualPi2`]: the DualQ Coupled AQM of L4S (RFC 9332, Linux `sch_dualpi2`): a classic and
//!   an L4S queue, picked by the ECN codepoint, one PI² controller signalling both.
//!
//! [`QueueConfig`] is how a scenario names one, with presets, and builds it for a link.
//!
//! Conservation holds for every queue: enqueued = dequeued + refused at enqueue + dropped at
//! dequeue + handed over by `drain_dropped` + still queued, in packets and in bytes. An ECN mark
//! is not a drop: a marked packet is dequeued like any other, carrying CE.
//!
//! # ECN (RFC 3168)
//!
//! Every discipline can signal congestion to an ECN-capable transport by *marking* instead of
//! dropping: a packet whose IP header says ECT(0) or ECT(1) gets the CE codepoint and is sent on
//! ([`NetPacket::set_ce`], Linux `INET_ECN_set_ce()`); a Not-ECT packet is dropped as before
//! (RFC 3168 §5: "If the ECT codepoint is not set, the router drops the packet"). Only the
//! *early* (AQM) signal becomes a mark: a queue that is full still drops, ECT or not (there is no
//! room to keep a marked packet; Linux's tail drops never look at ECN). Each discipline's switch defaults off in rtcc (see `docs/queues.md`):
//! - [`Codel`] and [`FqCodel`]: `ecn` marks where the control law drops (Linux `codel_dequeue()`),
//!   and `ce_threshold` marks every ECT packet whose sojourn exceeds it (Linux's optional
//!   `ce_threshold`, a step for DCTCP-like senders);
//! - [`Pie`]: `ecn` marks an early-dropped ECT packet while the drop probability is at most 10 %
//!   (RFC 8033 §5.1, Linux `pie_qdisc_enqueue()`), and drops above;
//! - [`DropTail`]: `mark_threshold` marks ECT arrivals that find the queue beyond a step (a
//!   DCTCP-style K, RFC 8257 §3.1), and drops only when the queue is full.
//!
//! These classic disciplines treat ECT(1) exactly as ECT(0) (RFC 3168 §5; RFC 9331 §5.4 asks
//! the same of a queue that does not know L4S): both are marked where the AQM would drop.
//! [`DualPi2`] is the one discipline that reads the codepoint ([`NetPacket::ecn`]): ECT(1) and CE
//! pick its L4S queue, and its marking is always on (an L4S queue without it would be a
//! drop-tail buffer).

pub mod codel;
pub mod config;
pub mod droptail;
pub mod dualpi2;
pub mod fq_codel;
pub mod pie;
pub mod sfq;

pub use codel::{Codel, CodelParams, CodelSource, CodelState};
pub use config::{
    CodelConfig, DropTailConfig, FqCodelConfig, PieConfig, Preset, QueueConfig, QueueParams,
    SfqConfig,
};
pub use droptail::DropTail;
pub use dualpi2::{DualPi2, DualPi2Params, StepThreshold};
pub use fq_codel::{FqCodel, FqCodelParams, MtuGuard};
pub use pie::{Pie, PieEstimator, PieParams, PieScaling};
pub use sfq::{Sfq, SfqParams};

use crate::units::{Bytes, Duration, Rate, Time};
use rand_chacha::ChaCha8Rng;
use rand_core::{Rng, SeedableRng};
use serde::Serialize;

/// What a queue needs to know about a packet.
pub trait NetPacket {
    /// Bytes on the wire.
    fn size(&self) -> u32;
    /// Flow the packet belongs to (for per-flow queueing).
    fn flow(&self) -> u32;
    /// Mark congestion experienced instead of dropping (Linux `INET_ECN_set_ce()`): `true` if
    /// the packet is ECN-capable (it now carries CE, or already did), `false` for a Not-ECT
    /// packet, which the queue must drop. Packet types without an ECN field are never marked.
    fn set_ce(&mut self) -> bool {
        false
    }
    /// The ECN codepoint of the packet's IP header (DualPI2 classifies by it). Packet types
    /// without an ECN field read Not-ECT.
    fn ecn(&self) -> crate::packet::Ecn {
        crate::packet::Ecn::NotEct
    }
}

/// A queue discipline.
pub trait Queue<P>: Send {
    /// Offer a packet; `Err` gives it back if the queue drops it.
    fn enqueue(&mut self, now: Time, pkt: P, link_rate: Rate) -> Result<(), P>;
    /// Take the next packet to transmit; packets dropped on the way out go to `dropped`.
    fn dequeue(&mut self, now: Time, dropped: &mut Vec<P>) -> Option<P>;
    fn len_packets(&self) -> usize;
    fn len_bytes(&self) -> u64;
    fn is_empty(&self) -> bool {
        self.len_packets() == 0
    }
    /// Packets dropped while accepting an arrival that are not the arrival itself: fair queues
    /// make room by dropping from their longest (SFQ) or fattest (fq_codel) flow. Moves them to
    /// `out`. Call after every `enqueue` (the [`Link`](super::Link) does); `dequeue` also hands
    /// over any still held, so none is ever lost. Queues that only refuse arrivals have none.
    fn drain_dropped(&mut self, _out: &mut Vec<P>) {}
}

/// The maximum transmission unit Linux's qdiscs use by default: `psched_mtu()` of an Ethernet
/// device, 1500 bytes of IP packet plus the 14-byte Ethernet header. It is the DRR quantum of
/// SFQ and fq_codel and the "one MTU" of the CoDel and PIE guards.
pub const LINUX_MTU: u32 = 1514;

/// Parameters of a discipline out of their range: what `validate` and the constructors say.
/// Each message names the parameter, as the configuration calls it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum InvalidParam {
    /// `target`, `interval`, `tupdate`, `dq_threshold` or SFQ's `quantum` is 0.
    #[error("{0} must be positive")]
    NotPositive(&'static str),
    /// `limit` or `drop_batch` is 0 packets.
    #[error("{0} must be at least 1 packet")]
    NoPacket(&'static str),
    /// PIE's `alpha` or `beta` is negative or not finite.
    #[error("{name} must be a finite number ≥ 0, not {value}")]
    NegativeGain { name: &'static str, value: f64 },
    /// PIE's `decay` is not a fraction.
    #[error("decay must be in [0, 1], not {0}")]
    Decay(f64),
    /// SFQ's `depth` is 0 or above `SFQ_MAX_DEPTH`.
    #[error("depth must be between 1 and {max} packets, not {value}")]
    Depth { max: u32, value: u32 },
    /// The number of flows is 0 or above the discipline's maximum.
    #[error("flows must be between 1 and {max}, not {value}")]
    Flows { max: u32, value: u32 },
    /// SFQ's hash `divisor` is not a power of two up to 65536.
    #[error("divisor must be a power of two up to 65536, not {0}")]
    Divisor(u32),
    /// DualPI2's coupling factor `k` is below 1, above 255 (Linux keeps it in a byte) or not
    /// finite.
    #[error("coupling must be a number from 1 to 255, not {0}")]
    Coupling(f64),
    /// DualPI2's classic weight is above 100 %.
    #[error("c_protection must be a percentage from 0 to 100, not {0}")]
    CProtection(u8),
    /// fq_codel's `quantum` is outside the kernel's bounds.
    #[error("quantum must be between 256 bytes and 1 MiB (the kernel's bounds), not {0} bytes")]
    FqCodelQuantum(u32),
}

/// A queue's capacity as written in a scenario: `"100pkts"`, `"150KB"`, `"120ms"` (of the link's
/// current rate) or `"unlimited"`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub enum QueueLimit {
    Packets(u64),
    Bytes(u64),
    Time(Duration),
    Unlimited,
}

impl QueueLimit {
    pub fn parse(input: &str) -> Result<QueueLimit, String> {
        let s = input.trim();
        if s == "unlimited" {
            return Ok(QueueLimit::Unlimited);
        }
        for suffix in ["pkts", "packets", "pkt"] {
            if let Some(n) = s.strip_suffix(suffix) {
                return n.trim().parse::<u64>().map(QueueLimit::Packets).map_err(|_| {
                    format!("invalid queue limit {input:?}: the packet count must be a whole number")
                });
            }
        }
        if s.ends_with('s') {
            return Duration::parse(s)
                .map(QueueLimit::Time)
                .map_err(|e| e.to_string());
        }
        if s.ends_with('B') {
            return Bytes::parse(s)
                .map(|b| QueueLimit::Bytes(b.0))
                .map_err(|e| e.to_string());
        }
        Err(format!(
            "invalid queue limit {input:?}: expected packets (\"100pkts\"), bytes (\"150KB\"), \
             time at the link's rate (\"120ms\") or \"unlimited\""
        ))
    }

    /// Whether a queue holding `packets`/`bytes` has room for `size` more bytes.
    /// A time limit is converted at `link_rate`, and never below one full-size packet (1500
    /// bytes), so a link in an outage still queues one packet rather than dropping everything.
    pub fn admits(&self, packets: usize, bytes: u64, size: u32, link_rate: Rate) -> bool {
        match *self {
            QueueLimit::Unlimited => true,
            QueueLimit::Packets(n) => (packets as u64) < n,
            QueueLimit::Bytes(b) => bytes + size as u64 <= b,
            QueueLimit::Time(d) => {
                let limit = link_rate.bytes_in(d).max(1500.0);
                (bytes + size as u64) as f64 <= limit
            }
        }
    }
}

impl std::fmt::Display for QueueLimit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            QueueLimit::Packets(n) => write!(f, "{n}pkts"),
            QueueLimit::Bytes(b) => write!(f, "{b}B"),
            QueueLimit::Time(d) => write!(f, "{d}"),
            QueueLimit::Unlimited => write!(f, "unlimited"),
        }
    }
}

impl<'de> serde::Deserialize<'de> for QueueLimit {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        QueueLimit::parse(&s).map_err(serde::de::Error::custom)
    }
}

/// A packet and the time it entered the queue (for sojourn times).
pub(crate) struct Stamped<P> {
    pub at: Time,
    pub pkt: P,
}

/// Seeded hash of flow ids onto buckets, standing in for the kernel's keyed flow hash
/// (`skb_get_hash`, keyed by a random secret at boot; SFQ adds its `perturbation`). Two flows
/// may share a bucket: that is the "stochastic" of SFQ. The keys come from the seed, so a run is
/// reproducible and different seeds give different collisions.
#[derive(Debug, Clone)]
pub(crate) struct FlowHasher {
    k0: u64,
    k1: u64,
}

impl FlowHasher {
    pub fn new(seed: u64) -> FlowHasher {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        FlowHasher {
            k0: rng.next_u64(),
            k1: rng.next_u64(),
        }
    }

    /// A 32-bit hash of `flow` (a keyed SplitMix64-style mix).
    pub fn hash32(&self, flow: u32) -> u32 {
        let mut z = (flow as u64 ^ self.k0).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        z ^= z >> 31;
        z = (z ^ self.k1).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z ^= z >> 29;
        z = z.wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 32;
        z as u32
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::packet::Ecn;
    use proptest::prelude::*;

    #[derive(Debug, Clone, Copy, PartialEq)]
    pub struct P(pub u32, pub u32);
    impl NetPacket for P {
        fn size(&self) -> u32 {
            self.0
        }
        fn flow(&self) -> u32 {
            self.1
        }
    }

    /// A packet with an identity and an ECN codepoint, for conservation and marking checks.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct Tp {
        pub id: u64,
        pub size: u32,
        pub flow: u32,
        pub ecn: Ecn,
    }
    impl NetPacket for Tp {
        fn size(&self) -> u32 {
            self.size
        }
        fn flow(&self) -> u32 {
            self.flow
        }
        fn set_ce(&mut self) -> bool {
            self.ecn.set_ce()
        }
        fn ecn(&self) -> Ecn {
            self.ecn
        }
    }

    /// The codepoint the conservation workloads give a flow: even flows are ECN-capable
    /// (ECT(0), or ECT(1) for every fourth, so that classic queues see both and DualPI2 fills
    /// both its queues), odd ones are not, so a marking queue sees every kind.
    pub fn ecn_of_flow(flow: u32) -> Ecn {
        match flow % 4 {
            0 => Ecn::Ect0,
            2 => Ecn::Ect1,
            _ => Ecn::NotEct,
        }
    }

    /// Keep two flows backlogged (`depth` packets each, of `sizes.0` and `sizes.1` bytes), serve
    /// `steps` packets, and check at every round boundary (flow `a` served right after `b`) that
    /// the bytes served to each differ by less than one quantum (1514 bytes): the byte fairness
    /// of deficit round robin. Returns (rounds, bytes of a, bytes of b, packets dropped).
    pub fn check_drr_byte_fairness(
        q: &mut dyn Queue<Tp>,
        (a, b): (u32, u32),
        sizes: (u32, u32),
        depth: u32,
        steps: usize,
    ) -> (usize, u64, u64, usize) {
        let rate = crate::units::Rate::from_mbps(10.0);
        let (mut id, mut queued) = (0u64, [0u32; 2]);
        let (mut bytes_a, mut bytes_b) = (0u64, 0u64);
        let (mut last, mut rounds) = (None, 0);
        let mut dropped = Vec::new();
        for _ in 0..steps {
            for (k, (flow, size)) in [(a, sizes.0), (b, sizes.1)].into_iter().enumerate() {
                while queued[k] < depth {
                    let ecn = Ecn::NotEct;
                    q.enqueue(
                        Time::ZERO,
                        Tp {
                            id,
                            size,
                            flow,
                            ecn,
                        },
                        rate,
                    )
                    .unwrap();
                    id += 1;
                    queued[k] += 1;
                }
            }
            let p = q.dequeue(Time::ZERO, &mut dropped).unwrap();
            if p.flow == a && last == Some(b) {
                rounds += 1;
                assert!(
                    bytes_a.abs_diff(bytes_b) < 1514,
                    "round {rounds}: {bytes_a} vs {bytes_b}"
                );
            }
            if p.flow == a {
                bytes_a += p.size as u64;
                queued[0] -= 1;
            } else {
                bytes_b += p.size as u64;
                queued[1] -= 1;
            }
            last = Some(p.flow);
        }
        (rounds, bytes_a, bytes_b, dropped.len())
    }

    /// One step of a random workload: advance the clock by `dt_us` microseconds, then either
    /// offer a burst of `burst` packets of `size` bytes on `flow`, or serve `burst` packets.
    #[derive(Debug, Clone, Copy)]
    pub struct Op {
        pub push: bool,
        pub burst: u8,
        pub size: u32,
        pub flow: u32,
        pub dt_us: u64,
    }

    pub fn ops() -> impl Strategy<Value = Vec<Op>> {
        proptest::collection::vec(
            (
                any::<bool>(),
                1u8..12,
                prop_oneof![Just(1500u32), Just(1514), 40u32..1600],
                0u32..12,
                prop_oneof![Just(0u64), 0u64..3_000, 0u64..200_000, Just(2_000_000)],
            )
                .prop_map(|(push, burst, size, flow, dt_us)| Op {
                    push,
                    burst,
                    size,
                    flow,
                    dt_us,
                }),
            1..300,
        )
    }

    /// Drive `q` with `ops` and check that every packet is accounted for exactly once, in
    /// packets and bytes, after every step and once the queue is drained; and that only
    /// ECN-capable packets (even flows, [`ecn_of_flow`]) ever come out CE-marked, and only
    /// served ones (a mark is not a drop).
    pub fn check_conservation(q: &mut dyn Queue<Tp>, ops: &[Op]) -> Result<(), TestCaseError> {
        let rate = Rate(2e6);
        let mut now = Time::ZERO;
        let mut next_id = 0u64;
        let (mut in_pkts, mut in_bytes) = (0u64, 0u64);
        let mut out: Vec<Tp> = Vec::new();
        let mut dropped: Vec<Tp> = Vec::new();
        let account = |q: &dyn Queue<Tp>,
                       in_pkts: u64,
                       in_bytes: u64,
                       out: &[Tp]|
         -> Result<(), TestCaseError> {
            let out_bytes: u64 = out.iter().map(|p| p.size as u64).sum();
            prop_assert_eq!(in_pkts, out.len() as u64 + q.len_packets() as u64);
            prop_assert_eq!(in_bytes, out_bytes + q.len_bytes());
            prop_assert_eq!(q.is_empty(), q.len_packets() == 0);
            Ok(())
        };
        for op in ops {
            now += Duration::from_micros(op.dt_us);
            for _ in 0..op.burst {
                if op.push {
                    let p = Tp {
                        id: next_id,
                        size: op.size,
                        flow: op.flow,
                        ecn: ecn_of_flow(op.flow),
                    };
                    next_id += 1;
                    in_pkts += 1;
                    in_bytes += p.size as u64;
                    if let Err(back) = q.enqueue(now, p, rate) {
                        prop_assert_eq!(back, p);
                        out.push(back);
                    }
                    q.drain_dropped(&mut dropped);
                } else if let Some(p) = q.dequeue(now, &mut dropped) {
                    out.push(p);
                }
                out.append(&mut dropped);
                account(q, in_pkts, in_bytes, &out)?;
            }
        }
        // Drain: every packet comes out (served or dropped) and nothing else does.
        let mut guard = 0;
        while !q.is_empty() {
            now += Duration::from_millis(1);
            if let Some(p) = q.dequeue(now, &mut dropped) {
                out.push(p);
            }
            out.append(&mut dropped);
            account(q, in_pkts, in_bytes, &out)?;
            guard += 1;
            prop_assert!(guard < 1_000_000, "the queue does not drain");
        }
        prop_assert_eq!(q.len_bytes(), 0);
        prop_assert!(q.dequeue(now, &mut dropped).is_none());
        let mut ids: Vec<u64> = out.iter().map(|p| p.id).collect();
        ids.sort_unstable();
        prop_assert_eq!(ids, (0..next_id).collect::<Vec<_>>());
        for p in &out {
            prop_assert!(
                p.ecn != Ecn::Ce || ecn_of_flow(p.flow).is_ecn_capable(),
                "a Not-ECT packet came out marked: {:?}",
                p
            );
        }
        Ok(())
    }

    #[test]
    fn parses_limits() {
        assert_eq!(
            QueueLimit::parse("100pkts").unwrap(),
            QueueLimit::Packets(100)
        );
        assert_eq!(
            QueueLimit::parse("150KB").unwrap(),
            QueueLimit::Bytes(150_000)
        );
        assert_eq!(
            QueueLimit::parse("120ms").unwrap(),
            QueueLimit::Time(Duration::from_millis(120))
        );
        assert_eq!(
            QueueLimit::parse("unlimited").unwrap(),
            QueueLimit::Unlimited
        );
        let e = QueueLimit::parse("120").unwrap_err();
        assert!(e.contains("pkts") && e.contains("ms"), "{e}");
        assert!(QueueLimit::parse("1.5pkts").is_err());
        for s in ["100pkts", "150000B", "120ms", "unlimited"] {
            assert_eq!(QueueLimit::parse(s).unwrap().to_string(), s);
        }
    }

    #[test]
    fn time_limit_follows_the_link_rate() {
        // 100 ms at 1 Mbps = 12 500 bytes.
        let l = QueueLimit::Time(Duration::from_millis(100));
        assert!(l.admits(0, 11_000, 1500, Rate(1e6)));
        assert!(!l.admits(0, 11_001, 1500, Rate(1e6)));
        assert!(
            l.admits(0, 0, 1500, Rate(0.0)),
            "an outage still queues one packet"
        );
    }

    #[test]
    fn flow_hash_is_seeded_and_spreads_flows() {
        let a = FlowHasher::new(1);
        let b = FlowHasher::new(2);
        assert_eq!(a.hash32(7), FlowHasher::new(1).hash32(7));
        assert!((0..64).any(|f| a.hash32(f) != b.hash32(f)));
        // 4096 flows onto 1024 buckets: every bucket is hit roughly 4 times, none 20.
        let mut hits = vec![0u32; 1024];
        for f in 0..4096 {
            hits[(a.hash32(f) & 1023) as usize] += 1;
        }
        assert!(*hits.iter().max().unwrap() < 20, "{hits:?}");
        assert!(hits.iter().filter(|&&h| h == 0).count() < 60);
    }
}
