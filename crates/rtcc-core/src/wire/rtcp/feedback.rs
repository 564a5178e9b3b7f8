//! Small feedback messages (RFC 4585 §6.1 layout): generic NACK, PLI and REMB.
//!
//! All three start with the common header and two SSRCs:
//!
//! ```text
//! |V=2|P|   FMT   |      PT       |             length            |
//! |                  SSRC of packet sender                        |
//! |                  SSRC of media source                         |
//! :            feedback control information (FCI)                 :
//! ```
//!
//! - **Generic NACK** (RFC 4585 §6.2.1; PT 205 RTPFB, FMT 1): the FCI is one or more 32-bit
//!   entries `PID(16) | BLP(16)`. PID is a lost sequence number; bit `i` of BLP (bit 0 = least
//!   significant) reports `PID + i + 1` lost as well, so one entry covers 17 consecutive numbers.
//!   Sequence numbers wrap at 2^16.
//! - **PLI** (RFC 4585 §6.3.1; PT 206 PSFB, FMT 1): no FCI; the length field must be 2.
//! - **REMB** (draft-alvestrand-rmcat-remb-03 §2.2; PT 206 PSFB, FMT 15 "application layer
//!   feedback"): the media SSRC is 0, and the FCI is
//!
//!   ```text
//!   |  'R' 'E' 'M' 'B'                                              |
//!   |  Num SSRC     | BR Exp    |  BR Mantissa                      |
//!   |   SSRC feedback (Num SSRC × 32 bits)                          |
//!   ```
//!
//!   The bitrate is `mantissa (18 bits) << exp (6 bits)` bits per second.

use super::{
    be16, be32, begin, finish, need, parse_as, RtcpPacket, WireError, FEEDBACK_SSRCS_LEN, FMT_AFB,
    FMT_NACK, FMT_PLI, PT_PSFB, PT_RTPFB,
};

/// Numbers one NACK entry covers beyond its PID (the 16 BLP bits).
const BLP_BITS: u16 = 16;
/// Bytes of one NACK FCI entry.
const NACK_ENTRY_LEN: usize = 4;
/// The REMB unique identifier.
pub const REMB_IDENTIFIER: [u8; 4] = *b"REMB";
/// Bytes of the REMB FCI before the SSRC list: identifier, count, exponent and mantissa.
const REMB_FIXED_LEN: usize = 8;
/// Bits of the REMB mantissa.
const REMB_MANTISSA_BITS: u32 = 18;
/// Largest REMB mantissa.
const REMB_MANTISSA_MAX: u64 = (1 << REMB_MANTISSA_BITS) - 1;
/// Largest count of SSRCs a REMB can list (8-bit field).
const REMB_MAX_SSRCS: usize = 255;

/// A generic NACK: the sequence numbers of `media_ssrc` that `sender_ssrc` asks to be resent.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Nack {
    pub sender_ssrc: u32,
    pub media_ssrc: u32,
    /// Lost sequence numbers. The encoder sorts them by wrapping distance from the first one and
    /// drops duplicates; a parse returns them entry by entry (PID, then its BLP bits in order).
    pub lost: Vec<u16>,
}

impl Nack {
    /// The `(PID, BLP)` entries covering `lost`, as few as possible: numbers sorted by their
    /// wrapping distance from `lost[0]`, each entry starting at the first number not yet covered.
    pub fn entries(&self) -> Vec<(u16, u16)> {
        let Some(&first) = self.lost.first() else {
            return Vec::new();
        };
        let mut sorted = self.lost.clone();
        sorted.sort_unstable_by_key(|s| s.wrapping_sub(first));
        sorted.dedup();
        let mut entries: Vec<(u16, u16)> = Vec::new();
        for s in sorted {
            if let Some((pid, blp)) = entries.last_mut() {
                let d = s.wrapping_sub(*pid);
                if (1..=BLP_BITS).contains(&d) {
                    *blp |= 1 << (d - 1);
                    continue;
                }
            }
            entries.push((s, 0));
        }
        entries
    }

    /// Append the packet. Fails (leaving `out` unchanged) when `lost` is empty: RFC 4585 requires
    /// at least one FCI entry.
    pub fn encode(&self, out: &mut Vec<u8>) -> Result<(), WireError> {
        if self.lost.is_empty() {
            return Err(WireError::Inconsistent {
                what: "RTCP NACK",
                detail: "no lost sequence number to report".into(),
            });
        }
        let start = begin(out, FMT_NACK, PT_RTPFB);
        out.extend_from_slice(&self.sender_ssrc.to_be_bytes());
        out.extend_from_slice(&self.media_ssrc.to_be_bytes());
        for (pid, blp) in self.entries() {
            out.extend_from_slice(&pid.to_be_bytes());
            out.extend_from_slice(&blp.to_be_bytes());
        }
        finish(out, start, "RTCP NACK", false)
    }

    /// Parse the body (after the common header, padding removed): SSRCs and one or more
    /// whole entries.
    pub fn parse_body(body: &[u8]) -> Result<Nack, WireError> {
        need("RTCP NACK", body, FEEDBACK_SSRCS_LEN + NACK_ENTRY_LEN)?;
        let fci = &body[FEEDBACK_SSRCS_LEN..];
        if !fci.len().is_multiple_of(NACK_ENTRY_LEN) {
            return Err(WireError::Inconsistent {
                what: "RTCP NACK",
                detail: format!("{} FCI bytes are not whole 4-byte entries", fci.len()),
            });
        }
        let mut lost = Vec::new();
        for e in fci.chunks_exact(NACK_ENTRY_LEN) {
            let pid = be16(e, 0);
            let blp = be16(e, 2);
            lost.push(pid);
            for i in 0..BLP_BITS {
                if blp & (1 << i) != 0 {
                    lost.push(pid.wrapping_add(i + 1));
                }
            }
        }
        Ok(Nack {
            sender_ssrc: be32(body, 0),
            media_ssrc: be32(body, 4),
            lost,
        })
    }

    /// Parse a datagram holding exactly this one packet.
    pub fn parse(packet: &[u8]) -> Result<Nack, WireError> {
        parse_as(packet, "RTCP NACK", |p| match p {
            RtcpPacket::Nack(n) => Some(n),
            _ => None,
        })
    }
}

/// A picture loss indication: `sender_ssrc` asks `media_ssrc` for a keyframe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Pli {
    pub sender_ssrc: u32,
    pub media_ssrc: u32,
}

impl Pli {
    /// Bytes of a PLI on the wire.
    pub const LEN: usize = 12;

    /// Append the packet (always succeeds; `Result` for symmetry with the other messages).
    pub fn encode(&self, out: &mut Vec<u8>) -> Result<(), WireError> {
        let start = begin(out, FMT_PLI, PT_PSFB);
        out.extend_from_slice(&self.sender_ssrc.to_be_bytes());
        out.extend_from_slice(&self.media_ssrc.to_be_bytes());
        finish(out, start, "RTCP PLI", false)
    }

    /// Parse the body: exactly the two SSRCs.
    pub fn parse_body(body: &[u8]) -> Result<Pli, WireError> {
        need("RTCP PLI", body, FEEDBACK_SSRCS_LEN)?;
        if body.len() != FEEDBACK_SSRCS_LEN {
            return Err(WireError::Inconsistent {
                what: "RTCP PLI",
                detail: format!(
                    "{} bytes of FCI, a PLI has none",
                    body.len() - FEEDBACK_SSRCS_LEN
                ),
            });
        }
        Ok(Pli {
            sender_ssrc: be32(body, 0),
            media_ssrc: be32(body, 4),
        })
    }

    /// Parse a datagram holding exactly this one packet.
    pub fn parse(packet: &[u8]) -> Result<Pli, WireError> {
        parse_as(packet, "RTCP PLI", |p| match p {
            RtcpPacket::Pli(n) => Some(n),
            _ => None,
        })
    }
}

/// Receiver estimated maximum bitrate.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Remb {
    pub sender_ssrc: u32,
    /// The encoder rounds it down to `mantissa << exp` with an 18-bit mantissa; a parse gives
    /// that value.
    pub bitrate_bps: u64,
    /// The media SSRCs the estimate applies to (at most 255).
    pub ssrcs: Vec<u32>,
}

/// `bps` as (exponent, mantissa): the smallest exponent whose mantissa fits 18 bits, which
/// rounds down by less than one part in 2^17.
fn remb_split(bps: u64) -> (u32, u64) {
    let exp = (u64::BITS - bps.leading_zeros()).saturating_sub(REMB_MANTISSA_BITS);
    (exp, bps >> exp)
}

impl Remb {
    /// The bitrate the wire can carry for `bps`: rounded down to an 18-bit mantissa.
    pub fn representable(bps: u64) -> u64 {
        let (exp, mantissa) = remb_split(bps);
        mantissa << exp
    }

    /// Whether an AFB body is a REMB (its FCI starts with "REMB").
    pub(crate) fn is_remb(body: &[u8]) -> bool {
        body.get(FEEDBACK_SSRCS_LEN..FEEDBACK_SSRCS_LEN + 4) == Some(&REMB_IDENTIFIER[..])
    }

    /// Append the packet. Fails (leaving `out` unchanged) with more than 255 SSRCs.
    pub fn encode(&self, out: &mut Vec<u8>) -> Result<(), WireError> {
        if self.ssrcs.len() > REMB_MAX_SSRCS {
            return Err(WireError::Inconsistent {
                what: "RTCP REMB",
                detail: format!(
                    "{} SSRCs, at most {REMB_MAX_SSRCS} fit the 8-bit count",
                    self.ssrcs.len()
                ),
            });
        }
        let (exp, mantissa) = remb_split(self.bitrate_bps);
        debug_assert!(mantissa <= REMB_MANTISSA_MAX && exp < 64);
        let start = begin(out, FMT_AFB, PT_PSFB);
        out.extend_from_slice(&self.sender_ssrc.to_be_bytes());
        out.extend_from_slice(&0u32.to_be_bytes()); // media SSRC: always 0
        out.extend_from_slice(&REMB_IDENTIFIER);
        let word = ((self.ssrcs.len() as u32) << 24) | (exp << 18) | mantissa as u32;
        out.extend_from_slice(&word.to_be_bytes());
        for s in &self.ssrcs {
            out.extend_from_slice(&s.to_be_bytes());
        }
        finish(out, start, "RTCP REMB", false)
    }

    /// Parse an AFB body whose FCI starts with "REMB": the SSRC count must match the length, and
    /// `mantissa << exp` must fit 64 bits.
    pub fn parse_body(body: &[u8]) -> Result<Remb, WireError> {
        need("RTCP REMB", body, FEEDBACK_SSRCS_LEN + REMB_FIXED_LEN)?;
        let word = be32(body, FEEDBACK_SSRCS_LEN + 4);
        let count = (word >> 24) as usize;
        let exp = (word >> 18) & 0x3F;
        let mantissa = u64::from(word) & REMB_MANTISSA_MAX;
        let fixed = FEEDBACK_SSRCS_LEN + REMB_FIXED_LEN;
        if body.len() != fixed + 4 * count {
            return Err(WireError::Inconsistent {
                what: "RTCP REMB",
                detail: format!(
                    "{count} SSRCs need {} bytes of body, it has {}",
                    fixed + 4 * count,
                    body.len()
                ),
            });
        }
        if mantissa != 0 && mantissa.leading_zeros() < exp {
            return Err(WireError::Inconsistent {
                what: "RTCP REMB",
                detail: format!("bitrate {mantissa} << {exp} overflows 64 bits"),
            });
        }
        Ok(Remb {
            sender_ssrc: be32(body, 0),
            bitrate_bps: mantissa << exp,
            ssrcs: (0..count).map(|i| be32(body, fixed + 4 * i)).collect(),
        })
    }

    /// Parse a datagram holding exactly this one packet.
    pub fn parse(packet: &[u8]) -> Result<Remb, WireError> {
        parse_as(packet, "RTCP REMB", |p| match p {
            RtcpPacket::Remb(n) => Some(n),
            _ => None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(p: impl FnOnce(&mut Vec<u8>) -> Result<(), WireError>) -> Vec<u8> {
        let mut out = Vec::new();
        p(&mut out).unwrap();
        out
    }

    #[test]
    fn nack_packs_across_the_wrap_into_few_entries() {
        let n = Nack {
            sender_ssrc: 1,
            media_ssrc: 2,
            lost: vec![65534, 65535, 0, 3, 14, 15, 65534],
        };
        assert_eq!(
            n.entries(),
            vec![(65534, 0b1000_0000_0001_0011), (15, 0)],
            "65534 covers 65535, 0, 3 and 14 (16 after it); 15 needs a new entry; duplicate dropped"
        );
        let b = enc(|o| n.encode(o));
        assert_eq!(b.len(), 12 + 2 * 4, "two FCI entries");
        assert_eq!(
            Nack::parse(&b).unwrap().lost,
            vec![65534, 65535, 0, 3, 14, 15],
            "parse expands the entries in wire order, across the 65535 → 0 wrap"
        );
    }

    #[test]
    fn nack_sorts_by_distance_from_the_first() {
        let n = Nack {
            sender_ssrc: 1,
            media_ssrc: 2,
            lost: vec![100, 140, 101, 120, 99],
        };
        // Distances from 100: 100→0, 101→1, 120→20, 140→40, 99→65535 (it comes last).
        assert_eq!(n.entries(), vec![(100, 1), (120, 0), (140, 0), (99, 0)]);
        let p = Nack::parse(&enc(|o| n.encode(o))).unwrap();
        assert_eq!(p.lost, vec![100, 101, 120, 140, 99]);
    }

    #[test]
    fn nack_of_many_consecutive_numbers_uses_one_entry_per_17() {
        let lost: Vec<u16> = (0..170).map(|i| 65500u16.wrapping_add(i)).collect();
        let n = Nack {
            sender_ssrc: 1,
            media_ssrc: 2,
            lost: lost.clone(),
        };
        assert_eq!(
            n.entries().len(),
            10,
            "170 consecutive numbers need 10 entries"
        );
        assert_eq!(Nack::parse(&enc(|o| n.encode(o))).unwrap().lost, lost);
    }

    #[test]
    fn nack_rejects_empty_and_partial_entries() {
        let mut out = Vec::new();
        let empty = Nack::default();
        assert!(
            matches!(empty.encode(&mut out), Err(WireError::Inconsistent { .. })),
            "a NACK must report at least one number"
        );
        assert!(out.is_empty());
        assert!(
            matches!(
                Nack::parse_body(&[0; 8]),
                Err(WireError::Truncated {
                    what: "RTCP NACK",
                    ..
                })
            ),
            "a NACK without FCI is truncated"
        );
        assert!(
            matches!(
                Nack::parse_body(&[0; 14]),
                Err(WireError::Inconsistent {
                    what: "RTCP NACK",
                    ..
                })
            ),
            "6 FCI bytes are not whole entries"
        );
        let b = enc(|o| {
            Nack {
                sender_ssrc: 1,
                media_ssrc: 2,
                lost: vec![5],
            }
            .encode(o)
        });
        for n in 0..b.len() - 4 {
            assert!(
                matches!(
                    Nack::parse_body(&b[4..4 + n]),
                    Err(WireError::Truncated { .. })
                ),
                "a NACK body of {n} bytes is truncated"
            );
        }
    }

    #[test]
    fn pli_round_trips_and_has_no_fci() {
        let p = Pli {
            sender_ssrc: 0xAABB_CCDD,
            media_ssrc: 0x0102_0304,
        };
        let b = enc(|o| p.encode(o));
        assert_eq!(b.len(), Pli::LEN);
        assert_eq!(&b[..4], &[0x81, 206, 0, 2], "PSFB FMT 1, length 2 words");
        assert_eq!(Pli::parse(&b).unwrap(), p);
        for n in 0..8 {
            assert!(matches!(
                Pli::parse_body(&b[4..4 + n]),
                Err(WireError::Truncated {
                    what: "RTCP PLI",
                    ..
                })
            ));
        }
        assert!(
            matches!(
                Pli::parse_body(&[0; 12]),
                Err(WireError::Inconsistent {
                    what: "RTCP PLI",
                    ..
                })
            ),
            "a PLI with FCI bytes is inconsistent (RFC 4585 §6.3.1: length must be 2)"
        );
    }

    #[test]
    fn remb_rounds_the_bitrate_down_to_the_mantissa() {
        for bps in [0u64, 1, 262_143, 262_144, 2_500_000, 123_456_789, u64::MAX] {
            let r = Remb {
                sender_ssrc: 3,
                bitrate_bps: bps,
                ssrcs: vec![10, 11],
            };
            let p = Remb::parse(&enc(|o| r.encode(o))).unwrap();
            assert!(p.bitrate_bps <= bps, "rounded down, never up");
            assert!(
                bps - p.bitrate_bps <= bps >> 17,
                "an 18-bit mantissa loses less than 2^-17 of {bps}"
            );
            assert_eq!(p.bitrate_bps, Remb::representable(bps));
            assert_eq!(p.ssrcs, vec![10, 11]);
        }
        assert_eq!(
            Remb::representable(2_500_000),
            2_500_000,
            "2.5 Mbps is exact"
        );
        assert_eq!(
            Remb::representable(262_145),
            262_144,
            "19 bits: low bit lost"
        );
    }

    #[test]
    fn remb_rejects_inconsistent_counts_and_overflow() {
        let r = Remb {
            sender_ssrc: 3,
            bitrate_bps: 1_000_000,
            ssrcs: vec![10],
        };
        let mut b = enc(|o| r.encode(o));
        b[16] = 2; // claims 2 SSRCs, has 1
        assert!(matches!(
            Remb::parse(&b),
            Err(WireError::Inconsistent {
                what: "RTCP REMB",
                ..
            })
        ));
        let mut b = enc(|o| r.encode(o));
        b[17] = 0xFC | (b[17] & 0x03); // exponent 63 with a non-zero mantissa
        assert!(
            matches!(
                Remb::parse(&b),
                Err(WireError::Inconsistent {
                    what: "RTCP REMB",
                    ..
                })
            ),
            "mantissa << 63 overflows a u64"
        );
        let mut out = Vec::new();
        let many = Remb {
            ssrcs: vec![0; 256],
            ..r.clone()
        };
        assert!(matches!(
            many.encode(&mut out),
            Err(WireError::Inconsistent { .. })
        ));
        assert!(out.is_empty());
        for n in 0..16 {
            assert!(
                matches!(
                    Remb::parse_body(&b[4..4 + n]),
                    Err(WireError::Truncated { .. })
                ),
                "a REMB body of {n} bytes is truncated"
            );
        }
    }

    #[test]
    fn afb_without_the_remb_identifier_is_unknown() {
        let mut b = enc(|o| {
            Remb {
                sender_ssrc: 3,
                bitrate_bps: 1,
                ssrcs: vec![],
            }
            .encode(o)
        });
        b[12] = b'X';
        assert_eq!(
            super::super::parse_compound(&b).unwrap(),
            vec![RtcpPacket::Unknown {
                packet_type: PT_PSFB,
                fmt: FMT_AFB
            }]
        );
    }
}
