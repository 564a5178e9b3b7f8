"""Python API: building, loading, deriving, validating and running scenarios; Result contents."""

import json
import textwrap

import polars as pl
import pytest

import rtcc

SCENARIO = textwrap.dedent(
    """
    duration = "5s"
    seed = 3
    [path.forward]
    capacity = "8Mbps"
    delay = "20ms"
    queue = "100ms"
    [[flows]]
    name = "video"
    controller = "fixed"
    params = { rate = "4Mbps" }
    """
)


def small(**kw) -> rtcc.Scenario:
    args = dict(duration="4s", forward=dict(capacity="8Mbps", delay="20ms", queue="100ms"),
                flows=[dict(name="video", controller="fixed", params={"rate": "3Mbps"})], name="small")
    args.update(kw)
    return rtcc.Scenario(**args)


@pytest.fixture(scope="module")
def result():
    return small().run()


def test_public_api():
    for name in ["Scenario", "Result", "run_file", "controllers", "ScenarioError", "__version__"]:
        assert hasattr(rtcc, name), name
    assert issubclass(rtcc.ScenarioError, ValueError)
    assert isinstance(rtcc.__version__, str) and rtcc.__version__


def test_controllers_registry():
    regs = {c["name"]: c for c in rtcc.controllers()}
    assert {"fixed", "oracle"} <= set(regs)
    rate = [p for p in regs["fixed"]["params"] if p["name"] == "rate"]
    assert rate and rate[0]["default"] == "", "fixed's rate is required (empty default)"
    for c in regs.values():
        assert isinstance(c["summary"], str)
        for p in c["params"]:
            assert set(p) >= {"name", "default", "doc"}


def test_scenario_dict_round_trip():
    s = small(seed=7, reverse=dict(delay="30ms"))
    d = s.to_dict()
    assert d["duration"] == "4s" and d["seed"] == 7 and d["name"] == "small"
    assert d["path"]["forward"]["capacity"] == "8Mbps" and d["path"]["reverse"] == {"delay": "30ms"}
    d["seed"] = 99  # a copy: changing it leaves the scenario alone
    assert s.to_dict()["seed"] == 7
    again = rtcc.Scenario.from_dict(s.to_dict())
    assert again == s and again.to_dict() == s.to_dict()
    assert json.loads(s.to_json()) == s.to_dict()


def test_default_scenario_is_valid():
    rtcc.Scenario().validate()


def test_from_file(tmp_path):
    path = tmp_path / "link.toml"
    path.write_text(SCENARIO)
    s = rtcc.Scenario.from_file(path)
    assert s.name == "link", "the name defaults to the file stem"
    assert s.base_dir == str(tmp_path)
    s.validate()


def test_from_file_errors_name_the_file(tmp_path):
    with pytest.raises(rtcc.ScenarioError, match="nope.toml"):
        rtcc.Scenario.from_file(tmp_path / "nope.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("duration = \n")
    with pytest.raises(rtcc.ScenarioError, match="bad.toml.*TOML"):
        rtcc.Scenario.from_file(bad)


def test_with_controller_replaces_every_flow():
    two = small(flows=[dict(controller="fixed", params={"rate": "1Mbps"}),
                       dict(controller="fixed", params={"rate": "2Mbps", "pacing_factor": 2.0})])
    o = two.with_controller("oracle", {"fraction": 0.5})
    assert [f["controller"] for f in o.to_dict()["flows"]] == ["oracle", "oracle"]
    assert [f["params"] for f in o.to_dict()["flows"]] == [{"fraction": 0.5}] * 2
    assert [f["controller"] for f in two.to_dict()["flows"]] == ["fixed", "fixed"], "original unchanged"
    spec = two.with_controller("fixed:rate=5Mbps")
    assert spec.to_dict()["flows"][0]["params"] == {"rate": "5Mbps"}
    o.validate()
    spec.validate()


def test_with_controller_leaves_cross_traffic_alone():
    sc = small(flows=[dict(controller="fixed", params={"rate": "1Mbps"}), dict(kind="cbr", rate="2Mbps")])
    o = sc.with_controller("oracle")
    flows = o.to_dict()["flows"]
    assert flows[0]["controller"] == "oracle"
    assert "controller" not in flows[1] and flows[1]["rate"] == "2Mbps"
    summary = o.run().summary
    assert summary["flows"][1]["controller"] == "cbr"


@pytest.mark.parametrize(
    "change, field",
    [
        (dict(forward=dict(capacity="20Mbmps", delay="20ms", queue="100ms")), "capacity"),
        (dict(forward=dict(capacity=20, delay="20ms", queue="100ms")), "capacity"),
        (dict(flows=[dict(controller="nosuch")]), "nosuch"),
        (dict(flows=[dict(controller="fixed", params={"rate": "1Mbps", "bogus": 1})]), "bogus"),
        (dict(flows=[dict(controller="fixed", params={})]), "rate"),
    ],
)
def test_validate_names_the_field(change, field):
    with pytest.raises(rtcc.ScenarioError, match=field):
        small(**change).validate()
    with pytest.raises(rtcc.ScenarioError, match=field):
        small(**change).run()


def test_bad_seed():
    with pytest.raises(rtcc.ScenarioError, match="seed"):
        small().run(seed=-1)


def test_result_tables(result):
    assert isinstance(result, rtcc.Result)
    for table in ("packets", "frames", "state", "capacity"):
        assert isinstance(getattr(result, table), pl.DataFrame), table
    p = result.packets
    assert set(p.columns) >= {"flow", "seq", "kind", "size", "frame", "send_ns", "enqueue_ns", "depart_ns",
                              "recv_ns", "dropped"}
    assert p.height > 0 and p.schema["send_ns"] == pl.Int64 and p.schema["dropped"] == pl.Boolean
    assert result.frames.height > 0 and "delay_ns" in result.frames.columns
    assert set(result.state.columns) >= {"flow", "time_ns", "signal", "value"}
    assert "target_bps" in set(result.state["signal"].to_list())
    assert result.capacity.height > 0 and set(result.capacity.columns) >= {"time_ns", "bps"}
    assert [f["name"] for f in result.flows] == ["video"]
    assert result.flows[0]["controller"] == "fixed"


def test_result_summary(result):
    assert json.loads(result.summary_json) == result.summary
    s = result.summary
    assert s["seed"] == 1 and s["duration_s"] == pytest.approx(4.0)
    flow = s["flows"][0]
    assert flow["name"] == "video" and flow["controller"] == "fixed"
    # A fixed 3 Mbit/s flow on an idle 8 Mbit/s link: every byte arrives.
    assert flow["throughput_bps"] == pytest.approx(3e6, rel=0.01)
    assert {"p50", "p95", "p99"} <= set(flow["frame_delay_ms"])
    assert "capacity_bps" in s["total"]
    assert result.scenario == small().to_dict() | {"seed": 1}


def test_same_seed_same_summary(result):
    assert small().run().summary_json == result.summary_json


def test_seed_override_recorded():
    r = small().run(seed=5)
    assert r.summary["seed"] == 5 and r.scenario["seed"] == 5


def test_progress_callback():
    seen = []
    small(duration="3s").run(progress=seen.append)
    assert seen, "progress is reported"
    assert all(0.0 <= f <= 1.0 for f in seen)
    assert seen == sorted(seen)


def test_save(tmp_path, result):
    out = result.save(tmp_path / "run", plots=False)
    assert (out / "summary.json").read_text() == result.summary_json
    assert json.loads((out / "scenario.json").read_text()) == result.scenario
    packets = pl.read_parquet(out / "packets.parquet")
    assert packets.equals(result.packets)
    assert not (out / "plots").exists()


def test_a_saved_run_loads_back(tmp_path, result):
    out = result.save(tmp_path / "run", plots=False)
    loaded = rtcc.Result.load(out)
    assert loaded.summary_json == result.summary_json and loaded.scenario == result.scenario
    assert loaded.flows == result.flows, "flow names, controllers, start and stop from the summary"
    for name in ("frames", "state", "capacity"):
        assert getattr(loaded, name).equals(getattr(result, name)), name
    assert loaded.packets.collect().equals(result.packets)
    copied = loaded.save(tmp_path / "copy", plots=False)
    assert (copied / "frames.parquet").read_bytes() == (out / "frames.parquet").read_bytes()
    with pytest.raises(FileNotFoundError, match="not a run folder"):
        rtcc.Result.load(tmp_path)


def test_run_file_with_trace(tmp_path, monkeypatch):
    """Trace paths are relative to the scenario file, whatever the working directory."""
    from rtcc.cli import main

    (tmp_path / "exp").mkdir()
    assert main(["trace", "lte", "--seed", "2", "--duration", "5s", "--mean", "5Mbps",
                 "-o", str(tmp_path / "exp" / "lte.trace")]) == 0
    (tmp_path / "exp" / "t.toml").write_text(SCENARIO.replace('capacity = "8Mbps"', 'trace = "lte.trace"'))
    monkeypatch.chdir(tmp_path)
    r = rtcc.run_file("exp/t.toml", controller="oracle")
    assert r.flows[0]["controller"] == "oracle" and r.summary["scenario"] == "t"
    assert r.summary["total"]["capacity_bps"] > 0


def test_summary_agrees_with_the_logs():
    # A lossy link with NACK and FEC, so every counter has something to count.
    r = small(forward=dict(capacity="8Mbps", delay="20ms", queue="100ms", loss=0.03),
              flows=[dict(name="video", controller="fixed", params={"rate": "3Mbps"},
                          recovery={"fec": 4})]).run()
    f = r.summary["flows"][0]
    p = r.packets.filter(pl.col("flow") == 0)
    received = p.filter(pl.col("recv_ns") >= 0)
    assert f["packets_sent"] == p.height
    assert f["packets_lost"] == p.filter(pl.col("dropped")).height > 0
    assert f["retransmissions"] == p.filter(pl.col("kind") == 2).height > 0
    assert f["fec_packets"] == p.filter(pl.col("kind") == 4).height > 0
    assert f["throughput_bps"] == pytest.approx(received["size"].sum() * 8 / 4.0)
    fr = r.frames.filter(pl.col("flow") == 0)
    assert f["frames_sent"] == fr.filter(pl.col("size") > 0).height
    assert f["frames_delivered"] == fr.filter(pl.col("complete_ns") >= 0).height
    assert f["frames_displayed"] == fr.filter(pl.col("display_ns") >= 0).height
    assert f["frames_recovered"] == fr.filter(pl.col("recovered")).height > 0
    assert f["frames_unrecoverable"] == fr.filter(pl.col("unrecoverable")).height


def test_a_streamed_or_forgotten_packet_log_gives_the_same_run(tmp_path):
    # 80 Mbit/s for 8 s: over 65 536 packets, so the log reaches the file in several chunks.
    sc = small(duration="8s", forward=dict(capacity="100Mbps", delay="10ms", queue="50pkts", loss=0.01),
               flows=[dict(name="video", controller="fixed", params={"rate": "80Mbps"}),
                      dict(name="probe", kind="cbr", rate="30Mbps", stop="7s")])
    kept = sc.run()
    streamed = sc.run(packets_to=tmp_path / "p.parquet")
    forgotten = sc.run(keep_packets=False)
    assert kept.summary_json == streamed.summary_json == forgotten.summary_json
    assert isinstance(streamed.packets, pl.LazyFrame) and forgotten.packets is None
    on_disk = pl.read_parquet(tmp_path / "p.parquet")
    assert kept.packets.height > 65_536 and on_disk.schema == kept.packets.schema
    assert on_disk.sort("flow", maintain_order=True).equals(kept.packets), "the same rows, each flow in send order"
    # A streamed result saved elsewhere takes its log along; one without a log cannot be saved.
    streamed.save(tmp_path / "copy", plots=True)
    assert pl.read_parquet(tmp_path / "copy" / "packets.parquet").equals(on_disk)
    with pytest.raises(ValueError, match="packets log was not kept"):
        forgotten.save(tmp_path / "none", plots=False)
    assert not (tmp_path / "none").exists()


def test_logs_to_streams_every_log_and_changes_nothing(tmp_path):
    import polars as pl

    # Video over a lossy link with an outage (frames that never complete, repairs, freezes),
    # and a flow that stops early: the frame log streams as frames settle.
    sc = small(duration="20s", forward=dict(schedule=[["0s", "2Mbps"], ["6s", "1kbps"], ["9s", "2Mbps"]],
                                            delay="30ms", queue="100ms", loss=0.02),
               flows=[dict(name="a", controller="gcc"), dict(name="b", controller="sqp", stop="15s")])
    kept = sc.run()
    (tmp_path / "logs").mkdir()
    streamed = sc.run(logs_to=tmp_path / "logs")
    assert kept.summary_json == streamed.summary_json
    assert sorted(p.name for p in (tmp_path / "logs").iterdir()) == ["frames.parquet", "packets.parquet",
                                                                      "state.parquet"]
    for name in ("frames", "state"):
        assert streamed.table(name) is not None and getattr(streamed, name).schema == getattr(kept, name).schema
    # Frames arrive as they settle, each flow's in frame order; state samples in time order.
    assert streamed.frames.sort("flow", maintain_order=True).equals(kept.frames)
    assert streamed.state.equals(kept.state)
    streamed.save(tmp_path / "copy", plots=False)
    assert pl.read_parquet(tmp_path / "copy" / "frames.parquet").equals(streamed.frames)
    with pytest.raises(ValueError, match="logs_to or packets_to"):
        sc.run(logs_to=tmp_path / "logs", packets_to=tmp_path / "p.parquet")


def test_a_long_delay_series_is_drawn_as_its_envelope(result):
    from rtcc import series

    t, d = series.packet_delay(result.packets, 0)
    te, de = series.packet_delay(result.packets, 0, max_points=50)
    assert len(t) > 50 >= len(te) > 0
    assert (de.min(), de.max()) == (d.min(), d.max()), "the envelope keeps the extremes"
    assert te.min() >= t.min() and te.max() <= t.max() and (te[1:] >= te[:-1]).all()


def test_a_run_that_fails_leaves_no_partial_packet_log(tmp_path):
    def stop(fraction):
        if fraction > 0.3:
            raise RuntimeError("stopped by the caller")

    with pytest.raises(RuntimeError, match="stopped by the caller"):
        small().run(progress=stop, packets_to=tmp_path / "p.parquet")
    assert list(tmp_path.iterdir()) == [], "neither the log nor its .partial file is left"
    with pytest.raises(RuntimeError, match="stopped by the caller"):
        small().run(progress=stop, logs_to=tmp_path)
    assert list(tmp_path.iterdir()) == [], "no log and no .partial file is left"
