"""from_registry / to_registry on Protobuf (Python engine) against a real registry and a local Spark session."""

from __future__ import annotations

import datetime as dt
import decimal
import uuid

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer as CkProtobufDeserializer
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer as CkProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from pyspark.sql import Row
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from serdes import ProtobufSerializer, wire
from serdes.spark import from_registry, protobuf_to_spark, to_registry

CK_TOPIC = {"subject.name.strategy.type": "TOPIC", "use.deprecated.format": False}
AT = dt.datetime(2024, 3, 4, 5, 6, 7, 890123, tzinfo=dt.UTC)


@pytest.fixture(autouse=True)
def _needs_protobuf(require_type) -> None:
    require_type("PROTOBUF")


def all_types(pb, k: int):
    m = pb.all_types.AllTypes(
        i32=-k,
        s32=-2 * k,
        sf32=3,
        i64=-(2**40),
        s64=2**41,
        sf64=-5,
        u32=2**32 - 1,
        f32=7,
        u64=2**64 - 1,
        f64=2**63,
        d=0.25,
        f=1.5,
        b=True,
        s=f"s{k}",
        raw=b"\x00\xff",
        color=pb.all_types.AllTypes.BLUE,
        numbers=[1, 2, 3],
        colors=[pb.all_types.AllTypes.GREEN, pb.all_types.AllTypes.RED],
        counts={"a": 1},
        note="n" if k % 2 == 0 else None,
    )
    if k % 2 == 0:
        m.item.sku, m.item.qty = "x", 1
        m.text = "chosen"
    else:
        m.code = 42
    m.items.add(sku="i1", qty=2)
    m.by_sku["k"].sku = "v"
    m.at.FromDatetime(AT)
    if k % 2:
        m.ClearField("note")
    return m


def expected(k: int) -> dict:
    even = k % 2 == 0
    return {
        "i32": -k,
        "s32": -2 * k,
        "sf32": 3,
        "i64": -(2**40),
        "s64": 2**41,
        "sf64": -5,
        "u32": 2**32 - 1,
        "f32": 7,
        "u64": decimal.Decimal(2**64 - 1),
        "f64": decimal.Decimal(2**63),
        "d": 0.25,
        "f": 1.5,
        "b": True,
        "s": f"s{k}",
        "raw": bytearray(b"\x00\xff"),
        "color": "BLUE",
        "item": Row(sku="x", qty=1) if even else None,
        "items": [Row(sku="i1", qty=2)],
        "numbers": [1, 2, 3],
        "colors": ["GREEN", "RED"],
        "counts": {"a": 1},
        "by_sku": {"k": Row(sku="v", qty=0)},
        "at": AT.replace(tzinfo=None),
        "note": "n" if even else None,
        "text": "chosen" if even else None,
        "code": None if even else 42,
    }


def test_protobuf_type_mapping(protos) -> None:
    item = StructType([StructField("sku", StringType()), StructField("qty", IntegerType())])
    want = {
        "i32": IntegerType(),
        "s32": IntegerType(),
        "sf32": IntegerType(),
        "i64": LongType(),
        "s64": LongType(),
        "sf64": LongType(),
        "u32": LongType(),
        "f32": LongType(),
        "u64": DecimalType(20, 0),
        "f64": DecimalType(20, 0),
        "d": DoubleType(),
        "f": FloatType(),
        "b": BooleanType(),
        "s": StringType(),
        "raw": BinaryType(),
        "color": StringType(),
        "item": item,
        "items": ArrayType(item, False),
        "numbers": ArrayType(IntegerType(), False),
        "colors": ArrayType(StringType(), False),
        "counts": MapType(StringType(), LongType(), True),
        "by_sku": MapType(StringType(), item, True),
        "at": TimestampType(),
        "note": StringType(),
        "text": StringType(),
        "code": IntegerType(),
    }
    got = protobuf_to_spark(protos.all_types.AllTypes.DESCRIPTOR)
    assert {f.name: f.dataType for f in got.fields} == want
    assert all(f.nullable for f in got.fields)


def frames_df(spark, frames):
    return spark.createDataFrame([(i, f) for i, f in enumerate(frames)], "n int, value binary").coalesce(1)


def decoded(df, col) -> list:
    return [r.o for r in df.select("n", col.alias("o")).orderBy("n").collect()]


def test_every_protobuf_rule_and_round_trip(spark, client, registry_url, subject, protos) -> None:
    ser = ProtobufSerializer(client, protos.all_types.AllTypes, subject=subject)
    frames = [ser(all_types(protos, k)) for k in range(2)] + [None]
    df = frames_df(spark, frames)
    col = from_registry("value", registry_url, subject=subject, message="skspark.AllTypes")
    got = decoded(df, col)
    assert [r.asDict() for r in got[:2]] == [expected(0), expected(1)]
    assert got[2] is None
    back = (
        df.select("n", col.alias("o"))
        .select("n", to_registry("o", registry_url, subject=subject, message="skspark.AllTypes").alias("v"))
        .orderBy("n")
        .collect()
    )
    assert [r.v for r in back] == frames
    with pytest.raises(ValueError, match="the JVM engine decodes Avro only"):
        from_registry("value", registry_url, subject=subject, engine="jvm")


def test_default_message_is_the_first_in_the_file(spark, client, registry_url, subject, protos) -> None:
    ser = ProtobufSerializer(client, protos.all_types.Item, subject=subject)
    df = frames_df(spark, [ser(protos.all_types.Item(sku="q", qty=5))])
    assert decoded(df, from_registry("value", registry_url, subject=subject)) == [Row(sku="q", qty=5)]


def test_three_versions_in_one_column(spark, client, registry_url, subject, protos) -> None:
    client.set_compatibility("NONE", subject)
    f1 = ProtobufSerializer(client, protos.order_v1.Order, subject=subject)(protos.order_v1.Order(id="a", qty=1))
    f2 = ProtobufSerializer(client, protos.order_v2.Order, subject=subject)(
        protos.order_v2.Order(id="b", qty=2, customer="bo")
    )
    f3 = ProtobufSerializer(client, protos.order_v3.Order, subject=subject)(
        protos.order_v3.Order(id="c", customer="cy", tags=["t"])
    )
    assert len({wire.read_schema_id(f) for f in (f1, f2, f3)}) == 3
    df = frames_df(spark, [f1, f2, f3])
    latest = decoded(df, from_registry("value", registry_url, subject=subject))
    assert [r.asDict() for r in latest] == [
        {"id": "a", "customer": "", "tags": []},
        {"id": "b", "customer": "bo", "tags": []},
        {"id": "c", "customer": "cy", "tags": ["t"]},
    ]
    v2 = decoded(df, from_registry("value", registry_url, subject=subject, version=2))
    assert [r.asDict() for r in v2] == [
        {"id": "a", "qty": 1, "customer": ""},
        {"id": "b", "qty": 2, "customer": "bo"},
        {"id": "c", "qty": 0, "customer": "cy"},
    ]


def test_permissive_and_failfast(spark, client, registry_url, subject, protos) -> None:
    good = ProtobufSerializer(client, protos.order_v1.Order, subject=subject)(protos.order_v1.Order(id="a", qty=1))
    sid = wire.read_schema_id(good)
    frames = [
        good,
        None,
        good[:6] + b"\x0a\x09ab",
        good[:5] + b"\x04\x02\x00" + good[6:],
        wire.prefix(876543) + good[5:],
        b"\x03" + good[1:],
    ]
    df = frames_df(spark, frames)
    got = decoded(df, from_registry("value", registry_url, subject=subject, error_column=True))
    assert got[0].value.asDict() == {"id": "a", "qty": 1} and got[0].error is None
    assert got[1] is None
    assert all(r.value is None for r in got[2:])
    errors = [r.error for r in got[2:]]
    assert "cannot decode Protobuf skspark.v1.Order" in errors[0] and f"schema id {sid}" in errors[0]
    assert "message index path [1, 0] does not exist" in errors[1]
    assert "schema id 876543 is not known to the registry" in errors[2]
    assert "unknown magic byte 0x03" in errors[3]
    plain = decoded(df, from_registry("value", registry_url, subject=subject))
    assert plain[0] == Row(id="a", qty=1) and plain[1:] == [None] * 5
    with pytest.raises(Exception) as info:
        df.where("n = 2").select(from_registry("value", registry_url, subject=subject, mode="FAILFAST")).collect()
    assert "from_registry (FAILFAST)" in str(info.value) and f"schema id {sid}" in str(info.value)


def test_confluent_kafka_frames_both_ways(spark, registry_url, protos) -> None:
    topic = f"ckpb-{uuid.uuid4().hex[:10]}"
    ck = SchemaRegistryClient({"url": registry_url})
    ctx = SerializationContext(topic, MessageField.VALUE)
    ser = CkProtobufSerializer(protos.all_types.AllTypes, ck, conf=CK_TOPIC)
    msgs = [all_types(protos, k) for k in range(2)]
    frames = [ser(m, ctx) for m in msgs]
    df = frames_df(spark, frames)
    col = from_registry("value", registry_url, subject=f"{topic}-value", message="skspark.AllTypes")
    assert [r.asDict() for r in decoded(df, col)] == [expected(0), expected(1)]
    out = df.select("n", col.alias("o")).select(
        "n", to_registry("o", registry_url, subject=f"{topic}-value", message="skspark.AllTypes").alias("v")
    )
    de = CkProtobufDeserializer(protos.all_types.AllTypes, conf={"use.deprecated.format": False})
    assert [de(bytes(r.v), ctx) for r in out.orderBy("n").collect()] == msgs


def test_to_registry_auto_register_with_message_class(spark, client, registry_url, subject, protos) -> None:
    df = spark.createDataFrame([("a", 1), ("b", 2)], "id string, qty long")
    out = df.selectExpr("struct(id, qty) as o").select(
        to_registry("o", registry_url, subject=subject, schema=protos.order_v1.Order, auto_register=True).alias("v")
    )
    values = [bytes(r.v) for r in out.collect()]
    sid = client.get_latest_version(subject).schema_id
    assert [wire.read_schema_id(v) for v in values] == [sid, sid]
    assert [protos.order_v1.Order.FromString(v[6:]) for v in values] == [
        protos.order_v1.Order(id="a", qty=1),
        protos.order_v1.Order(id="b", qty=2),
    ]
