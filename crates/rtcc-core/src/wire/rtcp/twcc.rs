//! Transport-wide congestion control feedback (draft-holmer-rmcat-transport-wide-cc-extensions-01
//! §3.1; RTPFB, PT 205, FMT 15).
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! |V=2|P|  FMT=15 |    PT=205     |           length              |
//! |                     SSRC of packet sender                     |
//! |                      SSRC of media source                     |
//! |      base sequence number     |      packet status count      |
//! |                 reference time                | fb pkt. count |
//! |          packet chunk         |         packet chunk          |
//! :                              ...                              :
//! |         packet chunk          |  recv delta   |  recv delta   |
//! :                              ...                              :
//! |           recv delta          |  recv delta   | zero padding  |
//! ```
//!
//! The message reports `packet status count` consecutive transport-wide sequence numbers from
//! `base sequence number` (wrapping at 2^16). Each gets a 2-bit *status symbol*: 0 not received,
//! 1 received with a small delta, 2 received with a large (or negative) delta, 3 reserved.
//!
//! **Packet chunks** (16 bits each) carry the symbols, in one of three forms:
//!
//! - run length (`0 | S(2) | length(13)`): `length` times symbol `S`;
//! - 1-bit status vector (`1 | 0 | 14 × 1 bit`): 14 symbols, each 0 or 1;
//! - 2-bit status vector (`1 | 1 | 7 × 2 bits`): 7 symbols.
//!
//! The last chunk may describe more symbols than the count; the extra ones are ignored. The
//! encoder picks chunks greedily as libwebrtc does: it keeps adding symbols to the pending chunk
//! while they still fit *some* chunk form (any 7 symbols fit a 2-bit vector, 14 small-or-lost
//! ones a 1-bit vector, up to 8191 equal ones a run), and when the next one does not, emits a
//! run if all pending symbols are equal, a 1-bit vector if it holds 14, and otherwise a 2-bit
//! vector of the first 7 (keeping the rest pending).
//!
//! **Receive deltas** follow, one per received packet: a small delta is 1 byte unsigned, a large
//! one 2 bytes signed, both in units of [`DELTA_TICK`] (250 µs). The first is relative to the
//! **reference time**, 24 bits in units of [`REFERENCE_TICK`] (64 ms), each next one to the
//! previous received packet. The message is padded to 32 bits, with the P bit set and the last
//! byte counting the padding as libwebrtc writes it; the parser also accepts up to 3 zero bytes
//! without the P bit.
//!
//! **Quantisation** (as libwebrtc's `TransportFeedback`): the reference time is
//! floor(first received time / 64 ms); a running quantised time starts at reference × 64 ms, and
//! each received packet's delta is (t − running) / 250 µs rounded to nearest (halves away from
//! zero), after which running += delta × 250 µs. The error therefore never accumulates: every
//! decoded time is within 125 µs of the true one.
//!
//! **Wrap-around.** The draft calls the reference time signed; rtcc's receiver clocks start at 0,
//! so the parser reads it as an unsigned 24-bit count and the receive times it reports are
//! modulo 2^24 × 64 ms ≈ 12.4 days ([`REFERENCE_WRAP`]). The encoder likewise writes the
//! reference modulo 2^24 and takes deltas modulo that period (to the nearest, as libwebrtc
//! does), so a parsed message always re-encodes.

use super::{
    be16, be32, begin, finish, need, parse_as, RtcpPacket, WireError, FEEDBACK_SSRCS_LEN, FMT_TWCC,
    PT_RTPFB,
};
use crate::units::{Duration, Time};

/// Unit of the receive deltas: 250 µs.
pub const DELTA_TICK: Duration = Duration(250_000);
/// Unit of the reference time: 64 ms.
pub const REFERENCE_TICK: Duration = Duration(64_000_000);
/// Receive times on the wire repeat after 2^24 reference ticks (≈ 12.4 days).
pub const REFERENCE_WRAP: Duration = Duration(REFERENCE_TICK.0 << 24);
/// Most statuses one message can report (16-bit count).
pub const MAX_STATUSES: usize = 0xFFFF;
/// Bytes of the fixed part of the body: SSRCs, base, count, reference, feedback count.
const FIXED_LEN: usize = FEEDBACK_SSRCS_LEN + 8;
/// Longest run a run-length chunk holds (13 bits).
const RUN_LENGTH_MAX: usize = 0x1FFF;
/// Symbols in a 1-bit status vector chunk.
const ONE_BIT_CAPACITY: usize = 14;
/// Symbols in a 2-bit status vector chunk.
const TWO_BIT_CAPACITY: usize = 7;
/// Chunk type bit: set for status vectors, clear for run lengths.
const VECTOR_BIT: u16 = 0x8000;
/// Symbol size bit of a status vector chunk: set for 2-bit symbols.
const TWO_BIT_BIT: u16 = 0x4000;
/// Status symbols.
const NOT_RECEIVED: u8 = 0;
const SMALL_DELTA: u8 = 1;
const LARGE_DELTA: u8 = 2;
const RESERVED_SYMBOL: u8 = 3;

/// One transport-wide feedback message.
#[derive(Debug, Clone, PartialEq)]
pub struct TransportCcFeedback {
    pub sender_ssrc: u32,
    pub media_ssrc: u32,
    pub base_seq: u16,
    pub feedback_count: u8,
    /// Receive times (receiver clock) of base_seq, base_seq+1, ... (wrapping); None = not
    /// received. After a parse these are the quantised times the wire carries.
    pub receive_times: Vec<Option<Time>>,
}

/// Ticks from `running` (ns, quantised) to `t`: rounded to nearest, halves away from zero,
/// taking the difference modulo [`REFERENCE_WRAP`] to the nearest.
fn delta_ticks(running: i128, t: Time) -> i128 {
    let wrap = REFERENCE_WRAP.0 as i128;
    let mut d = t.0 as i128 - running;
    // The difference is taken to (−wrap/2, wrap/2]; the usual small one needs no 128-bit
    // remainder (this runs once per packet).
    if d <= -wrap / 2 || d > wrap / 2 {
        d = d.rem_euclid(wrap);
        if d > wrap / 2 {
            d -= wrap;
        }
    }
    let d = d as i64; // |d| ≤ wrap/2 ≈ 5.4e14 ns
    let tick = DELTA_TICK.0 as i64;
    // Division truncates toward zero, so adding half a tick away from zero rounds to nearest.
    i128::from(if d >= 0 {
        (d + tick / 2) / tick
    } else {
        (d - tick / 2) / tick
    })
}

/// The reference (in 64 ms ticks, unreduced) and the running start for a first received `t`.
fn reference_of(t: Time) -> (u64, i128) {
    let r = t.0 / REFERENCE_TICK.0;
    (r, r as i128 * REFERENCE_TICK.0 as i128)
}

/// Status symbol of a delta that fits 16 bits.
fn symbol_of(ticks: i16) -> u8 {
    if (0..=255).contains(&ticks) {
        SMALL_DELTA
    } else {
        LARGE_DELTA
    }
}

/// What the encoder writes: the 24-bit reference, every symbol, every received delta.
struct Plan {
    reference: u32,
    symbols: Vec<u8>,
    deltas: Vec<i16>,
    chunks: Vec<u16>,
}

impl Plan {
    fn delta_bytes(&self) -> usize {
        self.deltas
            .iter()
            .map(|&d| if symbol_of(d) == SMALL_DELTA { 1 } else { 2 })
            .sum()
    }

    /// Bytes the message takes, header and padding included.
    fn encoded_len(&self) -> usize {
        (4 + FIXED_LEN + 2 * self.chunks.len() + self.delta_bytes()).next_multiple_of(4)
    }
}

/// Builds packet chunks greedily from status symbols.
struct ChunkWriter {
    pending: [u8; ONE_BIT_CAPACITY],
    size: usize,
    all_same: bool,
    has_large: bool,
    chunks: Vec<u16>,
}

impl ChunkWriter {
    fn new() -> Self {
        ChunkWriter {
            pending: [0; ONE_BIT_CAPACITY],
            size: 0,
            all_same: true,
            has_large: false,
            chunks: Vec::new(),
        }
    }

    /// Whether `sym` can join the pending symbols in some chunk form.
    fn fits(&self, sym: u8) -> bool {
        self.size < TWO_BIT_CAPACITY
            || (self.size < ONE_BIT_CAPACITY && !self.has_large && sym != LARGE_DELTA)
            || (self.size < RUN_LENGTH_MAX && self.all_same && self.pending[0] == sym)
    }

    fn add(&mut self, sym: u8) {
        if !self.fits(sym) {
            self.emit();
        }
        if self.size < ONE_BIT_CAPACITY {
            self.pending[self.size] = sym;
        }
        self.all_same = self.size == 0 || (self.all_same && self.pending[0] == sym);
        self.has_large |= sym == LARGE_DELTA;
        self.size += 1;
    }

    fn run_length(&self) -> u16 {
        debug_assert!(self.size <= RUN_LENGTH_MAX);
        (u16::from(self.pending[0]) << 13) | self.size as u16
    }

    fn one_bit(&self) -> u16 {
        let mut c = VECTOR_BIT;
        for (i, &s) in self.pending[..self.size].iter().enumerate() {
            debug_assert!(s <= SMALL_DELTA);
            c |= u16::from(s) << (13 - i);
        }
        c
    }

    fn two_bit(&self, n: usize) -> u16 {
        let mut c = VECTOR_BIT | TWO_BIT_BIT;
        for (i, &s) in self.pending[..n].iter().enumerate() {
            c |= u16::from(s) << (12 - 2 * i);
        }
        c
    }

    /// Emit a chunk because the next symbol does not fit.
    fn emit(&mut self) {
        if self.all_same {
            self.chunks.push(self.run_length());
            self.size = 0;
        } else if self.size == ONE_BIT_CAPACITY {
            self.chunks.push(self.one_bit());
            self.size = 0;
        } else {
            // 7 <= size < 14, mixed, and a large delta is involved: 2-bit vector of the first
            // 7, the rest stays pending.
            self.chunks.push(self.two_bit(TWO_BIT_CAPACITY));
            let rest = self.size - TWO_BIT_CAPACITY;
            self.pending.copy_within(TWO_BIT_CAPACITY..self.size, 0);
            self.size = rest;
        }
        let p = &self.pending[..self.size];
        self.all_same = p.iter().all(|&s| s == p.first().copied().unwrap_or(0));
        self.has_large = p.contains(&LARGE_DELTA);
    }

    /// Emit whatever is pending as the last chunk.
    fn finish(mut self) -> Vec<u16> {
        if self.size > 0 {
            let c = if self.all_same {
                self.run_length()
            } else if self.size <= TWO_BIT_CAPACITY {
                self.two_bit(self.size)
            } else {
                self.one_bit()
            };
            self.chunks.push(c);
        }
        std::mem::take(&mut self.chunks)
    }
}

fn inconsistent(detail: String) -> WireError {
    WireError::Inconsistent {
        what: "TWCC feedback",
        detail,
    }
}

impl TransportCcFeedback {
    fn plan(&self) -> Result<Plan, WireError> {
        let n = self.receive_times.len();
        if n > MAX_STATUSES {
            return Err(inconsistent(format!(
                "{n} statuses, at most {MAX_STATUSES} fit the 16-bit count"
            )));
        }
        let first = self
            .receive_times
            .iter()
            .flatten()
            .next()
            .ok_or_else(|| inconsistent("no packet received".into()))?;
        let (reference, mut running) = reference_of(*first);
        let mut symbols = Vec::with_capacity(n);
        let mut deltas = Vec::with_capacity(n);
        let mut writer = ChunkWriter::new();
        for (i, t) in self.receive_times.iter().enumerate() {
            let sym = match t {
                None => NOT_RECEIVED,
                Some(t) => {
                    let ticks = delta_ticks(running, *t);
                    let d = i16::try_from(ticks).map_err(|_| {
                        inconsistent(format!(
                            "receive delta of {ticks} ticks for seq {} does not fit 16 bits",
                            self.base_seq.wrapping_add(i as u16)
                        ))
                    })?;
                    running += ticks * DELTA_TICK.0 as i128;
                    deltas.push(d);
                    symbol_of(d)
                }
            };
            symbols.push(sym);
            writer.add(sym);
        }
        Ok(Plan {
            reference: (reference & 0x00FF_FFFF) as u32,
            symbols,
            deltas,
            chunks: writer.finish(),
        })
    }

    /// Bytes [`TransportCcFeedback::encode`] appends, padding included.
    pub fn encoded_len(&self) -> Result<usize, WireError> {
        Ok(self.plan()?.encoded_len())
    }

    /// Append the message. Fails (leaving `out` unchanged) when no packet is received, a delta
    /// does not fit 16 bits of ticks (±8.19 s), or there are more than 65535 statuses.
    pub fn encode(&self, out: &mut Vec<u8>) -> Result<(), WireError> {
        let p = self.plan()?;
        debug_assert_eq!(p.symbols.len(), self.receive_times.len());
        // Room for the whole message at once (it is written a few bytes at a time).
        out.reserve(p.encoded_len());
        let start = begin(out, FMT_TWCC, PT_RTPFB);
        out.extend_from_slice(&self.sender_ssrc.to_be_bytes());
        out.extend_from_slice(&self.media_ssrc.to_be_bytes());
        out.extend_from_slice(&self.base_seq.to_be_bytes());
        out.extend_from_slice(&(p.symbols.len() as u16).to_be_bytes());
        out.extend_from_slice(&p.reference.to_be_bytes()[1..]);
        out.push(self.feedback_count);
        for c in &p.chunks {
            out.extend_from_slice(&c.to_be_bytes());
        }
        for &d in &p.deltas {
            if symbol_of(d) == SMALL_DELTA {
                out.push(d as u8);
            } else {
                out.extend_from_slice(&d.to_be_bytes());
            }
        }
        finish(out, start, "TWCC feedback", true)
    }

    /// Parse the body (after the common header, padding removed).
    pub fn parse_body(body: &[u8]) -> Result<TransportCcFeedback, WireError> {
        need("TWCC feedback", body, FIXED_LEN)?;
        let base_seq = be16(body, 8);
        let count = be16(body, 10) as usize;
        let reference = be32(body, 12) >> 8;
        let feedback_count = body[15];
        if count == 0 {
            return Err(inconsistent("packet status count 0".into()));
        }
        // Packet chunks, until they describe `count` symbols.
        let mut symbols: Vec<u8> = Vec::with_capacity(count);
        let mut at = FIXED_LEN;
        while symbols.len() < count {
            need("TWCC packet chunks", body, at + 2)?;
            let c = be16(body, at);
            at += 2;
            let left = count - symbols.len();
            if c & VECTOR_BIT == 0 {
                let sym = ((c >> 13) & 0x3) as u8;
                let run = (c & 0x1FFF) as usize;
                symbols.extend(std::iter::repeat_n(sym, run.min(left)));
            } else if c & TWO_BIT_BIT == 0 {
                symbols
                    .extend((0..ONE_BIT_CAPACITY.min(left)).map(|i| ((c >> (13 - i)) & 1) as u8));
            } else {
                symbols.extend(
                    (0..TWO_BIT_CAPACITY.min(left)).map(|i| ((c >> (12 - 2 * i)) & 3) as u8),
                );
            }
        }
        if let Some(i) = symbols.iter().position(|&s| s == RESERVED_SYMBOL) {
            return Err(inconsistent(format!(
                "reserved status symbol 3 for seq {}",
                base_seq.wrapping_add(i as u16)
            )));
        }
        if !symbols.contains(&SMALL_DELTA) && !symbols.contains(&LARGE_DELTA) {
            return Err(inconsistent("no packet received".into()));
        }
        // Receive deltas.
        let wrap = REFERENCE_WRAP.0 as i128;
        let mut running = reference as i128 * REFERENCE_TICK.0 as i128;
        let mut receive_times = Vec::with_capacity(count);
        for &s in &symbols {
            let ticks = match s {
                SMALL_DELTA => {
                    need("TWCC receive deltas", body, at + 1)?;
                    at += 1;
                    i128::from(body[at - 1])
                }
                LARGE_DELTA => {
                    need("TWCC receive deltas", body, at + 2)?;
                    at += 2;
                    i128::from(be16(body, at - 2) as i16)
                }
                _ => {
                    receive_times.push(None);
                    continue;
                }
            };
            running += ticks * DELTA_TICK.0 as i128;
            // In [0, wrap): fits u64 (a remainder only when a delta crossed the wrap).
            if !(0..wrap).contains(&running) {
                running = running.rem_euclid(wrap);
            }
            receive_times.push(Some(Time(running as u64)));
        }
        let extra = body.len() - at;
        if extra >= 4 {
            return Err(inconsistent(format!(
                "{extra} bytes after the receive deltas, more than padding"
            )));
        }
        Ok(TransportCcFeedback {
            sender_ssrc: be32(body, 0),
            media_ssrc: be32(body, 4),
            base_seq,
            feedback_count,
            receive_times,
        })
    }

    /// Parse a datagram holding exactly this one packet.
    pub fn parse(packet: &[u8]) -> Result<TransportCcFeedback, WireError> {
        parse_as(packet, "TWCC feedback", |p| match p {
            RtcpPacket::TransportCc(n) => Some(n),
            _ => None,
        })
    }

    /// Split receive times into as many messages as needed so each encodes — like libwebrtc
    /// starting a new feedback packet when a delta does not fit 16 bits of ticks or the message
    /// already holds `max_statuses` (clamped to 1..=65535) statuses.
    ///
    /// `receive_times[i]` is for `base_seq + i` (wrapping). Trailing not-received entries after
    /// the last received one are dropped (the receiver reports up to the highest received); no
    /// received packet gives no message. Leading not-received entries stay in the first message
    /// (as many as fit before its first received packet). Every later message starts at a
    /// received packet; the not-received packets before it stay at the end of the previous
    /// message as far as that has room, the rest are only implied by the gap in sequence numbers.
    /// Feedback counts increase from `first_feedback_count`, wrapping.
    pub fn build(
        sender_ssrc: u32,
        media_ssrc: u32,
        base_seq: u16,
        first_feedback_count: u8,
        receive_times: &[Option<Time>],
        max_statuses: usize,
    ) -> Vec<TransportCcFeedback> {
        let max = max_statuses.clamp(1, MAX_STATUSES);
        let Some(last_rx) = receive_times.iter().rposition(Option::is_some) else {
            return Vec::new();
        };
        let times = &receive_times[..=last_rx];
        let next_received = |from: usize| times[from..].iter().position(Option::is_some);
        let mut messages = Vec::new();
        let mut feedback_count = first_feedback_count;
        let mut start = 0;
        while start <= last_rx {
            // There is a received packet at or after `start` (the one at last_rx).
            let Some(off) = next_received(start) else {
                break;
            };
            let first = start + off;
            start = start.max((first + 1).saturating_sub(max));
            let Some(t0) = times[first] else { break };
            let (_, mut running) = reference_of(t0);
            running += delta_ticks(running, t0) * DELTA_TICK.0 as i128;
            let mut end = first + 1;
            // The usual case: the rest fits one message and its receive times span at most
            // 8 s, so every delta fits 16 bits of ticks (±8.19 s) without checking each.
            let rest = times[first..=last_rx].iter().flatten();
            let (lo, hi) = rest.fold((t0, t0), |(lo, hi), &t| (lo.min(t), hi.max(t)));
            if last_rx + 1 - start <= max && hi.saturating_since(lo) <= Duration::from_millis(8000)
            {
                end = last_rx + 1;
            }
            while end <= last_rx && end - start < max {
                if let Some(t) = times[end] {
                    let ticks = delta_ticks(running, t);
                    if i16::try_from(ticks).is_err() {
                        break;
                    }
                    running += ticks * DELTA_TICK.0 as i128;
                }
                end += 1;
            }
            messages.push(TransportCcFeedback {
                sender_ssrc,
                media_ssrc,
                base_seq: base_seq.wrapping_add(start as u16),
                feedback_count,
                receive_times: times[start..end].to_vec(),
            });
            feedback_count = feedback_count.wrapping_add(1);
            start = match next_received(end.min(times.len())) {
                Some(off) => end + off,
                None => break,
            };
        }
        messages
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::rtcp::parse_compound;
    use rand_chacha::ChaCha8Rng;
    use rand_core::{Rng, SeedableRng};

    const HALF_TICK_NS: u64 = DELTA_TICK.0 / 2;

    fn fb(base_seq: u16, times: Vec<Option<Time>>) -> TransportCcFeedback {
        TransportCcFeedback {
            sender_ssrc: 0x0101,
            media_ssrc: 0x0202,
            base_seq,
            feedback_count: 9,
            receive_times: times,
        }
    }

    fn enc(f: &TransportCcFeedback) -> Vec<u8> {
        let mut out = Vec::new();
        f.encode(&mut out).unwrap();
        assert_eq!(
            out.len(),
            f.encoded_len().unwrap(),
            "encoded_len matches encode"
        );
        out
    }

    fn ms(x: f64) -> Option<Time> {
        Some(Time((x * 1e6) as u64))
    }

    fn assert_close(sent: &[Option<Time>], got: &[Option<Time>]) {
        assert_eq!(sent.len(), got.len(), "one status per sequence number");
        for (i, (a, b)) in sent.iter().zip(got).enumerate() {
            match (a, b) {
                (None, None) => {}
                (Some(a), Some(b)) => assert!(
                    a.0.abs_diff(b.0) <= HALF_TICK_NS,
                    "status {i}: decoded {b:?} must be within 125 µs of {a:?}"
                ),
                _ => panic!("status {i}: received flag changed: {a:?} → {b:?}"),
            }
        }
    }

    #[test]
    fn round_trips_a_realistic_message_across_the_sequence_wrap() {
        let times = vec![
            ms(1000.1),
            ms(1001.3),
            None,
            None,
            ms(1005.9),
            ms(1004.0), // reordered: negative delta
            ms(1104.0), // 98 ms later: large delta
            ms(1104.2),
        ];
        let f = fb(65532, times.clone());
        let b = enc(&f);
        assert_eq!(b.len() % 4, 0);
        let p = TransportCcFeedback::parse(&b).unwrap();
        assert_eq!(
            p.base_seq, 65532,
            "base sequence number kept across the wrap"
        );
        assert_eq!(p.feedback_count, 9);
        assert_eq!((p.sender_ssrc, p.media_ssrc), (0x0101, 0x0202));
        assert_close(&times, &p.receive_times);
        assert_eq!(
            TransportCcFeedback::parse(&enc(&p)).unwrap(),
            p,
            "a parsed message re-encodes to itself: its times are already quantised"
        );
    }

    #[test]
    fn wire_layout_of_a_small_message() {
        // Reference: floor(1000.1 ms / 64 ms) = 15 → 960 ms. Deltas: 40.1 ms → 160 ticks
        // (40.0 ms), then 1 ms → 4 ticks.
        let f = fb(7, vec![ms(1000.1), None, ms(1001.0)]);
        let b = enc(&f);
        assert_eq!(
            &b[..4],
            &[0x8F, 205, 0, 5],
            "no P bit, FMT 15, RTPFB, 6 words"
        );
        assert_eq!(&b[12..16], &[0, 7, 0, 3], "base 7, 3 statuses");
        assert_eq!(&b[16..20], &[0, 0, 15, 9], "reference 15, feedback count 9");
        assert_eq!(
            &b[20..22],
            &[0b1101_0001, 0b0000_0000],
            "one 2-bit vector chunk: small, lost, small"
        );
        assert_eq!(&b[22..24], &[160, 4], "two small deltas");
        assert_eq!(b.len(), 24, "already 32-bit aligned: no padding needed");
        let f = fb(7, vec![ms(1000.1)]);
        let b = enc(&f);
        assert_eq!(b.len(), 24, "21 bytes pad to 24");
        assert_eq!(b[0], 0xAF, "padded: P bit set");
        assert_eq!(
            &b[20..24],
            &[0x20, 0x01, 160, 1],
            "run of 1 small, delta, pad count 1"
        );
    }

    #[test]
    fn chunks_are_chosen_compactly() {
        let n_chunks = |times: Vec<Option<Time>>| -> usize {
            let f = fb(0, times);
            let p = f.plan().unwrap();
            // Cross-check the parse while at it.
            let back = TransportCcFeedback::parse(&enc(&f)).unwrap();
            assert_close(&f.receive_times, &back.receive_times);
            p.chunks.len()
        };
        let steady: Vec<_> = (0..1000).map(|i| ms(100.0 + i as f64)).collect();
        assert_eq!(
            n_chunks(steady),
            1,
            "1000 small deltas are one run-length chunk"
        );
        let mut long = vec![ms(0.0)];
        long.extend((0..10_000).map(|i| ms(1.0 + i as f64)));
        assert_eq!(
            n_chunks(long),
            2,
            "10001 small deltas need two runs (a run holds at most 8191)"
        );
        let alternating: Vec<_> = (0..28)
            .map(|i| if i % 2 == 0 { ms(i as f64) } else { None })
            .collect();
        assert_eq!(
            n_chunks(alternating),
            2,
            "28 alternating small/lost: two 1-bit vectors"
        );
        let mut mixed: Vec<_> = (0..7).map(|i| ms(i as f64)).collect();
        mixed[3] = ms(500.0); // large delta, then a negative one
        assert_eq!(
            n_chunks(mixed),
            1,
            "7 symbols with large deltas: one 2-bit vector"
        );
        let mut lost_run = vec![ms(0.0)];
        lost_run.extend(std::iter::repeat_n(None, 3000));
        lost_run.push(ms(5.0));
        assert_eq!(
            n_chunks(lost_run),
            3,
            "a 1-bit vector (received + 13 lost), one run of the other losses, a run of 1"
        );
    }

    #[test]
    fn decoded_times_stay_within_half_a_tick_over_long_random_sequences() {
        let mut rng = ChaCha8Rng::seed_from_u64(0x7CC);
        for round in 0..20 {
            let mut t = rng.next_u64() % 1_000_000_000_000; // start anywhere in the first 1000 s
            let times: Vec<Option<Time>> = (0..20_000)
                .map(|_| {
                    let r = rng.next_u64();
                    // Mostly ~1 ms spacing with jitter, some reordering, some gaps, some losses.
                    t += r % 2_000_000;
                    if r % 97 == 0 {
                        t += 200_000_000;
                    }
                    if r % 13 == 0 {
                        None
                    } else if r % 31 == 0 {
                        Some(Time(t.saturating_sub(3_000_000)))
                    } else {
                        Some(Time(t))
                    }
                })
                .collect();
            let msgs = TransportCcFeedback::build(1, 2, 65000, 250, &times, 2000 + round * 100);
            let mut decoded = vec![None; times.len()];
            for (k, m) in msgs.iter().enumerate() {
                assert_eq!(m.feedback_count, 250u8.wrapping_add(k as u8), "counts wrap");
                let p = TransportCcFeedback::parse(&enc(m)).unwrap();
                let off = p.base_seq.wrapping_sub(65000) as usize;
                for (i, r) in p.receive_times.iter().enumerate() {
                    if r.is_some() {
                        decoded[off + i] = *r;
                    }
                }
            }
            let last = times.iter().rposition(Option::is_some).unwrap();
            assert_close(&times[..=last], &decoded[..=last]);
        }
    }

    #[test]
    fn build_splits_on_large_gaps_and_on_the_status_limit() {
        let mut times = vec![None, ms(1000.0), ms(1001.0), None];
        times.push(ms(1001.0 + 9000.0)); // 9 s later: does not fit i16 ticks (8.19 s)
        times.push(ms(10_002.0));
        times.extend([None, None]); // trailing losses: dropped
        let msgs = TransportCcFeedback::build(1, 2, 65534, 0, &times, 100);
        assert_eq!(msgs.len(), 2, "a 9 s gap starts a new message");
        assert_eq!(msgs[0].base_seq, 65534);
        assert_eq!(
            msgs[0].receive_times,
            times[..4].to_vec(),
            "first message: leading loss kept, the loss before the gap kept"
        );
        assert_eq!(
            msgs[1].base_seq, 2,
            "starts at the packet after the gap: 65534 + 4 wraps to 2"
        );
        assert_eq!(
            msgs[1].receive_times,
            times[4..6].to_vec(),
            "trailing losses dropped"
        );
        for m in &msgs {
            assert!(
                m.encode(&mut Vec::new()).is_ok(),
                "every built message encodes"
            );
        }

        let times: Vec<_> = (0..25).map(|i| ms(i as f64)).collect();
        let msgs = TransportCcFeedback::build(1, 2, 65530, 0, &times, 10);
        let bases: Vec<u16> = msgs.iter().map(|m| m.base_seq).collect();
        assert_eq!(
            bases,
            vec![65530, 4, 14],
            "10 statuses each, base wrapping past 65535"
        );
        assert_eq!(msgs[2].receive_times.len(), 5);

        let mut times = vec![None; 30];
        times[29] = ms(1.0);
        let msgs = TransportCcFeedback::build(1, 2, 0, 0, &times, 10);
        assert_eq!(msgs.len(), 1);
        assert_eq!(
            msgs[0].base_seq, 20,
            "leading losses trimmed to fit the status limit"
        );
        assert!(TransportCcFeedback::build(1, 2, 0, 0, &[None, None], 10).is_empty());
    }

    #[test]
    fn encode_rejects_what_the_wire_cannot_hold() {
        let mut out = vec![];
        let e = fb(0, vec![None, None]).encode(&mut out).unwrap_err();
        assert!(
            matches!(&e, WireError::Inconsistent { detail, .. } if detail.contains("no packet")),
            "{e}"
        );
        let e = fb(0, vec![ms(0.0), ms(9000.0)])
            .encode(&mut out)
            .unwrap_err();
        assert!(
            matches!(&e, WireError::Inconsistent { detail, .. } if detail.contains("16 bits")),
            "a 9 s delta does not fit: {e}"
        );
        let e = fb(0, vec![ms(5.0); MAX_STATUSES + 1])
            .encode(&mut out)
            .unwrap_err();
        assert!(matches!(&e, WireError::Inconsistent { detail, .. } if detail.contains("65535")));
        assert!(out.is_empty(), "failed encodes write nothing");
        assert!(fb(0, vec![ms(5.0); MAX_STATUSES]).encode(&mut out).is_ok());
        assert!(fb(0, vec![ms(10_000.0), ms(10_000.0 - 8190.0)])
            .encode(&mut out)
            .is_ok());
    }

    #[test]
    fn rejects_every_truncated_body() {
        let f = fb(
            100,
            vec![ms(10.0), None, ms(12.0), ms(300.0), ms(301.0), ms(299.0)],
        );
        let b = enc(&f);
        let pad = b[b.len() - 1] as usize;
        assert_eq!(b[0] & 0x20, 0x20, "this message is padded");
        let body = &b[4..b.len() - pad];
        assert!(TransportCcFeedback::parse_body(body).is_ok());
        for n in 0..body.len() {
            let e = TransportCcFeedback::parse_body(&body[..n]).unwrap_err();
            assert!(
                matches!(e, WireError::Truncated { .. }),
                "a body cut to {n} of {} bytes must be Truncated, got {e:?}",
                body.len()
            );
        }
    }

    /// A body with the given status count, chunks and delta bytes.
    fn body(count: u16, chunks: &[u16], deltas: &[u8]) -> Vec<u8> {
        let mut b = vec![0, 0, 0, 1, 0, 0, 0, 2, 0xFF, 0xFF];
        b.extend_from_slice(&count.to_be_bytes());
        b.extend_from_slice(&[0, 0, 1, 0]);
        for c in chunks {
            b.extend_from_slice(&c.to_be_bytes());
        }
        b.extend_from_slice(deltas);
        b
    }

    #[test]
    fn rejects_malformed_bodies_with_named_errors() {
        // Run of 3 small deltas.
        let ok = body(3, &[0x2003], &[1, 2, 3]);
        let p = TransportCcFeedback::parse_body(&ok).unwrap();
        assert_eq!(p.base_seq, 65535);
        assert_eq!(
            p.receive_times,
            vec![
                Some(Time(64_000_000 + 250_000)),
                Some(Time(64_000_000 + 750_000)),
                Some(Time(64_000_000 + 1_500_000)),
            ],
            "reference 1 × 64 ms, then 1, 2, 3 ticks"
        );
        assert!(
            matches!(
                TransportCcFeedback::parse_body(&body(4, &[0x2003], &[])),
                Err(WireError::Truncated {
                    what: "TWCC packet chunks",
                    ..
                })
            ),
            "a status count larger than the chunks hold is truncated chunks"
        );
        assert!(
            matches!(
                TransportCcFeedback::parse_body(&body(3, &[0x2003], &[1, 2])),
                Err(WireError::Truncated {
                    what: "TWCC receive deltas",
                    ..
                })
            ),
            "a missing delta is truncated deltas"
        );
        assert!(
            matches!(
                TransportCcFeedback::parse_body(&body(3, &[0x4003], &[1, 2, 3, 4])),
                Err(WireError::Truncated {
                    what: "TWCC receive deltas",
                    ..
                })
            ),
            "large deltas take 2 bytes each: 4 bytes hold only 2"
        );
        assert!(
            matches!(
                TransportCcFeedback::parse_body(&body(0, &[], &[])),
                Err(WireError::Inconsistent {
                    what: "TWCC feedback",
                    ..
                })
            ),
            "a status count of 0 is inconsistent"
        );
        assert!(
            matches!(
                TransportCcFeedback::parse_body(&body(3, &[0x6003], &[])),
                Err(WireError::Inconsistent {
                    what: "TWCC feedback",
                    ..
                })
            ),
            "symbol 3 is reserved"
        );
        assert!(
            matches!(
                TransportCcFeedback::parse_body(&body(3, &[0x0003], &[])),
                Err(WireError::Inconsistent {
                    what: "TWCC feedback",
                    ..
                })
            ),
            "a message with no received packet is inconsistent"
        );
        assert!(
            matches!(
                TransportCcFeedback::parse_body(&body(3, &[0x2003], &[1, 2, 3, 0, 0, 0, 0])),
                Err(WireError::Inconsistent {
                    what: "TWCC feedback",
                    ..
                })
            ),
            "4 bytes after the deltas are more than padding"
        );
        assert!(
            TransportCcFeedback::parse_body(&body(3, &[0x2003], &[1, 2, 3, 0, 0, 0])).is_ok(),
            "up to 3 zero bytes of padding without the P bit are accepted"
        );
        // Status vector chunks: 1-bit with 14 symbols, only 2 counted.
        let p = TransportCcFeedback::parse_body(&body(2, &[0b1010_0000_0000_0000], &[8])).unwrap();
        assert_eq!(
            p.receive_times,
            vec![Some(Time(66_000_000)), None],
            "extra symbols ignored"
        );
        // Negative large delta before time 0 wraps to the end of the 12.4-day period.
        let p = TransportCcFeedback::parse_body(&body(1, &[0x4001], &[0xFE, 0x00])).unwrap();
        assert_eq!(
            p.receive_times,
            vec![Some(Time(REFERENCE_WRAP.0 + 64_000_000 - 512 * 250_000))],
            "times are modulo the reference wrap"
        );
        assert_eq!(
            TransportCcFeedback::parse(&enc(&p)).unwrap(),
            p,
            "and re-encode"
        );
    }

    #[test]
    fn parses_inside_a_compound() {
        let f = fb(1, vec![ms(5.0), ms(6.0), ms(7.0)]);
        let mut b = enc(&f);
        b.extend(enc(&f));
        let ps = parse_compound(&b).unwrap();
        assert_eq!(
            ps.len(),
            2,
            "the P-bit padding of the first does not break the second"
        );
    }
}
