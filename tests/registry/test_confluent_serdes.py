"""confluent-kafka's AvroSerializer/AvroDeserializer against our registry, unchanged."""

from __future__ import annotations

import json
import struct

import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.serialization import MessageField, SerializationContext

from tests.registry.schemas import record


def test_avro_serializer_round_trip_and_evolution(registry_url: str, subject: str) -> None:
    topic = subject
    ctx = SerializationContext(topic, MessageField.VALUE)
    v1 = record("Order", ("id", "long"), ("customer", "string"), namespace="shop")
    v2 = record("Order", ("id", "long"), ("customer", "string"), ("amount", "double", 0.0), namespace="shop")

    ser1 = AvroSerializer(SchemaRegistryClient({"url": registry_url}), v1)
    frame1 = ser1({"id": 1, "customer": "alice"}, ctx)
    sr = SchemaRegistryClient({"url": registry_url})
    latest = sr.get_latest_version(f"{topic}-value")
    assert frame1[0] == 0 and struct.unpack(">I", frame1[1:5])[0] == latest.schema_id

    ser2 = AvroSerializer(SchemaRegistryClient({"url": registry_url}), v2)
    frame2 = ser2({"id": 2, "customer": "bob", "amount": 9.5}, ctx)
    assert struct.unpack(">I", frame2[1:5])[0] != latest.schema_id
    assert sr.get_versions(f"{topic}-value") == [1, 2]

    # a reader without a schema gets each record in its writer's shape
    de = AvroDeserializer(SchemaRegistryClient({"url": registry_url}))
    assert de(frame1, ctx) == {"id": 1, "customer": "alice"}
    assert de(frame2, ctx) == {"id": 2, "customer": "bob", "amount": 9.5}
    # a v2 reader resolves v1 data with the default
    de2 = AvroDeserializer(SchemaRegistryClient({"url": registry_url}), v2)
    assert de2(frame1, ctx) == {"id": 1, "customer": "alice", "amount": 0.0}


def test_incompatible_evolution_is_refused_to_the_serializer(registry_url: str, subject: str) -> None:
    ctx = SerializationContext(subject, MessageField.VALUE)
    AvroSerializer(SchemaRegistryClient({"url": registry_url}), record("T", ("a", "int")))({"a": 1}, ctx)
    bad = AvroSerializer(SchemaRegistryClient({"url": registry_url}), record("T", ("a", "int"), ("b", "string")))
    with pytest.raises(Exception) as e:
        bad({"a": 1, "b": "x"}, ctx)
    assert "409" in str(e.value) or "incompatible" in str(e.value).lower()


def test_use_latest_version_without_auto_register(registry_url: str, subject: str) -> None:
    sr = SchemaRegistryClient({"url": registry_url})
    schema = record("U", ("u", "string"))
    sid = sr.register_schema(f"{subject}-value", Schema(schema, "AVRO"))
    ser = AvroSerializer(sr, schema, conf={"auto.register.schemas": False, "use.latest.version": True})
    frame = ser({"u": "x"}, SerializationContext(subject, MessageField.VALUE))
    assert struct.unpack(">I", frame[1:5])[0] == sid
    # lookup-only serializer on an unknown subject fails with the registry's 40401/40403
    ser2 = AvroSerializer(
        sr,
        json.dumps({"type": "record", "name": "V", "fields": [{"name": "v", "type": "int"}]}),
        conf={"auto.register.schemas": False},
    )
    with pytest.raises(SchemaRegistryError) as e:
        ser2({"v": 1}, SerializationContext(subject + "-missing", MessageField.VALUE))
    assert e.value.error_code == 40401
