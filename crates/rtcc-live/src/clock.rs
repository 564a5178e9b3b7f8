//! Real time for the sans-IO core: a monotonic clock, and a wait for readable descriptors with a
//! nanosecond deadline.
//!
//! The event loops are plain `ppoll(2)` loops, one thread each. `ppoll` takes its timeout in
//! nanoseconds (`poll` and `epoll_wait` only in milliseconds), and the loop sets its thread's
//! timer slack to 1 ns (`PR_SET_TIMERSLACK`; the default 50 µs would be added to every wake-up).
//! The last [`SPIN`] before a deadline are spent polling without sleeping, which trades some CPU
//! for wake-ups within a few microseconds of the deadline (`docs/live.md` has the measured
//! precision).

use rtcc_core::{Duration, Time};
use std::os::fd::RawFd;

/// How long before a deadline the loop stops sleeping and polls instead.
pub const SPIN: Duration = Duration(50_000);

/// `CLOCK_MONOTONIC`, as rtcc [`Time`] since the clock was made.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    origin_ns: u64,
}

/// `CLOCK_MONOTONIC` in nanoseconds (shared by every process on the host).
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec to write into.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

impl Clock {
    pub fn new() -> Clock {
        Clock {
            origin_ns: monotonic_ns(),
        }
    }

    /// A clock whose zero is `origin_ns` of `CLOCK_MONOTONIC` (shared by processes on one host,
    /// so a sender's and a receiver's logs line up).
    pub fn with_origin(origin_ns: u64) -> Clock {
        Clock { origin_ns }
    }

    pub fn origin_ns(&self) -> u64 {
        self.origin_ns
    }

    pub fn now(&self) -> Time {
        Time(monotonic_ns().saturating_sub(self.origin_ns))
    }
}

impl Default for Clock {
    fn default() -> Self {
        Clock::new()
    }
}

/// Make this thread's timers as precise as the kernel allows.
pub fn precise_timers() {
    // SAFETY: prctl with PR_SET_TIMERSLACK has no memory-safety preconditions.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong) };
}

/// Wait until one of `fds` is readable or `deadline` passes (`None`: no deadline), at most
/// `max_wait`. Returns the readiness of each descriptor. A signal ends the wait early (with
/// nothing ready), so the caller can look at its signal flags.
pub fn wait<const N: usize>(
    clock: &Clock,
    fds: [RawFd; N],
    deadline: Option<Time>,
    max_wait: Duration,
) -> [bool; N] {
    let mut pfds = fds.map(|fd| libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    });
    // Real nanoseconds until the deadline: the clock reads zero until its origin, so the
    // distance is taken from the raw monotonic clock.
    let wait = match deadline {
        Some(d) => Duration((clock.origin_ns + d.0).saturating_sub(monotonic_ns())).min(max_wait),
        None => max_wait,
    };
    // Close to the deadline: look without sleeping.
    let sleep = if wait <= SPIN {
        Duration::ZERO
    } else {
        Duration(wait.0 - SPIN.0)
    };
    let ts = libc::timespec {
        tv_sec: (sleep.0 / 1_000_000_000) as libc::time_t,
        tv_nsec: (sleep.0 % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: `pfds` is a valid array of `pfds.len()` pollfds; `ts` outlives the call.
    let n = unsafe {
        libc::ppoll(
            pfds.as_mut_ptr(),
            pfds.len() as libc::nfds_t,
            &ts,
            std::ptr::null(),
        )
    };
    if n <= 0 {
        return [false; N];
    }
    pfds.map(|p| p.revents & (libc::POLLIN | libc::POLLERR | libc::POLLHUP) != 0)
}
