//! Helpers shared by the whole-simulation tests: building and running scenarios, and reading the
//! logs (throughput, bottleneck sojourn, controller signals) over a time window.
#![allow(dead_code)] // each test binary uses a subset

use rtcc_sim::{run, RunResult, Scenario};
use std::path::{Path, PathBuf};

/// A folder of the repository (`"traces"`, `"experiments/sqp"`), for relative file paths.
pub fn repo_dir(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(relative)
}

/// Parse a TOML scenario with file paths relative to `base`; a bad scenario fails the test.
pub fn scenario_in(toml: &str, base: &Path) -> Scenario {
    Scenario::from_toml_str(toml, base, "test", None).unwrap_or_else(|e| panic!("{e}"))
}

/// Parse a TOML scenario with file paths relative to the working directory.
pub fn scenario(toml: &str) -> Scenario {
    scenario_in(toml, Path::new("."))
}

/// Run a scenario with its own seed and no progress reporting.
pub fn run_quiet(sc: &Scenario) -> RunResult {
    run(sc, None, &mut |_| {}).unwrap()
}

/// Parse and run.
pub fn simulate(toml: &str) -> RunResult {
    run_quiet(&scenario(toml))
}

/// Parse (paths relative to `base`) and run.
pub fn simulate_in(toml: &str, base: &Path) -> RunResult {
    run_quiet(&scenario_in(toml, base))
}

/// Bit/s received by flow `i` from packets arriving in `[from_s, to_s)`.
pub fn throughput_bps(r: &RunResult, i: usize, from_s: f64, to_s: f64) -> f64 {
    let bytes: u64 = r.flows[i]
        .packets
        .iter()
        .filter(|p| {
            p.recv
                .is_some_and(|t| (from_s..to_s).contains(&t.as_secs_f64()))
        })
        .map(|p| p.size as u64)
        .sum();
    bytes as f64 * 8.0 / (to_s - from_s)
}

/// Bit/s received by all flows together in `[from_s, to_s)`.
pub fn total_throughput_bps(r: &RunResult, from_s: f64, to_s: f64) -> f64 {
    (0..r.flows.len())
        .map(|i| throughput_bps(r, i, from_s, to_s))
        .sum()
}

/// Mean bottleneck sojourn (ms, own serialisation included) of all packets departing in
/// `[from_s, to_s)`.
pub fn mean_sojourn_ms(r: &RunResult, from_s: f64, to_s: f64) -> f64 {
    let (mut sum, mut n) = (0.0, 0usize);
    for p in r.flows.iter().flat_map(|f| f.packets.iter()) {
        if let Some(d) = p.depart {
            if (from_s..to_s).contains(&d.as_secs_f64()) {
                sum += (d - p.enqueue).as_millis_f64();
                n += 1;
            }
        }
    }
    sum / n as f64
}

/// Flow `i`'s controller signal `name` as (seconds, value), in log order.
pub fn signal(r: &RunResult, i: usize, name: &str) -> Vec<(f64, f64)> {
    let s = &r.state;
    (0..s.time.len())
        .filter(|&k| s.flow[k] as usize == i && s.signal[k] == name)
        .map(|k| (s.time[k].as_secs_f64(), s.value[k]))
        .collect()
}

/// Seconds flow `i`'s signal `name` spent at each value in `[from_s, to_s)`, as (value,
/// seconds) in ascending value order. The state log samples a flow at most every 10 ms
/// (`STATE_SAMPLE_INTERVAL`) at its feedback and timer events; each sample's value is held until
/// the next one (idle periods count in the state the controller was left in).
pub fn time_in_state(
    r: &RunResult,
    i: usize,
    name: &str,
    from_s: f64,
    to_s: f64,
) -> Vec<(f64, f64)> {
    let samples = signal(r, i, name);
    let mut acc: Vec<(f64, f64)> = Vec::new();
    for (k, &(t, v)) in samples.iter().enumerate() {
        let end = samples.get(k + 1).map_or(to_s, |n| n.0).min(to_s);
        let dt = end - t.max(from_s);
        if dt <= 0.0 {
            continue;
        }
        match acc.iter_mut().find(|a| a.0 == v) {
            Some(a) => a.1 += dt,
            None => acc.push((v, dt)),
        }
    }
    acc.sort_by(|a, b| a.0.total_cmp(&b.0));
    acc
}

/// The share of `[from_s, to_s)` flow `i`'s signal `name` spent at `value` (0 if never).
pub fn share_in_state(
    r: &RunResult,
    i: usize,
    name: &str,
    value: f64,
    from_s: f64,
    to_s: f64,
) -> f64 {
    time_in_state(r, i, name, from_s, to_s)
        .iter()
        .find(|a| a.0 == value)
        .map_or(0.0, |a| a.1 / (to_s - from_s))
}
