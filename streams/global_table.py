"""``GlobalKTable``: a table every instance holds in full, and the stream-GlobalKTable join.

A global table is not split into tasks: each instance reads ALL partitions of its topic into one store
(``GlobalStateThread``), first completely before its stream threads start, then continuously while it
runs. The topic itself is the table's log, so the store has no changelog; it is kept in memory and
restored from the topic at every start. Processors reach it by name through ``get_state_store``
without being connected to it, and a stream joins it through a key selector, so the stream needs no
co-partitioning with the table's topic.
"""

from __future__ import annotations

import logging
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from streams.errors import DeserializationError
from streams.log.base import OFFSET_BEGINNING, Consumer, Log, Record, TopicPartition
from streams.ops import Forwarding
from streams.processor import ProcessorContext, RecordContext
from streams.record_serdes import TimestampedSerde
from streams.state.memory import InMemoryKeyValueStore
from streams.topology import GlobalTableSpec, Topology

if TYPE_CHECKING:
    from streams.table_joins import Joiner

__all__ = [
    "GlobalKTable",
    "GlobalStateThread",
    "ReadOnlyGlobalStore",
    "StreamGlobalJoinProcessor",
    "apply_global_records",
    "global_stores",
]

log = logging.getLogger("streams.global_table")

_TS = struct.Struct(">q")


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


def global_stores(topology: Topology) -> dict[str, InMemoryKeyValueStore]:
    """A fresh, empty store per global table of ``topology`` (timestamped, without changelog)."""
    stores = {}
    for spec in topology.global_tables.values():
        key, value = topology.key_serde(spec.key), topology.value_serde(spec.value)
        # Bound to the table's topic: a key serialized for a lookup has the bytes a producer gave it.
        store = InMemoryKeyValueStore(spec.store, key, TimestampedSerde(value), spec.topic, RecordContext())
        store.timestamped = True
        stores[spec.store] = store
    return stores


def apply_global_records(store: InMemoryKeyValueStore, records: list[Record]) -> None:
    """Apply records of a global table's topic to its store: the latest value per key, None deletes.
    A value that does not deserialize stops the global table (``DeserializationError`` names its offset)."""
    kept = [r for r in records if r.key is not None]
    entries = [(r.key, None if r.value is None else _TS.pack(r.timestamp) + r.value) for r in kept]
    try:
        store.restore_batch(entries)  # type: ignore[arg-type]  # keys are not None
    except Exception:
        for rec, entry in zip(kept, entries, strict=True):  # find the record (re-applying the others is harmless)
            try:
                store.restore_batch([entry])  # type: ignore[list-item]
            except Exception as exc:
                raise DeserializationError(rec.topic, rec.partition, rec.offset, False, exc) from exc
        raise


class GlobalStateThread(threading.Thread):
    """Keeps this instance's global stores up to date with all partitions of their topics.

    ``restore()`` reads every topic to its end (call it before the stream threads start); ``start()``
    then follows the topics until ``shutdown()``. A failure is reported to ``on_failed`` (the app goes
    to ERROR, as Kafka Streams does when its global thread dies)."""

    def __init__(
        self,
        topology: Topology,
        log_backend: Log,
        client_id: str,
        on_failed: Callable[[str, BaseException], None],
        poll_timeout_s: float = 0.1,
        progress_interval_s: float = 10.0,
    ) -> None:
        super().__init__(name=client_id, daemon=True)
        self.stores = global_stores(topology)
        self._by_topic = {spec.topic: self.stores[spec.store] for spec in topology.global_tables.values()}
        self._log = log_backend
        self._consumer: Consumer | None = log_backend.consumer(None, client_id=client_id)
        self._on_failed = on_failed
        self._poll_timeout = poll_timeout_s
        self._progress_interval = progress_interval_s
        self._stopping = threading.Event()
        self.records = 0  # applied since start

    def _apply(self, records: list[Record]) -> None:
        by_topic: dict[str, list[Record]] = {}
        for rec in records:
            by_topic.setdefault(rec.topic, []).append(rec)
        for topic, recs in by_topic.items():
            apply_global_records(self._by_topic[topic], recs)
        self.records += len(records)

    def restore(self) -> None:
        """Read all partitions of every global topic from the beginning up to their end offsets (and on
        until a poll finds nothing more: some brokers report end offsets short)."""
        ends: dict[TopicPartition, int] = {}
        for topic in self._by_topic:
            for p, end in self._log.end_offsets(topic).items():
                ends[TopicPartition(topic, p)] = end
        consumer = self._consumer
        assert consumer is not None
        consumer.assign({tp: OFFSET_BEGINNING for tp in ends})
        started = last_report = time.monotonic()
        total = sum(ends.values())
        while True:
            records = consumer.poll(self._poll_timeout, 5000)
            self._apply(records)
            if not records and all(consumer.position(tp) >= end for tp, end in ends.items()):
                break
            now = time.monotonic()
            if now - last_report >= self._progress_interval:
                last_report = now
                log.info("global tables %s: restored %d of about %d records", sorted(self.stores), self.records, total)
        log.info(
            "global tables %s: restored %d records from %d partitions in %.1f s",
            sorted(self.stores),
            self.records,
            len(ends),
            time.monotonic() - started,
        )

    def run(self) -> None:
        try:
            consumer = self._consumer
            assert consumer is not None
            while not self._stopping.is_set():
                self._apply(consumer.poll(self._poll_timeout, 5000))
        except BaseException as exc:
            log.exception("global state thread %s failed", self.name)
            self._on_failed(self.name, exc)
        finally:
            self.close_clients()

    def shutdown(self, timeout: float | None = 10.0) -> None:
        self._stopping.set()
        if self.is_alive():
            self.join(timeout)
        else:
            self.close_clients()

    def close_clients(self) -> None:
        consumer, self._consumer = self._consumer, None
        if consumer is not None:
            consumer.close()
        for store in self.stores.values():
            if not store.closed:
                store.close()


class ReadOnlyGlobalStore:
    """``app.store(name)`` of a global table: this instance's whole copy (read while the global thread
    writes: reads do not touch the store's cache)."""

    def __init__(self, store: InMemoryKeyValueStore) -> None:
        self._store = store

    def get(self, key: Any) -> Any:
        return self._store.peek(key)

    def all(self) -> list[tuple[Any, Any]]:
        return list(self._store.all())

    def approximate_num_entries(self) -> int:
        return self._store.approximate_num_entries()


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
