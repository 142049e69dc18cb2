"""Kafka Streams' emit throttles: how often a processor may scan its store for results that became final.

A left/outer stream-stream join emits its unjoined records, and a windowed aggregation with
``EmitStrategy.ON_WINDOW_CLOSE`` its closed windows, by scanning a store once stream time has passed them.
A scan per record would be wasted work when stream time moves a little at a time, so Kafka Streams runs it at
most once per interval of wall-clock (processing) time: ``emit.interval.ms.kstreams.outer.join.spurious.results.fix``
and ``emit.interval.ms.kstreams.windowed.aggregation`` (internal configs, default 1000 ms; its
``TopologyTestDriver`` sets both to 0, so tests see every result as soon as stream time allows). The
throttle only delays results: which records are emitted, their order and timestamps do not depend on it.
Processing time decouples it from the data, as in Kafka Streams.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DEFAULT_EMIT_INTERVAL_MS", "EmitIntervals", "EmitThrottle"]

#: Kafka Streams' default for both intervals.
DEFAULT_EMIT_INTERVAL_MS = 1000


@dataclass(frozen=True, slots=True)
class EmitIntervals:
    """The two throttles of an application, in wall-clock milliseconds (0: scan on every record)."""

    outer_join_ms: int = DEFAULT_EMIT_INTERVAL_MS
    windowed_aggregation_ms: int = DEFAULT_EMIT_INTERVAL_MS

    def __post_init__(self) -> None:
        for name in ("outer_join_ms", "windowed_aggregation_ms"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"emit interval {name} must be an integer >= 0 (milliseconds), got {value!r}")


@dataclass(slots=True)
class EmitThrottle:
    """One scanner's throttle: ``ready(now)`` says whether a scan may run now and, if so, lets the next one
    run ``interval_ms`` later. The next time is counted from ``now`` (not from the previous one), so that a
    wall clock that jumps ahead does not make every later call ready, as in Kafka Streams."""

    interval_ms: int
    next_ms: int = 0

    def ready(self, now_ms: int) -> bool:
        if now_ms < self.next_ms:
            return False
        self.next_ms = now_ms + self.interval_ms
        return True
