//! A bottleneck link: a queue in front of a server whose speed is given by a [`Capacity`].
//!
//! Sans-IO: the caller offers packets with [`Link::enqueue`], asks [`Link::next_event`] when the
//! link next needs attention, and calls [`Link::on_event`] at that time to collect departures.
//!
//! Service models:
//! - constant rate and schedule: one packet at a time leaves the queue and is serialised; it
//!   departs when its last bit is sent (a schedule's rate may change mid-packet);
//! - mahimahi trace: at each delivery opportunity up to 1500 bytes leave; a packet's bytes are
//!   drained across opportunities (the packet in transit no longer counts against the queue), a
//!   packet departs at the opportunity that carries its last byte, and an opportunity with
//!   nothing to send is wasted (`link_queue.cc` semantics). A packet that arrives exactly at an
//!   opportunity's time may use it.
//! - token bucket (Linux `tbf`): a bucket of `burst` bytes refills at `rate`; the head packet
//!   is taken as soon as the bucket holds its length (size + `overhead`, the link-layer header
//!   `tc` counts) and takes that many tokens, then a line of `line_rate` serialises it (Linux
//!   hands it to the NIC). A burst of up to `burst` bytes therefore passes at the line rate
//!   after an idle period, then packets are spaced at `rate`. (tbf's optional peak rate is not
//!   modelled.)
//! - unlimited: packets depart the instant they arrive and never queue.
//!
//! A link may have a netem-style delay stage in front of its queue ([`Link::with_netem`],
//! `netem.rs`): an offered packet is held there for a fixed delay (dropped if the stage holds its
//! limit of packets) and only then offered to the queue. [`Link::next_event`] is then the
//! earlier of the server's next step and the stage's next release.

use super::capacity::{Capacity, OPPORTUNITY_BYTES};
use super::netem::{DelayLine, NetemConfig};
use super::queue::{NetPacket, Queue};
use crate::units::{Duration, Rate, Time};

/// What a link did in one step.
pub struct LinkOutput<P> {
    /// Packets that finished transmission, with their departure time.
    pub departed: Vec<(Time, P)>,
    /// Packets the queue dropped.
    pub dropped: Vec<P>,
}

impl<P> Default for LinkOutput<P> {
    fn default() -> Self {
        LinkOutput {
            departed: Vec::new(),
            dropped: Vec::new(),
        }
    }
}

pub struct Link<P> {
    capacity: Capacity,
    queue: Box<dyn Queue<P>>,
    /// Constant/schedule: the packet being serialised and when it finishes.
    serving: Option<(P, Time)>,
    /// Trace: the packet whose bytes are partly sent, and how many bytes it still needs.
    in_transit: Option<(P, u32)>,
    /// Trace: index of the next unused opportunity of the looped trace.
    next_opportunity: u64,
    /// When the server must next be served (see [`Link::next_event`] for the link's).
    next_event: Option<Time>,
    /// A netem-style delay stage in front of the queue.
    netem: Option<DelayLine<P>>,
    /// Token bucket: tokens (bytes) at `tokens_at`.
    tokens: f64,
    tokens_at: Time,
}

impl<P: NetPacket> Link<P> {
    pub fn new(capacity: Capacity, queue: Box<dyn Queue<P>>) -> Self {
        let tokens = match capacity {
            Capacity::TokenBucket { burst, .. } => burst as f64,
            _ => 0.0,
        };
        Link {
            capacity,
            queue,
            serving: None,
            in_transit: None,
            next_opportunity: 0,
            next_event: None,
            netem: None,
            tokens,
            tokens_at: Time::ZERO,
        }
    }

    /// Put a netem-style delay stage in front of the queue (`netem.rs`).
    pub fn with_netem(mut self, config: NetemConfig) -> Self {
        self.netem = Some(DelayLine::new(config));
        self
    }

    /// The delay stage in front of the queue, if any.
    pub fn netem(&self) -> Option<&DelayLine<P>> {
        self.netem.as_ref()
    }

    pub fn capacity(&self) -> &Capacity {
        &self.capacity
    }

    pub fn queue(&self) -> &dyn Queue<P> {
        self.queue.as_ref()
    }

    /// Packets the link holds: queued, being serialised, or partly sent over a trace's
    /// opportunities (every packet offered is eventually departed, dropped, or held here).
    pub fn held_packets(&self) -> usize {
        self.queue.len_packets()
            + self.serving.is_some() as usize
            + self.in_transit.is_some() as usize
            + self.netem.as_ref().map_or(0, |d| d.len())
    }

    /// When the link next needs [`Link::on_event`]; `None` while idle.
    pub fn next_event(&self) -> Option<Time> {
        match self.netem.as_ref().and_then(|d| d.next_release()) {
            Some(r) => Some(self.next_event.map_or(r, |e| e.min(r))),
            None => self.next_event,
        }
    }

    /// Offer a packet at `now`. Departures that happen at once (unlimited link) and drops are
    /// added to `out`.
    pub fn enqueue(&mut self, now: Time, pkt: P, out: &mut LinkOutput<P>) {
        match self.netem.as_mut() {
            Some(stage) => {
                if let Err(p) = stage.offer(now, pkt) {
                    out.dropped.push(p);
                }
            }
            None => self.admit(now, pkt, out),
        }
    }

    /// A packet reaches the queue (after the delay stage, if any).
    fn admit(&mut self, now: Time, pkt: P, out: &mut LinkOutput<P>) {
        if let Capacity::Unlimited = self.capacity {
            out.departed.push((now, pkt));
            return;
        }
        let rate = self.capacity.rate_at(now);
        let accepted = self.queue.enqueue(now, pkt, rate);
        // Fair queues may drop other flows' packets to make room.
        self.queue.drain_dropped(&mut out.dropped);
        if let Err(p) = accepted {
            out.dropped.push(p);
            return;
        }
        if self.next_event.is_none() {
            self.start(now, out);
        }
    }

    /// Serve the link at `now` (the time `next_event` gave).
    pub fn on_event(&mut self, now: Time, out: &mut LinkOutput<P>) {
        if self.next_event.is_some_and(|t| t <= now) {
            self.serve(now, out);
        }
        // Packets whose delay is over enter the queue, in order, after the server's step at the
        // same instant (as an arrival at a departure's instant is queued behind it).
        while let Some((_, p)) = self.netem.as_mut().and_then(|d| d.release(now)) {
            self.admit(now, p, out);
        }
    }

    fn serve(&mut self, now: Time, out: &mut LinkOutput<P>) {
        match &self.capacity {
            Capacity::Trace(_) => self.use_opportunity(now, out),
            _ => {
                if let Some((p, t)) = self.serving.take() {
                    debug_assert!(t <= now);
                    out.departed.push((t, p));
                }
                self.next_event = None;
                self.start(now, out);
            }
        }
    }

    /// The link was idle and has work: schedule its next step.
    fn start(&mut self, now: Time, out: &mut LinkOutput<P>) {
        match &self.capacity {
            Capacity::Unlimited => {}
            Capacity::Trace(trace) => {
                // Opportunities that passed while idle are wasted.
                let first_usable = trace.opportunities_before(now);
                self.next_opportunity = self.next_opportunity.max(first_usable);
                self.next_event = Some(trace.opportunity_time(self.next_opportunity));
            }
            Capacity::Constant(rate) => {
                if let Some(p) = self.queue.dequeue(now, &mut out.dropped) {
                    let done = now + rate.transmit_time(p.size() as u64);
                    self.serving = Some((p, done));
                    self.next_event = Some(done);
                }
            }
            &Capacity::TokenBucket {
                rate,
                burst,
                line_rate,
                overhead,
            } => {
                if let Some(p) = self.queue.dequeue(now, &mut out.dropped) {
                    // tbf takes the packet once the bucket holds its length, then the line
                    // serialises it; the bucket keeps filling meanwhile.
                    self.refill(now, rate, burst);
                    let length = (p.size() + overhead) as f64;
                    let missing = (length - self.tokens).max(0.0);
                    let taken = now + Duration::from_secs_f64(missing * 8.0 / rate.bps());
                    self.refill(taken, rate, burst);
                    self.tokens -= length;
                    let done = if line_rate.bps().is_finite() {
                        taken + line_rate.transmit_time(length as u64)
                    } else {
                        taken
                    };
                    self.serving = Some((p, done));
                    self.next_event = Some(done);
                }
            }
            Capacity::Schedule(s) => {
                if let Some(p) = self.queue.dequeue(now, &mut out.dropped) {
                    let done = s.finish_time(now, p.size() as u64);
                    self.serving = Some((p, done));
                    self.next_event = (done != Time::MAX).then_some(done);
                }
            }
        }
    }

    fn refill(&mut self, now: Time, rate: Rate, burst: u64) {
        self.tokens = (self.tokens + rate.bytes_in(now - self.tokens_at)).min(burst as f64);
        self.tokens_at = now;
    }

    fn use_opportunity(&mut self, now: Time, out: &mut LinkOutput<P>) {
        let Capacity::Trace(trace) = &self.capacity else {
            unreachable!()
        };
        let mut budget = OPPORTUNITY_BYTES;
        self.next_opportunity += 1;
        while budget > 0 {
            let (pkt, left) = match self.in_transit.take() {
                Some(t) => t,
                None => match self.queue.dequeue(now, &mut out.dropped) {
                    Some(p) => {
                        let size = p.size();
                        (p, size)
                    }
                    None => break,
                },
            };
            let sent = budget.min(left);
            budget -= sent;
            if sent == left {
                out.departed.push((now, pkt));
            } else {
                self.in_transit = Some((pkt, left - sent));
            }
        }
        let busy = self.in_transit.is_some() || !self.queue.is_empty();
        self.next_event = busy.then(|| trace.opportunity_time(self.next_opportunity));
    }
}

#[cfg(test)]
mod tests {
    use super::super::capacity::{MahimahiTrace, Schedule};
    use super::super::queue::{tests::P, DropTail, QueueLimit};
    use super::*;
    use std::sync::Arc;

    fn run(link: &mut Link<P>, arrivals: &[(u64, P)]) -> Vec<(u64, P)> {
        // Drive the link like the simulator does: events in time order, arrivals first on ties.
        let mut out = LinkOutput::default();
        let mut i = 0;
        loop {
            let next_arrival = arrivals.get(i).map(|a| a.0);
            match (next_arrival, link.next_event().map(|t| t.0)) {
                (Some(a), Some(e)) if a <= e => {
                    link.enqueue(Time(a), arrivals[i].1, &mut out);
                    i += 1;
                }
                (Some(a), None) => {
                    link.enqueue(Time(a), arrivals[i].1, &mut out);
                    i += 1;
                }
                (_, Some(e)) => link.on_event(Time(e), &mut out),
                (None, None) => break,
            }
        }
        out.departed.into_iter().map(|(t, p)| (t.0, p)).collect()
    }

    const MS: u64 = 1_000_000;

    #[test]
    fn constant_rate_serialises_back_to_back() {
        // 1250 bytes at 10 Mbps = 1 ms each.
        let mut l = Link::new(
            Capacity::Constant(Rate(10e6)),
            Box::new(DropTail::new(QueueLimit::Unlimited)),
        );
        let d = run(
            &mut l,
            &[(0, P(1250, 0)), (0, P(1250, 1)), (5 * MS, P(1250, 2))],
        );
        assert_eq!(
            d.iter().map(|x| x.0).collect::<Vec<_>>(),
            vec![MS, 2 * MS, 6 * MS]
        );
    }

    #[test]
    fn trace_drains_bytes_across_opportunities_and_wastes_idle_ones() {
        // Opportunities at 1, 2, 3, 10 ms (period 10).
        let tr = MahimahiTrace::parse("1\n2\n3\n10\n", "t").unwrap();
        let mut l = Link::new(
            Capacity::Trace(Arc::new(tr)),
            Box::new(DropTail::new(QueueLimit::Unlimited)),
        );
        // Two 1000-byte packets at 0: the first leaves at 1 ms (1500 budget: 1000 + 500 of the
        // second), the second finishes at 2 ms. A packet at 2.5 ms uses the 3 ms opportunity.
        // A packet at 4 ms waits for 10 ms (the opportunities in between do not exist), and one
        // at 10 ms exactly uses the second opportunity at 10 ms (period boundary: 10 + 0... the
        // trace has no 0, so the next is 11 ms).
        let d = run(
            &mut l,
            &[
                (0, P(1000, 0)),
                (0, P(1000, 1)),
                (2 * MS + MS / 2, P(200, 2)),
                (4 * MS, P(1500, 3)),
                (10 * MS, P(1500, 4)),
            ],
        );
        let times: Vec<u64> = d.iter().map(|x| x.0 / MS).collect();
        assert_eq!(times, vec![1, 2, 3, 10, 11]);
    }

    #[test]
    fn trace_leftover_bytes_of_an_opportunity_are_not_banked() {
        let tr = MahimahiTrace::parse("1\n2\n", "t").unwrap();
        let mut l = Link::new(
            Capacity::Trace(Arc::new(tr)),
            Box::new(DropTail::new(QueueLimit::Unlimited)),
        );
        // 100 bytes use the 1 ms opportunity; a 1500-byte packet at 1.5 ms needs a whole
        // opportunity of its own (2 ms), the 1400 unused bytes at 1 ms are gone.
        let d = run(&mut l, &[(0, P(100, 0)), (MS + MS / 2, P(1500, 1))]);
        assert_eq!(d.iter().map(|x| x.0 / MS).collect::<Vec<_>>(), vec![1, 2]);
    }

    #[test]
    fn schedule_changes_rate_mid_packet() {
        let s = Schedule::parse("0s 8Mbps\n1ms 4Mbps\n", "s").unwrap();
        let mut l = Link::new(
            Capacity::Schedule(Arc::new(s)),
            Box::new(DropTail::new(QueueLimit::Unlimited)),
        );
        // 1500 bytes: 1000 in the first ms at 8 Mbps, 500 at 4 Mbps = 1 ms more.
        let d = run(&mut l, &[(0, P(1500, 0))]);
        assert_eq!(d[0].0, 2 * MS);
    }

    #[test]
    fn token_bucket_passes_a_burst_then_spaces_at_its_rate() {
        // 3000-byte bucket at 8 Mbit/s (1 byte per µs): two 1500-byte packets pass at once, the
        // third waits 1.5 ms for tokens, the fourth another 1.5 ms.
        let cap = Capacity::TokenBucket {
            rate: Rate(8e6),
            burst: 3000,
            line_rate: Rate(f64::INFINITY),
            overhead: 0,
        };
        let mut l = Link::new(cap, Box::new(DropTail::new(QueueLimit::Unlimited)));
        let d = run(
            &mut l,
            &[
                (0, P(1500, 0)),
                (0, P(1500, 1)),
                (0, P(1500, 2)),
                (0, P(1500, 3)),
            ],
        );
        let us: Vec<u64> = d.iter().map(|x| x.0 / 1000).collect();
        assert_eq!(us, vec![0, 0, 1500, 3000]);
        // After 10 ms idle the bucket is full again (capped at 3000 bytes).
        let d = run(
            &mut l,
            &[
                (13 * MS, P(1500, 4)),
                (13 * MS, P(1500, 5)),
                (13 * MS, P(1500, 6)),
            ],
        );
        let us: Vec<u64> = d.iter().map(|x| x.0 / 1000).collect();
        assert_eq!(us, vec![13_000, 13_000, 14_500]);
    }

    #[test]
    fn token_bucket_bursts_at_the_line_rate_then_shapes_to_its_rate() {
        // The seed bbr_dash §6.1 and its E0 check: after an idle period of at least B/R, the first
        // B bytes leave at the line rate C, then the rate is R. R = 25 Mbit/s, B = 100 KB, C =
        // 1 Gbit/s, 1500-byte packets counted as 1514 bytes (Ethernet header).
        let (r, b, c) = (25e6, 100_000u64, 1e9);
        let cap = Capacity::TokenBucket {
            rate: Rate(r),
            burst: b,
            line_rate: Rate(c),
            overhead: 14,
        };
        let mut l = Link::new(cap, Box::new(DropTail::new(QueueLimit::Unlimited)));
        let arrivals: Vec<(u64, P)> = (0..400).map(|i| (0, P(1500, i))).collect();
        let d = run(&mut l, &arrivals);
        let burst_packets = (b / 1514) as usize; // 66 packets fit the full bucket
        let line_time = |n: usize| (n as f64 * 1514.0 * 8.0 / c * 1e9) as u64;
        // The burst: back to back at C (each 12.1 µs on a gigabit line), within 1 ns of rounding.
        for (i, &(t, _)) in d.iter().take(burst_packets).enumerate() {
            let expected = line_time(i + 1);
            assert!(
                t.abs_diff(expected) <= i as u64 + 1,
                "packet {i} of the burst left at {t} ns, not {expected} (line rate)"
            );
        }
        // Afterwards the spacing is one packet's tokens at R: 1514 B at 25 Mbit/s = 484.5 µs.
        let tail: Vec<u64> = d[200..400].iter().map(|x| x.0).collect();
        let spacing = (tail[199] - tail[0]) as f64 / 199.0;
        assert!(
            (spacing / (1514.0 * 8.0 / r * 1e9) - 1.0).abs() < 0.02,
            "after the burst packets should leave at the token rate: {spacing} ns apart"
        );
        // The rate over the first B/R seconds is R + B/(B/R): the burst doubles it.
        assert!(
            d[burst_packets].0 > line_time(burst_packets),
            "the bucket ran dry after {burst_packets} packets"
        );
    }

    #[test]
    fn a_netem_stage_delays_every_packet_before_the_bucket_and_drops_past_its_limit() {
        use crate::net::netem::NetemConfig;
        // 8 Mbit/s bucket of 3000 B (1 byte per µs), no line; a 10 ms stage holding 4 packets.
        let cap = Capacity::TokenBucket {
            rate: Rate(8e6),
            burst: 3000,
            line_rate: Rate(f64::INFINITY),
            overhead: 0,
        };
        let mut l = Link::new(cap, Box::new(DropTail::new(QueueLimit::Unlimited)))
            .with_netem(NetemConfig::new(Duration::from_millis(10), 4).unwrap());
        let mut out = LinkOutput::default();
        for i in 0..6 {
            l.enqueue(Time::ZERO, P(1500, i), &mut out);
        }
        // Two of six found the stage full; nothing reached the queue yet.
        assert_eq!(
            out.dropped.iter().map(|p| p.1).collect::<Vec<_>>(),
            vec![4, 5]
        );
        assert_eq!((l.queue().len_packets(), l.held_packets()), (0, 4));
        assert_eq!(l.next_event(), Some(Time(10 * MS)));
        let d = run(&mut l, &[]);
        // The bucket then releases two at once and spaces the rest at its rate, from 10 ms.
        let us: Vec<u64> = d.iter().map(|x| x.0 / 1000).collect();
        assert_eq!(us, vec![10_000, 10_000, 11_500, 13_000]);
        assert_eq!(
            d.iter().map(|x| x.1 .1).collect::<Vec<_>>(),
            vec![0, 1, 2, 3]
        );
        assert_eq!(l.netem().unwrap().drops, 2);
    }

    #[test]
    fn droptail_drops_what_does_not_fit() {
        let mut l = Link::new(
            Capacity::Constant(Rate(1e6)),
            Box::new(DropTail::new(QueueLimit::Packets(2))),
        );
        let mut out = LinkOutput::default();
        for i in 0..5 {
            l.enqueue(Time::ZERO, P(1000, i), &mut out);
        }
        // One in service, two queued, two dropped.
        assert_eq!(out.dropped.len(), 2);
        assert_eq!(l.queue().len_packets(), 2);
    }
}
