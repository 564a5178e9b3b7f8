//! Unwrapping of the 16-bit sequence numbers that RTP and RTCP carry into 64-bit ones.
//!
//! A received number is placed at the 64-bit value closest to the previous one (the forward and
//! backward distances are compared modulo 2^16), as libwebrtc's `SeqNumUnwrapper` does, so a
//! sequence that wraps 65535 → 0 keeps counting up and a late packet from before the wrap is
//! placed before it. The first number unwraps to itself; values never go below zero (a number
//! "before" the first is placed after it instead).

/// Unwraps a stream of `u16` sequence numbers (RTP sequence numbers, transport-wide sequence
/// numbers, frame ids) into `u64`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SeqUnwrapper {
    last: Option<u64>,
}

impl SeqUnwrapper {
    pub fn new() -> Self {
        Self::default()
    }

    /// The 64-bit value of `seq` closest to the last one unwrapped; remembers it.
    pub fn unwrap(&mut self, seq: u16) -> u64 {
        let v = self.peek(seq);
        self.last = Some(v);
        v
    }

    /// The 64-bit value `seq` would unwrap to, without remembering it.
    pub fn peek(&self, seq: u16) -> u64 {
        let Some(last) = self.last else {
            return seq as u64;
        };
        let forward = seq.wrapping_sub(last as u16);
        if forward < 0x8000 {
            last + forward as u64
        } else {
            let back = (last as u16).wrapping_sub(seq) as u64;
            last.checked_sub(back).unwrap_or(last + forward as u64)
        }
    }

    /// The last value unwrapped.
    pub fn last(&self) -> Option<u64> {
        self.last
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_up_through_the_wrap_and_places_late_numbers_before_it() {
        let mut u = SeqUnwrapper::new();
        assert_eq!(u.unwrap(65534), 65534);
        assert_eq!(u.unwrap(65535), 65535);
        assert_eq!(
            u.unwrap(0),
            65536,
            "0 after 65535 is the next number, not a restart"
        );
        assert_eq!(u.unwrap(3), 65539);
        assert_eq!(
            u.peek(65535),
            65535,
            "a late packet from before the wrap stays before it"
        );
        assert_eq!(u.unwrap(65535), 65535);
    }

    #[test]
    fn never_goes_below_zero() {
        let mut u = SeqUnwrapper::new();
        assert_eq!(u.unwrap(2), 2);
        assert_eq!(
            u.unwrap(65535),
            65535,
            "no negative numbers: placed forward instead"
        );
    }

    #[test]
    fn unwraps_a_long_run_exactly() {
        let mut u = SeqUnwrapper::new();
        for v in 0u64..300_000 {
            assert_eq!(u.unwrap(v as u16), v);
        }
    }
}
