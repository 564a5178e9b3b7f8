"""NADA against Cisco's reference (ns3-rmcat's NadaController), on the same packets
(`bench/nada_crosscheck/`): the issue's bar is a median difference of r_ref within 10 % after the
first second on the step, LTE-like and two-flow cases. Runs where `../shared/reference` sits next
to the repository and a C++ compiler is installed; skipped with the reason otherwise."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent.parent / "bench" / "nada_crosscheck"


@pytest.fixture(scope="module")
def crosscheck():
    spec = importlib.util.spec_from_file_location("nada_crosscheck", HERE / "crosscheck.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["nada_crosscheck"] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def binary(crosscheck, tmp_path_factory):
    built, why = crosscheck.build_reference(tmp_path_factory.mktemp("nada") / "nada-replay")
    if built is None:
        pytest.skip(why)
    return built


@pytest.mark.parametrize("case", ["step", "lte", "two"])
def test_rtcc_nada_follows_the_reference_on_the_same_packets(crosscheck, binary, case):
    result = crosscheck.run_case(case, binary)
    d = result["differences"]
    print(case, {k: f"{v:.1%}" for k, v in d.items()})
    assert d["rtcc nada vs rtcc nada, closed loop (the run)"] < 0.01, "the open-loop replay is the run"
    assert d["rtcc nada vs ns3-rmcat nada"] < 0.10, d


def test_without_the_reference_the_report_says_why(crosscheck, tmp_path):
    files, why = crosscheck.reference_sources(tmp_path / "nowhere")
    assert not files and "reference NADA is not at" in why and "nowhere" in why
