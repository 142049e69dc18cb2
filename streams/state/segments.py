"""The inner layer of window and session stores: committed entries, grouped into time segments so that
expired data is dropped a whole segment at a time (as Kafka Streams' segmented stores do).

An entry is addressed by ``(key bytes, time, sub)``: for a window store ``time`` is the window start and
``sub`` a sequence number (non-zero only for stores that keep duplicates); for a session store ``time``
is the session end and ``sub`` its start. Its value is ``(value, timestamp)``. The segment of an entry is
``time // segment_interval``; the store keeps ``retention`` of time behind the largest time written, so
a segment is dropped once all of it is older than that.

Two implementations: ``InMemorySegments`` here (value objects in dicts) and ``RocksDBSegments`` in
``rocksdb_segments.py``. The outer layer (``streams/state/timed.py``) holds uncommitted changes and writes
here only after their input offsets are committed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

__all__ = ["Entry", "InMemorySegments", "Segments", "TimeKeyedRow", "WriteRow", "segment_interval"]

#: ``(value, timestamp)``
Entry = tuple[Any, int]
#: ``(key bytes, time, sub, entry)``
TimeKeyedRow = tuple[bytes, int, int, Entry]
#: ``(key bytes, time, sub, entry or None for a delete, serialized entry or None)``
WriteRow = tuple[bytes, int, int, Entry | None, bytes | None]


def segment_interval(retention_ms: int) -> int:
    """Kafka Streams' default: half the retention, at least a minute."""
    return max(retention_ms // 2, 60_000)


class Segments(Protocol):
    """Committed entries of one store partition. ``min_live`` arguments: the oldest time still retained."""

    persistent: bool
    #: The largest time written or restored (-1: none).
    observed: int
    #: Store metadata that survives restarts (e.g. the stream time), committed with the entries.
    metadata: dict[str, int]

    def get(self, kb: bytes, t: int, sub: int) -> Entry | None: ...

    def get_many(self, kb: bytes, times: Sequence[int], sub: int) -> list[Entry | None]:
        """``get`` of each of ``times`` (ascending): a record's windows."""

    def fetch(self, kb: bytes, t_from: int, t_to: int) -> list[tuple[int, int, Entry]]:
        """The key's entries with ``t_from <= time <= t_to``, by (time, sub)."""

    def fetch_all(self, t_from: int, t_to: int) -> list[TimeKeyedRow]:
        """Every key's entries with ``t_from <= time <= t_to``, by (time, key bytes, sub)."""

    def write(self, rows: list[WriteRow], metadata: dict[str, int] | None, min_live: int) -> None:
        """Apply committed changes (rows older than ``min_live`` are skipped), then drop expired segments."""

    def restore(self, rows: list[tuple[bytes, int, int, bytes | None]], min_live: int) -> None:
        """Apply changelog records (serialized entries), then drop expired segments."""

    def restore_metadata(self, metadata: dict[str, int]) -> None: ...

    def count(self) -> int: ...

    def estimate(self) -> int:
        """About how many entries there are: O(1) and safe to call from another thread (metrics)."""

    def wipe(self) -> None: ...

    def close(self) -> None: ...


class InMemorySegments:
    """Segments as nested dicts: segment id -> key bytes -> (time, sub) -> entry."""

    persistent = False

    def __init__(self, retention_ms: int, decode: Callable[[bytes], Entry]) -> None:
        self.interval = segment_interval(retention_ms)
        self._decode = decode
        self._segments: dict[int, dict[bytes, dict[tuple[int, int], Entry]]] = {}
        self._count = 0  # kept up to date, so that metrics need not walk the dicts while they change
        self.observed = -1
        self.metadata: dict[str, int] = {}

    def get(self, kb: bytes, t: int, sub: int) -> Entry | None:
        segment = self._segments.get(t // self.interval)
        if segment is None:
            return None
        entries = segment.get(kb)
        return None if entries is None else entries.get((t, sub))

    def get_many(self, kb: bytes, times: Sequence[int], sub: int) -> list[Entry | None]:
        get = self.get
        return [get(kb, t, sub) for t in times]

    def fetch(self, kb: bytes, t_from: int, t_to: int) -> list[tuple[int, int, Entry]]:
        out: list[tuple[int, int, Entry]] = []
        for seg_id in sorted(self._segments):
            if seg_id < t_from // self.interval or seg_id > t_to // self.interval:
                continue
            entries = self._segments[seg_id].get(kb)
            if entries:
                out.extend((t, sub, e) for (t, sub), e in entries.items() if t_from <= t <= t_to)
        out.sort(key=lambda row: (row[0], row[1]))
        return out

    def fetch_all(self, t_from: int, t_to: int) -> list[TimeKeyedRow]:
        out: list[TimeKeyedRow] = []
        for seg_id, segment in self._segments.items():
            if seg_id < t_from // self.interval or seg_id > t_to // self.interval:
                continue
            for kb, entries in segment.items():
                out.extend((kb, t, sub, e) for (t, sub), e in entries.items() if t_from <= t <= t_to)
        out.sort(key=lambda row: (row[1], row[0], row[2]))
        return out

    def _apply(self, kb: bytes, t: int, sub: int, entry: Entry | None) -> None:
        seg_id = t // self.interval
        if entry is None:
            segment = self._segments.get(seg_id)
            entries = segment.get(kb) if segment is not None else None
            if entries is not None and entries.pop((t, sub), None) is not None:
                self._count -= 1
                if not entries:
                    del segment[kb]  # type: ignore[union-attr]
            return
        segment = self._segments.get(seg_id)
        if segment is None:
            segment = self._segments[seg_id] = {}
        entries = segment.get(kb)
        if entries is None:
            entries = segment[kb] = {}
        if (t, sub) not in entries:
            self._count += 1
        entries[(t, sub)] = entry
        if t > self.observed:
            self.observed = t

    def write(self, rows: list[WriteRow], metadata: dict[str, int] | None, min_live: int) -> None:
        for kb, t, sub, entry, _ in rows:
            if t >= min_live:
                self._apply(kb, t, sub, entry)
        if metadata is not None:
            self.metadata = dict(metadata)
        self._drop_expired(min_live)

    def restore(self, rows: list[tuple[bytes, int, int, bytes | None]], min_live: int) -> None:
        decode = self._decode
        for kb, t, sub, vb in rows:
            self._apply(kb, t, sub, None if vb is None else decode(vb))
        self._drop_expired(min_live)

    def restore_metadata(self, metadata: dict[str, int]) -> None:
        self.metadata = dict(metadata)

    def _drop_expired(self, min_live: int) -> None:
        for seg_id in [s for s in self._segments if (s + 1) * self.interval <= min_live]:
            self._count -= sum(len(entries) for entries in self._segments.pop(seg_id).values())

    @property
    def segment_ids(self) -> list[int]:
        return sorted(self._segments)

    def count(self) -> int:
        return self._count

    def estimate(self) -> int:
        return self._count

    def wipe(self) -> None:
        self._segments.clear()
        self._count = 0
        self.observed = -1
        self.metadata = {}

    def close(self) -> None:
        self._segments = {}
        self._count = 0
