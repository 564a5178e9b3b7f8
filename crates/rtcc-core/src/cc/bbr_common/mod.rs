//! What BBR v1 (`bbr.rs`) and BBRv2 (`bbr2.rs`) share. The two Linux modules
//! (`net/ipv4/tcp_bbr.c` and Google's v2alpha `net/ipv4/tcp_bbr2.c`) declare the same constants
//! under the same names and compute much of the send path alike; what they compute alike is
//! written once here, one file per mechanism:
//!
//! - this file: the parameters both take (`bbr_config!`), the constants, the mode codes and
//!   their gains (`bbr_update_gains`), round counting (`bbr_update_round_start`), the full-pipe
//!   test (`bbr_check_full_bw_reached`), the BDP (`bbr_bdp`), the window saved for recovery and
//!   PROBE_RTT (`bbr_save_cwnd`), the window's growth toward its target (`bbr_set_cwnd`), the
//!   decision both report and their random stream;
//! - `pacing.rs`: the pacing rate, the send quantum and the packets in the network at the next
//!   departure;
//! - `ack_aggregation.rs`: the ACK-aggregation estimator and its window allowance;
//! - `probe_rtt.rs`: PROBE_RTT's timer;
//! - `lt_bw.rs`: v1's long-term ("policer") bandwidth estimator;
//! - `percentile.rs`: the BBR-S / BBR2-S bandwidth estimator (Vargas et al., "BBR Bufferbloat in
//!   DASH Video", WWW '21, §7).
//!
//! What differs stays with each version: the unit (v1 counts its window in bytes, v2 in
//! packets; the shared pieces take it as a parameter), the quantization budget, the min-RTT
//! filters (v1 keeps one 10 s minimum; v2 a 5 s one that feeds the 10 s one, and `<=` refreshes
//! it), PROBE_BW's phases, the window in PROBE_RTT and the response to loss.

use super::reno::CaState;
use super::Decision;
use crate::units::{Duration, Rate, Time};
use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;

mod ack_aggregation;
mod lt_bw;
mod pacing;
pub mod percentile;
mod probe_rtt;

pub(crate) use ack_aggregation::{AckAggregation, EXTRA_ACKED_WIN_RTTS};
pub(crate) use lt_bw::{LongTermBw, LtAck, LtEvent};
pub(crate) use pacing::{tso_segs_goal, Pacing, GSO_MAX_SIZE};
pub(crate) use percentile::with_percentile;
pub use percentile::{BwEstimator, PercentileFilter, PercentileReading};
pub use percentile::{BBR2S_TEXT_SCALE, HIST_PERCENTILE, HIST_SIZE};
pub(crate) use probe_rtt::{ProbeRtt, ProbeRttAck};

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

/// BBR's modes (Linux `enum bbr_mode`, same codes in v1 and v2), logged as the `mode` signal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Startup = 0,
    Drain = 1,
    ProbeBw = 2,
    ProbeRtt = 3,
}

/// Declares a version's config: the parameters both versions take (`bbr`, `bbr-s`, `bbr2`,
/// `bbr2-s`), with the doc of `seed`, which draws something else in each.
///
/// ```ignore
/// bbr_config! {
///     /// BBR v1's parameters.
///     pub struct BbrConfig {
///         /// seed of the random gain-cycle start phase (mixed with the start time)
///         seed,
///     }
/// }
/// ```
macro_rules! bbr_config {
    (
        $(#[$attr:meta])*
        pub struct $name:ident {
            $(#[doc = $seed_doc:expr])*
            seed $(,)?
        }
    ) => {
        $crate::cc::params::controller_config! {
            $(#[$attr])*
            pub struct $name {
                #[doc = $crate::cc::reno::tcp_param_doc!(mss)]
                pub mss: $crate::units::Bytes = $crate::cc::reno::default_mss(),
                #[doc = $crate::cc::reno::tcp_param_doc!(initial_cwnd)]
                pub initial_cwnd: u32 = $crate::cc::reno::default_initial_cwnd(),
                $(#[doc = $seed_doc])*
                pub seed: u64 = 1,
                /// bottleneck-bandwidth estimate: "max" (the Linux windowed maximum) or
                /// "percentile" (BBR-S / BBR2-S: 85th percentile of the last 100 non-app-limited
                /// samples)
                ///
                /// `"max"` is the version's own filter, as in Linux: v1's windowed maximum,
                /// v2alpha's `max_bw`; `"percentile"` is in `percentile.rs`.
                pub bw_estimator: $crate::cc::bbr_common::BwEstimator =
                    $crate::cc::bbr_common::BwEstimator::Max,
                /// with bw_estimator = "percentile": "code" (the authors' released code:
                /// sorted[85], newest sample during warm-up) or "text" (the paper's text:
                /// nearest-rank 85th percentile of what is held; bbr2 also scales it by 0.85)
                ///
                /// See `percentile.rs`.
                pub percentile_reading: $crate::cc::bbr_common::PercentileReading =
                    $crate::cc::bbr_common::PercentileReading::Code,
            }
        }
    };
}
pub(crate) use bbr_config;

/// Linux `bbr_update_gains`: the (pacing, cwnd) gains of `mode`, `cycle_idx` being the PROBE_BW
/// phase (v1's eight-phase cycle, v2's UP, DOWN, CRUISE, REFILL: the first four entries).
pub(crate) fn gains(mode: Mode, cycle_idx: usize) -> (f64, f64) {
    match mode {
        Mode::Startup => (HIGH_GAIN, HIGH_GAIN),
        Mode::Drain => (DRAIN_GAIN, HIGH_GAIN),
        Mode::ProbeBw => (PACING_GAIN[cycle_idx], CWND_GAIN),
        Mode::ProbeRtt => (1.0, 1.0),
    }
}

/// Round trips counted as Linux does (`bbr_update_round_start`): a round ends when a packet sent
/// after the previous round's end is acknowledged, i.e. when an ACK's rate sample was taken from
/// a packet sent once `next_delivered` bytes had been delivered.
#[derive(Debug, Clone, Default)]
pub(crate) struct Rounds {
    next_delivered: u64,
    count: u64,
}

impl Rounds {
    /// An ACK whose rate sample's packet was sent at `prior_delivered`, with `delivered` bytes
    /// delivered now: whether it starts a round (which then ends once `delivered` is passed).
    pub fn on_sample(&mut self, prior_delivered: u64, delivered: u64) -> bool {
        if prior_delivered < self.next_delivered {
            return false;
        }
        self.next_delivered = delivered;
        self.count += 1;
        true
    }

    /// Start a round now (Linux `bbr->next_rtt_delivered = tp->delivered`).
    pub fn restart(&mut self, delivered: u64) {
        self.next_delivered = delivered;
    }

    /// Rounds counted so far.
    pub fn count(&self) -> u64 {
        self.count
    }
}

/// Linux `bbr_check_full_bw_reached` for one non-app-limited round start before the pipe is
/// full: the new baseline and count of rounds without [`FULL_BW_THRESH`] growth of the estimate
/// `bw`. The pipe is full once the count reaches [`FULL_BW_CNT`].
pub(crate) fn full_bw_round(full_bw: f64, full_bw_cnt: u32, bw: f64) -> (f64, u32) {
    if bw >= full_bw * FULL_BW_THRESH {
        return (bw, 0);
    }
    (full_bw, full_bw_cnt + 1)
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

/// Linux `bbr_save_cwnd`: the window to restore after recovery or PROBE_RTT, given the one saved
/// before (`prior_cwnd`) and the current one.
pub(crate) fn saved_cwnd(prior_cwnd: u64, cwnd: u64, prev_ca_state: CaState, mode: Mode) -> u64 {
    if prev_ca_state < CaState::Recovery && mode != Mode::ProbeRtt {
        cwnd
    } else {
        prior_cwnd.max(cwnd)
    }
}

/// Linux `bbr_set_cwnd`'s growth toward `target` on an ACK of `acked`: once the pipe is full by
/// what was acknowledged, up to the target; before, by all of it while below the target or
/// while `early` (v1: less than the initial window delivered; v2: under twice the initial
/// window); never below `floor`.
pub(crate) fn grow_cwnd(
    cwnd: u64,
    acked: u64,
    target: u64,
    full_bw_reached: bool,
    early: bool,
    floor: u64,
) -> u64 {
    let mut cwnd = cwnd;
    if full_bw_reached {
        cwnd = (cwnd + acked).min(target);
    } else if cwnd < target || early {
        cwnd += acked;
    }
    cwnd.max(floor)
}

/// What both versions decide: the encoder target `min(cwnd / srtt, pacing_rate)` (what the window
/// allows, never more than BBR sends), the pacing rate and the window (`cwnd_bytes`).
pub(crate) fn window_decision(cwnd_bytes: u64, srtt: Duration, pacing_rate: Rate) -> Decision {
    let window = Rate(cwnd_bytes as f64 * 8.0 / srtt.as_secs_f64());
    let mut d = Decision::rate_only(window.min(pacing_rate), Some(pacing_rate));
    d.cwnd = Some(cwnd_bytes);
    d
}

/// The random stream of v1's gain-cycle start phase and v2's probe timing: ChaCha8 seeded by
/// `seed` mixed with the flow's start time `now`.
pub(crate) fn seeded_rng(seed: u64, now: Time) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ now.0)
}

#[cfg(test)]
mod tests {
    use super::*;

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
