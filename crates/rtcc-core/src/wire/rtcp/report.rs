//! Sender and receiver reports (RFC 3550 §6.4.1, §6.4.2) with their report blocks.
//!
//! ```text
//! SR: |V=2|P|   RC    |   PT=200      |             length            |
//!     |                         SSRC of sender                        |
//!     |              NTP timestamp, most significant word             |
//!     |             NTP timestamp, least significant word             |
//!     |                         RTP timestamp                         |
//!     |                     sender's packet count                     |
//!     |                      sender's octet count                     |
//!     |                 report block 1 … RC (24 bytes each)           |
//!     |                  profile-specific extensions                  |
//!
//! RR: |V=2|P|   RC    |   PT=201      |             length            |
//!     |                     SSRC of packet sender                     |
//!     |                 report block 1 … RC (24 bytes each)           |
//!     |                  profile-specific extensions                  |
//!
//! report block:
//!     |                 SSRC of the source reported on                |
//!     | fraction lost |       cumulative number of packets lost       |
//!     |           extended highest sequence number received           |
//!     |                      interarrival jitter                      |
//!     |                         last SR (LSR)                         |
//!     |                   delay since last SR (DLSR)                  |
//! ```
//!
//! `RC` (5 bits) counts the blocks, so at most 31 fit one report. The cumulative loss is a 24-bit
//! two's-complement number (duplicates can make it negative); the encoder clamps it to that range
//! as RFC 3550 §6.4.1 asks ("the field value saturates"). LSR is the middle 32 bits of the NTP
//! timestamp of the last SR received ([`ntp_middle32`]); DLSR is in units of 1/65536 s. Profile
//! extensions after the blocks are skipped by the parser.
//!
//! rtcc's "NTP" timestamps ([`ntp_time`]) count from the [`Time`] origin, not from 1900: both
//! ends of an rtcc session only compare them with each other (round-trip time via LSR/DLSR).

use super::{be32, begin, finish, need, parse_as, RtcpPacket, WireError, MAX_COUNT, PT_RR, PT_SR};
use crate::units::Time;
use crate::wire::NS_PER_S;

/// Bytes of one report block.
pub const REPORT_BLOCK_LEN: usize = 24;
/// Bytes of the SR sender info (SSRC, NTP, RTP timestamp, packet and octet counts).
const SR_INFO_LEN: usize = 24;
/// Bytes of the RR fixed part (the sender's SSRC).
const RR_INFO_LEN: usize = 4;
/// Range of the 24-bit signed cumulative loss.
const CUMULATIVE_LOST_MIN: i32 = -(1 << 23);
const CUMULATIVE_LOST_MAX: i32 = (1 << 23) - 1;

/// `t` as a 32.32 fixed-point count of seconds since the [`Time`] origin (the integer part wraps
/// after 2^32 s; the fraction is truncated).
pub fn ntp_time(t: Time) -> u64 {
    let secs = (t.0 / NS_PER_S) & 0xFFFF_FFFF;
    // (ns < 1e9) · 2^32 < 4.3e18: fits u64.
    let frac = ((t.0 % NS_PER_S) << 32) / NS_PER_S;
    (secs << 32) | frac
}

/// The middle 32 bits of a 64-bit NTP timestamp (16.16 seconds), as LSR and RFC 8888 use.
pub fn ntp_middle32(ntp: u64) -> u32 {
    (ntp >> 16) as u32
}

/// One reception report block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ReportBlock {
    pub ssrc: u32,
    /// Fraction of packets lost since the last report, in 1/256.
    pub fraction_lost: u8,
    /// 24-bit signed on the wire; clamped to −2^23..2^23−1 when encoded.
    pub cumulative_lost: i32,
    pub extended_highest_seq: u32,
    pub jitter: u32,
    pub last_sr: u32,
    pub delay_since_last_sr: u32,
}

impl ReportBlock {
    fn write(&self, out: &mut Vec<u8>) {
        let lost = self
            .cumulative_lost
            .clamp(CUMULATIVE_LOST_MIN, CUMULATIVE_LOST_MAX) as u32
            & 0x00FF_FFFF;
        out.extend_from_slice(&self.ssrc.to_be_bytes());
        out.extend_from_slice(&((u32::from(self.fraction_lost) << 24) | lost).to_be_bytes());
        out.extend_from_slice(&self.extended_highest_seq.to_be_bytes());
        out.extend_from_slice(&self.jitter.to_be_bytes());
        out.extend_from_slice(&self.last_sr.to_be_bytes());
        out.extend_from_slice(&self.delay_since_last_sr.to_be_bytes());
    }

    /// Parse a block from exactly [`REPORT_BLOCK_LEN`] bytes.
    fn read(b: &[u8]) -> ReportBlock {
        let word = be32(b, 4);
        ReportBlock {
            ssrc: be32(b, 0),
            fraction_lost: (word >> 24) as u8,
            // Sign-extend the low 24 bits.
            cumulative_lost: ((word << 8) as i32) >> 8,
            extended_highest_seq: be32(b, 8),
            jitter: be32(b, 12),
            last_sr: be32(b, 16),
            delay_since_last_sr: be32(b, 20),
        }
    }
}

fn too_many_blocks(n: usize) -> WireError {
    WireError::Inconsistent {
        what: "RTCP report",
        detail: format!("{n} report blocks, at most {MAX_COUNT} fit the 5-bit count"),
    }
}

/// Parse `count` blocks that follow `fixed` bytes of `body`.
fn read_blocks(
    what: &'static str,
    body: &[u8],
    fixed: usize,
    count: u8,
) -> Result<Vec<ReportBlock>, WireError> {
    need(what, body, fixed + REPORT_BLOCK_LEN * count as usize)?;
    Ok((0..count as usize)
        .map(|i| {
            let at = fixed + i * REPORT_BLOCK_LEN;
            ReportBlock::read(&body[at..at + REPORT_BLOCK_LEN])
        })
        .collect())
}

/// A receiver report (PT 201).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ReceiverReport {
    pub sender_ssrc: u32,
    pub blocks: Vec<ReportBlock>,
}

impl ReceiverReport {
    /// Append the packet; fails (leaving `out` unchanged) with more than 31 blocks.
    pub fn encode(&self, out: &mut Vec<u8>) -> Result<(), WireError> {
        if self.blocks.len() > MAX_COUNT as usize {
            return Err(too_many_blocks(self.blocks.len()));
        }
        let start = begin(out, self.blocks.len() as u8, PT_RR);
        out.extend_from_slice(&self.sender_ssrc.to_be_bytes());
        for b in &self.blocks {
            b.write(out);
        }
        finish(out, start, "RTCP receiver report", false)
    }

    /// Bytes [`ReceiverReport::encode`] appends.
    pub fn encoded_len(&self) -> usize {
        4 + RR_INFO_LEN + REPORT_BLOCK_LEN * self.blocks.len()
    }

    /// Parse the body (after the common header, padding removed) of a report with `count`
    /// blocks.
    pub fn parse_body(count: u8, body: &[u8]) -> Result<ReceiverReport, WireError> {
        need("RTCP receiver report", body, RR_INFO_LEN)?;
        Ok(ReceiverReport {
            sender_ssrc: be32(body, 0),
            blocks: read_blocks("RTCP receiver report blocks", body, RR_INFO_LEN, count)?,
        })
    }

    /// Parse a datagram holding exactly this one packet.
    pub fn parse(packet: &[u8]) -> Result<ReceiverReport, WireError> {
        parse_as(packet, "RTCP receiver report", |p| match p {
            RtcpPacket::ReceiverReport(r) => Some(r),
            _ => None,
        })
    }
}

/// A sender report (PT 200).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SenderReport {
    pub sender_ssrc: u32,
    /// 32.32 fixed-point seconds ([`ntp_time`]).
    pub ntp_time: u64,
    pub rtp_time: u32,
    pub packet_count: u32,
    pub octet_count: u32,
    pub blocks: Vec<ReportBlock>,
}

impl SenderReport {
    /// Append the packet; fails (leaving `out` unchanged) with more than 31 blocks.
    pub fn encode(&self, out: &mut Vec<u8>) -> Result<(), WireError> {
        if self.blocks.len() > MAX_COUNT as usize {
            return Err(too_many_blocks(self.blocks.len()));
        }
        let start = begin(out, self.blocks.len() as u8, PT_SR);
        out.extend_from_slice(&self.sender_ssrc.to_be_bytes());
        out.extend_from_slice(&self.ntp_time.to_be_bytes());
        out.extend_from_slice(&self.rtp_time.to_be_bytes());
        out.extend_from_slice(&self.packet_count.to_be_bytes());
        out.extend_from_slice(&self.octet_count.to_be_bytes());
        for b in &self.blocks {
            b.write(out);
        }
        finish(out, start, "RTCP sender report", false)
    }

    /// Bytes [`SenderReport::encode`] appends.
    pub fn encoded_len(&self) -> usize {
        4 + SR_INFO_LEN + REPORT_BLOCK_LEN * self.blocks.len()
    }

    /// Parse the body (after the common header, padding removed) of a report with `count`
    /// blocks.
    pub fn parse_body(count: u8, body: &[u8]) -> Result<SenderReport, WireError> {
        need("RTCP sender report", body, SR_INFO_LEN)?;
        Ok(SenderReport {
            sender_ssrc: be32(body, 0),
            ntp_time: (u64::from(be32(body, 4)) << 32) | u64::from(be32(body, 8)),
            rtp_time: be32(body, 12),
            packet_count: be32(body, 16),
            octet_count: be32(body, 20),
            blocks: read_blocks("RTCP sender report blocks", body, SR_INFO_LEN, count)?,
        })
    }

    /// Parse a datagram holding exactly this one packet.
    pub fn parse(packet: &[u8]) -> Result<SenderReport, WireError> {
        parse_as(packet, "RTCP sender report", |p| match p {
            RtcpPacket::SenderReport(r) => Some(r),
            _ => None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::rtcp::parse_compound;

    fn block(i: u32) -> ReportBlock {
        ReportBlock {
            ssrc: 0x1000 + i,
            fraction_lost: 26, // ~10 %
            cumulative_lost: -3 - i as i32,
            extended_highest_seq: 0x0001_FFFF + i,
            jitter: 90 * i,
            last_sr: 0xABCD_0000 + i,
            delay_since_last_sr: 65536 / 2 + i,
        }
    }

    fn sr(n: u32) -> SenderReport {
        SenderReport {
            sender_ssrc: 7,
            ntp_time: ntp_time(Time(12_500_000_000)),
            rtp_time: 90_000 * 12,
            packet_count: 1234,
            octet_count: 1_234_567,
            blocks: (0..n).map(block).collect(),
        }
    }

    #[test]
    fn round_trips_reports_with_0_to_31_blocks() {
        for n in [0, 1, 2, 31] {
            let s = sr(n);
            let mut out = Vec::new();
            s.encode(&mut out).unwrap();
            assert_eq!(out.len(), s.encoded_len());
            assert_eq!(SenderReport::parse(&out).unwrap(), s, "SR with {n} blocks");
            let r = ReceiverReport {
                sender_ssrc: 9,
                blocks: s.blocks.clone(),
            };
            let mut out = Vec::new();
            r.encode(&mut out).unwrap();
            assert_eq!(out.len(), r.encoded_len());
            assert_eq!(
                ReceiverReport::parse(&out).unwrap(),
                r,
                "RR with {n} blocks"
            );
        }
    }

    #[test]
    fn rejects_32_blocks_and_clamps_cumulative_loss() {
        let mut out = vec![];
        assert!(
            matches!(sr(32).encode(&mut out), Err(WireError::Inconsistent { .. })),
            "32 blocks do not fit a 5-bit count"
        );
        assert!(out.is_empty(), "nothing written on error");
        let mut r = ReceiverReport {
            sender_ssrc: 1,
            blocks: vec![block(0), block(1)],
        };
        r.blocks[0].cumulative_lost = 1 << 30;
        r.blocks[1].cumulative_lost = -(1 << 30);
        r.encode(&mut out).unwrap();
        let p = ReceiverReport::parse(&out).unwrap();
        assert_eq!(p.blocks[0].cumulative_lost, (1 << 23) - 1, "saturates high");
        assert_eq!(p.blocks[1].cumulative_lost, -(1 << 23), "saturates low");
    }

    #[test]
    fn skips_profile_extensions_and_rejects_missing_blocks() {
        let mut out = Vec::new();
        sr(2).encode(&mut out).unwrap();
        // Append a one-word profile extension.
        out[3] += 1;
        out.extend_from_slice(&[1, 2, 3, 4]);
        assert_eq!(
            SenderReport::parse(&out).unwrap(),
            sr(2),
            "extension ignored"
        );
        // Claim 3 blocks where 2 (+4 bytes) are present.
        out[0] = (out[0] & !0x1F) | 3;
        assert!(
            matches!(
                SenderReport::parse(&out),
                Err(WireError::Truncated {
                    what: "RTCP sender report blocks",
                    ..
                })
            ),
            "a report count larger than the packet holds is truncation"
        );
    }

    #[test]
    fn rejects_every_truncated_body() {
        let s = sr(2);
        let mut out = Vec::new();
        s.encode(&mut out).unwrap();
        let body = &out[4..];
        for n in 0..body.len() {
            assert!(
                matches!(
                    SenderReport::parse_body(2, &body[..n]),
                    Err(WireError::Truncated { .. })
                ),
                "an SR body cut to {n} bytes is truncated"
            );
            assert!(
                matches!(
                    ReceiverReport::parse_body(2, &body[..n.min(51)]),
                    Err(WireError::Truncated { .. })
                ),
                "an RR body shorter than 52 bytes cannot hold 2 blocks"
            );
        }
        assert_eq!(parse_compound(&out).unwrap().len(), 1);
    }

    #[test]
    fn ntp_time_is_32_32_fixed_point() {
        assert_eq!(ntp_time(Time(0)), 0);
        assert_eq!(
            ntp_time(Time(1_500_000_000)),
            (1 << 32) | (1 << 31),
            "1.5 s"
        );
        assert_eq!(ntp_middle32(ntp_time(Time(1_500_000_000))), 0x0001_8000);
        assert_eq!(
            ntp_time(Time(u64::MAX)) >> 32,
            (u64::MAX / 1_000_000_000) & 0xFFFF_FFFF,
            "seconds wrap at 2^32 instead of overflowing"
        );
    }
}
