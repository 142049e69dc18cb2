"""Reading registry-framed Avro from a topic with Spark's ``schemakit`` data source, against the loop a Python user
writes without schemakit: a single-process confluent-kafka Consumer with confluent-kafka's ``AvroDeserializer``.

    .venv/bin/python benchmarks/spark_source.py [--records 100000] [--reps 1] [--kafka host:port] [--json PATH]
                                                [--rate 5000] [--latency-seconds 20] [--warmup-seconds 10]

Workload: ``--records`` Confluent-framed Avro records (a 5-field order) in 4 partitions on the test broker (tansu
started here, or the Kafka at ``--kafka`` / ``SCHEMAKIT_TEST_KAFKA``). Each round reads all of them and counts and
sums a decoded field, checked against the values produced:
  (a) the peer: confluent-kafka ``Consumer`` (assign the 4 partitions from the beginning, ``consume`` in batches of
      1,000) + ``AvroDeserializer`` per record, in this process;
  (b) ``spark.read.format("schemakit")`` + ``from_registry`` with the JVM engine on ``local[2]`` (when the jar is
      built);
  (c) the same with the Python engine.
Rounds are interleaved across methods (the machine is shared) and round 0 is a warm-up; prints rows/s (best and
median of the timed rounds) and the ratios to (a). The issue's size is 1,000,000 records; the default is smaller so
that a run stays within a few minutes on a loaded 2-core machine. Spark's fixed cost per query (planning in a
Python worker, starting tasks) weighs on small sizes: the ratios grow with ``--records``.

Then the streaming latency (``--latency-seconds 0`` skips it): ``--rate`` records/s produced, paced, to a 4-partition
topic for ``--warmup-seconds`` + ``--latency-seconds``; a streaming query (``spark.readStream.format("schemakit")``,
``from_registry`` with the JVM engine when the jar is built, the default trigger: the next micro-batch as soon as
the last ends) writes each record's id and produce time to a second topic with the ``schemakit`` sink. A record's
latency is its output record's timestamp (set when the sink's producer sends it) less its input record's (set when
it was produced): p50, p99 and the maximum over the records produced after the warm-up, and the rate the producer
achieved. tansu reports a partition's latest offset as its last batch's first offset + 1, so the records batched
behind a batch's first stay invisible to the query until the partition's next batch (milliseconds at this rate; a
real Kafka has no such delay); the last record of each partition is sent on its own, after a flush.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from own_registry import own_registry  # noqa: E402  (benchmarks/ is on sys.path when run as a script)
from results_file import BenchRun, Case, Comparison, add_json_option  # noqa: E402

from tests.support.schemas import order_variant  # noqa: E402

PARTITIONS = 4
# The shared order schema's paid and note, its id as a long, and two fields of this workload's own.
ORDER = {
    **order_variant(
        fields=["id", {"name": "customer", "type": "string"}, {"name": "amount", "type": "double"}, "paid", "note"],
        types={"id": "long"},
    ),
    "namespace": "bench",
}


def order(i: int) -> dict:
    return {"id": i, "customer": f"customer-{i % 97}", "amount": float(i % 1000), "paid": i % 3 == 0, "note": None}


def produce(log_url: str, topic: str, frames: list[bytes]) -> None:
    """Batched sends, then the last record of each partition produced on its own: tansu reports a partition's latest
    offset as its last batch's first offset + 1, which is right only when that batch holds one record."""
    from streams.log import open_log

    with open_log(log_url) as log:
        log.create_topic(topic, PARTITIONS)
        with log.producer() as producer:
            body, tail = frames[:-PARTITIONS], frames[-PARTITIONS:]
            for i, frame in enumerate(body):
                producer.send(topic, frame, str(i).encode(), partition=i % PARTITIONS)
            producer.flush()
            for p, frame in enumerate(tail):
                producer.produce(topic, frame, b"last", partition=p)


def peer_loop(bootstrap: str, registry: str, topic: str, n: int) -> tuple[int, float]:
    """What a Python user writes: one consumer, confluent-kafka's AvroDeserializer on every record."""
    import confluent_kafka
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroDeserializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    deserializer = AvroDeserializer(SchemaRegistryClient({"url": registry}))
    context = SerializationContext(topic, MessageField.VALUE)
    consumer = confluent_kafka.Consumer(
        {"bootstrap.servers": bootstrap, "group.id": f"bench-{uuid.uuid4().hex}", "enable.auto.commit": False}
    )
    start = confluent_kafka.OFFSET_BEGINNING
    consumer.assign([confluent_kafka.TopicPartition(topic, p, start) for p in range(PARTITIONS)])
    count, total = 0, 0.0
    try:
        while count < n:
            # never more than is left: consume waits its whole timeout for a batch it cannot fill
            for msg in consumer.consume(min(1000, n - count), 5.0):
                if msg.error() is None:
                    value = deserializer(msg.value(), context)
                    count += 1
                    total += value["amount"]
    finally:
        consumer.close()
    return count, total


PEER = "(a) confluent-kafka consumer + AvroDeserializer"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=100_000, help="records of the batch comparison (0: none)")
    ap.add_argument("--reps", type=int, default=1, help="timed rounds per method (after one warm-up)")
    ap.add_argument("--kafka", help="bootstrap of a running Kafka (default: SCHEMAKIT_TEST_KAFKA, else tansu here)")
    ap.add_argument("--rate", type=int, default=5000, help="records/s produced for the streaming latency")
    ap.add_argument("--latency-seconds", type=float, default=20, help="measured streaming seconds (0: none)")
    ap.add_argument("--warmup-seconds", type=float, default=10, help="streaming seconds before the measured ones")
    add_json_option(ap)
    args = ap.parse_args()
    bench_run = BenchRun(__file__, vars(args))
    if args.kafka:
        os.environ["SCHEMAKIT_TEST_KAFKA"] = args.kafka
    from tests.support.broker import running_broker

    with own_registry() as registry, running_broker(Path(tempfile.mkdtemp()) / "broker.log") as bootstrap:
        spark = session()
        try:
            results = run(spark, bootstrap, registry, args.records, args.reps) if args.records else {}
            latency = (
                stream_latency(spark, bootstrap, registry, args.rate, args.warmup_seconds, args.latency_seconds)
                if args.latency_seconds > 0
                else {}
            )
        finally:
            spark.stop()
    cases = [
        Case(name, best, results[PEER][0], {"peer case": PEER}) for name, (best, _) in results.items() if name != PEER
    ]  # none with --records 0: the latency alone
    figures: dict[str, float] = {f"{name}: median rows/s": median for name, (_, median) in results.items()}
    figures.update(latency)
    bench_run.write(
        args.json,
        [Comparison("read + decode + count", "rows/s, best round", "schemakit data source", "confluent-kafka", cases)],
        figures,
    )


def session() -> Any:
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from serdes.spark import spark_session

    spark = spark_session(
        "local[2]",
        "spark-source-bench",
        conf={
            "spark.driver.memory": "1g",
            "spark.sql.shuffle.partitions": "2",
            "spark.ui.enabled": "false",
            "spark.ui.showConsoleProgress": "false",
        },
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def engine() -> str:
    from serdes.spark.build_jar import JAR

    return "jvm" if JAR.exists() else "python"


def run(spark: Any, bootstrap: str, registry: str, n: int, reps: int) -> dict[str, tuple[float, float]]:
    from pyspark.sql import functions as F

    from serdes import AvroSerializer, RegistryClient
    from serdes.spark import from_registry

    topic, subject = f"bench-orders-{os.getpid()}", f"bench-orders-{os.getpid()}-value"
    log_url = f"kafka://{bootstrap}"
    print(f"producing {n:,} records to {PARTITIONS} partitions of {topic}...", flush=True)
    serializer = AvroSerializer(RegistryClient(registry), ORDER, subject=subject)
    orders = [order(i) for i in range(n)]
    produce(log_url, topic, [serializer(o) for o in orders])
    want = (n, float(sum(o["amount"] for o in orders)))
    del orders

    def spark_read(engine: str) -> Callable[[], tuple[int, float]]:
        def once() -> tuple[int, float]:
            df = spark.read.format("schemakit").option("log", log_url).option("subscribe", topic).load()
            decoded = df.select(from_registry("value", registry, subject=subject, engine=engine).alias("o"))
            row = decoded.agg(F.count("o"), F.sum("o.amount")).collect()[0]
            return row[0], row[1]

        return once

    methods: dict[str, Callable[[], tuple[int, float]]] = {PEER: lambda: peer_loop(bootstrap, registry, topic, n)}
    if engine() == "jvm":
        methods["(b) schemakit data source + from_registry, JVM engine"] = spark_read("jvm")
    methods["(c) schemakit data source + from_registry, Python engine"] = spark_read("python")

    times: dict[str, list[float]] = {name: [] for name in methods}
    for round_ in range(reps + 1):
        for name, method in methods.items():
            start = time.perf_counter()
            got = method()
            elapsed = time.perf_counter() - start
            if got != want:
                raise AssertionError(f"{name}: read {got}, expected {want}")
            if round_:
                times[name].append(elapsed)
    results = {name: (n / min(t), n / statistics.median(t)) for name, t in times.items()}
    peer = results[PEER][0]
    print(f"{'method':58} {'best rows/s':>12} {'median':>10} {'vs (a)':>7}")
    for name, (best, median) in results.items():
        print(f"{name:58} {best:12,.0f} {median:10,.0f} {best / peer:6.2f}x")
    return results


def paced_producer(
    log_url: str, topic: str, frames: list[bytes], rate: int, stop: threading.Event, done: dict[str, float]
) -> None:
    """``frames`` sent at ``rate`` records/s, in steps of 10 ms, each record stamped by the producer when sent; then
    the last frame of each partition on its own (tansu's latest offset is right only after a one-record batch, so
    the records batched before it become visible to the query). ``done`` gets the rate achieved."""
    from streams.log import open_log

    step = 0.01
    per_step = max(1, round(rate * step))
    body, tail = frames[:-PARTITIONS], frames[-PARTITIONS:]
    with open_log(log_url) as log, log.producer() as producer:
        begin = time.monotonic()
        for first in range(0, len(body), per_step):
            if stop.is_set():
                return
            delay = begin + first / rate - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            for i in range(first, min(first + per_step, len(body))):
                producer.send(topic, body[i], str(i).encode(), partition=i % PARTITIONS)
        done["records/s"] = len(body) / (time.monotonic() - begin)
        producer.flush()
        for p, frame in enumerate(tail):
            producer.produce(topic, frame, str(len(body) + p).encode(), partition=p)


def stream_latency(
    spark: Any, bootstrap: str, registry: str, rate: int, warmup: float, seconds: float
) -> dict[str, float]:
    """p50 / p99 / max of produce-to-sink latency of a streaming query at ``rate`` records/s (module docstring)."""
    from pyspark.sql import functions as F

    from serdes import AvroSerializer, RegistryClient
    from serdes.spark import from_registry
    from streams.log import OFFSET_BEGINNING, TopicPartition, open_log
    from tests.support.waiting import poll_until

    source, sink = f"bench-latency-in-{os.getpid()}", f"bench-latency-out-{os.getpid()}"
    subject = f"{source}-value"
    log_url = f"kafka://{bootstrap}"
    total = int(rate * (warmup + seconds)) + PARTITIONS
    serializer = AvroSerializer(RegistryClient(registry), ORDER, subject=subject)
    frames = [serializer(order(i)) for i in range(total)]
    with open_log(log_url) as log:
        log.create_topic(source, PARTITIONS)
        log.create_topic(sink, PARTITIONS)
    decoded = (
        spark.readStream.format("schemakit")
        .option("log", log_url)
        .option("subscribe", source)
        .option("startingOffsets", "earliest")
        .load()
        .select("timestamp", from_registry("value", registry, subject=subject, engine=engine()).alias("o"))
    )
    query = (
        decoded.select(
            F.col("o.id").cast("string").alias("key"),
            F.unix_millis("timestamp").cast("string").alias("value"),
        )
        .writeStream.format("schemakit")
        .option("log", log_url)
        .option("topic", sink)
        .option("checkpointLocation", tempfile.mkdtemp(prefix="spark-source-bench-"))
        .start()
    )
    stop = threading.Event()
    produced: dict[str, float] = {}
    producer = threading.Thread(
        target=paced_producer, args=(log_url, source, frames, rate, stop, produced), daemon=True
    )
    latencies: dict[int, int] = {}  # id -> ms
    try:
        with open_log(log_url) as log, log.consumer() as consumer:
            consumer.assign({TopicPartition(sink, p): OFFSET_BEGINNING for p in range(PARTITIONS)})

            def arrived() -> int:
                if query.exception() is not None:
                    raise RuntimeError(f"the streaming query failed: {query.exception()}")
                for record in consumer.poll(0.5, max_records=10_000):
                    latencies[int(record.key or b"")] = record.timestamp - int(record.value or b"")
                return len(latencies)

            # One record per partition through the query first (ids -1 to -4, each sent on its own): the first
            # micro-batch starts Python workers and fetches the schema, which is startup, not latency.
            with open_log(log_url) as primer_log, primer_log.producer() as primer:
                for p in range(PARTITIONS):
                    primer.produce(source, serializer(order(-1 - p)), str(-1 - p).encode(), partition=p)
            poll_until(arrived, lambda n: n >= PARTITIONS, timeout=300, what="the query's first records")
            print(f"streaming: {rate:,} records/s for {warmup + seconds:g} s ({warmup:g} s warm-up)...", flush=True)
            producer.start()
            # the wait ends with a timeout when the query cannot keep up with the rate
            everything = total + PARTITIONS
            poll_until(arrived, lambda n: n >= everything, timeout=warmup + seconds + 60, what=f"{total:,} records")
    finally:
        progress = [(p["numInputRows"], p["durationMs"].get("triggerExecution", 0)) for p in query.recentProgress]
        print(
            f"{len(latencies):,} of {total + PARTITIONS:,} records at the sink; "
            f"produced {produced.get('records/s', 0):,.0f}/s; "
            f"the last micro-batches (rows, ms): {progress[-8:]}",
            flush=True,
        )
        stop.set()
        spark.sparkContext.setLogLevel("FATAL")  # a stopped query's cancelled tasks log errors
        query.stop()
        spark.sparkContext.setLogLevel("ERROR")
        if producer.is_alive():
            producer.join(30)
    # the paced records after the warm-up; not the last of each partition, sent on their own after a flush
    measured = sorted(ms for i, ms in latencies.items() if rate * warmup <= i < total - PARTITIONS)
    p50, p99 = measured[len(measured) // 2], measured[min(len(measured) - 1, int(len(measured) * 0.99))]
    print(
        f"produced {produced['records/s']:,.0f} records/s; end-to-end latency over {len(measured):,} records: "
        f"p50 {p50} ms, p99 {p99} ms, max {measured[-1]} ms"
    )
    return {
        "streaming records/s asked": float(rate),
        "streaming records/s produced": round(produced["records/s"], 1),
        "streaming latency p50 ms": float(p50),
        "streaming latency p99 ms": float(p99),
        "streaming latency max ms": float(measured[-1]),
        "streaming records measured": float(len(measured)),
    }


if __name__ == "__main__":
    main()
