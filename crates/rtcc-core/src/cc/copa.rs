//! `copa`: Copa (Arun & Balakrishnan, "Copa: Practical Delay-Based Congestion Control for the
//! Internet", NSDI 2018), with the paper's default/competitive mode switching as `mode = "auto"`.
//! Constants and details the paper leaves open follow its authors' reference implementation,
//! genericCC (`markoviancc.cc`, `rtt-window.cc`, `estimators.cc`), and Meta's mvfst
//! (`quic/congestion_control/Copa.cpp`, `QuicConstants.h`).
//!
//! The idea (§2, §2.1). If packets arrive at a bottleneck as a Poisson process, a sender that
//! maximises `log(throughput) − δ·log(delay)` should send at
//!
//! ```text
//! λt = 1 / (δ · dq)        packets per second, dq = queueing delay
//! ```
//!
//! When every flow on a bottleneck does this, each sees the same dq, so each gets the same rate,
//! and the queue holds about 1/δ packets per flow: a flow sending at link rate μ over a queue of
//! Q packets has dq = Q/μ, and λt ≥ μ exactly while Q ≤ 1/δ. δ trades throughput for delay:
//! 0.5 is the paper's default (§2.1, and genericCC's documented `delta_conf=do_ss:auto:0.5`);
//! Vidaptive runs δ = 0.9.
//!
//! Measuring dq (§2.1). `RTTmin` is the smallest RTT of the last 10 s (genericCC's `min_rtt`
//! window of 10 s; mvfst `kMinRTTWindowLength`), the propagation delay. `RTTstanding` is the
//! smallest RTT of the last srtt/2 (τ = srtt/2 in the paper; mvfst's default standing window):
//! taking a minimum filters out ACK compression and delayed-ACK noise, and half an RTT is
//! recent enough to see the queue the flow's own window keeps. `dq = RTTstanding − RTTmin`.
//! srtt is RFC 6298's EWMA (α = 1/8; genericCC uses 1/16). RTTs are sampled per acknowledged
//! packet (`rtt_window.rs`).
//!
//! Window update (§2.1), on every ACK: the current rate is `λ = cwnd / RTTstanding`; if
//! `λ ≤ λt` then `cwnd += v / (δ · cwnd)` else `cwnd −= v / (δ · cwnd)` (packets). One window of
//! ACKs therefore moves cwnd by v/δ packets per RTT. A report acknowledging `b` bytes applies
//! `b/MSS` such steps at once (mvfst: `ackedPackets · MSS² · v / (δ · cwnd)` bytes), so 200-byte
//! padding counts as a fifth of a packet. cwnd never goes below 2 packets (genericCC
//! `max(2.0, _the_window)`, mvfst `kMinCwndInMss` = 2).
//!
//! Velocity v (§2.1). v starts at 1. Once per window (a window ends when a packet sent after it
//! began is acknowledged) cwnd is compared with its value at the start of the window: larger is
//! "up", otherwise "down". The same direction as the previous window increments a counter; once
//! the counter reaches 3 (the direction has held for three more windows: mvfst
//! `velocityDirectionThreshold` = 3) v doubles at every further window; a change of direction
//! resets v to 1 and the counter to 0. The paper waits three RTTs because in steady state the
//! direction legitimately holds for about 2.5 RTTs. mvfst also resets v to 1 at once when a
//! single ACK moves cwnd against the direction v was built for (`changeDirection`): without it a
//! large v overshoots the target for up to a whole window. v is capped at δ·cwnd (in packets),
//! so no window changes cwnd by more than cwnd itself (genericCC halves `update_amt` above
//! `_the_window · delta`).
//!
//! Slow start (§2.1): "cwnd doubles once per RTT until λ exceeds λt". Each ACK adds the bytes it
//! acknowledges (the window doubles per RTT, as TCP's slow start; mvfst doubles once per srtt),
//! and the first ACK with `λ > λt` ends slow start for good and is applied as a decrease.
//!
//! Pacing (§2.1): packets are paced at `2 · cwnd / RTTstanding`, so the window, not the pacer,
//! limits a backlogged sender while bursts are spread over half an RTT (genericCC's intersend
//! time `0.5 · rtt / window`; mvfst paces 2·cwnd per srtt). Unpaced before the first RTT sample.
//!
//! Default mode ignores losses (§2: delay is the signal; robustness to random loss is one of the
//! paper's results). Two guards from the implementations: after a retransmission timeout cwnd
//! drops to the 2-packet minimum (mvfst's persistent-congestion rule), and when more than 30 %
//! of the packets of an interval of at least two RTTs and more than 20 packets were lost, cwnd is
//! multiplied by 0.7 (genericCC `ReduceOnLoss`: a queue too short to hold 1/δ packets per flow).
//!
//! Competitive mode (§2.2; `mode = "auto"`, genericCC's `auto:` configuration). A buffer-filling
//! flow (Cubic, Reno) keeps the queue from ever draining, and a Copa flow that keeps only 1/δ
//! packets there gets a vanishing share. In default mode the queue Copa flows share empties
//! at least once every 5 RTTs (their windows oscillate around the target, §2.2), so:
//! - An RTT sample counts as "queue nearly empty" when its queueing delay `rtt − RTTmin` is at
//!   most 10 % of `RTTmax − RTTmin`, with RTTmax the largest RTT of the last 4 srtt (genericCC
//!   `RTTWindow::is_copa`: threshold `min_rtt + 0.1·(is_copa_max − min_rtt)`, windows of
//!   `4·srtt`).
//! - If no sample in the last 5 srtt was nearly empty (§2.2's 5 RTTs), Copa is in competitive
//!   mode; the next nearly-empty sample returns it to default mode, with δ back at its default.
//! - In competitive mode 1/δ follows AIMD, emulating Reno (§2.2; genericCC `update_delta`):
//!   +1 per srtt, halved on a loss (at most once per srtt), and never below the default 1/δ
//!   (genericCC `delta = min(delta, default_delta)`). A larger 1/δ means more packets in the
//!   queue and a larger share against the buffer filler.
//!
//! The encoder target is `cwnd / srtt` (Vidaptive §3.2's CC-Rate), the rate the window lets
//! through. The srtt used there is the smoothed time a packet holds its place in the window,
//! `feedback arrival − send`, one byte-weighted mean per report (RFC 6298 EWMA; RFC 9002
//! §6.2.2's 333 ms before the first sample): with per-packet ACKs it is the ordinary srtt; with
//! batched video feedback it also counts the wait for the report, which the window pays as
//! well. Dividing by the RTT alone would put the target above what the window carries by that
//! wait (3 ms, 7 %, with 10 ms reports on a 45 ms RTT), and the encoder's excess would pile up
//! in the sender's queue, which Copa does not see.
//!
//! Window growth needs the window to be used: an increase applies only if the largest flight of
//! the current or previous window reached half of cwnd (the rule of RFC 7661 and Linux
//! `tcp_is_cwnd_limited`), so an application-limited video flow or an idle period does not
//! inflate cwnd without bound. Copa itself has no such rule (mvfst leaves `setAppLimited`
//! unsupported); for a backlogged flow it never binds.

use super::params::controller_config;
use super::reno::tcp_param_doc;
use super::reno::{check_window, default_initial_cwnd, default_mss, Rtt};
use super::rtt_window::{mean_held, rtt_samples, RttSample, WindowedExtreme};
use super::{
    boxed, build_fn, parse_config, Controller, ControllerContext, ControllerError, ControllerInfo,
};
use super::{Decision, FeedbackPolicy, Params};
use crate::packet::{FeedbackReport, SentPacket};
use crate::units::{Bytes, Duration, Rate, Time};
use serde::{Deserialize, Serialize};

/// RTTmin window (paper §2.1; genericCC `min_rtt.update_max_time(10e3)` ms; mvfst
/// `kMinRTTWindowLength`).
const MIN_RTT_WINDOW: Duration = Duration(10_000_000_000);
/// Smallest window, packets (genericCC `max(2.0, _the_window)`, mvfst `kMinCwndInMss`).
const MIN_CWND_PACKETS: f64 = 2.0;
/// Windows in the same direction before v starts doubling (mvfst `velocityDirectionThreshold`).
const VELOCITY_THRESHOLD: u32 = 3;
/// Pacing rate as a multiple of `cwnd / RTTstanding` (paper §2.1).
const PACING_GAIN: f64 = 2.0;
/// "Nearly empty": queueing delay at most this fraction of `RTTmax − RTTmin` (genericCC
/// `is_copa`).
const EMPTY_FRACTION: f64 = 0.1;
/// RTTmax window, in srtt (genericCC `is_copa_max` window `srtt * 4`).
const RTT_MAX_SRTTS: u64 = 4;
/// Competitive mode when the queue was not nearly empty for this many srtt (paper §2.2).
const EMPTY_EVERY_SRTTS: u64 = 5;
/// genericCC `ReduceOnLoss`: at least 2 RTTs and more than 20 packets per interval, a loss rate
/// above 30 % multiplies the window by 0.7.
const HEAVY_LOSS_RTTS: u64 = 2;
const HEAVY_LOSS_MIN_PACKETS: u64 = 20;
const HEAVY_LOSS_RATE: f64 = 0.3;
const HEAVY_LOSS_FACTOR: f64 = 0.7;

/// How δ is chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum CopaMode {
    /// δ is `delta` throughout (the paper's default mode only; what Vidaptive runs).
    #[default]
    Constant,
    /// Default mode with δ = `delta`, switching to competitive mode (AIMD on 1/δ) when the queue
    /// stops draining (§2.2).
    Auto,
}

controller_config! {
    /// Copa's parameters.
    pub struct CopaConfig {
        /// delta: target rate 1/(delta*queueing delay), about 1/delta packets queued per flow
        ///
        /// δ: each flow aims to keep about 1/δ packets queued; 0.5 as in the paper (§2.1).
        pub delta: f64 = 0.5,
        /// "constant" delta, or "auto": competitive mode (AIMD on 1/delta) when the queue never
        /// drains
        ///
        /// `auto` switches between the default and the competitive mode (§2.2).
        pub mode: CopaMode = CopaMode::Constant,
        #[doc = tcp_param_doc!(mss)]
        ///
        /// Also the size of Copa's "packet" unit (1/δ packets, steps of 1/(δ·cwnd)).
        pub mss: Bytes = default_mss(),
        #[doc = tcp_param_doc!(initial_cwnd)]
        ///
        /// mvfst `kInitCwndInMss`.
        pub initial_cwnd: u32 = default_initial_cwnd(),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Direction {
    None = 0,
    Up = 1,
    Down = -1,
}

/// What the last acknowledgement computed (for `state()` and tests).
#[derive(Debug, Clone, Copy, Default)]
struct LastUpdate {
    /// Target rate λt in bytes per second (infinite when dq = 0).
    target: f64,
    /// Current rate cwnd / RTTstanding in bytes per second.
    current: f64,
    dq: Duration,
}

pub struct Copa {
    cfg: CopaConfig,
    mss: f64,
    /// Bytes.
    cwnd: f64,
    slow_start: bool,
    rtt: Rtt,
    /// Smoothed `feedback − send` (the time a packet holds its place in the window).
    held: Rtt,
    latest_rtt: Option<Duration>,
    last_sample_at: Time,
    min_rtt: WindowedExtreme,
    standing: WindowedExtreme,
    rtt_max: WindowedExtreme,
    last_empty: Option<Time>,
    competitive: bool,
    /// Current 1/δ.
    inv_delta: f64,
    last_delta_step: Time,
    last_loss_cut: Option<Time>,
    velocity: f64,
    direction: Direction,
    same_direction: u32,
    window_start_cwnd: f64,
    window_end_seq: u64,
    next_seq: u64,
    max_in_flight: u64,
    prev_max_in_flight: u64,
    loss_interval_start: Time,
    loss_interval_packets: u64,
    loss_interval_lost: u64,
    last: LastUpdate,
    samples: Vec<RttSample>,
}

impl Copa {
    pub fn new(cfg: CopaConfig, now: Time) -> Result<Copa, String> {
        check_window(cfg.mss, cfg.initial_cwnd)?;
        if !(cfg.delta > 0.0 && cfg.delta <= 1.0) {
            return Err(format!("delta must be in (0, 1], got {}", cfg.delta));
        }
        let mss = cfg.mss.0 as f64;
        let cwnd = mss * cfg.initial_cwnd as f64;
        Ok(Copa {
            mss,
            cwnd,
            slow_start: true,
            rtt: Rtt::default(),
            held: Rtt::default(),
            latest_rtt: None,
            last_sample_at: now,
            min_rtt: WindowedExtreme::min(),
            standing: WindowedExtreme::min(),
            rtt_max: WindowedExtreme::max(),
            last_empty: None,
            competitive: false,
            inv_delta: 1.0 / cfg.delta,
            last_delta_step: now,
            last_loss_cut: None,
            velocity: 1.0,
            direction: Direction::None,
            same_direction: 0,
            window_start_cwnd: cwnd,
            window_end_seq: 0,
            next_seq: 0,
            max_in_flight: 0,
            prev_max_in_flight: 0,
            loss_interval_start: now,
            loss_interval_packets: 0,
            loss_interval_lost: 0,
            last: LastUpdate {
                target: f64::INFINITY,
                current: 0.0,
                dq: Duration::ZERO,
            },
            samples: Vec::new(),
            cfg,
        })
    }

    fn delta(&self) -> f64 {
        1.0 / self.inv_delta
    }

    fn min_cwnd(&self) -> f64 {
        MIN_CWND_PACKETS * self.mss
    }

    fn srtt(&self) -> Duration {
        self.rtt.srtt_or_initial()
    }

    /// The velocity actually applied: at most δ·cwnd packets per step (genericCC).
    fn capped_velocity(&self) -> f64 {
        self.velocity
            .min((self.delta() * self.cwnd / self.mss).max(1.0))
    }

    fn on_sample(&mut self, s: &RttSample) {
        let at = s.at.max(self.last_sample_at);
        self.last_sample_at = at;
        self.rtt.on_sample(s.rtt);
        self.latest_rtt = Some(s.rtt);
        let srtt = self.srtt();
        self.min_rtt.update(at, s.rtt, MIN_RTT_WINDOW);
        self.standing.update(at, s.rtt, Duration(srtt.0 / 2));
        if self.cfg.mode == CopaMode::Auto {
            self.rtt_max
                .update(at, s.rtt, Duration(srtt.0.saturating_mul(RTT_MAX_SRTTS)));
            if let (Some(min), Some(max)) = (self.min_rtt.get(), self.rtt_max.get()) {
                let dq = (s.rtt.0.saturating_sub(min.0)) as f64;
                if dq <= EMPTY_FRACTION * max.0.saturating_sub(min.0) as f64 {
                    self.last_empty = Some(at);
                }
            }
        }
    }

    /// §2.2 mode switch and the AIMD of 1/δ in competitive mode.
    fn update_mode(&mut self, now: Time, lost_packets: usize) {
        if self.cfg.mode != CopaMode::Auto {
            return;
        }
        let srtt = self.srtt();
        let Some(last_empty) = self.last_empty else {
            return;
        };
        let competitive = now - last_empty > Duration(srtt.0.saturating_mul(EMPTY_EVERY_SRTTS));
        if competitive != self.competitive {
            self.competitive = competitive;
            self.inv_delta = 1.0 / self.cfg.delta;
            self.last_delta_step = now;
            self.last_loss_cut = None;
        }
        if !self.competitive {
            return;
        }
        let floor = 1.0 / self.cfg.delta;
        if lost_packets > 0 && self.last_loss_cut.is_none_or(|t| now - t >= srtt) {
            self.inv_delta = (self.inv_delta / 2.0).max(floor);
            self.last_loss_cut = Some(now);
            self.last_delta_step = now;
        } else if now - self.last_delta_step >= srtt {
            self.inv_delta += 1.0;
            self.last_delta_step = now;
        }
    }

    /// genericCC `ReduceOnLoss`.
    fn heavy_loss(&mut self, now: Time, acked_packets: u64, lost_packets: u64) -> bool {
        self.loss_interval_packets += acked_packets + lost_packets;
        self.loss_interval_lost += lost_packets;
        let rtt = self.latest_rtt.unwrap_or(self.srtt());
        let long_enough = now - self.loss_interval_start
            > Duration(rtt.0.saturating_mul(HEAVY_LOSS_RTTS))
            && self.loss_interval_packets > HEAVY_LOSS_MIN_PACKETS;
        if !long_enough {
            return false;
        }
        let rate = self.loss_interval_lost as f64 / self.loss_interval_packets as f64;
        self.loss_interval_start = now;
        self.loss_interval_packets = 0;
        self.loss_interval_lost = 0;
        rate > HEAVY_LOSS_RATE
    }

    fn start_window(&mut self) {
        self.window_start_cwnd = self.cwnd;
        self.window_end_seq = self.next_seq;
        self.prev_max_in_flight = self.max_in_flight;
        self.max_in_flight = 0;
    }

    /// Once per window: direction of the window and the velocity rule.
    fn end_of_window(&mut self) {
        let dir = if self.cwnd > self.window_start_cwnd {
            Direction::Up
        } else {
            Direction::Down
        };
        if dir == self.direction {
            self.same_direction += 1;
            if self.same_direction >= VELOCITY_THRESHOLD {
                self.velocity =
                    (2.0 * self.velocity).min((self.delta() * self.cwnd / self.mss).max(1.0));
            }
        } else {
            self.direction = dir;
            self.velocity = 1.0;
            self.same_direction = 0;
        }
    }

    /// mvfst `changeDirection`: a step against the direction v was built for resets v at once.
    fn check_step_direction(&mut self, step: Direction) {
        if self.direction != step && self.velocity > 1.0 {
            self.direction = step;
            self.velocity = 1.0;
            self.same_direction = 0;
            self.start_window();
        }
    }

    fn cwnd_limited(&self) -> bool {
        2 * self.max_in_flight.max(self.prev_max_in_flight) >= self.cwnd as u64
    }
}

impl Controller for Copa {
    fn on_packet_sent(&mut self, _now: Time, pkt: &SentPacket) {
        self.next_seq = self.next_seq.max(pkt.seq.saturating_add(1));
        self.max_in_flight = self.max_in_flight.max(pkt.in_flight);
    }

    fn on_feedback(&mut self, now: Time, report: &FeedbackReport) {
        let mut samples = std::mem::take(&mut self.samples);
        rtt_samples(report, &mut samples);
        if let Some(h) = mean_held(&samples) {
            self.held.on_sample(h);
        }
        let mut acked = 0u64;
        let mut newest_seq = None;
        for s in &samples {
            self.on_sample(s);
            acked += s.size as u64;
            newest_seq = Some(newest_seq.map_or(s.seq, |q: u64| q.max(s.seq)));
        }
        let acked_packets = samples.len() as u64;
        self.samples = samples;
        let lost = report.lost_count();
        self.update_mode(now, lost);
        if self.heavy_loss(now, acked_packets, lost as u64) {
            self.cwnd = (self.cwnd * HEAVY_LOSS_FACTOR).max(self.min_cwnd());
        }
        let (Some(min), Some(standing)) = (self.min_rtt.get(), self.standing.get()) else {
            return;
        };
        if acked == 0 {
            return;
        }
        let delta = self.delta();
        let dq = Duration(standing.0.saturating_sub(min.0));
        let target = if dq.0 == 0 {
            f64::INFINITY
        } else {
            self.mss / (delta * dq.as_secs_f64())
        };
        let current = self.cwnd / standing.as_secs_f64().max(1e-9);
        let increase = current <= target;
        self.last = LastUpdate {
            target,
            current,
            dq,
        };
        let window_over = newest_seq.is_some_and(|s| s >= self.window_end_seq);
        if self.slow_start {
            if increase {
                if window_over {
                    self.start_window();
                }
                if self.cwnd_limited() {
                    self.cwnd += acked as f64;
                }
                return;
            }
            // The first exceedance ends slow start; velocity starts afresh.
            self.slow_start = false;
            self.direction = Direction::Down;
            self.velocity = 1.0;
            self.same_direction = 0;
            self.start_window();
        } else if window_over {
            self.end_of_window();
            self.start_window();
        }
        let step_dir = if increase {
            Direction::Up
        } else {
            Direction::Down
        };
        self.check_step_direction(step_dir);
        let step = self.capped_velocity() * acked as f64 * self.mss / (delta * self.cwnd);
        if increase {
            if self.cwnd_limited() {
                self.cwnd += step;
            }
        } else {
            self.cwnd = (self.cwnd - step).max(self.min_cwnd());
        }
    }

    fn on_rto(&mut self, _now: Time, _in_flight: u64) {
        self.cwnd = self.min_cwnd();
        self.velocity = 1.0;
        self.same_direction = 0;
        self.direction = Direction::None;
        self.start_window();
    }

    fn decision(&self) -> Decision {
        let target = Rate(self.cwnd * 8.0 / self.held.srtt_or_initial().as_secs_f64());
        let pacing = self
            .standing
            .get()
            .map(|s| Rate(PACING_GAIN * self.cwnd * 8.0 / s.as_secs_f64().max(1e-9)));
        let mut d = Decision::rate_only(target, pacing);
        d.cwnd = Some(self.cwnd.round() as u64);
        d
    }

    fn state(&self, out: &mut Vec<(&'static str, f64)>) {
        let ms = |d: Option<Duration>| d.map_or(f64::NAN, |d| d.as_millis_f64());
        out.push(("cwnd_packets", self.cwnd / self.mss));
        out.push(("srtt_ms", ms(self.rtt.srtt)));
        out.push(("held_rtt_ms", ms(self.held.srtt)));
        out.push(("min_rtt_ms", ms(self.min_rtt.get())));
        out.push(("standing_rtt_ms", ms(self.standing.get())));
        out.push(("queuing_delay_ms", self.last.dq.as_millis_f64()));
        out.push(("target_rate_bps", self.last.target * 8.0));
        out.push(("current_rate_bps", self.last.current * 8.0));
        out.push(("velocity", self.velocity));
        out.push(("direction", self.direction as i8 as f64));
        out.push(("slow_start", self.slow_start as u8 as f64));
        out.push(("mode", self.competitive as u8 as f64));
        out.push(("delta", self.delta()));
    }
}

/// Feedback for video use: a report every 10 ms (a quarter of a 40 ms RTT, so the window is
/// clocked several times per round trip) and at the end of every frame. The TCP endpoint
/// acknowledges every packet regardless.
pub(crate) const WINDOW_FEEDBACK: FeedbackPolicy = FeedbackPolicy {
    interval: Some(Duration(10_000_000)),
    per_frame: true,
    frame_acks: false,
    rate_reports: None,
};

pub fn info() -> ControllerInfo {
    ControllerInfo {
        name: "copa".into(),
        summary:
            "Copa (NSDI 2018): window toward 1/(delta*dq) with velocity; mode=auto competes with \
             TCP."
                .into(),
        params: CopaConfig::param_docs(),
        feedback: WINDOW_FEEDBACK,
        media: Default::default(),
        build: build_fn(build),
    }
}

fn build(params: &Params, ctx: &ControllerContext) -> Result<Box<dyn Controller>, ControllerError> {
    let config: CopaConfig = parse_config("copa", params)?;
    boxed("copa", Copa::new(config, ctx.now))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::delivery_rate::testpath::Path;
    use crate::packet::{PacketKind, PacketResult};

    const MSS: f64 = 1500.0;

    fn copa(params: &str) -> Copa {
        let p: Params = toml::from_str(params).unwrap();
        Copa::new(parse_config("copa", &p).unwrap(), Time::ZERO).unwrap()
    }

    use crate::cc::test_support::signal as get;

    /// Sends packets one at a time and acknowledges each with a chosen RTT, in its own report;
    /// the flight is reported as large, so the window always counts as used.
    struct Driver {
        c: Copa,
        seq: u64,
    }

    impl Driver {
        fn new(params: &str) -> Driver {
            Driver {
                c: copa(params),
                seq: 0,
            }
        }
        /// Send one packet at `t_ms` and acknowledge it `rtt_ms` later (`None`: it is lost and
        /// reported with the next acknowledgement instead).
        fn round(&mut self, t_ms: f64, rtt_ms: f64) {
            let sent = self.send(t_ms);
            self.ack(&[sent], t_ms + rtt_ms, None);
        }
        fn send(&mut self, t_ms: f64) -> SentPacket {
            let p = SentPacket {
                seq: self.seq,
                size: 1500,
                send_time: Time::from_secs_f64(t_ms / 1e3),
                frame: None,
                index_in_frame: 0,
                packets_in_frame: 0,
                kind: PacketKind::Media,
                in_flight: 10_000_000,
            };
            self.seq += 1;
            self.c.on_packet_sent(p.send_time, &p);
            p
        }
        fn ack(&mut self, pkts: &[SentPacket], at_ms: f64, lost: Option<SentPacket>) {
            let now = Time::from_secs_f64(at_ms / 1e3);
            let mut packets: Vec<PacketResult> = lost
                .into_iter()
                .map(|p| PacketResult {
                    sent: p,
                    receive_time: None,
                    ecn: crate::packet::Ecn::NotEct,
                })
                .collect();
            packets.extend(pkts.iter().map(|p| PacketResult {
                sent: *p,
                receive_time: Some(now),
                ecn: crate::packet::Ecn::NotEct,
            }));
            let r = FeedbackReport {
                feedback_time: now,
                packets,
                in_flight: 0,
                recovery: None,
            };
            self.c.on_feedback(now, &r);
        }
        fn get(&self, key: &str) -> f64 {
            get(&self.c, key)
        }
    }

    #[test]
    fn the_target_rate_is_one_over_delta_times_the_queueing_delay() {
        let mut d = Driver::new("");
        d.round(0.0, 40.0);
        // dq = 0: the target is infinite and slow start adds the acknowledged bytes.
        assert_eq!(d.get("target_rate_bps"), f64::INFINITY);
        assert_eq!(d.c.cwnd, 16_500.0);
        // 100 ms later a 44 ms sample: the 40 ms one has left the srtt/2 window, so
        // RTTstanding = 44 ms, RTTmin = 40 ms, dq = 4 ms and λt = 1500 B / (0.5 × 4 ms).
        d.round(100.0, 44.0);
        assert_eq!(d.get("standing_rtt_ms"), 44.0);
        assert_eq!(d.get("min_rtt_ms"), 40.0);
        assert!((d.get("target_rate_bps") - 6e6).abs() < 1e-3);
        // cwnd / RTTstanding = 16 500 B / 44 ms = 3 Mbit/s ≤ 6 Mbit/s: still growing.
        assert!((d.get("current_rate_bps") - 3e6).abs() < 1e-3);
        assert_eq!(d.c.cwnd, 18_000.0);
        // δ = 0.1 targets five times the rate for the same delay.
        let mut d = Driver::new("delta = 0.1");
        d.round(0.0, 40.0);
        d.round(100.0, 44.0);
        assert!((d.get("target_rate_bps") - 30e6).abs() < 1e-3);
        // 60 ms (dq = 20 ms): λt = 1500 B / (0.5 × 20 ms) = 1.2 Mbit/s < 18 000 B / 60 ms =
        // 2.4 Mbit/s. The first exceedance ends slow start and steps down by
        // v / (δ·cwnd) packets = 1500² / (0.5 × 18 000) = 250 bytes.
        let mut d = Driver::new("");
        d.round(0.0, 40.0);
        d.round(100.0, 44.0);
        d.round(200.0, 60.0);
        assert!((d.get("target_rate_bps") - 1.2e6).abs() < 1e-3);
        assert_eq!(d.get("slow_start"), 0.0);
        assert_eq!(d.c.cwnd, 17_750.0);
        // A report acknowledging two packets applies two steps at once (mvfst).
        let (a, b) = (d.send(300.0), d.send(300.0));
        d.ack(&[a, b], 360.0, None);
        let expect = 17_750.0 - 2.0 * MSS * MSS / (0.5 * 17_750.0);
        assert!((d.c.cwnd - expect).abs() < 1e-9, "{} vs {expect}", d.c.cwnd);
    }

    #[test]
    fn velocity_doubles_after_three_windows_in_one_direction_and_resets_on_a_turn() {
        // A 100-packet window keeps the velocity cap (δ·cwnd = 50 packets) out of the way.
        // One packet per window: every acknowledgement ends a window.
        let mut d = Driver::new("initial_cwnd = 100");
        d.round(0.0, 40.0);
        d.round(100.0, 60.0); // exceedance: slow start ends, direction down, v = 1
        assert_eq!(d.get("slow_start"), 0.0);
        let mut seen = vec![];
        let mut t = 200.0;
        for _ in 0..8 {
            // RTT = RTTmin: dq = 0, every step goes up.
            let before = d.c.cwnd;
            d.round(t, 40.0);
            t += 100.0;
            let v = d.get("velocity");
            let step = v * MSS * MSS / (0.5 * before);
            assert!(
                (d.c.cwnd - before - step).abs() < 1e-9,
                "one step of v/(δ·cwnd)"
            );
            seen.push((v, d.get("direction")));
        }
        // The first window still ended below its start (the exit's decrease): down, count 1.
        // Then up (reset), and v doubles from the fourth window that keeps going up.
        assert_eq!(
            seen,
            vec![
                (1.0, -1.0),
                (1.0, 1.0),
                (1.0, 1.0),
                (1.0, 1.0),
                (2.0, 1.0),
                (4.0, 1.0),
                (8.0, 1.0),
                (16.0, 1.0)
            ]
        );
        // One step down resets v to 1 at once (mvfst `changeDirection`), not a window later.
        let before = d.c.cwnd;
        d.round(t, 70.0);
        assert_eq!((d.get("velocity"), d.get("direction")), (1.0, -1.0));
        assert!((before - d.c.cwnd - MSS * MSS / (0.5 * before)).abs() < 1e-9);
    }

    #[test]
    fn velocity_is_capped_at_delta_times_cwnd() {
        // About 11 packets, δ = 0.5: v may not exceed δ·cwnd ≈ 5.5 packets, so a window moves
        // cwnd by at most cwnd.
        let mut d = Driver::new("");
        d.round(0.0, 40.0);
        d.round(100.0, 60.0);
        let mut t = 200.0;
        let mut v = vec![];
        let mut before = 0.0;
        for _ in 0..7 {
            before = d.c.cwnd;
            d.round(t, 40.0);
            t += 100.0;
            v.push(d.get("velocity"));
        }
        assert_eq!(v[..6], [1.0, 1.0, 1.0, 1.0, 2.0, 4.0]);
        let cap = 0.5 * before / MSS;
        assert!(cap > 4.0 && cap < 8.0, "{cap}");
        assert_eq!(v[6], cap, "8 is capped at δ·cwnd");
    }

    #[test]
    fn standing_rtt_is_the_minimum_of_half_an_srtt_and_min_rtt_of_ten_seconds() {
        let mut d = Driver::new("");
        d.round(0.0, 30.0);
        // Samples at 150, 153, 162 and 170 ms: 50, 48, 52, 55 ms. srtt goes 30 → 32.5 →
        // 34.44 → 36.63 → 38.93 ms, so RTTstanding looks back 19.46 ms: to 150.5 ms.
        for (i, (t, rtt)) in [(100.0, 50.0), (105.0, 48.0), (110.0, 52.0), (115.0, 55.0)]
            .iter()
            .enumerate()
        {
            d.round(*t, *rtt);
            assert_eq!(d.get("standing_rtt_ms"), [50.0, 48.0, 48.0, 48.0][i]);
        }
        assert!((d.get("srtt_ms") - 38.9287).abs() < 1e-3);
        // A 60 ms sample at 190 ms (srtt 41.56, window 20.78 ms back to 169.2 ms): 55 ms,
        // taken at 170 ms, is the oldest left. At 195 ms (window to 173.1 ms) it has gone.
        d.round(130.0, 60.0);
        assert_eq!(d.get("standing_rtt_ms"), 55.0);
        d.round(135.0, 60.0);
        assert_eq!(d.get("standing_rtt_ms"), 60.0);
        assert_eq!(d.get("min_rtt_ms"), 30.0);
        // RTTmin forgets the 30 ms sample (taken at 30 ms) once it is more than 10 s old; the
        // 48 ms one (153 ms) is then the smallest of the last 10 s, until 10 153 ms.
        let mut t = 200.0;
        while t < 9_950.0 {
            d.round(t, 50.0);
            t += 100.0;
        }
        assert_eq!(d.get("min_rtt_ms"), 30.0, "a sample at 9 950 ms");
        d.round(10_000.0, 50.0);
        assert_eq!(d.get("min_rtt_ms"), 48.0, "a sample at 10 050 ms");
        d.round(10_110.0, 50.0);
        assert_eq!(d.get("min_rtt_ms"), 50.0, "a sample at 10 160 ms");
    }

    #[test]
    fn slow_start_nearly_doubles_the_window_every_round_trip() {
        // No queue (a pure 100 ms delay): dq = 0, λt is infinite and every acknowledgement adds
        // its bytes (exactly: see the first test). The window would double per round trip; the
        // pacer (2·cwnd/RTTstanding) must send twice as fast as the acknowledgements return to
        // keep up and trails a little while cwnd grows, so a round multiplies it by 1.75–2.
        let mut p = Path::new(Duration::from_millis(100), None);
        let mut c = copa("");
        let mut at_round = vec![10.0];
        for r in 1..=6u64 {
            p.run(&mut c, Time::from_millis(100 * r + 50), |_, _, _| {});
            at_round.push(c.cwnd / MSS);
        }
        assert_eq!(
            at_round[1..3],
            [20.0, 40.0],
            "the first two rounds double exactly"
        );
        for w in at_round.windows(2) {
            let g = w[1] / w[0];
            assert!((1.75..=2.0).contains(&g), "{at_round:?}");
        }
        assert_eq!(get(&c, "slow_start"), 1.0, "no queue, no exceedance");
    }

    #[test]
    fn auto_mode_turns_competitive_when_the_queue_never_drains_and_runs_aimd_on_one_over_delta() {
        let mut d = Driver::new("mode = \"auto\"");
        d.round(0.0, 40.0);
        // Then a queue that never drains: every sample 100 ms (dq = 60 ms, far above 10 % of
        // RTTmax − RTTmin = 6 ms), one every 10 ms.
        let mut t = 10.0;
        let mut switched = None;
        while t < 3_000.0 {
            d.round(t, 100.0);
            if switched.is_none() && d.get("mode") == 1.0 {
                switched = Some(t + 100.0);
            }
            if t + 100.0 < 300.0 {
                assert_eq!(d.get("mode"), 0.0, "not before 5 srtt");
            }
            t += 10.0;
        }
        let switched = switched.expect("competitive mode");
        // The last nearly-empty sample is the first one, at 40 ms. After n samples of 100 ms
        // srtt = 100 − 60·(7/8)^n ms; the n-th is taken at 100 + 10n ms, and
        // 60 + 10n > 5·srtt first holds for n = 44: at 540 ms.
        assert_eq!(switched, 540.0);
        // 1/δ grows by one per srtt (just under 100 ms here): at 640, 740, ... 3 040 ms, the
        // last acknowledgement being at 3 090 ms.
        let inv = 1.0 / d.get("delta");
        assert_eq!(inv, 2.0 + 25.0);
        // A loss halves 1/δ; a second one within an srtt does not.
        let lost = d.send(t);
        let ok = d.send(t);
        d.ack(&[ok], t + 100.0, Some(lost));
        let halved = 1.0 / d.get("delta");
        assert!((halved - inv / 2.0).abs() < 1e-9, "{halved} vs {inv}");
        let lost = d.send(t + 10.0);
        let ok = d.send(t + 10.0);
        d.ack(&[ok], t + 110.0, Some(lost));
        assert!((1.0 / d.get("delta") - halved).abs() < 1e-9);
        // A nearly empty sample (RTT = RTTmin) returns to default mode and δ = 0.5.
        d.round(t + 80.0, 40.0);
        assert_eq!((d.get("mode"), d.get("delta")), (0.0, 0.5));
    }

    #[test]
    fn one_over_delta_never_drops_below_its_default() {
        let mut d = Driver::new("mode = \"auto\"\ndelta = 0.25");
        d.round(0.0, 40.0);
        let mut t = 10.0;
        while t < 1_500.0 {
            d.round(t, 100.0);
            t += 10.0;
        }
        assert_eq!(d.get("mode"), 1.0);
        for k in 0..10 {
            let tt = t + 200.0 * k as f64;
            let lost = d.send(tt);
            let ok = d.send(tt);
            d.ack(&[ok], tt + 100.0, Some(lost));
        }
        assert_eq!(d.get("delta"), 0.25);
    }

    #[test]
    fn constant_mode_keeps_delta_whatever_the_losses() {
        let mut d = Driver::new("");
        d.round(0.0, 40.0);
        let mut t = 10.0;
        while t < 2_000.0 {
            let lost = d.send(t);
            let ok = d.send(t);
            d.ack(&[ok], t + 100.0, Some(lost));
            t += 10.0;
        }
        assert_eq!((d.get("mode"), d.get("delta")), (0.0, 0.5));
    }

    #[test]
    fn heavy_loss_cuts_the_window_by_thirty_percent() {
        // genericCC ReduceOnLoss: over ≥ 2 RTTs and > 20 packets, > 30 % lost → × 0.7.
        let mut d = Driver::new("initial_cwnd = 100");
        d.round(0.0, 40.0);
        d.round(100.0, 60.0); // out of slow start
        let before = d.c.cwnd;
        let mut t = 200.0;
        let mut cut = None;
        for _ in 0..30 {
            // Two of every five packets lost, all at RTT = RTTmin (the steps go up).
            let pkts: Vec<_> = (0..5).map(|_| d.send(t)).collect();
            let w = d.c.cwnd;
            d.ack(&pkts[2..3], t + 40.0, Some(pkts[0]));
            d.ack(&pkts[3..5], t + 40.0, Some(pkts[1]));
            if d.c.cwnd < w {
                cut = Some((w, d.c.cwnd));
                break;
            }
            t += 20.0;
        }
        let (w, after) = cut.expect("a cut");
        assert!(w > before);
        // The cut is × 0.7 of the window before that report's own step up.
        assert!(
            after < 0.7 * w + 2.0 * MSS && after > 0.7 * w - 1.0,
            "{w} → {after}"
        );
    }

    #[test]
    fn a_timeout_drops_to_two_packets() {
        let mut d = Driver::new("");
        d.round(0.0, 40.0);
        d.c.on_rto(Time::from_millis(1000), 0);
        assert_eq!(d.c.decision().cwnd, Some(3000));
    }

    #[test]
    fn paces_at_twice_cwnd_over_standing_rtt_and_targets_cwnd_over_srtt() {
        let mut d = Driver::new("");
        assert_eq!(
            d.c.decision().pacing_rate,
            None,
            "unpaced before an RTT sample"
        );
        d.round(0.0, 40.0);
        let dec = d.c.decision();
        // cwnd 16 500 B, RTTstanding = srtt = 40 ms.
        assert!((dec.pacing_rate.unwrap().bps() - 2.0 * 16_500.0 * 8.0 / 0.04).abs() < 1e-3);
        assert!((dec.target_bitrate.bps() - 16_500.0 * 8.0 / 0.04).abs() < 1e-3);
        assert_eq!(dec.cwnd, Some(16_500));
    }

    #[test]
    fn parameters_are_checked() {
        for bad in [
            "delta = 0",
            "delta = 1.5",
            "mode = \"fast\"",
            "mss = \"10B\"",
        ] {
            let p: Params = toml::from_str(bad).unwrap();
            assert!(crate::cc::create("copa", &p, &ctx()).is_err(), "{bad}");
        }
    }

    use crate::cc::test_support::context as ctx;
}
