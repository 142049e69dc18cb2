"""Standby replicas apply only committed changes: held back until the group's offsets cover them, dropped
when a new owner's barrier says they were never committed; their checkpoint says how far they got."""

from __future__ import annotations

from pathlib import Path

import orjson

from streams import StreamsBuilder
from streams.changelog import BARRIER_KEY, barrier_headers, read_checkpoint, source_header
from streams.handlers import handler_from
from streams.log import Log, TopicPartition, open_log
from streams.metadata import TopicNames
from streams.processor import SystemClock
from streams.record_serdes import INT, TimestampedSerde
from streams.standby import StandbyTask, StandbyUpdater
from streams.task import StreamTask, TaskEnv

APP = "app"
CHANGELOG = TopicPartition(f"{APP}-counts-changelog", 0)
INPUT = TopicPartition("in", 0)


def standby_of(lg: Log, state_dir: Path) -> StandbyTask:
    b = StreamsBuilder()
    b.stream("in", key=str, value=str).group_by_key().count(store="counts", kind="rocksdb")
    topology = b.build()
    env = TaskEnv(
        APP,
        topology,
        lambda *a, **k: None,
        SystemClock(),
        state_dir,
        "rocksdb",
        1000,
        handler_from("fail"),
        TopicNames(APP),
        lambda topic: 1,
    )
    (sub,) = topology.sub_topologies()
    task = StreamTask(sub, 0, env)
    return StandbyTask(task, "STANDBY", read_checkpoint(task.task_dir) if task.task_dir else {})


COUNTS = TimestampedSerde(INT)  # the DSL's stores keep (value, timestamp)


def write(lg: Log, entries: list[tuple[str, int | None]], input_offset: int) -> None:
    """What an active task's flush writes: changed keys with the input position they reflect."""
    with lg.producer() as p:
        for key, count in entries:
            vb = None if count is None else COUNTS.serialize((count, 100 + input_offset), CHANGELOG.topic, False)
            p.send(
                CHANGELOG.topic, vb, key.encode(), partition=0, headers=source_header([(INPUT.topic, 0, input_offset)])
            )


def commit(lg: Log, offset: int) -> None:
    with lg.consumer(APP) as c:
        c.commit({INPUT: offset})


def counts(standby: StandbyTask) -> dict[str, int]:
    return dict(standby.task.stores["counts"].all())


def test_standby_applies_committed_changes_holds_back_the_rest_and_drops_what_a_barrier_rules_out(
    tmp_path: Path,
) -> None:
    with open_log(f"sqlite:///{tmp_path / 'log'}") as lg:
        lg.create_topic("in", 1)
        lg.create_topic(CHANGELOG.topic, 1, compacted=True)
        standby = standby_of(lg, tmp_path / "state")
        with lg.consumer(APP) as offsets:
            updater = StandbyUpdater(lambda: lg.consumer(None), offsets.committed, confirm_interval=0)
            updater.add(standby)

            write(lg, [("a", 1), ("b", 1)], input_offset=2)
            commit(lg, 2)
            write(lg, [("a", 2)], input_offset=3)  # flushed, offsets not committed yet
            updater.poll()
            assert counts(standby) == {"a": 1, "b": 1}
            assert standby.starts() == {CHANGELOG: 2} and standby.pending() == 1

            commit(lg, 3)
            updater.poll()
            assert counts(standby) == {"a": 2, "b": 1} and standby.starts() == {CHANGELOG: 3}

            # The owner dies after flushing a change it never commits; the new owner's barrier carries the
            # offsets it found committed (3): the change reflecting input 4 is dropped, not applied.
            write(lg, [("b", 2)], input_offset=4)
            updater.poll()
            with lg.producer() as p:
                p.send(CHANGELOG.topic, None, BARRIER_KEY, partition=0, headers=barrier_headers({("in", 0): 3}))
            write(lg, [("c", 1)], input_offset=4)  # the new owner redoes input 3 -> 4 differently
            commit(lg, 4)
            updater.poll()
            updater.poll()
            assert counts(standby) == {"a": 2, "b": 1, "c": 1}
            assert standby.starts() == {CHANGELOG: 6} and standby.pending() == 0
            assert standby.applied_records == 4 and updater.applied_records == 4

            standby.checkpoint()
            assert orjson.loads((tmp_path / "state" / APP / "0_0" / ".checkpoint").read_bytes())["offsets"] == {
                f"{CHANGELOG.topic}:0": 6
            }
            # A replica created later starts where the checkpoint says, with the store's data on disk.
            updater.remove(standby.id)
            standby.close()
            again = standby_of(lg, tmp_path / "state")
            assert again.starts() == {CHANGELOG: 6} and counts(again) == {"a": 2, "b": 1, "c": 1}
            again.close()
            updater.close()
