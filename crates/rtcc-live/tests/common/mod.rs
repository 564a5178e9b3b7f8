//! Runs a scenario flow between a live sender and receiver on 127.0.0.1, each loop in a thread
//! of the test, both on one clock (so that their logs and the test's own instants compare).

// Each test binary that includes this module uses part of it.
#![allow(dead_code)]

use rtcc_core::Duration;
use rtcc_live::clock::Clock;
use rtcc_live::srtp::Keying;
use rtcc_live::transport::{live_flow, run, sender_schedule, Handle, Options, Role};
use rtcc_sim::Scenario;
use serde_json::Value;
use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::thread::JoinHandle;

/// A folder under the system's temporary folder, removed when dropped.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        let p = std::env::temp_dir().join(format!("rtcc-live-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Both ends of a running flow.
pub struct Running {
    pub clock: Clock,
    pub sender: Arc<Handle>,
    pub receiver: Arc<Handle>,
    pub sender_addr: SocketAddr,
    pub receiver_addr: SocketAddr,
    send_loop: JoinHandle<io::Result<Value>>,
    recv_loop: JoinHandle<io::Result<Value>>,
}

impl Running {
    /// Wait for both loops to end; their summaries `(send, recv)`. A panic in a loop fails the
    /// test here.
    pub fn join(self) -> (Value, Value) {
        let send = self.send_loop.join().expect("the sender's loop panicked");
        let recv = self.recv_loop.join().expect("the receiver's loop panicked");
        (send.expect("sender"), recv.expect("receiver"))
    }
}

/// Start flow 0 of `scenario` (TOML), with `controller` replacing its controller if given: the
/// receiver for `recv_for`, then the sender for `send_for`, logging into `logs/send` and
/// `logs/recv`.
pub fn start(
    scenario: &str,
    controller: Option<&str>,
    logs: &Path,
    send_for: Duration,
    recv_for: Duration,
) -> Running {
    start_with(
        scenario,
        controller,
        logs,
        send_for,
        recv_for,
        false,
        None,
        |_| {},
    )
}

/// [`start`], the receiver told its sender's address (`--peer`) if `pin`, both ends speaking
/// SRTP with `srtp` if given, and `before_send` run with the receiver's address once the
/// receiver's loop runs and before the sender starts.
#[allow(clippy::too_many_arguments)]
pub fn start_with(
    scenario: &str,
    controller: Option<&str>,
    logs: &Path,
    send_for: Duration,
    recv_for: Duration,
    pin: bool,
    srtp: Option<Keying>,
    before_send: impl FnOnce(SocketAddr),
) -> Running {
    let sc = Scenario::from_toml_str(scenario, Path::new("."), "test", None).unwrap();
    let (f, [sender, receiver]) = live_flow(&sc, 0, controller, srtp.as_ref()).unwrap();
    let clock = Clock::new();
    let send_socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    let recv_socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    let sender_addr = send_socket.local_addr().unwrap();
    let receiver_addr = recv_socket.local_addr().unwrap();
    let options = |role, peer, duration, dir: &str, schedule| Options {
        role,
        flow: 0,
        peer,
        expect_peer: (pin && role == Role::Recv).then_some(sender_addr),
        srtp: srtp.clone(),
        duration,
        schedule,
        log_dir: Some(logs.join(dir)),
        pcap: None,
        clock,
        handle: Arc::new(Handle::default()),
        describe: Default::default(),
    };
    let recv_options = options(Role::Recv, None, recv_for, "recv", Vec::new());
    let send_options = options(
        Role::Send,
        Some(receiver_addr),
        send_for,
        "send",
        sender_schedule(&f),
    );
    let (sender_handle, receiver_handle) =
        (send_options.handle.clone(), recv_options.handle.clone());
    let recv_loop = std::thread::spawn(move || run(receiver, recv_socket, recv_options));
    before_send(receiver_addr);
    let send_loop = std::thread::spawn(move || run(sender, send_socket, send_options));
    Running {
        clock,
        sender: sender_handle,
        receiver: receiver_handle,
        sender_addr,
        receiver_addr,
        send_loop,
        recv_loop,
    }
}

/// The rows of a CSV log (header first), split at commas.
pub fn csv(path: &Path) -> Vec<Vec<String>> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .map(|l| l.split(',').map(str::to_string).collect())
        .collect()
}
