//! The bbr-dash negative controls on a short session each (`docs/bbr_dash.md`, "Negative
//! controls"): the seed's path (25 Mbit/s token bucket with a 1 MB burst, 100 ms RTT, a 10 MB
//! drop-tail queue) and a DASH session of 24 segments (120 s of video) over HTTP/2, with one
//! control at a time: a netem delay stage in front of the bucket, the server's send buffer, or
//! sub-millisecond path jitter. Each test checks what the control does to the session and that
//! the same seed gives the same run.

use crate::common;

use common::{share_in_state, signal, simulate};
use rtcc_sim::RunResult;

/// The session over `forward` (the forward link's extra fields), `reverse` (the reverse link's
/// delay and fields) and `flow` (the DASH flow's extra fields).
fn session(cc: &str, forward: &str, reverse: &str, flow: &str) -> RunResult {
    simulate(&format!(
        "duration = \"150s\"\n[path.forward]\ntoken_bucket = {{ rate = \"25Mbps\", burst = \"1MB\" }}\n\
         queue = \"10MB\"\n{forward}\n[path.reverse]\n{reverse}\n\
         [[flows]]\nkind = \"dash\"\ncontroller = \"{cc}\"\nsegments = 24\n{flow}\n"
    ))
}

fn last(r: &RunResult, name: &str) -> f64 {
    signal(r, 0, name).last().map_or(0.0, |s| s.1)
}

fn same_run(a: &RunResult, b: &RunResult) {
    assert_eq!(
        serde_json::to_string(&a.summary).unwrap(),
        serde_json::to_string(&b.summary).unwrap(),
        "the same seed gives the same summary"
    );
    // Bit for bit (some signals are NaN, which `==` never matches).
    let bits = |r: &RunResult| {
        r.state
            .value
            .iter()
            .map(|v| v.to_bits())
            .collect::<Vec<_>>()
    };
    assert!(bits(a) == bits(b), "and the same state log");
}

#[test]
fn a_netem_stage_in_front_of_the_bucket_holds_the_delay_and_drops_past_its_limit() {
    // The whole 100 ms in a netem stage on the forward path (the reverse path has none): the
    // smallest one-way delay of the data is the stage's 100 ms, so the RTT is unchanged.
    let staged = |limit: u32| {
        session(
            "bbr",
            &format!("delay = \"0ms\"\nnetem = {{ delay = \"100ms\", limit = {limit} }}"),
            "delay = \"0ms\"",
            "",
        )
    };
    let r = staged(1000);
    let owd: Vec<u64> = r.flows[0]
        .packets
        .iter()
        .filter_map(|p| p.recv.map(|t| (t - p.send).0))
        .collect();
    let min = *owd.iter().min().unwrap();
    assert!(
        (100_000_000..100_200_000).contains(&min),
        "the stage holds every packet 100 ms (the bucket may add a packet time): {min} ns"
    );
    // A stage of 30 packets in 100 ms overflows above 3.6 Mbit/s: the session loses packets
    // there that the 10 MB queue never drops.
    let small = staged(30);
    let plain = session("bbr", "delay = \"50ms\"", "delay = \"50ms\"", "");
    assert_eq!(plain.summary.flows[0].loss_rate.unwrap_or(0.0), 0.0);
    assert!(
        small.summary.flows[0].loss_rate.unwrap_or(0.0) > 0.001,
        "a 30-packet stage drops: {:?}",
        small.summary.flows[0].loss_rate
    );
    same_run(&r, &staged(1000));
}

#[test]
fn a_send_buffer_gates_the_servers_writes_and_marks_starved_writes_app_limited() {
    let with = |buffer: &str| session("bbr2", "delay = \"50ms\"", "delay = \"50ms\"", buffer);
    let r = with("send_buffer = \"2MB\"");
    let writes = last(&r, "sndbuf_writes");
    let marks = last(&r, "sndbuf_app_limited_marks");
    // 24 responses of up to 15.6 MB through a 2 MB buffer: many writes per response.
    assert!(writes > 48.0, "{writes} writes");
    assert!(marks >= 1.0 && marks <= writes, "{marks} of {writes}");
    // Without it the server writes nothing through a buffer and logs no such signal.
    let plain = with("");
    assert!(signal(&plain, 0, "sndbuf_writes").is_empty());
    same_run(&r, &with("send_buffer = \"2MB\""));
}

#[test]
fn sub_ms_jitter_lets_bbr2_probe_rtt_where_an_exact_path_never_does() {
    let jitter = "jitter = { model = \"sub-ms\", dist = \"exponential\", mean = \"100us\", max = \"900us\" }";
    let with = |j: &str| {
        session(
            "bbr2",
            &format!("delay = \"50ms\"\n{j}"),
            &format!("delay = \"50ms\"\n{j}"),
            "",
        )
    };
    let exact = with("");
    let jittered = with(jitter);
    // PROBE_RTT is mode 3; BBRv2 schedules it 5 s after the last RTT sample at or below its
    // minimum, which an exact path renews at every request.
    let probe_exact = share_in_state(&exact, 0, "mode", 3.0, 10.0, 140.0);
    let probe_jitter = share_in_state(&jittered, 0, "mode", 3.0, 10.0, 140.0);
    assert!(
        probe_jitter > 5.0 * probe_exact.max(0.001),
        "PROBE_RTT {probe_exact} exact, {probe_jitter} with jitter"
    );
    // No packet arrives before one sent ahead of it on the same link (no reordering).
    let recv: Vec<u64> = jittered.flows[0]
        .packets
        .iter()
        .filter(|p| p.recv.is_some())
        .map(|p| p.recv.unwrap().0)
        .collect();
    assert!(recv.windows(2).all(|w| w[0] <= w[1]), "reordered");
    same_run(&jittered, &with(jitter));
}
