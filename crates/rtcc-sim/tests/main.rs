//! The simulator's integration tests, one file per subject, built as one test binary (`sim`):
//! one binary links the simulator once instead of once per file, which is most of the time a
//! clean `cargo test` spends on this crate. Run one file's tests with its module name:
//! `cargo test -p rtcc-sim --test sim vidaptive::`.

mod common;

mod adaptation;
mod analytic;
mod bbr2;
mod bbr_dash_controls;
mod copa;
mod coupled;
mod dash;
mod ecn;
mod encoders;
mod endpoints;
mod gcc;
mod gcc_loss_v2;
mod l4s;
mod liveness;
mod nada;
mod opennetlab;
mod rate_reports;
mod registry;
mod scenario_fuzz;
mod scream;
mod sqp;
mod streaming;
mod tables;
mod tcp;
mod topology;
mod traffic;
mod vidaptive;
