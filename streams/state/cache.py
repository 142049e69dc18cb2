"""The record cache: updates to a key-value store are merged per key between commits.

Every store keeps the keys changed since the last commit (``dirty``). At commit, ``flush`` sends one
changelog record per dirty key (the latest value) and, when the store forwards through its cache, hands
each key's latest value downstream once (Kafka Streams' caching: an aggregate emits one update per key
per commit, not one per input record). Persistent stores write to disk only after the input offsets
are committed (``persist``), so local state is never ahead of what was committed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from streams.errors import SerdeError
from streams.record_serdes import serde_name
from streams.state.base import ChangelogSink
from streams.state.store_serdes import StoreSerdes

if TYPE_CHECKING:
    from streams.processor import RecordContext

__all__ = ["CachingKeyValueStore", "FlushListener"]

#: ``listener(key, new_value, old_value, timestamp)``: a flushed change; ``old_value`` is the value the
#: previous flush sent (None unless ``track_old_values``).
FlushListener = Callable[[Any, Any, Any, int], None]


class CachingKeyValueStore(StoreSerdes):
    """Base of the key-value stores: typed access through serdes plus the per-commit record cache.

    A ``timestamped`` store (every store the DSL makes, as Kafka Streams' ``TimestampedKeyValueStore``)
    keeps ``(value, timestamp)`` per key: the typed interface reads and writes values, the ``*_serialized``
    methods and flush listeners see the pairs, and its value serde is ``TimestampedSerde(value serde)``.

    Subclasses keep the data (``_lookup`` / ``_store`` / ``_items``, ``restore_batch`` / ``wipe``) and may
    persist after a commit."""

    persistent = False
    stream_time = -1  # key-value stores keep no time
    timestamped = False

    def __init__(self, name: str, key_serde: Any, value_serde: Any, topic: str, record_context: RecordContext):
        super().__init__(name, key_serde, value_serde, topic, record_context)
        self._dirty: dict[bytes, tuple[Any, int, Any]] = {}
        self.listener: FlushListener | None = None
        #: Remember each key's value as of the last flush, for listeners that need (new, old) pairs
        #: (a table that is re-grouped subtracts the old value from its old group).
        self.track_old_values = False
        self.changelog: ChangelogSink | None = None
        self.closed = False

    # -- the typed interface ---------------------------------------------------------------------------

    def _value(self, stored: Any) -> Any:
        """The value of what the store holds (a timestamped store holds ``(value, timestamp)``)."""
        return stored[0] if self.timestamped and stored is not None else stored

    def _stored(self, value: Any) -> Any:
        return (value, self._rc.timestamp) if self.timestamped and value is not None else value

    def get(self, key: Any) -> Any:
        return self._value(self._lookup(self.key_bytes(key)))

    def get_with_timestamp(self, key: Any) -> tuple[Any, int] | None:
        """``(value, timestamp)`` of a timestamped store (the timestamp of the value's last update)."""
        stored = self._lookup(self.key_bytes(key))
        return stored if self.timestamped or stored is None else (stored, -1)

    def peek(self, key: Any) -> Any:
        """Read without filling the cache (safe from other threads, e.g. interactive queries)."""
        return self._value(self._lookup(self.key_bytes(key)))

    def put(self, key: Any, value: Any) -> None:
        """Set ``key`` to ``value``; ``None`` deletes it."""
        self.put_serialized(self.key_bytes(key), key, self._stored(value))

    def put_if_absent(self, key: Any, value: Any) -> Any:
        kb = self.key_bytes(key)
        old = self._value(self._lookup(kb))
        if old is None:
            self.put_serialized(kb, key, self._stored(value))
        return old

    def delete(self, key: Any) -> Any:
        kb = self.key_bytes(key)
        old = self._value(self._lookup(kb))
        self.put_serialized(kb, key, None)
        return old

    def __getitem__(self, key: Any) -> Any:
        value = self.get(key)
        if value is None:
            raise KeyError(key)
        return value

    def __contains__(self, key: Any) -> bool:
        return self.get(key) is not None

    def all(self) -> Iterator[tuple[Any, Any]]:
        """Every (key, value), in key-byte order."""
        for kb, value in sorted(self._items(), key=lambda kv: kv[0]):
            yield self._kde(kb), self._value(value)

    def range(self, key_from: Any = None, key_to: Any = None) -> Iterator[tuple[Any, Any]]:
        """(key, value) with ``key_from <= key <= key_to`` compared as serialized keys (Kafka Streams'
        ``range``), in key-byte order; ``None`` leaves that end open."""
        low = None if key_from is None else self.key_bytes(key_from)
        high = None if key_to is None else self.key_bytes(key_to)
        for kb, value in sorted(self._items_between(low, high), key=lambda kv: kv[0]):
            yield self._kde(kb), self._value(value)

    def prefix_scan(self, prefix: bytes) -> Iterator[tuple[Any, Any]]:
        """(key, value) of every key whose serialized bytes start with ``prefix``, in key-byte order
        (Kafka Streams' ``prefixScan``; a foreign-key join reads a foreign key's subscribers so)."""
        stripped = prefix.rstrip(b"\xff")
        high = stripped[:-1] + bytes((stripped[-1] + 1,)) if stripped else None  # the first key past the prefix
        for kb, value in sorted(self._items_between(prefix, high), key=lambda kv: kv[0]):
            if kb.startswith(prefix):
                yield self._kde(kb), self._value(value)

    def keys(self) -> Iterator[Any]:
        for key, _ in self.all():
            yield key

    def approximate_num_entries(self) -> int:
        return sum(1 for _ in self._items())

    def estimate_num_entries(self) -> int:
        """A cheap size estimate (metrics scrape it): exact where counting is cheap."""
        return self.approximate_num_entries()

    # -- by serialized key: a processor that reads and writes one key per record serializes it once ---------

    def get_serialized(self, kb: bytes) -> Any:
        """The value of the key whose bytes (``key_bytes(key)``) are ``kb``."""
        return self._lookup(kb)

    def put_serialized(self, kb: bytes, key: Any, value: Any) -> None:
        """``put(key, value)`` for a key already serialized to ``kb``; ``key`` is what a flush forwards."""
        # A changed key moves to the end: a flush forwards keys in the order of their last change, so
        # the timestamps it forwards rise as the input's did (what keeps a suppression downstream from
        # seeing a later time before an earlier window's last update).
        dirty = self._dirty
        prev = dirty.pop(kb, None)
        old = prev[2] if prev is not None else (self._lookup(kb) if self.track_old_values else None)
        self._store(kb, value)
        dirty[kb] = (key, self._rc.timestamp, old)

    # -- commit protocol -------------------------------------------------------------------------------

    @property
    def dirty_count(self) -> int:
        return len(self._dirty)

    def flush(self, headers: tuple[tuple[str, bytes], ...] | None) -> int:
        """Send the latest value of each key changed since the last commit to the changelog and (when
        forwarding through the cache) downstream. Returns how many keys were flushed."""
        dirty = self._dirty
        if not dirty:
            return 0
        self._dirty = {}
        vser = self._vser
        lookup = self._current
        entries: list[tuple[bytes, bytes | None]] = []
        listener = self.listener
        rc = self._rc
        for kb, (key, ts, old) in dirty.items():
            value = lookup(kb)
            try:
                vb = vser(value)
            except Exception as exc:
                raise SerdeError(
                    f"store {self.name!r}: cannot serialize the value of key {key!r} "
                    f"({type(value).__name__}) with {serde_name(self.value_serde)}: {exc}"
                ) from exc
            entries.append((kb, vb))
            if listener is not None:
                # Downstream sees the timestamp of the key's last update and no input headers (the
                # record being forwarded is the aggregate, not any one input record).
                saved = rc.timestamp, rc.headers
                rc.timestamp, rc.headers = ts, ()
                try:
                    listener(key, value, old, ts)
                finally:
                    rc.timestamp, rc.headers = saved
        if self.changelog is not None:
            self.changelog.send_batch(entries, headers)
        self._flushed(entries)
        return len(entries)

    def _flushed(self, entries: list[tuple[bytes, bytes | None]]) -> None:
        """Hook: what was flushed, to persist after the commit."""

    def persist(self) -> bool:
        """After the input offsets are committed: make the flushed state durable locally; True if
        anything was written."""
        return False

    def discard_pending(self) -> None:
        """After a failed commit: forget flushed-but-unpersisted writes."""

    # -- restore ---------------------------------------------------------------------------------------

    def restore_batch(self, entries: list[tuple[bytes, bytes | None]]) -> None:
        raise NotImplementedError

    def wipe(self) -> None:
        """Drop all local data (the checkpoint did not match the changelog)."""
        raise NotImplementedError

    def _items_between(self, low: bytes | None, high: bytes | None) -> Iterator[tuple[bytes, Any]]:
        """``_items()`` with ``low <= key bytes <= high`` (``None``: open); a store that can seek overrides it."""
        return ((kb, v) for kb, v in self._items() if (low is None or kb >= low) and (high is None or kb <= high))

    # -- subclass hooks --------------------------------------------------------------------------------

    def _lookup(self, kb: bytes) -> Any:
        raise NotImplementedError

    def _current(self, kb: bytes) -> Any:
        return self._lookup(kb)

    def _store(self, kb: bytes, value: Any) -> None:
        raise NotImplementedError

    def _items(self) -> Iterator[tuple[bytes, Any]]:
        raise NotImplementedError

    def close(self) -> None:
        self.closed = True

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"
