//! AIMD rate control and the link-capacity estimator (`webrtc` profile): the delay-based
//! estimate A, driven by the detector's signal and the acknowledged rate R.
//!
//! The state machine is the seed's Fig. 2 (Hold / Increase / Decrease): normal moves Hold to
//! Increase, over-use moves any state to Decrease, under-use moves any state to Hold (wait for
//! the queue to drain), and a decrease is followed by Hold.
//!
//! - Increase, limited to `1.5 · R + 10 kbps` (no increase above it, so the estimate cannot run
//!   away from what the encoder actually sends):
//!   - far from any known capacity: multiplicative, `A += max(A · (1.08^min(Δt, 1 s) − 1),
//!     1 kbps)`, i.e. 8 % per second;
//!   - once a link capacity is known: additive, `A += Δt · max(4 kbps, s / (2 · (RTT + 100 ms)))`
//!     per second, with `s` the average packet of a 30 fps frame at rate A cut into 1200-byte
//!     packets: about one packet per two response times.
//! - Decrease: `A ← β · R` with β = 0.85 (if that is above A while a capacity is known,
//!   `β · capacity`), never upward; R updates the capacity estimate.
//!
//! Link capacity: an exponential average (weight 0.05) of R at each over-use, with a normalised
//! variance `v ← 0.95 v + 0.05 (est − R)² / est` clamped to [0.4, 2.5] kbit/s; its bounds are
//! `est ± 3 √(v · est)`. When R rises above the upper bound the estimate is dropped (the link got
//! faster: back to multiplicative increase); when R at an over-use is below the lower bound it
//! is restarted from R.
//!
//! Constants (libwebrtc `remote_bitrate_estimator/aimd_rate_control.cc`,
//! `goog_cc/link_capacity_estimator.cc`): `kDefaultBackoffFactor = 0.85`, `kDefaultRtt = 200 ms`,
//! multiplicative 1.08 with ≥ 1000 bps, `kMinIncreaseRateBpsPerSecond = 4000`, 30 fps frames of
//! 1200-byte packets, response time `2 · (RTT + 100 ms)`, increase limit `1.5 · R + 10 kbps`,
//! reduce-further interval RTT clamped to [10, 200] ms or R < A/2; capacity α = 0.05, deviation
//! clamp [0.4, 2.5], initial deviation 0.4, bounds ±3σ.

use super::overuse::Usage;

pub const DEFAULT_RTT_MS: f64 = 200.0;
pub const MULTIPLICATIVE_FACTOR: f64 = 1.08;
pub const MIN_MULTIPLICATIVE_INCREASE_BPS: f64 = 1000.0;
pub const MIN_ADDITIVE_RATE_BPS_PER_S: f64 = 4000.0;
pub const INCREASE_LIMIT_FACTOR: f64 = 1.5;
pub const INCREASE_LIMIT_OFFSET_BPS: f64 = 10_000.0;

/// State of the rate controller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AimdState {
    Hold,
    Increase,
    Decrease,
}

/// The link-capacity estimator (kbit/s internally, as in libwebrtc).
#[derive(Debug, Clone)]
pub struct LinkCapacity {
    estimate_kbps: Option<f64>,
    deviation_kbps: f64,
}

impl Default for LinkCapacity {
    fn default() -> Self {
        LinkCapacity {
            estimate_kbps: None,
            deviation_kbps: 0.4,
        }
    }
}

impl LinkCapacity {
    pub fn estimate_bps(&self) -> Option<f64> {
        self.estimate_kbps.map(|k| k * 1000.0)
    }
    fn deviation(&self, est: f64) -> f64 {
        (self.deviation_kbps * est).sqrt()
    }
    pub fn upper_bound_bps(&self) -> f64 {
        self.estimate_kbps
            .map_or(f64::INFINITY, |e| (e + 3.0 * self.deviation(e)) * 1000.0)
    }
    pub fn lower_bound_bps(&self) -> f64 {
        self.estimate_kbps
            .map_or(0.0, |e| (e - 3.0 * self.deviation(e)) * 1000.0)
    }
    pub fn reset(&mut self) {
        self.estimate_kbps = None;
    }
    pub fn on_overuse(&mut self, acked_bps: f64) {
        let ack = acked_bps / 1000.0;
        const ALPHA: f64 = 0.05;
        let est = match self.estimate_kbps {
            None => ack,
            Some(e) => (1.0 - ALPHA) * e + ALPHA * ack,
        };
        self.estimate_kbps = Some(est);
        let err = est - ack;
        self.deviation_kbps = ((1.0 - ALPHA) * self.deviation_kbps
            + ALPHA * err * err / est.max(1.0))
        .clamp(0.4, 2.5);
    }
}

#[derive(Debug, Clone)]
pub struct Aimd {
    beta: f64,
    min_bps: f64,
    current: f64,
    latest_throughput: f64,
    state: AimdState,
    last_change_ms: Option<f64>,
    rtt_ms: f64,
    link: LinkCapacity,
}

impl Aimd {
    pub fn new(start_bps: f64, min_bps: f64, beta: f64) -> Self {
        Aimd {
            beta,
            min_bps,
            current: start_bps.max(min_bps),
            latest_throughput: start_bps,
            state: AimdState::Hold,
            last_change_ms: None,
            rtt_ms: DEFAULT_RTT_MS,
            link: LinkCapacity::default(),
        }
    }

    pub fn estimate_bps(&self) -> f64 {
        self.current
    }
    pub fn state(&self) -> AimdState {
        self.state
    }
    pub fn link_capacity(&self) -> &LinkCapacity {
        &self.link
    }
    pub fn set_rtt_ms(&mut self, rtt_ms: f64) {
        self.rtt_ms = rtt_ms;
    }

    /// Jump to `bps` (a probe result, or halving before any acknowledged rate exists).
    pub fn set_estimate(&mut self, bps: f64, now_ms: f64) {
        self.current = bps.max(self.min_bps);
        self.last_change_ms = Some(now_ms);
    }

    /// Replace the estimate from outside (RFC 8699 coupling) keeping the timing of the last
    /// change: unlike [`Self::set_estimate`], the next decrease and the increase's elapsed time
    /// stay where the controller's own changes put them (a coupled flow gets a new rate at every
    /// update of every flow of its group, which would otherwise hold off its decreases for good).
    pub fn replace_estimate(&mut self, bps: f64) {
        self.current = bps.max(self.min_bps);
    }

    /// Whether another decrease is due: one RTT (clamped to [10, 200] ms) since the last change,
    /// or the throughput fell below half the estimate.
    pub fn time_to_reduce_further(&self, now_ms: f64, throughput_bps: f64) -> bool {
        let interval = self.rtt_ms.clamp(10.0, 200.0);
        self.last_change_ms.is_none_or(|t| now_ms - t >= interval)
            || throughput_bps < 0.5 * self.current
    }

    /// Over-use before any acknowledged rate: halve at most every interval.
    pub fn initial_time_to_reduce_further(&self, now_ms: f64) -> bool {
        self.time_to_reduce_further(now_ms, self.current / 2.0 - 1.0)
    }

    /// Additive increase rate near the capacity, bps per second.
    pub fn near_max_increase_rate(&self) -> f64 {
        let frame_bytes = self.current / 30.0 / 8.0;
        let packets = (frame_bytes / 1200.0).ceil().max(1.0);
        let packet_bits = frame_bytes / packets * 8.0;
        let response_s = 2.0 * (self.rtt_ms + 100.0) / 1000.0;
        (packet_bits / response_s).max(MIN_ADDITIVE_RATE_BPS_PER_S)
    }

    /// One update with the detector's signal and the acknowledged rate (if known).
    pub fn update(&mut self, usage: Usage, throughput_bps: Option<f64>, now_ms: f64) -> f64 {
        let throughput = throughput_bps.unwrap_or(self.latest_throughput);
        if let Some(t) = throughput_bps {
            self.latest_throughput = t;
        }
        self.state = match (usage, self.state) {
            (Usage::Normal, AimdState::Hold) => {
                self.last_change_ms = Some(now_ms);
                AimdState::Increase
            }
            (Usage::Normal, s) => s,
            (Usage::Overusing, _) => AimdState::Decrease,
            (Usage::Underusing, _) => AimdState::Hold,
        };
        let mut new = None;
        match self.state {
            AimdState::Hold => {}
            AimdState::Increase => {
                if throughput > self.link.upper_bound_bps() {
                    self.link.reset();
                }
                let limit = INCREASE_LIMIT_FACTOR * throughput + INCREASE_LIMIT_OFFSET_BPS;
                if self.current < limit {
                    let increased = if self.link.estimate_bps().is_some() {
                        let dt = self.last_change_ms.map_or(0.0, |t| (now_ms - t) / 1000.0);
                        self.current + self.near_max_increase_rate() * dt
                    } else {
                        let alpha = match self.last_change_ms {
                            Some(t) => MULTIPLICATIVE_FACTOR.powf(((now_ms - t) / 1000.0).min(1.0)),
                            None => MULTIPLICATIVE_FACTOR,
                        };
                        self.current
                            + (self.current * (alpha - 1.0)).max(MIN_MULTIPLICATIVE_INCREASE_BPS)
                    };
                    new = Some(increased.min(limit));
                }
                self.last_change_ms = Some(now_ms);
            }
            AimdState::Decrease => {
                let mut decreased = throughput * self.beta;
                if decreased > self.current {
                    if let Some(cap) = self.link.estimate_bps() {
                        decreased = self.beta * cap;
                    }
                }
                if decreased < self.current {
                    new = Some(decreased);
                }
                if throughput < self.link.lower_bound_bps() {
                    self.link.reset();
                }
                self.link.on_overuse(throughput);
                self.state = AimdState::Hold;
                self.last_change_ms = Some(now_ms);
            }
        }
        self.current = new.unwrap_or(self.current).max(self.min_bps);
        self.current
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overuse_decreases_to_085_of_the_acknowledged_rate_then_holds() {
        let mut a = Aimd::new(2e6, 30e3, 0.85);
        let v = a.update(Usage::Overusing, Some(1.5e6), 1000.0);
        assert_eq!(v, 0.85 * 1.5e6);
        assert_eq!(a.state(), AimdState::Hold);
        assert_eq!(a.link_capacity().estimate_bps(), Some(1.5e6));
        // Never upward on over-use: with R above A/0.85 the estimate stays (the capacity
        // estimate, 1.5 Mbps, gives 0.85 · 1.5 Mbps = A itself).
        let before = a.estimate_bps();
        assert_eq!(a.update(Usage::Overusing, Some(2e6), 1300.0), before);
        // Not again within one RTT (200 ms by default) unless R fell below A/2.
        assert!(!a.time_to_reduce_further(1400.0, 1e6));
        assert!(a.time_to_reduce_further(1500.0, 1e6));
        assert!(a.time_to_reduce_further(1400.0, 0.6e6));
    }

    #[test]
    fn increase_is_multiplicative_without_a_capacity_and_additive_near_it() {
        let mut a = Aimd::new(1e6, 30e3, 0.85);
        a.set_rtt_ms(50.0);
        // Hold → Increase starts the clock (Δt = 0 still adds the 1 kbps minimum); 500 ms later
        // the rate has grown by 1.08^0.5.
        assert_eq!(a.update(Usage::Normal, Some(1e6), 0.0), 1.001e6);
        let v = a.update(Usage::Normal, Some(1e6), 500.0);
        assert!((v - 1.001e6 * 1.08f64.sqrt()).abs() < 1e-6);
        // The 1.5 R + 10 kbps limit: with R = 0.68 Mbps another second of 8 % growth would
        // give 1.0392 · 1.08 Mbps, but the limit is 1.03 Mbps; an estimate already above the
        // limit is left where it is (no decrease without over-use).
        let mut b = Aimd::new(1e6, 30e3, 0.85);
        b.update(Usage::Normal, Some(0.68e6), 0.0);
        assert_eq!(b.update(Usage::Normal, Some(0.68e6), 1000.0), 1.03e6);
        assert_eq!(b.update(Usage::Normal, Some(0.5e6), 2000.0), 1.03e6);
        // After an over-use at 1 Mbps a capacity is known: additive increase. At 850 kbps a
        // frame is 3541.7 bytes = 3 packets of 1180.6 bytes; response time 2 · (50 + 100) ms:
        // 9444.4 bit / 0.3 s = 31.5 kbit/s per second.
        let mut a = Aimd::new(1e6, 30e3, 0.85);
        a.set_rtt_ms(50.0);
        a.update(Usage::Overusing, Some(1e6), 0.0);
        assert_eq!(a.estimate_bps(), 850e3);
        a.update(Usage::Normal, Some(0.85e6), 100.0); // Hold → Increase
        let rate = a.near_max_increase_rate();
        assert!((rate - (850e3 / 30.0 / 3.0) / 0.3).abs() < 1e-6, "{rate}");
        let v = a.update(Usage::Normal, Some(0.85e6), 1100.0);
        assert!((v - (850e3 + rate)).abs() < 1e-6);
        // Throughput above the capacity's upper bound (1 Mbps + 3 √(0.4 · 1000) kbit/s) drops
        // the capacity estimate: multiplicative again.
        a.update(Usage::Normal, Some(1.1e6), 1200.0);
        assert_eq!(a.link_capacity().estimate_bps(), None);
    }
}
