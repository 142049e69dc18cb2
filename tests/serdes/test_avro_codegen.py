"""The generated Avro encoder must write exactly fastavro's bytes whenever it writes at all, and must leave
every record it cannot encode canonically (or that fastavro would reject) to fastavro."""

from __future__ import annotations

import datetime as dt
import decimal
import enum
import io
import random
import uuid

import fastavro
import pytest

from serdes.avro_codegen import compile_encoder
from tests.serdes.test_avro_codegen_random import fastavro_bytes
from tests.support.schemas import AVRO_PRIMITIVE_FIELDS

SCHEMAS = {
    "primitives": {
        "type": "record",
        "name": "P",
        "fields": [*AVRO_PRIMITIVE_FIELDS, {"name": "n", "type": "null"}],
    },
    "containers": {
        "type": "record",
        "name": "C",
        "namespace": "x",
        "fields": [
            {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["A", "B", "C"]}},
            {"name": "arr", "type": {"type": "array", "items": "long"}},
            {"name": "m", "type": {"type": "map", "values": "string"}},
            {
                "name": "inner",
                "type": {
                    "type": "record",
                    "name": "In",
                    "fields": [{"name": "k", "type": "string"}, {"name": "e2", "type": "E"}],
                },
            },
            {"name": "again", "type": "In"},
            {"name": "recs", "type": {"type": "array", "items": "In"}},
            {"name": "maybe_in", "type": ["null", "In"], "default": None},
        ],
    },
    "unions": {
        "type": "record",
        "name": "U",
        "fields": [
            {"name": "ns", "type": ["null", "string"], "default": None},
            {"name": "sn", "type": ["string", "null"], "default": "dflt"},
            {"name": "nl", "type": ["null", "long"]},
            {"name": "nd", "type": ["null", "double"]},
            {"name": "three", "type": ["null", "string", "long"]},
            {"name": "arr_u", "type": {"type": "array", "items": ["null", "boolean"]}},
        ],
    },
    "logical": {
        "type": "record",
        "name": "L",
        "fields": [
            {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-micros"}},
            {"name": "day", "type": {"type": "int", "logicalType": "date"}},
            {"name": "dec", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}},
            {"name": "id", "type": {"type": "string", "logicalType": "uuid"}},
            {"name": "fx", "type": {"type": "fixed", "name": "F4", "size": 4}},
            {"name": "odd", "type": {"type": "string", "logicalType": "not-a-known-one"}},
        ],
    },
    "recursive": {
        "type": "record",
        "name": "Node",
        "fields": [{"name": "v", "type": "long"}, {"name": "next", "type": ["null", "Node"], "default": None}],
    },
}


class StrEnum(str, enum.Enum):  # noqa: UP042 - the mixin form, as user code writes it
    A = "A"


def rnd_string(r: random.Random) -> str:
    return r.choice(["", "a", "äöü€", "x" * r.randint(0, 9000), "\U0001f600", str(r.random())])


def rnd_long(r: random.Random) -> int:
    return r.choice(
        [
            0,
            1,
            -1,
            63,
            64,
            -64,
            -65,
            4095,
            4096,
            -4097,
            524287,
            524288,
            -524289,
            2**20,
            2**31,
            -(2**31),
            2**62,
            2**63 - 1,
            -(2**63),
            r.randint(-(2**40), 2**40),
        ]
    )


def valid(kind: str, r: random.Random) -> dict:
    if kind == "primitives":
        return {
            "s": rnd_string(r),
            "i": rnd_long(r) % 2**31,
            "l": rnd_long(r),
            "f": r.random(),
            "d": r.uniform(-1e300, 1e300),
            "b": r.random() < 0.5,
            "by": r.randbytes(r.randint(0, 5000)),
            "n": None,
        }
    if kind == "containers":
        inner = {"k": rnd_string(r), "e2": r.choice("ABC")}
        return {
            "e": r.choice("ABC"),
            "arr": [rnd_long(r) for _ in range(r.randint(0, 70))],
            "m": {rnd_string(r)[:20]: rnd_string(r)[:30] for _ in range(r.randint(0, 5))},
            "inner": inner,
            "again": dict(inner),
            "recs": [dict(inner)] * r.randint(0, 3),
            "maybe_in": r.choice([None, dict(inner)]),
        }
    if kind == "unions":
        return {
            "ns": r.choice([None, rnd_string(r)]),
            "sn": r.choice([None, "s"]),
            "nl": r.choice([None, 5]),
            "nd": r.choice([None, 2.5]),
            "three": r.choice([None, "t", 7]),
            "arr_u": [r.choice([None, True, False]) for _ in range(r.randint(0, 4))],
        }
    if kind == "logical":
        return {
            "ts": dt.datetime(2024, 1, 2, tzinfo=dt.UTC) + dt.timedelta(microseconds=r.randint(0, 10**12)),
            "day": dt.date(2000, 1, 1) + dt.timedelta(days=r.randint(0, 9000)),
            "dec": decimal.Decimal(r.randint(-(10**9), 10**9)).scaleb(-2),
            "id": uuid.UUID(int=r.getrandbits(128)),
            "fx": r.randbytes(4),
            "odd": rnd_string(r)[:10],
        }
    node = None
    for i in range(r.randint(1, 4)):
        node = {"v": i, "next": node}
    return node  # type: ignore[return-value]


ODD_VALUES = [
    True,
    False,
    1,
    0,
    1.0,
    -0.0,
    float("nan"),
    "1",
    b"1",
    bytearray(b"1"),
    None,
    [],
    (),
    {},
    2**63,
    -(2**63) - 1,
    2**64,
    StrEnum.A,
    "NaN",
    [1, 2],
    (1, 2),
    {"k": "v"},
    object(),
]


def mutate(record: dict, r: random.Random) -> dict:
    """Replace one field (maybe nested) with an odd value, drop one, or add an extra one."""
    out = dict(record)
    if not out:
        return out
    key = r.choice(list(out))
    action = r.random()
    if action < 0.7:
        out[key] = r.choice(ODD_VALUES)
    elif action < 0.85:
        del out[key]
    else:
        out["extra"] = 1
    if r.random() < 0.3:
        for k, v in out.items():
            if isinstance(v, dict):
                out[k] = mutate(v, r)
                break
    return out


@pytest.mark.parametrize("kind", list(SCHEMAS))
def test_generated_encoder_writes_fastavros_bytes_or_steps_aside(kind: str) -> None:
    r = random.Random(f"codegen-{kind}")
    named: dict = {}
    parsed = fastavro.parse_schema(SCHEMAS[kind], named)
    encode = compile_encoder(parsed, named)
    fast_hits = 0
    for i in range(600):
        record = valid(kind, r)
        if i % 2:
            record = mutate(record, r)
        expected = fastavro_bytes(parsed, record)
        buf = bytearray(b"\x00\x00\x00\x00\x01")
        try:
            encode(record, buf)
        except Exception:
            continue  # the serializer hands this record to fastavro
        fast_hits += 1
        assert isinstance(expected, bytes), f"fast path wrote {record!r}, which fastavro rejects ({expected})"
        assert bytes(buf[5:]) == expected, f"different bytes for {record!r}"
    # canonical records (every other one) must take the fast path
    assert fast_hits >= 300


def test_serializer_matches_fastavro_on_odd_records(client, topic) -> None:
    from serdes import AvroSerializer, SerializationError

    r = random.Random("serializer-odd")
    for kind in ("primitives", "containers", "unions"):
        parsed = fastavro.parse_schema(SCHEMAS[kind])
        ser = AvroSerializer(client, SCHEMAS[kind], subject=f"{topic}-{kind}")
        for _ in range(150):
            record = mutate(valid(kind, r), r)
            expected = fastavro_bytes(parsed, record)
            if isinstance(expected, bytes):
                assert ser(record)[5:] == expected
            else:
                with pytest.raises(SerializationError):
                    ser(record)


def fastavro_read(parsed, data: bytes, options: dict | None = None):
    from serdes import fastavro_core

    named: dict = {}
    parsed = fastavro.parse_schema(parsed, named)
    bio = io.BytesIO(data)
    try:
        value = fastavro_core.read_data(
            bio, parsed, {"writer": named, "reader": {}}, None, options or fastavro_core.read_options()
        )
    except Exception as e:
        return type(e), None
    return value, bio.tell()


@pytest.mark.parametrize("kind", list(SCHEMAS))
def test_generated_decoder_reads_what_fastavro_reads_or_steps_aside(kind: str) -> None:
    from serdes import fastavro_core
    from serdes.avro_codegen import compile_decoder

    r = random.Random(f"decoder-{kind}")
    named: dict = {}
    parsed = fastavro.parse_schema(SCHEMAS[kind], named)
    decode = compile_decoder(parsed, named, fastavro_core.read_options())
    fast_hits = 0
    for i in range(600):
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, parsed, valid(kind, r))
        data = buf.getvalue()
        if i % 2:  # damage it: truncate, flip a byte, or append garbage
            cut = r.randrange(len(data) + 1)
            data = r.choice([data[:cut], data[:cut] + bytes([r.randrange(256)]) + data[cut + 1 :], data + b"\x02"])
        expected, expected_end = fastavro_read(SCHEMAS[kind], data)
        try:
            value, end = decode(data, 0)
        except Exception:
            continue  # the deserializer hands this payload to fastavro
        fast_hits += 1
        assert not isinstance(expected, type), f"fast path read {data!r}, which fastavro rejects ({expected})"
        assert (value, end) == (expected, expected_end)
    assert fast_hits >= 300


def test_deserializer_matches_fastavro_on_damaged_payloads(client, topic) -> None:
    from serdes import AvroDeserializer, AvroSerializer, SerializationError

    r = random.Random("deserializer-damaged")
    de = AvroDeserializer(client)
    for kind in ("primitives", "containers", "unions"):
        ser = AvroSerializer(client, SCHEMAS[kind], subject=f"{topic}-{kind}")
        for _ in range(150):
            data = ser(valid(kind, r))
            cut = r.randrange(5, len(data) + 1)
            damaged = r.choice([data[:cut], data[:cut] + bytes([r.randrange(256)]) + data[cut + 1 :]])
            expected, end = fastavro_read(SCHEMAS[kind], damaged[5:])
            if isinstance(expected, type) or end != len(damaged) - 5:
                with pytest.raises(SerializationError):
                    de(damaged)
            else:
                assert de(damaged) == expected
