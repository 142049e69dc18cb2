"""What a streams application measures, as plain figures (``RuntimeStats``, the source of ``app.metrics()``)
and as Prometheus metrics (``StreamsCollector``, served on the query server's ``/metrics``).

The figures are kept as plain counters by the threads and tasks (an integer add per record, one clock read
per record) and read only when asked, so a scrape costs nothing on the processing path. Counters restart
when a task moves to another thread or instance, as Prometheus expects of a counter whose labels reappear.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Protocol

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector, CollectorRegistry

__all__ = ["RuntimeStats", "StreamsCollector", "TaskStats", "ThreadStats", "new_registry"]

PREFIX = "schemakit_streams"


@dataclass
class TaskStats:
    """One task on one thread: ``state`` is its ``TaskState``."""

    task: str
    thread: str
    state: str
    processed: int = 0
    process_seconds: float = 0.0
    dropped: int = 0  # records skipped by an error handler (deserialization, processing, production)
    dropped_reasons: dict[str, int] = field(default_factory=dict)  # the same, per reason
    restore_remaining: int | None = None  # changelog records still to restore (while restoring)
    lag: int | None = None  # changelog records behind the newest position (standby and warm-up replicas)
    store_entries: dict[str, int] = field(default_factory=dict)  # estimated, per store


@dataclass
class ThreadStats:
    thread: str
    processed: int
    commits: int
    commit_seconds: float


@dataclass
class RuntimeStats:
    application_id: str
    instance: str
    threads: list[ThreadStats]
    tasks: list[TaskStats]
    rebalances: int
    lost_tasks: int
    standby_records: int


class StatsSource(Protocol):
    def runtime_stats(self) -> RuntimeStats: ...


class StreamsCollector(Collector):
    """Prometheus metrics of one application instance, read from ``source`` at each scrape."""

    def __init__(self, source: StatsSource) -> None:
        self._source = source

    def describe(self) -> list[Metric]:
        return []  # collected lazily: nothing to register up front

    def collect(self) -> Iterator[Metric]:
        stats = self._source.runtime_stats()
        app = stats.application_id
        task_labels = ["application_id", "thread", "task"]
        thread_labels = ["application_id", "thread"]

        def counter(name: str, doc: str, labels: list[str]) -> CounterMetricFamily:
            return CounterMetricFamily(f"{PREFIX}_{name}", doc, labels=labels)

        def gauge(name: str, doc: str, labels: list[str]) -> GaugeMetricFamily:
            return GaugeMetricFamily(f"{PREFIX}_{name}", doc, labels=labels)

        processed = counter("task_records_processed", "Records processed by an active task.", task_labels)
        seconds = counter(
            "task_process_seconds",
            "Time an active task spent processing records (rate over "
            "rate of records processed: the mean process latency).",
            task_labels,
        )
        dropped = counter("task_records_dropped", "Records dropped by an active task.", [*task_labels, "reason"])
        restore = gauge(
            "task_restore_remaining_records", "Changelog records a restoring task still has to restore.", task_labels
        )
        lag = gauge(
            "task_standby_lag_records", "Changelog records a standby or warm-up replica is behind.", task_labels
        )
        entries = gauge("store_entries", "Estimated entries in a task's store.", [*task_labels, "store"])
        state = gauge("task_state", "1 for the state a task on this instance is in.", [*task_labels, "state"])
        for t in stats.tasks:
            labels = [app, t.thread, t.task]
            state.add_metric([*labels, t.state], 1)
            if t.state in ("RUNNING", "RESTORING"):
                processed.add_metric(labels, t.processed)
                seconds.add_metric(labels, t.process_seconds)
                for reason in ("deserialization_error", "processing_error", "production_error"):
                    dropped.add_metric([*labels, reason], t.dropped_reasons.get(reason, 0))
            if t.restore_remaining is not None:
                restore.add_metric(labels, t.restore_remaining)
            if t.lag is not None:
                lag.add_metric(labels, t.lag)
            for store, n in sorted(t.store_entries.items()):
                entries.add_metric([*labels, store], n)
        commits = counter("thread_commits", "Commits of a stream thread.", thread_labels)
        commit_seconds = counter(
            "thread_commit_seconds",
            "Time a stream thread spent committing (rate over rate of commits: the mean commit latency).",
            thread_labels,
        )
        thread_processed = counter("thread_records_processed", "Records polled by a stream thread.", thread_labels)
        for th in stats.threads:
            commits.add_metric([app, th.thread], th.commits)
            commit_seconds.add_metric([app, th.thread], th.commit_seconds)
            thread_processed.add_metric([app, th.thread], th.processed)
        rebalances = counter("rebalances", "Assignments this instance applied.", ["application_id", "instance"])
        rebalances.add_metric([app, stats.instance], stats.rebalances)
        lost = counter("tasks_lost", "Tasks this instance lost (fenced or failed).", ["application_id", "instance"])
        lost.add_metric([app, stats.instance], stats.lost_tasks)
        standby = counter(
            "standby_records_applied", "Changelog records applied by standby replicas.", ["application_id", "instance"]
        )
        standby.add_metric([app, stats.instance], stats.standby_records)
        yield from (
            processed,
            seconds,
            dropped,
            restore,
            lag,
            entries,
            state,
            commits,
            commit_seconds,
            thread_processed,
            rebalances,
            lost,
            standby,
        )


def new_registry(source: StatsSource) -> CollectorRegistry:
    """A registry of its own per app (several apps may share a process), holding ``source``'s collector."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(StreamsCollector(source))
    return registry
