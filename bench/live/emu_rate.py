"""How fast and how precisely `rtcc emu` carries packets (docs/live.md, the README's speed section).

    sudo python bench/live/emu_rate.py [--seconds 4] [--rates 100M,500M,1G,1500M,2G]

For each rate, iperf3 sends UDP at that rate (1400-byte datagrams) from inside the shell to a
server on the host, through an unlimited link (the emulator's own cost, nothing emulated that
could drop). Reported per rate: what iperf3 delivered and lost, the emulator's own drops
(packets the kernel dropped because the emulator did not read them in time, writes the kernel
refused), and how late packets were written against the model's delivery time (p50, p99, max).
A last row runs TCP (Cubic) unlimited, as fast as the pair of cores allows.

Every process of the run (iperf3 client and server, the emulator, the kernel's softirqs) shares
the machine's cores, so the numbers are for the whole system, not the emulator alone.
"""

from __future__ import annotations

import argparse
import json
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("0.0.0.0", 0))
        return s.getsockname()[1]


def run(client_args: str, seconds: float, logs: Path) -> tuple[dict, dict]:
    port = free_port()
    server = subprocess.Popen(["iperf3", "-s", "-1", "-p", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.3)
    out = logs / "iperf3.json"
    try:
        cmd = f'iperf3 -c "$RTCC_EMU_HOST" -p {port} -t {seconds} {client_args} -J > {out}'
        subprocess.run([sys.executable, "-m", "rtcc", "emu", "-q", "--log-dir", str(logs / "emu"),
                        "--", "sh", "-c", cmd], check=True, timeout=seconds + 60)
    finally:
        server.kill()
        server.wait()
    return json.loads(out.read_text()), json.loads((logs / "emu" / "emu.json").read_text())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=4)
    ap.add_argument("--rates", default="100M,500M,1G,1500M,2G")
    args = ap.parse_args()
    if shutil.which("iperf3") is None:
        print("iperf3 is needed (apt-get install iperf3)", file=sys.stderr)
        return 1
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        cases = [(r, f"-u -b {r} -l 1400 -w 4M") for r in args.rates.split(",")] + [("tcp", "-C cubic")]
        for name, client in cases:
            iperf, emu = run(client, args.seconds, Path(tmp))
            end = iperf["end"]
            if "sum" in end and name != "tcp":
                got, lost, sent = end["sum"]["bits_per_second"], end["sum"]["lost_packets"], end["sum"]["packets"]
            else:
                got, lost, sent = end["sum_received"]["bits_per_second"], end["sum_sent"]["retransmits"], None
            drops = emu["emulator_drops"]
            own = (drops["uplink_intake"] or 0) + (drops["downlink_intake"] or 0) + drops["failed_writes"]
            late = emu["delivery_lateness"]
            rows.append((name, got / 1e6, lost, sent, own, late["p50_us"], late["p99_us"], late["max_us"]))
    print("| offered | delivered (Mbit/s) | lost or retransmitted | emulator's own drops | lateness p50 (µs) | p99 (µs) | max (µs) |")
    print("|---|---|---|---|---|---|---|")
    for name, got, lost, sent, own, p50, p99, mx in rows:
        lost_text = f"{lost} of {sent}" if sent else f"{lost} retransmissions"
        print(f"| {name} | {got:.0f} | {lost_text} | {own} | {p50:.0f} | {p99:.0f} | {mx:.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
