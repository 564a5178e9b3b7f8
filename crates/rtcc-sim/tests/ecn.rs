//! Whole-simulation checks of ECN (RFC 3168): ECN-capable flows behind marking queues lose
//! nothing and keep their throughput, CE marks reach the summary, and everything is off unless
//! asked for.

use crate::common;

use common::{scenario, simulate};
use rtcc_sim::RunResult;

/// 10 Mbit/s, 40 ms RTT, `queue` in front; one Cubic flow, ECN-capable or not.
fn cubic_behind(queue: &str, ecn: bool) -> RunResult {
    simulate(&format!(
        "duration = \"60s\"\nseed = 4\n[path.forward]\ncapacity = \"10Mbps\"\ndelay = \"20ms\"\n\
         queue = {queue}\n[[flows]]\nname = \"cubic\"\nkind = \"tcp\"\ncontroller = \"cubic\"\n\
         ecn = {ecn}\n"
    ))
}

#[test]
fn an_ecn_cubic_flow_behind_marking_aqms_loses_nothing_and_keeps_its_throughput() {
    for queue in [
        r#"{ kind = "codel", ecn = true }"#,
        r#"{ kind = "fq_codel", ecn = true }"#,
        r#"{ kind = "pie", ecn = true }"#,
        r#"{ kind = "droptail", limit = "300pkts", mark_threshold = "20ms" }"#,
    ] {
        let with = cubic_behind(queue, true);
        let without = cubic_behind(queue, false);
        let (e, n) = (&with.summary.flows[0], &without.summary.flows[0]);
        assert!(
            n.packets_lost > 10,
            "{queue}: the AQM drops Not-ECT packets"
        );
        assert_eq!(
            e.packets_lost, 0,
            "{queue}: ECN turns every signal into a mark"
        );
        assert_eq!(e.retransmissions, 0, "{queue}");
        let marks = e.ce_marked.expect("an ECN flow reports its marks");
        assert!(marks > 10, "{queue}: {marks}");
        assert_eq!(n.ce_marked, None, "{queue}");
        let ratio = e.throughput_bps / n.throughput_bps;
        assert!((0.95..1.05).contains(&ratio), "{queue}: {ratio}");
        // The AQM still holds the delay: a standing queue would show as a high median.
        let (qe, qn) = (
            e.queuing_delay_ms.p50.unwrap(),
            n.queuing_delay_ms.p50.unwrap(),
        );
        assert!(qe < 2.0 * qn + 5.0, "{queue}: {qe} vs {qn} ms");
    }
}

#[test]
fn pie_marks_below_10_percent_and_drops_above() {
    // PIE's drop probability stays below 10 % for one Cubic flow: all marks, no loss.
    let r = cubic_behind(r#"{ kind = "pie", ecn = true }"#, true);
    assert_eq!(r.summary.flows[0].packets_lost, 0);
    // Twenty unresponsive ECN-capable constant-rate flows at twice the link: p climbs past
    // 10 % and PIE drops them as it would Not-ECT packets.
    let mut toml = String::from(
        "duration = \"20s\"\n[path.forward]\ncapacity = \"2Mbps\"\ndelay = \"10ms\"\n\
         queue = { kind = \"pie\", ecn = true }\n",
    );
    for i in 0..20 {
        toml += &format!(
            "[[flows]]\nname = \"cbr{i}\"\nkind = \"cbr\"\nrate = \"200kbps\"\n\
             packet_size = \"1000B\"\necn = true\n"
        );
    }
    let r = simulate(&toml);
    let lost: usize = r.summary.flows.iter().map(|f| f.packets_lost).sum();
    let sent: usize = r.summary.flows.iter().map(|f| f.packets_sent).sum();
    assert!(lost as f64 > 0.3 * sent as f64, "{lost} of {sent}");
}

#[test]
fn a_video_flow_reports_its_ce_marks() {
    // A GCC call sharing a CoDel queue with an ECN Cubic flow: the queue marks both.
    let r = simulate(
        "duration = \"60s\"\n[path.forward]\ncapacity = \"2Mbps\"\ndelay = \"25ms\"\n\
         queue = { kind = \"codel\", ecn = true }\n\
         [[flows]]\nname = \"video\"\ncontroller = \"gcc\"\necn = true\n\
         [[flows]]\nname = \"cubic\"\nkind = \"tcp\"\ncontroller = \"cubic\"\necn = true\nstart = \"10s\"\n",
    );
    for f in &r.summary.flows {
        assert!(f.ce_marked.unwrap() > 0, "{}: {:?}", f.name, f.ce_marked);
        assert_eq!(f.packets_lost, 0, "{}", f.name);
    }
}

#[test]
fn ecn_is_off_by_default_and_the_summary_json_does_not_mention_it() {
    let r = cubic_behind(r#"{ kind = "fq_codel" }"#, false);
    let json = r.summary.to_json();
    assert!(!json.contains("ce_marked"));
    // An ECN-capable flow behind a queue without marking is dropped like any other.
    let r = cubic_behind(r#"{ kind = "fq_codel" }"#, true);
    let f = &r.summary.flows[0];
    assert!(f.packets_lost > 0);
    assert_eq!(f.ce_marked, Some(0));
    assert!(r.summary.to_json().contains("\"ce_marked\": 0"));
}

#[test]
fn bad_ecn_values_name_the_field() {
    let err = |toml: &str| {
        rtcc_sim::Scenario::from_toml_str(toml, std::path::Path::new("."), "test", None)
            .unwrap_err()
            .to_string()
    };
    let e = err("duration = \"1s\"\n[path.forward]\ncapacity = \"1Mbps\"\n[[flows]]\nname = \"v\"\ncontroller = \"gcc\"\necn = \"yes\"\n");
    assert!(
        e.contains("flows[0].ecn") && e.contains("true or false"),
        "{e}"
    );
    let e = err("duration = \"1s\"\n[path.forward]\ncapacity = \"1Mbps\"\n[[flows]]\nname = \"d\"\nkind = \"dash\"\ncontroller = \"cubic\"\necn = true\n");
    assert!(e.contains("ecn"), "{e}");
    let e = err(
        "duration = \"1s\"\n[path.forward]\ncapacity = \"1Mbps\"\nqueue = { kind = \"codel\", ecn = 1 }\n\
         [[flows]]\nname = \"v\"\ncontroller = \"gcc\"\n",
    );
    assert!(
        e.contains("codel ecn") && e.contains("true or false"),
        "{e}"
    );
    let e = err(
        "duration = \"1s\"\n[path.forward]\ncapacity = \"1Mbps\"\nqueue = { kind = \"droptail\", mark_threshold = \"0pkts\" }\n\
         [[flows]]\nname = \"v\"\ncontroller = \"gcc\"\n",
    );
    assert!(e.contains("mark_threshold"), "{e}");
    let e = err(
        "duration = \"1s\"\n[path.forward]\ncapacity = \"1Mbps\"\nqueue = { kind = \"sfq\", ecn = true }\n\
         [[flows]]\nname = \"v\"\ncontroller = \"gcc\"\n",
    );
    assert!(e.contains("ecn") && e.contains("valid fields"), "{e}");
    // A valid one parses.
    scenario(
        "duration = \"1s\"\n[path.forward]\ncapacity = \"1Mbps\"\nqueue = { kind = \"fq_codel\", ecn = true, ce_threshold = \"1ms\" }\n\
         [[flows]]\nname = \"v\"\ncontroller = \"gcc\"\necn = true\n",
    );
}
