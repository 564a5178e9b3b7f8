#!/usr/bin/env python3
"""GCC against independent implementations, on the same packets.

A case is a scenario rtcc runs with one GCC flow. Its packet log (send time, receive time or loss,
size, frame, transport-wide sequence number) is replayed open loop, so every estimator sees exactly
the same arrivals:

- the `webrtc` profile: rtcc's own send-side GCC (`rtcc_sim::replay`) against pion/interceptor's
  `pkg/gcc` (Go, `pion/`), both fed one transport-wide feedback report per 50 ms of receive time,
  reaching the sender after the reverse path's delay;
- the `paper` profile: rtcc's receive-side GCC (A_r, `grouping = "frame"` and `"burst"`) against
  aiortc's `RemoteBitrateEstimator`, a Python port of libwebrtc's receive-side estimator
  (`aiortc/`), fed every arrival.

For each pair: the trajectories on one plot, and the median of |ours / theirs - 1| on a 100 ms grid
after a warm-up (both estimators have an estimate by then). The differences that remain are listed,
with their sources, in docs/gcc_crosscheck.md.

    python bench/gcc_crosscheck/crosscheck.py -o out/crosscheck          # every case
    python bench/gcc_crosscheck/crosscheck.py -o out/crosscheck --quick  # the CI cases

Needs the `rtcc` package; the pion side needs Go (the module comes from the Go module proxy), the
aiortc side `pip install -r bench/gcc_crosscheck/aiortc/requirements.txt`. A side that cannot run
is skipped with the reason in the report.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
# One transport-wide report per 50 ms of receive time (libwebrtc sends them every 50-100 ms; the
# simulator's gcc asks for 50 ms and at each frame's end).
FEEDBACK_INTERVAL_US = 50_000
GRID_US = 100_000


@dataclass(frozen=True)
class Case:
    name: str
    scenario: Path
    # Compared from here on: after the first over-use, when the estimators have all left their
    # start-up (rtcc's probes and the start rate differ by design, docs/gcc_crosscheck.md).
    compare_from_s: float
    quick: bool


CASES = [
    Case("step", HERE / "cases" / "step.toml", 11.0, True),
    Case("lte", HERE / "cases" / "lte.toml", 10.0, False),
    # Needs mahimahi's recording next to the repository; skipped with the reason otherwise.
    Case("tmobile", HERE / "cases" / "tmobile.toml", 10.0, False),
]


def missing_input(case: Case) -> str:
    """Why the case cannot run here ("" if it can)."""
    import tomllib

    trace = tomllib.loads(case.scenario.read_text())["path"]["forward"].get("trace")
    if trace and not (case.scenario.parent / trace).is_file():
        return f"{case.name}: no trace at {(case.scenario.parent / trace).resolve()}"
    return ""


# ------------------------------------------------------------------------------------ the log


def packet_log(case: Case):
    """Run the case with rtcc's gcc (`webrtc` profile, closed loop) and return flow 0's packets
    with the time their report reaches the sender, the scenario and the run."""
    from rtcc.scenario import Scenario

    scenario = Scenario.from_file(case.scenario).with_controller("gcc", {"profile": "webrtc"})
    run = scenario.run(keep_packets=True)
    p = run.packets.filter(pl.col("flow") == 0).sort("seq")
    return with_feedback_times(p, _reverse_delay_us(scenario)), scenario, run


def with_feedback_times(p: pl.DataFrame, reverse_delay_us: int,
                        interval_us: int = FEEDBACK_INTERVAL_US) -> pl.DataFrame:
    """A report every ``interval_us`` (50 ms) of receive time covers the packets received since the
    last one and the losses before them (a lost packet is known once a later one has arrived)."""
    recv = np.where(p["dropped"].to_numpy(), -1, p["recv_ns"].to_numpy() // 1000)
    feedback = np.full(len(recv), -1, dtype=np.int64)
    next_report = -1
    for i in range(len(recv) - 1, -1, -1):
        if recv[i] >= 0:
            next_report = (recv[i] // interval_us + 1) * interval_us + reverse_delay_us
        feedback[i] = next_report
    return pl.DataFrame({
        "seq": p["seq"].cast(pl.Int64),
        "send_us": p["send_ns"] // 1000,
        "recv_us": recv,
        "size": p["size"].cast(pl.Int64),
        "frame": p["frame"].cast(pl.Int64).fill_null(-1),
        "kind": p["kind"].cast(pl.Int64),
        "feedback_us": feedback,
    })


def _reverse_delay_us(scenario) -> int:
    from rtcc._core import parse_duration

    reverse = scenario.to_dict().get("path", {}).get("reverse", {})
    return int(round(parse_duration(reverse.get("delay", "0ms")) * 1e6))


# ------------------------------------------------------------------------------ estimators


def rtcc_replay(scenario, log: pl.DataFrame, params: dict) -> pl.DataFrame:
    """rtcc's gcc with `params`, fed the log open loop: time, target and every signal."""
    from rtcc import _core

    sc = scenario.with_controller("gcc", params)
    out = _core.replay_feedback(
        sc.to_json(), str(sc.base_dir), 0,
        log["seq"].to_list(), (log["send_us"] * 1000).to_list(),
        [(-1 if r < 0 else r * 1000) for r in log["recv_us"].to_list()],
        log["size"].to_list(),
        log["frame"].to_list(), log["kind"].to_list(),
        [(-1 if f < 0 else f * 1000) for f in log["feedback_us"].to_list()],
    )
    frame = {"time_us": np.asarray(out["time_ns"]) // 1000, "target_bps": out["target_bps"]}
    frame.update(out["signals"])
    return pl.DataFrame(frame)


def pion_binary() -> tuple[Path | None, str]:
    """Build the pion replay tool once (Go module proxy); (path, "") or (None, why not)."""
    go = shutil.which("go")
    if go is None:
        return None, "the Go toolchain is not installed"
    out = REPO / "target" / "gcc-crosscheck" / "pion-gcc-replay"
    out.parent.mkdir(parents=True, exist_ok=True)
    done = subprocess.run([go, "build", "-o", str(out), "."], cwd=HERE / "pion",
                          capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        return None, "go build failed: " + (done.stderr.strip().splitlines() or ["?"])[-1]
    return out, ""


def pion_replay(binary: Path, log: pl.DataFrame) -> pl.DataFrame:
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = Path(tmp) / "in.csv", Path(tmp) / "out.csv"
        log.select("seq", "send_us", "recv_us", "size", "feedback_us").write_csv(src)
        done = subprocess.run([str(binary), "-o", str(dst), str(src)], capture_output=True,
                              text=True, timeout=600)
        if done.returncode != 0:
            raise RuntimeError(f"pion replay failed: {done.stderr.strip()}")
        return pl.read_csv(dst)


def aiortc_module() -> tuple[object | None, str]:
    spec = importlib.util.spec_from_file_location("aiortc_replay", HERE / "aiortc" / "replay.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if module.aiortc_version() is None:
        return None, "aiortc is not installed (pip install -r bench/gcc_crosscheck/aiortc/requirements.txt)"
    return module, ""


def aiortc_replay(module, log: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """aiortc's estimate after every arrival that changed it (its REMBs are a subset), and its
    Kalman offset after every arrival."""
    packets = log.select("seq", "send_us", "recv_us", "size").rows()
    rows = module.replay_trace(packets, every_packet=True)
    estimate = pl.DataFrame({
        "time_us": [r["time_us"] for r in rows if r["rc_initialized"]],
        "estimate_bps": [float(r["estimate_bps"]) for r in rows if r["rc_initialized"]],
    })
    trace = pl.DataFrame({"time_us": [r["time_us"] for r in rows],
                          "offset_ms": [float(r["offset_ms"]) for r in rows]})
    return estimate, trace


# ----------------------------------------------------------------------------- comparison


def on_grid(time_us, values, grid_us: np.ndarray) -> np.ndarray:
    """The last value at or before each grid time (NaN before the first)."""
    time_us, values = np.asarray(time_us), np.asarray(values, dtype=float)
    idx = np.searchsorted(time_us, grid_us, side="right") - 1
    return np.where(idx >= 0, values[np.clip(idx, 0, None)], np.nan)


def median_relative_difference(ours: np.ndarray, theirs: np.ndarray) -> float:
    ok = np.isfinite(ours) & np.isfinite(theirs) & (theirs > 0)
    return float(np.median(np.abs(ours[ok] / theirs[ok] - 1))) if ok.any() else math.nan


def run_case(case: Case, pion: Path | None, aiortc) -> dict:
    log, scenario, run = packet_log(case)
    end_us = int(log["send_us"].max())
    grid = np.arange(int(case.compare_from_s * 1e6), end_us, GRID_US)
    series: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    pairs: list[tuple[str, str]] = []

    # The run's own estimate, closed loop: the replay's self-check.
    state = run.state.filter((pl.col("flow") == 0) & (pl.col("signal") == "delay_based_bps")).sort("time_ns")
    series["rtcc webrtc, closed loop (the run)"] = (state["time_ns"].to_numpy() // 1000, state["value"].to_numpy())
    ours = rtcc_replay(scenario, log, {"profile": "webrtc"})
    series["rtcc webrtc"] = (ours["time_us"].to_numpy(), ours["delay_based_bps"].to_numpy())
    pairs.append(("rtcc webrtc", "rtcc webrtc, closed loop (the run)"))
    if pion is not None:
        theirs = pion_replay(pion, log)
        series["pion"] = (theirs["time_us"].to_numpy(), theirs["delay_bps"].to_numpy())
        pairs.append(("rtcc webrtc", "pion"))
    # The Kalman filter's offset m (ms) and the detector's state, before any rate control: the
    # part of the receive side that grouping feeds.
    offsets: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for grouping in ("frame", "burst"):
        ours = rtcc_replay(scenario, log, {"profile": "paper", "grouping": grouping})
        series[f"rtcc paper, {grouping} groups"] = (ours["time_us"].to_numpy(),
                                                   ours["receiver_estimate_bps"].to_numpy())
        offsets[f"rtcc paper, {grouping} groups"] = (ours["time_us"].to_numpy(), ours["offset_ms"].to_numpy())
    offset_differences = {}
    if aiortc is not None:
        theirs, trace = aiortc_replay(aiortc, log)
        series["aiortc"] = (theirs["time_us"].to_numpy(), theirs["estimate_bps"].to_numpy())
        pairs += [("rtcc paper, frame groups", "aiortc"), ("rtcc paper, burst groups", "aiortc")]
        offsets["aiortc"] = (trace["time_us"].to_numpy(), trace["offset_ms"].to_numpy())
        fine = np.arange(grid[0], grid[-1], 10_000)
        theirs_m = on_grid(*offsets["aiortc"], fine)
        for grouping in ("frame", "burst"):
            ours_m = on_grid(*offsets[f"rtcc paper, {grouping} groups"], fine)
            ok = np.isfinite(ours_m) & np.isfinite(theirs_m)
            offset_differences[f"rtcc paper, {grouping} groups vs aiortc"] = {
                "median_abs_ms": float(np.median(np.abs(ours_m[ok] - theirs_m[ok]))),
                "correlation": float(np.corrcoef(ours_m[ok], theirs_m[ok])[0, 1]),
            }
    gridded = {k: on_grid(t, v, grid) for k, (t, v) in series.items()}
    differences = {f"{a} vs {b}": median_relative_difference(gridded[a], gridded[b]) for a, b in pairs}
    return {"case": case, "log": log, "grid": grid, "series": gridded, "differences": differences,
            "offsets": offsets, "offset_differences": offset_differences}


def plot(results: list[dict], path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2 * len(results), 1, figsize=(10, 6.0 * len(results)), squeeze=False)
    for i, r in enumerate(results):
        t = r["grid"] / 1e6
        for ax, side in zip(axes[2 * i: 2 * i + 2, 0], ("webrtc", "paper")):
            for name, values in r["series"].items():
                theirs = "pion" if side == "webrtc" else "aiortc"
                if f"rtcc {side}" in name or name == theirs:
                    ax.plot(t, values / 1e6, label=name, lw=1.0,
                            ls=":" if "closed loop" in name else "-")
            what = "delay-based estimate" if side == "webrtc" else "receive-side estimate (A_r, REMB)"
            ax.set_title(f"{r['case'].name}: {what}, the same packets into each")
            ax.set_ylabel("Mbit/s")
            ax.legend(fontsize=7, loc="upper left")
            ax.grid(alpha=0.3)
    axes[-1, 0].set_xlabel("time (s)")
    fig.tight_layout()
    tmp = path.with_suffix(".tmp.png")
    fig.savefig(tmp, dpi=100)
    plt.close(fig)
    os.replace(tmp, path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-o", "--output", type=Path, required=True, help="folder for the report")
    parser.add_argument("--quick", action="store_true", help="only the cases CI runs")
    args = parser.parse_args(argv)

    pion, pion_why = pion_binary()
    aiortc, aiortc_why = aiortc_module()
    for why in (pion_why, aiortc_why):
        if why:
            print(f"skipped: {why}", file=sys.stderr)
    cases = [c for c in CASES if c.quick or not args.quick]
    skipped = [pion_why, aiortc_why] + [missing_input(c) for c in cases]
    for why in skipped[2:]:
        if why:
            print(f"skipped: {why}", file=sys.stderr)
    results = [run_case(c, pion, aiortc) for c in cases if not missing_input(c)]

    args.output.mkdir(parents=True, exist_ok=True)
    plot(results, args.output / "trajectories.png")
    summary = {
        "skipped": [w for w in skipped if w],
        "cases": {r["case"].name: {"median_relative_difference": r["differences"],
                                   "kalman_offset": r["offset_differences"]} for r in results},
    }
    tmp = args.output / "summary.json.tmp"
    tmp.write_text(json.dumps(summary, indent=2) + "\n")
    os.replace(tmp, args.output / "summary.json")
    for r in results:
        for pair, d in r["differences"].items():
            print(f"{r['case'].name}: {pair}: median relative difference {d:.1%}")
        for pair, d in r["offset_differences"].items():
            print(f"{r['case'].name}: Kalman offset, {pair}: median |difference| "
                  f"{d['median_abs_ms']:.3f} ms, correlation {d['correlation']:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
