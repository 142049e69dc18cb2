"""Value converters between decoded records and the Spark types of ``types.py``, both directions.

Decoding (``from_registry``): ``avro_converter``, ``json_converter`` and ``protobuf_converter`` turn values as
the decoders return them into values ``pyarrow.array`` accepts for the mapped type. Built once per reader
schema; a converter is ``None`` where the decoded value already fits (most of an Avro record), so the per-row
work is only where the mapping changes a value's shape: Avro uuid -> str, time-* -> int, non-null unions ->
``{"memberN": value}``; Protobuf messages -> dicts, enums -> names, Timestamp -> microseconds; JSON strings
with a date/date-time/base64 format -> date/datetime/bytes, and JSON text for untyped values.

Encoding (``to_registry``): ``avro_datum_converter``, ``json_value_converter`` and ``protobuf_value_converter``
map Spark rows (as ``pyarrow`` gives them) back to what fastavro, orjson and the message classes take.

``avro_column_decoder`` generates, per Avro schema, a decoder that reads a batch of bodies straight into Arrow
columns (the Python engine's fast path; see its docstring for when it applies).
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import uuid
from collections.abc import Callable
from typing import Any

import orjson

from serdes.avro_codegen import UNPACK_DOUBLE, UNPACK_FLOAT, CodeGen
from serdes.spark.types import (
    TIMESTAMP,
    AvroNames,
    avro_decimal_type,
    avro_union_branches,
    is_map_field,
    json_is_null,
    json_pointer,
)

Converter = Callable[[Any], Any] | None

__all__ = [
    "Converter",
    "Unsupported",
    "avro_column_decoder",
    "avro_converter",
    "avro_needs_record_names",
    "json_converter",
    "protobuf_converter",
]


# -- Avro (fastavro output) ------------------------------------------------------------------------------------


def _time_millis(t: dt.time) -> int:
    return ((t.hour * 60 + t.minute) * 60 + t.second) * 1000 + t.microsecond // 1000


def _time_micros(t: dt.time) -> int:
    return ((t.hour * 60 + t.minute) * 60 + t.second) * 1_000_000 + t.microsecond


def _resolve(schema: Any, names: AvroNames, namespace: str | None) -> tuple[Any, str | None]:
    """A schema with names looked up: (dict or primitive name or list, namespace for nested names)."""
    if isinstance(schema, str) and schema not in (
        "null",
        "boolean",
        "int",
        "long",
        "float",
        "double",
        "bytes",
        "string",
    ):
        named, full = names.lookup(schema, namespace)
        return named, full.rpartition(".")[0] or None
    if isinstance(schema, dict) and isinstance(schema.get("type"), (dict, list)):
        return _resolve(schema["type"], names, namespace)
    if isinstance(schema, dict) and schema.get("type") in ("record", "error", "enum", "fixed"):
        full = names.define(schema, namespace)
        return schema, full.rpartition(".")[0] or None
    return schema, namespace


def _avro_kind(schema: Any) -> tuple[str, str | None]:
    if isinstance(schema, str):
        return schema, None
    if isinstance(schema, list):
        return "union", None
    return schema["type"] if isinstance(schema["type"], str) else "union", schema.get("logicalType")


_NOT_A_CONTAINER = object()


def _container(kind: str, schema: dict, child: Callable[[Any], Converter]) -> Any:
    """The converter of a record, array or map, built from its children's (None when no child converts);
    ``_NOT_A_CONTAINER`` for other kinds. Shared by both directions, which differ only at the leaves."""
    if kind in ("record", "error"):
        children = [(f["name"], child(f["type"])) for f in schema.get("fields", [])]
        convs = [(n, c) for n, c in children if c is not None]
        if not convs:
            return None

        def record(d: dict) -> dict:
            for name, conv in convs:
                v = d.get(name)
                if v is not None:
                    d[name] = conv(v)
            return d

        return record
    if kind == "array":
        item = child(schema["items"])
        return None if item is None else (lambda v: [None if x is None else item(x) for x in v])
    if kind == "map":
        value = child(schema["values"])
        return None if value is None else (lambda v: {k: None if x is None else value(x) for k, x in v.items()})
    return _NOT_A_CONTAINER


def avro_converter(schema: Any, names: AvroNames, namespace: str | None = None) -> Converter:
    """Converter for fastavro's output of ``schema`` (read with ``return_record_name=True`` and override)."""
    schema, namespace = _resolve(schema, names, namespace)
    kind, logical = _avro_kind(schema)
    conv = _container(kind, schema, lambda s: avro_converter(s, names, namespace))
    if conv is not _NOT_A_CONTAINER:
        return conv
    if kind == "union":
        return _avro_union(schema, names, namespace)
    if logical == "uuid" and kind == "string":
        return lambda v: str(v) if isinstance(v, uuid.UUID) else v
    if logical == "time-millis" and kind == "int":
        return lambda v: _time_millis(v) if isinstance(v, dt.time) else v
    if logical == "time-micros" and kind == "long":
        return lambda v: _time_micros(v) if isinstance(v, dt.time) else v
    if logical == "decimal" and kind in ("bytes", "fixed") and avro_decimal_type(schema) is None:
        return _unscaled_bytes(schema)
    return None


def _unscaled_bytes(schema: dict) -> Callable[[Any], Any]:
    """A decimal too wide for Spark stays binary: the big-endian two's-complement unscaled value."""
    size = schema.get("size")
    scale = schema.get("scale", 0)

    def conv(v: Any) -> Any:
        if not isinstance(v, decimal.Decimal):
            return v
        unscaled = int(v.scaleb(scale))
        n = size or max(1, (unscaled.bit_length() + 8) // 8)
        return unscaled.to_bytes(n, "big", signed=True)

    return conv


def avro_needs_record_names(
    schema: Any, names: AvroNames, namespace: str | None = None, _seen: frozenset[str] = frozenset()
) -> bool:
    """Whether some union holds two or more records, so fastavro must say which one it read
    (``return_record_name`` costs ~10% of the decode, so it is only switched on then)."""
    schema, namespace = _resolve(schema, names, namespace)
    kind, _ = _avro_kind(schema)
    if kind in ("record", "error"):
        full = schema["name"] if "." in schema["name"] or not namespace else f"{namespace}.{schema['name']}"
        if full in _seen:
            return False
        return any(
            avro_needs_record_names(f["type"], names, namespace, _seen | {full}) for f in schema.get("fields", [])
        )
    if kind == "array":
        return avro_needs_record_names(schema["items"], names, namespace, _seen)
    if kind == "map":
        return avro_needs_record_names(schema["values"], names, namespace, _seen)
    if kind == "union":
        branches = [_resolve(b, names, namespace) for b in avro_union_branches(schema)]
        if sum(1 for b, _ in branches if _avro_kind(b)[0] in ("record", "error")) > 1:
            return True
        return any(avro_needs_record_names(b, names, ns, _seen) for b, ns in branches)
    return False


def _union_branches(
    schema: Any, names: AvroNames, namespace: str | None, child: Callable[..., Converter]
) -> tuple[list[tuple[Any, str | None]] | None, Converter]:
    """``(branches, None)`` when the union maps to ``struct<memberN>``, else ``(None, converter)``: a single branch
    converts as that branch, and an int/long or float/double pair is one widened Spark type (no conversion)."""
    branches = [_resolve(b, names, namespace) for b in avro_union_branches(schema)]
    if len(branches) <= 1:
        return None, (child(branches[0][0], names, branches[0][1]) if branches else None)
    kinds = [_avro_kind(b)[0] for b, _ in branches]
    if len(branches) == 2 and set(kinds) in ({"int", "long"}, {"float", "double"}):
        return None, None
    return branches, None


def _avro_union(schema: list, names: AvroNames, namespace: str | None) -> Converter:
    branches, conv = _union_branches(schema, names, namespace, avro_converter)
    if branches is None:
        return conv
    members = []
    for i, (b, ns) in enumerate(branches):
        kind, logical = _avro_kind(b)
        members.append((f"member{i}", kind, logical, b, avro_converter(b, names, ns)))
    n_records = sum(1 for m in members if m[1] in ("record", "error"))

    def pick(v: Any) -> tuple[str, Any]:
        for name, kind, logical, b, _ in members:
            if _avro_fits(v, kind, logical, b, n_records):
                return name, v
        raise ValueError(f"value {v!r} matches no branch of the Avro union")

    convs = {m[0]: m[4] for m in members}

    def union(v: Any) -> dict:
        name, value = pick(v)
        if isinstance(value, tuple):  # (record name, record) from return_record_name
            value = value[1]
        conv = convs[name]
        return {name: conv(value) if conv is not None else value}

    return union


def _avro_fits(v: Any, kind: str, logical: str | None, b: Any, n_records: int) -> bool:
    """Which union branch fastavro's value came from (fastavro returns only the value)."""
    if isinstance(v, tuple):
        return kind in ("record", "error") and b.get("name", "").rpartition(".")[2] == v[0].rpartition(".")[2]
    if isinstance(v, bool):
        return kind == "boolean"
    if logical is not None:
        if logical == "decimal":
            return isinstance(v, decimal.Decimal)
        if logical == "uuid":
            return isinstance(v, uuid.UUID)
        if logical in ("timestamp-millis", "timestamp-micros"):
            return isinstance(v, dt.datetime) and v.tzinfo is not None
        if logical in ("local-timestamp-millis", "local-timestamp-micros"):
            return isinstance(v, dt.datetime) and v.tzinfo is None
        if logical == "date":
            return isinstance(v, dt.date) and not isinstance(v, dt.datetime)
        if logical in ("time-millis", "time-micros"):
            return isinstance(v, dt.time)
    if isinstance(v, int):
        return kind == "long" or (kind == "int" and -(2**31) <= v < 2**31)
    if isinstance(v, float):
        return kind in ("float", "double")
    if isinstance(v, str):
        if kind == "enum":
            return v in b.get("symbols", ())
        return kind == "string"
    if isinstance(v, bytes):
        if kind == "fixed":
            return len(v) == b.get("size")
        return kind == "bytes"
    if isinstance(v, list):
        return kind == "array"
    if isinstance(v, dict):
        return (kind in ("record", "error") and n_records == 1) or kind == "map"
    return False


# -- JSON ------------------------------------------------------------------------------------------------------


def _json_text(v: Any) -> str:
    return orjson.dumps(v).decode()


def _parse_datetime(v: Any) -> dt.datetime:
    if not isinstance(v, str):
        raise ValueError(f"expected a date-time string, got {_json_text(v)}")
    t = dt.datetime.fromisoformat(v)
    return t if t.tzinfo is not None else t.replace(tzinfo=dt.UTC)


def _parse_date(v: Any) -> dt.date:
    if not isinstance(v, str):
        raise ValueError(f"expected a date string, got {_json_text(v)}")
    return dt.date.fromisoformat(v)


def _strict_string(v: Any) -> str:
    if type(v) is not str:
        raise ValueError(f"expected a string, got {_json_text(v)}")
    return v


def _base64(v: Any) -> bytes:
    return base64.b64decode(_strict_string(v), validate=True)


def json_converter(node: Any, root: Any = None, _refs: tuple[str, ...] = ()) -> Converter:
    """Converter from parsed JSON to the Spark type ``json_schema_to_spark`` gives ``node``."""
    root = node if root is None else root
    if node is True or node == {} or not isinstance(node, dict):
        return lambda v: v if type(v) is str else _json_text(v)
    if "$ref" in node:
        ref = node["$ref"]
        return json_converter(json_pointer(root, ref), root, (*_refs, ref))
    for key in ("oneOf", "anyOf"):
        if key in node:
            members = [m for m in node[key] if not json_is_null(m)]
            if len(members) == 1:
                return json_converter(members[0], root, _refs)
            return _json_text
    if "allOf" in node:
        props: dict[str, Any] = dict(node.get("properties", {}))
        for member in node["allOf"]:
            while isinstance(member, dict) and "$ref" in member:
                member = json_pointer(root, member["$ref"])
            if not isinstance(member, dict) or not (member.get("type") == "object" or "properties" in member):
                return _json_text
            props.update(member.get("properties", {}))
        return json_converter({"type": "object", "properties": props}, root, _refs)
    if "enum" in node or "const" in node:
        values = node.get("enum", [node.get("const")])
        if all(isinstance(v, str) or v is None for v in values):
            return _strict_string
        return lambda v: v if type(v) is str else _json_text(v)
    kind = node.get("type")
    if isinstance(kind, list):
        kinds = [k for k in kind if k != "null"]
        if len(kinds) == 1:
            kind = kinds[0]
        elif set(kinds) == {"integer", "number"}:
            kind = "number"
        else:
            return lambda v: v if type(v) is str else _json_text(v)
    if kind is None and "properties" in node:
        kind = "object"
    if kind == "object":
        properties = node.get("properties")
        if properties:
            convs = [(name, json_converter(sub, root, _refs)) for name, sub in properties.items()]

            def obj(v: Any) -> dict:
                if type(v) is not dict:
                    raise ValueError(f"expected a JSON object, got {_json_text(v)}")
                out = {}
                for name, conv in convs:
                    x = v.get(name)
                    out[name] = conv(x) if x is not None and conv is not None else x
                return out

            return obj
        extra = node.get("additionalProperties")
        if isinstance(extra, dict) and extra:
            conv = json_converter(extra, root, _refs)

            def mapping(v: Any) -> dict:
                if type(v) is not dict:
                    raise ValueError(f"expected a JSON object, got {_json_text(v)}")
                return v if conv is None else {k: None if x is None else conv(x) for k, x in v.items()}

            return mapping
        return _json_text
    if kind == "array":
        items = node.get("items")
        conv = json_converter(items, root, _refs) if isinstance(items, dict) else json_converter(True)

        def array(v: Any) -> list:
            if type(v) is not list:
                raise ValueError(f"expected a JSON array, got {_json_text(v)}")
            return v if conv is None else [None if x is None else conv(x) for x in v]

        return array
    if kind == "string":
        fmt = node.get("format")
        if fmt == "date-time":
            return _parse_datetime
        if fmt == "date":
            return _parse_date
        if node.get("contentEncoding") == "base64":
            return _base64
        return _strict_string
    if kind in ("integer", "number", "boolean", "null"):
        return None  # pyarrow rejects a wrong JSON type for these itself
    return lambda v: v if type(v) is str else _json_text(v)


# -- Protobuf --------------------------------------------------------------------------------------------------


def _proto_single(field: Any) -> Callable[[Any], Any] | None:
    """Converter for one value of ``field`` (not the repeated container)."""
    from google.protobuf.descriptor import FieldDescriptor as F

    if field.message_type is not None:
        return protobuf_converter(field.message_type)
    if field.type == F.TYPE_ENUM:
        names = {v.number: v.name for v in field.enum_type.values}
        return lambda v: names.get(v, str(v))
    if field.type in (F.TYPE_UINT64, F.TYPE_FIXED64):
        return decimal.Decimal
    return None


def protobuf_converter(desc: Any) -> Callable[[Any], Any]:
    """Converter from a parsed message to a dict (or, for Timestamp, microseconds since the epoch)."""
    if desc.full_name == TIMESTAMP:
        return lambda m: m.seconds * 1_000_000 + m.nanos // 1000
    getters: list[tuple[str, Callable[[Any], Any]]] = []
    for field in desc.fields:
        getters.append((field.name, _proto_getter(field)))

    def message(m: Any) -> dict:
        return {name: get(m) for name, get in getters}

    return message


def _proto_getter(field: Any) -> Callable[[Any], Any]:
    name = field.name
    if is_map_field(field):
        entry = field.message_type
        kconv = _proto_single(entry.fields_by_name["key"])
        vconv = _proto_single(entry.fields_by_name["value"])
        if kconv is None and vconv is None:
            return lambda m: dict(getattr(m, name))
        return lambda m: {(kconv(k) if kconv else k): (vconv(v) if vconv else v) for k, v in getattr(m, name).items()}
    conv = _proto_single(field)
    if field.is_repeated:
        if conv is None:
            return lambda m: list(getattr(m, name))
        return lambda m: [conv(x) for x in getattr(m, name)]
    if field.has_presence:
        if conv is None:
            return lambda m: getattr(m, name) if m.HasField(name) else None
        return lambda m: conv(getattr(m, name)) if m.HasField(name) else None
    if conv is None:
        return lambda m: getattr(m, name)
    return lambda m: conv(getattr(m, name))


# -- the other way: Spark rows (Arrow ``to_pylist(maps_as_pydicts="strict")``) -> serializer input --------------


def avro_datum_converter(schema: Any, names: AvroNames, namespace: str | None = None) -> Converter:
    """Spark value -> fastavro datum: ``struct<memberN>`` union values back to the one member that is set."""
    schema, namespace = _resolve(schema, names, namespace)
    kind, _ = _avro_kind(schema)
    conv = _container(kind, schema, lambda s: avro_datum_converter(s, names, namespace))
    if conv is not _NOT_A_CONTAINER:
        return conv
    if kind != "union":
        return None
    branches, conv = _union_branches(schema, names, namespace, avro_datum_converter)
    if branches is None:
        return conv
    members = []
    for i, (b, ns) in enumerate(branches):
        name = None
        if isinstance(b, dict) and _avro_kind(b)[0] in ("record", "error"):
            name = b["name"] if "." in b["name"] or not ns else f"{ns}.{b['name']}"
        members.append((f"member{i}", name, avro_datum_converter(b, names, ns)))

    def union(v: dict) -> Any:
        for member, record_name, conv in members:
            x = v.get(member)
            if x is not None:
                x = conv(x) if conv is not None else x
                # a record branch is named so fastavro cannot pick another record with the same fields
                return (record_name, x) if record_name is not None else x
        raise ValueError(f"union value {v!r} has no member set")

    return union


def json_value_converter(node: Any, root: Any = None) -> Converter:
    """Spark value -> JSON value: binary back to base64, JSON-text columns parsed back."""
    root = node if root is None else root
    if node is True or node == {} or not isinstance(node, dict):
        return _from_text
    if "$ref" in node:
        return json_value_converter(json_pointer(root, node["$ref"]), root)
    for key in ("oneOf", "anyOf"):
        if key in node:
            members = [m for m in node[key] if not json_is_null(m)]
            return json_value_converter(members[0], root) if len(members) == 1 else _from_text
    if "allOf" in node:
        props: dict[str, Any] = dict(node.get("properties", {}))
        for member in node["allOf"]:
            while isinstance(member, dict) and "$ref" in member:
                member = json_pointer(root, member["$ref"])
            if not isinstance(member, dict):
                return _from_text
            props.update(member.get("properties", {}))
        return json_value_converter({"type": "object", "properties": props}, root)
    if "enum" in node or "const" in node:
        values = node.get("enum", [node.get("const")])
        return None if all(isinstance(v, str) or v is None for v in values) else _from_text
    kind = node.get("type")
    if isinstance(kind, list):
        kinds = [k for k in kind if k != "null"]
        if len(kinds) == 1:
            kind = kinds[0]
        elif set(kinds) == {"integer", "number"}:
            return None
        else:
            return _from_text
    if kind is None and "properties" in node:
        kind = "object"
    if kind == "object":
        properties = node.get("properties")
        if properties:
            convs = [(name, json_value_converter(sub, root)) for name, sub in properties.items()]

            def obj(v: dict) -> dict:
                # absent (null) properties are left out: JSON Schema's "not required" is "may be missing"
                return {n: (c(v[n]) if c is not None else v[n]) for n, c in convs if v.get(n) is not None}

            return obj
        extra = node.get("additionalProperties")
        if isinstance(extra, dict) and extra:
            value_conv = json_value_converter(extra, root)
            return (
                None
                if value_conv is None
                else (lambda v: {k: None if x is None else value_conv(x) for k, x in v.items()})
            )
        return _from_text
    if kind == "array":
        items = node.get("items")
        conv = json_value_converter(items, root) if isinstance(items, dict) else _from_text
        return None if conv is None else (lambda v: [None if x is None else conv(x) for x in v])
    if kind == "string" and node.get("format") not in ("date-time", "date") and node.get("contentEncoding") == "base64":
        return lambda v: base64.b64encode(v).decode("ascii")
    if kind in ("string", "integer", "number", "boolean", "null"):
        return None
    return _from_text


def _from_text(v: Any) -> Any:
    return orjson.loads(v) if isinstance(v, str) else v


def protobuf_value_converter(desc: Any) -> Callable[[Any], Any]:
    """Spark value -> what the generated message constructor accepts: dicts for messages (nulls left out, so
    fields with presence stay unset), tz-aware datetimes for Timestamp, ints for uint64/fixed64 decimals."""
    if desc.full_name == TIMESTAMP:
        return lambda v: v if v.tzinfo is not None else v.replace(tzinfo=dt.UTC)
    setters = []
    for field in desc.fields:
        conv: Callable[[Any], Any] | None = None
        if is_map_field(field):
            vconv = _proto_value_single(field.message_type.fields_by_name["value"])
            if vconv is not None:
                conv = (lambda vc: lambda v: {k: vc(x) for k, x in v.items()})(vconv)
        else:
            single = _proto_value_single(field)
            if single is not None:
                conv = (lambda sc: lambda v: [sc(x) for x in v])(single) if field.is_repeated else single
        setters.append((field.name, conv))

    def message(v: dict) -> dict:
        out = {}
        for name, conv in setters:
            x = v.get(name)
            if x is not None:
                out[name] = conv(x) if conv is not None else x
        return out

    return message


def _proto_value_single(field: Any) -> Callable[[Any], Any] | None:
    from google.protobuf.descriptor import FieldDescriptor as F

    if field.message_type is not None:
        return protobuf_value_converter(field.message_type)
    if field.type in (F.TYPE_UINT64, F.TYPE_FIXED64):
        return int
    return None


# -- Avro bytes -> Arrow columns (the Python engine's fast path) -----------------------------------------------

_ARROW_PRIMITIVES: dict[str, Any] = {}  # filled lazily: pyarrow is only imported where Spark runs


def _arrow_primitive(kind: str) -> Any:
    if not _ARROW_PRIMITIVES:
        import pyarrow as pa

        _ARROW_PRIMITIVES.update(
            {
                "boolean": pa.bool_(),
                "int": pa.int32(),
                "long": pa.int64(),
                "float": pa.float32(),
                "double": pa.float64(),
                "string": pa.string(),
                "bytes": pa.binary(),
            }
        )
    return _ARROW_PRIMITIVES.get(kind)


class Unsupported(Exception):
    """The schema has a part the column decoder does not generate code for (the row-wise path reads it)."""


def _read_long(data: bytes, pos: int, b: int) -> tuple[int, int]:
    """Zig-zag varint of two or more bytes at ``pos`` (``b = data[pos]``, the one-byte case is inlined).
    Unrolled: the bytes-at-a-time loop cost as much as the rest of a record. Raises past 64 bits, like
    ``avro_codegen``'s decoder (fastavro's C reader would wrap around; the row-wise path lets it decide)."""
    n = b & 0x7F
    pos += 1
    b = data[pos]
    if b < 128:
        n |= b << 7
        return (n >> 1) ^ -(n & 1), pos + 1
    n |= (b & 0x7F) << 7
    pos += 1
    b = data[pos]
    if b < 128:
        n |= b << 14
        return (n >> 1) ^ -(n & 1), pos + 1
    n |= (b & 0x7F) << 14
    shift = 21
    while True:
        pos += 1
        b = data[pos]
        n |= (b & 0x7F) << shift
        if b < 128:
            if n >> 64:
                raise ValueError("varint does not fit 64 bits")
            return (n >> 1) ^ -(n & 1), pos + 1
        shift += 7
        if shift > 63:
            raise ValueError("varint longer than 10 bytes")


class _ColumnGen(CodeGen):
    """Generates ``decode(data, starts, ends) -> lists``: one pass over the rows of a batch that appends every
    leaf value to its own list (no dict per record), plus a tree saying how the lists become Arrow arrays."""

    def __init__(self, named: dict[str, Any]) -> None:
        super().__init__(named, {"rv": _read_long, "UD": UNPACK_DOUBLE, "UF": UNPACK_FLOAT})
        self.lists: list[tuple[str, str]] = []  # (name, initial value)
        self.counters: list[str] = []

    def new_list(self, init: str = "[]") -> str:
        name = f"L{next(self.ids)}"
        self.lists.append((name, init))
        return name

    def long(self, target: str, ind: int) -> None:
        self.emit("b = data[pos]", ind)
        self.emit(f"if b < 128: {target} = (b >> 1) ^ -(b & 1); pos += 1", ind)
        self.emit(f"else: {target}, pos = rv(data, pos, b)", ind)

    def resolve(self, schema: Any) -> Any:
        while True:
            if isinstance(schema, str) and schema in self.named:
                if schema in self.stack:
                    raise Unsupported("recursive type")
                schema = self.named[schema]
            elif isinstance(schema, dict) and not isinstance(schema.get("type"), str):
                schema = schema["type"]
            elif (
                isinstance(schema, dict)
                and schema["type"] not in ("record", "error", "enum", "array", "map", "fixed")
                and "logicalType" not in schema
            ):
                schema = schema["type"]  # {"type": "string"}
            else:
                return schema

    def node(self, schema: Any, atype: Any, ind: int, nullable: bool) -> tuple:
        """Emit code reading one value at ``pos`` into the columns; return the spec to build its array."""
        schema = self.resolve(schema)
        if isinstance(schema, list):
            return self.union(schema, atype, ind)
        if isinstance(schema, str):
            if schema == "null" or _arrow_primitive(schema) != atype:
                raise Unsupported(schema)
            lst = self.new_list()
            if schema == "boolean":
                self.emit("b = data[pos]; pos += 1", ind)
                self.emit(f"if b == 1: {lst}_(True)", ind)
                self.emit(f"elif b == 0: {lst}_(False)", ind)
                self.emit("else: raise ValueError", ind)
            elif schema in ("int", "long"):
                self.long("x", ind)
                self.emit(f"{lst}_(x)", ind)
            elif schema == "double":
                self.emit(f"{lst}_(UD(data, pos)[0]); pos += 8", ind)
            elif schema == "float":
                self.emit(f"{lst}_(UF(data, pos)[0]); pos += 4", ind)
            else:  # string / bytes: the raw slice; strings are checked as UTF-8 when the column is built
                self.long("n", ind)
                self.emit("e = pos + n", ind)
                self.emit("if n < 0 or e > end: raise ValueError", ind)
                self.emit(f"{lst}_(data[pos:e]); pos = e", ind)
                return ("utf8" if schema == "string" else "leaf", lst, atype)
            return ("leaf", lst, atype)
        kind = schema["type"]
        if "logicalType" in schema or kind not in ("record", "error", "enum", "array"):
            raise Unsupported(kind)
        if kind == "enum":
            if atype != _arrow_primitive("string"):
                raise Unsupported("enum")
            lst = self.new_list()
            self.long("x", ind)
            self.emit(f"if not 0 <= x < {len(schema['symbols'])}: raise ValueError", ind)
            self.emit(f"{lst}_(x)", ind)
            return ("enum", lst, tuple(schema["symbols"]))
        mask = self.new_list() if nullable else None
        if mask is not None:
            self.emit(f"{mask}_(False)", ind)
        if kind == "array":
            import pyarrow as pa

            if not pa.types.is_list(atype):
                raise Unsupported("array")
            offsets = self.new_list("[0]")
            count = f"K{next(self.ids)}"
            self.counters.append(count)
            c = f"c{next(self.ids)}"
            self.emit("while True:", ind)
            self.long(c, ind + 1)
            self.emit(f"if {c} == 0: break", ind + 1)
            self.emit(f"if {c} < 0:", ind + 1)  # a block with its byte size, which we do not need
            self.emit(f"{c} = -{c}", ind + 2)
            self.long("_", ind + 2)
            # every item takes at least one byte (null items and empty records are Unsupported), so a count
            # larger than the bytes left is corrupt: checked before looping over it
            self.emit(f"if {c} > end - pos: raise ValueError", ind + 1)
            self.emit(f"{count} += {c}", ind + 1)
            self.emit(f"for _ in range({c}):", ind + 1)
            item = self.node(schema["items"], atype.value_type, ind + 2, False)
            self.emit(f"{offsets}_({count})", ind)
            return ("list", offsets, item, mask, atype)
        fields = schema.get("fields", [])
        import pyarrow as pa

        if (
            not fields
            or not pa.types.is_struct(atype)
            or atype.num_fields != len(fields)
            or [f.name for f in atype] != [f["name"] for f in fields]
        ):
            raise Unsupported("record")
        self.stack.append(schema["name"])
        children = [self.node(f["type"], atype.field(i).type, ind, False) for i, f in enumerate(fields)]
        self.stack.pop()
        return ("struct", children, mask, atype)

    def union(self, branches: list[Any], atype: Any, ind: int) -> tuple:
        others = [b for b in branches if b != "null"]
        if len(branches) != 2 or len(others) != 1:
            raise Unsupported("union")
        null_index = branches.index("null")
        i = f"i{next(self.ids)}"
        self.long(i, ind)
        self.emit(f"if {i} == {1 - null_index}:", ind)
        spec = self.node(others[0], atype, ind + 1, True)
        self.emit(f"elif {i} == {null_index}:", ind)
        self.null(spec, ind + 1)
        self.emit("else: raise ValueError", ind)
        return spec

    def null(self, spec: tuple, ind: int) -> None:
        """Append a null for ``spec`` (and placeholders under it, so every column keeps its length)."""
        kind = spec[0]
        if kind in ("leaf", "utf8", "enum"):
            self.emit(f"{spec[1]}_(None)", ind)
        elif kind == "list":
            _, offsets, _item, mask, _ = spec
            self.emit(f"{offsets}_({offsets}[-1])", ind)
            if mask is not None:
                self.emit(f"{mask}_(True)", ind)
        else:  # a struct: its fields get placeholders (nulls) too, masked or not
            _, children, mask, _ = spec
            if mask is not None:
                self.emit(f"{mask}_(True)", ind)
            for child in children:
                self.null(child, ind)


def _build_column(spec: tuple, cols: dict[str, list]) -> Any:
    import pyarrow as pa

    kind = spec[0]
    if kind == "leaf":
        return pa.array(cols[spec[1]], type=spec[2])
    if kind == "utf8":  # the cast checks the UTF-8 (fastavro's strict decode rejects the same bytes)
        return pa.array(cols[spec[1]], type=pa.binary()).cast(pa.string())
    if kind == "enum":
        return pa.array(spec[2], type=pa.string()).take(pa.array(cols[spec[1]], type=pa.int32()))
    if kind == "list":
        _, offsets, item, mask, atype = spec
        return pa.ListArray.from_arrays(
            pa.array(cols[offsets], type=pa.int32()),
            _build_column(item, cols),
            type=atype,
            mask=None if mask is None else pa.array(cols[mask], pa.bool_()),
        )
    _, children, mask, atype = spec
    return pa.StructArray.from_arrays(
        [_build_column(c, cols) for c in children],
        fields=list(atype),
        mask=None if mask is None else pa.array(cols[mask], pa.bool_()),
    )


def avro_column_decoder(schema: Any, named: dict[str, Any], arrow_type: Any) -> Callable[[bytes, list, list], Any]:
    """``decode(data, starts, ends) -> pyarrow.Array`` of ``arrow_type`` for a fastavro-parsed Avro ``schema``
    read without schema resolution, one record per ``data[starts[i]:ends[i]]`` (no frame header).

    All or nothing: it raises on anything unexpected in any row (truncation, a record not ending exactly at its
    end, a bad union or enum index, invalid UTF-8, a value that does not fit its Arrow type) and the caller then
    reads the batch row by row with fastavro, which gives each row its result or error. Raises ``Unsupported``
    at build time for schemas with logical types, fixed, maps, general unions or recursion."""
    gen = _ColumnGen(named)
    spec = gen.node(schema, arrow_type, 2, False)
    head = ["def decode(data, starts, ends):"]
    for name, init in gen.lists:
        head.append(f"    {name} = {init}; {name}_ = {name}.append")
    head += [f"    {c} = 0" for c in gen.counters]
    head.append("    for pos, end in zip(starts, ends):")
    tail = [
        "        if pos != end: raise ValueError",
        "    return {" + ", ".join(f"{n!r}: {n}" for n, _ in gen.lists) + "}",
    ]
    source = "\n".join(head + gen.lines + tail) + "\n"
    namespace = dict(gen.consts)
    exec(compile(source, "<serdes avro column decoder>", "exec"), namespace)
    columns = namespace["decode"]

    def decode(data: bytes, starts: list, ends: list) -> Any:
        return _build_column(spec, columns(data, starts, ends))

    decode.source = source  # type: ignore[attr-defined]  # for debugging
    return decode
