"""The ``key_counts`` application as a group of processes, shared by the multi-process streams tests (fail-over,
rejoin, exactly-once, network faults) and the chaos soak: its topics, a feed of rounds of one record per key, its
instances (``tests/streams/instances.py``), and what it wrote per key.

``key_counts`` writes one output per input (the key's count and the instance that wrote it), so the output of a
key is exactly 1, 2, 3, ... as long as no task lost or redid work.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import orjson

from streams.changelog import BARRIER_KEY
from streams.log import Log, Producer, TopicPartition
from streams.log.partitioner import partition_for_key
from tests.streams.instances import Instance
from tests.support.topics import create_topics, read_to_end
from tests.support.waiting import wait_for

PARTITIONS = 4
KEYS = [f"k{i:03d}" for i in range(400)]
TASKS = [f"0_{p}" for p in range(PARTITIONS)]
SESSION_MS = 2000  # the Kafka test URL says the same


def partition_of(key: str) -> int:
    return partition_for_key(key.encode(), PARTITIONS)


class Feed:
    """Rounds of one record per key; ``sent`` counts what was written per key."""

    def __init__(self, log: Log, topic: str) -> None:
        self.log = log
        self.topic = topic
        self.sent: Counter[str] = Counter()
        self.rounds = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        # One producer for every round: a new Kafka producer delivers nothing for its first 0.5-1 s (it
        # fetches an idempotent producer id first), which made each round on Kafka take that long.
        self._producer: Producer | None = None

    def round(self, keys: list[str] = KEYS) -> None:
        if self._producer is None:
            self._producer = self.log.producer()
            weakref.finalize(self, self._producer.close)
        for key in keys:
            self._producer.send(self.topic, orjson.dumps({"round": self.rounds}), key.encode())
        self._producer.flush()
        self.sent.update(keys)
        self.rounds += 1

    @contextmanager
    def continuously(self, pause: float = 0.1) -> Iterator[None]:
        """A round every ``pause`` seconds in the background while the block runs."""

        def run() -> None:
            while not self._stop.is_set():
                self.round()
                self._stop.wait(pause)

        self._stop.clear()
        self._thread = threading.Thread(target=run, daemon=True)
        self._thread.start()
        try:
            yield
        finally:
            self._stop.set()
            self._thread.join()


class Group:
    """One application's topics, its input feed, and its instances started as processes. Leaving it kills the
    instances still running, so a failing test leaves no process behind."""

    def __init__(self, log: Log, log_url: str, tmp_path: Path, names: Callable[[str], str], kind: str) -> None:
        self.log, self.log_url, self.tmp_path = log, log_url, tmp_path
        self.src, self.out, self.app_id = names("events"), names("counts"), names(kind)
        create_topics(log, PARTITIONS, self.src, self.out)
        self.feed = Feed(log, self.src)
        self.instances: list[Instance] = []

    def __enter__(self) -> Group:
        return self

    def __exit__(self, *exc: object) -> None:
        for instance in self.instances:
            instance.ensure_dead()

    def start(self, name: str, *options: str, wrapper: list[str] | None = None) -> Instance:
        args = [
            self.log_url,
            self.app_id,
            str(self.tmp_path / f"state-{name}"),
            self.src,
            self.out,
            "200",
            "--topology",
            "key_counts",
            "--name",
            name,
            "--session-ms",
            str(SESSION_MS),
            *options,
        ]
        instance = Instance(name, args, self.tmp_path, wrapper)
        self.instances.append(instance)
        return instance

    def feed_rounds(self, rounds: int, *, what: str, pause: float = 0.0, timeout: float = 60.0) -> None:
        """Feed ``rounds`` rounds (``pause`` seconds after each) and wait until the commits cover them."""
        for _ in range(rounds):
            self.feed.round()
            time.sleep(pause)
        self.wait_until_committed(what=what, timeout=timeout)

    def wait_until_committed(self, *, what: str, timeout: float = 60.0) -> None:
        """Wait until the group's committed offsets cover everything fed."""
        wait_for(all_committed(self.log, self.app_id, self.src, self.feed), timeout=timeout, what=what)

    def start_two(self, *options: str, wrapper_a: list[str] | None = None) -> tuple[Instance, Instance]:
        """Instances "a" (under ``wrapper_a``) and "b", once they share the tasks (each runs some)."""
        a, b = self.start("a", *options, wrapper=wrapper_a), self.start("b", *options)
        self.wait_shared(a, b)
        return a, b

    @staticmethod
    def wait_shared(a: Instance, b: Instance) -> None:
        """Wait until ``a`` and ``b`` share the tasks (each runs some)."""
        wait_for(
            lambda: sorted(a.tasks() + b.tasks()) == TASKS and a.tasks() and b.tasks(),
            what=f"{a.name} and {b.name} to share the tasks",
        )


def all_committed(log: Log, app_id: str, src: str, feed: Feed) -> Callable[[], bool]:
    inputs = [TopicPartition(src, p) for p in range(PARTITIONS)]

    def check() -> bool:
        ends = Counter({p: 0 for p in range(PARTITIONS)})
        for key, n in feed.sent.items():
            ends[partition_of(key)] += n
        return log.committed(app_id, inputs) == {tp: ends[tp.partition] for tp in inputs}

    return check


def outputs(log: Log, out: str) -> dict[str, list[tuple[int, str]]]:
    """Per key, its outputs in order: (count, instance)."""
    by_key: dict[str, list[tuple[int, str]]] = {}
    for r in sorted(read_to_end(log, out, quiet=1.0), key=lambda r: (r.partition, r.offset)):
        assert r.key is not None and r.value is not None
        value = orjson.loads(r.value)
        by_key.setdefault(r.key.decode(), []).append((value["n"], value["by"]))
    return by_key


def changelog_size(log: Log, app_id: str, partitions: set[int]) -> int:
    records = read_to_end(log, f"{app_id}-counts-changelog", quiet=1.0)
    return sum(1 for r in records if r.partition in partitions and r.key != BARRIER_KEY)
