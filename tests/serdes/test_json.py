"""JSON Schema serdes against the real registry: interop with confluent-kafka both ways, validation, typed
records and bad input. Skipped when the registry does not list JSON under /schemas/types."""

from __future__ import annotations

import dataclasses
import datetime as dt
import decimal
import enum
import json
import uuid

import pytest
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer

from serdes import (
    JsonSchemaDeserializer,
    JsonSchemaSerde,
    JsonSchemaSerializer,
    RegistryClient,
    Schema,
    SerializationContext,
    SerializationError,
    json_schema,
    wire,
)
from tests.support.schemas import ORDER_JSON, ORDER_RECORD

CK_TOPIC = {"subject.name.strategy.type": "TOPIC"}


class Status(enum.Enum):
    NEW = 0
    PAID = 1


@dataclasses.dataclass
class Line:
    sku: str
    qty: int


@dataclasses.dataclass
class Invoice:
    id: str
    status: Status
    lines: list[Line]
    total: decimal.Decimal
    issued: dt.datetime
    ref: uuid.UUID
    note: str | None = None


INVOICE = Invoice(
    "i-1",
    Status.PAID,
    [Line("a", 2)],
    decimal.Decimal("10.50"),
    dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=dt.UTC),
    uuid.UUID(int=7),
)


@pytest.fixture(autouse=True)
def _needs_json(require_type) -> None:
    require_type("JSON")


def test_round_trip_and_frame(client: RegistryClient, value_ctx: SerializationContext) -> None:
    data = JsonSchemaSerializer(client, ORDER_JSON)(ORDER_RECORD, value_ctx)
    latest = client.get_latest_version(f"{value_ctx.topic}-value")
    assert latest.schema.schema_type == "JSON"
    assert data[:5] == wire.prefix(latest.schema_id)
    assert json.loads(data[5:]) == ORDER_RECORD
    assert JsonSchemaDeserializer(client)(data, value_ctx) == ORDER_RECORD


def test_confluent_kafka_writes_we_read(client, ck_client, value_ctx) -> None:
    theirs = JSONSerializer(json.dumps(ORDER_JSON), ck_client, conf=CK_TOPIC)(ORDER_RECORD, value_ctx)
    assert JsonSchemaDeserializer(client)(theirs, value_ctx) == ORDER_RECORD
    assert JsonSchemaDeserializer(client, ORDER_JSON)(theirs, value_ctx) == ORDER_RECORD


def test_we_write_confluent_kafka_reads(client, ck_client, value_ctx) -> None:
    ours = JsonSchemaSerializer(client, ORDER_JSON)(ORDER_RECORD, value_ctx)
    assert JSONDeserializer(None, schema_registry_client=ck_client, conf=CK_TOPIC)(ours, value_ctx) == ORDER_RECORD
    other = SerializationContext(value_ctx.topic + "-invoices", value_ctx.field)
    typed = JsonSchemaSerializer(client, Invoice)(INVOICE, other)
    got = JSONDeserializer(None, schema_registry_client=ck_client, conf=CK_TOPIC)(typed, other)
    assert got == {
        "id": "i-1",
        "status": "PAID",
        "lines": [{"sku": "a", "qty": 2}],
        "total": "10.50",
        "issued": "2024-01-02T03:04:05+00:00",
        "ref": str(uuid.UUID(int=7)),
        "note": None,
    }


def test_typed_records_round_trip(client, value_ctx) -> None:
    data = JsonSchemaSerializer(client, Invoice)(INVOICE, value_ctx)
    back = JsonSchemaDeserializer(client, Invoice)(data, value_ctx)
    assert back == INVOICE and isinstance(back.lines[0], Line) and back.status is Status.PAID
    registered = json.loads(client.get_latest_version(f"{value_ctx.topic}-value").schema.schema_str)
    assert registered["title"] == "Invoice" == json_schema(Invoice)["title"]


def test_record_strategy_uses_the_title(client) -> None:
    JsonSchemaSerializer(client, ORDER_JSON | {"title": "JsonOrderTitle"}, strategy="record")(ORDER_RECORD)
    assert "JsonOrderTitle" in client.get_subjects()


def test_invalid_record_is_rejected_with_the_path(client, value_ctx) -> None:
    ser = JsonSchemaSerializer(client, ORDER_JSON)
    with pytest.raises(SerializationError) as e:
        ser({**ORDER_RECORD, "qty": "three"}, value_ctx)
    assert "$.qty" in str(e.value) and "'three' is not of type 'integer'" in str(e.value)
    assert e.value.topic == value_ctx.topic and e.value.schema_id is not None
    with pytest.raises(SerializationError, match="'address' is a required property"):
        ser({k: v for k, v in ORDER_RECORD.items() if k != "address"}, value_ctx)
    # validation can be switched off
    data = JsonSchemaSerializer(client, ORDER_JSON, validate=False)({"qty": "three"}, value_ctx)
    assert json.loads(data[5:]) == {"qty": "three"}


def test_reader_validates_what_it_reads(client, value_ctx) -> None:
    bad = {**ORDER_RECORD, "id": 5}
    data = JsonSchemaSerializer(client, ORDER_JSON, validate=False)(bad, value_ctx)
    with pytest.raises(SerializationError) as e:
        JsonSchemaDeserializer(client)(data, value_ctx)
    assert e.value.offset == 5 and "at $.id: 5 is not of type 'string'" in str(e.value)
    assert JsonSchemaDeserializer(client, validate=False)(data, value_ctx) == bad


def test_not_json_payload(client, value_ctx) -> None:
    data = JsonSchemaSerializer(client, ORDER_JSON)(ORDER_RECORD, value_ctx)
    with pytest.raises(SerializationError) as e:
        JsonSchemaDeserializer(client)(data[:5] + b"{not json", value_ctx)
    assert "not valid JSON" in str(e.value) and e.value.offset >= 5


def test_frame_errors(client, value_ctx) -> None:
    de = JsonSchemaDeserializer(client)
    with pytest.raises(SerializationError, match="too short"):
        de(b"\x00", value_ctx)
    with pytest.raises(SerializationError, match="unknown magic byte 0x7b"):
        de(b'{"a": 1}', value_ctx)
    with pytest.raises(SerializationError) as e:
        de(wire.prefix(876543) + b"{}", value_ctx)
    assert e.value.schema_id == 876543 and "not known" in str(e.value)


def test_avro_id_is_not_read_as_json(client, value_ctx) -> None:
    avro_id = client.register(f"{value_ctx.topic}-avro", Schema('"string"'))
    with pytest.raises(SerializationError, match=f"schema {avro_id} is AVRO, not JSON"):
        JsonSchemaDeserializer(client)(wire.prefix(avro_id) + b'"x"', value_ctx)


def test_json_references(client, topic) -> None:
    from serdes import SchemaReference

    client.register(
        f"{topic}-addr",
        Schema(
            json.dumps({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}), "JSON"
        ),
    )
    person = Schema(
        json.dumps({"type": "object", "properties": {"home": {"$ref": "address.json"}}}),
        "JSON",
        (SchemaReference("address.json", f"{topic}-addr", 1),),
    )
    ser = JsonSchemaSerializer(client, person, subject=f"{topic}-person")
    assert JsonSchemaDeserializer(client)(ser({"home": {"city": "Oslo"}})) == {"home": {"city": "Oslo"}}
    with pytest.raises(SerializationError, match="'city' is a required property"):
        ser({"home": {}})


def test_json_serde_pair(client, topic) -> None:
    serde = JsonSchemaSerde(client, Invoice)
    assert serde.deserialize(serde.serialize(INVOICE, topic), topic) == INVOICE


@pytest.mark.parametrize(
    "value",
    [
        ORDER_RECORD,
        {**ORDER_RECORD, "qty": 1.5},
        {**ORDER_RECORD, "note": 3},
        {"id": "x"},
        [],
        {**ORDER_RECORD, "address": {"city": None}},
        {**ORDER_RECORD, "extra": True},
    ],
)
def test_fast_and_pure_validators_agree(value) -> None:
    from serdes.json_serdes import compile_validator

    v = compile_validator(Schema(json.dumps(ORDER_JSON), "JSON"), None)
    assert v.is_valid(value) == v.py.is_valid(value)
    closed = compile_validator(Schema(json.dumps(json_schema(Invoice)), "JSON"), None)
    assert closed.is_valid(value) == closed.py.is_valid(value)


def test_use_latest_version_writes_and_reads_with_the_latest_schema(client, value_ctx) -> None:
    subject = f"{value_ctx.topic}-value"
    latest_id = client.register(subject, Schema(json.dumps(ORDER_JSON), "JSON"))
    data = JsonSchemaSerializer(client, use_latest_version=True)(ORDER_RECORD, value_ctx)
    assert wire.read_schema_id(data) == latest_id
    with pytest.raises(SerializationError, match="'qty' is a required property"):
        JsonSchemaSerializer(client, use_latest_version=True)(
            {"id": "x", "price": 1, "address": {"city": "c"}}, value_ctx
        )
    assert JsonSchemaDeserializer(client, use_latest_version=True)(data, value_ctx) == ORDER_RECORD
