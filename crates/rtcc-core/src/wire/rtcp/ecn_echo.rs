//! rtcc's TCP model's ECN-Echo flag, an RTCP APP packet (RFC 3550 §6.7; PT 204, subtype 0,
//! name "RECE").
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! |V=2|P| subtype |   PT=204      |          length = 2           |
//! |                    SSRC of packet sender                      |
//! |      'R'      |      'E'      |      'C'      |      'E'      |
//! ```
//!
//! rtcc's TCP model acknowledges with transport-wide feedback ([`super::twcc`]), which has no
//! room for TCP's header flags. An acknowledgement whose ECE flag is set (RFC 3168 §6.1.3: the
//! receiver saw a CE-marked segment and has not yet seen the sender's CWR) carries this 12-byte
//! packet after its feedback in the same compound datagram; one without ECE does not, so
//! acknowledgements of flows that do not use ECN keep their size. An APP packet with another name
//! or subtype is [`RtcpPacket::Unknown`].

use super::{be32, begin, finish, need, RtcpPacket, WireError, PT_APP};

/// The APP packet name of the ECN-Echo flag.
pub const ECN_ECHO_NAME: [u8; 4] = *b"RECE";
/// The APP subtype of the ECN-Echo flag.
pub const ECN_ECHO_SUBTYPE: u8 = 0;

/// TCP's ECN-Echo flag on an acknowledgement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct EcnEchoMessage {
    pub sender_ssrc: u32,
}

impl EcnEchoMessage {
    /// Bytes on the wire.
    pub const LEN: usize = 12;

    pub(crate) fn is_ecn_echo(subtype: u8, body: &[u8]) -> bool {
        subtype == ECN_ECHO_SUBTYPE && body.get(4..8) == Some(&ECN_ECHO_NAME[..])
    }

    /// Append the packet (always succeeds; `Result` for symmetry with the other messages).
    pub fn encode(&self, out: &mut Vec<u8>) -> Result<(), WireError> {
        let start = begin(out, ECN_ECHO_SUBTYPE, PT_APP);
        out.extend_from_slice(&self.sender_ssrc.to_be_bytes());
        out.extend_from_slice(&ECN_ECHO_NAME);
        finish(out, start, "ECN-Echo", false)
    }

    /// Parse the body (after the common header): the sender SSRC and the name; nothing may
    /// follow.
    pub fn parse_body(body: &[u8]) -> Result<EcnEchoMessage, WireError> {
        need("ECN-Echo", body, 8)?;
        if body.len() != 8 {
            return Err(WireError::Inconsistent {
                what: "ECN-Echo",
                detail: format!("{} bytes of body, expected 8", body.len()),
            });
        }
        Ok(EcnEchoMessage {
            sender_ssrc: be32(body, 0),
        })
    }
}

impl From<EcnEchoMessage> for RtcpPacket {
    fn from(m: EcnEchoMessage) -> RtcpPacket {
        RtcpPacket::EcnEcho(m)
    }
}

#[cfg(test)]
mod tests {
    use super::super::{parse_compound, parse_single};
    use super::*;

    #[test]
    fn round_trips_and_is_twelve_bytes() {
        let m = EcnEchoMessage { sender_ssrc: 7 };
        let mut out = Vec::new();
        m.encode(&mut out).unwrap();
        assert_eq!(out.len(), EcnEchoMessage::LEN);
        assert_eq!(parse_single(&out).unwrap(), RtcpPacket::EcnEcho(m));
        // Another APP name stays unknown.
        out[8..12].copy_from_slice(b"XXXX");
        assert!(matches!(
            parse_compound(&out).unwrap()[0],
            RtcpPacket::Unknown { .. }
        ));
    }
}
