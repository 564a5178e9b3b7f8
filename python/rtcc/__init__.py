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
from .result import Result
from .scenario import Scenario, run_file
from .sweep import Sweep, SweepResult

try:
    __version__ = _metadata.version("rtcc")
except _metadata.PackageNotFoundError:  # pragma: no cover - running from an uninstalled tree
    __version__ = "0+unknown"

__all__ = ["ControllerSpec", "Result", "Scenario", "ScenarioError", "Sweep", "SweepResult", "__version__",
           "controllers", "register_controller", "run_file"]
