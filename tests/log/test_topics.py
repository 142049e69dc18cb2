"""Contract: topic administration."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from streams.log import Log, TopicConfigError, TopicExistsError, TopicInfo, UnknownTopicError


def test_create_then_describe(log: Log, unique: Callable[..., str]) -> None:
    name = unique()
    info = log.create_topic(name, 3)
    assert (info.name, info.partitions, info.compacted) == (name, 3, False)
    described = log.describe_topic(name)
    assert described is not None
    assert (described.name, described.partitions, described.compacted) == (name, 3, False)


def test_create_compacted_topic(log: Log, unique: Callable[..., str]) -> None:
    name = unique()
    log.create_topic(name, 2, compacted=True)
    described = log.describe_topic(name)
    assert described is not None
    assert (described.partitions, described.compacted) == (2, True)
    assert described.config.get("cleanup.policy") == "compact"


def test_describe_missing_topic_is_none(log: Log, unique: Callable[..., str]) -> None:
    assert log.describe_topic(unique()) is None


def test_create_existing_topic_raises(log: Log, unique: Callable[..., str]) -> None:
    name = unique()
    log.create_topic(name)
    with pytest.raises(TopicExistsError, match=name):
        log.create_topic(name)


def test_list_and_delete(log: Log, unique: Callable[..., str]) -> None:
    a, b = unique("a"), unique("b")
    log.create_topic(a)
    log.create_topic(b, 2)
    assert {a, b} <= set(log.list_topics())
    log.delete_topic(a)
    assert log.describe_topic(a) is None
    topics = set(log.list_topics())
    assert a not in topics
    assert b in topics


def test_delete_missing_topic_raises(log: Log, unique: Callable[..., str]) -> None:
    with pytest.raises(UnknownTopicError):
        log.delete_topic(unique())


@pytest.mark.parametrize("partitions", [0, -1])
def test_create_rejects_bad_partition_count(log: Log, unique: Callable[..., str], partitions: int) -> None:
    with pytest.raises(ValueError, match="partitions"):
        log.create_topic(unique(), partitions)


@pytest.mark.parametrize("name", ["", "has space", "slash/no", "x" * 250, ".", ".."])
def test_create_rejects_bad_topic_name(log: Log, name: str) -> None:
    with pytest.raises(ValueError, match="topic name"):
        log.create_topic(name)


def test_ensure_topic_creates_when_missing(log: Log, unique: Callable[..., str]) -> None:
    name = unique()
    info = log.ensure_topic(name, 2, compacted=True)
    assert (info.name, info.partitions, info.compacted) == (name, 2, True)
    again = log.ensure_topic(name, 2, compacted=True)
    assert isinstance(again, TopicInfo)
    assert (again.partitions, again.compacted) == (2, True)


def test_ensure_topic_rejects_other_partition_count(log: Log, unique: Callable[..., str]) -> None:
    name = unique()
    log.create_topic(name, 3)
    with pytest.raises(TopicConfigError, match="3 partitions, expected exactly 1"):
        log.ensure_topic(name, 1)


def test_ensure_topic_rejects_uncompacted_when_compaction_required(log: Log, unique: Callable[..., str]) -> None:
    name = unique()
    log.create_topic(name, 1)
    with pytest.raises(TopicConfigError, match=r"cleanup\.policy=compact"):
        log.ensure_topic(name, 1, compacted=True)


def test_ensure_topic_accepts_compacted_when_not_required(log: Log, unique: Callable[..., str]) -> None:
    name = unique()
    log.create_topic(name, 1, compacted=True)
    assert log.ensure_topic(name, 1).compacted is True


def test_start_offsets(log: Log, unique: Callable[..., str]) -> None:
    name = unique()
    log.create_topic(name, 2)
    assert log.start_offsets(name) == {0: 0, 1: 0}
    with log.producer() as p:
        for value in (b"1", b"2", b"3"):
            p.send(name, value, b"k", partition=0)
        p.flush()
    assert log.start_offsets(name) == {0: 0, 1: 0}
    if not log.capabilities.compacts_itself:  # the two older records of key k go: the oldest left is offset 2
        log.compact(name)
        assert log.start_offsets(name) == {0: 2, 1: 0}
    with pytest.raises(UnknownTopicError, match="nope"):
        log.start_offsets(unique("nope"))
