"""How the Spark value converters are put together from a schema, in both directions (``to_spark_values``,
``from_spark_values``): ``Converter`` (None where a value needs no conversion, so the per-row work is only where
the mapping changes a value's shape) and the walk over an Avro schema (``AvroWalk``): names resolved
(``resolve_avro``), the kind and logical type of a node (``avro_kind``), a record, array or map converted from its
children's converters, and the unions that are one Spark type told from those that are a ``struct<memberN>`` (as
``types.py`` maps them). The two directions differ only in the converters of the leaves and of those unions.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from serdes.spark.types import AvroNames, avro_union_branches

__all__ = ["AvroWalk", "Converter", "avro_kind", "resolve_avro"]

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


class AvroWalk:
    """One direction's converters over Avro schemas with the named types ``names``: ``converter(schema,
    namespace)``. Records, arrays and maps convert their children (None when no child converts); a union of one
    branch converts as that branch, an int/long or float/double pair is one widened Spark type (no conversion);
    the rest is the direction's: ``leaf(kind, logical type, schema)`` and ``struct_union(branches)`` for the
    unions Spark holds as ``struct<memberN>`` (each branch resolved, with its namespace)."""

    def __init__(self, names: AvroNames) -> None:
        self.names = names

    def converter(self, schema: Any, namespace: str | None = None) -> Converter:
        schema, namespace = resolve_avro(schema, self.names, namespace)
        kind, logical = avro_kind(schema)
        if kind in ("record", "error"):
            children = [(f["name"], self.converter(f["type"], namespace)) for f in schema.get("fields", [])]
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
            item = self.converter(schema["items"], namespace)
            return None if item is None else (lambda v: [None if x is None else item(x) for x in v])
        if kind == "map":
            value = self.converter(schema["values"], namespace)
            return None if value is None else (lambda v: {k: None if x is None else value(x) for k, x in v.items()})
        if kind != "union":
            return self.leaf(kind, logical, schema)
        branches = [resolve_avro(b, self.names, namespace) for b in avro_union_branches(schema)]
        if len(branches) <= 1:
            return self.converter(*branches[0]) if branches else None
        kinds = [avro_kind(b)[0] for b, _ in branches]
        if len(branches) == 2 and set(kinds) in ({"int", "long"}, {"float", "double"}):
            return None
        return self.struct_union(branches)

    def leaf(self, kind: str, logical: str | None, schema: Any) -> Converter:
        return None

    def struct_union(self, branches: list[tuple[Any, str | None]]) -> Converter:
        raise NotImplementedError
