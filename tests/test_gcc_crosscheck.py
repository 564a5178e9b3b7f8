"""rtcc's GCC against independent implementations on the same packets (bench/gcc_crosscheck/,
docs/gcc_crosscheck.md). The short step case runs here; the pion side needs Go and the Go module
proxy, the aiortc side `pip install -r bench/gcc_crosscheck/aiortc/requirements.txt` (`make test`
tries both); each is skipped with the reason when it cannot run.

Tolerances, from the measurements in docs/gcc_crosscheck.md:
- rtcc replayed open loop against rtcc's own closed-loop run, after the first over-use: median
  1.0 % apart (the replay's reports come every 50 ms, the run's also at each frame's end), checked
  below 5 %.
- the receive side's Kalman offset m against aiortc's (the same constants, the same 5 ms groups
  with `grouping = "burst"`): median |difference| 0.008 ms, correlation 0.96, checked below 0.05 ms
  and above 0.9; with one group per frame (the seed's reading) 0.021 ms: burst groups must stay
  closer, which is the evidence that they are libwebrtc's.
- pion's pkg/gcc is draft-02's design (a Kalman filter, no hold state, its own thresholds), not
  today's goog_cc, so only the reaction to the drop is compared: both delay-based estimates under
  5.5 Mbit/s within 1.5 s of the step from 20 to 5 Mbit/s (measured: rtcc 4.4 at 10.3 s, pion 3.9
  at 10.57 s).
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parent.parent
HERE = REPO / "bench" / "gcc_crosscheck"


def _load():
    spec = importlib.util.spec_from_file_location("crosscheck", HERE / "crosscheck.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["crosscheck"] = module
    spec.loader.exec_module(module)
    return module


X = _load()
STEP = next(c for c in X.CASES if c.name == "step")


@pytest.fixture(scope="module")
def tools():
    pion, pion_why = X.pion_binary()
    aiortc, aiortc_why = X.aiortc_module()
    for why in (pion_why, aiortc_why):
        if why:
            print(f"gcc crosscheck: skipped: {why}")
    return pion, pion_why, aiortc, aiortc_why


@pytest.fixture(scope="module")
def step(tools):
    pion, _, aiortc, _ = tools
    return X.run_case(STEP, pion, aiortc)


def test_the_open_loop_replay_reproduces_the_closed_loop_run(step):
    d = step["differences"]["rtcc webrtc vs rtcc webrtc, closed loop (the run)"]
    print(f"rtcc replayed vs its own run: {d:.1%}")
    assert d < 0.05, f"the replay of rtcc's own log drifts {d:.1%} from the run it logged"


def test_burst_groups_give_the_kalman_offset_of_libwebrtcs_receive_side(tools, step):
    if tools[2] is None:
        pytest.skip(tools[3])
    burst = step["offset_differences"]["rtcc paper, burst groups vs aiortc"]
    frame = step["offset_differences"]["rtcc paper, frame groups vs aiortc"]
    print(f"Kalman offset vs aiortc: burst {burst}, frame {frame}")
    assert burst["median_abs_ms"] < 0.05 and burst["correlation"] > 0.9, burst
    assert burst["median_abs_ms"] < frame["median_abs_ms"], (
        "libwebrtc groups packets in 5 ms bursts: rtcc's burst grouping should follow aiortc's "
        f"offset more closely than frame grouping ({burst} vs {frame})")


def test_pion_and_rtcc_both_back_off_at_the_drop(tools, step):
    if tools[0] is None:
        pytest.skip(tools[1])
    grid_s = step["grid"] / 1e6
    at = np.searchsorted(grid_s, 11.5)
    for name in ("rtcc webrtc", "pion"):
        value = step["series"][name][at]
        assert value < 5.5e6, f"{name}'s delay-based estimate is {value / 1e6:.2f} Mbit/s 1.5 s after the drop to 5"


def test_the_replay_tools_are_deterministic(tools):
    pion, _, aiortc, _ = tools
    a = X.run_case(STEP, pion, aiortc)
    b = X.run_case(STEP, pion, aiortc)
    assert a["differences"] == b["differences"]
    for name in a["series"]:
        if name == "pion":
            continue
        assert np.array_equal(a["series"][name], b["series"][name], equal_nan=True), name
    if "pion" in a["series"]:
        # pion hands each report to two goroutines, and which finishes first is Go's scheduler's
        # choice (bench/gcc_crosscheck/pion/README.md, "Determinism"): one thread makes it the same
        # in practice, but a stall of the process mid-report can let sysmon reorder them. Seen
        # once in CI (2026-11-30): equal at first, then up to 0.4 % apart near the end. So: equal but
        # for at most a tenth of the grid, each point within 1 %.
        x, y = a["series"]["pion"], b["series"]["pion"]
        differ = ~np.isclose(x, y, rtol=0, atol=0, equal_nan=True)
        assert differ.mean() <= 0.1, f"pion: {differ.mean():.1%} of the grid differs between two replays"
        assert np.allclose(x, y, rtol=0.01, equal_nan=True), "pion: two replays more than 1 % apart"


def test_the_pion_tools_own_tests():
    go = shutil.which("go")
    if go is None:
        pytest.skip("the Go toolchain is not installed")
    done = subprocess.run([go, "test", "."], cwd=HERE / "pion", capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_report_is_written(tmp_path, tools):
    assert X.main(["-o", str(tmp_path), "--quick"]) == 0
    assert (tmp_path / "trajectories.png").stat().st_size > 10_000
    assert "step" in (tmp_path / "summary.json").read_text()
