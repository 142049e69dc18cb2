"""confluent-kafka's JSONSerializer/JSONDeserializer against our registry, unchanged."""

from __future__ import annotations

import json
import struct
import uuid
from dataclasses import asdict, dataclass

import httpx
import pytest
from confluent_kafka.schema_registry import Schema, SchemaReference, SchemaRegistryClient
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.serialization import MessageField, SerializationContext, SerializationError

ORDER = json.dumps(
    {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "title": "Order",
        "type": "object",
        "properties": {
            "id": {"type": "integer"},
            "customer": {"type": "string"},
            "lines": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"sku": {"type": "string"}, "qty": {"type": "integer", "minimum": 1}},
                    "required": ["sku", "qty"],
                },
            },
            "note": {"type": ["string", "null"]},
        },
        "required": ["id", "customer"],
    }
)


@dataclass
class Order:
    id: int
    customer: str
    lines: list[dict]
    note: str | None = None


@pytest.fixture
def topic() -> str:
    return f"js-{uuid.uuid4().hex[:12]}"


def _sr(registry_url: str) -> SchemaRegistryClient:
    return SchemaRegistryClient({"url": registry_url})


def _frame(data: bytes) -> tuple[int, dict]:
    """(schema id, decoded JSON payload), checking the magic byte."""
    assert data[0] == 0, data[:1].hex()
    return struct.unpack(">I", data[1:5])[0], json.loads(data[5:])


def test_schema_types_lists_all_three(http: httpx.Client) -> None:
    resp = http.get("/schemas/types")
    assert resp.status_code == 200
    assert sorted(resp.json()) == ["AVRO", "JSON", "PROTOBUF"]


def test_dict_round_trip(registry_url: str, topic: str) -> None:
    ctx = SerializationContext(topic, MessageField.VALUE)
    value = {"id": 1, "customer": "alice", "lines": [{"sku": "apple", "qty": 2}], "note": None}
    data = JSONSerializer(ORDER, _sr(registry_url))(value, ctx)
    sid, payload = _frame(data)
    assert payload == value

    latest = _sr(registry_url).get_latest_version(f"{topic}-value")
    assert (latest.schema_id, latest.version, latest.schema.schema_type) == (sid, 1, "JSON")
    assert json.loads(latest.schema.schema_str) == json.loads(ORDER)

    # a reader without a schema validates against the writer schema fetched by id
    assert JSONDeserializer(None, schema_registry_client=_sr(registry_url))(data, ctx) == value
    # a reader with its own schema
    assert JSONDeserializer(ORDER, schema_registry_client=_sr(registry_url))(data, ctx) == value

    # a lookup-only producer whose schema text differs only in whitespace finds the same id
    pretty = json.dumps(json.loads(ORDER), indent=2)
    lookup = JSONSerializer(pretty, _sr(registry_url), conf={"auto.register.schemas": False})
    assert _frame(lookup(value, ctx))[0] == sid
    assert _sr(registry_url).get_versions(f"{topic}-value") == [1]


def test_to_dict_from_dict_round_trip(registry_url: str, topic: str) -> None:
    ctx = SerializationContext(topic, MessageField.VALUE)
    order = Order(id=2, customer="bob", lines=[{"sku": "pear", "qty": 1}, {"sku": "fig", "qty": 4}], note="gift")
    ser = JSONSerializer(ORDER, _sr(registry_url), to_dict=lambda o, _ctx: asdict(o))
    data = ser(order, ctx)
    assert _frame(data)[1] == asdict(order)
    de = JSONDeserializer(None, from_dict=lambda d, _ctx: Order(**d), schema_registry_client=_sr(registry_url))
    assert de(data, ctx) == order


def test_validation_failure_raises(registry_url: str, topic: str) -> None:
    ctx = SerializationContext(topic, MessageField.VALUE)
    ser = JSONSerializer(ORDER, _sr(registry_url))
    good = ser({"id": 3, "customer": "carol"}, ctx)
    sid = _frame(good)[0]

    with pytest.raises(SerializationError, match="'customer' is a required property"):
        ser({"id": 3}, ctx)
    with pytest.raises(SerializationError, match="0 is less than the minimum of 1"):
        ser({"id": 3, "customer": "carol", "lines": [{"sku": "x", "qty": 0}]}, ctx)

    # the deserializer validates too, against the writer schema it fetched from the registry
    bad_frame = b"\x00" + struct.pack(">I", sid) + json.dumps({"id": "three", "customer": "carol"}).encode()
    with pytest.raises(SerializationError, match="'three' is not of type 'integer'"):
        JSONDeserializer(None, schema_registry_client=_sr(registry_url))(bad_frame, ctx)


ADDRESS = json.dumps(
    {
        "type": "object",
        "properties": {"city": {"type": "string"}, "zip": {"type": "string", "pattern": "^[0-9]{5}$"}},
        "required": ["city", "zip"],
    }
)
CUSTOMER = json.dumps(
    {
        "type": "object",
        "properties": {"name": {"type": "string"}, "address": {"$ref": "address.json"}},
        "required": ["name", "address"],
    }
)


@pytest.mark.parametrize("mode", ["use_latest_version", "auto_register"])
def test_ref_to_another_subject(registry_url: str, topic: str, mode: str) -> None:
    sr = _sr(registry_url)
    ctx = SerializationContext(topic, MessageField.VALUE)
    ref_subject = f"{topic}-address"
    # Confluent 7.x answers a registration with just {"id": N}: the version comes from a lookup
    sr.register_schema(ref_subject, Schema(ADDRESS, "JSON"))
    ref_version = sr.lookup_schema(ref_subject, Schema(ADDRESS, "JSON")).version
    assert ref_version == 1
    refs = [SchemaReference("address.json", ref_subject, ref_version)]
    schema = Schema(CUSTOMER, "JSON", refs)
    if mode == "use_latest_version":
        sid = sr.register_schema(f"{topic}-value", schema)
        ser = JSONSerializer(schema, sr, conf={"auto.register.schemas": False, "use.latest.version": True})
    else:
        ser = JSONSerializer(schema, sr)

    value = {"name": "dora", "address": {"city": "Lyon", "zip": "69001"}}
    data = ser(value, ctx)
    frame_id, payload = _frame(data)
    assert payload == value
    latest = sr.get_latest_version(f"{topic}-value")
    assert latest.schema_id == frame_id
    if mode == "use_latest_version":
        assert frame_id == sid
    assert latest.schema.references == refs
    assert sr.get_referenced_by(ref_subject, ref_version) == [frame_id]

    # the referenced schema is enforced: it could only have come from the registry
    with pytest.raises(SerializationError, match="does not match"):
        ser({"name": "dora", "address": {"city": "Lyon", "zip": "L-69"}}, ctx)

    # the deserializer resolves the reference through the writer schema's references
    assert JSONDeserializer(None, schema_registry_client=_sr(registry_url))(data, ctx) == value


CLOSED_V1 = {
    "type": "object",
    "properties": {"id": {"type": "integer"}},
    "required": ["id"],
    "additionalProperties": False,
}
CLOSED_V2 = {**CLOSED_V1, "properties": {"id": {"type": "integer"}, "label": {"type": "string"}}}
CLOSED_V3_BAD = {
    **CLOSED_V2,
    "required": ["id", "label", "owner"],
    "properties": {**CLOSED_V2["properties"], "owner": {"type": "string"}},
}
OPEN_V1 = {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]}
OPEN_V2_BAD = {
    "type": "object",
    "properties": {"id": {"type": "integer"}, "label": {"type": "string"}},
    "required": ["id"],
}


def _backward(http: httpx.Client, subject: str) -> None:
    assert http.put(f"/config/{subject}", json={"compatibility": "BACKWARD"}).status_code == 200


def test_backward_evolution_closed_model(registry_url: str, topic: str, http: httpx.Client) -> None:
    subject = f"{topic}-value"
    _backward(http, subject)
    ctx = SerializationContext(topic, MessageField.VALUE)
    d1 = JSONSerializer(json.dumps(CLOSED_V1), _sr(registry_url))({"id": 1}, ctx)
    # an optional property added to a closed content model: accepted as version 2
    d2 = JSONSerializer(json.dumps(CLOSED_V2), _sr(registry_url))({"id": 2, "label": "x"}, ctx)
    assert _frame(d1)[0] != _frame(d2)[0]
    sr = _sr(registry_url)
    assert sr.get_versions(subject) == [1, 2]
    # the v2 reader reads v1 data
    de = JSONDeserializer(json.dumps(CLOSED_V2), schema_registry_client=_sr(registry_url))
    assert de(d1, ctx) == {"id": 1}

    # a required property without a default added to a closed model: rejected
    with pytest.raises(SchemaRegistryError) as e:
        JSONSerializer(json.dumps(CLOSED_V3_BAD), _sr(registry_url))({"id": 3, "label": "y", "owner": "z"}, ctx)
    assert (e.value.http_status_code, e.value.error_code) == (409, 409)
    assert "REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL" in e.value.error_message
    assert "#/properties/owner" in e.value.error_message
    assert sr.get_versions(subject) == [1, 2]


def test_backward_evolution_open_model_rejects_typed_property(
    registry_url: str, topic: str, http: httpx.Client
) -> None:
    subject = f"{topic}-value"
    _backward(http, subject)
    ctx = SerializationContext(topic, MessageField.VALUE)
    JSONSerializer(json.dumps(OPEN_V1), _sr(registry_url))({"id": 1}, ctx)
    # an open model may already carry "label" with any type, so a typed "label" cannot read old data
    with pytest.raises(SchemaRegistryError) as e:
        JSONSerializer(json.dumps(OPEN_V2_BAD), _sr(registry_url))({"id": 2, "label": "x"}, ctx)
    assert (e.value.http_status_code, e.value.error_code) == (409, 409)
    assert "PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL" in e.value.error_message
    assert _sr(registry_url).get_versions(subject) == [1]
    # the same change is fine when the subject does not check compatibility
    assert http.put(f"/config/{subject}", json={"compatibility": "NONE"}).status_code == 200
    JSONSerializer(json.dumps(OPEN_V2_BAD), _sr(registry_url))({"id": 2, "label": "x"}, ctx)
    assert _sr(registry_url).get_versions(subject) == [1, 2]
