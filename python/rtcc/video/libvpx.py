"""libvpx's VP8 encoder through its C API, configured as libwebrtc configures it.

Why the C API and not PyAV's ``libvpx`` codec: FFmpeg's wrapper reads the target bitrate once,
when the encoder opens, and a real-time sender changes it several times a second. libwebrtc
changes it on the running encoder with ``vpx_codec_enc_config_set`` (its
``LibvpxVp8Encoder::SetRates``); so does this module, on the libvpx shared library that PyAV's
wheel ships (or the system's ``libvpx``), through :mod:`ctypes`.

The configuration (libwebrtc ``modules/video_coding/codecs/vp8/libvpx_vp8_encoder.cc``,
``InitEncode`` and ``InitAndSetControlSettings``, one stream, camera content):

=============================  ===============  ==============================================
field                          value            libwebrtc's reason
=============================  ===============  ==============================================
``rc_end_usage``               CBR              real-time rate control
``g_lag_in_frames``            0                no look-ahead: a frame leaves when captured
``g_error_resilient``          0                one temporal layer
``g_threads``                  1                (ours: determinism; libwebrtc uses 1 below VGA
                                                on two cores)
``rc_dropframe_thresh``        30               ``frameDroppingOn`` (default true)
``rc_min_quantizer``           2                camera (12 for screen share)
``rc_max_quantizer``           56               ``kDefaultMaxQp``
``rc_undershoot_pct``          100
``rc_overshoot_pct``           15
``rc_buf_initial_sz``          500 ms
``rc_buf_optimal_sz``          600 ms
``rc_buf_sz``                  1000 ms
``kf_mode``/``kf_max_dist``    auto, 3000       ``keyFrameInterval`` default; PLI forces one
``VP8E_SET_CPUUSED``           -6 (-4 below     ``GetCpuSpeed`` on x86
                               CIF)
``VP8E_SET_NOISE_SENSITIVITY`` 4 (adaptive)     ``denoisingOn`` on x86
``VP8E_SET_STATIC_THRESHOLD``  1
``VP8E_SET_TOKEN_PARTITIONS``  0 (one)
``VP8E_SET_MAX_INTRA_BITRATE_PCT``  optimal buffer × 0.5 × fps / 10 (≥ 300)  ``MaxIntraTarget``
=============================  ===============  ==============================================

libvpx only opens an encoder for the exact ABI number of the headers it was built with, and a
wheel ships no headers: :func:`_abi_version` asks the library which number it accepts (it
refuses every other one before touching anything), and :func:`_check_layout` compares the
configuration libvpx fills in by default with its documented defaults, so a library whose
structure this module does not know is refused with its version instead of misread.
"""

from __future__ import annotations

import ctypes

from .shared_libs import candidates

__all__ = ["Vp8Encoder", "library", "LibraryMissing"]

VPX_CODEC_OK = 0
VPX_CODEC_ABI_MISMATCH = 3
VPX_CBR = 1
VPX_KF_AUTO = 1
VPX_IMG_FMT_I420 = 0x102
VPX_EFLAG_FORCE_KF = 1
VPX_DL_REALTIME = 1
VPX_CODEC_CX_FRAME_PKT = 0
VPX_FRAME_IS_KEY = 0x1
VP8E_SET_CPUUSED = 13
VP8E_SET_NOISE_SENSITIVITY = 15
VP8E_SET_STATIC_THRESHOLD = 17
VP8E_SET_TOKEN_PARTITIONS = 18
VP8E_SET_MAX_INTRA_BITRATE_PCT = 26


class LibraryMissing(RuntimeError):
    """No usable libvpx: says what to install."""


class _Rational(ctypes.Structure):
    _fields_ = [("num", ctypes.c_int), ("den", ctypes.c_int)]


class _FixedBuf(ctypes.Structure):
    _fields_ = [("buf", ctypes.c_void_p), ("sz", ctypes.c_size_t)]


class _EncCfg(ctypes.Structure):
    """``vpx_codec_enc_cfg_t`` up to ``kf_max_dist`` (the fields used here), then room for the
    rest, which this module never reads."""

    _fields_ = [
        ("g_usage", ctypes.c_uint), ("g_threads", ctypes.c_uint), ("g_profile", ctypes.c_uint),
        ("g_w", ctypes.c_uint), ("g_h", ctypes.c_uint), ("g_bit_depth", ctypes.c_int),
        ("g_input_bit_depth", ctypes.c_uint), ("g_timebase", _Rational),
        ("g_error_resilient", ctypes.c_uint32), ("g_pass", ctypes.c_int),
        ("g_lag_in_frames", ctypes.c_uint), ("rc_dropframe_thresh", ctypes.c_uint),
        ("rc_resize_allowed", ctypes.c_uint), ("rc_scaled_width", ctypes.c_uint),
        ("rc_scaled_height", ctypes.c_uint), ("rc_resize_up_thresh", ctypes.c_uint),
        ("rc_resize_down_thresh", ctypes.c_uint), ("rc_end_usage", ctypes.c_int),
        ("rc_twopass_stats_in", _FixedBuf), ("rc_firstpass_mb_stats_in", _FixedBuf),
        ("rc_target_bitrate", ctypes.c_uint), ("rc_min_quantizer", ctypes.c_uint),
        ("rc_max_quantizer", ctypes.c_uint), ("rc_undershoot_pct", ctypes.c_uint),
        ("rc_overshoot_pct", ctypes.c_uint), ("rc_buf_sz", ctypes.c_uint),
        ("rc_buf_initial_sz", ctypes.c_uint), ("rc_buf_optimal_sz", ctypes.c_uint),
        ("rc_2pass_vbr_bias_pct", ctypes.c_uint), ("rc_2pass_vbr_minsection_pct", ctypes.c_uint),
        ("rc_2pass_vbr_maxsection_pct", ctypes.c_uint),
        ("rc_2pass_vbr_corpus_complexity", ctypes.c_uint), ("kf_mode", ctypes.c_int),
        ("kf_min_dist", ctypes.c_uint), ("kf_max_dist", ctypes.c_uint),
        ("_rest", ctypes.c_ubyte * 4096),
    ]


class _FramePkt(ctypes.Structure):
    """``vpx_codec_cx_pkt_t`` for a frame packet: the kind, then the union's frame member."""

    _fields_ = [("kind", ctypes.c_int), ("buf", ctypes.c_void_p), ("sz", ctypes.c_size_t),
                ("pts", ctypes.c_int64), ("duration", ctypes.c_ulong), ("flags", ctypes.c_uint32)]


_LIB: ctypes.CDLL | None = None
_ABI: int | None = None


def library() -> ctypes.CDLL:
    """The loaded libvpx (loaded once), or :class:`LibraryMissing` saying what to install."""
    global _LIB
    if _LIB is not None:
        return _LIB
    tried = []
    for path in candidates("vpx"):
        try:
            lib = ctypes.CDLL(path)
            lib.vpx_codec_vp8_cx  # noqa: B018 - the encoder must be built in
        except (OSError, AttributeError) as e:
            tried.append(f"{path}: {e}")
            continue
        _declare(lib)
        _LIB = lib
        return lib
    raise LibraryMissing(
        "the vp8 encoder needs libvpx: `pip install av` (its wheels ship libvpx) or install the "
        "system's libvpx (Debian: apt install libvpx7)" + (f"; tried {'; '.join(tried)}" if tried else "")
    )


def _declare(lib: ctypes.CDLL) -> None:
    p = ctypes.c_void_p
    lib.vpx_codec_vp8_cx.restype = p
    lib.vpx_codec_vp8_cx.argtypes = []
    lib.vpx_codec_version_str.restype = ctypes.c_char_p
    lib.vpx_codec_enc_config_default.argtypes = [p, ctypes.POINTER(_EncCfg), ctypes.c_uint]
    lib.vpx_codec_enc_init_ver.argtypes = [p, p, ctypes.POINTER(_EncCfg), ctypes.c_long, ctypes.c_int]
    lib.vpx_codec_enc_config_set.argtypes = [p, ctypes.POINTER(_EncCfg)]
    lib.vpx_codec_control_.argtypes = [p, ctypes.c_int, ctypes.c_int]
    lib.vpx_img_wrap.restype = p
    lib.vpx_img_wrap.argtypes = [p, ctypes.c_int, ctypes.c_uint, ctypes.c_uint, ctypes.c_uint, p]
    lib.vpx_codec_encode.argtypes = [p, p, ctypes.c_int64, ctypes.c_ulong, ctypes.c_long, ctypes.c_ulong]
    lib.vpx_codec_get_cx_data.restype = ctypes.POINTER(_FramePkt)
    lib.vpx_codec_get_cx_data.argtypes = [p, ctypes.POINTER(ctypes.c_void_p)]
    lib.vpx_codec_error_detail.restype = ctypes.c_char_p
    lib.vpx_codec_error_detail.argtypes = [p]
    lib.vpx_codec_error.restype = ctypes.c_char_p
    lib.vpx_codec_error.argtypes = [p]
    lib.vpx_codec_destroy.argtypes = [p]


def version() -> str:
    return library().vpx_codec_version_str().decode()


def _default_config(lib: ctypes.CDLL) -> _EncCfg:
    cfg = _EncCfg()
    if lib.vpx_codec_enc_config_default(lib.vpx_codec_vp8_cx(), ctypes.byref(cfg), 0) != VPX_CODEC_OK:
        raise LibraryMissing(f"libvpx {version()} gave no default VP8 configuration")
    _check_layout(cfg)
    return cfg


def _check_layout(cfg: _EncCfg) -> None:
    """libvpx's documented VP8 defaults, read through this module's structure (vp8_cx_iface.c)."""
    seen = (cfg.g_timebase.num, cfg.g_timebase.den, cfg.rc_buf_sz, cfg.rc_buf_initial_sz,
            cfg.rc_buf_optimal_sz, cfg.rc_max_quantizer)
    if seen != (1, 30, 6000, 4000, 5000, 63):
        raise LibraryMissing(
            f"libvpx {version()}: its encoder configuration is laid out differently from the one "
            f"rtcc reads (defaults seen {seen}); use PyAV's libvpx (`pip install av`)")


def _abi_version(lib: ctypes.CDLL) -> int:
    global _ABI
    if _ABI is None:
        cfg = _default_config(lib)
        cfg.g_w, cfg.g_h = 64, 64
        for ver in range(0, 128):
            ctx = ctypes.create_string_buffer(256)
            err = lib.vpx_codec_enc_init_ver(ctx, lib.vpx_codec_vp8_cx(), ctypes.byref(cfg), 0, ver)
            if err == VPX_CODEC_OK:
                lib.vpx_codec_destroy(ctx)
                _ABI = ver
                break
            if err != VPX_CODEC_ABI_MISMATCH:
                raise LibraryMissing(f"libvpx {version()} refused a VP8 encoder (error {err})")
        else:
            raise LibraryMissing(f"libvpx {version()}: no encoder ABI version it accepts")
    return _ABI


class Vp8Encoder:
    """One running VP8 encoder for ``width`` × ``height`` I420 frames at ``fps``."""

    def __init__(self, width: int, height: int, fps: float, target_bps: float):
        lib = library()
        self._lib = lib
        self.width, self.height = width, height
        cfg = _default_config(lib)
        cfg.g_w, cfg.g_h = width, height
        cfg.g_timebase = _Rational(1, 90_000)  # RTP's video clock, as libwebrtc
        cfg.g_lag_in_frames = 0
        cfg.g_error_resilient = 0
        cfg.g_threads = 1
        cfg.g_pass = 0
        cfg.rc_end_usage = VPX_CBR
        cfg.rc_dropframe_thresh = 30
        cfg.rc_resize_allowed = 0
        cfg.rc_min_quantizer = 2
        cfg.rc_max_quantizer = 56
        cfg.rc_undershoot_pct = 100
        cfg.rc_overshoot_pct = 15
        cfg.rc_buf_initial_sz = 500
        cfg.rc_buf_optimal_sz = 600
        cfg.rc_buf_sz = 1000
        cfg.kf_mode = VPX_KF_AUTO
        cfg.kf_max_dist = 3000
        cfg.rc_target_bitrate = max(1, round(target_bps / 1000))
        self._cfg = cfg
        self._ctx = ctypes.create_string_buffer(256)
        err = lib.vpx_codec_enc_init_ver(self._ctx, lib.vpx_codec_vp8_cx(), ctypes.byref(cfg), 0,
                                         _abi_version(lib))
        if err != VPX_CODEC_OK:
            raise RuntimeError(f"libvpx would not open a {width}x{height} VP8 encoder: {self._error()}")
        speed = -4 if width * height < 352 * 288 else -6
        intra_pct = max(300, int(cfg.rc_buf_optimal_sz * 0.5 * fps / 10))
        for ctrl, value in ((VP8E_SET_CPUUSED, speed), (VP8E_SET_NOISE_SENSITIVITY, 4),
                            (VP8E_SET_STATIC_THRESHOLD, 1), (VP8E_SET_TOKEN_PARTITIONS, 0),
                            (VP8E_SET_MAX_INTRA_BITRATE_PCT, intra_pct)):
            if lib.vpx_codec_control_(self._ctx, ctrl, value) != VPX_CODEC_OK:
                raise RuntimeError(f"libvpx refused control {ctrl} = {value}: {self._error()}")
        self._img = ctypes.create_string_buffer(512)  # vpx_image_t, filled by vpx_img_wrap
        self._pts = 0
        self._open = True

    def _error(self) -> str:
        detail = self._lib.vpx_codec_error_detail(self._ctx)
        return (self._lib.vpx_codec_error(self._ctx) or b"").decode() + (f" ({detail.decode()})" if detail else "")

    @property
    def target_bps(self) -> float:
        return self._cfg.rc_target_bitrate * 1000.0

    def set_rate(self, target_bps: float) -> None:
        """The new target on the running encoder, from the next frame on (``SetRates``)."""
        kbps = max(1, round(target_bps / 1000))
        if kbps != self._cfg.rc_target_bitrate:
            self._cfg.rc_target_bitrate = kbps
            if self._lib.vpx_codec_enc_config_set(self._ctx, ctypes.byref(self._cfg)) != VPX_CODEC_OK:
                raise RuntimeError(f"libvpx refused a target of {kbps} kbit/s: {self._error()}")

    def encode(self, i420: bytes, duration_s: float, keyframe: bool = False) -> tuple[bytes, bool]:
        """Encode one frame (I420, ``width`` × ``height``): its bitstream (empty when libvpx's
        frame dropper skipped it) and whether it is a keyframe."""
        lib = self._lib
        if lib.vpx_img_wrap(self._img, VPX_IMG_FMT_I420, self.width, self.height, 1, i420) is None:
            raise RuntimeError("libvpx could not wrap the frame")
        duration = max(1, round(duration_s * 90_000))
        flags = VPX_EFLAG_FORCE_KF if keyframe else 0
        if lib.vpx_codec_encode(self._ctx, self._img, self._pts, duration, flags, VPX_DL_REALTIME) != VPX_CODEC_OK:
            raise RuntimeError(f"libvpx failed to encode a frame: {self._error()}")
        self._pts += duration
        it = ctypes.c_void_p(None)
        out, key = b"", False
        while True:
            pkt = lib.vpx_codec_get_cx_data(self._ctx, ctypes.byref(it))
            if not pkt:
                break
            if pkt.contents.kind == VPX_CODEC_CX_FRAME_PKT:
                out += ctypes.string_at(pkt.contents.buf, pkt.contents.sz)
                key = key or bool(pkt.contents.flags & VPX_FRAME_IS_KEY)
        return out, key

    def close(self) -> None:
        if getattr(self, "_open", False):
            self._lib.vpx_codec_destroy(self._ctx)
            self._open = False

    def __del__(self):
        self.close()
