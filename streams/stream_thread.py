"""A stream thread: one consumer (a member of the application's group), one producer, a restore
consumer, and the tasks the group gave it. Loop: poll a batch, hand each record to its task, punctuate,
and commit every ``commit_interval_ms`` (flush stores -> flush producer -> commit offsets -> persist)."""

from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING

from streams.changelog import ChangelogReader
from streams.log.base import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from streams.task import TaskEnv
from streams.task_manager import TaskManager

if TYPE_CHECKING:
    from streams.app import StreamsApp

__all__ = ["StreamThread"]

log = logging.getLogger("streams.thread")


class StreamThread(threading.Thread):
    def __init__(self, app: StreamsApp, index: int, static_partitions: list[TopicPartition] | None) -> None:
        super().__init__(name=f"{app.application_id}-StreamThread-{index}", daemon=True)
        self.app = app
        self.index = index
        self.static_partitions = static_partitions
        self.error: BaseException | None = None
        self.processed = 0
        self.commits = 0
        self._stop_event = threading.Event()
        self._failed = False
        self._pending_assign: list[TopicPartition] | None = None
        self.consumer: Consumer | None = None
        self.producer: Producer | None = None
        self.reader: ChangelogReader | None = None  # type: ignore[assignment]
        self.task_env: TaskEnv | None = None  # type: ignore[assignment]
        self.tasks = TaskManager(self)

    # -- lifecycle -------------------------------------------------------------------------------------

    def shutdown(self) -> None:
        self._stop_event.set()

    def run(self) -> None:
        try:
            self._run()
        except BaseException as exc:
            self._failed = True
            self.error = exc
            log.error("stream thread %s failed: %s", self.name, exc, exc_info=True)
            self.tasks.close_all(clean=False)
            self.app._thread_failed(self, exc)
        finally:
            self._release()

    def _release(self) -> None:
        for closer in (self.consumer, self.reader, self.producer):
            if closer is None:
                continue
            try:
                closer.close()
            except Exception as exc:
                log.warning("stream thread %s: closing %s failed: %s", self.name, type(closer).__name__, exc)

    def _run(self) -> None:
        app = self.app
        config = app.config
        self.producer = app.log.producer()
        self.task_env = app._task_env(self.producer.send)
        self.reader = ChangelogReader(
            self.producer, lambda: app.log.consumer(None, client_id=f"{self.name}-restore"), config.restore_batch
        )
        self.consumer = app.log.consumer(app.application_id, client_id=self.name)
        if self.static_partitions is not None:
            self.tasks.assign(self.static_partitions)
            committed = self.consumer.committed(self.static_partitions)
            self.consumer.assign({tp: OFFSET_BEGINNING if committed[tp] is None else committed[tp]
                                  for tp in self.static_partitions})  # fmt: skip
        else:
            self.consumer.subscribe(app.metadata.source_topics, on_assign=self._on_assign, on_revoke=self._on_revoke)
        poll_timeout = config.poll_timeout_ms / 1000
        max_records = config.max_poll_records
        interval = config.commit_interval_ms / 1000
        next_commit = time.monotonic() + interval
        progress_at = time.monotonic() + config.progress_interval_s
        progress_count = 0
        consumer, tasks, clock = self.consumer, self.tasks, app.clock
        # A producer that writes only on flush (SQLite's) is flushed every linger period, so repartitioned
        # records reach the next sub-topology without waiting for the commit (librdkafka sends by itself).
        linger = config.linger_ms / 1000 if app.log.capabilities.buffers_until_flush else None
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
                self.producer.flush()
                next_flush = now + linger
                unflushed = False
            if now >= next_commit or tasks.commit_requested():
                self.commit()
                next_commit = now + interval
            if now >= progress_at:
                rate = (self.processed - progress_count) / max(config.progress_interval_s, 1e-9)
                log.info("thread %s: %d records processed (%.0f/s), tasks %s", self.name, self.processed,
                         rate, sorted(tasks.tasks))  # fmt: skip
                progress_count = self.processed
                progress_at = now + config.progress_interval_s
        self.commit()
        self.tasks.close_all(clean=True)
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

    # -- commit ----------------------------------------------------------------------------------------

    def committed(self, partitions: list[TopicPartition]) -> dict[TopicPartition, int | None]:
        assert self.consumer is not None
        return self.consumer.committed(partitions) if partitions else {}

    def commit(self) -> None:
        """Flush stores (changelog + downstream), make every sent record durable, commit the input
        offsets, then persist local state and checkpoints."""
        assert self.consumer is not None and self.producer is not None
        tasks = list(self.tasks.tasks.values())
        if not tasks:
            return
        for task in tasks:
            task.flush()
        self.producer.flush()
        per_task = []
        offsets: dict[TopicPartition, int] = {}
        for task in tasks:
            task_offsets = task.offsets_to_commit()
            offsets.update(task_offsets)
            per_task.append((task, task_offsets))
        if offsets:
            self.consumer.commit(offsets)
        for task, task_offsets in per_task:
            task.commit_requested = False
            task.committed(task_offsets)
        self.commits += 1
