"""The seed gcc_aqm's experiments (§4) run from experiments/gcc_aqm/, and its orderings hold.

E4 (one GCC call against n TCP Cubic flows, fair share 1 Mbit/s) runs with one seed here, its DT/300
cells with three; the full three-seed tables are in docs/gcc_aqm.md. Tolerances follow research notes gcc_aqm.md §6.3.
"""

import tomllib
from pathlib import Path

import polars as pl
import pytest

import rtcc

EXPERIMENTS = Path(__file__).resolve().parent.parent / "experiments" / "gcc_aqm"


@pytest.fixture(scope="module")
def e4():
    sweep = rtcc.Sweep.from_file(EXPERIMENTS / "e4_tcp.toml")
    result = sweep.with_seeds([1]).run(jobs=2)
    video = result.runs.filter(pl.col("flow") == "video")
    return {(row["cell"].split(",")[0].split("=")[1], int(row["cell"].split("n=")[1])): row
            for row in video.iter_rows(named=True)}


N = [1, 2, 3, 4]


@pytest.fixture(scope="module")
def e4_droptail():
    # The DT/300 cells on seeds 1-3 (the docs' seeds), the median of each cell's video metrics.
    # Behind a 300 ms drop-tail buffer the call has two regimes: in most runs GCC's delay-based
    # controller holds it near 0.2 Mbit/s beside one Cubic flow (0.4 % loss); in some it stops
    # seeing overuse, the call climbs to its 2 Mbit/s cap and holds it at about 4 % loss (the
    # loss-based controller backs off only above 10 %). At n = 1 that happened on seed 6 of
    # seeds 1-10 before Linux's loss recovery (954b777) and on seeds 1 and 10 with it
    # (docs/gcc_aqm.md, E4): one seed shows which regime it fell into, the median of three what
    # the call usually does.
    data = tomllib.loads((EXPERIMENTS / "e4_tcp.toml").read_text())
    grid = data["sweep"]["grid"]
    grid["path.forward.queue"] = [q for q in grid["path.forward.queue"] if q["kind"] == "droptail"]
    sweep = rtcc.Sweep.from_dict(data, base_dir=EXPERIMENTS).with_seeds([1, 2, 3])
    video = sweep.run(jobs=2).runs.filter(pl.col("flow") == "video")
    median = video.group_by("cell").agg(pl.col("queuing_delay_ms_p50", "loss_rate").median())
    return {int(row["cell"].split("n=")[1]): row for row in median.iter_rows(named=True)}


def test_droptail_300ms_fills_with_tcp(e4_droptail):
    # Paper: DT/300 queuing delay about 300 ms; notes E34-D1: mean in [220, 320] ms. The median
    # sojourn of the video's packets is what we check (the paper's is RTT-based), per cell the
    # median over seeds 1-3 (see the fixture).
    for n in N:
        q = e4_droptail[n]["queuing_delay_ms_p50"]
        assert 220 <= q <= 320, f"n={n}: DT/300 median queuing {q:.0f} ms"
        loss = e4_droptail[n]["loss_rate"]
        assert 0 < loss <= 0.015, f"n={n}: DT/300 loss {loss:.3%} (paper (0, 0.5] %, notes (0, 1] %)"


def test_aqms_bring_delay_near_or_below_50ms_at_higher_loss(e4):
    for kind in ["codel", "pie", "fq_codel"]:
        for n in N:
            row = e4[(kind, n)]
            # Paper ≈ 50 ms at n = 1 and < 50 ms beyond; notes E34-D2 allow 65 / 55 ms.
            assert row["queuing_delay_ms_p50"] <= (65 if n == 1 else 55), f"{kind} n={n}"
    for kind in ["codel", "pie"]:
        for n in [3, 4]:
            # Paper: > 1 % video loss under PIE and CoDel (notes E34-L2, at n ≥ 3; with NACK on,
            # PIE at n = 1 is at 0.9 % on this seed).
            assert e4[(kind, n)]["loss_rate"] > 0.01, f"{kind} n={n}: {e4[(kind, n)]['loss_rate']:.3%}"


def test_losses_grow_with_n_for_codel_pie_and_fq_codel(e4):
    # Paper §4.2 (Fig. 6): losses under PIE, CoDel and fq_codel increase with the number of TCP
    # flows (its n = 1, 4, 9, 49, 99). Here n = 1..4 on one seed: the loss at n = 4 is above the
    # loss at n = 1, and no step down is larger than 0.2 percentage points (with NACK on, as in
    # the paper's Chrome, retransmissions move the small fq_codel losses at n = 1, 2 by about
    # 0.1 point: 0.40 % and 0.29 % on this seed).
    for kind in ["codel", "pie", "fq_codel"]:
        losses = [e4[(kind, n)]["loss_rate"] for n in N]
        assert losses[-1] > losses[0], f"{kind}: loss should grow from n=1 to n=4: {losses}"
        for a, b in zip(losses, losses[1:]):
            assert b >= a - 0.002, f"{kind}: loss falls by more than 0.2 points with n: {losses}"


def test_sfq_gives_the_lowest_loss(e4):
    for n in N:
        sfq = e4[("sfq", n)]["loss_rate"]
        others = {k: e4[(k, n)]["loss_rate"] for k in ["droptail", "codel", "pie", "fq_codel"]}
        assert all(sfq <= v for v in others.values()), f"n={n}: sfq {sfq:.3%} vs {others}"
        assert sfq <= 0.001, f"n={n}: SFQ loss {sfq:.3%} (paper: zero in Fig. 8)"
        assert e4[("sfq", n)]["queuing_delay_ms_p50"] <= 55


@pytest.fixture(scope="module")
def e1():
    # Three seeds, averaged per cell: the paper compares means of six calls.
    runs = rtcc.Sweep.from_file(EXPERIMENTS / "e1_alone.toml").with_seeds([1, 2, 3]).run(jobs=2).runs
    means = runs.group_by("cell").agg(pl.col(pl.Float64).mean())
    return {row["cell"]: row for row in means.iter_rows(named=True)}


def test_gcc_alone_with_even_frames_sees_no_delay_gain_and_no_loss(e1):
    # E1 with the ideal encoder: CoDel and PIE give no delay gain over DT/300 (notes E1-D1:
    # medians within ±5 ms) and, with perfectly even frames, no drops at all.
    for cap in ["1Mbps", "2Mbps", "5Mbps"]:
        dt = e1[f"encoder=ideal,capacity={cap},queue=droptail"]
        assert dt["loss_rate"] == 0, f"DT/300 at {cap} loses nothing (paper: 0)"
        for kind in ["codel", "pie"]:
            aqm = e1[f"encoder=ideal,capacity={cap},queue={kind}"]
            assert abs(aqm["queuing_delay_ms_p50"] - dt["queuing_delay_ms_p50"]) <= 5, (cap, kind)
    assert e1["encoder=ideal,capacity=2Mbps,queue=droptail"]["utilization"] >= 0.90, "paper: > 90 %"


def test_with_a_bursty_encoder_codel_and_pie_add_loss_and_trim_the_tail(e1):
    # E1 with the lagged encoder (keyframes, noise, motion bursts): the paper's loss ordering
    # CoDel > PIE > DT/300 at 1 and 2 Mbit/s (notes E1-L1, E1-L2; three-seed means with NACK on:
    # 3.2 > 3.1 > 1.5 % and 2.7 > 2.2 > 1.0 %), and the AQMs' 95th-percentile queuing below DT's
    # (notes E1-D2). DT/300 itself loses ~1 % here (paper: 0), see docs.
    for cap in ["1Mbps", "2Mbps"]:
        cell = lambda kind: e1[f"encoder=lagged,capacity={cap},queue={kind}"]
        loss = {k: cell(k)["loss_rate"] for k in ["droptail", "codel", "pie"]}
        assert loss["codel"] > loss["pie"] > loss["droptail"], f"{cap}: {loss}"
        for kind in ["codel", "pie"]:
            assert cell(kind)["queuing_delay_ms_p95"] < cell("droptail")["queuing_delay_ms_p95"], (cap, kind)
