"""rtcc: rate control for low-latency interactive video.

The Python front of a Rust core (``rtcc._core``): build or load scenarios, run them in the
deterministic simulator, and get the results back as polars DataFrames.

    import rtcc
    result = rtcc.run_file("experiments/demo/step.toml", controller="fixed:rate=5Mbps")
    result.summary["flows"][0]["frame_delay_ms"]["p95"]
    result.save("out/step-fixed")
"""

try:
    from . import _core
except ImportError as _exc:  # pragma: no cover - only without a built extension
    raise ImportError(
        "rtcc's native module rtcc._core is not built; from a source checkout run `pip install -e .` "
        "(needs a Rust toolchain)"
    ) from _exc

from ._core import ScenarioError
from .video.encoders import register as _register_encoders

_register_encoders()  # `vp8` and `x264` encoder models (nothing is loaded until a flow uses one)

# Imported on first use, so commands that do not need them (`rtcc --help`, `rtcc emu`, ...)
# start quickly (PEP 562); polars itself is imported only when a log is first read.
_LAZY = {
    "ControllerSpec": ".registry",
    "controllers": ".registry",
    "register_controller": ".registry",
    "Result": ".result",
    "Scenario": ".scenario",
    "run_file": ".scenario",
    "Sweep": ".sweep",
    "SweepResult": ".sweep",
}


def __getattr__(name: str):
    if name in _LAZY:
        from importlib import import_module

        value = getattr(import_module(_LAZY[name], __name__), name)
        globals()[name] = value
        return value
    if name == "__version__":
        return _core.__version__  # the crate's version, which is also the package's (maturin)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["ControllerSpec", "Result", "Scenario", "ScenarioError", "Sweep", "SweepResult", "__version__",
           "controllers", "register_controller", "run_file"]
