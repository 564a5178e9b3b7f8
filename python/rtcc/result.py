"""The outcome of one simulation run, as polars DataFrames, and the run folder it is saved to.

A run folder holds ``summary.json`` (the core's text, byte for byte), ``scenario.json`` (the
scenario as run, keys sorted), ``packets``/``frames``/``state``/``capacity`` as Parquet,
``plots/*.png`` and a small ``index.html``. It is written atomically (see ``rtcc.atomic``).

The packet log is the only log that grows with the link's rate (88 bytes a packet in the
core). A run can stream it to a Parquet file as it goes (:class:`PacketWriter`, one row group
per chunk the core hands over) instead of holding it, or not keep it at all (sweeps without
logs): the summary is the same either way.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import polars as pl

from .atomic import atomic_dir

__all__ = ["PacketWriter", "Result", "write_run"]

TABLES = ("packets", "frames", "state", "capacity")


def packet_schema():
    """The packet log's columns and types as the core hands them over (docs/cli.md)."""
    import pyarrow as pa  # imported only when a log is streamed

    return pa.schema([
        ("flow", pa.uint32()), ("seq", pa.uint64()), ("kind", pa.uint8()), ("size", pa.uint32()),
        ("frame", pa.int64()), ("send_ns", pa.int64()), ("enqueue_ns", pa.int64()),
        ("depart_ns", pa.int64()), ("recv_ns", pa.int64()), ("dropped", pa.bool_()),
    ])


class PacketWriter:
    """Writes the chunks of a streamed packet log (dicts of NumPy columns, as the core hands them
    over) to one Parquet file, a row group per chunk; ``close()`` finishes the file (an empty
    table when no packet was sent). Rows are grouped by chunk: each flow's rows in send order,
    chunks of different flows interleaved (sort by ``flow``, stable, for a kept log's order)."""

    def __init__(self, path: str | os.PathLike):
        import pyarrow as pa
        import pyarrow.parquet as pq

        self.path = Path(path)
        self._schema = packet_schema()
        self._table = pa.Table.from_pydict
        # Plain encoding: dictionaries of nanosecond times only cost space (twice polars' size).
        self._writer = pq.ParquetWriter(self.path, self._schema, compression="zstd", use_dictionary=False)

    def __call__(self, columns: dict) -> None:
        self._writer.write_table(self._table(columns, schema=self._schema))

    def close(self) -> None:
        self._writer.close()


def _frame(columns: dict) -> pl.DataFrame:
    """DataFrame from the core's columns; numeric numpy arrays are wrapped without copying."""
    series = []
    for name, values in columns.items():
        if isinstance(values, np.ndarray):
            series.append(pl.Series(name, values))
        else:
            series.append(pl.Series(name, list(values), dtype=pl.String if name == "signal" else None))
    return pl.DataFrame(series)


class Result:
    """One run: ``summary`` (dict), ``summary_json`` (text), ``packets``, ``frames``, ``state``,
    ``capacity`` (polars DataFrames), ``flows`` (list of dicts) and ``scenario`` (the dict run).

    ``packets`` is a LazyFrame over ``packets_path`` for a run whose packet log was streamed to
    that file, and None for one whose log was not kept. Times are integer nanoseconds (``*_ns``
    columns); -1 marks "never" (lost, dropped, excluded).
    """

    def __init__(self, raw: dict, scenario: dict, packets_path: Path | None = None):
        self.summary_json: str = raw["summary"]
        self.summary: dict = json.loads(self.summary_json)
        self.scenario: dict = scenario
        self.packets_path = Path(packets_path) if packets_path is not None else None
        self.packets: pl.DataFrame | pl.LazyFrame | None
        if raw["packets"] is not None:
            self.packets = _frame(raw["packets"])
        elif self.packets_path is not None:
            self.packets = pl.scan_parquet(self.packets_path)
        else:
            self.packets = None
        self.frames: pl.DataFrame = _frame(raw["frames"])
        self.state: pl.DataFrame = _frame(raw["state"])
        self.capacity: pl.DataFrame = _frame(raw["capacity"])
        self.flows: list[dict] = [dict(f) for f in raw["flows"]]

    @property
    def name(self) -> str:
        return str(self.summary.get("scenario", self.scenario.get("name", "scenario")))

    def __repr__(self) -> str:
        total = self.summary.get("total", {})
        tput = total.get("throughput_bps")
        tput_s = f"{tput / 1e6:.2f} Mbps" if isinstance(tput, (int, float)) else "n/a"
        ctrls = ",".join(sorted({f["controller"] for f in self.flows}))
        return f"<rtcc.Result {self.name!r} seed={self.summary.get('seed')} flows={len(self.flows)} [{ctrls}] throughput={tput_s}>"

    def save(self, out_dir: str | os.PathLike, plots: bool = True, force: bool = False) -> Path:
        """Write the run folder ``out_dir`` atomically; an existing non-empty one needs ``force``."""
        with atomic_dir(out_dir, force=force) as tmp:
            write_run(self, tmp, plots=plots)
        return Path(out_dir)


def write_run(result: Result, folder: Path, plots: bool = True) -> None:
    """Write the run files into an existing (temporary) folder. A result whose packet log was
    not kept (``keep_packets=False``) cannot be written: ValueError."""
    from .report import write_run_index

    folder = Path(folder)
    with open(folder / "summary.json", "w", encoding="utf-8", newline="") as f:
        f.write(result.summary_json)
    with open(folder / "scenario.json", "w", encoding="utf-8") as f:
        f.write(json.dumps(result.scenario, sort_keys=True, indent=2, default=str) + "\n")
    for table in TABLES:
        path = folder / f"{table}.parquet"
        data = getattr(result, table)
        if isinstance(data, pl.DataFrame):
            data.write_parquet(path)
        elif data is None:
            raise ValueError(f"cannot write {path}: this run's {table} log was not kept")
        elif result.packets_path is None or not path.exists() or not path.samefile(result.packets_path):
            data.sink_parquet(path)  # a streamed log written elsewhere: copied without loading it
    images = []
    if plots:
        from . import plots as plotting  # matplotlib (0.5 s to import) only when plots are drawn

        images = plotting.run_plots(result, folder / "plots")
    write_run_index(result, folder, images)
