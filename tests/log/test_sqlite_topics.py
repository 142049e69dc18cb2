"""Topics on the SQLite backend: compaction (``Log.compact``), their config, re-creation."""

from __future__ import annotations

import pytest

from streams.log import (
    OFFSET_BEGINNING,
    LogError,
    TopicConfigError,
    TopicPartition,
    UnknownTopicError,
)
from streams.log.sqlite import SqliteLog
from tests.log.helpers import read_records


def test_compaction_keeps_the_newest_record_per_key(slog: SqliteLog) -> None:
    slog.create_topic("c", 2, compacted=True)
    with slog.producer() as producer:
        for version in range(3):
            for key in (b"a", b"b", b"c"):
                producer.send("c", b"%s-%d" % (key, version), key, partition=0)
        producer.send("c", None, b"b", partition=0)  # tombstone for b: offset 9
        producer.send("c", b"other", b"a", partition=1)
        producer.flush()
    assert slog.compact("c") == 7
    assert slog.end_offsets("c") == {0: 10, 1: 1}
    with slog.consumer() as consumer:
        consumer.assign({TopicPartition("c", 0): OFFSET_BEGINNING, TopicPartition("c", 1): OFFSET_BEGINNING})
        records = read_records(consumer, 4)
    assert sorted((r.partition, r.offset, r.key, r.value) for r in records) == [
        (0, 6, b"a", b"a-2"),
        (0, 8, b"c", b"c-2"),
        (0, 9, b"b", None),
        (1, 0, b"a", b"other"),
    ]
    # Offsets are never reused after compaction deleted rows.
    with slog.producer() as producer:
        assert producer.produce("c", b"new", b"a", partition=0).offset == 10
    assert slog.compact("c") == 1
    assert slog.compact("c") == 0


def test_compacted_topic_rejects_keyless_records(slog: SqliteLog) -> None:
    slog.create_topic("c", compacted=True)
    with slog.producer() as producer, pytest.raises(LogError, match="needs a key"):
        producer.send("c", b"v")


def test_compact_unknown_topic(slog: SqliteLog) -> None:
    with pytest.raises(UnknownTopicError, match="nope"):
        slog.compact("nope")


def test_a_bad_max_message_bytes_is_refused_at_create_topic(slog: SqliteLog) -> None:
    for bad in ("0", "-5", "1kb"):
        with pytest.raises(TopicConfigError, match=rf"'t': max.message.bytes must be a positive integer, got '{bad}'"):
            slog.create_topic("t", config={"max.message.bytes": bad})
    assert slog.list_topics() == []


def test_recreated_topic_starts_empty(slog: SqliteLog) -> None:
    slog.create_topic("t")
    tp = TopicPartition("t", 0)
    with slog.producer() as producer:
        producer.produce("t", b"old")
        producer.produce("t", b"old")
        with slog.consumer("g") as consumer:
            consumer.commit({tp: 2})
        slog.delete_topic("t")
        slog.create_topic("t", 2)
        assert slog.end_offsets("t") == {0: 0, 1: 0}
        assert slog.committed("g", [tp]) == {tp: None}
        assert producer.produce("t", b"new", partition=1).offset == 0
    with slog.consumer() as consumer:
        consumer.assign({tp: OFFSET_BEGINNING, TopicPartition("t", 1): OFFSET_BEGINNING})
        assert [r.value for r in read_records(consumer, 1)] == [b"new"]
