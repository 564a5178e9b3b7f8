"""The live commands' logs in rtcc's Parquet schema (docs/live.md).

The Rust core writes plain CSV while it runs (nothing to hold in memory, nothing lost if the run
is cut short); after the run, these functions turn each log folder into the Parquet tables the
simulator writes, so the same plots and tables read both.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Sequence

import polars as pl

from .atomic import atomic_file

# `rtcc emu`'s packet log: the simulator's packet columns, plus the direction. Packets are not
# classified (the emulator sees IP packets of any application), so `kind` is 0 and `frame` -1;
# `send_ns` is the time the packet entered the emulated link.
EMU_PACKET_COLUMNS = {
    "direction": pl.Utf8, "flow": pl.UInt32, "seq": pl.UInt64, "kind": pl.UInt8, "size": pl.UInt32,
    "frame": pl.Int64, "send_ns": pl.Int64, "enqueue_ns": pl.Int64, "depart_ns": pl.Int64,
    "recv_ns": pl.Int64, "dropped": pl.Boolean,
}


def emu_packets(log_dir: str | os.PathLike) -> pl.DataFrame:
    """`rtcc emu --log-dir DIR`'s packets.csv as a DataFrame with the Parquet columns."""
    csv = pl.read_csv(Path(log_dir) / "packets.csv", schema_overrides={"direction": pl.Utf8})
    return csv.select(
        pl.col("direction"),
        pl.col("flow").cast(pl.UInt32),
        pl.col("seq").cast(pl.UInt64),
        pl.lit(0, dtype=pl.UInt8).alias("kind"),
        pl.col("size").cast(pl.UInt32),
        pl.lit(-1, dtype=pl.Int64).alias("frame"),
        pl.col("enqueue_ns").cast(pl.Int64).alias("send_ns"),
        pl.col("enqueue_ns").cast(pl.Int64),
        pl.col("depart_ns").cast(pl.Int64),
        pl.col("recv_ns").cast(pl.Int64),
        (pl.col("dropped") != 0).alias("dropped"),
    )


def convert_emu_logs(log_dir: str | os.PathLike) -> Path:
    """Write `packets.parquet` beside an emu run's packets.csv (atomically); returns its path."""
    out = Path(log_dir) / "packets.parquet"
    table = emu_packets(log_dir)
    with atomic_file(out, force=True, mode="wb") as f:
        table.write_parquet(f)
    return out


def emu_log_dir(argv: Sequence[str]) -> Path | None:
    """The `--log-dir` of an `emu` command line (only options before `--` are the shell's)."""
    args = list(argv)
    if "--" in args:
        args = args[: args.index("--")]
    for i, a in enumerate(args):
        if a == "--log-dir" and i + 1 < len(args):
            return Path(args[i + 1])
        if a.startswith("--log-dir="):
            return Path(a.split("=", 1)[1])
    return None
