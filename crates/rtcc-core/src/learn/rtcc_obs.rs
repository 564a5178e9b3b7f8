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
//! | 8 | time since the newest arrival, seconds (0 right after feedback; grows in an outage) |
//!
//! Queuing delay is a packet's delay minus the smallest delay seen so far (so a clock offset
//! between the ends cancels). Intervals without packets give 0 for rates, delays and loss.

use super::ArrivalHistory;
use crate::units::{Duration, Rate};

pub const LEN: usize = 9;

/// Rate (Mbit/s), mean and largest queuing delay (ms), loss ratio over `(to − len, to]`.
fn window(history: &ArrivalHistory, to_ms: f64, len_ms: f64) -> (f64, f64, f64, f64) {
    let base = history.min_delay_ms().unwrap_or(0.0);
    let (mut bytes, mut n, mut lost, mut sum, mut max) = (0u64, 0u64, 0u64, 0.0, 0.0f64);
    for p in history.between(to_ms - len_ms, to_ms) {
        let q = p.delay_ms() - base;
        bytes += p.size as u64;
        n += 1;
        lost += p.lost_before;
        sum += q;
        max = max.max(q);
    }
    if n == 0 {
        return (0.0, 0.0, 0.0, 0.0);
    }
    let rate = bytes as f64 * 8.0 / (len_ms / 1000.0) / 1e6;
    (rate, sum / n as f64, max, lost as f64 / (lost + n) as f64)
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
