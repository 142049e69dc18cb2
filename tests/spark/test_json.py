"""from_registry / to_registry on JSON Schema (Python engine) against a real registry and a local Spark session."""

from __future__ import annotations

import datetime as dt
import json
import uuid

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from pyspark.sql import Row

from serdes import JsonSchemaSerializer, wire
from serdes.spark import from_registry, to_registry

CK_TOPIC = {"subject.name.strategy.type": "TOPIC"}

# One property per JSON Schema -> Spark mapping rule.
ALL = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "title": "All",
    "type": "object",
    "definitions": {"point": {"type": "object", "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}}}},
    "properties": {
        "i": {"type": "integer"},
        "n": {"type": "number"},
        "b": {"type": "boolean"},
        "s": {"type": "string"},
        "at": {"type": "string", "format": "date-time"},
        "day": {"type": "string", "format": "date"},
        "blob": {"type": "string", "contentEncoding": "base64"},
        "color": {"enum": ["RED", "GREEN"]},
        "level": {"enum": [1, "two", None]},
        "maybe": {"type": ["null", "string"]},
        "num": {"type": ["integer", "number"]},
        "either": {"oneOf": [{"type": "null"}, {"type": "integer"}]},
        "mixed": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
        "point": {"$ref": "#/definitions/point"},
        "merged": {
            "allOf": [{"$ref": "#/definitions/point"}, {"type": "object", "properties": {"label": {"type": "string"}}}]
        },
        "tags": {"type": "array", "items": {"type": "string"}},
        "points": {"type": "array", "items": {"$ref": "#/definitions/point"}},
        "counts": {"type": "object", "additionalProperties": {"type": "integer"}},
        "anything": {},
        "free": {"type": "object"},
    },
    "required": ["i"],
}

DOC = {
    "i": 7,
    "n": 2.5,
    "b": True,
    "s": "str",
    "at": "2024-05-06T07:08:09.123456Z",
    "day": "2024-02-29",
    "blob": "AAH/",
    "color": "GREEN",
    "level": 1,
    "maybe": None,
    "num": 3,
    "either": 5,
    "mixed": 12,
    "point": {"x": 1, "y": 2},
    "merged": {"x": 3, "y": 4, "label": "m"},
    "tags": ["a", "b"],
    "points": [{"x": 5, "y": 6}],
    "counts": {"a": 1, "b": 2},
    "anything": {"k": [1, 2]},
    "free": {"z": None},
}

EXPECTED = {
    "i": 7,
    "n": 2.5,
    "b": True,
    "s": "str",
    "at": dt.datetime(2024, 5, 6, 7, 8, 9, 123456),
    "day": dt.date(2024, 2, 29),
    "blob": bytearray(b"\x00\x01\xff"),
    "color": "GREEN",
    "level": "1",
    "maybe": None,
    "num": 3.0,
    "either": 5,
    "mixed": "12",
    "point": Row(x=1, y=2),
    "merged": Row(x=3, y=4, label="m"),
    "tags": ["a", "b"],
    "points": [Row(x=5, y=6)],
    "counts": {"a": 1, "b": 2},
    "anything": '{"k":[1,2]}',
    "free": '{"z":null}',
}


@pytest.fixture(autouse=True)
def _needs_json(require_type) -> None:
    require_type("JSON")


def frames_df(spark, frames):
    return spark.createDataFrame([(i, f) for i, f in enumerate(frames)], "n int, value binary").coalesce(1)


def decoded(df, col) -> list:
    return [r.o for r in df.select("n", col.alias("o")).orderBy("n").collect()]


def test_every_json_rule_and_round_trip(spark, client, registry_url, subject) -> None:
    ser = JsonSchemaSerializer(client, ALL, subject=subject)
    sparse = {"i": 1}
    frames = [ser(DOC), ser(sparse), None]
    df = frames_df(spark, frames)
    col = from_registry("value", registry_url, subject=subject)
    got = decoded(df, col)
    assert got[0].asDict() == EXPECTED
    assert got[1].asDict() == {k: (1 if k == "i" else None) for k in EXPECTED}
    assert got[2] is None
    back = (
        df.select("n", col.alias("o"))
        .select("n", to_registry("o", registry_url, subject=subject).alias("v"))
        .orderBy("n")
        .collect()
    )
    assert back[2].v is None
    assert [wire.read_schema_id(r.v) for r in back[:2]] == [wire.read_schema_id(frames[0])] * 2
    # null properties are left out; timestamps come back in RFC 3339 with an explicit offset
    want = {k: v for k, v in DOC.items() if k != "maybe"} | {"at": "2024-05-06T07:08:09.123456+00:00"}
    assert json.loads(bytes(back[0].v)[5:]) == want
    assert json.loads(bytes(back[1].v)[5:]) == sparse


def test_three_versions_in_one_column(spark, client, registry_url, subject) -> None:
    client.set_compatibility("NONE", subject)
    base = {"type": "object", "properties": {"id": {"type": "integer"}}}
    v2 = {"type": "object", "properties": {"id": {"type": "integer"}, "name": {"type": "string"}}}
    v3 = {
        "type": "object",
        "properties": {
            "id": {"type": "integer"},
            "name": {"type": "string"},
            "tags": {"type": "array", "items": {"type": "string"}},
        },
    }
    frames = [
        JsonSchemaSerializer(client, s, subject=subject)(d)
        for s, d in ((base, {"id": 1}), (v2, {"id": 2, "name": "b"}), (v3, {"id": 3, "name": "c", "tags": ["t"]}))
    ]
    assert len({wire.read_schema_id(f) for f in frames}) == 3
    got = decoded(frames_df(spark, frames), from_registry("value", registry_url, subject=subject))
    assert [r.asDict() for r in got] == [
        {"id": 1, "name": None, "tags": None},
        {"id": 2, "name": "b", "tags": None},
        {"id": 3, "name": "c", "tags": ["t"]},
    ]


def test_permissive_failfast_and_validation(spark, client, registry_url, subject) -> None:
    schema = {
        "type": "object",
        "properties": {"id": {"type": "integer"}, "name": {"type": "string"}},
        "required": ["id"],
    }
    good = JsonSchemaSerializer(client, schema, subject=subject)({"id": 1, "name": "a"})
    sid = wire.read_schema_id(good)
    head = good[:5]
    frames = [
        good,
        None,
        head + b"{not json",
        head + b'{"id": "one"}',
        head + b'{"name": "no id"}',
        wire.prefix(765432) + good[5:],
    ]
    df = frames_df(spark, frames)
    got = decoded(df, from_registry("value", registry_url, subject=subject, error_column=True))
    assert got[0].value == Row(id=1, name="a") and got[1] is None
    errors = [r.error for r in got[2:]]
    assert "payload is not valid JSON" in errors[0]
    assert "does not fit the Spark type" in errors[1]
    assert errors[2] is None and got[4].value == Row(id=None, name="no id")  # not validated by default
    assert "schema id 765432 is not known to the registry" in errors[3]
    validated = decoded(df, from_registry("value", registry_url, subject=subject, error_column=True, validate=True))
    assert validated[4].value is None and "'id' is a required property" in validated[4].error
    with pytest.raises(Exception) as info:
        df.where("n = 2").select(from_registry("value", registry_url, subject=subject, mode="FAILFAST")).collect()
    assert "from_registry (FAILFAST)" in str(info.value) and f"schema id {sid}" in str(info.value)


def test_confluent_kafka_frames_both_ways(spark, registry_url) -> None:
    topic = f"ckjs-{uuid.uuid4().hex[:10]}"
    ck = SchemaRegistryClient({"url": registry_url})
    ctx = SerializationContext(topic, MessageField.VALUE)
    schema = {
        "type": "object",
        "title": "Pay",
        "properties": {
            "id": {"type": "string"},
            "cents": {"type": "integer"},
            "lines": {"type": "array", "items": {"type": "object", "properties": {"sku": {"type": "string"}}}},
        },
    }
    docs = [{"id": f"p{k}", "cents": 100 * k, "lines": [{"sku": "a"}] * k} for k in range(3)]
    frames = [JSONSerializer(json.dumps(schema), ck, conf=CK_TOPIC)(d, ctx) for d in docs]
    df = frames_df(spark, frames)
    col = from_registry("value", registry_url, subject=f"{topic}-value")
    assert [r.asDict(recursive=True) for r in decoded(df, col)] == docs
    out = (
        df.select("n", col.alias("o"))
        .select("n", to_registry("o", registry_url, subject=f"{topic}-value").alias("v"))
        .orderBy("n")
        .collect()
    )
    de = JSONDeserializer(None, schema_registry_client=ck, conf=CK_TOPIC)
    assert [de(bytes(r.v), ctx) for r in out] == docs


ORDER = {
    "type": "object",
    "title": "Order",
    "properties": {
        "id": {"type": "integer", "minimum": 1},
        "item": {"type": "string", "maxLength": 5},
        "lines": {
            "type": "array",
            "items": {"type": "object", "properties": {"qty": {"type": "integer", "minimum": 1}}},
        },
    },
    "required": ["id", "item"],
}


def test_to_registry_validates_documents_against_the_schema(spark, client, registry_url, subject) -> None:
    rows = [(0, 1, "tea", [1]), (1, 2, "teapot", [1]), (2, 3, "cup", [2, 0]), (3, None, "pen", []), (4, 5, "ink", [])]
    df = (
        spark.createDataFrame(rows, "n int, id long, item string, qty array<int>")
        .coalesce(1)
        .selectExpr(
            "n",
            "if(n = 4, null, named_struct('id', id, 'item', item, "
            "'lines', transform(qty, q -> named_struct('qty', q)))) as o",
        )
    )

    def encode(**kwargs) -> list:
        col = to_registry(
            "o", registry_url, subject=subject, schema=ORDER, schema_type="JSON", auto_register=True, **kwargs
        )
        return [r.v for r in df.select("n", col.alias("v")).orderBy("n").collect()]

    permissive = encode(mode="PERMISSIVE")
    sid = client.get_latest_version(subject).schema_id
    assert [json.loads(bytes(v)[5:]) if v else None for v in permissive] == [
        {"id": 1, "item": "tea", "lines": [{"qty": 1}]},
        None,
        None,
        None,
        None,
    ]
    assert wire.read_schema_id(bytes(permissive[0])) == sid
    for n, where in (
        (1, "at $.item: 'teapot' is too long"),
        (2, "at $.lines[1].qty: 0 is less than the minimum of 1"),
        (3, "at $: 'id' is a required property"),
    ):
        with pytest.raises(Exception) as info:
            df.where(f"n in (0, {n})").select(to_registry("o", registry_url, subject=subject)).collect()
        text = str(info.value)
        assert f"to_registry (FAILFAST): row 1 of the Arrow batch of partition 0 does not fit schema id {sid}" in text
        assert f"record does not match the JSON Schema {where}" in text
    unchecked = encode(validate=False)
    assert json.loads(bytes(unchecked[1])[5:]) == {"id": 2, "item": "teapot", "lines": [{"qty": 1}]}
