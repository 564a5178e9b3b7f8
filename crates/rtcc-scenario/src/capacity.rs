//! The capacity a flow sees along a path of several links (RFC 8867 §6.3, "Multiple
//! Bottlenecks": a parking lot in which a flow crosses more than one bottleneck).
//!
//! A packet that crosses links in series is limited, at each instant, by the slowest of them:
//! while the access link is the bottleneck the core link idles, and when the core link's rate
//! drops below the access link's the core link becomes the bottleneck. The path's capacity is
//! therefore the pointwise minimum of the links' rates, integrated over time — not the minimum
//! of their integrals, which would let a link that is slow early and one that is slow late
//! look like a fast path.
//!
//! The integral is exact for links whose rate is piecewise constant (constant rates,
//! schedules, token buckets counted at their long-run rate, unlimited links): the interval is
//! cut at every step of every link's schedule and each piece gets its slowest link's bytes. A
//! mahimahi trace delivers in 1 ms slots, so when a trace is among the links the interval is cut
//! at every millisecond and each millisecond gets the fewest bytes any link delivers in it.
//! A path of one link is that link's capacity, unchanged.

use rtcc_core::cc::CapacityView;
use rtcc_core::net::Capacity;
use rtcc_core::{Duration, Time};

/// The links one direction of a flow crosses, in any order (the minimum does not care).
#[derive(Debug, Clone)]
pub struct PathCapacity {
    links: Vec<Capacity>,
}

/// A trace's delivery slot: the finest grain on which a trace's rate is defined.
const TRACE_SLOT: Duration = Duration(1_000_000);

impl PathCapacity {
    /// A path of `links` (at least one).
    pub fn new(links: Vec<Capacity>) -> PathCapacity {
        assert!(!links.is_empty(), "a path has at least one link");
        PathCapacity { links }
    }

    /// The path's links.
    pub fn links(&self) -> &[Capacity] {
        &self.links
    }

    /// Whether no link limits the path.
    pub fn is_unlimited(&self) -> bool {
        self.links.iter().all(|c| matches!(c, Capacity::Unlimited))
    }

    /// Bytes the path can carry in `[from, to)`: the integral of its slowest link's rate.
    pub fn bytes_between(&self, from: Time, to: Time) -> f64 {
        if let [only] = self.links.as_slice() {
            return only.bytes_between(from, to);
        }
        if to <= from {
            return 0.0;
        }
        let mut cuts = vec![from, to];
        for link in &self.links {
            match link {
                Capacity::Schedule(s) => cuts.extend(
                    s.steps
                        .iter()
                        .map(|&(t, _)| t)
                        .filter(|&t| from < t && t < to),
                ),
                Capacity::Trace(_) => {
                    let mut t = Time((from.0 / TRACE_SLOT.0 + 1) * TRACE_SLOT.0);
                    while t < to {
                        cuts.push(t);
                        t += TRACE_SLOT;
                    }
                }
                Capacity::Unlimited | Capacity::Constant(_) | Capacity::TokenBucket { .. } => {}
            }
        }
        cuts.sort_unstable();
        cuts.dedup();
        cuts.windows(2)
            .map(|w| {
                self.links
                    .iter()
                    .map(|c| c.bytes_between(w[0], w[1]))
                    .fold(f64::INFINITY, f64::min)
            })
            .sum()
    }
}

impl CapacityView for PathCapacity {
    fn bytes_between(&self, from: Time, to: Time) -> f64 {
        PathCapacity::bytes_between(self, from, to)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtcc_core::net::Schedule;
    use rtcc_core::Rate;
    use std::sync::Arc;

    fn schedule(steps: &[(u64, f64)]) -> Capacity {
        let steps = steps
            .iter()
            .map(|&(s, bps)| (Time::from_millis(s * 1000), Rate(bps)))
            .collect();
        Capacity::Schedule(Arc::new(Schedule::new(steps, "test").unwrap()))
    }

    #[test]
    fn the_path_carries_its_slowest_link_at_each_instant() {
        // 4 Mbit/s then 1 Mbit/s from 10 s, behind a constant 2 Mbit/s link.
        let path = PathCapacity::new(vec![
            Capacity::Constant(Rate(2e6)),
            schedule(&[(0, 4e6), (10, 1e6)]),
        ]);
        let bytes = path.bytes_between(Time::ZERO, Time::from_millis(20_000));
        // 10 s at 2 Mbit/s + 10 s at 1 Mbit/s; the minimum of the integrals would be 30 Mbit.
        assert!(
            (bytes - (10.0 * 2e6 + 10.0 * 1e6) / 8.0).abs() < 1e-6,
            "{bytes}"
        );
        let unlimited = PathCapacity::new(vec![Capacity::Unlimited, Capacity::Unlimited]);
        assert!(unlimited.is_unlimited());
        assert_eq!(
            unlimited.bytes_between(Time::ZERO, Time::from_millis(5)),
            f64::INFINITY
        );
        let behind_unlimited =
            PathCapacity::new(vec![Capacity::Unlimited, Capacity::Constant(Rate(8e6))]);
        let b = behind_unlimited.bytes_between(Time::ZERO, Time::from_millis(1000));
        assert!((b - 1e6).abs() < 1e-6, "{b}");
    }

    #[test]
    fn a_trace_is_compared_slot_by_slot() {
        // One 1500-byte opportunity every other millisecond (at 2, 4, 6 and 8 ms in the first
        // 10 ms) against 8 Mbit/s (1000 bytes per millisecond): the path carries 1000 bytes in
        // each slot with an opportunity and none in the others.
        let trace = rtcc_core::net::MahimahiTrace::parse("2\n", "t").unwrap();
        let path = PathCapacity::new(vec![
            Capacity::Trace(Arc::new(trace)),
            Capacity::Constant(Rate(8e6)),
        ]);
        let b = path.bytes_between(Time::ZERO, Time::from_millis(10));
        assert!((b - 4.0 * 1000.0).abs() < 1e-6, "{b}");
    }
}
