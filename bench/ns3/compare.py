"""Run the same TCP dumbbell in ns-3 and in rtcc and compare goodput, queuing delay and loss.

Cases (all 20 Mbit/s, 40 ms RTT, 60 s, TCP Cubic with delayed ACKs, 1500-byte IP packets):
one flow and ten flows through a 120 ms drop-tail queue (200 packets), and one flow through CoDel
and through PIE (1000-packet limits, each simulator's default parameters).

Needs ns-3's development files (Debian: ``apt-get install libns3-dev libgsl-dev pkg-config``); the
ns-3 program ``dumbbell.cc`` next to this file is compiled into ``build/`` on first use.

    python3 bench/ns3/compare.py [--seeds 3] [--out bench/ns3/results.md]

Goodput: ns-3 counts the payload its sinks received (1460-byte segments, 1500-byte IP packets,
plus ns-3's 2-byte point-to-point header on the wire); rtcc counts IP bytes, so its number is scaled
by 1460/1500. Queuing delay: ns-3's queue-disc sojourn time (enqueue to hand-over to the device);
rtcc's bottleneck sojourn minus the packet's own transmission time (0.6 ms at 20 Mbit/s), the same
interval. Loss: packets dropped at the bottleneck over packets offered to it.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT / "python"))

import rtcc  # noqa: E402

CASES = [
    # label, flows, queue kind, ns-3 limit (packets), rtcc queue
    ("1 cubic, drop-tail 120 ms", 1, "droptail", 200, "200pkts"),
    ("10 cubic, drop-tail 120 ms", 10, "droptail", 200, "200pkts"),
    ("1 cubic, CoDel", 1, "codel", 1000, {"kind": "codel", "limit": "1000pkts"}),
    ("1 cubic, PIE", 1, "pie", 1000, {"kind": "pie", "limit": "1000pkts"}),
]
PAYLOAD_SHARE = 1460 / 1500


def build_ns3() -> Path:
    binary = HERE / "build" / "dumbbell"
    source = HERE / "dumbbell.cc"
    if binary.exists() and binary.stat().st_mtime >= source.stat().st_mtime:
        return binary
    binary.parent.mkdir(exist_ok=True)
    libs = "ns3-core ns3-network ns3-internet ns3-point-to-point ns3-applications ns3-traffic-control"
    try:
        flags = subprocess.run(["pkg-config", "--cflags", "--libs", *libs.split()], check=True,
                               capture_output=True, text=True).stdout.split()
    except (OSError, subprocess.CalledProcessError) as e:
        sys.exit(f"compare.py: ns-3 development files not found ({e}); install libns3-dev libgsl-dev pkg-config")
    subprocess.run(["g++", "-O2", "-std=c++17", "-o", str(binary), str(source), *flags], check=True)
    return binary


def run_ns3(binary: Path, flows: int, queue: str, limit: int, seed: int) -> dict:
    out = subprocess.run([str(binary), f"--flows={flows}", f"--queue={queue}", f"--limit={limit}",
                          "--rate=20Mbps", "--rtt=40", "--duration=60", f"--seed={seed}"],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def run_rtcc(flows: int, queue, seed: int) -> dict:
    scenario = rtcc.Scenario(
        duration="60s",
        seed=seed,
        forward={"capacity": "20Mbps", "delay": "20ms", "queue": queue},
        flows=[{"name": f"cubic{i}", "kind": "tcp", "controller": "cubic", "delayed_ack": True,
                "start": f"{i}ms"} for i in range(flows)],
        name="ns3-comparison",
    )
    t0 = time.perf_counter()
    result = scenario.run()
    wall = time.perf_counter() - t0
    packets = result.packets
    total = result.summary["total"]
    departed = packets.filter(packets["depart_ns"] >= 0)
    own_transmission_ns = departed["size"] * 8 / 20e6 * 1e9
    queuing_ms = ((departed["depart_ns"] - departed["enqueue_ns"] - own_transmission_ns) / 1e6).mean()
    return {"goodput_bps": total["throughput_bps"] * PAYLOAD_SHARE, "mean_queuing_ms": queuing_ms,
            "loss": total["loss_rate"], "wall_seconds": wall}


def mean(runs: list[dict], key: str) -> float:
    return statistics.fmean(r[key] for r in runs)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--out", type=Path, default=None, help="also write the table (Markdown) here")
    args = ap.parse_args()
    binary = build_ns3()
    lines = [
        "| case | goodput ns-3 | goodput rtcc | Δ | queuing ns-3 | queuing rtcc | Δ | loss ns-3 | loss rtcc | wall ns-3 | wall rtcc |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for label, flows, kind, limit, queue in CASES:
        ns = [run_ns3(binary, flows, kind, limit, s) for s in range(1, args.seeds + 1)]
        rt = [run_rtcc(flows, queue, s) for s in range(1, args.seeds + 1)]
        g_ns, g_rt = mean(ns, "goodput_bps"), mean(rt, "goodput_bps")
        q_ns, q_rt = mean(ns, "mean_queuing_ms"), mean(rt, "mean_queuing_ms")
        lines.append(
            f"| {label} | {g_ns / 1e6:.2f} Mbit/s | {g_rt / 1e6:.2f} Mbit/s | {100 * (g_rt - g_ns) / g_ns:+.1f} % "
            f"| {q_ns:.1f} ms | {q_rt:.1f} ms | {100 * (q_rt - q_ns) / q_ns:+.0f} % "
            f"| {100 * mean(ns, 'loss'):.3f} % | {100 * mean(rt, 'loss'):.3f} % "
            f"| {mean(ns, 'wall_seconds'):.2f} s | {mean(rt, 'wall_seconds'):.3f} s |"
        )
        print(lines[-1], flush=True)
    table = "\n".join(lines) + "\n"
    if args.out:
        args.out.write_text(table)
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
