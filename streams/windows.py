"""Windows, in Kafka Streams' terms: how records are grouped by time for windowed aggregations.

- ``TimeWindows``: fixed-size windows aligned to the epoch, ``[start, end)``. Tumbling by default;
  ``advance_by(...)`` makes them hopping (overlapping), so a record falls into ``size / advance`` windows.
- ``SlidingWindows``: windows defined by the records themselves (KIP-450): two records are in one window
  when their timestamps differ by at most the time difference; windows are ``[start, end]``, both inclusive.
- ``SessionWindows``: per key, records closer than the inactivity gap form one session ``[first, last]``;
  a record that bridges two sessions merges them.

Every window type has a grace period: a window accepts records until stream time (the largest record
timestamp the task has seen) reaches ``closes_at(window_end)``; later records for it are dropped. Durations
are ``timedelta`` or integer milliseconds.

A windowed aggregation's results are keyed by ``Windowed(key, window)``; ``window.start`` and
``window.end`` are milliseconds.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

__all__ = [
    "EmitStrategy",
    "SessionWindow",
    "SessionWindows",
    "SlidingWindows",
    "TimeWindow",
    "TimeWindows",
    "Window",
    "Windowed",
    "Windows",
    "to_millis",
]


def to_millis(duration: timedelta | int, what: str) -> int:
    """A duration in whole milliseconds; ``what`` names it in errors."""
    if isinstance(duration, timedelta):
        ms = duration // timedelta(milliseconds=1)
        if timedelta(milliseconds=ms) != duration:
            raise ValueError(f"{what} must be whole milliseconds, got {duration!r}")
    elif isinstance(duration, int) and not isinstance(duration, bool):
        ms = duration
    else:
        raise TypeError(f"{what} must be a timedelta or integer milliseconds, got {duration!r}")
    if ms < 0:
        raise ValueError(f"{what} must not be negative, got {ms} ms")
    return ms


class Window:
    """A time interval in milliseconds. Its type says whether ``end`` is in it: ``TimeWindow`` is
    ``[start, end)``, ``SessionWindow`` (and the windows of ``SlidingWindows``) ``[start, end]``."""

    __slots__ = ("end", "start")

    def __init__(self, start: int, end: int) -> None:
        if not 0 <= start <= end:
            raise ValueError(f"{type(self).__name__} needs 0 <= start <= end, got start={start} end={end}")
        self.start = start
        self.end = end

    def overlaps(self, other: Window) -> bool:
        return self.start <= other.end and other.start <= self.end

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and self.start == other.start and self.end == other.end

    def __hash__(self) -> int:
        return hash((type(self).__name__, self.start, self.end))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(start={self.start}, end={self.end})"


class TimeWindow(Window):
    """A window of ``TimeWindows`` (``[start, end)``) or ``SlidingWindows`` (``[start, end]``)."""

    __slots__ = ()


class SessionWindow(Window):
    """A session: from its first record's timestamp to its last one's, both inclusive."""

    __slots__ = ()


class Windowed:
    """The key of a windowed aggregation's result: the record key and its window."""

    __slots__ = ("key", "window")

    def __init__(self, key: Any, window: Window) -> None:
        self.key = key
        self.window = window

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Windowed) and self.key == other.key and self.window == other.window

    def __hash__(self) -> int:
        return hash((self.key, self.window))

    def __str__(self) -> str:
        """``[key@start/end]``, as Kafka Streams prints a windowed key."""
        return f"[{self.key}@{self.window.start}/{self.window.end}]"

    def __repr__(self) -> str:
        return f"Windowed({self.key!r}, {self.window!r})"


class EmitStrategy(enum.StrEnum):
    """When a windowed aggregation emits (KIP-825): on every update (the default), or once per window
    when it closes (its final result)."""

    ON_WINDOW_UPDATE = "on_window_update"
    ON_WINDOW_CLOSE = "on_window_close"

    @classmethod
    def on_window_update(cls) -> EmitStrategy:
        return cls.ON_WINDOW_UPDATE

    @classmethod
    def on_window_close(cls) -> EmitStrategy:
        return cls.ON_WINDOW_CLOSE

    @classmethod
    def of(cls, spec: Any) -> EmitStrategy:
        try:
            return cls(spec)
        except ValueError:
            raise ValueError(f"emit_strategy must be 'on_window_update' or 'on_window_close', got {spec!r}") from None


@dataclass(frozen=True, slots=True)
class TimeWindows:
    """Fixed-size windows aligned to the epoch: tumbling (``advance == size``) or hopping."""

    size_ms: int
    advance_ms: int
    grace_ms: int

    def __post_init__(self) -> None:
        if self.size_ms <= 0:
            raise ValueError(f"window size must be larger than zero, got {self.size_ms} ms")
        if not 0 < self.advance_ms <= self.size_ms:
            raise ValueError(
                f"window advance must be more than zero and at most the size ({self.size_ms} ms), "
                f"got {self.advance_ms} ms"
            )

    @classmethod
    def of_size_with_no_grace(cls, size: timedelta | int) -> TimeWindows:
        """Tumbling windows of ``size``; a record is dropped once stream time passed its window's end."""
        ms = to_millis(size, "window size")
        return cls(ms, ms, 0)

    @classmethod
    def of_size_and_grace(cls, size: timedelta | int, grace: timedelta | int) -> TimeWindows:
        """Tumbling windows of ``size`` that accept records until stream time passes end + ``grace``."""
        ms = to_millis(size, "window size")
        return cls(ms, ms, to_millis(grace, "window grace"))

    def advance_by(self, advance: timedelta | int) -> TimeWindows:
        """Hopping windows: a new window starts every ``advance``."""
        return TimeWindows(self.size_ms, to_millis(advance, "window advance"), self.grace_ms)

    def window_starts(self, timestamp: int) -> range:
        """Starts of the windows ``timestamp`` falls into, ascending."""
        advance = self.advance_ms
        first = max(0, timestamp - self.size_ms + advance) // advance * advance
        return range(first, timestamp + 1, advance)

    @property
    def close_offset(self) -> int:
        """``closes_at(end) - end``: how long after its end a window closes."""
        return self.grace_ms

    def closes_at(self, window_end: int) -> int:
        """The stream time from which a window ending at ``window_end`` takes no more records."""
        return window_end + self.close_offset

    @property
    def default_retention_ms(self) -> int:
        return self.size_ms + self.grace_ms


@dataclass(frozen=True, slots=True)
class SlidingWindows:
    """Windows of ``time_difference`` that slide with the records (KIP-450), both ends inclusive."""

    time_difference_ms: int
    grace_ms: int

    @classmethod
    def of_time_difference_with_no_grace(cls, time_difference: timedelta | int) -> SlidingWindows:
        return cls(to_millis(time_difference, "sliding window time difference"), 0)

    @classmethod
    def of_time_difference_and_grace(cls, time_difference: timedelta | int, grace: timedelta | int) -> SlidingWindows:
        return cls(to_millis(time_difference, "sliding window time difference"), to_millis(grace, "window grace"))

    @property
    def size_ms(self) -> int:
        """The span of a window, ``end - start`` (its key serde adds it to the start)."""
        return self.time_difference_ms

    @property
    def close_offset(self) -> int:
        return self.grace_ms + 1  # the end is inclusive

    def closes_at(self, window_end: int) -> int:
        return window_end + self.close_offset

    @property
    def default_retention_ms(self) -> int:
        # A record's right window ends a time difference after it: two differences plus grace back.
        return 2 * self.time_difference_ms + self.grace_ms


@dataclass(frozen=True, slots=True)
class SessionWindows:
    """Sessions per key: records less than ``inactivity_gap`` apart belong to one session."""

    inactivity_gap_ms: int
    grace_ms: int

    def __post_init__(self) -> None:
        if self.inactivity_gap_ms <= 0:
            raise ValueError(f"session inactivity gap must be larger than zero, got {self.inactivity_gap_ms} ms")

    @classmethod
    def of_inactivity_gap_with_no_grace(cls, gap: timedelta | int) -> SessionWindows:
        return cls(to_millis(gap, "session inactivity gap"), 0)

    @classmethod
    def of_inactivity_gap_and_grace(cls, gap: timedelta | int, grace: timedelta | int) -> SessionWindows:
        return cls(to_millis(gap, "session inactivity gap"), to_millis(grace, "window grace"))

    @property
    def close_offset(self) -> int:
        # A record up to a gap after the end still extends the session, and may be a grace late.
        return self.inactivity_gap_ms + self.grace_ms + 1

    def closes_at(self, session_end: int) -> int:
        return session_end + self.close_offset

    @property
    def default_retention_ms(self) -> int:
        return self.inactivity_gap_ms + self.grace_ms


Windows = TimeWindows | SlidingWindows | SessionWindows
"""What ``KGroupedStream.windowed_by`` takes."""
