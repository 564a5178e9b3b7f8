"""rtcc: rate control for low-latency interactive video.

The Python front of a Rust core (``rtcc._core``): build or load scenarios, run them in the
deterministic simulator, and get the results back as polars DataFrames.

    import rtcc
    result = rtcc.run_file("experiments/demo/step.toml", controller="fixed:rate=5Mbps")
    result.summary["flows"][0]["frame_delay_ms"]["p95"]
    result.save("out/step-fixed")
"""

from importlib import metadata as _metadata

try:
    from . import _core
except ImportError as _exc:  # pragma: no cover - only without a built extension
    raise ImportError(
        "rtcc's native module rtcc._core is not built; from a source checkout run `pip install -e .` "
        "(needs a Rust toolchain)"
    ) from _exc

from ._core import ScenarioError
from .registry import ControllerSpec, controllers, register_controller

# The classes below pull in polars (about 0.1 s to import); they are imported on first use, so
# commands that do not need them (`rtcc --help`, `rtcc emu`, ...) start quickly (PEP 562).
_LAZY = {
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
        try:
            version = _metadata.version("rtcc")
        except _metadata.PackageNotFoundError:  # pragma: no cover - running from an uninstalled tree
            version = "0+unknown"
        globals()["__version__"] = version
        return version
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["ControllerSpec", "Result", "Scenario", "ScenarioError", "Sweep", "SweepResult", "__version__",
           "controllers", "register_controller", "run_file"]
