"""Settings of a streams application (the keyword arguments of ``StreamsApp``), validated once."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from streams.emit_throttle import DEFAULT_EMIT_INTERVAL_MS, EmitIntervals

__all__ = ["AT_LEAST_ONCE", "EXACTLY_ONCE_V2", "StreamsConfig", "parse_host_port"]

AT_LEAST_ONCE = "at_least_once"
EXACTLY_ONCE_V2 = "exactly_once_v2"
# Kafka Streams 3.0 deprecated these (KIP-732) and 4.0 removed them; a user who names one learns the new name.
_RETIRED_GUARANTEES = ("exactly_once", "exactly_once_beta")


def parse_host_port(url: str) -> tuple[str, int]:
    """``http://host:port`` (or ``host:port``) -> (host, port); what ``application_server`` must look like."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url if "//" in url else f"//{url}")
        host, port = parts.hostname, parts.port
    except ValueError:
        host = port = None
    if parts.scheme not in ("", "http") or not host or port is None:
        raise ValueError(f"application_server must be http://host:port, got {url!r}")
    return host, port


# Per persistent store (each task's own), how many deserialized values stay cached. A hopping window store holds
# keys x size / advance windows; at 100,000 a 5-minute window advancing by 1 minute over 25,000 keys a partition
# (150,000 windows) evicted the windows its next records and its final results read, and a 1,000,000-record
# count took 23.0 s instead of 19.1-21.0 s (peak RSS 756-764 MiB against 781-783 MiB).
DEFAULT_CACHE_MAX_ENTRIES = 200_000


@dataclass
class StreamsConfig:
    application_id: str
    num_threads: int = 1
    state_dir: Path | None = None
    commit_interval_ms: int = 5000
    default_store: str = "rocksdb"
    cache_max_entries: int = DEFAULT_CACHE_MAX_ENTRIES
    deserialization_error_handler: Any = "fail"
    processing_exception_handler: Any = "fail"
    production_exception_handler: Any = "fail"
    poll_timeout_ms: int = 100
    max_poll_records: int = 5000
    restore_batch: int = 10_000
    progress_interval_s: float = 10.0
    linger_ms: int = 100
    num_standby_replicas: int = 0
    max_warmup_replicas: int = 2
    acceptable_recovery_lag: int = 10_000
    probing_rebalance_interval_ms: int = 600_000
    session_timeout_ms: int = 10_000
    heartbeat_interval_ms: int | None = None  # None: a quarter of the session timeout
    application_server: str | None = None
    processing_guarantee: str = AT_LEAST_ONCE
    gc_tuning: bool = True
    #: Kafka Streams' ``emit.interval.ms.kstreams.outer.join.spurious.results.fix`` and
    #: ``emit.interval.ms.kstreams.windowed.aggregation``: wall-clock ms between two scans for final results of
    #: a left/outer stream-stream join / an emit-final windowed aggregation (``streams/emit_throttle.py``).
    outer_join_emit_interval_ms: int = DEFAULT_EMIT_INTERVAL_MS
    windowed_aggregation_emit_interval_ms: int = DEFAULT_EMIT_INTERVAL_MS

    def __post_init__(self) -> None:
        import re

        if not isinstance(self.application_id, str) or not re.match(r"^[A-Za-z0-9._-]{1,200}$", self.application_id):
            raise ValueError(f"application_id {self.application_id!r} is invalid: use 1-200 of [A-Za-z0-9._-]")
        for name in (
            "num_threads",
            "commit_interval_ms",
            "poll_timeout_ms",
            "max_poll_records",
            "restore_batch",
            "probing_rebalance_interval_ms",
            "session_timeout_ms",
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < (0 if name == "poll_timeout_ms" else 1):
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if self.default_store not in ("rocksdb", "memory"):
            raise ValueError(f"default_store must be 'rocksdb' or 'memory', got {self.default_store!r}")
        if self.cache_max_entries < 1:
            raise ValueError(f"cache_max_entries must be >= 1, got {self.cache_max_entries!r}")
        if self.heartbeat_interval_ms is not None and not 0 < self.heartbeat_interval_ms < self.session_timeout_ms:
            raise ValueError(
                f"heartbeat_interval_ms must be > 0 and below session_timeout_ms ({self.session_timeout_ms}), "
                f"got {self.heartbeat_interval_ms!r}"
            )
        if self.application_server is not None and not isinstance(self.application_server, str):
            raise ValueError(f"application_server must be a URL string, got {self.application_server!r}")
        if self.application_server is not None:
            parse_host_port(self.application_server)
        if self.state_dir is not None:
            self.state_dir = Path(self.state_dir)
        if not isinstance(self.gc_tuning, bool):
            raise ValueError(f"gc_tuning must be True or False, got {self.gc_tuning!r}")
        self.emit_intervals  # noqa: B018 - raises on an invalid interval
        if self.processing_guarantee in _RETIRED_GUARANTEES:
            raise ValueError(
                f"processing_guarantee {self.processing_guarantee!r} is deprecated since Kafka Streams 3.0 and not "
                f"supported: use {EXACTLY_ONCE_V2!r}"
            )
        if self.processing_guarantee not in (AT_LEAST_ONCE, EXACTLY_ONCE_V2):
            raise ValueError(
                f"processing_guarantee must be {AT_LEAST_ONCE!r} or {EXACTLY_ONCE_V2!r}, "
                f"got {self.processing_guarantee!r}"
            )

    @property
    def emit_intervals(self) -> EmitIntervals:
        """The two emit throttles, validated (an interval must be an integer >= 0)."""
        return EmitIntervals(self.outer_join_emit_interval_ms, self.windowed_aggregation_emit_interval_ms)

    @property
    def exactly_once(self) -> bool:
        return self.processing_guarantee == EXACTLY_ONCE_V2

    @property
    def heartbeat_interval_s(self) -> float:
        ms = self.heartbeat_interval_ms if self.heartbeat_interval_ms is not None else self.session_timeout_ms / 4
        return ms / 1000
