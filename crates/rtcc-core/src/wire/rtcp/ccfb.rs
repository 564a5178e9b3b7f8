//! RFC 8888 RTP congestion control feedback (§3.1; RTPFB, PT 205, FMT 11).
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! |V=2|P| FMT=11  |   PT = 205    |          length               |
//! |                 SSRC of RTCP packet sender                    |
//! |                   SSRC of 1st RTP Stream                      |
//! |          begin_seq            |          num_reports          |
//! |R|ECN|  Arrival time offset    | ...                           .
//! .                                                               .
//! |                   SSRC of nth RTP Stream                      |
//! |          begin_seq            |          num_reports          |
//! |R|ECN|  Arrival time offset    | ...                           |
//! |                 Report Timestamp (32 bits)                    |
//! ```
//!
//! One *block* per RTP stream reports `num_reports` consecutive sequence numbers from
//! `begin_seq` (wrapping at 2^16), one 16-bit metric each: `R` = received; `ECN` = the 2 ECN bits
//! the packet arrived with; the arrival time offset (ATO), 13 bits in 1/1024 s, says how long
//! *before* the report timestamp the packet arrived. Each block is padded to 32 bits with a zero
//! metric when `num_reports` is odd. The report timestamp (RTS) is the middle 32 bits of an NTP
//! timestamp ([`ntp_middle32`](super::ntp_middle32)) of when the report was built; it ends the
//! packet, so blocks are delimited only by the packet's length.
//!
//! Two ATO values are special (RFC 8888 §3.1): [`ATO_OVER_RANGE`] (0x1FFE) means the packet
//! arrived at least 0x1FFE/1024 s (≈ 8 s) before the RTS, and [`ATO_UNAVAILABLE`] (0x1FFF) that
//! its arrival time is unknown (or after the RTS). With R = 0 the ECN and ATO bits are ignored
//! (written as 0). rtcc caps `num_reports` at [`MAX_REPORTS`] (16384, RFC 8888 §3.1's limit), so
//! a block never covers an ambiguous quarter or more of the sequence space.

use super::{be16, be32, begin, finish, need, parse_as, RtcpPacket, WireError, FMT_CCFB, PT_RTPFB};
use crate::units::{Duration, Time};
use crate::wire::NS_PER_S;

/// Most reports one block may carry.
pub const MAX_REPORTS: usize = 16384;
/// ATO meaning "at least 0x1FFE/1024 s before the report timestamp".
pub const ATO_OVER_RANGE: u16 = 0x1FFE;
/// ATO meaning "arrival time unavailable".
pub const ATO_UNAVAILABLE: u16 = 0x1FFF;
/// Largest ATO that is a time.
pub const ATO_MAX_TIME: u16 = 0x1FFD;
/// ATO units per second.
pub const ATO_PER_SECOND: u64 = 1024;
/// Bytes of a block's header: SSRC, begin_seq, num_reports.
const BLOCK_HEADER_LEN: usize = 8;
/// Bit of a metric that marks the packet received.
const RECEIVED_BIT: u16 = 0x8000;

/// One packet's metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CcfbMetric {
    /// The 2 ECN bits of the IP header the packet arrived with.
    pub ecn: u8,
    /// 13 bits, 1/1024 s before the report timestamp; [`ATO_OVER_RANGE`] and
    /// [`ATO_UNAVAILABLE`] are special.
    pub arrival_time_offset: u16,
}

/// The reports on one RTP stream.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CcfbBlock {
    pub media_ssrc: u32,
    pub begin_seq: u16,
    /// One per sequence number from `begin_seq`; None = not received (R = 0).
    pub metrics: Vec<Option<CcfbMetric>>,
}

/// A congestion control feedback packet.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CcfbReport {
    pub sender_ssrc: u32,
    pub blocks: Vec<CcfbBlock>,
    /// Middle 32 bits of the NTP time the report was built (`ntp_middle32(ntp_time(t))`).
    pub report_timestamp: u32,
}

/// ATO of an arrival at `t` for a report built at `report_time`: rounded to the nearest
/// 1/1024 s, [`ATO_OVER_RANGE`] past 0x1FFD, [`ATO_UNAVAILABLE`] if after `report_time`.
pub fn arrival_time_offset(t: Time, report_time: Time) -> u16 {
    if t > report_time {
        return ATO_UNAVAILABLE;
    }
    let ns = u128::from(report_time.0 - t.0);
    let ato = (ns * u128::from(ATO_PER_SECOND) + u128::from(NS_PER_S / 2)) / u128::from(NS_PER_S);
    if ato > u128::from(ATO_MAX_TIME) {
        ATO_OVER_RANGE
    } else {
        ato as u16
    }
}

/// The duration `ato` 1/1024 s stands for (rounded to the nearest ns); None for the special
/// values.
pub fn ato_duration(ato: u16) -> Option<Duration> {
    (ato <= ATO_MAX_TIME)
        .then(|| Duration((u64::from(ato) * NS_PER_S + ATO_PER_SECOND / 2) / ATO_PER_SECOND))
}

impl CcfbBlock {
    /// A block for `times[i]` = arrival of `begin_seq + i` (None = not received), measured
    /// against a report built at `report_time`; ECN is reported as 0 (Not-ECT).
    pub fn from_receive_times(
        media_ssrc: u32,
        begin_seq: u16,
        times: &[Option<Time>],
        report_time: Time,
    ) -> CcfbBlock {
        CcfbBlock {
            media_ssrc,
            begin_seq,
            metrics: times
                .iter()
                .map(|t| {
                    t.map(|t| CcfbMetric {
                        ecn: 0,
                        arrival_time_offset: arrival_time_offset(t, report_time),
                    })
                })
                .collect(),
        }
    }

    /// Arrival times against a report built at `report_time` (the time whose
    /// `ntp_middle32(ntp_time(..))` is the report timestamp), quantised to 1/1024 s. None for a
    /// packet not received **and** for one received whose time the wire does not carry
    /// ([`ATO_OVER_RANGE`], [`ATO_UNAVAILABLE`], or a time before 0): tell them apart with
    /// `self.metrics[i].is_some()`, the received flag.
    pub fn receive_times(&self, report_time: Time) -> Vec<Option<Time>> {
        self.metrics
            .iter()
            .map(|m| {
                let d = ato_duration((*m)?.arrival_time_offset)?;
                report_time.0.checked_sub(d.0).map(Time)
            })
            .collect()
    }

    fn encoded_len(&self) -> usize {
        BLOCK_HEADER_LEN + 2 * self.metrics.len().next_multiple_of(2)
    }
}

fn bad(detail: String) -> WireError {
    WireError::Inconsistent {
        what: "RFC 8888 feedback",
        detail,
    }
}

impl CcfbReport {
    /// Bytes [`CcfbReport::encode`] appends.
    pub fn encoded_len(&self) -> usize {
        4 + 4
            + self
                .blocks
                .iter()
                .map(CcfbBlock::encoded_len)
                .sum::<usize>()
            + 4
    }

    /// Append the packet. Fails (leaving `out` unchanged) when a block has more than
    /// [`MAX_REPORTS`] metrics, an ECN value does not fit 2 bits or an ATO 13 bits, or the packet
    /// is too long for the length field.
    pub fn encode(&self, out: &mut Vec<u8>) -> Result<(), WireError> {
        for b in &self.blocks {
            if b.metrics.len() > MAX_REPORTS {
                return Err(bad(format!(
                    "{} reports in a block, at most {MAX_REPORTS}",
                    b.metrics.len()
                )));
            }
            for m in b.metrics.iter().flatten() {
                if m.ecn > 3 || m.arrival_time_offset > ATO_UNAVAILABLE {
                    return Err(bad(format!(
                        "ECN {} / ATO {:#x} do not fit 2 / 13 bits",
                        m.ecn, m.arrival_time_offset
                    )));
                }
            }
        }
        let start = begin(out, FMT_CCFB, PT_RTPFB);
        out.extend_from_slice(&self.sender_ssrc.to_be_bytes());
        for b in &self.blocks {
            out.extend_from_slice(&b.media_ssrc.to_be_bytes());
            out.extend_from_slice(&b.begin_seq.to_be_bytes());
            out.extend_from_slice(&(b.metrics.len() as u16).to_be_bytes());
            for m in &b.metrics {
                let w = match m {
                    None => 0,
                    Some(m) => RECEIVED_BIT | (u16::from(m.ecn) << 13) | m.arrival_time_offset,
                };
                out.extend_from_slice(&w.to_be_bytes());
            }
            if b.metrics.len() % 2 == 1 {
                out.extend_from_slice(&[0, 0]);
            }
        }
        out.extend_from_slice(&self.report_timestamp.to_be_bytes());
        finish(out, start, "RFC 8888 feedback", false)
    }

    /// Parse the body (after the common header, padding removed): the sender SSRC, blocks that
    /// exactly fill the space before the 4-byte report timestamp, the timestamp.
    pub fn parse_body(body: &[u8]) -> Result<CcfbReport, WireError> {
        need("RFC 8888 feedback", body, 8)?;
        let end = body.len() - 4;
        let mut blocks = Vec::new();
        let mut at = 4;
        while at < end {
            let region = &body[..end];
            need("RFC 8888 report block", region, at + BLOCK_HEADER_LEN)?;
            let num = be16(region, at + 6) as usize;
            if num > MAX_REPORTS {
                return Err(bad(format!(
                    "{num} reports in a block, at most {MAX_REPORTS}"
                )));
            }
            let metrics_at = at + BLOCK_HEADER_LEN;
            let next = metrics_at + 2 * num.next_multiple_of(2);
            need("RFC 8888 metrics", region, next)?;
            let metrics = (0..num)
                .map(|i| {
                    let w = be16(region, metrics_at + 2 * i);
                    (w & RECEIVED_BIT != 0).then_some(CcfbMetric {
                        ecn: ((w >> 13) & 0x3) as u8,
                        arrival_time_offset: w & 0x1FFF,
                    })
                })
                .collect();
            blocks.push(CcfbBlock {
                media_ssrc: be32(region, at),
                begin_seq: be16(region, at + 4),
                metrics,
            });
            at = next;
        }
        Ok(CcfbReport {
            sender_ssrc: be32(body, 0),
            blocks,
            report_timestamp: be32(body, end),
        })
    }

    /// Parse a datagram holding exactly this one packet.
    pub fn parse(packet: &[u8]) -> Result<CcfbReport, WireError> {
        parse_as(packet, "RFC 8888 feedback", |p| match p {
            RtcpPacket::Ccfb(n) => Some(n),
            _ => None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::rtcp::{ntp_middle32, ntp_time, parse_compound};

    fn report() -> (CcfbReport, Time, Vec<Option<Time>>) {
        let now = Time::from_millis(60_000);
        let times = vec![
            Some(Time::from_millis(59_990)),
            None,
            Some(Time::from_millis(59_995)),
            Some(Time(now.0 - 1)),
            Some(Time::from_millis(50_000)), // 10 s ago: over range
        ];
        let r = CcfbReport {
            sender_ssrc: 77,
            blocks: vec![
                CcfbBlock::from_receive_times(0xA, 65534, &times, now),
                CcfbBlock::from_receive_times(0xB, 10, &times[..2], now),
            ],
            report_timestamp: ntp_middle32(ntp_time(now)),
        };
        (r, now, times)
    }

    #[test]
    fn round_trips_blocks_with_odd_and_even_report_counts() {
        let (r, _, _) = report();
        let mut out = Vec::new();
        r.encode(&mut out).unwrap();
        assert_eq!(out.len(), r.encoded_len());
        assert_eq!(
            out.len(),
            4 + 4 + (8 + 6 * 2) + (8 + 2 * 2) + 4,
            "odd count padded"
        );
        assert_eq!(&out[..2], &[0x8B, 205], "RTPFB FMT 11");
        assert_eq!(CcfbReport::parse(&out).unwrap(), r);
    }

    #[test]
    fn converts_receive_times_with_1024th_second_resolution() {
        let (r, now, times) = report();
        let b = &r.blocks[0];
        assert_eq!(
            b.metrics[0].unwrap().arrival_time_offset,
            10,
            "10 ms ≈ 10.24/1024 s → 10"
        );
        assert_eq!(
            b.metrics[3].unwrap().arrival_time_offset,
            0,
            "1 ns before: 0"
        );
        assert_eq!(b.metrics[4].unwrap().arrival_time_offset, ATO_OVER_RANGE);
        let back = b.receive_times(now);
        for (i, (t, got)) in times.iter().zip(&back).enumerate().take(4) {
            match (t, got) {
                (Some(t), Some(g)) => assert!(
                    t.0.abs_diff(g.0) <= NS_PER_S / 2048 + 1,
                    "report {i}: within half of 1/1024 s"
                ),
                (None, None) => {}
                _ => panic!("report {i}: received flag changed"),
            }
        }
        assert_eq!(back[4], None, "over range: no time...");
        assert!(b.metrics[4].is_some(), "...but the metric says received");
        assert_eq!(
            arrival_time_offset(Time(now.0 + 1), now),
            ATO_UNAVAILABLE,
            "an arrival after the report time is unavailable (RFC 8888 §3.1)"
        );
        assert_eq!(ato_duration(1024), Some(Duration(1_000_000_000)));
        assert_eq!(ato_duration(ATO_UNAVAILABLE), None);
    }

    #[test]
    fn begin_seq_wraps_and_r0_ignores_other_bits() {
        let mut out = Vec::new();
        CcfbReport {
            sender_ssrc: 1,
            blocks: vec![CcfbBlock {
                media_ssrc: 2,
                begin_seq: 65535,
                metrics: vec![None, None],
            }],
            report_timestamp: 3,
        }
        .encode(&mut out)
        .unwrap();
        out[16] = 0x7F; // R = 0 with ECN and ATO bits set
        let p = CcfbReport::parse(&out).unwrap();
        assert_eq!(p.blocks[0].begin_seq, 65535);
        assert_eq!(
            p.blocks[0].metrics,
            vec![None, None],
            "R = 0 is not received"
        );
    }

    #[test]
    fn rejects_malformed_reports() {
        let (r, _, _) = report();
        let mut out = Vec::new();
        r.encode(&mut out).unwrap();
        for n in 0..out.len() {
            assert!(
                matches!(parse_compound(&out[..n]), Err(WireError::Truncated { .. })),
                "a packet cut to {n} bytes is truncated"
            );
        }
        // The first block claims 9 reports instead of 5: its metrics run into the next block,
        // and what is left cannot hold a block header.
        let mut more = out.clone();
        more[15] = 9;
        let e = CcfbReport::parse(&more).unwrap_err();
        assert!(
            matches!(
                e,
                WireError::Truncated {
                    what: "RFC 8888 report block",
                    ..
                } | WireError::Truncated {
                    what: "RFC 8888 metrics",
                    ..
                }
            ),
            "blocks that do not fill the packet exactly: {e:?}"
        );
        // num_reports far beyond the packet.
        let mut huge = out.clone();
        huge[14..16].copy_from_slice(&100u16.to_be_bytes());
        assert!(matches!(
            CcfbReport::parse(&huge),
            Err(WireError::Truncated {
                what: "RFC 8888 metrics",
                ..
            })
        ));
        let mut over = out.clone();
        over[14..16].copy_from_slice(&20000u16.to_be_bytes());
        assert!(
            matches!(
                CcfbReport::parse(&over),
                Err(WireError::Inconsistent { .. })
            ),
            "more than 16384 reports in a block are rejected"
        );
        assert!(matches!(
            CcfbReport::parse_body(&[0; 7]),
            Err(WireError::Truncated { .. })
        ));
        let empty = CcfbReport::parse_body(&[0, 0, 0, 1, 0, 0, 0, 2]).unwrap();
        assert_eq!(empty.blocks.len(), 0, "a report without blocks is valid");
        assert_eq!(empty.report_timestamp, 2);
    }

    #[test]
    fn encode_rejects_values_the_fields_cannot_hold() {
        let mut out = Vec::new();
        let mut r = report().0;
        r.blocks[0].metrics[0] = Some(CcfbMetric {
            ecn: 4,
            arrival_time_offset: 0,
        });
        assert!(matches!(
            r.encode(&mut out),
            Err(WireError::Inconsistent { .. })
        ));
        r.blocks[0].metrics = vec![None; MAX_REPORTS + 1];
        assert!(matches!(
            r.encode(&mut out),
            Err(WireError::Inconsistent { .. })
        ));
        assert!(out.is_empty());
        r.blocks[0].metrics = vec![None; MAX_REPORTS];
        assert!(r.encode(&mut out).is_ok(), "16384 reports fit");
    }
}
