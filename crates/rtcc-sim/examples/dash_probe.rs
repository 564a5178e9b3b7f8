//! Run one DASH session on the seed's path and print its QoE and queue.
//!
//! ```sh
//! cargo run --release -p rtcc-sim --example dash_probe -- CC QUEUE [EXTRA_TOML] [--log]
//! ```
//! `EXTRA_TOML` is added to the flow's table (e.g. `segment_sizes = 0.9`).

use rtcc_sim::{run, Scenario};
use std::path::Path;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let cc = &args[1];
    let queue = &args[2];
    let extra = args
        .get(3)
        .filter(|a| !a.starts_with("--"))
        .cloned()
        .unwrap_or_default();
    let log = args.iter().any(|a| a == "--log");
    let dur = std::env::var("DUR").unwrap_or_else(|_| "700s".into());
    let path_extra = std::env::var("PATH_EXTRA").unwrap_or_default();
    let abr = std::env::var("ABR").unwrap_or_else(|_| "dynamic".into());
    let http = std::env::var("HTTP").unwrap_or_else(|_| "h2".into());
    let toml = format!(
        "duration = \"{dur}\"\nseed = 1\n[path.forward]\ntoken_bucket = {{ rate = \"25Mbps\", burst = \"1MB\" }}\n\
         delay = \"50ms\"\nqueue = \"{queue}\"\n{path_extra}\n[[flows]]\nkind = \"dash\"\ncontroller = \"{cc}\"\n\
         abr = \"{abr}\"\nhttp = \"{http}\"\n{}\n",
        extra.replace("\\n", "\n")
    );
    let sc = Scenario::from_toml_str(&toml, Path::new("."), "probe", None)
        .unwrap_or_else(|e| panic!("{e}"));
    let r = run(&sc, None, &mut |_| {}).unwrap();
    let f = &r.summary.flows[0];
    let d = f.dash.as_ref().unwrap();
    let segs = &r.flows[0].segments;
    let lat: f64 = segs
        .iter()
        .map(|s| (s.first_byte - s.request).as_secs_f64())
        .sum::<f64>()
        / segs.len().max(1) as f64;
    println!(
        "{cc:7} {queue:6} quality {:.2} stall {:.3} stalls {} loss {:.3}% qdelay p50 {:.0} p95 {:.0} ms thr {:.1} Mbit/s latency {:.0} ms switches {} finished {} segs {}",
        d.avg_quality,
        d.stall_rate,
        d.stalls,
        100.0 * f.loss_rate.unwrap_or(0.0),
        f.queuing_delay_ms.p50.unwrap_or(f64::NAN),
        f.queuing_delay_ms.p95.unwrap_or(f64::NAN),
        d.avg_throughput_mbps,
        1000.0 * lat,
        d.switches,
        d.finished,
        d.segments_downloaded
    );
    // Time share of each BBR mode (signal "mode"), weighted by time until the next sample.
    let st = &r.state;
    let mut share = [0.0f64; 4];
    let mut last: Option<(f64, usize)> = None;
    let end = st.time.last().map_or(0.0, |t| t.as_secs_f64());
    for i in 0..st.time.len() {
        if st.signal[i] != "mode" {
            continue;
        }
        let t = st.time[i].as_secs_f64();
        if let Some((t0, m)) = last {
            share[m] += t - t0;
        }
        last = Some((t, st.value[i] as usize));
    }
    if let Some((t0, m)) = last {
        share[m] += end - t0;
        let tot: f64 = share.iter().sum();
        println!(
            "  modes: startup {:.1}% drain {:.1}% probe_bw {:.1}% probe_rtt {:.1}%",
            100.0 * share[0] / tot,
            100.0 * share[1] / tot,
            100.0 * share[2] / tot,
            100.0 * share[3] / tot
        );
    }
    if log {
        for s in segs {
            println!(
                "seg {:3} q {:2} MB {:5.2} dec {:7.2} req {:7.2} fb {:7.2} fin {:7.2} lat {:5.0}ms thr {:6.1} buf {:5.1}->{:5.1} stall {:.2} {:?}",
                s.segment,
                s.quality,
                s.bytes as f64 / 1e6,
                s.decided.as_secs_f64(),
                s.request.as_secs_f64(),
                s.first_byte.as_secs_f64(),
                s.finish.as_secs_f64(),
                1000.0 * (s.first_byte - s.request).as_secs_f64(),
                s.throughput_bps() / 1e6,
                s.buffer_at_decision_s,
                s.buffer_after_s,
                s.stall_s,
                s.rule
            );
        }
    }
}
