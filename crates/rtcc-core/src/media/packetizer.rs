//! Cuts a frame into packets: `ceil(size / payload)` packets of `payload` bytes (the last one
//! shorter), each with `overhead` bytes of headers on the wire.

use crate::units::Bytes;

#[derive(Debug, Clone, Copy)]
pub struct Packetizer {
    pub payload: Bytes,
    pub overhead: Bytes,
}

impl Packetizer {
    /// Wire sizes of the packets of a frame of `size` bytes (none for an empty frame).
    pub fn packet_sizes(&self, size: u32) -> impl Iterator<Item = u32> + '_ {
        let payload = self.payload.0 as u32;
        let count = size.div_ceil(payload);
        (0..count).map(move |i| {
            let body = if i + 1 < count {
                payload
            } else {
                size - payload * (count - 1)
            };
            body + self.overhead.0 as u32
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_frames_into_payload_sized_packets() {
        let p = Packetizer {
            payload: Bytes(1200),
            overhead: Bytes(0),
        };
        assert_eq!(
            p.packet_sizes(2500).collect::<Vec<_>>(),
            vec![1200, 1200, 100]
        );
        assert_eq!(p.packet_sizes(1200).collect::<Vec<_>>(), vec![1200]);
        assert_eq!(p.packet_sizes(0).count(), 0);
        let p = Packetizer {
            payload: Bytes(1000),
            overhead: Bytes(40),
        };
        assert_eq!(p.packet_sizes(1500).collect::<Vec<_>>(), vec![1040, 540]);
    }
}
