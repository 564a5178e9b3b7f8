//! A streaming run (packet records handed to a sink as they settle) gives the same summary and
//! the same records as a run that keeps its whole log, and hands them over during the run.

use crate::common;

use common::{run_quiet, scenario};
use rtcc_core::metrics::PacketRecord;
use rtcc_sim::run_streaming;
use rtcc_sim::sim::STREAM_CHUNK;

/// Over 65 536 packets in the first two flows (several chunks each), losses in the queue and on
/// the link, a flow that stops early, a reverse flow, and packets still queued at the end.
const BIG: &str = r#"
duration = "12s"
seed = 3
[path.forward]
capacity = "60Mbps"
delay = "10ms"
queue = "60pkts"
loss = { model = "random", p = 0.002 }
[path.reverse]
capacity = "5Mbps"
delay = "10ms"
[[flows]]
kind = "tcp"
controller = "cubic"
[[flows]]
kind = "cbr"
rate = "70Mbps"
packet_size = "500B"
stop = "11s"
[[flows]]
controller = "gcc"
[[flows]]
controller = "copa"
direction = "reverse"
"#;

#[test]
fn a_streamed_run_matches_a_kept_one_record_for_record() {
    let sc = scenario(BIG);
    let kept = run_quiet(&sc);
    let mut chunks: Vec<(f64, Vec<PacketRecord>)> = Vec::new();
    let fraction = std::cell::Cell::new(0.0f64);
    let streamed = run_streaming(&sc, None, &mut |f| fraction.set(f), &mut |c| {
        chunks.push((fraction.get(), c.to_vec()))
    })
    .expect("runs");
    assert_eq!(
        kept.summary.to_json(),
        streamed.summary.to_json(),
        "the summary does not depend on whether the log is kept"
    );
    assert!(
        streamed.flows.iter().all(|f| f.packets.is_empty()),
        "a streamed run keeps no records"
    );
    for (i, flow) in kept.flows.iter().enumerate() {
        let mine: Vec<&(f64, Vec<PacketRecord>)> = chunks
            .iter()
            .filter(|(_, c)| c[0].flow == i as u32)
            .collect();
        assert!(
            mine.iter()
                .all(|(_, c)| c.iter().all(|p| p.flow == i as u32)),
            "a chunk holds one flow's records"
        );
        let joined: Vec<PacketRecord> = mine.iter().flat_map(|(_, c)| c.iter().copied()).collect();
        assert_eq!(
            joined, flow.packets,
            "flow {i}: the same records in send order"
        );
    }
    let big = kept.flows[1].packets.len();
    assert!(
        big > 2 * STREAM_CHUNK,
        "the test needs several chunks ({big} packets)"
    );
    let early = chunks.iter().filter(|(f, _)| *f < 0.9).count();
    assert!(
        early >= 2,
        "chunks go out while the run goes on, not all at the end ({early} before 90 %)"
    );
    let lost = kept.flows[1].packets.iter().filter(|p| p.dropped).count();
    let queued = kept
        .flows
        .iter()
        .flat_map(|f| &f.packets)
        .filter(|p| !p.dropped && p.recv.is_none())
        .count();
    assert!(
        lost > 0 && queued > 0,
        "drops ({lost}) and packets unsettled at the end ({queued}) are exercised"
    );
    // The run's facts too: the per-window rates are gathered as packets settle, so a streamed
    // run has them; each window holds the bytes of the records received in it.
    let facts = rtcc_scenario::run_facts(&sc, &kept);
    assert_eq!(
        facts.to_json(),
        rtcc_scenario::run_facts(&sc, &streamed).to_json(),
        "the facts do not depend on whether the log is kept"
    );
    assert_eq!(facts.windows, 12);
    for (flow, logged) in facts.flows.iter().zip(&kept.flows) {
        let mut bits = vec![0.0; facts.windows];
        for p in &logged.packets {
            if let Some(r) = p.recv {
                bits[(r.0 / 1_000_000_000) as usize] += p.size as f64 * 8.0;
            }
        }
        assert_eq!(flow.rate_bps, bits, "{}", flow.name);
    }
}

/// Runs that stress the frame rules of a streaming run (`rtcc_sim::frames`): repairs completing
/// frames after later ones (NACK on a lossy link, FEC), an outage that leaves frames undecided
/// for seconds, frames the encoder skips (a paused sender, the frame dropper on a slow link), a
/// flow that stops early and one that pauses, a receiver clock ahead of the sender's, and
/// frames still in flight at the end.
const FRAME_CASES: [&str; 3] = [
    r#"
duration = "60s"
seed = 5
[path.forward]
schedule = [["0s", "3Mbps"], ["12s", "1kbps"], ["16s", "3Mbps"], ["30s", "400kbps"], ["45s", "2Mbps"]]
delay = "30ms"
queue = "150ms"
loss = { model = "random", p = 0.03 }
[[flows]]
controller = "gcc"
clock_offset = "250ms"
[[flows]]
controller = "sqp"
recovery = { nack = true, fec = 4 }
stop = "50s"
[[flows]]
controller = "vidaptive"
active = [["0s", "20s"], ["24s", "60s"]]
"#,
    r#"
duration = "30s"
seed = 9
[path.forward]
capacity = "250kbps"
delay = "60ms"
queue = "1000pkts"
[[flows]]
controller = "fixed"
params = { rate = "2Mbps" }
[[flows]]
controller = "c3g"
"#,
    r#"
duration = "25s"
seed = 2
[path.forward]
capacity = "8Mbps"
delay = "20ms"
queue = "40ms"
loss = { model = "gilbert-elliott-time", good = "2s", bad = "300ms" }
[[flows]]
controller = "copa"
[[flows]]
kind = "tcp"
controller = "cubic"
"#,
];

#[test]
fn streamed_frames_and_state_match_a_kept_run() {
    use rtcc_core::metrics::frame_stats::{derive, later_events};
    use rtcc_sim::frames::SettledFrame;
    use rtcc_sim::sim::{Sinks, StateLog};
    for (case, toml) in FRAME_CASES.iter().enumerate() {
        let sc = scenario(toml);
        let kept = run_quiet(&sc);
        let mut frames: Vec<SettledFrame> = Vec::new();
        let mut state = StateLog::default();
        let fraction = std::cell::Cell::new(0.0f64);
        let mut early_chunks = 0;
        let (mut on_packets, mut on_frames, mut on_state) = (
            |_: &[PacketRecord]| {},
            |c: &[SettledFrame]| {
                early_chunks += (fraction.get() < 0.9) as usize;
                frames.extend_from_slice(c)
            },
            |s: &StateLog| {
                state.flow.extend_from_slice(&s.flow);
                state.time.extend_from_slice(&s.time);
                state.signal.extend_from_slice(&s.signal);
                state.value.extend_from_slice(&s.value);
            },
        );
        let sinks = Sinks {
            packets: Some(&mut on_packets),
            frames: Some(&mut on_frames),
            state: Some(&mut on_state),
        };
        let streamed = rtcc_sim::run::run_with_sinks(
            &sc,
            None,
            &mut |f| fraction.set(f),
            rtcc_core::cc::registry(),
            sinks,
            None,
        )
        .expect("runs");
        assert_eq!(
            kept.summary.to_json(),
            streamed.summary.to_json(),
            "case {case}: the summary does not depend on whether the frame and state logs are kept"
        );
        assert!(
            streamed.flows.iter().all(|f| f.frames.is_empty()) && streamed.state.time.is_empty(),
            "case {case}: a streamed run keeps no frames or state samples"
        );
        let end = rtcc_core::Time(sc.duration.0);
        for (i, flow) in kept.flows.iter().enumerate() {
            let expected: Vec<SettledFrame> = flow
                .frames
                .iter()
                .zip(later_events(&flow.frames))
                .map(|(r, later)| {
                    let (delay, latency) = derive(r, later, end);
                    SettledFrame {
                        record: *r,
                        delay,
                        latency,
                    }
                })
                .collect();
            let mine: Vec<SettledFrame> = frames
                .iter()
                .filter(|f| f.record.flow == i as u32)
                .copied()
                .collect();
            assert_eq!(
                mine.len(),
                expected.len(),
                "case {case}, flow {i}: every frame, once"
            );
            for (m, e) in mine.iter().zip(&expected) {
                assert_eq!(
                    m, e,
                    "case {case}, flow {i}: frame {} as the kept log has it",
                    e.record.frame
                );
            }
        }
        let samples = |s: &StateLog| -> Vec<(u32, rtcc_core::Time, &'static str, u64)> {
            (0..s.time.len())
                .map(|k| (s.flow[k], s.time[k], s.signal[k], s.value[k].to_bits()))
                .collect()
        };
        let (mine, theirs) = (samples(&state), samples(&kept.state));
        let first_difference = mine.iter().zip(&theirs).position(|(a, b)| a != b);
        assert!(
            mine.len() == theirs.len() && first_difference.is_none(),
            "case {case}: the same state samples in the same order ({} and {}, first difference at {first_difference:?})",
            mine.len(),
            theirs.len()
        );
        // The rules are exercised: frames completed late by a repair, frames never complete,
        // frames skipped by the encoder.
        let all = || kept.flows.iter().flat_map(|f| &f.frames);
        let repaired = all().filter(|f| f.recovered).count();
        let never = all()
            .filter(|f| f.packets > 0 && f.complete.is_none())
            .count();
        let skipped = all().filter(|f| f.packets == 0).count();
        eprintln!("case {case}: {repaired} repaired, {never} never complete, {skipped} skipped");
        assert!(never > 0, "case {case}: frames that never complete");
        if case == 0 {
            assert!(
                repaired > 0 && skipped > 0,
                "case 0: repairs and skipped frames"
            );
            assert!(
                early_chunks > 0,
                "case 0: frames settle and go out while the run goes on ({} frames, chunks of {})",
                frames.len(),
                rtcc_sim::sim::FRAME_CHUNK
            );
        }
    }
}
