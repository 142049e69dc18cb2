"""Reading a topic of registry-framed Avro records to JSON lines: ``schemakit topic consume`` against a plain
confluent-kafka consumer loop with confluent-kafka's ``AvroDeserializer``.

    .venv/bin/python benchmarks/console_consume.py [--records 100000] [--rounds 2] [--json PATH]

Workload: ``--records`` records of the eight-field order schema (``tests/support/schemas.py``: string, long,
double, boolean, nullable string, enum, array of ints, nested record), string keys, written in Confluent's wire
format to a 4-partition topic of the test broker (tansu), with a registry of ours on a SQLite log beside it.
Each round reads the whole topic from the beginning three ways, in turn:

- ours: ``schemakit topic consume TOPIC --registry URL -q`` in this process (the command's own code: our log's
  consumer, our deserializers picked by the writer schema's type, one JSON line a record with every member);
- peer, JSON lines: a confluent-kafka ``Consumer`` assigned every partition from the beginning, decoding with
  ``AvroDeserializer`` and writing the same JSON line (``json.dumps``) per record;
- peer, decode only: the same loop without writing anything (the floor of a consumer that decodes).

The lines go to a sink that counts them (each run must see every record). The rates (records/s) include the
consumer's start (assignment, first fetch); each side keeps its best round. The ratio is ours / peer.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import confluent_kafka  # noqa: E402
from confluent_kafka.schema_registry import SchemaRegistryClient  # noqa: E402
from confluent_kafka.schema_registry.avro import AvroDeserializer as CkAvroDeserializer  # noqa: E402
from confluent_kafka.serialization import MessageField, SerializationContext  # noqa: E402
from own_registry import own_registry  # noqa: E402  (benchmarks/ is on sys.path when run as a script)
from results_file import BenchRun, Case, Comparison, add_json_option  # noqa: E402
from streams_harness import PARTITIONS, bench_broker, kafka_url  # noqa: E402

from schemakit.cli import main as schemakit_main  # noqa: E402
from serdes import AvroSerializer, RegistryClient  # noqa: E402
from tests.support.schemas import ORDER_AVRO, ORDER_RECORD  # noqa: E402


class LineSink(io.TextIOBase):
    """Counts the lines written to it and keeps none."""

    def __init__(self) -> None:
        self.lines = 0

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        self.lines += text.count("\n")
        return len(text)


def fill(bootstrap: str, registry: str, topic: str, records: int) -> None:
    with RegistryClient(registry) as client:
        serialize = AvroSerializer(client, ORDER_AVRO)
        ctx = SerializationContext(topic, MessageField.VALUE)
        producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "linger.ms": 50})
        for i in range(records):
            value = serialize({**ORDER_RECORD, "id": f"o-{i}", "qty": i}, ctx)
            while True:
                try:
                    producer.produce(topic, value, f"k-{i}".encode())
                    break
                except BufferError:
                    producer.poll(0.05)
        producer.flush()


def ours(url: str, registry: str, topic: str) -> int:
    sink = LineSink()
    with contextlib.redirect_stdout(sink):  # type: ignore[type-var]
        code = schemakit_main(["topic", "consume", topic, "--log", url, "--registry", registry, "-q"])
    if code != 0:
        raise SystemExit(f"schemakit topic consume exited with {code}")
    return sink.lines


def peer(bootstrap: str, registry: str, topic: str, records: int, write: bool) -> int:
    deserialize = CkAvroDeserializer(SchemaRegistryClient({"url": registry}))
    consumer = confluent_kafka.Consumer(
        {"bootstrap.servers": bootstrap, "group.id": f"bench-{uuid.uuid4().hex}", "enable.auto.commit": False}
    )
    consumer.assign(
        [confluent_kafka.TopicPartition(topic, p, confluent_kafka.OFFSET_BEGINNING) for p in range(PARTITIONS)]
    )
    sink = LineSink()
    seen = 0
    try:
        while seen < records:
            for msg in consumer.consume(500, 1.0):
                if msg.error() is not None:
                    continue
                value = deserialize(msg.value(), SerializationContext(topic, MessageField.VALUE))
                seen += 1
                if write:
                    key = msg.key()
                    line: dict[str, Any] = {
                        "topic": msg.topic(),
                        "partition": msg.partition(),
                        "offset": msg.offset(),
                        "timestamp": msg.timestamp()[1],
                        "key": key.decode() if key is not None else None,
                        "value": value,
                        "headers": dict(msg.headers() or ()),
                        "schema_id": int.from_bytes(msg.value()[1:5], "big"),
                    }
                    sink.write(json.dumps(line) + "\n")
    finally:
        consumer.close()
    return sink.lines if write else seen


def timed(run: Any, records: int) -> float:
    started = time.perf_counter()
    seen = run()
    elapsed = time.perf_counter() - started
    if seen != records:
        raise SystemExit(f"read {seen} records, expected {records}")
    return records / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=2)
    add_json_option(parser)
    args = parser.parse_args()
    run = BenchRun(__file__, vars(args))
    topic = f"console-{uuid.uuid4().hex[:8]}"
    with own_registry() as registry, bench_broker("console-consume-") as broker:
        broker.log.create_topic(topic, PARTITIONS)
        fill(broker.bootstrap, registry, topic, args.records)
        url = kafka_url(broker.bootstrap)
        best = {"ours": 0.0, "peer": 0.0, "peer decode only": 0.0}
        for round_no in range(args.rounds):
            rates = {
                "ours": timed(lambda: ours(url, registry, topic), args.records),
                "peer": timed(lambda: peer(broker.bootstrap, registry, topic, args.records, True), args.records),
                "peer decode only": timed(
                    lambda: peer(broker.bootstrap, registry, topic, args.records, False), args.records
                ),
            }
            print(f"round {round_no + 1}: " + ", ".join(f"{k} {v:,.0f}/s" for k, v in rates.items()), flush=True)
            best = {k: max(best[k], rates[k]) for k in best}
    print(
        f"\nbest of {args.rounds}, {args.records:,} Avro records: schemakit topic consume {best['ours']:,.0f}/s; "
        f"confluent-kafka + AvroDeserializer + json.dumps {best['peer']:,.0f}/s "
        f"(ratio {best['ours'] / best['peer']:.2f}); decode only {best['peer decode only']:,.0f}/s "
        f"(ratio {best['ours'] / best['peer decode only']:.2f})"
    )
    run.write(
        args.json,
        [
            Comparison(
                "console consume, Avro to JSON lines",
                "records/s",
                "schemakit topic consume",
                "confluent-kafka Consumer + AvroDeserializer",
                [
                    Case("decode + JSON line per record", best["ours"], best["peer"]),
                    Case("ours (JSON lines) vs peer decode only", best["ours"], best["peer decode only"]),
                ],
            )
        ],
    )


if __name__ == "__main__":
    main()
