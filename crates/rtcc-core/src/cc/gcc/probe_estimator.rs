//! The probe bitrate estimator (`webrtc` profile): what a probe cluster says about the path.
//!
//! For each cluster it collects the feedback of its packets: first and last send times, first
//! and last receive times, total size. Once at least 80 % of the cluster's minimum packets and
//! bytes are acknowledged, it computes
//!
//! ```text
//! send rate    = (bytes − last packet) / (last send − first send)
//! receive rate = (bytes − first packet) / (last receive − first receive)
//! ```
//!
//! (an interval spans one packet fewer than it holds) and rejects the cluster if either
//! interval is not in (0, 1 s] or if it was received more than twice as fast as sent. The result
//! is `min(send, receive)`; if the receive rate is below 90 % of the send rate, the link was
//! saturated and its capacity found, so the result is `0.95 · receive` to keep a margin.
//! Clusters whose last packet arrived more than 1 s before the newest are forgotten.
//!
//! Constants (libwebrtc `goog_cc/probe_bitrate_estimator.cc`): `kMinReceivedProbesPercent = 80`,
//! `kMinReceivedBytesPercent = 80`, `kMaxValidRatio = 2.0`, `kMinRatioForUnsaturatedLink = 0.9`,
//! `kTargetUtilizationFraction = 0.95`, `kMaxClusterHistoryMs = 1000`, `kMaxProbeIntervalMs = 1000`.

pub const MIN_RECEIVED_FRACTION: f64 = 0.8;
pub const MAX_VALID_RATIO: f64 = 2.0;
pub const MIN_RATIO_UNSATURATED: f64 = 0.9;
pub const TARGET_UTILIZATION: f64 = 0.95;
pub const MAX_CLUSTER_HISTORY_MS: f64 = 1000.0;
pub const MAX_PROBE_INTERVAL_MS: f64 = 1000.0;

#[derive(Debug, Clone, Copy)]
struct Cluster {
    id: u32,
    first_send: f64,
    last_send: f64,
    size_last_send: f64,
    first_recv: f64,
    last_recv: f64,
    size_first_recv: f64,
    bytes: f64,
    packets: u32,
}

#[derive(Debug, Clone, Default)]
pub struct ProbeEstimator {
    clusters: Vec<Cluster>,
    pending: Option<f64>,
}

impl ProbeEstimator {
    /// Feedback for one packet of cluster `id` (times in ms, sender and receiver clocks) whose
    /// cluster asked for `min_packets` and `min_bytes`. Returns the cluster's estimate (bps)
    /// when it has enough packets.
    pub fn on_packet(
        &mut self,
        id: u32,
        send_ms: f64,
        recv_ms: f64,
        size: u32,
        min_packets: u32,
        min_bytes: u32,
    ) -> Option<f64> {
        self.clusters
            .retain(|c| c.last_recv >= recv_ms - MAX_CLUSTER_HISTORY_MS);
        let size = size as f64;
        let c = match self.clusters.iter_mut().find(|c| c.id == id) {
            Some(c) => c,
            None => {
                self.clusters.push(Cluster {
                    id,
                    first_send: f64::INFINITY,
                    last_send: f64::NEG_INFINITY,
                    size_last_send: 0.0,
                    first_recv: f64::INFINITY,
                    last_recv: f64::NEG_INFINITY,
                    size_first_recv: 0.0,
                    bytes: 0.0,
                    packets: 0,
                });
                self.clusters.last_mut().unwrap()
            }
        };
        if send_ms < c.first_send {
            c.first_send = send_ms;
        }
        if send_ms > c.last_send {
            c.last_send = send_ms;
            c.size_last_send = size;
        }
        if recv_ms < c.first_recv {
            c.first_recv = recv_ms;
            c.size_first_recv = size;
        }
        if recv_ms > c.last_recv {
            c.last_recv = recv_ms;
        }
        c.bytes += size;
        c.packets += 1;
        let min_probes = (min_packets as f64 * MIN_RECEIVED_FRACTION).floor();
        let min_size = (min_bytes as f64 * MIN_RECEIVED_FRACTION).floor();
        if (c.packets as f64) < min_probes || c.bytes < min_size {
            return None;
        }
        let send_interval = c.last_send - c.first_send;
        let recv_interval = c.last_recv - c.first_recv;
        if send_interval <= 0.0
            || send_interval > MAX_PROBE_INTERVAL_MS
            || recv_interval <= 0.0
            || recv_interval > MAX_PROBE_INTERVAL_MS
        {
            return None;
        }
        let send_bps = (c.bytes - c.size_last_send) * 8.0 / send_interval * 1000.0;
        let recv_bps = (c.bytes - c.size_first_recv) * 8.0 / recv_interval * 1000.0;
        if recv_bps / send_bps > MAX_VALID_RATIO {
            return None;
        }
        let mut res = send_bps.min(recv_bps);
        if recv_bps < MIN_RATIO_UNSATURATED * send_bps {
            res = TARGET_UTILIZATION * recv_bps;
        }
        self.pending = Some(res);
        Some(res)
    }

    /// The newest estimate since the last call.
    pub fn take(&mut self) -> Option<f64> {
        self.pending.take()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_probe_through_a_slower_link_measures_95_percent_of_it() {
        let mut e = ProbeEstimator::default();
        // 5 packets of 1000 bytes sent 1 ms apart (8 Mbps), received 4 ms apart (2 Mbps).
        let mut last = None;
        for i in 0..5 {
            let (s, r) = (i as f64, 50.0 + 4.0 * i as f64);
            last = e.on_packet(7, s, r, 1000, 5, 4000);
            if i < 3 {
                assert_eq!(last, None, "fewer than 80 % of 5 packets");
            }
        }
        // Receive: 4000 bytes (all but the first) over 16 ms = 2 Mbps < 0.9 · 8 Mbps.
        assert!((last.unwrap() - 0.95 * 2e6).abs() < 1e-6);
        assert_eq!(e.take(), last);
        assert_eq!(e.take(), None);
    }

    #[test]
    fn an_unsaturated_probe_measures_its_send_rate() {
        let mut e = ProbeEstimator::default();
        let mut last = None;
        for i in 0..5 {
            // Sent 4 ms apart, received with a little jitter.
            let r = 50.0 + 4.0 * i as f64 + if i == 2 { 0.5 } else { 0.0 };
            last = e.on_packet(1, 4.0 * i as f64, r, 1000, 5, 4000);
        }
        assert!((last.unwrap() - 2e6).abs() < 1e-6);
        // Received more than twice as fast as sent: rejected.
        let mut e = ProbeEstimator::default();
        for i in 0..5 {
            last = e.on_packet(2, 4.0 * i as f64, 50.0 + i as f64, 1000, 5, 4000);
        }
        assert_eq!(last, None);
    }
}
