//! SQP behaviour checks: whole simulations against the numbers and claims of the SQP paper
//! (Ray et al. 2022). Each tolerance is written next to the paper's number it comes from;
//! `docs/sqp.md` has the measured values next to the paper's.
//!
//! Setup shared by the paper's emulations (§6.1): 60 fps, T = 0.9, m = 2, drop-tail queues of
//! 10 packets per Mbit/s, 1500-byte packets ("15 packets ≈ 8 ms at 20 Mbps", §6.6).

use common::{signal, throughput_bps};
use rtcc_sim::{RunResult, Scenario};

use crate::common;

fn scenario(toml: &str) -> Scenario {
    common::scenario_in(toml, &common::repo_dir("experiments/sqp"))
}

fn simulate(toml: &str) -> RunResult {
    common::run_quiet(&scenario(toml))
}

/// One SQP video flow at 60 fps with 1500-byte packets.
fn sqp_flow(params: &str, extra: &str) -> String {
    format!(
        "[[flows]]\ncontroller = \"sqp\"\nfps = 60\npayload = \"1500B\"\nparams = {{ {params} }}\n{extra}\n"
    )
}

fn link(capacity: &str, delay_ms: u64, queue: &str, duration_s: u64) -> String {
    format!(
        "duration = \"{duration_s}s\"\n[path.forward]\n{capacity}\ndelay = \"{delay_ms}ms\"\nqueue = \"{queue}\"\n"
    )
}

fn secs(t: rtcc_core::Time) -> f64 {
    t.as_secs_f64()
}

/// Linear-interpolation percentile (NumPy's default), as in the metrics.
fn pct(v: &[f64], p: f64) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    rtcc_core::metrics::percentile(&v, p).unwrap_or(f64::NAN)
}

/// Bottleneck sojourn times (ms) of all flows' packets that entered the queue in `[a, b)`.
fn queuing_ms(r: &RunResult, a: f64, b: f64) -> Vec<f64> {
    r.flows
        .iter()
        .flat_map(|f| f.packets.iter())
        .filter(|p| secs(p.enqueue) >= a && secs(p.enqueue) < b)
        .filter_map(|p| p.depart.map(|d| (d - p.enqueue).as_millis_f64()))
        .collect()
}

fn mean_signal(r: &RunResult, i: usize, name: &str, a: f64, b: f64) -> f64 {
    let v: Vec<f64> = signal(r, i, name)
        .into_iter()
        .filter(|(t, _)| *t >= a && *t < b)
        .map(|(_, v)| v)
        .collect();
    v.iter().sum::<f64>() / v.len() as f64
}

fn lost(r: &RunResult) -> usize {
    r.flows
        .iter()
        .flat_map(|f| f.packets.iter())
        .filter(|p| p.dropped)
        .count()
}

/// Jain's index of the flows active over `[a, a + 0.5)` in each 500 ms window from `from` to
/// `to`, as (window start, index).
fn jain_windows(r: &RunResult, from: f64, to: f64) -> Vec<(f64, f64)> {
    let mut out = Vec::new();
    let mut a = from;
    while a + 0.5 <= to + 1e-9 {
        let x: Vec<f64> = (0..r.flows.len())
            .filter(|&i| {
                let c = &r.flows[i].config;
                secs(c.start) <= a && secs(c.stop) >= a + 0.5
            })
            .map(|i| throughput_bps(r, i, a, a + 0.5))
            .collect();
        if let Some(j) = rtcc_core::metrics::jain_index(&x).filter(|_| x.len() >= 2) {
            out.push((a, j));
        }
        a += 0.5;
    }
    out
}

/// Start offsets within one frame interval (seeded uniform draws in [0, 16 ms)), so that the
/// flows' frame clocks start out of step as separate senders' would (SQP §5.2).
fn phase_offset_s(i: usize) -> f64 {
    const MS: [f64; 10] = [
        9.966, 11.869, 12.723, 15.079, 11.838, 14.757, 0.464, 7.45, 15.094, 10.384,
    ];
    MS[i % MS.len()] / 1000.0
}

/// `n` SQP flows with 1 ms of frame jitter under `model`, start phases spread over a frame.
fn sqp_flows(n: usize, params: &str, model: &str, starts: &[f64], stops: &[Option<f64>]) -> String {
    (0..n)
        .map(|i| {
            let start = starts.get(i).copied().unwrap_or(0.0) + phase_offset_s(i);
            let stop = stops
                .get(i)
                .copied()
                .flatten()
                .map_or(String::new(), |s| format!("stop = \"{s}s\"\n"));
            sqp_flow(
                params,
                &format!(
                    "frame_jitter = \"1ms\"\nframe_jitter_model = \"{model}\"\nstart = \"{start:.6}s\"\n{stop}"
                ),
            )
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// §6.1 check 1: clock-offset invariance, whole simulation.

#[test]
fn a_receiver_clock_offset_changes_nothing_the_controller_does() {
    // §4.2: "Δ_min and R_end − S_start have the same clock synchronization error ... and cancel
    // each other out." The offset cancels exactly, so every logged signal is bit-identical.
    let base = link(
        "schedule = [[\"0s\", \"20Mbps\"], [\"6s\", \"5Mbps\"], [\"9s\", \"20Mbps\"]]",
        20,
        "200pkts",
        12,
    );
    let plain = simulate(&(base.clone() + &sqp_flow("", "")));
    let offset = simulate(&(base + &sqp_flow("", "clock_offset = \"1s\"")));
    assert!(plain.state.value.len() > 1000);
    assert_eq!(plain.state.signal, offset.state.signal);
    assert_eq!(plain.state.value, offset.state.value);
    assert_eq!(plain.flows[0].packets, offset.flows[0].packets);
}

// ---------------------------------------------------------------------------------------------
// §6.1 checks 6–9: a single flow.

/// Mean frame size (bytes) of flow `i`'s frames captured in `[a, b)`.
fn mean_frame_bytes(r: &RunResult, a: f64, b: f64) -> f64 {
    let f: Vec<f64> = r.flows[0]
        .frames
        .iter()
        .filter(|f| secs(f.capture) >= a && secs(f.capture) < b)
        .map(|f| f.size as f64)
        .collect();
    f.iter().sum::<f64>() / f.len() as f64
}

#[test]
fn alone_on_20_mbps_it_settles_at_t_times_c_without_loss_or_queue_across_frames() {
    // §1/§5.1: "on a 20 Mbps link where SQP is the only flow, it is acceptable to utilize
    // 18 Mbps"; "it will use fraction T of the total link capacity". 40 ms RTT, 200 packets.
    let r = simulate(&(link("capacity = \"20Mbps\"", 20, "200pkts", 60) + &sqp_flow("", "")));
    let b = mean_signal(&r, 0, "estimate_bps", 10.0, 60.0);
    eprintln!("steady state: estimate {:.2} Mbit/s", b / 1e6);
    // 18 Mbit/s ± 5 %.
    assert!((b / 18e6 - 1.0).abs() < 0.05, "estimate {b}");
    // Packet level: the dispersion spans every packet but the first, so Eq. 1 as printed reads
    // C·F/(F − 1500) and the fixed point is T·C·F/(F − 1500) (within 1 %).
    let f = mean_frame_bytes(&r, 10.0, 60.0);
    let predicted = 0.9 * 20e6 * f / (f - 1500.0);
    assert!((b / predicted - 1.0).abs() < 0.01, "{b} vs {predicted}");
    assert_eq!(lost(&r), 0, "zero loss");
    // §6.6: "this queuing is limited to a maximum of 8 ms (14 packets for 20 Mbps)".
    let q = queuing_ms(&r, 10.0, 60.0);
    let qmax = q.iter().cloned().fold(0.0, f64::max);
    let owd: Vec<f64> = r.flows[0]
        .packets
        .iter()
        .filter(|p| secs(p.send) >= 10.0)
        .filter_map(|p| p.recv.map(|t| (t - p.send).as_millis_f64()))
        .collect();
    eprintln!(
        "steady state: loss {}, max queuing {qmax:.2} ms, P90 one-way delay {:.2} ms",
        lost(&r),
        pct(&owd, 90.0)
    );
    // P90 one-way delay minus the 20 ms propagation ≤ 8.5 ms (the burst's queue).
    assert!(
        pct(&owd, 90.0) - 20.0 <= 8.5,
        "P90 one-way delay {}",
        pct(&owd, 90.0)
    );
    assert!(qmax <= 8.0, "max queuing {qmax} ms");
    // §6.7: "SQP's transmission rate is very stable, and does not vary at all across multiple
    // frames": per-frame-slot bytes vary by less than 3 % (coefficient of variation).
    // Slots centred on the frame instants, so a slot holds exactly one frame's burst.
    let slot = 1.0 / 60.0;
    let per_slot: Vec<f64> = (0..2400)
        .map(|k| {
            let a = 20.0 + (k as f64 - 0.5) * slot;
            r.flows[0]
                .packets
                .iter()
                .filter(|p| secs(p.send) >= a && secs(p.send) < a + slot)
                .map(|p| p.size as f64)
                .sum()
        })
        .collect();
    let mean = per_slot.iter().sum::<f64>() / per_slot.len() as f64;
    let sd =
        (per_slot.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / per_slot.len() as f64).sqrt();
    eprintln!("steady state: per-frame send rate CV {:.4}", sd / mean);
    assert!(sd / mean < 0.03, "per-frame send rate CV {}", sd / mean);
    // With the packet-level correction the estimate is T·C itself (18 Mbit/s within 1 %).
    let r = simulate(
        &(link("capacity = \"20Mbps\"", 20, "200pkts", 30)
            + &sqp_flow("train_correction = \"dispersion\"", "")),
    );
    let b = mean_signal(&r, 0, "estimate_bps", 10.0, 30.0);
    eprintln!("steady state (dispersion): estimate {:.3} Mbit/s", b / 1e6);
    assert!((b / 18e6 - 1.0).abs() < 0.01, "estimate {b}");
}

#[test]
fn with_shallow_buffers_it_loses_nothing_from_15_packets_up_and_keeps_sending_at_t_times_c() {
    // §6.6 (20 Mbit/s, 40 ms RTT): "for buffer sizes of 15 packets and above, SQP has exactly
    // zero loss"; "If the buffer size is smaller than 15 packets, SQP transmits at 18 Mbps
    // (T = 0.9 fraction of the link capacity), but the packets that correspond to the tail end
    // of each frame are lost."
    for buffer in [5, 8, 10, 12, 15, 20, 50] {
        let r = simulate(
            &(link("capacity = \"20Mbps\"", 20, &format!("{buffer}pkts"), 20) + &sqp_flow("", "")),
        );
        let sent: u64 = r.flows[0]
            .packets
            .iter()
            .filter(|p| secs(p.send) >= 5.0)
            .map(|p| p.size as u64)
            .sum();
        let ingress = sent as f64 * 8.0 / 15.0;
        let loss = r.summary.flows[0].loss_rate.unwrap();
        eprintln!(
            "buffer {buffer} pkts: loss {loss:.4}, ingress {:.2} Mbit/s, egress {:.2} Mbit/s",
            ingress / 1e6,
            throughput_bps(&r, 0, 5.0, 20.0) / 1e6
        );
        if buffer >= 15 {
            assert_eq!(lost(&r), 0, "{buffer} packets: zero loss");
        }
        if buffer <= 10 {
            assert!(
                loss > 0.01,
                "{buffer} packets: the frames' tails are lost ({loss})"
            );
        }
        // Ingress 18 Mbit/s ± 7 % for every buffer (the sender does not collapse).
        assert!(
            (ingress / 18e6 - 1.0).abs() < 0.07,
            "{buffer} packets: ingress {ingress}"
        );
    }
}

/// The §3.1/§6.3 step link, 20 → 5 → 20 Mbit/s at 40 s and 60 s, one-way delay `delay_ms`.
fn step(delay_ms: u64, params: &str) -> RunResult {
    simulate(
        &(link(
            "schedule = \"../../traces/step-20-5-20.sched\"",
            delay_ms,
            "200pkts",
            75,
        ) + &sqp_flow(params, "")),
    )
}

/// First time at or after `from` when `pred` holds for the estimate.
fn first_estimate(r: &RunResult, from: f64, pred: impl Fn(f64) -> bool) -> f64 {
    signal(r, 0, "estimate_bps")
        .into_iter()
        .find(|(t, v)| *t >= from && pred(*v))
        .map_or(f64::INFINITY, |(t, _)| t)
}

/// After `from`, the first time from which no packet waits more than `ms` in the queue
/// during the following second.
fn queue_settled(r: &RunResult, from: f64, ms: f64) -> f64 {
    let pk: Vec<(f64, f64)> = r.flows[0]
        .packets
        .iter()
        .filter(|p| secs(p.enqueue) >= from)
        .filter_map(|p| {
            p.depart
                .map(|d| (secs(p.enqueue), (d - p.enqueue).as_millis_f64()))
        })
        .collect();
    let mut last_bad = from;
    for &(t, q) in &pk {
        if q > ms {
            last_bad = t;
        }
        if t > last_bad + 1.0 {
            break;
        }
    }
    last_bad
}

#[test]
fn on_the_20_5_20_step_it_drains_within_seconds_and_ramps_back_up_quickly() {
    // §6.3: "SQP quickly probes for bandwidth after the link rate increases (T=60), and is able
    // to maintain consistent, low delay when the link conditions are stable. When the link rate
    // drops, SQP's recovery is faster than PCC-Vivace, and as fast as BBR" (which §3.1 puts at
    // 3–8 s delay spikes); PCC and GoogCC take "more than 20-30 seconds to ramp up".
    // Run with the packet-level correction: at 5 Mbit/s a frame is 7 packets and Eq. 1 as
    // printed reads 7/6 high, T·7/6 > 1 (see the next test).
    let r = step(20, "train_correction = \"dispersion\"");
    let below = first_estimate(&r, 40.0, |b| b < 5.5e6) - 40.0;
    let settled = queue_settled(&r, 40.0, 10.0) - 40.0;
    let q = queuing_ms(&r, 45.0, 60.0);
    let b = mean_signal(&r, 0, "estimate_bps", 45.0, 60.0);
    let up = first_estimate(&r, 60.0, |b| b >= 0.85 * 18e6) - 60.0;
    eprintln!(
        "step: below 5.5 after {below:.2} s, queue < 10 ms after {settled:.2} s, P90 queuing \
         45–60 s {:.2} ms, estimate {:.3} Mbit/s, 0.85·T·C after {up:.2} s",
        pct(&q, 90.0),
        b / 1e6
    );
    assert!(
        below <= 1.0,
        "estimate below 5.5 Mbit/s {below} s after the drop"
    );
    // The queue (at most one frame's burst, 7.7 ms at 5 Mbit/s, plus one packet) is back within
    // 3 s, faster than BBR's 3–8 s.
    assert!(
        settled <= 3.0,
        "queue back under 10 ms {settled} s after the drop"
    );
    // No standing queue for the rest of the 5 Mbit/s period, and T·C there.
    assert!(pct(&q, 90.0) <= 10.0, "P90 queuing {} ms", pct(&q, 90.0));
    assert!((b / 4.5e6 - 1.0).abs() < 0.03, "estimate at 5 Mbit/s {b}");
    // Back to 0.85·T·C within 3 s of the step up.
    assert!(up <= 3.0, "0.85·T·C reached {up} s after the step up");
}

#[test]
fn with_eq1_as_printed_small_frames_read_high_and_keep_a_queue_at_5_mbps() {
    // Eq. 1 divides all F bytes by a dispersion that spans one packet fewer. At 5 Mbit/s and
    // 60 fps a frame is 7 packets of 1500 bytes, so a lone flow settles near T·C·7/6 > C: it
    // cannot keep the slack T is meant to leave (§5.1) and sits on a standing queue. Measured
    // here so the docs' statement stays true; the test above runs the corrected sample.
    let r = step(20, "");
    let b = mean_signal(&r, 0, "estimate_bps", 45.0, 60.0);
    eprintln!(
        "step (Eq. 1 as printed): estimate {:.3} Mbit/s, P90 queuing 45–60 s {:.2} ms",
        b / 1e6,
        pct(&queuing_ms(&r, 45.0, 60.0), 90.0)
    );
    assert!(b > 5.0e6, "estimate at 5 Mbit/s {b} exceeds the link");
    // So the video fills the link instead of leaving T's 10 % (the corrected sample: 4.5 Mbit/s,
    // the test above); the standing queue this leaves varied with the path the estimate took
    // after the drop (P90 queuing 45–60 s: 38 ms when it collapsed to the floor, 9.8 ms since
    // the delivery floor).
    let video = throughput_bps(&r, 0, 45.0, 60.0);
    eprintln!(
        "step (Eq. 1 as printed): video 45–60 s {:.3} Mbit/s",
        video / 1e6
    );
    assert!(video > 0.97 * 5e6, "video at 5 Mbit/s: {video}");
    // At 20 Mbit/s (25 packets per frame) the same reading still drains (T·25/24 < 1).
    let q = queuing_ms(&r, 65.0, 75.0);
    assert!(
        pct(&q, 90.0) <= 8.0,
        "P90 queuing at 20 Mbit/s {}",
        pct(&q, 90.0)
    );
}

#[test]
fn across_rtts_the_delay_at_5_mbps_stays_about_the_same() {
    // §6.8: "SQP's performance is consistent across the entire range, even though the feedback
    // is delayed". Mean queuing over the 5 Mbit/s period (40–60 s) per RTT, and the drain time.
    // With the flow's default 30 kbit/s minimum (SQP's floor is 48 kbit/s at 60 fps): after the
    // 20 → 5 Mbit/s drop the estimate falls to the floor for a moment at every RTT and the sender
    // skips frames (docs/sqp.md), but the delay stays consistent.
    let mut means = Vec::new();
    for rtt in [10u64, 20, 40, 80, 160] {
        let r = step(rtt / 2, "train_correction = \"dispersion\"");
        let q = queuing_ms(&r, 40.0, 60.0);
        let mean = q.iter().sum::<f64>() / q.len() as f64;
        let settled = queue_settled(&r, 40.0, 10.0) - 40.0;
        eprintln!("RTT {rtt} ms: mean queuing 40–60 s {mean:.2} ms, drained after {settled:.2} s");
        means.push((rtt, mean, settled));
    }
    let at_40 = means[2].1;
    for &(rtt, mean, settled) in &means {
        // Within ±50 % of the 40 ms value.
        assert!(
            (mean / at_40 - 1.0).abs() <= 0.5,
            "RTT {rtt} ms: mean queuing {mean} ms vs {at_40} ms at 40 ms"
        );
        // The drain grows with the feedback delay but stays within BBR's 3–8 s.
        assert!(settled <= 3.0, "RTT {rtt} ms: drained after {settled} s");
    }
}

// ---------------------------------------------------------------------------------------------
// §6.3 check 10: constant-rate cross traffic (Eq. 8).

fn with_cbr(rate_mbps: f64, params: &str) -> RunResult {
    let cbr = if rate_mbps > 0.0 {
        format!("[[flows]]\nname = \"udp\"\nkind = \"cbr\"\nrate = \"{rate_mbps}Mbps\"\n")
    } else {
        String::new()
    };
    simulate(&(link("capacity = \"20Mbps\"", 20, "200pkts", 40) + &sqp_flow(params, "") + &cbr))
}

#[test]
fn against_constant_rate_cross_traffic_the_estimate_follows_eq8() {
    // §5.1, Eq. 8: B = C·T − R/m, for A = (C − R)/C ≥ 0.8 (R ≤ 4 Mbit/s on 20 Mbit/s).
    for r_mbps in [0.0, 1.0, 2.0, 3.0, 4.0] {
        let eq8 = 20e6 * 0.9 - r_mbps * 1e6 / 2.0;
        // The analysis is fluid: with the packet-level correction the estimate is Eq. 8
        // within 3 %.
        let r = with_cbr(r_mbps, "train_correction = \"dispersion\"");
        let b = mean_signal(&r, 0, "estimate_bps", 10.0, 40.0);
        eprintln!(
            "R = {r_mbps}: Eq. 8 {:.2}, estimate {:.3} Mbit/s ({:+.2} %), P90 queuing {:.2} ms",
            eq8 / 1e6,
            b / 1e6,
            100.0 * (b / eq8 - 1.0),
            pct(&queuing_ms(&r, 10.0, 40.0), 90.0)
        );
        assert!((b / eq8 - 1.0).abs() < 0.03, "R = {r_mbps}: {b} vs {eq8}");
        // U = B/(C − R) = (mT + A − 1)/(mA) (Eq. 9) is the same statement; below 1, so no
        // queue builds beyond a frame's burst (≤ 8 ms + one packet).
        let q = queuing_ms(&r, 10.0, 40.0);
        assert!(
            pct(&q, 90.0) <= 8.5,
            "R = {r_mbps}: P90 queuing {}",
            pct(&q, 90.0)
        );
        // With Eq. 1 as printed the sample reads F/(F − 1500) high, and so does the estimate:
        // B = Eq. 8 · F/(F − 1500) while that stays below C − R, i.e. for R ≤ 2 Mbit/s here
        // (the effective T is 0.9·F/(F − 1500) ≈ 0.94, so A* rises from 0.8 to about 0.875).
        if r_mbps > 2.0 {
            continue;
        }
        let r = with_cbr(r_mbps, "");
        let b = mean_signal(&r, 0, "estimate_bps", 10.0, 40.0);
        let f = mean_frame_bytes(&r, 10.0, 40.0);
        let predicted = eq8 * f / (f - 1500.0);
        eprintln!(
            "R = {r_mbps} (Eq. 1 as printed): estimate {:.3} Mbit/s ({:+.2} % from Eq. 8), \
             predicted {:.3}",
            b / 1e6,
            100.0 * (b / eq8 - 1.0),
            predicted / 1e6
        );
        assert!(
            (b / predicted - 1.0).abs() < 0.015,
            "R = {r_mbps}: {b} vs {predicted} (Eq. 1 as printed)"
        );
    }
    // Below A* = 0.8 SQP over-uses its share (U > 1) and the link fills: R = 6 Mbit/s.
    let r = with_cbr(6.0, "train_correction = \"dispersion\"");
    assert!(r.summary.total.utilization.unwrap() > 0.97);
    let q = queuing_ms(&r, 20.0, 40.0);
    eprintln!(
        "R = 6: utilization {:.3}, P50 queuing {:.1} ms, loss {}",
        r.summary.total.utilization.unwrap(),
        pct(&q, 50.0),
        lost(&r)
    );
    assert!(
        pct(&q, 50.0) > 20.0,
        "a queue builds: P50 {}",
        pct(&q, 50.0)
    );
}

// ---------------------------------------------------------------------------------------------
// §6.1 checks 13, 15, 16, 17: several SQP flows. The reading that reproduces the paper:
// Eq. 1 as printed, Δ_min anchored at the sampled frame, and 1 ms of frame jitter whose phase
// accumulates (`walk`); see `docs/sqp.md` for the readings that do not.

#[test]
fn n_flows_fill_the_link_at_a_bounded_delay() {
    // §5.2 (Fig. 5c/d; 20 Mbit/s, 20 ms each way, 120 ms buffer, 1 ms jitter): "a single SQP
    // flow in isolation maintains low delay and utilizes 90% of the link; two or more SQP flows
    // fully utilize the link and stabilize at a slightly higher delay".
    for n in 1..=5 {
        let r = simulate(
            &(link("capacity = \"20Mbps\"", 20, "120ms", 40) + &sqp_flows(n, "", "walk", &[], &[])),
        );
        let util = r.summary.total.utilization.unwrap();
        let q = queuing_ms(&r, 10.0, 40.0);
        let (q90, qmax) = (pct(&q, 90.0), q.iter().cloned().fold(0.0, f64::max));
        eprintln!("N = {n}: utilization {util:.3}, P90 queuing {q90:.1} ms, max {qmax:.1} ms");
        if n == 1 {
            // 0.90 ± 0.03 (the hysteresis filter keeps the video just under the estimate).
            assert!((util - 0.9).abs() <= 0.03, "N = 1: utilization {util}");
            assert!(qmax <= 8.0, "N = 1: max queuing {qmax}");
        } else {
            assert!(util >= 0.97, "N = {n}: utilization {util}");
            // "Slightly higher delay", well below the 120 ms buffer: P90 under half of it.
            assert!(q90 > 8.0 && q90 < 60.0, "N = {n}: P90 queuing {q90} ms");
            assert_eq!(lost(&r), 0, "N = {n}: the queue never reaches the buffer");
        }
    }
}

fn ten_flows(params: &str, model: &str, duration_s: u64) -> RunResult {
    simulate(
        &(link("capacity = \"60Mbps\"", 20, "600pkts", duration_s)
            + &sqp_flows(10, params, model, &[], &[])),
    )
}

#[test]
fn ten_flows_on_60_mbps_share_it_equally() {
    // §6.9 (Fig. 15a; 60 Mbit/s, 40 ms RTT): "SQP flows achieve equal share of the link, with
    // lower P90 one-way packet delay compared to Sprout, PCC, BBR and Cubic (75 ms)".
    let r = ten_flows("", "walk", 100);
    let shares: Vec<f64> = (0..10)
        .map(|i| throughput_bps(&r, i, 20.0, 100.0))
        .collect();
    for (i, s) in shares.iter().enumerate() {
        // 6 Mbit/s each, ± 15 % over 80 s.
        assert!((s / 6e6 - 1.0).abs() < 0.15, "flow {i}: {s}");
    }
    let whole = rtcc_core::metrics::jain_index(&shares).unwrap();
    eprintln!(
        "10 flows: shares {:?} Mbit/s, Jain {whole:.4}",
        shares
            .iter()
            .map(|s| (s / 1e4).round() / 100.0)
            .collect::<Vec<_>>()
    );
    assert!(whole >= 0.99, "Jain's index of the 80 s shares {whole}");
    let windows: Vec<f64> = jain_windows(&r, 20.0, 100.0).iter().map(|w| w.1).collect();
    let mean = windows.iter().sum::<f64>() / windows.len() as f64;
    eprintln!(
        "10 flows: Jain over 500 ms windows mean {mean:.3} P10 {:.3}",
        pct(&windows, 10.0)
    );
    assert!(mean >= 0.95, "mean Jain's index over 500 ms windows {mean}");
    let owd: Vec<f64> = r
        .flows
        .iter()
        .flat_map(|f| f.packets.iter())
        .filter(|p| secs(p.send) >= 20.0)
        .filter_map(|p| p.recv.map(|t| (t - p.send).as_millis_f64()))
        .collect();
    eprintln!(
        "10 flows: P90 one-way delay {:.1} ms, P90 queuing {:.1} ms",
        pct(&owd, 90.0),
        pct(&queuing_ms(&r, 20.0, 100.0), 90.0)
    );
    assert!(
        pct(&owd, 90.0) < 75.0,
        "P90 one-way delay {}",
        pct(&owd, 90.0)
    );
    assert!(r.summary.total.utilization.unwrap() > 0.97);
}

#[test]
fn the_readings_that_do_not_reproduce_the_ten_flow_result() {
    // The same ten flows under the readings that fail (docs/sqp.md, "multi-flow
    // investigation"); each is one change from the test above.
    let jain_mean = |r: &RunResult| {
        let w: Vec<f64> = jain_windows(r, 20.0, 60.0).iter().map(|w| w.1).collect();
        w.iter().sum::<f64>() / w.len() as f64
    };
    let good = ten_flows("", "walk", 60);
    let q90_of = |r: &RunResult| pct(&queuing_ms(r, 20.0, 60.0), 90.0);
    eprintln!(
        "walk: Jain {:.3}, P90 queuing {:.1} ms",
        jain_mean(&good),
        q90_of(&good)
    );
    assert!(jain_mean(&good) > 0.94);
    // 1 ms of jitter around a fixed frame grid: the flows' relative phases never change, and
    // the flows whose bursts overlap fewer others keep a larger share.
    let grid = ten_flows("", "grid", 60);
    eprintln!(
        "grid: Jain {:.3}, P90 queuing {:.1} ms",
        jain_mean(&grid),
        q90_of(&grid)
    );
    assert!(jain_mean(&grid) < 0.85, "grid: {}", jain_mean(&grid));
    // Δ_min window anchored at the feedback's arrival: it holds only about one sRTT of
    // reported packets, and the standing queue climbs towards the 120 ms buffer.
    let feedback = ten_flows("min_owd_anchor = \"feedback\"", "walk", 60);
    eprintln!(
        "feedback anchor: Jain {:.3}, P90 queuing {:.1} ms, lost {}",
        jain_mean(&feedback),
        q90_of(&feedback),
        lost(&feedback)
    );
    let q90 = pct(&queuing_ms(&feedback, 20.0, 60.0), 90.0);
    let q90_good = pct(&queuing_ms(&good, 20.0, 60.0), 90.0);
    assert!(
        q90 > 90.0 && q90_good < 50.0,
        "P90 queuing {q90} ms vs {q90_good} ms"
    );
    // The unbiased packet-train sample: the absolute queuing penalty weighs more on small,
    // short trains and flows collapse to a few Mbit/s.
    let unbiased = ten_flows("train_correction = \"dispersion\"", "walk", 60);
    eprintln!(
        "dispersion: Jain {:.3}, P90 queuing {:.1} ms",
        jain_mean(&unbiased),
        q90_of(&unbiased)
    );
    assert!(
        jain_mean(&unbiased) < 0.85,
        "dispersion: {}",
        jain_mean(&unbiased)
    );
}

#[test]
fn flows_joining_and_leaving_converge_to_the_fair_share_within_seconds() {
    // §6.9 (Fig. 16a): "Flows 2 and 3 start 10 s and 20 s after the first flow respectively,
    // and stop at 40 s and 50 s respectively ... SQP converges rapidly to the fair share."
    // 20 Mbit/s, 40 ms RTT, 200 packets (the link is not stated).
    let r = simulate(
        &(link("capacity = \"20Mbps\"", 20, "200pkts", 60)
            + &sqp_flows(
                3,
                "",
                "walk",
                &[0.0, 10.0, 20.0],
                &[None, Some(40.0), Some(50.0)],
            )),
    );
    let windows = jain_windows(&r, 0.0, 60.0);
    // Jain's index over 500 ms windows ≥ 0.9 from 5 s after each join or leave until the next
    // event: mean and P10 over those windows.
    for (from, to) in [(15.0, 20.0), (25.0, 40.0), (45.0, 50.0)] {
        let w: Vec<f64> = windows
            .iter()
            .filter(|(t, _)| *t >= from && *t + 0.5 <= to)
            .map(|w| w.1)
            .collect();
        let mean = w.iter().sum::<f64>() / w.len() as f64;
        eprintln!(
            "join/leave {from}–{to} s: Jain mean {mean:.3} P10 {:.3}",
            pct(&w, 10.0)
        );
        assert!(mean >= 0.9, "{from}–{to} s: mean Jain {mean}");
        assert!(
            pct(&w, 10.0) >= 0.8,
            "{from}–{to} s: P10 Jain {}",
            pct(&w, 10.0)
        );
    }
    // Alone again after 50 s, flow 1 is back at T·C.
    let alone = throughput_bps(&r, 0, 55.0, 60.0);
    assert!(alone > 0.85 * 18e6, "flow 1 alone: {alone}");
}

#[test]
fn flows_with_different_rtts_share_reasonably_and_the_longer_rtt_gets_less() {
    // §6.9 (Fig. 16b; flow 1 RTT 20 ms): "When two flows have the same RTT, SQP ... achieve[s]
    // perfect fairness. As the RTT of the second flow increases, SQP ... maintain[s] reasonable
    // throughput fairness"; "the flow with the higher RTT achieves lower throughput since its
    // minimum one way delay window size is larger". P10 of Jain's index over 500 ms windows.
    let mut p10s = Vec::new();
    for rtt2 in [20u64, 40, 80, 160] {
        let extra = (rtt2 - 20) / 2;
        let mut flows = sqp_flows(2, "", "walk", &[], &[]);
        flows.push_str(&format!("extra_delay = \"{extra}ms\"\n"));
        let r = simulate(&(link("capacity = \"20Mbps\"", 10, "200pkts", 40) + &flows));
        let w: Vec<f64> = jain_windows(&r, 10.0, 40.0).iter().map(|w| w.1).collect();
        let p10 = pct(&w, 10.0);
        let (a, b) = (
            throughput_bps(&r, 0, 10.0, 40.0),
            throughput_bps(&r, 1, 10.0, 40.0),
        );
        eprintln!(
            "RTT 20 vs {rtt2} ms: P10 Jain {p10:.3}, {:.2} vs {:.2} Mbit/s",
            a / 1e6,
            b / 1e6
        );
        if rtt2 == 20 {
            assert!(p10 >= 0.98, "equal RTTs: P10 Jain {p10}");
        } else {
            assert!(
                b < a,
                "RTT {rtt2} ms: the longer-RTT flow gets less ({b} vs {a})"
            );
        }
        p10s.push(p10);
    }
    // Fairness degrades with the RTT ratio but stays "reasonable": P10 ≥ 0.85 up to 4×.
    assert!(p10s.windows(2).all(|w| w[1] <= w[0] + 0.01), "{p10s:?}");
    assert!(p10s[2] >= 0.85, "{p10s:?}");
    assert!(p10s[3] >= 0.65, "{p10s:?}");
}

// ---------------------------------------------------------------------------------------------
// §6.2: the simulated frame-delay metric in the summary, for video and non-video flows.

#[test]
fn the_eq10_metric_is_reported_for_video_and_constant_rate_flows() {
    let r = with_cbr(2.0, "");
    for f in &r.summary.flows {
        let n: Vec<u32> = f.sqp_frame_delay.iter().map(|s| s.n).collect();
        assert_eq!(n, vec![1, 2, 4, 8, 16, 32], "{}", f.name);
        for s in &f.sqp_frame_delay {
            assert!((s.frame_interval_ms - 1000.0 / 60.0).abs() < 1e-3);
        }
    }
    // The constant-rate flow sends 2 Mbit/s evenly: every slot carries ≈ 4167 bytes, its
    // simulated frames need one 1500-byte packet time plus propagation past the slot end.
    let udp = &r.summary.flows[1].sqp_frame_delay[0];
    let p50 = udp.frame_bitrate_bps.p50.unwrap();
    assert!((p50 / 2e6 - 1.0).abs() < 0.1, "udp frame bitrate {p50}");
    let d = udp.frame_delay_ms.p90.unwrap();
    assert!(
        d > 20.0 && d < 20.0 + 1000.0 / 60.0 + 10.0,
        "udp P90 frame delay {d}"
    );
    // SQP's own frames go out in the first half of each slot: simulated delay ≈ its frame delay.
    let sqp = &r.summary.flows[0];
    let sim = sqp.sqp_frame_delay[0].frame_delay_ms.p50.unwrap();
    let real = sqp.frame_delay_ms.p50.unwrap();
    assert!(
        (sim - real).abs() < 3.0,
        "simulated {sim} ms vs frame delay {real} ms"
    );
}

// ---------------------------------------------------------------------------------------------
// Links the paper never tried, with the realistic media pipeline (`lagged` encoder, balanced
// quality scaling, frame dropper, pacer pushback): `experiments/sqp/hard-*.toml`, docs/sqp.md
// "Hard links". On both the flow must keep sending and its frame latency stay bounded.

/// One of the hard-link scenario files with another seed.
fn hard_link(file: &str, seed: u64) -> RunResult {
    let path = common::repo_dir("experiments/sqp").join(file);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains("\nseed = 1\n"), "{file} sets seed = 1");
    simulate(&text.replace("\nseed = 1\n", &format!("\nseed = {seed}\n")))
}

/// (frame latency P95 in ms, longest gap between two packets sent in s, lowest received rate
/// over the 5 s windows from 5 s in bit/s).
fn keeps_sending(r: &RunResult) -> (f64, f64, f64) {
    let f = &r.flows[0];
    let mut sent: Vec<f64> = f.packets.iter().map(|p| secs(p.send)).collect();
    sent.sort_by(|a, b| a.total_cmp(b));
    let gap = sent.windows(2).map(|w| w[1] - w[0]).fold(0.0, f64::max);
    let last = sent.last().copied().unwrap_or(0.0);
    assert!(
        last > r.summary.duration_s - 0.5,
        "last packet sent at {last} s"
    );
    let lowest = (1..12)
        .map(|k| throughput_bps(r, 0, 5.0 * k as f64, 5.0 * (k + 1) as f64))
        .fold(f64::INFINITY, f64::min);
    let p95 = r.summary.flows[0].frame_latency_ms.p95.unwrap();
    (p95, gap, lowest)
}

#[test]
fn on_a_400_kbps_link_with_a_deep_buffer_the_latency_stays_under_300_ms() {
    // 0.4 Mbit/s, 1000-packet drop-tail, 50 ms RTT. Before the start rate, the delivery floor
    // and the no-overshoot bound (docs/sqp.md, "Hard links") the latency P95 was
    // 1087 / 720 / 1172 ms for seeds 1-3 (a 2 Mbit/s start floods seconds of queue) and the
    // longest silence 0.90-1.20 s; then 165 / 155 / 170 ms (12 seeds: 148-183) and 0.40-0.53 s;
    // with the encoder's VP8-like bursts 159 / 160 / 154 ms (12 seeds: 153-178); with SQP's
    // one-frame VBV (its media default, Appendix A's low-latency NVENC) 128 / 129 / 127 ms
    // (12 seeds: 125-129).
    for seed in 1..=3 {
        let (p95, gap, lowest) = keeps_sending(&hard_link("hard-400kbps.toml", seed));
        eprintln!("seed {seed}: latency P95 {p95:.0} ms, longest gap {gap:.2} s, lowest 5 s rate {lowest:.0} bit/s");
        // The bound.
        assert!(p95 < 300.0, "seed {seed}: latency P95 {p95} ms");
        // Never silent for long: measured ≤ 0.53 s; the frame dropper alone may skip 0.75 s.
        assert!(gap < 0.75, "seed {seed}: {gap} s without a packet");
        // Every 5 s carries most of the link: measured ≥ 0.348 Mbit/s, so 75 % of it.
        assert!(
            lowest > 0.3e6,
            "seed {seed}: {lowest} bit/s in a 5 s window"
        );
    }
}

#[test]
fn on_the_demo_lte_trace_the_latency_stays_bounded() {
    // The demo's LTE-like link (mean 6 Mbit/s, 40 ms RTT, 200 ms buffer). Latency P95 for seeds
    // 1-5: before 294 / 412 / 885 / 647 / 795 ms (median 647; gcc 69-97), then 384 / 184 / 175 /
    // 177 / 246 ms (12 seeds: median 181, 174-384), and with the encoder's VP8-like bursts
    // 181 / 169 / 178 / 178 / 193 ms (12 seeds: median 178, 154-225), and with SQP's one-frame
    // VBV 156 / 148 / 162 / 160 / 159 ms (12 seeds: median 157, 148-162). Seed 1's 384 ms was one
    // frame lost at a queue overflow that could not be repaired (2.3 s until the next keyframe):
    // such a freeze lands on one seed or another, so the bound is on the median of five seeds
    // (+40 % on 181 ms), with each seed below 500 ms.
    let mut p95s = Vec::new();
    for seed in 1..=5 {
        let (p95, gap, lowest) = keeps_sending(&hard_link("hard-lte.toml", seed));
        eprintln!("seed {seed}: latency P95 {p95:.0} ms, longest gap {gap:.2} s, lowest 5 s rate {lowest:.0} bit/s");
        assert!(p95 < 500.0, "seed {seed}: latency P95 {p95} ms");
        // Measured ≤ 0.47 s (before: up to 1.02 s).
        assert!(gap < 0.75, "seed {seed}: {gap} s without a packet");
        // The trace's 5 s means are 3.5-9 Mbit/s; the flow receives ≥ 2.3 Mbit/s in each.
        assert!(lowest > 1e6, "seed {seed}: {lowest} bit/s in a 5 s window");
        p95s.push(p95);
    }
    let median = pct(&p95s, 50.0);
    assert!(
        median < 250.0,
        "median latency P95 {median} ms over seeds 1-5"
    );
}
