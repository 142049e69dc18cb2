"""Transactions on the Kafka backend: offsets committed atomically, aborts, and zombie fencing."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from streams.log import ProducerFencedError, TopicPartition, TransactionError
from streams.log.kafka import KafkaLog
from tests.log.helpers import one_partition_holding, read_records

pytestmark = pytest.mark.kafka


def test_offsets_commit_with_the_transaction_and_not_with_an_abort(
    kafka_log: KafkaLog, unique: Callable[[str], str]
) -> None:
    topic, group = unique("txn"), unique("txn-group")
    kafka_log.create_topic(topic, 1)
    tp = TopicPartition(topic, 0)
    with kafka_log.producer(unique("tid")) as producer:
        producer.init_transactions()
        producer.begin_transaction()
        producer.send(topic, b"kept", b"k")
        producer.send_offsets_to_transaction(group, {tp: 5})
        producer.commit_transaction()
        assert kafka_log.committed(group, [tp]) == {tp: 5}

        producer.begin_transaction()
        producer.send(topic, b"dropped", b"k")
        producer.send_offsets_to_transaction(group, {tp: 9})
        producer.abort_transaction()
        assert kafka_log.committed(group, [tp]) == {tp: 5}

    with kafka_log.consumer() as consumer:
        consumer.assign({tp: 0})
        values = [r.value for r in read_records(consumer, 1)]
    assert values[0] == b"kept"


def test_a_new_producer_with_the_same_id_fences_the_old_one(kafka_log: KafkaLog, unique: Callable[[str], str]) -> None:
    topic, tid = unique("fence"), unique("tid")
    kafka_log.create_topic(topic, 1)
    zombie = kafka_log.producer(tid)
    zombie.init_transactions()
    zombie.begin_transaction()
    zombie.send(topic, b"zombie", b"k")
    with kafka_log.producer(tid) as successor:
        successor.init_transactions()  # bumps the epoch: the zombie's open transaction is aborted
        with pytest.raises(ProducerFencedError, match=tid):
            zombie.send(topic, b"more", b"k")
            zombie.commit_transaction()
        successor.begin_transaction()
        successor.send(topic, b"successor", b"k")
        successor.commit_transaction()
    zombie.close()


def test_transaction_calls_in_the_wrong_state(kafka_log: KafkaLog, unique: Callable[[str], str]) -> None:
    topic = unique("state")
    kafka_log.create_topic(topic, 1)
    with kafka_log.producer() as plain, pytest.raises(TransactionError):
        plain.begin_transaction()
    with kafka_log.producer(unique("tid")) as producer:
        producer.init_transactions()
        with pytest.raises(TransactionError):
            producer.commit_transaction()  # nothing begun
        with pytest.raises(TransactionError):
            producer.send_offsets_to_transaction(unique("g"), {TopicPartition(topic, 0): 1})
        with pytest.raises(ValueError, match="needs a consumer group name"):
            producer.send_offsets_to_transaction("", {TopicPartition(topic, 0): 1})
        with pytest.raises(ValueError, match=r"must be an integer >= 0, got -1"):
            producer.send_offsets_to_transaction("g", {TopicPartition(topic, 0): -1})


def test_offsets_of_a_live_group_member_commit_with_the_transaction(
    kafka_log: KafkaLog, unique: Callable[[str], str]
) -> None:
    # Consume-transform-produce: the member's own group metadata (generation, member id) goes with the
    # offsets, so a rebalanced-away member could not commit them.
    source, sink, group = unique("src"), unique("sink"), unique("ctp")
    tp = one_partition_holding(kafka_log, source, [b"0", b"1", b"2"])
    kafka_log.create_topic(sink, 1)
    with kafka_log.consumer(group) as member, kafka_log.producer(unique("tid")) as txn:
        member.subscribe([source])
        records = read_records(member, 3, timeout=30)
        assert [r.value for r in records] == [b"0", b"1", b"2"]
        txn.init_transactions()
        txn.begin_transaction()
        for r in records:
            txn.send(sink, r.value + b"!", partition=0)
        txn.send_offsets_to_transaction(group, {tp: member.position(tp)})
        txn.commit_transaction()
        assert member.committed([tp]) == {tp: 3}
    with kafka_log.consumer() as reader:
        reader.assign({TopicPartition(sink, 0): 0})
        assert [r.value for r in read_records(reader, 3)] == [b"0!", b"1!", b"2!"]


def test_read_uncommitted_consumers_see_an_open_transaction(kafka_log: KafkaLog, unique: Callable[[str], str]) -> None:
    """What at-least-once stream tasks read: records of their peers' transactions as soon as they land."""
    topic = unique("open-txn")
    kafka_log.create_topic(topic, 1)
    tp = TopicPartition(topic, 0)
    with kafka_log.producer(unique("tid")) as producer:
        producer.init_transactions()
        producer.begin_transaction()
        producer.send(topic, b"pending", b"k", partition=0)
        producer.flush()
        eager = kafka_log.consumer(None, read_committed=False)
        committed_only = kafka_log.consumer(None)
        try:
            eager.assign({tp: 0})
            committed_only.assign({tp: 0})
            assert [r.value for r in read_records(eager, 1)] == [b"pending"]
            assert read_records(committed_only, 1, timeout=1.0) == []
            producer.commit_transaction()
            assert [r.value for r in read_records(committed_only, 1)] == [b"pending"]
        finally:
            eager.close()
            committed_only.close()
