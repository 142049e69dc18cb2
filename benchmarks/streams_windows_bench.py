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

import sys
import time
from collections.abc import Iterable
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import streams_harness as harness
from results_file import BenchRun, Case, Comparison

from streams import StreamsBuilder, Suppressed, TimeWindows

SPAN_MS = 10 * 60 * 1000
MINUTE = timedelta(minutes=1)
JOBS = ("tumbling", "hopping")


def clicks(records: int, keys: int) -> Iterable[harness.Row]:
    return ((f"key-{i % keys}", {"n": i}, harness.BASE_MS + i * SPAN_MS // records) for i in range(records))


def windows_of(job: str) -> TimeWindows:
    if job == "tumbling":
        return TimeWindows.of_size_with_no_grace(MINUTE)
    return TimeWindows.of_size_with_no_grace(5 * MINUTE).advance_by(MINUTE)


def run_ours(url: str, topic: str, out: str, records: int, state_dir: Path, job: str, emit: str) -> harness.Result:
    b = StreamsBuilder()
    windowed = b.stream(topic, key=str, value="json").group_by_key().windowed_by(windows_of(job))
    if emit == "suppress":
        counts = windowed.count(store="counts").suppress(Suppressed.until_window_closes())
    else:
        counts = windowed.count(store="counts", emit_strategy="on_window_close")
    counts.to_stream().to(out, value=int)
    # Every 20 ms: metrics() walks every task, polled often it would take its share of the GIL. The closing
    # (timed) is the final commit: it flushes the caches, and with them the suppressed finals.
    elapsed, metrics = harness.time_ours(harness.ours_app(b.build(), url, state_dir), records, poll_s=0.02)
    return {**harness.rate(records, elapsed), "dropped": metrics["dropped_records"]}


def run_quix(bootstrap: str, topic: str, out: str, records: int, state_dir: Path, job: str) -> harness.Result:
    app = harness.quix_app(bootstrap, state_dir)
    source = app.topic(topic, key_deserializer="str", value_deserializer="json")
    sink = app.topic(out, key_serializer="str", value_serializer="json")
    clock = harness.QuixClock(app, records)
    sdf = app.dataframe(source).update(clock)
    if job == "tumbling":
        windowed = sdf.tumbling_window(duration_ms=MINUTE)
    else:
        windowed = sdf.hopping_window(duration_ms=5 * MINUTE, step_ms=MINUTE)
    windowed.count().final(closing_strategy="partition").to_topic(sink)
    return harness.rate(records, clock.run())


def run_job(job: harness.ChildJob) -> harness.Result:
    [topic] = job.topics
    if job.runtime == "quix":
        return run_quix(job.bootstrap, topic, job.out, job.total, job.state, job.job)
    return run_ours(harness.kafka_url(job.bootstrap), topic, job.out, job.total, job.state, job.job, job.runtime)


def main() -> int:
    parser = harness.bench_parser(__doc__, only=JOBS)
    parser.add_argument("--keys", type=int, default=100_000)
    args = harness.parse_job_args(parser, run_job)
    run = BenchRun(__file__, vars(args))
    jobs = [args.only] if args.only else list(JOBS)
    labels = {
        "suppress": "schemakit streams (suppress until_window_closes)",
        "emit-final": "schemakit streams (emit_strategy on_window_close)",
        "quix": "Quix Streams (final, closing_strategy=partition)",
    }
    if args.skip_quix:
        del labels["quix"]
    with harness.bench_broker("streams-windows-bench-") as bench:
        topic = "bench-clicks"
        bench.create_input(topic)
        started = time.perf_counter()
        harness.produce(bench.bootstrap, topic, clicks(args.records, args.keys))
        print(
            f"produced {args.records:,} records ({args.keys:,} keys, {harness.PARTITIONS} partitions, event time "
            f"over {SPAN_MS // 60000} minutes) in {time.perf_counter() - started:.1f}s",
            flush=True,
        )
        inputs = {job: [topic] for job in jobs}
        results = harness.run_jobs(__file__, bench, inputs, dict.fromkeys(jobs, args.records), labels)
    names = {"tumbling": "(a) tumbling 1 min, final results", "hopping": "(b) hopping 5 min / 1 min, final results"}
    print(
        f"\nwindowed count, {args.records:,} records, {args.keys:,} keys, {harness.PARTITIONS} partitions, "
        "one process each"
    )
    rows = []
    for job in jobs:
        quix = results[job].get("quix", {})
        for runtime, r in results[job].items():
            rows.append(
                [
                    names[job],
                    labels[runtime],
                    f"{r['elapsed']:.2f}",
                    f"{r['rate']:,.0f}",
                    harness.ratio(r["rate"], quix.get("rate")),
                    f"{r['cpu_s']:.1f}",
                    harness.ratio(quix.get("cpu_s"), r["cpu_s"]),
                    f"{r['rss_mib']:.0f}",
                ]
            )
    header = ["job", "runtime", "seconds", "records/s", "vs Quix Streams", "CPU s", "Quix CPU / ours", "peak RSS MiB"]
    harness.print_table(header, rows, text_columns=2)
    cases = [
        Case(
            f"{names[job]}: {labels[runtime]}",
            r["rate"],
            results[job].get("quix", {}).get("rate"),
            {
                "ours CPU s": r["cpu_s"],
                "peer CPU s": results[job].get("quix", {}).get("cpu_s"),
                "ours peak RSS MiB": r["rss_mib"],
                "peer peak RSS MiB": results[job].get("quix", {}).get("rss_mib"),
            },
        )
        for job in jobs
        for runtime, r in results[job].items()
        if runtime != "quix"
    ]
    run.write(args.json, [Comparison("windowed count", "records/s", "schemakit streams", "Quix Streams", cases)])
    return 0


if __name__ == "__main__":
    sys.exit(main())
