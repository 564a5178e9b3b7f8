//! A flow between `rtcc send` and `rtcc recv` loops over 127.0.0.1 (no root needed): the fixed
//! controller at 1 Mbit/s, then gcc, 3 s each.
//!
//! Loopback is no bottleneck and loses nothing while the receiver keeps up, so what arrives is
//! what was sent; the tolerances below are generous so that a loaded 2-core machine (a loop late
//! by milliseconds now and then) still passes. No assertion is on timing; the lateness of the
//! sender's loop is printed (run with `--nocapture`).

mod common;

use common::{csv, start, TempDir};
use rtcc_core::Duration;
use serde_json::Value;
use std::collections::HashSet;

const SCENARIO: &str = r#"
duration = "4s"
seed = 3
[path.forward]
capacity = "10Mbps"

[[flows]]
controller = "fixed"
params = { rate = "1Mbps" }
stop = "3s"
"#;

fn n(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// Run the flow for 3 s (the receiver 3.5 s) and check what every run must show; the summaries.
fn run_flow(controller: Option<&str>, logs: &std::path::Path) -> (Value, Value) {
    let running = start(
        SCENARIO,
        controller,
        logs,
        Duration::from_millis(3000),
        Duration::from_millis(3500),
    );
    let (send, recv) = running.join();
    let label = controller.unwrap_or("fixed");
    eprintln!(
        "{label}: sent {:.2} Mbit/s, lateness of the sender's loop {}",
        n(&send["sent_mbps"]),
        send["lateness"]
    );

    // Frames are encoded, received and shown (30 fps for 3 s: 90).
    let encoded = n(&send["frames_encoded"]);
    assert!(
        (85.0..=92.0).contains(&encoded),
        "{label}: {encoded} frames encoded"
    );
    let shown = n(&recv["frames_displayed"]);
    assert!(
        shown >= 0.9 * encoded,
        "{label}: {shown} of {encoded} frames shown"
    );

    // What arrives is what was sent, within 10 % (it is the same over loopback; the receiver
    // runs longer than the sender, so nothing is still in flight when it stops).
    let (sent, arrived) = (n(&send["bytes"]), n(&recv["arrival_bytes"]));
    assert!(
        (arrived - sent).abs() <= 0.1 * sent,
        "{label}: {arrived} bytes arrived of {sent} sent"
    );
    assert_eq!(
        recv["peer"], send["local"],
        "{label}: the receiver answers the sender"
    );

    // Feedback reaches the sender, none of it malformed.
    assert!(n(&send["datagrams_received"]) >= 20.0, "{label}: {send}");
    assert_eq!(send["malformed"], 0, "{label}");
    assert_eq!(recv["malformed"], 0, "{label}");

    // The logs are complete and agree with the summaries.
    let packets = csv(&logs.join("send/packets.csv"));
    assert_eq!(packets[0].join(","), "flow,seq,kind,size,frame,send_ns");
    assert_eq!(packets.len() as f64 - 1.0, n(&send["packets"]), "{label}");
    let arrivals = csv(&logs.join("recv/arrivals.csv"));
    assert_eq!(arrivals[0].join(","), "seq,size,recv_ns");
    assert_eq!(arrivals.len() as f64 - 1.0, n(&recv["arrivals"]), "{label}");
    let sent_seqs: HashSet<&str> = packets[1..].iter().map(|r| r[1].as_str()).collect();
    assert!(
        arrivals[1..]
            .iter()
            .all(|r| sent_seqs.contains(r[0].as_str())),
        "{label}: arrivals carry the transport-wide numbers the sender logged"
    );
    let state = csv(&logs.join("send/state.csv"));
    let samples: HashSet<&str> = state[1..].iter().map(|r| r[0].as_str()).collect();
    assert!(
        samples.len() >= 50,
        "{label}: the state every 50 ms for 3 s"
    );
    for f in [
        "send/frames.csv",
        "send/send.json",
        "recv/frames.csv",
        "recv/recv.json",
    ] {
        assert!(logs.join(f).exists(), "{label}: {f}");
    }
    let partial = std::fs::read_dir(logs.join("send"))
        .unwrap()
        .chain(std::fs::read_dir(logs.join("recv")).unwrap())
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .to_string_lossy()
                .ends_with(".partial")
        })
        .count();
    assert_eq!(partial, 0, "{label}: every log renamed when complete");
    (send, recv)
}

#[test]
fn fixed_then_gcc_over_loopback() {
    let dir = TempDir::new("loopback");

    let logs = dir.0.join("fixed");
    let (send, _) = run_flow(None, &logs);
    let mbps = n(&send["sent_mbps"]);
    assert!(
        (0.8..=1.25).contains(&mbps),
        "fixed at 1 Mbit/s sent {mbps} Mbit/s"
    );

    let logs = dir.0.join("gcc");
    let (send, _) = run_flow(Some("gcc"), &logs);
    let (start, end) = (
        n(&send["state_start"]["target_bps"]),
        n(&send["state_end"]["target_bps"]),
    );
    assert!(
        end > 2.0 * start,
        "gcc's target moved off its start on feedback: {start} → {end} bit/s"
    );
    assert!(
        send["state_end"]["rtt_ms"].is_number(),
        "gcc measured a round trip: {send}"
    );
}
