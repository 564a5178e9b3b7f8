//! BBR's pacing (Linux `bbr_init_pacing_rate_from_rtt`, `bbr_set_pacing_rate`,
//! `bbr_tso_segs_goal`, `bbr_packets_in_net_at_edt`), the same computation in v1 and v2:
//!
//! ```text
//! pacing_rate = pacing_gain × bw × (1 − 1 %)
//! ```
//!
//! Before the first RTT sample the rate is `2.885 × initial cwnd / 1 ms`; the first smoothed RTT
//! re-derives it from the window, and until the pipe is full it never decreases. The send quantum
//! is about 1 ms of data at that rate, and the packets in flight are read at the next packet's
//! earliest departure time: less what the estimate delivers until then, plus a quantum while
//! probing (gain above 1). Units are the caller's: v1 counts bytes, v2 packets.

use super::HIGH_GAIN;
use crate::units::{Duration, Rate, Time};

/// Linux `bbr_pacing_margin_percent` = 1.
pub(crate) const PACING_MARGIN: f64 = 0.01;
/// Linux `bbr_min_tso_rate` (bit/s), `sk_pacing_shift` default (10: 1/1024 s of data), GSO
/// size cap (`GSO_MAX_SIZE` 64 KB less `MAX_TCP_HEADER`), and the 0x7F cap of the v1
/// `bbr_tso_segs_goal`.
pub(crate) const MIN_TSO_RATE: f64 = 1_200_000.0;
pub(crate) const PACING_SHIFT_DIV: f64 = 1024.0;
pub(crate) const GSO_MAX_SIZE: u64 = 65_536;
pub(crate) const GSO_MAX_BYTES: u64 = GSO_MAX_SIZE - 1 - 320;
pub(crate) const MAX_TSO_SEGS: u64 = 127;
/// `bbr_init_pacing_rate_from_rtt`'s nominal RTT before any sample.
pub(crate) const NOMINAL_RTT: Duration = Duration(1_000_000);

/// Linux `bbr_bw_to_pacing_rate`: `gain × bw × (1 − 1 %)`, `bw` in bytes per second.
pub(crate) fn bw_to_pacing(bw: f64, gain: f64) -> Rate {
    Rate(bw * 8.0 * gain * (1.0 - PACING_MARGIN))
}

/// Linux `bbr_tso_segs_goal` in packets of `mss` bytes: about 1 ms of data at the pacing rate
/// (`sk_pacing_shift` = 10) plus `extra` bytes (v2's min-RTT allowance), capped at one GSO
/// super-packet, at least 1 packet below 1.2 Mbit/s and 2 above, at most 127. With no
/// segmentation offload a quantum is whole packets.
pub(crate) fn tso_segs_goal(pacing_rate: Rate, mss: u64, extra: u64) -> u64 {
    let bytes = ((pacing_rate.bps() / 8.0 / PACING_SHIFT_DIV) as u64 + extra).min(GSO_MAX_BYTES);
    let min = if pacing_rate.bps() < MIN_TSO_RATE {
        1
    } else {
        2
    };
    (bytes / mss).max(min).min(MAX_TSO_SEGS)
}

/// The pacing rate and the departure time it gives the next packet.
#[derive(Debug, Clone)]
pub(crate) struct Pacing {
    rate: Rate,
    has_seen_rtt: bool,
    next_departure: Time,
}

impl Pacing {
    /// At `now`, before any RTT sample, with a window of `cwnd_bytes`.
    pub fn new(now: Time, cwnd_bytes: u64) -> Pacing {
        let mut p = Pacing {
            rate: Rate::ZERO,
            has_seen_rtt: false,
            next_departure: now,
        };
        p.init_from_rtt(None, cwnd_bytes);
        p
    }

    pub fn rate(&self) -> Rate {
        self.rate
    }

    /// Linux `bbr_init_pacing_rate_from_rtt`: the STARTUP gain times one window per smoothed RTT
    /// (a nominal 1 ms before the first).
    fn init_from_rtt(&mut self, srtt: Option<Duration>, cwnd_bytes: u64) {
        let rtt = match srtt {
            Some(s) => {
                self.has_seen_rtt = true;
                s.max(Duration(1_000))
            }
            None => NOMINAL_RTT,
        };
        self.rate = bw_to_pacing(cwnd_bytes as f64 / rtt.as_secs_f64(), HIGH_GAIN);
    }

    /// Linux `bbr_set_pacing_rate`: `gain × bw` (bytes per second), re-derived from the window
    /// at the first smoothed RTT, and never lowered before the pipe is full.
    pub fn set(
        &mut self,
        bw: f64,
        gain: f64,
        srtt: Option<Duration>,
        cwnd_bytes: u64,
        full_bw_reached: bool,
    ) {
        let rate = bw_to_pacing(bw, gain);
        if !self.has_seen_rtt && srtt.is_some() {
            self.init_from_rtt(srtt, cwnd_bytes);
        }
        if full_bw_reached || rate.bps() > self.rate.bps() {
            self.rate = rate;
        }
    }

    /// A packet of `size` bytes left at `now`: the next may leave one transmission time later.
    pub fn on_sent(&mut self, now: Time, size: u32) {
        let gap = if self.rate.bps() > 0.0 {
            self.rate.transmit_time(size as u64)
        } else {
            Duration::ZERO
        };
        self.next_departure = self.next_departure.max(now) + gap;
    }

    /// Linux `bbr_packets_in_net_at_edt`: `inflight` less what `bw` (units per second) delivers
    /// before the next departure, plus one `quantum` while `pacing_gain` probes above 1.
    pub fn in_net_at_edt(
        &self,
        now: Time,
        inflight: u64,
        bw: f64,
        pacing_gain: f64,
        quantum: u64,
    ) -> u64 {
        let ahead = self.next_departure.max(now) - now;
        let delivered = (bw * ahead.as_secs_f64()) as u64;
        let mut at_edt = inflight;
        if pacing_gain > 1.0 {
            at_edt += quantum;
        }
        at_edt.saturating_sub(delivered)
    }
}
