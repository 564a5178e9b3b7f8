//! The standard speed benchmarks (used by `cargo bench` and `rtcc bench`).
//!
//! Two headline cases, each run keeping its packet log in memory (as `Simulation::run`):
//!
//! - `single`: one flow at 18 Mbit/s (`fixed`, 90 % of the link) over a 20 Mbit/s link with a
//!   40 ms RTT for 60 s.
//! - `ten`: ten such flows at 5.4 Mbit/s each sharing a 60 Mbit/s link for 60 s.
//!
//! And the scaling cases, which say how the cost grows with the work. Each streams its packet
//! log (to a sink that drops it, as `rtcc run` streams it to disk) so that memory is that of the
//! simulation and its summary, not of a kept log:
//!
//! - `flows-1`, `flows-10`, `flows-100`, `flows-1000`: that many `fixed` flows at 1.8 Mbit/s
//!   sharing a link of 2 Mbit/s per flow, 40 ms RTT, 60 s;
//! - `rate-20M`, `rate-200M`, `rate-1G`: one flow at 90 % of a link of that rate, 60 s;
//! - `length-60s`, `length-3600s`: one flow at 18 Mbit/s over 20 Mbit/s for that long;
//! - `soak`: one flow at 90 Mbit/s over 100 Mbit/s for an hour (the bounded-memory check).
//!
//! Speed is delivered packets per wall-clock second of the whole run (simulation, logs and
//! metrics), and the speed-up over real time. Peak memory is the process's peak resident set
//! during the case (Linux: the high-water mark is reset before the case through
//! `/proc/self/clear_refs`, so it includes what the process held before, e.g. an interpreter).

use crate::{run, Scenario};
use rtcc_core::cc;
use std::path::Path;
use std::time::Instant;

/// The headline cases (`rtcc bench` without `--case` runs these).
pub const CASES: &[&str] = &["single", "ten"];

/// The scaling cases, in the order `rtcc bench --case scaling` runs them.
pub const SCALING_CASES: &[&str] = &[
    "flows-1",
    "flows-10",
    "flows-100",
    "flows-1000",
    "rate-20M",
    "rate-200M",
    "rate-1G",
    "length-60s",
    "length-3600s",
    "soak",
];

/// What a case runs: `flows` fixed-rate flows, each at 90 % of its share of the link.
struct Shape {
    flows: usize,
    link_bps: f64,
    seconds: u64,
    /// Stream the packet log (dropped) instead of keeping it.
    streamed: bool,
}

fn shape(case: &str) -> Result<Shape, String> {
    let s = |flows, link_bps, seconds, streamed| Shape {
        flows,
        link_bps,
        seconds,
        streamed,
    };
    Ok(match case {
        "single" => s(1, 20e6, 60, false),
        "ten" => s(10, 60e6, 60, false),
        "flows-1" => s(1, 2e6, 60, true),
        "flows-10" => s(10, 20e6, 60, true),
        "flows-100" => s(100, 200e6, 60, true),
        "flows-1000" => s(1000, 2e9, 60, true),
        "rate-20M" | "length-60s" => s(1, 20e6, 60, true),
        "rate-200M" => s(1, 200e6, 60, true),
        "rate-1G" => s(1, 1e9, 60, true),
        "length-3600s" => s(1, 20e6, 3600, true),
        "soak" => s(1, 100e6, 3600, true),
        _ => {
            let all: Vec<&str> = CASES.iter().chain(SCALING_CASES).copied().collect();
            return Err(format!(
                "unknown benchmark case {case:?}; valid cases: {}",
                all.join(", ")
            ));
        }
    })
}

/// The scenario of a benchmark case.
pub fn scenario(case: &str) -> Result<Scenario, String> {
    let sh = shape(case)?;
    let rate = 0.9 * sh.link_bps / sh.flows as f64;
    let mut toml = format!(
        "name = \"bench-{case}\"\nduration = \"{}s\"\n[path.forward]\ncapacity = \"{}bps\"\ndelay = \"20ms\"\nqueue = \"100ms\"\n",
        sh.seconds, sh.link_bps
    );
    for i in 0..sh.flows {
        toml += &format!(
            "[[flows]]\nname = \"f{i}\"\ncontroller = \"fixed\"\nparams = {{ rate = \"{rate}bps\" }}\nframe_jitter = \"1ms\"\n"
        );
    }
    Scenario::from_toml_str(&toml, Path::new("."), &format!("bench-{case}"), None)
        .map_err(|e| e.to_string())
}

#[derive(Debug, Clone)]
pub struct BenchResult {
    pub case: String,
    pub flows: usize,
    pub packets: usize,
    pub sim_seconds: f64,
    pub wall_seconds: f64,
    pub packets_per_second: f64,
    pub speedup: f64,
    /// The process's peak resident set during the case, in bytes (`None` where the system
    /// does not tell).
    pub peak_rss_bytes: Option<u64>,
}

/// Reset the process's resident-set high-water mark (Linux ≥ 4.0); false where unsupported.
fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// The process's resident-set high-water mark (`VmHWM`), in bytes.
fn peak_rss() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Run a case once and time it.
pub fn run_case(case: &str) -> Result<BenchResult, String> {
    let sh = shape(case)?;
    let sc = scenario(case)?;
    let measured_memory = reset_peak_rss();
    let t0 = Instant::now();
    let r = if sh.streamed {
        // Every log streamed (to nowhere): what a long `rtcc run` holds.
        let (mut packets, mut frames, mut state) = (|_: &[_]| {}, |_: &[_]| {}, |_: &_| {});
        let sinks = crate::sim::Sinks {
            packets: Some(&mut packets),
            frames: Some(&mut frames),
            state: Some(&mut state),
        };
        crate::run::run_with_sinks(&sc, None, &mut |_| {}, cc::registry(), sinks, None)?
    } else {
        run(&sc, None, &mut |_| {})?
    };
    let wall = t0.elapsed().as_secs_f64();
    let peak_rss_bytes = measured_memory.then(peak_rss).flatten();
    let packets = r.delivered_packets();
    drop(r);
    let sim_seconds = sc.duration.as_secs_f64();
    Ok(BenchResult {
        case: case.into(),
        flows: sh.flows,
        packets,
        sim_seconds,
        wall_seconds: wall,
        packets_per_second: packets as f64 / wall,
        speedup: sim_seconds / wall,
        peak_rss_bytes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_case_builds_a_valid_scenario_and_unknown_cases_are_named() {
        for case in CASES.iter().chain(SCALING_CASES) {
            let sc = scenario(case).unwrap_or_else(|e| panic!("case {case}: {e}"));
            assert_eq!(sc.flows.len(), shape(case).unwrap().flows, "case {case}");
        }
        let err = scenario("flows-7").unwrap_err();
        assert!(
            err.contains("flows-7") && err.contains("flows-1000"),
            "{err}"
        );
    }

    #[test]
    fn a_case_reports_its_packets_and_peak_memory() {
        let r = run_case("flows-1").unwrap();
        // 1.8 Mbit/s of about 1,200-byte packets for 60 s: about 11,000 packets.
        assert!(
            (9_000..13_000).contains(&r.packets),
            "packets {}",
            r.packets
        );
        if cfg!(target_os = "linux") {
            assert!(r.peak_rss_bytes.is_some_and(|b| b > 1 << 20));
        }
    }
}
