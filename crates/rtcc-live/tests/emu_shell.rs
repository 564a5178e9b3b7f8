//! `rtcc-live emu` as a user runs it: packets cross, and every exit path (the command's own exit,
//! a failure to start it, SIGINT, SIGTERM, and SIGKILL of the shell itself) leaves no
//! interface, address, route, rule, namespace or process behind.
//!
//! Needs root, TUN and network namespaces; on a machine without them each test says why it is
//! skipped and passes.

use std::collections::BTreeSet;
use std::process::{Child, Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_rtcc-live");

/// Why the live tests cannot run here, if they cannot.
fn unavailable() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("not root".into());
    }
    if !std::path::Path::new("/dev/net/tun").exists() {
        return Some("no /dev/net/tun".into());
    }
    let ok = Command::new("unshare")
        .args(["--net", "true"])
        .status()
        .is_ok_and(|s| s.success());
    (!ok).then(|| "cannot create network namespaces".into())
}

/// The tests compare the host's whole network state before and after, so they run one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

macro_rules! require_live {
    () => {
        let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(why) = unavailable() {
            eprintln!("skipped: {why}");
            return;
        }
    };
}

/// What the host's network looks like: interfaces, IPv4 routes and rules, and the set of
/// network namespaces in use (by inode).
#[derive(Debug, PartialEq, Eq)]
struct NetState {
    links: BTreeSet<String>,
    routes: BTreeSet<String>,
    rules: BTreeSet<String>,
    namespaces: BTreeSet<u64>,
}

fn lines(args: &[&str]) -> BTreeSet<String> {
    let out = Command::new("ip").args(args).output().expect("ip runs");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

fn net_state() -> NetState {
    use std::os::unix::fs::MetadataExt;
    let links = lines(&["-o", "link"])
        .into_iter()
        .filter_map(|l| l.split(':').nth(1).map(|n| n.trim().to_string()))
        .collect();
    let namespaces = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::metadata(e.path().join("ns/net")).ok())
        .map(|m| m.ino())
        .collect();
    NetState {
        links,
        routes: lines(&["route"]),
        rules: lines(&["rule"]),
        namespaces,
    }
}

fn shell_interface(child: &Child) -> String {
    format!("rtcc-{}", child.id())
}

/// Wait until the shell's host-side interface exists (the shell is set up).
fn wait_until_up(child: &Child) {
    let name = shell_interface(child);
    let t0 = Instant::now();
    while !net_state().links.contains(&name) {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "the shell never created {name}"
        );
        sleep(Duration::from_millis(20));
    }
}

/// Wait for the state to return to `before` (processes take a moment to be reaped).
fn assert_clean(before: &NetState, what: &str) {
    let t0 = Instant::now();
    loop {
        let now = net_state();
        if now.links == before.links
            && now.routes == before.routes
            && now.rules == before.rules
            && now.namespaces.is_subset(&before.namespaces)
        {
            return;
        }
        if t0.elapsed() > Duration::from_secs(5) {
            panic!("{what} left state behind:\nbefore {before:#?}\nafter {now:#?}");
        }
        sleep(Duration::from_millis(20));
    }
}

fn start(args: &[&str]) -> Child {
    Command::new(BIN)
        .arg("emu")
        .arg("-q")
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("rtcc-live starts")
}

#[test]
fn the_command_runs_inside_and_its_exit_status_is_the_shells() {
    require_live!();
    let before = net_state();
    // Inside: only lo and rtcc0, a default route, and the host's address in the environment.
    let out = Command::new(BIN)
        .args(["emu", "-q", "--delay", "5ms", "--"])
        .args([
            "sh",
            "-c",
            "ip -o link | wc -l; ip route | grep -c default; test -n \"$RTCC_EMU_HOST\"; exit 7",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(7), "the command's exit status");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        text.split_whitespace().collect::<Vec<_>>(),
        ["2", "1"],
        "two interfaces and one default route inside"
    );
    assert_clean(&before, "a normal exit");
}

#[test]
fn a_command_that_cannot_start_is_a_clear_error_and_leaves_nothing() {
    require_live!();
    let before = net_state();
    let out = Command::new(BIN)
        .args(["emu", "-q", "--", "/nonexistent/program"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("cannot run `/nonexistent/program`"),
        "the error names the command: {err}"
    );
    assert_clean(&before, "a failed start");
}

#[test]
fn signals_reach_the_command_and_the_shell_cleans_up() {
    require_live!();
    for (sig, name) in [(libc::SIGINT, "SIGINT"), (libc::SIGTERM, "SIGTERM")] {
        let before = net_state();
        // The command handles the signal; the child it waits for gets it too (the group's). It
        // says when its handler is in place: a signal before that would end it with 128 + sig.
        let ready =
            std::env::temp_dir().join(format!("rtcc-emu-ready-{}-{sig}", std::process::id()));
        let _ = std::fs::remove_file(&ready);
        let script = format!(
            "trap 'exit 7' INT TERM; touch '{}'; sleep 30 & wait",
            ready.display()
        );
        let child = start(&["--", "sh", "-c", &script]);
        wait_until_up(&child);
        let t0 = Instant::now();
        while !ready.exists() {
            assert!(
                t0.elapsed() < Duration::from_secs(10),
                "the command never started"
            );
            sleep(Duration::from_millis(20));
        }
        let _ = std::fs::remove_file(&ready);
        // SAFETY: kill has no memory-safety preconditions.
        unsafe { libc::kill(child.id() as i32, sig) };
        let out = child.wait_with_output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(7),
            "{name}: the command's handler ran and its status is the shell's"
        );
        assert_clean(&before, name);
    }
}

#[test]
fn a_command_that_ignores_the_signal_is_killed_after_the_grace_period() {
    require_live!();
    let before = net_state();
    // `sleep` has no handler; as PID 1 of its PID namespace it does not die of SIGTERM.
    let child = start(&["--", "sleep", "30"]);
    wait_until_up(&child);
    let t0 = Instant::now();
    // SAFETY: kill has no memory-safety preconditions.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(128 + libc::SIGKILL));
    assert!(
        t0.elapsed() < Duration::from_secs(6),
        "SIGKILL comes 2 s after the signal, not at the command's leisure"
    );
    assert_clean(&before, "SIGTERM then SIGKILL");
}

#[test]
fn sigkill_of_the_shell_leaves_nothing_behind() {
    require_live!();
    let before = net_state();
    // A command, and a process it starts, that would outlive the shell if nothing stopped them.
    let mut child = start(&["--", "sh", "-c", "sleep 31.337; true"]);
    wait_until_up(&child);
    child.kill().unwrap(); // SIGKILL: no code of the shell runs
    child.wait().unwrap();
    assert_clean(&before, "SIGKILL of the shell");
    let t0 = Instant::now();
    loop {
        let left = Command::new("pgrep")
            .args(["-f", "sleep 31.337"])
            .output()
            .unwrap();
        if left.stdout.is_empty() {
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(5),
            "the command outlived its shell"
        );
        sleep(Duration::from_millis(20));
    }
}
