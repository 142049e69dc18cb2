"""Concurrent registration load for the HA tests: client threads registering distinct Avro schemas."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from confluent_kafka.schema_registry import Schema, SchemaRegistryClient


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
