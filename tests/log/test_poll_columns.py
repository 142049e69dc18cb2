"""Contract: ``Consumer.poll_columns`` reads the records ``poll`` reads, as one list per field and partition;
``Consumer.poll_runs`` reads them in runs of one partition, in poll order."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from functools import partial

from streams.log import OFFSET_BEGINNING, Consumer, Log, Record, RecordColumns, TopicPartition
from streams.log.base import runs_of
from tests.log.helpers import produce_values, read_records

PARTITIONS = 3
COUNT = 60  # records, spread over the partitions


def _topic_with_mixed_records(log: Log, topic: str) -> None:
    """``COUNT`` records over ``PARTITIONS`` partitions: keys and values with some None (a tombstone, no key),
    headers on some (a None header value among them), explicit timestamps."""
    log.create_topic(topic, PARTITIONS)
    with log.producer() as producer:
        for i in range(COUNT):
            producer.send(
                topic,
                None if i % 7 == 3 else b"value-%d" % i,
                None if i % 5 == 1 else b"key-%d" % i,
                partition=i % PARTITIONS,
                headers=[("n", b"%d" % i), ("empty", None)] if i % 4 == 0 else None,
                timestamp=1_700_000_000_000 + i,
            )
        producer.flush()


def _assigned(log: Log, topic: str) -> Consumer:
    consumer = log.consumer(read_committed=False)
    consumer.assign({TopicPartition(topic, p): OFFSET_BEGINNING for p in range(PARTITIONS)})
    return consumer


def _read_polls(
    poll: Callable[[], list[RecordColumns]], count: int, timeout: float = 15.0
) -> list[list[RecordColumns]]:
    """Each non-empty answer of ``poll`` until ``count`` records arrived or ``timeout`` passed."""
    polls: list[list[RecordColumns]] = []
    deadline = time.monotonic() + timeout
    while sum(len(c) for answer in polls for c in answer) < count and time.monotonic() < deadline:
        if answer := poll():
            polls.append(answer)
    return polls


def _read_columns(poll: Callable[[], list[RecordColumns]], count: int, timeout: float = 15.0) -> list[RecordColumns]:
    """Every ``RecordColumns`` polled until ``count`` records arrived or ``timeout`` passed."""
    return [c for answer in _read_polls(poll, count, timeout) for c in answer]


def _as_records(columns: list[RecordColumns]) -> list[Record]:
    return [
        Record(c.topic, c.partition, *fields)
        for c in columns
        for fields in zip(c.offsets, c.keys, c.values, c.timestamps, c.headers or [()] * len(c), strict=True)
    ]


def _per_partition(records: list[Record]) -> dict[int, list[Record]]:
    out: dict[int, list[Record]] = {}
    for record in records:
        out.setdefault(record.partition, []).append(record)
    return out


def test_poll_columns_reads_the_records_poll_reads(log: Log, unique: Callable[..., str]) -> None:
    topic = unique()
    _topic_with_mixed_records(log, topic)
    with _assigned(log, topic) as by_record:
        records = read_records(by_record, COUNT)
    with _assigned(log, topic) as by_column:
        columns = _read_columns(lambda: by_column.poll_columns(0.5, max_records=7, headers=True), COUNT)
        positions = {p: by_column.position(TopicPartition(topic, p)) for p in range(PARTITIONS)}
    assert len(records) == COUNT
    # one RecordColumns per partition and poll, every column as long as the offsets, offsets dense per partition
    for c in columns:
        assert (c.topic, len(c.keys), len(c.values), len(c.timestamps)) == (topic, len(c), len(c), len(c))
        assert c.headers is not None and len(c.headers) == len(c)
        assert c.offsets == list(range(c.offsets[0], c.offsets[0] + len(c)))
    assert _per_partition(_as_records(columns)) == _per_partition(records)
    assert positions == {p: COUNT // PARTITIONS for p in range(PARTITIONS)}


def test_poll_columns_leaves_headers_out_unless_asked(log: Log, unique: Callable[..., str]) -> None:
    topic = unique()
    _topic_with_mixed_records(log, topic)
    with _assigned(log, topic) as consumer:
        columns = _read_columns(lambda: consumer.poll_columns(0.5, max_records=COUNT), COUNT)
    assert sum(len(c) for c in columns) == COUNT
    assert all(c.headers is None for c in columns)


def test_poll_columns_stops_at_max_records_and_the_end_of_the_partition(log: Log, unique: Callable[..., str]) -> None:
    topic = unique()
    log.create_topic(topic)
    tp = TopicPartition(topic, 0)
    produce_values(log, topic, [b"%d" % i for i in range(10)])
    with log.consumer() as consumer:
        consumer.assign({tp: 3})
        columns = _read_columns(lambda: consumer.poll_columns(0.5, max_records=4), 7)
        assert all(len(c) <= 4 for c in columns)
        assert [o for c in columns for o in c.offsets] == list(range(3, 10))
        assert [v for c in columns for v in c.values] == [b"%d" % i for i in range(3, 10)]
        assert consumer.position(tp) == 10
        # at the end: nothing, until a record is produced; then that record, from where the last poll ended
        assert consumer.poll_columns(0.2) == []
        produce_values(log, topic, [b"new"])
        later = _read_columns(lambda: consumer.poll_columns(0.5), 1)
        assert [(c.offsets, c.values) for c in later] == [([10], [b"new"])]
        # poll and poll_columns share the position
        consumer.seek(tp, 8)
        assert [r.offset for r in read_records(consumer, 1)][:1] == [8]


def test_the_default_poll_columns_matches_the_backend_s(log: Log, unique: Callable[..., str]) -> None:
    """``Consumer.poll_columns`` (built from ``poll``, for any backend) gives what the backend's own gives."""
    topic = unique()
    _topic_with_mixed_records(log, topic)
    with _assigned(log, topic) as own:
        own_columns = _read_columns(lambda: own.poll_columns(0.5, max_records=9, headers=True), COUNT)
    with _assigned(log, topic) as default:
        default_columns = _read_columns(lambda: Consumer.poll_columns(default, 0.5, max_records=9, headers=True), COUNT)
    assert _per_partition(_as_records(default_columns)) == _per_partition(_as_records(own_columns))
    assert len(_as_records(default_columns)) == COUNT


def test_poll_columns_tells_the_partitions_of_several_topics_apart(log: Log, unique: Callable[..., str]) -> None:
    first, second = unique(), unique()
    for topic in (first, second):
        log.create_topic(topic, 2)
    with log.producer() as producer:
        for i in range(20):
            producer.send(first if i % 2 else second, b"%d" % i, partition=(i // 2) % 2)
        producer.flush()
    with log.consumer() as consumer:
        consumer.assign({TopicPartition(t, p): OFFSET_BEGINNING for t in (first, second) for p in (0, 1)})
        columns = _read_columns(lambda: consumer.poll_columns(0.5, max_records=20), 20)
    values: dict[tuple[str, int], list[bytes | None]] = {}
    for c in columns:
        assert c.offsets == list(range(c.offsets[0], c.offsets[0] + len(c)))
        values.setdefault((c.topic, c.partition), []).extend(c.values)
    assert values == {
        (first if i % 2 else second, p): [b"%d" % j for j in range(20) if j % 2 == i % 2 and (j // 2) % 2 == p]
        for i in (0, 1)
        for p in (0, 1)
    }


def test_poll_runs_reads_the_records_poll_reads_in_runs_of_one_partition(log: Log, unique: Callable[..., str]) -> None:
    topic = unique()
    _topic_with_mixed_records(log, topic)
    with _assigned(log, topic) as by_record:
        records = read_records(by_record, COUNT)
    for default in (False, True):
        with _assigned(log, topic) as by_run:
            poll_runs = Consumer.poll_runs if default else type(by_run).poll_runs  # the base class's, or its own
            polls = _read_polls(partial(poll_runs, by_run, 0.5, max_records=11), COUNT)
            positions = {p: by_run.position(TopicPartition(topic, p)) for p in range(PARTITIONS)}
        for runs in polls:
            assert sum(len(c) for c in runs) <= 11
            # each run as long as it can be: the next run of the same poll is another partition's
            assert all(a.partition != b.partition for a, b in itertools.pairwise(runs))
            for c in runs:
                assert c.headers is not None and len(c.headers) == len(c)  # headers always
                assert c.offsets == list(range(c.offsets[0], c.offsets[0] + len(c)))
        assert _per_partition(_as_records([c for runs in polls for c in runs])) == _per_partition(records)
        assert positions == {p: COUNT // PARTITIONS for p in range(PARTITIONS)}


def test_runs_of_keeps_the_poll_order_across_partitions() -> None:
    """The default ``poll_runs`` splits where the partition changes and never regroups: a task reading two topics
    sees their records interleaved as they were polled."""
    polled = [Record("a", 0, 0, b"k", b"1", 1), Record("a", 0, 1, b"k", b"2", 2), Record("b", 0, 0, None, b"3", 3)]
    polled += [Record("a", 0, 2, b"k", b"4", 4, (("h", b"v"),)), Record("a", 1, 0, b"k", b"5", 5)]
    runs = runs_of(polled)
    assert [(c.topic, c.partition, c.offsets) for c in runs] == [
        ("a", 0, [0, 1]),
        ("b", 0, [0]),
        ("a", 0, [2]),
        ("a", 1, [0]),
    ]
    assert _as_records(runs) == polled
    assert runs_of([]) == []
