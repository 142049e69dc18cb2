"""``StreamsApp``: runs a topology against a log with ``num_threads`` stream threads.

Instances with the same ``application_id`` share the work: on a log with group membership (Kafka)
through the consumer group (range assignment, so same-numbered partitions of co-partitioned topics, and
with them whole tasks, go to one member); on one without (SQLite) one instance owns every partition and
its threads split the tasks among themselves.

The app creates each thread's clients and task environment, and hears back from the threads through
``ThreadListener``, ``TaskListener`` and ``RestoreListener`` (``streams/listeners.py``), which it implements.
"""

from __future__ import annotations

import logging
import signal
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from streams.config import StreamsConfig
from streams.errors import IllegalStateError, InvalidStateStoreError
from streams.handlers import DeadLetterQueue, handler_from
from streams.log import GroupSettings, Log, TopicPartition, open_log
from streams.metadata import Metadata, TopicNames, resolve
from streams.processor import SystemClock
from streams.queries import ReadOnlyStore
from streams.stream_thread import StreamThread
from streams.task import StreamTask, TaskEnv
from streams.topology import Topology

__all__ = ["AppState", "StreamsApp"]

log = logging.getLogger("streams.app")


class AppState:
    CREATED = "CREATED"
    REBALANCING = "REBALANCING"
    RUNNING = "RUNNING"
    PENDING_SHUTDOWN = "PENDING_SHUTDOWN"
    NOT_RUNNING = "NOT_RUNNING"
    ERROR = "ERROR"


class StreamsApp:
    """Runs ``topology`` as application ``application_id`` (the consumer group, and the prefix of its
    internal topics) on ``log`` (a URL or an open ``Log``).

    - ``num_threads``: stream threads in this process (CPU scaling is by more processes: the GIL).
    - ``state_dir``: where persistent stores and checkpoints live (``<state_dir>/<application_id>/<task>``).
    - ``commit_interval_ms``: how often offsets are committed and caches flushed (at-least-once).
    - ``default_store``: ``"rocksdb"`` or ``"memory"`` for stores that do not say.
    - ``cache_max_entries``: per persistent store, how many deserialized values stay cached.
    - ``deserialization_error_handler``: ``"fail"``, ``"skip"``, ``DeadLetterQueue(topic)`` or a callable.
    - ``processing_guarantee``: ``"at_least_once"``, the only one implemented.
    """

    def __init__(
        self,
        topology: Topology,
        application_id: str,
        log: str | Log = "sqlite:///./data",
        *,
        num_threads: int = 1,
        state_dir: str | Path | None = None,
        commit_interval_ms: int = 5000,
        default_store: str = "rocksdb",
        cache_max_entries: int = 100_000,
        deserialization_error_handler: Any = "fail",
        poll_timeout_ms: int = 100,
        max_poll_records: int = 5000,
        progress_interval_s: float = 10.0,
        processing_guarantee: str = "at_least_once",
    ) -> None:
        if processing_guarantee != "at_least_once":
            raise ValueError(
                f"processing_guarantee {processing_guarantee!r} is not supported yet; use 'at_least_once'"
            )
        if not isinstance(topology, Topology):
            raise TypeError(f"StreamsApp needs a Topology (StreamsBuilder().build()), got {type(topology).__name__}")
        if state_dir is None:
            state_dir = Path(tempfile.gettempdir()) / "schemakit-streams"
        self.config = StreamsConfig(
            application_id=application_id, num_threads=num_threads, state_dir=Path(state_dir),
            commit_interval_ms=commit_interval_ms, default_store=default_store,
            cache_max_entries=cache_max_entries, deserialization_error_handler=deserialization_error_handler,
            poll_timeout_ms=poll_timeout_ms, max_poll_records=max_poll_records,
            progress_interval_s=progress_interval_s,
        )  # fmt: skip
        self.topology = topology
        self.application_id = application_id
        self.clock = SystemClock()
        self._handler = handler_from(deserialization_error_handler)
        self._owns_log = isinstance(log, str)
        self.log: Log = self._open_log(log) if isinstance(log, str) else log
        self._names = TopicNames(application_id)
        self.metadata = Metadata(self._names)  # resolved against the log by start()
        self.state = AppState.CREATED
        self.error: BaseException | None = None
        self._threads: list[StreamThread] = []
        self._lock = threading.Lock()
        self._restored: dict[str, int] = {}
        self._restores: list[tuple[str, str, int]] = []
        self.state_listeners: list[Callable[[str, str], None]] = []

    @staticmethod
    def _open_log(url: str) -> Log:
        # Range assignment gives one member the same partition numbers of every topic it reads,
        # which keeps each task's co-partitioned inputs together.
        return open_log(url, groups=GroupSettings(assignment="range"))

    # -- threads -------------------------------------------------------------------------------------------

    def _static_shares(self, n: int) -> list[list[TopicPartition]]:
        """Without a group protocol to split the work (SQLite) this instance owns every task, and its
        ``n`` threads take the tasks in turn: per thread, the input partitions of its tasks."""
        md = self.metadata
        shares: list[list[TopicPartition]] = [[] for _ in range(n)]
        tasks = [(sub, p) for sub, count in sorted(md.tasks_per_sub.items()) for p in range(count)]
        for i, (sub, p) in enumerate(tasks):
            shares[i % n].extend(md.input_partitions(sub, p))
        return shares

    def _new_thread(self, index: int, static_partitions: list[TopicPartition] | None) -> StreamThread:
        name = f"{self.application_id}-StreamThread-{index}"
        producer = self.log.producer()
        try:
            consumer = self.log.consumer(self.application_id, client_id=name)
        except BaseException:
            producer.close()
            raise
        env = TaskEnv(
            application_id=self.application_id,
            topology=self.topology,
            send=producer.send,
            clock=self.clock,
            state_dir=self.config.state_dir,
            default_store=self.config.default_store,
            cache_max_entries=self.config.cache_max_entries,
            deserialization_handler=self._handler,
            topic_names=self._names,
            partitions_of=self.metadata.partitions.__getitem__,
        )
        return StreamThread(
            name,
            self.config,
            producer=producer,
            consumer=consumer,
            restore_consumer=lambda: self.log.consumer(None, client_id=f"{name}-restore"),
            task_env=env,
            metadata=self.metadata,
            listener=self,
            task_listener=self,
            restore_listener=self,
            static_partitions=static_partitions,
            linger_s=self.config.linger_ms / 1000 if self.log.capabilities.buffers_until_flush else None,
        )

    # -- lifecycle -------------------------------------------------------------------------------------

    def _set_state(self, state: str) -> None:
        with self._lock:
            old, self.state = self.state, state
        if old != state:
            log.info("application %s: %s -> %s", self.application_id, old, state)
            for listener in self.state_listeners:
                listener(old, state)

    def start(self) -> None:
        """Resolve topics and start the stream threads; returns at once."""
        if self.state != AppState.CREATED:
            raise IllegalStateError(f"start() in state {self.state}: an app starts once")
        dead_letter = self._handler.topic if isinstance(self._handler, DeadLetterQueue) else None
        self.metadata = resolve(self.topology, self.log, self._names, dead_letter)
        n = self.config.num_threads
        shares = None if self.log.capabilities.group_membership else self._static_shares(n)
        threads: list[StreamThread] = []
        try:
            for i in range(n):
                threads.append(self._new_thread(i, shares[i] if shares is not None else None))
        except BaseException:
            for thread in threads:
                thread.close_clients()
            raise
        self._threads = threads
        self._set_state(AppState.REBALANCING)
        for thread in self._threads:
            thread.start()
        log.info("application %s started %d thread(s) on %s", self.application_id, n, self.log.safe_url)

    def close(self, timeout: float | None = 60.0) -> None:
        """Stop the threads (each commits and closes its tasks) and release the log."""
        if self.state in (AppState.NOT_RUNNING,):
            return
        if self.state != AppState.ERROR:
            self._set_state(AppState.PENDING_SHUTDOWN)
        for thread in self._threads:
            thread.shutdown()
        for thread in self._threads:
            if thread.is_alive() and thread is not threading.current_thread():
                thread.join(timeout)
        if self._owns_log:
            self.log.close()
        if self.state != AppState.ERROR:
            self._set_state(AppState.NOT_RUNNING)

    def run(self) -> None:
        """Start, run until SIGTERM/SIGINT (or a thread fails), then close. Raises the failure, if any."""
        stop = threading.Event()
        previous: dict[signal.Signals, Any] = {}
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGINT):
                previous[sig] = signal.signal(sig, lambda signum, frame: stop.set())
        try:
            self.start()
            while not stop.is_set() and self.state not in (AppState.ERROR, AppState.NOT_RUNNING):
                stop.wait(0.2)
            log.info("application %s shutting down", self.application_id)
        finally:
            self.close()
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        if self.error is not None:
            raise self.error

    def __enter__(self) -> StreamsApp:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- what the threads report (ThreadListener, TaskListener, RestoreListener) ---------------------------

    def on_thread_failed(self, thread_name: str, error: BaseException) -> None:
        """The first failure is the app's error; the other threads are stopped."""
        with self._lock:
            if self.error is None:
                self.error = error
        self._set_state(AppState.ERROR)
        for thread in self._threads:
            thread.shutdown()

    def on_tasks_changed(self) -> None:
        if self.state in (AppState.REBALANCING, AppState.RUNNING):
            self._set_state(AppState.RUNNING if self.tasks() else AppState.REBALANCING)

    def on_restore_start(
        self, task_id: str, store: str, changelog: TopicPartition, start_offset: int, end_offset: int
    ) -> None:
        """Nothing to record: ``metrics()`` counts a store's restore once it ends."""

    def on_batch_restored(
        self, task_id: str, store: str, changelog: TopicPartition, batch_end_offset: int, num_restored: int
    ) -> None:
        """Nothing to record: the changelog reader logs restore progress."""

    def on_restore_end(self, task_id: str, store: str, changelog: TopicPartition, total_restored: int) -> None:
        with self._lock:
            self._restored[store] = self._restored.get(store, 0) + total_restored
            self._restores.append((task_id, store, total_restored))

    # -- introspection ---------------------------------------------------------------------------------

    def tasks(self) -> list[str]:
        """Ids of the tasks running on this instance."""
        return sorted(t for thread in self._threads for t in thread.tasks.task_ids())

    def _active_tasks(self) -> list[StreamTask]:
        return [task for thread in self._threads for task in thread.tasks.active_tasks()]

    def metrics(self) -> dict[str, Any]:
        with self._lock:
            restored = dict(self._restored)
            restores = list(self._restores)
        return {
            "state": self.state,
            "tasks": self.tasks(),
            "processed": sum(t.processed for t in self._threads),
            "commits": sum(t.commits for t in self._threads),
            "restored": restored,
            "restores": restores,
            "restore_seconds": sum(thread.restore_seconds for thread in self._threads),
        }

    def wait_until(self, predicate: Callable[[StreamsApp], bool], timeout: float = 30.0) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.error is not None:
                raise self.error
            if predicate(self):
                return True
            time.sleep(0.05)
        return False

    def store(self, name: str) -> ReadOnlyStore:
        """A read-only view of store ``name`` across the tasks running on this instance."""
        if name not in self.topology.stores:
            raise InvalidStateStoreError(f"no store named {name!r}; stores: {sorted(self.topology.stores)}")
        return ReadOnlyStore(name, self._active_tasks, lambda: self.metadata.store_partitions(name))

