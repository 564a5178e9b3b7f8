"""Controller specs, comparison tables, time series and progress display (no simulator runs)."""

import csv
import io

import numpy as np
import polars as pl
import pytest

from rtcc import ScenarioError
from rtcc.compare import folder_name, format_rate
from rtcc.progress import TerminalProgress
from rtcc.registry import ControllerSpec, default_specs
from rtcc.report import comparison_rows, markdown_table, text_table, write_csv
from rtcc.series import break_gaps, cdf, throughput

REGISTRY = [
    {"name": "fixed", "summary": "", "params": [{"name": "rate", "default": "", "doc": "target"},
                                                {"name": "pacing_factor", "default": "1.0", "doc": ""}]},
    {"name": "oracle", "summary": "", "params": [{"name": "fraction", "default": "0.9", "doc": ""}]},
    {"name": "needy", "summary": "", "params": [{"name": "model", "default": "", "doc": ""}]},
]


def flow(name="video", controller="fixed", p95=40.0):
    return {"name": name, "controller": controller, "throughput_bps": 4.5e6, "utilization": 0.5,
            "video_bitrate_bps": 4.6e6, "frame_delay_ms": {"p50": 30.0, "p95": p95, "p99": None},
            "frame_latency_ms": {"p50": 35.0, "p95": p95 and p95 + 5, "p99": None},
            "display_rate_fps": 29.9, "display_freezes": 1, "loss_rate": 0.001, "queuing_delay_ms": {"p95": 3.25}}


def summary(*flows):
    return {"scenario": "s", "seed": 1, "duration_s": 10.0, "flows": list(flows), "total": {}}


def test_spec_parsing():
    assert ControllerSpec.parse("oracle") == ControllerSpec("oracle", {}, "oracle")
    s = ControllerSpec.parse("fixed:rate=5Mbps,pacing_factor=2.5")
    assert s.name == "fixed" and s.params == {"rate": "5Mbps", "pacing_factor": 2.5}
    assert s.label == "fixed:rate=5Mbps,pacing_factor=2.5"
    assert ControllerSpec.parse("x:a=3,b=true,c=200ms").params == {"a": 3, "b": True, "c": "200ms"}
    assert ControllerSpec.make("fixed", {"rate": "2Mbps"}).label == "fixed:rate=2Mbps"


@pytest.mark.parametrize("text", ["", ":rate=1", "fixed:rate", "fixed:=3", "fixed:rate=", "fixed:a=1,a=2"])
def test_bad_specs(text):
    with pytest.raises(ScenarioError):
        ControllerSpec.parse(text)


def test_spec_check():
    ControllerSpec.parse("fixed:rate=1Mbps").check(REGISTRY)
    with pytest.raises(ScenarioError, match="registered controllers: fixed, oracle, needy"):
        ControllerSpec.parse("gcc").check(REGISTRY)
    with pytest.raises(ScenarioError, match="'speed'.*allowed: rate, pacing_factor"):
        ControllerSpec.parse("fixed:speed=1").check(REGISTRY)
    with pytest.raises(ScenarioError, match="'rate' is required"):
        ControllerSpec.parse("fixed").check(REGISTRY)


def test_default_specs():
    specs, skipped = default_specs("3Mbps", REGISTRY)
    assert [s.label for s in specs] == ["fixed:rate=3Mbps", "oracle"]
    assert skipped == ["needy"]


def test_names_and_rates():
    assert folder_name("fixed:rate=5Mbps") == "fixed_rate=5Mbps"
    assert folder_name("a/b c") == "a_b_c" and folder_name("..") == "run"
    assert format_rate(4_637_000) == "4.64Mbps" and format_rate(850_000) == "850kbps"
    assert format_rate(2e9) == "2Gbps"


def test_rows_and_tables():
    rows = comparison_rows([("fixed:rate=4Mbps", summary(flow())), ("oracle", summary(flow(controller="oracle")))])
    assert [r["controller"] for r in rows] == ["fixed:rate=4Mbps", "oracle"]
    assert rows[0]["throughput_mbps"] == pytest.approx(4.5) and rows[0]["utilization_pct"] == pytest.approx(50)
    assert rows[0]["latency_p99_ms"] is None and rows[0]["freezes"] == 1
    assert rows[0]["latency_p95_ms"] == pytest.approx(45.0) and rows[0]["display_rate_fps"] == pytest.approx(29.9)
    text = text_table(rows)
    assert "fixed:rate=4Mbps" in text and "4.50" in text and "–" in text
    widths = {len(line) for line in text.splitlines()[2:4]}
    assert len(widths) == 1, "rule and rows line up"
    md = markdown_table(rows)
    assert md.splitlines()[0].startswith("| controller | throughput Mbps | utilization %")
    assert "flow" not in md.splitlines()[0], "one flow: no flow column"
    assert md.count("\n") == 4


def test_multi_flow_rows(tmp_path):
    rows = comparison_rows([("oracle", summary(flow("a"), flow("b", p95=None)))])
    assert [r["flow"] for r in rows] == ["a", "b"]
    assert "| controller | flow |" in markdown_table(rows)
    write_csv(rows, tmp_path / "c.csv")
    got = list(csv.DictReader(io.StringIO((tmp_path / "c.csv").read_text())))
    assert got[1]["flow"] == "b" and got[1]["latency_p95_ms"] == "" and got[0]["freezes"] == "1"


def test_no_negative_zero():
    rows = comparison_rows([("cbr", summary(dict(flow(), video_bitrate_bps=-0.0, utilization=-1e-9)))])
    text = text_table(rows) + markdown_table(rows)
    assert "-0.0" not in text and "0.00" in text


def test_run_rows_use_flow_controller():
    rows = comparison_rows([(None, summary(flow(controller="oracle")))])
    assert rows[0]["controller"] == "oracle"


def test_throughput_bins():
    packets = pl.DataFrame({"flow": np.array([0, 0, 0, 1], np.uint32), "size": np.array([1000, 1000, 500, 9], np.uint32),
                            "recv_ns": np.array([0, 150_000_000, 250_000_000, -1], np.int64)})
    t, rate = throughput(packets, duration_s=0.5, bin_s=0.2)
    assert list(t) == pytest.approx([0, 0.2, 0.4])
    assert list(rate) == pytest.approx([2000 * 8 / 0.2 / 1e6, 500 * 8 / 0.2 / 1e6, 0])


def test_break_gaps_and_cdf():
    t = np.array([0.0, 0.1, 0.2, 2.0, 2.1])
    bt, by = break_gaps(t, t * 2)
    assert np.isnan(bt[3]) and len(bt) == 6
    x, y = cdf(np.array([3.0, 1.0, 2.0]))
    assert list(x) == [1, 2, 3] and list(y) == pytest.approx([1 / 3, 2 / 3, 1])


def test_thinning_keeps_what_a_figure_shows():
    from rtcc.series import thin

    rng = np.random.default_rng(7)
    t = np.sort(rng.uniform(0, 300, 500_000))
    y = rng.normal(0, 1, len(t))
    y[123_456] = 50.0  # one spike among half a million points
    tt, ty = thin(t, y, buckets=1000)
    assert len(tt) <= 4 * 1000 and np.all(np.diff(tt) >= 0), "at most four points a slice, in time order"
    assert ty.max() == 50.0 and ty.min() == y.min(), "a lone extreme survives thinning"
    assert tt[0] == t[0] and tt[-1] == t[-1], "the series keeps its ends"
    for lo in (0.0, 150.0, 299.7):  # every slice keeps its own envelope
        inside, kept = (t >= lo) & (t < lo + 0.3), (tt >= lo) & (tt < lo + 0.3)
        assert ty[kept].max() == y[inside].max() and ty[kept].min() == y[inside].min()
    y[200_000] = np.nan  # a gap inside a slice does not hide its extremes
    tt, ty = thin(t, y, buckets=1000)
    width = (t[-1] - t[0]) / 1000
    k = (t[200_000] - t[0]) // width  # the slice holding the gap
    inside = (t >= t[0] + k * width) & (t < t[0] + (k + 1) * width)
    kept = (tt >= t[0] + k * width) & (tt < t[0] + (k + 1) * width)
    assert np.nanmax(ty[kept]) == np.nanmax(y[inside]) and np.nanmin(ty[kept]) == np.nanmin(y[inside])
    short = np.arange(10.0)
    assert thin(short, short)[0] is not None and len(thin(short, short)[0]) == 10, "short series drawn as they are"


def test_run_plots_report_their_progress(tmp_path):
    from rtcc.plots import run_plots
    from rtcc.scenario import Scenario

    result = Scenario.from_dict({"name": "p", "duration": "3s", "path": {"forward": {"capacity": "2Mbps"}},
                                 "flows": [{"controller": "gcc"}]}).run(seed=1)
    calls = []
    paths = run_plots(result, tmp_path, progress=lambda done, total: calls.append((done, total)))
    assert calls == [(i, len(paths)) for i in range(len(paths) + 1)], calls
    assert all(p.stat().st_size > 0 for p in paths)


class FakeTTY(io.StringIO):
    def isatty(self):
        return True


def test_progress_only_on_a_terminal():
    tty = FakeTTY()
    with TerminalProgress("run", tty) as bar:
        assert bar.callback is bar
        bar(0.0)
        bar(0.004)  # same percentage: not redrawn
        bar(0.5)
    out = tty.getvalue()
    assert "run:   0%" in out and "run:  50%" in out, out
    assert out.count("run:  50%") == 1 and "run:   1%" not in out, "redrawn when the percentage changes only"
    assert out.endswith("\r") or out.endswith("\033[A") or "\r" in out[-5:], "the bar is erased at the end"
    plain = io.StringIO()
    with TerminalProgress("run", plain) as bar:
        assert bar.callback is None
        bar(0.5)
    assert plain.getvalue() == ""


def test_sweep_progress_counts_runs_on_a_terminal():
    from rtcc.progress import RunsProgress

    tty = FakeTTY()
    show = RunsProgress("grid", 4, tty)
    for done in range(5):
        show(done, 4)
    show.close()
    assert "4/4 runs" in tty.getvalue(), tty.getvalue()
    plain = io.StringIO()
    quiet = RunsProgress("grid", 4, plain)
    quiet(1, 4)
    quiet.close()
    assert plain.getvalue() == ""
