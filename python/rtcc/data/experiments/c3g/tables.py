"""C3G's test set (c3g_rtvl.txt §VI-C, §VI-D) and its metrics, side by side with the paper.

    python3 experiments/c3g/tables.py out/c3g            # the full set: 15 drops x 4 trials per controller
    python3 experiments/c3g/tables.py out/c3g --quick    # c_lim = 7 Mbit/s, 2 trials

Every run starts from experiments/c3g/drop.toml: capacity c_init = alpha * c_lim for 20 s, c_lim for 60 s
(the drop and the stability test), then c_init again for 180 s (the increase test), with
c_lim in {5, 7, 9} Mbit/s and alpha in {1.25, 1.5, 1.75, 2, 2.5}, four trials (seeds 1-4) each, v_init =
c_init. c3g runs at each control period dt in {33, 50, 100, 200} ms (the paper leaves dt open; 50 ms is its
default), c3g-bbr at 100 ms (its default). Writes runs.csv (one row per run) and tables.md (Fig. 10, Tables 1 and 2 beside the paper's).

The metrics (the paper's definitions; docs/c3g.md has the reasoning):
- RTVL of a frame: the sender's view, frame complete at the receiver (the frame acknowledgement leaves
  then) plus the 3 ms back. A frame still incomplete 100 ms after its first packet arrived (the client's
  presentation timeout) is lossy (l > 0, section V-B) and shown then, so that is its RTVL; a frame none
  of whose packets arrived has no RTVL (it counts as over 100 ms).
- AP: time after the drop during which RTVL exceeds 100 ms (frames over it, or lost, x 1/30 s), from the
  drop until the first second in which every frame is under 100 ms. L_AP: lossy frames in that episode
  (a packet repaired before the timeout does not make a frame lossy). Peak: the largest RTVL of a
  frame that arrived in it.
- Stability, from the end of the AP episode to 60 s after the drop: channel use = bits sent per 1 s over
  c_lim (mean and standard deviation), RTVL mean and peak of the frames that arrived, L_rate = lossy frames
  per second, R_rate = retransmitted kbit/s.
- EP: time from the increase to the start of the first 1 s in which the flow sends 90 % of c_init (the
  paper: "recover lambda = c_init"; 90 % because the sent rate varies by a few percent per second; inf:
  not within 180 s).
"""

from __future__ import annotations

import argparse
import itertools
import math
import multiprocessing
import sys
from pathlib import Path

import numpy as np
import polars as pl

import rtcc
from rtcc.atomic import OutputError, atomic_dir, check_dest

HERE = Path(__file__).resolve().parent
DROP_AT, STABLE, AFTER = 20.0, 60.0, 180.0
C_LIM = (5.0, 7.0, 9.0)
ALPHA = (1.25, 1.5, 1.75, 2.0, 2.5)
INTERVALS = ("33ms", "50ms", "100ms", "200ms")
THRESHOLD_MS, BACK_MS, FPS, PRESENTATION_TIMEOUT_MS = 100.0, 3.0, 30.0, 100.0

# The paper's numbers (Fig. 10 read from the text, Tables 1 and 2).
PAPER_AP = {"c3g": "0.4-0.8 s", "c3g-bbr": "mostly > 1 s, often > 2 s"}
PAPER_L_AP = {"c3g": "0 for alpha <= 1.75, < 10 always", "c3g-bbr": "0 for alpha <= 1.75, > 20 in quite a few"}
PAPER_TABLE1 = {  # c_lim -> (use %, sd %, RTVL avg ms, RTVL peak ms, L_rate fps, R_rate kb/s)
    "c3g-bbr": {5: (86.9, 7.8, 42.5, 147.3, 0.0026, 38.3), 7: (92.6, 7.5, 45.3, 140.0, 0.0, 46.1),
                9: (93.4, 6.8, 45.2, 163.0, 0.0026, 53.3)},
    "c3g": {5: (93.2, 3.0, 36.8, 97.2, 0.0, 3.7), 7: (95.8, 2.3, 38.5, 86.4, 0.0, 2.8),
            9: (96.1, 2.1, 39.6, 88.3, 0.0, 3.7)},
}
PAPER_EP = {"c3g-bbr": "8.3 +- 8.6 s", "c3g": "36.2 +- 16.4 s"}

# The checks of tests/test_c3g.py that our runs (c3g at dt = 50 ms, c3g-bbr at 100 ms, the full set) do
# not meet, each with what we measured (docs/c3g.md, "What holds and what does not"). The test marks
# them as strict expected failures and `rtcc reproduce c3g` reports them as known: one list for both.
KNOWN_MISSES = {
    "test_r1_c3g_ap_is_not_shorter_than_the_papers":
        "ours adapts sooner than the paper: 6 of 15 combo medians under 0.2 s, 0-0.43 s (after a 25 % drop the 100 ms queue absorbs the excess until the drain: AP 0-0.02 s)",
    "test_r2_bbr_adapts_slower":
        "BBR's AP is 1.3x C3G's in 10 of 15 combos, not 12: three misses are at alpha 1.5, where BBR, sending about 80 % of the link before the drop, barely overflows (AP 0-0.02 s, peak RTVL 34-62 ms), two at c_lim 5 with alpha 2 and 2.5 (BBR 0.38-0.52 s against 0.42-0.43 s)",
    "test_r4_peaks_are_comparable":
        "peaks comparable (within 30 %) in 8 of 15 combos, not 12: at alpha 1.5 BBR's peaks are 34-62 ms (see R2), at 1.25 C3G's are the lower",
    "test_r5_no_losses_after_small_drops":
        "frames are lost after small drops too: L_AP = 0 in a third of C3G's runs at alpha <= 1.5 (BBR: two thirds). The drain comes 100-150 ms after the drop, with RTVL near its 100 ms threshold and the queue within 30-50 ms of overflowing, and the encoder takes 0.2 s to follow the drain's target (with 0.05 s: L_AP = 0 in 46 % of the runs)",
    "test_s3_bbr_channel_use_below_c3g":
        "BBR uses 81.6-87.0 % of the link (S3: 82-95 %): just below the band at c_lim 7 Mbit/s",
    "test_s2_c3g_rate_is_steady":
        "C3G's sent rate varies by 4.1-5.5 % per second (paper 2-3 %; S2: 4.5 %), 5.5 % at c_lim 5 Mbit/s; the encoder alone at a constant target varies by 2.7 %",
    "test_s5_c3g_stable_peak":
        "C3G's stable RTVL peaks are 99-112 ms (paper 86-97 ms; S5: 110 ms): 111.8 ms at c_lim 7 Mbit/s",
    "test_s7_c3g_loses_no_frames_when_stable":
        "9 of C3G's 60 runs lose a frame or a few when stable (0.002-0.011 frames/s on average; paper: none)",
}


def scenario(controller: str, c_lim: float, alpha: float, seed: int, interval: str) -> rtcc.Scenario:
    """A cell of the test set, built from drop.toml."""
    data = rtcc.Scenario.from_file(HERE / "drop.toml").to_dict()
    c_init = alpha * c_lim
    data["name"] = f"{controller}-{interval}-{c_lim:g}-{alpha:g}"
    data["duration"] = f"{DROP_AT + STABLE + AFTER:g}s"
    data["seed"] = seed
    data["path"]["forward"]["schedule"] = [["0s", f"{c_init:g}Mbps"], [f"{DROP_AT:g}s", f"{c_lim:g}Mbps"],
                                           [f"{DROP_AT + STABLE:g}s", f"{c_init:g}Mbps"]]
    flow = data["flows"][0]
    flow["controller"], flow["params"] = controller, {"interval": interval}
    if controller == "c3g":  # the paper's client reports mu every dt (section V-A)
        flow["feedback"] = {"interval": "20ms", "frame_acks": True, "rate_reports": interval}
    if controller == "c3g-bbr":  # the paper's drop tests start from a known rate: straight to ProbeBW
        flow["params"]["skip_startup"] = True
    flow["start_bitrate"] = f"{c_init:g}Mbps"
    return rtcc.Scenario.from_dict(data, base_dir=HERE)


def metrics(result, c_lim: float, alpha: float) -> dict:
    frames = result.frames.filter(pl.col("size") > 0)
    capture = frames["capture_ns"].to_numpy() / 1e9
    complete = frames["complete_ns"].to_numpy()
    packets = result.packets
    # A lossy frame (l > 0, §V-B) still missed a packet when its presentation timeout (100 ms after
    # its first packet arrived) handed it to the decoder; a packet repaired before then does not
    # count, nor does a dropped packet's copy that was never needed.
    first = (packets.filter((pl.col("frame") >= 0) & (pl.col("recv_ns") >= 0))
             .group_by("frame").agg(pl.col("recv_ns").min().alias("first_ns")))
    first_ns = frames.select("frame").join(first, on="frame", how="left", maintain_order="left")["first_ns"].fill_null(-1).to_numpy()
    deadline = first_ns + PRESENTATION_TIMEOUT_MS * 1e6
    lossy = (complete < 0) | (first_ns < 0) | (complete > deadline)
    # The client shows a lossy frame at its deadline, so that is its RTVL (§V-B: RTVL_max is the
    # first packet's delay plus the timeout); a frame none of whose packets came has none.
    shown = np.where(first_ns < 0, -1, np.where(lossy, deadline, complete))
    rtvl = np.where(shown >= 0, (shown / 1e9 - capture) * 1e3 + BACK_MS, np.inf)
    over = rtvl > THRESHOLD_MS

    # The AP episode: from the drop to the first second (30 frames) all under the threshold.
    after = np.flatnonzero(capture >= DROP_AT)
    end = DROP_AT + STABLE
    run = 0
    for k in after:
        run = 0 if over[k] else run + 1
        if run >= FPS:
            end = capture[k] - (FPS - 1) / FPS
            break
    episode = (capture >= DROP_AT) & (capture < end)
    bad = episode & over
    arrived = episode & np.isfinite(rtvl)
    out = {
        "ap_s": bad.sum() / FPS,
        "ap_span_s": (capture[bad].max() - DROP_AT) if bad.any() else 0.0,
        "l_ap": int((episode & lossy).sum()),
        "ap_peak_ms": float(rtvl[arrived].max()) if arrived.any() else math.nan,
    }

    # Stability: from the end of the episode to 60 s after the drop.
    start, stop = end, DROP_AT + STABLE
    # Bits sent in each whole second of the run.
    bits = np.bincount(packets["send_ns"].to_numpy() // 1_000_000_000,
                       weights=packets["size"].to_numpy() * 8.0, minlength=int(DROP_AT + STABLE + AFTER))
    seconds = np.arange(math.ceil(start), math.floor(stop))
    sent = bits[seconds]
    use = sent / (c_lim * 1e6) * 100
    stable = (capture >= start) & (capture < stop)
    ok = stable & np.isfinite(rtvl)
    retx = packets.filter((pl.col("kind") == 2) & (pl.col("send_ns") >= int(start * 1e9))
                          & (pl.col("send_ns") < int(stop * 1e9)))["size"].sum()
    out.update({
        "use_pct": float(use.mean()) if len(use) else math.nan,
        "use_sd_pct": float(use.std()) if len(use) else math.nan,
        "rtvl_avg_ms": float(rtvl[ok].mean()) if ok.any() else math.nan,
        "rtvl_peak_ms": float(rtvl[ok].max()) if ok.any() else math.nan,
        "l_rate_fps": (stable & lossy).sum() / max(stop - start, 1e-9),
        "r_rate_kbps": retx * 8 / 1e3 / max(stop - start, 1e-9),
    })

    # The increase: seconds after it until the flow sends 90 % of c_init.
    rise = DROP_AT + STABLE
    seconds = np.arange(rise, rise + AFTER).astype(int)
    sent = bits[seconds] / 1e6
    hit = np.flatnonzero(sent >= 0.9 * alpha * c_lim)
    out["ep_s"] = float(seconds[hit[0]] - rise) if len(hit) else math.inf
    return out


def run_cell(cell: tuple) -> dict:
    controller, interval, c_lim, alpha, seed = cell
    result = scenario(controller, c_lim, alpha, seed, interval).run()
    row = {"controller": controller, "interval": interval, "c_lim": c_lim, "alpha": alpha, "seed": seed}
    row.update(metrics(result, c_lim, alpha))
    return row


def cells(quick: bool) -> list[tuple]:
    c_lims, seeds = ((7.0,), (1, 2)) if quick else (C_LIM, (1, 2, 3, 4))
    todo = [("c3g-bbr", "100ms", c, a, s) for c, a, s in itertools.product(c_lims, ALPHA, seeds)]
    for interval in INTERVALS:
        todo += [("c3g", interval, c, a, s) for c, a, s in itertools.product(c_lims, ALPHA, seeds)]
    return todo


def _fmt(v: float, digits: int = 2) -> str:
    return "inf" if v == math.inf else ("-" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.{digits}f}")


def tables(runs: pl.DataFrame) -> str:
    label = pl.when(pl.col("controller") == "c3g").then(pl.lit("c3g ") + pl.col("interval")).otherwise(pl.lit("c3g-bbr"))
    runs = runs.with_columns(label.alias("run"))
    out = ["# C3G test set: our runs beside the paper's numbers", "",
           "Medians over c_lim and trials per drop ratio alpha (Fig. 10: AP, peak RTVL, L_AP):", "",
           "| controller | alpha | AP s | AP span s | peak RTVL ms | L_AP frames | paper AP | paper L_AP |", "|---|---|---|---|---|---|---|---|"]
    fig10 = runs.group_by(["run", "alpha"]).agg(pl.col("ap_s", "ap_span_s", "ap_peak_ms", "l_ap").median()).sort(["run", "alpha"])
    for r in fig10.iter_rows(named=True):
        ctrl = "c3g" if r["run"].startswith("c3g ") else "c3g-bbr"
        out.append(f"| {r['run']} | {r['alpha']:g} | {_fmt(r['ap_s'])} | {_fmt(r['ap_span_s'])} | {_fmt(r['ap_peak_ms'], 0)} "
                   f"| {_fmt(r['l_ap'], 1)} | {PAPER_AP[ctrl]} | {PAPER_L_AP[ctrl]} |")
    out += ["", "Stability (Table 1), means over alpha and trials per c_lim; the paper's value after the slash:", "",
            "| controller | c_lim | use % | sd % | RTVL avg ms | RTVL peak ms | L_rate fps | R_rate kb/s |", "|---|---|---|---|---|---|---|---|"]
    t1 = runs.group_by(["run", "c_lim"]).agg(pl.col("use_pct", "use_sd_pct", "rtvl_avg_ms", "rtvl_peak_ms", "l_rate_fps", "r_rate_kbps").mean()).sort(["run", "c_lim"])
    for r in t1.iter_rows(named=True):
        ctrl = "c3g" if r["run"].startswith("c3g ") else "c3g-bbr"
        p = PAPER_TABLE1[ctrl][int(r["c_lim"])]
        ours = [r["use_pct"], r["use_sd_pct"], r["rtvl_avg_ms"], r["rtvl_peak_ms"], r["l_rate_fps"], r["r_rate_kbps"]]
        digits = [1, 1, 1, 0, 3, 1]
        cells_ = " | ".join(f"{_fmt(o, d)} / {q:g}" for o, q, d in zip(ours, p, digits))
        out.append(f"| {r['run']} | {r['c_lim']:g} | {cells_} |")
    out += ["", "Increase (Table 2): EP, mean +- sd over all cells (runs that never got there counted apart):", "",
            "| controller | EP mean s | EP sd s | never within 180 s | paper |", "|---|---|---|---|---|"]
    for run in sorted(runs["run"].unique().to_list()):
        ep = runs.filter(pl.col("run") == run)["ep_s"].to_numpy()
        done = ep[np.isfinite(ep)]
        ctrl = "c3g" if run.startswith("c3g ") else "c3g-bbr"
        out.append(f"| {run} | {_fmt(done.mean() if len(done) else math.nan, 1)} | {_fmt(done.std() if len(done) else math.nan, 1)} "
                   f"| {int((~np.isfinite(ep)).sum())} of {len(ep)} | {PAPER_EP[ctrl]} |")
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path, help="folder for runs.csv and tables.md")
    ap.add_argument("--quick", action="store_true", help="c_lim = 7 Mbit/s and two trials only")
    ap.add_argument("-j", "--jobs", type=int, default=None, help="worker processes (default: CPUs)")
    ap.add_argument("--force", action="store_true", help="replace OUT if it exists")
    args = ap.parse_args(argv)
    try:
        check_dest(args.out, args.force)  # before the runs
    except OutputError as e:
        ap.error(str(e))
    todo = cells(args.quick)
    with multiprocessing.get_context("spawn").Pool(args.jobs) as pool:
        rows = pool.map(run_cell, todo)
    runs = pl.DataFrame(rows)
    text = tables(runs)
    with atomic_dir(args.out, force=args.force) as tmp:
        runs.write_csv(tmp / "runs.csv")
        (tmp / "tables.md").write_text(text, encoding="utf-8")
    print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
