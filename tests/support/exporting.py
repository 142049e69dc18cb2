"""What the schema exporter tests share: filling a source registry, waiting for an exporter to catch up, and
comparing what two registries answer byte for byte."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import httpx

from streams.log import OFFSET_BEGINNING, TopicPartition, open_log
from tests.support.waiting import poll_until


def avro_version(subject: str, n: int) -> str:
    """Version ``n`` of ``subject``'s record: one optional field more than version ``n - 1`` (BACKWARD
    compatible), so every subject's versions are different schemas with ids of their own."""
    name = "".join(c if c.isalnum() else "_" for c in subject)
    fields: list[dict[str, Any]] = [{"name": "id", "type": "long"}]
    fields += [{"name": f"f{i}", "type": ["null", "string"], "default": None} for i in range(1, n)]
    return json.dumps({"type": "record", "name": f"R_{name}", "fields": fields})


def register(http: httpx.Client, url: str, subject: str, schema: str, **extra: Any) -> int:
    response = http.post(f"{url}/subjects/{subject}/versions", json={"schema": schema, **extra})
    assert response.status_code == 200, response.text
    schema_id: int = response.json()["id"]
    return schema_id


def fill(http: httpx.Client, url: str, subjects: list[str], versions: int, first: int = 1) -> None:
    """``versions`` versions of each subject, interleaved (subject order within each round)."""
    for n in range(first, first + versions):
        for subject in subjects:
            register(http, url, subject, avro_version(subject, n))


def status(http: httpx.Client, url: str, name: str) -> dict[str, Any]:
    response = http.get(f"{url}/exporters/{name}/status")
    assert response.status_code == 200, response.text
    found: dict[str, Any] = response.json()
    return found


def wait_caught_up(http: httpx.Client, url: str, name: str, timeout: float = 60.0) -> dict[str, Any]:
    """The exporter's status once it runs with nothing left to export."""
    return poll_until(
        lambda: status(http, url, name),
        lambda s: s["state"] == "RUNNING" and s["lagRecords"] == 0,
        timeout=timeout,
        interval=0.2,
        what=f"exporter {name} to catch up",
        ignoring=(httpx.TransportError, AssertionError),
    )


def answers(http: httpx.Client, url: str, subjects: list[str] | None = None) -> dict[str, bytes]:
    """Every GET a client reads a registry's schemas with, by path: the subject list, each subject's versions
    (soft-deleted ones too), each version, each id's schema and its subject-versions, with the raw bytes."""
    out: dict[str, bytes] = {}

    def get(path: str) -> bytes:
        response = http.get(url + path)
        assert response.status_code == 200, f"GET {path}: {response.status_code} {response.text}"
        out[path] = response.content
        return response.content

    listed = json.loads(get("/subjects?deleted=true"))
    get("/subjects")
    ids = set()
    for subject in subjects if subjects is not None else listed:
        path = f"/subjects/{subject}/versions"
        for v in json.loads(get(path + "?deleted=true")):
            ids.add(json.loads(get(f"{path}/{v}?deleted=true"))["id"])
            get(f"{path}/{v}/schema?deleted=true")
        get(path)
    for schema_id in sorted(ids):
        get(f"/schemas/ids/{schema_id}")
        get(f"/schemas/ids/{schema_id}/versions?deleted=true")
    return out


def schema_writes(
    log_url: str, topic: str = "_schemas", subjects: list[str] | None = None
) -> Counter[tuple[str, int, bool]]:
    """How often each (subject, version, deleted) was written to a registry's log (of ``subjects`` only, when
    given): a destination written twice counts more than its source."""
    counts: Counter[tuple[str, int, bool]] = Counter()
    for key, value in _records(log_url, topic):
        if key.get("keytype") == "SCHEMA" and value is not None and (subjects is None or key["subject"] in subjects):
            counts[(key["subject"], key["version"], bool(value.get("deleted")))] += 1
    return counts


def settings_writes(log_url: str, topic: str = "_schemas") -> Counter[tuple[str, str | None]]:
    """How often each (CONFIG or MODE, subject) was written to a registry's log."""
    counts: Counter[tuple[str, str | None]] = Counter()
    for key, value in _records(log_url, topic):
        if key.get("keytype") in ("CONFIG", "MODE") and value is not None:
            counts[(key["keytype"], key.get("subject"))] += 1
    return counts


def _records(log_url: str, topic: str) -> list[tuple[dict[str, Any], dict[str, Any] | None]]:
    """Every record of a registry's log, key and value decoded."""
    out: list[tuple[dict[str, Any], dict[str, Any] | None]] = []
    with open_log(log_url) as log:
        consumer = log.consumer(None)
        consumer.assign({TopicPartition(topic, 0): OFFSET_BEGINNING})
        end = log.end_offsets(topic).get(0, 0)
        seen = -1
        while seen < end - 1:
            for record in consumer.poll(0.5, 5000):
                seen = record.offset
                value = json.loads(record.value) if record.value is not None else None
                out.append((json.loads(record.key or b"{}"), value))
        consumer.close()
    return out
