//! A scenario stepped by a learning agent: the core of `rtcc.gym`.
//!
//! The flows whose controller is `agent` ([`rtcc_core::cc::agent`]) are the agents, in flow
//! order. Each step:
//!
//! 1. the caller sets every agent's action (a target bitrate);
//! 2. the simulation runs every event before the next step boundary (the agents' timers at the
//!    boundary apply the actions first);
//! 3. each agent's observation is built from its feedback, as the agent controller would build
//!    it for a policy, and its step statistics ([`STATS`]) are measured from the simulator's own
//!    records — the true delays, losses, frames and capacity, which the agent does not see.
//!
//! Rewards are computed from the statistics by the caller (Python, vectorised over
//! environments). A run built here is deterministic: the same scenario and seed give the same
//! observations and statistics for the same actions.

use crate::scenario::Scenario;
use crate::sim::Simulation;
use rtcc_core::cc::agent::{self, AgentHandle};
use rtcc_core::cc::{CapacityView, Registry};
use rtcc_core::learn::SeqGaps;
use rtcc_core::metrics::{percentile, FrameRecord, PacketRecord};
use rtcc_core::{Duration, Rate, Time};
use std::sync::{Arc, Mutex};

/// The step statistics, per agent, in this order.
pub const STATS: [&str; 16] = [
    "time_s",
    "target_bps",
    "sent_bps",
    "recv_bps",
    "capacity_bps",
    "recv_packets",
    "lost_packets",
    "loss_ratio",
    "delay_mean_ms",
    "delay_p95_ms",
    "delay_min_ms",
    "frames_displayed",
    "frame_latency_ms",
    "frozen_fraction",
    "psnr_db",
    "displayed_bps",
];

/// The picture is frozen once the last display is older than this: WebRTC's freeze rule
/// (`metrics::freezes`), `max(3 ḡ, ḡ + 150 ms)`, with `ḡ` the source's frame interval (the rule
/// takes the flow's mean gap, which a step cannot know yet).
pub fn freeze_after(fps: f64) -> Duration {
    let gap = 1.0 / fps.max(1e-3);
    Duration::from_secs_f64((3.0 * gap).max(gap + 0.150))
}

/// Where an agent's statistics have got to.
struct Cursor {
    flow: usize,
    capacity: Arc<dyn CapacityView>,
    /// Packet records before this index are received or dropped and counted.
    first_open: usize,
    /// The receiver's view of losses: gaps in the sequence numbers it got.
    gaps: SeqGaps,
    min_delay_ms: Option<f64>,
    /// Frames before this index are displayed or given up.
    first_open_frame: usize,
    last_display: Option<Time>,
    freeze_after: Duration,
    delays: Vec<f64>,
}

pub struct AgentEnv {
    scenario: Scenario,
    registry: Registry,
    sim: Option<Simulation>,
    agents: Vec<AgentHandle>,
    cursors: Vec<Cursor>,
    step: Duration,
    obs_len: usize,
    now: Time,
    /// The previous step's end: the statistics cover `(prev, now]`.
    prev: Time,
    done: bool,
}

impl AgentEnv {
    /// An environment over `scenario` (validated against `registry` with `agent` added) whose
    /// agents step every `step` (their own `step` parameter must match it).
    pub fn new(scenario: &Scenario, registry: &Registry) -> Result<AgentEnv, String> {
        let agent_flows: Vec<usize> = agent_flow_indices(scenario);
        if agent_flows.is_empty() {
            return Err("the scenario has no flow with controller = \"agent\"".into());
        }
        let mut env = AgentEnv {
            scenario: scenario.clone(),
            registry: registry.clone(),
            sim: None,
            agents: Vec::new(),
            cursors: Vec::new(),
            step: Duration::ZERO,
            obs_len: 0,
            now: Time::ZERO,
            prev: Time::ZERO,
            done: true,
        };
        env.reset(None)?;
        Ok(env)
    }

    /// Agents in this environment.
    pub fn agents(&self) -> usize {
        self.agents.len()
    }

    /// Values in each agent's observation.
    pub fn observation_len(&self) -> usize {
        self.obs_len
    }

    pub fn step_duration(&self) -> Duration {
        self.step
    }

    pub fn now(&self) -> Time {
        self.now
    }

    pub fn is_done(&self) -> bool {
        self.done
    }

    /// Each agent's lowest and highest target.
    pub fn bounds(&self) -> Vec<(Rate, Rate)> {
        self.agents.iter().map(|a| lock(a).bounds()).collect()
    }

    /// Start again from the scenario's beginning (with `seed` instead of the scenario's), and
    /// run to the first step boundary.
    pub fn reset(&mut self, seed: Option<u64>) -> Result<(), String> {
        let mut sc = self.scenario.clone();
        if let Some(s) = seed {
            sc.seed = s;
        }
        let built: Arc<Mutex<Vec<AgentHandle>>> = Arc::default();
        let mut registry = self.registry.clone();
        let sink = built.clone();
        registry
            .register(agent::info_with(Arc::new(move |h| {
                sink.lock().unwrap().push(h)
            })))
            .map_err(|e| e.to_string())?;
        let sim = Simulation::with_registry(&sc, &registry)?;
        let agents = std::mem::take(&mut *built.lock().unwrap());
        let flows = agent_flow_indices(&sc);
        assert_eq!(
            agents.len(),
            flows.len(),
            "one agent controller is built per agent flow"
        );
        let steps: Vec<Duration> = agents.iter().map(|a| lock(a).step).collect();
        if steps.iter().any(|&s| s != steps[0]) {
            return Err(format!(
                "every agent flow must have the same step, found {}",
                steps
                    .iter()
                    .map(|s| s.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        let kinds: Vec<_> = agents.iter().map(|a| lock(a).kind).collect();
        if kinds.iter().any(|&k| k != kinds[0]) {
            return Err("every agent flow must have the same observation".into());
        }
        self.step = steps[0];
        self.obs_len = kinds[0].len();
        self.cursors = flows
            .iter()
            .map(|&i| Cursor {
                flow: i,
                capacity: Arc::new(sc.controller_capacity(&sc.flows[i])),
                first_open: 0,
                gaps: SeqGaps::default(),
                min_delay_ms: None,
                first_open_frame: 0,
                last_display: None,
                freeze_after: freeze_after(sc.flows[i].video().map_or(30.0, |v| v.fps)),
                delays: Vec::new(),
            })
            .collect();
        self.agents = agents;
        self.sim = Some(sim);
        self.now = Time::ZERO;
        self.done = false;
        // Steps fall on multiples of `step` from time 0, as the agents' timers do
        // (`agent::first_step`); the first observation is at the first one after the earliest
        // agent's start.
        let start = flows
            .iter()
            .map(|&i| sc.flows[i].start)
            .min()
            .expect("at least one agent");
        self.run_to(agent::first_step(start, self.step));
        Ok(())
    }

    fn run_to(&mut self, until: Time) {
        let sim = self.sim.as_mut().expect("reset builds the simulation");
        self.done = sim.advance(until);
        self.prev = self.now;
        self.now = until.min(sim.end());
    }

    /// Set each agent's action (bit/s) and run one step; whether the episode is over.
    pub fn step(&mut self, actions: &[f64]) -> Result<bool, String> {
        if self.done {
            return Err("the episode is over: call reset() before stepping again".into());
        }
        if actions.len() != self.agents.len() {
            return Err(format!(
                "expected {} action(s), one per agent, got {}",
                self.agents.len(),
                actions.len()
            ));
        }
        for (a, &bps) in self.agents.iter().zip(actions) {
            lock(a).action = Some(bps);
        }
        let until = self.now + self.step;
        self.run_to(until);
        Ok(self.done)
    }

    /// Each agent's observation, `observation_len()` values per agent, into `out`.
    pub fn observe(&self, out: &mut [f32]) {
        for (a, chunk) in self.agents.iter().zip(out.chunks_mut(self.obs_len)) {
            lock(a).observe(self.now, chunk);
        }
    }

    /// Each agent's statistics for the step that just ended (`STATS.len()` values per agent)
    /// into `out`.
    pub fn step_stats(&mut self, out: &mut [f64]) {
        let sim = self.sim.as_ref().expect("reset builds the simulation");
        // The step that just ended; the last one of a run may be shorter.
        let (from, to) = (self.prev, self.now);
        let secs = (to - from).as_secs_f64().max(1e-9);
        for ((a, c), o) in self
            .agents
            .iter()
            .zip(&mut self.cursors)
            .zip(out.chunks_mut(STATS.len()))
        {
            let target = lock(a).target.bps();
            let records = sim.packet_records(c.flow);
            let packets = packet_stats(c, records, from, to);
            let frames = frame_stats(c, sim.frames(c.flow), from, to);
            let values = [
                to.as_secs_f64(),
                target,
                packets.sent_bytes as f64 * 8.0 / secs,
                packets.recv_bytes as f64 * 8.0 / secs,
                c.capacity.bytes_between(from, to) * 8.0 / secs,
                packets.received as f64,
                packets.lost as f64,
                ratio(packets.lost, packets.lost + packets.received),
                packets.delay_mean_ms,
                packets.delay_p95_ms,
                c.min_delay_ms.unwrap_or(f64::NAN),
                frames.displayed as f64,
                frames.latency_mean_ms,
                frames.frozen.as_secs_f64() / secs,
                frames.psnr_mean_db,
                frames.displayed_bytes as f64 * 8.0 / secs,
            ];
            o.copy_from_slice(&values);
        }
    }
}

fn lock(a: &AgentHandle) -> std::sync::MutexGuard<'_, agent::AgentShared> {
    a.lock().unwrap_or_else(|e| e.into_inner())
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

/// The flows an environment steps: those whose controller is `agent`.
pub fn agent_flow_indices(sc: &Scenario) -> Vec<usize> {
    sc.flows
        .iter()
        .enumerate()
        .filter(|(_, f)| f.video().is_some_and(|v| v.controller.name == "agent"))
        .map(|(i, _)| i)
        .collect()
}

#[derive(Default)]
struct PacketStep {
    sent_bytes: u64,
    recv_bytes: u64,
    received: u64,
    lost: u64,
    delay_mean_ms: f64,
    delay_p95_ms: f64,
}

/// Packets sent and received in `(from, to]`, losses as the receiver counts them (gaps in the
/// sequence numbers it got), true one-way delays.
fn packet_stats(c: &mut Cursor, records: &[PacketRecord], from: Time, to: Time) -> PacketStep {
    let mut s = PacketStep::default();
    c.delays.clear();
    // Records before `first_open` were counted; a record still in flight stays open.
    let mut open = OpenFrom::new(c.first_open);
    for (k, r) in records.iter().enumerate().skip(c.first_open) {
        if r.send > from && r.send <= to {
            s.sent_bytes += r.size as u64;
        }
        open.see(k, r.dropped || r.recv.is_some_and(|t| t <= to));
        if let Some(t) = r.recv.filter(|&t| t > from && t <= to) {
            s.received += 1;
            s.recv_bytes += r.size as u64;
            s.lost += c.gaps.lost_before(r.seq);
            let d = (t.0 as f64 - r.send.0 as f64) / 1e6;
            c.min_delay_ms = Some(c.min_delay_ms.map_or(d, |m| m.min(d)));
            c.delays.push(d);
        }
        if r.send > to {
            break;
        }
    }
    c.first_open = open.first;
    c.delays.sort_by(f64::total_cmp);
    s.delay_mean_ms = c.delays.iter().sum::<f64>() / c.delays.len() as f64; // NaN without any
    s.delay_p95_ms = percentile(&c.delays, 95.0).unwrap_or(f64::NAN);
    s
}

/// Where the items not yet settled begin: items are settled in order of their index as a walk
/// sees them, and the first unsettled one (and all after it) stays open for the next step.
struct OpenFrom {
    first: usize,
    all_settled: bool,
}

impl OpenFrom {
    fn new(first: usize) -> OpenFrom {
        OpenFrom {
            first,
            all_settled: true,
        }
    }

    /// Item `k` (the walk's next) is settled or not.
    fn see(&mut self, k: usize, settled: bool) {
        self.all_settled &= settled;
        if self.all_settled {
            self.first = k + 1;
        }
    }
}

#[derive(Default)]
struct FrameStep {
    displayed: u64,
    displayed_bytes: u64,
    latency_mean_ms: f64,
    psnr_mean_db: f64,
    frozen: Duration,
}

/// Frames displayed in `(from, to]`: their capture-to-display latency and PSNR, and how long
/// the picture was frozen (more than [`freeze_after`] since the last display).
fn frame_stats(c: &mut Cursor, frames: &[FrameRecord], from: Time, to: Time) -> FrameStep {
    let mut s = FrameStep::default();
    let (mut latency, mut psnr, mut psnr_n) = (0.0, 0.0, 0u64);
    let mut displays: Vec<Time> = Vec::new();
    let mut open = OpenFrom::new(c.first_open_frame);
    for (k, f) in frames.iter().enumerate().skip(c.first_open_frame) {
        open.see(k, f.unrecoverable || f.display.is_some_and(|t| t <= to));
        if let Some(t) = f.display.filter(|&t| t > from && t <= to) {
            s.displayed += 1;
            s.displayed_bytes += f.size as u64;
            latency += t.secs_since(f.capture) * 1000.0;
            if let Some(p) = f.psnr_db {
                psnr += p;
                psnr_n += 1;
            }
            displays.push(t);
        }
        if f.capture > to {
            break;
        }
    }
    c.first_open_frame = open.first;
    displays.sort();
    // Frozen: the parts of (from, to] more than `freeze_after` after the last display.
    let mut last = c.last_display;
    let mut t = from;
    for &d in &displays {
        s.frozen = s.frozen + frozen_between(last, t, d, c.freeze_after);
        last = Some(d);
        t = d;
    }
    s.frozen = s.frozen + frozen_between(last, t, to, c.freeze_after);
    c.last_display = last;
    s.latency_mean_ms = if s.displayed > 0 {
        latency / s.displayed as f64
    } else {
        f64::NAN
    };
    s.psnr_mean_db = if psnr_n > 0 {
        psnr / psnr_n as f64
    } else {
        f64::NAN
    };
    s
}

/// How much of `[a, b)` is more than `after` past `last` (all of it before any display).
fn frozen_between(last: Option<Time>, a: Time, b: Time, after: Duration) -> Duration {
    let frozen_from = match last {
        Some(l) => (l + after).max(a),
        None => a,
    };
    Duration(b.0.saturating_sub(frozen_from.0))
}

/// What [`bench`] measured.
#[derive(Debug, Clone)]
pub struct EnvBench {
    pub envs: usize,
    pub steps: u64,
    pub wall_seconds: f64,
    pub steps_per_second: f64,
    /// Wall time in the simulation ([`AgentEnv::step`]), the observations and the statistics.
    pub simulate_seconds: f64,
    pub observe_seconds: f64,
    pub stats_seconds: f64,
}

/// The learning environment's benchmark: `envs` simulations of one agent flow at 1.8 Mbit/s
/// over a 2 Mbit/s link (20 ms each way, 100 ms drop-tail queue) for 60 s, stepped every 60 ms
/// with the `mmsys24` observation and the step statistics built at every step, as `rtcc.gym`'s
/// vector environment steps them (without Python).
pub fn bench(envs: usize) -> Result<EnvBench, String> {
    use std::time::Instant;
    let toml = "name = \"bench-env\"\nduration = \"60s\"\n[path.forward]\ncapacity = \"2Mbps\"\n\
                delay = \"20ms\"\nqueue = \"100ms\"\n[path.reverse]\ndelay = \"20ms\"\n[[flows]]\n\
                controller = \"agent\"\nparams = { observation = \"mmsys24\", step = \"60ms\" }\n";
    let mut with_agent = Registry::builtin();
    with_agent
        .register(agent::info_with(Arc::new(|_| {})))
        .map_err(|e| e.to_string())?;
    let sc = Scenario::from_toml_str_with_registry(
        toml,
        std::path::Path::new("."),
        "bench-env",
        None,
        &with_agent,
    )
    .map_err(|e| e.to_string())?;
    let mut all = (0..envs)
        .map(|_| AgentEnv::new(&sc, &Registry::builtin()))
        .collect::<Result<Vec<_>, _>>()?;
    let mut obs = vec![0.0f32; all[0].observation_len()];
    let mut stats = vec![0.0f64; STATS.len()];
    let (mut simulate, mut observe, mut measure) = (0.0, 0.0, 0.0);
    let mut steps = 0u64;
    let t0 = Instant::now();
    while all.iter().any(|e| !e.is_done()) {
        for e in all.iter_mut().filter(|e| !e.is_done()) {
            let t = Instant::now();
            e.step(&[1.8e6])?;
            let t1 = Instant::now();
            e.observe(&mut obs);
            let t2 = Instant::now();
            e.step_stats(&mut stats);
            let t3 = Instant::now();
            simulate += (t1 - t).as_secs_f64();
            observe += (t2 - t1).as_secs_f64();
            measure += (t3 - t2).as_secs_f64();
            steps += 1;
        }
    }
    let wall = t0.elapsed().as_secs_f64();
    Ok(EnvBench {
        envs,
        steps,
        wall_seconds: wall,
        steps_per_second: steps as f64 / wall,
        simulate_seconds: simulate,
        observe_seconds: observe,
        stats_seconds: measure,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_benchmark_steps_every_simulation_to_the_end() {
        let b = bench(2).unwrap();
        // From the first boundary (60 ms) to the end (60 s): 999 steps each.
        assert_eq!(b.steps, 2 * 999, "{b:?}");
    }
}
