"""The seed's mechanism (bbr_dash §4–§5, Figs. 9 and 14): behind a token bucket with a deep buffer,
BBR's delivery-rate samples overshoot the token rate after every idle period, and its max filter
keeps the overshoot.

    python3 experiments/bbr_dash/overestimation.py -o docs/img/bbr-burst-overestimation.png

One TCP flow (`bbr`, then `bbr` with the seed's percentile estimator, BBR-S) downloads in bursts,
2 s on and 3 s off as a DASH player fetches segments, through `tbf` at R = 25 Mbit/s with a 1 MB
bucket, a 10 MB queue and a 1 Gbit/s line behind it, 100 ms RTT. After each idle period the full
bucket lets 1 MB through at the line rate, so the first round's delivery-rate samples read up to
R + B / RTprop = 25 + 80 = 105 Mbit/s. Plotted: every sample (Linux's tcpi_delivery_rate), BBR's
bandwidth estimate, and the token rate.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import polars as pl

from rtcc.scenario import Scenario

RATE_MBPS, BURST_MB, RTT_MS = 25, 1, 100


def scenario(variant: dict) -> Scenario:
    return Scenario.from_dict({
        "name": "bbr-burst", "duration": "40s", "seed": 1,
        "path": {"forward": {"token_bucket": {"rate": f"{RATE_MBPS}Mbps", "burst": f"{BURST_MB}MB"},
                             "delay": f"{RTT_MS // 2}ms", "queue": "10MB"},
                 "reverse": {"delay": f"{RTT_MS // 2}ms"}},
        "flows": [{"kind": "tcp", "controller": "bbr", "params": variant,
                   "app": {"model": "onoff", "on": "2s", "off": "3s"}}],
    }, ".")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-o", "--output", type=Path, required=True)
    args = parser.parse_args(argv)

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    variants = [("BBR (max filter)", {}), ("BBR-S (85th percentile)", {"bw_estimator": "percentile"})]
    fig, axes = plt.subplots(len(variants), 1, figsize=(11, 7), sharex=True, sharey=True)
    for ax, (label, params) in zip(axes, variants):
        state = scenario(params).run().state
        sig = lambda n: state.filter(pl.col("signal") == n).sort("time_ns")  # noqa: E731
        samples, estimate = sig("delivery_rate_bps"), sig("btl_bw_bps")
        ax.scatter(samples["time_ns"] / 1e9, samples["value"] / 1e6, s=2, alpha=0.4, label="delivery-rate samples")
        ax.step(estimate["time_ns"] / 1e9, estimate["value"] / 1e6, where="post", color="C3", label="BBR's bandwidth estimate")
        ax.axhline(RATE_MBPS, color="k", lw=0.8, ls="--", label=f"token rate R = {RATE_MBPS} Mbit/s")
        ax.axhline(RATE_MBPS + BURST_MB * 8 / (RTT_MS / 1000), color="0.5", lw=0.8, ls=":",
                   label="R + B / RTprop")
        mean = estimate.filter(pl.col("time_ns") > 5e9)["value"].mean() / 1e6
        above = (samples.filter(pl.col("time_ns") > 5e9)["value"] > RATE_MBPS * 1e6).mean()
        ax.set_title(f"{label}: mean estimate after 5 s {mean:.1f} Mbit/s; {above:.0%} of samples above R",
                     fontsize="medium", loc="left")
        ax.set_ylabel("Mbit/s")
        ax.set_ylim(0, 130)
        ax.grid(alpha=0.3)
        print(f"{label}: mean estimate after 5 s {mean:.1f} Mbit/s, {above:.1%} of delivery-rate samples above R")
    axes[0].legend(fontsize="small", loc="upper right")
    axes[-1].set_xlabel("time (s)")
    fig.suptitle("tbf 25 Mbit/s, 1 MB bucket, 10 MB queue, 100 ms RTT; 2 s on / 3 s off")
    fig.tight_layout()
    args.output.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.output.with_suffix(".tmp.png")
    fig.savefig(tmp, dpi=100)
    os.replace(tmp, args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
