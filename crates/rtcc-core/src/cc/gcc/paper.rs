//! The `paper` profile: GCC as the seed describes it (GCC-AQM §2.2, Fig. 1), a delay-based
//! controller at the receiver that feeds back A_r in REMB messages and a loss-based controller
//! at the sender.
//!
//! Sender, Eq. (2), at each RTCP receiver report (fraction lost `f_l` since the previous one):
//!
//! ```text
//!            ⎧ A_s · (1 − 0.5 f_l)   if f_l > 0.1
//! A_s   ←   ⎨ 1.05 · A_s             if f_l < 0.02
//!            ⎩ A_s                    otherwise
//! ```
//!
//! then `A_s ← min(A_s, A_r)` with A_r the last REMB; each REMB also applies `A_s ← min(A_s, A_r)`
//! at once. The encoder target is A_s, within [min, max]; the pacer sends at 2.5 A_s (the paced
//! sender of the paper's Chrome).
//!
//! Structure in the simulator (a judgment call): the receiver side (`remb.rs`) runs inside
//! this controller on the per-packet receive times that transport-wide feedback carries, so
//! nothing in the simulator has to change. Its registry entry asks for feedback at the end of
//! every frame (and every 50 ms), so each frame reaches the receiver-side filter at the moment
//! the frame completes at the receiver plus the one-way trip of the feedback: exactly when a
//! REMB sent at that moment would arrive. RTCP receiver reports are emulated every 1 s (the video
//! RTCP interval; libwebrtc's `kLossUpdateInterval`) from the losses in the feedback since the
//! previous one, as an 8-bit fraction `min(255, ⌊256 · lost / expected⌋) / 256` (RFC 3550 §6.4.1).
//! RTT comes from the feedback (the newest packet's send time to the report's arrival).

use super::overuse::DetectorConfig;
use super::remb::{Arrival, RembReceiver};
use super::{GccConfig, OffsetScaling};
use crate::cc::{Controller, Decision};
use crate::packet::FeedbackReport;
use crate::units::{Duration, Rate, Time};

/// RTCP receiver-report interval.
pub const REPORT_INTERVAL: Duration = Duration(1_000_000_000);
/// Eq. (2) thresholds and factors.
pub const HIGH_LOSS: f64 = 0.1;
pub const LOW_LOSS: f64 = 0.02;
pub const INCREASE: f64 = 1.05;
/// Per-second increase factor η of the receiver's Increase state.
pub const ETA: f64 = 1.08;

/// Eq. (2) of the seed.
pub fn eq2(a_s: f64, fraction_lost: f64) -> f64 {
    if fraction_lost > HIGH_LOSS {
        a_s * (1.0 - 0.5 * fraction_lost)
    } else if fraction_lost < LOW_LOSS {
        INCREASE * a_s
    } else {
        a_s
    }
}

/// The RTCP fraction lost (8-bit fixed point).
pub fn fraction_lost(lost: u32, expected: u32) -> f64 {
    if expected == 0 {
        return 0.0;
    }
    ((lost as u64 * 256 / expected as u64).min(255)) as f64 / 256.0
}

pub struct PaperGcc {
    receiver: RembReceiver,
    a_s: f64,
    a_r: Option<f64>,
    min_bps: f64,
    max_bps: f64,
    pacing_factor: f64,
    expected: u32,
    lost: u32,
    next_report: Option<Time>,
    fraction: f64,
    rtt_ms: Option<f64>,
    last_arrival_ms: f64,
}

impl PaperGcc {
    pub fn new(cfg: &GccConfig) -> Self {
        let (min, max) = (cfg.min_bitrate.bps(), cfg.max_bitrate.bps());
        PaperGcc {
            receiver: RembReceiver::new(
                ETA,
                cfg.backoff,
                min,
                max,
                match cfg.offset_scaling.unwrap_or_default() {
                    OffsetScaling::Chrome => DetectorConfig::PAPER,
                    OffsetScaling::None => DetectorConfig::PAPER_LITERAL,
                },
            )
            .with_grouping(cfg.grouping.unwrap_or_default()),
            a_s: cfg.start_bitrate.bps(),
            a_r: None,
            min_bps: min,
            max_bps: max,
            pacing_factor: cfg.pacing_factor,
            expected: 0,
            lost: 0,
            next_report: None,
            fraction: 0.0,
            rtt_ms: None,
            last_arrival_ms: 0.0,
        }
    }

    fn limit(&mut self) {
        if let Some(r) = self.a_r {
            self.a_s = self.a_s.min(r);
        }
        self.a_s = self.a_s.clamp(self.min_bps, self.max_bps);
    }

    fn on_remb(&mut self, a_r: f64) {
        self.a_r = Some(a_r);
        self.limit();
    }

    fn on_receiver_report(&mut self) {
        self.fraction = fraction_lost(self.lost, self.expected);
        (self.lost, self.expected) = (0, 0);
        self.a_s = eq2(self.a_s, self.fraction);
        self.limit();
    }
}

impl Controller for PaperGcc {
    fn on_feedback(&mut self, now: Time, report: &FeedbackReport) {
        if let Some(rtt) = report.latest_rtt() {
            let ms = rtt.as_millis_f64();
            self.rtt_ms = Some(ms);
            self.receiver.set_rtt_ms(ms);
        }
        for p in &report.packets {
            self.expected += 1;
            let Some(receive_time) = p.receive_time else {
                self.lost += 1;
                continue;
            };
            self.last_arrival_ms = receive_time.as_millis_f64();
            let arrival = Arrival {
                receive_time,
                send_time: p.sent.send_time,
                size: p.sent.size,
                frame: p.sent.frame,
                end_of_frame: p.sent.is_last_of_frame(),
            };
            if let Some(a_r) = self.receiver.on_packet(&arrival) {
                self.on_remb(a_r);
            }
        }
        match self.next_report {
            None => self.next_report = Some(now + REPORT_INTERVAL),
            Some(t) if now >= t => {
                self.on_receiver_report();
                self.next_report = Some(now + REPORT_INTERVAL);
            }
            Some(_) => {}
        }
    }

    fn decision(&self) -> Decision {
        let target = Rate(self.a_s);
        Decision::rate_only(
            target,
            (self.pacing_factor > 0.0).then_some(Rate(self.a_s * self.pacing_factor)),
        )
    }

    fn state(&self, out: &mut Vec<(&'static str, f64)>) {
        if let Some(r) = self.a_r {
            out.push(("remb_bps", r));
        }
        if let Some(r) = self.receiver.estimate_bps() {
            out.push(("receiver_estimate_bps", r));
        }
        if let Some(r) = self.receiver.receive_rate_bps(self.last_arrival_ms) {
            out.push(("receive_rate_bps", r));
        }
        out.push(("offset_ms", self.receiver.offset_ms()));
        out.push(("threshold", self.receiver.threshold_ms()));
        out.push(("usage", self.receiver.usage().as_f64()));
        out.push(("rate_state", self.receiver.state().as_f64()));
        out.push(("noise_var", self.receiver.var_noise()));
        out.push(("loss_fraction", self.fraction));
        if let Some(r) = self.rtt_ms {
            out.push(("rtt_ms", r));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eq2_thresholds_are_exact() {
        assert_eq!(eq2(1000.0, 0.019), 1050.0);
        assert_eq!(eq2(1000.0, 0.0), 1050.0);
        assert_eq!(eq2(1000.0, 0.02), 1000.0, "2 % holds");
        assert_eq!(eq2(1000.0, 0.1), 1000.0, "10 % holds");
        assert_eq!(eq2(1000.0, 0.101), 1000.0 * (1.0 - 0.0505));
        assert_eq!(eq2(1000.0, 0.5), 750.0);
        // The fraction is the RTCP 8-bit value.
        assert_eq!(fraction_lost(1, 100), 2.0 / 256.0);
        assert_eq!(fraction_lost(26, 256), 26.0 / 256.0);
        assert_eq!(fraction_lost(5, 5), 255.0 / 256.0);
        assert_eq!(fraction_lost(0, 0), 0.0);
    }

    #[test]
    fn the_sender_rate_never_exceeds_the_last_remb() {
        let cfg: GccConfig =
            crate::cc::parse_config("gcc", &toml::from_str("profile = \"paper\"").unwrap())
                .unwrap();
        let mut g = PaperGcc::new(&cfg);
        assert_eq!(
            g.decision().target_bitrate,
            Rate(300e3),
            "the start bitrate"
        );
        // No REMB yet: Eq. (2) alone, +5 % on a loss-free report.
        (g.lost, g.expected) = (0, 40);
        g.on_receiver_report();
        assert_eq!(g.a_s, 315e3);
        g.on_remb(310e3);
        assert_eq!(g.a_s, 310e3);
        // A loss-free report asks for 325.5 kbps, capped at A_r.
        (g.lost, g.expected) = (0, 40);
        g.on_receiver_report();
        assert_eq!(g.a_s, 310e3);
        // 25 lost of 100: f = 64/256 = 25 %, A_s · (1 − 0.125).
        (g.lost, g.expected) = (25, 100);
        g.on_receiver_report();
        assert_eq!(g.a_s, 310e3 * 0.875);
        assert_eq!(g.decision().pacing_rate, Some(Rate(310e3 * 0.875 * 2.5)));
    }
}
