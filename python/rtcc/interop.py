"""Logs other tools read: a simulated run's bottleneck as a mahimahi link log.

mahimahi's format (``link_queue.cc``; the same ``rtcc emu`` writes), one event per line, times in
whole milliseconds since the run started, so ``mm-throughput-graph`` and ``mm-delay-graph`` read it::

    # base timestamp: 0
    12 + 1500        a packet of 1500 bytes arrived at the queue
    13 # 1500        a delivery opportunity of 1500 bytes
    13 - 1500 1      a packet of 1500 bytes left after 1 ms in queue and on the link
    14 d 1 1500      the queue dropped 1 packet of 1500 bytes

The simulator's packet log gives the arrivals, departures and drops of the forward bottleneck (the
packets of every flow but those with ``direction = "reverse"``).
Delivery opportunities come from the capacity log (100 ms means): each 100 ms holds as many
1500-byte opportunities as its capacity carries, spread evenly, which is what a mahimahi trace of
that rate holds (a link with no capacity limit logs none).
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import polars as pl

OPPORTUNITY_BYTES = 1500


def write_mahimahi_log(result, path: str | os.PathLike) -> Path:
    """Write ``result``'s forward bottleneck as a mahimahi link log at ``path`` (atomically)."""
    path = Path(path)
    packets = result.packets
    if packets is None:
        raise ValueError(f"cannot write {path}: this run's packet log was not kept")
    if isinstance(packets, pl.LazyFrame):
        packets = packets.collect()
    # Flows with direction = "reverse" send their data over the other link.
    reverse = [i for i, f in enumerate(result.scenario.get("flows", [])) if f.get("direction") == "reverse"]
    p = packets.filter(~pl.col("flow").is_in(reverse)).select("size", "enqueue_ns", "depart_ns", "dropped")
    ms = lambda col: (pl.col(col) // 1_000_000).cast(pl.Int64)  # noqa: E731
    arrivals = p.filter(pl.col("enqueue_ns") >= 0).select(
        ms("enqueue_ns").alias("t"), pl.lit(1).alias("order"),
        pl.format("{} + {}", ms("enqueue_ns"), pl.col("size")).alias("line"))
    departures = p.filter(pl.col("dropped").not_() & (pl.col("depart_ns") >= 0)).select(
        ms("depart_ns").alias("t"), pl.lit(2).alias("order"),
        pl.format("{} - {} {}", ms("depart_ns"), pl.col("size"), ms("depart_ns") - ms("enqueue_ns")).alias("line"))
    drops = p.filter(pl.col("dropped") & (pl.col("enqueue_ns") >= 0)).select(
        pl.max_horizontal(ms("enqueue_ns"), ms("depart_ns")).alias("t"), pl.lit(3).alias("order"),
        pl.format("{} d 1 {}", pl.max_horizontal(ms("enqueue_ns"), ms("depart_ns")), pl.col("size")).alias("line"))
    events = [arrivals, departures, drops]
    opportunities = _opportunities_ms(result.capacity)
    if opportunities:
        events.append(pl.DataFrame({"t": opportunities, "order": [0] * len(opportunities)},
                                   schema={"t": pl.Int64, "order": pl.Int32})
                      .with_columns(pl.format("{} # {}", pl.col("t"), pl.lit(OPPORTUNITY_BYTES)).alias("line")))
    lines = pl.concat([e.with_columns(pl.col("order").cast(pl.Int32)) for e in events]) \
        .sort(["t", "order"], maintain_order=True)["line"]
    tmp = path.with_name(path.name + ".partial")
    with open(tmp, "w", encoding="utf-8", newline="\n") as f:
        f.write(f"# mahimahi-format log written by rtcc run ({result.name}, forward bottleneck)\n")
        f.write("# init timestamp: 0\n# base timestamp: 0\n")
        if len(lines):
            f.write("\n".join(lines.to_list()) + "\n")
    os.replace(tmp, path)
    return path


def _opportunities_ms(capacity: pl.DataFrame | None) -> list[int]:
    """1500-byte delivery opportunities (ms) carried by each 100 ms of the capacity log."""
    if capacity is None or capacity.height == 0:
        return []
    out: list[int] = []
    carry = 0.0
    for t_ns, bps in capacity.select("time_ns", "bps").iter_rows():
        if not math.isfinite(bps):
            return []  # an unlimited link has no opportunities
        bytes_in_bin = bps * 0.1 / 8 + carry
        n = int(bytes_in_bin // OPPORTUNITY_BYTES)
        carry = bytes_in_bin - n * OPPORTUNITY_BYTES
        start_ms = t_ns / 1e6
        out.extend(int(start_ms + 100.0 * k / n) for k in range(n))
    return out
