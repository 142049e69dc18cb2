"""Spark values -> serializer input (``to_registry``): ``avro_datum_converter``, ``json_value_converter`` and
``protobuf_value_converter`` map Spark rows, as Arrow's ``to_pylist(maps_as_pydicts="strict")`` gives them, back to
what fastavro, orjson and the message classes take. The other direction is ``to_spark_values``.
"""

from __future__ import annotations

import base64
import datetime as dt
from collections.abc import Callable
from typing import Any

import orjson

from serdes.spark.converter_tree import AvroWalk, Converter, avro_kind
from serdes.spark.types import TIMESTAMP, AvroNames, is_map_field, json_node

__all__ = ["avro_datum_converter", "json_value_converter", "protobuf_value_converter"]


def avro_datum_converter(schema: Any, names: AvroNames, namespace: str | None = None) -> Converter:
    """Spark value -> fastavro datum: ``struct<memberN>`` union values back to the one member that is set."""
    return _ToDatum(names).converter(schema, namespace)


class _ToDatum(AvroWalk):
    def struct_union(self, branches: list[tuple[Any, str | None]]) -> Converter:
        members = []
        for i, (b, ns) in enumerate(branches):
            name = None
            if isinstance(b, dict) and avro_kind(b)[0] in ("record", "error"):
                name = b["name"] if "." in b["name"] or not ns else f"{ns}.{b['name']}"
            members.append((f"member{i}", name, self.converter(b, ns)))

        def union(v: dict) -> Any:
            for member, record_name, conv in members:
                x = v.get(member)
                if x is not None:
                    x = conv(x) if conv is not None else x
                    # a record branch is named so fastavro cannot pick another record with the same fields
                    return (record_name, x) if record_name is not None else x
            raise ValueError(f"union value {v!r} has no member set")

        return union


def json_value_converter(node: Any, root: Any = None, _refs: tuple[str, ...] = ()) -> Converter:
    """Spark value -> JSON value: binary back to base64, JSON-text columns parsed back."""
    root = node if root is None else root
    kind, node, refs = json_node(node, root, _refs)
    if kind == "struct":
        convs = [(name, json_value_converter(sub, root, refs)) for name, sub in node["properties"].items()]

        def obj(v: dict) -> dict:
            # absent (null) properties are left out: JSON Schema's "not required" is "may be missing"
            return {n: (c(v[n]) if c is not None else v[n]) for n, c in convs if v.get(n) is not None}

        return obj
    if kind == "map":
        value_conv = json_value_converter(node["additionalProperties"], root, refs)
        return (
            None if value_conv is None else (lambda v: {k: None if x is None else value_conv(x) for k, x in v.items()})
        )
    if kind == "array":
        items = node.get("items")
        conv = json_value_converter(items, root, refs) if isinstance(items, dict) else _from_text
        return None if conv is None else (lambda v: [None if x is None else conv(x) for x in v])
    if kind == "string" and node.get("format") not in ("date-time", "date") and node.get("contentEncoding") == "base64":
        return lambda v: base64.b64encode(v).decode("ascii")
    if kind in ("string", "enum", "integer", "number", "boolean", "null"):
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
