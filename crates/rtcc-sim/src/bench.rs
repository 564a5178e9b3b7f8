//! The standard speed benchmarks (used by `cargo bench` and `rtcc bench`).
//!
//! - `single`: one flow at 18 Mbit/s (`fixed`, 90 % of the link) over a 20 Mbit/s link with a
//!   40 ms RTT for 60 s.
//! - `ten`: ten such flows at 5.4 Mbit/s each sharing a 60 Mbit/s link for 60 s.
//!
//! Speed is delivered packets per wall-clock second of the whole run (simulation, logs and
//! metrics), and the speed-up over real time.

use crate::{run, Scenario};
use std::path::Path;
use std::time::Instant;

pub const CASES: &[&str] = &["single", "ten"];

/// The scenario of a benchmark case.
pub fn scenario(case: &str) -> Result<Scenario, String> {
    let (capacity, flows, rate) = match case {
        "single" => ("20Mbps", 1, "18Mbps"),
        "ten" => ("60Mbps", 10, "5.4Mbps"),
        _ => {
            return Err(format!(
                "unknown benchmark case {case:?}; valid cases: {}",
                CASES.join(", ")
            ))
        }
    };
    let mut toml = format!(
        "name = \"bench-{case}\"\nduration = \"60s\"\n[path.forward]\ncapacity = \"{capacity}\"\ndelay = \"20ms\"\nqueue = \"100ms\"\n"
    );
    for i in 0..flows {
        toml += &format!(
            "[[flows]]\nname = \"f{i}\"\ncontroller = \"fixed\"\nparams = {{ rate = \"{rate}\" }}\nframe_jitter = \"1ms\"\n"
        );
    }
    Scenario::from_toml_str(&toml, Path::new("."), &format!("bench-{case}"), None)
        .map_err(|e| e.to_string())
}

#[derive(Debug, Clone)]
pub struct BenchResult {
    pub case: String,
    pub packets: usize,
    pub sim_seconds: f64,
    pub wall_seconds: f64,
    pub packets_per_second: f64,
    pub speedup: f64,
}

/// Run a case once and time it.
pub fn run_case(case: &str) -> Result<BenchResult, String> {
    let sc = scenario(case)?;
    let t0 = Instant::now();
    let r = run(&sc, None, &mut |_| {})?;
    let wall = t0.elapsed().as_secs_f64();
    let packets = r.delivered_packets();
    let sim_seconds = sc.duration.as_secs_f64();
    Ok(BenchResult {
        case: case.into(),
        packets,
        sim_seconds,
        wall_seconds: wall,
        packets_per_second: packets as f64 / wall,
        speedup: sim_seconds / wall,
    })
}
