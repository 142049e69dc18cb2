"""Streams benchmark: a stateful count by key, ours vs Quix Streams, on the Kafka-protocol test broker.

Both read the same topic (1,000,000 JSON records, 4 partitions, string keys), keep a count per key in
RocksDB with a changelog topic, commit every 5 s (both defaults) and write counts to an output topic.
Variants of ours:
- ``cached``: the default, Kafka Streams' record cache (one output and changelog record per key per commit);
- ``uncached``: ``count(cache=False)``, one output record per input record, as Quix does;
- ``exactly_once_v2``: the default (cached) count with ``processing_guarantee="exactly_once_v2"``, beside
  Quix Streams with ``processing_guarantee="exactly-once"`` (targets: it keeps >= 70% of our
  at-least-once throughput and >= 3x Quix's exactly-once).
Throughput is counted from the first to the last input record processed (group join excluded for both).
Then restore: a fresh state directory makes our app rebuild the store from its changelog.

    .venv-bench/bin/python benchmarks/streams_bench.py [--records 1000000] [--keys 100000] [--skip-quix]

``--records``: input records; ``--keys``: distinct keys among them; ``--skip-quix``: ours only (runs in ``.venv``
too). Needs ``quixstreams`` for the comparison (``make bench`` builds ``.venv-bench`` with it).
"""

from __future__ import annotations

import logging
import shutil
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import streams_harness as harness
from results_file import BenchRun, Case, Comparison, add_json_option


def input_rows(records: int, keys: int) -> Iterable[harness.Row]:
    return ((f"key-{i % keys}", {"n": i}, 0) for i in range(records))


def run_ours(
    url: str, topic: str, out: str, records: int, state_dir: Path, cache: bool, guarantee: str = "at_least_once"
) -> tuple[harness.Result, str]:
    """The result, and the application id (the restore reuses its changelog)."""
    app = harness.ours_app(harness.count_by_key(topic, out, cache), url, state_dir, processing_guarantee=guarantee)
    # Timed to the last record processed, before the closing (the final commit).
    elapsed, _ = harness.time_ours(app, records, poll_s=0.005, time_close=False)
    return harness.rate(records, elapsed), app.application_id


def restore_ours(url: str, topic: str, out: str, app_id: str, state_dir: Path) -> dict[str, float]:
    """A fresh state directory: every store restores from its changelog before processing."""
    shutil.rmtree(state_dir, ignore_errors=True)
    app = harness.ours_app(harness.count_by_key(topic, out), url, state_dir, app_id)
    app.start()
    app.wait_until(lambda a: len(a.tasks()) == harness.PARTITIONS, timeout=600)
    m = app.metrics()
    app.close()
    restored = m["restored"].get("counts", 0)
    return {"records": restored, "seconds": m["restore_seconds"], "rate": restored / max(m["restore_seconds"], 1e-9)}


def run_quix(
    bootstrap: str,
    topic: str,
    out: str,
    records: int,
    state_dir: Path,
    guarantee: harness.QuixGuarantee = "at-least-once",
) -> harness.Result:
    app = harness.quix_app(bootstrap, state_dir, guarantee)
    source = app.topic(topic, key_deserializer="str", value_deserializer="json")
    sink = app.topic(out, key_serializer="str", value_serializer="int")
    clock = harness.QuixClock(app, records)

    def count(value: dict, state: Any) -> int:
        total = state.get("count", 0) + 1
        state.set("count", total)
        clock()
        return total

    app.dataframe(source).apply(count, stateful=True).to_topic(sink)
    # Timed to the last record counted, before the final checkpoint, as ours.
    return harness.rate(records, clock.run(time_stop=False))


def main() -> int:
    parser = harness.bench_parser(__doc__)
    parser.add_argument("--keys", type=int, default=100_000)
    add_json_option(parser)
    args = parser.parse_args()
    run = BenchRun(__file__, vars(args))
    logging.basicConfig(level=logging.WARNING)
    with harness.bench_broker("streams-bench-") as bench:
        topic = "bench-input"
        bench.create_input(topic)
        for name in ("out-ours-cached", "out-ours-uncached", "out-ours-eos", "out-quix", "out-quix-eos"):
            bench.create_output(name)
        started = time.perf_counter()
        harness.produce(bench.bootstrap, topic, input_rows(args.records, args.keys))
        print(
            f"produced {args.records:,} records ({args.keys:,} keys, {harness.PARTITIONS} partitions) in "
            f"{time.perf_counter() - started:.1f}s"
        )
        results: dict[str, harness.Result] = {}
        url, work = bench.url, bench.work
        results["ours (cached, default)"], app_id = run_ours(
            url, topic, "out-ours-cached", args.records, work / "s1", True
        )
        results["ours (cache=False)"], _ = run_ours(url, topic, "out-ours-uncached", args.records, work / "s2", False)
        results["ours (exactly_once_v2)"], _ = run_ours(
            url, topic, "out-ours-eos", args.records, work / "s3", True, "exactly_once_v2"
        )
        if not args.skip_quix:
            results["Quix Streams"] = run_quix(bench.bootstrap, topic, "out-quix", args.records, work / "quix")
            results["Quix Streams (exactly-once)"] = run_quix(
                bench.bootstrap, topic, "out-quix-eos", args.records, work / "quix-eos", "exactly-once"
            )
        restore = restore_ours(url, topic, "out-ours-cached", app_id, work / "s1")
    quix = results.get("Quix Streams", {}).get("rate")
    quix_eos = results.get("Quix Streams (exactly-once)", {}).get("rate")
    print(f"\nstateful count by key, {args.records:,} records, {harness.PARTITIONS} partitions, one process each")
    rows: list[list[Any]] = []
    for name, r in results.items():
        peer = quix_eos if "exactly" in name else quix
        rows.append([name, f"{r['elapsed']:.2f}", f"{r['rate']:,.0f}", harness.ratio(r["rate"], peer)])
    harness.print_table(["runtime", "seconds", "records/s", "vs Quix Streams (same guarantee)"], rows)
    eos, alos = results["ours (exactly_once_v2)"]["rate"], results["ours (cached, default)"]["rate"]
    print(f"\nexactly_once_v2 keeps {eos / alos:.0%} of our at-least-once throughput (target >= 70%)")
    print(
        f"\nrestore (ours, RocksDB, from the changelog): {restore['records']:,.0f} records in "
        f"{restore['seconds']:.2f}s = {restore['rate']:,.0f} changelog records/s"
    )
    cases = [
        Case(name, r["rate"], quix_eos if "exactly" in name else quix, {"seconds": r["elapsed"]})
        for name, r in results.items()
        if name.startswith("ours")
    ]
    run.write(
        args.json,
        [Comparison("stateful count by key", "records/s", "schemakit streams", "Quix Streams, same guarantee", cases)],
        {
            "exactly_once_v2 / at-least-once": eos / alos,
            "restored records": restore["records"],
            "restore seconds": restore["seconds"],
            "restore records/s": restore["rate"],
        },
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
