//! rtcc-sim: a fast, deterministic discrete-event simulator for rate control of interactive
//! video.
//!
//! Scenarios (files, paths, flows, the endpoints a flow is built into, the summary of a run) are
//! read and built by the scenario layer, `rtcc-scenario`, which the live transport shares; this
//! crate schedules:
//! - [`sim`]: the event loop over a path of `rtcc-core` links (one bottleneck pair or several
//!   hops in a row): time, links, delivery and logs.
//! - [`run`](mod@run): run a scenario and compute its summary.
//! - [`bench`]: the standard speed benchmarks.
//! - [`replay`]: a controller fed the feedback of a logged packet trace, open loop.
//! - [`tables`]: a run's logs as Arrow tables and Parquet files.

pub mod bench;
pub mod capture;
pub mod env;
pub mod frames;
pub mod replay;
pub mod run;
pub mod sim;
pub mod tables;

/// The capacity a flow sees along several links ([`rtcc_scenario::capacity`]).
pub use rtcc_scenario::capacity as path;

/// Scenario files, their path and their flows: the scenario layer ([`rtcc_scenario`]), under
/// the names the simulator has always given them.
pub mod scenario {
    pub use rtcc_scenario::controller::*;
    pub use rtcc_scenario::flow::*;
    pub use rtcc_scenario::path::*;
    pub use rtcc_scenario::scenario::*;
    pub use rtcc_scenario::ScenarioError;
}

pub use run::{
    run, run_streaming, run_streaming_with_registry, run_with_registry, RunResult, Summary,
};
pub use scenario::{Scenario, ScenarioError};
