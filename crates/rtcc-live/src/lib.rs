//! rtcc on real networks.
//!
//! - [`emu`]: `rtcc emu`, a link-emulator shell: a command runs in a network namespace whose
//!   traffic crosses rtcc-core's links, queues and impairments in real time (like mahimahi, with
//!   every queue discipline and capacity model the simulator has).
//! - [`transport`]: `rtcc send` / `rtcc recv`, one flow of a scenario as RTP and RTCP over
//!   UDP, its ends the simulator's own endpoints driven by a real-time loop.
//! - [`srtp`]: SRTP and SRTCP (RFC 3711) for the transport, keyed from a file or the environment.
//! - [`assemble`]: a live run's logs as a run of the simulator's shape, summarised by the same code.
//! - [`cli`]: the command line shared by the `rtcc-live` binary and the Python front's
//!   `rtcc emu`.
//!
//! Linux only: namespaces, TUN devices and `ppoll`. `docs/live.md` is the user's guide and has
//! the measured accuracy and speed.

pub mod assemble;
pub mod capture;
pub mod cli;
pub mod clock;
pub mod emu;
pub mod signals;
pub mod srtp;
pub mod transport;
