//! Loss-based control (`webrtc` profile): the sender-side estimate that reacts to packet loss
//! and holds the final target, `min(loss-based, delay-based, max)`.
//!
//! Loss is counted from transport feedback and summarised at most once per second (the video
//! RTCP report interval) into an 8-bit fraction `f = min(255, 256 · lost / expected)`, and only
//! once at least 20 packets are behind it. Then, with `p = f / 256`:
//!
//! - `p ≤ 2 %`: increase to `1.08 · (the smallest target of the last second) + 1 kbps`, i.e.
//!   about 8 % per second (anchored on the minimum, so a report after a quiet second ramps at
//!   once);
//! - `2 % < p ≤ 10 %`: hold;
//! - `p > 10 %`: `target · (512 − f) / 512`, i.e. `(1 − p/2)` — at most once per fresh report
//!   and once per `300 ms + RTT`.
//!
//! The update also runs on every 25 ms process tick, so the increase is smooth; a report older
//! than 6 s (1.2 × the 5 s longest RTCP interval) stops it. The result is always clamped to
//! `[min, min(delay-based, max)]`. During the first 2 s after the first loss report, as long as
//! nothing was lost, the target follows the delay-based estimate upward at once (so initial
//! probes can lift it). A probe result resets the target to the probed rate.
//!
//! This is the seed's Eq. (2) as libwebrtc implements it (`goog_cc/send_side_bandwidth_estimation.cc`):
//! `kDefaultLowLossThreshold = 0.02`, `kDefaultHighLossThreshold = 0.1`,
//! `kBweIncreaseInterval = 1000 ms`, `kBweDecreaseInterval = 300 ms`, `kStartPhase = 2000 ms`,
//! `kLimitNumPackets = 20`, `kMaxRtcpFeedbackInterval = 5000 ms`; `goog_cc_network_control.cc`:
//! `kLossUpdateInterval = 1000 ms`. The RTT back-off is not modelled. Loss-based v2 is
//! `loss_based_v2.rs` (`loss_based = "v2"`); once it is ready its proposal replaces the 2 % /
//! 10 % rules here ([`LossBased::update_with`]).

use std::collections::VecDeque;

pub const LOW_LOSS: f64 = 0.02;
pub const HIGH_LOSS: f64 = 0.1;
pub const INCREASE_INTERVAL_MS: f64 = 1000.0;
pub const DECREASE_INTERVAL_MS: f64 = 300.0;
pub const START_PHASE_MS: f64 = 2000.0;
pub const LIMIT_NUM_PACKETS: u32 = 20;
pub const MAX_FEEDBACK_INTERVAL_MS: f64 = 5000.0;

#[derive(Debug, Clone)]
pub struct LossBased {
    min_bps: f64,
    max_bps: f64,
    current: f64,
    delay_limit: f64,
    min_history: VecDeque<(f64, f64)>,
    lost: u32,
    expected: u32,
    fraction: u8,
    last_report_ms: Option<f64>,
    first_report_ms: Option<f64>,
    decreased_since_report: bool,
    last_decrease_ms: Option<f64>,
    rtt_ms: f64,
}

impl LossBased {
    pub fn new(start_bps: f64, min_bps: f64, max_bps: f64) -> Self {
        LossBased {
            min_bps,
            max_bps,
            current: start_bps.clamp(min_bps, max_bps),
            delay_limit: f64::INFINITY,
            min_history: VecDeque::new(),
            lost: 0,
            expected: 0,
            fraction: 0,
            last_report_ms: None,
            first_report_ms: None,
            decreased_since_report: false,
            last_decrease_ms: None,
            rtt_ms: 0.0,
        }
    }

    pub fn target_bps(&self) -> f64 {
        self.current
    }
    /// The last loss fraction, 0..1 (8-bit resolution).
    pub fn fraction_lost(&self) -> f64 {
        self.fraction as f64 / 256.0
    }
    pub fn set_rtt_ms(&mut self, rtt_ms: f64) {
        self.rtt_ms = rtt_ms;
    }

    /// A probe result (or a reset): the target jumps to `bps`, unconstrained by the old history.
    pub fn set_send_bitrate(&mut self, bps: f64) {
        self.delay_limit = f64::INFINITY;
        self.set_target(bps);
        self.min_history.clear();
    }

    /// A rate set from outside (RFC 8699 coupling): the delay-based limit and the target both
    /// become `bps` (within [min, max]), and the increase starts again from it.
    pub fn set_rate(&mut self, bps: f64) {
        self.delay_limit = bps;
        self.set_target(bps);
        self.min_history.clear();
    }

    pub fn update_delay_based(&mut self, bps: f64) {
        self.delay_limit = if bps > 0.0 { bps } else { f64::INFINITY };
        self.set_target(self.current);
    }

    /// The delay-based limit the target is capped by (∞ when none).
    pub fn delay_limit_bps(&self) -> f64 {
        self.delay_limit
    }

    /// Losses since the last call, at most once per second.
    pub fn update_packets_lost(&mut self, lost: u32, expected: u32, now_ms: f64) {
        self.update_packets_lost_with(lost, expected, now_ms, None);
    }

    /// [`Self::update_packets_lost`], with loss-based v2's proposal when it is ready (see
    /// [`Self::update_with`]).
    pub fn update_packets_lost_with(
        &mut self,
        lost: u32,
        expected: u32,
        now_ms: f64,
        v2_bps: Option<f64>,
    ) {
        self.first_report_ms.get_or_insert(now_ms);
        if expected == 0 {
            return;
        }
        self.lost += lost;
        self.expected += expected;
        if self.expected < LIMIT_NUM_PACKETS {
            return;
        }
        self.decreased_since_report = false;
        self.fraction = ((self.lost as u64 * 256) / self.expected as u64).min(255) as u8;
        self.lost = 0;
        self.expected = 0;
        self.last_report_ms = Some(now_ms);
        self.update_with(now_ms, v2_bps);
    }

    fn in_start_phase(&self, now_ms: f64) -> bool {
        self.first_report_ms
            .is_none_or(|t| now_ms - t < START_PHASE_MS)
    }

    /// Re-evaluate the target (on loss reports and every process tick).
    pub fn update(&mut self, now_ms: f64) {
        self.update_with(now_ms, None);
    }

    /// [`Self::update`] where loss-based v2, once ready, proposes `v2_bps`: as in
    /// `SendSideBandwidthEstimation::UpdateEstimate`, the start phase and the wait for a first
    /// loss report come first, then the proposal (clamped like any target) replaces the 2 % /
    /// 10 % rules.
    pub fn update_with(&mut self, now_ms: f64, v2_bps: Option<f64>) {
        if self.fraction == 0 && self.in_start_phase(now_ms) {
            let mut new = self.current;
            if self.delay_limit.is_finite() {
                new = new.max(self.delay_limit);
            }
            if new != self.current {
                self.min_history.clear();
                self.min_history.push_back((now_ms, self.current));
                self.set_target(new);
                return;
            }
        }
        self.update_min_history(now_ms);
        let Some(last) = self.last_report_ms else {
            self.set_target(self.current);
            return;
        };
        if let Some(bps) = v2_bps {
            self.set_target(bps);
            return;
        }
        if now_ms - last >= 1.2 * MAX_FEEDBACK_INTERVAL_MS {
            return;
        }
        let loss = self.fraction as f64 / 256.0;
        if loss <= LOW_LOSS {
            let base = self.min_history.front().map_or(self.current, |v| v.1);
            self.set_target(base * 1.08 + 1000.0);
        } else if loss > HIGH_LOSS
            && !self.decreased_since_report
            && self
                .last_decrease_ms
                .is_none_or(|t| now_ms - t >= DECREASE_INTERVAL_MS + self.rtt_ms)
        {
            self.last_decrease_ms = Some(now_ms);
            self.decreased_since_report = true;
            self.set_target(self.current * (512.0 - self.fraction as f64) / 512.0);
        }
    }

    fn update_min_history(&mut self, now_ms: f64) {
        while self
            .min_history
            .front()
            .is_some_and(|&(t, _)| now_ms - t + 1.0 > INCREASE_INTERVAL_MS)
        {
            self.min_history.pop_front();
        }
        while self
            .min_history
            .back()
            .is_some_and(|&(_, v)| self.current <= v)
        {
            self.min_history.pop_back();
        }
        self.min_history.push_back((now_ms, self.current));
    }

    fn set_target(&mut self, bps: f64) {
        let upper = self.delay_limit.min(self.max_bps);
        self.current = bps.min(upper).max(self.min_bps);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A loss-based estimator past its start phase with a target of 1 Mbps and no delay limit.
    fn settled() -> LossBased {
        let mut l = LossBased::new(1e6, 30e3, 30e6);
        l.update_packets_lost(10, 100, 0.0); // f = 25 (9.8 %): hold
        l.update(2500.0);
        assert_eq!(l.target_bps(), 1e6);
        l
    }

    #[test]
    fn below_2_percent_increases_8_percent_of_the_last_seconds_minimum() {
        let mut l = settled();
        // 1 lost of 100: f = floor(256/100) = 2 (0.78 %) ≤ 2 %.
        l.update_packets_lost(1, 100, 3000.0);
        assert_eq!(l.fraction_lost(), 2.0 / 256.0);
        assert_eq!(l.target_bps(), 1e6 * 1.08 + 1000.0);
        // 100 ms later the minimum of the last second is still 1 Mbps: no compounding.
        l.update(3100.0);
        assert_eq!(l.target_bps(), 1e6 * 1.08 + 1000.0);
        // 5 of 256 = 1.95 % still increases; 6 of 256 = 2.34 % holds.
        l.update_packets_lost(5, 256, 4100.0);
        assert!(l.target_bps() > 1.08e6 + 1000.0);
        let held = l.target_bps();
        l.update_packets_lost(6, 256, 5100.0);
        assert_eq!(l.target_bps(), held);
    }

    #[test]
    fn above_10_percent_decreases_by_half_the_loss_once_per_report_and_interval() {
        let mut l = settled();
        l.set_rtt_ms(100.0);
        // 26 of 256 = 10.16 % > 10 %: × (512 − 26) / 512.
        l.update_packets_lost(26, 256, 3000.0);
        assert_eq!(l.target_bps(), 1e6 * 486.0 / 512.0);
        // Process ticks do not decrease again on the same report.
        l.update(3200.0);
        assert_eq!(l.target_bps(), 1e6 * 486.0 / 512.0);
        // A fresh report 300 ms + RTT later does; 25 of 256 (9.77 %) would only hold.
        l.update_packets_lost(64, 256, 3400.0);
        assert_eq!(l.target_bps(), 1e6 * 486.0 / 512.0 * 448.0 / 512.0);
        let t = l.target_bps();
        l.update_packets_lost(25, 256, 4400.0);
        assert_eq!(l.target_bps(), t);
        // Fewer than 20 packets are accumulated, not judged.
        l.update_packets_lost(10, 10, 5400.0);
        assert_eq!(l.target_bps(), t);
    }

    #[test]
    fn the_target_never_exceeds_the_delay_based_estimate_or_leaves_min_max() {
        let mut l = LossBased::new(300e3, 30e3, 2e6);
        // Start phase without loss: follows a delay-based jump (a probe result) upward.
        l.update_packets_lost(0, 50, 0.0);
        l.update_delay_based(900e3);
        l.update(25.0);
        assert_eq!(l.target_bps(), 900e3);
        l.update_delay_based(5e6);
        l.update(50.0);
        assert_eq!(l.target_bps(), 2e6, "max");
        l.update_delay_based(600e3);
        assert_eq!(l.target_bps(), 600e3);
        l.update_delay_based(1e3);
        assert_eq!(l.target_bps(), 30e3, "min");
    }
}
