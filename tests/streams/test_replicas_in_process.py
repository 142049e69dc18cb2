"""Two instances in one process on SQLite with a standby each: task states and lags in ``metrics()``, the
``StateListener``, reads served by standbys (marked stale), and a clean shutdown handing tasks back."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from streams import InvalidStateStoreError, StreamsApp, StreamsError
from streams.log import Log, open_log
from streams.log.partitioner import partition_for_key
from tests.streams.topologies import key_counts, key_counts_app
from tests.support.topics import create_topics, produce, read_all
from tests.support.waiting import wait_for

TASKS = ["0_0", "0_1"]


class Recorder:
    def __init__(self) -> None:
        self.app: list[tuple[str, str]] = []
        self.tasks: list[tuple[str, str, str]] = []

    def on_state_change(self, old: str, new: str) -> None:
        self.app.append((old, new))

    def on_task_state_change(self, task_id: str, old: str, new: str) -> None:
        self.tasks.append((task_id, old, new))


def test_standbys_in_metrics_listener_and_stale_reads(tmp_path: Path, names: Callable[[str], str]) -> None:
    url = f"sqlite:///{tmp_path / 'log'}"
    lg: Log = open_log(url)
    src, out, app_id = names("in"), names("out"), names("replicas")
    create_topics(lg, 2, src, out)
    keys = [f"k{i}" for i in range(20)]
    produce(lg, src, [(k, {"v": 1}) for k in keys])
    recorder = Recorder()

    def app(name: str, listener: Recorder | None = None) -> StreamsApp:
        return key_counts_app(src, out, app_id, url, tmp_path, name, session_timeout_ms=2000, state_listener=listener)

    first = app("first", recorder)
    second = app("second")
    with first, second:
        wait_for(lambda: len(first.tasks()) == 1 and len(second.tasks()) == 1, what="one task each")
        wait_for(
            lambda: first.standby_tasks() == second.tasks() and second.standby_tasks() == first.tasks(),
            what="a standby each",
        )
        (mine,) = first.tasks()
        (theirs,) = second.tasks()
        wait_for(lambda: first.metrics()["task_states"][theirs].get("lag") == 0, what="the standby to catch up")

        def processed_into_its_store(running: dict[str, Any]) -> bool:
            return running.get("processed", 0) == running.get("store_entries", {}).get("counts", 0) > 0

        # a task is RUNNING before its first poll: the standby can catch up first (seen in a fresh-clone run)
        wait_for(
            lambda: processed_into_its_store(first.metrics()["task_states"][mine]),
            what="the active task to count its records",
        )
        m = first.metrics()
        running = m["task_states"][mine]
        assert running["state"] == "RUNNING" and processed_into_its_store(running)
        assert m["task_states"][theirs] == {"state": "STANDBY", "lag": 0}
        assert sorted(m["task_states"]) == sorted([mine, theirs])
        assert m["generation"] >= 1 and m["instance"] and m["standby_tasks"] == [theirs]
        assert [m["leader"], second.metrics()["leader"]].count(True) == 1
        # The app and its tasks told the listener what they went through.
        assert ("REBALANCING", "RUNNING") in recorder.app
        assert (mine, "RESTORING", "RUNNING") in recorder.tasks
        assert (theirs, "CLOSED", "STANDBY") in recorder.tasks
        # Reads: the active partition answers; the other one only from the standby, marked stale.
        their_partition = int(theirs.split("_")[1])
        theirs_key = next(k for k in keys if partition_for_key(k.encode(), 2) == their_partition)
        mine_key = next(k for k in keys if partition_for_key(k.encode(), 2) != their_partition)
        assert first.store("counts").get(mine_key) == 1
        with pytest.raises(InvalidStateStoreError, match="runs on another instance"):
            first.store("counts").get(theirs_key)
        stale = first.store("counts", include_standby=True)
        wait_for(lambda: stale.get(theirs_key) == 1, what="the standby to hold the key")
        assert stale.is_stale(theirs_key) and not stale.is_stale(mine_key)
        assert len(stale.all()) == len(keys)
        second.close()
        # The second instance left cleanly: the first runs both tasks, its standby promoted in place.
        wait_for(lambda: first.tasks() == TASKS, what="the first instance to take both tasks")
        assert (theirs, "STANDBY", "RESTORING") in recorder.tasks
        assert first.store("counts").get(theirs_key) == 1 and first.standby_tasks() == []
    lg.close()


def test_the_leader_compacts_the_group_topics_where_the_log_does_not(
    tmp_path: Path, names: Callable[[str], str]
) -> None:
    """SQLite compacts only when asked: the leader keeps the heartbeat topic from growing forever."""
    url = f"sqlite:///{tmp_path / 'log'}"
    lg: Log = open_log(url)
    src, out, app_id = names("in"), names("out"), names("compact")
    create_topics(lg, 1, src, out)
    membership = f"{app_id}-membership"
    lg.create_topic(membership, 1, compacted=True)
    with lg.producer() as p:
        for _ in range(5):  # an old instance that left, five times over
            p.produce(membership, None, b"ghost", partition=0)
    with StreamsApp(key_counts(src, out), app_id, url, state_dir=tmp_path / "s", session_timeout_ms=2000) as app:
        wait_for(lambda: app.tasks() == ["0_0"], what="the app to run")
        ghosts = [r for r in read_all(lg, membership, quiet=0.3) if r.key == b"ghost"]
        assert len(ghosts) == 1
    lg.close()


def test_one_instance_per_state_directory(tmp_path: Path, names: Callable[[str], str]) -> None:
    url = f"sqlite:///{tmp_path / 'log'}"
    lg: Log = open_log(url)
    src, out, app_id = names("in"), names("out"), names("locked")
    create_topics(lg, 1, src, out)
    with StreamsApp(key_counts(src, out), app_id, url, state_dir=tmp_path / "s") as first:
        second = StreamsApp(key_counts(src, out), app_id, url, state_dir=tmp_path / "s")
        with pytest.raises(StreamsError, match=f"state directory .*{app_id} is in use by another instance"):
            second.start()
        second.close()
        instance_id = first.instance_id
    # The id outlives the process: a restarted instance is recognised (and its local state with it).
    with StreamsApp(key_counts(src, out), app_id, url, state_dir=tmp_path / "s") as again:
        assert again.instance_id == instance_id
    lg.close()
