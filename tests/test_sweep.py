"""Sweeps: path setting, cells and labels, validation, parallel determinism, output folder, CLI."""

import json
import os
import subprocess
import sys
import textwrap
import time

import polars as pl
import pytest

import rtcc
from rtcc.cli import main
from rtcc.sweep import Sweep, run_sweep, set_path

BASE = textwrap.dedent(
    """
    [scenario]
    duration = "2s"
    [scenario.path.forward]
    capacity = "4Mbps"
    delay = "20ms"
    queue = "50ms"
    [[scenario.flows]]
    name = "video"
    controller = "oracle"
    frame_jitter = "5ms"
    """
)
SWEEP = textwrap.dedent(
    """
    [sweep]
    name = "small"
    description = "two capacities, two queues, with and without cross traffic"
    seeds = [1, 2]
    [sweep.grid]
    "path.forward.capacity" = ["4Mbps", "8Mbps"]
    "path.forward.queue" = ["50ms", "100pkts"]
    [[sweep.variant]]
    label = "alone"
    [[sweep.variant]]
    label = "n=2"
    "+flows" = [{ name = "udp", kind = "cbr", rate = "1Mbps", start = "0.5s" }]
    """
) + BASE
LABELS = [f"capacity={c},queue={q},{v}" for c in ("4Mbps", "8Mbps") for q in ("50ms", "100pkts")
          for v in ("alone", "n=2")]


def write(tmp_path, text, name="sw.toml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def leftovers(folder):
    return sorted(p.name for p in folder.iterdir() if ".tmp-" in p.name or ".old-" in p.name)


def error_of(capsys, argv, code=2) -> str:
    assert main([str(a) for a in argv]) == code
    err = capsys.readouterr().err
    assert err.startswith("rtcc: error: ") and "Traceback" not in err
    return err


# -- paths -----------------------------------------------------------------------------------


def test_set_path_tables_and_arrays():
    d = {"path": {"forward": {"capacity": "8Mbps"}}, "flows": [{"name": "a"}, {"name": "b", "params": {}}]}
    set_path(d, "path.forward.capacity", "2Mbps")
    set_path(d, "path.reverse.capacity", "1Mbps")  # missing tables are created
    set_path(d, "flows[1].params.rate", "3Mbps")
    set_path(d, "flows[0].feedback.interval", "50ms")
    value = {"kind": "codel"}
    set_path(d, "path.forward.queue", value)
    value["kind"] = "changed"  # the value is copied
    assert d["path"] == {"forward": {"capacity": "2Mbps", "queue": {"kind": "codel"}}, "reverse": {"capacity": "1Mbps"}}
    assert d["flows"][1]["params"] == {"rate": "3Mbps"} and d["flows"][0]["feedback"] == {"interval": "50ms"}
    set_path(d, "+flows", [{"name": "c"}])
    assert [f["name"] for f in d["flows"]] == ["a", "b", "c"]
    set_path(d, "flows", [{"name": "x"}])
    assert d["flows"] == [{"name": "x"}]


@pytest.mark.parametrize(
    "path, value, words",
    [
        ("flows[2].start", "1s", ["flows[2].start", "flows[2] does not exist", "2 elements"]),
        ("flows.start", "1s", ["flows.start", "array"]),
        ("path.forward.capacity.x", 1, ["path.forward.capacity", "not a table"]),
        ("flows[0][1]", 1, ["flows[0]", "not an array"]),
        ("missing[0]", 1, ["missing", "does not exist"]),
        ("path..forward", 1, ["not a path"]),
        ("flows[-1]", 1, ["not a path"]),
        ("+flows", {"name": "c"}, ["+flows", "list"]),
        ("+path.forward.capacity", ["x"], ["not an array"]),
    ],
)
def test_set_path_errors(path, value, words):
    d = {"path": {"forward": {"capacity": "8Mbps"}}, "flows": [{"name": "a"}, {"name": "b"}]}
    with pytest.raises(rtcc.ScenarioError) as e:
        set_path(d, path, value)
    for word in words:
        assert word in str(e.value), (word, str(e.value))


# -- cells and labels ------------------------------------------------------------------------


def test_grid_product_and_variants(tmp_path):
    sw = Sweep.from_file(write(tmp_path, SWEEP))
    assert sw.name == "small" and sw.seeds == [1, 2]
    cells = sw.cells()
    assert [label for label, _, _ in cells] == LABELS
    label, params, scenario = cells[3]
    assert params == {"path.forward.capacity": "4Mbps", "path.forward.queue": "100pkts", "variant": "n=2"}
    d = scenario.to_dict()
    assert d["path"]["forward"] == {"capacity": "4Mbps", "delay": "20ms", "queue": "100pkts"}
    assert [f["name"] for f in d["flows"]] == ["video", "udp"], "+flows appends to the base flows"
    assert [f["name"] for f in cells[2][2].to_dict()["flows"]] == ["video"], "other cells keep the base flows"
    assert scenario.base_dir == str(tmp_path) and d["name"] == f"small/{label}"
    assert sw.base["flows"] == [{"name": "video", "controller": "oracle", "frame_jitter": "5ms"}], "base unchanged"


def test_no_grid_is_one_cell_and_default_seed(tmp_path):
    sw = Sweep.from_file(write(tmp_path, BASE.replace('duration = "2s"', 'duration = "2s"\nseed = 7')))
    assert [c[0] for c in sw.cells()] == ["base"] and sw.seeds == [7] and sw.name == "sw"


def test_labels(tmp_path):
    sw = Sweep.from_dict({"sweep": {"grid": {
        "path.forward.capacity": ["1.5Mbps", "2Mbit/s"],
        "path.reverse.capacity": ["10Mbps"],
        "path.forward.queue": ["300ms", {"kind": "codel", "preset": "gcc-aqm"}],
        "flows[0].params.fraction": [0.5, 1],
    }}, "scenario": {"flows": [{"controller": "oracle"}]}})
    labels = [c[0] for c in sw.cells()]
    assert labels[0] == "forward.capacity=1.5Mbps,reverse.capacity=10Mbps,queue=300ms,fraction=0.5"
    assert "forward.capacity=2Mbit_s,reverse.capacity=10Mbps,queue=codel,fraction=1" in labels
    assert len(set(labels)) == len(labels) == 8
    for label in labels:
        assert all(ch.isalnum() or ch in "._=+,-" for ch in label), label
    # Tables with the same kind are told apart by their other fields; lists of flows by their names.
    sw = Sweep.from_dict({"sweep": {"grid": {
        "path.forward.queue": [{"kind": "codel", "target": "5ms"}, {"kind": "codel", "target": "10ms"}],
        "flows": [[{"name": "a", "controller": "oracle"}],
                  [{"name": "a", "controller": "oracle"}, {"name": "b", "controller": "oracle"}]],
    }}, "scenario": {}})
    assert [c[0] for c in sw.cells()] == [
        "queue=codel+target=5ms,flows=a", "queue=codel+target=5ms,flows=a+b",
        "queue=codel+target=10ms,flows=a", "queue=codel+target=10ms,flows=a+b"]
    assert len(sw.cells()[1][2].to_dict()["flows"]) == 2


def test_unquoted_dotted_grid_keys(tmp_path):
    text = SWEEP.replace('"path.forward.capacity" =', "path.forward.capacity =")
    assert [c[0] for c in Sweep.from_file(write(tmp_path, text)).cells()] == LABELS


def test_n_flows_with_variants(tmp_path):
    text = textwrap.dedent(
        """
        [sweep]
        seeds = [1]
        [[sweep.variant]]
        label = "n=1"
        [[sweep.variant]]
        label = "n=3"
        "+flows" = [{ name = "u1", kind = "cbr", rate = "1Mbps" }, { name = "u2", kind = "cbr", rate = "1Mbps" }]
        "flows[0].start" = "0.5s"
        """
    ) + BASE
    cells = Sweep.from_file(write(tmp_path, text)).cells()
    assert [c[0] for c in cells] == ["n=1", "n=3"]
    flows = cells[1][2].to_dict()["flows"]
    assert [f["name"] for f in flows] == ["video", "u1", "u2"] and flows[0]["start"] == "0.5s"


@pytest.mark.parametrize(
    "sweep, words",
    [
        ('[sweep.grid]\n"flows[3].start" = ["1s"]', ["cell start=1s", "flows[3]", "does not exist"]),
        ('[sweep.grid]\n"path.forward.capacity" = "1Mbps"', ["sweep.grid", "path.forward.capacity", "list"]),
        ('[sweep.grid]\n"path.forward.capacity" = []', ["non-empty list"]),
        ('[sweep.grid]\n"path.forward.capacity" = ["1Mbps", "1Mbps"]', ["listed twice"]),
        ('[sweep.grid]\n"seed" = [1, 2]', ["sweep.seeds"]),
        ("[sweep]\nseed = [1]", ["sweep.seed", "unknown key", "seeds"]),
        ("[sweep]\nseeds = []", ["sweep.seeds"]),
        ('[sweep]\nseeds = [1, "2"]', ["sweep.seeds"]),
        ("[sweep]\nseeds = [1, 1]", ["twice"]),
        ('[[sweep.variant]]\n"flows[0].start" = "1s"', ["sweep.variant[0]", "label"]),
        ('[[sweep.variant]]\nlabel = "a"\n[[sweep.variant]]\nlabel = "a"', ["label", "twice"]),
        ('[other]\nx = 1', ["other", "unknown"]),
    ],
)
def test_sweep_file_errors(tmp_path, sweep, words):
    path = write(tmp_path, sweep + "\n" + BASE)
    with pytest.raises(rtcc.ScenarioError) as e:
        Sweep.from_file(path).cells()
    message = str(e.value)
    assert message.startswith(f"{path}: ")
    for word in words:
        assert word in message, (word, message)


def test_missing_scenario_and_bad_files(tmp_path):
    with pytest.raises(rtcc.ScenarioError, match=r"\[scenario\]"):
        Sweep.from_file(write(tmp_path, "[sweep]\nseeds = [1]\n"))
    with pytest.raises(rtcc.ScenarioError, match="invalid TOML"):
        Sweep.from_file(write(tmp_path, "[sweep\n"))
    with pytest.raises(rtcc.ScenarioError, match="no such sweep file"):
        Sweep.from_file(tmp_path / "none.toml")


def test_validation_fails_fast_with_the_cell_label(tmp_path, monkeypatch):
    import rtcc.sweep

    calls = []
    monkeypatch.setattr(rtcc.sweep, "_run_task", lambda task: calls.append(task))
    text = SWEEP.replace('"100pkts"]', '"100pkts"]\n"flows[0].params.fraction" = [0.5, "lots"]')
    with pytest.raises(rtcc.ScenarioError) as e:
        Sweep.from_file(write(tmp_path, text)).run(jobs=1)
    message = str(e.value)
    assert "cell capacity=4Mbps,queue=50ms,fraction=lots,alone: flows[0].params" in message, message
    assert "lots" in message.split("alone:")[1]
    assert calls == [], "nothing ran"


# -- running and output ----------------------------------------------------------------------


def test_jobs_give_identical_results(tmp_path):
    """The same sweep gives byte-identical tables with one process or a pool (run as `python -m rtcc`)."""
    path = write(tmp_path, SWEEP)
    assert main(["sweep", str(path), "-o", str(tmp_path / "one"), "--jobs", "1"]) == 0
    proc = subprocess.run([sys.executable, "-m", "rtcc", "sweep", str(path), "-o", str(tmp_path / "two"), "-j", "2"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    for name in ["results.csv", "cells.csv", "summary.md"]:
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes(), name
    runs = pl.read_csv(tmp_path / "one" / "results.csv")
    expected = [(label, seed, flow) for label in LABELS for seed in (1, 2)
                for flow in (["video", "udp"] if label.endswith("n=2") else ["video"])]
    assert list(zip(runs["cell"], runs["seed"], runs["flow"])) == expected, "cell order, then seed, then flow"


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    folder = tmp_path_factory.mktemp("sweep")
    path = write(folder, SWEEP)
    result = Sweep.from_file(path).run(jobs=1)
    result.save(folder / "out")
    return result, folder / "out"


def test_results_table(saved):
    result, out = saved
    runs = result.runs
    assert isinstance(runs, pl.DataFrame) and runs.height == 24
    assert runs.columns[:7] == ["cell", "path.forward.capacity", "path.forward.queue", "variant", "seed", "flow",
                                "controller"]
    for col in ["frame_delay_ms_p95", "throughput_bps", "loss_rate", "queuing_delay_ms_p95", "total_throughput_bps",
                "total_capacity_bps", "total_jain_index"]:
        assert col in runs.columns, col
    assert runs.schema["frames_sent"] == pl.Int64 and runs.schema["throughput_bps"] == pl.Float64
    assert set(runs["controller"]) == {"oracle", "cbr"}
    video = runs.filter(pl.col("flow") == "video", pl.col("variant") == "n=2", pl.col("path.forward.queue") == "50ms")
    assert video["seed"].to_list() == [1, 2, 1, 2]
    assert video["frame_delay_ms_p95"][0] != video["frame_delay_ms_p95"][1], "seeds differ"
    on_disk = pl.read_parquet(out / "results.parquet")
    assert on_disk.equals(runs)
    assert pl.read_csv(out / "results.csv").columns == runs.columns


def test_cells_table(saved):
    result, out = saved
    cells = result.cells
    assert cells.height == 12 and cells["runs"].to_list() == [2] * 12
    assert cells.columns[:7] == ["cell", "path.forward.capacity", "path.forward.queue", "variant", "flow",
                                 "controller", "runs"]
    row = cells.row(0, named=True)
    values = result.runs.filter(pl.col("cell") == row["cell"], pl.col("flow") == "video")["frame_delay_ms_p95"]
    assert row["frame_delay_ms_p95_mean"] == pytest.approx(values.mean())
    assert row["frame_delay_ms_p95_std"] == pytest.approx(values.std())
    assert pl.read_csv(out / "cells.csv").height == 12


def test_sweep_folder(saved):
    result, out = saved
    assert sorted(p.name for p in out.iterdir()) == ["cells.csv", "index.html", "plots", "results.csv", "results.parquet",
                                                    "runs", "summary.md", "sweep.json"]
    # Pantheon's summary figure leads the page: every cell's two seeds, their mean and spread.
    page = (out / "index.html").read_text()
    assert (out / "plots" / "throughput_delay.png").stat().st_size > 10_000
    assert page.index('src="plots/throughput_delay.png"') < page.index("<table>")
    points = result.points()
    assert set(points) == set(LABELS) and all(len(p) == 2 for p in points.values()), points
    resolved = json.loads((out / "sweep.json").read_text())
    assert resolved["seeds"] == [1, 2] and resolved["grid"]["path.forward.queue"] == ["50ms", "100pkts"]
    assert [v["label"] for v in resolved["variants"]] == ["alone", "n=2"]
    assert resolved["base"]["duration"] == "2s" and [c["label"] for c in resolved["cells"]] == LABELS
    md = (out / "summary.md").read_text()
    assert "# Sweep: small" in md and "| cell | flow | controller |" in md and " ± " in md
    assert f"| {LABELS[1]} | udp | cbr |" in md
    assert sorted(p.name for p in (out / "runs").iterdir()) == sorted(LABELS)
    run = out / "runs" / LABELS[1] / "seed2"
    assert sorted(p.name for p in run.iterdir()) == ["scenario.json", "summary.json"], "no logs by default"
    _, _, scenario = Sweep.from_file(out.parent / "sw.toml").cells()[1]
    assert (run / "summary.json").read_text() == scenario.run(seed=2).summary_json, "the same as a single run"


def test_relative_paths_and_seeds_option(tmp_path, monkeypatch, capsys):
    (tmp_path / "exp").mkdir()
    (tmp_path / "exp" / "a.sched").write_text("0s 4Mbps\n1s 2Mbps\n")
    (tmp_path / "exp" / "b.sched").write_text("0s 8Mbps\n")
    text = '[sweep.grid]\n"path.forward.schedule" = ["a.sched", "b.sched"]\n' + BASE.replace(
        'capacity = "4Mbps"\n', "")
    write(tmp_path / "exp", text)
    monkeypatch.chdir(tmp_path)
    assert main(["sweep", "exp/sw.toml", "-o", "out", "--seeds", "3,4", "-j", "1"]) == 0
    assert "2 cells x 2 seeds = 4 runs" in capsys.readouterr().out
    runs = pl.read_csv(tmp_path / "out" / "results.csv")
    assert runs["cell"].to_list() == ["schedule=a.sched"] * 2 + ["schedule=b.sched"] * 2
    assert runs["seed"].to_list() == [3, 4, 3, 4]
    assert runs["total_capacity_bps"].to_list() == pytest.approx([3e6, 3e6, 8e6, 8e6])


def test_keep_logs(tmp_path):
    path = write(tmp_path, "[sweep]\nseeds = [1]\n" + BASE)
    assert main(["sweep", str(path), "-o", str(tmp_path / "out"), "--keep-logs", "-j", "1"]) == 0
    run = tmp_path / "out" / "runs" / "base" / "seed1"
    for name in ["summary.json", "scenario.json", "packets.parquet", "frames.parquet", "plots/throughput.png"]:
        assert (run / name).is_file(), name
    assert pl.read_csv(tmp_path / "out" / "results.csv").height == 1


def test_failing_run_leaves_nothing(tmp_path, monkeypatch):
    import rtcc.sweep

    real, calls = rtcc.sweep._run_task, []

    def flaky(task):
        calls.append(task)
        if len(calls) == 3:
            raise RuntimeError("simulator crashed")
        return real(task)

    monkeypatch.setattr(rtcc.sweep, "_run_task", flaky)
    argv = ["sweep", str(write(tmp_path, SWEEP)), "-o", str(tmp_path / "out"), "-j", "1", "--keep-logs"]
    assert main(argv) == 70  # an internal error, reported in one line
    assert len(calls) == 3 and not (tmp_path / "out").exists() and leftovers(tmp_path) == []
    calls.clear()
    with pytest.raises(RuntimeError, match="simulator crashed"):
        main(["--debug", *argv])


def schedule_sweep(tmp_path, monkeypatch, names=("a", "b"), seeds=(1, 2), vanishes="b"):
    """A sweep over schedule files `names` whose `vanishes` file is deleted after every check, as
    the runs start (so its runs fail); returns (sweep path, sweep text, the real _execute)."""
    for i, name in enumerate(names):
        (tmp_path / f"{name}.sched").write_text(f"0s {4 * (i + 1)}Mbps\n")
    grid = ", ".join(f'"{n}.sched"' for n in names)
    text = (f"[sweep]\nseeds = {list(seeds)}\n[sweep.grid]\n\"path.forward.schedule\" = [{grid}]\n"
            + BASE.replace('capacity = "4Mbps"\n', ""))
    real_execute = rtcc.sweep._execute

    def delete_then_execute(tasks, *args):
        (tmp_path / f"{vanishes}.sched").unlink(missing_ok=True)
        return real_execute(tasks, *args)

    monkeypatch.setattr(rtcc.sweep, "_execute", delete_then_execute)
    return write(tmp_path, text), text, real_execute


def test_a_failed_run_keeps_the_finished_ones_and_resume_runs_the_rest(tmp_path, monkeypatch, capsys):
    """In order (one job): a.sched's two runs finish, b.sched's first fails (its file vanished after
    validation): the sweep stops, names the cell, keeps the two finished runs; --resume runs the rest and
    gives exactly the results of an uninterrupted sweep."""
    path, _, real_execute = schedule_sweep(tmp_path, monkeypatch)
    out = tmp_path / "out"
    err = error_of(capsys, ["sweep", path, "-o", out, "-j", "1"])
    assert "cell schedule=b.sched, seed 1" in err and "2 of 4 runs that finished are in" in err, err
    assert "--resume" in err
    runs = pl.read_csv(out / "results.csv")
    assert sorted(zip(runs["path.forward.schedule"], runs["seed"])) == [("a.sched", 1), ("a.sched", 2)]
    assert "schedule=b.sched, seed 1" in (out / "INCOMPLETE.txt").read_text()
    assert leftovers(tmp_path) == []
    # Without --resume the folder is not overwritten by accident; with it only b.sched runs.
    monkeypatch.setattr(rtcc.sweep, "_execute", real_execute)
    (tmp_path / "b.sched").write_text("0s 8Mbps\n")
    assert "--force" in error_of(capsys, ["sweep", path, "-o", out])
    ran = []
    monkeypatch.setattr(rtcc.sweep, "_execute", lambda tasks, *a: ran.extend(t[2] for t in tasks) or real_execute(tasks, *a))
    assert main(["sweep", str(path), "-o", str(out), "--resume", "-j", "1"]) == 0
    assert ran == [1, 2], "only b.sched's two seeds ran"
    assert not (out / "INCOMPLETE.txt").exists()
    fresh = tmp_path / "fresh"
    assert main(["sweep", str(path), "-o", str(fresh), "-j", "1"]) == 0
    assert (out / "results.csv").read_bytes() == (fresh / "results.csv").read_bytes()
    assert "not a sweep that stopped early" in error_of(capsys, ["sweep", path, "-o", fresh, "--resume"])


def test_a_failed_run_leaves_no_half_written_log_folder(tmp_path, monkeypatch, capsys):
    """With --keep-logs a run streams its packet log into its folder; when it fails, the folder goes."""
    path, _, _ = schedule_sweep(tmp_path, monkeypatch)
    out = tmp_path / "out"
    error_of(capsys, ["sweep", path, "-o", out, "-j", "1", "--keep-logs"])
    assert (out / "runs" / "schedule=a.sched" / "seed2" / "packets.parquet").is_file()
    assert not (out / "runs" / "schedule=b.sched").exists()


def test_resume_reuses_only_runs_of_the_same_sweep(tmp_path, monkeypatch, capsys):
    path, text, real_execute = schedule_sweep(tmp_path, monkeypatch)
    out = tmp_path / "out"
    error_of(capsys, ["sweep", path, "-o", out, "-j", "1"])
    monkeypatch.setattr(rtcc.sweep, "_execute", real_execute)
    (tmp_path / "b.sched").write_text("0s 8Mbps\n")
    # Other seeds: a different sweep, refused.
    assert "different sweep" in error_of(capsys, ["sweep", path, "-o", out, "--resume", "--seeds", "1"])
    # The same cells and seeds but a longer base scenario: nothing is reused, everything reruns.
    longer = write(tmp_path, text.replace('duration = "2s"', 'duration = "3s"'), "longer.toml")
    ran = []
    monkeypatch.setattr(rtcc.sweep, "_execute", lambda tasks, *a: ran.extend(t[2] for t in tasks) or real_execute(tasks, *a))
    assert main(["sweep", str(longer), "-o", str(out), "--resume", "-j", "1"]) == 0
    assert ran == [1, 2, 1, 2], "all four runs again"
    assert set(pl.read_csv(out / "results.csv")["stop_s"]) == {3.0}


def test_a_sweep_that_stops_before_any_run_finished_names_the_cell(tmp_path, monkeypatch, capsys):
    path, _, _ = schedule_sweep(tmp_path, monkeypatch, names=("a",), seeds=(1,), vanishes="a")
    err = error_of(capsys, ["sweep", path, "-o", tmp_path / "out", "-j", "1"])
    assert "cell schedule=a.sched, seed 1" in err
    assert not (tmp_path / "out").exists() and leftovers(tmp_path) == []


def test_failing_run_in_a_worker(tmp_path, monkeypatch):
    """A run that fails after validation (its trace file vanished) names the cell and seed, and stops the sweep."""
    path, _, _ = schedule_sweep(tmp_path, monkeypatch)
    with pytest.raises(rtcc.ScenarioError) as e:
        run_sweep(Sweep.from_file(path), tmp_path / "out", jobs=2)
    assert str(e.value).startswith(f"{tmp_path / 'sw.toml'}: cell schedule=b.sched, seed ")
    assert "b.sched" in str(e.value).split("seed")[1], str(e.value)
    # Whatever finished before the failure (a.sched's runs, in two workers) is kept, if anything did.
    if (tmp_path / "out").exists():
        assert (tmp_path / "out" / "INCOMPLETE.txt").is_file()
        assert set(pl.read_csv(tmp_path / "out" / "results.csv")["path.forward.schedule"]) == {"a.sched"}
    assert leftovers(tmp_path) == []


# -- command line ----------------------------------------------------------------------------


def test_cli_errors(tmp_path, capsys):
    good = write(tmp_path, SWEEP)
    bad = write(tmp_path, SWEEP.replace('"8Mbps"]', '"8Mbmps"]'), "bad.toml")
    err = error_of(capsys, ["sweep", bad, "-o", tmp_path / "out"])
    assert "bad.toml: cell capacity=8Mbmps,queue=50ms,alone: path.forward.capacity" in err and "8Mbmps" in err
    err = error_of(capsys, ["sweep", tmp_path / "none.toml", "-o", tmp_path / "out"])
    assert "none.toml" in err
    assert "--seeds" in error_of(capsys, ["sweep", good, "-o", tmp_path / "out", "--seeds", "1,x"])
    assert "--seeds" in error_of(capsys, ["sweep", good, "-o", tmp_path / "out", "--seeds", "1,1"])
    assert "--jobs" in error_of(capsys, ["sweep", good, "-o", tmp_path / "out", "--jobs", "0"])
    assert "--output" in error_of(capsys, ["sweep", good])
    assert not (tmp_path / "out").exists() and leftovers(tmp_path) == []


def test_cli_dry_run_and_force(tmp_path, capsys):
    path = write(tmp_path, SWEEP)
    assert main(["sweep", str(path), "--dry-run"]) == 0
    assert capsys.readouterr().out.splitlines() == LABELS + ["8 cells x 2 seeds = 16 runs"]
    out = tmp_path / "out"
    out.mkdir()
    (out / "old.txt").write_text("old")
    small = write(tmp_path, "[sweep]\nseeds = [1]\n" + BASE, "one.toml")
    assert "--force" in error_of(capsys, ["sweep", small, "-o", out])
    assert (out / "old.txt").is_file()
    assert main(["sweep", str(small), "-o", str(out), "--force", "-j", "1"]) == 0
    assert not (out / "old.txt").exists() and (out / "results.csv").is_file()
    assert leftovers(tmp_path) == []


def _children(pid: int) -> list[int]:
    """Processes whose parent is `pid` (Linux /proc)."""
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid and fields[0] != "Z":
                out.append(int(entry))
    return out


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="parent-death signal is Linux's")
def test_sweep_workers_die_with_a_parent_killed_outright(tmp_path):
    # Runs long enough (ten flows for 3000 s) that the workers are busy when the parent dies.
    long = BASE.replace('duration = "2s"', 'duration = "3000s"').replace('"4Mbps"', '"60Mbps"')
    long += "".join(f'[[scenario.flows]]\nname = "v{i}"\ncontroller = "oracle"\n' for i in range(9))
    sweep = tmp_path / "long.toml"
    sweep.write_text('[sweep]\nseeds = [1, 2]\n' + long)
    parent = subprocess.Popen([sys.executable, "-m", "rtcc", "sweep", str(sweep), "-o", str(tmp_path / "out"),
                               "--jobs", "2", "--allow-large"], stderr=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    workers: list[int] = []
    while time.monotonic() < deadline and len(workers) < 2:
        time.sleep(0.2)
        workers = [p for p in _children(parent.pid) if b"spawn_main" in open(f"/proc/{p}/cmdline", "rb").read()]
    assert workers, "the sweep started its workers"
    parent.kill()
    parent.wait()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not all(_gone(p) for p in workers):
        time.sleep(0.1)
    assert all(_gone(p) for p in workers), "workers outlived their killed parent"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc")
def test_a_worker_killed_mid_run_is_named_and_the_finished_runs_are_kept(tmp_path):
    # One quick cell and one long one (3000 s, ten flows); the long one's worker is killed.
    long = BASE.replace('"4Mbps"', '"60Mbps"')
    long += "".join(f'[[scenario.flows]]\nname = "v{i}"\ncontroller = "oracle"\n' for i in range(9))
    sweep = tmp_path / "mixed.toml"
    sweep.write_text('[sweep]\nseeds = [1]\n[sweep.grid]\nduration = ["2s", "3000s"]\n' + long)
    out = tmp_path / "out"
    parent = subprocess.Popen([sys.executable, "-m", "rtcc", "sweep", str(sweep), "-o", str(out), "--jobs", "2",
                               "--allow-large"], stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    deadline, victim = time.monotonic() + 60, None
    while time.monotonic() < deadline and victim is None:
        time.sleep(0.5)
        workers = [p for p in _children(parent.pid) if b"spawn_main" in open(f"/proc/{p}/cmdline", "rb").read()]
        # The quick run is over once a worker has run for a while: kill the busiest one.
        busy = [(int(open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()[11]), p) for p in workers]
        if len(busy) == 2 and max(busy)[0] > 300:  # over 3 s of CPU: the long run
            victim = max(busy)[1]
    assert victim, "the long run started"
    os.kill(victim, 9)
    _, err = parent.communicate(timeout=60)
    assert parent.returncode == 2, err
    assert "worker process died" in err and "cell duration=3000s, seed 1" in err and "Traceback" not in err, err
    assert "1 of 2 runs that finished" in err, err
    assert set(pl.read_csv(out / "results.csv")["duration"]) == {"2s"}
    assert leftovers(tmp_path) == []


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="parent-death signal is Linux's")
def test_a_sweep_killed_outright_leaves_debris_the_next_sweep_removes(tmp_path, capsys):
    # 60 Mbit/s for 3000 s: about 15 million packets, seconds of work, so the sweep is running when killed.
    long = BASE.replace('duration = "2s"', 'duration = "3000s"').replace('"4Mbps"', '"60Mbps"')
    sweep = tmp_path / "long.toml"
    sweep.write_text('[sweep]\nseeds = [1]\n' + long)
    out = tmp_path / "out"
    parent = subprocess.Popen([sys.executable, "-m", "rtcc", "sweep", str(sweep), "-o", str(out), "--jobs", "1"],
                              stderr=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not leftovers(tmp_path):
        time.sleep(0.1)
    time.sleep(0.5)
    parent.kill()
    parent.wait()
    assert leftovers(tmp_path), "a killed sweep cannot clean up after itself"
    small = write(tmp_path, "[sweep]\nseeds = [1]\n" + BASE, "small.toml")
    assert main(["sweep", str(small), "-o", str(out), "-j", "1"]) == 0
    assert "removed" in capsys.readouterr().err
    assert leftovers(tmp_path) == [] and (out / "results.csv").is_file()


def test_large_cells_are_refused_before_anything_runs(tmp_path, capsys):
    big = BASE.replace('capacity = "4Mbps"', 'capacity = "1000Gbps"').replace('duration = "2s"', 'duration = "20s"')
    path = write(tmp_path, '[sweep]\nseeds = [1]\n[sweep.grid]\n"flows[0].controller" = ["oracle", "gcc"]\n'
                 + big)
    err = error_of(capsys, ["sweep", path, "-o", tmp_path / "out"])
    assert "cell controller=oracle" in err and "million packets" in err and "--allow-large" in err
    assert not (tmp_path / "out").exists()
    scenario = tmp_path / "big.toml"
    scenario.write_text(big.replace("[scenario]", "").replace("[scenario.path.forward]", "[path.forward]")
                        .replace("[[scenario.flows]]", "[[flows]]"))
    err = error_of(capsys, ["compare", scenario, "-c", "oracle", "-o", tmp_path / "cmp"])
    assert "million packets" in err and "--allow-large" in err and not (tmp_path / "cmp").exists()


def test_a_huge_grid_is_refused_at_once(tmp_path, capsys):
    values = lambda n, unit: "[" + ", ".join(f'"{i + 1}{unit}"' for i in range(n)) + "]"
    path = tmp_path / "huge.toml"
    path.write_text(f'[sweep.grid]\n"path.forward.capacity" = {values(4000, "kbps")}\n'
                    f'"path.forward.delay" = {values(2500, "ms")}\n' + BASE)
    assert Sweep.from_file(path).cell_count() == 10_000_000
    start = time.monotonic()
    assert main(["sweep", str(path), "--dry-run"]) == 2
    assert time.monotonic() - start < 5, "counted, not built"
    assert "10000000 cells" in capsys.readouterr().err


def test_a_script_without_a_main_guard_is_told_why_its_workers_died(tmp_path):
    """Spawned workers import the main script; without the guard each one starts the sweep again,
    Python stops it, and the pool sees its workers die. The error says so, not "an abort in the core"."""
    sweep = write(tmp_path, '[sweep]\nname = "guard"\nseeds = [1, 2]\n' + BASE)
    script = tmp_path / "unguarded.py"
    script.write_text(f"import rtcc\nrtcc.Sweep.from_file({str(sweep)!r}).run(jobs=2)\n")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode != 0
    assert "worker process died" in done.stderr and "__main__" in done.stderr and str(script) in done.stderr, \
        done.stderr[-2000:]
    guarded = tmp_path / "guarded.py"
    guarded.write_text("if __name__ == '__main__':\n" + textwrap.indent(script.read_text(), "    "))
    done = subprocess.run([sys.executable, str(guarded)], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
