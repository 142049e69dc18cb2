"""Concurrent registration load for the HA tests: client threads registering distinct Avro schemas (``run_load``:
a fixed count; ``Workload``: until stopped, each write read back)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import httpx
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient

from tests.support.invariants import Ack


def schema_text(i: int) -> str:
    """Schema number ``i``: distinct per ``i``, and any two are backward compatible (one optional field)."""
    return json.dumps(
        {"type": "record", "name": "Load", "fields": [{"name": f"f{i}", "type": "int", "default": 0}]},
        separators=(",", ":"),
    )


@dataclass
class LoadResult:
    acked: dict[int, tuple[str, int]] = field(default_factory=dict)  # schema number -> (subject, id)
    failed: dict[int, str] = field(default_factory=dict)  # schema number -> last error
    lock: threading.Lock = field(default_factory=threading.Lock)


def run_load(
    urls: list[str],
    prefix: str,
    *,
    count: int = 500,
    threads: int = 8,
    subjects: int = 100,
    retries: int = 0,
    on_ack: Callable[[int], None] | None = None,
) -> LoadResult:
    """Register ``count`` schemas from ``threads`` threads. Request ``n`` goes to ``urls[n % len(urls)]``
    first (round robin); a client falls over to the next URL on connection errors and retries 5xx answers
    ``retries`` times (confluent-kafka's own retry loop)."""
    result = LoadResult()
    options = {"max.retries": retries, "retries.wait.ms": 100, "retries.max.wait.ms": 1000, "timeout": 30}
    clients = [SchemaRegistryClient({"url": ",".join(urls[k:] + urls[:k]), **options}) for k in range(len(urls))]

    def work(t: int) -> None:
        for i in range(t, count, threads):
            subject = f"{prefix}-{i % subjects}"
            try:
                schema_id = clients[i % len(clients)].register_schema(subject, Schema(schema_text(i), "AVRO"))
            except Exception as e:  # the caller decides which failures are acceptable
                with result.lock:
                    result.failed[i] = repr(e)
                continue
            with result.lock:
                result.acked[i] = (subject, schema_id)
            if on_ack is not None:
                on_ack(len(result.acked))

    workers = [threading.Thread(target=work, args=(t,), name=f"load-{t}") for t in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return result


@dataclass
class Outcome:
    """What a ``Workload`` saw: acknowledged writes, failed requests (by status and error code), and the
    latencies of the writes that succeeded."""

    acked: list[Ack] = field(default_factory=list)
    write_errors: list[str] = field(default_factory=list)
    #: (subject, schema) of each write that failed: applied whole or not at all, the client cannot tell
    unacked: list[tuple[str, str]] = field(default_factory=list)
    read_errors: list[str] = field(default_factory=list)
    write_seconds: list[float] = field(default_factory=list)
    reads: int = 0

    def p99(self) -> float:
        ordered = sorted(self.write_seconds)
        return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] if ordered else 0.0


class Workload:
    """``threads`` clients, each writing schema after schema (``schema_text``) through its own instance of
    ``urls`` (client ``t`` to ``urls[t % len(urls)]``) and reading each acknowledged one back from it, until
    ``stop()``. A failed request is
    recorded, not retried: the caller decides which failures the fault allows."""

    def __init__(self, urls: list[str], prefix: str, *, threads: int = 8, subjects: int = 20, timeout: float = 30):
        self.urls, self.prefix, self.subjects, self.timeout = urls, prefix, subjects, timeout
        self.outcome = Outcome()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._next = 0
        self._threads = [threading.Thread(target=self._work, args=(t,), name=f"load-{t}") for t in range(threads)]

    def __enter__(self) -> Workload:
        for t in self._threads:
            t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> Outcome:
        self._stop.set()
        for t in self._threads:
            t.join()
        return self.outcome

    def _number(self) -> int:
        with self._lock:
            self._next += 1
            return self._next

    def _work(self, t: int) -> None:
        with httpx.Client(timeout=self.timeout) as http:
            while not self._stop.is_set():
                i = self._number()
                url = self.urls[t % len(self.urls)]
                subject, schema = f"{self.prefix}-{i % self.subjects}", schema_text(i)
                started = time.monotonic()
                try:
                    r = http.post(f"{url}/subjects/{subject}/versions", json={"schema": schema})
                except httpx.HTTPError as e:
                    self._failed(subject, schema, f"{url} {subject}: {e!r}")
                    continue
                if r.status_code != 200:
                    self._failed(subject, schema, f"{url} {subject}: {r.status_code} {r.text}")
                    continue
                ack = Ack(subject, schema, r.json()["id"])
                with self._lock:
                    self.outcome.acked.append(ack)
                    self.outcome.write_seconds.append(time.monotonic() - started)
                try:
                    got = http.get(f"{url}/schemas/ids/{ack.id}")
                    ok = got.status_code == 200 and json.loads(got.json()["schema"]) == json.loads(schema)
                    if not ok:
                        self._record(self.outcome.read_errors, f"{url} id {ack.id}: {got.status_code} {got.text}")
                except httpx.HTTPError as e:
                    self._record(self.outcome.read_errors, f"{url} id {ack.id}: {e!r}")
                with self._lock:
                    self.outcome.reads += 1

    def _failed(self, subject: str, schema: str, why: str) -> None:
        with self._lock:
            self.outcome.write_errors.append(why)
            self.outcome.unacked.append((subject, schema))
        self._stop.wait(0.2)  # a client backs off a little: an instance that is down refuses at once

    def _record(self, into: list[str], what: str) -> None:
        with self._lock:
            into.append(what)
