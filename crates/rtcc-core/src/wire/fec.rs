//! XOR forward error correction in the spirit of ULPFEC (RFC 5109 §7) and flexfec (RFC 8627):
//! one parity packet protects up to 16 media packets of one SSRC whose sequence numbers lie in a
//! window of 16 from the first, and lets the receiver rebuild any **one** of them that is lost.
//!
//! The parity payload is the XOR of the protected packets' *contents*, each padded with zeros to
//! the longest. Because padding loses the lengths, the header carries their XOR too (as RFC 5109
//! §7.3's "length recovery" field does), and, since in the simulator a media payload is virtual
//! (the contents are the headers an endpoint materialises, the size on the wire is a separate
//! number), the XOR of the on-the-wire sizes as well. XOR-ing the parity with every protected
//! packet that did arrive leaves exactly the missing one.
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! |          base seq             |             mask              |
//! |       length recovery         |    size recovery (32 bits)    :
//! :  size recovery, low 16 bits   |   parity payload ...          :
//! ```
//!
//! Mask bit `i` (value `1 << i`, bit 0 least significant) set means sequence number
//! `base seq + i` (wrapping at 2^16) is protected; a mask of 0 protects nothing and is rejected.
//! The header is [`FecHeader::LEN`] = 10 bytes; the parity payload follows it. (How the FEC
//! packet itself is carried, e.g. in its own RTP stream, is the caller's choice.)

use super::{be16, be32, need, WireError};

/// Most packets one parity packet protects (bits of the mask).
pub const MAX_PROTECTED: u16 = 16;

/// The FEC header: which packets are protected and the XOR of their lengths and sizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FecHeader {
    pub base_seq: u16,
    /// Bit i: `base_seq + i` protected.
    pub mask: u16,
    /// XOR of the protected contents' lengths.
    pub length_recovery: u16,
    /// XOR of the protected packets' on-the-wire sizes.
    pub size_recovery: u32,
}

impl FecHeader {
    /// Bytes of the header on the wire.
    pub const LEN: usize = 10;

    /// Append the header.
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.base_seq.to_be_bytes());
        out.extend_from_slice(&self.mask.to_be_bytes());
        out.extend_from_slice(&self.length_recovery.to_be_bytes());
        out.extend_from_slice(&self.size_recovery.to_be_bytes());
    }

    /// Parse the header at the start of `buf`; returns it and its length (the offset of the
    /// parity payload).
    pub fn parse(buf: &[u8]) -> Result<(FecHeader, usize), WireError> {
        need("FEC header", buf, Self::LEN)?;
        let h = FecHeader {
            base_seq: be16(buf, 0),
            mask: be16(buf, 2),
            length_recovery: be16(buf, 4),
            size_recovery: be32(buf, 6),
        };
        if h.mask == 0 {
            return Err(no_packet());
        }
        Ok((h, Self::LEN))
    }

    /// Whether `seq` is protected, and its bit.
    fn bit_of(&self, seq: u16) -> Option<u16> {
        let off = seq.wrapping_sub(self.base_seq);
        if off < MAX_PROTECTED && self.mask & (1 << off) != 0 {
            Some(1 << off)
        } else {
            None
        }
    }
}

fn no_packet() -> WireError {
    WireError::Inconsistent {
        what: "FEC header",
        detail: "mask 0 protects no packet".into(),
    }
}

/// XOR `src` into `dst`, growing `dst` with zeros if `src` is longer.
#[inline]
fn xor_into(dst: &mut Vec<u8>, src: &[u8]) {
    if dst.len() < src.len() {
        dst.resize(src.len(), 0);
    }
    for (d, s) in dst.iter_mut().zip(src) {
        *d ^= s;
    }
}

/// Builds one parity packet from the packets of a group.
#[derive(Debug, Clone, Default)]
pub struct FecEncoder {
    header: FecHeader,
    parity: Vec<u8>,
}

impl FecEncoder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Packets protected so far in this group.
    pub fn len(&self) -> usize {
        self.header.mask.count_ones() as usize
    }

    pub fn is_empty(&self) -> bool {
        self.header.mask == 0
    }

    /// Add a packet to the group. The first packet sets the base sequence number; the others
    /// must lie in the 16 numbers from it (wrapping) and not repeat one. Fails, leaving the group
    /// unchanged, otherwise or when `contents` is longer than 65535 bytes.
    pub fn protect(&mut self, contents: &[u8], wire_size: u32, seq: u16) -> Result<(), WireError> {
        let len = u16::try_from(contents.len()).map_err(|_| WireError::Inconsistent {
            what: "FEC encoder",
            detail: format!("{} bytes of contents, at most 65535", contents.len()),
        })?;
        if self.header.mask == 0 {
            self.header.base_seq = seq;
        }
        let off = seq.wrapping_sub(self.header.base_seq);
        if off >= MAX_PROTECTED || self.header.mask & (1 << off) != 0 {
            return Err(WireError::Inconsistent {
                what: "FEC encoder",
                detail: format!(
                    "seq {seq} is not a new number in the 16 from base {} (mask {:#06x})",
                    self.header.base_seq, self.header.mask
                ),
            });
        }
        self.header.mask |= 1 << off;
        self.header.length_recovery ^= len;
        self.header.size_recovery ^= wire_size;
        xor_into(&mut self.parity, contents);
        Ok(())
    }

    /// The header and parity payload (the XOR of the contents, padded to the longest) of the
    /// group, or None if nothing was protected; starts a new group.
    pub fn finish(&mut self) -> Option<(FecHeader, Vec<u8>)> {
        if self.header.mask == 0 {
            return None;
        }
        let header = std::mem::take(&mut self.header);
        Some((header, std::mem::take(&mut self.parity)))
    }
}

/// If exactly one packet protected by `header` is missing from `others` (received packets as
/// `(seq, contents, wire size)`; unprotected ones are ignored), rebuild it: its sequence number,
/// contents (byte for byte) and wire size. `Ok(None)` when none or two or more are missing.
///
/// Errors on data that cannot come from a consistent group: a mask of 0, a protected number
/// given twice, contents longer than the parity, or a recovered length beyond the parity (or
/// parity bytes past it that are not zero).
pub fn recover(
    header: &FecHeader,
    parity: &[u8],
    others: &[(u16, &[u8], u32)],
) -> Result<Option<(u16, Vec<u8>, u32)>, WireError> {
    if header.mask == 0 {
        return Err(no_packet());
    }
    let bad = |detail: String| WireError::Inconsistent {
        what: "FEC recovery",
        detail,
    };
    let mut seen = 0u16;
    for &(seq, contents, _) in others {
        let Some(bit) = header.bit_of(seq) else {
            continue;
        };
        if seen & bit != 0 {
            return Err(bad(format!("protected seq {seq} given twice")));
        }
        if contents.len() > parity.len() {
            return Err(bad(format!(
                "seq {seq} has {} bytes, more than the {}-byte parity",
                contents.len(),
                parity.len()
            )));
        }
        seen |= bit;
    }
    let missing = header.mask & !seen;
    if missing.count_ones() != 1 {
        return Ok(None);
    }
    let mut data = parity.to_vec();
    let mut length = header.length_recovery;
    let mut size = header.size_recovery;
    for &(seq, contents, wire_size) in others {
        if header.bit_of(seq).is_some() {
            // contents.len() <= parity.len() was checked; lengths fold into 16 bits as the
            // encoder's do.
            for (d, s) in data.iter_mut().zip(contents) {
                *d ^= s;
            }
            length ^= contents.len() as u16;
            size ^= wire_size;
        }
    }
    let length = length as usize;
    if length > data.len() || data[length..].iter().any(|&b| b != 0) {
        return Err(bad(format!(
            "recovered length {length} inconsistent with the {}-byte parity",
            data.len()
        )));
    }
    data.truncate(length);
    let seq = header
        .base_seq
        .wrapping_add(missing.trailing_zeros() as u16);
    Ok(Some((seq, data, size)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::ChaCha8Rng;
    use rand_core::{Rng, SeedableRng};

    /// `n` packets with random contents (12..=300 bytes) and wire sizes.
    fn packets(rng: &mut ChaCha8Rng, n: usize) -> Vec<(Vec<u8>, u32)> {
        (0..n)
            .map(|_| {
                let len = 12 + (rng.next_u32() % 289) as usize;
                let mut c = vec![0u8; len];
                rng.fill_bytes(&mut c);
                (c, 100 + rng.next_u32() % 1400)
            })
            .collect()
    }

    #[test]
    fn recovers_any_single_loss_byte_for_byte_and_none_of_two() {
        let mut rng = ChaCha8Rng::seed_from_u64(0xFEC);
        for round in 0..200 {
            let n = 1 + round % 16;
            let base = if round % 3 == 0 {
                65530
            } else {
                rng.next_u32() as u16
            };
            let pk = packets(&mut rng, n);
            let mut enc = FecEncoder::new();
            for (i, (c, s)) in pk.iter().enumerate() {
                enc.protect(c, *s, base.wrapping_add(i as u16)).unwrap();
            }
            assert_eq!(enc.len(), n);
            let (h, parity) = enc.finish().unwrap();
            assert!(enc.is_empty(), "finish starts a new group");
            assert_eq!(h.base_seq, base);
            assert_eq!(h.mask.count_ones() as usize, n);
            let all: Vec<(u16, &[u8], u32)> = pk
                .iter()
                .enumerate()
                .map(|(i, (c, s))| (base.wrapping_add(i as u16), c.as_slice(), *s))
                .collect();
            assert_eq!(recover(&h, &parity, &all).unwrap(), None, "nothing lost");
            for (lost, (lost_contents, lost_size)) in pk.iter().enumerate() {
                let others: Vec<_> = all
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| *i != lost)
                    .map(|(_, p)| *p)
                    .collect();
                let (seq, c, s) = recover(&h, &parity, &others).unwrap().unwrap();
                assert_eq!(seq, base.wrapping_add(lost as u16), "the missing number");
                assert_eq!(&c, lost_contents, "contents rebuilt byte for byte");
                assert_eq!(s, *lost_size, "wire size rebuilt");
                if n >= 2 {
                    let fewer = &others[1..];
                    assert_eq!(
                        recover(&h, &parity, fewer).unwrap(),
                        None,
                        "two losses cannot be rebuilt from one parity"
                    );
                }
            }
        }
    }

    #[test]
    fn mask_wraps_past_65535() {
        let mut enc = FecEncoder::new();
        for (i, seq) in [65534u16, 65535, 0, 1, 13].into_iter().enumerate() {
            enc.protect(&[i as u8; 20], 1000, seq).unwrap();
        }
        let (h, parity) = enc.finish().unwrap();
        assert_eq!(h.base_seq, 65534);
        assert_eq!(
            h.mask, 0b1000_0000_0000_1111,
            "bits 0..3 and 15 (65534 + 15 = 13)"
        );
        let c: Vec<[u8; 20]> = (0..5).map(|i| [i as u8; 20]).collect();
        let others = [
            (65534, &c[0][..], 1000),
            (65535, &c[1][..], 1000),
            (1, &c[3][..], 1000),
            (13, &c[4][..], 1000),
            (500, &[9u8; 3][..], 7), // not protected: ignored
        ];
        let (seq, got, _) = recover(&h, &parity, &others).unwrap().unwrap();
        assert_eq!(
            (seq, got),
            (0, vec![2u8; 20]),
            "0 is recovered across the wrap"
        );
    }

    #[test]
    fn protect_rejects_numbers_outside_the_window_and_repeats() {
        let mut enc = FecEncoder::new();
        enc.protect(&[1], 1, 100).unwrap();
        for seq in [116u16, 99, 100] {
            assert!(
                matches!(
                    enc.protect(&[1], 1, seq),
                    Err(WireError::Inconsistent {
                        what: "FEC encoder",
                        ..
                    })
                ),
                "seq {seq} is not a new number in 100..=115"
            );
        }
        assert!(enc.protect(&[1], 1, 115).is_ok());
        assert!(enc.protect(&[0u8; 65536], 1, 101).is_err(), "too long");
        assert_eq!(enc.len(), 2, "failed protects leave the group unchanged");
        assert_eq!(
            FecEncoder::new().finish(),
            None,
            "an empty group has no parity"
        );
    }

    #[test]
    fn recover_rejects_inconsistent_inputs() {
        let mut enc = FecEncoder::new();
        enc.protect(&[1, 2, 3], 10, 5).unwrap();
        enc.protect(&[4, 5], 20, 6).unwrap();
        enc.protect(&[6], 30, 7).unwrap();
        let (h, parity) = enc.finish().unwrap();
        let twice = [(5, &[1u8, 2, 3][..], 10), (5, &[1u8, 2, 3][..], 10)];
        assert!(
            matches!(
                recover(&h, &parity, &twice),
                Err(WireError::Inconsistent { .. })
            ),
            "a number given twice"
        );
        let long = [(5, &[1u8, 2, 3, 4][..], 10)];
        assert!(
            matches!(
                recover(&h, &parity, &long),
                Err(WireError::Inconsistent { .. })
            ),
            "contents longer than the parity"
        );
        let mut bad = h;
        bad.length_recovery ^= 0x100;
        let ok = [(5, &[1u8, 2, 3][..], 10), (6, &[4u8, 5][..], 20)];
        assert!(
            matches!(
                recover(&bad, &parity, &ok),
                Err(WireError::Inconsistent { .. })
            ),
            "a recovered length beyond the parity"
        );
        let corrupt = [(5, &[1u8, 2, 9][..], 10), (6, &[4u8, 5][..], 20)];
        assert!(
            matches!(
                recover(&h, &parity, &corrupt),
                Err(WireError::Inconsistent { .. })
            ),
            "non-zero bytes past the recovered length reveal corrupt input"
        );
        let zero = FecHeader::default();
        assert!(matches!(
            recover(&zero, &parity, &ok),
            Err(WireError::Inconsistent { .. })
        ));
        assert_eq!(
            recover(&h, &parity, &ok).unwrap(),
            Some((7, vec![6], 30)),
            "the consistent case still recovers"
        );
    }

    #[test]
    fn header_round_trips_and_rejects_truncation_and_empty_masks() {
        let h = FecHeader {
            base_seq: 65535,
            mask: 0x8001,
            length_recovery: 0x1234,
            size_recovery: 0xDEAD_BEEF,
        };
        let mut b = vec![];
        h.encode(&mut b);
        assert_eq!(b.len(), FecHeader::LEN);
        b.extend_from_slice(&[1, 2, 3]);
        assert_eq!(
            FecHeader::parse(&b).unwrap(),
            (h, 10),
            "parity follows at byte 10"
        );
        for n in 0..FecHeader::LEN {
            assert!(
                matches!(
                    FecHeader::parse(&b[..n]),
                    Err(WireError::Truncated {
                        what: "FEC header",
                        ..
                    })
                ),
                "{n} bytes cannot hold the 10-byte header"
            );
        }
        b[2] = 0;
        b[3] = 0;
        assert!(
            matches!(
                FecHeader::parse(&b),
                Err(WireError::Inconsistent {
                    what: "FEC header",
                    ..
                })
            ),
            "mask 0 protects nothing"
        );
    }
}
