//! Whole-simulation behaviour of `vidaptive` (Karimi et al., arXiv 2309.16869 v1) on the
//! paper's periodic link (§2.1, Fig. 1): 2 Mbit/s and 500 kbit/s alternating every 40 s, 50 ms
//! RTT, a buffer deep enough that nothing is dropped. The video is the `lagged` encoder with the
//! paper's parameters (`LaggedConfig::vidaptive_paper`: 2 s to follow a higher target, 1 s a lower
//! one, noisy frames: the encoder behaviour Vidaptive is built for; the defaults are a VP8 fit).
//! Each tolerance is written next to the paper's number. Run with `--nocapture` to see the
//! measured values.

use rtcc_core::media::encoder::lagged::VIDAPTIVE_PAPER_TOML;
use rtcc_core::metrics::frame_delays;
use rtcc_core::packet::PacketKind;
use rtcc_core::Time;
use rtcc_sim::RunResult;

use crate::common;

/// A controller signal of flow 0 as (seconds, value).
fn signal(r: &RunResult, name: &str) -> Vec<(f64, f64)> {
    common::signal(r, 0, name)
}

const LINK: &str = r#"
duration = "120s"
[path.forward]
schedule = "alternate-2m-500k.sched"
delay = "25ms"
queue = "unlimited"
"#;

fn simulate(flow: &str) -> RunResult {
    simulate_on(LINK, flow)
}

fn simulate_on(link: &str, flow: &str) -> RunResult {
    let toml = format!("{link}[[flows]]\n{flow}\n");
    common::simulate_in(&toml, &common::repo_dir("traces"))
}

fn vidaptive(params: &str) -> RunResult {
    simulate(&format!(
        "controller = \"vidaptive\"\n{}\nparams = {{ {params} }}",
        paper_encoder()
    ))
}

/// The encoder line: the lagged model with the paper's parameters.
fn paper_encoder() -> String {
    format!("encoder = {{ model = \"lagged\", {VIDAPTIVE_PAPER_TOML} }}")
}

/// Bits per second of flow 0's packets (of the kinds `keep` accepts) leaving the bottleneck in
/// `[a, b)` s.
fn rate(r: &RunResult, a: f64, b: f64, keep: impl Fn(PacketKind) -> bool) -> f64 {
    let (a_t, b_t) = (Time::from_secs_f64(a), Time::from_secs_f64(b));
    let bytes: u64 = r.flows[0]
        .packets
        .iter()
        .filter(|p| keep(p.kind) && p.depart.is_some_and(|d| d >= a_t && d < b_t))
        .map(|p| p.size as u64)
        .sum();
    bytes as f64 * 8.0 / (b - a)
}

fn total(r: &RunResult, a: f64, b: f64) -> f64 {
    rate(r, a, b, |_| true)
}

fn video(r: &RunResult, a: f64, b: f64) -> f64 {
    rate(r, a, b, |k| k == PacketKind::Media)
}

/// Seconds after `from` until a 500 ms window of everything flow 0 sends first carries
/// `level` bit/s (windows start every 100 ms); `None` if not before `until`.
fn ramp(r: &RunResult, from: f64, until: f64, level: f64) -> Option<f64> {
    let mut t = from;
    while t + 0.5 <= until {
        if total(r, t, t + 0.5) >= level {
            return Some(t + 0.5 - from);
        }
        t += 0.1;
    }
    None
}

/// Largest frame delay (ms) of frames captured in `[a, b)` s.
fn max_frame_delay_ms(r: &RunResult, a: f64, b: f64) -> f64 {
    let frames = &r.flows[0].frames;
    frame_delays(frames, Time::from_secs_f64(120.0))
        .iter()
        .zip(frames)
        .filter(|(_, f)| (a..b).contains(&f.capture.as_secs_f64()))
        .filter_map(|(d, _)| d.map(|d| d.as_millis_f64()))
        .fold(0.0, f64::max)
}

#[test]
fn e1_vidaptive_tracks_backlogged_copa_and_ramps_in_seconds_where_gcc_takes_many() {
    let v = vidaptive("");
    let copa = simulate("kind = \"tcp\"\ncontroller = \"copa\"\nparams = { delta = 0.9 }");
    let gcc = simulate(&format!("controller = \"gcc\"\n{}", paper_encoder()));
    assert_eq!(v.summary.flows[0].packets_lost, 0);

    // Ramp after the link opens at 80 s. Paper (Fig. 1a): Vidaptive follows backlogged Copa,
    // which "reacts within a few RTTs"; the reproduction criterion is 90 % of 2 Mbit/s within
    // 3 s. Asserted ≤ 3 s for the total rate (video and dummies).
    let v_ramp = ramp(&v, 80.0, 120.0, 0.9 * 2e6).expect("vidaptive never reached 1.8 Mbit/s");
    let c_ramp = ramp(&copa, 80.0, 120.0, 0.9 * 2e6).expect("copa never reached 1.8 Mbit/s");
    // GCC: paper 18 s from 500 kbit/s to 2 Mbit/s. Its target is what it will send; asserted
    // ≥ 10 s (and a run that never gets there within the 40 s counts as 40 s).
    let g_ramp = signal(&gcc, "target_bps")
        .iter()
        .find(|&&(t, b)| t >= 80.0 && b >= 0.9 * 2e6)
        .map_or(40.0, |&(t, _)| t - 80.0);
    eprintln!(
        "E1 ramp to 90 % of 2 Mbit/s after 80 s: vidaptive {v_ramp:.1} s, backlogged copa \
         {c_ramp:.1} s, gcc {g_ramp:.1} s (paper: copa/vidaptive within seconds, gcc 18 s)"
    );
    assert!(v_ramp <= 3.0, "vidaptive ramp {v_ramp:.1} s");
    assert!(g_ramp >= 10.0, "gcc ramp {g_ramp:.1} s");
    assert!(g_ramp >= 3.0 * v_ramp);

    // Total rate within ±10 % of backlogged Copa once settled (paper: "nearly identical").
    for (a, b) in [(3.0, 40.0), (43.0, 80.0), (83.0, 120.0)] {
        let (tv, tc) = (total(&v, a, b), total(&copa, a, b));
        let vid = video(&v, a, b);
        eprintln!(
            "E1 [{a}, {b}) s: vidaptive {:.3} Mbit/s ({:.3} video), copa {:.3}, gcc {:.3} Mbit/s",
            tv / 1e6,
            vid / 1e6,
            tc / 1e6,
            total(&gcc, a, b) / 1e6
        );
        assert!((tv / tc - 1.0).abs() <= 0.10, "[{a}, {b}): {tv} vs {tc}");
        // The video itself carries most of it (the encoder target is α·CC-Rate).
        assert!(vid >= 0.5 * tv, "[{a}, {b}): video {vid} of {tv}");
    }

    // Frame rate: the paper's Vidaptive loses about 10 % of frames to pauses on cellular traces
    // (27 frame/s on average, 21 at worst). Asserted: at least 20 of 30 frame/s encoded here.
    let encoded = v.flows[0].frames.iter().filter(|f| f.size > 0).count() as f64 / 120.0;
    let last = |name: &str| signal(&v, name).last().map_or(f64::NAN, |x| x.1);
    eprintln!(
        "E1 vidaptive: {encoded:.1} frames/s encoded, {} paused, {} resets, {} resolution changes",
        last("paused_frames"),
        last("resets"),
        last("resolution_changes")
    );
    assert!(encoded >= 20.0, "{encoded:.1} frames/s");

    // The drop at 40 s. Paper: GCC's frame latency spikes above 1 s; Vidaptive's stays far
    // lower (pause and reset cap the sender queue). Reproduction criterion: ≤ 1/2 of GCC's
    // (≤ 1/3 before every sender got libwebrtc's queue bound and frame dropper: GCC's spike
    // fell from 2.9 s to 0.8 s, Vidaptive's is 0.3 s either way; docs/vidaptive.md).
    let (sv, sg) = (
        max_frame_delay_ms(&v, 40.0, 50.0),
        max_frame_delay_ms(&gcc, 40.0, 50.0),
    );
    eprintln!("E1 worst frame delay 40–50 s: vidaptive {sv:.0} ms, gcc {sg:.0} ms (paper >1000)");
    assert!(sv <= sg / 2.0, "vidaptive {sv:.0} ms vs gcc {sg:.0} ms");
}

#[test]
fn e2_dummies_shorten_the_ramp_of_the_window_controller() {
    // Paper Fig. 10 (5 → 2 → 5 Mbit/s): transport changes only (α = 1, no safeguards): Copa with
    // dummies reaches 90 % of the capacity in 2 s, Copa without them in 6 s. Here on the 2 ↔ 0.5
    // Mbit/s link. Asserted: with dummies ≤ 3 s, without ≥ 2× as long.
    let transport = "alpha = 1.0, safeguards = false, adapt_resolution = false";
    let with = vidaptive(transport);
    let without = vidaptive(&format!("{transport}, dummies = false"));
    let w = ramp(&with, 80.0, 120.0, 0.9 * 2e6).expect("with dummies: never reached");
    let wo = ramp(&without, 80.0, 120.0, 0.9 * 2e6).unwrap_or(40.0);
    let padding = |r: &RunResult, a, b| rate(r, a, b, |k| k == PacketKind::Padding);
    eprintln!(
        "E2 ramp after 80 s: with dummies {w:.1} s (paper 2 s), without {wo:.1} s (paper 6 s); \
         dummies 80–83 s {:.3} Mbit/s, 100–120 s {:.3} Mbit/s; total 83–120 s {:.3} vs {:.3}",
        padding(&with, 80.0, 83.0) / 1e6,
        padding(&with, 100.0, 120.0) / 1e6,
        total(&with, 83.0, 120.0) / 1e6,
        total(&without, 83.0, 120.0) / 1e6,
    );
    assert!(w <= 3.0, "with dummies {w:.1} s");
    assert!(wo >= 2.0 * w, "without dummies {wo:.1} s vs {w:.1} s");
    assert_eq!(padding(&without, 0.0, 120.0), 0.0);
}

/// Coefficient of variation of flow 0's total rate in 200 ms bins over `[a, b)` s.
fn rate_cv(r: &RunResult, a: f64, b: f64) -> f64 {
    let bins: Vec<f64> = (0..((b - a) / 0.2).round() as usize)
        .map(|i| total(r, a + 0.2 * i as f64, a + 0.2 * (i + 1) as f64))
        .collect();
    let m = bins.iter().sum::<f64>() / bins.len() as f64;
    let var = bins.iter().map(|x| (x - m).powi(2)).sum::<f64>() / bins.len() as f64;
    var.sqrt() / m
}

#[test]
fn e2_on_fig_10s_link_dummies_ramp_in_seconds_and_steady_the_rate() {
    // Paper Fig. 10: 5 → 2 → 5 Mbit/s, 40 s each; Copa+Dummy reaches 90 % of the capacity 2 s
    // after the increase at 80 s, Copa alone 6 s; Copa's rate is the more variable one.
    // Asserted: with dummies ≤ 3 s, without ≥ 2× that; the steady-state coefficient of variation
    // (200 ms bins, 90–120 s) lower with dummies.
    //
    // α = 1 and no resolution changes as in Fig. 10, but with the pause/reset safeguards on: with
    // them off, the lagged encoder's slow descent at 40 s leaves over a second of video queued at
    // the sender (mean frame delay ~1.25 s in 70–80 s), which keeps the window full whether or
    // not dummies are sent (then 0.9 s vs 1.0 s). Vidaptive's safeguards bound that queue, as
    // WebRTC's pacer did in the paper's testbed.
    let link = r#"
duration = "120s"
[path.forward]
schedule = [["0s", "5Mbps"], ["40s", "2Mbps"], ["80s", "5Mbps"]]
delay = "25ms"
queue = "unlimited"
"#;
    let transport = "alpha = 1.0, adapt_resolution = false";
    let run = |extra: &str| {
        simulate_on(
            link,
            &format!(
                "controller = \"vidaptive\"\n{}\nparams = {{ {transport}{extra} }}",
                paper_encoder()
            ),
        )
    };
    let (with, without) = (run(""), run(", dummies = false"));
    let w = ramp(&with, 80.0, 120.0, 0.9 * 5e6).unwrap_or(40.0);
    let wo = ramp(&without, 80.0, 120.0, 0.9 * 5e6).unwrap_or(40.0);
    let (cw, cwo) = (rate_cv(&with, 90.0, 120.0), rate_cv(&without, 90.0, 120.0));
    eprintln!(
        "E2 (5→2→5 Mbit/s) ramp after 80 s: with dummies {w:.1} s (paper 2 s), without {wo:.1} s \
         (paper 6 s); rate CV 90–120 s {cw:.3} vs {cwo:.3}; total {:.2} vs {:.2} Mbit/s",
        total(&with, 90.0, 120.0) / 1e6,
        total(&without, 90.0, 120.0) / 1e6
    );
    assert!(w <= 3.0, "with dummies {w:.1} s");
    assert!(wo >= 2.0 * w, "without dummies {wo:.1} s vs {w:.1} s");
    assert!(cw < cwo, "CV {cw:.3} vs {cwo:.3}");
}

#[test]
fn e1_the_rocc_variant_also_follows_the_link() {
    // Paper §4/§5.2: Vidaptive over RoCC (γ = 0.5) shows the same directions as over Copa.
    // Asserted as for Copa: 90 % of 2 Mbit/s within 3 s of 80 s, and ≥ 90 % of the link's
    // 2 Mbit/s in total over [83, 120) s.
    let v = vidaptive("cc = \"rocc\"");
    let up = ramp(&v, 80.0, 120.0, 0.9 * 2e6).unwrap_or(40.0);
    let t = total(&v, 83.0, 120.0);
    eprintln!(
        "E1 rocc: ramp {up:.1} s, total {:.3} Mbit/s ({:.3} video) in [83, 120) s",
        t / 1e6,
        video(&v, 83.0, 120.0) / 1e6
    );
    assert!(up <= 3.0, "ramp {up:.1} s");
    assert!(t >= 0.9 * 2e6, "{t}");
}

#[test]
fn over_bbr_by_name_it_delivers_video() {
    // `cc` names any registered window controller; BBR with its defaults, on a 2 Mbit/s link.
    let link = "duration = \"20s\"\n[path.forward]\ncapacity = \"2Mbps\"\ndelay = \"25ms\"\n";
    let v = simulate_on(
        link,
        &format!(
            "controller = \"vidaptive\"\n{}\nparams = {{ cc = \"bbr\" }}",
            paper_encoder()
        ),
    );
    let (t, m) = (total(&v, 10.0, 20.0), video(&v, 10.0, 20.0));
    let delivered = v.flows[0]
        .frames
        .iter()
        .filter(|f| f.complete.is_some())
        .count();
    eprintln!(
        "vidaptive over bbr [10, 20) s: {:.3} Mbit/s ({:.3} video), {delivered} frames whole",
        t / 1e6,
        m / 1e6
    );
    assert!(m >= 0.5 * 2e6, "video {m}");
    assert!(delivered >= 450, "{delivered} of 600 frames");
}
