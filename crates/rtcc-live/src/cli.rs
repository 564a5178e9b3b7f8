//! The live commands' command line, shared by the `rtcc-live` binary and `rtcc emu` in the
//! Python front (which passes its arguments through).
//!
//! mahimahi's habits where they fit: one option per direction (`--uplink`/`--downlink` take a
//! rate or a mahimahi trace, `--uplink-queue`, `--uplink-log`), the command after `--`.

use crate::emu::{self, EmuConfig, DOWN, UP};
use clap::{Args, Parser, Subcommand};
use rtcc_scenario::Scenario;
use rtcc_scenario::{link_from_spec, LinkConfig, LinkSpec};
use std::path::{Path, PathBuf};

#[derive(Parser)]
#[command(name = "rtcc", about = "rtcc on real networks")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a command in a network namespace whose traffic crosses emulated links (needs root).
    Emu(EmuArgs),
    /// Send a scenario flow's video over UDP to `recv` (RTP out, RTCP back).
    Send(crate::transport::SendArgs),
    /// Receive a scenario flow's video over UDP from `send`.
    Recv(crate::transport::RecvArgs),
}

#[derive(Args)]
#[command(
    after_help = "The uplink carries what COMMAND sends, the downlink what it receives. Inside, the host is at $RTCC_EMU_HOST (expanded by a shell inside, as in the first example).\n\nExamples:\n  rtcc emu --uplink 10Mbps --downlink 10Mbps --delay 20ms --uplink-queue 100pkts -- sh -c 'iperf3 -c \"$RTCC_EMU_HOST\"'\n  rtcc emu --uplink traces/lte.up --downlink traces/lte.down --uplink-queue codel -- sh\n  rtcc emu --scenario scenarios/step.toml --log-dir logs/ -- sh -c 'rtcc send --scenario scenarios/step.toml --to \"$RTCC_EMU_HOST:5004\"'"
)]
struct EmuArgs {
    /// Take both links from a scenario file's [path]: forward is the uplink, reverse the
    /// downlink (the scenario's flows are ignored).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["uplink", "downlink", "delay", "uplink_delay", "downlink_delay", "uplink_queue", "downlink_queue", "uplink_loss", "downlink_loss"])]
    scenario: Option<PathBuf>,
    /// Uplink capacity: a rate ("10Mbps"), a mahimahi trace file, an OpenNetLab JSON trace
    /// (its loss and rtt apply too; "t.json#downlink" for the other direction), or "unlimited"
    /// (default).
    #[arg(long, value_name = "RATE|TRACE")]
    uplink: Option<String>,
    /// Downlink capacity, as --uplink.
    #[arg(long, value_name = "RATE|TRACE")]
    downlink: Option<String>,
    /// One-way propagation delay of each direction (default 0ms).
    #[arg(long, value_name = "DURATION")]
    delay: Option<String>,
    /// Uplink delay, overriding --delay.
    #[arg(long, value_name = "DURATION")]
    uplink_delay: Option<String>,
    /// Downlink delay, overriding --delay.
    #[arg(long, value_name = "DURATION")]
    downlink_delay: Option<String>,
    /// Uplink queue: a drop-tail limit ("100pkts", "150KB", "120ms"), a discipline ("codel",
    /// "pie", "sfq", "fq_codel") or a table ('{ kind = "codel", target = "5ms" }'); default
    /// 1000pkts.
    #[arg(long, value_name = "QUEUE")]
    uplink_queue: Option<String>,
    /// Downlink queue, as --uplink-queue.
    #[arg(long, value_name = "QUEUE")]
    downlink_queue: Option<String>,
    /// Uplink random loss probability (0 to 1).
    #[arg(long, value_name = "P")]
    uplink_loss: Option<f64>,
    /// Downlink random loss probability.
    #[arg(long, value_name = "P")]
    downlink_loss: Option<f64>,
    /// Write a mahimahi-format log of the uplink.
    #[arg(long, value_name = "FILE")]
    uplink_log: Option<PathBuf>,
    /// Write a mahimahi-format log of the downlink.
    #[arg(long, value_name = "FILE")]
    downlink_log: Option<PathBuf>,
    /// Write rtcc's logs here: packets.csv, flows.csv and emu.json (the summary).
    #[arg(long, value_name = "DIR")]
    log_dir: Option<PathBuf>,
    /// The links' time zero comes this long after the shell starts (default 0s); the command
    /// finds the instant in $RTCC_EMU_CLOCK_ORIGIN_NS (for `rtcc send --clock-origin-ns`).
    #[arg(long, value_name = "DURATION")]
    start_delay: Option<String>,
    /// Seed of the queues' and impairments' randomness (default: the scenario's with --scenario,
    /// else 1); links are seeded as the simulator seeds them.
    #[arg(long)]
    seed: Option<u64>,
    /// Do not print the summary when the command ends.
    #[arg(long, short)]
    quiet: bool,
    /// The command to run inside (default: $SHELL, or /bin/sh).
    #[arg(last = true, value_name = "COMMAND")]
    command: Vec<String>,
}

/// A link written like a scenario's `[path.forward]`, from one direction's options.
fn link_spec(
    capacity: Option<&str>,
    delay: Option<&str>,
    queue: Option<&str>,
    loss: Option<f64>,
    option: &str,
) -> Result<LinkSpec, String> {
    let mut table = serde_json::Map::new();
    match capacity {
        None | Some("unlimited") => {}
        Some(c) if rtcc_core::Rate::parse(c).is_ok() => {
            table.insert("capacity".into(), c.into());
        }
        // An OpenNetLab trace may name its direction: `t.json#downlink`.
        Some(c) if Path::new(c.rsplit_once(".json#").map_or(c, |(f, _)| f)).exists()
            || Path::new(c).exists() =>
        {
            table.insert("trace".into(), c.into());
        }
        Some(c) => {
            return Err(format!(
                "--{option} {c:?}: neither a rate (\"10Mbps\"), \"unlimited\", nor an existing trace file"
            ))
        }
    }
    if let Some(d) = delay {
        rtcc_core::Duration::parse(d).map_err(|e| format!("--{option}-delay {d:?}: {e}"))?;
        table.insert("delay".into(), d.into());
    }
    if let Some(q) = queue {
        let value = queue_value(q, option)?;
        serde_json::from_value::<rtcc_core::net::QueueConfig>(value.clone())
            .map_err(|e| format!("--{option}-queue {q:?}: {e}"))?;
        table.insert("queue".into(), value);
    }
    if let Some(p) = loss {
        table.insert("loss".into(), p.into());
    }
    serde_json::from_value(serde_json::Value::Object(table)).map_err(|e| format!("--{option}: {e}"))
}

/// `"codel"` → `{ kind = "codel" }`; `'{ kind = "pie", ... }'` parsed as a TOML inline table; any
/// other text is a drop-tail limit.
fn queue_value(q: &str, option: &str) -> Result<serde_json::Value, String> {
    let q = q.trim();
    if q.starts_with('{') {
        let doc: toml::Table = toml::from_str(&format!("queue = {q}"))
            .map_err(|e| format!("--{option}-queue: not a TOML inline table: {e}"))?;
        return serde_json::to_value(&doc["queue"]).map_err(|e| e.to_string());
    }
    if ["codel", "pie", "sfq", "fq_codel", "droptail"].contains(&q) {
        return Ok(serde_json::json!({ "kind": q }));
    }
    Ok(q.into())
}

/// Both links, and the seed a scenario gives them.
fn links(a: &EmuArgs) -> Result<([LinkConfig; 2], Option<u64>), String> {
    if let Some(file) = &a.scenario {
        let sc = Scenario::from_file(file).map_err(|e| e.to_string())?;
        let hop = sc.single_hop("the live emulator")?;
        return Ok(([hop.forward.clone(), hop.reverse.clone()], Some(sc.seed)));
    }
    let here = Path::new(".");
    let mut out = Vec::new();
    for (d, name) in [(UP, "uplink"), (DOWN, "downlink")] {
        let (capacity, delay, queue, loss) = if d == UP {
            (&a.uplink, &a.uplink_delay, &a.uplink_queue, a.uplink_loss)
        } else {
            (
                &a.downlink,
                &a.downlink_delay,
                &a.downlink_queue,
                a.downlink_loss,
            )
        };
        let delay = delay.as_deref().or(a.delay.as_deref());
        let spec = link_spec(capacity.as_deref(), delay, queue.as_deref(), loss, name)?;
        out.push(
            link_from_spec(&spec, name, here).map_err(|e| {
                format!("{}: {}", e.field, rtcc_core::suggest::annotate(&e.message))
            })?,
        );
    }
    // An uplink trace's rtt is the round trip's, half each way (OpenNetLab's rule): a downlink
    // given no delay and no rtt of its own takes the uplink's, as a scenario's reverse link does.
    let downlink_delay_given = a.downlink_delay.is_some() || a.delay.is_some();
    if !downlink_delay_given && out[DOWN].delay_steps.is_none() {
        if let Some(steps) = out[UP].delay_steps.clone() {
            out[DOWN].delay = out[UP].delay;
            out[DOWN].delay_steps = Some(steps);
        }
    }
    Ok((
        out.try_into().map_err(|_| "two links").expect("two links"),
        None,
    ))
}

fn emu_config(a: EmuArgs) -> Result<EmuConfig, String> {
    let (links, scenario_seed) = links(&a)?;
    let command = if a.command.is_empty() {
        vec![std::env::var("SHELL").unwrap_or_else(|_| "/bin/sh".into())]
    } else {
        a.command
    };
    let start_delay = match &a.start_delay {
        Some(d) => {
            rtcc_core::Duration::parse(d).map_err(|e| format!("--start-delay {d:?}: {e}"))?
        }
        None => rtcc_core::Duration::ZERO,
    };
    Ok(EmuConfig {
        start_delay,
        links,
        seed: a.seed.or(scenario_seed).unwrap_or(1),
        mahimahi_logs: [a.uplink_log, a.downlink_log],
        log_dir: a.log_dir,
        command,
        summary: !a.quiet,
    })
}

/// Run the command line `args` (program name first); returns the process's exit code.
pub fn main(args: Vec<String>) -> i32 {
    let cli = match Cli::try_parse_from(args) {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return e.exit_code();
        }
    };
    let result = match cli.command {
        Command::Emu(a) => emu_config(a).and_then(|cfg| emu::run(cfg).map_err(|e| e.to_string())),
        Command::Send(a) => crate::transport::send(a),
        Command::Recv(a) => crate::transport::recv(a),
    };
    match result {
        Ok(code) => code,
        Err(message) => {
            eprintln!("rtcc: error: {message}");
            1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(cap: &str, queue: &str) -> Result<LinkConfig, String> {
        let s = link_spec(Some(cap), Some("20ms"), Some(queue), None, "uplink")?;
        link_from_spec(&s, "uplink", Path::new(".")).map_err(|e| e.to_string())
    }

    #[test]
    fn options_read_like_scenario_links() {
        let l = spec("10Mbps", "codel").unwrap();
        assert_eq!(l.delay, rtcc_core::Duration::from_millis(20));
        assert_eq!(l.queue.kind(), "codel");
        let l = spec("unlimited", "{ kind = \"fq_codel\", target = \"13ms\" }").unwrap();
        assert_eq!(l.queue.kind(), "fq_codel");
        assert!(matches!(l.capacity, rtcc_core::net::Capacity::Unlimited));
    }

    #[test]
    fn an_opennetlab_trace_gives_both_directions_half_its_rtt_and_its_loss() {
        let dir = std::env::temp_dir().join(format!("rtcc-onl-cli-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let trace = dir.join("t.json");
        std::fs::write(
            &trace,
            r#"{"uplink": {"trace_pattern": [{"duration": 1000, "capacity": 500, "loss": 0.05, "rtt": 80},
                {"duration": 1000, "capacity": 500, "rtt": 40}]}}"#,
        )
        .unwrap();
        let t = trace.display().to_string();
        let emu = |extra: &[&str]| {
            let mut args = vec!["rtcc", "emu", "--uplink", &t];
            args.extend_from_slice(extra);
            args.extend_from_slice(&["--", "true"]);
            let Command::Emu(a) = Cli::try_parse_from(args).unwrap().command else {
                unreachable!()
            };
            links(&a).map(|(l, _)| l)
        };
        let [up, down] = emu(&[]).unwrap();
        for l in [&up, &down] {
            let steps = l.delay_steps.as_ref().expect("the trace's rtt");
            let ms = |t: u64| steps.at(rtcc_core::Time::from_millis(t)).as_millis_f64();
            assert_eq!(
                (ms(0), ms(1500), l.delay.as_millis_f64()),
                (40.0, 20.0, 20.0)
            );
        }
        assert!(matches!(
            up.impairments.loss,
            rtcc_core::net::impair::LossModel::Steps(_)
        ));
        assert!(down.impairments.is_none(), "the loss is the uplink's");
        let [_, down] = emu(&["--downlink-delay", "5ms"]).unwrap();
        assert_eq!((down.delay.as_millis_f64(), down.delay_steps), (5.0, None));
        let e = emu(&["--delay", "5ms"]).unwrap_err();
        assert!(
            e.contains("uplink.delay") && e.contains("rtt = 80 ms"),
            "{e}"
        );
        let e = emu(&["--uplink-loss", "0.1"]).unwrap_err();
        assert!(
            e.contains("uplink.loss") && e.contains("loss = 0.05"),
            "{e}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn bad_options_name_the_problem() {
        let e = spec("10 furlongs", "100pkts").unwrap_err();
        assert!(e.contains("--uplink \"10 furlongs\""), "{e}");
        let e = spec("10Mbps", "{ kind = ").unwrap_err();
        assert!(e.contains("--uplink-queue"), "{e}");
        let e = spec("10Mbps", "lots").unwrap_err();
        assert!(e.contains("queue"), "{e}");
        let e = spec("10Mbps", "{ kind = \"red\" }").unwrap_err();
        assert!(e.contains("red"), "{e}");
    }
}
