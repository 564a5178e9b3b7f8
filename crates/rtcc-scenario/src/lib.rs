//! rtcc-scenario: the one layer that turns a scenario into running flows, shared by the
//! simulator (`rtcc-sim`) and the live transport (`rtcc-live`).
//!
//! The walk of one flow from its file to its endpoints:
//!
//! ```text
//!  scenario.toml ──serde──► ScenarioSpec ──► Scenario::from_spec
//!                              │  path ──► path::resolve_path ──► Vec<HopConfig>
//!                              │  flows[i] (a table) ──► FlowConfig::from_value
//!                              │      kind ──► flow/<kind>.rs: spec read, checked, resolved
//!                              │      controller + params (+ coupling) ──► ControllerRecipe::check
//!                              ▼
//!                           Scenario { hops, flows: Vec<FlowConfig> }
//!  at the run's start:      Scenario::flow_endpoints(i) ──► FlowConfig::endpoints
//!                              ──► flow/<kind>.rs builds [sender, receiver] (sans-IO
//!                                  `rtcc_core::endpoint`s), its controller from the recipe,
//!                                  every seed from `seeds::derive_seed`
//!  after the run:           outcome::summarize(Scenario, FlowLogs) ──► Summary
//!                           facts::run_facts(Scenario, RunResult) ──► RunFacts (facts.json)
//! ```
//!
//! - [`scenario`]: TOML/JSON scenario files, validated with errors that name the field.
//! - [`path`]: the path's hops and links; [`capacity`]: the capacity a flow sees along them.
//! - [`flow`]: one file per kind of flow (spec, checks, endpoints).
//! - [`controller`]: a flow's controller recipe and the command line's controller specs.
//! - [`seeds`]: the random streams of a run.
//! - [`outcome`]: what a run's flows logged and its summary.
//! - [`facts`]: a run's route facts (links crossed, delays, capacity per window) and the rates
//!   its flows received per window; [`windows`]: the windowed metrics the RMCAT rules use
//!   (Jain's index over windows, convergence).

pub mod capacity;
pub mod controller;
pub mod error;
pub mod facts;
pub mod flow;
pub mod outcome;
pub mod path;
pub mod scenario;
pub mod seeds;
pub mod windows;

pub use capacity::PathCapacity;
pub use controller::{ControllerRecipe, Coupling, CouplingSpec};
pub use error::ScenarioError;
pub use facts::{run_facts, RunFacts};
pub use flow::{FlowConfig, FlowKind, DEFAULT_FPS, DEFAULT_PAYLOAD};
pub use outcome::{FlowLogs, LinkCounters, RunResult, StateLog, Summary};
pub use path::{
    link_from_spec, FileReference, HopConfig, LinkConfig, LinkSpec, MAX_HOPS, SINGLE_HOP_NAME,
};
pub use scenario::{Scenario, ScenarioSpec, MAX_ESTIMATED_PACKETS, MAX_PACKET};
pub use seeds::derive_seed;
