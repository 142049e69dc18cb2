"""Versioned key-value stores (Kafka Streams' ``VersionedKeyValueStore``, KIP-889): every value a key had within
the history retention, each valid from its own timestamp until the next version's, readable as of a time.

A key's versions are a timeline: ``put(key, value, ts)`` sets the version at ``ts`` (a later put at the same
timestamp replaces it), ``None`` is a tombstone (no value from then on), and a version is valid until the next
one's timestamp. That is exactly ``RocksDBVersionedStore``'s put: a put newer than the latest moves the latest
into the history; an older one is inserted into the history with the next version's timestamp as its
``valid_to``. A put older than the observed stream time (the largest timestamp put) minus the history
retention is dropped and counted, as Kafka drops expired puts; ``get(key, as_of)`` older than that boundary
answers only from the latest version (the latest version of a key never expires).

Layers as in the other stores: ``VersionedKeyValueStore`` keeps the uncommitted changes (the keys changed
since the last commit, each with its whole timeline) and logs every put to the changelog (no caching: each
version matters, as in Kafka); the committed versions live in a ``VersionHistory``: ``InMemoryVersionHistory``
here, ``RocksDBVersionHistory`` (``rocksdb_versioned.py``, history segmented by time) on disk. Changelog
records: key = key bytes, value = ``encode_version`` (8-byte timestamp, 1-byte flag: 0 tombstone, 1 value,
then the value's bytes).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from streams.state.base import ChangelogSink, Headers
from streams.state.store_serdes import StoreSerdes
from streams.state.version_timeline import (
    PUT_RETURN_CODE_NOT_PUT,
    PUT_RETURN_CODE_VALID_TO_UNDEFINED,
    Timeline,
    VersionedRecord,
    decode_version,
    encode_version,
    find_version,
    insert_version,
    prune,
    versioned_segment_interval,
)

if TYPE_CHECKING:
    from pathlib import Path

    from streams.processor import RecordContext

__all__ = [
    "PUT_RETURN_CODE_NOT_PUT",
    "PUT_RETURN_CODE_VALID_TO_UNDEFINED",
    "InMemoryVersionHistory",
    "Timeline",
    "VersionHistory",
    "VersionedKeyValueStore",
    "VersionedRecord",
    "decode_version",
    "encode_version",
    "find_version",
    "latest_values",
    "versioned_segment_interval",
]


class VersionHistory(Protocol):
    """The committed versions of one store partition."""

    persistent: bool
    #: Survives restarts with the versions: the observed stream time (``observed``).
    metadata: dict[str, int]

    def load(self, kb: bytes) -> Timeline:
        """The key's versions (a list the caller may change)."""

    def as_of(self, kb: bytes, as_of: int, boundary: int) -> VersionedRecord | None:
        """``find_version`` of the key's versions; before ``boundary`` only the latest version answers."""

    def latest(self, kb: bytes) -> VersionedRecord | None: ...

    def write(self, changes: dict[bytes, Timeline], metadata: dict[str, int], boundary: int) -> None:
        """Replace the versions of each changed key, then drop what ended at or before ``boundary``."""

    def items(self) -> list[tuple[bytes, VersionedRecord]]:
        """Every key's latest version, in key-byte order."""

    def estimate(self) -> int: ...

    def wipe(self) -> None: ...

    def close(self) -> None: ...


class InMemoryVersionHistory:
    """Versions in a dict of timelines. Expired versions are dropped from a key when it is written, and from
    every key each time the boundary crosses into a new segment interval."""

    persistent = False

    def __init__(self, segment_interval: int) -> None:
        self.interval = segment_interval
        self._data: dict[bytes, Timeline] = {}
        self.metadata: dict[str, int] = {}
        self._swept = -1  # the segment of the boundary at the last sweep

    def load(self, kb: bytes) -> Timeline:
        return list(self._data.get(kb, ()))

    def as_of(self, kb: bytes, as_of: int, boundary: int) -> VersionedRecord | None:
        points = self._data.get(kb)
        if not points:
            return None
        if as_of < boundary:
            ts, value = points[-1]
            return VersionedRecord(value, ts) if value is not None and ts <= as_of else None
        return find_version(points, as_of)

    def latest(self, kb: bytes) -> VersionedRecord | None:
        points = self._data.get(kb)
        if not points or points[-1][1] is None:
            return None
        return VersionedRecord(points[-1][1], points[-1][0])

    def write(self, changes: dict[bytes, Timeline], metadata: dict[str, int], boundary: int) -> None:
        data = self._data
        for kb, points in changes.items():
            points = prune(points, boundary)
            if points:
                data[kb] = points
            else:
                data.pop(kb, None)
        self.metadata = dict(metadata)
        segment = boundary // self.interval
        if segment > self._swept:
            self._swept = segment
            for kb in list(data):
                points = prune(data[kb], boundary)
                if points:
                    data[kb] = points
                else:
                    del data[kb]

    def items(self) -> list[tuple[bytes, VersionedRecord]]:
        return [
            (kb, VersionedRecord(points[-1][1], points[-1][0]))
            for kb, points in sorted(self._data.items())
            if points[-1][1] is not None
        ]

    def estimate(self) -> int:
        return len(self._data)

    def wipe(self) -> None:
        self._data.clear()
        self.metadata = {}
        self._swept = -1

    def close(self) -> None:
        self._data = {}


class VersionedKeyValueStore(StoreSerdes):
    """A versioned store partition (``history_retention_ms``; ``path``: RocksDB directory, None: in memory).

    Typed API as Kafka's ``VersionedKeyValueStore``: ``put(key, value, timestamp)`` returns the new version's
    ``valid_to`` (``PUT_RETURN_CODE_VALID_TO_UNDEFINED`` if it is the latest, ``PUT_RETURN_CODE_NOT_PUT`` if it
    was dropped as expired), ``delete(key, timestamp)`` puts a tombstone and returns the version it ended,
    ``get(key, as_of=None)`` a ``VersionedRecord`` or None."""

    stream_time = -1  # keeps its own observed stream time (``observed``), not the task's
    timestamped = False

    def __init__(
        self,
        name: str,
        key_serde: Any,
        value_serde: Any,
        topic: str,
        record_context: RecordContext,
        history_retention_ms: int,
        path: Path | None = None,
        segment_interval_ms: int | None = None,
    ) -> None:
        super().__init__(name, key_serde, value_serde, topic, record_context)
        self.history_retention_ms = history_retention_ms
        interval = segment_interval_ms or versioned_segment_interval(history_retention_ms)
        self._inner: VersionHistory
        if path is None:
            self._inner = InMemoryVersionHistory(interval)
        else:
            from streams.state.rocksdb_versioned import RocksDBVersionHistory  # rocksdict: the [streams] extra

            self._inner = RocksDBVersionHistory(path, interval, self._decode_value, self._encode_value)
        self.persistent = self._inner.persistent
        #: The largest timestamp put (Kafka's ``observedStreamTime``): what the history retention counts from.
        self.observed = self._inner.metadata.get("observed", -1)
        #: Puts (and deletes) dropped because they were older than the history retention.
        self.expired_puts = 0
        #: Called once per expired put (the owning task counts it in its ``dropped_records``).
        self.on_expired: Callable[[], None] | None = None
        self._overlay: dict[bytes, Timeline] = {}  # keys changed since the last persist: their whole timeline
        self._log: list[tuple[bytes, bytes | None]] = []  # puts not flushed yet, in order
        self._logged_keys: set[bytes] = set()
        self._pending: dict[bytes, Timeline] = {}  # flushed, to persist after the commit
        self.changelog: ChangelogSink | None = None
        self.closed = False

    # -- values ----------------------------------------------------------------------------------------

    def _encode_value(self, value: Any) -> bytes | None:
        # A value whose serde writes nothing is stored as b"", which only a tombstone (None) is not.
        return None if value is None else self.value_bytes(value) or b""

    def _decode_value(self, vb: bytes | None) -> Any:
        return None if vb is None else self._vde(vb)

    @property
    def boundary(self) -> int:
        """The oldest time still in the history: older puts are dropped, older reads see only the latest."""
        return self.observed - self.history_retention_ms

    # -- reads -----------------------------------------------------------------------------------------

    def get(self, key: Any, as_of: int | None = None) -> VersionedRecord | None:
        """The latest version of ``key`` (``as_of`` None), or the one valid at ``as_of``; None if none is."""
        return self.get_version(self.key_bytes(key), as_of)

    def get_version(self, kb: bytes, as_of: int | None = None) -> VersionedRecord | None:
        """``get`` of a key already serialized to ``kb``."""
        points = self._overlay.get(kb)
        if points is None:
            return self._inner.latest(kb) if as_of is None else self._inner.as_of(kb, as_of, self.boundary)
        if not points:
            return None
        ts, value = points[-1]
        if as_of is None or ts <= as_of:
            return None if value is None else VersionedRecord(value, ts)
        if as_of < self.boundary:
            return None
        return find_version(points, as_of)

    def get_versions(
        self, key: Any, time_from: int | None = None, time_to: int | None = None, *, ascending: bool = False
    ) -> list[VersionedRecord]:
        """Every version of ``key`` valid at some time in ``[time_from, time_to]`` (None: open), newest first
        (``ascending``: oldest first): Kafka's ``get(key, from, to, order)`` (KIP-968). Tombstones are not
        versions. When ``time_to`` is older than the history retention only the latest version can answer."""
        kb = self.key_bytes(key)
        low = -(2**63) if time_from is None else time_from
        high = 2**63 - 1 if time_to is None else time_to
        points = self._overlay.get(kb)
        if points is None:
            points = self._inner.load(kb)
        if high < self.boundary:
            points = points[-1:]
        out = [
            VersionedRecord(value, ts, points[i + 1][0] if i + 1 < len(points) else None)
            for i, (ts, value) in enumerate(points)
            if value is not None and ts <= high and (i + 1 == len(points) or points[i + 1][0] > low)
        ]
        return out if ascending else out[::-1]

    def peek(self, key: Any) -> Any:
        """The latest value (None if none): what a key-value view of the store reads."""
        record = self.get(key)
        return None if record is None else record.value

    # -- the timestamped key-value interface the DSL's processors use (Kafka's ``KeyValueStoreWrapper``) ---

    def get_with_timestamp(self, key: Any) -> tuple[Any, int] | None:
        """``(latest value, its timestamp)``, or None."""
        record = self.get_version(self.key_bytes(key))
        return None if record is None else (record.value, record.timestamp)

    def get_serialized(self, kb: bytes) -> tuple[Any, int] | None:
        record = self.get_version(kb)
        return None if record is None else (record.value, record.timestamp)

    def put_serialized(self, kb: bytes, key: Any, stored: tuple[Any, int] | None) -> int:
        """Put ``(value, timestamp)`` (None: a tombstone at the current record's time) as a version; returns
        ``put``'s code (an aggregation forwards nothing that was ``PUT_RETURN_CODE_NOT_PUT``, as Kafka's)."""
        if stored is None:
            return self.put_version(kb, None, self._rc.timestamp)
        return self.put_version(kb, stored[0], stored[1])

    def _latest_items(self) -> list[tuple[bytes, VersionedRecord]]:
        latest = dict(self._inner.items())
        for kb, points in self._overlay.items():
            if points and points[-1][1] is not None:
                latest[kb] = VersionedRecord(points[-1][1], points[-1][0])
            else:
                latest.pop(kb, None)
        return sorted(latest.items(), key=lambda item: item[0])

    def all(self) -> list[tuple[Any, Any]]:
        """Every key's latest value, in key-byte order."""
        return [(self._kde(kb), record.value) for kb, record in self._latest_items()]

    def range(self, key_from: Any = None, key_to: Any = None) -> list[tuple[Any, Any]]:
        """``(key, latest value)`` with ``key_from <= key <= key_to`` as serialized keys (None: open)."""
        low = None if key_from is None else self.key_bytes(key_from)
        high = None if key_to is None else self.key_bytes(key_to)
        return [
            (self._kde(kb), record.value)
            for kb, record in self._latest_items()
            if (low is None or kb >= low) and (high is None or kb <= high)
        ]

    def decode_key(self, kb: bytes) -> Any:
        return self._kde(kb)

    def approximate_num_entries(self) -> int:
        return len(self.all())

    def estimate_num_entries(self) -> int:
        return self._inner.estimate() + len(self._overlay)

    # -- writes ----------------------------------------------------------------------------------------

    def put(self, key: Any, value: Any, timestamp: int | None = None) -> int:
        """Add the version ``value`` (None: a tombstone) of ``key`` at ``timestamp`` (default: the current
        record's). Returns its ``valid_to``, ``PUT_RETURN_CODE_VALID_TO_UNDEFINED`` if it is the latest, or
        ``PUT_RETURN_CODE_NOT_PUT`` if it was older than the history retention (dropped and counted)."""
        ts = self._rc.timestamp if timestamp is None else timestamp
        return self.put_version(self.key_bytes(key), value, ts)

    def put_version(self, kb: bytes, value: Any, ts: int) -> int:
        """``put`` of a key already serialized to ``kb``."""
        if ts < self.observed - self.history_retention_ms:
            self._expired()
            return PUT_RETURN_CODE_NOT_PUT
        vb = self._encode_value(value)
        self._log.append((kb, encode_version(ts, vb)))
        return self._apply(kb, ts, value)

    def delete(self, key: Any, timestamp: int | None = None) -> VersionedRecord | None:
        """Put a tombstone at ``timestamp``; returns the version valid at that time before (None if none, or
        if the delete was older than the history retention and so dropped)."""
        ts = self._rc.timestamp if timestamp is None else timestamp
        kb = self.key_bytes(key)
        if ts < self.observed - self.history_retention_ms:
            self._expired()
            return None
        existing = self.get_version(kb, ts)
        self.put_version(kb, None, ts)
        return existing

    def _expired(self) -> None:
        self.expired_puts += 1
        if self.on_expired is not None:
            self.on_expired()

    def _apply(self, kb: bytes, ts: int, value: Any) -> int:
        if ts > self.observed:
            self.observed = ts
        points = self._overlay.get(kb)
        if points is None:
            points = self._overlay[kb] = self._inner.load(kb)
        return insert_version(points, ts, value)

    # -- commit protocol -------------------------------------------------------------------------------

    @property
    def dirty_count(self) -> int:
        return len(self._log)

    def flush(self, headers: Headers | None) -> int:
        log = self._log
        if not log:
            return 0
        self._log = []
        overlay, pending = self._overlay, self._pending
        for kb in {kb for kb, _ in log}:
            pending[kb] = list(overlay[kb])  # a copy: a later change of the key waits for the next commit
        if self.changelog is not None:
            self.changelog.send_batch(log, headers)
        return len(log)

    def persist(self) -> bool:
        pending = self._pending
        if not pending:
            return False
        self._inner.write(pending, {"observed": self.observed}, self.boundary)
        overlay, unflushed = self._overlay, {kb for kb, _ in self._log}
        for kb in pending:
            if kb not in unflushed:
                overlay.pop(kb, None)
        self._pending = {}
        return self.persistent

    def discard_pending(self) -> None:
        self._overlay = {}
        self._log = []
        self._pending = {}
        self.observed = self._inner.metadata.get("observed", -1)

    # -- restore ---------------------------------------------------------------------------------------

    def restore_batch(self, entries: list[tuple[bytes, bytes | None]]) -> None:
        """Replay logged puts in order, with the same rules (a put older than the retention as of its turn is
        skipped, not counted: Kafka's restore), then write them to the committed versions."""
        decode = self._vde
        for kb, raw in entries:
            if raw is None:
                continue  # not written by this store (a compacted-away key has no tombstone of ours)
            ts, vb = decode_version(raw)
            if ts < self.observed - self.history_retention_ms:
                continue
            self._apply(kb, ts, None if vb is None else decode(vb))
        if self._overlay:
            self._inner.write(self._overlay, {"observed": self.observed}, self.boundary)
            self._overlay = {}

    def wipe(self) -> None:
        self._inner.wipe()
        self.discard_pending()

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._inner.close()
            self._overlay = {}


def latest_values(store: Any) -> Callable[[Any], Any]:
    """How a processor reads a table's current value by key from its store: ``get`` of a key-value store; the
    latest version's value of a versioned one (whose ``get`` answers a ``VersionedRecord``)."""
    return store.peek if isinstance(store, VersionedKeyValueStore) else store.get
