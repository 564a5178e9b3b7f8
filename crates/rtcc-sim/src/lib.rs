//! rtcc-sim: a fast, deterministic discrete-event simulator for rate control of interactive
//! video.
//!
//! - [`scenario`]: TOML/JSON scenario files, validated with errors that name the field.
//! - [`sim`]: the event loop over a path of `rtcc-core` links (one bottleneck pair or several
//!   hops in a row).
//! - [`path`]: the capacity a flow sees along several links.
//! - [`run`](mod@run): run a scenario and compute its summary.
//! - [`bench`]: the standard speed benchmarks.
//! - [`replay`]: a controller fed the feedback of a logged packet trace, open loop.
//! - [`tables`]: a run's logs as Arrow tables and Parquet files.

pub mod bench;
pub mod path;
pub mod replay;
pub mod run;
pub mod scenario;
pub mod sim;
pub mod tables;

pub use run::{
    run, run_streaming, run_streaming_with_registry, run_with_registry, RunResult, Summary,
};
pub use scenario::{Scenario, ScenarioError};
