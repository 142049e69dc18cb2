"""``StreamsApp``: runs a topology against a log with ``num_threads`` stream threads.

Instances with the same ``application_id`` share the work through the group protocol in
``streams/membership.py``: they elect a leader with a ``Log.lease``, publish their status on the
application's membership topic, and the leader assigns tasks (active, standby and warm-up, with the
assignor in ``streams/assignor.py``) on the assignment topic. This works the same on SQLite (processes on
one machine sharing the file) and on Kafka. Within an instance the app spreads its tasks over its threads
and keeps each task on the thread that had it, so a standby is promoted where its stores are.

The app creates each thread's clients and task environment, and hears back from the threads through
``ThreadListener``, ``TaskListener`` and ``RestoreListener`` and from the membership through
``MembershipListener``, which it implements; a user listens with ``StateListener``.
"""

from __future__ import annotations

import logging
import math
import signal
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from streams.assignor import AssignorConfig, task_key
from streams.config import DEFAULT_CACHE_MAX_ENTRIES, StreamsConfig, parse_host_port
from streams.emit_throttle import DEFAULT_EMIT_INTERVAL_MS
from streams.errors import IllegalStateError, InvalidStateStoreError
from streams.extractors import extractor_from
from streams.gc_tuning import GcTuning
from streams.global_state import GlobalStateThread
from streams.group_leader import Assignment
from streams.handlers import DeadLetterQueue, handler_from
from streams.listeners import StateListener, TaskState
from streams.log import GroupSettings, Log, TopicPartition, open_log
from streams.membership import Membership
from streams.metadata import Metadata, TopicNames, resolve
from streams.metrics import RuntimeStats, TaskStats, ThreadStats, new_registry
from streams.processor import SystemClock
from streams.queries import HostInfo, KeyQueryMetadata, QueryMetadata, StreamsMetadata, View, read_only_store
from streams.state_directory import StateDirectory
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


def _unbound_send(*args: Any, **kwargs: Any) -> None:
    raise IllegalStateError("a task sends through its own producer; this environment is a template")


class StreamsApp:
    """Runs ``topology`` as application ``application_id`` (the group whose offsets are committed, and the
    prefix of its internal topics) on ``log`` (a URL or an open ``Log``).

    - ``num_threads``: stream threads in this process (CPU scaling is by more processes: the GIL).
    - ``state_dir``: where persistent stores, checkpoints and the instance id live
      (``<state_dir>/<application_id>``); one instance per directory.
    - ``commit_interval_ms``: how often offsets are committed and caches flushed. Under exactly-once it is
      also how long outputs wait to become visible (Kafka Streams then defaults to 100 ms; the 5 s default
      here is kept for both guarantees, as in Quix Streams: lower it for latency).
    - ``default_store``: ``"rocksdb"`` or ``"memory"`` for stores that do not say.
    - ``cache_max_entries``: per persistent store, how many deserialized values stay cached (200,000).
    - ``deserialization_error_handler``, ``processing_exception_handler`` (a processor raised; KIP-1033)
      and ``production_exception_handler`` (the log refused an output record, e.g. too large; KIP-1034):
      ``"fail"`` (the default), ``"skip"``, ``"dead_letter:<topic>"`` / ``DeadLetterQueue(topic)`` (not for
      production errors) or a callable ``(record, error) -> bool``; see ``streams/handlers.py``.
    - ``processing_guarantee``: ``"at_least_once"`` (the default) or ``"exactly_once_v2"``: each commit
      interval's outputs, changelog writes and input offsets of a task commit in one transaction, consumers
      read committed records only, and local state never runs ahead of the last commit (see
      ``streams/task_producer.py``). Kafka Streams' deprecated ``"exactly_once"``/``"exactly_once_beta"``
      are refused with a message naming ``"exactly_once_v2"``.
    - ``default_timestamp_extractor``: event time of records whose source has no extractor
      (``streams.extractors``); default: the log timestamp.
    - ``num_standby_replicas``: warm copies of every stateful task on other instances (Kafka Streams'
      ``num.standby.replicas``); ``max_warmup_replicas``, ``acceptable_recovery_lag`` and
      ``probing_rebalance_interval_ms``: a task moves to an instance only once that instance's state is
      within ``acceptable_recovery_lag`` changelog records of the end; until then a warm-up replica
      catches up there, and the leader looks again every probing interval.
    - ``session_timeout_ms``: how long a silent instance keeps its tasks (a Kafka log URL's
      ``session.timeout.ms`` wins); ``heartbeat_interval_ms``: how often instances say they are alive.
    - ``application_server``: this instance's ``http://host:port`` for interactive queries, published to
      the other instances; the app serves the HTTP query API there (``streams/query_server.py``), listening on
      ``query_bind`` (``host:port``) when the advertised address is not a local one (e.g. ``0.0.0.0:7070``).
    - ``state_listener``: a ``StateListener`` (application and task state changes).
    - ``gc_tuning``: tune the interpreter's garbage collector for the app's many long-lived objects
      (``streams/gc_tuning.py``): while it runs, full collections run about a hundred times less often
      (where the thresholds are the interpreter's defaults), and with an ``application_server`` the objects
      alive once the query server started are frozen out of the collector's sight (``gc.freeze``). Why: a
      full collection walks every long-lived object (a quarter of the processing time in the windowed
      benchmarks; tens of ms with the GIL held under a query server). Both are process-wide, shared by the
      apps of the process and undone when the last of them closes; objects are thawed only if nothing else
      was frozen. ``False`` leaves the collector as the process has it, at the cost of that time in full
      collections and of query latency spikes while one runs: for a process that tunes the collector itself.
    - ``outer_join_emit_interval_ms`` / ``windowed_aggregation_emit_interval_ms`` (Kafka Streams'
      ``emit.interval.ms.kstreams.outer.join.spurious.results.fix`` / ``...windowed.aggregation``, default
      1000): the least wall-clock time between two scans of a left/outer stream-stream join for unjoined
      records whose window closed, and of an ``on_window_close`` aggregation for closed windows; they delay
      results, never change them (``streams/emit_throttle.py``).
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
        cache_max_entries: int = DEFAULT_CACHE_MAX_ENTRIES,
        deserialization_error_handler: Any = "fail",
        processing_exception_handler: Any = "fail",
        production_exception_handler: Any = "fail",
        poll_timeout_ms: int = 100,
        max_poll_records: int = 5000,
        progress_interval_s: float = 10.0,
        processing_guarantee: str = "at_least_once",
        default_timestamp_extractor: Any = None,
        num_standby_replicas: int = 0,
        max_warmup_replicas: int = 2,
        acceptable_recovery_lag: int = 10_000,
        probing_rebalance_interval_ms: int = 600_000,
        session_timeout_ms: int = 10_000,
        heartbeat_interval_ms: int | None = None,
        application_server: str | None = None,
        query_bind: str | None = None,
        state_listener: StateListener | None = None,
        gc_tuning: bool = True,
        outer_join_emit_interval_ms: int = DEFAULT_EMIT_INTERVAL_MS,
        windowed_aggregation_emit_interval_ms: int = DEFAULT_EMIT_INTERVAL_MS,
    ) -> None:
        if not isinstance(topology, Topology):
            raise TypeError(f"StreamsApp needs a Topology (StreamsBuilder().build()), got {type(topology).__name__}")
        if state_dir is None:
            state_dir = Path(tempfile.gettempdir()) / "schemakit-streams"
        self.config = StreamsConfig(
            application_id=application_id,
            num_threads=num_threads,
            state_dir=Path(state_dir),
            commit_interval_ms=commit_interval_ms,
            default_store=default_store,
            cache_max_entries=cache_max_entries,
            deserialization_error_handler=deserialization_error_handler,
            processing_exception_handler=processing_exception_handler,
            production_exception_handler=production_exception_handler,
            poll_timeout_ms=poll_timeout_ms,
            max_poll_records=max_poll_records,
            progress_interval_s=progress_interval_s,
            num_standby_replicas=num_standby_replicas,
            max_warmup_replicas=max_warmup_replicas,
            acceptable_recovery_lag=acceptable_recovery_lag,
            probing_rebalance_interval_ms=probing_rebalance_interval_ms,
            session_timeout_ms=session_timeout_ms,
            heartbeat_interval_ms=heartbeat_interval_ms,
            application_server=application_server,
            processing_guarantee=processing_guarantee,
            gc_tuning=gc_tuning,
            outer_join_emit_interval_ms=outer_join_emit_interval_ms,
            windowed_aggregation_emit_interval_ms=windowed_aggregation_emit_interval_ms,
        )
        self.assignor_config = AssignorConfig(num_standby_replicas, max_warmup_replicas, acceptable_recovery_lag)
        self.topology = topology
        self.application_id = application_id
        self.clock = SystemClock()
        self._handler = handler_from(deserialization_error_handler)
        self._extractor = extractor_from(default_timestamp_extractor, "default_timestamp_extractor")
        self._processing_handler = handler_from(processing_exception_handler, "processing_exception_handler")
        self._production_handler = handler_from(
            production_exception_handler, "production_exception_handler", dead_letter=False
        )
        self._owns_log = isinstance(log, str)
        self.log: Log = self._open_log(log) if isinstance(log, str) else log
        if not self.log.capabilities.leases:
            raise ValueError(
                f"log {self.log.safe_url!r} has no leases: instances of an application cannot elect a leader"
            )
        self._names = TopicNames(application_id)
        self.metadata = Metadata(self._names)  # resolved against the log by start()
        self.state = AppState.CREATED
        self.error: BaseException | None = None
        self._threads: list[StreamThread] = []
        self._membership: Membership | None = None
        self._state_dir: StateDirectory | None = None
        self.instance_id = ""
        self._lock = threading.Lock()
        self._restored: dict[str, int] = {}
        self._restores: list[tuple[str, str, int]] = []
        self._restoring: dict[str, list[int]] = {}  # task -> [restored so far, records to restore]
        self._task_states: dict[str, str] = {}
        self._placement: dict[str, int] = {}  # task -> thread index, kept across roles
        self._assignment = Assignment(0, "")
        self._pending: tuple[int, set[str], set[str]] | None = None  # generation, active, replicas being applied
        self._revoked: set[str] = set()
        self._applied = -1
        self._accepted: set[str] = set()  # active tasks of the applied generation not lost since
        self._replicas: set[str] = set()
        self.rebalances = 0
        self.lost_tasks = 0
        self.state_listeners: list[Callable[[str, str], None]] = []
        self._state_listener = state_listener
        self.query_metadata = QueryMetadata(topology, lambda: self.metadata, self.assignment)
        self._query_bind = query_bind
        self._query_server: Any = None  # a QueryServer while one runs
        self._global_thread: GlobalStateThread | None = None  # while the topology has global tables
        self._prometheus: Any = None  # the app's own CollectorRegistry, made on first use
        self._gc = GcTuning(self.config.gc_tuning)
        if query_bind is not None:
            parse_host_port(query_bind)  # a malformed address fails here, not at start()

    def _open_log(self, url: str) -> Log:
        # Group settings matter for the leader lease on Kafka: cooperative-sticky keeps the lease with its
        # holder when others join; the session timeout is the instances' session timeout.
        heartbeat_ms = int(self.config.heartbeat_interval_s * 1000)
        groups = GroupSettings(
            assignment="cooperative-sticky",
            session_timeout_ms=self.config.session_timeout_ms,
            heartbeat_interval_ms=max(heartbeat_ms, 1),
        )
        return open_log(url, groups=groups)

    # -- threads -------------------------------------------------------------------------------------------

    def _new_thread(self, index: int) -> StreamThread:
        name = f"{self.application_id}-StreamThread-{index}"
        # At-least-once: read peers' records as soon as they land, before their transaction commits.
        # Exactly-once: only committed ones (an aborted repartition record must not be processed).
        eos = self.config.exactly_once
        consumer = self.log.consumer(self.application_id, client_id=name, read_committed=eos)
        env = TaskEnv(
            application_id=self.application_id,
            topology=self.topology,
            send=_unbound_send,
            clock=self.clock,
            state_dir=self.config.state_dir,
            default_store=self.config.default_store,
            cache_max_entries=self.config.cache_max_entries,
            deserialization_handler=self._handler,
            processing_handler=self._processing_handler,
            production_handler=self._production_handler,
            topic_names=self._names,
            partitions_of=self.metadata.partitions.__getitem__,
            default_timestamp_extractor=self._extractor,
            global_stores=self._global_thread.stores if self._global_thread is not None else {},
            exactly_once=eos,
            emit_intervals=self.config.emit_intervals,
        )
        # Exactly-once makes records visible only with their input offsets: no interim flushes.
        linger = self.config.linger_ms / 1000 if self.log.capabilities.buffers_until_flush and not eos else None
        return StreamThread(
            name,
            self.config,
            log_backend=self.log,
            consumer=consumer,
            restore_consumer=lambda: self.log.consumer(None, client_id=f"{name}-restore"),
            standby_consumer=lambda: self.log.consumer(None, client_id=f"{name}-standby"),
            task_env=env,
            metadata=self.metadata,
            listener=self,
            task_listener=self,
            restore_listener=self,
            linger_s=linger,
        )

    # -- lifecycle -------------------------------------------------------------------------------------

    def _set_state(self, state: str) -> None:
        with self._lock:
            old, self.state = self.state, state
        if old != state:
            log.info("application %s: %s -> %s", self.application_id, old, state)
            for listener in self.state_listeners:
                listener(old, state)
            if self._state_listener is not None:
                self._state_listener.on_state_change(old, state)

    def _start_global_tables(self) -> None:
        """Restore the global tables from all partitions of their topics (blocking), then follow them."""
        if not self.topology.global_tables:
            return
        name = f"{self.application_id}-GlobalStreamThread"
        assert self._state_dir is not None
        thread = GlobalStateThread(
            self.topology,
            self.log,
            name,
            self.on_thread_failed,
            handler=self._handler,
            app_dir=self._state_dir.path,
            default_kind=self.config.default_store,
            cache_entries=self.config.cache_max_entries,
            checkpoint_interval_s=self.config.commit_interval_ms / 1000,
            progress_interval_s=self.config.progress_interval_s,
        )
        try:
            thread.restore()
        except BaseException:
            thread.close_clients()
            raise
        thread.start()
        self._global_thread = thread

    def _stop_global_tables(self) -> None:
        thread, self._global_thread = self._global_thread, None
        if thread is not None and thread is not threading.current_thread():
            thread.shutdown()

    def start(self) -> None:
        """Resolve topics, restore the global tables, join the group and start the stream threads; returns
        once the global tables are restored."""
        if self.state != AppState.CREATED:
            raise IllegalStateError(f"start() in state {self.state}: an app starts once")
        dead_letters = {h.topic for h in (self._handler, self._processing_handler) if isinstance(h, DeadLetterQueue)}
        self.metadata = resolve(self.topology, self.log, self._names, sorted(dead_letters))
        assert self.config.state_dir is not None
        self._state_dir = StateDirectory(self.config.state_dir, self.application_id)
        self.instance_id = self._state_dir.instance_id
        n = self.config.num_threads
        threads: list[StreamThread] = []
        self._gc.relax_full_collections()
        try:
            self._start_global_tables()
            for i in range(n):
                threads.append(self._new_thread(i))
        except BaseException:
            for thread in threads:
                thread.close_clients()
            self._stop_global_tables()
            self._state_dir.close()
            self._gc.release()
            raise
        self._threads = threads
        if self.config.application_server is not None:
            from streams.query_server import QueryServer  # FastAPI and uvicorn load only for a query server

            server = QueryServer(self, self.config.application_server, self._query_bind)
            try:
                server.start()
            except BaseException:
                for thread in threads:
                    thread.close_clients()
                self._threads = []
                self._stop_global_tables()
                self._state_dir.close()
                self._gc.release()
                raise
            self._query_server = server
            self._gc.freeze_long_lived()  # no full collection stalls lookups in flight
        self._membership = Membership(
            self.log,
            self._names,
            instance_id=self.instance_id,
            incarnation=uuid.uuid4().hex[:8],
            server=self.config.application_server,
            threads=n,
            tasks=self.metadata.task_ids(),
            stateful=self.metadata.stateful_task_ids(),
            assignor=self.assignor_config,
            probing_interval=self.config.probing_rebalance_interval_ms / 1000,
            session_timeout=self.config.session_timeout_ms / 1000,
            heartbeat_interval=self.config.heartbeat_interval_s,
            listener=self,
            progress_interval=self.config.progress_interval_s,
        )
        self._set_state(AppState.REBALANCING)
        for thread in self._threads:
            thread.start()
        self._membership.start()
        log.info(
            "application %s: instance %s started %d thread(s) on %s",
            self.application_id,
            self.instance_id,
            n,
            self.log.safe_url,
        )

    def close(self, timeout: float | None = 60.0) -> None:
        """Stop the threads (each commits and closes its tasks), leave the group and release the log."""
        if self.state in (AppState.NOT_RUNNING,):
            return
        if self.state != AppState.ERROR:
            self._set_state(AppState.PENDING_SHUTDOWN)
        if self._query_server is not None:
            self._query_server.close()
        for thread in self._threads:
            thread.shutdown()
        for thread in self._threads:
            if thread.is_alive() and thread is not threading.current_thread():
                thread.join(timeout)
        self._stop_global_tables()
        # Leave the group only now: the leader gives the tasks away once they are committed and closed.
        membership = self._membership
        if membership is not None:
            membership.shutdown()
            if membership.is_alive() and membership is not threading.current_thread():
                membership.join(timeout)
        if self._state_dir is not None:
            self._state_dir.close()
        if self._owns_log:
            self.log.close()
        self._gc.release()
        if self.state != AppState.ERROR:
            self._set_state(AppState.NOT_RUNNING)

    def run(self) -> None:
        """Start, run until SIGTERM/SIGINT (or a thread fails), then close. Raises the failure, if any."""
        # A plain flag, not a threading.Event: the handler runs in the main thread between two bytecodes, maybe
        # while that thread holds the Event's own lock inside wait(), and Event.set would then wait for it forever.
        stop: list[int] = []
        previous: dict[signal.Signals, Any] = {}
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGINT):
                previous[sig] = signal.signal(sig, lambda signum, frame: stop.append(signum))
        try:
            self.start()
            while not stop and self.state not in (AppState.ERROR, AppState.NOT_RUNNING):
                time.sleep(0.2)
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

    # -- the group (MembershipListener) ------------------------------------------------------------------

    def _place(self, active: set[str], replicas: set[str]) -> list[tuple[set[str], set[str]]]:
        """Spread this instance's tasks over its threads; a task stays on the thread it was on (in any role),
        new ones go to the thread with the fewest of their kind."""
        n = len(self._threads)
        placement = {t: i for t, i in self._placement.items() if t in active or t in replicas}
        counts = [[0, 0] for _ in range(n)]  # per thread: active, replicas
        for task, i in placement.items():
            counts[i][0 if task in active else 1] += 1
        for kind, tasks in ((0, active), (1, replicas)):
            for task in sorted(tasks - set(placement), key=task_key):
                i = min(range(n), key=lambda i: (counts[i][kind], counts[i][1 - kind], i))
                placement[task] = i
                counts[i][kind] += 1
        self._placement = placement
        shares: list[tuple[set[str], set[str]]] = [(set(), set()) for _ in range(n)]
        for task, i in placement.items():
            shares[i][0 if task in active else 1].add(task)
        return shares

    def on_assignment(self, assignment: Assignment) -> None:
        membership = self._membership
        assert membership is not None
        mine = assignment.of(self.instance_id, membership.incarnation)
        active = set(mine.active) if mine is not None else set()
        standby = set(mine.standby) if mine is not None else set()
        warmup = set(mine.warmup) if mine is not None else set()
        with self._lock:
            self._assignment = assignment
            self._pending = (assignment.generation, active, standby | warmup)
            self._revoked = set()
            shares = self._place(active, standby | warmup)
            self.rebalances += 1
        log.info(
            "instance %s applies generation %d: active %s, standby %s, warm-up %s",
            self.instance_id,
            assignment.generation,
            sorted(active, key=task_key),
            sorted(standby, key=task_key),
            sorted(warmup, key=task_key),
        )
        if self.state == AppState.RUNNING:
            self._set_state(AppState.REBALANCING)
        for thread, (thread_active, thread_replicas) in zip(self._threads, shares, strict=True):
            roles = {t: TaskState.WARMUP if t in warmup else TaskState.STANDBY for t in thread_replicas}
            thread.assign(assignment.generation, thread_active, roles)

    def on_revoked(self, thread_name: str, generation: int) -> None:
        with self._lock:
            pending = self._pending
            if pending is None or pending[0] != generation:
                return
            self._revoked.add(thread_name)
            if len(self._revoked) < len(self._threads):
                return
            self._applied, self._accepted, self._replicas = pending
            self._pending = None
        if self._membership is not None:
            self._membership.heartbeat_now()

    def on_task_lost(self, thread_name: str, task_id: str, error: BaseException) -> None:
        with self._lock:
            self._accepted.discard(task_id)
            self.lost_tasks += 1
        if self._membership is not None:
            self._membership.heartbeat_now()

    def on_expelled(self, reason: str) -> None:
        with self._lock:
            self._accepted = set()
            self._applied = -1
        for thread in self._threads:
            thread.lose_all(reason)

    def member_status(self) -> tuple[int, list[str], list[str], dict[str, int]]:
        positions: dict[str, int] = {}
        if self._state_dir is not None:
            held = {t for thread in self._threads for t in thread.tasks.states()}
            others = [t for t in self.metadata.task_ids() if t not in held]
            positions.update(self._state_dir.task_positions(others, lambda offsets: sum(offsets.values())))
        for thread in self._threads:
            positions.update(thread.tasks.positions())
        with self._lock:
            return self._applied, sorted(self._accepted), sorted(self._replicas), positions

    def on_membership_failed(self, error: BaseException) -> None:
        self.on_thread_failed("membership", error)

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
        with self._lock:
            settled = self._pending is None and self._applied > 0
            running = all(self._task_states.get(t) == TaskState.RUNNING for t in self._accepted)
        if self.state in (AppState.REBALANCING, AppState.RUNNING):
            self._set_state(AppState.RUNNING if settled and running else AppState.REBALANCING)

    def on_task_state_change(self, task_id: str, old: str, new: str) -> None:
        with self._lock:
            if new == TaskState.CLOSED:
                self._task_states.pop(task_id, None)
            else:
                self._task_states[task_id] = new
            if new != TaskState.RESTORING:
                self._restoring.pop(task_id, None)
        log.debug("task %s: %s -> %s", task_id, old, new)
        if self._state_listener is not None:
            self._state_listener.on_task_state_change(task_id, old, new)

    def on_restore_start(
        self, task_id: str, store: str, changelog: TopicPartition, start_offset: int, end_offset: int
    ) -> None:
        with self._lock:
            progress = self._restoring.setdefault(task_id, [0, 0])
            progress[1] += max(0, end_offset - start_offset)

    def on_batch_restored(
        self, task_id: str, store: str, changelog: TopicPartition, batch_end_offset: int, num_restored: int
    ) -> None:
        with self._lock:
            progress = self._restoring.get(task_id)
            if progress is not None:
                progress[0] += num_restored

    def on_restore_end(self, task_id: str, store: str, changelog: TopicPartition, total_restored: int) -> None:
        with self._lock:
            self._restored[store] = self._restored.get(store, 0) + total_restored
            self._restores.append((task_id, store, total_restored))

    # -- introspection ---------------------------------------------------------------------------------

    def tasks(self) -> list[str]:
        """Ids of the active tasks running on this instance."""
        return sorted((t for thread in self._threads for t in thread.tasks.task_ids()), key=task_key)

    def standby_tasks(self) -> list[str]:
        """Ids of the standby and warm-up replicas on this instance."""
        return sorted((task.id for thread in self._threads for task in thread.tasks.standby_tasks()), key=task_key)

    def _active_tasks(self) -> list[StreamTask]:
        return [task for thread in self._threads for task in thread.tasks.active_tasks()]

    def _standby_tasks(self) -> list[StreamTask]:
        return [task for thread in self._threads for task in thread.tasks.standby_tasks()]

    def assignment(self) -> Assignment:
        """The newest assignment this instance applied: every instance's tasks and ``application_server``."""
        with self._lock:
            return self._assignment

    def runtime_stats(self) -> RuntimeStats:
        """Per thread and per task figures (``streams/metrics.py``), the source of ``metrics()`` and of the
        Prometheus metrics."""
        membership = self._membership
        with self._lock:
            restoring = {t: list(p) for t, p in self._restoring.items()}
        threads: list[ThreadStats] = []
        tasks: list[TaskStats] = []
        for thread in self._threads:
            threads.append(ThreadStats(thread.name, thread.processed, thread.commits, thread.commit_seconds))
            held = {task.id: task for task in thread.tasks.active_tasks() + thread.tasks.standby_tasks()}
            for task_id, state in thread.tasks.states().items():
                stats = TaskStats(task_id, thread.name, state)
                task = held.get(task_id)
                if task is not None:
                    stats.processed, stats.process_seconds, stats.dropped = (
                        task.processed,
                        task.process_seconds,
                        task.dropped,
                    )
                    stats.dropped_reasons = dict(task.dropped_reasons)
                    stats.store_entries = {
                        name: store.estimate_num_entries() for name, store in task.stores.items() if not store.closed
                    }
                if task_id in restoring:
                    stats.restore_remaining = max(0, restoring[task_id][1] - restoring[task_id][0])
                if state in (TaskState.STANDBY, TaskState.WARMUP) and membership is not None:
                    stats.lag = membership.lag(task_id)
                tasks.append(stats)
        tasks.sort(key=lambda t: task_key(t.task))
        return RuntimeStats(
            self.application_id,
            self.instance_id,
            threads,
            tasks,
            self.rebalances,
            self.lost_tasks,
            sum(thread.standby_records for thread in self._threads),
        )

    def metrics_exposition(self) -> tuple[bytes, str]:
        """This instance's metrics in the Prometheus text format, and its content type (the query server's
        ``/metrics``; serve it yourself when the app has no ``application_server``)."""
        from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

        if self._prometheus is None:
            self._prometheus = new_registry(self)
        return generate_latest(self._prometheus), CONTENT_TYPE_LATEST

    def metrics(self) -> dict[str, Any]:
        """Counters and the state of every task here: ``task_states`` maps a task id to its ``state``
        (``TaskState``), its ``lag`` (changelog records behind the newest position any instance reported;
        for replicas), while restoring ``restored`` of ``to_restore`` records, and for active tasks
        ``processed``, ``process_seconds``, ``dropped`` (per reason in ``dropped_reasons``) and
        ``store_entries``; ``threads`` has each thread's ``processed``, ``commits`` and ``commit_seconds``."""
        with self._lock:
            restored = dict(self._restored)
            restores = list(self._restores)
            restoring = {t: list(p) for t, p in self._restoring.items()}
            generation = self._applied
        stats = self.runtime_stats()
        task_states: dict[str, dict[str, Any]] = {}
        for t in stats.tasks:
            entry: dict[str, Any] = {"state": t.state}
            if t.lag is not None:
                entry["lag"] = t.lag
            if t.task in restoring:
                entry["restored"], entry["to_restore"] = restoring[t.task]
            if t.state == TaskState.RUNNING:
                entry.update(
                    processed=t.processed,
                    process_seconds=t.process_seconds,
                    dropped=t.dropped,
                    dropped_reasons=t.dropped_reasons,
                    store_entries=t.store_entries,
                )
            task_states[t.task] = entry
        membership = self._membership
        return {
            "state": self.state,
            "instance": self.instance_id,
            "generation": generation,
            "leader": membership is not None and membership.is_leader,
            "tasks": self.tasks(),
            "standby_tasks": self.standby_tasks(),
            "task_states": task_states,
            "processed": sum(t.processed for t in self._threads),
            "dropped_records": sum(task.dropped_records for task in self._active_tasks()),
            "commits": sum(t.commits for t in self._threads),
            "rebalances": self.rebalances,
            "lost_tasks": self.lost_tasks,
            "restored": restored,
            "restores": restores,
            "threads": {
                th.thread: {"processed": th.processed, "commits": th.commits, "commit_seconds": th.commit_seconds}
                for th in stats.threads
            },
            "restore_seconds": sum(thread.restore_seconds for thread in self._threads),
            "standby_records": sum(thread.standby_records for thread in self._threads),
            "global": glob.metrics() if (glob := self._global_thread) is not None else {},
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

    # -- interactive queries -------------------------------------------------------------------------------

    def query_metadata_for_key(self, store: str, key: Any) -> KeyQueryMetadata:
        """Which instance runs the task holding ``key`` of ``store`` (``active``; None during a hand-over), which
        hold standbys of it, and its partition (Kafka Streams' ``queryMetadataForKey``). For a global table's
        store: this instance, partition -1 (every instance holds the whole table)."""
        return self.query_metadata.for_key(store, key, HostInfo(self.instance_id, self.config.application_server))

    def all_metadata_for_store(self, store: str) -> list[StreamsMetadata]:
        """The instances holding ``store``, as an active task or a standby (``streamsMetadataForStore``)."""
        return self.query_metadata.for_store(store)

    def all_metadata(self) -> list[StreamsMetadata]:
        """Every instance of the application and its tasks (``metadataForAllStreamsClients``)."""
        return self.query_metadata.all_instances()

    def task_lags(self) -> dict[str, dict[str, int]]:
        """Instance -> task -> changelog records behind, for the tasks each instance runs or replicates, as the
        instances last reported (``GET /v1/metadata``)."""
        return self._membership.lags() if self._membership is not None else {}

    def input_lags(self) -> dict[str, int]:
        """Active task -> the records of its input partitions it has not processed yet: the partitions' end
        offsets (asked of the log, once per topic) minus the next offset the task will process. On Kafka
        under exactly-once the end offset counts transaction markers too, so a caught-up task may show a
        small lag."""
        positions = {task.id: task.input_positions() for task in self._active_tasks()}
        ends: dict[str, dict[int, int]] = {}
        lags: dict[str, int] = {}
        for task_id, inputs in positions.items():
            lag = 0
            for tp, next_offset in inputs.items():
                if tp.topic not in ends:
                    ends[tp.topic] = self.log.end_offsets(tp.topic)
                lag += max(0, ends[tp.topic].get(tp.partition, 0) - (next_offset or 0))
            lags[task_id] = lag
        return lags

    @property
    def retry_after_s(self) -> int:
        """The session timeout in whole seconds (the log's own where it has one): by then a dead owner's tasks
        have moved."""
        membership = self._membership
        seconds = membership.session_timeout if membership is not None else self.config.session_timeout_ms / 1000
        return max(1, math.ceil(seconds))

    def store(self, name: str, include_standby: bool = False) -> View:
        """A read-only view of store ``name`` (key-value, window or session) across the tasks on this
        instance. ``include_standby``: also answer from standby and warm-up replicas for partitions whose
        active task runs elsewhere; such answers may be stale (``is_stale(key)``). A global table's store
        answers on every instance, from its whole table."""
        glob = self._global_thread.stores.get(name) if self._global_thread is not None else None
        if glob is not None:
            return glob
        self.query_metadata.check_store(name)
        if self.query_metadata.is_global(name):
            raise InvalidStateStoreError(f"global store {name!r} is not open: the app is {self.state}")
        return read_only_store(
            self.topology.stores[name],
            self._active_tasks,
            lambda: self.metadata.store_partitions(name),
            self._standby_tasks if include_standby else None,
        )
