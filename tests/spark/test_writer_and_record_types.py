"""from_registry's writer id column and topics mixing record types (TopicRecordNameStrategy), both engines, against
the real registry and the local Spark session."""

from __future__ import annotations

import json
import uuid

import pytest
from pyspark.sql import Row

from serdes import AvroSerializer, Schema, wire
from serdes.spark import from_registry

ORDER_V1 = {
    "type": "record",
    "name": "Order",
    "namespace": "sk.shop",
    "fields": [{"name": "id", "type": "long"}, {"name": "item", "type": "string"}],
}
ORDER_V2 = {**ORDER_V1, "fields": [*ORDER_V1["fields"], {"name": "qty", "type": "int", "default": 1}]}
REFUND = {
    "type": "record",
    "name": "Refund",
    "namespace": "sk.shop",
    "fields": [{"name": "order_id", "type": "long"}, {"name": "cents", "type": "long"}],
}
AUDIT = {"type": "record", "name": "Audit", "namespace": "sk.ops", "fields": [{"name": "who", "type": "string"}]}


def frames_df(spark, frames: list[bytes | None]):
    return spark.createDataFrame([(i, f) for i, f in enumerate(frames)], "n int, value binary").coalesce(1)


def decoded(df, col) -> list:
    return [r.o for r in df.select("n", col.alias("o")).orderBy("n").collect()]


def test_writer_id_and_version_next_to_the_value(spark, client, registry_url, subject, engine) -> None:
    v1 = AvroSerializer(client, ORDER_V1, subject=subject)({"id": 1, "item": "tea"})
    v2 = AvroSerializer(client, ORDER_V2, subject=subject)({"id": 2, "item": "cup", "qty": 3})
    id1, id2 = wire.read_schema_id(v1), wire.read_schema_id(v2)
    unknown = wire.prefix(987650) + v1[5:]
    df = frames_df(spark, [v1, v2, None, b"\x09" + v1[1:], unknown, v2[:-1]])
    got = decoded(df, from_registry("value", registry_url, subject=subject, engine=engine, writer_id_column=True))
    assert got[:3] == [
        Row(value=Row(id=1, item="tea", qty=1), writer_id=id1, writer_version=1),
        Row(value=Row(id=2, item="cup", qty=3), writer_id=id2, writer_version=2),
        None,  # null in, null out
    ]
    # a row that cannot be decoded keeps what its frame says: no id without a frame, no version for an unknown id
    assert got[3:] == [
        Row(value=None, writer_id=None, writer_version=None),
        Row(value=None, writer_id=987650, writer_version=None),
        Row(value=None, writer_id=id2, writer_version=2),
    ]
    both = decoded(
        df,
        from_registry("value", registry_url, subject=subject, engine=engine, writer_id_column=True, error_column=True),
    )
    assert both[1] == Row(value=Row(id=2, item="cup", qty=3), error=None, writer_id=id2, writer_version=2)
    assert both[4].writer_id == 987650 and "schema id 987650 is not known to the registry" in both[4].error
    assert df.select(
        from_registry("value", registry_url, subject=subject, engine=engine, writer_id_column=True)
    ).schema.simpleString() == (
        "struct<from_registry(value):struct<value:struct<id:bigint,item:string,qty:int>,writer_id:int,"
        "writer_version:int>>"
    )


def test_writer_version_is_the_subjects(spark, client, registry_url, subject, engine) -> None:
    # the same schema registered under a second subject has its own version there; a pinned reader without a
    # subject shows no version
    client.set_compatibility("NONE", subject=f"{subject}-other")
    client.register(f"{subject}-other", Schema(json.dumps(REFUND)))
    client.register(f"{subject}-other", Schema(json.dumps(ORDER_V1)))
    frame = AvroSerializer(client, ORDER_V1, subject=subject)({"id": 5, "item": "pen"})
    df = frames_df(spark, [frame])
    sid = wire.read_schema_id(frame)
    by_subject = {
        s: decoded(df, from_registry("value", registry_url, subject=s, engine=engine, writer_id_column=True))[
            0
        ].writer_version
        for s in (subject, f"{subject}-other")
    }
    assert by_subject == {subject: 1, f"{subject}-other": 2}
    pinned = decoded(
        df, from_registry("value", registry_url, reader_schema=ORDER_V1, engine=engine, writer_id_column=True)
    )
    assert pinned == [Row(value=Row(id=5, item="pen"), writer_id=sid, writer_version=None)]


@pytest.fixture
def topic(client) -> dict:
    """A topic written with TopicRecordNameStrategy: Orders (two versions) and Refunds, plus an Audit record and a
    broken frame that belong to neither type."""
    name = f"events-{uuid.uuid4().hex[:10]}"
    order_subject, refund_subject = f"{name}-sk.shop.Order", f"{name}-sk.shop.Refund"
    o1 = AvroSerializer(client, ORDER_V1, subject=order_subject)
    o2 = AvroSerializer(client, ORDER_V2, subject=order_subject)
    refund = AvroSerializer(client, REFUND, subject=refund_subject)
    audit = AvroSerializer(client, AUDIT, subject=f"{name}-sk.ops.Audit")({"who": "ann"})
    frames = [
        o1({"id": 1, "item": "tea"}),
        refund({"order_id": 1, "cents": 250}),
        o2({"id": 2, "item": "cup", "qty": 4}),
        None,
        audit,
        b"\x00",
    ]
    return {"subjects": [order_subject, refund_subject], "frames": frames, "audit_id": wire.read_schema_id(audit)}


def test_a_topic_mixing_record_types_decodes_into_one_field_per_type(spark, registry_url, topic, engine) -> None:
    df = frames_df(spark, topic["frames"])
    col = from_registry("value", registry_url, subjects=topic["subjects"], engine=engine, error_column=True)
    got = decoded(df, col)
    assert [r.value if r else None for r in got[:4]] == [
        Row(Order=Row(id=1, item="tea", qty=1), Refund=None),  # v1 read with the latest Order schema
        Row(Order=None, Refund=Row(order_id=1, cents=250)),
        Row(Order=Row(id=2, item="cup", qty=4), Refund=None),
        None,
    ]
    assert got[4].value is None and got[4].error == (
        f"writer schema {topic['audit_id']} is record sk.ops.Audit, not one of the record types read here "
        "(sk.shop.Order, sk.shop.Refund)"
    )
    assert got[5].value is None and "too short for the 5-byte schema-registry frame header" in got[5].error
    # one column per record type
    per_type = (
        df.select("n", from_registry("value", registry_url, subjects=topic["subjects"], engine=engine).alias("e"))
        .select("n", "e.*")
        .orderBy("n")
    )
    assert per_type.columns == ["n", "Order", "Refund"]
    assert [r.Refund for r in per_type.collect()] == [None, Row(order_id=1, cents=250), None, None, None, None]


def test_record_type_fields_named_by_a_dict_and_failfast(spark, registry_url, topic, engine) -> None:
    order_subject, refund_subject = topic["subjects"]
    df = frames_df(spark, topic["frames"])
    named = from_registry(
        "value",
        registry_url,
        subjects={"orders": order_subject, "refunds": refund_subject},
        engine=engine,
        writer_id_column=True,
    )
    first = decoded(df.where("n < 2"), named)
    assert first[0].value == Row(orders=Row(id=1, item="tea", qty=1), refunds=None) and first[0].writer_version == 1
    assert first[1].value == Row(orders=None, refunds=Row(order_id=1, cents=250)) and first[1].writer_version == 1
    strict = from_registry("value", registry_url, subjects=topic["subjects"], engine=engine, mode="FAILFAST")
    with pytest.raises(Exception) as info:
        df.where("n = 4").select(strict).collect()
    assert "from_registry (FAILFAST)" in str(info.value) and "is record sk.ops.Audit" in str(info.value)


def test_record_types_are_checked_on_the_driver(registry_url, client, subject) -> None:
    client.register(subject, Schema(json.dumps(ORDER_V1)))
    client.register(f"{subject}-copy", Schema(json.dumps(ORDER_V1)))
    with pytest.raises(ValueError, match=r"both hold record sk\.shop\.Order"):
        from_registry("value", registry_url, subjects=[subject, f"{subject}-copy"])
    with pytest.raises(ValueError, match=r"subjects= .* or subject="):
        from_registry("value", registry_url, subjects=[subject], subject=subject)
