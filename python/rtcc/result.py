"""The outcome of one simulation run, and the run folder it is saved to.

A run folder holds ``summary.json`` (the core's text, byte for byte), ``facts.json`` (the core's
route facts and per-window rates: the links each flow crosses, the delays between them, each
link's capacity per 1 s window, each flow's received rate per window; docs/metrics.md),
``scenario.json`` (the scenario as run, keys sorted), ``packets``/``frames``/``state``/``capacity``
as Parquet, ``plots/*.png`` and a small ``index.html``. It is written atomically (see
``rtcc.atomic``).

The four logs are built by the core (``rtcc_sim::tables``: the same columns for Rust users) and
reach Python as Arrow data without a copy, or are written to Parquet by the core itself, so a
run folder without plots needs neither polars nor NumPy (``rtcc run --no-plots`` stays fast).
They become polars DataFrames when first read. The packet log is the only log that grows with
the link's rate (88 bytes a packet in the core): a run can stream it to a Parquet file as it goes
(in chunks of 65,536 packets as the core hands them over, row groups of 262,144) instead of holding it, or not keep it at all
(sweeps without logs): the summary is the same either way. ``rtcc run`` streams the frame and
state logs too (``Scenario.run(logs_to=...)``), so an hour's run holds no more than a minute's.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from .atomic import atomic_dir

__all__ = ["Result", "write_run"]

TABLES = ("packets", "frames", "state", "capacity")


class Result:
    """One run: ``summary`` (dict), ``summary_json`` (text), ``facts`` (dict) and ``facts_json``
    (text, built by the core when first read), ``packets``, ``frames``, ``state``, ``capacity``
    (polars DataFrames, built when first read), ``flows`` (list of dicts) and ``scenario`` (the
    dict run).

    ``packets`` is a LazyFrame over ``packets_path`` for a run whose packet log was streamed to
    that file, and None for one whose log was not kept. Times are integer nanoseconds (``*_ns``
    columns); -1 marks "never" (lost, dropped, excluded). ``table(name)`` gives a log as the
    core's Arrow data (``pyarrow.table(...)`` or any Arrow PyCapsule consumer takes it).
    """

    def __init__(self, run, scenario: dict, packets_path: Path | None = None,
                 streamed: dict[str, Path] | None = None):
        self._run = run  # rtcc._core.Run: the core's result, its logs built on demand
        self._frames: dict = {}
        self.folder: Path | None = None  # the run folder a loaded result reads its logs from
        self.summary_json: str = run.summary
        self.summary: dict = json.loads(self.summary_json)
        self.scenario: dict = scenario
        self.packets_path = Path(packets_path) if packets_path is not None else None
        # The frame and state logs the run streamed to files, by table name.
        self._streamed: dict[str, Path] = dict(streamed or {})
        self.flows: list[dict] = [dict(f) for f in run.flows]
        self.video_encoders: list = []  # real encoders of this run (rtcc.video)
        self._quality = None

    @classmethod
    def load(cls, folder: str | os.PathLike) -> "Result":
        """A run folder written by ``rtcc run`` (or ``save``, a comparison, a sweep's
        ``--keep-logs``), read back: the summary at once, each log when first read."""
        folder = Path(folder)
        self = cls.__new__(cls)
        self._run, self._frames, self.folder, self._streamed = None, {}, folder, {}
        self.video_encoders, self._quality = [], None
        try:
            self.summary_json = (folder / "summary.json").read_text(encoding="utf-8")
            self.scenario = json.loads((folder / "scenario.json").read_text(encoding="utf-8"))
        except FileNotFoundError as e:
            raise FileNotFoundError(f"{folder}: not a run folder ({Path(e.filename).name} is missing)") from None
        self.summary = json.loads(self.summary_json)
        self.packets_path = folder / "packets.parquet"
        self.flows = [{"name": f["name"], "controller": f["controller"], "start_ns": round(f["start_s"] * 1e9),
                       "stop_ns": round(f["stop_s"] * 1e9)} for f in self.summary["flows"]]
        return self

    @property
    def facts_json(self) -> str:
        """``facts.json``'s text: the core's, or a loaded run folder's file (FileNotFoundError for
        a folder written before runs had one)."""
        if self._run is not None:
            return self._run.facts
        try:
            return (self.folder / "facts.json").read_text(encoding="utf-8")
        except FileNotFoundError:
            raise FileNotFoundError(f"{self.folder}: no facts.json (written by an older rtcc: run it again)") from None

    @property
    def facts(self) -> dict:
        return json.loads(self.facts_json)

    def table(self, name: str):
        """The log ``name`` (one of TABLES) as Arrow data: the core's table, or for a loaded run
        folder the file read by polars (whose DataFrame speaks the same Arrow PyCapsule
        interface); None for a packet log that was streamed or not kept."""
        if self._run is None or name in self._streamed:
            return self._frame(name)
        return self._run.table(name)

    def _frame(self, name: str):
        if name not in self._frames:
            import polars as pl

            if self._run is None:
                self._frames[name] = pl.read_parquet(self.folder / f"{name}.parquet")
            elif name in self._streamed:
                self._frames[name] = pl.read_parquet(self._streamed[name])
            else:
                data = self._run.table(name)
                self._frames[name] = None if data is None else pl.DataFrame(data)
        return self._frames[name]

    @property
    def packets(self):
        if self.packets_path is not None:
            import polars as pl

            return pl.scan_parquet(self.packets_path)
        return self._frame("packets")

    @property
    def frames(self):
        return self._frame("frames")

    @property
    def state(self):
        return self._frame("state")

    @property
    def capacity(self):
        return self._frame("capacity")

    @property
    def quality(self) -> dict | None:
        """Quality measured on decoded frames, for runs with a real encoder (``vp8``, ``x264``):
        ``{"flows": [per-flow summary], "frames": DataFrame}`` (see rtcc.video.quality); None for
        runs without one. A loaded run folder reads its ``quality.json``/``quality.parquet``."""
        if self._quality is None:
            if self.folder is not None:
                if not (self.folder / "quality.json").exists():
                    return None
                import polars as pl  # only for runs that have quality: `--no-plots` runs import none

                self._quality = {"flows": json.loads((self.folder / "quality.json").read_text())["flows"],
                                 "frames": pl.read_parquet(self.folder / "quality.parquet")}
            elif self.video_encoders:
                import polars as pl

                from .video.quality import score_run

                rows, flows = score_run(self)
                self._quality = {"flows": flows, "frames": pl.DataFrame(rows, infer_schema_length=None)}
        return self._quality

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


def write_run(result: Result, folder: Path, plots: bool = True, progress=None) -> None:
    """Write the run files into an existing (temporary) folder; the core writes the logs. A
    result whose packet log was not kept (``keep_packets=False``) cannot be written: ValueError.
    ``progress(done, total)`` hears of each plot drawn (``rtcc.progress.RunsProgress``)."""
    from .report import write_run_index

    folder = Path(folder)
    if result.folder is not None:  # a loaded run folder: copied as it is
        if not (folder.exists() and folder.samefile(result.folder)):
            import shutil

            shutil.copytree(result.folder, folder, dirs_exist_ok=True)
        return
    with open(folder / "summary.json", "w", encoding="utf-8", newline="") as f:
        f.write(result.summary_json)
    with open(folder / "facts.json", "w", encoding="utf-8", newline="") as f:
        f.write(result.facts_json)
    with open(folder / "scenario.json", "w", encoding="utf-8") as f:
        f.write(json.dumps(result.scenario, sort_keys=True, indent=2, default=str) + "\n")
    for table in TABLES:
        path = folder / f"{table}.parquet"
        if result._run.write_table(table, str(path)):
            continue
        source = result.packets_path if table == "packets" else result._streamed.get(table)
        if source is None:
            raise ValueError(f"cannot write {path}: this run's {table} log was not kept")
        if not path.exists() or not path.samefile(source):
            import shutil

            shutil.copyfile(source, path)  # a streamed log written elsewhere
    quality = result.quality
    if quality is not None:
        with open(folder / "quality.json", "w", encoding="utf-8") as f:
            f.write(json.dumps({"flows": quality["flows"]}, indent=2) + "\n")
        quality["frames"].write_parquet(folder / "quality.parquet")
    images, charts = [], ""
    if plots:
        from . import plots as plotting  # matplotlib (0.5 s to import) only when plots are drawn
        from .interactive import charts_html, run_charts

        images = plotting.run_plots(result, folder / "plots", progress)
        if quality is not None:
            from .video.quality import write_stills

            images += [folder / p for p in write_stills(result, folder)]
        charts = charts_html(run_charts(result))
    write_run_index(result, folder, images, charts)
