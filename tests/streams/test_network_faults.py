"""A streams instance cut off from the broker past its session timeout (``tests/support/faults.py``): its tasks
move to the other instance, it can neither produce nor commit while cut off, and it rejoins once healed; under
exactly-once and at-least-once. The application and its checks are ``tests/streams/groups.py``'s (``key_counts``:
the output of a key is 1, 2, 3, ... as long as no task lost or redid work)."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from streams.log import Log, TopicPartition, open_log
from tests.streams.groups import PARTITIONS, SESSION_MS, TASKS, Group, outputs
from tests.support.broker import broker_log_url
from tests.support.faults import FaultBroker, Namespace, small_disk
from tests.support.waiting import wait_for

pytestmark = pytest.mark.kafka


@pytest.fixture
def fault_log_url(faults_broker: FaultBroker) -> str:
    return broker_log_url(faults_broker.bootstrap)


@pytest.fixture
def fault_log(fault_log_url: str) -> Iterator[Log]:
    lg = open_log(fault_log_url)
    yield lg
    lg.close()


@pytest.mark.parametrize("guarantee", ["exactly_once_v2", "at_least_once"])
def test_an_instance_cut_off_past_its_session_loses_its_tasks_writes_nothing_and_rejoins(
    guarantee: str,
    fault_log_url: str,
    fault_log: Log,
    faults_broker: FaultBroker,
    make_namespace: Callable[[], Namespace],
    names: Callable[[str], str],
    tmp_path: Path,
) -> None:
    ns = make_namespace()
    with Group(fault_log, fault_log_url, tmp_path, names, guarantee.replace("_", "")) as group:
        app_id, feed = group.app_id, group.feed
        inputs = [TopicPartition(group.src, p) for p in range(PARTITIONS)]
        a, b = group.start_two("--guarantee", guarantee, wrapper_a=ns.wrapper)
        lost = set(a.tasks())
        group.feed_rounds(5, what="the first rounds to be committed")
        committed = [fault_log.committed(app_id, inputs)]
        with ns.cut(faults_broker.peer, bound=90):
            cut_at = time.monotonic()
            wait_for(lambda: b.tasks() == TASKS, timeout=60, what="b to take over the tasks of the cut-off instance")
            moved_after = time.monotonic() - cut_at
            group.feed_rounds(5, what="b to process and commit the rounds fed during the cut")
            committed.append(fault_log.committed(app_id, inputs))
            time.sleep(SESSION_MS / 1000)  # a, still cut off, holds its stale tasks' work a while longer
            committed.append(fault_log.committed(app_id, inputs))
        healed_at = time.monotonic()
        wait_for(
            lambda: sorted(a.tasks() + b.tasks()) == TASKS and a.tasks() and b.tasks(),
            timeout=60,
            what="the healed instance to rejoin and share the tasks again",
        )
        rejoined_after = time.monotonic() - healed_at
        group.feed_rounds(3, what="the last rounds to be committed")
        committed.append(fault_log.committed(app_id, inputs))

        text = a.stderr_path.read_text()
        print(
            f"\n{guarantee}: tasks moved {moved_after:.1f} s after the cut; a rejoined {rejoined_after:.1f} s after "
            f"the heal; a noticed: {'fenced' in text}, {'expelled' in text or 'session' in text}"
        )
        # Committed offsets never went back (a commit by the cut-off instance would rewind them).
        for earlier, later in itertools.pairwise(committed):
            assert all((later[tp] or 0) >= (earlier[tp] or 0) for tp in inputs), (earlier, later)
        # Every key counts 1, 2, 3, ... to what was sent, without a repeat: nothing lost, nothing redone, under
        # both guarantees. (The cut starts once everything fed was committed, so the cut-off instance has no
        # transaction in flight: no aborted record, which tansu would show to read_committed readers, can
        # stand in for a repeat here. A repeat would be work redone by a task that lost its state or offsets.)
        by_key = outputs(fault_log, group.out)
        assert set(by_key) == set(feed.sent)
        for key, seq in by_key.items():
            assert [n for n, _ in seq] == list(range(1, feed.sent[key] + 1)), (key, seq)
        for inst in (a, b):
            assert inst.stop() == 0
        assert lost


@pytest.mark.parametrize("guarantee", ["exactly_once_v2", "at_least_once"])
def test_broker_latency_spikes_lose_nothing(
    guarantee: str,
    fault_log_url: str,
    fault_log: Log,
    faults_broker: FaultBroker,
    names: Callable[[str], str],
    tmp_path: Path,
) -> None:
    with Group(fault_log, fault_log_url, tmp_path, names, "spiky" + guarantee.replace("_", "")) as group:
        a, b = group.start_two("--guarantee", guarantee)
        with group.feed.continuously(pause=0.2):
            # each way: round trips of 0.6, 1.6 and 0.6 s, each held past the 2 s session timeout
            for spike in (0.3, 0.8, 0.3):
                with faults_broker.proxy.delayed(spike, bound=30):
                    time.sleep(2.5)
                time.sleep(0.5)
        group.wait_until_committed(what="everything fed to be committed after the spikes")
        by_key = outputs(fault_log, group.out)
        assert set(by_key) == set(group.feed.sent)
        repeats = 0
        for key, seq in by_key.items():
            counts = [n for n, _ in seq]
            # nothing lost, and the stores exact: every count from 1 to what was sent, the last one exact. A
            # repeat may be a transaction aborted during a spike, which tansu shows to read_committed readers
            # (TANSU_MISSING["read_committed_aborts"]), so exactness of the outputs is not asserted here.
            assert set(range(1, group.feed.sent[key] + 1)) <= set(counts), (key, seq)
            assert counts[-1] == group.feed.sent[key], (key, seq)
            repeats += len(counts) - len(set(counts))
        print(f"\n{guarantee}: {group.feed.rounds} rounds through 3 latency spikes, {repeats} repeated outputs")
        for inst in (a, b):
            assert inst.stop() == 0


def test_a_full_state_directory_stops_the_app_with_a_clear_error_and_a_restart_recovers(
    kafka_log_url: str, names: Callable[[str], str], tmp_path: Path
) -> None:
    with open_log(kafka_log_url) as log, Group(log, kafka_log_url, tmp_path, names, "diskfull") as group:
        state = tmp_path / "state-full"
        full = group.start("full", "--guarantee", "exactly_once_v2", wrapper=small_disk(state, "400k"))
        wait_for(lambda: full.tasks() == TASKS or full.proc.poll() is not None, what="the app to start")
        for _ in range(150):
            if full.proc.poll() is not None:
                break
            group.feed.round()
            time.sleep(0.1)
        code = full.proc.wait(60)
        text = full.stderr_path.read_text()
        print(f"\nexit {code}; last lines:\n" + "\n".join(text.splitlines()[-8:]))
        assert code != 0
        last = text.strip().splitlines()[-1]  # the error the app stopped with: the store and the cause
        assert last.startswith("streams.errors.StateStoreError: cannot write RocksDB store at ") or last.startswith(
            "streams.errors.StateStoreError: cannot open RocksDB store at "
        ), last
        assert str(state) in last and "No space left on device" in last, last
        # a restart on a disk with room recovers the stores from their changelogs and goes on exactly
        again = group.start("again", "--guarantee", "exactly_once_v2")
        group.feed_rounds(2, what="the restarted app to catch up and commit")
        by_key = outputs(log, group.out)
        assert set(by_key) == set(group.feed.sent)
        for key, seq in by_key.items():
            assert seq[-1][0] == group.feed.sent[key], (key, seq)
        assert again.stop() == 0
