//! Network models: link capacity (constant, schedule, mahimahi trace), queues, the bottleneck
//! link that serves a queue at a capacity, and a generator of LTE-like traces.

pub mod capacity;
pub mod link;
pub mod queue;
pub mod tracegen;

pub use capacity::{Capacity, MahimahiTrace, Schedule, TraceError};
pub use link::{Link, LinkOutput};
pub use queue::{DropTail, NetPacket, Queue, QueueLimit};
