//! The per-segment log of a DASH session and its QoE.
//!
//! The seed (Vargas et al., WWW '21, §3.3) measures two things: the **average segment quality**,
//! the mean quality index (0 … rungs − 1; 0–10 for its ladder) over the downloaded segments, and
//! the **stall rate** of its Eq. (1), `(total playback time − video length) / video length`.
//! Total playback time runs from the first frame to the end of playback, so the startup delay
//! (request of the first segment to first frame) is not in it: `stall_rate` excludes it (the
//! extraction's recommendation, §7 #22) and `stall_rate_with_startup` adds it. Playback time
//! beyond the video's length is exactly the time spent stalled.
//!
//! Also reported: quality switches (consecutive segments at different rungs; the seed only
//! shows them, Fig. 13), and Pensieve's linear QoE (Mao et al., SIGCOMM 2017, §5.1, `QoE_lin`;
//! the weights of its `REBUF_PENALTY` and `SMOOTH_PENALTY`):
//!
//! ```text
//! QoE_lin = Σ_n q(R_n) − 4.3 · Σ_n T_n − Σ_n |q(R_{n+1}) − q(R_n)|,   q(R) = R in Mbit/s
//! ```
//!
//! with `T_n` the stall (rebuffering) time, in seconds, the startup delay excluded, reported
//! per segment (divided by the segments downloaded), as Pensieve reports it.

use super::{DashConfig, Rule};
use crate::units::{Duration, Time};
use serde::Serialize;

/// Pensieve's `REBUF_PENALTY` for bitrates in Mbit/s.
pub const REBUFFER_PENALTY: f64 = 4.3;
/// Pensieve's `SMOOTH_PENALTY`.
pub const SMOOTHNESS_PENALTY: f64 = 1.0;

/// One downloaded segment (times on the simulator's clock once logged).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SegmentRecord {
    pub segment: u32,
    /// Rung index.
    pub quality: u32,
    /// The rung's bitrate (the MPD's `@bandwidth`).
    pub bitrate_bps: f64,
    /// Media bytes.
    pub bytes: u64,
    /// When the ABR chose the quality.
    pub decided: Time,
    /// When the request left (after the ABR's delay).
    pub request: Time,
    pub first_byte: Time,
    /// When the last byte arrived (and the segment was appended).
    pub finish: Time,
    /// Buffer when the quality was chosen, seconds of media.
    pub buffer_at_decision_s: f64,
    /// Buffer just after the segment was appended.
    pub buffer_after_s: f64,
    /// The stall this segment ended (0 if playback was not stalled).
    pub stall_s: f64,
    /// The rule that decided.
    pub rule: Rule,
    /// The connection that carried it.
    pub connection: u32,
}

impl SegmentRecord {
    /// First to last byte.
    pub fn download_time(&self) -> Duration {
        self.finish - self.first_byte
    }
    /// 8 · bytes / download time (dash.js's throughput sample), bit/s.
    pub fn throughput_bps(&self) -> f64 {
        8.0 * self.bytes as f64 / self.download_time().as_secs_f64().max(1e-9)
    }
    /// Every time mapped through `f` (from an endpoint's clock to the simulator's).
    pub fn map_times(self, f: impl Fn(Time) -> Time) -> SegmentRecord {
        SegmentRecord {
            decided: f(self.decided),
            request: f(self.request),
            first_byte: f(self.first_byte),
            finish: f(self.finish),
            ..self
        }
    }
}

/// The QoE of a DASH session, as written in `summary.json`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DashSummary {
    pub abr: String,
    pub http: String,
    pub segments: usize,
    pub segments_downloaded: usize,
    /// Every segment downloaded and played before the flow stopped.
    pub finished: bool,
    /// Mean rung index over the downloaded segments (0 … rungs − 1).
    pub avg_quality: f64,
    pub avg_bitrate_mbps: f64,
    /// Seed Eq. (1): stall time / video length (startup delay excluded).
    pub stall_rate: f64,
    /// The same with the startup delay counted as a stall.
    pub stall_rate_with_startup: f64,
    pub stall_time_s: f64,
    pub stalls: usize,
    /// First segment's request (the flow's start) to the first frame.
    pub startup_delay_s: Option<f64>,
    /// Consecutive segments at different rungs.
    pub switches: usize,
    /// Pensieve's QoE_lin per segment (Mbit/s − 4.3 × stall s − |ΔMbit/s|).
    pub qoe_lin: f64,
    /// Mean of the segments' dash.js throughput samples, Mbit/s.
    pub avg_throughput_mbps: f64,
}

/// The summary of a session that started at `start` and ran until `end` (its flow's stop),
/// from its segment records alone.
pub fn summarize(
    records: &[SegmentRecord],
    cfg: &DashConfig,
    start: Time,
    end: Time,
) -> DashSummary {
    let n = records.len();
    let video_s = cfg.video_length().as_secs_f64();
    let mean = |f: &dyn Fn(&SegmentRecord) -> f64| {
        if n == 0 {
            0.0
        } else {
            records.iter().map(f).sum::<f64>() / n as f64
        }
    };
    let all_in = n >= cfg.segments;
    let mut stall_s: f64 = records.iter().map(|r| r.stall_s).sum();
    let mut stalls = records.iter().filter(|r| r.stall_s > 0.0).count();
    let startup = records.first().map(|r| (r.finish - start).as_secs_f64());
    let mut finished = false;
    if let Some(last) = records.last() {
        // After the last append playback continues for the buffered media; before the last
        // segment a stall starts 0.5 s before the buffer runs out and lasts until the end.
        let left = last.buffer_after_s;
        if all_in {
            finished = last.finish + Duration::from_secs_f64(left) <= end;
        } else {
            let stall_at = last.finish
                + Duration::from_secs_f64(
                    (left - super::player::STALL_THRESHOLD.as_secs_f64()).max(0.0),
                );
            if stall_at < end {
                stall_s += (end - stall_at).as_secs_f64();
                stalls += 1;
            }
        }
    }
    let mbps = |r: &SegmentRecord| r.bitrate_bps / 1e6;
    let switches = records
        .windows(2)
        .filter(|w| w[0].quality != w[1].quality)
        .count();
    let smoothness: f64 = records
        .windows(2)
        .map(|w| (mbps(&w[1]) - mbps(&w[0])).abs())
        .sum();
    let qoe_total = records.iter().map(mbps).sum::<f64>()
        - REBUFFER_PENALTY * stall_s
        - SMOOTHNESS_PENALTY * smoothness;
    DashSummary {
        abr: cfg.abr.name().into(),
        http: cfg.http.name().into(),
        segments: cfg.segments,
        segments_downloaded: n,
        finished,
        avg_quality: mean(&|r| r.quality as f64),
        avg_bitrate_mbps: mean(&mbps),
        stall_rate: stall_s / video_s,
        stall_rate_with_startup: (stall_s + startup.unwrap_or(0.0)) / video_s,
        stall_time_s: stall_s,
        stalls,
        startup_delay_s: startup,
        switches,
        qoe_lin: if n == 0 { 0.0 } else { qoe_total / n as f64 },
        avg_throughput_mbps: mean(&|r| r.throughput_bps() / 1e6),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(
        segment: u32,
        quality: u32,
        finish_s: f64,
        buffer_after: f64,
        stall: f64,
    ) -> SegmentRecord {
        let cfg = DashConfig::default();
        SegmentRecord {
            segment,
            quality,
            bitrate_bps: cfg.ladder_bps[quality as usize],
            bytes: cfg.segment_bytes(segment as usize, quality as usize),
            decided: Time::from_secs_f64(finish_s - 1.0),
            request: Time::from_secs_f64(finish_s - 1.0),
            first_byte: Time::from_secs_f64(finish_s - 0.9),
            finish: Time::from_secs_f64(finish_s),
            buffer_at_decision_s: 0.0,
            buffer_after_s: buffer_after,
            stall_s: stall,
            rule: Rule::None,
            connection: 0,
        }
    }

    #[test]
    fn quality_stall_rate_switches_and_qoe_lin_from_the_records() {
        let cfg = DashConfig {
            segments: 4,
            ..DashConfig::default()
        };
        // 20 s of video; startup 1 s; a 2 s stall ended by segment 2.
        let records = [
            rec(0, 10, 1.0, 5.0, 0.0),
            rec(1, 10, 2.0, 9.0, 0.0),
            rec(2, 4, 14.0, 5.5, 2.0),
            rec(3, 4, 15.0, 9.5, 0.0),
        ];
        let s = summarize(&records, &cfg, Time::ZERO, Time::from_secs_f64(100.0));
        assert!(s.finished);
        assert_eq!(s.avg_quality, 7.0, "(10 + 10 + 4 + 4) / 4");
        assert_eq!(s.stall_rate, 0.1, "2 s of stall over 20 s of video (Eq. 1)");
        assert_eq!(s.stall_rate_with_startup, 0.15, "plus the 1 s startup");
        assert_eq!(s.stalls, 1);
        assert_eq!(s.switches, 1);
        // (25 + 25 + 10 + 10 - 4.3 x 2 - 15) / 4 = 46.4 / 4.
        assert!((s.qoe_lin - 11.6).abs() < 1e-9, "{}", s.qoe_lin);
    }

    #[test]
    fn an_unfinished_session_counts_the_stall_still_running_at_its_end() {
        let cfg = DashConfig {
            segments: 4,
            ..DashConfig::default()
        };
        let records = [rec(0, 0, 1.0, 5.0, 0.0)];
        // Playback stalls at 1 + 4.5 = 5.5 s; the run ends at 10 s: 4.5 s of stall.
        let s = summarize(&records, &cfg, Time::ZERO, Time::from_secs_f64(10.0));
        assert!(!s.finished);
        assert!((s.stall_time_s - 4.5).abs() < 1e-9);
        assert_eq!(s.stalls, 1);
    }
}
