"""Progress bars for long runs (tqdm), shown only when stderr is a terminal.

The core calls the callback with the completed fraction (0..1) about once per simulated
second; the bar (with elapsed and remaining time) is redrawn when the whole percentage changes
and erased at the end. A sweep shows runs done out of the total. tqdm is imported only when a bar
is drawn, so commands without a terminal (and ``rtcc --help``) do not pay for it.
"""

from __future__ import annotations

import sys
from typing import Callable, TextIO


def _bar(label: str, total: int, unit: str, stream: TextIO):
    from tqdm import tqdm

    # mininterval=0: the callers already redraw at most once per percent or per run.
    return tqdm(total=total, desc=label, unit=unit, file=stream, leave=False, dynamic_ncols=True, mininterval=0,
                bar_format="{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} {unit} [{elapsed}<{remaining}]")


class TerminalProgress:
    """Callable progress bar: ``with TerminalProgress("step/gcc") as cb: run(progress=cb)``."""

    def __init__(self, label: str, stream: TextIO | None = None):
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = _isatty(self.stream)
        self._bar = None
        self._last = -1

    def __call__(self, fraction: float) -> None:
        if not self.enabled:
            return
        pct = max(0, min(100, int(fraction * 100)))
        if pct != self._last:
            if self._bar is None:
                self._bar = _bar(self.label, 100, "%", self.stream)
            self._bar.update(pct - max(self._last, 0))
            self._last = pct

    @property
    def callback(self) -> Callable[[float], None] | None:
        """The callable to hand to the core, or None when nothing would be shown."""
        return self if self.enabled else None

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
        self._last = -1

    def __enter__(self) -> "TerminalProgress":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class RunsProgress:
    """``done/total runs`` of a sweep (or ``unit``: the plots of a run) as a bar, when ``stream``
    is a terminal."""

    def __init__(self, name: str, total: int = 0, stream: TextIO | None = None, unit: str = "runs"):
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = _isatty(self.stream)
        self.name, self.total, self.unit, self._bar = name, total, unit, None

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled:
            return
        if self._bar is None:
            self._bar = _bar(self.name, total, self.unit, self.stream)
        self._bar.update(done - self._bar.n)

    def __enter__(self) -> "RunsProgress":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
