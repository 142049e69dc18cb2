"""Contract: consumers reading by assignment and as group members."""

from __future__ import annotations

import threading
from collections.abc import Callable

from streams.log import OFFSET_BEGINNING, OFFSET_END, Log, Record, TopicPartition
from tests.log.helpers import one_partition_holding, poll_through, produce_values, read_records


def test_fetch_from_an_offset(log: Log, unique: Callable[..., str]) -> None:
    tp = one_partition_holding(log, unique(), [b"%d" % i for i in range(10)])
    with log.consumer() as consumer:
        consumer.assign({tp: 6})
        records = read_records(consumer, 4)
        assert [(r.offset, r.value) for r in records] == [(i, b"%d" % i) for i in range(6, 10)]
        assert consumer.position(tp) == 10
        assert consumer.assignment() == [tp]


def test_offset_end_reads_only_new_records(log: Log, unique: Callable[..., str]) -> None:
    tp = one_partition_holding(log, unique(), [b"old-0", b"old-1"])
    with log.consumer() as consumer:
        consumer.assign({tp: OFFSET_END})
        assert consumer.poll(timeout=0.2) == []
        produce_values(log, tp.topic, [b"new"])
        records = read_records(consumer, 1)
    assert [(r.offset, r.value) for r in records] == [(2, b"new")]


def test_seek_rewinds_and_position_follows(log: Log, unique: Callable[..., str]) -> None:
    tp = one_partition_holding(log, unique(), [b"%d" % i for i in range(5)])
    with log.consumer() as consumer:
        consumer.assign({tp: OFFSET_BEGINNING})
        assert [r.offset for r in read_records(consumer, 5)] == [0, 1, 2, 3, 4]
        assert consumer.position(tp) == 5
        consumer.seek(tp, 2)
        assert consumer.position(tp) == 2
        assert [r.offset for r in read_records(consumer, 3)] == [2, 3, 4]
        consumer.seek(tp, OFFSET_BEGINNING)
        assert [r.value for r in read_records(consumer, 5)] == [b"0", b"1", b"2", b"3", b"4"]


def test_poll_respects_max_records_and_keeps_order(log: Log, unique: Callable[..., str]) -> None:
    topic = unique()
    log.create_topic(topic, 2)
    with log.producer() as producer:
        for i in range(30):
            producer.send(topic, b"%d" % i, partition=i % 2)
        producer.flush()
    with log.consumer() as consumer:
        consumer.assign({TopicPartition(topic, p): OFFSET_BEGINNING for p in (0, 1)})
        records: list[Record] = []
        for _ in range(200):
            batch = consumer.poll(timeout=0.5, max_records=4)
            assert len(batch) <= 4
            records.extend(batch)
            if len(records) >= 30:
                break
    assert len(records) == 30
    for p in (0, 1):
        mine = [r for r in records if r.partition == p]
        assert [r.offset for r in mine] == list(range(15))
        assert [r.value for r in mine] == [b"%d" % i for i in range(p, 30, 2)]


def test_poll_wakes_up_for_a_record_produced_while_waiting(log: Log, unique: Callable[..., str]) -> None:
    topic = unique()
    log.create_topic(topic)
    tp = TopicPartition(topic, 0)
    got: list[Record] = []
    with log.consumer() as consumer:
        consumer.assign({tp: OFFSET_BEGINNING})
        consumer.poll(timeout=0.05)  # settle the assignment before the waiting poll
        waiting = threading.Thread(target=lambda: got.extend(consumer.poll(timeout=20)))
        waiting.start()
        produce_values(log, topic, [b"wake"])
        waiting.join(30)
    assert [r.value for r in got] == [b"wake"]


def test_group_offsets_survive_a_new_consumer(log: Log, unique: Callable[..., str]) -> None:
    topic, group = unique(), unique("group")
    log.create_topic(topic, 2)
    with log.producer() as producer:
        for i in range(6):
            producer.produce(topic, b"first-%d" % i, partition=i % 2)
    assigned: list[list[TopicPartition]] = []
    revoked: list[list[TopicPartition]] = []
    tps = [TopicPartition(topic, 0), TopicPartition(topic, 1)]
    with log.consumer(group) as first:
        first.subscribe([topic], on_assign=assigned.append, on_revoke=revoked.append)
        records = read_records(first, 6)
        assert sorted(r.value for r in records) == sorted(b"first-%d" % i for i in range(6))
        assert [sorted(a, key=lambda tp: tp.partition) for a in assigned] == [tps]
        assert sorted(first.assignment(), key=lambda tp: tp.partition) == tps
        first.commit()
        assert first.committed(tps) == {tps[0]: 3, tps[1]: 3}
    assert [sorted(r, key=lambda tp: tp.partition) for r in revoked] == [tps]
    assert log.committed(group, tps) == {tps[0]: 3, tps[1]: 3}

    with log.producer() as producer:
        last = producer.produce(topic, b"second", partition=1)
    with log.consumer(group) as second:
        second.subscribe([topic])
        records = poll_through(second, topic, 1, last.offset)
    assert [(r.partition, r.offset, r.value) for r in records] == [(1, 3, b"second")]


def test_commit_explicit_offsets(log: Log, unique: Callable[..., str]) -> None:
    topic, group = unique(), unique("group")
    log.create_topic(topic, 2)
    tp0, tp1 = TopicPartition(topic, 0), TopicPartition(topic, 1)
    assert log.committed(group, [tp0, tp1]) == {tp0: None, tp1: None}
    with log.consumer(group) as consumer:
        consumer.assign({tp0: OFFSET_BEGINNING})
        consumer.commit({tp0: 7})
        assert consumer.committed([tp0, tp1]) == {tp0: 7, tp1: None}
        consumer.commit({tp0: 9})
    assert log.committed(group, [tp0, tp1]) == {tp0: 9, tp1: None}
    assert log.committed(unique("other-group"), [tp0]) == {tp0: None}


def test_subscribe_starts_at_committed_offset(log: Log, unique: Callable[..., str]) -> None:
    topic, group = unique(), unique("group")
    tp = one_partition_holding(log, topic, [b"%d" % i for i in range(5)])
    with log.consumer(group) as committer:
        committer.assign({tp: OFFSET_BEGINNING})
        committer.commit({tp: 3})
    with log.consumer(group) as consumer:
        consumer.subscribe([topic])
        records = poll_through(consumer, topic, 0, 4)
    assert [r.offset for r in records] == [3, 4]
