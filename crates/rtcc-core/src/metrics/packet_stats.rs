//! What a run's summary needs from a flow's packets, gathered one packet at a time.
//!
//! A run of 50 million packets would hold about 4 GB of [`PacketRecord`]s if the summary were
//! computed from the whole log at the end. Instead the simulator hands every record here once its
//! fate is known (received, dropped, or still in flight when the run ends), in the order the
//! packets were sent, and may then write the record out or forget it. What stays is what the
//! metrics cannot do without: counters, rate bins, and, for the exact percentiles and SQP's
//! simulated video (Eq. 10), two delays and one (ingress, size, arrival) triple per packet:
//! 48 bytes instead of 88.
//!
//! Fed the records in log order, every metric comes out bit for bit as it would from the whole
//! log: the SQP triples keep that order, the delays are only ever used sorted, and every sum is
//! over integers.

use super::sqp_frame_delay::SentPacket;
use super::{PacketRecord, JAIN_WINDOW, RATE_WINDOW};
use crate::packet::PacketKind;
use crate::units::{Duration, Time};

/// A flow's packet statistics (see the module header).
#[derive(Debug, Clone, PartialEq)]
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
    /// left the bottleneck, in milliseconds: in log order, or sorted after
    /// [`PacketStats::sort_delays`] (the percentiles then need no copy).
    pub one_way_delay_ms: Vec<f64>,
    pub queuing_delay_ms: Vec<f64>,
    /// Bytes received in each whole [`RATE_WINDOW`] of the flow's life.
    rate_bytes: Vec<u64>,
    /// Bytes received in each [`JAIN_WINDOW`] from time zero to the end of the run.
    pub fairness_bytes: Vec<u64>,
    /// Bytes received (by arrival time) in each [`RATE_WINDOW`] from time zero, over
    /// [`arrival_windows`] windows (the last one partial when the run is not a whole number of
    /// windows): the per-window rates of a run's facts (`rtcc_scenario::facts`).
    pub arrival_bytes: Vec<u64>,
    /// Every packet as SQP's Eq. 10 sees it, in log order.
    pub sqp_packets: Vec<SentPacket>,
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
            one_way_delay_ms: Vec::new(),
            queuing_delay_ms: Vec::new(),
            rate_bytes: vec![0; windows(start, stop, RATE_WINDOW.0.max(1))],
            fairness_bytes: vec![0; windows(Time::ZERO, end, JAIN_WINDOW.0.max(1))],
            arrival_bytes: vec![0; arrival_windows(end)],
            sqp_packets: Vec::new(),
            transits: None,
        }
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
        self.one_way_delay_ms.reserve(n);
        self.queuing_delay_ms.reserve(n);
        self.sqp_packets.reserve(n);
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
            self.queuing_delay_ms.push(queued.as_millis_f64());
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
                self.one_way_delay_ms.push((r - p.send).as_millis_f64());
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
        self.sqp_packets.push(SentPacket {
            ingress: p.enqueue,
            size: p.size,
            recv: p.recv,
        });
    }

    /// Sort the delay vectors (`total_cmp` order) once every packet has been added, so the
    /// summary's percentiles read them in place instead of sorting a copy.
    pub fn sort_delays(&mut self) {
        self.one_way_delay_ms.sort_by(|a, b| a.total_cmp(b));
        self.queuing_delay_ms.sort_by(|a, b| a.total_cmp(b));
    }

    /// Free the per-packet vectors (the delays and SQP's triples) once the flow is summarised;
    /// the counters and bins stay.
    pub fn release_per_packet(&mut self) {
        self.one_way_delay_ms = Vec::new();
        self.queuing_delay_ms = Vec::new();
        self.sqp_packets = Vec::new();
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

#[cfg(test)]
mod tests {
    use super::*;

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
        }
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
