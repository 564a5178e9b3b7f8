"""Tables for the cellular sweeps: per link and controller, utilisation, frame latency P95 and
loss, means over seeds; and per controller the mean over links.

    python3 experiments/cellular/tables.py OUT_DIR   # OUT_DIR from `rtcc sweep experiments/cellular/*.toml`
"""

import sys
from pathlib import Path

import polars as pl

METRICS = ["utilization", "frame_latency_ms_p95", "loss_rate"]


def link_column(runs: pl.DataFrame) -> pl.DataFrame:
    if "path.forward.trace" in runs.columns:
        return runs.with_columns(pl.col("path.forward.trace").str.split("/").list.last().alias("link"))
    return runs.with_columns(("aggregation " + pl.col("path.forward.aggregation")).alias("link"))


def main(out: Path) -> None:
    runs = link_column(pl.read_csv(out / "results.csv").filter(pl.col("flow") == "video"))
    cells = runs.group_by(["link", "variant"], maintain_order=True).agg([pl.col(m).mean() for m in METRICS])
    variants = cells["variant"].unique(maintain_order=True).to_list()
    print("| link | " + " | ".join(variants) + " |")
    print("|---|" + "---|" * len(variants))
    for link, g in cells.group_by("link", maintain_order=True):
        row = {r["variant"]: r for r in g.iter_rows(named=True)}
        print(f"| {link[0]} | " + " | ".join(
            f"{100 * row[v]['utilization']:.0f} % · {row[v]['frame_latency_ms_p95']:.0f} ms · {100 * row[v]['loss_rate']:.2f} %"
            for v in variants) + " |")
    print()
    print("| controller | utilisation (mean over links) | frame latency P95 (mean) | loss (mean) |")
    print("|---|---|---|---|")
    for v in variants:
        g = cells.filter(pl.col("variant") == v)
        print(f"| {v} | {100 * g['utilization'].mean():.1f} % | {g['frame_latency_ms_p95'].mean():.0f} ms | {100 * g['loss_rate'].mean():.2f} % |")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(Path(sys.argv[1]))
