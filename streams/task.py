"""A stream task: one sub-topology instantiated for one partition (id ``<sub-topology>_<partition>``).

The task owns its processors and state stores and its input partitions' positions. Its stream thread
(or the test driver) hands it records one at a time. The commit protocol, which the ``TaskManager``
drives: ``flush`` (stores -> changelog and downstream), then the producer is flushed and
``offsets_to_commit()`` committed, then ``committed()`` persists local state and writes the checkpoint.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from streams.changelog import ChangelogWriter, checkpoint_key, source_header, write_checkpoint
from streams.emit_throttle import EmitIntervals
from streams.errors import (
    DeserializationError,
    ProcessingError,
    ProductionError,
    SerdeError,
    StreamsError,
    TopologyError,
)
from streams.extractors import ConsumedRecord, TimestampExtractor, WallclockTimestampExtractor
from streams.handlers import DeserializationHandler, ErrorHandler, LogAndFail
from streams.log.base import (
    BatchSendError,
    Headers,
    LogError,
    LogTimeoutError,
    ProducerFencedError,
    Record,
    RecordColumns,
    StorageError,
    TopicPartition,
    TransactionError,
    UnknownTopicError,
    runs_of,
    send_each,
)
from streams.metadata import TopicNames
from streams.output_skips import OutputSkips
from streams.processor import Cancellable, Processor, ProcessorContext, PunctuationType, RecordContext
from streams.record_serdes import (
    BytesSerde,
    FloatSerde,
    IntSerde,
    JsonSerde,
    StringSerde,
    TimestampedSerde,
    bind_deserializer,
    bind_serializer,
    serde_name,
)
from streams.state.base import StateStore
from streams.state.buffer import SuppressionBuffer
from streams.state.cache import CachingKeyValueStore
from streams.state.join_buffer import TimeOrderedBuffer
from streams.state.memory import InMemoryKeyValueStore
from streams.state.session import SessionStore
from streams.state.versioned import VersionedKeyValueStore
from streams.state.window import WindowStore
from streams.topology import (
    JoinBufferSpec,
    ProcessorNode,
    SessionStoreSpec,
    SinkNode,
    SourceNode,
    StoreSpec,
    SubTopology,
    SuppressionBufferSpec,
    Topology,
    VersionedStoreSpec,
    WindowStoreSpec,
)
from streams.windowed_serdes import TimeWindowedSerde

__all__ = ["StreamTask", "TaskEnv"]

log = logging.getLogger("streams.task")


@dataclass
class TaskEnv:
    """What a task needs from whoever runs it (a stream thread, or the test driver)."""

    application_id: str
    topology: Topology
    send: Callable[..., None]  # Producer.send's signature
    clock: Any
    state_dir: Path | None
    default_store: str
    cache_max_entries: int
    deserialization_handler: DeserializationHandler
    topic_names: TopicNames
    partitions_of: Callable[[str], int]  # a sink topic's partition count, for custom partitioners
    #: For sources without their own extractor; None: the log timestamp (negative ones are an error).
    default_timestamp_extractor: TimestampExtractor | None = None
    #: Producer.send_batch's signature, for changelog flushes (None: ``send`` per record).
    send_batch: Callable[..., None] | None = None
    #: Producer.send_records' signature, for a window's final results (None: ``send`` per record).
    send_records: Callable[..., None] | None = None
    processing_handler: ErrorHandler = field(default_factory=LogAndFail)  # a processor raised (KIP-1033)
    production_handler: ErrorHandler = field(default_factory=LogAndFail)  # the log refused an output record
    #: The instance's global tables' stores, by name (``streams/global_table.py``): readable by every task.
    global_stores: Mapping[str, Any] = field(default_factory=dict)
    #: processing_guarantee="exactly_once_v2": the checkpoint is written only at a clean close.
    exactly_once: bool = False
    #: Outputs to leave out on a replay (dropped by the production handler after a late delivery failure).
    output_skips: OutputSkips | None = None
    #: How often left/outer joins and emit-final windowed aggregations scan for final results
    #: (``streams/emit_throttle.py``; the test driver sets both to 0).
    emit_intervals: EmitIntervals = field(default_factory=EmitIntervals)


#: What a sink's ``windowed_sender`` takes: rows of (key bytes, value, timestamp), sent in one call.
WindowedSender = Callable[[Iterable[tuple[bytes, Any, int]]], None]
# One output of a ``windowed_sender``: key bytes, value bytes, timestamp.
_Output = tuple[bytes, bytes | None, int]

# Send errors that concern the producer or the log, not the record: never the production handler's to skip.
_NOT_RECORD_ERRORS = (ProducerFencedError, TransactionError, LogTimeoutError, StorageError, UnknownTopicError)


# Serdes whose bytes depend on the value alone (not the topic): one of them writes a key as another instance does.
_BUILT_INS = (StringSerde, BytesSerde, IntSerde, FloatSerde, JsonSerde)


class _SourceProcessor(Processor):
    def process(self, key: Any, value: Any) -> None:
        self._forward(key, value)

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self._forward = context.forwarder()


class _SinkProcessor(Processor):
    def __init__(
        self,
        node: SinkNode,
        topic: str,
        key_serde: Any,
        value_serde: Any,
        env: TaskEnv,
        rc: RecordContext,
        task: StreamTask,
    ) -> None:
        self._task = task
        self._skips = env.output_skips or None  # only a replay after a dropped output has any
        self.node = node
        self.topic = topic
        self._key_serde = key_serde
        self._value_serde = value_serde
        self._kser = bind_serializer(key_serde, topic, True)
        self._vser = bind_serializer(value_serde, topic, False)
        self._send = env.send
        self._rc = rc
        self._partitioner = node.partitioner
        self._drop_null_keys = node.drop_null_keys
        self._partitions = env.partitions_of(topic) if node.partitioner is not None else 0
        self._send_records = env.send_records or partial(send_each, env.send)

    def windowed_sender(self, inner_key_serde: Any) -> WindowedSender | None:
        """``send(rows)``, rows of ``(key_bytes, value, timestamp)``: what ``process`` does for each, with a
        time-windowed key whose bytes the caller already holds, the inner key's bytes by ``inner_key_serde`` and
        the 8-byte window start (a window store's key bytes and the window's start: final results emitted
        straight from the store, with no ``Windowed`` key or ``Change`` per record), handed to the producer in
        one call (``Producer.send_records``: its checks once, not per record). None unless those are the bytes
        this sink writes: no partitioner of its own (each record lands where ``process`` would send it, by its
        key), a ``TimeWindowedSerde`` key serde over ``inner_key_serde`` itself or the same built-in
        (topic-independent) serde. The headers are the record context's, as ``process`` sends them."""
        serde = self._key_serde
        if self._partitioner is not None or type(serde) is not TimeWindowedSerde:
            return None
        inner = serde.inner
        if inner is not inner_key_serde and not (type(inner) is type(inner_key_serde) and type(inner) in _BUILT_INS):
            return None
        vser, topic, skips, task, rc = self._vser, self.topic, self._skips, self._task, self._rc

        def send_windowed(rows: Iterable[tuple[bytes, Any, int]]) -> None:
            records: list[_Output] = []
            append = records.append
            try:
                for kb, value, timestamp in rows:
                    try:
                        vb = vser(value)
                    except Exception as exc:
                        raise self._value_error(value, exc) from exc
                    if skips is not None and skips.take(topic, kb, vb):
                        task.skipped_output(topic)
                        continue
                    append((kb, vb, timestamp))
            finally:
                # The rows serialized before a failure are sent before it is raised, as record by record.
                if records:
                    self._send_all(records, rc.headers)

        return send_windowed

    def _send_all(self, records: list[_Output], headers: Headers) -> None:
        """``records`` in one ``send_records`` call; one the log refuses goes to the production handler, as in
        ``process``, and the records after it are sent on."""
        topic, send_records = self.topic, self._send_records
        while records:
            try:
                send_records(topic, records, headers=headers or None)
                return
            except _NOT_RECORD_ERRORS:
                raise
            except BatchSendError as exc:
                index, error = exc.index, exc.error
            except LogError as exc:  # before any record was sent (e.g. a closed producer): the first one's
                index, error = 0, exc
            if isinstance(error, _NOT_RECORD_ERRORS):
                raise error
            kb, vb, timestamp = records[index]
            self._task.production_error(Record(topic, -1, -1, kb, vb, timestamp, headers), error)
            records = records[index + 1 :]

    def _value_error(self, value: Any, exc: Exception) -> SerdeError:
        return SerdeError(
            f"sink {self.node.name!r} to topic {self.topic!r}: cannot serialize value {value!r:.80} "
            f"({type(value).__name__}) with {serde_name(self._value_serde)}; pass value=... : {exc}"
        )

    def process(self, key: Any, value: Any) -> None:
        if key is None and self._drop_null_keys:
            return  # a repartition with no join downstream that could use it (KIP-962), as Kafka's filter
        try:
            kb = self._kser(key)
        except Exception as exc:
            raise SerdeError(
                f"sink {self.node.name!r} to topic {self.topic!r}: cannot serialize key {key!r} "
                f"({type(key).__name__}) with {serde_name(self._key_serde)}; pass key=... to to()/group_by(): {exc}"
            ) from exc
        try:
            vb = self._vser(value)
        except Exception as exc:
            raise self._value_error(value, exc) from exc
        rc = self._rc
        partition = None
        if self._partitioner is not None:
            partition = self._partitioner(key, value, self._partitions)
        if self._skips is not None and self._skips.take(self.topic, kb, vb):
            self._task.skipped_output(self.topic)
            return
        try:
            self._send(self.topic, vb, kb, partition=partition, timestamp=rc.timestamp, headers=rc.headers or None)
        except _NOT_RECORD_ERRORS:
            raise
        except LogError as exc:
            out = Record(self.topic, -1 if partition is None else partition, -1, kb, vb, rc.timestamp, rc.headers)
            self._task.production_error(out, exc)


class _Input:
    """One input partition of the task: its deserializers, timestamp extractor, entry processor and position."""

    __slots__ = ("committed", "extractor", "forward", "kde", "next_offset", "partition_time", "tp", "vde")

    def __init__(
        self, tp: TopicPartition, source: _SourceProcessor, kde: Any, vde: Any, extractor: TimestampExtractor | None
    ) -> None:
        self.tp = tp
        self.kde = kde
        self.vde = vde
        self.extractor = extractor
        self.forward: Callable[[Any, Any], None] = source.process
        self.next_offset: int | None = None
        self.committed: int | None = None
        self.partition_time = -1  # the largest extracted timestamp (kept only with an extractor)


class StreamTask:
    def __init__(self, sub: SubTopology, partition: int, env: TaskEnv) -> None:
        self.sub = sub
        self.partition = partition
        self.id = f"{sub.id}_{partition}"
        self.env = env
        self.application_id = env.application_id
        self.clock = env.clock
        self.record_context = RecordContext()
        self.stream_time = -1
        self.dropped_records = 0
        self.commit_requested = False
        self.closed = False
        # For metrics: records processed, the time they took (the stream thread measures it), records skipped.
        self.processed = 0
        self.process_seconds = 0.0
        self.dropped = 0
        self.dropped_reasons: dict[str, int] = {}  # the same, per reason ("deserialization_error", ...)
        self.task_dir = env.state_dir / env.application_id / self.id if env.state_dir is not None else None
        self._stream_puncts: list[Cancellable] = []
        self.wall_puncts: list[Cancellable] = []
        self.stores: dict[str, StateStore] = {}
        self.global_stores = env.global_stores
        self.emit_intervals = env.emit_intervals
        self.processors: dict[str, Processor] = {}
        self._inputs: dict[str, _Input] = {}
        self._initialized = False
        try:
            for name in sub.stores:
                self.stores[name] = self._create_store(env.topology.stores[name])
            self._build()
        except BaseException:
            for store in self.stores.values():
                store.close()
            raise

    # -- construction ----------------------------------------------------------------------------------

    def _create_store(self, spec: StoreSpec) -> StateStore:
        topology = self.env.topology
        key, value = topology.key_serde(spec.key), topology.value_serde(spec.value)
        topic = self.env.topic_names.changelog(spec.name)
        kind = spec.kind or self.env.default_store
        rc = self.record_context
        path = None if kind == "memory" or self.task_dir is None else self.task_dir / "rocksdb" / spec.name
        max_cache = self.env.cache_max_entries
        store: StateStore
        if isinstance(spec, WindowStoreSpec):
            store = WindowStore(
                spec.name,
                key,
                value,
                topic,
                rc,
                spec.retention_ms,
                path,
                max_cache,
                window_size_ms=spec.window_size_ms,
                retain_duplicates=spec.retain_duplicates,
            )
        elif isinstance(spec, SessionStoreSpec):
            store = SessionStore(spec.name, key, value, topic, rc, spec.retention_ms, path, max_cache)
        elif isinstance(spec, SuppressionBufferSpec):
            store = SuppressionBuffer(spec.name, key, value, topic, rc, spec.count_bytes)
        elif isinstance(spec, JoinBufferSpec):
            store = TimeOrderedBuffer(spec.name, key, value, topic, rc)
        elif isinstance(spec, VersionedStoreSpec):
            versioned = VersionedKeyValueStore(
                spec.name, key, value, topic, rc, spec.history_retention_ms, path, spec.segment_interval_ms
            )
            versioned.on_expired = self._expired_put  # Kafka counts them in the task's dropped-records
            store = versioned
        else:
            kv: CachingKeyValueStore
            if spec.timestamped:
                value = TimestampedSerde(value)
            if path is None:
                kv = InMemoryKeyValueStore(spec.name, key, value, topic, rc)
            else:
                from streams.state.rocksdb import RocksDBKeyValueStore  # rocksdict is the [streams] extra

                kv = RocksDBKeyValueStore(spec.name, key, value, topic, rc, path=path, max_cache_entries=max_cache)
            kv.timestamped = spec.timestamped
            store = kv
        if spec.logged:
            store.changelog = ChangelogWriter(self.env.send, topic, self.partition, self.env.send_batch)
        return store

    def _expired_put(self) -> None:
        self.dropped_records += 1

    def _build(self) -> None:
        env, topology = self.env, self.env.topology
        rc = self.record_context
        for node in self.sub.nodes:
            if isinstance(node, SourceNode):
                self.processors[node.name] = _SourceProcessor()
            elif isinstance(node, SinkNode):
                topic = env.topic_names.topic(node.topic, node.internal)
                key, value = topology.key_serde(node.key), topology.value_serde(node.value)
                self.processors[node.name] = _SinkProcessor(node, topic, key, value, env, rc, self)
            else:
                assert isinstance(node, ProcessorNode) and node.supplier is not None
                proc = node.supplier()
                if not isinstance(proc, Processor):
                    raise TopologyError(
                        f"the supplier of processor {node.name!r} returned {type(proc).__name__}, not a Processor"
                    )
                self.processors[node.name] = proc
        for node in self.sub.sources:
            key, value = topology.key_serde(node.key), topology.value_serde(node.value)
            source = self.processors[node.name]
            assert isinstance(source, _SourceProcessor)
            extractor = node.timestamp_extractor or env.default_timestamp_extractor
            if isinstance(extractor, WallclockTimestampExtractor):
                extractor = self._wall_clock_timestamp  # the task's clock (the test driver's is simulated)
            for t in node.topics:
                topic = env.topic_names.topic(t, node.internal)
                tp = TopicPartition(topic, self.partition)
                self._inputs[topic] = _Input(
                    tp, source, bind_deserializer(key, topic, True), bind_deserializer(value, topic, False), extractor
                )

    def init_processors(self) -> None:
        """Initialize processors (after the stores are restored), parents first. A restored task resumes
        at the stream time its stores recorded at the last commit."""
        for store in self.stores.values():
            if store.stream_time > self.stream_time:
                self.stream_time = store.stream_time
        for node in self.sub.nodes:
            children = [self.processors[c] for c in node.children]
            stores = frozenset(node.stores) if isinstance(node, ProcessorNode) else frozenset()
            ctx = ProcessorContext(self, node.name, children, list(node.children), stores)
            try:
                self.processors[node.name].init(ctx)
            except StreamsError:
                raise
            except Exception as exc:
                raise ProcessingError(f"task {self.id}: init of processor {node.name!r} failed: {exc}") from exc
        self._initialized = True

    # -- identity --------------------------------------------------------------------------------------

    @property
    def input_partitions(self) -> list[TopicPartition]:
        return [inp.tp for inp in self._inputs.values()]

    def input_positions(self) -> dict[TopicPartition, int | None]:
        """Each input partition's next offset to process (None: nothing committed or processed yet, so from
        the beginning). Read from other threads (``app.input_lags``): a slightly old value is fine there."""
        return {inp.tp: inp.next_offset for inp in list(self._inputs.values())}

    def set_committed(self, committed: dict[TopicPartition, int | None]) -> None:
        for inp in self._inputs.values():
            c = committed.get(inp.tp)
            inp.committed = c
            inp.next_offset = c

    # -- processing ------------------------------------------------------------------------------------

    def process(self, rec: Record) -> None:
        """Process one consumed record (``process_run`` of a run of one)."""
        self.process_run(runs_of((rec,))[0])

    def process_run(self, run: RecordColumns) -> None:
        """Process a run of consumed records of one input partition, in order (what the stream thread polls: no
        ``Record`` per message, the input's look-ups once per run)."""
        topic, partition = run.topic, run.partition
        inp = self._inputs[topic]
        kde, vde, forward, extractor = inp.kde, inp.vde, inp.forward, inp.extractor
        rc = self.record_context
        headers = run.headers if run.headers is not None else [()] * len(run.offsets)
        for offset, kb, vb, record_ts, hs in zip(
            run.offsets, run.keys, run.values, run.timestamps, headers, strict=True
        ):
            inp.next_offset = offset + 1
            try:
                key = kde(kb)
            except Exception as exc:
                self._deserialization_error(Record(topic, partition, offset, kb, vb, record_ts, hs), True, exc)
                continue
            try:
                value = vde(vb)
            except Exception as exc:
                self._deserialization_error(Record(topic, partition, offset, kb, vb, record_ts, hs), False, exc)
                continue
            ts = record_ts
            if extractor is not None:
                ts = self._extract(inp, Record(topic, partition, offset, kb, vb, record_ts, hs), key, value)
                if ts < 0:
                    continue
            elif ts < 0:
                raise StreamsError(
                    f"task {self.id}: the record at {topic}[{partition}] offset {offset} has the invalid "
                    f"timestamp {ts}: give the source a timestamp extractor that handles it (streams.extractors)"
                )
            # (every field, every record: a punctuation or a processor may have changed them)
            rc.topic = topic
            rc.partition = partition
            rc.offset = offset
            rc.timestamp = ts
            rc.headers = hs
            if ts > self.stream_time:
                self.stream_time = ts
            try:
                forward(key, value)
            except StreamsError:
                raise
            except Exception as exc:
                self._processing_error(Record(topic, partition, offset, kb, vb, record_ts, hs), exc)
            if self._stream_puncts:
                self._punctuate_stream()

    def _wall_clock_timestamp(self, record: ConsumedRecord, partition_time: int) -> int:
        return self.clock.now_ms()

    def _extract(self, inp: _Input, rec: Record, key: Any, value: Any) -> int:
        """The record's timestamp from the source's extractor; negative: the record is dropped."""
        assert inp.extractor is not None
        consumed = ConsumedRecord(rec.topic, rec.partition, rec.offset, rec.timestamp, key, value, rec.headers)
        try:
            ts = inp.extractor(consumed, inp.partition_time)
        except StreamsError:
            raise
        except Exception as exc:
            raise ProcessingError(
                f"task {self.id}: the timestamp extractor failed on the record at "
                f"{rec.topic}[{rec.partition}] offset {rec.offset}: {exc}"
            ) from exc
        if isinstance(ts, bool) or not isinstance(ts, int):
            raise ProcessingError(
                f"task {self.id}: the timestamp extractor returned {ts!r} for the record at "
                f"{rec.topic}[{rec.partition}] offset {rec.offset}; it must return int milliseconds"
            )
        if ts < 0:
            log.warning(
                "task %s: dropping the record at %s[%d] offset %d: negative extracted timestamp %d",
                self.id,
                rec.topic,
                rec.partition,
                rec.offset,
                ts,
            )
            self.dropped_records += 1
        elif ts > inp.partition_time:
            inp.partition_time = ts
        return ts

    def _deserialization_error(self, rec: Record, is_key: bool, exc: Exception) -> None:
        error = DeserializationError(rec.topic, rec.partition, rec.offset, is_key, exc)
        if not self.env.deserialization_handler.handle(rec, error, self.env.send):
            raise error from exc
        self._drop("deserialization_error")

    def _processing_error(self, rec: Record, exc: Exception) -> None:
        """A processor raised on ``rec``: the processing handler stops the task or lets it go on."""
        error = ProcessingError(
            f"task {self.id}: processing the record at {rec.topic}[{rec.partition}] offset {rec.offset} "
            f"failed: {type(exc).__name__}: {exc}",
            topic=rec.topic,
            partition=rec.partition,
            offset=rec.offset,
        )
        error.__cause__ = exc
        self._ask(self.env.processing_handler, rec, error, "processing_error")

    def production_error(self, out: Record, exc: LogError) -> None:
        """The log refused ``out``, an output of the current record: the production handler decides."""
        rc = self.record_context
        error = ProductionError(self.id, out.topic, rc.topic, rc.partition, rc.offset, exc)
        error.__cause__ = exc
        self._ask(self.env.production_handler, out, error, "production_error")

    def decide_late_failures(self, failures: list[tuple[Record, LogError]], skips: OutputSkips) -> bool:
        """The task's transaction failed and ``failures`` are the deliveries the log failed after the send.
        For each output it refused (not a failure of the producer or the log itself) the production handler
        decides: "fail" raises its ``ProductionError`` (the application stops); "continue" puts the output
        in ``skips``, for the replay from the last commit to leave out (and count then). Returns whether
        there was any such output."""
        refused = [(out, exc) for out, exc in failures if not isinstance(exc, _NOT_RECORD_ERRORS)]
        # Which input record an output came from is not known here (successful sends carry no callback,
        # which keeps them cheap): the error names the input range of the failed transaction instead.
        inputs = ", ".join(
            f"{inp.tp.topic}[{inp.tp.partition}] from offset {inp.committed or 0}" for inp in self._inputs.values()
        )
        for out, exc in refused:
            error = ProductionError(
                self.id, out.topic, None, -1, -1, exc, sink_partition=out.partition, source=f"the records at {inputs}"
            )
            error.__cause__ = exc
            self._decide(self.env.production_handler, out, error, "production_error")
            log.warning(
                "task %s: dropping an output to %s[%d] the log refused: %s", self.id, out.topic, out.partition, exc
            )
            skips.add(out.topic, out.key, out.value)
        return bool(refused)

    def skipped_output(self, topic: str) -> None:
        """The replay left out an output the production handler dropped: count it."""
        log.info("task %s: the replay left out the output to %s that the production handler dropped", self.id, topic)
        self._drop("production_error")

    def _ask(self, handler: ErrorHandler, record: Record | None, error: StreamsError, reason: str) -> None:
        """Raise ``error`` unless ``handler`` says to go on (then count the record as dropped)."""
        self._decide(handler, record, error, reason)
        self._drop(reason)

    def _decide(self, handler: ErrorHandler, record: Record | None, error: StreamsError, reason: str) -> None:
        """Raise ``error`` unless ``handler`` says to go on; a handler that itself raises stops the task too."""
        try:
            go_on = handler.handle(record, error, self.env.send)
        except StreamsError:
            raise  # e.g. the task was fenced while sending to the dead-letter topic
        except Exception as exc:
            error.add_note(f"then the {reason.replace('_', ' ')} handler raised {type(exc).__name__}: {exc}")
            raise error from exc
        if not go_on:
            raise error

    def _drop(self, reason: str) -> None:
        self.dropped += 1
        self.dropped_reasons[reason] = self.dropped_reasons.get(reason, 0) + 1

    # -- punctuation -----------------------------------------------------------------------------------

    def schedule(self, c: Cancellable) -> Cancellable:
        if c.type is PunctuationType.STREAM_TIME:
            self._stream_puncts.append(c)
        else:
            c.next_ms = self.clock.now_ms() + c.interval_ms
            self.wall_puncts.append(c)
        return c

    def _punctuate_stream(self) -> None:
        now = self.stream_time
        for c in list(self._stream_puncts):
            if c.cancelled:
                self._stream_puncts.remove(c)
            elif c.due(now):
                self._run_punctuation(c, now)

    def punctuate_wall_clock(self, now: int) -> None:
        for c in list(self.wall_puncts):
            if c.cancelled:
                self.wall_puncts.remove(c)
            elif c.due(now):
                self._run_punctuation(c, now)

    def _run_punctuation(self, c: Cancellable, now: int) -> None:
        rc = self.record_context
        rc.topic, rc.partition, rc.offset, rc.timestamp, rc.headers = None, -1, -1, now, ()
        try:
            c.callback(now)
        except StreamsError:
            raise
        except Exception as exc:
            error = ProcessingError(f"task {self.id}: {c.type.value} punctuation at {now} failed: {exc}")
            error.__cause__ = exc
            self._ask(self.env.processing_handler, None, error, "processing_error")  # no record: Kafka's null

    # -- commit protocol -------------------------------------------------------------------------------

    def flush(self) -> None:
        """Flush every store's cache (changelog + downstream), upstream stores first."""
        if not self.stores:
            return
        headers = source_header(
            [
                (inp.tp.topic, inp.tp.partition, inp.next_offset if inp.next_offset is not None else -1)
                for inp in self._inputs.values()
            ]
        )
        for store in self.stores.values():
            store.stream_time = self.stream_time  # time-keeping stores write it with their changes
            if store.dirty_count:
                store.flush(headers)

    def offsets_to_commit(self) -> dict[TopicPartition, int]:
        return {
            inp.tp: inp.next_offset
            for inp in self._inputs.values()
            if inp.next_offset is not None and inp.next_offset != inp.committed
        }

    def committed(self, offsets: dict[TopicPartition, int]) -> None:
        """The offsets were committed: persist local state, then record how far it reaches (at-least-once;
        exactly-once records it only at a clean close, so that a crash leaves no checkpoint to trust)."""
        for inp in self._inputs.values():
            if inp.tp in offsets:
                inp.committed = offsets[inp.tp]
        persisted = False
        for store in self.stores.values():
            if store.persist():
                persisted = True
        if persisted and not self.env.exactly_once:
            self.write_checkpoint()

    def write_checkpoint(self) -> None:
        if self.task_dir is None:
            return
        offsets = {}
        for store in self.stores.values():
            if store.persistent and store.changelog is not None and store.changelog.written_offset is not None:
                offsets[checkpoint_key(store.changelog.topic, store.changelog.partition)] = (
                    store.changelog.written_offset
                )
        if offsets:
            write_checkpoint(self.task_dir, offsets)

    def close(self, clean: bool) -> None:
        """Close processors and stores. ``clean``: the caller committed, so the local state is persisted."""
        if self.closed:
            return
        self.closed = True
        if clean and self.env.exactly_once and self._initialized:
            self.write_checkpoint()
        if self._initialized:
            for name, proc in self.processors.items():
                try:
                    proc.close()
                except Exception:
                    log.exception("task %s: close of processor %r failed", self.id, name)
        for store in self.stores.values():
            if not clean:
                store.discard_pending()
            try:
                store.close()
            except Exception:
                log.exception("task %s: close of store %r failed", self.id, store.name)

    def __repr__(self) -> str:
        return f"StreamTask({self.id})"
