"""The schema browser's subject list at scale: one page of ``GET /ui/api/subjects`` on a registry with many
subjects, side by side with Confluent's ``GET /subjects`` (all names, no types or levels) on the same server.

    .venv/bin/python benchmarks/ui_bench.py [--subjects 10000] [--repeat 20]

Registers ``--subjects`` Avro subjects (8 connections in parallel, a progress line every 1,000), then times each
request ``--repeat`` times and prints the median: uncached (``nocache`` varies the query, so every request is a
read-cache miss and scans all subjects) and cached (the same request again).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from own_registry import own_registry
from results_file import BenchRun, Case, Comparison, add_json_option


def register_all(url: str, count: int) -> None:
    start = time.perf_counter()

    def one(i: int) -> None:
        schema = {"type": "record", "name": f"R{i}", "fields": [{"name": "id", "type": "long"}]}
        resp = client.post(f"/subjects/topic-{i:05d}-value/versions", json={"schema": json.dumps(schema)})
        resp.raise_for_status()
        if (i + 1) % 1000 == 0:
            print(f"  registered {i + 1}/{count} ({time.perf_counter() - start:.0f} s)", flush=True)

    limits = httpx.Limits(max_connections=8)
    with httpx.Client(base_url=url, timeout=30, limits=limits) as client, ThreadPoolExecutor(8) as pool:
        list(pool.map(one, range(count)))


def median_ms(client: httpx.Client, path: str, repeat: int, *, cached: bool) -> float:
    times = []
    client.get(path).raise_for_status()
    for i in range(repeat):
        target = path if cached else f"{path}{'&' if '?' in path else '?'}nocache={i}"
        start = time.perf_counter()
        client.get(target).raise_for_status()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--subjects", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=20)
    add_json_option(parser)
    args = parser.parse_args()
    run = BenchRun(__file__, vars(args))
    timings: dict[str, tuple[float, float]] = {}
    with own_registry() as url:
        print(f"registering {args.subjects} subjects on {url}", flush=True)
        register_all(url, args.subjects)
        rows = [
            ("GET /subjects (Confluent's API: every name)", "/subjects"),
            ("GET /ui/api/subjects (first page of 50)", "/ui/api/subjects"),
            ("GET /ui/api/subjects?q=0042 (search)", "/ui/api/subjects?q=0042"),
            (
                "GET /ui/api/subjects?type=AVRO&compatibility=BACKWARD&offset=5000 (filters, page 101)",
                "/ui/api/subjects?type=AVRO&compatibility=BACKWARD&offset=5000",
            ),
        ]
        with httpx.Client(base_url=url, timeout=30) as client:
            print(f"\n{'request':<84} {'uncached ms':>12} {'cached ms':>10}")
            for label, path in rows:
                miss = median_ms(client, path, args.repeat, cached=False)
                hit = median_ms(client, path, args.repeat, cached=True)
                print(f"{label:<84} {miss:>12.1f} {hit:>10.2f}")
                timings[label] = (miss, hit)
    (peer, (peer_miss, peer_hit)), *ours = timings.items()  # the first row, Confluent's GET /subjects, is the peer
    run.write(
        args.json,
        [
            Comparison(f"{kind} requests", "ms", "the UI's helpers", peer, cases, higher_is_better=False)
            for kind, cases in (
                ("uncached", [Case(label, miss, peer_miss) for label, (miss, _) in ours]),
                ("cached", [Case(label, hit, peer_hit) for label, (_, hit) in ours]),
            )
        ],
    )


if __name__ == "__main__":
    main()
