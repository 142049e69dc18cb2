"""A stream thread: one consumer reading its active tasks' input partitions (``assign``, no consumer
group: the group leader assigns tasks), a restore consumer, a consumer tailing its standby replicas'
changelogs, and the tasks kept by its ``TaskManager``, each writing through its own fenced producer.

Loop: apply the newest assignment handed in (``assign``), poll a batch and hand each record to its task,
apply a batch of standby changelog records, punctuate, and have the task manager commit every
``commit_interval_ms``. A task fenced or failing to commit is closed and reported; the others go on. The
owner creates the clients and hears back through the listeners it passes in.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from streams.changelog import ChangelogReader
from streams.config import StreamsConfig
from streams.listeners import RestoreListener, TaskListener, ThreadListener
from streams.log.base import Consumer, Log
from streams.metadata import Metadata
from streams.standby import StandbyUpdater
from streams.task import TaskEnv
from streams.task_manager import LostTask, TaskManager

__all__ = ["StreamThread"]

log = logging.getLogger("streams.thread")


class StreamThread(threading.Thread):
    """Runs the tasks it is given with ``assign``. The thread owns and closes the consumers it is given;
    ``restore_consumer``/``standby_consumer`` make consumers on first use. ``linger_s``: how often to make
    sent records visible on a log that writes only at commit (None: the log sends by itself)."""

    def __init__(
        self,
        name: str,
        config: StreamsConfig,
        *,
        log_backend: Log,
        consumer: Consumer,
        restore_consumer: Callable[[], Consumer],
        standby_consumer: Callable[[], Consumer],
        task_env: TaskEnv,
        metadata: Metadata,
        listener: ThreadListener,
        task_listener: TaskListener,
        restore_listener: RestoreListener,
        linger_s: float | None = None,
    ) -> None:
        super().__init__(name=name, daemon=True)
        self._config = config
        self._consumer = consumer
        self._reader = ChangelogReader(None, restore_consumer, restore_listener, config.restore_batch)
        self._standbys = StandbyUpdater(
            standby_consumer,
            consumer.committed,
            config.restore_batch,
            confirm_interval=min(config.commit_interval_ms / 2000, 1.0),
        )
        self._clock = task_env.clock
        self._listener = listener
        self._linger_s = linger_s
        self.tasks = TaskManager(
            name,
            metadata,
            task_env,
            log_backend,
            consumer,
            self._reader,
            self._standbys,
            task_listener,
            expelled=lambda: self._lose_reason is not None,
        )
        self.processed = 0
        self.commit_seconds = 0.0  # spent in commits, for the commit latency metric
        self._stop_event = threading.Event()
        self._mailbox = threading.Lock()
        self._target: tuple[int, set[str], dict[str, str]] | None = None
        self._lose_reason: str | None = None

    @property
    def commits(self) -> int:
        return self.tasks.commits

    @property
    def restore_seconds(self) -> float:
        return self._reader.restore_seconds

    @property
    def standby_records(self) -> int:
        """Changelog records applied to this thread's standby and warm-up replicas."""
        return self._standbys.applied_records

    # -- what the owner hands in (any thread) ------------------------------------------------------------

    def assign(self, generation: int, active: set[str], replicas: dict[str, str]) -> None:
        """Run ``active`` and hold ``replicas`` from now on (replacing an assignment not applied yet)."""
        with self._mailbox:
            self._target = (generation, set(active), dict(replicas))

    def lose_all(self, reason: str) -> None:
        """Close every active task without committing, at the next iteration (the group presumed this
        instance dead)."""
        with self._mailbox:
            self._lose_reason = reason

    def shutdown(self) -> None:
        self._stop_event.set()

    # -- lifecycle -------------------------------------------------------------------------------------

    def run(self) -> None:
        try:
            self._run()
        except BaseException as exc:
            log.error("stream thread %s failed: %s", self.name, exc, exc_info=True)
            self.tasks.close_all(clean=False)
            self._listener.on_thread_failed(self.name, exc)
        finally:
            self.close_clients()

    def close_clients(self) -> None:
        """Close the consumers: when the thread ends, or by the owner of a thread that never started."""
        for closer in (self._consumer, self._reader, self._standbys):
            try:
                closer.close()
            except Exception as exc:
                log.warning("stream thread %s: closing %s failed: %s", self.name, type(closer).__name__, exc)

    def _apply_mailbox(self) -> None:
        with self._mailbox:
            target, self._target = self._target, None
            reason, self._lose_reason = self._lose_reason, None
        if reason is not None:
            self.tasks.lose_all(reason)
        if target is not None:
            self.tasks.apply(*target)

    def _run(self) -> None:
        self._reader.prepare()
        config = self._config
        consumer, tasks, clock = self._consumer, self.tasks, self._clock
        standbys = self._standbys
        poll_timeout = config.poll_timeout_ms / 1000
        max_records = config.max_poll_records
        interval = config.commit_interval_ms / 1000
        next_commit = time.monotonic() + interval
        progress_at = time.monotonic() + config.progress_interval_s
        progress_count = 0
        # A log that writes only at commit (SQLite) gets the tasks' records committed every linger period,
        # so repartitioned records reach the next sub-topology without waiting for the offset commit.
        linger = self._linger_s
        next_flush = time.monotonic()
        unflushed = False
        while not self._stop_event.is_set():
            if self._target is not None or self._lose_reason is not None:
                self._apply_mailbox()
            runs = consumer.poll_runs(poll_timeout, max_records)
            if runs:
                by_topic = tasks.by_topic
                started = time.perf_counter()  # one clock read per run: each task's time is the gap before it
                for run in runs:
                    partitions = by_topic.get(run.topic)
                    task = partitions.get(run.partition) if partitions is not None else None
                    if task is None:
                        continue
                    try:
                        task.process_run(run)
                    except LostTask as exc:
                        tasks.lose(task, exc)
                        by_topic = tasks.by_topic
                    done = time.perf_counter()
                    task.processed += len(run)
                    task.process_seconds += done - started
                    started = done
                self.processed += sum(map(len, runs))
                unflushed = True
            if standbys.tasks:
                standbys.poll()
            wall_clock_tasks = tasks.wall_clock_tasks
            if wall_clock_tasks:
                now_ms = clock.now_ms()
                for task in wall_clock_tasks:
                    try:
                        task.punctuate_wall_clock(now_ms)
                    except LostTask as exc:
                        tasks.lose(task, exc)
            now = time.monotonic()
            if linger is not None and unflushed and now >= next_flush:
                tasks.flush_records()
                next_flush = now + linger
                unflushed = False
            if now >= next_commit or tasks.commit_requested():
                tasks.commit()
                next_commit = time.monotonic()
                self.commit_seconds += next_commit - now
                next_commit += interval
            if now >= progress_at:
                rate = (self.processed - progress_count) / max(config.progress_interval_s, 1e-9)
                states = tasks.states()
                log.info(
                    "thread %s: %d records processed (%.0f/s), tasks %s",
                    self.name,
                    self.processed,
                    rate,
                    {t: states[t] for t in sorted(states)},
                )
                progress_count = self.processed
                progress_at = now + config.progress_interval_s
        with self._mailbox:
            reason, self._lose_reason = self._lose_reason, None
        if reason is not None:  # expelled: nothing of these tasks is to be committed any more
            tasks.lose_all(reason)
        tasks.close_all(clean=True)
        log.info("thread %s stopped after %d records", self.name, self.processed)
