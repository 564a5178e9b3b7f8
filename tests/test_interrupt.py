"""Stopping: Ctrl-C, SIGTERM and SIGHUP end a run within a second (the core checks for them once
per simulated second), clean up, and exit with 128 + the signal's number; an interrupted sweep
keeps the runs that finished, for --resume."""
import json
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from rtcc.sweep import Sweep, finished_runs

# About 20 million packets, over 8 s of wall time: long enough to interrupt.
LONG = textwrap.dedent(
    """
    duration = "12000s"
    [path.forward]
    capacity = "25Mbps"
    delay = "20ms"
    queue = "50ms"
    [[flows]]
    controller = "fixed"
    params = { rate = "20Mbps" }
    """
)


def short_and_long_sweep(folder):
    """A sweep file of two cells, LONG for 2 s (a fraction of a second of work) and for 12000 s."""
    path = folder / "sw.toml"
    path.write_text('[sweep]\nseeds = [1]\n[sweep.grid]\nduration = ["2s", "12000s"]\n[scenario]\n'
                    + LONG.replace('duration = "12000s"\n', "").replace("[path.", "[scenario.path.")
                    .replace("[[flows]]", "[[scenario.flows]]"))
    return path


def leftovers(folder):
    return sorted(p.name for p in folder.iterdir() if ".tmp-" in p.name or ".old-" in p.name)


def start(argv, cwd):
    # As from a terminal: a shell that starts a job in the background makes it ignore SIGINT, and the
    # child would inherit that from whoever started the tests.
    return subprocess.Popen([sys.executable, "-m", "rtcc", *argv], cwd=cwd, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def stop(proc, sig, after_s):
    """Send ``sig`` ``after_s`` seconds after the start; (exit status, seconds it took to exit, stderr)."""
    time.sleep(after_s)
    assert proc.poll() is None, f"ended before the signal: {proc.stderr.read()}"
    proc.send_signal(sig)
    sent = time.monotonic()
    _, err = proc.communicate(timeout=30)
    return proc.returncode, time.monotonic() - sent, err


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_long_run_stops_within_a_second_of_a_signal_and_leaves_nothing(tmp_path, sig):
    (tmp_path / "long.toml").write_text(LONG)
    proc = start(["run", "long.toml", "-o", "out", "--no-plots"], tmp_path)
    code, took, err = stop(proc, sig, 3.0)
    assert code == 128 + sig, err
    assert took < 1.0, f"exited {took:.2f} s after {sig.name}"
    assert signal.Signals(sig).name in err, err
    assert not (tmp_path / "out").exists()
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupted_sweep_keeps_its_finished_runs_for_resume(tmp_path, sig):
    path = short_and_long_sweep(tmp_path)
    proc = start(["sweep", "sw.toml", "-o", "out", "-j", "2"], tmp_path)
    code, took, err = stop(proc, sig, 4.0)
    assert code == 128 + sig, err
    print(f"exited {took:.2f} s after {sig.name}")
    assert took < 1.0, f"exited {took:.2f} s after {sig.name} (workers stopped, finished runs written)"
    assert "1 of 2 runs that finished" in err and "leaked" not in err, err
    out = tmp_path / "out"
    assert "interrupted" in (out / "INCOMPLETE.txt").read_text()
    assert leftovers(tmp_path) == []
    # --resume would run only the long cell: the 2 s one is kept.
    done = finished_runs(Sweep.from_file(path), out)
    assert list(done) == [("duration=2s", 1)], done
    assert json.loads(done[("duration=2s", 1)])["flows"][0]["frames_displayed"] > 0


def test_resume_after_kill_9_reruns_only_the_unfinished_runs(tmp_path, monkeypatch, capsys):
    """A sweep killed outright keeps nothing in its output, but each run it finished was written
    into its temporary folder as it finished: --resume takes those and runs only the rest."""
    import rtcc.sweep
    from rtcc.cli import main

    path = short_and_long_sweep(tmp_path)
    proc = start(["sweep", "sw.toml", "-o", "out", "-j", "1"], tmp_path)
    deadline = time.monotonic() + 60
    while not list(tmp_path.glob(".out.tmp-*/runs/duration=2s/seed1/summary.json")):
        assert time.monotonic() < deadline and proc.poll() is None, "the short run never finished"
        time.sleep(0.05)
    proc.kill()  # kill -9, in the long run
    proc.wait()
    assert not (tmp_path / "out").exists() and leftovers(tmp_path), "nothing written, debris left"
    ran = []

    def stopped(tasks, *args):  # record what would run, and stop there (the long run is not needed)
        ran.extend((t[0]["duration"], t[2]) for t in tasks)
        return [(True, "stopped by the test")] * len(tasks), None

    monkeypatch.setattr(rtcc.sweep, "_execute", stopped)
    monkeypatch.chdir(tmp_path)
    assert main(["sweep", "sw.toml", "-o", "out", "--resume", "-j", "1"]) == 2
    assert ran == [("12000s", 1)], f"only the unfinished run: {ran}"
    assert "1 of 2 runs that finished" in capsys.readouterr().err
    done = finished_runs(Sweep.from_file(path), tmp_path / "out")
    assert list(done) == [("duration=2s", 1)]
    assert leftovers(tmp_path) == [], "the killed sweep's folder and the rescue are gone"


def test_a_reproduction_killed_outright_resumes_from_what_it_finished(tmp_path, monkeypatch, capsys):
    """rtcc reproduce keeps each result as it finishes (here C3G's quick test set, run by
    Context.map); after kill -9, --resume runs only the rest and writes the whole report."""
    import rtcc.sweep
    from rtcc.cli import main

    proc = start(["reproduce", "c3g", "--quick", "-o", "out", "-j", "1"], tmp_path)
    deadline = time.monotonic() + 60
    while len(list(tmp_path.glob(".out.tmp-*/cache/map/*.json"))) < 3:
        assert time.monotonic() < deadline and proc.poll() is None, "no result was kept"
        time.sleep(0.05)
    proc.kill()
    proc.wait()
    kept = len(list(tmp_path.glob(".out.tmp-*/cache/map/*.json")))
    assert not (tmp_path / "out").exists()
    ran, real = [], rtcc.sweep.parallel_map

    def counting(fn, items, *args, **kwargs):
        items = list(items)
        ran.append(len(items))
        return real(fn, items, *args, **kwargs)

    monkeypatch.setattr(rtcc.sweep, "parallel_map", counting)
    monkeypatch.chdir(tmp_path)
    assert "no interrupted reproduction of c3g (full set)" in error_of(capsys, ["reproduce", "c3g", "-o", "out", "--resume"])
    assert main(["reproduce", "c3g", "--quick", "-o", "out", "--resume", "-j", "1"]) == 0
    err = capsys.readouterr().err
    assert f"{kept} of " in err and "kept from the interrupted reproduction" in err, err
    assert (tmp_path / "out" / "checks.csv").is_file()
    total = ran[0] + kept
    assert ran[0] < total, (ran, kept)
    assert leftovers(tmp_path) == [], "the killed reproduction's folder and the moved cache are gone"


def error_of(capsys, argv) -> str:
    from rtcc.cli import main

    assert main([str(a) for a in argv]) == 2
    return capsys.readouterr().err


def test_an_interrupted_reproduction_keeps_its_results_beside_the_output(tmp_path):
    from rtcc.reproduce import can_resume

    proc = start(["reproduce", "c3g", "--quick", "-o", "out", "-j", "1"], tmp_path)
    deadline = time.monotonic() + 60
    while len(list(tmp_path.glob(".out.tmp-*/cache/map/*.json"))) < 2:
        assert time.monotonic() < deadline and proc.poll() is None, "no result was kept"
        time.sleep(0.05)
    code, took, err = stop(proc, signal.SIGTERM, 0)
    assert code == 128 + signal.SIGTERM and took < 1.0, (code, took, err)
    assert "--resume" in err, err
    assert [p.name.rsplit("-", 1)[1] for p in tmp_path.iterdir() if ".tmp-" in p.name] == ["interrupted"]
    assert can_resume("c3g", tmp_path / "out", quick=True) and not can_resume("c3g", tmp_path / "out")
