"""Sweeps and comparisons on Ray give the local backend's results byte for byte, with the input
files shipped with the tasks and kept run folders shipped back (python/rtcc/ray_backend.py).
Skipped with the reason when Ray is not installed."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from rtcc.compare import compare
from rtcc.ray_backend import input_files, receive, run_shipped, ship
from rtcc.registry import ControllerSpec
from rtcc.sweep import Sweep, _run_task, run_sweep

REPO = Path(__file__).resolve().parent.parent

SWEEP = """
[sweep]
name = "ray-equivalence"
seeds = [1, 2]
[sweep.grid]
"flows[0].controller" = ["gcc", "sqp"]
[scenario]
name = "ray-equivalence"
duration = "8s"
[scenario.path.forward]
trace = "links/lte.trace"
delay = "20ms"
queue = "100pkts"
[scenario.path.reverse]
schedule = "links/reverse.sched"
delay = "20ms"
[[scenario.flows]]
controller = "gcc"
encoder = { model = "trace", file = "links/frames.txt" }
"""


@pytest.fixture
def sweep_file(tmp_path) -> Path:
    links = tmp_path / "links"
    links.mkdir()
    shutil.copy(REPO / "traces" / "lte-6mbps-seed1.trace", links / "lte.trace")
    shutil.copy(REPO / "traces" / "lagged-720p-1500kbps-seed1.frames", links / "frames.txt")
    (links / "reverse.sched").write_text("0s 20Mbps\n4s 10Mbps\n")
    path = tmp_path / "sweep.toml"
    path.write_text(SWEEP)
    return path


def test_input_files_are_found_where_a_scenario_names_them(tmp_path):
    data = {"path": {"forward": {"trace": "a/b.trace"}, "reverse": {"schedule": "/abs/r.sched"}},
            "flows": [{"encoder": {"model": "trace", "file": "../f.txt"}}, {"encoder": "lagged"}]}
    found = input_files(data, "/base/dir")
    # Where the core reads each file (it says which keys name files): links resolve `..`
    # lexically, a frame trace is joined to the scenario's folder as it is.
    assert found == {("path", "forward", "trace"): ("/base/dir/a/b.trace", ""),
                     ("path", "reverse", "schedule"): ("/abs/r.sched", ""),
                     ("flows", 0, "encoder", "file"): ("/base/dir/../f.txt", "")}
    onl = input_files({"path": {"forward": {"trace": "t.json#downlink"}}}, "/b")
    assert onl == {("path", "forward", "trace"): ("/b/t.json", "downlink")}


def test_input_files_of_each_hop_of_a_path_are_found():
    data = {"path": {"hops": [{"name": "a", "forward": {"capacity": "1Mbps"}},
                              {"name": "b", "forward": {"trace": "b.trace"}, "reverse": {"schedule": "r.txt"}}]}}
    assert input_files(data, "/d") == {("path", "hops", 1, "forward", "trace"): ("/d/b.trace", ""),
                                       ("path", "hops", 1, "reverse", "schedule"): ("/d/r.txt", "")}


def test_a_sweep_on_ray_matches_the_local_backend_byte_for_byte(sweep_file, tmp_path):
    pytest.importorskip("ray", reason="Ray is not installed (pip install 'ray>=2.9')")
    run_sweep(Sweep.from_file(sweep_file), tmp_path / "local", jobs=2)
    run_sweep(Sweep.from_file(sweep_file), tmp_path / "ray", backend="ray")
    for table in ("results.csv", "cells.csv", "summary.md"):
        assert (tmp_path / "local" / table).read_bytes() == (tmp_path / "ray" / table).read_bytes(), table


def test_a_shipped_task_runs_without_the_drivers_files(sweep_file):
    # What a Ray worker on another node does, in this process: the files travel with the task.
    sweep = Sweep.from_file(sweep_file)
    label, _, scenario = sweep.cells()[0]
    task = (scenario.to_dict(), scenario.base_dir, 1, None, False)
    local = _run_task(task)
    shipped = ship(task)
    shutil.rmtree(sweep_file.parent / "links")
    assert _run_task(task)[0], "without its files the run fails here"
    assert run_shipped(*shipped) == (*local, {}), "the shipped run gives the local summary"


def test_a_shipped_run_folder_comes_back_to_the_driver(sweep_file, tmp_path):
    # A task that keeps its run folder writes it on the worker and sends the files back: the
    # driver gets the folder the local backend writes, wherever the task ran.
    sweep = Sweep.from_file(sweep_file)
    _, _, scenario = sweep.cells()[0]
    local = _run_task((scenario.to_dict(), scenario.base_dir, 1, str(tmp_path / "local"), False, False))
    task = (scenario.to_dict(), scenario.base_dir, 1, str(tmp_path / "shipped"), False, False)
    output = run_shipped(*ship(task))
    assert not (tmp_path / "shipped").exists(), "the worker writes nothing at the driver's path"
    assert receive(task, output) == local
    files = sorted(p.relative_to(tmp_path / "local").as_posix() for p in (tmp_path / "local").rglob("*"))
    assert files == sorted(p.relative_to(tmp_path / "shipped").as_posix() for p in (tmp_path / "shipped").rglob("*"))
    for name in ("summary.json", "frames.parquet", "packets.parquet", "state.parquet", "capacity.parquet"):
        assert (tmp_path / "local" / name).read_bytes() == (tmp_path / "shipped" / name).read_bytes(), name


def test_a_comparison_and_kept_logs_on_ray_match_the_local_backend(sweep_file, tmp_path):
    pytest.importorskip("ray", reason="Ray is not installed (pip install 'ray>=2.9')")
    sweep = Sweep.from_file(sweep_file)
    _, _, scenario = sweep.cells()[0]
    specs = [ControllerSpec.parse("gcc"), ControllerSpec.parse("sqp")]
    compare(scenario, specs, tmp_path / "cmp-local", jobs=2)
    compare(scenario, specs, tmp_path / "cmp-ray", backend="ray")
    assert (tmp_path / "cmp-local" / "comparison.csv").read_bytes() == \
        (tmp_path / "cmp-ray" / "comparison.csv").read_bytes()
    for label in ("gcc", "sqp"):
        run = Path("runs") / label / "summary.json"
        assert (tmp_path / "cmp-local" / run).read_bytes() == (tmp_path / "cmp-ray" / run).read_bytes()
    run_sweep(sweep.with_seeds([1]), tmp_path / "sweep-ray", backend="ray", keep_logs=True)
    kept = sorted((tmp_path / "sweep-ray" / "runs").glob("*/seed1/summary.json"))
    assert len(kept) == 2, "every run's folder came back from the workers"


def test_unknown_engines_are_refused(sweep_file, tmp_path):
    sweep = Sweep.from_file(sweep_file)
    with pytest.raises(ValueError, match="backend"):
        sweep.run(backend="slurm")
    with pytest.raises(ValueError, match="jobs"):
        sweep.run(jobs=0)


def test_the_ray_backend_without_ray_says_what_to_install(tmp_path):
    """Without Ray, --backend ray is a missing package, not "an internal error ... a bug in rtcc"
    (what it said before), and the output folder is not created."""
    import os
    import subprocess
    import sys

    blocker = tmp_path / "blocked" / "ray"
    blocker.mkdir(parents=True)
    (blocker / "__init__.py").write_text('raise ImportError("Ray is blocked for this test")\n')
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(blocker.parent), os.environ.get("PYTHONPATH", "")])}
    sweep = Path(__file__).resolve().parents[1] / "experiments" / "bbr_dash" / "e9_no_regression.toml"
    done = subprocess.run([sys.executable, "-m", "rtcc", "sweep", str(sweep), "--backend", "ray",
                           "-o", str(tmp_path / "out")], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 2, done.stderr
    assert "pip install 'ray>=2.9'" in done.stderr and "internal error" not in done.stderr, done.stderr
    assert not (tmp_path / "out").exists()
