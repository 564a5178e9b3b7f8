"""x264 through its C API with ``tune=zerolatency``, its target changed on the running encoder.

Why the C API and not PyAV's ``libx264`` codec: PyAV cannot change the rate-control settings of
an open FFmpeg encoder in a way that reaches x264 (its VBV rate is read-only and a new
``bit_rate`` alone is not applied in our tests), and reopening per change is what a real sender
never does. x264 itself has ``x264_encoder_reconfig`` for exactly this; this module calls it on
the libx264 that PyAV's wheel ships (or the system's), through :mod:`ctypes`.

Settings: ``x264_param_default_preset(preset, "zerolatency")`` and the constrained baseline
profile (RFC 7742's mandatory H.264 profile for WebRTC) (no B-frames, no look-ahead,
sliced threads off here: one thread, for determinism), one keyframe at the start and then only on
request (``keyint`` 3000, as libwebrtc's default key-frame interval), ABR at the target with a VBV
of one second at that rate (``vbv-maxrate`` = target, ``vbv-bufsize`` = target × 1 s, the same
buffer as the VP8 configuration's ``rc_buf_sz``), or of ``vbv_frames`` frames of it when the flow
asks for peak-constrained rate control (its ``vbv``: one frame, as cloud-gaming encoders run). Fields are set by name with
``x264_param_parse``, so only the picture size, the picture structure and the NAL structure are
read through offsets; :func:`_check_layout` verifies them on x264's defaults.
"""

from __future__ import annotations

import ctypes

from .shared_libs import candidates

__all__ = ["X264Encoder", "library", "LibraryMissing"]

X264_CSP_I420 = 0x0002
X264_TYPE_AUTO = 0
X264_TYPE_IDR = 1
# Offsets in x264_param_t (x264.h, builds 153 onwards): cpu, i_threads, i_lookahead_threads,
# b_sliced_threads, b_deterministic, b_cpu_independent, i_sync_lookahead, i_width, i_height,
# i_csp, i_bitdepth.
P_WIDTH, P_HEIGHT, P_CSP, P_BITDEPTH = 28, 32, 36, 40
# x264_picture_t: i_type, i_qpplus1, i_pic_struct, b_keyframe, i_pts, i_dts, param, img
# (i_csp, i_plane, i_stride[4], plane[4]).
PIC_TYPE, PIC_KEYFRAME, PIC_PTS, PIC_CSP, PIC_PLANES, PIC_STRIDE, PIC_PLANE = 0, 12, 16, 40, 44, 48, 64


class LibraryMissing(RuntimeError):
    """No usable libx264: says what to install."""


class _Nal(ctypes.Structure):
    _fields_ = [("i_ref_idc", ctypes.c_int), ("i_type", ctypes.c_int), ("b_long_startcode", ctypes.c_int),
                ("i_first_mb", ctypes.c_int), ("i_last_mb", ctypes.c_int), ("i_payload", ctypes.c_int),
                ("p_payload", ctypes.c_void_p), ("i_padding", ctypes.c_int)]


_LIB: tuple[ctypes.CDLL, object] | None = None


def library() -> tuple[ctypes.CDLL, object]:
    """The loaded libx264 and its versioned ``x264_encoder_open_<build>``; :class:`LibraryMissing`
    says what to install."""
    global _LIB
    if _LIB is not None:
        return _LIB
    tried = []
    for path in candidates("x264"):
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            tried.append(f"{path}: {e}")
            continue
        opener = next((getattr(lib, f"x264_encoder_open_{b}") for b in range(140, 260)
                       if hasattr(lib, f"x264_encoder_open_{b}")), None)
        if opener is None:
            tried.append(f"{path}: no x264_encoder_open_<build>")
            continue
        p = ctypes.c_void_p
        lib.x264_param_default_preset.argtypes = [p, ctypes.c_char_p, ctypes.c_char_p]
        lib.x264_param_parse.argtypes = [p, ctypes.c_char_p, ctypes.c_char_p]
        lib.x264_param_apply_profile.argtypes = [p, ctypes.c_char_p]
        opener.restype = p
        opener.argtypes = [p]
        lib.x264_encoder_reconfig.argtypes = [p, p]
        lib.x264_encoder_encode.argtypes = [p, ctypes.POINTER(ctypes.POINTER(_Nal)), ctypes.POINTER(ctypes.c_int), p, p]
        lib.x264_encoder_close.argtypes = [p]
        lib.x264_picture_init.argtypes = [p]
        lib.x264_picture_alloc.argtypes = [p, ctypes.c_int, ctypes.c_int, ctypes.c_int]
        lib.x264_picture_clean.argtypes = [p]
        _LIB = (lib, opener)
        return _LIB
    raise LibraryMissing(
        "the x264 encoder needs libx264: `pip install av` (its wheels ship libx264) or install the "
        "system's libx264 (Debian: apt install libx264-164)" + (f"; tried {'; '.join(tried)}" if tried else ""))


def _i32(buf, off: int) -> int:
    return ctypes.c_int.from_buffer(buf, off).value


def _check_layout(param, pic) -> None:
    ok = (_i32(param, P_CSP) == X264_CSP_I420 and _i32(param, P_BITDEPTH) == 8
          and _i32(pic, PIC_CSP) == X264_CSP_I420 and _i32(pic, PIC_PLANES) == 3)
    if not ok:
        raise LibraryMissing("libx264: its structures are laid out differently from the ones rtcc reads; "
                             "use PyAV's libx264 (`pip install av`)")


class X264Encoder:
    """One running x264 encoder for ``width`` × ``height`` I420 frames at ``fps``."""

    def __init__(self, width: int, height: int, fps: float, target_bps: float, preset: str = "veryfast",
                 vbv_frames: float | None = None):
        lib, opener = library()
        self._fps, self._vbv_frames = fps, vbv_frames
        self._lib = lib
        self.width, self.height = width, height
        self._param = ctypes.create_string_buffer(8192)
        if lib.x264_param_default_preset(self._param, preset.encode(), b"zerolatency") < 0:
            raise ValueError(f"x264 does not know the preset {preset!r}")
        ctypes.c_int.from_buffer(self._param, P_WIDTH).value = width
        ctypes.c_int.from_buffer(self._param, P_HEIGHT).value = height
        self._kbps = max(1, round(target_bps / 1000))
        for name, value in (("threads", "1"), ("fps", f"{fps:g}"), ("keyint", "3000"),
                            ("min-keyint", "3000"), ("scenecut", "0"), ("repeat-headers", "1"),
                            ("bitrate", str(self._kbps)), ("vbv-maxrate", str(self._kbps)),
                            ("vbv-bufsize", str(self._bufsize(self._kbps))), ("log", "-1")):
            if lib.x264_param_parse(self._param, name.encode(), value.encode()) != 0:
                raise RuntimeError(f"x264 refused {name}={value}")
        # Constrained baseline: the H.264 profile every WebRTC endpoint must support (RFC 7742).
        if lib.x264_param_apply_profile(self._param, b"baseline") < 0:
            raise RuntimeError("x264 refused the baseline profile")
        self._pic = ctypes.create_string_buffer(4096)
        if lib.x264_picture_alloc(self._pic, X264_CSP_I420, width, height) < 0:
            raise RuntimeError("x264 could not allocate a picture")
        _check_layout(self._param, self._pic)
        self._enc = opener(self._param)
        if not self._enc:
            lib.x264_picture_clean(self._pic)
            raise RuntimeError(f"x264 would not open a {width}x{height} encoder")
        self._out = ctypes.create_string_buffer(4096)
        self._pts = 0

    @property
    def target_bps(self) -> float:
        return self._kbps * 1000.0

    def _bufsize(self, kbps: int) -> int:
        """The VBV in kbit: one second at the target, or ``vbv_frames`` frames of it."""
        if self._vbv_frames is None:
            return kbps
        return max(1, round(kbps * self._vbv_frames / self._fps))

    def set_rate(self, target_bps: float) -> None:
        """The new target on the running encoder, from the next frame on."""
        kbps = max(1, round(target_bps / 1000))
        if kbps == self._kbps:
            return
        self._kbps = kbps
        lib = self._lib
        for name, value in ((b"bitrate", kbps), (b"vbv-maxrate", kbps), (b"vbv-bufsize", self._bufsize(kbps))):
            lib.x264_param_parse(self._param, name, str(value).encode())
        if lib.x264_encoder_reconfig(self._enc, self._param) < 0:
            raise RuntimeError(f"x264 refused a target of {kbps} kbit/s")

    def encode(self, i420: bytes, duration_s: float, keyframe: bool = False) -> tuple[bytes, bool]:
        """Encode one frame: its Annex B bitstream and whether it is a keyframe (IDR)."""
        w, h = self.width, self.height
        pic = self._pic
        sizes = ((0, w, h), (w * h, w // 2, h // 2), (w * h + (w // 2) * (h // 2), w // 2, h // 2))
        for plane, (start, pw, ph) in enumerate(sizes):
            stride = _i32(pic, PIC_STRIDE + 4 * plane)
            dst = ctypes.c_void_p.from_buffer(pic, PIC_PLANE + 8 * plane).value
            if stride == pw:
                ctypes.memmove(dst, i420[start:start + pw * ph], pw * ph)
            else:
                for row in range(ph):
                    ctypes.memmove(dst + row * stride, i420[start + row * pw:start + (row + 1) * pw], pw)
        ctypes.c_int.from_buffer(pic, PIC_TYPE).value = X264_TYPE_IDR if keyframe else X264_TYPE_AUTO
        ctypes.c_int64.from_buffer(pic, PIC_PTS).value = self._pts
        self._pts += 1
        nals = ctypes.POINTER(_Nal)()
        count = ctypes.c_int(0)
        size = self._lib.x264_encoder_encode(self._enc, ctypes.byref(nals), ctypes.byref(count), pic, self._out)
        if size < 0:
            raise RuntimeError("x264 failed to encode a frame")
        if size == 0 or count.value == 0:
            return b"", False
        data = ctypes.string_at(nals[0].p_payload, size)  # x264 keeps a frame's NALs contiguous
        return data, bool(_i32(self._out, PIC_KEYFRAME))

    def close(self) -> None:
        if getattr(self, "_enc", None):
            self._lib.x264_encoder_close(self._enc)
            self._lib.x264_picture_clean(self._pic)
            self._enc = None

    def __del__(self):
        self.close()
