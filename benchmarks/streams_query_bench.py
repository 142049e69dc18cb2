"""Interactive query latency: ``GET /v1/stores/counts/keys/{k}`` sent to instance A for keys owned by
instance B, so every request is routed A -> B and back, at a fixed rate (open loop: a request is sent every
1/rate s whether or not earlier ones returned; latency counts from its scheduled time, so a stall is not
hidden). Also the same rate for keys A owns (answered locally), for comparison.

Two instances of a key count (``tests/streams/topologies.key_counts``, 4 partitions, one standby each) run as
separate processes on a shared SQLite log; this process only sends requests. Target (issue 15): p99 of the
routed lookup <= 5 ms at 1,000 req/s.

The client runs on uvloop when it is installed (the query servers do: uvicorn picks it), sends through the
same keep-alive pool the servers forward with, and freezes its start-up objects out of the garbage collector
as the servers do; it keeps no reference to finished requests, so its own collector passes stay short. It
prints, per phase, the CPU each process used (in cores) and how long its threads were runnable but waited for
a CPU (ms per second, from ``/proc/*/task/*/schedstat``): on a shared machine the latency tail follows that
wait, which no change in the servers removes.

    .venv/bin/python benchmarks/streams_query_bench.py [--rate 1000] [--seconds 10] [--keys 2000]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx
import orjson
from results_file import BenchRun, add_json_option

try:
    import uvloop
except ImportError:  # uvicorn[standard] brings it on the platforms that have it
    uvloop = None  # type: ignore[assignment]

from streams.http_pool import HttpPool, HttpPoolError
from streams.log import open_log
from tests.streams.instances import Instance
from tests.support.ports import free_port

PARTITIONS = 4


def percentile(sorted_values: list[float], q: float) -> float:
    return sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))]


def cpu_seconds(pids: list[int]) -> list[tuple[float, float]]:
    """Per process: (CPU time so far, time its threads spent runnable but waiting for a CPU so far), seconds."""
    out = []
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        waited = 0
        for task in Path(f"/proc/{pid}/task").iterdir():
            try:
                waited += int((task / "schedstat").read_text().split()[1])
            except (OSError, IndexError, ValueError):  # a thread that ended meanwhile; no schedstats
                pass
        out.append(((int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK"), waited / 1e9))
    return out


async def load(
    pool: HttpPool, server: str, keys: list[str], rate: int, seconds: float
) -> tuple[list[float], list[float], int]:
    """Latencies in ms of ``rate * seconds`` requests sent on schedule; and how many failed. The requests go
    through the same keep-alive pool the query servers forward with (httpx's async pool is the bottleneck
    at this rate, not the server)."""
    interval = 1 / rate
    latencies: list[float] = []
    late: list[float] = []  # how late this process sent each request: its own share of the latency
    failures = 0

    async def one(i: int, scheduled: float) -> None:
        nonlocal failures
        late.append((time.perf_counter() - scheduled) * 1000)
        try:
            status, _ = await pool.get(server, f"/v1/stores/counts/keys/{keys[i % len(keys)]}")
            ok = status == 200
        except HttpPoolError:
            ok = False
        failures += not ok
        latencies.append((time.perf_counter() - scheduled) * 1000)

    pending: set[asyncio.Task[None]] = set()  # only those in flight: finished ones are garbage at once
    start = time.perf_counter() + 0.05
    for i in range(int(rate * seconds)):
        scheduled = start + i * interval
        delay = scheduled - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        task = asyncio.create_task(one(i, scheduled))
        pending.add(task)
        task.add_done_callback(pending.discard)
    await asyncio.gather(*pending)
    return sorted(latencies), sorted(late), failures


async def measure(
    server: str, remote: list[str], local: list[str], rate: int, seconds: float, pids: list[int]
) -> dict[str, float]:
    """Prints a line per phase; returns its latency percentiles in ms (for ``--json``)."""
    # One client pool for the warm-up and the runs: connections are opened once, as a long-lived client would.
    pool = HttpPool(timeout=5, max_per_host=64)
    await load(pool, server, remote + local, rate, 2.0)
    gc.collect()
    gc.freeze()
    figures: dict[str, float] = {}
    for what, subset in (("routed to the other instance", remote), ("answered locally", local)):
        before, began = cpu_seconds(pids), time.perf_counter()
        latencies, late, failures = await load(pool, server, subset, rate, seconds)
        elapsed = time.perf_counter() - began
        after = cpu_seconds(pids)
        cores = ", ".join(f"{(b[0] - a[0]) / elapsed:.2f}" for a, b in zip(before, after, strict=True))
        waits = ", ".join(f"{(b[1] - a[1]) * 1000 / elapsed:.0f}" for a, b in zip(before, after, strict=True))
        print(
            f"GET keys/{{k}} {what}: {len(latencies)} requests at {rate}/s, {failures} failed; "
            f"p50 {percentile(latencies, 0.50):.2f} ms, p99 {percentile(latencies, 0.99):.2f} ms, "
            f"p99.9 {percentile(latencies, 0.999):.2f} ms, max {latencies[-1]:.2f} ms; sent late by the client: "
            f"p99 {percentile(late, 0.99):.2f} ms, max {late[-1]:.2f} ms; "
            f"CPU (cores) client, A, B: {cores}; waiting for a CPU (ms/s) {waits}; "
            f"load average {os.getloadavg()[0]:.2f}"
        )
        for name, q in (("p50", 0.50), ("p99", 0.99), ("p99.9", 0.999), ("max", 1.0)):
            figures[f"{what}: {name} ms"] = percentile(latencies, q)
        figures[f"{what}: failed"] = failures
    await pool.aclose()
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rate", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--keys", type=int, default=2000)
    add_json_option(parser)
    args = parser.parse_args()
    run = BenchRun(__file__, vars(args))
    with tempfile.TemporaryDirectory() as tmp_dir:
        tmp = Path(tmp_dir)
        url = f"sqlite:///{tmp / 'log'}"
        suffix = uuid.uuid4().hex[:6]
        src, out, app_id = f"in-{suffix}", f"out-{suffix}", f"query-bench-{suffix}"
        lg = open_log(url)
        lg.create_topic(src, PARTITIONS)
        lg.create_topic(out, PARTITIONS)
        keys = [f"key-{i}" for i in range(args.keys)]
        producer = lg.producer()
        for key in keys:
            producer.produce(src, orjson.dumps({"v": 1}), key.encode())
        producer.flush()
        lg.close()
        servers = [f"http://127.0.0.1:{free_port()}" for _ in range(2)]
        instances = [
            Instance(
                name,
                [
                    url,
                    app_id,
                    str(tmp / name),
                    src,
                    out,
                    "1000",
                    "--topology",
                    "key_counts",
                    "--standbys",
                    "1",
                    "--server",
                    server,
                ],
                tmp,
            )
            for name, server in zip(("a", "b"), servers, strict=True)
        ]
        try:
            with httpx.Client(timeout=5) as client:
                deadline = time.monotonic() + 120
                while True:
                    if time.monotonic() > deadline:
                        raise SystemExit("the instances did not settle in 120 s")
                    if all(len(i.tasks()) == PARTITIONS // 2 for i in instances):
                        r = client.get(f"{servers[0]}/v1/stores/counts/all")
                        if r.status_code == 200 and len(r.json()["items"]) == len(keys):
                            break
                    time.sleep(0.2)
                me = client.get(f"{servers[0]}/v1/metadata").json()["instance"]
                owner = {
                    k: client.get(f"{servers[0]}/v1/stores/counts/keys/{k}/metadata").json()["active"]["instance"]
                    for k in keys
                }
            remote = [k for k in keys if owner[k] != me]
            local = [k for k in keys if owner[k] == me]
            pids = [os.getpid(), *(i.proc.pid for i in instances)]
            with asyncio.Runner(loop_factory=uvloop.new_event_loop if uvloop is not None else None) as runner:
                figures = runner.run(measure(servers[0], remote, local, args.rate, args.seconds, pids))
        finally:
            for instance in instances:
                instance.stop()
    run.write(args.json, [], figures)  # no peer: routed against local lookups are figures, not a comparison
    return 0


if __name__ == "__main__":
    sys.exit(main())
