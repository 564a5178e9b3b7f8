//! L4S end to end: TCP Prague (ECT(1), per-packet marks) beside classic Cubic in a DualPI2
//! queue (RFC 9332), the same sender in a classic ECN queue, and the configuration's rules.

use crate::common;

use common::simulate;
use rtcc_sim::RunResult;

/// 20 Mbit/s, 20 ms base RTT, `queue` in front; the flows given as TOML tables.
fn scenario(queue: &str, flows: &str, seed: u64) -> String {
    format!(
        "duration = \"40s\"\nseed = {seed}\n[path.forward]\ncapacity = \"20Mbps\"\n\
         delay = \"10ms\"\nqueue = {queue}\n{flows}"
    )
}

fn run(queue: &str, flows: &str, seed: u64) -> RunResult {
    simulate(&scenario(queue, flows, seed))
}

const DUALPI2: &str = r#"{ kind = "dualpi2" }"#;
const PRAGUE: &str = "[[flows]]\nname = \"prague\"\nkind = \"tcp\"\ncontroller = \"prague\"\n";
const CUBIC: &str = "[[flows]]\nname = \"cubic\"\nkind = \"tcp\"\ncontroller = \"cubic\"\n";
const MBPS: f64 = 1e6;

#[test]
fn prague_keeps_its_queue_under_2ms_beside_cubic_and_both_get_a_share() {
    for seed in [1, 2] {
        let r = run(DUALPI2, &format!("{PRAGUE}{CUBIC}"), seed);
        let (p, c) = (&r.summary.flows[0], &r.summary.flows[1]);
        eprintln!(
            "seed {seed}: prague {:.2} Mbit/s, queuing P50 {:?} P99 {:?} ms; cubic {:.2} Mbit/s, \
             P50 {:?} ms",
            p.throughput_bps / MBPS,
            p.queuing_delay_ms.p50,
            p.queuing_delay_ms.p99,
            c.throughput_bps / MBPS,
            c.queuing_delay_ms.p50
        );
        // RFC 9332 §1: "queuing delay ... sub-millisecond on average" for L4S, with the
        // classic queue at its 15 ms target. Measured: P99 1.7 ms, P50 1.0 ms (the step).
        let p99 = p.queuing_delay_ms.p99.unwrap();
        assert!(p99 < 2.0, "seed {seed}: Prague's queuing P99 {p99} ms");
        let c50 = c.queuing_delay_ms.p50.unwrap();
        assert!(
            (10.0..=20.0).contains(&c50),
            "seed {seed}: Cubic's median queue {c50} ms, PI² target 15 ms"
        );
        // The coupling (k = 2) is meant to balance a scalable flow with Reno (RFC 9332 §2.1).
        // Measured: Prague 7.6 and 8.5 Mbit/s, Cubic 12.3 and 11.5 (seeds 1, 2). Two things
        // tilt it: Prague also gets the L queue's step marks, which Linux applies on top of
        // the coupled ones (with the step off, Prague and Reno split 9.8 / 10.1), and Cubic is
        // more aggressive than Reno (Reno beside Prague: 11.3). Each gets at least 30 %.
        for f in [p, c] {
            let share = f.throughput_bps / (20.0 * MBPS);
            assert!(share > 0.3, "seed {seed}: {} got {share:.2}", f.name);
        }
        let total = (p.throughput_bps + c.throughput_bps) / (20.0 * MBPS);
        assert!(total > 0.95, "seed {seed}: utilisation {total:.3}");
        assert_eq!(p.packets_lost, 0, "an L4S flow is marked, not dropped");
        assert!(p.ce_marked.unwrap() > 500, "{:?}", p.ce_marked);
        assert_eq!(c.ce_marked, None, "Cubic does not use ECN here");
        assert!(
            c.packets_lost > 0,
            "the classic queue drops Not-ECT packets"
        );
    }
}

#[test]
fn prague_alone_fills_the_link_on_a_millisecond_queue() {
    let r = run(DUALPI2, PRAGUE, 1);
    let f = &r.summary.flows[0];
    // Measured: 19.7 Mbit/s, P50 1.2 ms, P99 2.2 ms, no loss.
    assert!(
        f.throughput_bps > 0.95 * 20.0 * MBPS,
        "{}",
        f.throughput_bps
    );
    assert!(f.queuing_delay_ms.p50.unwrap() <= 1.5);
    assert_eq!(f.packets_lost, 0);
    // Deterministic: the same scenario and seed give the same summary.
    let again = run(DUALPI2, PRAGUE, 1);
    assert_eq!(r.summary.to_json(), again.summary.to_json());
}

#[test]
fn a_classic_ecn_queue_marks_ect1_like_ect0() {
    // RFC 3168 §5 / RFC 9331 §5.4: a classic AQM treats ECT(1) as ECT(0). CoDel with ECN marks
    // Prague's packets where it would drop them, and Prague lives on those marks.
    let r = run(r#"{ kind = "codel", ecn = true }"#, PRAGUE, 1);
    let f = &r.summary.flows[0];
    assert_eq!(f.packets_lost, 0);
    assert!(f.ce_marked.unwrap() > 10, "{:?}", f.ce_marked);
    assert!(f.throughput_bps > 0.9 * 20.0 * MBPS, "{}", f.throughput_bps);
}

#[test]
fn ecn_l4s_goes_with_a_scalable_controller() {
    let err = |flows: &str| {
        rtcc_sim::Scenario::from_toml_str(
            &scenario(DUALPI2, flows, 1),
            std::path::Path::new("."),
            "test",
            None,
        )
        .unwrap_err()
        .to_string()
    };
    let e = err(&format!("{PRAGUE}ecn = true\n"));
    assert!(
        e.contains("flows[0].ecn") && e.contains("prague is a scalable") && e.contains("\"l4s\""),
        "{e}"
    );
    let e = err(&format!("{CUBIC}ecn = \"l4s\"\n"));
    assert!(
        e.contains("flows[0].ecn") && e.contains("cubic reacts to RFC 3168"),
        "{e}"
    );
    let e = err(&format!("{CUBIC}ecn = \"L4S\"\n"));
    assert!(e.contains("\"l4s\" (ECT(1))"), "{e}");
    // A video controller that ignores CE would fill the L4S queue: gcc may not send ECT(1).
    let e = err("[[flows]]\nname = \"v\"\ncontroller = \"gcc\"\necn = \"l4s\"\n");
    assert!(
        e.contains("flows[0].ecn") && e.contains("gcc does not") && e.contains("nada, prague"),
        "{e}"
    );
}

#[test]
fn an_l4s_nada_call_rides_the_low_latency_queue_beside_cubic() {
    // The example experiments/basics/l4s-dualpi2.toml: Prague, Cubic, and a NADA call with
    // ECT(1) from 10 s. Measured: the call 8.0 Mbit/s at a 1.5 ms queuing P95, frame latency
    // P95 44 ms; Prague 4.2 Mbit/s at 1.6 ms; Cubic 9.7 Mbit/s at 25.1 ms.
    let toml = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../experiments/basics/l4s-dualpi2.toml"
    ))
    .unwrap();
    let r = simulate(&toml);
    let by = |n: &str| r.summary.flows.iter().find(|f| f.name == n).unwrap();
    let (video, prague, cubic) = (by("video"), by("prague"), by("cubic"));
    for f in [video, prague] {
        let q = f.queuing_delay_ms.p95.unwrap();
        assert!(q < 2.0, "{}: queuing P95 {q} ms in the L4S queue", f.name);
        assert_eq!(f.packets_lost, 0, "{}", f.name);
    }
    assert!(
        cubic.queuing_delay_ms.p95.unwrap() > 10.0,
        "Cubic's packets wait in the classic queue"
    );
    // NADA's share: 30 of 40 s active, about a third of the link while it is.
    assert!(video.throughput_bps > 5e6, "{}", video.throughput_bps);
}
