"""GCC over AQM and flow queuing (the seed gcc_aqm, §4): E1 (one GCC call alone over each queue
discipline, Fig. 4) and E4 (one call against n TCP Cubic flows, Figs. 6 and 7), from
experiments/gcc_aqm/.

The checks are tests/test_gcc_aqm.py's, with their tolerances (the research notes' gcc_aqm.md §6.3),
plus the notes' checks the docs report as not holding (docs/gcc_aqm.md, "the paper says / here /
holds?"): the goodput around the fair share, utilisation above 90 % at 1 Mbit/s, and the size of
the AQMs' losses with the bursty encoder.
"""

from __future__ import annotations

import numpy as np
import polars as pl
from matplotlib.figure import Figure

from ..demo import experiments_dir
from ..plots import _colors
from ..sweep import Sweep
from . import Context

TITLE = ("the seed gcc_aqm: GCC (WebRTC's Google Congestion Control) over DropTail, CoDel, PIE, SFQ and fq_codel, "
         "§4 (E1: a call alone, Fig. 4; E4: a call against n TCP Cubic flows, Figs. 6-7)")
SHORT = "GCC over AQM and flow queuing (seed gcc_aqm)"
DOCS = "docs/gcc_aqm.md"

FULL_SEEDS, QUICK_SEEDS = [1, 2, 3], [1]
QDISCS = ["droptail", "codel", "pie", "sfq", "fq_codel"]
N = [1, 2, 3, 4]
TEST = "tests/test_gcc_aqm.py"
NOTES = "research gcc_aqm.md §6.3"


def _seeds(quick: bool) -> list[int]:
    return QUICK_SEEDS if quick else FULL_SEEDS


def plan(quick: bool) -> list[str]:
    seeds = ", ".join(map(str, _seeds(quick)))
    n = len(_seeds(quick))
    return [
        f"experiments/gcc_aqm/e1_alone.toml: one GCC call (the paper's profile, capped at 2 Mbit/s) alone over "
        f"DT/300, CoDel, PIE, SFQ and fq_codel at 1, 2 and 5 Mbit/s with the ideal and the lagged encoder, 50 ms RTT, "
        f"300 s, seed{'s' * (n > 1)} {seeds} ({30 * n} runs): §4.1, Fig. 4",
        f"experiments/gcc_aqm/e4_tcp.toml: the call against n = 1..4 Cubic flows (from 20 s) on (n + 1) Mbit/s, "
        f"each queue discipline, 300 s, seed{'s' * (n > 1)} {seeds} ({20 * n} runs): §4.2, Figs. 6-7",
    ]


def _means(result, keys: list[str]) -> dict[tuple, dict]:
    """The video flow's metrics, means over seeds, by the cell's parameters (in ``keys`` order)."""
    video = result.runs.filter(pl.col("flow") == "video")
    numeric = [c for c, t in video.schema.items() if t.is_numeric() and c != "seed"]
    means = video.group_by(keys, maintain_order=True).agg([pl.col(c).mean() for c in numeric])
    return {tuple(row[k] for k in keys): row for row in means.iter_rows(named=True)}


def _over(seeds: list[int]) -> str:
    return f"seed {seeds[0]}" if len(seeds) == 1 else f"means over seeds {', '.join(map(str, seeds))}"


def reproduce(ctx: Context) -> None:
    seeds = _seeds(ctx.quick)
    folder = experiments_dir() / "gcc_aqm"
    e4 = ctx.run_sweep(Sweep.from_file(folder / "e4_tcp.toml").with_seeds(seeds), "e4", "E4: GCC against n Cubic flows")
    e4m = {(q, int(n.split("=")[1])): row for (q, n), row in _means(e4, ["path.forward.queue", "variant"]).items()}
    _e4_checks(ctx, e4m, seeds)
    e1 = ctx.run_sweep(Sweep.from_file(folder / "e1_alone.toml").with_seeds(seeds), "e1", "E1: GCC alone")
    e1m = _means(e1, ["flows[0].encoder", "path.forward.capacity", "path.forward.queue"])
    _e1_checks(ctx, e1m, seeds)
    _figures(ctx, e1m, e4m, seeds)


def _e4_checks(ctx: Context, e4: dict, seeds: list[int]) -> None:
    over = _over(seeds)
    pct = lambda x: f"{100 * x:.2f}"  # noqa: E731

    q = [e4[("droptail", n)]["queuing_delay_ms_p50"] for n in N]
    ctx.check("E4-D1", f"E4, DT/300: median queuing of the video's packets, n = 1..4 ({over})",
              "≈ 300 ms: TCP fills the buffer (§4.2)", " / ".join(f"{x:.0f}" for x in q) + " ms", "220–320 ms at every n",
              f"{TEST}::test_droptail_300ms_fills_with_tcp; {NOTES} E34-D1", all(220 <= x <= 320 for x in q))
    loss = [e4[("droptail", n)]["loss_rate"] for n in N]
    ctx.check("E4-L1", f"E4, DT/300: video loss, n = 1..4 ({over})", "(0, 0.5] % (§4.2)",
              " / ".join(pct(x) for x in loss) + " %", "(0, 1.5] % (notes E34-L1: (0, 1] %)",
              f"{TEST}::test_droptail_300ms_fills_with_tcp; {NOTES} E34-L1", all(0 < x <= 0.015 for x in loss))
    parts, ok = [], True
    for kind in ["codel", "pie", "fq_codel"]:
        med = [e4[(kind, n)]["queuing_delay_ms_p50"] for n in N]
        ok &= all(x <= (65 if n == 1 else 55) for n, x in zip(N, med))
        parts.append(f"{kind} " + " / ".join(f"{x:.0f}" for x in med))
    ctx.check("E4-D2", f"E4, CoDel, PIE, fq_codel: median queuing, n = 1..4 ({over})", "≈ 50 ms or less (§4.2)",
              "; ".join(parts) + " ms", "≤ 65 ms at n = 1, ≤ 55 ms beyond",
              f"{TEST}::test_aqms_bring_delay_near_or_below_50ms_at_higher_loss; {NOTES} E34-D2", ok)
    parts = [f"{k} " + " / ".join(pct(e4[(k, n)]["loss_rate"]) for n in (3, 4)) for k in ["codel", "pie"]]
    ctx.check("E4-L2", f"E4, CoDel and PIE: video loss at n = 3, 4 ({over})", "> 1 % (§4.2)", "; ".join(parts) + " %",
              "> 1 %", f"{TEST}::test_aqms_bring_delay_near_or_below_50ms_at_higher_loss; {NOTES} E34-L2",
              all(e4[(k, n)]["loss_rate"] > 0.01 for k in ["codel", "pie"] for n in (3, 4)))
    parts, ok = [], True
    for kind in ["codel", "pie", "fq_codel"]:
        losses = [e4[(kind, n)]["loss_rate"] for n in N]
        ok &= losses[-1] > losses[0] and all(b >= a - 0.002 for a, b in zip(losses, losses[1:]))
        parts.append(f"{kind} " + " / ".join(pct(x) for x in losses))
    ctx.check("E4-L3", f"E4, CoDel, PIE, fq_codel: video loss against n = 1..4 ({over})", "grows with n (§4.2, Fig. 6)",
              "; ".join(parts) + " %", "n = 4 above n = 1, no step down larger than 0.2 points",
              f"{TEST}::test_losses_grow_with_n_for_codel_pie_and_fq_codel; {NOTES} E34-L3", ok)
    sfq = [e4[("sfq", n)] for n in N]
    lowest = all(s["loss_rate"] <= e4[(k, n)]["loss_rate"] for n, s in zip(N, sfq)
                 for k in ["droptail", "codel", "pie", "fq_codel"])
    ctx.check("E4-L4", f"E4, SFQ: video loss and median queuing, n = 1..4 ({over})",
              "the lowest loss, zero in Fig. 8, at the AQMs' low delay (§4.2)",
              " / ".join(pct(s["loss_rate"]) for s in sfq) + " %; " + " / ".join(f"{s['queuing_delay_ms_p50']:.0f}"
                                                                               for s in sfq) + " ms",
              "the lowest of the five at every n, ≤ 0.1 %, median ≤ 55 ms",
              f"{TEST}::test_sfq_gives_the_lowest_loss; {NOTES} E34-L4",
              lowest and all(s["loss_rate"] <= 0.001 and s["queuing_delay_ms_p50"] <= 55 for s in sfq))
    ratios = {(k, n): e4[(k, n)]["throughput_bps"] / 1e6 for k in QDISCS for n in N}
    off = [f"{k} n={n} {r:.2f}" for (k, n), r in ratios.items() if not 0.6 <= r <= 1.4]
    ctx.check("E4-G", f"E4: video goodput ÷ the fair share (1 Mbit/s), every qdisc and n ({over})",
              "\"around the fair share\" for every qdisc (§4.2)",
              f"{min(ratios.values()):.2f}–{max(ratios.values()):.2f}; outside the band: " + (", ".join(off) or "none"),
              "0.6–1.4 everywhere", f"{NOTES} E34-G; docs/gcc_aqm.md E4 (\"no\" for PIE and DT/300)", not off,
              value=min(ratios.values()),
              reason="" if not off else "known (docs/gcc_aqm.md): under PIE the call's loss-based controller keeps GCC "
              "far below the fair share; under DT/300 with one Cubic flow the delay-based controller backs off while "
              "Cubic fills the buffer. Goodput here is over the call's whole life (TCP joins at 20 s).")


def _e1_checks(ctx: Context, e1: dict, seeds: list[int]) -> None:
    over = _over(seeds)
    pct = lambda x: f"{100 * x:.2f}"  # noqa: E731
    cell = lambda enc, cap, q: e1[(enc, cap, q)]  # noqa: E731
    caps = ["1Mbps", "2Mbps", "5Mbps"]
    test_ideal = f"{TEST}::test_gcc_alone_with_even_frames_sees_no_delay_gain_and_no_loss"
    test_lagged = f"{TEST}::test_with_a_bursty_encoder_codel_and_pie_add_loss_and_trim_the_tail"

    losses = [cell("ideal", c, "droptail")["loss_rate"] for c in caps]
    ctx.check("E1-L0", f"E1, ideal encoder: DT/300's loss at 1, 2, 5 Mbit/s ({over})", "0 (§4.1)",
              " / ".join(pct(x) for x in losses) + " %", "0", f"{test_ideal}; {NOTES} E1-L0", all(x == 0 for x in losses))
    gaps = [(c, k, cell("ideal", c, k)["queuing_delay_ms_p50"] - cell("ideal", c, "droptail")["queuing_delay_ms_p50"])
            for c in caps for k in ["codel", "pie"]]
    worst = max(abs(g) for *_, g in gaps)
    ctx.check("E1-D1", f"E1, ideal encoder: CoDel's and PIE's median queuing − DT/300's ({over})",
              "\"negligibly lower\" (§4.1)", f"largest difference {worst:.1f} ms", "within ±5 ms",
              f"{test_ideal}; {NOTES} E1-D1", worst <= 5, value=worst)
    u2 = cell("ideal", "2Mbps", "droptail")["utilization"]
    ctx.check("E1-U2", f"E1, ideal encoder: utilisation at 2 Mbit/s ({over})", "> 90 % (§4.1)", f"{100 * u2:.1f} %",
              "≥ 90 %", f"{test_ideal}; {NOTES} E1-U", u2 >= 0.90, value=u2)
    u1 = cell("ideal", "1Mbps", "droptail")["utilization"]
    ctx.check("E1-U1", f"E1, ideal encoder: utilisation at 1 Mbit/s ({over})", "> 90 % (§4.1)", f"{100 * u1:.1f} %",
              "≥ 90 % (the notes ask it in every cell; the test only at 2 Mbit/s)",
              f"{NOTES} E1-U; docs/gcc_aqm.md E1 (\"ideal: at 2 Mbit/s\")", u1 >= 0.90, value=u1,
              reason="" if u1 >= 0.90 else "known (docs/gcc_aqm.md): 87 % at 1 Mbit/s with even frames")
    parts, ok = [], True
    for c in ["1Mbps", "2Mbps"]:
        loss = {k: cell("lagged", c, k)["loss_rate"] for k in ["codel", "pie", "droptail"]}
        ok &= loss["codel"] > loss["pie"] > loss["droptail"]
        parts.append(f"{c}: " + " > ".join(pct(loss[k]) for k in ["codel", "pie", "droptail"]))
    ctx.check("E1-L1", f"E1, lagged encoder: loss CoDel > PIE > DT/300 at 1 and 2 Mbit/s ({over})",
              "CoDel ≈ 0.75 % > PIE < 0.5 % > DT 0 at 1 Mbit/s (§4.1)", "; ".join(parts) + " %", "the ordering",
              f"{test_lagged}; {NOTES} E1-L1, E1-L2", ok)
    parts, ok = [], True
    for c in ["1Mbps", "2Mbps"]:
        p95 = {k: cell("lagged", c, k)["queuing_delay_ms_p95"] for k in ["droptail", "codel", "pie"]}
        ok &= p95["codel"] < p95["droptail"] and p95["pie"] < p95["droptail"]
        parts.append(f"{c}: DT {p95['droptail']:.0f}, CoDel {p95['codel']:.0f}, PIE {p95['pie']:.0f}")
    ctx.check("E1-D2", f"E1, lagged encoder: P95 queuing under CoDel and PIE against DT/300 ({over})",
              "the AQMs trim the 95th percentile (48 → 30 ms, §4.1)", "; ".join(parts) + " ms", "CoDel's and PIE's lower",
              f"{test_lagged}; {NOTES} E1-D2", ok)
    codel, pie = cell("lagged", "1Mbps", "codel")["loss_rate"], cell("lagged", "1Mbps", "pie")["loss_rate"]
    ok = 0.003 <= codel <= 0.015 and 0 < pie <= 0.008
    ctx.check("E1-L1m", f"E1, lagged encoder at 1 Mbit/s: the size of CoDel's and PIE's loss ({over})",
              "CoDel ≈ 0.75 %, PIE < 0.5 % (§4.1)", f"CoDel {pct(codel)} %, PIE {pct(pie)} %",
              "CoDel 0.3–1.5 %, PIE (0, 0.8] %", f"{NOTES} E1-L1; docs/gcc_aqm.md \"The REMB cap fix\"", ok, value=codel,
              reason="" if ok else "known (docs/gcc_aqm.md): since the REMB cap fix the lagged encoder's calls send "
              "more and lose more in the bursts behind CoDel, PIE and fq_codel; the ordering holds, the size does not")
    dt = [cell("lagged", c, "droptail")["loss_rate"] for c in ["1Mbps", "2Mbps"]]
    ctx.check("E1-L0l", f"E1, lagged encoder: DT/300's loss at 1 and 2 Mbit/s ({over})", "0 (§4.1)",
              " / ".join(f"{100 * x:.3f}" for x in dt) + " %", "≤ 0.05 %", f"{NOTES} E1-L0; docs/gcc_aqm.md E1",
              all(x <= 0.0005 for x in dt), value=max(dt),
              reason="" if all(x <= 0.0005 for x in dt) else "known (docs/gcc_aqm.md): the lagged encoder's keyframes "
              "and motion bursts overflow the 37.5 kB DT/300 buffer at 1 Mbit/s now and then (the paper's clip is a "
              "static talking head)")


def _figures(ctx: Context, e1: dict, e4: dict, seeds: list[int]) -> None:
    colors = dict(zip(QDISCS, _colors(len(QDISCS))))
    names = {"droptail": "DT/300", "codel": "CoDel", "pie": "PIE", "sfq": "SFQ", "fq_codel": "fq_codel"}
    fig = Figure(figsize=(12, 3.8), layout="constrained")
    axes = fig.subplots(1, 3)
    for ax, (key, label, scale) in zip(axes, [("throughput_bps", "video goodput (Mbit/s)", 1e-6),
                                              ("loss_rate", "video loss (%)", 100),
                                              ("queuing_delay_ms_p50", "median queuing delay (ms, log)", 1)]):
        for q in QDISCS:
            ax.plot(N, [e4[(q, n)][key] * scale for n in N], "o-", color=colors[q], label=names[q])
        ax.set_xticks(N)
        ax.set_xlabel("TCP Cubic flows n (capacity n + 1 Mbit/s)")
        ax.set_title(label, fontsize="medium")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].axhline(1.0, color="0.5", linestyle="--", linewidth=0.8, label="fair share")
    axes[2].set_yscale("log")
    axes[0].legend(fontsize="x-small", loc="lower right")
    fig.suptitle(f"gcc_aqm §4.2 (E4): one GCC call against n Cubic flows ({_over(seeds)})")
    ctx.save_figure(fig, "e4", "E4 (paper Figs. 6 and 7): the video's goodput, loss and median queuing delay per "
                    "queue discipline as TCP flows are added.")

    fig = Figure(figsize=(12, 6.5), layout="constrained")
    axes = fig.subplots(2, 3)
    x = np.arange(len(QDISCS))
    for row, enc in enumerate(["ideal", "lagged"]):
        for ax, (key, label, scale) in zip(axes[row], [("utilization", "utilisation (%)", 100),
                                                       ("loss_rate", "loss (%)", 100),
                                                       ("queuing_delay_ms_p95", "queuing P95 (ms)", 1)]):
            for i, cap in enumerate(["1Mbps", "2Mbps"]):
                vals = [e1[(enc, cap, q)][key] * scale for q in QDISCS]
                ax.bar(x + (i - 0.5) * 0.38, vals, 0.36, color=_colors(2)[i], label=cap.replace("Mbps", " Mbit/s"))
            ax.set_xticks(x, [names[q] for q in QDISCS], fontsize="small")
            ax.set_ylim(bottom=0)
            if key == "loss_rate" and not any(e1[(enc, c, q)][key] for c in ["1Mbps", "2Mbps"] for q in QDISCS):
                ax.set_ylim(0, 1)
                ax.text(0.5, 0.5, "no loss", transform=ax.transAxes, ha="center", va="center", color="0.4")
            ax.set_title(f"{enc} encoder: {label}", fontsize="medium")
            ax.grid(True, axis="y", alpha=0.3)
    axes[0][0].legend(fontsize="x-small", loc="lower right")
    fig.suptitle(f"gcc_aqm §4.1 (E1): one GCC call alone over each queue discipline ({_over(seeds)})")
    ctx.save_figure(fig, "e1", "E1 (paper Fig. 4): utilisation, loss and 95th-percentile queuing delay per queue "
                    "discipline at 1 and 2 Mbit/s, with even frames (ideal) and a bursty encoder (lagged). "
                    "At 5 Mbit/s the call is capped at 2 Mbit/s and no queue forms.")
