//! One direction of an emulated path, sans-IO: the simulator's link, queue, impairments and
//! propagation delay, applied to real IP packets.
//!
//! A packet read from a TUN device goes through the same stages, in the same order, as a
//! simulated packet on that link (`rtcc-sim`'s `sim.rs`):
//!
//! ```text
//!   arrival ─► [queue ▸ link (capacity model)] ─► impairments (loss, jitter, aggregation) ─► delay ─► delivery
//! ```
//!
//! Driven like the core's endpoints: [`Direction::handle_packet`] when a packet arrives,
//! [`Direction::poll_timeout`] for when the direction next needs attention,
//! [`Direction::handle_timeout`] at (or after) that time, and [`Direction::poll_deliver`] for the
//! packets whose delivery time has come. The link's own events are served at the times the
//! model scheduled them, not at the (later) time the caller woke up, so the model's timeline is
//! exact and a late wake-up only delays the write to the other device. Every packet's scheduled
//! delivery time is returned with it, so the caller can measure how late it was written.

use rtcc_core::net::impair::Impairments;
use rtcc_core::net::{Link, LinkOutput, NetPacket, Steps};
use rtcc_core::{Duration, Time};
use rtcc_scenario::LinkConfig;
use std::collections::VecDeque;
use std::sync::Arc;

/// A real IP packet inside the emulator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmuPacket {
    /// The IP packet as read from the TUN device.
    pub bytes: Vec<u8>,
    /// Index of the packet's flow (its 5-tuple) in order of first appearance.
    pub flow: u32,
    /// The packet's number in its flow, in this direction, in order of arrival.
    pub seq: u64,
    /// When it entered this direction.
    pub arrival: Time,
}

impl NetPacket for EmuPacket {
    /// The IP packet's length: what the simulator counts too (IP and UDP headers included,
    /// no link-layer framing), and what mahimahi counts.
    fn size(&self) -> u32 {
        self.bytes.len() as u32
    }
    fn flow(&self) -> u32 {
        self.flow
    }
}

/// What a direction did, in time order, for logs (mahimahi's and rtcc's packet log).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogEvent {
    /// A packet entered the queue (or tried to).
    Arrival { at: Time, flow: u32, size: u32 },
    /// A packet left the link at `at`; it is delivered at `deliver`, or lost by the impairments
    /// (`None`).
    Departure {
        at: Time,
        flow: u32,
        seq: u64,
        size: u32,
        arrival: Time,
        deliver: Option<Time>,
    },
    /// The queue dropped a packet (on arrival, or on the way out for AQMs).
    Drop {
        at: Time,
        flow: u32,
        seq: u64,
        size: u32,
        arrival: Time,
    },
}

impl LogEvent {
    pub fn at(&self) -> Time {
        match *self {
            LogEvent::Arrival { at, .. }
            | LogEvent::Departure { at, .. }
            | LogEvent::Drop { at, .. } => at,
        }
    }
}

/// One direction of the emulated path.
pub struct Direction {
    link: Link<EmuPacket>,
    impairments: Option<Impairments>,
    delay: Duration,
    /// A delay that changes in steps (an OpenNetLab trace's rtt) instead of `delay`, and the
    /// latest delivery time of each flow's packets: the delay line keeps a flow's packets in
    /// order when the delay drops, as the simulator's does.
    delay_steps: Option<Arc<Steps<Duration>>>,
    last_delivery: Vec<Time>,
    /// Packets past the link, in delivery order, each with its delivery time.
    in_flight: VecDeque<(Time, EmuPacket)>,
    out: LinkOutput<EmuPacket>,
    /// Events not yet taken by [`Direction::poll_log`] (only when logging).
    log: VecDeque<LogEvent>,
    logging: bool,
    /// Totals since the start.
    pub counters: Counters,
    /// The next packet number of each flow.
    next_seq: Vec<u64>,
}

/// Per-direction totals.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Counters {
    pub arrived_packets: u64,
    pub arrived_bytes: u64,
    pub delivered_packets: u64,
    pub delivered_bytes: u64,
    pub queue_drops: u64,
    pub lost: u64,
}

impl Direction {
    /// A direction with `config`'s capacity, queue, impairments and delay; the seeds drive the
    /// queue's randomness (PIE's drops, the fair queues' hash) and the impairments'.
    pub fn new(
        config: &LinkConfig,
        queue_seed: u64,
        impairment_seed: u64,
        logging: bool,
    ) -> Result<Direction, String> {
        let queue = config
            .queue
            .build::<EmuPacket>(config.nominal_rate, queue_seed)?;
        let impairments = (!config.impairments.is_none())
            .then(|| Impairments::new(config.impairments.clone(), impairment_seed));
        let mut link = Link::new(config.capacity.clone(), queue);
        if let Some(n) = config.netem {
            link = link.with_netem(n);
        }
        Ok(Direction {
            link,
            impairments,
            delay: config.delay,
            delay_steps: config.delay_steps.clone(),
            last_delivery: Vec::new(),
            in_flight: VecDeque::new(),
            out: LinkOutput::default(),
            log: VecDeque::new(),
            logging,
            counters: Counters::default(),
            next_seq: Vec::new(),
        })
    }

    /// A packet arrived at `now`. Serve the link up to `now` first ([`Direction::handle_timeout`]),
    /// so that the packet joins the queue the model has at `now`.
    pub fn handle_packet(&mut self, now: Time, bytes: Vec<u8>, flow: u32) {
        self.handle_timeout(now);
        self.counters.arrived_packets += 1;
        self.counters.arrived_bytes += bytes.len() as u64;
        if self.logging {
            self.log.push_back(LogEvent::Arrival {
                at: now,
                flow,
                size: bytes.len() as u32,
            });
        }
        if self.next_seq.len() <= flow as usize {
            self.next_seq.resize(flow as usize + 1, 0);
        }
        let seq = self.next_seq[flow as usize];
        self.next_seq[flow as usize] += 1;
        let pkt = EmuPacket {
            bytes,
            flow,
            seq,
            arrival: now,
        };
        let mut out = std::mem::take(&mut self.out);
        self.link.enqueue(now, pkt, &mut out);
        self.out = out;
        self.route(now);
    }

    /// Serve every link event due by `now`, each at its own scheduled time.
    pub fn handle_timeout(&mut self, now: Time) {
        while let Some(t) = self.link.next_event().filter(|&t| t <= now) {
            let mut out = std::mem::take(&mut self.out);
            self.link.on_event(t, &mut out);
            self.out = out;
            self.route(t);
        }
    }

    /// When the direction next needs [`Direction::handle_timeout`] or has a packet to deliver.
    pub fn poll_timeout(&self) -> Option<Time> {
        let head = self.in_flight.front().map(|&(t, _)| t);
        match (self.link.next_event(), head) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The next packet whose delivery time is at or before `now`, with that time.
    pub fn poll_deliver(&mut self, now: Time) -> Option<(Time, EmuPacket)> {
        if self.in_flight.front()?.0 > now {
            return None;
        }
        let (t, p) = self.in_flight.pop_front()?;
        self.counters.delivered_packets += 1;
        self.counters.delivered_bytes += p.bytes.len() as u64;
        Some((t, p))
    }

    /// The next event for logs, in time order (only if the direction was built to log).
    pub fn poll_log(&mut self) -> Option<LogEvent> {
        self.log.pop_front()
    }

    /// Packets in the queue, in bytes.
    pub fn queued_bytes(&self) -> u64 {
        self.link.queue().len_bytes()
    }

    /// Route what the link did at `t`: departures through the impairments onto the delay line,
    /// drops to the log.
    fn route(&mut self, t: Time) {
        for (depart, p) in self.out.departed.drain(..) {
            let released = match &mut self.impairments {
                Some(imp) => imp.on_departure(depart, p.flow, p.size()),
                None => Some(depart),
            };
            let deliver = released.map(|r| match &self.delay_steps {
                None => r + self.delay,
                Some(steps) => {
                    let flow = p.flow as usize;
                    if self.last_delivery.len() <= flow {
                        self.last_delivery.resize(flow + 1, Time::ZERO);
                    }
                    let at = (r + steps.at(r)).max(self.last_delivery[flow]);
                    self.last_delivery[flow] = at;
                    at
                }
            });
            if self.logging {
                self.log.push_back(LogEvent::Departure {
                    at: depart,
                    flow: p.flow,
                    seq: p.seq,
                    size: p.size(),
                    arrival: p.arrival,
                    deliver,
                });
            }
            match deliver {
                Some(deliver) => {
                    // Links send in order and only RFC 8868's RBPDV reorders: a packet it sends
                    // ahead goes before the later ones, after any due at the same instant.
                    let at = self.in_flight.partition_point(|&(t, _)| t <= deliver);
                    self.in_flight.insert(at, (deliver, p));
                }
                None => self.counters.lost += 1,
            }
        }
        for p in self.out.dropped.drain(..) {
            self.counters.queue_drops += 1;
            if self.logging {
                self.log.push_back(LogEvent::Drop {
                    at: t,
                    flow: p.flow,
                    seq: p.seq,
                    size: p.size(),
                    arrival: p.arrival,
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtcc_core::net::impair::ImpairmentConfig;
    use rtcc_core::net::{Capacity, QueueConfig};
    use rtcc_core::Rate;

    fn config(capacity: Capacity, queue: &str, delay_ms: u64) -> LinkConfig {
        let queue: QueueConfig = serde_json::from_value(serde_json::json!(queue)).unwrap();
        LinkConfig {
            nominal_rate: Rate(10e6),
            capacity,
            delay: Duration::from_millis(delay_ms),
            delay_steps: None,
            queue,
            impairments: ImpairmentConfig::default(),
            netem: None,
        }
    }

    const MS: u64 = 1_000_000;

    #[test]
    fn packets_are_serialised_then_delayed() {
        // 1250 bytes at 10 Mbit/s take 1 ms; 20 ms of propagation delay after the link.
        let cfg = config(Capacity::Constant(Rate(10e6)), "100pkts", 20);
        let mut d = Direction::new(&cfg, 1, 2, true).unwrap();
        d.handle_packet(Time::ZERO, vec![0; 1250], 0);
        d.handle_packet(Time::ZERO, vec![0; 1250], 0);
        assert_eq!(
            d.poll_timeout(),
            Some(Time(MS)),
            "the first packet leaves the link at 1 ms"
        );
        // Woken late, at 5 ms: both departures are served at their own times.
        d.handle_timeout(Time(5 * MS));
        assert_eq!(d.poll_timeout(), Some(Time(21 * MS)));
        assert!(
            d.poll_deliver(Time(20 * MS)).is_none(),
            "nothing is due before 21 ms"
        );
        let (t1, _) = d.poll_deliver(Time(30 * MS)).unwrap();
        let (t2, _) = d.poll_deliver(Time(30 * MS)).unwrap();
        assert_eq!((t1, t2), (Time(21 * MS), Time(22 * MS)));
        assert_eq!(d.poll_timeout(), None, "an idle direction needs no timer");
        let log: Vec<LogEvent> = std::iter::from_fn(|| d.poll_log()).collect();
        let times: Vec<Time> = log.iter().map(|e| e.at()).collect();
        assert_eq!(times, vec![Time::ZERO, Time::ZERO, Time(MS), Time(2 * MS)]);
        assert_eq!(
            log[3],
            LogEvent::Departure {
                at: Time(2 * MS),
                flow: 0,
                seq: 1,
                size: 1250,
                arrival: Time::ZERO,
                deliver: Some(Time(22 * MS))
            }
        );
    }

    #[test]
    fn a_full_queue_drops_and_says_so() {
        let cfg = config(Capacity::Constant(Rate(1e6)), "2pkts", 0);
        let mut d = Direction::new(&cfg, 1, 2, true).unwrap();
        for _ in 0..5 {
            d.handle_packet(Time::ZERO, vec![0; 1000], 3);
        }
        // One in service, two queued, two dropped.
        assert_eq!(d.counters.queue_drops, 2);
        let drops = std::iter::from_fn(|| d.poll_log())
            .filter(|e| matches!(e, LogEvent::Drop { .. }))
            .count();
        assert_eq!(drops, 2);
    }

    #[test]
    fn a_delay_that_drops_keeps_each_flow_in_order() {
        // 100 ms until 10 ms, then 20 ms: a packet of flow 0 sent at 12 ms would arrive at
        // 32 ms, before flow 0's packet of 5 ms (105 ms); it arrives with it. Flow 1 has
        // nothing ahead of it and gets 20 ms.
        let mut cfg = config(Capacity::Unlimited, "100pkts", 20);
        let steps = vec![
            (Time::ZERO, Duration::from_millis(100)),
            (Time(10 * MS), Duration::from_millis(20)),
        ];
        cfg.delay_steps = Some(Arc::new(Steps::new(steps).unwrap()));
        let mut d = Direction::new(&cfg, 1, 2, false).unwrap();
        d.handle_packet(Time(5 * MS), vec![0; 100], 0);
        d.handle_packet(Time(12 * MS), vec![0; 100], 0);
        d.handle_packet(Time(13 * MS), vec![0; 100], 1);
        let got: Vec<(u64, u32)> = std::iter::from_fn(|| d.poll_deliver(Time(200 * MS)))
            .map(|(t, p)| (t.0 / MS, p.flow))
            .collect();
        assert_eq!(got, vec![(33, 1), (105, 0), (105, 0)]);
    }

    #[test]
    fn an_unlimited_link_only_delays() {
        let cfg = config(Capacity::Unlimited, "100pkts", 10);
        let mut d = Direction::new(&cfg, 1, 2, false).unwrap();
        d.handle_packet(Time(3 * MS), vec![0; 1500], 0);
        assert_eq!(d.poll_timeout(), Some(Time(13 * MS)));
        assert_eq!(d.poll_deliver(Time(13 * MS)).unwrap().0, Time(13 * MS));
        assert!(d.poll_log().is_none(), "built without a log");
    }
}
