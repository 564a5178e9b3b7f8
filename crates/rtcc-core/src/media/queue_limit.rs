//! Keeping the sender's own queue short, for every controller, as libwebrtc does.
//!
//! A controller sets the rates, but the encoder can still produce more than the pacer lets out
//! (it overshoots, its lowest quality costs more than the target, a loss burst adds repairs), and
//! then frames wait in the sender for seconds. libwebrtc bounds that wait twice:
//!
//! - **The pacer drains its queue within a bound** (`PacingController`, `kMaxExpectedQueueLength`
//!   = 2 s, `drain_large_queues`): the pacing rate is raised to at least
//!   `queued bytes / max(1 ms, 2 s − average wait of the queued packets)`.
//! - **The encoder backs off while the queue is long** (goog_cc's pacer pushback,
//!   `GoogCcNetworkController::MaybeTriggerOnNetworkChanged` under
//!   `WebRTC-PacerPushbackExperiment`): with the queue's expected drain time `q` (queued bytes at
//!   the pacing rate), the encoder's share of the target is `r ← min(r, 1 − q / 1 s)` once `q`
//!   passes 50 ms, and `r` returns to 1 only when the queue is empty. rtcc skips the frame when
//!   `r` reaches 0 (a second of queue): the frame dropper.
//!
//! The latch (`min`) makes the back-off last until the queue has really drained, so the encoder
//! does not refill it the moment it shrinks.

use crate::units::{Duration, Rate};

/// libwebrtc `PacingController::kMaxExpectedQueueLength`.
pub const MAX_EXPECTED_QUEUE: Duration = Duration(2_000_000_000);
/// Queue drain time at which the encoder gets nothing (pacer pushback's 1000 ms).
pub const PUSHBACK_FULL: Duration = Duration(1_000_000_000);
/// Pushback starts above this expected drain time (libwebrtc's 50 ms).
pub const PUSHBACK_START: Duration = Duration(50_000_000);

/// The pacing rate that empties `queued_bytes` within [`MAX_EXPECTED_QUEUE`] of the queued
/// packets' average wait (`None` when the queue is empty).
pub fn drain_rate(queued_bytes: u64, average_wait: Duration) -> Option<Rate> {
    if queued_bytes == 0 {
        return None;
    }
    let left = MAX_EXPECTED_QUEUE
        .0
        .saturating_sub(average_wait.0)
        .max(1_000_000);
    Some(Rate(queued_bytes as f64 * 8.0 / (left as f64 / 1e9)))
}

/// The encoder's share of the target while the pacer queue is long.
#[derive(Debug, Clone, Copy)]
pub struct Pushback {
    ratio: f64,
}

impl Default for Pushback {
    fn default() -> Self {
        Pushback { ratio: 1.0 }
    }
}

impl Pushback {
    /// Update with the queue at a frame capture: `queued_bytes` waiting to leave at `rate`.
    /// Returns the share of the target the encoder gets (0: skip the frame).
    pub fn on_frame(&mut self, queued_bytes: u64, rate: Rate) -> f64 {
        if queued_bytes == 0 {
            self.ratio = 1.0;
            return self.ratio;
        }
        if rate.bps() <= 0.0 {
            return self.ratio;
        }
        let drain = queued_bytes as f64 * 8.0 / rate.bps();
        if drain > PUSHBACK_START.as_secs_f64() {
            let r = 1.0 - drain / PUSHBACK_FULL.as_secs_f64();
            self.ratio = self.ratio.min(r).max(0.0);
        }
        self.ratio
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pacer_must_drain_within_two_seconds_of_the_average_wait() {
        assert_eq!(drain_rate(0, Duration::ZERO), None);
        // 250 kB queued for 1 s on average: 1 s left, so at least 2 Mbit/s.
        let r = drain_rate(250_000, Duration::from_millis(1000)).unwrap();
        assert!((r.bps() - 2e6).abs() < 1e-6, "{r:?}");
        // Past the bound: as fast as 1 ms allows.
        let r = drain_rate(1000, Duration::from_millis(2500)).unwrap();
        assert!((r.bps() - 8e6).abs() < 1e-6);
    }

    #[test]
    fn pushback_follows_the_queue_and_releases_only_when_it_is_empty() {
        let mut p = Pushback::default();
        let rate = Rate(1e6); // 125 kB/s
        assert_eq!(p.on_frame(5_000, rate), 1.0, "40 ms of queue: no pushback");
        assert!(
            (p.on_frame(62_500, rate) - 0.5).abs() < 1e-12,
            "500 ms: half"
        );
        assert!(
            (p.on_frame(12_500, rate) - 0.5).abs() < 1e-12,
            "a shorter queue keeps the latch"
        );
        assert_eq!(p.on_frame(150_000, rate), 0.0, "over a second: skip");
        assert_eq!(p.on_frame(0, rate), 1.0, "an empty queue releases it");
    }
}
