"""The ``schemakit`` data source in Structured Streaming: a topic read micro-batch by micro-batch with offsets in
the checkpoint (``maxOffsetsPerTrigger``, ``Trigger.AvailableNow``) and written to the sink; a query stopped and
restarted from its checkpoint resumes exactly where its last batch ended: nothing lost, nothing twice."""

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
