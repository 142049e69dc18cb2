"""Joins benchmark: ours vs Quix Streams, on the Kafka-protocol test broker, 4 partitions.

(a) stream-table enrichment: 100,000 customers (a table, keyed by customer id) and 1,000,000 orders keyed
    by customer id; each order gets its customer's tier. Ours ``orders.left_join(customers_table, ...)``;
    Quix ``join_asof(customers, how="left")`` (the latest customer record at or before the order's time).
(b) windowed stream-stream join: 1,000,000 orders and 1,000,000 payments keyed by order id, each payment
    within 5 minutes of its order; pairs within 10 minutes are joined. Ours ``orders.join(payments, ...,
    JoinWindows.of_time_difference_and_grace(10 min, 1 min))`` (window stores kept 21 minutes); Quix
    ``join_interval(payments, how="inner", backward_ms=10 min, forward_ms=10 min, grace_ms=21 min)``.

Both keep state in RocksDB with changelogs, commit every 5 s (both defaults) and write results to a topic.
Each runtime runs in a process of its own (peak RSS is that process's). Throughput counts every input
record (both sides) from the first one processed until the last one is and the application has stopped,
its final commit included; the group join is excluded.

    .venv-bench/bin/python benchmarks/streams_joins_bench.py [--records 1000000] [--customers 100000]
        [--skip-quix] [--only enrich|window]

Needs ``quixstreams`` (``make bench`` builds ``.venv-bench`` with it).
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterable
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import confluent_kafka
import orjson

from streams import JoinWindows, StreamsBuilder
from streams.app import StreamsApp
from streams.log import open_log
from tests.broker import TEST_CLIENT_OPTIONS, TansuBroker

PARTITIONS = 4
BASE_MS = 1_700_000_000_000  # librdkafka sends a timestamp of 0 as "now"
SPAN_MS = 10 * 60 * 1000  # the orders' event times rise evenly over 10 minutes
MINUTE_MS = 60_000
WINDOW = JoinWindows.of_time_difference_and_grace(timedelta(minutes=10), timedelta(minutes=1))
TIERS = ("gold", "silver", "bronze")


def produce(bootstrap: str, topic: str, rows: Iterable[tuple[str, Any, int]]) -> int:
    producer = confluent_kafka.Producer({
        "bootstrap.servers": bootstrap, "linger.ms": 50, "batch.num.messages": 10_000,
        "queue.buffering.max.messages": 500_000, "partitioner": "murmur2_random",
    })  # fmt: skip
    n = 0
    for key, value, ts in rows:
        while True:
            try:
                producer.produce(topic, orjson.dumps(value), key.encode(), timestamp=ts)
                break
            except BufferError:
                producer.poll(0.05)
        n += 1
        if n % 10_000 == 0:
            producer.poll(0)
    producer.flush()
    return n


def customers(n: int) -> Iterable[tuple[str, Any, int]]:
    return ((f"c{i}", {"tier": TIERS[i % 3]}, BASE_MS) for i in range(n))


def orders_by_customer(n: int, customers: int) -> Iterable[tuple[str, Any, int]]:
    return ((f"c{i % customers}", {"order": i, "amount": i % 997}, BASE_MS + 1 + i * SPAN_MS // n) for i in range(n))


def orders_by_id(n: int) -> Iterable[tuple[str, Any, int]]:
    return ((f"o{i}", {"order": i}, BASE_MS + i * SPAN_MS // n) for i in range(n))


def payments(n: int) -> Iterable[tuple[str, Any, int]]:
    rng = random.Random(5)
    return ((f"o{i}", {"amount": i % 997}, BASE_MS + 5 * MINUTE_MS + i * SPAN_MS // n
             + rng.randrange(-5 * MINUTE_MS, 5 * MINUTE_MS)) for i in range(n))  # fmt: skip


def run_ours(url: str, job: str, topics: list[str], out: str, total: int, state_dir: Path) -> dict[str, float]:
    b = StreamsBuilder()
    if job == "enrich":
        table = b.table(topics[0], key=str, value="json", store="customers")
        joined = b.stream(topics[1], key=str, value="json").left_join(
            table, lambda o, c: {**o, "tier": c and c["tier"]})  # fmt: skip
    else:
        joined = b.stream(topics[0], key=str, value="json").join(
            b.stream(topics[1], key=str, value="json"), lambda o, p: {**o, "paid": p["amount"]}, WINDOW)  # fmt: skip
    joined.to(out, key=str, value="json")
    app = StreamsApp(b.build(), f"bench-ours-{uuid.uuid4().hex[:6]}", url, state_dir=state_dir,
                     progress_interval_s=3600)  # fmt: skip
    app.start()
    first = None
    while True:
        processed = app.metrics()["processed"]
        if app.error is not None:
            raise app.error
        if processed and first is None:
            first = time.perf_counter()
        if processed >= total:
            break
        # Fine until the first record (the start mark), then coarser: ``metrics()`` takes the GIL from the
        # stream thread, and a late end mark only counts against us.
        time.sleep(0.005 if first is None else 0.05)
    app.close()  # the final commit
    elapsed = time.perf_counter() - (first or time.perf_counter())
    return {"elapsed": elapsed, "rate": total / elapsed}


def run_quix(bootstrap: str, job: str, topics: list[str], out: str, total: int, state_dir: Path) -> dict[str, float]:
    from quixstreams import Application

    client = {k: int(v) for k, v in TEST_CLIENT_OPTIONS.items()}
    app = Application(
        broker_address=bootstrap, consumer_group=f"bench-quix-{uuid.uuid4().hex[:6]}",
        auto_offset_reset="earliest", state_dir=str(state_dir), loglevel="WARNING",
        consumer_extra_config=dict(client),
    )  # fmt: skip
    left_topic, right_topic = (app.topic(t, key_deserializer="str", value_deserializer="json") for t in topics)
    sink = app.topic(out, key_serializer="str", value_serializer="json")
    seen = 0
    marks: list[float] = []

    def count(value: Any) -> None:
        nonlocal seen
        seen += 1
        if seen == 1:
            marks.append(time.perf_counter())
        if seen == total:
            app.stop()  # run() returns after the final checkpoint

    left = app.dataframe(left_topic).update(count)
    right = app.dataframe(right_topic).update(count)
    if job == "enrich":
        # left = customers, right = orders here: the orders are the join's left side
        joined = right.join_asof(left, how="left", on_merge=lambda o, c: {**o, "tier": c and c["tier"]})
    else:
        joined = left.join_interval(right, how="inner", on_merge=lambda o, p: {**o, "paid": p["amount"]},
                                    grace_ms=21 * MINUTE_MS, backward_ms=10 * MINUTE_MS,
                                    forward_ms=10 * MINUTE_MS)  # fmt: skip
    joined.to_topic(sink)
    app.run()
    elapsed = time.perf_counter() - marks[0]
    return {"elapsed": elapsed, "rate": total / elapsed}


def child(args: argparse.Namespace) -> int:
    """One job in this process: prints its result and this process's peak RSS as one JSON line."""
    logging.basicConfig(level=logging.WARNING)
    topics, state = args.topics.split(","), Path(args.state)
    if args.runtime == "quix":
        result = run_quix(args.bootstrap, args.job, topics, args.out, args.total, state)
    else:
        # The runtime's default session timeout (10 s), not the test suite's 2 s: on a shared 2-core machine a
        # RocksDB write stall can hold the process for longer than 2 s, and the instance would be expelled.
        url = f"kafka://{args.bootstrap}?{urlencode({**TEST_CLIENT_OPTIONS, 'session.timeout.ms': '10000'})}"
        result = run_ours(url, args.job, topics, args.out, args.total, state)
    result["rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(result), flush=True)
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=1_000_000, help="orders (and, for the window join, payments)")
    parser.add_argument("--customers", type=int, default=100_000)
    parser.add_argument("--skip-quix", action="store_true")
    parser.add_argument("--only", choices=["enrich", "window"])
    for hidden in ("--job", "--runtime", "--bootstrap", "--topics", "--out", "--state"):
        parser.add_argument(hidden, help=argparse.SUPPRESS)
    parser.add_argument("--total", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.job:
        return child(args)

    logging.basicConfig(level=logging.WARNING)
    work = Path(tempfile.mkdtemp(prefix="streams-joins-bench-"))
    broker = TansuBroker(work / "broker.log")
    broker.start()
    jobs = [args.only] if args.only else ["enrich", "window"]
    runtimes = ["ours"] + ([] if args.skip_quix else ["quix"])
    labels = {"ours": "schemakit streams", "quix": "Quix Streams"}
    names = {"enrich": "(a) stream-table enrichment (Quix: join_asof, how=left)",
             "window": "(b) windowed stream-stream join, 10 min (Quix: join_interval)"}  # fmt: skip
    results: dict[str, dict[str, dict[str, float]]] = {job: {} for job in jobs}
    try:
        log = open_log(f"kafka://{broker.bootstrap}?{urlencode(TEST_CLIENT_OPTIONS)}")
        # tansu reports only explicitly set topic configs; Quix derives its changelog settings from these.
        config = {"retention.ms": "604800000", "retention.bytes": "-1"}
        inputs = {"enrich": ["bench-customers", "bench-orders-by-customer"],
                  "window": ["bench-orders", "bench-payments"]}  # fmt: skip
        started = time.perf_counter()
        totals = dict.fromkeys(jobs, 0)
        for job in jobs:
            for topic in inputs[job]:
                log.create_topic(topic, PARTITIONS, config=config)
            if job == "enrich":
                rows = [customers(args.customers), orders_by_customer(args.records, args.customers)]
            else:
                rows = [orders_by_id(args.records), payments(args.records)]
            for topic, data in zip(inputs[job], rows, strict=True):
                totals[job] += produce(broker.bootstrap, topic, data)
        print(f"produced the inputs ({totals}) in {time.perf_counter() - started:.1f}s", flush=True)
        for job in jobs:
            for runtime in runtimes:
                out = f"out-{job}-{runtime}"
                log.create_topic(out, PARTITIONS)
                cmd = [sys.executable, __file__, "--job", job, "--runtime", runtime, "--bootstrap", broker.bootstrap,
                       "--topics", ",".join(inputs[job]), "--out", out, "--state", str(work / f"state-{job}-{runtime}"),
                       "--total", str(totals[job])]  # fmt: skip
                done = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True)  # its warnings show
                results[job][runtime] = r = json.loads(done.stdout.strip().splitlines()[-1])
                print(f"{job:7s} {labels[runtime]:20s} {r['elapsed']:7.2f}s {r['rate']:10,.0f} records/s "
                      f"peak RSS {r['rss_mib']:6.0f} MiB", flush=True)  # fmt: skip
        log.close()
    finally:
        broker.stop()
        shutil.rmtree(work, ignore_errors=True)
    print(f"\njoins, {args.records:,} orders, {args.customers:,} customers, {PARTITIONS} partitions, one process each")
    print("| job | runtime | input records | seconds | records/s | vs Quix Streams | peak RSS MiB |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for job in jobs:
        quix = results[job].get("quix", {}).get("rate")
        for runtime, r in results[job].items():
            ratio = f"{r['rate'] / quix:.2f}x" if quix else "-"
            print(f"| {names[job]} | {labels[runtime]} | {totals[job]:,} | {r['elapsed']:.2f} | {r['rate']:,.0f} | "
                  f"{ratio} | {r['rss_mib']:.0f} |")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
