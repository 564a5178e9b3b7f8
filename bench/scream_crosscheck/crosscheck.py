#!/usr/bin/env python3
"""SCReAM v2 against Ericsson's reference implementation, on the same packets.

A case is a scenario rtcc runs with SCReAM flows (`cases/`). Flow 0's packet log (send time,
receive time or loss, size, frame, transport-wide sequence number, ECN codepoint on arrival) is
replayed open loop, so both controllers see exactly the same arrivals, one RFC 8888 report per
5 ms of receive time (rtcc's SCREAM_FEEDBACK interval) reaching the sender after the reverse
path's delay:

- rtcc's `scream` (`rtcc_sim::replay`), its target bitrate (`target_bps`) and window
  (`window_bytes`);
- Ericsson's `ScreamV2Tx` (built from `../shared/reference/scream/code` with `driver.cc`; never
  copied into this repository), its `getTargetBitrate` and `getCwnd`, given the flow's media
  min/start/max rates, the constructor's defaults and `isL4s` as rtcc's `l4s` parameter.

Each case is replayed twice. Without frames: neither side hears of the encoder, which compares
the network congestion control alone (the issue's bar). With frames: each side is also told of the
run's encoded frames at their captures (rtcc's `frame_action` and `on_frame_encoded`, the
reference's RTP queue and `newMediaFrame`), so the stream's terms run too (the RTP queue's rate
adjustment and discard, frame-size statistics, the adaptive pacing scale, window updates at each
frame), with the adaptive target rate scale off on both sides: open loop the encoder follows the
run's target, not the replayed one, and that scale would learn the mismatch.

For each case: both trajectories on one plot, and the median of |ours / theirs - 1| on a 100 ms
grid after the first second. The differences that remain are traced to their rules in
docs/scream.md ("Against the reference").

    python bench/scream_crosscheck/crosscheck.py -o out/scream-crosscheck
    python bench/scream_crosscheck/crosscheck.py -o out/scream-crosscheck --marking   # + marking.cc

`--marking` also runs the reference in `marking.cc`'s closed loop at a fixed L4S marking level
(p = 0.02, 0.05, 0.1, random and even marks), the loop of rtcc's test
`at_a_fixed_marking_level_the_rate_goes_as_one_over_p`, and writes its rates to the summary.

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
REFERENCE = REPO.parent / "shared" / "reference" / "scream" / "code"
FEEDBACK_INTERVAL_US = 5_000  # rtcc's SCREAM_FEEDBACK interval
GRID_US = 100_000
COMPARE_FROM_S = 1.0
CASES = ["step", "lte", "two", "l4s"]

# The log, the grid and the difference measure are the GCC cross-check's.
_spec = importlib.util.spec_from_file_location("gcc_crosscheck", REPO / "bench" / "gcc_crosscheck" / "crosscheck.py")
gcc_crosscheck = importlib.util.module_from_spec(_spec)
sys.modules["gcc_crosscheck"] = gcc_crosscheck  # its dataclasses look themselves up there
_spec.loader.exec_module(gcc_crosscheck)


def reference_sources(root: Path = REFERENCE) -> tuple[list[Path], str]:
    """The reference's source files, or why they cannot be had."""
    files = [root / f for f in ("ScreamV2Tx.cpp", "ScreamV2TxStream.cpp", "ScreamTx.cpp", "RtpQueue.cpp")]
    missing = [f for f in files + [root / "ScreamTx.h", root / "RtpQueue.h"] if not f.is_file()]
    if missing:
        return [], f"the reference SCReAM is not at {root} (see ../shared/reference/README.md)"
    return files, ""


def compiler() -> str | None:
    return next((c for c in ("c++", "g++", "clang++") if shutil.which(c)), None)


def build(main: Path, out: Path) -> tuple[Path | None, str]:
    """Compile `main` with the reference sender; (binary, "") or (None, why not)."""
    sources, why = reference_sources()
    if why:
        return None, why
    cxx = compiler()
    if cxx is None:
        return None, "no C++ compiler (c++, g++ or clang++) is installed"
    out.parent.mkdir(parents=True, exist_ok=True)
    # IGNORE_PACKET: the RTP queue holds sizes only (no payloads to free).
    done = subprocess.run([cxx, "-std=c++17", "-O2", "-w", "-DIGNORE_PACKET", "-I", str(REFERENCE),
                           str(main), *map(str, sources), "-o", str(out)],
                          capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        return None, "building the reference failed: " + (done.stderr.strip().splitlines() or ["?"])[-1]
    return out, ""


def build_reference(out: Path) -> tuple[Path | None, str]:
    """The replay driver (driver.cc) with the reference sender."""
    return build(HERE / "driver.cc", out)


MARKING_LEVELS = [0.02, 0.05, 0.1]


def reference_marking(out: Path) -> tuple[dict, str]:
    """The reference's rate in marking.cc's loop per level: ({"p=..": {"random": bps, "even":
    bps}}, "") or ({}, why not)."""
    binary, why = build(HERE / "marking.cc", out)
    if binary is None:
        return {}, why
    rates = {}
    for p in MARKING_LEVELS:
        rates[f"p={p}"] = {}
        for how, even in (("random", "0"), ("even", "1")):
            done = subprocess.run([str(binary), repr(p), "60", even], capture_output=True, text=True,
                                  timeout=600, check=True)
            fields = dict(f.split("=") for f in done.stdout.split())
            rates[f"p={p}"][how] = float(fields["rate_bps"])
        rates[f"p={p}"]["formula"] = 2 / p * 1200 * 8 / 0.025
    return rates, ""


def packet_log(case: str):
    """Run the case (closed loop, rtcc's scream) and return flow 0's packets with the time their
    report reaches the sender, its frame marker and RTP timestamp, the scenario and the run."""
    from rtcc.scenario import Scenario

    scenario = Scenario.from_file(HERE / "cases" / f"{case}.toml")
    run = scenario.run(keep_packets=True)
    p = run.packets.filter(pl.col("flow") == 0).sort("seq")
    log = gcc_crosscheck.with_feedback_times(p, gcc_crosscheck._reverse_delay_us(scenario), FEEDBACK_INTERVAL_US)
    # The codepoint each packet arrived with, RFC 3168's two bits (0 Not-ECT, 1 ECT(1), 2 ECT(0),
    # 3 CE), as RFC 8888 reports them and the reference reads them (ceBits); Not-ECT from an
    # extension whose packet log has no `ecn` column.
    ecn = p["ecn"].cast(pl.Int64) if "ecn" in p.columns else pl.Series(np.zeros(len(p), dtype=np.int64))
    log = log.with_columns(ecn.alias("ecn"))
    # The RTP marker bit on each frame's last packet, its timestamp the frame's first send (90 kHz).
    by_frame = (log.filter(pl.col("frame") >= 0).group_by("frame")
                .agg(pl.col("seq").max().alias("last_seq"), pl.col("send_us").min().alias("first_us")))
    log = log.join(by_frame, on="frame", how="left").sort("seq").with_columns(
        (pl.col("seq") == pl.col("last_seq")).fill_null(True).cast(pl.Int64).alias("mark"),
        ((pl.col("first_us").fill_null(pl.col("send_us")) * 9 // 100) % (1 << 32)).alias("ts90k"),
        ((pl.col("kind") == 0) & (pl.col("frame") >= 0)).cast(pl.Int64).alias("media"),
    ).drop("last_seq", "first_us")
    return log, scenario, run


def frame_log(run, log: pl.DataFrame) -> pl.DataFrame:
    """Flow 0's frames in capture order: what the encoder produced and the media packets of the
    log that carry each (a frame the run's RTP queue discarded has fewer or none)."""
    media = (log.filter(pl.col("media") == 1).group_by("frame")
             .agg(pl.len().alias("logged"), pl.col("size").sum().alias("logged_bytes")))
    f = run.frames.filter(pl.col("flow") == 0).sort("capture_ns")
    # A join keeps no row order unless asked: sort again, the replay needs capture order.
    f = f.join(media, on="frame", how="left").sort("capture_ns").with_columns(
        pl.col("logged").fill_null(0), pl.col("logged_bytes").fill_null(0))
    return f.select(
        pl.col("frame").cast(pl.Int64), (pl.col("capture_ns") // 1000).alias("capture_us"),
        pl.col("size").cast(pl.Int64), pl.col("logged").cast(pl.Int64).alias("packets"),
        (pl.col("logged_bytes") // pl.max_horizontal(pl.col("logged"), pl.lit(1))).cast(pl.Int64).alias("packet_bytes"),
        pl.col("capture_ns"), pl.col("packets").cast(pl.Int64).alias("encoded_packets"),
        pl.col("keyframe"), pl.col("target_bps").cast(pl.Float64),
    )


def flow_settings(scenario) -> tuple[float, float, float, bool]:
    """(min, start, max) in bit/s of flow 0 and its `l4s` parameter, as both are given them."""
    from rtcc._core import parse_rate

    f = scenario.to_dict()["flows"][0]
    params = f.get("params") or {}
    rates = tuple(parse_rate(params.get(k2, f[k])) for k, k2 in
                  (("min_bitrate", "min_rate"), ("start_bitrate", "start_rate"), ("max_bitrate", "max_rate")))
    return (*rates, bool(params.get("l4s", True)))


def rtcc_replay(scenario, log: pl.DataFrame, frames: pl.DataFrame | None = None) -> pl.DataFrame:
    """rtcc's scream fed the log (and the frames, with the adaptive target rate scale off) open
    loop: time and every signal after each report."""
    from rtcc import _core

    if frames is not None:
        flow = scenario.to_dict()["flows"][0]
        scenario = scenario.with_controller("scream", {**(flow.get("params") or {}),
                                                       "adaptive_target_rate_scale": False})
    args = [scenario.to_json(), str(scenario.base_dir), 0,
            log["seq"].to_list(), (log["send_us"] * 1000).to_list(),
            [(-1 if r < 0 else r * 1000) for r in log["recv_us"].to_list()],
            log["size"].to_list(), log["frame"].to_list(), log["kind"].to_list(),
            [(-1 if f < 0 else f * 1000) for f in log["feedback_us"].to_list()]]
    rows = None if frames is None else list(zip(
        frames["frame"].to_list(), frames["capture_ns"].to_list(), frames["size"].to_list(),
        frames["encoded_packets"].to_list(), frames["keyframe"].to_list(), frames["target_bps"].to_list()))
    out = _core.replay_feedback(*args, ecn=log["ecn"].to_list(), frames=rows)
    frame = {"time_us": np.asarray(out["time_ns"]) // 1000, "target_bps": out["target_bps"]}
    frame.update(out["signals"])
    return pl.DataFrame(frame)


def reference_replay(binary: Path, log: pl.DataFrame, settings: tuple[float, float, float, bool],
                     frames: pl.DataFrame | None = None) -> pl.DataFrame:
    rmin, start, rmax, l4s = settings
    with tempfile.TemporaryDirectory() as tmp:
        src, dst, fsrc = Path(tmp) / "in.csv", Path(tmp) / "out.csv", Path(tmp) / "frames.csv"
        log.select("seq", "send_us", "recv_us", "size", "feedback_us", "ecn", "mark", "ts90k", "media").write_csv(src)
        extra = []
        if frames is not None:
            frames.select("frame", "capture_us", "size", "packets", "packet_bytes").write_csv(fsrc)
            extra = [str(fsrc), "0"]  # isAdaptiveTargetRateScale off, as on rtcc's side
        done = subprocess.run([str(binary), str(src), str(dst), repr(rmin), repr(start), repr(rmax), str(int(l4s)),
                               *extra], capture_output=True, text=True, timeout=600)
        if done.returncode != 0:
            raise RuntimeError(f"the reference replay failed: {done.stderr.strip()}")
        return pl.read_csv(dst, infer_schema_length=None)


def run_case(case: str, binary: Path) -> dict:
    log, scenario, run = packet_log(case)
    frames = frame_log(run, log)
    end_us = int(log["send_us"].max())
    grid = np.arange(int(COMPARE_FROM_S * 1e6), end_us, GRID_US)
    settings = flow_settings(scenario)
    ours = rtcc_replay(scenario, log)
    theirs = reference_replay(binary, log, settings)
    ours_f = rtcc_replay(scenario, log, frames)
    theirs_f = reference_replay(binary, log, settings, frames)
    state = run.state.filter((pl.col("flow") == 0) & (pl.col("signal") == "target_bps")).sort("time_ns")
    g = gcc_crosscheck.on_grid
    series = {
        "rtcc scream, closed loop (the run)": g(state["time_ns"].to_numpy() // 1000, state["value"].to_numpy(), grid),
        "rtcc scream": g(ours["time_us"].to_numpy(), ours["target_bps"].to_numpy(), grid),
        "Ericsson scream": g(theirs["time_us"].to_numpy(), theirs["target_bps"].to_numpy(), grid),
        "rtcc scream, with frames": g(ours_f["time_us"].to_numpy(), ours_f["target_bps"].to_numpy(), grid),
        "Ericsson scream, with frames": g(theirs_f["time_us"].to_numpy(), theirs_f["target_bps"].to_numpy(), grid),
    }
    windows = {
        "rtcc scream": g(ours["time_us"].to_numpy(), ours["window_bytes"].to_numpy(), grid),
        "Ericsson scream": g(theirs["time_us"].to_numpy(), theirs["cwnd_bytes"].to_numpy(), grid),
    }
    m = gcc_crosscheck.median_relative_difference
    differences = {
        "rtcc scream vs rtcc scream, closed loop (the run)":
            m(series["rtcc scream"], series["rtcc scream, closed loop (the run)"]),
        "rtcc scream vs Ericsson scream": m(series["rtcc scream"], series["Ericsson scream"]),
        "cwnd: rtcc scream vs Ericsson scream": m(windows["rtcc scream"], windows["Ericsson scream"]),
        "with frames: rtcc scream vs Ericsson scream":
            m(series["rtcc scream, with frames"], series["Ericsson scream, with frames"]),
    }
    return {"case": case, "grid": grid, "series": series, "windows": windows, "differences": differences}


def plot(results: list[dict], path: Path) -> None:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(12, 3.2 * len(results)), layout="constrained")
    axes = fig.subplots(len(results), 2, squeeze=False)
    for (ax, axw), r in zip(axes, results):
        for name, values in r["series"].items():
            ax.plot(r["grid"] / 1e6, values / 1e6, label=name, lw=1.0, ls=":" if "closed loop" in name else "-")
        for name, values in r["windows"].items():
            axw.plot(r["grid"] / 1e6, values / 1e3, label=name, lw=1.0)
        d = r["differences"]
        ax.set_title(f"{r['case']}: target, the same packets into each "
                     f"(median difference {d['rtcc scream vs Ericsson scream']:.1%})", fontsize="medium")
        axw.set_title(f"{r['case']}: cwnd (median difference {d['cwnd: rtcc scream vs Ericsson scream']:.1%})",
                      fontsize="medium")
        ax.set_ylabel("Mbit/s")
        axw.set_ylabel("kB")
        for a in (ax, axw):
            a.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="upper left")
    axes[-1][0].set_xlabel("time (s)")
    axes[-1][1].set_xlabel("time (s)")
    tmp = path.with_suffix(".tmp.png")
    fig.savefig(tmp, dpi=100)
    os.replace(tmp, path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-o", "--output", type=Path, required=True, help="folder for the report")
    parser.add_argument("--cases", default=",".join(CASES), help=f"comma-separated, of {', '.join(CASES)}")
    parser.add_argument("--marking", action="store_true",
                        help="also the reference's rate at fixed L4S marking levels (marking.cc)")
    args = parser.parse_args(argv)
    cases = [c for c in args.cases.split(",") if c]
    unknown = [c for c in cases if c not in CASES]
    if unknown:
        parser.error(f"unknown case(s) {', '.join(unknown)}; the cases are {', '.join(CASES)}")
    binary, why = build_reference(REPO / "target" / "scream-crosscheck" / "scream-replay")
    args.output.mkdir(parents=True, exist_ok=True)
    if binary is None:
        print(f"skipped: {why}", file=sys.stderr)
        (args.output / "summary.json").write_text(json.dumps({"skipped": why}, indent=2) + "\n")
        return 3
    results = [run_case(c, binary) for c in cases]
    plot(results, args.output / "trajectories.png")
    summary = {"cases": {r["case"]: {"median_relative_difference": r["differences"]} for r in results}}
    if args.marking:
        rates, why = reference_marking(REPO / "target" / "scream-crosscheck" / "scream-marking")
        summary["reference_at_fixed_marking"] = rates or {"skipped": why}
        for level, r in rates.items():
            print(f"reference, {level}: {r['random'] / 1e6:.2f} Mbit/s ({r['random'] / r['formula']:.3f} of "
                  f"(2/p)·MSS·8/RTT), every 1/p-th packet marked: {r['even'] / 1e6:.2f} Mbit/s")
    tmp = args.output / "summary.json.tmp"
    tmp.write_text(json.dumps(summary, indent=2) + "\n")
    os.replace(tmp, args.output / "summary.json")
    for r in results:
        for pair, d in r["differences"].items():
            print(f"{r['case']}: {pair}: median relative difference {d:.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
