//! Network models: link capacity (constant, schedule, mahimahi trace, token bucket), queues, the
//! bottleneck link that serves a queue at a capacity (optionally behind a netem-style delay
//! stage), impairments (loss, jitter, aggregation), OpenNetLab traces (capacity, loss and delay
//! per segment), and a generator of LTE-like traces.

pub mod capacity;
pub mod impair;
pub mod link;
pub mod netem;
pub mod opennetlab;
pub mod pdv;
pub mod queue;
pub mod steps;
pub mod sub_ms_jitter;
pub mod tracegen;

#[cfg(test)]
mod fuzz_tests;

pub use capacity::{Capacity, MahimahiTrace, Schedule, TraceError};
pub use link::{Link, LinkOutput};
pub use netem::{DelayLine, NetemConfig, NetemError};
pub use opennetlab::OpenNetLabTrace;
pub use queue::{DropTail, NetPacket, Queue, QueueConfig, QueueLimit};
pub use steps::Steps;
