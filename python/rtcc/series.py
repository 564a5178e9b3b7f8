"""Time series and distributions derived from a run's packet and frame logs (numpy arrays).

These are what the plots draw: received throughput in fixed bins, link capacity, encoder
target, packet one-way delay, frame delay over time and its empirical CDF. Times are returned
in seconds, rates in Mbit/s and delays in milliseconds. The packet log may be a DataFrame or a
LazyFrame over a streamed log (only the columns needed are read, aggregated before loading).
"""

from __future__ import annotations

import numpy as np
import polars as pl

NS = 1e9

# Above this many received packets a flow's delay series is drawn as its envelope.
MAX_DELAY_POINTS = 200_000

Frame = pl.DataFrame | pl.LazyFrame


def _flow(df: Frame, flow: int | None) -> Frame:
    return df if flow is None else df.filter(pl.col("flow") == flow)


def throughput(packets: Frame, duration_s: float, bin_s: float = 0.2, flow: int | None = None):
    """Received throughput per ``bin_s`` bin, by arrival time: (bin start s, Mbit/s)."""
    got = _flow(packets, flow).filter(pl.col("recv_ns") >= 0)
    nbins = max(1, int(np.ceil(duration_s / bin_s)))
    bin_ns = int(round(bin_s * NS))
    if isinstance(got, pl.LazyFrame):  # a streamed log: summed per bin before loading
        per_bin = (got.group_by((pl.col("recv_ns") // bin_ns).alias("bin"))
                   .agg(pl.col("size").cast(pl.Int64).sum()).collect(engine="streaming"))
        idx, size = per_bin["bin"].to_numpy(), per_bin["size"].to_numpy()
    else:
        idx, size = got["recv_ns"].to_numpy() // bin_ns, got["size"].to_numpy()
    idx = idx.astype(np.int64)
    bits = size.astype(np.float64) * 8
    keep = idx < nbins
    rate = np.bincount(idx[keep], weights=bits[keep], minlength=nbins) / bin_s / 1e6
    return np.arange(nbins) * bin_s, rate


def capacity(cap: pl.DataFrame):
    """Forward bottleneck capacity (of a multi-hop path, its tightest hop at each instant):
    (bin start s, Mbit/s)."""
    return cap["time_ns"].to_numpy() / NS, cap["bps"].to_numpy() / 1e6


def hop_capacities(cap: pl.DataFrame) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """Each hop's forward capacity of a multi-hop path (the ``bps.<hop>`` columns; none for one
    link pair): (hop name, bin start s, Mbit/s), in path order; an unlimited hop is infinite."""
    t = cap["time_ns"].to_numpy() / NS
    return [(c.removeprefix("bps."), t, cap[c].to_numpy() / 1e6) for c in cap.columns if c.startswith("bps.")]


def target(frames: pl.DataFrame, flow: int):
    """Encoder target bitrate at each frame capture: (capture s, Mbit/s)."""
    f = _flow(frames, flow)
    return f["capture_ns"].to_numpy() / NS, f["target_bps"].to_numpy() / 1e6


def packet_delay(packets: Frame, flow: int | None = None, max_points: int = MAX_DELAY_POINTS):
    """One-way delay of each received packet: (send s, ms). A flow with more than
    ``max_points`` received packets gets its envelope instead: for each of ``max_points / 2``
    equal slices of send time, the smallest and the largest delay (at the slice's start and
    middle), so a line through them covers what every packet would have drawn."""
    got = (_flow(packets, flow).lazy().filter(pl.col("recv_ns") >= 0)
           .select("send_ns", (pl.col("recv_ns") - pl.col("send_ns")).alias("delay_ns")))
    count = got.select(pl.len()).collect().item()
    if count > max(2, max_points):
        span = got.select(pl.col("send_ns").min().alias("lo"), pl.col("send_ns").max().alias("hi")).collect()
        lo, hi = span["lo"].item(), span["hi"].item()
        width = max(1, -(-(hi - lo + 1) // max(1, max_points // 2)))
        env = (got.group_by(((pl.col("send_ns") - lo) // width).alias("slice"))
               .agg(pl.col("delay_ns").min().alias("low"), pl.col("delay_ns").max().alias("high"))
               .sort("slice").collect(engine="streaming"))
        start = lo + env["slice"].to_numpy() * width
        t = np.column_stack([start, start + width // 2]).ravel()
        d = np.column_stack([env["low"].to_numpy(), env["high"].to_numpy()]).ravel()
        return t / NS, d / 1e6
    got = got.collect()
    return got["send_ns"].to_numpy() / NS, got["delay_ns"].to_numpy() / 1e6


def frame_delay(frames: pl.DataFrame, flow: int | None = None):
    """Frame-delay metric of each counted frame, sorted by capture time: (capture s, ms)."""
    f = _flow(frames, flow).filter(pl.col("delay_ns") >= 0).sort("capture_ns")
    return f["capture_ns"].to_numpy() / NS, f["delay_ns"].to_numpy() / 1e6


def break_gaps(t: np.ndarray, y: np.ndarray, min_gap_s: float = 0.2):
    """Insert NaN where consecutive samples are far apart, so a line plot shows the gap.

    A gap is longer than both ``min_gap_s`` and five times the median spacing.
    """
    if len(t) < 3:
        return t, y
    dt = np.diff(t)
    gap = max(min_gap_s, 5 * float(np.median(dt)))
    at = np.flatnonzero(dt > gap) + 1
    if not len(at):
        return t, y
    return np.insert(t.astype(np.float64), at, np.nan), np.insert(y.astype(np.float64), at, np.nan)


# A line drawn from more points than this is thinned to what a figure can show (``thin``).
MAX_LINE_BUCKETS = 2_000


def thin(t: np.ndarray, y: np.ndarray, buckets: int = MAX_LINE_BUCKETS):
    """The points of a time series (``t`` ascending) that a figure a few thousand pixels wide can
    show: of each of ``buckets`` equal slices of time, the first, the last, the lowest and the
    highest point, in time order. A line or a step through them covers every pixel the whole
    series would have drawn (its envelope per slice, and the value at each slice's edges), at a
    cost that no longer grows with the run's length. Short series are returned as they are."""
    t, y = np.asarray(t), np.asarray(y)
    if len(t) <= 4 * buckets:
        return t, y
    lo, hi = float(t[0]), float(t[-1])
    slot = np.minimum(((t - lo) / max(hi - lo, 1e-12) * buckets).astype(np.int64), buckets - 1)
    edges = np.flatnonzero(np.diff(slot)) + 1
    first = np.concatenate(([0], edges))
    last = np.concatenate((edges - 1, [len(t) - 1]))
    # Slices stay where they are; inside each, ascending y. A gap (NaN) is never a slice's lowest
    # or highest point (it is kept only where it is a slice's first or last).
    finite = np.isfinite(y)
    lowest = np.lexsort((np.where(finite, y, np.inf), slot))[first]
    highest = np.lexsort((np.where(finite, y, -np.inf), slot))[last]
    keep = np.unique(np.concatenate((first, last, lowest, highest)))
    return t[keep], y[keep]


def cdf(values: np.ndarray):
    """Empirical CDF: (sorted values, fraction of values <= each)."""
    x = np.sort(np.asarray(values, dtype=np.float64))
    return x, np.arange(1, len(x) + 1) / max(1, len(x))
