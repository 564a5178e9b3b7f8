"""``rtcc rmcat``: the rules on synthetic runs (each one passing and failing), the case files, and
the command (report files, verdicts, determinism, bad arguments)."""

import csv
import math
import tomllib

import numpy as np
import pytest

from rtcc import rmcat
from rtcc.cli import main
from rtcc.registry import ControllerSpec
from rtcc.rmcat import CASES, FlowView, RunView
from rtcc.scenario import Scenario

SRC = "test"


def flow(name="f", rate=1e6, periods=None, kind="video", link="forward", summary=None, queue=None,
         min_bps=150e3, max_bps=1.5e6, n=100, links=(), priority=None):
    """A synthetic flow: ``rate`` is a constant (bit/s) or an array of 1 s windows; ``queue`` a
    list of (arrival s, sojourn ms) packets."""
    rate = np.full(n, float(rate)) if np.isscalar(rate) else np.asarray(rate, dtype=float)
    queue = queue or [(0.5, 10.0)]
    return FlowView(name, kind, link, periods or [(0.0, float(len(rate)))], min_bps, max_bps, summary or {},
                    rate, np.array([q[0] for q in queue]), np.array([q[1] for q in queue]), links, priority)


def view(flows, steps=((0.0, 1e6),), duration=100.0):
    """A run over a forward link whose capacity steps at the given times."""
    n = int(duration)
    t = np.arange(n)
    cap = np.array([next(r for s, r in reversed(steps) if s <= x) for x in t], dtype=float)
    edges = [s for s, _ in steps] + [duration]
    return RunView(duration, flows, {"forward": cap, "reverse": None},
                   {"forward": [(a, b, r) for (a, r), b in zip(steps, edges[1:])], "reverse": []})


STEPS = ((0.0, 1e6), (40.0, 2.5e6), (60.0, 0.6e6), (80.0, 1e6))


def following(shape=1.0, flows=1):
    """What one of ``flows`` flows gets at ``shape`` × min(capacity, flows × 1.5 Mbit/s) / flows of
    STEPS, from the first window."""
    cap = view([], STEPS).capacity_bps["forward"]
    return shape * np.minimum(cap, flows * 1.5e6) / flows


# -- rules: one pass and one fail each -----------------------------------------------------------


def test_rate_follows_capacity():
    rule = rmcat.rate_follows_capacity(0.7, SRC)
    assert rule.check(view([flow(rate=following(0.9))], STEPS)).passed
    out = rule.check(view([flow(rate=following(0.6))], STEPS))
    assert not out.passed and out.value == pytest.approx(0.6)
    # Two flows are judged together against min(capacity, 2 × 1.5 Mbit/s).
    assert rule.check(view([flow("a", following(0.8, 2)), flow("b", following(0.8, 2))], STEPS)).passed
    out = rule.check(view([flow("a", following(0.6, 2)), flow("b", following(0.6, 2))], STEPS))
    assert not out.passed and out.value == pytest.approx(0.6)


def test_rate_follows_capacity_judges_the_second_half_of_each_step():
    rate = following(0.9)
    rate[60:70] = 0.0  # the first half of the 0.6 Mbit/s step: not judged
    assert rmcat.rate_follows_capacity(0.7, SRC).check(view([flow(rate=rate)], STEPS)).passed
    rate[70:80] = 0.0
    out = rmcat.rate_follows_capacity(0.7, SRC).check(view([flow(rate=rate)], STEPS))
    assert not out.passed and "60–80 s" in out.shown


def test_ramps_up():
    rule = rmcat.ramps_up(10.0, 0.7, SRC)
    rate = following(0.9)
    rate[40:45] = 0.9e6  # 5 s at the old rate after the step up
    out = rule.check(view([flow(rate=rate)], STEPS))
    assert out.passed and out.value == 6.0
    rate[40:52] = 0.9e6  # 12 s
    out = rule.check(view([flow(rate=rate)], STEPS))
    assert not out.passed and out.value == 13.0 and "40 s" in out.shown
    out = rule.check(view([flow(rate=following(0.5))], STEPS))
    assert not out.passed and math.isinf(out.value) and out.shown.startswith("never")
    # no step long enough to judge: not measurable, which fails like every other rule
    short_steps = ((0.0, 1e6), (15.0, 2e6), (30.0, 1e6))
    out = rule.check(view([flow(rate=np.full(40, 0.9e6))], short_steps, duration=40.0))
    assert not out.passed and out.value is None and "not measurable" in out.shown


def test_queuing_delay_leaves_out_the_grace_after_a_drop():
    rule = rmcat.queuing_delay_bounded(100.0, 5.0, SRC)
    calm = [(t / 10, 20.0) for t in range(1000)]
    assert rule.check(view([flow(rate=following(), queue=calm)], STEPS)).passed
    spike_after_drop = [(t, 300.0 if 60 <= t < 65 else d) for t, d in calm]  # 5 % of packets
    assert rule.check(view([flow(rate=following(), queue=spike_after_drop)], STEPS)).passed
    spike_elsewhere = [(t, 300.0 if 20 <= t < 30 else d) for t, d in calm]  # 10 %, no drop there
    out = rule.check(view([flow(rate=following(), queue=spike_elsewhere)], STEPS))
    assert not out.passed and out.value == pytest.approx(300.0)


def test_loss_bounded():
    rule = rmcat.loss_bounded(0.02, SRC)
    assert rule.check(view([flow(summary={"loss_rate": 0.01})])).passed
    out = rule.check(view([flow("a", summary={"loss_rate": 0.01}), flow("b", summary={"loss_rate": 0.05})]))
    assert not out.passed and out.value == 0.05 and "(b)" in out.shown


def test_signals_bounded_counts_ce_marks_as_losses():
    rule = rmcat.signals_bounded(0.02, SRC)
    assert rule.check(view([flow(summary={"packets_sent": 1000, "packets_lost": 5, "ce_marked": 10})])).passed
    out = rule.check(view([flow(summary={"packets_sent": 1000, "packets_lost": 5, "ce_marked": 20})]))
    assert not out.passed and out.value == pytest.approx(0.025)


def test_no_starvation():
    rule = rmcat.no_starvation(0.1, SRC)
    assert rule.check(view([flow(rate=1e6, summary={"below_min_share": 0.05})])).passed
    assert not rule.check(view([flow(rate=1e6, summary={"below_min_share": 0.3})])).passed


def test_no_starvation_leaves_out_a_pause():
    """With an `active` schedule the summary counts the off windows as below; the rule does not."""
    rate = np.full(100, 500e3)
    rate[40:60] = 0.0
    paused = flow(rate=rate, periods=[(0.0, 40.0), (60.0, 100.0)], summary={"below_min_share": 0.2})
    assert rmcat.starved_share(paused) == 0.0
    assert rmcat.no_starvation(0.1, SRC).check(view([paused])).passed
    rate[60:80] = 100e3  # starved for half of its second period
    out = rmcat.no_starvation(0.1, SRC).check(view([flow(rate=rate, periods=paused.periods)]))
    assert not out.passed and out.value == pytest.approx(20 / 80)


def test_jain():
    assert rmcat.jain([1, 1, 1]) == pytest.approx(1.0)
    assert rmcat.jain([1, 0, 0]) == pytest.approx(1 / 3)
    assert rmcat.jain([1.0, 0.5]) == pytest.approx(0.9)
    assert rmcat.jain([1.0]) is None


def test_fair_share_measures_the_shared_period_after_settling():
    rule = rmcat.fair_share(0.9, 10.0, SRC)
    first = np.full(100, 1e6)
    late = np.full(100, 1e6)
    late[:20] = 0.0
    late[20:30] = 0.1e6  # still ramping in the first 10 s after joining: not judged
    flows = [flow("a", first), flow("b", late, periods=[(20.0, 100.0)])]
    out = rule.check(view(flows, ((0.0, 3e6),)))
    assert out.passed and out.value == pytest.approx(1.0) and "30–100 s" in out.shown
    late[30:] = 0.3e6
    out = rule.check(view([flows[0], flow("b", late, periods=[(20.0, 100.0)])], ((0.0, 3e6),)))
    assert not out.passed and out.value == pytest.approx(rmcat.jain([1.0, 0.3]))


def test_priority_share_compares_rates_over_priorities_in_the_shared_period():
    rule = rmcat.priority_share(1.25, 10.0, SRC)
    high = np.full(100, 1.3e6)
    high[:10] = 0.2e6  # start-up: not judged
    low = np.full(100, 0.7e6)
    flows = [flow("high", high, priority=2.0), flow("low", low, priority=1.0)]
    out = rule.check(view(flows, ((0.0, 2e6),)))
    assert out.passed and out.value == pytest.approx(1.4 / 1.3)
    assert "high : low = 1.86 for priorities 2 : 1 (10–100 s)" in out.shown
    # Equal shares, what uncoupled flows get, are a factor 2 off.
    equal = [flow("high", 1e6, priority=2.0), flow("low", 1e6, priority=1.0)]
    out = rule.check(view(equal, ((0.0, 2e6),)))
    assert not out.passed and out.value == pytest.approx(2.0)
    # Uncoupled flows (no priority) cannot be judged.
    out = rule.check(view([flow("a"), flow("b")], ((0.0, 2e6),)))
    assert not out.passed and "fewer than two coupled" in out.shown
    out = rule.check(view([flow("high", 1e6, priority=2.0), flow("low", 0.0, priority=1.0)], ((0.0, 2e6),)))
    assert not out.passed and out.value == math.inf


def test_coupling_refusal_reads_the_reason_from_the_scenario_error():
    message = ('scenario: flows[1].coupling: controller "coupled": inner controller "sqp" cannot take a rate '
               'from outside (Controller::set_rate), which RFC 8699 §5.3 requires of a coupled controller')
    assert rmcat.coupling_refusal(message).startswith('controller "coupled": inner controller "sqp" cannot')
    assert rmcat.coupling_refusal("scenario: flows[0].params.rate: bad") is None
    l4s = ('scenario: flows[0].ecn: ecn = "l4s" puts the flow in an L4S queue, whose frequent marks its '
           'controller must answer by the share marked (RFC 9331 §4.3): nada, prague do; gcc does not')
    assert rmcat.coupling_refusal(l4s).startswith("not an L4S controller")


def test_l4s_cases_sort_after_their_rfc_case_and_refuse_classic_controllers(tmp_path):
    assert sorted(["5.6P", "8869", "5.1L", "5.2", "5.1", "5.6L", "5.6"], key=rmcat._case_key) == [
        "5.1", "5.1L", "5.2", "5.6", "5.6L", "5.6P", "8869"]
    rows = rmcat.run_suite(tmp_path / "out", controllers=[ControllerSpec.make("gcc")], cases=["5.6P"],
                           seeds=[1], jobs=1, plots=False)
    assert [(r["case"], r["verdict"]) for r in rows] == [("5.6P", "n/a")]
    assert "not an L4S controller" in rows[0]["failing"]


def test_share_against_cross_traffic():
    rule = rmcat.share_against_cross_traffic(0.5, SRC)
    tcp = flow("tcp", 1.4e6, kind="tcp", min_bps=None, max_bps=None)
    out = rule.check(view([flow("video", 0.6e6), tcp], ((0.0, 2e6),)))
    assert out.passed and out.value == pytest.approx(0.6)
    out = rule.check(view([flow("video", 0.3e6), tcp], ((0.0, 2e6),)))
    assert not out.passed and out.value == pytest.approx(0.3)


def test_uses_leftover_measures_what_cross_traffic_leaves():
    rule = rmcat.uses_leftover(0.7, 10.0, SRC)
    tcp = np.zeros(100)
    tcp[::10] = 1.0e6  # bursts: 1 Mbit/s in one window of ten
    leftover = np.where(tcp > 0, 1.0e6, 2.0e6)  # 2 Mbit/s link
    short = flow("short0", tcp, kind="tcp", min_bps=None, max_bps=None)
    good = [flow("a", 0.45 * leftover), flow("b", 0.45 * leftover), short]
    out = rule.check(view(good, ((0.0, 2e6),)))
    assert out.passed and out.value == pytest.approx(0.9)
    timid = [flow("a", 0.3e6), flow("b", 0.3e6), short]  # as if every window had a burst
    out = rule.check(view(timid, ((0.0, 2e6),)))
    assert not out.passed and out.value == pytest.approx(0.6e6 * 90 / (9 * 1e6 + 81 * 2e6))


def test_max_min_shares_of_a_parking_lot():
    routes = {"long": ("b1", "b2"), "c1": ("b1",), "c2": ("b2",)}
    inf = math.inf
    even = rmcat.max_min_shares({"long": inf, "c1": inf, "c2": inf}, routes, {"b1": 2e6, "b2": 2e6})
    assert even == pytest.approx({"long": 1e6, "c1": 1e6, "c2": 1e6})
    # a tighter second hop holds the long flow there; the first hop gives c1 the rest
    tight = rmcat.max_min_shares({"long": inf, "c1": inf, "c2": inf}, routes, {"b1": 2e6, "b2": 1e6})
    assert tight == pytest.approx({"long": 0.5e6, "c1": 1.5e6, "c2": 0.5e6})
    # a demand (max_bitrate) below the share frees the rest for the others
    capped = rmcat.max_min_shares({"long": 0.3e6, "c1": 1.5e6, "c2": inf}, routes, {"b1": 2e6, "b2": 2e6})
    assert capped == pytest.approx({"long": 0.3e6, "c1": 1.5e6, "c2": 1.7e6})
    assert rmcat.max_min_shares({"x": inf}, {"x": ("b9",)}, {"b1": 1e6}) == {"x": inf}  # unlimited path
    # an unlimited hop (logged as +inf) limits nobody: it is not "full" after the first step
    unlimited_hop = rmcat.max_min_shares({"a": inf, "b": 0.5e6}, {"a": ("x", "y"), "b": ("y",)},
                                         {"x": inf, "y": 2e6})
    assert unlimited_hop == pytest.approx({"a": 1.5e6, "b": 0.5e6})


def parking_lot(long, c1, c2, b2=2e6, n=100):
    """A two-hop run: ``long`` over b1 and b2, ``c1`` over b1 from 20 s, ``c2`` over b2 from 40 s."""
    flows = [flow("long", long, link="b1", n=n, links=("b1", "b2")),
             flow("c1", c1, link="b1", periods=[(20.0, n)], n=n),
             flow("c2", c2, link="b2", periods=[(40.0, n)], n=n)]
    caps = {"b1": np.full(n, 2e6), "b2": np.full(n, float(b2))}
    return RunView(float(n), flows, caps, {"b1": [(0.0, n, 2e6)], "b2": [(0.0, n, float(b2))]})


def test_run_view_is_multi_hop_aware():
    v = parking_lot(1e6, 1e6, 1e6, b2=1e6)
    long = v.flows[0]
    assert long.path == ("b1", "b2") and v.flows[1].path == ("b1",)
    assert list(v.flow_capacity(long)) == [1e6] * 100  # the tightest hop
    assert [f.name for f in v.video_on("b2")] == ["long", "c2"]
    assert v.links() == ["b1", "b2"]


def test_max_min_fair_judges_each_flow_against_its_share_on_its_path():
    rule = rmcat.max_min_fair(0.6, 10.0, SRC)
    long = np.full(100, 1.4e6)
    long[20:] = 0.9e6  # alone 0-20 s (share 1.5), then one competitor per hop (share 1.0 each)
    c = np.full(100, 0.9e6)
    out = rule.check(parking_lot(long, c, c))
    assert out.passed and out.value == pytest.approx(0.9)
    long[40:] = 0.5e6  # the long flow squeezed once both cross flows are in
    out = rule.check(parking_lot(long, c, c))
    assert not out.passed and out.value == pytest.approx(0.5) and "long, 50–100 s" in out.shown
    # the long flow is held to its share at the tighter hop: 0.5 of 1 Mbit/s there is its whole share
    long, c1, c2 = np.full(100, 0.95e6), np.full(100, 0.95e6), np.full(100, 0.45e6)
    long[40:], c1[40:] = 0.45e6, 1.35e6  # after 40 s: 0.5 Mbit/s each on b2, c1 the rest of b1
    out = rule.check(parking_lot(long, c1, c2, b2=1e6))
    assert out.passed and out.value == pytest.approx(0.9)


def test_converges_to_share():
    rule = rmcat.converges_to_share(20.0, 0.2, 3, SRC)
    a, b = np.full(100, 1.5e6), np.zeros(100)
    a[40:] = 1.0e6
    b[40:55] = 0.1e6
    b[55:] = 1.0e6  # 2 Mbit/s link, fair share 1 Mbit/s each from 55 s: 3 s means reach it at 57 s
    flows = [flow("a", a), flow("b", b, periods=[(40.0, 100.0)])]
    out = rule.check(view(flows, ((0.0, 2e6),)))
    assert out.passed and out.value == 18.0
    b[55:] = 0.5e6  # never within ±20 %
    out = rule.check(view([flows[0], flow("b", b, periods=[(40.0, 100.0)])], ((0.0, 2e6),)))
    assert not out.passed and out.shown == "never"


def test_the_cores_windowed_measures_match_a_hand_built_example():
    """The measures the rules take from the core (rtcc_scenario::windows), on values worked out
    by hand."""
    from rtcc import _core

    assert _core.WINDOW_S == 1.0
    assert _core.window_mask(6, [(0.5, 3.0), (4.0, 10.0)]).tolist() == [False, True, True, False, True, True]
    assert _core.shared_periods([[(0.0, 120.0)], [(0.0, 40.0), (60.0, 120.0)], [(20.0, 120.0)]],
                                10.0) == [(30.0, 40.0), (70.0, 120.0)]
    assert rmcat.jain([1.0, 0.5]) == 0.9  # (1.5)² / (2 · 1.25)
    # b joins at 2 s; 1 s to settle leaves [3, 6): mean rates 2 and (1 + 1 + 4) / 3 = 2, Jain 1.
    a, b = [4.0, 4.0, 4.0, 2.0, 2.0, 2.0], [0.0, 0.0, 0.0, 1.0, 1.0, 4.0]
    periods = [[(0.0, 6.0)], [(2.0, 6.0)]]
    assert _core.windowed_jain([a, b], periods, 1.0) == (1.0, [(3.0, 6.0)])
    # Without settling, [2, 6): means 2.5 and 1.5, Jain 4² / (2 · (6.25 + 2.25)) = 16 / 17.
    assert _core.windowed_jain([a, b], periods, 0.0)[0] == 16 / 17
    assert _core.windowed_jain([a, b], periods, 4.0) is None  # no shared window
    # Trailing 2 s means after a join at 2 s: a 5, 4, 4 and b 1, 3, 4 in windows 3, 4, 5; targets
    # 4 ± 25 % hold from window 4 (ends at 5 s: 3 s after the join), ± 10 % from window 5.
    a, b = [8.0, 8.0, 6.0, 4.0, 4.0, 4.0, 4.0], [0.0, 0.0, 0.0, 2.0, 4.0, 4.0, 4.0]
    assert _core.share_convergence([a, b], [4.0, 4.0], 2.0, 7.0, 0.25, 2) == 3.0
    assert _core.share_convergence([a, b], [4.0, 4.0], 2.0, 7.0, 0.1, 2) == 4.0
    assert math.isinf(_core.share_convergence([a, b], [4.0, 4.0], 2.0, 5.0, 0.1, 2))


def test_a_runs_facts_give_its_windowed_rates_and_route(tmp_path):
    """facts.json: a 1 Mbit/s constant-rate flow received 1 Mbit/s in every whole window it was
    on, and the links as the rules name them."""
    data = {"name": "facts", "duration": "4.5s", "seed": 1,
            "path": {"forward": {"schedule": [["0s", "20Mbps"], ["2s", "10Mbps"]], "delay": "5ms"},
                     "reverse": {"capacity": "1Mbps"}},
            "flows": [{"name": "cbr", "kind": "cbr", "rate": "1Mbps", "packet_size": "1250B", "stop": "4s"}]}
    result = Scenario.from_dict(data, base_dir=str(tmp_path)).run()
    facts = result.facts
    assert (facts["window_s"], facts["windows"]) == (1.0, 5)
    forward, reverse = facts["links"]
    assert (forward["name"], forward["delay_s"], reverse["name"]) == ("forward", 0.005, "reverse")
    assert forward["capacity_bps"] == [20e6, 20e6, 10e6, 10e6, 10e6]
    assert forward["segments"] == [[0.0, 2.0, 20e6], [2.0, 4.5, 10e6]]
    assert reverse["capacity_bps"] == [1e6] * 5 and reverse["delay_s"] == 0.005  # the forward delay
    (flow,) = facts["flows"]
    assert (flow["links"], flow["periods"], flow["propagation_between_links_s"]) == (["forward"], [[0.0, 4.0]], 0.0)
    assert flow["min_bitrate_bps"] is None and flow["priority"] is None
    # 100 packets of 1250 B a second, each 5 ms on the way: 1 Mbit/s in each window until it stops.
    assert flow["rate_bps"] == [1e6, 1e6, 1e6, 1e6, 0.0]
    assert sum(flow["rate_bps"]) == result.summary["flows"][0]["throughput_bps"] * 4.0
    result.save(tmp_path / "run", plots=False)
    assert (tmp_path / "run/facts.json").read_text() == result.facts_json
    view = rmcat.view_of_run(tmp_path / "run")
    assert view.flows[0].rate_bps.tolist() == flow["rate_bps"]


# -- case files ----------------------------------------------------------------------------------


def test_every_case_file_has_rules_and_every_rule_entry_a_file():
    files = rmcat.case_files()
    assert set(files) == set(CASES)
    assert rmcat.select_cases(None) == ["5.1", "5.1L", "5.2", "5.3", "5.4", "5.4L", "5.5", "5.6", "5.6L", "5.6P",
                                           "5.7", "5.8", "6.1", "6.2", "6.3", "8869"]


@pytest.mark.parametrize("case_id", sorted(CASES))
def test_case_file_validates_and_cites_its_section(case_id):
    path = rmcat.case_files()[case_id]
    Scenario.from_file(path).validate()
    text = path.read_text(encoding="utf-8")
    header = "".join(line for line in text.splitlines(keepends=True) if line.startswith("#"))
    section = CASES[case_id].section.split(" (")[0]  # "RFC 8867 §5.1"
    assert section in header
    assert header.count("RFC 886") >= 5  # a citation per number
    data = tomllib.loads(text)
    video = [f for f in data["flows"] if f.get("kind", "video") == "video"]
    assert video
    for f in video:  # RFC 8868's media range on every media flow
        assert (f["min_bitrate"], f["start_bitrate"], f["max_bitrate"]) == ("150kbps", "150kbps", "1.5Mbps")


WIRED = ["5.1", "5.1L", "5.2", "5.3", "5.4", "5.4L", "5.5", "5.6", "5.6L", "5.6P", "5.7", "5.8", "6.1", "6.2", "6.3"]
RFC8868_30MS = {"model": "nr-rbpdv", "std": "10ms", "n_std": 3}


@pytest.mark.parametrize("case_id", WIRED)
def test_wired_cases_carry_rfc8868_jitter_not_the_capture_stand_in(case_id):
    text = rmcat.case_files()[case_id].read_text(encoding="utf-8")
    data = tomllib.loads(text)
    path = data["path"]
    links = [h["forward"] for h in path["hops"]] if "hops" in path else [path["forward"]]
    jitters = [link.get("jitter") for link in links]
    assert RFC8868_30MS in jitters
    if case_id == "5.3":  # media both ways: the reverse link too
        assert path["reverse"]["jitter"] == RFC8868_30MS
    assert all("frame_jitter" not in f for f in data["flows"])
    assert "30 ms" in text and "RFC 8868 §4.5" in text and "5 ms" in text  # the reading of std = 10 ms


def test_short_tcp_case_follows_ns3_rmcat():
    text = rmcat.case_files()["5.7"].read_text(encoding="utf-8")
    data = tomllib.loads(text)
    short = [f for f in data["flows"] if f.get("kind") == "tcp"]
    assert len(short) == 10 and all(f["app"]["model"] == "short" and f["delayed_ack"] is False for f in short)
    assert [f["app"]["initial"] for f in short].count("on") == 2
    assert len([f for f in data["flows"] if f.get("kind", "video") == "video"]) == 2
    assert data["duration"] == "300s" and "ns3-rmcat" in text and "draft-ietf-rmcat-eval-test-05" in text


def test_multiple_bottlenecks_case_says_it_uses_section_5_defaults():
    text = rmcat.case_files()["6.3"].read_text(encoding="utf-8")
    data = tomllib.loads(text)
    assert [h["name"] for h in data["path"]["hops"]] == ["b1", "b2"]
    assert [f.get("hops") for f in data["flows"]] == [None, ["b1"], ["b2"]]
    assert "§5's defaults" in text


def test_priority_case_couples_two_flows_of_one_sender_with_section_5_defaults():
    text = rmcat.case_files()["6.1"].read_text(encoding="utf-8")
    data = tomllib.loads(text)
    video = [f for f in data["flows"] if f.get("kind", "video") == "video"]
    assert [f["coupling"] for f in video] == [{"group": "sender", "priority": 2.0},
                                              {"group": "sender", "priority": 1.0}]
    assert all(f.get("start") is None for f in video)  # one sender: both from the start
    # The shares (2 Mbit/s split 2 : 1) lie inside the media range, so it does not bend the ratio.
    assert data["path"]["forward"]["capacity"] == "2Mbps"
    assert "§5's defaults" in text and "RFC 8699" in text
    assert "priority-share" in {r.name for r in CASES["6.1"].rules}


def test_priority_case_runs_coupled_gcc_and_is_not_applicable_to_an_uncoupled_controller(tmp_path):
    out = tmp_path / "r"
    assert main(["rmcat", "--quick", "-c", "gcc", "-c", "sqp", "--cases", "6.1", "-o", str(out)]) == 0
    rows = {r["controller"]: r for r in csv.DictReader((out / "table.csv").open())}
    assert rows["sqp"]["verdict"] == "n/a" and rows["sqp"]["seeds"] == "0"
    assert "not applicable" in rows["sqp"]["failing"] and "cannot take a rate from outside" in rows["sqp"]["failing"]
    rules = {r["rule"]: r for r in csv.DictReader((out / "rules.csv").open()) if r["controller"] == "gcc"}
    assert rules["priority-share"]["passed"] == "true"
    assert float(rules["priority-share"]["value"]) < 1.05  # the FSE splits exactly; what arrives follows it
    assert "n/a" in (out / "table.md").read_text()
    assert (out / "plots/case-6.1.png").is_file()


def test_cellular_case_says_it_is_an_approximation():
    header = rmcat.case_files()["8869"].read_text(encoding="utf-8")
    assert "APPROXIMATED" in header and "NOT the RFC's setup" in header


# -- the command ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    """`rtcc rmcat --quick` on two cases, written twice."""
    base = tmp_path_factory.mktemp("rmcat")
    argv = ["rmcat", "--quick", "-c", "gcc", "--cases", "5.1,5.4,6.3", "-j", "2"]
    assert main(argv + ["-o", str(base / "a")]) == 0
    assert main(argv + ["-o", str(base / "b"), "--no-plots"]) == 0
    return base


def test_quick_writes_the_report(quick):
    out = quick / "a"
    for name in ("table.md", "table.csv", "rules.csv", "index.html", "plots/case-5.1.png", "plots/case-5.4.png",
                 "plots/case-6.3.png"):
        assert (out / name).is_file(), name
    rows = list(csv.DictReader((out / "table.csv").open()))
    assert [(r["case"], r["controller"]) for r in rows] == [("5.1", "gcc"), ("5.4", "gcc"), ("6.3", "gcc")]
    for r in rows:
        assert r["verdict"] in ("pass", "fail")
        assert r["seeds"] == "1" and 0 <= int(r["seeds_passing"]) <= 1
        assert (r["verdict"] == "pass") == (r["failing"] == "")
        assert 0 < float(r["rate_over_capacity"]) <= 1.0
    rules = list(csv.DictReader((out / "rules.csv").open()))
    assert {r["rule"] for r in rules if r["case"] == "5.1"} == {r.name for r in CASES["5.1"].rules}
    page = (out / "index.html").read_text()
    assert "RFC 8867 §5.4" in page and "case-5.1.png" in page
    # The case × controller grid comes first, a cell per case with its coloured verdict.
    grid = page[page.index('<table class="grid">'):]
    grid = grid[:grid.index("</table>")]
    assert page.index('<table class="grid">') < page.index("<th>seeds passing</th>")
    for r in rows:
        assert f'#case-{r["case"]}' in grid and f'{r["verdict"]} {r["seeds_passing"]}/1' in grid
    assert (out / "runs/5.1/gcc/seed1/summary.json").is_file()


def test_same_arguments_give_the_same_tables(quick):
    for name in ("table.md", "table.csv", "rules.csv"):
        assert (quick / "a" / name).read_bytes() == (quick / "b" / name).read_bytes(), name


def test_view_of_a_run_agrees_with_its_summary(quick):
    view = rmcat.view_of_run(quick / "a/runs/5.1/gcc/seed1")
    f = view.flows[0]
    assert rmcat.starved_share(f) == f.summary["below_min_share"]
    assert f.rate_bps.sum() == pytest.approx(f.summary["throughput_bps"] * view.duration_s, rel=0.01)
    assert [s[:2] for s in view.segments["forward"]] == [(0, 40), (40, 60), (60, 80), (80, 100)]
    assert math.isclose(np.percentile(f.queue_ms, 95), f.summary["queuing_delay_ms"]["p95"], rel_tol=1e-6)


def test_view_of_a_multi_hop_run_agrees_with_its_summary(quick):
    view = rmcat.view_of_run(quick / "a/runs/6.3/gcc/seed1")
    assert [f.path for f in view.flows] == [("b1", "b2"), ("b1",), ("b2",)]
    assert [link for link, cap in view.capacity_bps.items() if cap is not None] == ["b1", "b2"]
    assert view.capacity_bps["b1"][0] == 2e6
    for f in view.flows:  # queuing across hops: first arrival to last departure less the propagation between
        assert math.isclose(np.percentile(f.queue_ms, 95), f.summary["queuing_delay_ms"]["p95"], rel_tol=1e-6)
    assert {r.name for r in CASES["6.3"].rules} >= {"max-min-share", "no-starvation", "loss", "queuing-delay"}


def test_jitter_makes_the_seeds_differ(tmp_path):
    path = rmcat.case_files()["5.1"]
    runs = []
    for seed in (1, 2):
        out = tmp_path / f"s{seed}"
        assert main(["run", str(path), "--seed", str(seed), "-o", str(out), "--no-plots"]) == 0
        runs.append(rmcat.view_of_run(out).flows[0])
    assert runs[0].summary["packets_sent"] != runs[1].summary["packets_sent"]
    assert not np.array_equal(runs[0].queue_ms[:1000], runs[1].queue_ms[:1000])


def error_of(capsys, argv) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err


def test_bad_arguments(tmp_path, capsys):
    out = str(tmp_path / "r")
    err = error_of(capsys, ["rmcat", "-c", "gcx", "-o", out])
    assert "'gcx' is not registered" in err and "gcc" in err and "sqp" in err
    err = error_of(capsys, ["rmcat", "--cases", "5.1,5.9", "-o", out])
    assert "unknown case '5.9'" in err and "5.1, 5.1L, 5.2, 5.3" in err
    assert "--cases" in error_of(capsys, ["rmcat", "--cases", ",", "-o", out])
    assert "--seeds" in error_of(capsys, ["rmcat", "--seeds", "0", "-o", out])
    assert "--jobs" in error_of(capsys, ["rmcat", "-j", "0", "-o", out])
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "x").write_text("keep")
    assert "--force" in error_of(capsys, ["rmcat", "--cases", "5.1", "-c", "gcc", "-o", out])
    assert (tmp_path / "r" / "x").read_text() == "keep"
