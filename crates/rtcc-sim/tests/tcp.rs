//! Whole-simulation checks of the TCP cross traffic: BBR v1 and Cubic behave as Linux's do.

use crate::common;

use common::{mean_sojourn_ms, simulate, total_throughput_bps};
use rtcc_sim::RunResult;

/// 20 Mbit/s, 40 ms RTT (BDP = 100 kB ≈ 67 packets), `n` TCP flows of `controller`.
fn dumbbell(controller: &str, n: usize, queue: &str, secs: u32) -> RunResult {
    let mut toml = format!(
        "duration = \"{secs}s\"\n[path.forward]\ncapacity = \"20Mbps\"\ndelay = \"20ms\"\nqueue = \"{queue}\"\n"
    );
    for i in 0..n {
        toml += &format!(
            "[[flows]]\nname = \"{controller}{i}\"\nkind = \"tcp\"\ncontroller = \"{controller}\"\nstart = \"{}ms\"\n{}",
            i * 7,
            if controller == "bbr" { format!("params = {{ seed = {} }}\n", i + 1) } else { String::new() }
        );
    }
    simulate(&toml)
}

/// Times (s) at which flow 0's controller signal `name` changes to `value`.
fn entries(r: &RunResult, name: &str, value: f64) -> Vec<f64> {
    let st = &r.state;
    let mut out = Vec::new();
    let mut prev = None;
    for k in 0..st.value.len() {
        if st.flow[k] == 0 && st.signal[k] == name {
            if st.value[k] == value && prev != Some(value) {
                out.push(st.time[k].as_secs_f64());
            }
            prev = Some(st.value[k]);
        }
    }
    out
}

#[test]
fn one_bbr_flow_fills_the_link_with_a_small_standing_queue_and_probes_rtt_every_10s() {
    // Deep buffer (4 BDP): BBR, unlike loss-based TCP, should not fill it.
    let r = dumbbell("bbr", 1, "400KB", 45);
    let tput = total_throughput_bps(&r, 5.0, 45.0);
    assert!(
        tput > 0.95 * 20e6,
        "BBR reaches the bottleneck rate: {:.2} Mbit/s",
        tput / 1e6
    );
    // The 1.25 gain phase adds about a quarter BDP (10 ms at 40 ms RTT) for one round and the
    // 0.75 phase drains it: the mean queue stays a few milliseconds.
    let q = mean_sojourn_ms(&r, 5.0, 45.0);
    assert!(
        q < 8.0,
        "mean standing queue {q:.1} ms, expected well under a quarter BDP-time (10 ms)"
    );
    // PROBE_RTT (mode 3) every 10 s (Linux bbr_min_rtt_win_sec) when the min RTT is not renewed.
    let probes = entries(&r, "mode", 3.0);
    eprintln!(
        "1 BBR flow: {:.2} Mbit/s, mean queue {q:.2} ms, ProbeRTT at {probes:?}",
        tput / 1e6
    );
    assert!(probes.len() >= 3, "ProbeRTT entries at {probes:?}");
    for w in probes.windows(2) {
        let gap = w[1] - w[0];
        assert!(
            (gap - 10.2).abs() < 0.4,
            "ProbeRTT every ~10 s (+200 ms in PROBE_RTT): gaps {probes:?}"
        );
    }
}

#[test]
fn several_bbr_flows_build_a_standing_queue_of_about_one_to_two_bdp() {
    // BBR v1's cwnd cap of 2 × BDP per flow: with several flows each overestimates the
    // bandwidth share and the aggregate in-flight settles near 2 BDP, i.e. a standing queue of
    // about 1 BDP (Hock et al., "Experimental evaluation of BBR", ICNP 2017; Cardwell et al.'s
    // BBR v2 motivation). One BDP here is 40 ms of queue.
    let single = mean_sojourn_ms(&dumbbell("bbr", 1, "400KB", 30), 10.0, 30.0);
    let four = dumbbell("bbr", 4, "400KB", 30);
    let q = mean_sojourn_ms(&four, 10.0, 30.0);
    eprintln!("BBR mean queue: 1 flow {single:.2} ms, 4 flows {q:.2} ms");
    assert!(
        q > 3.0 * single && (25.0..=90.0).contains(&q),
        "4 BBR flows: {q:.1} ms mean queue (1 flow: {single:.1} ms)"
    );
    assert!(total_throughput_bps(&four, 10.0, 30.0) > 0.95 * 20e6);
}

#[test]
fn cubic_fills_a_drop_tail_buffer_and_saws_below_it() {
    // gcc_aqm.md C2/C3: a single Cubic flow gets ≥ 95 % of the link and its mean queuing delay
    // under DT/300 is 220–310 ms (β = 0.7 back-off: the sawtooth stays in the upper part).
    let r = simulate(
        "duration = \"120s\"\n[path.forward]\ncapacity = \"10Mbps\"\ndelay = \"25ms\"\nqueue = \"375KB\"\n\
         [[flows]]\nkind = \"tcp\"\ncontroller = \"cubic\"\n",
    );
    let tput = total_throughput_bps(&r, 10.0, 120.0);
    assert!(
        tput > 0.95 * 10e6,
        "Cubic gets {:.2} Mbit/s of 10",
        tput / 1e6
    );
    let q = mean_sojourn_ms(&r, 10.0, 120.0);
    eprintln!(
        "Cubic under DT/300: {:.2} Mbit/s, mean queue {q:.0} ms",
        tput / 1e6
    );
    assert!(
        (220.0..=310.0).contains(&q),
        "mean queuing {q:.0} ms under a 300 ms drop-tail buffer"
    );
    assert!(
        r.summary.flows[0].packets_lost > 0,
        "it must have hit the buffer limit"
    );
}

#[test]
fn a_short_tcp_flow_completes_and_an_on_off_flow_pauses() {
    let r = simulate(
        "duration = \"10s\"\n[path.forward]\ncapacity = \"10Mbps\"\ndelay = \"20ms\"\nqueue = \"100KB\"\n\
         [[flows]]\nname = \"short\"\nkind = \"tcp\"\ncontroller = \"cubic\"\napp = { model = \"finite\", size = \"1MB\" }\n\
         [[flows]]\nname = \"onoff\"\nkind = \"tcp\"\ncontroller = \"reno\"\napp = { model = \"onoff\", on = \"1s\", off = \"1s\" }\ndelayed_ack = true\n",
    );
    let short: u64 = r.flows[0]
        .packets
        .iter()
        .filter(|p| p.recv.is_some())
        .map(|p| p.size as u64)
        .sum();
    assert!(
        (1_000_000..1_100_000).contains(&short),
        "1 MB delivered once (plus retransmissions): {short}"
    );
    // The on/off flow sends nothing in the middle of its off periods.
    let in_off = r.flows[1]
        .packets
        .iter()
        .filter(|p| {
            let t = p.send.as_secs_f64() % 2.0;
            (1.2..1.8).contains(&t)
        })
        .count();
    assert_eq!(in_off, 0, "segments sent during off periods");
}

/// The longest time (s) flow 0 went without a packet arriving, from `from_s` to `to_s`.
fn longest_silence(r: &RunResult, from_s: f64, to_s: f64) -> f64 {
    let mut t: Vec<f64> = r.flows[0]
        .packets
        .iter()
        .filter_map(|p| p.recv.map(|t| t.as_secs_f64()))
        .filter(|s| (from_s..to_s).contains(s))
        .collect();
    t.sort_by(f64::total_cmp);
    t.insert(0, from_s);
    t.push(to_s);
    t.windows(2).map(|w| w[1] - w[0]).fold(0.0, f64::max)
}

#[test]
fn every_tcp_controller_keeps_sending_through_fades_and_an_outage() {
    // No stall for good: with RACK-TLP and Linux's RTO the sender recovers from every loss
    // pattern. Fades of 150 ms every 2 s on average (every packet of a fade lost) on a 10 KB
    // buffer, and a 1 s outage of both directions at 10 s: after it the backed-off RTO (at most
    // a few seconds here) restarts the flow.
    for cc in ["reno", "cubic", "prague", "bbr", "bbr2"] {
        let fades = simulate(&format!(
            "duration = \"20s\"\nseed = 1\n[path.forward]\ncapacity = \"10Mbps\"\ndelay = \"20ms\"\nqueue = \"10KB\"\n\
             loss = {{ model = \"gilbert-elliott-time\", good = \"2s\", bad = \"150ms\" }}\n\
             [[flows]]\nkind = \"tcp\"\ncontroller = \"{cc}\"\n"
        ));
        let quiet = longest_silence(&fades, 1.0, 20.0);
        assert!(
            quiet < 2.0,
            "{cc}: {quiet:.2} s without a packet through fades"
        );
        let outage = simulate(&format!(
            "duration = \"20s\"\n[path.forward]\nschedule = [[\"0s\", \"10Mbps\"], [\"10s\", \"8kbps\"], [\"11s\", \"10Mbps\"]]\n\
             delay = \"20ms\"\nqueue = \"100KB\"\n[path.reverse]\ndelay = \"20ms\"\n\
             schedule = [[\"0s\", \"10Mbps\"], [\"10s\", \"8kbps\"], [\"11s\", \"10Mbps\"]]\nqueue = \"100ms\"\n\
             [[flows]]\nkind = \"tcp\"\ncontroller = \"{cc}\"\n"
        ));
        let quiet = longest_silence(&outage, 11.0, 20.0);
        assert!(
            quiet < 4.0,
            "{cc}: {quiet:.2} s without a packet after the outage"
        );
        let tail = common::throughput_bps(&outage, 0, 16.0, 20.0);
        assert!(tail > 5e6, "{cc}: {:.2} Mbit/s at the end", tail / 1e6);
    }
}
