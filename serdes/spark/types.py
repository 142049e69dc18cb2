"""One type mapping from registry schemas (Avro, JSON Schema, Protobuf) to Spark SQL types.

Both decode engines use it: the Python engine builds Arrow arrays of exactly this type, and the JVM engine is
handed this type (as JSON) and fills it from Avro's generic records by the same rules (see
``java/schemakit/spark/AvroRowConverter.java``).

Avro follows spark-avro's ``SchemaConverters`` so that switching to Spark's own ``from_avro`` gives the same
schema: records -> structs; ``["null", T]`` -> nullable T; ``[int, long]`` -> long, ``[float, double]`` -> double;
any other union -> ``struct<member0, member1, ...>`` (non-null branches in order, at most one set); enums ->
string; fixed/bytes -> binary; maps -> ``map<string, T>``; decimal -> decimal(p, s); date -> date;
timestamp-millis/micros -> timestamp; local-timestamp-millis/micros -> timestamp_ntz; uuid -> string;
time-millis -> int and time-micros -> bigint (Arrow's time64 is not accepted by Spark). One known difference
between the engines: fastavro returns a union's value without its branch, so the Python engine infers the
member from the value; for a union holding both int and long (or float and double) next to other branches, a
long that fits in 32 bits lands in the int member there, while the JVM engine knows the branch it read.

Protobuf follows spark-protobuf where it is unambiguous: message -> struct; repeated -> array; map fields ->
map; enums -> string (the value's name); ``google.protobuf.Timestamp`` -> timestamp; (s)int32/sfixed32 -> int;
(s)int64/sfixed64 -> bigint; uint32/fixed32 -> bigint and uint64/fixed64 -> decimal(20, 0) (no overflow);
bytes -> binary. Every field is nullable: a field with presence (message, ``optional``, oneof member) that is not
set reads as null; a proto3 scalar without presence reads as its default (0, "", false), as protobuf defines it.

JSON Schema: object with ``properties`` -> struct (declared order); object with only ``additionalProperties`` ->
``map<string, T>``; array -> array of ``items``; integer -> bigint; number -> double; boolean -> boolean;
string -> string, or date (``format: date``), timestamp (``format: date-time``), binary
(``contentEncoding: base64``); ``enum``/``const`` of strings -> string; ``["null", T]`` / ``oneOf``/``anyOf``
with null -> nullable T; ``[integer, number]`` -> double; local ``$ref`` and ``allOf`` (objects) are resolved;
anything else (``{}``, true, mixed unions, objects with neither properties nor a value schema) -> string holding
the value as JSON text. Every field is nullable (JSON documents can omit any non-required property).
"""

from __future__ import annotations

import functools
from typing import Any

from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    NullType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
)

__all__ = [
    "TIMESTAMP",
    "AvroNames",
    "SchemaMappingError",
    "avro_decimal_type",
    "avro_to_spark",
    "avro_union_branches",
    "is_map_field",
    "json_is_null",
    "json_node",
    "json_pointer",
    "json_schema_to_spark",
    "protobuf_to_spark",
    "result_type",
]


class SchemaMappingError(ValueError):
    """A registry schema has a construct with no Spark type (recursive types, unknown names, ...)."""


# -- Avro -----------------------------------------------------------------------------------------------------

_AVRO_PRIMITIVES: dict[str, DataType] = {
    "null": NullType(),
    "boolean": BooleanType(),
    "int": IntegerType(),
    "long": LongType(),
    "float": FloatType(),
    "double": DoubleType(),
    "bytes": BinaryType(),
    "string": StringType(),
}
_AVRO_LOGICAL: dict[tuple[str, str | None], DataType] = {
    ("int", "date"): DateType(),
    ("int", "time-millis"): IntegerType(),
    ("long", "time-micros"): LongType(),
    ("long", "timestamp-millis"): TimestampType(),
    ("long", "timestamp-micros"): TimestampType(),
    ("long", "local-timestamp-millis"): TimestampNTZType(),
    ("long", "local-timestamp-micros"): TimestampNTZType(),
    ("string", "uuid"): StringType(),
}


def _fullname(name: str, namespace: str | None) -> str:
    return name if "." in name or not namespace else f"{namespace}.{name}"


class AvroNames:
    """Named Avro types seen so far (from references and earlier in the schema), by full name."""

    def __init__(self) -> None:
        self.types: dict[str, dict[str, Any]] = {}

    def define(self, schema: dict[str, Any], namespace: str | None) -> str:
        full = _fullname(schema["name"], schema.get("namespace", namespace))
        self.types[full] = schema
        return full

    def lookup(self, name: str, namespace: str | None) -> tuple[dict[str, Any], str]:
        for candidate in (_fullname(name, namespace), name):
            if candidate in self.types:
                return self.types[candidate], candidate
        raise SchemaMappingError(f"Avro schema refers to unknown named type {name!r}")


def avro_decimal_type(schema: dict[str, Any]) -> DataType | None:
    """decimal(p, s) for a decimal logical type Spark can hold, else None (then it stays binary)."""
    precision = schema.get("precision")
    scale = schema.get("scale", 0)
    if isinstance(precision, int) and 0 < precision <= 38 and isinstance(scale, int) and 0 <= scale <= precision:
        return DecimalType(precision, scale)
    return None


def avro_to_spark(
    schema: Any, names: AvroNames | None = None, namespace: str | None = None, _stack: tuple[str, ...] = ()
) -> tuple[DataType, bool]:
    """(Spark type, nullable) for an Avro schema given as parsed JSON (str / dict / list)."""
    names = names if names is not None else AvroNames()
    if isinstance(schema, str):
        if schema in _AVRO_PRIMITIVES:
            return _AVRO_PRIMITIVES[schema], schema == "null"
        named, full = names.lookup(schema, namespace)
        if full in _stack:
            raise SchemaMappingError(f"recursive Avro type {full!r} has no Spark equivalent")
        return _avro_named(named, names, full.rpartition(".")[0] or None, (*_stack, full))
    if isinstance(schema, list):
        return _avro_union(schema, names, namespace, _stack)
    if not isinstance(schema, dict) or "type" not in schema:
        raise SchemaMappingError(f"not an Avro schema: {schema!r}")
    kind = schema["type"]
    if isinstance(kind, (dict, list)):
        return avro_to_spark(kind, names, namespace, _stack)
    if kind in ("record", "error", "enum", "fixed"):
        full = names.define(schema, namespace)
        return _avro_named(schema, names, full.rpartition(".")[0] or None, (*_stack, full))
    if kind == "array":
        items, items_null = avro_to_spark(schema["items"], names, namespace, _stack)
        return ArrayType(items, items_null), False
    if kind == "map":
        values, values_null = avro_to_spark(schema["values"], names, namespace, _stack)
        return MapType(StringType(), values, values_null), False
    logical = schema.get("logicalType")
    if logical == "decimal" and kind == "bytes":
        return avro_decimal_type(schema) or BinaryType(), False
    if (kind, logical) in _AVRO_LOGICAL:
        return _AVRO_LOGICAL[(kind, logical)], False
    return avro_to_spark(kind, names, namespace, _stack)


def _avro_named(
    schema: dict[str, Any], names: AvroNames, namespace: str | None, stack: tuple[str, ...]
) -> tuple[DataType, bool]:
    kind = schema["type"]
    if kind in ("record", "error"):
        fields = []
        for f in schema.get("fields", []):
            dtype, nullable = avro_to_spark(f["type"], names, namespace, stack)
            fields.append(StructField(f["name"], dtype, nullable))
        return StructType(fields), False
    if kind == "enum":
        return StringType(), False
    # fixed
    if schema.get("logicalType") == "decimal":
        return avro_decimal_type(schema) or BinaryType(), False
    return BinaryType(), False


def avro_union_branches(schema: list[Any]) -> list[Any]:
    return [s for s in schema if s != "null" and not (isinstance(s, dict) and s.get("type") == "null")]


def _avro_union(
    schema: list[Any], names: AvroNames, namespace: str | None, stack: tuple[str, ...]
) -> tuple[DataType, bool]:
    branches = avro_union_branches(schema)
    has_null = len(branches) < len(schema)
    mapped = [avro_to_spark(b, names, namespace, stack)[0] for b in branches]
    if not mapped:
        return NullType(), True
    if len(mapped) == 1:
        return mapped[0], has_null
    kinds = {type(t) for t in mapped}
    if len(mapped) == 2 and kinds == {IntegerType, LongType}:
        return LongType(), has_null
    if len(mapped) == 2 and kinds == {FloatType, DoubleType}:
        return DoubleType(), has_null
    return StructType([StructField(f"member{i}", t, True) for i, t in enumerate(mapped)]), has_null


# -- JSON Schema ---------------------------------------------------------------------------------------------


def json_pointer(root: Any, ref: str) -> Any:
    """The node a local ``$ref`` (``#/definitions/X``) points to in ``root``."""
    if not ref.startswith("#"):
        raise SchemaMappingError(f"JSON Schema $ref {ref!r} is not local to the schema (only '#/...' is mapped)")
    node = root
    for part in [p for p in ref[1:].split("/") if p]:
        part = part.replace("~1", "/").replace("~0", "~")
        try:
            node = node[int(part)] if isinstance(node, list) else node[part]
        except (KeyError, IndexError, ValueError, TypeError):
            raise SchemaMappingError(f"JSON Schema $ref {ref!r} points to nothing") from None
    return node


def json_is_null(node: Any) -> bool:
    """Whether a union member (``anyOf``/``oneOf`` entry) only admits null."""
    return isinstance(node, dict) and (node.get("type") == "null" or node.get("const", 0) is None)


_JSON_TYPES = ("struct", "map", "json", "array", "string", "integer", "number", "boolean", "null")


def json_node(node: Any, root: Any, refs: tuple[str, ...] = ()) -> tuple[str, Any, tuple[str, ...]]:
    """How the mapping reads a JSON Schema node, for the types as for the values both ways: ``(kind, node, refs)``
    once local ``$ref`` s (``refs``: those followed; a recursive one is refused), a ``oneOf``/``anyOf`` with one
    non-null member and an ``allOf`` of objects are resolved. ``kind``:

    - ``"struct"`` (an object with ``properties``), ``"map"`` (an object with only an ``additionalProperties``
      schema), ``"array"``, ``"string"``, ``"integer"``, ``"number"`` (also ``[integer, number]``), ``"boolean"``,
      ``"null"``; ``"enum"`` for an ``enum``/``const`` of strings;
    - ``"json"``, held as JSON text: a ``oneOf``/``anyOf`` of several, an ``allOf`` of more than objects, an object
      with neither;
    - ``"any"``, held as JSON text but strings as they are: ``{}``, true, other enums, a mixed type list, no type.
    """
    while True:
        if node is True or node == {} or not isinstance(node, dict):
            return "any", node, refs
        if "$ref" in node:
            ref = node["$ref"]
            if ref in refs:
                raise SchemaMappingError(f"recursive JSON Schema $ref {ref!r} has no Spark equivalent")
            node, refs = json_pointer(root, ref), (*refs, ref)
            continue
        key = "oneOf" if "oneOf" in node else "anyOf" if "anyOf" in node else None
        if key is not None:
            members = [m for m in node[key] if not json_is_null(m)]
            if len(members) != 1:
                return "json", node, refs
            node = members[0]
            continue
        if "allOf" in node:
            props = _json_all_of(node, root)
            if props is None:
                return "json", node, refs
            node = {"type": "object", "properties": props}
            continue
        if "enum" in node or "const" in node:
            values = node.get("enum", [node.get("const")])
            return ("enum" if all(isinstance(v, str) or v is None for v in values) else "any"), node, refs
        kind = node.get("type")
        if isinstance(kind, list):
            kinds = [k for k in kind if k != "null"]
            kind = kinds[0] if len(kinds) == 1 else "number" if set(kinds) == {"integer", "number"} else "any"
        if kind is None and "properties" in node:
            kind = "object"
        if kind == "object":
            extra = node.get("additionalProperties")
            kind = "struct" if node.get("properties") else "map" if isinstance(extra, dict) and extra else "json"
        return (kind if kind in _JSON_TYPES else "any"), node, refs


def _json_all_of(node: dict[str, Any], root: Any) -> dict[str, Any] | None:
    """The properties of an ``allOf`` of objects, the node's own first; None when a member is not an object."""
    props: dict[str, Any] = dict(node.get("properties", {}))
    for member in node["allOf"]:
        while isinstance(member, dict) and "$ref" in member:
            member = json_pointer(root, member["$ref"])
        if not isinstance(member, dict) or not (member.get("type") == "object" or "properties" in member):
            return None
        props.update(member.get("properties", {}))
    return props


_JSON_SCALARS: dict[str, DataType] = {
    "integer": LongType(),
    "number": DoubleType(),
    "boolean": BooleanType(),
    "null": NullType(),
}


def json_schema_to_spark(node: Any, root: Any = None, _refs: tuple[str, ...] = ()) -> DataType:
    """Spark type for a JSON Schema (parsed JSON); every struct field is nullable."""
    root = node if root is None else root
    kind, node, refs = json_node(node, root, _refs)
    if kind == "struct":
        props = node["properties"]
        return StructType(
            [StructField(name, json_schema_to_spark(sub, root, refs), True) for name, sub in props.items()]
        )
    if kind == "map":
        return MapType(StringType(), json_schema_to_spark(node["additionalProperties"], root, refs), True)
    if kind == "array":
        items = node.get("items")
        return ArrayType(json_schema_to_spark(items, root, refs) if isinstance(items, dict) else StringType(), True)
    if kind == "string":
        fmt = node.get("format")
        if fmt == "date-time":
            return TimestampType()
        if fmt == "date":
            return DateType()
        if node.get("contentEncoding") == "base64":
            return BinaryType()
    # strings, enums of strings as they are; anything else as JSON text
    return _JSON_SCALARS.get(kind, StringType())


# -- Protobuf ------------------------------------------------------------------------------------------------

TIMESTAMP = "google.protobuf.Timestamp"


@functools.cache
def _proto_scalar_types() -> dict[int, DataType]:
    """The Spark type of each Protobuf scalar field type (an enum reads as its value's name)."""
    from google.protobuf.descriptor import FieldDescriptor as F

    return {
        **dict.fromkeys((F.TYPE_INT32, F.TYPE_SINT32, F.TYPE_SFIXED32), IntegerType()),
        **dict.fromkeys((F.TYPE_INT64, F.TYPE_SINT64, F.TYPE_SFIXED64, F.TYPE_UINT32, F.TYPE_FIXED32), LongType()),
        **dict.fromkeys((F.TYPE_UINT64, F.TYPE_FIXED64), DecimalType(20, 0)),
        F.TYPE_DOUBLE: DoubleType(),
        F.TYPE_FLOAT: FloatType(),
        F.TYPE_BOOL: BooleanType(),
        F.TYPE_STRING: StringType(),
        F.TYPE_BYTES: BinaryType(),
        F.TYPE_ENUM: StringType(),
    }


def _proto_scalar(field: Any) -> DataType:
    spark_type = _proto_scalar_types().get(field.type)
    if spark_type is None:
        raise SchemaMappingError(f"Protobuf field {field.full_name} has unsupported type {field.type}")
    return spark_type


def is_map_field(field: Any) -> bool:
    return field.message_type is not None and field.is_repeated and field.message_type.GetOptions().map_entry


def _proto_field(field: Any, stack: tuple[str, ...]) -> DataType:
    if is_map_field(field):
        entry = field.message_type
        key = _proto_value(entry.fields_by_name["key"], stack)
        value = _proto_value(entry.fields_by_name["value"], stack)
        return MapType(key, value, True)
    single = _proto_value(field, stack)
    return ArrayType(single, False) if field.is_repeated else single


def _proto_value(field: Any, stack: tuple[str, ...]) -> DataType:
    if field.message_type is None:
        return _proto_scalar(field)
    return protobuf_to_spark(field.message_type, stack)


def protobuf_to_spark(desc: Any, _stack: tuple[str, ...] = ()) -> DataType:
    """Spark type for a Protobuf message ``Descriptor``."""
    if desc.full_name == TIMESTAMP:
        return TimestampType()
    if desc.full_name in _stack:
        raise SchemaMappingError(f"recursive Protobuf message {desc.full_name!r} has no Spark equivalent")
    stack = (*_stack, desc.full_name)
    return StructType([StructField(f.name, _proto_field(f, stack), True) for f in desc.fields])


def result_type(value_type: DataType, error_column: bool, writer_id_column: bool = False) -> DataType:
    """The column's type: the decoded value's, or the struct holding it and the optional columns."""
    if not error_column and not writer_id_column:
        return value_type
    fields = [StructField("value", value_type, True)]
    if error_column:
        fields.append(StructField("error", StringType(), True))
    if writer_id_column:
        fields += [StructField("writer_id", IntegerType(), True), StructField("writer_version", IntegerType(), True)]
    return StructType(fields)
