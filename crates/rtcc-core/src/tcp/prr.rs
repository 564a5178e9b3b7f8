//! Proportional rate reduction in fast recovery, RFC 6937 §3 (RFC 9937 makes it a standard) as
//! Linux runs it (`tcp_cwnd_reduction`, `tcp_init_cwnd_reduction` and `tcp_end_cwnd_reduction`
//! in `net/ipv4/tcp_input.c`; `prr_out` counted in `tcp_output.c`).
//!
//! On every acknowledgement of the recovery the window becomes what is in flight (RFC 6675's
//! `pipe`, in packets) plus `sndcnt`:
//! - while more than `ssthresh` is in flight (§3 "proportional" part):
//!   `sndcnt = ceil(ssthresh · prr_delivered / RecoverFS) − prr_out`, so the sender sends
//!   `ssthresh / RecoverFS` of what is delivered; Linux's `RecoverFS` is `prior_cwnd`, the
//!   window when the recovery began;
//! - at or below `ssthresh`, the conservative reduction bound (§3, PRR-CRB):
//!   `sndcnt = max(prr_delivered − prr_out, newly delivered)`, with the slow-start bound's
//!   (PRR-SSRB) one packet more when the acknowledgement advanced the cumulative ACK without a
//!   new loss (RFC 9937's "safe ACK"), at most `ssthresh − pipe`;
//! - the first acknowledgement always sends one packet (`prr_out == 0`: "force a fast
//!   retransmit upon entering fast recovery").
//!
//! `prr_delivered` counts packets newly delivered, SACKed or cumulatively acknowledged, not
//! DSACKs. An acknowledgement that delivers nothing leaves the window as it was. When the
//! recovery ends the controller's window is `ssthresh` again (`tcp_end_cwnd_reduction`): the
//! sender stops consulting PRR and the controller did not grow its window during the recovery.

/// PRR's state for one fast recovery, in packets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Prr {
    /// `RecoverFS`: the window when the recovery began (Linux `prior_cwnd`).
    prior_cwnd: u64,
    /// `prr_delivered`, `prr_out`.
    delivered: u64,
    out: u64,
    /// The packets allowed in flight until the next acknowledgement.
    cwnd: u64,
}

impl Prr {
    /// A recovery begins with `prior_cwnd` packets of window and `pipe` packets in flight.
    pub fn new(prior_cwnd: u64, pipe: u64) -> Prr {
        Prr {
            prior_cwnd: prior_cwnd.max(1),
            delivered: 0,
            out: 0,
            cwnd: pipe + 1,
        }
    }

    /// The packets allowed in flight.
    pub fn cwnd(&self) -> u64 {
        self.cwnd
    }

    /// A packet (new or retransmitted) left during the recovery.
    pub fn on_sent(&mut self) {
        self.out += 1;
    }

    /// An acknowledgement delivered `newly` packets and marked `newly_lost` lost; `pipe` is
    /// what is in flight after it and `ssthresh` the controller's reduced window, both in
    /// packets.
    pub fn on_ack(
        &mut self,
        newly: u64,
        newly_lost: u64,
        una_advanced: bool,
        ssthresh: u64,
        pipe: u64,
    ) {
        if newly == 0 {
            return;
        }
        self.delivered += newly;
        let (ssthresh, pipe) = (ssthresh as i64, pipe as i64);
        let (delivered, out, prior) = (
            self.delivered as i64,
            self.out as i64,
            self.prior_cwnd as i64,
        );
        let delta = ssthresh - pipe;
        let mut sndcnt = if delta < 0 {
            (ssthresh * delivered + prior - 1) / prior - out
        } else {
            let mut n = (delivered - out).max(newly as i64);
            if una_advanced && newly_lost == 0 {
                n += 1;
            }
            n.min(delta)
        };
        if self.out == 0 {
            sndcnt = sndcnt.max(1);
        }
        self.cwnd = (pipe + sndcnt.max(0)) as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn above_ssthresh_it_sends_ssthresh_over_recover_fs_of_what_is_delivered() {
        // A 20-packet window halved to 10 (Reno), one packet delivered per acknowledgement.
        let mut p = Prr::new(20, 19);
        let mut pipe = 19;
        let mut sent = 0;
        for _ in 0..8 {
            pipe -= 1;
            p.on_ack(1, 0, false, 10, pipe);
            while pipe < p.cwnd() {
                p.on_sent();
                pipe += 1;
                sent += 1;
            }
        }
        assert_eq!(sent, 4, "one packet for every two delivered");
    }

    #[test]
    fn the_first_ack_sends_the_fast_retransmit() {
        let mut p = Prr::new(20, 19);
        p.on_ack(1, 0, false, 10, 18);
        assert_eq!(p.cwnd(), 19, "ceil(10 / 20) = 1 packet");
        let mut q = Prr::new(100, 99);
        q.on_ack(1, 0, false, 10, 98);
        assert_eq!(q.cwnd(), 99, "ceil(10 / 100) = 1, forced anyway");
    }

    #[test]
    fn below_ssthresh_it_sends_what_is_delivered_and_one_more_on_progress() {
        let mut p = Prr::new(20, 4);
        p.on_ack(2, 0, false, 10, 2);
        assert_eq!(p.cwnd(), 4, "as much as was delivered");
        p.on_sent();
        p.on_sent();
        p.on_ack(2, 0, true, 10, 2);
        assert_eq!(p.cwnd(), 5, "+1 when the cumulative ACK advanced");
        p.on_ack(2, 1, true, 10, 2);
        assert_eq!(
            p.cwnd(),
            6,
            "not with a new loss: prr_delivered − prr_out = 4"
        );
        p.on_ack(20, 0, true, 10, 2);
        assert_eq!(p.cwnd(), 10, "never above ssthresh");
        p.on_ack(0, 0, true, 10, 0);
        assert_eq!(p.cwnd(), 10, "an ACK that delivers nothing changes nothing");
    }
}
