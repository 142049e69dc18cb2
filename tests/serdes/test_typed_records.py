"""Typed records: dataclass / pydantic -> Avro and JSON Schema, and the converters both ways (no registry)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import decimal
import enum
import io
import uuid
from typing import Annotated

import fastavro
import jsonschema
import orjson
import pytest

from serdes import DecimalSpec, avro_schema, json_schema, record_fullname
from serdes.typed_records import avro_decoder, avro_encoder, json_decoder, json_encoder


class Status(enum.Enum):
    NEW = "n"
    PAID = "p"


@dataclasses.dataclass
class Address:
    __avro_namespace__ = "shop"
    city: str
    zip: int


@dataclasses.dataclass
class Order:
    __avro_namespace__ = "shop"
    id: str
    qty: int
    price: float
    paid: bool
    status: Status
    tags: list[int]
    address: Address
    created: dt.datetime
    day: dt.date
    amount: Annotated[decimal.Decimal, DecimalSpec(10, 2)]
    ref: uuid.UUID
    blob: bytes
    note: str | None = None
    by_city: dict[str, Address] = dataclasses.field(default_factory=dict)
    backup: Address | None = None


@dataclasses.dataclass
class Card:
    number: str


@dataclasses.dataclass
class Cash:
    currency: str


@dataclasses.dataclass
class Payment:
    method: Card | Cash
    amount: float


@dataclasses.dataclass
class Bad:
    ok: int
    what: object


def sample() -> Order:
    return Order(
        "o-1",
        3,
        9.5,
        True,
        Status.PAID,
        [1, 2],
        Address("Berlin", 10115),
        dt.datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=dt.UTC),
        dt.date(2024, 5, 6),
        decimal.Decimal("12.34"),
        uuid.UUID("12345678-1234-5678-1234-567812345678"),
        b"\x00\xff",
        None,
        {"home": Address("Paris", 75001)},
        Address("Rome", 100),
    )


def test_avro_schema_of_a_dataclass() -> None:
    s = avro_schema(Order)
    assert s["type"] == "record" and s["name"] == "Order" and s["namespace"] == "shop"
    fields = {f["name"]: f for f in s["fields"]}
    assert [f["name"] for f in s["fields"]] == [f.name for f in dataclasses.fields(Order)]
    assert fields["id"]["type"] == "string"
    assert fields["qty"]["type"] == "long"
    assert fields["price"]["type"] == "double"
    assert fields["paid"]["type"] == "boolean"
    assert fields["status"]["type"] == {
        "type": "enum",
        "name": "Status",
        "namespace": __name__,
        "symbols": ["NEW", "PAID"],
    }
    assert fields["tags"]["type"] == {"type": "array", "items": "long"}
    assert fields["address"]["type"] == {
        "type": "record",
        "name": "Address",
        "namespace": "shop",
        "fields": [{"name": "city", "type": "string"}, {"name": "zip", "type": "long"}],
    }
    assert fields["created"]["type"] == {"type": "long", "logicalType": "timestamp-micros"}
    assert fields["day"]["type"] == {"type": "int", "logicalType": "date"}
    assert fields["amount"]["type"] == {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}
    assert fields["ref"]["type"] == {"type": "string", "logicalType": "uuid"}
    assert fields["blob"]["type"] == "bytes"
    assert fields["note"] == {"name": "note", "type": ["null", "string"], "default": None}
    assert fields["by_city"] == {"name": "by_city", "type": {"type": "map", "values": "shop.Address"}, "default": {}}
    # the second use of a named type refers to it by full name
    assert fields["backup"] == {"name": "backup", "type": ["null", "shop.Address"], "default": None}
    assert "default" not in fields["id"]
    fastavro.parse_schema(s)  # a valid schema
    assert record_fullname(Order) == "shop.Order"


def test_avro_round_trip_builds_the_dataclass_back() -> None:
    schema = fastavro.parse_schema(avro_schema(Order))
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, schema, avro_encoder(Order)(sample()))
    buf.seek(0)
    back = avro_decoder(Order)(fastavro.schemaless_reader(buf, schema))
    assert back == sample()
    assert isinstance(back.address, Address) and back.status is Status.PAID
    assert isinstance(back.by_city["home"], Address)


def test_non_null_default_moves_null_last_in_the_union() -> None:
    @dataclasses.dataclass
    class WithDefaults:
        n: int | None = 5
        s: Status = Status.NEW
        xs: list[str] = dataclasses.field(default_factory=lambda: ["a"])
        when: dt.date = dt.date(1970, 1, 11)

    fields = {f["name"]: f for f in avro_schema(WithDefaults)["fields"]}
    assert fields["n"] == {"name": "n", "type": ["long", "null"], "default": 5}
    assert fields["s"]["default"] == "NEW"
    assert fields["xs"]["default"] == ["a"]
    assert fields["when"]["default"] == 10
    fastavro.parse_schema(avro_schema(WithDefaults))


def test_union_of_two_records_round_trips_to_the_right_class() -> None:
    schema = fastavro.parse_schema(avro_schema(Payment))
    for method in (Card("4111"), Cash("EUR")):
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, schema, avro_encoder(Payment)(Payment(method, 1.0)))
        buf.seek(0)
        raw = fastavro.schemaless_reader(buf, schema, return_record_name=True, return_record_name_override=True)
        assert avro_decoder(Payment)(raw) == Payment(method, 1.0)


def test_unsupported_types_name_the_field() -> None:
    with pytest.raises(TypeError, match=r"Bad\.what: no Avro mapping"):
        avro_schema(Bad)
    with pytest.raises(TypeError, match="needs a dataclass or pydantic model class"):
        avro_schema(int)


def test_json_schema_of_a_dataclass_validates_its_json() -> None:
    s = json_schema(Order)
    assert s["title"] == "Order" and s["type"] == "object" and s["additionalProperties"] is False
    assert s["required"] == [
        "id",
        "qty",
        "price",
        "paid",
        "status",
        "tags",
        "address",
        "created",
        "day",
        "amount",
        "ref",
        "blob",
    ]
    props = s["properties"]
    assert props["qty"] == {"type": "integer"}
    assert props["status"] == {"type": "string", "enum": ["NEW", "PAID"]}
    assert props["created"] == {"type": "string", "format": "date-time"}
    assert props["note"] == {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None}
    assert props["address"] == {"$ref": "#/definitions/shop.Address"}
    assert s["definitions"]["shop.Address"]["required"] == ["city", "zip"]
    doc = orjson.loads(orjson.dumps(json_encoder(Order)(sample())))
    jsonschema.Draft7Validator(s).validate(doc)
    assert doc["created"] == "2024-05-06T07:08:09.123456+00:00"
    assert doc["amount"] == "12.34" and doc["status"] == "PAID" and doc["blob"] == "AP8="
    assert json_decoder(Order)(doc) == sample()
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft7Validator(s).validate({**doc, "qty": "three"})


def test_encoder_hands_over_the_instance_dict_when_nothing_needs_converting() -> None:
    a = Address("Oslo", 150)
    assert avro_encoder(Address)(a) is vars(a)
    a.cached = "not a field"
    assert avro_encoder(Address)(a) == {"city": "Oslo", "zip": 150}
    assert json_encoder(Address)(a) == {"city": "Oslo", "zip": 150}


def test_pydantic_models_map_like_dataclasses() -> None:
    pydantic = pytest.importorskip("pydantic")

    class Item(pydantic.BaseModel):
        sku: str
        qty: int = 1

    class Basket(pydantic.BaseModel):
        items: list[Item]
        status: Status
        note: str | None = None

    s = avro_schema(Basket)
    assert s["name"] == "Basket"
    assert s["fields"][0] == {
        "name": "items",
        "type": {
            "type": "array",
            "items": {
                "type": "record",
                "name": "Item",
                "namespace": __name__,
                "fields": [{"name": "sku", "type": "string"}, {"name": "qty", "type": "long", "default": 1}],
            },
        },
    }
    assert s["fields"][2] == {"name": "note", "type": ["null", "string"], "default": None}
    basket = Basket(items=[Item(sku="a", qty=2)], status=Status.NEW)
    parsed = fastavro.parse_schema(s)
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, parsed, avro_encoder(Basket)(basket))
    buf.seek(0)
    assert avro_decoder(Basket)(fastavro.schemaless_reader(buf, parsed)) == basket
    assert json_decoder(Basket)(orjson.loads(orjson.dumps(json_encoder(Basket)(basket)))) == basket
