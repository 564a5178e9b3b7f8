//! ECN codepoints from the receiver back to the sender, packet by packet.
//!
//! Transport-wide feedback (what rtcc's acknowledgements carry) has no room for ECN, so a
//! receiver that reports codepoints sends an RFC 8888 report on the same sequence numbers *first*
//! in the same compound packet, and the sender keeps its codepoints until the transport-wide
//! feedback joins them ([`EcnReport`]). The arrival times come from the transport-wide feedback;
//! the RFC 8888 report's own are filled in but not read.
//!
//! Video receivers do this when their flow uses ECN (RFC 6679 with RFC 8888 feedback), TCP
//! receivers when their flow is L4S: per-packet codepoints are what Accurate ECN (RFC 9768)
//! gives a scalable TCP sender, where RFC 3168's ECN-Echo gives one bit per round trip.

use super::unwrap_near;
use crate::packet::{Ecn, TransportFeedback};
use crate::wire::rtcp::ccfb::MAX_REPORTS;
use crate::wire::rtcp::{ntp_middle32, ntp_time, CcfbBlock, CcfbMetric, CcfbReport, RtcpPacket};

/// The RFC 8888 reports carrying `fb`'s codepoints (one per at most [`MAX_REPORTS`] sequence
/// numbers), appended to `out`. Arrival offsets are against the newest arrival reported.
pub(super) fn push_ecn_reports(
    out: &mut Vec<RtcpPacket>,
    sender_ssrc: u32,
    media_ssrc: u32,
    fb: &TransportFeedback,
) {
    if fb.ecn.is_empty() {
        return;
    }
    let report_time = fb.receive_times.iter().flatten().max().copied();
    let report_time = report_time.unwrap_or_default();
    for (k, times) in fb.receive_times.chunks(MAX_REPORTS).enumerate() {
        let from = k * MAX_REPORTS;
        let mut block = CcfbBlock::from_receive_times(
            media_ssrc,
            (fb.base_seq + from as u64) as u16,
            times,
            report_time,
        );
        for (m, ecn) in block.metrics.iter_mut().zip(&fb.ecn[from..]) {
            if let Some(CcfbMetric { ecn: bits, .. }) = m {
                *bits = ecn.bits();
            }
        }
        out.push(RtcpPacket::Ccfb(CcfbReport {
            sender_ssrc,
            blocks: vec![block],
            report_timestamp: ntp_middle32(ntp_time(report_time)),
        }));
    }
}

/// The sender's side: the codepoints of the last RFC 8888 report, until the transport-wide
/// feedback on the same packets takes them.
#[derive(Debug, Clone, Default)]
pub(super) struct EcnReport {
    base: u64,
    codepoints: Vec<Ecn>,
}

impl EcnReport {
    /// Keep an RFC 8888 report's codepoints; `newest_seq` is the newest transport-wide sequence
    /// number sent, near which the report's 16-bit numbers are unwrapped.
    pub fn on_report(&mut self, report: &CcfbReport, newest_seq: u64) {
        for block in &report.blocks {
            self.base = unwrap_near(newest_seq, block.begin_seq as u64, 16);
            self.codepoints = block
                .metrics
                .iter()
                .map(|m| m.map_or(Ecn::NotEct, |m| Ecn::from_bits(m.ecn)))
                .collect();
        }
    }

    /// The codepoints for `len` packets from `base` (Not-ECT for any the report did not cover);
    /// empty when there is no report. What the report holds up to `base + len` is used up; the
    /// rest waits for the next transport-wide message (one acknowledgement split in several).
    pub fn take(&mut self, base: u64, len: usize) -> Vec<Ecn> {
        if self.codepoints.is_empty() {
            return Vec::new();
        }
        let from = self.base;
        let got = (base..base + len as u64)
            .map(|seq| {
                seq.checked_sub(from)
                    .and_then(|i| self.codepoints.get(i as usize).copied())
                    .unwrap_or(Ecn::NotEct)
            })
            .collect();
        let used = ((base + len as u64).saturating_sub(from) as usize).min(self.codepoints.len());
        self.codepoints.drain(..used);
        self.base = from + used as u64;
        got
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_split_over_two_acknowledgements_keeps_its_marks_for_the_second() {
        let mut r = EcnReport {
            base: 100,
            codepoints: vec![Ecn::Ect1, Ecn::Ce, Ecn::Ect1, Ecn::Ce],
        };
        assert_eq!(r.take(100, 2), [Ecn::Ect1, Ecn::Ce]);
        assert_eq!(r.take(102, 2), [Ecn::Ect1, Ecn::Ce]);
        assert!(r.take(104, 2).is_empty(), "used up");
        // Packets the report did not cover read Not-ECT.
        let mut r = EcnReport {
            base: 10,
            codepoints: vec![Ecn::Ce, Ecn::Ce],
        };
        assert_eq!(r.take(11, 3), [Ecn::Ce, Ecn::NotEct, Ecn::NotEct]);
    }
}
