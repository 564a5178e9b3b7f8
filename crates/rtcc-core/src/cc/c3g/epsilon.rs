//! ε, the noise filter of Eq. 1's first condition (λ̄ − μ̄ > ε, §V-A): λ and μ are measured at
//! different ends, so their difference holds noise (a frame sent at once arrives spread over its
//! transmission) even with no queue growing. [`Epsilon`] holds the largest λ̄ − μ̄ of the calm
//! periods of its memory (what counts as calm is decided by the controller's period, in
//! `c3g`'s `tick`), and never less than [`epsilon_floor`]: a share of λ̄ and `EDGE_PACKETS`
//! per rate window (ours).

use crate::units::{Duration, Time};
use std::collections::VecDeque;

/// Packets a rate window's λ̄ − μ̄ is uncertain by, one at each edge (ε's absolute floor): λ̄'s
/// window is moved back by the base one-way delay, so behind a standing queue μ̄'s window holds
/// what was sent a queueing delay earlier, and the two can differ by a packet (at low rates, a
/// whole frame) at either edge.
const EDGE_PACKETS: f64 = 2.0;

/// ε, the noise filter of Eq. 1's first condition (§V-A): "periodically updated to hold the
/// maximum value of λ(t) − μ(t) reported without signs of an increasing RTVL". It holds the
/// largest such difference of the last `memory` (a span of time: while RTVL keeps rising nothing
/// is learned, and ε falls back to its floor rather than keep a value from long ago).
#[derive(Debug, Clone)]
pub struct Epsilon {
    calm: VecDeque<(Time, f64)>,
    memory: Duration,
    /// The value last returned (bit/s), for the logs.
    pub current: f64,
}

impl Epsilon {
    pub fn new(memory: Duration) -> Epsilon {
        Epsilon {
            calm: VecDeque::new(),
            memory,
            current: 0.0,
        }
    }

    /// A calm period's λ̄ − μ̄ (bit/s).
    pub fn learn(&mut self, now: Time, diff: f64) {
        self.calm.push_back((now, diff));
    }

    /// ε at `now`: the largest difference of the memory, at least `floor` (bit/s); older ones
    /// are forgotten.
    pub fn value(&mut self, now: Time, floor: f64) -> f64 {
        while self
            .calm
            .front()
            .is_some_and(|&(t, _)| t + self.memory <= now)
        {
            self.calm.pop_front();
        }
        self.current = self.calm.iter().map(|c| c.1).fold(floor, f64::max);
        self.current
    }
}

/// ε's floor (bit/s): `share` of λ̄, and at least [`EDGE_PACKETS`] of the largest packet per
/// rate `window`.
pub fn epsilon_floor(share: f64, sent_bps: f64, largest_packet: u32, window: Duration) -> f64 {
    let edges = EDGE_PACKETS * largest_packet as f64 * 8.0 / window.as_secs_f64();
    (share * sent_bps).max(edges)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::c3g::tests::ms;

    #[test]
    fn epsilon_holds_the_largest_calm_difference_of_its_memory_then_its_floor() {
        let mut e = Epsilon::new(Duration::from_millis(2500));
        e.learn(ms(1000), 400e3);
        e.learn(ms(1050), 100e3);
        assert_eq!(e.value(ms(3000), 50e3), 400e3);
        // No calm period since: at 3.5 s the difference learned at 1 s is 2.5 s old.
        assert_eq!(e.value(ms(3500), 50e3), 100e3);
        assert_eq!(
            e.value(ms(3550), 50e3),
            50e3,
            "nothing calm left: the floor"
        );
    }

    #[test]
    fn epsilons_floor_is_two_packets_per_window_at_low_rates_and_2_percent_above() {
        let w = Duration::from_millis(200);
        // 30 kbit/s of 1200-byte packets: 2 × 9600 bit / 0.2 s = 96 kbit/s, not 0.6.
        assert!((epsilon_floor(0.02, 30e3, 1200, w) - 96e3).abs() < 1e-6);
        // 7 Mbit/s: 2 % (140 kbit/s) is the larger.
        assert!((epsilon_floor(0.02, 7e6, 1200, w) - 140e3).abs() < 1e-6);
    }
}
