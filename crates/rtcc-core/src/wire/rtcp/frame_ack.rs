//! rtcc's per-frame acknowledgement, an RTCP APP packet (RFC 3550 §6.7; PT 204, subtype 0,
//! name "RTFA").
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! |V=2|P| subtype |   PT=204      |          length = 9           |
//! |                    SSRC of packet sender                      |
//! |      'R'      |      'T'      |      'F'      |      'A'      |
//! |                         media SSRC                            |
//! |           frame id            |L|      reserved (0)           |
//! |            complete time, µs (64 bits, high word)             |
//! |                     complete time, low word                   |
//! |        first receive: µs before complete (32 bits)            |
//! |        last receive: µs before complete (32 bits)             |
//! |                    frame size, bytes                          |
//! ```
//!
//! One message tells the sender when the receiver got the first and last packet of a frame and
//! when the frame became complete (decodable), and how big it was: 40 bytes in all.
//!
//! **L (lost)**, the top bit of the word after the frame id: the receiver gave up on the frame (it
//! missed its presentation timeout, or was abandoned incomplete) and acknowledges it late, after a
//! later frame's acknowledgement, as C³G's client does (c3g_rtvl.txt §V-B: "an ACK for the
//! completely lost frame after a later frame has been received"). The times of a lost frame's
//! acknowledgement are those of whatever arrived, or the moment the receiver gave up when nothing
//! did (then the size is 0). Written by `endpoint::frame_acks` when the flow's receiver
//! acknowledges at display (`frame_ack = { at = "display" }`).
//!
//! Times are on the receiver's clock, **truncated to whole microseconds** on the wire: the
//! complete time as a 64-bit count of µs, the first and last receive times as 32-bit µs offsets
//! *before* it. The encoder clamps an offset to 0 when that time is after `complete` and to
//! 2^32 − 1 µs (71 min) when it is earlier than that; a parse gives the quantised (and clamped)
//! times. The other 15 bits of that word are reserved: written 0 and ignored, so a message from
//! before the flag existed (all 16 bits 0) parses as not lost. An APP packet with another name or
//! subtype is [`RtcpPacket::Unknown`].

use super::{be16, be32, begin, finish, need, parse_as, RtcpPacket, WireError, PT_APP};
use crate::units::Time;

/// The APP packet name of a frame acknowledgement.
pub const FRAME_ACK_NAME: [u8; 4] = *b"RTFA";
/// The APP subtype of a frame acknowledgement.
pub const FRAME_ACK_SUBTYPE: u8 = 0;
/// Bytes of the application data after the sender SSRC and the name.
const FRAME_ACK_DATA_LEN: usize = 28;
/// Bytes of the body: sender SSRC, name and data.
const FRAME_ACK_BODY_LEN: usize = 8 + FRAME_ACK_DATA_LEN;
const NS_PER_US: u64 = 1_000;
/// The L (lost) bit of the 16-bit word after the frame id.
const LOST_FLAG: u16 = 0x8000;

/// Per-frame acknowledgement from the receiver.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FrameAckMessage {
    pub sender_ssrc: u32,
    pub media_ssrc: u32,
    pub frame_id: u16,
    pub first_receive: Time,
    pub last_receive: Time,
    pub complete: Time,
    /// Frame size in bytes.
    pub size: u32,
    /// The receiver gave up on the frame: a late acknowledgement (the L bit).
    pub lost: bool,
}

/// µs from `t` to `complete` (both already truncated to µs), clamped to 0..=u32::MAX.
fn offset_us(complete_us: u64, t: Time) -> u32 {
    let t_us = t.0 / NS_PER_US;
    u32::try_from(complete_us.saturating_sub(t_us)).unwrap_or(u32::MAX)
}

impl FrameAckMessage {
    /// Bytes of a frame acknowledgement on the wire.
    pub const LEN: usize = 4 + FRAME_ACK_BODY_LEN;

    pub(crate) fn is_frame_ack(subtype: u8, body: &[u8]) -> bool {
        subtype == FRAME_ACK_SUBTYPE && body.get(4..8) == Some(&FRAME_ACK_NAME[..])
    }

    /// Append the packet (always succeeds; `Result` for symmetry with the other messages).
    pub fn encode(&self, out: &mut Vec<u8>) -> Result<(), WireError> {
        let complete_us = self.complete.0 / NS_PER_US;
        let start = begin(out, FRAME_ACK_SUBTYPE, PT_APP);
        out.extend_from_slice(&self.sender_ssrc.to_be_bytes());
        out.extend_from_slice(&FRAME_ACK_NAME);
        out.extend_from_slice(&self.media_ssrc.to_be_bytes());
        out.extend_from_slice(&self.frame_id.to_be_bytes());
        let flags = if self.lost { LOST_FLAG } else { 0 };
        out.extend_from_slice(&flags.to_be_bytes());
        out.extend_from_slice(&complete_us.to_be_bytes());
        out.extend_from_slice(&offset_us(complete_us, self.first_receive).to_be_bytes());
        out.extend_from_slice(&offset_us(complete_us, self.last_receive).to_be_bytes());
        out.extend_from_slice(&self.size.to_be_bytes());
        finish(out, start, "RTCP frame ack", false)
    }

    /// Parse an APP body named "RTFA": exactly 36 bytes; the complete time must fit in
    /// nanoseconds and the offsets must not reach before time 0.
    pub fn parse_body(body: &[u8]) -> Result<FrameAckMessage, WireError> {
        need("RTCP frame ack", body, FRAME_ACK_BODY_LEN)?;
        if body.len() != FRAME_ACK_BODY_LEN {
            return Err(WireError::Inconsistent {
                what: "RTCP frame ack",
                detail: format!("{} body bytes, expected {FRAME_ACK_BODY_LEN}", body.len()),
            });
        }
        let complete_us = (u64::from(be32(body, 16)) << 32) | u64::from(be32(body, 20));
        let first_off = u64::from(be32(body, 24));
        let last_off = u64::from(be32(body, 28));
        let bad = |detail: String| WireError::Inconsistent {
            what: "RTCP frame ack",
            detail,
        };
        let complete_ns = complete_us
            .checked_mul(NS_PER_US)
            .ok_or_else(|| bad(format!("complete time {complete_us} µs overflows")))?;
        let before = |off: u64| {
            complete_us
                .checked_sub(off)
                .map(|us| Time(us * NS_PER_US))
                .ok_or_else(|| bad(format!("offset {off} µs reaches before time 0")))
        };
        Ok(FrameAckMessage {
            sender_ssrc: be32(body, 0),
            media_ssrc: be32(body, 8),
            frame_id: be16(body, 12),
            first_receive: before(first_off)?,
            last_receive: before(last_off)?,
            complete: Time(complete_ns),
            size: be32(body, 32),
            lost: be16(body, 14) & LOST_FLAG != 0,
        })
    }

    /// Parse a datagram holding exactly this one packet.
    pub fn parse(packet: &[u8]) -> Result<FrameAckMessage, WireError> {
        parse_as(packet, "RTCP frame ack", |p| match p {
            RtcpPacket::FrameAck(n) => Some(n),
            _ => None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::rtcp::parse_compound;

    fn ack() -> FrameAckMessage {
        FrameAckMessage {
            sender_ssrc: 0x5555_0001,
            media_ssrc: 0x1234,
            frame_id: 65535,
            first_receive: Time(10_000_123_000),
            last_receive: Time(10_020_456_000),
            complete: Time(10_021_000_000),
            size: 48_000,
            lost: false,
        }
    }

    fn enc(a: &FrameAckMessage) -> Vec<u8> {
        let mut out = Vec::new();
        a.encode(&mut out).unwrap();
        out
    }

    #[test]
    fn round_trips_microsecond_times() {
        let b = enc(&ack());
        assert_eq!(b.len(), FrameAckMessage::LEN, "40 bytes");
        assert_eq!(&b[..4], &[0x80, 204, 0, 9], "APP subtype 0, 10 words");
        assert_eq!(&b[8..12], b"RTFA");
        assert_eq!(FrameAckMessage::parse(&b).unwrap(), ack());
    }

    #[test]
    fn the_lost_flag_is_the_top_bit_after_the_frame_id() {
        let lost = FrameAckMessage {
            lost: true,
            ..ack()
        };
        let b = enc(&lost);
        assert_eq!(b.len(), FrameAckMessage::LEN, "the flag costs no byte");
        assert_eq!(
            &b[18..20],
            &[0x80, 0],
            "L is bit 0 of the word after the frame id"
        );
        assert_eq!(FrameAckMessage::parse(&b).unwrap(), lost);
        assert_eq!(&enc(&ack())[18..20], &[0, 0], "not lost: the word stays 0");
    }

    #[test]
    fn a_message_from_before_the_flag_parses_and_reserved_bits_are_ignored() {
        // The bytes of an acknowledgement written before the L bit existed (reserved = 0).
        let old: Vec<u8> = [
            &[0x80, 204, 0, 9][..],
            &0x5555_0001u32.to_be_bytes(),
            b"RTFA",
            &0x1234u32.to_be_bytes(),
            &65535u16.to_be_bytes(),
            &[0, 0],
            &10_021_000u64.to_be_bytes(),
            &(10_021_000u32 - 10_000_123).to_be_bytes(),
            &(10_021_000u32 - 10_020_456).to_be_bytes(),
            &48_000u32.to_be_bytes(),
        ]
        .concat();
        assert_eq!(FrameAckMessage::parse(&old).unwrap(), ack());
        let mut other = old.clone();
        other[18..20].copy_from_slice(&0x7FFFu16.to_be_bytes());
        assert_eq!(
            FrameAckMessage::parse(&other).unwrap(),
            ack(),
            "the 15 reserved bits are ignored"
        );
        other[18] |= 0x80;
        assert!(FrameAckMessage::parse(&other).unwrap().lost);
    }

    #[test]
    fn truncates_to_microseconds_and_clamps_offsets() {
        let mut a = ack();
        a.first_receive = Time(a.first_receive.0 + 999);
        a.complete = Time(a.complete.0 + 1);
        a.last_receive = Time(a.complete.0 + 5_000); // after complete: clamped
        let p = FrameAckMessage::parse(&enc(&a)).unwrap();
        assert_eq!(
            p.first_receive,
            ack().first_receive,
            "999 ns truncated away"
        );
        assert_eq!(p.complete, ack().complete, "1 ns truncated away");
        assert_eq!(
            p.last_receive, p.complete,
            "a receive after complete clamps to it"
        );
        a.first_receive = Time(0);
        a.complete = Time(5_000_000_000_000); // 5000 s: offset too long for 32 bits of µs
        let p = FrameAckMessage::parse(&enc(&a)).unwrap();
        assert_eq!(
            p.complete.0 - p.first_receive.0,
            u32::MAX as u64 * 1000,
            "an offset beyond 2^32 µs clamps to 2^32 − 1 µs"
        );
    }

    #[test]
    fn rejects_truncation_bad_lengths_and_impossible_times() {
        let b = enc(&ack());
        for n in 0..FRAME_ACK_BODY_LEN {
            assert!(
                matches!(
                    FrameAckMessage::parse_body(&b[4..4 + n]),
                    Err(WireError::Truncated { .. })
                ),
                "a frame ack body of {n} bytes is truncated"
            );
        }
        let mut long = b.clone();
        long[3] += 1;
        long.extend_from_slice(&[0; 4]);
        assert!(
            matches!(
                parse_compound(&long),
                Err(WireError::Inconsistent {
                    what: "RTCP frame ack",
                    ..
                })
            ),
            "a 44-byte RTFA packet is not the 40-byte format"
        );
        let mut late = b.clone();
        late[28..32].copy_from_slice(&u32::MAX.to_be_bytes()); // first offset > complete
        late[20..28].copy_from_slice(&1000u64.to_be_bytes());
        assert!(matches!(
            FrameAckMessage::parse(&late),
            Err(WireError::Inconsistent { .. })
        ));
        let mut huge = b.clone();
        huge[20..28].copy_from_slice(&u64::MAX.to_be_bytes());
        assert!(
            matches!(
                FrameAckMessage::parse(&huge),
                Err(WireError::Inconsistent { .. })
            ),
            "2^64 µs does not fit a nanosecond Time"
        );
    }

    #[test]
    fn other_app_packets_are_unknown() {
        super::super::assert_other_apps_are_unknown(&enc(&ack()), 8, 1);
    }
}
