//! Wire formats: RTP (RFC 3550) with the header extensions rtcc's senders use, and the RTCP
//! messages its receivers send back, encoded and parsed for real.
//!
//! The simulator and a live transport carry the same bytes: an endpoint writes a datagram with
//! these encoders and the other end parses it. In the simulator the encoded video payload itself is
//! not materialised (a media datagram's contents end with its headers; its size on the wire is a
//! number the links and queues see), everything else (headers, feedback, NACKs, frame
//! acknowledgements) is the real encoding, so feedback sizes are the encoded sizes.
//!
//! Parsers never panic on input from the network: every malformed datagram gives a [`WireError`]
//! that names what was wrong.
//!
//! - [`rtp`]: the RTP header with transport-wide sequence number, abs-send-time and rtcc's frame
//!   descriptor extensions; RTP/RTCP demultiplexing.
//! - [`rtcp`]: compound RTCP and its messages: sender/receiver reports, transport-wide CC
//!   feedback, RFC 8888 feedback, generic NACK, PLI, REMB, rtcc's frame acknowledgement.
//! - [`fec`]: XOR parity over groups of up to 16 packets.
//! - [`seq`]: unwrapping of 16-bit sequence numbers.

pub mod fec;
#[cfg(test)]
mod fuzz_tests;
pub mod pcap;
pub mod rtcp;
pub mod rtp;
pub mod seq;

pub use seq::SeqUnwrapper;

/// Nanoseconds per second, for the wire's fixed-point clocks.
pub(crate) const NS_PER_S: u64 = 1_000_000_000;

/// Bytes of IPv4 (20) and UDP (8) headers around every datagram.
pub const IP_UDP_OVERHEAD: u32 = 28;

/// Why a datagram could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    #[error("{what}: truncated, needs {need} bytes, has {have}")]
    Truncated {
        what: &'static str,
        need: usize,
        have: usize,
    },
    #[error("{what}: version {version}, expected 2")]
    BadVersion { what: &'static str, version: u8 },
    #[error("{what}: {detail}")]
    Inconsistent { what: &'static str, detail: String },
    #[error("{what}: unsupported {detail}")]
    Unsupported { what: &'static str, detail: String },
}

/// Fail with [`WireError::Truncated`] unless `buf` has at least `need` bytes.
#[allow(dead_code)] // for the RTP/RTCP parsers of this module, not written yet
pub(crate) fn need(what: &'static str, buf: &[u8], need: usize) -> Result<(), WireError> {
    if buf.len() < need {
        Err(WireError::Truncated {
            what,
            need,
            have: buf.len(),
        })
    } else {
        Ok(())
    }
}

/// Read a big-endian u32 at `at`; the caller has checked the length.
#[inline]
pub(crate) fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// Read a big-endian u16 at `at`; the caller has checked the length.
#[inline]
pub(crate) fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}
