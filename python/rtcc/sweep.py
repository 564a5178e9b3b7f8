"""Sweeps: one base scenario, a grid of changes to it, several seeds, one table of per-flow metrics.

A sweep file is TOML with a ``[sweep]`` table and the base ``[scenario]``::

    [sweep]
    name = "gcc-aqm-e1"                    # default: the file stem
    description = "One GCC flow alone"     # optional, shown in summary.md
    seeds = [1, 2, 3]                      # default: the scenario's seed (or 1)

    [sweep.grid]                           # dotted path -> list of values; every combination is a cell
    "path.forward.capacity" = ["1Mbps", "2Mbps"]
    "path.forward.queue" = ["300ms", { kind = "codel", preset = "gcc-aqm" }]

    [[sweep.variant]]                      # optional named variants, crossed with the grid
    label = "n=2"
    "flows[0].start" = "5s"
    "+flows" = [{ name = "cubic", kind = "tcp", controller = "cubic" }]

    [scenario]                             # the base scenario, exactly as in a scenario file
    duration = "60s"
    ...

Paths: ``a.b.c`` addresses tables (missing ones are created), ``flows[1].params.rate`` array
elements (an index out of range is an error), ``flows`` a whole value (such as a list of flow
tables), and ``+flows`` appends a list of items to an array. A cell sets its grid values in the
order written, then its variant's keys. Relative file paths resolve against the sweep file's folder.

Cells are ordered like nested loops (first grid key outermost, variants innermost). A cell's
label joins ``key=value`` for each grid key (the shortest unique tail of the path; a table value
by its ``name``, ``kind`` or ``model``, with its other fields only when needed to tell values apart)
and the variant label, e.g. ``capacity=1Mbps,queue=codel,n=2``. Labels are file-system safe.

``Sweep.run()`` runs every (cell, seed) pair, in worker processes when ``jobs > 1``, and returns a
``SweepResult``: ``runs`` (one row per run and flow) and ``cells`` (mean and std over seeds).
``SweepResult.save()`` and ``run_sweep()`` write the sweep folder atomically (see docs/cli.md).
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import itertools
import json
import math
import multiprocessing
import os
import re
import shutil
import signal
import statistics
import sys
from rtcc import _toml as tomllib
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any, Callable

import polars as pl

from ._core import ScenarioError
from .atomic import _alive, atomic_dir
from .progress import RunsProgress
from .scenario import Scenario, _check_seed, read_bounded

__all__ = ["Sweep", "SweepIncomplete", "SweepResult", "run_sweep", "set_path"]

SWEEP_KEYS = ("name", "description", "seeds", "grid", "variant")
ID_KEYS = ("name", "kind", "model", "controller")  # what names a table value in a label
_PATH = re.compile(r"[A-Za-z0-9_-]+(\[\d+\])*(\.[A-Za-z0-9_-]+(\[\d+\])*)*")
_UNSAFE = re.compile(r"[^A-Za-z0-9._=+,-]+")
MAX_LABEL = 200


# -- paths ---------------------------------------------------------------------------------------


def _parse_path(path: str) -> list[str | int]:
    if not isinstance(path, str) or not _PATH.fullmatch(path.removeprefix("+")):
        raise ScenarioError(f"{path!r}: not a path; expected dotted names with optional [index], "
                            "e.g. path.forward.capacity or flows[1].params.rate")
    return [int(i) if i else name for name, i in re.findall(r"([^.\[\]]+)|\[(\d+)\]", path.removeprefix("+"))]


def _where(steps: list) -> str:
    return "".join(f"[{s}]" if isinstance(s, int) else f".{s}" for s in steps).lstrip(".")


def set_path(data: dict, path: str, value: Any) -> None:
    """Set ``path`` in ``data`` to a copy of ``value``; ``+path`` extends the array there instead.

    Missing tables are created; an array index out of range raises ScenarioError naming the path.
    """
    steps = _parse_path(path)
    value = copy.deepcopy(value)
    if path.startswith("+") and not isinstance(value, list):
        raise ScenarioError(f"{path}: expected a list of items to append, got {type(value).__name__}")
    node: Any = data
    for i, step in enumerate(steps):
        last = i == len(steps) - 1
        here = _where(steps[:i]) or "the scenario"
        if isinstance(step, int):
            if not isinstance(node, list):
                raise ScenarioError(f"{path}: {here} is not an array, it cannot take [{step}]")
            if step >= len(node):
                raise ScenarioError(f"{path}: {_where(steps[:i + 1])} does not exist ({here} has {len(node)} "
                                    f"element{'s' * (len(node) != 1)})")
        elif not isinstance(node, dict):
            what = "an array (give an index, e.g. [0])" if isinstance(node, list) else f"{json.dumps(node)}"
            raise ScenarioError(f"{path}: {here} is {what}, not a table")
        if last:
            break
        if isinstance(step, str) and step not in node:
            if isinstance(steps[i + 1], int):
                raise ScenarioError(f"{path}: {_where(steps[:i + 1])} does not exist")
            node[step] = {}
        node = node[step]
    step = steps[-1]
    if not path.startswith("+"):
        node[step] = value
    elif isinstance(step, str) and step not in node:
        node[step] = value
    elif isinstance(node[step], list):
        node[step].extend(value)
    else:
        raise ScenarioError(f"{path}: {_where(steps)} is not an array, nothing to append to")


# -- labels --------------------------------------------------------------------------------------


def _safe(text: str) -> str:
    return _UNSAFE.sub("_", text)


def _text(value: Any, full: bool) -> str:
    """A value as label text: scalars as written, a table by its name/kind, a list item by item."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, dict):
        ident = next((k for k in ID_KEYS if isinstance(value.get(k), (str, int, float))), None)
        parts = [_text(value[ident], full)] if ident else []
        if full or not ident:
            parts += [f"{k}={_text(v, full)}" for k, v in value.items() if k != ident]
        return "+".join(parts) or "{}"
    if isinstance(value, list):
        return "+".join(_text(v, full) for v in value) or "[]"
    return str(value)


def _value_texts(values: list) -> list[str]:
    """Label texts for one grid key's values, unique within the key."""
    for full in (False, True):
        texts = [_safe(_text(v, full)) for v in values]
        if len(set(texts)) == len(texts):
            return texts
    return [f"{t}~{i + 1}" for i, t in enumerate(texts)]


def _short_keys(paths: list[str]) -> list[str]:
    """The shortest tail of each path that tells it apart from the others: capacity, forward.queue..."""
    parts = [re.sub(r"\[(\d+)\]", r"\1", p.removeprefix("+")).split(".") for p in paths]
    n = [1] * len(paths)
    while True:
        names = ["+" * p.startswith("+") + ".".join(ps[-k:]) for p, ps, k in zip(paths, parts, n)]
        dups = {x for x in names if names.count(x) > 1}
        grow = [i for i, x in enumerate(names) if x in dups and n[i] < len(parts[i])]
        if not grow:
            return [_safe(x) for x in names]
        for i in grow:
            n[i] += 1


def _finish_label(label: str) -> str:
    label = label.lstrip(".") or "base"
    if len(label) > MAX_LABEL:
        label = f"{label[:MAX_LABEL - 9]}-{hashlib.sha1(label.encode()).hexdigest()[:8]}"
    return label


# -- the sweep -----------------------------------------------------------------------------------


def _flatten_grid(grid: dict, prefix: str = "") -> dict[str, list]:
    """Grid keys written as TOML dotted keys (unquoted) arrive as nested tables: flatten them."""
    out = {}
    for key, values in grid.items():
        path = f"{prefix}.{key}" if prefix else key
        if isinstance(values, dict):
            for k, v in _flatten_grid(values, path).items():
                if k in out:
                    raise ScenarioError(f"sweep.grid: {k!r} is given twice")
                out[k] = v
        else:
            out[path] = values
    return out



# More cells than this is almost certainly a mistake (a grid of 10^7 cells would take days to
# build, let alone run); the count is checked before any cell is built.
MAX_CELLS = 100_000

class Sweep:
    """A base scenario, a grid of values for dotted paths, named variants and seeds.

    >>> sw = Sweep.from_file("experiments/x/e1.toml")
    >>> [label for label, params, scenario in sw.cells()]
    >>> sw.run(jobs=4).save("out/e1")
    """

    def __init__(self, base: dict, grid: dict | None = None, variants: list[dict] | None = None,
                 seeds: list[int] | None = None, name: str = "sweep", description: str = "",
                 *, base_dir: str | os.PathLike = ".", source: str | None = None):
        self.source = source  # the sweep file, used to prefix error messages
        if not isinstance(base, dict):
            raise self._error(f"scenario: expected a table, got {type(base).__name__}")
        self.base = copy.deepcopy(base)
        self.base_dir = os.path.abspath(base_dir)
        self.name = str(name)
        self.description = str(description)
        self.grid = self._check_grid(_flatten_grid(grid or {}))
        self.variants = self._check_variants(variants or [])
        if seeds is None:
            seeds = [self.base.get("seed", 1)]
        self.seeds = self._check_seeds(seeds, "sweep.seeds")

    @classmethod
    def from_file(cls, path: str | os.PathLike) -> "Sweep":
        """Load a TOML sweep file; its name defaults to the file stem. A path that does not exist
        but names a bundled sweep (``gcc_aqm/e1_alone``, see ``rtcc examples``) loads that."""
        from .examples import resolve

        p = Path(resolve(path))
        try:
            data = tomllib.loads(read_bounded(p, "sweep file").decode("utf-8"))
        except FileNotFoundError:
            raise ScenarioError(f"{path}: no such sweep file (`rtcc examples` lists the bundled ones, "
                                "usable by name)") from None
        except IsADirectoryError:
            raise ScenarioError(f"{path}: is a folder, expected a sweep file (.toml)") from None
        except OSError as e:
            raise ScenarioError(f"{path}: cannot read sweep file: {e.strerror}") from None
        except UnicodeDecodeError:
            raise ScenarioError(f"{path}: sweep file is not UTF-8 text") from None
        except tomllib.TOMLDecodeError as e:
            raise ScenarioError(f"{path}: invalid TOML: {e}") from None
        except RecursionError:
            raise ScenarioError(f"{path}: invalid TOML: nested too deeply to read") from None
        return cls.from_dict(data, base_dir=p.absolute().parent, source=str(path), default_name=p.stem)

    @classmethod
    def from_dict(cls, data: dict, base_dir: str | os.PathLike = ".", source: str | None = None,
                  default_name: str = "sweep") -> "Sweep":
        """Build a sweep from the structure of a sweep file (``{"sweep": {...}, "scenario": {...}}``)."""
        prefix = f"{source}: " if source else ""
        for key in data:
            if key not in ("sweep", "scenario"):
                raise ScenarioError(f"{prefix}{key}: unknown top-level key; a sweep file has [sweep] and [scenario]")
        if not isinstance(data.get("scenario"), dict):
            raise ScenarioError(f"{prefix}scenario: missing [scenario] table (the base scenario)")
        sweep = data.get("sweep", {})
        if not isinstance(sweep, dict):
            raise ScenarioError(f"{prefix}sweep: expected a table")
        for key in sweep:
            if key not in SWEEP_KEYS:
                raise ScenarioError(f"{prefix}sweep.{key}: unknown key; allowed: {', '.join(SWEEP_KEYS)}")
        if not isinstance(sweep.get("grid", {}), dict):
            raise ScenarioError(f"{prefix}sweep.grid: expected a table of path = [values]")
        variants = sweep.get("variant", [])
        if not isinstance(variants, list):
            raise ScenarioError(f"{prefix}sweep.variant: expected [[sweep.variant]] tables")
        return cls(data["scenario"], grid=sweep.get("grid", {}), variants=variants,
                   seeds=sweep.get("seeds"), name=sweep.get("name", default_name),
                   description=sweep.get("description", ""), base_dir=base_dir, source=source)

    def _error(self, message: str) -> ScenarioError:
        return ScenarioError(f"{self.source}: {message}" if self.source else message)

    def _check_grid(self, grid: dict) -> dict[str, list]:
        for path, values in grid.items():
            where = f"sweep.grid.{json.dumps(path)}"
            try:
                steps = _parse_path(path)
            except ScenarioError as e:
                raise self._error(f"{where}: {e}") from None
            if steps in (["seed"], ["name"]):
                raise self._error(f"{where}: set seeds with sweep.seeds; cells are named by their labels")
            if not isinstance(values, list) or not values:
                raise self._error(f"{where}: expected a non-empty list of values, got {values!r}")
            for i, v in enumerate(values):
                if v in values[:i]:
                    raise self._error(f"{where}: value {v!r} is listed twice")
        return copy.deepcopy(grid)

    def _check_variants(self, variants: list) -> list[dict]:
        out, labels = [], set()
        for i, v in enumerate(variants):
            where = f"sweep.variant[{i}]"
            if not isinstance(v, dict):
                raise self._error(f"{where}: expected a table with a label and paths to set")
            label = v.get("label")
            if not isinstance(label, str) or not label.strip():
                raise self._error(f"{where}: missing label (a short name such as \"n=2\")")
            if _safe(label) in labels:
                raise self._error(f"{where}: label {label!r} is used twice")
            labels.add(_safe(label))
            settings = {k: copy.deepcopy(x) for k, x in v.items() if k != "label"}
            for path in settings:
                try:
                    _parse_path(path)
                except ScenarioError as e:
                    raise self._error(f"{where}: {e}") from None
            out.append({"label": label, "set": settings})
        return out

    def _check_seeds(self, seeds: Any, where: str) -> list[int]:
        if not isinstance(seeds, list) or not seeds:
            raise self._error(f"{where}: expected a non-empty list of integers, got {seeds!r}")
        try:
            seeds = [_check_seed(s) for s in seeds]
        except ScenarioError as e:
            raise self._error(f"{where}: {e}") from None
        if len(set(seeds)) != len(seeds):
            raise self._error(f"{where}: a seed is listed twice ({seeds})")
        return seeds

    def with_seeds(self, seeds: list[int]) -> "Sweep":
        """A copy that runs these seeds."""
        new = copy.copy(self)
        new.seeds = self._check_seeds(list(seeds), "seeds")
        return new

    # -- cells ---------------------------------------------------------------------------------

    def cell_count(self) -> int:
        """How many cells the grid and variants make, without building them."""
        return math.prod(len(v) for v in self.grid.values()) * max(1, len(self.variants))

    def cells(self) -> list[tuple[str, dict, Scenario]]:
        """Every cell: ``(label, params, scenario)``, params mapping each grid path (and ``variant``) to its value.

        Raises ScenarioError naming the cell and the path when a path cannot be set, or when the
        grid has more than ``MAX_CELLS`` cells (counted before anything is built).
        """
        count = self.cell_count()
        if count > MAX_CELLS:
            raise self._error(f"the grid makes {count} cells, more than the {MAX_CELLS} a sweep may have; "
                              "split it into smaller sweeps")
        keys = list(self.grid)
        texts = [_value_texts(self.grid[k]) for k in keys]
        short = _short_keys(keys)
        variants = self.variants or [None]
        cells, seen = [], set()
        for combo in itertools.product(*[range(len(self.grid[k])) for k in keys], range(len(variants))):
            *idx, vi = combo
            variant = variants[vi]
            parts = [f"{s}={t[i]}" for s, t, i in zip(short, texts, idx)]
            if variant:
                parts.append(_safe(variant["label"]))
            label = base = _finish_label(",".join(parts))
            n = 2
            while label in seen:
                label, n = f"{base}~{n}", n + 1
            seen.add(label)
            params = {k: copy.deepcopy(self.grid[k][i]) for k, i in zip(keys, idx)}
            settings = list(params.items())
            if variant:
                params["variant"] = variant["label"]
                settings += list(variant["set"].items())
            data = copy.deepcopy(self.base)
            for path, value in settings:
                try:
                    set_path(data, path, value)
                except ScenarioError as e:
                    raise self._error(f"cell {label}: {e}") from None
            data["name"] = f"{self.name}/{label}"
            cells.append((label, params, Scenario.from_dict(data, base_dir=self.base_dir)))
        return cells

    def validate(self) -> list[tuple[str, dict, Scenario]]:
        """Check every cell (in the core) before anything runs; return the cells."""
        cells = self.cells()
        for label, _, scenario in cells:
            try:
                scenario.validate()
            except ScenarioError as e:
                raise self._error(f"cell {label}: {str(e).removeprefix('scenario: ')}") from None
        return cells

    def to_dict(self) -> dict:
        """The resolved sweep, as written to sweep.json."""
        return {"name": self.name, "description": self.description, "source": self.source,
                "base_dir": self.base_dir, "seeds": self.seeds, "grid": copy.deepcopy(self.grid),
                "variants": [{"label": v["label"], **copy.deepcopy(v["set"])} for v in self.variants],
                "base": copy.deepcopy(self.base),
                "cells": [{"label": label, "params": params} for label, params, _ in self.cells()]}

    def __repr__(self) -> str:
        n = max(1, len(self.variants)) * math.prod(len(v) for v in self.grid.values())
        return f"Sweep({self.name!r}, cells={n}, seeds={self.seeds})"

    # -- running -------------------------------------------------------------------------------

    def run(self, jobs: int | None = None, progress: bool | Callable[[int, int], None] = False,
            logs_dir: str | os.PathLike | None = None, allow_large: bool = False,
            done: dict[tuple[str, int], str] | None = None, backend: str = "local",
            address: str | None = None, journal: str | os.PathLike | None = None) -> "SweepResult":
        """Run every cell with every seed and return the SweepResult.

        ``jobs``: worker processes (default: the number of CPUs; 1 runs in this process). Workers
        are spawned, so a script that runs a sweep with ``jobs > 1`` needs the usual
        ``if __name__ == "__main__":`` guard.
        ``progress=True`` draws ``runs done/total`` on stderr when it is a terminal; a callable
        receives ``(done, total)``. ``logs_dir``: write each run's full folder (Parquet logs,
        plots) to ``logs_dir/<label>/seed<k>``. A cell estimated to log more than 50 million
        packets is refused before anything runs unless ``allow_large``. ``done``: summary.json
        texts of runs already made, by (label, seed), which are not run again.

        A run that fails, or a worker process that dies, stops the sweep with a
        :class:`SweepIncomplete` error that names the cell and carries the runs that finished.

        ``journal``: a folder where each run's ``<label>/seed<k>/summary.json`` and ``scenario.json``
        are written as soon as it finishes (what ``--resume`` finds after a kill -9).

        ``backend="ray"`` runs each run as a Ray task on the cluster at ``address`` (a local Ray
        instance without one), shipping the input files with the tasks and a kept run folder back
        (``rtcc.ray_backend``); ``jobs`` is then Ray's business.
        """
        check_engine(backend, jobs)
        cells = self.validate()
        if not allow_large:
            for label, _, sc in cells:
                try:
                    sc.check_size()
                except ScenarioError as e:
                    raise self._error(f"cell {label}: {str(e).removeprefix('scenario: ')}") from None
        done = dict(done or {})
        keys = [(label, seed) for label, _, _ in cells for seed in self.seeds if (label, seed) not in done]
        scenarios = {label: sc for label, _, sc in cells}
        tasks = [(scenarios[label].to_dict(), scenarios[label].base_dir, seed,
                  str(Path(logs_dir) / label / f"seed{seed}") if logs_dir is not None else None, allow_large)
                 for label, seed in keys]
        show = RunsProgress(self.name, len(tasks)) if progress is True else None
        report = show if show else (progress if callable(progress) else None)
        def record(i: int, output: tuple) -> None:
            if journal is not None and not output[0]:
                label, seed = keys[i]
                _write_run_files(Path(journal) / label / f"seed{seed}", output[1], scenarios[label], seed)

        try:
            outputs, died = execute(tasks, jobs, report, backend, address, on_result=record)
        except KeyboardInterrupt as e:
            # Interrupted: the runs that finished go with the exception, for run_sweep to keep.
            finished = {key: o[1] for key, o in zip(keys, getattr(e, "outputs", None) or [])
                        if o is not None and not o[0]}
            if done or finished:
                e.partial = SweepResult(self, cells, done | finished)
                e.total = len(cells) * len(self.seeds)
            raise
        finally:
            if show:
                show.close()
        summaries = done | {key: o[1] for key, o in zip(keys, outputs) if o is not None and not o[0]}
        failed = [(key, o[1]) for key, o in zip(keys, outputs) if o is not None and o[0]]
        if died is not None:
            running = "; ".join(f"cell {label}, seed {seed}" for label, seed in (keys[i] for i in died))
            message = worker_died(f"one of: {running}" if len(died) > 1 else running or "a run")
        elif failed:
            (label, seed), text = failed[0]
            message = f"cell {label}, seed {seed}: {text}"
        else:
            return SweepResult(self, cells, summaries)
        total = len(cells) * len(self.seeds)
        if not summaries:
            raise self._error(message)  # nothing finished: nothing to keep
        raise SweepIncomplete(self._error(message).args[0], SweepResult(self, cells, summaries), total)


class SweepIncomplete(ScenarioError):
    """A sweep stopped by a failed run or a dead worker: ``partial`` holds the runs that finished
    (a SweepResult), ``total`` the number of runs the sweep has."""

    def __init__(self, message: str, partial: "SweepResult", total: int):
        super().__init__(message)
        self.partial = partial
        self.total = total


def check_engine(backend: str, jobs: int | None) -> None:
    """ValueError for an unknown backend or a job count that is not a positive integer."""
    if backend not in ("local", "ray"):
        raise ValueError(f"backend: expected \"local\" or \"ray\", got {backend!r}")
    if jobs is not None and (isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1):
        raise ValueError(f"jobs: expected a positive integer, got {jobs!r}")


def default_jobs() -> int:
    """Worker processes when none are asked for: one per CPU this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def parallel_map(fn: Callable, items, jobs: int | None = None,
                 on_result: Callable[[int, Any], None] | None = None) -> list:
    """``[fn(x) for x in items]`` in ``jobs`` spawned worker processes (default one per CPU; in
    this process with one job or one item), workers quiet on Ctrl-C and dying with this process
    as a sweep's do, and stopped at once if this process is interrupted. ``fn`` must be a
    module-level function of an importable module. ``on_result(index, result)`` is called as
    each result comes back."""
    items = list(items)
    jobs = jobs or default_jobs()
    out: list = [None] * len(items)
    if jobs <= 1 or len(items) <= 1:
        for i, x in enumerate(items):
            out[i] = fn(x)
            if on_result:
                on_result(i, out[i])
        return out
    pool = ProcessPoolExecutor(max_workers=min(jobs, len(items)), mp_context=multiprocessing.get_context("spawn"),
                               initializer=_quiet_worker, initargs=(os.getpid(),))
    try:
        index = {pool.submit(fn, x): i for i, x in enumerate(items)}
        pending = set(index)
        while pending:
            finished, pending = _wait_awake(pending)
            for future in finished:
                out[index[future]] = future.result()
                if on_result:
                    on_result(index[future], out[index[future]])
    except BaseException:
        _stop(pool)
        raise
    pool.shutdown()
    return out


def worker_died(running: str) -> str:
    """The message for a worker process that died while running ``running``. The usual cause in a
    script is a missing ``if __name__ == "__main__":`` guard: workers are spawned, and a spawned
    worker imports the script, which then starts the sweep again instead of its runs (Python
    stops that child, and the pool sees it die), so that case is named."""
    script = _unguarded_main_script()
    if script is None:
        return f"a worker process died (killed, or an abort in the core) while running {running}"
    return (f"a worker process died while running {running}: {script} runs this without an "
            "`if __name__ == \"__main__\":` guard, and worker processes are started by importing the script, "
            "so each worker started the work again instead of its part. Put the calls under that guard, "
            "or pass jobs=1")


def _unguarded_main_script() -> str | None:
    """The main script's path when it is a file with no ``__name__ == "__main__"`` test."""
    import re

    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    if path is None or getattr(main, "__spec__", None) is not None:  # interactive, or `python -m`
        return None
    try:
        source = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    return None if re.search(r"__name__\s*==\s*['\"]__main__['\"]", source) else path


def execute(tasks: list[tuple], jobs: int | None = None, progress: Callable[[int, int], None] | None = None,
            backend: str = "local", address: str | None = None,
            on_result: Callable[[int, tuple], None] | None = None) -> tuple[list, list[int] | None]:
    """Run tasks (see :func:`_run_task`) on the engine of sweeps, comparisons and the demo: a
    spawned process pool of ``jobs`` workers (default: one per CPU; 1 runs in this process), or
    Ray (``backend="ray"``, the cluster at ``address``). The outputs come back in task order,
    ``(failed, summary.json text or error)`` each, None for a run that did not finish (the first
    failed run stops the rest), with the indices of the tasks running when a worker died (or
    None); the same on either engine. ``on_result(index, output)`` is called in this process as
    each run comes back (the local engine only: Ray's results come back at the end)."""
    check_engine(backend, jobs)
    if backend == "ray":
        from .ray_backend import execute as execute_on_ray

        return execute_on_ray(tasks, address, progress)
    return _execute(tasks, jobs or default_jobs(), progress, on_result)


def _run_task(task: tuple) -> tuple[bool, str]:
    """Run one (cell, seed): ``(False, summary.json text)`` or ``(True, error message)``. A task
    is ``(scenario dict, base_dir, seed, logs, allow_large[, plots])``; with ``logs`` (a folder
    that does not exist yet) the whole run folder is written there, with plots unless
    ``plots`` is False (a comparison's ``--no-plots``)."""
    data, base_dir, seed, logs, allow_large, *rest = task
    plots = rest[0] if rest else True
    try:
        scenario = Scenario.from_dict(data, base_dir=base_dir)
        if logs:  # the run's folder, its logs streamed into it
            from .result import write_run

            Path(logs).mkdir(parents=True)
            result = scenario.run(seed=seed, allow_large=allow_large, logs_to=logs)
            write_run(result, Path(logs), plots=plots)
        else:  # only the summary is wanted
            result = scenario.run(seed=seed, allow_large=allow_large, keep_packets=False)
    except ScenarioError as e:  # the core's exception class does not survive pickling
        _discard(logs)
        return True, str(e).removeprefix("scenario: ")
    except (KeyboardInterrupt, SystemExit):
        _discard(logs)
        raise
    except BaseException as e:  # a disk error writing logs, a panic in the core: this run failed
        _discard(logs)
        return True, f"{type(e).__name__}: {e}"
    return False, result.summary_json


def _discard(logs: str | None) -> None:
    """Remove a failed run's half-written log folder (the sweep keeps only finished runs)."""
    if logs:
        shutil.rmtree(logs, ignore_errors=True)
        with contextlib.suppress(OSError):  # the cell's folder, if no other seed of it finished
            Path(logs).parent.rmdir()


def _quiet_worker(parent: int) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is handled by the parent, which stops the workers
    # Die with the parent, even when it is killed outright (kill -9): Linux's parent-death signal.
    if sys.platform.startswith("linux"):
        import ctypes

        pr_set_pdeathsig = 1
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL)
    if os.getppid() != parent:  # the parent died before the signal was armed
        os._exit(1)


def _execute(tasks: list[tuple], jobs: int, progress: Callable[[int, int], None] | None,
             on_result: Callable[[int, tuple], None] | None = None) -> tuple[list, list[int] | None]:
    """Run the tasks, in order when jobs == 1, else in a spawned process pool. Returns the outputs
    in task order (None for a task that did not finish: the sweep stops at the first failed run)
    and, if a worker process died, the indices of the tasks that were running then (else None)."""
    total, outputs = len(tasks), [None] * len(tasks)
    if progress:
        progress(0, total)
    if jobs == 1 or total <= 1:
        try:
            for i, task in enumerate(tasks):
                outputs[i] = _run_task(task)
                if on_result:
                    on_result(i, outputs[i])
                if progress:
                    progress(i + 1, total)
                if outputs[i][0]:
                    break
        except KeyboardInterrupt as e:
            e.outputs = outputs  # what finished before Ctrl-C, SIGTERM or SIGHUP, for the sweep to keep
            raise
        return outputs, None
    # "spawn": forking a process that holds polars' (or the core's) threads can deadlock.
    pool = ProcessPoolExecutor(max_workers=min(jobs, total), mp_context=multiprocessing.get_context("spawn"),
                               initializer=_quiet_worker, initargs=(os.getpid(),))
    died = None
    try:
        index = {pool.submit(_run_task, task): i for i, task in enumerate(tasks)}
        pending, done = set(index), 0
        while pending:
            running = sorted(index[f] for f in pending if f.running())
            finished, pending = _wait_awake(pending)
            broken = False
            for future in finished:  # record every result that came back, even beside a crash
                try:
                    outputs[index[future]] = future.result()
                except BrokenProcessPool:
                    broken = True
                    continue
                if on_result:
                    on_result(index[future], outputs[index[future]])
                done += 1
                if outputs[index[future]][0]:
                    pending = set()  # a failed run: stop (the others are cancelled below)
            if broken:
                # Every pending run fails with the pool; the dead worker ran one of these.
                died = ([i for i in running if outputs[i] is None]
                        or [index[f] for f in finished if outputs[index[f]] is None])
                pending = set()
            if progress:
                progress(done, total)
    except BaseException as e:
        _stop(pool)
        if isinstance(e, KeyboardInterrupt):
            e.outputs = outputs  # what finished before Ctrl-C, SIGTERM or SIGHUP, for the sweep to keep
        raise
    if died is not None or any(o is None or o[0] for o in outputs):
        _stop(pool)
    else:
        pool.shutdown()
    return outputs, died


def _wait_awake(pending: set) -> tuple[set, set]:
    """``wait(pending, return_when=FIRST_COMPLETED)``, waking every 0.2 s: a signal's Python
    handler runs only when this thread runs Python code, and a SIGINT caught while it sleeps in
    ``wait`` was measured to take effect only when the running run ended (8 s later in the
    interrupt test), where SIGTERM, by another path, came at once."""
    while True:
        finished, rest = wait(pending, timeout=0.2, return_when=FIRST_COMPLETED)
        if finished:
            return finished, rest


def _stop(pool: ProcessPoolExecutor) -> None:
    """Cancel queued runs and end the running ones now rather than waiting for them."""
    if hasattr(pool, "terminate_workers"):  # Python 3.14+
        pool.terminate_workers()
        return
    processes = list((getattr(pool, "_processes", None) or {}).values())  # before shutdown() forgets them
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        process.terminate()
    for process in processes:
        process.join(5)


# -- results -------------------------------------------------------------------------------------


def _flatten(d: dict, prefix: str = "") -> dict:
    out = {}
    for key, value in d.items():
        if isinstance(value, dict):
            out.update(_flatten(value, f"{prefix}{key}_"))
        elif not isinstance(value, list):
            out[f"{prefix}{key}"] = value
    return out


def _column(name: str, values: list) -> pl.Series:
    """A typed column: integers, floats, booleans or text (nulls allowed); the same input, the same type."""
    present = [v for v in values if v is not None]
    if present and all(isinstance(v, bool) for v in present):
        dtype = pl.Boolean
    elif all(isinstance(v, int) and not isinstance(v, bool) for v in present):
        dtype = pl.Int64 if present else pl.Float64
    elif all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in present):
        dtype, values = pl.Float64, [None if v is None else float(v) for v in values]
    else:
        dtype, values = pl.String, [None if v is None else str(v) for v in values]
    return pl.Series(name, values, dtype=dtype)


def _frame(rows: list[dict]) -> pl.DataFrame:
    names = list(dict.fromkeys(k for row in rows for k in row))
    return pl.DataFrame([_column(n, [row.get(n) for row in rows]) for n in names])


class SweepResult:
    """The outcome of a sweep: ``runs`` (one row per run and flow, the results.csv rows), ``cells``
    (mean and std over seeds per cell and flow), ``summaries`` ((label, seed) -> summary.json text)."""

    def __init__(self, sweep: Sweep, cells: list[tuple[str, dict, Scenario]], summaries: dict[tuple[str, int], str]):
        self.sweep = sweep
        self.labels = [label for label, _, _ in cells]
        self.params = {label: params for label, params, _ in cells}
        self.scenarios = {label: sc for label, _, sc in cells}
        self.summaries = summaries
        self.runs = self._runs_frame()
        self.cells = self._cells_frame()

    def _param_columns(self) -> dict[str, dict[str, Any]]:
        """Cell parameters as table columns: the values themselves when they are plain numbers,
        strings or booleans of one type, else their label text."""
        columns = {}
        for key, values in self.sweep.grid.items():
            kinds = {type(v) for v in values}
            plain = len(kinds) == 1 and kinds <= {str, int, float, bool} or kinds == {int, float}
            texts = dict(zip(map(json.dumps, values), values if plain else _value_texts(values)))
            columns[key] = {label: texts[json.dumps(self.params[label][key])] for label in self.labels}
        if self.sweep.variants:
            columns["variant"] = {label: self.params[label]["variant"] for label in self.labels}
        return columns

    def _runs_frame(self) -> pl.DataFrame:
        params = self._param_columns()
        rows = []
        for label in self.labels:
            for seed in self.sweep.seeds:
                if (label, seed) not in self.summaries:
                    continue  # a sweep that stopped early
                summary = json.loads(self.summaries[(label, seed)])
                total = {f"total_{k}": v for k, v in _flatten(summary.get("total", {})).items()}
                for flow in summary.get("flows", []):
                    row = {"cell": label, **{k: col[label] for k, col in params.items()}, "seed": seed,
                           "flow": flow.get("name"), "controller": flow.get("controller")}
                    row.update({k: v for k, v in _flatten(flow).items() if k not in ("name", "controller")})
                    row.update(total)
                    rows.append(row)
        return _frame(rows)

    def _cells_frame(self) -> pl.DataFrame:
        runs = self.runs
        keys = ["cell", *self._param_columns(), "flow", "controller"]
        metrics = [c for c, t in runs.schema.items() if c not in keys and c != "seed" and t.is_numeric()]
        aggs = [pl.len().alias("runs")]
        for m in metrics:
            aggs += [pl.col(m).mean().alias(f"{m}_mean"), pl.col(m).std().alias(f"{m}_std")]
        return runs.group_by(["cell", "flow"], maintain_order=True).agg(
            [pl.col(k).first() for k in keys if k not in ("cell", "flow")] + aggs).select(
            keys + [a.meta.output_name() for a in aggs])

    def __repr__(self) -> str:
        return f"<rtcc.SweepResult {self.sweep.name!r} cells={len(self.labels)} seeds={self.sweep.seeds}>"

    def _table(self) -> tuple[list[str], list[list[str]]]:
        """The per-cell table: headers and one row per cell and flow (mean ± std over seeds)."""
        from .report import COLUMNS

        sw = self.sweep
        headers = ["cell", "flow", "controller"] + [c.header for c in COLUMNS]
        rows = []
        for label in self.labels:
            summaries = [json.loads(self.summaries[(label, seed)]) for seed in sw.seeds if (label, seed) in self.summaries]
            if not summaries:
                continue  # a sweep that stopped before this cell ran
            for i, flow in enumerate(summaries[0].get("flows", [])):
                cells = [label, str(flow.get("name", "")), str(flow.get("controller", ""))]
                for c in COLUMNS:
                    values = [c.get(s["flows"][i], s.get("total", {})) for s in summaries]
                    cells.append(_mean_std([v for v in values if v is not None], c.digits))
                rows.append(cells)
        return headers, rows

    def _intro(self) -> list[str]:
        sw = self.sweep
        return ([sw.description] if sw.description else []) + [
            f"{len(self.labels)} cells × {len(sw.seeds)} seeds (seeds {', '.join(map(str, sw.seeds))}); "
            "mean ± standard deviation over seeds."]

    def markdown(self) -> str:
        """summary.md: one row per cell and flow, the main metrics as mean ± std over seeds."""
        headers, rows = self._table()
        out = [f"# Sweep: {self.sweep.name}", ""]
        for line in self._intro():
            out += [line, ""]
        out += ["| " + " | ".join(headers) + " |", "|:---|:---|:---|" + "---:|" * (len(headers) - 3)]
        out += ["| " + " | ".join(x.replace("|", "\\|") for x in cells) + " |" for cells in rows]
        return "\n".join(out) + "\n"

    def points(self) -> dict[str, list[tuple[float, float]]]:
        """Each cell's runs on the throughput–delay plane (``rtcc.plots.run_point``: worst flow's
        P95 one-way delay in ms, all flows' Mbit/s), one per seed that ran."""
        from .report import run_point

        out = {}
        for label in self.labels:
            found = [run_point(json.loads(self.summaries[(label, seed)])) for seed in self.sweep.seeds
                     if (label, seed) in self.summaries]
            out[label] = [p for p in found if p is not None]
        return out

    def write(self, folder: str | os.PathLike) -> None:
        """Write the sweep files into an existing (temporary) folder; run folders already there are kept."""
        folder = Path(folder)
        self.runs.write_csv(folder / "results.csv")
        self.runs.write_parquet(folder / "results.parquet")
        self.cells.write_csv(folder / "cells.csv")
        with open(folder / "sweep.json", "w", encoding="utf-8") as f:
            f.write(json.dumps(self.sweep.to_dict(), indent=2, default=str) + "\n")
        (folder / "summary.md").write_text(self.markdown(), encoding="utf-8")
        from .report import Table, write_page

        images = []
        points = self.points()
        if any(points.values()):
            from .plots import throughput_delay_plot

            (folder / "plots").mkdir(exist_ok=True)
            throughput_delay_plot(points, folder / "plots" / "throughput_delay.png", self.sweep.name)
            images.append("plots/throughput_delay.png")
        headers, rows = self._table()
        write_page(folder / "index.html", "sweep.html", f"rtcc sweep: {self.sweep.name}", intro=self._intro(),
                   images=images, table=Table(headers, rows, 3))
        for (label, seed), text in self.summaries.items():
            _write_run_files(folder / "runs" / label / f"seed{seed}", text, self.scenarios[label], seed)

    def save(self, out_dir: str | os.PathLike, force: bool = False) -> Path:
        """Write the sweep folder ``out_dir`` atomically; an existing non-empty one needs ``force``."""
        with atomic_dir(out_dir, force=force) as tmp:
            self.write(tmp)
        return Path(out_dir)


def _mean_std(values: list[float], digits: int) -> str:
    if not values:
        return "–"
    text = f"{statistics.fmean(values):.{digits}f}"
    return f"{text} ± {statistics.stdev(values):.{digits}f}" if len(values) > 1 else text


INCOMPLETE = "INCOMPLETE.txt"


def _write_run_files(run: Path, summary: str, scenario: Scenario, seed: int) -> None:
    """A finished run's ``summary.json`` and ``scenario.json`` (the scenario it ran, with its seed),
    unless the run's folder already has them (a kept run folder)."""
    if (run / "summary.json").exists():
        return
    run.mkdir(parents=True, exist_ok=True)
    (run / "scenario.json").write_text(
        json.dumps(scenario.to_dict() | {"seed": seed}, sort_keys=True, indent=2, default=str) + "\n", encoding="utf-8")
    with open(run / "summary.json", "w", encoding="utf-8", newline="") as f:  # last: a run is complete with it
        f.write(summary)


def _killed_folders(out_dir: str | os.PathLike) -> list[Path]:
    """The temporary folders of sweeps into ``out_dir`` whose process is gone (killed outright)."""
    dest = Path(out_dir)
    parent = dest.absolute().parent
    pattern = re.compile(rf"^\.{re.escape(dest.name)}\.tmp-(\d+)-")
    if not parent.is_dir():
        return []
    return sorted(p for p in parent.iterdir()
                  if p.is_dir() and (m := pattern.match(p.name)) and not _alive(int(m.group(1))))


def has_killed_runs(out_dir: str | os.PathLike) -> bool:
    """Whether a sweep into ``out_dir`` was killed outright and left finished runs behind."""
    return any((p / "runs").is_dir() for p in _killed_folders(out_dir))


def _same_run(run: Path, scenario: Scenario, seed: int) -> str | None:
    """The summary.json text of ``run`` if it ran exactly ``scenario`` with ``seed``."""
    try:
        ran = json.loads((run / "scenario.json").read_text(encoding="utf-8"))
        summary = (run / "summary.json").read_text(encoding="utf-8")
    except (OSError, ValueError):
        return None
    return summary if _canonical(ran) == _canonical(json.loads(_canonical(scenario.to_dict() | {"seed": seed}))) else None


def rescue_killed_runs(sweep: Sweep, out_dir: str | os.PathLike, holding: Path) -> dict[tuple[str, int], Path]:
    """Move the runs that finished inside the temporary folders of killed sweeps into ``out_dir``
    (each written as it finished) to ``holding/runs``, before those folders are removed; the moved
    run folders by (label, seed). Only runs of exactly this sweep's scenarios are taken."""
    rescued = {}
    for folder in _killed_folders(out_dir):
        for label, _, scenario in sweep.cells():
            for seed in sweep.seeds:
                run = folder / "runs" / label / f"seed{seed}"
                if (label, seed) in rescued or _same_run(run, scenario, seed) is None:
                    continue
                target = holding / "runs" / label / f"seed{seed}"
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.move(str(run), target)
                rescued[(label, seed)] = target
    return rescued


def _canonical(data: dict) -> str:
    return json.dumps(data, sort_keys=True, default=str)


def finished_runs(sweep: Sweep, out_dir: str | os.PathLike) -> dict[tuple[str, int], str]:
    """The summaries of the runs an earlier, stopped run of the same sweep left in ``out_dir``
    (empty if none). A folder from a different sweep (other cells or seeds) is refused, and a run
    is reused only if the scenario it ran is exactly the one the sweep would run now."""
    folder = Path(out_dir)
    if not (folder / INCOMPLETE).is_file():
        return {}
    try:
        stored = json.loads((folder / "sweep.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        stored = {}
    now = sweep.to_dict()
    if [c.get("label") for c in stored.get("cells", [])] != [c["label"] for c in now["cells"]] or \
            stored.get("seeds") != now["seeds"]:
        raise ScenarioError(f"{out_dir}: --resume: the folder holds a different sweep (other cells or seeds); "
                            "rerun without --resume (with --force to replace it)")
    found = {}
    for label, _, scenario in sweep.cells():
        for seed in sweep.seeds:
            summary = _same_run(folder / "runs" / label / f"seed{seed}", scenario, seed)
            if summary is not None:
                found[(label, seed)] = summary
    return found


def run_sweep(sweep: Sweep, out_dir: str | os.PathLike, jobs: int | None = None, force: bool = False,
              keep_logs: bool = False, progress: bool = False, allow_large: bool = False,
              resume: bool = False, backend: str = "local", address: str | None = None) -> SweepResult:
    """Run ``sweep`` and write its folder ``out_dir`` atomically (with full run folders if ``keep_logs``).

    If a run fails or a worker dies, the runs that finished are still written to ``out_dir``, with
    an INCOMPLETE.txt that says what stopped the sweep, and the error is raised. ``resume`` reruns
    into such a folder, running only what is missing.
    """
    done = finished_runs(sweep, out_dir) if resume else {}
    stopped = interrupted = None
    # A sweep killed outright (kill -9) left the runs it finished in its temporary folder, each
    # written as it finished: resuming takes them (moved aside first: entering atomic_dir removes
    # that folder). The holding folder is named as this process's temporary sibling, so a resume
    # killed in turn leaves it for the next resume.
    holding = Path(out_dir).absolute().parent / f".{Path(out_dir).name}.tmp-{os.getpid()}-rescued"
    rescued = rescue_killed_runs(sweep, out_dir, holding) if resume else {}
    rescued = {key: run for key, run in rescued.items() if key not in done}
    # Resuming replaces the stopped sweep's folder (what it had that is still valid is carried over).
    try:
        with atomic_dir(out_dir, force=force or resume) as tmp:
            for label, seed in done:  # the reused runs keep their folders (logs, plots)
                shutil.copytree(Path(out_dir) / "runs" / label / f"seed{seed}", tmp / "runs" / label / f"seed{seed}")
            for (label, seed), run in rescued.items():
                shutil.copytree(run, tmp / "runs" / label / f"seed{seed}")
                done[(label, seed)] = (run / "summary.json").read_text(encoding="utf-8")
            try:
                result = sweep.run(jobs=jobs, progress=progress, logs_dir=tmp / "runs" if keep_logs else None,
                                   allow_large=allow_large, done=done, backend=backend, address=address,
                                   journal=tmp / "runs")
            except SweepIncomplete as e:
                stopped, result = e, e.partial
            except KeyboardInterrupt as e:
                if getattr(e, "partial", None) is None:
                    raise  # nothing finished: nothing to keep
                # Ctrl-C, SIGTERM or SIGHUP: keep what finished, then end as interrupted.
                interrupted, stopped, result = e, "interrupted", e.partial
                stopped_total = e.total
            if stopped:
                total = stopped_total if interrupted else stopped.total
                result.write(tmp)
                (tmp / INCOMPLETE).write_text(
                    f"{stopped}\n{len(result.summaries)} of {total} runs finished; "
                    f"`rtcc sweep {sweep.source or 'FILE'} -o {out_dir} --resume` runs the rest.\n", encoding="utf-8")
            else:
                result.write(tmp)
    finally:
        shutil.rmtree(holding, ignore_errors=True)
    if interrupted:
        print(f"rtcc: the {len(result.summaries)} of {stopped_total} runs that finished are in {out_dir} "
              "(INCOMPLETE.txt); --resume runs the rest", file=sys.stderr)
        raise interrupted
    if stopped:
        raise ScenarioError(f"{stopped}; the {len(result.summaries)} of {stopped.total} runs that finished are in "
                            f"{out_dir} (INCOMPLETE.txt); --resume runs the rest") from None
    return result
