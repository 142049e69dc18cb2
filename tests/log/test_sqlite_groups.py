"""Consumer groups on the SQLite backend: every member owns every partition, ``on_assign`` in the first poll."""

from __future__ import annotations

import pytest

from streams.log import (
    LogError,
    TopicPartition,
    UnknownTopicError,
)
from streams.log.sqlite import SqliteLog
from tests.log.helpers import poll_through


def test_on_assign_runs_in_the_first_poll_and_every_member_owns_all(slog: SqliteLog) -> None:
    slog.create_topic("t", 3)
    all_tps = [TopicPartition("t", p) for p in range(3)]
    calls: list[str] = []
    with slog.consumer("g") as a, slog.consumer("g") as b:
        a.subscribe(["t"], on_assign=lambda tps: calls.append(f"a:{len(tps)}"))
        b.subscribe(["t"], on_assign=lambda tps: calls.append(f"b:{len(tps)}"))
        assert calls == []
        assert a.assignment() == []
        a.poll(timeout=0)
        b.poll(timeout=0)
        assert calls == ["a:3", "b:3"]
        assert a.assignment() == all_tps == b.assignment()


def test_on_assign_may_seek(slog: SqliteLog) -> None:
    slog.create_topic("t")
    with slog.producer() as producer:
        for i in range(5):
            producer.produce("t", b"%d" % i)
    with slog.consumer("g") as consumer:
        consumer.subscribe(["t"], on_assign=lambda tps: consumer.seek(tps[0], 3))
        assert [r.offset for r in poll_through(consumer, "t", 0, 4)] == [3, 4]


def test_group_calls_need_a_group(slog: SqliteLog) -> None:
    slog.create_topic("t")
    with slog.consumer() as consumer:
        with pytest.raises(LogError, match="needs a consumer group"):
            consumer.subscribe(["t"])
        with pytest.raises(LogError, match="needs a consumer group"):
            consumer.commit({TopicPartition("t", 0): 1})


def test_subscribe_to_unknown_topic(slog: SqliteLog) -> None:
    with slog.consumer("g") as consumer, pytest.raises(UnknownTopicError, match="nope"):
        consumer.subscribe(["nope"])
