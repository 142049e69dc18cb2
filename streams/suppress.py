"""``KTable.suppress``: hold back a table's updates (Kafka Streams' ``Suppressed``, KIP-328).

- ``Suppressed.until_window_closes(buffer)``: for a windowed table, one final result per window, emitted
  once stream time reaches the window's close (its end plus grace; sessions: plus the inactivity gap,
  since a record that late can still extend the session). Deletes (merged sessions) are not emitted.
- ``Suppressed.until_time_limit(duration, buffer)``: rate-limit: a key's latest update is emitted once
  ``duration`` of stream time has passed since the first update that was held back.

The buffer keeps one (the latest) update per key. It is bounded by ``BufferConfig``: unbounded, or at most
``max_records`` / ``max_bytes``; when full, ``emit_early_when_full`` emits the oldest updates early and
``shut_down_when_full`` stops the application with an error (final results allow only this one: emitting
early would break the promise of one result per window). The buffer is changelogged, so a restart neither
loses nor repeats what it held.

Final results right below a time-windowed aggregation (``windowed_by(TimeWindows...).count().suppress(...)``)
log nothing of their own: every change to the window store reaches the suppression, a window is emitted
once stream time passes its close and never updated after, and the store keeps a window until then
(retention >= size + grace), so at every commit the buffer holds exactly the store's windows that close
after the suppression's stream time. That time is kept with the window store (metadata written with its
changes); a restore rebuilds the buffer from the store, each window buffered as its latest update with no
prior value (downstream saw none). A store without that time (written before this layout) restores the
buffer from the buffer's own changelog, once.

Stream time here is the suppression's own: the largest timestamp of the updates it received.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import timedelta
from typing import Any

from streams.change import Change, _new_change
from streams.errors import StreamsError, TopologyError
from streams.ops import windowed_sender_below
from streams.processor import ProcessorContext
from streams.state.buffer import BufferedUpdate, SuppressionBuffer
from streams.state.timed import MAX_TIME, FlushedChange
from streams.state.window import WindowStore
from streams.table_ops import TableOptions, TableProcessor
from streams.windowed_serdes import pack_window_start
from streams.windows import TimeWindow, Windowed, to_millis

__all__ = ["BufferConfig", "SuppressProcessor", "Suppressed"]

_UNKNOWN = -(2**63)  # no suppression time kept with the window store yet


class BufferConfig:
    """How much a suppression may hold, and what happens when it is full."""

    __slots__ = ("byte_limit", "record_limit", "shut_down")

    def __init__(self, record_limit: int | None = None, byte_limit: int | None = None, shut_down: bool = True) -> None:
        for name, value in (("max_records", record_limit), ("max_bytes", byte_limit)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise ValueError(f"buffer {name} must be a positive integer, got {value!r}")
        self.record_limit = record_limit
        self.byte_limit = byte_limit
        self.shut_down = shut_down

    @classmethod
    def unbounded(cls) -> BufferConfig:
        """No limit (memory permitting)."""
        return cls()

    @classmethod
    def max_records(cls, n: int) -> BufferConfig:
        """At most ``n`` keys; emits the oldest early when full (change with ``shut_down_when_full()``)."""
        return cls(n, None, shut_down=False)

    @classmethod
    def max_bytes(cls, n: int) -> BufferConfig:
        """At most ``n`` bytes (keys and serialized values); emits the oldest early when full."""
        return cls(None, n, shut_down=False)

    def with_max_records(self, n: int) -> BufferConfig:
        return BufferConfig(n, self.byte_limit, self.shut_down)

    def with_max_bytes(self, n: int) -> BufferConfig:
        return BufferConfig(self.record_limit, n, self.shut_down)

    def with_no_bound(self) -> BufferConfig:
        return BufferConfig(None, None, True)

    def emit_early_when_full(self) -> BufferConfig:
        return BufferConfig(self.record_limit, self.byte_limit, shut_down=False)

    def shut_down_when_full(self) -> BufferConfig:
        return BufferConfig(self.record_limit, self.byte_limit, shut_down=True)

    @property
    def bounded(self) -> bool:
        return self.record_limit is not None or self.byte_limit is not None

    def __repr__(self) -> str:
        return (
            f"BufferConfig(max_records={self.record_limit}, max_bytes={self.byte_limit}, "
            f"{'shut_down' if self.shut_down else 'emit_early'}_when_full)"
        )


class Suppressed:
    """What ``KTable.suppress`` holds back; build with ``until_window_closes`` or ``until_time_limit``."""

    __slots__ = ("buffer", "final", "name", "time_limit_ms")

    def __init__(self, final: bool, time_limit_ms: int, buffer: BufferConfig, name: str | None) -> None:
        if not isinstance(buffer, BufferConfig):
            raise TypeError(f"buffer must be a BufferConfig, got {buffer!r}")
        if final and buffer.bounded and not buffer.shut_down:
            raise TopologyError(
                "until_window_closes() needs a buffer that shuts down when full (or is unbounded): "
                "emitting early would emit results that are not final"
            )
        self.final = final
        self.time_limit_ms = time_limit_ms
        self.buffer = buffer
        self.name = name

    @classmethod
    def until_window_closes(cls, buffer: BufferConfig | None = None) -> Suppressed:
        """One final result per window of a windowed table, when the window closes."""
        return cls(True, 0, buffer if buffer is not None else BufferConfig.unbounded(), None)

    @classmethod
    def until_time_limit(cls, time_limit: timedelta | int, buffer: BufferConfig | None = None) -> Suppressed:
        """A key's latest update, ``time_limit`` of stream time after the first one held back."""
        return cls(
            False,
            to_millis(time_limit, "suppression time limit"),
            buffer if buffer is not None else BufferConfig.unbounded(),
            None,
        )

    def with_name(self, name: str) -> Suppressed:
        """Names the suppression's node and buffer (``<name>-store``, changelog ``<app>-<name>-store-changelog``)."""
        return Suppressed(self.final, self.time_limit_ms, self.buffer, name)

    def __repr__(self) -> str:
        what = "until_window_closes" if self.final else f"until_time_limit({self.time_limit_ms} ms)"
        return f"Suppressed.{what}({self.buffer!r})"


# As Kafka Streams spells it: ``Suppressed.BufferConfig.max_records(10)``.
setattr(Suppressed, "BufferConfig", BufferConfig)  # noqa: B010 - a nested name mypy need not see


class SuppressProcessor(TableProcessor):
    """Buffers each update until it is due, then forwards the key's latest. Due: for final results the
    window's end + ``close_offset`` (its close), otherwise the update's timestamp + the time limit."""

    def __init__(
        self,
        store_name: str,
        suppressed: Suppressed,
        close_offset: int,
        options: TableOptions,
        window_store: str | None = None,
    ) -> None:
        self.store_name = store_name
        self.suppressed = suppressed
        self.options = options
        self._by_window = suppressed.final
        self._offset = close_offset if suppressed.final else suppressed.time_limit_ms
        #: The window store of the time-windowed aggregation right above final results: the buffer is derived
        #: from it (see the module doc) if the aggregation forwards every change.
        self.window_store = window_store

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self._buffer: SuppressionBuffer = context.get_state_store(self.store_name)
        self._kser = self._buffer.key_serializer
        self._rc = context.record_context
        self._observed = context.stream_time
        self._drop_deletes = self.suppressed.final
        config = self.suppressed.buffer
        self._max_records = config.record_limit
        self._max_bytes = config.byte_limit
        self._shut_down = config.shut_down
        self._bounded = config.bounded
        self._windows: WindowStore | None = None
        if self.window_store is not None:
            windows = context._upstream_store(self.window_store)
            if isinstance(windows, WindowStore) and windows.forwards_changes:
                self._derive(windows, f"suppression-time:{context.node_name}")

    def _derive(self, windows: WindowStore, time_key: str) -> None:
        """Rebuild the buffer from the window store, as of the suppression's stream time kept with it."""
        self._windows, self._time_key = windows, time_key
        observed = windows.get_metadata(time_key, _UNKNOWN)
        size, offset, kser, decode = windows.window_size_ms, self._offset, self._kser, windows.decode_key
        # Straight from the store's flush when the aggregation forwards to this suppression alone: the buffer is
        # then keyed by the store's key bytes and the window start (``_window_flushed``).
        direct = windows.flushes_to == self.process and not self._bounded and not self._send_old
        if observed == _UNKNOWN:
            # a new store, or one from before the buffer was derived: the buffer as its own changelog restored it
            # (keyed by windowed key bytes), this once
            self._buffer.derived = True
            windows.set_metadata(time_key, self._observed)
            if direct and not len(self._buffer):
                self._listen(windows, size, offset)
            return
        pack = pack_window_start
        updates = []
        for kb, start, _, entry in windows.all_entries(0, MAX_TIME):
            due = start + size + offset
            if due > observed:
                key = Windowed(decode(kb), TimeWindow(start, start + size))
                bk = kb + pack(start) if direct else kser(key)
                updates.append((bk, BufferedUpdate(key, entry[0], None, entry[1], due, 0, 0)))
        updates.sort(key=lambda update: update[1].due)  # stable: within a due time, in the store's order
        self._buffer.rebuild(updates)
        windows.set_metadata(time_key, max(observed, self._observed))
        if direct:
            self._listen(windows, size, offset)

    def _listen(self, windows: WindowStore, size: int, offset: int) -> None:
        """Take the store's flushed window updates straight from it (``_window_flushed``)."""
        self._size, self._due_offset = size, size + offset
        self._window_objects: dict[int, TimeWindow] = {}
        self._sender: Callable[[Iterable[tuple[bytes, Any, int]]], None] | None = None
        self._make_key: Callable[[Any, int], Windowed] | None = self._windowed
        self._emit_due: Callable[[int], None] = self._forward_due
        windows.bytes_listener = self._first_flushed

    def _first_flushed(self, changes: list[FlushedChange]) -> None:
        """The first flushed updates (every processor of the task has started by then): whether due windows go
        straight to a sink below (``windowed_sender``: sent by the buffer's key bytes, which are the store's key
        bytes and the window start, as the sink's windowed key serde writes them; no buffered ``Windowed`` key,
        no ``Change``, no ``to_stream`` or sink call per result), or are forwarded."""
        windows = self._windows
        assert windows is not None
        self._sender = windowed_sender_below(self._forward, windows.key_serde)
        if self._sender is not None:
            self._make_key, self._emit_due = None, self._send_due
        windows.bytes_listener = self._window_flushed
        self._window_flushed(changes)

    def _windowed(self, key: Any, start: int) -> Windowed:
        """The buffered key of ``key``'s window at ``start``; one window object per start, shared by every key."""
        window = self._window_objects.get(start)
        if window is None:
            if len(self._window_objects) >= 1024:
                self._window_objects.clear()
            window = self._window_objects[start] = TimeWindow(start, start + self._size)
        return Windowed(key, window)

    def _window_flushed(self, changes: list[FlushedChange]) -> None:
        """``process`` of each window update of a store's flush, straight from it (by the store's key bytes): no
        windowed key to serialize, no ``Change``; the same buffer, due times and emissions."""
        observed = self._buffer.put_windows(changes, self._due_offset, self._make_key, self._observed, self._emit_due)
        if observed > self._observed:
            self._observed = observed
            self._windows.set_metadata(self._time_key, observed)  # type: ignore[union-attr]  # (with the listener)

    def _forward_due(self, observed: int) -> None:
        self._emit_all(self._buffer.pop_due(observed))

    def _send_due(self, observed: int) -> None:
        """``_emit_all`` of the due updates, through the sink's ``windowed_sender`` (final results: no deletes)."""
        send, rc = self._sender, self._rc
        assert send is not None
        saved_headers, rc.headers = rc.headers, ()
        try:
            self._buffer.send_due(observed, send)
        finally:
            rc.headers = saved_headers

    def process(self, key: Any, change: Change) -> None:
        ts = self._rc.timestamp
        if ts > self._observed:
            self._observed = ts
            if self._windows is not None:
                self._windows.set_metadata(self._time_key, ts)
        buffer = self._buffer
        try:
            kb = self._kser(key)
        except Exception:
            kb = None
        if kb is None:
            kb = buffer.key_bytes(key)  # raises the error that names the buffer
        # put returns the earliest due time in the buffer
        if (
            buffer.put(kb, key, change[0], change[1], ts, (key.window.end if self._by_window else ts) + self._offset)
            <= self._observed
        ):
            self._emit_all(buffer.pop_due(self._observed))
        if self._bounded and self._over_capacity():
            if self._shut_down:
                raise StreamsError(
                    f"suppression buffer {self.store_name!r} exceeded its capacity: {len(buffer)} of "
                    f"{self._max_records} records, {buffer.size_bytes} of {self._max_bytes} bytes "
                    "(configured to shut down when full)"
                )
            while self._over_capacity():
                self._emit(buffer.pop_oldest())

    def _over_capacity(self) -> bool:
        buffer = self._buffer
        return (self._max_records is not None and len(buffer) > self._max_records) or (
            self._max_bytes is not None and buffer.size_bytes > self._max_bytes
        )

    def _emit(self, update: BufferedUpdate) -> None:
        self._emit_all((update,))

    def _emit_all(self, updates: Iterable[BufferedUpdate]) -> None:
        """Forward each update (final results: but deletes), with its own timestamp and no input headers."""
        rc, forward, drop_deletes, send_old = self._rc, self._forward, self._drop_deletes, self._send_old
        saved_ts, saved_headers = rc.timestamp, rc.headers
        rc.headers = ()
        try:
            for update in updates:
                new = update.new
                if new is None and drop_deletes:
                    continue
                rc.timestamp = update.timestamp
                forward(update.key, _new_change(Change, (new, update.prior if send_old else None)))
        finally:
            rc.timestamp, rc.headers = saved_ts, saved_headers
