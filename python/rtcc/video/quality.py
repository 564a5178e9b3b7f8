"""Quality measured on decoded frames: what the viewer of a run with a real encoder saw.

After a run, the bitstreams the real encoder produced (:class:`rtcc.video.encoders.RealEncoder`)
are decoded the way the receiver consumed them: every frame the receiver displayed is fed, in
frame order, to a real decoder (FFmpeg's VP8 or H.264 decoder through PyAV), and nothing else. A
frame whose reference never reached the decoder therefore decodes against the wrong picture and
shows the damage a real viewer would see; a packet the decoder rejects leaves the previous
picture on screen.

Each captured frame ``i`` is then scored against its source picture (the clip frame the camera
captured at that instant) by the picture on screen for it: the decoded picture of the most recent
displayed frame ``j ≤ i``. When ``j < i`` (the frame was skipped at the sender, lost, or not
decodable) the viewer saw a repeated picture, and it is scored against the source it should have
shown, as full-reference QoE tools score freezes (frame-index alignment; latency is measured by
the frame metrics, not here). Pictures coded at a lower resolution are upscaled (bicubic) to the
capture resolution first, as a receiver renders them. Frames before the first displayed one are
not scored.

Metrics, on the luma plane: PSNR (peak 255, 100 dB for identical pictures) and SSIM (Wang et al.
2004, constants K1 = 0.01, K2 = 0.03, over uniform 8×8 windows placed every 4 pixels rather than
the paper's 11×11 Gaussian, as x264's and FFmpeg's ``ssim`` do). VMAF is not computed:
no package on PyPI ships libvmaf with a Python interface that installs everywhere rtcc does.

The pipeline's efficiency (``displayed_share``, ``frames_skipped``) is in every run's summary
(docs/metrics.md); it needs no decoding.
"""

from __future__ import annotations

import numpy as np

__all__ = ["psnr", "ssim", "score_flow", "score_run", "write_stills"]


def psnr(a: np.ndarray, b: np.ndarray) -> float:
    """PSNR (dB) of two 8-bit pictures; 100 for identical ones."""
    mse = np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2)
    return 100.0 if mse == 0 else float(10 * np.log10(255.0 ** 2 / mse))


def _window_sums(x: np.ndarray) -> np.ndarray:
    """Sums over 8×8 windows placed every 4 pixels: 4×4 block sums, then 2×2 blocks of them."""
    h, w = (x.shape[0] // 4) * 4, (x.shape[1] // 4) * 4
    blocks = x[:h, :w].reshape(h // 4, 4, w // 4, 4).sum(axis=(1, 3))
    return blocks[:-1, :-1] + blocks[1:, :-1] + blocks[:-1, 1:] + blocks[1:, 1:]


def ssim(a: np.ndarray, b: np.ndarray) -> float:
    """Mean SSIM of two 8-bit pictures over 8×8 windows every 4 pixels."""
    a = a.astype(np.float64)
    b = b.astype(np.float64)
    n = 64.0
    c1, c2 = (0.01 * 255) ** 2, (0.03 * 255) ** 2
    mu_a, mu_b = _window_sums(a) / n, _window_sums(b) / n
    var_a = _window_sums(a * a) / n - mu_a ** 2
    var_b = _window_sums(b * b) / n - mu_b ** 2
    cov = _window_sums(a * b) / n - mu_a * mu_b
    s = ((2 * mu_a * mu_b + c1) * (2 * cov + c2)) / ((mu_a ** 2 + mu_b ** 2 + c1) * (var_a + var_b + c2))
    return float(s.mean())


def _decoder(model: str):
    import av

    ctx = av.CodecContext.create("vp8" if model == "vp8" else "h264", "r")
    ctx.flags |= av.codec.context.Flags.low_delay  # one picture out per frame in
    return ctx


def _luma(frame, width: int, height: int) -> np.ndarray:
    """The Y plane as coded (no range conversion), upscaled to ``width`` × ``height`` if smaller."""
    if (frame.width, frame.height) != (width, height) or frame.format.name != "yuv420p":
        frame = frame.reformat(width=width, height=height, format="yuv420p", interpolation="BICUBIC")
    return frame.to_ndarray()[:height]


def score_flow(encoder, frames) -> tuple[list[dict], dict]:
    """Score one flow: ``encoder`` the flow's RealEncoder, ``frames`` its rows of the run's frames
    table (a polars DataFrame). Returns the per-frame rows and the flow's summary."""
    import av

    by_capture = {round(t * 1e9): (data, w, h) for t, _i, data, _k, w, h in encoder.frames}
    rows = frames.sort("frame").to_dicts()
    src_w, src_h = encoder.source_resolution
    dec = _decoder(encoder.model)
    shown = None  # (frame id, luma picture) on screen
    first_capture = rows[0]["capture_ns"] if rows else 0
    source_clip = encoder.clip_at_source()
    stills: dict = {}
    out = []
    errors = 0
    for r in rows:
        if r["display_ns"] is not None and r["size"] > 0:
            data = by_capture.get(r["capture_ns"])
            if data is None:
                raise RuntimeError(f"flow {encoder.flow}: frame {r['frame']} has no bitstream")
            try:
                pictures = dec.decode(av.Packet(data[0]))
            except av.error.FFmpegError:
                pictures = []
                errors += 1
            if pictures:
                shown = (r["frame"], _luma(pictures[-1], src_w, src_h), pictures[-1])
        index = int(round((r["capture_ns"] - first_capture) * encoder.fps / 1e9))
        row = {"flow": r["flow"], "frame": r["frame"], "capture_ns": r["capture_ns"], "source_index": index,
               "shown_frame": None, "frozen": None, "psnr_y": None, "ssim_y": None}
        if shown is not None:
            source = source_clip.frame(index)[:src_h]
            row.update(shown_frame=shown[0], frozen=shown[0] != r["frame"],
                       psnr_y=psnr(shown[1], source), ssim_y=ssim(shown[1], source))
            # The best and the worst picture on screen, for the report's stills.
            for kind, better in (("good", lambda a, b: a > b), ("broken", lambda a, b: a < b)):
                if kind not in stills or better(row["psnr_y"], stills[kind]["psnr_y"]):
                    stills[kind] = {"psnr_y": row["psnr_y"], "frame": r["frame"], "shown_frame": shown[0],
                                    "picture": shown[2], "source_index": index}
        out.append(row)
    scored = [r for r in out if r["psnr_y"] is not None]
    p = np.array([r["psnr_y"] for r in scored]) if scored else np.array([np.nan])
    s = np.array([r["ssim_y"] for r in scored]) if scored else np.array([np.nan])
    summary = {
        "flow": encoder.flow,
        "encoder": encoder.model,
        "clip": encoder.clip_name,
        "resolution": f"{src_w}x{src_h}",
        "frames": len(rows),
        "frames_scored": len(scored),
        "psnr_y_mean": float(np.mean(p)),
        "psnr_y_p5": float(np.percentile(p, 5)),
        "ssim_y_mean": float(np.mean(s)),
        "frozen_share": float(np.mean([r["frozen"] for r in scored])) if scored else float("nan"),
        "decode_errors": errors,
    }
    encoder.stills = {k: {**v, "source": source_clip.frame(v["source_index"])} for k, v in stills.items()}
    return out, summary


def score_run(result) -> tuple[list[dict], list[dict]]:
    """Score every flow of ``result`` that ran a real encoder: (per-frame rows, flow summaries)."""
    encoders = getattr(result, "video_encoders", None) or []
    names = [f["name"] for f in result.summary["flows"]]
    rows, summaries = [], []
    frames = result.frames
    for enc in encoders:
        if enc.flow not in names:
            continue
        import polars as pl

        r, s = score_flow(enc, frames.filter(pl.col("flow") == names.index(enc.flow)))
        rows += r
        summaries.append(s)
    return rows, summaries


def write_stills(result, folder) -> list[str]:
    """PNG stills of the best and the worst picture each real-encoder flow showed, beside the
    source picture it should have shown: ``quality-stills/<flow>-good.png`` and ``-broken.png``.
    Returns their paths relative to ``folder``."""
    from pathlib import Path

    import av
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = []
    for enc in getattr(result, "video_encoders", None) or []:
        for kind, still in (getattr(enc, "stills", None) or {}).items():
            w, h = enc.source_resolution
            shown = still["picture"].reformat(width=w, height=h, format="rgb24").to_ndarray()
            source = av.VideoFrame.from_ndarray(still["source"], format="yuv420p").to_ndarray(format="rgb24")
            fig, axes = plt.subplots(1, 2, figsize=(10, 10 * h / (2 * w) + 0.6))
            for ax, img, title in ((axes[0], source, f"source (captured frame {still['frame']})"),
                                   (axes[1], shown, f"shown: decoded frame {still['shown_frame']}, "
                                                    f"{still['psnr_y']:.1f} dB")):
                ax.imshow(img)
                ax.set_title(title, fontsize=9)
                ax.axis("off")
            fig.suptitle(f"{enc.flow}: {'a good' if kind == 'good' else 'the worst'} picture ({enc.model})", fontsize=10)
            fig.tight_layout()
            rel = f"quality-stills/{enc.flow}-{kind}.png"
            path = Path(folder) / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            fig.savefig(path, dpi=80)
            plt.close(fig)
            out.append(rel)
    return out
