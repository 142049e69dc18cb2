"""``JoinWindows``: how far apart in time two records of a stream-stream join may be, in Kafka Streams' terms.

A left record at ``t`` joins the right records with timestamps in ``[t - before, t + after]`` (and so a
right record at ``t`` joins the left records in ``[t - after, t + before]``). ``of_time_difference_*``
makes the window symmetric; ``before(...)`` / ``after(...)`` change one side (either may be negative, as
long as ``before + after >= 0``). The grace period says how long after a window's end (by stream time)
a record still counts as on time: a left/outer join emits a record that found no partner only once its
window has closed (window end + grace), so no spurious ``(value, None)`` is sent early (KIP-633).
Durations are ``timedelta`` or integer milliseconds.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from streams.windows import to_millis

__all__ = ["JoinWindows"]


def _signed_millis(duration: timedelta | int, what: str) -> int:
    """``to_millis`` that also accepts negative durations (``before``/``after`` may be negative)."""
    if isinstance(duration, timedelta) and duration < timedelta(0):
        return -to_millis(-duration, what)
    if isinstance(duration, int) and not isinstance(duration, bool) and duration < 0:
        return -to_millis(-duration, what)
    return to_millis(duration, what)


@dataclass(frozen=True, slots=True)
class JoinWindows:
    """The time bounds of a stream-stream join: ``before_ms``, ``after_ms`` and ``grace_ms``."""

    before_ms: int
    after_ms: int
    grace_ms: int

    def __post_init__(self) -> None:
        if self.before_ms + self.after_ms < 0:
            raise ValueError(
                "join window size (before + after) must not be negative, "
                f"got before={self.before_ms} ms after={self.after_ms} ms"
            )
        if self.grace_ms < 0:
            raise ValueError(f"join window grace must not be negative, got {self.grace_ms} ms")

    @classmethod
    def of_time_difference_and_grace(cls, difference: timedelta | int, grace: timedelta | int) -> JoinWindows:
        """Records join when their timestamps differ by at most ``difference``; a window accepts
        out-of-order records for ``grace`` after it ends."""
        ms = to_millis(difference, "join window time difference")
        return cls(ms, ms, to_millis(grace, "join window grace"))

    @classmethod
    def of_time_difference_with_no_grace(cls, difference: timedelta | int) -> JoinWindows:
        """As ``of_time_difference_and_grace`` with no grace: a window closes as stream time passes its end."""
        ms = to_millis(difference, "join window time difference")
        return cls(ms, ms, 0)

    def before(self, before: timedelta | int) -> JoinWindows:
        """The same windows, but a left record joins right records down to ``before`` earlier."""
        return JoinWindows(_signed_millis(before, "join window before"), self.after_ms, self.grace_ms)

    def after(self, after: timedelta | int) -> JoinWindows:
        """The same windows, but a left record joins right records up to ``after`` later."""
        return JoinWindows(self.before_ms, _signed_millis(after, "join window after"), self.grace_ms)

    @property
    def size_ms(self) -> int:
        """``before + after``: the span of one record's window."""
        return self.before_ms + self.after_ms

    @property
    def retention_ms(self) -> int:
        """How long the join's window stores keep records: the window size plus the grace period."""
        return self.size_ms + self.grace_ms
