//! The sender's scoreboard (RFC 6675's, Linux's retransmit queue with its SACK tags): every
//! transmission in sequence (= send) order with its state, and the pieces of the byte stream
//! they carry.
//!
//! A transmission is in flight until it is delivered (the receiver reported it) or marked lost
//! (by RACK or an RTO); in-flight bytes are RFC 6675's `pipe` (Linux `tcp_packets_in_flight`:
//! lost packets no longer count, their retransmissions do). A piece of the stream (a segment's
//! payload) is delivered when any of its transmissions is; a second delivery of the same piece
//! is what a DSACK reports. The lowest undelivered piece is `SND.UNA`: the cumulative ACK
//! advances when it does. Delivered transmissions above it are the SACKed ones.

use super::DataSegment;
use crate::packet::SentPacket;
use crate::units::Time;
use std::collections::{BTreeSet, VecDeque};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    InFlight,
    Delivered,
    /// Marked lost; `reported`: the controller was told (RACK), not after an RTO.
    Lost {
        reported: bool,
    },
}

#[derive(Debug, Clone, Copy)]
pub struct Entry {
    pub pkt: SentPacket,
    /// The piece of the stream it carries; `None` for a previous connection's packet.
    pub piece: Option<u64>,
    pub state: State,
}

#[derive(Debug, Clone, Copy)]
pub struct Piece {
    pub segment: DataSegment,
    pub size: u32,
    /// The sequence number of its first transmission.
    pub first_seq: u64,
    /// When it was last sent (the RTO runs from the head's last transmission).
    pub last_sent: Time,
    pub delivered: bool,
    /// It was ever sent again (Linux `TCPCB_EVER_RETRANS`).
    pub retransmitted: bool,
}

/// What a delivery changed.
#[derive(Debug, Clone, Copy)]
pub struct Delivery {
    pub pkt: SentPacket,
    pub prior: State,
    pub piece: Option<u64>,
    /// Its piece was delivered before (a DSACK).
    pub duplicate: bool,
}

#[derive(Debug, Default)]
pub struct Scoreboard {
    entries: VecDeque<Entry>,
    first_seq: u64,
    next_seq: u64,
    in_flight_bytes: u64,
    /// Sequence numbers of the transmissions in flight.
    in_flight: BTreeSet<u64>,
    pieces: VecDeque<Piece>,
    first_piece: u64,
    /// Delivered and lost entries still held (above an undelivered piece).
    sacked: usize,
    lost: usize,
}

impl Scoreboard {
    pub fn next_seq(&self) -> u64 {
        self.next_seq
    }
    pub fn in_flight_bytes(&self) -> u64 {
        self.in_flight_bytes
    }
    pub fn packets_in_flight(&self) -> usize {
        self.in_flight.len()
    }
    /// Delivered transmissions above the cumulative ACK (Linux `sacked_out`).
    pub fn sacked(&self) -> usize {
        self.sacked
    }
    /// Some transmission above the cumulative ACK is SACKed or lost (Linux `tcp_left_out`: the
    /// Disorder state and beyond).
    pub fn disorder(&self) -> bool {
        self.sacked > 0 || self.lost > 0
    }

    /// A new piece of the stream, to be sent as sequence number `next_seq`.
    pub fn new_piece(&mut self, segment: DataSegment, size: u32, now: Time) -> u64 {
        let id = self.first_piece + self.pieces.len() as u64;
        self.pieces.push_back(Piece {
            segment,
            size,
            first_seq: self.next_seq,
            last_sent: now,
            delivered: false,
            retransmitted: false,
        });
        id
    }

    /// The id the next new piece gets (new data sent since a piece id: `next_piece() > id`).
    pub fn next_piece(&self) -> u64 {
        self.first_piece + self.pieces.len() as u64
    }

    pub fn piece(&self, id: u64) -> Option<&Piece> {
        self.pieces.get(id.checked_sub(self.first_piece)? as usize)
    }
    fn piece_mut(&mut self, id: u64) -> Option<&mut Piece> {
        self.pieces
            .get_mut(id.checked_sub(self.first_piece)? as usize)
    }
    /// Whether a piece is delivered (pieces below the cumulative ACK are).
    pub fn piece_delivered(&self, id: u64) -> bool {
        self.piece(id).is_none_or(|p| p.delivered)
    }

    /// The lowest undelivered piece (`SND.UNA`'s segment), if any.
    pub fn head(&self) -> Option<(u64, &Piece)> {
        self.pieces
            .iter()
            .enumerate()
            .find(|(_, p)| !p.delivered)
            .map(|(i, p)| (self.first_piece + i as u64, p))
    }

    /// Whether the cumulative ACK has passed sequence number `seq`: every piece first sent
    /// before it is delivered.
    pub fn una_passed(&self, seq: u64) -> bool {
        self.head().is_none_or(|(_, p)| p.first_seq >= seq)
    }

    /// Something sent is not yet known to be delivered.
    pub fn outstanding(&self) -> bool {
        self.in_flight_bytes > 0 || self.head().is_some()
    }

    /// Record a transmission; returns it with its sequence number and in-flight bytes.
    pub fn on_sent(&mut self, mut pkt: SentPacket, piece: Option<u64>) -> SentPacket {
        pkt.seq = self.next_seq;
        self.next_seq += 1;
        self.in_flight_bytes += pkt.size as u64;
        pkt.in_flight = self.in_flight_bytes;
        self.in_flight.insert(pkt.seq);
        if let Some(p) = piece.and_then(|id| self.piece_mut(id)) {
            p.last_sent = pkt.send_time;
            p.retransmitted |= pkt.seq != p.first_seq;
        }
        self.entries.push_back(Entry {
            pkt,
            piece,
            state: State::InFlight,
        });
        pkt
    }

    pub fn entry(&self, seq: u64) -> Option<&Entry> {
        self.entries.get(seq.checked_sub(self.first_seq)? as usize)
    }

    /// Transmission `seq` was reported received; `None` if it is unknown or already delivered.
    pub fn deliver(&mut self, seq: u64) -> Option<Delivery> {
        let i = seq.checked_sub(self.first_seq)? as usize;
        let e = self.entries.get_mut(i)?;
        let prior = e.state;
        match prior {
            State::Delivered => return None,
            State::InFlight => {
                self.in_flight_bytes -= e.pkt.size as u64;
                self.in_flight.remove(&seq);
            }
            State::Lost { .. } => self.lost -= 1,
        }
        e.state = State::Delivered;
        self.sacked += 1;
        let (pkt, piece) = (e.pkt, e.piece);
        let mut duplicate = false;
        if let Some(id) = piece {
            match self.piece_mut(id) {
                Some(p) if !p.delivered => p.delivered = true,
                _ => duplicate = true,
            }
        }
        Some(Delivery {
            pkt,
            prior,
            piece,
            duplicate,
        })
    }

    /// Mark transmission `seq` (in flight) lost.
    pub fn mark_lost(&mut self, seq: u64, reported: bool) -> Option<Entry> {
        let i = seq.checked_sub(self.first_seq)? as usize;
        let e = self.entries.get_mut(i)?;
        if e.state != State::InFlight {
            return None;
        }
        e.state = State::Lost { reported };
        self.in_flight_bytes -= e.pkt.size as u64;
        self.in_flight.remove(&seq);
        self.lost += 1;
        Some(*e)
    }

    /// Put transmission `seq`, marked lost, back in flight (an undo, Linux
    /// `tcp_undo_cwnd_reduction` clearing `TCPCB_LOST`).
    pub fn unmark_lost(&mut self, seq: u64) -> bool {
        let Some(i) = seq.checked_sub(self.first_seq) else {
            return false;
        };
        let Some(e) = self.entries.get_mut(i as usize) else {
            return false;
        };
        if !matches!(e.state, State::Lost { .. }) {
            return false;
        }
        e.state = State::InFlight;
        self.in_flight_bytes += e.pkt.size as u64;
        self.in_flight.insert(seq);
        self.lost -= 1;
        true
    }

    /// The transmissions marked lost whose piece is still undelivered and which are that
    /// piece's latest transmission (what an undo puts back in flight), with their pieces.
    pub fn lost_latest(&self) -> Vec<(u64, u64)> {
        self.entries
            .iter()
            .filter(|e| matches!(e.state, State::Lost { .. }))
            .filter_map(|e| {
                let id = e.piece?;
                let p = self.piece(id)?;
                (!p.delivered && p.last_sent == e.pkt.send_time).then_some((e.pkt.seq, id))
            })
            .collect()
    }

    /// Retransmissions in flight (Linux `retrans_out`).
    pub fn retransmissions_in_flight(&self) -> usize {
        self.in_flight
            .iter()
            .filter(|&&s| {
                self.entry(s)
                    .is_some_and(|e| e.pkt.kind == crate::packet::PacketKind::Retransmission)
            })
            .count()
    }

    /// The transmissions in flight, lowest first.
    pub fn in_flight_seqs(&self) -> impl Iterator<Item = u64> + '_ {
        self.in_flight.iter().copied()
    }

    /// The highest-numbered transmission in flight.
    pub fn last_in_flight(&self) -> Option<&Entry> {
        self.entry(*self.in_flight.last()?)
    }

    /// Forget what is settled: transmissions delivered or lost with their piece delivered, from
    /// the oldest on, and delivered pieces below the lowest undelivered one.
    pub fn pop_settled(&mut self) {
        while let Some(e) = self.entries.front() {
            let settled = match e.state {
                State::InFlight => false,
                State::Delivered => true,
                State::Lost { .. } => e.piece.is_none_or(|id| self.piece_delivered(id)),
            };
            if !settled {
                break;
            }
            match e.state {
                State::Delivered => self.sacked -= 1,
                _ => self.lost -= 1,
            }
            self.entries.pop_front();
            self.first_seq += 1;
        }
        while self.pieces.front().is_some_and(|p| p.delivered) {
            self.pieces.pop_front();
            self.first_piece += 1;
        }
    }

    /// A new connection: the pieces of the old one are forgotten (its transmissions stay, to be
    /// matched as they are reported, but carry nothing any more).
    pub fn forget_pieces(&mut self) {
        self.first_piece += self.pieces.len() as u64;
        self.pieces.clear();
        for e in &mut self.entries {
            e.piece = None;
        }
        self.pop_settled();
    }
}
