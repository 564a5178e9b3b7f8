"""C3G (c3g_rtvl.txt §VI): c3g against its application-level BBR on the paper's capacity drops, built
by experiments/c3g/tables.py. A reduced set (c_lim = 7 Mbit/s, alpha in {1.5, 2, 2.5}, two trials, each
run a 20 s warm-up, the drop, 60 s stable and 180 s after the increase); the tolerances sit next to the
paper's numbers. The full set and its tables are in docs/c3g.md."""

import importlib.util
import itertools
import math
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]


def _tables():
    spec = importlib.util.spec_from_file_location("c3g_tables", REPO / "experiments" / "c3g" / "tables.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def runs():
    t = _tables()
    cells = [(c, iv, 7.0, a, s) for (c, iv), a, s in
             itertools.product([("c3g", "50ms"), ("c3g-bbr", "100ms")], (1.5, 2.0, 2.5), (1, 2))]
    out = {"c3g": [], "c3g-bbr": []}
    for cell in cells:
        out[cell[0]].append(t.run_cell(cell))
    return out


def col(rows, key):
    return np.array([r[key] for r in rows], dtype=float)


def test_c3g_adapts_faster_and_loses_fewer_frames_than_bbr_after_a_drop(runs):
    c3g, bbr = runs["c3g"], runs["c3g-bbr"]
    # Fig. 10a: C3G's AP 0.4-0.8 s, BBR's "consistently higher". Ours is shorter (a 50 ms period
    # reacts sooner); the tolerance is the paper's upper end.
    assert np.median(col(c3g, "ap_s")) <= 0.8, col(c3g, "ap_s")
    assert np.median(col(bbr, "ap_s")) > np.median(col(c3g, "ap_s")), (col(bbr, "ap_s"), col(c3g, "ap_s"))
    # Fig. 10c: C3G "< 10 frames always", BBR "> 20 in quite a few" runs. Ours: the median under 10
    # (over the full set 82 % of C3G's runs stay at 10 or under, docs/c3g.md).
    assert np.median(col(c3g, "l_ap")) <= 10, col(c3g, "l_ap")
    assert np.median(col(bbr, "l_ap")) > 2 * np.median(col(c3g, "l_ap")), (col(bbr, "l_ap"), col(c3g, "l_ap"))


def test_c3g_uses_the_link_steadily_with_less_delay_and_loss_than_bbr(runs):
    c3g, bbr = runs["c3g"], runs["c3g-bbr"]
    # Table 1, c_lim = 7 Mbit/s: C3G 95.8 % (sd 2.3), BBR 92.6 % (sd 7.5). Ours: C3G within 90-98 %.
    assert 90.0 <= col(c3g, "use_pct").mean() <= 98.0, col(c3g, "use_pct")
    assert col(c3g, "use_sd_pct").mean() < col(bbr, "use_sd_pct").mean()
    # RTVL 38.5 against 45.3 ms; lossy frames 0 against 0-0.0026 per s; retransmissions 2.8 against
    # 46.1 kbit/s (16x). Ours keep the order, and BBR retransmits at least 5x as much.
    assert col(c3g, "rtvl_avg_ms").mean() < col(bbr, "rtvl_avg_ms").mean()
    assert col(c3g, "l_rate_fps").mean() < col(bbr, "l_rate_fps").mean()
    assert col(bbr, "r_rate_kbps").mean() >= 5 * col(c3g, "r_rate_kbps").mean()


def test_bbr_regains_an_increased_capacity_sooner(runs):
    # Table 2: EP 8.3 +- 8.6 s for BBR, 36.2 +- 16.4 s for C3G ("the only arguable advantage of BBR"):
    # C3G takes at least twice as long, and both get there.
    c3g, bbr = col(runs["c3g"], "ep_s"), col(runs["c3g-bbr"], "ep_s")
    assert np.isfinite(bbr).all() and np.isfinite(c3g).sum() >= len(c3g) - 1, (c3g, bbr)
    assert np.mean(c3g[np.isfinite(c3g)]) >= 2 * np.mean(bbr), (c3g, bbr)
    assert math.isfinite(np.mean(bbr)) and np.mean(bbr) <= 20
