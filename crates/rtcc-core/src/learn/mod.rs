//! What a learned controller sees: the packets a receiver got, kept for a few seconds, and the
//! observation vectors built from them by name (`mmsys24`, `opennetlab`, `rtcc`).
//!
//! A learned bandwidth estimator in the MMSys 2024 challenge and in OpenNetLab's gym reads the
//! receiver's packets: arrival time, the sender's timestamp, size, sequence number and payload
//! type. rtcc's sender gets exactly these from its per-packet feedback (each report carries the
//! receiver's arrival time of every packet), so the same observation is built wherever the
//! controller runs — in the simulator, in the live transport or in a user's stack — from an
//! [`ArrivalHistory`] fed by [`ArrivalHistory::on_report`]. The `agent` controller
//! ([`crate::cc::agent`]) owns one.
//!
//! - [`mmsys24`]: the challenge's 150-value vector (15 features × 5 short and 5 long intervals).
//! - [`opennetlab`]: OpenNetLab gym's four values (receive rate, delay, loss, last action).
//! - [`rtcc_obs`]: rtcc's own compact default.

pub mod mmsys24;
pub mod opennetlab;
pub mod rtcc_obs;

use crate::packet::{FeedbackReport, PacketKind};
use crate::units::{Duration, Rate, Time};
use std::collections::VecDeque;

/// What a received packet carried, as the challenge classes payload types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PacketClass {
    /// Media, its retransmissions and FEC (the video stream's payload types).
    Video,
    Audio,
    /// Padding and bandwidth probes.
    Probe,
    /// Anything else (control).
    Other,
}

impl PacketClass {
    pub fn of(kind: PacketKind) -> PacketClass {
        match kind {
            PacketKind::Media | PacketKind::Retransmission | PacketKind::Fec => PacketClass::Video,
            PacketKind::Padding | PacketKind::Probe => PacketClass::Probe,
            PacketKind::Control => PacketClass::Other,
        }
    }

    /// From the code the Python API takes: a [`PacketKind`] code, or 6 for audio.
    pub fn from_code(code: u8) -> Result<PacketClass, String> {
        match code {
            6 => Ok(PacketClass::Audio),
            c => PacketKind::try_from(c).map(PacketClass::of),
        }
    }
}

/// One packet the receiver got.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Arrival {
    /// Receiver clock, milliseconds.
    pub arrival_ms: f64,
    /// Sender clock, milliseconds.
    pub send_ms: f64,
    pub size: u32,
    pub seq: u64,
    pub class: PacketClass,
    /// Sequence numbers skipped just before it ([`SeqGaps`]).
    pub lost_before: u64,
}

impl Arrival {
    /// One-way delay as the receiver measures it (negative when the clocks differ so).
    pub fn delay_ms(&self) -> f64 {
        self.arrival_ms - self.send_ms
    }
}

/// Losses as a receiver counts them: a packet's lost count is the gap between its sequence
/// number and the largest one received before it (0 for the first packet and for a packet that
/// arrives late, after a larger one). OpenNetLab's receiver takes the previous packet's number
/// instead of the largest, which counts the gap of a reordered packet twice.
#[derive(Debug, Clone, Copy, Default)]
pub struct SeqGaps {
    max: Option<u64>,
}

impl SeqGaps {
    /// Sequence numbers skipped just before `seq`, which has now been received.
    pub fn lost_before(&mut self, seq: u64) -> u64 {
        let lost = self
            .max
            .map_or(0, |max| seq.saturating_sub(max).saturating_sub(1));
        self.max = Some(self.max.map_or(seq, |m| m.max(seq)));
        lost
    }
}

/// The longest interval any observation reads (the challenge's fifth long interval ends 3 s
/// back); packets older than this before the newest arrival are forgotten.
pub const HISTORY: Duration = Duration(3_000_000_000);

/// The packets received in the last [`HISTORY`], in arrival order, and what is remembered of
/// the older ones (their smallest delay, the largest sequence number).
#[derive(Debug, Clone, Default)]
pub struct ArrivalHistory {
    packets: VecDeque<Arrival>,
    /// Smallest delay among forgotten packets.
    forgotten_min_delay_ms: Option<f64>,
    /// Smallest delay ever.
    min_delay_ms: Option<f64>,
    gaps: SeqGaps,
    /// The first packet's delay (OpenNetLab measures delays from it).
    first_delay_ms: Option<f64>,
}

impl ArrivalHistory {
    /// A packet arrived (packets are expected in arrival order; one that arrived earlier than
    /// the newest is put in its place).
    pub fn push(&mut self, arrival_ms: f64, send_ms: f64, size: u32, seq: u64, class: PacketClass) {
        let lost_before = self.gaps.lost_before(seq);
        let a = Arrival {
            arrival_ms,
            send_ms,
            size,
            seq,
            class,
            lost_before,
        };
        let d = a.delay_ms();
        self.min_delay_ms = Some(self.min_delay_ms.map_or(d, |m| m.min(d)));
        self.first_delay_ms.get_or_insert(d);
        // After every packet that arrived at the same time or earlier (ties keep input order).
        let at = self
            .packets
            .iter()
            .rposition(|p| p.arrival_ms <= arrival_ms)
            .map_or(0, |i| i + 1);
        self.packets.insert(at, a);
        self.forget_before(self.newest_ms().unwrap_or(arrival_ms) - HISTORY.as_millis_f64());
    }

    /// The received packets of a feedback report, in arrival order.
    pub fn on_report(&mut self, report: &FeedbackReport) {
        let mut got: Vec<(Time, &crate::packet::SentPacket)> = report
            .packets
            .iter()
            .filter_map(|p| p.receive_time.map(|t| (t, &p.sent)))
            .collect();
        got.sort_by_key(|&(t, p)| (t, p.seq));
        for (t, p) in got {
            self.push(
                t.as_millis_f64(),
                p.send_time.as_millis_f64(),
                p.size,
                p.seq,
                PacketClass::of(p.kind),
            );
        }
    }

    fn forget_before(&mut self, cutoff_ms: f64) {
        while self
            .packets
            .front()
            .is_some_and(|p| p.arrival_ms <= cutoff_ms)
        {
            let p = self.packets.pop_front().expect("checked");
            let d = p.delay_ms();
            self.forgotten_min_delay_ms = Some(self.forgotten_min_delay_ms.map_or(d, |m| m.min(d)));
        }
    }

    /// Receiver clock of the newest arrival, if any packet arrived.
    pub fn newest_ms(&self) -> Option<f64> {
        self.packets.back().map(|p| p.arrival_ms)
    }

    /// The packets kept, oldest first.
    pub fn packets(&self) -> &VecDeque<Arrival> {
        &self.packets
    }

    /// Smallest delay among packets no longer kept.
    pub fn forgotten_min_delay_ms(&self) -> Option<f64> {
        self.forgotten_min_delay_ms
    }

    /// Smallest delay of any packet so far.
    pub fn min_delay_ms(&self) -> Option<f64> {
        self.min_delay_ms
    }

    /// The first packet's delay.
    pub fn first_delay_ms(&self) -> Option<f64> {
        self.first_delay_ms
    }

    /// Packets that arrived in `(from, to]` (receiver clock, ms), oldest first.
    pub fn between(&self, from_ms: f64, to_ms: f64) -> impl Iterator<Item = &Arrival> {
        let start = self.packets.partition_point(|p| p.arrival_ms <= from_ms);
        self.packets
            .range(start..)
            .take_while(move |p| p.arrival_ms <= to_ms)
    }
}

/// What the packets that arrived in an interval add up to ([`ArrivalHistory::window`]).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Window {
    pub packets: u64,
    pub bytes: u64,
    /// Sequence numbers skipped before them (their `lost_before`).
    pub lost: u64,
    /// Sum and largest of their delays minus the base.
    pub delay_sum_ms: f64,
    pub delay_max_ms: f64,
}

impl Window {
    /// Bytes · 8 over the interval's length `len_ms`.
    pub fn rate_bps(&self, len_ms: f64) -> f64 {
        self.bytes as f64 * 8.0 / (len_ms / 1000.0)
    }

    /// Mean delay minus the base; 0 without packets.
    pub fn mean_delay_ms(&self) -> f64 {
        if self.packets == 0 {
            0.0
        } else {
            self.delay_sum_ms / self.packets as f64
        }
    }

    /// `lost / (lost + received)`; 0 without packets.
    pub fn loss_ratio(&self) -> f64 {
        if self.packets == 0 {
            0.0
        } else {
            self.lost as f64 / (self.lost + self.packets) as f64
        }
    }
}

impl ArrivalHistory {
    /// The packets that arrived in `(to − len, to]`, their delays counted from `base_ms`.
    pub fn window(&self, to_ms: f64, len_ms: f64, base_ms: f64) -> Window {
        let mut w = Window::default();
        for p in self.between(to_ms - len_ms, to_ms) {
            let d = p.delay_ms() - base_ms;
            w.packets += 1;
            w.bytes += p.size as u64;
            w.lost += p.lost_before;
            w.delay_sum_ms += d;
            w.delay_max_ms = if w.packets == 1 {
                d
            } else {
                w.delay_max_ms.max(d)
            };
        }
        w
    }
}

/// The observations an agent can be given, by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ObservationKind {
    Mmsys24,
    OpenNetLab,
    Rtcc,
}

/// The names [`ObservationKind::parse`] accepts.
pub const OBSERVATIONS: [&str; 3] = ["mmsys24", "opennetlab", "rtcc"];

impl ObservationKind {
    pub fn parse(name: &str) -> Result<ObservationKind, String> {
        match name {
            "mmsys24" => Ok(ObservationKind::Mmsys24),
            "opennetlab" => Ok(ObservationKind::OpenNetLab),
            "rtcc" => Ok(ObservationKind::Rtcc),
            other => Err(format!(
                "unknown observation {other:?}{}; valid observations: {}",
                crate::suggest::did_you_mean(other, OBSERVATIONS.iter().copied()),
                OBSERVATIONS.join(", ")
            )),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            ObservationKind::Mmsys24 => "mmsys24",
            ObservationKind::OpenNetLab => "opennetlab",
            ObservationKind::Rtcc => "rtcc",
        }
    }

    /// Values in the vector.
    pub fn len(self) -> usize {
        match self {
            ObservationKind::Mmsys24 => mmsys24::LEN,
            ObservationKind::OpenNetLab => opennetlab::LEN,
            ObservationKind::Rtcc => rtcc_obs::LEN,
        }
    }

    pub fn is_empty(self) -> bool {
        false
    }

    /// Write the observation at `anchor_ms` (receiver clock) into `out` (`self.len()` values).
    /// `step` is the agent's step; `last_action` the target it chose last.
    pub fn observe(
        self,
        history: &ArrivalHistory,
        anchor_ms: f64,
        step: Duration,
        last_action: Rate,
        out: &mut [f32],
    ) {
        match self {
            ObservationKind::Mmsys24 => mmsys24::observe(history, anchor_ms, out),
            ObservationKind::OpenNetLab => {
                opennetlab::observe(history, anchor_ms, step, last_action, out)
            }
            ObservationKind::Rtcc => rtcc_obs::observe(history, anchor_ms, step, last_action, out),
        }
    }
}
