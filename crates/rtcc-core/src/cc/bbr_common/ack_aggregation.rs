//! ACK aggregation (Linux `bbr_update_ack_aggregation`, `bbr_extra_acked`,
//! `bbr_ack_aggregation_cwnd`): receivers and links that acknowledge in bursts deliver more data
//! in an interval than the bandwidth estimate allows for, and a window of one BDP would then
//! stall the sender until the next burst. Both versions add to the window target the largest
//! recent excess of acknowledged data over `bw × epoch` ("extra acked"), capped at
//! [`EXTRA_ACKED_MAX`] of the estimate; v1 does so once the pipe is full, v2 also in STARTUP
//! (over a shorter window of rounds there).

use crate::units::{Duration, Time};

/// Linux `bbr_extra_acked_win_rtts` = 5, `bbr_extra_acked_max_us` = 100 ms,
/// `bbr_ack_epoch_acked_reset_thresh` = 2^20 packets.
pub(crate) const EXTRA_ACKED_WIN_RTTS: u32 = 5;
pub(crate) const EXTRA_ACKED_MAX: Duration = Duration(100_000_000);
pub(crate) const ACK_EPOCH_RESET_PACKETS: u64 = 1 << 20;

/// Linux `bbr_update_ack_aggregation` / `bbr_extra_acked`: the largest excess of acknowledged
/// data over `bw × epoch` in the last one or two windows of rounds. Counts are in the caller's
/// unit (`unit` of them per packet: bytes for v1, packets for v2) and `bw` is in those units per
/// second.
#[derive(Debug, Clone)]
pub(crate) struct AckAggregation {
    extra_acked: [u64; 2],
    win_rtts: u32,
    idx: usize,
    epoch_stamp: Time,
    epoch_acked: u64,
}

impl AckAggregation {
    pub fn new(now: Time) -> AckAggregation {
        AckAggregation {
            extra_acked: [0; 2],
            win_rtts: 0,
            idx: 0,
            epoch_stamp: now,
            epoch_acked: 0,
        }
    }

    /// Restart the sampling epoch (Linux `bbr_cwnd_event(CA_EVENT_TX_START)`).
    pub fn restart_epoch(&mut self, now: Time) {
        self.epoch_stamp = now;
        self.epoch_acked = 0;
    }

    /// `max(extra_acked[0], extra_acked[1])`.
    pub fn max(&self) -> u64 {
        self.extra_acked[0].max(self.extra_acked[1])
    }

    /// One ACK that acknowledged `acked` and produced a valid rate sample. `now` is the
    /// delivery time (`delivered_mstamp`), `win_rtts` the window length in rounds.
    #[allow(clippy::too_many_arguments)]
    pub fn update(
        &mut self,
        round_start: bool,
        win_rtts: u32,
        acked: u64,
        now: Time,
        bw: f64,
        cwnd: u64,
        unit: u64,
    ) {
        if round_start {
            self.win_rtts = (self.win_rtts + 1).min(31);
            if self.win_rtts >= win_rtts {
                self.win_rtts = 0;
                self.idx ^= 1;
                self.extra_acked[self.idx] = 0;
            }
        }
        let epoch = (now - self.epoch_stamp).as_secs_f64();
        let mut expected = (bw * epoch) as u64;
        let reset = ACK_EPOCH_RESET_PACKETS * unit;
        if self.epoch_acked <= expected || self.epoch_acked + acked >= reset {
            self.epoch_acked = 0;
            self.epoch_stamp = now;
            expected = 0;
        }
        self.epoch_acked = (self.epoch_acked + acked).min(reset - unit);
        let extra = self.epoch_acked.saturating_sub(expected).min(cwnd);
        let slot = &mut self.extra_acked[self.idx];
        *slot = (*slot).max(extra);
    }

    /// The window allowance: [`Self::max`] capped at [`EXTRA_ACKED_MAX`] of `bw` (in the
    /// caller's unit per second).
    pub fn allowance(&self, bw: f64) -> u64 {
        let max = (bw * EXTRA_ACKED_MAX.as_secs_f64()) as u64;
        self.max().min(max)
    }
}
