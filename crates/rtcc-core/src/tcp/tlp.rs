//! Tail loss probes, RFC 8985 §7 as Linux runs them (`tcp_schedule_loss_probe`,
//! `tcp_send_loss_probe` in `net/ipv4/tcp_output.c`, `tcp_process_tlp_ack` in `tcp_input.c`).
//!
//! - When: the probe timer is armed in the Open state (no SACKed or lost packet outstanding, no
//!   loss recovery; Linux also probes in CWR, the ECN reduction, as rtcc does) with packets in
//!   flight, after new data is sent and after an ACK that advances the cumulative ACK; it
//!   replaces the RTO timer (the two, and RACK's reordering timer, are one timer in Linux).
//! - The probe timeout (§7.2, Linux): `PTO = 2·SRTT`, plus `TCP_RTO_MIN` (200 ms, RFC 8985's
//!   `WCDelAckT`: the receiver may be delaying the ACK of a lone segment) when one packet is in
//!   flight, plus `TCP_TIMEOUT_MIN` (2 ms) otherwise; 1 s (`TCP_TIMEOUT_INIT`) before any RTT
//!   sample; never later than the RTO would fire (a full RTO from now when an ACK arms it, the
//!   time left until the head's RTO when a send does).
//! - The probe (§7.3): one segment of new data if the application has some (sent even if the
//!   window is full), else a retransmission of the highest-numbered segment in flight. At most
//!   one probe is outstanding (`tlp_high_seq`, the `SND.NXT` after the probe): a new probe
//!   waits until the cumulative ACK passes it, or a loss recovery or RTO clears it. After a
//!   probe the RTO timer is restarted from now.
//! - Loss detection through the probe (§7.4): the probe's acknowledgement makes RACK mark the
//!   tail sent before it as lost (their deadline has passed by then), so fast recovery repairs
//!   the tail instead of an RTO; the loss is reported to the congestion controller, which
//!   reduces as for any loss (Linux reduces through CWR in `tcp_process_tlp_ack` when a
//!   retransmitted probe repaired the only loss; rtcc sees the original as lost once the probe
//!   is delivered and lets the controller reduce). If the original arrives as well, its piece of
//!   the stream is delivered twice (a DSACK): no loss.

use crate::rto::RTO_MIN;
use crate::units::Duration;

/// Linux `TCP_TIMEOUT_MIN` (2 jiffies at HZ=1000).
pub const TIMEOUT_MIN: Duration = Duration(2_000_000);
/// Linux `TCP_TIMEOUT_INIT`: the probe timeout before any RTT sample.
pub const TIMEOUT_INIT: Duration = Duration(1_000_000_000);

/// The probe timeout: `srtt`, the packets in flight, and how long until the RTO would fire.
pub fn pto(
    srtt: Option<Duration>,
    packets_in_flight: usize,
    rto_left: Option<Duration>,
) -> Duration {
    let pto = match srtt {
        Some(s) => {
            Duration(2 * s.0)
                + if packets_in_flight == 1 {
                    RTO_MIN
                } else {
                    TIMEOUT_MIN
                }
        }
        None => TIMEOUT_INIT,
    };
    match rto_left {
        Some(left) if left.0 > 0 => pto.min(left),
        _ => pto,
    }
}

/// What a probe sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Probe {
    NewData,
    /// A retransmission of this piece of the stream.
    Retransmit(u64),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_probe_timeout_follows_linux() {
        let ms = Duration::from_millis;
        assert_eq!(pto(Some(ms(50)), 10, Some(ms(300))), ms(102));
        assert_eq!(
            pto(Some(ms(50)), 1, Some(ms(1000))),
            ms(300),
            "one packet: room for a delayed ACK"
        );
        assert_eq!(
            pto(Some(ms(50)), 1, Some(ms(250))),
            ms(250),
            "not after the RTO"
        );
        assert_eq!(pto(None, 3, None), ms(1000));
    }
}
