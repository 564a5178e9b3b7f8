//! The discrete-event simulator: flows over a path of links, each flow a pair of sans-IO
//! endpoints from `rtcc-core` ([`rtcc_core::endpoint`]). The path is one link pair (a
//! dumbbell) or several hops in a row (a parking lot, RFC 8867 §6.3), each hop a link pair with
//! its own capacity, queue, impairments and propagation delay:
//!
//! ```text
//!  A of flow i ──► [fwd link of hop 0] ─(delay 0)─► [fwd link of hop 1] ─(delay 1 + extra_i)─► B
//!  A of flow i ◄─(delay 0 + extra_i)─ [rev link of hop 0] ◄─(delay 1)─ [rev link of hop 1] ◄── B
//! ```
//!
//! A flow crosses a contiguous run of hops: its A→B datagrams cross their forward links in
//! order and its B→A datagrams their reverse links in reverse order (a flow with
//! `direction = "reverse"` sends its A→B datagrams over the reverse links, last hop first, and
//! its B→A datagrams over the forward ones). A datagram that leaves a hop's link (and that hop's
//! impairments) reaches the next hop's link after the hop's propagation delay, or its endpoint
//! after the last hop's delay plus the flow's `extra_delay`.
//!
//! The simulator is only a scheduler. It owns time, the links and their queues, the clock offset
//! of each B endpoint (B is driven with `now + clock_offset`), and the logs; the endpoints own
//! everything else (encoders, pacers, controllers, jitter buffers, feedback timers) and talk only
//! through the datagrams they write with the real wire formats. It moves a datagram's bytes
//! from one endpoint to the other, through the link of its direction, and keeps one pending
//! wake-up per endpoint: when an endpoint's next timeout changes, a new event is pushed and the
//! old one is recognised as stale when it fires (its time no longer matches).
//!
//! Events are kept in a binary min-heap ordered by (time, insertion sequence), so two events at the
//! same instant run in the order they were scheduled and a run is a pure function of the
//! scenario and the seed. All randomness comes from generators owned by the components (seeded
//! from the scenario seed and the flow index).

use crate::capture::Capture;
use crate::frames::{FrameWindow, SettledFrame};
use rtcc_core::cc::coupled::CouplingGroups;
use rtcc_core::cc::{self, CapacityView};
use rtcc_core::endpoint::{Endpoint, EndpointEvent};
use rtcc_core::metrics::{apply_frame_event, FrameRecord, PacketRecord, PacketStats};
use rtcc_core::net::impair::Impairments;
use rtcc_core::net::{Link, LinkOutput, NetPacket, Steps};
use rtcc_core::packet::{Ecn, PacketKind};
use rtcc_core::{Duration, Time};
pub use rtcc_scenario::outcome::{capacity_fn, FlowLogs, LinkCounters, StateLog};
pub use rtcc_scenario::seeds::derive_seed;
use rtcc_scenario::Scenario;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// A datagram in the network.
#[derive(Debug, Clone, Copy)]
struct SimPacket {
    flow: u32,
    size: u32,
    /// Index in the flow's packet log (A→B datagrams; wrapping, see [`PacketLog`]),
    /// `NOT_LOGGED` otherwise (B→A).
    log: u32,
    /// Slot of its bytes in the simulator's datagram store.
    slot: u32,
    /// The ECN codepoint of its IP header: what the sender set, CE once a queue marked it.
    ecn: Ecn,
    /// It was CE-marked already when it entered its current link (so that link did not mark it).
    ce_on_entry: bool,
    /// The hop whose link it is crossing or last crossed.
    hop: u16,
}

const NOT_LOGGED: u32 = u32::MAX;

impl SimPacket {
    /// The endpoint it goes to: only A→B datagrams are logged.
    fn to(&self) -> Side {
        if self.log == NOT_LOGGED {
            Side::A
        } else {
            Side::B
        }
    }
}

impl NetPacket for SimPacket {
    fn size(&self) -> u32 {
        self.size
    }
    fn flow(&self) -> u32 {
        self.flow
    }
    fn set_ce(&mut self) -> bool {
        self.ecn.set_ce()
    }
    fn ecn(&self) -> Ecn {
        self.ecn
    }
}

/// A flow's two ends: A sends the flow's data, B receives it (and sends feedback back).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    A = 0,
    B = 1,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dir {
    Forward,
    Reverse,
}

impl Dir {
    fn opposite(self) -> Dir {
        match self {
            Dir::Forward => Dir::Reverse,
            Dir::Reverse => Dir::Forward,
        }
    }
}

#[derive(Debug, Clone, Copy)]
enum Event {
    Wake(u32, Side),
    FlowStop(u32),
    /// Pause (`false`) or resume (`true`) a flow's sender.
    SetActive(u32, bool),
    /// A link (index `2 · hop + direction`) needs service.
    Link(u32),
    /// The packet at the head of a delay line (flow × direction × hop) arrives.
    Deliver(u32),
    Progress,
}

#[derive(Clone, Copy)]
struct Entry {
    time: Time,
    seq: u64,
    event: Event,
}

impl Entry {
    /// (time, seq) in one number: compared in one step, in the same order.
    fn key(&self) -> u128 {
        (self.time.0 as u128) << 64 | self.seq as u128
    }
}

/// A binary min-heap of events by (time, insertion sequence). Written out rather than
/// `std::collections::BinaryHeap` because the standard push writes the new entry and reads it
/// back to sift it up, a store-to-load stall that cost ~9 % of a single-flow run; here the
/// entry being placed stays in registers. The order is fully determined by the unique keys, so
/// the choice of heap does not change any result.
///
/// The event being run stays at the top until the first event it schedules takes its place
/// ([`EventQueue::run_top`]): one sift down instead of a pop's and a push's (almost every event
/// schedules another: a wake-up its next, a link its next departure, a delivery the next
/// packet of its line).
#[derive(Default)]
struct EventQueue {
    items: Vec<Entry>,
    /// The top has been run: the next push replaces it, or [`EventQueue::settle`] pops it.
    top_run: bool,
}

impl EventQueue {
    fn push(&mut self, e: Entry) {
        if std::mem::take(&mut self.top_run) {
            self.sift_down(e);
            return;
        }
        let mut i = self.items.len();
        self.items.push(e);
        while i > 0 {
            let parent = (i - 1) / 2;
            if self.items[parent].key() <= e.key() {
                break;
            }
            self.items[i] = self.items[parent];
            i = parent;
        }
        self.items[i] = e;
    }

    /// The earliest entry (after [`EventQueue::settle`]).
    fn peek(&self) -> Option<&Entry> {
        debug_assert!(!self.top_run, "peek before settle");
        self.items.first()
    }

    /// The top (there is one) is being run: it leaves the order, its slot kept for the next
    /// push (which sifts down from there whatever its key).
    fn run_top(&mut self) {
        self.top_run = true;
    }

    /// Pop the top that was run if nothing took its place.
    fn settle(&mut self) {
        if std::mem::take(&mut self.top_run) {
            self.pop();
        }
    }

    fn pop(&mut self) -> Option<Entry> {
        debug_assert!(!self.top_run, "pop before settle");
        let last = self.items.pop()?;
        let Some(&top) = self.items.first() else {
            return Some(last);
        };
        self.sift_down(last);
        Some(top)
    }

    /// Sift `e` down from the root into the hole the top leaves.
    fn sift_down(&mut self, e: Entry) {
        let n = self.items.len();
        let mut i = 0;
        loop {
            let mut child = 2 * i + 1;
            if child >= n {
                break;
            }
            if child + 1 < n && self.items[child + 1].key() < self.items[child].key() {
                child += 1;
            }
            if e.key() <= self.items[child].key() {
                break;
            }
            self.items[i] = self.items[child];
            i = child;
        }
        self.items[i] = e;
    }
}

/// A flow's A→B records, in send order. A run that keeps its log ([`Simulation::run`]) keeps
/// them all here and hands them over at the end (its caller counts them). A streaming run
/// counts a record as soon as it and every record before it are settled (received or dropped),
/// and hands every flow's settled prefix to its sink once the flows hold [`STREAM_CHUNK`]
/// settled records between them, so the run holds only a chunk plus the packets in flight
/// however many flows it has. Both count the same records in the same
/// order, so the summaries are identical.
///
/// Log indices are `u32` and wrap; `records` is indexed by the wrapping difference from
/// `first`, so only a flow with 4 × 10⁹ packets (about 200 GB of statistics) would reach the
/// `NOT_LOGGED` value.
#[derive(Default)]
struct PacketLog {
    records: Vec<PacketRecord>,
    /// Log index of `records[0]`.
    first: u32,
    /// Streaming: `records[..settled]` are settled and counted.
    settled: usize,
}

impl PacketLog {
    fn next_index(&self) -> u32 {
        self.first.wrapping_add(self.records.len() as u32)
    }

    fn get_mut(&mut self, log: u32) -> &mut PacketRecord {
        &mut self.records[log.wrapping_sub(self.first) as usize]
    }

    /// Streaming: count the newly settled records at the front; how many there were.
    fn settle(&mut self, stats: &mut PacketStats) -> usize {
        let before = self.settled;
        while let Some(r) = self.records.get(self.settled) {
            if !(r.dropped || r.recv.is_some()) {
                break;
            }
            stats.add(r);
            self.settled += 1;
        }
        self.settled - before
    }

    /// Streaming: hand the settled records to `sink` and forget them.
    fn flush(&mut self, sink: &mut dyn FnMut(&[PacketRecord])) {
        if self.settled > 0 {
            sink(&self.records[..self.settled]);
            self.records.drain(..self.settled);
            self.first = self.first.wrapping_add(self.settled as u32);
            self.settled = 0;
        }
    }
}

/// Where a streaming run hands its packet records: one flow's, in send order, per call.
pub type PacketSink<'a> = &'a mut dyn FnMut(&[PacketRecord]);

/// Where a streaming run hands its settled frames: each flow's in frame order, flows
/// interleaved ([`crate::frames`]).
pub type FrameSink<'a> = &'a mut dyn FnMut(&[SettledFrame]);

/// Where a streaming run hands its controller state samples, in time order.
pub type StateSink<'a> = &'a mut dyn FnMut(&StateLog);

/// Where a run hands its logs as it goes instead of keeping them; a log without a sink is kept
/// ([`SimOutput`]). Each sink is handed about [`STREAM_CHUNK`] rows at a time ([`FRAME_CHUNK`]
/// frames), and the rest at the end; the summary is the same with or without them.
#[derive(Default)]
pub struct Sinks<'a> {
    pub packets: Option<PacketSink<'a>>,
    pub frames: Option<FrameSink<'a>>,
    pub state: Option<StateSink<'a>>,
}

/// Settled records (all flows together) a streaming run holds before it hands them to its sink.
pub const STREAM_CHUNK: usize = 1 << 16;

/// Settled frames (all flows together) a streaming run holds before it hands them to its sink:
/// fewer than packets, so that an hour at 30 fps (108,000 frames) has its first chunk out after
/// minutes, not half an hour.
pub const FRAME_CHUNK: usize = 1 << 12;

struct FlowState {
    logs: FlowLogs,
    packet_log: PacketLog,
    /// A streaming run's frames not settled yet and the statistics of those that settled
    /// (`logs.frames` stays empty; `logs.frame_stats` is filled in at the end).
    frame_window: Option<FrameWindow>,
    ends: [Box<dyn Endpoint>; 2],
    /// The pending wake-up of each end.
    wake_at: [Option<Time>; 2],
    /// The links A's datagrams take.
    a_dir: Dir,
    /// The hops the flow crosses: `first..=last`.
    first_hop: u16,
    last_hop: u16,
    /// B's clock = true time + this.
    clock_offset: Duration,
    /// False once the flow stopped: A sends and hears nothing more.
    active: bool,
    /// When the controller state was last sampled.
    state_logged_at: Option<Time>,
}

/// Controller state is sampled at each feedback and timer event, but at most this often per flow
/// (a TCP flow gets thousands of ACKs per second).
pub const STATE_SAMPLE_INTERVAL: Duration = Duration(10_000_000);

/// The raw output of a run (metrics are computed from it in [`crate::run`]).
pub struct SimOutput {
    pub flows: Vec<FlowLogs>,
    pub state: StateLog,
    pub events: u64,
    /// Per link, index `2 · hop + direction` (0 forward, 1 reverse).
    pub links: Vec<LinkCounters>,
    /// The run ended early, at an [`interrupt`] request.
    pub interrupted: bool,
    /// The capture could not be written ([`Simulation::capture_to`]).
    pub capture_error: Option<String>,
}

/// Set by [`interrupt`]; read at every progress report.
static INTERRUPT: AtomicBool = AtomicBool::new(false);

/// Ask every simulation running in this process to end at its next progress report (once per
/// simulated second, a few milliseconds of wall time in most runs): what a progress callback
/// or a signal handler calls when the user asks to stop. Such a run's output is marked
/// `interrupted` (and [`crate::run::run`] returns an error instead of a summary). The request
/// stays until [`clear_interrupt`].
pub fn interrupt() {
    INTERRUPT.store(true, Ordering::Relaxed);
}

/// Withdraw an [`interrupt`] request; whether there was one.
pub fn clear_interrupt() -> bool {
    INTERRUPT.swap(false, Ordering::Relaxed)
}

pub struct Simulation {
    now: Time,
    end: Time,
    heap: EventQueue,
    next_seq: u64,
    flows: Vec<FlowState>,
    /// The links, index `2 · hop + direction` (0 forward, 1 reverse), and per link its pending
    /// event, its impairments (loss, jitter, aggregation, if configured), its propagation delay,
    /// what it did, and the span its utilisation is measured over.
    links: Vec<Link<SimPacket>>,
    link_event: Vec<Option<Time>>,
    impairments: Vec<Option<Impairments>>,
    link_delay: Vec<Duration>,
    /// A link's delay that changes in steps (an OpenNetLab trace's rtt), instead of
    /// `link_delay`: in force when a packet leaves the link's impairments, each flow's packets
    /// kept in order on the delay line.
    link_delay_steps: Vec<Option<Arc<Steps<Duration>>>>,
    counters: Vec<LinkCounters>,
    hop_span: Vec<(Time, Time)>,
    hop_count: usize,
    /// Packets on their way after a link, per flow, direction and hop (index
    /// `(2 · flow + dir) · hops + hop`), in arrival order, each with the sequence number its
    /// event was given when it left the link: only each line's head is in the heap (so the heap
    /// stays small), and events run in the same order as if every packet's were.
    delay_lines: Vec<VecDeque<(Time, u64, SimPacket)>>,
    /// Bytes of the datagrams in the network, by slot, and the free slots: an endpoint writes
    /// a datagram straight into a free slot, which it keeps until delivery.
    datagrams: Vec<Vec<u8>>,
    free_slots: Vec<u32>,
    link_out: LinkOutput<SimPacket>,
    state: StateLog,
    state_buf: Vec<(&'static str, f64)>,
    events: u64,
    /// Packet records go to a sink in chunks ([`Simulation::run_streaming`]); the settled
    /// records not handed over yet.
    streaming: bool,
    settled_unflushed: usize,
    /// Settled frames not handed to the frame sink yet (a run that streams its frames).
    settled_frames: Vec<SettledFrame>,
    /// Every datagram sent, as it is sent ([`Simulation::capture_to`]).
    capture: Option<Box<dyn Capture>>,
}

impl Simulation {
    /// Build the simulation. Fails only if a controller cannot be created (the scenario was
    /// validated, so this is a programming error or a non-validated scenario).
    pub fn new(sc: &Scenario) -> Result<Simulation, String> {
        Self::with_registry(sc, cc::registry())
    }

    /// [`Simulation::new`] with the controllers of `registry`.
    pub fn with_registry(sc: &Scenario, registry: &cc::Registry) -> Result<Simulation, String> {
        // One set of flow groups per run: its coupled flows share them, other runs do not.
        let coupling = CouplingGroups::default();
        let mut flows = Vec::new();
        for (i, f) in sc.flows.iter().enumerate() {
            let capacity: Arc<dyn CapacityView> = Arc::new(sc.controller_capacity(f));
            flows.push(FlowState {
                ends: sc.flow_endpoints(i, f, &capacity, registry, Some(&coupling), None)?,
                logs: FlowLogs {
                    config: f.clone(),
                    packets: Vec::new(),
                    stats: sc.packet_stats(f),
                    frames: Vec::new(),
                    frame_stats: None,
                    segments: Vec::new(),
                    downloads: Vec::new(),
                    feedback_packets: 0,
                    feedback_bytes: 0,
                    malformed: 0,
                    ce_marked: 0,
                },
                packet_log: PacketLog::default(),
                frame_window: None,
                wake_at: [None, None],
                a_dir: if f.reverse {
                    Dir::Reverse
                } else {
                    Dir::Forward
                },
                first_hop: f.hops.start as u16,
                last_hop: (f.hops.end - 1) as u16,
                clock_offset: f.clock_offset,
                active: true,
                state_logged_at: None,
            });
        }
        // Seeds: link `d = 2 · hop + direction` gets streams (2 << 32) | d (queue) and
        // (1 << 32) | d (impairments), so the one link pair of a dumbbell keeps the seeds it
        // always had (0 forward, 1 reverse).
        let mut links = Vec::with_capacity(2 * sc.hops.len());
        let mut impairments = Vec::with_capacity(2 * sc.hops.len());
        let mut link_delay = Vec::with_capacity(2 * sc.hops.len());
        let mut link_delay_steps = Vec::with_capacity(2 * sc.hops.len());
        for (h, hop) in sc.hops.iter().enumerate() {
            for (dir, l) in [(0, &hop.forward), (1, &hop.reverse)] {
                let d = (2 * h + dir) as u64;
                let queue = l
                    .queue
                    .build::<SimPacket>(l.nominal_rate, derive_seed(sc.seed, (2 << 32) | d))?;
                let mut link = Link::new(l.capacity.clone(), queue);
                if let Some(n) = l.netem {
                    link = link.with_netem(n);
                }
                links.push(link);
                let seed = derive_seed(sc.seed, (1 << 32) | d);
                impairments.push(
                    (!l.impairments.is_none())
                        .then(|| Impairments::new(l.impairments.clone(), seed)),
                );
                link_delay.push(l.delay);
                link_delay_steps.push(l.delay_steps.clone());
            }
        }
        // A hop's utilisation counts while the flows that cross it are active.
        let hop_span = (0..sc.hops.len())
            .map(|h| sc.hop_span(h).unwrap_or((Time::ZERO, Time::ZERO)))
            .collect();
        let mut sim = Simulation {
            now: Time::ZERO,
            end: Time(sc.duration.0),
            heap: EventQueue::default(),
            next_seq: 0,
            flows,
            link_event: vec![None; links.len()],
            counters: vec![LinkCounters::default(); links.len()],
            links,
            impairments,
            link_delay,
            link_delay_steps,
            hop_span,
            hop_count: sc.hops.len(),
            delay_lines: vec![VecDeque::new(); 2 * sc.flows.len() * sc.hops.len()],
            datagrams: Vec::new(),
            free_slots: Vec::new(),
            link_out: LinkOutput::default(),
            state: StateLog::default(),
            state_buf: Vec::new(),
            events: 0,
            streaming: false,
            settled_unflushed: 0,
            settled_frames: Vec::new(),
            capture: None,
        };
        for i in 0..sim.flows.len() {
            let cfg = &sim.flows[i].logs.config;
            let (start, stop, is_video) = (cfg.start, cfg.stop, cfg.video().is_some());
            let pauses: Vec<(Time, Time)> =
                cfg.active.windows(2).map(|w| (w[0].1, w[1].0)).collect();
            sim.push(stop, Event::FlowStop(i as u32));
            for (off, on) in pauses {
                sim.push(off, Event::SetActive(i as u32, false));
                sim.push(on, Event::SetActive(i as u32, true));
            }
            if is_video {
                sim.log_state(i, start);
            }
            sim.reschedule(i, Side::A);
            sim.reschedule(i, Side::B);
        }
        Ok(sim)
    }

    /// Hand every datagram the endpoints send to `capture` (`rtcc run --pcap`).
    pub fn capture_to(&mut self, capture: Box<dyn Capture>) {
        self.capture = Some(capture);
    }

    fn push(&mut self, time: Time, event: Event) {
        self.push_with_seq(time, self.next_seq, event);
        self.next_seq += 1;
    }

    fn push_with_seq(&mut self, time: Time, seq: u64, event: Event) {
        self.heap.push(Entry { time, seq, event });
    }

    /// Run to the end, keeping every packet record (`FlowLogs::packets`). `progress(fraction)`
    /// is called once per simulated second.
    pub fn run(self, progress: &mut dyn FnMut(f64)) -> SimOutput {
        self.run_with_sinks(progress, Sinks::default())
    }

    /// Run to the end, handing each flow's packet records to `sink` in chunks (about
    /// [`STREAM_CHUNK`] records of all flows at a time, and the rest at the end) instead of
    /// keeping them: a chunk holds one flow's records in send order, and chunks of different
    /// flows interleave. The summary is
    /// the same as [`Simulation::run`]'s.
    pub fn run_streaming(self, progress: &mut dyn FnMut(f64), sink: PacketSink) -> SimOutput {
        let sinks = Sinks {
            packets: Some(sink),
            ..Sinks::default()
        };
        self.run_with_sinks(progress, sinks)
    }

    /// Run to the end, handing each log that has a sink to it as the run goes (see [`Sinks`],
    /// [`Simulation::run_streaming`] for packets, [`crate::frames`] for frames) and keeping the
    /// others. With every sink given, the run holds the packets in flight, the frames not
    /// settled and one chunk of each log, however long it is. The summary is the same as
    /// [`Simulation::run`]'s.
    pub fn run_with_sinks(mut self, progress: &mut dyn FnMut(f64), mut sinks: Sinks) -> SimOutput {
        self.streaming = sinks.packets.is_some();
        if sinks.frames.is_some() {
            for f in &mut self.flows {
                f.frame_window = Some(FrameWindow::default());
            }
        }
        self.push(Time::from_millis(1000), Event::Progress);
        let interrupted = self.process(None, progress, &mut sinks);
        self.finish(interrupted, progress, sinks)
    }

    /// Run every event before `until` (an environment's step) and stop, so that the caller can
    /// look at the flows and act before the events at `until` run; an `until` at or past the
    /// run's end runs every event up to and including the end, as [`Simulation::run`] does. The
    /// packet records are kept. Whether the run has reached its end.
    pub fn advance(&mut self, until: Time) -> bool {
        if until >= self.end {
            self.process(None, &mut |_| {}, &mut Sinks::default());
            return true;
        }
        self.process(Some(until), &mut |_| {}, &mut Sinks::default());
        false
    }

    /// The scenario's end.
    pub fn end(&self) -> Time {
        self.end
    }

    /// Flow `i`'s A→B packet records so far, in send order (a run that keeps its log).
    pub fn packet_records(&self, i: usize) -> &[PacketRecord] {
        &self.flows[i].packet_log.records
    }

    /// Flow `i`'s frames so far, in frame order.
    pub fn frames(&self, i: usize) -> &[FrameRecord] {
        &self.flows[i].logs.frames
    }

    /// Run events in time order until the heap holds none before `until` (or the run's end);
    /// whether an [`interrupt`] request stopped it.
    fn process(
        &mut self,
        until: Option<Time>,
        progress: &mut dyn FnMut(f64),
        sinks: &mut Sinks,
    ) -> bool {
        loop {
            self.heap.settle();
            let Some(&Entry {
                time,
                event,
                seq: event_seq,
            }) = self.heap.peek()
            else {
                break;
            };
            if time > self.end || until.is_some_and(|u| time >= u) {
                break;
            }
            self.heap.run_top();
            self.now = time;
            self.events += 1;
            match event {
                Event::Wake(f, side) => self.on_wake(f as usize, side, time),
                Event::FlowStop(f) => self.on_flow_stop(f as usize),
                Event::SetActive(f, on) => {
                    let i = f as usize;
                    if self.flows[i].active {
                        self.flows[i].ends[0].set_active(time, on);
                        self.pump(i, Side::A);
                    }
                }
                Event::Link(link) => self.on_link_event(link as usize, time),
                Event::Deliver(line) => {
                    let line = &mut self.delay_lines[line as usize];
                    if line
                        .front()
                        .is_none_or(|&(t, q, _)| (t, q) != (time, event_seq))
                    {
                        continue; // stale: a reordered packet took the head (RBPDV)
                    }
                    let (_, _, p) = line.pop_front().expect("a delivery event has its packet");
                    if let Some(&(next, seq, _)) = line.front() {
                        self.push_with_seq(next, seq, event);
                    }
                    self.on_deliver(p);
                }
                Event::Progress => {
                    progress((time.as_secs_f64() / self.end.as_secs_f64()).min(1.0));
                    if INTERRUPT.load(Ordering::Relaxed) {
                        self.heap.settle();
                        return true;
                    }
                    self.push(time + Duration::from_millis(1000), Event::Progress);
                    self.stream_frames_and_state(time, sinks);
                }
            }
            if self.settled_unflushed >= STREAM_CHUNK {
                self.settled_unflushed = 0;
                if let Some(sink) = sinks.packets.as_mut() {
                    for f in &mut self.flows {
                        f.packet_log.flush(*sink);
                    }
                }
            }
        }
        false
    }

    /// Streaming (once per simulated second): settle what frames can be and hand full chunks of
    /// frames and state samples to their sinks.
    fn stream_frames_and_state(&mut self, now: Time, sinks: &mut Sinks) {
        if let Some(sink) = sinks.frames.as_mut() {
            for w in self
                .flows
                .iter_mut()
                .filter_map(|f| f.frame_window.as_mut())
            {
                w.settle(now, &mut self.settled_frames);
            }
            if self.settled_frames.len() >= FRAME_CHUNK {
                (*sink)(&self.settled_frames);
                self.settled_frames.clear();
            }
        }
        if let Some(sink) = sinks.state.as_mut() {
            if self.state.time.len() >= STREAM_CHUNK {
                (*sink)(&self.state);
                self.state = StateLog::default();
            }
        }
    }

    fn finish(
        mut self,
        interrupted: bool,
        progress: &mut dyn FnMut(f64),
        mut sinks: Sinks,
    ) -> SimOutput {
        // The run is over: whatever is still queued or in flight settles as it is, and so do
        // the frames still held.
        let end = self.end;
        for f in &mut self.flows {
            if let Some(w) = f.frame_window.take() {
                f.logs.frame_stats = Some(w.finish(end, &mut self.settled_frames));
            }
        }
        if let Some(sink) = sinks.frames.as_mut() {
            if !self.settled_frames.is_empty() {
                (*sink)(&self.settled_frames);
            }
        }
        if let Some(sink) = sinks.state.as_mut() {
            if !self.state.time.is_empty() {
                (*sink)(&self.state);
                self.state = StateLog::default();
            }
        }
        for f in &mut self.flows {
            let log = &mut f.packet_log;
            match sinks.packets.as_mut() {
                Some(sink) => {
                    f.logs.stats.add_all(&log.records[log.settled..]);
                    log.settled = log.records.len();
                    log.flush(*sink);
                }
                None => f.logs.packets = std::mem::take(&mut log.records),
            }
        }
        if !interrupted {
            progress(1.0);
        }
        let capture_error = self.capture.take().and_then(|c| c.finish().err());
        for (li, c) in self.counters.iter_mut().enumerate() {
            c.queued_at_end_packets = self.links[li].held_packets() as u64;
        }
        for (index, line) in self.delay_lines.iter().enumerate() {
            let (hop, dir) = (index % self.hop_count, (index / self.hop_count) % 2);
            self.counters[2 * hop + dir].propagating_at_end_packets += line.len() as u64;
        }
        SimOutput {
            flows: self
                .flows
                .into_iter()
                .map(|mut f| {
                    f.logs.malformed = f.ends.iter().map(|e| e.malformed()).sum();
                    f.logs
                })
                .collect(),
            state: self.state,
            events: self.events,
            links: self.counters,
            interrupted,
            capture_error,
        }
    }

    /// An endpoint's clock at true time `t`.
    fn local(&self, i: usize, side: Side, t: Time) -> Time {
        match side {
            Side::A => t,
            Side::B => t + self.flows[i].clock_offset,
        }
    }

    fn on_wake(&mut self, i: usize, side: Side, time: Time) {
        let fl = &mut self.flows[i];
        if fl.wake_at[side as usize] != Some(time) {
            return; // stale
        }
        fl.wake_at[side as usize] = None;
        if side == Side::A && !fl.active {
            return;
        }
        let local = self.local(i, side, time);
        let end = &mut self.flows[i].ends[side as usize];
        let timer_due = side == Side::A && end.controller_timeout().is_some_and(|t| t <= local);
        end.handle_timeout(local);
        if timer_due {
            self.log_state(i, time);
        }
        self.pump(i, side);
    }

    /// Send everything an endpoint releases now, take its events, schedule its next wake-up.
    fn pump(&mut self, i: usize, side: Side) {
        let now = self.now;
        let local = self.local(i, side, now);
        // A stopped flow's sender sends nothing more; its receiver may still answer.
        let can_send = side == Side::B || self.flows[i].active;
        while let Some(slot) = can_send.then(|| self.free_slot()) {
            let buf = &mut self.datagrams[slot as usize];
            let Some(t) = self.flows[i].ends[side as usize].poll_transmit(local, buf) else {
                self.free_slots.push(slot);
                break;
            };
            if let Some(c) = self.capture.as_mut() {
                c.datagram(now, i as u32, side == Side::A, buf, t.size, t.ecn);
            }
            let fl = &mut self.flows[i];
            let (dir, log) = match side {
                Side::A => {
                    let log = fl.packet_log.next_index();
                    if let (PacketKind::Media, Some(frame)) = (t.kind, t.frame) {
                        match &mut fl.frame_window {
                            Some(w) => w.on_media_sent(frame, now),
                            None => {
                                if let Some(f) = fl.logs.frames.get_mut(frame as usize) {
                                    f.on_media_sent(now);
                                }
                            }
                        }
                    }
                    fl.packet_log.records.push(PacketRecord {
                        flow: i as u32,
                        seq: t.seq.unwrap_or(log as u64),
                        kind: t.kind,
                        size: t.size,
                        frame: t.frame,
                        send: now,
                        enqueue: now,
                        depart: None,
                        recv: None,
                        dropped: false,
                        ecn: t.ecn,
                    });
                    (fl.a_dir, log)
                }
                Side::B => {
                    fl.logs.feedback_packets += 1;
                    fl.logs.feedback_bytes += t.size as u64;
                    (fl.a_dir.opposite(), NOT_LOGGED)
                }
            };
            let fl = &self.flows[i];
            let hop = match dir {
                Dir::Forward => fl.first_hop,
                Dir::Reverse => fl.last_hop,
            };
            let pkt = SimPacket {
                flow: i as u32,
                size: t.size,
                log,
                slot,
                ecn: t.ecn,
                ce_on_entry: false,
                hop,
            };
            self.enter_link(now, pkt, dir);
        }
        self.take_events(i, side);
        self.reschedule(i, side);
    }

    /// A slot for a datagram to be written into (its old bytes are the writer's to clear).
    fn free_slot(&mut self) -> u32 {
        self.free_slots.pop().unwrap_or_else(|| {
            self.datagrams.push(Vec::with_capacity(1500));
            self.datagrams.len() as u32 - 1
        })
    }

    /// Move an endpoint's events into the flow's logs.
    fn take_events(&mut self, i: usize, side: Side) {
        let offset = self.flows[i].clock_offset;
        let fl = &mut self.flows[i];
        while let Some(e) = fl.ends[side as usize].poll_event() {
            let to_true = |t: Time| Time(t.0.saturating_sub(offset.0));
            match e {
                EndpointEvent::FrameEncoded(f) => {
                    let record = FrameRecord::encoded(i as u32, &f);
                    match &mut fl.frame_window {
                        Some(w) => w.push(record),
                        None => {
                            debug_assert_eq!(f.frame as usize, fl.logs.frames.len());
                            fl.logs.frames.push(record);
                        }
                    }
                }
                EndpointEvent::Frame(fe) => match &mut fl.frame_window {
                    Some(w) => w.on_event(fe, to_true),
                    None => apply_frame_event(&mut fl.logs.frames, fe, to_true),
                },
                EndpointEvent::Segment(r) => fl.logs.segments.push(r.map_times(to_true)),
                // A's clock is true time.
                EndpointEvent::Download(d) => fl.logs.downloads.push(d),
            }
        }
    }

    fn reschedule(&mut self, i: usize, side: Side) {
        let now = self.now;
        let offset = self.flows[i].clock_offset;
        let fl = &mut self.flows[i];
        let next = if side == Side::A && !fl.active {
            None
        } else {
            fl.ends[side as usize].poll_timeout().map(|t| match side {
                Side::A => t.max(now),
                Side::B => Time(t.0.saturating_sub(offset.0)).max(now),
            })
        };
        if next != fl.wake_at[side as usize] {
            fl.wake_at[side as usize] = next;
            if let Some(t) = next {
                self.push(t, Event::Wake(i as u32, side));
            }
        }
    }

    fn on_flow_stop(&mut self, i: usize) {
        let now = self.now;
        let fl = &mut self.flows[i];
        fl.active = false;
        fl.ends[0].close(now);
        fl.wake_at[0] = None;
    }

    /// A packet reached the end of a hop: the next hop's link, or its endpoint.
    fn on_deliver(&mut self, mut p: SimPacket) {
        let now = self.now;
        let i = p.flow as usize;
        let dir = self.packet_dir(&p);
        if let Some(next) = self.next_hop(i, dir, p.hop) {
            p.hop = next;
            self.enter_link(now, p, dir);
            return;
        }
        if p.log != NOT_LOGGED {
            let record = self.flows[i].packet_log.get_mut(p.log);
            record.recv = Some(now);
            record.ecn = p.ecn;
            self.flows[i].logs.ce_marked += p.ecn.is_ce() as u64;
            self.retire(i);
        }
        let to = p.to();
        if to == Side::B || self.flows[i].active {
            let local = self.local(i, to, now);
            let bytes = &self.datagrams[p.slot as usize];
            self.flows[i].ends[to as usize].handle_datagram_with_ecn(local, bytes, p.size, p.ecn);
        }
        self.free_slots.push(p.slot);
        if to == Side::A && self.flows[i].active {
            self.log_state(i, now);
        }
        self.pump(i, to);
    }

    /// Streaming: move the flow's settled records at the front of its log into its statistics
    /// and the sink's next chunk.
    fn retire(&mut self, i: usize) {
        if !self.streaming {
            return;
        }
        let fl = &mut self.flows[i];
        self.settled_unflushed += fl.packet_log.settle(&mut fl.logs.stats);
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
        fl.ends[0].state(&mut self.state_buf);
        for &(name, v) in &self.state_buf {
            self.state.flow.push(i as u32);
            self.state.time.push(now);
            self.state.signal.push(name);
            self.state.value.push(v);
        }
    }

    // --- links -------------------------------------------------------------------------------

    /// The direction of the links a packet crosses: A's datagrams take the flow's `a_dir`.
    fn packet_dir(&self, p: &SimPacket) -> Dir {
        let a_dir = self.flows[p.flow as usize].a_dir;
        match p.to() {
            Side::B => a_dir,
            Side::A => a_dir.opposite(),
        }
    }

    /// The hop after `hop` on flow `i`'s way in direction `dir` (forward links are crossed in
    /// path order, reverse links in reverse order); `None` after its last.
    fn next_hop(&self, i: usize, dir: Dir, hop: u16) -> Option<u16> {
        let fl = &self.flows[i];
        match dir {
            Dir::Forward => (hop < fl.last_hop).then(|| hop + 1),
            Dir::Reverse => (hop > fl.first_hop).then(|| hop - 1),
        }
    }

    /// Offer a packet to its hop's link in direction `dir`.
    fn enter_link(&mut self, now: Time, mut p: SimPacket, dir: Dir) {
        let li = 2 * p.hop as usize + dir as usize;
        let c = &mut self.counters[li];
        c.arrived_packets += 1;
        c.arrived_bytes += p.size as u64;
        p.ce_on_entry = p.ecn.is_ce();
        self.links[li].enqueue(now, p, &mut self.link_out);
        self.drain_link_output(li);
    }

    fn on_link_event(&mut self, li: usize, time: Time) {
        if self.link_event[li] != Some(time) {
            return; // stale
        }
        self.link_event[li] = None;
        self.links[li].on_event(time, &mut self.link_out);
        self.drain_link_output(li);
    }

    /// Put a packet on its delay line (after link `li`), to arrive at `at`, or with the packet
    /// ahead of it on the line if that one arrives later (`in_order`: the link's delay changes,
    /// and a drop must not let a packet overtake its flow's earlier ones).
    fn schedule_delivery(&mut self, mut at: Time, p: SimPacket, li: usize, in_order: bool) {
        let (hop, dir) = (li / 2, li % 2);
        let index = (2 * p.flow as usize + dir) * self.hop_count + hop;
        let line = &mut self.delay_lines[index];
        if in_order {
            at = line.back().map_or(at, |&(last, ..)| at.max(last));
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        // Links send in order and a flow's delay is constant: only RFC 8868's RBPDV jitter
        // sends a packet ahead of one that left the link before it. It goes in its place (after
        // any due at the same instant), and if that is the head it gets its own event; the old
        // head's event then finds another packet at the head and is skipped as stale.
        let place = if line.back().is_none_or(|&(last, ..)| last <= at) {
            line.push_back((at, seq, p));
            line.len() - 1
        } else {
            let place = line.partition_point(|&(t, ..)| t <= at);
            line.insert(place, (at, seq, p));
            place
        };
        if place == 0 {
            self.push_with_seq(at, seq, Event::Deliver(index as u32));
        }
    }

    /// Link `li`'s propagation delay for a packet released at `r`, and whether it varies (then
    /// the delay line keeps each flow's packets in order).
    fn propagation(&self, li: usize, r: Time) -> (Duration, bool) {
        match &self.link_delay_steps[li] {
            None => (self.link_delay[li], false),
            Some(steps) => (steps.at(r), true),
        }
    }

    /// Route departures and drops of link `li`, and keep one pending event for the link.
    fn drain_link_output(&mut self, li: usize) {
        let dir = if li.is_multiple_of(2) {
            Dir::Forward
        } else {
            Dir::Reverse
        };
        let span = self.hop_span[li / 2];
        // By index: routing a packet needs the whole simulator, and the output stays in place.
        for k in 0..self.link_out.departed.len() {
            let (t, p) = self.link_out.departed[k];
            let c = &mut self.counters[li];
            c.departed_packets += 1;
            c.departed_bytes += p.size as u64;
            if span.0 <= t && t < span.1 {
                c.departed_bytes_in_span += p.size as u64;
            }
            if p.ecn.is_ce() && !p.ce_on_entry {
                c.ce_marked += 1;
            }
            // Loss, jitter and aggregation happen after the link (None: lost on the link).
            let released = match &mut self.impairments[li] {
                Some(imp) => imp.on_departure(t, p.flow, p.size),
                None => Some(t),
            };
            if released.is_none() {
                c.lost_packets += 1;
                c.lost_bytes += p.size as u64;
            }
            let last_hop = self.next_hop(p.flow as usize, dir, p.hop).is_none();
            let fl = &mut self.flows[p.flow as usize];
            let extra = if last_hop {
                fl.logs.config.extra_delay
            } else {
                Duration::ZERO
            };
            // The record's departure is its last hop's; a loss anywhere drops it.
            if p.log != NOT_LOGGED && (last_hop || released.is_none()) {
                let record = fl.packet_log.get_mut(p.log);
                if last_hop {
                    record.depart = Some(t);
                }
                record.dropped = released.is_none();
                if record.dropped {
                    self.retire(p.flow as usize);
                }
            }
            match released {
                Some(r) => {
                    let (delay, in_order) = self.propagation(li, r);
                    self.schedule_delivery(r + delay + extra, p, li, in_order)
                }
                None => self.free_slots.push(p.slot),
            }
        }
        for k in 0..self.link_out.dropped.len() {
            let p = self.link_out.dropped[k];
            let c = &mut self.counters[li];
            c.dropped_packets += 1;
            c.dropped_bytes += p.size as u64;
            if p.log != NOT_LOGGED {
                self.flows[p.flow as usize]
                    .packet_log
                    .get_mut(p.log)
                    .dropped = true;
                self.retire(p.flow as usize);
            }
            self.free_slots.push(p.slot);
        }
        self.link_out.departed.clear();
        self.link_out.dropped.clear();
        let next = self.links[li].next_event();
        if next != self.link_event[li] {
            self.link_event[li] = next;
            if let Some(t) = next {
                self.push(t, Event::Link(li as u32));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Whatever the interleaving of pushes, pops and runs of the top (the next push
        /// taking its place), events leave in (time, seq) order.
        #[test]
        fn the_event_queue_pops_in_time_then_insertion_order(
            ops in proptest::collection::vec((0u8..3, 0u64..50), 1..300)
        ) {
            let mut q = EventQueue::default();
            let mut model: Vec<u128> = Vec::new();
            for (seq, (op, t)) in ops.into_iter().enumerate() {
                model.sort();
                match op {
                    0 => {
                        let e = Entry { time: Time(t), seq: seq as u64, event: Event::Progress };
                        q.push(e);
                        model.push(e.key());
                    }
                    1 => {
                        q.settle();
                        let want = (!model.is_empty()).then(|| model.remove(0));
                        prop_assert_eq!(q.pop().map(|e| e.key()), want);
                    }
                    _ => {
                        q.settle();
                        let want = (!model.is_empty()).then(|| model.remove(0));
                        prop_assert_eq!(q.peek().map(|e| e.key()), want);
                        if want.is_some() {
                            q.run_top();
                        }
                    }
                }
            }
            q.settle();
            model.sort();
            for want in model {
                prop_assert_eq!(q.pop().map(|e| e.key()), Some(want));
            }
            prop_assert!(q.pop().is_none());
        }
    }
}
