//! Whole-simulation checks against results that can be computed by hand.

use common::{run_quiet, scenario};
use rtcc_core::net::MahimahiTrace;
use rtcc_sim::{run, Scenario, Summary};
use std::path::{Path, PathBuf};

use crate::common;

fn summarize(sc: &Scenario) -> Summary {
    run_quiet(sc).summary
}

/// `fixed` at `rate` over 10 Mbit/s; `pacing_factor` 1 makes the arrivals smooth, so the queue
/// level does not swing with each frame's burst.
fn fixed_on_10mbps(rate: &str, pacing_factor: f64, queue: &str, duration: &str) -> Scenario {
    scenario(&format!(
        r#"
duration = "{duration}"
[path.forward]
capacity = "10Mbps"
delay = "20ms"
queue = "{queue}"
[[flows]]
controller = "fixed"
params = {{ rate = "{rate}", pacing_factor = {pacing_factor} }}
"#
    ))
}

#[test]
fn below_capacity_there_is_no_loss_and_frames_take_propagation_plus_serialisation() {
    let s = summarize(&fixed_on_10mbps("9Mbps", 2.5, "100ms", "20s"));
    let f = &s.flows[0];
    assert_eq!(
        f.packets_lost, 0,
        "90% of the link must never overflow the queue"
    );
    // A frame is 9 Mbit/s / 30 = 37 500 bytes = 30 ms at 10 Mbit/s; propagation is 20 ms.
    // Allowed slack: one packet time (1200 bytes at 10 Mbit/s = 0.96 ms).
    let expected_ms = 20.0 + 30.0;
    let packet_time_ms = 0.96;
    for (name, v) in [("p50", f.frame_delay_ms.p50), ("p99", f.frame_delay_ms.p99)] {
        let v = v.unwrap();
        assert!(
            v >= expected_ms - 1e-6 && v <= expected_ms + packet_time_ms,
            "frame delay {name} = {v} ms, expected {expected_ms} ms within one packet time"
        );
    }
    assert!(
        (f.utilization.unwrap() - 0.9).abs() < 0.005,
        "utilization {:?}",
        f.utilization
    );
    assert!((f.frame_rate_fps - 30.0).abs() < 0.1);
}

#[test]
fn above_capacity_the_queue_fills_and_the_excess_is_lost() {
    // 11 Mbit/s into 10 Mbit/s, paced smoothly: in steady state 1 - 10/11 = 9.09 % of packets are dropped and
    // every packet waits the full buffer (100 ms). The buffer takes 1 s to fill
    // (125 kB at 1 Mbit/s of excess), so over 60 s the loss is 59/60 of 9.09 % ≈ 8.94 %.
    let s = summarize(&fixed_on_10mbps("11Mbps", 1.0, "100ms", "60s"));
    let f = &s.flows[0];
    let loss = f.loss_rate.unwrap();
    assert!(
        (0.087..=0.0915).contains(&loss),
        "loss {loss}, expected about 9 %"
    );
    let q50 = f.queuing_delay_ms.p50.unwrap();
    assert!(
        (97.0..=101.0).contains(&q50),
        "median queuing delay {q50} ms, expected the 100 ms buffer"
    );
    assert!(
        (f.utilization.unwrap() - 1.0).abs() < 0.02,
        "the link is saturated: {:?}",
        f.utilization
    );
    // Frames lose packets, so many never complete and take the next complete frame's time.
    assert!(f.frame_delay_ms.p50.unwrap() > 120.0);
}

#[test]
fn a_packet_limited_queue_holds_that_many_packets() {
    // 100 packets of 1200 bytes at 10 Mbit/s = 96 ms of queue, plus the packet in service.
    let s = summarize(&fixed_on_10mbps("12Mbps", 1.0, "100pkts", "20s"));
    let q = s.flows[0].queuing_delay_ms.p50.unwrap();
    assert!((95.0..=98.0).contains(&q), "queuing delay {q} ms");
}

#[test]
fn same_scenario_and_seed_give_identical_summaries_and_another_seed_differs() {
    let toml = r#"
duration = "20s"
seed = 7
[path.forward]
schedule = [["0s", "8Mbps"], ["5s", "3Mbps"], ["12s", "8Mbps"]]
delay = "25ms"
queue = "80ms"
[[flows]]
controller = "oracle"
frame_jitter = "1ms"
[[flows]]
controller = "fixed"
params = { rate = "2Mbps" }
frame_jitter = "1ms"
start = "2s"
"#;
    let sc = scenario(toml);
    let a = run(&sc, None, &mut |_| {}).unwrap();
    let b = run(&sc, None, &mut |_| {}).unwrap();
    assert_eq!(a.summary.to_json(), b.summary.to_json());
    assert_eq!(a.flows[0].packets, b.flows[0].packets);
    assert_eq!(a.state.value, b.state.value);
    let c = run(&sc, Some(8), &mut |_| {}).unwrap();
    assert_ne!(
        a.summary.to_json(),
        c.summary.to_json(),
        "the seed drives the frame jitter"
    );
}

fn shared_traces() -> Option<PathBuf> {
    let dir = std::env::var_os("RTCC_TRACES")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/traces/mahimahi")
        });
    dir.is_dir().then_some(dir)
}

#[test]
#[cfg_attr(
    not(shared_traces),
    ignore = "needs the shared cellular traces (../shared/traces/mahimahi or RTCC_TRACES)"
)]
fn oracle_at_full_capacity_delivers_each_cellular_traces_mean_within_one_percent() {
    let dir = shared_traces().expect("the build found the traces (build.rs)");
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    names.sort();
    assert!(!names.is_empty());
    for path in names {
        let trace = MahimahiTrace::from_file(&path).unwrap();
        let mean = trace.mean_rate().bps();
        // One whole period of the trace, so the delivered mean is the trace's mean.
        let secs = trace.period_ms() as f64 / 1000.0;
        let sc = scenario(&format!(
            r#"
duration = "{secs}s"
[path.forward]
trace = "{}"
delay = "20ms"
queue = "unlimited"
[[flows]]
controller = "oracle"
params = {{ fraction = 1.0 }}
"#,
            path.display()
        ));
        let s = summarize(&sc);
        let got = s.flows[0].throughput_bps;
        let err = (got - mean).abs() / mean;
        eprintln!(
            "{}: mean {:.3} Mbit/s, delivered {:.3} Mbit/s ({:+.2} %)",
            path.display(),
            mean / 1e6,
            got / 1e6,
            100.0 * (got - mean) / mean
        );
        assert!(
            err < 0.01,
            "{}: delivered {got} vs trace mean {mean} ({:.2} %)",
            path.display(),
            err * 100.0
        );
    }
}

#[test]
fn malformed_trace_files_are_rejected_with_file_and_line() {
    let dir = std::env::temp_dir().join(format!("rtcc-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cases = [
        ("nonnumeric", "0\n5\nabc\n", 3),
        ("decreasing", "3\n5\n4\n", 3),
        ("zero", "0\n0\n", 2),
        ("empty", "", 0),
    ];
    for (name, text, line) in cases {
        let file = dir.join(format!("{name}.trace"));
        std::fs::write(&file, text).unwrap();
        let toml = format!(
            "duration = \"1s\"\n[path.forward]\ntrace = \"{}\"\n[[flows]]\ncontroller = \"oracle\"\n",
            file.display()
        );
        let e = Scenario::from_toml_str(&toml, Path::new("."), "t", None).unwrap_err();
        assert_eq!(e.field, "path.forward.trace");
        let expected = format!("{}:{line}:", file.display());
        assert!(e.message.starts_with(&expected), "{name}: {e}");
    }
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn the_bundled_lte_trace_is_what_the_generator_makes_with_seed_1() {
    use rtcc_core::net::tracegen::{generate_lte, LteTraceConfig};
    use rtcc_core::{Duration, Rate};
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../traces/lte-6mbps-seed1.trace");
    let shipped = std::fs::read_to_string(&file).unwrap();
    let cfg = LteTraceConfig::new(1, Duration::from_millis(60_000), Rate::from_mbps(6.0));
    let made: String = generate_lte(&cfg)
        .unwrap()
        .iter()
        .map(|v| format!("{v}\n"))
        .collect();
    assert!(
        shipped == made,
        "traces/lte-6mbps-seed1.trace differs from the generator's output for seed 1"
    );
}

#[test]
fn every_shipped_scenario_validates_and_runs() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../experiments");
    let mut stack = vec![root];
    let mut count = 0;
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "toml") {
                // Sweep files (a [sweep] table around a [scenario]) are run by the Python tests.
                let text = std::fs::read_to_string(&path).unwrap();
                let doc: toml::Table = toml::from_str(&text).unwrap();
                if doc.contains_key("sweep") {
                    continue;
                }
                let sc = Scenario::from_file(&path).unwrap_or_else(|e| panic!("{e}"));
                run(&sc, None, &mut |_| {}).unwrap();
                count += 1;
            }
        }
    }
    assert!(count >= 5, "found only {count} scenarios");
}

#[test]
fn constant_rate_cross_traffic_sends_at_its_rate_and_loses_the_excess() {
    let sc = scenario(
        r#"
duration = "20s"
[path.forward]
capacity = "10Mbps"
delay = "20ms"
queue = "50ms"
[[flows]]
name = "udp"
kind = "cbr"
rate = "4Mbps"
[[flows]]
name = "video"
controller = "fixed"
params = { rate = "5Mbps" }
"#,
    );
    let s = summarize(&sc);
    let (udp, video) = (&s.flows[0], &s.flows[1]);
    assert_eq!(udp.controller, "cbr");
    assert!(
        (udp.throughput_bps - 4e6).abs() < 4e6 * 0.002,
        "cbr throughput {}",
        udp.throughput_bps
    );
    assert_eq!(
        udp.packets_lost + video.packets_lost,
        0,
        "9 of 10 Mbit/s: no loss"
    );
    assert_eq!(udp.frames_sent, 0);
    // Overload: 12 Mbit/s of cbr alone into 10 Mbit/s loses 1 - 10/12 of its packets.
    let sc = scenario(
        "duration = \"30s\"\n[path.forward]\ncapacity = \"10Mbps\"\nqueue = \"50ms\"\n[[flows]]\nkind = \"cbr\"\nrate = \"12Mbps\"\n",
    );
    let loss = summarize(&sc).flows[0].loss_rate.unwrap();
    assert!(
        (loss - 1.0 / 6.0).abs() < 0.005,
        "loss {loss}, expected 16.7 %"
    );
}

#[test]
fn link_impairments_lose_delay_and_batch_packets() {
    let base = |extra: &str| {
        scenario(&format!(
            "duration = \"30s\"\n[path.forward]\ncapacity = \"10Mbps\"\ndelay = \"20ms\"\nqueue = \"100ms\"\n{extra}\n[[flows]]\ncontroller = \"fixed\"\nparams = {{ rate = \"5Mbps\" }}\n"
        ))
    };
    let s = summarize(&base("loss = 0.02"));
    let loss = s.flows[0].loss_rate.unwrap();
    assert!(
        (loss - 0.02).abs() < 0.003,
        "random loss {loss}, expected 2 %"
    );
    let s = summarize(&base(
        "loss = { model = \"gilbert-elliott\", p = 0.005, r = 0.5 }",
    ));
    let loss = s.flows[0].loss_rate.unwrap();
    assert!(
        (loss - 0.005 / 0.505).abs() < 0.003,
        "Gilbert-Elliott loss {loss}, expected p/(p+r) ≈ 1 %"
    );
    // Jitter up to 10 ms: one-way delay spreads over [20, 30] ms plus serialisation, never below.
    let s = summarize(&base("jitter = \"10ms\""));
    let owd = s.flows[0].one_way_delay_ms;
    assert!(
        owd.p50.unwrap() > 22.0 && owd.p99.unwrap() < 45.0,
        "{owd:?}"
    );
    // Aggregation in 20 ms batches adds on average about half a batch interval.
    let plain = summarize(&base("")).flows[0].one_way_delay_ms.p50.unwrap();
    let batched = summarize(&base("aggregation = \"20ms\"")).flows[0]
        .one_way_delay_ms
        .p50
        .unwrap();
    assert!(
        (batched - plain - 10.0).abs() < 3.0,
        "batched {batched} vs plain {plain}"
    );
}

#[test]
fn a_token_bucket_shapes_to_its_rate() {
    let sc = scenario(
        "duration = \"20s\"\n[path.forward]\ntoken_bucket = { rate = \"4Mbps\", burst = \"30KB\" }\ndelay = \"10ms\"\nqueue = \"60KB\"\n[[flows]]\ncontroller = \"fixed\"\nparams = { rate = \"5Mbps\" }\nrecovery = { nack = false }\n",
    );
    // Without retransmissions: they would raise the offered load above 5 Mbit/s.
    let s = summarize(&sc);
    let f = &s.flows[0];
    assert!(
        (f.throughput_bps - 4e6).abs() < 4e6 * 0.02,
        "throughput {}",
        f.throughput_bps
    );
    let loss = f.loss_rate.unwrap();
    assert!(
        (loss - 0.2).abs() < 0.02,
        "5 Mbit/s into a 4 Mbit/s bucket loses about 20 %: {loss}"
    );
    let e = Scenario::from_toml_str(
        "duration = \"1s\"\n[path.forward]\ntoken_bucket = { rate = \"4Mbps\", burst = \"1KB\" }\n[[flows]]\ncontroller = \"oracle\"\n",
        Path::new("."),
        "t",
        None,
    )
    .unwrap_err();
    assert_eq!(e.field, "path.forward.token_bucket.burst");
}

#[test]
fn queue_disciplines_are_chosen_in_the_scenario() {
    // 12 Mbit/s of unresponsive traffic into 10 Mbit/s: drop-tail sits at its limit, CoDel keeps
    // dropping at the head (its sojourn falls far below the 1000-packet limit's ~1 s), and fq_codel
    // protects a sparse flow sharing the link.
    let run_with = |queue: &str| {
        summarize(&scenario(&format!(
            "duration = \"30s\"\n[path.forward]\ncapacity = \"10Mbps\"\ndelay = \"20ms\"\nqueue = {queue}\n\
             [[flows]]\nname = \"bulk\"\nkind = \"cbr\"\nrate = \"12Mbps\"\n\
             [[flows]]\nname = \"sparse\"\nkind = \"cbr\"\nrate = \"100kbps\"\npacket_size = \"200B\"\n"
        )))
    };
    let droptail = run_with("\"1000pkts\"");
    let codel = run_with("{ kind = \"codel\" }");
    let fq = run_with("{ kind = \"fq_codel\" }");
    let q = |s: &Summary, f: usize| s.flows[f].queuing_delay_ms.p50.unwrap();
    assert!(
        q(&droptail, 0) > 1000.0,
        "1000 packets at 10 Mbit/s is 1.2 s: {}",
        q(&droptail, 0)
    );
    assert!(
        q(&codel, 0) < q(&droptail, 0) / 2.0,
        "codel {} vs drop-tail {}",
        q(&codel, 0),
        q(&droptail, 0)
    );
    assert!(
        q(&fq, 1) < 5.0,
        "fq_codel serves the sparse flow first: {} ms",
        q(&fq, 1)
    );
    assert_eq!(
        fq.flows[1].packets_lost, 0,
        "the sparse flow loses nothing under fq_codel"
    );
    let e = Scenario::from_toml_str(
        "duration = \"1s\"\n[path.forward]\ncapacity = \"1Mbps\"\nqueue = { kind = \"red\" }\n[[flows]]\ncontroller = \"oracle\"\n",
        Path::new("."),
        "t",
        None,
    )
    .unwrap_err();
    assert!(
        e.field.starts_with("path.forward.queue") && e.message.contains("codel"),
        "{e}"
    );
}
