//! What a run's summary needs from a flow's packets, gathered one packet at a time.
//!
//! A run of 50 million packets would hold about 4 GB of [`PacketRecord`]s if the summary were
//! computed from the whole log at the end. Instead the simulator hands every record here once its
//! fate is known (received, dropped, or still in flight when the run ends), in the order the
//! packets were sent, and may then write the record out or forget it. What stays is what the
//! metrics cannot do without: counters, rate bins, SQP's simulated video (Eq. 10, computed as
//! the packets come: [`Eq10`]), and, for the exact percentiles, two delays per packet as integer
//! nanoseconds, delta-encoded ([`DelaySample`]): about 5 bytes a packet instead of 88.
//!
//! Fed the records in log order, every metric comes out bit for bit as it would from the whole
//! log: Eq. 10 sees the packets in that order (the simulator logs them in ingress order), the
//! delays are only ever used through their exact ranks, and every sum is over integers.

use super::spill::SpillFile;
use super::sqp_frame_delay::{Eq10, SentPacket};
use super::{percentile_at, percentile_ranks, PacketRecord, Percentiles, JAIN_WINDOW, RATE_WINDOW};
use crate::packet::PacketKind;
use crate::units::{Duration, Time};

/// A flow's packet statistics (see the module header).
#[derive(Debug)]
pub struct PacketStats {
    /// The flow's life (its start and stop).
    start: Time,
    stop: Time,
    /// The span of the run's totals: the first start and the last stop over all flows.
    span: (Time, Time),
    /// Propagation between the first link's enqueue and the last link's departure (the delays
    /// of the hops before the last on a multi-hop path), taken out of the queuing delay.
    propagation_between_links: Duration,
    pub sent: usize,
    pub lost: usize,
    /// Neither received nor dropped when the run ended.
    pub in_flight_at_end: usize,
    pub received_packets: usize,
    pub received_bytes: u64,
    /// Bytes that left the bottleneck during the flow's life, and during the totals' span.
    pub departed_in_life: u64,
    pub departed_in_span: u64,
    pub retransmissions: usize,
    pub fec_packets: usize,
    /// Send → receive of every received packet, and enqueue → departure of every packet that
    /// left the bottleneck.
    pub one_way_delay: DelaySample,
    pub queuing_delay: DelaySample,
    /// Bytes received in each whole [`RATE_WINDOW`] of the flow's life.
    rate_bytes: Vec<u64>,
    /// Bytes received in each [`JAIN_WINDOW`] from time zero to the end of the run.
    pub fairness_bytes: Vec<u64>,
    /// Bytes received (by arrival time) in each [`RATE_WINDOW`] from time zero, over
    /// [`arrival_windows`] windows (the last one partial when the run is not a whole number of
    /// windows): the per-window rates of a run's facts (`rtcc_scenario::facts`).
    pub arrival_bytes: Vec<u64>,
    /// SQP's simulated video over the flow's packets, when asked for
    /// ([`PacketStats::with_sqp_frames`]).
    pub sqp: Option<Eq10>,
    /// (receive, send) time of every received packet, in log order, when asked for
    /// ([`PacketStats::keeping_transits`]): what RFC 3550's interarrival jitter needs
    /// ([`super::audio`]). `None` for flows that do not report it.
    pub transits: Option<Vec<(Time, Time)>>,
}

/// The [`RATE_WINDOW`]s of a run of length `end`, from time zero, counting a last partial one
/// (at least one): the length of [`PacketStats::arrival_bytes`].
pub fn arrival_windows(end: Time) -> usize {
    (end.0.div_ceil(RATE_WINDOW.0) as usize).max(1)
}

impl PacketStats {
    /// Empty statistics of a flow living in `[start, stop)`, in a run of length `end` whose
    /// flows span `span`.
    pub fn new(start: Time, stop: Time, span: (Time, Time), end: Time) -> PacketStats {
        let windows = |from: Time, to: Time, w: u64| (to.0.saturating_sub(from.0) / w) as usize;
        PacketStats {
            start,
            stop,
            span,
            propagation_between_links: Duration::ZERO,
            sent: 0,
            lost: 0,
            in_flight_at_end: 0,
            received_packets: 0,
            received_bytes: 0,
            departed_in_life: 0,
            departed_in_span: 0,
            retransmissions: 0,
            fec_packets: 0,
            one_way_delay: DelaySample::default(),
            queuing_delay: DelaySample::default(),
            rate_bytes: vec![0; windows(start, stop, RATE_WINDOW.0.max(1))],
            fairness_bytes: vec![0; windows(Time::ZERO, end, JAIN_WINDOW.0.max(1))],
            arrival_bytes: vec![0; arrival_windows(end)],
            sqp: None,
            transits: None,
        }
    }

    /// Compute SQP's simulated video (Eq. 10) with frames every `interval` over the flow's life
    /// too, in a run of length `end`.
    pub fn with_sqp_frames(mut self, interval: Duration, end: Time) -> PacketStats {
        self.sqp = Some(Eq10::new(self.start, self.stop, interval, end));
        self
    }

    /// Keep each received packet's (receive, send) times too (audio flows), if `keep`.
    pub fn keeping_transits(mut self, keep: bool) -> PacketStats {
        self.transits = keep.then(Vec::new);
        self
    }

    /// On a path of several hops a record's `enqueue` is at its first link and its `depart` at
    /// its last: `d` is the propagation between them, which the queuing delay leaves out.
    pub fn set_propagation_between_links(&mut self, d: Duration) {
        self.propagation_between_links = d;
    }

    /// The statistics of a whole log (records in log order).
    pub fn of(
        packets: &[PacketRecord],
        start: Time,
        stop: Time,
        span: (Time, Time),
        end: Time,
    ) -> PacketStats {
        let mut stats = PacketStats::new(start, stop, span, end);
        stats.add_all(packets);
        stats
    }

    /// [`PacketStats::add`] each of `packets`, with room made for them first.
    pub fn add_all(&mut self, packets: &[PacketRecord]) {
        let n = packets.len();
        self.one_way_delay.reserve(n);
        self.queuing_delay.reserve(n);
        for p in packets {
            self.add(p);
        }
    }

    /// Count one packet whose fate is known (or the run has ended). Records must come in log
    /// order for the per-packet vectors to match the log.
    pub fn add(&mut self, p: &PacketRecord) {
        self.sent += 1;
        self.lost += p.dropped as usize;
        self.retransmissions += (p.kind == PacketKind::Retransmission) as usize;
        self.fec_packets += (p.kind == PacketKind::Fec) as usize;
        if let Some(d) = p.depart {
            let queued = d - (p.enqueue + self.propagation_between_links);
            self.queuing_delay.push(queued);
            let size = p.size as u64;
            if d >= self.start && d < self.stop {
                self.departed_in_life += size;
            }
            if d >= self.span.0 && d < self.span.1 {
                self.departed_in_span += size;
            }
        }
        match p.recv {
            Some(r) => {
                self.received_packets += 1;
                self.received_bytes += p.size as u64;
                self.one_way_delay.push(r - p.send);
                if let Some(t) = &mut self.transits {
                    t.push((r, p.send));
                }
                if r >= self.start {
                    let k = ((r.0 - self.start.0) / RATE_WINDOW.0) as usize;
                    if let Some(b) = self.rate_bytes.get_mut(k) {
                        *b += p.size as u64;
                    }
                }
                if let Some(b) = self.fairness_bytes.get_mut((r.0 / JAIN_WINDOW.0) as usize) {
                    *b += p.size as u64;
                }
                if let Some(b) = self.arrival_bytes.get_mut((r.0 / RATE_WINDOW.0) as usize) {
                    *b += p.size as u64;
                }
            }
            None if !p.dropped => self.in_flight_at_end += 1,
            None => {}
        }
        if let Some(sqp) = &mut self.sqp {
            sqp.push(&SentPacket::of(p));
        }
    }

    /// Free the per-packet vectors (the delays, Eq. 10's state) once the flow is summarised;
    /// the counters and bins stay.
    pub fn release_per_packet(&mut self) {
        self.one_way_delay = DelaySample::default();
        self.queuing_delay = DelaySample::default();
        self.sqp = None;
        if let Some(t) = &mut self.transits {
            *t = Vec::new();
        }
    }

    /// Received bitrate in each whole [`RATE_WINDOW`] of the flow's life.
    pub fn received_rates(&self) -> Vec<f64> {
        let secs = RATE_WINDOW.as_secs_f64();
        self.rate_bytes
            .iter()
            .map(|&b| b as f64 * 8.0 / secs)
            .collect()
    }
}

/// A sample of durations for exact percentiles in a few bytes a value: each value is stored as
/// its difference from the one before (consecutive packets' delays are close: usually 2 or 3
/// bytes), zigzag- and LEB128-encoded, and once [`SPILL_AT`] bytes have gathered they are moved
/// to an anonymous temporary file, so a long run's memory does not grow with its packets (an
/// hour at 100 Mbit/s: about 170 MB of delays, on disk). A sample that stayed in memory is
/// decoded once and partitioned around its ranks; a spilled one's ranks are found without
/// holding it, by narrowing a range of nanoseconds: each pass over the sample counts its
/// values in up to 2¹⁶ equal parts of the range (fewer for a small sample) and keeps the part
/// that holds the rank, until the part is one nanosecond wide (two passes for a large sample
/// whose delays span less than 4.3 s); the ranks of all three percentiles share the passes.
/// The percentiles are those of the values in milliseconds (`ns / 10⁶` as `f64`, which keeps
/// their order), bit for bit.
#[derive(Debug, Default)]
pub struct DelaySample {
    /// The encoded values not spilled yet.
    encoded: Vec<u8>,
    /// The encoded values before those, in a temporary file (empty if none could be written:
    /// then the sample stays in memory).
    spilled: SpillFile,
    len: usize,
    last: u64,
    min: u64,
    max: u64,
}

/// The values a [`DelaySample`]'s bytes encode: LEB128 codes of the zigzagged differences.
fn decode(mut bytes: impl Iterator<Item = u8>) -> impl Iterator<Item = u64> {
    let mut last = 0u64;
    std::iter::from_fn(move || {
        let (mut zigzag, mut shift) = (0u64, 0);
        loop {
            let b = bytes.next()?;
            zigzag |= ((b & 0x7f) as u64) << shift;
            if b < 0x80 {
                break;
            }
            shift += 7;
        }
        let delta = (((zigzag >> 1) as i64) ^ -((zigzag & 1) as i64)) as u64;
        last = last.wrapping_add(delta);
        Some(last)
    })
}

/// Encoded bytes a [`DelaySample`] holds in memory before it moves them to its file.
pub const SPILL_AT: usize = 1 << 22;

/// At most 2^SELECT_BITS parts a range is split into per pass.
const SELECT_BITS: u32 = 16;

impl DelaySample {
    pub fn push(&mut self, d: Duration) {
        let v = d.0;
        let delta = v.wrapping_sub(self.last) as i64;
        let mut zigzag = ((delta << 1) ^ (delta >> 63)) as u64;
        while zigzag >= 0x80 {
            self.encoded.push(zigzag as u8 | 0x80);
            zigzag >>= 7;
        }
        self.encoded.push(zigzag as u8);
        (self.min, self.max) = match self.len {
            0 => (v, v),
            _ => (self.min.min(v), self.max.max(v)),
        };
        self.last = v;
        self.len += 1;
        if self.encoded.len() >= SPILL_AT && self.spilled.append(&self.encoded) {
            self.encoded.clear();
        }
    }

    /// Room for about `n` more values.
    pub fn reserve(&mut self, n: usize) {
        self.encoded.reserve((3 * n).min(SPILL_AT));
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The encoded bytes: the file's, then the memory's.
    fn bytes(&self) -> impl Iterator<Item = u8> + '_ {
        // Values end where a push ended, so the file holds whole values.
        let n = self.spilled.len();
        let chunks = (0..n).step_by(1 << 20);
        let file = chunks.flat_map(move |at| self.spilled.read(at, (n - at).min(1 << 20) as usize));
        file.chain(self.encoded.iter().copied())
    }

    /// The values in nanoseconds, in the order they were pushed.
    pub fn values(&self) -> impl Iterator<Item = u64> + '_ {
        decode(self.bytes())
    }

    /// The values of the given ranks (0-based, each `< len`) in sorted order, in nanoseconds;
    /// every rank is narrowed in the same passes over the sample.
    pub fn select(&self, ranks: &[usize]) -> Vec<u64> {
        for &rank in ranks {
            assert!(rank < self.len, "rank {rank} of a sample of {}", self.len);
        }
        if self.spilled.is_empty() {
            self.select_in_memory(ranks)
        } else {
            self.select_by_counting(ranks)
        }
    }

    /// [`DelaySample::select`] in passes over the sample, memory independent of its length.
    fn select_by_counting(&self, ranks: &[usize]) -> Vec<u64> {
        // Per rank: its answer is in [lo, lo + width), and it is `rank`-th among the values
        // there.
        let mut search: Vec<(u64, u64, usize)> = ranks
            .iter()
            .map(|&rank| (self.min, (self.max - self.min).saturating_add(1), rank))
            .collect();
        // A range of `width` is split into parts of 2^shift, at most 2^bits of them: about as
        // many parts as values (so a small sample does not clear a large table each pass), from
        // 2^8 to 2^SELECT_BITS.
        let bits = (usize::BITS - self.len.leading_zeros()).clamp(8, SELECT_BITS);
        let shift = |width: u64| (64 - (width - 1).leading_zeros()).saturating_sub(bits);
        let parts = 1usize << bits;
        let mut counts = vec![0usize; parts * search.len()];
        while search.iter().any(|&(_, width, _)| width > 1) {
            // Ranks still in the same range share its counts (all of them in the first pass).
            let mut ranges: Vec<(u64, u64)> = search.iter().map(|&(lo, w, _)| (lo, w)).collect();
            ranges.sort_unstable();
            ranges.dedup();
            let shifts: Vec<u32> = ranges.iter().map(|&(_, w)| shift(w)).collect();
            counts[..parts * ranges.len()].fill(0);
            for v in self.values() {
                for (j, &(lo, width)) in ranges.iter().enumerate() {
                    if v.wrapping_sub(lo) < width {
                        counts[j * parts + ((v - lo) >> shifts[j]) as usize] += 1;
                    }
                }
            }
            for (lo, width, rank) in search.iter_mut() {
                if *width == 1 {
                    continue;
                }
                let j = ranges.binary_search(&(*lo, *width)).expect("its range");
                let part = 1u64 << shifts[j];
                let mut i = 0;
                while *rank >= counts[j * parts + i] {
                    *rank -= counts[j * parts + i];
                    i += 1;
                }
                *lo += i as u64 * part;
                *width = part.min(*width - i as u64 * part);
            }
        }
        search.into_iter().map(|(lo, ..)| lo).collect()
    }

    /// [`DelaySample::select`] for a sample that never reached its file (at most [`SPILL_AT`]
    /// encoded bytes, about 1.5 million values): decoded once and partitioned around each rank
    /// in turn, smallest first, each partition searching only what lies above the previous
    /// rank. The counting passes above decode the whole sample once per pass and clear a table
    /// of 2¹⁶ counts per range each time, which for a minute's sample cost more than the
    /// partitions; both give the exact order statistics, so the answers are the same.
    fn select_in_memory(&self, ranks: &[usize]) -> Vec<u64> {
        let mut values = Vec::with_capacity(self.len);
        values.extend(decode(self.encoded.iter().copied()));
        let mut order: Vec<usize> = (0..ranks.len()).collect();
        order.sort_unstable_by_key(|&k| ranks[k]);
        let mut found = vec![0; ranks.len()];
        let mut from = 0;
        for k in order {
            let rank = ranks[k];
            if rank >= from {
                values[from..].select_nth_unstable(rank - from);
                from = rank;
            }
            found[k] = values[rank];
        }
        found
    }

    /// P50/P95/P99 in milliseconds.
    pub fn percentiles(&self) -> Percentiles {
        let ms = |v: u64| Duration(v).as_millis_f64();
        match self.percentiles_by(&[50.0, 95.0, 99.0], ms)[..] {
            [p50, p95, p99] => Percentiles { p50, p95, p99 },
            _ => unreachable!("three percentiles asked for"),
        }
    }

    /// Each percentile of `ps` ([`super::percentile`]'s linear rule) of the values as `value`
    /// maps them (an order-preserving map: milliseconds, a rate), `None` for an empty sample;
    /// the ranks they interpolate between are found in the same passes.
    pub fn percentiles_by(&self, ps: &[f64], value: impl Fn(u64) -> f64) -> Vec<Option<f64>> {
        let mut ranks: Vec<usize> = ps
            .iter()
            .filter_map(|&p| percentile_ranks(self.len, p))
            .flat_map(|(lo, hi, _)| [lo, hi])
            .collect();
        ranks.sort_unstable();
        ranks.dedup();
        let values = self.select(&ranks);
        let at = |i: usize| {
            let k = ranks.binary_search(&i).expect("a rank found above");
            value(values[k])
        };
        ps.iter().map(|&p| percentile_at(self.len, p, at)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The delta-encoded sample gives back what was pushed, and its percentiles are those
        /// of the sorted values in milliseconds, bit for bit: clustered delays (many equal
        /// values), spreads wider than one selection pass, and delays beyond 4.3 s.
        #[test]
        fn delay_percentiles_match_sorting_the_values(
            values in proptest::collection::vec(
                prop_oneof![0u64..50, 20_000_000u64..20_001_000, 0u64..10_000_000_000, Just(u64::MAX / 4)],
                0..500,
            )
        ) {
            let mut sample = DelaySample::default();
            values.iter().for_each(|&v| sample.push(Duration(v)));
            prop_assert_eq!(sample.values().collect::<Vec<_>>(), values.clone());
            let mut ms: Vec<f64> = values.iter().map(|&v| Duration(v).as_millis_f64()).collect();
            prop_assert_eq!(sample.percentiles(), Percentiles::of(&mut ms));
            // Both ways of selecting (in memory, and by counting as a spilled sample is) give
            // the sorted values' ranks, asked in any order and repeated.
            let mut sorted = values.clone();
            sorted.sort_unstable();
            let n = values.len();
            if n > 0 {
                let ranks = [n - 1, 0, n / 2, n / 2, (n * 95) / 100, 1.min(n - 1)];
                let want: Vec<u64> = ranks.iter().map(|&r| sorted[r]).collect();
                prop_assert_eq!(sample.select_in_memory(&ranks), want.clone());
                prop_assert_eq!(sample.select_by_counting(&ranks), want);
            }
        }
    }

    fn received(at_ms: u64, size: u32) -> PacketRecord {
        let t = Time::from_millis(at_ms);
        PacketRecord {
            flow: 0,
            seq: 0,
            kind: PacketKind::Media,
            size,
            frame: None,
            send: t,
            enqueue: t,
            depart: Some(t),
            recv: Some(t),
            dropped: false,
            ecn: Default::default(),
        }
    }

    #[test]
    fn a_large_sample_moves_to_its_file_and_reads_back_the_same() {
        // Three million delays of a queue that fills and drains (20-80 ms, steps of a few µs):
        // about 7 MB encoded, so at least one spill.
        let values: Vec<u64> = (0..3_000_000u64)
            .map(|i| 20_000_000 + (i * 7_919) % 60_000_000 + (i % 13) * 1_000)
            .collect();
        let mut sample = DelaySample::default();
        values.iter().for_each(|&v| sample.push(Duration(v)));
        assert!(
            !sample.spilled.is_empty() && sample.encoded.len() < SPILL_AT,
            "the sample should live mostly in its temporary file"
        );
        assert!(sample.values().eq(values.iter().copied()));
        let mut ms: Vec<f64> = values
            .iter()
            .map(|&v| Duration(v).as_millis_f64())
            .collect();
        assert_eq!(sample.percentiles(), Percentiles::of(&mut ms));
    }

    #[test]
    fn arrival_bins_count_every_window_from_zero_with_a_last_partial_one() {
        assert_eq!(arrival_windows(Time::ZERO), 1);
        assert_eq!(arrival_windows(Time::from_millis(3000)), 3);
        assert_eq!(arrival_windows(Time::from_millis(3001)), 4);
        // A flow living in [1 s, 2.5 s) of a 2.5 s run: its packets are binned by arrival from
        // time zero (not from its start), the last window [2 s, 3 s) partial; a lost packet
        // counts nowhere.
        let end = Time::from_millis(2500);
        let mut stats = PacketStats::new(Time::from_millis(1000), end, (Time::ZERO, end), end);
        let mut lost = received(1200, 700);
        lost.recv = None;
        lost.dropped = true;
        for p in [
            received(999, 100),
            received(1000, 200),
            received(1999, 300),
            received(2400, 400),
            lost,
        ] {
            stats.add(&p);
        }
        assert_eq!(stats.arrival_bytes, vec![100, 500, 400]);
    }
}
