#!/usr/bin/env python3
"""Result identity: the summary.json of a fixed set of runs, byte for byte against a baseline.

A change that is not meant to change results (a refactor, a faster simulator) must leave every
run's summary.json byte-identical. This script reruns the cases of ``cases.toml`` (next to it)
and compares each summary.json with ``baseline/<case>.json``::

    python bench/identity/check.py              # rerun every case, compare; exit 1 on a mismatch
    python bench/identity/check.py -j 2         # two runs at a time
    python bench/identity/check.py -k rmcat     # only cases whose name contains "rmcat" (or a glob)
    python bench/identity/check.py --list       # the cases, and which would be skipped here
    python bench/identity/check.py --strict     # a skipped case fails too
    python bench/identity/check.py --record     # rerun and store the baseline (see below)
    python bench/identity/check.py --ignore-new displayed_share   # a new metric aside, unchanged?

It runs the checkout it lives in: ``python -m rtcc`` with ``PYTHONPATH=<checkout>/python``, from
the checkout's root, so the checkout's native module must be built (``make install`` there);
the first line printed says which rtcc was imported. Outputs go to a temporary folder (``--keep``
keeps the new summaries and prints where they are). ``-j N`` runs N cases at a time in a pool of
worker processes; a worker runs its API cases one after the other in one process, as
``rtcc sweep`` runs its cells.

Cases (``cases.toml`` says how each is chosen):

- ``run = "sim"``: ``rtcc run SCENARIO -o DIR --no-plots --seed SEED`` (``--controller`` if the
  case gives one), always with an explicit seed. A case with overrides (``set``, dotted paths as
  in a sweep) or a sweep cell runs through the Python API instead, as a sweep runs a cell
  (``Scenario.run(seed=SEED, keep_packets=False)``, the summary text the core returns). The
  ``[[sweep]]`` tables expand to one case per cell and seed, named ``<prefix>.<cell>.seed<k>``.
  A sim case passes when its summary.json is the baseline's, byte for byte. On a mismatch the
  first differing JSON paths are printed with the old and new values.
- ``run = "live"``: ``rtcc live SCENARIO -o DIR --no-plots`` (the scenario's own seed), through
  ``rtcc emu`` in real time. A live run is not reproducible (real clocks, real sockets), so only
  what the scenario decides is compared: ``scenario``, ``seed``, ``duration_s``, the number of
  flows and each flow's ``name``, ``controller``, ``start_s`` and ``stop_s``; and the structure
  of the summary, the set of its key paths with list indices folded (``flows[*].sqp_frame_delay[*].n``).
  The baseline file holds the whole summary of the recorded run. A live case is skipped, with
  the reason, where ``rtcc emu`` cannot run (not root, no /dev/net/tun, no network namespaces).
- A case whose scenario names a file outside the checkout that is absent here (the mahimahi
  traces of ``../shared/traces``, resolved from the checkout: a worktree at ``DIR/NAME``
  looks for ``DIR/shared``) is skipped, naming the file. A skip is not a failure unless
  ``--strict`` is given; the last line counts them.

Nothing is normalised before the comparison: summary.json holds the scenario's name (the file
stem, or ``<sweep name>/<cell>``), the seed, the duration and the metrics, and nothing that
depends on the run itself (no wall-clock time, no absolute path, no version string; checked when
the baseline was first recorded, two runs of every case giving identical bytes).

``--ignore-new KEY`` (repeatable) is for a change that adds a metric and should change nothing
else: the key is removed from the new summary (at the top level and in every flow) and the two
are compared as parsed JSON (the same numbers, not necessarily the same bytes).

``--record`` reruns the selected cases and writes their baseline files, and writes
``baseline/SOURCE``: the commit recorded at (with ``-k``, one line per re-recorded case beside
the earlier commit), marked when the checkout had uncommitted changes outside bench/identity.
Re-record only for a change meant to change results, and say why in its commit message.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import multiprocessing
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
CASES_FILE = HERE / "cases.toml"
BASELINE = HERE / "baseline"
SOURCE = BASELINE / "SOURCE"
NAME_RE = re.compile(r"^[A-Za-z0-9._=+,-]+$")  # a case name is a file name
MAX_DIFFS = 12  # differing JSON paths printed per mismatching case
LIVE_ECHO_TOP = ("scenario", "seed", "duration_s")
LIVE_ECHO_FLOW = ("name", "controller", "start_s", "stop_s")


@dataclass
class Case:
    name: str
    scenario: str  # relative to the checkout's root
    run: str = "sim"  # "sim" or "live"
    seed: int | None = None
    controller: str | None = None
    cell: str | None = None  # a sweep file's cell label
    set: dict = field(default_factory=dict)  # dotted path -> value, applied as a sweep applies it
    skip: str | None = None  # why this case cannot run here

    @property
    def via_api(self) -> bool:
        return self.cell is not None or bool(self.set)


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "python"), *filter(None, [env.get("PYTHONPATH")])])
    env.pop("RTCC_PROGRESS", None)
    return env


def _import_rtcc():
    """This checkout's rtcc package (the parent only reads scenarios and sweep cells with it)."""
    sys.path.insert(0, str(REPO / "python"))
    import rtcc  # noqa: F401

    return rtcc


# -- cases ---------------------------------------------------------------------------------------


def _strings(value, out: list) -> list:
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, dict):
        for v in value.values():
            _strings(v, out)
    elif isinstance(value, list):
        for v in value:
            _strings(v, out)
    return out


def _absent_external(data: dict, base_dir: str) -> str | None:
    """A file the scenario names outside the checkout that is not here (../shared/traces)."""
    for text in _strings(data, []):
        if "/" not in text or "\n" in text or len(text) > 4096:
            continue
        path = os.path.normpath(os.path.join(base_dir, text))
        inside = path == str(REPO) or path.startswith(str(REPO) + os.sep)
        if not inside and not os.path.exists(path):
            return os.path.relpath(path, REPO)
    return None


def load_cases() -> tuple[list[Case], list[str]]:
    """Every case of cases.toml, sweeps expanded; and the problems found in the file."""
    spec = tomllib.loads(CASES_FILE.read_text(encoding="utf-8"))
    default_seed = spec.get("seed", 1)
    cases: list[Case] = []
    problems: list[str] = []
    for i, c in enumerate(spec.get("case", [])):
        unknown = set(c) - {"name", "scenario", "run", "seed", "controller", "set"}
        if unknown or "name" not in c or "scenario" not in c:
            problems.append(f"case #{i + 1}: needs name and scenario; unknown keys {sorted(unknown)}")
            continue
        run = c.get("run", "sim")
        if run not in ("sim", "live"):
            problems.append(f"{c['name']}: run must be \"sim\" or \"live\", got {run!r}")
            continue
        if run == "live" and ("seed" in c or "set" in c):
            problems.append(f"{c['name']}: a live case runs the scenario file as it is (no seed, no set)")
            continue
        seed = None if run == "live" else c.get("seed", default_seed)
        cases.append(Case(c["name"], c["scenario"], run, seed, c.get("controller"), None, dict(c.get("set", {}))))
    rtcc = None
    for s in spec.get("sweep", []):
        unknown = set(s) - {"prefix", "scenario", "cells", "seeds"}
        if unknown or not {"prefix", "scenario", "seeds"} <= set(s):
            problems.append(f"sweep {s.get('prefix', '?')}: needs prefix, scenario and seeds; unknown keys "
                            f"{sorted(unknown)}")
            continue
        rtcc = rtcc or _import_rtcc()
        from rtcc.sweep import Sweep

        try:
            cells = Sweep.from_file(REPO / s["scenario"]).cells()
        except Exception as e:  # noqa: BLE001 - reported as a problem of the case list
            problems.append(f"sweep {s['prefix']}: {s['scenario']}: {e}")
            continue
        wanted = s.get("cells", "all")
        labels = [label for label, _, _ in cells]
        if wanted != "all":
            missing = [w for w in wanted if w not in labels]
            if missing:
                problems.append(f"sweep {s['prefix']}: no cell {missing} in {s['scenario']}")
            labels = [w for w in wanted if w in labels]
        for label, _, scenario in cells:
            if label not in labels:
                continue
            absent = _absent_external(scenario.to_dict(), scenario.base_dir)
            for seed in s["seeds"]:
                case = Case(f"{s['prefix']}.{label}.seed{seed}", s["scenario"], "sim", seed, cell=label)
                case.skip = absent and f"needs {absent} (absent)"
                cases.append(case)
    for case in cases:
        if case.cell is None:
            path = REPO / case.scenario
            try:
                data = tomllib.loads(path.read_text(encoding="utf-8"))
            except (OSError, tomllib.TOMLDecodeError) as e:
                problems.append(f"{case.name}: {case.scenario}: {e}")
                continue
            absent = _absent_external(data, os.path.dirname(os.path.normpath(path)))
            case.skip = absent and f"needs {absent} (absent)"
    names = [c.name for c in cases]
    for name in sorted({n for n in names if names.count(n) > 1}):
        problems.append(f"{name}: two cases with this name")
    for name in names:
        if not NAME_RE.match(name):
            problems.append(f"{name}: a case name may only hold letters, digits and ._=+,-")
    return cases, problems


def select(cases: list[Case], patterns: list[str] | None) -> list[Case]:
    if not patterns:
        return cases
    def match(name: str, p: str) -> bool:
        return fnmatch.fnmatchcase(name, p) if any(ch in p for ch in "*?[") else p in name
    return [c for c in cases if any(match(c.name, p) for p in patterns)]


def live_unavailable() -> str | None:
    if os.geteuid() != 0:
        return "rtcc emu needs root"
    if not Path("/dev/net/tun").exists():
        return "no /dev/net/tun"
    if shutil.which("unshare") and subprocess.run(["unshare", "--net", "true"], capture_output=True).returncode:
        return "cannot create network namespaces"
    return None


# -- running -------------------------------------------------------------------------------------


def run_api(spec: dict) -> str:
    """Run one case through the Python API (a sweep cell, or a scenario with overrides), as a
    sweep runs a cell: the summary.json text."""
    _import_rtcc()
    from rtcc.scenario import Scenario
    from rtcc.sweep import Sweep, set_path

    path = REPO / spec["scenario"]
    if spec.get("cell") is not None:
        cells = {label: sc for label, _, sc in Sweep.from_file(path).cells()}
        scenario = cells[spec["cell"]]
    else:
        scenario = Scenario.from_file(path)
    if spec.get("set"):
        data = scenario.to_dict()
        for key, value in spec["set"].items():
            set_path(data, key, value)
        scenario = Scenario.from_dict(data, base_dir=scenario.base_dir)
    if spec.get("controller"):
        scenario = scenario.with_controller(spec["controller"])
    return scenario.run(seed=spec["seed"], keep_packets=False).summary_json


def _worker_init() -> None:
    os.chdir(REPO)
    os.environ.update(_env())
    _import_rtcc()


def run_case(case: Case, work: Path, timeout: float) -> tuple[bytes | None, str, float]:
    """Run a case: (summary.json bytes or None, error text, seconds). API cases run in this
    process (a worker of the pool, as a sweep's cells run), the others as ``rtcc`` commands.
    Each summary is also written to ``work/<case>.json`` (``--keep``)."""
    start = time.monotonic()
    if case.via_api:
        spec = {"scenario": case.scenario, "cell": case.cell, "set": case.set, "seed": case.seed,
                "controller": case.controller}
        try:
            data = run_api(spec).encode("utf-8")
        except Exception as e:  # noqa: BLE001 - a failed run is reported, the others go on
            return None, f"{type(e).__name__}: {e}", time.monotonic() - start
        (work / f"{case.name}.json").write_bytes(data)
        return data, "", time.monotonic() - start
    out = work / case.name
    if case.run == "live":
        argv = [sys.executable, "-m", "rtcc", "live", case.scenario, "-o", str(out), "--no-plots"]
    else:
        argv = [sys.executable, "-m", "rtcc", "run", case.scenario, "-o", str(out), "--no-plots",
                "--seed", str(case.seed)]
    argv += ["--controller", case.controller] if case.controller else []
    try:
        done = subprocess.run(argv, cwd=REPO, env=_env(), capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, f"no result within {timeout:g} s", time.monotonic() - start
    seconds = time.monotonic() - start
    summary = out / "summary.json"
    if done.returncode != 0 or not summary.is_file():
        tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-5:])
        return None, f"exit status {done.returncode}: {tail}", seconds
    data = summary.read_bytes()
    (work / f"{case.name}.json").write_bytes(data)
    if case.run == "sim":
        shutil.rmtree(out, ignore_errors=True)  # the Parquet logs are not compared
    return data, "", seconds


# -- comparing -----------------------------------------------------------------------------------


def json_diffs(old, new, path: str = "", out: list | None = None, limit: int = MAX_DIFFS) -> list[str]:
    """The first differing paths of two JSON values, ``path: old -> new``."""
    out = [] if out is None else out
    if len(out) >= limit:
        return out
    if isinstance(old, dict) and isinstance(new, dict):
        for key in list(old) + [k for k in new if k not in old]:
            where = f"{path}.{key}" if path else key
            if key not in new:
                out.append(f"{where}: {json.dumps(old[key])[:80]} -> (missing)")
            elif key not in old:
                out.append(f"{where}: (missing) -> {json.dumps(new[key])[:80]}")
            else:
                json_diffs(old[key], new[key], where, out, limit)
            if len(out) >= limit:
                break
        else:
            if [k for k in old if k in new] != [k for k in new if k in old] and len(out) < limit:
                out.append(f"{path or '(top)'}: key order {list(old)} -> {list(new)}")
    elif isinstance(old, list) and isinstance(new, list):
        for i, (a, b) in enumerate(zip(old, new)):
            json_diffs(a, b, f"{path}[{i}]", out, limit)
            if len(out) >= limit:
                break
        if len(old) != len(new) and len(out) < limit:
            out.append(f"{path}: {len(old)} items -> {len(new)}")
    elif old != new or type(old) is not type(new):
        out.append(f"{path}: {json.dumps(old)} -> {json.dumps(new)}")
    return out


def text_diff(old: bytes, new: bytes) -> list[str]:
    """Where two texts with equal JSON values differ (number formatting, spacing)."""
    a, b = old.decode(errors="replace").splitlines(), new.decode(errors="replace").splitlines()
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return [f"same JSON values, different text; line {i + 1}: {x[:100]!r} -> {y[:100]!r}"]
    return [f"same JSON values, different text: {len(a)} lines -> {len(b)} lines (or line endings)"]


def key_paths(value, path: str = "", out: set | None = None) -> set[str]:
    """Every key path of a JSON value, list indices folded to [*]."""
    out = set() if out is None else out
    if isinstance(value, dict):
        for k, v in value.items():
            where = f"{path}.{k}" if path else k
            out.add(where)
            key_paths(v, where, out)
    elif isinstance(value, list):
        for v in value:
            key_paths(v, f"{path}[*]", out)
    return out


def live_projection(summary: dict) -> dict:
    """What a live run's summary.json shares with every other live run of the same scenario."""
    return {**{k: summary.get(k) for k in LIVE_ECHO_TOP},
            "flows": [{k: f.get(k) for k in LIVE_ECHO_FLOW} for f in summary.get("flows", [])],
            "keys": sorted(key_paths(summary))}


def without(summary: dict, keys: list[str]) -> dict:
    """``summary`` less ``keys`` at its top level and in each of its flows."""
    out = {k: v for k, v in summary.items() if k not in keys}
    if isinstance(out.get("flows"), list):
        out["flows"] = [{k: v for k, v in f.items() if k not in keys} if isinstance(f, dict) else f
                        for f in out["flows"]]
    return out


def compare(case: Case, old: bytes, new: bytes, ignore_new: list[str] = ()) -> list[str]:
    """Empty when the case passes; else what differs."""
    if ignore_new and case.run != "live":
        try:
            a, b = json.loads(old), without(json.loads(new), list(ignore_new))
        except ValueError as e:
            return [f"not JSON: {e}"]
        return [] if a == b else json_diffs(a, b) or ["different"]
    if case.run == "live":
        a, b = live_projection(json.loads(old)), live_projection(without(json.loads(new), list(ignore_new)))
        if a == b:
            return []
        lines = json_diffs({k: v for k, v in a.items() if k != "keys"}, {k: v for k, v in b.items() if k != "keys"})
        gone, added = sorted(set(a["keys"]) - set(b["keys"])), sorted(set(b["keys"]) - set(a["keys"]))
        lines += [f"key gone: {k}" for k in gone[:MAX_DIFFS]] + [f"key added: {k}" for k in added[:MAX_DIFFS]]
        return lines
    if old == new:
        return []
    try:
        a, b = json.loads(old), json.loads(new)
    except ValueError as e:
        return [f"not JSON: {e}"]
    return json_diffs(a, b) or text_diff(old, new)


# -- the command ---------------------------------------------------------------------------------


def git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True).stdout.strip()


def checkout_state() -> str:
    commit = git("rev-parse", "HEAD") or "unknown"
    dirty = git("status", "--porcelain", "--untracked-files=no", "--", ".", ":(exclude)bench/identity")
    return commit + (" (with uncommitted changes)" if dirty else "")


def write_source(recorded: list[str], full: bool) -> None:
    state = checkout_state()
    lines = []
    if not full and SOURCE.exists():
        lines = [ln for ln in SOURCE.read_text().splitlines()
                 if not any(ln.startswith(f"case {n} ") for n in recorded)]
        lines += [f"case {n} {state}" for n in recorded]
    else:
        lines = ["# The commit the baseline was recorded at (python bench/identity/check.py --record);",
                 "# 'case NAME COMMIT' lines name cases re-recorded alone later (--record -k).",
                 f"commit {state}"]
    SOURCE.write_text("\n".join(lines) + "\n")


def check_rtcc() -> str | None:
    """Where the runs import rtcc from, or None after printing why they cannot."""
    probe = "import rtcc, rtcc._core; print(rtcc.__file__, rtcc._core.__version__)"
    done = subprocess.run([sys.executable, "-c", probe], cwd=REPO, env=_env(), capture_output=True, text=True)
    if done.returncode != 0:
        print(f"cannot import rtcc from {REPO / 'python'}: {done.stderr.strip().splitlines()[-1:]}\n"
              "build this checkout's native module first (make install)", file=sys.stderr)
        return None
    return done.stdout.strip()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="Rerun the identity cases and compare their summary.json "
                                "byte for byte with bench/identity/baseline/ (see the module docstring).")
    p.add_argument("--record", action="store_true", help="store the baseline instead of comparing")
    p.add_argument("-k", action="append", metavar="PATTERN",
                   help="only cases whose name contains PATTERN (a glob if it has *?[); repeatable")
    p.add_argument("-j", "--jobs", type=int, default=1, metavar="N", help="simulated runs at a time (default 1)")
    p.add_argument("--list", action="store_true", help="list the selected cases and exit")
    p.add_argument("--keep", action="store_true", help="keep the new summaries (their folder is printed)")
    p.add_argument("--strict", action="store_true", help="a case skipped here (absent trace, no live runs) fails")
    p.add_argument("--ignore-new", action="append", default=[], metavar="KEY",
                   help="a key a change added to every summary (compared as parsed JSON without it)")
    p.add_argument("--timeout", type=float, default=900, metavar="S",
                   help="seconds per rtcc run/live command (default 900)")
    args = p.parse_args(argv)
    if args.jobs < 1:
        p.error("-j: expected a positive number")

    cases, problems = load_cases()
    if problems:
        for line in problems:
            print(f"cases.toml: {line}", file=sys.stderr)
        return 2
    chosen = select(cases, args.k)
    if not chosen:
        print(f"no case matches {args.k}", file=sys.stderr)
        return 2
    why_not_live = live_unavailable() if any(c.run == "live" for c in chosen) else None
    for c in chosen:
        if c.run == "live" and why_not_live and not c.skip:
            c.skip = f"live runs are impossible here: {why_not_live}"
    if args.list:
        for c in chosen:
            how = "live" if c.run == "live" else ("api " if c.via_api else "cli ")
            print(f"{how} {c.name}" + (f"  [skip: {c.skip}]" if c.skip else ""))
        print(f"{len(chosen)} cases, {sum(bool(c.skip) for c in chosen)} to skip here")
        return 0
    where = check_rtcc()
    if where is None:
        return 2
    print(f"checkout {checkout_state()}; rtcc {where}")
    if not args.record:
        print("baseline: " + "; ".join(ln for ln in (SOURCE.read_text().splitlines() if SOURCE.exists() else ["none"])
                                       if not ln.startswith("#")))

    runnable = [c for c in chosen if not c.skip]
    skipped = [c for c in chosen if c.skip]
    for c in skipped:
        print(f"SKIP  {c.name}: {c.skip}")
    if not args.record:
        for c in runnable:
            if not (BASELINE / f"{c.name}.json").exists():
                print(f"FAIL  {c.name}: no baseline file (record it with --record -k {c.name})")
    work = Path(tempfile.mkdtemp(prefix="rtcc-identity-"))
    results: dict[str, tuple[bytes | None, str, float]] = {}
    start = time.monotonic()
    total = len(runnable)

    def report(c: Case, res) -> None:
        results[c.name] = res
        data, error, seconds = res
        status = "error" if data is None else ("ran" if args.record else _status(c, data, args.ignore_new))
        print(f"[{len(results)}/{total}] {status:<8} {c.name} ({seconds:.1f} s)", flush=True)

    try:
        sims = [c for c in runnable if c.run == "sim"]
        if sims:
            with ProcessPoolExecutor(max_workers=min(args.jobs, len(sims)), initializer=_worker_init,
                                     mp_context=multiprocessing.get_context("spawn")) as pool:
                futures = {pool.submit(run_case, c, work, args.timeout): c for c in sims}
                for fut in as_completed(futures):
                    try:
                        res = fut.result()
                    except BrokenProcessPool as e:  # a worker died (an abort in the core)
                        res = (None, f"a worker process died: {e}", 0.0)
                    report(futures[fut], res)
        for c in runnable:  # real time: one at a time, on a machine no longer busy with the others
            if c.run == "live":
                report(c, run_case(c, work, args.timeout))
        elapsed = time.monotonic() - start
        failed = errors = 0
        for c in runnable:
            data, error, _ = results[c.name]
            if data is None:
                errors += 1
                print(f"\nERROR {c.name}: {error}")
                continue
            if args.record:
                BASELINE.mkdir(exist_ok=True)
                (BASELINE / f"{c.name}.json").write_bytes(data)
                continue
            base = BASELINE / f"{c.name}.json"
            if not base.exists():
                failed += 1
                continue
            diffs = compare(c, base.read_bytes(), data, args.ignore_new)
            if diffs:
                failed += 1
                what = "live summary differs in what is compared" if c.run == "live" else "summary.json differs"
                print(f"\nMISMATCH {c.name}: {what} (old -> new)")
                for line in diffs:
                    print(f"    {line}")
        if args.record:
            recorded = [c.name for c in runnable if results[c.name][0] is not None]
            full = not args.k and not errors and not skipped  # else SOURCE names the cases recorded now
            if full:
                names = {f"{c.name}.json" for c in cases}
                for stale in BASELINE.glob("*.json"):
                    if stale.name not in names:
                        stale.unlink()
                        print(f"removed {stale.relative_to(REPO)} (no such case)")
            write_source(recorded, full)
            print(f"\nrecorded {len(recorded)} of {len(chosen)} cases in {elapsed:.1f} s "
                  f"({len(skipped)} skipped, {errors} failed to run) at {checkout_state()}")
            return 1 if errors else 0
        identical = len(runnable) - failed - errors
        print(f"\n{identical} identical, {failed} different, {errors} failed to run, {len(skipped)} skipped; "
              f"{elapsed:.1f} s")
        return 1 if failed or errors or (args.strict and skipped) else 0
    finally:
        if args.keep:
            print(f"new summaries kept in {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


def _status(case: Case, data: bytes, ignore_new: list[str] = ()) -> str:
    base = BASELINE / f"{case.name}.json"
    if not base.exists():
        return "NEW"
    try:
        return "ok" if not compare(case, base.read_bytes(), data, ignore_new) else "DIFFERS"
    except ValueError:
        return "DIFFERS"


if __name__ == "__main__":
    sys.exit(main())
