"""Time series and distributions derived from a run's packet and frame logs (numpy arrays).

These are what the plots draw: received throughput in fixed bins, link capacity, encoder
target, packet one-way delay, frame delay over time and its empirical CDF. Times are returned
in seconds, rates in Mbit/s and delays in milliseconds.
"""

from __future__ import annotations

import numpy as np
import polars as pl

NS = 1e9


def _flow(df: pl.DataFrame, flow: int | None) -> pl.DataFrame:
    return df if flow is None else df.filter(pl.col("flow") == flow)


def throughput(packets: pl.DataFrame, duration_s: float, bin_s: float = 0.2, flow: int | None = None):
    """Received throughput per ``bin_s`` bin, by arrival time: (bin start s, Mbit/s)."""
    got = _flow(packets, flow).filter(pl.col("recv_ns") >= 0)
    nbins = max(1, int(np.ceil(duration_s / bin_s)))
    idx = (got["recv_ns"].to_numpy() // int(round(bin_s * NS))).astype(np.int64)
    bits = got["size"].to_numpy().astype(np.float64) * 8
    keep = idx < nbins
    rate = np.bincount(idx[keep], weights=bits[keep], minlength=nbins) / bin_s / 1e6
    return np.arange(nbins) * bin_s, rate


def capacity(cap: pl.DataFrame):
    """Forward bottleneck capacity: (bin start s, Mbit/s)."""
    return cap["time_ns"].to_numpy() / NS, cap["bps"].to_numpy() / 1e6


def target(frames: pl.DataFrame, flow: int):
    """Encoder target bitrate at each frame capture: (capture s, Mbit/s)."""
    f = _flow(frames, flow)
    return f["capture_ns"].to_numpy() / NS, f["target_bps"].to_numpy() / 1e6


def packet_delay(packets: pl.DataFrame, flow: int | None = None):
    """One-way delay of each received packet: (send s, ms)."""
    got = _flow(packets, flow).filter(pl.col("recv_ns") >= 0)
    send = got["send_ns"].to_numpy()
    return send / NS, (got["recv_ns"].to_numpy() - send) / 1e6


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


def cdf(values: np.ndarray):
    """Empirical CDF: (sorted values, fraction of values <= each)."""
    x = np.sort(np.asarray(values, dtype=np.float64))
    return x, np.arange(1, len(x) + 1) / max(1, len(x))
