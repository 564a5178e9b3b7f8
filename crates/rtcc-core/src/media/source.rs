//! The camera: frame capture instants at a fixed frame rate, with optional seeded jitter.
//!
//! Two models of the jitter ([`JitterModel`]):
//!
//! - `grid` (default): frame `i` is captured at `start + i / fps + u_i`, `u_i` uniform in
//!   `[0, jitter)`. The frame clock never drifts: two flows keep their relative phase to within
//!   `jitter` forever.
//! - `walk`: each frame interval is `1 / fps + u_i − jitter / 2`, i.e. the next frame is timed
//!   from the previous one (a render loop that sleeps one interval). The mean frame rate is
//!   exact, but the phase performs a random walk (standard deviation `jitter·√(i/12)` after `i`
//!   frames), so flows that start in step drift apart and every relative phase is visited.
//!
//! Jitter models the sub-millisecond irregularity of real capture and encode pipelines (SQP §5.2
//! adds 1 ms of frame-timing jitter "to avoid the impact of frame alignment"; `docs/sqp.md`
//! shows that only the `walk` reading achieves that). It must stay below the frame interval so
//! frames never swap order.

use crate::units::{Duration, Time};
use rand_chacha::ChaCha8Rng;
use rand_core::{Rng, SeedableRng};

/// How frame-timing jitter accumulates (see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum JitterModel {
    /// Jitter around a fixed grid of capture instants.
    #[default]
    Grid,
    /// Zero-mean jitter on each frame interval: the frame clock's phase random-walks.
    Walk,
}

impl JitterModel {
    pub const NAMES: &'static [&'static str] = &["grid", "walk"];

    pub fn parse(s: &str) -> Result<JitterModel, String> {
        match s {
            "grid" => Ok(JitterModel::Grid),
            "walk" => Ok(JitterModel::Walk),
            _ => Err(format!(
                "unknown frame jitter model {s:?}; valid models: {}",
                Self::NAMES.join(", ")
            )),
        }
    }
}

pub struct FrameSource {
    start: Time,
    fps: f64,
    jitter: Duration,
    next_index: u64,
    rng: ChaCha8Rng,
    model: JitterModel,
    /// The previous capture instant (`walk`).
    previous: Time,
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
            model: JitterModel::Grid,
            previous: start,
        }
    }

    /// Use `model` for the jitter (the default is [`JitterModel::Grid`]).
    pub fn with_model(mut self, model: JitterModel) -> FrameSource {
        self.model = model;
        self
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
        let jitter = if self.jitter.0 > 0 {
            Duration(self.rng.next_u64() % self.jitter.0)
        } else {
            Duration::ZERO
        };
        let t = match self.model {
            JitterModel::Grid => self.start + Duration::from_secs_f64(i as f64 / self.fps) + jitter,
            JitterModel::Walk if i == 0 => self.start + jitter,
            JitterModel::Walk => {
                // previous + 1/fps + u − jitter/2, with u − jitter/2 ≥ −jitter/2 > −1/fps/2.
                let interval = Duration::from_secs_f64(1.0 / self.fps);
                Time((self.previous + interval + jitter).0 - self.jitter.0 / 2)
            }
        };
        self.previous = t;
        (i, t)
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

    #[test]
    fn a_walking_frame_clock_keeps_its_rate_but_drifts_in_phase() {
        let fps = 60.0;
        let jitter = Duration::from_millis(1);
        let mut w = FrameSource::new(Time::ZERO, fps, jitter, 3).with_model(JitterModel::Walk);
        let (mut prev, mut max_offset) = (None, 0.0f64);
        let n = 36_000; // ten minutes
        let mut last = Time::ZERO;
        for i in 0..n {
            let (_, t) = w.next_capture();
            if let Some(p) = prev {
                let gap = (t - p).as_secs_f64();
                // Each interval is 1/fps ± jitter/2.
                assert!((gap - 1.0 / fps).abs() <= 0.5e-3 + 1e-9, "{gap}");
            }
            let offset = t.as_secs_f64() - i as f64 / fps;
            max_offset = max_offset.max(offset.abs());
            prev = Some(t);
            last = t;
        }
        // The phase wanders (its standard deviation after 36 000 frames is 1 ms·√3000 ≈ 55 ms)
        // far beyond the ±1 ms a grid allows, while the frame rate stays 60 fps within 0.1 %.
        assert!(max_offset > 5e-3, "max phase offset {max_offset}");
        let rate = (n - 1) as f64 / last.as_secs_f64();
        assert!((rate / fps - 1.0).abs() < 1e-3, "{rate}");
        assert_eq!(JitterModel::parse("walk"), Ok(JitterModel::Walk));
        assert!(JitterModel::parse("brownian")
            .unwrap_err()
            .contains("grid, walk"));
    }
}
