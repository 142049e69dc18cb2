"""A stream thread: one consumer (a member of the application's group), one producer, a restore consumer,
and the tasks the group gave it (kept by its ``TaskManager``). Loop: poll a batch, hand each record to its
task, punctuate, and have the task manager commit every ``commit_interval_ms`` (flush stores -> flush
producer -> commit offsets -> persist). The owner creates the clients and hears back through the
listeners it passes in."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from streams.changelog import ChangelogReader
from streams.config import StreamsConfig
from streams.listeners import RestoreListener, TaskListener, ThreadListener
from streams.log.base import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from streams.metadata import Metadata
from streams.task import TaskEnv
from streams.task_manager import TaskManager

__all__ = ["StreamThread"]

log = logging.getLogger("streams.thread")


class StreamThread(threading.Thread):
    """Runs the tasks of ``consumer``'s share of the group, or, with ``static_partitions``, of exactly those
    partitions (a log without group membership). The thread owns and closes the clients it is given;
    ``restore_consumer`` makes the consumer that restores stores, on the first restore that reads.
    ``linger_s``: how often to flush a producer that only writes on flush (None: it sends by itself)."""

    def __init__(
        self,
        name: str,
        config: StreamsConfig,
        *,
        producer: Producer,
        consumer: Consumer,
        restore_consumer: Callable[[], Consumer],
        task_env: TaskEnv,
        metadata: Metadata,
        listener: ThreadListener,
        task_listener: TaskListener,
        restore_listener: RestoreListener,
        static_partitions: list[TopicPartition] | None = None,
        linger_s: float | None = None,
    ) -> None:
        super().__init__(name=name, daemon=True)
        self._config = config
        self._producer = producer
        self._consumer = consumer
        self._reader = ChangelogReader(producer, restore_consumer, restore_listener, config.restore_batch)
        self._clock = task_env.clock
        self._source_topics = metadata.source_topics
        self._listener = listener
        self._static_partitions = static_partitions
        self._linger_s = linger_s
        self.tasks = TaskManager(name, metadata, task_env, producer, consumer, self._reader, task_listener)
        self.processed = 0
        self._stop_event = threading.Event()
        self._failed = False
        self._pending_assign: list[TopicPartition] | None = None

    @property
    def commits(self) -> int:
        return self.tasks.commits

    @property
    def restore_seconds(self) -> float:
        return self._reader.restore_seconds

    # -- lifecycle -------------------------------------------------------------------------------------

    def shutdown(self) -> None:
        self._stop_event.set()

    def run(self) -> None:
        try:
            self._run()
        except BaseException as exc:
            self._failed = True
            log.error("stream thread %s failed: %s", self.name, exc, exc_info=True)
            self.tasks.close_all(clean=False)
            self._listener.on_thread_failed(self.name, exc)
        finally:
            self.close_clients()

    def close_clients(self) -> None:
        """Close the consumers and the producer: when the thread ends, or by the owner of a thread that
        never started."""
        for closer in (self._consumer, self._reader, self._producer):
            try:
                closer.close()
            except Exception as exc:
                log.warning("stream thread %s: closing %s failed: %s", self.name, type(closer).__name__, exc)

    def _run(self) -> None:
        config = self._config
        consumer, tasks, clock, producer = self._consumer, self.tasks, self._clock, self._producer
        if self._static_partitions is not None:
            static = self._static_partitions
            tasks.assign(static)
            committed = consumer.committed(static)
            consumer.assign({tp: OFFSET_BEGINNING if (offset := committed[tp]) is None else offset for tp in static})
        else:
            consumer.subscribe(self._source_topics, on_assign=self._on_assign, on_revoke=self._on_revoke)
        poll_timeout = config.poll_timeout_ms / 1000
        max_records = config.max_poll_records
        interval = config.commit_interval_ms / 1000
        next_commit = time.monotonic() + interval
        progress_at = time.monotonic() + config.progress_interval_s
        progress_count = 0
        # A producer that writes only on flush (SQLite's) is flushed every linger period, so repartitioned
        # records reach the next sub-topology without waiting for the commit (librdkafka sends by itself).
        linger = self._linger_s
        next_flush = time.monotonic()
        unflushed = False
        while not self._stop_event.is_set():
            records = consumer.poll(poll_timeout, max_records)
            if self._pending_assign is not None:
                assigned, self._pending_assign = self._pending_assign, None
                tasks.assign(assigned)
            if records:
                by_topic = tasks.by_topic
                for rec in records:
                    partitions = by_topic.get(rec.topic)
                    task = partitions.get(rec.partition) if partitions is not None else None
                    if task is not None:
                        task.process(rec)
                self.processed += len(records)
                unflushed = True
            wall_clock_tasks = tasks.wall_clock_tasks
            if wall_clock_tasks:
                now_ms = clock.now_ms()
                for task in wall_clock_tasks:
                    task.punctuate_wall_clock(now_ms)
            now = time.monotonic()
            if linger is not None and unflushed and now >= next_flush:
                producer.flush()
                next_flush = now + linger
                unflushed = False
            if now >= next_commit or tasks.commit_requested():
                tasks.commit()
                next_commit = now + interval
            if now >= progress_at:
                rate = (self.processed - progress_count) / max(config.progress_interval_s, 1e-9)
                log.info("thread %s: %d records processed (%.0f/s), tasks %s", self.name, self.processed,
                         rate, tasks.task_ids())  # fmt: skip
                progress_count = self.processed
                progress_at = now + config.progress_interval_s
        tasks.commit()
        tasks.close_all(clean=True)
        log.info("thread %s stopped after %d records", self.name, self.processed)

    # -- group callbacks (run inside consumer.poll) ------------------------------------------------------

    def _on_assign(self, partitions: list[TopicPartition]) -> None:
        pending = self._pending_assign or []
        self._pending_assign = pending + [tp for tp in partitions if tp not in pending]

    def _on_revoke(self, partitions: list[TopicPartition]) -> None:
        if self._pending_assign is not None:
            self._pending_assign = [tp for tp in self._pending_assign if tp not in partitions]
        if self._failed:
            return
        self.tasks.revoke(partitions)
