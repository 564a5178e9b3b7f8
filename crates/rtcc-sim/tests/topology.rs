//! Paths of several hops (`[[path.hops]]`, RFC 8867 §6.3's parking lot): per-hop conservation,
//! each link's throughput against its capacity, delays that add up, validation, determinism,
//! and a one-hop path that is exactly the one link pair it replaces.

use common::{run_quiet, scenario, simulate};
use rtcc_sim::run::{HopSummary, LinkSummary};
use rtcc_sim::{RunResult, Scenario};
use std::path::Path;

use crate::common;

fn hops(r: &RunResult) -> &[HopSummary] {
    r.summary
        .hops
        .as_deref()
        .expect("a multi-hop run has a hop section")
}

/// arrived = departed + dropped + still held, on every link.
fn assert_each_link_conserves(r: &RunResult) {
    for h in hops(r) {
        for (dir, l) in [("forward", &h.forward), ("reverse", &h.reverse)] {
            let c = &l.counters;
            assert_eq!(
                c.arrived_packets,
                c.departed_packets + c.dropped_packets + c.queued_at_end_packets,
                "hop {} {dir}: {c:?}",
                h.name
            );
            assert!(c.lost_packets <= c.departed_packets, "{c:?}");
        }
    }
}

/// What leaves a link and is not lost or still on the wire.
fn passed_on(l: &LinkSummary) -> u64 {
    let c = &l.counters;
    c.departed_packets - c.lost_packets - c.propagating_at_end_packets
}

fn mbps(bps: f64) -> f64 {
    bps / 1e6
}

/// A long flow over `access` then `core`, a cross flow over `core` only; `core_reverse` adds
/// fields to the core's reverse link.
fn parking_lot(access: &str, core: &str, long: &str, cross: &str, core_reverse: &str) -> Scenario {
    scenario(&format!(
        r#"
name = "parking-lot"
duration = "30s"
seed = 3
[[path.hops]]
name = "access"
forward = {{ capacity = "{access}", delay = "10ms", queue = "100ms" }}
reverse = {{ delay = "10ms" }}
[[path.hops]]
name = "core"
forward = {{ capacity = "{core}", delay = "15ms", queue = "100ms" }}
reverse = {{ delay = "15ms"{core_reverse} }}

[[flows]]
name = "long"
{long}

[[flows]]
name = "cross"
hops = ["core"]
{cross}
"#
    ))
}

#[test]
fn constant_rates_saturate_the_first_hop_and_pass_the_second() {
    // 4 Mbit/s into a 3 Mbit/s access link: it leaves at 3 Mbit/s, which with the 1 Mbit/s
    // cross flow loads the 5 Mbit/s core link to 4 Mbit/s, without a drop there.
    let sc = parking_lot(
        "3Mbps",
        "5Mbps",
        "kind = \"cbr\"\nrate = \"4Mbps\"",
        "kind = \"cbr\"\nrate = \"1Mbps\"",
        "",
    );
    let r = run_quiet(&sc);
    assert_each_link_conserves(&r);
    let [access, core] = hops(&r) else {
        panic!("two hops")
    };
    let (long, cross) = (&r.summary.flows[0], &r.summary.flows[1]);
    assert!(
        (mbps(long.throughput_bps) - 3.0).abs() < 0.05,
        "the long flow gets its tightest hop: {}",
        long.throughput_bps
    );
    assert!(
        (mbps(cross.throughput_bps) - 1.0).abs() < 0.02,
        "{}",
        cross.throughput_bps
    );
    assert!(access.forward.utilization.unwrap() > 0.99, "{access:?}");
    let core_use = core.forward.utilization.unwrap();
    assert!((core_use - 0.8).abs() < 0.01, "{core_use}");
    assert!(access.forward.counters.dropped_packets > 0);
    assert_eq!(core.forward.counters.dropped_packets, 0);
    // Every packet the access link passes on reaches the core link, beside the cross flow's.
    assert_eq!(
        core.forward.counters.arrived_packets,
        passed_on(&access.forward) + cross.packets_sent as u64
    );
    // The long flow's utilisation is against its tightest hop (3 Mbit/s), the cross flow's
    // against the core link alone.
    assert!(long.utilization.unwrap() > 0.99, "{:?}", long.utilization);
    assert!((cross.utilization.unwrap() - 0.2).abs() < 0.01);
    // Constant-rate flows send no feedback: the reverse links stay idle.
    assert_eq!(core.reverse.counters.arrived_packets, 0);
    assert_eq!(r.summary.total.capacity_bps, Some(3e6), "the tightest hop");
    assert_eq!(
        r.summary.total.utilization, None,
        "no one link to measure against"
    );
}

#[test]
fn tcp_is_limited_by_its_tightest_hop() {
    // A 4 Mbit/s access link before a 6 Mbit/s core with 1 Mbit/s of constant-rate cross
    // traffic: the access link is the long flow's bottleneck, so it fills and drops there, and
    // the core carries 5 Mbit/s without a drop.
    let sc = parking_lot(
        "4Mbps",
        "6Mbps",
        "kind = \"tcp\"\ncontroller = \"cubic\"",
        "kind = \"cbr\"\nrate = \"1Mbps\"",
        "",
    );
    let r = run_quiet(&sc);
    assert_each_link_conserves(&r);
    let [access, core] = hops(&r) else {
        panic!("two hops")
    };
    let long = common::throughput_bps(&r, 0, 5.0, 30.0);
    assert!((3.8..=4.05).contains(&mbps(long)), "{long}");
    assert!(access.forward.utilization.unwrap() > 0.95, "{access:?}");
    assert!(access.forward.counters.dropped_packets > 0, "{access:?}");
    assert_eq!(core.forward.counters.dropped_packets, 0, "{core:?}");
    let core_use = core.forward.utilization.unwrap();
    assert!((0.78..=0.84).contains(&core_use), "{core_use}");
    // ACKs come back through the core's reverse link first, then the access link's: every one
    // the core passes on (the cross flow sends none) reaches the access link.
    assert_eq!(
        access.reverse.counters.arrived_packets,
        passed_on(&core.reverse)
    );
    assert_eq!(
        core.reverse.counters.arrived_packets,
        r.flows[0].feedback_packets
    );

    // A 6 Mbit/s access link before a 4 Mbit/s core shared with a TCP cross flow: now the core
    // is the bottleneck of both, it runs full and drops, and the access link does not.
    let sc = parking_lot(
        "6Mbps",
        "4Mbps",
        "kind = \"tcp\"\ncontroller = \"cubic\"",
        "kind = \"tcp\"\ncontroller = \"cubic\"",
        "",
    );
    let r = run_quiet(&sc);
    assert_each_link_conserves(&r);
    let [access, core] = hops(&r) else {
        panic!("two hops")
    };
    let both = common::throughput_bps(&r, 0, 5.0, 30.0) + common::throughput_bps(&r, 1, 5.0, 30.0);
    assert!((3.8..=4.05).contains(&mbps(both)), "{both}");
    assert!(core.forward.utilization.unwrap() > 0.95, "{core:?}");
    assert!(core.forward.counters.dropped_packets > 0, "{core:?}");
    assert_eq!(access.forward.counters.dropped_packets, 0, "{access:?}");
    assert!(access.forward.utilization.unwrap() < 0.67, "{access:?}");
}

#[test]
fn ce_marks_are_counted_at_the_hop_that_made_them() {
    // The access queue marks above 20 ms of sojourn; the core does not mark. The flow stops
    // 2 s before the end, so every marked packet has arrived by then (nothing is dropped after
    // the access link, which marks instead of dropping below its limit).
    let r = simulate(
        r#"
duration = "20s"
[[path.hops]]
name = "access"
forward = { capacity = "4Mbps", delay = "10ms", queue = { kind = "droptail", limit = "100ms", mark_threshold = "20ms" } }
[[path.hops]]
name = "core"
forward = { capacity = "20Mbps", delay = "15ms", queue = "100ms" }
[[flows]]
name = "long"
kind = "tcp"
controller = "cubic"
ecn = true
stop = "18s"
"#,
    );
    assert_each_link_conserves(&r);
    let [access, core] = hops(&r) else {
        panic!("two hops")
    };
    assert!(access.forward.counters.ce_marked > 0, "{access:?}");
    assert_eq!(core.forward.counters.ce_marked, 0, "{core:?}");
    assert_eq!(core.forward.counters.dropped_packets, 0, "{core:?}");
    assert_eq!(
        r.summary.flows[0].ce_marked,
        Some(access.forward.counters.ce_marked)
    );
}

#[test]
fn a_packets_one_way_delay_is_the_sum_of_its_hops() {
    // One 1000-byte packet (a constant rate of one packet per second, run for half a second)
    // over 1 Mbit/s + 10 ms (hop a) and 2 Mbit/s + 15 ms (hop b), with 5 ms of extra delay: a
    // forward flow crosses a then b, a reverse flow b's reverse link then a's.
    for direction in ["forward", "reverse"] {
        let r = simulate(&format!(
            r#"
duration = "500ms"
[[path.hops]]
name = "a"
forward = {{ capacity = "1Mbps", delay = "10ms" }}
reverse = {{ capacity = "1Mbps", delay = "10ms" }}
[[path.hops]]
name = "b"
forward = {{ capacity = "2Mbps", delay = "15ms" }}
reverse = {{ capacity = "2Mbps", delay = "15ms" }}
[[flows]]
kind = "cbr"
rate = "8kbps"
packet_size = "1000B"
extra_delay = "5ms"
direction = "{direction}"
"#
        ));
        let [p] = r.flows[0].packets.as_slice() else {
            panic!("one packet, got {}", r.flows[0].packets.len())
        };
        let bits = p.size as f64 * 8.0;
        let (on_a, on_b) = (bits / 1e6 * 1e3, bits / 2e6 * 1e3);
        let one_way = (p.recv.unwrap() - p.send).as_millis_f64();
        assert!(
            (one_way - (10.0 + 15.0 + 5.0 + on_a + on_b)).abs() < 1e-6,
            "{direction}: {one_way} ms"
        );
        // enqueue is the first link's, depart the last link's; the queuing delay leaves out
        // the propagation between them.
        assert_eq!(p.enqueue, p.send);
        let depart = (p.depart.unwrap() - p.send).as_millis_f64();
        let between = if direction == "forward" { 10.0 } else { 15.0 };
        assert!(
            (depart - (on_a + on_b + between)).abs() < 1e-6,
            "{direction}: {depart}"
        );
        let queuing = r.summary.flows[0].queuing_delay_ms.p50.unwrap();
        assert!(
            (queuing - (on_a + on_b)).abs() < 1e-6,
            "{direction}: {queuing}"
        );
    }
}

#[test]
fn feedback_returns_through_the_same_hops_in_reverse_order_and_reverse_flows_go_backwards() {
    // A flow over hops b and c of a, b, c: its data crosses b's and c's forward links, its
    // feedback c's then b's reverse links; a reverse flow over a and b sends its data over b's
    // then a's reverse links.
    let r = simulate(
        r#"
duration = "10s"
[[path.hops]]
name = "a"
forward = { capacity = "10Mbps", delay = "5ms" }
reverse = { capacity = "10Mbps", delay = "5ms" }
[[path.hops]]
name = "b"
forward = { capacity = "10Mbps", delay = "5ms" }
reverse = { capacity = "10Mbps", delay = "5ms" }
[[path.hops]]
name = "c"
forward = { capacity = "10Mbps", delay = "5ms" }
reverse = { capacity = "10Mbps", delay = "5ms" }
[[flows]]
name = "fwd"
controller = "gcc"
hops = ["b", "c"]
stop = "8s"
[[flows]]
name = "rev"
kind = "cbr"
rate = "1Mbps"
direction = "reverse"
hops = ["a", "b"]
stop = "8s"
"#,
    );
    assert_each_link_conserves(&r);
    let [a, b, c] = hops(&r) else {
        panic!("three hops")
    };
    let (fwd, rev) = (&r.flows[0], &r.flows[1]);
    let sent = |i: usize| r.summary.flows[i].packets_sent as u64;
    // The senders stopped 2 s before the end, so their data has drained; the video receiver
    // still sends feedback, some of it on its way when the run ends.
    assert_eq!(a.forward.counters.arrived_packets, 0);
    assert_eq!(b.forward.counters.arrived_packets, sent(0));
    assert_eq!(c.forward.counters.arrived_packets, sent(0));
    assert_eq!(c.reverse.counters.arrived_packets, fwd.feedback_packets);
    assert_eq!(
        b.reverse.counters.arrived_packets,
        passed_on(&c.reverse) + sent(1)
    );
    assert_eq!(a.reverse.counters.arrived_packets, sent(1));
    assert_eq!(rev.feedback_packets, 0);
    assert!(fwd.feedback_packets > 0);
}

#[test]
fn a_hop_of_a_path_keeps_the_seeds_and_results_of_the_same_link_pair() {
    let links =
        r#"{ capacity = "4Mbps", delay = "20ms", queue = "60ms", loss = 0.01, jitter = "2ms" }"#;
    let back = r#"{ capacity = "2Mbps", delay = "20ms", loss = 0.02 }"#;
    let flows = r#"
[[flows]]
controller = "gcc"
[[flows]]
kind = "tcp"
controller = "cubic"
start = "2s"
[[flows]]
kind = "cbr"
rate = "300kbps"
direction = "reverse"
"#;
    let pair = simulate(&format!(
        "name = \"x\"\nduration = \"15s\"\n[path]\nforward = {links}\nreverse = {back}\n{flows}"
    ));
    let one_hop = simulate(&format!(
        "name = \"x\"\nduration = \"15s\"\n[[path.hops]]\nname = \"only\"\nforward = {links}\nreverse = {back}\n{flows}"
    ));
    assert!(pair.summary.hops.is_none() && one_hop.summary.hops.is_none());
    assert_eq!(pair.summary.to_json(), one_hop.summary.to_json());
    assert_eq!(pair.capacity, one_hop.capacity);
}

#[test]
fn the_same_seed_gives_the_same_multi_hop_run_and_another_seed_another() {
    // The core's reverse link loses 2 % of the feedback, drawn from the seed.
    let sc = parking_lot(
        "4Mbps",
        "6Mbps",
        "controller = \"gcc\"",
        "kind = \"tcp\"\ncontroller = \"cubic\"",
        ", loss = 0.02",
    );
    let run = |seed| rtcc_sim::run(&sc, Some(seed), &mut |_| {}).unwrap();
    let first = run(5);
    assert_each_link_conserves(&first);
    assert!(hops(&first)[1].reverse.counters.lost_packets > 0);
    assert_eq!(first.summary.to_json(), run(5).summary.to_json());
    assert_ne!(first.summary.to_json(), run(6).summary.to_json());
}

#[test]
fn the_capacity_log_has_the_tightest_hop_and_each_hop() {
    let sc = parking_lot(
        "3Mbps",
        "5Mbps",
        "kind = \"cbr\"\nrate = \"1Mbps\"",
        "kind = \"cbr\"\nrate = \"1Mbps\"",
        "",
    );
    let r = run_quiet(&sc);
    assert_eq!(r.capacity.len(), 300);
    assert!(r.capacity.iter().all(|&(_, bps)| (bps - 3e6).abs() < 1e-3));
    let names: Vec<&str> = r.hop_capacity.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["access", "core"]);
    assert!(r.hop_capacity[1]
        .1
        .iter()
        .all(|&(_, bps)| (bps - 5e6).abs() < 1e-3));
    let table = rtcc_sim::tables::table(&r, rtcc_core::Time(sc.duration.0), "capacity").unwrap();
    let columns: Vec<String> = table
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    assert_eq!(columns, ["time_ns", "bps", "bps.access", "bps.core"]);
}

#[test]
fn the_path_capacity_of_a_multi_hop_flow_follows_its_tightest_hop_over_time() {
    // The core drops from 4 to 1 Mbit/s at 10 s behind a 2 Mbit/s access link: an oracle
    // follows 2 then 1 Mbit/s.
    let r = simulate(
        r#"
duration = "20s"
[[path.hops]]
name = "access"
forward = { capacity = "2Mbps", delay = "10ms", queue = "300ms" }
[[path.hops]]
name = "core"
forward = { schedule = [["0s", "4Mbps"], ["10s", "1Mbps"]], delay = "20ms", queue = "300ms" }
[[flows]]
controller = "oracle"
"#,
    );
    let rate = |from: f64, to: f64| common::throughput_bps(&r, 0, from, to);
    assert!(
        (mbps(rate(3.0, 9.0)) - 2.0).abs() < 0.25,
        "{}",
        rate(3.0, 9.0)
    );
    assert!(
        (mbps(rate(13.0, 19.0)) - 1.0).abs() < 0.15,
        "{}",
        rate(13.0, 19.0)
    );
    let f = &r.summary.flows[0];
    assert!(f.utilization.unwrap() > 0.8, "{:?}", f.utilization);
    assert_eq!(r.summary.total.capacity_bps, Some(1.5e6));
}

#[test]
fn a_reverse_flows_controller_is_told_the_capacity_of_the_links_its_data_crosses() {
    // 1 Mbit/s forward, 3 Mbit/s reverse: an oracle sending B→A follows the reverse link's 3.
    let r = simulate(
        r#"
duration = "10s"
[path.forward]
capacity = "1Mbps"
delay = "20ms"
[path.reverse]
capacity = "3Mbps"
delay = "20ms"
queue = "300ms"
[[flows]]
controller = "oracle"
direction = "reverse"
"#,
    );
    let rate = common::throughput_bps(&r, 0, 3.0, 9.0);
    assert!((mbps(rate) - 3.0).abs() < 0.3, "{rate}");
}

fn error(toml: &str) -> (String, String) {
    let e = Scenario::from_toml_str(toml, Path::new("."), "t", None).unwrap_err();
    (e.field, e.message)
}

#[test]
fn bad_paths_and_flow_hops_are_errors_that_name_the_field() {
    let hop = |name: &str| {
        format!("[[path.hops]]\nname = \"{name}\"\nforward = {{ capacity = \"1Mbps\" }}\n")
    };
    let flow = |extra: &str| format!("[[flows]]\ncontroller = \"gcc\"\n{extra}\n");
    let two = format!("duration = \"1s\"\n{}{}", hop("a"), hop("b"));
    let cases: Vec<(String, &str, &str)> = vec![
        (
            format!("duration = \"1s\"\n[path.forward]\ncapacity = \"1Mbps\"\n{}{}", hop("a"), flow("")),
            "path.hops",
            "not both",
        ),
        (
            format!("{two}[path.reverse]\ndelay = \"1ms\"\n{}", flow("")),
            "path.reverse",
            "path.hops[i].reverse",
        ),
        (
            format!("duration = \"1s\"\n[path]\nhops = []\n{}", flow("")),
            "path.hops",
            "1 to 1024 hops",
        ),
        (format!("duration = \"1s\"\n[path]\n{}", flow("")), "path", "[[path.hops]]"),
        (
            format!("duration = \"1s\"\n{}{}", hop(""), flow("")),
            "path.hops[0].name",
            "must not be empty",
        ),
        (
            format!("duration = \"1s\"\n{}{}{}", hop("a"), hop("a"), flow("")),
            "path.hops[1].name",
            "unique",
        ),
        (
            format!(
                "duration = \"1s\"\n{}[[path.hops]]\nname = \"b\"\nforward = {{ capacity = \"-1Mbps\" }}\n{}",
                hop("a"),
                flow("")
            ),
            "path.hops[1].forward.capacity",
            "",
        ),
        (
            format!(
                "duration = \"1s\"\n{}[[path.hops]]\nname = \"b\"\nforward = {{ delay = \"1ms\" }}\n{}",
                hop("a"),
                flow("")
            ),
            "path.hops[1].forward",
            "needs a capacity",
        ),
        (
            format!(
                "duration = \"1s\"\n{}[[path.hops]]\nname = \"b\"\nforward = {{ capacity = \"1Mbps\" }}\nreverse = {{ queue = \"5 apples\" }}\n{}",
                hop("a"),
                flow("")
            ),
            "path.hops[1].reverse.queue",
            "",
        ),
        (format!("{two}{}", flow("hops = [\"a\", \"z\"]")), "flows[0].hops[1]", "unknown hop \"z\""),
        (format!("{two}{}", flow("hops = [\"b\", \"a\"]")), "flows[0].hops", "contiguous"),
        (format!("{two}{}", flow("hops = []")), "flows[0].hops", "at least one hop"),
        (
            format!("duration = \"1s\"\n{}{}{}{}", hop("a"), hop("b"), hop("c"), flow("hops = [\"a\", \"c\"]")),
            "flows[0].hops",
            "contiguous",
        ),
        (
            format!("{two}{}", flow("hops = [\"a\", \"a\"]")),
            "flows[0].hops",
            "contiguous",
        ),
        (
            format!("duration = \"1s\"\n[path.forward]\ncapacity = \"1Mbps\"\n{}", flow("hops = [\"path\"]")),
            "flows[0].hops",
            "one link pair",
        ),
    ];
    for (toml, field, words) in cases {
        let (f, m) = error(&toml);
        assert_eq!(f, field, "{toml}\n→ {m}");
        assert!(m.contains(words), "{field}: {m:?} should say {words:?}");
    }
}

#[test]
fn the_live_transport_refuses_a_path_of_several_hops() {
    let sc = parking_lot(
        "1Mbps",
        "2Mbps",
        "controller = \"gcc\"",
        "controller = \"gcc\"",
        "",
    );
    let e = sc.single_hop("the live transport").unwrap_err();
    assert!(e.contains("2 hops") && e.contains("access, core"), "{e}");
    let one = scenario("duration = \"1s\"\n[path.forward]\ncapacity = \"1Mbps\"\n[[flows]]\ncontroller = \"gcc\"\n");
    assert!(one.single_hop("the live transport").is_ok());
}
