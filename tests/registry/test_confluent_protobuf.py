"""confluent-kafka's ProtobufSerializer/ProtobufDeserializer against our registry, unchanged.

The serializer registers base64 FileDescriptorProtos (and each imported user file as a reference under
its import path); the deserializer fetches writer schemas with ``format=serialized``. Message classes
come from .proto files compiled at test time (tests/registry/protos.py).
"""

from __future__ import annotations

import base64
import struct
import uuid
from types import ModuleType

import httpx
import pytest
from confluent_kafka.schema_registry import Schema, SchemaReference, SchemaRegistryClient
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import descriptor_pb2
from google.protobuf.message import Message

from tests.registry.protos import PROTOS
from tests.support.protos import compile_modules, message_class


@pytest.fixture(scope="session")
def pb(tmp_path_factory: pytest.TempPathFactory) -> dict[str, ModuleType]:
    """The generated ``_pb2`` modules by import path, compiled once per session."""
    return compile_modules(tmp_path_factory.mktemp("e2e-protos"), PROTOS)


@pytest.fixture
def topic() -> str:
    return f"pb-{uuid.uuid4().hex[:12]}"


def _ser(registry_url: str, cls: type[Message], **conf: object) -> ProtobufSerializer:
    return ProtobufSerializer(cls, SchemaRegistryClient({"url": registry_url}), conf=conf or None)


def _de(registry_url: str, cls: type[Message]) -> ProtobufDeserializer:
    return ProtobufDeserializer(cls, None, SchemaRegistryClient({"url": registry_url}))


def _frame(data: bytes) -> tuple[int, bytes]:
    """(schema id, everything after the 5-byte prefix), checking the magic byte."""
    assert data[0] == 0, data[:1].hex()
    return struct.unpack(">I", data[1:5])[0], data[5:]


def _serialized(http: httpx.Client, path: str) -> descriptor_pb2.FileDescriptorProto:
    resp = http.get(path, params={"format": "serialized"})
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body.get("schemaType") == "PROTOBUF", body
    return descriptor_pb2.FileDescriptorProto.FromString(base64.b64decode(body["schema"], validate=True))


def test_round_trip_first_message(registry_url: str, pb: dict[str, ModuleType], topic: str) -> None:
    shop = pb["skt_e2e_shop.proto"]
    ctx = SerializationContext(topic, MessageField.VALUE)
    order = shop.Order(id="o-1", status=shop.Order.PAID, card="4111", discount=shop.Order.Discount(percent=5))
    order.lines.add(sku="apple", qty=3)
    order.lines.add(sku="pear", qty=1)
    order.tags["channel"] = "web"

    data = _ser(registry_url, shop.Order)(order, ctx)
    sid, rest = _frame(data)
    # message index [0] is written as a single 0 byte, then the plain protobuf payload
    assert rest == b"\x00" + order.SerializeToString()
    latest = SchemaRegistryClient({"url": registry_url}).get_latest_version(f"{topic}-value")
    assert (latest.schema_id, latest.version, latest.schema.schema_type) == (sid, 1, "PROTOBUF")
    assert latest.schema.references == []

    back = _de(registry_url, shop.Order)(data, ctx)
    assert back == order
    assert back.WhichOneof("payment") == "card" and back.tags["channel"] == "web"


def test_message_indexes_for_second_and_nested_messages(
    registry_url: str, pb: dict[str, ModuleType], topic: str
) -> None:
    shop = pb["skt_e2e_shop.proto"]
    ctx = SerializationContext(topic, MessageField.VALUE)
    cases = [
        # (class, value, zigzag varint message indexes: count then each index)
        (shop.Order, shop.Order(id="o-2"), b"\x00"),  # [0], shortened
        (shop.Customer, shop.Customer(name="ada", id=7), b"\x02\x02"),  # [1]
        (shop.Order.Line, shop.Order.Line(sku="fig", qty=9), b"\x04\x00\x04"),  # [0, 2]
        (shop.Order.Note, shop.Order.Note(text="hi"), b"\x04\x00\x00"),  # [0, 0]
    ]
    ids = set()
    for cls, value, indexes in cases:
        data = _ser(registry_url, cls)(value, ctx)
        sid, rest = _frame(data)
        ids.add(sid)
        assert rest == indexes + value.SerializeToString(), cls.DESCRIPTOR.full_name
        assert _de(registry_url, cls)(data, ctx) == value
    # every message of one file is the same schema under the topic's subject
    assert len(ids) == 1
    assert SchemaRegistryClient({"url": registry_url}).get_versions(f"{topic}-value") == [1]


def test_well_known_import_is_not_a_reference(
    registry_url: str, pb: dict[str, ModuleType], topic: str, http: httpx.Client
) -> None:
    ev = pb["skt_e2e_event.proto"]
    ctx = SerializationContext(topic, MessageField.VALUE)
    event = ev.Event(name="boot")
    event.at.FromSeconds(1_700_000_000)
    event.at.nanos = 123

    data = _ser(registry_url, ev.Event)(event, ctx)  # skip.known.types defaults to True
    sid, _ = _frame(data)
    assert _de(registry_url, ev.Event)(data, ctx) == event

    latest = http.get(f"/subjects/{topic}-value/versions/latest").json()
    assert latest["id"] == sid and latest.get("references", []) == []
    assert "google/protobuf/timestamp.proto" not in http.get("/subjects").json()
    fd = _serialized(http, f"/schemas/ids/{sid}")
    assert list(fd.dependency) == ["google/protobuf/timestamp.proto"]
    assert [m.name for m in fd.message_type] == ["Event"]


def test_user_import_is_registered_as_a_reference(
    registry_url: str, pb: dict[str, ModuleType], topic: str, http: httpx.Client
) -> None:
    inv, other = pb["skt_e2e_invoice.proto"], pb["other.proto"]
    ctx = SerializationContext(topic, MessageField.VALUE)
    invoice = inv.Invoice(id="i-1", total=other.Money(currency="EUR", units=42))
    invoice.items.add(currency="EUR", units=40)
    invoice.items.add(currency="EUR", units=2)

    data = _ser(registry_url, inv.Invoice)(invoice, ctx)
    sid, rest = _frame(data)
    assert rest == b"\x00" + invoice.SerializeToString()

    sr = SchemaRegistryClient({"url": registry_url})
    assert "other.proto" in sr.get_subjects()
    ref = sr.get_latest_version("other.proto")
    assert ref.schema.schema_type == "PROTOBUF"
    latest = sr.get_latest_version(f"{topic}-value")
    assert latest.schema_id == sid
    assert latest.schema.references == [SchemaReference("other.proto", "other.proto", ref.version)]
    assert sr.get_referenced_by("other.proto", ref.version) == [sid]

    # the deserializer resolves the reference itself (versions/{v}?format=serialized)
    assert _de(registry_url, inv.Invoice)(data, ctx) == invoice

    main = _serialized(http, f"/schemas/ids/{sid}")
    assert list(main.dependency) == ["other.proto"]
    assert [m.name for m in main.message_type] == ["Invoice"]
    assert main.package == "skt.e2e.invoice"
    dep = _serialized(http, f"/subjects/other.proto/versions/{ref.version}")
    assert (dep.package, [m.name for m in dep.message_type]) == ("skt.e2e.other", ["Money"])
    assert [(f.name, f.number) for f in dep.message_type[0].field] == [("currency", 1), ("units", 2)]


def test_serialized_format_for_proto_text_registered_over_http(http: httpx.Client, subject: str) -> None:
    dep_text = 'syntax = "proto3";\npackage skt.e2e.text;\nmessage Unit { string code = 1; }\n'
    main_text = (
        'syntax = "proto3";\npackage skt.e2e.text;\nimport "skt/unit.proto";\n'
        'import "google/protobuf/timestamp.proto";\n'
        "message Reading {\n  skt.e2e.text.Unit unit = 1;\n  double value = 2;\n"
        "  google.protobuf.Timestamp at = 3;\n  message Tag { string k = 1; }\n  repeated Tag tags = 4;\n}\n"
    )
    r = http.post(f"/subjects/{subject}-unit/versions", json={"schemaType": "PROTOBUF", "schema": dep_text})
    assert r.status_code == 200, r.text
    r = http.post(
        f"/subjects/{subject}/versions",
        json={
            "schemaType": "PROTOBUF",
            "schema": main_text,
            "references": [{"name": "skt/unit.proto", "subject": f"{subject}-unit", "version": 1}],
        },
    )
    assert r.status_code == 200, r.text
    sid = r.json()["id"]

    for path in (f"/schemas/ids/{sid}", f"/subjects/{subject}/versions/1", f"/subjects/{subject}/versions/latest"):
        fd = _serialized(http, path)
        assert fd.syntax == "proto3" and fd.package == "skt.e2e.text", path
        assert list(fd.dependency) == ["skt/unit.proto", "google/protobuf/timestamp.proto"], path
        (reading,) = fd.message_type
        assert [(f.name, f.number, f.type_name) for f in reading.field] == [
            ("unit", 1, ".skt.e2e.text.Unit"),
            ("value", 2, ""),
            ("at", 3, ".google.protobuf.Timestamp"),
            ("tags", 4, ".skt.e2e.text.Reading.Tag"),
        ], path
        assert [n.name for n in reading.nested_type] == ["Tag"], path
    unit = _serialized(http, f"/subjects/{subject}-unit/versions/1")
    assert [m.name for m in unit.message_type] == ["Unit"]
    # without a format the stored .proto text comes back, not base64
    assert "message Reading" in http.get(f"/schemas/ids/{sid}").json()["schema"]


_V1 = 'syntax = "proto3";\npackage skt.e2e.evo;\nmessage Reading {\n  string id = 1;\n  int32 value = 2;\n}\n'
_V2 = (
    'syntax = "proto3";\npackage skt.e2e.evo;\n'
    "message Reading {\n  string id = 1;\n  int32 value = 2;\n  string unit = 3;\n}\n"
)
_V3_BAD = (
    'syntax = "proto3";\npackage skt.e2e.evo;\n'
    "message Reading {\n  string id = 1;\n  string value = 2;\n  string unit = 3;\n}\n"
)


def test_backward_evolution_accepted_and_rejected(registry_url: str, topic: str, http: httpx.Client) -> None:
    subject = f"{topic}-value"
    assert http.put(f"/config/{subject}", json={"compatibility": "BACKWARD"}).status_code == 200
    ctx = SerializationContext(topic, MessageField.VALUE)
    v1, v2, v3 = (message_class(text, "skt.e2e.evo.Reading") for text in (_V1, _V2, _V3_BAD))

    d1 = _ser(registry_url, v1)(v1(id="r1", value=7), ctx)
    # adding a field is backward compatible: the serializer registers version 2
    d2 = _ser(registry_url, v2)(v2(id="r2", value=8, unit="C"), ctx)
    id1, id2 = _frame(d1)[0], _frame(d2)[0]
    assert id1 != id2
    sr = SchemaRegistryClient({"url": registry_url})
    assert sr.get_versions(subject) == [1, 2]
    # a v2 reader reads v1 data (the new field has its default)
    assert _de(registry_url, v2)(d1, ctx) == v2(id="r1", value=7, unit="")

    # int32 -> string is not in a compatible scalar group
    with pytest.raises(SchemaRegistryError) as e:
        _ser(registry_url, v3)(v3(id="r3", value="hot", unit="C"), ctx)
    assert e.value.http_status_code == 409
    assert e.value.error_code == 409
    assert "FIELD_SCALAR_KIND_CHANGED" in e.value.error_message
    assert sr.get_versions(subject) == [1, 2]

    # the same verdict through the compatibility endpoint, against latest
    verdict = sr.test_compatibility(subject, Schema(_V3_BAD, "PROTOBUF"))
    assert verdict is False


@pytest.mark.parametrize("name", ["skt_e2e_shop.proto", "skt_e2e_event.proto"])
def test_lookup_only_serializer_finds_proto_text_registered_over_http(
    registry_url: str, pb: dict[str, ModuleType], topic: str, http: httpx.Client, name: str
) -> None:
    # schemas registered from .proto files (e.g. by CI); producers only look them up, sending base64
    r = http.post(f"/subjects/{topic}-value/versions", json={"schemaType": "PROTOBUF", "schema": PROTOS[name]})
    assert r.status_code == 200, r.text
    cls = pb["skt_e2e_shop.proto"].Customer if name == "skt_e2e_shop.proto" else pb[name].Event
    ctx = SerializationContext(topic, MessageField.VALUE)
    data = _ser(registry_url, cls, **{"auto.register.schemas": False})(cls(name="x"), ctx)
    assert _frame(data)[0] == r.json()["id"]
    assert SchemaRegistryClient({"url": registry_url}).get_versions(f"{topic}-value") == [1]
    assert _de(registry_url, cls)(data, ctx) == cls(name="x")
