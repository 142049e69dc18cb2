"""Progress of long operations (export, import, copy) on one stderr line.

Work reports through the small ``Progress`` interface; ``progress_for`` picks the terminal line or nothing
(``--quiet``, or stderr not a terminal: logs and CI output stay clean).
"""

from __future__ import annotations

import sys
import time
from typing import Protocol, TextIO


class Progress(Protocol):
    """What long work reports: a phase with a number of steps (0: not known in advance), its steps, its end."""

    def start(self, phase: str, total: int) -> None: ...

    def advance(self, steps: int = 1) -> None: ...

    def finish(self) -> None: ...


class NoProgress:
    def start(self, phase: str, total: int) -> None:
        pass

    def advance(self, steps: int = 1) -> None:
        pass

    def finish(self) -> None:
        pass


class TerminalProgress:
    """``phase  [#####.....]  120/400  30%  2.1s`` (``phase  120  2.1s  57/s`` when the total is not known),
    redrawn at most ten times a second."""

    WIDTH = 30

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.phase = ""
        self.total = 0
        self.done = 0
        self._started = 0.0
        self._drawn = 0.0

    def start(self, phase: str, total: int) -> None:
        self.phase, self.total, self.done = phase, total, 0
        self._started = time.monotonic()
        self._draw(force=True)

    def advance(self, steps: int = 1) -> None:
        self.done += steps
        self._draw(force=self.done >= self.total)

    def finish(self) -> None:
        self._draw(force=True)
        self.stream.write("\n")
        self.stream.flush()

    def _draw(self, *, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._drawn < 0.1:
            return
        self._drawn = now
        elapsed = now - self._started
        if not self.total:  # a stream of unknown length (stdin): a count and a rate
            rate = self.done / elapsed if elapsed > 0 else 0.0
            self.stream.write(f"\r{self.phase:<24} {self.done} {elapsed:5.1f}s {rate:,.0f}/s")
            self.stream.flush()
            return
        frac = self.done / self.total
        filled = round(self.WIDTH * min(frac, 1.0))
        bar = "#" * filled + "." * (self.WIDTH - filled)
        self.stream.write(f"\r{self.phase:<24} [{bar}] {self.done}/{self.total} {frac:4.0%} {elapsed:5.1f}s")
        self.stream.flush()


def progress_for(quiet: bool, stream: TextIO | None = None) -> Progress:
    out = sys.stderr if stream is None else stream
    if quiet or not out.isatty():
        return NoProgress()
    return TerminalProgress(out)
