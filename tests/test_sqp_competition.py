"""SQP §6.5: SQP against Cubic and BBR, each starting first (experiments/sqp/competition.toml).

The claims checked are the ones that hold in rtcc (docs/sqp.md has the full table and the one that
does not: 2-3x GoogCC's bandwidth against Cubic when the video flow starts first).
"""

from pathlib import Path

import polars as pl
import pytest

import rtcc

SWEEP = Path(__file__).resolve().parent.parent / "experiments" / "sqp" / "competition.toml"


@pytest.fixture(scope="module")
def share():
    """(video controller, tcp controller, order) -> video throughput over [10 s, 60 s] (Mbit/s)."""
    out = {}
    for label, params, scenario in rtcc.Sweep.from_file(SWEEP).cells():
        packets = scenario.run(seed=1).packets
        competing = packets.filter((pl.col("recv_ns") >= 10e9) & (pl.col("recv_ns") < 60e9) & (pl.col("flow") == 0))
        key = (params["flows[0].controller"], params["flows[1].controller"], label.split(",")[-1])
        out[key] = competing["size"].sum() * 8 / 50 / 1e6
    return out


def test_sqp_share_does_not_depend_on_who_starts_first(share):
    # Paper: SQP's throughput is "high and stable" against queue-building flows.
    for tcp in ["cubic", "bbr"]:
        first, late = share[("sqp", tcp, "video-first")], share[("sqp", tcp, "tcp-first")]
        assert abs(first - late) / first < 0.15, f"against {tcp}: {first:.2f} vs {late:.2f} Mbit/s"


def test_sqp_gets_at_least_twice_gccs_bandwidth_against_bbr(share):
    # Paper: 2-3x GoogCC's bandwidth when competing with BBR (or Cubic).
    for order in ["video-first", "tcp-first"]:
        sqp, gcc = share[("sqp", "bbr", order)], share[("gcc", "bbr", order)]
        assert sqp >= 2 * gcc, f"{order}: sqp {sqp:.2f} vs gcc {gcc:.2f} Mbit/s"
    assert share[("sqp", "bbr", "tcp-first")] > 0.4 * 20, "a high share against BBR (paper: +36 % over Copa-Auto)"


def test_gcc_has_a_latecomer_disadvantage(share):
    for tcp in ["cubic", "bbr"]:
        assert share[("gcc", tcp, "tcp-first")] < 0.5 * share[("gcc", tcp, "video-first")], tcp
