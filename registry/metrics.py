"""Prometheus metrics of one registry instance (``GET /metrics``, text format 0.0.4).

Two kinds of figures:

- **Counted as they happen**, on the event-loop thread, in plain Python ints and lists instead of
  ``prometheus_client`` metric objects (whose every observation takes a lock and walks its buckets in Python):
  requests by method, route template and status with their latency (``RequestMetrics``: one ``RouteStats``
  per series, resolved once and kept by whoever counts, e.g. a read-cache entry, so a cache hit costs a
  ``bisect`` and two additions, no label lookup), read-cache misses, compatibility verdicts.
- **Read when scraped** from the parts that hold them (``RegistryCollector``): schemas and subjects per
  context, leadership, the log position and lag, the startup replay, readiness.

``Metrics.render()`` writes both, plus the process's own figures (CPU, memory, file descriptors, GC) from
``prometheus_client``'s standard collectors, into a registry of its own (several apps in one process, as
in tests, do not share series).
"""

from __future__ import annotations

import logging
from bisect import bisect_left
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, GCCollector, PlatformCollector, ProcessCollector, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

from registry import contexts

if TYPE_CHECKING:
    from registry.health import Health
    from registry.state import State

log = logging.getLogger(__name__)

PREFIX = "schemakit_registry"
#: the classic text format every Prometheus version reads (the names here need none of 1.0.0's escaping)
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
#: latency histogram bucket bounds, seconds (a cached read is well under the first)
BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
#: the route label of requests that matched no route (unknown paths must not create series)
UNMATCHED = "<unmatched>"
#: compatibility check results
COMPATIBLE, INCOMPATIBLE, CHECK_ERROR = "compatible", "incompatible", "error"


class RouteStats:
    """Count and latency of one series (method, route, status, answered from the cache or not)."""

    __slots__ = ("buckets", "sum")

    def __init__(self) -> None:
        self.buckets = [0] * (len(BUCKETS) + 1)  # per bucket, not cumulative; the last is +Inf
        self.sum = 0.0

    def observe(self, seconds: float) -> None:
        self.buckets[bisect_left(BUCKETS, seconds)] += 1
        self.sum += seconds


class RequestMetrics:
    """The HTTP layer's counts (event-loop thread only)."""

    def __init__(self) -> None:
        self.series: dict[tuple[str, str, int, bool], RouteStats] = {}
        self.cache_misses = 0  # cacheable reads the cache could not answer

    def stats(self, method: str, route: str, status: int, *, cached: bool = False) -> RouteStats:
        key = (method, route, status, cached)
        s = self.series.get(key)
        if s is None:
            s = self.series[key] = RouteStats()
        return s

    def cache_hits(self) -> int:
        return sum(sum(s.buckets) for (_, _, _, cached), s in self.series.items() if cached)


@dataclass(frozen=True, slots=True)
class ExporterFigures:
    """One schema exporter's figures (``registry/exporters``): its state, what it did since this instance led,
    and how far behind ``_schemas`` it is."""

    name: str
    state: str
    exported: int
    errors: int
    lag_records: int
    lag_seconds: float


EXPORTER_STATES = ("STARTING", "RUNNING", "PAUSED", "ERROR")


@dataclass
class RegistrySources:
    """Where the scrape-time figures come from; the server fills what the deployment has."""

    state: State
    health: Health
    #: is this instance the leader (None: the only writer, always leads)
    is_leader: Callable[[], bool] | None = None
    #: is some leader known (None: this instance)
    leader_known: Callable[[], bool] | None = None
    #: the number of records the startup replay applied
    replayed_records: Callable[[], int] = field(default=lambda: 0)
    #: cached answers held now
    cache_entries: Callable[[], int] = field(default=lambda: 0)
    #: bytes of keys and answers the read cache holds now (bounded by ``--response-cache-bytes``)
    cache_bytes: Callable[[], int] = field(default=lambda: 0)
    #: the DEK registry's keys by (type ``KEK``/``DEK``, soft-deleted); None where it does not run
    dek_keys: Callable[[], dict[tuple[str, bool], int]] | None = None
    #: the schema exporters' figures
    exporters: Callable[[], list[ExporterFigures]] = field(default=lambda: [])


class Metrics:
    def __init__(self, sources: RegistrySources | None = None) -> None:
        self.requests = RequestMetrics()
        self.compatibility_checks: dict[str, int] = {COMPATIBLE: 0, INCOMPATIBLE: 0, CHECK_ERROR: 0}
        self.sources = sources
        self._log_end: int | None = None
        self.registry = CollectorRegistry(auto_describe=False)
        ProcessCollector(registry=self.registry)
        PlatformCollector(registry=self.registry)
        GCCollector(registry=self.registry)
        self.registry.register(_Collector(self))

    def compatibility_checked(self, result: str) -> None:
        """A compatibility verdict (``COMPATIBLE``, ``INCOMPATIBLE``) or a check that failed (``CHECK_ERROR``)."""
        self.compatibility_checks[result] = self.compatibility_checks.get(result, 0) + 1

    def render(self, *, log_end: int | None = None) -> bytes:
        """The Prometheus text exposition of every metric, on the event-loop thread (where the state changes).
        ``log_end``: the offset of the log's last record, read beforehand (it may ask the broker)."""
        self._log_end = log_end
        return generate_latest(self.registry)


class _Collector(Collector):
    def __init__(self, metrics: Metrics) -> None:
        self.m = metrics

    def collect(self) -> Iterator[Metric]:
        yield from self._requests()
        checks = CounterMetricFamily(
            f"{PREFIX}_compatibility_checks", "Compatibility checks by result.", labels=["result"]
        )
        for result, n in sorted(self.m.compatibility_checks.items()):
            checks.add_metric([result], n)
        yield checks
        if self.m.sources is not None:
            yield from _state_metrics(self.m.sources, self.m._log_end)

    def _requests(self) -> Iterator[Metric]:
        requests = self.m.requests
        by_status: dict[tuple[str, str, str], int] = {}
        by_route: dict[tuple[str, str], tuple[list[int], float]] = {}
        hits = 0
        for (method, route, status, cached), s in list(requests.series.items()):
            n = sum(s.buckets)
            key = (method, route, str(status))
            by_status[key] = by_status.get(key, 0) + n
            buckets, total = by_route.get((method, route), ([0] * len(s.buckets), 0.0))
            by_route[(method, route)] = ([a + b for a, b in zip(buckets, s.buckets, strict=True)], total + s.sum)
            if cached:
                hits += n
        counter = CounterMetricFamily(
            f"{PREFIX}_http_requests",
            "HTTP requests by method, route template and status (read-cache hits included).",
            labels=["method", "route", "status"],
        )
        for labels, n in sorted(by_status.items()):
            counter.add_metric(list(labels), n)
        yield counter
        histogram = HistogramMetricFamily(
            f"{PREFIX}_http_request_duration_seconds",
            "Time from receiving a request to sending the answer, by method and route template.",
            labels=["method", "route"],
        )
        for (method, route), (buckets, total) in sorted(by_route.items()):
            cumulative, running = [], 0
            for bound, n in zip((*map(str, BUCKETS), "+Inf"), buckets, strict=True):
                running += n
                cumulative.append((bound, running))
            histogram.add_metric([method, route], cumulative, total)
        yield histogram
        yield CounterMetricFamily(f"{PREFIX}_read_cache_hits", "Reads answered from the read cache.", value=hits)
        misses = requests.cache_misses
        yield CounterMetricFamily(
            f"{PREFIX}_read_cache_misses", "Cacheable reads the read cache could not answer.", value=misses
        )


def _gauge(name: str, doc: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(f"{PREFIX}_{name}", doc, value=value)


def _state_metrics(src: RegistrySources, end: int | None) -> Iterator[Metric]:
    st = src.state
    schemas = GaugeMetricFamily(f"{PREFIX}_schemas", "Schema ids, per context.", labels=["context"])
    subjects = GaugeMetricFamily(
        f"{PREFIX}_subjects", "Subjects with at least one live version, per context.", labels=["context"]
    )
    live: dict[str, int] = {}
    if src.health.serving:  # while the startup replay applies the log in a worker thread, the state is not read
        for subject, versions in list(st.subjects.items()):
            if any(not v.deleted for v in versions.values()):
                ctx = contexts.context_of(subject)
                live[ctx] = live.get(ctx, 0) + 1
        for ctx, space in sorted(st.spaces.items()):
            schemas.add_metric([ctx], len(space.contents))
    for ctx in sorted(live):
        subjects.add_metric([ctx], live[ctx])
    yield schemas
    yield subjects
    yield _gauge("contexts", "Contexts besides the default one.", len(st.contexts))
    leads = src.is_leader() if src.is_leader is not None else True
    known = src.leader_known() if src.leader_known is not None else True
    yield _gauge("leader", "1 when this instance is the leader (writes to the log).", int(leads))
    yield _gauge("leader_known", "1 when a leader is known (writes can be served or forwarded).", int(known))
    yield _gauge("log_offset", "Offset of the last _schemas record applied to the state.", st.offset)
    if end is not None:
        yield _gauge("log_end_offset", "Offset of the last record in _schemas.", end)
        yield _gauge("log_lag", "Records in _schemas not yet applied to the state.", max(0, end - st.offset))
    health = src.health
    if health.replay_seconds is not None:
        yield _gauge("replay_seconds", "How long the startup replay of _schemas took.", health.replay_seconds)
    yield _gauge("replay_records", "Records the startup replay applied.", src.replayed_records())
    yield _gauge("ready", "1 when the instance is ready (/health/ready answers 200).", int(health.ready))
    yield _gauge("read_cache_entries", "Answers held by the read cache.", src.cache_entries())
    yield _gauge("read_cache_bytes", "Bytes of keys and answers the read cache holds.", src.cache_bytes())
    if src.dek_keys is not None and health.serving:
        keys = GaugeMetricFamily(
            f"{PREFIX}_dek_keys",
            "The DEK registry's KEKs and DEKs, by type and soft deletion.",
            labels=["type", "deleted"],
        )
        for (kind, deleted), n in sorted(src.dek_keys().items()):
            keys.add_metric([kind, str(deleted).lower()], n)
        yield keys
    yield from _exporter_metrics(src.exporters())


def _exporter_metrics(exporters: list[ExporterFigures]) -> Iterator[Metric]:
    labels = ["exporter"]
    exported = CounterMetricFamily(
        f"{PREFIX}_exporter_records_exported",
        "_schemas records a schema exporter repeated at its destination, since this instance led.",
        labels=labels,
    )
    failures = CounterMetricFamily(
        f"{PREFIX}_exporter_errors", "Failed destination calls of a schema exporter (each retried).", labels=labels
    )
    lag = GaugeMetricFamily(f"{PREFIX}_exporter_lag_records", "_schemas records not yet exported.", labels=labels)
    lag_seconds = GaugeMetricFamily(
        f"{PREFIX}_exporter_lag_seconds", "How long the oldest record not yet exported has waited.", labels=labels
    )
    state = GaugeMetricFamily(
        f"{PREFIX}_exporter_state", "1 for the state a schema exporter is in.", labels=["exporter", "state"]
    )
    for f in exporters:
        exported.add_metric([f.name], f.exported)
        failures.add_metric([f.name], f.errors)
        lag.add_metric([f.name], f.lag_records)
        lag_seconds.add_metric([f.name], f.lag_seconds)
        for s in EXPORTER_STATES:
            state.add_metric([f.name, s], int(f.state == s))
    yield from (exported, failures, lag, lag_seconds, state)
