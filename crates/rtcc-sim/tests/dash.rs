//! Whole-simulation checks of DASH sessions (`kind = "dash"`, docs/dash.md) against the seed's
//! testbed (Vargas et al., WWW '21): 25 Mbit/s, 100 ms RTT, a drop-tail buffer and, as in every
//! experiment of the seed, a 1 MB token-bucket burst; 127 segments of 5 s over the 11-rung
//! ladder, dash.js's DYNAMIC, HTTP/2. The extraction's acceptance checks (§6.3) are quoted where
//! they apply; where the model does not reach them, the test pins what it does and says why.

use crate::common;

use common::simulate;
use rtcc_core::dash::qoe::DashSummary;
use rtcc_sim::RunResult;

/// The seed's path: 25 Mbit/s (a token bucket with a 1 MB burst unless `burst` is empty), 50 ms
/// each way, a drop-tail `queue`; one DASH flow with `extra` fields.
fn session(cc: &str, queue: &str, burst: &str, extra: &str) -> RunResult {
    let capacity = if burst.is_empty() {
        "capacity = \"25Mbps\"".to_string()
    } else {
        format!("token_bucket = {{ rate = \"25Mbps\", burst = \"{burst}\" }}")
    };
    simulate(&format!(
        "duration = \"1000s\"\n[path.forward]\n{capacity}\ndelay = \"50ms\"\nqueue = \"{queue}\"\n\
         [[flows]]\nkind = \"dash\"\ncontroller = \"{cc}\"\n{extra}\n"
    ))
}

fn dash(r: &RunResult, i: usize) -> &DashSummary {
    r.summary.flows[i]
        .dash
        .as_ref()
        .expect("a dash flow has a dash summary")
}

/// The most frequent rung of flow `i`'s segments.
fn usual_rung(r: &RunResult, i: usize) -> u32 {
    let mut count = [0usize; 32];
    for s in &r.flows[i].segments {
        count[s.quality as usize] += 1;
    }
    (0..32).max_by_key(|&q| count[q]).unwrap() as u32
}

#[test]
fn cubic_on_the_seeds_shallow_buffer_plays_without_stalls_at_the_highest_rung_the_link_sustains() {
    // §6.3 "Shallow": 100 KB buffer, 1 MB burst, quality >= 9.3 and stall <= 0.05.
    let r = session("cubic", "100KB", "1MB", "");
    let d = dash(&r, 0);
    assert!(d.finished, "{d:?}");
    assert_eq!(d.segments_downloaded, 127);
    assert!(d.stall_rate <= 0.05, "no stalls on a shallow buffer: {d:?}");
    // The quality check does not hold with nominal segment sizes: the top rung is the link's
    // rate, and a 25 Mbit/s link carries 24.1 Mbit/s of TCP payload (1448 of 1500 bytes), so
    // dash.js's throughput samples stay at ~24 Mbit/s, its THROUGHPUT rule (0.9 x that, less the
    // latency's dead time) allows 20 Mbit/s at most (rung 8), and BOLA-O never raises BOLA's
    // choice above that rung. The first segments reach the top on samples the 1 MB burst
    // inflates, then the session settles on rung 8.
    assert!(
        d.avg_throughput_mbps < 24.5,
        "throughput samples at the payload rate of the link: {d:?}"
    );
    assert_eq!(
        usual_rung(&r, 0),
        8,
        "rung 8 (20 Mbit/s) is what 0.9 x 24 Mbit/s allows"
    );
    assert!(
        (7.5..8.5).contains(&d.avg_quality),
        "quality {} (the seed: 9.85; docs/dash.md)",
        d.avg_quality
    );
}

#[test]
fn segments_below_nominal_size_lift_the_shallow_quality_by_one_rung() {
    // The extraction's sensitivity check (§7 #9): encodings at 0.9 x nominal. Whether the MPD
    // declares the nominal rates (only the sizes shrink) or the real ones (the whole ladder
    // shrinks), rung 9 becomes sustainable and is where the session settles; the top rung still
    // needs more than 0.9 x the measured throughput.
    let sizes = session("cubic", "100KB", "1MB", "segment_sizes = 0.9");
    let ladder = session(
        "cubic",
        "100KB",
        "1MB",
        "ladder = [\"0.9Mbps\", \"2.25Mbps\", \"4.5Mbps\", \"6.75Mbps\", \"9Mbps\", \"11.25Mbps\", \
         \"13.5Mbps\", \"15.75Mbps\", \"18Mbps\", \"20.25Mbps\", \"22.5Mbps\"]",
    );
    let d = dash(&ladder, 0);
    assert_eq!(usual_rung(&ladder, 0), 9, "ladder x 0.9: {d:?}");
    assert!(
        d.avg_quality > 8.5 && d.stall_rate <= 0.05,
        "ladder x 0.9: one rung above the nominal session, still no stalls: {d:?}"
    );
    // With the sizes alone the MPD still declares the nominal rates, and rung 9 sits on a knife
    // edge: with Linux's loss recovery (RACK waits min_rtt / 4 before a tail loss, a probe
    // 2·SRTT) the session settles on rung 8 (7.90; 8.87 with the old threshold-one detection,
    // whose samples were 0.2 % higher).
    let d = dash(&sizes, 0);
    assert!(
        (8..=9).contains(&usual_rung(&sizes, 0)) && d.stall_rate <= 0.05,
        "sizes x 0.9: {d:?}"
    );
}

#[test]
fn cubic_on_a_10_kb_buffer() {
    // §6.3: "10 KB: Cubic quality <= 2 and stall >= 0.5 (paper ~0 and ~1)".
    // Without the burst, Cubic's window saw-tooths on a buffer of 6 packets (0.03 BDP): about
    // 1.8 Mbit/s of throughput samples, so DYNAMIC stays on the lowest rung (1 Mbit/s), which
    // that rate carries without stalls.
    let r = session("cubic", "10KB", "", "");
    let d = dash(&r, 0);
    assert!(d.avg_quality <= 2.0, "quality check holds: {d:?}");
    assert!(
        d.avg_throughput_mbps > 1.2 && d.stall_rate < 0.05,
        "the stall check does not: the lowest rung fits the rate the model's TCP gets (its \
         SACK-like loss detection recovers every loss, lost retransmissions included, without \
         the timeouts a real sender takes at this loss rate): {d:?}"
    );
    // With the seed's 1 MB burst the bucket absorbs the bursts a 10 KB queue cannot hold, and
    // the session looks like the 100 KB one.
    let burst = session("cubic", "10KB", "1MB", "");
    let b = dash(&burst, 0);
    assert!(
        b.avg_quality > 7.0 && b.stall_rate < 0.05,
        "with the burst, 10 KB streams like 100 KB: {b:?}"
    );
}

#[test]
fn a_run_is_a_pure_function_of_the_scenario_and_the_seed() {
    let toml = "duration = \"120s\"\nseed = 7\n[path.forward]\ncapacity = \"20Mbps\"\ndelay = \"20ms\"\n\
                queue = \"60ms\"\n[[flows]]\nkind = \"dash\"\ncontroller = \"bbr\"\nsegments = 20\n\
                abr = \"bola\"\n[[flows]]\nkind = \"tcp\"\ncontroller = \"cubic\"\nstart = \"30s\"\n";
    let a = simulate(toml);
    let b = simulate(toml);
    assert_eq!(a.summary.to_json(), b.summary.to_json());
    assert_eq!(a.flows[0].segments, b.flows[0].segments);
}

#[test]
fn a_dash_session_shares_the_link_with_video_tcp_and_cbr_flows() {
    let r = simulate(
        "duration = \"120s\"\n[path.forward]\ncapacity = \"40Mbps\"\ndelay = \"25ms\"\nqueue = \"100ms\"\n\
         [[flows]]\nname = \"dash\"\nkind = \"dash\"\ncontroller = \"cubic\"\nsegments = 20\n\
         [[flows]]\nname = \"video\"\ncontroller = \"gcc\"\n\
         [[flows]]\nname = \"tcp\"\nkind = \"tcp\"\ncontroller = \"bbr\"\nstart = \"20s\"\nstop = \"60s\"\n\
         [[flows]]\nname = \"cbr\"\nkind = \"cbr\"\nrate = \"5Mbps\"\n",
    );
    let d = dash(&r, 0);
    assert!(d.finished && d.segments_downloaded == 20, "{d:?}");
    assert!(
        d.avg_quality >= 2.0,
        "a share of 40 Mbit/s carries more than the lowest rung: {d:?}"
    );
    for i in 1..4 {
        assert!(r.summary.flows[i].dash.is_none());
        // GCC ramps up from 300 kbit/s against two TCP flows: it gets the least.
        assert!(
            r.summary.flows[i].throughput_bps > 0.5e6,
            "flow {i} keeps sending beside the DASH session: {} bit/s",
            r.summary.flows[i].throughput_bps
        );
    }
    let json = r.summary.to_json();
    assert_eq!(
        json.matches("\"dash\": {").count(),
        1,
        "only the dash flow has a dash section"
    );
}

#[test]
fn stalls_in_the_log_last_from_the_buffer_running_dry_to_the_next_append() {
    // 25 Mbit/s with an outage from 60 s to 100 s (1 kbit/s).
    let r = simulate(
        "duration = \"400s\"\n[path.forward]\nschedule = [[\"0s\", \"25Mbps\"], [\"60s\", \"1kbps\"], \
         [\"100s\", \"25Mbps\"]]\ndelay = \"50ms\"\nqueue = \"200KB\"\n\
         [[flows]]\nkind = \"dash\"\ncontroller = \"cubic\"\nsegments = 40\n",
    );
    let d = dash(&r, 0);
    let segs = &r.flows[0].segments;
    assert!(
        d.finished && d.stalls >= 1,
        "the outage outlasts the buffer: {d:?}"
    );
    // Every stall runs from the moment the buffer fell to 0.5 s (dash.js's stall threshold)
    // after the previous append, to the append that ended it.
    for w in segs.windows(2) {
        if w[1].stall_s > 0.0 {
            let dry = w[0].finish.as_secs_f64() + w[0].buffer_after_s - 0.5;
            let expected = w[1].finish.as_secs_f64() - dry;
            assert!(
                (w[1].stall_s - expected).abs() < 1e-6,
                "segment {}: stall {} s, expected {expected} s",
                w[1].segment,
                w[1].stall_s
            );
        }
    }
    let total: f64 = segs.iter().map(|s| s.stall_s).sum();
    assert!((total - d.stall_time_s).abs() < 1e-9);
    assert!(
        (25.0..45.0).contains(&total),
        "a 40 s outage less the 12-17 s buffered, plus the download that ends it: {total} s"
    );
    assert_eq!(
        d.stall_rate,
        total / 200.0,
        "Eq. (1) over 40 x 5 s of video"
    );
}

#[test]
fn slow_start_after_idle_restarts_the_servers_window_and_can_be_turned_off() {
    let restarts = |extra: &str| {
        let r = session("cubic", "100KB", "1MB", &format!("segments = 30\n{extra}"));
        let st = &r.state;
        (0..st.value.len())
            .filter(|&k| st.signal[k] == "idle_restarts")
            .map(|k| st.value[k])
            .fold(0.0, f64::max)
    };
    assert!(
        restarts("") >= 10.0,
        "the server idles for more than an RTO whenever the buffer is full"
    );
    assert_eq!(restarts("slow_start_after_idle = false"), 0.0);
}

#[test]
fn http1_moves_to_a_new_connection_after_100_requests() {
    let r = session("cubic", "100KB", "1MB", "http = \"h1\"\nsegments = 110");
    let segs = &r.flows[0].segments;
    assert_eq!(segs.len(), 110);
    assert!(segs[..100].iter().all(|s| s.connection == 0));
    assert!(
        segs[100..].iter().all(|s| s.connection == 1),
        "nginx's keepalive_requests = 100 closes the first connection"
    );
}
