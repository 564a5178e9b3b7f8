"""BBR over bursty token buckets and DASH (Vargas, Drucker, Renganathan, Balasubramanian, Gandhi,
WWW '21): experiments E0-E9 of the research notes (bbr_dash.md §6.2), the paper's Tables 1-3 and
its figures' numbers, and the notes' acceptance checks (§6.3).

The runs, their metrics and the checks are experiments/bbr_dash/tables.py's (``runs``,
``run_cell``, ``checks``), each run a cell of the sweep files beside it; tests/test_bbr_dash.py
holds the quick set to the same checks. The checks our model does not meet fail here with the
reason tables.KNOWN gives (docs/bbr_dash.md discusses each).
"""

from __future__ import annotations

import polars as pl
from matplotlib.figure import Figure

from ..plots import _colors
from . import Context, experiment_script

TITLE = ("S. Vargas, R. Drucker, A. Renganathan, A. Balasubramanian, A. Gandhi, \"BBR Bufferbloat in DASH "
         "Video\", The Web Conference (WWW '21), 2021")
SHORT = "BBR bufferbloat in DASH video (Vargas et al. 2021)"
DOCS = "docs/bbr_dash.md"
TEST = "tests/test_bbr_dash.py"
NOTES = "research bbr_dash.md §6.3"


def tables():
    """experiments/bbr_dash/tables.py, loaded once per process."""
    return experiment_script("bbr_dash")


def run_cell(item: tuple) -> dict:
    """One run and its metrics (a worker process's task)."""
    return tables().run_cell(item)


def plan(quick: bool) -> list[str]:
    items = tables().runs(quick)
    by = {}
    for stem, _, _ in items:
        by[stem] = by.get(stem, 0) + 1
    files = ", ".join(f"{stem}.toml ({n})" for stem, n in by.items())
    return [
        f"experiments/bbr_dash/tables.py{' --quick' if quick else ''}: {len(items)} runs of the sweep files "
        f"{files}; the seed's path: tbf at 25 Mbit/s (a 1 Gbit/s line behind the bucket), 100 ms RTT unless the "
        "experiment varies it, a DASH session of 127 five-second segments over the 11-rung ladder (dash.js "
        "v3.0.3's DYNAMIC over HTTP/2 unless varied); one run per cell (deterministic)",
        "E4 and E5 (Table 2, Figs. 8, 9, 14) read the state logs of E3's 100 KB and 10 MB runs",
    ]


def _figures(ctx: Context, df: pl.DataFrame) -> None:
    t = tables()
    e3 = df.filter(pl.col("experiment") == "e3")
    if e3.height:
        order = ["10KB", "100KB", "1MB", "3MB", "5MB", "10MB"]
        ccs = [c for c in ("cubic", "bbr", "bbr2", "bbr-s", "bbr2-s") if c in e3["controller"].to_list()]
        fig = Figure(figsize=(11, 4.2), layout="constrained")
        axes = fig.subplots(1, 2)
        for cc, color in zip(ccs, _colors(len(ccs))):
            rows = {r["queue"]: r for r in e3.filter(pl.col("controller") == cc).iter_rows(named=True)}
            xs = [q for q in order if q in rows]
            axes[0].plot([order.index(q) for q in xs], [rows[q]["quality"] for q in xs], marker="o", color=color,
                         label=cc)
            axes[1].plot([order.index(q) for q in xs], [rows[q]["stall_rate"] for q in xs], marker="o",
                         color=color, label=cc)
        axes[0].set_ylabel("average quality index (0-10)")
        axes[0].set_ylim(0, 10.5)
        axes[1].set_ylabel("stall rate (Eq. 1)")
        axes[1].set_ylim(bottom=0)
        for ax in axes:
            ax.set_xticks(range(len(order)), order)
            ax.set_xlabel("bottleneck buffer")
            ax.grid(True, alpha=0.3)
        axes[0].legend(fontsize="small")
        fig.suptitle("DASH QoE against the buffer, 1 MB burst (paper Figs. 4-5: quality < 5 for all at 10 MB)")
        ctx.save_figure(fig, "qoe_vs_buffer", "E3 (paper Figs. 4 and 5): quality and stall rate against the "
                        "bottleneck buffer. The paper's collapse at 3-10 MB does not appear (docs/bbr_dash.md).")
    e2 = df.filter(pl.col("experiment") == "e2")
    if e2.height:
        bursts = list(t.PAPER_TABLE3)
        fig = Figure(figsize=(7.5, 4.5), layout="constrained")
        ax = fig.add_subplot()
        ccs = [c for c in t.BBR_FAMILY if c in e2["controller"].to_list()]
        at = {b: i for i, b in enumerate(bursts)}  # one position per burst, ours or not
        colors = dict(zip(ccs, _colors(len(ccs))))
        for cc in ccs:
            rows = {r["burst"]: r for r in e2.filter(pl.col("controller") == cc).iter_rows(named=True)}
            xs = [b for b in bursts if b in rows]
            ax.plot([at[b] for b in xs], [rows[b]["bw_mean_mbps"] for b in xs], marker="o", color=colors[cc],
                    label=f"{cc} (ours)")
        for k, cc in enumerate(("bbr", "bbr2")):
            ax.plot(range(len(bursts)), [t.PAPER_TABLE3[b][k] for b in bursts], ls=":", marker="x",
                    color=colors.get(cc, "0.4"), label=f"{cc} (paper, Table 3)")
        ax.set_xticks(range(len(bursts)), bursts)
        ax.axhline(25, color="k", lw=0.8, ls="--", label="token rate R")
        ax.set_xlabel("token-bucket burst B (10 MB buffer)")
        ax.set_ylabel("mean bandwidth estimate (Mbit/s)")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize="small")
        ctx.save_figure(fig, "estimate_vs_burst", "E2 (paper Table 3): BBR's mean bandwidth estimate against the "
                        "burst, ours (solid) beside the paper's (dotted); the -S variants stay near R.")


def reproduce(ctx: Context) -> None:
    t = tables()
    items = t.runs(ctx.quick)
    ctx.log(f"{len(items)} runs")
    df = pl.DataFrame(ctx.map(run_cell, items), infer_schema_length=None)
    t.write_csv(df, ctx.path("data/runs.csv"))
    ctx.path("data/tables.md").write_text(t.tables(df), encoding="utf-8")
    ctx.keep("data/runs.csv", "one row per run: QoE, estimate, time in state, RTT")
    ctx.keep("data/tables.md", "Tables 1-3 and the figures' numbers beside the paper's")
    for c in t.checks(df):
        reason = f"known: {c['known']}" if c["known"] and not c["ok"] else ""
        source = f"{TEST}; {NOTES}" + (" (a strict expected failure in the test)" if c["known"] else "")
        ctx.check(c["id"], c["headline"], c["paper"], c["ours"], c["tolerance"], source, bool(c["ok"]),
                  reason=reason)
    if ctx.quick:
        ctx.note("The quick set runs the cells every check needs once (54 of the 96); the figures and Table 3 "
                 "have fewer points than the full set's.")
    _figures(ctx, df)
