"""Schema exporter lag under load: two registries (``schemakit serve``, each on its own SQLite log), an exporter
from the first to the second (``contextType`` NONE), and client threads registering new schemas on the source
as fast as it takes them (or at ``--rate`` per second) for ``--seconds``. The exporter's ``/status`` is read
every half second meanwhile. Reported: the registration rate the source sustained, the exporter's lag (records
of ``_schemas`` and seconds; median, p95, max over the samples), and how long after the load it had caught up.
There is no peer to compare with (Confluent's exporters are in its commercial edition only).

    .venv/bin/python benchmarks/exporter_lag.py [--seconds 30] [--threads 8] [--rate 0] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx
from results_file import BenchRun, add_json_option

from tests.support.registry_process import RegistryProcess


def schema(i: int) -> str:
    return json.dumps({"type": "record", "name": f"R{i}", "fields": [{"name": "id", "type": "long"}]})


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=30.0, help="how long the load runs")
    parser.add_argument("--threads", type=int, default=8, help="client threads registering")
    parser.add_argument("--rate", type=float, default=0.0, help="registrations per second (0: as fast as taken)")
    parser.add_argument("--subjects", type=int, default=200, help="subjects the schemas are spread over")
    add_json_option(parser)
    args = parser.parse_args()
    run = BenchRun(__file__, vars(args))

    with tempfile.TemporaryDirectory(prefix="exporter-lag-") as tmp:
        (Path(tmp) / "src").mkdir()
        (Path(tmp) / "dst").mkdir()
        source = RegistryProcess.on_sqlite(Path(tmp) / "src").spawn()
        destination = RegistryProcess.on_sqlite(Path(tmp) / "dst").spawn()
        try:
            source.wait_ready()
            destination.wait_ready()
            return measure(args, run, source, destination)
        finally:
            source.stop()
            destination.stop()


def measure(args: argparse.Namespace, run: BenchRun, source: RegistryProcess, destination: RegistryProcess) -> int:
    http = httpx.Client(timeout=30)
    # every schema is a new version of its subject: no compatibility rule in the way
    http.put(f"{source.url}/config", json={"compatibility": "NONE"}).raise_for_status()
    body = {"name": "lag", "contextType": "NONE", "config": {"schema.registry.url": destination.url}}
    http.post(f"{source.url}/exporters", json=body).raise_for_status()

    done = threading.Event()
    counter = iter(range(10**9))
    lock = threading.Lock()
    registered: list[float] = []
    interval = args.threads / args.rate if args.rate > 0 else 0.0

    def load() -> None:
        with httpx.Client(timeout=30) as client:
            next_at = time.monotonic()
            while not done.is_set():
                with lock:
                    i = next(counter)
                subject = f"lag-{i % args.subjects}-value"
                r = client.post(f"{source.url}/subjects/{subject}/versions", json={"schema": schema(i)})
                if r.status_code == 200:
                    with lock:
                        registered.append(time.monotonic())
                if interval:
                    next_at += interval
                    time.sleep(max(0.0, next_at - time.monotonic()))

    def status() -> dict[str, Any]:
        found: dict[str, Any] = http.get(f"{source.url}/exporters/lag/status").json()
        return found

    samples: list[tuple[int, float]] = []
    workers = [threading.Thread(target=load) for _ in range(args.threads)]
    started = time.monotonic()
    for w in workers:
        w.start()
    while time.monotonic() - started < args.seconds:
        time.sleep(0.5)
        s = status()
        samples.append((s["lagRecords"], s["lagSeconds"]))
    done.set()
    for w in workers:
        w.join()
    load_seconds = time.monotonic() - started
    ended = time.monotonic()
    while True:
        s = status()
        if s["lagRecords"] == 0 and s["state"] == "RUNNING":
            break
        time.sleep(0.1)
    catch_up = time.monotonic() - ended
    final = status()

    rate = len(registered) / load_seconds
    records = [r for r, _ in samples]
    seconds = [s for _, s in samples]
    figures = {
        "registrations": len(registered),
        "registrations/s": round(rate, 1),
        "lag records p50": statistics.median(records),
        "lag records p95": percentile(records, 0.95),
        "lag records max": max(records),
        "lag seconds p50": round(statistics.median(seconds), 3),
        "lag seconds p95": round(percentile(seconds, 0.95), 3),
        "lag seconds max": round(max(seconds), 3),
        "caught up after load (s)": round(catch_up, 2),
        "records exported": final["recordsExported"],
        "exporter errors": final["errors"],
    }
    print(f"load: {len(registered)} registrations in {load_seconds:.1f}s = {rate:.0f}/s ({args.threads} threads)")
    print(
        f"exporter lag over {len(samples)} samples: records p50 {figures['lag records p50']:.0f}, "
        f"p95 {figures['lag records p95']:.0f}, max {figures['lag records max']:.0f}; seconds p50 "
        f"{figures['lag seconds p50']:.2f}, p95 {figures['lag seconds p95']:.2f}, max {figures['lag seconds max']:.2f}"
    )
    print(f"caught up {catch_up:.2f}s after the load ended; {final['recordsExported']} records exported")
    run.write(args.json, [], figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
