//! The shell's plumbing: a network namespace joined to the host by two TUN devices.
//!
//! ```text
//!   host namespace                          the shell's namespace (new, anonymous)
//!   ──────────────                          ──────────────────────────────────────
//!   rtcc-<pid>  HOST_ADDR  ◄── emulator ──► rtcc0  SHELL_ADDR  (default route)   lo
//! ```
//!
//! The emulator reads each IP packet the shell sends from `rtcc0`, carries it over the uplink
//! model and writes it to `rtcc-<pid>`, where the host's kernel receives it (and the reverse over
//! the downlink). Programs inside reach the host at `HOST_ADDR` (the command gets it in
//! `RTCC_EMU_HOST`); the host reaches them at `SHELL_ADDR` (`RTCC_EMU_SHELL`). Neither forwarding
//! nor NAT is set up: the shell talks to the host it runs on, which is what tests and local
//! experiments need, and nothing is left to undo in the host's tables.
//!
//! Cleanup needs no code on the exit path, so it also happens when the shell is killed with
//! SIGKILL: both TUN devices are not persistent and vanish (with their addresses and routes) when
//! the emulator's descriptors close; the namespace is anonymous (no file under `/var/run/netns`)
//! and vanishes with its last process; the command runs as PID 1 of its own PID namespace under
//! an `unshare` that dies with the shell (`PR_SET_PDEATHSIG`) and takes it along, and with it
//! every process it started ([`Namespace::command`]). On a normal exit
//! [`Namespace::kill_stragglers`] also kills any process left in the network namespace.

use std::ffi::CString;
use std::fs::File;
use std::io;
use std::net::Ipv4Addr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::fs::MetadataExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;

/// `_IOW('T', 202, int)` from `<linux/if_tun.h>`.
const TUNSETIFF: libc::c_ulong = 0x4004_54ca;

/// The range the shells' addresses come from (RFC 6598 shared address space, as mahimahi uses).
const BASE: u32 = u32::from_be_bytes([100, 64, 0, 0]);
const SLOTS: u32 = 1 << 20; // /10 in blocks of 4

/// Each device's transmit queue, where packets wait for the emulator to read them.
const INTAKE_PACKETS: &str = "10000";

/// The interface inside the namespace.
pub const SHELL_IF: &str = "rtcc0";

/// A TUN device (no packet-information header: reads and writes are bare IP packets).
pub struct Tun {
    fd: OwnedFd,
    pub name: String,
}

impl Tun {
    /// Create `name` in the calling thread's network namespace, non-blocking.
    pub fn create(name: &str) -> io::Result<Tun> {
        let path = CString::new("/dev/net/tun").expect("no NUL");
        // SAFETY: a valid C string; the fd is checked and owned below.
        let fd = unsafe {
            libc::open(
                path.as_ptr(),
                libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC,
            )
        };
        if fd < 0 {
            let e = io::Error::last_os_error();
            return Err(io::Error::new(
                e.kind(),
                format!("cannot open /dev/net/tun: {e}"),
            ));
        }
        // SAFETY: `fd` was just opened and is owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: ifreq is plain data; all-zero is a valid value.
        let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
        for (dst, src) in req.ifr_name.iter_mut().zip(name.bytes().take(15)) {
            *dst = src as libc::c_char;
        }
        req.ifr_ifru.ifru_flags = (libc::IFF_TUN | libc::IFF_NO_PI) as libc::c_short;
        // SAFETY: TUNSETIFF reads an ifreq we own.
        if unsafe { libc::ioctl(fd.as_raw_fd(), TUNSETIFF, &mut req) } < 0 {
            let e = io::Error::last_os_error();
            return Err(io::Error::new(
                e.kind(),
                format!("cannot create TUN device {name}: {e}"),
            ));
        }
        Ok(Tun {
            fd,
            name: name.to_string(),
        })
    }

    pub fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Read one packet into `buf` (`Ok(None)` when none is waiting).
    pub fn read(&self, buf: &mut [u8]) -> io::Result<Option<usize>> {
        // SAFETY: `buf` is valid for `buf.len()` bytes.
        let n = unsafe { libc::read(self.fd(), buf.as_mut_ptr().cast(), buf.len()) };
        if n >= 0 {
            return Ok(Some(n as usize));
        }
        let e = io::Error::last_os_error();
        match e.kind() {
            io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => Ok(None),
            _ => Err(e),
        }
    }

    /// Write one packet; `false` if the kernel did not take it.
    pub fn write(&self, packet: &[u8]) -> bool {
        // SAFETY: `packet` is valid for its length.
        let n = unsafe { libc::write(self.fd(), packet.as_ptr().cast(), packet.len()) };
        n == packet.len() as isize
    }
}

/// The shell's namespace and the two devices that join it to the host.
pub struct Namespace {
    ns: OwnedFd,
    /// Inode of the namespace, to find processes inside it.
    ns_inode: u64,
    /// `rtcc0`, inside: the shell's packets are read here and the host's written here.
    pub inside: Tun,
    /// `rtcc-<pid>`, in the host's namespace.
    pub outside: Tun,
    pub host_addr: Ipv4Addr,
    pub shell_addr: Ipv4Addr,
}

impl Namespace {
    /// Create the namespace and both devices, give them addresses and routes. Needs root
    /// (CAP_NET_ADMIN and CAP_SYS_ADMIN).
    pub fn create() -> io::Result<Namespace> {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                "rtcc emu needs root (it creates a network namespace and TUN devices); run it with sudo",
            ));
        }
        let pid = std::process::id();
        let (host_addr, shell_addr) = free_addresses(pid)?;
        // The namespace is made by a short-lived thread, so this thread (possibly a Python
        // interpreter's main thread) never leaves the host's namespace. Network namespaces are
        // per thread; the namespace lives on through the descriptors the thread returns.
        let (ns, inside) = std::thread::spawn(|| -> io::Result<(OwnedFd, Tun)> {
            // SAFETY: unshare affects only this thread's network namespace.
            if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
                let e = io::Error::last_os_error();
                return Err(io::Error::new(
                    e.kind(),
                    format!("cannot create a network namespace: {e}"),
                ));
            }
            let inside = Tun::create(SHELL_IF)?;
            disable_ipv6(SHELL_IF);
            let ns = File::open("/proc/thread-self/ns/net")?;
            Ok((OwnedFd::from(ns), inside))
        })
        .join()
        .map_err(|_| io::Error::other("the namespace thread panicked"))??;
        let ns_inode = std::fs::metadata(format!("/proc/self/fd/{}", ns.as_raw_fd()))?.ino();
        let outside = Tun::create(&format!("rtcc-{pid}"))?;
        disable_ipv6(&outside.name);
        let me = Namespace {
            ns,
            ns_inode,
            inside,
            outside,
            host_addr,
            shell_addr,
        };
        let (h, s) = (host_addr.to_string(), shell_addr.to_string());
        let out = me.outside.name.clone();
        ip(None, &["addr", "add", &h, "peer", &s, "dev", &out])?;
        // A deep intake: packets wait here only while the emulator is busy, and a burst that
        // overflowed the default 500 would be a drop of the emulator's own.
        ip(
            None,
            &["link", "set", &out, "txqueuelen", INTAKE_PACKETS, "up"],
        )?;
        let ns = Some(me.ns.as_raw_fd());
        ip(ns, &["link", "set", "lo", "up"])?;
        ip(ns, &["addr", "add", &s, "peer", &h, "dev", SHELL_IF])?;
        ip(
            ns,
            &["link", "set", SHELL_IF, "txqueuelen", INTAKE_PACKETS, "up"],
        )?;
        ip(ns, &["route", "add", "default", "via", &h, "dev", SHELL_IF])?;
        Ok(me)
    }

    /// A command that runs inside the namespace, in a process group of its own, as PID 1 of a new
    /// PID namespace: `unshare --pid --fork --kill-child` runs it, and dies with the calling
    /// process (`PR_SET_PDEATHSIG`), killing it, and the kernel kills every process left in a PID
    /// namespace whose first process dies. So nothing the command started outlives the shell,
    /// even a SIGKILL of the shell. (As PID 1, the command receives only the signals it handles;
    /// its children receive all of them.) Add the command's arguments to the result.
    pub fn command(&self, program: &str) -> io::Result<Command> {
        find_program(program)?;
        let mut cmd = Command::new("unshare");
        cmd.args(["--pid", "--fork", "--kill-child", "--", program]);
        let ns = self.ns.as_raw_fd();
        let parent = std::process::id() as libc::pid_t;
        // SAFETY: only async-signal-safe calls between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                if libc::setns(ns, libc::CLONE_NEWNET) != 0 {
                    return Err(io::Error::last_os_error());
                }
                // Its own group, so a signal passed on reaches every process the command starts.
                if libc::setpgid(0, 0) != 0 {
                    return Err(io::Error::last_os_error());
                }
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(io::Error::last_os_error());
                }
                // The shell may have died between fork and prctl.
                if libc::getppid() != parent {
                    libc::_exit(1);
                }
                Ok(())
            });
        }
        cmd.env("RTCC_EMU_HOST", self.host_addr.to_string())
            .env("RTCC_EMU_SHELL", self.shell_addr.to_string());
        Ok(cmd)
    }

    /// Packets the kernel dropped because the emulator did not read them in time (each device's
    /// transmit drops), `[inside, outside]`: the emulator's own drops.
    pub fn intake_drops(&self) -> [Option<u64>; 2] {
        let ns = self.ns.as_raw_fd();
        let inside = std::thread::spawn(move || {
            // SAFETY: setns affects only this short-lived thread.
            if unsafe { libc::setns(ns, libc::CLONE_NEWNET) } != 0 {
                return None;
            }
            tx_dropped(SHELL_IF)
        })
        .join()
        .ok()
        .flatten();
        [inside, tx_dropped(&self.outside.name)]
    }

    /// Kill every process still inside the namespace (what the command left running).
    pub fn kill_stragglers(&self) -> usize {
        let mut killed = 0;
        let Ok(dir) = std::fs::read_dir("/proc") else {
            return 0;
        };
        for entry in dir.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|s| s.parse::<i32>().ok())
            else {
                continue;
            };
            let inode = std::fs::metadata(format!("/proc/{pid}/ns/net")).map(|m| m.ino());
            if inode.ok() == Some(self.ns_inode) {
                // SAFETY: kill has no memory-safety preconditions.
                unsafe { libc::kill(pid, libc::SIGKILL) };
                killed += 1;
            }
        }
        killed
    }
}

/// Check that `program` can be run (a path, or a name on `PATH`), so that a typo is reported by
/// name rather than by the `unshare` that would have run it.
fn find_program(program: &str) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let runnable = |p: &Path| {
        p.metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    let found = if program.contains('/') {
        runnable(Path::new(program))
    } else {
        std::env::var_os("PATH")
            .is_some_and(|path| std::env::split_paths(&path).any(|d| runnable(&d.join(program))))
    };
    if found {
        Ok(())
    } else {
        Err(io::Error::new(
            io::ErrorKind::NotFound,
            "not found, or not executable",
        ))
    }
}

/// Run `ip ARGS` (inside the namespace `ns` if given); an error carries ip's own message.
fn ip(ns: Option<RawFd>, args: &[&str]) -> io::Result<()> {
    let mut cmd = Command::new("ip");
    cmd.args(args);
    if let Some(ns) = ns {
        // SAFETY: setns is async-signal-safe.
        unsafe {
            cmd.pre_exec(move || {
                if libc::setns(ns, libc::CLONE_NEWNET) != 0 {
                    return Err(io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    let out = cmd.output().map_err(|e| {
        io::Error::new(
            e.kind(),
            format!("cannot run `ip` (iproute2 is needed): {e}"),
        )
    })?;
    if !out.status.success() {
        return Err(io::Error::other(format!(
            "`ip {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(())
}

/// The transmit drops of `interface` in the calling thread's namespace, from `/proc/net/dev`.
fn tx_dropped(interface: &str) -> Option<u64> {
    let text = std::fs::read_to_string("/proc/thread-self/net/dev").ok()?;
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with(&format!("{interface}:")))?;
    // name: rx bytes packets errs drop fifo frame compressed multicast, tx bytes packets errs drop
    let fields: Vec<&str> = line.split(':').nth(1)?.split_whitespace().collect();
    fields.get(11)?.parse().ok()
}

/// Stop the kernel from sending IPv6 router solicitations over a device (they would show up as
/// traffic on the emulated link). Best effort: a kernel without IPv6 has nothing to stop.
fn disable_ipv6(interface: &str) {
    let _ = std::fs::write(
        format!("/proc/sys/net/ipv6/conf/{interface}/disable_ipv6"),
        "1",
    );
}

/// A /30 of 100.64.0.0/10 no interface of the host uses, starting from one derived from `pid`.
fn free_addresses(pid: u32) -> io::Result<(Ipv4Addr, Ipv4Addr)> {
    let used = used_addresses();
    for k in 0..SLOTS {
        let slot = (pid.wrapping_mul(2_654_435_761) % SLOTS + k) % SLOTS;
        let base = BASE + 4 * slot;
        if !used.iter().any(|&a| a & !3 == base) {
            return Ok((Ipv4Addr::from(base + 1), Ipv4Addr::from(base + 2)));
        }
    }
    Err(io::Error::other("no free address block in 100.64.0.0/10"))
}

/// IPv4 addresses (local and peer) configured on the host's interfaces, from `ip -4 -o addr`.
fn used_addresses() -> Vec<u32> {
    let Ok(out) = Command::new("ip").args(["-4", "-o", "addr"]).output() else {
        return Vec::new();
    };
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .filter_map(|w| w.split('/').next()?.parse::<Ipv4Addr>().ok())
        .map(u32::from)
        .collect()
}
