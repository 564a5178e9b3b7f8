"""The ``rtcc`` command line: outputs, error messages and exit codes, ``--force``, atomicity."""

import json
import os
import subprocess
import sys
import textwrap

import polars as pl
import pytest

import rtcc

from rtcc.cli import main

SCENARIO = textwrap.dedent(
    """
    duration = "5s"
    seed = 3
    [path.forward]
    capacity = "8Mbps"
    delay = "20ms"
    queue = "100ms"
    [[flows]]
    name = "video"
    controller = "fixed"
    params = { rate = "4Mbps" }
    """
)
RUN_FILES = ["summary.json", "facts.json", "scenario.json", "packets.parquet", "frames.parquet", "state.parquet",
             "capacity.parquet", "plots/throughput.png", "plots/delay.png", "plots/frame_delay_cdf.png"]


@pytest.fixture
def scenario(tmp_path):
    path = tmp_path / "link.toml"
    path.write_text(SCENARIO)
    return path


def leftovers(folder):
    """Temporary folders and files left behind by an atomic write."""
    return sorted(p.name for p in folder.iterdir() if ".tmp-" in p.name or ".old-" in p.name)


def error_of(capsys, argv, code=2) -> str:
    assert main([str(a) for a in argv]) == code
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err


def test_run_writes_all_files(tmp_path, scenario, capsys):
    out = tmp_path / "run"
    assert main(["run", str(scenario), "-o", str(out)]) == 0
    for name in RUN_FILES:
        assert (out / name).is_file(), name
    assert (out / "index.html").is_file()
    assert "fixed" in capsys.readouterr().out
    summary = json.loads((out / "summary.json").read_text())
    assert summary["scenario"] == "link" and summary["seed"] == 3
    scen = (out / "scenario.json").read_text()
    assert json.loads(scen)["flows"][0]["params"] == {"rate": "4Mbps"}
    assert scen == json.dumps(json.loads(scen), sort_keys=True, indent=2) + "\n", "keys sorted"
    assert pl.read_parquet(out / "frames.parquet").height > 0
    assert leftovers(tmp_path) == []


def test_summary_json_agrees_with_the_parquet_logs_written(tmp_path):
    """The metrics of summary.json recomputed from the run folder's Parquet files (the streamed
    packet log included): counts exactly, percentiles with NumPy's linear method."""
    import numpy as np

    path = tmp_path / "lossy.toml"
    path.write_text(textwrap.dedent("""
        duration = "6s"
        seed = 5
        [path.forward]
        capacity = "6Mbps"
        delay = "20ms"
        queue = "60ms"
        loss = 0.02
        [[flows]]
        controller = "gcc"
        recovery = { fec = 4 }
        [[flows]]
        kind = "cbr"
        rate = "1Mbps"
        start = "1s"
        """))
    out = tmp_path / "run"
    assert main(["run", str(path), "-o", str(out), "--no-plots"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    packets = pl.read_parquet(out / "packets.parquet")
    frames = pl.read_parquet(out / "frames.parquet")

    def pct(values, q):
        return float(np.percentile(np.asarray(values, dtype=np.float64), q)) if len(values) else None

    def same(reported, recomputed):
        return reported == recomputed if recomputed is None else reported == pytest.approx(recomputed, rel=1e-9)

    for i, f in enumerate(summary["flows"]):
        p = packets.filter(pl.col("flow") == i)
        got = p.filter(pl.col("recv_ns") >= 0)
        left = p.filter(pl.col("depart_ns") >= 0)
        active = f["stop_s"] - f["start_s"]
        assert f["packets_sent"] == p.height > 0
        assert f["packets_lost"] == p.filter(pl.col("dropped")).height
        assert f["retransmissions"] == p.filter(pl.col("kind") == 2).height
        assert f["fec_packets"] == p.filter(pl.col("kind") == 4).height
        assert f["throughput_bps"] == pytest.approx(got["size"].sum() * 8 / active, rel=1e-12)
        owd = ((got["recv_ns"] - got["send_ns"]) / 1e6).to_list()
        queuing = ((left["depart_ns"] - left["enqueue_ns"]) / 1e6).to_list()
        for q in (50, 95, 99):
            assert same(f["one_way_delay_ms"][f"p{q}"], pct(owd, q)), (i, q)
            assert same(f["queuing_delay_ms"][f"p{q}"], pct(queuing, q)), (i, q)
        fr = frames.filter(pl.col("flow") == i)
        assert f["frames_sent"] == fr.filter(pl.col("size") > 0).height
        assert f["frames_delivered"] == fr.filter(pl.col("complete_ns") >= 0).height
        assert f["frames_displayed"] == fr.filter(pl.col("display_ns") >= 0).height
        delay = (fr.filter(pl.col("delay_ns") >= 0)["delay_ns"] / 1e6).to_list()
        assert same(f["frame_delay_ms"]["p95"], pct(delay, 95)), i
    assert summary["flows"][0]["packets_lost"] > 0 and summary["flows"][0]["fec_packets"] > 0
    total = packets.filter(pl.col("recv_ns") >= 0)["size"].sum() * 8 / 6.0
    assert summary["total"]["throughput_bps"] == pytest.approx(total, rel=1e-12)


def test_run_overrides(tmp_path, scenario):
    out = tmp_path / "run"
    assert main(["run", str(scenario), "-o", str(out), "--seed", "9", "--controller", "oracle:fraction=0.5",
                 "--no-plots"]) == 0
    scen = json.loads((out / "scenario.json").read_text())
    assert scen["seed"] == 9 and scen["flows"][0]["controller"] == "oracle"
    assert scen["flows"][0]["params"] == {"fraction": 0.5}
    assert json.loads((out / "summary.json").read_text())["flows"][0]["controller"] == "oracle"
    assert not (out / "plots").exists()


def test_run_is_deterministic(tmp_path, scenario):
    a, b = tmp_path / "a", tmp_path / "b"
    assert main(["run", str(scenario), "-o", str(a), "--no-plots"]) == 0
    assert main(["run", str(scenario), "-o", str(b), "--no-plots"]) == 0
    for name in RUN_FILES:
        if name.endswith((".json", ".parquet")):
            assert (a / name).read_bytes() == (b / name).read_bytes(), name
    assert main(["run", str(scenario), "-o", str(tmp_path / "c"), "--no-plots", "--seed", "4"]) == 0
    assert json.loads((tmp_path / "c" / "summary.json").read_text())["seed"] == 4


@pytest.mark.parametrize(
    "old, new, words",
    [
        ('capacity = "8Mbps"', 'capacity = "20Mbmps"', ["capacity", "20Mbmps"]),
        ('capacity = "8Mbps"', "capacity = 20", ["capacity"]),
        ('delay = "20ms"', 'delay = "20"', ["delay"]),
        ('controller = "fixed"', 'controller = "nosuch"', ["controller", "nosuch"]),
        ('params = { rate = "4Mbps" }', 'params = { rate = "4Mbps", bogus = 1 }', ["bogus"]),
        ('params = { rate = "4Mbps" }', "params = {}", ["rate"]),
        ('duration = "5s"', 'duration = "5 parsecs"', ["duration"]),
    ],
)
def test_run_bad_scenario(tmp_path, scenario, capsys, old, new, words):
    scenario.write_text(SCENARIO.replace(old, new))
    err = error_of(capsys, ["run", scenario, "-o", tmp_path / "out"])
    assert err.startswith("rtcc: error: ")
    for word in words:
        assert word in err, (word, err)
    assert not (tmp_path / "out").exists() and leftovers(tmp_path) == []


def test_run_missing_file_and_bad_toml(tmp_path, capsys):
    err = error_of(capsys, ["run", tmp_path / "missing.toml", "-o", tmp_path / "out"])
    assert "missing.toml" in err
    bad = tmp_path / "bad.toml"
    bad.write_text('duration = "5s"\n[path.forward\n')
    err = error_of(capsys, ["run", bad, "-o", tmp_path / "out"])
    assert "bad.toml" in err and "TOML" in err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    "spec, words",
    [("nosuch", ["nosuch", "fixed", "oracle"]), ("fixed:rate", ["rate", "KEY=VALUE"]),
     ("fixed:speed=3", ["speed", "rate"]), ("fixed", ["rate", "required"]), ("fixed:rate=fast", ["rate", "fast"])],
)
def test_run_bad_controller_spec(tmp_path, scenario, capsys, spec, words):
    err = error_of(capsys, ["run", scenario, "-o", tmp_path / "out", "--controller", spec])
    for word in words:
        assert word in err, (word, err)
    assert not (tmp_path / "out").exists()


def test_force(tmp_path, scenario, capsys):
    out = tmp_path / "run"
    out.mkdir()
    (out / "old.txt").write_text("old")
    err = error_of(capsys, ["run", scenario, "-o", out, "--no-plots"])
    assert "--force" in err and (out / "old.txt").read_text() == "old"
    # A failing forced run leaves the old folder alone.
    assert main(["run", str(scenario), "-o", str(out), "--force", "--controller", "fixed:rate=fast"]) == 2
    assert (out / "old.txt").read_text() == "old"
    assert main(["run", str(scenario), "-o", str(out), "--force", "--no-plots"]) == 0
    assert not (out / "old.txt").exists() and (out / "summary.json").is_file()
    assert leftovers(tmp_path) == []


def test_existing_empty_folder_is_fine(tmp_path, scenario):
    out = tmp_path / "run"
    out.mkdir()
    assert main(["run", str(scenario), "-o", str(out), "--no-plots"]) == 0
    assert (out / "summary.json").is_file()


def test_failing_plot_leaves_nothing(tmp_path, scenario, monkeypatch):
    import rtcc.plots

    def boom(*args, **kwargs):
        raise RuntimeError("plotting failed")

    monkeypatch.setattr(rtcc.plots, "run_plots", boom)
    assert main(["run", str(scenario), "-o", str(tmp_path / "run")]) == 70  # an internal error
    with pytest.raises(RuntimeError, match="plotting failed"):
        main(["--debug", "run", str(scenario), "-o", str(tmp_path / "run")])
    assert not (tmp_path / "run").exists()
    assert leftovers(tmp_path) == []


def test_compare(tmp_path, scenario, capsys):
    out = tmp_path / "cmp"
    assert main(["compare", str(scenario), "-c", "fixed:rate=2Mbps", "-c", "oracle", "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "fixed:rate=2Mbps" in text and "oracle" in text
    rows = list(pl.read_csv(out / "comparison.csv").iter_rows(named=True))
    assert [r["controller"] for r in rows] == ["fixed:rate=2Mbps", "oracle"]
    assert set(rows[0]) >= {"throughput_mbps", "utilization_pct", "video_bitrate_mbps", "latency_p50_ms",
                            "latency_p95_ms", "latency_p99_ms", "frame_delay_p95_ms", "display_rate_fps", "freezes",
                            "loss_pct", "queuing_delay_p95_ms"}
    md = (out / "comparison.md").read_text()
    assert "| controller |" in md and "frame latency P95 ms" in md and "| oracle |" in md
    for name in ["throughput.png", "frame_delay.png", "frame_delay_cdf.png"]:
        assert (out / "plots" / name).is_file()
    assert (out / "runs" / "fixed_rate=2Mbps" / "summary.json").is_file()
    assert (out / "runs" / "oracle" / "summary.json").is_file()
    html = (out / "index.html").read_text()
    assert 'src="plots/throughput.png"' in html and "runs/oracle/index.html" in html
    # Pantheon's throughput-delay figure leads the page.
    assert (out / "plots" / "throughput_delay.png").is_file()
    assert html.index('src="plots/throughput_delay.png"') < html.index('src="plots/throughput.png"')


def test_a_controller_has_one_colour_on_every_chart_of_every_page():
    """The interactive charts and the PNGs take their colours from one palette and one mapping: a
    controller keeps its registry colour wherever it appears, and up to twenty labels get twenty colours."""
    from rtcc.colors import PALETTE, label_colors

    names = [c["name"] for c in rtcc.controllers()]
    # As many labels as the palette holds, two of them a second label of a controller on the chart
    # (the registry's controllers and both extra labels are more than 20: past 20 colours cycle).
    labels = names[: len(PALETTE) - 2] + ["oracle:fraction=0.7", "gcc (live)"]
    colors = label_colors(labels)
    assert len(set(colors.values())) == len(labels) == len(PALETTE), colors
    assert label_colors(["sqp", "gcc"])["gcc"] == colors["gcc"] == label_colors(["gcc"])["gcc"]
    assert colors["oracle:fraction=0.7"] != colors["oracle"]


def test_compare_runs_on_the_sweep_engine_with_the_same_results(tmp_path, scenario):
    # Worker processes (the default: one per CPU) or this process (-j 1): the same folder.
    specs = ["-c", "fixed:rate=2Mbps", "-c", "gcc", "-c", "sqp"]
    assert main(["compare", str(scenario), *specs, "-o", str(tmp_path / "one"), "-j", "1"]) == 0
    assert main(["compare", str(scenario), *specs, "-o", str(tmp_path / "two"), "-j", "2"]) == 0
    assert (tmp_path / "one" / "comparison.csv").read_bytes() == (tmp_path / "two" / "comparison.csv").read_bytes()
    for run in sorted((tmp_path / "one" / "runs").iterdir()):
        for name in ("summary.json", "frames.parquet", "packets.parquet"):
            assert (run / name).read_bytes() == (tmp_path / "two" / "runs" / run.name / name).read_bytes(), run.name
        assert (run / "plots" / "throughput.png").is_file() and (run / "index.html").is_file()


def test_compare_fails_atomically(tmp_path, scenario, capsys):
    out = tmp_path / "cmp"
    err = error_of(capsys, ["compare", scenario, "-c", "oracle", "-c", "fixed:rate=fast", "-o", out])
    assert "fast" in err
    assert not out.exists() and leftovers(tmp_path) == []


def test_compare_default_controllers(tmp_path, scenario, capsys):
    import rtcc

    out = tmp_path / "cmp"
    assert main(["compare", str(scenario), "-o", str(out), "--fixed-rate", "3Mbps"]) == 0
    labels = pl.read_csv(out / "comparison.csv")["controller"].to_list()
    assert "fixed:rate=3Mbps" in labels and "oracle" in labels
    runnable = [c["name"] for c in rtcc.controllers()
                if all(p["default"] != "" or p["name"] == "rate" for p in c["params"])]
    assert len(labels) == len(runnable)


def test_controllers(capsys):
    assert main(["controllers"]) == 0
    out = capsys.readouterr().out
    assert "fixed" in out and "oracle" in out and "rate" in out and "fraction" in out
    assert "(required)" in out
    # The per-flow media fields every controller shares, with their defaults.
    for line in ["min_bitrate    = 30kbps", "degradation    = balanced", "min_fps        = 10"]:
        assert line in out, line


def test_listed_media_fields_are_scenario_fields(tmp_path):
    from rtcc.cli import MEDIA_FIELDS
    from rtcc.scenario import Scenario

    values = {"fps": "30", "min_fps": "10", "min_bitrate": '"150kbps"', "start_bitrate": '"150kbps"',
              "max_bitrate": '"1.5Mbps"', "degradation": '"maintain-framerate"', "payload": '"1200B"',
              "pushback": "false", "frame_dropper": "false", "vbv": "1.5"}
    assert {n for n, _, _ in MEDIA_FIELDS} == set(values)
    fields = "\n".join(f"{k} = {v}" for k, v in values.items())
    path = tmp_path / "range.toml"
    path.write_text(f'duration = "2s"\n[path.forward]\ncapacity = "2Mbps"\n[[flows]]\ncontroller = "gcc"\n{fields}\n')
    Scenario.from_file(path).validate()
    path.write_text(path.read_text().replace('"maintain-framerate"', '"fast"'))
    with pytest.raises(Exception, match="degradation"):
        Scenario.from_file(path).validate()


def test_the_next_run_removes_what_a_killed_run_left(tmp_path, scenario, capsys):
    out = tmp_path / "out"
    # A process killed with SIGKILL in the middle of writing `out` cannot clean up.
    code = ("import os, signal\nfrom rtcc.atomic import atomic_dir\n"
            f"with atomic_dir({str(out)!r}) as d:\n"
            "    (d / 'partial.parquet').write_bytes(b'x' * 1000)\n"
            "    os.kill(os.getpid(), signal.SIGKILL)\n")
    killed = subprocess.run([sys.executable, "-c", code], cwd=tmp_path)
    assert killed.returncode == -9
    assert len(leftovers(tmp_path)) == 1, "the killed run left its temporary folder"
    # A temporary folder of a live process (this one) is not touched.
    alive = tmp_path / f".out.tmp-{os.getpid()}-live"
    alive.mkdir()
    assert main(["run", str(scenario), "-o", str(out), "--no-plots"]) == 0
    assert "left by an interrupted run" in capsys.readouterr().err
    assert leftovers(tmp_path) == [alive.name]
    assert (out / "summary.json").exists()


def test_an_unexpected_error_is_one_line_unless_debug(monkeypatch, scenario, capsys):
    import rtcc.cli

    def broken(args):
        raise ZeroDivisionError("boom")

    monkeypatch.setattr(rtcc.cli, "cmd_validate", broken)
    assert main(["validate", str(scenario)]) == 70
    err = capsys.readouterr().err
    assert "internal error: ZeroDivisionError: boom" in err and "Traceback" not in err
    with pytest.raises(ZeroDivisionError):
        main(["--debug", "validate", str(scenario)])


def test_a_run_too_large_for_memory_is_refused_unless_allowed(tmp_path, capsys):
    big = tmp_path / "big.toml"
    big.write_text(SCENARIO.replace('"8Mbps"', '"100Gbps"'))
    err = error_of(capsys, ["run", big, "-o", tmp_path / "out"])
    assert "million packets" in err and "--allow-large" in err
    assert not (tmp_path / "out").exists()


def test_validate(tmp_path, scenario, capsys):
    bad = tmp_path / "bad.toml"
    bad.write_text(SCENARIO.replace('"8Mbps"', '"8Mbmps"'))
    assert main(["validate", str(scenario)]) == 0
    assert capsys.readouterr().out == f"{scenario}: OK\n"
    assert main(["validate", str(scenario), str(bad), str(tmp_path / "missing.toml")]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].endswith(": OK")
    assert lines[1].startswith(f"{bad}: error:") and "capacity" in lines[1]
    assert lines[2].startswith(f"{tmp_path / 'missing.toml'}: error:")


def test_validate_reports_every_error_of_a_file_with_what_was_meant(tmp_path, capsys):
    """Not only the first: a wrong-case unit (m is milli), a misspelt key, an unknown queue kind,
    an ambiguous duration and a misspelt controller, each with the nearest valid spelling."""
    bad = tmp_path / "many.toml"
    bad.write_text(textwrap.dedent("""
        duration = "5s"
        [path.forward]
        capacity = "5mbps"
        dealy = "20ms"
        queue = { kind = "codell" }
        [[flows]]
        controller = "gccc"
        frame_jitter = "1m"
    """))
    assert main(["validate", str(bad)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert all(line.startswith(f"{bad}: error: ") for line in lines), lines
    text = "\n".join(lines)
    for field, meant in [("path.forward.capacity", 'did you mean "5Mbps" (megabits per second)?'),
                         ("path.forward.dealy", 'did you mean "delay"?'),
                         ("path.forward.queue", 'did you mean "codel"?'),
                         ("flows[0].frame_jitter", '"1min" (minutes) or "1ms" (milliseconds)?'),
                         ("flows[0].controller", 'did you mean "gcc"?')]:
        assert any(f": {field}: " in line and meant in line for line in lines), f"{field}: {meant}\n{text}"
    assert len(lines) == 5, text


def test_validate_checks_every_cell_of_a_sweep_file(tmp_path, capsys):
    base = SCENARIO.replace("[path.forward]", "[scenario.path.forward]")
    base = base.replace("[[flows]]", "[[scenario.flows]]")
    base = "[scenario]\n" + base
    good = tmp_path / "sweep.toml"
    good.write_text('[sweep.grid]\n"path.forward.capacity" = ["4Mbps", "8Mbps"]\n' + base)
    assert main(["validate", str(good)]) == 0
    assert capsys.readouterr().out == f"{good}: OK (sweep, 2 cells)\n"
    bad = tmp_path / "bad-sweep.toml"
    bad.write_text('[sweep.grid]\n"path.forward.capacity" = ["4Mbps", "8Mbmps"]\n' + base)
    assert main(["validate", str(bad)]) == 1
    out = capsys.readouterr().out
    assert out.startswith(f"{bad}: error:") and "capacity" in out, out


def test_extreme_inputs_get_named_errors_not_tracebacks_or_wrong_results(tmp_path, capsys):
    # An infinite rate used to pass validation and become an unlimited link.
    inf = tmp_path / "inf.toml"
    inf.write_text(SCENARIO.replace('"8Mbps"', '"1e300Gbps"'))
    assert main(["validate", str(inf)]) == 1
    assert "largest accepted rate" in capsys.readouterr().out
    # A trace offset whose time overflows used to wrap: utilisation 2082, packets leaving before
    # they were queued.
    trace = tmp_path / "huge.trace"
    trace.write_text("1\n18446744073710\n")
    wrapped = tmp_path / "wrapped.toml"
    wrapped.write_text(SCENARIO.replace('capacity = "8Mbps"', f'trace = "{trace.name}"'))
    assert main(["validate", str(wrapped)]) == 1
    out = capsys.readouterr().out
    assert f"{trace.name}:2:" in out and "largest accepted" in out, out
    # Tracebacks before: ValueError, OverflowError, RecursionError.
    err = error_of(capsys, ["trace", "lte", "--mean", "1e300Gbps", "-o", tmp_path / "x.trace"])
    assert "largest accepted rate" in err
    with pytest.raises(SystemExit) as exit_:  # an argparse usage error
        main(["trace", "lte", "--seed", "18446744073709551616", "-o", str(tmp_path / "x.trace")])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "18446744073709551615" in err and "Traceback" not in err
    err = error_of(capsys, ["run", "/dev/zero", "-o", tmp_path / "zero"])
    assert "larger than 64 MiB" in err
    assert main(["validate", "/dev/zero"]) == 1
    assert "larger than 64 MiB" in capsys.readouterr().out
    deep = tmp_path / "deep.toml"
    deep.write_text("a = " + "[" * 100_000 + "]" * 100_000 + "\n")
    err = error_of(capsys, ["run", deep, "-o", tmp_path / "out"])
    assert "nested too deeply" in err


def test_trace_lte(tmp_path, capsys):
    out = tmp_path / "lte.trace"
    assert main(["trace", "lte", "--seed", "3", "--duration", "10s", "--mean", "6Mbps", "-o", str(out)]) == 0
    values = [int(line) for line in out.read_text().splitlines()]
    assert values and values[-1] > 0
    assert all(a <= b for a, b in zip(values, values[1:])), "non-decreasing"
    mean_mbps = len(values) * 1500 * 8 / 10 / 1e6
    assert 2 < mean_mbps < 12, mean_mbps
    err = error_of(capsys, ["trace", "lte", "-o", out])
    assert "--force" in err
    assert main(["trace", "lte", "--seed", "4", "--duration", "10s", "-o", str(out), "--force"]) == 0
    err = error_of(capsys, ["trace", "lte", "--duration", "ten", "-o", tmp_path / "x.trace"])
    assert "--duration" in err and not (tmp_path / "x.trace").exists()
    assert leftovers(tmp_path) == []


def test_bench_single(capsys):
    assert main(["bench", "--case", "single"]) == 0
    out = capsys.readouterr().out
    assert "single" in out and "x" in out


def test_bench_a_scaling_case_reports_its_own_peak_memory(capsys):
    """Each case runs in a fresh process, so its peak is its own: the interpreter plus a small run,
    not what an earlier case left in the allocator."""
    assert main(["bench", "--case", "flows-10"]) == 0
    row = capsys.readouterr().out.splitlines()[-1].split()
    assert row[0] == "flows-10" and row[1] == "10"
    assert 100_000 < int(row[2]) < 150_000, row  # 10 × 1.8 Mbit/s of ~1,200-byte packets, 60 s
    assert 5 < float(row[-1]) < 200, row  # peak MB


def test_console_entry_point(tmp_path):
    """The installed command: no traceback and exit status 2 on a user error."""
    proc = subprocess.run([sys.executable, "-m", "rtcc", "run", str(tmp_path / "none.toml"), "-o",
                           str(tmp_path / "o")], capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stderr.startswith("rtcc: error:") and "Traceback" not in proc.stderr
    proc = subprocess.run([sys.executable, "-m", "rtcc", "--version"], capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.startswith("rtcc ")


def test_the_command_line_starts_without_polars():
    # `rtcc --help` and the live commands do not need the DataFrame stack (about 0.1 s to
    # import); it is loaded on first use (rtcc/__init__.py). Timing is measured, not tested:
    # 0.31 s -> 0.12 s -> 0.06 s for `rtcc --help` on the development machine.
    code = ("import sys, contextlib, io, rtcc.cli\n"
            "with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):\n"
            "    rtcc.cli.main(['--help'])\n"
            "print(sorted(m for m in ('polars', 'numpy', 'pyarrow', 'matplotlib', 'importlib.metadata')"
            " if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]", done.stdout


def test_run_without_plots_leaves_the_logs_to_the_core(tmp_path):
    # `rtcc run --no-plots` writes its four Parquet logs from the core (rtcc_sim::tables) and
    # imports no DataFrame library: 0.58 s -> 0.17 s for a 60 s one-flow Cubic run on the
    # development machine (README, "Speed"). The files read back with polars as documented.
    scenario = tmp_path / "s.toml"
    scenario.write_text('name = "fast"\nduration = "3s"\n[path.forward]\ncapacity = "5Mbps"\ndelay = "10ms"\n'
                        'queue = "20pkts"\nloss = { model = "random", p = 0.01 }\n'
                        '[[flows]]\ncontroller = "gcc"\n[[flows]]\nkind = "tcp"\ncontroller = "cubic"\n')
    out = tmp_path / "run"
    code = ("import sys, rtcc.cli\n"
            f"code = rtcc.cli.main(['run', {str(scenario)!r}, '-o', {str(out)!r}, '--no-plots'])\n"
            "print(code, sorted(m for m in ('polars', 'numpy', 'pyarrow', 'matplotlib') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip().splitlines()[-1] == "0 []", done.stdout
    logs = {t: pl.read_parquet(out / f"{t}.parquet") for t in ("packets", "frames", "state", "capacity")}
    assert logs["packets"].columns == ["flow", "seq", "kind", "size", "frame", "send_ns", "enqueue_ns",
                                       "depart_ns", "recv_ns", "dropped", "ecn"]
    assert logs["frames"].columns[-8:] == ["delay_ns", "keyframe", "psnr_db", "height", "display_ns",
                                           "latency_ns", "recovered", "unrecoverable"]
    assert logs["state"].schema["signal"] == pl.String and logs["capacity"].height == 30
    summary = json.loads((out / "summary.json").read_text())
    for i, flow in enumerate(summary["flows"]):
        mine = logs["packets"].filter(pl.col("flow") == i)
        assert mine.height == flow["packets_sent"], flow["name"]
        assert mine.filter(pl.col("recv_ns") < 0).height >= flow["packets_lost"] > 0, flow["name"]
    # The in-memory result is the same Arrow data the files were written from.
    result = rtcc.Scenario.from_file(scenario).run()
    for name, frame in logs.items():
        assert getattr(result, name).equals(frame), name


def test_run_writes_a_mahimahi_log_of_the_bottleneck(tmp_path):
    import subprocess
    import sys

    scenario = tmp_path / "s.toml"
    scenario.write_text('name = "mm"\nduration = "2s"\n[path.forward]\ncapacity = "1.2Mbps"\ndelay = "10ms"\n'
                        'queue = "5pkts"\n[[flows]]\nkind = "cbr"\nrate = "2Mbps"\npacket_size = "1500B"\n')
    out = tmp_path / "run"
    done = subprocess.run([sys.executable, "-m", "rtcc", "run", str(scenario), "-o", str(out), "--no-plots",
                           "--mahimahi-log"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = (out / "uplink.log").read_text().splitlines()
    assert lines[2] == "# base timestamp: 0"
    kinds = [line.split()[1] for line in lines[3:]]
    times = [int(line.split()[0]) for line in lines[3:]]
    assert times == sorted(times), "events in time order"
    # 1.2 Mbit/s = 100 opportunities of 1500 B per second; 2 Mbit/s offered into it: drops.
    assert 195 <= kinds.count("#") <= 200, kinds.count("#")
    arrivals, departures, drops = kinds.count("+"), kinds.count("-"), kinds.count("d")
    assert drops > 0 and departures > 0
    # Every arrival left or was dropped, but for the few still queued at the end (5 packets of queue).
    assert 0 <= arrivals - departures - drops <= 6, (arrivals, departures, drops)


TWO_HOPS = textwrap.dedent(
    """
    duration = "6s"
    [[path.hops]]
    name = "access"
    forward = { capacity = "3Mbps", delay = "10ms", queue = "100ms" }
    [[path.hops]]
    name = "core"
    forward = { schedule = [["0s", "5Mbps"], ["3s", "2Mbps"]], delay = "15ms", queue = "100ms" }
    [[flows]]
    name = "long"
    kind = "cbr"
    rate = "4Mbps"
    [[flows]]
    name = "cross"
    kind = "cbr"
    rate = "500kbps"
    hops = ["core"]
    """
)


def test_run_of_a_two_hop_path_writes_each_hops_section_capacity_and_plots(tmp_path, capsys):
    scenario = tmp_path / "two-hops.toml"
    scenario.write_text(TWO_HOPS)
    out = tmp_path / "run"
    assert main(["run", str(scenario), "-o", str(out)]) == 0
    for name in RUN_FILES:
        assert (out / name).is_file(), name
    summary = json.loads((out / "summary.json").read_text())
    assert [h["name"] for h in summary["hops"]] == ["access", "core"]
    access, core = (h["forward"] for h in summary["hops"])
    for link in (access, core):
        assert link["arrived_packets"] == (link["departed_packets"] + link["dropped_packets"]
                                           + link["queued_at_end_packets"])
    assert access["dropped_packets"] > 0 and access["utilization"] > 0.98
    # The capacity log: the tightest hop (3 then 2 Mbit/s) and each hop's own.
    cap = pl.read_parquet(out / "capacity.parquet")
    assert cap.columns == ["time_ns", "bps", "bps.access", "bps.core"]
    at = {t: row for t, *row in cap.select("time_ns", "bps", "bps.access", "bps.core").iter_rows()}
    assert at[1_000_000_000] == [3e6, 3e6, 5e6]
    assert at[4_000_000_000] == [2e6, 3e6, 2e6]
    # The long flow got its tightest hop: 3 then about 1.5 Mbit/s (2 minus the cross flow).
    long = summary["flows"][0]
    assert 1.9e6 < long["throughput_bps"] < 2.6e6, long["throughput_bps"]
    assert summary["total"]["utilization"] is None


def test_a_mahimahi_log_of_a_two_hop_path_is_refused_before_the_run(tmp_path, capsys):
    scenario = tmp_path / "two-hops.toml"
    scenario.write_text(TWO_HOPS)
    err = error_of(capsys, ["run", scenario, "-o", tmp_path / "run", "--mahimahi-log"])
    assert "--mahimahi-log" in err and "2 hops" in err
    assert not (tmp_path / "run").exists()


def test_errors_escape_control_characters_in_names(tmp_path, capsys):
    """A file name holding a newline and a terminal escape sequence cannot forge a second `rtcc:`
    line or repaint the terminal: the error shows it escaped."""
    err = error_of(capsys, ["run", str(tmp_path / "a\nrtcc: all good\x1b[2J.toml"), "-o", tmp_path / "o"])
    assert err.count("\n") == 1 and "\\n" in err and "\\x1b" in err and "\x1b" not in err, err


def test_rmcat_refuses_a_seed_count_it_could_never_run(tmp_path, capsys):
    err = error_of(capsys, ["rmcat", "--seeds", "1000000000000", "-o", tmp_path / "o"])
    assert "--seeds" in err and "from 1 to 1000" in err, err
    assert not (tmp_path / "o").exists()


def recomputed_frame_metrics(frames: pl.DataFrame, end_s: float) -> dict:
    """docs/metrics.md's frame delay and freezes, from a flow's raw frame columns: the delay from
    each frame's own completion (a frame never completed waits until the earliest completion of a
    later frame, else the end of the run), freezes over the completions in time order."""
    import numpy as np

    sent = frames.filter(pl.col("packets") > 0).sort("frame")
    capture, complete = sent["capture_ns"].to_list(), sent["complete_ns"].to_list()
    delays, following = [], end_s * 1e9
    for c, done in zip(reversed(capture), reversed(complete)):
        delays.append(((done if done >= 0 else following) - c) / 1e6)
        following = min(following, done) if done >= 0 else following
    times = sorted(t / 1e9 for t in complete if t >= 0)
    mean = (times[-1] - times[0]) / (len(times) - 1)
    gaps = [b - a for a, b in zip(times, times[1:]) if b - a > max(3 * mean, mean + 0.150)]
    return {"p50": float(np.percentile(delays, 50)), "p95": float(np.percentile(delays, 95)),
            "p99": float(np.percentile(delays, 99)), "freezes": len(gaps), "freeze_time_s": sum(gaps),
            "repaired_late": sum(a > b >= 0 for a, b in zip(complete, complete[1:]) if a >= 0)}


def test_frame_delay_and_freezes_are_what_the_docs_define(tmp_path):
    """On a lossy link with NACK repairs, frames complete out of order: the summary's frame delay
    percentiles and freezes are docs/metrics.md's, recomputed from frames.parquet (until 2026-11 a
    repaired frame took a later frame's earlier completion, and freezes were counted in frame
    order)."""
    path = tmp_path / "repairs.toml"
    path.write_text(textwrap.dedent("""
        duration = "20s"
        seed = 3
        [path.forward]
        capacity = "3Mbps"
        delay = "30ms"
        queue = "80ms"
        loss = 0.03
        [[flows]]
        controller = "gcc"
        encoder = "lagged"
        """))
    out = tmp_path / "run"
    assert main(["run", str(path), "-o", str(out), "--no-plots"]) == 0
    f = json.loads((out / "summary.json").read_text())["flows"][0]
    want = recomputed_frame_metrics(pl.read_parquet(out / "frames.parquet"), 20.0)
    assert want["repaired_late"] > 10, want
    for q in ("p50", "p95", "p99"):
        assert f["frame_delay_ms"][q] == pytest.approx(want[q], rel=1e-9), q
    assert f["freezes"] == want["freezes"] and f["freeze_time_s"] == pytest.approx(want["freeze_time_s"], abs=1e-9)


def test_an_error_inside_the_temporary_output_names_the_output(tmp_path, scenario, capsys, monkeypatch):
    """A disk error while the run folder is written names the path the user asked for, not the
    hidden temporary sibling it is written into."""
    from pathlib import Path

    import rtcc.result

    def full_disk(result, folder, **kwargs):
        raise OSError(28, "No space left on device", str(Path(folder) / "plots" / "rates.png"))

    monkeypatch.setattr(rtcc.result, "write_run", full_disk)
    err = error_of(capsys, ["run", scenario, "-o", tmp_path / "out"])
    assert f"{tmp_path / 'out' / 'plots' / 'rates.png'}: No space left on device" in err, err
    assert ".tmp-" not in err, err


def test_bundled_examples_are_listed_and_usable_by_name_from_anywhere(tmp_path, monkeypatch, capsys):
    """`rtcc examples` lists the package's scenarios and sweeps; every command takes one by name
    (and by its checkout path) where no such file exists, and each bundled file is valid (those
    over the mahimahi traces, which are not bundled, aside)."""
    from rtcc.examples import examples

    monkeypatch.chdir(tmp_path)
    assert main(["examples"]) == 0
    out = capsys.readouterr().out
    assert "demo/step" in out and "gcc_aqm/e1_alone" in out and "rmcat/5.1-variable-capacity-single-flow" in out
    names = [e.name for e in examples()]
    assert len(names) > 30, names
    main(["validate", *names])
    for line in capsys.readouterr().out.splitlines():
        assert line.endswith(": OK") or "OK (sweep" in line or "shared/traces" in line, line
    assert main(["validate", "experiments/demo/step.toml", "demo/step.toml"]) == 0
    capsys.readouterr()
    assert main(["run", "demo/step", "-o", str(tmp_path / "out"), "--no-plots",
                 "--controller", "fixed:rate=5Mbps"]) == 0
    assert json.loads((tmp_path / "out" / "summary.json").read_text())["scenario"] == "step-20-5-20"
    capsys.readouterr()
    assert main(["validate", "demo/nope"]) == 1
    assert "rtcc examples" in capsys.readouterr().out


def test_run_and_controllers_name_a_controllers_media_defaults(tmp_path, scenario, capsys):
    out = tmp_path / "run"
    assert main(["run", str(scenario), "-o", str(out), "--no-plots", "--controller", "c3g"]) == 0
    printed = capsys.readouterr().out
    assert 'its controller\'s media defaults: degradation = "disabled", frame_dropper = false, vbv = 1.0' in printed
    facts = json.loads((out / "facts.json").read_text())
    assert facts["flows"][0]["media"]["controller_defaults"] == ["degradation", "frame_dropper", "vbv"]
    assert main(["run", str(scenario), "-o", str(tmp_path / "gcc"), "--no-plots", "--controller", "gcc"]) == 0
    assert "media defaults" not in capsys.readouterr().out
    assert main(["controllers"]) == 0
    listing = capsys.readouterr().out
    assert '(its video flows default to degradation = "disabled", frame_dropper = false, vbv = 1.0;' in listing
