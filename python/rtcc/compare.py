"""Run several controllers on the same scenario and write a comparison folder.

A comparison folder holds ``runs/<label>/`` (one run folder per controller spec),
``comparison.csv``, ``comparison.md``, overlaid plots in ``plots/`` and ``index.html``.
``compare()`` writes it atomically; the demo composes ``run_all()`` and
``write_comparison()`` to put two comparisons in one report.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from . import plots as plotting
from .atomic import atomic_dir
from ._core import ScenarioError
from .progress import RunsProgress, TerminalProgress
from .registry import PYTHON_CONTROLLERS, ControllerSpec, controllers
from .report import comparison_rows, markdown_table, write_compare_index, write_csv
from .result import Result, write_run
from .scenario import Scenario
from .sweep import execute, worker_died

__all__ = ["Written", "compare", "run_all", "write_comparison", "folder_name", "format_rate"]


def folder_name(label: str) -> str:
    """A file-system-safe folder name for a label: ``fixed:rate=5Mbps`` -> ``fixed_rate=5Mbps``."""
    return re.sub(r"[^A-Za-z0-9._=+-]+", "_", label).strip("._") or "run"


def format_rate(bps: float) -> str:
    """A rate as scenario text with three significant digits: 4637000 -> ``4.64Mbps``."""
    for unit, scale in (("Gbps", 1e9), ("Mbps", 1e6), ("kbps", 1e3)):
        if bps >= scale:
            return f"{bps / scale:.3g}{unit}"
    return f"{bps:.3g}bps"


def _unique(specs: Iterable[ControllerSpec]) -> list[ControllerSpec]:
    out, seen = [], set()
    for spec in specs:
        label, n = spec.label, 2
        while label in seen:
            label, n = f"{spec.label} #{n}", n + 1
        seen.add(label)
        out.append(ControllerSpec(spec.name, spec.params, label))
    return out


def run_folders(labels: Iterable[str]) -> dict[str, str]:
    """Label -> the run's folder inside a comparison (``runs/<name>``, names made unique)."""
    dirs: dict[str, str] = {}
    for label in labels:
        name, n = folder_name(label), 2
        while f"runs/{name}" in dirs.values():
            name, n = f"{folder_name(label)}-{n}", n + 1
        dirs[label] = f"runs/{name}"
    return dirs


def run_all(scenario: Scenario, specs: list[ControllerSpec], seed: int | None = None, progress: bool = False,
            done: dict[str, Result] | None = None, allow_large: bool = False,
            folder: Path | None = None, jobs: int | None = None, backend: str = "local",
            address: str | None = None, plots: bool = True) -> dict[str, Result]:
    """Run ``scenario`` once per spec (label -> Result); results already in ``done`` are reused.
    Runs estimated to log more than 50 million packets are refused unless ``allow_large``.

    With ``folder`` (a comparison being written), the runs go to the engine sweeps use
    (:func:`rtcc.sweep.execute`: ``jobs`` worker processes, default one per CPU, or Ray with
    ``backend="ray"``), each writing its whole run folder, plots included unless ``plots`` is
    False, into ``folder`` (:func:`run_folders`); the Results read their logs from there. A
    controller registered from Python runs in this process. Without ``folder`` the runs are
    made here, one after the other, and keep their logs in memory."""
    registry = controllers()
    specs = _unique(specs)
    variants = {}
    for spec in specs:  # check everything before the first (slow) run
        spec.check(registry)
        variants[spec.label] = scenario.with_controller(spec)
        variants[spec.label].validate()
        if not allow_large:
            variants[spec.label].check_size()
    results = dict(done or {})
    todo = {label: v for label, v in variants.items() if label not in results}
    if folder is None:
        for label, variant in todo.items():
            with TerminalProgress(f"{scenario.name} / {label}") as bar:
                results[label] = variant.run(seed=seed, progress=bar.callback if progress else False,
                                             allow_large=allow_large)
        return {label: results[label] for label in variants}
    if any(s.name in PYTHON_CONTROLLERS for s in specs):
        if backend != "local":
            raise ValueError("a controller registered from Python runs only in this process, not on Ray")
        jobs = 1
    dirs = run_folders(variants)
    labels = list(todo)
    tasks = [(todo[label].to_dict(), todo[label].base_dir, seed, str(Path(folder) / dirs[label]), allow_large, plots)
             for label in labels]
    show = RunsProgress(scenario.name, len(tasks)) if progress and tasks else None
    try:
        outputs, died = execute(tasks, jobs, show, backend, address)
    finally:
        if show:
            show.close()
    if died is not None:
        raise ScenarioError(worker_died(", ".join(labels[i] for i in died)))
    for label, output in zip(labels, outputs):
        if output is not None and output[0]:
            raise ScenarioError(f"{label}: {output[1]}")
        results[label] = Result.load(Path(folder) / dirs[label])
    return {label: results[label] for label in variants}


@dataclass
class Written:
    """What ``write_comparison`` wrote: table rows, label -> run folder, plot files (relative)."""

    rows: list[dict]
    runs: dict[str, str]
    images: list[str]


def write_comparison(folder: Path, results: dict[str, Result], title: str, notes: list[str] = (),
                     plots: bool = True) -> Written:
    """Write run folders, tables, overlaid plots and ``index.html`` into ``folder``."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    dirs = run_folders(results)
    for label, result in results.items():
        run_dir = folder / dirs[label]
        run_dir.mkdir(parents=True, exist_ok=True)  # a streamed run's log is already there
        write_run(result, run_dir, plots=plots)
    rows = comparison_rows([(label, r.summary) for label, r in results.items()])
    write_csv(rows, folder / "comparison.csv")
    (folder / "comparison.md").write_text(f"# {title}\n\n" + markdown_table(rows)
                                          + "".join(f"\n{n}\n" for n in notes), encoding="utf-8")
    first = next(iter(results.values())).summary if results else {}
    images, charts = [], ""
    if plots and results:
        from .interactive import charts_html, compare_charts

        images = plotting.compare_plots(results, folder / "plots", first.get("scenario", ""))
        charts = charts_html(compare_charts(results, first.get("scenario", "")))
    write_compare_index(folder, title, first, rows, images, dirs, list(notes), charts)
    return Written(rows, dirs, [p.relative_to(folder).as_posix() for p in images])


def spec_text(spec: ControllerSpec) -> str:
    """The spec as command-line text: ``name`` or ``name:key=value,...`` (its label before
    ``_unique`` numbered it)."""
    return ControllerSpec.make(spec.name, spec.params).label


def run_all_live(scenario_file: str | os.PathLike, specs: list[ControllerSpec], folder: Path,
                 emulate: bool = True) -> dict[str, Result]:
    """Run the scenario file's first flow live once per spec (``"<label> (live)"`` -> Result), its
    processes' logs under ``folder/live-logs/<label>``: rtcc send inside rtcc emu, rtcc recv on
    the host (:func:`rtcc.live.run_live`). Real time: each run takes the scenario's duration."""
    from .live import run_live

    results = {}
    for spec in _unique(specs):
        label = f"{spec.label} (live)"
        print(f"{label}: running live for the scenario's duration", flush=True)
        results[label] = run_live(scenario_file, Path(folder) / "live-logs" / folder_name(spec.label),
                                  controller=spec_text(spec), emulate=emulate)
    return results


def compare(scenario: Scenario, specs: list[ControllerSpec], out_dir: str | os.PathLike, seed: int | None = None,
            force: bool = False, progress: bool = False, plots: bool = True, allow_large: bool = False,
            live: bool = False, emulate: bool = True, jobs: int | None = None, backend: str = "local",
            address: str | None = None) -> list[dict]:
    """Run every spec on ``scenario`` and write the comparison folder ``out_dir`` atomically.
    The runs go to ``jobs`` worker processes (default one per CPU) or to Ray (``backend``,
    ``address``), as a sweep's do (:func:`run_all`). ``live``: also run each spec live
    (``scenario`` must come from a file, and its first flow is the one run), each live run beside
    its simulation in the tables and plots."""
    if live and not scenario.source:
        raise ValueError("a live comparison needs a scenario read from a file")
    with atomic_dir(out_dir, force=force) as tmp:
        results = run_all(scenario, specs, seed=seed, progress=progress, allow_large=allow_large, folder=tmp,
                          jobs=jobs, backend=backend, address=address, plots=plots)
        if live:
            simulated, results = results, {}
            live_results = run_all_live(scenario.source, specs, tmp, emulate=emulate)
            for (label, sim), live_result in zip(simulated.items(), live_results.items()):
                results[label] = sim
                results[live_result[0]] = live_result[1]
        return write_comparison(tmp, results, f"rtcc compare: {scenario.name}", plots=plots).rows
