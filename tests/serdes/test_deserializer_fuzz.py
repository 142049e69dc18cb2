"""Truncated and mutated frames into every deserializer (Avro, JSON Schema, Protobuf; sync and async; Avro's
generated decoder and fastavro's resolving reader, JSON with and without validation, Protobuf with a class and
with the writer's message): each call returns a value or raises ``SerializationError`` (or a subclass), never
another exception, never a crash, and each answers within ``ANSWER_WITHIN`` seconds. An error for a frame with
a schema id names it. Frames come from the real serializers against the shared registry process; mutations are
drawn by hypothesis with a fixed seed and a bounded number of examples.
"""

from __future__ import annotations

import asyncio
import io
import json
import time
import uuid
from collections.abc import Callable, Iterator
from decimal import Decimal
from types import SimpleNamespace
from typing import Any

import fastavro
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from serdes import (
    AsyncAvroDeserializer,
    AsyncJsonSchemaDeserializer,
    AsyncProtobufDeserializer,
    AsyncRegistryClient,
    AvroDeserializer,
    AvroSerializer,
    JsonSchemaDeserializer,
    JsonSchemaSerializer,
    MessageField,
    ProtobufDeserializer,
    ProtobufSerializer,
    RegistryClient,
    SerializationContext,
    SerializationError,
)
from serdes.avro_guard import MAX_RECURSION_DEPTH, MAX_ZERO_SIZE_ITEMS
from tests.serdes.test_protobuf import make_order
from tests.support.schemas import AVRO_PRIMITIVE_FIELDS

#: schema type -> valid frames of it (two each)
Frames = dict[str, list[bytes]]
#: schema type -> (label, a call reading one frame) of every deserializer configuration of it
Deserializers = dict[str, list[tuple[str, Callable[[bytes], Any]]]]

EXAMPLES = 300
ANSWER_WITHIN = 5.0
TOPIC = "fuzz-frames"
CTX = SerializationContext(TOPIC, MessageField.VALUE)
KINDS = ("AVRO", "JSON", "PROTOBUF")

AVRO = {
    "type": "record",
    "name": "Fuzz",
    "namespace": "fz",
    "fields": [
        *AVRO_PRIMITIVE_FIELDS,
        {"name": "u", "type": ["null", "string", "long"]},
        {"name": "arr", "type": {"type": "array", "items": "int"}},
        {"name": "m", "type": {"type": "map", "values": "string"}},
        {"name": "e", "type": {"type": "enum", "name": "Color", "symbols": ["R", "G", "B"]}},
        {"name": "fx", "type": {"type": "fixed", "name": "F4", "size": 4}},
        {"name": "nulls", "type": {"type": "array", "items": "null"}},
        {"name": "dec", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}},
        {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "uid", "type": {"type": "string", "logicalType": "uuid"}},
        {"name": "next", "type": ["null", "Fuzz"], "default": None},
    ],
}
#: the same record with one more (defaulted) field: read through fastavro's schema resolution, not the generated code
AVRO_READER = {**AVRO, "fields": [*AVRO["fields"], {"name": "extra", "type": "string", "default": "x"}]}
AVRO_RECORD: dict[str, Any] = {
    "b": True,
    "i": -7,
    "l": 2**40,
    "f": 1.5,
    "d": -2.25,
    "s": "héllo",
    "by": b"\x00\xff",
    "u": "x",
    "arr": [1, -2, 300],
    "m": {"k": "v", "é": ""},
    "e": "G",
    "fx": b"abcd",
    "nulls": [None, None],
    "dec": Decimal("12.34"),
    "ts": 1_700_000_000_000,
    "uid": "6f1c6b5e-5c4d-4f6e-9a1b-2c3d4e5f6a7b",
    "next": None,
}
JSON_SCHEMA = {
    "type": "object",
    "properties": {"id": {"type": "integer"}, "tags": {"type": "array", "items": {"type": "string"}}},
    "required": ["id"],
}
JSON_RECORD = {"id": 12, "tags": ["a", "é", "😀"], "nested": {"x": [1.5, None, True]}}


@pytest.fixture(scope="module")
def frames(registry_url: str, protos: SimpleNamespace) -> Frames:
    """Valid frames of each type, written by our serializers."""
    with RegistryClient(registry_url) as client:
        avro = AvroSerializer(client, json.dumps(AVRO))
        nested = dict(AVRO_RECORD, next=dict(AVRO_RECORD, nulls=[], arr=[]))
        json_ser = JsonSchemaSerializer(client, json.dumps(JSON_SCHEMA))
        proto = ProtobufSerializer(client, protos.order.Order)
        ctx = {
            kind: SerializationContext(f"{TOPIC}-{kind}-{uuid.uuid4().hex[:8]}", MessageField.VALUE) for kind in KINDS
        }
        return {
            "AVRO": [avro(AVRO_RECORD, ctx["AVRO"]), avro(nested, ctx["AVRO"])],
            "JSON": [json_ser(JSON_RECORD, ctx["JSON"]), json_ser({"id": 1}, ctx["JSON"])],
            "PROTOBUF": [proto(make_order(protos), ctx["PROTOBUF"]), proto(protos.order.Order(), ctx["PROTOBUF"])],
        }


@pytest.fixture(scope="module")
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    loop = asyncio.new_event_loop()
    yield loop
    loop.close()


@pytest.fixture(scope="module")
def deserializers(
    registry_url: str, protos: SimpleNamespace, loop: asyncio.AbstractEventLoop
) -> Iterator[Deserializers]:
    """Every deserializer variant of each type, as ``(label, call)`` with ``call(data)`` run to completion."""
    client = RegistryClient(registry_url)
    aclient = AsyncRegistryClient(registry_url)

    def sync(d: Any) -> Callable[[bytes], Any]:
        return lambda data: d(data, CTX)

    def run_async(d: Any) -> Callable[[bytes], Any]:
        return lambda data: loop.run_until_complete(d(data, CTX))

    order = protos.order.Order
    yield {
        "AVRO": [
            ("avro generated", sync(AvroDeserializer(client))),
            ("avro resolving", sync(AvroDeserializer(client, json.dumps(AVRO_READER)))),
            ("avro record names", sync(AvroDeserializer(client, return_record_name=True))),
            ("async avro generated", run_async(AsyncAvroDeserializer(aclient))),
            ("async avro resolving", run_async(AsyncAvroDeserializer(aclient, json.dumps(AVRO_READER)))),
        ],
        "JSON": [
            ("json validating", sync(JsonSchemaDeserializer(client))),
            ("json plain", sync(JsonSchemaDeserializer(client, validate=False))),
            ("async json validating", run_async(AsyncJsonSchemaDeserializer(aclient))),
        ],
        "PROTOBUF": [
            ("protobuf class", sync(ProtobufDeserializer(client, order))),
            ("protobuf writer's message", sync(ProtobufDeserializer(client))),
            ("async protobuf class", run_async(AsyncProtobufDeserializer(aclient, order))),
        ],
    }
    client.close()
    loop.run_until_complete(aclient.aclose())


def _varint(n: int) -> bytes:
    z = (n << 1) ^ (n >> 63)
    out = bytearray()
    while True:
        b, z = z & 0x7F, z >> 7
        if z:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


#: byte strings a mutation splices in: huge, negative and overlong varints, a known schema id's neighbours
SPLICES = st.sampled_from(
    [_varint(2**62), _varint(-(2**62)), _varint(2**31), _varint(-1), b"\xff" * 11, b"\x80" * 10, b"\x00" * 4]
) | st.binary(min_size=1, max_size=6)


@st.composite
def mutated(draw: st.DrawFn, frames: list[bytes]) -> bytes:
    data = bytearray(draw(st.sampled_from(frames)))
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["truncate", "flip", "splice", "delete", "id", "magic"]))
        at = draw(st.integers(0, max(len(data) - 1, 0)))
        if kind == "truncate":
            del data[at:]
        elif kind == "flip" and data:
            data[at] = draw(st.integers(0, 255))
        elif kind == "splice":
            data[at:at] = draw(SPLICES)
        elif kind == "delete":
            del data[at : at + draw(st.integers(1, 8))]
        elif kind == "id" and len(data) >= 5:
            data[1:5] = draw(st.integers(0, 2**32 - 1)).to_bytes(4, "big")
        elif kind == "magic" and data:
            data[0] = draw(st.sampled_from([1, 2, 0xFF, ord("{")]))
    return bytes(data)


def read_or_refuse(label: str, call: Callable[[bytes], Any], data: bytes) -> None:
    """The call returns or raises SerializationError naming the schema id it read; promptly either way."""
    start = time.monotonic()
    try:
        call(data)
    except SerializationError as e:
        if data[:1] == b"\x00" and len(data) > 5 and e.schema_id is not None:
            assert e.schema_id == int.from_bytes(data[1:5], "big"), (label, data, e)
    except Exception as e:
        pytest.fail(f"{label}: {type(e).__name__}: {e} for {data!r}")
    elapsed = time.monotonic() - start
    assert elapsed < ANSWER_WITHIN, f"{label} took {elapsed:.1f}s for {data!r}"


@pytest.mark.parametrize("schema_type", KINDS)
def test_mutated_frames_raise_serialization_errors(
    frames: Frames, deserializers: Deserializers, schema_type: str
) -> None:
    for _label, call in deserializers[schema_type]:  # the valid frames read
        for data in frames[schema_type]:
            call(data)

    @settings(
        max_examples=EXAMPLES, derandomize=True, deadline=None, database=None, suppress_health_check=list(HealthCheck)
    )
    @given(data=mutated(frames[schema_type]))
    def fuzz(data: bytes) -> None:
        for label, call in deserializers[schema_type]:
            read_or_refuse(label, call, data)

    fuzz()


@pytest.mark.parametrize("schema_type", KINDS)
def test_every_truncation_raises_a_serialization_error(
    frames: Frames, deserializers: Deserializers, schema_type: str
) -> None:
    data = frames[schema_type][0]
    for label, call in deserializers[schema_type]:
        for end in range(len(data)):
            read_or_refuse(label, call, data[:end])


def test_a_huge_count_of_null_items_is_refused_not_read(frames: Frames, deserializers: Deserializers) -> None:
    """13 bytes claiming 2^62 ``null`` items: fastavro would append ``None`` until memory runs out."""
    data = frames["AVRO"][0]
    # where the "nulls" array's first block count is: the first byte in which the record differs from one without
    without = io.BytesIO()
    fastavro.schemaless_writer(without, fastavro.parse_schema(AVRO), dict(AVRO_RECORD, nulls=[]))
    nulls_at = 5 + next(i for i, (a, b) in enumerate(zip(data[5:], without.getvalue(), strict=False)) if a != b)
    hostile = data[:nulls_at] + _varint(2**62) + data[nulls_at + 1 :]
    for label, call in deserializers["AVRO"]:
        with pytest.raises(SerializationError, match=f"more than {MAX_ZERO_SIZE_ITEMS} array items") as e:
            call(hostile)
        assert (e.value.schema_id, e.value.offset) == (
            int.from_bytes(data[1:5], "big"),
            nulls_at + len(_varint(2**62)),
        ), label


def test_deeply_nested_recursive_records_are_refused_not_crashing(frames: Frames, deserializers: Deserializers) -> None:
    """A record nesting itself 100,000 times (a few hundred KB): fastavro's C reader would overflow the stack
    and kill the process."""
    data = frames["AVRO"][0]
    record = data[5:-1]  # every field but "next" (the last byte: its null branch)
    hostile = data[:5] + (record + b"\x02") * 100_000 + record + b"\x00"
    for label, call in deserializers["AVRO"]:
        with pytest.raises(SerializationError, match=f"deeper than {MAX_RECURSION_DEPTH} levels"):
            call(hostile)
        shallow = data[:5] + (record + b"\x02") * 50 + record + b"\x00"
        assert call(shallow) is not None, label
