"""The records the serdes tests share.

The order record the serdes tests and ``benchmarks/serdes_bench.py`` write: its Avro schema (``ORDER_AVRO``, full
name ``shop.Order``), its JSON Schema (``ORDER_JSON``, titled ``Order``), one record valid for both
(``ORDER_RECORD``) and the dataclasses that type it (``Order``, ``Address``, ``Status``; ``TYPED_ORDER`` is the
record as an ``Order``).

Eight fields, one of each kind a serializer treats differently: string, long, double, boolean, a nullable string,
an enum, an array of ints and a nested record. Tests that need another version of it derive one with
``order_variant`` (so the fields they do not change stay these); tests that need another shape define their own
schema beside them.

``AVRO_PRIMITIVE_FIELDS`` is one field of each non-null Avro primitive type: how the tests' "every type" records
start.

The payment record (``PAYMENT_AVRO``, ``PAYMENT_JSON``, ``PAYMENT_PROTO``: ``fe.Payment``) is what the encryption
tests encrypt: an id, a PII-tagged card number and (Avro and Protobuf) a PII-tagged, nullable bytes pin.
"""

from __future__ import annotations

import copy
import dataclasses
import enum
from collections.abc import Mapping, Sequence
from typing import Any

_PRIMITIVE_TYPES = {"b": "boolean", "i": "int", "l": "long", "f": "float", "d": "double", "s": "string", "by": "bytes"}
#: One field of each non-null Avro primitive type, named by its first letter (``by``: bytes).
AVRO_PRIMITIVE_FIELDS: list[dict[str, Any]] = [
    {"name": n, "type": avro_type} for n, avro_type in _PRIMITIVE_TYPES.items()
]

ORDER_AVRO: dict[str, Any] = {
    "type": "record",
    "name": "Order",
    "namespace": "shop",
    "fields": [
        {"name": "id", "type": "string"},
        {"name": "qty", "type": "long"},
        {"name": "price", "type": "double"},
        {"name": "paid", "type": "boolean"},
        {"name": "note", "type": ["null", "string"], "default": None},
        {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": ["NEW", "PAID", "SHIPPED"]}},
        {"name": "tags", "type": {"type": "array", "items": "int"}},
        {
            "name": "address",
            "type": {
                "type": "record",
                "name": "Address",
                "fields": [{"name": "city", "type": "string"}, {"name": "zip", "type": "int"}],
            },
        },
    ],
}


def order_variant(
    *, fields: Sequence[str | dict] | None = None, types: Mapping[str, Any] | None = None, add: Sequence[dict] = ()
) -> dict[str, Any]:
    """``ORDER_AVRO`` as another version of it writes or reads it: only the ``fields`` listed (in that order; all by
    default; a name keeps that field of ``ORDER_AVRO``, a dict is a field it does not have), the ``types`` given
    replacing those fields' types (their defaults stay), then the ``add`` fields. A deep copy, so a test changing
    it cannot change the shared schema."""
    by_name = {f["name"]: f for f in ORDER_AVRO["fields"]}
    listed = fields if fields is not None else list(by_name)
    unknown = {f for f in [*listed, *(types or {})] if isinstance(f, str) and f not in by_name}
    if unknown:
        raise ValueError(f"ORDER_AVRO has no field {sorted(unknown)}")
    kept = [by_name[f] if isinstance(f, str) else f for f in listed]
    retyped = [{**f, "type": (types or {}).get(f["name"], f["type"])} for f in kept]
    return copy.deepcopy({**ORDER_AVRO, "fields": [*retyped, *add]})


ORDER_JSON: dict[str, Any] = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "title": "Order",
    "type": "object",
    "properties": {
        "id": {"type": "string"},
        "qty": {"type": "integer"},
        "price": {"type": "number"},
        "paid": {"type": "boolean"},
        "note": {"type": ["null", "string"]},
        "status": {"type": "string", "enum": ["NEW", "PAID", "SHIPPED"]},
        "tags": {"type": "array", "items": {"type": "integer"}},
        "address": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "zip": {"type": "integer"}},
            "required": ["city", "zip"],
        },
    },
    "required": ["id", "qty", "price", "paid", "status", "tags", "address"],
}

ORDER_RECORD: dict[str, Any] = {
    "id": "o-1",
    "qty": 3,
    "price": 9.5,
    "paid": True,
    "note": None,
    "status": "PAID",
    "tags": [1, 2],
    "address": {"city": "Berlin", "zip": 10115},
}


class Status(enum.Enum):
    NEW = 0
    PAID = 1
    SHIPPED = 2


@dataclasses.dataclass
class Address:
    city: str
    zip: int


# ``ORDER_AVRO`` as typed records (no docstring: it would become the generated schema's "doc").
@dataclasses.dataclass
class Order:
    __avro_namespace__ = "shop"
    id: str
    qty: int
    price: float
    paid: bool
    note: str | None
    status: Status
    tags: list[int]
    address: Address


TYPED_ORDER = Order("o-1", 3, 9.5, True, None, Status.PAID, [1, 2], Address("Berlin", 10115))

PAYMENT_AVRO: dict[str, Any] = {
    "type": "record",
    "name": "Payment",
    "namespace": "fe",
    "fields": [
        {"name": "id", "type": "int"},
        {"name": "card", "type": "string", "confluent:tags": ["PII"]},
        {"name": "pin", "type": ["null", "bytes"], "default": None, "confluent:tags": ["PII"]},
    ],
}
PAYMENT_JSON: dict[str, Any] = {
    "type": "object",
    "properties": {"id": {"type": "integer"}, "card": {"type": "string", "confluent:tags": ["PII"]}},
}
PAYMENT_PROTO = """syntax = "proto3";
package fe;
import "confluent/meta.proto";
message Payment {
  int32 id = 1;
  string card = 2 [(confluent.field_meta).tags = "PII"];
  bytes pin = 3 [(confluent.field_meta).tags = "PII"];
}
"""
