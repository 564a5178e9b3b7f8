//! Receiver rate reports in whole simulations: a controller that asks for them (in its registry
//! entry, or the scenario for it) gets one per interval, and what they count is what the receiver
//! got.

use rtcc_core::cc::{
    parse_config, Controller, ControllerInfo, Decision, FeedbackPolicy, ParamDoc, Registry,
};
use rtcc_core::packet::{FeedbackReport, RateReport};
use rtcc_core::{Duration, Rate, Time};
use rtcc_sim::{run_with_registry, RunResult, Scenario};
use std::path::Path;
use std::sync::{Arc, Mutex};

type Reports = Arc<Mutex<Vec<(Time, RateReport)>>>;

/// Sends at a constant rate, paced at it, and keeps the rate reports it gets.
struct Recorder {
    rate: Rate,
    reports: Reports,
}

impl Controller for Recorder {
    fn on_feedback(&mut self, _now: Time, _report: &FeedbackReport) {}
    fn on_rate_report(&mut self, now: Time, report: &RateReport) {
        self.reports.lock().unwrap().push((now, *report));
    }
    fn decision(&self) -> Decision {
        Decision::rate_only(self.rate, Some(self.rate))
    }
}

#[derive(serde::Deserialize)]
struct RecorderConfig {
    rate: Rate,
}

/// The builtin registry and "recorder", which asks for a rate report every 50 ms; its reports
/// go to the list returned.
fn registry() -> (Registry, Reports) {
    let reports: Reports = Arc::default();
    let sink = reports.clone();
    let mut r = Registry::builtin();
    r.register(ControllerInfo {
        name: "recorder".into(),
        summary: "a constant rate that records rate reports".into(),
        params: vec![ParamDoc::new("rate", "", "the rate")],
        feedback: FeedbackPolicy {
            rate_reports: Some(Duration::from_millis(50)),
            ..FeedbackPolicy::default()
        },
        media: Default::default(),
        build: Arc::new(move |params, _ctx, _registry| {
            let cfg: RecorderConfig = parse_config("recorder", params)?;
            Ok(Box::new(Recorder {
                rate: cfg.rate,
                reports: sink.clone(),
            }))
        }),
    })
    .unwrap();
    (r, reports)
}

fn simulate(toml: &str) -> (RunResult, Vec<(Time, RateReport)>) {
    let (registry, reports) = registry();
    let sc = Scenario::from_toml_str_with_registry(toml, Path::new("."), "test", None, &registry)
        .unwrap_or_else(|e| panic!("{e}"));
    let r = run_with_registry(&sc, None, &mut |_| {}, &registry).unwrap();
    let got = reports.lock().unwrap().clone();
    (r, got)
}

/// A 3 Mbit/s flow over 10 Mbit/s, its receiver's clock 5 ms ahead, starting at 1 s.
const UNCONGESTED: &str = r#"
duration = "6s"
[path.forward]
capacity = "10Mbps"
delay = "20ms"
queue = "100ms"
[[flows]]
controller = "recorder"
params = { rate = "3Mbps" }
start = "1s"
clock_offset = "5ms"
"#;

fn ms(t: u64) -> Time {
    Time::from_millis(t)
}

/// Every report's bytes are `bps` over its window, give or take the one packet (the flow's
/// largest) a window's edge cuts off.
fn assert_within_a_packet<'a>(
    r: &RunResult,
    reports: impl Iterator<Item = &'a RateReport>,
    bps: f64,
) {
    let largest = r.flows[0]
        .packets
        .iter()
        .map(|p| p.size as u64)
        .max()
        .unwrap();
    for x in reports {
        let expected = bps * (x.window_end - x.window_start).as_secs_f64() / 8.0;
        assert!(
            (x.bytes as f64 - expected).abs() <= largest as f64,
            "{x:?}: {} Mbit/s",
            x.rate().unwrap().mbps()
        );
    }
}

#[test]
fn the_reports_count_exactly_what_the_receiver_got_in_contiguous_windows() {
    let (r, reports) = simulate(UNCONGESTED);
    let offset = Duration::from_millis(5);
    // Reports from 1.055 s (receiver clock) to 6.005 s; the last ones are still on the way back.
    assert!(reports.len() >= 98, "{} reports", reports.len());
    let mut start = ms(1005);
    for (k, (arrived, report)) in reports.iter().enumerate() {
        assert_eq!(report.window_start, start, "report {k}: contiguous");
        assert_eq!(
            report.window_end,
            start + Duration::from_millis(50),
            "report {k}: every 50 ms from the receiver's start"
        );
        // Sent at its window's end (receiver clock, 5 ms ahead), back over the 20 ms path
        // (its 56 bytes take well under a millisecond at any rate here).
        let back = arrived.secs_since(report.window_end) + offset.as_secs_f64();
        assert!((0.020..0.021).contains(&back), "report {k}: {back} s");
        // The receiver's clock is the simulator's plus the offset.
        let inside: Vec<_> = r.flows[0]
            .packets
            .iter()
            .filter(|p| {
                p.recv.is_some_and(|t| {
                    t + offset > report.window_start && t + offset <= report.window_end
                })
            })
            .collect();
        let bytes: u64 = inside.iter().map(|p| p.size as u64).sum();
        assert_eq!(
            (report.bytes, report.packets as usize),
            (bytes, inside.len()),
            "report {k}"
        );
        let newest = inside.iter().max_by_key(|p| (p.recv, p.seq)).unwrap();
        assert_eq!(
            report.last.map(|(seq, _)| seq),
            Some(newest.seq),
            "report {k}: the sender's own number for the last arrival"
        );
        start = report.window_end;
    }
    // Every report of the run sums to what arrived up to the last one's end.
    let end = reports.last().unwrap().1.window_end;
    let total: u64 = reports.iter().map(|(_, x)| x.bytes).sum();
    let received: u64 = r.flows[0]
        .packets
        .iter()
        .filter(|p| p.recv.is_some_and(|t| t + offset <= end))
        .map(|p| p.size as u64)
        .sum();
    assert_eq!(total, received);
    // The paced 3 Mbit/s arrives at 3 Mbit/s in every window after the first frames.
    assert_within_a_packet(&r, reports[10..].iter().map(|(_, x)| x), 3e6);
    let mean = total as f64 * 8.0 / end.secs_since(ms(1005)) / 1e6;
    assert!((mean / 3.0 - 1.0).abs() < 0.03, "{mean} Mbit/s");
}

#[test]
fn on_a_saturated_link_the_reported_rate_is_the_links() {
    // 3 Mbit/s into 2 Mbit/s: once the queue is full, the receiver gets the link's rate; the
    // scenario asks for a report every 100 ms.
    let toml = r#"
duration = "8s"
[path.forward]
capacity = "2Mbps"
delay = "20ms"
queue = "200ms"
[[flows]]
controller = "recorder"
params = { rate = "3Mbps" }
feedback = { interval = "50ms", rate_reports = "100ms" }
"#;
    let (r, reports) = simulate(toml);
    assert!(reports.len() >= 78, "{}", reports.len());
    // The link serialises back to back: 2 Mbit/s in every window.
    let saturated: Vec<_> = reports
        .iter()
        .map(|(_, x)| x)
        .filter(|x| x.window_start >= ms(2000))
        .collect();
    assert!(saturated.len() >= 58, "{}", saturated.len());
    for x in &saturated {
        assert_eq!(x.window_end - x.window_start, Duration::from_millis(100));
    }
    assert_within_a_packet(&r, saturated.into_iter(), 2e6);
}

#[test]
fn a_paused_sender_gets_zero_reports_and_runs_are_deterministic() {
    let toml = r#"
duration = "4s"
[path.forward]
capacity = "10Mbps"
delay = "20ms"
queue = "100ms"
loss = 0.02
[[flows]]
controller = "recorder"
params = { rate = "2Mbps" }
active = [["0s", "1s"], ["2s", "4s"]]
"#;
    let (a, first) = simulate(toml);
    // Nothing leaves between 1 and 2 s (the last packets land by about 1.04 s).
    let silent: Vec<_> = first
        .iter()
        .filter(|(_, x)| x.window_start >= ms(1100) && x.window_end <= ms(2000))
        .collect();
    assert_eq!(silent.len(), 18);
    assert!(silent
        .iter()
        .all(|(_, x)| x.bytes == 0 && x.packets == 0 && x.last.is_none()));
    assert!(first
        .iter()
        .any(|(_, x)| x.window_start >= ms(2100) && x.bytes > 0));
    let (b, second) = simulate(toml);
    assert_eq!(first, second, "same scenario and seed, same reports");
    assert_eq!(a.summary.to_json(), b.summary.to_json());
}
