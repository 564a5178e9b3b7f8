//! `rtcc-live send` and `rtcc-live recv`: one flow of a scenario over a real network, RTP and
//! RTCP over UDP, its two ends the very endpoints the simulator builds
//! ([`rtcc_scenario::Scenario::flow_endpoints`]: same controller, encoder model, packetizer, recovery,
//! feedback policy and seeds).
//!
//! ```text
//!   rtcc-live send ── RTP: media, RTX, FEC, padding ──► rtcc-live recv
//!   (sender endpoint) ◄── RTCP: feedback, NACK, PLI, RR ──  (receiver endpoint)
//! ```
//!
//! **The loop** ([`run`], one thread). An endpoint is sans-IO; the loop is all the IO it has:
//!
//! 1. `now` = the monotonic clock. A due pause, resume or stop of the sender is applied; if the
//!    endpoint's `poll_timeout` has come, `handle_timeout(now)`.
//! 2. `poll_transmit` until it returns nothing, each datagram sent at once. Each call is given a
//!    fresh `now` (also its logged send time), and when a deadline woke the loop, how late that
//!    is against the deadline is recorded: the loop's timing precision, in the summary.
//! 3. `poll_event` until empty, into the logs; the controller's signals every 50 ms.
//! 4. Wait until the socket is readable or the next deadline (the endpoint's `poll_timeout`, a
//!    sample, a switch, the end), at most 5 ms: `ppoll` with a nanosecond timeout and a short
//!    spin before the deadline ([`crate::clock::wait`]).
//! 5. Read the waiting datagrams (up to a batch, so a flood cannot starve the timers) and hand
//!    each to `handle_datagram` with the time it was read and its size on the wire.
//!
//! It ends at its duration, on SIGINT, SIGTERM or SIGHUP ([`crate::signals`]) or when another
//! thread asks it to ([`Handle::stop`]), then finishes its logs and writes its summary.
//!
//! **Sizes.** An endpoint's datagram holds its headers only; the media payload is a number, part
//! of `Transmit.size` (bytes on the wire with the IPv4 and UDP headers). Here the bytes really go
//! out: the datagram is padded with zeros to a UDP payload of `size − 28` bytes, as RTP payload
//! after the headers ([`pad_to_modelled_size`]; RTP's padding bit cannot do it, its count is one
//! byte). The receiving endpoint treats payload as if it were not there, as in the simulator:
//! media ignores it (and keeps only its headers for FEC, which is what the sender protects), an
//! RTX packet reads its original sequence number first, an FEC packet's parity is followed by
//! zeros, which recovery accepts. The receiver hands its endpoint the UDP payload's length + 28
//! ([`received_size`]), the simulator's size (`tests/wire_equivalence.rs` checks that both
//! receivers behave identically). A datagram whose headers alone are longer than its modelled
//! size goes out at its header size and is counted (`over_modelled_size`): with a per-packet
//! `overhead` below the 64 bytes of IPv4, UDP and RTP headers (0 by default), the last packet of
//! a frame with a few bytes left over, or a parity packet protecting only such packets.
//!
//! **Addresses: each end talks to one peer.** The sender sends to `--to` and hands its endpoint
//! only what comes from there. The receiver pins its peer: the address `--peer` names (a host,
//! or a host and port), else the source of the first datagram that parses as RTP of its flow
//! (one of the flow's SSRCs), and from then on hands its endpoint only what comes from that
//! address; RTCP due before then is dropped and counted. Everything else is counted
//! (`foreign_datagrams`) and dropped unread, so a third party can neither steer the flow nor
//! redirect its feedback once the call has started. Plain RTP authenticates nothing: without
//! `--peer`, a forged packet that arrives before the real sender's first one takes the
//! receiver (the summary's `peer` shows who it answered). The endpoints themselves refuse
//! another stream's packets and implausible jumps of any single packet
//! ([`rtcc_core::endpoint::VideoRecvEndpoint`]), and serve keyframe requests at most every
//! 300 ms, as libwebrtc does ([`rtcc_core::endpoint::video_send`]).
//!
//! **Time.** Each end's clock starts at zero as the end starts; its summary has that instant of
//! `CLOCK_MONOTONIC` (`clock_origin_ns`), which processes on one host share,
//! across network namespaces too, so the two ends' logs line up. The sender keeps the scenario's
//! timeline for its flow: it starts sending at the flow's `start` (the endpoint waits for it),
//! pauses on its `active` schedule and stops at `stop` (the default duration). The receiver runs
//! for the scenario's duration by default. The scenario's `clock_offset` is not applied (live
//! clocks have the offset they have), nor are its links (`rtcc emu --scenario` emulates them).
//!
//! **Logs** (`--log-dir`, each written as `X.partial` and renamed when complete):
//!
//! | end | file | columns |
//! |---|---|---|
//! | send | `packets.csv` | `flow,seq,kind,size,frame,send_ns`: every datagram the endpoint sent (seq: transport-wide; kind: `PacketKind` as a number, as in the simulator's packet log; frame −1: none; size: bytes on the wire as sent) |
//! | send | `frames.csv` | `flow,frame,capture_ns,size,target_bps,packets,keyframe,psnr_db,height` (psnr_db empty and height 0 for encoder models without them) |
//! | send | `state.csv` | `time_ns,name,value`: the controller's signals every 50 ms, and every 10 s the loop's lateness over those 10 s (`loop_lateness_p99_us`, `loop_lateness_max_us`) |
//! | send | `send.json` | the summary: counts, `clock_origin_ns`, the controller's signals at the start and the end, and `lateness` (how late each datagram sent on a deadline left after it: p50, p99, p99.9 in µs, upper edges of 1 µs bins, and the max) |
//! | recv | `arrivals.csv` | `seq,size,recv_ns`: every RTP datagram of the flow that parsed (seq: transport-wide, −1: none) |
//! | recv | `frames.csv` | `flow,frame,event,time_ns,size,recovered`: the jitter buffer's `complete`, `displayed`, `undecodable`, `abandoned` (time of the latter two: when the receiver gave up) |
//! | recv | `recv.json` | the summary: counts (arrivals, frames, `malformed`, `foreign_datagrams` not from the sender), `clock_origin_ns` |
//!
//! Every `*_ns` is on that end's clock.

use crate::capture::{self, LiveCapture};
use crate::clock::{self, Clock};
use crate::emu::log::AtomicWriter;
use crate::emu::Lateness;
use crate::signals;
use crate::srtp::{Keying, Profile, Srtp};
use clap::Args;
use rtcc_core::cc::{self, CapacityView};
use rtcc_core::endpoint::video_recv::RECEIVER_SSRC;
use rtcc_core::endpoint::video_send::Ssrcs;
use rtcc_core::endpoint::{EncodedFrameInfo, Endpoint, EndpointEvent, Transmit};
use rtcc_core::media::jitter_buffer::FrameEvent;
use rtcc_core::packet::Ecn;
use rtcc_core::wire::rtp::{is_rtcp, RtpHeader};
use rtcc_core::wire::{SeqUnwrapper, IP_UDP_OVERHEAD};
use rtcc_core::{Duration, Time};
use rtcc_scenario::flow::FlowKind;
use rtcc_scenario::{ControllerRecipe, FlowConfig, Scenario};
use serde_json::{json, Value};
use std::io::{self, Write};
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, ToSocketAddrs, UdpSocket};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// Longest sleep of the loop (it looks at signals and the end at least this often).
pub const MAX_WAIT: Duration = Duration(5_000_000);
/// The controller's signals are sampled this often.
pub const STATE_INTERVAL: Duration = Duration(50_000_000);
/// The sender's timing precision over each such window goes to its state log too
/// (`loop_lateness_p99_us`, `loop_lateness_max_us`), so that a long run shows whether it drifts.
pub const LATENESS_WINDOW: Duration = Duration(10_000_000_000);
/// Datagrams read per loop iteration at most, so that a flood cannot starve the timers.
const READ_BATCH: usize = 256;
/// Socket buffers asked for (the kernel caps them at `net.core.{r,w}mem_max`).
const SOCKET_BUFFER: libc::c_int = 4 << 20;
/// Largest UDP payload.
const MAX_DATAGRAM: usize = 65_536;

/// Which end of the flow a loop runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Send,
    Recv,
}

impl Role {
    fn name(self) -> &'static str {
        match self {
            Role::Send => "send",
            Role::Recv => "recv",
        }
    }
}

/// A change of the sender's activity on the scenario's timeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Switch {
    Pause,
    Resume,
    Close,
}

/// A running loop as other threads see it: what it has read so far, and a stop request.
#[derive(Debug, Default)]
pub struct Handle {
    /// Datagrams read.
    pub received: AtomicU64,
    /// Datagrams read that did not come from the peer (a receiver: all of them until it knows
    /// its peer).
    pub foreign: AtomicU64,
    stop: AtomicBool,
}

impl Handle {
    /// Ask the loop to end as a signal would (within [`MAX_WAIT`]).
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// How to run one end.
pub struct Options {
    pub role: Role,
    /// The flow's index in its scenario (logs, SSRCs).
    pub flow: u32,
    /// Where to send: the receiver for a sender; `None` for a receiver (it learns its peer).
    pub peer: Option<SocketAddr>,
    /// A receiver's peer before it is learned: the first flow datagram from this host (and
    /// port, if not 0) pins it. `None`: from anywhere.
    pub expect_peer: Option<SocketAddr>,
    /// SRTP and SRTCP with this key ([`crate::srtp`]); `None`: plain RTP.
    pub srtp: Option<Keying>,
    /// Stop this long after the clock's zero.
    pub duration: Duration,
    /// The sender's pauses, resumptions and stop, in time order ([`sender_schedule`]).
    pub schedule: Vec<(Time, Switch)>,
    pub log_dir: Option<PathBuf>,
    /// Capture what this end sends and receives in this pcap file ([`crate::capture`]).
    pub pcap: Option<PathBuf>,
    /// The end's clock; its zero is the flow's time zero.
    pub clock: Clock,
    pub handle: Arc<Handle>,
    /// Copied into the summary (scenario, controller, ...).
    pub describe: serde_json::Map<String, Value>,
}

/// Pad the datagram an endpoint wrote into `buf` with zeros to the UDP payload its modelled
/// size implies (`t.size − 28`). Returns false, leaving `buf` as it is, when its headers alone
/// are longer than that.
pub fn pad_to_modelled_size(buf: &mut Vec<u8>, t: &Transmit) -> bool {
    pad_to_modelled_size_less(buf, t, 0)
}

/// [`pad_to_modelled_size`] leaving room for `reserve` bytes (an SRTP tag) on the wire.
fn pad_to_modelled_size_less(buf: &mut Vec<u8>, t: &Transmit, reserve: usize) -> bool {
    let payload = (t.size.saturating_sub(IP_UDP_OVERHEAD) as usize).saturating_sub(reserve);
    if buf.len() > payload {
        return false;
    }
    buf.resize(payload, 0);
    true
}

/// The size on the wire of a datagram received with a UDP payload of `len` bytes: what the
/// simulator hands a receiving endpoint for the same datagram.
pub fn received_size(len: usize) -> u32 {
    len as u32 + IP_UDP_OVERHEAD
}

/// Flow `flow`'s SSRCs: derived from the SRTP key if there is one ([`Keying::ssrcs`]), else the
/// scenario's deterministic ones.
fn flow_ssrcs(flow: u32, srtp: Option<&Keying>) -> Ssrcs {
    srtp.map_or(Ssrcs::for_flow(flow), |k| k.ssrcs(flow))
}

/// The RTP header of a datagram of flow `ssrcs` (any of its streams), if it is one.
fn flow_rtp(datagram: &[u8], ssrcs: &Ssrcs) -> Option<RtpHeader> {
    if is_rtcp(datagram) {
        return None;
    }
    let (h, _) = RtpHeader::parse(datagram).ok()?;
    [ssrcs.media, ssrcs.rtx, ssrcs.fec]
        .contains(&h.ssrc)
        .then_some(h)
}

/// Parse a controller spec (`NAME` or `NAME:KEY=VALUE[,KEY=VALUE...]`): the scenario layer's
/// one parser, [`rtcc_scenario::controller::parse_spec`].
pub use rtcc_scenario::controller::parse_spec as parse_controller_spec;

/// The controllers live flows are built from: rtcc's, unless [`set_controllers`] gave others.
static CONTROLLERS: std::sync::Mutex<Option<cc::Registry>> = std::sync::Mutex::new(None);

/// Build live flows from `registry` from now on (the Python front passes its own, which has the
/// controllers registered from Python and `onnx`).
pub fn set_controllers(registry: cc::Registry) {
    *CONTROLLERS.lock().unwrap_or_else(|e| e.into_inner()) = Some(registry);
}

fn controllers() -> cc::Registry {
    CONTROLLERS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone()
        .unwrap_or_else(cc::Registry::builtin)
}

/// Flow `index` of `sc` as a live run builds it, and its `[sender, receiver]` endpoints.
/// `controller` (a spec) replaces the flow's controller, its parameters and its feedback policy
/// (the new controller's, as in a scenario that names it without a `feedback` table); the
/// scenario's `clock_offset` is dropped. `srtp`: the key the flow's SSRCs are derived from
/// ([`Keying::ssrcs`]); without one, the scenario's deterministic SSRCs.
pub fn live_flow(
    sc: &Scenario,
    index: usize,
    controller: Option<&str>,
    srtp: Option<&Keying>,
) -> Result<(FlowConfig, [Box<dyn Endpoint>; 2]), String> {
    sc.single_hop("the live transport")?;
    let registry = &controllers();
    let mut f = sc.flows.get(index).cloned().ok_or_else(|| {
        format!(
            "--flow {index}: the scenario has {} flow(s), numbered from 0",
            sc.flows.len()
        )
    })?;
    // The logs of the other kinds carry no transport-wide sequence numbers to match sent packets
    // with their arrivals, so their live runs could not be summarised.
    let FlowKind::Video(video) = &mut f.kind else {
        return Err(format!(
            "--flow {index}: a {} flow; live runs carry video flows only",
            f.kind.name()
        ));
    };
    if let Some(spec) = controller {
        let mut recipe = ControllerRecipe::from_spec(spec, registry)?;
        // The scenario's coupling stays (and is refused below).
        recipe.coupling = video.controller.coupling.take();
        video.feedback = recipe.feedback;
        video.controller = recipe;
    }
    // One flow per process: there is no flow group to share, so a coupled flow is refused.
    if let Some(c) = &video.controller.coupling {
        return Err(format!(
            "--flow {index}: the flow is coupled (coupling group {:?}, RFC 8699); the live \
             transport runs one flow per process and cannot share a flow state exchange between \
             flows; remove `coupling` to run it alone",
            c.group
        ));
    }
    f.clock_offset = Duration::ZERO;
    let capacity: Arc<dyn CapacityView> = Arc::new(sc.controller_capacity(&f));
    let ssrcs = srtp.map(|k| k.ssrcs(index as u32));
    let ends = sc.flow_endpoints(index, &f, &capacity, registry, None, ssrcs)?;
    Ok((f, ends))
}

/// The sender's pauses and resumptions (between the flow's `active` periods) and its stop, in
/// time order, as the simulator applies them.
pub fn sender_schedule(f: &FlowConfig) -> Vec<(Time, Switch)> {
    let mut schedule = vec![(f.stop, Switch::Close)];
    for w in f.active.windows(2) {
        schedule.push((w[0].1, Switch::Pause));
        schedule.push((w[1].0, Switch::Resume));
    }
    schedule.sort_by_key(|&(t, _)| t);
    schedule
}

/// The logs of one end, streamed as the run goes.
struct Logs {
    packets: Option<AtomicWriter>,
    frames: Option<AtomicWriter>,
    state: Option<AtomicWriter>,
    arrivals: Option<AtomicWriter>,
}

impl Logs {
    fn create(role: Role, dir: Option<&Path>) -> io::Result<Logs> {
        let mut logs = Logs {
            packets: None,
            frames: None,
            state: None,
            arrivals: None,
        };
        let Some(dir) = dir else {
            return Ok(logs);
        };
        let file = |name: &str, header: &str| -> io::Result<Option<AtomicWriter>> {
            let mut w = AtomicWriter::create(&dir.join(name))?;
            writeln!(w, "{header}")?;
            Ok(Some(w))
        };
        match role {
            Role::Send => {
                logs.packets = file("packets.csv", "flow,seq,kind,size,frame,send_ns")?;
                logs.frames = file(
                    "frames.csv",
                    "flow,frame,capture_ns,size,target_bps,packets,keyframe,psnr_db,height",
                )?;
                logs.state = file("state.csv", "time_ns,name,value")?;
            }
            Role::Recv => {
                logs.arrivals = file("arrivals.csv", "seq,size,recv_ns")?;
                logs.frames = file("frames.csv", "flow,frame,event,time_ns,size,recovered")?;
            }
        }
        Ok(logs)
    }

    fn finish(self) -> io::Result<()> {
        for w in [self.packets, self.frames, self.state, self.arrivals]
            .into_iter()
            .flatten()
        {
            w.finish()?;
        }
        Ok(())
    }
}

/// What the loop counts for its summary.
#[derive(Debug, Default)]
struct Stats {
    /// Datagrams the endpoint released (all logged), and their bytes on the wire.
    transmits: u64,
    transmit_bytes: u64,
    /// ... of them, those the socket took.
    sent: u64,
    sent_bytes: u64,
    over_modelled_size: u64,
    send_failures: u64,
    unsent_no_peer: u64,
    received_bytes: u64,
    recv_errors: u64,
    /// Datagrams refused by SRTP (too short, an unexpected SSRC, not authentic, a replay).
    unauthenticated: u64,
    arrivals: u64,
    arrival_bytes: u64,
    frames_encoded: u64,
    frames_complete: u64,
    frames_recovered: u64,
    frames_displayed: u64,
    /// Abandoned or undecodable (frames the encoder skipped included: the receiver cannot tell
    /// them from lost ones).
    frames_given_up: u64,
}

/// One end's loop state.
struct Driver {
    role: Role,
    flow: u32,
    ssrcs: Ssrcs,
    endpoint: Box<dyn Endpoint>,
    socket: UdpSocket,
    peer: Option<SocketAddr>,
    expect_peer: Option<SocketAddr>,
    srtp: Option<Srtp>,
    clock: Clock,
    handle: Arc<Handle>,
    logs: Logs,
    stats: Stats,
    lateness: Lateness,
    /// Lateness since `window_start` ([`LATENESS_WINDOW`]).
    window: Lateness,
    window_start: Time,
    /// Transport-wide sequence numbers of arrivals, unwrapped.
    arrival_seq: SeqUnwrapper,
    tx: Vec<u8>,
    rx: Vec<u8>,
    /// An SRTP datagram: sealed before it is sent, opened after it is read.
    crypt: Vec<u8>,
    /// The controller's signals, as last sampled.
    signals: Vec<(&'static str, f64)>,
    capture: Option<LiveCapture>,
    /// This end's address in the capture: its socket's, made concrete (for a socket bound to any
    /// address) from the route to the peer, or to the first sender heard.
    local: SocketAddr,
}

impl Driver {
    /// Send everything the endpoint releases now; `deadline`: the timeout that woke the loop.
    fn transmit(&mut self, deadline: Option<Time>) -> io::Result<()> {
        loop {
            let now = self.clock.now();
            let Some(t) = self.endpoint.poll_transmit(now, &mut self.tx) else {
                return Ok(());
            };
            if let Some(d) = deadline {
                self.lateness.add(now.saturating_since(d));
                self.window.add(now.saturating_since(d));
            }
            let rtcp = is_rtcp(&self.tx);
            // An SRTP packet's tag is part of its modelled size (crate::srtp, "Sizes").
            let tag = match (&self.srtp, rtcp) {
                (Some(s), false) => s.profile().rtp_overhead(),
                _ => 0,
            };
            if !pad_to_modelled_size_less(&mut self.tx, &t, tag) {
                self.stats.over_modelled_size += 1;
            }
            let wire: &[u8] = match &mut self.srtp {
                Some(s) => {
                    s.protect(&self.tx, rtcp, &mut self.crypt)
                        .map_err(io::Error::other)?;
                    &self.crypt
                }
                None => &self.tx,
            };
            let size = received_size(wire.len());
            self.stats.transmits += 1;
            self.stats.transmit_bytes += size as u64;
            match self.peer {
                None => self.stats.unsent_no_peer += 1,
                Some(peer) => match self.socket.send_to(wire, peer) {
                    Ok(_) => {
                        self.stats.sent += 1;
                        self.stats.sent_bytes += size as u64;
                        if let Some(c) = &mut self.capture {
                            c.datagram(self.local, peer, t.ecn, wire)?;
                        }
                    }
                    // A full send buffer or an unreachable peer: lost on the first hop.
                    Err(_) => self.stats.send_failures += 1,
                },
            }
            if let Some(out) = &mut self.logs.packets {
                let frame = t.frame.map_or(-1, |f| f as i64);
                // Without a transport-wide number: the datagram's index, as the simulator logs it.
                let seq = t.seq.unwrap_or(self.stats.transmits - 1);
                writeln!(
                    out,
                    "{},{seq},{},{size},{frame},{}",
                    self.flow, t.kind as u8, now.0
                )?;
            }
        }
    }

    /// Log what the endpoint reported.
    fn take_events(&mut self, now: Time) -> io::Result<()> {
        while let Some(e) = self.endpoint.poll_event() {
            match e {
                EndpointEvent::FrameEncoded(f) => {
                    self.stats.frames_encoded += 1;
                    if let Some(out) = &mut self.logs.frames {
                        write_encoded_frame(out, self.flow, &f)?;
                    }
                }
                EndpointEvent::Frame(fe) => {
                    let (frame, event, at, size, recovered) = match fe {
                        FrameEvent::Complete {
                            frame,
                            at,
                            size,
                            recovered,
                            ..
                        } => {
                            self.stats.frames_complete += 1;
                            self.stats.frames_recovered += recovered as u64;
                            (frame, "complete", at, size, recovered)
                        }
                        FrameEvent::Displayed { frame, at } => {
                            self.stats.frames_displayed += 1;
                            (frame, "displayed", at, 0, false)
                        }
                        FrameEvent::Undecodable { frame } => {
                            self.stats.frames_given_up += 1;
                            (frame, "undecodable", now, 0, false)
                        }
                        FrameEvent::Abandoned { frame } => {
                            self.stats.frames_given_up += 1;
                            (frame, "abandoned", now, 0, false)
                        }
                    };
                    if let Some(out) = &mut self.logs.frames {
                        writeln!(
                            out,
                            "{},{frame},{event},{},{size},{}",
                            self.flow, at.0, recovered as u8
                        )?;
                    }
                }
                // Live runs carry video flows only (other kinds are refused before they start).
                EndpointEvent::Segment(_) | EndpointEvent::Download(_) => {}
            }
        }
        Ok(())
    }

    /// The controller's signals now, and the loop's lateness when a window is over.
    fn sample_state(&mut self, now: Time) -> io::Result<()> {
        self.signals.clear();
        self.endpoint.state(&mut self.signals);
        if let Some(out) = &mut self.logs.state {
            for (name, value) in &self.signals {
                writeln!(out, "{},{name},{value}", now.0)?;
            }
            if now.saturating_since(self.window_start) >= LATENESS_WINDOW {
                if let Some(p99) = self.window.quantile_us(0.99) {
                    let max = self.window.max_us();
                    writeln!(out, "{},loop_lateness_p99_us,{p99}", now.0)?;
                    writeln!(out, "{},loop_lateness_max_us,{max}", now.0)?;
                }
                self.window.clear();
                self.window_start = now;
            }
        }
        Ok(())
    }

    /// Read what is waiting (up to a batch) and hand it to the endpoint.
    fn receive(&mut self) -> io::Result<()> {
        for _ in 0..READ_BATCH {
            let (len, from) = match self.socket.recv_from(&mut self.rx) {
                Ok(v) => v,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => {
                    self.stats.recv_errors += 1;
                    return Ok(());
                }
            };
            let now = self.clock.now();
            let size = received_size(len);
            self.handle.received.fetch_add(1, Ordering::Relaxed);
            if let Some(c) = &mut self.capture {
                if self.local.ip().is_unspecified() {
                    self.local = capture::local_towards(self.local, from);
                }
                // As on the wire: foreign datagrams and SRTP ciphertext included.
                c.datagram(from, self.local, Ecn::NotEct, &self.rx[..len])?;
            }
            self.stats.received_bytes += size as u64;
            let datagram: &[u8] = match &mut self.srtp {
                None => &self.rx[..len],
                Some(s) => {
                    let raw = &self.rx[..len];
                    if s.unprotect(raw, is_rtcp(raw), &mut self.crypt).is_err() {
                        self.stats.unauthenticated += 1;
                        self.handle.foreign.fetch_add(1, Ordering::Relaxed);
                        continue; // not from the peer, as far as anyone can tell: unread
                    }
                    &self.crypt
                }
            };
            let rtp = match self.role {
                Role::Recv => flow_rtp(datagram, &self.ssrcs),
                Role::Send => None,
            };
            if self.peer.is_none() && rtp.is_some() && self.expected(from) {
                self.peer = Some(from);
            }
            if self.peer != Some(from) {
                self.handle.foreign.fetch_add(1, Ordering::Relaxed);
                continue; // not the peer's: unread
            }
            if let Some(h) = rtp {
                self.stats.arrivals += 1;
                self.stats.arrival_bytes += size as u64;
                if let Some(out) = &mut self.logs.arrivals {
                    let seq = h
                        .transport_seq
                        .map_or(-1, |s| self.arrival_seq.unwrap(s) as i64);
                    writeln!(out, "{seq},{size},{}", now.0)?;
                }
            }
            self.endpoint.handle_datagram(now, datagram, size);
        }
        Ok(())
    }

    /// Whether a receiver may pin `from` as its peer (`--peer`).
    fn expected(&self, from: SocketAddr) -> bool {
        self.expect_peer
            .is_none_or(|e| e.ip() == from.ip() && (e.port() == 0 || e.port() == from.port()))
    }
}

fn write_encoded_frame(out: &mut AtomicWriter, flow: u32, f: &EncodedFrameInfo) -> io::Result<()> {
    let psnr = f.psnr_db.map_or(String::new(), |p| p.to_string());
    let height = f.resolution.map_or(0, |r| r.height);
    writeln!(
        out,
        "{flow},{},{},{},{},{},{},{psnr},{height}",
        f.frame,
        f.capture.0,
        f.size,
        f.target.bps(),
        f.packets,
        f.keyframe as u8
    )
}

/// Ask for large socket buffers, so that bursts (a keyframe, a flood) are not dropped by the
/// kernel while the loop sleeps; best effort.
fn enlarge_buffers(socket: &UdpSocket) {
    for option in [libc::SO_RCVBUF, libc::SO_SNDBUF] {
        // SAFETY: setsockopt reads `size_of::<c_int>()` bytes from a valid c_int.
        unsafe {
            libc::setsockopt(
                socket.as_raw_fd(),
                libc::SOL_SOCKET,
                option,
                (&SOCKET_BUFFER as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            );
        }
    }
}

fn signals_json(signals: &[(&'static str, f64)]) -> Value {
    Value::Object(
        signals
            .iter()
            .map(|&(name, value)| (name.to_string(), json!(value)))
            .collect(),
    )
}

/// Run one end over `socket` until its duration or a signal; returns the summary (also written
/// to `send.json` / `recv.json` in the log folder).
pub fn run(endpoint: Box<dyn Endpoint>, socket: UdpSocket, opts: Options) -> io::Result<Value> {
    socket.set_nonblocking(true)?;
    enlarge_buffers(&socket);
    let local = socket.local_addr()?;
    if let Some(dir) = &opts.log_dir {
        std::fs::create_dir_all(dir)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", dir.display())))?;
    }
    let mut d = Driver {
        role: opts.role,
        flow: opts.flow,
        ssrcs: flow_ssrcs(opts.flow, opts.srtp.as_ref()),
        endpoint,
        socket,
        peer: opts.peer,
        expect_peer: opts.expect_peer,
        srtp: match &opts.srtp {
            None => None,
            // Each end authenticates what its peer sends: the receiver's RTCP, the flow's RTP.
            Some(k) => Some(
                Srtp::new(
                    k,
                    match opts.role {
                        Role::Send => vec![RECEIVER_SSRC],
                        Role::Recv => {
                            let s = flow_ssrcs(opts.flow, Some(k));
                            vec![s.media, s.rtx, s.fec]
                        }
                    },
                )
                .map_err(io::Error::other)?,
            ),
        },
        clock: opts.clock,
        handle: opts.handle.clone(),
        logs: Logs::create(opts.role, opts.log_dir.as_deref())?,
        stats: Stats::default(),
        lateness: Lateness::default(),
        window: Lateness::default(),
        window_start: Time::ZERO,
        arrival_seq: SeqUnwrapper::new(),
        tx: Vec::with_capacity(MAX_DATAGRAM),
        rx: vec![0; MAX_DATAGRAM],
        crypt: Vec::with_capacity(MAX_DATAGRAM),
        signals: Vec::new(),
        capture: opts.pcap.as_deref().map(LiveCapture::create).transpose()?,
        local: opts
            .peer
            .map_or(local, |peer| capture::local_towards(local, peer)),
    };
    clock::precise_timers();
    let fd = d.socket.as_raw_fd();
    let end = Time(opts.duration.0);
    let sampling = opts.role == Role::Send;
    let mut schedule = opts.schedule.iter().peekable();
    let mut next_sample = Time::ZERO;
    let mut state_start = None;
    let stopped_by = loop {
        let now = d.clock.now();
        if signals::take().is_some() {
            break "signal";
        }
        if d.handle.stop.load(Ordering::Relaxed) {
            break "stop request";
        }
        if now >= end {
            break "duration";
        }
        while let Some(&&(_, switch)) = schedule.peek().filter(|(at, _)| *at <= now) {
            match switch {
                Switch::Pause => d.endpoint.set_active(now, false),
                Switch::Resume => d.endpoint.set_active(now, true),
                Switch::Close => d.endpoint.close(now),
            }
            schedule.next();
        }
        let due = d.endpoint.poll_timeout().filter(|&t| t <= now);
        if due.is_some() {
            d.endpoint.handle_timeout(now);
        }
        d.transmit(due)?;
        d.take_events(now)?;
        if sampling && now >= next_sample {
            d.sample_state(now)?;
            state_start.get_or_insert_with(|| signals_json(&d.signals));
            while next_sample <= now {
                next_sample += STATE_INTERVAL;
            }
        }
        let wake = [
            d.endpoint.poll_timeout(),
            schedule.peek().map(|&&(at, _)| at),
            sampling.then_some(next_sample),
            Some(end),
        ]
        .into_iter()
        .flatten()
        .min();
        let [readable] = clock::wait(&d.clock, [fd], wake, MAX_WAIT);
        if readable {
            d.receive()?;
        }
    };
    let duration = d.clock.now();
    let mut state_end = Value::Null;
    if sampling {
        d.sample_state(duration)?;
        state_end = signals_json(&d.signals);
    }
    let Driver {
        stats: s,
        logs,
        lateness,
        endpoint,
        handle,
        peer,
        clock,
        capture,
        ..
    } = d;
    logs.finish()?;
    let capture_skipped = capture.as_ref().map(|c| c.skipped_ipv6);
    if let Some(c) = capture {
        c.finish()?;
    }
    let secs = duration.as_secs_f64().max(1e-9);
    let mut summary = opts.describe;
    let mut add = |key: &str, value: Value| {
        summary.insert(key.to_string(), value);
    };
    add("role", json!(opts.role.name()));
    if let Some(skipped) = capture_skipped {
        add(
            "pcap",
            json!(opts.pcap.as_ref().map(|p| p.display().to_string())),
        );
        add("pcap_skipped_ipv6", json!(skipped));
    }
    add("flow", json!(opts.flow));
    add("local", json!(local.to_string()));
    add("peer", json!(peer.map(|p| p.to_string())));
    add("clock_origin_ns", json!(clock.origin_ns()));
    add("duration_s", json!(duration.as_secs_f64()));
    add("stopped_by", json!(stopped_by));
    add("datagrams_sent", json!(s.sent));
    add("bytes_sent", json!(s.sent_bytes));
    add("sent_mbps", json!(s.sent_bytes as f64 * 8.0 / secs / 1e6));
    add("send_failures", json!(s.send_failures));
    add("over_modelled_size", json!(s.over_modelled_size));
    add(
        "datagrams_received",
        json!(handle.received.load(Ordering::Relaxed)),
    );
    add("bytes_received", json!(s.received_bytes));
    add(
        "foreign_datagrams",
        json!(handle.foreign.load(Ordering::Relaxed)),
    );
    add("malformed", json!(endpoint.malformed()));
    add("discarded", json!(endpoint.discarded()));
    add("srtp", json!(opts.srtp.as_ref().map(|k| k.profile.name())));
    add("unauthenticated", json!(s.unauthenticated));
    add("recv_errors", json!(s.recv_errors));
    add("lateness", lateness.json());
    match opts.role {
        Role::Send => {
            add("packets", json!(s.transmits));
            add("bytes", json!(s.transmit_bytes));
            add("frames_encoded", json!(s.frames_encoded));
            add("state_start", state_start.unwrap_or(Value::Null));
            add("state_end", state_end);
        }
        Role::Recv => {
            add("arrivals", json!(s.arrivals));
            add("arrival_bytes", json!(s.arrival_bytes));
            add(
                "arrival_mbps",
                json!(s.arrival_bytes as f64 * 8.0 / secs / 1e6),
            );
            add("rtcp_unsent_no_peer", json!(s.unsent_no_peer));
            add("frames_complete", json!(s.frames_complete));
            add("frames_recovered", json!(s.frames_recovered));
            add("frames_displayed", json!(s.frames_displayed));
            add("frames_given_up", json!(s.frames_given_up));
        }
    }
    let summary = Value::Object(summary);
    if let Some(dir) = &opts.log_dir {
        let mut out = AtomicWriter::create(&dir.join(format!("{}.json", opts.role.name())))?;
        serde_json::to_writer_pretty(&mut out, &summary).map_err(io::Error::other)?;
        writeln!(out)?;
        out.finish()?;
    }
    Ok(summary)
}

// --- the command line ----------------------------------------------------------------------------

/// What both ends take: which flow of which scenario, its controller, how long, where to log,
/// and when the flow's time zero is.
#[derive(Args)]
pub struct FlowArgs {
    /// The scenario whose flow this end runs: the sender takes its controller, encoder,
    /// packetizer, recovery, seeds, start, pauses and stop, the receiver its feedback policy and
    /// recovery (its links are not used: `rtcc emu --scenario` emulates them).
    #[arg(long, value_name = "FILE")]
    scenario: PathBuf,
    /// Which of the scenario's flows, from 0.
    #[arg(long, default_value_t = 0)]
    flow: usize,
    /// Replace the flow's controller: NAME or NAME:KEY=VALUE[,KEY=VALUE...], e.g.
    /// "fixed:rate=2Mbps". Give both ends the same: the receiver's feedback policy follows the
    /// controller.
    #[arg(long, value_name = "SPEC")]
    controller: Option<String>,
    /// How long to run, e.g. "30s" (default: the sender until the flow's stop time, the
    /// receiver the scenario's duration).
    #[arg(long, value_name = "DURATION")]
    duration: Option<String>,
    /// Write this end's logs here: the sender's packets.csv, frames.csv, state.csv and
    /// send.json, the receiver's arrivals.csv, frames.csv and recv.json.
    #[arg(long, value_name = "DIR")]
    log_dir: Option<PathBuf>,
    /// Time zero of the flow's timeline, as a CLOCK_MONOTONIC reading in nanoseconds (wait for
    /// it if it is ahead). Inside `rtcc emu --start-delay`, give "$RTCC_EMU_CLOCK_ORIGIN_NS" so
    /// the scenario's times mean the same to the emulated links and to the flow.
    #[arg(long, value_name = "NS")]
    clock_origin_ns: Option<u64>,
    /// Print nothing unless something fails.
    #[arg(long, short)]
    quiet: bool,
    /// Encrypt and authenticate with SRTP and SRTCP (RFC 3711), keyed from this file: the base64
    /// of master key and salt (30 bytes for the default profile: `head -c 30 /dev/urandom |
    /// base64`). Default: the RTCC_SRTP_KEY environment variable, else plain RTP. Give both
    /// ends the same key.
    #[arg(long, value_name = "FILE")]
    srtp_key_file: Option<PathBuf>,
    /// The SRTP protection profile: AES_CM_128_HMAC_SHA1_80 (default) or AEAD_AES_128_GCM.
    #[arg(long, value_name = "NAME", default_value = "AES_CM_128_HMAC_SHA1_80")]
    srtp_profile: String,
    /// Capture what this end sends and receives, as on its host's wire, in this pcap file
    /// (IPv4; Wireshark: decode the flow's UDP port as RTP, which also dissects the RTCP sent on
    /// it).
    #[arg(long, value_name = "FILE")]
    pcap: Option<PathBuf>,
}

impl FlowArgs {
    /// The SRTP key, if one is given.
    fn srtp(&self) -> Result<Option<Keying>, String> {
        Keying::load(
            self.srtp_key_file.as_deref(),
            Profile::parse(&self.srtp_profile)?,
        )
    }
}

/// `rtcc-live send`: run a scenario flow's sender to a receiver.
#[derive(Args)]
#[command(
    after_help = "Start `rtcc-live recv` with the same scenario and flow first. Example:\n  rtcc-live recv --scenario s.toml --listen 0.0.0.0:5004 --log-dir logs/recv &\n  rtcc-live send --scenario s.toml --to 10.0.0.2:5004 --log-dir logs/send"
)]
pub struct SendArgs {
    #[command(flatten)]
    flow: FlowArgs,
    /// The receiver's address.
    #[arg(long, value_name = "HOST:PORT")]
    to: String,
    /// Local address to send from (default: any, a free port).
    #[arg(long, value_name = "ADDR:PORT")]
    bind: Option<String>,
}

/// `rtcc-live recv`: run a scenario flow's receiver.
#[derive(Args)]
pub struct RecvArgs {
    #[command(flatten)]
    flow: FlowArgs,
    /// Address to listen on.
    #[arg(long, value_name = "ADDR:PORT")]
    listen: String,
    /// Answer only this sender: a host (any port) or HOST:PORT. Without it the receiver answers
    /// the first datagram of its flow, from wherever it comes; plain RTP cannot tell a forged
    /// one.
    #[arg(long, value_name = "HOST[:PORT]")]
    peer: Option<String>,
}

/// The clock whose zero is `origin_ns` of CLOCK_MONOTONIC (now if none), once that instant has
/// come: an origin ahead (at most an hour) is waited for, so the flow's timeline starts at it; a
/// signal during the wait ends it. An origin already past is used as it is, with a warning: the
/// flow's start has passed and the encoder will catch up with the frames it missed.
fn clock_at(origin_ns: Option<u64>) -> Result<Clock, String> {
    let Some(origin) = origin_ns else {
        return Ok(Clock::new());
    };
    signals::install();
    let now = clock::monotonic_ns;
    if origin > now() + 3_600_000_000_000 {
        return Err(format!(
            "--clock-origin-ns {origin}: more than an hour ahead of CLOCK_MONOTONIC ({})",
            now()
        ));
    }
    let late = now().saturating_sub(origin);
    if late > 500_000_000 {
        eprintln!(
            "rtcc: warning: --clock-origin-ns passed {:.1} s ago; the flow starts late",
            late as f64 / 1e9
        );
    }
    while now() < origin {
        if let Some(sig) = signals::take() {
            return Err(format!("signal {sig} before the flow's start"));
        }
        let left = origin - now();
        std::thread::sleep(std::time::Duration::from_nanos(left.min(10_000_000)));
    }
    Ok(Clock::with_origin(origin))
}

fn resolve(text: &str, option: &str) -> Result<SocketAddr, String> {
    text.to_socket_addrs()
        .map_err(|e| format!("{option} {text:?}: {e} (expected HOST:PORT)"))?
        .next()
        .ok_or_else(|| format!("{option} {text:?}: resolves to no address"))
}

/// `--peer`: HOST:PORT, or a HOST alone (any port: port 0).
fn parse_peer(text: &str) -> Result<SocketAddr, String> {
    if let Ok(ip) = text.trim_matches(['[', ']']).parse::<std::net::IpAddr>() {
        return Ok(SocketAddr::new(ip, 0));
    }
    if let Ok(addr) = resolve(text, "--peer") {
        return Ok(addr);
    }
    resolve(&format!("{text}:0"), "--peer")
        .map_err(|_| format!("--peer {text:?}: not an address (expected HOST or HOST:PORT)"))
}

fn parse_duration(text: Option<&str>, default: Duration) -> Result<Duration, String> {
    text.map_or(Ok(default), |t| {
        Duration::parse(t).map_err(|e| format!("--duration: {e}"))
    })
}

fn bind(addr: SocketAddr, option: &str) -> Result<UdpSocket, String> {
    UdpSocket::bind(addr).map_err(|e| format!("{option} {addr}: cannot bind: {e}"))
}

fn describe(scenario: &Path, f: &FlowConfig) -> serde_json::Map<String, Value> {
    let mut m = serde_json::Map::new();
    m.insert("scenario".into(), json!(scenario.display().to_string()));
    m.insert("kind".into(), json!(f.kind.name()));
    m.insert("controller".into(), json!(f.controller_name()));
    m.insert(
        "params".into(),
        f.controller()
            .and_then(|c| serde_json::to_value(&c.params).ok())
            .unwrap_or(Value::Null),
    );
    m
}

/// What the command line prepared for one end.
struct Prepared {
    endpoint: Box<dyn Endpoint>,
    socket: UdpSocket,
    options: Options,
}

fn prepare_send(args: &SendArgs) -> Result<Prepared, String> {
    let a = &args.flow;
    let sc = Scenario::from_file(&a.scenario).map_err(|e| e.to_string())?;
    let srtp = a.srtp()?;
    let (f, [sender, _]) = live_flow(&sc, a.flow, a.controller.as_deref(), srtp.as_ref())?;
    let to = resolve(&args.to, "--to")?;
    let local = match &args.bind {
        Some(b) => resolve(b, "--bind")?,
        None if to.is_ipv4() => SocketAddr::from((Ipv4Addr::UNSPECIFIED, 0)),
        None => SocketAddr::from((Ipv6Addr::UNSPECIFIED, 0)),
    };
    let duration = parse_duration(a.duration.as_deref(), Duration(f.stop.0))?;
    let socket = bind(local, "--bind")?;
    Ok(Prepared {
        endpoint: sender,
        socket,
        options: Options {
            role: Role::Send,
            flow: a.flow as u32,
            peer: Some(to),
            expect_peer: None,
            srtp: a.srtp()?,
            duration,
            schedule: sender_schedule(&f),
            log_dir: a.log_dir.clone(),
            pcap: a.pcap.clone(),
            clock: clock_at(a.clock_origin_ns)?,
            handle: Arc::default(),
            describe: describe(&a.scenario, &f),
        },
    })
}

fn prepare_recv(args: &RecvArgs) -> Result<Prepared, String> {
    let a = &args.flow;
    let sc = Scenario::from_file(&a.scenario).map_err(|e| e.to_string())?;
    let srtp = a.srtp()?;
    let (f, [_, receiver]) = live_flow(&sc, a.flow, a.controller.as_deref(), srtp.as_ref())?;
    let listen = resolve(&args.listen, "--listen")?;
    let duration = parse_duration(a.duration.as_deref(), sc.duration)?;
    let socket = bind(listen, "--listen")?;
    let expect_peer = args.peer.as_deref().map(parse_peer).transpose()?;
    Ok(Prepared {
        endpoint: receiver,
        socket,
        options: Options {
            role: Role::Recv,
            flow: a.flow as u32,
            peer: None,
            expect_peer,
            srtp: a.srtp()?,
            duration,
            schedule: Vec::new(),
            log_dir: a.log_dir.clone(),
            pcap: a.pcap.clone(),
            clock: clock_at(a.clock_origin_ns)?,
            handle: Arc::default(),
            describe: describe(&a.scenario, &f),
        },
    })
}

/// Run a prepared end, printing a line before and after unless `quiet`.
fn run_prepared(p: Prepared, quiet: bool) -> Result<i32, String> {
    let role = p.options.role.name();
    let local = p.socket.local_addr().map_err(|e| e.to_string())?;
    if !quiet {
        let to = p.options.peer.map_or(String::new(), |p| format!(" to {p}"));
        eprintln!(
            "rtcc {role}: flow {} ({}) on {local}{to} for {:.1} s",
            p.options.flow,
            p.options
                .describe
                .get("controller")
                .and_then(Value::as_str)
                .unwrap_or("?"),
            p.options.duration.as_secs_f64()
        );
    }
    if p.options.srtp.is_none() && !quiet {
        eprintln!(
            "rtcc {role}: warning: plain RTP: anyone on the path can read this flow and forge its \
             packets; use --srtp-key-file (or RTCC_SRTP_KEY) outside `rtcc emu` and tests"
        );
    }
    signals::install();
    let s = run(p.endpoint, p.socket, p.options).map_err(|e| format!("{role}: {e}"))?;
    if !quiet {
        eprintln!("rtcc {role}: {}", summary_line(&s));
    }
    Ok(0)
}

fn summary_line(s: &Value) -> String {
    let f = |v: &Value| v.as_f64().unwrap_or(f64::NAN);
    let late = &s["lateness"];
    let lateness = format!(
        "lateness p50 {:.0} µs, p99 {:.0} µs, max {:.0} µs",
        f(&late["p50_us"]),
        f(&late["p99_us"]),
        f(&late["max_us"])
    );
    match s["role"].as_str() {
        Some("send") => format!(
            "{:.1} s; {} packets, {:.2} Mbit/s; {} datagrams in, {} malformed; {lateness}",
            f(&s["duration_s"]),
            s["packets"],
            f(&s["sent_mbps"]),
            s["datagrams_received"],
            s["malformed"],
        ),
        _ => format!(
            "{:.1} s; {} packets, {:.2} Mbit/s; {} frames complete, {} shown, {} given up; {} malformed",
            f(&s["duration_s"]),
            s["arrivals"],
            f(&s["arrival_mbps"]),
            s["frames_complete"],
            s["frames_displayed"],
            s["frames_given_up"],
            s["malformed"],
        ),
    }
}

/// `rtcc-live send`; returns the exit code (0 also when a signal ended the run: the logs are
/// complete).
pub fn send(a: SendArgs) -> Result<i32, String> {
    let quiet = a.flow.quiet;
    run_prepared(prepare_send(&a)?, quiet)
}

/// `rtcc-live recv`; returns the exit code, as [`send`].
pub fn recv(a: RecvArgs) -> Result<i32, String> {
    let quiet = a.flow.quiet;
    run_prepared(prepare_recv(&a)?, quiet)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct SendCli {
        #[command(flatten)]
        args: SendArgs,
    }

    #[derive(Parser)]
    struct RecvCli {
        #[command(flatten)]
        args: RecvArgs,
    }

    fn scenario_file() -> (tempdir::Dir, PathBuf) {
        let dir = tempdir::Dir::new("spec");
        let path = dir.0.join("s.toml");
        std::fs::write(
            &path,
            "duration = \"2s\"\n[path.forward]\ncapacity = \"10Mbps\"\n\n[[flows]]\ncontroller = \"fixed\"\nparams = { rate = \"1Mbps\" }\nstop = \"1s\"\n",
        )
        .unwrap();
        (dir, path)
    }

    fn send_error(extra: &[&str]) -> String {
        let (_dir, path) = scenario_file();
        let mut argv = vec!["send", "--scenario", path.to_str().unwrap()];
        argv.extend_from_slice(extra);
        let a = SendCli::try_parse_from(argv).unwrap().args;
        prepare_send(&a).err().expect("an error")
    }

    mod tempdir {
        /// A folder under the system's temporary folder, removed when dropped.
        pub struct Dir(pub std::path::PathBuf);
        impl Dir {
            pub fn new(tag: &str) -> Dir {
                use std::sync::atomic::{AtomicU32, Ordering};
                static N: AtomicU32 = AtomicU32::new(0);
                let n = N.fetch_add(1, Ordering::Relaxed);
                let p = std::env::temp_dir()
                    .join(format!("rtcc-transport-{tag}-{}-{n}", std::process::id()));
                std::fs::create_dir_all(&p).unwrap();
                Dir(p)
            }
        }
        impl Drop for Dir {
            fn drop(&mut self) {
                let _ = std::fs::remove_dir_all(&self.0);
            }
        }
    }

    #[test]
    fn controller_specs_read_like_the_python_fronts() {
        let (name, params) = parse_controller_spec(" gcc ").unwrap();
        assert_eq!(name, "gcc");
        assert!(params.is_empty());
        let (name, params) =
            parse_controller_spec("oracle:fraction=0.8, rate = 5Mbps,on=true,n=3").unwrap();
        assert_eq!(name, "oracle");
        assert_eq!(params["fraction"], toml::Value::Float(0.8));
        assert_eq!(params["rate"], toml::Value::String("5Mbps".into()));
        assert_eq!(params["on"], toml::Value::Boolean(true));
        assert_eq!(params["n"], toml::Value::Integer(3));
        for bad in [":rate=1Mbps", "fixed:", "fixed:rate", "fixed:rate=1,rate=2"] {
            assert!(parse_controller_spec(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn bad_command_lines_are_one_clear_line() {
        let e = send_error(&["--to", "127.0.0.1:9", "--controller", "nosuch"]);
        assert!(e.contains("nosuch") && e.contains("gcc"), "{e}");
        let e = send_error(&["--to", "127.0.0.1:9", "--controller", "fixed:rat=1Mbps"]);
        assert!(e.contains("rat") && e.contains("rate"), "{e}");
        let e = send_error(&["--to", "127.0.0.1:9", "--flow", "3"]);
        assert!(e.contains("--flow 3") && e.contains("1 flow"), "{e}");
        let e = send_error(&["--to", "nowhere"]);
        assert!(e.contains("--to \"nowhere\""), "{e}");
        let e = send_error(&["--to", "127.0.0.1:9", "--duration", "soon"]);
        assert!(e.contains("--duration"), "{e}");
        // A port below 1024 on an address this host does not have: refused either way.
        let e = send_error(&["--to", "127.0.0.1:9", "--bind", "192.0.2.1:1"]);
        assert!(e.contains("--bind 192.0.2.1:1: cannot bind"), "{e}");
        let a = SendCli::try_parse_from(["send", "--scenario", "/nonexistent.toml", "--to", "x:1"])
            .unwrap()
            .args;
        let e = prepare_send(&a).err().unwrap();
        assert!(e.contains("/nonexistent.toml"), "{e}");
        assert!(!e.contains('\n'), "one line: {e}");
    }

    #[test]
    fn a_scenario_of_several_hops_is_refused() {
        let dir = tempdir::Dir::new("hops");
        let path = dir.0.join("hops.toml");
        std::fs::write(
            &path,
            "duration = \"2s\"\n[[path.hops]]\nname = \"a\"\nforward = { capacity = \"1Mbps\" }\n\
             [[path.hops]]\nname = \"b\"\nforward = { capacity = \"1Mbps\" }\n\
             [[flows]]\ncontroller = \"fixed\"\nparams = { rate = \"500kbps\" }\n",
        )
        .unwrap();
        let a = SendCli::try_parse_from([
            "send",
            "--scenario",
            path.to_str().unwrap(),
            "--to",
            "127.0.0.1:9",
        ])
        .unwrap()
        .args;
        let e = prepare_send(&a).err().expect("an error");
        assert!(e.contains("one link pair") && e.contains("2 hops"), "{e}");
    }

    #[test]
    fn the_live_receiver_sends_the_rate_reports_the_scenario_asks_for() {
        use rtcc_core::wire::rtcp::{parse_compound, RtcpPacket};
        // Every RTRR the receiver of `feedback` sends by 300 ms with nothing arriving.
        let reports = |feedback: &str| {
            let text = format!(
                "duration = \"2s\"\n[path.forward]\ncapacity = \"10Mbps\"\n[[flows]]\n\
                 controller = \"fixed\"\nparams = {{ rate = \"1Mbps\" }}\n{feedback}\n"
            );
            let sc = Scenario::from_toml_str(&text, Path::new("."), "test", None).unwrap();
            let (_, [_, mut receiver]) = live_flow(&sc, 0, None, None).unwrap();
            let (mut windows, mut buf) = (Vec::new(), Vec::new());
            while let Some(t) = receiver
                .poll_timeout()
                .filter(|&t| t <= Time::from_millis(300))
            {
                receiver.handle_timeout(t);
                while receiver.poll_transmit(t, &mut buf).is_some() {
                    for p in parse_compound(&buf).unwrap() {
                        if let RtcpPacket::RateReport(r) = p {
                            windows.push((r.window_end.0 / 1_000_000, r.bytes));
                        }
                    }
                }
            }
            windows
        };
        assert_eq!(
            reports("feedback = { interval = \"50ms\", rate_reports = \"100ms\" }"),
            vec![(100, 0), (200, 0), (300, 0)]
        );
        assert_eq!(reports(""), vec![], "fixed does not ask for them");
    }

    #[test]
    fn a_receiver_takes_its_defaults_from_the_scenario() {
        let (_dir, path) = scenario_file();
        let a = RecvCli::try_parse_from([
            "recv",
            "--scenario",
            path.to_str().unwrap(),
            "--listen",
            "127.0.0.1:0",
        ])
        .unwrap()
        .args;
        let p = prepare_recv(&a).unwrap();
        assert_eq!(p.options.duration, Duration::from_millis(2000));
        assert_eq!(p.options.peer, None);
        let a = SendCli::try_parse_from([
            "send",
            "--scenario",
            path.to_str().unwrap(),
            "--to",
            "127.0.0.1:9",
            "--controller",
            "gcc",
        ])
        .unwrap()
        .args;
        let p = prepare_send(&a).unwrap();
        assert_eq!(
            p.options.duration,
            Duration::from_millis(1000),
            "the flow's stop"
        );
        assert_eq!(p.options.describe["controller"], "gcc");
        assert_eq!(
            p.options.schedule,
            vec![(Time::from_millis(1000), Switch::Close)]
        );
    }
}
