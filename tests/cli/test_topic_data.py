"""``schemakit topic produce`` and ``consume``: round trips through the registry on SQLite and the test broker,
records written by confluent-kafka's own serializers, undecodable records, where reading starts and stops."""

from __future__ import annotations

import base64
import io
import json
import sys
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from confluent_kafka import Producer
from confluent_kafka.schema_registry import SchemaRegistryClient, header_schema_id_serializer
from confluent_kafka.schema_registry.avro import AvroSerializer as CkAvroSerializer
from confluent_kafka.schema_registry.json_schema import JSONSerializer as CkJsonSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer as CkProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from serdes import wire
from streams.log import open_log
from tests.support.cli import Result
from tests.support.protos import message_class
from tests.support.schemas import order_variant

Cli = Callable[..., Result]

# the shared order schema's id, qty (as an int) and note, in this suite's namespace
AVRO_VALUE = json.dumps({**order_variant(fields=["id", "qty", "note"], types={"qty": "int"}), "namespace": "skt.cli"})
JSON_VALUE = json.dumps(
    {
        "type": "object",
        "title": "Order",
        "properties": {"id": {"type": "string"}, "qty": {"type": "integer"}, "note": {"type": ["string", "null"]}},
        "required": ["id", "qty"],
    }
)
PROTO_VALUE = 'syntax = "proto3";\npackage skt.cli.topic;\nmessage Order {\n  string id = 1;\n  int32 qty = 2;\n}\n'
PROTO_KEY = 'syntax = "proto3";\npackage skt.cli.topickey;\nmessage OrderKey {\n  string id = 1;\n}\n'

# format -> (value schema file, key schema file, the three records' keys and values)
ROUND_TRIPS: dict[str, tuple[tuple[str, str], tuple[str, str], list[tuple[Any, Any]]]] = {
    "avro": (
        ("order.avsc", AVRO_VALUE),
        ("key.avsc", '"string"'),
        [
            ("o-1", {"id": "o-1", "qty": 3, "note": "gift"}),
            ("o-2", {"id": "o-2", "qty": 1, "note": None}),
            ("o-3", {"id": "o-3", "qty": 7, "note": "é€"}),
        ],
    ),
    "json": (
        ("order.json", JSON_VALUE),
        ("key.json", '{"type": "string"}'),
        [
            ("o-1", {"id": "o-1", "qty": 3, "note": "gift"}),
            ("o-2", {"id": "o-2", "qty": 1, "note": None}),
            ("o-3", {"id": "o-3", "qty": 7}),
        ],
    ),
    "protobuf": (
        ("order.proto", PROTO_VALUE),
        ("key.proto", PROTO_KEY),
        [
            ({"id": "o-1"}, {"id": "o-1", "qty": 3}),
            ({"id": "o-2"}, {"id": "o-2", "qty": 1}),
            ({"id": "o-3"}, {"id": "o-3", "qty": 7}),
        ],
    ),
}


@pytest.fixture
def topic() -> str:
    return f"cli-topic-{uuid.uuid4().hex[:10]}"


def lines(result: Result) -> list[dict[str, Any]]:
    assert result.code == 0, result.err
    return [json.loads(line) for line in result.out.splitlines()]


def latest_id(registry_url: str, subject: str) -> int:
    return int(httpx.get(f"{registry_url}/subjects/{subject}/versions/latest", timeout=10).json()["id"])


def write_lines(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


@pytest.mark.parametrize("fmt", list(ROUND_TRIPS))
def test_produce_then_consume_round_trip(
    cli: Cli, log_url: str, registry_url: str, topic: str, tmp_path: Path, fmt: str
) -> None:
    (value_file, value_text), (key_file, key_text), items = ROUND_TRIPS[fmt]
    (tmp_path / value_file).write_text(value_text)
    (tmp_path / key_file).write_text(key_text)
    headers = [{"trace": "t-1", "tenant": "ü"}, None, {"only": ""}]
    records: list[dict[str, Any]] = []
    for (key, value), head in zip(items, headers, strict=True):
        records.append({"key": key, "value": value, **({"headers": head} if head else {})})
    records[1]["partition"] = 1
    source = write_lines(tmp_path / "in.jsonl", records)
    assert cli("topic", "create", topic, "--partitions", "2", "--log", log_url).code == 0
    produced = cli(
        "topic", "produce", topic, "--log", log_url, "--file", str(source), "--registry", registry_url,
        "--value-format", fmt, "--value-schema", str(tmp_path / value_file),
        "--key-format", fmt, "--key-schema", str(tmp_path / key_file), "--auto-register",
    )  # fmt: skip
    assert produced.code == 0, produced.err
    assert produced.out == ""
    assert produced.err.startswith("produced 3 records (") and f"to {topic} in " in produced.err
    value_id, key_id = latest_id(registry_url, f"{topic}-value"), latest_id(registry_url, f"{topic}-key")

    consumed = lines(cli("topic", "consume", topic, "--log", log_url, "--registry", registry_url))
    assert len(consumed) == 3
    by_key = {json.dumps(r["key"], sort_keys=True): r for r in consumed}
    for record in records:
        got = by_key[json.dumps(record["key"], sort_keys=True)]
        assert got["value"] == record["value"]
        assert got["headers"] == record.get("headers", {})
        assert (got["topic"], got["schema_id"], got["key_schema_id"]) == (topic, value_id, key_id)
        assert "undecodable" not in got
        assert isinstance(got["timestamp"], int) and isinstance(got["offset"], int)
    assert by_key[json.dumps(records[1]["key"], sort_keys=True)]["partition"] == 1
    # a subject's latest schema is used with --subject, with no schema file
    again = cli(
        "topic", "produce", topic, "--log", log_url, "--file", str(write_lines(tmp_path / "v.jsonl", [items[0][1]])),
        "--value-only", "--registry", registry_url, "--value-format", fmt, "--subject", f"{topic}-value", "-q",
    )  # fmt: skip
    assert again.code == 0, again.err
    assert again.err == ""
    last = lines(cli("topic", "consume", topic, "--log", log_url, "--registry", registry_url, "-q"))
    assert len(last) == 4
    assert [(r["key"], r["value"], r["schema_id"]) for r in last if r["key"] is None] == [(None, items[0][1], value_id)]


@pytest.mark.kafka
def test_records_of_confluent_kafkas_serializers_decode(
    cli: Cli, kafka_bootstrap: str, kafka_log_url: str, registry_url: str, topic: str
) -> None:
    ck_client = SchemaRegistryClient({"url": registry_url})
    order = {"id": "o-9", "qty": 2, "note": None}
    proto_cls = message_class(PROTO_VALUE.replace("skt.cli.topic", "skt.cli.ck"), "skt.cli.ck.Order", "ck_order.proto")
    value_ctx = SerializationContext(topic, MessageField.VALUE)
    header_ctx = SerializationContext(topic, MessageField.VALUE, [])
    written = [
        ("avro", CkAvroSerializer(ck_client, AVRO_VALUE)(order, value_ctx), None),
        (
            "avro in a header",
            CkAvroSerializer(ck_client, AVRO_VALUE, conf={"schema.id.serializer": header_schema_id_serializer})(
                order, header_ctx
            ),
            header_ctx.headers,
        ),
        (
            "json",
            CkJsonSerializer(JSON_VALUE, ck_client, conf={"subject.name.strategy": _json_subject})(order, value_ctx),
            None,
        ),
        (
            "protobuf",
            CkProtobufSerializer(
                proto_cls,
                ck_client,
                {"use.deprecated.format": False, "subject.name.strategy": _proto_subject},
            )(proto_cls(id="o-9", qty=2), value_ctx),
            None,
        ),
    ]
    assert cli("topic", "create", topic, "--log", kafka_log_url).code == 0
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    for name, payload, headers in written:
        producer.produce(topic, payload, name.encode(), headers=headers)
    assert producer.flush(30) == 0
    consumed = lines(cli("topic", "consume", topic, "--log", kafka_log_url, "--registry", registry_url))
    assert [r["key"] for r in consumed] == [name for name, _, _ in written]
    assert [r["value"] for r in consumed] == [order, order, order, {"id": "o-9", "qty": 2}]
    avro_id = latest_id(registry_url, f"{topic}-value")
    assert [r["schema_id"] for r in consumed[:2]] == [avro_id, avro_id]
    assert [r["schema_id"] for r in consumed[2:]] == [
        latest_id(registry_url, f"{topic}-json-value"),
        latest_id(registry_url, f"{topic}-proto-value"),
    ]


def _json_subject(ctx: SerializationContext, record_name: str | None) -> str:
    return f"{ctx.topic}-json-value"


def _proto_subject(ctx: SerializationContext, record_name: str | None) -> str:
    return f"{ctx.topic}-proto-value"


def test_undecodable_records_are_printed_with_the_reason(
    cli: Cli, registry_url: str, tmp_path: Path, topic: str
) -> None:
    url = f"sqlite:///{tmp_path}/log"
    unknown_id = wire.prefix(2_000_000_000) + b"\x02x"
    with open_log(url) as log:
        log.create_topic(topic)
        with log.producer() as p:
            p.send(topic, unknown_id, b"k1", headers=[("bin", b"\xff\x00")])
            p.send(topic, b"\xff\xfe", b"k2")
            p.send(topic, b"plain text", None)
            p.flush()
    got = lines(cli("topic", "consume", topic, "--log", url, "--registry", registry_url))
    assert [r["offset"] for r in got] == [0, 1, 2]
    assert got[0]["value"] == {"base64": base64.b64encode(unknown_id).decode()}
    assert "2000000000" in got[0]["undecodable"]["value"] and "40403" in got[0]["undecodable"]["value"]
    assert got[0]["headers"] == {"bin": {"base64": base64.b64encode(b"\xff\x00").decode()}}
    assert got[0]["key"] == "k1"
    assert got[1]["value"] == {"base64": "//4="}
    assert got[1]["undecodable"] == {"value": "neither registry-framed nor UTF-8 text (byte 0)"}
    assert (got[2]["value"], got[2]["key"], "undecodable" in got[2]) == ("plain text", None, False)
    # without a registry a framed payload names its schema id; the table shows the reason too
    bare = lines(cli("topic", "consume", topic, "--log", url, "--max-messages", "1"))
    assert bare[0]["undecodable"] == {
        "value": "registry-framed (schema id 2000000000): pass --registry URL to decode it"
    }
    shown = cli("topic", "consume", topic, "--log", url, "-o", "table", "-q")
    assert shown.code == 0, shown.err
    rows = shown.out.splitlines()
    assert rows[0].split() == ["partition", "offset", "timestamp", "key", "value"]
    assert "<undecodable: neither registry-framed nor UTF-8 text (byte 0)>" in rows[2]
    assert rows[3].endswith("plain text")
    assert shown.err == ""


def test_where_reading_starts_and_stops(cli: Cli, tmp_path: Path, topic: str, monkeypatch: pytest.MonkeyPatch) -> None:
    url = f"sqlite:///{tmp_path}/log"
    assert cli("topic", "create", topic, "-p", "2", "--log", url).code == 0
    text = "".join(json.dumps({"key": f"k{i}", "value": {"n": i}, "partition": i % 2}) + "\n" for i in range(6))
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(text.encode())))
    produced = cli("topic", "produce", topic, "--log", url)  # from stdin, no registry: values as JSON text
    assert produced.code == 0, produced.err

    def values(*args: str) -> list[str]:
        return [r["value"] for r in lines(cli("topic", "consume", topic, "--log", url, "-q", *args))]

    assert sorted(values()) == sorted(json.dumps({"n": i}, separators=(",", ":")) for i in range(6))
    assert values("--partition", "1") == ['{"n":1}', '{"n":3}', '{"n":5}']
    assert values("--partition", "0", "--offset", "2") == ['{"n":4}']
    assert len(values("--max-messages", "4")) == 4
    assert values("--partition", "0", "--follow", "--from-beginning", "-n", "2") == ['{"n":0}', '{"n":2}']
    # a group resumes where it committed
    first = values("--group", "g1", "-n", "2")
    rest = values("--group", "g1")
    assert len(first) == 2 and len(rest) == 4 and sorted(first + rest) == sorted(values())
    assert values("--group", "g1") == []


def test_auto_register_refusal_and_unknown_subject(cli: Cli, registry_url: str, tmp_path: Path, topic: str) -> None:
    url = f"sqlite:///{tmp_path}/log"
    (tmp_path / "order.avsc").write_text(AVRO_VALUE)
    source = write_lines(tmp_path / "in.jsonl", [{"value": {"id": "a", "qty": 1, "note": None}}])
    assert cli("topic", "create", topic, "--log", url).code == 0
    refused = cli(
        "topic", "produce", topic, "--log", url, "--file", str(source), "--registry", registry_url,
        "--value-format", "avro", "--value-schema", str(tmp_path / "order.avsc"),
    )  # fmt: skip
    assert refused.code == 2
    assert refused.err == (
        f"schemakit topic produce: {tmp_path / 'order.avsc'} is not registered under subject '{topic}-value', and "
        "schemas are registered only with --auto-register: pass it, or register the schema first (schemakit "
        f"registry register {tmp_path / 'order.avsc'} --subject {topic}-value)\n"
    )
    unknown = cli(
        "topic", "produce", topic, "--log", url, "--file", str(source), "--registry", registry_url,
        "--value-format", "json", "--subject", f"{topic}-nothing",
    )  # fmt: skip
    assert unknown.code == 2
    assert unknown.err.startswith(f"schemakit topic produce: subject '{topic}-nothing' does not exist in the registry")
    assert httpx.get(f"{registry_url}/subjects/{topic}-value/versions", timeout=10).status_code == 404
    with open_log(url) as log:
        assert log.end_offsets(topic) == {0: 0}  # nothing was written
    bad_line = write_lines(tmp_path / "bad.jsonl", [{"value": "ok"}, {"value": "x", "colour": 1}])
    stopped = cli("topic", "produce", topic, "--log", url, "--file", str(bad_line))
    assert stopped.code == 2
    assert stopped.err == (
        "schemakit topic produce: line 2: unknown member 'colour' (known: headers, key, partition, timestamp, "
        "value); stopped there, 1 record before it written\n"
    )
