//! The receiver side of the `paper` profile (GCC-AQM §2.2, Figs. 1–2): arrival-time filter,
//! over-use detector and remote rate controller, producing the REMB rate A_r.
//!
//! Grouping (`grouping`): by default each video frame is a group, as the seed says; with
//! `grouping = "burst"` the groups are libwebrtc's (packets sent within 5 ms of a group's first,
//! bursts merged; `inter_arrival.rs`), as the receive-side estimator of the paper's Chrome and
//! of today's libwebrtc (`remote_bitrate_estimator_abs_send_time.cc`) forms them.
//!
//! It consumes per-packet arrivals (receive time on the receiver's clock, send time, size, and
//! the frame the packet belongs to with its end-of-frame mark, as the RTP timestamp and marker
//! bit tell a real receiver). Each time a video frame is complete (its marked last packet
//! arrives, or a packet of a later frame does), the frame is one group i: send time T_i and
//! receive time t_i of its last packet, size L_i. The Kalman filter (`kalman.rs`) turns
//! `d_m = (t_i − t_{i−1}) − (T_i − T_{i−1})` into m(t_i); the detector (`overuse.rs`, paper
//! constants, m scaled by min(n, 60) by default) compares m with γ; the signal drives the
//! finite-state machine of Fig. 2:
//!
//! | signal \ state | Hold     | Increase | Decrease |
//! |----------------|----------|----------|----------|
//! | over-use       | Decrease | Decrease | Decrease |
//! | normal         | Increase | Increase | Hold     |
//! | under-use      | Hold     | Hold     | Hold     |
//!
//! - Increase: `A_r ← η^min(Δt, 1 s) · A_r` with Δt the time since the last change, then
//!   `A_r ≤ 1.5 · R` (the seed: "A_r cannot exceed 1.5 R(t_i)"); the cap stops increases but
//!   never lowers A_r (a falling R with a normal detector leaves A_r alone, as in libwebrtc);
//! - Decrease: `A_r ← min(A_r, α · R)`, then Hold ("stay on hold until the pipes are cleared",
//!   the era's `remote_rate_control` / `aimd_rate_control`); while over-use persists a further
//!   decrease waits one RTT (clamped to [10, 200] ms) unless R < A_r / 2 (the same code's
//!   `TimeToReduceFurther`);
//! - Hold: `A_r` unchanged.
//!
//! R(t_i) is the receiving rate over the last 500 ms (seed). The seed gives η ∈ [1.005, 1.3] and
//! α ∈ [0.8, 0.95] without choosing: η = 1.08 per second (inside the range; the value of the
//! later AIMD code and draft-ietf-rmcat-gcc-02) and α = 0.85 (draft-02's recommendation; the
//! `backoff` parameter). A_r starts as R once 500 ms of data have arrived (no REMB before).
//! A REMB carrying A_r is sent every 1 s, or at once when A_r falls below 97 % of the last value
//! sent (`vie_remb.cc` / `remote_bitrate_estimator` of the paper's era).

use super::inter_arrival::InterArrival;
use super::kalman::Kalman;
use super::overuse::{DetectorConfig, OveruseDetector, Usage};
use super::Grouping;
use crate::units::Time;
use std::collections::VecDeque;

/// Window of the receiving rate R, ms.
pub const RATE_WINDOW_MS: f64 = 500.0;
/// REMB period, ms.
pub const REMB_INTERVAL_MS: f64 = 1000.0;
/// A REMB is sent at once when A_r falls below this fraction of the last one sent.
pub const REMB_DECREASE_FRACTION: f64 = 0.97;
/// Largest A_r / R.
pub const MAX_RATE_OVER_RECEIVED: f64 = 1.5;

/// One packet as the receiver sees it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Arrival {
    /// Receiver clock.
    pub receive_time: Time,
    /// Sender clock (absolute send time).
    pub send_time: Time,
    pub size: u32,
    /// Frame (RTP timestamp); packets without one (padding) are not grouped.
    pub frame: Option<u64>,
    /// The frame's last packet (RTP marker bit).
    pub end_of_frame: bool,
}

/// State of the remote rate controller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RateState {
    Hold,
    Increase,
    Decrease,
}

impl RateState {
    /// 0 hold, 1 increase, 2 decrease (for logs).
    pub fn as_f64(self) -> f64 {
        match self {
            RateState::Hold => 0.0,
            RateState::Increase => 1.0,
            RateState::Decrease => 2.0,
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct FrameGroup {
    frame: u64,
    send_ms: f64,
    receive_ms: f64,
    size: u64,
    closed: bool,
}

#[derive(Debug, Clone)]
pub struct RembReceiver {
    eta: f64,
    alpha: f64,
    min_bps: f64,
    max_bps: f64,
    current: Option<FrameGroup>,
    prev: Option<FrameGroup>,
    kalman: Kalman,
    detector: OveruseDetector,
    state: RateState,
    /// A_r, bps (`None` until initialised).
    rate: Option<f64>,
    last_change_ms: Option<f64>,
    rtt_ms: f64,
    /// (receive ms, bytes) of the last 500 ms.
    window: VecDeque<(f64, u32)>,
    window_bytes: u64,
    first_arrival_ms: Option<f64>,
    last_remb: Option<(f64, f64)>,
    grouping: Grouping,
    /// The groups of [`Grouping::Burst`].
    bursts: InterArrival,
}

impl RembReceiver {
    /// `eta`: increase factor per second; `alpha`: decrease factor on R; `detector`: the
    /// over-use detector's constants.
    pub fn new(eta: f64, alpha: f64, min_bps: f64, max_bps: f64, detector: DetectorConfig) -> Self {
        RembReceiver {
            eta,
            alpha,
            min_bps,
            max_bps,
            current: None,
            prev: None,
            kalman: Kalman::default(),
            detector: OveruseDetector::new(detector),
            state: RateState::Hold,
            rate: None,
            last_change_ms: None,
            rtt_ms: 200.0,
            window: VecDeque::new(),
            window_bytes: 0,
            first_arrival_ms: None,
            last_remb: None,
            grouping: Grouping::Frame,
            bursts: InterArrival::default(),
        }
    }

    /// Group packets by frame (the seed) or by 5 ms send-time bursts (libwebrtc).
    pub fn with_grouping(mut self, grouping: Grouping) -> Self {
        self.grouping = grouping;
        self
    }

    /// Round-trip time known to the receiver (from RTCP), used to space decreases.
    pub fn set_rtt_ms(&mut self, rtt_ms: f64) {
        self.rtt_ms = rtt_ms;
    }
    pub fn estimate_bps(&self) -> Option<f64> {
        self.rate
    }
    pub fn state(&self) -> RateState {
        self.state
    }
    pub fn usage(&self) -> Usage {
        self.detector.usage()
    }
    pub fn offset_ms(&self) -> f64 {
        self.kalman.offset()
    }
    pub fn threshold_ms(&self) -> f64 {
        self.detector.threshold()
    }
    pub fn var_noise(&self) -> f64 {
        self.kalman.var_noise()
    }
    /// R over the last 500 ms at `now_ms`, once 500 ms of data have arrived.
    pub fn receive_rate_bps(&self, now_ms: f64) -> Option<f64> {
        let first = self.first_arrival_ms?;
        (now_ms - first >= RATE_WINDOW_MS)
            .then(|| self.window_bytes as f64 * 8.0 / (RATE_WINDOW_MS / 1000.0))
    }

    /// Record an arrival; returns the REMB value (bps) if one is sent now.
    pub fn on_packet(&mut self, a: &Arrival) -> Option<f64> {
        let now = a.receive_time.as_millis_f64();
        self.first_arrival_ms.get_or_insert(now);
        self.window.push_back((now, a.size));
        self.window_bytes += a.size as u64;
        while let Some(&(t, b)) = self.window.front() {
            if t > now - RATE_WINDOW_MS {
                break;
            }
            self.window.pop_front();
            self.window_bytes -= b as u64;
        }
        if self.grouping == Grouping::Burst {
            // Every packet counts, padding included, as every packet carries an absolute send
            // time; the deltas come when a packet opens a new group.
            let d = self.bursts.on_packet(a.send_time, a.receive_time, a.size)?;
            return self.on_group_deltas(d.arrival_ms, d.send_ms, d.size as f64, now, now);
        }
        let frame = a.frame?;
        let send = a.send_time.as_millis_f64();
        let mut remb = None;
        match &mut self.current {
            Some(g) if g.frame == frame => {
                if g.closed {
                    return None; // a duplicate after the frame's last packet
                }
                g.send_ms = g.send_ms.max(send);
                g.receive_ms = now;
                g.size += a.size as u64;
            }
            Some(g) if frame < g.frame => return None, // a late packet of an older frame
            _ => {
                if let Some(g) = self.current.filter(|g| !g.closed) {
                    remb = self.close_group(g, now);
                }
                self.current = Some(FrameGroup {
                    frame,
                    send_ms: send,
                    receive_ms: now,
                    size: a.size as u64,
                    closed: false,
                });
            }
        }
        if a.end_of_frame {
            let g = self.current.unwrap();
            self.current = Some(FrameGroup { closed: true, ..g });
            remb = self.close_group(g, now).or(remb);
        }
        remb
    }

    /// A frame is complete: update the filter, the detector and A_r.
    fn close_group(&mut self, g: FrameGroup, now: f64) -> Option<f64> {
        let prev = self.prev.replace(g);
        let p = prev?;
        let (recv_delta, send_delta) = (g.receive_ms - p.receive_ms, g.send_ms - p.send_ms);
        if recv_delta < 0.0 {
            return None; // reordered frames carry no delay information
        }
        let size_delta = g.size as f64 - p.size as f64;
        self.on_group_deltas(recv_delta, send_delta, size_delta, g.receive_ms, now)
    }

    /// Two consecutive groups' deltas: update the filter, the detector and A_r.
    fn on_group_deltas(
        &mut self,
        recv_delta: f64,
        send_delta: f64,
        size_delta: f64,
        group_receive_ms: f64,
        now: f64,
    ) -> Option<f64> {
        let usage = self.detector.usage();
        let m = self
            .kalman
            .update(recv_delta, send_delta, size_delta, usage);
        let prev_usage = usage;
        let usage = self
            .detector
            .detect(m, self.kalman.num_deltas(), send_delta, group_receive_ms);
        self.update_rate(usage, prev_usage, now)
    }

    fn update_rate(&mut self, usage: Usage, prev_usage: Usage, now: f64) -> Option<f64> {
        let r = self.receive_rate_bps(now)?;
        let mut rate = *self.rate.get_or_insert(r);
        self.state = match (usage, self.state) {
            (Usage::Overusing, _) => RateState::Decrease,
            (Usage::Normal, RateState::Hold) => {
                self.last_change_ms = Some(now);
                RateState::Increase
            }
            (Usage::Normal, RateState::Decrease) => RateState::Hold,
            (Usage::Normal, s) => s,
            (Usage::Underusing, _) => RateState::Hold,
        };
        match self.state {
            RateState::Hold => {}
            RateState::Increase => {
                let dt = self.last_change_ms.map_or(0.0, |t| (now - t) / 1000.0);
                // The cap only blocks increases: when R falls while the detector says normal,
                // A_r stays where it is instead of following 1.5 R down (libwebrtc's
                // `AimdRateControl::ChangeBitrate` raises the rate only while it is below the
                // limit; the paper era's `RemoteRateControl` kept the old rate when an increase
                // would pass 1.5 R).
                let cap = MAX_RATE_OVER_RECEIVED * r;
                if rate < cap {
                    rate = (rate * self.eta.powf(dt.min(1.0))).min(cap);
                }
                self.last_change_ms = Some(now);
            }
            RateState::Decrease => {
                let interval = self.rtt_ms.clamp(10.0, 200.0);
                let reduce = prev_usage != Usage::Overusing
                    || self.last_change_ms.is_none_or(|t| now - t >= interval)
                    || r < 0.5 * rate;
                if reduce {
                    rate = rate.min(self.alpha * r);
                    self.last_change_ms = Some(now);
                    self.state = RateState::Hold;
                }
            }
        }
        let rate = rate.clamp(self.min_bps, self.max_bps);
        self.rate = Some(rate);
        let send = match self.last_remb {
            None => true,
            Some((t, v)) => now - t >= REMB_INTERVAL_MS || rate < REMB_DECREASE_FRACTION * v,
        };
        if send {
            self.last_remb = Some((now, rate));
        }
        send.then_some(rate)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(r: &mut RembReceiver, f: u64, send_ms: f64, recv_ms: f64, size: u32) -> Option<f64> {
        r.on_packet(&Arrival {
            receive_time: Time::from_secs_f64(recv_ms / 1000.0),
            send_time: Time::from_secs_f64(send_ms / 1000.0),
            size,
            frame: Some(f),
            end_of_frame: true,
        })
    }

    #[test]
    fn starts_at_r_increases_8_percent_per_second_and_sends_a_remb_every_second() {
        let mut r = RembReceiver::new(1.08, 0.85, 30e3, 30e6, DetectorConfig::PAPER);
        // One 4000-byte frame every 33 ms with a constant delay: the detector stays normal.
        let (period, size) = (33.0, 4000u32);
        let mut rembs = Vec::new();
        for i in 0..150 {
            let t = i as f64 * period;
            if let Some(v) = frame(&mut r, i, t, t + 25.0, size) {
                rembs.push((t + 25.0, v));
            }
        }
        // R exists once 500 ms have passed since the first arrival (frame 16, at 553 ms); the
        // window (53, 553] ms then holds frames 1..=16, so A_r starts at 16 · 4000 B / 0.5 s.
        let r0 = 16.0 * 4000.0 * 8.0 / 0.5;
        let (t0, v0) = rembs[0];
        assert_eq!((t0, v0), (16.0 * 33.0 + 25.0, r0));
        // Then one REMB per second.
        let times: Vec<f64> = rembs.iter().map(|x| x.0).collect();
        assert!(times.windows(2).all(|w| w[1] - w[0] >= 1000.0));
        assert!(times.windows(2).all(|w| w[1] - w[0] < 1000.0 + period));
        // Hold → Increase at t0, then A_r compounds 1.08 per second: 1.08^4.389 = 1.40 by
        // the last frame, below the 1.5 R cap (R stays r0).
        assert_eq!(r.state(), RateState::Increase);
        let t_end = 149.0 * 33.0 + 25.0;
        let expected = r0 * 1.08f64.powf((t_end - t0) / 1000.0);
        let last = r.estimate_bps().unwrap();
        assert!((last - expected).abs() < 1e-6 * r0, "{last} vs {expected}");
        // Over 500 more frames it reaches and stays at 1.5 R.
        for i in 150..650 {
            let t = i as f64 * period;
            frame(&mut r, i, t, t + 25.0, size);
        }
        assert!((r.estimate_bps().unwrap() - 1.5 * r0).abs() < 1e-6);
    }

    #[test]
    fn the_1_5_r_cap_blocks_increases_but_never_lowers_a_r() {
        let mut r = RembReceiver::new(1.08, 0.85, 30e3, 30e6, DetectorConfig::PAPER);
        // A frame every 33 ms keeps 16 frames in R's window, so R is constant.
        let period = 33.0;
        // 4000-byte frames long enough for A_r to reach 1.5 R.
        for i in 0..600 {
            let t = i as f64 * period;
            frame(&mut r, i, t, t + 25.0, 4000);
        }
        let at_cap = r.estimate_bps().unwrap();
        let r0 = r.receive_rate_bps(599.0 * period + 25.0).unwrap();
        assert!(
            (at_cap - 1.5 * r0).abs() < 1e-6 * r0,
            "{at_cap} vs 1.5 * {r0}"
        );
        // The frames shrink to 2000 bytes with the same spacing: R halves, the delay stays
        // constant, so the detector stays normal and the state Increase.
        for i in 600..700 {
            let t = i as f64 * period;
            frame(&mut r, i, t, t + 25.0, 2000);
            assert_eq!(r.usage(), Usage::Normal);
            assert!(
                r.estimate_bps().unwrap() >= at_cap - 1e-6,
                "A_r fell from {at_cap} to {:?} at frame {i} while the detector said normal",
                r.estimate_bps()
            );
        }
        assert_eq!(r.state(), RateState::Increase);
    }

    #[test]
    fn over_use_decreases_to_alpha_r_holds_and_sends_a_remb_at_once() {
        let mut r = RembReceiver::new(1.08, 0.85, 30e3, 30e6, DetectorConfig::PAPER);
        r.set_rtt_ms(50.0);
        let period = 1000.0 / 30.0;
        let size = 4000u32;
        let mut t_recv = 25.0;
        for i in 0..60 {
            frame(&mut r, i, i as f64 * period, t_recv, size);
            t_recv += period;
        }
        let before = r.estimate_bps().unwrap();
        // Now each frame arrives 15 ms later than the previous spacing: a queue building up.
        let mut rembs = Vec::new();
        let mut i = 60;
        while r.usage() != Usage::Overusing {
            t_recv += period + 15.0;
            if let Some(v) = frame(&mut r, i, i as f64 * period, t_recv, size) {
                rembs.push(v);
            }
            i += 1;
            assert!(i < 400, "no over-use detected");
        }
        let received = r.receive_rate_bps(t_recv).unwrap();
        let after = r.estimate_bps().unwrap();
        assert_eq!(r.state(), RateState::Hold, "a decrease moves to hold");
        assert!(after < before);
        assert!((after - 0.85 * received).abs() < 1e-6, "{after} {received}");
        assert_eq!(
            rembs.last().copied(),
            Some(after),
            "the drop is sent at once"
        );
    }
}
