//! Run a scenario and compute its summary.

use crate::scenario::{FlowKind, Scenario};
use crate::sim::{capacity_fn, FlowLogs, PacketSink, SimOutput, Simulation, StateLog};
use rtcc_core::cc::{self, Registry};
use rtcc_core::metrics::{self, sqp_frame_delay, FlowLog, FlowSummary, PacketStats, TotalSummary};
use rtcc_core::net::Capacity;
use rtcc_core::{Duration, Time};
use serde::Serialize;

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
    /// Forward capacity in 100 ms bins: (bin start, bit/s). Empty for an unlimited link.
    pub capacity: Vec<(Time, f64)>,
    /// Events processed.
    pub events: u64,
}

impl RunResult {
    /// Packets that reached their receiver.
    pub fn delivered_packets(&self) -> usize {
        self.flows.iter().map(|f| f.stats.received_packets).sum()
    }
}

/// Run a validated scenario with `seed` (overriding the scenario's when given).
pub fn run(
    scenario: &Scenario,
    seed: Option<u64>,
    progress: &mut dyn FnMut(f64),
) -> Result<RunResult, String> {
    run_with_registry(scenario, seed, progress, cc::registry())
}

/// [`run`] with the controllers of `registry` (a scenario validated against the same registry).
pub fn run_with_registry(
    scenario: &Scenario,
    seed: Option<u64>,
    progress: &mut dyn FnMut(f64),
    registry: &Registry,
) -> Result<RunResult, String> {
    run_inner(scenario, seed, progress, registry, None)
}

/// [`run`] that hands the packet records to `sink` in chunks as the run goes instead of
/// keeping them (see [`run_streaming_with_registry`]).
pub fn run_streaming(
    scenario: &Scenario,
    seed: Option<u64>,
    progress: &mut dyn FnMut(f64),
    sink: PacketSink,
) -> Result<RunResult, String> {
    run_inner(scenario, seed, progress, cc::registry(), Some(sink))
}

/// [`run_with_registry`] that hands the packet records to `sink` in chunks as the run goes
/// instead of keeping them ([`Simulation::run_streaming`]): a large run then holds about
/// 48 bytes per packet for its summary instead of the 88 of a record (plus, while the summary
/// is computed, a flow's 12 bytes a packet for SQP's Eq. 10). The summary is the same.
pub fn run_streaming_with_registry(
    scenario: &Scenario,
    seed: Option<u64>,
    progress: &mut dyn FnMut(f64),
    registry: &Registry,
    sink: PacketSink,
) -> Result<RunResult, String> {
    run_inner(scenario, seed, progress, registry, Some(sink))
}

fn run_inner(
    scenario: &Scenario,
    seed: Option<u64>,
    progress: &mut dyn FnMut(f64),
    registry: &Registry,
    sink: Option<PacketSink>,
) -> Result<RunResult, String> {
    let mut sc = scenario.clone();
    if let Some(s) = seed {
        sc.seed = s;
    }
    let sim = Simulation::with_registry(&sc, registry)?;
    let streamed = sink.is_some();
    let SimOutput {
        mut flows,
        state,
        events,
    } = match sink {
        Some(sink) => sim.run_streaming(progress, sink),
        None => sim.run(progress),
    };
    let summary = summarize(&sc, &mut flows, streamed);
    let end = Time(sc.duration.0);
    let capacity = capacity_series(&sc.forward.capacity, end, Duration::from_millis(100));
    Ok(RunResult {
        summary,
        flows,
        state,
        capacity,
        events,
    })
}

/// The summary of a run's flows (`sc` is the scenario they ran, with its seed). `streamed`: each
/// flow's [`PacketStats`] were gathered as the run went; otherwise they are computed here from
/// its packet records. Each flow's per-packet statistics are released once it is summarised.
/// The live runtime summarises real runs with this too, so a live run and a simulated one are
/// measured by the same code.
pub fn summarize(sc: &Scenario, flows: &mut [FlowLogs], streamed: bool) -> Summary {
    let cap = capacity_fn(&sc.forward.capacity);
    let reverse_cap = capacity_fn(&sc.reverse.capacity);
    let end = Time(sc.duration.0);
    // Feedback travels the link opposite to the flow's data.
    let back = |reverse: bool| if reverse { &cap } else { &reverse_cap };
    // SQP's simulated video (Eq. 10) for every flow: a video flow's slots follow its own frame
    // rate, any other flow's the first video flow's (60 fps, SQP's, when there is none), so
    // video and non-video senders are turned into frames the same way.
    let reference_fps = sc
        .flows
        .iter()
        .find(|f| matches!(f.kind, FlowKind::Video))
        .map_or(SQP_METRIC_FPS, |f| f.fps);
    // One flow at a time, so a kept run holds one flow's per-packet statistics beside its
    // records, and none once that flow is summarised.
    let mut flow_summaries: Vec<FlowSummary> = Vec::with_capacity(flows.len());
    for f in flows.iter_mut() {
        if !streamed {
            let (start, stop) = (f.config.start, f.config.stop);
            f.stats = PacketStats::new(start, stop, sc.flow_span(), end)
                .keeping_transits(f.config.kind.audio_packet().is_some());
            f.stats.add_all(&f.packets);
            f.stats.sort_delays();
        }
        let data = back(!f.config.reverse);
        let log = flow_log(f, back(f.config.reverse));
        let mut summary = metrics::summarize_flow(&log, end, data);
        let fps = if matches!(f.config.kind, FlowKind::Video) {
            f.config.fps
        } else {
            reference_fps
        };
        let logged = &f.stats.sqp_packets;
        let sorted;
        let sent = if logged.windows(2).any(|w| w[1].ingress < w[0].ingress) {
            let mut s = logged.clone();
            s.sort_by_key(|p| p.ingress);
            sorted = s;
            &sorted
        } else {
            logged
        };
        summary.sqp_frame_delay = sqp_frame_delay::summarize(
            sent,
            f.config.start,
            f.config.stop,
            Duration::from_secs_f64(1.0 / fps),
            end,
        );
        if let Some(cfg) = &f.config.dash {
            summary.dash = Some(rtcc_core::dash::qoe::summarize(
                &f.segments,
                cfg,
                f.config.start,
                f.config.stop,
            ));
        }
        summary.ce_marked = f.config.ecn.then_some(f.ce_marked);
        summary.audio = f.stats.transits.as_deref().map(metrics::audio::summarize);
        summary.short_tcp = matches!(f.config.kind, FlowKind::ShortTcp { .. })
            .then(|| metrics::downloads::summarize(&f.downloads));
        f.stats.release_per_packet();
        flow_summaries.push(summary);
    }
    let logs: Vec<FlowLog> = flows
        .iter()
        .map(|f| flow_log(f, back(f.config.reverse)))
        .collect();
    Summary {
        scenario: sc.name.clone(),
        seed: sc.seed,
        duration_s: sc.duration.as_secs_f64(),
        flows: flow_summaries,
        total: metrics::summarize_total(&logs, end, &cap),
    }
}

/// The summary's view of a flow's logs; `back` is what the link its feedback travels could carry.
fn flow_log<'a>(f: &'a FlowLogs, back: &dyn Fn(Time, Time) -> f64) -> FlowLog<'a> {
    let video = f.config.kind == FlowKind::Video;
    FlowLog {
        name: &f.config.name,
        controller: &f.config.controller,
        kind: f.config.kind.name(),
        min_bitrate: video.then(|| f.config.media.min_bitrate.bps()),
        start: f.config.start,
        stop: f.config.stop,
        packets: &f.stats,
        frames: &f.frames,
        feedback_bytes: f.feedback_bytes,
        feedback_capacity_bytes: back(f.config.start, f.config.stop),
    }
}

/// A link's capacity in bins of `bin` until `end`: (bin start, bit/s); empty when unlimited.
pub fn capacity_series(c: &Capacity, end: Time, bin: Duration) -> Vec<(Time, f64)> {
    if let Capacity::Unlimited = c {
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
