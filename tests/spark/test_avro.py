"""from_registry / to_registry on Avro, both engines, against a real registry and a real local Spark session."""

from __future__ import annotations

import datetime as dt
import decimal
import json
import uuid

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer as CkAvroDeserializer
from confluent_kafka.schema_registry.avro import AvroSerializer as CkAvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from pyspark.sql import Row
from pyspark.sql import functions as F

from serdes import AvroSerializer, RegistryClient, Schema, SchemaReference, wire
from serdes.spark import from_registry, to_registry
from tests.support.schemas import AVRO_PRIMITIVE_FIELDS

UTC = dt.UTC

POINT = {"type": "record", "name": "Point", "fields": [{"name": "x", "type": "int"}]}
CIRCLE = {"type": "record", "name": "Circle", "fields": [{"name": "r", "type": "double"}]}

# One field per Avro -> Spark mapping rule.
ALL = {
    "type": "record",
    "name": "All",
    "namespace": "sk.test",
    "fields": [
        *AVRO_PRIMITIVE_FIELDS,
        {"name": "opt", "type": ["null", "string"]},
        {"name": "il", "type": ["int", "long"]},
        {"name": "fd", "type": ["float", "double"]},
        {"name": "u", "type": ["null", "string", "long", POINT]},
        {"name": "shape", "type": ["sk.test.Point", CIRCLE]},
        {"name": "color", "type": {"type": "enum", "name": "Color", "symbols": ["RED", "GREEN"]}},
        {"name": "nums", "type": {"type": "array", "items": "int"}},
        {"name": "points", "type": {"type": "array", "items": "Point"}},
        {"name": "attrs", "type": {"type": "map", "values": ["null", "long"]}},
        {"name": "fx", "type": {"type": "fixed", "name": "Four", "size": 4}},
        {"name": "dec", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}},
        {
            "name": "fdec",
            "type": {"type": "fixed", "name": "Dec8", "size": 8, "logicalType": "decimal", "precision": 12, "scale": 3},
        },
        {"name": "day", "type": {"type": "int", "logicalType": "date"}},
        {"name": "ts_ms", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "ts_us", "type": {"type": "long", "logicalType": "timestamp-micros"}},
        {"name": "lts_ms", "type": {"type": "long", "logicalType": "local-timestamp-millis"}},
        {"name": "lts_us", "type": {"type": "long", "logicalType": "local-timestamp-micros"}},
        {"name": "id", "type": {"type": "string", "logicalType": "uuid"}},
        {"name": "t_ms", "type": {"type": "int", "logicalType": "time-millis"}},
        {"name": "t_us", "type": {"type": "long", "logicalType": "time-micros"}},
    ],
}

UID = uuid.UUID("12345678-1234-5678-1234-567812345678")
T0 = dt.datetime(2024, 5, 6, 7, 8, 9, 123000, tzinfo=UTC)
T1 = dt.datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=UTC)


def all_record(k: int) -> dict:
    return {
        "b": k % 2 == 0,
        "i": -k,
        "l": 2**40 + k,
        "f": 1.5,
        "d": k / 4,
        "s": f"s{k}",
        "by": bytes([k, 0, 255]),
        "opt": None if k % 2 else f"o{k}",
        "il": 7 + k,
        "fd": 2.5,
        "u": [None, "text", 2**35, {"x": 3}][k % 4],
        "shape": {"x": 9} if k % 2 == 0 else ("sk.test.Circle", {"r": 1.25}),
        "color": ["RED", "GREEN"][k % 2],
        "nums": list(range(k % 3)),
        "points": [{"x": k}, {"x": k + 1}],
        "attrs": {"a": k, "n": None},
        "fx": b"\x01\x02\x03" + bytes([k]),
        "dec": decimal.Decimal("-12.34"),
        "fdec": decimal.Decimal("123456789.012"),
        "day": dt.date(2024, 2, 29),
        "ts_ms": T0,
        "ts_us": T1,
        "lts_ms": T0.replace(tzinfo=None),
        "lts_us": T1.replace(tzinfo=None),
        "id": UID,
        "t_ms": dt.time(1, 2, 3, 4000),
        "t_us": dt.time(1, 2, 3, 4567),
    }


def expected_row(k: int) -> dict:
    """What Spark gives back for all_record(k) (session time zone and TZ are UTC): the fields whose value changes."""
    u = [
        None,
        Row(member0="text", member1=None, member2=None),
        Row(member0=None, member1=2**35, member2=None),
        Row(member0=None, member1=None, member2=Row(x=3)),
    ][k % 4]
    shape = Row(member0=Row(x=9), member1=None) if k % 2 == 0 else Row(member0=None, member1=Row(r=1.25))
    return all_record(k) | {
        "by": bytearray([k, 0, 255]),
        "u": u,
        "shape": shape,
        "points": [Row(x=k), Row(x=k + 1)],
        "fx": bytearray(b"\x01\x02\x03" + bytes([k])),
        "ts_ms": T0.replace(tzinfo=None),
        "ts_us": T1.replace(tzinfo=None),
        "id": str(UID),
        "t_ms": 3723004,
        "t_us": 3723004567,
    }


def frames_df(spark, frames: list[bytes | None]):
    return spark.createDataFrame([(i, f) for i, f in enumerate(frames)], "n int, value binary").coalesce(1)


def decoded(df, col) -> list:
    return [r.o for r in df.select("n", col.alias("o")).orderBy("n").collect()]


def as_dict(row: Row | None) -> dict | None:
    return None if row is None else row.asDict()


def test_every_avro_rule_decodes_identically_on_both_engines(spark, client, registry_url, subject) -> None:
    ser = AvroSerializer(client, ALL, subject=subject)
    frames = [ser(all_record(k)) for k in range(4)]
    df = frames_df(spark, frames)
    by_engine = {
        e: decoded(df, from_registry("value", registry_url, subject=subject, engine=e)) for e in ("python", "jvm")
    }
    assert [as_dict(r) for r in by_engine["python"]] == [expected_row(k) for k in range(4)]
    assert by_engine["jvm"] == by_engine["python"]


def test_round_trip_through_to_registry_is_byte_identical(spark, client, registry_url, subject, engine) -> None:
    ser = AvroSerializer(client, ALL, subject=subject)
    frames = [ser(all_record(k)) for k in range(4)] + [None]
    df = frames_df(spark, frames)
    back = (
        df.select("n", from_registry("value", registry_url, subject=subject, engine=engine).alias("o"))
        .select("n", to_registry("o", registry_url, subject=subject).alias("v"))
        .orderBy("n")
        .collect()
    )
    assert [r.v for r in back] == frames


def test_three_schema_versions_in_one_column(spark, client, registry_url, subject, engine) -> None:
    v1 = {
        "type": "record",
        "name": "Order",
        "fields": [{"name": "id", "type": "long"}, {"name": "note", "type": "string"}],
    }
    v2 = {**v1, "fields": [*v1["fields"], {"name": "amount", "type": "double", "default": 0.0}]}
    v3 = {
        **v2,
        "fields": [f for f in v2["fields"] if f["name"] != "note"]
        + [{"name": "tags", "type": {"type": "array", "items": "string"}, "default": ["none"]}],
    }
    f1 = AvroSerializer(client, v1, subject=subject)({"id": 1, "note": "first"})
    f2 = AvroSerializer(client, v2, subject=subject)({"id": 2, "note": "second", "amount": 2.5})
    f3 = AvroSerializer(client, v3, subject=subject)({"id": 3, "amount": 3.5, "tags": ["x", "y"]})
    ids = {wire.read_schema_id(f) for f in (f1, f2, f3)}
    assert len(ids) == 3
    df = frames_df(spark, [f1, f2, f3])
    latest = decoded(df, from_registry("value", registry_url, subject=subject, engine=engine))
    assert [as_dict(r) for r in latest] == [
        {"id": 1, "amount": 0.0, "tags": ["none"]},
        {"id": 2, "amount": 2.5, "tags": ["none"]},
        {"id": 3, "amount": 3.5, "tags": ["x", "y"]},
    ]
    # pinning version 2 as reader: v3's dropped "note" comes back as v2's... it has no default, so v3 rows fail
    pinned = decoded(
        df, from_registry("value", registry_url, subject=subject, version=2, engine=engine, error_column=True)
    )
    assert [as_dict(r.value) if r.value else None for r in pinned[:2]] == [
        {"id": 1, "note": "first", "amount": 0.0},
        {"id": 2, "note": "second", "amount": 2.5},
    ]
    assert pinned[2].value is None and "note" in pinned[2].error


def corrupt_frames(client, subject: str) -> tuple[list, int]:
    schema = {
        "type": "record",
        "name": "Small",
        "fields": [{"name": "a", "type": "int"}, {"name": "s", "type": "string"}],
    }
    ser = AvroSerializer(client, schema, subject=subject)
    good = ser({"a": 1, "s": "hello"})
    sid = wire.read_schema_id(good)
    frames = [
        good,
        None,
        b"\x07" + good[1:],  # bad magic byte
        b"\x00\x00",  # shorter than the header
        wire.prefix(987654) + good[5:],  # unknown schema id
        good[:-2],  # truncated body
        good + b"\x00\x01",  # trailing bytes
    ]
    return frames, sid


def test_permissive_gives_null_and_the_reason(spark, client, registry_url, subject, engine) -> None:
    frames, sid = corrupt_frames(client, subject)
    df = frames_df(spark, frames)
    plain = decoded(df, from_registry("value", registry_url, subject=subject, engine=engine))
    assert [as_dict(r) for r in plain] == [{"a": 1, "s": "hello"}, None, None, None, None, None, None]
    with_errors = decoded(df, from_registry("value", registry_url, subject=subject, engine=engine, error_column=True))
    assert as_dict(with_errors[0].value) == {"a": 1, "s": "hello"} and with_errors[0].error is None
    assert with_errors[1] is None  # null in, null out
    errors = [r.error for r in with_errors[2:]]
    assert all(r.value is None for r in with_errors[2:])
    assert "unknown magic byte 0x07" in errors[0]
    assert "too short for the 5-byte schema-registry frame header" in errors[1]
    assert "schema id 987654 is not known to the registry" in errors[2]
    assert f"writer schema {sid}" in errors[3]
    assert f"2 unread bytes after the Avro record: the payload does not match writer schema {sid}" in errors[4]


@pytest.mark.parametrize("bad", [2, 4, 5, 6])
def test_failfast_raises_with_schema_id_and_reason(spark, client, registry_url, subject, engine, bad) -> None:
    frames, sid = corrupt_frames(client, subject)
    df = frames_df(spark, [frames[0], frames[bad]])
    col = from_registry("value", registry_url, subject=subject, engine=engine, mode="FAILFAST")
    with pytest.raises(Exception) as info:
        df.select(col.alias("o")).collect()
    text = str(info.value)
    assert "from_registry (FAILFAST): cannot decode" in text
    want = {
        2: ("no schema id", "unknown magic byte 0x07"),
        4: ("schema id 987654", "not known to the registry"),
        5: (f"schema id {sid}", f"writer schema {sid}"),
        6: (f"schema id {sid}", "2 unread bytes"),
    }[bad]
    assert want[0] in text and want[1] in text


def test_failfast_passes_good_rows_and_nulls(spark, client, registry_url, subject, engine) -> None:
    frames, _ = corrupt_frames(client, subject)
    df = frames_df(spark, frames[:2])
    got = decoded(df, from_registry("value", registry_url, subject=subject, engine=engine, mode="FAILFAST"))
    assert [as_dict(r) for r in got] == [{"a": 1, "s": "hello"}, None]


def test_all_null_column(spark, client, registry_url, subject, engine) -> None:
    corrupt_frames(client, subject)  # registers the subject
    df = spark.createDataFrame([(i, None) for i in range(3)], "n int, value binary")
    got = decoded(df, from_registry("value", registry_url, subject=subject, engine=engine, error_column=True))
    assert got == [None, None, None]


def test_confluent_kafka_frames_decode(spark, registry_url, engine) -> None:
    topic = f"ck-{uuid.uuid4().hex[:10]}"
    ck = SchemaRegistryClient({"url": registry_url})
    schema = {
        "type": "record",
        "name": "Pay",
        "fields": [
            {"name": "id", "type": "string"},
            {"name": "cents", "type": "long"},
            {"name": "when", "type": {"type": "long", "logicalType": "timestamp-millis"}},
            {"name": "memo", "type": ["null", "string"], "default": None},
        ],
    }
    ser = CkAvroSerializer(ck, json.dumps(schema), conf={"subject.name.strategy.type": "TOPIC"})
    ctx = SerializationContext(topic, MessageField.VALUE)
    frames = [ser({"id": f"p{k}", "cents": 100 * k, "when": T0, "memo": None if k else "first"}, ctx) for k in range(3)]
    df = frames_df(spark, frames)
    got = decoded(df, from_registry("value", registry_url, subject=f"{topic}-value", engine=engine))
    assert [as_dict(r) for r in got] == [
        {"id": f"p{k}", "cents": 100 * k, "when": T0.replace(tzinfo=None), "memo": None if k else "first"}
        for k in range(3)
    ]


def test_to_registry_auto_register_is_read_by_confluent_kafka(spark, client, registry_url, subject) -> None:
    schema = {
        "type": "record",
        "name": "Out",
        "fields": [
            {"name": "name", "type": "string"},
            {"name": "n", "type": "int"},
            {"name": "tags", "type": {"type": "map", "values": "string"}},
            {"name": "pick", "type": ["null", "string", "long"], "default": None},
        ],
    }
    df = spark.createDataFrame([("a", 1), ("b", 2), (None, 3)], "name string, n int")
    structs = df.select(
        F.when(
            F.col("name").isNotNull(),
            F.struct(
                "name",
                "n",
                F.create_map(F.lit("k"), F.col("name")).alias("tags"),
                F.struct(F.col("name").alias("member0"), F.lit(None).cast("long").alias("member1")).alias("pick"),
            ),
        ).alias("o")
    )
    with pytest.raises(Exception, match=r"40401|not found"):
        to_registry("o", registry_url, subject=subject, schema=schema)  # not registered and no auto_register
    out = structs.select(
        to_registry("o", registry_url, subject=subject, schema=schema, auto_register=True).alias("v")
    ).collect()
    sid = client.lookup(subject, Schema(json.dumps(schema))).schema_id
    ck = SchemaRegistryClient({"url": registry_url})
    de = CkAvroDeserializer(ck)
    values = [r.v for r in out]
    assert values[2] is None
    assert all(wire.read_schema_id(v) == sid for v in values[:2])
    assert [de(bytes(v), None) for v in values[:2]] == [
        {"name": "a", "n": 1, "tags": {"k": "a"}, "pick": "a"},
        {"name": "b", "n": 2, "tags": {"k": "b"}, "pick": "b"},
    ]


def test_reader_schema_pins_a_projection(spark, client, registry_url, subject, engine) -> None:
    ser = AvroSerializer(client, ALL, subject=subject)
    df = frames_df(spark, [ser(all_record(1))])
    reader = {
        "type": "record",
        "name": "All",
        "namespace": "sk.test",
        "fields": [{"name": "s", "type": "string"}, {"name": "missing", "type": "int", "default": 42}],
    }
    got = decoded(df, from_registry("value", registry_url, reader_schema=reader, engine=engine))
    assert [as_dict(r) for r in got] == [{"s": "s1", "missing": 42}]


def test_usable_in_where_and_field_selection(spark, client, registry_url, subject, engine) -> None:
    ser = AvroSerializer(client, ALL, subject=subject)
    df = frames_df(spark, [ser(all_record(k)) for k in range(4)])
    orders = df.select(from_registry("value", registry_url, subject=subject, engine=engine).alias("o"))
    got = orders.where("o.b").select("o.s", "o.points.x").orderBy("s").collect()
    assert [tuple(r) for r in got] == [("s0", [0, 1]), ("s2", [2, 3])]


def test_schema_references(spark, client, registry_url, subject, engine) -> None:
    address = {
        "type": "record",
        "name": "Address",
        "namespace": "sk.ref",
        "fields": [{"name": "city", "type": "string"}, {"name": "zip", "type": ["null", "int"]}],
    }
    ref_subject = f"{subject}-address"
    version = client.register_full(ref_subject, Schema(json.dumps(address))).version
    main = {
        "type": "record",
        "name": "Customer",
        "namespace": "sk.ref",
        "fields": [
            {"name": "name", "type": "string"},
            {"name": "home", "type": "sk.ref.Address"},
            {"name": "others", "type": {"type": "array", "items": "sk.ref.Address"}},
        ],
    }
    schema = Schema(json.dumps(main), "AVRO", (SchemaReference("sk.ref.Address", ref_subject, version),))
    ser = AvroSerializer(client, schema, subject=subject)
    frame = ser({"name": "ann", "home": {"city": "Oslo", "zip": 150}, "others": [{"city": "Rome", "zip": None}]})
    got = decoded(frames_df(spark, [frame]), from_registry("value", registry_url, subject=subject, engine=engine))
    assert [r.asDict(recursive=True) for r in got] == [
        {"name": "ann", "home": {"city": "Oslo", "zip": 150}, "others": [{"city": "Rome", "zip": None}]}
    ]


def test_unreachable_registry_fails_the_query_even_when_permissive(spark, start_registry, engine) -> None:
    registry = start_registry()
    ser = AvroSerializer(RegistryClient(registry.url), ALL, subject="gone-value")
    df = frames_df(spark, [ser(all_record(0))])
    col = from_registry("value", registry.url, subject="gone-value", engine=engine)  # reader fetched now
    registry.stop()
    with pytest.raises(Exception) as info:
        df.select(col.alias("o")).collect()
    text = str(info.value)
    assert "from_registry: cannot fetch writer schema 1" in text and registry.url in text
