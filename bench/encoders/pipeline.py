"""The media pipeline re-measured with a real encoder: how much of the controller's target became
displayed video, and how many captured frames the sender skipped, with the real VP8 encoder and
with the synthetic `lagged` model, on cellular traces; and the quality of decoded frames for gcc,
sqp and vidaptive (and gcc with x264) on the bundled LTE-like trace beside the lagged model's PSNR.

    python3 bench/encoders/pipeline.py            # the tables of docs/real-video.md (~20 min with -j 2)
    python3 bench/encoders/pipeline.py --quick    # 20 s runs, two traces

It rewrites the tables between the marker comments of docs/real-video.md (--print: only print).
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared" / "traces" / "mahimahi"
BUNDLED = ROOT / "traces" / "lte-6mbps-seed1.trace"
DOC = ROOT / "docs" / "real-video.md"


def traces(quick: bool) -> list[Path]:
    shared = sorted(SHARED.glob("*")) if SHARED.is_dir() else []
    if not shared:
        print(f"note: {SHARED} is missing; only the bundled trace is used", file=sys.stderr)
    found = [BUNDLED] + shared
    return found[:2] if quick else found


# The oracle re-plans every `window` with the capacity of the next `window`: its default (100 ms)
# swings the target by up to 100x between plans on these traces (0.2 to 20 Mbit/s on T-Mobile's
# downlink), faster than any encoder settles; 1 s is a target an encoder can follow.
ORACLE_WINDOWS = ("100ms", "1s")


def scenario(trace: Path, controller: str, encoder, duration: str, queue: str, window: str | None = None):
    import rtcc

    flow = {"name": "video", "controller": controller, "encoder": encoder, "frame_jitter": "1ms"}
    if window is not None:
        flow["params"] = {"window": window}
    return rtcc.Scenario.from_dict({
        "name": f"{trace.name}-{controller}", "duration": duration, "seed": 1,
        "path": {"forward": {"trace": str(trace), "delay": "25ms", "queue": queue},
                 "reverse": {"delay": "25ms"}},
        "flows": [flow],
    }, base_dir=ROOT)


def one(job):
    trace, controller, encoder, duration, queue, score, window = job
    t = time.time()
    r = scenario(Path(trace), controller, encoder, duration, queue, window).run()
    f = r.summary["flows"][0]
    import polars as pl

    last = dict(r.state.group_by("signal").agg(pl.col("value").last()).iter_rows())
    capacity = r.state.filter(pl.col("signal") == "capacity_bps")["value"]
    row = {"trace": Path(trace).name, "controller": controller, "window": window,
           "encoder": label(encoder),
           "displayed_share": f["displayed_share"], "skipped": f["frames_skipped"],
           "captured": f["frames_sent"] + f["frames_skipped"], "utilization": f["utilization"],
           "latency_p95_ms": f["frame_latency_ms"]["p95"], "model_psnr": f["psnr_db"],
           "wall_s": time.time() - t,
           # Why frames were skipped: the degradation policy's frame rate, pacer pushback, the
           # frame droppers (libwebrtc's and, for a real codec, its own).
           "skip_rate": int(last.get("skipped_frame_rate", 0)), "skip_pushback": int(last.get("skipped_pushback", 0)),
           "skip_dropper": int(last.get("skipped_dropper", 0)),
           "outage": float((capacity <= 0).mean()) if len(capacity) else 0.0}
    if score and r.quality:
        q = r.quality["flows"][0]
        row.update(psnr=q["psnr_y_mean"], ssim=q["ssim_y_mean"], frozen=q["frozen_share"])
    return row


def label(encoder) -> str:
    if isinstance(encoder, str):
        return encoder
    return encoder["model"] + (" + buffer" if "buffer_size" in encoder else "")


def pct(x):
    return "–" if x is None else f"{100 * x:.0f} %"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--print", action="store_true", help="print the tables, leave the doc alone")
    ap.add_argument("-j", "--jobs", type=int, default=2)
    args = ap.parse_args(argv)
    duration = "20s" if args.quick else "60s"
    vp8 = {"model": "vp8", "clip": "carphone", "resolution": "1280x720"}
    lagged = "lagged"
    # The lagged model with libvpx's rate-control buffer as libwebrtc sizes it (docs/encoders.md).
    buffered = {"model": "lagged", "buffer_size": "1s"}
    jobs = [(str(t), "oracle", enc, duration, "1000pkts", False, w) for w in ORACLE_WINDOWS
            for t in traces(args.quick) for enc in (vp8, lagged, buffered)]
    jobs += [(str(BUNDLED), c, enc, duration, "200ms", True, None) for c in ("gcc", "sqp", "vidaptive")
             for enc in (vp8, lagged)]
    # x264 once, so that each real encoder has a 60 s run on the bundled trace in the table.
    jobs += [(str(BUNDLED), "gcc", {**vp8, "model": "x264"}, duration, "200ms", True, None)]
    with ProcessPoolExecutor(args.jobs) as pool:
        rows = list(pool.map(one, jobs))
    oracle = [r for r in rows if r["controller"] == "oracle"]
    t1 = ["| oracle window | trace (time at zero capacity) | encoder | displayed share | frames skipped "
          "| by frame rate / pushback / dropper | utilisation | frame latency P95 |",
          "|---|---|---|---|---|---|---|---|"]
    # The time at zero capacity is the trace's, seen in 100 ms windows (a 1 s oracle averages
    # the outages away).
    outage = {r["trace"]: r["outage"] for r in oracle if r["window"] == ORACLE_WINDOWS[0]}
    for r in oracle:
        t1.append(f"| {r['window']} | {r['trace']} ({pct(outage.get(r['trace'], r['outage']))}) | {r['encoder']} | {pct(r['displayed_share'])} | "
                  f"{r['skipped']} of {r['captured']} ({pct(r['skipped'] / max(1, r['captured']))}) | "
                  f"{r['skip_rate']} / {r['skip_pushback']} / {r['skip_dropper']} | "
                  f"{pct(r['utilization'])} | {r['latency_p95_ms']:.0f} ms |")
    t2 = ["| controller | encoder | decoded PSNR (Y) | decoded SSIM (Y) | frozen | model PSNR | displayed share |",
          "|---|---|---|---|---|---|---|"]
    for r in rows:
        if r["controller"] == "oracle":
            continue
        dec = (f"{r['psnr']:.1f} dB | {r['ssim']:.3f} | {pct(r['frozen'])}" if "psnr" in r else "– | – | –")
        model = "–" if r["model_psnr"] is None else f"{r['model_psnr']:.1f} dB"
        t2.append(f"| {r['controller']} | {r['encoder']} | {dec} | {model} | {pct(r['displayed_share'])} |")
    tables = {"pipeline": "\n".join(t1), "quality": "\n".join(t2)}
    print(tables["pipeline"], "\n", tables["quality"], sep="\n")
    if not args.print and not args.quick:
        text = DOC.read_text()
        for name, table in tables.items():
            text, found = re.subn(rf"(<!-- {name}:begin -->\n).*?(<!-- {name}:end -->)",
                                  lambda m: m.group(1) + table + "\n" + m.group(2), text, flags=re.S)
            if found != 1:
                raise SystemExit(f"{DOC}: expected one pair of <!-- {name}:begin/end --> markers, found {found}")
        DOC.write_text(text)
        print(f"wrote {DOC}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
