"""Window stores: values by (key, window start), kept for a retention period, in memory or RocksDB.

The read API follows Kafka Streams' ``ReadOnlyWindowStore``: ``get`` (one window), ``fetch`` (a key's
windows in a time range), ``fetch_all`` / ``all`` (every key), and their ``backward_`` variants. With
``retain_duplicates`` (what a stream-stream join keeps), every ``put`` adds an entry, even for the same key
and time, and nothing is overwritten.
"""

from __future__ import annotations

from typing import Any

from streams.state.timed import MAX_TIME, TimeKeyedStore
from streams.windows import TimeWindow, Windowed

__all__ = ["WindowStore"]


class WindowStore(TimeKeyedStore):
    sub_size = 4  # the sequence number of a duplicate

    def __init__(self, *args: Any, window_size_ms: int, retain_duplicates: bool = False, **kwargs: Any) -> None:
        self.point_reads = not retain_duplicates  # duplicates are read by time range (``entries``)
        super().__init__(*args, **kwargs)
        self.window_size_ms = window_size_ms
        self.retain_duplicates = retain_duplicates
        self._seq = 0

    def put(self, key: Any, value: Any, window_start: int, timestamp: int | None = None) -> None:
        """Store ``value`` for ``key``'s window starting at ``window_start`` (None deletes it, except with
        duplicates retained, where it is ignored). ``timestamp``: the value's, else the current record's."""
        if window_start < 0:  # as a Window's start (and Kafka's): the segments' keys order them from 0
            raise ValueError(f"window store {self.name!r}: window start {window_start} of key {key!r} is negative")
        seq = 0
        if self.retain_duplicates:
            if value is None:
                return
            self._seq = seq = (self._seq + 1) & 0x7FFFFFFF
        ts = self._rc.timestamp if timestamp is None else timestamp
        self.put_entry(self.key_bytes(key), key, window_start, seq, None if value is None else (value, ts))

    def get(self, key: Any, window_start: int) -> Any:
        """The value of ``key``'s window starting at ``window_start`` (Kafka Streams' ``fetch(key, time)``)."""
        kb = self.key_bytes(key)
        if self.retain_duplicates:
            rows = self.entries(kb, window_start, window_start)
            return rows[0][2][0] if rows else None
        entry = self.get_entry(kb, window_start)
        return None if entry is None else entry[0]

    def fetch(self, key: Any, time_from: int, time_to: int) -> list[tuple[int, Any]]:
        """``(window start, value)`` of ``key``'s windows starting in ``[time_from, time_to]``, oldest first."""
        return [(t, e[0]) for t, _, e in self.entries(self.key_bytes(key), time_from, time_to)]

    def backward_fetch(self, key: Any, time_from: int, time_to: int) -> list[tuple[int, Any]]:
        return self.fetch(key, time_from, time_to)[::-1]

    def fetch_with_timestamps(self, key: Any, time_from: int, time_to: int) -> list[tuple[int, Any, int]]:
        """``(window start, value, timestamp)``: as ``fetch``, with each value's timestamp."""
        return [(t, e[0], e[1]) for t, _, e in self.entries(self.key_bytes(key), time_from, time_to)]

    def fetch_all(self, time_from: int, time_to: int) -> list[tuple[Windowed, Any]]:
        """``(Windowed(key, window), value)`` of every window starting in ``[time_from, time_to]``, by
        start, then key bytes."""
        size, decode = self.window_size_ms, self.decode_key
        return [
            (Windowed(decode(kb), TimeWindow(t, t + size)), e[0])
            for kb, t, _, e in self.all_entries(time_from, time_to)
        ]

    def backward_fetch_all(self, time_from: int, time_to: int) -> list[tuple[Windowed, Any]]:
        return self.fetch_all(time_from, time_to)[::-1]

    def all(self) -> list[tuple[Windowed, Any]]:
        return self.fetch_all(0, MAX_TIME)

    def backward_all(self) -> list[tuple[Windowed, Any]]:
        return self.all()[::-1]
