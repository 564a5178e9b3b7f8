//! The media pipeline: frame source, encoder models, packetizer, pacer, a sans-IO video sender
//! that wires them to a controller, the receiver that assembles frames and returns feedback, and
//! the receiver's playout (decodability and display).

pub mod degradation;
pub mod encoder;
pub mod frame_dropper;
pub mod jitter_buffer;
pub mod nack;
pub mod pacer;
pub mod playout;
pub mod protection;
pub mod queue_limit;
pub mod receiver;
pub mod sender;
pub mod source;
pub mod window;

pub use encoder::{EncodedFrame, Encoder, EncoderConfig, IdealEncoder};
pub use pacer::Pacer;
pub use playout::Playout;
pub use receiver::ArrivalRecorder;
pub use sender::{Outgoing, VideoSender};
pub use source::FrameSource;

// Moved below `cc` and `media` (`crate::video`); their old paths stay.
pub use crate::video::{packetizer, quality, range, Packetizer, Resolution};
