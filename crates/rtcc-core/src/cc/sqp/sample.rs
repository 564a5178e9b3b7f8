//! SQP's bandwidth sample of one frame (SQP §4.2, Eq. 1 and Eq. 2) and its loss scaling.
//!
//! A frame is a paced packet train. Its first packet leaves at `S_start` (sender clock); its
//! first and last packets arrive at `R_start` and `R_end` (receiver clock). With `Δ_min` the
//! smallest one-way delay (receive − send) of the recent packets, Eq. 1 is
//!
//! ```text
//!   S = F / (R_end − S_start − Δ_min)
//!     = F / ((R_end − R_start) + (Δ_first − Δ_min))
//! ```
//!
//! the train's dispersion plus the extra queuing its first packet met compared with the recent
//! minimum (the "transient queue" penalty). `Δ_min` and `R_end − S_start` carry the same clock
//! offset, so it cancels; the subtraction is done in whole nanoseconds, so the cancellation is
//! exact and a sample does not depend on the receiver's clock offset at all.
//!
//! Eq. 2 extrapolates an undershooting frame (size `F` smaller than the `F_max` the estimate
//! would give) to its full size: with `γ = F_max / F`,
//!
//! ```text
//!   S = F·γ / (R_end − S_start − Δ_min + (R_end − R_start)·(γ − 1))
//! ```
//!
//! which with `γ = 1` is Eq. 1 exactly. The penalty is not scaled with the frame, only the
//! dispersion is.
//!
//! Loss (§4.2, "Overutilization Sample"): "SQP scales down its samples by the fraction of lost
//! packets": `S ← S · (1 − lost / total)`, with `F` the frame's full size and `R_end` the last
//! packet that did arrive.

use crate::units::Time;

/// One frame's packet train as the interval tracker saw it once every packet was reported.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FrameTrain {
    /// Bytes on the wire of all the frame's packets, received or not (`F`).
    pub bytes: u64,
    /// Bytes of the frame's first packet (for the `after_first` numerator).
    pub first_packet_bytes: u64,
    /// Bytes of the packets that arrived, and of the first of them.
    pub recv_bytes: u64,
    pub first_recv_bytes: u64,
    /// Sender clock: when the frame's first packet left (`S_start`).
    pub send_start: Time,
    /// Receiver clock: arrival of the first and last packets that arrived (`R_start`, `R_end`).
    pub recv_start: Option<Time>,
    pub recv_end: Option<Time>,
    /// Packets in the frame and how many of them were lost.
    pub packets: u32,
    pub lost: u32,
    /// Smallest one-way delay (receive − send, ns) among this frame's received packets.
    pub min_owd_ns: Option<i128>,
}

/// Signed `a − b` in nanoseconds (the two instants may be on different clocks).
pub fn diff_ns(a: Time, b: Time) -> i128 {
    a.0 as i128 - b.0 as i128
}

/// Eq. 2 (Eq. 1 when `gamma == 1` and `span_scale == 1`): the bandwidth sample in bit/s of a
/// train of `bits` bits, or `None` when the denominator is not positive (a one-packet frame on
/// an idle path: the sample is undefined). `span_scale` multiplies the receive-side dispersion
/// `R_end − R_start` (see [`first_packet_scale`]).
pub fn bandwidth_sample(
    bits: f64,
    gamma: f64,
    span_scale: f64,
    send_start: Time,
    recv_start: Time,
    recv_end: Time,
    min_owd_ns: i128,
) -> Option<f64> {
    // R_end − S_start − Δ_min, exact in integer nanoseconds (the clock offset cancels).
    let span = diff_ns(recv_end, send_start) - min_owd_ns;
    let dispersion = diff_ns(recv_end, recv_start);
    let den_ns = span as f64 + dispersion as f64 * (gamma * span_scale - 1.0);
    (den_ns > 0.0).then(|| bits * gamma / (den_ns * 1e-9))
}

/// The scale that turns a train's dispersion into the time its bottleneck took to deliver all
/// of it: `R_end − R_start` spans the arrivals *after* the first packet, so at the train's own
/// receive rate the whole train took `(R_end − R_start) · received / (received − first)`.
/// This is the `T_d` of Eq. 5–6 at packet level. 1 when there is nothing after the first packet.
pub fn first_packet_scale(recv_bytes: u64, first_recv_bytes: u64) -> f64 {
    if recv_bytes > first_recv_bytes {
        recv_bytes as f64 / (recv_bytes - first_recv_bytes) as f64
    } else {
        1.0
    }
}

/// The undershoot correction factor `γ = F_max / F`, never below 1 (an overshooting frame uses
/// Eq. 1: extrapolating it *down* would hide the overshoot the delay penalty should see).
pub fn undershoot_gamma(f_max_bytes: f64, frame_bytes: u64) -> f64 {
    if frame_bytes == 0 {
        return 1.0;
    }
    (f_max_bytes / frame_bytes as f64).max(1.0)
}

/// Loss scaling: the sample times the fraction of the frame's packets that arrived.
pub fn loss_scaled(sample: f64, packets: u32, lost: u32) -> f64 {
    if packets == 0 {
        return sample;
    }
    sample * (1.0 - lost.min(packets) as f64 / packets as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: f64) -> Time {
        Time((v * 1e6).round() as u64)
    }

    #[test]
    fn eq1_is_frame_bits_over_dispersion_plus_queuing_penalty() {
        // 30 000 bytes sent from t = 0; received from 20 ms to 32 ms; Δ_min = 20 ms, so the
        // denominator is 12 ms: 240 kbit / 12 ms = 20 Mbit/s.
        let s =
            bandwidth_sample(240_000.0, 1.0, 1.0, ms(0.0), ms(20.0), ms(32.0), 20_000_000).unwrap();
        assert!((s - 20e6).abs() < 1e-6, "{s}");
        // The first packet met 3 ms more queue than the minimum: 240 kbit / 15 ms = 16 Mbit/s.
        let s =
            bandwidth_sample(240_000.0, 1.0, 1.0, ms(0.0), ms(23.0), ms(35.0), 20_000_000).unwrap();
        assert!((s - 16e6).abs() < 1e-6, "{s}");
    }

    #[test]
    fn eq2_with_gamma_one_is_eq1_and_matches_its_rewritten_form() {
        let (s0, r0, r1, dmin) = (ms(3.0), ms(27.5), ms(33.25), 22_000_000i128);
        let bits = 96_000.0;
        let eq1 = bits / ((diff_ns(r1, s0) - dmin) as f64 * 1e-9);
        assert_eq!(
            bandwidth_sample(bits, 1.0, 1.0, s0, r0, r1, dmin),
            Some(eq1),
            "γ = 1 gives Eq. 1 bit for bit"
        );
        // Rewritten: S = γF / (q0 + γ·D), q0 = Δ_first − Δ_min, D = R_end − R_start.
        for gamma in [1.0, 1.5, 4.0] {
            let q0 = (diff_ns(r0, s0) - dmin) as f64 * 1e-9;
            let d = diff_ns(r1, r0) as f64 * 1e-9;
            let rewritten = gamma * bits / (q0 + gamma * d);
            let s = bandwidth_sample(bits, gamma, 1.0, s0, r0, r1, dmin).unwrap();
            assert!((s - rewritten).abs() <= 1e-9 * rewritten, "γ={gamma}");
        }
    }

    #[test]
    fn eq2_extrapolates_a_small_frames_dispersion_not_its_penalty() {
        // A quarter-size frame (γ = 4) with 2 ms dispersion and a 5 ms penalty: the full frame
        // would have taken 8 ms to disperse, so the sample is 4F / (5 + 8) ms.
        let bits = 40_000.0;
        let s = bandwidth_sample(bits, 4.0, 1.0, ms(0.0), ms(25.0), ms(27.0), 20_000_000).unwrap();
        assert!((s - 4.0 * bits / 0.013).abs() < 1e-6);
        // Eq. 1 on the same frame reads it as 40 kbit / 7 ms, far below the link rate.
        let s1 = bandwidth_sample(bits, 1.0, 1.0, ms(0.0), ms(25.0), ms(27.0), 20_000_000).unwrap();
        assert!(s1 < s);
    }

    #[test]
    fn a_sample_does_not_depend_on_the_receivers_clock_offset() {
        // The same train with the receiver's clock 1 s ahead, and with it 1 s behind the
        // sender's (both clocks start far from 0 so the times stay positive).
        let base = 5_000_000_000u64;
        let one_s = 1_000_000_000u64;
        let at = |t: f64, off: i64| Time((base as i64 + (t * 1e6) as i64 + off) as u64);
        let mut samples = Vec::new();
        for off in [0i64, one_s as i64, -(one_s as i64)] {
            let dmin = 20_000_000i128 + off as i128;
            samples.push(
                bandwidth_sample(
                    123_456.0,
                    1.7,
                    1.0,
                    at(1.0, 0),
                    at(22.0, off),
                    at(29.5, off),
                    dmin,
                )
                .unwrap(),
            );
        }
        assert_eq!(samples[0], samples[1]);
        assert_eq!(samples[0], samples[2]);
    }

    #[test]
    fn degenerate_trains_give_no_sample_and_gamma_is_at_least_one() {
        // One packet, no queue: R_end − S_start − Δ_min = 0.
        assert_eq!(
            bandwidth_sample(9600.0, 1.0, 1.0, ms(0.0), ms(20.0), ms(20.0), 20_000_000),
            None
        );
        assert_eq!(undershoot_gamma(1000.0, 4000), 1.0, "overshoot uses Eq. 1");
        assert_eq!(undershoot_gamma(4000.0, 1000), 4.0);
        assert_eq!(undershoot_gamma(4000.0, 0), 1.0);
    }

    #[test]
    fn loss_scales_the_sample_by_the_fraction_received() {
        assert_eq!(loss_scaled(10e6, 20, 0), 10e6);
        assert_eq!(loss_scaled(10e6, 20, 5), 7.5e6);
        assert_eq!(loss_scaled(10e6, 20, 20), 0.0);
        assert_eq!(loss_scaled(10e6, 0, 0), 10e6);
    }
}
