"""`rtcc bench --case encoders`: how fast the real encoders run, in frames per second of one core.

Each codec encodes 150 frames of the default clip (carphone) at 360p and 720p with a target of
0.1 bit per pixel per frame (0.7 Mbit/s at 360p, 2.8 Mbit/s at 720p, 30 frame/s), one thread,
libwebrtc's real-time settings; the figure is frames over the process's CPU time spent encoding
(so it is per core), after ten frames of warm-up."""

from __future__ import annotations

import time

CASES = (("vp8", 640, 360), ("vp8", 1280, 720), ("x264", 640, 360), ("x264", 1280, 720))
FRAMES = 150


def run() -> list[dict]:
    from .encoders import RealEncoder

    out = []
    for model, w, h in CASES:
        enc = RealEncoder(model, {"resolution": f"{w}x{h}"}, ".", {"flow": "bench", "fps": 30.0})
        target = 0.1 * w * h * 30
        for i in range(10):
            enc.encode(i / 30, target, 30.0)
        cpu = time.process_time()
        wall = time.perf_counter()
        for i in range(10, 10 + FRAMES):
            enc.encode(i / 30, target, 30.0)
        cpu = time.process_time() - cpu
        out.append({"codec": model, "resolution": f"{w}x{h}", "frames": FRAMES,
                    "fps_per_core": FRAMES / cpu, "wall_fps": FRAMES / (time.perf_counter() - wall)})
        enc.close()
    return out
