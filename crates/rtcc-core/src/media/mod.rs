//! The media pipeline: frame source, encoder models, packetizer, pacer, a sans-IO video sender
//! that wires them to a controller, and the receiver that assembles frames and returns feedback.

pub mod encoder;
pub mod pacer;
pub mod packetizer;
pub mod receiver;
pub mod sender;
pub mod source;

pub use encoder::{EncodedFrame, Encoder, IdealEncoder};
pub use pacer::Pacer;
pub use packetizer::Packetizer;
pub use receiver::{ArrivedPacket, Receiver};
pub use sender::VideoSender;
pub use source::FrameSource;
