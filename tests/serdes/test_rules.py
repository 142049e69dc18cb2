"""Data-contract rules run by the serializers and deserializers, side by side with confluent-kafka's serializers
running the same rule set on the same registry: CEL conditions, CEL_FIELD transforms by tag, JSONata migrations
across a major version, DLQ, disabled rules."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer as CkAvroDeserializer
from confluent_kafka.schema_registry.avro import AvroSerializer as CkAvroSerializer
from confluent_kafka.schema_registry.json_schema import JSONDeserializer as CkJsonDeserializer
from confluent_kafka.schema_registry.json_schema import JSONSerializer as CkJsonSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer as CkProtobufDeserializer
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer as CkProtobufSerializer
from confluent_kafka.schema_registry.rule_registry import RuleRegistry
from confluent_kafka.schema_registry.rules.cel.cel_executor import CelExecutor
from confluent_kafka.schema_registry.rules.cel.cel_field_executor import CelFieldExecutor
from confluent_kafka.schema_registry.rules.dlq.dlq_action import DlqAction
from confluent_kafka.schema_registry.rules.jsonata.jsonata_executor import JsonataExecutor
from confluent_kafka.serialization import SerializationError as CkSerializationError
from google.protobuf import json_format
from google.protobuf.message_factory import GetMessageClass

from serdes import (
    AsyncAvroDeserializer,
    AsyncProtobufDeserializer,
    AsyncRegistryClient,
    AvroDeserializer,
    AvroSerde,
    AvroSerializer,
    JsonSchemaDeserializer,
    JsonSchemaSerializer,
    MessageField,
    ProtobufDeserializer,
    ProtobufSerializer,
    RegistryClient,
    RuleError,
    SerializationContext,
    SerializationError,
    wire,
)
from serdes.protobuf import RegisteredProtoFile
from tests.support.schemas import order_variant

CelExecutor.register()
CelFieldExecutor.register()
JsonataExecutor.register()

CT = {"Content-Type": "application/vnd.schemaregistry.v1+json"}

ORDER_AVRO = order_variant(fields=["id", "qty", {"name": "ssn", "type": "string", "confluent:tags": ["PII"]}, "note"])
ORDER_JSON = {
    "type": "object",
    "properties": {
        "id": {"type": "string"},
        "qty": {"type": "integer"},
        "ssn": {"type": "string", "confluent:tags": ["PII"]},
    },
    "required": ["id", "qty", "ssn"],
}

CHECK_QTY = {"name": "checkQty", "kind": "CONDITION", "mode": "WRITE", "type": "CEL", "expr": "message.qty > 0"}
MASK_PII = {
    "name": "maskPii",
    "kind": "TRANSFORM",
    "mode": "WRITE",
    "type": "CEL_FIELD",
    "tags": ["PII"],
    "expr": "typeName == 'STRING' ; value + '-masked'",
}
GOOD = {"id": "o-1", "qty": 3, "ssn": "123", "note": None}
MASKED = {**GOOD, "ssn": "123-masked"}


@pytest.fixture
def http(registry_url: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=registry_url, timeout=30) as h:
        yield h


@pytest.fixture
def ck(registry_url: str) -> SchemaRegistryClient:
    return SchemaRegistryClient({"url": registry_url})


def register(
    http: httpx.Client,
    subject: str,
    schema: Any,
    schema_type: str = "AVRO",
    schema_text: str | None = None,
    **extra: Any,
) -> int:
    body = {"schema": json.dumps(schema) if schema_text is None else schema_text, **extra}
    if schema_type != "AVRO":
        body["schemaType"] = schema_type
    r = http.post(f"/subjects/{subject}/versions", json=body, headers=CT)
    assert r.status_code == 200, r.text
    return int(r.json()["id"])


def value_ctx(topic: str) -> SerializationContext:
    return SerializationContext(topic, MessageField.VALUE)


def register_majors(
    http: httpx.Client,
    subject: str,
    v1: Any,
    v2: Any,
    schema_type: str = "AVRO",
    *,
    rule_set: dict[str, Any],
    tags: dict[str, list[str]] | None = None,
    config: dict[str, str] | None = None,
) -> tuple[int, int]:
    """``v1`` and ``v2`` registered in ``subject`` as majors 1 and 2 of compatibility group "major" (so v2 is not
    checked against v1), v2 with ``rule_set`` (and ``tags``); the ids. Text schemas (Protobuf) go as they are;
    ``config``: more of the subject's config."""
    group = {**(config or {}), "compatibilityGroup": "major"}
    assert http.put(f"/config/{subject}", json=group, headers=CT).status_code == 200
    texts = [v if isinstance(v, str) else json.dumps(v) for v in (v1, v2)]
    id1 = register(http, subject, None, schema_type, schema_text=texts[0], metadata={"properties": {"major": "1"}})
    v2_metadata = {"properties": {"major": "2"}, **({"tags": tags} if tags else {})}
    id2 = register(http, subject, None, schema_type, schema_text=texts[1], metadata=v2_metadata, ruleSet=rule_set)
    return id1, id2


def register_order_proto(http: httpx.Client, client: RegistryClient, order_cls: Any, topic: str, **extra: Any) -> int:
    """The Order message registered by our serializer (v1, after its import), then its schema again as v2 with
    ``extra`` (metadata, ruleSet); v2's id."""
    subject = f"{topic}-value"
    ProtobufSerializer(client, order_cls)(order_cls(id="o-1", qty=1), value_ctx(topic))
    v1 = http.get(f"/subjects/{subject}/versions/1").json()
    return register(http, subject, None, "PROTOBUF", schema_text=v1["schema"], references=v1["references"], **extra)


@pytest.fixture
def order_cls(protos: Any, require_type: Any) -> Any:
    """The test protos' Order message class (the test skips where the registry lists no PROTOBUF)."""
    require_type("PROTOBUF")
    return protos.order.Order


def _avro_pair(client: RegistryClient, ck: SchemaRegistryClient) -> tuple[Any, Any, Any, Any]:
    ours_w = AvroSerializer(client, use_latest_version=True)
    ours_r = AvroDeserializer(client)
    ck_w = CkAvroSerializer(ck, conf={"auto.register.schemas": False, "use.latest.version": True})
    ck_r = CkAvroDeserializer(ck)
    return ours_w, ours_r, ck_w, ck_r


def _json_pair(client: RegistryClient, ck: SchemaRegistryClient) -> tuple[Any, Any, Any, Any]:
    ours_w = JsonSchemaSerializer(client, use_latest_version=True)
    ours_r = JsonSchemaDeserializer(client)
    ck_w = CkJsonSerializer(None, ck, conf={"auto.register.schemas": False, "use.latest.version": True})
    ck_r = CkJsonDeserializer(None, schema_registry_client=ck)
    return ours_w, ours_r, ck_w, ck_r


FORMATS = {
    "avro": (ORDER_AVRO, "AVRO", _avro_pair, {k: v for k, v in GOOD.items()}),
    "json": (ORDER_JSON, "JSON", _json_pair, {k: v for k, v in GOOD.items() if k != "note"}),
}


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_cel_condition_and_field_transform_match_confluent(
    fmt: str, http: httpx.Client, client: RegistryClient, ck: SchemaRegistryClient, topic: str
) -> None:
    schema, schema_type, pair, good = FORMATS[fmt]
    register(http, f"{topic}-value", schema, schema_type, ruleSet={"domainRules": [CHECK_QTY, MASK_PII]})
    ours_w, ours_r, ck_w, ck_r = pair(client, ck)
    ctx = value_ctx(topic)
    masked = {**good, "ssn": "123-masked"}

    ours_bytes = ours_w(good, ctx)
    ck_bytes = ck_w(dict(good), ctx)
    assert ours_r(ours_bytes, ctx) == masked
    assert ck_r(ours_bytes, ctx) == masked
    assert ours_r(ck_bytes, ctx) == masked
    if fmt == "avro":
        assert ours_bytes == ck_bytes

    bad = {**good, "qty": 0}
    with pytest.raises(RuleError) as ours_err:
        ours_w(bad, ctx)
    assert ours_err.value.rule == "checkQty"
    assert "checkQty" in str(ours_err.value) and "message.qty > 0" in str(ours_err.value)
    with pytest.raises(CkSerializationError) as ck_err:
        ck_w(dict(bad), ctx)
    assert str(ck_err.value.__cause__) == "Rule expr failed: message.qty > 0"


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_read_rules_and_disabled_rules(
    fmt: str, http: httpx.Client, client: RegistryClient, ck: SchemaRegistryClient, topic: str
) -> None:
    schema, schema_type, pair, good = FORMATS[fmt]
    read_check = {**CHECK_QTY, "name": "readQty", "mode": "READ", "expr": "message.qty < 10"}
    disabled = {**MASK_PII, "name": "off", "mode": "WRITEREAD", "disabled": True}
    register(http, f"{topic}-value", schema, schema_type, ruleSet={"domainRules": [read_check, disabled]})
    ours_w, ours_r, ck_w, ck_r = pair(client, ck)
    ctx = value_ctx(topic)
    big = {**good, "qty": 12}
    data = ours_w(big, ctx)  # READ rules do not run on write; the disabled transform never runs
    assert data == ck_w(dict(big), ctx) or fmt == "json"
    assert ours_r(ours_w(good, ctx), ctx) == good
    with pytest.raises(RuleError) as ours_err:
        ours_r(data, ctx)
    assert (ours_err.value.rule, ours_err.value.mode) == ("readQty", "READ")
    with pytest.raises(CkSerializationError) as ck_err:
        ck_r(data, ctx)
    assert str(ck_err.value.__cause__) == "Rule expr failed: message.qty < 10"


WIDGET_V1 = {
    "type": "record",
    "name": "Widget",
    "fields": [{"name": "name", "type": "string"}, {"name": "size", "type": "int"}],
}
WIDGET_V2 = {**WIDGET_V1, "fields": [WIDGET_V1["fields"][0], {"name": "height", "type": "int"}]}  # size renamed
UPGRADE = {
    "name": "sizeToHeight",
    "kind": "TRANSFORM",
    "type": "JSONATA",
    "mode": "UPGRADE",
    "expr": "$merge([$sift($, function($v, $k) {$k != 'size'}), {'height': $.'size'}])",
}
DOWNGRADE = {
    "name": "heightToSize",
    "kind": "TRANSFORM",
    "type": "JSONATA",
    "mode": "DOWNGRADE",
    "expr": "$merge([$sift($, function($v, $k) {$k != 'height'}), {'size': $.'height'}])",
}


def test_jsonata_migrations_across_a_compatibility_group_match_confluent(
    http: httpx.Client, client: RegistryClient, ck: SchemaRegistryClient, topic: str
) -> None:
    subject = f"{topic}-value"
    # renaming a field is incompatible, but v2 starts a new group: only versions with major=2 are checked
    register_majors(
        http,
        subject,
        WIDGET_V1,
        WIDGET_V2,
        rule_set={"migrationRules": [UPGRADE, DOWNGRADE]},
        config={"compatibility": "BACKWARD"},
    )
    ctx = value_ctx(topic)
    v1, v2 = {"major": "1"}, {"major": "2"}
    old = {"name": "w", "size": 7}
    new = {"name": "w", "height": 7}

    ours_v1 = AvroSerializer(client, use_latest_with_metadata=v1)(old, ctx)
    ck_v1 = CkAvroSerializer(ck, conf={"auto.register.schemas": False, "use.latest.with.metadata": v1})(old, ctx)
    assert ours_v1 == ck_v1
    ck_read_v2 = CkAvroDeserializer(ck, conf={"use.latest.with.metadata": v2})
    assert AvroDeserializer(client, use_latest_with_metadata=v2)(ours_v1, ctx) == new  # UPGRADE
    assert ck_read_v2(ours_v1, ctx) == new

    ours_v2 = AvroSerializer(client, use_latest_with_metadata=v2)(new, ctx)
    ck_read_v1 = CkAvroDeserializer(ck, conf={"use.latest.with.metadata": v1})
    assert AvroDeserializer(client, use_latest_with_metadata=v1)(ours_v2, ctx) == old  # DOWNGRADE
    assert ck_read_v1(ours_v2, ctx) == old
    assert AvroDeserializer(client)(ours_v2, ctx) == new  # no reader version: no migration


def _dlq_topic(bootstrap: str, topic: str) -> str:
    dlq_topic = f"{topic}-dlq"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(dlq_topic, num_partitions=1, replication_factor=1)])[dlq_topic].result(timeout=15)
    return dlq_topic


def _dlq_records(bootstrap: str, dlq_topic: str, count: int) -> list[Any]:
    """The first ``count`` records of the dead-letter topic."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"g-{dlq_topic}",
            "enable.auto.commit": False,
            "fetch.wait.max.ms": 100,
        }
    )
    records: list[Any] = []
    try:
        consumer.assign([TopicPartition(dlq_topic, 0, 0)])
        for _ in range(100):
            msg = consumer.poll(0.2)
            if msg is not None and msg.error() is None:
                records.append(msg)
                if len(records) == count:
                    break
    finally:
        consumer.close()
    assert len(records) == count
    return records


def _headers(msg: Any) -> dict[str, str]:
    return {k: v.decode() for k, v in msg.headers() or [] if v is not None}


def test_dlq_action_produces_the_record_and_raises(
    http: httpx.Client, client: RegistryClient, topic: str, kafka_bootstrap: str
) -> None:
    bootstrap = kafka_bootstrap
    dlq_topic = _dlq_topic(bootstrap, topic)
    rule = {**CHECK_QTY, "onFailure": "DLQ", "params": {"dlq.topic": dlq_topic}}
    register(http, f"{topic}-value", ORDER_AVRO, ruleSet={"domainRules": [rule]})
    rule_config = {"bootstrap.servers": bootstrap, "dlq.auto.flush": True}
    writer = AvroSerializer(client, use_latest_version=True, rule_config=rule_config)
    bad = {**GOOD, "qty": -1}
    with pytest.raises(RuleError) as err:
        writer(bad, value_ctx(topic))
    assert err.value.rule == "checkQty"
    msg = _dlq_records(bootstrap, dlq_topic, 1)[0]
    assert json.loads(msg.value()) == bad
    headers = _headers(msg)
    assert headers["__rule.name"] == "checkQty"
    assert headers["__rule.mode"] == "WRITE"
    assert headers["__rule.topic"] == topic
    assert headers["__rule.subject"] == f"{topic}-value"


# librdkafka would hold these records for a minute: only the serde's close() (its flush) delivers them in time
_LINGERING = {"linger.ms": 60000}


def test_close_delivers_the_dlq_record_sent_just_before(
    http: httpx.Client, client: RegistryClient, topic: str, kafka_bootstrap: str, caplog: pytest.LogCaptureFixture
) -> None:
    dlq_topic = _dlq_topic(kafka_bootstrap, topic)
    rule = {**CHECK_QTY, "onFailure": "DLQ", "params": {"dlq.topic": dlq_topic}}
    register(http, f"{topic}-value", ORDER_AVRO, ruleSet={"domainRules": [rule]})
    bad = {**GOOD, "qty": -1}
    writer = AvroSerializer(
        client, use_latest_version=True, rule_config={"bootstrap.servers": kafka_bootstrap, **_LINGERING}
    )
    with writer, pytest.raises(RuleError):
        writer(bad, value_ctx(topic))
    assert json.loads(_dlq_records(kafka_bootstrap, dlq_topic, 1)[0].value()) == bad
    writer.close()  # idempotent
    with pytest.raises(RuleError):  # the rule still fails the record; the DLQ says it sent nothing
        writer(bad, value_ctx(topic))
    assert "could not send the record to DLQ topic" in caplog.text and "the serde was closed" in caplog.text
    assert writer(GOOD, value_ctx(topic))[:1] == b"\x00"  # the shared client stays open
    assert client.get_latest_version(f"{topic}-value").version == 1


def test_a_closed_serde_pair_sends_nothing_more(
    http: httpx.Client, client: RegistryClient, topic: str, caplog: pytest.LogCaptureFixture
) -> None:
    rule = {**CHECK_QTY, "onFailure": "DLQ", "params": {"dlq.topic": f"{topic}-dlq"}}
    register(http, f"{topic}-value", ORDER_AVRO, ruleSet={"domainRules": [rule]})
    with AvroSerde(
        client, ORDER_AVRO, use_latest_version=True, rule_config={"bootstrap.servers": "127.0.0.1:1"}
    ) as serde:
        assert serde.deserialize(serde.serialize(GOOD, topic), topic) == GOOD
    with pytest.raises(RuleError):
        serde.serialize({**GOOD, "qty": -1}, topic)
    assert "the serde was closed" in caplog.text  # no producer was made for the closed serializer


def test_aclose_delivers_the_dlq_record_of_an_async_reader(
    http: httpx.Client, client: RegistryClient, registry_url: str, topic: str, kafka_bootstrap: str
) -> None:
    dlq_topic = _dlq_topic(kafka_bootstrap, topic)
    rule = {**CHECK_QTY, "mode": "READ", "onFailure": "DLQ", "params": {"dlq.topic": dlq_topic}}
    register(http, f"{topic}-value", ORDER_AVRO, ruleSet={"domainRules": [rule]})
    data = AvroSerializer(client, use_latest_version=True)({**GOOD, "qty": -1}, value_ctx(topic))

    async def go() -> None:
        conf = {"bootstrap.servers": kafka_bootstrap, **_LINGERING}
        async with AsyncRegistryClient(registry_url) as c:
            async with AsyncAvroDeserializer(c, rule_config=conf) as reader:
                with pytest.raises(RuleError):
                    await reader(data, value_ctx(topic))
            await reader.aclose()  # idempotent

    asyncio.run(go())
    assert _dlq_records(kafka_bootstrap, dlq_topic, 1)[0].value() == data


def test_protobuf_rules_match_confluent(
    http: httpx.Client,
    client: RegistryClient,
    ck: SchemaRegistryClient,
    order_cls: Any,
    topic: str,
) -> None:
    ctx = value_ctx(topic)
    register_order_proto(
        http,
        client,
        order_cls,
        topic,
        metadata={"tags": {"sktest.shop.Order.note": ["PII"]}},
        ruleSet={"domainRules": [CHECK_QTY, {**MASK_PII, "mode": "WRITE"}]},
    )
    good = order_cls(id="o-1", qty=3, note="ring")
    masked = order_cls(id="o-1", qty=3, note="ring-masked")
    ck_conf = {"auto.register.schemas": False, "use.latest.version": True, "use.deprecated.format": False}
    ours_bytes = ProtobufSerializer(client, order_cls, use_latest_version=True)(good, ctx)
    assert good.note == "ring"  # our transform worked on a copy (confluent-kafka's changes the message given)
    ck_bytes = CkProtobufSerializer(order_cls, ck, conf=ck_conf)(good, ctx)
    assert ours_bytes == ck_bytes
    ck_reader = CkProtobufDeserializer(order_cls, conf={"use.deprecated.format": False}, schema_registry_client=ck)
    assert ck_reader(ours_bytes, ctx) == masked
    assert ProtobufDeserializer(client, order_cls)(ck_bytes, ctx) == masked

    bad = order_cls(id="o-1", qty=0)
    with pytest.raises(RuleError) as err:
        ProtobufSerializer(client, order_cls, use_latest_version=True)(bad, ctx)
    assert err.value.rule == "checkQty"
    with pytest.raises(CkSerializationError) as ck_err:
        CkProtobufSerializer(order_cls, ck, conf=ck_conf)(bad, ctx)
    assert str(ck_err.value.__cause__) == "Rule expr failed: message.qty > 0"


READ_PII = {**MASK_PII, "name": "markRead", "mode": "READ", "expr": "typeName == 'STRING' ; value + '-read'"}
WIDGET_PROTO = 'syntax = "proto3";\npackage sktest.widget;\nmessage Widget {{\n  string name = 1;\n  {field}\n}}\n'
# v2 renames size to height under a new field number: without a migration a v1 record reads height=0
WIDGET_PROTO_V1 = WIDGET_PROTO.format(field="int32 size = 2;")
WIDGET_PROTO_V2 = WIDGET_PROTO.format(field="int32 height = 3;")


def _proto_class(client: RegistryClient, schema_id: int) -> Any:
    """The message class of a registered Protobuf schema (its first message)."""
    registered = RegisteredProtoFile(client, schema_id, client.get_schema(schema_id, fmt="serialized"))
    return GetMessageClass(registered.message([0]))


def test_protobuf_jsonata_migrations_match_confluent(
    http: httpx.Client,
    client: RegistryClient,
    ck: SchemaRegistryClient,
    registry_url: str,
    topic: str,
    require_type: Any,
) -> None:
    require_type("PROTOBUF")
    id1, id2 = register_majors(
        http,
        f"{topic}-value",
        WIDGET_PROTO_V1,
        WIDGET_PROTO_V2,
        "PROTOBUF",
        rule_set={"migrationRules": [UPGRADE, DOWNGRADE], "domainRules": [READ_PII]},
        tags={"sktest.widget.Widget.name": ["PII"]},
    )
    old_cls, new_cls = _proto_class(client, id1), _proto_class(client, id2)
    old, new = old_cls(name="w", size=7), new_cls(name="w", height=7)
    read_new = new_cls(name="w-read", height=7)  # migrated, then v2's READ rule ran on the v2 message
    ctx = value_ctx(topic)
    v1, v2 = {"major": "1"}, {"major": "2"}
    ck_conf = {"auto.register.schemas": False, "use.deprecated.format": False}

    data_v1 = ProtobufSerializer(client, old_cls, use_latest_with_metadata=v1)(old, ctx)
    assert data_v1 == CkProtobufSerializer(old_cls, ck, conf={**ck_conf, "use.latest.with.metadata": v1})(old, ctx)
    upgraded = ProtobufDeserializer(client, use_latest_with_metadata=v2)(data_v1, ctx)  # UPGRADE
    assert upgraded.DESCRIPTOR.full_name == "sktest.widget.Widget"
    assert json_format.MessageToDict(upgraded) == {"name": "w-read", "height": 7}
    assert ProtobufDeserializer(client, new_cls, use_latest_with_metadata=v2)(data_v1, ctx) == read_new

    async def read_async() -> Any:
        async with AsyncRegistryClient(registry_url) as c:
            return await AsyncProtobufDeserializer(c, new_cls, use_latest_with_metadata=v2)(data_v1, ctx)

    assert asyncio.run(read_async()) == read_new
    ck_read_v2 = CkProtobufDeserializer(
        new_cls, conf={"use.deprecated.format": False, "use.latest.with.metadata": v2}, schema_registry_client=ck
    )
    assert json_format.MessageToDict(ck_read_v2(data_v1, ctx)) == {"name": "w-read", "height": 7}

    data_v2 = ProtobufSerializer(client, new_cls, use_latest_with_metadata=v2)(new, ctx)
    assert ProtobufDeserializer(client, old_cls, use_latest_with_metadata=v1)(data_v2, ctx) == old  # DOWNGRADE
    ck_read_v1 = CkProtobufDeserializer(
        old_cls, conf={"use.deprecated.format": False, "use.latest.with.metadata": v1}, schema_registry_client=ck
    )
    assert json_format.MessageToDict(ck_read_v1(data_v2, ctx)) == {"name": "w", "size": 7}
    # no reader version: the writer's message, not migrated; the latest version (v2) without migrations between
    assert json_format.MessageToDict(ProtobufDeserializer(client)(data_v2, ctx)) == {"name": "w-read", "height": 7}
    assert ProtobufDeserializer(client, new_cls, use_latest_version=True)(data_v2, ctx) == read_new


def test_protobuf_migration_that_does_not_fit_the_reader_names_it(
    http: httpx.Client, client: RegistryClient, topic: str, require_type: Any
) -> None:
    require_type("PROTOBUF")
    keep_size = {**UPGRADE, "expr": "$"}  # leaves "size", which v2 no longer has
    id1, _ = register_majors(
        http, f"{topic}-value", WIDGET_PROTO_V1, WIDGET_PROTO_V2, "PROTOBUF", rule_set={"migrationRules": [keep_size]}
    )
    ctx = value_ctx(topic)
    old_cls = _proto_class(client, id1)
    data = ProtobufSerializer(client, old_cls, use_latest_with_metadata={"major": "1"})(old_cls(name="w", size=7), ctx)
    with pytest.raises(SerializationError) as err:
        ProtobufDeserializer(client, use_latest_with_metadata={"major": "2"})(data, ctx)
    assert str(err.value).startswith("the record migrated to sktest.widget.Widget does not fit it: ")
    assert "size" in str(err.value)
    assert (err.value.topic, err.value.schema_id) == (topic, id1)


def test_protobuf_dlq_action_on_write_and_read_matches_confluent(
    http: httpx.Client,
    client: RegistryClient,
    ck: SchemaRegistryClient,
    order_cls: Any,
    topic: str,
    kafka_bootstrap: str,
) -> None:
    ctx = value_ctx(topic)
    subject = f"{topic}-value"
    dlq_topic = _dlq_topic(kafka_bootstrap, topic)
    rule = {**CHECK_QTY, "mode": "WRITEREAD", "onFailure": "DLQ", "params": {"dlq.topic": dlq_topic}}
    schema_id = register_order_proto(http, client, order_cls, topic, ruleSet={"domainRules": [rule]})
    rule_config = {"bootstrap.servers": kafka_bootstrap, "dlq.auto.flush": True}
    bad = order_cls(id="o-9", qty=-2)
    with pytest.raises(RuleError) as err:
        ProtobufSerializer(client, order_cls, use_latest_version=True, rule_config=rule_config)(bad, ctx)
    assert err.value.rule == "checkQty"
    framed = wire.prefix(schema_id) + b"\x00" + bad.SerializeToString()  # as a writer without the rule frames it
    with pytest.raises(RuleError) as err:
        ProtobufDeserializer(client, order_cls, rule_config=rule_config)(framed, ctx)
    assert err.value.rule == "checkQty"
    # confluent-kafka's serializer with its DLQ action and the same rule set, to the same topic
    ck_rules = RuleRegistry()
    ck_rules.register_executor(CelExecutor())
    ck_dlq = DlqAction(rule_config)
    ck_rules.register_action(ck_dlq)
    with pytest.raises(CkSerializationError):
        CkProtobufSerializer(
            order_cls,
            ck,
            conf={"auto.register.schemas": False, "use.latest.version": True, "use.deprecated.format": False},
            rule_registry=ck_rules,
        )(bad, ctx)
    ck_dlq.close()

    written, read, ck_written = _dlq_records(kafka_bootstrap, dlq_topic, 3)
    assert json.loads(written.value()) == {"id": "o-9", "qty": "-2"}  # the message in its JSON mapping
    assert written.value() == ck_written.value()
    assert read.value() == framed  # the bytes read
    for m, mode in ((written, "WRITE"), (read, "READ"), (ck_written, "WRITE")):
        headers = _headers(m)
        assert headers.pop("__rule.exception")
        assert headers == {
            "__rule.name": "checkQty",
            "__rule.mode": mode,
            "__rule.subject": subject,
            "__rule.topic": topic,
        }


def test_json_jsonata_migrations_and_disabled_migration_match_confluent(
    http: httpx.Client, client: RegistryClient, ck: SchemaRegistryClient, topic: str
) -> None:
    subject = f"{topic}-value"
    v1_doc = {
        "type": "object",
        "properties": {"name": {"type": "string"}, "size": {"type": "integer"}},
        "required": ["name", "size"],
        "additionalProperties": False,
    }
    v2_doc = {
        "type": "object",
        "properties": {"name": {"type": "string"}, "height": {"type": "integer"}},
        "required": ["name", "height"],
        "additionalProperties": False,
    }
    off = {**DOWNGRADE, "disabled": True}
    register_majors(http, subject, v1_doc, v2_doc, "JSON", rule_set={"migrationRules": [UPGRADE, off]})
    ctx = value_ctx(topic)
    v1, v2 = {"major": "1"}, {"major": "2"}
    old, new = {"name": "w", "size": 7}, {"name": "w", "height": 7}
    data = JsonSchemaSerializer(client, use_latest_with_metadata=v1)(old, ctx)
    ck_conf = {"use.latest.with.metadata": v2}
    assert JsonSchemaDeserializer(client, use_latest_with_metadata=v2)(data, ctx) == new
    assert CkJsonDeserializer(None, schema_registry_client=ck, conf=ck_conf)(data, ctx) == new
    # the DOWNGRADE rule is disabled: v2 records read as v1 are not migrated, so they fail v1's schema in both
    data_v2 = JsonSchemaSerializer(client, use_latest_with_metadata=v2)(new, ctx)
    with pytest.raises(SerializationError):
        JsonSchemaDeserializer(client, use_latest_with_metadata=v1)(data_v2, ctx)
    with pytest.raises(CkSerializationError):
        CkJsonDeserializer(None, schema_registry_client=ck, conf={"use.latest.with.metadata": v1})(data_v2, ctx)


def test_json_field_rules_follow_refs_into_referenced_schemas_as_confluent(
    http: httpx.Client, client: RegistryClient, ck: SchemaRegistryClient, topic: str
) -> None:
    address = {
        "type": "object",
        "properties": {"street": {"type": "string", "confluent:tags": ["PII"]}, "zip": {"type": "string"}},
    }
    register(http, f"{topic}-address", address, "JSON")
    customer = {"type": "object", "properties": {"id": {"type": "string"}, "address": {"$ref": "address.json"}}}
    register(
        http,
        f"{topic}-value",
        customer,
        "JSON",
        references=[{"name": "address.json", "subject": f"{topic}-address", "version": 1}],
        ruleSet={"domainRules": [MASK_PII, READ_PII]},
    )
    ctx = value_ctx(topic)
    record = {"id": "c-1", "address": {"street": "main", "zip": "123"}}
    ours = JsonSchemaSerializer(client, use_latest_version=True)(record, ctx)
    assert json.loads(ours[5:]) == {"id": "c-1", "address": {"street": "main-masked", "zip": "123"}}
    assert ours == CkJsonSerializer(None, ck, conf={"auto.register.schemas": False, "use.latest.version": True})(
        record, ctx
    )
    assert JsonSchemaDeserializer(client)(ours, ctx) == {
        "id": "c-1",
        "address": {"street": "main-masked-read", "zip": "123"},
    }


def test_async_and_typed_serdes_run_the_rules(http: httpx.Client, registry_url: str, topic: str) -> None:
    import asyncio
    import dataclasses

    from serdes import AsyncAvroDeserializer, AsyncAvroSerializer, AsyncRegistryClient

    @dataclasses.dataclass
    class Order:
        id: str
        qty: int
        ssn: str
        note: str | None = None

    register(http, f"{topic}-value", ORDER_AVRO, ruleSet={"domainRules": [CHECK_QTY, MASK_PII]})
    ctx = value_ctx(topic)

    async def main() -> None:
        async with AsyncRegistryClient(registry_url) as client:
            writer = AsyncAvroSerializer(client, use_latest_version=True)
            data = await writer(dict(GOOD), ctx)
            assert await AsyncAvroDeserializer(client)(data, ctx) == MASKED
            with pytest.raises(RuleError):
                await writer({**GOOD, "qty": 0}, ctx)

    asyncio.run(main())
    with RegistryClient(registry_url) as client:
        writer = AvroSerializer(client, Order, use_latest_version=True)  # typed records: rules see their dicts
        data = writer(Order("o-1", 3, "123"), ctx)
        assert AvroDeserializer(client, Order)(data, ctx) == Order("o-1", 3, "123-masked")
        with pytest.raises(RuleError):
            writer(Order("o-1", 0, "123"), ctx)
