//! What matters for an audio flow beyond loss and one-way delay (which every flow's summary
//! has): RFC 3550's interarrival jitter.
//!
//! RFC 3550 §6.4.1 (and its code in Appendix A.8): for each packet `i` received, in order of
//! arrival, with the packet received just before it `i − 1`, the difference of their spacing at
//! the receiver and at the sender is
//!
//! ```text
//! D(i−1, i) = (R_i − R_{i−1}) − (S_i − S_{i−1})
//! J ← J + (|D(i−1, i)| − J) / 16
//! ```
//!
//! where `R` is the arrival time and `S` the packet's RTP timestamp, both in the same units;
//! `J` starts at 0. An audio packet's timestamp is its sampling instant, and rtcc's audio sender
//! sends each packet at that instant, so `S` is the send time here. The 1/16 gain is RFC 3550's
//! ("a good noise reduction ratio while maintaining a reasonable rate of convergence").
//!
//! `J` is a running estimate; an RTCP receiver report carries its value at that moment. The
//! summary gives its mean over the flow's packets (what reports sampled through the call would
//! average to) and its maximum.

use crate::units::Time;
use serde::Serialize;

/// An audio flow's jitter ([`summarize`]); `None`s with fewer than two packets received.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct AudioSummary {
    /// Mean of RFC 3550's `J` after each received packet (from the second on), in ms.
    pub jitter_mean_ms: Option<f64>,
    /// Largest `J`, in ms.
    pub jitter_max_ms: Option<f64>,
}

/// RFC 3550's `J` after each packet from the second on, in ms: `transits` are (receive, send)
/// times, in any order (they are taken in order of arrival; packets arriving at the same instant
/// in the order given).
pub fn interarrival_jitter(transits: &[(Time, Time)]) -> Vec<f64> {
    let mut by_arrival = transits.to_vec();
    by_arrival.sort_by_key(|&(r, _)| r);
    let mut j = 0.0;
    by_arrival
        .windows(2)
        .map(|w| {
            let (r0, s0) = (w[0].0 .0 as f64, w[0].1 .0 as f64);
            let (r1, s1) = (w[1].0 .0 as f64, w[1].1 .0 as f64);
            let d = (r1 - r0) - (s1 - s0);
            j += (d.abs() - j) / 16.0;
            j / 1e6
        })
        .collect()
}

pub fn summarize(transits: &[(Time, Time)]) -> AudioSummary {
    let j = interarrival_jitter(transits);
    AudioSummary {
        jitter_mean_ms: (!j.is_empty()).then(|| j.iter().sum::<f64>() / j.len() as f64),
        jitter_max_ms: j.iter().copied().reduce(f64::max),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constant_transit_has_no_jitter_and_one_late_packet_follows_the_estimator() {
        let ms = Time::from_millis;
        let steady: Vec<(Time, Time)> = (0..10).map(|k| (ms(20 * k + 30), ms(20 * k))).collect();
        assert_eq!(summarize(&steady).jitter_max_ms, Some(0.0));
        // The fourth packet arrives 16 ms late: |D| = 16 then 16 again (the next one is on
        // time, so its spacing is 16 ms short); J = 1, then 1 + 15/16.
        let mut late = steady.clone();
        late[3].0 += crate::units::Duration::from_millis(16);
        let j = interarrival_jitter(&late);
        assert_eq!(&j[..4], &[0.0, 0.0, 1.0, 1.0 + 15.0 / 16.0]);
        assert!(
            (j[4] - (1.0 + 15.0 / 16.0) * 15.0 / 16.0).abs() < 1e-12,
            "decays by 15/16"
        );
        // Taken in order of arrival, whatever the order given.
        let mut shuffled = late.clone();
        shuffled.reverse();
        assert_eq!(interarrival_jitter(&shuffled), j);
        assert_eq!(summarize(&late[..1]).jitter_mean_ms, None);
    }
}
