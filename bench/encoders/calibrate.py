"""Encoder profiles from the real encoders, and the `lagged` model fitted to real VP8.

    python3 bench/encoders/calibrate.py           # record, fit, write profiles and docs/encoders.md (~10 min)
    python3 bench/encoders/calibrate.py --quick   # shorter sequences, fewer lagged seeds; writes nothing
    python3 bench/encoders/calibrate.py --buffer  # the fit with libvpx's rate-control buffer on; writes nothing

For each codec (vp8, x264) and clip (carphone, bikes, bigbuckbunny) at 640x360, 30 frame/s, the
real encoder (python/rtcc/video/encoders.py) is driven frame by frame with four target sequences:

- ``step``: 500 kbit/s for 5 s, 2 Mbit/s for 5 s, repeated (Vidaptive §2, Fig. 2);
- ``ramp``: 0.3 → 2.5 Mbit/s in 100 ms steps over half the sequence, then back down;
- ``random``: seeded; levels log-uniform in 0.3–2.5 Mbit/s held 0.5–4 s (whole 100 ms);
- ``keyframes``: 1 Mbit/s with a keyframe requested every 3 s (the keyframe size).

Its frame sizes are written as ``trace`` model files (``bench/encoders/profiles/``), and measured
(mean rate over target, 90 % settling after a step up and down, per-frame spread, keyframe size,
PSNR of the coded frames). The `lagged` model is driven with the same sequences through whole
simulations (a Python controller that returns the scheduled target; frame dropper, pushback and
quality scaling off, a 1 Gbit/s link) and its parameters are fitted to the real VP8 measures by
fixed-point iteration. The tables between the marker comments of docs/encoders.md are rewritten
(``--print``: only print them). Definitions: docs/encoders.md, "Calibration against real encoders".
"""

from __future__ import annotations

import argparse
import json
import math
import pickle
import random
import re
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
PROFILES = ROOT / "bench" / "encoders" / "profiles"
DOC = ROOT / "docs" / "encoders.md"
FPS = 30
WIDTH, HEIGHT = 640, 360
CODECS = ("vp8", "x264")
CLIPS = ("carphone", "bikes", "bigbuckbunny")
SEQUENCES = ("step", "ramp", "random", "keyframes")
# Seconds of each sequence (full run, --quick).
SECONDS = {"step": (200, 60), "ramp": (40, 20), "random": (40, 20), "keyframes": (15, 15)}
STEP_LOW, STEP_HIGH, STEP_HALF = 0.5e6, 2e6, 5 * FPS  # frames per half-cycle
RAMP_LOW, RAMP_HIGH = 0.3e6, 2.5e6
KEYFRAME_RATE, KEYFRAME_EVERY = 1e6, 3 * FPS
RANDOM_SEED = 1


# -- target sequences -------------------------------------------------------------------------

class Sequence:
    """A piecewise-constant target: ``changes`` = [(first frame, bit/s)], sorted; ``keyframes``:
    the frames at which a keyframe is requested."""

    def __init__(self, name: str, frames: int, changes: list[tuple[int, float]], keyframes=(), text=""):
        self.name, self.frames, self.changes = name, frames, changes
        self.keyframes = set(keyframes)
        self.text = text
        self._targets = np.empty(frames)
        for k, (start, bps) in enumerate(changes):
            end = changes[k + 1][0] if k + 1 < len(changes) else frames
            self._targets[start:end] = bps

    def target(self, i: int) -> float:
        return float(self._targets[i])

    @property
    def targets(self) -> np.ndarray:
        return self._targets


def make_sequence(name: str, seconds: int) -> Sequence:
    n = seconds * FPS
    if name == "step":
        changes = [(k * STEP_HALF, STEP_LOW if k % 2 == 0 else STEP_HIGH) for k in range(n // STEP_HALF)]
        return Sequence(name, n, changes, text=f"{STEP_LOW / 1e6:g} Mbit/s for 5 s, then {STEP_HIGH / 1e6:g} Mbit/s "
                                               f"for 5 s, repeated ({seconds} s)")
    if name == "ramp":
        steps = n // 3  # 100 ms steps
        half = steps // 2
        changes = []
        for k in range(steps):
            x = k / half if k <= half else (steps - k) / (steps - half)
            changes.append((3 * k, round(RAMP_LOW + (RAMP_HIGH - RAMP_LOW) * x, -3)))
        return Sequence(name, n, changes, text=f"{RAMP_LOW / 1e6:g} → {RAMP_HIGH / 1e6:g} Mbit/s linearly in 100 ms "
                                               f"steps over {seconds // 2} s, then back down ({seconds} s)")
    if name == "random":
        rng = random.Random(RANDOM_SEED)
        changes, start = [], 0
        while start < n:
            level = math.exp(rng.uniform(math.log(RAMP_LOW), math.log(RAMP_HIGH)))
            changes.append((start, round(level, -3)))
            start += 3 * rng.randint(5, 40)  # 0.5–4 s in whole 100 ms
        return Sequence(name, n, changes, text=f"seed {RANDOM_SEED}: levels log-uniform in {RAMP_LOW / 1e6:g}–"
                                               f"{RAMP_HIGH / 1e6:g} Mbit/s held 0.5–4 s ({seconds} s)")
    if name == "keyframes":
        return Sequence(name, n, [(0, KEYFRAME_RATE)], keyframes=range(KEYFRAME_EVERY, n, KEYFRAME_EVERY),
                        text=f"{KEYFRAME_RATE / 1e6:g} Mbit/s, a keyframe requested every 3 s ({seconds} s)")
    raise ValueError(name)


# -- recording the real encoders ---------------------------------------------------------------

def record_real(codec: str, clip: str, seq: Sequence, psnr: bool = True) -> dict:
    """Drive one real encoder with ``seq``: per-frame sizes (0: dropped by the codec), keyframe
    flags, and (``psnr``) the luma PSNR of each coded frame against its source."""
    from rtcc.video.encoders import RealEncoder

    enc = RealEncoder(codec, {"clip": clip, "resolution": f"{WIDTH}x{HEIGHT}"}, str(ROOT),
                      {"flow": "calibrate", "fps": FPS})
    sizes = np.zeros(seq.frames, dtype=np.int64)
    keys = np.zeros(seq.frames, dtype=bool)
    for i in range(seq.frames):
        if i in seq.keyframes:
            enc.request_keyframe()
        size, key, _, _, _ = enc.encode(i / FPS, seq.target(i), FPS)
        sizes[i], keys[i] = size, key
    out = {"sizes": sizes, "keyframes": keys, "psnr": None}
    if psnr:
        out["psnr"] = decoded_psnr(enc, seq.frames)
    enc.close()
    return out


def decoded_psnr(enc, frames: int) -> np.ndarray:
    """Luma PSNR of each coded frame (decoded with FFmpeg through PyAV) against the clip frame it
    encoded; NaN for frames the codec dropped."""
    import av
    from rtcc.video.quality import _decoder, _luma, psnr

    dec = _decoder(enc.model)
    out = np.full(frames, np.nan)
    for _t, index, data, _key, w, h in enc.frames:
        pictures = dec.decode(av.Packet(data))
        if pictures:
            out[index] = psnr(_luma(pictures[-1], w, h), enc.clip.frame(index)[:h])
    return out


def repeated_pictures(clip: str, frames: int) -> np.ndarray:
    """Frames whose source picture is the previous frame's (the clip's 25 frame/s resampled to
    30 repeats every sixth picture), and the frame after each (which codes two pictures' worth
    of motion): a property of the clip's resampling, not of the encoder, left out of the spread."""
    from rtcc.video.clips import load

    c = load(clip, WIDTH, HEIGHT, FPS, str(ROOT))
    idx = np.array([c.index(i) for i in range(frames)])
    rep = np.zeros(frames, dtype=bool)
    rep[1:] = idx[1:] == idx[:-1]
    after = np.zeros(frames, dtype=bool)
    after[1:] = rep[:-1]
    return rep | after


def write_profile(path: Path, codec: str, clip: str, seq: Sequence, rec: dict) -> None:
    if codec == "vp8":
        from rtcc.video import libvpx

        version = f"libvpx {libvpx.version()}"
    else:
        from rtcc.video import libx264

        version = f"libx264 build {libx264.library()[1].__name__.rsplit('_', 1)[1]}"
    lines = [
        f"# {codec} ({version}), clip {clip} at {WIDTH}x{HEIGHT}, {FPS} frame/s, configured as in "
        f"python/rtcc/video/{'libvpx' if codec == 'vp8' else 'libx264'}.py",
        f"# target sequence {seq.name}: {seq.text}",
        "# target changes (frame:bit/s): " + " ".join(f"{s}:{b:.0f}" for s, b in seq.changes),
        "# one frame per line (the trace model's <bytes> form, replay at 30 frame/s); 0: dropped by the codec;",
        "# \"# key\": a keyframe. Written by bench/encoders/calibrate.py; docs/encoders.md",
    ]
    if seq.keyframes:
        lines.insert(3, "# keyframes requested at frames " + " ".join(str(k) for k in sorted(seq.keyframes)))
    for s, k in zip(rec["sizes"], rec["keyframes"]):
        lines.append(f"{s} # key" if k else str(s))
    path.write_text("\n".join(lines) + "\n")


# -- the lagged model in a simulation ----------------------------------------------------------

_REGISTERED = False


class Scheduled:
    """A controller that returns a target schedule (``schedule``: JSON [[seconds, bit/s], ...]),
    switching a few milliseconds before each scheduled capture instant."""

    LEAD = 0.005

    def __init__(self, params, ctx):
        self.changes = json.loads(params["schedule"])
        self.k = 0
        self.rate = self.changes[0][1]

    def on_feedback(self, now_s, report):
        pass

    def next_timeout(self):
        if self.k + 1 < len(self.changes):
            return max(0.0, self.changes[self.k + 1][0] - self.LEAD)
        return None

    def on_timeout(self, now_s):
        self.k += 1
        self.rate = self.changes[self.k][1]

    def decision(self):
        return {"target_bps": self.rate, "pacing_bps": 10 * self.rate}


def _register():
    global _REGISTERED
    if not _REGISTERED:
        import rtcc

        rtcc.register_controller("calibrate-schedule", Scheduled, "a target schedule (bench/encoders/calibrate.py)",
                                 {"schedule": ""})
        _REGISTERED = True


def lagged_encoder_table(params: dict) -> dict:
    table = {"model": "lagged", "resolution": "360p"}
    for k, v in params.items():
        table[k] = f"{v:.3f}s" if k in DURATIONS else (round(v, 4) if isinstance(v, float) else v)
    return table


DURATIONS = {"up", "down", "complexity_time", "burst_every", "burst_length", "payback", "keyframe_interval"}


def record_lagged(params: dict, seq: Sequence, seed: int) -> dict:
    """Drive the lagged model (``params``: its parameters, durations in seconds) with ``seq`` in a
    simulation; the frame sizes, keyframe flags and the targets the encoder was given."""
    import rtcc

    _register()
    encoder = lagged_encoder_table(params)
    if seq.keyframes:
        encoder["keyframe_interval"] = f"{KEYFRAME_EVERY / FPS:g}s"
    sc = rtcc.Scenario.from_dict({
        "name": f"calibrate-{seq.name}", "duration": f"{seq.frames / FPS:g}s", "seed": seed,
        "path": {"forward": {"capacity": "1Gbps", "delay": "5ms"}, "reverse": {"delay": "5ms"}},
        "flows": [{"name": "video", "controller": "calibrate-schedule",
                   "params": {"schedule": json.dumps([[s / FPS, b] for s, b in seq.changes])},
                   "encoder": encoder, "degradation": "disabled", "frame_dropper": False, "pushback": False,
                   "fps": FPS}],
    }, base_dir=ROOT)
    r = sc.run()
    f = r.frames.sort("capture_ns")
    sizes = f["size"].to_numpy().astype(np.int64)[: seq.frames]
    targets = f["target_bps"].to_numpy()[: seq.frames]
    if len(sizes) != seq.frames or not np.allclose(targets, seq.targets, rtol=1e-6):
        bad = np.flatnonzero(~np.isclose(targets, seq.targets[: len(targets)], rtol=1e-6))
        raise RuntimeError(f"lagged run of {seq.name}: {len(sizes)} frames, targets differ at frames {bad[:10]}")
    return {"sizes": sizes, "keyframes": f["keyframe"].to_numpy()[: seq.frames], "psnr": None,
            "psnr_model": f["psnr_db"].to_numpy()[: seq.frames]}


# -- measures --------------------------------------------------------------------------------

def fold_step(sizes_list: list[np.ndarray], part: str = "all") -> np.ndarray:
    """Bit rate in 100 ms bins over one 10 s cycle of the step sequence, averaged over every
    cycle but the first (which holds the start-up keyframe) of every recording given
    (``part``: "first" or "second": only the first or the second half of those cycles)."""
    cycle = 2 * STEP_HALF
    acc, n = np.zeros(cycle // 3), 0
    for sizes in sizes_list:
        cycles = len(sizes) // cycle
        chosen = list(range(1, cycles))
        if part != "all":
            mid = len(chosen) // 2
            chosen = chosen[:mid] if part == "first" else chosen[mid:]
        for c in chosen:
            acc += sizes[c * cycle:(c + 1) * cycle].reshape(-1, 3).sum(axis=1)
            n += 1
    return acc * 8 / 0.1 / n


def settling(rate: np.ndarray) -> dict:
    """90 % settling times from a folded cycle (bins of 100 ms, the low half first): the 300 ms
    centred mean of the rate first covers 90 % of the way from the level before the switch to the
    level after it; the levels are the mean rate over 3–5 s after each switch. The crossing is
    interpolated between bin centres."""
    bins = len(rate)
    smooth = (np.roll(rate, 1) + rate + np.roll(rate, -1)) / 3
    half = bins // 2
    low = rate[30:50].mean()
    high = rate[half + 30:half + 50].mean()

    def crossing(start: int, before: float, after: float) -> float:
        line = before + 0.9 * (after - before)
        sign = 1 if after > before else -1
        prev_t, prev_v = -0.05, before  # the level before the switch, at the switch instant
        for j in range(half):
            v = smooth[(start + j) % bins]
            t = j * 0.1 + 0.05
            if sign * (v - line) >= 0:
                return prev_t + (t - prev_t) * (line - prev_v) / (v - prev_v) if v != prev_v else t
            prev_t, prev_v = t, v
        return float("nan")

    # The bits missing after the switch up over its first 3 s, in seconds of the step's size: a
    # first-order lag of 90 % settling time T leaves T / ln 10.
    deficit = float(np.sum(high - rate[half:half + 30]) * 0.1 / (high - low))
    return {"low_bps": float(low), "high_bps": float(high), "up_s": crossing(half, low, high),
            "down_s": crossing(0, high, low), "up_deficit_s": deficit}


def steady_spread(sizes_list: list[np.ndarray], keys_list: list[np.ndarray]) -> dict:
    """Per-frame spread in steady state: in the last 2 s of every half-cycle of the step sequence
    but the first cycle, each coded P-frame's size over the mean of its window; the coefficient
    of variation of those ratios, and their lag-1 autocorrelation. ``keys_list``: the frames to
    leave out (keyframes, and for a real clip the repeated pictures)."""
    ratios, pairs = [], []
    for sizes, keys in zip(sizes_list, keys_list):
        for h in range(2, len(sizes) // STEP_HALF):
            a, b = h * STEP_HALF + 3 * FPS, (h + 1) * STEP_HALF
            s, k = sizes[a:b].astype(float), keys[a:b]
            ok = (s > 0) & ~k
            if ok.sum() < 10:
                continue
            r = s / s[ok].mean()
            ratios += list(r[ok])
            both = ok[:-1] & ok[1:]
            pairs += list(zip(r[:-1][both], r[1:][both]))
    x = np.array(ratios)
    p = np.array(pairs)
    ac = float(np.corrcoef(p[:, 0], p[:, 1])[0, 1]) if len(p) > 2 else float("nan")
    return {"cv": float(x.std() / x.mean()), "ac1": ac}


def rate_ratio(sizes: np.ndarray, seq: Sequence, skip: int = FPS) -> float:
    """Mean output rate over mean target, from the second second on (the start-up keyframe and
    the codec's initial buffer are left out)."""
    bits = sizes[skip:].sum() * 8.0
    return float(bits / (seq.targets[skip:].sum() / FPS))


def keyframe_ratio(sizes: np.ndarray, keys: np.ndarray, seq: Sequence) -> float:
    """Each requested keyframe's size over the mean size of the coded P-frames in the second
    before it; the mean over the requests."""
    out = []
    for k in sorted(seq.keyframes):
        if not keys[k]:
            continue
        before = sizes[k - FPS:k]
        before = before[before > 0]
        if len(before):
            out.append(sizes[k] / before.mean())
    return float(np.mean(out)) if out else float("nan")


def drops(sizes: np.ndarray) -> int:
    return int((sizes[1:] == 0).sum())


def measure(recs: dict[str, list[dict]], seqs: dict[str, Sequence]) -> dict:
    """The measures of one encoder (``recs``: per sequence, one recording or several seeds)."""
    step = recs["step"]
    fold = fold_step([r["sizes"] for r in step])
    m = settling(fold)
    halves = [settling(fold_step([r["sizes"] for r in step], part)) for part in ("first", "second")]
    m["up_s_halves"] = [h["up_s"] for h in halves]
    m["down_s_halves"] = [h["down_s"] for h in halves]
    m.update(steady_spread([r["sizes"] for r in step], [r["keyframes"] | r.get("exclude", False) for r in step]))
    m["cv_all"] = steady_spread([r["sizes"] for r in step], [r["keyframes"] for r in step])["cv"]
    for name in ("step", "ramp", "random"):
        m[f"rate_{name}"] = float(np.mean([rate_ratio(r["sizes"], seqs[name]) for r in recs[name]]))
    total_bits = sum(r["sizes"][FPS:].sum() * 8.0 for name in ("step", "ramp", "random") for r in recs[name])
    total_target = sum(seqs[name].targets[FPS:].sum() / FPS * len(recs[name]) for name in ("step", "ramp", "random"))
    m["rate"] = float(total_bits / total_target)
    m["keyframe_ratio"] = float(np.mean([keyframe_ratio(r["sizes"], r["keyframes"], seqs["keyframes"])
                                         for r in recs["keyframes"]]))
    m["drops"] = int(sum(drops(r["sizes"]) for name in ("step", "ramp", "random") for r in recs[name]))
    # PSNR of the coded frames in the steady 3–5 s of the low and the high half-cycles.
    for label, offset in (("psnr_low", 0), ("psnr_high", STEP_HALF)):
        vals = []
        for r in step:
            p = r.get("psnr") if r.get("psnr") is not None else r.get("psnr_model")
            if p is None:
                continue
            for c in range(1, len(p) // (2 * STEP_HALF)):
                a = c * 2 * STEP_HALF + offset + 3 * FPS
                vals += list(p[a:a + 2 * FPS][~np.isnan(p[a:a + 2 * FPS])])
        m[label] = float(np.mean(vals)) if vals else float("nan")
    return m


# -- the fit -------------------------------------------------------------------------------

#: The lagged parameters the fit leaves alone, as every calibration run sets them: the clips show
#: no saturation up to 2.5 Mbit/s at 640x360 (0.36 bit/pixel), above the default saturation_bpp
#: (0.19), so it is lifted out of the way here; the floor (0.01) is below every target used.
#: The clips are short steady loops without motion bursts, so the fit runs without bursts
#: (burst_gain 1); the defaults keep them (content, not encoder: Vidaptive Fig. 6b).
FIXED = {"saturation_bpp": 1.0}
NO_BURSTS = {"burst_gain": 1.0}
#: complexity = COMPLEXITY_SHARE × noise: the fit scales the two together (their ratio is the
#: earlier defaults', 0.15 : 0.2), since one spread number cannot separate them.
COMPLEXITY_SHARE = 0.75
FITTED = ("up", "down", "noise", "keyframe_ratio")
START = {"up": 2.0, "down": 1.0, "noise": 0.2, "keyframe_ratio": 6.0}


def lagged_params(fit: dict, bursts: bool = False) -> dict:
    return {**FIXED, **({} if bursts else NO_BURSTS), **({"complexity": COMPLEXITY_SHARE * fit["noise"]} if "noise" in fit else {}), **fit}


def run_lagged(fit: dict, seqs: dict, seeds: int, bursts: bool = False) -> dict:
    params = lagged_params(fit, bursts)
    recs = {name: [record_lagged(params, seqs[name], seed) for seed in range(1, seeds + 1)] for name in SEQUENCES}
    return measure(recs, seqs)


def fit_lagged(goal: dict, seqs: dict, seeds: int, iterations: int = 12) -> tuple[dict, dict]:
    """Fixed-point iteration: each parameter is scaled by the ratio of the goal to the lagged
    model's measure it drives (up → settle up, down → settle down, noise (with complexity) →
    per-frame spread, keyframe_ratio → keyframe size), until every measure is within 1 %."""
    fit = dict(START)
    drives = {"up": "up_s", "down": "down_s", "noise": "cv", "keyframe_ratio": "keyframe_ratio"}
    for _ in range(iterations):
        m = run_lagged(fit, seqs, seeds)
        errors = {p: goal[k] / m[k] for p, k in drives.items()}
        print("  fit: " + ", ".join(f"{p} {fit[p]:.3f} ({m[k]:.3f} for {goal[k]:.3f})" for p, k in drives.items()),
              file=sys.stderr)
        if all(abs(e - 1) < 0.01 for e in errors.values()):
            break
        for p, e in errors.items():
            fit[p] *= e
        fit["keyframe_ratio"] = min(max(fit["keyframe_ratio"], 1.0), 100.0)
        fit["up"], fit["down"] = max(fit["up"], 0.01), max(fit["down"], 0.01)
    return fit, run_lagged(fit, seqs, seeds)


def rounded(fit: dict) -> dict:
    """The fit as defaults: durations to 10 ms, the spread to 0.01, the keyframe ratio to 0.1."""
    noise = round(fit["noise"], 2)
    return {"up": round(fit["up"], 2), "down": round(fit["down"], 2), "noise": noise,
            "complexity": round(COMPLEXITY_SHARE * noise, 2), "keyframe_ratio": round(fit["keyframe_ratio"], 1)}


def shipped_defaults() -> dict:
    """The lagged model's defaults as crates/rtcc-core/src/media/encoder/lagged.rs's PARAMS table
    states them (for the check that they are the fit)."""
    text = (ROOT / "crates" / "rtcc-core" / "src" / "media" / "encoder" / "lagged.rs").read_text()
    out = {}
    for name in ("up", "down", "noise", "complexity", "keyframe_ratio"):
        m = re.search(rf'\(\s*"{name}",\s*"([0-9.]+)s?"', text)
        out[name] = float(m.group(1)) if m else None
    return out


# -- tables ----------------------------------------------------------------------------------

METRICS = (("rate", "mean rate / target"), ("up_s", "settle up (s)"), ("down_s", "settle down (s)"),
           ("cv", "P-frame spread (CV)"))


def err(a: float, b: float) -> float:
    return (a / b - 1) * 100


def table_fit(real: dict, per_clip: dict, pooled: dict) -> str:
    rows = ["| clip | measure | real VP8 | lagged, fitted to the clip | error | lagged, defaults (pooled fit) | error |",
            "|---|---|---|---|---|---|---|"]
    for clip in CLIPS:
        r = real[("vp8", clip)]
        for key, label in METRICS:
            a, b = per_clip[clip][1][key], pooled[clip][key]
            fmt = (lambda x: f"{x:.3f}") if key in ("rate", "cv") else (lambda x: f"{x:.2f}")
            halves = r.get(f"{key}_halves")
            measured = fmt(r[key]) + (f" (halves {fmt(halves[0])}, {fmt(halves[1])})" if halves else "")
            rows.append(f"| {clip} | {label} | {measured} | {fmt(a)} | {err(a, r[key]):+.0f} % | "
                        f"{fmt(b)} | {err(b, r[key]):+.0f} % |")
    return "\n".join(rows)


def table_params(per_clip: dict, default: dict) -> str:
    rows = ["| parameter | earlier default | " + " | ".join(f"{c} fit" for c in CLIPS) + " | new default (pooled fit) |",
            "|---|---|" + "---|" * len(CLIPS) + "---|"]
    for p in FITTED + ("complexity",):
        before = START.get(p, 0.15)
        vals = [lagged_params(per_clip[c][0])[p] for c in CLIPS]
        unit = " s" if p in DURATIONS else ""
        new = lagged_params(default)[p]
        rows.append(f"| `{p}` | {before:g}{unit} | " + " | ".join(f"{v:.2f}{unit}" for v in vals)
                    + f" | {new:.3g}{unit} |")
    return "\n".join(rows)


def table_real(real: dict, lagged_default: dict) -> str:
    cols = [("rate_step", "rate/target step", "{:.2f}"), ("rate_ramp", "ramp", "{:.2f}"),
            ("rate_random", "random", "{:.2f}"), ("low_bps", "level at 0.5 M", "{:.0f}k"),
            ("high_bps", "at 2 M", "{:.0f}k"), ("up_s", "settle up", "{:.2f} s"), ("down_s", "settle down", "{:.2f} s"),
            ("up_deficit_s", "deficit up", "{:.2f} s"),
            ("cv", "P-frame CV", "{:.2f}"), ("cv_all", "with repeats", "{:.2f}"), ("ac1", "lag-1 autocorr.", "{:+.2f}"),
            ("keyframe_ratio", "keyframe / P-frame", "{:.1f}"), ("drops", "frames dropped", "{}"),
            ("psnr_low", "PSNR at 0.5 M", "{:.1f} dB"), ("psnr_high", "at 2 M", "{:.1f} dB")]
    rows = ["| encoder | clip | " + " | ".join(c[1] for c in cols) + " |", "|---|---|" + "---|" * len(cols)]

    def cell(m, key, f):
        v = m[key]
        return f.format(v / 1e3) if key.endswith("_bps") else f.format(v)

    for (codec, clip), m in real.items():
        rows.append(f"| {codec} | {clip} | " + " | ".join(cell(m, k, f) for k, _, f in cols) + " |")
    rows.append("| lagged, defaults | (model) | " + " | ".join(cell(lagged_default, k, f) for k, _, f in cols) + " |")
    return "\n".join(rows)


# -- main ------------------------------------------------------------------------------------

def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="shorter sequences, fewer lagged seeds; writes nothing")
    ap.add_argument("--print", action="store_true", help="print the tables, leave the profiles and the doc alone")
    ap.add_argument("--cache", type=Path, help="keep the real recordings in this file and reuse them (a pickle)")
    ap.add_argument("--buffer", action="store_true",
                    help="fit the lagged model with libvpx's rate-control buffer on (buffer_size = \"1s\"); writes nothing")
    args = ap.parse_args(argv)
    if args.buffer:
        FIXED["buffer_size"] = "1s"
    sys.path.insert(0, str(ROOT / "python"))
    seqs = {name: make_sequence(name, SECONDS[name][1 if args.quick else 0]) for name in SEQUENCES}
    write = not (args.quick or args.print or args.buffer)
    real, cached = {}, {}
    if args.cache and args.cache.is_file():
        cached = pickle.loads(args.cache.read_bytes())
    for codec in CODECS:
        for clip in CLIPS:
            t = time.time()
            key = (codec, clip, args.quick)
            if key not in cached:
                cached[key] = {name: [record_real(codec, clip, seqs[name], psnr=name == "step")] for name in SEQUENCES}
            recs = cached[key]
            for name in SEQUENCES:
                for r in recs[name]:
                    r["exclude"] = repeated_pictures(clip, seqs[name].frames)
            if write:
                PROFILES.mkdir(parents=True, exist_ok=True)
                for name in SEQUENCES:
                    write_profile(PROFILES / f"{codec}-{clip}-{name}.frames", codec, clip, seqs[name], recs[name][0])
            real[(codec, clip)] = measure(recs, seqs)
            print(f"{codec} {clip}: {time.time() - t:.0f} s {json.dumps(real[(codec, clip)])}", file=sys.stderr)
    if args.cache:
        args.cache.write_bytes(pickle.dumps(cached))

    seeds = 3 if args.quick else 10
    goals = {clip: real[("vp8", clip)] for clip in CLIPS}
    per_clip = {}
    for clip in CLIPS:
        per_clip[clip] = fit_lagged(goals[clip], seqs, seeds)
        print(f"lagged fit to vp8 {clip}: {per_clip[clip][0]}", file=sys.stderr)
    pooled_goal = {k: float(np.mean([goals[c][k] for c in CLIPS])) for k in ("up_s", "down_s", "cv", "keyframe_ratio")}
    default = rounded(fit_lagged(pooled_goal, seqs, seeds)[0])
    print(f"pooled fit, rounded: {default}", file=sys.stderr)
    shipped = shipped_defaults()
    if shipped != default:
        print(f"note: lagged.rs's defaults {shipped} are not this fit: the defaults column runs the fit; "
              "update LaggedConfig::default and PARAMS", file=sys.stderr)
        with_default = run_lagged(default, seqs, seeds, bursts=True)
    else:
        # The model exactly as shipped: no parameter but the resolution and the saturation.
        with_default = run_lagged({}, seqs, seeds, bursts=True)
    pooled = {clip: with_default for clip in CLIPS}
    tables = {"calibration-fit": table_fit(real, per_clip, pooled),
              "calibration-params": table_params(per_clip, default),
              "calibration-real": table_real(real, with_default)}
    for name, table in tables.items():
        print(f"\n{name}:\n{table}")
    if write:
        text = DOC.read_text()
        for name, table in tables.items():
            text, n = re.subn(rf"(<!-- {name}:begin -->\n).*?(<!-- {name}:end -->)",
                              lambda m: m.group(1) + table + "\n" + m.group(2), text, flags=re.S)
            if n != 1:
                raise SystemExit(f"{DOC}: no markers <!-- {name}:begin --> ... <!-- {name}:end -->")
        DOC.write_text(text)
        print(f"wrote {DOC} and {PROFILES}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
