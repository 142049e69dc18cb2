"""Fault tolerance with several processes, on SQLite (processes sharing the file) and on the Kafka test
broker: kill -9 with standbys restores only the tail; a new instance takes tasks only after warming up
while the other tasks keep running; a zombie (SIGSTOP past the session timeout, then SIGCONT) can neither
produce nor commit for the tasks it lost.

The topology counts records per key with one output per input (``key_counts``), so the output of a key is
exactly 1, 2, 3, ... as long as no task lost or redid work, and each output names the instance that wrote it.
"""

from __future__ import annotations

import itertools
import signal
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
from tests.support.topics import create_topics, read_all
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
        wait_for(
            lambda: sorted(a.tasks() + b.tasks()) == TASKS and a.tasks() and b.tasks(),
            what="a and b to share the tasks",
        )
        return a, b


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
    for r in sorted(read_all(log, out, quiet=1.0), key=lambda r: (r.partition, r.offset)):
        assert r.key is not None and r.value is not None
        value = orjson.loads(r.value)
        by_key.setdefault(r.key.decode(), []).append((value["n"], value["by"]))
    return by_key


def changelog_size(log: Log, app_id: str, partitions: set[int]) -> int:
    records = read_all(log, f"{app_id}-counts-changelog", quiet=1.0)
    return sum(1 for r in records if r.partition in partitions and r.key != BARRIER_KEY)


def test_kill_9_with_standbys_restores_only_the_tail(
    log_url: str, log: Log, names: Callable[[str], str], tmp_path: Path
) -> None:
    with Group(log, log_url, tmp_path, names, "standbys") as group:
        out, app_id, feed = group.out, group.app_id, group.feed
        a, b = group.start("a", "--standbys", "1"), group.start("b", "--standbys", "1")
        # Two tasks each, and each holds a standby of the other's two.
        wait_for(
            lambda: (
                len(a.tasks()) == 2
                and len(b.tasks()) == 2
                and sorted(a.tasks() + b.tasks()) == TASKS
                and sorted(a.latest["standby_tasks"]) == sorted(b.tasks())
                and sorted(b.latest["standby_tasks"]) == sorted(a.tasks())
            ),
            what="two tasks and two standbys each",
        )
        assert set(b.states().values()) >= {"RUNNING", "STANDBY"}
        group.feed_rounds(25, pause=0.05, what="the first rounds to be committed")
        moved = set(a.tasks())
        with feed.continuously():
            time.sleep(0.5)
            a.kill()
            wait_for(lambda: b.tasks() == TASKS, what="b to take over a's tasks")
        group.wait_until_committed(what="everything to be committed")

        # The survivor restored only the changelog tail its standbys had not applied yet: at most the
        # last few commits of those tasks (each commit writes each changed key once), never the changelog.
        restored = sum(count for task, _, count in b.latest["restores"] if task in moved)
        moved_partitions = {int(t.split("_")[1]) for t in moved}
        keys_moved = sum(1 for k in KEYS if partition_of(k) in moved_partitions)
        size = changelog_size(log, app_id, moved_partitions)
        assert restored <= 3 * keys_moved, (restored, keys_moved, size)
        assert restored * 10 < size, (restored, size)
        assert b.latest["standby_records"] > size // 2  # the standbys had applied the rest
        for task in moved:
            assert b.history(task)[-3:] == ["STANDBY", "RESTORING", "RUNNING"]
        # The store counted every input exactly once: the last output of each key is its reference count.
        final = {key: seq[-1][0] for key, seq in outputs(log, out).items()}
        assert final == dict(feed.sent)
        assert b.stop() == 0


def test_a_new_instance_takes_tasks_only_after_warming_up(
    log_url: str, log: Log, names: Callable[[str], str], tmp_path: Path
) -> None:
    with Group(log, log_url, tmp_path, names, "warmup") as group:
        out, feed = group.out, group.feed
        options = ("--recovery-lag", "150", "--warmups", "1", "--probing-ms", "1000")
        c: Instance | None = None
        a, b = group.start_two(*options)
        # changelogs far longer than the acceptable recovery lag
        group.feed_rounds(15, pause=0.05, what="the first rounds to be committed")
        before = {t: ("a" if t in a.tasks() else "b") for t in TASKS}
        joined_at = time.time()
        with feed.continuously():
            c = group.start("c", *options)
            wait_for(lambda: c is not None and len(c.tasks()) == 1, timeout=90, what="c to run one task")
            time.sleep(0.5)
        group.wait_until_committed(what="everything to be committed")
        (task,) = c.tasks()
        # c warmed the task up first, then took it over restoring only what was left (within the lag).
        history = c.history(task)
        assert history[0] == "WARMUP" and history[-2:] == ["RESTORING", "RUNNING"], history
        restored = sum(n for t, _, n in c.latest["restores"] if t == task)
        assert restored <= 150 + 3 * sum(1 for k in KEYS if partition_of(k) == int(task.split("_")[1]))
        # The old owner let go before c started it (cooperative hand-over) ...
        owner = a if before[task] == "a" else b
        released = [e["t"] for e in owner.events if e["task"] == task and e["new"] == "CLOSED"]
        started = [e["t"] for e in c.events if e["task"] == task and e["new"] == "RESTORING"]
        assert released and started and released[-1] <= started[-1]
        # ... and the other tasks never stopped: no state change after c joined.
        for other in TASKS:
            if other != task:
                holder = a if before[other] == "a" else b
                assert [e for e in holder.events if e["task"] == other and e["t"] >= joined_at] == []
        # No gap and no duplicate anywhere: every key's outputs count 1, 2, 3, ... to what was sent.
        for key, seq in outputs(log, out).items():
            assert [n for n, _ in seq] == list(range(1, feed.sent[key] + 1)), key
        for inst in (a, b, c):
            assert inst.stop() == 0


def test_a_zombie_cannot_produce_or_commit_for_tasks_it_lost(
    log_url: str, log: Log, names: Callable[[str], str], tmp_path: Path
) -> None:
    with Group(log, log_url, tmp_path, names, "zombie") as group:
        src, out, app_id, feed = group.src, group.out, group.app_id, group.feed
        inputs = [TopicPartition(src, p) for p in range(PARTITIONS)]
        a, b = group.start_two()
        lost = set(a.tasks())
        group.feed_rounds(5, what="the first rounds to be committed")
        a.pause(group.log_url)
        wait_for(lambda: b.tasks() == TASKS, what="b to take over the stopped instance's tasks")
        # input the zombie has not seen: it will read it when it wakes up
        group.feed_rounds(5, what="b to process and commit it")
        committed: list[dict[TopicPartition, int | None]] = [log.committed(app_id, inputs)]
        a.signal(signal.SIGCONT)
        deadline = time.monotonic() + 4
        while time.monotonic() < deadline:
            committed.append(log.committed(app_id, inputs))
            time.sleep(0.1)
        group.feed_rounds(3, what="the last rounds to be committed")
        # The zombie noticed (fenced, or its own session check) and closed the tasks without committing.
        text = a.stderr_path.read_text()
        assert "fenced" in text or "expelled from the group" in text
        # Committed offsets never went back (a zombie commit would rewind them to where it stopped).
        for earlier, later in itertools.pairwise(committed):
            assert all((later[tp] or 0) >= (earlier[tp] or 0) for tp in inputs), (earlier, later)
        # Nothing the zombie wrote after it was stopped reached the output: every key counts 1, 2, 3, ...
        # without a repeat, and the keys of the tasks it lost were written by b from then on.
        by_key = outputs(log, out)
        for key, seq in by_key.items():
            assert [n for n, _ in seq] == list(range(1, feed.sent[key] + 1)), (key, seq)
            if f"0_{partition_of(key)}" in lost:
                writers = [by for _, by in seq]
                assert writers[:10] == ["a"] * 5 + ["b"] * 5, (key, seq)  # later rounds: a may own it again
        for inst in (a, b):
            assert inst.stop() == 0
