//! What a flow's video is, as both the controllers ([`crate::cc`]) and the media pipeline
//! ([`crate::media`]) see it: its media range (the bitrates and frame rates it may use), its
//! resolutions and their rate–quality model, and how a frame is cut into packets.
//!
//! It sits below both and uses neither: the media pipeline drives a controller, and a controller
//! reads only these descriptions of the video it controls. `media` re-exports the three modules
//! under their former paths (`media::range`, `media::quality`, `media::packetizer`).

pub mod packetizer;
pub mod quality;
pub mod range;

pub use packetizer::Packetizer;
pub use quality::Resolution;
pub use range::MediaRange;
