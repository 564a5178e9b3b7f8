//! `scream`: SCReAM v2, Ericsson's Self-Clocked Rate Adaptation for Multimedia with L4S support
//! (draft-johansson-ccwg-rfc8298bis-screamv2, the successor of RFC 8298), written after
//! Ericsson's reference implementation (`ScreamV2Tx.cpp`, `ScreamV2TxStream.cpp`, `ScreamTx.h`
//! at commit c8f84c3, BSD-2). Comments cite the reference's function next to each rule and each
//! constant; the draft's section where it has one (§4.1 network congestion control, §4.2 the
//! stream's rate control, §4.1.2 of the draft for the L4S reaction).
//!
//! # The idea
//!
//! SCReAM is *self-clocked*: like TCP it keeps a congestion window, the bytes it may have in
//! flight, and only sends a packet when the window has room, so that it never puts more into the
//! network than comes out. The encoder's target bitrate is then derived from the window:
//! `rate ≈ 8·cwnd / sRTT`, with margins. The window reacts to four signals:
//!
//! - **L4S marks** (scalable, like DCTCP/Prague): `l4sAlpha` follows the fraction of packets that
//!   arrived CE-marked, fast up (gain 1/8 when a fraction above it is seen) and slow down
//!   (decays by 1/128 per update otherwise); a CE event — at most one per min(30 ms, sRTT) —
//!   cuts the window by `l4sAlpha/2`. The reference's README says a flow marked on a fraction p
//!   of its packets settles where two packets per RTT are marked, `rate ≈ (2/p)·MSS·8/RTT`; the
//!   reference's own code settles at about half of that (0.50-0.57 at p = 0.02-0.1, 25 ms RTT,
//!   `bench/scream_crosscheck/marking.cc`), and so does this port (within 1.2 % of it). The
//!   formula holds (1.03-1.08 of it) with the plain average of the draft's earlier revisions
//!   (`l4s_alpha_filter = "ewma"`, gain 1/16): the fast-up filter keeps l4sAlpha at 2.5-3 p.
//! - **Queue delay**, for paths without L4S: the one-way delay above its minimum over the last
//!   ~8 minutes (the clocks' offset cancels). When its average exceeds half the queue-delay
//!   target (100 ms by default) the sender acts as if marked ("virtual CE") with a virtual alpha
//!   that grows linearly from 0 at target/2 to 1 at the target.
//! - **Classic ECN** (`l4s = false`): one CE event multiplies the window by 0.9.
//! - **Loss**: the window is multiplied by 0.7, at most once per sRTT, and only if the loss rate
//!   exceeds 1 % or the queue delay a quarter of the target (isolated random losses on an empty
//!   queue are ignored).
//!
//! Without congestion the window grows by `MSS·bytes_acked/cwnd` per feedback (about one MSS
//! per RTT), scaled: down to a quarter near the window at the last congestion (`cwndI`, the
//! "inflexion point", `sclI`), by `sRTT/25 ms` for short RTTs, by how much the queue delay
//! jitters (`latencyDiffCwndScale`), and up by a multiplicative term (5 % of the window per RTT)
//! that returns only slowly after congestion (`postCongestionScale`, over 200 RTTs). It may not
//! grow past twice the largest bytes in flight seen lately (an application-limited flow does not
//! inflate its window). Packets are paced at 1.5 times the target (more for a large frame).
//!
//! # What rtcc gives it
//!
//! - Feedback: per-packet arrival times and ECN codepoints (RFC 8888-like), every 5 ms and at
//!   each frame's last packet ([`SCREAM_FEEDBACK`]; the reference's receiver reports every 16
//!   packets, at a frame's marker bit, or after 40 ms, whichever is first).
//! - The RTP queue: rtcc's pacer queue. Its age at each frame capture ([`FrameView`]) drives the
//!   stream's `rateAdjustFactor` and its discard (an encoder reset when media waited more than
//!   100 ms); the encoded frame sizes drive the frame-size statistics.
//! - The window is handed to the sender as `cwnd·windowHeadroom + 1` byte: rtcc's sender sends
//!   while `in_flight < cwnd`, so a full-size packet goes exactly when the reference's
//!   `isOkToTransmit` lets it (`in_flight + size ≤ cwnd·windowHeadroom + MSS`).
//!
//! # Simplifications (also in `docs/scream.md`)
//!
//! - One stream per controller: no priorities, credits or rate sharing among streams.
//! - No shared-bottleneck detection (`enableSbd`, off by default in the reference), so the queue
//!   delay target stays at its minimum; no clock-drift compensation (off by default); no rate
//!   policer protection, relaxed pacing, MSS list or `maxTotalBitrate` (all off by default).
//! - Losses come from rtcc's feedback (a packet is lost when a later one arrived), not from the
//!   reference's 30 ms reordering timer.
//! - The largest bytes in flight is sampled as packets leave, not when feedback arrives.
//! - The base-delay refresh that empties the RTP queue for two RTTs after ~8 minutes without a
//!   sub-millisecond queue is not done (the rate-halving reset of `getTargetBitrate` is).
//! - `ceDensity` stays 1: it only differs when pacing is off, and pacing is always on here.
//!
//! # Judgment calls
//!
//! - **Application limited** (which slows sRTT's decay to 1/1024 per update) also requires the
//!   encoder to produce less than 90 % of the target, the reference's stated purpose. Its test
//!   alone (the window above twice what is in flight) also holds when SCReAM's own target keeps
//!   little in flight after an RTT spike, and then held the rate at a third of a 4 Mbit/s link
//!   for 10 s after a 1 s outage on a deep buffer.
//! - **The start**: the reference's window starts at 2 MSS unless its constructor is given an
//!   initial window, and its target falls to that window's share at the first frame. Here the
//!   window starts where its share is about the flow's `start_bitrate` (before the small-window
//!   and packet-overhead margins, which take 5–10 % off at 1 Mbit/s), and without one at the rate the
//!   reference's first window gives (2 MSS per 51 ms through the margins, ≈ 340 kbit/s at
//!   1200 bytes).
//! - **`l4s` follows the flow's ECN** unless given: false with `ecn = true` (classic ECN), true
//!   otherwise (the reference's constructor: false), see [`ScreamConfig::l4s`].
//! - **The default maximum rate** is 10 Mbit/s when neither the parameters nor the flow give
//!   one (the reference registers every stream with its own; see [`DEFAULT_MAX_RATE`]).

use super::params::controller_config;
use super::{
    boxed, build_fn, parse_config, Controller, ControllerContext, ControllerError, ControllerInfo,
    Decision, EncodeAction, FeedbackPolicy, FrameAction, FrameController, FrameView, Params,
};
use crate::packet::{FeedbackReport, FrameInfo, PacketKind, PacketResult, SentPacket};
use crate::units::{Duration, Rate, Time};
use std::collections::VecDeque;

// ---- Constants of the reference (`ScreamV2Tx.cpp` file scope unless noted) ----

/// `kL4sGUp`: gain of l4sAlpha when the marked fraction is at or above it (fast attack).
const L4S_G_UP: f64 = 1.0 / 8.0;
/// `kL4sGDown`: l4sAlpha's decay per update when the fraction is below it (slow decay).
const L4S_G_DOWN: f64 = 1.0 / 128.0;
/// `L4S_AVG_G`: the plain EWMA gain of l4sAlpha in the draft's earlier revisions (its constants
/// list: "L4S_AVG_G (1.0/16): EWMA factor for l4s_alpha") and in libwebrtc's first port of
/// SCReAM v2 (`l4s_avg_g`, 1/16); `l4s_alpha_filter = "ewma"`.
const L4S_AVG_G: f64 = 1.0 / 16.0;

/// How l4sAlpha follows the fraction of packets marked ([`ScreamConfig::l4s_alpha_filter`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AlphaFilter {
    /// The reference's: gain [`L4S_G_UP`] up, decay [`L4S_G_DOWN`] down.
    FastUpSlowDown,
    /// The earlier drafts' plain average, gain [`L4S_AVG_G`].
    Ewma,
}

impl AlphaFilter {
    fn parse(name: &str) -> Result<AlphaFilter, String> {
        match name {
            "fast-up-slow-down" => Ok(AlphaFilter::FastUpSlowDown),
            "ewma" => Ok(AlphaFilter::Ewma),
            other => Err(format!(
                "l4s_alpha_filter must be \"fast-up-slow-down\" or \"ewma\", got {other:?}"
            )),
        }
    }
}
/// `kL4sAlphaMax`.
const L4S_ALPHA_MAX: f64 = 1.0;
/// The reference's initial `l4sAlpha` (constructor).
const L4S_ALPHA_INIT: f64 = 0.1;
/// `lastL4sAlphaUpdateT_ntp` test (655/65536 s): l4sAlpha is updated at most every
/// min(10 ms, sRTT).
const L4S_ALPHA_UPDATE_INTERVAL: f64 = 655.0 / 65536.0;
/// `kMinCongestionBackOffInterval_ntp` (1966/65536 s = 30 ms): congestion events, the queue
/// delay averages and the window updates happen at most every min(30 ms, sRTT).
const MIN_BACKOFF_INTERVAL: f64 = 1966.0 / 65536.0;
/// `kSrttVirtual`: the window grows more slowly below this RTT (like Prague's RTT independence).
const SRTT_VIRTUAL: f64 = 0.025;
/// `kQueueDelayAvgAlpha`, `kQueueDelayMinSlowAvgAlpha`, `kQueueDelayMinSlowAvgUpdateRtts`.
const QUEUE_DELAY_AVG_ALPHA: f64 = 1.0 / 4.0;
const QUEUE_DELAY_MIN_SLOW_AVG_ALPHA: f64 = 1.0 / 8.0;
const QUEUE_DELAY_MIN_SLOW_AVG_RTTS: f64 = 100.0;
/// `kLatencyDiffAlpha`, `kQueueDelayMinMaxAlpha`, `kLatencyDiffThreshold` (10 ms).
const LATENCY_DIFF_ALPHA: f64 = 1.0 / 32.0;
const QUEUE_DELAY_MIN_MAX_ALPHA: f64 = 1.0 / 16.0;
const LATENCY_DIFF_THRESHOLD: f64 = 0.010;
/// `kLossRateThreshold`: a loss counts as a loss event only above 1 % loss (or with a queue).
const LOSS_RATE_THRESHOLD: f64 = 0.01;
/// `kTotalAckedBitrateFraction`: the backoff is quartered while the target is below 80 % of the
/// acknowledged rate.
const TOTAL_ACKED_BITRATE_FRACTION: f64 = 0.8;
/// `kPostCongestionDelayRtts`: the multiplicative increase returns over 200 RTTs.
const POST_CONGESTION_DELAY_RTTS: f64 = 200.0;
/// `kMinWindowHeadroom` (the adaptive window headroom's floor; the ceiling is a parameter).
const MIN_WINDOW_HEADROOM: f64 = 1.5;
/// `kGainUp` (`ScreamTx.h`).
const GAIN_UP: f64 = 1.0;
/// `kPacketOverhead`: RTP + UDP header bytes in the rate share's overhead scale.
const PACKET_OVERHEAD: f64 = 20.0;
/// `kSlowUpdateInterval_ntp` (50 ms), `kMaxBytesInFlightHistSize`.
const SLOW_UPDATE_INTERVAL: f64 = 3277.0 / 65536.0;
const MAX_BYTES_IN_FLIGHT_HIST: usize = 20;
/// `kRateUpdateInterval_ntp` (100 ms), `kRateUpDateSize`: the media-rate estimate.
const RATE_UPDATE_INTERVAL: f64 = 6553.0 / 65536.0;
const RATE_UPDATE_HIST: usize = 4;
/// `kBaseDelayUpdateInterval_ntp` (10 s), `kBaseOwdHistSize`: the base delay is the minimum
/// over 50 buckets of 10 s.
const BASE_DELAY_UPDATE_INTERVAL: f64 = 10.0;
const BASE_OWD_HIST: usize = 50;
/// `kBaseDelayResetInterval_ntp` (60 s), `kNumRateLimitRtts`: base-delay reset in
/// `getTargetBitrate`, at most every 60 s, after halving the rate for 5 RTTs (≥ 100 ms).
const BASE_DELAY_RESET_INTERVAL: f64 = 60.0;
const RATE_LIMIT_RTTS: f64 = 5.0;
const RATE_LIMIT_MIN: f64 = 6554.0 / 65536.0;
/// The reference's initial sRTT (constructor: 50 ms).
const SRTT_INIT: f64 = 0.05;
const SRTT_INIT_NTP: f64 = 3277.0 / 65536.0;
/// `ScreamV2TxStream.cpp`: `kMinRtpQueueDiscardInterval_ntp` (250 ms).
const MIN_RTP_QUEUE_DISCARD_INTERVAL: f64 = 0.25;
/// `ScreamV2TxStream.cpp`: frame-size histogram (`kRelFrameSizeHist*`).
const REL_FRAME_SIZE_HIST_BINS: usize = 50;
const REL_FRAME_SIZE_HIST_DECAY: f64 = 1.0 / 1024.0;
const REL_FRAME_SIZE_HIGH_PERCENTILE: f64 = 0.8;
const REL_FRAME_SIZE_HIST_PREAMBLE: u64 = 50;
const REL_FRAME_SIZE_HIST_RANGE: f64 = 3.0;
/// `ScreamV2TxStream.cpp`: `kRateAdjustGain1`, `kRateAdjustGain2`.
const RATE_ADJUST_GAIN_1: f64 = 0.2;
const RATE_ADJUST_GAIN_2: f64 = 1.0 / 8.0;
/// Not in the reference: the encoder counts as the limit (application limited) while it produces
/// less than this fraction of the target (see `update_cwnd`).
const ENCODER_LIMITED_FRACTION: f64 = 0.9;
/// `ScreamV2Tx::updateCwnd`: the pacing rate's floor, 50 kbit/s.
const MIN_PACING_RATE: f64 = 50e3;
/// `ScreamV2Tx::updateCwnd`: the rate share's fixed margin for frame-size variation.
const RATE_SHARE_MARGIN: f64 = 1.1;
/// The reference's `framePeriod` before the first two frames (20 ms).
const FRAME_PERIOD_INIT: f64 = 0.02;

controller_config! {
    /// SCReAM v2's parameters: the reference's defaults (`ScreamTx.h`, the `ScreamV2Tx` and
    /// `registerNewStream` defaults).
    pub struct ScreamConfig {
        /// react to CE marks as L4S (scalable, l4sAlpha/2) rather than classic ECN (ecn_ce_beta)
        ///
        /// The reference's `isL4s` (constructor default false; its BW test tool turns it on with
        /// ECT(1)). When not given it follows the flow: false with `ecn = true` (RFC 3168's
        /// sparse classic marks), true otherwise (`ecn = "l4s"`, the flow this controller is
        /// for; without ECN no marks arrive and it changes nothing). The default shown is the
        /// L4S one.
        pub l4s: bool = true,
        /// how l4sAlpha follows the fraction marked: "fast-up-slow-down" (the reference: up 1/8, down 1/128) or "ewma" (earlier drafts: 1/16)
        ///
        /// The reference (c8f84c3) and the current draft filter the fraction of packets marked
        /// per update (every min(10 ms, sRTT)) with a fast attack (gain 1/8 when the fraction is
        /// at or above l4sAlpha) and a slow decay (1/128 per update otherwise), so l4sAlpha
        /// rests near the upper envelope of the noisy fractions (2.5-3 times the marking
        /// probability). `"ewma"` is the plain average of the draft's earlier revisions and
        /// libwebrtc's first port (gain 1/16, `L4S_AVG_G`), the SCReAM v2 that the reference's
        /// README formula `rate = (2/p)·MSS·8/RTT` and Ericsson's DualPI2 test record describe
        /// (docs/scream.md, "Measured").
        pub l4s_alpha_filter: String = "fast-up-slow-down".into(),
        /// queue delay target; the virtual-CE reaction starts at half of it (kQueueDelayTargetMin)
        pub queue_delay_target: Duration = Duration::from_millis(100),
        /// window scale on a loss event (kLossBeta)
        pub loss_beta: f64 = 0.7,
        /// window scale on a classic ECN CE event (kEcnCeBeta)
        pub ecn_ce_beta: f64 = 0.9,
        /// pacing rate over the target bitrate (kPacketPacingHeadRoom)
        pub packet_pacing_headroom: f64 = 1.5,
        /// largest extra pacing scale for a frame larger than average (kMaxAdaptivePacingRateScale)
        pub max_adaptive_pacing_rate_scale: f64 = 1.5,
        /// the window may grow to this times the largest bytes in flight (kBytesInFlightHeadRoom)
        pub bytes_in_flight_headroom: f64 = 2.0,
        /// multiplicative window increase per RTT when uncongested (kMultiplicativeIncreaseScalefactor)
        pub multiplicative_increase: f64 = 0.05,
        /// largest factor by which bytes in flight may exceed the window (maxWindowHeadroom)
        pub max_window_headroom: f64 = 3.0,
        /// media older than this in the sender's queue is discarded and the encoder reset (kMaxRtpQueueDelay)
        pub max_rtp_queue_delay: Duration = Duration::from_millis(100),
        /// scale the target to correct an encoder that over- or undershoots (isAdaptiveTargetRateScale)
        pub adaptive_target_rate_scale: bool = true,
        /// relative change needed to pass a new target to the encoder, up +h / down -h/4 (hysteresis)
        pub hysteresis: f64 = 0.0,
        /// lowest target bitrate
        #[doc_default = "the flow's min_bitrate"]
        pub min_rate: Option<Rate> = None,
        /// target bitrate before the window has grown
        #[doc_default = "the flow's start_bitrate, else the rate of 2 MSS per 51 ms"]
        pub start_rate: Option<Rate> = None,
        /// highest target bitrate
        #[doc_default = "the flow's max_bitrate, else 10Mbps"]
        pub max_rate: Option<Rate> = None,
    }
}

/// The highest rate when neither the parameters nor the flow set one: rtcc's choice, 10 Mbit/s
/// (the reference has no default, every stream is registered with one: its simulator's video
/// stream has 20 Mbit/s, its BW test tool's `-maxrate` defaults to 500 Mbit/s).
const DEFAULT_MAX_RATE: Rate = Rate(10e6);

/// Feedback every 5 ms and at each frame's last packet: the reference's receiver
/// (`ScreamRx::isFeedback`) reports every 16 packets, at a marker bit, or after 40 ms
/// (`kMaxRtcpInterval`); rtcc's policy has no packet count, so a short interval stands in for it
/// (16 packets of 1200 bytes take 5 ms at 30 Mbit/s).
pub const SCREAM_FEEDBACK: FeedbackPolicy = FeedbackPolicy {
    interval: Some(Duration(5_000_000)),
    per_frame: true,
    frame_acks: false,
    rate_reports: None,
};

/// The stream side (`ScreamV2Tx::Stream`): the target bitrate, the RTP queue's influence and the
/// frame-size statistics.
#[derive(Debug, Clone)]
struct Stream {
    min_rate: f64,
    max_rate: f64,
    /// `rateShare`: what the window allows (bit/s), set by `update_cwnd`.
    rate_share: f64,
    /// `targetBitrate`, and `targetBitrateH` (with hysteresis).
    target: f64,
    target_h: f64,
    /// `targetRateScale`: corrects an encoder that produces more or less than asked.
    target_rate_scale: f64,
    /// `rateAdjustFactor`: lowers the target while the RTP queue holds more than half a frame.
    rate_adjust_factor: f64,
    frame_period: f64,
    last_frame: Option<f64>,
    frame_size_prev: f64,
    rel_frame_size_hist: [f64; REL_FRAME_SIZE_HIST_BINS],
    rel_frame_size_high: f64,
    frames: u64,
    adaptive_pacing_rate_scale: f64,
    /// Media bytes encoded and not yet sent (the RTP queue's bytes).
    queued_bytes: u64,
    /// The RTP queue's delay at the last frame capture (s).
    rtp_queue_delay: f64,
    last_discard: Option<f64>,
    discards: u64,
    // `updateRate`: bytes in the current 100 ms window and the rates they give.
    bytes_rtp: u64,
    bytes_transmitted: u64,
    bytes_acked: u64,
    rate_rtp_hist: [f64; RATE_UPDATE_HIST],
    rate_rtp_hist_ix: usize,
    rate_rtp_avg: f64,
    rate_transmitted: f64,
    rate_acked: f64,
    rate_updates: u64,
    last_rate_update: Option<f64>,
}

impl Stream {
    fn new(min_rate: f64, start: f64, max_rate: f64) -> Stream {
        let mut hist = [0.0; REL_FRAME_SIZE_HIST_BINS];
        hist[0] = 1.0;
        Stream {
            min_rate,
            max_rate,
            rate_share: start,
            target: start,
            target_h: start,
            target_rate_scale: 1.0,
            rate_adjust_factor: 0.0,
            frame_period: FRAME_PERIOD_INIT,
            last_frame: None,
            frame_size_prev: 0.0,
            rel_frame_size_hist: hist,
            rel_frame_size_high: 1.0,
            frames: 0,
            adaptive_pacing_rate_scale: 1.0,
            queued_bytes: 0,
            rtp_queue_delay: 0.0,
            last_discard: None,
            discards: 0,
            bytes_rtp: 0,
            bytes_transmitted: 0,
            bytes_acked: 0,
            rate_rtp_hist: [0.0; RATE_UPDATE_HIST],
            rate_rtp_hist_ix: 0,
            rate_rtp_avg: 0.0,
            rate_transmitted: 0.0,
            rate_acked: 0.0,
            rate_updates: 0,
            last_rate_update: None,
        }
    }

    /// `Stream::updateRate`, every 100 ms: transmitted, acknowledged and encoded rates, and the
    /// adaptive target rate scale.
    fn update_rate(&mut self, t: f64, adaptive_scale: bool) {
        if let Some(last) = self.last_rate_update {
            let dt = t - last;
            // `isOkToTransmit`: `time_ntp - lastRateUpdateT_ntp > kRateUpdateInterval_ntp`.
            if dt <= RATE_UPDATE_INTERVAL {
                return;
            }
            self.rate_updates += 1;
            self.rate_transmitted = self.bytes_transmitted as f64 * 8.0 / dt;
            self.rate_acked = self.bytes_acked as f64 * 8.0 / dt;
            self.rate_rtp_hist[self.rate_rtp_hist_ix] = self.bytes_rtp as f64 * 8.0 / dt;
            self.rate_rtp_hist_ix = (self.rate_rtp_hist_ix + 1) % RATE_UPDATE_HIST;
            self.rate_rtp_avg = self.rate_rtp_hist.iter().sum::<f64>() / RATE_UPDATE_HIST as f64;
            if self.rate_rtp_avg > 0.0
                && adaptive_scale
                && self.rate_updates > RATE_UPDATE_HIST as u64
            {
                // Gain 0.02 towards target·scale / produced, within [0.8, 1.1].
                let diff = self.target * self.target_rate_scale / self.rate_rtp_avg;
                let alpha = 0.02;
                self.target_rate_scale =
                    (self.target_rate_scale * (1.0 - alpha) + alpha * diff).clamp(0.8, 1.1);
            }
        }
        self.bytes_transmitted = 0;
        self.bytes_acked = 0;
        self.bytes_rtp = 0;
        self.last_rate_update = Some(t);
    }

    /// `Stream::updateTargetBitrate` without the RTP queue discard (done at frame capture): the
    /// window's share, lowered by the RTP queue's rate adjustment, within the bounds, with the
    /// encoder hysteresis.
    fn update_target(&mut self, hysteresis: f64) {
        self.target = (self.rate_share / (1.0 + self.rate_adjust_factor))
            .max(self.min_rate)
            .min(self.max_rate);
        let diff = (self.target * self.target_rate_scale - self.target_h) / self.target_h;
        if diff > hysteresis || diff < -hysteresis / 4.0 {
            self.target_h = self.target * self.target_rate_scale;
        }
    }

    /// `Stream::newMediaFrame`'s frame-size part: the high percentile of how much frames exceed
    /// the average, and the adaptive pacing scale for a large frame.
    fn on_frame(&mut self, size: f64, max_adaptive_pacing: f64) {
        let frame_size_avg = self.target * self.frame_period / 8.0;
        let frame_size = (self.queued_bytes as f64).max(size);
        if size > frame_size_avg {
            // Only the growth over the previous frame counts (a sluggish encoder's ramp).
            let diff = (size - frame_size_avg)
                .min(size - self.frame_size_prev)
                .max(0.0);
            self.frame_size_prev = size;
            let bins = REL_FRAME_SIZE_HIST_BINS;
            let ix = (diff / (frame_size_avg * (REL_FRAME_SIZE_HIST_RANGE - 1.0)) * bins as f64)
                .clamp(0.0, (bins - 1) as f64) as usize;
            self.rel_frame_size_hist[ix] += 1.0;
            for h in self.rel_frame_size_hist.iter_mut() {
                *h *= 1.0 - REL_FRAME_SIZE_HIST_DECAY;
            }
            if self.frames > REL_FRAME_SIZE_HIST_PREAMBLE {
                let total: f64 = self.rel_frame_size_hist.iter().sum();
                let mark = total * REL_FRAME_SIZE_HIGH_PERCENTILE;
                let mut ix = 1;
                let mut sum = self.rel_frame_size_hist[0];
                while sum < mark && ix < bins {
                    sum += self.rel_frame_size_hist[ix];
                    ix += 1;
                }
                ix -= 1;
                self.rel_frame_size_high =
                    1.0 + ix as f64 * (REL_FRAME_SIZE_HIST_RANGE - 1.0) / bins as f64;
            }
        }
        self.adaptive_pacing_rate_scale = if frame_size_avg > 500.0 {
            (frame_size / frame_size_avg).clamp(1.0, max_adaptive_pacing)
        } else {
            1.0
        };
    }
}

pub struct Scream {
    cfg: ScreamConfig,
    stream: Stream,
    /// Bytes: `getMss()` is the largest packet of this second and the last.
    mss: f64,
    prev_mss: f64,
    last_mss_update: f64,
    cwnd: f64,
    cwnd_min: f64,
    /// `cwndI`: the window at the last congestion event (the inflexion point).
    cwnd_i: f64,
    cwnd_i_update_blocked: bool,
    window_headroom: f64,
    bytes_newly_acked: u64,
    bytes_newly_acked_ce: u64,
    max_bytes_in_flight: u64,
    max_bytes_in_flight_prev: u64,
    max_bytes_in_flight_hist: [u64; MAX_BYTES_IN_FLIGHT_HIST],
    max_bytes_in_flight_hist_ix: usize,
    is_application_limited: bool,
    // RTT (s): `sRttSh` follows each report, `sRtt` follows `sRttSh` once per sRttSh.
    srtt: f64,
    srtt_sh: f64,
    srtt_sh_prev: f64,
    last_srtt_update: f64,
    // One-way delays (ns, receiver clock minus sender clock) and the queue delay (s).
    base_owd: Option<i64>,
    base_owd_hist: VecDeque<i64>,
    /// The smallest of `base_owd_hist`, kept as buckets come and go (read at every packet).
    base_owd_hist_min: Option<i64>,
    last_base_owd_add: f64,
    queue_delay: f64,
    queue_delay_avg: f64,
    queue_delay_min: f64,
    queue_delay_min_slow_avg: f64,
    last_queue_delay_min_slow_avg_update: f64,
    queue_delay_max_avg: f64,
    queue_delay_min_avg: f64,
    last_queue_delay_avg_update: f64,
    latency_diff_avg: f64,
    latency_diff_cwnd_scale: f64,
    // ECN.
    packets_delivered: u64,
    packets_marked: u64,
    fraction_marked: f64,
    alpha_filter: AlphaFilter,
    l4s_alpha: f64,
    last_l4s_alpha_update: f64,
    virtual_l4s_alpha: f64,
    ce_this_feedback: bool,
    // Events.
    loss_event: bool,
    ecn_ce_event: bool,
    virtual_ce_event: bool,
    loss_rate: f64,
    last_loss_event: f64,
    last_congestion_detected: f64,
    last_cwnd_update: f64,
    last_slow_update: f64,
    post_congestion_scale: f64,
    is_new_frame: bool,
    pacing_rate: f64,
    // `getTargetBitrate`'s base-delay reset.
    last_rate_limit: f64,
    rate_limited: bool,
    can_reset_base_delay_history: bool,
    init_time: f64,
    counts: Counts,
}

/// Event counts, for logs and tests.
#[derive(Debug, Clone, Copy, Default)]
struct Counts {
    loss_events: u64,
    ce_events: u64,
    virtual_ce_events: u64,
}

/// The reference's time base: Q16 seconds (`time_ntp`, 1/65536 s ticks), truncated as an NTP
/// clock reads. Its interval tests compare whole ticks with a strict `>` (`time_ntp - last >
/// kMinCongestionBackOffInterval_ntp`, 1966 ticks), so on feedback exactly 5 ms apart a 30 ms gap
/// (1966.08 ticks, 1966 or 1967 whole ones) mostly does not pass and events come every 35 ms;
/// the same test in continuous seconds passed at 30 ms and backed off a sixth more often
/// (found by bench/scream_crosscheck). Every time here is therefore a whole number of ticks.
fn secs(t: Time) -> f64 {
    ticks(t) as f64 / 65536.0
}

/// `t` in whole Q16 ticks (the reference's `uint32_t time_ntp`, without its wrap).
fn ticks(t: Time) -> i64 {
    ((t.0 as u128 * 65536) / 1_000_000_000) as i64
}

impl Scream {
    /// `start`, `min`, `max` in bit/s; `mss` the largest payload the flow sends.
    pub fn new(cfg: ScreamConfig, now: Time, min: Rate, start: Rate, max: Rate, mss: u64) -> Self {
        let t = secs(now);
        let mss = mss.max(1) as f64;
        // The reference starts with cwnd = 2·MSS whatever the start rate, and its target falls to
        // the share that window gives at the first frame. rtcc's start rate is honoured instead:
        // the window starts where the rate share equals it (judgment call, see the docs).
        let start_cwnd = start.bps() / 8.0 * (SRTT_INIT + 0.001) * RATE_SHARE_MARGIN;
        let cwnd = start_cwnd.max(2.0 * mss);
        let mut s = Scream {
            stream: Stream::new(min.bps(), start.bps(), max.bps()),
            mss,
            prev_mss: mss,
            last_mss_update: t,
            cwnd,
            cwnd_min: 2.0 * mss,
            cwnd_i: 1.0,
            cwnd_i_update_blocked: false,
            window_headroom: cfg.max_window_headroom,
            bytes_newly_acked: 0,
            bytes_newly_acked_ce: 0,
            max_bytes_in_flight: 0,
            max_bytes_in_flight_prev: 0,
            max_bytes_in_flight_hist: [0; MAX_BYTES_IN_FLIGHT_HIST],
            max_bytes_in_flight_hist_ix: 0,
            is_application_limited: false,
            // The constructor's `sRtt_ntp(3277)`: 50 ms in whole ticks.
            srtt: SRTT_INIT_NTP,
            srtt_sh: SRTT_INIT_NTP,
            srtt_sh_prev: SRTT_INIT_NTP,
            last_srtt_update: t,
            base_owd: None,
            base_owd_hist: VecDeque::with_capacity(BASE_OWD_HIST),
            base_owd_hist_min: None,
            last_base_owd_add: t,
            queue_delay: 0.0,
            queue_delay_avg: 0.0,
            queue_delay_min: 1000.0,
            queue_delay_min_slow_avg: 0.0,
            last_queue_delay_min_slow_avg_update: t,
            queue_delay_max_avg: 0.0,
            queue_delay_min_avg: 1000.0,
            last_queue_delay_avg_update: t,
            latency_diff_avg: 0.0,
            latency_diff_cwnd_scale: 1.0,
            packets_delivered: 0,
            packets_marked: 0,
            fraction_marked: 0.0,
            alpha_filter: AlphaFilter::parse(&cfg.l4s_alpha_filter)
                .expect("l4s_alpha_filter is checked by ScreamConfig::validate"),
            l4s_alpha: if cfg.l4s { L4S_ALPHA_INIT } else { 0.0 },
            last_l4s_alpha_update: t,
            virtual_l4s_alpha: 0.0,
            ce_this_feedback: false,
            loss_event: false,
            ecn_ce_event: false,
            virtual_ce_event: false,
            loss_rate: 0.0,
            last_loss_event: t,
            last_congestion_detected: f64::NEG_INFINITY,
            last_cwnd_update: t,
            last_slow_update: t,
            post_congestion_scale: 1.0,
            is_new_frame: false,
            pacing_rate: 0.0,
            last_rate_limit: t,
            rate_limited: false,
            can_reset_base_delay_history: false,
            init_time: t,
            counts: Counts::default(),
            cfg,
        };
        s.pacing_rate = s.pacing();
        s
    }

    fn get_mss(&self) -> f64 {
        self.mss.max(self.prev_mss)
    }

    fn queue_delay_target(&self) -> f64 {
        self.cfg.queue_delay_target.as_secs_f64()
    }

    /// min(30 ms, sRTT): the spacing of congestion events and of the slower updates.
    fn backoff_interval(&self) -> f64 {
        MIN_BACKOFF_INTERVAL.min(self.srtt)
    }

    /// `getBaseOwd`: the smallest one-way delay of the current bucket and the history.
    fn base_owd(&self) -> Option<i64> {
        self.base_owd_hist_min
            .into_iter()
            .chain(self.base_owd)
            .min()
    }

    /// `estimateOwd`: a new one-way delay sample; every 10 s the bucket joins the history.
    fn estimate_owd(&mut self, t: f64, owd: i64) {
        self.base_owd = Some(self.base_owd.map_or(owd, |b| b.min(owd)));
        if t - self.last_base_owd_add >= BASE_DELAY_UPDATE_INTERVAL {
            if self.base_owd_hist.len() == BASE_OWD_HIST {
                self.base_owd_hist.pop_front();
            }
            if let Some(b) = self.base_owd.take() {
                self.base_owd_hist.push_back(b);
            }
            self.base_owd_hist_min = self.base_owd_hist.iter().copied().min();
            self.last_base_owd_add = t;
        }
    }

    fn reset_base_delay_history(&mut self) {
        self.queue_delay_min_slow_avg = 0.0;
        self.queue_delay = 0.0;
        self.base_owd_hist.clear();
        self.base_owd_hist_min = None;
        self.base_owd = None;
    }

    /// `calculateLossRate`: averaged over about two windows, at most 1/400 per packet.
    fn count_loss_rate(&mut self, lost: bool) {
        let alpha = (LOSS_RATE_THRESHOLD / 4.0).min(self.mss / self.cwnd / 2.0);
        self.loss_rate = (1.0 - alpha) * self.loss_rate + alpha * if lost { 1.0 } else { 0.0 };
    }

    /// `setLossEvent`: a loss counts if losses are frequent (> 1 %) or a queue has built.
    fn set_loss_event(&mut self) {
        if self.loss_rate > LOSS_RATE_THRESHOLD
            || self.queue_delay_avg > self.queue_delay_target() / 4.0
        {
            self.loss_event = true;
        }
    }

    /// `markAcked` for one received packet: delivery and mark counts, one-way and queue delay.
    fn mark_acked(&mut self, t: f64, p: &PacketResult, at: Time) {
        self.packets_delivered += 1;
        if p.is_ce() {
            self.bytes_newly_acked_ce += p.sent.size as u64;
            self.packets_marked += 1;
            self.ce_this_feedback = true;
        }
        // `markAcked`: `ackedOwd = timestamp - timeTx_ntp` in Q16 ticks.
        let owd = ticks(at) - ticks(p.sent.send_time);
        self.estimate_owd(t, owd);
        let base = self.base_owd().unwrap_or(owd);
        self.queue_delay = (owd - base).max(0) as f64 / 65536.0;
        // Per received packet (`incomingStandardizedFeedback`): the min/max queue-delay trackers.
        self.queue_delay_min_avg = self.queue_delay_min_avg.min(self.queue_delay);
        self.queue_delay_max_avg = self
            .queue_delay_max_avg
            .max(self.queue_delay)
            .min(self.queue_delay_target());
    }

    /// `markAcked`'s RTT part, for the newest packet of a report. The reference filters in whole
    /// Q16 ticks with integer division (`sRttSh_ntp = (7 * sRttSh_ntp + rtt) / 8`), which
    /// truncates each step: both averages settle about 3.5 ticks (53 µs) under the RTT, 0.1 ms
    /// for sRTT; done the same way here.
    fn update_rtt(&mut self, t: f64, rtt_ticks: i64) {
        if !(0..1_000_000).contains(&rtt_ticks) {
            return; // `rtt < 1000000`
        }
        let q16 = |s: f64| (s * 65536.0).round() as i64;
        let from_q16 = |n: i64| n as f64 / 65536.0;
        let (srtt, srtt_sh) = (q16(self.srtt), q16(self.srtt_sh));
        self.srtt_sh_prev = self.srtt_sh;
        let srtt_sh = (7 * srtt_sh + rtt_ticks) / 8;
        self.srtt_sh = from_q16(srtt_sh);
        if t - self.last_srtt_update > self.srtt_sh {
            self.srtt = from_q16(if self.is_application_limited && srtt > srtt_sh {
                // Application limited: a falling RTT must not raise the target quickly.
                (1023 * srtt + srtt_sh) / 1024
            } else {
                (7 * srtt + srtt_sh) / 8
            });
            self.last_srtt_update = t;
        }
    }

    /// The L4S alpha update (`incomingStandardizedFeedback`, draft §4.1.2.1): fast attack with
    /// gain 1/8 when the fraction marked since the last update is at or above alpha, slow decay
    /// by 1/128 otherwise; with `l4s_alpha_filter = "ewma"` the earlier drafts' plain average
    /// (gain 1/16).
    fn update_l4s_alpha(&mut self, t: f64) {
        if !self.cfg.l4s {
            self.l4s_alpha = 0.0;
            return;
        }
        if t - self.last_l4s_alpha_update <= L4S_ALPHA_UPDATE_INTERVAL.min(self.srtt) {
            return;
        }
        self.last_l4s_alpha_update = t;
        self.fraction_marked = 0.0;
        if self.packets_delivered == 0 {
            return;
        }
        self.fraction_marked = self.packets_marked as f64 / self.packets_delivered as f64;
        if self.alpha_filter == AlphaFilter::Ewma {
            self.l4s_alpha = L4S_AVG_G * self.fraction_marked + (1.0 - L4S_AVG_G) * self.l4s_alpha;
        } else if self.fraction_marked >= self.l4s_alpha {
            self.l4s_alpha = (L4S_G_UP * self.fraction_marked + (1.0 - L4S_G_UP) * self.l4s_alpha)
                .min(L4S_ALPHA_MAX);
        } else {
            self.l4s_alpha *= 1.0 - L4S_G_DOWN;
        }
        self.packets_delivered = 0;
        self.packets_marked = 0;
    }

    /// The queue-delay averages, every min(30 ms, sRTT) (`incomingStandardizedFeedback`).
    fn update_queue_delay_averages(&mut self, t: f64) {
        if t - self.last_queue_delay_avg_update <= self.backoff_interval() {
            return;
        }
        // A slow average of the minimum, every 100 RTTs: what a standing queue or clock drift
        // adds to every sample.
        if t - self.last_queue_delay_min_slow_avg_update > self.srtt * QUEUE_DELAY_MIN_SLOW_AVG_RTTS
        {
            if self.queue_delay_min < self.queue_delay_min_slow_avg {
                self.queue_delay_min_slow_avg = self.queue_delay_min;
            } else {
                self.queue_delay_min_slow_avg = QUEUE_DELAY_MIN_SLOW_AVG_ALPHA
                    * self.queue_delay_min
                    + (1.0 - QUEUE_DELAY_MIN_SLOW_AVG_ALPHA) * self.queue_delay_min_slow_avg;
            }
            self.queue_delay_min = 1000.0;
            self.last_queue_delay_min_slow_avg_update = t;
        }
        // queueDelayAvg: follows drops at once, rises with gain 1/4.
        let q = self.queue_delay - self.queue_delay_min_slow_avg;
        if q < self.queue_delay_avg {
            self.queue_delay_avg = q;
        } else {
            self.queue_delay_avg =
                (1.0 - QUEUE_DELAY_AVG_ALPHA) * self.queue_delay_avg + QUEUE_DELAY_AVG_ALPHA * q;
        }
        // The queue delay's swing (max − min, at most 20 ms) scales the window's growth down
        // from 1 at no swing to 0 at 10 ms.
        let swing = (self.queue_delay_max_avg - self.queue_delay_min_avg)
            .clamp(0.0, 2.0 * LATENCY_DIFF_THRESHOLD);
        self.latency_diff_avg =
            (1.0 - LATENCY_DIFF_ALPHA) * self.latency_diff_avg + LATENCY_DIFF_ALPHA * swing;
        self.latency_diff_cwnd_scale =
            (1.0 - self.latency_diff_avg / LATENCY_DIFF_THRESHOLD).clamp(0.0, 1.0);
        self.queue_delay_max_avg *= 1.0 - QUEUE_DELAY_MIN_MAX_ALPHA;
        self.queue_delay_min_avg = (1.0 - QUEUE_DELAY_MIN_MAX_ALPHA) * self.queue_delay_min_avg
            + QUEUE_DELAY_MIN_MAX_ALPHA * self.queue_delay_max_avg;
        self.last_queue_delay_avg_update = t;
    }

    /// The virtual CE event (`incomingStandardizedFeedback`, draft §4.1.2.2): the average queue
    /// delay past half the target acts as an L4S mark of fraction
    /// `(qAvg − target/2) / (target/2)`, scaled down when sRTT spans several backoff intervals.
    fn check_virtual_ce(&mut self, t: f64) {
        let half = self.queue_delay_target() / 2.0;
        if self.queue_delay_avg > half && t - self.last_loss_event > self.backoff_interval() {
            self.virtual_ce_event = true;
            let alpha = ((self.queue_delay_avg - half) / half).clamp(0.0, 1.0);
            self.virtual_l4s_alpha = alpha / (self.srtt / MIN_BACKOFF_INTERVAL).max(1.0);
        }
    }

    /// The backoff's common scaling: a quarter while the target is below 80 % of what is
    /// acknowledged (the sender is not using its share), divided by the backoff events per sRTT.
    fn scale_backoff(&self, backoff: f64) -> f64 {
        let mut b = backoff;
        if self.stream.target < self.stream.rate_acked * TOTAL_ACKED_BITRATE_FRACTION {
            b *= 0.25;
        }
        b / (self.srtt / MIN_BACKOFF_INTERVAL).max(1.0)
    }

    /// `sclI`: 1 far from the last congestion window, down to 0.1 near it
    /// (`(8·(cwnd − cwndI)/cwndI)²`).
    fn scl_i(&self) -> f64 {
        let x = 8.0 * (self.cwnd - self.cwnd_i) / self.cwnd_i;
        (x * x).clamp(0.1, 1.0)
    }

    /// The pacing rate (`updateCwnd`): 1.5 × the larger of the target and the encoder's output,
    /// times the adaptive scale for large frames, at least 50 kbit/s.
    fn pacing(&self) -> f64 {
        let base = self.stream.target.max(self.stream.rate_rtp_avg);
        (self.cfg.packet_pacing_headroom * self.stream.adaptive_pacing_rate_scale.max(1.0) * base)
            .max(MIN_PACING_RATE)
    }

    /// `updateCwnd` (draft §4.1.2): reduce on an event, otherwise grow, then the rate share.
    fn update_cwnd(&mut self, t: f64) {
        self.post_congestion_scale = ((t - self.last_congestion_detected)
            / (POST_CONGESTION_DELAY_RTTS * self.srtt))
            .clamp(0.0, 1.0);
        self.queue_delay_min = self.queue_delay_min.min(self.queue_delay);
        self.pacing_rate = self.pacing();
        let mss = self.get_mss();

        if t - self.last_slow_update > SLOW_UPDATE_INTERVAL {
            self.max_bytes_in_flight_hist[self.max_bytes_in_flight_hist_ix] =
                self.max_bytes_in_flight;
            self.max_bytes_in_flight_hist_ix =
                (self.max_bytes_in_flight_hist_ix + 1) % MAX_BYTES_IN_FLIGHT_HIST;
            if self.stream.target > self.stream.max_rate * 0.95 {
                // Near the max rate: keep the window near what is in flight (or what the max
                // rate needs), so that a congestion episode starts from a sensible window.
                let hist_max = self
                    .max_bytes_in_flight_hist
                    .iter()
                    .copied()
                    .max()
                    .unwrap_or(0)
                    .max(self.max_bytes_in_flight) as f64;
                let needed = self.cfg.packet_pacing_headroom
                    * self.stream.rel_frame_size_high
                    * self.stream.max_rate
                    / 8.0
                    * (self.srtt + 0.001);
                self.cwnd = self.cwnd.min(hist_max.max(needed));
            }
            if t - self.init_time > 2.0 {
                self.max_bytes_in_flight_prev = self.max_bytes_in_flight;
                self.max_bytes_in_flight = 0;
            }
            self.last_slow_update = t;
        }
        let cwnd_ratio = mss / self.cwnd;
        // Adaptive window headroom: from max_window_headroom down to 1.5 as the delay swings.
        self.window_headroom = MIN_WINDOW_HEADROOM
            + (self.cfg.max_window_headroom - MIN_WINDOW_HEADROOM) * self.latency_diff_cwnd_scale;
        let scl_i = self.scl_i();

        if self.loss_event {
            if !self.cwnd_i_update_blocked {
                self.cwnd_i = self.cwnd;
                self.cwnd_i_update_blocked = true;
            }
            self.cwnd = (self.cfg.loss_beta * self.cwnd).max(self.cwnd_min);
            self.loss_event = false;
            self.last_congestion_detected = t;
            self.post_congestion_scale = 0.0;
            self.counts.loss_events += 1;
        } else if self.ecn_ce_event || self.virtual_ce_event {
            if !self.cwnd_i_update_blocked {
                self.cwnd_i = self.cwnd;
                self.cwnd_i_update_blocked = true;
            }
            if self.ecn_ce_event {
                self.counts.ce_events += 1;
                if self.cfg.l4s {
                    let mut backoff = self.scale_backoff(self.l4s_alpha / 2.0);
                    if self.queue_delay < self.queue_delay_target() * 0.25 {
                        // Near the last max, and while the delay swings, back off less (the
                        // growth is scaled down likewise), unless a queue has built.
                        backoff *= scl_i.max(0.25);
                        backoff *= self.latency_diff_cwnd_scale.clamp(0.25, 1.0);
                    }
                    if t - self.last_congestion_detected > 100.0 * self.srtt.max(SRTT_VIRTUAL) {
                        // Long uncongested (the link exceeded the max rate): the window may
                        // have grown far past what is in flight; start from what is.
                        self.cwnd = self.cwnd.min(self.max_bytes_in_flight_prev as f64);
                    }
                    self.cwnd = ((1.0 - backoff) * self.cwnd).max(self.cwnd_min);
                } else {
                    self.cwnd = (self.cfg.ecn_ce_beta * self.cwnd).max(self.cwnd_min);
                }
                self.virtual_ce_event = false;
            }
            if self.virtual_ce_event {
                self.counts.virtual_ce_events += 1;
                let backoff = self.scale_backoff(self.virtual_l4s_alpha / 2.0);
                self.cwnd = ((1.0 - backoff) * self.cwnd).max(self.cwnd_min);
            }
            self.ecn_ce_event = false;
            self.virtual_ce_event = false;
            self.last_congestion_detected = t;
            self.post_congestion_scale = 0.0;
        }

        // Growth: about one MSS per RTT of unmarked acknowledged bytes, scaled.
        let acked_unmarked = self
            .bytes_newly_acked
            .saturating_sub(self.bytes_newly_acked_ce);
        let mut increment = GAIN_UP * acked_unmarked as f64 * cwnd_ratio;
        increment *= scl_i.max(0.25);
        increment *= (self.srtt / SRTT_VIRTUAL).min(1.0);
        increment *= self.latency_diff_cwnd_scale.clamp(0.1, 1.0);
        let multiplicative = self.cfg.multiplicative_increase * self.cwnd / mss;
        increment *= 1.0 + multiplicative * self.post_congestion_scale * scl_i;
        let cwnd_prev = self.cwnd;
        let max_allowed = mss
            + self.max_bytes_in_flight.max(self.max_bytes_in_flight_prev) as f64
                * self.cfg.bytes_in_flight_headroom;
        // Judgment call: application limited only while the encoder also produces less than
        // 90 % of the target (the reference's stated purpose: "a media encoder produces output
        // media at a lower bitrate than the target"). The reference's test alone (window above
        // twice what is in flight) also holds when SCReAM's own target keeps bytes in flight low
        // after an RTT spike: sRTT then decays by 1/1024 per update and held the rate at a third
        // of a 4 Mbit/s link for 10 s after a 1 s outage on a deep buffer.
        self.is_application_limited = max_allowed < self.cwnd
            && self.stream.rate_rtp_avg < ENCODER_LIMITED_FRACTION * self.stream.target;
        let grown = self.cwnd + increment.round();
        if grown <= max_allowed && self.stream.target < self.stream.max_rate {
            self.cwnd = grown;
        }
        if self.cwnd > cwnd_prev {
            self.cwnd_i_update_blocked = false;
        }
        self.cwnd = self.cwnd.max(self.cwnd_min);
        self.bytes_newly_acked = 0;
        self.bytes_newly_acked_ce = 0;

        // The rate the window allows (one stream: all of it, up to the max rate).
        let rtt = (self.srtt + 0.001).clamp(0.001, 0.2);
        let mut rate = 8.0 * self.cwnd / rtt;
        rate *= 1.0 - (cwnd_ratio - 0.1).clamp(0.0, 0.2);
        rate /= RATE_SHARE_MARGIN;
        rate *= mss / (mss + PACKET_OVERHEAD);
        self.stream.rate_share = rate.min(self.stream.max_rate);
    }

    /// `getTargetBitrate`'s base-delay reset: a minimum queue delay that stays above target/8 (a
    /// standing queue or drifting clocks) halves the rate for 5 RTTs, then forgets the base delay.
    fn check_base_delay_reset(&mut self, t: f64) {
        self.rate_limited = false;
        if self.queue_delay_min_slow_avg <= self.queue_delay_target() / 8.0 {
            return;
        }
        if t - self.last_rate_limit > BASE_DELAY_RESET_INTERVAL {
            self.last_rate_limit = t;
        }
        if t - self.last_rate_limit < RATE_LIMIT_MIN.max(RATE_LIMIT_RTTS * self.srtt) {
            self.rate_limited = true;
            self.can_reset_base_delay_history = true;
        } else if self.can_reset_base_delay_history {
            self.reset_base_delay_history();
            self.can_reset_base_delay_history = false;
        }
    }

    fn target(&self) -> f64 {
        let rate = self.stream.target_rate_scale * self.stream.target_h;
        let rate = if self.rate_limited { rate * 0.5 } else { rate };
        // max-then-min, not `clamp`: a caller's min above its max must not panic.
        rate.max(self.stream.min_rate).min(self.stream.max_rate)
    }

    fn update_rates(&mut self, t: f64) {
        self.stream
            .update_rate(t, self.cfg.adaptive_target_rate_scale);
    }
}

impl Controller for Scream {
    fn on_packet_sent(&mut self, now: Time, pkt: &SentPacket) {
        let t = secs(now);
        if t - self.last_mss_update > 1.0 {
            // `kMssUpdateInterval_ntp`: the MSS is the largest packet of the last two seconds.
            // `ScreamV2Tx::isOkToTransmit` also floors the window at `kMinCwndMss` = 3 MSS then
            // (2 MSS at every packet, `addTransmitted`).
            self.prev_mss = self.mss;
            self.mss = 0.0;
            self.last_mss_update = t;
            self.cwnd = self.cwnd.max(3.0 * self.get_mss());
        }
        self.mss = self.mss.max(pkt.size as f64);
        self.cwnd_min = 2.0 * self.get_mss();
        self.cwnd = self.cwnd.max(self.cwnd_min);
        self.max_bytes_in_flight = self.max_bytes_in_flight.max(pkt.in_flight);
        self.stream.bytes_transmitted += pkt.size as u64;
        if pkt.kind == PacketKind::Media {
            self.stream.queued_bytes = self.stream.queued_bytes.saturating_sub(pkt.size as u64);
        }
        self.update_rates(t);
    }

    fn on_feedback(&mut self, now: Time, report: &FeedbackReport) {
        let t = secs(now);
        let mut newest_received: Option<Time> = None;
        for p in &report.packets {
            // Every packet up to the highest reported advances the window (`detectLoss`).
            self.bytes_newly_acked += p.sent.size as u64;
            self.stream.bytes_acked += p.sent.size as u64;
            match p.receive_time {
                Some(at) => {
                    self.mark_acked(t, p, at);
                    self.count_loss_rate(false);
                    newest_received =
                        Some(newest_received.map_or(p.sent.send_time, |n| n.max(p.sent.send_time)));
                }
                None => {
                    if t - self.last_loss_event > self.srtt && self.cfg.loss_beta < 1.0 {
                        self.set_loss_event();
                    }
                    self.count_loss_rate(true);
                }
            }
        }
        let Some(newest_sent) = newest_received else {
            return; // only losses: the reference acts on received packets
        };
        self.update_rtt(t, ticks(now) - ticks(newest_sent));

        // The end of a report (`isLast`): events, alpha, averages, and the window.
        if t - self.last_loss_event > self.backoff_interval() && self.ce_this_feedback {
            self.ecn_ce_event = true;
            self.last_loss_event = t;
        }
        self.ce_this_feedback = false;
        self.update_l4s_alpha(t);
        self.update_queue_delay_averages(t);
        self.check_virtual_ce(t);
        if self.srtt_sh_prev > self.srtt_sh && self.fraction_marked == 1.0 {
            // Every packet marked but the RTT falls: the queue drains, skip this CE event.
            self.ecn_ce_event = false;
        }
        if self.loss_event || self.ecn_ce_event || self.virtual_ce_event {
            self.last_loss_event = t;
        }
        if t - self.last_cwnd_update > self.backoff_interval()
            || self.loss_event
            || self.ecn_ce_event
            || self.virtual_ce_event
            || self.is_new_frame
        {
            self.update_cwnd(t);
            self.stream.update_target(self.cfg.hysteresis);
            self.ecn_ce_event = false;
            self.virtual_ce_event = false;
            self.last_cwnd_update = t;
            self.is_new_frame = false;
        }
        self.check_base_delay_reset(t);
        self.update_rates(t);
    }

    fn decision(&self) -> Decision {
        // `isOkToTransmit`: a packet may go while bytes in flight + its size ≤
        // cwnd·windowHeadroom + MSS. rtcc's sender sends while in_flight < cwnd, so the same
        // test for a full-size packet is in_flight < cwnd·windowHeadroom + 1 (smaller packets
        // are held a little earlier than the reference would hold them).
        let limit = self.cwnd * self.window_headroom + 1.0;
        Decision {
            cwnd: Some(limit as u64),
            ..Decision::rate_only(Rate(self.target()), Some(Rate(self.pacing_rate)))
        }
    }

    fn frame_controller(&mut self) -> Option<&mut dyn FrameController> {
        Some(self)
    }

    fn state(&self, out: &mut Vec<(&'static str, f64)>) {
        out.push(("target_bps", self.target()));
        out.push(("rate_share_bps", self.stream.rate_share));
        out.push(("pacing_bps", self.pacing_rate));
        out.push(("window_bytes", self.cwnd));
        out.push(("window_i_bytes", self.cwnd_i));
        out.push(("window_headroom", self.window_headroom));
        out.push(("srtt_ms", self.srtt * 1e3));
        out.push(("queue_delay_ms", self.queue_delay * 1e3));
        out.push(("queue_delay_avg_ms", self.queue_delay_avg * 1e3));
        out.push(("l4s_alpha", self.l4s_alpha));
        out.push(("fraction_marked", self.fraction_marked));
        out.push(("virtual_l4s_alpha", self.virtual_l4s_alpha));
        out.push(("latency_diff_cwnd_scale", self.latency_diff_cwnd_scale));
        out.push(("post_congestion_scale", self.post_congestion_scale));
        out.push(("loss_rate", self.loss_rate));
        out.push(("loss_events", self.counts.loss_events as f64));
        out.push(("ce_events", self.counts.ce_events as f64));
        out.push(("virtual_ce_events", self.counts.virtual_ce_events as f64));
        out.push(("rate_adjust_factor", self.stream.rate_adjust_factor));
        out.push(("target_rate_scale", self.stream.target_rate_scale));
        out.push(("rel_frame_size_high", self.stream.rel_frame_size_high));
        out.push(("rtp_queue_delay_ms", self.stream.rtp_queue_delay * 1e3));
        out.push(("rtp_queue_discards", self.stream.discards as f64));
    }
}

impl FrameController for Scream {
    fn on_frame_encoded(&mut self, _now: Time, frame: &FrameInfo) {
        self.stream.queued_bytes += frame.size as u64;
        self.stream.bytes_rtp += frame.size as u64;
        // `Stream::newMediaFrame` counts the frame (`nFrames++`) before its histogram's preamble
        // test (`nFrames > kRelFrameSizeHistPreamble`).
        self.stream.frames += 1;
        self.stream
            .on_frame(frame.size as f64, self.cfg.max_adaptive_pacing_rate_scale);
        self.is_new_frame = true;
    }

    /// `Stream::newMediaFrame` and `updateTargetBitrate`'s RTP-queue part, at a capture.
    fn frame_action(&mut self, now: Time, view: &FrameView) -> FrameAction {
        let t = secs(now);
        if let Some(last) = self.stream.last_frame {
            // The reference's weights: 0.9 on the new interval.
            self.stream.frame_period = (t - last) * 0.9 + self.stream.frame_period * 0.1;
        }
        self.stream.last_frame = Some(t);
        let delay = view.oldest_queued.map_or(0.0, |o| (now - o).as_secs_f64());
        if view.oldest_queued.is_none() {
            self.stream.queued_bytes = 0;
        }
        self.stream.rtp_queue_delay = delay;
        // rateAdjustFactor: integrate how far the queue's age exceeds half a frame period.
        let period = self.stream.frame_period.max(1e-3);
        let error = RATE_ADJUST_GAIN_1 * (delay - period / 2.0) / period;
        self.stream.rate_adjust_factor =
            (self.stream.rate_adjust_factor + error * RATE_ADJUST_GAIN_2).clamp(0.0, 0.5);
        let mut action = FrameAction::default();
        // `Stream::updateTargetBitrate` starts its discard clock at the first frame
        // (`lastRtpQueueDiscardT_ntp = time_ntp`): no discard in the first 250 ms, "as there is
        // no reliable estimate of the throughput in the initial phase".
        let last_discard = *self.stream.last_discard.get_or_insert(t);
        let discard_allowed = t - last_discard > MIN_RTP_QUEUE_DISCARD_INTERVAL;
        if delay > self.cfg.max_rtp_queue_delay.as_secs_f64() && discard_allowed {
            // The RTP queue is discarded and the encoder restarts from a key frame.
            action.encode = EncodeAction::Reset;
            self.stream.last_discard = Some(t);
            self.stream.discards += 1;
            self.stream.target_rate_scale = 1.0;
            self.stream.queued_bytes = 0;
            self.stream.rtp_queue_delay = 0.0;
        }
        self.stream.update_target(self.cfg.hysteresis);
        action
    }
}

impl ScreamConfig {
    fn validate(&self) -> Result<(), String> {
        let unit = [
            ("loss_beta", self.loss_beta),
            ("ecn_ce_beta", self.ecn_ce_beta),
        ];
        for (name, v) in unit {
            if !(v.is_finite() && v > 0.0 && v <= 1.0) {
                return Err(format!("{name} must be in (0, 1], got {v}"));
            }
        }
        let at_least_one = [
            ("packet_pacing_headroom", self.packet_pacing_headroom),
            (
                "max_adaptive_pacing_rate_scale",
                self.max_adaptive_pacing_rate_scale,
            ),
            ("bytes_in_flight_headroom", self.bytes_in_flight_headroom),
        ];
        for (name, v) in at_least_one {
            if !(v.is_finite() && v >= 1.0) {
                return Err(format!("{name} must be at least 1, got {v}"));
            }
        }
        if !(self.max_window_headroom.is_finite()
            && self.max_window_headroom >= MIN_WINDOW_HEADROOM)
        {
            return Err(format!(
                "max_window_headroom must be at least {MIN_WINDOW_HEADROOM}, got {}",
                self.max_window_headroom
            ));
        }
        if !(self.multiplicative_increase.is_finite()
            && (0.0..=1.0).contains(&self.multiplicative_increase))
        {
            return Err(format!(
                "multiplicative_increase must be 0 to 1, got {}",
                self.multiplicative_increase
            ));
        }
        if !(self.hysteresis.is_finite() && (0.0..=1.0).contains(&self.hysteresis)) {
            return Err(format!(
                "hysteresis must be 0 to 1, got {}",
                self.hysteresis
            ));
        }
        AlphaFilter::parse(&self.l4s_alpha_filter)?;
        for (name, d) in [
            ("queue_delay_target", self.queue_delay_target),
            ("max_rtp_queue_delay", self.max_rtp_queue_delay),
        ] {
            if d.0 == 0 {
                return Err(format!("{name} must be longer than 0"));
            }
        }
        Ok(())
    }
}

pub fn info() -> ControllerInfo {
    ControllerInfo {
        name: "scream".into(),
        summary: "SCReAM v2 (Ericsson, draft-johansson-ccwg-rfc8298bis-screamv2): a self-clocked \
                  congestion window with L4S (l4sAlpha/2), delay (virtual CE), ECN and loss \
                  reactions; target = cwnd/sRTT."
            .into(),
        params: ScreamConfig::param_docs(),
        feedback: SCREAM_FEEDBACK,
        media: Default::default(),
        build: build_fn(build),
    }
}

/// The rates (min, start, max) a configuration gives with the flow's media range.
fn rates(config: &ScreamConfig, ctx: &ControllerContext) -> (Rate, Rate, Rate) {
    let min = config.min_rate.unwrap_or(ctx.media.min_bitrate);
    let max = config
        .max_rate
        .or(ctx.media.max_bitrate)
        .unwrap_or(DEFAULT_MAX_RATE);
    // Without a start rate: what the reference's first window gives, 2 MSS over its initial
    // sRTT (50 ms + 1 ms) through the rate share's margins, about 340 kbit/s at 1200 bytes.
    let mss = ctx.max_payload.0.max(1) as f64;
    let initial =
        8.0 * 2.0 * mss / (SRTT_INIT + 0.001) / RATE_SHARE_MARGIN * mss / (mss + PACKET_OVERHEAD);
    let start = config
        .start_rate
        .or(ctx.media.start_bitrate)
        .unwrap_or(Rate(initial).max(min).min(max));
    (min, start, max)
}

fn build(params: &Params, ctx: &ControllerContext) -> Result<Box<dyn Controller>, ControllerError> {
    let mut config: ScreamConfig = parse_config("scream", params)?;
    if !params.contains_key("l4s") {
        config.l4s = ctx.ecn != crate::packet::EcnMode::Classic;
    }
    let bad = |message: String| ControllerError::BadParams {
        controller: "scream".into(),
        message,
    };
    config.validate().map_err(bad)?;
    let (min, start, max) = rates(&config, ctx);
    if !(min.bps() > 0.0 && min <= start && start <= max && max.bps().is_finite()) {
        return Err(bad(format!(
            "rates must satisfy 0 < min_rate <= start_rate <= max_rate, got {min} / {start} / {max}"
        )));
    }
    boxed(
        "scream",
        Ok(Scream::new(
            config,
            ctx.now,
            min,
            start,
            max,
            ctx.max_payload.0,
        )),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::test_support::signal as get;
    use crate::packet::Ecn;

    fn scream(params: &str) -> Scream {
        let p: Params = toml::from_str(params).unwrap();
        let cfg: ScreamConfig = parse_config("scream", &p).unwrap();
        let (min, start, max) = rates(&cfg, &crate::cc::test_support::context());
        Scream::new(cfg, Time::ZERO, min, start, max, 1200)
    }

    /// A sender of 1200-byte packets, one every `gap_us`, each reported `fb_ms` after it was
    /// sent in batches every 5 ms; `fate(seq)` gives the one-way delay in ms (`None`: lost) and
    /// whether it arrived CE-marked.
    struct Feed {
        seq: u64,
        now_us: u64,
        gap_us: u64,
        pending: Vec<PacketResult>,
    }

    impl Feed {
        fn new(gap_us: u64) -> Feed {
            Feed {
                seq: 0,
                now_us: 0,
                gap_us,
                pending: vec![],
            }
        }

        fn run(
            &mut self,
            c: &mut Scream,
            ms: u64,
            fate: &mut dyn FnMut(u64) -> (Option<u64>, bool),
        ) {
            let end = self.now_us + ms * 1000;
            while self.now_us < end {
                self.now_us += self.gap_us;
                let send = Time(self.now_us * 1000);
                let sent = SentPacket {
                    seq: self.seq,
                    size: 1200,
                    send_time: send,
                    frame: None,
                    index_in_frame: 0,
                    packets_in_frame: 0,
                    kind: PacketKind::Media,
                    in_flight: 1200 * 10,
                };
                c.on_packet_sent(send, &sent);
                let (owd, ce) = fate(self.seq);
                self.pending.push(PacketResult {
                    sent,
                    receive_time: owd.map(|d| Time(send.0 + d * 1_000_000)),
                    ecn: if ce { Ecn::Ce } else { Ecn::Ect1 },
                });
                self.seq += 1;
                if self.now_us.is_multiple_of(5000) {
                    // The report comes back 10 ms after the newest packet left (RTT of the
                    // newest packet: its one-way delay + 10 ms).
                    let now = Time(self.now_us * 1000 + 10_000_000 + 20_000_000);
                    let report = FeedbackReport {
                        feedback_time: now,
                        packets: std::mem::take(&mut self.pending),
                        in_flight: 0,
                        recovery: None,
                    };
                    c.on_feedback(now, &report);
                }
            }
        }
    }

    #[test]
    fn l4s_alpha_rises_fast_to_the_marked_fraction_and_decays_slowly() {
        let mut c = scream("");
        assert_eq!(get(&c, "l4s_alpha"), 0.1, "the reference starts at 0.1");
        // Every second packet marked: each update (> 655 ticks ≈ 10 ms apart) sees a fraction of
        // 0.5 ≥ alpha, so alpha ← 1/8·0.5 + 7/8·alpha: after n updates 0.5 − 0.4·(7/8)^n.
        // 10 ms of packets are two reports 5 ms apart: one update.
        let mut f = Feed::new(500);
        let before = c.l4s_alpha;
        f.run(&mut c, 10, &mut |s| (Some(20), s % 2 == 0));
        let after_one = c.l4s_alpha;
        assert!(
            (after_one - (0.125 * 0.5 + 0.875 * before)).abs() < 1e-12,
            "one update at fraction 0.5: {after_one}"
        );
        f.run(&mut c, 2000, &mut |s| (Some(20), s % 2 == 0));
        assert!((c.l4s_alpha - 0.5).abs() < 0.01, "{}", c.l4s_alpha);
        // No marks: alpha decays by 1/128 per update (updates are > 10 ms apart, reports 5 ms):
        // after 100 ms it is a·(127/128)^k for a whole number k of updates, 6 to 10.
        let a = c.l4s_alpha;
        f.run(&mut c, 100, &mut |_| (Some(20), false));
        let k = (c.l4s_alpha / a).ln() / (1.0f64 - 1.0 / 128.0).ln();
        assert!(
            (k - k.round()).abs() < 1e-9,
            "not a whole number of decays: {k}"
        );
        assert!((6.0..=10.0).contains(&k.round()), "{k} updates in 100 ms");
    }

    #[test]
    fn with_the_earlier_drafts_ewma_l4s_alpha_averages_the_marked_fraction() {
        // l4s_alpha_filter = "ewma": alpha ← 1/16·F + 15/16·alpha at every update, up or down,
        // so it settles on the marked fraction itself (the fast-up filter rests above it).
        let mut c = scream("l4s_alpha_filter = \"ewma\"");
        let mut f = Feed::new(500);
        let before = c.l4s_alpha;
        f.run(&mut c, 10, &mut |s| (Some(20), s % 2 == 0));
        assert!(
            (c.l4s_alpha - (0.5 / 16.0 + 15.0 / 16.0 * before)).abs() < 1e-12,
            "one update at fraction 0.5: {}",
            c.l4s_alpha
        );
        f.run(&mut c, 2000, &mut |s| (Some(20), s % 4 == 0));
        assert!((c.l4s_alpha - 0.25).abs() < 0.01, "{}", c.l4s_alpha);
        // No marks: the same gain down, 15/16 per update, not the fast-up filter's 127/128
        // (after a first update whose fraction still holds marks of the last reports).
        f.run(&mut c, 20, &mut |_| (Some(20), false));
        let a = c.l4s_alpha;
        f.run(&mut c, 100, &mut |_| (Some(20), false));
        let k = (c.l4s_alpha / a).ln() / (15.0f64 / 16.0).ln();
        assert!(
            (k - k.round()).abs() < 1e-9 && (6.0..=10.0).contains(&k.round()),
            "{k}"
        );
        let p: Params = toml::from_str("l4s_alpha_filter = \"dctcp\"").unwrap();
        let bad: ScreamConfig = parse_config("scream", &p).unwrap();
        assert!(bad.validate().unwrap_err().contains("l4s_alpha_filter"));
    }

    /// A controller in steady state at `cwnd` with `alpha`, far from its inflexion point.
    fn at_window(params: &str, cwnd: f64, alpha: f64, srtt: f64) -> Scream {
        let mut c = scream(params);
        c.cwnd = cwnd;
        c.cwnd_i = cwnd / 2.0; // sclI = (8·1)² clamped to 1
        c.l4s_alpha = alpha;
        c.srtt = srtt;
        c.last_congestion_detected = 0.0;
        c
    }

    #[test]
    fn an_l4s_ce_event_backs_off_alpha_over_two_scaled_by_rtt() {
        // l4sAlpha = 0.2: cwnd × (1 − 0.1), exactly (no bytes acked, so no growth).
        let mut c = at_window("", 100_000.0, 0.2, 0.025);
        c.ecn_ce_event = true;
        c.update_cwnd(1.0);
        assert!((c.cwnd - 90_000.0).abs() < 1e-6, "{}", c.cwnd);
        // sRTT 60 ms is two 30 ms backoff intervals: the backoff is halved, 5 %.
        // (30 ms is 1966/65536 s in the reference, so the divisor is 2.0002.)
        let mut c = at_window("", 100_000.0, 0.2, 0.060);
        c.ecn_ce_event = true;
        c.update_cwnd(1.0);
        let halved = 100_000.0 * (1.0 - 0.1 / (0.060 / MIN_BACKOFF_INTERVAL));
        assert!((c.cwnd - halved).abs() < 1e-6, "{} vs {halved}", c.cwnd);
        assert!((c.cwnd - 95_000.0).abs() < 1.0);
        // Near the inflexion point (sclI = 0.1, floored at 0.25) with no queue: a quarter.
        let mut c = at_window("", 100_000.0, 0.2, 0.025);
        c.cwnd_i = 100_000.0;
        c.ecn_ce_event = true;
        c.update_cwnd(1.0);
        assert!((c.cwnd - 97_500.0).abs() < 1e-6, "{}", c.cwnd);
        // Classic ECN (l4s = false): × ecn_ce_beta = 0.9 whatever alpha.
        let mut c = at_window("l4s = false", 100_000.0, 0.0, 0.025);
        c.ecn_ce_event = true;
        c.update_cwnd(1.0);
        assert!((c.cwnd - 90_000.0).abs() < 1e-6, "{}", c.cwnd);
        // A loss event: × loss_beta = 0.7.
        let mut c = at_window("", 100_000.0, 0.2, 0.025);
        c.loss_event = true;
        c.update_cwnd(1.0);
        assert!((c.cwnd - 70_000.0).abs() < 1e-6, "{}", c.cwnd);
        assert_eq!(
            c.cwnd_i, 100_000.0,
            "the inflexion point is the window before the cut"
        );
    }

    #[test]
    fn a_queue_past_half_the_target_is_a_virtual_ce_of_proportional_alpha() {
        // 20 ms one way, then 100 ms from packet 2000 on: an 80 ms queue against a 100 ms target
        // gives a virtual alpha of (80 − 50)/50 = 0.6, divided by sRTT/30 ms.
        let mut c = scream("");
        let mut f = Feed::new(1000);
        f.run(&mut c, 2000, &mut |_| (Some(20), false));
        assert_eq!(get(&c, "virtual_ce_events"), 0.0, "no queue, no virtual CE");
        f.run(&mut c, 3000, &mut |_| (Some(100), false));
        assert!(get(&c, "virtual_ce_events") > 10.0);
        let expected = 0.6 / (c.srtt / MIN_BACKOFF_INTERVAL).max(1.0);
        // queueDelayAvg converges on 80 ms with gain 1/4 per 30 ms: exact after 3 s to 1e-6, but
        // for the one-way delays' Q16 ticks (80 ms is 5242.88 ticks: 5242 or 5243 whole ones).
        assert!(
            (c.virtual_l4s_alpha - expected).abs() < 1e-3,
            "{} vs {expected}",
            c.virtual_l4s_alpha
        );
        // A queue under half the target never triggers it.
        let mut c = scream("");
        let mut f = Feed::new(1000);
        f.run(&mut c, 2000, &mut |_| (Some(20), false));
        f.run(&mut c, 3000, &mut |_| (Some(65), false));
        assert_eq!(get(&c, "virtual_ce_events"), 0.0, "45 ms < 50 ms");
    }

    #[test]
    fn the_window_grows_about_one_mss_per_rtt_and_never_past_twice_what_is_in_flight() {
        // One update with 10 packets (12 000 bytes) acknowledged at cwnd 120 000, sRTT 25 ms,
        // far from cwndI, long after congestion: MSS·acked/cwnd = 120, times the multiplicative
        // term 1 + 0.05·cwnd/MSS = 6.
        let mut c = at_window("", 120_000.0, 0.0, 0.025);
        c.last_congestion_detected = f64::NEG_INFINITY;
        c.max_bytes_in_flight = 100_000;
        c.bytes_newly_acked = 12_000;
        c.update_cwnd(1.0);
        assert!((c.cwnd - 120_720.0).abs() < 1e-6, "{}", c.cwnd);
        // Just after congestion (postCongestionScale 0) only the additive part: + 120.
        let mut c = at_window("", 120_000.0, 0.0, 0.025);
        c.last_congestion_detected = 1.0;
        c.max_bytes_in_flight = 100_000;
        c.bytes_newly_acked = 12_000;
        c.update_cwnd(1.0);
        assert!((c.cwnd - 120_120.0).abs() < 1e-6, "{}", c.cwnd);
        // sRTT of 10 ms: the increment is scaled by 10/25.
        let mut c = at_window("", 120_000.0, 0.0, 0.010);
        c.last_congestion_detected = 1.0;
        c.max_bytes_in_flight = 100_000;
        c.bytes_newly_acked = 12_000;
        c.update_cwnd(1.0);
        assert!((c.cwnd - 120_048.0).abs() < 1e-6, "{}", c.cwnd);
        // An application-limited flow: 10 packets in flight allow at most MSS + 2·12 000.
        let mut c = scream("start_rate = \"1Mbps\"");
        let mut f = Feed::new(1000);
        f.run(&mut c, 20_000, &mut |_| (Some(20), false));
        let limit = 1200.0 + 2.0 * 12_000.0;
        assert!(c.cwnd <= limit, "cwnd {} > {limit}", c.cwnd);
        // It grows until the next step would pass the limit (`if (cwndTmp <= maxAllowed)`): a
        // step is 72 000 acknowledged bytes per 30 ms × MSS/cwnd, ×(1 + 5 % of cwnd/MSS), about
        // 7 kB here, so where it stops depends on the steps' phase (measured 0.86 of the limit).
        assert!(
            c.cwnd > 0.7 * limit,
            "it does grow to the limit: {}",
            c.cwnd
        );
    }

    #[test]
    fn the_target_is_the_windows_rate_share() {
        // 8·cwnd/(sRTT + 1 ms), / 1.1, times MSS/(MSS + 20), with cwnd ≥ 10 MSS (no small-window
        // scale), within the rate bounds.
        let mut c = at_window("max_rate = \"100Mbps\"", 120_000.0, 0.0, 0.025);
        c.update_cwnd(1.0);
        c.stream.update_target(0.0);
        let expected = 8.0 * c.cwnd / 0.026 / 1.1 * 1200.0 / 1220.0;
        assert!(
            (c.target() - expected).abs() < 1e-6,
            "{} vs {expected}",
            c.target()
        );
        // Pacing: 1.5 × the target (no encoder output measured yet, no large frame).
        assert!((c.pacing() - 1.5 * c.stream.target).abs() < 1e-6);
    }

    #[test]
    fn isolated_losses_on_an_empty_queue_are_ignored_frequent_ones_cut() {
        // One loss in 1000 (0.1 % < 1 %) with no queue: no loss event.
        let mut c = scream("start_rate = \"5Mbps\"");
        let mut f = Feed::new(1000);
        f.run(&mut c, 5000, &mut |s| {
            ((s % 1000 != 999).then_some(20), false)
        });
        assert_eq!(get(&c, "loss_events"), 0.0);
        // One in 20 (5 %): the loss rate passes 1 % and losses become events.
        f.run(&mut c, 5000, &mut |s| ((s % 20 != 19).then_some(20), false));
        assert!(get(&c, "loss_events") > 0.0);
    }

    #[test]
    fn a_queue_older_than_100ms_resets_the_encoder_at_most_every_250ms() {
        let mut c = scream("");
        let view = |age_ms: u64, now_ms: u64| FrameView {
            oldest_queued: Some(Time::from_millis(now_ms - age_ms)),
            resolution: None,
        };
        let a = c.frame_action(Time::from_millis(1000), &view(50, 1000));
        assert_eq!(a.encode, EncodeAction::Encode);
        let a = c.frame_action(Time::from_millis(1033), &view(120, 1033));
        assert_eq!(
            a.encode,
            EncodeAction::Encode,
            "within 250 ms of the first frame (the reference's discard clock starts there)"
        );
        let a = c.frame_action(Time::from_millis(1300), &view(120, 1300));
        assert_eq!(a.encode, EncodeAction::Reset);
        let a = c.frame_action(Time::from_millis(1366), &view(150, 1366));
        assert_eq!(
            a.encode,
            EncodeAction::Encode,
            "within 250 ms of the last discard"
        );
        let a = c.frame_action(Time::from_millis(1600), &view(150, 1600));
        assert_eq!(a.encode, EncodeAction::Reset);
        assert!(
            get(&c, "rate_adjust_factor") > 0.0,
            "a lingering queue lowers the target"
        );
    }

    #[test]
    fn l4s_follows_the_flows_ecn_unless_given() {
        use crate::packet::EcnMode;
        let l4s = |ecn: EcnMode, params: &str| {
            let ctx = ControllerContext {
                ecn,
                ..crate::cc::test_support::context()
            };
            let c = build(&toml::from_str(params).unwrap(), &ctx).unwrap();
            crate::cc::test_support::signal(c.as_ref(), "l4s_alpha") > 0.0
        };
        // l4sAlpha starts at 0.1 in L4S mode and stays 0 in classic mode.
        assert!(l4s(EcnMode::L4s, ""), "ecn = \"l4s\": L4S reaction");
        assert!(l4s(EcnMode::Off, ""), "no ECN: no marks, the L4S default");
        assert!(
            !l4s(EcnMode::Classic, ""),
            "ecn = true: the classic x0.9 reaction"
        );
        assert!(l4s(EcnMode::Classic, "l4s = true"), "given, it wins");
        assert!(!l4s(EcnMode::L4s, "l4s = false"));
    }

    #[test]
    fn parameters_and_rates_are_checked() {
        let ctx = crate::cc::test_support::context();
        for bad in [
            "loss_beta = 0",
            "loss_beta = 1.5",
            "ecn_ce_beta = -1",
            "packet_pacing_headroom = 0.5",
            "max_window_headroom = 1",
            "multiplicative_increase = 2",
            "hysteresis = -0.1",
            "queue_delay_target = \"0ms\"",
            "min_rate = \"20Mbps\"",
            "start_rate = \"30Mbps\"",
            "no_such_parameter = 1",
        ] {
            let p: Params = toml::from_str(bad).unwrap();
            assert!(crate::cc::create("scream", &p, &ctx).is_err(), "{bad}");
        }
        let p: Params = toml::from_str("l4s = false\nmax_rate = \"50Mbps\"").unwrap();
        let c = crate::cc::create("scream", &p, &ctx).unwrap();
        assert!(c.decision().cwnd.is_some(), "a window controller");
    }
}
