"""The fence around one active task: everything the task writes goes through a transactional producer
whose transactional id names the task (``<application_id>-task-<task_id>``).

Why per task: input consumers use ``assign()`` (the group leader assigns tasks, not the consumer group),
so offset commits carry no group generation and the broker cannot tell a zombie's commit from the owner's.
Instead, a new owner calls ``init_transactions`` with the task's id before it restores or processes
anything, which fences the previous owner at the log (Kafka: the broker rejects its produce requests and
transaction calls; SQLite: its epoch no longer matches, so its commit writes nothing). A zombie (an
instance paused past the session timeout) therefore cannot produce, write a changelog or commit offsets
for a task it lost; it learns so with ``TaskMigratedError`` and closes the task. This is Kafka Streams'
exactly-once "alpha" producer-per-task; both guarantees use the same fence:

- Transactions begin lazily with the first record; ``commit`` ends one with the task's input offsets
  (``send_offsets_to_transaction``), so changelog records and offsets land together.
- Under at-least-once, consumers read uncommitted records (Kafka), so outputs move on as soon as they
  are sent; on a log that writes only at commit (SQLite), ``flush_records`` commits the records sent so
  far every linger period, without offsets.
- Restore barriers are written through the same producer, after it has fenced the previous owner.
- Under ``processing_guarantee="exactly_once_v2"`` consumers read committed records only and nothing is
  flushed between commits, so a commit interval's outputs, changelog records and input offsets become
  visible together or never (SQLite: one SQLite transaction per task commit).

Why ``exactly_once_v2`` keeps one producer per task rather than KIP-447's one per thread: KIP-447 lets a
thread's producer (``transactional.id`` from the thread) commit for any task because the broker checks
the consumer group metadata passed to ``send_offsets_to_transaction``: a zombie's generation is stale,
so its offset commit is refused and its transaction cannot commit. Our input consumers use ``assign()``
and the group leader here, not the broker's group coordinator, hands out tasks; the group generation the
broker sees never changes when a task moves, so it cannot refuse a zombie thread's commit, and a new
owner's thread producer has a different transactional id and cannot fence it either. Only a
transactional id that follows the task fences exactly the previous owner of that task, so the fence
stays per task; the cost is one producer (and, on Kafka, one transaction coordinator round trip) per
task instead of per thread.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence

from streams.errors import TaskCorruptedError, TaskMigratedError
from streams.log.base import (
    DeliveryCallback,
    HeaderPairs,
    KeyedRecord,
    Log,
    LogError,
    Producer,
    ProducerFencedError,
    Record,
    RecordMetadata,
    TopicPartition,
    TransactionError,
)

__all__ = ["TaskProducer", "transactional_id_for"]

log = logging.getLogger("streams.task_producer")


# Send errors that end the task's transaction rather than concern one record: e.g. librdkafka refuses every
# send once a produce request of the open transaction was fenced (a zombie woken up mid-transaction).
_PRODUCER_ERRORS = (ProducerFencedError, TransactionError)


def transactional_id_for(application_id: str, task_id: str) -> str:
    return f"{application_id}-task-{task_id}"


class TaskProducer:
    """The writes of task ``task_id``; its offsets are committed for consumer group ``group``."""

    def __init__(self, log_backend: Log, application_id: str, task_id: str) -> None:
        self._log = log_backend
        self.task_id = task_id
        self.group = application_id
        self.transactional_id = transactional_id_for(application_id, task_id)
        self._producer: Producer | None = None
        self._prepared: Producer | None = None
        self.open = False  # a transaction is open (records or offsets pending)
        self.fenced = False
        #: Deliveries of the open transaction that failed after the send (the log's listener reports them):
        #: the transaction cannot commit; the task manager asks the production handler about them.
        self.late_failures: list[tuple[Record, LogError]] = []

    # -- lifecycle -------------------------------------------------------------------------------------

    def prepare(self) -> None:
        """Create the producer ahead of ``activate`` (a standby's, so that taking over does not wait for
        the client to connect); it fences nobody until activated."""
        if self._prepared is None and self._producer is None:
            self._prepared = self._log.producer(self.transactional_id)

    def activate(self) -> None:
        """Register the task's transactional id, fencing every earlier owner's producer."""
        if self._producer is not None:
            return
        producer, self._prepared = self._prepared or self._log.producer(self.transactional_id), None
        try:
            producer.init_transactions()
        except BaseException as exc:
            _close_quietly(producer)
            raise self._error(exc, "init_transactions") from exc
        producer.on_delivery_failure = self._delivery_failed
        self._producer = producer

    def _delivery_failed(self, record: Record, error: LogError) -> None:
        self.late_failures.append((record, error))

    @property
    def active(self) -> bool:
        return self._producer is not None and not self.fenced

    def close(self, wait: bool = True) -> None:
        """Give the producer up; an open transaction is aborted (by the next owner's fence at the latest).
        ``wait=False``: abort and close off the calling thread, for a task that is lost or rolls back, whose
        next producer fences this one anyway."""
        if self._prepared is not None:
            _close_quietly(self._prepared)
            self._prepared = None
        producer, self._producer = self._producer, None
        if producer is None:
            return
        abort, self.open = self.open and not self.fenced, False
        if wait and not self.fenced:
            _abort_and_close(producer, abort, self.task_id)
            return
        # Off the stream thread: a fenced Kafka producer may wait out its timeout on close, and so may a lost
        # task's abort (a zombie's, on a broker that does not answer its EndTxn: the test broker held a woken
        # zombie's stream thread 30 s per task, and the group's rebalance with it).
        threading.Thread(
            target=_abort_and_close, args=(producer, abort, self.task_id), name="task-producer-close", daemon=True
        ).start()

    # -- writing ---------------------------------------------------------------------------------------

    def _error(self, exc: BaseException, what: str) -> Exception:
        if isinstance(exc, ProducerFencedError):
            self.fenced = True
            return TaskMigratedError(self.task_id, f"{what}: {exc}")
        return TaskCorruptedError(self.task_id, f"{what}: {exc}")

    def _begin(self) -> Producer:
        producer = self._producer
        if producer is None:
            raise TaskMigratedError(self.task_id, "the task's producer is not active (the task was closed)")
        try:
            producer.begin_transaction()
        except (LogError, RuntimeError) as exc:
            raise self._error(exc, "begin_transaction") from exc
        self.open = True
        self.late_failures.clear()
        return producer

    def send(
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
        """``Producer.send`` inside the task's transaction (begun on the first record)."""
        producer = self._producer if self.open else self._begin()
        assert producer is not None
        try:
            producer.send(
                topic, value, key, partition=partition, headers=headers, timestamp=timestamp, on_delivery=on_delivery
            )
        except _PRODUCER_ERRORS as exc:
            raise self._error(exc, f"send to {topic!r}") from exc

    def send_batch(
        self,
        topic: str,
        partition: int,
        records: Sequence[tuple[bytes | None, bytes | None]],
        *,
        headers: HeaderPairs | None = None,
        on_last_delivery: DeliveryCallback | None = None,
    ) -> None:
        """``Producer.send_batch`` inside the task's transaction (a store's changelog flush)."""
        producer = self._producer if self.open else self._begin()
        assert producer is not None
        try:
            producer.send_batch(topic, partition, records, headers=headers, on_last_delivery=on_last_delivery)
        except _PRODUCER_ERRORS as exc:
            raise self._error(exc, f"send to {topic!r}") from exc

    def send_records(self, topic: str, records: Sequence[KeyedRecord], *, headers: HeaderPairs | None = None) -> None:
        """``Producer.send_records`` inside the task's transaction (a window's final results)."""
        producer = self._producer if self.open else self._begin()
        assert producer is not None
        try:
            producer.send_records(topic, records, headers=headers)
        except _PRODUCER_ERRORS as exc:
            raise self._error(exc, f"send to {topic!r}") from exc

    def commit(self, offsets: dict[TopicPartition, int]) -> None:
        """End the open transaction with the task's input ``offsets`` (next offsets to read), or commit
        just the offsets; nothing to do when neither is pending."""
        if not offsets and not self.open:
            return
        producer = self._producer if self.open else self._begin()
        assert producer is not None
        try:
            if offsets:
                producer.send_offsets_to_transaction(self.group, offsets)
            producer.commit_transaction()
        except (LogError, RuntimeError) as exc:
            self.open = False
            raise self._error(exc, "commit") from exc
        self.open = False

    def flush_records(self) -> None:
        """Make the records sent so far visible (a log that writes only at commit), without offsets."""
        if self.open:
            self.commit({})

    def write_barriers(self, barriers: list[tuple[TopicPartition, bytes, HeaderPairs]]) -> dict[TopicPartition, int]:
        """Write one ``(partition, key, headers)`` tombstone per changelog partition in a transaction of
        their own; returns the offset each landed at."""
        landed: dict[TopicPartition, int] = {}
        for tp, key, headers in barriers:

            def done(md: RecordMetadata | None, err: LogError | None, tp: TopicPartition = tp) -> None:
                if md is not None:
                    landed[tp] = md.offset

            self.send(tp.topic, None, key, partition=tp.partition, headers=headers, on_delivery=done)
        self.commit({})
        missing = [tp for tp, _, _ in barriers if tp not in landed]
        if missing:
            raise TaskCorruptedError(self.task_id, f"no offset reported for the restore barrier of {missing}")
        return landed


def _abort_and_close(producer: Producer, abort: bool, task_id: str) -> None:
    if abort:
        try:
            producer.abort_transaction()
        except LogError as exc:
            log.debug("task %s: abort on close failed: %s", task_id, exc)
    _close_quietly(producer)


def _close_quietly(producer: Producer) -> None:
    try:
        producer.close()
    except Exception as exc:
        log.debug("closing a task producer: %s", exc)
