//! `gcc` (`profile = "webrtc"`) with libwebrtc's LossBasedBweV2 (`loss_based = "v2"`,
//! `rtcc-core/src/cc/gcc/loss_based_v2.rs`) against the default v1 loss rules, on a 6 Mbit/s
//! link that goes dark for 1 s at 10 s and drops to 100 kbit/s for 3 s at 20 s.
//!
//! What V2's design implies there, and what the test checks:
//!
//! - V2 judges loss over a window of 20 observations of at least 250 ms of send time each, with
//!   weights 0.9^age; the average loss of that window sets an instant upper bound of
//!   75 kbit/s / (loss − 5 %), and the estimate may not grow while that loss exceeds the
//!   inherent loss it has learnt. So a burst of loss (the 1-s blackout, the 100 kbit/s period)
//!   pulls V2 down at once and keeps it down until the lossy observations have aged out of the
//!   window (≥ 20 × 250 ms = 5 s of sending), *not* until it has crawled back at 8 %/s as v1's
//!   loss-based estimate must from its 30 kbit/s floor.
//! - Once the window is clean V2 is no longer the limit ("delay-based estimate" state): the
//!   target is the delay-based estimate. That estimate (AIMD) itself fell to 0.85 × the
//!   acknowledged rate (~100 kbit/s) during the 100 kbit/s period and climbs at most 8 %/s
//!   (and at most 1.5 × acked + 10 kbit/s), so neither version is back near 6 Mbit/s by 40 s:
//!   with V2 the rate follows AIMD's ramp from ~28 s, with v1 the slower loss-based ramp.
//!
//! Run with `--nocapture` for the per-second table.

use rtcc_sim::RunResult;

use crate::common;

const OUTAGE: &str = r#"
name = "outage"
duration = "40s"
seed = 1
[path.forward]
schedule = [["0s", "6Mbps"], ["10s", "0Mbps"], ["11s", "6Mbps"], ["20s", "100kbps"], ["23s", "6Mbps"]]
delay = "25ms"
queue = "100pkts"
aggregation = "10ms"
[path.reverse]
delay = "25ms"
[[flows]]
name = "video"
controller = "gcc"
"#;

/// The outage scenario with `params` for the flow (none: the defaults).
fn outage(params: &str) -> RunResult {
    let toml = if params.is_empty() {
        OUTAGE.to_string()
    } else {
        format!("{OUTAGE}params = {{ {params} }}\n")
    };
    common::simulate(&toml)
}

/// Delivered Mbit/s in each second [s, s + 1) of the 40-s run.
fn per_second_mbps(r: &RunResult) -> Vec<f64> {
    (0..40)
        .map(|s| common::throughput_bps(r, 0, s as f64, s as f64 + 1.0) / 1e6)
        .collect()
}

/// Samples of a signal of the flow in [from, to) s.
fn samples(r: &RunResult, name: &str, from: f64, to: f64) -> Vec<(f64, f64)> {
    common::signal(r, 0, name)
        .into_iter()
        .filter(|&(t, _)| (from..to).contains(&t))
        .collect()
}

/// The last sample of a signal before `t` s.
fn last_before(r: &RunResult, name: &str, t: f64) -> f64 {
    common::signal(r, 0, name)
        .iter()
        .rev()
        .find(|&&(s, _)| s < t)
        .map_or(f64::NAN, |x| x.1)
}

fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len() as f64
}

#[test]
fn loss_based_v1_set_explicitly_is_the_default_bit_for_bit() {
    let default = outage("");
    let explicit = outage("loss_based = \"v1\"");
    assert_eq!(
        default.summary.to_json(),
        explicit.summary.to_json(),
        "loss_based = \"v1\" must be exactly the default (the option may not change v1)"
    );
    let signals = |r: &RunResult| {
        let s = &r.state;
        (0..s.time.len())
            .map(|k| (s.time[k], s.signal[k], s.value[k].to_bits()))
            .collect::<Vec<_>>()
    };
    assert!(
        signals(&default) == signals(&explicit),
        "every controller signal of the two v1 runs must be identical"
    );
    assert!(
        common::signal(&default, 0, "loss_v2_state").is_empty(),
        "v1 reports no loss_v2_* signals, so its state log is the one it always was"
    );
}

#[test]
fn after_the_outage_v2_hands_back_to_the_delay_based_estimate_while_v1_stays_low() {
    let v1 = outage("");
    let v2 = outage("loss_based = \"v2\"");
    let (r1, r2) = (per_second_mbps(&v1), per_second_mbps(&v2));
    eprintln!("  s   v1 Mbit/s   v2 Mbit/s   v2: target  delay-based  state  avg loss  bound");
    for s in 0..40 {
        let t = s as f64 + 1.0;
        eprintln!(
            "{s:3}   {:9.3}   {:9.3}   {:10.3}  {:11.3}  {:5}  {:8.3}  {:5.3}",
            r1[s],
            r2[s],
            last_before(&v2, "target_bps", t) / 1e6,
            last_before(&v2, "delay_based_bps", t) / 1e6,
            last_before(&v2, "loss_v2_state", t),
            last_before(&v2, "loss_v2_average_loss", t),
            last_before(&v2, "loss_v2_upper_bound_bps", t) / 1e6,
        );
    }
    // V2 saw the 100 kbit/s period: the losses reported when the queue drains at 23 s make up
    // ~40 % of the window's packets (measured peak 0.43), so the instant upper bound falls to
    // 75 kbit/s / (0.43 − 0.05) ≈ 0.2 Mbit/s (measured 0.197). Tolerance: a third of the
    // window's packets lost, and a bound below 0.3 Mbit/s.
    let peak_loss = samples(&v2, "loss_v2_average_loss", 23.0, 28.0)
        .iter()
        .map(|x| x.1)
        .fold(0.0, f64::max);
    let low_bound = samples(&v2, "loss_v2_upper_bound_bps", 23.0, 28.0)
        .iter()
        .map(|x| x.1)
        .fold(f64::INFINITY, f64::min);
    assert!(
        peak_loss > 0.3 && low_bound < 0.3e6,
        "V2 must see the outage's losses: average loss {peak_loss}, instant bound {low_bound}"
    );

    // V2 is loss limited only until the lossy observations have left its 20-observation window
    // (≥ 250 ms of send time each, closed on 50 ms feedback: 5–6 s after they were reported at
    // 23 s). Measured: last loss-limited sample at 28.65 s. Tolerance [4, 7] s after 23 s, one
    // second either side for observation boundaries and feedback timing.
    let state = samples(&v2, "loss_v2_state", 23.0, 40.0);
    let last_limited = state
        .iter()
        .filter(|&&(_, s)| s != 3.0)
        .map(|x| x.0)
        .fold(23.0, f64::max);
    eprintln!("v2: last loss-limited sample after the outage at {last_limited:.2} s");
    assert!(
        (27.0..=30.0).contains(&last_limited),
        "V2 should leave the loss-limited states when the lossy observations age out of its \
         window, 4-7 s after 23 s; last loss-limited sample at {last_limited} s"
    );

    // From then on V2 does not limit: the target is the delay-based estimate, lagging it by at
    // most one observation of AIMD's growth (V2's result is recomputed when an observation
    // closes, every 250-300 ms; AIMD grows at most 8 %/s + 1 kbit/s per 50-ms report, ~7 % in
    // 300 ms at these rates). Tolerance: target within [0.9, 1] × the delay-based estimate.
    let delay: Vec<(f64, f64)> = samples(&v2, "delay_based_bps", 30.0, 40.0);
    let target: Vec<(f64, f64)> = samples(&v2, "target_bps", 30.0, 40.0);
    assert!(
        state.iter().filter(|x| x.0 >= 30.0).all(|x| x.1 == 3.0),
        "after 30 s V2 must stay in the delay-based-estimate state"
    );
    for (&(t, d), &(_, g)) in delay.iter().zip(&target) {
        assert!(
            g <= d * (1.0 + 1e-12) && g >= 0.9 * d,
            "at {t} s the v2 target {g} should be the delay-based estimate {d}"
        );
    }

    // Why V2 also stays far below 6 Mbit/s: the delay-based estimate itself fell to ~100 kbit/s
    // (AIMD's 0.85 × acked on the 100 kbit/s link) and only climbs multiplicatively, capped at
    // 1.5 × acked + 10 kbit/s. Measured: 0.589 Mbit/s at 39 s. Tolerance: below 1 Mbit/s.
    let d39 = last_before(&v2, "delay_based_bps", 40.0);
    let d22 = last_before(&v2, "delay_based_bps", 23.0);
    assert!(
        d22 < 0.15e6 && d39 < 1e6,
        "the delay-based estimate fell to {d22} in the 100 kbit/s period and is {d39} at 40 s"
    );

    // v1 stays at its loss-based floor ramp: 0.05-0.21 Mbit/s per second from 24 s (the 23-s
    // bin holds the queue draining at 6 Mbit/s). Tolerance: every second in [0.03, 0.25]
    // Mbit/s.
    assert!(
        r1[24..].iter().all(|&x| (0.03..=0.25).contains(&x)),
        "v1 after the outage: {:?}",
        &r1[24..]
    );
    // Delivered: V2 follows AIMD's ramp from ~165 kbit/s at 28 s, v1 its loss-based ramp from
    // the ~50 kbit/s it fell to; both grow ~8-12 %/s, so the gap is the ratio of those starts.
    // Measured over [30, 40) s: v2 0.364, v1 0.151 Mbit/s (2.4x). Tolerance: at least 1.8x.
    let (m1, m2) = (mean(&r1[30..]), mean(&r2[30..]));
    eprintln!("mean delivered in [30, 40) s: v1 {m1:.3}, v2 {m2:.3} Mbit/s");
    assert!(
        m2 >= 1.8 * m1,
        "V2 should recover faster than v1: {m2} vs {m1} Mbit/s"
    );

    // The 1-s blackout at 10 s: every packet sent into it is lost, ~25 % of the window's
    // packets, so V2's instant upper bound drops to 75 kbit/s / (0.255 − 0.05) ≈ 0.37 Mbit/s
    // for as long as those observations stay in the window (~5 s), while v1 (one 1-s loss
    // report of 37 %) only cuts its target by (1 − 0.37/2). Measured: v2 target 0.37-0.48
    // Mbit/s in [11, 16) s, back on the delay-based estimate from 18 s; v1 ≥ 2.9 Mbit/s.
    // Tolerance: v2 below 0.6 Mbit/s in [11.5, 15.5) s and on the delay-based estimate
    // (state 3) by 19 s; v1 above 2.5 Mbit/s.
    let v2_dip = samples(&v2, "target_bps", 11.5, 15.5)
        .iter()
        .map(|x| x.1)
        .fold(0.0, f64::max);
    let v1_dip = samples(&v1, "target_bps", 11.0, 20.0)
        .iter()
        .map(|x| x.1)
        .fold(f64::INFINITY, f64::min);
    assert!(
        v2_dip < 0.6e6 && v1_dip > 2.5e6,
        "after the blackout v2's target should stay under its loss bound ({v2_dip}) while v1 \
         barely reacts ({v1_dip})"
    );
    assert_eq!(
        last_before(&v2, "loss_v2_state", 19.0),
        3.0,
        "by 19 s the blackout has left V2's window"
    );
}
