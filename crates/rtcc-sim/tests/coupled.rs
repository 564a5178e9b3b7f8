//! Coupled congestion control (RFC 8699's flow state exchange, `cc/coupled.rs`) in whole runs:
//! two gcc flows of one sender on a 3 Mbit/s bottleneck with priorities 2 and 1 get rates in a
//! ratio near 2, where the same flows uncoupled share about equally; the pair keeps the link
//! busy with a bounded queue; a group of one flow is gcc alone. The path has no jitter, so a
//! run does not depend on its seed. Run with `--nocapture` to see the measured values.
//!
//! Not asserted here, measured and reported in `docs/controllers.md`: with RFC 8868's jitter on
//! the path (std 5 ms), gcc's two initial probes (each measures the whole path) both enter the
//! aggregate, the over-use that follows cuts each flow to 0.85 × its own acknowledged rate (far
//! below the share the FSE had just given it), and the aggregate collapses and recovers slowly
//! (1.4 Mbit/s of 3 over 30–90 s); with `initial_probing = false` the same run keeps 2.8.

use rtcc_sim::RunResult;

use crate::common;

/// Two gcc flows from 0 s, each with the media range up to 2.5 Mbit/s (so neither is capped by
/// it at a 2 : 1 split of 3 Mbit/s: 2 and 1 Mbit/s), `coupling` appended to each flow's table.
fn pair(coupling: [&str; 2], seed: u64) -> String {
    let mut s = format!(
        r#"
duration = "90s"
seed = {seed}
[path.forward]
capacity = "3Mbps"
delay = "25ms"
queue = "300ms"
"#
    );
    for (i, c) in coupling.iter().enumerate() {
        s += &format!(
            r#"
[[flows]]
name = "f{i}"
controller = "gcc"
max_bitrate = "2.5Mbps"
{c}
"#
        );
    }
    s
}

/// P95 bottleneck sojourn (ms) of both flows' packets sent from 30 s on.
fn p95_queue_ms(r: &RunResult) -> f64 {
    let mut q: Vec<f64> = r
        .flows
        .iter()
        .flat_map(|f| &f.packets)
        .filter(|p| p.send.as_secs_f64() >= 30.0)
        .filter_map(|p| p.depart.map(|d| (d - p.enqueue).as_millis_f64()))
        .collect();
    q.sort_by(f64::total_cmp);
    q[q.len() * 95 / 100]
}

/// Each flow's received rate (bit/s) over 30–90 s: past the start-up, where the split has
/// settled.
fn rates(r: &RunResult) -> [f64; 2] {
    [0, 1].map(|i| common::throughput_bps(r, i, 30.0, 90.0))
}

#[test]
fn coupled_flows_split_the_bottleneck_by_priority_and_uncoupled_ones_do_not() {
    {
        let seed = 1;
        for alg in ["active", "conservative"] {
            let coupled = common::simulate(&pair(
                [
                    &format!(
                        r#"coupling = {{ group = "sender", priority = 2.0, algorithm = "{alg}" }}"#
                    ),
                    &format!(
                        r#"coupling = {{ group = "sender", priority = 1.0, algorithm = "{alg}" }}"#
                    ),
                ],
                seed,
            ));
            let [hi, lo] = rates(&coupled);
            let ratio = hi / lo;
            let total = hi + lo;
            let p95_queue = p95_queue_ms(&coupled);
            let alone = common::simulate(&pair(["", ""], seed));
            let [a, b] = rates(&alone);
            let alone_queue = p95_queue_ms(&alone);
            println!(
            "{alg} seed {seed}: coupled {:.2} / {:.2} Mbit/s (ratio {ratio:.3}, total {:.2}, P95 queue \
             {p95_queue:.0} ms); uncoupled {:.2} / {:.2} (ratio {:.3}, total {:.2}, P95 queue \
             {alone_queue:.0} ms)",
            hi / 1e6,
            lo / 1e6,
            total / 1e6,
            a / 1e6,
            b / 1e6,
            a / b,
            (a + b) / 1e6
        );
            // The FSE gives exactly 2 : 1 of its aggregate at each update; what arrives differs by
            // the time each flow's encoder and pacer take to follow a new rate and by the queue the
            // two share. ±10 % of the ratio is far tighter than what uncoupled flows show below.
            assert!((1.8..=2.2).contains(&ratio), "seed {seed}: ratio {ratio}");
            // Uncoupled, the same flows are near 1 : 1 (either may lead).
            assert!(
                (0.75..=1.33).contains(&(a / b)),
                "seed {seed}: uncoupled {}",
                a / b
            );
            // The coupled pair keeps the link busy (gcc alone settles at 85–95 % of a link) and its
            // queue bounded: at most the RMCAT suite's 100 ms P95 (`docs/rmcat.md`, queuing-delay),
            // far from the 300 ms drop-tail queue standing full.
            assert!(total >= 0.85 * 3e6, "{alg} seed {seed}: total {total}");
            assert!(
                p95_queue <= 100.0,
                "{alg} seed {seed}: P95 queue {p95_queue} ms"
            );
        }
    }
}

#[test]
fn a_group_of_one_is_its_inner_controller() {
    let one = |coupling: &str| {
        let toml = format!(
            r#"
duration = "40s"
[path.forward]
capacity = "2Mbps"
delay = "25ms"
queue = "300ms"
[[flows]]
controller = "gcc"
max_bitrate = "2.5Mbps"
{coupling}
"#
        );
        let r = common::simulate(&toml);
        r.summary.to_json()
    };
    // The FSE's aggregate is then the flow's own rate (S_CR = CC_R), so it never sets a rate
    // and the run is byte-identical.
    assert_eq!(
        one(r#"coupling = { group = "alone", priority = 3.0 }"#),
        one("")
    );
}

#[test]
fn coupled_runs_are_deterministic_and_independent() {
    let toml = pair(
        [
            r#"coupling = { group = "sender", priority = 2.0 }"#,
            r#"coupling = { group = "sender", priority = 1.0 }"#,
        ],
        3,
    )
    .replace("90s", "20s");
    let sc = common::scenario(&toml);
    // Two runs of one scenario at once on two threads: each has its own groups.
    let (a, b) = std::thread::scope(|s| {
        let a = s.spawn(|| common::run_quiet(&sc).summary.to_json());
        let b = s.spawn(|| common::run_quiet(&sc).summary.to_json());
        (a.join().unwrap(), b.join().unwrap())
    });
    assert_eq!(a, b);
    assert_eq!(a, common::run_quiet(&sc).summary.to_json());
}

/// The error a scenario is refused with.
fn refused(toml: &str) -> String {
    rtcc_sim::Scenario::from_toml_str(toml, std::path::Path::new("."), "test", None)
        .err()
        .unwrap_or_else(|| panic!("accepted:{toml}"))
        .to_string()
}

#[test]
fn coupling_errors_name_the_field() {
    let bad = |coupling: &str, controller: &str| {
        let toml = format!(
            r#"
duration = "10s"
[path.forward]
capacity = "2Mbps"
[[flows]]
controller = "{controller}"
coupling = {coupling}
"#
        );
        refused(&toml)
    };
    let e = bad(r#"{ group = "g", priority = 0 }"#, "gcc");
    assert!(
        e.contains("flows[0].coupling") && e.contains("priority"),
        "{e}"
    );
    let e = bad(r#"{ group = "g", priority = -2.0 }"#, "gcc");
    assert!(e.contains("flows[0].coupling.priority"), "{e}");
    let e = bad(r#"{ priority = 2.0 }"#, "gcc");
    assert!(e.contains("group"), "{e}");
    let e = bad(r#"{ group = "g", weight = 2.0 }"#, "gcc");
    assert!(e.contains("weight"), "{e}");
    let e = bad(r#"{ group = "g" }"#, "sqp");
    assert!(
        e.contains("flows[0].coupling") && e.contains("cannot take a rate from outside"),
        "{e}"
    );
    // Two flows of one group must agree on the algorithm.
    let toml = r#"
duration = "10s"
[path.forward]
capacity = "2Mbps"
[[flows]]
controller = "gcc"
coupling = { group = "g" }
[[flows]]
controller = "gcc"
coupling = { group = "g", algorithm = "conservative" }
"#;
    let e = refused(toml);
    assert!(
        e.contains("flows[1].coupling") && e.contains("same one"),
        "{e}"
    );
    // Only video flows take it.
    let toml = r#"
duration = "10s"
[path.forward]
capacity = "2Mbps"
[[flows]]
kind = "tcp"
controller = "cubic"
coupling = { group = "g" }
"#;
    let e = refused(toml);
    assert!(e.contains("coupling"), "{e}");
}
