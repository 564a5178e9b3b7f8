"""Tables for the Vidaptive trace sweep (E4 main result, E5 ablation), per trace and over traces.

    python3 experiments/vidaptive/tables.py OUT_DIR     # OUT_DIR written by `rtcc sweep ... e4_e5_traces.toml`

Prints Markdown: per trace and variant the utilisation, video bitrate, PSNR, P50/P95 frame latency
(capture to display) and displayed frame rate, means over seeds; then, as the paper reports them,
each variant's per-trace ratios to GCC averaged over traces (utilisation, bitrate, frame rate), the
mean PSNR difference, and the mean over traces of the P50/P95 latencies. (The paper's latency
percentiles pool all frames of all traces; ours average per-trace percentiles.)
"""

import sys
from pathlib import Path

import polars as pl

METRICS = ["utilization", "video_bitrate_bps", "psnr_db", "frame_latency_ms_p50", "frame_latency_ms_p95", "display_rate_fps"]


def main(out: Path) -> None:
    runs = pl.read_csv(out / "results.csv").filter(pl.col("flow") == "video")
    runs = runs.with_columns(pl.col("path.forward.trace").str.split("/").list.last().alias("trace"))
    cells = runs.group_by(["trace", "variant"], maintain_order=True).agg([pl.col(m).mean() for m in METRICS])
    print("| trace | variant | util % | video Mbit/s | PSNR dB | latency P50 ms | latency P95 ms | fps |")
    print("|---|---|---|---|---|---|---|---|")
    for r in cells.iter_rows(named=True):
        print(f"| {r['trace']} | {r['variant']} | {100 * r['utilization']:.1f} | {r['video_bitrate_bps'] / 1e6:.2f} "
              f"| {r['psnr_db']:.1f} | {r['frame_latency_ms_p50']:.0f} | {r['frame_latency_ms_p95']:.0f} | {r['display_rate_fps']:.1f} |")
    gcc = cells.filter(pl.col("variant") == "gcc").select(["trace"] + [pl.col(m).alias(f"gcc_{m}") for m in METRICS])
    joined = cells.join(gcc, on="trace")
    print()
    print("| variant | utilisation ÷ GCC | bitrate ÷ GCC | ΔPSNR dB | fps ÷ GCC | mean P50 ms (GCC) | mean P95 ms (GCC) | traces with lower P95 than GCC |")
    print("|---|---|---|---|---|---|---|---|")
    for variant, g in joined.group_by("variant", maintain_order=True):
        v = variant[0]
        print(f"| {v} | {(g['utilization'] / g['gcc_utilization']).mean():.2f} | {(g['video_bitrate_bps'] / g['gcc_video_bitrate_bps']).mean():.2f} "
              f"| {(g['psnr_db'] - g['gcc_psnr_db']).mean():+.2f} | {(g['display_rate_fps'] / g['gcc_display_rate_fps']).mean():.2f} "
              f"| {g['frame_latency_ms_p50'].mean():.0f} ({g['gcc_frame_latency_ms_p50'].mean():.0f}) "
              f"| {g['frame_latency_ms_p95'].mean():.0f} ({g['gcc_frame_latency_ms_p95'].mean():.0f}) "
              f"| {(g['frame_latency_ms_p95'] < g['gcc_frame_latency_ms_p95']).sum()}/{g.height} |")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(Path(sys.argv[1]))
