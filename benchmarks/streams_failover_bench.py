"""Failover benchmark: how long a task's state is down after kill -9 of one of two instances, without and
with a standby replica (``num_standby_replicas`` 0 vs 1, same run), on the Kafka-protocol test broker.

Each scenario: a count per key over ``--keys`` distinct keys (one record each, 4 partitions, RocksDB, so the
changelog holds one record per key), two instance processes splitting the four tasks, everything processed
and committed (and, with standbys, the standbys caught up); then kill -9 of the instance that does not lead
the group, while records keep arriving. Reported, for the tasks the killed instance ran:

- (a) failure detection + rebalance: kill -> the survivor starts taking the tasks over (its ``RESTORING``);
  bounded below by the session timeout (2 s here, the test settings);
- (b) restore: ``RESTORING`` -> ``RUNNING`` (fencing the old owner, restore barrier, restoring the changelog
  the survivor's local state lacks), and the records restored against the changelog's size;
- (c) kill -> the first output record of a moved task.

    .venv/bin/python benchmarks/streams_failover_bench.py [--keys 1000000]

Each instance runs in its own process: ``streams_failover_bench.py instance <url> <app> <state> ...``.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import confluent_kafka
import streams_harness as harness
from results_file import BenchRun, Case, Comparison, add_json_option

from streams.changelog import BARRIER_KEY
from streams.log import OFFSET_BEGINNING, TopicPartition, open_log
from tests.support.broker import TansuBroker

PARTITIONS = harness.PARTITIONS
TASKS = [f"0_{p}" for p in range(PARTITIONS)]
COMMIT_MS = 1000


# -- one instance (a subprocess) ---------------------------------------------------------------------------


def instance(url: str, app_id: str, state_dir: str, source: str, out: str, standbys: int) -> int:
    from streams.app import StreamsApp

    logging.basicConfig(
        level=os.environ.get("BENCH_LOG_LEVEL", "WARNING"),
        stream=sys.stderr,
        format="%(asctime)s %(process)d %(threadName)s %(name)s %(message)s",
    )
    lock = threading.Lock()

    def emit(item: dict[str, Any]) -> None:
        with lock:
            print(json.dumps(item), flush=True)

    class Events:
        def on_state_change(self, old: str, new: str) -> None:
            pass

        def on_task_state_change(self, task_id: str, old: str, new: str) -> None:
            emit({"event": "task", "task": task_id, "new": new, "t": time.time()})

    app = StreamsApp(
        harness.count_by_key(source, out, cache=False),
        app_id,
        url,
        state_dir=state_dir,
        commit_interval_ms=COMMIT_MS,
        num_standby_replicas=standbys,
        session_timeout_ms=2000,
        state_listener=Events(),
        progress_interval_s=3600,
    )
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    app.start()
    last = None
    while not stop.wait(0.1):
        m = app.metrics()
        snapshot = {k: m[k] for k in ("tasks", "standby_tasks", "task_states", "restores", "processed", "leader")}
        if snapshot != last:
            emit(snapshot)
            last = snapshot
        if app.error is not None:
            raise app.error
    app.close()
    return 0


class Instance:
    def __init__(self, name: str, args: list[str], work: Path) -> None:
        self.name = name
        self.metrics: dict[str, Any] = {}
        self.events: list[dict[str, Any]] = []
        self._stderr = open(work / f"{name}.log", "ab")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "instance", *args], stdout=subprocess.PIPE, stderr=self._stderr
        )
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            item = json.loads(line)
            if item.get("event") == "task":
                self.events.append(item)
            else:
                self.metrics = item

    def first(self, task: str, state: str, after: float) -> float | None:
        times = [e["t"] for e in list(self.events) if e["task"] == task and e["new"] == state and e["t"] >= after]
        return min(times) if times else None

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._stderr.close()


# -- the scenarios -----------------------------------------------------------------------------------------


def wait(predicate: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.05)


def produce(bootstrap: str, topic: str, keys: range, prefix: str) -> dict[int, int]:
    """One record per key; returns the end offset of every partition."""
    ends: dict[int, int] = {p: 0 for p in range(PARTITIONS)}

    def done(err: Any, msg: Any) -> None:
        if err is None:
            ends[msg.partition()] = max(ends[msg.partition()], msg.offset() + 1)

    harness.produce(bootstrap, topic, ((f"{prefix}{i}", {"i": i}, 0) for i in keys), on_delivery=done)
    return ends


def changelog_size(url: str, topic: str, partitions: set[int]) -> int:
    """Records in the changelog partitions, read to a quiet end (end offsets are unreliable on tansu)."""
    with open_log(url) as log, log.consumer(None) as c:
        c.assign({TopicPartition(topic, p): OFFSET_BEGINNING for p in partitions})
        count, quiet_since = 0, time.monotonic()
        while time.monotonic() - quiet_since < 2.0:
            batch = c.poll(0.2, 50_000)
            if batch:
                count += sum(1 for r in batch if r.key != BARRIER_KEY)
                quiet_since = time.monotonic()
        return count


def first_output_after(
    bootstrap: str, topic: str, partitions: set[int], starts: dict[int, int], stop: threading.Event, found: list[float]
) -> None:
    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"probe-{uuid.uuid4().hex[:6]}",
            "isolation.level": "read_uncommitted",
            "fetch.wait.max.ms": 10,
        }
    )
    consumer.assign([confluent_kafka.TopicPartition(topic, p, starts[p]) for p in partitions])
    while not stop.is_set() and not found:
        msg = consumer.poll(0.05)
        if msg is not None and msg.error() is None:
            found.append(time.time())
    consumer.close()


def scenario(broker: TansuBroker, url: str, work: Path, keys: int, standbys: int) -> dict[str, float]:
    tag = f"s{standbys}-{uuid.uuid4().hex[:6]}"
    source, out, app_id = f"in-{tag}", f"out-{tag}", f"failover-{tag}"
    with open_log(url) as log:
        log.create_topic(source, PARTITIONS)
        log.create_topic(out, PARTITIONS)
        started = time.perf_counter()
        ends = produce(broker.bootstrap, source, range(keys), "k")
        print(f"  [{standbys} standby] produced {keys:,} records in {time.perf_counter() - started:.1f}s", flush=True)
        args = [url, app_id, "", source, out, str(standbys)]
        a = Instance(f"a-{tag}", [*args[:2], str(work / f"a-{tag}"), *args[3:]], work)
        b = Instance(f"b-{tag}", [*args[:2], str(work / f"b-{tag}"), *args[3:]], work)
        try:
            inputs = [TopicPartition(source, p) for p in range(PARTITIONS)]

            def settled() -> bool:
                ma, mb = a.metrics, b.metrics
                if sorted(ma.get("tasks", []) + mb.get("tasks", [])) != TASKS or not ma["tasks"] or not mb["tasks"]:
                    return False
                if log.committed(app_id, inputs) != {tp: ends[tp.partition] for tp in inputs}:
                    return False
                states = [s for m in (ma, mb) for s in m["task_states"].values() if s["state"] == "STANDBY"]
                return len(states) == PARTITIONS * standbys and all(s.get("lag") == 0 for s in states)

            started = time.perf_counter()
            wait(settled, 900, "both instances to process everything (and the standbys to catch up)")
            print(f"  [{standbys} standby] processed and committed in {time.perf_counter() - started:.1f}s", flush=True)
            victim, survivor = (b, a) if a.metrics["leader"] else (a, b)
            moved = set(victim.metrics["tasks"])
            moved_partitions = {int(t.split("_")[1]) for t in moved}
            output_starts = {p: 0 for p in moved_partitions}
            with open_log(url) as probe_log, probe_log.consumer(None) as probe:
                for p in moved_partitions:  # the output's current end, read as a barrier would
                    probe.assign({TopicPartition(out, p): OFFSET_BEGINNING})
                    quiet = time.monotonic()
                    while time.monotonic() - quiet < 1.0:
                        batch = probe.poll(0.2, 50_000)
                        if batch:
                            output_starts[p] = batch[-1].offset + 1
                            quiet = time.monotonic()
            stop_probe = threading.Event()
            found: list[float] = []
            probe_args = (broker.bootstrap, out, moved_partitions, output_starts, stop_probe, found)
            prober = threading.Thread(target=first_output_after, args=probe_args)
            prober.start()
            killed_at = time.time()
            victim.proc.kill()
            victim.proc.wait()
            feeder_stop = threading.Event()

            def feed() -> None:
                n = keys
                while not feeder_stop.is_set():
                    produce(broker.bootstrap, source, range(n, n + 200), "k")
                    n += 200
                    feeder_stop.wait(0.05)

            feeder = threading.Thread(target=feed)
            feeder.start()
            wait(lambda: sorted(survivor.metrics.get("tasks", [])) == TASKS, 900, "the survivor to run every task")
            wait(lambda: bool(found), 120, "the first output of a moved task")
            feeder_stop.set()
            feeder.join()
            stop_probe.set()
            prober.join()
            assigned = min(t for task in moved if (t := survivor.first(task, "RESTORING", killed_at)) is not None)
            running = max(t for task in moved if (t := survivor.first(task, "RUNNING", killed_at)) is not None)
            restored = sum(n for task, _, n in survivor.metrics["restores"] if task in moved)
            size = changelog_size(url, f"{app_id}-counts-changelog", moved_partitions)
            return {
                "detect": assigned - killed_at,
                "restore": running - assigned,
                "first_output": found[0] - killed_at,
                "restored": restored,
                "changelog": size,
            }
        finally:
            a.stop()
            b.stop()
            for topic in (source, out, f"{app_id}-counts-changelog"):
                try:
                    log.delete_topic(topic)  # frees the broker's memory for the next scenario
                except Exception as exc:
                    print(f"  (could not delete {topic}: {exc})")


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "instance":
        url, app_id, state_dir, source, out, standbys = sys.argv[2:8]
        return instance(url, app_id, state_dir, source, out, int(standbys))
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--keys", type=int, default=1_000_000)
    add_json_option(parser)
    args = parser.parse_args()
    run = BenchRun(__file__, vars(args))
    work = Path(tempfile.mkdtemp(prefix="streams-failover-"))
    broker = TansuBroker(work / "broker.log")
    broker.start()
    try:
        url = harness.kafka_url(broker.bootstrap)
        results = {n: scenario(broker, url, work, args.keys, n) for n in (0, 1)}
    finally:
        broker.stop()
        if not os.environ.get("KEEP_BENCH_DIR"):
            shutil.rmtree(work, ignore_errors=True)
    none, one = results[0], results[1]
    print(
        f"\nkill -9 of one of two instances, count store of {args.keys:,} keys, 4 partitions, RocksDB, "
        f"session timeout 2 s, commit {COMMIT_MS} ms; numbers for the killed instance's tasks"
    )
    print(
        "| standbys | (a) detection + rebalance | (b) restore | records restored / changelog "
        "| (c) kill -> first output |"
    )
    print("|---:|---:|---:|---:|---:|")
    for n, r in results.items():
        share = r["restored"] / r["changelog"] if r["changelog"] else 0.0
        print(
            f"| {n} | {r['detect']:.2f} s | {r['restore']:.2f} s | {r['restored']:,.0f} / {r['changelog']:,.0f} "
            f"({share:.2%}) | {r['first_output']:.2f} s |"
        )
    speedup = none["restore"] / max(one["restore"], 1e-9)
    print(
        f"\nrestore with a standby: {speedup:.0f}x faster (target >= 10x); "
        f"restored {one['restored'] / max(one['changelog'], 1):.2%} of the changelog (target <= 1%)"
    )
    phases = {
        "detect": "(a) detection + rebalance",
        "restore": "(b) restore",
        "first_output": "(c) kill -> first output",
    }
    cases = [Case(label, one[key], none[key]) for key, label in phases.items()]
    run.write(
        args.json,
        [Comparison("kill -9 of one of two instances", "seconds", "1 standby", "no standby", cases, False)],
        {f"{n} standby: records restored": r["restored"] for n, r in results.items()}
        | {f"{n} standby: changelog records": r["changelog"] for n, r in results.items()},
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
