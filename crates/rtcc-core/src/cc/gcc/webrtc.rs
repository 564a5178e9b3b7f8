//! The `webrtc` profile: send-side GCC as libwebrtc's `GoogCcNetworkController` wires it, driven
//! by transport-wide feedback.
//!
//! On each feedback report (libwebrtc `goog_cc_network_control.cc`,
//! `OnTransportPacketsFeedback`):
//!
//! 1. RTT: the largest `feedback time − send time` of the report is averaged over the last 32
//!    reports for AIMD; the smallest one corrected for the packet's wait at the receiver
//!    (`newest receive − receive`) goes to the loss-based controller.
//! 2. Loss: lost and expected packets are accumulated and handed to the loss-based controller at
//!    most once per second (`kLossUpdateInterval`).
//! 3. The acknowledged-bitrate estimator and the probe estimator take the received packets in
//!    receive order.
//! 4. Delay-based estimate (`delay_based_bwe.cc`): every received packet goes through the
//!    inter-arrival grouping, each complete group through the trendline and the detector (all
//!    reset when no feedback came for 2 s, `kStreamTimeOut`). Then:
//!    - over-using: AIMD decreases to β · acknowledged rate, at most once per RTT; with no
//!      acknowledged rate yet, the estimate halves at most every 200 ms;
//!    - otherwise, a fresh probe result sets the estimate (and resets the loss-based target to
//!      it); else AIMD runs with the signal.
//! 5. The loss-based target is capped by the delay-based estimate; a new target updates the ALR
//!    detector and the probe controller, which may ask for further probes.
//!
//! Every 25 ms (the goog_cc process interval, `kUpdateInterval`) the loss-based controller
//! re-evaluates (its 8 %/s ramp), and the probe controller checks for timeouts and ALR probes.
//! The target is the loss-based target (which is ≤ the delay-based estimate and within
//! [min, max]); the pacing rate is `pacing_factor × target` (`kDefaultPaceMultiplier = 2.5`).
//! Probe clusters are handed to the pacer one at a time through [`Controller::probe`]; every
//! packet sent while one is requested belongs to it, so `on_packet_sent` counts it off and
//! remembers its sequence numbers (to match feedback to the cluster); a cluster not sent within
//! 5 s is dropped (`kProbeClusterTimeoutMs`).
//!
//! With `loss_based = "v2"` (`loss_based_v2.rs`), every report with packets (also one that only
//! lists losses) also goes, with the delay-based limit and the ALR state, to LossBasedBweV2
//! after step 4 (as `UpdateLossBasedEstimator` follows the delay-based update in
//! `goog_cc_network_control.cc`), and the target is re-evaluated at once; whenever the loss-based
//! controller re-evaluates (loss reports, process ticks), V2's proposal replaces the 2 % / 10 %
//! rules once V2 is ready (`send_side_bandwidth_estimation.cc`, `UpdateEstimate`).
//!
//! Not modelled (off by default in libwebrtc or tied to real stacks): congestion-window
//! push-back, network-state estimators, ALR-limited back-off, REMB, the RTT-based back-off, the
//! probe controller's use of the loss-based state, the arrival-clock-offset reset, and the
//! integer-millisecond rounding of receive times.

use super::acked_bitrate::AckedBitrate;
use super::aimd::{Aimd, AimdState};
use super::alr::AlrDetector;
use super::inter_arrival::InterArrival;
use super::loss_based::LossBased;
use super::loss_based_v2::{LossBasedV2, LossBasedV2Config, LossBasedVersion};
use super::overuse::{DetectorConfig, OveruseDetector, Usage};
use super::probe::ProbeController;
use super::probe_estimator::ProbeEstimator;
use super::trendline::Trendline;
use super::GccConfig;
use crate::cc::{Controller, Decision, ProbeCluster};
use crate::packet::{FeedbackReport, PacketResult, SentPacket};
use crate::units::{Duration, Rate, Time};
use std::collections::VecDeque;

pub const PROCESS_INTERVAL: Duration = Duration(25_000_000);
pub const STREAM_TIMEOUT: Duration = Duration(2_000_000_000);
pub const LOSS_UPDATE_INTERVAL: Duration = Duration(1_000_000_000);
pub const RTT_WINDOW: usize = 32;
pub const PROBE_CLUSTER_TIMEOUT: Duration = Duration(5_000_000_000);
/// Clusters remembered for matching feedback to their sizes.
const CLUSTER_MEMORY: usize = 16;

pub struct WebRtcGcc {
    pacing_factor: f64,
    inter_arrival: InterArrival,
    trendline: Trendline,
    detector: OveruseDetector,
    aimd: Aimd,
    acked: AckedBitrate,
    loss: LossBased,
    /// LossBasedBweV2, with `loss_based = "v2"`.
    loss_v2: Option<LossBasedV2>,
    probes: ProbeController,
    probe_estimator: ProbeEstimator,
    alr: AlrDetector,
    /// Clusters to send, oldest first, with their creation time.
    pending: VecDeque<(ProbeCluster, Time)>,
    /// Bytes and packets sent of the front cluster.
    front_sent: (u64, u32),
    /// Recent clusters, to read the sizes they asked for.
    clusters: VecDeque<ProbeCluster>,
    /// Sequence-number ranges (first, last, cluster) of recent probe packets.
    probe_seqs: VecDeque<(u64, u64, u32)>,
    last_feedback: Option<Time>,
    max_rtts: VecDeque<f64>,
    lost_since: u32,
    expected_since: u32,
    next_loss_update: Option<Time>,
    next_process: Time,
    prev_in_alr: bool,
    last_target: f64,
    last_probe_result: Option<f64>,
    rtt_ms: Option<f64>,
    sorted: Vec<PacketResult>,
}

impl WebRtcGcc {
    pub fn new(cfg: &GccConfig, now: Time, max_payload: u32) -> Self {
        let (start, min, max) = (
            cfg.start_bitrate.bps(),
            cfg.min_bitrate.bps(),
            cfg.max_bitrate.bps(),
        );
        let (probes, initial) = ProbeController::new(
            start,
            max,
            max_payload,
            cfg.initial_probing.unwrap_or(true),
            cfg.alr_probing.unwrap_or(false),
            now.as_millis_f64(),
        );
        let mut g = WebRtcGcc {
            pacing_factor: cfg.pacing_factor,
            inter_arrival: InterArrival::default(),
            trendline: Trendline::default(),
            detector: OveruseDetector::new(DetectorConfig::WEBRTC),
            aimd: Aimd::new(start, min, cfg.backoff),
            acked: AckedBitrate::default(),
            loss: LossBased::new(start, min, max),
            loss_v2: (cfg.loss_based == Some(LossBasedVersion::V2)).then(|| {
                let mut v2 = LossBasedV2::new(LossBasedV2Config::default())
                    .expect("the default LossBasedBweV2 configuration is valid");
                // `SendSideBandwidthEstimation::SetMinMaxBitrate`: min at least 5 kbit/s.
                v2.set_min_max_bitrate(
                    min.max(super::loss_based_v2::CONGESTION_CONTROLLER_MIN_BITRATE_BPS),
                    max,
                );
                v2
            }),
            probes,
            probe_estimator: ProbeEstimator::default(),
            alr: AlrDetector::new(start),
            pending: VecDeque::new(),
            front_sent: (0, 0),
            clusters: VecDeque::new(),
            probe_seqs: VecDeque::new(),
            last_feedback: None,
            max_rtts: VecDeque::with_capacity(RTT_WINDOW + 1),
            lost_since: 0,
            expected_since: 0,
            next_loss_update: None,
            next_process: now + PROCESS_INTERVAL,
            prev_in_alr: false,
            last_target: start,
            last_probe_result: None,
            rtt_ms: None,
            sorted: Vec::new(),
        };
        g.push_probes(initial, now);
        g
    }

    fn push_probes(&mut self, probes: Vec<ProbeCluster>, now: Time) {
        for c in probes {
            if self.clusters.len() == CLUSTER_MEMORY {
                self.clusters.pop_front();
            }
            self.clusters.push_back(c);
            self.pending.push_back((c, now));
        }
    }

    /// The cluster a packet was sent in, if it was a probe packet.
    fn cluster_of(&self, seq: u64) -> Option<&ProbeCluster> {
        let &(_, _, id) = self
            .probe_seqs
            .iter()
            .find(|&&(first, last, _)| first <= seq && seq <= last)?;
        self.clusters.iter().find(|c| c.id == id)
    }

    /// Loss-based v2's proposal for the target, once it is ready.
    fn v2_target(&self) -> Option<f64> {
        let v2 = self.loss_v2.as_ref()?;
        v2.is_ready().then(|| v2.result().bandwidth_bps)
    }

    /// `UpdateLossBasedEstimator` with V2: the report's packets, the delay-based limit, then the
    /// target re-evaluated (`UpdateEstimate`). Nothing with v1.
    fn update_loss_v2(&mut self, now: Time, report: &FeedbackReport, in_alr: bool) {
        let Some(v2) = self.loss_v2.as_mut() else {
            return;
        };
        v2.update(&report.packets, self.loss.delay_limit_bps(), in_alr);
        let proposal = self.v2_target();
        self.loss.update_with(now.as_millis_f64(), proposal);
    }

    /// A new target: tell the ALR detector and the probe controller.
    fn on_network_changed(&mut self, now: Time) {
        let target = self.loss.target_bps();
        if target != self.last_target {
            self.last_target = target;
            self.alr.set_estimate(target);
            let more = self.probes.set_estimate(target, now.as_millis_f64());
            self.push_probes(more, now);
        }
    }

    /// The delay-based part of a report; returns (estimate updated, from a probe, recovered from
    /// under-use).
    fn delay_based(
        &mut self,
        now: Time,
        acked: Option<f64>,
        probe: Option<f64>,
    ) -> (bool, bool, bool) {
        if self.last_feedback.is_none_or(|t| now - t > STREAM_TIMEOUT) {
            self.inter_arrival.reset();
            self.trendline = Trendline::default();
            self.detector = OveruseDetector::new(DetectorConfig::WEBRTC);
        }
        self.last_feedback = Some(now);
        let mut prev = self.detector.usage();
        let mut recovered = false;
        for p in &self.sorted {
            let Some(recv) = p.receive_time else { continue };
            if let Some(d) = self
                .inter_arrival
                .on_packet(p.sent.send_time, recv, p.sent.size)
            {
                let recv_ms = recv.as_millis_f64();
                let trend = self.trendline.update(d.arrival_ms, d.send_ms, recv_ms);
                self.detector
                    .detect(trend, self.trendline.num_deltas(), d.send_ms, recv_ms);
            }
            let u = self.detector.usage();
            recovered |= prev == Usage::Underusing && u == Usage::Normal;
            prev = u;
        }
        let now_ms = now.as_millis_f64();
        match self.detector.usage() {
            Usage::Overusing => match acked {
                Some(a) if self.aimd.time_to_reduce_further(now_ms, a) => {
                    self.aimd.update(Usage::Overusing, Some(a), now_ms);
                    (true, false, false)
                }
                None if self.aimd.initial_time_to_reduce_further(now_ms) => {
                    self.aimd
                        .set_estimate(self.aimd.estimate_bps() / 2.0, now_ms);
                    (true, false, false)
                }
                _ => (false, false, false),
            },
            usage => match probe {
                Some(p) => {
                    self.aimd.set_estimate(p, now_ms);
                    (true, true, false)
                }
                None => {
                    self.aimd.update(usage, acked, now_ms);
                    (true, false, recovered)
                }
            },
        }
    }
}

impl Controller for WebRtcGcc {
    fn on_packet_sent(&mut self, now: Time, pkt: &SentPacket) {
        self.alr.on_bytes_sent(pkt.size, now.as_millis_f64());
        let Some(&(front, _)) = self.pending.front() else {
            return;
        };
        match self.probe_seqs.back_mut() {
            Some(r) if r.2 == front.id && r.1 + 1 == pkt.seq => r.1 = pkt.seq,
            _ => {
                if self.probe_seqs.len() == CLUSTER_MEMORY {
                    self.probe_seqs.pop_front();
                }
                self.probe_seqs.push_back((pkt.seq, pkt.seq, front.id));
            }
        }
        self.front_sent.0 += pkt.size as u64;
        self.front_sent.1 += 1;
        if front.is_complete(self.front_sent.0, self.front_sent.1) {
            self.pending.pop_front();
            self.front_sent = (0, 0);
        }
    }

    fn on_feedback(&mut self, now: Time, report: &FeedbackReport) {
        let now_ms = now.as_millis_f64();
        // 1. RTT.
        if let Some(newest) = report.received().filter_map(|p| p.receive_time).max() {
            let (mut max_rtt, mut min_rtt) = (f64::MIN, f64::MAX);
            for p in report.received() {
                let rtt = now.secs_since(p.sent.send_time) * 1000.0;
                let waited = newest.secs_since(p.receive_time.unwrap_or(newest)) * 1000.0;
                max_rtt = max_rtt.max(rtt);
                min_rtt = min_rtt.min(rtt - waited);
            }
            if self.max_rtts.len() == RTT_WINDOW {
                self.max_rtts.pop_front();
            }
            self.max_rtts.push_back(max_rtt);
            let mean = self.max_rtts.iter().sum::<f64>() / self.max_rtts.len() as f64;
            self.aimd.set_rtt_ms(mean);
            self.rtt_ms = Some(mean);
            self.loss.set_rtt_ms(min_rtt);
        }
        // 2. Loss, at most once per second.
        self.expected_since += report.packets.len() as u32;
        self.lost_since += report.lost_count() as u32;
        if self.next_loss_update.is_none_or(|t| now > t) {
            self.next_loss_update = Some(now + LOSS_UPDATE_INTERVAL);
            let proposal = self.v2_target();
            self.loss.update_packets_lost_with(
                self.lost_since,
                self.expected_since,
                now_ms,
                proposal,
            );
            (self.lost_since, self.expected_since) = (0, 0);
        }
        // 3. Acknowledged rate and probe results, in receive order.
        let in_alr = self.alr.start_ms().is_some();
        if self.prev_in_alr && !in_alr {
            self.acked.set_alr_ended(now_ms);
            self.probes.set_alr_ended(now_ms);
        }
        self.prev_in_alr = in_alr;
        self.sorted.clear();
        self.sorted.extend(report.received().copied());
        self.sorted.sort_by_key(|p| p.receive_time);
        for p in &self.sorted {
            let recv = p.receive_time.unwrap_or(now).as_millis_f64();
            let send = p.sent.send_time.as_millis_f64();
            self.acked.update(recv, send, p.sent.size);
            if let Some(c) = self.cluster_of(p.sent.seq) {
                self.probe_estimator.on_packet(
                    c.id,
                    send,
                    recv,
                    p.sent.size,
                    c.min_packets,
                    c.min_bytes,
                );
            }
        }
        let acked = self.acked.bitrate_bps();
        if let (Some(v2), Some(a)) = (self.loss_v2.as_mut(), acked) {
            v2.set_acknowledged_bitrate(a);
        }
        let probe = self.probe_estimator.take();
        if probe.is_some() {
            self.last_probe_result = probe;
        }
        // 4. Delay-based estimate (none from a report that only lists losses: libwebrtc's "very
        // late feedback" case).
        if self.sorted.is_empty() {
            self.update_loss_v2(now, report, in_alr);
            return;
        }
        let (updated, from_probe, recovered) = self.delay_based(now, acked, probe);
        if updated {
            let estimate = self.aimd.estimate_bps();
            if from_probe {
                self.loss.set_send_bitrate(estimate);
            }
            self.loss.update_delay_based(estimate);
        }
        self.update_loss_v2(now, report, in_alr);
        if updated {
            // 5. New target.
            self.on_network_changed(now);
        }
        if recovered {
            self.probes.set_alr_start(self.alr.start_ms());
            let more = self.probes.request_probe(now_ms);
            self.push_probes(more, now);
        }
    }

    fn on_timeout(&mut self, now: Time) {
        let now_ms = now.as_millis_f64();
        let proposal = self.v2_target();
        self.loss.update_with(now_ms, proposal);
        self.probes.set_alr_start(self.alr.start_ms());
        let more = self.probes.process(now_ms);
        self.push_probes(more, now);
        while self
            .pending
            .front()
            .is_some_and(|&(_, created)| now - created > PROBE_CLUSTER_TIMEOUT)
        {
            self.pending.pop_front();
            self.front_sent = (0, 0);
        }
        self.on_network_changed(now);
        while self.next_process <= now {
            self.next_process += PROCESS_INTERVAL;
        }
    }

    fn next_timeout(&self) -> Option<Time> {
        Some(self.next_process)
    }

    /// RFC 8699 Appendix A: GCC's rate is the smaller of the delay-based estimate (A_hat, AIMD's)
    /// and the loss-based one (A_s), so a coupled GCC sets both to the FSE's rate — the
    /// loss-based target capped by the new delay-based estimate, its 1 s minimum history
    /// restarted (else the next 8 % increase would start from the old rate), as a probe result
    /// resets it. The ALR detector and the probe controller learn the new target as they learn
    /// any. AIMD's timing (when it may decrease again, how long since it last changed) stays its
    /// own. Loss-based v2 keeps its own state and proposes from it, capped by the new A_hat.
    fn set_rate(&mut self, now: Time, rate: Rate) -> bool {
        let bps = rate.bps();
        if (bps - self.loss.target_bps()).abs() <= 1e-9 * bps.abs().max(1.0) {
            return true;
        }
        self.aimd.replace_estimate(bps);
        self.loss.set_rate(self.aimd.estimate_bps());
        self.on_network_changed(now);
        true
    }

    fn decision(&self) -> Decision {
        let target = Rate(self.loss.target_bps());
        Decision {
            probe: self.pending.front().map(|&(c, _)| c),
            ..Decision::rate_only(
                target,
                (self.pacing_factor > 0.0).then_some(Rate(target.0 * self.pacing_factor)),
            )
        }
    }

    fn state(&self, out: &mut Vec<(&'static str, f64)>) {
        out.push(("delay_based_bps", self.aimd.estimate_bps()));
        if let Some(a) = self.acked.bitrate_bps() {
            out.push(("acked_bps", a));
        }
        out.push(("trend", self.trendline.trend()));
        out.push(("trend_scaled", self.detector.last_t()));
        out.push(("threshold", self.detector.threshold()));
        out.push(("usage", self.detector.usage().as_f64()));
        let state = match self.aimd.state() {
            AimdState::Hold => 0.0,
            AimdState::Increase => 1.0,
            AimdState::Decrease => 2.0,
        };
        out.push(("aimd_state", state));
        if let Some(c) = self.aimd.link_capacity().estimate_bps() {
            out.push(("link_capacity_bps", c));
        }
        out.push(("loss_fraction", self.loss.fraction_lost()));
        if let Some(r) = self.rtt_ms {
            out.push(("rtt_ms", r));
        }
        out.push((
            "alr",
            if self.alr.start_ms().is_some() {
                1.0
            } else {
                0.0
            },
        ));
        if let Some(p) = self.last_probe_result {
            out.push(("probe_result_bps", p));
        }
        if let Some(v2) = &self.loss_v2 {
            let result = v2.result();
            if result.bandwidth_bps.is_finite() {
                out.push(("loss_v2_estimate_bps", result.bandwidth_bps));
            }
            out.push(("loss_v2_state", result.state.as_f64()));
            out.push(("loss_v2_ready", if v2.is_ready() { 1.0 } else { 0.0 }));
            if v2.best_bandwidth_bps().is_finite() {
                out.push(("loss_v2_best_bps", v2.best_bandwidth_bps()));
            }
            out.push(("loss_v2_inherent_loss", v2.inherent_loss()));
            out.push(("loss_v2_average_loss", v2.average_loss()));
            out.push(("loss_v2_upper_bound_bps", v2.instant_upper_bound_bps()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::{PacketKind, PacketResult};

    fn packet(seq: u64, size: u32, send_ms: f64) -> SentPacket {
        SentPacket {
            seq,
            size,
            send_time: Time::from_secs_f64(send_ms / 1000.0),
            frame: None,
            index_in_frame: 0,
            packets_in_frame: 0,
            kind: PacketKind::Probe,
            in_flight: 0,
        }
    }

    #[test]
    fn probe_packets_are_counted_off_and_their_result_sets_the_target() {
        let cfg: GccConfig = crate::cc::parse_config("gcc", &crate::cc::Params::new()).unwrap();
        let mut g = WebRtcGcc::new(&cfg, Time::ZERO, 1200);
        let first = g.decision().probe.unwrap();
        assert_eq!((first.id, first.rate), (0, Rate(900e3)));
        // Five 1200-byte packets at 900 kbit/s (10.67 ms apart) complete the first cluster
        // (at least 1687 bytes and 5 packets); the second (6 × 300 kbit/s) is next.
        let gap = 1200.0 * 8.0 / 900e3 * 1000.0;
        let sent: Vec<SentPacket> = (0..5).map(|i| packet(i, 1200, i as f64 * gap)).collect();
        for p in &sent {
            assert_eq!(g.decision().probe.map(|c| c.id), Some(0));
            g.on_packet_sent(p.send_time, p);
        }
        assert_eq!(g.decision().probe.map(|c| c.rate), Some(Rate(1.8e6)));
        // They arrive as sent, 20 ms later: the probe measured 900 kbit/s, which becomes the
        // delay-based estimate and the target (the loss-based target is reset to it).
        let report = FeedbackReport {
            feedback_time: Time::from_millis(100),
            packets: sent
                .iter()
                .map(|p| PacketResult {
                    sent: *p,
                    receive_time: Some(p.send_time + Duration::from_millis(20)),
                    ecn: crate::packet::Ecn::NotEct,
                })
                .collect(),
            in_flight: 0,
            recovery: None,
        };
        g.on_feedback(report.feedback_time, &report);
        let target = g.decision().target_bitrate.bps();
        assert!(
            (target - 900e3).abs() < 1.0,
            "{target} (times are whole ns)"
        );
        assert_eq!(g.decision().pacing_rate.unwrap().bps(), 2.5 * target);
        // 900 kbit/s is below 70 % of the 1.8 Mbit/s probe still pending: no third probe.
        assert_eq!(g.pending.len(), 1);
    }
}
