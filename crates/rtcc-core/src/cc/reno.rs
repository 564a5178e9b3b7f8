//! `reno`: TCP Reno congestion control (RFC 5681 with RFC 3465 byte counting), and the window
//! machinery that `cubic` and `bbr` share with it.
//!
//! A window-based TCP sender keeps at most `cwnd` bytes in flight. Reno grows `cwnd` in two ways
//! and shrinks it multiplicatively on loss:
//!
//! - Slow start (RFC 5681 §3.1), while `cwnd < ssthresh`: every ACK adds the bytes it
//!   acknowledges, at most L × MSS with L = 2 (RFC 3465 §2.2, Appropriate Byte Counting), so
//!   the window doubles every round trip. The first window is 10 MSS (RFC 6928, Linux
//!   `TCP_INIT_CWND`) and `ssthresh` starts infinite (RFC 5681 §3.1: "arbitrarily high").
//!   When an ACK takes `cwnd` past `ssthresh`, the rest of it counts toward congestion avoidance
//!   (Linux `tcp_slow_start`).
//! - Congestion avoidance (RFC 5681 §3.1, RFC 3465 §2.1): acknowledged bytes accumulate in
//!   `bytes_acked`; each time they reach `cwnd`, `cwnd` grows by one MSS and `cwnd` is subtracted.
//!   That is one MSS per round trip, whatever the ACK pattern (Linux `tcp_cong_avoid_ai`).
//! - Loss (RFC 5681 §3.2, RFC 6675 §5): when a packet is declared lost (here: a later packet was
//!   acknowledged, SACK-style), `ssthresh = max(cwnd / 2, 2 MSS)` (β = 0.5, Linux
//!   `tcp_reno_ssthresh`, which halves `cwnd`; RFC 5681 eq. 4 halves the flight size, which is
//!   `cwnd` for a window-limited sender) and `cwnd = ssthresh`. That opens a recovery episode
//!   whose recovery point is the last packet sent so far: further losses of packets sent before
//!   the episode began belong to the same window of data and do not reduce the window again
//!   (RFC 6582 §3.2 / RFC 6675 §5 "RecoveryPoint"). The window does not grow during recovery;
//!   recovery ends when a packet sent after the loss is acknowledged. Behind the TCP sender the
//!   episodes are the sender's instead (its report's `recovery`, Linux's `TCP_CA_Recovery`):
//!   reduce when it enters fast recovery, end when its cumulative ACK passes the recovery
//!   point, and no reduction for a loss in between. `cwnd = ssthresh` is the
//!   window recovery ends at; while the TCP sender is in fast recovery it paces the reduction
//!   with proportional rate reduction (RFC 6937, Linux `tcp_cwnd_reduction`; this controller
//!   asks for it through `uses_prr`), as Linux does for every congestion module without its
//!   own `cong_control`.
//! - Retransmission timeout (RFC 5681 §3.1, eq. 4): `ssthresh = max(cwnd / 2, 2 MSS)` unless the
//!   timeout hits a window that was already reduced (a timeout during recovery, or a repeated
//!   timeout: RFC 5681 §3.1 holds `ssthresh` then, as Linux `tcp_enter_loss` does), and
//!   `cwnd` = one MSS above what the timeout left in flight (Linux `tcp_enter_loss`:
//!   `packets_in_flight + 1`; 1 MSS, RFC 5681's loss window, when everything was marked lost).
//!   The sender then slow-starts again; the losses the timeout marked are never reported.
//! - Undo (Linux `tcp_undo_cwnd_reduction` with `tcp_reno_undo_cwnd`): when the TCP sender
//!   finds a timeout spurious (F-RTO, DSACKs, the original of the head arriving) it calls
//!   `on_undo`: `cwnd = max(cwnd, prior_cwnd)` and `ssthresh` back to `prior_ssthresh`
//!   (`max(ssthresh, 3/4 cwnd)` when the reduction began) if larger; an ECN reduction saves no
//!   prior `ssthresh` and is never undone (`tcp_enter_cwr`).
//! - The window only grows while it limits the sender (RFC 7661 §4.1's spirit, Linux
//!   `tcp_is_cwnd_limited`): in a window in which the sender filled `cwnd`, or, in slow start,
//!   used at least half of it. An application-limited flow (a video flow below its window) does
//!   not inflate a window it never tested.
//!
//! Pacing: off by default (Linux paces only with the `fq` qdisc or when a controller asks).
//! With `pacing = true` the rate is Linux's `tcp_update_pacing_rate`: `cwnd / srtt` times 2 in
//! slow start (`cwnd < ssthresh / 2`, `tcp_pacing_ss_ratio` = 200 %) and 1.2 otherwise
//! (`tcp_pacing_ca_ratio` = 120 %). The encoder target is `cwnd / srtt`, with srtt from RFC 6298
//! §2 (α = 1/8), and RFC 9002 §6.2.2's initial 333 ms before the first sample.

use super::params::controller_config;
use super::{
    boxed, build_fn, parse_config, Controller, ControllerContext, ControllerError, ControllerInfo,
};
use super::{Decision, FeedbackPolicy, Params};
use crate::packet::{FeedbackReport, LossRecovery, SentPacket};
use crate::units::{Bytes, Duration, Rate, Time};

/// RFC 9002 §6.2.2 `kInitialRtt`: the RTT assumed before the first sample.
pub(crate) const INITIAL_RTT: Duration = Duration(333_000_000);

/// The docs of the parameters the TCP controllers share, for their configs' doc comments
/// (`#[doc = tcp_param_doc!(mss)]`).
macro_rules! tcp_param_doc {
    (mss) => {
        "segment size on the wire (cwnd is counted in bytes of these)"
    };
    (initial_cwnd) => {
        "initial window in segments (RFC 6928, Linux TCP_INIT_CWND)"
    };
    (pacing) => {
        "pace at 2 x cwnd/srtt in slow start and 1.2 x in congestion avoidance (Linux with fq)"
    };
}
pub(crate) use tcp_param_doc;

controller_config! {
    /// Reno's parameters.
    pub struct RenoConfig {
        #[doc = tcp_param_doc!(mss)]
        ///
        /// 1500 B is a full Ethernet frame.
        pub mss: Bytes = default_mss(),
        #[doc = tcp_param_doc!(initial_cwnd)]
        pub initial_cwnd: u32 = default_initial_cwnd(),
        #[doc = tcp_param_doc!(pacing)]
        ///
        /// Off as in Linux without `fq`.
        pub pacing: bool = false,
        /// RFC 3465 slow-start limit per acknowledgement (report), segments; 0 = none
        ///
        /// The limit L on the slow-start increase per acknowledgement; an acknowledgement is one
        /// feedback report. 2 as in RFC 3465 §2.2.
        pub abc_l: u32 = 2,
    }
}

/// The TCP controllers' segment size: a full Ethernet frame.
pub(crate) fn default_mss() -> Bytes {
    Bytes(1500)
}
/// The TCP controllers' initial window in segments (RFC 6928, Linux `TCP_INIT_CWND`).
pub(crate) fn default_initial_cwnd() -> u32 {
    10
}

/// Shared parameter checks of the TCP controllers.
pub(crate) fn check_window(mss: Bytes, initial_cwnd: u32) -> Result<(), String> {
    if !(500..=65_535).contains(&mss.0) {
        return Err(format!("mss must be between 500B and 65535B, got {}", mss));
    }
    if !(1..=1000).contains(&initial_cwnd) {
        return Err(format!(
            "initial_cwnd must be 1 to 1000 segments, got {initial_cwnd}"
        ));
    }
    Ok(())
}

/// Linux's congestion-avoidance states that matter here (`tcp_ca_state`, in its order).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum CaState {
    Open,
    /// Window reduced for an ECN-Echo, no loss (Linux `TCP_CA_CWR`).
    Cwr,
    /// Fast recovery after a loss detected by later ACKs.
    Recovery,
    /// After a retransmission timeout.
    Loss,
}

impl CaState {
    /// The value logged as `ca_state`: 0 open, 1 recovery, 2 loss (the codes before ECN), 3 CWR.
    pub fn log_code(self) -> f64 {
        match self {
            CaState::Open => 0.0,
            CaState::Recovery => 1.0,
            CaState::Loss => 2.0,
            CaState::Cwr => 3.0,
        }
    }
}

/// Recovery episodes: one window reduction per window of losses.
#[derive(Debug, Clone)]
pub(crate) struct Episodes {
    pub state: CaState,
    /// Packets numbered from here on were sent after the current episode began.
    bound: u64,
    /// `bound` before the last reduction, restored by an undo.
    prior_bound: u64,
    next_seq: u64,
}

/// What a feedback report changed.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct EpisodeEvents {
    /// A loss of a packet sent after the last episode began: reduce the window.
    pub new_episode: bool,
    /// A packet sent after the episode began was acknowledged: the episode is over.
    pub exited: bool,
}

impl Episodes {
    pub fn new() -> Self {
        Episodes {
            state: CaState::Open,
            bound: 0,
            prior_bound: 0,
            next_seq: 0,
        }
    }
    /// One past the highest sequence number sent (Linux `snd_nxt`, in packets).
    pub fn next_seq(&self) -> u64 {
        self.next_seq
    }
    pub fn on_sent(&mut self, seq: u64) {
        self.next_seq = self.next_seq.max(seq.saturating_add(1));
    }
    pub fn on_report(&mut self, report: &FeedbackReport) -> EpisodeEvents {
        if let Some(recovery) = report.recovery {
            return self.follow_sender(recovery, report);
        }
        let mut ev = EpisodeEvents::default();
        for p in &report.packets {
            if p.receive_time.is_none() && p.sent.seq >= self.bound {
                if !ev.new_episode {
                    self.prior_bound = self.bound;
                }
                ev.new_episode = true;
                self.state = CaState::Recovery;
                self.bound = self.next_seq.max(p.sent.seq.saturating_add(1));
            }
        }
        let acked_after = report
            .packets
            .iter()
            .any(|p| p.receive_time.is_some() && p.sent.seq >= self.bound);
        if self.state != CaState::Open && acked_after {
            self.state = CaState::Open;
            ev.exited = true;
        }
        ev
    }
    /// Episodes as Linux keeps them, for a TCP sender that reports its loss recovery
    /// ([`FeedbackReport::recovery`]): the window is reduced when the sender enters a fast
    /// recovery (`tcp_enter_recovery`, which computes `ssthresh` only if no reduction is under
    /// way: not again from CWR, whose reduction goes on), and the episode lasts until the
    /// sender's recovery ends, when the cumulative ACK passes the recovery point
    /// (`tcp_fastretrans_alert`'s `high_seq` check). A loss reported in between (a lost
    /// retransmission, or new data sent during the recovery and lost before it ends) belongs to
    /// the episode and reduces nothing, whatever its packet number. CWR still ends as in
    /// [`Episodes::on_report`] (a packet sent after the reaction is acknowledged).
    fn follow_sender(&mut self, recovery: LossRecovery, report: &FeedbackReport) -> EpisodeEvents {
        let mut ev = EpisodeEvents::default();
        match (recovery, self.state) {
            (LossRecovery::Entered, CaState::Cwr) => self.state = CaState::Recovery,
            (LossRecovery::Entered, _) => {
                self.prior_bound = self.bound;
                self.bound = self.next_seq;
                self.state = CaState::Recovery;
                ev.new_episode = true;
            }
            (LossRecovery::Open, CaState::Recovery | CaState::Loss) => {
                self.state = CaState::Open;
                ev.exited = true;
            }
            (LossRecovery::Open, CaState::Cwr)
                if report.received().any(|p| p.sent.seq >= self.bound) =>
            {
                self.state = CaState::Open;
                ev.exited = true;
            }
            _ => {}
        }
        ev
    }
    /// An ECN-Echo (RFC 3168 §6.1.2): congestion without a loss. Opens an episode (Linux's CWR
    /// state, until a packet sent from now on is acknowledged) if none is under way, and returns
    /// whether to reduce the window: at most once per window of data, and not again for a
    /// window that a loss already reduced (Linux `tcp_enter_cwr()` acts only in `TCP_CA_Open`).
    /// A later loss of a packet sent before the episode began does not reduce again either.
    pub fn on_ecn_echo(&mut self) -> bool {
        if self.state != CaState::Open {
            return false;
        }
        self.state = CaState::Cwr;
        self.prior_bound = self.bound;
        self.bound = self.next_seq;
        true
    }
    /// A timeout; returns whether it hit an unreduced window (so `ssthresh` is recomputed).
    pub fn on_rto(&mut self) -> bool {
        let fresh = self.state == CaState::Open;
        if fresh {
            self.prior_bound = self.bound;
        }
        self.state = CaState::Loss;
        self.bound = self.next_seq;
        fresh
    }
    /// The reduction was undone (Linux `tcp_try_undo_loss` sets `TCP_CA_Open`): the episode is
    /// over and a loss of a packet sent after the earlier episode began starts a new one.
    pub fn undo(&mut self) {
        self.state = CaState::Open;
        self.bound = self.prior_bound;
    }
}

/// RFC 6298 §2 smoothed RTT (α = 1/8).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Rtt {
    pub srtt: Option<Duration>,
}

impl Rtt {
    pub fn on_sample(&mut self, r: Duration) {
        let smooth = |s: Duration| Duration(((7 * s.0 as u128 + r.0 as u128) / 8) as u64);
        self.srtt = Some(self.srtt.map_or(r, smooth));
    }
    pub fn srtt_or_initial(&self) -> Duration {
        self.srtt.unwrap_or(INITIAL_RTT).max(Duration(1))
    }
}

/// The window of a loss-based TCP sender: `cwnd`, `ssthresh`, episodes, growth rules.
#[derive(Debug, Clone)]
pub(crate) struct Window {
    pub mss: u64,
    pub cwnd: u64,
    /// The initial window, bytes (the restart window after idle).
    initial: u64,
    /// `u64::MAX` until the first reduction.
    pub ssthresh: u64,
    pub episodes: Episodes,
    pub rtt: Rtt,
    pub pacing: bool,
    /// Bytes credited toward the next one-MSS increase (Linux `snd_cwnd_cnt`, in bytes).
    credit: u64,
    // Linux `tcp_cwnd_validate` state.
    is_cwnd_limited: bool,
    max_in_flight: u64,
    usage_seq: u64,
    reported_through: u64,
    /// Send time of the previous packet (cubic shifts its epoch across idle periods).
    pub last_send: Option<Time>,
    /// Linux `prior_cwnd` and `prior_ssthresh`, saved when a loss or a timeout reduces the
    /// window, for an undo; `prior_ssthresh` 0: nothing to undo (an ECN reduction).
    prior_cwnd: u64,
    prior_ssthresh: u64,
}

/// A feedback report as the window sees it.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Ack {
    pub acked: u64,
    pub lost: u64,
    pub rtt: Option<Duration>,
    pub newest_acked_seq: Option<u64>,
    pub episode: EpisodeEvents,
}

impl Window {
    pub fn new(mss: Bytes, initial_cwnd: u32, pacing: bool) -> Window {
        Window {
            mss: mss.0,
            cwnd: mss.0 * initial_cwnd as u64,
            initial: mss.0 * initial_cwnd as u64,
            ssthresh: u64::MAX,
            episodes: Episodes::new(),
            rtt: Rtt::default(),
            pacing,
            credit: 0,
            is_cwnd_limited: false,
            max_in_flight: 0,
            usage_seq: 0,
            reported_through: 0,
            last_send: None,
            prior_cwnd: 0,
            prior_ssthresh: 0,
        }
    }

    pub fn on_packet_sent(&mut self, now: Time, pkt: &SentPacket) {
        self.episodes.on_sent(pkt.seq);
        self.last_send = Some(now);
        let limited = pkt.in_flight + self.mss > self.cwnd;
        let window_done = self.reported_through >= self.usage_seq;
        if window_done || limited || (!self.is_cwnd_limited && pkt.in_flight > self.max_in_flight) {
            self.is_cwnd_limited = limited;
            self.max_in_flight = pkt.in_flight;
            self.usage_seq = pkt.seq.saturating_add(1);
        }
    }

    pub fn on_report(&mut self, report: &FeedbackReport) -> Ack {
        let mut a = Ack::default();
        for p in &report.packets {
            self.reported_through = self.reported_through.max(p.sent.seq.saturating_add(1));
            if p.receive_time.is_some() {
                a.acked += p.sent.size as u64;
                a.newest_acked_seq =
                    Some(a.newest_acked_seq.map_or(p.sent.seq, |s| s.max(p.sent.seq)));
            } else {
                a.lost += p.sent.size as u64;
            }
        }
        if a.acked > 0 {
            a.rtt = report.latest_rtt();
        }
        if let Some(r) = a.rtt {
            self.rtt.on_sample(r);
        }
        a.episode = self.episodes.on_report(report);
        a
    }

    pub fn in_slow_start(&self) -> bool {
        self.cwnd < self.ssthresh
    }

    /// Linux `tcp_may_raise_cwnd` and `tcp_is_cwnd_limited`.
    pub fn may_grow(&self) -> bool {
        !matches!(self.episodes.state, CaState::Recovery | CaState::Cwr)
            && (self.is_cwnd_limited
                || (self.in_slow_start() && self.cwnd < 2 * self.max_in_flight))
    }

    /// Save the window before a loss or timeout reduces it (Linux `tcp_enter_recovery` and
    /// `tcp_enter_loss`: `prior_cwnd = cwnd`, `prior_ssthresh = tcp_current_ssthresh`, that is
    /// `max(ssthresh, 3/4 cwnd)` from the Open state; an ECN reduction saves none).
    pub fn save_prior(&mut self, undoable: bool) {
        self.prior_cwnd = self.cwnd;
        self.prior_ssthresh = if undoable {
            self.ssthresh.max(self.cwnd / 4 * 3)
        } else {
            0
        };
    }

    /// Linux `tcp_undo_cwnd_reduction` with `tcp_reno_undo_cwnd` (Cubic's `undo_cwnd` too):
    /// `cwnd = max(cwnd, prior_cwnd)` and `ssthresh` back to `prior_ssthresh` if that was
    /// larger; the recovery state is left.
    pub fn undo(&mut self) {
        if self.prior_ssthresh > 0 {
            self.cwnd = self.cwnd.max(self.prior_cwnd);
            self.ssthresh = self.ssthresh.max(self.prior_ssthresh);
            self.credit = 0;
        }
        self.prior_ssthresh = 0;
        self.episodes.undo();
    }

    /// Reduce to `ssthresh` (at least 2 MSS) at the start of a recovery episode.
    pub fn reduce_to(&mut self, ssthresh: u64) {
        self.ssthresh = ssthresh.max(2 * self.mss);
        self.cwnd = self.ssthresh;
        self.credit = 0;
    }

    /// Restart after an idle period longer than the RTO (RFC 5681 §4.1, Linux
    /// `tcp_cwnd_restart`): `ssthresh` keeps at least 3/4 of the window unless a reduction is
    /// under way (`tcp_current_ssthresh`), and the window restarts from `min(cwnd, initial
    /// window)`. Linux halves the window once per RTO of idleness down to that floor; the floor
    /// is reached after log2(cwnd / initial window) RTOs, and is used at once here.
    pub fn restart_after_idle(&mut self) {
        if !matches!(self.episodes.state, CaState::Recovery | CaState::Cwr) {
            let pkts = self.cwnd / self.mss;
            let current = ((pkts >> 1) + (pkts >> 2)) * self.mss;
            self.ssthresh = self.ssthresh.max(current);
        }
        self.cwnd = self.cwnd.min(self.initial);
        self.credit = 0;
    }

    /// The window after a timeout: RFC 5681 §3.1's loss window of one segment above what is
    /// still in flight (Linux `tcp_enter_loss`: `cwnd = tcp_packets_in_flight + 1`, in flight
    /// after `tcp_timeout_mark_lost`; one segment when everything was marked lost).
    pub fn collapse(&mut self, in_flight: u64) {
        self.cwnd = in_flight + self.mss;
        self.credit = 0;
    }

    /// Slow start with an optional RFC 3465 limit per ACK; returns the bytes left for
    /// congestion avoidance once `ssthresh` is reached.
    pub fn slow_start(&mut self, acked: u64, limit: Option<u64>) -> u64 {
        let inc = limit.map_or(acked, |l| acked.min(l));
        let new = self
            .cwnd
            .saturating_add(inc)
            .min(self.ssthresh.max(self.cwnd));
        let used = new - self.cwnd;
        self.cwnd = new;
        if self.in_slow_start() {
            0
        } else {
            acked - used
        }
    }

    /// One MSS per `per_mss` segments acknowledged (Linux `tcp_cong_avoid_ai` with w = per_mss).
    pub fn additive_increase(&mut self, acked: u64, per_mss: f64) {
        let w = ((per_mss * self.mss as f64).round() as u64).max(1);
        if self.credit >= w {
            self.credit = 0;
            self.cwnd += self.mss;
        }
        self.credit += acked;
        if self.credit >= w {
            let n = self.credit / w;
            self.credit -= n * w;
            self.cwnd += n * self.mss;
        }
    }

    /// Reno's growth on an acknowledgement of `acked` bytes (Linux `tcp_reno_cong_avoid`): none
    /// while the window may not grow, slow start (at most `limit` bytes per acknowledgement)
    /// below `ssthresh`, one MSS per window of acknowledged bytes above it.
    pub fn reno_growth(&mut self, acked: u64, limit: Option<u64>) {
        if acked == 0 || !self.may_grow() {
            return;
        }
        let mut acked = acked;
        if self.in_slow_start() {
            acked = self.slow_start(acked, limit);
        }
        if acked > 0 {
            let per_mss = self.cwnd as f64 / self.mss as f64;
            self.additive_increase(acked, per_mss);
        }
    }

    /// Linux `tcp_update_pacing_rate` (also what HyStart reads as the pacing rate).
    pub fn linux_pacing_rate(&self) -> Rate {
        let ratio = if self.cwnd < self.ssthresh / 2 {
            2.0
        } else {
            1.2
        };
        let srtt = self.rtt.srtt_or_initial().as_secs_f64();
        Rate(self.cwnd as f64 * 8.0 / srtt * ratio)
    }

    pub fn decision(&self) -> Decision {
        let target = Rate(self.cwnd as f64 * 8.0 / self.rtt.srtt_or_initial().as_secs_f64());
        // Before the first RTT sample Linux's pacing rate is not divided by an RTT: unpaced.
        let paced = self.pacing && self.rtt.srtt.is_some();
        let mut d = Decision::rate_only(target, paced.then(|| self.linux_pacing_rate()));
        d.cwnd = Some(self.cwnd);
        d
    }

    pub fn state(&self, out: &mut Vec<(&'static str, f64)>) {
        let pkts = |b: u64| b as f64 / self.mss as f64;
        out.push(("cwnd_packets", pkts(self.cwnd)));
        let ss = if self.ssthresh == u64::MAX {
            f64::INFINITY
        } else {
            pkts(self.ssthresh)
        };
        out.push(("ssthresh_packets", ss));
        out.push(("ca_state", self.episodes.state.log_code()));
        if let Some(s) = self.rtt.srtt {
            out.push(("srtt_ms", s.as_millis_f64()));
        }
    }
}

pub struct Reno {
    w: Window,
    abc_l: u32,
}

impl Reno {
    pub fn new(config: RenoConfig) -> Result<Reno, String> {
        check_window(config.mss, config.initial_cwnd)?;
        Ok(Reno {
            w: Window::new(config.mss, config.initial_cwnd, config.pacing),
            abc_l: config.abc_l,
        })
    }
    fn ssthresh_after_loss(&self) -> u64 {
        self.w.cwnd / 2
    }
}

impl Controller for Reno {
    fn on_packet_sent(&mut self, now: Time, pkt: &SentPacket) {
        self.w.on_packet_sent(now, pkt);
    }

    fn on_feedback(&mut self, _now: Time, report: &FeedbackReport) {
        let a = self.w.on_report(report);
        if a.episode.new_episode {
            self.w.save_prior(true);
            let ss = self.ssthresh_after_loss();
            self.w.reduce_to(ss);
        }
        let limit = (self.abc_l > 0).then(|| self.abc_l as u64 * self.w.mss);
        self.w.reno_growth(a.acked, limit);
    }

    fn on_rto(&mut self, _now: Time, in_flight: u64) {
        if self.w.episodes.on_rto() {
            self.w.save_prior(true);
            self.w.ssthresh = self.ssthresh_after_loss().max(2 * self.w.mss);
        }
        self.w.collapse(in_flight);
    }

    fn on_undo(&mut self, _now: Time) {
        self.w.undo();
    }

    fn uses_prr(&self) -> bool {
        true
    }

    /// RFC 3168 §6.1.2: "the congestion control algorithms followed at the end-systems MUST
    /// be essentially the same" for a CE mark as for a dropped packet: the multiplicative
    /// decrease of a fast retransmit, without the retransmission.
    fn on_ecn_echo(&mut self, _now: Time) {
        if self.w.episodes.on_ecn_echo() {
            self.w.save_prior(false);
            let ss = self.ssthresh_after_loss();
            self.w.reduce_to(ss);
        }
    }

    fn on_idle_restart(&mut self, _now: Time) {
        self.w.restart_after_idle();
    }

    fn decision(&self) -> Decision {
        self.w.decision()
    }

    fn state(&self, out: &mut Vec<(&'static str, f64)>) {
        self.w.state(out);
    }
}

/// Feedback for video use; the TCP endpoint acknowledges every packet regardless.
pub(crate) const TCP_FEEDBACK: FeedbackPolicy = FeedbackPolicy {
    interval: Some(Duration(20_000_000)),
    per_frame: true,
    frame_acks: false,
    rate_reports: None,
};

pub fn info() -> ControllerInfo {
    ControllerInfo {
        name: "reno".into(),
        summary: "TCP Reno (RFC 5681, RFC 3465 byte counting).".into(),
        params: RenoConfig::param_docs(),
        feedback: TCP_FEEDBACK,
        media: Default::default(),
        build: build_fn(build),
    }
}

fn build(
    params: &Params,
    _ctx: &ControllerContext,
) -> Result<Box<dyn Controller>, ControllerError> {
    let config: RenoConfig = parse_config("reno", params)?;
    boxed("reno", Reno::new(config))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::delivery_rate::testpath::Path;

    const MSS: u64 = 1500;

    fn reno() -> Reno {
        Reno::new(parse_config("reno", &Params::new()).unwrap()).unwrap()
    }

    fn cwnd(c: &dyn Controller) -> u64 {
        c.decision().cwnd.unwrap()
    }

    #[test]
    fn an_idle_restart_keeps_three_quarters_of_the_window_as_ssthresh() {
        let mut c = reno();
        c.w.cwnd = 80 * MSS;
        c.w.ssthresh = 40 * MSS;
        c.on_idle_restart(Time::ZERO);
        assert_eq!(cwnd(&c), 10 * MSS, "min(cwnd, initial window)");
        assert_eq!(
            c.w.ssthresh,
            60 * MSS,
            "max(ssthresh, 3/4 cwnd): Linux tcp_current_ssthresh"
        );
    }

    #[test]
    fn slow_start_doubles_the_window_every_round_trip() {
        // A pure 100 ms delay: each window leaves as a burst and returns 100 ms later.
        let mut p = Path::new(Duration::from_millis(100), None);
        let mut c = reno();
        let mut at_round = vec![];
        for r in 1..=5u64 {
            p.run(&mut c, Time::from_millis(100 * r + 50), |_, _, _| {});
            at_round.push(cwnd(&c) / MSS);
        }
        assert_eq!(at_round, vec![20, 40, 80, 160, 320]);
    }

    #[test]
    fn byte_counting_caps_slow_start_at_two_segments_per_ack() {
        // One stretch ACK for four segments adds L = 2 segments, not four (RFC 3465 §2.2);
        // with the limit off it adds all four.
        for (params, expect) in [("", 12), ("abc_l = 0", 14)] {
            let p: Params = toml::from_str(params).unwrap();
            let mut c = Reno::new(parse_config("reno", &p).unwrap()).unwrap();
            let mut pkts = vec![];
            for seq in 0..4 {
                let p = SentPacket {
                    seq,
                    size: 1500,
                    send_time: Time::ZERO,
                    frame: None,
                    index_in_frame: 0,
                    packets_in_frame: 0,
                    kind: crate::packet::PacketKind::Media,
                    in_flight: (seq + 1) * MSS + 6 * MSS,
                };
                c.on_packet_sent(Time::ZERO, &p);
                let receive_time = Some(Time(1));
                pkts.push(crate::packet::PacketResult {
                    sent: p,
                    receive_time,
                    ecn: crate::packet::Ecn::NotEct,
                });
            }
            let now = Time::from_millis(50);
            let r = FeedbackReport {
                feedback_time: now,
                packets: pkts,
                in_flight: 6 * MSS,
                recovery: None,
            };
            c.on_feedback(now, &r);
            assert_eq!(cwnd(&c), expect * MSS, "{params}");
        }
    }

    /// Drive to `ssthresh` = `w / 2` by dropping one packet once the window reaches `w` packets.
    fn after_one_loss_at(w: u64) -> (Path, Reno, Vec<(Time, u64)>) {
        let mut p = Path::new(Duration::from_millis(100), None);
        let mut fired = false;
        p.dropper = Box::new(move |pkt| {
            let hit = !fired && pkt.in_flight >= w * MSS;
            fired |= hit;
            hit
        });
        let mut c = reno();
        let mut trace = vec![];
        p.run(&mut c, Time::from_millis(3000), |t, c, _| {
            trace.push((t, cwnd(c)))
        });
        (p, c, trace)
    }

    #[test]
    fn one_halving_per_window_of_losses_then_one_segment_per_round_trip() {
        // Three losses in the same window: the window is halved once.
        let mut p = Path::new(Duration::from_millis(100), None);
        p.dropper = Box::new(|pkt| [70, 75, 79].contains(&pkt.seq));
        let mut c = reno();
        let mut trace = vec![];
        p.run(&mut c, Time::from_millis(2000), |t, c, r| {
            trace.push((t, cwnd(c), r.lost_count()));
        });
        let losses: Vec<_> = trace.iter().filter(|x| x.2 > 0).collect();
        assert_eq!(losses.len(), 3, "three separate loss reports");
        // Packet 70 was sent in the fourth round (packets 70..149, window 80): the first loss
        // report (with the ACK of packet 71) halves the window to 40 segments.
        let w_at_loss = losses[0].1;
        assert_eq!(w_at_loss, 40 * MSS);
        assert!(
            losses.iter().all(|x| x.1 == w_at_loss),
            "no further reduction: {losses:?}"
        );
        let mut s = vec![];
        c.state(&mut s);
        assert!(s.contains(&("ssthresh_packets", 40.0)));
        // Congestion avoidance: exactly +1 MSS per round trip afterwards.
        let (_, _, trace) = after_one_loss_at(100);
        let cw = |ms: u64| {
            trace
                .iter()
                .rev()
                .find(|x| x.0 <= Time::from_millis(ms))
                .unwrap()
                .1
        };
        let base = cw(1050);
        for k in 1..=15 {
            assert_eq!(cw(1050 + 100 * k), base + k * MSS, "round {k}");
        }
    }

    #[test]
    fn a_timeout_collapses_the_window_to_one_segment() {
        let mut p = Path::new(Duration::from_millis(100), None);
        let mut c = reno();
        p.run(&mut c, Time::from_millis(350), |_, _, _| {});
        assert_eq!(cwnd(&c), 80 * MSS);
        p.rto(&mut c);
        assert_eq!(cwnd(&c), MSS);
        let mut s = vec![];
        c.state(&mut s);
        assert!(s.contains(&("ssthresh_packets", 40.0)) && s.contains(&("ca_state", 2.0)));
        // A second timeout before anything is acknowledged keeps ssthresh (RFC 5681 §3.1).
        c.on_rto(Time::from_millis(1000), 0);
        let mut s = vec![];
        c.state(&mut s);
        assert!(s.contains(&("ssthresh_packets", 40.0)));
        // Slow start from one segment back to ssthresh: 1, 2, 4, ... 32, then 40.
        let start = p.now;
        p.run(&mut c, start + Duration::from_millis(650), |_, _, _| {});
        assert_eq!(cwnd(&c), 40 * MSS);
    }

    #[test]
    fn an_application_limited_flow_does_not_grow_its_window() {
        let mut p = Path::new(Duration::from_millis(50), None);
        p.app_rate = Some(Rate::from_mbps(1.0)); // 4.2 packets per RTT, window 10
        let mut c = reno();
        p.run(&mut c, Time::from_millis(5000), |_, _, _| {});
        assert_eq!(cwnd(&c), 10 * MSS);
        let d = c.decision();
        // cwnd / srtt = 15 000 B / 50 ms.
        assert!((d.target_bitrate.bps() - 2.4e6).abs() < 1e-3, "{:?}", d);
        assert_eq!(d.pacing_rate, None);
    }
}
