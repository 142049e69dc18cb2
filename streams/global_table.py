"""``GlobalKTable``: a table every instance holds in full, and the stream-GlobalKTable join.

A global table is not split into tasks: each instance reads ALL partitions of its topic into one store
(``streams/global_state.py``), first up to the end before its stream threads start, then continuously while
it runs. The topic itself is the table's log, so the store has no changelog. As in Kafka Streams the store
is RocksDB by default (in ``<state_dir>/<application_id>/global/``, with a checkpoint of the offsets it
holds, so a restart reads only the tail), or in memory (``kind="memory"``: read from the start at every
start). Processors reach it by name through ``get_state_store`` (read-only) without being connected to it,
and a stream joins it through a key selector, so the stream needs no co-partitioning with the table's topic.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from streams.errors import DeserializationError
from streams.handlers import DeserializationHandler
from streams.log.base import Record
from streams.ops import Forwarding
from streams.processor import ProcessorContext, RecordContext
from streams.record_serdes import TimestampedSerde, bind_deserializer
from streams.state.cache import CachingKeyValueStore
from streams.state.memory import InMemoryKeyValueStore
from streams.topology import GlobalTableSpec, Topology

if TYPE_CHECKING:
    from streams.table_joins import Joiner

__all__ = [
    "GlobalKTable",
    "GlobalTableInput",
    "ReadOnlyGlobalStore",
    "StreamGlobalJoinProcessor",
    "global_inputs",
]

log = logging.getLogger("streams.global_table")

_TS = struct.Struct(">q")
_MISSING = object()


class GlobalKTable:
    """What ``StreamsBuilder.global_table`` returns: a handle to join streams with (``KStream.join`` /
    ``left_join`` with a key selector). ``store_name`` is queryable on every instance."""

    def __init__(self, builder: Any, spec: GlobalTableSpec) -> None:
        self.builder = builder
        self.spec = spec

    @property
    def store_name(self) -> str:
        return self.spec.store

    @property
    def topic(self) -> str:
        return self.spec.topic

    def __repr__(self) -> str:
        return f"GlobalKTable(topic={self.spec.topic!r}, store={self.spec.store!r})"


def _global_store(spec: GlobalTableSpec, topology: Topology, directory: Path | None, default_kind: str) -> Any:
    """An empty (or, on RocksDB, the local) store of one global table: timestamped, without changelog."""
    key, value = topology.key_serde(spec.key), TimestampedSerde(topology.value_serde(spec.value))
    kind = spec.kind or default_kind
    store: CachingKeyValueStore
    # Bound to the table's topic: a key serialized for a lookup has the bytes a producer gave it.
    if kind == "memory" or directory is None:
        store = InMemoryKeyValueStore(spec.store, key, value, spec.topic, RecordContext())
    else:
        from streams.state.rocksdb import RocksDBKeyValueStore  # rocksdict is the [streams] extra

        path = directory / "rocksdb" / spec.store
        store = RocksDBKeyValueStore(spec.store, key, value, spec.topic, RecordContext(), path=path)
    store.timestamped = True
    return store


@dataclass(eq=False)
class GlobalTableInput:
    """One global table: its store and how the records of its topic reach it.

    Each record is deserialized (key and value) before it is applied, as Kafka Streams' global source node
    does: one that does not deserialize goes to the app's deserialization handler, which skips it (counted
    in ``skipped``) or stops the global table with a ``DeserializationError`` naming its topic, partition
    and offset. Records with a null key are dropped (counted in ``dropped``), as a table source drops them."""

    spec: GlobalTableSpec
    store: Any  # a CachingKeyValueStore, written only by the thread that applies records
    handler: DeserializationHandler
    send: Callable[..., None]  # where a dead-letter handler sends
    cache_entries: int = 0  # of a persistent store's view (see ReadOnlyGlobalStore)
    skipped: int = 0
    dropped: int = 0

    def __post_init__(self) -> None:
        topic = self.spec.topic
        self._kde = bind_deserializer(self.store.key_serde, topic, True)
        self._vde = bind_deserializer(self.store.value_serde.inner, topic, False)
        #: What every other thread reads.
        self.view = ReadOnlyGlobalStore(self.store, self.cache_entries if self.store.persistent else 0)

    def apply(self, records: list[Record]) -> None:
        """Apply records of the table's topic, oldest first: the latest value per key, None deletes."""
        kde, vde, pack = self._kde, self._vde, _TS.pack
        # An in-memory store keeps the values this check deserializes; RocksDB keeps the bytes.
        objects = isinstance(self.store, InMemoryKeyValueStore)
        entries: list[tuple[bytes, Any]] = []
        try:
            for rec in records:
                key, value = rec.key, rec.value
                if key is None:
                    self.dropped += 1
                    continue
                try:
                    kde(key)
                    obj = None if value is None else vde(value)
                except Exception as exc:
                    self._failed(rec, exc)
                    continue
                if value is None:
                    entries.append((key, None))
                elif objects:
                    entries.append((key, (obj, rec.timestamp)))
                else:
                    entries.append((key, pack(rec.timestamp) + value))
        finally:  # a failing record stops the table after the ones before it
            if entries:
                if objects:
                    self.store.restore_values(entries)
                else:
                    self.store.restore_batch(entries)
                self.view.changed(kb for kb, _ in entries)

    def _failed(self, rec: Record, exc: Exception) -> None:
        """``rec`` did not deserialize: count it if the handler says to go on, else raise."""
        try:
            self._kde(rec.key)
            is_key = False
        except Exception:
            is_key = True
        error = DeserializationError(rec.topic, rec.partition, rec.offset, is_key, exc)
        if not self.handler.handle(rec, error, self.send):
            raise error from exc
        self.skipped += 1


def global_inputs(
    topology: Topology,
    handler: DeserializationHandler,
    send: Callable[..., None],
    directory: Path | None = None,
    default_kind: str = "memory",
    cache_entries: int = 0,
) -> dict[str, GlobalTableInput]:
    """Topic -> its global table, a store each (``directory``: where RocksDB stores live; without it, or
    with ``default_kind`` "memory" for a table that does not say, the store is in memory; ``cache_entries``:
    deserialized values a RocksDB store's readers keep)."""
    return {
        spec.topic: GlobalTableInput(
            spec, _global_store(spec, topology, directory, default_kind), handler, send, cache_entries
        )
        for spec in topology.global_tables.values()
    }


class ReadOnlyGlobalStore:
    """A global table's store as the stream threads, ``app.store(name)`` and the HTTP query API see it: this
    instance's whole copy, read-only (Kafka Streams gives processors global stores read-only too).

    Safe while the global thread writes. Reads never touch the store's own cache (``peek``); a RocksDB store's
    view keeps up to ``cache_entries`` deserialized values of its own, which the writer invalidates per key
    after each write (``changed``). A reader keeps what it read only if no write began meanwhile (the
    ``_generation`` the writer bumps before invalidating), and puts it into the dict it found, so a value
    read before a write is never left cached after it; RocksDB reads and iterators see a consistent snapshot."""

    def __init__(self, store: Any, cache_entries: int = 0) -> None:
        self._store = store
        self.name: str = store.name
        self._max = cache_entries
        self._cache: dict[bytes, Any] = {}
        self._generation = 0

    def get(self, key: Any) -> Any:
        if not self._max:
            return self._store.peek(key)
        kb = self._store.key_bytes(key)
        cache = self._cache
        value = cache.get(kb, _MISSING)
        if value is not _MISSING:
            return value
        generation = self._generation
        value = self._store.peek(key)
        if len(cache) >= self._max:
            cache = self._cache = {}
        cache[kb] = value
        if self._generation != generation:  # a write raced this read: do not keep what it read
            cache.pop(kb, None)
        return value

    def changed(self, keys: Iterable[bytes]) -> None:
        """The writer wrote ``keys`` (serialized) to the store: forget what readers cached of them."""
        if not self._max:
            return
        self._generation += 1
        cache = self._cache
        if cache:
            for kb in keys:
                cache.pop(kb, None)

    @property
    def closed(self) -> bool:
        return bool(self._store.closed)

    def key_bytes(self, key: Any) -> bytes:
        return bytes(self._store.key_bytes(key))

    def all(self) -> list[tuple[Any, Any]]:
        return list(self._store.all())

    def range(self, key_from: Any = None, key_to: Any = None) -> Iterator[tuple[Any, Any]]:
        """(key, value) with ``key_from <= key <= key_to`` as serialized keys, in key-byte order."""
        return iter(list(self._store.range(key_from, key_to)))

    def approximate_num_entries(self) -> int:
        return int(self._store.approximate_num_entries())


@dataclass(eq=False)
class StreamGlobalJoinProcessor(Forwarding):
    """Stream-GlobalKTable join: each record looks up ``key_selector(key, value)`` in the global store
    and forwards ``joiner(key, value, row)`` under its own key and timestamp (a None stream key is fine).
    Records with a None value are dropped and counted; without a row an inner join drops the record, a
    left join joins it with None; a None selected key is a dropped (and counted) record for an inner join,
    a join with None for a left join (Kafka Streams 4.1)."""

    store_name: str
    key_selector: Callable[[Any, Any], Any]
    joiner: Joiner
    left: bool

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self._store = context.get_state_store(self.store_name)

    def process(self, key: Any, value: Any) -> None:
        if value is None:
            self.context.record_dropped()
            return
        global_key = self.key_selector(key, value)
        if global_key is None:
            # No row can match. Kafka Streams 4.1 (KAFKA-19208): a left join emits it with None (whatever the
            # stream key); an inner join drops it and counts it.
            if self.left:
                self._forward(key, self.joiner(key, value, None))
            else:
                self.context.record_dropped()
            return
        row = self._store.get(global_key)
        if row is None and not self.left:
            return
        self._forward(key, self.joiner(key, value, row))
