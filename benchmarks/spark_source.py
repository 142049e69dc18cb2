"""Reading registry-framed Avro from a topic with Spark's ``schemakit`` data source, against the loop a Python user
writes without schemakit: a single-process confluent-kafka Consumer with confluent-kafka's ``AvroDeserializer``.

    .venv/bin/python benchmarks/spark_source.py [--records 100000] [--reps 1] [--kafka host:port] [--json PATH]

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
Python worker, starting tasks) weighs on small sizes: the ratios grow with ``--records``. The streaming latency
figure of the issue is not measured here.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from own_registry import own_registry  # noqa: E402  (benchmarks/ is on sys.path when run as a script)
from results_file import BenchRun, Case, Comparison, add_json_option  # noqa: E402

PARTITIONS = 4
ORDER = {
    "type": "record",
    "name": "Order",
    "namespace": "bench",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "customer", "type": "string"},
        {"name": "amount", "type": "double"},
        {"name": "paid", "type": "boolean"},
        {"name": "note", "type": ["null", "string"], "default": None},
    ],
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
            for msg in consumer.consume(1000, 5.0):
                if msg.error() is None:
                    value = deserializer(msg.value(), context)
                    count += 1
                    total += value["amount"]
    finally:
        consumer.close()
    return count, total


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=100_000)
    ap.add_argument("--reps", type=int, default=1, help="timed rounds per method (after one warm-up)")
    ap.add_argument("--kafka", help="bootstrap of a running Kafka (default: SCHEMAKIT_TEST_KAFKA, else tansu here)")
    add_json_option(ap)
    args = ap.parse_args()
    bench_run = BenchRun(__file__, vars(args))
    if args.kafka:
        os.environ["SCHEMAKIT_TEST_KAFKA"] = args.kafka
    from tests.support.broker import running_broker

    with own_registry() as registry, running_broker(Path(tempfile.mkdtemp()) / "broker.log") as bootstrap:
        results = run(bootstrap, registry, args.records, args.reps)
    peer_name = "(a) confluent-kafka consumer + AvroDeserializer"
    cases = [
        Case(name, best, results[peer_name][0], {"peer case": peer_name})
        for name, (best, _) in results.items()
        if name != peer_name
    ]
    bench_run.write(
        args.json,
        [Comparison("read + decode + count", "rows/s, best round", "schemakit data source", "confluent-kafka", cases)],
        {f"{name}: median rows/s": median for name, (_, median) in results.items()},
    )


def run(bootstrap: str, registry: str, n: int, reps: int) -> dict[str, tuple[float, float]]:
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import functions as F

    from serdes import AvroSerializer, RegistryClient
    from serdes.spark import from_registry, spark_session
    from serdes.spark.build_jar import JAR

    topic, subject = f"bench-orders-{os.getpid()}", f"bench-orders-{os.getpid()}-value"
    log_url = f"kafka://{bootstrap}"
    print(f"producing {n:,} records to {PARTITIONS} partitions of {topic}...", flush=True)
    serializer = AvroSerializer(RegistryClient(registry), ORDER, subject=subject)
    orders = [order(i) for i in range(n)]
    produce(log_url, topic, [serializer(o) for o in orders])
    want = (n, float(sum(o["amount"] for o in orders)))
    del orders

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

    def spark_read(engine: str) -> Callable[[], tuple[int, float]]:
        def once() -> tuple[int, float]:
            df = spark.read.format("schemakit").option("log", log_url).option("subscribe", topic).load()
            decoded = df.select(from_registry("value", registry, subject=subject, engine=engine).alias("o"))
            row = decoded.agg(F.count("o"), F.sum("o.amount")).collect()[0]
            return row[0], row[1]

        return once

    methods: dict[str, Callable[[], tuple[int, float]]] = {
        "(a) confluent-kafka consumer + AvroDeserializer": lambda: peer_loop(bootstrap, registry, topic, n),
    }
    if JAR.exists():
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
    spark.stop()
    results = {name: (n / min(t), n / statistics.median(t)) for name, t in times.items()}
    peer = results["(a) confluent-kafka consumer + AvroDeserializer"][0]
    print(f"{'method':58} {'best rows/s':>12} {'median':>10} {'vs (a)':>7}")
    for name, (best, median) in results.items():
        print(f"{name:58} {best:12,.0f} {median:10,.0f} {best / peer:6.2f}x")
    return results


if __name__ == "__main__":
    main()
