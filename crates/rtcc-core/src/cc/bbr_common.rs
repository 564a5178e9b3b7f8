//! What BBR v1 (`bbr.rs`) and BBRv2 (`bbr2.rs`) share: the constants both Linux modules carry
//! (`net/ipv4/tcp_bbr.c` and Google's v2alpha `net/ipv4/tcp_bbr2.c` declare the same values
//! under the same names), the pacing-rate and send-quantum helpers, the ACK-aggregation
//! estimator, the mode codes, and the BBR-S / BBR2-S bandwidth estimator of Vargas et al.
//! ("BBR Bufferbloat in DASH Video", WWW '21, §7).
//!
//! ## The BBR-S estimator (`bw_estimator = "percentile"`)
//!
//! BBR's bottleneck-bandwidth estimate is the maximum delivery-rate sample of a window (v1: the
//! last 10 rounds; v2: the last one or two bandwidth-probing cycles). Behind a token-bucket
//! shaper with a deep buffer, the bucket's burst lets some flights through faster than the
//! token rate and a single such sample lifts the maximum (the paper's §6). BBR-S replaces the
//! maximum by a high percentile of the recent samples (§7.1):
//!
//! 1. every ACK that carries a valid delivery-rate sample of a *non*-application-limited
//!    flight adds it to a history of the last `HIST_SIZE` = 100 samples;
//! 2. the estimate is the history's 85th percentile (`HIST_PERCENTILE`); it replaces the
//!    maximum everywhere the controller reads it (pacing rate, window target, full-pipe test,
//!    DRAIN exit, gain-cycle tests, ACK aggregation). The original filter is still fed, as
//!    the authors' code does, so its value stays observable (`max_filter_bw_bps`).
//!
//! Two readings of that description are implemented (`percentile_reading`):
//!
//! - `"code"` (default): what the released `bbrs.c` / `bbr2s.c` do, as the extraction's §3.2
//!   paraphrases them. An index starts at 0 and is incremented *before* each write, wrapping to
//!   0 after 99; the history counts as full once the index has wrapped (the 100th sample).
//!   Until then the estimate is the newest sample (the code's comment says "max", the code
//!   returns the newest slot it did not sort); from then on it is `sorted[85]` of the 100
//!   samples (ascending, 0-based: the 86th smallest, slightly above the nearest-rank 85th
//!   percentile). Feeding 1..100 gives 86; 100 samples of which `k` are spikes give the normal
//!   value while `k ≤ 14` and the spike from `k = 15` on.
//! - `"text"`: only what the paper's text specifies (§7.1, §7.2): the same 100-sample history of
//!   non-app-limited samples and "the 85th percentile", read with the usual nearest-rank
//!   definition (the `⌈0.85 n⌉`-th smallest of the `n` samples held, `sorted[84]` once full),
//!   computed over the samples held also while fewer than 100 have been seen (the text
//!   describes no warm-up). For BBR2-S the text adds "we set the estimated bandwidth to be 85 %
//!   of the value": `bbr2` multiplies the percentile by 0.85 ([`BBR2S_TEXT_SCALE`]); `bbr`
//!   does not (the text gives BBR-S no such factor). So the differences from `"code"` are the
//!   order statistic (85th against 86th smallest), the warm-up (percentile of what is held
//!   against the newest sample) and, for v2 only, the 0.85 factor.
//!
//! One judgment call applies to both readings: the released code keeps one module-global
//! history shared by every connection and never reset (extraction §3.2, §3.4-1); here each
//! controller (each flow) has its own, as the paper's text implies and the extraction's §3.5 and
//! §7 #3 recommend. A process-wide history would also make a flow's result depend on which
//! flows ran before it in the same process, which rtcc's determinism rules out.

use crate::units::{Duration, Rate, Time};
use serde::Deserialize;

/// Linux `BBR_SCALE` / `BBR_UNIT`: gains are fractions of 256 in both modules.
pub(crate) const BBR_UNIT: u64 = 256;
/// Linux `bbr_high_gain` = `BBR_UNIT * 2885 / 1000 + 1` (2/ln 2, rounded up), the STARTUP
/// pacing gain; also v2's `bbr_startup_cwnd_gain` and v1's STARTUP cwnd gain.
pub(crate) const HIGH_GAIN: f64 = 739.0 / 256.0;
/// Linux `bbr_drain_gain` = `BBR_UNIT * 1000 / 2885`.
pub(crate) const DRAIN_GAIN: f64 = 88.0 / 256.0;
/// Linux `bbr_cwnd_gain` = `BBR_UNIT * 2`: the PROBE_BW window gain.
pub(crate) const CWND_GAIN: f64 = 2.0;
/// Linux `bbr_pacing_gain[]` (`CYCLE_LEN` = 8 entries). v2 names the first four:
/// `BBR_BW_PROBE_UP` = 0 (5/4), `DOWN` = 1 (3/4), `CRUISE` = 2 and `REFILL` = 3 (1).
pub(crate) const PACING_GAIN: [f64; 8] = [1.25, 0.75, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0];
/// Linux `bbr_cycle_rand`.
pub(crate) const CYCLE_RAND: u64 = 7;
/// Linux `bbr_min_rtt_win_sec` = 10.
pub(crate) const MIN_RTT_WIN: Duration = Duration(10_000_000_000);
/// Linux `bbr_probe_rtt_mode_ms` = 200.
pub(crate) const PROBE_RTT_TIME: Duration = Duration(200_000_000);
/// Linux `bbr_cwnd_min_target` = 4 (packets).
pub(crate) const CWND_MIN_TARGET: u64 = 4;
/// Linux `bbr_full_bw_thresh` = `BBR_UNIT * 5 / 4`, `bbr_full_bw_cnt` = 3.
pub(crate) const FULL_BW_THRESH: f64 = 1.25;
pub(crate) const FULL_BW_CNT: u32 = 3;
/// Linux `bbr_pacing_margin_percent` = 1.
pub(crate) const PACING_MARGIN: f64 = 0.01;
/// Linux `bbr_extra_acked_win_rtts` = 5, `bbr_extra_acked_max_us` = 100 ms,
/// `bbr_ack_epoch_acked_reset_thresh` = 2^20 packets.
pub(crate) const EXTRA_ACKED_WIN_RTTS: u32 = 5;
pub(crate) const EXTRA_ACKED_MAX: Duration = Duration(100_000_000);
pub(crate) const ACK_EPOCH_RESET_PACKETS: u64 = 1 << 20;
/// Linux `bbr_min_tso_rate` (bit/s), `sk_pacing_shift` default (10: 1/1024 s of data), GSO
/// size cap (`GSO_MAX_SIZE` 64 KB less `MAX_TCP_HEADER`), and the 0x7F cap of the v1
/// `bbr_tso_segs_goal`.
pub(crate) const MIN_TSO_RATE: f64 = 1_200_000.0;
pub(crate) const PACING_SHIFT_DIV: f64 = 1024.0;
pub(crate) const GSO_MAX_SIZE: u64 = 65_536;
pub(crate) const GSO_MAX_BYTES: u64 = GSO_MAX_SIZE - 1 - 320;
pub(crate) const MAX_TSO_SEGS: u64 = 127;
/// `bbr_init_pacing_rate_from_rtt`'s nominal RTT before any sample.
pub(crate) const NOMINAL_RTT: Duration = Duration(1_000_000);

/// BBR-S history size: "we use a sample history size of 100" (paper §7.1).
pub const HIST_SIZE: usize = 100;
/// BBR-S `hist_percentile` = 85 (paper §7.1; the code's `P`, used as `sorted[85]`).
pub const HIST_PERCENTILE: usize = 85;
/// BBR2-S as the paper's text describes it: "we set the estimated bandwidth to be 85 % of the
/// value" (§7.2). The released `bbr2s.c` has no such factor (extraction §3.2).
pub const BBR2S_TEXT_SCALE: f64 = 0.85;

/// BBR's modes (Linux `enum bbr_mode`, same codes in v1 and v2), logged as the `mode` signal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Startup = 0,
    Drain = 1,
    ProbeBw = 2,
    ProbeRtt = 3,
}

/// Which bottleneck-bandwidth estimate the controller reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BwEstimator {
    /// The version's own windowed maximum (Linux).
    #[default]
    Max,
    /// BBR-S / BBR2-S: a percentile of the last 100 non-app-limited samples.
    Percentile,
}

/// How `bw_estimator = "percentile"` is read (see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PercentileReading {
    /// What the authors' released code does.
    #[default]
    Code,
    /// What the paper's text says.
    Text,
}

/// The BBR-S / BBR2-S sample history and its percentile (bytes per second).
#[derive(Debug, Clone)]
pub struct PercentileFilter {
    reading: PercentileReading,
    hist: [f64; HIST_SIZE],
    /// The code's write index: incremented before each write, wrapping after `HIST_SIZE - 1`.
    idx: usize,
    /// The code's `full`: the index has wrapped once.
    full: bool,
    /// Samples inserted so far (the text reading's warm-up).
    count: u64,
    est: f64,
}

impl PercentileFilter {
    pub fn new(reading: PercentileReading) -> PercentileFilter {
        PercentileFilter {
            reading,
            hist: [0.0; HIST_SIZE],
            idx: 0,
            full: false,
            count: 0,
            est: 0.0,
        }
    }

    /// The current estimate (0 before the first sample).
    pub fn estimate(&self) -> f64 {
        self.est
    }

    /// Samples inserted so far.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Insert a non-app-limited delivery-rate sample (the caller filters app-limited ones).
    pub fn insert(&mut self, bw: f64) {
        self.count += 1;
        self.idx += 1;
        if self.idx > HIST_SIZE - 1 {
            self.full = true;
            self.idx = 0;
        }
        self.hist[self.idx] = bw;
        self.est = match self.reading {
            PercentileReading::Code if self.full => {
                self.order_statistic(HIST_SIZE, HIST_PERCENTILE)
            }
            PercentileReading::Code => bw,
            PercentileReading::Text => {
                let n = (self.count as usize).min(HIST_SIZE);
                let rank = (HIST_PERCENTILE * n).div_ceil(100);
                self.order_statistic(n, rank - 1)
            }
        };
    }

    /// The `k`-th smallest (0-based) of the `n` newest samples.
    fn order_statistic(&self, n: usize, k: usize) -> f64 {
        let mut held = [0.0f64; HIST_SIZE];
        if n == HIST_SIZE {
            held = self.hist;
        } else {
            // Before the first wrap the samples sit in slots 1..=idx.
            held[..n].copy_from_slice(&self.hist[1..=n]);
        }
        let held = &mut held[..n];
        held.select_nth_unstable_by(k, f64::total_cmp);
        held[k]
    }
}

/// Linux `bbr_bw_to_pacing_rate`: `gain × bw × (1 − 1 %)`, `bw` in bytes per second.
pub(crate) fn bw_to_pacing(bw: f64, gain: f64) -> Rate {
    Rate(bw * 8.0 * gain * (1.0 - PACING_MARGIN))
}

/// Linux `bbr_tso_segs_goal` in packets of `mss` bytes: about 1 ms of data at the pacing rate
/// (`sk_pacing_shift` = 10) plus `extra` bytes (v2's min-RTT allowance), capped at one GSO
/// super-packet, at least 1 packet below 1.2 Mbit/s and 2 above, at most 127. With no
/// segmentation offload a quantum is whole packets.
pub(crate) fn tso_segs_goal(pacing_rate: Rate, mss: u64, extra: u64) -> u64 {
    let bytes = ((pacing_rate.bps() / 8.0 / PACING_SHIFT_DIV) as u64 + extra).min(GSO_MAX_BYTES);
    let min = if pacing_rate.bps() < MIN_TSO_RATE {
        1
    } else {
        2
    };
    (bytes / mss).max(min).min(MAX_TSO_SEGS)
}

/// Linux `bbr_bdp`: `ceil(bw × min_rtt × gain)` in packets of `mss` bytes, `bw` in bytes per
/// second; `init_cwnd` before any RTT sample.
pub(crate) fn bdp_packets(
    bw: f64,
    min_rtt: Option<Duration>,
    gain: f64,
    mss: u64,
    init_cwnd: u64,
) -> u64 {
    match min_rtt {
        None => init_cwnd,
        Some(r) => (bw * r.as_secs_f64() * gain / mss as f64 - 1e-9)
            .ceil()
            .max(0.0) as u64,
    }
}

/// Linux `bbr_update_ack_aggregation` / `bbr_extra_acked`: the largest excess of acknowledged
/// data over `bw × epoch` in the last one or two windows of rounds. Counts are in the caller's
/// unit (`unit` of them per packet: bytes for v1, packets for v2) and `bw` is in those units per
/// second.
#[derive(Debug, Clone)]
pub(crate) struct AckAggregation {
    extra_acked: [u64; 2],
    win_rtts: u32,
    idx: usize,
    epoch_stamp: Time,
    epoch_acked: u64,
}

impl AckAggregation {
    pub fn new(now: Time) -> AckAggregation {
        AckAggregation {
            extra_acked: [0; 2],
            win_rtts: 0,
            idx: 0,
            epoch_stamp: now,
            epoch_acked: 0,
        }
    }

    /// Restart the sampling epoch (Linux `bbr_cwnd_event(CA_EVENT_TX_START)`).
    pub fn restart_epoch(&mut self, now: Time) {
        self.epoch_stamp = now;
        self.epoch_acked = 0;
    }

    /// `max(extra_acked[0], extra_acked[1])`.
    pub fn max(&self) -> u64 {
        self.extra_acked[0].max(self.extra_acked[1])
    }

    /// One ACK that acknowledged `acked` and produced a valid rate sample. `now` is the
    /// delivery time (`delivered_mstamp`), `win_rtts` the window length in rounds.
    #[allow(clippy::too_many_arguments)]
    pub fn update(
        &mut self,
        round_start: bool,
        win_rtts: u32,
        acked: u64,
        now: Time,
        bw: f64,
        cwnd: u64,
        unit: u64,
    ) {
        if round_start {
            self.win_rtts = (self.win_rtts + 1).min(31);
            if self.win_rtts >= win_rtts {
                self.win_rtts = 0;
                self.idx ^= 1;
                self.extra_acked[self.idx] = 0;
            }
        }
        let epoch = (now - self.epoch_stamp).as_secs_f64();
        let mut expected = (bw * epoch) as u64;
        let reset = ACK_EPOCH_RESET_PACKETS * unit;
        if self.epoch_acked <= expected || self.epoch_acked + acked >= reset {
            self.epoch_acked = 0;
            self.epoch_stamp = now;
            expected = 0;
        }
        self.epoch_acked = (self.epoch_acked + acked).min(reset - unit);
        let extra = self.epoch_acked.saturating_sub(expected).min(cwnd);
        let slot = &mut self.extra_acked[self.idx];
        *slot = (*slot).max(extra);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fed(reading: PercentileReading, samples: impl IntoIterator<Item = f64>) -> f64 {
        let mut f = PercentileFilter::new(reading);
        for s in samples {
            f.insert(s);
        }
        f.estimate()
    }

    #[test]
    fn the_code_reading_takes_sorted_85_of_the_last_100_samples() {
        // Extraction §6.3: "feed 1..100 ⇒ est = 86" (ascending, 0-based index 85).
        assert_eq!(
            fed(PercentileReading::Code, (1..=100).map(f64::from)),
            86.0,
            "sorted[85] of 1..100 is the 86th smallest"
        );
        // The window slides: 1..200 keeps 101..200, whose sorted[85] is 186.
        assert_eq!(
            fed(PercentileReading::Code, (1..=200).map(f64::from)),
            186.0
        );
        // Extraction §6.3: 100 samples of 25 then k spikes of 250 (all within the last 100):
        // up to 14 spikes leave 25, 15 or more give 250.
        for k in 0..=30 {
            let est = fed(
                PercentileReading::Code,
                std::iter::repeat_n(25.0, 100).chain(std::iter::repeat_n(250.0, k)),
            );
            let expect = if k <= 14 { 25.0 } else { 250.0 };
            assert_eq!(est, expect, "{k} spikes among the last 100 samples");
        }
    }

    #[test]
    fn the_code_reading_returns_the_newest_sample_during_warm_up() {
        // Extraction §3.2 / §7 #4: before the index wraps (99 samples) the code returns the
        // newest sample, not the maximum its comment promises.
        let mut f = PercentileFilter::new(PercentileReading::Code);
        for (i, s) in [5.0, 50.0, 7.0, 3.0].into_iter().enumerate() {
            f.insert(s);
            assert_eq!(f.estimate(), s, "sample {i}: the newest");
        }
        for k in 5..=99 {
            f.insert(k as f64);
            assert_eq!(f.estimate(), k as f64, "sample {k} is still warm-up");
        }
        f.insert(1000.0);
        assert_eq!(f.count(), 100);
        // The 100 samples held: 5, 50, 7, 3, 5..=99, 1000. Sorted: 3, 5, 5, 6, 7, 7, 8, ...,
        // so value v ≥ 8 sits at index v − 2 up to 49, then 50, 50 and v ≥ 51 at index v − 1:
        // sorted[85] is 86.
        assert_eq!(f.estimate(), 86.0, "the 100th sample fills the history");
    }

    #[test]
    fn the_text_reading_is_the_nearest_rank_85th_percentile_of_what_is_held() {
        // Nearest rank: the ⌈0.85 × 100⌉ = 85th smallest of 1..100 is 85.
        assert_eq!(fed(PercentileReading::Text, (1..=100).map(f64::from)), 85.0);
        // With k spikes the 85th smallest stays normal while 100 − k ≥ 85.
        for k in 0..=30 {
            let est = fed(
                PercentileReading::Text,
                std::iter::repeat_n(25.0, 100).chain(std::iter::repeat_n(250.0, k)),
            );
            let expect = if k <= 15 { 25.0 } else { 250.0 };
            assert_eq!(est, expect, "{k} spikes (text reading)");
        }
        // Warm-up: the percentile of the samples held (⌈0.85 × 4⌉ = 4th smallest of 4, then
        // ⌈0.85 × 10⌉ = 9th smallest of 10).
        assert_eq!(fed(PercentileReading::Text, [5.0, 50.0, 7.0, 3.0]), 50.0);
        assert_eq!(fed(PercentileReading::Text, (1..=10).map(f64::from)), 9.0);
        assert_eq!(fed(PercentileReading::Text, [42.0]), 42.0);
    }

    #[test]
    fn the_send_quantum_and_bdp_follow_linux() {
        // 12 Mbit/s: 1.5 kB per 1.024 ms, so one 1500-byte packet, raised to the minimum of 2
        // above 1.2 Mbit/s; below it the minimum is 1.
        assert_eq!(tso_segs_goal(Rate::from_mbps(12.0), 1500, 0), 2);
        assert_eq!(tso_segs_goal(Rate::from_mbps(1.0), 1500, 0), 1);
        assert_eq!(tso_segs_goal(Rate::from_mbps(1000.0), 1500, 0), 43);
        // v2's min-RTT allowance of 64 KB at zero RTT hits the GSO cap.
        assert_eq!(tso_segs_goal(Rate::from_mbps(12.0), 1500, 65_536), 43);
        let rtt = Some(Duration::from_millis(41));
        assert_eq!(bdp_packets(1.5e6, rtt, 1.0, 1500, 10), 41);
        assert_eq!(bdp_packets(1.5e6, rtt, 2.0, 1500, 10), 82);
        assert_eq!(bdp_packets(1.5e6, None, 2.0, 1500, 10), 10, "no RTT yet");
    }
}
