"""Joins benchmark: ours vs Quix Streams, on the Kafka-protocol test broker, 4 partitions.

(a) stream-table enrichment: 100,000 customers (a table, keyed by customer id) and 1,000,000 orders keyed
    by customer id; each order gets its customer's tier. Ours ``orders.left_join(customers_table, ...)``;
    Quix ``join_asof(customers, how="left")`` (the latest customer record at or before the order's time).
(b) windowed stream-stream join: 1,000,000 orders and 1,000,000 payments keyed by order id, each payment
    within 5 minutes of its order; pairs within 10 minutes are joined. Ours ``orders.join(payments, ...,
    JoinWindows.of_time_difference_and_grace(10 min, 1 min))`` (window stores kept 21 minutes); Quix
    ``join_interval(payments, how="inner", backward_ms=10 min, forward_ms=10 min, grace_ms=21 min)``.
(c) versioned enrichment: 100,000 price versions (10 per product, every minute, about 10% written out of
    order) and 1,000,000 orders keyed by product, about 10% of them late (up to 2 minutes); each order gets
    its product's price as of the order's time. Ours ``orders.left_join(prices)`` with the price table in a
    versioned store (``VersionedStoreSpec``, 15 minutes of history); Quix ``join_asof(prices, how="left",
    grace_ms=15 min)``, which keeps each key's versions for its grace and looks them up the same way.

Both keep state in RocksDB with changelogs, commit every 5 s (both defaults) and write results to a topic.
Each runtime runs in a process of its own (peak RSS is that process's). Throughput counts every input
record (both sides) from the first one processed until the last one is and the application has stopped,
its final commit included; the group join is excluded.

    .venv-bench/bin/python benchmarks/streams_joins_bench.py [--records 1000000] [--customers 100000]
        [--prices 100000] [--scale 1.0] [--skip-quix] [--only enrich|window|versioned]

``--scale`` multiplies the orders, customers and prices (a smaller run on a busy machine).

Needs ``quixstreams`` (``make bench`` builds ``.venv-bench`` with it).
"""

from __future__ import annotations

import random
import sys
import time
from collections.abc import Iterable
from datetime import timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import streams_harness as harness
from results_file import BenchRun, Case, Comparison

from streams import JoinWindows, StreamsBuilder, VersionedStoreSpec

SPAN_MS = 10 * 60 * 1000  # the orders' event times rise evenly over 10 minutes
MINUTE_MS = 60_000
WINDOW = JoinWindows.of_time_difference_and_grace(timedelta(minutes=10), timedelta(minutes=1))
TIERS = ("gold", "silver", "bronze")
JOBS = ("enrich", "window", "versioned")
HISTORY_MS = 15 * MINUTE_MS  # the versioned job's history retention (Quix: join_asof's grace_ms)
VERSIONS = 10  # price versions per product


def customers(n: int) -> Iterable[harness.Row]:
    return ((f"c{i}", {"tier": TIERS[i % 3]}, harness.BASE_MS) for i in range(n))


def orders_by_customer(n: int, customers: int) -> Iterable[harness.Row]:
    return (
        (f"c{i % customers}", {"order": i, "amount": i % 997}, harness.BASE_MS + 1 + i * SPAN_MS // n) for i in range(n)
    )


def orders_by_id(n: int) -> Iterable[harness.Row]:
    return ((f"o{i}", {"order": i}, harness.BASE_MS + i * SPAN_MS // n) for i in range(n))


def payments(n: int) -> Iterable[harness.Row]:
    rng = random.Random(5)
    return (
        (
            f"o{i}",
            {"amount": i % 997},
            harness.BASE_MS + 5 * MINUTE_MS + i * SPAN_MS // n + rng.randrange(-5 * MINUTE_MS, 5 * MINUTE_MS),
        )
        for i in range(n)
    )


def prices(n: int) -> Iterable[harness.Row]:
    """``n`` price versions: ``VERSIONS`` per product, a minute apart, about 10% swapped with the next one."""
    rng = random.Random(17)
    products = max(n // VERSIONS, 1)
    rows = [
        (f"p{i % products}", {"cents": rng.randrange(100, 10_000)}, harness.BASE_MS + (i // products) * MINUTE_MS)
        for i in range(n)
    ]
    for i in range(len(rows) - 1):
        if rng.random() < 0.1:
            rows[i], rows[i + 1] = rows[i + 1], rows[i]
    return rows


def orders_by_product(n: int, price_versions: int) -> Iterable[harness.Row]:
    """``n`` orders over the prices' time span, about 10% of them up to 2 minutes late."""
    rng = random.Random(19)
    products = max(price_versions // VERSIONS, 1)
    span = VERSIONS * MINUTE_MS
    for i in range(n):
        at = harness.BASE_MS + 1 + i * span // n
        if rng.random() < 0.1:
            at = max(harness.BASE_MS, at - rng.randrange(2 * MINUTE_MS))
        yield f"p{rng.randrange(products)}", {"order": i}, at


def run_ours(url: str, job: str, topics: list[str], out: str, total: int, state_dir: Path) -> harness.Result:
    b = StreamsBuilder()
    if job == "enrich":
        table = b.table(topics[0], key=str, value="json", store="customers")
        joined = b.stream(topics[1], key=str, value="json").left_join(
            table, lambda o, c: {**o, "tier": c and c["tier"]}
        )
    elif job == "versioned":
        spec = VersionedStoreSpec("prices", history_retention=HISTORY_MS)
        versioned = b.table(topics[0], key=str, value="json", store=spec)
        joined = b.stream(topics[1], key=str, value="json").left_join(
            versioned, lambda o, p: {**o, "cents": p and p["cents"]}
        )
    else:
        joined = b.stream(topics[0], key=str, value="json").join(
            b.stream(topics[1], key=str, value="json"), lambda o, p: {**o, "paid": p["amount"]}, WINDOW
        )
    joined.to(out, key=str, value="json")
    # Fine until the first record (the start mark), then coarser; the closing (timed) is the final commit.
    app = harness.ours_app(b.build(), url, state_dir)
    elapsed, _ = harness.time_ours(app, total, poll_s=0.005, poll_after_first_s=0.05)
    return harness.rate(total, elapsed)


def run_quix(bootstrap: str, job: str, topics: list[str], out: str, total: int, state_dir: Path) -> harness.Result:
    app = harness.quix_app(bootstrap, state_dir)
    left_topic, right_topic = (app.topic(t, key_deserializer="str", value_deserializer="json") for t in topics)
    sink = app.topic(out, key_serializer="str", value_serializer="json")
    clock = harness.QuixClock(app, total)
    left = app.dataframe(left_topic).update(clock)
    right = app.dataframe(right_topic).update(clock)
    if job == "enrich":
        # left = customers, right = orders here: the orders are the join's left side
        joined = right.join_asof(left, how="left", on_merge=lambda o, c: {**o, "tier": c and c["tier"]})
    elif job == "versioned":
        # left = prices, right = orders
        joined = right.join_asof(
            left, how="left", on_merge=lambda o, p: {**o, "cents": p and p["cents"]}, grace_ms=HISTORY_MS
        )
    else:
        joined = left.join_interval(
            right,
            how="inner",
            on_merge=lambda o, p: {**o, "paid": p["amount"]},
            grace_ms=21 * MINUTE_MS,
            backward_ms=10 * MINUTE_MS,
            forward_ms=10 * MINUTE_MS,
        )
    joined.to_topic(sink)
    return harness.rate(total, clock.run())


def run_job(job: harness.ChildJob) -> harness.Result:
    if job.runtime == "quix":
        return run_quix(job.bootstrap, job.job, job.topics, job.out, job.total, job.state)
    # The runtime's default session timeout (10 s), not the test suite's 2 s: on a shared 2-core machine a
    # RocksDB write stall can hold the process for longer than 2 s, and the instance would be expelled.
    url = harness.kafka_url(job.bootstrap, **{"session.timeout.ms": "10000"})
    return run_ours(url, job.job, job.topics, job.out, job.total, job.state)


def main() -> int:
    parser = harness.bench_parser(__doc__, JOBS, records_help="orders (and, for the window join, payments)")
    parser.add_argument("--customers", type=int, default=100_000)
    parser.add_argument("--prices", type=int, default=100_000, help="price versions of the versioned job")
    parser.add_argument("--scale", type=float, default=1.0, help="multiplies --records, --customers and --prices")
    args = harness.parse_job_args(parser, run_job)
    if args.scale != 1.0:
        args.records, args.customers, args.prices = (
            max(int(n * args.scale), 1) for n in (args.records, args.customers, args.prices)
        )
    run = BenchRun(__file__, vars(args))
    jobs = [args.only] if args.only else list(JOBS)
    labels = {"ours": "schemakit streams", "quix": "Quix Streams"}
    if args.skip_quix:
        del labels["quix"]
    names = {
        "enrich": "(a) stream-table enrichment (Quix: join_asof, how=left)",
        "window": "(b) windowed stream-stream join, 10 min (Quix: join_interval)",
        "versioned": "(c) versioned enrichment, as of each order's time (Quix: join_asof, how=left)",
    }
    topics_of = {
        "enrich": ["bench-customers", "bench-orders-by-customer"],
        "window": ["bench-orders", "bench-payments"],
        "versioned": ["bench-prices", "bench-orders-by-product"],
    }
    inputs = {job: topics_of[job] for job in jobs}
    with harness.bench_broker("streams-joins-bench-") as bench:
        started = time.perf_counter()
        totals = dict.fromkeys(jobs, 0)
        for job, topics in inputs.items():
            if job == "enrich":
                feeds = [customers(args.customers), orders_by_customer(args.records, args.customers)]
            elif job == "versioned":
                feeds = [prices(args.prices), orders_by_product(args.records, args.prices)]
            else:
                feeds = [orders_by_id(args.records), payments(args.records)]
            for topic, data in zip(topics, feeds, strict=True):
                bench.create_input(topic)
                totals[job] += harness.produce(bench.bootstrap, topic, data)
        print(f"produced the inputs ({totals}) in {time.perf_counter() - started:.1f}s", flush=True)
        results = harness.run_jobs(__file__, bench, inputs, totals, labels)
    print(
        f"\njoins, {args.records:,} orders, {args.customers:,} customers, {args.prices:,} prices, "
        f"{harness.PARTITIONS} partitions, "
        "one process each"
    )
    rows: list[list[Any]] = []
    for job in jobs:
        quix = results[job].get("quix", {}).get("rate")
        for runtime, r in results[job].items():
            rows.append(
                [
                    names[job],
                    labels[runtime],
                    f"{totals[job]:,}",
                    f"{r['elapsed']:.2f}",
                    f"{r['rate']:,.0f}",
                    harness.ratio(r["rate"], quix),
                    f"{r['rss_mib']:.0f}",
                ]
            )
    header = ["job", "runtime", "input records", "seconds", "records/s", "vs Quix Streams", "peak RSS MiB"]
    harness.print_table(header, rows, text_columns=2)
    cases = [
        Case(
            names[job],
            results[job]["ours"]["rate"],
            results[job].get("quix", {}).get("rate"),
            {
                "input records": totals[job],
                "ours peak RSS MiB": results[job]["ours"]["rss_mib"],
                "peer peak RSS MiB": results[job].get("quix", {}).get("rss_mib"),
            },
        )
        for job in jobs
    ]
    run.write(args.json, [Comparison("joins", "records/s", "schemakit streams", "Quix Streams", cases)])
    return 0


if __name__ == "__main__":
    sys.exit(main())
