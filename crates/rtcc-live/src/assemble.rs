//! A live run's logs turned into a run of the simulator's shape ([`RunResult`]), summarised by
//! the simulator's own code ([`rtcc_scenario::outcome::summarize`]), so a live run and a simulated one
//! are measured the same way and written as the same run folder.
//!
//! Inputs, each a `--log-dir` of one process (formats in [`crate::transport`] and [`crate::emu`]):
//! the sender's (`packets.csv`, `frames.csv`, `state.csv`, `send.json`), the receiver's
//! (`arrivals.csv`, `frames.csv`, `recv.json`) and optionally the emulator's (`packets.csv`,
//! `flows.csv`, `emu.json`). Every process logs on its own clock; each summary has the instant
//! of `CLOCK_MONOTONIC` that is its zero (`clock_origin_ns`), shared by all processes on one
//! host, and every time is moved to the sender's clock, which keeps the scenario's timeline
//! (it starts sending at the flow's `start`).
//!
//! What each record gets:
//! - a packet: sent (sender's log), received (receiver's arrival of its transport-wide sequence
//!   number), and, with the emulator's log, its arrival at and departure from the emulated
//!   link. The emulator sees IP packets, not RTP: the flow's packets are its UDP flow's uplink
//!   packets, the one whose count equals the sender's (the kernel keeps a socket's datagrams in
//!   order, so the k-th of each is the same datagram). Without the emulator's log, a packet
//!   enters the "link" when it is sent and has no departure, as on an unlimited link.
//! - a packet never received is counted lost (`dropped`);
//! - a frame: encoded (sender), completed, shown or given up on (receiver), and its first and last
//!   media packet sent, as the simulator records them.

use rtcc_core::endpoint::EncodedFrameInfo;
use rtcc_core::media::jitter_buffer::FrameEvent;
use rtcc_core::media::quality::{Resolution, LADDER};
use rtcc_core::metrics::{apply_frame_event, FrameRecord, PacketRecord, PacketStats};
use rtcc_core::packet::PacketKind;
use rtcc_core::{Rate, Time};
use rtcc_scenario::outcome::{capacity_series, summarize, FlowLogs, RunResult, StateLog};
use rtcc_scenario::Scenario;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Where a live run's logs are.
#[derive(Debug, Clone)]
pub struct LiveLogs {
    pub send: PathBuf,
    pub recv: PathBuf,
    pub emu: Option<PathBuf>,
}

/// A CSV log: its rows as fields, after checking its header.
struct Csv {
    path: PathBuf,
    rows: Vec<Vec<String>>,
}

impl Csv {
    fn read(dir: &Path, name: &str, header: &str) -> Result<Csv, String> {
        let path = dir.join(name);
        let text =
            std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let mut lines = text.lines();
        let got = lines.next().unwrap_or("");
        if got != header {
            return Err(format!(
                "{}: expected the header {header:?}, found {got:?}",
                path.display()
            ));
        }
        let rows = lines
            .map(|l| l.split(',').map(str::to_string).collect())
            .collect();
        Ok(Csv { path, rows })
    }

    /// Field `i` of row `r`, parsed.
    fn get<T: std::str::FromStr>(&self, r: usize, i: usize) -> Result<T, String> {
        let field = self.rows[r].get(i).map(String::as_str).unwrap_or("");
        field.parse().map_err(|_| {
            format!(
                "{}: line {}: field {} is {field:?}",
                self.path.display(),
                r + 2,
                i + 1
            )
        })
    }
}

fn clock_origin(dir: &Path, name: &str) -> Result<i64, String> {
    let path = dir.join(name);
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let v: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    v["clock_origin_ns"]
        .as_i64()
        .ok_or_else(|| format!("{}: no clock_origin_ns", path.display()))
}

/// Moves a time on another process's clock to the sender's (a time before the sender's zero
/// becomes zero).
fn shifted(t_ns: i64, offset_ns: i64) -> Option<Time> {
    (t_ns >= 0).then(|| Time(t_ns.saturating_add(offset_ns).max(0) as u64))
}

fn resolution_of(height: u32) -> Option<Resolution> {
    (height > 0).then(|| {
        LADDER
            .iter()
            .copied()
            .find(|r| r.height == height)
            .unwrap_or(Resolution {
                width: height * 16 / 9,
                height,
            })
    })
}

/// Each packet's arrival at and departure from the emulated link (`None`: dropped there).
type LinkTimes = Vec<(Time, Option<Time>)>;

/// The emulated link's (enqueue, depart) for each of the flow's `count` packets, in send order;
/// `None` (with a warning) if no UDP flow on the uplink has exactly `count` packets (a packet the
/// kernel dropped before the emulator read it, say), as the pairing by order would be wrong.
fn emu_times(dir: &Path, count: usize, offset_ns: i64) -> Result<Option<LinkTimes>, String> {
    let flows = Csv::read(dir, "flows.csv", "flow,protocol,end_a,end_b")?;
    let packets = Csv::read(
        dir,
        "packets.csv",
        "direction,flow,seq,size,enqueue_ns,depart_ns,recv_ns,dropped",
    )?;
    let mut by_flow: HashMap<u32, Vec<(u64, Time, Option<Time>)>> = HashMap::new();
    for r in 0..packets.rows.len() {
        if packets.rows[r].first().map(String::as_str) != Some("up") {
            continue;
        }
        let flow: u32 = packets.get(r, 1)?;
        let enqueue = shifted(packets.get(r, 4)?, offset_ns).unwrap_or(Time::ZERO);
        let depart = shifted(packets.get(r, 5)?, offset_ns);
        by_flow
            .entry(flow)
            .or_default()
            .push((packets.get(r, 2)?, enqueue, depart));
    }
    // The log has each packet once it settled (left the link or was dropped), which is not the
    // order they arrived in; `seq` numbers them in arrival order.
    let mut by_flow: HashMap<u32, LinkTimes> = by_flow
        .into_iter()
        .map(|(flow, mut rows)| {
            rows.sort_unstable_by_key(|&(seq, ..)| seq);
            (flow, rows.into_iter().map(|(_, e, d)| (e, d)).collect())
        })
        .collect();
    let udp: Vec<u32> = (0..flows.rows.len())
        .filter(|&r| flows.rows[r].get(1).is_some_and(|p| p == "udp"))
        .filter_map(|r| flows.get(r, 0).ok())
        .collect();
    let found = udp
        .iter()
        .filter_map(|f| by_flow.remove(f))
        .find(|times| times.len() == count);
    if found.is_none() {
        eprintln!(
            "rtcc: warning: {}: no UDP flow has the sender's {count} packets on the uplink; the \
             run's queueing delays are left out",
            dir.display()
        );
    }
    Ok(found)
}

/// Assemble flow `flow` of `sc`, run live, into a one-flow run.
pub fn assemble(sc: &Scenario, flow: usize, logs: &LiveLogs) -> Result<RunResult, String> {
    sc.single_hop("the live transport")?;
    let config = sc
        .flows
        .get(flow)
        .ok_or_else(|| format!("the scenario has no flow {flow}"))?
        .clone();
    let send_origin = clock_origin(&logs.send, "send.json")?;
    let recv_offset = clock_origin(&logs.recv, "recv.json")?.saturating_sub(send_origin);

    // Packets: sent, then matched with their arrival.
    let sent = Csv::read(
        &logs.send,
        "packets.csv",
        "flow,seq,kind,size,frame,send_ns",
    )?;
    let arrivals = Csv::read(&logs.recv, "arrivals.csv", "seq,size,recv_ns")?;
    let mut arrival_of: HashMap<u64, Time> = HashMap::new();
    for r in 0..arrivals.rows.len() {
        let seq: i64 = arrivals.get(r, 0)?;
        if let (Ok(seq), Some(t)) = (
            u64::try_from(seq),
            shifted(arrivals.get(r, 2)?, recv_offset),
        ) {
            arrival_of.entry(seq).or_insert(t);
        }
    }
    let link = match &logs.emu {
        Some(dir) => {
            let offset = clock_origin(dir, "emu.json")?.saturating_sub(send_origin);
            emu_times(dir, sent.rows.len(), offset)?
        }
        None => None,
    };
    let mut packets = Vec::with_capacity(sent.rows.len());
    for r in 0..sent.rows.len() {
        let seq: u64 = sent.get(r, 1)?;
        let frame: i64 = sent.get(r, 4)?;
        let send = Time(sent.get::<u64>(r, 5)?);
        let recv = arrival_of.get(&seq).copied();
        let (enqueue, depart) = link.as_ref().map_or((send, None), |times| times[r]);
        packets.push(PacketRecord {
            flow: 0,
            seq,
            kind: PacketKind::try_from(sent.get::<u8>(r, 2)?)?,
            size: sent.get(r, 3)?,
            frame: u64::try_from(frame).ok(),
            send,
            enqueue,
            depart,
            recv,
            dropped: recv.is_none(),
            ecn: Default::default(),
        });
    }

    // Frames: encoded, then what the receiver did with them.
    let encoded = Csv::read(
        &logs.send,
        "frames.csv",
        "flow,frame,capture_ns,size,target_bps,packets,keyframe,psnr_db,height",
    )?;
    let mut frames = Vec::with_capacity(encoded.rows.len());
    for r in 0..encoded.rows.len() {
        let frame: u64 = encoded.get(r, 1)?;
        if frame != frames.len() as u64 {
            return Err(format!(
                "{}: frames must be numbered 0, 1, 2, ... (line {} has frame {frame})",
                encoded.path.display(),
                r + 2
            ));
        }
        let info = EncodedFrameInfo {
            frame,
            capture: Time(encoded.get::<u64>(r, 2)?),
            size: encoded.get(r, 3)?,
            target: Rate(encoded.get(r, 4)?),
            packets: encoded.get(r, 5)?,
            keyframe: encoded.get::<u8>(r, 6)? != 0,
            psnr_db: encoded.get::<f64>(r, 7).ok(),
            resolution: resolution_of(encoded.get(r, 8)?),
        };
        frames.push(FrameRecord::encoded(0, &info));
    }
    for p in packets.iter().filter(|p| p.kind == PacketKind::Media) {
        if let Some(f) = p.frame.and_then(|f| frames.get_mut(f as usize)) {
            f.on_media_sent(p.send);
        }
    }
    let events = Csv::read(
        &logs.recv,
        "frames.csv",
        "flow,frame,event,time_ns,size,recovered",
    )?;
    for r in 0..events.rows.len() {
        let frame: u64 = events.get(r, 1)?;
        // On the receiver's clock; apply_frame_event moves it to the sender's.
        let at = Time(events.get::<i64>(r, 3)?.max(0) as u64);
        let event = match events.rows[r].get(2).map_or("", String::as_str) {
            "complete" => FrameEvent::Complete {
                frame,
                first_receive: at,
                last_receive: at,
                at,
                size: events.get(r, 4)?,
                recovered: events.get::<u8>(r, 5)? != 0,
            },
            "displayed" => FrameEvent::Displayed { frame, at },
            "undecodable" => FrameEvent::Undecodable { frame },
            "abandoned" => FrameEvent::Abandoned { frame },
            other => {
                return Err(format!(
                    "{}: line {}: unknown frame event {other:?}",
                    events.path.display(),
                    r + 2
                ))
            }
        };
        // A frame the receiver saw after the sender's log ended is not in `frames`: ignored.
        apply_frame_event(&mut frames, event, |t| {
            shifted(t.0 as i64, recv_offset).unwrap_or(Time::ZERO)
        });
    }

    // The controller's signals.
    let samples = Csv::read(&logs.send, "state.csv", "time_ns,name,value")?;
    let mut names: HashMap<String, &'static str> = HashMap::new();
    let mut state = StateLog::default();
    for r in 0..samples.rows.len() {
        let name = samples.rows[r]
            .get(1)
            .ok_or_else(|| format!("{}: line {}: no signal name", samples.path.display(), r + 2))?;
        // Signal names are static in the simulator; a live log has a handful, interned once.
        let name = *names
            .entry(name.clone())
            .or_insert_with(|| Box::leak(name.clone().into_boxed_str()));
        state.flow.push(0);
        state.time.push(Time(samples.get::<u64>(r, 0)?));
        state.signal.push(name);
        state.value.push(samples.get(r, 2)?);
    }

    let mut one = sc.clone();
    one.flows = vec![config.clone()];
    let mut flows = vec![FlowLogs {
        config,
        stats: PacketStats::of(
            &[],
            Time::ZERO,
            Time::ZERO,
            (Time::ZERO, Time::ZERO),
            Time::ZERO,
        ),
        packets,
        frames,
        frame_stats: None,
        segments: Vec::new(),
        downloads: Vec::new(),
        feedback_packets: 0,
        feedback_bytes: 0,
        malformed: 0,
        // The live transport neither sets nor reads the IP header's ECN bits.
        ce_marked: 0,
    }];
    let summary = summarize(&one, &mut flows, false);
    let end = Time(one.duration.0);
    let capacity = capacity_series(
        &one.forward_capacity(),
        end,
        rtcc_core::Duration::from_millis(100),
    );
    Ok(RunResult {
        summary,
        flows,
        state,
        capacity,
        hop_capacity: Vec::new(),
        events: 0,
    })
}
