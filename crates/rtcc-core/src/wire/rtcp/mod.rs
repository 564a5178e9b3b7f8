//! RTCP (RFC 3550 §6): the common header, compound datagrams, and the messages rtcc exchanges.
//!
//! Every RTCP packet starts with the same 32-bit header (RFC 3550 §6.4.1):
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |V=2|P|  count  |      PT       |             length            |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```
//!
//! - `count` (5 bits) is the report count of SR/RR, the feedback message type (FMT) of
//!   RTPFB/PSFB (RFC 4585 §6.1), the subtype of APP.
//! - `length` is the packet's length in 32-bit words **minus one** (header included), so every
//!   packet is a multiple of 4 bytes and packets can be stacked into a *compound* datagram
//!   (§6.1) that [`parse_compound`] walks.
//! - `P`: the packet's last byte counts padding bytes at its end (including itself).
//!
//! rtcc does not require a compound to start with SR/RR (reduced-size RTCP, RFC 5506), and skips
//! packet types it does not know ([`RtcpPacket::Unknown`]) rather than failing.
//!
//! Feedback messages (RFC 4585 §6.1) continue the header with the sender's SSRC and the media
//! source's SSRC, then feedback control information (FCI) specific to the message:
//!
//! | PT  | FMT | message | module |
//! |-----|-----|---------|--------|
//! | 200 |  –  | sender report | [`report`] |
//! | 201 |  –  | receiver report | [`report`] |
//! | 204 | 0, "RTFA" | rtcc frame acknowledgement | [`frame_ack`] |
//! | 204 | 0, "RTRR" | rtcc receiver rate report | [`rate_report`] |
//! | 204 | 0, "RECE" | rtcc TCP model's ECN-Echo flag | [`ecn_echo`] |
//! | 205 |  1  | generic NACK | [`feedback`] |
//! | 205 | 11  | RFC 8888 congestion control feedback | [`ccfb`] |
//! | 205 | 15  | transport-wide CC feedback | [`twcc`] |
//! | 206 |  1  | picture loss indication | [`feedback`] |
//! | 206 | 15, "REMB" | receiver estimated maximum bitrate | [`feedback`] |

pub mod ccfb;
pub mod ecn_echo;
pub mod feedback;
pub mod frame_ack;
pub mod rate_report;
pub mod report;
pub mod twcc;

pub use ccfb::{CcfbBlock, CcfbMetric, CcfbReport};
pub use ecn_echo::EcnEchoMessage;
pub use feedback::{Nack, Pli, Remb};
pub use frame_ack::FrameAckMessage;
pub use rate_report::RateReportMessage;
pub use report::{ntp_middle32, ntp_time, ReceiverReport, ReportBlock, SenderReport};
pub use twcc::TransportCcFeedback;

pub(crate) use super::{be16, be32};
use super::{need, WireError};

/// Length of the common header.
pub const RTCP_HEADER_LEN: usize = 4;
/// RTCP version (top two bits of the first byte).
pub const RTCP_VERSION: u8 = 2;
/// Sender report (RFC 3550 §6.4.1).
pub const PT_SR: u8 = 200;
/// Receiver report (RFC 3550 §6.4.2).
pub const PT_RR: u8 = 201;
/// Source description (RFC 3550 §6.5); skipped.
pub const PT_SDES: u8 = 202;
/// Goodbye (RFC 3550 §6.6); skipped.
pub const PT_BYE: u8 = 203;
/// Application-defined (RFC 3550 §6.7).
pub const PT_APP: u8 = 204;
/// Transport-layer feedback (RFC 4585 §6.2).
pub const PT_RTPFB: u8 = 205;
/// Payload-specific feedback (RFC 4585 §6.3).
pub const PT_PSFB: u8 = 206;
/// RTPFB FMT of generic NACK (RFC 4585 §6.2.1).
pub const FMT_NACK: u8 = 1;
/// RTPFB FMT of RFC 8888 congestion control feedback (§3.1).
pub const FMT_CCFB: u8 = 11;
/// RTPFB FMT of transport-wide CC feedback (draft-holmer-rmcat-transport-wide-cc-extensions-01
/// §3.1).
pub const FMT_TWCC: u8 = 15;
/// PSFB FMT of the picture loss indication (RFC 4585 §6.3.1).
pub const FMT_PLI: u8 = 1;
/// PSFB FMT of application layer feedback (RFC 4585 §6.4), which carries REMB.
pub const FMT_AFB: u8 = 15;
/// Largest value of the 5-bit count/FMT/subtype field.
pub const MAX_COUNT: u8 = 31;
/// Bytes of the two SSRCs that start every feedback message (RFC 4585 §6.1).
pub(crate) const FEEDBACK_SSRCS_LEN: usize = 8;

/// The RTCP common header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RtcpHeader {
    pub padding: bool,
    /// Report count, FMT or subtype (5 bits).
    pub count: u8,
    pub packet_type: u8,
    /// Length in 32-bit words minus one.
    pub length: u16,
}

impl RtcpHeader {
    /// Parse the 4-byte header at the start of `buf` (the rest of the packet is not checked).
    pub fn parse(buf: &[u8]) -> Result<RtcpHeader, WireError> {
        need("RTCP header", buf, RTCP_HEADER_LEN)?;
        let version = buf[0] >> 6;
        if version != RTCP_VERSION {
            return Err(WireError::BadVersion {
                what: "RTCP header",
                version,
            });
        }
        Ok(RtcpHeader {
            padding: buf[0] & 0x20 != 0,
            count: buf[0] & 0x1F,
            packet_type: buf[1],
            length: u16::from_be_bytes([buf[2], buf[3]]),
        })
    }

    /// The whole packet's length in bytes, header included.
    pub fn packet_len(&self) -> usize {
        (self.length as usize + 1) * 4
    }
}

/// Split the first packet off `buf`: its header, its body (after the header, padding removed)
/// and the rest of the datagram.
fn split_packet(buf: &[u8]) -> Result<(RtcpHeader, &[u8], &[u8]), WireError> {
    let h = RtcpHeader::parse(buf)?;
    let len = h.packet_len();
    need("RTCP packet", buf, len)?;
    let (packet, rest) = buf.split_at(len);
    let mut body = &packet[RTCP_HEADER_LEN..];
    if h.padding {
        // An empty body (length 0) has no count byte: treated as count 0, an error.
        let count = body.last().copied().unwrap_or(0) as usize;
        if count == 0 || count > body.len() {
            return Err(WireError::Inconsistent {
                what: "RTCP padding",
                detail: format!(
                    "padding count {count} with {} bytes after the header",
                    body.len()
                ),
            });
        }
        body = &body[..body.len() - count];
    }
    Ok((h, body, rest))
}

/// One parsed RTCP packet.
#[derive(Debug, Clone, PartialEq)]
pub enum RtcpPacket {
    SenderReport(SenderReport),
    ReceiverReport(ReceiverReport),
    TransportCc(TransportCcFeedback),
    Ccfb(CcfbReport),
    Remb(Remb),
    Nack(Nack),
    Pli(Pli),
    FrameAck(FrameAckMessage),
    RateReport(RateReportMessage),
    EcnEcho(EcnEchoMessage),
    /// A packet type (or FMT, or APP name) rtcc does not know; skipped, not an error.
    Unknown {
        packet_type: u8,
        fmt: u8,
    },
}

/// Parse one packet's body given its header.
fn parse_packet(h: &RtcpHeader, body: &[u8]) -> Result<RtcpPacket, WireError> {
    let unknown = RtcpPacket::Unknown {
        packet_type: h.packet_type,
        fmt: h.count,
    };
    Ok(match (h.packet_type, h.count) {
        (PT_SR, rc) => RtcpPacket::SenderReport(SenderReport::parse_body(rc, body)?),
        (PT_RR, rc) => RtcpPacket::ReceiverReport(ReceiverReport::parse_body(rc, body)?),
        (PT_RTPFB, FMT_NACK) => RtcpPacket::Nack(Nack::parse_body(body)?),
        (PT_RTPFB, FMT_TWCC) => RtcpPacket::TransportCc(TransportCcFeedback::parse_body(body)?),
        (PT_RTPFB, FMT_CCFB) => RtcpPacket::Ccfb(CcfbReport::parse_body(body)?),
        (PT_PSFB, FMT_PLI) => RtcpPacket::Pli(Pli::parse_body(body)?),
        (PT_PSFB, FMT_AFB) if Remb::is_remb(body) => RtcpPacket::Remb(Remb::parse_body(body)?),
        (PT_APP, subtype) if FrameAckMessage::is_frame_ack(subtype, body) => {
            RtcpPacket::FrameAck(FrameAckMessage::parse_body(body)?)
        }
        (PT_APP, subtype) if RateReportMessage::is_rate_report(subtype, body) => {
            RtcpPacket::RateReport(RateReportMessage::parse_body(body)?)
        }
        (PT_APP, subtype) if EcnEchoMessage::is_ecn_echo(subtype, body) => {
            RtcpPacket::EcnEcho(EcnEchoMessage::parse_body(body)?)
        }
        _ => unknown,
    })
}

/// Parse every packet of a compound RTCP datagram (RFC 3550 §6.1). Each packet's length field
/// must lie within the datagram, and the packets must fill it exactly; unknown packet types are
/// returned as [`RtcpPacket::Unknown`]. An empty datagram is [`WireError::Truncated`].
pub fn parse_compound(datagram: &[u8]) -> Result<Vec<RtcpPacket>, WireError> {
    need("RTCP compound", datagram, RTCP_HEADER_LEN)?;
    let mut packets = Vec::new();
    let mut rest = datagram;
    while !rest.is_empty() {
        let (h, body, r) = split_packet(rest)?;
        packets.push(parse_packet(&h, body)?);
        rest = r;
    }
    Ok(packets)
}

/// Parse a datagram that must hold exactly one RTCP packet.
pub fn parse_single(packet: &[u8]) -> Result<RtcpPacket, WireError> {
    let (h, body, rest) = split_packet(packet)?;
    if !rest.is_empty() {
        return Err(WireError::Inconsistent {
            what: "RTCP packet",
            detail: format!(
                "{} bytes after a {}-byte packet",
                rest.len(),
                h.packet_len()
            ),
        });
    }
    parse_packet(&h, body)
}

impl RtcpPacket {
    /// A short name of the message, for errors and logs.
    pub fn kind(&self) -> &'static str {
        match self {
            RtcpPacket::SenderReport(_) => "sender report",
            RtcpPacket::ReceiverReport(_) => "receiver report",
            RtcpPacket::TransportCc(_) => "transport-wide CC feedback",
            RtcpPacket::Ccfb(_) => "RFC 8888 feedback",
            RtcpPacket::Remb(_) => "REMB",
            RtcpPacket::Nack(_) => "generic NACK",
            RtcpPacket::Pli(_) => "PLI",
            RtcpPacket::FrameAck(_) => "frame ack",
            RtcpPacket::RateReport(_) => "rate report",
            RtcpPacket::EcnEcho(_) => "ECN-Echo",
            RtcpPacket::Unknown { .. } => "unknown RTCP packet",
        }
    }

    /// Append this packet to `out`; a compound datagram is several appends. On error `out` is
    /// left as it was. [`RtcpPacket::Unknown`] cannot be encoded (its body is not kept).
    pub fn encode(&self, out: &mut Vec<u8>) -> Result<(), WireError> {
        match self {
            RtcpPacket::SenderReport(p) => p.encode(out),
            RtcpPacket::ReceiverReport(p) => p.encode(out),
            RtcpPacket::TransportCc(p) => p.encode(out),
            RtcpPacket::Ccfb(p) => p.encode(out),
            RtcpPacket::Remb(p) => p.encode(out),
            RtcpPacket::Nack(p) => p.encode(out),
            RtcpPacket::Pli(p) => p.encode(out),
            RtcpPacket::FrameAck(p) => p.encode(out),
            RtcpPacket::RateReport(p) => p.encode(out),
            RtcpPacket::EcnEcho(p) => p.encode(out),
            RtcpPacket::Unknown { packet_type, fmt } => Err(WireError::Unsupported {
                what: "RTCP packet",
                detail: format!("encoding of an unknown packet (type {packet_type}, fmt {fmt})"),
            }),
        }
    }
}

/// Start a packet: append a header with a zero length, return where it starts.
pub(crate) fn begin(out: &mut Vec<u8>, count: u8, packet_type: u8) -> usize {
    debug_assert!(count <= MAX_COUNT);
    let start = out.len();
    out.extend_from_slice(&[(RTCP_VERSION << 6) | (count & MAX_COUNT), packet_type, 0, 0]);
    start
}

/// Finish the packet started at `start`: pad it to 32 bits (with the P bit and a count byte
/// when `pad_with_count`, with zero bytes otherwise) and write its length. If the packet is too
/// long for the 16-bit length field, remove it from `out` and fail.
pub(crate) fn finish(
    out: &mut Vec<u8>,
    start: usize,
    what: &'static str,
    pad_with_count: bool,
) -> Result<(), WireError> {
    let pad = (4 - (out.len() - start) % 4) % 4;
    if pad > 0 {
        out.resize(out.len() + pad, 0);
        if pad_with_count {
            let last = out.len() - 1;
            out[last] = pad as u8;
            out[start] |= 0x20;
        }
    }
    let words = (out.len() - start) / 4 - 1;
    let Ok(words) = u16::try_from(words) else {
        out.truncate(start);
        return Err(WireError::Inconsistent {
            what,
            detail: format!(
                "{} 32-bit words do not fit the 16-bit length field",
                words + 1
            ),
        });
    };
    out[start + 2..start + 4].copy_from_slice(&words.to_be_bytes());
    Ok(())
}

/// Parse a whole single packet and demand it be of the variant `pick` selects.
pub(crate) fn parse_as<T>(
    packet: &[u8],
    what: &'static str,
    pick: impl FnOnce(RtcpPacket) -> Option<T>,
) -> Result<T, WireError> {
    let p = parse_single(packet)?;
    let kind = p.kind();
    pick(p).ok_or_else(|| WireError::Inconsistent {
        what,
        detail: format!("the packet is a {kind}"),
    })
}

/// For the tests of rtcc's APP messages: `packet` (one of them, encoded) parses as an unknown
/// APP packet once byte `name_byte` of its name is changed, and once its subtype is `subtype`.
#[cfg(test)]
pub(crate) fn assert_other_apps_are_unknown(packet: &[u8], name_byte: usize, subtype: u8) {
    let mut b = packet.to_vec();
    b[name_byte] = b'X';
    assert_eq!(
        parse_compound(&b).unwrap(),
        vec![RtcpPacket::Unknown {
            packet_type: PT_APP,
            fmt: 0
        }],
        "another name"
    );
    let mut b = packet.to_vec();
    b[0] |= subtype;
    assert_eq!(
        parse_compound(&b).unwrap(),
        vec![RtcpPacket::Unknown {
            packet_type: PT_APP,
            fmt: subtype
        }],
        "subtype {subtype}"
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::Time;

    fn sample() -> Vec<RtcpPacket> {
        vec![
            RtcpPacket::ReceiverReport(ReceiverReport {
                sender_ssrc: 1,
                blocks: vec![],
            }),
            RtcpPacket::TransportCc(TransportCcFeedback {
                sender_ssrc: 1,
                media_ssrc: 2,
                base_seq: 65533,
                feedback_count: 7,
                receive_times: vec![
                    Some(Time::from_millis(1000)),
                    None,
                    Some(Time::from_millis(1001)),
                ],
            }),
            RtcpPacket::Pli(Pli {
                sender_ssrc: 1,
                media_ssrc: 2,
            }),
            RtcpPacket::Nack(Nack {
                sender_ssrc: 1,
                media_ssrc: 2,
                lost: vec![65535, 0, 5],
            }),
        ]
    }

    #[test]
    fn compound_round_trip() {
        let mut out = Vec::new();
        for p in sample() {
            p.encode(&mut out).unwrap();
        }
        assert_eq!(out.len() % 4, 0, "every packet is a multiple of 32 bits");
        assert_eq!(
            parse_compound(&out).unwrap(),
            sample(),
            "a compound parses back to its packets in order"
        );
    }

    #[test]
    fn skips_unknown_packets() {
        let mut out = Vec::new();
        // SDES with one empty chunk: SSRC + 4 zero bytes (end of items).
        out.extend_from_slice(&[0x81, PT_SDES, 0, 2, 0, 0, 0, 9, 0, 0, 0, 0]);
        // RTPFB with an FMT rtcc does not know (3: TMMBR).
        out.extend_from_slice(&[0x83, PT_RTPFB, 0, 2, 0, 0, 0, 1, 0, 0, 0, 2]);
        sample()[2].encode(&mut out).unwrap();
        let ps = parse_compound(&out).unwrap();
        assert_eq!(
            ps,
            vec![
                RtcpPacket::Unknown {
                    packet_type: PT_SDES,
                    fmt: 1
                },
                RtcpPacket::Unknown {
                    packet_type: PT_RTPFB,
                    fmt: 3
                },
                sample()[2].clone(),
            ],
            "unknown packets are reported and skipped, the known one after them is parsed"
        );
    }

    #[test]
    fn rejects_length_fields_outside_the_datagram() {
        let mut out = Vec::new();
        for p in sample() {
            p.encode(&mut out).unwrap();
        }
        // Where each packet ends: a compound cut there is a shorter valid compound.
        let mut ends = Vec::new();
        let mut len = 0;
        for p in sample() {
            let mut one = Vec::new();
            p.encode(&mut one).unwrap();
            len += one.len();
            ends.push(len);
        }
        for n in 0..out.len() {
            match ends.iter().position(|&e| e == n) {
                Some(i) => assert_eq!(
                    parse_compound(&out[..n]).unwrap(),
                    sample()[..=i].to_vec(),
                    "a compound cut after packet {i} holds the packets before the cut"
                ),
                None => {
                    let e = parse_compound(&out[..n]).unwrap_err();
                    assert!(
                        matches!(e, WireError::Truncated { .. }),
                        "a compound cut to {n} of {} bytes inside a packet must be Truncated, got {e:?}",
                        out.len()
                    );
                }
            }
        }
        // Length field one word longer than the datagram.
        let mut one = Vec::new();
        sample()[2].encode(&mut one).unwrap();
        one[3] += 1;
        assert!(
            matches!(
                parse_compound(&one),
                Err(WireError::Truncated {
                    what: "RTCP packet",
                    need: 16,
                    have: 12
                })
            ),
            "a length field beyond the datagram is truncation"
        );
    }

    #[test]
    fn rejects_wrong_version_in_any_packet() {
        let mut out = Vec::new();
        for p in sample() {
            p.encode(&mut out).unwrap();
        }
        let second = 8; // the empty RR is 8 bytes
        out[second] &= 0x3F;
        assert_eq!(
            parse_compound(&out).unwrap_err(),
            WireError::BadVersion {
                what: "RTCP header",
                version: 0
            },
            "a version-0 packet inside a compound is rejected"
        );
    }

    #[test]
    fn checks_padding_counts() {
        let mut one = Vec::new();
        sample()[2].encode(&mut one).unwrap();
        // Add one word of padding ending in its count: 4.
        one[0] |= 0x20;
        one[3] += 1;
        one.extend_from_slice(&[0, 0, 0, 4]);
        assert_eq!(parse_compound(&one).unwrap(), vec![sample()[2].clone()]);
        let last = one.len() - 1;
        one[last] = 0;
        assert!(
            matches!(
                parse_compound(&one),
                Err(WireError::Inconsistent {
                    what: "RTCP padding",
                    ..
                })
            ),
            "a padding count of 0 is inconsistent with the P bit"
        );
        one[last] = 13;
        assert!(
            matches!(
                parse_compound(&one),
                Err(WireError::Inconsistent {
                    what: "RTCP padding",
                    ..
                })
            ),
            "13 padding bytes do not fit a 12-byte body"
        );
    }

    #[test]
    fn unknown_cannot_be_encoded_and_single_parse_wants_one_packet() {
        let mut out = vec![1, 2];
        let e = RtcpPacket::Unknown {
            packet_type: 202,
            fmt: 0,
        }
        .encode(&mut out);
        assert!(matches!(e, Err(WireError::Unsupported { .. })));
        assert_eq!(out, vec![1, 2], "a failed encode leaves out unchanged");
        let mut two = Vec::new();
        sample()[2].encode(&mut two).unwrap();
        sample()[2].encode(&mut two).unwrap();
        assert!(matches!(
            parse_single(&two),
            Err(WireError::Inconsistent {
                what: "RTCP packet",
                ..
            })
        ));
    }
}
