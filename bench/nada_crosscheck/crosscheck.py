#!/usr/bin/env python3
"""NADA against Cisco's reference implementation, on the same packets.

A case is a scenario rtcc runs with NADA flows (`cases/`). Flow 0's packet log (send time,
receive time or loss, size, transport-wide sequence number) is replayed open loop, so both
controllers see exactly the same arrivals, one report per 100 ms of receive time (RFC 8698's
DELTA) reaching the sender after the reverse path's delay:

- rtcc's `nada` (`rtcc_sim::replay`), its reference rate `r_ref`;
- Cisco's ns-3 NADA (`NadaController` of ns3-rmcat, built from `../shared/reference/ns3-rmcat`
  with `driver.cc`; never copied into this repository), its `getBandwidth()`, which is r_ref.

For each case: both trajectories on one plot, and the median of |ours / theirs - 1| on a 100 ms
grid after the first second. The differences that remain are traced to their rules in
docs/nada.md ("Against the reference").

    python bench/nada_crosscheck/crosscheck.py -o out/nada-crosscheck

Needs the `rtcc` package, a C++17 compiler (`c++`, `g++` or `clang++`) and the reference
sources; without them the report says what is missing and exits with status 3.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import polars as pl

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
REFERENCE = REPO.parent / "shared" / "reference" / "ns3-rmcat" / "model" / "congestion-control"
FEEDBACK_INTERVAL_US = 100_000  # RFC 8698 §5.3: DELTA
GRID_US = 100_000
COMPARE_FROM_S = 1.0
CASES = ["step", "lte", "two"]

# The log, the grid and the difference measure are the GCC cross-check's.
_spec = importlib.util.spec_from_file_location("gcc_crosscheck", REPO / "bench" / "gcc_crosscheck" / "crosscheck.py")
gcc_crosscheck = importlib.util.module_from_spec(_spec)
sys.modules["gcc_crosscheck"] = gcc_crosscheck  # its dataclasses look themselves up there
_spec.loader.exec_module(gcc_crosscheck)


def reference_sources(root: Path = REFERENCE) -> tuple[list[Path], str]:
    """The reference's source files, or why they cannot be had."""
    files = [root / "nada-controller.cc", root / "sender-based-controller.cc"]
    missing = [f for f in files + [root / "nada-controller.h"] if not f.is_file()]
    if missing:
        return [], f"the reference NADA is not at {root} (see ../shared/reference/README.md)"
    return files, ""


def build_reference(out: Path) -> tuple[Path | None, str]:
    """Compile driver.cc with the reference NADA; (binary, "") or (None, why not)."""
    sources, why = reference_sources()
    if why:
        return None, why
    compiler = next((c for c in ("c++", "g++", "clang++") if shutil.which(c)), None)
    if compiler is None:
        return None, "no C++ compiler (c++, g++ or clang++) is installed"
    out.parent.mkdir(parents=True, exist_ok=True)
    done = subprocess.run([compiler, "-std=c++17", "-O2", "-I", str(REFERENCE), str(HERE / "driver.cc"),
                           *map(str, sources), "-o", str(out)], capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        return None, "building the reference failed: " + (done.stderr.strip().splitlines() or ["?"])[-1]
    return out, ""


def packet_log(case: str):
    """Run the case (closed loop, rtcc's nada) and return flow 0's packets with the time their
    report reaches the sender, the scenario and the run."""
    from rtcc.scenario import Scenario

    scenario = Scenario.from_file(HERE / "cases" / f"{case}.toml")
    run = scenario.run(keep_packets=True)
    p = run.packets.filter(pl.col("flow") == 0).sort("seq")
    log = gcc_crosscheck.with_feedback_times(p, gcc_crosscheck._reverse_delay_us(scenario), FEEDBACK_INTERVAL_US)
    return log, scenario, run


def media_range(scenario) -> tuple[float, float, float]:
    """(RMIN, start, RMAX) in bit/s of flow 0, as both controllers are given them."""
    from rtcc._core import parse_rate

    f = scenario.to_dict()["flows"][0]
    return tuple(parse_rate(f[k]) for k in ("min_bitrate", "start_bitrate", "max_bitrate"))


def rtcc_replay(scenario, log: pl.DataFrame) -> pl.DataFrame:
    """rtcc's nada fed the log open loop: time and every signal after each report."""
    from rtcc import _core

    out = _core.replay_feedback(
        scenario.to_json(), str(scenario.base_dir), 0,
        log["seq"].to_list(), (log["send_us"] * 1000).to_list(),
        [(-1 if r < 0 else r * 1000) for r in log["recv_us"].to_list()],
        log["size"].to_list(), log["frame"].to_list(), log["kind"].to_list(),
        [(-1 if f < 0 else f * 1000) for f in log["feedback_us"].to_list()],
    )
    frame = {"time_us": np.asarray(out["time_ns"]) // 1000, "target_bps": out["target_bps"]}
    frame.update(out["signals"])
    return pl.DataFrame(frame)


def reference_replay(binary: Path, log: pl.DataFrame, rates: tuple[float, float, float]) -> pl.DataFrame:
    rmin, start, rmax = rates
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = Path(tmp) / "in.csv", Path(tmp) / "out.csv"
        log.select("seq", "send_us", "recv_us", "size", "feedback_us").write_csv(src)
        done = subprocess.run([str(binary), str(src), str(dst), repr(rmin), repr(start), repr(rmax)],
                              capture_output=True, text=True, timeout=600)
        if done.returncode != 0:
            raise RuntimeError(f"the reference replay failed: {done.stderr.strip()}")
        return pl.read_csv(dst)


def run_case(case: str, binary: Path) -> dict:
    log, scenario, run = packet_log(case)
    end_us = int(log["send_us"].max())
    grid = np.arange(int(COMPARE_FROM_S * 1e6), end_us, GRID_US)
    ours = rtcc_replay(scenario, log)
    theirs = reference_replay(binary, log, media_range(scenario))
    state = run.state.filter((pl.col("flow") == 0) & (pl.col("signal") == "r_ref_bps")).sort("time_ns")
    series = {
        "rtcc nada, closed loop (the run)": gcc_crosscheck.on_grid(state["time_ns"].to_numpy() // 1000,
                                                                   state["value"].to_numpy(), grid),
        "rtcc nada": gcc_crosscheck.on_grid(ours["time_us"].to_numpy(), ours["r_ref_bps"].to_numpy(), grid),
        "ns3-rmcat nada": gcc_crosscheck.on_grid(theirs["time_us"].to_numpy(),
                                                 theirs["bandwidth_bps"].to_numpy(), grid),
    }
    pairs = [("rtcc nada", "rtcc nada, closed loop (the run)"), ("rtcc nada", "ns3-rmcat nada")]
    differences = {f"{a} vs {b}": gcc_crosscheck.median_relative_difference(series[a], series[b])
                   for a, b in pairs}
    return {"case": case, "grid": grid, "series": series, "differences": differences}


def plot(results: list[dict], path: Path) -> None:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(10, 3.2 * len(results)), layout="constrained")
    axes = fig.subplots(len(results), 1, squeeze=False)[:, 0]
    for ax, r in zip(axes, results):
        for name, values in r["series"].items():
            ax.plot(r["grid"] / 1e6, values / 1e6, label=name, lw=1.0, ls=":" if "closed loop" in name else "-")
        d = r["differences"]["rtcc nada vs ns3-rmcat nada"]
        ax.set_title(f"{r['case']}: r_ref, the same packets into each (median difference {d:.1%})",
                     fontsize="medium")
        ax.set_ylabel("Mbit/s")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    axes[-1].set_xlabel("time (s)")
    tmp = path.with_suffix(".tmp.png")
    fig.savefig(tmp, dpi=100)
    os.replace(tmp, path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-o", "--output", type=Path, required=True, help="folder for the report")
    parser.add_argument("--cases", default=",".join(CASES), help=f"comma-separated, of {', '.join(CASES)}")
    args = parser.parse_args(argv)
    cases = [c for c in args.cases.split(",") if c]
    unknown = [c for c in cases if c not in CASES]
    if unknown:
        parser.error(f"unknown case(s) {', '.join(unknown)}; the cases are {', '.join(CASES)}")
    binary, why = build_reference(REPO / "target" / "nada-crosscheck" / "nada-replay")
    args.output.mkdir(parents=True, exist_ok=True)
    if binary is None:
        print(f"skipped: {why}", file=sys.stderr)
        (args.output / "summary.json").write_text(json.dumps({"skipped": why}, indent=2) + "\n")
        return 3
    results = [run_case(c, binary) for c in cases]
    plot(results, args.output / "trajectories.png")
    summary = {"cases": {r["case"]: {"median_relative_difference": r["differences"]} for r in results}}
    tmp = args.output / "summary.json.tmp"
    tmp.write_text(json.dumps(summary, indent=2) + "\n")
    os.replace(tmp, args.output / "summary.json")
    for r in results:
        for pair, d in r["differences"].items():
            print(f"{r['case']}: {pair}: median relative difference {d:.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
