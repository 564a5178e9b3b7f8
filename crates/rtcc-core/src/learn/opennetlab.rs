//! OpenNetLab gym's observation (OpenNetLab/gym-example, `rtc_env.py` and `packet_record.py`, the
//! MMSys 2021 challenge's reinforcement-learning example): four values over the last step,
//!
//! 0. receive rate, `bytes · 8 / step`, mapped to 0..1 on a log scale from 10 kbit/s to 8 Mbit/s;
//! 1. mean delay in seconds, capped at 1, where delays are counted from the first packet's
//!    (OpenNetLab shifts the first packet's delay to its `base_delay_ms`, 0 in the example);
//! 2. loss ratio `lost / (lost + received)`, a packet's lost count being the gap in sequence
//!    numbers before it;
//! 3. the last action (bandwidth estimate), on the same log scale as 0.
//!
//! The example's step (`step_time`) is 60 ms, as the agent's default here. Sizes are the
//! packets' bytes on the wire (OpenNetLab reads the RTP payload size). [`log_scale`] and
//! [`from_log_scale`] are the example's `liner_to_log` and `log_to_linear`.

use super::ArrivalHistory;
use crate::units::{Duration, Rate};

pub const LEN: usize = 4;
/// The log scale's ends, Mbit/s.
pub const MIN_MBPS: f64 = 0.01;
pub const MAX_MBPS: f64 = 8.0;

/// A rate in bit/s to 0..1 (clipped to 10 kbit/s..8 Mbit/s first).
pub fn log_scale(bps: f64) -> f64 {
    let mbps = (bps / 1e6).clamp(MIN_MBPS, MAX_MBPS);
    (mbps.ln() - MIN_MBPS.ln()) / (MAX_MBPS.ln() - MIN_MBPS.ln())
}

/// 0..1 (clipped) back to bit/s.
pub fn from_log_scale(x: f64) -> f64 {
    let x = x.clamp(0.0, 1.0);
    (x * (MAX_MBPS.ln() - MIN_MBPS.ln()) + MIN_MBPS.ln()).exp() * 1e6
}

pub fn observe(
    history: &ArrivalHistory,
    anchor_ms: f64,
    step: Duration,
    last_action: Rate,
    out: &mut [f32],
) {
    assert_eq!(
        out.len(),
        LEN,
        "the opennetlab observation has {LEN} values"
    );
    let step_ms = step.as_millis_f64();
    let w = history.window(anchor_ms, step_ms, history.first_delay_ms().unwrap_or(0.0));
    let n = w.packets;
    let rate = w.rate_bps(step_ms);
    let delay_s = w.mean_delay_ms() / 1000.0;
    let loss = w.loss_ratio();
    out[0] = if n > 0 { log_scale(rate) as f32 } else { 0.0 };
    out[1] = delay_s.min(1.0) as f32;
    out[2] = loss as f32;
    out[3] = log_scale(last_action.bps()) as f32;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::learn::PacketClass;

    #[test]
    fn the_log_scale_maps_its_ends_and_round_trips() {
        assert_eq!(log_scale(10e3), 0.0);
        assert_eq!(log_scale(8e6), 1.0);
        assert_eq!(log_scale(100e6), 1.0, "clipped");
        let x = log_scale(1e6);
        assert!((from_log_scale(x) - 1e6).abs() < 1e-6);
    }

    #[test]
    fn rate_delay_loss_and_action_over_the_step() {
        let mut h = ArrivalHistory::default();
        h.push(100.0, 50.0, 1000, 0, PacketClass::Video); // first delay 50 ms
        h.push(150.0, 80.0, 1000, 2, PacketClass::Video); // 70 ms: 20 after the first, 1 lost
        let mut out = [0.0; LEN];
        observe(&h, 200.0, Duration::from_millis(100), Rate(2e6), &mut out);
        // (100, 200] holds the second packet only: 8000 bits in 0.1 s = 80 kbit/s.
        assert!((out[0] as f64 - log_scale(80e3)).abs() < 1e-6);
        assert!((out[1] - 0.020).abs() < 1e-7);
        assert_eq!(out[2], 0.5);
        assert!((out[3] as f64 - log_scale(2e6)).abs() < 1e-6);
    }
}
