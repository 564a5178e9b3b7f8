//! rtcc's own observation: nine values in physical units of about 1, chosen so that a small
//! policy can see throughput, queuing, loss and silence at two time scales without the 150
//! values of `mmsys24`.
//!
//! | index | value |
//! |---|---|
//! | 0 | receive rate over the last step, Mbit/s |
//! | 1 | receive rate over the last second, Mbit/s |
//! | 2 | mean queuing delay over the last step, 100 ms units |
//! | 3 | mean queuing delay over the last second, 100 ms units |
//! | 4 | largest queuing delay over the last step, 100 ms units |
//! | 5 | loss ratio over the last step |
//! | 6 | loss ratio over the last second |
//! | 7 | the last action, Mbit/s |
//! | 8 | how far the anchor has moved past the newest arrival, seconds: 0 while feedback comes, growing once it is `stale_after` (200 ms) late, as in an outage |
//!
//! Queuing delay is a packet's delay minus the smallest delay seen so far (so a clock offset
//! between the ends cancels). Intervals without packets give 0 for rates, delays and loss.

use super::ArrivalHistory;
use crate::units::{Duration, Rate};

pub const LEN: usize = 9;

/// Rate (Mbit/s), mean and largest queuing delay (ms), loss ratio over `(to − len, to]`.
fn window(history: &ArrivalHistory, to_ms: f64, len_ms: f64) -> (f64, f64, f64, f64) {
    let w = history.window(to_ms, len_ms, history.min_delay_ms().unwrap_or(0.0));
    let max = if w.packets == 0 { 0.0 } else { w.delay_max_ms };
    (
        w.rate_bps(len_ms) / 1e6,
        w.mean_delay_ms(),
        max,
        w.loss_ratio(),
    )
}

pub fn observe(
    history: &ArrivalHistory,
    anchor_ms: f64,
    step: Duration,
    last_action: Rate,
    out: &mut [f32],
) {
    assert_eq!(out.len(), LEN, "the rtcc observation has {LEN} values");
    let (rate_s, mean_s, max_s, loss_s) = window(history, anchor_ms, step.as_millis_f64());
    let (rate_l, mean_l, _, loss_l) = window(history, anchor_ms, 1000.0);
    let silence_s = history
        .newest_ms()
        .map_or(0.0, |t| (anchor_ms - t).max(0.0) / 1000.0);
    let values = [
        rate_s,
        rate_l,
        mean_s / 100.0,
        mean_l / 100.0,
        max_s / 100.0,
        loss_s,
        loss_l,
        last_action.mbps(),
        silence_s,
    ];
    for (o, v) in out.iter_mut().zip(values) {
        *o = v as f32;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::learn::PacketClass;

    #[test]
    fn rates_queuing_loss_action_and_silence() {
        let mut h = ArrivalHistory::default();
        h.push(500.0, 480.0, 1000, 0, PacketClass::Video); // 20 ms: the base
        h.push(950.0, 900.0, 1500, 3, PacketClass::Video); // 50 ms: 30 queued, 2 lost before
        let mut out = [0.0; LEN];
        observe(&h, 1000.0, Duration::from_millis(100), Rate(2e6), &mut out);
        let want = [
            1500.0 * 8.0 / 0.1 / 1e6, // step: the second packet only
            2500.0 * 8.0 / 1e6,       // last second: both
            0.30,                     // 30 ms of queuing in the step
            0.15,                     // mean of 0 and 30 over the second
            0.30,
            2.0 / 3.0,
            2.0 / 4.0,
            2.0,
            0.05, // 50 ms since the newest arrival
        ];
        for (i, (o, w)) in out.iter().zip(want).enumerate() {
            assert!((*o as f64 - w).abs() < 1e-6, "value {i}: {o} != {w}");
        }
    }
}
