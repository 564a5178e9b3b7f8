//! The probe controller (`webrtc` profile): decides when to send bandwidth probes and at which
//! rates. Probes let GCC find capacity faster than its 8 %/s increase: a short cluster sent at
//! a higher rate is received at the bottleneck's rate if that is lower (`probe_estimator.rs`).
//!
//! - Initial exponential probing: as the call starts, two clusters at 3× and 6× the start
//!   bitrate; while a result exceeds 70 % of the last probed rate, probe again at 2× the new
//!   estimate. A result must come within 1 s, after which probing is complete.
//! - ALR probing: while the sender is application limited (the encoder sends much less than
//!   the estimate, `alr.rs`), probe at 2× the estimate every 5 s, so the estimate is not
//!   stuck at what the application happened to send. libwebrtc enables this periodic probing
//!   only for streams that ask for it (screen share, field trials): off by default here too.
//! - Recovery: after a large drop (to below 66 % of the estimate) followed by the end of an
//!   under-use, if the flow is (or was within 3 s) application limited and the drop is under
//!   5 s old, one probe at 85 % of the rate before the drop, at most every 5 s.
//!
//! Every probe is capped at the maximum bitrate (a capped probe does not probe further). Each
//! cluster is `min_probe_duration × rate` bytes in at least 5 packets. When no media waits, its
//! padding packets are media-sized: Chrome probes with RTX payload padding, i.e. re-sends of
//! recent media packets (`RTPSender::GeneratePadding`). Equal sizes also keep the probe estimate
//! unbiased: it drops the first packet from the receive size and the last from the send size,
//! so a cluster of one large media packet and small padding would under-read the path.
//!
//! Constants (libwebrtc `goog_cc/probe_controller.cc`, `modules/pacing/bitrate_prober.cc`):
//! `first_exponential_probe_scale = 3.0`, `second_exponential_probe_scale = 6.0`,
//! `further_exponential_probe_scale = 2`, `further_probe_threshold = 0.7`,
//! `kMaxWaitingTimeForProbingResult = 1 s`, `alr_probing_interval = 5 s`, `alr_probe_scale = 2`,
//! `kBitrateDropThreshold = 0.66`, `kBitrateDropTimeout = 5 s`, `kProbeFractionAfterDrop = 0.85`,
//! `kAlrEndedTimeout = 3 s`, `kMinTimeBetweenAlrProbes = 5 s`, `kProbeUncertainty = 0.05`,
//! `min_probe_packets_sent = 5`, `min_probe_duration = 15 ms`.

use crate::cc::ProbeCluster;

pub const FIRST_SCALE: f64 = 3.0;
pub const SECOND_SCALE: f64 = 6.0;
pub const FURTHER_SCALE: f64 = 2.0;
pub const FURTHER_THRESHOLD: f64 = 0.7;
pub const MAX_WAIT_MS: f64 = 1000.0;
pub const ALR_INTERVAL_MS: f64 = 5000.0;
pub const ALR_SCALE: f64 = 2.0;
pub const DROP_THRESHOLD: f64 = 0.66;
pub const DROP_TIMEOUT_MS: f64 = 5000.0;
pub const FRACTION_AFTER_DROP: f64 = 0.85;
pub const ALR_ENDED_TIMEOUT_MS: f64 = 3000.0;
pub const MIN_TIME_BETWEEN_ALR_PROBES_MS: f64 = 5000.0;
pub const PROBE_UNCERTAINTY: f64 = 0.05;
pub const MIN_PROBE_PACKETS: u32 = 5;
pub const MIN_PROBE_DURATION_MS: f64 = 15.0;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Init,
    Waiting,
    Complete,
}

#[derive(Debug, Clone)]
pub struct ProbeController {
    state: State,
    max_bps: f64,
    max_payload: u32,
    alr_probing: bool,
    estimate_bps: f64,
    min_to_probe_further: f64,
    last_probing_ms: f64,
    alr_start_ms: Option<f64>,
    alr_end_ms: Option<f64>,
    last_large_drop_ms: f64,
    bitrate_before_drop: f64,
    last_drop_probe_ms: f64,
    next_id: u32,
}

impl ProbeController {
    /// Created at `now_ms` with the start bitrate; returns the initial clusters (if
    /// `initial_probing`).
    pub fn new(
        start_bps: f64,
        max_bps: f64,
        max_payload: u32,
        initial_probing: bool,
        alr_probing: bool,
        now_ms: f64,
    ) -> (Self, Vec<ProbeCluster>) {
        let mut p = ProbeController {
            state: State::Init,
            max_bps,
            max_payload,
            alr_probing,
            estimate_bps: start_bps,
            min_to_probe_further: f64::INFINITY,
            last_probing_ms: now_ms,
            alr_start_ms: None,
            alr_end_ms: None,
            last_large_drop_ms: now_ms,
            bitrate_before_drop: 0.0,
            last_drop_probe_ms: now_ms,
            next_id: 0,
        };
        let probes = if initial_probing {
            let rates = [FIRST_SCALE * start_bps, SECOND_SCALE * start_bps];
            p.initiate(now_ms, &rates, true)
        } else {
            p.state = State::Complete;
            Vec::new()
        };
        (p, probes)
    }

    /// The probe cluster for `rate`.
    pub fn cluster(&self, id: u32, rate_bps: f64) -> ProbeCluster {
        ProbeCluster {
            id,
            rate: crate::units::Rate(rate_bps),
            min_bytes: (rate_bps * MIN_PROBE_DURATION_MS / 1000.0 / 8.0).floor() as u32,
            min_packets: MIN_PROBE_PACKETS,
            padding_size: self.max_payload,
        }
    }

    fn initiate(&mut self, now_ms: f64, rates: &[f64], mut further: bool) -> Vec<ProbeCluster> {
        let mut out = Vec::with_capacity(rates.len());
        for &r in rates {
            let r = if r > self.max_bps {
                further = false;
                self.max_bps
            } else {
                r
            };
            out.push(self.cluster(self.next_id, r));
            self.next_id += 1;
        }
        self.last_probing_ms = now_ms;
        if further {
            self.state = State::Waiting;
            self.min_to_probe_further = rates.last().copied().unwrap_or(0.0) * FURTHER_THRESHOLD;
        } else {
            self.state = State::Complete;
            self.min_to_probe_further = f64::INFINITY;
        }
        out
    }

    /// The target changed to `bps`.
    pub fn set_estimate(&mut self, bps: f64, now_ms: f64) -> Vec<ProbeCluster> {
        if bps < DROP_THRESHOLD * self.estimate_bps {
            self.last_large_drop_ms = now_ms;
            self.bitrate_before_drop = self.estimate_bps;
        }
        self.estimate_bps = bps;
        if self.state == State::Waiting && bps > self.min_to_probe_further {
            return self.initiate(now_ms, &[FURTHER_SCALE * bps], true);
        }
        Vec::new()
    }

    /// The application-limited region started at the given time, or is over (`None`).
    pub fn set_alr_start(&mut self, start_ms: Option<f64>) {
        self.alr_start_ms = start_ms;
    }
    pub fn set_alr_ended(&mut self, now_ms: f64) {
        self.alr_end_ms = Some(now_ms);
    }

    /// The periodic tick: result timeouts and ALR probes.
    pub fn process(&mut self, now_ms: f64) -> Vec<ProbeCluster> {
        if now_ms - self.last_probing_ms > MAX_WAIT_MS && self.state == State::Waiting {
            self.state = State::Complete;
            self.min_to_probe_further = f64::INFINITY;
        }
        if self.estimate_bps <= 0.0 || self.state != State::Complete {
            return Vec::new();
        }
        if let (true, Some(start)) = (self.alr_probing, self.alr_start_ms) {
            if now_ms >= start.max(self.last_probing_ms) + ALR_INTERVAL_MS {
                return self.initiate(now_ms, &[ALR_SCALE * self.estimate_bps], true);
            }
        }
        Vec::new()
    }

    /// The detector recovered from an under-use after a drop: maybe probe the old rate.
    pub fn request_probe(&mut self, now_ms: f64) -> Vec<ProbeCluster> {
        let in_alr = self.alr_start_ms.is_some();
        let alr_ended_recently = self
            .alr_end_ms
            .is_some_and(|t| now_ms - t < ALR_ENDED_TIMEOUT_MS);
        if (in_alr || alr_ended_recently) && self.state == State::Complete {
            let suggested = FRACTION_AFTER_DROP * self.bitrate_before_drop;
            if (1.0 - PROBE_UNCERTAINTY) * suggested > self.estimate_bps
                && now_ms - self.last_large_drop_ms < DROP_TIMEOUT_MS
                && now_ms - self.last_drop_probe_ms > MIN_TIME_BETWEEN_ALR_PROBES_MS
            {
                self.last_drop_probe_ms = now_ms;
                return self.initiate(now_ms, &[suggested], false);
            }
        }
        Vec::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn initial_probes_at_3x_and_6x_then_2x_while_results_pass_70_percent() {
        let (mut p, probes) = ProbeController::new(300e3, 30e6, 1200, true, false, 0.0);
        let rates: Vec<f64> = probes.iter().map(|c| c.rate.bps()).collect();
        assert_eq!(rates, vec![900e3, 1.8e6]);
        // Cluster sizes: 15 ms of the rate (⌊900 000 · 15 / 8000⌋ bytes), at least 5 packets,
        // media-sized padding.
        assert_eq!(
            (probes[0].id, probes[0].min_bytes, probes[0].min_packets),
            (0, 1687, 5)
        );
        assert_eq!(probes[0].padding_size, 1200);
        assert_eq!((probes[1].id, probes[1].min_bytes), (1, 3375));
        // 1.2 Mbps is not above 0.7 · 1.8 Mbps = 1.26 Mbps: no further probe.
        assert!(p.set_estimate(1.2e6, 100.0).is_empty());
        // 1.5 Mbps is: probe 3 Mbps, then 2.2 Mbps is above 0.7 · 3 = 2.1: probe 4.4 Mbps.
        let next = p.set_estimate(1.5e6, 150.0);
        assert_eq!((next[0].id, next[0].rate.bps()), (2, 3e6));
        let next = p.set_estimate(2.2e6, 300.0);
        assert_eq!(next[0].rate.bps(), 4.4e6);
        // No result within 1 s ends the exponential phase.
        p.process(1301.0);
        assert!(p.set_estimate(10e6, 1400.0).is_empty());
        assert_eq!(p.cluster(9, 30e6).min_bytes, 56_250);
    }

    #[test]
    fn probes_are_capped_at_the_max_and_then_stop() {
        let (mut p, probes) = ProbeController::new(300e3, 1e6, 1200, true, false, 0.0);
        let rates: Vec<f64> = probes.iter().map(|c| c.rate.bps()).collect();
        assert_eq!(rates, vec![900e3, 1e6]);
        assert!(p.set_estimate(1e6, 100.0).is_empty());
        let (_, none) = ProbeController::new(300e3, 1e6, 1200, false, false, 0.0);
        assert!(none.is_empty());
    }

    #[test]
    fn alr_probes_every_5_s_at_twice_the_estimate_when_enabled() {
        let (mut p, _) = ProbeController::new(300e3, 30e6, 1200, false, true, 0.0);
        p.set_estimate(1e6, 0.0);
        assert!(p.process(10_000.0).is_empty(), "not application limited");
        p.set_alr_start(Some(10_000.0));
        assert!(p.process(14_999.0).is_empty());
        let probe = p.process(15_000.0);
        assert_eq!(probe[0].rate.bps(), 2e6);
        // Waiting for the result; 1 s later probing is complete again and the next ALR probe
        // is due 5 s after this one.
        assert!(p.process(16_100.0).is_empty());
        assert!(p.process(19_999.0).is_empty());
        assert_eq!(p.process(20_000.0)[0].rate.bps(), 2e6);
        let (mut off, _) = ProbeController::new(300e3, 30e6, 1200, false, false, 0.0);
        off.set_alr_start(Some(0.0));
        assert!(off.process(60_000.0).is_empty());
    }
}
