"""The task manager of one stream thread: turns assigned partitions into tasks, restores their stores,
commits them, suspends tasks on revocation (eager rebalances revoke everything) and closes those not
assigned back. It reports every change of its task set to a ``TaskListener``."""

from __future__ import annotations

import logging

from streams.changelog import ChangelogReader, RestoreJob, checkpoint_key, read_checkpoint
from streams.errors import StreamsError
from streams.listeners import TaskListener
from streams.log.base import Consumer, Producer, TopicPartition
from streams.metadata import Metadata
from streams.task import StreamTask, TaskEnv

__all__ = ["TaskManager"]

log = logging.getLogger("streams.task_manager")


class TaskManager:
    """The tasks of the thread ``thread_name``. ``consumer`` is the thread's group member (its committed
    offsets are where tasks start and what a commit writes); ``producer`` is what the tasks send through."""

    def __init__(
        self,
        thread_name: str,
        metadata: Metadata,
        env: TaskEnv,
        producer: Producer,
        consumer: Consumer,
        reader: ChangelogReader,
        listener: TaskListener,
    ) -> None:
        self._thread_name = thread_name
        self._metadata = metadata
        self._env = env
        self._producer = producer
        self._consumer = consumer
        self._reader = reader
        self._listener = listener
        self._active: dict[str, StreamTask] = {}
        self._suspended: dict[str, StreamTask] = {}
        #: topic -> partition -> the active task reading it: the thread's per-record look-up.
        self.by_topic: dict[str, dict[int, StreamTask]] = {}
        self.commits = 0

    # -- what runs -------------------------------------------------------------------------------------

    def task_ids(self) -> list[str]:
        """Ids of the active tasks (restored and running), sorted."""
        return sorted(list(self._active))

    def active_tasks(self) -> list[StreamTask]:
        """The active tasks; safe to call from other threads (interactive queries)."""
        return list(self._active.values())

    @property
    def wall_clock_tasks(self) -> list[StreamTask]:
        """Tasks with wall-clock punctuators (a processor may schedule one at any time)."""
        return [t for t in self._active.values() if t.wall_puncts]

    def commit_requested(self) -> bool:
        return any(t.commit_requested for t in self._active.values())

    def _index(self) -> None:
        by_topic: dict[str, dict[int, StreamTask]] = {}
        for task in self._active.values():
            for tp in task.input_partitions:
                by_topic.setdefault(tp.topic, {})[tp.partition] = task
        self.by_topic = by_topic

    def _tasks_of(self, partitions: list[TopicPartition]) -> dict[str, tuple[int, int]]:
        """Task id -> (sub-topology, partition) of the tasks that read ``partitions``."""
        ids: dict[str, tuple[int, int]] = {}
        for tp in partitions:
            sub = self._metadata.sub_of_topic.get(tp.topic)
            if sub is None:
                log.warning("ignoring assigned partition %s[%d]: no sub-topology reads it", tp.topic, tp.partition)
                continue
            ids[f"{sub}_{tp.partition}"] = (sub, tp.partition)
        return ids

    # -- rebalances ------------------------------------------------------------------------------------

    def assign(self, partitions: list[TopicPartition]) -> None:
        """Partitions were assigned: resume or create their tasks (restoring stores) and close the
        suspended tasks that did not come back."""
        wanted = self._tasks_of(partitions)
        for task_id in list(self._suspended):
            if task_id not in wanted:
                task = self._suspended.pop(task_id)
                log.info("closing task %s: it moved to another member", task_id)
                task.close(clean=True)
        new: list[StreamTask] = []
        for task_id, (sub, partition) in sorted(wanted.items()):
            if task_id in self._active:
                continue
            if task_id in self._suspended:
                self._active[task_id] = self._suspended.pop(task_id)
                continue
            try:
                new.append(StreamTask(self._metadata.sub_topologies[sub], partition, self._env))
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
                self._active[task.id] = task
        self._index()
        self._listener.on_tasks_changed()
        log.info("thread %s runs tasks %s", self._thread_name, self.task_ids())

    def _initialize(self, tasks: list[StreamTask]) -> None:
        inputs = [tp for task in tasks for tp in task.input_partitions]
        committed = self._consumer.committed(inputs) if inputs else {}
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
        self._reader.restore(jobs)
        for task in tasks:
            task.write_checkpoint()
            task.init_processors()

    def revoke(self, partitions: list[TopicPartition]) -> None:
        """Partitions are being taken away: commit everything, then suspend the tasks that lost them."""
        revoked = self._tasks_of(partitions)
        if not revoked:
            return
        clean = True
        try:
            self.commit()
        except StreamsError:
            raise
        except Exception as exc:
            # The partitions were lost (e.g. the session expired): their offsets cannot be committed;
            # the new owner redoes the work since the last commit.
            log.warning("commit during revocation failed (%s); closing revoked tasks without committing", exc)
            clean = False
        for task_id in revoked:
            task = self._active.pop(task_id, None)
            if task is None:
                continue
            if clean:
                self._suspended[task_id] = task
            else:
                task.close(clean=False)
        self._index()
        self._listener.on_tasks_changed()

    # -- commit and close ------------------------------------------------------------------------------

    def commit(self) -> None:
        """Flush stores (changelog + downstream), make every sent record durable, commit the input
        offsets, then persist local state and checkpoints."""
        tasks = list(self._active.values())
        if not tasks:
            return
        for task in tasks:
            task.flush()
        self._producer.flush()
        per_task = []
        offsets: dict[TopicPartition, int] = {}
        for task in tasks:
            task_offsets = task.offsets_to_commit()
            offsets.update(task_offsets)
            per_task.append((task, task_offsets))
        if offsets:
            self._consumer.commit(offsets)
        for task, task_offsets in per_task:
            task.commit_requested = False
            task.committed(task_offsets)
        self.commits += 1

    def close_all(self, clean: bool) -> None:
        """Close every task, active or suspended; ``clean``: they were just committed."""
        for task in [*self._active.values(), *self._suspended.values()]:
            try:
                task.close(clean=clean)
            except Exception:
                log.exception("closing task %s failed", task.id)
        self._active.clear()
        self._suspended.clear()
        self._index()
        self._listener.on_tasks_changed()
