//! Hostile input against a live gcc flow on 127.0.0.1: a third socket floods both ends with
//! 100,000 datagrams (50,000 each) while the flow runs: random bytes of 0..1500 bytes (half with
//! a plausible RTP/RTCP first byte), truncated RTP media and RTX headers of the flow, truncated
//! RTCP compounds, generic NACKs of thousands of packets or with a length past the datagram,
//! transport-wide feedback on 65,535 packets or claiming more statuses than it holds, and the
//! attacks of a peer that knows the flow: valid RTP of the flow with its transport-wide number or
//! frame id 30,000 ahead, PLIs, NACKs of the newest packets and REMBs. Each end answers one peer
//! (the transport's module documentation), so each must read every one of them and hand none to
//! its endpoint, and the flow must be the clean flow's: as many frames shown (within 5 %) and as
//! many bytes sent (within 10 %) as the same flow without the flood, its resident memory and
//! logs no larger (under 10 MB and 1 MB more).
//!
//! The flood keeps at most [`WINDOW`] datagrams unread per target (watching the loop's
//! `Handle`), so the kernel never drops one and the counts are exact on any machine.
//!
//! The same flood against two ends speaking SRTP (no `--peer`): each end authenticates what it
//! reads and drops the rest, counted `unauthenticated`.
//!
//! A last test forges the flow's first packet before the real sender starts (a peer hijack): a
//! receiver told its peer (`--peer`), or one that speaks SRTP, answers the real sender.

mod common;

use common::{csv, start_with, TempDir};
use rand_chacha::ChaCha8Rng;
use rand_core::{Rng, SeedableRng};
use rtcc_core::endpoint::video_send::Ssrcs;
use rtcc_core::endpoint::{PT_MEDIA, PT_RTX};
use rtcc_core::wire::rtcp::{
    Nack, Pli, ReceiverReport, Remb, ReportBlock, RtcpPacket, TransportCcFeedback,
};
use rtcc_core::wire::rtp::{abs_send_time, FrameDescriptor, RtpHeader};
use rtcc_core::{Duration, Time};
use rtcc_live::srtp::{Keying, Profile};
use rtcc_live::transport::Handle;
use std::net::{SocketAddr, UdpSocket};

/// Datagrams sent to each end.
const PER_TARGET: u64 = 50_000;
/// Datagrams sent to an end and not yet read by its loop, at most.
const WINDOW: u64 = 64;

const SCENARIO: &str = r#"
duration = "8s"
seed = 5
[path.forward]
capacity = "10Mbps"

[[flows]]
controller = "gcc"
stop = "7s"
"#;

fn below(rng: &mut ChaCha8Rng, n: usize) -> usize {
    (rng.next_u64() % n.max(1) as u64) as usize
}

/// Valid datagrams of the flow to cut and bend.
struct Templates {
    rtp: Vec<Vec<u8>>,
    /// Whole packets a peer that knows the flow could forge.
    attacks: Vec<Vec<u8>>,
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
        let jumped_seq = RtpHeader {
            transport_seq: Some(30_120),
            ..media
        };
        let jumped_frame = RtpHeader {
            frame: Some(FrameDescriptor {
                keyframe: true,
                frame_id: 30_003,
                index: 0,
                count: 1,
                reference_delta: 0,
            }),
            ..media
        };
        let mut attacks: Vec<Vec<u8>> = [jumped_seq, jumped_frame]
            .iter()
            .map(|h| {
                let mut b = Vec::new();
                h.encode(&mut b);
                b.resize(1200, 0);
                b
            })
            .collect();
        for p in [
            RtcpPacket::Pli(Pli {
                sender_ssrc: 1,
                media_ssrc: ssrcs.media,
            }),
            RtcpPacket::Nack(Nack {
                sender_ssrc: 1,
                media_ssrc: ssrcs.media,
                lost: (0..16).collect(),
            }),
            RtcpPacket::Remb(Remb {
                sender_ssrc: 1,
                bitrate_bps: 50_000,
                ssrcs: vec![ssrcs.media],
            }),
        ] {
            let mut b = Vec::new();
            p.encode(&mut b).unwrap();
            attacks.push(b);
        }
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
            attacks,
            rtcp: encode(&compound),
            huge_nack,
            feedback_65535: encode(&feedback(&all)),
            small_feedback: encode(&feedback(&times)),
        }
    }

    /// One hostile datagram.
    fn hostile(&self, rng: &mut ChaCha8Rng, out: &mut Vec<u8>) {
        out.clear();
        match below(rng, 11) {
            10 => out.extend_from_slice(&self.attacks[below(rng, self.attacks.len())]),
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

/// Sends to one end, keeping at most [`WINDOW`] datagrams unread by its loop.
struct Target<'a> {
    addr: SocketAddr,
    handle: &'a Handle,
    /// Datagrams from other sockets it had read before the flood.
    before: u64,
    sent: u64,
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

/// Resident memory of this process, in bytes.
fn resident() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap();
    kb * 1024
}

/// Bytes of every log of a run.
fn log_bytes(dir: &std::path::Path) -> u64 {
    ["send", "recv"]
        .iter()
        .flat_map(|end| std::fs::read_dir(dir.join(end)).unwrap())
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum()
}

/// What a run is judged by.
struct Run {
    send: serde_json::Value,
    recv: serde_json::Value,
    shown: usize,
    logs: u64,
    resident_growth: u64,
}

/// A key both ends share (bytes 0..30).
fn key() -> Keying {
    Keying::from_base64(
        "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwd",
        Profile::AesCm128HmacSha1_80,
        "test",
    )
    .unwrap()
}

/// The flow for 6 s, flooded from 1 s on if `flood` (summaries, frames shown, log bytes).
fn run_flow(tag: &str, flood: bool, srtp: Option<Keying>) -> Run {
    let dir = TempDir::new(tag);
    let running = start_with(
        SCENARIO,
        None,
        &dir.0,
        Duration::from_secs_f64(6.0),
        Duration::from_secs_f64(6.3),
        false,
        srtp,
        |_| {},
    );
    std::thread::sleep(std::time::Duration::from_secs(1));
    let resident_before = resident();
    if flood {
        let flooder = UdpSocket::bind("127.0.0.1:0").unwrap();
        let foreign = |h: &Handle| h.foreign.load(std::sync::atomic::Ordering::Relaxed);
        let mut targets = [
            Target {
                addr: running.receiver_addr,
                handle: &running.receiver,
                before: foreign(&running.receiver),
                sent: 0,
            },
            Target {
                addr: running.sender_addr,
                handle: &running.sender,
                before: foreign(&running.sender),
                sent: 0,
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
                        started.elapsed().as_secs() < 60,
                        "a loop stopped reading ({} unread)",
                        t.unread()
                    );
                    std::thread::yield_now();
                }
                templates.hostile(&mut rng, &mut datagram);
                t.sent += 1; // first: the loop may read it before send_to returns
                flooder.send_to(&datagram, t.addr).unwrap();
            }
        }
        while targets.iter().any(|t| t.unread() > 0) && started.elapsed().as_secs() < 60 {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        eprintln!(
            "flood of {} datagrams took {:.2} s",
            2 * PER_TARGET,
            started.elapsed().as_secs_f64()
        );
        for t in &targets {
            assert_eq!(t.unread(), 0, "every datagram of the flood was read");
        }
    }
    let (send, recv) = running.join();
    let resident_growth = resident().saturating_sub(resident_before);
    let shown = csv(&dir.0.join("recv/frames.csv"))
        .iter()
        .skip(1)
        .filter(|r| r[2] == "displayed")
        .count();
    Run {
        logs: log_bytes(&dir.0),
        send,
        recv,
        shown,
        resident_growth,
    }
}

/// The tests measure this process's resident memory: one at a time.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn a_flood_from_a_third_party_leaves_the_flow_as_it_was() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let clean = run_flow("clean", false, None);
    let flooded = run_flow("flooded", true, None);
    assert_unharmed(&clean, &flooded);
}

#[test]
fn a_flood_against_srtp_ends_is_refused_and_leaves_the_flow_as_it_was() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let clean = run_flow("clean-srtp", false, Some(key()));
    let flooded = run_flow("flooded-srtp", true, Some(key()));
    for (end, s) in [("sender", &flooded.send), ("receiver", &flooded.recv)] {
        assert_eq!(s["srtp"], "AES_CM_128_HMAC_SHA1_80");
        let refused = s["unauthenticated"].as_u64().unwrap();
        assert!(
            refused >= PER_TARGET,
            "{end}: {refused} refused by SRTP of {PER_TARGET} sent"
        );
    }
    assert_unharmed(&clean, &flooded);
}

/// The flooded run against the clean one: every flood datagram read and dropped, the flow the
/// same within the issue's tolerances.
fn assert_unharmed(clean: &Run, flooded: &Run) {
    for (end, s) in [("sender", &flooded.send), ("receiver", &flooded.recv)] {
        let foreign = s["foreign_datagrams"].as_u64().unwrap();
        assert!(
            foreign >= PER_TARGET,
            "{end}: {foreign} datagrams counted foreign of {PER_TARGET} sent"
        );
        assert_eq!(
            s["malformed"], 0,
            "{end}: the flood reached the endpoint ({s})"
        );
    }
    assert_eq!(
        flooded.recv["peer"].as_str(),
        flooded.send["local"]
            .as_str()
            .map(|l| l.replace("0.0.0.0", "127.0.0.1"))
            .as_deref(),
        "the receiver answers the real sender"
    );
    let bytes = |r: &Run| r.send["bytes_sent"].as_f64().unwrap();
    eprintln!(
        "shown {} (clean {}), sent {:.0} (clean {:.0}) bytes, logs {} (clean {}) bytes, resident +{} (clean +{}) bytes",
        flooded.shown,
        clean.shown,
        bytes(flooded),
        bytes(clean),
        flooded.logs,
        clean.logs,
        flooded.resident_growth,
        clean.resident_growth
    );
    assert!(
        (flooded.shown as f64 / clean.shown as f64 - 1.0).abs() <= 0.05,
        "{} frames shown against {} without the flood",
        flooded.shown,
        clean.shown
    );
    assert!(
        (bytes(flooded) / bytes(clean) - 1.0).abs() <= 0.10,
        "{:.0} bytes sent against {:.0} without the flood",
        bytes(flooded),
        bytes(clean)
    );
    assert!(
        flooded.logs < clean.logs + 1_000_000,
        "logs of {} bytes against {} without the flood",
        flooded.logs,
        clean.logs
    );
    assert!(
        flooded.resident_growth < 10 << 20,
        "resident memory grew by {} bytes during the flood",
        flooded.resident_growth
    );
    assert_eq!(
        clean.recv["arrivals"], clean.send["packets"],
        "loopback loses nothing (and SRTP refuses none of the flow's own packets)"
    );
}

#[test]
fn a_forged_first_packet_does_not_take_a_receiver_told_its_peer_or_speaking_srtp() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    hijack(true, None);
    hijack(false, Some(key()));
}

fn hijack(pin: bool, srtp: Option<Keying>) {
    let dir = TempDir::new("hijack");
    let spoofer = UdpSocket::bind("127.0.0.1:0").unwrap();
    let running = start_with(
        SCENARIO,
        None,
        &dir.0,
        Duration::from_secs_f64(3.0),
        Duration::from_secs_f64(3.3),
        pin,
        srtp,
        |receiver| {
            // The flow's own first packet, from another port, before the sender starts.
            let templates = Templates::new();
            spoofer.send_to(&templates.rtp[0], receiver).unwrap();
            std::thread::sleep(std::time::Duration::from_millis(100));
        },
    );
    let sender_addr = running.sender_addr;
    let (send, recv) = running.join();
    assert_eq!(
        recv["peer"].as_str(),
        Some(sender_addr.to_string().as_str()),
        "the receiver answers its peer, not the spoofer"
    );
    assert!(recv["foreign_datagrams"].as_u64().unwrap() >= 1);
    let feedback = send["datagrams_received"].as_u64().unwrap();
    assert!(
        feedback > 50,
        "the sender got {feedback} datagrams of feedback"
    );
    assert!(recv["frames_displayed"].as_u64().unwrap() > 50, "{recv}");
}
