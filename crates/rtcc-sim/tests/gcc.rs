//! Whole-simulation behaviour of `gcc` on the seeds' scenarios. Each tolerance is written next
//! to the seed's number and says why it is that wide. The simulated video source is the ideal
//! encoder (frames of exactly target / fps, following a new target on the next frame), so GCC's
//! own dynamics are measured without the encoder lag and frame-size noise of the papers' VP8.
//! Run with `--nocapture` to see the measured values.

use rtcc_core::metrics::{frame_delays, percentile};
use rtcc_core::Time;
use rtcc_sim::RunResult;

use crate::common;

/// Parse and run with file paths relative to the bundled traces.
fn simulate(toml: &str) -> RunResult {
    common::simulate_in(toml, &common::repo_dir("traces"))
}

/// A controller signal of flow 0 as (seconds, value).
fn signal(r: &RunResult, name: &str) -> Vec<(f64, f64)> {
    common::signal(r, 0, name)
}

/// Seconds from `from` until the signal first reaches `level`.
fn time_to_reach(series: &[(f64, f64)], from: f64, level: f64) -> Option<f64> {
    series
        .iter()
        .find(|&&(t, v)| t >= from && v >= level)
        .map(|&(t, _)| t - from)
}

/// Bytes of flow 0 leaving the bottleneck in [a, b) s over what `capacity_bps` carries then.
fn utilization(r: &RunResult, a: f64, b: f64, capacity_bps: f64) -> f64 {
    let (a_t, b_t) = (Time::from_secs_f64(a), Time::from_secs_f64(b));
    let bytes: u64 = r.flows[0]
        .packets
        .iter()
        .filter(|p| p.depart.is_some_and(|d| d >= a_t && d < b_t))
        .map(|p| p.size as u64)
        .sum();
    bytes as f64 * 8.0 / ((b - a) * capacity_bps)
}

/// (capture time s, frame delay ms) of flow 0's frames.
fn frame_delay_series(r: &RunResult, end_s: f64) -> Vec<(f64, f64)> {
    let frames = &r.flows[0].frames;
    frame_delays(frames, Time::from_secs_f64(end_s))
        .iter()
        .zip(frames)
        .filter_map(|(d, f)| d.map(|d| (f.capture.as_secs_f64(), d.as_millis_f64())))
        .collect()
}

/// Bottleneck queuing delays (ms) of flow 0's packets sent in [a, b) s, sorted.
fn queuing_delays(r: &RunResult, a: f64, b: f64) -> Vec<f64> {
    let (a_t, b_t) = (Time::from_secs_f64(a), Time::from_secs_f64(b));
    let mut q: Vec<f64> = r.flows[0]
        .packets
        .iter()
        .filter(|p| p.send >= a_t && p.send < b_t)
        .filter_map(|p| p.depart.map(|d| (d - p.enqueue).as_millis_f64()))
        .collect();
    q.sort_by(f64::total_cmp);
    q
}

/// Vidaptive §2.1: a link alternating 2 Mbit/s and 500 kbit/s every 40 s, 50 ms RTT, a buffer
/// deep enough that nothing is dropped.
#[test]
fn vidaptive_alternating_link_slow_ramp_underuse_and_a_delay_spike_after_the_drop() {
    let r = simulate(
        r#"
duration = "200s"
[path.forward]
schedule = "alternate-2m-500k.sched"
delay = "25ms"
queue = "unlimited"
[[flows]]
controller = "gcc"
"#,
    );
    let f = &r.summary.flows[0];
    assert_eq!(f.packets_lost, 0, "the buffer is deep: no drops");
    let target = signal(&r, "target_bps");

    // Ramp from 500 kbit/s to 2 Mbit/s when the link opens up (t = 80 s and 160 s). Paper: 18 s.
    // 8 %/s multiplicative increase alone takes ln 4 / ln 1.08 = 18.0 s from 0.5 to 2 Mbit/s; the
    // paper's VP8 adds ~2 s of lag per step (Vidaptive §2, Fig. 2) that the ideal encoder does
    // not have, while GCC's additive phase near the old capacity adds a few seconds here.
    // Tolerance: 18 s × [2/3, 3/2] = [12, 27] s to reach 90 % of 2 Mbit/s.
    for at in [80.0, 160.0] {
        let ramp = time_to_reach(&target, at, 0.9 * 2e6).expect("never reached 1.8 Mbit/s");
        eprintln!("ramp after {at} s: {ramp:.1} s (paper 18 s)");
        assert!((12.0..=27.0).contains(&ramp), "ramp after {at} s: {ramp} s");
    }

    // Steady-state under-use of the 2 Mbit/s link. Paper: 85 %. AIMD backs off to 85 % of the
    // acknowledged rate on each over-use and climbs back additively (~30 kbit/s per second at
    // 2 Mbit/s), so the mean sits between 0.85 and 1 minus the time spent draining; the paper's
    // encoder also overshoots and undershoots its target. Tolerance 0.85 ± 0.10.
    for (a, b) in [(10.0, 40.0), (180.0, 200.0)] {
        let u = utilization(&r, a, b, 2e6);
        eprintln!("utilization [{a}, {b}) s: {u:.3} (paper 0.85)");
        assert!((0.75..=0.95).contains(&u), "utilization [{a}, {b}): {u}");
    }

    // After the drop to 500 kbit/s at 40 s GCC keeps sending at the old rate until its detector
    // fires and its acknowledged rate catches up: the queue and the frame delay spike. Paper:
    // "spikes to over a second and settles only after 12 seconds". The paper's VP8 takes ~1 s to
    // lower its output (Vidaptive Fig. 2), so our spike may be a little smaller: at least
    // 0.8 s. Settled means no frame above 200 ms (steady frame delay here is ~55 ms); the paper's
    // 12 s with tolerance [3, 20] s ("takes seconds").
    let fd = frame_delay_series(&r, 200.0);
    let spike = fd
        .iter()
        .filter(|&&(t, _)| (40.0..45.0).contains(&t))
        .map(|x| x.1)
        .fold(0.0, f64::max);
    let settled = fd
        .iter()
        .filter(|&&(t, d)| (40.0..80.0).contains(&t) && d > 200.0)
        .map(|x| x.0)
        .fold(40.0, f64::max)
        - 40.0;
    let before: Vec<f64> = fd
        .iter()
        .filter(|&&(t, _)| (20.0..40.0).contains(&t))
        .map(|x| x.1)
        .collect();
    let before_max = before.iter().copied().fold(0.0, f64::max);
    eprintln!(
        "drop at 40 s: frame delay max {spike:.0} ms (before: max {before_max:.0} ms), \
         above 200 ms until +{settled:.1} s (paper: > 1 s, settles after 12 s)"
    );
    assert!(
        before_max < 200.0,
        "frame delay before the drop: {before_max} ms"
    );
    assert!(spike >= 800.0, "frame delay spike {spike} ms");
    assert!((3.0..=20.0).contains(&settled), "settled after {settled} s");
}

/// SQP §6.3 (and §3.1): 20 → 5 → 20 Mbit/s at 40 s and 60 s, 40 ms RTT, 10 packets per Mbit/s
/// of buffer at 20 Mbit/s (200 packets), WebRTC's max bitrate raised to 50 Mbit/s as in SQP.
#[test]
fn sqp_step_link_gcc_recovers_from_the_drop_but_climbs_back_slowly() {
    let r = simulate(
        r#"
duration = "120s"
[path.forward]
schedule = "step-20-5-20.sched"
delay = "20ms"
queue = "200pkts"
[[flows]]
controller = "gcc"
params = { max_bitrate = "50Mbps" }
"#,
    );
    let target = signal(&r, "target_bps");
    let before = target.iter().rev().find(|&&(t, _)| t < 40.0).unwrap().1;
    assert!(before > 15e6, "near 20 Mbit/s before the drop: {before}");

    // The drop: the target falls below the new capacity within 2 s, and the delay spike is over
    // within 8 s (§3.1: GoogCC causes "3–8 seconds long delay spike[s]"). The spike is over when
    // a packet sent after it waits less than 30 ms again (the 200-packet buffer holds 384 ms at
    // 5 Mbit/s). Later, GCC's additive increase near the 5 Mbit/s capacity builds its usual
    // sawtooth queue, but no standing queue: median below 50 ms in [50, 60) s.
    let below = target
        .iter()
        .find(|&&(t, v)| t >= 40.0 && v < 5e6)
        .map(|&(t, _)| t - 40.0)
        .unwrap();
    let waits: Vec<(f64, f64)> = r.flows[0]
        .packets
        .iter()
        .filter(|p| p.send >= Time::from_secs_f64(40.0))
        .filter_map(|p| {
            p.depart
                .map(|d| (p.send.as_secs_f64(), (d - p.enqueue).as_millis_f64()))
        })
        .collect();
    let peak = waits.iter().position(|&(_, q)| q > 100.0).unwrap();
    let spike_end = waits[peak..]
        .iter()
        .find(|&&(_, q)| q < 30.0)
        .map(|&(t, _)| t - 40.0)
        .unwrap();
    let q = queuing_delays(&r, 50.0, 60.0);
    let q50 = percentile(&q, 50.0).unwrap();
    eprintln!(
        "drop: target below 5 Mbit/s after {below:.2} s; queuing delay spike over after \
         {spike_end:.1} s (paper 3-8 s); median queuing in [50, 60) s {q50:.1} ms"
    );
    assert!(
        below < 2.0,
        "target still above 5 Mbit/s {below} s after the drop"
    );
    assert!(
        (1.0..=8.0).contains(&spike_end),
        "delay spike lasted {spike_end} s"
    );
    assert!(q50 < 50.0, "no standing queue at 5 Mbit/s: {q50} ms");

    // Climbing back after 60 s: SQP reaches 0.85 × 20 Mbit/s within 3 s; the paper reports
    // that GoogCC takes "more than 20–30 seconds". GCC first climbs additively (~25–35 kbit/s
    // per second) until its acknowledged rate leaves the ±3σ band of the 5 Mbit/s capacity
    // estimate, then at 8 %/s (ln(17/5.5) / ln 1.08 ≈ 15 s); how long the additive part lasts
    // depends on where GCC's sawtooth is when the link opens. Tolerance [15, 50] s: at least
    // 5× SQP's 3 s, and the paper's "more than 20–30 s" with room above.
    let climb = time_to_reach(&target, 60.0, 0.85 * 20e6).expect("never climbed back");
    eprintln!("climb back to 17 Mbit/s: {climb:.1} s (paper: more than 20-30 s; SQP <= 3 s)");
    assert!((15.0..=50.0).contains(&climb), "climb back took {climb} s");
}

/// GCC-AQM §4.1: one GCC flow alone over a 1 Mbit/s DropTail bottleneck of 300 ms (DT/300),
/// 50 ms RTT, 300 s calls, VP8 capped at 2 Mbit/s. Paper: channel utilization above 90 %, no
/// losses, queuing delay 95th percentile 48 ms.
#[test]
fn gcc_aqm_droptail_300ms_at_1mbps_contains_the_queue_without_losses() {
    for profile in ["paper", "webrtc"] {
        let r = simulate(&format!(
            r#"
duration = "300s"
[path.forward]
capacity = "1Mbps"
delay = "25ms"
queue = "300ms"
[[flows]]
controller = "gcc"
params = {{ profile = "{profile}", max_bitrate = "2Mbps" }}
"#
        ));
        let f = &r.summary.flows[0];
        let u = f.utilization.unwrap();
        let packets = &r.flows[0].packets;
        let lost: u64 = packets
            .iter()
            .filter(|p| p.dropped)
            .map(|p| p.size as u64)
            .sum();
        let sent: u64 = packets.iter().map(|p| p.size as u64).sum();
        let loss = lost as f64 / sent as f64;
        let q = queuing_delays(&r, 0.0, 300.0);
        let [p5, p25, p50, p75, p95] =
            [5.0, 25.0, 50.0, 75.0, 95.0].map(|p| percentile(&q, p).unwrap());
        let mean = q.iter().sum::<f64>() / q.len() as f64;
        eprintln!(
            "{profile}: utilization {u:.3} (paper > 0.90), byte loss {loss:.5} (paper 0), queuing \
             delay ms p5 {p5:.1} p25 {p25:.1} p50 {p50:.1} p75 {p75:.1} p95 {p95:.1} mean {mean:.1} \
             (paper p95 48)"
        );
        // Utilization, paper > 0.90 over the call. The paper profile's Eq. (2) raises A_s by 5 %
        // per 1-s RTCP report, so it needs ~25 s to climb from 300 kbit/s to 1 Mbit/s (Chrome's
        // loss-based ramp of the time was 8 %/s): about 3 points of a 300-s call. Tolerance 0.85.
        assert!(u >= 0.85, "{profile}: utilization {u}");
        // Loss, paper 0: at most 0.05 % of the bytes.
        assert!(loss <= 0.0005, "{profile}: loss {loss}");
        // Queuing delay, paper p95 48 ms (per RTCP RTT sample, with VP8's frame-size noise).
        // The ideal encoder's even frames queue less; the bound that matters is that GCC keeps
        // the 300 ms buffer nearly empty: p95 at most 70 ms (48 + 22 ms, two 1200-byte frames'
        // worth of serialization at 1 Mbit/s) and the mean below the paper's p95.
        assert!(p95 <= 70.0, "{profile}: p95 queuing {p95} ms");
        assert!(mean < 48.0, "{profile}: mean queuing {mean} ms");
    }
}

/// Why the `paper` profile scales the Kalman offset by min(n, 60) before comparing it with γ (as
/// the Chrome the GCC-AQM authors measured did): read literally (`T = m`), the seed's detector
/// only fires once the queue grows 6 ms per frame and γ chases m upward, so on the same DT/300
/// link the buffer stays full and packets are lost, unlike the paper's measurements (no loss,
/// p95 queuing 48 ms).
#[test]
fn the_seeds_detector_read_literally_fills_the_droptail_buffer() {
    let r = simulate(
        r#"
duration = "300s"
[path.forward]
capacity = "1Mbps"
delay = "25ms"
queue = "300ms"
[[flows]]
controller = "gcc"
params = { profile = "paper", max_bitrate = "2Mbps", offset_scaling = "none" }
recovery = { nack = false }
"#,
    );
    // Retransmissions off: this is about the detector alone. With them (the default), the
    // same run loses 8.9 % of its packets instead of 4.5 % (retransmissions meet the full
    // buffer too) and its median queue is 64 ms instead of 295 ms.
    let loss = r.summary.flows[0].loss_rate.unwrap();
    let q = queuing_delays(&r, 30.0, 300.0);
    let q50 = percentile(&q, 50.0).unwrap();
    eprintln!("offset_scaling = \"none\": loss {loss:.4}, median queuing after 30 s {q50:.0} ms");
    assert!(loss > 0.01, "loss {loss}");
    assert!(q50 > 200.0, "median queuing {q50} ms in a 300 ms buffer");
}
