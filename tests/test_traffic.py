"""RMCAT traffic models through the command line: a video flow with an audio flow, short TCP flows
(RFC 8867 5.7) and RFC 8868's no-reordering jitter, run and compared end to end."""

import json
import textwrap

from rtcc.cli import main

SCENARIO = textwrap.dedent(
    """
    duration = "30s"
    seed = 2
    [path.forward]
    capacity = "2Mbps"
    delay = "50ms"
    queue = "300ms"
    jitter = { model = "nr-rbpdv", std = "5ms" }
    [[flows]]
    name = "video"
    controller = "gcc"
    [[flows]]
    name = "audio"
    kind = "audio"
    [[flows]]
    name = "short0"
    kind = "tcp"
    controller = "reno"
    app = { model = "short", initial = "on", mean_idle = "3s" }
    [[flows]]
    name = "short1"
    kind = "tcp"
    controller = "reno"
    app = { model = "short", initial = "off", mean_idle = "3s" }
    """
)


def test_video_audio_and_short_tcp_flows_run_and_report(tmp_path, capsys):
    path = tmp_path / "rmcat.toml"
    path.write_text(SCENARIO)
    out = tmp_path / "run"
    assert main(["run", str(path), "-o", str(out)]) == 0
    assert (out / "plots" / "throughput.png").is_file()
    assert "Traceback" not in capsys.readouterr().err
    summary = json.loads((out / "summary.json").read_text())
    flows = {f["name"]: f for f in summary["flows"]}
    audio = flows["audio"]
    # 32 kbit/s of payload in 20 ms packets: 80 + 40 bytes every 20 ms, 48 kbit/s on the wire.
    assert audio["controller"] == "cbr"
    assert abs(audio["throughput_bps"] - 48_000) < 500
    assert audio["audio"]["jitter_mean_ms"] > 0
    # The 3 ms of mean PDV ride on 50 ms of propagation and a queue the TCP flows fill.
    assert audio["one_way_delay_ms"]["p50"] > 50
    for name in ("short0", "short1"):
        short = flows[name]["short_tcp"]
        assert short["downloads"] >= 2, (name, short)
        assert 30_000 * short["downloads"] <= short["bytes"] <= 50_000 * short["downloads"]
        assert short["completion_p50_s"] > 0.2
    assert "audio" not in flows["video"] and "short_tcp" not in flows["video"]
    assert set(summary["total"]["jain_index_by_kind"]) == {"video", "audio", "tcp"}
    # The same scenario again gives the same summary.
    again = tmp_path / "again"
    assert main(["run", str(path), "-o", str(again), "--no-plots"]) == 0
    assert json.loads((again / "summary.json").read_text()) == summary


def test_a_comparison_with_audio_and_short_flows_reports_every_flow(tmp_path, capsys):
    path = tmp_path / "rmcat.toml"
    path.write_text(SCENARIO.replace('duration = "30s"', 'duration = "10s"'))
    out = tmp_path / "cmp"
    assert main(["compare", str(path), "-c", "gcc", "-c", "fixed:rate=1Mbps", "-o", str(out)]) == 0
    text = capsys.readouterr()
    assert "Traceback" not in text.err
    for label in ("gcc", "fixed"):
        summary = json.loads(next((out / "runs").glob(f"{label}*/summary.json")).read_text())
        names = [f["name"] for f in summary["flows"]]
        assert names == ["video", "audio", "short0", "short1"]
        # Only the video flow's controller is replaced.
        assert [f["controller"] for f in summary["flows"]][1:] == ["cbr", "reno", "reno"]
