//! `rtcc emu`: a link-emulator shell. A command runs in its own network namespace, and every
//! packet it exchanges with the host crosses the same link models, queue disciplines and
//! impairments as the simulator, in real time.
//!
//! ```text
//!   command ─► rtcc0 ─► [uplink: queue ▸ link ▸ impairments ▸ delay] ─► rtcc-<pid> ─► host
//!   command ◄─ rtcc0 ◄─ [downlink: queue ▸ link ▸ impairments ▸ delay] ◄─ rtcc-<pid> ◄─ host
//! ```
//!
//! As in mahimahi, the *uplink* carries what the command sends and the *downlink* what it
//! receives; a scenario's `path.forward` is the uplink and `path.reverse` the downlink, so
//! `rtcc emu --scenario S -- rtcc send ...` puts the sender where the simulator puts it.
//!
//! The loop (one thread, [`crate::clock::wait`]): serve both directions' due link events, write
//! the packets whose delivery time has come to the other device, then sleep until the next
//! deadline or until a device has packets, read them all and hand each to its direction with the
//! time it was read. Every write records how late it was against the model's delivery time; the
//! distribution is in the summary (`emu.json`, and on stderr).
//!
//! Exit paths: the command's exit ends the shell with its exit status, once the packets still on
//! the links have arrived (at most 10 s). SIGINT, SIGTERM and SIGHUP are passed to every process
//! of the command (its process group), which gets 2 s to exit before SIGKILL; the command itself
//! runs as PID 1 of its own PID namespace, so it receives only the signals it handles. Whatever
//! happens, the devices, addresses, routes, the namespaces and the command's processes go away
//! with the shell ([`netns`]).

pub mod log;
pub mod netns;
pub mod path;

use crate::clock::{self, Clock};
use crate::signals;
use log::{AtomicWriter, MahimahiLog, PacketLog};
use netns::{Namespace, Tun};
use path::{Direction, LogEvent};
use rtcc_core::{Duration, Time};
use rtcc_scenario::LinkConfig;
use std::collections::HashMap;
use std::io::{self, Write};
use std::net::{Ipv4Addr, Ipv6Addr};
use std::path::PathBuf;
use std::process::ExitStatus;

/// Packets read from a device before the loop looks at its deliveries again. Measured with
/// `bench/live/emu_rate.py` (p99 lateness at 1 and 1.5 Gbit/s of UDP; TCP's top rate):
/// 256: 291 and 1267 µs, 2.08 Gbit/s; 32: 186 and 237 µs, 2.05; 8: 74 and 73 µs, 1.79;
/// 2: 23 and 20 µs, 1.35. Eight keeps lateness under 0.1 ms to 1.5 Gbit/s.
const READ_BATCH: usize = 8;

/// After the command exits, packets still on the links are delivered for up to this long.
const DRAIN: Duration = Duration(10_000_000_000);

/// How long the command has to end after a signal was passed on, before SIGKILL.
const STOP_GRACE: Duration = Duration(2_000_000_000);

/// Index of the uplink (packets the command sends) in per-direction arrays.
pub const UP: usize = 0;
/// Index of the downlink (packets the command receives).
pub const DOWN: usize = 1;

/// What the shell emulates and logs.
pub struct EmuConfig {
    /// `[uplink, downlink]`.
    pub links: [LinkConfig; 2],
    /// Seeds the queues' and impairments' randomness, as a scenario's seed does in the simulator.
    pub seed: u64,
    /// mahimahi-format logs, `[uplink, downlink]`.
    pub mahimahi_logs: [Option<PathBuf>; 2],
    /// Folder for `packets.csv`, `flows.csv` and `emu.json`.
    pub log_dir: Option<PathBuf>,
    /// The command and its arguments.
    pub command: Vec<String>,
    /// Print the summary on stderr when the shell exits.
    pub summary: bool,
    /// The links' time zero comes this long after the shell is set up (packets before it are
    /// carried as if at zero). The command gets the instant in `RTCC_EMU_CLOCK_ORIGIN_NS`, so a
    /// program that starts its own timeline there (`rtcc send --clock-origin-ns`) sees a
    /// scenario's capacity changes at the scenario's times, however long it took to start.
    pub start_delay: Duration,
}

#[derive(Debug, thiserror::Error)]
pub enum EmuError {
    #[error("{0}")]
    Setup(io::Error),
    #[error("cannot run `{command}`: {error}")]
    Spawn { command: String, error: io::Error },
    #[error("writing logs: {0}")]
    Log(io::Error),
}

/// How late packets were written, against the model's delivery time: a histogram in
/// microseconds.
#[derive(Debug, Clone, Default)]
pub struct Lateness {
    bins_us: Vec<u64>,
    count: u64,
    max_ns: u64,
}

impl Lateness {
    const BINS: usize = 100_000; // up to 100 ms in 1 µs bins, the rest in the last one

    pub fn add(&mut self, late: Duration) {
        if self.bins_us.is_empty() {
            self.bins_us = vec![0; Self::BINS];
        }
        let us = ((late.0 / 1000) as usize).min(Self::BINS - 1);
        self.bins_us[us] += 1;
        self.count += 1;
        self.max_ns = self.max_ns.max(late.0);
    }

    /// The largest lateness added, in microseconds.
    pub fn max_us(&self) -> f64 {
        self.max_ns as f64 / 1e3
    }

    /// Forget everything added so far (keeping the bins' memory).
    pub fn clear(&mut self) {
        self.bins_us.fill(0);
        self.count = 0;
        self.max_ns = 0;
    }

    /// The `q` quantile in microseconds (upper edge of its bin).
    pub fn quantile_us(&self, q: f64) -> Option<f64> {
        if self.count == 0 {
            return None;
        }
        let target = ((q * self.count as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (us, &n) in self.bins_us.iter().enumerate() {
            seen += n;
            if seen >= target {
                return Some(us as f64 + 1.0);
            }
        }
        Some(Self::BINS as f64)
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "packets": self.count,
            "p50_us": self.quantile_us(0.5),
            "p99_us": self.quantile_us(0.99),
            "p999_us": self.quantile_us(0.999),
            "max_us": self.max_ns as f64 / 1000.0,
        })
    }
}

/// A flow as the emulator tells flows apart: protocol and both ends, the same key for both
/// directions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct FlowKey {
    protocol: u8,
    ends: [([u8; 16], u16); 2],
}

impl FlowKey {
    /// Read the key from an IP packet (`None` if it is neither IPv4 nor IPv6 or too short).
    fn of(packet: &[u8]) -> Option<FlowKey> {
        let version = packet.first()? >> 4;
        let (protocol, src, dst, l4) = match version {
            4 if packet.len() >= 20 => {
                let ihl = (packet[0] & 0x0f) as usize * 4;
                let mut s = [0; 16];
                let mut d = [0; 16];
                s[..4].copy_from_slice(&packet[12..16]);
                d[..4].copy_from_slice(&packet[16..20]);
                (packet[9], s, d, ihl)
            }
            6 if packet.len() >= 40 => {
                let s: [u8; 16] = packet[8..24].try_into().ok()?;
                let d: [u8; 16] = packet[24..40].try_into().ok()?;
                (packet[6], s, d, 40)
            }
            _ => return None,
        };
        // TCP, UDP, SCTP and DCCP start with the two ports (in an IPv4 datagram's first fragment
        // only: the others carry payload there).
        let later_fragment = version == 4 && u16::from_be_bytes([packet[6] & 0x1f, packet[7]]) != 0;
        let ports = (matches!(protocol, 6 | 17 | 33 | 132) && !later_fragment)
            .then(|| packet.get(l4..l4 + 4))
            .flatten()
            .map(|p| {
                (
                    u16::from_be_bytes([p[0], p[1]]),
                    u16::from_be_bytes([p[2], p[3]]),
                )
            })
            .unwrap_or((0, 0));
        let (a, b) = ((src, ports.0), (dst, ports.1));
        Some(FlowKey {
            protocol,
            ends: if a <= b { [a, b] } else { [b, a] },
        })
    }

    fn describe(&self, v4: bool) -> [String; 3] {
        let addr = |a: &[u8; 16]| {
            if v4 {
                Ipv4Addr::new(a[0], a[1], a[2], a[3]).to_string()
            } else {
                Ipv6Addr::from(*a).to_string()
            }
        };
        let proto = match self.protocol {
            6 => "tcp".to_string(),
            17 => "udp".to_string(),
            1 => "icmp".to_string(),
            58 => "icmpv6".to_string(),
            p => p.to_string(),
        };
        let end = |i: usize| format!("{}:{}", addr(&self.ends[i].0), self.ends[i].1);
        [proto, end(0), end(1)]
    }
}

/// Numbers flows in order of first appearance; packets that are not IP share one "other" flow.
/// An IPv4 datagram cut into fragments belongs to one flow: the fragments after the first carry
/// no ports, so they are matched to the first by (source, destination, protocol, IP id).
#[derive(Default)]
struct Flows {
    ids: HashMap<FlowKey, u32>,
    table: Vec<(FlowKey, bool)>,
    fragments: HashMap<[u8; 11], u32>,
}

/// An IPv4 fragment's datagram, and whether it is the first fragment.
fn ipv4_fragment(packet: &[u8]) -> Option<([u8; 11], bool)> {
    if packet.len() < 20 || packet[0] >> 4 != 4 {
        return None;
    }
    let more = packet[6] & 0x20 != 0;
    let offset = u16::from_be_bytes([packet[6] & 0x1f, packet[7]]);
    if !more && offset == 0 {
        return None;
    }
    let mut id = [0u8; 11];
    id[..8].copy_from_slice(&packet[12..20]);
    id[8] = packet[9];
    id[9..].copy_from_slice(&packet[4..6]);
    Some((id, offset == 0))
}

impl Flows {
    fn id(&mut self, packet: &[u8]) -> u32 {
        let fragment = ipv4_fragment(packet);
        if let Some((datagram, false)) = fragment {
            if let Some(&flow) = self.fragments.get(&datagram) {
                return flow;
            }
        }
        let flow = self.id_of_key(packet);
        if let Some((datagram, true)) = fragment {
            if self.fragments.len() > 4096 {
                self.fragments.clear(); // datagrams long reassembled
            }
            self.fragments.insert(datagram, flow);
        }
        flow
    }

    fn id_of_key(&mut self, packet: &[u8]) -> u32 {
        let key = FlowKey::of(packet).unwrap_or(FlowKey {
            protocol: 255,
            ends: [([0; 16], 0); 2],
        });
        let v4 = packet.first().is_some_and(|b| b >> 4 == 4);
        let next = self.table.len() as u32;
        *self.ids.entry(key).or_insert_with(|| {
            self.table.push((key, v4));
            next
        })
    }

    fn write(&self, dir: &std::path::Path) -> io::Result<()> {
        let mut out = AtomicWriter::create(&dir.join("flows.csv"))?;
        writeln!(out, "flow,protocol,end_a,end_b")?;
        for (i, (key, v4)) in self.table.iter().enumerate() {
            let [p, a, b] = key.describe(*v4);
            writeln!(out, "{i},{p},{a},{b}")?;
        }
        out.finish()
    }
}

/// Logs being written.
struct Logs {
    mahimahi: [Option<MahimahiLog>; 2],
    packets: Option<PacketLog>,
}

impl Logs {
    fn any(&self) -> bool {
        self.packets.is_some() || self.mahimahi.iter().any(Option::is_some)
    }

    fn write(&mut self, dir: usize, e: &LogEvent) -> io::Result<()> {
        if let Some(m) = &mut self.mahimahi[dir] {
            m.write(e)?;
        }
        if let Some(p) = &mut self.packets {
            p.write(dir, e)?;
        }
        Ok(())
    }
}

/// Run the shell: returns the exit code it should end with (the command's, or 128 + the signal
/// that ended it).
pub fn run(cfg: EmuConfig) -> Result<i32, EmuError> {
    let Some(program) = cfg.command.first() else {
        return Err(EmuError::Setup(io::Error::other(
            "no command to run (give one after --)",
        )));
    };
    if let Some(dir) = &cfg.log_dir {
        std::fs::create_dir_all(dir).map_err(|e| {
            EmuError::Setup(io::Error::new(e.kind(), format!("{}: {e}", dir.display())))
        })?;
    }
    let mut logs = Logs {
        mahimahi: [None, None],
        packets: None,
    };
    for d in [UP, DOWN] {
        if let Some(p) = &cfg.mahimahi_logs[d] {
            let title = ["uplink", "downlink"][d];
            logs.mahimahi[d] = Some(
                MahimahiLog::create(p, title, &cfg.links[d].capacity).map_err(EmuError::Setup)?,
            );
        }
    }
    if let Some(dir) = &cfg.log_dir {
        logs.packets = Some(PacketLog::create(&dir.join("packets.csv")).map_err(EmuError::Setup)?);
    }
    let logging = logs.any();
    // Seeded as the simulator seeds the same link (sim.rs): the queue from stream 2 << 32 | d,
    // the impairments from 1 << 32 | d, so a scenario's random losses fall the same way.
    let direction = |d: usize| {
        let seed = |stream: u64| rtcc_scenario::derive_seed(cfg.seed, stream << 32 | d as u64);
        Direction::new(&cfg.links[d], seed(2), seed(1), logging)
            .map_err(|e| EmuError::Setup(io::Error::other(e)))
    };
    let mut dirs = [direction(UP)?, direction(DOWN)?];

    // Signals are caught before the namespace exists, so that one arriving while it is being set
    // up ends the shell through its clean-up (it used to kill the process between the two,
    // leaving the namespace to the next start's sweep of stale ones).
    signals::install();
    let ns = Namespace::create().map_err(EmuError::Setup)?;
    // `wall` keeps real time for the shell's own bookkeeping; `clock` is the links' time, which
    // starts `start_delay` later (and reads zero until then).
    let wall = Clock::new();
    let clock = Clock::with_origin(wall.origin_ns() + cfg.start_delay.0);
    let spawn_error = |error| EmuError::Spawn {
        command: cfg.command.join(" "),
        error,
    };
    let mut child = ns
        .command(program)
        .map_err(spawn_error)?
        .env("RTCC_EMU_CLOCK_ORIGIN_NS", clock.origin_ns().to_string())
        .args(&cfg.command[1..])
        .spawn()
        .map_err(spawn_error)?;
    let group = child.id() as libc::pid_t;
    clock::precise_timers();

    let mut flows = Flows::default();
    let mut lateness = Lateness::default();
    let mut failed_writes = 0u64;
    let mut buf = vec![0u8; 65_536];
    // Read from the device where the direction starts, write to the one where it ends.
    let devices: [(&Tun, &Tun); 2] = [(&ns.inside, &ns.outside), (&ns.outside, &ns.inside)];
    let mut next_child_check = Time::ZERO;
    let mut stop_signal: Option<Time> = None;
    // Once the command has exited: its status, and how long the packets still on the links may
    // take to arrive.
    let mut exited: Option<(ExitStatus, Time)> = None;
    let status: ExitStatus = loop {
        let now = clock.now();
        for d in [UP, DOWN] {
            dirs[d].handle_timeout(now);
            while let Some((due, p)) = dirs[d].poll_deliver(now) {
                if !devices[d].1.write(&p.bytes) {
                    failed_writes += 1;
                }
                lateness.add(clock.now() - due);
            }
            if logging {
                while let Some(e) = dirs[d].poll_log() {
                    logs.write(d, &e).map_err(EmuError::Log)?;
                }
            }
        }
        let real = wall.now();
        if let Some(sig) = signals::take() {
            // Pass it on to every process of the command; they decide how to end.
            // SAFETY: kill has no memory-safety preconditions.
            unsafe { libc::kill(-group, sig) };
            stop_signal.get_or_insert(real);
        }
        if let Some((status, until)) = exited {
            let idle = dirs.iter().all(|d| d.poll_timeout().is_none());
            if idle || real >= until || stop_signal.is_some() {
                break status;
            }
        } else if real >= next_child_check {
            next_child_check = real + Duration::from_millis(5);
            if let Some(status) = child.try_wait().map_err(EmuError::Setup)? {
                // Deliver what is still on the links (up to DRAIN), so a sender's last packets
                // arrive as they would have had it stayed.
                exited = Some((status, real + DRAIN));
            } else if stop_signal.is_some_and(|since| real - since > STOP_GRACE) {
                // SAFETY: as above.
                unsafe { libc::kill(-group, libc::SIGKILL) };
                let _ = child.kill();
            }
        }
        let deadline = match (dirs[UP].poll_timeout(), dirs[DOWN].poll_timeout()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let ready = clock::wait(
            &clock,
            [ns.inside.fd(), ns.outside.fd()],
            deadline,
            Duration::from_millis(5),
        );
        for d in [UP, DOWN] {
            if !ready[d] {
                continue;
            }
            // Take what is waiting, a few packets at a time, so deliveries are not held up.
            for _ in 0..READ_BATCH {
                match devices[d].0.read(&mut buf) {
                    Ok(Some(n)) => {
                        let flow = flows.id(&buf[..n]);
                        dirs[d].handle_packet(clock.now(), buf[..n].to_vec(), flow);
                    }
                    Ok(None) => break,
                    Err(e) => {
                        return Err(EmuError::Setup(io::Error::new(
                            e.kind(),
                            format!("reading {}: {e}", devices[d].0.name),
                        )))
                    }
                }
            }
        }
    };
    let end = clock.now();
    ns.kill_stragglers();

    for d in [UP, DOWN] {
        if logging {
            while let Some(e) = dirs[d].poll_log() {
                logs.write(d, &e).map_err(EmuError::Log)?;
            }
        }
        if let Some(m) = logs.mahimahi[d].take() {
            m.finish(end).map_err(EmuError::Log)?;
        }
    }
    if let Some(p) = logs.packets.take() {
        p.finish().map_err(EmuError::Log)?;
    }
    let intake_drops = ns.intake_drops();
    let mut summary = summary(&cfg, &dirs, &lateness, failed_writes, intake_drops, end);
    // The instant of CLOCK_MONOTONIC that is time zero of the logs (shared by every process on
    // the host, so a sender's and a receiver's logs line up with the emulator's).
    summary["clock_origin_ns"] = clock.origin_ns().into();
    if let Some(dir) = &cfg.log_dir {
        flows.write(dir).map_err(EmuError::Log)?;
        let mut out = AtomicWriter::create(&dir.join("emu.json")).map_err(EmuError::Log)?;
        serde_json::to_writer_pretty(&mut out, &summary)
            .map_err(|e| EmuError::Log(io::Error::other(e)))?;
        out.finish().map_err(EmuError::Log)?;
    }
    if cfg.summary {
        eprintln!("rtcc emu: {}", summary_line(&summary));
    }
    Ok(exit_code(status))
}

fn exit_code(status: ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    status
        .code()
        .or_else(|| status.signal().map(|s| 128 + s))
        .unwrap_or(1)
}

fn summary(
    cfg: &EmuConfig,
    dirs: &[Direction; 2],
    lateness: &Lateness,
    failed_writes: u64,
    intake_drops: [Option<u64>; 2],
    end: Time,
) -> serde_json::Value {
    let secs = end.as_secs_f64().max(1e-9);
    let dir = |d: usize| {
        let c = &dirs[d].counters;
        serde_json::json!({
            "capacity": format!("{:?}", cfg.links[d].capacity).chars().take(80).collect::<String>(),
            "delay_ms": cfg.links[d].delay.as_millis_f64(),
            "arrived_packets": c.arrived_packets,
            "arrived_bytes": c.arrived_bytes,
            "delivered_packets": c.delivered_packets,
            "delivered_bytes": c.delivered_bytes,
            "delivered_mbps": c.delivered_bytes as f64 * 8.0 / secs / 1e6,
            "queue_drops": c.queue_drops,
            "lost": c.lost,
        })
    };
    serde_json::json!({
        "command": cfg.command,
        "seed": cfg.seed,
        "duration_s": secs,
        "uplink": dir(UP),
        "downlink": dir(DOWN),
        "delivery_lateness": lateness.json(),
        // Packets lost by the emulator itself, not by the emulated links: not read in time
        // (`uplink`/`downlink`: dropped at the device where that direction starts) or not
        // taken by the kernel when written.
        "emulator_drops": {
            "uplink_intake": intake_drops[0],
            "downlink_intake": intake_drops[1],
            "failed_writes": failed_writes,
        },
    })
}

fn summary_line(s: &serde_json::Value) -> String {
    let f = |v: &serde_json::Value| v.as_f64().unwrap_or(f64::NAN);
    format!(
        "{:.1} s; uplink {:.2} Mbit/s delivered, {} queue drops; downlink {:.2} Mbit/s, {} queue drops; delivery lateness p50 {:.0} µs, p99 {:.0} µs",
        f(&s["duration_s"]),
        f(&s["uplink"]["delivered_mbps"]),
        s["uplink"]["queue_drops"],
        f(&s["downlink"]["delivered_mbps"]),
        s["downlink"]["queue_drops"],
        f(&s["delivery_lateness"]["p50_us"]),
        f(&s["delivery_lateness"]["p99_us"]),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_directions_of_a_flow_share_its_id() {
        // UDP 10.0.0.1:5000 -> 10.0.0.2:6000, and the reply.
        let mut p = vec![0u8; 28];
        p[0] = 0x45;
        p[9] = 17;
        p[12..16].copy_from_slice(&[10, 0, 0, 1]);
        p[16..20].copy_from_slice(&[10, 0, 0, 2]);
        p[20..24].copy_from_slice(&[0x13, 0x88, 0x17, 0x70]);
        let mut reply = p.clone();
        reply[12..16].copy_from_slice(&[10, 0, 0, 2]);
        reply[16..20].copy_from_slice(&[10, 0, 0, 1]);
        reply[20..24].copy_from_slice(&[0x17, 0x70, 0x13, 0x88]);
        let mut other = p.clone();
        other[21] = 0x89;
        let mut flows = Flows::default();
        assert_eq!(flows.id(&p), 0);
        assert_eq!(flows.id(&reply), 0, "a reply belongs to its flow");
        assert_eq!(flows.id(&other), 1, "another source port is another flow");
        assert_eq!(
            flows.id(&[0xff; 3]),
            2,
            "garbage is a flow of its own, not a panic"
        );
        assert_eq!(flows.id(&[]), 2);
        // A datagram in two fragments (more-fragments flag, then offset 185 x 8 bytes): the
        // second, which has no ports, is the first's flow.
        let mut first = p.clone();
        first[4..6].copy_from_slice(&[0x12, 0x34]);
        first[6] = 0x20;
        let mut second = first.clone();
        second[6] = 0x00;
        second[7] = 185;
        second[20..24].copy_from_slice(&[0xde, 0xad, 0xbe, 0xef]);
        assert_eq!(flows.id(&first), 0);
        assert_eq!(
            flows.id(&second),
            0,
            "a later fragment is its datagram's flow"
        );
        assert_eq!(
            flows.table[0].0.describe(true),
            [
                "udp".to_string(),
                "10.0.0.1:5000".into(),
                "10.0.0.2:6000".into()
            ]
        );
    }

    #[test]
    fn lateness_quantiles_are_bin_upper_edges() {
        let mut l = Lateness::default();
        for us in 0..100 {
            l.add(Duration::from_micros(us));
        }
        assert_eq!(l.quantile_us(0.5), Some(50.0));
        assert_eq!(l.quantile_us(0.99), Some(99.0));
        assert_eq!(l.quantile_us(1.0), Some(100.0));
    }
}
