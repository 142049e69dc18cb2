"""The schema -> Spark type mapping, rule by rule (no Spark session needed: pure functions over pyspark types).

The end-to-end tests in test_avro/test_protobuf/test_json decode real payloads into these types on both engines.
"""

from __future__ import annotations

import pytest
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
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

from serdes.spark import SchemaMappingError, avro_to_spark, json_schema_to_spark

POINT = {"type": "record", "name": "Point", "fields": [{"name": "x", "type": "int"}]}


@pytest.mark.parametrize(
    ("avro", "spark", "nullable"),
    [
        ("boolean", BooleanType(), False),
        ("int", IntegerType(), False),
        ("long", LongType(), False),
        ("float", FloatType(), False),
        ("double", DoubleType(), False),
        ("string", StringType(), False),
        ("bytes", BinaryType(), False),
        ("null", NullType(), True),
        ({"type": "enum", "name": "E", "symbols": ["A", "B"]}, StringType(), False),
        ({"type": "fixed", "name": "F", "size": 3}, BinaryType(), False),
        ({"type": "array", "items": ["null", "int"]}, ArrayType(IntegerType(), True), False),
        ({"type": "array", "items": "string"}, ArrayType(StringType(), False), False),
        ({"type": "map", "values": "long"}, MapType(StringType(), LongType(), False), False),
        ({"type": "map", "values": ["null", "long"]}, MapType(StringType(), LongType(), True), False),
        (["null", "string"], StringType(), True),
        (["string", "null"], StringType(), True),
        (["int", "long"], LongType(), False),
        (["null", "float", "double"], DoubleType(), True),
        (
            ["string", "int"],
            StructType([StructField("member0", StringType()), StructField("member1", IntegerType())]),
            False,
        ),
        (
            ["null", "string", POINT],
            StructType(
                [
                    StructField("member0", StringType()),
                    StructField("member1", StructType([StructField("x", IntegerType(), False)])),
                ]
            ),
            True,
        ),
        ({"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}, DecimalType(10, 2), False),
        (
            {"type": "fixed", "name": "D", "size": 8, "logicalType": "decimal", "precision": 12, "scale": 3},
            DecimalType(12, 3),
            False,
        ),
        ({"type": "bytes", "logicalType": "decimal", "precision": 40, "scale": 2}, BinaryType(), False),
        ({"type": "int", "logicalType": "date"}, DateType(), False),
        ({"type": "long", "logicalType": "timestamp-millis"}, TimestampType(), False),
        ({"type": "long", "logicalType": "timestamp-micros"}, TimestampType(), False),
        ({"type": "long", "logicalType": "local-timestamp-millis"}, TimestampNTZType(), False),
        ({"type": "long", "logicalType": "local-timestamp-micros"}, TimestampNTZType(), False),
        ({"type": "string", "logicalType": "uuid"}, StringType(), False),
        ({"type": "int", "logicalType": "time-millis"}, IntegerType(), False),
        ({"type": "long", "logicalType": "time-micros"}, LongType(), False),
        ({"type": "long", "logicalType": "no-such-logical-type"}, LongType(), False),
    ],
)
def test_avro_rule(avro, spark, nullable) -> None:
    assert avro_to_spark(avro) == (spark, nullable)


def test_avro_record_fields_and_named_references() -> None:
    schema = {
        "type": "record",
        "name": "Outer",
        "namespace": "a.b",
        "fields": [
            {"name": "p", "type": POINT},
            {"name": "q", "type": ["null", "Point"]},  # short name, same namespace
            {"name": "r", "type": "a.b.Point"},  # full name
        ],
    }
    point = StructType([StructField("x", IntegerType(), False)])
    assert avro_to_spark(schema) == (
        StructType([StructField("p", point, False), StructField("q", point, True), StructField("r", point, False)]),
        False,
    )


def test_avro_unmappable_schemas_are_named() -> None:
    recursive = {"type": "record", "name": "Node", "fields": [{"name": "next", "type": ["null", "Node"]}]}
    with pytest.raises(SchemaMappingError, match="recursive Avro type 'Node'"):
        avro_to_spark(recursive)
    with pytest.raises(SchemaMappingError, match="unknown named type 'Nope'"):
        avro_to_spark({"type": "record", "name": "R", "fields": [{"name": "a", "type": "Nope"}]})


def field(name: str, dtype) -> StructField:
    return StructField(name, dtype, True)


@pytest.mark.parametrize(
    ("node", "spark"),
    [
        ({"type": "integer"}, LongType()),
        ({"type": "number"}, DoubleType()),
        ({"type": "boolean"}, BooleanType()),
        ({"type": "string"}, StringType()),
        ({"type": "null"}, NullType()),
        ({"type": "string", "format": "date-time"}, TimestampType()),
        ({"type": "string", "format": "date"}, DateType()),
        ({"type": "string", "contentEncoding": "base64"}, BinaryType()),
        ({"type": "string", "format": "email"}, StringType()),
        ({"enum": ["A", "B"]}, StringType()),
        ({"const": 3}, StringType()),
        ({"type": ["null", "integer"]}, LongType()),
        ({"type": ["integer", "number"]}, DoubleType()),
        ({"type": ["string", "integer"]}, StringType()),
        ({"oneOf": [{"type": "null"}, {"type": "boolean"}]}, BooleanType()),
        ({"anyOf": [{"type": "string"}, {"type": "integer"}]}, StringType()),
        ({}, StringType()),
        (True, StringType()),
        ({"type": "array", "items": {"type": "integer"}}, ArrayType(LongType(), True)),
        ({"type": "array"}, ArrayType(StringType(), True)),
        ({"type": "object", "additionalProperties": {"type": "number"}}, MapType(StringType(), DoubleType(), True)),
        ({"type": "object"}, StringType()),
        (
            {"type": "object", "properties": {"b": {"type": "string"}, "a": {"type": "integer"}}},
            StructType([field("b", StringType()), field("a", LongType())]),
        ),
        ({"properties": {"a": {"type": "boolean"}}}, StructType([field("a", BooleanType())])),
    ],
)
def test_json_schema_rule(node, spark) -> None:
    assert json_schema_to_spark(node) == spark


def test_json_schema_refs_and_all_of() -> None:
    root = {
        "type": "object",
        "$defs": {"p": {"type": "object", "properties": {"x": {"type": "integer"}}}},
        "properties": {
            "p": {"$ref": "#/$defs/p"},
            "m": {"allOf": [{"$ref": "#/$defs/p"}, {"properties": {"y": {"type": "string"}}}]},
        },
    }
    assert json_schema_to_spark(root) == StructType(
        [
            field("p", StructType([field("x", LongType())])),
            field("m", StructType([field("x", LongType()), field("y", StringType())])),
        ]
    )
    with pytest.raises(SchemaMappingError, match="recursive JSON Schema"):
        json_schema_to_spark(
            {"$defs": {"n": {"type": "object", "properties": {"next": {"$ref": "#/$defs/n"}}}}, "$ref": "#/$defs/n"}
        )
    with pytest.raises(SchemaMappingError, match="not local"):
        json_schema_to_spark({"$ref": "http://example.com/other.json"})
