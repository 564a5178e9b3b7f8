//! rtcc-core: sans-IO building blocks for rate control of low-latency interactive video.
//!
//! Nothing here reads a clock, spawns a thread or opens a socket: every function takes `now`.
//! The same controllers, link models and media pipeline therefore run in the `rtcc-sim`
//! simulator, in a live transport, or inside a user's own media stack.
//!
//! - [`units`]: time, rates and sizes with parsing of "20Mbps", "40ms", "1.5MB".
//! - [`packet`]: sent-packet records, transport-wide feedback, frame acknowledgements.
//! - [`cc`]: the [`cc::Controller`] trait, the registry, and the controllers.
//! - [`net`]: link capacity models, queues and the bottleneck link.
//! - [`video`]: what a flow's video is, for controllers and media alike: its media range, its
//!   resolutions and their quality, its packetizer.
//! - [`media`]: frame source, encoders, pacer, sender and receiver.
//! - [`tcp`]: a TCP-like bulk sender around a window-based controller (cross traffic, and the
//!   request/response connections of DASH).
//! - [`short_tcp`]: the file sizes and idle times of RFC 8867 §5.7's short TCP flows.
//! - [`dash`]: a DASH video player with dash.js's and Pensieve's ABR rules, and its QoE.
//! - [`metrics`]: pure functions from logs to the metrics every comparison reports.

pub mod cc;
pub mod dash;
pub mod endpoint;
pub mod learn;
pub mod media;
pub mod metrics;
pub mod net;
pub mod packet;
pub mod rto;
pub mod short_tcp;
pub mod suggest;
pub mod tcp;
pub mod units;
pub mod video;
pub mod wire;

pub use units::{Bytes, Duration, Rate, Time};
