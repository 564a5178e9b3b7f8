//! Whole-simulation checks of what the endpoints add around the controllers: loss recovery
//! (NACK/RTX, XOR FEC), media in both directions over one link pair (RFC 8867 §5.3), flows that
//! pause and resume (RFC 8867 §5.8), the feedback overhead metrics, and determinism with all of
//! it switched on.
//!
//! The RFC 8867 cases use the parameters of the reference ns-3 implementation (cisco/ns3-rmcat,
//! `rmcat-wired-test-suite.cc`): 50 ms one-way propagation delay, a 300 ms bottleneck queue;
//! rates in decimal units (ns3-rmcat uses 2^20 bit/s per "Mbps").

use crate::common;

use common::{scenario, simulate, throughput_bps};
use rtcc_core::packet::PacketKind;
use rtcc_core::Time;
use rtcc_sim::{run, RunResult};

/// One `fixed` 3 Mbit/s flow over a 10 Mbit/s link with 2 % random loss.
fn lossy(recovery: &str) -> RunResult {
    simulate(&format!(
        r#"
duration = "20s"
seed = 3
[path.forward]
capacity = "10Mbps"
delay = "20ms"
loss = 0.02
[path.reverse]
delay = "20ms"
[[flows]]
controller = "fixed"
params = {{ rate = "3Mbps" }}
recovery = {recovery}
"#
    ))
}

fn shown_share(r: &RunResult) -> f64 {
    let f = &r.flows[0].frames;
    f.iter().filter(|f| f.display.is_some()).count() as f64 / f.len() as f64
}

fn count(r: &RunResult, kind: PacketKind) -> usize {
    r.flows[0].packets.iter().filter(|p| p.kind == kind).count()
}

#[test]
fn nack_repairs_random_loss() {
    let off = lossy("{ nack = false }");
    let on = lossy("{ nack = true }");
    let s = &on.summary.flows[0];
    eprintln!(
        "2 % loss: shown {:.3} with NACK, {:.3} without; {} retransmissions, {} frames recovered, frame delay P95 {:?} ms",
        shown_share(&on),
        shown_share(&off),
        s.retransmissions,
        s.frames_recovered,
        s.frame_delay_ms.p95
    );
    assert_eq!(s.retransmissions, count(&on, PacketKind::Retransmission));
    assert!(s.retransmissions > 0, "losses were retransmitted");
    assert!(
        shown_share(&on) > 0.97,
        "with NACK almost every frame is shown: {:.3}",
        shown_share(&on)
    );
    assert!(
        shown_share(&off) < shown_share(&on) - 0.1,
        "without NACK a 2 % loss leaves many frames unshown ({:.3} vs {:.3})",
        shown_share(&off),
        shown_share(&on)
    );
    assert!(
        s.frames_recovered > 10,
        "frames completed by retransmission: {}",
        s.frames_recovered
    );
    let p95 = s.frame_delay_ms.p95.unwrap();
    assert!(
        p95 < 250.0,
        "repairs take about one RTT (40 ms) plus a NACK round: P95 frame delay {p95:.0} ms"
    );
    // Retransmissions are part of the target: the encoder gets what they leave (libwebrtc's
    // protection overhead rule), so media plus repairs send what the controller asked for.
    let bytes = |r: &RunResult, kind: Option<PacketKind>| {
        r.flows[0]
            .packets
            .iter()
            .filter(|p| kind.is_none_or(|k| p.kind == k))
            .map(|p| p.size as f64)
            .sum::<f64>()
    };
    let (total_on, total_off) = (bytes(&on, None), bytes(&off, None));
    assert!(
        (total_on / total_off - 1.0).abs() < 0.01,
        "the same bytes on the wire with and without repairs: {total_on} vs {total_off}"
    );
    let repaired = bytes(&on, Some(PacketKind::Retransmission));
    let media_less = bytes(&off, Some(PacketKind::Media)) - bytes(&on, Some(PacketKind::Media));
    assert!(
        (media_less / repaired - 1.0).abs() < 0.25,
        "the encoder gave up about what the repairs took: {media_less} vs {repaired} bytes"
    );
}

#[test]
fn fec_recovers_single_losses_without_retransmission() {
    let r = lossy("{ nack = false, fec = 4 }");
    let s = &r.summary.flows[0];
    assert_eq!(s.fec_packets, count(&r, PacketKind::Fec));
    assert!(s.fec_packets > 0, "parity packets are sent");
    assert_eq!(s.retransmissions, 0);
    // One parity packet per 4 media packets or per frame, whichever closes the group first.
    let media = count(&r, PacketKind::Media);
    assert!(
        s.fec_packets * 4 >= media && s.fec_packets <= media,
        "{} parity packets for {media} media packets",
        s.fec_packets
    );
    assert!(
        s.frames_recovered > 10,
        "frames completed by FEC: {}",
        s.frames_recovered
    );
    let off = lossy("{ nack = false }");
    assert!(
        shown_share(&r) > shown_share(&off) + 0.05,
        "FEC shows more frames: {:.3} vs {:.3}",
        shown_share(&r),
        shown_share(&off)
    );
}

/// RFC 8867 §5.3, congested feedback link with media in both directions: one flow on each link,
/// each link's capacity changing at its own times, so each flow's feedback crosses the other
/// flow's congested bottleneck.
#[test]
fn media_in_both_directions_adapts_to_each_links_capacity() {
    for controller in ["gcc", "sqp"] {
        let r = simulate(&format!(
            r#"
duration = "100s"
[path.forward]
schedule = [["0s", "2Mbps"], ["20s", "1Mbps"], ["40s", "500kbps"], ["60s", "2Mbps"]]
delay = "50ms"
queue = "300ms"
[path.reverse]
schedule = [["0s", "2Mbps"], ["35s", "800kbps"], ["70s", "2Mbps"]]
delay = "50ms"
queue = "300ms"
[[flows]]
name = "a-to-b"
controller = "{controller}"
[[flows]]
name = "b-to-a"
controller = "{controller}"
direction = "reverse"
"#
        ));
        let fwd = |a, b| throughput_bps(&r, 0, a, b);
        let rev = |a, b| throughput_bps(&r, 1, a, b);
        eprintln!(
            "{controller}: forward {:.2}/{:.2}/{:.2}/{:.2} Mbit/s, reverse {:.2}/{:.2}/{:.2} Mbit/s, feedback share {:?}/{:?}",
            fwd(10.0, 20.0) / 1e6,
            fwd(30.0, 40.0) / 1e6,
            fwd(50.0, 60.0) / 1e6,
            fwd(85.0, 100.0) / 1e6,
            rev(25.0, 35.0) / 1e6,
            rev(50.0, 70.0) / 1e6,
            rev(85.0, 100.0) / 1e6,
            r.summary.flows[0].feedback_share,
            r.summary.flows[1].feedback_share,
        );
        // Each flow uses its own link: together they carry more than either link could ...
        assert!(
            fwd(25.0, 35.0) + rev(25.0, 35.0) > 1.5 * 1e6,
            "{controller}: forward 1 Mbit/s and reverse 2 Mbit/s carry more than 1 Mbit/s"
        );
        assert!(
            rev(45.0, 60.0) > 0.5e6 * 1.1,
            "{controller}: the reverse flow gets more than the 0.5 Mbit/s forward link"
        );
        // ... and is limited by it (below the reverse link's 800 kbit/s while it is that low)
        assert!(
            rev(40.0, 70.0) < 0.8e6 * 1.02,
            "{controller}: the reverse flow is limited by the reverse link"
        );
        assert!(
            fwd(45.0, 60.0) < 0.5e6 * 1.02,
            "{controller}: the forward flow by the forward link"
        );
        // ... and tracks it: a good share of each capacity step, below it when it is low.
        for (what, got, cap) in [
            ("forward 2 Mbit/s", fwd(10.0, 20.0), 2e6),
            ("forward 1 Mbit/s", fwd(30.0, 40.0), 1e6),
            ("forward 0.5 Mbit/s", fwd(50.0, 60.0), 0.5e6),
            ("forward back to 2 Mbit/s", fwd(85.0, 100.0), 2e6),
            ("reverse 2 Mbit/s", rev(20.0, 35.0), 2e6),
            ("reverse 0.8 Mbit/s", rev(50.0, 70.0), 0.8e6),
            ("reverse back to 2 Mbit/s", rev(85.0, 100.0), 2e6),
        ] {
            assert!(
                got > 0.4 * cap,
                "{controller}: {what}: {:.2} Mbit/s, under 40 % of the capacity",
                got / 1e6
            );
        }
        // Feedback is counted on the link it crosses: the forward flow's on the reverse link.
        for f in &r.summary.flows {
            let share = f.feedback_share.unwrap();
            assert!(
                f.feedback_bytes > 0 && share > 0.0 && share < 0.1,
                "{controller}: {}: feedback {} bytes, {share:.4} of the link back",
                f.name,
                f.feedback_bytes
            );
        }
    }
}

/// RFC 8867 §5.8, media pause and resume: three flows on 3.5 Mbit/s, the second paused from
/// 40 s to 60 s. The others take its share meanwhile; it resumes where it left off (its
/// controller and encoder state kept), not from a cold start.
#[test]
fn a_paused_flow_sends_nothing_and_resumes_with_its_state() {
    let r = simulate(
        r#"
duration = "120s"
[path.forward]
capacity = "3.5Mbps"
delay = "50ms"
queue = "300ms"
[path.reverse]
delay = "50ms"
[[flows]]
name = "a"
controller = "gcc"
[[flows]]
name = "paused"
controller = "gcc"
active = [["0s", "40s"], ["60s", "120s"]]
[[flows]]
name = "c"
controller = "gcc"
"#,
    );
    let sent_in = |a: f64, b: f64| {
        r.flows[1]
            .packets
            .iter()
            .filter(|p| p.send >= Time::from_secs_f64(a) && p.send < Time::from_secs_f64(b))
            .count()
    };
    // A frame's packets and their repairs may still leave just after the pause begins.
    assert_eq!(sent_in(40.5, 60.0), 0, "nothing is sent while paused");
    assert!(sent_in(60.0, 61.0) > 0, "sending again at once after 60 s");
    let frames = &r.flows[1].frames;
    let captured_in = |a: f64, b: f64| {
        frames
            .iter()
            .filter(|f| f.capture >= Time::from_secs_f64(a) && f.capture < Time::from_secs_f64(b))
            .count()
    };
    assert_eq!(
        captured_in(40.0, 60.0),
        0,
        "no frames captured while paused"
    );
    let before = frames
        .iter()
        .rev()
        .find(|f| f.capture < Time::from_secs_f64(40.0))
        .unwrap();
    let after = frames
        .iter()
        .find(|f| f.capture >= Time::from_secs_f64(60.0))
        .unwrap();
    eprintln!(
        "target {:.2} Mbit/s at the pause, {:.2} Mbit/s at the resume; others during the pause {:.2} Mbit/s",
        before.target_bps / 1e6,
        after.target_bps / 1e6,
        (throughput_bps(&r, 0, 45.0, 60.0) + throughput_bps(&r, 2, 45.0, 60.0)) / 1e6
    );
    assert!(
        after.frame == before.frame + 1,
        "frame numbers continue across the pause"
    );
    // GCC starts at 300 kbit/s; a kept state resumes near the rate it had.
    assert!(
        (after.target_bps - before.target_bps).abs() < 0.2 * before.target_bps
            && after.target_bps > 600e3,
        "resumed at {:.0} kbit/s, paused at {:.0} kbit/s",
        after.target_bps / 1e3,
        before.target_bps / 1e3
    );
    // The two other flows use most of the link while the third is paused.
    let others = throughput_bps(&r, 0, 45.0, 60.0) + throughput_bps(&r, 2, 45.0, 60.0);
    assert!(
        others > 0.6 * 3.5e6,
        "the other flows take the paused flow's share: {:.2} Mbit/s",
        others / 1e6
    );
    // And all three get a share again after the resume.
    for i in 0..3 {
        let t = throughput_bps(&r, i, 90.0, 120.0);
        assert!(
            t > 0.5e6,
            "flow {i}: {:.2} Mbit/s after the resume",
            t / 1e6
        );
    }
}

#[test]
fn an_active_schedule_is_validated() {
    let error = |flow: &str, active: &str| {
        rtcc_sim::Scenario::from_toml_str(
            &format!(
                "duration = \"10s\"\n[path.forward]\ncapacity = \"1Mbps\"\n[[flows]]\n{flow}\nactive = {active}\n"
            ),
            std::path::Path::new("."),
            "t",
            None,
        )
        .unwrap_err()
        .to_string()
    };
    let bad = |active: &str| error("controller = \"gcc\"", active);
    assert!(bad("[]").contains("at least one period"));
    assert!(bad("[[\"2s\", \"1s\"]]").contains("from < to"));
    assert!(bad("[[\"0s\", \"3s\"], [\"2s\", \"5s\"]]").contains("in order"));
    assert!(bad("[[\"0s\", \"30s\"]]").contains("stop"));
    let tcp = error(
        "kind = \"tcp\"\ncontroller = \"cubic\"",
        "[[\"0s\", \"1s\"]]",
    );
    assert!(tcp.contains("onoff"), "{tcp}");
}

#[test]
fn the_same_seed_gives_the_same_run_with_recovery_both_directions_and_pauses() {
    let sc = scenario(
        r#"
duration = "20s"
seed = 7
[path.forward]
trace = "../../traces/lte-6mbps-seed1.trace"
delay = "20ms"
queue = "100pkts"
loss = { model = "gilbert-elliott", p = 0.01, r = 0.3 }
[path.reverse]
capacity = "2Mbps"
delay = "20ms"
jitter = "2ms"
[[flows]]
controller = "gcc"
encoder = "lagged"
recovery = { fec = 6 }
[[flows]]
controller = "copa"
direction = "reverse"
active = [["0s", "8s"], ["12s", "20s"]]
[[flows]]
kind = "tcp"
controller = "cubic"
"#,
    );
    let a = run(&sc, None, &mut |_| {}).unwrap();
    let b = run(&sc, None, &mut |_| {}).unwrap();
    for i in 0..3 {
        assert_eq!(a.flows[i].packets, b.flows[i].packets, "flow {i} packets");
        assert_eq!(a.flows[i].frames, b.flows[i].frames, "flow {i} frames");
    }
    assert_eq!(a.summary.to_json(), b.summary.to_json());
    let s = &a.summary.flows[0];
    assert!(
        s.retransmissions > 0 && s.fec_packets > 0,
        "recovery was exercised"
    );
    let c = run(&sc, Some(8), &mut |_| {}).unwrap();
    assert_ne!(
        a.flows[0].packets, c.flows[0].packets,
        "another seed differs"
    );
}
