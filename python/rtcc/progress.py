"""One-line progress display for simulation runs, shown only when stderr is a terminal.

The core calls the callback with the completed fraction (0..1) about once per simulated
second; the line is redrawn with ``\\r`` when the whole percentage changes and erased at the end.
"""

from __future__ import annotations

import sys
from typing import Callable, TextIO


class TerminalProgress:
    """Callable progress line: ``with TerminalProgress("step/gcc") as cb: run(progress=cb)``."""

    def __init__(self, label: str, stream: TextIO | None = None):
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = _isatty(self.stream)
        self._last = -1

    def __call__(self, fraction: float) -> None:
        if not self.enabled:
            return
        pct = max(0, min(100, int(fraction * 100)))
        if pct != self._last:
            self._last = pct
            self.stream.write(f"\r{self.label} {pct:3d}%")
            self.stream.flush()

    @property
    def callback(self) -> Callable[[float], None] | None:
        """The callable to hand to the core, or None when nothing would be shown."""
        return self if self.enabled else None

    def close(self) -> None:
        if self.enabled and self._last >= 0:
            self.stream.write("\r\033[K")
            self.stream.flush()
        self._last = -1

    def __enter__(self) -> "TerminalProgress":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
