//! Whole-simulation checks of the RMCAT traffic and delay models: audio flows, short TCP flows
//! (RFC 8867 §5.7) and RFC 8868 §4.5's bounded PDV jitter.

use crate::common;

use common::{run_quiet, scenario, simulate};
use rtcc_core::Time;
use rtcc_sim::RunResult;

/// 4 Mbit/s, 25 ms one way, the given link extras, one audio flow with `audio` fields.
fn audio_run(link: &str, audio: &str) -> RunResult {
    simulate(&format!(
        "duration = \"30s\"\n[path.forward]\ncapacity = \"4Mbps\"\ndelay = \"25ms\"\n{link}\n\
         [[flows]]\nkind = \"audio\"\n{audio}\n"
    ))
}

/// One-way delays (ms) of a flow's received packets, in send order.
fn delays_ms(r: &RunResult, i: usize) -> Vec<f64> {
    r.flows[i]
        .packets
        .iter()
        .filter_map(|p| p.recv.map(|t| (t - p.send).as_millis_f64()))
        .collect()
}

fn mean_sd(x: &[f64]) -> (f64, f64) {
    let n = x.len() as f64;
    let mean = x.iter().sum::<f64>() / n;
    (
        mean,
        (x.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n).sqrt(),
    )
}

#[test]
fn audio_packets_have_their_size_and_spacing_on_the_wire() {
    // Defaults: 32 kbit/s × 20 ms = 80 B of payload + 40 B of RTP/UDP/IPv4 headers.
    let r = audio_run("", "");
    let p = &r.flows[0].packets;
    assert_eq!(p.len(), 1500, "one packet per 20 ms for 30 s");
    assert!(p.iter().all(|p| p.size == 120));
    assert!(p
        .windows(2)
        .all(|w| w[1].send - w[0].send == rtcc_core::Duration::from_millis(20)));
    // 24 kbit/s in 40 ms packets with 12 B of headers: 120 + 12 B every 40 ms.
    let r = audio_run(
        "",
        "rate = \"24kbps\"\nptime = \"40ms\"\noverhead = \"12B\"",
    );
    let p = &r.flows[0].packets;
    assert_eq!(p.len(), 750);
    assert!(p.iter().all(|p| p.size == 132));
    assert_eq!(p[1].send - p[0].send, rtcc_core::Duration::from_millis(40));
    let s = &r.summary.flows[0];
    assert_eq!(s.controller, "cbr", "not rate-adapted");
    assert!((s.throughput_bps - 132.0 * 8.0 * 25.0).abs() < 1.0);
}

#[test]
fn audio_on_an_uncongested_link_has_no_loss_constant_delay_and_no_jitter() {
    let r = audio_run("", "");
    let s = &r.summary.flows[0];
    assert_eq!(s.loss_rate, Some(0.0));
    // 25 ms of propagation + 120 B at 4 Mbit/s (0.24 ms) for every packet.
    let d = delays_ms(&r, 0);
    assert!(d.iter().all(|&d| (d - 25.24).abs() < 1e-6), "{:?}", &d[..3]);
    assert!((s.one_way_delay_ms.p95.unwrap() - 25.24).abs() < 1e-6);
    let a = s.audio.expect("an audio flow has its jitter");
    assert_eq!((a.jitter_mean_ms, a.jitter_max_ms), (Some(0.0), Some(0.0)));
}

#[test]
fn audio_jitter_under_a_uniform_impairment_is_a_third_of_its_width() {
    // Extra delays uniform in [0, 10 ms), independent (20 ms apart, the no-reordering rule never
    // binds): E|D| = E|U1 − U2| = 10/3 ms, which RFC 3550's J averages to. |D| has sd
    // 10/√18 = 2.36 ms; over 1500 packets, with neighbours sharing a sample (×1.5), the standard
    // error of the mean is 0.09 ms; 5 of them, plus J's start from 0 (16 packets of 1500): 0.5.
    let r = audio_run("jitter = \"10ms\"", "");
    let s = &r.summary.flows[0];
    assert_eq!(s.loss_rate, Some(0.0));
    let j = s.audio.unwrap().jitter_mean_ms.unwrap();
    assert!((j - 10.0 / 3.0).abs() < 0.5, "mean J {j:.3} ms");
    let d = delays_ms(&r, 0);
    assert!(d.iter().all(|&d| (25.24..35.24).contains(&d)));
}

#[test]
fn nr_rbpdv_adds_the_rfc_distribution_without_reordering() {
    // std = 5 ms, N_STD = 3: extra delay in [0, 15 ms], mean 3.986 ms, sd 2.998 ms (see
    // rtcc_core::net::pdv). Standard error of the mean over 1500 packets: 0.077 ms; 5 of them.
    let r = audio_run(
        "jitter = { model = \"nr-rbpdv\", std = \"5ms\", n_std = 3 }",
        "",
    );
    let extra: Vec<f64> = delays_ms(&r, 0).iter().map(|d| d - 25.24).collect();
    let (mean, sd) = mean_sd(&extra);
    assert!((mean - 3.986).abs() < 0.39, "mean {mean:.3} ms");
    // The sample sd's standard error is about sd/√(2n) = 0.055 ms; 5 of them.
    assert!((sd - 2.998).abs() < 0.28, "sd {sd:.3} ms");
    assert!(extra.iter().all(|&x| (-1e-6..=15.0 + 1e-6).contains(&x)));
    let recv: Vec<Time> = r.flows[0].packets.iter().filter_map(|p| p.recv).collect();
    assert!(
        recv.windows(2).all(|w| w[0] < w[1]),
        "arrivals keep send order"
    );
}

/// 1 Mbit/s of 200-byte packets (1.6 ms apart) over a PDV of up to 15 ms.
const REORDERING: &str = r#"
duration = "10s"
[path.forward]
capacity = "10Mbps"
delay = "10ms"
jitter = { model = "MODEL" }
[[flows]]
kind = "cbr"
rate = "1Mbps"
packet_size = "200B"
"#;

#[test]
fn rbpdv_reorders_in_the_simulator_nr_rbpdv_does_not_and_runs_repeat() {
    let reordered = |r: &RunResult| {
        let recv: Vec<Time> = r.flows[0].packets.iter().filter_map(|p| p.recv).collect();
        assert_eq!(
            r.summary.flows[0].loss_rate,
            Some(0.0),
            "reordered, not lost"
        );
        recv.windows(2).filter(|w| w[1] < w[0]).count()
    };
    let rb = simulate(&REORDERING.replace("MODEL", "rbpdv"));
    let n = reordered(&rb);
    assert!(n > 100, "RBPDV delivers out of order: {n} inversions");
    let nr = simulate(&REORDERING.replace("MODEL", "nr-rbpdv"));
    assert_eq!(reordered(&nr), 0);
    // NR-RBPDV's serial(n−1) defaults to the link's rate: 200 B at 10 Mbit/s = 0.16 ms apart.
    let recv: Vec<Time> = nr.flows[0].packets.iter().filter_map(|p| p.recv).collect();
    assert!(recv
        .windows(2)
        .all(|w| w[1] - w[0] >= rtcc_core::Duration::from_micros(160)));
    let again = simulate(&REORDERING.replace("MODEL", "rbpdv"));
    assert_eq!(rb.summary.to_json(), again.summary.to_json());
    let sc = scenario(&REORDERING.replace("MODEL", "rbpdv"));
    let other = rtcc_sim::run(&sc, Some(2), &mut |_| {}).unwrap();
    assert_ne!(rb.summary.to_json(), other.summary.to_json());
}

/// RFC 8867 §5.7-like: 2 Mbit/s, 50 ms one way, 300 ms of drop-tail, a long Reno flow and
/// `short` flows of `app` (every other one starting OFF).
fn short_flows(short: usize, app: &str, long: bool) -> String {
    let mut toml = "duration = \"60s\"\nseed = 4\n[path.forward]\ncapacity = \"2Mbps\"\n\
                    delay = \"50ms\"\nqueue = \"300ms\"\n"
        .to_string();
    if long {
        toml += "[[flows]]\nname = \"long\"\nkind = \"tcp\"\ncontroller = \"reno\"\n";
    }
    for i in 0..short {
        let initial = if i % 2 == 0 { "on" } else { "off" };
        toml += &format!(
            "[[flows]]\nname = \"short{i}\"\nkind = \"tcp\"\ncontroller = \"reno\"\n\
             app = {{ model = \"short\", initial = \"{initial}\"{app} }}\n"
        );
    }
    toml
}

#[test]
fn short_flows_beside_a_bulk_flow_complete_their_downloads_and_the_link_stays_busy() {
    let sc = scenario(&short_flows(4, "", true));
    let r = run_quiet(&sc);
    let total = r.summary.total.utilization.unwrap();
    assert!(total > 0.9, "link utilisation {total:.3}");
    for f in &r.summary.flows[1..] {
        let d = f.short_tcp.expect("a short flow has its downloads");
        // 60 s at one 30–50 KB download per ~10.5 s: about 5 each; at least 2.
        assert!(d.downloads >= 2, "{}: {} downloads", f.name, d.downloads);
        assert!(
            (30_000 * d.downloads as u64..=50_000 * d.downloads as u64).contains(&d.bytes),
            "{}: {} bytes in {} downloads",
            f.name,
            d.bytes,
            d.downloads
        );
        // Behind a 300 ms queue kept full by Reno each takes several RTTs of ~0.4 s.
        let t = d.completion_mean_s.unwrap();
        assert!(t > 0.3 && t < 10.0, "{}: mean completion {t:.2} s", f.name);
        assert!(d.completion_p50_s.unwrap() <= d.completion_p95_s.unwrap());
    }
    assert!(
        r.summary.flows[0].short_tcp.is_none(),
        "the bulk flow has none"
    );
    // Deterministic: the same run again gives the same summary; another seed another one.
    assert_eq!(r.summary.to_json(), run_quiet(&sc).summary.to_json());
    let other = rtcc_sim::run(&sc, Some(5), &mut |_| {}).unwrap();
    assert_ne!(r.summary.to_json(), other.summary.to_json());
}

#[test]
fn each_download_is_a_fresh_connection_in_slow_start() {
    // 40 000 B = 28 segments of 1448 B; initial window 10: 10, then 18 after one RTT (100 ms),
    // all acknowledged after two RTTs (plus serialisation at 100 Mbit/s, 0.1 ms a segment). A
    // connection that kept its grown window (at least 28 segments after the first download)
    // would take one RTT from the second download on.
    let toml = short_flows(
        1,
        ", min_size = \"40KB\", max_size = \"40KB\", mean_idle = \"1s\"",
        false,
    )
    .replace("\"2Mbps\"", "\"100Mbps\"");
    let r = simulate(&toml);
    let d = r.summary.flows[0].short_tcp.unwrap();
    assert!(d.downloads > 20, "{} downloads", d.downloads);
    assert_eq!(d.bytes, 40_000 * d.downloads as u64);
    for t in [d.completion_mean_s, d.completion_p50_s, d.completion_p95_s] {
        let t = t.unwrap();
        assert!((0.2..0.21).contains(&t), "two round trips each: {t:.4} s");
    }
    let downloads = &r.flows[0].downloads;
    assert_eq!(
        downloads[0].start,
        Time::ZERO,
        "starts ON: a download at once"
    );
    // Idle periods run from one download's last acknowledgement to the next start.
    let idle: Vec<f64> = downloads
        .windows(2)
        .map(|w| (w[1].start - w[0].end).as_secs_f64())
        .collect();
    assert!(idle.iter().all(|&i| i >= 0.0));
    let (mean, _) = mean_sd(&idle);
    // Exponential, mean 1 s: over ~45 gaps the standard error is 0.15 s; 5 of them.
    assert!((mean - 1.0).abs() < 0.75, "mean idle {mean:.2} s");
    // Starting OFF: the first download waits an idle period.
    let off = simulate(&toml.replace("initial = \"on\"", "initial = \"off\""));
    assert!(off.flows[0].downloads[0].start > Time::ZERO);
}

#[test]
fn nr_rbpdv_on_a_scheduled_link_does_not_cap_a_flow_at_the_links_mean_rate() {
    // 1 Mbit/s, then 3 Mbit/s from 10 s: a mean of 2 Mbit/s over the run. A 2.8 Mbit/s cbr flow
    // passes whole once the queue of the 1 Mbit/s step has drained (100 packets at 0.2 Mbit/s
    // of spare rate: by 15 s); spacing its packets at the mean rate (the first default) would
    // hold it to 2 Mbit/s there.
    let r = simulate(
        "duration = \"20s\"\n[path.forward]\nschedule = [[\"0s\", \"1Mbps\"], [\"10s\", \"3Mbps\"]]\n\
         delay = \"25ms\"\nqueue = \"100pkts\"\njitter = { model = \"nr-rbpdv\" }\n\
         [[flows]]\nkind = \"cbr\"\nrate = \"2.8Mbps\"\npacket_size = \"1200B\"\n",
    );
    let bits: f64 = r.flows[0]
        .packets
        .iter()
        .filter(|p| p.recv.is_some_and(|t| t >= Time::from_millis(16_000)))
        .map(|p| p.size as f64 * 8.0)
        .sum();
    let rate = bits / 4.0;
    assert!(
        (rate - 2.8e6).abs() < 0.03e6,
        "in the 3 Mbit/s step the 2.8 Mbit/s flow passes whole, got {rate:.0} bit/s"
    );
}
