//! Open-loop replay: a controller fed the feedback of packets someone else sent.
//!
//! A closed-loop run lets a controller's decisions shape the packets it later hears about, so
//! two implementations of one algorithm drift apart from their first difference on. To compare
//! estimators (rtcc's GCC against libwebrtc ports, `bench/gcc_crosscheck/`), each is given the
//! *same* packet log instead: every packet's send time, receive time (or loss), size, frame and
//! the time the feedback that reports it reaches the sender. The controller here hears of each
//! packet through [`Controller::on_packet_sent`] at its send time and through
//! [`Controller::on_feedback`] when its report arrives, in time order (a send at the same
//! instant as a report comes first); its timers fire as in the simulator. Its decisions are
//! recorded but change nothing: the packets stay those of the log.
//!
//! What the replay cannot give a controller: probe clusters are not marked (a probe packet of
//! the log is plain [`PacketKind::Probe`] padding to the replayed controller, so its probe
//! estimator sees no clusters), and the sender's in-flight bytes are those of the log. Without a
//! frame log no encoder runs (a frame controller hears of no frames); with one
//! ([`replay_feedback_with_frames`]) each frame is announced at its capture as the sender does:
//! [`frame_action`](rtcc_core::cc::FrameController::frame_action) with the pacer queue's age as the log gives it, then
//! [`on_frame_encoded`](rtcc_core::cc::FrameController::on_frame_encoded). What the controller answers changes nothing.

use crate::scenario::Scenario;
use rtcc_core::cc::{self, Controller, EncodeAction, FrameView};
use rtcc_core::packet::{Ecn, FeedbackReport, FrameInfo, PacketKind, PacketResult, SentPacket};
use rtcc_core::units::Rate;
use rtcc_core::units::Time;
use std::collections::HashMap;

/// One packet of the log, as the sender put it on the wire and as the receiver saw it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LoggedPacket {
    /// Transport-wide sequence number (consecutive from 0 in the log's order).
    pub seq: u64,
    pub send_ns: u64,
    /// Receiver clock; `None` if the packet was lost.
    pub recv_ns: Option<u64>,
    pub size: u32,
    /// The video frame it carries, if any.
    pub frame: Option<u64>,
    pub kind: PacketKind,
    /// When the report that carries this packet reaches the sender; `None`: never reported.
    pub feedback_ns: Option<u64>,
    /// The ECN codepoint it arrived with (RFC 8888 reports it per packet).
    pub ecn: Ecn,
}

/// One frame of the log, as the encoder produced it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LoggedFrame {
    pub frame: u64,
    pub capture_ns: u64,
    /// Encoded bytes (0: skipped).
    pub size: u32,
    pub packets: u16,
    pub keyframe: bool,
    /// The encoder's target at this capture.
    pub target_bps: f64,
}

/// The controller's state after one report: its target and every signal it exposes.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplayStep {
    pub time_ns: u64,
    pub target_bps: f64,
    pub signals: Vec<(&'static str, f64)>,
}

/// Replay `packets` into the controller of `sc.flows[flow]`, built from `registry` as the
/// simulator builds it. One [`ReplayStep`] per report.
pub fn replay_feedback(
    sc: &Scenario,
    flow: usize,
    registry: &cc::Registry,
    packets: &[LoggedPacket],
) -> Result<Vec<ReplayStep>, String> {
    replay_feedback_with_frames(sc, flow, registry, packets, &[])
}

/// A frame log must be in capture order with distinct frames and a finite, non-negative target:
/// the replay announces each frame when its capture time comes.
fn check_frames(frames: &[LoggedFrame]) -> Result<(), String> {
    let mut seen = std::collections::HashSet::new();
    for (k, f) in frames.iter().enumerate() {
        if !seen.insert(f.frame) {
            return Err(format!("frame {} is logged twice", f.frame));
        }
        if !(f.target_bps.is_finite() && f.target_bps >= 0.0) {
            return Err(format!(
                "frame {}: target {} bit/s is not a rate",
                f.frame, f.target_bps
            ));
        }
        if k > 0 && f.capture_ns < frames[k - 1].capture_ns {
            return Err(format!(
                "frame {} was captured before frame {}, logged ahead of it: frames must be in \
                 capture order",
                f.frame,
                frames[k - 1].frame
            ));
        }
    }
    Ok(())
}

/// [`replay_feedback`] with the encoder's frames (in capture order): at each capture the frame
/// controller gets [`frame_action`](rtcc_core::cc::FrameController::frame_action), its view of the pacer queue the oldest
/// capture among earlier frames with a media packet of the log not yet sent (a packet is queued
/// at its frame's capture; a capture comes before a send at the same instant; a reset the
/// controller asks for empties the queue as the sender's discard does, whatever the log sends
/// later), then
/// [`on_frame_encoded`](rtcc_core::cc::FrameController::on_frame_encoded).
pub fn replay_feedback_with_frames(
    sc: &Scenario,
    flow: usize,
    registry: &cc::Registry,
    packets: &[LoggedPacket],
    frames: &[LoggedFrame],
) -> Result<Vec<ReplayStep>, String> {
    let f = sc
        .flows
        .get(flow)
        .ok_or_else(|| format!("the scenario has {} flows, no flow {flow}", sc.flows.len()))?;
    let recipe = f.controller().ok_or_else(|| {
        format!(
            "flows[{flow}] is a constant-rate {} flow: it has no controller to replay",
            f.kind.name()
        )
    })?;
    if let Some(c) = &recipe.coupling {
        return Err(format!(
            "flows[{flow}] is coupled (group {:?}): a replay runs one flow's controller alone and \
             cannot reproduce what its group's other flows gave it",
            c.group
        ));
    }
    let mut controller = registry
        .create(&recipe.name, &recipe.params, &f.context(None, None))
        .map_err(|e| format!("flows[{flow}]: {e}"))?;
    for w in packets.windows(2) {
        if w[1].seq != w[0].seq + 1 {
            return Err(format!(
                "packet {} follows packet {}: the log must hold consecutive sequence numbers",
                w[1].seq, w[0].seq
            ));
        }
    }
    check_frames(frames)?;
    let frame_sizes = packets_per_frame(packets);
    let mut index_in_frame: HashMap<u64, u16> = HashMap::new();
    // The last send of each frame's media packets: queued until then.
    let mut last_send: HashMap<u64, u64> = HashMap::new();
    for p in packets.iter().filter(|p| p.kind == PacketKind::Media) {
        if let Some(fr) = p.frame {
            let t = last_send.entry(fr).or_insert(0);
            *t = (*t).max(p.send_ns);
        }
    }
    let mut frames_done = 0;
    let mut oldest = 0;
    let mut capture_until = |controller: &mut dyn Controller, until: u64| {
        while frames_done < frames.len() && frames[frames_done].capture_ns <= until {
            let f = &frames[frames_done];
            let now = Time(f.capture_ns);
            // FIFO: the oldest queued frame only moves forward.
            while oldest < frames_done
                && last_send
                    .get(&frames[oldest].frame)
                    .is_none_or(|&t| t < f.capture_ns)
            {
                oldest += 1;
            }
            let view = FrameView {
                oldest_queued: (oldest < frames_done).then(|| Time(frames[oldest].capture_ns)),
                resolution: None,
            };
            fire_timers(controller, now);
            if let Some(fc) = controller.frame_controller() {
                if fc.frame_action(now, &view).encode == EncodeAction::Reset {
                    oldest = frames_done; // the queue is discarded: only this frame is queued
                }
                let info = FrameInfo {
                    frame: f.frame,
                    capture_time: now,
                    size: f.size,
                    target: if f.size > 0 {
                        Rate(f.target_bps)
                    } else {
                        Rate::ZERO
                    },
                    packets: f.packets,
                    keyframe: f.keyframe,
                };
                fc.on_frame_encoded(now, &info);
            }
            frames_done += 1;
        }
    };

    // Reports in arrival order, each with its packets in sequence order.
    let mut reports: Vec<(u64, Vec<usize>)> = Vec::new();
    let mut by_time: HashMap<u64, usize> = HashMap::new();
    for (i, p) in packets.iter().enumerate() {
        if let Some(t) = p.feedback_ns {
            if t < p.send_ns {
                return Err(format!(
                    "packet {} is reported at {t} ns, before it was sent at {} ns",
                    p.seq, p.send_ns
                ));
            }
            let slot = *by_time.entry(t).or_insert_with(|| {
                reports.push((t, Vec::new()));
                reports.len() - 1
            });
            reports[slot].1.push(i);
        }
    }
    reports.sort_by_key(|r| r.0);

    let mut sent: Vec<SentPacket> = Vec::with_capacity(packets.len());
    let mut in_flight: u64 = 0;
    let mut next_send = 0;
    let mut steps = Vec::with_capacity(reports.len());
    for (report_ns, members) in &reports {
        // Every send up to the report's arrival, with the controller's timers in between.
        while next_send < packets.len() && packets[next_send].send_ns <= *report_ns {
            let p = &packets[next_send];
            capture_until(controller.as_mut(), p.send_ns);
            fire_timers(controller.as_mut(), Time(p.send_ns));
            in_flight += p.size as u64;
            let index = p.frame.map_or(0, |fr| {
                let i = index_in_frame.entry(fr).or_insert(0);
                *i += 1;
                *i - 1
            });
            let packet = SentPacket {
                seq: p.seq,
                size: p.size,
                send_time: Time(p.send_ns),
                frame: p.frame,
                index_in_frame: index,
                packets_in_frame: p.frame.map_or(1, |fr| frame_sizes[&fr]),
                kind: p.kind,
                in_flight,
            };
            controller.on_packet_sent(Time(p.send_ns), &packet);
            sent.push(packet);
            next_send += 1;
        }
        capture_until(controller.as_mut(), *report_ns);
        fire_timers(controller.as_mut(), Time(*report_ns));
        let results: Vec<PacketResult> = members
            .iter()
            .map(|&i| PacketResult {
                sent: sent[i],
                receive_time: packets[i].recv_ns.map(Time),
                ecn: packets[i].ecn,
            })
            .collect();
        in_flight -= results.iter().map(|r| r.sent.size as u64).sum::<u64>();
        let report = FeedbackReport {
            feedback_time: Time(*report_ns),
            packets: results,
            in_flight,
            recovery: None,
        };
        controller.on_feedback(Time(*report_ns), &report);
        let mut signals = Vec::new();
        controller.state(&mut signals);
        steps.push(ReplayStep {
            time_ns: *report_ns,
            target_bps: controller.decision().target_bitrate.bps(),
            signals,
        });
    }
    Ok(steps)
}

fn fire_timers(controller: &mut dyn Controller, now: Time) {
    while let Some(t) = controller.next_timeout() {
        if t > now {
            break;
        }
        controller.on_timeout(t);
        if controller.next_timeout() == Some(t) {
            break; // a timer that does not move would loop forever
        }
    }
}

/// How many packets of the log carry each frame (its media and everything else marked with it).
fn packets_per_frame(packets: &[LoggedPacket]) -> HashMap<u64, u16> {
    let mut counts = HashMap::new();
    for p in packets.iter().filter(|p| p.kind == PacketKind::Media) {
        if let Some(fr) = p.frame {
            *counts.entry(fr).or_insert(0u16) += 1;
        }
    }
    for p in packets {
        if let Some(fr) = p.frame {
            counts.entry(fr).or_insert(1);
        }
    }
    counts
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(controller: &str) -> Scenario {
        let text = format!(
            "name = \"t\"\nduration = \"10s\"\n[path.forward]\ncapacity = \"2Mbps\"\n\
             delay = \"20ms\"\n[[flows]]\n{controller}\n"
        );
        Scenario::from_toml_str(&text, std::path::Path::new("."), "test", None).unwrap()
    }

    /// 4 Mbit/s of 1000-byte packets, one frame per 33 ms, received `delay` later, reported
    /// every 50 ms.
    fn log(seconds: f64, delay_ms: impl Fn(f64) -> f64) -> Vec<LoggedPacket> {
        let (period_ns, per_frame) = (33_333_333u64, 16u64);
        let frames = (seconds * 30.0) as u64;
        let mut out = Vec::new();
        for fr in 0..frames {
            for k in 0..per_frame {
                let send = fr * period_ns + k * 2_000_000;
                let recv = send + (delay_ms(send as f64 / 1e9) * 1e6) as u64;
                out.push(LoggedPacket {
                    seq: out.len() as u64,
                    send_ns: send,
                    recv_ns: Some(recv),
                    size: 1000,
                    frame: Some(fr),
                    kind: PacketKind::Media,
                    feedback_ns: Some((recv / 50_000_000 + 1) * 50_000_000 + 20_000_000),
                    ecn: Ecn::NotEct,
                });
            }
        }
        out
    }

    #[test]
    fn gcc_ramps_on_a_flat_delay_and_backs_off_on_a_growing_one() {
        // The delay-based estimate: `delay_based_bps` (webrtc) and A_r (paper, its
        // `receiver_estimate_bps`); the paper profile's target is still its slow Eq. (2) ramp.
        for (controller, signal) in [
            ("controller = \"gcc\"", "delay_based_bps"),
            (
                "controller = \"gcc\"\nparams = { profile = \"paper\" }",
                "receiver_estimate_bps",
            ),
            (
                "controller = \"gcc\"\nparams = { profile = \"paper\", grouping = \"burst\" }",
                "receiver_estimate_bps",
            ),
        ] {
            let sc = scenario(controller);
            let flat = replay_feedback(&sc, 0, cc::registry(), &log(10.0, |_| 20.0)).unwrap();
            // Delay grows 100 ms per second after 5 s: a queue building at the bottleneck.
            let growing = log(10.0, |t| 20.0 + 100.0 * (t - 5.0).max(0.0));
            let queued = replay_feedback(&sc, 0, cc::registry(), &growing).unwrap();
            let last = |s: &[ReplayStep]| {
                let step = s.last().unwrap();
                step.signals.iter().find(|x| x.0 == signal).unwrap().1
            };
            assert!(
                last(&queued) < 0.9 * last(&flat),
                "{controller}: a growing delay should lower {signal} ({} vs {})",
                last(&queued),
                last(&flat)
            );
            assert!(flat.len() > 150, "one step per 50 ms report");
        }
    }

    #[test]
    fn frames_reach_a_frame_controller_with_the_queue_the_log_implies() {
        // Each frame captured 40 ms before its first packet leaves, its 16 packets over the next
        // 30 ms: until 70 ms after its capture, past the next-but-one capture (66.7 ms), so at a
        // capture the frame two back is the oldest queued. SCReAM reads that age.
        let sc = scenario("controller = \"scream\"");
        let packets = log(3.0, |_| 20.0);
        let frames: Vec<LoggedFrame> = (0..90)
            .map(|fr| LoggedFrame {
                frame: fr,
                capture_ns: fr * 33_333_333,
                size: 16_000,
                packets: 16,
                keyframe: fr == 0,
                target_bps: 4e6,
            })
            .collect();
        let age = |steps: &[ReplayStep]| {
            let last = steps.last().unwrap();
            last.signals
                .iter()
                .find(|x| x.0 == "rtp_queue_delay_ms")
                .unwrap()
                .1
        };
        let shifted: Vec<LoggedPacket> = packets
            .iter()
            .map(|p| LoggedPacket {
                send_ns: p.send_ns + 40_000_000,
                recv_ns: p.recv_ns.map(|r| r + 40_000_000),
                feedback_ns: p.feedback_ns.map(|f| f + 40_000_000),
                ..*p
            })
            .collect();
        let with = replay_feedback_with_frames(&sc, 0, cc::registry(), &shifted, &frames).unwrap();
        assert!((age(&with) - 66.667).abs() < 0.01, "{}", age(&with));
    }

    #[test]
    fn the_same_log_gives_the_same_steps() {
        let sc = scenario("controller = \"gcc\"");
        let packets = log(5.0, |t| 20.0 + 5.0 * (t * 7.0).sin());
        assert_eq!(
            replay_feedback(&sc, 0, cc::registry(), &packets).unwrap(),
            replay_feedback(&sc, 0, cc::registry(), &packets).unwrap()
        );
    }

    #[test]
    fn a_log_with_a_gap_or_a_report_before_its_send_is_refused() {
        let sc = scenario("controller = \"gcc\"");
        let mut packets = log(1.0, |_| 20.0);
        packets.remove(3);
        let err = replay_feedback(&sc, 0, cc::registry(), &packets).unwrap_err();
        assert!(err.contains("consecutive"), "{err}");
        let mut packets = log(1.0, |_| 20.0);
        packets[5].feedback_ns = Some(0);
        let err = replay_feedback(&sc, 0, cc::registry(), &packets).unwrap_err();
        assert!(err.contains("before it was sent"), "{err}");
        assert!(replay_feedback(&sc, 3, cc::registry(), &packets).is_err());
    }

    #[test]
    fn a_frame_log_out_of_order_repeated_or_without_a_rate_is_refused() {
        let sc = scenario("controller = \"scream\"");
        let packets = log(1.0, |_| 20.0);
        let frame = |frame: u64, capture_ns: u64, target_bps: f64| LoggedFrame {
            frame,
            capture_ns,
            size: 1000,
            packets: 1,
            keyframe: false,
            target_bps,
        };
        for (frames, words) in [
            (vec![frame(0, 50, 1e6), frame(1, 40, 1e6)], "capture order"),
            (vec![frame(0, 0, 1e6), frame(0, 40, 1e6)], "logged twice"),
            (vec![frame(0, 0, f64::NAN)], "not a rate"),
            (vec![frame(0, 0, -1.0)], "not a rate"),
        ] {
            let err =
                replay_feedback_with_frames(&sc, 0, cc::registry(), &packets, &frames).unwrap_err();
            assert!(err.contains(words), "{err}");
        }
    }
}
