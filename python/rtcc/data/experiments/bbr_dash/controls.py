"""Negative controls for the bbr-dash misses (docs/bbr_dash.md, "Negative controls").

    python3 experiments/bbr_dash/controls.py out/bd-controls            # every control x cell
    python3 experiments/bbr_dash/controls.py out/bd-controls -c netem100 -c none --cells 10MB-bbr2

Each control changes one thing of the E3 setup (25 Mbit/s tbf, 1 MB burst, 100 ms RTT, HTTP/2,
DYNAMIC, 800 s; experiments/bbr_dash/e3_buffer.toml) that the seed's testbed may have had and
rtcc does not by default:

- ``netem50`` / ``netem100``: a netem delay stage with netem's default 1,000-packet limit in front
  of the token bucket, holding the forward 50 ms (reverse 50 ms on the ACK path), or the whole
  100 ms (the reverse path then has none). The RTT stays 100 ms.
- ``sndbuf2MB`` / ``3MB`` / ``4MB``: the server's TCP send buffer (payload cap, writes at <= 2/3
  full, app-limited marking at each write).
- ``jitter``: sub-millisecond path jitter both ways, exponential of mean 100 us truncated at
  900 us, no reordering.
- ``all``: netem100 + sndbuf2MB + jitter.

The cells are the Table 2 / Q10MB / Q10KB-cubic cells of E3: queue 10 KB, 100 KB and 10 MB for
cubic, bbr and bbr2. Writes runs.csv (one row per run) and prints a compact table.
"""

from __future__ import annotations

import argparse
import csv
import math
import sys
import tempfile
from pathlib import Path

import polars as pl

import rtcc
from rtcc.sweep import parallel_map

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import tables  # noqa: E402  (the metrics of the reproduction, reused)

QUEUES = ("10KB", "100KB", "10MB")
CCS = ("cubic", "bbr", "bbr2")
JITTER = {"model": "sub-ms", "dist": "exponential", "mean": "100us", "max": "900us"}
NETEM_LIMIT = 1000
CONTROLS = ("none", "netem50", "netem100", "sndbuf2MB", "sndbuf3MB", "sndbuf4MB", "jitter", "all")
SIGNALS = ("timeouts", "loss_probes", "retransmissions", "sndbuf_writes", "sndbuf_app_limited_marks")


def base(queue: str, cc: str) -> dict:
    return {
        "name": f"bbr-dash-control-{queue}-{cc}",
        "duration": "800s",
        "path": {"forward": {"token_bucket": {"rate": "25Mbps", "burst": "1MB"}, "delay": "50ms", "queue": queue},
                 "reverse": {"delay": "50ms"}},
        "flows": [{"kind": "dash", "controller": cc}],
    }


def apply(data: dict, control: str) -> dict:
    fwd, rev, flow = data["path"]["forward"], data["path"]["reverse"], data["flows"][0]
    parts = ["netem100", "sndbuf2MB", "jitter"] if control == "all" else [control]
    for part in parts:
        if part == "netem50":
            fwd["delay"] = "0ms"
            fwd["netem"] = {"delay": "50ms", "limit": NETEM_LIMIT}
        elif part == "netem100":
            fwd["delay"], rev["delay"] = "0ms", "0ms"
            fwd["netem"] = {"delay": "100ms", "limit": NETEM_LIMIT}
        elif part.startswith("sndbuf"):
            flow["send_buffer"] = part.removeprefix("sndbuf")
        elif part == "jitter":
            fwd["jitter"] = dict(JITTER)
            rev["jitter"] = dict(JITTER)
        elif part != "none":
            raise ValueError(f"unknown control {part!r}; valid: {', '.join(CONTROLS)}")
    return data


def _last(state: pl.DataFrame, name: str) -> float:
    s = state.filter((pl.col("flow") == 0) & (pl.col("signal") == name))
    return float(s["value"].max()) if s.height else math.nan


def run_one(item: tuple[str, str, str]) -> dict:
    queue, cc, control = item
    data = apply(base(queue, cc), control)
    scenario = rtcc.Scenario.from_dict(data)
    fwd = data["path"]["forward"]
    netem_ms = tables._ms(fwd["netem"]["delay"]) if "netem" in fwd else 0.0
    reverse_ms = tables._ms(data["path"]["reverse"]["delay"])
    rtprop_ms = tables._ms(fwd["delay"]) + netem_ms + reverse_ms
    row = {"queue": queue, "controller": cc, "control": control}
    with tempfile.TemporaryDirectory(prefix="rtcc-bbr-dash-ctl-") as tmp:
        result = scenario.run(packets_to=Path(tmp) / "packets.parquet")
        summary = result.summary["flows"][0]
        row["goodput_mbps"] = summary["throughput_bps"] / 1e6 * tables.PAYLOAD_SHARE
        row["loss_pct"] = 100 * (summary.get("loss_rate") or 0.0)
        dash = summary.get("dash") or {}
        row.update(quality=dash.get("avg_quality"), stall_rate=dash.get("stall_rate"),
                   stalls=dash.get("stalls"), sample_mbps=dash.get("avg_throughput_mbps"))
        if cc in tables.BBR_FAMILY:
            row.update(tables._state_metrics(result.state, "bw_bps" if cc.startswith("bbr2") else "btl_bw_bps"))
        row.update(tables._rtt_metrics(result.packets, rtprop_ms, reverse_ms))
        for name in SIGNALS:
            row[name] = _last(result.state, name)
    return row


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path)
    ap.add_argument("-c", "--control", action="append", choices=CONTROLS)
    ap.add_argument("--cells", nargs="*", help="QUEUE-CC labels, e.g. 10MB-bbr2 (default: all nine)")
    ap.add_argument("-j", "--jobs", type=int, default=1)
    args = ap.parse_args(argv)
    cells = [(q, c) for q in QUEUES for c in CCS]
    if args.cells:
        cells = [tuple(x.split("-", 1)) for x in args.cells]
    items = [(q, c, k) for k in (args.control or CONTROLS) for q, c in cells]
    rows = parallel_map(run_one, items, args.jobs)
    args.out.mkdir(parents=True, exist_ok=True)
    keys = sorted({k for r in rows for k in r}, key=lambda k: (k not in ("queue", "controller", "control"), k))
    with open(args.out / "runs.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        w.writerows(rows)
    cols = ["control", "queue", "controller", "quality", "stall_rate", "goodput_mbps", "loss_pct", "startup_pct",
            "probe_rtt_pct", "bw_mean_mbps", "rtt_median_over_rtprop", "timeouts", "loss_probes", "retransmissions",
            "sndbuf_app_limited_marks", "link_dropped"]

    def fmt(v):
        if v is None or (isinstance(v, float) and math.isnan(v)):
            return "-"
        return f"{v:.3g}" if isinstance(v, float) else str(v)

    print(" | ".join(cols))
    for r in rows:
        print(" | ".join(fmt(r.get(c)) for c in cols))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
