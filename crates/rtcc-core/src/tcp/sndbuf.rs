//! A TCP send buffer: how much a server may have written into its socket and not yet had
//! acknowledged, when it may write again, and the application-limited mark each write makes.
//!
//! Off by default: a sender without it takes every response whole the moment it is queued (the
//! application never waits for room), which is what rtcc's TCP always did. It exists as a
//! negative control for the bbr-dash seed (`docs/bbr_dash.md`): if a server ran out of written
//! data while its window was open, every delivery-rate sample would be app-limited, BBR's
//! full-pipe test would skip those rounds, and STARTUP would last.
//!
//! What Linux does (described in our own words; `net/ipv4/tcp.c`, `include/net/sock.h`,
//! `net/core/stream.c`, `net/ipv4/tcp_rate.c`, `net/ipv4/tcp_input.c`):
//! - **The buffer.** A socket's `sk_wmem_queued` counts the memory of every skb written and not
//!   yet freed: data not yet sent and data sent but not cumulatively acknowledged. `sendmsg`
//!   copies while `sk_stream_memory_free()` holds (queued below `sk_sndbuf`) and then blocks, or
//!   returns what it wrote to a non-blocking caller (nginx), which waits for `EPOLLOUT`.
//! - **The wake-up.** As acknowledgements free memory, `tcp_check_space()` calls the socket's
//!   write-space callback, which wakes the writer only once `sk_stream_is_writeable()`: free
//!   space at least half of what is queued (`sk_stream_wspace() >= sk_stream_min_wspace()`),
//!   i.e. queued at most two-thirds of the buffer. So a writer that filled the buffer writes
//!   again in chunks of about a third of it.
//! - **App-limited marking.** At the start of every `sendmsg` (`tcp_sendmsg_locked()`),
//!   `tcp_rate_check_app_limited()` marks the connection application-limited (the bubble
//!   `delivered + packets in flight`, read by BBR through its rate samples) when less than one
//!   MSS of written data is unsent, the window is not full, and every lost packet has been
//!   retransmitted (it also requires the host's queues below the socket to be empty, which they
//!   are here: the sender hands each packet to the path as it releases it).
//! - **Autotuning.** Without `SO_SNDBUF` the kernel grows `sk_sndbuf` with the window
//!   (`tcp_sndbuf_expand()`): about `factor × cwnd × per-segment memory`, the factor 2 (3 for
//!   BBR, its `sndbuf_expand` hook), the per-segment memory about 4.3 KB for a 1448-byte MSS in
//!   the worst case (no GSO: one skb per segment), at most `tcp_wmem[2]` (4 MB by default). Below
//!   the cap that is at least three windows of payload even at the worst case. At the cap it
//!   depends on the memory a byte of payload costs: with GSO (always on for Linux TCP) an skb
//!   carries up to 64 KB in page fragments and costs little more than its payload, so 4 MB holds
//!   about 4 MB of payload, and two-thirds of it (2.67 MB) is above the 2.3–2.4 MB windows BBR
//!   reaches on the bbr-dash 10 MB runs: a write finds more than one MSS unsent and Linux's
//!   default would not make these sessions app-limited. (Without GSO, 4.3 KB per 1448-byte
//!   segment, 4 MB would hold only 1.35 MB of payload and would bind.) So the model stays off by
//!   default: Linux's default does not clearly bind, and a cap set here stands for a server that
//!   pins `SO_SNDBUF` or writes without GSO; the bbr-dash controls sweep 2, 3 and 4 MB around
//!   the point where it starts to bind.
//!
//! The model. A cap of `bytes` of payload (not kernel memory: a skb's overhead is not
//! counted). The application writes whatever it has pending up to the cap; once a write
//! fills the buffer the application waits until queued ≤ ⅔ cap, then writes again. Queued
//! bytes are written minus delivered bytes; Linux frees memory only as the cumulative ACK
//! advances, so while a hole is open this frees a little sooner (equal with no loss). Each
//! write is one `sendmsg`, and makes the app-limited check first.

use crate::units::Bytes;

/// Linux's smallest send buffer (`SOCK_MIN_SNDBUF`, about 4.6 KB on 64-bit kernels).
pub const MIN_SEND_BUFFER: u64 = 4608;

/// Why a send buffer is refused.
#[derive(Debug, Clone, PartialEq)]
pub enum SendBufferError {
    TooSmall(Bytes),
}

impl std::fmt::Display for SendBufferError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SendBufferError::TooSmall(b) => write!(
                f,
                "a send buffer of {b} is below Linux's smallest ({MIN_SEND_BUFFER}B, SOCK_MIN_SNDBUF)"
            ),
        }
    }
}

impl std::error::Error for SendBufferError {}

/// The buffer's state; the sender owns the byte counts and asks it when to write.
#[derive(Debug, Clone)]
pub struct SendBuffer {
    cap: u64,
    /// The last write filled the buffer: wait until it is at most two-thirds full.
    waiting: bool,
    /// Writes (`sendmsg` calls) and the ones that marked the connection app-limited.
    pub writes: u64,
    pub app_limited_marks: u64,
}

impl SendBuffer {
    pub fn new(cap: Bytes) -> Result<SendBuffer, SendBufferError> {
        if cap.0 < MIN_SEND_BUFFER {
            return Err(SendBufferError::TooSmall(cap));
        }
        Ok(SendBuffer {
            cap: cap.0,
            waiting: false,
            writes: 0,
            app_limited_marks: 0,
        })
    }

    pub fn cap(&self) -> u64 {
        self.cap
    }

    /// Whether the application is woken (or not waiting) with `queued` bytes in the buffer:
    /// `sk_stream_is_writeable()`, free space ≥ half of what is queued.
    pub fn may_write(&mut self, queued: u64) -> bool {
        if self.waiting && queued.saturating_mul(3) <= self.cap.saturating_mul(2) {
            self.waiting = false;
        }
        !self.waiting && queued < self.cap
    }

    /// A write of up to `pending` bytes with `queued` in the buffer: how many it copies. Call
    /// only when [`SendBuffer::may_write`] said yes.
    pub fn write(&mut self, queued: u64, pending: u64) -> u64 {
        let n = pending.min(self.cap.saturating_sub(queued));
        self.writes += 1;
        if queued + n >= self.cap {
            self.waiting = true;
        }
        n
    }
}

/// `tcp_rate_check_app_limited()`'s test, on what the sender knows: less than one MSS of
/// written data unsent, room in the window, and no lost packet waiting for its retransmission.
pub fn app_limited_at_write(
    unsent: u64,
    mss_payload: u64,
    window_full: bool,
    losses_pending: bool,
) -> bool {
    unsent < mss_payload && !window_full && !losses_pending
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_fill_the_buffer_then_wait_until_it_is_two_thirds_full() {
        let mut b = SendBuffer::new(Bytes(3_000_000)).unwrap();
        assert!(b.may_write(0));
        assert_eq!(b.write(0, 10_000_000), 3_000_000);
        // Full: no write at 2.5 MB or at 2,000,001 bytes queued...
        assert!(!b.may_write(3_000_000));
        assert!(!b.may_write(2_500_000));
        assert!(!b.may_write(2_000_001));
        // ...and the wake-up at exactly two-thirds, for the third that is free.
        assert!(b.may_write(2_000_000));
        assert_eq!(b.write(2_000_000, 7_000_000), 1_000_000);
        assert!(!b.may_write(2_100_000));
        // A write that does not fill it leaves the application free to write again at once.
        assert!(b.may_write(1_000_000));
        assert_eq!(b.write(1_000_000, 500_000), 500_000);
        assert!(b.may_write(1_500_000));
        assert_eq!(b.writes, 3);
    }

    #[test]
    fn a_write_is_app_limited_only_with_less_than_an_mss_unsent_an_open_window_and_no_hole() {
        assert!(app_limited_at_write(0, 1448, false, false));
        assert!(app_limited_at_write(1447, 1448, false, false));
        assert!(!app_limited_at_write(1448, 1448, false, false));
        assert!(!app_limited_at_write(0, 1448, true, false));
        assert!(!app_limited_at_write(0, 1448, false, true));
    }

    #[test]
    fn a_buffer_below_linux_minimum_is_a_named_error() {
        assert_eq!(
            SendBuffer::new(Bytes(4000)).unwrap_err(),
            SendBufferError::TooSmall(Bytes(4000))
        );
    }
}
