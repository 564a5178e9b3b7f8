//! Trace of a BBR controller's state in one DASH session on the seed's path (as `dash_probe`):
//! every change of `mode` and, with `EVERY=secs`, a periodic line of the main signals.
//!
//! ```sh
//! cargo run --release -p rtcc-sim --example bbr_trace -- CC QUEUE [EXTRA_TOML]
//! ```

use rtcc_sim::{run, Scenario};
use std::collections::BTreeMap;
use std::path::Path;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (cc, queue) = (&args[1], &args[2]);
    let extra = args.get(3).cloned().unwrap_or_default();
    let dur = std::env::var("DUR").unwrap_or_else(|_| "700s".into());
    let every: f64 = std::env::var("EVERY")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0.0);
    let until: f64 = std::env::var("UNTIL")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1e9);
    let abr = std::env::var("ABR").unwrap_or_else(|_| "dynamic".into());
    let http = std::env::var("HTTP").unwrap_or_else(|_| "h2".into());
    let path_extra = std::env::var("PATH_EXTRA").unwrap_or_default();
    let toml = format!(
        "duration = \"{dur}\"\nseed = 1\n[path.forward]\ntoken_bucket = {{ rate = \"25Mbps\", burst = \"1MB\" }}\n\
         delay = \"50ms\"\nqueue = \"{queue}\"\n{path_extra}\n[[flows]]\nkind = \"dash\"\ncontroller = \"{cc}\"\n\
         abr = \"{abr}\"\nhttp = \"{http}\"\n{}\n",
        extra.replace("\\n", "\n")
    );
    let sc = Scenario::from_toml_str(&toml, Path::new("."), "trace", None).unwrap();
    let r = run(&sc, None, &mut |_| {}).unwrap();
    let st = &r.state;
    let mut cur: BTreeMap<&str, f64> = BTreeMap::new();
    let mut next_print = 0.0;
    let mut last_t = -1.0;
    let keys = [
        "mode",
        "cycle_idx",
        "max_bw_bps",
        "bw_bps",
        "delivery_rate_bps",
        "cwnd_packets",
        "min_rtt_ms",
        "probe_rtt_min_ms",
        "round_count",
        "full_bw_reached",
        "app_limited",
        "probe_rtt_count",
        "ca_state",
        "srtt_ms",
        "in_flight_bytes",
    ];
    for i in 0..st.time.len() {
        let t = st.time[i].as_secs_f64();
        if t > until {
            break;
        }
        if t != last_t && last_t >= 0.0 && every > 0.0 && last_t >= next_print {
            let line: Vec<String> = keys
                .iter()
                .filter_map(|k| cur.get(k).map(|v| format!("{k}={v:.6}")))
                .collect();
            println!("{last_t:8.3} {}", line.join(" "));
            next_print = last_t + every;
        }
        last_t = t;
        let name = st.signal[i];
        if name == "mode" && cur.get("mode") != Some(&st.value[i]) {
            println!(
                "{t:8.3} MODE {} -> {} (max_bw {:.1} Mbit/s, round {}, min_rtt {:.1} ms)",
                cur.get("mode").copied().unwrap_or(-1.0),
                st.value[i],
                cur.get("max_bw_bps").copied().unwrap_or(f64::NAN) / 1e6,
                cur.get("round_count").copied().unwrap_or(f64::NAN),
                cur.get("min_rtt_ms").copied().unwrap_or(f64::NAN),
            );
        }
        cur.insert(name, st.value[i]);
    }
}
