//! rtcc's receiver rate report, an RTCP APP packet (RFC 3550 §6.7; PT 204, subtype 0, name
//! "RTRR").
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! |V=2|P| subtype |   PT=204      |          length = 13          |
//! |                    SSRC of packet sender                      |
//! |      'R'      |      'T'      |      'R'      |      'R'      |
//! |                         media SSRC                            |
//! |            window start, µs (64 bits, high word)              |
//! |                     window start, low word                    |
//! |             window end, µs (64 bits, high word)               |
//! |                      window end, low word                     |
//! |               bytes received (64 bits, high word)             |
//! |                        bytes, low word                        |
//! |                  packets received (32 bits)                   |
//! |N|         reserved (0)        | last transport-wide seq (16)  |
//! |          last arrival, µs (64 bits, high word)                |
//! |                     last arrival, low word                    |
//! ```
//!
//! Every fixed interval the receiver counts what it got since its previous report: the wire bytes
//! and the number of all RTP datagrams of the flow (media, retransmissions, FEC, padding) that
//! arrived in the window (window start, window end]. This is the received rate μ that C³G's
//! client measures over Δt and reports every Δt (c3g_rtvl.txt §V-A); any controller may ask for
//! it ([`crate::cc::FeedbackPolicy::rate_reports`]). A window in which nothing arrived is reported
//! too, with 0 bytes: silence is information. 56 bytes in all.
//!
//! **N (newest)**, the top bit of the word after the packet count: the report names the packet
//! that arrived last in the window, by its transport-wide sequence number (the 16 bits of the RTP
//! header extension; the sender unwraps them against its own numbering) and its arrival time, so
//! that the sender can relate the receiver's clock to its own send times. Without N (nothing with
//! a transport-wide number arrived) the number and time are written 0 and ignored; the other 15
//! bits of the word are reserved: written 0 and ignored.
//!
//! Times are on the receiver's clock, **truncated to whole microseconds** on the wire, each as a
//! full 64-bit count (windows of any length fit, nothing is clamped); consecutive reports share
//! their boundary time, so their windows stay contiguous after truncation. A parse checks that
//! the window does not end before it starts, that the last arrival lies in it (the truncated
//! times, both ends included) and is not named in a report of no packets, and that every time
//! fits in nanoseconds. An APP packet with another name or subtype is [`RtcpPacket::Unknown`].

use super::{be32, begin, finish, need, parse_as, RtcpPacket, WireError, PT_APP};
use crate::units::Time;

/// The APP packet name of a rate report.
pub const RATE_REPORT_NAME: [u8; 4] = *b"RTRR";
/// The APP subtype of a rate report.
pub const RATE_REPORT_SUBTYPE: u8 = 0;
/// Bytes of the application data after the sender SSRC and the name.
const RATE_REPORT_DATA_LEN: usize = 44;
/// Bytes of the body: sender SSRC, name and data.
const RATE_REPORT_BODY_LEN: usize = 8 + RATE_REPORT_DATA_LEN;
const NS_PER_US: u64 = 1_000;
/// The N (newest packet named) bit of the 16-bit word after the packet count.
const NEWEST_FLAG: u16 = 0x8000;
const WHAT: &str = "RTCP rate report";

/// A receiver rate report as it travels: the window's counts, the last arrival's 16-bit
/// transport-wide sequence number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RateReportMessage {
    pub sender_ssrc: u32,
    pub media_ssrc: u32,
    /// The end of the previous window (exclusive), receiver clock.
    pub window_start: Time,
    /// When the report was built (inclusive), receiver clock.
    pub window_end: Time,
    /// Wire bytes of the RTP datagrams received in the window.
    pub bytes: u64,
    /// How many datagrams.
    pub packets: u32,
    /// The 16-bit transport-wide sequence number of the packet that arrived last in the window
    /// and its arrival time (the N bit).
    pub last: Option<(u16, Time)>,
}

fn us(t: Time) -> u64 {
    t.0 / NS_PER_US
}

fn be64(body: &[u8], at: usize) -> u64 {
    (u64::from(be32(body, at)) << 32) | u64::from(be32(body, at + 4))
}

impl RateReportMessage {
    /// Bytes of a rate report on the wire.
    pub const LEN: usize = 4 + RATE_REPORT_BODY_LEN;

    pub(crate) fn is_rate_report(subtype: u8, body: &[u8]) -> bool {
        subtype == RATE_REPORT_SUBTYPE && body.get(4..8) == Some(&RATE_REPORT_NAME[..])
    }

    /// Append the packet (always succeeds; `Result` for symmetry with the other messages).
    pub fn encode(&self, out: &mut Vec<u8>) -> Result<(), WireError> {
        let start = begin(out, RATE_REPORT_SUBTYPE, PT_APP);
        out.extend_from_slice(&self.sender_ssrc.to_be_bytes());
        out.extend_from_slice(&RATE_REPORT_NAME);
        out.extend_from_slice(&self.media_ssrc.to_be_bytes());
        out.extend_from_slice(&us(self.window_start).to_be_bytes());
        out.extend_from_slice(&us(self.window_end).to_be_bytes());
        out.extend_from_slice(&self.bytes.to_be_bytes());
        out.extend_from_slice(&self.packets.to_be_bytes());
        let (flags, seq, at) = match self.last {
            Some((seq, at)) => (NEWEST_FLAG, seq, us(at)),
            None => (0, 0, 0),
        };
        out.extend_from_slice(&flags.to_be_bytes());
        out.extend_from_slice(&seq.to_be_bytes());
        out.extend_from_slice(&at.to_be_bytes());
        finish(out, start, WHAT, false)
    }

    /// Parse an APP body named "RTRR": exactly 52 bytes; the window must not end before it
    /// starts, the last arrival must lie in it and belong to a window with packets, and every time
    /// must fit in nanoseconds.
    pub fn parse_body(body: &[u8]) -> Result<RateReportMessage, WireError> {
        need(WHAT, body, RATE_REPORT_BODY_LEN)?;
        let bad = |detail: String| WireError::Inconsistent { what: WHAT, detail };
        if body.len() != RATE_REPORT_BODY_LEN {
            return Err(bad(format!(
                "{} body bytes, expected {RATE_REPORT_BODY_LEN}",
                body.len()
            )));
        }
        let time = |what: &str, us: u64| {
            us.checked_mul(NS_PER_US)
                .map(Time)
                .ok_or_else(|| bad(format!("{what} {us} µs overflows")))
        };
        let (start_us, end_us) = (be64(body, 12), be64(body, 20));
        let window_start = time("window start", start_us)?;
        let window_end = time("window end", end_us)?;
        if end_us < start_us {
            return Err(bad(format!(
                "the window ends ({end_us} µs) before it starts ({start_us} µs)"
            )));
        }
        let packets = be32(body, 36);
        let flags = u16::from_be_bytes([body[40], body[41]]);
        let last = if flags & NEWEST_FLAG != 0 {
            let at_us = be64(body, 44);
            if !(start_us..=end_us).contains(&at_us) {
                return Err(bad(format!(
                    "the last arrival ({at_us} µs) is outside the window \
                     ({start_us} to {end_us} µs)"
                )));
            }
            if packets == 0 {
                return Err(bad("a last arrival in a window of no packets".into()));
            }
            Some((
                u16::from_be_bytes([body[42], body[43]]),
                Time(at_us * NS_PER_US),
            ))
        } else {
            None
        };
        Ok(RateReportMessage {
            sender_ssrc: be32(body, 0),
            media_ssrc: be32(body, 8),
            window_start,
            window_end,
            bytes: be64(body, 28),
            packets,
            last,
        })
    }

    /// Parse a datagram holding exactly this one packet.
    pub fn parse(packet: &[u8]) -> Result<RateReportMessage, WireError> {
        parse_as(packet, WHAT, |p| match p {
            RtcpPacket::RateReport(r) => Some(r),
            _ => None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::rtcp::parse_compound;

    fn report() -> RateReportMessage {
        RateReportMessage {
            sender_ssrc: 1,
            media_ssrc: 0x5254_0000,
            window_start: Time(10_000_000_000),
            window_end: Time(10_050_000_000),
            bytes: 31_250,
            packets: 25,
            last: Some((65535, Time(10_049_123_000))),
        }
    }

    fn enc(r: &RateReportMessage) -> Vec<u8> {
        let mut out = Vec::new();
        r.encode(&mut out).unwrap();
        out
    }

    #[test]
    fn round_trips_microsecond_times() {
        let b = enc(&report());
        assert_eq!(b.len(), RateReportMessage::LEN, "56 bytes");
        assert_eq!(&b[..4], &[0x80, 204, 0, 13], "APP subtype 0, 14 words");
        assert_eq!(&b[8..12], b"RTRR");
        assert_eq!(RateReportMessage::parse(&b).unwrap(), report());
        let huge = RateReportMessage {
            window_end: Time(u64::MAX / NS_PER_US * NS_PER_US),
            bytes: u64::MAX,
            packets: u32::MAX,
            ..report()
        };
        assert_eq!(
            RateReportMessage::parse(&enc(&huge)).unwrap(),
            huge,
            "a window of any length and counts of any size fit"
        );
    }

    #[test]
    fn a_report_of_silence_names_no_packet() {
        let silent = RateReportMessage {
            bytes: 0,
            packets: 0,
            last: None,
            ..report()
        };
        let b = enc(&silent);
        assert_eq!(b.len(), RateReportMessage::LEN);
        assert_eq!(&b[44..56], &[0; 12], "no N bit, number and time written 0");
        assert_eq!(RateReportMessage::parse(&b).unwrap(), silent);
        assert_eq!(&enc(&report())[44..46], &[0x80, 0], "N is the top bit");
    }

    #[test]
    fn truncates_to_microseconds_and_keeps_windows_contiguous() {
        let boundary = Time(10_050_000_999);
        let first = RateReportMessage {
            window_end: boundary,
            last: Some((7, Time(10_050_000_500))),
            ..report()
        };
        let second = RateReportMessage {
            window_start: boundary,
            window_end: Time(10_100_000_001),
            last: Some((8, Time(10_050_000_998))),
            ..report()
        };
        let (a, b) = (
            RateReportMessage::parse(&enc(&first)).unwrap(),
            RateReportMessage::parse(&enc(&second)).unwrap(),
        );
        assert_eq!(a.window_end, Time(10_050_000_000), "999 ns truncated away");
        assert_eq!(a.window_end, b.window_start, "the boundary truncates alike");
        assert_eq!(
            b.last,
            Some((8, b.window_start)),
            "an arrival in the window's first µs truncates to its start: still inside"
        );
    }

    #[test]
    fn the_reserved_bits_are_ignored_and_the_fields_without_n_too() {
        let mut b = enc(&report());
        b[44..46].copy_from_slice(&0xFFFFu16.to_be_bytes());
        assert_eq!(RateReportMessage::parse(&b).unwrap(), report());
        b[44] &= 0x7F; // N clear: the number and time say nothing
        assert_eq!(RateReportMessage::parse(&b).unwrap().last, None);
    }

    #[test]
    fn rejects_truncation_bad_lengths_and_impossible_reports() {
        let b = enc(&report());
        for n in 0..RATE_REPORT_BODY_LEN {
            assert!(
                matches!(
                    RateReportMessage::parse_body(&b[4..4 + n]),
                    Err(WireError::Truncated { .. })
                ),
                "a rate report body of {n} bytes is truncated"
            );
        }
        for n in 0..RateReportMessage::LEN {
            assert!(
                RateReportMessage::parse(&b[..n]).is_err(),
                "a datagram cut to {n} bytes"
            );
        }
        let mut long = b.clone();
        long[3] += 1;
        long.extend_from_slice(&[0; 4]);
        assert!(
            matches!(
                parse_compound(&long),
                Err(WireError::Inconsistent { what: WHAT, .. })
            ),
            "a 60-byte RTRR packet is not the 56-byte format"
        );
        let inconsistent = |edit: &dyn Fn(&mut Vec<u8>), why: &str| {
            let mut x = b.clone();
            edit(&mut x);
            let e = RateReportMessage::parse(&x);
            assert!(
                matches!(e, Err(WireError::Inconsistent { what: WHAT, .. })),
                "{why}: {e:?}"
            );
        };
        inconsistent(
            &|x| x[24..32].copy_from_slice(&9_000_000u64.to_be_bytes()),
            "the window ends before it starts",
        );
        inconsistent(
            &|x| x[48..56].copy_from_slice(&9_999_999u64.to_be_bytes()),
            "the last arrival before the window",
        );
        inconsistent(
            &|x| x[48..56].copy_from_slice(&10_050_001u64.to_be_bytes()),
            "the last arrival after the window",
        );
        inconsistent(
            &|x| x[40..44].copy_from_slice(&0u32.to_be_bytes()),
            "a last arrival among no packets",
        );
        inconsistent(
            &|x| x[24..32].copy_from_slice(&u64::MAX.to_be_bytes()),
            "2^64 µs does not fit a nanosecond Time",
        );
        inconsistent(
            &|x| x[16..24].copy_from_slice(&(u64::MAX / 999).to_be_bytes()),
            "a start past the nanosecond range",
        );
    }

    #[test]
    fn other_app_packets_are_unknown() {
        super::super::assert_other_apps_are_unknown(&enc(&report()), 11, 2);
        let mut b = enc(&report());
        b[0] |= 2; // subtype 2
        assert!(
            matches!(
                RateReportMessage::parse(&b),
                Err(WireError::Inconsistent { what: WHAT, .. })
            ),
            "parse wants a rate report"
        );
    }
}
