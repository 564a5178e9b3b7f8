//! What a run of a scenario produced and its summary: each flow's logs ([`FlowLogs`]), the
//! controllers' state samples, each link's counters, and the metrics computed from them
//! ([`summarize`]). The simulator fills these in as it runs; the live transport rebuilds them from
//! its processes' logs; both are summarised here by the same code, so a live run and a simulated
//! one are measured the same way.

use crate::capacity::PathCapacity;
use crate::flow::{FlowConfig, FlowKind};
use crate::path::LinkConfig;
use crate::scenario::Scenario;
use rtcc_core::dash::qoe::SegmentRecord;
use rtcc_core::endpoint::Download;
use rtcc_core::metrics::{
    self, sqp_frame_delay, sqp_frame_delay::SentPacket, FlowLog, FlowSummary, FrameRecord,
    FrameStats, Frames, PacketRecord, PacketStats, TotalSummary,
};
use rtcc_core::{Duration, Time};
use serde::Serialize;

/// Controller state samples in long format.
#[derive(Debug, Default, Clone)]
pub struct StateLog {
    pub flow: Vec<u32>,
    pub time: Vec<Time>,
    pub signal: Vec<&'static str>,
    pub value: Vec<f64>,
}

/// Everything one flow logged.
pub struct FlowLogs {
    pub config: FlowConfig,
    /// Datagrams from A to B, in the order they were sent: all of them from
    /// [`Simulation::run`], none from [`Simulation::run_streaming`] (they went to its sink).
    pub packets: Vec<PacketRecord>,
    /// What the summary needs from those packets: gathered by a streaming run as each one's fate
    /// became known; empty after [`Simulation::run`], whose caller computes it from `packets`
    /// (`crate::run` does, one flow at a time, and releases the per-packet part once the
    /// flow is summarised).
    pub stats: PacketStats,
    /// The frames, in frame order: all of them from [`Simulation::run`], none from a run that
    /// streamed its frame log (they went to its sink; `frame_stats` holds what the summary
    /// needs from them).
    pub frames: Vec<FrameRecord>,
    pub frame_stats: Option<FrameStats>,
    /// The segments a DASH client appended, in order (times on the simulator's clock).
    pub segments: Vec<SegmentRecord>,
    /// The downloads a short TCP flow completed, in order.
    pub downloads: Vec<Download>,
    /// Datagrams from B to A (feedback, acknowledgements, NACKs, keyframe requests, segment
    /// requests) and their bytes on the wire.
    pub feedback_packets: u64,
    pub feedback_bytes: u64,
    /// Datagrams the endpoints could not parse (0 unless something is broken).
    pub malformed: u64,
    /// Datagrams from A to B that arrived CE-marked.
    pub ce_marked: u64,
}

/// What happened at one link (one direction of one hop) over a run, packets and bytes.
#[derive(Debug, Default, Clone, PartialEq, serde::Serialize)]
pub struct LinkCounters {
    /// Offered to the link's queue.
    pub arrived_packets: u64,
    pub arrived_bytes: u64,
    /// Served by the link (before its impairments).
    pub departed_packets: u64,
    pub departed_bytes: u64,
    /// Dropped by the link's queue (on arrival, by an AQM, or to make room in a fair queue).
    pub dropped_packets: u64,
    pub dropped_bytes: u64,
    /// Served, then lost to the hop's impairments.
    pub lost_packets: u64,
    pub lost_bytes: u64,
    /// CE-marked by this link's queue.
    pub ce_marked: u64,
    /// In the queue or being served when the run ended (arrived = departed + dropped + this).
    pub queued_at_end_packets: u64,
    /// Released by the impairments but still propagating to the next hop or endpoint when the
    /// run ended.
    pub propagating_at_end_packets: u64,
    /// Bytes served while the flows that cross the hop were active (its utilisation's numerator).
    #[serde(skip)]
    pub departed_bytes_in_span: u64,
}

/// A path's capacity for metrics (unlimited links have no finite capacity).
pub fn capacity_fn(c: &PathCapacity) -> impl Fn(Time, Time) -> f64 + '_ {
    move |a, b| c.bytes_between(a, b)
}

/// Frame rate of the simulated video of SQP's Eq. 10 when a run has no video flow (SQP §6.2:
/// 60 fps, `I` = 16.66 ms).
pub const SQP_METRIC_FPS: f64 = 60.0;

/// The metrics of a run, as written to `summary.json`.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    pub scenario: String,
    pub seed: u64,
    pub duration_s: f64,
    pub flows: Vec<FlowSummary>,
    pub total: TotalSummary,
    /// Per hop and direction, for a path of several hops (absent for one link pair).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hops: Option<Vec<HopSummary>>,
}

/// One hop of a multi-hop path in the summary: what each of its links did.
#[derive(Debug, Clone, Serialize)]
pub struct HopSummary {
    pub name: String,
    pub forward: LinkSummary,
    pub reverse: LinkSummary,
}

/// What one link did over the run, and how busy it was while the flows crossing it were active.
#[derive(Debug, Clone, Serialize)]
pub struct LinkSummary {
    #[serde(flatten)]
    pub counters: LinkCounters,
    /// Mean capacity while the flows crossing the hop were active (`None`: unlimited, or no flow
    /// crosses the hop).
    pub capacity_bps: Option<f64>,
    /// Bytes the link served while those flows were active over what it could carry meanwhile.
    pub utilization: Option<f64>,
}

impl Summary {
    /// Deterministic JSON text (fields in declaration order, 2-space indent, trailing newline).
    pub fn to_json(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).expect("summary serialises");
        s.push('\n');
        s
    }
}

/// Everything a run produced.
pub struct RunResult {
    pub summary: Summary,
    /// Each flow's logs; `packets` is empty after [`run_streaming_with_registry`].
    pub flows: Vec<FlowLogs>,
    pub state: StateLog,
    /// Forward capacity in [`CAPACITY_BIN`]s: (bin start, bit/s); of a multi-hop path, its tightest
    /// hop at each instant. Empty for an unlimited path.
    pub capacity: Vec<(Time, f64)>,
    /// Each hop's forward capacity in the same bins, by hop name (multi-hop paths only).
    pub hop_capacity: Vec<(String, Vec<(Time, f64)>)>,
    /// Events processed.
    pub events: u64,
}

impl RunResult {
    /// Packets that reached their receiver.
    pub fn delivered_packets(&self) -> usize {
        self.flows.iter().map(|f| f.stats.received_packets).sum()
    }
}

/// The summary of each hop's two links from the run's counters (`links[2 · hop + dir]`).
/// Utilisation counts while the flows that cross the hop are active.
pub fn hop_summaries(sc: &Scenario, links: Vec<LinkCounters>) -> Vec<HopSummary> {
    let mut links = links.into_iter();
    sc.hops
        .iter()
        .enumerate()
        .map(|(h, hop)| {
            let span = sc.hop_span(h);
            let mut summary = |link: &LinkConfig| {
                let counters = links.next().expect("two links per hop");
                let (capacity_bps, utilization) = match span {
                    Some((start, stop)) if stop > start => {
                        let cap = link.capacity.bytes_between(start, stop);
                        let secs = (stop - start).as_secs_f64();
                        (
                            cap.is_finite().then(|| cap * 8.0 / secs),
                            (cap.is_finite() && cap > 0.0)
                                .then(|| counters.departed_bytes_in_span as f64 / cap),
                        )
                    }
                    _ => (None, None),
                };
                LinkSummary {
                    counters,
                    capacity_bps,
                    utilization,
                }
            };
            let forward = summary(&hop.forward);
            let reverse = summary(&hop.reverse);
            HopSummary {
                name: hop.name.clone(),
                forward,
                reverse,
            }
        })
        .collect()
}

/// The summary of a run's flows (`sc` is the scenario they ran, with its seed). `streamed`: each
/// flow's [`PacketStats`] were gathered as the run went; otherwise they are computed here from
/// its packet records. Each flow's per-packet statistics are released once it is summarised.
/// The live runtime summarises real runs with this too, so a live run and a simulated one are
/// measured by the same code.
pub fn summarize(sc: &Scenario, flows: &mut [FlowLogs], streamed: bool) -> Summary {
    // A flow's link metrics see its path: the tightest of its hops at each instant, over the
    // links its data crosses (utilisation) and those its feedback crosses (feedback share).
    // The totals see the tightest of all hops' forward links. With one link pair these are
    // that pair's links.
    let total_capacity = sc.forward_capacity();
    let cap = capacity_fn(&total_capacity);
    let end = Time(sc.duration.0);
    // One flow at a time, so a kept run holds one flow's per-packet statistics beside its
    // records, and none once that flow is summarised.
    let mut flow_summaries: Vec<FlowSummary> = Vec::with_capacity(flows.len());
    for f in flows.iter_mut() {
        if !streamed {
            f.stats = sc.packet_stats(&f.config);
            f.stats.add_all(&f.packets);
        }
        let data_capacity = sc.data_capacity(&f.config);
        let feedback_capacity = sc.feedback_capacity(&f.config);
        let log = flow_log(f, &capacity_fn(&feedback_capacity));
        let mut summary = metrics::summarize_flow(&log, end, &capacity_fn(&data_capacity));
        // SQP's simulated video (Eq. 10), computed as the packets were counted. A log whose
        // packets are not in ingress order (a live run's, where the emulator's enqueue times
        // can cross the send order) is sorted and walked again; the simulator always logs in
        // ingress order, so a streamed run never needs that.
        let eq10 = f.stats.sqp.as_mut().expect("packet_stats computes Eq. 10");
        summary.sqp_frame_delay = if !eq10.out_of_order() {
            eq10.summary()
        } else {
            assert!(
                !streamed,
                "a streamed run's packets reach its statistics in ingress order"
            );
            let sent: Vec<SentPacket> = f.packets.iter().map(SentPacket::of).collect();
            let interval = sc.sqp_frame_interval(&f.config);
            sqp_frame_delay::summarize(&sent, f.config.start, f.config.stop, interval, end)
        };
        if let FlowKind::Dash(dash) = &f.config.kind {
            let cfg = &dash.session;
            summary.dash = Some(rtcc_core::dash::qoe::summarize(
                &f.segments,
                cfg,
                f.config.start,
                f.config.stop,
            ));
        }
        summary.ce_marked = f.config.ecn().is_on().then_some(f.ce_marked);
        summary.audio = f.stats.transits.as_deref().map(metrics::audio::summarize);
        summary.short_tcp = matches!(f.config.kind, FlowKind::ShortTcp(_))
            .then(|| metrics::downloads::summarize(&f.downloads));
        f.stats.release_per_packet();
        flow_summaries.push(summary);
    }
    let feedback_capacities: Vec<PathCapacity> = flows
        .iter()
        .map(|f| sc.feedback_capacity(&f.config))
        .collect();
    let logs: Vec<FlowLog> = flows
        .iter()
        .zip(&feedback_capacities)
        .map(|(f, back)| flow_log(f, &capacity_fn(back)))
        .collect();
    let mut total = metrics::summarize_total(&logs, end, &cap);
    if sc.is_multi_hop() {
        // Flows that cross different hops share no one link whose capacity their departures
        // could be measured against: each hop's utilisation is in the hop section.
        total.utilization = None;
    }
    Summary {
        scenario: sc.name.clone(),
        seed: sc.seed,
        duration_s: sc.duration.as_secs_f64(),
        flows: flow_summaries,
        total,
        hops: None,
    }
}

/// The summary's view of a flow's logs; `back` is what the link its feedback travels could carry.
fn flow_log<'a>(f: &'a FlowLogs, back: &dyn Fn(Time, Time) -> f64) -> FlowLog<'a> {
    FlowLog {
        name: &f.config.name,
        controller: f.config.controller_name(),
        kind: f.config.kind.name(),
        min_bitrate: f.config.video().map(|v| v.media.min_bitrate.bps()),
        start: f.config.start,
        stop: f.config.stop,
        packets: &f.stats,
        frames: match &f.frame_stats {
            Some(stats) => Frames::Gathered(stats),
            None => Frames::Records(&f.frames),
        },
        feedback_bytes: f.feedback_bytes,
        feedback_capacity_bytes: back(f.config.start, f.config.stop),
    }
}

/// The bins of a run's capacity log (`RunResult::capacity`, `capacity.parquet`).
pub const CAPACITY_BIN: Duration = Duration(100_000_000);

/// A path's capacity in bins of `bin` until `end`: (bin start, bit/s); empty when unlimited.
pub fn capacity_series(c: &PathCapacity, end: Time, bin: Duration) -> Vec<(Time, f64)> {
    if c.is_unlimited() {
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut t = Time::ZERO;
    while t < end {
        let b = c.bytes_between(t, t + bin);
        out.push((t, b * 8.0 / bin.as_secs_f64()));
        t += bin;
    }
    out
}
