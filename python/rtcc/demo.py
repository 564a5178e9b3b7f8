"""``rtcc demo``: every registered controller on the bundled step link and LTE-like trace.

For each bundled scenario (``experiments/demo/step.toml`` and ``experiments/demo/lte.toml``)
the ``oracle`` controller runs first; the ``fixed`` baseline then gets half of the mean link
capacity it measured. Every registered controller runs with its default parameters (a
controller whose parameters other than ``rate`` are required is skipped, and the report says
so). The report folder holds one comparison folder per scenario and an ``index.html`` that
shows both tables and their plots.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TextIO

from ._core import ScenarioError
from .atomic import atomic_dir
from .compare import format_rate, run_all, write_comparison
from .examples import experiments_dir
from .registry import ControllerSpec, controllers, default_specs
from .report import html_table, text_table, write_page
from .scenario import Scenario

__all__ = ["DEMOS", "experiments_dir", "run_demo"]

# (folder in the report, scenario file in experiments/demo, heading)
DEMOS = [
    ("step", "step.toml", "Step change in link capacity"),
    ("lte", "lte.toml", "LTE-like capacity trace"),
]
FALLBACK_FIXED_RATE = "2Mbps"  # only used if no oracle controller is registered


def _scenarios() -> list[tuple[str, str, Scenario]]:
    folder = experiments_dir() / "demo"
    out = []
    for key, file, heading in DEMOS:
        path = folder / file
        if not path.is_file():
            raise ScenarioError(
                f"demo scenario {path} not found: the rtcc package was installed without its data "
                "(rtcc/data/experiments/demo/)"
            )
        out.append((key, heading, Scenario.from_file(path)))
    return out


def _run_section(scenario: Scenario, progress: bool, folder: Path, engine: dict):
    registry = controllers()
    done, notes, capacity = {}, [], None
    if any(c["name"] == "oracle" for c in registry):
        done = run_all(scenario, [ControllerSpec.make("oracle")], progress=progress, folder=folder, **engine)
        capacity = done["oracle"].summary.get("total", {}).get("capacity_bps")
    fixed_rate = format_rate(0.5 * capacity) if isinstance(capacity, (int, float)) and capacity > 0 else FALLBACK_FIXED_RATE
    specs, skipped = default_specs(fixed_rate, registry)
    if any(s.params.get("rate") == fixed_rate for s in specs):
        basis = f"half the mean link capacity ({capacity / 1e6:.2f} Mbit/s)" if capacity else "default, no oracle registered"
        notes.append(f"fixed rate {fixed_rate}: {basis}.")
    if skipped:
        notes.append(f"Not run (parameters without defaults): {', '.join(skipped)}.")
    return run_all(scenario, specs, progress=progress, done=done, folder=folder, **engine), notes


# `rtcc demo --encoder vp8|x264`: every video flow encodes this clip for real (rtcc.video); 360p
# keeps the 32 runs of the demo to minutes on two cores.
REAL_ENCODER = {"clip": "carphone", "resolution": "640x360"}


def _stills(folder: Path, runs: dict[str, str]) -> tuple[str, list[str]] | None:
    """The decoded stills of one run of a section (gcc's when it ran): (label, paths)."""
    for label in sorted(runs, key=lambda lbl: (lbl != "gcc", lbl)):
        found = sorted((folder / runs[label] / "quality-stills").glob("*.png"))
        if found:
            return label, [p.relative_to(folder).as_posix() for p in found]
    return None


def run_demo(out_dir: str | os.PathLike, force: bool = False, progress: bool = False,
             out: TextIO | None = None, jobs: int | None = None, backend: str = "local",
             address: str | None = None, encoder: str | None = None) -> dict[str, list[dict]]:
    """Write the demo report to ``out_dir`` atomically, print each table to ``out``; return the rows.
    The runs go to ``jobs`` worker processes (default one per CPU) or to Ray (``backend``,
    ``address``), as a sweep's do. ``encoder`` (``"vp8"``, ``"x264"``) runs every video flow with
    that real encoder; each run's page then shows decoded stills and the quality it measured."""
    engine = {"jobs": jobs, "backend": backend, "address": address}
    out = sys.stdout if out is None else out
    scenarios = _scenarios()
    if encoder is not None:
        scenarios = [(k, f"{h}, real {encoder} encoder", sc.with_encoder({"model": encoder, **REAL_ENCODER}))
                     for k, h, sc in scenarios]
    tables: dict[str, list[dict]] = {}
    with atomic_dir(out_dir, force=force) as tmp:
        sections = []
        for key, heading, scenario in scenarios:
            results, notes = _run_section(scenario, progress, tmp / key, engine)
            title = f"{heading} ({scenario.name})"
            written = write_comparison(tmp / key, results, title, notes)
            rows = tables[key] = written.rows
            print(f"\n{title}\n\n{text_table(rows)}" + "".join(f"{n}\n" for n in notes), file=out, flush=True)
            stills = _stills(tmp / key, written.runs)
            sections.append({
                "key": key, "heading": heading, "summary": next(iter(results.values())).summary,
                "table": html_table(rows), "links": {label: f"{key}/{d}/index.html" for label, d in written.runs.items()},
                "notes": notes, "images": [f"{key}/{p}" for p in written.images],
                "stills_of": stills[0] if stills else "", "stills": [f"{key}/{p}" for p in stills[1]] if stills else []})
        write_page(tmp / "index.html", "demo.html", "rtcc demo", sections=sections)
    return tables
