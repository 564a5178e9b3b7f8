"""GCC's detector on a cellular trace: why it uses so little of the link.

    python3 experiments/cellular/signals.py TRACE -o docs/img/cellular-gcc-signals.png [--seconds 60]

Runs the `gcc` (`webrtc` profile) flow of experiments/cellular/lte.toml on TRACE and plots, on one
time axis: the link's capacity (100 ms means) with gcc's target, delay-based estimate, acknowledged
rate and link-capacity estimate; the trendline's scaled slope against the adaptive threshold γ with
every over-use marked; and the time the flow's packets spend in the bottleneck queue. Prints the
over-use episodes and what followed each.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import polars as pl

from rtcc.scenario import Scenario

HERE = Path(__file__).resolve().parent


def run(trace: Path, seconds: float):
    from rtcc import _toml as tomllib

    data = tomllib.loads((HERE / "lte.toml").read_text())["scenario"]  # the sweep's base scenario
    data["path"]["forward"]["trace"] = str(trace.resolve())
    data["duration"] = f"{seconds}s"
    data["seed"] = 1
    return Scenario.from_dict(data, HERE).with_controller("gcc", {}).run(keep_packets=True)


def signal(state: pl.DataFrame, name: str) -> pl.DataFrame:
    return state.filter((pl.col("flow") == 0) & (pl.col("signal") == name)).sort("time_ns")


def overuse_episodes(state: pl.DataFrame) -> list[tuple[float, float]]:
    usage = signal(state, "usage")
    episodes, start = [], None
    for t, v in zip(usage["time_ns"].to_list(), usage["value"].to_list()):
        if v > 0 and start is None:
            start = t / 1e9
        elif v <= 0 and start is not None:
            episodes.append((start, t / 1e9))
            start = None
    return episodes


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trace", type=Path)
    parser.add_argument("-o", "--output", type=Path, required=True)
    parser.add_argument("--seconds", type=float, default=60.0)
    args = parser.parse_args(argv)
    if not args.trace.is_file():
        sys.exit(f"error: no trace at {args.trace}")
    result = run(args.trace, args.seconds)
    state = result.state

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(3, 1, figsize=(11, 9), sharex=True)
    cap = result.capacity.with_columns((pl.col("time_ns") // 100_000_000).alias("bin")) \
        .group_by("bin").agg(pl.col("bps").mean()).sort("bin")
    axes[0].fill_between(cap["bin"] / 10, cap["bps"] / 1e6, step="post", color="0.85", label="capacity (100 ms means)")
    for name, style in [("target_bps", "-"), ("delay_based_bps", "--"), ("acked_bps", ":"), ("link_capacity_bps", "-.")]:
        s = signal(state, name)
        axes[0].plot(s["time_ns"] / 1e9, s["value"] / 1e6, style, lw=1, label=name.removesuffix("_bps"))
    axes[0].set_ylabel("Mbit/s")
    axes[0].set_ylim(0, max(5.0, float(cap["bps"].quantile(0.95)) / 1e6))
    axes[0].legend(fontsize=7, loc="upper right", ncol=3)
    trend, threshold = signal(state, "trend_scaled"), signal(state, "threshold")
    axes[1].plot(trend["time_ns"] / 1e9, trend["value"], lw=0.6, label="trendline slope × min(n, 60) × 4")
    axes[1].plot(threshold["time_ns"] / 1e9, threshold["value"], "k", lw=0.8, label="±γ")
    axes[1].plot(threshold["time_ns"] / 1e9, -threshold["value"], "k", lw=0.8)
    episodes = overuse_episodes(state)
    for a, b in episodes:
        axes[1].axvspan(a, max(b, a + 0.05), color="red", alpha=0.3)
    axes[1].set_ylim(-60, 60)
    axes[1].set_ylabel("ms")
    axes[1].legend(fontsize=7, loc="upper right")
    p = result.packets.filter((pl.col("flow") == 0) & pl.col("dropped").not_() & (pl.col("depart_ns") >= 0))
    axes[2].plot(p["send_ns"] / 1e9, (p["depart_ns"] - p["enqueue_ns"]) / 1e6, ",", alpha=0.5)
    axes[2].set_ylabel("time in queue (ms)")
    axes[2].set_yscale("symlog", linthresh=10)
    axes[2].set_xlabel("time (s)")
    for a, _ in episodes:
        for ax in (axes[0], axes[2]):
            ax.axvline(a, color="red", lw=0.5, alpha=0.5)
    fig.suptitle(f"gcc (webrtc profile) on {args.trace.name}: over-use episodes in red")
    fig.tight_layout()
    args.output.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.output.with_suffix(".tmp.png")
    fig.savefig(tmp, dpi=100)
    os.replace(tmp, args.output)

    flow = result.summary["flows"][0]
    print(f"{args.trace.name}: utilisation {flow['utilization']:.1%}, "
          f"frame latency P95 {flow['frame_latency_ms']['p95']:.0f} ms, {len(episodes)} over-use episodes")
    target = signal(state, "target_bps")
    for a, b in episodes:
        before = target.filter(pl.col("time_ns") < a * 1e9)["value"]
        after = target.filter(pl.col("time_ns") <= b * 1e9 + 5e8)["value"]
        q = p.filter((pl.col("send_ns") >= (a - 0.5) * 1e9) & (pl.col("send_ns") < a * 1e9))
        queue = float(((q["depart_ns"] - q["enqueue_ns"]) / 1e6).max() or 0.0) if q.height else 0.0
        print(f"  over-use {a:6.2f}-{b:6.2f} s: target {before[-1] / 1e6 if len(before) else float('nan'):.2f} -> "
              f"{after[-1] / 1e6:.2f} Mbit/s; longest queue in the 0.5 s before: {queue:.0f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
