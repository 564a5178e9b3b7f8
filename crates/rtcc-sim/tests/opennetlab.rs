//! OpenNetLab traces as whole links: each pattern's random loss falls in its own segment at its
//! rate, each pattern's rtt is the propagation delay (half each way), a delay that drops keeps
//! the packets in order, runs are reproducible, and a scenario that also sets the loss or delay
//! the trace gives is refused naming both.

use crate::common::{repo_dir, run_quiet, scenario_in};
use rtcc_core::metrics::PacketRecord;
use rtcc_sim::Scenario;
use std::path::Path;

/// `traces/opennetlab-loss-rtt.json` (10 Mbit/s; 5 % loss in [10 s, 20 s); rtt 40 ms, but
/// 200 ms in [20 s, 30 s)) under a fixed-rate flow well below the capacity, so no queue forms
/// and every loss is the trace's.
fn over_the_trace(seed: u64, rate: &str) -> Scenario {
    scenario_in(
        &format!(
            r#"
duration = "40s"
seed = {seed}
[path.forward]
trace = "opennetlab-loss-rtt.json"
queue = "100ms"
[[flows]]
controller = "fixed"
params = {{ rate = "{rate}" }}
"#
        ),
        &repo_dir("traces"),
    )
}

fn in_window(p: &PacketRecord, from_s: f64, to_s: f64) -> bool {
    p.depart
        .is_some_and(|t| (from_s..to_s).contains(&t.as_secs_f64()))
}

#[test]
fn the_loss_falls_in_its_segment_at_its_rate_and_the_rtt_shows_in_the_delay() {
    let r = run_quiet(&over_the_trace(1, "4Mbps"));
    let packets = &r.flows[0].packets;
    assert!(
        packets.iter().all(|p| p.depart.is_some() || !p.dropped),
        "no queue drops: every loss is the trace's"
    );
    let lost = |from, to| {
        let seg: Vec<&PacketRecord> = packets.iter().filter(|p| in_window(p, from, to)).collect();
        let lost = seg.iter().filter(|p| p.dropped).count();
        (lost, seg.len())
    };
    for (from, to) in [(0.0, 10.0), (20.0, 40.0)] {
        assert_eq!(lost(from, to).0, 0, "no loss in [{from}, {to}) s");
    }
    // Each packet leaving the link in [10 s, 20 s) is lost independently with p = 0.05: the
    // count is binomial, σ = √(p(1 − p)/n) of the rate (n ≈ 4,000 packets: σ ≈ 0.0034). The run
    // is deterministic (fixed seed); 4σ is the tolerance a change of seed would exceed with
    // probability 6 × 10⁻⁵.
    let (k, n) = lost(10.0, 20.0);
    let rate = k as f64 / n as f64;
    let sigma = (0.05 * 0.95 / n as f64).sqrt();
    assert!(n > 3000, "{n} packets in the lossy segment");
    assert!(
        (rate - 0.05).abs() < 4.0 * sigma,
        "loss rate {rate} ({k} of {n}), expected 0.05 ± {}",
        4.0 * sigma
    );

    // Propagation (receive − leave the link): rtt / 2 of the pattern in force.
    let propagation_ms = |from, to| -> Vec<f64> {
        packets
            .iter()
            .filter(|p| in_window(p, from, to) && p.recv.is_some())
            .map(|p| (p.recv.unwrap() - p.depart.unwrap()).as_millis_f64())
            .collect()
    };
    assert!(propagation_ms(0.0, 20.0).iter().all(|&d| d == 20.0));
    assert!(propagation_ms(20.0, 30.0).iter().all(|&d| d == 100.0));
    // After the drop back to 20 ms the packets bunch behind the last one sent at 100 ms (none
    // arrives before it), then take 20 ms again.
    let after = propagation_ms(30.0, 40.0);
    assert!(after.iter().all(|&d| (20.0..=100.0).contains(&d)));
    assert!(
        after.iter().skip(100).all(|&d| d == 20.0),
        "bunching lasts < 80 ms"
    );
    let arrivals: Vec<_> = packets.iter().filter_map(|p| p.recv).collect();
    assert!(
        arrivals.windows(2).all(|w| w[0] <= w[1]),
        "packets arrive in the order they were sent"
    );
    // What the receiver measures: one-way delay (send to receive) follows the rtt too.
    let one_way_median = |from: f64, to: f64| {
        let mut d: Vec<f64> = packets
            .iter()
            .filter(|p| in_window(p, from, to) && p.recv.is_some())
            .map(|p| (p.recv.unwrap() - p.send).as_millis_f64())
            .collect();
        d.sort_by(f64::total_cmp);
        d[d.len() / 2]
    };
    let (before, during) = (one_way_median(1.0, 10.0), one_way_median(21.0, 30.0));
    assert!(
        (20.0..25.0).contains(&before) && (100.0..105.0).contains(&during),
        "median one-way delay {before} ms at rtt 40, {during} ms at rtt 200"
    );
}

#[test]
fn the_same_seed_gives_the_same_losses() {
    let fates = |seed| -> Vec<(Option<rtcc_core::Time>, bool)> {
        run_quiet(&over_the_trace(seed, "2Mbps")).flows[0]
            .packets
            .iter()
            .map(|p| (p.recv, p.dropped))
            .collect()
    };
    let a = fates(7);
    assert!(a.iter().any(|f| f.1), "the trace loses packets");
    assert_eq!(a, fates(7));
    assert_ne!(a, fates(8), "another seed, other losses");
}

#[test]
fn the_reverse_link_follows_the_rtt_unless_given_its_own_delay() {
    let sc = over_the_trace(1, "1Mbps");
    let steps = |l: &rtcc_sim::Scenario| {
        let h = &l.hops[0];
        (h.forward.delay_steps.clone(), h.reverse.delay_steps.clone())
    };
    let (fwd, rev) = steps(&sc);
    assert_eq!(fwd, rev, "half the rtt each way");
    assert_eq!(
        sc.hops[0].forward.delay.as_millis_f64(),
        20.0,
        "the base delay"
    );
    let with_reverse = |reverse: &str| {
        Scenario::from_toml_str(
            &format!(
                r#"
duration = "40s"
[path.forward]
trace = "opennetlab-loss-rtt.json"
[path.reverse]
{reverse}
[[flows]]
controller = "fixed"
params = {{ rate = "1Mbps" }}
"#
            ),
            &repo_dir("traces"),
            "test",
            None,
        )
    };
    let sc = with_reverse("capacity = \"1Mbps\"").unwrap();
    assert!(sc.hops[0].reverse.delay_steps.is_some());
    let sc = with_reverse("delay = \"5ms\"").unwrap();
    assert_eq!(sc.hops[0].reverse.delay_steps, None);
    assert_eq!(sc.hops[0].reverse.delay.as_millis_f64(), 5.0);
}

#[test]
fn a_scenario_that_also_sets_what_the_trace_gives_is_refused_naming_both() {
    let error = |link: &str| {
        let text = format!(
            "duration = \"40s\"\n[path.forward]\ntrace = \"opennetlab-loss-rtt.json\"\n{link}\n[[flows]]\ncontroller = \"fixed\"\nparams = {{ rate = \"1Mbps\" }}\n"
        );
        Scenario::from_toml_str(&text, &repo_dir("traces"), "test", None).unwrap_err()
    };
    let e = error("delay = \"20ms\"");
    assert_eq!(e.field, "path.forward.delay");
    assert!(
        e.message.contains("opennetlab-loss-rtt.json")
            && e.message.contains("uplink.trace_pattern[0].rtt = 40 ms"),
        "{e}"
    );
    let e = error("loss = 0.01");
    assert_eq!(e.field, "path.forward.loss");
    assert!(
        e.message.contains("uplink.trace_pattern[1].loss = 0.05"),
        "{e}"
    );
    let e = error("jitter = { model = \"rbpdv\" }");
    assert_eq!(e.field, "path.forward.jitter");
    assert!(e.message.contains("nr-rbpdv"), "{e}");
    // A jitter that keeps each flow's order goes with the trace's delay.
    assert!(Scenario::from_toml_str(
        "duration = \"40s\"\n[path.forward]\ntrace = \"opennetlab-loss-rtt.json\"\njitter = \"5ms\"\n[[flows]]\ncontroller = \"fixed\"\nparams = { rate = \"1Mbps\" }\n",
        &repo_dir("traces"),
        "test",
        None
    )
    .is_ok());
}

#[test]
fn a_malformed_trace_names_the_file_pattern_and_field() {
    let dir = std::env::temp_dir().join(format!("rtcc-onl-sim-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("bad.json"),
        r#"{"uplink": {"trace_pattern": [{"duration": 100, "capacity": 500, "loss": 5}]}}"#,
    )
    .unwrap();
    let e = Scenario::from_toml_str(
        "duration = \"40s\"\n[path.forward]\ntrace = \"bad.json\"\n[[flows]]\ncontroller = \"fixed\"\nparams = { rate = \"1Mbps\" }\n",
        Path::new(&dir),
        "test",
        None,
    )
    .unwrap_err();
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(e.field, "path.forward.trace");
    assert!(
        e.message.contains("bad.json")
            && e.message
                .contains("uplink.trace_pattern[0].loss: 5 is more than 1"),
        "{e}"
    );
}
