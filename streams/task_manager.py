"""The task manager of one stream thread: turns assigned partitions into tasks, restores their stores,
suspends tasks on revocation (eager rebalances revoke everything) and closes those not assigned back."""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from streams.changelog import RestoreJob, checkpoint_key, read_checkpoint
from streams.errors import StreamsError
from streams.log.base import TopicPartition
from streams.task import StreamTask

if TYPE_CHECKING:
    from streams.stream_thread import StreamThread

__all__ = ["TaskManager"]

log = logging.getLogger("streams.task_manager")


class TaskManager:
    def __init__(self, thread: StreamThread) -> None:
        self.thread = thread
        self.app = thread.app
        self.tasks: dict[str, StreamTask] = {}
        self.suspended: dict[str, StreamTask] = {}
        self.by_topic: dict[str, dict[int, StreamTask]] = {}

    @property
    def wall_clock_tasks(self) -> list[StreamTask]:
        """Tasks with wall-clock punctuators (a processor may schedule one at any time)."""
        return [t for t in self.tasks.values() if t.wall_puncts]

    def _index(self) -> None:
        by_topic: dict[str, dict[int, StreamTask]] = {}
        for task in self.tasks.values():
            for tp in task.input_partitions:
                by_topic.setdefault(tp.topic, {})[tp.partition] = task
        self.by_topic = by_topic

    def task_ids(self, partitions: list[TopicPartition]) -> dict[str, tuple[int, int]]:
        ids: dict[str, tuple[int, int]] = {}
        for tp in partitions:
            sub = self.app.metadata.sub_of_topic.get(tp.topic)
            if sub is None:
                log.warning("ignoring assigned partition %s[%d]: no sub-topology reads it", tp.topic, tp.partition)
                continue
            ids[f"{sub}_{tp.partition}"] = (sub, tp.partition)
        return ids

    def assign(self, partitions: list[TopicPartition]) -> None:
        """Partitions were assigned: resume or create their tasks (restoring stores) and close the
        suspended tasks that did not come back."""
        wanted = self.task_ids(partitions)
        for task_id in list(self.suspended):
            if task_id not in wanted:
                task = self.suspended.pop(task_id)
                log.info("closing task %s: it moved to another member", task_id)
                task.close(clean=True)
        new: list[StreamTask] = []
        for task_id, (sub, partition) in sorted(wanted.items()):
            if task_id in self.tasks:
                continue
            if task_id in self.suspended:
                task = self.suspended.pop(task_id)
                task.suspended = False
                self.tasks[task_id] = task
                continue
            try:
                new.append(StreamTask(self.app.metadata.sub_topologies[sub], partition, self.thread.task_env))
            except BaseException:
                for task in new:
                    task.close(clean=False)
                raise
        if new:
            try:
                self._initialize(new)
            except BaseException:
                for task in new:
                    task.close(clean=False)
                raise
            # Visible (to commits, queries and metrics) only once restored and initialized.
            for task in new:
                self.tasks[task.id] = task
        self._index()
        self.app._tasks_changed()
        log.info("thread %s runs tasks %s", self.thread.name, sorted(self.tasks))

    def _initialize(self, tasks: list[StreamTask]) -> None:
        inputs = [tp for task in tasks for tp in task.input_partitions]
        committed = self.thread.committed(inputs)
        jobs: list[RestoreJob] = []
        for task in tasks:
            task.set_committed(committed)
            task_committed = {(tp.topic, tp.partition): committed.get(tp) for tp in task.input_partitions}
            checkpoint = read_checkpoint(task.task_dir) if task.task_dir is not None else {}
            for store in task.stores.values():
                if store.changelog is None:
                    continue
                tp = TopicPartition(store.changelog.topic, store.changelog.partition)
                start = checkpoint.get(checkpoint_key(tp.topic, tp.partition)) if store.persistent else None
                if start is None:
                    if store.persistent:
                        store.wipe()  # local data of unknown age: rebuild it from the changelog
                    start = 0
                jobs.append(RestoreJob(task.id, store, tp, start, task_committed))
        started = time.monotonic()
        self.thread.reader.restore(jobs)
        self.app._record_restore_time(time.monotonic() - started)
        for job in jobs:
            self.app._record_restore(job.task_id, job.store.name, job.restored)
        for task in tasks:
            task.write_checkpoint()
            task.init_processors()

    def revoke(self, partitions: list[TopicPartition], commit: bool = True) -> None:
        """Partitions are being taken away: commit everything, then suspend the tasks that lost them."""
        revoked = self.task_ids(partitions)
        if not revoked:
            return
        clean = True
        if commit:
            try:
                self.thread.commit()
            except StreamsError:
                raise
            except Exception as exc:
                # The partitions were lost (e.g. the session expired): their offsets cannot be committed;
                # the new owner redoes the work since the last commit.
                log.warning("commit during revocation failed (%s); closing revoked tasks without committing", exc)
                clean = False
        for task_id in revoked:
            task = self.tasks.pop(task_id, None)
            if task is None:
                continue
            if clean:
                task.suspended = True
                self.suspended[task_id] = task
            else:
                task.close(clean=False)
        self._index()
        self.app._tasks_changed()

    def close_all(self, clean: bool) -> None:
        for task in [*self.tasks.values(), *self.suspended.values()]:
            try:
                task.close(clean=clean)
            except Exception:
                log.exception("closing task %s failed", task.id)
        self.tasks.clear()
        self.suspended.clear()
        self._index()
        self.app._tasks_changed()

    def commit_requested(self) -> bool:
        return any(t.commit_requested for t in self.tasks.values())
