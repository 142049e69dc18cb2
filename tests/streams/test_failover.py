"""Fault tolerance with several processes, on SQLite (processes sharing the file) and on the Kafka test
broker: kill -9 with standbys restores only the tail; a new instance takes tasks only after warming up
while the other tasks keep running; a zombie (SIGSTOP past the session timeout, then SIGCONT) can neither
produce nor commit for the tasks it lost.

The application is ``tests/streams/groups.py``'s (``key_counts``): the output of a key is exactly 1, 2, 3, ... as long
as no task lost or redid work, and each output names the instance that wrote it.
"""

from __future__ import annotations

import itertools
import signal
import time
from collections.abc import Callable
from pathlib import Path

from streams.log import Log, TopicPartition
from tests.streams.groups import KEYS, PARTITIONS, TASKS, Group, changelog_size, outputs, partition_of
from tests.streams.instances import Instance
from tests.support.waiting import wait_for


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
