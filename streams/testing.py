"""Testing a topology: ``TopologyTestDriver`` runs it in-process, without a log, fed through ``TestInputTopic``
and read through ``TestOutputTopic`` (as ``TestRecord``), for unit tests.

    driver = TopologyTestDriver(builder.build())
    orders = driver.input_topic("orders", key=str, value="json")
    totals = driver.output_topic("customer-totals", key=str, value="json")
    orders.pipe_input("o1", {"customer": "alice", "amount": 3.0})
    assert totals.read_key_value() == ("alice", {...})
    driver.get_key_value_store("totals").get("alice")

Every topic has one partition; each piped record is processed completely (through repartition topics
too), then the driver commits, so cached aggregates are emitted after each input record. Stream time
advances with the piped records' timestamps (windows close, suppressions emit); wall-clock time is
simulated: ``advance_wall_clock(ms)`` fires wall-clock punctuators and moves ``WallclockTimestampExtractor``.
Window and session stores: ``get_window_store`` / ``get_session_store``. Records piped into a global
table's topic go straight into its store (``get_key_value_store(name)`` reads it). As in Kafka Streams'
driver, the emit throttles of left/outer joins and emit-final windowed aggregations default to 0 here
(``outer_join_emit_interval_ms`` / ``windowed_aggregation_emit_interval_ms``; ``streams/emit_throttle.py``):
their results appear as soon as stream time allows; set them to see the throttle against the simulated clock.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from streams.config import DEFAULT_CACHE_MAX_ENTRIES
from streams.emit_throttle import EmitIntervals
from streams.errors import StreamsError, TopologyError
from streams.extractors import extractor_from
from streams.global_table import global_inputs
from streams.handlers import handler_from
from streams.log.base import DeliveryCallback, HeaderPairs, Headers, Record
from streams.metadata import TopicNames
from streams.record_serdes import bind_deserializer, bind_serializer, serde_from
from streams.state.base import StateStore
from streams.state.cache import CachingKeyValueStore
from streams.state.session import SessionStore
from streams.state.versioned import VersionedKeyValueStore
from streams.state.window import WindowStore
from streams.task import StreamTask, TaskEnv
from streams.topology import Topology

__all__ = ["TestInputTopic", "TestOutputTopic", "TestRecord", "TopologyTestDriver"]


@dataclass(frozen=True)
class TestRecord:
    """A record read from a ``TestOutputTopic``."""

    __test__ = False  # not a pytest test class (no annotation: not a dataclass field)

    key: Any
    value: Any
    timestamp: int
    headers: Headers = ()


class _MockClock:
    def __init__(self, start_ms: int) -> None:
        self.ms = start_ms

    def now_ms(self) -> int:
        return self.ms


class TopologyTestDriver:
    __test__ = False  # not a pytest test class

    def __init__(
        self,
        topology: Topology,
        *,
        application_id: str = "test-driver",
        wall_clock_ms: int = 0,
        state_dir: str | Path | None = None,
        deserialization_error_handler: Any = "fail",
        default_timestamp_extractor: Any = None,
        processing_exception_handler: Any = "fail",
        outer_join_emit_interval_ms: int = 0,
        windowed_aggregation_emit_interval_ms: int = 0,
    ) -> None:
        self.topology = topology
        self.application_id = application_id
        self.clock = _MockClock(wall_clock_ms)
        self._outputs: dict[str, deque[Record]] = {}
        self._changelogs: dict[str, list[Record]] = {}
        self._pending: deque[Record] = deque()
        self._offsets: dict[str, int] = {}
        names = TopicNames(application_id)
        internal = {names.topic(name, True) for name in topology.repartition_topics}
        self._changelog_topics = {names.changelog(name): name for name in topology.stores}
        handler = handler_from(deserialization_error_handler)
        # Global tables in memory; piped records reach them through the deserialization handler, as in the app.
        self._global_by_topic = global_inputs(topology, handler, self._send)
        env = TaskEnv(
            application_id=application_id,
            topology=topology,
            send=self._send,
            clock=self.clock,
            state_dir=Path(state_dir) if state_dir is not None else None,
            default_store="memory" if state_dir is None else "rocksdb",
            cache_max_entries=DEFAULT_CACHE_MAX_ENTRIES,
            deserialization_handler=handler,
            processing_handler=handler_from(processing_exception_handler, "processing_exception_handler"),
            topic_names=names,
            partitions_of=lambda topic: 1,
            default_timestamp_extractor=extractor_from(default_timestamp_extractor, "default_timestamp_extractor"),
            global_stores={t.spec.store: t.view for t in self._global_by_topic.values()},
            # 0 unless asked otherwise, as Kafka Streams' TopologyTestDriver: results as soon as stream time allows
            emit_intervals=EmitIntervals(outer_join_emit_interval_ms, windowed_aggregation_emit_interval_ms),
        )
        self.tasks: list[StreamTask] = []
        self._task_by_topic: dict[str, StreamTask] = {}
        try:
            for sub in topology.sub_topologies():
                task = StreamTask(sub, 0, env)
                self.tasks.append(task)
                for tp in task.input_partitions:
                    self._task_by_topic[tp.topic] = task
            for task in self.tasks:
                task.init_processors()
        except BaseException:
            self.close()
            raise
        self._internal = internal
        self.source_topics = sorted([t for t in self._task_by_topic if t not in internal] + list(self._global_by_topic))

    # -- topics ----------------------------------------------------------------------------------------

    def input_topic(
        self, topic: str, *, key: Any = None, value: Any = None, start_timestamp: int = 0, auto_advance_ms: int = 0
    ) -> TestInputTopic:
        if (topic not in self._task_by_topic and topic not in self._global_by_topic) or topic in self._internal:
            raise TopologyError(
                f"topic {topic!r} is not a source topic of this topology; sources: {self.source_topics}"
            )
        key, value = self.topology.key_serde(serde_from(key)), self.topology.value_serde(serde_from(value))
        return TestInputTopic(self._pipe, topic, key, value, start_timestamp, auto_advance_ms)

    def output_topic(self, topic: str, *, key: Any = None, value: Any = None) -> TestOutputTopic:
        records = self._outputs.setdefault(topic, deque())
        return TestOutputTopic(
            records,
            topic,
            self.topology.key_serde(serde_from(key)),
            self.topology.value_serde(serde_from(value)),
        )

    def _send(
        self,
        topic: str,
        value: bytes | None,
        key: bytes | None = None,
        *,
        partition: int | None = None,
        headers: HeaderPairs | None = None,
        timestamp: int | None = None,
        on_delivery: DeliveryCallback | None = None,
    ) -> None:
        ts = timestamp if timestamp is not None else self.clock.ms
        offset = self._offsets.get(topic, 0)
        self._offsets[topic] = offset + 1
        rec = Record(topic, 0, offset, key, value, ts, tuple(headers or ()))
        if topic in self._changelog_topics:
            self._changelogs.setdefault(self._changelog_topics[topic], []).append(rec)
        elif topic in self._internal:
            self._pending.append(rec)
        else:
            self._outputs.setdefault(topic, deque()).append(rec)
            if topic in self._task_by_topic:  # a user topic the topology also reads (through())
                self._pending.append(rec)

    def _pipe(
        self,
        topic: str,
        key: bytes | None,
        value: bytes | None,
        timestamp: int,
        headers: Headers,
    ) -> None:
        offset = self._offsets.get(topic, 0)
        self._offsets[topic] = offset + 1
        rec = Record(topic, 0, offset, key, value, timestamp, headers)
        if topic in self._global_by_topic:  # a global table's topic: straight into its store
            self._global_by_topic[topic].apply([rec])
            return
        self._pending.append(rec)
        self._drain()

    def _drain(self) -> None:
        while True:
            while self._pending:
                rec = self._pending.popleft()
                self._task_by_topic[rec.topic].process(rec)
            for task in self.tasks:
                task.flush()
                task.committed(task.offsets_to_commit())
            if not self._pending:
                return

    # -- time and state --------------------------------------------------------------------------------

    def advance_wall_clock(self, ms: int) -> None:
        """Move the simulated wall clock forward and run the wall-clock punctuators that became due."""
        if ms < 0:
            raise ValueError(f"the wall clock only moves forward; got {ms} ms")
        self.clock.ms += ms
        for task in self.tasks:
            task.punctuate_wall_clock(self.clock.ms)
        self._drain()

    @property
    def wall_clock_ms(self) -> int:
        return self.clock.ms

    def get_state_store(self, name: str) -> StateStore:
        """The store ``name``, whatever its type."""
        for task in self.tasks:
            if name in task.stores:
                return task.stores[name]
        for table in self._global_by_topic.values():
            if table.store.name == name:
                return table.store
        raise StreamsError(f"no store named {name!r}; stores: {sorted(self.topology.stores)}")

    def _typed_store(self, name: str, kind: type, what: str) -> Any:
        store = self.get_state_store(name)
        if not isinstance(store, kind):
            raise StreamsError(f"store {name!r} is a {type(store).__name__}, not a {what}")
        return store

    def get_key_value_store(self, name: str) -> CachingKeyValueStore:
        return self._typed_store(name, CachingKeyValueStore, "key-value store")

    def get_versioned_store(self, name: str) -> VersionedKeyValueStore:
        return self._typed_store(name, VersionedKeyValueStore, "versioned key-value store")

    def get_window_store(self, name: str) -> WindowStore:
        return self._typed_store(name, WindowStore, "window store")

    def get_session_store(self, name: str) -> SessionStore:
        return self._typed_store(name, SessionStore, "session store")

    @property
    def dropped_records(self) -> int:
        """Records the topology dropped (late for their window, null keys, negative timestamps)."""
        return sum(task.dropped_records for task in self.tasks)

    def changelog(self, store: str) -> list[Record]:
        """The changelog records the store has written (raw bytes), oldest first."""
        return list(self._changelogs.get(store, []))

    def close(self) -> None:
        for task in getattr(self, "tasks", []):
            task.close(clean=True)

    def __enter__(self) -> TopologyTestDriver:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


Pipe = Callable[[str, bytes | None, bytes | None, int, Headers], None]


class TestInputTopic:
    """Serializes records into the driver (``pipe``), which processes each at once."""

    __test__ = False  # not a pytest test class

    def __init__(self, pipe: Pipe, topic: str, key: Any, value: Any, start: int, advance: int) -> None:
        self._pipe = pipe
        self.topic = topic
        self._kser = bind_serializer(key, topic, True)
        self._vser = bind_serializer(value, topic, False)
        self._time = start
        self._advance = advance

    def pipe_input(
        self,
        key: Any = None,
        value: Any = None,
        *,
        timestamp: int | None = None,
        headers: Iterable[tuple[str, bytes | None]] = (),
    ) -> None:
        if timestamp is None:
            timestamp = self._time
            self._time += self._advance
        self._pipe(self.topic, self._kser(key), self._vser(value), timestamp, tuple(headers))

    def pipe_raw(self, key: bytes | None, value: bytes | None, *, timestamp: int = 0) -> None:
        """Pipe bytes as they are (e.g. to test deserialization errors)."""
        self._pipe(self.topic, key, value, timestamp, ())

    def pipe_value(self, value: Any, *, timestamp: int | None = None) -> None:
        self.pipe_input(None, value, timestamp=timestamp)

    def pipe_values(self, values: Iterable[Any]) -> None:
        for v in values:
            self.pipe_input(None, v)

    def pipe_key_values(self, pairs: Iterable[tuple[Any, Any]]) -> None:
        for k, v in pairs:
            self.pipe_input(k, v)

    def advance_time(self, ms: int) -> None:
        self._time += ms


class TestOutputTopic:
    """Deserializes what the topology wrote to ``topic``: ``records``, which the driver appends to."""

    __test__ = False  # not a pytest test class

    def __init__(self, records: deque[Record], topic: str, key: Any, value: Any) -> None:
        self._records = records
        self.topic = topic
        self._kde = bind_deserializer(key, topic, True)
        self._vde = bind_deserializer(value, topic, False)

    def read_record(self) -> TestRecord:
        if not self._records:
            raise StreamsError(f"output topic {self.topic!r} is empty")
        rec = self._records.popleft()
        return TestRecord(self._kde(rec.key), self._vde(rec.value), rec.timestamp, rec.headers)

    def read_key_value(self) -> tuple[Any, Any]:
        rec = self.read_record()
        return rec.key, rec.value

    def read_value(self) -> Any:
        return self.read_record().value

    def read_records(self) -> list[TestRecord]:
        out = []
        while self._records:
            out.append(self.read_record())
        return out

    def read_key_values(self) -> list[tuple[Any, Any]]:
        return [(r.key, r.value) for r in self.read_records()]

    def read_values(self) -> list[Any]:
        return [r.value for r in self.read_records()]

    def read_key_values_to_map(self) -> dict[Any, Any]:
        out: dict[Any, Any] = {}
        for k, v in self.read_key_values():
            if v is None:
                out.pop(k, None)
            else:
                out[k] = v
        return out

    def is_empty(self) -> bool:
        return not self._records

    def queue_size(self) -> int:
        return len(self._records)
