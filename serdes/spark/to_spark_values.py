"""Decoded records -> Spark values: ``avro_converter``, ``json_converter`` and ``protobuf_converter`` turn values
as the decoders return them into values ``pyarrow.array`` accepts for the Spark type ``types.py`` maps the schema
to (``from_registry``'s Python engine).

Built once per reader schema; a converter is ``None`` where the decoded value already fits (most of an Avro
record), so the per-row work is only where the mapping changes a value's shape: Avro uuid -> str, time-* -> int,
non-null unions -> ``{"memberN": value}``; Protobuf messages -> dicts, enums -> names, Timestamp -> microseconds;
JSON strings with a date/date-time/base64 format -> date/datetime/bytes, and JSON text for untyped values. The
other direction is ``from_spark_values``.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import uuid
from collections.abc import Callable
from typing import Any

import orjson

from serdes.spark.converter_tree import AvroWalk, Converter, avro_kind, resolve_avro
from serdes.spark.types import (
    TIMESTAMP,
    AvroNames,
    avro_decimal_type,
    avro_union_branches,
    is_map_field,
    json_node,
)

__all__ = ["avro_converter", "avro_needs_record_names", "json_converter", "protobuf_converter"]


# -- Avro (fastavro output) ------------------------------------------------------------------------------------


def _time_millis(t: dt.time) -> int:
    return ((t.hour * 60 + t.minute) * 60 + t.second) * 1000 + t.microsecond // 1000


def _time_micros(t: dt.time) -> int:
    return ((t.hour * 60 + t.minute) * 60 + t.second) * 1_000_000 + t.microsecond


def avro_converter(schema: Any, names: AvroNames, namespace: str | None = None) -> Converter:
    """Converter for fastavro's output of ``schema`` (read with ``return_record_name=True`` and override)."""
    return _FromDecoded(names).converter(schema, namespace)


class _FromDecoded(AvroWalk):
    def leaf(self, kind: str, logical: str | None, schema: Any) -> Converter:
        if logical == "uuid" and kind == "string":
            return lambda v: str(v) if isinstance(v, uuid.UUID) else v
        if logical == "time-millis" and kind == "int":
            return lambda v: _time_millis(v) if isinstance(v, dt.time) else v
        if logical == "time-micros" and kind == "long":
            return lambda v: _time_micros(v) if isinstance(v, dt.time) else v
        if logical == "decimal" and kind in ("bytes", "fixed") and avro_decimal_type(schema) is None:
            return _unscaled_bytes(schema)
        return None

    def struct_union(self, branches: list[tuple[Any, str | None]]) -> Converter:
        members = []
        for i, (b, ns) in enumerate(branches):
            kind, logical = avro_kind(b)
            members.append((f"member{i}", kind, logical, b, self.converter(b, ns)))
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
    schema, namespace = resolve_avro(schema, names, namespace)
    kind, _ = avro_kind(schema)
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
        branches = [resolve_avro(b, names, namespace) for b in avro_union_branches(schema)]
        if sum(1 for b, _ in branches if avro_kind(b)[0] in ("record", "error")) > 1:
            return True
        return any(avro_needs_record_names(b, names, ns, _seen) for b, ns in branches)
    return False


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
    kind, node, refs = json_node(node, root, _refs)
    if kind == "json":
        return _json_text
    if kind == "enum":
        return _strict_string
    if kind == "struct":
        convs = [(name, json_converter(sub, root, refs)) for name, sub in node["properties"].items()]

        def obj(v: Any) -> dict:
            if type(v) is not dict:
                raise ValueError(f"expected a JSON object, got {_json_text(v)}")
            out = {}
            for name, conv in convs:
                x = v.get(name)
                out[name] = conv(x) if x is not None and conv is not None else x
            return out

        return obj
    if kind == "map":
        conv = json_converter(node["additionalProperties"], root, refs)

        def mapping(v: Any) -> dict:
            if type(v) is not dict:
                raise ValueError(f"expected a JSON object, got {_json_text(v)}")
            return v if conv is None else {k: None if x is None else conv(x) for k, x in v.items()}

        return mapping
    if kind == "array":
        items = node.get("items")
        conv = json_converter(items, root, refs) if isinstance(items, dict) else _text_unless_string

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
    return _text_unless_string


def _text_unless_string(v: Any) -> str:
    """A value held as JSON text: strings as they are."""
    return v if type(v) is str else _json_text(v)


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
