"""The outcome of one simulation run, as polars DataFrames, and the run folder it is saved to.

A run folder holds ``summary.json`` (the core's text, byte for byte), ``scenario.json`` (the
scenario as run, keys sorted), ``packets``/``frames``/``state``/``capacity`` as Parquet,
``plots/*.png`` and a small ``index.html``. It is written atomically (see ``rtcc.atomic``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import polars as pl

from .atomic import atomic_dir

__all__ = ["Result", "write_run"]

TABLES = ("packets", "frames", "state", "capacity")


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

    Times are integer nanoseconds (``*_ns`` columns); -1 marks "never" (lost, dropped, excluded).
    """

    def __init__(self, raw: dict, scenario: dict):
        self.summary_json: str = raw["summary"]
        self.summary: dict = json.loads(self.summary_json)
        self.scenario: dict = scenario
        self.packets: pl.DataFrame = _frame(raw["packets"])
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
    """Write the run files into an existing (temporary) folder."""
    from . import plots as plotting  # matplotlib is only imported when plots are drawn
    from .report import write_run_index

    folder = Path(folder)
    with open(folder / "summary.json", "w", encoding="utf-8", newline="") as f:
        f.write(result.summary_json)
    with open(folder / "scenario.json", "w", encoding="utf-8") as f:
        f.write(json.dumps(result.scenario, sort_keys=True, indent=2, default=str) + "\n")
    for table in TABLES:
        getattr(result, table).write_parquet(folder / f"{table}.parquet")
    images = plotting.run_plots(result, folder / "plots") if plots else []
    write_run_index(result, folder, images)
