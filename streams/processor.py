"""The processor API: ``Processor`` (init / process / close), the ``ProcessorContext`` it works through,
and punctuation (stream-time and wall-clock timers).

A processor instance belongs to one task. ``context.forward(key, value)`` hands a record to the
processor's children synchronously; ``context.timestamp`` / ``topic`` / ``partition`` / ``offset`` /
``headers`` describe the record being processed (or, inside a punctuation, the punctuation time).
"""

from __future__ import annotations

import enum
import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from streams.emit_throttle import EmitIntervals
from streams.errors import InvalidStateStoreError, TopologyError
from streams.log.base import Headers

__all__ = [
    "Cancellable",
    "Clock",
    "Processor",
    "ProcessorContext",
    "PunctuationType",
    "RecordContext",
    "SystemClock",
    "TaskContext",
]


class PunctuationType(enum.Enum):
    """What drives a punctuator: the task's stream time (max record timestamp seen) or the wall clock."""

    STREAM_TIME = "stream_time"
    WALL_CLOCK_TIME = "wall_clock_time"


class Clock(Protocol):
    def now_ms(self) -> int: ...


class SystemClock:
    """Wall-clock milliseconds; the test driver swaps in a simulated clock."""

    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000


class RecordContext:
    """Metadata of the record a task is processing, shared by all of the task's processors."""

    __slots__ = ("headers", "offset", "partition", "timestamp", "topic")

    def __init__(self) -> None:
        self.topic: str | None = None
        self.partition: int = -1
        self.offset: int = -1
        self.timestamp: int = 0
        self.headers: Headers = ()


class Cancellable:
    """A scheduled punctuation; ``cancel()`` stops it."""

    __slots__ = ("callback", "cancelled", "interval_ms", "next_ms", "type")

    def __init__(self, interval_ms: int, type: PunctuationType, callback: Callable[[int], None]) -> None:
        self.interval_ms = interval_ms
        self.type = type
        self.callback = callback
        self.next_ms: int | None = None
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True

    def due(self, now: int) -> bool:
        """Fire at most once per call: when ``now`` reached the next grid point (or on the first call
        for stream time, which starts at the first record)."""
        if self.cancelled:
            return False
        if self.next_ms is None:
            self.next_ms = now + self.interval_ms
            return self.type is PunctuationType.STREAM_TIME
        if now < self.next_ms:
            return False
        behind = (now - self.next_ms) // self.interval_ms + 1
        self.next_ms += behind * self.interval_ms
        return True


class TaskContext(Protocol):
    """What a ``ProcessorContext`` needs of the task it belongs to (``streams.task.StreamTask`` is one)."""

    application_id: str
    id: str
    record_context: RecordContext
    stream_time: int
    clock: Clock
    commit_requested: bool
    dropped_records: int
    emit_intervals: EmitIntervals

    @property
    def stores(self) -> Mapping[str, Any]: ...

    @property
    def global_stores(self) -> Mapping[str, Any]: ...

    def schedule(self, c: Cancellable) -> Cancellable: ...


class Processor:
    """Subclass and override ``process``; ``init`` gets the context (keep it), ``close`` releases resources."""

    context: ProcessorContext

    def init(self, context: ProcessorContext) -> None:
        self.context = context

    def process(self, key: Any, value: Any) -> None:
        raise NotImplementedError(f"{type(self).__name__}.process(key, value) is not implemented")

    def close(self) -> None:
        return None


class ProcessorContext:
    """What a processor sees of its task: the current record's metadata, forwarding, stores, timers."""

    def __init__(
        self,
        task: TaskContext,
        node_name: str,
        children: list[Processor],
        child_names: list[str],
        store_names: frozenset[str],
    ) -> None:
        self._task = task
        self.node_name = node_name
        self._children = children
        self._child_by_name = dict(zip(child_names, children, strict=True))
        self._store_names = store_names
        self._rc = task.record_context

    # -- identity --------------------------------------------------------------------------------------

    @property
    def application_id(self) -> str:
        return self._task.application_id

    @property
    def task_id(self) -> str:
        return self._task.id

    # -- the current record ------------------------------------------------------------------------------

    @property
    def topic(self) -> str | None:
        return self._rc.topic

    @property
    def partition(self) -> int:
        return self._rc.partition

    @property
    def offset(self) -> int:
        return self._rc.offset

    @property
    def timestamp(self) -> int:
        return self._rc.timestamp

    @property
    def headers(self) -> Headers:
        return self._rc.headers

    @property
    def record_context(self) -> RecordContext:
        """The task's record context itself, for built-in processors that forward with another timestamp
        (set ``timestamp``, forward, restore it) without the cost of ``forward(timestamp=...)``."""
        return self._rc

    @property
    def stream_time(self) -> int:
        """The largest record timestamp this task has seen (-1 before the first record). A restarted task
        continues from the stream time its time-keeping stores (windows, sessions, suppression buffers)
        recorded at the last commit."""
        return self._task.stream_time

    @property
    def wall_clock_ms(self) -> int:
        return self._task.clock.now_ms()

    @property
    def emit_intervals(self) -> EmitIntervals:
        """How often the built-in processors that emit final results may scan for them (Kafka Streams'
        ``emit.interval.ms.kstreams.*``; ``streams/emit_throttle.py``)."""
        return self._task.emit_intervals

    def record_dropped(self) -> None:
        """Count a record this processor dropped (late, null key, ...): the task's ``dropped_records``
        metric (Kafka Streams' ``dropped-records``)."""
        self._task.dropped_records += 1

    # -- forwarding ----------------------------------------------------------------------------------

    def forward(self, key: Any, value: Any, *, to: str | None = None, timestamp: int | None = None) -> None:
        """Send a record to every child (or only the child named ``to``), with the current record's
        timestamp unless ``timestamp`` is given."""
        rc = self._rc
        saved = rc.timestamp
        if timestamp is not None:
            rc.timestamp = timestamp
        try:
            if to is not None:
                child = self._child_by_name.get(to)
                if child is None:
                    raise TopologyError(
                        f"processor {self.node_name!r} cannot forward to {to!r}: its children are "
                        f"{sorted(self._child_by_name)}"
                    )
                child.process(key, value)
            else:
                for child in self._children:
                    child.process(key, value)
        finally:
            rc.timestamp = saved

    def forwarder(self) -> Callable[[Any, Any], None]:
        """The fastest way to forward to all children, for built-in processors: one bound call."""
        children = self._children
        if not children:
            return _drop
        if len(children) == 1:
            return children[0].process
        processes = [c.process for c in children]

        def fan_out(key: Any, value: Any) -> None:
            for process in processes:
                process(key, value)

        return fan_out

    def child_forwarders(self) -> list[Callable[[Any, Any], None]]:
        """One bound call per child, in the order the children were added: for built-in processors that
        pick a child per record (branch)."""
        return [child.process for child in self._children]

    # -- state and time ------------------------------------------------------------------------------

    def get_state_store(self, name: str) -> Any:
        """A store the processor is connected to, or a global table's store (any processor may read those)."""
        if name not in self._store_names:
            global_store = self._task.global_stores.get(name)
            if global_store is not None:
                return global_store
            raise InvalidStateStoreError(
                f"processor {self.node_name!r} is not connected to store {name!r}; connect it with "
                f"Topology.add_state_store(..., {self.node_name!r}) or process(..., stores=[{name!r}]). "
                f"Connected: {sorted(self._store_names)}"
            )
        return self._task.stores[name]

    def _wall_clock_reader(self) -> Callable[[], int]:
        """``wall_clock_ms`` as one bound call, for a built-in processor that reads it per record (an emit
        throttle): the task's clock is set once, at its creation."""
        return self._task.clock.now_ms

    def _upstream_store(self, name: str) -> Any:
        """A store of this task that the processor is not connected to (None if there is none): for a built-in
        processor that derives its state from the store of the processor above it (a final-results suppression
        below a windowed aggregation), without showing that store as its own in ``Topology.describe()``."""
        return self._task.stores.get(name)

    def schedule(self, interval_ms: int, type: PunctuationType, callback: Callable[[int], None]) -> Cancellable:
        """Call ``callback(time_ms)`` every ``interval_ms`` of stream time or wall-clock time."""
        if not isinstance(interval_ms, int) or interval_ms < 1:
            raise ValueError(f"punctuation interval must be an integer >= 1 ms, got {interval_ms!r}")
        if not isinstance(type, PunctuationType):
            raise TypeError(f"punctuation type must be a PunctuationType, got {type!r}")
        return self._task.schedule(Cancellable(interval_ms, type, callback))

    def commit(self) -> None:
        """Ask for a commit as soon as the current batch is processed."""
        self._task.commit_requested = True


def _drop(key: Any, value: Any) -> None:
    return None
