//! A netem-style delay stage in front of a link's queue: every packet is held for a fixed
//! `delay`, and a packet that arrives while `limit` packets are held is dropped.
//!
//! Why it exists. Testbeds that shape with Linux `tc` often chain two qdiscs: `netem` to add the
//! path's delay and `tbf` to set the rate (the bbr-dash seed did: "TC NetEm to impose delays and
//! regulate bandwidth", with a token bucket). netem has a packet limit of its own, 1000 by
//! default, which a testbed description rarely mentions. A sender that bursts faster than the
//! bottleneck (a window released at the interface's line rate, a pacing rate far above the
//! link's) puts more packets into the delay stage than it can hold, and netem drops them before
//! they ever reach the shaper's queue: a loss that a deep `tbf` buffer alone would not cause.
//! rtcc's links have no such stage by default (the propagation delay is a lossless line after
//! the link); this one lets a scenario add it (`netem = { delay = "50ms", limit = 1000 }` on a
//! link, `docs/queues.md`).
//!
//! What Linux does (`net/sched/sch_netem.c`, described in our own words):
//! - On enqueue, netem compares the number of packets it holds with its `limit` (the `tc`
//!   option, default 1000 packets) and drops the arrival if it holds that many already.
//!   Otherwise it stamps the packet with the time it may leave, now plus the delay (plus jitter,
//!   if configured: not modelled here), and keeps it in a list ordered by that time ("tfifo").
//! - On dequeue, a packet whose time has come leaves netem (and its count), and goes to the
//!   child qdisc if there is one (here: the link's queue, e.g. the `tbf`'s); otherwise netem
//!   arms a watchdog for the head's time.
//! - With a constant delay the order of departure is the order of arrival.
//!
//! The limit therefore bounds the packets *in the delay*, not those waiting in the shaper
//! behind it: a stage of delay `d` overflows when more than `limit` packets arrive within `d`,
//! i.e. above `limit × size / d` (1000 packets of 1500 B in 50 ms: 240 Mbit/s).
//!
//! Not modelled: netem's jitter, loss, duplication, corruption, reordering and rate options
//! (rtcc has its own impairments after the link, `impair.rs`), and its slot model.

use crate::units::{Duration, Time};
use std::collections::VecDeque;

/// netem's default `limit` (`tc-netem(8)`: "limit packets ... default 1000").
pub const DEFAULT_NETEM_LIMIT: u32 = 1000;

/// A netem stage: a fixed delay and a packet limit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NetemConfig {
    pub delay: Duration,
    /// Packets the stage may hold (≥ 1).
    pub limit: u32,
}

/// Why a netem stage's settings are refused.
#[derive(Debug, Clone, PartialEq)]
pub enum NetemError {
    /// `limit` must hold at least one packet.
    ZeroLimit,
    /// A delay above this is almost certainly a unit mistake (netem's own bound is about 4 s
    /// in older `tc`; we allow 10 s).
    DelayTooLong(Duration),
}

impl std::fmt::Display for NetemError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NetemError::ZeroLimit => write!(f, "limit must be at least 1 packet"),
            NetemError::DelayTooLong(d) => {
                write!(f, "delay {d} is above the 10s a delay stage allows")
            }
        }
    }
}

impl std::error::Error for NetemError {}

impl NetemConfig {
    pub fn new(delay: Duration, limit: u32) -> Result<NetemConfig, NetemError> {
        if limit == 0 {
            return Err(NetemError::ZeroLimit);
        }
        if delay > Duration::from_millis(10_000) {
            return Err(NetemError::DelayTooLong(delay));
        }
        Ok(NetemConfig { delay, limit })
    }
}

/// The stage's packets, in the order (and at the times) they leave it.
pub struct DelayLine<P> {
    config: NetemConfig,
    held: VecDeque<(Time, P)>,
    /// Arrivals dropped because the stage was full.
    pub drops: u64,
}

impl<P> DelayLine<P> {
    pub fn new(config: NetemConfig) -> DelayLine<P> {
        DelayLine {
            config,
            held: VecDeque::new(),
            drops: 0,
        }
    }

    pub fn config(&self) -> NetemConfig {
        self.config
    }

    /// Packets held.
    pub fn len(&self) -> usize {
        self.held.len()
    }

    pub fn is_empty(&self) -> bool {
        self.held.is_empty()
    }

    /// A packet arrives at `now`: held until `now + delay`, or handed back if the stage is full
    /// (netem's `limit` check comes before anything else).
    pub fn offer(&mut self, now: Time, pkt: P) -> Result<(), P> {
        if self.held.len() >= self.config.limit as usize {
            self.drops += 1;
            return Err(pkt);
        }
        // A constant delay keeps arrival order: appending keeps the list sorted.
        self.held.push_back((now + self.config.delay, pkt));
        Ok(())
    }

    /// When the next packet leaves the stage.
    pub fn next_release(&self) -> Option<Time> {
        self.held.front().map(|&(t, _)| t)
    }

    /// The next packet whose time has come by `now`, with that time.
    pub fn release(&mut self, now: Time) -> Option<(Time, P)> {
        if self.held.front().is_some_and(|&(t, _)| t <= now) {
            self.held.pop_front()
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn each_packet_leaves_exactly_delay_after_it_arrived_in_arrival_order() {
        let mut d = DelayLine::new(NetemConfig::new(Duration::from_millis(50), 1000).unwrap());
        let arrivals = [0, 1, 1, 7 * MS, 7 * MS + 3];
        for (i, &t) in arrivals.iter().enumerate() {
            d.offer(Time(t), i).unwrap();
        }
        // Nothing leaves early.
        assert_eq!(d.release(Time(50 * MS - 1)), None);
        let mut out = Vec::new();
        while let Some(x) = d.release(Time(100 * MS)) {
            out.push(x);
        }
        let expected: Vec<(Time, usize)> = arrivals
            .iter()
            .enumerate()
            .map(|(i, &t)| (Time(t + 50 * MS), i))
            .collect();
        assert_eq!(out, expected);
        assert!(d.is_empty() && d.next_release().is_none());
    }

    #[test]
    fn arrivals_beyond_the_limit_are_dropped_until_a_packet_leaves() {
        let mut d = DelayLine::new(NetemConfig::new(Duration::from_millis(10), 3).unwrap());
        for i in 0..3 {
            d.offer(Time(i), i).unwrap();
        }
        // The fourth and fifth find three held.
        assert_eq!(d.offer(Time(5), 3), Err(3));
        assert_eq!(d.offer(Time(6), 4), Err(4));
        assert_eq!(d.drops, 2);
        // Once the first has left, there is room for one.
        assert_eq!(d.release(Time(10 * MS)), Some((Time(10 * MS), 0)));
        assert_eq!(d.offer(Time(10 * MS), 5), Ok(()));
        assert_eq!(d.offer(Time(10 * MS), 6), Err(6));
        assert_eq!(d.len(), 3);
        assert_eq!(d.next_release(), Some(Time(10 * MS + 1)));
    }

    #[test]
    fn bad_settings_are_named_errors() {
        assert_eq!(
            NetemConfig::new(Duration::from_millis(5), 0),
            Err(NetemError::ZeroLimit)
        );
        assert!(matches!(
            NetemConfig::new(Duration::from_millis(11_000), 10),
            Err(NetemError::DelayTooLong(_))
        ));
    }
}
