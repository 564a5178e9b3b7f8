"""SCReAM v2 against Ericsson's reference (ScreamV2Tx at c8f84c3), on the same packets
(`bench/scream_crosscheck/`): the issue's bar is a median difference of the target bitrate within
10 % after the first second on the step, LTE-like and two-flow cases (and the L4S case over
DualPI2, whose CE marks are replayed with the packets). Measured: 0.0-0.1 %, and 0.0-0.1 % with
the run's frames fed to both (the stream's RTP-queue and frame-size terms). Runs where
`../shared/reference` sits next to the repository and a C++ compiler is installed; skipped with
the reason otherwise."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent.parent / "bench" / "scream_crosscheck"


@pytest.fixture(scope="module")
def crosscheck():
    spec = importlib.util.spec_from_file_location("scream_crosscheck", HERE / "crosscheck.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["scream_crosscheck"] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def binary(crosscheck, tmp_path_factory):
    built, why = crosscheck.build_reference(tmp_path_factory.mktemp("scream") / "scream-replay")
    if built is None:
        pytest.skip(why)
    return built


@pytest.mark.parametrize("case", ["step", "lte", "two", "l4s"])
def test_rtcc_scream_follows_the_reference_on_the_same_packets(crosscheck, binary, case):
    result = crosscheck.run_case(case, binary)
    d = result["differences"]
    print(case, {k: f"{v:.1%}" for k, v in d.items()})
    # The closed-loop run is not asserted: open loop the encoder follows the run's target, not
    # the replayed one (docs/scream.md, "Against the reference").
    # The bar is 10 %; the port is within 0.1 %, so 2 % is asserted: a regression of a
    # few percent shows here before it reaches the bar.
    assert d["rtcc scream vs Ericsson scream"] < 0.02, d
    assert d["cwnd: rtcc scream vs Ericsson scream"] < 0.02, d
    assert d["with frames: rtcc scream vs Ericsson scream"] < 0.02, d


def test_the_l4s_case_carries_ce_marks(crosscheck):
    log, _, _ = crosscheck.packet_log("l4s")
    assert (log["ecn"] == 3).sum() > 100, "DualPI2 marked the flow's packets CE"
    assert (log["ecn"] == 1).sum() > 0.9 * len(log.filter(log["recv_us"] >= 0)) - (log["ecn"] == 3).sum()


def test_without_the_reference_the_report_says_why(crosscheck, tmp_path):
    files, why = crosscheck.reference_sources(tmp_path / "nowhere")
    assert not files and "reference SCReAM is not at" in why and "nowhere" in why


def test_the_replay_names_a_bad_codepoint_or_frame():
    """Bad columns given to the open-loop replay get errors that name them, not a conversion
    error or a silent mask (a codepoint is two bits; frames come in capture order)."""
    from rtcc import _core
    from rtcc.scenario import Scenario

    sc = Scenario.from_dict({"name": "replay", "duration": "2s", "path": {"forward": {"capacity": "2Mbps"}},
                             "flows": [{"name": "v", "controller": "scream", "ecn": "l4s"}]})
    cols = ([0, 1], [0, 1_000_000], [20_000_000, 21_000_000], [1200, 1200], [0, 0], [0, 0],
            [30_000_000, 30_000_000])

    def replay(**kw):
        return _core.replay_feedback(sc.to_json(), str(sc.base_dir), 0, *cols, **kw)

    assert replay(ecn=[1, 3])["target_bps"]
    with pytest.raises(ValueError, match="packet 1: ECN codepoint 5 does not fit two bits"):
        replay(ecn=[1, 5])
    with pytest.raises(ValueError, match="packet 0: ECN codepoint -1"):
        replay(ecn=[-1, 1])
    with pytest.raises(ValueError, match="frame 0: packet count 70000 is out of range"):
        replay(frames=[(0, 0, 1200, 70000, True, 1e6)])
    with pytest.raises(Exception, match="capture order"):
        replay(frames=[(0, 50, 1200, 1, True, 1e6), (1, 10, 1200, 1, False, 1e6)])
