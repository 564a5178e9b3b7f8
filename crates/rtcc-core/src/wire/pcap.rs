//! Packet captures: a run's datagrams as a pcap file that Wireshark and tshark open.
//!
//! The classic pcap format (the libpcap file format, as documented by the Wireshark project and
//! draft-ietf-opsawg-pcap): a 24-byte file header, then per packet a 16-byte record header and
//! the packet. rtcc writes nanosecond timestamps (magic `0xa1b23c4d`) and raw IPv4 packets
//! (`LINKTYPE_RAW`, 101): each datagram gets the IPv4 and UDP headers it would have had on a real
//! network, with its ECN codepoint in the IP header, around the RTP or RTCP bytes the endpoint
//! wrote. This module only encodes (sans-IO); the caller writes the bytes where it likes.
//!
//! Addresses and ports (judgment calls, so that a capture of many flows dissects with one
//! command): flow `i`'s A end is `10.1.x.y` and its B end `10.2.x.y`, with `x.y` the two bytes
//! of `i + 1`; RTP travels between ports 5004 and RTCP between ports 5005 (RFC 5761's
//! demultiplexing by payload type decides which a datagram is, as rtcc's endpoints do), so
//! `tshark -d udp.port==5004,rtp -d udp.port==5005,rtcp` decodes everything. The UDP checksum
//! is 0 (none, allowed over IPv4); the IPv4 header checksum is computed.
//!
//! rtcc models payloads by their size and writes only headers: a media packet's bytes are its
//! RTP header and extensions. A record is filled with zero bytes up to the datagram's size on
//! the wire, so lengths in the capture are the simulation's, except for a datagram the
//! simulation counts smaller than its own headers (a frame's last few bytes, charged as they
//! are), which the capture shows at the size of its headers.

use crate::packet::Ecn;
use crate::units::Time;
use crate::wire::rtp::is_rtcp;
use std::io::{self, Write};
use std::net::{Ipv4Addr, SocketAddrV4};

/// The file header: nanosecond pcap 2.4, snapshot length 65,535, raw IP packets.
pub fn file_header() -> [u8; 24] {
    let mut h = [0u8; 24];
    h[0..4].copy_from_slice(&0xa1b2_3c4du32.to_le_bytes());
    h[4..6].copy_from_slice(&2u16.to_le_bytes());
    h[6..8].copy_from_slice(&4u16.to_le_bytes());
    // thiszone, sigfigs: 0
    h[16..20].copy_from_slice(&65_535u32.to_le_bytes());
    h[20..24].copy_from_slice(&101u32.to_le_bytes());
    h
}

/// IPv4 and UDP header bytes (what a datagram's size on the wire counts beyond its payload).
pub const IP_UDP_HEADERS: usize = 28;

/// The two ends of a simulated flow `flow`'s datagram of `payload`, from its A end (`from_a`) or
/// its B end: (source, destination). A is `10.1.x.y` and B `10.2.x.y` with `x.y` the two bytes
/// of `flow + 1`; RTP uses port 5004 and RTCP port 5005.
pub fn simulated_ends(flow: u32, from_a: bool, payload: &[u8]) -> (SocketAddrV4, SocketAddrV4) {
    let [_, _, x, y] = (flow.wrapping_add(1) & 0xffff).to_be_bytes();
    let port = if is_rtcp(payload) { 5005 } else { 5004 };
    let a = SocketAddrV4::new(Ipv4Addr::new(10, 1, x, y), port);
    let b = SocketAddrV4::new(Ipv4Addr::new(10, 2, x, y), port);
    if from_a {
        (a, b)
    } else {
        (b, a)
    }
}

/// Append one record: `payload` (RTP or RTCP bytes) sent at `t` (since the Unix epoch for a real
/// capture, since the run's start for a simulated one) from `src` to `dst`, `wire_size` bytes on
/// the wire with its IPv4 and UDP headers (the record is zero-filled up to it; a smaller
/// `wire_size` is taken as the headers and payload alone).
pub fn record(
    t: Time,
    src: SocketAddrV4,
    dst: SocketAddrV4,
    ecn: Ecn,
    payload: &[u8],
    wire_size: u32,
    out: &mut Vec<u8>,
) {
    let payload_len = payload.len().min(65_535 - IP_UDP_HEADERS);
    let total = (wire_size as usize).clamp(IP_UDP_HEADERS + payload_len, 65_535);
    let (secs, nanos) = (t.0 / 1_000_000_000, t.0 % 1_000_000_000);
    out.extend_from_slice(&(secs as u32).to_le_bytes());
    out.extend_from_slice(&(nanos as u32).to_le_bytes());
    out.extend_from_slice(&(total as u32).to_le_bytes()); // captured
    out.extend_from_slice(&(total as u32).to_le_bytes()); // on the wire

    // IPv4: version 4, IHL 5; DSCP 0 with the ECN codepoint; no fragmentation; TTL 64; UDP.
    let ip_start = out.len();
    out.extend_from_slice(&[0x45, ecn as u8]);
    out.extend_from_slice(&(total as u16).to_be_bytes());
    out.extend_from_slice(&[0, 0, 0x40, 0, 64, 17, 0, 0]);
    out.extend_from_slice(&src.ip().octets());
    out.extend_from_slice(&dst.ip().octets());
    let checksum = ipv4_checksum(&out[ip_start..ip_start + 20]);
    out[ip_start + 10..ip_start + 12].copy_from_slice(&checksum.to_be_bytes());
    // UDP: ports, length, no checksum.
    out.extend_from_slice(&src.port().to_be_bytes());
    out.extend_from_slice(&dst.port().to_be_bytes());
    out.extend_from_slice(&((total - 20) as u16).to_be_bytes());
    out.extend_from_slice(&[0, 0]);
    out.extend_from_slice(&payload[..payload_len]);
    out.resize(ip_start + total, 0);
}

/// A capture written to `out` as it goes: the file header, then a record per datagram.
pub struct Writer<W: Write> {
    out: W,
    record: Vec<u8>,
}

impl<W: Write> Writer<W> {
    pub fn new(mut out: W) -> io::Result<Writer<W>> {
        out.write_all(&file_header())?;
        Ok(Writer {
            out,
            record: Vec::with_capacity(1600),
        })
    }

    /// One datagram ([`record`]).
    pub fn write(
        &mut self,
        t: Time,
        src: SocketAddrV4,
        dst: SocketAddrV4,
        ecn: Ecn,
        payload: &[u8],
        wire_size: u32,
    ) -> io::Result<()> {
        self.record.clear();
        record(t, src, dst, ecn, payload, wire_size, &mut self.record);
        self.out.write_all(&self.record)
    }

    /// The writer, to flush or close.
    pub fn into_inner(self) -> W {
        self.out
    }
}

/// The Internet checksum of a header whose checksum field is zero (RFC 1071).
fn ipv4_checksum(header: &[u8]) -> u16 {
    let mut sum: u32 = header
        .chunks(2)
        .map(|w| u16::from_be_bytes([w[0], *w.get(1).unwrap_or(&0)]) as u32)
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_is_a_valid_ipv4_udp_packet_of_the_datagrams_size() {
        let mut out = Vec::new();
        let rtp = [0x80, 96, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1];
        let (src, dst) = simulated_ends(0, true, &rtp);
        record(
            Time(1_500_000_123),
            src,
            dst,
            Ecn::Ect0,
            &rtp,
            1200,
            &mut out,
        );
        assert_eq!(out.len(), 16 + 1200);
        assert_eq!(u32::from_le_bytes(out[0..4].try_into().unwrap()), 1);
        let nanos = u32::from_le_bytes(out[4..8].try_into().unwrap());
        assert_eq!(nanos, 500_000_123);
        let ip = &out[16..];
        assert_eq!(u16::from_be_bytes([ip[2], ip[3]]), 1200);
        assert_eq!(ip[1] & 0b11, Ecn::Ect0 as u8);
        assert_eq!(&ip[12..20], &[10, 1, 0, 1, 10, 2, 0, 1]);
        // A valid header, its checksum included, sums to 0xffff (RFC 1071).
        assert_eq!(ipv4_checksum(&ip[..20]), 0, "the header checksum is wrong");
        assert_eq!(
            u16::from_be_bytes([ip[22], ip[23]]),
            5004,
            "RTP to port 5004"
        );
        assert_eq!(u16::from_be_bytes([ip[24], ip[25]]), 1180, "UDP length");
        assert_eq!(&ip[28..40], &rtp);
        // RTCP (payload type 205, transport-wide feedback) from B goes to port 5005, at its own
        // size.
        let rtcp = [0x8f, 205, 0, 2, 0, 0, 0, 1, 0, 0, 0, 2];
        let (src, dst) = simulated_ends(0, false, &rtcp);
        out.clear();
        record(Time(0), src, dst, Ecn::NotEct, &rtcp, 0, &mut out);
        assert_eq!(out.len(), 16 + 28 + 12);
        assert_eq!(&out[16 + 12..16 + 20], &[10, 2, 0, 1, 10, 1, 0, 1]);
        assert_eq!(u16::from_be_bytes([out[16 + 22], out[16 + 23]]), 5005);
        let (a, b) = simulated_ends(255, true, &rtp);
        assert_eq!(
            (a.ip().octets(), b.ip().octets()),
            ([10, 1, 1, 0], [10, 2, 1, 0])
        );
    }
}
