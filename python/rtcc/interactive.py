"""Zoomable time series for the report pages, drawn in the browser with uPlot.

The PNG plots (``rtcc.plots``) stay the reference and the static fallback; these charts add what a
picture cannot: drag across a chart to zoom into a time range, double-click to zoom out, click a
legend entry to hide a line, and read exact values under the cursor. That is what someone
debugging a controller does first: find the second where the queue builds and look at the rates
around it.

A chart is a dict (``title``, ``xlabel``, ``ylabel``, ``x``, ``series``: label, color, values and
whether to draw it dashed or as steps) with every series on one time grid. Rates are binned as
the PNGs bin them; delays become the largest value per bin (a packet's one-way delay, a frame's
delay by capture time), so a short spike is never averaged away. ``charts_html`` embeds the
charts' data as JSON, uPlot's script and style inline (about 50 KB, ``data/vendor/uplot``) and a
few lines that start it, so a page works offline and from its own folder. Without JavaScript the
charts say so and the PNGs below them show the same runs.
"""

from __future__ import annotations

import math
from functools import lru_cache
from pathlib import Path

import numpy as np

from . import series
from .colors import PALETTE, label_colors

__all__ = ["run_charts", "compare_charts", "charts_html"]

UPLOT_VERSION = "1.6.32"
VENDOR = Path(__file__).parent / "data" / "vendor" / "uplot"
RUN_BIN_S = 0.2
COMPARE_BIN_S = 0.5
# The palette the PNGs use too (rtcc.colors), so a flow or a controller has one colour on a page.
COLORS = PALETTE
CAPACITY_COLOR = "#8c8c8c"


def _values(y) -> list:
    """JSON-ready values: 4 significant decimals, None where there is no data (uPlot's gap)."""
    return [round(float(v), 4) if math.isfinite(v) else None for v in np.asarray(y, dtype=np.float64)]


def _grid(duration_s: float, bin_s: float) -> np.ndarray:
    return np.arange(max(1, int(np.ceil(duration_s / bin_s)))) * bin_s


def _binned_max(t: np.ndarray, y: np.ndarray, grid: np.ndarray, bin_s: float) -> np.ndarray:
    """The largest ``y`` whose ``t`` falls in each bin of ``grid``; NaN for an empty bin."""
    out = np.full(len(grid), np.nan)
    idx = np.floor(np.asarray(t) / bin_s).astype(np.int64)
    keep = (idx >= 0) & (idx < len(grid)) & np.isfinite(y)
    if keep.any():
        np.fmax.at(out, idx[keep], np.asarray(y, dtype=np.float64)[keep])
    return out


def _step_at(t: np.ndarray, y: np.ndarray, at: np.ndarray) -> np.ndarray:
    """A step function (value ``y[i]`` from ``t[i]`` on) sampled at ``at``; NaN before its start."""
    if not len(t):
        return np.full(len(at), np.nan)
    i = np.searchsorted(t, at, side="right") - 1
    return np.where(i >= 0, np.asarray(y, dtype=np.float64)[np.clip(i, 0, None)], np.nan)


def _duration(result) -> float:
    d = result.summary.get("duration_s")
    return float(d) if isinstance(d, (int, float)) and d > 0 else 1.0


def _capacity_series(result, at: np.ndarray) -> list[dict]:
    t, mbps = series.capacity(result.capacity)
    if not len(t):
        return []
    hops = series.hop_capacities(result.capacity)
    out = [{"label": "tightest hop's capacity" if hops else "link capacity", "color": CAPACITY_COLOR,
            "values": _values(_step_at(t, mbps, at)), "step": True, "fill": True}]
    # A multi-hop path: each limited hop's own capacity as a line.
    for name, ht, hop_mbps in hops:
        if np.isfinite(hop_mbps).any():
            out.append({"label": f"hop {name} capacity", "color": CAPACITY_COLOR,
                        "values": _values(_step_at(ht, hop_mbps, at)), "step": True})
    return out


def _flow_name(result, i: int) -> str:
    f = result.flows[i] if i < len(result.flows) else {}
    return f"{f.get('name', f'flow {i}')} ({f.get('controller', '?')})"


def run_charts(result) -> list[dict]:
    """A run's throughput (per flow, with its encoder target and the link's capacity) and delay
    (per flow: packet one-way delay and frame delay, the largest per bin)."""
    duration = _duration(result)
    grid = _grid(duration, RUN_BIN_S)
    mid = grid + RUN_BIN_S / 2
    rates, delays = _capacity_series(result, mid), []
    for i in range(len(result.flows)):
        name, color = _flow_name(result, i), COLORS[i % len(COLORS)]
        _, rate = series.throughput(result.packets, duration, RUN_BIN_S, flow=i)
        rates.append({"label": f"{name}: received", "color": color, "values": _values(rate[:len(grid)])})
        tt, target = series.target(result.frames, i)
        if len(tt):
            rates.append({"label": f"{name}: encoder target", "color": color, "dash": True, "step": True,
                          "values": _values(_step_at(tt, target, mid))})
        t, d = series.packet_delay(result.packets, i)
        delays.append({"label": f"{name}: packet one-way delay (max)", "color": color,
                       "values": _values(_binned_max(t, d, grid, RUN_BIN_S))})
        t, d = series.frame_delay(result.frames, i)
        if len(t):
            delays.append({"label": f"{name}: frame delay (max)", "color": color, "dash": True,
                           "values": _values(_binned_max(t, d, grid, RUN_BIN_S))})
    x = _values(mid)
    ms = int(RUN_BIN_S * 1000)
    return [
        {"title": f"{result.name}: throughput vs link capacity", "xlabel": "time (s)",
         "ylabel": f"Mbit/s ({ms} ms bins)", "x": x, "series": rates},
        {"title": f"{result.name}: delay", "xlabel": "time (s)", "ylabel": f"ms (largest per {ms} ms)",
         "x": x, "series": delays},
    ]


def compare_charts(results: dict, title: str = "") -> list[dict]:
    """Throughput (all flows) and frame delay (largest per bin), one line per label of ``results``."""
    first = next(iter(results.values()))
    duration = _duration(first)
    grid = _grid(duration, COMPARE_BIN_S)
    mid = grid + COMPARE_BIN_S / 2
    rates, delays = _capacity_series(first, mid), []
    colors = label_colors(list(results))
    for label, r in results.items():
        color = colors[label]
        _, rate = series.throughput(r.packets, duration, COMPARE_BIN_S)
        rates.append({"label": label, "color": color, "values": _values(rate[:len(grid)])})
        t, d = series.frame_delay(r.frames)
        delays.append({"label": label, "color": color, "values": _values(_binned_max(t, d, grid, COMPARE_BIN_S))})
    prefix = f"{title}: " if title else ""
    ms = int(COMPARE_BIN_S * 1000)
    return [
        {"title": f"{prefix}throughput vs link capacity (all flows)", "xlabel": "time (s)",
         "ylabel": f"Mbit/s ({ms} ms bins)", "x": _values(mid), "series": rates},
        {"title": f"{prefix}frame delay (all flows)", "xlabel": "frame capture time (s)",
         "ylabel": f"ms (largest per {ms} ms)", "x": _values(mid), "series": delays},
    ]


@lru_cache(maxsize=1)
def _library() -> tuple[str, str, str]:
    """uPlot's script and style, and ``templates/charts.js``, which starts every chart."""
    from .report import TEMPLATES

    return (VENDOR / "uPlot.iife.min.js").read_text(encoding="utf-8"), \
        (VENDOR / "uPlot.min.css").read_text(encoding="utf-8"), \
        (TEMPLATES / "charts.js").read_text(encoding="utf-8")


def charts_html(charts: list[dict]):
    """The HTML of ``charts`` (``templates/charts.html``, uPlot and ``templates/charts.js`` inline):
    one block for a page, empty for no charts."""
    if not charts:
        return ""
    from markupsafe import Markup

    from .report import render

    script, style, start = _library()
    return render("charts.html", charts=charts, version=UPLOT_VERSION, script=Markup(script), style=Markup(style),
                  start=Markup(start))
