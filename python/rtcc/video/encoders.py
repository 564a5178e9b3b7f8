"""The real encoders as rtcc encoder models: ``encoder = { model = "vp8" | "x264", ... }``.

Each flow gets one running codec (:class:`RealEncoder`) fed with a real clip
(:mod:`rtcc.video.clips`). The simulator asks it for a frame at each capture instant with the
controller's current target; the target reaches the running encoder before that frame is
encoded (libvpx: ``vpx_codec_enc_config_set``; x264: ``x264_encoder_reconfig``), the way
libwebrtc's ``SetRates`` does, never by reopening it. A keyframe request (PLI) forces the next
frame to be a keyframe; a resolution change (the quality scaler) reopens the codec at the new
size, as libwebrtc re-initialises its encoder, and the clip is rescaled from its source.

Every encoded frame's bitstream is kept so that the receiver's side can be decoded afterwards
(:mod:`rtcc.video.quality`). Parameters:

``clip``        a bundled clip (``carphone``, ``bikes``, ``bigbuckbunny``) or a video file; default
                ``carphone`` (a head-and-shoulders call)
``resolution``  the capture resolution, a rung of the ladder; default ``640x360``
``preset``      x264 only: its speed preset; default ``veryfast``
``floor_bpp``, ``saturation_bpp``  the lowest and highest rate the degradation policy assumes at
                each rung, in bits per pixel (the lagged model's defaults, 0.01 and 0.45)
"""

from __future__ import annotations

import threading

__all__ = ["RealEncoder", "register", "opened"]

MODELS = ("vp8", "x264")
PARAMS = {
    "vp8": ("clip", "resolution", "floor_bpp", "saturation_bpp"),
    "x264": ("clip", "resolution", "preset", "floor_bpp", "saturation_bpp"),
}
DEFAULT_CLIP = "carphone"
DEFAULT_RESOLUTION = (640, 360)
X264_PRESETS = ("ultrafast", "superfast", "veryfast", "faster", "fast", "medium")

# The encoders opened by the runs of this thread, for the quality scoring after a run.
_OPENED = threading.local()


def opened() -> list["RealEncoder"]:
    """The encoders opened in this thread since the last call (and forget them)."""
    out = getattr(_OPENED, "list", [])
    _OPENED.list = []
    return out


def _resolution(text) -> tuple[int, int]:
    if not isinstance(text, str) or "x" not in text:
        raise ValueError(f"resolution: expected WIDTHxHEIGHT such as \"640x360\", got {text!r}")
    w, _, h = text.partition("x")
    try:
        w, h = int(w), int(h)
    except ValueError:
        raise ValueError(f"resolution: expected WIDTHxHEIGHT such as \"640x360\", got {text!r}") from None
    if w < 16 or h < 16 or w % 2 or h % 2 or w > 4096 or h > 4096:
        raise ValueError(f"resolution: {text} must have even sides from 16 to 4096")
    return w, h


def _settings(model: str, params: dict) -> dict:
    allowed = PARAMS[model]
    for k in params:
        if k not in allowed:
            raise ValueError(f"{k}: unknown field; the {model} encoder takes {', '.join(allowed)}")
    clip = params.get("clip", DEFAULT_CLIP)
    if not isinstance(clip, str) or not clip:
        raise ValueError(f"clip: expected a clip name or a file, got {clip!r}")
    res = _resolution(params["resolution"]) if "resolution" in params else DEFAULT_RESOLUTION
    preset = params.get("preset", "veryfast")
    if preset not in X264_PRESETS:
        raise ValueError(f"preset: {preset!r} is not one of {', '.join(X264_PRESETS)}")
    bpp = {}
    for k, default in (("floor_bpp", 0.01), ("saturation_bpp", 0.45)):
        v = params.get(k, default)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v < 10:
            raise ValueError(f"{k}: expected bits per pixel between 0 and 10, got {v!r}")
        bpp[k] = float(v)
    if bpp["floor_bpp"] >= bpp["saturation_bpp"]:
        raise ValueError("floor_bpp: must be below saturation_bpp")
    return {"clip": clip, "resolution": res, "preset": preset, **bpp}


def _check_codec(model: str) -> None:
    if model == "vp8":
        from .libvpx import library
    else:
        from .libx264 import library
    try:
        library()
    except Exception as e:  # LibraryMissing says what to install
        raise ValueError(str(e)) from None


def check(model: str, params: dict, base_dir: str) -> None:
    """Validate a scenario's encoder table (ValueError("field: problem")): the fields, the
    codec library, and the clip (decoded once here, so a corrupt clip is refused by name)."""
    s = _settings(model, params)
    _check_codec(model)
    from .clips import ClipError, load

    try:
        load(s["clip"], *s["resolution"], 30.0, base_dir)
    except ClipError as e:
        raise ValueError(f"clip: {e}") from None
    except ImportError as e:
        raise ValueError(f"the {model} encoder reads clips with PyAV: pip install av ({e})") from None


class RealEncoder:
    """One flow's running codec over a looped clip (the object the core's encoder adapter calls)."""

    def __init__(self, model: str, params: dict, base_dir: str, ctx: dict):
        s = _settings(model, params)
        self.model, self.flow, self.fps = model, ctx.get("flow", ""), float(ctx.get("fps", 30.0))
        #: The flow's `vbv` in frames of the target (x264 only; None: its one-second VBV).
        self.vbv = ctx.get("vbv")
        self.clip_name, self.base_dir = s["clip"], base_dir
        self.preset, self.floor_bpp, self.saturation_bpp = s["preset"], s["floor_bpp"], s["saturation_bpp"]
        self.source_resolution = s["resolution"]
        self.width, self.height = s["resolution"]
        self._codec = None
        self._keyframe = True
        self._t0: float | None = None
        self._last_index = -1
        #: Every encoded frame: (capture time s, capture index, bitstream, keyframe, width, height).
        self.frames: list[tuple[float, int, bytes, bool, int, int]] = []
        #: The target each frame was encoded with (bit/s), for the step-response tests.
        self.targets: list[float] = []
        self._open(30_000.0)
        if not hasattr(_OPENED, "list"):
            _OPENED.list = []
        _OPENED.list.append(self)

    def _open(self, target_bps: float) -> None:
        from .clips import load

        if self._codec is not None:
            self._codec.close()
        self.clip = load(self.clip_name, self.width, self.height, self.fps, self.base_dir)
        if self.model == "vp8":
            from .libvpx import Vp8Encoder

            self._codec = Vp8Encoder(self.width, self.height, self.fps, target_bps)
        else:
            from .libx264 import X264Encoder

            self._codec = X264Encoder(self.width, self.height, self.fps, target_bps, self.preset, self.vbv)
        self._keyframe = True

    # -- the protocol the core calls ---------------------------------------------------------

    def encode(self, now_s: float, target_bps: float, fps: float):
        if self._t0 is None:
            self._t0 = now_s
        index = int(round((now_s - self._t0) * self.fps))
        if target_bps <= 0 or fps <= 0:
            return 0, False, None, self.width, self.height  # a pause: the codec does not run
        self._codec.set_rate(target_bps)
        # The frame lasts until the next one the sender will encode (its frame rate may be below
        # the capture rate), which is what the codec's rate control budgets by.
        data, key = self._codec.encode(self.clip.frame(index).tobytes(), 1.0 / fps, self._keyframe)
        if data:
            self._keyframe = False
            self.frames.append((now_s, index, data, key, self.width, self.height))
            self.targets.append(target_bps)
        return len(data), key, None, self.width, self.height

    def request_keyframe(self) -> None:
        self._keyframe = True

    def reset(self) -> None:
        self._open(self._codec.target_bps)

    def set_resolution(self, width: int, height: int) -> None:
        if (width, height) != (self.width, self.height):
            self.width, self.height = width, height
            self._open(self._codec.target_bps)

    def clip_at_source(self):
        """The clip at the capture resolution (what quality is scored against)."""
        from .clips import load

        return load(self.clip_name, *self.source_resolution, self.fps, self.base_dir)

    def bitrate_limits(self, width: int, height: int, fps: float):
        pixels = width * height * fps
        return self.floor_bpp * pixels, self.saturation_bpp * pixels

    def close(self) -> None:
        if self._codec is not None:
            self._codec.close()
            self._codec = None


def files(params: dict, base_dir: str) -> list[tuple[str, str]]:
    """The input files an encoder table names: its clip, when that is a file and not a bundled
    clip's name (a sweep on a cluster ships them)."""
    from pathlib import Path

    from .clips import BUNDLED

    clip = params.get("clip", DEFAULT_CLIP)
    if not isinstance(clip, str) or clip in BUNDLED:
        return []
    path = Path(clip) if Path(clip).is_absolute() else Path(base_dir) / clip
    return [("clip", str(path))]


def register() -> None:
    """Make ``vp8`` and ``x264`` encoder models of this process (done when rtcc is imported).
    Nothing is loaded until a scenario names one."""
    from .. import _core

    for model in MODELS:
        _core.register_encoder(
            model,
            lambda params, base_dir, m=model: check(m, params, base_dir),
            lambda params, base_dir, ctx, m=model: RealEncoder(m, params, base_dir, ctx),
            files,
        )
