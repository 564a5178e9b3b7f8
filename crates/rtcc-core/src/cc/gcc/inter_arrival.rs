//! Inter-arrival packet grouping (`webrtc` profile): turns per-packet send and receive times
//! into per-group deltas, the input of the trendline estimator.
//!
//! A pacer sends a frame as a short burst; single packets inside it are too close together to
//! carry a delay signal, so packets are grouped by send time: a group holds the packets sent
//! within 5 ms of its first packet. The group's send time is its latest send time and its
//! arrival ("complete") time its latest arrival. When a packet opens a new group, the two
//! previous groups give one sample: `Δsend = send(g) − send(g−1)`,
//! `Δarrival = complete(g) − complete(g−1)` and the size difference.
//!
//! Burst handling: a packet that arrives at most 5 ms after the group's last arrival while its
//! *propagation delta* (`Δarrival − Δsend` against the group's last packet) is negative joins
//! the group whatever its send time, as long as the group has not spanned 100 ms of arrivals.
//! Such packets sat in a queue together (e.g. released at once after a radio outage) and carry
//! no information about each other; packets sent at the very same instant always join. A
//! packet sent before the current group's first packet is reordered and ignored; a group that
//! arrives before the previous one (negative `Δarrival`) is dropped, and after 3 such groups in
//! a row the state is reset.
//!
//! Constants (libwebrtc `goog_cc/inter_arrival_delta.cc`, `delay_based_bwe.cc`):
//! `kTimestampGroupLengthMs = 5`, `kBurstDeltaThreshold = 5 ms`, `kMaxBurstDuration = 100 ms`,
//! `kReorderedResetThreshold = 3`. libwebrtc sends 24-bit absolute send times and reads receive
//! times in whole milliseconds; the simulator's exact times are used as they are.

use crate::units::Time;

/// Send-time span of a group, ns.
pub const GROUP_LENGTH_NS: i64 = 5_000_000;
/// Largest arrival gap of a burst packet, ns.
pub const BURST_DELTA_NS: i64 = 5_000_000;
/// Longest burst, ns.
pub const MAX_BURST_NS: i64 = 100_000_000;
/// Consecutive reordered groups before a reset.
pub const REORDERED_RESET: u32 = 3;

/// One sample: deltas between two consecutive groups.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Deltas {
    pub send_ms: f64,
    pub arrival_ms: f64,
    pub size: i64,
}

#[derive(Debug, Clone, Copy)]
struct Group {
    first_send: Time,
    send: Time,
    first_arrival: Time,
    complete: Time,
    size: u64,
}

#[derive(Debug, Clone, Default)]
pub struct InterArrival {
    current: Option<Group>,
    prev: Option<Group>,
    reordered: u32,
}

/// Signed `a − b` in ns.
fn diff(a: Time, b: Time) -> i64 {
    (a.0 as i128 - b.0 as i128) as i64
}

impl InterArrival {
    pub fn reset(&mut self) {
        *self = InterArrival::default();
    }

    /// Add a packet (send time on the sender's clock, arrival on the receiver's). Returns the
    /// deltas of the two previous groups when this packet opens a new group.
    pub fn on_packet(&mut self, send: Time, arrival: Time, size: u32) -> Option<Deltas> {
        let Some(mut cur) = self.current else {
            self.current = Some(Group {
                first_send: send,
                send,
                first_arrival: arrival,
                complete: arrival,
                size: size as u64,
            });
            return None;
        };
        if send < cur.first_send {
            return None; // reordered packet
        }
        let mut out = None;
        if self.is_new_group(&cur, send, arrival) {
            if let Some(prev) = self.prev {
                let arrival_ns = diff(cur.complete, prev.complete);
                if arrival_ns < 0 {
                    self.reordered += 1;
                    if self.reordered >= REORDERED_RESET {
                        self.reset();
                    }
                    return None;
                }
                self.reordered = 0;
                out = Some(Deltas {
                    send_ms: diff(cur.send, prev.send) as f64 / 1e6,
                    arrival_ms: arrival_ns as f64 / 1e6,
                    size: cur.size as i64 - prev.size as i64,
                });
            }
            self.prev = Some(cur);
            cur = Group {
                first_send: send,
                send,
                first_arrival: arrival,
                complete: arrival,
                size: 0,
            };
        } else {
            cur.send = cur.send.max(send);
        }
        cur.size += size as u64;
        cur.complete = arrival;
        self.current = Some(cur);
        out
    }

    fn is_new_group(&self, cur: &Group, send: Time, arrival: Time) -> bool {
        if Self::belongs_to_burst(cur, send, arrival) {
            return false;
        }
        diff(send, cur.first_send) > GROUP_LENGTH_NS
    }

    fn belongs_to_burst(cur: &Group, send: Time, arrival: Time) -> bool {
        let arrival_delta = diff(arrival, cur.complete);
        let send_delta = diff(send, cur.send);
        if send_delta == 0 {
            return true;
        }
        let propagation_delta = arrival_delta - send_delta;
        propagation_delta < 0
            && arrival_delta <= BURST_DELTA_NS
            && diff(arrival, cur.first_arrival) < MAX_BURST_NS
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: f64) -> Time {
        Time((v * 1e6).round() as u64)
    }

    #[test]
    fn groups_packets_sent_within_5ms_and_reports_deltas_of_complete_groups() {
        let mut ia = InterArrival::default();
        // Group A: sent at 0, 2, 4 ms (arrive 20 ms later, spaced as sent).
        for s in [0.0, 2.0, 4.0] {
            assert_eq!(ia.on_packet(ms(s), ms(s + 20.0), 1000), None);
        }
        // Group B opens at 10 ms (more than 5 ms after A's first packet): A is complete but
        // there is no earlier group yet.
        assert_eq!(ia.on_packet(ms(10.0), ms(31.0), 1200), None);
        assert_eq!(ia.on_packet(ms(12.0), ms(34.0), 1200), None);
        // Group C opens at 20 ms: deltas of B against A.
        let d = ia.on_packet(ms(20.0), ms(45.0), 500).unwrap();
        assert_eq!(d.send_ms, 12.0 - 4.0);
        assert_eq!(d.arrival_ms, 34.0 - 24.0);
        assert_eq!(d.size, 2400 - 3000);
    }

    #[test]
    fn a_burst_that_arrives_together_joins_the_group() {
        let mut ia = InterArrival::default();
        ia.on_packet(ms(0.0), ms(100.0), 1000);
        // Sent 30 ms later but arrived 1 ms after the group (it waited in a queue with it):
        // negative propagation delta, so it is part of the burst.
        assert_eq!(ia.on_packet(ms(30.0), ms(101.0), 1000), None);
        assert_eq!(ia.on_packet(ms(60.0), ms(102.0), 1000), None);
        // A packet arriving 10 ms later starts a new group; the next one closes it.
        assert_eq!(ia.on_packet(ms(90.0), ms(112.0), 1000), None);
        let d = ia.on_packet(ms(120.0), ms(140.0), 1000).unwrap();
        assert_eq!(
            (d.send_ms, d.arrival_ms, d.size),
            (90.0 - 60.0, 10.0, -2000)
        );
        // A packet sent before the current group's first one is ignored.
        assert_eq!(ia.on_packet(ms(100.0), ms(141.0), 1000), None);
    }
}
