"""The task manager of one stream thread: applies the thread's share of an assignment (active tasks and
standby/warm-up replicas), restores and commits active tasks, and reports every change to a
``TaskListener``.

Applying an assignment is cooperative: only tasks that leave this thread stop. A leaving active task is
flushed, committed, checkpointed and closed (``on_revoked`` then tells the group leader, which gives it
to its new owner only after that); a standby that becomes active is promoted in place and restores only
the changelog tail it had not applied; a new active task fences its previous owner (``TaskProducer``)
before it reads the committed offsets and writes its restore barriers.

Each active task writes through its own ``TaskProducer``. A task whose writes are fenced (a newer owner
took it) or whose commit fails is closed without committing and reported with ``on_task_lost``; the
thread keeps running its other tasks. Its local state rolls back with it: persistent stores hold only
committed changes (they are written after the commit), caches and in-memory stores are dropped, and
the next owner restores from the changelog up to the barrier.

A transaction that fails because the log refused an output after it was sent (a late delivery failure,
e.g. a record above the topic's ``max.message.bytes``) goes to the production exception handler instead:
"fail" stops the thread with its ``ProductionError``; "continue" rolls the task back here, in place (closed
without committing, then restored and restarted from its committed offsets at the next commit point), and
the replay leaves out the dropped outputs (``streams/output_skips.py``).

Under exactly-once (``TaskEnv.exactly_once``) a starting task removes its checkpoint and only a clean
close writes it again, so a crashed instance wipes its persistent stores and restores them; a failing
thread aborts its tasks' open transactions instead of flushing them.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from streams.changelog import (
    BARRIER_KEY,
    ChangelogReader,
    RestoreJob,
    barrier_headers,
    checkpoint_key,
    read_checkpoint,
    remove_checkpoint,
)
from streams.errors import StreamsError, TaskCorruptedError, TaskMigratedError
from streams.listeners import TaskListener, TaskState
from streams.log.base import OFFSET_BEGINNING, Consumer, HeaderPairs, Log, TopicPartition
from streams.metadata import Metadata
from streams.output_skips import OutputSkips
from streams.standby import StandbyTask, StandbyUpdater
from streams.state.base import StateStore
from streams.task import StreamTask, TaskEnv
from streams.task_producer import TaskProducer

__all__ = ["TaskManager"]

log = logging.getLogger("streams.task_manager")

# Replays in a row that met none of the refused outputs they were to leave out, before the thread stops: a
# deterministic replay meets them all again (the same inputs give the same outputs), so one is a fluke at most.
MAX_FUTILE_REPLAYS = 3

LostTask = (TaskMigratedError, TaskCorruptedError)
_T = TypeVar("_T")


class TaskManager:
    """The tasks of the thread ``thread_name``. ``consumer`` reads the active tasks' input partitions
    (assigned here) and knows the group's committed offsets; ``standbys`` tails the replicas' changelogs."""

    def __init__(
        self,
        thread_name: str,
        metadata: Metadata,
        env: TaskEnv,
        log_backend: Log,
        consumer: Consumer,
        reader: ChangelogReader,
        standbys: StandbyUpdater,
        listener: TaskListener,
        expelled: Callable[[], bool] = lambda: False,
    ) -> None:
        """``expelled``: whether the group presumed this instance dead (``lose_all`` is on its way): the
        commits still to do are given up, each could wait out the log's timeout for a fenced transaction."""
        self._thread_name = thread_name
        self._metadata = metadata
        self._env = env
        self._log = log_backend
        self._consumer = consumer
        self._reader = reader
        self._standbys = standbys
        self._listener = listener
        self._expelled = expelled
        self._active: dict[str, StreamTask] = {}
        self._producers: dict[str, TaskProducer] = {}  # of every task here, active or replica
        self._states: dict[str, str] = {}
        self._assigned: set[TopicPartition] = set()  # what the consumer reads
        self._starts: dict[TopicPartition, int] = {}  # where new tasks' inputs start (committed offsets)
        #: topic -> partition -> the active task reading it: the thread's per-record look-up.
        self.by_topic: dict[str, dict[int, StreamTask]] = {}
        self._skips: dict[str, OutputSkips] = {}  # per active task: outputs its replay leaves out
        self._restarting: list[str] = []  # tasks rolled back after a late production error, to start again
        self.commits = 0
        self.lost = 0

    # -- what runs -------------------------------------------------------------------------------------

    def task_ids(self) -> list[str]:
        """Ids of the active tasks (restored and running), sorted."""
        return sorted(list(self._active))

    def active_tasks(self) -> list[StreamTask]:
        """The active tasks; safe to call from other threads (interactive queries)."""
        return list(self._active.values())

    def standby_tasks(self) -> list[StreamTask]:
        """The standby and warm-up replicas' tasks (stores open, never processing); safe from other threads."""
        return [standby.task for standby in list(self._standbys.tasks.values())]

    def states(self) -> dict[str, str]:
        """Task id -> ``TaskState`` of every task on this thread."""
        return dict(self._states)

    def positions(self) -> dict[str, int]:
        """Task id -> how far its local state reaches in its changelogs (sum of offsets): the written offsets
        of active tasks, the applied offsets of replicas. Safe from other threads."""
        out: dict[str, int] = {}
        for task_id, task in list(self._active.items()):
            out[task_id] = sum(
                store.changelog.written_offset or 0 for store in task.stores.values() if store.changelog is not None
            )
        for task_id, standby in list(self._standbys.tasks.items()):
            out[task_id] = standby.position()
        return out

    @property
    def wall_clock_tasks(self) -> list[StreamTask]:
        """Tasks with wall-clock punctuators (a processor may schedule one at any time)."""
        return [t for t in self._active.values() if t.wall_puncts]

    def commit_requested(self) -> bool:
        return bool(self._restarting) or any(t.commit_requested for t in self._active.values())

    def _set_state(self, task_id: str, state: str) -> None:
        old = self._states.get(task_id, TaskState.CLOSED)
        if old == state:
            return
        if state == TaskState.CLOSED:
            self._states.pop(task_id, None)
        else:
            self._states[task_id] = state
        self._listener.on_task_state_change(task_id, old, state)

    def _index(self) -> None:
        by_topic: dict[str, dict[int, StreamTask]] = {}
        for task in self._active.values():
            for tp in task.input_partitions:
                by_topic.setdefault(tp.topic, {})[tp.partition] = task
        self.by_topic = by_topic

    def _reassign_consumer(self) -> None:
        """Read exactly the active tasks' inputs: kept partitions from where they are, new ones from their
        committed offsets."""
        wanted = {tp for task in self._active.values() for tp in task.input_partitions}
        if wanted == self._assigned:
            return
        positions = {
            tp: self._consumer.position(tp) if tp in self._assigned else self._starts.pop(tp, OFFSET_BEGINNING)
            for tp in wanted
        }
        self._consumer.assign(positions)
        self._assigned = wanted

    def _new_task(self, task_id: str) -> StreamTask:
        sub, _, partition = task_id.partition("_")
        producer = TaskProducer(self._log, self._env.application_id, task_id)
        skips = self._skips.setdefault(task_id, OutputSkips())
        env = dataclasses.replace(
            self._env,
            send=producer.send,
            send_batch=producer.send_batch,
            send_records=producer.send_records,
            output_skips=skips,
        )
        task = StreamTask(self._metadata.sub_topologies[int(sub)], int(partition), env)
        self._producers[task_id] = producer
        return task

    # -- assignments -----------------------------------------------------------------------------------

    def apply(self, generation: int, active: set[str], replicas: dict[str, str]) -> None:
        """Make this thread run ``active`` and hold ``replicas`` (task -> ``STANDBY``/``WARMUP``)."""
        leaving = [t for t in self._active if t not in active]
        if leaving:
            log.info("thread %s: handing over task(s) %s", self._thread_name, leaving)
            self.commit([self._active[t] for t in leaving])
            for task_id in leaving:
                task = self._active.pop(task_id, None)
                if task is not None:  # (a task lost while committing is gone already)
                    task.close(clean=True)
                    self._producers.pop(task_id).close()
                    self._set_state(task_id, TaskState.CLOSED)
                self._skips.pop(task_id, None)
            self._index()
            self._reassign_consumer()
        # Tasks rolled back after a late production error (also while handing over, just above): those
        # still ours start below as new active tasks, the others are gone.
        self._forget_restarts(keep=active)
        for task_id in list(self._standbys.tasks):
            if task_id not in replicas and task_id not in active:
                standby = self._standbys.remove(task_id)
                assert standby is not None
                standby.close()
                self._producers.pop(task_id).close()
                self._set_state(task_id, TaskState.CLOSED)
        self._listener.on_revoked(self._thread_name, generation)

        for task_id, role in sorted(replicas.items()):
            if task_id in self._active:
                continue
            standby = self._standbys.tasks.get(task_id)
            if standby is None:
                task = self._new_task(task_id)
                checkpoint = read_checkpoint(task.task_dir) if task.task_dir is not None else {}
                standby = StandbyTask(task, role, checkpoint)
                self._standbys.add(standby)
                self._producers[task_id].prepare()
            standby.role = role
            self._set_state(task_id, role)

        new: list[tuple[StreamTask, dict[TopicPartition, int] | None]] = []
        for task_id in sorted(active - set(self._active)):
            standby = self._standbys.remove(task_id)
            if standby is not None:
                new.append((standby.task, standby.starts()))
            else:
                new.append((self._new_task(task_id), None))
        if new:
            self._initialize(new)
        self._index()
        self._reassign_consumer()
        self._listener.on_tasks_changed()
        log.info(
            "thread %s: generation %d, active %s, replicas %s",
            self._thread_name,
            generation,
            self.task_ids(),
            sorted(self._standbys.tasks),
        )

    def _initialize(self, new: list[tuple[StreamTask, dict[TopicPartition, int] | None]]) -> None:
        """Fence, then restore up to the barriers, then start. ``starts``: where a promoted replica got to."""
        for task, _ in new:
            self._set_state(task.id, TaskState.RESTORING)
        phases = _Phases()
        lost: dict[str, BaseException] = {}
        for (task, _), error in _each(new, lambda entry: self._producers[entry[0].id].activate()):
            lost[task.id] = error
        phases.done("fence")
        started = [(task, starts) for task, starts in new if task.id not in lost]
        inputs = [tp for task, _ in started for tp in task.input_partitions]
        # Read after the fence: the previous owner can no longer commit.
        committed = self._consumer.committed(inputs) if inputs else {}
        phases.done("committed offsets")
        jobs: list[RestoreJob] = []
        barriers: dict[str, list[tuple[TopicPartition, bytes, HeaderPairs]]] = {}
        for task, starts in started:
            task.set_committed(committed)
            for tp in task.input_partitions:
                offset = committed.get(tp)
                self._starts[tp] = OFFSET_BEGINNING if offset is None else offset
            task_committed = {(tp.topic, tp.partition): committed.get(tp) for tp in task.input_partitions}
            checkpoint = read_checkpoint(task.task_dir) if task.task_dir is not None and starts is None else {}
            if self._env.exactly_once and task.task_dir is not None:
                remove_checkpoint(task.task_dir)  # until a clean close: a crash then restores from scratch
            for store in task.stores.values():
                if store.changelog is None:
                    continue
                tp = TopicPartition(store.changelog.topic, store.changelog.partition)
                start = starts.get(tp, 0) if starts is not None else self._checkpointed_start(store, tp, checkpoint)
                jobs.append(RestoreJob(task.id, store, tp, start, task_committed))
                barriers.setdefault(task.id, []).append((tp, BARRIER_KEY, barrier_headers(task_committed)))
        by_id = {task.id: task for task, _ in started}
        landed: dict[str, dict[TopicPartition, int]] = {}

        def write(task_id: str) -> None:
            landed[task_id] = self._producers[task_id].write_barriers(barriers[task_id])

        for task_id, error in _each(sorted(barriers), write):
            lost[task_id] = error
        phases.done("barriers")
        jobs = [job for job in jobs if job.task_id not in lost]
        for job in jobs:
            job.end = landed[job.task_id][job.tp]
        self._reader.restore(jobs)
        phases.done(f"restore of {sum(job.restored for job in jobs)} records")
        for task_id, task in by_id.items():
            if task_id in lost:
                continue
            if not self._env.exactly_once:
                task.write_checkpoint()
            task.init_processors()
            self._active[task_id] = task
            self._set_state(task_id, TaskState.RUNNING)
        for task, _ in new:
            if task.id in lost:
                self._drop(task, lost[task.id])
        log.info("thread %s: started task(s) %s in %s", self._thread_name, sorted(by_id), phases)

    @staticmethod
    def _checkpointed_start(store: StateStore, tp: TopicPartition, checkpoint: dict[str, int]) -> int:
        """Where a store's restore starts: its checkpoint, else (no checkpoint, or not persistent) zero."""
        start = checkpoint.get(checkpoint_key(tp.topic, tp.partition)) if store.persistent else None
        if start is None:
            if store.persistent:
                store.wipe()  # local data of unknown age: rebuild it from the changelog
            start = 0
        return start

    # -- commit and close ------------------------------------------------------------------------------

    def commit(self, tasks: Sequence[StreamTask] | None = None) -> None:
        """Per task: flush its stores (changelog + downstream), then commit its transaction with its input
        offsets, then persist local state and the checkpoint. Standbys checkpoint how far they got."""
        if self._restarting and tasks is None:
            self._restart_pending()
        tasks = list(self._active.values()) if tasks is None else list(tasks)
        lost: list[tuple[StreamTask, BaseException]] = []
        done: list[tuple[StreamTask, dict[TopicPartition, int]]] = []
        for task in tasks:
            if self._expelled():
                break
            try:
                task.flush()
                offsets = task.offsets_to_commit()
                self._producers[task.id].commit(offsets)
            except LostTask as exc:
                lost.append((task, exc))
                continue
            done.append((task, offsets))
        for task, offsets in done:
            task.commit_requested = False
            task.committed(offsets)
            skips = self._skips.get(task.id)
            if skips is not None and offsets:
                skips.committed()
        if tasks:
            self.commits += 1
        for standby in list(self._standbys.tasks.values()):
            standby.checkpoint()
        for task, error in lost:
            self._failed(task, error)

    def flush_records(self) -> None:
        """Make what the tasks sent so far visible (a log that writes only at commit)."""
        for task in list(self._active.values()):
            try:
                self._producers[task.id].flush_records()
            except LostTask as exc:
                self._failed(task, exc)

    def lose(self, task: StreamTask, error: BaseException) -> None:
        """``task`` was fenced or failed to commit while processing: close it without committing."""
        self._failed(task, error)

    def _failed(self, task: StreamTask, error: BaseException) -> None:
        """``task``'s transaction cannot commit. When the log refused outputs after they were sent, the
        production handler decides (raising ``ProductionError`` for "fail"); otherwise the task is lost."""
        producer = self._producers.get(task.id)
        failures = producer.late_failures if producer is not None else []
        skips = self._skips.setdefault(task.id, OutputSkips())
        skips.rolled_back()  # whatever happens, the task replays from its last commit
        if isinstance(error, TaskMigratedError) or not failures or not task.decide_late_failures(failures, skips):
            self._lose(task, error)
            return
        if skips.futile_replays >= MAX_FUTILE_REPLAYS:
            # Each replay met refused outputs it had not met before and none it was to leave out: the topology
            # does not reproduce its outputs (e.g. values from the wall clock or a random number), so leaving
            # out the dropped ones cannot converge.
            out, exc = failures[-1]
            raise StreamsError(
                f"task {task.id}: {skips.futile_replays} replays in a row after the log refused outputs (the last to "
                f"topic {out.topic!r}: {exc}) met none of the outputs the production handler dropped: the "
                "topology does not reproduce its outputs on replay (is it deterministic?)"
            ) from exc
        if self._active.pop(task.id, None) is None:
            return
        log.warning(
            "thread %s: task %s rolls back to its last commit and replays without the dropped output(s)",
            self._thread_name,
            task.id,
        )
        task.close(clean=False)
        producer = self._producers.pop(task.id, None)
        if producer is not None:
            producer.close(wait=False)  # aborts the transaction (the next producer's fence would too)
        self._set_state(task.id, TaskState.RESTORING)
        self._restarting.append(task.id)
        self._index()
        self._reassign_consumer()  # stop reading its partitions until it restarts at the committed offsets

    def _forget_restarts(self, keep: set[str] | frozenset[str] = frozenset()) -> None:
        for task_id in self._restarting:
            if task_id not in keep:
                self._set_state(task_id, TaskState.CLOSED)
        self._restarting.clear()

    def _restart_pending(self) -> None:
        """Start again, from their committed offsets and changelogs, the tasks rolled back by ``_failed``."""
        ids, self._restarting = self._restarting, []
        self._initialize([(self._new_task(task_id), None) for task_id in ids])
        self._index()
        self._reassign_consumer()
        self._listener.on_tasks_changed()

    def _lose(self, task: StreamTask, error: BaseException) -> None:
        if self._active.pop(task.id, None) is None:
            return
        log.warning("thread %s: %s", self._thread_name, error)
        self._drop(task, error)
        self._index()
        self._reassign_consumer()
        self._listener.on_tasks_changed()

    def _drop(self, task: StreamTask, error: BaseException) -> None:
        task.close(clean=False)
        producer = self._producers.pop(task.id, None)
        if producer is not None:
            producer.close(wait=False)
        self._set_state(task.id, TaskState.CLOSED)
        self.lost += 1
        self._listener.on_task_lost(self._thread_name, task.id, error)

    def lose_all(self, reason: str) -> None:
        """This instance was presumed dead by the group: close every active task without committing (its
        new owner has fenced it, or will)."""
        self._forget_restarts()
        for task in list(self._active.values()):
            self._lose(task, TaskMigratedError(task.id, reason))

    def close_all(self, clean: bool) -> None:
        """Close every task, active or replica; ``clean``: commit the active ones first. Otherwise (the
        thread failed) records already sent still go out, without offsets: at-least-once redoes their input;
        exactly-once aborts them (closing the producer aborts its open transaction)."""
        self._forget_restarts()
        if clean:
            try:
                self.commit()
            except Exception:
                log.exception("thread %s: the final commit failed", self._thread_name)
                clean = False
        if not clean and not self._env.exactly_once:
            for task_id in list(self._active):
                try:
                    self._producers[task_id].flush_records()
                except Exception as exc:
                    log.debug("task %s: records sent before the failure were not written: %s", task_id, exc)
        for task in list(self._active.values()):
            try:
                task.close(clean=clean)
            except Exception:
                log.exception("closing task %s failed", task.id)
            self._set_state(task.id, TaskState.CLOSED)
        for task_id in list(self._standbys.tasks):
            standby = self._standbys.remove(task_id)
            if standby is not None:
                try:
                    standby.close()
                except Exception:
                    log.exception("closing standby %s failed", task_id)
                self._set_state(task_id, TaskState.CLOSED)
        for producer in self._producers.values():
            producer.close()
        self._producers.clear()
        self._active.clear()
        self._index()
        self._listener.on_tasks_changed()


class _Phases:
    """How long each step of starting tasks took, for the log line."""

    def __init__(self) -> None:
        self._start = self._last = time.monotonic()
        self._parts: list[str] = []

    def done(self, what: str) -> None:
        now = time.monotonic()
        self._parts.append(f"{what} {now - self._last:.3f}s")
        self._last = now

    def __str__(self) -> str:
        return f"{time.monotonic() - self._start:.3f}s ({', '.join(self._parts)})"


def _each(items: Sequence[_T], call: Callable[[_T], None]) -> list[tuple[_T, BaseException]]:
    """Run ``call`` on every item, side by side (each waits on the log), and return the items whose call
    raised a lost-task error; any other error is raised."""
    failed: list[tuple[_T, BaseException]] = []

    def run(item: _T) -> BaseException | None:
        try:
            call(item)
        except LostTask as exc:
            return exc
        return None

    if len(items) <= 1:
        results = [run(item) for item in items]
    else:
        with ThreadPoolExecutor(max_workers=min(8, len(items)), thread_name_prefix="task-init") as pool:
            results = list(pool.map(run, items))
    for item, error in zip(items, results, strict=True):
        if error is not None:
            failed.append((item, error))
    return failed
