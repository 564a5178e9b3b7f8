//! A run's facts: what the core knows about the route of each flow and what it received, in the
//! 1 s windows the RMCAT rules judge ([`crate::windows`]). A run folder holds them as
//! `facts.json` ([`RunFacts::to_json`]) beside `summary.json`, which they leave untouched.
//!
//! - **Links**: every link of the path, named as the rules name them: `forward` and `reverse`
//!   for one link pair, and for several hops each hop's forward link by the hop's name (`b1`)
//!   and its reverse link as `"<hop> reverse"`; forward links first, in path order, then the
//!   reverse links. Each with its hop, direction, propagation delay, its capacity in each
//!   window (`None`: unlimited) and its segments of constant capacity.
//! - **Flows**: the links a flow's data crosses, in order (a `reverse` flow crosses the
//!   reverse links last hop first), the propagation delay between the first of them and the last
//!   (the delays of all but the last: what a packet's enqueue-to-departure time in the packet log
//!   includes besides queuing), its active periods, its media range and coupling priority, and
//!   the bit rate it received in each window, by arrival time.
//!
//! A link's capacity in a window is the mean of the capacity log's 100 ms bins
//! ([`CAPACITY_BIN`], the bins of `capacity.parquet`) that start in it. Its segments are the runs
//! of equal bins, each with the mean of its windows; a link whose capacity changes more than
//! [`MAX_STEPS`] times (a trace) is cut into [`TRACE_SEGMENT_S`] pieces instead.

use crate::capacity::PathCapacity;
use crate::flow::FlowKind;
use crate::outcome::{capacity_series, RunResult, CAPACITY_BIN};
use crate::path::LinkConfig;
use crate::scenario::Scenario;
use crate::windows;
use rtcc_core::metrics::arrival_windows;
use rtcc_core::Time;
use serde::Serialize;

/// A link whose capacity log changes more than this many times is a trace, not a schedule.
pub const MAX_STEPS: usize = 50;
/// A trace link's segments: fixed pieces of this many seconds (judgement call: RMCAT judges a
/// trace link by its mean over each piece).
pub const TRACE_SEGMENT_S: f64 = 10.0;

/// What a run's `facts.json` holds (see the module header).
#[derive(Debug, Clone, Serialize)]
pub struct RunFacts {
    /// The windows' length (s) and count: window `k` is `[k, k+1)` windows from time zero, the
    /// last one partial when the run is not a whole number of windows.
    pub window_s: f64,
    pub windows: usize,
    pub links: Vec<LinkFacts>,
    pub flows: Vec<FlowFacts>,
}

/// One link (one direction of one hop).
#[derive(Debug, Clone, Serialize)]
pub struct LinkFacts {
    /// `forward` / `reverse` on one link pair; `<hop>` / `<hop> reverse` on several hops.
    pub name: String,
    pub hop: String,
    /// `forward` or `reverse`.
    pub direction: &'static str,
    /// One-way propagation delay (s).
    pub delay_s: f64,
    /// Capacity (bit/s) in each window; `None` for an unlimited link.
    pub capacity_bps: Option<Vec<f64>>,
    /// `(start s, stop s, mean bit/s)` of each segment of constant capacity (or trace piece), in
    /// order, covering the run; empty for an unlimited link.
    pub segments: Segments,
}

/// One flow's route and what it received.
#[derive(Debug, Clone, Serialize)]
pub struct FlowFacts {
    pub name: String,
    /// The flow's kind as written in a scenario (`video`, `cbr`, `audio`, `tcp`, `dash`).
    pub kind: &'static str,
    /// The links its data crosses, in order (names of [`RunFacts::links`]).
    pub links: Vec<String>,
    /// Propagation delay (s) between its first link and its last.
    pub propagation_between_links_s: f64,
    /// Its active periods `[start s, stop s)`, in order.
    pub periods: Vec<(f64, f64)>,
    /// A video flow's media range (bit/s): its minimum (the default one if the scenario gives
    /// none, as the summary's `below_min_share` counts) and maximum (`None`: no maximum).
    pub min_bitrate_bps: Option<f64>,
    pub max_bitrate_bps: Option<f64>,
    /// A video flow's media settings as run (`None` for other kinds).
    pub media: Option<MediaFacts>,
    /// A coupled flow's priority (RFC 8699); `None` for a flow that is not coupled.
    pub priority: Option<f64>,
    /// Bit rate received in each window, by arrival time (every packet of the flow).
    pub rate_bps: Vec<f64>,
}

/// The media settings a video flow ran with: its scenario's, else its controller's defaults
/// ([`rtcc_core::cc::MediaDefaults`]), else rtcc's.
#[derive(Debug, Clone, Serialize)]
pub struct MediaFacts {
    /// The encoder as written (a model name or a table).
    pub encoder: serde_json::Value,
    /// Quality scaling (the degradation preference).
    pub degradation: &'static str,
    pub pushback: bool,
    pub frame_dropper: bool,
    /// The encoder's video buffering verifier in frames of its target (`null`: off).
    pub vbv: Option<f64>,
    /// The fields above that came from the controller's defaults (empty: none did).
    pub controller_defaults: Vec<&'static str>,
}

impl RunFacts {
    /// Deterministic JSON text (fields in declaration order, 2-space indent, trailing newline).
    pub fn to_json(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).expect("facts serialise");
        s.push('\n');
        s
    }
}

/// The name of hop `hop`'s forward or reverse link (see the module header).
pub fn link_name(sc: &Scenario, hop: usize, reverse: bool) -> String {
    match (sc.is_multi_hop(), reverse) {
        (false, false) => "forward".into(),
        (false, true) => "reverse".into(),
        (true, false) => sc.hops[hop].name.clone(),
        (true, true) => format!("{} reverse", sc.hops[hop].name),
    }
}

/// The facts of a run of `sc` (its flows as `result` logged them; a live run's result holds one
/// flow of the scenario).
pub fn run_facts(sc: &Scenario, result: &RunResult) -> RunFacts {
    let end = Time(sc.duration.0);
    let n = arrival_windows(end);
    let duration_s = sc.duration.as_secs_f64();
    let link = |h: usize, reverse: bool, config: &LinkConfig| {
        let bins = capacity_series(
            &PathCapacity::new(vec![config.capacity.clone()]),
            end,
            CAPACITY_BIN,
        );
        let (capacity_bps, segments) = match link_capacity(&bins, duration_s, n) {
            Some((per_window, segments)) => (Some(per_window), segments),
            None => (None, Vec::new()),
        };
        LinkFacts {
            name: link_name(sc, h, reverse),
            hop: sc.hops[h].name.clone(),
            direction: if reverse { "reverse" } else { "forward" },
            delay_s: config.delay.as_secs_f64(),
            capacity_bps,
            segments,
        }
    };
    let mut links: Vec<LinkFacts> = Vec::with_capacity(2 * sc.hops.len());
    links.extend(
        sc.hops
            .iter()
            .enumerate()
            .map(|(h, hop)| link(h, false, &hop.forward)),
    );
    links.extend(
        sc.hops
            .iter()
            .enumerate()
            .map(|(h, hop)| link(h, true, &hop.reverse)),
    );
    let window = windows::window_s();
    let flows = result
        .flows
        .iter()
        .map(|f| {
            let c = &f.config;
            let mut crossed: Vec<usize> = c.hops.clone().collect();
            if c.reverse {
                crossed.reverse();
            }
            let video = c.video();
            FlowFacts {
                name: c.name.clone(),
                kind: c.kind.name(),
                links: crossed
                    .into_iter()
                    .map(|h| link_name(sc, h, c.reverse))
                    .collect(),
                propagation_between_links_s: sc.propagation_between_links(c).as_secs_f64(),
                periods: c
                    .active
                    .iter()
                    .map(|(a, b)| (a.as_secs_f64(), b.as_secs_f64()))
                    .collect(),
                min_bitrate_bps: video.map(|v| v.media.min_bitrate.bps()),
                max_bitrate_bps: video.and_then(|v| v.media.max_bitrate.map(|r| r.bps())),
                media: video.map(|v| MediaFacts {
                    encoder: v.encoder_value.clone(),
                    degradation: v.degradation.name(),
                    pushback: v.pushback,
                    frame_dropper: v.frame_dropper,
                    vbv: v.vbv,
                    controller_defaults: v.media_defaults.clone(),
                }),
                priority: match &c.kind {
                    FlowKind::Video(v) => v.controller.coupling.as_ref().map(|c| c.priority),
                    _ => None,
                },
                rate_bps: f
                    .stats
                    .arrival_bytes
                    .iter()
                    .map(|&b| (b * 8) as f64 / window)
                    .collect(),
            }
        })
        .collect();
    RunFacts {
        window_s: window,
        windows: n,
        links,
        flows,
    }
}

/// Segments of constant capacity: `(start s, stop s, bit/s)`.
type Segments = Vec<(f64, f64, f64)>;

/// A link's capacity in each of `n` windows and its segments, from its capacity log (`bins`:
/// bin start, bit/s); `None` for an unlimited link (no bins, or none finite).
fn link_capacity(bins: &[(Time, f64)], duration_s: f64, n: usize) -> Option<(Vec<f64>, Segments)> {
    if !bins.iter().any(|b| b.1.is_finite()) {
        return None;
    }
    let w = windows::window_s();
    let times: Vec<f64> = bins.iter().map(|b| b.0.as_secs_f64()).collect();
    let bps: Vec<f64> = bins.iter().map(|b| b.1).collect();
    let last = bps[bps.len() - 1];
    // The bins that start in each window; a window past the log keeps its last value.
    let per_window: Vec<f64> = (0..n)
        .map(|k| {
            let a = k as f64 * w;
            let lo = times.partition_point(|&t| t < a);
            let hi = times.partition_point(|&t| t < a + w);
            if hi > lo {
                windows::mean(&bps[lo..hi])
            } else {
                last
            }
        })
        .collect();
    let changes: Vec<usize> = std::iter::once(0)
        .chain((1..bps.len()).filter(|&i| bps[i] != bps[i - 1]))
        .collect();
    let mut edges: Vec<f64> = if changes.len() > MAX_STEPS {
        let pieces = (duration_s / TRACE_SEGMENT_S).ceil() as usize;
        (0..pieces).map(|k| k as f64 * TRACE_SEGMENT_S).collect()
    } else {
        changes.iter().map(|&i| times[i]).collect()
    };
    edges.push(duration_s);
    // A segment's windows are those starting in it (1 ns of rounding allowed); a segment too
    // short to hold a window's start takes the capacity at its own start.
    let first_window = |t: f64| (0..n).find(|&k| k as f64 * w >= t - 1e-9).unwrap_or(n);
    let segments = edges
        .windows(2)
        .map(|e| {
            let (a, b) = (e[0], e[1]);
            let (lo, hi) = (first_window(a), first_window(b));
            let value = if hi > lo {
                windows::mean(&per_window[lo..hi])
            } else {
                let at = times.partition_point(|&t| t < a - 1e-9);
                bps[at.min(bps.len() - 1)]
            };
            (a, b, value)
        })
        .collect();
    Some((per_window, segments))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::FlowLogs;
    use std::path::Path;

    fn logs(sc: &Scenario, i: usize) -> FlowLogs {
        FlowLogs {
            config: sc.flows[i].clone(),
            packets: Vec::new(),
            stats: sc.packet_stats(&sc.flows[i]),
            frames: Vec::new(),
            frame_stats: None,
            segments: Vec::new(),
            downloads: Vec::new(),
            feedback_packets: 0,
            feedback_bytes: 0,
            malformed: 0,
            ce_marked: 0,
        }
    }

    fn bins(values: &[f64]) -> Vec<(Time, f64)> {
        values
            .iter()
            .enumerate()
            .map(|(i, &v)| (Time(i as u64 * CAPACITY_BIN.0), v))
            .collect()
    }

    #[test]
    fn window_capacity_is_the_mean_of_its_bins_and_segments_follow_the_steps() {
        // 2.5 s at 100 ms bins: 1 Mbit/s, then 3 Mbit/s from 1.5 s. Windows [0, 1) and [1, 2)
        // hold ten bins each, [2, 3) the last five: 1, (5 · 1 + 5 · 3) / 10 = 2 and 3 Mbit/s.
        let mut v = vec![1e6; 15];
        v.extend([3e6; 10]);
        let (per_window, segments) = link_capacity(&bins(&v), 2.5, 3).unwrap();
        assert_eq!(per_window, vec![1e6, 2e6, 3e6]);
        // Segments at the step: [0, 1.5) holds the windows starting at 0 and 1 (mean 1.5
        // Mbit/s), [1.5, 2.5) the one starting at 2.
        assert_eq!(segments, vec![(0.0, 1.5, 1.5e6), (1.5, 2.5, 3e6)]);
        // A segment holding no window's start takes the capacity at its start.
        let mut v = vec![1e6; 12];
        v.extend([4e6; 3]);
        v.extend([1e6; 5]);
        let (_, segments) = link_capacity(&bins(&v), 2.0, 2).unwrap();
        assert_eq!(segments[1], (1.2, 1.5, 4e6));
        assert!(link_capacity(&[], 2.0, 2).is_none(), "unlimited: no bins");
        assert!(link_capacity(&bins(&[f64::INFINITY; 3]), 0.3, 1).is_none());
    }

    #[test]
    fn a_trace_is_cut_into_fixed_pieces() {
        // 25 s of bins alternating between two rates: more than MAX_STEPS changes, so the
        // segments are [0, 10), [10, 20) and [20, 25), each with its windows' mean.
        let v: Vec<f64> = (0..250)
            .map(|i| if i % 2 == 0 { 1e6 } else { 3e6 })
            .collect();
        let (per_window, segments) = link_capacity(&bins(&v), 25.0, 25).unwrap();
        assert!(per_window.iter().all(|&c| c == 2e6));
        assert_eq!(
            segments,
            vec![(0.0, 10.0, 2e6), (10.0, 20.0, 2e6), (20.0, 25.0, 2e6)]
        );
    }

    const PARKING_LOT: &str = r#"
        duration = "3s"
        [[path.hops]]
        name = "b1"
        forward = { capacity = "2Mbps", delay = "25ms" }
        [[path.hops]]
        name = "b2"
        forward = { schedule = [["0s", "1Mbps"], ["2s", "3Mbps"]], delay = "15ms" }
        reverse = { capacity = "1Mbps", delay = "5ms" }
        [[path.hops]]
        name = "b3"
        forward = { capacity = "4Mbps", delay = "10ms" }
        [[flows]]
        name = "long"
        controller = "fixed"
        params = { rate = "1Mbps" }
        min_bitrate = "100kbps"
        max_bitrate = "1.5Mbps"
        [[flows]]
        name = "back"
        kind = "cbr"
        rate = "100kbps"
        direction = "reverse"
        hops = ["b2", "b3"]
        active = [["0s", "1s"], ["2s", "3s"]]
    "#;

    #[test]
    fn routes_name_the_links_crossed_in_order_with_the_propagation_between_them() {
        let sc = Scenario::from_toml_str(PARKING_LOT, Path::new("."), "test", None).unwrap();
        let result = RunResult {
            summary: crate::outcome::summarize(&sc, &mut [], false),
            flows: Vec::new(),
            state: Default::default(),
            capacity: Vec::new(),
            hop_capacity: Vec::new(),
            events: 0,
        };
        let facts = run_facts(&sc, &result);
        assert_eq!((facts.window_s, facts.windows), (1.0, 3));
        let names: Vec<&str> = facts.links.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(
            names,
            ["b1", "b2", "b3", "b1 reverse", "b2 reverse", "b3 reverse"]
        );
        let b2 = &facts.links[1];
        assert_eq!(
            (b2.hop.as_str(), b2.direction, b2.delay_s),
            ("b2", "forward", 0.015)
        );
        assert_eq!(b2.capacity_bps, Some(vec![1e6, 1e6, 3e6]));
        assert_eq!(b2.segments, vec![(0.0, 2.0, 1e6), (2.0, 3.0, 3e6)]);
        let back = &facts.links[4];
        assert_eq!(back.capacity_bps, Some(vec![1e6; 3]));
        assert_eq!(back.delay_s, 0.005);
        // A reverse link without its own table is unlimited, with the forward link's delay.
        assert_eq!(
            (facts.links[3].capacity_bps.as_ref(), facts.links[3].delay_s),
            (None, 0.025)
        );
        assert!(facts.links[3].segments.is_empty());
        assert!(facts.flows.is_empty(), "the flows come from the result");

        // The flows' routes, as a run's logs give them.
        let mut long = logs(&sc, 0);
        long.stats.arrival_bytes = vec![125_000, 0, 250];
        let result = RunResult {
            flows: vec![long, logs(&sc, 1)],
            ..result
        };
        let facts = run_facts(&sc, &result);
        let (long, back) = (&facts.flows[0], &facts.flows[1]);
        assert_eq!((long.name.as_str(), long.kind), ("long", "video"));
        assert_eq!(long.links, ["b1", "b2", "b3"]);
        // 25 ms + 15 ms before the last hop; as a duration, so exactly 0.04 s.
        assert_eq!(long.propagation_between_links_s, 0.04);
        assert_eq!(long.periods, vec![(0.0, 3.0)]);
        assert_eq!(
            (long.min_bitrate_bps, long.max_bitrate_bps),
            (Some(1e5), Some(1.5e6))
        );
        assert_eq!(long.priority, None);
        assert_eq!(long.rate_bps, vec![1e6, 0.0, 2000.0]);
        // A reverse flow crosses its hops' reverse links last hop first; the propagation between
        // them is b3's reverse delay (its forward one, 10 ms, as it has no reverse table).
        assert_eq!(
            (back.kind, back.links.clone()),
            ("cbr", vec!["b3 reverse".to_string(), "b2 reverse".into()])
        );
        assert_eq!(back.propagation_between_links_s, 0.01);
        assert_eq!(back.periods, vec![(0.0, 1.0), (2.0, 3.0)]);
        assert_eq!((back.min_bitrate_bps, back.max_bitrate_bps), (None, None));
        assert_eq!(back.rate_bps, vec![0.0; 3]);
        let text = facts.to_json();
        assert!(text.ends_with("}\n") && text.contains("\"propagation_between_links_s\": 0.04"));
    }

    #[test]
    fn one_link_pair_is_forward_and_reverse_and_a_coupled_flow_has_its_priority() {
        let sc = Scenario::from_toml_str(
            r#"
            duration = "2s"
            [path.forward]
            capacity = "1Mbps"
            delay = "50ms"
            [[flows]]
            controller = "gcc"
            coupling = { group = "g", priority = 2.0 }
            "#,
            Path::new("."),
            "test",
            None,
        )
        .unwrap();
        let result = RunResult {
            summary: crate::outcome::summarize(&sc, &mut [], false),
            flows: vec![logs(&sc, 0)],
            state: Default::default(),
            capacity: Vec::new(),
            hop_capacity: Vec::new(),
            events: 0,
        };
        let facts = run_facts(&sc, &result);
        let names: Vec<&str> = facts.links.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(names, ["forward", "reverse"]);
        assert_eq!(facts.links[0].segments, vec![(0.0, 2.0, 1e6)]);
        let f = &facts.flows[0];
        assert_eq!(
            (f.links.clone(), f.propagation_between_links_s),
            (vec!["forward".to_string()], 0.0)
        );
        assert_eq!(f.priority, Some(2.0));
        // No min_bitrate in the scenario: the default minimum, as the summary counts it.
        assert_eq!(
            f.min_bitrate_bps,
            Some(rtcc_core::video::range::DEFAULT_MIN_BITRATE.bps())
        );
    }
}
