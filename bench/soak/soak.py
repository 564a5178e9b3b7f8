#!/usr/bin/env python3
"""Soak runs: does rtcc stay flat over an hour? Not part of the tests (an hour each).

    python3 bench/soak/soak.py live -o out/soak-live   # needs root (rtcc emu)
    python3 bench/soak/soak.py sim -o out/soak-sim
    python3 bench/soak/soak.py live -o out/x --duration 120 --outage-every 30   # a short rehearsal

``live``: one gcc flow through ``rtcc emu`` for an hour on a 10 Mbit/s link (20 ms each way, a
100 ms drop-tail queue) whose capacity drops to nothing for 5 s every 5 minutes, while a hostile
sender on the host sends the receiver 500 datagrams a second (random bytes, and the flow's own RTP
header with random sequence numbers, transport-wide numbers and frame ids). Every 10 s it records the
resident memory of the receiver, the emulator and the sender, and the sender logs its loop's
lateness over each 10 s (``loop_lateness_p99_us`` in its state log). ``sim``: one 100 Mbit/s flow
simulated for an hour (``rtcc run``, plots off), its resident memory every second.

Writes ``memory.csv`` (``t_s,process,rss_mb``), ``lateness.csv`` (live: ``t_s,p99_us,max_us``), a
plot ``soak.png`` and ``soak.json`` (first and last readings, growth) into the output folder. It
uses the ``rtcc-live`` binary next to the build (``--rtcc-live``, default
``target/release/rtcc-live`` or ``$CARGO_TARGET_DIR/release/rtcc-live``) for the live run, and
``python -m rtcc`` for the simulated one.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent


def rss_mb(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def children(pid: int) -> list[int]:
    """Every descendant of ``pid``."""
    kids: dict[int, list[int]] = {}
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                ppid = int((p / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            kids.setdefault(ppid, []).append(int(p.name))
    out, todo = [], [pid]
    while todo:
        for k in kids.get(todo.pop(), []):
            out.append(k)
            todo.append(k)
    return out


def comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def scenario_text(duration_s: int, outage_every_s: int, outage_s: int) -> str:
    steps = [["0s", "10Mbps"]]
    t = outage_every_s
    while t < duration_s:
        steps += [[f"{t}s", "0Mbps"], [f"{t + outage_s}s", "10Mbps"]]
        t += outage_every_s
    schedule = ", ".join(f'["{a}", "{b}"]' for a, b in steps)
    return (f'duration = "{duration_s + 5}s"\nseed = 1\n[path.forward]\nschedule = [{schedule}]\n'
            f'delay = "20ms"\nqueue = "100ms"\n[path.reverse]\ndelay = "20ms"\n'
            f'[[flows]]\ncontroller = "gcc"\nstop = "{duration_s}s"\n')


def hostile(port: int, rate: int, stop: threading.Event, sent: list[int]) -> None:
    """Random bytes and the flow's RTP header (flow 0's media SSRC) with random numbers."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    rng = random.Random(7)
    ssrc = 0x5254_0000
    period = 1 / rate
    next_at = time.monotonic()
    while not stop.is_set():
        if rng.random() < 0.5:
            data = rng.randbytes(rng.randrange(1, 1400))
        else:  # version 2, payload type 96, a one-byte-extension header as the flow's
            data = struct.pack("!BBHII", 0x90, 96, rng.randrange(65536), rng.randrange(1 << 32), ssrc)
            data += bytes([0xBE, 0xDE, 0, 1, 0x12, rng.randrange(256), rng.randrange(256), 0]) + rng.randbytes(1100)
        sock.sendto(data, ("127.0.0.1", port))
        sent[0] += 1
        next_at += period
        delay = next_at - time.monotonic()
        if delay > 0:
            time.sleep(delay)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def live(args, out: Path) -> dict:
    binary = args.rtcc_live
    sc = out / "soak.toml"
    sc.write_text(scenario_text(args.duration, args.outage_every, 5))
    port = free_port()
    common = ["--scenario", str(sc), "-q"]
    recv = subprocess.Popen([binary, "recv", *common, "--listen", f"0.0.0.0:{port}", "--log-dir", str(out / "recv"),
                             "--duration", f"{args.duration + 30}s"])
    time.sleep(0.5)
    inner = (f'{binary} send --scenario {sc} -q --to "$RTCC_EMU_HOST:{port}" '
             f'--clock-origin-ns "$RTCC_EMU_CLOCK_ORIGIN_NS" --log-dir {out / "send"}')
    emu = subprocess.Popen([binary, "emu", "-q", "--scenario", str(sc), "--start-delay", "1s", "--", "sh", "-c", inner])
    stop, sent = threading.Event(), [0]
    flood = threading.Thread(target=hostile, args=(port, args.hostile_rate, stop, sent), daemon=True)
    time.sleep(3)  # the sender is pinned by then; the hostile sender comes after it, as a third party
    flood.start()
    rows, t0 = [], time.monotonic()
    try:
        while emu.poll() is None:
            t = time.monotonic() - t0
            procs = {"recv": recv.pid, "emu": emu.pid}
            for kid in children(emu.pid):
                if " send " in f" {comm(kid)} ":
                    procs["send"] = kid
            for name, pid in procs.items():
                rss = rss_mb(pid)
                if rss is not None:
                    rows.append((round(t, 1), name, round(rss, 2)))
            time.sleep(args.every)
    finally:
        stop.set()
        if emu.poll() is None:
            emu.send_signal(signal.SIGINT)
        emu.wait()
        time.sleep(1)
        recv.send_signal(signal.SIGINT)
        recv.wait()
    lateness = []
    state = out / "send" / "state.csv"
    if state.exists():
        p99 = {}
        for line in state.read_text().splitlines()[1:]:
            t_ns, name, value = line.split(",")
            if name.startswith("loop_lateness_"):
                p99.setdefault(int(t_ns), {})[name] = float(value)
        lateness = [(round(t / 1e9, 1), v.get("loop_lateness_p99_us"), v.get("loop_lateness_max_us"))
                    for t, v in sorted(p99.items())]
    with open(out / "lateness.csv", "w") as f:
        f.write("t_s,p99_us,max_us\n" + "".join(f"{a},{b},{c}\n" for a, b, c in lateness))
    recv_summary = json.loads((out / "recv" / "recv.json").read_text())
    send_summary = json.loads((out / "send" / "send.json").read_text())
    return {"rows": rows, "lateness": lateness, "hostile_sent": sent[0],
            "receiver": {k: recv_summary.get(k) for k in ("foreign_datagrams", "malformed", "discarded", "arrivals",
                                                          "frames_displayed", "frames_given_up", "peer")},
            "sender": {k: send_summary.get(k) for k in ("packets", "sent_mbps", "datagrams_received", "lateness")}}


def sim(args, out: Path) -> dict:
    sc = out / "soak-sim.toml"
    sc.write_text(f'duration = "{args.duration}s"\nseed = 1\n[path.forward]\ncapacity = "110Mbps"\ndelay = "20ms"\n'
                  f'queue = "50ms"\n[[flows]]\ncontroller = "fixed"\nparams = {{ rate = "100Mbps" }}\n')
    proc = subprocess.Popen([sys.executable, "-m", "rtcc", "run", str(sc), "-o", str(out / "run"), "--no-plots",
                             "--allow-large", "--force"], cwd=ROOT)
    rows, t0 = [], time.monotonic()
    while proc.poll() is None:
        rss = rss_mb(proc.pid)
        if rss:  # None or 0 while the process starts or exits
            rows.append((round(time.monotonic() - t0, 1), "rtcc run", round(rss, 2)))
        time.sleep(args.every)
    return {"rows": rows, "exit": proc.returncode, "wall_s": round(time.monotonic() - t0, 1)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("kind", choices=["live", "sim"])
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--duration", type=int, default=3600, help="seconds (default 3600)")
    ap.add_argument("--outage-every", type=int, default=300, help="live: seconds between 5 s outages")
    ap.add_argument("--hostile-rate", type=int, default=500, help="live: hostile datagrams a second")
    ap.add_argument("--every", type=float, default=None, help="seconds between memory readings")
    target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    ap.add_argument("--rtcc-live", default=str(target / "release" / "rtcc-live"))
    args = ap.parse_args()
    args.every = args.every or (10.0 if args.kind == "live" else 1.0)
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    result = live(args, out) if args.kind == "live" else sim(args, out)
    rows = result.pop("rows")
    with open(out / "memory.csv", "w") as f:
        f.write("t_s,process,rss_mb\n" + "".join(f"{t},{p},{m}\n" for t, p, m in rows))
    growth = {}
    for name in sorted({p for _, p, _ in rows}):
        series = [(t, m) for t, p, m in rows if p == name]
        # After the first 10 minutes (two outages: the allocator keeps the first outage's peak), or
        # the first quarter of a shorter run (the simulated hour takes seconds of wall time).
        settled = [m for t, m in series if t >= min(600, series[-1][0] / 4)]
        if settled:
            growth[name] = {"after_warm_up_mb": settled[0], "end_mb": settled[-1], "max_mb": max(settled),
                            "growth_pct": round((settled[-1] / settled[0] - 1) * 100, 1)}
    result["memory"] = growth
    lat = result.get("lateness") or []
    if lat:
        tenth = max(1, len(lat) // 6)
        firsts = sorted(p for _, p, _ in lat[:tenth] if p is not None)
        lasts = sorted(p for _, p, _ in lat[-tenth:] if p is not None)
        result["lateness_p99_us"] = {"first_10_min_median": firsts[len(firsts) // 2] if firsts else None,
                                     "last_10_min_median": lasts[len(lasts) // 2] if lasts else None,
                                     "max_window": max(p for _, p, _ in lat if p is not None)}
        result.pop("lateness")
    (out / "soak.json").write_text(json.dumps(result, indent=2) + "\n")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        panels = 2 if lat else 1
        fig, axes = plt.subplots(panels, 1, figsize=(8, 3 * panels), squeeze=False)
        scale, unit = (60, "minutes") if rows and rows[-1][0] > 120 else (1, "seconds")
        for name in sorted({p for _, p, _ in rows}):
            series = [(t / scale, m) for t, p, m in rows if p == name]
            axes[0][0].plot(*zip(*series), label=name)
        title = "memory" if args.kind == "live" else f"memory while {args.duration} s are simulated"
        axes[0][0].set(xlabel=f"wall {unit}", ylabel="resident MB", title=f"{args.kind} soak: {title}")
        axes[0][0].legend(loc="upper left")
        if lat:
            axes[1][0].plot([t / 60 for t, _, _ in lat], [p for _, p, _ in lat], label="p99 per 10 s")
            axes[1][0].set(xlabel="minutes", ylabel="µs", yscale="log", title="sender loop lateness")
            axes[1][0].legend(loc="upper left")
        fig.tight_layout()
        fig.savefig(out / "soak.png", dpi=90)
    except ImportError:
        pass
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
