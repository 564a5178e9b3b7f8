"""``rtcc reproduce PAPER``: rerun a seed paper's key experiments, redraw its key figures and check
its headline numbers, in one report folder.

Each paper is a module of this package named after it (``gcc-aqm`` is ``gcc_aqm.py``); adding a
paper is adding a module, nothing here changes. A paper module defines:

- ``TITLE``: the paper as cited; ``SHORT``: a short name for headings; ``DOCS``: its docs page
  (where its numbers are discussed);
- ``plan(quick: bool) -> list[str]``: what its full or quick set runs, one line per experiment;
- ``reproduce(ctx: Context) -> None``: runs the experiments and adds to the report through
  ``ctx``: figures (``ctx.save_figure``), checks (``ctx.check``), notes and data files.

:func:`run` writes the report folder atomically: ``index.html`` (the checks table, the figures,
what ran), ``checks.csv`` and ``checks.json`` (the same rows), ``figures/*.png`` and ``data/``
(what the paper module keeps: sweep tables, summaries). Every number in a check is computed from
the runs; the paper's value, the tolerance and where the tolerance comes from are the module's.

This module imports only the standard library at the top, so that ``rtcc --help`` can list the
papers without loading polars, NumPy or matplotlib.
"""

from __future__ import annotations

import csv
import importlib
import io
import json
import math
import os
import pkgutil
import shutil
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, TextIO

from ..atomic import atomic_dir, check_dest

__all__ = ["Check", "Context", "PASS", "FAIL", "NOT_COMPARABLE", "NOT_RUN", "papers", "load", "run", "fmt"]

PASS, FAIL, NOT_COMPARABLE, NOT_RUN = "pass", "fail", "not comparable", "not run"
VERDICTS = (PASS, FAIL, NOT_COMPARABLE, NOT_RUN)
CSV_COLUMNS = ["id", "headline", "paper_value", "our_value", "tolerance", "verdict", "reason", "source", "value"]


def papers() -> list[str]:
    """The papers there is a module for, by name (``gcc_aqm.py`` is ``gcc-aqm``), sorted."""
    return sorted(m.name.replace("_", "-") for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))


def load(name: str):
    """The module of paper ``name``; KeyError (naming the valid papers) if there is none."""
    if name not in papers():
        raise KeyError(f"unknown paper {name!r}; the papers: {', '.join(papers())}")
    return importlib.import_module(f"{__name__}.{name.replace('-', '_')}")


_SCRIPTS: dict[str, Any] = {}


def experiment_script(folder: str):
    """``experiments/<folder>/tables.py`` (a paper's runs, metrics and tables, also run as a
    script), loaded as a module once per process."""
    if folder not in _SCRIPTS:
        import importlib.util

        from ..demo import experiments_dir

        path = experiments_dir() / folder / "tables.py"
        spec = importlib.util.spec_from_file_location(f"rtcc_{folder}_tables", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        _SCRIPTS[folder] = module
    return _SCRIPTS[folder]


def fmt(value: Any, digits: int = 2, unit: str = "") -> str:
    """A number as table text (``–`` for none or NaN, ``inf``), with an optional unit."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if isinstance(value, float) and math.isinf(value):
        return "inf"
    text = f"{value:.{digits}f}"
    if text.startswith("-") and float(text) == 0:
        text = text[1:]
    return f"{text} {unit}".rstrip() if unit else text


@dataclass
class Check:
    """One row of a paper's table: a headline number, the paper's value, ours, the tolerance our
    value is held to (and where it comes from), and the verdict."""

    id: str
    headline: str
    paper_value: str
    our_value: str
    tolerance: str
    verdict: str
    source: str
    reason: str = ""  # why a check is not comparable or was not run; what is known of a failure
    value: float | None = None  # the main number behind our_value, for scripts

    def row(self) -> dict:
        row = asdict(self)
        if isinstance(self.value, float) and not math.isfinite(self.value):
            row["value"] = None
        return row


@dataclass
class Context:
    """What a paper module gets: the options, the folder being written, and the report it fills."""

    paper: str
    folder: Path  # the report folder being written (a temporary folder, renamed at the end)
    quick: bool = False
    jobs: int | None = None  # worker processes for sweeps (None: every CPU)
    traces: Path | None = None  # where external traces are (papers that use them), or None: their default
    stream: TextIO | None = None
    checks: list[Check] = field(default_factory=list)
    figures: list[tuple[str, str]] = field(default_factory=list)  # (path relative to folder, caption)
    notes: list[str] = field(default_factory=list)
    data: list[tuple[str, str]] = field(default_factory=list)  # (path relative to folder, what it is)
    # What finished is written here as it finishes (sweep runs, map items), for --resume.
    cache: Path | None = None
    # The cache of an earlier interrupted or killed reproduction of the same paper (--resume).
    reuse: Path | None = None

    # -- progress -------------------------------------------------------------------------------

    def log(self, message: str) -> None:
        """A progress line on stderr: ``rtcc reproduce sqp: <message>``."""
        print(f"rtcc reproduce {self.paper}: {message}", file=self.stream or sys.stderr, flush=True)

    # -- the report -----------------------------------------------------------------------------

    def check(self, id: str, headline: str, paper: str, ours: str, tolerance: str, source: str,
              ok: bool | None, reason: str = "", value: float | None = None) -> Check:
        """Add a check: ``ok`` True passes, False fails, None is "not comparable" (``reason`` says why)."""
        if ok is None:
            verdict = NOT_COMPARABLE
            if not reason:
                raise ValueError(f"check {id}: a check that is not comparable needs a reason")
        else:
            verdict = PASS if ok else FAIL
        c = Check(id, headline, paper, ours, tolerance, verdict, source, reason, _number(value))
        self.checks.append(c)
        return c

    def not_run(self, id: str, headline: str, paper: str, tolerance: str, source: str, reason: str) -> Check:
        """Add a check whose experiment did not run (``reason`` says why, e.g. the quick set leaves it out)."""
        c = Check(id, headline, paper, "–", tolerance, NOT_RUN, source, reason)
        self.checks.append(c)
        return c

    def note(self, text: str) -> None:
        """A sentence shown above the table (e.g. what could not run, and why)."""
        self.notes.append(text)

    def path(self, relative: str) -> Path:
        """A path inside the report folder (its parent folders created)."""
        p = self.folder / relative
        p.parent.mkdir(parents=True, exist_ok=True)
        return p

    def keep(self, relative: str, what: str) -> None:
        """List a data file or folder written into the report folder, for the page's links."""
        self.data.append((relative, what))

    def save_figure(self, fig, name: str, caption: str) -> Path:
        """Save a matplotlib Figure as ``figures/<name>.png`` and list it with its caption."""
        from ..plots import DPI

        path = self.path(f"figures/{name}.png")
        fig.savefig(path, dpi=DPI)
        self.figures.append((f"figures/{name}.png", caption))
        return path

    # -- running --------------------------------------------------------------------------------

    def run_sweep(self, sweep, name: str, what: str):
        """Run a Sweep on ``jobs`` workers, keep its tables in ``data/<name>`` (as ``rtcc sweep``
        writes them, without run logs) and return its SweepResult."""
        from ..sweep import _same_run

        cells = sweep.cell_count() * len(sweep.seeds)
        self.log(f"{what}: {sweep.cell_count()} cells x {len(sweep.seeds)} seeds = {cells} runs")
        journal = self.cache / "sweeps" / name if self.cache else None
        done = {}
        if self.reuse is not None and journal is not None:
            for label, _, scenario in sweep.cells():
                for seed in sweep.seeds:
                    run = self.reuse / "sweeps" / name / label / f"seed{seed}"
                    summary = _same_run(run, scenario, seed)
                    if summary is not None:
                        done[(label, seed)] = summary
                        shutil.copytree(run, journal / label / f"seed{seed}")
            if done:
                self.log(f"{what}: {len(done)} runs kept from the interrupted reproduction")
        result = sweep.run(jobs=self.jobs, progress=True, done=done, journal=journal)
        folder = self.path(f"data/{name}/index.html").parent
        result.write(folder)
        self.keep(f"data/{name}/index.html", f"{what}: the sweep's tables (results.csv: one row per run and flow)")
        return result

    def map(self, fn: Callable, items: Iterable) -> list:
        """``[fn(x) for x in items]`` in ``jobs`` spawned worker processes (in this process with
        one job). ``fn`` must be a module-level function of an importable module.

        Each result that JSON carries exactly (``json.loads(json.dumps(r)) == r``) is written to the
        cache as it comes back, under a hash of ``fn``'s name and the item, and an interrupted
        reproduction's ``--resume`` takes it from there instead of running it again."""
        from ..sweep import parallel_map

        items = list(items)
        keys = [_item_key(fn, x) for x in items]
        results: dict[int, object] = {}
        if self.reuse is not None:
            for i, key in enumerate(keys):
                cached = self.reuse / "map" / f"{key}.json"
                if cached.is_file():
                    results[i] = json.loads(cached.read_text(encoding="utf-8"))
                    self._store(key, results[i])
            if results:
                self.log(f"{len(results)} of {len(items)} {fn.__name__} results kept from the interrupted reproduction")
        todo = [i for i in range(len(items)) if i not in results]
        parallel_map(fn, [items[i] for i in todo], self.jobs,
                     on_result=lambda k, r: results.__setitem__(todo[k], r) or self._store(keys[todo[k]], r))
        return [results[i] for i in range(len(items))]

    def _store(self, key: str, result) -> None:
        """Keep a map result in the cache, if JSON carries it exactly."""
        if self.cache is None:
            return
        try:
            text = json.dumps(result, sort_keys=True, allow_nan=True)
        except (TypeError, ValueError):
            return
        if json.loads(text) != result:
            return  # tuples, non-string keys: not kept (a resumed report must be the same report)
        path = self.cache / "map" / f"{key}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        part = path.with_suffix(".part")
        part.write_text(text, encoding="utf-8")
        part.replace(path)


def _item_key(fn: Callable, item) -> str:
    """A map item's name in the cache: a hash of the function's name and the item."""
    import hashlib

    text = json.dumps([fn.__module__, fn.__qualname__, item], sort_keys=True, default=repr)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _number(value) -> float | None:
    if value is None or isinstance(value, bool):
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


# -- the report folder ---------------------------------------------------------------------------


def write_checks(folder: Path, ctx: Context, meta: dict) -> None:
    """``checks.csv`` and ``checks.json``: the same rows, one per check."""
    rows = [c.row() for c in ctx.checks]
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(CSV_COLUMNS)
    for r in rows:
        w.writerow(["" if r[k] is None else (repr(r[k]) if k == "value" else r[k]) for k in CSV_COLUMNS])
    (folder / "checks.csv").write_text(buf.getvalue(), encoding="utf-8")
    (folder / "checks.json").write_text(json.dumps({**meta, "checks": rows}, indent=2, ensure_ascii=False) + "\n",
                                        encoding="utf-8")


def counts(checks: list[Check]) -> dict[str, int]:
    return {v: sum(c.verdict == v for c in checks) for v in VERDICTS}


def write_index(folder: Path, ctx: Context, module, meta: dict) -> None:
    """``index.html`` (``templates/reproduce.html``): what ran, the checks against the paper (each
    verdict cell coloured), the redrawn figures and the data."""
    from ..report import write_page

    n = counts(ctx.checks)
    write_page(folder / "index.html", "reproduce.html", f"rtcc reproduce {ctx.paper}: {module.SHORT}",
               paper_title=module.TITLE, docs=module.DOCS, version=meta["rtcc_version"],
               which="quick set" if ctx.quick else "full set", elapsed_s=meta["elapsed_s"], jobs=meta["jobs"],
               counts=[f"{n[v]} {v}" for v in VERDICTS if n[v]], plan=module.plan(ctx.quick), notes=ctx.notes,
               checks=ctx.checks, figures=list(ctx.figures), data=list(ctx.data))


def text_summary(checks: list[Check]) -> str:
    """The checks for the terminal: one line each, then the counts."""
    width = max((len(c.id) for c in checks), default=2)
    vwidth = max((len(c.verdict) for c in checks), default=4)
    lines = [f"{c.id:<{width}}  {c.verdict:<{vwidth}}  {c.headline}: {c.our_value} (paper {c.paper_value}; "
             f"tolerance {c.tolerance})" + (f" [{c.reason}]" if c.reason and c.verdict != PASS else "")
             for c in checks]
    n = counts(checks)
    lines.append(", ".join(f"{n[v]} {v}" for v in VERDICTS if n[v]) or "no checks")
    return "\n".join(lines) + "\n"


def _left_behind(out_dir: str | os.PathLike) -> list[Path]:
    """The caches that interrupted or killed reproductions into ``out_dir`` left (their temporary
    folders, whose process is gone)."""
    from ..sweep import _killed_folders

    return [p / "cache" for p in _killed_folders(out_dir) if (p / "cache" / "PAPER").is_file()]


def _resumable(paper: str, out_dir: str | os.PathLike, quick: bool) -> list[Path]:
    """The caches of interrupted or killed reproductions of ``paper`` (the same set) into ``out_dir``."""
    want = (paper, "quick" if quick else "full")
    return [c for c in _left_behind(out_dir)
            if ((c / "PAPER").read_text(encoding="utf-8").strip(),
                (c / "SET").read_text(encoding="utf-8").strip() if (c / "SET").is_file() else "") == want]


def can_resume(paper: str, out_dir: str | os.PathLike, quick: bool = False) -> bool:
    """Whether an interrupted or killed reproduction of ``paper`` into ``out_dir`` left runs to reuse."""
    return bool(_resumable(paper, out_dir, quick))


def run(paper: str, out_dir: str | os.PathLike, quick: bool = False, force: bool = False, jobs: int | None = None,
        traces: str | os.PathLike | None = None, out: TextIO | None = None, resume: bool = False) -> list[Check]:
    """Reproduce ``paper`` into the report folder ``out_dir`` (written atomically; an existing
    non-empty one needs ``force``); print the checks to ``out`` and return them.

    Each run of a sweep and each result of ``Context.map`` is kept as it finishes; Ctrl-C, SIGTERM
    or SIGHUP leaves them beside ``out_dir`` (as does kill -9, in the temporary folder), and
    ``resume`` reuses the ones that ran exactly the same scenarios instead of running them again.
    Without ``resume`` the next reproduction into ``out_dir`` removes them."""
    from .. import __version__

    module = load(paper)
    if not resume:
        check_dest(out_dir, force)  # before the runs
    if jobs is not None and jobs < 1:
        raise ValueError(f"jobs: expected a positive integer, got {jobs}")
    out = sys.stdout if out is None else out
    start = time.monotonic()
    # An earlier reproduction's cache, moved aside before atomic_dir removes the folder it is in;
    # named as this process's temporary sibling, so that if this one is killed too, the next
    # --resume finds it.
    reuse = None
    if resume:
        caches = _resumable(paper, out_dir, quick)
        if caches:
            reuse = Path(out_dir).absolute().parent / f".{Path(out_dir).name}.tmp-{os.getpid()}-resumed"
            shutil.move(str(caches[-1]), reuse)
    try:
        with atomic_dir(out_dir, force=force or resume) as tmp:
            ctx = Context(paper, tmp, quick=quick, jobs=jobs, traces=Path(traces) if traces is not None else None,
                          cache=tmp / "cache", reuse=reuse)
            ctx.cache.mkdir()
            (ctx.cache / "PAPER").write_text(paper + "\n", encoding="utf-8")
            (ctx.cache / "SET").write_text(("quick" if quick else "full") + "\n", encoding="utf-8")
            try:
                module.reproduce(ctx)
            except KeyboardInterrupt:
                # Keep what finished, beside the output, for --resume (the temporary folder goes).
                kept = Path(out_dir).absolute().parent / f".{Path(out_dir).name}.tmp-{os.getpid()}-interrupted"
                (kept / "cache").parent.mkdir(parents=True, exist_ok=True)
                shutil.move(str(ctx.cache), kept / "cache")
                print(f"rtcc reproduce {paper}: the runs that finished are kept for "
                      f"`rtcc reproduce {paper} -o {out_dir} --resume`", file=sys.stderr)
                raise
            shutil.rmtree(ctx.cache)
            from ..sweep import default_jobs

            used = jobs or default_jobs()
            meta = {"paper": paper, "title": module.TITLE, "docs": module.DOCS, "set": "quick" if quick else "full",
                    "rtcc_version": __version__, "elapsed_s": round(time.monotonic() - start, 1), "jobs": used,
                    "plan": module.plan(quick), "notes": ctx.notes}
            write_checks(tmp, ctx, meta)
            write_index(tmp, ctx, module, meta)
    finally:
        if reuse is not None:
            shutil.rmtree(reuse, ignore_errors=True)
    print(f"\n{module.SHORT} ({'quick' if quick else 'full'} set, {meta['elapsed_s']:.0f} s)\n", file=out)
    print(text_summary(ctx.checks), end="", file=out)
    for note in ctx.notes:
        print(f"note: {note}", file=out)
    out.flush()
    return ctx.checks
