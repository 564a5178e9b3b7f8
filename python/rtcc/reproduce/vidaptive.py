"""Vidaptive (Karimi, Fouladi, Sivaraman, Alizadeh, arXiv 2309.16869 v1): its periodic-link result
(§2.1, Figs. 1 and 3) and its main and ablation results over cellular traces (§5, E4 and E5).

The periodic link is experiments/gcc/vidaptive-alternating.toml run for 120 s with the `lagged`
encoder, as crates/rtcc-sim/tests/vidaptive.rs runs it (its checks and tolerances). The traces are
experiments/vidaptive/e4_e5_traces.toml, checked as tests/test_vidaptive_traces.py checks it, with
experiments/vidaptive/tables.py's tables kept beside the sweep. Six of its seven traces are
mahimahi's recordings, not bundled: they are looked for where the sweep file names them (next to
the source checkout: ../shared/traces/mahimahi) or in ``--traces DIR``; without them the bundled
LTE-like trace runs alone and the trace checks are not comparable.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import math
import os
from rtcc import _toml as tomllib
from pathlib import Path

import numpy as np
import polars as pl
from matplotlib.figure import Figure

from .. import series
from ..compare import write_comparison
from ..demo import experiments_dir
from ..plots import _colors
from ..scenario import Scenario
from ..sweep import Sweep
from . import Context, fmt

TITLE = ("M. Karimi, S. Fouladi, V. Sivaraman, M. Alizadeh, \"Vidaptive: Efficient and Responsive Rate Control "
         "for Real-Time Video on Variable Networks\", arXiv 2309.16869 (v1)")
SHORT = "Vidaptive (Karimi et al.)"
DOCS = "docs/vidaptive.md"

NS = 1_000_000_000
# The paper's encoder (§2, Fig. 2: about 2 s to settle up, 1 s down) with the noise, keyframe size
# and high-motion bursts these checks were written for: the lagged defaults before the VP8 fit,
# without libvpx's rate-control buffer (docs/encoders.md).
PAPER_ENCODER = {"model": "lagged", "up": "2s", "down": "1s", "noise": 0.2, "complexity": 0.15, "keyframe_ratio": 6,
                 "saturation_bpp": 0.19, "burst_length": "1s", "burst_gain": 2.5, "buffer_size": "off"}
FULL_SEEDS, QUICK_SEEDS = [1, 2, 3], [1]
RUST = "crates/rtcc-sim/tests/vidaptive.rs"
TEST = "tests/test_vidaptive_traces.py"
METRICS = ["utilization", "video_bitrate_bps", "psnr_db", "frame_latency_ms_p50", "frame_latency_ms_p95",
           "display_rate_fps"]
VARIANTS = ["gcc", "vidaptive", "vidaptive-rocc", "copa", "copa+dummy", "copa+dummy+latency"]


def _sweep_file() -> Path:
    return experiments_dir() / "vidaptive" / "e4_e5_traces.toml"


def plan(quick: bool) -> list[str]:
    seeds = QUICK_SEEDS if quick else FULL_SEEDS
    return [
        "experiments/gcc/vidaptive-alternating.toml (2 Mbit/s and 500 kbit/s alternating every 40 s, 50 ms RTT, "
        "no drops) for 120 s with the lagged encoder: vidaptive, gcc and a backlogged Copa (δ = 0.9): §2.1, Figs. 1 "
        "and 3 (E1)",
        f"experiments/vidaptive/e4_e5_traces.toml: gcc, vidaptive (Copa), vidaptive (RoCC), copa, copa+dummy, "
        f"copa+dummy+latency on seven traces (the bundled LTE-like trace and six mahimahi recordings), 120 s, "
        f"seed{'s' if len(seeds) > 1 else ''} {', '.join(map(str, seeds))} "
        f"({6 * 7 * len(seeds)} runs): §5.2 (E4) and §5.4 (E5)",
    ]


# -- the traces -------------------------------------------------------------------------------


def default_traces_dir(value: str) -> Path | None:
    """Where the sweep file's relative path ``value`` points from the source checkout's top-level
    ``experiments/`` link (resolved lexically, as the core resolves it); None outside a checkout."""
    checkout = experiments_dir().parents[3] / "experiments"
    try:
        if checkout.resolve() != experiments_dir().resolve():
            return None
    except OSError:
        return None
    return Path(os.path.normpath(checkout / "vidaptive" / value)).parent


def resolve_traces(values: list[str], traces: Path | None) -> tuple[list[str], list[str], list[Path]]:
    """The grid's trace values as absolute paths: (found, missing names, folders looked in). A trace
    the package bundles resolves against the sweep file's folder; the others are looked for in
    ``traces`` or, without it, where the sweep file names them from the source checkout."""
    here = _sweep_file().parent
    found, missing, looked = [], [], []
    for value in values:
        bundled = Path(os.path.normpath(here / value))
        if bundled.is_file():
            found.append(str(bundled))
            continue
        folder = traces if traces is not None else default_traces_dir(value)
        if folder is not None and folder not in looked:
            looked.append(folder)
        path = folder / Path(value).name if folder is not None else None
        if path is not None and path.is_file():
            found.append(str(path.absolute()))
        else:
            missing.append(Path(value).name)
    return found, missing, looked


def _traces_sweep(ctx: Context) -> tuple[Sweep, list[str], list[Path], int]:
    path = _sweep_file()
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    values = data["sweep"]["grid"]["path.forward.trace"]
    found, missing, looked = resolve_traces(values, ctx.traces)
    data["sweep"]["grid"]["path.forward.trace"] = found
    data["scenario"]["path"]["forward"]["trace"] = found[0]
    data["sweep"]["seeds"] = QUICK_SEEDS if ctx.quick else FULL_SEEDS
    sweep = Sweep.from_dict(data, base_dir=path.parent, source=str(path), default_name=path.stem)
    return sweep, missing, looked, len(values)


# -- E1: the periodic link (crates/rtcc-sim/tests/vidaptive.rs) --------------------------------


def _periodic(flow: dict) -> Scenario:
    base = Scenario.from_file(experiments_dir() / "gcc" / "vidaptive-alternating.toml")
    data = base.to_dict()
    data["name"] = "vidaptive-periodic"
    data["duration"] = "120s"
    data["flows"] = [flow]
    return Scenario.from_dict(data, base_dir=base.base_dir)


def _rate(r, a: float, b: float, media_only: bool = False) -> float:
    """Bit/s of flow 0 leaving the bottleneck in [a, b) s (every kind, or media only)."""
    p = r.packets.filter((pl.col("flow") == 0) & (pl.col("depart_ns") >= int(a * NS)) & (pl.col("depart_ns") < int(b * NS)))
    if media_only:
        p = p.filter(pl.col("kind") == 0)
    return float(p["size"].sum()) * 8 / (b - a)


def _ramp(r, start: float, until: float, level: float) -> float:
    """Seconds after ``start`` until a 500 ms window (every 100 ms) of flow 0 carries ``level``."""
    p = r.packets.filter((pl.col("flow") == 0) & (pl.col("depart_ns") >= int(start * NS)) & (pl.col("depart_ns") >= 0))
    t = p["depart_ns"].to_numpy() / NS
    bits = p["size"].to_numpy() * 8.0
    order = np.argsort(t)
    t, cum = t[order], np.concatenate([[0.0], np.cumsum(bits[order])])
    for k in range(int(round((until - start - 0.5) / 0.1)) + 1):
        a = start + 0.1 * k
        got = cum[np.searchsorted(t, a + 0.5, "left")] - cum[np.searchsorted(t, a, "left")]
        if got / 0.5 >= level:
            return a + 0.5 - start
    return math.inf


def _periodic_checks(ctx: Context) -> dict:
    ctx.log("the periodic link (2 Mbit/s <-> 500 kbit/s every 40 s): vidaptive, gcc, backlogged copa")
    runs = {
        "vidaptive": _periodic({"name": "video", "controller": "vidaptive", "encoder": PAPER_ENCODER}).run(),
        "gcc": _periodic({"name": "video", "controller": "gcc", "encoder": PAPER_ENCODER}).run(),
        "copa (backlogged)": _periodic({"name": "copa", "kind": "tcp", "controller": "copa",
                                        "params": {"delta": 0.9}}).run(),
    }
    write_comparison(ctx.path("data/periodic/x").parent, runs, "Vidaptive §2.1: the periodic link", plots=False)
    ctx.keep("data/periodic/index.html", "the periodic link as an rtcc compare folder (run folders with Parquet logs)")
    v, gcc, copa = runs["vidaptive"], runs["gcc"], runs["copa (backlogged)"]
    src = f"{RUST}: e1_vidaptive_tracks_backlogged_copa_and_ramps_in_seconds_where_gcc_takes_many; docs/vidaptive.md"
    v_ramp, c_ramp = _ramp(v, 80, 120, 0.9 * 2e6), _ramp(copa, 80, 120, 0.9 * 2e6)
    ctx.check("E1a", "periodic link: Vidaptive's ramp to 90 % of 2 Mbit/s after the link opens at 80 s",
              "\"within a few RTTs\", as backlogged Copa (§2.1, Fig. 3)",
              f"{fmt(v_ramp, 1)} s (backlogged Copa {fmt(c_ramp, 1)} s)", "≤ 3 s", src, v_ramp <= 3.0, value=v_ramp)
    t = gcc.state.filter((pl.col("flow") == 0) & (pl.col("signal") == "target_bps") & (pl.col("time_ns") >= 80 * NS)
                         & (pl.col("value") >= 0.9 * 2e6))
    g_ramp = float(t["time_ns"].min()) / NS - 80 if t.height else 40.0
    ctx.check("E1b", "periodic link: GCC's target to 90 % of 2 Mbit/s after 80 s", "18 s (§2.1, Fig. 1)",
              f"{fmt(g_ramp, 1)} s", "≥ 10 s and ≥ 3× Vidaptive's ramp", src,
              g_ramp >= 10.0 and g_ramp >= 3 * v_ramp, value=g_ramp)
    spans = [(3, 40), (43, 80), (83, 120)]
    totals = [(_rate(v, a, b), _rate(copa, a, b), _rate(v, a, b, media_only=True)) for a, b in spans]
    worst = max(abs(tv / tc - 1) for tv, tc, _ in totals)
    ctx.check("E1c", "periodic link: Vidaptive's total rate against backlogged Copa, [3, 40) / [43, 80) / [83, 120) s",
              "\"nearly identical\" (§2.1, Fig. 3)",
              " / ".join(f"{tv / 1e6:.3f} vs {tc / 1e6:.3f}" for tv, tc, _ in totals) + " Mbit/s",
              "each within ±10 %", src, worst <= 0.10, value=worst)
    ctx.check("E1d", "periodic link: Vidaptive's video (media only) in the same spans", "most of it is video: the encoder target is α·CC-Rate (§3.4)",
              " / ".join(f"{m / 1e6:.3f}" for *_, m in totals) + " Mbit/s", "≥ 50 % of its total in each span", src,
              all(m >= 0.5 * tv for tv, _, m in totals))
    encoded = v.frames.filter(pl.col("size") > 0).height / 120.0
    ctx.check("E1e", "periodic link: Vidaptive's frames encoded per second", "27 frame/s on average on cellular traces (§5.2)",
              fmt(encoded, 1, "frame/s"), "≥ 20 frame/s", src, encoded >= 20.0, value=encoded)

    def worst_delay(r) -> float:
        f = r.frames.filter((pl.col("flow") == 0) & (pl.col("capture_ns") >= 40 * NS) & (pl.col("capture_ns") < 50 * NS)
                            & (pl.col("delay_ns") >= 0))
        return float(f["delay_ns"].max()) / 1e6 if f.height else math.nan

    sv, sg = worst_delay(v), worst_delay(gcc)
    ctx.check("E1f", "periodic link: worst frame delay of the frames captured 40–50 s (after the drop)",
              "GCC > 1 s; Vidaptive far lower (§2.1, Fig. 1)", f"Vidaptive {fmt(sv, 0)} ms, GCC {fmt(sg, 0)} ms",
              "Vidaptive ≤ 1/2 of GCC's", src, sv <= sg / 2, value=sv / sg if sg else None)
    return runs


def _periodic_figure(ctx: Context, runs: dict) -> None:
    fig = Figure(figsize=(10, 7), layout="constrained")
    top, bottom = fig.subplots(2, 1, sharex=True)
    first = next(iter(runs.values()))
    t, cap = series.capacity(first.capacity)
    keep = t <= 120
    top.fill_between(t[keep], cap[keep], step="post", color="0.55", alpha=0.25, linewidth=0, label="link capacity")
    for (label, r), color in zip(runs.items(), _colors(len(runs))):
        p = r.packets.filter(pl.col("depart_ns") >= 0)
        idx = (p["depart_ns"].to_numpy() // (NS // 2)).astype(int)
        rate = np.bincount(idx[idx < 240], weights=p["size"].to_numpy()[idx < 240] * 8.0, minlength=240) / 0.5 / 1e6
        top.plot(np.arange(240) * 0.5 + 0.25, rate, color=color, linewidth=1.0, label=label)
        if r.frames.height:
            ft, fd = series.frame_delay(r.frames, 0)
            bottom.plot(*series.break_gaps(ft, fd), color=color, linewidth=0.8, label=label)
    top.set_ylabel("sent through the bottleneck (Mbit/s, 500 ms bins)")
    top.set_ylim(bottom=0)
    top.legend(loc="upper right", fontsize="small")
    top.set_title("Vidaptive §2.1: the periodic link, 2 Mbit/s and 500 kbit/s every 40 s (lagged encoder)")
    bottom.set_yscale("log")
    bottom.set_ylabel("frame delay (ms, log scale)")
    bottom.set_xlabel("frame capture time (s)")
    bottom.set_xlim(0, 120)
    bottom.legend(loc="upper right", fontsize="small")
    for ax in (top, bottom):
        ax.grid(True, which="both", alpha=0.3)
    ctx.save_figure(fig, "periodic", "The periodic link (paper Figs. 1 and 3): rates through the bottleneck (video "
                    "and dummies) and frame delay over time, Vidaptive against GCC and a backlogged Copa.")


# -- E4, E5: the traces (tests/test_vidaptive_traces.py) ---------------------------------------


def _tables_script(results_dir: Path) -> str:
    """experiments/vidaptive/tables.py's Markdown for a sweep folder."""
    path = experiments_dir() / "vidaptive" / "tables.py"
    spec = importlib.util.spec_from_file_location("rtcc_vidaptive_tables", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        module.main(results_dir)
    return buf.getvalue()


def per_trace(runs: pl.DataFrame) -> pl.DataFrame:
    """Means over seeds per (trace, variant) of the video flow's metrics (tables.py's first table)."""
    runs = runs.filter(pl.col("flow") == "video").with_columns(
        pl.col("path.forward.trace").str.split("/").list.last().alias("trace"))
    return runs.group_by(["trace", "variant"], maintain_order=True).agg([pl.col(m).mean() for m in METRICS])


def by_variant(cells: pl.DataFrame) -> dict[str, dict]:
    """Per variant, the means over traces of its ratios to GCC (as the test and tables.py compute them)."""
    gcc = cells.filter(pl.col("variant") == "gcc").select(["trace"] + [pl.col(m).alias(f"gcc_{m}") for m in METRICS])
    joined = cells.join(gcc, on="trace")
    out = {}
    for (variant,), g in joined.group_by(["variant"]):
        out[variant] = {
            "util_ratio": (g["utilization"] / g["gcc_utilization"]).mean(),
            "util": g["utilization"].mean(),
            "bitrate_ratio": (g["video_bitrate_bps"] / g["gcc_video_bitrate_bps"]).mean(),
            "bitrate": g["video_bitrate_bps"].mean(),
            "dpsnr": (g["psnr_db"] - g["gcc_psnr_db"]).mean(),
            "fps_ratio": (g["display_rate_fps"] / g["gcc_display_rate_fps"]).mean(),
            "fps": g["display_rate_fps"].mean(),
            "p50": g["frame_latency_ms_p50"].mean(),
            "p95": g["frame_latency_ms_p95"].mean(),
            "better_p95": int((g["frame_latency_ms_p95"] < g["gcc_frame_latency_ms_p95"]).sum()),
            "traces": g.height,
        }
    return out


def _trace_checks(ctx: Context) -> pl.DataFrame | None:
    sweep, missing, looked, total = _traces_sweep(ctx)
    partial = ""
    if missing:
        where = " or ".join(str(p) for p in looked) or "(no folder: not a source checkout; give --traces DIR)"
        ctx.note(f"not run: traces not found at {where}: {', '.join(missing)} ({len(missing)} of {total} traces); "
                 f"the trace sweep ran on the other {total - len(missing)} only. Give --traces DIR for the folder "
                 "that holds them.")
        partial = (f"only {total - len(missing)} of {total} traces ran (not run: traces not found at {where}); "
                   "the paper's numbers are means over its traces")
    result = ctx.run_sweep(sweep, "traces", "the cellular traces (E4, E5)")
    (ctx.folder / "data" / "traces" / "tables.md").write_text(_tables_script(ctx.folder / "data" / "traces"),
                                                               encoding="utf-8")
    ctx.keep("data/traces/tables.md", "experiments/vidaptive/tables.py's tables: per trace and variant, and the "
             "ratios to GCC over traces")
    cells = per_trace(result.runs)
    m = by_variant(cells)
    seeds = sweep.seeds
    over = f"mean over {m['gcc']['traces']} traces of per-trace ratios to GCC, " + \
        (f"seed {seeds[0]}" if len(seeds) == 1 else f"each trace's mean over seeds {', '.join(map(str, seeds))}")

    def check(id, headline, paper, ours, tolerance, source, ok, value=None, reason=""):
        if partial:
            ctx.check(id, headline, paper, ours, tolerance, source, None, reason=partial, value=value)
        else:
            ctx.check(id, headline, paper, ours, tolerance, source, ok, reason=reason, value=value)

    v, g, r = m["vidaptive"], m["gcc"], m["vidaptive-rocc"]
    e4 = f"{TEST}::test_e4_vidaptive_against_gcc; research vidaptive.md §7.2 E4"
    check("E4a", f"traces: Vidaptive's utilisation ÷ GCC's ({over})", "2.5× (§5.2)", f"{v['util_ratio']:.2f}×",
          "≥ 1.8×", e4, v["util_ratio"] >= 1.8, v["util_ratio"])
    check("E4b", "traces: Vidaptive's video bitrate ÷ GCC's", "~2×, up to 2.7× (§5.2)", f"{v['bitrate_ratio']:.2f}×",
          "1.5–2.7×", e4, 1.5 <= v["bitrate_ratio"] <= 2.7, v["bitrate_ratio"])
    check("E4c", "traces: Vidaptive's PSNR − GCC's", "+1.6 dB (abstract, §5.2)", f"{v['dpsnr']:+.2f} dB", "≥ +0.8 dB",
          e4, v["dpsnr"] >= 0.8, v["dpsnr"])
    check("E4d", "traces: Vidaptive's frame rate ÷ GCC's", "0.9× (27 frame/s, §5.2)", f"{v['fps_ratio']:.2f}×",
          "0.75–0.97× (notes: 0.8–0.97; the test allows 0.75, docs/vidaptive.md)", e4,
          0.75 <= v["fps_ratio"] <= 0.97, v["fps_ratio"])
    check("E4e", "traces: P95 frame latency, mean over traces", "4120 → 1433 ms, all frames pooled (§5.2)",
          f"GCC {g['p95']:.0f} → Vidaptive {v['p95']:.0f} ms", "Vidaptive lower (the direction; the test)", e4,
          v["p95"] < g["p95"], v["p95"])
    cut = 1 - v["p95"] / g["p95"]
    check("E4f", "traces: P95 frame latency reduction", "−65 % (4120 → 1433 ms, §5.2)", f"{-100 * cut:+.0f} %",
          "≤ −50 % (research vidaptive.md §7.2 E4)", "research vidaptive.md §7.2 E4; docs/vidaptive.md (\"direction "
          "yes, size no\")", cut >= 0.5, cut,
          reason="" if cut >= 0.5 else "known (docs/vidaptive.md): our GCC's tail on these traces is 1.4 s, not the "
          "paper's 4.1 s, so there is less to win; the paper pools frames over 16 traces of its own")
    check("E4g", "traces: P50 frame latency, Vidaptive − GCC", "+47 ms (148 → 195 ms, §5.2)",
          f"{v['p50'] - g['p50']:+.0f} ms ({g['p50']:.0f} → {v['p50']:.0f})", "≤ +100 ms", e4,
          v["p50"] - g["p50"] <= 100, v["p50"] - g["p50"])
    share = v["better_p95"] / v["traces"]
    check("E4h", "traces: traces on which Vidaptive's P95 is lower than GCC's", "10 of 16 (§5.2)",
          f"{v['better_p95']} of {v['traces']}", "at least half (research vidaptive.md §7.2 E4: ≥ 8 of 16)",
          "research vidaptive.md §7.2 E4; docs/vidaptive.md (\"no\")", share >= 0.5, share,
          reason="" if share >= 0.5 else "known (docs/vidaptive.md): Vidaptive's P95 is better where GCC's tail is "
          "long and 0.08–0.25 s worse where GCC's P95 is already below 200 ms")
    check("E4i", "traces: Vidaptive over RoCC: utilisation, bitrate, frame rate ÷ GCC",
          "> 3×, ~2×, ~16 % lower frame rate (§5.5, Fig. 13)",
          f"{r['util_ratio']:.2f}×, {r['bitrate_ratio']:.2f}×, {r['fps_ratio']:.2f}×", "> 2.5×, > 1.5×, < 1.0×",
          f"{TEST}::test_e4_the_rocc_variant_goes_the_same_way",
          r["util_ratio"] > 2.5 and r["bitrate_ratio"] > 1.5 and r["fps_ratio"] < 1.0, r["util_ratio"])
    copa, cd, cdl = m["copa"], m["copa+dummy"], m["copa+dummy+latency"]
    e5 = f"{TEST}::test_e5_ablation_orderings; research vidaptive.md §7.2 E5"
    check("E5a", "ablation: Copa's P95 frame latency against GCC's", "+3.1 s on average (§5.4, Fig. 11)",
          f"{copa['p95']:.0f} vs {g['p95']:.0f} ms", "Copa's higher", e5, copa["p95"] > g["p95"], copa["p95"] - g["p95"])
    check("E5b", "ablation: Copa+Dummy's utilisation against Copa's", "higher than Copa (§5.4)",
          f"{100 * cd['util']:.1f} vs {100 * copa['util']:.1f} %", "Copa+Dummy's ≥ Copa's", e5, cd["util"] >= copa["util"],
          cd["util"])
    check("E5c", "ablation: Copa+Dummy+Latency's P95 frame latency against GCC's", "−2.2 s on average (§5.4)",
          f"{cdl['p95']:.0f} vs {g['p95']:.0f} ms", "C+D+L's lower", e5, cdl["p95"] < g["p95"], cdl["p95"] - g["p95"])
    check("E5d", "ablation: Vidaptive against Copa+Dummy+Latency: frame rate, bitrate, P95",
          "more frames, less bitrate, P95 lowest (§5.4)",
          f"{v['fps']:.1f} vs {cdl['fps']:.1f} frame/s, {v['bitrate'] / 1e6:.2f} vs {cdl['bitrate'] / 1e6:.2f} Mbit/s, "
          f"{v['p95']:.0f} vs {cdl['p95']:.0f} ms", "fps higher, bitrate lower, P95 ≤ 1.05 × C+D+L's", e5,
          v["fps"] > cdl["fps"] and v["bitrate"] < cdl["bitrate"] and v["p95"] <= 1.05 * cdl["p95"])
    utils = [x["util"] for x in (cd, cdl, v)]
    check("E5e", "ablation: utilisation of the dummy variants (C+D, C+D+L, Vidaptive)", "about the same (§5.4)",
          " / ".join(f"{100 * u:.1f}" for u in utils) + " %", "largest ≤ 1.1 × smallest", e5,
          max(utils) <= 1.1 * min(utils), max(utils) / min(utils))
    return cells


def _traces_figure(ctx: Context, cells: pl.DataFrame) -> None:
    traces = list(dict.fromkeys(cells["trace"].to_list()))
    shown = ["gcc", "vidaptive", "vidaptive-rocc"]
    fig = Figure(figsize=(11, 7), layout="constrained")
    top, bottom = fig.subplots(2, 1, sharex=True)
    x = np.arange(len(traces))
    width = 0.8 / len(shown)
    for i, (variant, color) in enumerate(zip(shown, _colors(len(shown)))):
        rows = {r["trace"]: r for r in cells.filter(pl.col("variant") == variant).iter_rows(named=True)}
        top.bar(x + (i - 1) * width, [100 * rows[t]["utilization"] for t in traces], width, color=color, label=variant)
        bottom.bar(x + (i - 1) * width, [rows[t]["frame_latency_ms_p95"] for t in traces], width, color=color,
                   label=variant)
    top.set_ylabel("link utilisation (%)")
    top.legend(loc="upper right", fontsize="small", ncol=3)
    top.set_title("Vidaptive §5.2: per trace, GCC against Vidaptive over Copa and over RoCC (e4_e5_traces.toml)")
    bottom.set_yscale("log")
    bottom.set_ylabel("frame latency P95 (ms, log scale)")
    bottom.set_xticks(x, [t.replace("-seed1.trace", "").replace("-LTE-", " ") for t in traces], rotation=15)
    for ax in (top, bottom):
        ax.grid(True, axis="y", which="both", alpha=0.3)
    ctx.save_figure(fig, "traces", "Per trace (paper Fig. 9): link utilisation and P95 frame latency (capture to "
                    "display), means over the seeds run.")

    m = by_variant(cells)
    fig = Figure(figsize=(11, 3.8), layout="constrained")
    axes = fig.subplots(1, 4)
    variants = [v for v in VARIANTS if v in m]
    colors = _colors(len(variants))
    for ax, (key, label) in zip(axes, [("util_ratio", "utilisation ÷ GCC"), ("bitrate_ratio", "video bitrate ÷ GCC"),
                                       ("fps_ratio", "frame rate ÷ GCC"), ("p95", "mean P95 latency (ms)")]):
        ax.bar(range(len(variants)), [m[v][key] for v in variants], color=colors)
        ax.set_xticks(range(len(variants)), variants, rotation=60, ha="right", fontsize="small")
        ax.set_title(label, fontsize="medium")
        ax.grid(True, axis="y", alpha=0.3)
    fig.suptitle("Vidaptive §5.4: the ablation (Copa, + dummies, + latency safeguards, + α and resolution)")
    ctx.save_figure(fig, "ablation", "The ablation (paper Fig. 11): each variant's means over traces of its "
                    "per-trace ratios to GCC, and its mean P95 frame latency.")


def reproduce(ctx: Context) -> None:
    runs = _periodic_checks(ctx)
    _periodic_figure(ctx, runs)
    cells = _trace_checks(ctx)
    _traces_figure(ctx, cells)
