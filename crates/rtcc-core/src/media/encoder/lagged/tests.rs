//! Tests of the lagged encoder: E0 (the seed's Fig. 2), determinism, the long-run mean,
//! keyframes, the resolution ladder, the control interface and libvpx's rate-control buffer.

use super::*;

const FPS: f64 = 30.0;

/// Encode `secs` seconds at `FPS` with `target(t)`; returns (capture time s, frame).
fn drive(
    e: &mut LaggedEncoder,
    secs: f64,
    target: impl Fn(f64) -> f64,
) -> Vec<(f64, EncodedFrame)> {
    let n = (secs * FPS).round() as usize;
    (0..n)
        .map(|i| {
            let t = i as f64 / FPS;
            (t, e.encode(Time::from_secs_f64(t), Rate(target(t)), FPS))
        })
        .collect()
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

fn cv(v: &[f64]) -> f64 {
    let m = mean(v);
    (v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / v.len() as f64).sqrt() / m
}

/// The target of the seed's Fig. 2: 500 kbit/s for 5 s, then 2 Mbit/s for 5 s, repeated.
fn fig2_target(t: f64) -> f64 {
    if t % 10.0 < 5.0 {
        0.5e6
    } else {
        2e6
    }
}

struct Fig2 {
    up_s: f64,
    down_s: f64,
    steady_cv: f64,
    high_mean_bps: f64,
    low_mean_bps: f64,
}

/// Cycles folded to measure Fig. 2's response (10 min of video: the bursts and the slow content
/// changes of one cycle average out).
const CYCLES: usize = 200;

/// Drive 61 cycles of Fig. 2's target; fold cycles 2–61 (the first holds the start-up keyframe)
/// into 100 ms bins of output rate, smooth over 300 ms (centred), and read the 90 % rise and fall
/// times from the switch instants. The steady-state per-frame coefficient of variation is taken
/// over the last 2 s of each half-cycle.
fn fig2(cfg: &LaggedConfig, seed: u64) -> Fig2 {
    let mut e = LaggedEncoder::new(cfg.clone(), seed);
    let frames = drive(&mut e, CYCLES as f64 * 10.0 + 10.0, fig2_target);
    let bins = 100;
    let mut bytes = vec![0.0; bins];
    let mut cycles = 0.0;
    // Frame i is captured at i/30 s: 300 frames per cycle, 3 per bin (binning by index avoids
    // floating-point bin edges).
    for (i, (_, f)) in frames.iter().enumerate().skip(300) {
        bytes[(i % 300) / 3] += f.size as f64;
    }
    cycles += CYCLES as f64;
    let rate: Vec<f64> = bytes.iter().map(|b| b * 8.0 / 0.1 / cycles).collect();
    let smooth: Vec<f64> = (0..bins)
        .map(|i| (rate[(i + bins - 1) % bins] + rate[i] + rate[(i + 1) % bins]) / 3.0)
        .collect();
    let centre = |i: usize| i as f64 * 0.1 + 0.05;
    // Up at 5 s (bin 50), down at 10 s ≡ 0 s (bin 0).
    let up_bin = (50..bins)
        .find(|&i| smooth[i] >= 0.5e6 + 0.9 * 1.5e6)
        .unwrap_or(bins);
    let down_bin = (0..50)
        .find(|&i| smooth[i] <= 2e6 - 0.9 * 1.5e6)
        .unwrap_or(50);
    let mut cvs = Vec::new();
    let (mut high, mut low) = (Vec::new(), Vec::new());
    for k in 1..=CYCLES {
        for (lo, hi, out) in [(3.0, 5.0, &mut low), (8.0, 10.0, &mut high)] {
            let (a, b) = (k as f64 * 10.0 + lo, k as f64 * 10.0 + hi);
            let sizes: Vec<f64> = frames
                .iter()
                .filter(|(t, _)| *t >= a && *t < b)
                .map(|(_, f)| f.size as f64)
                .collect();
            cvs.push(cv(&sizes));
            out.push(mean(&sizes) * 8.0 * FPS);
        }
    }
    Fig2 {
        up_s: centre(up_bin) - 5.0,
        down_s: centre(down_bin),
        steady_cv: mean(&cvs),
        high_mean_bps: mean(&high),
        low_mean_bps: mean(&low),
    }
}

/// E0. The seed (Vidaptive §2, Fig. 2, VP8, target 2 Mbit/s ↔ 500 kbit/s every 5 s): "every time
/// the bitrate goes up … the encoder takes nearly 2 seconds to catch up. On the way down … it takes
/// about a second to lower the bitrate", and "even once the encoder matches the target bitrate, it
/// exhibits considerable variance around the average on a per-frame basis".
///
/// Acceptance (tolerances around the seed's words): 90 % rise 1.5–2.5 s, 90 % fall 0.7–1.3 s,
/// per-frame coefficient of variation 0.2–0.4 in steady state.
///
/// The paper's parameters ([`LaggedConfig::vidaptive_paper`], the defaults until the VP8 fit).
/// Measured (200 cycles folded, 100 ms bins, 300 ms centred smoothing), seeds 1–6: rise 1.65, 1.85, 1.85, 1.95, 2.05, 1.85 s; fall 1.05, 1.05, 0.95, 1.05,
/// 0.95, 0.95 s; per-frame CV 0.24–0.25; steady output 1.95–1.99 Mbit/s and 0.50–0.51 Mbit/s.
/// (The internal rate itself settles in exactly 2 s and 1 s; the output's first crossing of the
/// 90 % line comes a little early on average because content bursts ride on the slow approach.)
#[test]
fn e0_fig2_the_encoder_rises_in_about_2s_falls_in_about_1s_and_is_noisy() {
    let paper = LaggedConfig::vidaptive_paper();
    for seed in [1, 2, 3, 4, 5, 6] {
        let r = fig2(&paper, seed);
        eprintln!(
            "seed {seed}: rise {:.2} s, fall {:.2} s, steady CV {:.3}, high {:.3} Mbit/s, low {:.3} Mbit/s",
            r.up_s,
            r.down_s,
            r.steady_cv,
            r.high_mean_bps / 1e6,
            r.low_mean_bps / 1e6
        );
        assert!(
            (1.5..=2.5).contains(&r.up_s),
            "seed {seed}: rise {:.2} s",
            r.up_s
        );
        assert!(
            (0.7..=1.3).contains(&r.down_s),
            "seed {seed}: fall {:.2} s",
            r.down_s
        );
        assert!(
            (0.2..=0.4).contains(&r.steady_cv),
            "seed {seed}: CV {:.3}",
            r.steady_cv
        );
        assert!(
            (r.high_mean_bps / 2e6 - 1.0).abs() < 0.05,
            "seed {seed}: {}",
            r.high_mean_bps
        );
        assert!(
            (r.low_mean_bps / 0.5e6 - 1.0).abs() < 0.05,
            "seed {seed}: {}",
            r.low_mean_bps
        );
    }
    // The numbers quoted above and in docs/encoders.md, pinned for seed 1 (a change to the model
    // must update both).
    let r = fig2(&paper, 1);
    assert!((r.up_s - 1.65).abs() < 1e-9 && (r.down_s - 1.05).abs() < 1e-9);
    assert!((r.steady_cv - 0.245).abs() < 0.0005, "{}", r.steady_cv);
}

/// The defaults are the VP8 fit (bench/encoders/calibrate.py, docs/encoders.md): on Fig. 2's
/// target they settle about as fast as real VP8 did on the three clips (1.13–1.45 s up,
/// 0.15–0.68 s down) and spread less than the old defaults' judgment. This test's measure is E0's
/// (thresholds on the target, content bursts on), not the calibration's, so the bounds are loose.
#[test]
fn the_default_parameters_are_the_vp8_fit() {
    let d = LaggedConfig::default();
    assert_eq!(
        (d.up, d.down, d.noise, d.complexity, d.keyframe_ratio),
        (
            Duration::from_millis(1210),
            Duration::from_millis(360),
            0.23,
            0.17,
            3.6
        )
    );
    for seed in [1, 2, 3] {
        let r = fig2(&d, seed);
        eprintln!(
            "seed {seed}: rise {:.2} s, fall {:.2} s, steady CV {:.3}",
            r.up_s, r.down_s, r.steady_cv
        );
        assert!((0.9..=1.5).contains(&r.up_s), "seed {seed}: {:.2}", r.up_s);
        assert!(
            (0.15..=0.6).contains(&r.down_s),
            "seed {seed}: {:.2}",
            r.down_s
        );
        assert!(
            (0.2..=0.35).contains(&r.steady_cv),
            "seed {seed}: {:.3}",
            r.steady_cv
        );
    }
}

#[test]
fn the_internal_rate_settles_90_percent_in_exactly_the_settling_times() {
    // Settling times of whole frame intervals (2 s and 1 s), so that a frame lands on them.
    let cfg = LaggedConfig::vidaptive_paper();
    let mut e = LaggedEncoder::new(cfg.clone(), 1);
    drive(&mut e, 1.0, |_| 0.5e6);
    // 2 s of 2 Mbit/s: 60 frame intervals of 1/30 s after the switch frame.
    let frames = drive(&mut e, 2.0 + 1.0 / FPS, |_| 2e6);
    assert_eq!(frames.len(), 61);
    let r = e.internal_rate().unwrap().bps();
    assert!((r - (0.5e6 + 0.9 * 1.5e6)).abs() < 1.0, "{r}");
    let mut e = LaggedEncoder::new(cfg, 1);
    drive(&mut e, 1.0, |_| 2e6);
    drive(&mut e, 1.0 + 1.0 / FPS, |_| 0.5e6);
    let r = e.internal_rate().unwrap().bps();
    assert!((r - (2e6 - 0.9 * 1.5e6)).abs() < 1.0, "{r}");
}

#[test]
fn the_same_seed_gives_the_same_sizes_and_another_seed_differs() {
    let run = |seed| {
        let mut e = LaggedEncoder::new(LaggedConfig::default(), seed);
        drive(&mut e, 30.0, fig2_target)
            .into_iter()
            .map(|(_, f)| (f.size, f.keyframe, f.psnr_db.map(f64::to_bits)))
            .collect::<Vec<_>>()
    };
    assert_eq!(run(7), run(7));
    assert_ne!(run(7), run(8));
}

#[test]
fn at_a_steady_target_the_long_run_mean_is_the_target() {
    for (rate, seed) in [(2e6, 1), (0.5e6, 2), (1.2e6, 3)] {
        let mut e = LaggedEncoder::new(LaggedConfig::default(), seed);
        let frames = drive(&mut e, 300.0, |_| rate);
        // From 10 s on: the start-up keyframe is paid back.
        let bytes: f64 = frames
            .iter()
            .filter(|(t, _)| *t >= 10.0)
            .map(|(_, f)| f.size as f64)
            .sum();
        let mean_bps = bytes * 8.0 / 290.0;
        assert!((mean_bps / rate - 1.0).abs() < 0.02, "{rate}: {mean_bps}");
        // The bursts happened (about 15 in 300 s, one frame each) and were paid back.
        let big = frames
            .iter()
            .filter(|(_, f)| !f.keyframe && f.size as f64 > 4.0 * rate / 8.0 / FPS)
            .count();
        assert!(
            (5..=30).contains(&big),
            "{rate}: {big} frames above 4× the nominal size"
        );
    }
}

/// A burst is a scene cut as real VP8 codes it (`bench/encoders/bursts.py`, docs/encoders.md
/// "Content bursts against real VP8"): one large frame (VP8: 5.9–11 frame budgets) paid back
/// over the next second, so that the second from the cut carries 1.02–1.09 of the target and
/// the one after it 0.94–0.99. The bounds below are VP8's range widened by the model's spread
/// (its medians over the bursts of 20 seeds).
#[test]
fn a_burst_is_one_large_frame_paid_back_as_vp8_pays_it_back() {
    let cfg = LaggedConfig {
        burst_every: Duration::from_millis(6000),
        ..LaggedConfig::default()
    };
    let nominal = 1e6 / 8.0 / FPS;
    let (mut largest, mut second, mut after) = (Vec::new(), Vec::new(), Vec::new());
    for seed in 0..20 {
        let mut e = LaggedEncoder::new(cfg.clone(), seed);
        let sizes: Vec<f64> = drive(&mut e, 120.0, |_| 1e6)
            .iter()
            .map(|(_, f)| f.size as f64 / nominal)
            .collect();
        let mut last_cut = 0;
        for at in 150..sizes.len() - 60 {
            if sizes[at] > 3.0 && at - last_cut > 60 {
                last_cut = at;
                largest.push(sizes[at]);
                second.push(sizes[at..at + 30].iter().sum::<f64>() / 30.0);
                after.push(sizes[at + 30..at + 60].iter().sum::<f64>() / 30.0);
            }
        }
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    assert!(largest.len() > 200, "{} bursts in 40 min", largest.len());
    let (l, s, a) = (
        median(&mut largest),
        median(&mut second),
        median(&mut after),
    );
    assert!((5.5..=9.0).contains(&l), "the cut's frame: {l} budgets");
    assert!(
        (1.02..=1.10).contains(&s),
        "the second from the cut: {s} of the target"
    );
    assert!(
        (0.92..=0.99).contains(&a),
        "the second after it: {a} of the target"
    );
}

#[test]
fn keyframes_cost_keyframe_ratio_p_frames_and_are_paid_back() {
    let ratio = LaggedConfig::default().keyframe_ratio;
    // Mean over 200 seeds of the first frame (a keyframe) relative to the nominal frame.
    let nominal = 1e6 / 8.0 / FPS;
    let mut ratios = Vec::new();
    let mut after = Vec::new();
    for seed in 0..200 {
        let mut e = LaggedEncoder::new(LaggedConfig::default(), seed);
        let frames = drive(&mut e, 1.0, |_| 1e6);
        assert!(frames[0].1.keyframe && frames[1..].iter().all(|(_, f)| !f.keyframe));
        ratios.push(frames[0].1.size as f64 / nominal);
        after.push(mean(
            &frames[1..]
                .iter()
                .map(|(_, f)| f.size as f64)
                .collect::<Vec<_>>(),
        ));
    }
    let r = mean(&ratios);
    // ratio × E[c] at start (e^(−complexity²/2)) × E[ε] (1).
    let c = LaggedConfig::default().complexity;
    let expected = ratio * (-c * c / 2.0).exp();
    assert!(
        (r - expected).abs() < 0.05 * expected,
        "keyframe / nominal = {r:.2}, expected {expected:.2}"
    );
    // The ratio − 1 extra frames' worth of bytes are being paid back over the payback second:
    // the next second is below nominal by a good part of them (0.962 with the defaults).
    let a = mean(&after) / nominal;
    let extra = (ratio - 1.0) / FPS;
    assert!(
        a < 1.0 - 0.3 * extra && a > 1.0 - 1.2 * extra,
        "frames after the keyframe / nominal = {a:.3} (extra {extra:.3})"
    );
    // The PSNR of the keyframe is that of its budget (not of its larger size).
    let mut e = LaggedEncoder::new(LaggedConfig::default(), 1);
    let f = e.encode(Time::ZERO, Rate(1e6), FPS);
    let expected = quality::psnr_db(Resolution::new(1280, 720), 1e6 / FPS);
    assert!((f.psnr_db.unwrap() - expected).abs() < 1e-9);
}

#[test]
fn requests_resets_and_periodic_keyframes() {
    let cfg = LaggedConfig {
        keyframe_interval: Some(Duration::from_millis(10_000)),
        ..LaggedConfig::default()
    };
    let mut e = LaggedEncoder::new(cfg, 1);
    let keys: Vec<f64> = drive(&mut e, 35.0, |_| 1e6)
        .into_iter()
        .filter(|(_, f)| f.keyframe)
        .map(|(t, _)| t)
        .collect();
    assert_eq!(keys, vec![0.0, 10.0, 20.0, 30.0]);
    let mut e = LaggedEncoder::new(LaggedConfig::default(), 1);
    drive(&mut e, 1.0, |_| 1e6);
    e.request_keyframe();
    let f = e.encode(Time::from_secs_f64(1.0), Rate(1e6), FPS);
    assert!(f.keyframe);
    assert!(!e.encode(Time::from_secs_f64(1.04), Rate(1e6), FPS).keyframe);
    e.reset();
    assert!(e.encode(Time::from_secs_f64(1.07), Rate(1e6), FPS).keyframe);
}

#[test]
fn a_zero_target_pauses_without_moving_the_state() {
    let mut e = LaggedEncoder::new(LaggedConfig::default(), 1);
    drive(&mut e, 1.0, |_| 1e6);
    let before = e.internal_rate();
    let f = e.encode(Time::from_secs_f64(1.0), Rate::ZERO, FPS);
    assert_eq!((f.size, f.keyframe, f.psnr_db), (0, false, None));
    assert_eq!(f.resolution, Some(Resolution::new(1280, 720)));
    assert_eq!(e.internal_rate(), before);
    // A pending keyframe waits for the first frame actually encoded.
    e.request_keyframe();
    assert_eq!(e.encode(Time::from_secs_f64(1.04), Rate::ZERO, FPS).size, 0);
    assert!(e.encode(Time::from_secs_f64(1.07), Rate(1e6), FPS).keyframe);
}

#[test]
fn each_rung_has_a_floor_and_a_saturation_rate() {
    let e = LaggedEncoder::new(LaggedConfig::default(), 1);
    let (floor, sat) = e.limits(FPS);
    // 720p: 0.01 and 0.45 bit/pixel × 1280·720 × 30 frame/s.
    assert!((floor.bps() - 276_480.0).abs() < 1e-6 && (sat.bps() - 12_441_600.0).abs() < 1e-6);
    let run = |res: &str, rate: f64| {
        let cfg = LaggedConfig {
            resolution: Resolution::parse(res).unwrap(),
            ..LaggedConfig::default()
        };
        let mut e = LaggedEncoder::new(cfg, 4);
        let frames = drive(&mut e, 60.0, |_| rate);
        let bytes: f64 = frames
            .iter()
            .filter(|(t, _)| *t >= 5.0)
            .map(|(_, f)| f.size as f64)
            .sum();
        let psnr = mean(
            &frames
                .iter()
                .filter_map(|(_, f)| f.psnr_db)
                .collect::<Vec<_>>(),
        );
        (bytes * 8.0 / 55.0, psnr)
    };
    // Below the floor the encoder overshoots to the floor; above saturation it undershoots.
    let (low, _) = run("720p", 100e3);
    let (high, _) = run("720p", 20e6);
    let (met, _) = run("360p", 100e3);
    eprintln!(
        "720p at 100 kbit/s: {low:.0}; at 20 Mbit/s: {high:.0}; 360p at 100 kbit/s: {met:.0}"
    );
    assert!((low / 276_480.0 - 1.0).abs() < 0.05, "{low}");
    assert!((high / 12_441_600.0 - 1.0).abs() < 0.05, "{high}");
    // A lower rung meets the same low target: 360p's floor is 69 kbit/s.
    assert!((met / 100e3 - 1.0).abs() < 0.05, "{met}");
    // Quality: at 4 Mbit/s 1080p beats 360p; at 200 kbit/s the order reverses.
    assert!(run("1080p", 4e6).1 > run("360p", 4e6).1);
    assert!(run("360p", 200e3).1 > run("1080p", 200e3).1);
}

#[test]
fn a_resolution_change_forces_a_keyframe_and_every_frame_reports_its_resolution() {
    let mut e = LaggedEncoder::new(LaggedConfig::default(), 1);
    let f = drive(&mut e, 1.0, |_| 1e6);
    assert!(f
        .iter()
        .all(|(_, f)| f.resolution == Some(Resolution::new(1280, 720))));
    let down = e.resolution().unwrap().step_down().unwrap();
    e.set_resolution(down).unwrap();
    assert_eq!(e.resolution(), Some(Resolution::new(960, 540)));
    let f = e.encode(Time::from_secs_f64(1.0), Rate(1e6), FPS);
    assert!(f.keyframe && f.resolution == Some(down));
    // Setting the current rung again changes nothing.
    e.set_resolution(down).unwrap();
    assert!(!e.encode(Time::from_secs_f64(1.04), Rate(1e6), FPS).keyframe);
    let err = e.set_resolution(Resolution::new(800, 600)).unwrap_err();
    assert!(err.contains("1080p, 720p"), "{err}");
}

#[test]
fn start_rate_shows_the_lag_from_the_first_frame() {
    let cfg = LaggedConfig {
        start_rate: Some(Rate(0.5e6)),
        burst_gain: 1.0,
        ..LaggedConfig::default()
    };
    let mut e = LaggedEncoder::new(cfg, 1);
    let frames = drive(&mut e, 6.0, |_| 2e6);
    let rate_in = |a: f64, b: f64| {
        let bytes: f64 = frames
            .iter()
            .filter(|(t, _)| *t >= a && *t < b)
            .map(|(_, f)| f.size as f64)
            .sum();
        bytes * 8.0 / (b - a)
    };
    // (The keyframe is paid back during the first second, which lowers it further.)
    assert!(rate_in(0.0, 0.5) < 1.2e6, "{}", rate_in(0.0, 0.5));
    assert!(
        (rate_in(4.0, 6.0) / 2e6 - 1.0).abs() < 0.06,
        "{}",
        rate_in(4.0, 6.0)
    );
}

/// A scenario table's fields as the model reads them.
fn parse(j: serde_json::Value) -> Result<LaggedConfig, EncoderError> {
    LaggedConfig::from_fields(j.as_object().expect("a table").iter())
}

/// Each table is refused, naming `field` in an error whose message contains `what`.
fn assert_refused(cases: &[(serde_json::Value, &str, &str)]) {
    for (bad, field, what) in cases {
        let (f, m) = parse(bad.clone()).unwrap_err();
        assert!(f == *field && m.contains(what), "{bad}: {f}: {m}");
    }
}

#[test]
fn table_fields_are_checked_and_named() {
    use serde_json::json;
    let c =
        parse(json!({"resolution": "1080p", "keyframe_interval": "10s", "start_rate": "300kbps"}))
            .unwrap();
    assert_eq!(c.resolution.name(), "1080p");
    assert_eq!(c.keyframe_interval, Some(Duration::from_millis(10_000)));
    assert_eq!(
        parse(json!({"keyframe_interval": "off"}))
            .unwrap()
            .keyframe_interval,
        None
    );
    assert_refused(&[
        (json!({"noise": -0.1}), "noise", "between"),
        (json!({"noise": "0.1"}), "noise", "expected a number"),
        (json!({"up": "0s"}), "up", "longer than 0s"),
        (json!({"down": 1}), "down", "string with a unit"),
        (
            json!({"resolution": "4k"}),
            "resolution",
            "valid resolutions",
        ),
        (
            json!({"floor_bpp": 0.5}),
            "saturation_bpp",
            "above floor_bpp",
        ),
        (json!({"start_rate": "0bps"}), "start_rate", "positive"),
        (json!({"keyframe_ratio": 0.5}), "keyframe_ratio", "between"),
    ]);
}

// -- libvpx's rate-control buffer ---------------------------------------------------------------

/// The default model with libvpx's buffer as libwebrtc sizes it, without content bursts (a
/// step's response is then the buffer's and the lag's alone).
fn buffered() -> LaggedConfig {
    LaggedConfig {
        burst_gain: 1.0,
        buffer: Some(RateBuffer::LIBWEBRTC),
        ..LaggedConfig::default()
    }
}

/// Mean output rate (bit/s) of `frames` captured in [a, b) s.
fn rate_in(frames: &[(f64, EncodedFrame)], a: f64, b: f64) -> f64 {
    let bytes: f64 = frames
        .iter()
        .filter(|(t, _)| *t >= a && *t < b)
        .map(|(_, f)| f.size as f64)
        .sum();
    bytes * 8.0 / (b - a)
}

/// The buffer's optimal level at `target` (bits) with the default buffer.
fn optimal_bits(target: f64) -> f64 {
    RateBuffer::LIBWEBRTC.optimal.as_secs_f64() * target
}

#[test]
fn after_a_step_up_the_underfull_buffer_cuts_the_frames_until_it_has_refilled() {
    // 10 s at 500 kbit/s (past the 150 frames after which the quantiser is bounded), then
    // 2 Mbit/s; the same step folded over 20 cycles. At 360p, as the calibration against VP8
    // (at 720p the floor, 276 kbit/s, is too close to 500 kbit/s for a dip below it).
    let at_360p = LaggedConfig {
        resolution: Resolution::new(640, 360),
        ..buffered()
    };
    let mut e = LaggedEncoder::new(at_360p.clone(), 1);
    let (mut before, mut dip, mut settled) = (0.0, 0.0, 0.0);
    let cycles = 20;
    for k in 0..cycles {
        let t0 = k as f64 * 20.0;
        let low = drive_from(&mut e, t0, 10.0, |_| 0.5e6);
        // Held at 500 kbit/s, the buffer sits between its optimal level and its size.
        let level = e.level.unwrap() / optimal_bits(0.5e6);
        assert!(
            (0.8..=1.0 / 0.6).contains(&level),
            "cycle {k}: level {level:.2} of optimal at 500 kbit/s"
        );
        let high = drive_from(&mut e, t0 + 10.0, 10.0, |_| 2e6);
        before += rate_in(&low, t0 + 9.5, t0 + 10.0) / cycles as f64;
        dip += rate_in(&high, t0 + 10.0, t0 + 10.3) / cycles as f64;
        settled += rate_in(&high, t0 + 13.0, t0 + 15.0) / cycles as f64;
    }
    eprintln!("before {before:.0}, first 300 ms after the step {dip:.0}, 3–5 s after {settled:.0}");
    // The dip: the frames right after the step are smaller than before it (measured 434 against
    // 510 kbit/s; VP8's fall further, to about a quarter, docs/encoders.md).
    assert!(dip < 0.9 * before, "dip {dip:.0}, before {before:.0}");
    // The recovery: 3–5 s after the step the output is the target.
    assert!((settled / 2e6 - 1.0).abs() < 0.05, "settled {settled:.0}");
    // Without the buffer there is no dip, only the lag.
    let mut e = LaggedEncoder::new(
        LaggedConfig {
            buffer: None,
            ..at_360p
        },
        1,
    );
    drive_from(&mut e, 0.0, 10.0, |_| 0.5e6);
    let high = drive_from(&mut e, 10.0, 1.0, |_| 2e6);
    assert!(rate_in(&high, 10.0, 10.3) > 0.5e6);
}

/// Encode `secs` seconds at `FPS` from `t0` with `target(t)`.
fn drive_from(
    e: &mut LaggedEncoder,
    t0: f64,
    secs: f64,
    target: impl Fn(f64) -> f64,
) -> Vec<(f64, EncodedFrame)> {
    let n = (secs * FPS).round() as usize;
    (0..n)
        .map(|i| {
            let t = t0 + i as f64 / FPS;
            (t, e.encode(Time::from_secs_f64(t), Rate(target(t)), FPS))
        })
        .collect()
}

#[test]
fn a_step_down_clips_the_surplus_above_the_new_size_and_a_deficit_is_carried() {
    let mut e = LaggedEncoder::new(buffered(), 2);
    drive_from(&mut e, 0.0, 10.0, |_| 2e6);
    let high_level = e.level.unwrap();
    assert!(high_level > 0.5e6, "{high_level}");
    // At 500 kbit/s the buffer holds at most 1 s of it: the surplus is lost, not spent.
    let f = e.encode(Time::from_secs_f64(10.0), Rate(0.5e6), FPS);
    let level = e.level.unwrap();
    let expected = 0.5e6 + 0.5e6 / FPS - 8.0 * f.size as f64;
    assert!((level - expected).abs() < 1e-6, "{level} vs {expected}");
    // A deficit is carried through a fall: from a level below zero (after, say, a burst of
    // large frames), the next frame at a lower target starts from exactly that level.
    e.level = Some(-0.2e6);
    let f = e.encode(Time::from_secs_f64(10.0 + 1.0 / FPS), Rate(0.3e6), FPS);
    let expected = -0.2e6 + 0.3e6 / FPS - 8.0 * f.size as f64;
    assert!((e.level.unwrap() - expected).abs() < 1e-6);
}

#[test]
fn at_a_constant_target_the_output_is_the_target_and_the_buffer_near_its_optimal_level() {
    for (rate, seed) in [(0.5e6, 1), (2e6, 2), (6e6, 3)] {
        let mut e = LaggedEncoder::new(buffered(), seed);
        let mut levels = Vec::new();
        let frames = drive_from(&mut e, 0.0, 120.0, |_| rate);
        for k in 0..600 {
            drive_from(&mut e, 120.0 + k as f64 / FPS, 1.0 / FPS, |_| rate);
            levels.push(e.level.unwrap());
        }
        let level = mean(&levels) / optimal_bits(rate);
        let out = rate_in(&frames, 10.0, 120.0);
        eprintln!("{rate}: level {level:.3} of optimal, output {out:.0}");
        // Around its optimal level, on average above it: the steering is stronger below the
        // optimal level (down to half the target and the quantiser bound) than above it
        // (+7.5 % at most).
        assert!((0.9..=1.4).contains(&level), "{rate}: level {level:.3}");
        assert!((out / rate - 1.0).abs() < 0.02, "{rate}: {out:.0}");
    }
}

#[test]
fn the_buffer_is_deterministic_off_by_default_and_off_in_the_vidaptive_pin() {
    let run = |cfg: LaggedConfig, seed| {
        let mut e = LaggedEncoder::new(cfg, seed);
        drive(&mut e, 30.0, fig2_target)
            .into_iter()
            .map(|(_, f)| f.size)
            .collect::<Vec<_>>()
    };
    assert_eq!(run(buffered(), 3), run(buffered(), 3));
    assert_ne!(run(buffered(), 3), run(buffered(), 4));
    let off = LaggedConfig {
        buffer: None,
        ..buffered()
    };
    assert_ne!(run(buffered(), 3), run(off, 3));
    assert_eq!(LaggedConfig::default().buffer, None);
    // The scenarios that reproduce Vidaptive write the paper's parameters out; they are
    // `vidaptive_paper()`, without a buffer.
    let table: toml::Table = toml::from_str(&format!("e = {{ {VIDAPTIVE_PAPER_TOML} }}")).unwrap();
    let json = serde_json::to_value(&table["e"]).unwrap();
    let parsed = LaggedConfig::from_fields(json.as_object().unwrap().iter()).unwrap();
    assert_eq!(parsed, LaggedConfig::vidaptive_paper());
    assert_eq!(parsed.buffer, None);
}

#[test]
fn buffer_fields_are_checked_and_named() {
    use serde_json::json;
    assert_eq!(parse(json!({})).unwrap().buffer, None);
    assert_eq!(parse(json!({"buffer_size": "off"})).unwrap().buffer, None);
    // Any buffer field turns it on, with libwebrtc's values for the others.
    assert_eq!(
        parse(json!({"buffer_size": "1s"})).unwrap().buffer,
        Some(RateBuffer::LIBWEBRTC)
    );
    let b = parse(
        json!({"buffer_initial": "0s", "buffer_optimal": "300ms", "buffer_size": "2s",
                         "undershoot_pct": 50, "overshoot_pct": 0}),
    )
    .unwrap()
    .buffer
    .unwrap();
    assert_eq!(
        (
            b.initial,
            b.optimal,
            b.size,
            b.undershoot_pct,
            b.overshoot_pct
        ),
        (
            Duration::ZERO,
            Duration::from_millis(300),
            Duration::from_millis(2000),
            50.0,
            0.0
        )
    );
    assert_refused(&[
        (
            json!({"buffer_optimal": "2s"}),
            "buffer_optimal",
            "at most buffer_size",
        ),
        (
            json!({"buffer_initial": "1.5s"}),
            "buffer_initial",
            "at most buffer_size",
        ),
        (
            json!({"buffer_size": "0s"}),
            "buffer_size",
            "longer than 0s",
        ),
        (
            json!({"buffer_size": 1}),
            "buffer_size",
            "string with a unit",
        ),
        (
            json!({"buffer_optimal": "0s"}),
            "buffer_optimal",
            "longer than 0s",
        ),
        (json!({"undershoot_pct": 150}), "undershoot_pct", "between"),
        (json!({"overshoot_pct": -1}), "overshoot_pct", "between"),
        (
            json!({"overshoot_pct": "15"}),
            "overshoot_pct",
            "expected a number",
        ),
        (
            json!({"buffer_size": "off", "buffer_optimal": "600ms"}),
            "buffer_optimal",
            "buffer is off",
        ),
        (json!({"buffer_initial": "soon"}), "buffer_initial", ""),
    ]);
}

/// Peak-constrained rate control (a flow's `vbv`, C³G's testbed encoder, c3g_rtvl §VI-A): no
/// frame above `peak` frame targets, keyframes and scene cuts included, and the long-run rate
/// still the target (the debt raises the budget of the frames the cap left short); a frame the
/// cap cut is coded coarser, so its PSNR falls.
#[test]
fn a_peak_constraint_caps_every_frame_and_keeps_the_rate() {
    let nominal = 1e6 / 8.0 / FPS;
    for peak in [1.0, 1.5] {
        let cfg = LaggedConfig {
            peak: Some(peak),
            burst_every: Duration::from_millis(2000),
            ..LaggedConfig::default()
        };
        let mut e = LaggedEncoder::new(cfg, 3);
        let frames = drive(&mut e, 120.0, |_| 1e6);
        let largest = frames
            .iter()
            .map(|(_, f)| f.size as f64)
            .fold(0.0, f64::max);
        assert!(
            largest <= peak * nominal + 1.0,
            "peak {peak}: a frame of {largest} bytes, cap {}",
            peak * nominal
        );
        assert!(frames[0].1.keyframe && frames[0].1.size as f64 <= peak * nominal + 1.0);
        let bytes: f64 = frames
            .iter()
            .filter(|(t, _)| *t >= 10.0)
            .map(|(_, f)| f.size as f64)
            .sum();
        let ratio = bytes * 8.0 / 110.0 / 1e6;
        assert!(
            (0.95..=1.01).contains(&ratio),
            "peak {peak}: {ratio} of the target"
        );
    }
    // The cut keyframe is coded coarser than the unconstrained one.
    let psnr = |peak| {
        let cfg = LaggedConfig {
            peak,
            ..LaggedConfig::default()
        };
        LaggedEncoder::new(cfg, 3)
            .encode(Time::ZERO, Rate(1e6), FPS)
            .psnr_db
            .unwrap()
    };
    assert!(
        psnr(Some(1.0)) < psnr(None) - 1.0,
        "{} {}",
        psnr(Some(1.0)),
        psnr(None)
    );
}
