//! The minimum one-way delay `Δ_min` over an adaptive window (SQP §4.3).
//!
//! "Δ_min is the minimum one-way delay (delta between send and receive timestamps) for packets
//! sent during a small window in the past", and the window is `2 × sRTT` (RFC 2988 smoothing).
//! A one-way delay here is `receive time (receiver clock) − send time (sender clock)`: it
//! contains the unknown clock offset, which cancels in Eq. 1. Delays are kept in whole
//! nanoseconds so the cancellation is exact.
//!
//! The paper does not say what the window is relative to. [`Anchor`] names the readings; the
//! choice is a parameter of the controller and the subject of the multi-flow investigation in
//! `docs/sqp.md`.

use crate::units::{Duration, Time};
use std::collections::VecDeque;

/// What the `k × sRTT` window is anchored at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Anchor {
    /// Packets sent in `[S_start − W, last packet of the frame]`: the window reaches back `W`
    /// from the frame being sampled (which is itself included).
    Frame,
    /// Packets sent in `[now − W, now]`, `now` the feedback's arrival. Feedback lags a round
    /// trip, so the reported packets in it span only about `W − RTT` before the frame.
    Feedback,
}

impl Anchor {
    pub fn parse(s: &str) -> Result<Anchor, String> {
        match s {
            "frame" => Ok(Anchor::Frame),
            "feedback" => Ok(Anchor::Feedback),
            _ => Err(format!(
                "min_owd_anchor must be \"frame\" or \"feedback\", got {s:?}"
            )),
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Sample {
    send: Time,
    owd_ns: i128,
}

/// Per-packet one-way delays of received packets, in send order.
#[derive(Debug, Default, Clone)]
pub struct MinOwdWindow {
    samples: VecDeque<Sample>,
}

impl MinOwdWindow {
    pub fn new() -> MinOwdWindow {
        MinOwdWindow::default()
    }

    /// Record a received packet (`owd_ns` = receive − send, may be negative across clocks).
    /// Packets are reported in sequence order, i.e. send order.
    pub fn push(&mut self, send: Time, owd_ns: i128) {
        self.samples.push_back(Sample { send, owd_ns });
    }

    /// Minimum one-way delay of the packets sent in `[from, to]`.
    pub fn min_between(&self, from: Time, to: Time) -> Option<i128> {
        self.samples
            .iter()
            .rev()
            .skip_while(|s| s.send > to)
            .take_while(|s| s.send >= from)
            .map(|s| s.owd_ns)
            .min()
    }

    /// Forget packets sent before `before`.
    pub fn forget_before(&mut self, before: Time) {
        while self.samples.front().is_some_and(|s| s.send < before) {
            self.samples.pop_front();
        }
    }

    pub fn len(&self) -> usize {
        self.samples.len()
    }

    pub fn is_empty(&self) -> bool {
        self.samples.is_empty()
    }
}

/// RFC 2988 §2 smoothed round-trip time: the first sample as is, then
/// `SRTT ← (1 − 1/8)·SRTT + 1/8·R` (SQP §4.3 cites RFC 2988 for sRTT).
#[derive(Debug, Default, Clone, Copy)]
pub struct Srtt {
    srtt: Option<f64>,
}

impl Srtt {
    pub const ALPHA: f64 = 1.0 / 8.0;

    pub fn on_sample(&mut self, rtt: Duration) {
        let r = rtt.as_secs_f64();
        self.srtt = Some(match self.srtt {
            None => r,
            Some(s) => (1.0 - Self::ALPHA) * s + Self::ALPHA * r,
        });
    }

    pub fn get(&self) -> Option<Duration> {
        self.srtt.map(Duration::from_secs_f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_minimum_covers_exactly_the_packets_sent_in_the_window() {
        let mut w = MinOwdWindow::new();
        for (t, owd) in [(0, 50), (10, 20), (20, 30), (30, 25), (40, 60)] {
            w.push(Time::from_millis(t), owd);
        }
        let ms = Time::from_millis;
        assert_eq!(w.min_between(ms(0), ms(40)), Some(20));
        assert_eq!(w.min_between(ms(15), ms(40)), Some(25));
        assert_eq!(w.min_between(ms(20), ms(20)), Some(30));
        assert_eq!(w.min_between(ms(35), ms(100)), Some(60));
        assert_eq!(w.min_between(ms(41), ms(100)), None);
        w.forget_before(ms(15));
        assert_eq!(w.len(), 3);
        assert_eq!(w.min_between(ms(0), ms(40)), Some(25));
    }

    #[test]
    fn srtt_follows_rfc_2988() {
        let mut s = Srtt::default();
        assert_eq!(s.get(), None);
        s.on_sample(Duration::from_millis(40));
        assert_eq!(s.get(), Some(Duration::from_millis(40)));
        s.on_sample(Duration::from_millis(120));
        assert_eq!(
            s.get(),
            Some(Duration::from_millis(50)),
            "40 + (120 − 40)/8"
        );
        assert!(Anchor::parse("now").is_err());
        assert_eq!(Anchor::parse("frame"), Ok(Anchor::Frame));
    }
}
