"""Taking over a ``_schemas`` topic written by Confluent Schema Registry, and refusing a topic that is wrong."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.support.ports import free_port
from tests.support.registry_cluster import read_topic
from tests.support.registry_process import RegistryProcess

pytestmark = pytest.mark.kafka

ORDERS_V1 = '{"type":"record","name":"Order","fields":[{"name":"id","type":"long"}]}'
ORDERS_V2 = (
    '{"type":"record","name":"Order","fields":[{"name":"id","type":"long"},'
    '{"name":"note","type":["null","string"],"default":null}]}'
)

#: Confluent 8's GUID of the schema "string": MD5 of the text, as a UUID (the same on every registry)
STRING_GUID = "095d71cf-1255-6b9d-5e33-0ad575b3df5d"


def without_guid(body: dict) -> dict:
    return {k: v for k, v in body.items() if k != "guid"}


def k(obj: str) -> bytes:
    return obj.encode()


def v(obj: dict | None) -> bytes | None:
    return None if obj is None else json.dumps(obj, separators=(",", ":")).encode()


# What a Confluent registry (old and new versions) leaves in _schemas, in log order.
LEGACY_KEY = k('{"subject":"legacy","version":1,"magic":0,"keytype":"SCHEMA"}')
CONFLUENT_RECORDS: list[tuple[bytes, bytes | None]] = [
    (k('{"keytype":"NOOP","magic":0}'), None),
    # an old registry's key field order and magic 0
    (LEGACY_KEY, v({"subject": "legacy", "version": 1, "id": 1, "schema": '"string"', "deleted": False})),
    (
        k('{"keytype":"SCHEMA","subject":"orders-value","version":1,"magic":1}'),
        v({"subject": "orders-value", "version": 1, "id": 2, "schema": ORDERS_V1, "deleted": False}),
    ),
    (
        k('{"keytype":"SCHEMA","subject":"orders-value","version":2,"magic":1}'),
        v({"subject": "orders-value", "version": 2, "id": 3, "schema": ORDERS_V2, "deleted": False}),
    ),
    # soft delete of version 2: the same key again with deleted=true
    (
        k('{"keytype":"SCHEMA","subject":"orders-value","version":2,"magic":1}'),
        v({"subject": "orders-value", "version": 2, "id": 3, "schema": ORDERS_V2, "deleted": True}),
    ),
    (k('{"keytype":"CONFIG","subject":null,"magic":0}'), v({"compatibilityLevel": "FULL"})),
    # a legacy config value without "subject"
    (k('{"keytype":"CONFIG","subject":"orders-value","magic":0}'), v({"compatibilityLevel": "NONE"})),
    (
        k('{"keytype":"SCHEMA","subject":"frozen","version":1,"magic":1}'),
        v({"subject": "frozen", "version": 1, "id": 4, "schema": '"int"', "deleted": False}),
    ),
    (k('{"keytype":"MODE","subject":"frozen","magic":0}'), v({"subject": "frozen", "mode": "READONLY"})),
    # registered, then hard-deleted by a tombstone
    (
        k('{"keytype":"SCHEMA","subject":"gone","version":1,"magic":1}'),
        v({"subject": "gone", "version": 1, "id": 5, "schema": '"bytes"', "deleted": False}),
    ),
    (k('{"keytype":"SCHEMA","subject":"gone","version":1,"magic":1}'), None),
    # a subject soft-deleted as a whole
    (
        k('{"keytype":"SCHEMA","subject":"soft","version":1,"magic":1}'),
        v({"subject": "soft", "version": 1, "id": 6, "schema": '"float"', "deleted": False}),
    ),
    (k('{"keytype":"DELETE_SUBJECT","subject":"soft","magic":0}'), v({"subject": "soft", "version": 1})),
    # a JSON schema, 8.x style with schemaType
    (
        k('{"keytype":"SCHEMA","subject":"json-value","version":1,"magic":1}'),
        v(
            {
                "subject": "json-value",
                "version": 1,
                "id": 7,
                "schemaType": "JSON",
                "schema": '{"type":"object"}',
                "deleted": False,
            }
        ),
    ),
    # a record that reuses id 2 for another schema: every replica ignores it
    (
        k('{"keytype":"SCHEMA","subject":"conflict","version":1,"magic":1}'),
        v({"subject": "conflict", "version": 1, "id": 2, "schema": '"double"', "deleted": False}),
    ),
    (k('{"keytype":"MODE","subject":null,"magic":0}'), v({"mode": "READWRITE"})),
    (k('{"keytype":"NOOP","magic":0}'), None),
]


def create_topic(bootstrap: str, topic: str, partitions: int = 1, policy: str = "compact") -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1, config={"cleanup.policy": policy})])[topic].result(30)


def fill_topic(bootstrap: str, topic: str, records: list[tuple[bytes, bytes | None]]) -> None:
    create_topic(bootstrap, topic)
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 0})
    for key, value in records:
        producer.produce(topic, value=value, key=key, partition=0)
    assert producer.flush(30) == 0


def test_a_confluent_schemas_topic_is_served_as_it_is(
    start_registry: Callable[..., RegistryProcess], kafka_log_url: str, kafka_bootstrap: str
) -> None:
    topic = f"confluent-{uuid.uuid4().hex[:10]}"
    fill_topic(kafka_bootstrap, topic, CONFLUENT_RECORDS)
    node = start_registry(kafka_log_url, "--topic", topic, "--group-id", f"sr-{topic}")
    with httpx.Client(base_url=node.url, timeout=30) as http:
        assert http.get("/subjects").json() == ["frozen", "json-value", "legacy", "orders-value"]
        assert http.get("/subjects", params={"deleted": "true"}).json() == [
            "frozen",
            "json-value",
            "legacy",
            "orders-value",
            "soft",
        ]
        assert http.get("/subjects/orders-value/versions").json() == [1]
        assert http.get("/subjects/orders-value/versions", params={"deleted": "true"}).json() == [1, 2]
        assert http.get("/subjects/legacy/versions/1").json() == {
            "subject": "legacy",
            "version": 1,
            "id": 1,
            "guid": STRING_GUID,
            "schema": '"string"',
        }
        assert without_guid(http.get("/schemas/ids/2").json()) == {"schema": ORDERS_V1}
        assert without_guid(http.get("/schemas/ids/7").json()) == {"schemaType": "JSON", "schema": '{"type":"object"}'}
        assert http.get("/subjects/conflict/versions").json()["error_code"] == 40401
        assert http.get("/subjects/gone/versions").json()["error_code"] == 40401
        assert http.get("/config").json() == {"compatibilityLevel": "FULL"}
        assert http.get("/config/orders-value").json() == {"compatibilityLevel": "NONE"}
        assert http.get("/mode/frozen").json() == {"mode": "READONLY"}
        r = http.post("/subjects/frozen/versions", json={"schema": '"long"'})
        assert r.json()["error_code"] == 42205

        # New ids continue after the highest id in the log.
        assert http.post("/subjects/new/versions", json={"schema": '"boolean"'}).json()["id"] == 8

        # A hard delete tombstones the exact key bytes the old registry wrote, so compaction removes them.
        assert http.delete("/subjects/legacy").json() == [1]
        assert http.delete("/subjects/legacy", params={"permanent": "true"}).json() == [1]
        assert http.get("/subjects/legacy/versions", params={"deleted": "true"}).json()["error_code"] == 40401
    tombstoned = [m.key() for m in read_topic(kafka_bootstrap, topic) if m.value() is None]
    assert LEGACY_KEY in tombstoned

    # After a restart (a replay of the whole topic) the deleted schema stays deleted.
    node.restart()
    with httpx.Client(base_url=node.url, timeout=30) as http:
        assert http.get("/subjects", params={"deleted": "true"}).json() == [
            "frozen",
            "json-value",
            "new",
            "orders-value",
            "soft",
        ]
        assert without_guid(http.get("/schemas/ids/8").json()) == {"schema": '"boolean"'}


def start_and_expect_refusal(log_url: str, topic: str, tmp_path: Path) -> str:
    """Run ``schemakit serve`` on ``topic``; it must exit non-zero without serving. Returns its output."""
    cmd = [sys.executable, "-m", "registry", "serve", "--log", log_url, "--port", str(free_port()), "--topic", topic]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.startswith("schemakit: cannot start")]
    assert len(lines) == 1, proc.stderr
    return lines[0]


@pytest.mark.parametrize(
    ("partitions", "policy", "expected"),
    [
        pytest.param(
            3,
            "compact",
            ["topic '{topic}' has 3 partitions but the registry needs exactly 1", "recreate"],
            id="several-partitions",
        ),
        pytest.param(
            1,
            "delete",
            [
                "topic '{topic}' has cleanup.policy=delete but the registry needs cleanup.policy=compact",
                "--add-config cleanup.policy=compact",
            ],
            id="not-compacted",
        ),
    ],
)
def test_a_wrong_schemas_topic_is_refused(
    kafka_log_url: str, kafka_bootstrap: str, tmp_path: Path, partitions: int, policy: str, expected: list[str]
) -> None:
    topic = f"bad-{uuid.uuid4().hex[:10]}"
    create_topic(kafka_bootstrap, topic, partitions, policy)
    message = start_and_expect_refusal(kafka_log_url, topic, tmp_path)
    for part in expected:
        assert part.format(topic=topic) in message
