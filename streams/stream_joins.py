"""The processors behind ``KStream.join`` / ``left_join`` / ``outer_join``, with Kafka Streams' semantics
(as released in Kafka 4.1, ``KStreamKStreamJoin`` / ``KStreamKTableJoinProcessor``).

Stream-stream (windowed): each side keeps its records in its own window store (``retain_duplicates``,
keyed by the record timestamp, retention = window size + grace). A record is stored, then joined with
every record of the other side's store within its window; results carry the larger of the two
timestamps. A left/outer join keeps a record that found no partner in a shared "outer" store (a window
store of ``LeftOrRightSerde`` values) until its window has closed by stream time (window end + grace)
and only then emits it with None for the missing side, in timestamp order (KIP-633); a later partner
removes it from there. A record whose window had already ended (by stream time, grace not counted) when
it arrived still joins what the other store holds; if it finds nothing it is emitted (with None) at once,
and a partner that arrives later within the grace period joins it again: two results, as in Kafka
Streams. The join's stream time (the largest timestamp either side has seen) is kept as metadata of the
outer store, so it survives restarts. The scans for closed records are throttled by wall-clock time
(``emit.interval.ms.kstreams.outer.join.spurious.results.fix``, ``streams/emit_throttle.py``), except when
a waiting record would otherwise leave the outer store's retention unemitted.

Stream-table: the stream record looks up the table's store when it is processed; table updates emit
nothing. A left join calls the joiner with None when the table has no row. Against a versioned table (KIP-914)
the lookup is as of the stream record's timestamp, so an out-of-order record meets the row of its own time.
With a grace period (KIP-923; the table must be versioned) stream records wait in a time-ordered buffer
(``streams/state/join_buffer.py``) until stream time minus the grace reaches them, then join in timestamp
order; a record already older than that joins at once (Kafka's buffer ``put`` returning false).

Null keys (KIP-962, Kafka 3.7+): a record with a null key and a value cannot join anything, but a side
that emits its unjoined records (left join: the left side; outer join: both; left stream-table join) emits
it at once as ``joiner(None, value, None)``. Every other record with a null key or value is dropped,
logged at debug and counted in the task's ``dropped_records``. Joiners here take ``(key, left value,
right value)``; the DSL adapts the user's.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from streams.emit_throttle import EmitThrottle
from streams.join_windows import JoinWindows
from streams.ops import Forwarding
from streams.processor import ProcessorContext
from streams.state.join_buffer import TimeOrderedBuffer
from streams.state.versioned import VersionedKeyValueStore
from streams.table_joins import Joiner

__all__ = ["JoinEmission", "LeftOrRightSerde", "StreamStreamJoinProcessor", "StreamTableJoinProcessor"]

log = logging.getLogger("streams.joins")

_STREAM_TIME = "join-stream-time"
_LEFT, _RIGHT = b"\x01", b"\x00"


class LeftOrRightSerde:
    """The outer store's values: ``(is_left, value)`` as one byte for the side, then the bytes of that
    side's value serde."""

    def __init__(self, left: Any, right: Any) -> None:
        self.left = left
        self.right = right

    def serialize(self, obj: Any, topic: str, is_key: bool) -> bytes | None:
        if obj is None:
            return None
        is_left, value = obj
        serde = self.left if is_left else self.right
        return (_LEFT if is_left else _RIGHT) + (serde.serialize(value, topic, False) or b"")

    def deserialize(self, data: bytes | None, topic: str, is_key: bool) -> Any:
        if data is None:
            return None
        is_left = data[:1] == _LEFT
        return is_left, (self.left if is_left else self.right).deserialize(data[1:], topic, False)

    def __repr__(self) -> str:
        return f"LeftOrRightSerde({self.left!r}, {self.right!r})"


class _Join(Forwarding):
    """What both kinds of join share: dropping records with a null key or value."""

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self._rc = context.record_context

    def _drop(self, key: Any, value: Any) -> None:
        self.context.record_dropped()
        if log.isEnabledFor(logging.DEBUG):
            rc = self._rc
            log.debug(
                "skipping a record with a null %s: topic=%s partition=%d offset=%d",
                "key" if key is None else "value",
                rc.topic,
                rc.partition,
                rc.offset,
            )


@dataclass(slots=True)
class JoinEmission:
    """What the two processors of one left/outer join share within a task (Kafka Streams' shared time
    tracker): the emit throttle, and ``min_time``, a lower bound of the times in the outer store (0 when
    unknown, after a start), so that a scan is skipped while nothing stored can have closed."""

    throttle: EmitThrottle
    min_time: int = 0


@dataclass(eq=False)
class StreamStreamJoinProcessor(_Join):
    """One side of a windowed stream-stream join: stores its records, joins them with the other side's.

    ``left_side``: this processor reads the join's left stream. ``outer``: records of this side that find
    no partner are emitted with None (left join: the left side; outer join: both). ``outer_store``: the
    shared store of such records (None for an inner join). ``emissions``: the ``JoinEmission`` of each
    task, shared by the join's two processors."""

    this_store: str
    other_store: str
    outer_store: str | None
    windows: JoinWindows
    joiner: Joiner
    left_side: bool
    outer: bool
    other_outer: bool
    emissions: dict[str, JoinEmission] = field(default_factory=dict)

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self._task_id = context.task_id
        self._this = context.get_state_store(self.this_store)
        self._other = context.get_state_store(self.other_store)
        self._outer = None if self.outer_store is None else context.get_state_store(self.outer_store)
        if self._outer is not None:
            emission = self.emissions.get(self._task_id)
            if emission is None:
                throttle = EmitThrottle(context.emit_intervals.outer_join_ms)
                emission = self.emissions[self._task_id] = JoinEmission(throttle)
            self._emission = emission
            self._retention = self._outer.retention_ms
        w = self.windows
        # A left record looks ``before`` back and ``after`` ahead for right records; a right one the reverse.
        self._back, self._ahead = (w.before_ms, w.after_ms) if self.left_side else (w.after_ms, w.before_ms)
        joiner = self.joiner
        self._join = joiner if self.left_side else (lambda k, this, other: joiner(k, other, this))
        self._kser = self._this.key_serializer
        self._seq = 0

    def process(self, key: Any, value: Any) -> None:
        rc = self._rc
        ts = rc.timestamp
        outer_store = self._outer
        stream_time = ts
        if outer_store is not None:
            # The join's stream time: advanced by every record of either side, even one dropped below.
            stream_time = outer_store.get_metadata(_STREAM_TIME)
            if ts > stream_time:
                stream_time = ts
                outer_store.set_metadata(_STREAM_TIME, ts)
        if key is None or value is None:
            if key is None and value is not None and self.outer:
                # KIP-962: nothing can join it, so it is emitted at once (it never enters a store)
                self._forward(None, self._join(None, value, None))
                return
            self._drop(key, value)
            return
        try:
            kb = self._kser(key)
        except Exception:
            kb = self._this.key_bytes(key)  # raises the error that names the store
        # The only writer of this side's store: each record gets its own sequence number (duplicates kept).
        self._seq = seq = (self._seq + 1) & 0x7FFFFFFF
        self._this.put_entry(kb, key, ts, seq, (value, ts))
        if outer_store is not None and ts == stream_time:
            self._emit_closed(stream_time)
        time_to = max(0, ts + self._ahead)
        matches = self._other.entries(kb, max(0, ts - self._back), time_to)
        if matches:
            join, forward = self._join, self._forward
            try:
                for t, _, entry in matches:
                    if self.other_outer:
                        self._remove_unjoined(kb, key, t)
                    rc.timestamp = ts if ts > t else t
                    forward(key, join(key, value, entry[0]))
            finally:
                rc.timestamp = ts
        elif self.outer:
            if outer_store is None or time_to < stream_time:
                # Its window has ended by stream time: emitted at once, as Kafka Streams does (grace not
                # counted). It stays in this side's store, so a partner arriving within the grace period
                # still joins it, and the record then has two results.
                self._forward(key, self._join(key, value, None))
            else:
                emission = self._emission
                if ts < emission.min_time:
                    emission.min_time = ts
                outer_store.put(key, (self.left_side, value), ts, ts)

    def close(self) -> None:
        self.emissions.pop(self._task_id, None)
        super().close()

    def _remove_unjoined(self, kb: bytes, key: Any, t: int) -> None:
        """The other side's records at ``t`` found a partner: they leave the outer store."""
        outer_store = self._outer
        assert outer_store is not None
        other_is_left = not self.left_side
        for _, sub, entry in outer_store.entries(kb, t, t):
            if entry[0][0] is other_is_left:
                outer_store.put_entry(kb, key, t, sub, None)

    def _emit_closed(self, stream_time: int) -> None:
        """Emit (with None for the missing side) and remove the unjoined records whose window has closed,
        in timestamp order (at equal timestamps right before left, then by key), as Kafka Streams does."""
        outer_store = self._outer
        assert outer_store is not None
        w = self.windows
        # A left record's window ends ``after`` past it, a right record's ``before`` past it.
        upper = stream_time - w.grace_ms - min(w.after_ms, w.before_ms) - 1
        emission = self._emission
        if upper < 0 or emission.min_time > upper:
            return  # nothing stored can have closed
        # Throttled by wall-clock time, unless a waiting record could leave the store's retention unemitted.
        if (
            not emission.throttle.ready(self.context.wall_clock_ms)
            and emission.min_time > stream_time - self._retention
        ):
            return
        # Throttled, a scan reads the whole store (nothing in it is past stream time), so that ``min_time`` is
        # exact and keeps the next scans throttled; unthrottled, only what may have closed.
        last = upper if emission.throttle.interval_ms == 0 else stream_time
        rows = outer_store.all_entries(0, last)
        limit = stream_time - w.grace_ms
        closed = []
        still_open = last + 1  # the earliest record still waiting (none read is past ``last``)
        for kb, t, sub, ((is_left, v), _) in rows:
            if t + (w.after_ms if is_left else w.before_ms) < limit:
                closed.append((t, is_left, kb, sub, v))
            elif t < still_open:
                still_open = t
        emission.min_time = still_open
        if not closed:
            return
        closed.sort(key=lambda row: row[:4])
        rc, joiner, forward, decode = self._rc, self.joiner, self._forward, outer_store.decode_key
        saved = rc.timestamp
        try:
            for t, is_left, kb, sub, v in closed:
                key = decode(kb)
                outer_store.put_entry(kb, key, t, sub, None)
                rc.timestamp = t
                forward(key, joiner(key, v, None) if is_left else joiner(key, None, v))
        finally:
            rc.timestamp = saved


@dataclass(eq=False)
class StreamTableJoinProcessor(_Join):
    """A stream joined with a table: each stream record looks up the table's row for its key (as of its
    timestamp in a versioned table), at once or, with ``buffer`` (a grace period), once the grace has passed."""

    table_store: str
    joiner: Joiner
    left: bool
    buffer: str | None = None
    grace_ms: int = 0

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        table = context.get_state_store(self.table_store)
        if isinstance(table, VersionedKeyValueStore):
            get_version = table.get_version
            kser = table.key_bytes

            def as_of(key: Any) -> Any:
                found = get_version(kser(key), self._rc.timestamp)
                return None if found is None else found.value

            self._get = as_of
        else:
            self._get = table.get
        self._buffer: TimeOrderedBuffer | None = None
        if self.buffer is not None:
            self._buffer = context.get_state_store(self.buffer)

    def process(self, key: Any, value: Any) -> None:
        if key is None or value is None:
            if key is None and value is not None and self.left:
                self._forward(None, self.joiner(None, value, None))  # KIP-962: a left join keeps it
                return
            self._drop(key, value)
            return
        buffer = self._buffer
        if buffer is None or not buffer.put(key, value, self._rc.timestamp, self.grace_ms):
            self._join(key, value)
            return
        rc = self._rc
        saved = rc.timestamp, rc.headers
        try:
            for k, v, ts, headers in buffer.pop_due(self.grace_ms):
                rc.timestamp, rc.headers = ts, headers  # the buffered record's own (Kafka restores its context)
                self._join(k, v)
        finally:
            rc.timestamp, rc.headers = saved

    def _join(self, key: Any, value: Any) -> None:
        row = self._get(key)
        if row is not None or self.left:
            self._forward(key, self.joiner(key, value, row))
