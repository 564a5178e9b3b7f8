//! Property tests of every parser in [`wire`](super) on hostile input.
//!
//! A seeded ChaCha loop feeds [`TOTAL_INPUTS`] (1,000,000) byte strings in total to
//! [`RtpHeader::parse`], [`parse_compound`], [`FecHeader::parse`] and [`fec::recover`]: random
//! strings of 0..=200 bytes (half of them with a plausible first byte or header, so they get past
//! the version check and exercise the deeper code), and mutations of valid encodings (bit flips,
//! byte overwrites, truncations, appended bytes). For `recover` the bytes are carved into a
//! header, a parity and received packets, or are the (mutated or intact) parity of a random
//! valid group with one packet lost; an intact group must give the lost packet back exactly.
//! A parser must never panic (tests build with
//! overflow checks), and whatever parses must re-encode and re-parse to the same value: the
//! formats are canonical in value (a generic NACK's list is compared as a set, since the encoder
//! sorts and merges it), and the FEC header is canonical byte for byte.

use super::fec::{self, FecEncoder, FecHeader};
use super::rtcp::{
    self, parse_compound, parse_single, CcfbBlock, CcfbReport, FrameAckMessage, Nack, Pli,
    RateReportMessage, ReceiverReport, Remb, ReportBlock, RtcpPacket, SenderReport,
    TransportCcFeedback,
};
use super::rtp::{extension_subsets, FrameDescriptor, RtpHeader};
use crate::units::Time;
use rand_chacha::ChaCha8Rng;
use rand_core::{Rng, SeedableRng};

/// Inputs fed to the parsers in total, over the four targets.
const TOTAL_INPUTS: usize = 1_000_000;
/// Longest random input.
const MAX_RANDOM_LEN: usize = 200;

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn below(rng: &mut ChaCha8Rng, n: usize) -> usize {
    (rng.next_u64() % n as u64) as usize
}

/// Random bytes, 0..=200 of them.
fn random_bytes(rng: &mut ChaCha8Rng, out: &mut Vec<u8>) {
    out.clear();
    out.resize(below(rng, MAX_RANDOM_LEN + 1), 0);
    rng.fill_bytes(out);
}

/// A mutation of `valid`: bit flips, a byte overwrite, a truncation, appended bytes, or several.
fn mutate(rng: &mut ChaCha8Rng, valid: &[u8], out: &mut Vec<u8>) {
    out.clear();
    out.extend_from_slice(valid);
    let ops = 1 + below(rng, 3);
    for _ in 0..ops {
        match below(rng, 5) {
            0 | 1 if !out.is_empty() => {
                let i = below(rng, out.len());
                out[i] ^= 1 << below(rng, 8);
            }
            2 if !out.is_empty() => {
                let i = below(rng, out.len());
                out[i] = rng.next_u32() as u8;
            }
            3 => {
                let n = below(rng, out.len() + 1);
                out.truncate(n);
            }
            _ => {
                for _ in 0..1 + below(rng, 8) {
                    out.push(rng.next_u32() as u8);
                }
            }
        }
    }
}

fn rtp_corpus() -> Vec<Vec<u8>> {
    let full = RtpHeader {
        marker: true,
        payload_type: 96,
        sequence: 65535,
        timestamp: 3_000_000_000,
        ssrc: 42,
        transport_seq: Some(65535),
        abs_send_time: Some(0xABCDEF),
        frame: Some(FrameDescriptor {
            keyframe: true,
            frame_id: 9,
            index: 3,
            count: 4,
            reference_delta: 1,
        }),
    };
    let mut out = Vec::new();
    for h in extension_subsets(full) {
        let mut b = Vec::new();
        h.encode(&mut b);
        out.push(b);
    }
    // Two-byte elements with CSRCs and padding.
    let mut b = vec![
        0xB1, 96, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 9, 9, 9, 9, 0x10, 0x00, 0, 4,
    ];
    b.extend_from_slice(&[1, 2, 0x12, 0x34, 3, 9, 1, 0, 5, 0, 6, 0, 7, 0, 0, 0]);
    b.extend_from_slice(&[0, 2]); // two bytes of padding after the header
    out.push(b);
    out
}

/// An RFC 8888 block whose received packets carry every ECN codepoint in turn (Not-ECT, ECT(1),
/// ECT(0), CE): what an L4S flow's receiver reports.
fn ecn_block(now: Time) -> CcfbBlock {
    let times: Vec<Option<Time>> = (0..9)
        .map(|i| (i != 4).then(|| Time::from_millis(4900 + 10 * i)))
        .collect();
    let mut block = CcfbBlock::from_receive_times(10, 40_000, &times, now);
    for (i, m) in block.metrics.iter_mut().enumerate() {
        if let Some(m) = m {
            m.ecn = (i % 4) as u8;
        }
    }
    block
}

fn rtcp_corpus() -> Vec<Vec<u8>> {
    let block = ReportBlock {
        ssrc: 5,
        fraction_lost: 3,
        cumulative_lost: -2,
        extended_highest_seq: 70000,
        jitter: 12,
        last_sr: 99,
        delay_since_last_sr: 65536,
    };
    let now = Time::from_millis(5000);
    let times = [
        Some(Time::from_millis(4990)),
        None,
        Some(Time::from_millis(4980)),
    ];
    let packets = vec![
        RtcpPacket::SenderReport(SenderReport {
            sender_ssrc: 1,
            ntp_time: rtcp::ntp_time(now),
            rtp_time: 450_000,
            packet_count: 10,
            octet_count: 12_000,
            blocks: vec![block],
        }),
        RtcpPacket::ReceiverReport(ReceiverReport {
            sender_ssrc: 2,
            blocks: vec![block, block],
        }),
        RtcpPacket::TransportCc(TransportCcFeedback {
            sender_ssrc: 1,
            media_ssrc: 2,
            base_seq: 65530,
            feedback_count: 255,
            receive_times: (0..40)
                .map(|i| (i % 5 != 2).then(|| Time::from_millis(4000 + 3 * i - (i % 7) * 2)))
                .collect(),
        }),
        RtcpPacket::Ccfb(CcfbReport {
            sender_ssrc: 3,
            blocks: vec![
                CcfbBlock::from_receive_times(8, 65535, &times, now),
                CcfbBlock::from_receive_times(9, 1, &times[..2], now),
                ecn_block(now),
            ],
            report_timestamp: rtcp::ntp_middle32(rtcp::ntp_time(now)),
        }),
        RtcpPacket::Remb(Remb {
            sender_ssrc: 4,
            bitrate_bps: 2_500_000,
            ssrcs: vec![8, 9],
        }),
        RtcpPacket::Nack(Nack {
            sender_ssrc: 5,
            media_ssrc: 8,
            lost: vec![65535, 0, 1, 40],
        }),
        RtcpPacket::Pli(Pli {
            sender_ssrc: 5,
            media_ssrc: 8,
        }),
        RtcpPacket::FrameAck(FrameAckMessage {
            sender_ssrc: 5,
            media_ssrc: 8,
            frame_id: 65535,
            first_receive: Time::from_millis(4000),
            last_receive: Time::from_millis(4010),
            complete: Time::from_millis(4011),
            size: 30_000,
            lost: false,
        }),
        RtcpPacket::RateReport(RateReportMessage {
            sender_ssrc: 5,
            media_ssrc: 8,
            window_start: Time::from_millis(4000),
            window_end: Time::from_millis(4050),
            bytes: 62_500,
            packets: 50,
            last: Some((65535, Time::from_millis(4049))),
        }),
        // A rate report of a silent window.
        RtcpPacket::RateReport(RateReportMessage {
            sender_ssrc: 5,
            media_ssrc: 8,
            window_start: Time::from_millis(4050),
            window_end: Time::from_millis(4100),
            bytes: 0,
            packets: 0,
            last: None,
        }),
        // A late acknowledgement of a frame the receiver gave up on (the L bit).
        RtcpPacket::FrameAck(FrameAckMessage {
            sender_ssrc: 5,
            media_ssrc: 8,
            frame_id: 7,
            first_receive: Time::from_millis(4100),
            last_receive: Time::from_millis(4100),
            complete: Time::from_millis(4100),
            size: 0,
            lost: true,
        }),
    ];
    let mut out = Vec::new();
    let mut compound = Vec::new();
    for p in &packets {
        let mut b = Vec::new();
        p.encode(&mut b).unwrap();
        compound.extend_from_slice(&b);
        out.push(b);
    }
    out.push(compound);
    out
}

fn fec_corpus() -> Vec<Vec<u8>> {
    let mut enc = FecEncoder::new();
    for i in 0..5u16 {
        enc.protect(
            &vec![i as u8; 20 + i as usize],
            1000 + i as u32,
            65533u16.wrapping_add(i),
        )
        .unwrap();
    }
    let (h, parity) = enc.finish().unwrap();
    let mut b = Vec::new();
    h.encode(&mut b);
    b.extend_from_slice(&parity);
    vec![b]
}

fn check_rtp(input: &[u8]) {
    let Ok((h, len)) = RtpHeader::parse(input) else {
        return;
    };
    assert!(
        len <= input.len(),
        "header length within the input: {}",
        hex(input)
    );
    let mut e = Vec::new();
    h.encode(&mut e);
    assert_eq!(e.len(), h.encoded_len());
    let (h2, len2) = RtpHeader::parse(&e)
        .unwrap_or_else(|err| panic!("re-encoding of {} does not parse: {err}", hex(input)));
    assert_eq!(h2, h, "re-parse differs for {}", hex(input));
    assert_eq!(len2, e.len());
}

fn check_rtcp(input: &[u8]) {
    let Ok(packets) = parse_compound(input) else {
        return;
    };
    for p in packets {
        if matches!(p, RtcpPacket::Unknown { .. }) {
            continue;
        }
        let mut e = Vec::new();
        p.encode(&mut e).unwrap_or_else(|err| {
            panic!(
                "parsed {} from {} does not re-encode: {err}",
                p.kind(),
                hex(input)
            )
        });
        let p2 = parse_single(&e)
            .unwrap_or_else(|err| panic!("re-encoding of {} does not parse: {err}", hex(input)));
        match (&p, &p2) {
            (RtcpPacket::Nack(a), RtcpPacket::Nack(b)) => {
                let mut x = a.lost.clone();
                let mut y = b.lost.clone();
                x.sort_unstable();
                x.dedup();
                y.sort_unstable();
                y.dedup();
                assert_eq!(x, y, "NACK set changed for {}", hex(input));
                let mut e2 = Vec::new();
                p2.encode(&mut e2).unwrap();
                assert_eq!(e2, e, "a NACK's encoding is stable after one round trip");
            }
            _ => assert_eq!(p2, p, "re-parse differs for {}", hex(input)),
        }
    }
}

fn check_fec_header(input: &[u8]) {
    let Ok((h, len)) = FecHeader::parse(input) else {
        return;
    };
    assert_eq!(len, FecHeader::LEN);
    let mut e = Vec::new();
    h.encode(&mut e);
    assert_eq!(
        &e[..],
        &input[..len],
        "the FEC header is canonical byte for byte"
    );
}

/// Reads fields off the front of a byte string; past its end, fields read as 0 / empty.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> &'a [u8] {
        let (x, rest) = self.0.split_at(n.min(self.0.len()));
        self.0 = rest;
        x
    }

    fn word(&mut self, n: usize) -> u32 {
        self.take(n)
            .iter()
            .fold(0u32, |a, &x| (a << 8) | u32::from(x))
    }
}

/// Carve a header (not necessarily valid: mask 0 allowed), a parity and up to 19 packets out of
/// `input` and try to recover: no panic, and a recovered packet completes the group.
fn check_recover(input: &[u8]) {
    let mut r = Reader(input);
    let header = FecHeader {
        base_seq: r.word(2) as u16,
        mask: r.word(2) as u16,
        length_recovery: r.word(1) as u16, // small lengths, so some recoveries succeed
        size_recovery: r.word(4),
    };
    let parity_len = r.word(1) as usize % 64;
    let n = r.word(1) as usize % 20;
    let mut specs = Vec::new();
    for _ in 0..n {
        let seq = header.base_seq.wrapping_add(r.word(1) as u16 % 20);
        let len = r.word(1) as usize % 64;
        let size = r.word(2);
        specs.push((seq, len, size));
    }
    let parity = r.take(parity_len).to_vec();
    let packets: Vec<(u16, Vec<u8>, u32)> = specs
        .into_iter()
        .map(|(seq, len, size)| (seq, r.take(len).to_vec(), size))
        .collect();
    let others: Vec<(u16, &[u8], u32)> = packets
        .iter()
        .map(|(s, c, z)| (*s, c.as_slice(), *z))
        .collect();
    if let Ok(Some((seq, contents, size))) = fec::recover(&header, &parity, &others) {
        assert!(contents.len() <= parity.len());
        let mut all = others.clone();
        all.push((seq, &contents, size));
        assert_eq!(
            fec::recover(&header, &parity, &all),
            Ok(None),
            "with the recovered packet added nothing is missing: {}",
            hex(input)
        );
    }
}

/// Protect a random group of 1..=16 packets, lose one, and recover it from a parity that is
/// either intact (then the packet must come back exactly) or a mutation written to `input`.
fn check_recover_group(rng: &mut ChaCha8Rng, input: &mut Vec<u8>) {
    let n = 1 + below(rng, 16);
    let base = rng.next_u32() as u16;
    let packets: Vec<(u16, Vec<u8>, u32)> = (0..n)
        .map(|i| {
            let mut c = vec![0u8; below(rng, 60)];
            rng.fill_bytes(&mut c);
            (base.wrapping_add(i as u16), c, rng.next_u32())
        })
        .collect();
    let mut enc = FecEncoder::new();
    for (seq, c, size) in &packets {
        enc.protect(c, *size, *seq).unwrap();
    }
    let (mut header, parity) = enc.finish().unwrap();
    let lost = below(rng, n);
    let others: Vec<(u16, &[u8], u32)> = packets
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != lost)
        .map(|(_, (s, c, z))| (*s, c.as_slice(), *z))
        .collect();
    let intact = rng.next_u32().is_multiple_of(2);
    if intact {
        input.clear();
        input.extend_from_slice(&parity);
    } else {
        mutate(rng, &parity, input);
        if rng.next_u32().is_multiple_of(2) {
            header.length_recovery ^= 1 << below(rng, 16);
        }
    }
    let got = fec::recover(&header, input, &others);
    if intact {
        let (seq, c, size) = &packets[lost];
        assert_eq!(
            got,
            Ok(Some((*seq, c.clone(), *size))),
            "an intact group recovers"
        );
    }
}

#[test]
fn parsers_survive_a_million_hostile_inputs_and_round_trip_what_they_accept() {
    let mut rng = ChaCha8Rng::seed_from_u64(0x5EED_F022);
    let corpora = [rtp_corpus(), rtcp_corpus(), fec_corpus()];
    let checks: [fn(&[u8]); 4] = [check_rtp, check_rtcp, check_fec_header, check_recover];
    let mut input = Vec::with_capacity(4 * MAX_RANDOM_LEN);
    let mut fed = 0usize;
    let mut accepted = [0usize; 4];
    for i in 0..TOTAL_INPUTS {
        let target = i % 4;
        match below(&mut rng, 4) {
            // Pure random bytes.
            0 => random_bytes(&mut rng, &mut input),
            // Random bytes with version 2 in the first byte and, for RTCP, a length field that
            // matches a whole number of words, so they reach the message parsers.
            1 => {
                random_bytes(&mut rng, &mut input);
                if let Some(b) = input.first_mut() {
                    *b = (*b & 0x3F) | 0x80;
                }
                if target == 1 && input.len() >= 4 {
                    input.truncate(input.len() / 4 * 4);
                    input[1] = 200 + below(&mut rng, 8) as u8;
                    let words = (input.len() / 4 - 1) as u16;
                    input[2..4].copy_from_slice(&words.to_be_bytes());
                }
            }
            // FEC groups with one loss and a possibly mutated parity.
            _ if target == 3 => {
                check_recover_group(&mut rng, &mut input);
                fed += 1;
                continue;
            }
            // Mutations of valid encodings.
            _ => {
                let corpus = &corpora[target];
                let valid = &corpus[below(&mut rng, corpus.len())];
                mutate(&mut rng, valid, &mut input);
            }
        }
        checks[target](&input);
        fed += 1;
        let ok = match target {
            0 => RtpHeader::parse(&input).is_ok(),
            1 => parse_compound(&input).is_ok(),
            2 => FecHeader::parse(&input).is_ok(),
            _ => true,
        };
        accepted[target] += usize::from(ok);
    }
    assert_eq!(fed, TOTAL_INPUTS, "every input was fed to a parser");
    // The loop must reach the round-trip checks, not only the error paths.
    for (t, &n) in accepted.iter().enumerate().take(3) {
        assert!(
            n > TOTAL_INPUTS / 4 / 20,
            "target {t}: only {n} inputs parsed; the corpus no longer exercises round trips"
        );
    }
}

#[test]
fn the_corpora_are_valid() {
    for b in rtp_corpus() {
        assert!(RtpHeader::parse(&b).is_ok(), "{}", hex(&b));
    }
    for b in rtcp_corpus() {
        let ps = parse_compound(&b).unwrap();
        assert!(ps.iter().all(|p| !matches!(p, RtcpPacket::Unknown { .. })));
    }
    for b in fec_corpus() {
        assert!(FecHeader::parse(&b).is_ok());
    }
}
