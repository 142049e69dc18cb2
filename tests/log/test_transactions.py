"""Contract: transactional producers (atomic records + group offsets, fencing, state errors)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest

from streams.log import (
    OFFSET_BEGINNING,
    Log,
    LogError,
    Producer,
    ProducerFencedError,
    RecordMetadata,
    RecordTooLargeError,
    TopicPartition,
    TransactionError,
)
from tests.log.helpers import LogCaps, poll_through


def read_through(log: Log, topic: str, offset: int, partition: int = 0) -> list:
    with log.consumer() as consumer:
        consumer.assign({TopicPartition(topic, partition): OFFSET_BEGINNING})
        return poll_through(consumer, topic, partition, offset)


def marker(log: Log, topic: str, partition: int = 0) -> int:
    """Produce a plain record after the transactional ones and return its offset (a read barrier)."""
    with log.producer() as producer:
        return producer.produce(topic, b"marker", partition=partition).offset


def commit(producer: Producer, topic: str, value: bytes) -> None:
    """A transaction of one record (partition 0)."""
    producer.begin_transaction()
    producer.send(topic, value, partition=0)
    producer.commit_transaction()


def assert_only_fresh_is_read(log: Log, log_caps: LogCaps, topic: str) -> None:
    """The fencing producer's record ``fresh`` is read; where aborted records are hidden, nothing else is."""
    values = [r.value for r in read_through(log, topic, marker(log, topic))]
    assert b"fresh" in values
    if log_caps.has("read_committed_aborts"):
        assert values == [b"fresh", b"marker"]


@contextmanager
def initialized(log: Log, txn_id: str) -> Iterator[Producer]:
    """A transactional producer, its transactions initialized."""
    with log.producer(txn_id) as producer:
        producer.init_transactions()
        yield producer


@contextmanager
def fenced_by_a_successor(log: Log, txn_id: str) -> Iterator[tuple[Producer, Producer]]:
    """A transactional producer (the zombie) and the one with its id that fenced it, each initialized in turn."""
    with initialized(log, txn_id) as old, initialized(log, txn_id) as new:
        yield old, new


def test_committed_transaction_is_visible(log: Log, unique: Callable[..., str]) -> None:
    topic = unique()
    log.create_topic(topic)
    reports: list[RecordMetadata | None] = []
    with initialized(log, unique("txn")) as producer:
        producer.begin_transaction()
        for i in range(3):
            producer.send(topic, b"t%d" % i, b"k", partition=0, on_delivery=lambda md, err: reports.append(md))
        producer.commit_transaction()
    assert len(reports) == 3
    offsets = [md.offset for md in reports if md is not None]
    assert offsets == sorted(offsets) and len(set(offsets)) == 3
    records = read_through(log, topic, marker(log, topic))
    assert [r.value for r in records if r.value != b"marker"] == [b"t0", b"t1", b"t2"]
    assert [r.offset for r in records if r.value != b"marker"] == offsets


def test_aborted_transaction_is_invisible(log: Log, log_caps: LogCaps, unique: Callable[..., str]) -> None:
    log_caps.require("read_committed_aborts")
    topic = unique()
    log.create_topic(topic)
    with initialized(log, unique("txn")) as producer:
        producer.begin_transaction()
        producer.send(topic, b"aborted", partition=0)
        producer.abort_transaction()
        commit(producer, topic, b"committed")
    records = read_through(log, topic, marker(log, topic))
    assert [r.value for r in records] == [b"committed", b"marker"]


def test_offsets_commit_with_the_transaction(log: Log, unique: Callable[..., str]) -> None:
    topic, group = unique(), unique("group")
    log.create_topic(topic, 2)
    tp0, tp1 = TopicPartition(topic, 0), TopicPartition(topic, 1)
    with initialized(log, unique("txn")) as producer:
        producer.begin_transaction()
        producer.send(topic, b"out", partition=1)
        producer.send_offsets_to_transaction(group, {tp0: 5, tp1: 2})
        assert log.committed(group, [tp0, tp1]) == {tp0: None, tp1: None}  # not before commit
        producer.commit_transaction()
        assert log.committed(group, [tp0, tp1]) == {tp0: 5, tp1: 2}

        producer.begin_transaction()
        producer.send(topic, b"dropped", partition=1)
        producer.send_offsets_to_transaction(group, {tp0: 9})
        producer.abort_transaction()
    assert log.committed(group, [tp0, tp1]) == {tp0: 5, tp1: 2}


def test_new_producer_with_same_id_fences_the_old_one(log: Log, log_caps: LogCaps, unique: Callable[..., str]) -> None:
    topic, txn_id = unique(), unique("txn")
    log.create_topic(topic)
    with fenced_by_a_successor(log, txn_id) as (old, new):
        # Kafka may only notice at the first request, so the whole transaction is inside the raises.
        with pytest.raises(ProducerFencedError):
            commit(old, topic, b"zombie")
        # Once fenced, always fenced: every later call says so, naming the id.
        assert old.transaction.fenced
        with pytest.raises(ProducerFencedError, match=txn_id):
            old.begin_transaction()
        commit(new, topic, b"fresh")
    assert_only_fresh_is_read(log, log_caps, topic)


def test_open_transaction_of_a_fenced_producer_cannot_commit(
    log: Log, log_caps: LogCaps, unique: Callable[..., str]
) -> None:
    log_caps.require("fenced_commit")
    topic, txn_id = unique(), unique("txn")
    log.create_topic(topic)
    with log.producer(txn_id) as old:
        old.init_transactions()
        old.begin_transaction()
        old.send(topic, b"zombie", partition=0)
        with log.producer(txn_id) as new:
            new.init_transactions()
            with pytest.raises(ProducerFencedError):
                old.commit_transaction()
            commit(new, topic, b"fresh")
    assert_only_fresh_is_read(log, log_caps, topic)


def test_transaction_calls_in_the_wrong_state_raise(log: Log, unique: Callable[..., str]) -> None:
    topic = unique()
    log.create_topic(topic)
    with log.producer() as plain, pytest.raises(TransactionError):
        plain.begin_transaction()
    with log.producer(unique("txn")) as producer:
        with pytest.raises(TransactionError):
            producer.begin_transaction()  # before init_transactions
        producer.init_transactions()
        with pytest.raises(TransactionError):
            producer.commit_transaction()  # nothing begun
        with pytest.raises(TransactionError):
            producer.abort_transaction()
        producer.begin_transaction()
        with pytest.raises(TransactionError):
            producer.begin_transaction()  # already open
        producer.send(topic, b"ok", partition=0)
        producer.commit_transaction()
    assert [r.value for r in read_through(log, topic, 0)] == [b"ok"]


def test_send_outside_a_transaction_is_refused(log: Log, unique: Callable[..., str]) -> None:
    topic = unique()
    log.create_topic(topic)
    with (
        initialized(log, unique("txn")) as producer,
        pytest.raises(TransactionError, match=r"call begin_transaction\(\) before send\(\)"),
    ):
        producer.send(topic, b"lost", partition=0)


def test_produce_inside_a_transaction_is_refused_and_send_reports_offsets_at_commit(
    log: Log, unique: Callable[..., str]
) -> None:
    # The contract's one way to learn a transactional record's offset, the same on every backend.
    topic = unique()
    log.create_topic(topic)
    landed: list[RecordMetadata | None] = []
    with initialized(log, unique("txn")) as producer:
        producer.begin_transaction()
        with pytest.raises(TransactionError, match=r"produce\(\) inside transaction"):
            producer.produce(topic, b"x", partition=0)
        producer.send(topic, b"a", partition=0, on_delivery=lambda md, err: landed.append(md))
        producer.send(topic, b"b", partition=0, on_delivery=lambda md, err: landed.append(md))
        producer.commit_transaction()
        assert [md.offset if md else None for md in landed][:1] == [0]
        assert len(landed) == 2 and landed[1] is not None and landed[1].offset > landed[0].offset  # type: ignore[union-attr]
        assert not producer.transaction.open
    assert [r.value for r in read_through(log, topic, landed[1].offset)] == [b"a", b"b"]  # type: ignore[union-attr]


def test_a_fenced_producer_raises_producer_fenced_from_every_call(log: Log, unique: Callable[..., str]) -> None:
    """A zombie that keeps sending learns it was fenced from whichever call comes next (Kafka reports the
    fence asynchronously), always as ``ProducerFencedError``."""
    topic, txn_id = unique(), unique("txn")
    log.create_topic(topic)
    with fenced_by_a_successor(log, txn_id) as (old, _new):
        with pytest.raises(ProducerFencedError):
            for i in range(100):
                if not old.transaction.open:
                    old.begin_transaction()
                old.send(topic, b"zombie %d" % i, partition=0)
                time.sleep(0.05)
            old.commit_transaction()
        assert old.transaction.fenced


def test_a_record_above_the_topics_max_message_bytes_fails_the_transaction(
    log: Log, log_caps: LogCaps, unique: Callable[..., str]
) -> None:
    """The delivery fails after the send was accepted; the transaction cannot commit and nothing of it is read."""
    log_caps.require("max_message_bytes")
    log_caps.require("read_committed_aborts")
    topic = unique()
    log.create_topic(topic, config={"max.message.bytes": "1000"})
    errors: dict[bytes, Exception | None] = {}
    with initialized(log, unique("txn")) as producer:
        producer.begin_transaction()
        for value in (b"a", b"x" * 2000):
            producer.send(
                topic, value, b"k", partition=0, on_delivery=lambda md, err, v=value: errors.__setitem__(v, err)
            )
        with pytest.raises(LogError):
            producer.commit_transaction()
    assert isinstance(errors[b"x" * 2000], RecordTooLargeError)
    assert [r.value for r in read_through(log, topic, marker(log, topic))] == [b"marker"]
