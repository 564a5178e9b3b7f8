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
