//! Video that adapts like a real sender, on links far below the encoder's range: the bounded
//! sender queue, the frame dropper, quality scaling and the media range, for gcc, sqp and
//! vidaptive with the lagged encoder (720p source, whose lowest rate at 720p30 is 276 kbit/s).
//!
//! The link steps between 0.3 and 1.5 Mbit/s with three seconds of no capacity at all. The
//! checks are the ones a viewer and a network operator care about:
//! - the sender's own queue stays short: capture → last packet sent below 1 s at P95;
//! - the encoder never runs ahead of its target: over every 2 s window, at most 25 % above the
//!   sum of the frames' targets;
//! - resolution and frame rate follow the degradation policy: for gcc and sqp the policy
//!   replayed on the logged targets gives every encoded frame's resolution and bounds the frame
//!   rate; vidaptive (its own resolution rule) never codes a resolution its target cannot hold.

use crate::common;

use common::simulate;
use rtcc_core::media::degradation::{Degradation, Preference, Step};
use rtcc_core::media::encoder::LaggedConfig;
use rtcc_core::media::Resolution;
use rtcc_core::metrics::FrameRecord;
use rtcc_core::net::tracegen::{generate_lte, LteTraceConfig};
use rtcc_core::{Rate, Time};
use rtcc_sim::RunResult;

const SOURCE: Resolution = Resolution::new(1280, 720);

fn low_rate_link(controller: &str, extra: &str) -> String {
    low_rate_link_with(controller, "\"lagged\"", extra)
}

/// [`low_rate_link`] with another encoder (a TOML value).
fn low_rate_link_with(controller: &str, encoder: &str, extra: &str) -> String {
    format!(
        r#"
duration = "60s"
seed = 2
[path.forward]
schedule = [["0s", "1.5Mbps"], ["10s", "0.3Mbps"], ["25s", "0kbps"], ["28s", "0.8Mbps"],
            ["40s", "0.4Mbps"], ["50s", "1.2Mbps"]]
delay = "25ms"
queue = "100pkts"
[path.reverse]
delay = "25ms"
[[flows]]
controller = "{controller}"
encoder = {encoder}
{extra}
"#
    )
}

fn policy() -> Degradation {
    let floor_bpp = LaggedConfig::default().floor_bpp;
    Degradation::new(Preference::Balanced, Some(SOURCE), 10.0, 30.0, &|r, fps| {
        Rate(floor_bpp * r.pixels() * fps)
    })
}

fn frames(r: &RunResult) -> &[FrameRecord] {
    &r.flows[0].frames
}

/// Largest ratio of encoded bits to the frames' targets over 2 s windows (by capture time).
fn worst_overshoot(frames: &[FrameRecord], fps: f64) -> (f64, f64) {
    let mut worst = (0.0, 0.0);
    for (i, f) in frames.iter().enumerate() {
        let end = f.capture.as_secs_f64() + 2.0;
        if end > frames.last().unwrap().capture.as_secs_f64() + 1.0 / fps {
            break; // whole windows only
        }
        let window: Vec<&FrameRecord> = frames[i..]
            .iter()
            .take_while(|g| g.capture.as_secs_f64() < end)
            .collect();
        let bits: f64 = window.iter().map(|g| g.size as f64 * 8.0).sum();
        let budget: f64 = window.iter().map(|g| g.target_bps / fps).sum();
        if budget > 0.0 && bits / budget > worst.0 {
            worst = (bits / budget, f.capture.as_secs_f64());
        }
    }
    worst
}

/// The lowest exit rate of the policy's steps at `res` (what the target must hold for it).
fn min_exit(p: &Degradation, res: Resolution) -> f64 {
    p.steps()
        .iter()
        .filter(|s| s.resolution == Some(res))
        .map(|s| s.exit.bps())
        .fold(f64::INFINITY, f64::min)
}

fn check_common(name: &str, r: &RunResult) {
    let s = &r.summary.flows[0];
    let wait = s.sender_wait_ms.p95.unwrap();
    eprintln!(
        "{name}: sender wait P95 {wait:.0} ms, latency P95 {:.0} ms, shown {:.1} fps, \
         skipped {}, video {:.0} kbit/s",
        s.frame_latency_ms.p95.unwrap(),
        s.display_rate_fps,
        s.frames_skipped,
        s.video_bitrate_bps / 1e3
    );
    assert!(wait < 1000.0, "{name}: sender wait P95 {wait} ms");
    let (ratio, at) = worst_overshoot(frames(r), 30.0);
    assert!(
        ratio <= 1.25,
        "{name}: the encoder produced {ratio:.2}x its target over the 2 s from {at:.1} s"
    );
    // No frame is coded at a resolution whose lowest exit rate the target (averaged over the
    // last second, as the policy reads it) is below.
    let p = policy();
    let fr = frames(r);
    for (i, f) in fr.iter().enumerate().filter(|(_, f)| f.size > 0) {
        let from = f.capture.as_secs_f64() - 1.0;
        let recent: Vec<f64> = fr[..=i]
            .iter()
            .rev()
            .take_while(|g| g.capture.as_secs_f64() > from)
            .map(|g| g.target_bps)
            .collect();
        let mean = recent.iter().sum::<f64>() / recent.len() as f64;
        let res = f.resolution.unwrap();
        assert!(
            mean >= min_exit(&p, res) || res == Resolution::new(320, 180),
            "{name}: frame {} coded at {res} with a mean target of {:.0} kbit/s",
            f.frame,
            mean / 1e3
        );
    }
    // The sender keeps going after the outage: frames shown in the last 10 s.
    let late = frames(r)
        .iter()
        .filter(|f| f.display.is_some_and(|t| t >= Time::from_millis(50_000)))
        .count();
    assert!(late > 100, "{name}: {late} frames shown in the last 10 s");
}

#[test]
fn gcc_and_sqp_follow_the_balanced_policy_and_keep_the_sender_queue_short() {
    for name in ["gcc", "sqp"] {
        let r = simulate(&low_rate_link(name, ""));
        check_common(name, &r);
        // Replay the policy on the logged targets: it gives every encoded frame's resolution,
        // and each second has no more encoded frames than the step's frame rate allows.
        let mut p = policy();
        let fr = frames(&r);
        p.start_at(Rate(fr[0].target_bps));
        let steps: Vec<Step> = fr
            .iter()
            .map(|f| p.on_frame(f.capture, Rate(f.target_bps)))
            .collect();
        for (f, s) in fr.iter().zip(&steps).filter(|(f, _)| f.size > 0) {
            assert_eq!(
                f.resolution,
                s.resolution,
                "{name}: frame {} at {:.2} s",
                f.frame,
                f.capture.as_secs_f64()
            );
        }
        for second in 0..60 {
            let idx: Vec<usize> = (0..fr.len())
                .filter(|&i| fr[i].capture.as_secs_f64() as u64 == second)
                .collect();
            let top = idx.iter().map(|&i| steps[i].fps).fold(0.0, f64::max);
            let encoded = idx.iter().filter(|&&i| fr[i].size > 0).count();
            assert!(
                encoded as f64 <= top + 1.0,
                "{name}: {encoded} frames encoded in second {second} at {top} frame/s"
            );
        }
        // At 0.3 Mbit/s the policy is far below 720p30: 360p at 15 frame/s or lower.
        let low: Vec<&FrameRecord> = fr
            .iter()
            .filter(|f| f.size > 0 && (15.0..25.0).contains(&f.capture.as_secs_f64()))
            .collect();
        assert!(
            low.iter().all(|f| f.resolution.unwrap().height <= 360),
            "{name}: frames above 360p on the 0.3 Mbit/s link"
        );
    }
}

#[test]
fn on_a_bursty_low_rate_cellular_trace_every_controller_keeps_its_bounds() {
    // A synthetic LTE-like trace, 0.6 Mbit/s mean with the usual fading, an outage of 1 s on
    // average every 10 s, delivered in 20 ms bursts (aggregation), 50-packet queue.
    let mut cfg = LteTraceConfig::new(7, rtcc_core::Duration::from_millis(60_000), Rate(0.6e6));
    cfg.outage_every = rtcc_core::Duration::from_millis(10_000);
    cfg.outage_mean = rtcc_core::Duration::from_millis(1000);
    let lines: Vec<String> = generate_lte(&cfg)
        .unwrap()
        .iter()
        .map(u64::to_string)
        .collect();
    let path = std::env::temp_dir().join(format!("rtcc-adaptation-{}.trace", std::process::id()));
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    for name in ["gcc", "sqp", "vidaptive"] {
        let toml = low_rate_link(name, "")
            .replace(
                r#"schedule = [["0s", "1.5Mbps"], ["10s", "0.3Mbps"], ["25s", "0kbps"], ["28s", "0.8Mbps"],
            ["40s", "0.4Mbps"], ["50s", "1.2Mbps"]]"#,
                &format!("trace = {:?}\naggregation = \"20ms\"", path.display().to_string()),
            )
            .replace("100pkts", "50pkts");
        assert!(toml.contains("aggregation"), "the link was replaced");
        let r = simulate(&toml);
        check_common(name, &r);
    }
    let _ = std::fs::remove_file(&path);
}

#[test]
fn vidaptive_keeps_its_own_resolution_rule_but_never_codes_above_its_target() {
    let r = simulate(&low_rate_link("vidaptive", ""));
    check_common("vidaptive", &r);
    let top = frames(&r)
        .iter()
        .filter_map(|f| f.resolution.filter(|_| f.size > 0))
        .max_by_key(|r| r.pixels() as u64)
        .unwrap();
    assert!(top.pixels() <= SOURCE.pixels(), "vidaptive coded at {top}");
}

#[test]
fn the_rfc8868_media_range_bounds_every_controllers_target() {
    // RFC 8868's media range: start and minimum 150 kbit/s, maximum 1.5 Mbit/s.
    let range = r#"min_bitrate = "150kbps"
start_bitrate = "150kbps"
max_bitrate = "1.5Mbps""#;
    for name in ["gcc", "sqp", "vidaptive", "copa"] {
        let toml = low_rate_link(name, range).replace(
            r#"schedule = [["0s", "1.5Mbps"]"#,
            r#"schedule = [["0s", "6Mbps"]"#,
        );
        let r = simulate(&toml);
        // The sender's target (the controller's, inside the range) as logged.
        let targets = common::signal(&r, 0, "target_bps");
        let rate_based = name == "gcc" || name == "sqp";
        if rate_based {
            assert!(
                (targets[0].1 - 150e3).abs() < 1.0,
                "{name}: first target {:.0}",
                targets[0].1
            );
        }
        for &(t, v) in &targets {
            assert!(
                v <= 1.5e6 + 1e-6,
                "{name}: target {v:.0} above the maximum at {t:.2} s"
            );
            if rate_based {
                assert!(
                    v >= 150e3 - 1e-6,
                    "{name}: target {v:.0} below the minimum at {t:.2} s"
                );
            }
        }
        // Every frame's encoder target too (repairs are paid from it, so it may be lower).
        assert!(frames(&r).iter().all(|f| f.target_bps <= 1.5e6 + 1e-6));
        // On a 6 Mbit/s start the rate-based controllers reach the maximum and stay there.
        if rate_based {
            assert!(
                targets.iter().any(|&(t, v)| t < 10.0 && v >= 1.5e6 - 1.0),
                "{name}: never at the maximum in the first 10 s"
            );
        }
    }
}

#[test]
fn pushback_can_be_switched_off_as_in_stock_libwebrtc() {
    let last = |r: &RunResult, name: &str| common::signal(r, 0, name).last().map_or(0.0, |x| x.1);
    // The paper's slower encoder (2 s up, 1 s down: the lagged defaults before the VP8 fit)
    // overshoots the link's drops long enough for copa's window to queue a second of media; with
    // the VP8 fit's faster descent the queue stays below the second at which pushback skips.
    let paper = format!(
        "{{ model = \"lagged\", {} }}",
        rtcc_core::media::encoder::lagged::VIDAPTIVE_PAPER_TOML
    );
    let on = simulate(&low_rate_link_with("copa", &paper, ""));
    let off = simulate(&low_rate_link_with("copa", &paper, "pushback = false"));
    let (skipped_on, skipped_off) = (
        last(&on, "skipped_pushback"),
        last(&off, "skipped_pushback"),
    );
    assert!(
        skipped_on > 0.0,
        "copa's window fills the pacer queue: pushback skips frames"
    );
    assert_eq!(skipped_off, 0.0);
    // Without pushback the sender's queue is longer, but the pacer still drains it within 2 s.
    let wait = |r: &RunResult| r.summary.flows[0].sender_wait_ms.p95.unwrap();
    eprintln!(
        "copa sender wait P95: pushback {:.0} ms, none {:.0} ms",
        wait(&on),
        wait(&off)
    );
    assert!(wait(&off) > wait(&on) && wait(&off) < 2500.0);
}

#[test]
fn frame_dropper_can_be_switched_off_for_a_server_that_keeps_its_frame_rate() {
    let last = |r: &RunResult, name: &str| common::signal(r, 0, name).last().map_or(0.0, |x| x.1);
    let sent = |r: &RunResult| frames(r).iter().filter(|f| f.size > 0).count();
    let extra = "degradation = \"disabled\"\npushback = false";
    let on = simulate(&low_rate_link("gcc", extra));
    let off = simulate(&low_rate_link(
        "gcc",
        &format!("{extra}\nframe_dropper = false"),
    ));
    assert!(
        last(&on, "skipped_dropper") > 0.0,
        "the lagged encoder overshoots the link's drops: the dropper skips frames"
    );
    assert_eq!(last(&off, "skipped_dropper"), 0.0, "no dropper, no skip");
    // With neither the dropper nor the frame-rate policy nor pushback, every frame is sent.
    assert_eq!(sent(&off), frames(&off).len(), "a frame was skipped");
    assert!(sent(&off) > sent(&on));
}
