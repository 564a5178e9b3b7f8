"""C3G (c3g_rtvl.txt §VI): the reactive, stability and recovery checks of the research notes
(c3g_rtvl.md §6.3) over the paper's full test set, built by experiments/c3g/tables.py: 15 drops
(c_lim in {5, 7, 9} Mbit/s, alpha in {1.25 ... 2.5}) x 4 trials for c3g (dt = 50 ms, its default) and
c3g-bbr (100 ms). Each test names the check and the paper's number its tolerance comes from. The checks
our simulation does not meet are strict expected failures with the measured value (docs/c3g.md, "What
holds and what does not"): if one starts to pass, the test fails and the docs need updating."""

import importlib.util
import itertools
from pathlib import Path

import numpy as np
import polars as pl
import pytest

REPO = Path(__file__).resolve().parents[1]


def _tables():
    spec = importlib.util.spec_from_file_location("c3g_tables", REPO / "experiments" / "c3g" / "tables.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


KNOWN = _tables().KNOWN_MISSES


@pytest.fixture(scope="module")
def runs() -> pl.DataFrame:
    t = _tables()
    cells = [(c, iv, cl, a, s) for (c, iv), cl, a, s in
             itertools.product([("c3g", "50ms"), ("c3g-bbr", "100ms")], t.C_LIM, t.ALPHA, (1, 2, 3, 4))]
    return pl.DataFrame([t.run_cell(cell) for cell in cells])  # 120 runs, about 25 s


def ctrl(runs, name):
    return runs.filter(pl.col("controller") == name)


def per_combo(df, column):
    """Median of `column` per (c_lim, alpha), in a fixed order."""
    return df.group_by(["c_lim", "alpha"]).agg(pl.col(column).median()).sort(["c_lim", "alpha"])[column].to_numpy()


def spearman(x, y) -> float:
    rx, ry = pl.Series(x).rank().to_numpy(), pl.Series(y).rank().to_numpy()
    return float(np.corrcoef(rx, ry)[0, 1])


# --- Reactive (Fig. 10) ------------------------------------------------------------------------

def test_r1_c3g_adapts_within_a_second(runs):
    # Paper: C3G's AP 0.4-0.8 s. R1's upper end: every combo's median AP at most 1.2 s.
    ap = per_combo(ctrl(runs, "c3g"), "ap_s")
    assert (ap <= 1.2).all(), ap


@pytest.mark.xfail(strict=True, reason=KNOWN["test_r1_c3g_ap_is_not_shorter_than_the_papers"])
def test_r1_c3g_ap_is_not_shorter_than_the_papers(runs):
    ap = per_combo(ctrl(runs, "c3g"), "ap_s")
    assert (ap >= 0.2).all(), ap


@pytest.mark.xfail(strict=True, reason=KNOWN["test_r2_bbr_adapts_slower"])
def test_r2_bbr_adapts_slower(runs):
    # Paper: BBR's AP "consistently higher ... for all values of alpha and c_lim". R2: 1.3x in 12 of 15.
    c3g, bbr = per_combo(ctrl(runs, "c3g"), "ap_s"), per_combo(ctrl(runs, "c3g-bbr"), "ap_s")
    assert (bbr >= 1.3 * c3g).sum() >= 12, (bbr, c3g)


def test_r3_c3g_ap_grows_with_the_drop(runs):
    # Paper: a moderate correlation of C3G's AP with alpha. R3: Spearman rho >= 0.3.
    c3g = ctrl(runs, "c3g")
    assert spearman(c3g["ap_s"], c3g["alpha"]) >= 0.3


def test_r4_peak_rtvl_grows_with_the_drop(runs):
    # Paper: peak RTVL "highly correlated with alpha". R4: rho >= 0.6.
    c3g = ctrl(runs, "c3g")
    assert spearman(c3g["ap_peak_ms"], c3g["alpha"]) >= 0.6


@pytest.mark.xfail(strict=True, reason=KNOWN["test_r4_peaks_are_comparable"])
def test_r4_peaks_are_comparable(runs):
    c3g, bbr = per_combo(ctrl(runs, "c3g"), "ap_peak_ms"), per_combo(ctrl(runs, "c3g-bbr"), "ap_peak_ms")
    assert (np.abs(c3g / bbr - 1) <= 0.3).sum() >= 12


@pytest.mark.xfail(strict=True, reason=KNOWN["test_r5_no_losses_after_small_drops"])
def test_r5_no_losses_after_small_drops(runs):
    small = runs.filter(pl.col("alpha") <= 1.5)
    assert (small["l_ap"] == 0).all()


def test_r6_c3g_loses_few_frames(runs):
    # Paper: C3G "< 10 frames always". R6 asks 95 % of runs at 10 or fewer (the strict form below);
    # this one keeps the median and three quarters.
    l_ap = ctrl(runs, "c3g")["l_ap"].to_numpy()
    assert np.median(l_ap) <= 10 and (l_ap <= 10).mean() >= 0.75, l_ap


def test_r6_strict(runs):
    # R6 as the notes write it: 95 % of C3G's runs lose 10 frames or fewer.
    assert (ctrl(runs, "c3g")["l_ap"] <= 10).mean() >= 0.95


def test_r7_bbr_loses_more_after_large_drops(runs):
    # Paper: BBR's L_AP higher for every alpha > 1.75, and "> 20 in quite a few" runs (a quarter, here).
    for alpha in (2.0, 2.5):
        c3g = ctrl(runs, "c3g").filter(pl.col("alpha") == alpha)["l_ap"]
        bbr = ctrl(runs, "c3g-bbr").filter(pl.col("alpha") == alpha)["l_ap"]
        assert bbr.median() >= c3g.median() and (bbr > 20).mean() >= 0.25, (alpha, bbr.to_list(), c3g.to_list())


def test_r8_ap_does_not_depend_on_c_lim(runs):
    # Paper: C3G's AP does not depend on c_lim. R8: per alpha, medians within max(0.2 s, 25 %).
    c3g = ctrl(runs, "c3g")
    for alpha in _tables().ALPHA:
        m = [c3g.filter((pl.col("alpha") == alpha) & (pl.col("c_lim") == c))["ap_s"].median() for c in (5.0, 7.0, 9.0)]
        assert max(m) - min(m) <= max(0.2, 0.25 * max(m)), (alpha, m)


# --- Stability (Table 1) ---------------------------------------------------------------------

def by_clim(df, column):
    return df.group_by("c_lim").agg(pl.col(column).mean()).sort("c_lim")[column].to_numpy()


def test_s1_channel_use(runs):
    # Table 1: C3G 93.2 / 95.8 / 96.1 %.
    c3g = by_clim(ctrl(runs, "c3g"), "use_pct")
    assert ((c3g >= 90) & (c3g <= 98)).all(), c3g                     # S1
    assert (by_clim(ctrl(runs, "c3g-bbr"), "use_sd_pct") >= 5).all()  # S3's spread


@pytest.mark.xfail(strict=True, reason=KNOWN["test_s3_bbr_channel_use_below_c3g"])
def test_s3_bbr_channel_use_below_c3g(runs):
    # Table 1: BBR 86.9 / 92.6 / 93.4 % (sd 6.8-7.8 %), below C3G at each c_lim.
    c3g, bbr = by_clim(ctrl(runs, "c3g"), "use_pct"), by_clim(ctrl(runs, "c3g-bbr"), "use_pct")
    assert ((bbr >= 82) & (bbr <= 95)).all(), bbr                     # S3
    assert (by_clim(ctrl(runs, "c3g-bbr"), "use_sd_pct") >= 5).all()  # S3
    assert (c3g > bbr).all(), (c3g, bbr)                              # the paper's order


def test_s4_c3g_uses_clearly_more_than_bbr(runs):
    c3g, bbr = by_clim(ctrl(runs, "c3g"), "use_pct"), by_clim(ctrl(runs, "c3g-bbr"), "use_pct")
    assert (c3g - bbr >= 1.5).all(), (c3g, bbr)


@pytest.mark.xfail(strict=True, reason=KNOWN["test_s2_c3g_rate_is_steady"])
def test_s2_c3g_rate_is_steady(runs):
    assert (by_clim(ctrl(runs, "c3g"), "use_sd_pct") <= 4.5).all()


def test_s5_s6_c3g_keeps_rtvl_lower_than_bbr(runs):
    # Table 1: RTVL 36.8-39.6 ms against 42.5-45.3; peaks 86-97 against 140-163 ms.
    assert (by_clim(ctrl(runs, "c3g"), "rtvl_avg_ms") < by_clim(ctrl(runs, "c3g-bbr"), "rtvl_avg_ms")).all()  # S6
    assert (by_clim(ctrl(runs, "c3g-bbr"), "rtvl_peak_ms") >= 120).all()                                         # S5


@pytest.mark.xfail(strict=True, reason=KNOWN["test_s5_c3g_stable_peak"])
def test_s5_c3g_stable_peak(runs):
    # Table 1: C3G's stable RTVL peaks 97.2 / 86.4 / 88.3 ms. S5: at most 110 ms per c_lim.
    assert (by_clim(ctrl(runs, "c3g"), "rtvl_peak_ms") <= 110).all()


@pytest.mark.xfail(strict=True, reason=KNOWN["test_s7_c3g_loses_no_frames_when_stable"])
def test_s7_c3g_loses_no_frames_when_stable(runs):
    assert (ctrl(runs, "c3g")["l_rate_fps"] == 0).all()


def test_s8_bbr_retransmits_far_more(runs):
    # Table 1: R_rate 2.8-3.7 kbit/s for C3G against 38-53 for BBR. S8: BBR at least 5x.
    c3g, bbr = by_clim(ctrl(runs, "c3g"), "r_rate_kbps"), by_clim(ctrl(runs, "c3g-bbr"), "r_rate_kbps")
    assert (bbr >= 5 * c3g).all(), (bbr, c3g)


def test_s8_c3g_retransmits_little(runs):
    # Table 1: C3G retransmits 3.7 / 2.8 / 3.7 kbit/s when stable. S8: at most 10 kbit/s per c_lim.
    assert (by_clim(ctrl(runs, "c3g"), "r_rate_kbps") <= 10).all()


# --- Increase (Table 2) ----------------------------------------------------------------------

def test_i1_i2_i3_bbr_regains_capacity_sooner(runs):
    # Table 2: EP 8.3 +- 8.6 s for BBR, 36.2 +- 16.4 s for C3G (4.4x).
    c3g, bbr = ctrl(runs, "c3g").sort(["c_lim", "alpha", "seed"]), ctrl(runs, "c3g-bbr").sort(["c_lim", "alpha", "seed"])
    c_ep, b_ep = c3g["ep_s"].to_numpy(), bbr["ep_s"].to_numpy()
    assert (c_ep > b_ep).mean() >= 0.8                                   # I1
    done = c_ep[np.isfinite(c_ep)]
    assert len(done) >= 0.9 * len(c_ep) and done.mean() >= 2 * b_ep.mean()  # I1
    assert 2 <= b_ep.mean() <= 20                                        # I2
    assert 20 <= done.mean() <= 60                                       # I3, at dt = 50 ms
