"""Protobuf serdes against the real registry: interop with confluent-kafka both ways (nested types, imports
registered as references), message indexes, and bad input. Skipped when the registry lacks PROTOBUF."""

from __future__ import annotations

import base64
import uuid

import pytest
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer as CkProtobufDeserializer
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer as CkProtobufSerializer
from google.protobuf import descriptor_pb2, descriptor_pool
from google.protobuf.message_factory import GetMessageClass

from serdes import (
    MessageField,
    ProtobufDeserializer,
    ProtobufSerde,
    ProtobufSerializer,
    SerializationContext,
    SerializationError,
    wire,
)
from serdes.protobuf import message_indexes

CK_TOPIC = {"subject.name.strategy.type": "TOPIC"}


@pytest.fixture(autouse=True)
def _needs_protobuf(require_type) -> None:
    require_type("PROTOBUF")


def make_order(pb):
    o = pb.order.Order(id="o-1", qty=3, status=pb.order.Order.PAID, note="ring twice")
    o.lines.add(sku="a", qty=2)
    o.lines.add(sku="b", qty=1)
    o.address.city = "Berlin"
    o.address.zip = 10115
    o.created.seconds = 1_700_000_000
    return o


def test_message_index_paths(protos) -> None:
    assert message_indexes(protos.order.Customer.DESCRIPTOR) == [0]
    assert message_indexes(protos.order.Order.DESCRIPTOR) == [1]
    assert message_indexes(protos.order.Order.Line.DESCRIPTOR) == [1, 0]


def test_round_trip_frame_and_references(client, protos, value_ctx) -> None:
    order = make_order(protos)
    data = ProtobufSerializer(client, protos.order.Order)(order, value_ctx)
    latest = client.get_latest_version(f"{value_ctx.topic}-value")
    assert data[:5] == wire.prefix(latest.schema_id)
    assert data[5:7] == b"\x02\x02"  # message index path [1]
    assert data[7:] == order.SerializeToString()
    assert ProtobufDeserializer(client, protos.order.Order)(data, value_ctx) == order
    # the import was registered under its import path; the well-known type was not
    refs = {r.name: r for r in latest.schema.references}
    assert set(refs) == {"sktest/common/address.proto"}
    assert refs["sktest/common/address.proto"].subject == "sktest/common/address.proto"
    assert "google/protobuf/timestamp.proto" not in client.get_subjects()


def test_first_message_uses_the_single_zero_byte(client, protos, value_ctx) -> None:
    data = ProtobufSerializer(client, protos.order.Customer)(protos.order.Customer(name="ann"), value_ctx)
    assert data[5:6] == b"\x00" and data[6:] == protos.order.Customer(name="ann").SerializeToString()
    assert ProtobufDeserializer(client, protos.order.Customer)(data, value_ctx).name == "ann"


def test_nested_message_type(client, protos, value_ctx) -> None:
    line = protos.order.Order.Line(sku="z", qty=9)
    data = ProtobufSerializer(client, protos.order.Order.Line)(line, value_ctx)
    assert data[5:8] == b"\x04\x02\x00"  # [1, 0]
    de = ProtobufDeserializer(client, protos.order.Order.Line)
    other = ProtobufSerializer(client, protos.order.Order.Line)(protos.order.Order.Line(sku="y"), value_ctx)
    # the second and third reads find the plans by their whole index path (more than the 6-byte first key)
    assert [de(data, value_ctx), de(other, value_ctx), de(data, value_ctx)] == [
        line,
        protos.order.Order.Line(sku="y"),
        line,
    ]
    dynamic = ProtobufDeserializer(client)(data, value_ctx)
    assert dynamic.DESCRIPTOR.full_name == "sktest.shop.Order.Line" and dynamic.sku == "z" and dynamic.qty == 9


def test_confluent_kafka_writes_we_read(client, ck_client, protos, value_ctx) -> None:
    order = make_order(protos)
    theirs = CkProtobufSerializer(protos.order.Order, ck_client, conf=CK_TOPIC)(order, value_ctx)
    assert ProtobufDeserializer(client, protos.order.Order)(theirs, value_ctx) == order
    dynamic = ProtobufDeserializer(client)(theirs, value_ctx)
    assert dynamic.SerializeToString() == order.SerializeToString()
    assert dynamic.address.city == "Berlin" and [line.sku for line in dynamic.lines] == ["a", "b"]


def test_we_write_confluent_kafka_reads(client, ck_client, protos, value_ctx) -> None:
    order = make_order(protos)
    ours = ProtobufSerializer(client, protos.order.Order)(order, value_ctx)
    got = CkProtobufDeserializer(protos.order.Order, conf=CK_TOPIC, schema_registry_client=ck_client)(ours, value_ctx)
    assert got == order
    line_ctx = SerializationContext(value_ctx.topic + "-lines", MessageField.VALUE)
    line = protos.order.Order.Line(sku="n", qty=4)
    ours_line = ProtobufSerializer(client, protos.order.Order.Line)(line, line_ctx)
    ck_de = CkProtobufDeserializer(protos.order.Order.Line, conf=CK_TOPIC, schema_registry_client=ck_client)
    assert ck_de(ours_line, line_ctx) == line


def test_identical_bytes_to_confluent_kafka(client, ck_client, protos, value_ctx) -> None:
    order = make_order(protos)
    theirs = CkProtobufSerializer(protos.order.Order, ck_client, conf=CK_TOPIC)(order, value_ctx)
    ours = ProtobufSerializer(client, protos.order.Order)(order, value_ctx)
    assert ours == theirs


def test_registered_schema_is_the_file_descriptor(client, protos, value_ctx) -> None:
    ProtobufSerializer(client, protos.order.Order)(make_order(protos), value_ctx)
    schema_id = client.get_latest_version(f"{value_ctx.topic}-value").schema_id
    serialized = client.get_schema(schema_id, fmt="serialized")
    fdp = descriptor_pb2.FileDescriptorProto.FromString(base64.b64decode(serialized.schema_str))
    assert [m.name for m in fdp.message_type] == ["Customer", "Order"]
    assert "sktest/common/address.proto" in fdp.dependency


def test_record_strategy_uses_the_full_message_name(client, protos) -> None:
    ProtobufSerializer(client, protos.order.Customer, strategy="record")(protos.order.Customer(name="x"))
    assert "sktest.shop.Customer" in client.get_subjects()


def test_protobuf_serde_pair(client, protos, topic) -> None:
    serde = ProtobufSerde(client, protos.order.Order)
    order = make_order(protos)
    assert serde.deserialize(serde.serialize(order, topic), topic) == order


def test_wrong_message_type(client, protos, value_ctx) -> None:
    with pytest.raises(SerializationError, match=r"expected a sktest\.shop\.Order message, got Customer"):
        ProtobufSerializer(client, protos.order.Order)(protos.order.Customer(name="x"), value_ctx)
    with pytest.raises(TypeError, match="generated message class"):
        ProtobufSerializer(client, dict)


def test_bad_frames(client, protos, value_ctx) -> None:
    data = ProtobufSerializer(client, protos.order.Order)(make_order(protos), value_ctx)
    schema_id = wire.read_schema_id(data)
    de = ProtobufDeserializer(client, protos.order.Order)
    with pytest.raises(SerializationError) as e:
        de(data[:5], value_ctx)
    assert (e.value.schema_id, e.value.offset) == (schema_id, 5)
    with pytest.raises(SerializationError, match="unknown magic byte"):
        de(b"\x05" + data[1:], value_ctx)
    with pytest.raises(SerializationError) as e:
        de(wire.prefix(765432) + b"\x00", value_ctx)
    assert e.value.schema_id == 765432 and "not known" in str(e.value)
    with pytest.raises(SerializationError) as e:
        de(data[:5] + b"\x02\x0a" + data[7:], value_ctx)  # index path [5]: no such message
    assert "message index path [5] does not exist" in str(e.value) and e.value.schema_id == schema_id
    with pytest.raises(SerializationError) as e:
        de(data[:7] + b"\x0a\xff\xff", value_ctx)  # field 1 length-delimited, length runs off the end
    assert e.value.schema_id == schema_id and e.value.offset == 7 and "cannot decode Protobuf" in str(e.value)


def test_auto_register_false_finds_the_registered_schema(client, protos, value_ctx) -> None:
    order = make_order(protos)
    first = ProtobufSerializer(client, protos.order.Order)(order, value_ctx)
    again = ProtobufSerializer(client, protos.order.Order, auto_register=False)(order, value_ctx)
    assert again == first
    other = SerializationContext(value_ctx.topic + "-unregistered", MessageField.VALUE)
    with pytest.raises(SerializationError) as e:
        ProtobufSerializer(client, protos.order.Order, auto_register=False)(order, other)
    assert f"{other.topic}-value" in str(e.value)


def test_fresh_process_reads_a_schema_importing_a_well_known_type(registry_url, client, protos, value_ctx) -> None:
    """A consumer process that never imported timestamp_pb2 still builds the writer's message class."""
    import subprocess
    import sys

    data = ProtobufSerializer(client, protos.order.Order)(make_order(protos), value_ctx)
    code = (
        "import sys; from serdes import RegistryClient, ProtobufDeserializer;"
        f"m = ProtobufDeserializer(RegistryClient({registry_url!r}))(bytes.fromhex(sys.argv[1]));"
        "print(m.created.seconds, m.address.city)"
    )
    out = subprocess.run([sys.executable, "-c", code, data.hex()], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["1700000000", "Berlin"]


def _item_class(package: str, *fields: str) -> type:
    """A message class ``<package>.Item`` with string fields ``fields``, built from a descriptor (a unique
    package gives the record-name strategy a subject of this test's own)."""
    fdp = descriptor_pb2.FileDescriptorProto(name=f"{package}/item.proto", package=package, syntax="proto3")
    item = fdp.message_type.add(name="Item")
    for number, name in enumerate(fields, 1):
        item.field.add(
            name=name,
            number=number,
            type=descriptor_pb2.FieldDescriptorProto.TYPE_STRING,
            label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL,
        )
    pool = descriptor_pool.DescriptorPool()
    return GetMessageClass(pool.Add(fdp).message_types_by_name["Item"])


def test_latest_reader_under_the_record_strategy_needs_no_message_type(client) -> None:
    package = f"t{uuid.uuid4().hex[:8]}"
    v1, v2 = _item_class(package, "name"), _item_class(package, "name", "note")
    data = ProtobufSerializer(client, v1, strategy="record")(v1(name="x"))
    ProtobufSerializer(client, v2, strategy="record")(v2(name="y"))  # version 2 of the subject <package>.Item
    for follow in ({"use_latest_version": True}, {"use_latest_with_metadata": {}}):
        read = ProtobufDeserializer(client, strategy="record", **follow)(data)
        assert read.DESCRIPTOR.full_name == f"{package}.Item"
        assert [f.name for f in read.DESCRIPTOR.fields] == ["name", "note"]  # the latest version's message
        assert (read.name, read.note) == ("x", "")
    assert client.get_latest_version(f"{package}.Item").version == 2
    with pytest.raises(SerializationError, match="topic_record subject-name strategy needs a SerializationContext"):
        ProtobufDeserializer(client, strategy="topic_record", use_latest_version=True)(data)
