"""Windowed aggregations: the processors behind ``TimeWindowedKStream`` and ``SessionWindowedKStream``,
with Kafka Streams' semantics.

Each keeps its own stream time (the largest timestamp it has seen, starting from the task's restored
stream time) and, from it, which windows are closed: a record for a closed window is dropped, logged at
debug and counted in the task's ``dropped_records``. Results are ``Windowed(key, window)`` ->
``Change(aggregate, old)``, timestamped with the largest record timestamp in the window (sessions: the
session end). With ``emit_final`` (``EmitStrategy.ON_WINDOW_CLOSE``) nothing is emitted on update; each
window's result is emitted once, when stream time closes it, and how far that went is kept in the store
so a restart does not emit it again. Closed windows are emitted before the record that closed them is
added: that record may move the store's retention past them. For time and sliding windows (not sessions,
as in Kafka Streams) the scans for closed windows are throttled by wall-clock time
(``emit.interval.ms.kstreams.windowed.aggregation``, ``streams/emit_throttle.py``) as long as the store
keeps the windows that wait.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from streams.change import Change, _new_change
from streams.emit_throttle import EmitThrottle
from streams.errors import StreamsError
from streams.ops import windowed_sender_below
from streams.processor import ProcessorContext
from streams.state.segments import Entry
from streams.state.timed import MAX_TIME
from streams.state.window import WindowStore
from streams.table_ops import Aggregating
from streams.windowed_serdes import pack_window_start
from streams.windows import SessionWindow, SessionWindows, SlidingWindows, TimeWindow, TimeWindows, Windowed

__all__ = ["SessionWindowAggregateProcessor", "SlidingWindowAggregateProcessor", "TimeWindowAggregateProcessor"]

log = logging.getLogger("streams.windows")
_UNRESOLVED = object()

Initializer = Callable[[], Any] | None
Adder = Callable[[Any, Any, Any], Any]
W = TypeVar("W", bound=TimeWindows | SlidingWindows | SessionWindows)


@dataclass(eq=False)
class _WindowAggregate(Aggregating, Generic[W]):
    """What the three windowed aggregations share: the windows, stream time, late records, emitting."""

    windows: W

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        store = self._store
        self._put = store.put_entry
        self._observed = context.stream_time
        self._emit_key = f"emit-final:{context.node_name}"
        self._last_emit = store.get_metadata(self._emit_key)
        self._next_emit = self._next_emit_after(self._last_emit)
        self._throttle = EmitThrottle(context.emit_intervals.windowed_aggregation_ms)
        self._now_ms = context._wall_clock_reader()
        self._throttled = False
        if self.emit_final and isinstance(store, WindowStore):
            # Kafka Streams keeps an emit-final aggregation's windows in a time-first store, where a window
            # expires one millisecond later than in other window stores (``t < observed - retention``): a
            # join of windowed tables still finds it then (KStreamWindowAggregateTest.testJoin).
            store.live_offset = 0

    def _flush_listener(self, context: ProcessorContext) -> Callable[..., None]:
        return self._flushed

    def _key_bytes(self, key: Any) -> bytes:
        try:
            return self._kser(key)
        except Exception:
            return self._store.key_bytes(key)  # raises the error that names the store

    def _window(self, t: int, sub: int) -> Any:
        raise NotImplementedError

    def _next_emit_after(self, last: int) -> int:
        """The smallest close time past ``last`` (the close of the last emission) that may close a window."""
        return last + 1

    def _flushed(self, key: Any, t: int, sub: int, entry: Entry | None, old: Entry | None) -> None:
        self._forward(
            Windowed(key, self._window(t, sub)),
            Change(None if entry is None else entry[0], old[0] if old is not None else None),
        )

    def _emit(self, key: Any, window: Any, new: Any, old: Any, timestamp: int) -> None:
        """Forward an update at once, with its own timestamp."""
        rc = self._rc
        saved = rc.timestamp
        rc.timestamp = timestamp
        try:
            self._forward(Windowed(key, window), Change(new, old if self._send_old else None))
        finally:
            rc.timestamp = saved

    def _drop(self, what: str) -> None:
        self.context.record_dropped()
        if log.isEnabledFor(logging.DEBUG):
            rc = self._rc
            log.debug(
                "skipping %s: topic=%s partition=%d offset=%d timestamp=%d stream time=%d",
                what,
                rc.topic,
                rc.partition,
                rc.offset,
                rc.timestamp,
                self._observed,
            )

    def _take_turn(self) -> None:
        """Kafka Streams' ``shouldEmitFinal`` for time and sliding windows: every record of an emit-final
        aggregation asks the emit throttle (``streams/emit_throttle.py``), and one that is refused does not
        scan for closed windows, unless waiting would lose them (``_may_wait``)."""
        self._throttled = not self._throttle.ready(self._now_ms())

    def _may_wait(self, lower: int) -> bool:
        """Whether the final results of closed windows from store time ``lower`` on may wait for the next
        turn: while throttled and the store still holds them once this record is added (its windows' times
        are at most its timestamp + 1). A closed window is never updated again, so only the time of its
        emission moves, never its result."""
        if not self._throttled:
            return False
        store = self._store
        observed = max(store.observed, self._rc.timestamp + 1)
        return lower >= observed - store.retention_ms + store.live_offset

    def _emit_closed(self, rows: Iterable[tuple[Windowed, Any, int]], close: int) -> None:
        """Emit final results, then remember (with the store) that windows closed by ``close`` are done."""
        rc, forward = self._rc, self._forward
        saved = rc.timestamp
        try:
            for windowed, value, timestamp in rows:
                rc.timestamp = timestamp
                forward(windowed, _new_change(Change, (value, None)))
        finally:
            rc.timestamp = saved
        self._emitted(close)

    def _emitted(self, close: int) -> None:
        """Remember (with the store) that the final results of windows closed by ``close`` were emitted."""
        self._last_emit = close
        self._next_emit = self._next_emit_after(close)
        self._store.set_metadata(self._emit_key, close)


class TimeWindowAggregateProcessor(_WindowAggregate[TimeWindows]):
    """Tumbling and hopping windows: each record updates every window ``[start, start + size)`` it falls
    into whose end is after ``stream time - grace``."""

    def init(self, context: ProcessorContext) -> None:
        w = self.windows
        self._size, self._advance, self._grace = w.size_ms, w.advance_ms, w.grace_ms
        self._windows: dict[int, TimeWindow] = {}
        # Emit-final: the sink's ``windowed_sender`` below (None: forward), looked up at the first emission.
        self._sender: Any = _UNRESOLVED
        super().init(context)
        store = self._store
        self._get = store.get_entry
        store.forwards_changes = not self.emit_final
        if store.listener is not None:  # each change goes downstream when the cache flushes, to ``_forward``
            store.flushes_to = self._forward
        if self._advance < self._size and isinstance(store, WindowStore) and not store.retain_duplicates:
            # Hopping windows: a record updates size / advance windows of its key, logged as one block record
            # (the window starts over the size rounded up to a multiple of the advance) instead of one each.
            store.changelog_blocks(-(-self._size // self._advance) * self._advance, self._advance)

    def _window(self, t: int, sub: int) -> TimeWindow:
        return TimeWindow(t, t + self.windows.size_ms)

    def _time_window(self, start: int) -> TimeWindow:
        """The window at ``start``; one object per window, shared by every key's result (a flush or an
        emission forwards many keys' results for the same few windows)."""
        window = self._windows.get(start)
        if window is None:
            if len(self._windows) >= 1024:
                self._windows.clear()
            window = self._windows[start] = TimeWindow(start, start + self._size)
        return window

    def _flushed(self, key: Any, t: int, sub: int, entry: Entry | None, old: Entry | None) -> None:
        # once per window update with a cache (a suppression downstream): nothing here that can be hoisted
        window = self._windows.get(t)
        if window is None:
            window = self._time_window(t)
        self._forward(
            Windowed(key, window),
            _new_change(Change, (None if entry is None else entry[0], None if old is None else old[0])),
        )

    def _next_emit_after(self, last: int) -> int:
        size, advance = self.windows.size_ms, self.windows.advance_ms
        if last < 0:
            return size  # the window starting at 0
        return ((last - size) // advance + 1) * advance + size  # the first window not closed by ``last``

    def process(self, key: Any, value: Any) -> None:
        if key is None:
            self._drop("a record with a null key")
            return
        ts = self._rc.timestamp
        if ts > self._observed:
            self._observed = ts
        size, advance = self._size, self._advance
        close = self._observed - self._grace
        if self.emit_final:
            self._take_turn()
            if close >= self._next_emit:
                self._maybe_emit_final(close)
        try:
            kb = self._kser(key)
        except Exception:
            kb = self._key_bytes(key)
        initializer, adder = self.initializer, self.adder
        if size == advance and not self._emit_now:
            # Tumbling: the record's one window, read and written by itself (no list of windows to walk).
            start = ts - ts % size
            if start + size <= close:
                self._drop(f"a record for the closed window [{start},{start + size})")
                return
            entry = self._get(kb, start)
            if entry is None:
                new = (adder(key, value, initializer() if initializer is not None else None), ts)
            else:
                new = (adder(key, value, entry[0]), ts if ts > entry[1] else entry[1])
            self._put(kb, key, start, 0, new)
            return
        first = ts - size + advance
        first = 0 if first < 0 else first - first % advance
        starts = range(first, ts + 1, advance)
        if self._emit_now:
            self._process_emitting(kb, key, value, ts, starts, close)
            return
        # The record's windows are read in one call and written in one (what was added before an adder
        # failed is written too, as window by window).
        rows: list[tuple[int, int, Any]] = []
        try:
            for start, entry in zip(starts, self._store.get_entries(kb, starts), strict=True):
                if start + size <= close:
                    self._drop(f"a record for the closed window [{start},{start + size})")
                elif entry is None:
                    rows.append((start, 0, (adder(key, value, initializer() if initializer is not None else None), ts)))
                else:
                    rows.append((start, 0, (adder(key, value, entry[0]), ts if ts > entry[1] else entry[1])))
        finally:
            if rows:
                self._store.put_entries(kb, key, rows)

    def _process_emitting(self, kb: bytes, key: Any, value: Any, ts: int, starts: range, close: int) -> None:
        """``process`` without a cache: each window's update is written, then forwarded at once."""
        size, initializer = self._size, self.initializer
        for start, entry in zip(starts, self._store.get_entries(kb, starts), strict=True):
            end = start + size
            if end <= close:
                self._drop(f"a record for the closed window [{start},{end})")
                continue
            if entry is None:
                agg = initializer() if initializer is not None else None
                new_ts = ts
            else:
                agg = entry[0]
                new_ts = ts if ts > entry[1] else entry[1]
            new = self.adder(key, value, agg)
            self._put(kb, key, start, 0, (new, new_ts))  # downstream may read the store: it holds the update first
            self._emit(key, TimeWindow(start, end), new, agg, new_ts)

    def _maybe_emit_final(self, close: int) -> None:
        last = self._last_emit
        if last >= close:
            return
        size, advance = self.windows.size_ms, self.windows.advance_ms
        upper = close - size  # windows starting here or before have ended by ``close``
        if upper < 0:
            return
        lower = 0 if last < 0 else max(0, last - size) + 1
        first_start = -(-lower // advance) * advance
        if first_start > upper or self._may_wait(lower):
            return  # no window closed since the last emit, or throttled
        sender = self._sender
        if sender is _UNRESOLVED:  # the first emission: every processor of the task has started by then
            sender = self._sender = windowed_sender_below(self._forward, self._store.key_serde)
        if sender is not None:
            # Straight to the sink below: the store's key bytes and the window start are the windowed key's bytes
            # (``windowed_sender``); no ``Windowed`` key, ``Change``, ``to_stream`` or sink call per result.
            pack = pack_window_start
            sender((kb + pack(t), e[0], e[1]) for kb, t, _, e in self._store.all_entries(lower, upper))
            self._emitted(close)
            return
        # Each closed window straight from the store's rows to downstream (no list of results in between).
        window, decode = self._time_window, self._store.decode_key
        rows = ((Windowed(decode(kb), window(t)), e[0], e[1]) for kb, t, _, e in self._store.all_entries(lower, upper))
        self._emit_closed(rows, close)


class SlidingWindowAggregateProcessor(_WindowAggregate[SlidingWindows]):
    """Sliding windows (KIP-450): windows ``[start, start + difference]`` exist only where records define
    them — each record's left window ``[t - difference, t]`` and, when a later record falls within a
    difference of it, its right window ``[t + 1, t + 1 + difference]``."""

    def _window(self, t: int, sub: int) -> TimeWindow:
        return TimeWindow(t, t + self.windows.time_difference_ms)

    def _initial(self, ts: int) -> Entry | None:
        return None if self.initializer is None else (self.initializer(), ts)

    def process(self, key: Any, value: Any) -> None:
        if key is None or value is None:
            self._drop("a record with a null key or value")
            return
        ts = self._rc.timestamp
        if ts > self._observed:
            self._observed = ts
        diff = self.windows.time_difference_ms
        close = self._observed - self.windows.grace_ms
        if self.emit_final:
            self._take_turn()
            if close >= self._next_emit:
                self._maybe_emit_final(close)
        if ts + diff < close:
            self._drop(f"a record for the closed window [{ts},{ts + diff}]")
            return
        kb = self._key_bytes(key)
        if ts < diff:
            self._process_early(kb, key, value, ts, close)
        else:
            self._process(kb, key, value, ts, close)

    def _update(self, kb: bytes, key: Any, start: int, entry: Entry | None, value: Any, ts: int, close: int) -> None:
        """Add the record to the window at ``start`` whose aggregate so far is ``entry``."""
        end = start + self.windows.time_difference_ms
        if end < close:
            self._drop(f"a record for the closed window [{start},{end}]")
            return
        old = None if entry is None else entry[0]
        new = self.adder(key, value, old)
        new_ts = ts if old is None else max(ts, entry[1])  # type: ignore[index]
        self._put(kb, key, start, 0, (new, new_ts))
        if self._emit_now:
            self._emit(key, TimeWindow(start, end), new, old, new_ts)

    def _create_right_window(self, kb: bytes, key: Any, ts: int, right: Entry) -> None:
        """The new record's right window holds the later records' aggregate (not the record itself)."""
        start = ts + 1
        self._put(kb, key, start, 0, right)
        if self._emit_now:
            self._emit(key, TimeWindow(start, start + self.windows.time_difference_ms), right[0], None, right[1])

    def _process(self, kb: bytes, key: Any, value: Any, ts: int, close: int) -> None:
        diff = self.windows.time_difference_ms
        starts: set[int] = set()
        left: Entry | None = None
        right: Entry | None = None
        left_exists = right_exists = False
        previous: int | None = None  # the timestamp of the record before this one
        # Newest window first: the right windows of earlier records, then this record's left window.
        for start, _, entry in reversed(self._store.entries(kb, max(0, ts - 2 * diff), ts + 1)):
            starts.add(start)
            end = start + diff
            if start == ts + 1:
                right_exists = True
            elif end > ts:
                if right is None:
                    right = entry
                self._update(kb, key, start, entry, value, ts, close)
            elif end == ts:
                left_exists = True
                self._update(kb, key, start, entry, value, ts, close)
                if entry[1] >= ts:
                    return  # a record at this timestamp already made every window there is
                previous = entry[1]
            else:
                left = entry
                previous = entry[1]
                break
        if previous is not None and previous + 1 not in starts and previous + 1 + diff >= ts:
            # the previous record's right window, which this record is the first to fall into
            self._update(kb, key, previous + 1, self._initial(ts), value, ts, close)
        if not left_exists:
            if previous is not None and left is not None and ts - diff <= previous:
                self._update(kb, key, ts - diff, (left[0], ts), value, ts, close)
            else:
                self._update(kb, key, ts - diff, self._initial(ts), value, ts, close)
        if not right_exists and right is not None and right[1] > ts:
            self._create_right_window(kb, key, ts, right)

    def _process_early(self, kb: bytes, key: Any, value: Any, ts: int, close: int) -> None:
        """A record earlier than one time difference: its left window would start before 0, so every such
        record shares the window ``[0, difference]``; right windows are made as for the others."""
        combined: Entry | None = None
        right: Entry | None = None
        right_exists = False
        starts: set[int] = set()
        previous: int | None = None
        for start, _, entry in self._store.entries(kb, 0, ts + 1):
            starts.add(start)
            if start == 0:
                combined = entry
                if entry[1] < ts:
                    previous = entry[1]
            elif start <= ts:
                right = entry
                self._update(kb, key, start, entry, value, ts, close)
            elif start == ts + 1:
                right_exists = True
            else:
                raise StreamsError(f"store {self.store_name!r}: unexpected window at {start} for a record at {ts}")
        if right is None and combined is not None and combined[1] > ts:
            right = combined
        if not right_exists and right is not None and right[1] > ts:
            self._create_right_window(kb, key, ts, right)
        if previous is not None and previous + 1 not in starts:
            self._update(kb, key, previous + 1, self._initial(ts), value, ts, close)
        self._update(kb, key, 0, combined if combined is not None else self._initial(ts), value, ts, close)

    def _maybe_emit_final(self, close: int) -> None:
        last = self._last_emit
        if last >= close:
            return
        diff = self.windows.time_difference_ms
        upper = close - diff - 1  # windows starting here or before ended before ``close``
        if upper < 0:
            return
        lower = 0 if last < 0 else max(0, last - diff)
        if self._may_wait(lower):
            return
        rows = [
            (Windowed(self._store.decode_key(kb), TimeWindow(t, t + diff)), e[0], e[1])
            for kb, t, _, e in self._store.all_entries(lower, upper)
        ]
        self._emit_closed(rows, close)


@dataclass(eq=False)
class SessionWindowAggregateProcessor(_WindowAggregate[SessionWindows]):
    """Session windows: a record joins (and merges) every session of its key within the inactivity gap.
    Merged sessions are removed, which downstream sees as deletes (None) of their windowed keys."""

    merger: Adder

    def _window(self, t: int, sub: int) -> SessionWindow:
        return SessionWindow(sub, t)

    def process(self, key: Any, value: Any) -> None:
        if key is None:
            self._drop("a record with a null key")
            return
        ts = self._rc.timestamp
        if ts > self._observed:
            self._observed = ts
        gap = self.windows.inactivity_gap_ms
        close = self._observed - self.windows.grace_ms - gap
        if self.emit_final and close >= self._next_emit:
            self._maybe_emit_final(close)
        kb = self._key_bytes(key)
        overlapping = [
            (end, start, e) for end, start, e in self._store.entries(kb, ts - gap, MAX_TIME) if start <= ts + gap
        ]
        agg = self.initializer() if self.initializer is not None else None
        first, last = ts, ts
        for end, start, entry in overlapping:
            agg = self.merger(key, agg, entry[0])
            first, last = min(first, start), max(last, end)
        if last < close:
            self._drop(f"a record for the closed session [{first},{last}]")
        else:
            if (first, last) != (ts, ts):
                for end, start, entry in overlapping:
                    self._put(kb, key, end, start, None)
                    if self._emit_now:
                        self._emit(key, SessionWindow(start, end), None, entry[0], end)
            agg = self.adder(key, value, agg)
            self._put(kb, key, last, first, (agg, last))
            if self._emit_now:
                self._emit(key, SessionWindow(first, last), agg, None, last)

    def _maybe_emit_final(self, close: int) -> None:
        last = self._last_emit
        if last >= close:
            return
        lower, upper = max(0, last), close - 1  # sessions ending before ``close``
        if upper < lower:
            return
        rows = [
            (Windowed(self._store.decode_key(kb), SessionWindow(start, end)), e[0], end)
            for kb, end, start, e in self._store.all_entries(lower, upper)
        ]
        self._emit_closed(rows, close)
