//! SQP's "interval tracker" (Fig. 3b): per-frame packet dispersion statistics assembled from
//! the per-packet feedback, closed once every packet of the frame has been reported received
//! or lost.

use super::sample::{diff_ns, FrameTrain};
use crate::packet::PacketResult;
use crate::units::Time;
use std::collections::BTreeMap;

/// What the sender knew about a frame when it was encoded.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FrameMeta {
    /// Encoded size (bytes of media).
    pub encoded_bytes: u64,
    /// The size the frame would have had at the estimate (`F_max = B·I`, bytes), for Eq. 2.
    pub f_max_bytes: f64,
}

#[derive(Debug, Clone, Copy, Default)]
struct Partial {
    meta: Option<FrameMeta>,
    packets: u32,
    reported: u32,
    lost: u32,
    bytes: u64,
    first_packet_bytes: u64,
    recv_bytes: u64,
    first_recv_bytes: u64,
    send_start: Option<Time>,
    last_send: Option<Time>,
    recv_start: Option<Time>,
    recv_end: Option<Time>,
    min_owd_ns: Option<i128>,
}

/// A frame whose packets have all been reported.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClosedFrame {
    pub frame: u64,
    pub train: FrameTrain,
    /// Sender clock: when the frame's last packet left.
    pub last_send: Time,
    pub meta: Option<FrameMeta>,
}

/// Frames kept open at most this many frames behind the newest closed one (a frame whose
/// packets can no longer all be reported is dropped).
const MAX_OPEN_BEHIND: u64 = 256;

#[derive(Debug, Default)]
pub struct IntervalTracker {
    frames: BTreeMap<u64, Partial>,
}

impl IntervalTracker {
    pub fn new() -> IntervalTracker {
        IntervalTracker::default()
    }

    pub fn on_frame_encoded(&mut self, frame: u64, meta: FrameMeta) {
        self.frames.entry(frame).or_default().meta = Some(meta);
    }

    /// Account one reported packet; returns the frame if this packet was its last unreported.
    pub fn on_packet(&mut self, p: &PacketResult) -> Option<ClosedFrame> {
        let frame = p.sent.frame?;
        if p.sent.packets_in_frame == 0 {
            return None;
        }
        let e = self.frames.entry(frame).or_default();
        e.packets = p.sent.packets_in_frame as u32;
        e.reported += 1;
        e.bytes += p.sent.size as u64;
        let send = p.sent.send_time;
        if p.sent.index_in_frame == 0 {
            e.first_packet_bytes = p.sent.size as u64;
        }
        e.send_start = Some(e.send_start.map_or(send, |s| s.min(send)));
        e.last_send = Some(e.last_send.map_or(send, |s| s.max(send)));
        match p.receive_time {
            Some(r) => {
                if e.recv_start.is_none_or(|s| r < s) {
                    e.first_recv_bytes = p.sent.size as u64;
                }
                e.recv_bytes += p.sent.size as u64;
                e.recv_start = Some(e.recv_start.map_or(r, |s| s.min(r)));
                e.recv_end = Some(e.recv_end.map_or(r, |s| s.max(r)));
                let owd = diff_ns(r, send);
                e.min_owd_ns = Some(e.min_owd_ns.map_or(owd, |m| m.min(owd)));
            }
            None => e.lost += 1,
        }
        if e.reported < e.packets {
            return None;
        }
        let e = self.frames.remove(&frame)?;
        let floor = frame.saturating_sub(MAX_OPEN_BEHIND);
        self.frames.retain(|&f, _| f >= floor);
        Some(ClosedFrame {
            frame,
            train: FrameTrain {
                bytes: e.bytes,
                first_packet_bytes: e.first_packet_bytes,
                recv_bytes: e.recv_bytes,
                first_recv_bytes: e.first_recv_bytes,
                send_start: e.send_start?,
                recv_start: e.recv_start,
                recv_end: e.recv_end,
                packets: e.packets,
                lost: e.lost,
                min_owd_ns: e.min_owd_ns,
            },
            last_send: e.last_send?,
            meta: e.meta,
        })
    }

    /// Frames not yet closed.
    pub fn open_frames(&self) -> usize {
        self.frames.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::{PacketKind, SentPacket};

    fn result(frame: u64, idx: u16, n: u16, send_ms: u64, recv_ms: Option<u64>) -> PacketResult {
        PacketResult {
            sent: SentPacket {
                seq: 0,
                size: 1000 + idx as u32,
                send_time: Time::from_millis(send_ms),
                frame: Some(frame),
                index_in_frame: idx,
                packets_in_frame: n,
                kind: PacketKind::Media,
                in_flight: 0,
            },
            receive_time: recv_ms.map(Time::from_millis),
            ecn: crate::packet::Ecn::NotEct,
        }
    }

    #[test]
    fn a_frame_closes_when_all_its_packets_are_reported_even_across_reports() {
        let mut t = IntervalTracker::new();
        t.on_frame_encoded(
            7,
            FrameMeta {
                encoded_bytes: 3003,
                f_max_bytes: 6000.0,
            },
        );
        assert!(t.on_packet(&result(7, 0, 3, 100, Some(120))).is_none());
        assert!(t.on_packet(&result(7, 1, 3, 101, None)).is_none());
        let c = t.on_packet(&result(7, 2, 3, 102, Some(125))).unwrap();
        assert_eq!(c.frame, 7);
        assert_eq!(c.train.bytes, 3003);
        assert_eq!(c.train.first_packet_bytes, 1000);
        assert_eq!(c.train.send_start, Time::from_millis(100));
        assert_eq!(c.last_send, Time::from_millis(102));
        assert_eq!(c.train.recv_start, Some(Time::from_millis(120)));
        assert_eq!(c.train.recv_end, Some(Time::from_millis(125)));
        assert_eq!((c.train.packets, c.train.lost), (3, 1));
        assert_eq!(c.train.min_owd_ns, Some(20_000_000));
        assert_eq!(c.meta.unwrap().f_max_bytes, 6000.0);
        assert_eq!(t.open_frames(), 0);
    }
}
