"""Where the codec libraries are: PyAV's wheel ships libvpx and libx264 beside its modules."""

from __future__ import annotations

import ctypes.util
import glob
import importlib.util
import os


def candidates(name: str) -> list[str]:
    """Shared libraries named ``lib<name>`` to try: PyAV's own copy first (``av.libs`` on Linux,
    ``.dylibs`` on macOS), then the system's."""
    found = []
    spec = importlib.util.find_spec("av")
    if spec is not None and spec.origin:
        site = os.path.dirname(os.path.dirname(spec.origin))
        found += sorted(glob.glob(os.path.join(site, "av.libs", f"lib{name}*.so*")))
        found += sorted(glob.glob(os.path.join(os.path.dirname(spec.origin), ".dylibs", f"lib{name}*.dylib")))
    system = ctypes.util.find_library(name)
    if system:
        found.append(system)
    return found
