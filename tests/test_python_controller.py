"""Controllers written in Python: registered by name, run by the core, errors made clear."""

import math

import pytest

import rtcc
from rtcc.compare import run_all
from rtcc.registry import ControllerSpec


class Constant:
    """Asks for a constant rate and checks the feedback it gets."""

    def __init__(self, params, ctx):
        self.rate = rtcc._core.parse_rate(params["rate"])
        self.ctx = ctx
        self.reports = 0
        self.sent = 0

    def on_packet_sent(self, now_s, seq, size, kind):
        assert kind in ("media", "padding", "probe", "retransmission")
        self.sent += 1

    def on_feedback(self, now_s, report):
        n = len(report["seq"])
        assert n and all(len(report[k]) == n for k in ("size", "send_time_s", "receive_time_s"))
        assert all(math.isnan(r) or r >= s for s, r in zip(report["send_time_s"], report["receive_time_s"]))
        self.reports += 1

    def decision(self):
        return {"target_bps": self.rate, "pacing_bps": 2.5 * self.rate}


class Stepping(Constant):
    """Doubles its rate once, at a timer 2 s in."""

    def __init__(self, params, ctx):
        super().__init__(params, ctx)
        self.fired = []

    def next_timeout(self):
        return None if self.fired else 2.0

    def on_timeout(self, now_s):
        self.fired.append(now_s)
        self.rate *= 2


class Failing(Constant):
    """Raises in on_feedback when its parameter ``fail`` is true (so that it is harmless in
    other tests that run every registered controller with its defaults)."""

    def __init__(self, params, ctx):
        super().__init__(params, ctx)
        self.fail = params.get("fail", False)

    def on_feedback(self, now_s, report):
        if self.fail:
            raise ValueError("boom")
        super().on_feedback(now_s, report)


class Listening(Constant):
    """Keeps the frame acknowledgements, encoded frames and rate reports it gets."""

    def __init__(self, params, ctx):
        super().__init__(params, ctx)
        self.acks, self.encoded, self.rate_reports = [], [], []

    def on_frame_ack(self, now_s, ack):
        self.acks.append((now_s, ack))

    def on_frame_encoded(self, now_s, frame):
        self.encoded.append((now_s, frame))

    def on_rate_report(self, now_s, report):
        self.rate_reports.append((now_s, report))


CREATED = []


def kept(cls):
    """A factory that keeps the controllers it makes in CREATED."""
    def factory(params, ctx):
        CREATED.append(cls(params, ctx))
        return CREATED[-1]
    return factory


@pytest.fixture(scope="module", autouse=True)
def registered():
    """Registered when this module's tests start (not at collection), so that the tests of other
    modules that run every registered controller do not see them."""
    rtcc.register_controller("pytest_constant", kept(Constant), "a constant rate", {"rate": ""})
    rtcc.register_controller("pytest_stepping", kept(Stepping), params={"rate": ""})
    rtcc.register_controller("pytest_failing", Failing, params={"rate": "", "fail": "false"})
    rtcc.register_controller("pytest_listening", kept(Listening), params={"rate": ""},
                             feedback={"interval": "50ms", "frame_acks": True, "rate_reports": "100ms"})


def scenario(controller: str, **params) -> rtcc.Scenario:
    return rtcc.Scenario(duration="4s", forward=dict(capacity="8Mbps", delay="20ms", queue="100ms"),
                         flows=[dict(name="video", controller=controller, params=params or {"rate": "2Mbps"})])


def test_a_python_controller_runs_at_the_rate_it_decides():
    result = scenario("pytest_constant").run()
    flow = result.summary["flows"][0]
    assert flow["video_bitrate_bps"] == pytest.approx(2e6, rel=0.03)
    assert flow["frames_delivered"] >= 110
    c = CREATED[-1]
    assert c.ctx["fps"] == 30 and c.ctx["max_payload_bytes"] == 1200
    assert c.reports > 50 and c.sent == flow["packets_sent"]


def test_the_timer_fires_when_asked():
    result = scenario("pytest_stepping").run()
    assert CREATED[-1].fired == [2.0]
    frames = result.frames.filter(result.frames["flow"] == 0)
    targets = frames["target_bps"].to_list()
    assert targets[0] == 2e6 and targets[-1] == 4e6


def test_it_is_listed_and_compared_like_the_builtin_ones():
    listed = {c["name"]: c for c in rtcc.controllers()}["pytest_constant"]
    assert listed["summary"] == "a constant rate"
    assert listed["params"] == [{"name": "rate", "default": "", "doc": ""}]
    results = run_all(scenario("fixed"), [ControllerSpec.parse("pytest_constant:rate=1Mbps")])
    rate = results["pytest_constant:rate=1Mbps"].summary["flows"][0]["video_bitrate_bps"]
    assert rate == pytest.approx(1e6, rel=0.03)


def test_an_exception_fails_the_run_with_its_message():
    with pytest.raises(RuntimeError, match=r'"pytest_failing": on_feedback\(\) raised ValueError: boom') as e:
        scenario("pytest_failing", rate="2Mbps", fail=True).run()
    assert isinstance(e.value.__cause__, ValueError)


def test_names_and_parameters_are_checked():
    with pytest.raises(ValueError, match="already registered"):
        rtcc.register_controller("pytest_constant", Constant)
    with pytest.raises(ValueError, match="already registered"):
        rtcc.register_controller("gcc", Constant)
    with pytest.raises(rtcc.ScenarioError, match=r'no parameter "rat" \(did you mean "rate"\?\); valid parameters: rate'):
        scenario("pytest_constant", rat="1Mbps").validate()


def test_frames_and_rate_reports_reach_a_python_controller_that_asks_for_them():
    result = scenario("pytest_listening").run()
    c = CREATED[-1]
    frames = result.frames.filter(result.frames["size"] > 0)
    # Every encoded frame, in order, with its capture time and size.
    assert [f["frame"] for _, f in c.encoded] == frames["frame"].to_list()
    assert [f["size"] for _, f in c.encoded] == frames["size"].to_list()
    assert c.encoded[1][1]["capture_time_s"] == pytest.approx(1 / 30)
    # An acknowledgement for every frame the receiver completed in time for it to come back.
    delivered = result.summary["flows"][0]["frames_delivered"]
    assert delivered - 3 <= len(c.acks) <= delivered and not any(a["lost"] for _, a in c.acks)
    assert all(now >= a["complete_time_s"] for now, a in c.acks)
    # A report every 100 ms of the receiver's clock, windows end to end, whose bytes are what
    # arrived in them.
    reports = [r for _, r in c.rate_reports]
    assert 38 <= len(reports) <= 40
    assert all(a["window_end_s"] == pytest.approx(b["window_start_s"]) for a, b in zip(reports, reports[1:]))
    packets = result.packets.filter(result.packets["recv_ns"] >= 0)
    for r in reports[5:10]:
        got = packets.filter((packets["recv_ns"] > r["window_start_s"] * 1e9)
                             & (packets["recv_ns"] <= r["window_end_s"] * 1e9))
        assert r["bytes"] == got["size"].sum() and r["packets"] == got.height


def test_a_python_controllers_feedback_is_checked():
    with pytest.raises(ValueError, match="unknown field `rate_report`"):
        rtcc.register_controller("pytest_bad_feedback", Constant, feedback={"rate_report": "50ms"})
    with pytest.raises(ValueError, match="at least 1ms"):
        rtcc.register_controller("pytest_bad_feedback", Constant, feedback={"interval": "50ms", "rate_reports": "0ms"})
    with pytest.raises(ValueError, match="set an interval"):
        rtcc.register_controller("pytest_bad_feedback", Constant, feedback={"frame_acks": True})


def test_a_python_controller_declares_media_defaults_that_a_flow_takes_unless_it_writes_its_own():
    media = {"encoder": {"model": "lagged", "noise": 0.1}, "frame_dropper": False}
    rtcc.register_controller("pytest_media", Constant, params={"rate": ""}, media=media)
    listed = next(c for c in rtcc.controllers() if c["name"] == "pytest_media")
    assert listed["media"] == media
    taken = scenario("pytest_media").run().facts["flows"][0]["media"]
    assert taken["encoder"] == media["encoder"] and taken["frame_dropper"] is False
    assert taken["controller_defaults"] == ["encoder", "frame_dropper"]
    data = scenario("pytest_media").to_dict()
    data["flows"][0].update(encoder="ideal", frame_dropper=True)
    own = rtcc.Scenario.from_dict(data).run().facts["flows"][0]["media"]
    assert (own["encoder"], own["frame_dropper"], own["controller_defaults"]) == ("ideal", True, [])
    with pytest.raises(ValueError, match="media: unknown field `dropper`"):
        rtcc.register_controller("pytest_bad_media", Constant, media={"dropper": False})
    with pytest.raises(ValueError, match="media.degradation: unknown degradation preference"):
        rtcc.register_controller("pytest_bad_media", Constant, media={"degradation": "sideways"})
    with pytest.raises(ValueError, match="media.encoder.nois"):
        rtcc.register_controller("pytest_bad_media", Constant, media={"encoder": {"model": "lagged", "nois": 1}})
