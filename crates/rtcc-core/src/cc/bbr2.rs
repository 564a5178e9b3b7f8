//! `bbr2`: BBRv2 as in Google's "v2alpha" preview, `net/ipv4/tcp_bbr2.c` of
//! github.com/google/bbr (read as stored at commit `0487ade55081731c2b2dc31c780f0883ce76212c`,
//! the module named "bbr2" with the v2alpha defaults below; Cardwell et al., "BBR v2: A
//! Model-based Congestion Control", IETF 104–106 ICCRG slides). It keeps BBR v1's model (a
//! bottleneck bandwidth and a minimum RTT, `bbr.rs`) and adds bounds learned from loss, so that
//! it neither fills a shallow buffer the way v1 does nor starves loss-based flows.
//!
//! ## The model
//!
//! ```text
//! max_bw      = max of the delivery-rate samples of the last one or two PROBE_BW cycles
//! bw          = min(max_bw, bw_lo)               (bw_hi only moves with ECN, which is off)
//! min_rtt     = min RTT of the last 10 s, refreshed by a PROBE_RTT every 5 s
//! pacing_rate = pacing_gain × bw × (1 − 1 %)
//! cwnd        = min(cwnd_gain × bw × min_rtt + ACK-aggregation allowance, the phase's bound)
//! ```
//!
//! Two pairs of bounds sit around the BDP (Linux keeps "unset" as ~0U; here `u64::MAX` and
//! infinity):
//!
//! - the long-term upper bound `inflight_hi` (and `bw_hi`): how much data in flight the path
//!   held without more than `loss_thresh` = 2 % loss. It is set when a bandwidth probe (or
//!   STARTUP) sees a sample with `lost > 2 % × tx_in_flight`, to the inflight at which the loss
//!   rate crossed 2 % (computed packet by packet as losses are marked), and at least
//!   `(1 − β) × target` with β = 0.3. While probing without such loss it rises, by a slope
//!   that doubles every round (1, 2, 4, ... packets per round of a full window).
//! - the short-term lower bounds `bw_lo` and `inflight_lo`: outside bandwidth probing, at the
//!   end of every round that saw a loss, both are cut multiplicatively to `(1 − β)` of their
//!   value (starting from `max_bw` and `cwnd`), but never below what the last round actually
//!   delivered (`bw_latest`, `inflight_latest`). They are forgotten (reset to unset) when the
//!   next probe starts (REFILL) and when PROBE_RTT ends.
//!
//! ## The state machine (Linux `enum bbr_mode`, `enum bbr_pacing_gain_phase`)
//!
//! - STARTUP (pacing and cwnd gain 2.885): as v1, the pipe is deemed full after three
//!   non-app-limited rounds without 25 % growth of `max_bw`. v2 also leaves STARTUP on loss
//!   (`bbr2_check_loss_too_high_in_startup`): at the end of a loss round spent in recovery, if
//!   at least `full_loss_cnt` = 8 ACKs of that round marked losses and the round's sample says
//!   `lost > 2 % × tx_in_flight`, the pipe is full and `inflight_hi` = one BDP at `max_bw`.
//! - DRAIN (pacing gain 0.344, cwnd gain 2.885): until the packets in the network at the next
//!   departure fit one BDP (plus the quantization budget).
//! - PROBE_BW, cwnd gain 2, in four phases (`cycle_idx`):
//!   - DOWN (pacing 0.75): entered after DRAIN, after every probe and on leaving PROBE_RTT. It
//!     draws the time to the next probe: 2 s + U[0, 1 s) of wall clock (`bw_probe_base_us`,
//!     `bw_probe_rand_us`) and a round counter started at U{0, 1} (`bw_probe_rand_rounds`).
//!     It goes to CRUISE once inflight is at most one BDP and at most `inflight_hi` less the 15 %
//!     headroom (`drain_to_target`), or straight to REFILL if it is already time to probe.
//!   - CRUISE (1.0): cwnd is capped at `inflight_hi − max(1, 15 % × inflight_hi)`
//!     (`inflight_headroom`) and at `inflight_lo`. It goes to REFILL when the wall-clock wait
//!     has passed or, for coexistence with Reno, after `min(63, target inflight in packets)`
//!     rounds (`bw_probe_max_rounds`, `bw_probe_reno_gain` = 1): an ideal Reno flow with the
//!     same BDP loses a packet about once per BDP rounds.
//!   - REFILL (1.0): forgets `bw_lo` / `inflight_lo` and sends at the estimate for one round so
//!     that the pipe is full before probing (a probe into an empty pipe would underestimate).
//!   - UP (1.25, cwnd capped at `inflight_hi`, +2 packets): probes. It stops (to DOWN) when the
//!     last probe was too high and inflight reaches `inflight_hi` again, or after one min_rtt
//!     once inflight reaches 1.25 × BDP (`bw_probe_pif_gain`), or when a loss sample from the
//!     probe is too high (then `inflight_hi` is cut as above).
//!
//!   The `max_bw` window ("max of 1–2 cycles") advances when the ACKs of a probe's packets stop
//!   arriving: the round after DOWN starts.
//! - PROBE_RTT: when no RTT sample has matched or lowered the 5 s minimum
//!   (`bbr_probe_rtt_win_ms` = 5000; `<=` counts as matching), cwnd is capped at
//!   `max(4, 0.5 × BDP)` (`bbr_probe_rtt_cwnd_gain` = 0.5) until inflight is down to it and then
//!   for 200 ms and a round (`bbr_probe_rtt_mode_ms`); then DOWN and at once CRUISE (the queue
//!   is drained), or STARTUP if the pipe was never full. The 10 s `min_rtt` takes the 5 s
//!   minimum whenever it is lower or the 10 s window expired.
//!
//! The window (Linux `bbr_set_cwnd` of the v2alpha file): the target is `cwnd_gain × BDP` plus
//! the ACK-aggregation allowance (also in STARTUP, over 1–2 rounds there:
//! `bbr_extra_acked_in_startup`), then the "flooring" quantization budget
//! (`bbr_cwnd_tso_budget` = 1: at least 3 send quanta and 4 packets, + 2 in UP). After the pipe
//! is full cwnd grows by the acknowledged packets up to the target; before, it grows while below
//! the target or below twice the initial window. Then the phase's bound above applies. v2 has
//! no packet conservation and does not subtract lost packets from cwnd (v1 does): its loss
//! response is the bounds. A timeout (`bbr2_set_state(TCP_CA_Loss)`) sets cwnd to one packet,
//! resets the full-bandwidth baseline and, outside probing, sets `inflight_lo` to the window
//! before the timeout; when the loss state ends cwnd returns to at least that window.
//!
//! Units: windows are counted in packets of `mss` bytes, as Linux does, so its integer
//! arithmetic (`x × 76 >> 8`, ...) is kept; bandwidths are bytes per second.
//!
//! ## BBR2-S
//!
//! `bw_estimator = "percentile"` (or the name `bbr2-s`) is Vargas et al.'s BBR2-S (WWW '21,
//! §7.2): `max_bw` is read from the percentile estimator of `bbr_common/percentile.rs` instead of the
//! `max_bw[2]` filter (which is still fed, and logged as `max_filter_bw_bps`), so
//! `bw = min(estimate, bw_lo)`; every other v2 mechanism stays. `percentile_reading = "code"`
//! follows the released `bbr2s.c` (no scaling); `"text"` follows the paper's text, which also
//! multiplies the percentile by 0.85 ([`BBR2S_TEXT_SCALE`]).
//!
//! ## State signals (for time in state)
//!
//! `mode`: 0 STARTUP, 1 DRAIN, 2 PROBE_BW, 3 PROBE_RTT (as `bbr`). `cycle_idx`: the PROBE_BW
//! phase, 0 UP, 1 DOWN, 2 CRUISE, 3 REFILL (tcp_bbr2.c's `bbr_pacing_gain_phase`; it keeps its
//! last value outside PROBE_BW). `bbr2_phase`: the combined code `tcp_info` reports
//! (`enum tcp_bbr2_phase`): 1 STARTUP, 2 DRAIN, 3 PROBE_RTT, 4 PROBE_BW UP, 5 DOWN, 6 CRUISE,
//! 7 REFILL. Also `bw_bps` (the bandwidth the model uses), `max_bw_bps`, `bw_lo_bps`,
//! `inflight_hi_packets`, `inflight_lo_packets` (infinite while unset) and the gains.
//!
//! ## Left out, and why
//!
//! - ECN (`bbr_ecn_enable` = false in v2alpha, and rtcc does not mark CE): the alpha EWMA, the
//!   ECN STARTUP exit and the ECN cuts of `inflight_lo` / `bw_hi`.
//! - Undo of a spurious recovery (`bbr2_undo_cwnd`): rtcc's sender never declares a recovery
//!   spurious.
//! - The app-limited fast path (`bbr2_fast_path`): a CPU saving that skips the model update on
//!   app-limited ACKs below the estimate; here every ACK runs the full update.
//! - Idle restart: as v1, a send with nothing in flight while app-limited is Linux's
//!   `CA_EVENT_TX_START` (pace at 1.0 × bw in PROBE_BW, restart the aggregation epoch).
//!   `Controller::on_idle_restart` (Linux `tcp_cwnd_restart`) keeps its default no-op: Linux's
//!   `tcp_slow_start_after_idle_check` skips congestion controls with a `cong_control` hook, as
//!   BBR v1 and v2 have, so their window is never restarted after idle.
//! - `is_ack_delayed` (the receiver's feedback does not say) and `snd_cwnd_clamp`.

use super::bbr_common::{bbr_config, with_percentile, BwEstimator, Mode, PercentileFilter};
use super::bbr_common::{bdp_packets, full_bw_round, gains, grow_cwnd, saved_cwnd};
use super::bbr_common::{seeded_rng, tso_segs_goal, window_decision, AckAggregation, BBR_UNIT};
use super::bbr_common::{Pacing, PercentileReading, ProbeRtt, ProbeRttAck, Rounds};
use super::bbr_common::{BBR2S_TEXT_SCALE, CWND_MIN_TARGET, EXTRA_ACKED_WIN_RTTS, FULL_BW_CNT};
use super::bbr_common::{GSO_MAX_SIZE, HIGH_GAIN, MIN_RTT_WIN};
use super::delivery_rate::{AckSummary, DeliveryRateEstimator, LostPacket, SendLimits};
use super::reno::{check_window, CaState, Episodes, Rtt, TCP_FEEDBACK};
use super::{
    boxed, build_fn, parse_config, Controller, ControllerContext, ControllerError, ControllerInfo,
};
use super::{Decision, Params};
use crate::packet::{FeedbackReport, PacketKind, SentPacket};
use crate::units::{Duration, Time};
use rand_chacha::ChaCha8Rng;
use rand_core::Rng;

/// tcp_bbr2.c `bbr_startup_cwnd_gain` = `BBR_UNIT * 2885 / 1000 + 1`.
const STARTUP_CWND_GAIN: f64 = HIGH_GAIN;
/// tcp_bbr2.c `bbr_probe_rtt_win_ms` = 5000.
const PROBE_RTT_WIN: Duration = Duration(5_000_000_000);
/// tcp_bbr2.c `bbr_probe_rtt_cwnd_gain` = `BBR_UNIT * 1 / 2`.
const PROBE_RTT_CWND_GAIN: f64 = 128.0 / 256.0;
/// tcp_bbr2.c `bbr_beta` = `BBR_UNIT * 30 / 100` = 76 (0.297).
const BETA: u64 = BBR_UNIT * 30 / 100;
/// tcp_bbr2.c `bbr_loss_thresh` = `BBR_UNIT * 2 / 100` = 5 (1.95 %).
const LOSS_THRESH: u64 = BBR_UNIT * 2 / 100;
/// tcp_bbr2.c `bbr_full_loss_cnt` = 8.
const FULL_LOSS_CNT: u32 = 8;
/// tcp_bbr2.c `bbr_inflight_headroom` = `BBR_UNIT * 15 / 100` = 38 (0.148).
const INFLIGHT_HEADROOM: u64 = BBR_UNIT * 15 / 100;
/// tcp_bbr2.c `bbr_bw_probe_pif_gain` = `BBR_UNIT * 5 / 4`.
const BW_PROBE_PIF_GAIN: f64 = 320.0 / 256.0;
/// tcp_bbr2.c `bbr_bw_probe_reno_gain` = `BBR_UNIT`.
const BW_PROBE_RENO_GAIN: u64 = BBR_UNIT;
/// tcp_bbr2.c `bbr_bw_probe_max_rounds` = 63.
const BW_PROBE_MAX_ROUNDS: u64 = 63;
/// tcp_bbr2.c `bbr_bw_probe_rand_rounds` = 2.
const BW_PROBE_RAND_ROUNDS: u64 = 2;
/// tcp_bbr2.c `bbr_bw_probe_base_us` = 2 s, `bbr_bw_probe_rand_us` = 1 s.
const BW_PROBE_BASE: Duration = Duration(2_000_000_000);
const BW_PROBE_RAND_US: u64 = 1_000_000;
/// tcp_bbr2.c `bbr_extra_acked_in_startup` = 1.
const EXTRA_ACKED_IN_STARTUP: bool = true;
/// tcp_bbr2.c `bbr_drain_to_target` = true.
const DRAIN_TO_TARGET: bool = true;
/// tcp_bbr2.c `bbr_tso_rtt_shift` = 9: the send quantum gains 64 KB halved per 512 µs of
/// min_rtt (nothing from about 16 ms on).
const TSO_RTT_SHIFT: u32 = 9;
/// tcp_bbr2.c `bbr_refill_add_inc` = 0.
const REFILL_ADD_INC: u64 = 0;
/// Unset bound (Linux `~0U`).
const INF: u64 = u64::MAX;

bbr_config! {
    /// BBRv2's parameters (`bbr2`, `bbr2-s`): v1's, `seed` drawing the probe timing here.
    pub struct Bbr2Config {
        /// seed of the random probe timing (mixed with the start time)
        seed,
    }
}

/// tcp_bbr2.c `enum bbr_pacing_gain_phase` (the PROBE_BW `cycle_idx`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Up = 0,
    Down = 1,
    Cruise = 2,
    Refill = 3,
}

/// tcp_bbr2.c `enum bbr_ack_phase`: how the incoming ACKs relate to bandwidth probing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AckPhase {
    Init,
    Refilling,
    ProbeStarting,
    ProbeFeedback,
    ProbeStopping,
}

/// One ACK as tcp_bbr2.c's `struct rate_sample` sees it, windows in packets.
#[derive(Debug, Clone, Copy, Default)]
struct Rs {
    valid: bool,
    acked_sacked: u64,
    losses: u64,
    delivered: u64,
    prior_delivered: u64,
    prior_in_flight: u64,
    in_flight: u64,
    in_flight_bytes: u64,
    tx_in_flight: u64,
    lost: u64,
    is_app_limited: bool,
    rtt: Option<Duration>,
}

/// Linux `tcp_cwnd_validate`'s `is_cwnd_limited` (as `reno::Window` tracks it): whether the
/// window limited the sender in the current window of data.
#[derive(Debug, Clone, Default)]
struct CwndUsage {
    is_cwnd_limited: bool,
    max_in_flight: u64,
    usage_seq: u64,
    reported_through: u64,
}

impl CwndUsage {
    fn on_sent(&mut self, pkt: &SentPacket, cwnd: u64, mss: u64) {
        let limited = pkt.in_flight + mss > cwnd;
        let window_done = self.reported_through >= self.usage_seq;
        if window_done || limited || (!self.is_cwnd_limited && pkt.in_flight > self.max_in_flight) {
            self.is_cwnd_limited = limited;
            self.max_in_flight = pkt.in_flight;
            self.usage_seq = pkt.seq.saturating_add(1);
        }
    }
    fn on_report(&mut self, report: &FeedbackReport) {
        for p in &report.packets {
            self.reported_through = self.reported_through.max(p.sent.seq.saturating_add(1));
        }
    }
}

pub struct Bbr2 {
    mss: u64,
    init_cwnd: u64,
    /// The last delivery-rate sample, bytes per second (Linux `tcpi_delivery_rate`; NaN first).
    last_sample: f64,
    rate: DeliveryRateEstimator,
    rtt: Rtt,
    episodes: Episodes,
    usage: CwndUsage,
    /// Original packets reported lost whose retransmission has not been acknowledged yet.
    holes: u64,
    rng: ChaCha8Rng,
    mode: Mode,
    phase: Phase,
    ack_phase: AckPhase,
    /// `max_bw[2]`: max of the previous and the current probing cycle (bytes/s).
    max_bw: [f64; 2],
    /// BBR2-S: the percentile estimator that replaces `max_bw` when configured, and its scale.
    pct: Option<PercentileFilter>,
    pct_scale: f64,
    bw_lo: f64,
    bw_hi: f64,
    bw_latest: f64,
    /// Packets; `INF` when unset.
    inflight_lo: u64,
    inflight_hi: u64,
    inflight_latest: u64,
    min_rtt: Option<Duration>,
    min_rtt_stamp: Time,
    probe_rtt_min: Option<Duration>,
    probe_rtt_min_stamp: Time,
    rounds: Rounds,
    round_start: bool,
    rounds_since_probe: u64,
    loss_round_delivered: u64,
    loss_round_start: bool,
    loss_in_round: bool,
    loss_in_cycle: bool,
    loss_events_in_round: u32,
    full_bw: f64,
    full_bw_cnt: u32,
    full_bw_reached: bool,
    startup_loss_exit: bool,
    cycle_stamp: Time,
    probe_wait: Duration,
    bw_probe_up_rounds: u32,
    bw_probe_up_cnt: u64,
    bw_probe_up_acks: u64,
    bw_probe_samples: bool,
    prev_probe_too_high: bool,
    stopped_risky_probe: bool,
    got_ok_bw_probe_sample: bool,
    inflight_too_high_count: u64,
    pacing_gain: f64,
    cwnd_gain: f64,
    pacing: Pacing,
    /// Packets.
    cwnd: u64,
    prior_cwnd: u64,
    prev_ca_state: CaState,
    probe_rtt: ProbeRtt,
    idle_restart: bool,
    aggregation: AckAggregation,
}

impl Bbr2 {
    pub fn new(cfg: Bbr2Config, now: Time) -> Result<Bbr2, String> {
        check_window(cfg.mss, cfg.initial_cwnd)?;
        let text = cfg.percentile_reading == PercentileReading::Text;
        Ok(Bbr2 {
            last_sample: f64::NAN,
            mss: cfg.mss.0,
            init_cwnd: cfg.initial_cwnd as u64,
            rate: DeliveryRateEstimator::new(),
            rtt: Rtt::default(),
            episodes: Episodes::new(),
            usage: CwndUsage::default(),
            holes: 0,
            rng: seeded_rng(cfg.seed, now),
            mode: Mode::Startup,
            phase: Phase::Up,
            ack_phase: AckPhase::Init,
            max_bw: [0.0; 2],
            pct: (cfg.bw_estimator == BwEstimator::Percentile)
                .then(|| PercentileFilter::new(cfg.percentile_reading)),
            pct_scale: if text { BBR2S_TEXT_SCALE } else { 1.0 },
            bw_lo: f64::INFINITY,
            bw_hi: f64::INFINITY,
            bw_latest: 0.0,
            inflight_lo: INF,
            inflight_hi: INF,
            inflight_latest: 0,
            min_rtt: None,
            min_rtt_stamp: now,
            probe_rtt_min: None,
            probe_rtt_min_stamp: now,
            rounds: Rounds::default(),
            round_start: false,
            rounds_since_probe: 0,
            // bbr2_init: start sampling loss rounds after the first packet is delivered.
            loss_round_delivered: 1,
            loss_round_start: false,
            loss_in_round: false,
            loss_in_cycle: false,
            loss_events_in_round: 0,
            full_bw: 0.0,
            full_bw_cnt: 0,
            full_bw_reached: false,
            startup_loss_exit: false,
            cycle_stamp: now,
            probe_wait: Duration::ZERO,
            bw_probe_up_rounds: 0,
            bw_probe_up_cnt: INF,
            bw_probe_up_acks: 0,
            bw_probe_samples: false,
            prev_probe_too_high: false,
            stopped_risky_probe: false,
            got_ok_bw_probe_sample: false,
            inflight_too_high_count: 0,
            pacing_gain: HIGH_GAIN,
            cwnd_gain: STARTUP_CWND_GAIN,
            pacing: Pacing::new(now, cfg.initial_cwnd as u64 * cfg.mss.0),
            cwnd: cfg.initial_cwnd as u64,
            prior_cwnd: 0,
            prev_ca_state: CaState::Open,
            probe_rtt: ProbeRtt::default(),
            idle_restart: false,
            aggregation: AckAggregation::new(now),
        })
    }

    /// Bytes to whole packets (TCP segments are full `mss`; a partial one counts).
    fn pk(&self, bytes: u64) -> u64 {
        bytes.div_ceil(self.mss)
    }

    /// Linux `bbr_max_bw`: the `max_bw[2]` filter, or BBR2-S's (scaled) percentile.
    fn max_bw(&self) -> f64 {
        match &self.pct {
            Some(p) => p.estimate() * self.pct_scale,
            None => self.max_bw_filter(),
        }
    }

    fn max_bw_filter(&self) -> f64 {
        self.max_bw[0].max(self.max_bw[1])
    }

    /// Linux `bbr_bw`: `min(max_bw, bw_lo, bw_hi)`.
    fn bw(&self) -> f64 {
        self.max_bw().min(self.bw_lo).min(self.bw_hi)
    }

    /// Linux `bbr_set_pacing_rate`.
    fn set_pacing_rate(&mut self, bw: f64, gain: f64) {
        let (srtt, full) = (self.rtt.srtt, self.full_bw_reached);
        self.pacing.set(bw, gain, srtt, self.cwnd * self.mss, full);
    }

    /// tcp_bbr2.c `bbr_tso_segs_goal`, with the min-RTT allowance (`bbr_tso_rtt_shift`).
    fn quantum(&self) -> u64 {
        let extra = self.min_rtt.map_or(0, |m| {
            let r = (m.0 / 1_000) >> TSO_RTT_SHIFT;
            if r < 32 {
                GSO_MAX_SIZE >> r
            } else {
                0
            }
        });
        tso_segs_goal(self.pacing.rate(), self.mss, extra)
    }

    /// Linux `bbr_bdp`, packets.
    fn bdp(&self, bw: f64, gain: f64) -> u64 {
        bdp_packets(bw, self.min_rtt, gain, self.mss, self.init_cwnd)
    }

    /// tcp_bbr2.c `bbr_quantization_budget` with `bbr_cwnd_tso_budget` = 1 ("flooring").
    fn quantization_budget(&self, cwnd: u64) -> u64 {
        let mut c = cwnd.max(3 * self.quantum()).max(CWND_MIN_TARGET);
        if self.mode == Mode::ProbeBw && self.phase == Phase::Up {
            c += 2;
        }
        c
    }

    /// Linux `bbr_inflight`, packets.
    fn inflight(&self, bw: f64, gain: f64) -> u64 {
        self.quantization_budget(self.bdp(bw, gain))
    }

    /// Linux `bbr_packets_in_net_at_edt`, packets.
    fn in_net_at_edt(&self, now: Time, inflight: u64) -> u64 {
        let bw = self.bw() / self.mss as f64;
        self.pacing
            .in_net_at_edt(now, inflight, bw, self.pacing_gain, self.quantum())
    }

    /// tcp_bbr2.c `bbr2_target_inflight`: the BDP, unless congestion cut cwnd below it.
    fn target_inflight(&self) -> u64 {
        self.inflight(self.bw(), 1.0).min(self.cwnd)
    }

    /// tcp_bbr2.c `bbr_probe_rtt_cwnd`: `max(4, 0.5 × BDP)`.
    fn probe_rtt_cwnd(&self) -> u64 {
        CWND_MIN_TARGET.max(self.bdp(self.bw(), PROBE_RTT_CWND_GAIN))
    }

    /// tcp_bbr2.c `bbr_ack_aggregation_cwnd`, packets.
    fn aggregation_cwnd(&self) -> u64 {
        if !(self.full_bw_reached || EXTRA_ACKED_IN_STARTUP) {
            return 0;
        }
        self.aggregation.allowance(self.bw() / self.mss as f64)
    }

    /// Linux `bbr_save_cwnd`.
    fn save_cwnd(&mut self) {
        self.prior_cwnd = saved_cwnd(self.prior_cwnd, self.cwnd, self.prev_ca_state, self.mode);
    }

    /// Linux's `icsk_ca_state == TCP_CA_Recovery`, which lasts until the cumulative ACK passes
    /// the recovery point, i.e. until every hole is repaired. `Episodes` ends an episode when
    /// any packet sent after it began is acknowledged, and rtcc's retransmissions are such
    /// packets, so it reads Open while holes remain; the holes are counted here too. (It
    /// assumes every lost packet is resent, as the TCP sender does; on a video flow a loss that
    /// is never resent keeps it reading Recovery, which only loosens the STARTUP loss exit.)
    fn in_recovery(&self) -> bool {
        match self.episodes.state {
            CaState::Recovery => true,
            CaState::Open | CaState::Cwr => self.holes > 0,
            CaState::Loss => false,
        }
    }

    fn is_probing_bandwidth(&self) -> bool {
        self.mode == Mode::Startup
            || (self.mode == Mode::ProbeBw && matches!(self.phase, Phase::Refill | Phase::Up))
    }

    /// tcp_bbr2.c `bbr2_has_elapsed_in_phase` (wall clock since the phase stamp).
    fn has_elapsed_in_phase(&self, now: Time, interval: Duration) -> bool {
        now > self.cycle_stamp + interval
    }

    /// tcp_bbr2.c `bbr2_is_inflight_too_high` (loss part): `lost > tx_in_flight × 5 / 256`.
    fn is_inflight_too_high(lost: u64, tx_in_flight: u64) -> bool {
        lost > 0 && tx_in_flight > 0 && lost > (tx_in_flight * LOSS_THRESH) >> 8
    }

    /// tcp_bbr2.c `bbr2_inflight_hi_from_lost_skb`: the inflight at which the loss rate crossed
    /// `loss_thresh`, inside the lost packet (`pcount` packets) if need be.
    fn inflight_hi_from_lost_skb(tx_in_flight: u64, lost: u64, pcount: u64) -> u64 {
        let (Some(inflight_prev), Some(lost_prev)) =
            (tx_in_flight.checked_sub(pcount), lost.checked_sub(pcount))
        else {
            return INF;
        };
        let loss_budget = (inflight_prev * LOSS_THRESH + BBR_UNIT - 1) >> 8;
        let lost_prefix = if lost_prev >= loss_budget {
            0
        } else {
            ((loss_budget - lost_prev) << 8) / (BBR_UNIT - LOSS_THRESH)
        };
        inflight_prev + lost_prefix
    }

    /// tcp_bbr2.c `bbr2_inflight_with_headroom`.
    fn inflight_with_headroom(&self) -> u64 {
        if self.inflight_hi == INF {
            return INF;
        }
        let headroom = ((self.inflight_hi * INFLIGHT_HEADROOM) >> 8).max(1);
        self.inflight_hi
            .saturating_sub(headroom)
            .max(CWND_MIN_TARGET)
    }

    fn reset_congestion_signals(&mut self) {
        self.loss_in_round = false;
        self.loss_in_cycle = false;
        self.bw_latest = 0.0;
        self.inflight_latest = 0;
    }

    fn reset_lower_bounds(&mut self) {
        self.bw_lo = f64::INFINITY;
        self.inflight_lo = INF;
    }

    /// tcp_bbr2.c `bbr2_pick_probe_wait`.
    fn pick_probe_wait(&mut self) {
        self.rounds_since_probe = self.rng.next_u64() % BW_PROBE_RAND_ROUNDS;
        let us = self.rng.next_u64() % BW_PROBE_RAND_US;
        self.probe_wait = BW_PROBE_BASE + Duration(us * 1_000);
    }

    /// tcp_bbr2.c `bbr2_raise_inflight_hi_slope`.
    fn raise_inflight_hi_slope(&mut self) {
        let growth_this_round = 1u64 << self.bw_probe_up_rounds;
        self.bw_probe_up_rounds = (self.bw_probe_up_rounds + 1).min(30);
        self.bw_probe_up_cnt = (self.cwnd / growth_this_round).max(1);
    }

    fn start_bw_probe_refill(&mut self, bw_probe_up_rounds: u32) {
        self.reset_lower_bounds();
        if self.inflight_hi != INF {
            self.inflight_hi += REFILL_ADD_INC;
        }
        self.bw_probe_up_rounds = bw_probe_up_rounds;
        self.bw_probe_up_acks = 0;
        self.stopped_risky_probe = false;
        self.got_ok_bw_probe_sample = false;
        self.ack_phase = AckPhase::Refilling;
        self.rounds.restart(self.rate.delivered());
        self.phase = Phase::Refill;
    }

    fn start_bw_probe_up(&mut self, now: Time) {
        self.ack_phase = AckPhase::ProbeStarting;
        self.rounds.restart(self.rate.delivered());
        self.cycle_stamp = now;
        self.phase = Phase::Up;
        self.raise_inflight_hi_slope();
    }

    fn start_bw_probe_down(&mut self, now: Time) {
        self.reset_congestion_signals();
        self.bw_probe_up_cnt = INF;
        self.pick_probe_wait();
        self.cycle_stamp = now;
        self.ack_phase = AckPhase::ProbeStopping;
        self.rounds.restart(self.rate.delivered());
        self.phase = Phase::Down;
    }

    fn start_bw_probe_cruise(&mut self) {
        if self.inflight_lo != INF {
            self.inflight_lo = self.inflight_lo.min(self.inflight_hi);
        }
        self.phase = Phase::Cruise;
    }

    /// tcp_bbr2.c `bbr2_handle_inflight_too_high`: cut `inflight_hi` once per probe.
    fn handle_inflight_too_high(&mut self, now: Time, is_app_limited: bool, tx_in_flight: u64) {
        self.prev_probe_too_high = true;
        self.bw_probe_samples = false;
        self.inflight_too_high_count += 1;
        if !is_app_limited {
            let floor = (self.target_inflight() * (BBR_UNIT - BETA)) >> 8;
            self.inflight_hi = tx_in_flight.max(floor);
        }
        if self.mode == Mode::ProbeBw && self.phase == Phase::Up {
            self.start_bw_probe_down(now);
        }
    }

    /// tcp_bbr2.c `bbr2_skb_marked_lost`, for one packet the report declared lost.
    fn skb_marked_lost(&mut self, now: Time, lp: &LostPacket) {
        if !self.loss_in_round {
            self.loss_round_delivered = self.rate.delivered();
        }
        self.loss_in_round = true;
        self.loss_in_cycle = true;
        if !self.bw_probe_samples {
            return;
        }
        let (tx_in_flight, lost) = (self.pk(lp.tx_in_flight), self.pk(lp.lost));
        if Self::is_inflight_too_high(lost, tx_in_flight) {
            let tx = Self::inflight_hi_from_lost_skb(tx_in_flight, lost, self.pk(lp.size));
            self.handle_inflight_too_high(now, lp.is_app_limited, tx);
        }
    }

    /// tcp_bbr2.c `bbr2_adapt_lower_bounds` (loss part): multiplicative decrease by β.
    fn adapt_lower_bounds(&mut self) {
        if self.is_probing_bandwidth() || !self.loss_in_round {
            return;
        }
        if self.bw_lo == f64::INFINITY {
            self.bw_lo = self.max_bw();
        }
        if self.inflight_lo == INF {
            self.inflight_lo = self.cwnd;
        }
        let keep = (BBR_UNIT - BETA) as f64 / BBR_UNIT as f64;
        self.bw_lo = self.bw_latest.max(self.bw_lo * keep);
        self.inflight_lo = self
            .inflight_latest
            .max((self.inflight_lo * (BBR_UNIT - BETA)) >> 8);
    }

    /// tcp_bbr2.c `bbr2_update_congestion_signals`.
    fn update_congestion_signals(&mut self, rs: &Rs, sample_bw: f64) {
        self.loss_round_start = false;
        if !rs.valid || rs.acked_sacked == 0 {
            return;
        }
        if !rs.is_app_limited || sample_bw >= self.max_bw_filter() {
            self.max_bw[1] = self.max_bw[1].max(sample_bw);
        }
        if let Some(p) = &mut self.pct {
            if !rs.is_app_limited {
                p.insert(sample_bw);
            }
        }
        self.loss_in_round |= rs.losses > 0;
        self.bw_latest = self.bw_latest.max(sample_bw);
        self.inflight_latest = self.inflight_latest.max(rs.delivered);
        if rs.prior_delivered < self.loss_round_delivered {
            return;
        }
        self.loss_round_delivered = self.rate.delivered();
        self.loss_round_start = true;
        self.adapt_lower_bounds();
        self.loss_in_round = false;
        self.bw_latest = sample_bw;
        self.inflight_latest = rs.delivered;
    }

    /// tcp_bbr2.c `bbr2_check_loss_too_high_in_startup`.
    fn check_loss_too_high_in_startup(&mut self, rs: &Rs) {
        if self.full_bw_reached {
            return;
        }
        if rs.losses > 0 && self.loss_events_in_round < 0xF {
            self.loss_events_in_round += 1;
        }
        if self.loss_round_start
            && self.in_recovery()
            && self.loss_events_in_round >= FULL_LOSS_CNT
            && Self::is_inflight_too_high(rs.lost, rs.tx_in_flight)
        {
            // bbr2_handle_queue_too_high_in_startup
            self.full_bw_reached = true;
            self.startup_loss_exit = true;
            self.inflight_hi = self.inflight(self.max_bw(), 1.0);
            return;
        }
        if self.loss_round_start {
            self.loss_events_in_round = 0;
        }
    }

    /// Linux `bbr_check_full_bw_reached`.
    fn check_full_bw_reached(&mut self, rs: &Rs) {
        if self.full_bw_reached || !self.round_start || rs.is_app_limited {
            return;
        }
        (self.full_bw, self.full_bw_cnt) =
            full_bw_round(self.full_bw, self.full_bw_cnt, self.max_bw());
        self.full_bw_reached = self.full_bw_cnt >= FULL_BW_CNT;
    }

    /// Linux `bbr_check_drain` and `bbr2_check_drain`.
    fn check_drain(&mut self, now: Time, rs: &Rs) {
        if self.mode == Mode::Startup && self.full_bw_reached {
            self.mode = Mode::Drain;
            self.reset_congestion_signals();
        }
        if self.mode == Mode::Drain
            && self.in_net_at_edt(now, rs.in_flight) <= self.inflight(self.max_bw(), 1.0)
        {
            self.mode = Mode::ProbeBw;
            self.start_bw_probe_down(now);
        }
    }

    /// tcp_bbr2.c `bbr2_probe_inflight_hi_upward`.
    fn probe_inflight_hi_upward(&mut self, rs: &Rs) {
        if !self.usage.is_cwnd_limited || self.cwnd < self.inflight_hi {
            self.bw_probe_up_acks = 0;
            return;
        }
        self.bw_probe_up_acks += rs.acked_sacked;
        if self.bw_probe_up_acks >= self.bw_probe_up_cnt {
            let delta = self.bw_probe_up_acks / self.bw_probe_up_cnt;
            self.bw_probe_up_acks -= delta * self.bw_probe_up_cnt;
            self.inflight_hi = self.inflight_hi.saturating_add(delta);
        }
        if self.round_start {
            self.raise_inflight_hi_slope();
        }
    }

    /// tcp_bbr2.c `bbr2_adapt_upper_bounds`; true if it decided a phase change.
    fn adapt_upper_bounds(&mut self, now: Time, rs: &Rs, sample_bw: f64) -> bool {
        if self.ack_phase == AckPhase::ProbeStarting && self.round_start {
            self.ack_phase = AckPhase::ProbeFeedback;
        }
        if self.ack_phase == AckPhase::ProbeStopping && self.round_start {
            // The ACKs of the probe's packets have all come back.
            self.bw_probe_samples = false;
            self.ack_phase = AckPhase::Init;
            if self.mode == Mode::ProbeBw && !rs.is_app_limited && self.max_bw[1] > 0.0 {
                // bbr2_advance_max_bw_filter
                self.max_bw[0] = self.max_bw[1];
                self.max_bw[1] = 0.0;
            }
            if self.mode == Mode::ProbeBw && self.stopped_risky_probe && !self.prev_probe_too_high {
                self.start_bw_probe_refill(0);
                return true;
            }
        }
        if Self::is_inflight_too_high(rs.lost, rs.tx_in_flight) {
            if self.bw_probe_samples {
                self.handle_inflight_too_high(now, rs.is_app_limited, rs.tx_in_flight);
            }
            return false;
        }
        self.got_ok_bw_probe_sample |= self.bw_probe_samples;
        if self.inflight_hi == INF && self.bw_hi == f64::INFINITY {
            return false;
        }
        if rs.tx_in_flight > self.inflight_hi {
            self.inflight_hi = rs.tx_in_flight;
        }
        if sample_bw > self.bw_hi {
            self.bw_hi = sample_bw;
        }
        if self.mode == Mode::ProbeBw && self.phase == Phase::Up {
            self.probe_inflight_hi_upward(rs);
        }
        false
    }

    /// tcp_bbr2.c `bbr2_is_reno_coexistence_probe_time`.
    fn is_reno_coexistence_probe_time(&self) -> bool {
        let reno_rounds = (self.target_inflight() * BW_PROBE_RENO_GAIN) >> 8;
        self.rounds_since_probe >= BW_PROBE_MAX_ROUNDS.min(reno_rounds)
    }

    /// tcp_bbr2.c `bbr2_check_time_to_probe_bw`.
    fn check_time_to_probe_bw(&mut self, now: Time) -> bool {
        if self.has_elapsed_in_phase(now, self.probe_wait) || self.is_reno_coexistence_probe_time()
        {
            self.start_bw_probe_refill(0);
            return true;
        }
        false
    }

    /// tcp_bbr2.c `bbr2_check_time_to_cruise`.
    fn check_time_to_cruise(&self, now: Time, inflight: u64, bw: f64) -> bool {
        if inflight > self.inflight_with_headroom() {
            return false;
        }
        let is_under_bdp = inflight <= self.inflight(bw, 1.0);
        if DRAIN_TO_TARGET {
            return is_under_bdp;
        }
        is_under_bdp
            || self
                .min_rtt
                .is_some_and(|m| self.has_elapsed_in_phase(now, m))
    }

    /// tcp_bbr2.c `bbr2_update_cycle_phase`: the PROBE_BW state machine.
    fn update_cycle_phase(&mut self, now: Time, rs: &Rs, sample_bw: f64) {
        if !self.full_bw_reached {
            return;
        }
        if self.adapt_upper_bounds(now, rs, sample_bw) || self.mode != Mode::ProbeBw {
            return;
        }
        let inflight = self.in_net_at_edt(now, rs.prior_in_flight);
        let bw = self.max_bw();
        match self.phase {
            Phase::Cruise => {
                self.check_time_to_probe_bw(now);
            }
            Phase::Refill => {
                if self.round_start {
                    self.bw_probe_samples = true;
                    self.start_bw_probe_up(now);
                }
            }
            Phase::Up => {
                let risky = self.prev_probe_too_high && inflight >= self.inflight_hi;
                let queuing = !risky
                    && self
                        .min_rtt
                        .is_some_and(|m| self.has_elapsed_in_phase(now, m))
                    && inflight >= self.inflight(bw, BW_PROBE_PIF_GAIN);
                if risky {
                    self.stopped_risky_probe = true;
                }
                if risky || queuing {
                    self.prev_probe_too_high = false;
                    self.start_bw_probe_down(now);
                }
            }
            Phase::Down => {
                if self.check_time_to_probe_bw(now) {
                    return;
                }
                if self.check_time_to_cruise(now, inflight, bw) {
                    self.start_bw_probe_cruise();
                }
            }
        }
    }

    fn check_probe_rtt_done(&mut self, now: Time) {
        if !self.probe_rtt.elapsed(now) {
            return;
        }
        self.probe_rtt_min_stamp = now; // schedule the next PROBE_RTT
        self.cwnd = self.cwnd.max(self.prior_cwnd);
        // bbr2_exit_probe_rtt
        self.reset_lower_bounds();
        if self.full_bw_reached {
            self.mode = Mode::ProbeBw;
            self.start_bw_probe_down(now);
            self.start_bw_probe_cruise();
        } else {
            self.mode = Mode::Startup;
        }
    }

    /// tcp_bbr2.c `bbr_update_min_rtt`: the 5 s `probe_rtt_min`, the 10 s `min_rtt`, PROBE_RTT.
    fn update_min_rtt(&mut self, now: Time, rs: &Rs) {
        let probe_rtt_expired = now > self.probe_rtt_min_stamp + PROBE_RTT_WIN;
        if let Some(r) = rs.rtt {
            if self.probe_rtt_min.is_none_or(|m| r <= m) || probe_rtt_expired {
                self.probe_rtt_min = Some(r);
                self.probe_rtt_min_stamp = now;
            }
        }
        let min_rtt_expired = now > self.min_rtt_stamp + MIN_RTT_WIN;
        if let Some(p) = self.probe_rtt_min {
            if self.min_rtt.is_none_or(|m| p <= m) || min_rtt_expired {
                self.min_rtt = Some(p);
                self.min_rtt_stamp = self.probe_rtt_min_stamp;
            }
        }
        if probe_rtt_expired && !self.idle_restart && self.mode != Mode::ProbeRtt {
            self.mode = Mode::ProbeRtt;
            self.save_cwnd();
            self.probe_rtt.enter();
            self.ack_phase = AckPhase::ProbeStopping;
            self.rounds.restart(self.rate.delivered());
        }
        if self.mode == Mode::ProbeRtt {
            // Samples taken while inflight is held down say nothing about the bandwidth.
            self.rate.mark_app_limited(rs.in_flight_bytes);
            let drained = rs.in_flight <= self.probe_rtt_cwnd();
            match self.probe_rtt.on_ack(now, drained, self.round_start) {
                ProbeRttAck::Drained => self.rounds.restart(self.rate.delivered()),
                ProbeRttAck::RoundDone => self.check_probe_rtt_done(now),
                ProbeRttAck::Waiting => {}
            }
        }
        // tcp_bbr2.c bbr_update_min_rtt (google/bbr v2alpha, commit 0487ade, its last line):
        // `if (rs->delivered > 0) bbr->idle_restart = 0;`. tcp_rate_gen sets rs->delivered
        // before it discards an interval shorter than min_rtt, so an ACK of new data ends the
        // idle restart even when it makes no rate sample.
        if rs.delivered > 0 {
            self.idle_restart = false;
        }
    }

    /// Linux `bbr_update_gains` (v2's `bbr_startup_cwnd_gain` is v1's `bbr_high_gain`).
    fn update_gains(&mut self) {
        (self.pacing_gain, self.cwnd_gain) = gains(self.mode, self.phase as usize);
    }

    /// tcp_bbr2.c `bbr_set_cwnd` (v2alpha: no packet conservation).
    fn set_cwnd(&mut self, rs: &Rs, bw: f64) {
        let mut cwnd = self.cwnd;
        if rs.acked_sacked > 0 {
            let target =
                self.quantization_budget(self.bdp(bw, self.cwnd_gain) + self.aggregation_cwnd());
            let early = cwnd < 2 * self.init_cwnd;
            let full = self.full_bw_reached;
            cwnd = grow_cwnd(cwnd, rs.acked_sacked, target, full, early, CWND_MIN_TARGET);
        }
        if self.mode == Mode::ProbeRtt {
            cwnd = cwnd.min(self.probe_rtt_cwnd());
        }
        self.cwnd = cwnd;
    }

    /// tcp_bbr2.c `bbr2_bound_cwnd_for_inflight_model`.
    fn bound_cwnd_for_inflight_model(&mut self) {
        let mut cap = INF;
        if self.mode == Mode::ProbeBw && self.phase != Phase::Cruise {
            cap = self.inflight_hi;
        } else if self.mode == Mode::ProbeRtt || self.mode == Mode::ProbeBw {
            cap = self.inflight_with_headroom();
        }
        cap = cap.min(self.inflight_lo).max(CWND_MIN_TARGET);
        self.cwnd = self.cwnd.min(cap);
    }

    /// tcp_bbr2.c `bbr2_main`, for one ACK.
    fn main(&mut self, now: Time, s: &AckSummary) {
        let rs = self.rate_sample(s);
        // bbr_update_round_start
        self.round_start = false;
        if rs.valid
            && self
                .rounds
                .on_sample(rs.prior_delivered, self.rate.delivered())
        {
            self.round_start = true;
            self.rounds_since_probe = (self.rounds_since_probe + 1).min(0xFF);
        }
        let sample_bw = s.sample.map_or(0.0, |r| r.bytes_per_sec());
        if s.sample.is_some() {
            self.last_sample = sample_bw;
        }
        // bbr2_update_model
        self.update_congestion_signals(&rs, sample_bw);
        if rs.valid && rs.acked_sacked > 0 {
            let win = if EXTRA_ACKED_IN_STARTUP && !self.full_bw_reached {
                1
            } else {
                EXTRA_ACKED_WIN_RTTS
            };
            let bw_pkts = self.bw() / self.mss as f64;
            let now_delivered = self.rate.delivered_time();
            self.aggregation.update(
                self.round_start,
                win,
                rs.acked_sacked,
                now_delivered,
                bw_pkts,
                self.cwnd,
                1,
            );
        }
        self.check_loss_too_high_in_startup(&rs);
        self.check_full_bw_reached(&rs);
        self.check_drain(now, &rs);
        self.update_cycle_phase(now, &rs, sample_bw);
        self.update_min_rtt(now, &rs);
        // control
        self.update_gains();
        let bw = self.bw();
        self.set_pacing_rate(bw, self.pacing_gain);
        self.set_cwnd(&rs, bw);
        self.bound_cwnd_for_inflight_model();
        self.loss_in_cycle |= rs.lost > 0;
    }

    /// The ACK as `struct rate_sample`, in packets.
    fn rate_sample(&self, s: &AckSummary) -> Rs {
        let mut rs = Rs {
            acked_sacked: self.pk(s.acked),
            losses: self.pk(s.lost),
            prior_in_flight: self.pk(s.prior_in_flight),
            in_flight: self.pk(s.in_flight),
            in_flight_bytes: s.in_flight,
            rtt: s.rtt,
            // rs->delivered, set even when the sample itself is invalid (see update_min_rtt).
            delivered: s.delivered.map_or(0, |d| self.pk(d)),
            ..Rs::default()
        };
        if let Some(r) = s.sample {
            rs.valid = true;
            rs.delivered = self.pk(r.delivered);
            rs.prior_delivered = r.prior_delivered;
            rs.tx_in_flight = self.pk(r.tx_in_flight);
            rs.lost = self.pk(r.lost);
            rs.is_app_limited = r.is_app_limited;
        }
        rs
    }

    /// tcp_info's `bbr2_phase` (`enum tcp_bbr2_phase`).
    fn bbr2_phase(&self) -> u8 {
        match self.mode {
            Mode::Startup => 1,
            Mode::Drain => 2,
            Mode::ProbeRtt => 3,
            Mode::ProbeBw => match self.phase {
                Phase::Up => 4,
                Phase::Down => 5,
                Phase::Cruise => 6,
                Phase::Refill => 7,
            },
        }
    }
}

impl Controller for Bbr2 {
    fn on_app_limited(&mut self, in_flight: u64) {
        self.rate.mark_app_limited(in_flight);
    }

    fn on_packet_sent(&mut self, now: Time, pkt: &SentPacket) {
        self.episodes.on_sent(pkt.seq);
        let cwnd_bytes = self.cwnd * self.mss;
        self.usage.on_sent(pkt, cwnd_bytes, self.mss);
        let from_idle = pkt.in_flight <= pkt.size as u64;
        let limits = SendLimits {
            cwnd: Some(cwnd_bytes),
            pacing_rate: Some(self.pacing.rate()),
        };
        self.rate.on_packet_sent(now, pkt, limits);
        if from_idle && self.rate.is_app_limited() {
            // Linux bbr_cwnd_event(CA_EVENT_TX_START) while app-limited.
            self.idle_restart = true;
            self.aggregation.restart_epoch(now);
            match self.mode {
                Mode::ProbeBw => self.set_pacing_rate(self.bw(), 1.0),
                Mode::ProbeRtt => self.check_probe_rtt_done(now),
                _ => {}
            }
        }
        self.pacing.on_sent(now, pkt.size);
    }

    fn on_feedback(&mut self, now: Time, report: &FeedbackReport) {
        let ev = self.episodes.on_report(report);
        self.usage.on_report(report);
        for p in &report.packets {
            let retransmission = p.sent.kind == PacketKind::Retransmission;
            match p.receive_time {
                None if !retransmission => self.holes += 1,
                Some(_) if retransmission => self.holes = self.holes.saturating_sub(1),
                _ => {}
            }
        }
        let s = self.rate.on_feedback(now, report);
        if let Some(r) = s.rtt {
            self.rtt.on_sample(r);
        }
        // Losses are marked before the ACK reaches the congestion control.
        for i in 0..self.rate.lost_packets().len() {
            let lp = self.rate.lost_packets()[i];
            self.skb_marked_lost(now, &lp);
        }
        if ev.new_episode {
            self.save_cwnd(); // bbr2_ssthresh, called on entering recovery
        }
        if self.prev_ca_state == CaState::Loss && self.episodes.state != CaState::Loss {
            // bbr2_set_state leaving TCP_CA_Loss
            self.cwnd = self.cwnd.max(self.prior_cwnd);
        }
        self.main(now, &s);
        self.prev_ca_state = self.episodes.state;
    }

    fn on_rto(&mut self, _now: Time, in_flight: u64) {
        if self.episodes.on_rto() {
            self.save_cwnd(); // bbr2_ssthresh from tcp_enter_loss
        }
        // bbr2_set_state(TCP_CA_Loss), then tcp_enter_loss's cwnd: one packet above what is
        // still in flight.
        self.prev_ca_state = CaState::Loss;
        self.full_bw = 0.0;
        if !self.is_probing_bandwidth() && self.inflight_lo == INF {
            self.inflight_lo = self.prior_cwnd;
        }
        self.cwnd = in_flight.div_ceil(self.mss) + 1;
        // Everything outstanding is retransmitted; the loss state ends once it is all
        // delivered, which leaves no hole from before the timeout.
        self.holes = 0;
        self.rate.on_rto();
    }

    fn decision(&self) -> Decision {
        window_decision(
            self.cwnd * self.mss,
            self.rtt.srtt_or_initial(),
            self.pacing.rate(),
        )
    }

    fn state(&self, out: &mut Vec<(&'static str, f64)>) {
        let packets = |p: u64| if p == INF { f64::INFINITY } else { p as f64 };
        out.push(("mode", self.mode as u8 as f64));
        out.push(("cycle_idx", self.phase as u8 as f64));
        out.push(("bbr2_phase", self.bbr2_phase() as f64));
        out.push(("cwnd_packets", self.cwnd as f64));
        out.push(("bw_bps", self.bw() * 8.0));
        out.push(("delivery_rate_bps", self.last_sample * 8.0));
        out.push(("max_bw_bps", self.max_bw() * 8.0));
        out.push(("bw_lo_bps", self.bw_lo * 8.0));
        out.push(("inflight_hi_packets", packets(self.inflight_hi)));
        out.push(("inflight_lo_packets", packets(self.inflight_lo)));
        out.push((
            "min_rtt_ms",
            self.min_rtt.map_or(f64::NAN, |d| d.as_millis_f64()),
        ));
        out.push((
            "probe_rtt_min_ms",
            self.probe_rtt_min.map_or(f64::NAN, |d| d.as_millis_f64()),
        ));
        out.push(("pacing_gain", self.pacing_gain));
        out.push(("cwnd_gain", self.cwnd_gain));
        out.push(("pacing_bps", self.pacing.rate().bps()));
        out.push(("round_count", self.rounds.count() as f64));
        out.push(("rounds_since_probe", self.rounds_since_probe as f64));
        out.push(("full_bw_reached", self.full_bw_reached as u8 as f64));
        out.push(("startup_loss_exit", self.startup_loss_exit as u8 as f64));
        out.push(("inflight_too_high", self.inflight_too_high_count as f64));
        out.push(("ack_phase", self.ack_phase as u8 as f64));
        out.push(("extra_acked_packets", self.aggregation.max() as f64));
        out.push(("probe_rtt_count", self.probe_rtt.count() as f64));
        out.push(("ca_state", self.episodes.state.log_code()));
        out.push(("holes", self.holes as f64));
        out.push(("app_limited", self.rate.is_app_limited() as u8 as f64));
        if self.pct.is_some() {
            out.push(("max_filter_bw_bps", self.max_bw_filter() * 8.0));
        }
    }
}

pub fn info() -> ControllerInfo {
    ControllerInfo {
        name: "bbr2".into(),
        summary: "BBRv2 as in Google's v2alpha tcp_bbr2.c (BBR's model plus loss-based \
                  inflight_hi / inflight_lo / bw_lo bounds, 2–3 s bandwidth probes)."
            .into(),
        params: Bbr2Config::param_docs(),
        feedback: TCP_FEEDBACK,
        media: Default::default(),
        build: build_fn(|params, ctx| build("bbr2", params, ctx)),
    }
}

/// `bbr2-s`: `bbr2` with `bw_estimator = "percentile"` by default (Vargas et al.'s BBR2-S).
pub fn info_s() -> ControllerInfo {
    ControllerInfo {
        name: "bbr2-s".into(),
        summary: "BBR2-S (Vargas et al., WWW '21): bbr2 with the 85th-percentile bandwidth \
                  estimator (bw_estimator = \"percentile\" by default)."
            .into(),
        media: Default::default(),
        build: build_fn(|params, ctx| build("bbr2-s", &with_percentile(params), ctx)),
        ..info()
    }
}

fn build(
    name: &str,
    params: &Params,
    ctx: &ControllerContext,
) -> Result<Box<dyn Controller>, ControllerError> {
    let config: Bbr2Config = parse_config(name, params)?;
    boxed(name, Bbr2::new(config, ctx.now))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::delivery_rate::testpath::Path;
    use crate::units::Rate;

    fn bbr2(params: &str) -> Bbr2 {
        let p: Params = toml::from_str(params).unwrap();
        Bbr2::new(parse_config("bbr2", &p).unwrap(), Time::ZERO).unwrap()
    }

    use crate::cc::test_support::signal as get;

    /// 12 Mbit/s (one packet per ms) behind 40 ms: min_rtt 41 ms, BDP 41 packets.
    fn path() -> Path {
        Path::new(Duration::from_millis(40), Some(Rate::from_mbps(12.0)))
    }

    /// (time, bbr2_phase) at each change of the combined phase code.
    fn phases(p: &mut Path, c: &mut Bbr2, until: Time) -> Vec<(Time, u8)> {
        let mut out: Vec<(Time, u8)> = vec![(p.now, c.bbr2_phase())];
        p.run(c, until, |t, c, _| {
            let ph = get(c, "bbr2_phase") as u8;
            if out.last().is_none_or(|x| x.1 != ph) {
                out.push((t, ph));
            }
        });
        out
    }

    #[test]
    fn the_v2alpha_constants() {
        // tcp_bbr2.c's fixed-point defaults (BBR_UNIT = 256) and what they mean.
        assert_eq!(BETA, 76, "bbr_beta = 30 % of 256, truncated: 0.297");
        assert_eq!(
            LOSS_THRESH, 5,
            "bbr_loss_thresh = 2 % of 256, truncated: 1.95 %"
        );
        assert_eq!(INFLIGHT_HEADROOM, 38, "bbr_inflight_headroom = 15 %: 0.148");
        assert_eq!(PROBE_RTT_CWND_GAIN * 256.0, 128.0);
        assert_eq!(BW_PROBE_PIF_GAIN * 256.0, 320.0);
        assert_eq!(STARTUP_CWND_GAIN * 256.0, 739.0);
        assert_eq!(FULL_LOSS_CNT, 8);
        assert_eq!((BW_PROBE_MAX_ROUNDS, BW_PROBE_RAND_ROUNDS), (63, 2));
        assert_eq!(BW_PROBE_BASE, Duration::from_millis(2000));
        assert_eq!(BW_PROBE_RAND_US, 1_000_000);
        assert_eq!(PROBE_RTT_WIN, Duration::from_millis(5000));
    }

    #[test]
    fn startup_drain_then_down_cruise_refill_up_in_that_order() {
        let mut p = path();
        let mut c = bbr2("");
        let ph = phases(&mut p, &mut c, Time::from_millis(12_000));
        let codes: Vec<u8> = ph.iter().map(|x| x.1).collect();
        // DRAIN ends in PROBE_BW DOWN; when inflight is already under the BDP the same ACK
        // moves on to CRUISE, so DOWN may not be seen.
        assert_eq!(&codes[..2], &[1, 2], "STARTUP then DRAIN: {ph:?}");
        assert!(
            codes[2] == 5 || codes[2] == 6,
            "then DOWN or CRUISE: {ph:?}"
        );
        for w in codes.windows(2) {
            let ok = match w[0] {
                5 => w[1] == 6 || w[1] == 7, // DOWN -> CRUISE, or REFILL if it is time to probe
                6 => w[1] == 7,              // CRUISE -> REFILL
                7 => w[1] == 4,              // REFILL -> UP
                4 => w[1] == 5,              // UP -> DOWN
                _ => true,
            };
            assert!(ok, "no transition {} -> {}: {ph:?}", w[0], w[1]);
        }
        assert!(codes.iter().filter(|&&c| c == 4).count() >= 4, "{ph:?}");
        // REFILL lasts one round (41 ms plus the pacing of the round's packets).
        for w in ph.windows(2).filter(|w| w[0].1 == 7) {
            let len = (w[1].0 - w[0].0).as_millis_f64();
            assert!((40.0..=50.0).contains(&len), "REFILL lasted {len} ms");
        }
        // No loss, no congestion signal: the bounds stay unset and bw is the max filter.
        assert_eq!(get(&c, "inflight_hi_packets"), f64::INFINITY);
        assert_eq!(get(&c, "inflight_lo_packets"), f64::INFINITY);
        assert!((get(&c, "bw_bps") - 12e6).abs() < 1e-3);
        assert_eq!(get(&c, "min_rtt_ms"), 41.0);
    }

    /// Times at which PROBE_BW REFILL starts (a bandwidth probe).
    fn probe_starts(ph: &[(Time, u8)]) -> Vec<f64> {
        ph.iter()
            .filter(|x| x.1 == 7)
            .map(|x| x.0.as_millis_f64())
            .collect()
    }

    #[test]
    fn small_bdps_probe_on_the_reno_round_bound() {
        // BDP 41 packets: the Reno-coexistence bound min(63, 41) = 41 rounds (rounds counted
        // from a random 0 or 1) of 41 ms is 1.6–1.7 s, shorter than the 2–3 s wall clock.
        let mut p = path();
        let mut c = bbr2("");
        let ph = phases(&mut p, &mut c, Time::from_millis(20_000));
        let starts = probe_starts(&ph);
        assert!(starts.len() >= 8, "{starts:?}");
        for w in starts.windows(2).skip(1) {
            let gap = w[1] - w[0];
            // A probe cycle: REFILL and UP (about 2 rounds), DOWN, then 39–41 rounds from DOWN.
            assert!(
                (1_600.0..2_000.0).contains(&gap),
                "probe every 41 rounds of 41 ms (+ the probe): gaps {starts:?}"
            );
        }
    }

    #[test]
    fn large_bdps_probe_every_two_to_three_seconds_of_wall_clock() {
        // 24 Mbit/s behind 100 ms: BDP 201 packets, so the round bound is 63 rounds (6.3 s) and
        // the wall clock, 2 s + U[0, 1 s) from the start of DOWN, decides.
        let mut p = Path::new(Duration::from_millis(100), Some(Rate::from_mbps(24.0)));
        let mut c = bbr2("seed = 3");
        let ph = phases(&mut p, &mut c, Time::from_millis(60_000));
        // DOWN starts where it is seen, or where DRAIN ends (DOWN then CRUISE on one ACK).
        let downs: Vec<f64> = ph
            .windows(2)
            .filter(|w| w[1].1 == 5 || (w[0].1 == 2 && w[1].1 == 6))
            .map(|w| w[1].0.as_millis_f64())
            .collect();
        let starts = probe_starts(&ph);
        assert!(starts.len() >= 15, "{starts:?}");
        let mut waits = vec![];
        for s in &starts {
            let down = downs.iter().rev().find(|&&d| d < *s).unwrap();
            waits.push(s - down);
        }
        for w in &waits {
            // The wait is checked on ACKs, which come every 0.5 ms.
            assert!((2_000.0..3_001.0).contains(w), "wait {w} ms: {waits:?}");
        }
        // The random part spreads over the second (not a constant).
        let (lo, hi) = waits
            .iter()
            .fold((f64::MAX, f64::MIN), |(a, b), w| (a.min(*w), b.max(*w)));
        assert!(hi - lo > 400.0, "waits {waits:?}");
    }

    #[test]
    fn probe_rtt_every_5_s_at_half_a_bdp_for_200_ms() {
        // The path's base RTT creeps up 1 ms a second, so no RTT sample after a PROBE_RTT
        // matches the minimum it measured (with a constant delay, samples equal to the minimum
        // renew it, `<=`, and PROBE_RTT never comes).
        let mut p = path();
        let mut c = bbr2("");
        let mut entries = vec![];
        let mut exits = vec![];
        let mut in_probe_rtt = false;
        // When an RTT sample last matched (or lowered) the 5 s minimum or PROBE_RTT last ended,
        // before each entry.
        let mut last_match = Time::ZERO;
        let mut quiet = vec![];
        for s in 1..=24u64 {
            p.run(&mut c, Time::from_millis(s * 1000), |t, c, r| {
                let now_in = get(c, "mode") == 3.0;
                if now_in && !in_probe_rtt {
                    quiet.push((t - last_match).as_millis_f64());
                }
                let min = get(c, "probe_rtt_min_ms");
                if r.latest_rtt().is_some_and(|x| x.as_millis_f64() <= min) {
                    last_match = t;
                }
                if now_in {
                    // max(4, 0.5 × BDP), BDP = 12 Mbit/s × min_rtt.
                    let bdp = 1.5e6 * get(c, "min_rtt_ms") / 1e3 / 1500.0;
                    let expect = (0.5 * bdp - 1e-9).ceil().max(4.0);
                    assert!(
                        get(c, "cwnd_packets") <= expect,
                        "PROBE_RTT cwnd {} above 0.5 BDP = {expect}",
                        get(c, "cwnd_packets")
                    );
                }
                if now_in && !in_probe_rtt {
                    entries.push(t);
                }
                if !now_in && in_probe_rtt {
                    exits.push(t);
                    last_match = t; // check_probe_rtt_done renews the stamp
                }
                in_probe_rtt = now_in;
            });
            p.base_rtt = p.base_rtt + Duration::from_millis(1);
        }
        assert!(entries.len() >= 4, "{entries:?}");
        assert_eq!(get(&c, "probe_rtt_count"), entries.len() as f64);
        for (e, x) in entries.iter().zip(&exits) {
            let held = (*x - *e).as_millis_f64();
            // Inflight falls to half a BDP (about 20 ms at one packet per ms), then 200 ms and
            // at least one round (41 ms, within the 200).
            assert!((200.0..300.0).contains(&held), "PROBE_RTT lasted {held} ms");
        }
        // PROBE_RTT starts at the first ACK 5 s after the last RTT sample that matched the
        // 5 s minimum or the last PROBE_RTT's end (ACKs come every millisecond).
        for q in &quiet {
            assert!(
                (5_000.0..5_002.0).contains(q),
                "{q} ms after the last match: {quiet:?}"
            );
        }
        // That last match is at or after the previous PROBE_RTT's end (its exit renews the
        // stamp, and the drained queue's samples match the minimum measured in it).
        for (x, e) in exits.iter().zip(entries.iter().skip(1)) {
            let gap = (*e - *x).as_millis_f64();
            assert!((5_000.0..6_100.0).contains(&gap), "exit to entry {gap} ms");
        }
        // With the pipe full it returns to PROBE_BW, straight into CRUISE.
        assert_eq!(get(&c, "mode"), 2.0);
    }

    #[test]
    fn an_ack_of_new_data_ends_the_idle_restart_even_without_a_rate_sample() {
        // tcp_bbr2.c bbr_update_min_rtt clears idle_restart when rs->delivered > 0, and
        // tcp_rate_gen fills rs->delivered before it discards an interval below min_rtt.
        let mut c = bbr2("");
        c.idle_restart = true;
        let s = AckSummary {
            acked: 1500,
            delivered: Some(3000),
            sample: None,
            ..AckSummary::default()
        };
        let rs = c.rate_sample(&s);
        assert!(!rs.valid);
        c.update_min_rtt(Time::from_millis(1), &rs);
        assert!(!c.idle_restart, "PROBE_RTT is no longer held off");
        // An ACK whose packets carried no send-time snapshot (Linux rs->delivered = -1) keeps it.
        c.idle_restart = true;
        let rs = c.rate_sample(&AckSummary {
            acked: 1500,
            ..AckSummary::default()
        });
        c.update_min_rtt(Time::from_millis(2), &rs);
        assert!(c.idle_restart);
    }

    #[test]
    fn a_constant_delay_keeps_renewing_the_probe_rtt_minimum() {
        // tcp_bbr2.c renews probe_rtt_min with samples that equal it (`<=`): a flow whose queue
        // drains in every cycle never needs PROBE_RTT.
        let mut p = path();
        let mut c = bbr2("");
        p.run(&mut c, Time::from_millis(22_000), |_, _, _| {});
        assert_eq!(get(&c, "probe_rtt_count"), 0.0);
    }

    #[test]
    fn loss_rate_above_2_percent_in_a_probe_cuts_inflight_hi() {
        let mut c = bbr2("");
        c.min_rtt = Some(Duration::from_millis(40));
        c.max_bw = [0.0, 1.5e6 * 2.5]; // 100 packets per 40 ms: BDP 100
        c.full_bw_reached = true;
        c.mode = Mode::ProbeBw;
        c.cwnd = 200;
        c.start_bw_probe_up(Time::from_millis(1000));
        c.bw_probe_samples = true;
        let lost = |lost_pkts: u64| LostPacket {
            seq: 1,
            size: 1500,
            tx_in_flight: 130 * 1500,
            lost: lost_pkts * 1500,
            is_app_limited: false,
        };
        // 2 of 130 is 1.5 %: below loss_thresh (130 × 5 / 256 = 2.5, so 3 losses are needed).
        c.skb_marked_lost(Time::from_millis(1010), &lost(2));
        assert_eq!(c.inflight_hi, INF, "1.5 % loss is tolerated");
        assert_eq!(c.phase, Phase::Up);
        c.skb_marked_lost(Time::from_millis(1011), &lost(3));
        // The loss rate crossed 2 % inside this packet: 129 before it with 2 lost, budget
        // ceil(129 × 5 / 256) = 3, so one more packet's worth (1 × 256 / 251 = 1): 130. The floor
        // is (1 − β) × target inflight = 0.703 × min(100 + 2 in UP, cwnd 200) = 71.
        assert_eq!(
            c.inflight_hi, 130,
            "2.3 % loss sets inflight_hi where it crossed 2 %"
        );
        assert_eq!(c.phase, Phase::Down, "and stops the probe");
        assert!(c.prev_probe_too_high && !c.bw_probe_samples);
        assert_eq!(Bbr2::inflight_hi_from_lost_skb(130, 3, 1), 130);
        assert_eq!(
            Bbr2::inflight_hi_from_lost_skb(130, 9, 1),
            129,
            "crossed before it"
        );
        // A probe that never saw its loss rate cross 2 % is floored at 0.7 of the target.
        let mut d = bbr2("");
        d.min_rtt = Some(Duration::from_millis(40));
        d.max_bw = [0.0, 1.5e6 * 2.5];
        d.mode = Mode::ProbeBw;
        d.phase = Phase::Cruise; // no +2 of the UP phase in the target
        d.cwnd = 200;
        d.handle_inflight_too_high(Time::ZERO, false, 10);
        assert_eq!(d.inflight_hi, (100 * 180) >> 8, "(1 − 76/256) × 100 = 70");
    }

    #[test]
    fn losses_in_startup_end_it_with_inflight_hi_at_one_bdp() {
        // Every other packet from 150 to 450 is dropped: ≥ 8 loss-marking ACKs in a recovery
        // round with a loss rate far above 2 %.
        let mut p = path();
        p.dropper = Box::new(|pkt| (150..450).contains(&pkt.seq) && pkt.seq % 2 == 0);
        let mut c = bbr2("");
        let mut exit = None;
        p.run(&mut c, Time::from_millis(3000), |t, c, _| {
            if exit.is_none() && get(c, "full_bw_reached") == 1.0 {
                exit = Some((t, get(c, "startup_loss_exit"), get(c, "round_count")));
            }
        });
        let (t, by_loss, round) = exit.unwrap();
        assert_eq!(
            by_loss, 1.0,
            "STARTUP ended on loss at {t:?}, round {round}"
        );
        // inflight_hi = bbr_inflight(max_bw, 1): the BDP at the bandwidth measured so far
        // (at most the link's 41 packets) plus the quantization floor.
        let hi = get(&c, "inflight_hi_packets");
        assert!((10.0..=60.0).contains(&hi), "inflight_hi {hi}");
        // Without the losses the same flow leaves STARTUP on the bandwidth plateau.
        let mut q = path();
        let mut d = bbr2("");
        q.run(&mut d, Time::from_millis(3000), |_, _, _| {});
        assert_eq!(get(&d, "startup_loss_exit"), 0.0);
        assert_eq!(get(&d, "full_bw_reached"), 1.0);
    }

    #[test]
    fn losses_outside_probing_cut_bw_lo_and_inflight_lo_by_beta_until_the_next_refill() {
        let mut c = bbr2("");
        c.min_rtt = Some(Duration::from_millis(40));
        c.max_bw = [0.0, 3.0e6];
        c.full_bw_reached = true;
        c.mode = Mode::ProbeBw;
        c.phase = Phase::Cruise;
        c.cwnd = 100;
        c.loss_in_round = true;
        c.bw_latest = 1.0e6;
        c.inflight_latest = 20;
        c.adapt_lower_bounds();
        let keep = 180.0 / 256.0;
        assert_eq!(c.bw_lo, 3.0e6 * keep, "bw_lo = (1 − β) × max_bw");
        assert_eq!(
            c.inflight_lo, 70,
            "inflight_lo = (1 − β) × cwnd = 100 × 180 >> 8"
        );
        c.adapt_lower_bounds();
        assert_eq!(c.bw_lo, 3.0e6 * keep * keep, "each lossy round cuts again");
        assert_eq!(c.inflight_lo, 49);
        // ... but never below what the last round delivered.
        c.bw_latest = 2.0e6;
        c.inflight_latest = 45;
        c.adapt_lower_bounds();
        assert_eq!((c.bw_lo, c.inflight_lo), (2.0e6, 45));
        assert_eq!(c.bw(), 2.0e6, "bw = min(max_bw, bw_lo)");
        // While probing (REFILL, UP, STARTUP) the lower bounds are left alone.
        c.phase = Phase::Up;
        c.bw_latest = 0.0;
        c.adapt_lower_bounds();
        assert_eq!((c.bw_lo, c.inflight_lo), (2.0e6, 45));
        // The next probe forgets them.
        c.start_bw_probe_refill(0);
        assert_eq!((c.bw_lo, c.inflight_lo), (f64::INFINITY, INF));
    }

    #[test]
    fn cruise_and_probe_rtt_leave_15_percent_headroom_below_inflight_hi() {
        let mut c = bbr2("");
        c.inflight_hi = 100;
        assert_eq!(
            c.inflight_with_headroom(),
            86,
            "100 − max(1, 100 × 38 >> 8 = 14)"
        );
        c.inflight_hi = 5;
        assert_eq!(
            c.inflight_with_headroom(),
            4,
            "5 − max(1, 0), at least 4 packets"
        );
        c.inflight_hi = INF;
        assert_eq!(c.inflight_with_headroom(), INF);
        c.inflight_hi = 100;
        c.mode = Mode::ProbeBw;
        for (phase, cap) in [
            (Phase::Cruise, 86),
            (Phase::Down, 100),
            (Phase::Refill, 100),
            (Phase::Up, 100),
        ] {
            c.phase = phase;
            c.cwnd = 150;
            c.bound_cwnd_for_inflight_model();
            assert_eq!(c.cwnd, cap, "{phase:?}");
        }
        c.mode = Mode::ProbeRtt;
        c.cwnd = 150;
        c.bound_cwnd_for_inflight_model();
        assert_eq!(c.cwnd, 86, "PROBE_RTT uses the headroom too");
        // inflight_lo binds in every phase.
        c.inflight_lo = 50;
        c.mode = Mode::ProbeBw;
        c.phase = Phase::Up;
        c.cwnd = 150;
        c.bound_cwnd_for_inflight_model();
        assert_eq!(c.cwnd, 50);
    }

    #[test]
    fn a_shallow_buffer_sets_inflight_hi_and_the_probes_stay_below_it() {
        // A drop-tail buffer of 20 packets at the 12 Mbit/s link (one packet per ms), behind
        // the 41-packet BDP: the path holds 61 packets, and STARTUP overflows it.
        let mut p = path();
        let mut link_free = Time::ZERO;
        p.dropper = Box::new(move |pkt| {
            let backlog = link_free.max(pkt.send_time) - pkt.send_time;
            if backlog >= Duration::from_millis(20) {
                return true;
            }
            link_free = link_free.max(pkt.send_time) + Duration::from_millis(1);
            false
        });
        let mut c = bbr2("");
        p.run(&mut c, Time::from_millis(20_000), |_, _, _| {});
        let hi = get(&c, "inflight_hi_packets");
        assert!(
            hi.is_finite() && hi <= 61.0 + 2.0,
            "inflight_hi {hi} near the 61 the path holds"
        );
        assert_eq!(get(&c, "startup_loss_exit"), 1.0);
        assert_eq!(get(&c, "mode"), 2.0);
    }

    #[test]
    fn bbr2_s_reads_the_percentile_and_the_text_reading_scales_it_by_085() {
        for (params, scale) in [
            ("bw_estimator = \"percentile\"", 1.0),
            (
                "bw_estimator = \"percentile\"\npercentile_reading = \"text\"",
                0.85,
            ),
        ] {
            let mut c = bbr2(params);
            for bw in [1.0e6, 2.0e6, 3.0e6] {
                let rs = Rs {
                    valid: true,
                    acked_sacked: 1,
                    delivered: 10,
                    ..Rs::default()
                };
                c.update_congestion_signals(&rs, bw);
            }
            let app = Rs {
                valid: true,
                acked_sacked: 1,
                is_app_limited: true,
                ..Rs::default()
            };
            c.update_congestion_signals(&app, 9.0e6);
            // Code: the newest (warm-up); text: ⌈0.85 × 3⌉ = 3rd smallest of 3. Either way 3e6.
            assert_eq!(c.max_bw(), 3.0e6 * scale, "{params}");
            assert_eq!(
                c.max_bw_filter(),
                9.0e6,
                "the v2 filter still takes the app-limited sample above its max"
            );
            c.bw_lo = 2.0e6;
            assert_eq!(
                c.bw(),
                2.0e6_f64.min(3.0e6 * scale),
                "bw = min(estimate, bw_lo)"
            );
        }
    }
}
