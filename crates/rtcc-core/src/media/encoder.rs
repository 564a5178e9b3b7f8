//! Encoder models: how many bytes a frame gets for a given target bitrate.
//!
//! `ideal` produces exactly `target / fps` bytes per frame and follows a new target on the very
//! next frame. It isolates the controller from encoder behaviour; the lagged and noisy encoders
//! of real codecs (Vidaptive §2) are separate models behind the same trait.

use crate::units::{Rate, Time};

/// One encoded frame.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EncodedFrame {
    pub size: u32,
    pub keyframe: bool,
}

pub trait Encoder: Send {
    /// Encode the frame captured at `now` with the controller's current `target`.
    fn encode(&mut self, now: Time, target: Rate, fps: f64) -> EncodedFrame;
}

/// Exactly `target / fps` bytes per frame. Fractions of a byte are carried to the next frame so
/// the long-run bitrate equals the target exactly.
#[derive(Debug, Default)]
pub struct IdealEncoder {
    carry: f64,
    frames: u64,
}

impl Encoder for IdealEncoder {
    fn encode(&mut self, _now: Time, target: Rate, fps: f64) -> EncodedFrame {
        let exact = target.bps().max(0.0) / fps / 8.0 + self.carry;
        let size = exact.floor();
        self.carry = exact - size;
        let keyframe = self.frames == 0;
        self.frames += 1;
        EncodedFrame {
            size: size.min(u32::MAX as f64) as u32,
            keyframe,
        }
    }
}

/// Names of the encoder models a flow can select.
pub const ENCODERS: &[&str] = &["ideal"];

pub fn create(name: &str) -> Result<Box<dyn Encoder>, String> {
    match name {
        "ideal" => Ok(Box::new(IdealEncoder::default())),
        _ => Err(format!(
            "unknown encoder {name:?}; valid encoders: {}",
            ENCODERS.join(", ")
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ideal_frames_sum_to_the_target() {
        let mut e = IdealEncoder::default();
        let total: u64 = (0..30)
            .map(|_| e.encode(Time::ZERO, Rate(1_000_001.0), 30.0).size as u64)
            .sum();
        assert_eq!(
            total, 125_000,
            "one second of 1 Mbit/s is 125000 bytes (carry keeps it exact)"
        );
        let mut e = IdealEncoder::default();
        assert_eq!(
            e.encode(Time::ZERO, Rate(9e6), 30.0),
            EncodedFrame {
                size: 37_500,
                keyframe: true
            }
        );
        assert!(!e.encode(Time::ZERO, Rate(9e6), 30.0).keyframe);
    }
}
