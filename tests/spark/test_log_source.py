"""The ``schemakit`` data source in batch: a ``streams.log`` topic read and written by Spark, on SQLite and on the
test broker (4 partitions), with the columns and offset options of Spark's Kafka source, and its errors."""

from __future__ import annotations

import math
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer as CkAvroDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext
from pyspark.sql import Row
from pyspark.sql import functions as F

from serdes.spark import to_registry
from streams.log import OFFSET_BEGINNING, Log, Record, TopicPartition, open_log
from tests.support.ports import free_port

PARTITIONS = 4
PER_PARTITION = (9, 6, 12, 3)  # records produced to each partition: uneven, so ranges and splits differ
ORDER = {
    "type": "record",
    "name": "Order",
    "fields": [{"name": "id", "type": "long"}, {"name": "item", "type": "string"}],
}


@pytest.fixture(scope="module", params=["sqlite", "kafka"])
def log_url(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path_factory.mktemp('spark-log')}/log.db"
    return str(request.getfixturevalue("kafka_log_url"))


@pytest.fixture(scope="module")
def log(log_url: str) -> Iterator[Log]:
    with open_log(log_url) as lg:
        yield lg


def new_topic(log: Log, partitions: int = PARTITIONS) -> str:
    name = f"spark-src-{uuid.uuid4().hex[:10]}"
    log.create_topic(name, partitions)
    return name


def produce(log: Log, topic: str, counts: tuple[int, ...] = PER_PARTITION) -> dict[tuple[int, int], Record]:
    """Records with distinct keys, values and a header, each produced on its own (the test broker reports the
    high watermark of a batch of several records wrongly); returns them by (partition, offset)."""
    out = {}
    with log.producer() as producer:
        for partition, count in enumerate(counts):
            for i in range(count):
                key, value = f"k-{partition}-{i}".encode(), f"v-{partition}-{i}".encode() * (i + 1)
                md = producer.produce(topic, value, key, partition=partition, headers=[("n", str(i).encode())])
                out[(partition, md.offset)] = Record(topic, partition, md.offset, key, value, md.timestamp)
    return out


def read(spark: Any, log_url: str, topic: str, **options: str) -> Any:
    reader = spark.read.format("schemakit").option("log", log_url).option("topic", topic)
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()


def log_records(log: Log, topic: str, partitions: int, count: int) -> list[Record]:
    """The first ``count`` records of ``topic``, read with the log's own consumer (what a sink test checks with:
    the test broker's latest offsets are unreliable after a batched write, so Spark's ranges would be short)."""
    out: list[Record] = []
    with log.consumer() as consumer:
        consumer.assign({TopicPartition(topic, p): OFFSET_BEGINNING for p in range(partitions)})
        while len(out) < count:
            records = consumer.poll(5.0)
            assert records, f"only {len(out)} of {count} records of {topic} arrived"
            out += records
    return out


def by_position(rows: list[Row]) -> dict[tuple[int, int], Row]:
    return {(r.partition, r.offset): r for r in rows}


@pytest.fixture(scope="module")
def orders(log: Log) -> tuple[str, dict[tuple[int, int], Record]]:
    topic = new_topic(log)
    return topic, produce(log, topic)


def test_batch_read_has_kafka_columns_and_every_record(spark: Any, log_url: str, orders: Any) -> None:
    topic, produced = orders
    df = read(spark, log_url, topic, includeHeaders="true")
    assert [(f.name, f.dataType.simpleString()) for f in df.schema.fields] == [
        ("key", "binary"),
        ("value", "binary"),
        ("topic", "string"),
        ("partition", "int"),
        ("offset", "bigint"),
        ("timestamp", "timestamp"),
        ("timestampType", "int"),
        ("headers", "array<struct<key:string,value:binary>>"),
    ]
    assert df.rdd.getNumPartitions() == PARTITIONS  # one input partition per topic partition
    rows = by_position(df.collect())
    assert rows.keys() == produced.keys()
    for partition, count in enumerate(PER_PARTITION):  # dense offsets 0..n-1 in every partition
        assert sorted(o for p, o in rows if p == partition) == list(range(count))
    for position, record in produced.items():
        row = rows[position]
        assert (row.key, row.value, row.topic) == (record.key, record.value, topic)
        assert int(row.timestamp.timestamp() * 1000) == record.timestamp
        assert row.timestampType == 0
        assert [(h.key, h.value) for h in row.headers] == [("n", str(position[1]).encode())]
    assert "headers" not in read(spark, log_url, topic).columns  # as Spark's Kafka source without includeHeaders


def test_offset_options_and_splitting(spark: Any, log_url: str, orders: Any) -> None:
    topic, produced = orders
    starting = f'{{"{topic}":{{"0":2,"1":-2,"2":-1,"3":1}}}}'
    ending = f'{{"{topic}":{{"0":5,"1":-1,"2":-1,"3":3}}}}'
    df = read(spark, log_url, topic, startingOffsets=starting, endingOffsets=ending)
    expected = {(0, o) for o in range(2, 5)} | {(1, o) for o in range(6)} | {(3, 1), (3, 2)}
    assert set(by_position(df.collect())) == expected

    split = read(spark, log_url, topic, maxRecordsPerPartition="4")
    assert split.rdd.getNumPartitions() == sum(math.ceil(n / 4) for n in PER_PARTITION)
    assert sorted(by_position(split.collect())) == sorted(produced)

    latest = read(spark, log_url, topic, startingOffsets=f'{{"{topic}":{{"0":-1,"1":-1,"2":-1,"3":-1}}}}')
    assert latest.count() == 0


def test_several_topics(spark: Any, log: Log, log_url: str, orders: Any) -> None:
    topic, produced = orders
    other = new_topic(log, 1)
    produce(log, other, (5,))
    df = spark.read.format("schemakit").option("log", log_url).option("subscribe", f"{topic}, {other}").load()
    counts = {r.topic: r["count"] for r in df.groupBy("topic").count().collect()}
    assert counts == {topic: len(produced), other: 5}


def test_write_then_read_back(spark: Any, log: Log, log_url: str) -> None:
    target = new_topic(log)
    rows = [
        Row(
            key=f"k{i}", value=f"value {i}".encode(), partition=i % PARTITIONS, headers=[Row(key="i", value=bytes([i]))]
        )
        for i in range(20)
    ]
    df = spark.createDataFrame(
        rows, "key string, value binary, partition int, headers array<struct<key:string,value:binary>>"
    )
    df.write.format("schemakit").option("log", log_url).option("topic", target).mode("append").save()
    back = log_records(log, target, PARTITIONS, len(rows))
    got = sorted(((r.key or b"").decode(), r.value, r.partition, list(r.headers)) for r in back)
    want = sorted((r.key, r.value, r.partition, [("i", r.headers[0].value)]) for r in rows)
    assert got == want
    for partition in range(PARTITIONS):  # written in order: dense offsets from 0
        assert sorted(r.offset for r in back if r.partition == partition) == list(range(5))


def test_topic_column_and_string_values(spark: Any, log: Log, log_url: str) -> None:
    first, second = new_topic(log, 1), new_topic(log, 1)
    df = spark.createDataFrame([(first, "a"), (second, "b"), (first, "c")], "topic string, value string")
    df.write.format("schemakit").option("log", log_url).mode("append").save()
    assert sorted(r.value or b"" for r in log_records(log, first, 1, 2)) == [b"a", b"c"]
    assert [(r.key, r.value) for r in log_records(log, second, 1, 1)] == [(None, b"b")]


def test_to_registry_rows_read_by_confluent_deserializer(spark: Any, log: Log, log_url: str, registry_url: str) -> None:
    target = new_topic(log)
    subject = f"{target}-value"
    orders = spark.createDataFrame([(i, f"item-{i}") for i in range(12)], "id long, item string")
    encoded = orders.select(
        F.col("id").cast("string").alias("key"),
        to_registry(F.struct("id", "item"), registry_url, subject=subject, schema=ORDER, auto_register=True).alias(
            "value"
        ),
    )
    encoded.write.format("schemakit").option("log", log_url).option("topic", target).mode("append").save()

    deserializer = CkAvroDeserializer(SchemaRegistryClient({"url": registry_url}))
    context = SerializationContext(target, MessageField.VALUE)
    decoded = [deserializer(r.value, context) for r in log_records(log, target, PARTITIONS, 12)]
    assert sorted((d["id"], d["item"]) for d in decoded) == [(i, f"item-{i}") for i in range(12)]


def test_unknown_topic(spark: Any, log_url: str) -> None:
    with pytest.raises(Exception, match=r"topic 'no-such-topic' does not exist"):
        read(spark, log_url, "no-such-topic").collect()


def test_offset_out_of_range_and_fail_on_data_loss(spark: Any, log_url: str, orders: Any) -> None:
    topic, _ = orders
    beyond = f'{{"{topic}":{{"0":50,"1":-2,"2":-2,"3":-2}}}}'
    with pytest.raises(Exception, match=rf"starting offset 50 of {topic}\[0\] is out of range: the latest offset is 9"):
        read(spark, log_url, topic, startingOffsets=beyond).collect()
    lenient = read(spark, log_url, topic, startingOffsets=beyond, failOnDataLoss="false").collect()
    assert {r.partition for r in lenient} == {1, 2, 3}  # partition 0 starts at its end: nothing to read


def test_unreachable_log(spark: Any) -> None:
    url = f"kafka://127.0.0.1:{free_port()}"
    with pytest.raises(Exception, match=r"cannot read offsets from kafka://127\.0\.0\.1:\d+"):
        spark.read.format("schemakit").option("log", url).option("topic", "t").option(
            "log.timeout", "2"
        ).load().collect()


def test_sink_checks_columns(spark: Any, log_url: str) -> None:
    df = spark.createDataFrame([(1,)], "value int")
    with pytest.raises(Exception, match=r"column 'value' must be binary or string, not int"):
        df.write.format("schemakit").option("log", log_url).option("topic", "t").mode("append").save()


def test_failed_send_names_topic_partition_and_reason(spark: Any, log: Log, log_url: str) -> None:
    target = new_topic(log, 2)
    df = spark.createDataFrame([(b"v", 7)], "value binary, partition int")
    with pytest.raises(Exception, match=rf"cannot send to '{target}' partition 7: .*has 2 partitions"):
        df.write.format("schemakit").option("log", log_url).option("topic", target).mode("append").save()


def test_undecodable_record_is_found_by_topic_partition_and_offset(
    spark: Any, log: Log, log_url: str, registry_url: str
) -> None:
    """A record the registry cannot decode, read by the source: PERMISSIVE with ``error_column`` gives its reason in
    the row that carries its topic, partition and offset (the record a user has to look at); FAILFAST fails the
    query with the schema id and the reason; the good records decode either way."""
    from serdes import AvroSerializer, RegistryClient
    from serdes.spark import from_registry

    target = new_topic(log, 2)
    subject = f"{target}-value"
    with RegistryClient(registry_url) as client:
        good = AvroSerializer(client, ORDER, subject=subject)({"id": 1, "item": "pen"})
    bad = good[:5] + b"\xff"  # the right schema id, a payload that is not an Order
    with log.producer() as producer:
        producer.produce(target, good, b"a", partition=0)
        producer.produce(target, good, b"b", partition=1)
        producer.produce(target, bad, b"c", partition=1)

    source = read(spark, log_url, target)
    checked = source.select(
        "topic",
        "partition",
        "offset",
        from_registry("value", registry_url, subject=subject, error_column=True).alias("o"),
    ).collect()
    errors = [(r.topic, r.partition, r.offset) for r in checked if r.o.error is not None]
    assert errors == [(target, 1, 1)]
    assert sorted((r.partition, r.offset, r.o.value.item) for r in checked if r.o.error is None) == [
        (0, 0, "pen"),
        (1, 0, "pen"),
    ]
    schema_id = int.from_bytes(good[1:5], "big")
    with pytest.raises(Exception, match=rf"from_registry \(FAILFAST\): cannot decode.*schema id {schema_id}"):
        source.select(from_registry("value", registry_url, subject=subject, mode="FAILFAST")).collect()
