"""How the Spark value converters are put together from a schema, in both directions (``to_spark_values``,
``from_spark_values``): ``Converter`` (None where a value needs no conversion, so the per-row work is only where
the mapping changes a value's shape), the converter of a record, array or map built from its children's
(``container_converter``), and the walk over an Avro schema: names resolved (``resolve_avro``), the kind and
logical type of a node (``avro_kind``), and which unions are a ``struct<memberN>`` (``union_as_struct``, as
``types.py`` maps them).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from serdes.spark.types import AvroNames, avro_union_branches

__all__ = ["NOT_A_CONTAINER", "Converter", "avro_kind", "container_converter", "resolve_avro", "union_as_struct"]

Converter = Callable[[Any], Any] | None


def resolve_avro(schema: Any, names: AvroNames, namespace: str | None) -> tuple[Any, str | None]:
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
        return resolve_avro(schema["type"], names, namespace)
    if isinstance(schema, dict) and schema.get("type") in ("record", "error", "enum", "fixed"):
        full = names.define(schema, namespace)
        return schema, full.rpartition(".")[0] or None
    return schema, namespace


def avro_kind(schema: Any) -> tuple[str, str | None]:
    """(kind, logical type) of a resolved schema node; a node whose type is a list is a union."""
    if isinstance(schema, str):
        return schema, None
    if isinstance(schema, list):
        return "union", None
    return schema["type"] if isinstance(schema["type"], str) else "union", schema.get("logicalType")


NOT_A_CONTAINER = object()


def container_converter(kind: str, schema: dict, child: Callable[[Any], Converter]) -> Any:
    """The converter of a record, array or map, built from its children's (None when no child converts);
    ``NOT_A_CONTAINER`` for other kinds. Shared by both directions, which differ only at the leaves."""
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
    return NOT_A_CONTAINER


def union_as_struct(
    schema: Any, names: AvroNames, namespace: str | None, child: Callable[..., Converter]
) -> tuple[list[tuple[Any, str | None]] | None, Converter]:
    """``(branches, None)`` when the union maps to ``struct<memberN>``, else ``(None, converter)``: a single branch
    converts as that branch, and an int/long or float/double pair is one widened Spark type (no conversion)."""
    branches = [resolve_avro(b, names, namespace) for b in avro_union_branches(schema)]
    if len(branches) <= 1:
        return None, (child(branches[0][0], names, branches[0][1]) if branches else None)
    kinds = [avro_kind(b)[0] for b, _ in branches]
    if len(branches) == 2 and set(kinds) in ({"int", "long"}, {"float", "double"}):
        return None, None
    return branches, None
