"""Windowed streams benchmark: ours vs Quix Streams, on the Kafka-protocol test broker.

1,000,000 JSON records, 100,000 string keys, 4 partitions, event timestamps rising evenly over 10 minutes.
Two jobs, each run by both runtimes in the same run, one process each (peak RSS is that process's):

(a) tumbling 1-minute count with final results: ours ``windowed_by(TimeWindows.of_size_with_no_grace(1 min))
    .count().suppress(Suppressed.until_window_closes())`` (and, as a second row, the same count with
    ``emit_strategy="on_window_close"``); Quix ``tumbling_window(1 min).count().final()``.
(b) hopping 5-minute windows advancing by 1 minute, count with final results; ours ``advance_by(1 min)`` with
    ``suppress``, Quix ``hopping_window(5 min, 1 min).count().final()``.

Both close windows by the partition's stream time (Quix: ``closing_strategy="partition"``, the Kafka
Streams model; its default closes a key's windows only when that key has a later record), keep state in
RocksDB with a changelog, commit every 5 s (both defaults) and write the final counts to a topic.
Throughput is counted from the first input record processed until the application has stopped after the
last one, its final commit included (caches flushed, state written); the group join is excluded. Each
process's CPU seconds are reported too: on a busy machine they vary less than the wall-clock rates.

    .venv-bench/bin/python benchmarks/streams_windows_bench.py [--records 1000000] [--keys 100000]
        [--skip-quix] [--only tumbling|hopping]

Needs ``quixstreams`` (``make bench`` builds ``.venv-bench`` with it).
"""

from __future__ import annotations

import argparse
import json
import logging
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlencode

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import confluent_kafka
import orjson

from streams import StreamsBuilder, Suppressed, TimeWindows
from streams.app import StreamsApp
from streams.log import open_log
from tests.broker import TEST_CLIENT_OPTIONS, TansuBroker

PARTITIONS = 4
SPAN_MS = 10 * 60 * 1000
BASE_MS = 1_700_000_000_000  # librdkafka sends a timestamp of 0 as "now"
MINUTE = timedelta(minutes=1)


def produce_input(bootstrap: str, topic: str, records: int, keys: int) -> float:
    producer = confluent_kafka.Producer({
        "bootstrap.servers": bootstrap, "linger.ms": 50, "batch.num.messages": 10_000,
        "queue.buffering.max.messages": 500_000, "partitioner": "murmur2_random",
    })  # fmt: skip
    started = time.perf_counter()
    for i in range(records):
        ts = BASE_MS + i * SPAN_MS // records
        while True:
            try:
                producer.produce(topic, orjson.dumps({"n": i}), f"key-{i % keys}".encode(), timestamp=ts)
                break
            except BufferError:
                producer.poll(0.05)
        if i % 10_000 == 0:
            producer.poll(0)
    producer.flush()
    return time.perf_counter() - started


def windows_of(job: str) -> TimeWindows:
    if job == "tumbling":
        return TimeWindows.of_size_with_no_grace(MINUTE)
    return TimeWindows.of_size_with_no_grace(5 * MINUTE).advance_by(MINUTE)


def run_ours(url: str, topic: str, out: str, records: int, state_dir: Path, job: str, emit: str) -> dict[str, float]:
    b = StreamsBuilder()
    windowed = b.stream(topic, key=str, value="json").group_by_key().windowed_by(windows_of(job))
    if emit == "suppress":
        counts = windowed.count(store="counts").suppress(Suppressed.until_window_closes())
    else:
        counts = windowed.count(store="counts", emit_strategy="on_window_close")
    counts.to_stream().to(out, value=int)
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
        if processed >= records:
            break
        time.sleep(0.02)  # metrics() walks every task: polled often, it would take its share of the GIL
    dropped = app.metrics()["dropped_records"]
    app.close()  # the final commit: flushes the caches (and with them the suppressed finals)
    elapsed = time.perf_counter() - (first or time.perf_counter())
    return {"elapsed": elapsed, "rate": records / elapsed, "dropped": dropped}


def run_quix(bootstrap: str, topic: str, out: str, records: int, state_dir: Path, job: str) -> dict[str, float]:
    from quixstreams import Application

    client = {k: int(v) for k, v in TEST_CLIENT_OPTIONS.items()}
    app = Application(
        broker_address=bootstrap, consumer_group=f"bench-quix-{uuid.uuid4().hex[:6]}",
        auto_offset_reset="earliest", state_dir=str(state_dir), loglevel="WARNING",
        consumer_extra_config=dict(client),
    )  # fmt: skip
    source = app.topic(topic, key_deserializer="str", value_deserializer="json")
    sink = app.topic(out, key_serializer="str", value_serializer="json")
    seen = 0
    marks: list[float] = []

    def count(value: dict) -> None:
        nonlocal seen
        seen += 1
        if seen == 1:
            marks.append(time.perf_counter())
        if seen == records:
            app.stop()  # run() returns after the final checkpoint

    sdf = app.dataframe(source)
    sdf = sdf.update(count)
    if job == "tumbling":
        windowed = sdf.tumbling_window(duration_ms=MINUTE)
    else:
        windowed = sdf.hopping_window(duration_ms=5 * MINUTE, step_ms=MINUTE)
    windowed.count().final(closing_strategy="partition").to_topic(sink)
    app.run()
    elapsed = time.perf_counter() - marks[0]
    return {"elapsed": elapsed, "rate": records / elapsed}


def child(args: argparse.Namespace) -> int:
    """One job in this process: prints its result and this process's peak RSS as one JSON line."""
    logging.basicConfig(level=logging.WARNING)
    state = Path(args.state)
    if args.runtime == "quix":
        result = run_quix(args.bootstrap, args.topic, args.out, args.records, state, args.job)
    else:
        url = f"kafka://{args.bootstrap}?{urlencode(TEST_CLIENT_OPTIONS)}"
        result = run_ours(url, args.topic, args.out, args.records, state, args.job, args.runtime)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    result["rss_mib"] = usage.ru_maxrss / 1024
    result["cpu_s"] = usage.ru_utime + usage.ru_stime  # the whole process: less sensitive to a busy machine
    print(json.dumps(result), flush=True)
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=100_000)
    parser.add_argument("--skip-quix", action="store_true")
    parser.add_argument("--only", choices=["tumbling", "hopping"])
    parser.add_argument("--job", help=argparse.SUPPRESS)
    parser.add_argument("--runtime", help=argparse.SUPPRESS)
    parser.add_argument("--bootstrap", help=argparse.SUPPRESS)
    parser.add_argument("--topic", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    parser.add_argument("--state", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.job:
        return child(args)

    logging.basicConfig(level=logging.WARNING)
    work = Path(tempfile.mkdtemp(prefix="streams-windows-bench-"))
    broker = TansuBroker(work / "broker.log")
    broker.start()
    jobs = [args.only] if args.only else ["tumbling", "hopping"]
    runtimes = ["suppress", "emit-final"] + ([] if args.skip_quix else ["quix"])
    labels = {"suppress": "schemakit streams (suppress until_window_closes)",
              "emit-final": "schemakit streams (emit_strategy on_window_close)",
              "quix": "Quix Streams (final, closing_strategy=partition)"}  # fmt: skip
    results: dict[str, dict[str, dict[str, float]]] = {job: {} for job in jobs}
    try:
        log = open_log(f"kafka://{broker.bootstrap}?{urlencode(TEST_CLIENT_OPTIONS)}")
        topic = "bench-clicks"
        # tansu reports only explicitly set topic configs; Quix derives its changelog settings from these.
        log.create_topic(topic, PARTITIONS, config={"retention.ms": "604800000", "retention.bytes": "-1"})
        seconds = produce_input(broker.bootstrap, topic, args.records, args.keys)
        print(f"produced {args.records:,} records ({args.keys:,} keys, {PARTITIONS} partitions, event time "
              f"over {SPAN_MS // 60000} minutes) in {seconds:.1f}s", flush=True)  # fmt: skip
        for job in jobs:
            for runtime in runtimes:
                out = f"out-{job}-{runtime}"
                log.create_topic(out, PARTITIONS)
                cmd = [sys.executable, __file__, "--job", job, "--runtime", runtime, "--bootstrap", broker.bootstrap,
                       "--topic", topic, "--out", out, "--state", str(work / f"state-{job}-{runtime}"),
                       "--records", str(args.records)]  # fmt: skip
                done = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True)  # its warnings show
                results[job][runtime] = json.loads(done.stdout.strip().splitlines()[-1])
                r = results[job][runtime]
                print(f"{job:8s} {labels[runtime]:52s} {r['elapsed']:7.2f}s {r['rate']:10,.0f} records/s "
                      f"peak RSS {r['rss_mib']:6.0f} MiB, {r['cpu_s']:.1f} s CPU", flush=True)  # fmt: skip
        log.close()
    finally:
        broker.stop()
        shutil.rmtree(work, ignore_errors=True)
    names = {"tumbling": "(a) tumbling 1 min, final results", "hopping": "(b) hopping 5 min / 1 min, final results"}
    print(f"\nwindowed count, {args.records:,} records, {args.keys:,} keys, {PARTITIONS} partitions, one process each")
    print("| job | runtime | seconds | records/s | vs Quix Streams | CPU s | Quix CPU / ours | peak RSS MiB |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for job in jobs:
        quix = results[job].get("quix", {})
        for runtime, r in results[job].items():
            ratio = f"{r['rate'] / quix['rate']:.2f}x" if quix else "-"
            cpu_ratio = f"{quix['cpu_s'] / r['cpu_s']:.2f}x" if quix else "-"
            print(f"| {names[job]} | {labels[runtime]} | {r['elapsed']:.2f} | {r['rate']:,.0f} | {ratio} | "
                  f"{r['cpu_s']:.1f} | {cpu_ratio} | {r['rss_mib']:.0f} |")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
