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

/// How far past a held value the next one may land and still confirm the jump.
pub const JUMP_CONFIRM_SPAN: u64 = 64;

/// Keeps a single corrupt or forged packet from moving an unwrapped counter (a transport-wide
/// sequence number, an RTP sequence number, a frame id) implausibly far ahead.
///
/// A value more than `window` ahead of the newest accepted one is held back, not accepted. The
/// jump is real if the next value seen continues from it (lands within [`JUMP_CONFIRM_SPAN`]
/// at or after it), as the packets after a long loss run do: that next value is accepted (the
/// held packet itself stays discarded; a repair mechanism sees it as lost). Anything else
/// forgets the held value. One stray packet 30 000 numbers ahead therefore changes nothing,
/// where accepting it would declare 30 000 packets lost and put every later packet behind the
/// newest number. Values behind the newest are always accepted (reordering, retransmissions).
/// libwebrtc bounds the same state by size instead (`PacketArrivalTimeMap` keeps 2^15
/// arrivals, `NackRequester` forgets packets 10 000 numbers old); a window in numbers is our
/// judgment, with the sizes named where a guard is used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JumpGuard {
    window: u64,
    held: Option<u64>,
    rejected: u64,
}

impl JumpGuard {
    pub const fn new(window: u64) -> JumpGuard {
        JumpGuard {
            window,
            held: None,
            rejected: 0,
        }
    }

    /// Whether to accept `value`, given the newest value accepted so far (`None`: nothing yet).
    pub fn admit(&mut self, newest: Option<u64>, value: u64) -> bool {
        let held = self.held.take();
        let Some(newest) = newest else {
            return true;
        };
        if value <= newest.saturating_add(self.window) {
            return true;
        }
        if held.is_some_and(|h| (h..=h.saturating_add(JUMP_CONFIRM_SPAN)).contains(&value)) {
            return true;
        }
        self.held = Some(value);
        self.rejected += 1;
        false
    }

    /// Values not accepted so far.
    pub fn rejected(&self) -> u64 {
        self.rejected
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

    #[test]
    fn a_single_far_jump_is_held_back_and_a_continued_one_accepted() {
        let mut g = JumpGuard::new(1000);
        assert!(g.admit(None, 5), "the first value starts the counter");
        assert!(g.admit(Some(5), 900), "within the window");
        assert!(
            !g.admit(Some(900), 30_900),
            "30 000 ahead: held back, not accepted"
        );
        assert!(
            g.admit(Some(900), 901),
            "the real stream goes on and the held value is forgotten"
        );
        assert!(!g.admit(Some(901), 30_900), "held again");
        assert!(
            !g.admit(Some(901), 50_000),
            "not a continuation of the held value"
        );
        assert!(
            g.admit(Some(901), 50_001),
            "a continuation of the last held value: a real jump (a long loss run)"
        );
        assert!(g.admit(Some(50_001), 3), "late values are always accepted");
        assert_eq!(g.rejected(), 3);
    }
}
