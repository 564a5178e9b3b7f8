//! The camera: frame capture instants at a fixed frame rate, with optional seeded jitter.
//!
//! Frame `i` is captured at `start + i / fps + u_i`, `u_i` uniform in `[0, jitter)`. Jitter models
//! the sub-millisecond irregularity of real capture and encode pipelines (SQP §5.2 adds 1 ms of
//! frame-timing jitter so that flows do not phase-lock); it must stay below the frame interval so
//! frames never swap order.

use crate::units::{Duration, Time};
use rand_chacha::ChaCha8Rng;
use rand_core::{Rng, SeedableRng};

pub struct FrameSource {
    start: Time,
    fps: f64,
    jitter: Duration,
    next_index: u64,
    rng: ChaCha8Rng,
}

impl FrameSource {
    /// `fps` must be positive and `jitter` shorter than the frame interval (checked by callers
    /// that take user input; here it is clamped).
    pub fn new(start: Time, fps: f64, jitter: Duration, seed: u64) -> FrameSource {
        let interval = Duration::from_secs_f64(1.0 / fps);
        FrameSource {
            start,
            fps,
            jitter: jitter.min(Duration(interval.0.saturating_sub(1))),
            next_index: 0,
            rng: ChaCha8Rng::seed_from_u64(seed),
        }
    }

    pub fn fps(&self) -> f64 {
        self.fps
    }

    /// Index of the next frame.
    pub fn next_index(&self) -> u64 {
        self.next_index
    }

    /// The next capture instant (and advance).
    pub fn next_capture(&mut self) -> (u64, Time) {
        let i = self.next_index;
        self.next_index += 1;
        let nominal = self.start + Duration::from_secs_f64(i as f64 / self.fps);
        let jitter = if self.jitter.0 > 0 {
            Duration(self.rng.next_u64() % self.jitter.0)
        } else {
            Duration::ZERO
        };
        (i, nominal + jitter)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn captures_at_the_frame_rate_with_bounded_seeded_jitter() {
        let mut a = FrameSource::new(Time::ZERO, 30.0, Duration::from_millis(1), 7);
        let mut b = FrameSource::new(Time::ZERO, 30.0, Duration::from_millis(1), 7);
        let mut prev = None;
        for i in 0..300 {
            let (ia, ta) = a.next_capture();
            assert_eq!((ia, ta), b.next_capture(), "same seed, same instants");
            let nominal = Time::from_secs_f64(i as f64 / 30.0);
            assert!(ta >= nominal && ta < nominal + Duration::from_millis(1));
            if let Some(p) = prev {
                assert!(ta > p);
            }
            prev = Some(ta);
        }
    }
}
