//! Cuts a frame into packets, each with `overhead` bytes of headers on the wire.
//!
//! A frame becomes `ceil(size / payload)` packets of `payload` bytes, the last one shorter. For a
//! controller that needs at least two packets per frame (`min_packets = 2`: SQP, whose bandwidth
//! sample, Eq. 1, is a frame's dispersion and is undefined for a one-packet frame), a frame of at
//! most two payloads goes out as **two** packets of half its size (one byte apart at most), as
//! long as each half carries at least [`MIN_SPLIT_PAYLOAD`] bytes: at low rates the packets
//! shrink with the frames instead of each frame becoming one packet, and a two-packet frame is
//! never a full packet and a sliver (in a two-packet train the receive-side dispersion is all the
//! receiver sees of the packets after the first: a 95-byte tail would stand for a 1595-byte
//! frame). SQP then works down to `2 × MIN_SPLIT_PAYLOAD × 8 × fps` (24 kbit/s at 30 frame/s),
//! below any flow's minimum bitrate, where it used to need two *full* packets per frame
//! (576 kbit/s with 1200-byte payloads). The cost is one more header per frame at low rates
//! (40 bytes at 30 frame/s is 9.6 kbit/s). Other controllers keep one packet per small frame:
//! for them a second packet would only add a header and a second chance to lose the frame.
//! libwebrtc's packetizers split frames about equally (`RtpPacketizer::SplitAboutEqually`); the
//! halves are that rule for two packets, the 50-byte minimum is our judgment.

use crate::units::Bytes;

/// The smallest payload a frame is split into when it would otherwise fit in one packet.
pub const MIN_SPLIT_PAYLOAD: u32 = 50;

#[derive(Debug, Clone, Copy)]
pub struct Packetizer {
    /// Largest payload of a packet.
    pub payload: Bytes,
    pub overhead: Bytes,
    /// Packets a frame gets at least (1 or 2; see the module documentation).
    pub min_packets: u32,
}

impl Packetizer {
    /// How many packets a frame of `size` bytes becomes.
    pub fn count(&self, size: u32) -> u32 {
        let payload = self.payload.0 as u32;
        let full = size.div_ceil(payload);
        if full == 1 && self.min_packets >= 2 && size >= 2 * MIN_SPLIT_PAYLOAD {
            2
        } else {
            full
        }
    }

    /// Wire sizes of the packets of a frame of `size` bytes (none for an empty frame).
    pub fn packet_sizes(&self, size: u32) -> impl Iterator<Item = u32> + '_ {
        let count = self.count(size);
        let full = self.payload.0 as u32;
        let halves = count == 2 && self.min_packets >= 2;
        let sizes = move |i: u32| match count {
            2 if halves => size / 2 + (i < size % 2) as u32,
            _ if i + 1 < count => full,
            _ => size - full * (count - 1),
        };
        (0..count).map(move |i| sizes(i) + self.overhead.0 as u32)
    }

    /// The lowest rate at which every frame at `fps` is two packets.
    pub fn two_packet_floor_bps(fps: f64) -> f64 {
        2.0 * MIN_SPLIT_PAYLOAD as f64 * 8.0 * fps
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sizes(p: &Packetizer, size: u32) -> Vec<u32> {
        p.packet_sizes(size).collect()
    }

    #[test]
    fn splits_frames_into_payload_sized_packets() {
        let p = Packetizer {
            payload: Bytes(1200),
            overhead: Bytes(0),
            min_packets: 1,
        };
        assert_eq!(sizes(&p, 2500), vec![1200, 1200, 100]);
        assert_eq!(sizes(&p, 1500), vec![1200, 300]);
        assert_eq!(
            sizes(&p, 625),
            vec![625],
            "one packet per small frame by default"
        );
        assert_eq!(sizes(&p, 2400), vec![1200, 1200]);
        assert_eq!(sizes(&p, 0).len(), 0);
        let p = Packetizer {
            payload: Bytes(1000),
            overhead: Bytes(40),
            min_packets: 2,
        };
        assert_eq!(
            sizes(&p, 1500),
            vec![790, 790],
            "two payloads at most: halves"
        );
        assert_eq!(sizes(&p, 1999), vec![1040, 1039]);
    }

    #[test]
    fn small_frames_become_two_smaller_packets_so_every_frame_has_a_dispersion() {
        let p = Packetizer {
            payload: Bytes(1200),
            overhead: Bytes(40),
            min_packets: 2,
        };
        assert_eq!(sizes(&p, 1200), vec![640, 640], "one payload: two halves");
        assert_eq!(sizes(&p, 625), vec![353, 352], "150 kbit/s at 30 fps");
        assert_eq!(sizes(&p, 100), vec![90, 90], "two minimum payloads");
        assert_eq!(sizes(&p, 99), vec![139], "too small to split");
        for size in [1, 99, 100, 625, 1199, 1200, 1201, 2400, 2401, 9999] {
            let s = sizes(&p, size);
            assert_eq!(s.len() as u32, p.count(size));
            assert_eq!(s.iter().map(|x| x - 40).sum::<u32>(), size, "{size}: {s:?}");
            assert!(s.iter().all(|&x| x <= 1240));
            if s.len() == 2 {
                assert!(s[0] - s[1] <= 1, "{size}: {s:?} differ by more than a byte");
            }
        }
        assert!((Packetizer::two_packet_floor_bps(30.0) - 24e3).abs() < 1e-9);
    }
}
