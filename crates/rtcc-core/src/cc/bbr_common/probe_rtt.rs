//! PROBE_RTT's timer, the same in v1 and v2 (Linux `bbr_update_min_rtt`,
//! `bbr_check_probe_rtt_done`): once in PROBE_RTT, wait until inflight is down to the mode's
//! window, then hold it for [`PROBE_RTT_TIME`] and at least one round. What the window is, and
//! what leaving PROBE_RTT restores, differ between the versions and stay with them.

use super::PROBE_RTT_TIME;
use crate::units::Time;

/// What an ACK in PROBE_RTT means for the timer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ProbeRttAck {
    /// Inflight just reached the mode's window: the 200 ms start, and so does a new round.
    Drained,
    /// A round has passed since: the mode may end once the 200 ms are over.
    RoundDone,
    /// Still draining, or within the first round.
    Waiting,
}

/// Linux `probe_rtt_done_stamp` and `probe_rtt_round_done`, and the number of PROBE_RTTs.
#[derive(Debug, Clone, Default)]
pub(crate) struct ProbeRtt {
    done: Option<Time>,
    round_done: bool,
    count: u64,
}

impl ProbeRtt {
    /// PROBE_RTT starts: the timer waits for inflight to drain.
    pub fn enter(&mut self) {
        self.done = None;
        self.count += 1;
    }

    /// An ACK at `now` in PROBE_RTT: `drained` when inflight is at most the mode's window,
    /// `round_start` when the ACK starts a round.
    pub fn on_ack(&mut self, now: Time, drained: bool, round_start: bool) -> ProbeRttAck {
        if self.done.is_none() && drained {
            self.done = Some(now + PROBE_RTT_TIME);
            self.round_done = false;
            return ProbeRttAck::Drained;
        }
        if self.done.is_some() {
            self.round_done |= round_start;
            if self.round_done {
                return ProbeRttAck::RoundDone;
            }
        }
        ProbeRttAck::Waiting
    }

    /// Whether the 200 ms after inflight drained are over at `now`.
    pub fn elapsed(&self, now: Time) -> bool {
        self.done.is_some_and(|d| now > d)
    }

    /// PROBE_RTTs entered so far.
    pub fn count(&self) -> u64 {
        self.count
    }
}
