//! The RTP fixed header (RFC 3550 §5.1) with RFC 8285 header extensions.
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |V=2|P|X|  CC   |M|     PT      |       sequence number         |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                           timestamp                           |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                             SSRC                              |
//! +=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+
//! |            CSRC list: CC × 32 bits (skipped by the parser)    |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |   profile (0xBEDE or 0x100X)  |  length (32-bit words)        |  if X = 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                  extension elements, padded to 32 bits        |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```
//!
//! - **P** (padding, §5.1): the last byte of the datagram counts padding bytes at its end. The
//!   parser checks that count fits after the header; rtcc never pads RTP.
//! - **X** (extension, §5.3.1): a header extension follows the CSRCs. Its `length` counts 32-bit
//!   words after the 4-byte extension header.
//! - **One-byte elements** (RFC 8285 §4.2, profile `0xBEDE`): each element is a byte
//!   `ID(4 bits) | L(4 bits)` followed by `L + 1` data bytes. ID 0 is a padding byte (no length);
//!   ID 15 is reserved and stops processing of the block.
//! - **Two-byte elements** (RFC 8285 §4.3, profile `0x1000`–`0x100F`, the low 4 bits are
//!   "appbits"): each element is `ID(8) | L(8)` followed by `L` data bytes (0 allowed). ID 0 is a
//!   padding byte.
//!
//! rtcc's senders negotiate (implicitly, both ends are rtcc) three extension ids, written with the
//! one-byte form in increasing id order, padded with zero bytes to 32 bits:
//!
//! - [`EXT_TRANSPORT_SEQ`]: transport-wide sequence number
//!   (draft-holmer-rmcat-transport-wide-cc-extensions-01 §2), 16 bits, big-endian.
//! - [`EXT_ABS_SEND_TIME`]: abs-send-time (webrtc.org "abs-send-time" extension), 24 bits of
//!   6.18 fixed-point seconds, wrapping every 64 s; see [`abs_send_time`].
//! - [`EXT_FRAME`]: rtcc's frame descriptor ([`FrameDescriptor`]), 9 bytes.
//!
//! Extensions with other ids are skipped. A known id with the wrong data length is an error (the
//! two ends disagree on the format), as is an element running past the block.

use super::{be16, be32, need, WireError, NS_PER_S};
use crate::units::Time;

/// Length of the fixed RTP header, without CSRCs or extensions (RFC 3550 §5.1).
pub const RTP_HEADER_LEN: usize = 12;
/// RTP version carried in the top two bits of the first byte.
pub const RTP_VERSION: u8 = 2;
/// Extension id of the transport-wide sequence number (16 bits;
/// draft-holmer-rmcat-transport-wide-cc-extensions-01 §2).
pub const EXT_TRANSPORT_SEQ: u8 = 1;
/// Extension id of abs-send-time (24-bit 6.18 fixed-point seconds).
pub const EXT_ABS_SEND_TIME: u8 = 2;
/// Extension id of rtcc's [`FrameDescriptor`].
pub const EXT_FRAME: u8 = 3;
/// "Defined by profile" value announcing RFC 8285 one-byte elements (§4.2).
pub const ONE_BYTE_PROFILE: u16 = 0xBEDE;
/// Two-byte elements (RFC 8285 §4.3) use profiles `0x1000..=0x100F`: this value in the top 12
/// bits, "appbits" in the low 4.
pub const TWO_BYTE_PROFILE: u16 = 0x1000;
/// Mask selecting the 12 bits that identify the two-byte profile.
const TWO_BYTE_PROFILE_MASK: u16 = 0xFFF0;
/// One-byte element id 15 is reserved: processing of the block stops there (RFC 8285 §4.2).
const ONE_BYTE_RESERVED_ID: u8 = 15;
/// Data length of the transport-wide sequence number element.
const TRANSPORT_SEQ_LEN: usize = 2;
/// Data length of the abs-send-time element.
const ABS_SEND_TIME_LEN: usize = 3;
/// Bytes of a [`FrameDescriptor`] on the wire.
pub const FRAME_DESCRIPTOR_LEN: usize = 9;
/// Bit of the frame descriptor's flags byte that marks a keyframe.
const FRAME_FLAG_KEYFRAME: u8 = 0x01;
/// Length of the extension block header (profile + length).
const EXT_HEADER_LEN: usize = 4;
/// abs-send-time counts 2^-18 s and wraps after 2^24 of them, i.e. every 64 s.
const ABS_SEND_TIME_PERIOD_NS: u64 = 64_000_000_000;

/// rtcc's frame descriptor extension, modelled on the generic frame descriptor: 9 bytes,
///
/// ```text
/// flags(8) | frame_id(16) | index(16) | count(16) | reference_delta(16)
/// ```
///
/// `flags` bit 0 is the keyframe flag; the other bits are written as 0 and ignored on parse. The
/// parser rejects `count == 0` and `index >= count`; the encoder writes whatever it is given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FrameDescriptor {
    /// The frame is a keyframe (decodable without any other frame).
    pub keyframe: bool,
    /// Frame number; wraps at 2^16 (the receiver unwraps it with a
    /// [`SeqUnwrapper`](super::SeqUnwrapper)).
    pub frame_id: u16,
    /// This packet's position in its frame, from 0.
    pub index: u16,
    /// Packets in the frame (at least 1).
    pub count: u16,
    /// `frame_id` minus the id of the frame this one predicts from; 0 = none.
    pub reference_delta: u16,
}

impl FrameDescriptor {
    fn write(&self, out: &mut [u8; FRAME_DESCRIPTOR_LEN]) {
        out[0] = if self.keyframe {
            FRAME_FLAG_KEYFRAME
        } else {
            0
        };
        out[1..3].copy_from_slice(&self.frame_id.to_be_bytes());
        out[3..5].copy_from_slice(&self.index.to_be_bytes());
        out[5..7].copy_from_slice(&self.count.to_be_bytes());
        out[7..9].copy_from_slice(&self.reference_delta.to_be_bytes());
    }

    #[inline]
    fn parse(data: &[u8]) -> Result<FrameDescriptor, WireError> {
        let d: &[u8; FRAME_DESCRIPTOR_LEN] = data.try_into().map_err(|_| {
            wrong_length(
                "RTP frame descriptor extension",
                data.len(),
                FRAME_DESCRIPTOR_LEN,
            )
        })?;
        let fd = FrameDescriptor {
            keyframe: d[0] & FRAME_FLAG_KEYFRAME != 0,
            frame_id: be16(d, 1),
            index: be16(d, 3),
            count: be16(d, 5),
            reference_delta: be16(d, 7),
        };
        if fd.count == 0 || fd.index >= fd.count {
            return Err(WireError::Inconsistent {
                what: "RTP frame descriptor extension",
                detail: format!(
                    "packet index {} not below packet count {}",
                    fd.index, fd.count
                ),
            });
        }
        Ok(fd)
    }
}

/// An RTP header as rtcc uses it: the fixed fields plus the three extensions it knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RtpHeader {
    pub marker: bool,
    /// 7 bits; the encoder masks off the top bit.
    pub payload_type: u8,
    pub sequence: u16,
    pub timestamp: u32,
    pub ssrc: u32,
    /// [`EXT_TRANSPORT_SEQ`].
    pub transport_seq: Option<u16>,
    /// [`EXT_ABS_SEND_TIME`]; only the low 24 bits are written.
    pub abs_send_time: Option<u32>,
    /// [`EXT_FRAME`].
    pub frame: Option<FrameDescriptor>,
}

impl RtpHeader {
    /// Bytes of the extension elements (before padding to 32 bits).
    #[inline]
    fn elements_len(&self) -> usize {
        let mut n = 0;
        if self.transport_seq.is_some() {
            n += 1 + TRANSPORT_SEQ_LEN;
        }
        if self.abs_send_time.is_some() {
            n += 1 + ABS_SEND_TIME_LEN;
        }
        if self.frame.is_some() {
            n += 1 + FRAME_DESCRIPTOR_LEN;
        }
        n
    }

    /// Encoded length: the fixed header plus, if any extension is set, the extension block
    /// (4-byte header and the elements padded to a multiple of 4 bytes).
    #[inline]
    pub fn encoded_len(&self) -> usize {
        let e = self.elements_len();
        if e == 0 {
            RTP_HEADER_LEN
        } else {
            RTP_HEADER_LEN + EXT_HEADER_LEN + e.next_multiple_of(4)
        }
    }

    /// Append the header to `out`. Without any extension set there is no extension block (X = 0).
    /// No CSRCs, no padding. Allocates nothing beyond growing `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        let elements = self.elements_len();
        // Largest possible header: 12 + 4 + 20 bytes; build it on the stack, append once.
        let mut buf = [0u8; RTP_HEADER_LEN + EXT_HEADER_LEN + 20];
        let extension = elements > 0;
        buf[0] = (RTP_VERSION << 6) | if extension { 0x10 } else { 0 };
        buf[1] = (u8::from(self.marker) << 7) | (self.payload_type & 0x7F);
        buf[2..4].copy_from_slice(&self.sequence.to_be_bytes());
        buf[4..8].copy_from_slice(&self.timestamp.to_be_bytes());
        buf[8..12].copy_from_slice(&self.ssrc.to_be_bytes());
        if !extension {
            out.extend_from_slice(&buf[..RTP_HEADER_LEN]);
            return;
        }
        let padded = elements.next_multiple_of(4);
        buf[12..14].copy_from_slice(&ONE_BYTE_PROFILE.to_be_bytes());
        buf[14..16].copy_from_slice(&((padded / 4) as u16).to_be_bytes());
        let mut p = RTP_HEADER_LEN + EXT_HEADER_LEN;
        if let Some(seq) = self.transport_seq {
            buf[p] = (EXT_TRANSPORT_SEQ << 4) | (TRANSPORT_SEQ_LEN as u8 - 1);
            buf[p + 1..p + 3].copy_from_slice(&seq.to_be_bytes());
            p += 1 + TRANSPORT_SEQ_LEN;
        }
        if let Some(t) = self.abs_send_time {
            buf[p] = (EXT_ABS_SEND_TIME << 4) | (ABS_SEND_TIME_LEN as u8 - 1);
            buf[p + 1..p + 4].copy_from_slice(&t.to_be_bytes()[1..]);
            p += 1 + ABS_SEND_TIME_LEN;
        }
        if let Some(f) = &self.frame {
            buf[p] = (EXT_FRAME << 4) | (FRAME_DESCRIPTOR_LEN as u8 - 1);
            let mut d = [0u8; FRAME_DESCRIPTOR_LEN];
            f.write(&mut d);
            buf[p + 1..p + 1 + FRAME_DESCRIPTOR_LEN].copy_from_slice(&d);
        }
        // The remaining bytes of `buf` are already zero: padding.
        out.extend_from_slice(&buf[..RTP_HEADER_LEN + EXT_HEADER_LEN + padded]);
    }

    /// Parse the header at the start of `buf` (a whole datagram: with the P bit set its last byte
    /// is the padding count). Returns the header and its length, i.e. the offset of the payload.
    pub fn parse(buf: &[u8]) -> Result<(RtpHeader, usize), WireError> {
        need("RTP header", buf, RTP_HEADER_LEN)?;
        let version = buf[0] >> 6;
        if version != RTP_VERSION {
            return Err(WireError::BadVersion {
                what: "RTP header",
                version,
            });
        }
        let padding = buf[0] & 0x20 != 0;
        let extension = buf[0] & 0x10 != 0;
        let csrc_count = (buf[0] & 0x0F) as usize;
        let mut h = RtpHeader {
            marker: buf[1] & 0x80 != 0,
            payload_type: buf[1] & 0x7F,
            sequence: be16(buf, 2),
            timestamp: be32(buf, 4),
            ssrc: be32(buf, 8),
            ..RtpHeader::default()
        };
        let mut len = RTP_HEADER_LEN + 4 * csrc_count;
        need("RTP CSRC list", buf, len)?;
        if extension {
            need("RTP header extension", buf, len + EXT_HEADER_LEN)?;
            let profile = be16(buf, len);
            let words = be16(buf, len + 2) as usize;
            let start = len + EXT_HEADER_LEN;
            let end = start + 4 * words;
            need("RTP header extension", buf, end)?;
            let block = &buf[start..end];
            if profile == ONE_BYTE_PROFILE {
                parse_one_byte(block, &mut h)?;
            } else if profile & TWO_BYTE_PROFILE_MASK == TWO_BYTE_PROFILE {
                parse_two_byte(block, &mut h)?;
            }
            // Any other profile is an extension rtcc does not know: skipped whole.
            len = end;
        }
        if padding {
            // `buf` is non-empty here (it holds at least the fixed header).
            let count = buf[buf.len() - 1] as usize;
            if count == 0 || len + count > buf.len() {
                return Err(WireError::Inconsistent {
                    what: "RTP padding",
                    detail: format!(
                        "padding count {count} does not fit the {} bytes after the {len}-byte header",
                        buf.len() - len
                    ),
                });
            }
        }
        Ok((h, len))
    }
}

/// Apply one extension element to `h`.
#[inline]
fn apply_element(id: u8, data: &[u8], h: &mut RtpHeader) -> Result<(), WireError> {
    match id {
        EXT_TRANSPORT_SEQ => {
            let d: [u8; TRANSPORT_SEQ_LEN] = data.try_into().map_err(|_| {
                wrong_length(
                    "RTP transport-wide sequence extension",
                    data.len(),
                    TRANSPORT_SEQ_LEN,
                )
            })?;
            h.transport_seq = Some(u16::from_be_bytes(d));
        }
        EXT_ABS_SEND_TIME => {
            let d: [u8; ABS_SEND_TIME_LEN] = data.try_into().map_err(|_| {
                wrong_length("RTP abs-send-time extension", data.len(), ABS_SEND_TIME_LEN)
            })?;
            h.abs_send_time = Some(u32::from_be_bytes([0, d[0], d[1], d[2]]));
        }
        EXT_FRAME => h.frame = Some(FrameDescriptor::parse(data)?),
        _ => {}
    }
    Ok(())
}

/// An extension element of the wrong length (kept out of the per-packet path).
#[cold]
fn wrong_length(what: &'static str, got: usize, expected: usize) -> WireError {
    WireError::Inconsistent {
        what,
        detail: format!("{got} data bytes, expected {expected}"),
    }
}

#[cold]
fn element_overrun(at: usize, len: usize, block: usize) -> WireError {
    WireError::Inconsistent {
        what: "RTP header extension element",
        detail: format!(
            "element at byte {at} with {len} data bytes runs past the {block}-byte block"
        ),
    }
}

/// The block [`RtpHeader::encode`] writes for a media packet (and a retransmission of one):
/// the transport-wide sequence number, abs-send-time and the frame descriptor, each at its
/// fixed offset, then three padding bytes. The id-and-length bytes of the three elements:
const MEDIA_BLOCK_IDS: [(usize, u8); 3] = [
    (0, (EXT_TRANSPORT_SEQ << 4) | (TRANSPORT_SEQ_LEN as u8 - 1)),
    (3, (EXT_ABS_SEND_TIME << 4) | (ABS_SEND_TIME_LEN as u8 - 1)),
    (7, (EXT_FRAME << 4) | (FRAME_DESCRIPTOR_LEN as u8 - 1)),
];
const MEDIA_BLOCK_LEN: usize = 20;

/// RFC 8285 §4.2 one-byte elements.
fn parse_one_byte(block: &[u8], h: &mut RtpHeader) -> Result<(), WireError> {
    // Every media packet of a run carries exactly the block rtcc writes: read it at its fixed
    // offsets, as the loop below would (the same fields, the same checks).
    if let Ok(b) = <&[u8; MEDIA_BLOCK_LEN]>::try_from(block) {
        if MEDIA_BLOCK_IDS.iter().all(|&(at, id)| b[at] == id) && b[17..] == [0; 3] {
            h.transport_seq = Some(be16(b, 1));
            h.abs_send_time = Some(u32::from_be_bytes([0, b[4], b[5], b[6]]));
            h.frame = Some(FrameDescriptor::parse(&b[8..17])?);
            return Ok(());
        }
    }
    parse_one_byte_elements(block, h)
}

/// [`parse_one_byte`] element by element.
fn parse_one_byte_elements(block: &[u8], h: &mut RtpHeader) -> Result<(), WireError> {
    let mut i = 0;
    while let Some(&b) = block.get(i) {
        let id = b >> 4;
        if id == 0 {
            // Padding byte (its length nibble must be 0; tolerated otherwise).
            i += 1;
            continue;
        }
        if id == ONE_BYTE_RESERVED_ID {
            break;
        }
        let len = (b & 0x0F) as usize + 1;
        let data = block
            .get(i + 1..i + 1 + len)
            .ok_or_else(|| element_overrun(i, len, block.len()))?;
        apply_element(id, data, h)?;
        i += 1 + len;
    }
    Ok(())
}

/// RFC 8285 §4.3 two-byte elements.
fn parse_two_byte(block: &[u8], h: &mut RtpHeader) -> Result<(), WireError> {
    let mut i = 0;
    while let Some(&id) = block.get(i) {
        if id == 0 {
            i += 1;
            continue;
        }
        let len = *block
            .get(i + 1)
            .ok_or_else(|| element_overrun(i, 0, block.len()))? as usize;
        let data = block
            .get(i + 2..i + 2 + len)
            .ok_or_else(|| element_overrun(i, len, block.len()))?;
        apply_element(id, data, h)?;
        i += 2 + len;
    }
    Ok(())
}

/// abs-send-time of `t`: seconds in 6.18 fixed point (units of 2^-18 s ≈ 3.8 µs), rounded to
/// nearest, in 24 bits, so it wraps every 64 s.
#[inline]
pub fn abs_send_time(t: Time) -> u32 {
    // (t mod 64 s) · 2^18 < 64e9 · 2^18 ≈ 1.7e16: no overflow in u64.
    let ns = t.0 % ABS_SEND_TIME_PERIOD_NS;
    (((ns << 18) + NS_PER_S / 2) / NS_PER_S) as u32 & 0x00FF_FFFF
}

/// Range of the second byte that marks RTCP when RTP and RTCP share a port (RFC 5761 §4):
/// RTCP packet types 192–223 (SR, RR, SDES, BYE, APP, RTPFB, PSFB, XR are 200–207). RTP payload
/// types 64–95, which would collide with these when the marker bit is set, must not be used.
const RTCP_DEMUX_RANGE: std::ops::RangeInclusive<u8> = 192..=223;

/// Whether a datagram on a port shared by RTP and RTCP is RTCP (RFC 5761 §4): its second byte is
/// in 192..=223. Datagrams shorter than 2 bytes are not RTCP.
#[inline]
pub fn is_rtcp(datagram: &[u8]) -> bool {
    datagram
        .get(1)
        .is_some_and(|b| RTCP_DEMUX_RANGE.contains(b))
}

/// `full` with each of the 8 subsets of its extensions (bit 0: transport-wide sequence number,
/// bit 1: abs-send-time, bit 2: frame descriptor; subset `k` keeps the extensions whose bit is
/// set in `k`).
#[cfg(test)]
pub(crate) fn extension_subsets(full: RtpHeader) -> impl Iterator<Item = RtpHeader> {
    (0..8u8).map(move |mask| RtpHeader {
        transport_seq: full.transport_seq.filter(|_| mask & 1 != 0),
        abs_send_time: full.abs_send_time.filter(|_| mask & 2 != 0),
        frame: full.frame.filter(|_| mask & 4 != 0),
        ..full
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn full() -> RtpHeader {
        RtpHeader {
            marker: true,
            payload_type: 96,
            sequence: 65535,
            timestamp: 0xDEAD_BEEF,
            ssrc: 0x1234_5678,
            transport_seq: Some(4321),
            abs_send_time: Some(abs_send_time(Time(12_345_678_901))),
            frame: Some(FrameDescriptor {
                keyframe: true,
                frame_id: 65535,
                index: 2,
                count: 5,
                reference_delta: 0,
            }),
        }
    }

    fn encode(h: &RtpHeader) -> Vec<u8> {
        let mut v = Vec::new();
        h.encode(&mut v);
        v
    }

    proptest::proptest! {
        /// The fixed-offset read of a media block and the element-by-element parse agree on
        /// any 20-byte block: rtcc's own (any header values) and every one a few bytes away.
        #[test]
        fn the_media_block_shortcut_parses_as_the_elements_do(
            keyframe: bool, index: u16, count: u16,
            edits in proptest::collection::vec((0usize..20, proptest::prelude::any::<u8>()), 0..3),
        ) {
            let h = RtpHeader {
                frame: Some(FrameDescriptor { keyframe, index, count, ..full().frame.unwrap() }),
                ..full()
            };
            let mut block = encode(&h)[RTP_HEADER_LEN + EXT_HEADER_LEN..].to_vec();
            proptest::prop_assert_eq!(block.len(), MEDIA_BLOCK_LEN);
            for (at, b) in edits {
                block[at] = b;
            }
            let (mut fast, mut slow) = (RtpHeader::default(), RtpHeader::default());
            let (a, b) = (parse_one_byte(&block, &mut fast), parse_one_byte_elements(&block, &mut slow));
            proptest::prop_assert_eq!(a, b);
            if fast != slow {
                // Only an error may leave the two half-filled differently.
                proptest::prop_assert!(parse_one_byte(&block, &mut RtpHeader::default()).is_err());
            }
        }
    }

    #[test]
    fn round_trips_every_combination_of_extensions() {
        for (mask, h) in extension_subsets(full()).enumerate() {
            let mut buf = vec![0xAA]; // encode appends: existing bytes stay
            h.encode(&mut buf);
            assert_eq!(buf[0], 0xAA, "encode must append, not overwrite");
            let bytes = &buf[1..];
            assert_eq!(
                bytes.len(),
                h.encoded_len(),
                "encoded_len must match encode"
            );
            assert_eq!(
                bytes.len() % 4,
                0,
                "the header is a whole number of 32-bit words"
            );
            let (p, len) = RtpHeader::parse(bytes).unwrap();
            assert_eq!(p, h, "round trip with extension mask {mask:03b}");
            assert_eq!(
                len,
                bytes.len(),
                "the payload starts right after the header"
            );
        }
    }

    #[test]
    fn lengths_are_as_documented() {
        let mut h = full();
        // 12 + 4 + (3 + 4 + 10 = 17 → 20)
        assert_eq!(h.encoded_len(), 36, "all three extensions: 36 bytes");
        h.frame = None;
        assert_eq!(
            h.encoded_len(),
            24,
            "seq + abs-send-time: 7 element bytes pad to 8"
        );
        h.abs_send_time = None;
        h.transport_seq = None;
        assert_eq!(
            h.encoded_len(),
            RTP_HEADER_LEN,
            "no extension block without extensions"
        );
        assert_eq!(encode(&h)[0], 0x80, "V=2, no P, no X, no CSRC");
    }

    #[test]
    fn payload_offset_follows_the_header_and_payload_is_not_parsed() {
        let h = full();
        let mut buf = encode(&h);
        buf.extend_from_slice(&[1, 2, 3, 4, 5]);
        let (p, off) = RtpHeader::parse(&buf).unwrap();
        assert_eq!(p, h);
        assert_eq!(off, h.encoded_len(), "payload offset = header length");
    }

    #[test]
    fn skips_csrcs_padding_bytes_and_unknown_ids() {
        // V=2, X=1, CC=2; PT 100, no marker.
        let mut b = vec![0x92, 100, 0, 7, 0, 0, 0, 9, 0, 0, 0, 1];
        b.extend_from_slice(&[0xCC; 8]); // two CSRCs
        b.extend_from_slice(&[0xBE, 0xDE, 0, 3]); // 3 words
        b.extend_from_slice(&[0x00]); // padding byte
        b.extend_from_slice(&[0x51, 0xEE, 0xEE]); // unknown id 5, 2 bytes
        b.extend_from_slice(&[0x11, 0x12, 0x34]); // transport seq 0x1234
        b.extend_from_slice(&[0x00; 5]); // padding
        let (h, len) = RtpHeader::parse(&b).unwrap();
        assert_eq!(
            len,
            b.len(),
            "CSRCs and the extension block belong to the header"
        );
        assert_eq!(
            h.transport_seq,
            Some(0x1234),
            "known id after an unknown one is parsed"
        );
        assert_eq!(h.sequence, 7);
        assert_eq!(h.timestamp, 9);
        assert_eq!(h.payload_type, 100);
        assert!(!h.marker);
    }

    #[test]
    fn stops_at_reserved_id_15() {
        let mut b = vec![0x90, 96, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0xBE, 0xDE, 0, 1];
        b.extend_from_slice(&[0xF3, 0x11, 0xFF, 0xFF]); // id 15, then garbage
        let (h, _) = RtpHeader::parse(&b).unwrap();
        assert_eq!(
            h.transport_seq, None,
            "processing stops at id 15 (RFC 8285 §4.2)"
        );
    }

    #[test]
    fn parses_two_byte_elements() {
        let mut b = vec![0x90, 96, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0x10, 0x03, 0, 5];
        b.extend_from_slice(&[0x00]); // padding
        b.extend_from_slice(&[0x21, 0x00]); // unknown id 33, zero length
        b.extend_from_slice(&[EXT_ABS_SEND_TIME, 3, 0x01, 0x02, 0x03]);
        b.extend_from_slice(&[EXT_FRAME, 9, 0, 0, 9, 0, 0, 0, 1, 0, 1]);
        b.push(0); // 19 element bytes, padded to 20
        let (h, len) = RtpHeader::parse(&b).unwrap();
        assert_eq!(len, b.len());
        assert_eq!(h.abs_send_time, Some(0x010203), "two-byte form, appbits 3");
        assert_eq!(
            h.frame,
            Some(FrameDescriptor {
                keyframe: false,
                frame_id: 9,
                index: 0,
                count: 1,
                reference_delta: 1
            })
        );
    }

    #[test]
    fn rejects_every_truncation() {
        let b = encode(&full());
        for n in 0..b.len() {
            let e = RtpHeader::parse(&b[..n]).unwrap_err();
            assert!(
                matches!(e, WireError::Truncated { .. }),
                "a header cut to {n} of {} bytes must be Truncated, got {e:?}",
                b.len()
            );
        }
    }

    #[test]
    fn rejects_wrong_version() {
        let mut b = encode(&full());
        b[0] = (b[0] & 0x3F) | (1 << 6);
        assert_eq!(
            RtpHeader::parse(&b).unwrap_err(),
            WireError::BadVersion {
                what: "RTP header",
                version: 1
            },
            "version 1 is not RTP as of RFC 3550"
        );
    }

    #[test]
    fn rejects_inconsistent_extension_lengths() {
        let mut b = encode(&full());
        // Extension length says 6 words: more than the datagram holds.
        b[15] = 6;
        assert!(
            matches!(
                RtpHeader::parse(&b),
                Err(WireError::Truncated {
                    what: "RTP header extension",
                    ..
                })
            ),
            "an extension block longer than the datagram is truncated"
        );
        // Transport seq element claiming 3 data bytes.
        let mut b = encode(&full());
        b[16] = (EXT_TRANSPORT_SEQ << 4) | 2;
        assert!(
            matches!(
                RtpHeader::parse(&b),
                Err(WireError::Inconsistent {
                    what: "RTP transport-wide sequence extension",
                    ..
                })
            ),
            "a 3-byte transport sequence number is inconsistent with the 16-bit format"
        );
        // An element running past the block: shrink the block to 1 word.
        let mut b = encode(&full());
        b[15] = 1;
        b[16] = (5 << 4) | 7; // unknown id, 8 data bytes in a 4-byte block
        assert!(
            matches!(
                RtpHeader::parse(&b),
                Err(WireError::Inconsistent {
                    what: "RTP header extension element",
                    ..
                })
            ),
            "an element longer than its block is inconsistent"
        );
    }

    #[test]
    fn rejects_frame_index_not_below_count() {
        for (index, count) in [(5u16, 5u16), (0, 0), (9, 3)] {
            let mut h = full();
            h.frame = Some(FrameDescriptor {
                index,
                count,
                ..FrameDescriptor::default()
            });
            let b = encode(&h);
            assert!(
                matches!(
                    RtpHeader::parse(&b),
                    Err(WireError::Inconsistent {
                        what: "RTP frame descriptor extension",
                        ..
                    })
                ),
                "index {index} of {count} packets is not a packet of the frame"
            );
        }
    }

    #[test]
    fn checks_the_padding_count() {
        let mut b = encode(&full());
        b[0] |= 0x20;
        b.extend_from_slice(&[0, 0, 3]);
        assert!(
            RtpHeader::parse(&b).is_ok(),
            "3 padding bytes after the header fit"
        );
        *b.last_mut().unwrap() = 4;
        assert!(
            matches!(
                RtpHeader::parse(&b),
                Err(WireError::Inconsistent {
                    what: "RTP padding",
                    ..
                })
            ),
            "4 padding bytes do not fit in 3 bytes after the header"
        );
    }

    #[test]
    fn abs_send_time_is_6_18_fixed_point_wrapping_at_64_s() {
        assert_eq!(abs_send_time(Time(0)), 0);
        assert_eq!(
            abs_send_time(Time::from_millis(1000)),
            1 << 18,
            "1 s = 2^18"
        );
        assert_eq!(abs_send_time(Time::from_millis(500)), 1 << 17);
        assert_eq!(
            abs_send_time(Time::from_millis(64_000 + 250)),
            abs_send_time(Time::from_millis(250)),
            "wraps every 64 s"
        );
        assert_eq!(
            abs_send_time(Time(63_999_999_999)),
            0,
            "rounds to nearest: a nanosecond before the wrap rounds to 0"
        );
        assert_eq!(abs_send_time(Time(u64::MAX)) >> 24, 0, "fits in 24 bits");
    }

    #[test]
    fn demultiplexes_rtcp_by_the_second_byte() {
        let rtp = encode(&full());
        assert!(
            !is_rtcp(&rtp),
            "RTP with PT 96 and the marker set has second byte 224"
        );
        assert!(is_rtcp(&[0x80, 200, 0, 6]), "SR (200) is RTCP");
        assert!(is_rtcp(&[0x8F, 205, 0, 6]), "RTPFB (205) is RTCP");
        assert!(!is_rtcp(&[0x80]), "too short to tell: not RTCP");
        assert!(!is_rtcp(&[0x80, 111]), "PT 111 without marker is RTP");
    }
}
