"""A small dependency-free progress bar for long CLI operations, drawn on stderr.

Shown only when stderr is a terminal, or when forced (``--progress`` or the environment
variable ``DELTALOG_PROGRESS=1``), and never with ``--json`` unless forced.
"""

from __future__ import annotations

import os
import time
from typing import TextIO

__all__ = ["ProgressBar", "progress_enabled"]


def progress_enabled(stream: TextIO, *, json_output: bool = False, forced: bool = False) -> bool:
    """Whether to draw: forced by flag or environment, else only on a terminal without JSON."""
    env = os.environ.get("DELTALOG_PROGRESS", "").strip().lower()
    if forced or env in ("1", "true", "yes", "always"):
        return True
    if env in ("0", "false", "no", "never"):
        return False
    return not json_output and stream.isatty()


class ProgressBar:
    """``label [#########.........]  12/40  30%``, redrawn in place (at most 10 times a second)."""

    def __init__(self, label: str, stream: TextIO, enabled: bool, width: int = 30) -> None:
        self.label = label
        self.stream = stream
        self.enabled = enabled
        self.width = width
        self._last = 0.0
        self._drawn = False
        self._done = 0
        self._total = 0

    def __call__(self, done: int, total: int) -> None:
        self.update(done, total)

    def update(self, done: int, total: int) -> None:
        self._done, self._total = done, total
        if not self.enabled:
            return
        now = time.monotonic()
        if done < total and now - self._last < 0.1:
            return
        self._last = now
        self._draw()

    def _draw(self) -> None:
        total = max(self._total, 0)
        done = min(self._done, total) if total else self._done
        fraction = done / total if total else 1.0
        filled = int(self.width * fraction)
        bar = "#" * filled + "." * (self.width - filled)
        self.stream.write(f"\r{self.label} [{bar}] {done}/{total} {fraction * 100:3.0f}%")
        self.stream.flush()
        self._drawn = True

    def close(self) -> None:
        """End the bar's line (only if something was drawn)."""
        if self.enabled and self._drawn:
            self._draw()
            self.stream.write("\n")
            self.stream.flush()
