//! Run a scenario and compute its summary.

use crate::capture::Capture;
use crate::path::PathCapacity;
use crate::scenario::Scenario;
use crate::sim::{PacketSink, SimOutput, Simulation, Sinks};
use rtcc_core::cc::{self, Registry};
use rtcc_core::Time;
pub use rtcc_scenario::outcome::{
    capacity_series, hop_summaries, summarize, HopSummary, LinkSummary, RunResult, Summary,
    CAPACITY_BIN, SQP_METRIC_FPS,
};

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
    run_inner(scenario, seed, progress, registry, Sinks::default(), None)
}

/// [`run`] that hands the packet records to `sink` in chunks as the run goes instead of
/// keeping them (see [`run_streaming_with_registry`]).
pub fn run_streaming(
    scenario: &Scenario,
    seed: Option<u64>,
    progress: &mut dyn FnMut(f64),
    sink: PacketSink,
) -> Result<RunResult, String> {
    let sinks = Sinks {
        packets: Some(sink),
        ..Sinks::default()
    };
    run_inner(scenario, seed, progress, cc::registry(), sinks, None)
}

/// [`run_with_registry`] that hands the packet records to `sink` in chunks as the run goes
/// instead of keeping them ([`Simulation::run_streaming`]): a large run then holds about
/// 8 bytes per packet for its summary (two exact delays) instead of the 88 of a record. The
/// summary is the same.
pub fn run_streaming_with_registry(
    scenario: &Scenario,
    seed: Option<u64>,
    progress: &mut dyn FnMut(f64),
    registry: &Registry,
    sink: PacketSink,
) -> Result<RunResult, String> {
    let sinks = Sinks {
        packets: Some(sink),
        ..Sinks::default()
    };
    run_inner(scenario, seed, progress, registry, sinks, None)
}

/// Any of the above: each log that has a sink handed to it as the run goes, the others kept
/// ([`Sinks`]; a run with every sink holds bounded memory however long it is), and every
/// datagram the endpoints send to `capture` if given (`rtcc run --pcap`,
/// [`crate::capture::PcapFile`]). The summary is the same either way.
pub fn run_with_sinks(
    scenario: &Scenario,
    seed: Option<u64>,
    progress: &mut dyn FnMut(f64),
    registry: &Registry,
    sinks: Sinks,
    capture: Option<Box<dyn Capture>>,
) -> Result<RunResult, String> {
    run_inner(scenario, seed, progress, registry, sinks, capture)
}

/// The error of a run ended by [`crate::sim::interrupt`].
pub const INTERRUPTED: &str = "interrupted before the end of the run";

fn run_inner(
    scenario: &Scenario,
    seed: Option<u64>,
    progress: &mut dyn FnMut(f64),
    registry: &Registry,
    sinks: Sinks,
    capture: Option<Box<dyn Capture>>,
) -> Result<RunResult, String> {
    let mut sc = scenario.clone();
    if let Some(s) = seed {
        sc.seed = s;
    }
    let mut sim = Simulation::with_registry(&sc, registry)?;
    if let Some(c) = capture {
        sim.capture_to(c);
    }
    let streamed = sinks.packets.is_some();
    let SimOutput {
        mut flows,
        state,
        events,
        links,
        interrupted,
        capture_error,
    } = sim.run_with_sinks(progress, sinks);
    if interrupted {
        return Err(INTERRUPTED.to_string());
    }
    if let Some(e) = capture_error {
        return Err(e);
    }
    let mut summary = summarize(&sc, &mut flows, streamed);
    if sc.is_multi_hop() {
        summary.hops = Some(hop_summaries(&sc, links));
    }
    let end = Time(sc.duration.0);
    let bin = CAPACITY_BIN;
    let capacity = capacity_series(&sc.forward_capacity(), end, bin);
    let hop_capacity = match sc.is_multi_hop() {
        false => Vec::new(),
        true => sc
            .hops
            .iter()
            .map(|h| {
                let link = PathCapacity::new(vec![h.forward.capacity.clone()]);
                (h.name.clone(), capacity_series(&link, end, bin))
            })
            .collect(),
    };
    Ok(RunResult {
        summary,
        flows,
        state,
        capacity,
        hop_capacity,
        events,
    })
}
