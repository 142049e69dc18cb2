"""Avro serdes against the real registry: interop with confluent-kafka both ways, typed records, subject
strategies, schema evolution on read, and every bad-input path."""

from __future__ import annotations

import dataclasses
import json

import pytest
from confluent_kafka.schema_registry.avro import AvroDeserializer as CkAvroDeserializer
from confluent_kafka.schema_registry.avro import AvroSerializer as CkAvroSerializer

from serdes import (
    AvroDeserializer,
    AvroSerde,
    AvroSerializer,
    MessageField,
    RegistryClient,
    Schema,
    SerializationContext,
    SerializationError,
    avro_schema,
    wire,
)
from tests.support.schemas import ORDER_AVRO, ORDER_RECORD, TYPED_ORDER, Address, Order, Status

CK_TOPIC = {"subject.name.strategy.type": "TOPIC"}


def test_round_trip_dicts_and_frame_layout(client: RegistryClient, value_ctx: SerializationContext) -> None:
    data = AvroSerializer(client, ORDER_AVRO)(ORDER_RECORD, value_ctx)
    schema_id = client.get_latest_version(f"{value_ctx.topic}-value").schema_id
    assert data[:5] == wire.prefix(schema_id)
    assert AvroDeserializer(client)(data, value_ctx) == ORDER_RECORD


def test_confluent_kafka_writes_we_read(client, ck_client, value_ctx) -> None:
    theirs = CkAvroSerializer(ck_client, json.dumps(ORDER_AVRO), conf=CK_TOPIC)(ORDER_RECORD, value_ctx)
    assert AvroDeserializer(client)(theirs, value_ctx) == ORDER_RECORD
    assert AvroDeserializer(client, Order)(theirs, value_ctx) == TYPED_ORDER


def test_we_write_confluent_kafka_reads(client, ck_client, value_ctx) -> None:
    ours = AvroSerializer(client, ORDER_AVRO)(ORDER_RECORD, value_ctx)
    assert CkAvroDeserializer(ck_client, conf=CK_TOPIC)(ours, value_ctx) == ORDER_RECORD
    typed = AvroSerializer(client, Order, subject=f"{value_ctx.topic}-typed")(TYPED_ORDER)
    assert CkAvroDeserializer(ck_client, conf=CK_TOPIC)(typed, value_ctx) == ORDER_RECORD


def test_same_schema_gives_identical_bytes_to_confluent_kafka(client, ck_client, value_ctx) -> None:
    ours = AvroSerializer(client, json.dumps(ORDER_AVRO))(ORDER_RECORD, value_ctx)
    theirs = CkAvroSerializer(ck_client, json.dumps(ORDER_AVRO), conf=CK_TOPIC)(ORDER_RECORD, value_ctx)
    assert ours == theirs


def test_typed_records_round_trip(client, value_ctx) -> None:
    assert avro_schema(Order)["namespace"] == "shop"
    data = AvroSerializer(client, Order)(TYPED_ORDER, value_ctx)
    back = AvroDeserializer(client, Order)(data, value_ctx)
    assert back == TYPED_ORDER and isinstance(back.address, Address) and back.status is Status.PAID
    assert AvroDeserializer(client)(data, value_ctx) == ORDER_RECORD
    # a dict is accepted where the type is expected
    assert AvroSerializer(client, Order)(ORDER_RECORD, value_ctx) == data


def test_ctx_is_optional_when_the_subject_does_not_depend_on_the_topic(client, topic) -> None:
    ser = AvroSerializer(client, Order, strategy="record")
    data = ser(TYPED_ORDER)
    assert client.get_latest_version("shop.Order").schema_id == wire.read_schema_id(data)
    fixed = AvroSerializer(client, ORDER_AVRO, subject=f"{topic}-fixed")
    assert wire.read_schema_id(fixed(ORDER_RECORD)) == client.get_latest_version(f"{topic}-fixed").schema_id
    with pytest.raises(SerializationError, match="subject depends on the topic: pass a SerializationContext"):
        AvroSerializer(client, ORDER_AVRO)(ORDER_RECORD)


def test_subject_name_strategies(client, topic) -> None:
    key_ctx = SerializationContext(topic, MessageField.KEY)
    AvroSerializer(client, ORDER_AVRO)(ORDER_RECORD, key_ctx)
    AvroSerializer(client, ORDER_AVRO, strategy="topic_record")(ORDER_RECORD, key_ctx)
    subjects = client.get_subjects()
    assert f"{topic}-key" in subjects
    assert f"{topic}-shop.Order" in subjects
    with pytest.raises(ValueError, match="unknown subject-name strategy 'bogus'"):
        AvroSerializer(client, ORDER_AVRO, strategy="bogus")


def test_serializer_resolves_per_topic(client, topic) -> None:
    ser = AvroSerializer(client, ORDER_AVRO)
    a = ser(ORDER_RECORD, SerializationContext(topic + "a", MessageField.VALUE))
    b = ser(ORDER_RECORD, SerializationContext(topic + "b", MessageField.VALUE))
    assert client.get_versions(topic + "a-value") == [1] and client.get_versions(topic + "b-value") == [1]
    assert a == b  # same schema, same global id


def test_auto_register_false_needs_a_registered_schema(client, value_ctx) -> None:
    ser = AvroSerializer(client, ORDER_AVRO, auto_register=False)
    with pytest.raises(SerializationError) as e:
        ser(ORDER_RECORD, value_ctx)
    assert f"{value_ctx.topic}-value" in str(e.value) and e.value.topic == value_ctx.topic
    schema_id = client.register(f"{value_ctx.topic}-value", Schema(json.dumps(ORDER_AVRO)))
    assert wire.read_schema_id(ser(ORDER_RECORD, value_ctx)) == schema_id


V1 = {"type": "record", "name": "User", "fields": [{"name": "name", "type": "string"}, {"name": "age", "type": "int"}]}
V2 = {**V1, "fields": [*V1["fields"], {"name": "email", "type": "string", "default": "none"}]}
V3 = {"type": "record", "name": "User", "fields": [{"name": "name", "type": "string"}]}


def test_evolution_reader_adds_a_defaulted_field(client, value_ctx) -> None:
    data = AvroSerializer(client, V1)({"name": "ann", "age": 30}, value_ctx)
    assert AvroDeserializer(client, V2)(data, value_ctx) == {"name": "ann", "age": 30, "email": "none"}


def test_evolution_reader_drops_a_removed_field(client, value_ctx) -> None:
    data = AvroSerializer(client, V2)({"name": "ann", "age": 30, "email": "a@x"}, value_ctx)
    assert AvroDeserializer(client, V3)(data, value_ctx) == {"name": "ann"}


@dataclasses.dataclass
class User:
    name: str
    email: str = "none"


def test_evolution_into_a_typed_reader(client, value_ctx) -> None:
    data = AvroSerializer(client, V1)({"name": "ann", "age": 30}, value_ctx)
    assert AvroDeserializer(client, User)(data, value_ctx) == User("ann", "none")


def test_use_latest_version_on_both_sides(client, value_ctx) -> None:
    subject = f"{value_ctx.topic}-value"
    client.register(subject, Schema(json.dumps(V1)))
    v2_id = client.register(subject, Schema(json.dumps(V2)))
    fresh = RegistryClient(client.urls)
    ser = AvroSerializer(fresh, use_latest_version=True)
    data = ser({"name": "bo", "age": 1, "email": "b@x"}, value_ctx)
    assert wire.read_schema_id(data) == v2_id
    old = AvroSerializer(client, V1, auto_register=False)({"name": "al", "age": 2}, value_ctx)
    assert AvroDeserializer(fresh, use_latest_version=True)(old, value_ctx) == {"name": "al", "age": 2, "email": "none"}
    with pytest.raises(ValueError, match="exclude each other"):
        AvroSerializer(client, V1, auto_register=True, use_latest_version=True)
    fresh.close()


def test_named_types_from_schema_references(client, topic) -> None:
    address = json.dumps(ORDER_AVRO["fields"][7]["type"] | {"namespace": "shop"})
    client.register(f"{topic}-address", Schema(address))
    from serdes import SchemaReference

    person = Schema(
        json.dumps(
            {
                "type": "record",
                "name": "Person",
                "namespace": "shop",
                "fields": [{"name": "home", "type": "shop.Address"}],
            }
        ),
        references=(SchemaReference("shop.Address", f"{topic}-address", 1),),
    )
    ser = AvroSerializer(client, person, subject=f"{topic}-person")
    data = ser({"home": {"city": "Oslo", "zip": 150}})
    assert AvroDeserializer(client)(data) == {"home": {"city": "Oslo", "zip": 150}}


def test_avro_serde_pair(client, topic) -> None:
    serde = AvroSerde(client, Order)
    key = serde.serialize(TYPED_ORDER, topic, is_key=True)
    value = serde.serialize(TYPED_ORDER, topic)
    assert serde.deserialize(key, topic, is_key=True) == TYPED_ORDER == serde.deserialize(value, topic)
    assert f"{topic}-key" in client.get_subjects() and f"{topic}-value" in client.get_subjects()
    assert serde.deserializer(value, serde.context(topic)) == TYPED_ORDER


def test_none_passes_through(client, value_ctx) -> None:
    assert AvroSerializer(client, ORDER_AVRO)(None, value_ctx) is None
    assert AvroDeserializer(client)(None, value_ctx) is None


# -- bad input ------------------------------------------------------------------------------------------------


def test_record_missing_a_field_names_the_field(client, value_ctx) -> None:
    bad = {k: v for k, v in ORDER_RECORD.items() if k != "qty"}
    with pytest.raises(SerializationError) as e:
        AvroSerializer(client, ORDER_AVRO)(bad, value_ctx)
    assert "qty" in str(e.value) and e.value.topic == value_ctx.topic and e.value.schema_id is not None


def test_wrong_value_type_is_rejected(client, value_ctx) -> None:
    with pytest.raises(SerializationError, match="status"):
        AvroSerializer(client, ORDER_AVRO)({**ORDER_RECORD, "status": "LOST"}, value_ctx)
    with pytest.raises(SerializationError, match="expected Order or dict, got str"):
        AvroSerializer(client, Order)("not an order", value_ctx)


def test_too_short_payload(client, value_ctx) -> None:
    with pytest.raises(SerializationError) as e:
        AvroDeserializer(client)(b"\x00\x00\x01", value_ctx)
    assert (e.value.topic, e.value.offset) == (value_ctx.topic, 3)


def test_unknown_magic_byte(client, value_ctx) -> None:
    with pytest.raises(SerializationError) as e:
        AvroDeserializer(client)(b'{"json": "not framed"}', value_ctx)
    assert e.value.offset == 0 and "unknown magic byte 0x7b" in str(e.value)


def test_unknown_schema_id(client, value_ctx) -> None:
    with pytest.raises(SerializationError) as e:
        AvroDeserializer(client)(wire.prefix(987654) + b"\x02", value_ctx)
    assert (e.value.topic, e.value.schema_id, e.value.offset) == (value_ctx.topic, 987654, 1)
    assert "schema id 987654 is not known" in str(e.value)


def test_truncated_payload_names_id_and_offset(client, value_ctx) -> None:
    data = AvroSerializer(client, ORDER_AVRO)(ORDER_RECORD, value_ctx)
    with pytest.raises(SerializationError) as e:
        AvroDeserializer(client)(data[:12], value_ctx)
    assert e.value.schema_id == wire.read_schema_id(data) and e.value.topic == value_ctx.topic
    assert e.value.offset is not None and 5 <= e.value.offset <= 12


def test_trailing_bytes_are_not_silently_dropped(client, value_ctx) -> None:
    data = AvroSerializer(client, ORDER_AVRO)(ORDER_RECORD, value_ctx)
    with pytest.raises(SerializationError) as e:
        AvroDeserializer(client)(data + b"\x00\x00", value_ctx)
    assert "2 unread bytes" in str(e.value) and e.value.offset == len(data)


def test_payload_written_with_another_schema_type(client, value_ctx, require_type) -> None:
    require_type("JSON")
    schema_id = client.register(f"{value_ctx.topic}-json", Schema('{"type":"object"}', "JSON"))
    with pytest.raises(SerializationError, match=f"schema {schema_id} is JSON, not AVRO"):
        AvroDeserializer(client)(wire.prefix(schema_id) + b"{}", value_ctx)


def test_bytearray_and_memoryview_payloads(client, value_ctx) -> None:
    data = AvroSerializer(client, ORDER_AVRO)(ORDER_RECORD, value_ctx)
    de = AvroDeserializer(client)
    assert de(bytearray(data), value_ctx) == ORDER_RECORD == de(memoryview(data), value_ctx)


def test_to_dict_and_from_dict_hooks(client, value_ctx) -> None:
    class Plain:
        def __init__(self, name: str, age: int) -> None:
            self.name, self.age = name, age

    seen = []

    def to_dict(obj: Plain, ctx: SerializationContext | None) -> dict:
        seen.append(ctx)
        return {"name": obj.name, "age": obj.age}

    data = AvroSerializer(client, V1, to_dict=to_dict)(Plain("cy", 5), value_ctx)
    assert seen == [value_ctx]
    back = AvroDeserializer(client, from_dict=lambda d, ctx: Plain(**d))(data, value_ctx)
    assert (type(back), back.name, back.age) == (Plain, "cy", 5)
