"""An instance paused for longer than the session timeout (SIGSTOP) is expelled from the group and its tasks
are fenced; when it wakes up it closes them without committing, rejoins, gets an assignment again and goes
on processing, as a Kafka Streams thread does after a ``TaskMigratedException``. On SQLite and on the test
broker."""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from pathlib import Path

from streams.log import Log
from tests.streams.groups import SESSION_MS, TASKS, Group, outputs
from tests.streams.instances import Instance
from tests.support.waiting import wait_for

PAUSE_S = 2 * SESSION_MS / 1000  # well past the session timeout


def pause_past_the_session(group: Group, a: Instance) -> int:
    """Once a first round is committed, stop ``a`` well past the session timeout, continue it, and wait until it
    noticed it was expelled. Returns the generation it ran before the pause.

    A fixed pause, not "until another instance took over": on SQLite a process stopped while it holds the write
    lock holds up every other one until it continues."""
    group.feed_rounds(1, what="the first round to be committed")
    generation: int = a.latest["generation"]
    a.signal(signal.SIGSTOP)
    time.sleep(PAUSE_S)
    a.signal(signal.SIGCONT)
    wait_for(lambda: "expelled from the group after" in a.stderr_path.read_text(), timeout=20, what="a to notice")
    return generation


def test_a_paused_single_instance_rejoins_and_processes_again(
    log_url: str, log: Log, names: Callable[[str], str], tmp_path: Path
) -> None:
    with Group(log, log_url, tmp_path, names, "rejoin-one") as group:
        a = group.start("a")
        wait_for(lambda: a.tasks() == TASKS and a.latest.get("leader"), what="a to run every task")
        generation = pause_past_the_session(group, a)
        # Fed once it runs its tasks again under a newer generation: before that, its old tasks (nobody else
        # fenced them here) might still process and commit them before they are closed.
        wait_for(
            lambda: a.latest.get("generation", 0) > generation and a.states() == dict.fromkeys(TASKS, "RUNNING"),
            timeout=30,
            what="a to rejoin and run every task again",
        )
        group.feed_rounds(2, timeout=30, what="a to commit the rounds fed after its pause")
        assert a.tasks() == TASKS
        assert a.stop() == 0
    # Nothing was left uncommitted when it stopped: every key counts 1, 2, 3 once, all by a.
    by_key = outputs(log, group.out)
    assert set(by_key) == set(group.feed.sent)
    for key, seq in by_key.items():
        assert seq == [(n, "a") for n in range(1, group.feed.sent[key] + 1)], (key, seq)


def test_a_paused_instance_of_two_rejoins_and_gets_tasks_back(
    log_url: str, log: Log, names: Callable[[str], str], tmp_path: Path
) -> None:
    with Group(log, log_url, tmp_path, names, "rejoin-two") as group:
        a, b = group.start_two()
        generation = pause_past_the_session(group, a)
        # Fed once a runs tasks of a newer generation: a's last line from before the pause names the tasks it
        # had then, and rounds fed before its new tasks run may all be processed by b.
        wait_for(
            lambda: (
                a.latest.get("generation", 0) > generation
                and sorted(a.tasks() + b.tasks()) == TASKS
                and a.tasks()
                and b.tasks()
                and set(a.states().values()) == {"RUNNING"}
            ),
            timeout=30,
            what="a to rejoin and run tasks again",
        )
        processed = a.latest.get("processed", 0)
        group.feed_rounds(2, timeout=30, what="the rounds fed after the pause to be committed")
        wait_for(lambda: a.latest.get("processed", 0) > processed, timeout=5, what="a to process again")
        for inst in (a, b):
            assert inst.stop() == 0
    by_key = outputs(log, group.out)
    assert set(by_key) == set(group.feed.sent)
    for key, seq in by_key.items():
        assert [n for n, _ in seq] == list(range(1, group.feed.sent[key] + 1)), (key, seq)
