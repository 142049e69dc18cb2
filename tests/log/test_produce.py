"""Contract: producing records and reading them back byte-identical."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from streams.log import (
    OFFSET_BEGINNING,
    Log,
    RecordMetadata,
    RecordTooLargeError,
    TopicPartition,
    UnknownTopicError,
)
from streams.log.base import BatchSendError
from streams.log.partitioner import partition_for_key
from tests.log.helpers import LogCaps, read_records


def read_all(log: Log, topic: str, partitions: int, count: int) -> list:
    with log.consumer() as consumer:
        consumer.assign({TopicPartition(topic, p): OFFSET_BEGINNING for p in range(partitions)})
        records = read_records(consumer, count)
    assert len(records) == count, f"expected {count} records, read {len(records)}"
    return records


def test_produce_returns_contiguous_offsets_from_zero(log: Log, unique: Callable[..., str]) -> None:
    topic = unique()
    log.create_topic(topic)
    with log.producer() as producer:
        mds = [
            producer.produce(topic, f"v{i}".encode(), partition=0, timestamp=1_700_000_000_000 + i) for i in range(5)
        ]
    assert [md.offset for md in mds] == [0, 1, 2, 3, 4]
    assert all(isinstance(md, RecordMetadata) for md in mds)
    assert [(md.topic, md.partition, md.timestamp) for md in mds] == [
        (topic, 0, 1_700_000_000_000 + i) for i in range(5)
    ]


def test_records_round_trip_byte_identical(log: Log, unique: Callable[..., str]) -> None:
    topic = unique()
    log.create_topic(topic)
    sent = [
        (b"key", b"value", [], 1_600_000_000_001),
        (b"tomb", None, [], 1_600_000_000_002),
        (b"empty", b"", [], 1_600_000_000_003),
        (None, b"no key", [], 1_600_000_000_004),
        (
            b"\x00\xff binary",
            bytes(range(256)),
            [("h", b"1"), ("h", b"2"), ("nul", None), ("bin", b"\x00\xff")],
            1_600_000_000_005,
        ),
        (b"hdr-empty", b"v", [("e", b"")], 1_600_000_000_006),
    ]
    with log.producer() as producer:
        for key, value, headers, ts in sent:
            producer.produce(topic, value, key, partition=0, headers=headers, timestamp=ts)
    records = read_all(log, topic, 1, len(sent))
    assert [r.offset for r in records] == list(range(len(sent)))
    for record, (key, value, headers, ts) in zip(records, sent, strict=True):
        assert (record.topic, record.partition) == (topic, 0)
        assert record.key == key
        assert record.value == value
        assert type(record.value) is (bytes if value is not None else type(None))
        assert record.timestamp == ts
        assert list(record.headers) == headers


def test_send_and_flush_report_each_record_in_order(log: Log, unique: Callable[..., str]) -> None:
    topic = unique()
    log.create_topic(topic)
    reports: list[tuple[RecordMetadata | None, object]] = []
    with log.producer() as producer:
        for i in range(20):
            producer.send(topic, b"%d" % i, partition=0, on_delivery=lambda md, err: reports.append((md, err)))
        producer.flush()
        assert len(reports) == 20
    assert [err for _, err in reports] == [None] * 20
    assert [md.offset for md, _ in reports if md is not None] == list(range(20))
    records = read_all(log, topic, 1, 20)
    assert [r.value for r in records] == [b"%d" % i for i in range(20)]


def test_send_batch_sends_every_record_to_one_partition_and_reports_the_last(
    log: Log, unique: Callable[..., str]
) -> None:
    topic = unique()
    log.create_topic(topic, 2, compacted=True)
    reports: list[tuple[RecordMetadata | None, object]] = []
    with log.producer() as producer:
        batch = [(b"k%d" % i, b"v%d" % i if i != 3 else None) for i in range(5)]
        producer.send_batch(
            topic, 1, batch, headers=[("h", b"1")], on_last_delivery=lambda md, err: reports.append((md, err))
        )
        producer.flush()
        with pytest.raises(Exception, match="every record needs a key"):
            producer.send_batch(topic, 0, [(None, b"v")])
    assert [(md.partition, md.offset) for md, _ in reports if md is not None] == [(1, 4)]
    records = read_all(log, topic, 2, 5)
    assert [(r.partition, r.key, r.value, r.headers) for r in records] == [
        (1, b"k%d" % i, b"v%d" % i if i != 3 else None, (("h", b"1"),)) for i in range(5)
    ]


def test_send_records_lands_each_record_as_send_without_a_partition(log: Log, unique: Callable[..., str]) -> None:
    """A window's final results in one call: each record in the partition its key picks, at its own timestamp, with
    the headers, in order - what ``send`` of each record (no partition) writes, record for record."""
    per_record, batched = unique(), unique()
    for topic in (per_record, batched):
        log.create_topic(topic, 3)
    base = 1_700_000_000_000
    rows = [(b"key-%d" % (i % 7), b"v%d" % i if i % 5 else None, base + 1000 * (i % 4) + i) for i in range(40)]
    headers = [("h", b"1"), ("n", None)]
    with log.producer() as producer:
        for key, value, ts in rows:
            producer.send(per_record, value, key, headers=headers, timestamp=ts)
        producer.send_records(batched, rows, headers=headers)
        producer.send_records(batched, [])
        producer.flush()

    def landed(topic: str) -> dict[int, list[tuple[bytes | None, bytes | None, int, object]]]:
        by_partition: dict[int, list[tuple[bytes | None, bytes | None, int, object]]] = {}
        for r in read_all(log, topic, 3, len(rows)):
            by_partition.setdefault(r.partition, []).append((r.key, r.value, r.timestamp, r.headers))
        return by_partition

    expected = landed(per_record)
    assert landed(batched) == expected
    assert {p: [key for key, *_ in recs] for p, recs in expected.items()} == {
        p: [key for key, _, _ in rows if partition_for_key(key, 3) == p]
        for p in {partition_for_key(key, 3) for key, _, _ in rows}
    }


def test_send_records_stops_at_a_refused_record_with_its_index(log: Log, unique: Callable[..., str]) -> None:
    """A record the log refuses at the send stops the batch: the ones before it were sent, its own error says which."""
    topic = unique()
    log.create_topic(topic)
    too_large = b"x" * (16 * 1024 * 1024 + 1)
    with log.producer() as producer:
        with pytest.raises(BatchSendError) as caught:
            producer.send_records(topic, [(b"a", b"1", 1), (b"b", too_large, 2), (b"c", b"3", 3)])
        assert caught.value.index == 1
        assert isinstance(caught.value.error, RecordTooLargeError)
        producer.send_records(topic, [(b"c", b"3", 3)])
        producer.flush()
    assert [(r.key, r.value, r.timestamp) for r in read_all(log, topic, 1, 2)] == [(b"a", b"1", 1), (b"c", b"3", 3)]


def test_default_timestamp_is_wall_clock_millis(log: Log, unique: Callable[..., str]) -> None:
    import time

    topic = unique()
    log.create_topic(topic)
    before = time.time_ns() // 1_000_000
    with log.producer() as producer:
        md = producer.produce(topic, b"v")
    after = time.time_ns() // 1_000_000
    assert before <= md.timestamp <= after
    assert read_all(log, topic, 1, 1)[0].timestamp == md.timestamp


def test_same_key_same_partition_as_java_client(log: Log, unique: Callable[..., str]) -> None:
    topic = unique()
    log.create_topic(topic, 4)
    keys = [f"user-{i}".encode() for i in range(40)]
    with log.producer() as producer:
        first = {key: producer.produce(topic, b"1", key).partition for key in keys}
        second = {key: producer.produce(topic, b"2", key).partition for key in keys}
    assert first == second
    assert first == {key: partition_for_key(key, 4) for key in keys}
    assert len(set(first.values())) == 4  # 40 keys spread over every partition
    records = read_all(log, topic, 4, 80)
    for r in records:
        assert r.partition == partition_for_key(r.key, 4)


def test_explicit_partition_wins_over_key(log: Log, unique: Callable[..., str]) -> None:
    topic = unique()
    log.create_topic(topic, 3)
    key = b"user-1"
    other = (partition_for_key(key, 3) + 1) % 3
    with log.producer() as producer:
        md = producer.produce(topic, b"v", key, partition=other)
    assert md.partition == other
    assert read_all(log, topic, 3, 1)[0].partition == other


def test_keyless_records_land_in_valid_partitions(log: Log, unique: Callable[..., str]) -> None:
    topic = unique()
    log.create_topic(topic, 3)
    with log.producer() as producer:
        mds = [producer.produce(topic, b"%d" % i) for i in range(9)]
    assert {md.partition for md in mds} <= {0, 1, 2}
    assert sorted(r.value for r in read_all(log, topic, 3, 9)) == sorted(b"%d" % i for i in range(9))


def test_offsets_are_per_partition(log: Log, unique: Callable[..., str]) -> None:
    topic = unique()
    log.create_topic(topic, 2)
    with log.producer() as producer:
        offsets = [(p, producer.produce(topic, b"v", partition=p).offset) for p in (0, 1, 0, 0, 1)]
    assert offsets == [(0, 0), (1, 0), (0, 1), (0, 2), (1, 1)]


def test_end_offsets(log: Log, unique: Callable[..., str]) -> None:
    topic = unique()
    log.create_topic(topic, 3)
    assert log.end_offsets(topic) == {0: 0, 1: 0, 2: 0}
    with log.producer() as producer:
        # One record per produce: brokers with a wrong high watermark for multi-record batches are exact here.
        for p in (0, 0, 0, 2):
            producer.produce(topic, b"v", partition=p)
    assert log.end_offsets(topic) == {0: 3, 1: 0, 2: 1}


def test_end_offsets_of_missing_topic_raises(log: Log, unique: Callable[..., str]) -> None:
    with pytest.raises(UnknownTopicError):
        log.end_offsets(unique())


def test_record_above_the_size_limit_is_rejected(log: Log, unique: Callable[..., str]) -> None:
    topic = unique()
    log.create_topic(topic)
    with log.producer() as producer:
        with pytest.raises(RecordTooLargeError):
            producer.produce(topic, b"x" * (16 * 1024 * 1024 + 1))
        # The producer stays usable, and the rejected record was never written.
        assert producer.produce(topic, b"small").offset == 0


def test_record_above_the_topics_max_message_bytes_fails_its_delivery_alone(
    log: Log, log_caps: LogCaps, unique: Callable[..., str]
) -> None:
    """Checked when the record is written (a broker's check), so the send is accepted and the delivery fails."""
    log_caps.require("max_message_bytes")
    topic = unique()
    log.create_topic(topic, config={"max.message.bytes": "1000"})
    errors: dict[bytes, Exception | None] = {}
    refused: list[tuple[str, int, int, bytes | None, bytes | None]] = []
    with log.producer() as producer:
        producer.on_delivery_failure = lambda r, err: refused.append((r.topic, r.partition, r.offset, r.key, r.value))
        for value in (b"a", b"x" * 2000, b"c"):
            producer.send(
                topic, value, b"k", partition=0, on_delivery=lambda md, err, v=value: errors.__setitem__(v, err)
            )
        with pytest.raises(RecordTooLargeError):
            producer.flush()
    assert errors[b"a"] is None and errors[b"c"] is None
    assert isinstance(errors[b"x" * 2000], RecordTooLargeError)
    assert refused == [(topic, 0, -1, b"k", b"x" * 2000)]  # the listener gets the record itself
    assert [r.value for r in read_all(log, topic, 1, 2)] == [b"a", b"c"]
