"""The generated Avro encoder and decoder against fastavro on random schemas and random records (hypothesis): every
type the fast path covers (enums, fixed, arrays and maps of any item type, nested records, unions of any arity,
decimal, uuid, date, time, timestamp and local-timestamp), and damaged payloads. Whenever the generated code
writes or reads, it must give fastavro's bytes or value; a record fastavro rejects must be rejected too (the
serializer then lets fastavro raise); every intact payload must be read by the generated decoder."""

from __future__ import annotations

import datetime as dt
import decimal
import io
import itertools
import uuid
from typing import Any

import fastavro
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from serdes import fastavro_core
from serdes.avro_codegen import compile_decoder, compile_encoder

SETTINGS = settings(
    max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow], database=None
)

PRIMITIVES = ["null", "boolean", "int", "long", "float", "double", "bytes", "string"]
LOGICAL = [
    {"type": "long", "logicalType": "timestamp-millis"},
    {"type": "long", "logicalType": "timestamp-micros"},
    {"type": "long", "logicalType": "local-timestamp-millis"},
    {"type": "long", "logicalType": "local-timestamp-micros"},
    {"type": "int", "logicalType": "date"},
    {"type": "int", "logicalType": "time-millis"},
    {"type": "long", "logicalType": "time-micros"},
    {"type": "string", "logicalType": "uuid"},
    {"type": "bytes", "logicalType": "decimal", "precision": 12, "scale": 3},
    {"type": "fixed", "name": "Dec", "size": 8, "logicalType": "decimal", "precision": 18, "scale": 2},
]


def _leaf() -> st.SearchStrategy[Any]:
    return st.one_of(
        st.sampled_from(PRIMITIVES),
        st.sampled_from(LOGICAL),
        st.lists(st.sampled_from(["A", "B", "C", "D"]), min_size=1, max_size=4, unique=True).map(
            lambda symbols: {"type": "enum", "name": "E", "symbols": symbols}
        ),
        st.integers(0, 6).map(lambda size: {"type": "fixed", "name": "F", "size": size}),
    )


def _union_key(branch: Any) -> Any:
    """What Avro requires unique in a union: the type, or the name of a named type."""
    if isinstance(branch, dict):
        return branch.get("name") if branch["type"] in ("record", "enum", "fixed") else branch["type"]
    return branch


def _extend(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    fields = st.lists(inner, min_size=1, max_size=5).map(
        lambda types: {
            "type": "record",
            "name": "R",
            "fields": [{"name": f"f{i}", "type": t} for i, t in enumerate(types)],
        }
    )
    non_union = inner.filter(lambda s: not isinstance(s, list))
    return st.one_of(
        fields,
        inner.filter(lambda s: not isinstance(s, list)).map(lambda items: {"type": "array", "items": items}),
        inner.map(lambda values: {"type": "map", "values": values}),
        st.lists(non_union, min_size=1, max_size=5, unique_by=_union_key),
    )


def _name_all(schema: Any, counter: itertools.count) -> Any:
    """Give every named type a unique name (the strategies reuse R, E, F, Dec)."""
    if isinstance(schema, list):
        return [_name_all(s, counter) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = dict(schema)
    if "name" in out:
        out["name"] = f"{out['name']}{next(counter)}"
    if "fields" in out:
        out["fields"] = [dict(f, type=_name_all(f["type"], counter)) for f in out["fields"]]
    for key in ("items", "values"):
        if key in out:
            out[key] = _name_all(out[key], counter)
    return out


def _unique_union(schema: Any) -> bool:
    if isinstance(schema, list):
        keys = [_union_key(b) for b in schema]
        return len(set(map(repr, keys))) == len(keys) and all(_unique_union(b) for b in schema)
    if isinstance(schema, dict):
        inner = [f["type"] for f in schema.get("fields", ())] + [schema[k] for k in ("items", "values") if k in schema]
        return all(_unique_union(s) for s in inner)
    return True


SCHEMAS = (
    st.recursive(_leaf(), _extend, max_leaves=12)
    .map(lambda s: {"type": "record", "name": "Top", "fields": [{"name": "v", "type": s}]})
    .map(lambda s: _name_all(s, itertools.count()))
    .filter(_unique_union)
)

UTC = dt.UTC
LONGS = st.one_of(st.integers(-64, 64), st.integers(-(2**63), 2**63 - 1), st.sampled_from([2**63, -(2**63) - 1]))
INTS = st.one_of(st.integers(-64, 64), st.integers(-(2**31), 2**31 - 1), st.sampled_from([2**31, -(2**31) - 1]))
DATETIMES = st.datetimes(dt.datetime(1900, 1, 1), dt.datetime(2200, 1, 1), timezones=st.just(UTC))


def values(schema: Any) -> st.SearchStrategy[Any]:
    """Values for ``schema`` (unparsed, names unique): mostly valid, some out of range for their type."""
    if isinstance(schema, list):
        return st.one_of([values(b) for b in schema])
    if isinstance(schema, str):
        return {
            "null": st.none(),
            "boolean": st.booleans(),
            "int": INTS,
            "long": LONGS,
            "float": st.floats(width=32, allow_nan=False),
            "double": st.floats(allow_nan=False),
            "bytes": st.binary(max_size=20),
            "string": st.text(max_size=20),
        }[schema]
    logical = schema.get("logicalType")
    if logical in ("timestamp-millis", "timestamp-micros"):
        return st.one_of(DATETIMES, LONGS)
    if logical in ("local-timestamp-millis", "local-timestamp-micros"):
        return st.one_of(st.datetimes(dt.datetime(1900, 1, 1), dt.datetime(2200, 1, 1)), LONGS)
    if logical == "date":
        return st.one_of(st.dates(dt.date(1, 1, 1), dt.date(9999, 1, 1)), st.integers(-(10**6), 10**6))
    if logical in ("time-millis", "time-micros"):
        return st.one_of(st.times(), st.integers(0, 86_399_999))
    if logical == "uuid":
        return st.one_of(st.uuids(), st.uuids().map(str))
    if logical == "decimal":
        digits = schema["precision"]
        return st.integers(-(10**digits) + 1, 10**digits - 1).map(lambda n: decimal.Decimal(n).scaleb(-schema["scale"]))
    kind = schema["type"]
    if kind == "enum":
        return st.sampled_from(schema["symbols"])
    if kind == "fixed":
        return st.binary(min_size=schema["size"], max_size=schema["size"])
    if kind == "array":
        return st.lists(values(schema["items"]), max_size=4)
    if kind == "map":
        return st.dictionaries(st.text(max_size=5), values(schema["values"]), max_size=3)
    return st.fixed_dictionaries({f["name"]: values(f["type"]) for f in schema["fields"]})


def fastavro_bytes(parsed: Any, record: Any) -> bytes | type[Exception]:
    buf = io.BytesIO()
    try:
        fastavro.schemaless_writer(buf, parsed, record)
    except Exception as e:
        return type(e)
    return buf.getvalue()


def fastavro_read(parsed: Any, named: dict, data: bytes, options: dict) -> tuple[Any, int | None]:
    bio = io.BytesIO(data)
    try:
        value = fastavro_core.read_data(bio, parsed, {"writer": named, "reader": {}}, None, options)
    except Exception as e:
        return type(e), None
    return value, bio.tell()


def _schema_and_record(draw: st.DrawFn) -> tuple[dict, Any]:
    schema = draw(SCHEMAS)
    return schema, draw(values(schema))


schema_and_record = st.composite(_schema_and_record)()


@SETTINGS
@given(schema_and_record)
def test_generated_encoder_writes_fastavros_bytes_on_random_schemas(case: tuple[dict, Any]) -> None:
    schema, record = case
    named: dict = {}
    parsed = fastavro.parse_schema(schema, named)
    encode = compile_encoder(parsed, named)
    assert "wd(" not in encode.source, "the generated encoder handed part of a non-recursive schema to fastavro"
    expected = fastavro_bytes(parsed, record)
    buf = bytearray()
    try:
        encode(record, buf)
    except Exception:
        return  # the serializer hands this record to fastavro, which decides
    assert isinstance(expected, bytes), f"fast path wrote {record!r}, which fastavro rejects ({expected})"
    assert bytes(buf) == expected


# Unions of primitives, logical types, enums and fixed, fed values of any of those types: fastavro's branch choice
# (first valid branch, int ranges, float giving way to a later double, enum symbols, fixed sizes) and its rejections.
ANY_LEAF_VALUE = st.one_of(
    [values(s) for s in PRIMITIVES]
    + [values(s) for s in LOGICAL]
    + [st.sampled_from(["A", "B", "Z"]), st.binary(min_size=0, max_size=6)]
)
UNIONS = (
    st.lists(_leaf(), min_size=2, max_size=6, unique_by=_union_key)
    .map(lambda u: {"type": "record", "name": "Top", "fields": [{"name": "v", "type": u}]})
    .map(lambda s: _name_all(s, itertools.count()))
    .filter(_unique_union)
)


@settings(SETTINGS, max_examples=400)
@given(UNIONS, ANY_LEAF_VALUE)
def test_generated_union_encoder_picks_fastavros_branch(schema: dict, value: Any) -> None:
    named: dict = {}
    parsed = fastavro.parse_schema(schema, named)
    encode = compile_encoder(parsed, named)
    expected = fastavro_bytes(parsed, {"v": value})
    buf = bytearray()
    try:
        encode({"v": value}, buf)
    except Exception:
        return
    assert isinstance(expected, bytes), f"fast path wrote {value!r}, which fastavro rejects ({expected})"
    assert bytes(buf) == expected


READ_OPTIONS = [
    fastavro_core.read_options(),
    fastavro_core.read_options(True, False),
    fastavro_core.read_options(True, True),
]


@SETTINGS
@given(schema_and_record, st.sampled_from(READ_OPTIONS), st.integers(0, 2**16), st.integers(0, 255), st.integers(0, 3))
def test_generated_decoder_reads_fastavros_values_on_random_and_damaged_payloads(
    case: tuple[dict, Any], options: dict, where: int, byte: int, damage: int
) -> None:
    schema, record = case
    named: dict = {}
    parsed = fastavro.parse_schema(schema, named)
    data = fastavro_bytes(parsed, record)
    if not isinstance(data, bytes):
        return  # a value fastavro does not write (out of range): nothing to read
    decode = compile_decoder(parsed, named, options)
    assert "rd(" not in decode.source
    if damage == 0:  # intact: the generated decoder must read it, as fastavro does
        assert repr(decode(data, 0)) == repr(fastavro_read(parsed, named, data, options))  # types, key order too
        return
    cut = where % (len(data) + 1)
    damaged = [data[:cut], data[:cut] + bytes([byte]) + data[cut + 1 :], data + bytes([byte])][damage - 1]
    expected, end = fastavro_read(parsed, named, damaged, options)
    try:
        value, at = decode(damaged, 0)
    except Exception:
        return  # the deserializer hands this payload to fastavro
    assert not isinstance(expected, type), f"fast path read {damaged!r}, which fastavro rejects ({expected})"
    assert repr((value, at)) == repr((expected, end))


# A record of every logical type and a union of every arity the serializer meets in practice.
WIDE = {
    "type": "record",
    "name": "Wide",
    "namespace": "t",
    "fields": [
        {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "at_us", "type": ["null", {"type": "long", "logicalType": "timestamp-micros"}]},
        {"name": "day", "type": {"type": "int", "logicalType": "date"}},
        {"name": "clock", "type": {"type": "int", "logicalType": "time-millis"}},
        {"name": "id", "type": {"type": "string", "logicalType": "uuid"}},
        {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}},
        {"name": "digest", "type": {"type": "fixed", "name": "Digest", "size": 4}},
        {"name": "any", "type": ["null", "string", "long", "double", "boolean"]},
        {"name": "ratio", "type": ["null", "float", "string", "double"]},  # fastavro takes the double for a float
        {"name": "small", "type": ["int", "long"]},  # the int branch within its range, the long one beyond
        {"name": "kind", "type": ["null", {"type": "enum", "name": "Kind", "symbols": ["X", "Y"]}, "string"]},
        {"name": "tags", "type": {"type": "map", "values": {"type": "array", "items": ["null", "int"]}}},
    ],
}


def _wide(i: int) -> dict:
    return {
        "at": dt.datetime(2026, 1, 1, tzinfo=UTC) + dt.timedelta(milliseconds=i * 7919),
        "at_us": None if i % 3 == 0 else dt.datetime(2026, 1, 1, tzinfo=UTC) + dt.timedelta(microseconds=i),
        "day": dt.date(2026, 1, 1) + dt.timedelta(days=i),
        "clock": dt.time(i % 24, i % 60, i % 60, (i * 1000) % 1_000_000),
        "id": uuid.UUID(int=i * 2**64 + i),
        "amount": decimal.Decimal(i * 137 - 5000).scaleb(-2),
        "digest": i.to_bytes(4, "big"),
        "any": [None, f"s{i}", i, i * 0.5, i % 2 == 0][i % 5],
        "kind": [None, "X", "Y", "free text"][i % 4],
        "ratio": [None, i / 7][i % 2],
        "small": i * (1 << (i % 40)),
        "tags": {f"k{i % 3}": [None if j % 2 else j for j in range(i % 4)]},
    }


def test_records_of_logical_types_and_wide_unions_take_the_fast_paths() -> None:
    named: dict = {}
    parsed = fastavro.parse_schema(WIDE, named)
    encode = compile_encoder(parsed, named)
    decode = compile_decoder(parsed, named, fastavro_core.read_options())
    for i in range(200):
        record = _wide(i)
        buf = bytearray()
        encode(record, buf)  # no fallback: every value is canonical and its union branch certain
        assert bytes(buf) == fastavro_bytes(parsed, record)
        assert decode(bytes(buf), 0) == fastavro_read(parsed, named, bytes(buf), fastavro_core.read_options())


def test_serializer_and_deserializer_on_logical_types_and_unions(client, topic) -> None:
    """Through AvroSerializer/AvroDeserializer: fastavro's bytes, fastavro's values, and a damaged payload is a
    SerializationError naming the schema id."""
    from serdes import AvroDeserializer, AvroSerializer, SerializationError

    ser, de = AvroSerializer(client, WIDE, subject=f"{topic}-wide"), AvroDeserializer(client)
    parsed = fastavro.parse_schema(WIDE)
    for i in range(50):
        record = _wide(i)
        frame = ser(record)
        assert frame[5:] == fastavro_bytes(parsed, record)
        assert de(frame) == fastavro.schemaless_reader(io.BytesIO(frame[5:]), parsed)
    schema_id = int.from_bytes(frame[1:5], "big")
    with pytest.raises(SerializationError) as raised:
        de(frame[:-3])
    assert raised.value.schema_id == schema_id
    assert str(schema_id) in str(raised.value)
    with pytest.raises(SerializationError) as raised:
        ser(dict(_wide(1), amount="not a decimal"))
    assert raised.value.schema_id == schema_id
