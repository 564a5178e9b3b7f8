"""PNG plots for one run and for a comparison of runs (matplotlib, drawn off-screen).

Per run: ``throughput.png`` (received throughput in 200 ms bins and encoder target per flow,
against link capacity), ``delay.png`` (packet one-way delay and frame delay over time),
``frame_delay_cdf.png`` and ``signals.png`` (each controller's own signals from ``state.parquet``:
its rate estimates, its times and its other signals, on the same time axis). For a comparison, the same three views with one line per controller.
Figures are built with ``matplotlib.figure.Figure`` directly, so no GUI backend or pyplot
state is involved and an interactive session's backend is left alone.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

from . import series
from .report import run_point
from .colors import label_colors, series_colors

__all__ = ["run_plots", "compare_plots", "rmcat_case_plot"]

RUN_BIN_S = 0.2
COMPARE_BIN_S = 0.5
# A comparison of more runs than this draws throughput as small multiples, not overlaid lines.
SMALL_MULTIPLES_ABOVE = 6
DPI = 110
CAPACITY_STYLE = dict(color="0.55", alpha=0.25, step="post", linewidth=0)
# Line styles that tell the hops of a multi-hop path apart.
HOP_STYLES = [":", "--", "-.", (0, (1, 3))]


def _colors(n: int) -> list:
    """``n`` distinct colours (rtcc.colors: the palette every page shares)."""
    return series_colors(n)


def _flow_label(flows: list[dict], i: int) -> str:
    f = flows[i] if i < len(flows) else {}
    return f"{f.get('name', f'flow {i}')} ({f.get('controller', '?')})"


def _duration(result) -> float:
    d = result.summary.get("duration_s")
    if isinstance(d, (int, float)) and d > 0:
        return float(d)
    cap = result.capacity["time_ns"]
    return float(cap.max()) / 1e9 + 0.1 if len(cap) else 1.0


def _active(flows: list[dict], i: int, t: np.ndarray, y: np.ndarray, drain_s: float = 1.0):
    """Blank (NaN) the bins before a flow starts and after it stops (plus ``drain_s``)."""
    f = flows[i] if i < len(flows) else {}
    start, stop = f.get("start_ns", 0) / 1e9, f.get("stop_ns", float("inf")) / 1e9 + drain_s
    y = np.where((t + RUN_BIN_S > start) & (t < stop), y, np.nan)
    return t, y


def _save(fig: Figure, path: Path) -> Path:
    fig.savefig(path, dpi=DPI)
    return path


def _no_data(ax) -> None:
    ax.text(0.5, 0.5, "no data", transform=ax.transAxes, ha="center", va="center", color="0.5")


def _capacity(ax, result) -> None:
    t, mbps = series.capacity(result.capacity)
    hops = series.hop_capacities(result.capacity)
    if len(t):
        label = "tightest hop's capacity" if hops else "link capacity"
        ax.fill_between(t, mbps, label=label, **CAPACITY_STYLE)
        ax.step(t, mbps, where="post", color="0.45", linewidth=0.8)
    # A multi-hop path: each hop's own capacity, dotted (unlimited hops are not drawn).
    for k, (name, ht, hop_mbps) in enumerate(hops):
        if len(ht) and np.isfinite(hop_mbps).any():
            ax.step(ht, hop_mbps, where="post", color="0.35", linewidth=0.9,
                    linestyle=HOP_STYLES[k % len(HOP_STYLES)], label=f"hop {name} capacity")


def _is_wide(values: list[np.ndarray]) -> bool:
    """True when positive values span more than 10x (P1 to P99.9): then a log scale reads better."""
    data = [v[v > 0] for v in values]
    data = [v for v in data if len(v)]
    if not data:
        return False
    lo = min(float(np.percentile(v, 1)) for v in data)
    hi = max(float(np.percentile(v, 99.9)) for v in data)
    return hi > 10 * lo


def _log_axis(ax, which: str) -> None:
    """Log scale with plain 1-2-3-5 tick labels (10, 20, 30, 50, 100, ...)."""
    axis = ax.xaxis if which == "x" else ax.yaxis
    (ax.set_xscale if which == "x" else ax.set_yscale)("log")
    axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 3.0, 5.0)))
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    axis.set_minor_formatter(NullFormatter())


def _cdf_axes(ax, xs: list[np.ndarray]) -> None:
    ax.set_ylabel("fraction of frames")
    ax.set_ylim(0, 1.01)
    if any(len(x) for x in xs):
        wide = _is_wide(xs)
        if wide:
            _log_axis(ax, "x")
        ax.set_xlabel("frame delay (ms, log scale)" if wide else "frame delay (ms)")
    else:
        ax.set_xlabel("frame delay (ms)")
        _no_data(ax)
    ax.grid(True, which="both", alpha=0.3)


# -- one run ---------------------------------------------------------------------------------


def run_plots(result, folder: Path, progress=None) -> list[Path]:
    """Draw the per-run plots into ``folder`` (created); return their paths. ``progress(done,
    total)`` is called before the first figure and after each."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    figures = [(throughput_plot, "throughput.png"), (delay_plot, "delay.png"), (cdf_plot, "frame_delay_cdf.png")]
    if _has_signals(result):
        figures.append((signals_plot, "signals.png"))
    paths = []
    for draw, name in figures:
        if progress:
            progress(len(paths), len(figures))
        paths.append(draw(result, folder / name))
    if progress:
        progress(len(paths), len(figures))
    return paths


# Signals drawn per flow: rates (names ending in _bps, in Mbit/s) on one axis, times (_ms) on
# another, and the first few others that change (states, thresholds, fractions) each on its own.
# The video sender's own counters come last: the controller's signals are what one debugs first.
MAX_SIGNAL_FLOWS = 4
MAX_OTHER_SIGNALS = 4
SENDER_SIGNALS = ("in_flight_bytes", "encoder_fps", "skipped_frame_rate", "skipped_pushback", "skipped_dropper")


def _has_signals(result) -> bool:
    state = getattr(result, "state", None)
    return state is not None and state.height > 0


def signals_plot(result, path: Path) -> Path:
    """What the controllers themselves saw and decided: every signal of ``state.parquet``."""
    import polars as pl

    state = result.state
    flows = sorted(state["flow"].unique().to_list())[:MAX_SIGNAL_FLOWS]
    groups = []
    for f in flows:
        per_flow = state.filter(pl.col("flow") == f)
        names = per_flow["signal"].unique(maintain_order=True).to_list()
        changing = set(per_flow.group_by("signal").agg(pl.col("value").n_unique() > 1)
                       .filter(pl.col("value"))["signal"].to_list())
        rates = [n for n in names if n.endswith("_bps")]
        times = [n for n in names if n.endswith("_ms")]
        others = [n for n in names if n not in rates and n not in times and n in changing]
        others = ([n for n in others if n not in SENDER_SIGNALS]
                  + [n for n in others if n in SENDER_SIGNALS])[:MAX_OTHER_SIGNALS]
        groups += [(f, "Mbit/s", rates)] * bool(rates) + [(f, "ms", times)] * bool(times)
        groups += [(f, n, [n]) for n in others]
    # Fixed margins in inches rather than constrained layout: a stack of one-column panels needs no
    # solver, and constrained layout measures every tick label of every panel twice (half the
    # figure's cost at a dozen panels).
    height = 1.9 * len(groups) + 0.6
    fig = Figure(figsize=(10, height))
    fig.subplots_adjust(left=0.08, right=0.98, top=1 - 0.3 / height, bottom=0.55 / height, hspace=0.45)
    axes = fig.subplots(len(groups), 1, sharex=True, squeeze=False)[:, 0]
    duration = _duration(result)
    for ax, (f, unit, names) in zip(axes, groups):
        per_flow = state.filter(pl.col("flow") == f)
        for name in names:
            s = per_flow.filter(pl.col("signal") == name).sort("time_ns")
            scale = 1e6 if unit == "Mbit/s" else 1.0
            t, v = series.thin(s["time_ns"].to_numpy() / 1e9, s["value"].to_numpy() / scale)
            ax.step(t, v, where="post", linewidth=0.9, label=name)
        ax.set_ylabel(unit if unit in ("Mbit/s", "ms") else "", fontsize="small")
        ax.set_title(f"{_flow_label(result.flows, f)}: {unit if len(names) == 1 and unit == names[0] else unit}",
                     fontsize="small", loc="left")
        ax.grid(True, alpha=0.3)
        if len(names) > 1:
            ax.legend(loc="upper right", fontsize="x-small", ncol=min(4, len(names)))
    axes[-1].set_xlim(0, duration)
    axes[-1].set_xlabel("time (s)")
    return _save(fig, path)


def throughput_plot(result, path: Path) -> Path:
    fig = Figure(figsize=(10, 4.5), layout="constrained")
    ax = fig.add_subplot()
    _capacity(ax, result)
    duration = _duration(result)
    single = len(result.flows) == 1
    for i, color in enumerate(_colors(len(result.flows))):
        flow = "" if single else f": {_flow_label(result.flows, i)}"
        t, rate = _active(result.flows, i, *series.throughput(result.packets, duration, RUN_BIN_S, flow=i))
        ax.plot(t + RUN_BIN_S / 2, rate, color=color, linewidth=1.0, label=f"received throughput{flow}")
        tt, target = series.target(result.frames, i)
        ax.step(tt, target, where="post", color=color, linewidth=1.0, linestyle="--", alpha=0.8,
                label=f"video bitrate (encoder target){flow}")
    ax.set_xlim(0, duration)
    ax.set_ylim(bottom=0)
    ax.set_xlabel("time (s)")
    ax.set_ylabel(f"rate (Mbit/s, {int(RUN_BIN_S * 1000)} ms bins)")
    ax.set_title(f"{result.name}: throughput vs link capacity")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper right", fontsize="small")
    return _save(fig, path)


def delay_plot(result, path: Path) -> Path:
    fig = Figure(figsize=(10, 6), layout="constrained")
    top, bottom = fig.subplots(2, 1, sharex=True)
    for i, color in enumerate(_colors(len(result.flows))):
        label = _flow_label(result.flows, i)
        t, d = series.packet_delay(result.packets, i)
        top.plot(*series.break_gaps(t, d), color=color, linewidth=0.6, label=label)
        t, d = series.frame_delay(result.frames, i)
        bottom.plot(*series.break_gaps(t, d), color=color, linewidth=0.8, marker=".", markersize=2, label=label)
    for ax, what in ((top, "packet one-way delay (ms)"), (bottom, "frame delay (ms)")):
        ax.set_ylabel(what)
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
        if not ax.lines or not any(len(line.get_xdata()) for line in ax.lines):
            _no_data(ax)
    top.legend(loc="upper right", fontsize="small")
    bottom.set_xlabel("time (s)")
    bottom.set_xlim(0, _duration(result))
    top.set_title(f"{result.name}: packet and frame delay")
    return _save(fig, path)


def cdf_plot(result, path: Path) -> Path:
    fig = Figure(figsize=(7, 4.5), layout="constrained")
    ax = fig.add_subplot()
    xs = []
    for i, color in enumerate(_colors(len(result.flows))):
        _, d = series.frame_delay(result.frames, i)
        xs.append(d)
        if len(d):
            x, y = series.cdf(d)
            ax.step(x, y, where="post", color=color, label=_flow_label(result.flows, i))
    _cdf_axes(ax, xs)
    ax.set_title(f"{result.name}: frame delay CDF")
    if any(len(x) for x in xs):
        ax.legend(loc="lower right", fontsize="small")
    return _save(fig, path)


# -- comparison ------------------------------------------------------------------------------


def compare_plots(results: dict, folder: Path, title: str = "") -> list[Path]:
    """Overlaid plots, one line per label in ``results`` (label -> Result); return their paths."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    title = f"{title}: " if title else ""
    colors = label_colors(list(results))
    first = next(iter(results.values()))
    duration = _duration(first)
    paths = [throughput_delay(results, folder / "throughput_delay.png", title.removesuffix(": "), colors)]

    if len(results) > SMALL_MULTIPLES_ABOVE:
        paths.append(_throughput_small_multiples(results, folder / "throughput.png", title, colors, duration))
    else:
        fig = Figure(figsize=(10, 4.5), layout="constrained")
        ax = fig.add_subplot()
        _capacity(ax, first)
        for label, r in results.items():
            t, rate = series.throughput(r.packets, duration, COMPARE_BIN_S)
            ax.plot(t + COMPARE_BIN_S / 2, rate, color=colors[label], linewidth=1.1, label=label)
        ax.set_xlim(0, duration)
        ax.set_ylim(bottom=0)
        ax.set_xlabel("time (s)")
        ax.set_ylabel(f"received throughput (Mbit/s, {int(COMPARE_BIN_S * 1000)} ms bins)")
        ax.set_title(f"{title}throughput vs link capacity (all flows)")
        ax.grid(True, alpha=0.3)
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")
        paths.append(_save(fig, folder / "throughput.png"))

    fig = Figure(figsize=(10, 4.5), layout="constrained")
    ax = fig.add_subplot()
    ys = []
    for label, r in results.items():
        t, d = series.frame_delay(r.frames)
        ys.append(d)
        ax.plot(*series.break_gaps(t, d), color=colors[label], linewidth=0.8, marker=".", markersize=1.5, label=label)
    ax.set_xlim(0, duration)
    ax.set_xlabel("frame capture time (s)")
    if _is_wide(ys):
        _log_axis(ax, "y")
        ax.set_ylabel("frame delay (ms, log scale)")
    else:
        ax.set_ylim(bottom=0)
        ax.set_ylabel("frame delay (ms)")
    if any(len(d) for d in ys):
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")
    else:
        _no_data(ax)
    ax.set_title(f"{title}frame delay over time (all flows)")
    ax.grid(True, which="both", alpha=0.3)
    paths.append(_save(fig, folder / "frame_delay.png"))

    fig = Figure(figsize=(7, 4.5), layout="constrained")
    ax = fig.add_subplot()
    xs = []
    for label, r in results.items():
        _, d = series.frame_delay(r.frames)
        xs.append(d)
        if len(d):
            x, y = series.cdf(d)
            ax.step(x, y, where="post", color=colors[label], label=label)
    _cdf_axes(ax, xs)
    ax.set_title(f"{title}frame delay CDF (all flows)")
    if any(len(x) for x in xs):
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")
    paths.append(_save(fig, folder / "frame_delay_cdf.png"))
    return paths


def _throughput_small_multiples(results: dict, path: Path, title: str, colors: dict, duration: float) -> Path:
    """One small panel per label (the link's capacity shaded behind it), on shared axes: what a
    figure of more than SMALL_MULTIPLES_ABOVE overlaid lines cannot show."""
    cols = 4
    rows = -(-len(results) // cols)
    fig = Figure(figsize=(12, 1.9 * rows + 0.6), layout="constrained")
    axes = fig.subplots(rows, cols, sharex=True, sharey=True, squeeze=False)
    first = next(iter(results.values()))
    for ax, (label, r) in zip(axes.flat, results.items()):
        _capacity(ax, first)
        t, rate = series.throughput(r.packets, duration, COMPARE_BIN_S)
        ax.plot(t + COMPARE_BIN_S / 2, rate, color=colors[label], linewidth=1.0)
        ax.set_title(label, fontsize="small", color=colors[label])
        ax.grid(True, alpha=0.3)
        ax.set_xlim(0, duration)
        ax.set_ylim(bottom=0)
    for ax in list(axes.flat)[len(results):]:
        ax.set_visible(False)
    fig.supxlabel("time (s)", fontsize="small")
    fig.supylabel(f"received Mbit/s ({int(COMPARE_BIN_S * 1000)} ms bins; shaded: capacity)", fontsize="small")
    fig.suptitle(f"{title}throughput vs link capacity (all flows), one panel per controller")
    return _save(fig, path)


def throughput_delay(results: dict, path: Path, title: str = "", colors: dict | None = None) -> Path:
    """Pantheon's summary figure for a comparison (label -> Result): one point per run."""
    points = {label: [p] for label, r in results.items() if (p := run_point(r.summary)) is not None}
    return throughput_delay_plot(points, path, title, colors or label_colors(list(results)))


# A throughput–delay plot of more labels than this has no legend (the table names them).
MAX_LEGEND = 24


def throughput_delay_plot(points: dict[str, list[tuple[float, float]]], path: Path, title: str = "",
                          colors: dict | None = None) -> Path:
    """Pantheon's summary figure: each run (``points``: label -> one (P95 delay ms, Mbit/s) per
    seed) as a small dot, each label's mean as a large one and, with two runs or more, the
    one-standard-deviation ellipse of its runs (their covariance, as Pantheon draws it; in
    log-delay space when the delay axis is logarithmic). The delay axis is reversed so that
    better is up and to the right."""
    colors = colors or label_colors(list(points))
    fig = Figure(figsize=(8, 4.8), layout="constrained")
    ax = fig.add_subplot()
    points = {label: np.asarray(p, dtype=np.float64).reshape(-1, 2) for label, p in points.items() if len(p)}
    delays = np.concatenate([p[:, 0] for p in points.values()]) if points else np.array([])
    log = len(delays) and delays.max() > 3 * max(delays.min(), 1e-3)
    many = any(len(p) > 1 for p in points.values())
    back = (lambda v: 10 ** v) if log else (lambda v: v)  # from where the mean and ring are taken
    for label, p in points.items():
        x = np.log10(np.maximum(p[:, 0], 1e-3)) if log else p[:, 0]
        mean_x, mean_y = x.mean(), p[:, 1].mean()
        if len(p) > 1:
            ax.scatter(p[:, 0], p[:, 1], s=12, color=colors[label], alpha=0.55, zorder=2, linewidths=0)
            if len(p) > 2 or np.ptp(x) > 0 or np.ptp(p[:, 1]) > 0:
                cov = np.cov(np.vstack([x, p[:, 1]]))
                vals, vecs = np.linalg.eigh(cov)
                angle = np.linspace(0, 2 * np.pi, 100)
                ring = vecs @ (np.sqrt(np.maximum(vals, 0))[:, None] * np.vstack([np.cos(angle), np.sin(angle)]))
                ax.plot(back(mean_x + ring[0]), mean_y + ring[1], color=colors[label], linewidth=1.0, zorder=2)
        ax.scatter([back(mean_x)], [mean_y], s=60, color=colors[label], label=label, zorder=3)
    if not points:
        _no_data(ax)
    elif log:
        _log_axis(ax, "x")
    ax.invert_xaxis()
    ax.set_ylim(bottom=0)
    ax.set_xlabel("95th percentile one-way delay (ms, worst flow; better to the right)")
    ax.set_ylabel("throughput (Mbit/s, all flows)")
    prefix = f"{title}: " if title else ""
    what = "dots: runs; large dot: mean over seeds; ring: one standard deviation" if many else "one point per run"
    ax.set_title(f"{prefix}throughput against delay\n({what})", fontsize="medium")
    ax.grid(True, which="both", alpha=0.3)
    if points and len(points) <= MAX_LEGEND:
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")
    return _save(fig, path)


# -- RMCAT suite -----------------------------------------------------------------------------


def rmcat_case_plot(views: dict, path: Path, title: str) -> Path:
    """One RMCAT case (``rtcc rmcat``): a row per controller (label -> ``rtcc.rmcat.RunView``), on
    the left each flow's received rate in 1 s windows against its links' capacities (the first
    link shaded, the others that carry a flow dashed: a reverse link, the hops of a multi-hop
    path), on the right each flow's queuing delay at its bottleneck
    (packets by arrival at the queue). What RFC 8867 §5 asks to be plotted per case."""
    rows = max(1, len(views))
    # Fixed margins in inches, as in the signals figure: constrained layout measured every tick
    # label of every panel twice, 40 % of the suite's drawing time.
    height = 2.6 * rows + 0.6
    fig = Figure(figsize=(12, height))
    fig.subplots_adjust(left=0.05, right=0.985, top=1 - 0.6 / height, bottom=0.5 / height,
                        hspace=0.22, wspace=0.14)
    axes = fig.subplots(rows, 2, sharex=True, squeeze=False)
    for (label, view), (left, right) in zip(views.items(), axes):
        t = np.arange(len(view.flows[0].rate_bps))
        shaded = False
        for link, cap in view.capacity_bps.items():  # the first link shaded, the others' lines dashed
            if cap is None or (shaded and not view.on(link)):
                continue
            x = np.arange(len(cap) + 1)
            y = np.append(cap, cap[-1]) / 1e6
            if not shaded:
                left.fill_between(x, y, label=f"capacity ({link})", **CAPACITY_STYLE)
                left.step(x, y, where="post", color="0.45", linewidth=0.8)
                shaded = True
            else:
                left.step(x, y, where="post", color="0.3", linewidth=0.9, linestyle="--",
                          label=f"capacity ({link})")
        for flow, color in zip(view.flows, _colors(len(view.flows))):
            name = flow.name + (f" ({flow.link})" if flow.link != "forward" else "")
            name += "" if flow.video else f" ({flow.kind})"
            mask = np.zeros(len(flow.rate_bps), dtype=bool)
            for start, stop in flow.periods:
                mask[int(start):int(np.ceil(stop)) + 1] = True
            left.plot(t + 0.5, np.where(mask, flow.rate_bps / 1e6, np.nan), color=color, linewidth=1.0, label=name)
            if len(flow.queue_ms):  # the largest sojourn per 100 ms of arrivals: every spike stays visible
                bins = (flow.queue_t * 10).astype(np.int64)
                peak = np.full(int(bins.max()) + 1, np.nan)
                np.fmax.at(peak, bins, flow.queue_ms)
                right.plot(np.arange(len(peak)) / 10, peak, color=color, linewidth=0.7, label=name)
        left.set_ylabel("Mbit/s")
        left.set_ylim(bottom=0)
        left.set_title(f"{label}: received rate (1 s windows) and capacity", fontsize="small", loc="left")
        right.set_ylabel("ms")
        right.set_ylim(bottom=0)
        right.set_title(f"{label}: queuing delay at the bottleneck", fontsize="small", loc="left")
        for ax in (left, right):
            ax.grid(True, alpha=0.3)
            ax.set_xlim(0, view.duration_s)
        left.legend(loc="upper right", fontsize="x-small", ncol=2)
    for ax in axes[-1]:
        ax.set_xlabel("time (s)")
    fig.suptitle(title)
    return _save(fig, path)
