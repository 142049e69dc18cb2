"""The generated resolver (a writer schema read as another reader schema) against fastavro's schema resolution, on
random schema pairs (hypothesis): a random writer schema, a reader derived from it as schemas evolve (fields added
with defaults, dropped, reordered; promotions; enum symbols added or dropped with a default; types made
nullable, union branches added), random records, and damaged payloads. Whenever the resolver reads, it must give
fastavro's value; where fastavro fails, it must fail too."""

from __future__ import annotations

import io
from typing import Any

import fastavro
import pytest
from hypothesis import given
from hypothesis import strategies as st

from serdes import fastavro_core
from serdes.avro_resolver import compile_resolver
from tests.serdes.test_avro_codegen_random import SCHEMAS, SETTINGS, values
from tests.support.schemas import order_variant

PROMOTIONS = {
    "int": ["int", "long", "float", "double"],
    "long": ["long", "float", "double"],
    "float": ["float", "double"],
    "string": ["string", "bytes"],
    "bytes": ["bytes", "string"],
}


def _evolve(draw: st.DrawFn, schema: Any) -> Any:
    """A reader schema fastavro can resolve ``schema`` (writer) to, most of the time."""
    if isinstance(schema, list):
        out = [_evolve(draw, b) for b in schema]
        if "null" not in out and draw(st.booleans()):
            out.append("null")
        return out
    if isinstance(schema, str):
        evolved = draw(st.sampled_from(PROMOTIONS.get(schema, [schema])))
        return ["null", evolved] if schema != "null" and draw(st.integers(0, 5)) == 0 else evolved
    kind = schema["type"]
    out = dict(schema)
    if kind == "record":
        fields = [dict(f, type=_evolve(draw, f["type"])) for f in schema["fields"]]
        if len(fields) > 1 and draw(st.booleans()):
            del fields[draw(st.integers(0, len(fields) - 1))]
        if draw(st.booleans()):
            fields.append({"name": "added", "type": "long", "default": 7})
        if draw(st.booleans()):
            fields.append({"name": "maybe", "type": ["null", "string"], "default": None})
        if draw(st.booleans()):
            fields.reverse()
        out["fields"] = fields
    elif kind == "enum":
        symbols = list(schema["symbols"])
        if draw(st.booleans()):
            symbols.append("Z")
        if len(symbols) > 1 and draw(st.booleans()):
            symbols.pop(0)
            if draw(st.booleans()):
                out["default"] = symbols[0]
        out["symbols"] = symbols
    elif kind == "array":
        out["items"] = _evolve(draw, schema["items"])
    elif kind == "map":
        out["values"] = _evolve(draw, schema["values"])
    return out


@st.composite
def schema_pairs(draw: st.DrawFn) -> tuple[dict, dict, Any]:
    writer = draw(SCHEMAS)
    return writer, _evolve(draw, writer), draw(values(writer))


def fastavro_resolved(w_parsed: Any, w_named: dict, r_parsed: Any, r_named: dict, data: bytes) -> tuple[Any, Any]:
    bio = io.BytesIO(data)
    try:
        value = fastavro_core.read_data(
            bio, w_parsed, {"writer": w_named, "reader": r_named}, r_parsed, fastavro_core.read_options()
        )
    except Exception as e:
        return type(e), None
    return value, bio.tell()


@SETTINGS
@given(schema_pairs(), st.integers(0, 2**16), st.integers(0, 255), st.integers(0, 3))
def test_generated_resolver_reads_what_fastavro_resolves(
    case: tuple[dict, dict, Any], where: int, byte: int, damage: int
) -> None:
    writer, reader, record = case
    w_named: dict = {}
    r_named: dict = {}
    w_parsed = fastavro.parse_schema(writer, w_named)
    try:
        r_parsed = fastavro.parse_schema(reader, r_named)
    except Exception:
        return  # not a valid reader schema (a union made of two of one type): nothing to resolve
    buf = io.BytesIO()
    try:
        fastavro.schemaless_writer(buf, w_parsed, record)
    except Exception:
        return  # a value out of range for its type: nothing written
    data = buf.getvalue()
    if damage:
        cut = where % (len(data) + 1)
        data = [data[:cut], data[:cut] + bytes([byte]) + data[cut + 1 :], data + bytes([byte])][damage - 1]
    expected, end = fastavro_resolved(w_parsed, w_named, r_parsed, r_named, data)
    try:
        resolve = compile_resolver(w_parsed, w_named, r_parsed, r_named, fastavro_core.read_options())
    except ValueError:
        return  # a pair the resolver leaves to fastavro
    try:
        value, at = resolve(data, 0)
    except Exception:
        return  # the deserializer hands this payload to fastavro
    assert not isinstance(expected, type), f"resolver read {data!r}, which fastavro rejects ({expected})"
    assert repr((value, at)) == repr((expected, end))  # types and key order too (3 == 3.0, dicts ignore order)


RESOLVED_FIELDS = ["id", "qty", "status", "note", "tags"]
WRITER = order_variant(
    fields=RESOLVED_FIELDS,
    types={"qty": "int", "status": {"type": "enum", "name": "Status", "symbols": ["NEW", "PAID", "GONE"]}},
    add=[{"name": "legacy", "type": "string"}],
)
READER = order_variant(
    fields=RESOLVED_FIELDS,
    types={
        "status": {"type": "enum", "name": "Status", "symbols": ["NEW", "PAID", "LOST"], "default": "LOST"},
        "note": ["null", "string", "long"],
        "tags": {"type": "array", "items": "double"},
    },
    add=[{"name": "region", "type": "string", "default": "eu"}],
)


def test_deserializer_resolves_an_evolved_schema_through_the_generated_resolver(client, topic) -> None:
    """A typical evolution takes the generated path and gives fastavro's records; a damaged payload is still a
    SerializationError naming the schema id."""
    from serdes import AvroDeserializer, AvroSerializer, SerializationError

    ser = AvroSerializer(client, WRITER, subject=f"{topic}-value")
    de = AvroDeserializer(client, READER)
    w_parsed, r_parsed = fastavro.parse_schema(WRITER), fastavro.parse_schema(READER)
    for i in range(30):
        record = {
            "id": f"o{i}",
            "qty": i * 1000,
            "status": ["NEW", "PAID", "GONE"][i % 3],
            "note": None if i % 2 else f"n{i}",
            "tags": list(range(i % 4)),
            "legacy": "x",
        }
        frame = ser(record)
        expected = fastavro.schemaless_reader(io.BytesIO(frame[5:]), w_parsed, r_parsed)
        assert de(frame) == expected
        assert expected["status"] != "GONE" and expected["region"] == "eu"
    [plan] = de._plans.values()
    assert "serdes avro resolver" in plan.decode.__code__.co_filename  # the generated path, not fastavro's
    with pytest.raises(SerializationError) as raised:
        de(frame[:-2])
    assert raised.value.schema_id == int.from_bytes(frame[1:5], "big")


def test_generated_resolver_follows_named_type_references() -> None:
    """Named types used again by name (a record and an enum, in a field, an array and a union), read as a reader
    with a promoted array and one field more: fastavro's values, every record on the generated path."""
    import copy
    import random

    from tests.serdes.test_avro_codegen import SCHEMAS, valid

    writer = SCHEMAS["containers"]
    reader = copy.deepcopy(writer)
    reader["fields"][1] = {"name": "arr", "type": {"type": "array", "items": "double"}}
    reader["fields"].append({"name": "extra", "type": "long", "default": 1})
    w_named: dict = {}
    r_named: dict = {}
    w_parsed, r_parsed = fastavro.parse_schema(writer, w_named), fastavro.parse_schema(reader, r_named)
    resolve = compile_resolver(w_parsed, w_named, r_parsed, r_named, fastavro_core.read_options())
    r = random.Random("resolver-named")
    for _ in range(100):
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, w_parsed, valid("containers", r))
        data = buf.getvalue()
        assert repr(resolve(data, 0)) == repr(fastavro_resolved(w_parsed, w_named, r_parsed, r_named, data))
