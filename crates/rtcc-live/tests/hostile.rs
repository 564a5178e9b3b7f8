//! Hostile input: while a gcc flow runs between a live sender and receiver on 127.0.0.1, a
//! third socket sends each of them 500,000 malformed or absurd datagrams (1,000,000 in all):
//! random bytes of 0..1500 bytes (half with a plausible RTP/RTCP first byte, so that they get
//! past the version check), truncated RTP media and RTX headers of the flow, truncated RTCP
//! compounds, generic NACKs with lists of thousands of packets or a length past the datagram,
//! transport-wide feedback reporting 65,535 packets or claiming more statuses than it holds.
//! Both loops must keep running without panicking, read every one of them, count at least
//! those the wire parsers reject as malformed (a sender: everything that is not RTCP or does not
//! parse as RTCP; a receiver: RTP that does not parse, while it ignores RTCP, which it never
//! expects), and the flow must still deliver frames after the flood.
//!
//! Deterministic: the datagrams come from a seeded ChaCha generator, and the flood keeps at most
//! [`WINDOW`] datagrams unread per target (watching the loop's `Handle`), so the kernel never
//! drops one and the counts are exact on any machine, however loaded. The only timing is the
//! 2.5 s the flow runs after the flood, in which at least 20 of its 75 frames must be shown.

mod common;

use common::{csv, start, TempDir};
use rand_chacha::ChaCha8Rng;
use rand_core::{Rng, SeedableRng};
use rtcc_core::endpoint::video_send::Ssrcs;
use rtcc_core::endpoint::{PT_MEDIA, PT_RTX};
use rtcc_core::wire::rtcp::{
    parse_compound, Nack, Pli, ReceiverReport, ReportBlock, RtcpPacket, TransportCcFeedback,
};
use rtcc_core::wire::rtp::{abs_send_time, is_rtcp, FrameDescriptor, RtpHeader};
use rtcc_core::{Duration, Time};
use rtcc_live::transport::Handle;
use std::net::{SocketAddr, UdpSocket};

/// Datagrams sent to each end.
const PER_TARGET: u64 = 500_000;
/// Datagrams sent to an end and not yet read by its loop, at most.
const WINDOW: u64 = 64;

const SCENARIO: &str = r#"
duration = "121s"
seed = 5
[path.forward]
capacity = "10Mbps"

[[flows]]
controller = "gcc"
stop = "120s"
"#;

fn below(rng: &mut ChaCha8Rng, n: usize) -> usize {
    (rng.next_u64() % n.max(1) as u64) as usize
}

/// Valid datagrams of the flow to cut and bend.
struct Templates {
    rtp: Vec<Vec<u8>>,
    rtcp: Vec<u8>,
    huge_nack: Vec<u8>,
    feedback_65535: Vec<u8>,
    small_feedback: Vec<u8>,
}

impl Templates {
    fn new() -> Templates {
        let ssrcs = Ssrcs::for_flow(0);
        let media = RtpHeader {
            marker: true,
            payload_type: PT_MEDIA,
            sequence: 100,
            timestamp: 9000,
            ssrc: ssrcs.media,
            transport_seq: Some(120),
            abs_send_time: Some(abs_send_time(Time::from_millis(100))),
            frame: Some(FrameDescriptor {
                keyframe: false,
                frame_id: 3,
                index: 0,
                count: 2,
                reference_delta: 1,
            }),
        };
        let rtx = RtpHeader {
            payload_type: PT_RTX,
            ssrc: ssrcs.rtx,
            ..media
        };
        let rtp = [media, rtx]
            .iter()
            .map(|h| {
                let mut b = Vec::new();
                h.encode(&mut b);
                b
            })
            .collect();
        let encode = |packets: &[RtcpPacket]| {
            let mut b = Vec::new();
            for p in packets {
                p.encode(&mut b).unwrap();
            }
            b
        };
        let times: Vec<Option<Time>> = (0..40)
            .map(|i| (i % 7 != 3).then(|| Time::from_millis(1000 + i)))
            .collect();
        let feedback = |times: &[Option<Time>]| {
            TransportCcFeedback::build(1, ssrcs.media, 100, 0, times, 0xFFFF)
                .into_iter()
                .map(RtcpPacket::TransportCc)
                .collect::<Vec<_>>()
        };
        let mut compound = vec![RtcpPacket::ReceiverReport(ReceiverReport {
            sender_ssrc: 1,
            blocks: vec![ReportBlock {
                ssrc: ssrcs.media,
                ..ReportBlock::default()
            }],
        })];
        compound.extend(feedback(&times));
        compound.push(RtcpPacket::Nack(Nack {
            sender_ssrc: 1,
            media_ssrc: ssrcs.media,
            lost: vec![5, 6, 9, 40],
        }));
        compound.push(RtcpPacket::Pli(Pli {
            sender_ssrc: 1,
            media_ssrc: ssrcs.media,
        }));
        // Every other packet of 6,000 lost: 353 FCI entries.
        let huge_nack = encode(&[RtcpPacket::Nack(Nack {
            sender_ssrc: 1,
            media_ssrc: ssrcs.media,
            lost: (0..6000u16)
                .step_by(2)
                .map(|s| s.wrapping_add(60_000))
                .collect(),
        })]);
        // 65,535 statuses: all lost but the first and the last.
        let mut all: Vec<Option<Time>> = vec![None; 0xFFFF];
        all[0] = Some(Time::from_millis(500));
        all[0xFFFE] = Some(Time::from_millis(900));
        Templates {
            rtp,
            rtcp: encode(&compound),
            huge_nack,
            feedback_65535: encode(&feedback(&all)),
            small_feedback: encode(&feedback(&times)),
        }
    }

    /// One hostile datagram.
    fn hostile(&self, rng: &mut ChaCha8Rng, out: &mut Vec<u8>) {
        out.clear();
        match below(rng, 10) {
            0..=3 => {
                // Random bytes; half start like RTP or RTCP (version 2).
                out.resize(below(rng, 1501), 0);
                rng.fill_bytes(out);
                if below(rng, 2) == 0 && !out.is_empty() {
                    out[0] = 0x80 | (out[0] & 0x3F);
                }
            }
            4 | 5 => {
                // A media or RTX header of the flow cut short.
                let h = &self.rtp[below(rng, self.rtp.len())];
                out.extend_from_slice(&h[..below(rng, h.len())]);
            }
            6 => {
                // An RTCP compound cut short.
                out.extend_from_slice(&self.rtcp[..below(rng, self.rtcp.len())]);
            }
            7 => {
                // A NACK of thousands of packets, whole, or claiming up to 65,535 words.
                out.extend_from_slice(&self.huge_nack);
                if below(rng, 2) == 0 {
                    let words = (rng.next_u32() as u16).max(400);
                    out[2..4].copy_from_slice(&words.to_be_bytes());
                }
            }
            8 => {
                // Feedback on 65,535 packets, whole or cut short.
                out.extend_from_slice(&self.feedback_65535);
                if below(rng, 2) == 0 {
                    out.truncate(below(rng, out.len()));
                }
            }
            _ => {
                // Feedback whose status count claims more than it holds.
                out.extend_from_slice(&self.small_feedback);
                let count = (rng.next_u32() as u16).max(41);
                out[14..16].copy_from_slice(&count.to_be_bytes());
            }
        }
    }
}

/// The sender's endpoint must count these: anything not RTCP, and RTCP that does not parse.
fn malformed_for_sender(d: &[u8]) -> bool {
    !is_rtcp(d) || parse_compound(d).is_err()
}

/// The receiver's endpoint must count these: RTP (not RTCP) whose header does not parse.
fn malformed_for_receiver(d: &[u8]) -> bool {
    !is_rtcp(d) && RtpHeader::parse(d).is_err()
}

/// Sends to one end, keeping at most [`WINDOW`] datagrams unread by its loop.
struct Target<'a> {
    addr: SocketAddr,
    handle: &'a Handle,
    /// Datagrams from other sockets it had read before the flood.
    before: u64,
    sent: u64,
    must_count: u64,
    must_count_fn: fn(&[u8]) -> bool,
}

impl Target<'_> {
    fn unread(&self) -> u64 {
        let read = self
            .handle
            .foreign
            .load(std::sync::atomic::Ordering::Relaxed)
            - self.before;
        self.sent - read
    }
}

#[test]
fn a_million_hostile_datagrams_neither_crash_nor_stop_a_flow() {
    let dir = TempDir::new("hostile");
    let running = start(
        SCENARIO,
        None,
        &dir.0,
        Duration::from_secs_f64(120.0),
        Duration::from_secs_f64(121.0),
    );
    std::thread::sleep(std::time::Duration::from_secs(1));

    let flooder = UdpSocket::bind("127.0.0.1:0").unwrap();
    let foreign = |h: &Handle| h.foreign.load(std::sync::atomic::Ordering::Relaxed);
    let mut targets = [
        Target {
            addr: running.receiver_addr,
            handle: &running.receiver,
            before: foreign(&running.receiver),
            sent: 0,
            must_count: 0,
            must_count_fn: malformed_for_receiver,
        },
        Target {
            addr: running.sender_addr,
            handle: &running.sender,
            before: foreign(&running.sender),
            sent: 0,
            must_count: 0,
            must_count_fn: malformed_for_sender,
        },
    ];
    let templates = Templates::new();
    let mut rng = ChaCha8Rng::seed_from_u64(0x0405_711E);
    let mut datagram = Vec::with_capacity(65_536);
    let started = std::time::Instant::now();
    for _ in 0..PER_TARGET {
        for t in &mut targets {
            while t.unread() >= WINDOW {
                assert!(
                    started.elapsed().as_secs() < 120,
                    "a loop stopped reading ({} unread)",
                    t.unread()
                );
                std::thread::yield_now();
            }
            templates.hostile(&mut rng, &mut datagram);
            t.must_count += (t.must_count_fn)(&datagram) as u64;
            flooder.send_to(&datagram, t.addr).unwrap();
            t.sent += 1;
        }
    }
    while targets.iter().any(|t| t.unread() > 0) && started.elapsed().as_secs() < 120 {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    let flood_end = running.clock.now();
    eprintln!(
        "flood of {} datagrams took {:.1} s",
        2 * PER_TARGET,
        started.elapsed().as_secs_f64()
    );
    let [rx, tx] = targets.map(|t| (t.sent, t.must_count, t.before));

    // The flow goes on for 2.5 s, then both ends stop.
    std::thread::sleep(std::time::Duration::from_millis(2500));
    running.sender.stop();
    std::thread::sleep(std::time::Duration::from_millis(300));
    running.receiver.stop();
    let (send, recv) = running.join();

    for (end, s, (sent, must, before)) in [("receiver", &recv, rx), ("sender", &send, tx)] {
        let malformed = s["malformed"].as_u64().unwrap();
        eprintln!("{end}: {malformed} counted malformed of {sent}, at least {must} expected");
        assert!(
            (must..=sent).contains(&malformed),
            "{end}: {malformed} malformed, expected {must}..={sent}"
        );
        // A receiver ignores RTCP, malformed or not (it expects none): 4 in 10 of the kinds
        // above are RTCP, so well over a third of the flood must count at either end.
        assert!(must > sent / 3, "{end}: the flood is mostly malformed");
        assert_eq!(
            s["foreign_datagrams"].as_u64().unwrap(),
            before + sent,
            "{end}: every datagram of the flood was read"
        );
    }
    let shown_after = csv(&dir.0.join("recv/frames.csv"))
        .iter()
        .skip(1)
        .filter(|r| r[2] == "displayed" && r[3].parse::<u64>().unwrap() > flood_end.0)
        .count();
    eprintln!("{shown_after} frames shown in the 2.5 s after the flood");
    assert!(
        shown_after >= 20,
        "{shown_after} frames shown in the 2.5 s after the flood"
    );
}
