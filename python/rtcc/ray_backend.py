"""Sweeps on Ray: the same runs as the local process pool, on a Ray cluster.

Each run is one Ray task (one CPU) that receives everything it needs by value: the scenario (a
dict), the seed, and the bytes of every input file the scenario names (link traces and schedules,
frame-size traces). On the worker the files are written to a temporary folder and the scenario is
pointed at them, so a cluster's nodes need rtcc installed but not the driver's files. A run's
summary depends only on the scenario, the seed and those bytes, so the results table is byte for
byte the local backend's (``tests/test_ray.py``).

``address`` is a Ray cluster address (``ray://host:10001`` or ``host:6379``); without one a local
Ray instance is started for the sweep (and stopped after it).
"""

from __future__ import annotations

import copy
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

class RayMissing(RuntimeError):
    """``backend="ray"`` without Ray installed: what to install, not a bug in rtcc."""


def input_files(data: dict, base_dir: str) -> dict[tuple, tuple[str, str]]:
    """The input files a scenario dict names: {location in the dict: (path, suffix)}, the path
    being the file the core reads and the suffix what follows ``#`` in the name (an OpenNetLab
    trace's direction), or "". The core says which keys hold file names and how it resolves them
    (``rtcc_scenario::Scenario::referenced_files``); nothing here knows them."""
    import json

    from . import _core

    return {tuple(where): (path, suffix)
            for where, path, suffix in _core.referenced_files(json.dumps(data, default=str), str(base_dir))}


def ship(task: tuple) -> tuple:
    """A sweep task with its input files' bytes attached: (task, {location: (name, bytes, suffix)})."""
    data, base_dir = task[0], task[1]
    files = {}
    for where, (path, suffix) in input_files(data, base_dir).items():
        try:
            files[where] = (Path(path).name, Path(path).read_bytes(), suffix)
        except OSError as e:
            raise FileNotFoundError(f"{'.'.join(map(str, where))}: cannot read {path}: {e.strerror}") from None
    return task, files


def run_shipped(task: tuple, files: dict) -> tuple:
    """On a worker: write the shipped files, point the scenario at them, run it. A task with a
    run folder (``logs``) writes it on the worker and sends its files back: ``(failed, summary
    or error, {relative path: bytes})``; the driver writes them where the task asked
    (:func:`receive`), so a cluster's nodes need no shared file system."""
    from .sweep import _run_task

    data, _, seed, logs, allow_large, *rest = task
    data = copy.deepcopy(data)
    with tempfile.TemporaryDirectory(prefix="rtcc-task-") as tmp:
        for n, (where, (name, content, suffix)) in enumerate(sorted(files.items(), key=lambda x: str(x[0]))):
            local = Path(tmp) / f"{n}-{name}"
            local.write_bytes(content)
            node: Any = data
            for step in where[:-1]:
                node = node[step]
            node[where[-1]] = str(local) + (f"#{suffix}" if suffix else "")
        run_dir = Path(tmp) / "run" if logs else None
        failed, text = _run_task((data, tmp, seed, str(run_dir) if run_dir else None, allow_large, *rest))
        written = {}
        if run_dir is not None and not failed:
            written = {p.relative_to(run_dir).as_posix(): p.read_bytes()
                       for p in sorted(run_dir.rglob("*")) if p.is_file()}
        return failed, text, written


def receive(task: tuple, output: tuple) -> tuple[bool, str]:
    """On the driver: write a finished task's run folder (if it asked for one) where the task
    names it; the output as the local backend gives it."""
    failed, text, written = output
    logs = task[3]
    if logs and not failed:
        for name, content in written.items():
            path = Path(logs) / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(content)
    return failed, text


def execute(tasks: list[tuple], address: str | None,
            progress: Callable[[int, int], None] | None) -> tuple[list, list[int] | None]:
    """Run the tasks on Ray; the same contract as the local pool's ``_execute``: outputs in task
    order (None for runs that did not finish, the sweep stopping at the first failed run)."""
    try:
        import ray
    except ImportError:
        raise RayMissing("--backend ray needs Ray, which is not installed here: pip install 'ray>=2.9' "
                         "(or run without --backend ray: the local backend gives the same results)") from None
    shipped = [ship(t) for t in tasks]  # a missing input file fails here, before anything runs
    started = not ray.is_initialized()
    if started:
        ray.init(address=address, include_dashboard=False, log_to_driver=False,
                 configure_logging=False, ignore_reinit_error=True)
    remote = ray.remote(num_cpus=1, max_retries=0)(run_shipped)
    outputs: list = [None] * len(tasks)
    try:
        refs = {remote.remote(task, files): i for i, (task, files) in enumerate(shipped)}
        pending, done = list(refs), 0
        if progress:
            progress(0, len(tasks))
        while pending:
            ready, pending = ray.wait(pending, num_returns=1)
            for ref in ready:
                i = refs[ref]
                outputs[i] = receive(tasks[i], ray.get(ref))
                done += 1
                if outputs[i][0]:  # a failed run: stop the sweep, as the local backend does
                    for other in pending:
                        ray.cancel(other, force=True)
                    pending = []
            if progress:
                progress(done, len(tasks))
    finally:
        if started:
            ray.shutdown()
    return outputs, None
