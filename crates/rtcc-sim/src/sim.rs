//! The discrete-event simulator: a dumbbell of video flows over one bottleneck.
//!
//! ```text
//!  sender i ──► [forward queue ▸ forward link] ──(delay + extra_i)──► receiver i
//!  sender i ◄──(delay + extra_i)── [reverse queue ▸ reverse link] ◄── feedback, frame acks,
//!                                                                      keyframe requests
//! ```
//!
//! Events are kept in a binary heap ordered by (time, insertion sequence), so two events at the
//! same instant run in the order they were scheduled and a run is a pure function of the
//! scenario and the seed. All randomness comes from generators owned by the components (seeded
//! from the scenario seed and the flow index).
//!
//! Each component is a sans-IO object from `rtcc-core` (`VideoSender`, `Receiver`, `Link`); the
//! simulator only moves packets between them and keeps one pending wake-up per component: when a
//! component's next wake-up time changes, a new event is pushed and the old one is recognised as
//! stale when it fires (its time no longer matches).

use crate::scenario::{FlowConfig, FlowKind, Scenario};
use rtcc_core::cc::{self, CapacityView};
use rtcc_core::media::playout::FrameOutcome;
use rtcc_core::media::{ArrivedPacket, FrameSource, Packetizer, Playout, Receiver, VideoSender};
use rtcc_core::metrics::{FrameRecord, PacketRecord};
use rtcc_core::net::impair::Impairments;
use rtcc_core::net::{Capacity, Link, LinkOutput, NetPacket};
use rtcc_core::packet::SentPacket;
use rtcc_core::packet::{FrameAck, PacketKind, TransportFeedback};
use rtcc_core::tcp::BulkSender;
use rtcc_core::{Duration, Time};
use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::sync::Arc;

/// A packet in the network: forward media/padding, or a reverse-path message.
#[derive(Debug, Clone, Copy)]
struct SimPacket {
    flow: u32,
    size: u32,
    /// Forward: sequence number (= index into the flow's packet log). Reverse: message slot.
    id: u64,
    frame: u64,
    index_in_frame: u16,
    packets_in_frame: u16,
}

impl NetPacket for SimPacket {
    fn size(&self) -> u32 {
        self.size
    }
    fn flow(&self) -> u32 {
        self.flow
    }
}

const NO_FRAME: u64 = u64::MAX;

/// Bytes of a feedback message: IP/UDP/RTCP headers (40) plus 2 bytes per reported packet,
/// roughly the size of a transport-wide feedback message.
fn feedback_size(reported: usize) -> u32 {
    40 + 2 * reported as u32
}
/// Bytes of a frame acknowledgement message.
const FRAME_ACK_SIZE: u32 = 40;
/// Bytes of a keyframe request: an RTCP picture-loss indication (12 bytes, RFC 4585 §6.3.1)
/// with IP/UDP headers.
const KEYFRAME_REQUEST_SIZE: u32 = 40;

/// What travels on the reverse path.
#[derive(Debug, Default)]
struct ReverseMessage {
    feedback: Option<TransportFeedback>,
    ack: Option<FrameAck>,
    /// The receiver cannot decode and asks for a keyframe.
    keyframe_request: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dir {
    Forward,
    Reverse,
}

#[derive(Debug, Clone, Copy)]
enum Event {
    Capture(u32),
    SenderWake(u32),
    FeedbackTimer(u32),
    FlowStop(u32),
    CbrSend(u32),
    AckTimer(u32),
    Link(Dir),
    AtReceiver(SimPacket),
    AtSender(SimPacket),
    Progress,
}

struct Entry {
    time: Time,
    seq: u64,
    event: Event,
}
impl PartialEq for Entry {
    fn eq(&self, o: &Self) -> bool {
        (self.time, self.seq) == (o.time, o.seq)
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Entry {
    /// Reversed, so the std max-heap pops the earliest (time, seq) first.
    fn cmp(&self, o: &Self) -> Ordering {
        (o.time, o.seq).cmp(&(self.time, self.seq))
    }
}

/// Controller state samples in long format.
#[derive(Debug, Default, Clone)]
pub struct StateLog {
    pub flow: Vec<u32>,
    pub time: Vec<Time>,
    pub signal: Vec<&'static str>,
    pub value: Vec<f64>,
}

/// Everything one flow logged.
pub struct FlowLogs {
    pub config: FlowConfig,
    pub packets: Vec<PacketRecord>,
    pub frames: Vec<FrameRecord>,
}

/// The two ends of a flow.
enum Endpoint {
    Video {
        sender: Box<VideoSender>,
        source: Box<FrameSource>,
        receiver: Receiver,
        /// Decodability of the frames received, for keyframe requests.
        playout: Playout,
    },
    /// Constant-rate cross traffic: one packet every `interval`, no feedback.
    Cbr { interval: Duration, size: u32 },
    /// TCP-like bulk transfer; the receiver acknowledges each segment, or every second one
    /// (and after at most `DELAYED_ACK_TIMEOUT`) with delayed ACKs.
    Tcp {
        sender: Box<BulkSender>,
        receiver: Receiver,
        delayed_ack: bool,
        unacked: u32,
        delack_at: Option<Time>,
    },
}

/// Linux's minimum delayed-ACK timeout (`TCP_DELACK_MIN`, 40 ms); RFC 1122 allows up to 500 ms.
const DELAYED_ACK_TIMEOUT: Duration = Duration(40_000_000);

/// What the simulator needs from a sender that has a controller (video or TCP).
trait SenderEnd {
    fn poll_transmit(&mut self, now: Time) -> Option<SentPacket>;
    fn poll_timeout(&self) -> Option<Time>;
    fn controller_timeout(&self) -> Option<Time>;
    fn handle_timeout(&mut self, now: Time);
    fn on_feedback(&mut self, now: Time, fb: &TransportFeedback);
    fn on_frame_ack(&mut self, now: Time, ack: &FrameAck);
    fn state(&self, out: &mut Vec<(&'static str, f64)>);
    fn stop(&mut self);
    /// The receiver asked for a keyframe (video senders only).
    fn on_keyframe_request(&mut self) {}
}

impl SenderEnd for VideoSender {
    fn poll_transmit(&mut self, now: Time) -> Option<SentPacket> {
        VideoSender::poll_transmit(self, now).map(|o| o.packet)
    }
    fn poll_timeout(&self) -> Option<Time> {
        VideoSender::poll_timeout(self)
    }
    fn controller_timeout(&self) -> Option<Time> {
        // The retransmission timer changes the controller too.
        VideoSender::controller_timeout(self)
    }
    fn handle_timeout(&mut self, now: Time) {
        VideoSender::handle_timeout(self, now)
    }
    fn on_feedback(&mut self, now: Time, fb: &TransportFeedback) {
        VideoSender::on_feedback(self, now, fb)
    }
    fn on_frame_ack(&mut self, now: Time, ack: &FrameAck) {
        VideoSender::on_frame_ack(self, now, ack)
    }
    fn state(&self, out: &mut Vec<(&'static str, f64)>) {
        VideoSender::state(self, out)
    }
    fn stop(&mut self) {
        VideoSender::stop(self)
    }
    fn on_keyframe_request(&mut self) {
        VideoSender::request_keyframe(self)
    }
}

impl SenderEnd for BulkSender {
    fn poll_transmit(&mut self, now: Time) -> Option<SentPacket> {
        BulkSender::poll_transmit(self, now)
    }
    fn poll_timeout(&self) -> Option<Time> {
        BulkSender::poll_timeout(self)
    }
    fn controller_timeout(&self) -> Option<Time> {
        // An RTO changes the controller too: log the state when it fires.
        BulkSender::poll_timeout(self)
    }
    fn handle_timeout(&mut self, now: Time) {
        BulkSender::handle_timeout(self, now)
    }
    fn on_feedback(&mut self, now: Time, fb: &TransportFeedback) {
        BulkSender::on_feedback(self, now, fb)
    }
    fn on_frame_ack(&mut self, _now: Time, _ack: &FrameAck) {}
    fn state(&self, out: &mut Vec<(&'static str, f64)>) {
        BulkSender::state(self, out)
    }
    fn stop(&mut self) {}
}

struct FlowState {
    logs: FlowLogs,
    endpoint: Endpoint,
    active: bool,
    /// The pending SenderWake event's time.
    wake_at: Option<Time>,
    /// When the controller state was last sampled.
    state_logged_at: Option<Time>,
}

/// Controller state is sampled at each feedback and timer event, but at most this often per flow
/// (a TCP flow gets thousands of ACKs per second).
pub const STATE_SAMPLE_INTERVAL: Duration = Duration(10_000_000);

impl FlowState {
    fn sender(&mut self) -> Option<&mut dyn SenderEnd> {
        match &mut self.endpoint {
            Endpoint::Video { sender, .. } => Some(&mut **sender),
            Endpoint::Tcp { sender, .. } => Some(&mut **sender),
            Endpoint::Cbr { .. } => None,
        }
    }
}

/// The raw output of a run (metrics are computed from it in [`crate::run`]).
pub struct SimOutput {
    pub flows: Vec<FlowLogs>,
    pub state: StateLog,
    pub events: u64,
}

pub struct Simulation {
    now: Time,
    end: Time,
    heap: BinaryHeap<Entry>,
    next_seq: u64,
    flows: Vec<FlowState>,
    forward: Link<SimPacket>,
    reverse: Link<SimPacket>,
    link_event: [Option<Time>; 2],
    /// Loss, jitter and aggregation after each link (forward, reverse), if configured.
    impairments: [Option<Impairments>; 2],
    forward_delay: Duration,
    reverse_delay: Duration,
    messages: Vec<Option<ReverseMessage>>,
    free_messages: Vec<u64>,
    link_out: LinkOutput<SimPacket>,
    state: StateLog,
    state_buf: Vec<(&'static str, f64)>,
    events: u64,
}

/// SplitMix64: derive independent seeds for components from the scenario seed.
pub fn derive_seed(seed: u64, stream: u64) -> u64 {
    let mut z = seed ^ stream.wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Simulation {
    /// Build the simulation. Fails only if a controller cannot be created (the scenario was
    /// validated, so this is a programming error or a non-validated scenario).
    pub fn new(sc: &Scenario) -> Result<Simulation, String> {
        Self::with_registry(sc, cc::registry())
    }

    /// [`Simulation::new`] with the controllers of `registry`.
    pub fn with_registry(sc: &Scenario, registry: &cc::Registry) -> Result<Simulation, String> {
        let capacity: Arc<dyn CapacityView> = Arc::new(sc.forward.capacity.clone());
        let mut flows = Vec::new();
        for (i, f) in sc.flows.iter().enumerate() {
            let controller = || {
                registry
                    .create(&f.controller, &f.params, &f.context(Some(capacity.clone())))
                    .map_err(|e| format!("flows[{i}]: {e}"))
            };
            let endpoint = match f.kind {
                FlowKind::Video => {
                    let controller = controller()?;
                    // Seed stream 3 << 32 | i: the encoder's randomness is independent of the
                    // frame source's (stream i) and of the links' (1 << 32, 2 << 32).
                    let enc = f.encoder.build(derive_seed(sc.seed, (3 << 32) | i as u64));
                    let packetizer = Packetizer {
                        payload: f.payload,
                        overhead: f.overhead,
                    };
                    Endpoint::Video {
                        sender: Box::new(VideoSender::new(
                            controller,
                            enc,
                            packetizer,
                            f.fps,
                            f.padding_size.0 as u32,
                        )),
                        source: Box::new(
                            FrameSource::new(
                                f.start,
                                f.fps,
                                f.frame_jitter,
                                derive_seed(sc.seed, i as u64),
                            )
                            .with_model(f.frame_jitter_model),
                        ),
                        receiver: Receiver::new(f.clock_offset),
                        playout: Playout::default(),
                    }
                }
                FlowKind::Tcp {
                    app,
                    delayed_ack,
                    mss,
                } => {
                    let controller = controller()?;
                    Endpoint::Tcp {
                        sender: Box::new(BulkSender::new(controller, mss.0 as u32, app, f.start)),
                        receiver: Receiver::new(f.clock_offset),
                        delayed_ack,
                        unacked: 0,
                        delack_at: None,
                    }
                }
                FlowKind::Cbr { rate, packet_size } => Endpoint::Cbr {
                    interval: rate.transmit_time(packet_size.0),
                    size: packet_size.0 as u32,
                },
            };
            flows.push(FlowState {
                logs: FlowLogs {
                    config: f.clone(),
                    packets: Vec::new(),
                    frames: Vec::new(),
                },
                endpoint,
                active: false,
                wake_at: None,
                state_logged_at: None,
            });
        }
        let queue = |l: &crate::scenario::LinkConfig, d: u64| {
            l.queue
                .build::<SimPacket>(l.nominal_rate, derive_seed(sc.seed, (2 << 32) | d))
        };
        let mut sim = Simulation {
            now: Time::ZERO,
            end: Time(sc.duration.0),
            heap: BinaryHeap::new(),
            next_seq: 0,
            flows,
            forward: Link::new(sc.forward.capacity.clone(), queue(&sc.forward, 0)?),
            reverse: Link::new(sc.reverse.capacity.clone(), queue(&sc.reverse, 1)?),
            link_event: [None, None],
            impairments: [(&sc.forward, 0), (&sc.reverse, 1)].map(|(l, d)| {
                let seed = derive_seed(sc.seed, (1 << 32) | d);
                (!l.impairments.is_none()).then(|| Impairments::new(l.impairments, seed))
            }),
            forward_delay: sc.forward.delay,
            reverse_delay: sc.reverse.delay,
            messages: Vec::new(),
            free_messages: Vec::new(),
            link_out: LinkOutput::default(),
            state: StateLog::default(),
            state_buf: Vec::new(),
            events: 0,
        };
        for i in 0..sim.flows.len() {
            let cfg = &sim.flows[i].logs.config;
            let (start, stop, interval) = (cfg.start, cfg.stop, cfg.feedback.interval);
            sim.flows[i].active = true;
            sim.push(stop, Event::FlowStop(i as u32));
            match &mut sim.flows[i].endpoint {
                Endpoint::Video { source, .. } => {
                    let (_, first) = source.next_capture();
                    sim.push(first, Event::Capture(i as u32));
                    if let Some(iv) = interval {
                        sim.push(start + iv, Event::FeedbackTimer(i as u32));
                    }
                    sim.log_state(i, start);
                    sim.reschedule_sender(i);
                }
                Endpoint::Cbr { .. } => sim.push(start, Event::CbrSend(i as u32)),
                Endpoint::Tcp { .. } => {
                    sim.flows[i].wake_at = Some(start);
                    sim.push(start, Event::SenderWake(i as u32));
                }
            }
        }
        Ok(sim)
    }

    fn push(&mut self, time: Time, event: Event) {
        self.heap.push(Entry {
            time,
            seq: self.next_seq,
            event,
        });
        self.next_seq += 1;
    }

    /// Run to the end. `progress(fraction)` is called once per simulated second.
    pub fn run(mut self, progress: &mut dyn FnMut(f64)) -> SimOutput {
        self.push(Time::from_millis(1000), Event::Progress);
        while let Some(Entry { time, event, .. }) = self.heap.pop() {
            if time > self.end {
                break;
            }
            self.now = time;
            self.events += 1;
            match event {
                Event::Capture(f) => self.on_capture(f as usize),
                Event::SenderWake(f) => self.on_sender_wake(f as usize, time),
                Event::FeedbackTimer(f) => self.on_feedback_timer(f as usize),
                Event::FlowStop(f) => self.on_flow_stop(f as usize),
                Event::CbrSend(f) => self.on_cbr_send(f as usize),
                Event::AckTimer(f) => self.on_ack_timer(f as usize, time),
                Event::Link(dir) => self.on_link_event(dir, time),
                Event::AtReceiver(p) => self.on_receiver_packet(p),
                Event::AtSender(p) => self.on_sender_message(p),
                Event::Progress => {
                    progress((time.as_secs_f64() / self.end.as_secs_f64()).min(1.0));
                    self.push(time + Duration::from_millis(1000), Event::Progress);
                }
            }
        }
        progress(1.0);
        SimOutput {
            flows: self.flows.into_iter().map(|f| f.logs).collect(),
            state: self.state,
            events: self.events,
        }
    }

    // --- sender side -----------------------------------------------------------------------

    fn on_capture(&mut self, i: usize) {
        let now = self.now;
        let fl = &mut self.flows[i];
        let Endpoint::Video { sender, source, .. } = &mut fl.endpoint else {
            return;
        };
        if !fl.active {
            return;
        }
        let frame = fl.logs.frames.len() as u64;
        let info = sender.on_frame_captured(now, frame);
        let encoded = sender.last_encoded().copied();
        fl.logs.frames.push(FrameRecord {
            flow: i as u32,
            frame,
            capture: now,
            size: info.size,
            target_bps: info.target.bps(),
            packets: info.packets,
            first_send: None,
            last_send: None,
            complete: None,
            keyframe: info.keyframe,
            psnr_db: encoded.and_then(|e| e.psnr_db),
            resolution: encoded.and_then(|e| e.resolution),
        });
        let (_, next) = source.next_capture();
        if next < fl.logs.config.stop {
            self.push(next, Event::Capture(i as u32));
        }
        self.pump(i);
    }

    fn on_sender_wake(&mut self, i: usize, time: Time) {
        let fl = &mut self.flows[i];
        if fl.wake_at != Some(time) {
            return; // stale
        }
        fl.wake_at = None;
        let Some(sender) = fl.sender() else { return };
        let timer_due = sender.controller_timeout().is_some_and(|t| t <= time);
        sender.handle_timeout(time);
        if timer_due {
            self.log_state(i, time);
        }
        self.pump(i);
    }

    /// Send everything the video sender releases now, then schedule its next wake-up.
    fn pump(&mut self, i: usize) {
        let now = self.now;
        if self.flows[i].active {
            while let Some(p) = self.flows[i].sender().and_then(|s| s.poll_transmit(now)) {
                let fl = &mut self.flows[i];
                if let Some(f) = p.frame.and_then(|f| fl.logs.frames.get_mut(f as usize)) {
                    f.first_send.get_or_insert(now);
                    f.last_send = Some(now);
                }
                let pkt = SimPacket {
                    flow: i as u32,
                    size: p.size,
                    id: p.seq,
                    frame: p.frame.unwrap_or(NO_FRAME),
                    index_in_frame: p.index_in_frame,
                    packets_in_frame: p.packets_in_frame,
                };
                self.send_forward(pkt, p.kind);
            }
        }
        self.reschedule_sender(i);
    }

    /// Log a packet leaving its sender and offer it to the bottleneck.
    fn send_forward(&mut self, pkt: SimPacket, kind: PacketKind) {
        let now = self.now;
        let log = &mut self.flows[pkt.flow as usize].logs.packets;
        debug_assert_eq!(pkt.id as usize, log.len());
        log.push(PacketRecord {
            flow: pkt.flow,
            seq: pkt.id,
            kind,
            size: pkt.size,
            frame: (pkt.frame != NO_FRAME).then_some(pkt.frame),
            send: now,
            enqueue: now,
            depart: None,
            recv: None,
            dropped: false,
        });
        self.forward.enqueue(now, pkt, &mut self.link_out);
        self.drain_link_output(Dir::Forward);
    }

    fn on_cbr_send(&mut self, i: usize) {
        let fl = &self.flows[i];
        let Endpoint::Cbr { interval, size } = fl.endpoint else {
            return;
        };
        if !fl.active {
            return;
        }
        let pkt = SimPacket {
            flow: i as u32,
            size,
            id: fl.logs.packets.len() as u64,
            frame: NO_FRAME,
            index_in_frame: 0,
            packets_in_frame: 0,
        };
        let stop = fl.logs.config.stop;
        self.send_forward(pkt, PacketKind::Media);
        // Packet k leaves at start + k·interval (no drift from rounding accumulates beyond 1 ns
        // per packet, since the interval is already rounded to whole nanoseconds).
        let next = self.now + interval;
        if next < stop {
            self.push(next, Event::CbrSend(i as u32));
        }
    }

    fn reschedule_sender(&mut self, i: usize) {
        let now = self.now;
        let fl = &mut self.flows[i];
        let active = fl.active;
        let next = match fl.sender() {
            Some(sender) if active => sender.poll_timeout().map(|t| t.max(now)),
            _ => None,
        };
        if next != fl.wake_at {
            fl.wake_at = next;
            if let Some(t) = next {
                self.push(t, Event::SenderWake(i as u32));
            }
        }
    }

    fn on_flow_stop(&mut self, i: usize) {
        let fl = &mut self.flows[i];
        fl.active = false;
        if let Some(sender) = fl.sender() {
            sender.stop();
        }
        fl.wake_at = None;
    }

    fn on_sender_message(&mut self, p: SimPacket) {
        let i = p.flow as usize;
        let Some(msg) = self.take_message(p.id) else {
            return;
        };
        let now = self.now;
        if !self.flows[i].active {
            return;
        }
        let Some(sender) = self.flows[i].sender() else {
            return;
        };
        if msg.keyframe_request {
            // Acted on at the next capture; nothing to send or log now.
            sender.on_keyframe_request();
            if msg.feedback.is_none() && msg.ack.is_none() {
                return;
            }
        }
        if let Some(fb) = &msg.feedback {
            sender.on_feedback(now, fb);
        }
        if let Some(ack) = &msg.ack {
            sender.on_frame_ack(now, ack);
        }
        self.log_state(i, now);
        self.pump(i);
    }

    fn log_state(&mut self, i: usize, now: Time) {
        let fl = &mut self.flows[i];
        if fl
            .state_logged_at
            .is_some_and(|t| now < t + STATE_SAMPLE_INTERVAL)
        {
            return;
        }
        fl.state_logged_at = Some(now);
        self.state_buf.clear();
        let Some(sender) = self.flows[i].sender() else {
            return;
        };
        sender.state(&mut self.state_buf);
        for &(name, v) in &self.state_buf {
            self.state.flow.push(i as u32);
            self.state.time.push(now);
            self.state.signal.push(name);
            self.state.value.push(v);
        }
    }

    // --- links -------------------------------------------------------------------------------

    fn link(&mut self, dir: Dir) -> &mut Link<SimPacket> {
        match dir {
            Dir::Forward => &mut self.forward,
            Dir::Reverse => &mut self.reverse,
        }
    }

    fn on_link_event(&mut self, dir: Dir, time: Time) {
        if self.link_event[dir as usize] != Some(time) {
            return; // stale
        }
        self.link_event[dir as usize] = None;
        let mut out = std::mem::take(&mut self.link_out);
        self.link(dir).on_event(time, &mut out);
        self.link_out = out;
        self.drain_link_output(dir);
    }

    /// Route departures and drops, and keep one pending event for the link.
    fn drain_link_output(&mut self, dir: Dir) {
        let mut out = std::mem::take(&mut self.link_out);
        for &(t, p) in &out.departed {
            let extra = self.flows[p.flow as usize].logs.config.extra_delay;
            // Loss, jitter and aggregation happen after the link (None: lost on the link).
            let released = match &mut self.impairments[dir as usize] {
                Some(imp) => imp.on_departure(t),
                None => Some(t),
            };
            match (dir, released) {
                (Dir::Forward, released) => {
                    let record = &mut self.flows[p.flow as usize].logs.packets[p.id as usize];
                    record.depart = Some(t);
                    match released {
                        Some(r) => self.push(r + self.forward_delay + extra, Event::AtReceiver(p)),
                        None => record.dropped = true,
                    }
                }
                (Dir::Reverse, Some(r)) => {
                    self.push(r + self.reverse_delay + extra, Event::AtSender(p))
                }
                (Dir::Reverse, None) => {
                    self.take_message(p.id);
                }
            }
        }
        for p in &out.dropped {
            match dir {
                Dir::Forward => {
                    self.flows[p.flow as usize].logs.packets[p.id as usize].dropped = true
                }
                Dir::Reverse => {
                    self.take_message(p.id);
                }
            }
        }
        out.departed.clear();
        out.dropped.clear();
        self.link_out = out;
        let next = self.link(dir).next_event();
        if next != self.link_event[dir as usize] {
            self.link_event[dir as usize] = next;
            if let Some(t) = next {
                self.push(t, Event::Link(dir));
            }
        }
    }

    // --- receiver side -----------------------------------------------------------------------

    fn on_receiver_packet(&mut self, p: SimPacket) {
        let now = self.now;
        let i = p.flow as usize;
        let fl = &mut self.flows[i];
        fl.logs.packets[p.id as usize].recv = Some(now);
        let (receiver, playout) = match &mut fl.endpoint {
            Endpoint::Video {
                receiver, playout, ..
            } => (receiver, playout),
            Endpoint::Tcp { .. } => return self.on_tcp_segment(p),
            Endpoint::Cbr { .. } => return,
        };
        let frame = (p.frame != NO_FRAME).then_some(p.frame);
        let arrived = ArrivedPacket {
            seq: p.id,
            size: p.size,
            frame,
            index_in_frame: p.index_in_frame,
            packets_in_frame: p.packets_in_frame,
        };
        let ack = receiver.on_packet(now, &arrived);
        let mut keyframe_request = false;
        if let Some(a) = &ack {
            if let Some(f) = fl.logs.frames.get_mut(a.frame as usize) {
                f.complete = Some(now);
            }
            // The decoder: a P-frame predicts from the previous frame that had packets (the
            // receiver learns both from the codec's headers; here they come from the log).
            let frames = &fl.logs.frames;
            let keyframe = frames.get(a.frame as usize).is_some_and(|f| f.keyframe);
            let reference = frames[..(a.frame as usize).min(frames.len())]
                .iter()
                .rev()
                .find(|f| f.packets > 0)
                .map(|f| f.frame);
            let outcome = playout.on_frame_complete(now, a.frame, keyframe, reference);
            keyframe_request = outcome == FrameOutcome::Undecodable
                && fl.logs.config.keyframe_requests
                && playout.poll_keyframe_request(now);
        }
        let ack = ack.filter(|_| fl.logs.config.feedback.frame_acks);
        let last_of_frame = frame.is_some() && p.index_in_frame + 1 == p.packets_in_frame;
        let feedback = if fl.logs.config.feedback.per_frame && last_of_frame {
            receiver.build_feedback()
        } else {
            None
        };
        if ack.is_some() || feedback.is_some() {
            self.send_reverse(
                i,
                ReverseMessage {
                    feedback,
                    ack,
                    keyframe_request: false,
                },
            );
        }
        if keyframe_request {
            self.send_reverse(
                i,
                ReverseMessage {
                    keyframe_request: true,
                    ..ReverseMessage::default()
                },
            );
        }
    }

    /// A TCP receiver got a segment: acknowledge it now, or delay the ACK.
    fn on_tcp_segment(&mut self, p: SimPacket) {
        let now = self.now;
        let i = p.flow as usize;
        let Endpoint::Tcp {
            receiver,
            delayed_ack,
            unacked,
            delack_at,
            ..
        } = &mut self.flows[i].endpoint
        else {
            return;
        };
        let arrived = ArrivedPacket {
            seq: p.id,
            size: p.size,
            frame: None,
            index_in_frame: 0,
            packets_in_frame: 0,
        };
        receiver.on_packet(now, &arrived);
        *unacked += 1;
        // RFC 5681 §4.2: ACK at least every second full-size segment, at once when out of order.
        if !*delayed_ack || *unacked >= 2 || receiver.has_gap() {
            *unacked = 0;
            *delack_at = None;
            if let Some(fb) = receiver.build_feedback() {
                self.send_reverse(
                    i,
                    ReverseMessage {
                        feedback: Some(fb),
                        ack: None,
                        keyframe_request: false,
                    },
                );
            }
        } else if delack_at.is_none() {
            let at = now + DELAYED_ACK_TIMEOUT;
            *delack_at = Some(at);
            self.push(at, Event::AckTimer(i as u32));
        }
    }

    fn on_ack_timer(&mut self, i: usize, time: Time) {
        let Endpoint::Tcp {
            receiver,
            unacked,
            delack_at,
            ..
        } = &mut self.flows[i].endpoint
        else {
            return;
        };
        if *delack_at != Some(time) {
            return; // stale: the ACK went out earlier
        }
        *delack_at = None;
        *unacked = 0;
        if let Some(fb) = receiver.build_feedback() {
            self.send_reverse(
                i,
                ReverseMessage {
                    feedback: Some(fb),
                    ack: None,
                    keyframe_request: false,
                },
            );
        }
    }

    fn on_feedback_timer(&mut self, i: usize) {
        let now = self.now;
        let Endpoint::Video { receiver, .. } = &mut self.flows[i].endpoint else {
            return;
        };
        if let Some(fb) = receiver.build_feedback() {
            self.send_reverse(
                i,
                ReverseMessage {
                    feedback: Some(fb),
                    ack: None,
                    keyframe_request: false,
                },
            );
        }
        if let Some(iv) = self.flows[i].logs.config.feedback.interval {
            self.push(now + iv, Event::FeedbackTimer(i as u32));
        }
    }

    fn send_reverse(&mut self, i: usize, msg: ReverseMessage) {
        let size = msg
            .feedback
            .as_ref()
            .map_or(0, |f| feedback_size(f.receive_times.len()))
            + msg.ack.map_or(0, |_| FRAME_ACK_SIZE)
            + if msg.keyframe_request {
                KEYFRAME_REQUEST_SIZE
            } else {
                0
            };
        let slot = match self.free_messages.pop() {
            Some(s) => {
                self.messages[s as usize] = Some(msg);
                s
            }
            None => {
                self.messages.push(Some(msg));
                self.messages.len() as u64 - 1
            }
        };
        let pkt = SimPacket {
            flow: i as u32,
            size,
            id: slot,
            frame: NO_FRAME,
            index_in_frame: 0,
            packets_in_frame: 0,
        };
        let now = self.now;
        self.reverse.enqueue(now, pkt, &mut self.link_out);
        self.drain_link_output(Dir::Reverse);
    }

    fn take_message(&mut self, slot: u64) -> Option<ReverseMessage> {
        let m = self.messages.get_mut(slot as usize)?.take();
        if m.is_some() {
            self.free_messages.push(slot);
        }
        m
    }
}

/// Capacity of the forward link for metrics (unlimited links have no finite capacity).
pub fn capacity_fn(c: &Capacity) -> impl Fn(Time, Time) -> f64 + '_ {
    move |a, b| c.bytes_between(a, b)
}
