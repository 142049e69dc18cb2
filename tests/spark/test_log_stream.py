"""The ``schemakit`` data source in Structured Streaming: a topic read micro-batch by micro-batch with offsets in
the checkpoint (``maxOffsetsPerTrigger``, ``Trigger.AvailableNow``) and written to the sink; a query stopped and
restarted from its checkpoint resumes exactly where its last batch ended: nothing lost, nothing twice; and a
pipeline over it (two Avro writer versions, from_registry, a windowed aggregation with a watermark, the sink)."""

from __future__ import annotations

import json
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from streams.log import OFFSET_BEGINNING, Log, TopicPartition, open_log


@pytest.fixture(scope="module", params=["sqlite", "kafka"])
def log_url(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path_factory.mktemp('spark-stream')}/log.db"
    return str(request.getfixturevalue("kafka_log_url"))


def produce(log: Log, topic: str, first: int, count: int, partitions: int) -> None:
    """Each record on its own (the test broker reports the latest offset of a batch of several wrongly)."""
    with log.producer() as producer:
        for i in range(first, first + count):
            producer.produce(topic, f"order-{i}".encode(), f"k{i}".encode(), partition=i % partitions)


def topic_values(log: Log, topic: str, partitions: int, count: int) -> Counter[bytes]:
    """The values of ``topic``: the first ``count``, and then whatever else arrives within a second."""
    out: Counter[bytes] = Counter()
    with log.consumer() as consumer:
        consumer.assign({TopicPartition(topic, p): OFFSET_BEGINNING for p in range(partitions)})
        while sum(out.values()) < count and (records := consumer.poll(10.0)):
            out.update(r.value for r in records if r.value is not None)
        while records := consumer.poll(1.0):  # nothing twice: no more than expected
            out.update(r.value for r in records if r.value is not None)
    return out


def run_available_now(spark: Any, log_url: str, source: str, sink: str, checkpoint: Path) -> list[int]:
    """Run the pipeline with Trigger.AvailableNow until it has read what was there; the rows of each batch."""
    stream = (
        spark.readStream.format("schemakit")
        .option("log", log_url)
        .option("subscribe", source)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", "8")
        .load()
        .selectExpr("key", "upper(cast(value as string)) AS value")
    )
    query = (
        stream.writeStream.format("schemakit")
        .option("log", log_url)
        .option("topic", sink)
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(240)
    assert query.exception() is None, query.exception()
    return [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]


def test_stream_restarts_from_checkpoint_exactly(spark: Any, log_url: str, tmp_path: Path) -> None:
    source, sink = f"stream-in-{uuid.uuid4().hex[:8]}", f"stream-out-{uuid.uuid4().hex[:8]}"
    with open_log(log_url) as log:
        log.create_topic(source, 2)
        log.create_topic(sink, 2)
        produce(log, source, 0, 20, 2)
        batches = run_available_now(spark, log_url, source, sink, tmp_path / "checkpoint")
        assert sum(batches) == 20 and max(batches) <= 8  # maxOffsetsPerTrigger splits the backlog
        assert topic_values(log, sink, 2, 20) == Counter(f"ORDER-{i}".encode() for i in range(20))

        produce(log, source, 20, 9, 2)  # the query is stopped; more records arrive; it restarts
        batches = run_available_now(spark, log_url, source, sink, tmp_path / "checkpoint")
        assert sum(batches) == 9
        assert topic_values(log, sink, 2, 29) == Counter(f"ORDER-{i}".encode() for i in range(29))

    # the checkpoint keeps offsets as Spark's Kafka source does: per topic, per partition, the next to read
    batch_files = [p for p in (tmp_path / "checkpoint" / "offsets").iterdir() if p.name.isdigit()]
    last = max(batch_files, key=lambda p: int(p.name))
    offsets = json.loads(last.read_text().splitlines()[-1])
    assert offsets == {source: {"0": 15, "1": 14}}


def test_stream_reads_every_record_of_four_partitions(spark: Any, log_url: str, tmp_path: Path) -> None:
    """Micro-batches of at most 7 records (``maxOffsetsPerTrigger``) into a memory sink: every record of the four
    partitions once, offsets dense per partition, key and value as produced, the columns of Spark's Kafka source."""
    source, table = f"stream-4p-{uuid.uuid4().hex[:8]}", f"stream_4p_{uuid.uuid4().hex[:8]}"
    partitions, count = 4, 30
    with open_log(log_url) as log:
        log.create_topic(source, partitions)
        produce(log, source, 0, count, partitions)
    query = (
        spark.readStream.format("schemakit")
        .option("log", log_url)
        .option("subscribe", source)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", "7")
        .load()
        .writeStream.format("memory")
        .queryName(table)
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(240)
    assert query.exception() is None, query.exception()
    batches = [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]
    assert sum(batches) == count and max(batches) <= 7

    rows = spark.table(table).collect()
    assert len(rows) == count
    assert {r.topic for r in rows} == {source} and {r.timestampType for r in rows} == {0}
    for partition in range(partitions):
        offsets = sorted(r.offset for r in rows if r.partition == partition)
        assert offsets == list(range(len(offsets))) and offsets  # dense from 0, each once
    # produce() sent record i to partition i % 4: the j-th record of partition p is i = p + 4 j
    for r in rows:
        i = r.partition + partitions * r.offset
        assert (bytes(r.key), bytes(r.value)) == (f"k{i}".encode(), f"order-{i}".encode())


ORDER_V1 = {
    "type": "record",
    "name": "Order",
    "fields": [{"name": "customer", "type": "string"}, {"name": "amount", "type": "long"}],
}
ORDER_V2 = {**ORDER_V1, "fields": [*ORDER_V1["fields"], {"name": "channel", "type": "string", "default": "web"}]}
MINUTE_MS = 60_000
BASE_MS = 1_700_000_000_000 - 1_700_000_000_000 % MINUTE_MS  # the start of a minute


def orders(first: int, count: int, minute: int) -> list[tuple[int, str, int]]:
    """(timestamp ms, customer, amount): three customers over the three one-minute windows from ``minute``."""
    return [(BASE_MS + (minute + i // 3 % 3) * MINUTE_MS + i, f"c{i % 3}", i) for i in range(first, first + count)]


def produce_orders(log: Log, topic: str, registry_url: str, subject: str, rows: list[tuple[int, str, int]]) -> None:
    """Framed with the subject's two versions in turn (two writer schemas in one topic)."""
    from serdes import AvroSerializer, RegistryClient

    with RegistryClient(registry_url) as client:
        v1 = AvroSerializer(client, ORDER_V1, subject=subject)
        v2 = AvroSerializer(client, ORDER_V2, subject=subject)
        with log.producer() as producer:
            for ts, customer, amount in rows:  # odd amounts in version 2 (registered second, so the latest)
                frame = (
                    v2({"customer": customer, "amount": amount, "channel": "shop"})
                    if amount % 2
                    else v1({"customer": customer, "amount": amount})
                )
                producer.send(topic, frame, customer.encode(), partition=amount % 2, timestamp=ts)
            producer.flush()


def reference(rows: list[tuple[int, str, int]]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for ts, customer, amount in rows:
        window = (ts - ts % MINUTE_MS) // 1000
        entry = out.setdefault(f"{window}/{customer}", {"orders": 0, "total": 0, "shop": 0})
        entry["orders"] += 1
        entry["total"] += amount
        entry["shop"] += amount % 2  # version 2 wrote "shop"; version 1 rows read the reader's default, "web"
    return out


def sink_table(log: Log, topic: str) -> dict[str, dict[str, int]]:
    """The sink topic as a table by key; in append mode each window is written once, so no key comes twice."""
    with log.consumer() as consumer:
        consumer.assign({TopicPartition(topic, p): OFFSET_BEGINNING for p in range(2)})
        records = []
        while batch := consumer.poll(1.0):
            records += batch
    keys = [(r.key or b"").decode() for r in records]
    assert len(keys) == len(set(keys)), f"a window written twice: {sorted(keys)}"
    return {key: json.loads(r.value or b"") for key, r in zip(keys, records, strict=True)}


def test_decode_aggregate_write_pipeline_restarts_exactly(spark: Any, registry_url: str, tmp_path: Path) -> None:
    from pyspark.sql import functions as F

    from serdes.spark import from_registry

    log_url = f"sqlite:///{tmp_path}/pipeline.db"
    source, sink = "orders", "order-totals"
    subject = f"pipeline-{uuid.uuid4().hex[:8]}-value"
    # Windows close when the watermark (the latest event time less 3 minutes, more than a run's orders spread over,
    # so none is late) passes their end: each run ends with an order minutes later (``closer``) that closes the
    # run's windows and opens one the next run adds to, so that window's count crosses the restart in the state.
    closer = [(BASE_MS + 8 * MINUTE_MS, "c0", 1001), (BASE_MS + 16 * MINUTE_MS, "c1", 2001)]
    first = [*orders(0, 24, minute=0), closer[0]]
    later = [*orders(24, 15, minute=8), closer[1]]

    def run_pipeline() -> None:
        decoded = (
            spark.readStream.format("schemakit")
            .option("log", log_url)
            .option("subscribe", source)
            .option("startingOffsets", "earliest")
            .option("maxOffsetsPerTrigger", "10")
            .load()
            .select("timestamp", from_registry("value", registry_url, subject=subject, mode="FAILFAST").alias("o"))
        )
        totals = (
            decoded.withWatermark("timestamp", "3 minutes")
            .groupBy(F.window("timestamp", "1 minute"), F.col("o.customer").alias("customer"))
            .agg(
                F.count("*").alias("orders"),
                F.sum("o.amount").alias("total"),
                F.sum((F.col("o.channel") == "shop").cast("int")).alias("shop"),
            )
        )
        out = totals.select(
            F.concat_ws("/", F.unix_timestamp("window.start").cast("string"), "customer").alias("key"),
            F.to_json(F.struct("orders", "total", "shop")).alias("value"),
        )
        query = (
            out.writeStream.format("schemakit")
            .option("log", log_url)
            .option("topic", sink)
            .option("checkpointLocation", str(tmp_path / "checkpoint"))
            .outputMode("append")
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination(300)
        assert query.exception() is None, query.exception()

    with open_log(log_url) as log:
        log.create_topic(source, 2)
        log.create_topic(sink, 2)
        produce_orders(log, source, registry_url, subject, first)
        run_pipeline()
        assert sink_table(log, sink) == reference(first[:-1])  # the windows of minutes 0-2

        produce_orders(log, source, registry_url, subject, later)  # stopped; more orders, some in the same windows
        run_pipeline()
        assert sink_table(log, sink) == reference(first + later[:-1])  # and of minutes 8-10
