"""Producer and consumer behaviour specific to the Kafka backend, with confluent-kafka itself as the peer."""

from __future__ import annotations

from collections.abc import Callable

import confluent_kafka
import pytest

from streams.log import (
    OFFSET_BEGINNING,
    OFFSET_END,
    LogError,
    RecordMetadata,
    RecordTooLargeError,
    TopicPartition,
    UnknownTopicError,
)
from streams.log.kafka import KafkaLog
from streams.log.partitioner import partition_for_key
from tests.log.helpers import read_records
from tests.support.waiting import wait_for

pytestmark = pytest.mark.kafka


def test_keyed_records_land_where_the_java_partitioner_puts_them(
    kafka_log: KafkaLog, unique: Callable[[str], str]
) -> None:
    topic = unique("murmur")
    kafka_log.create_topic(topic, 7)
    keys = [f"key-{i}".encode() for i in range(40)]
    landed: dict[bytes, int] = {}
    with kafka_log.producer() as producer:
        for key in keys:
            producer.send(topic, b"v", key, on_delivery=lambda md, err, k=key: landed.__setitem__(k, md.partition))
        producer.flush(30)
    assert landed == {key: partition_for_key(key, 7) for key in keys}


def test_records_round_trip_to_a_librdkafka_consumer(
    kafka_log: KafkaLog, kafka_bootstrap: str, unique: Callable[[str], str]
) -> None:
    topic = unique("peer")
    kafka_log.create_topic(topic, 1)
    with kafka_log.producer() as producer:
        first = producer.produce(topic, b"", b"k1", headers=[("h", b"1"), ("h", None)], timestamp=1_700_000_000_123)
        second = producer.produce(topic, None, b"k1")  # tombstone
    assert (first.offset, second.offset) == (0, 1)
    assert first.timestamp == 1_700_000_000_123

    peer = confluent_kafka.Consumer({"bootstrap.servers": kafka_bootstrap, "group.id": unique("peer")})
    try:
        peer.assign([confluent_kafka.TopicPartition(topic, 0, 0)])
        messages = []

        def both_read() -> bool:
            msg = peer.poll(0.5)
            if msg is not None and msg.error() is None:
                messages.append(msg)
            return len(messages) >= 2

        wait_for(both_read, 15, interval=0, what="both records")
    finally:
        peer.close()
    assert [(m.key(), m.value(), m.offset()) for m in messages] == [(b"k1", b"", 0), (b"k1", None, 1)]
    assert messages[0].headers() == [("h", b"1"), ("h", None)]
    assert messages[0].timestamp() == (confluent_kafka.TIMESTAMP_CREATE_TIME, 1_700_000_000_123)


def test_records_from_a_librdkafka_producer_are_read_back(
    kafka_log: KafkaLog, kafka_bootstrap: str, unique: Callable[[str], str]
) -> None:
    topic = unique("peer-in")
    kafka_log.create_topic(topic, 2)
    peer = confluent_kafka.Producer({"bootstrap.servers": kafka_bootstrap})
    peer.produce(topic, b"a", b"x", partition=1, headers=[("n", b"v")], timestamp=42)
    peer.produce(topic, None, b"x", partition=1)
    peer.produce(topic, b"", None, partition=1)
    assert peer.flush(15) == 0
    with kafka_log.consumer() as consumer:
        consumer.assign({TopicPartition(topic, 1): OFFSET_BEGINNING})
        records = read_records(consumer, 3)
        assert consumer.position(TopicPartition(topic, 1)) == 3
    assert [(r.partition, r.offset, r.key, r.value) for r in records] == [
        (1, 0, b"x", b"a"),
        (1, 1, b"x", None),
        (1, 2, None, b""),
    ]
    assert (records[0].headers, records[0].timestamp) == ((("n", b"v"),), 42)


def test_send_errors_are_immediate_and_specific(kafka_log: KafkaLog, unique: Callable[[str], str]) -> None:
    missing, plain, compacted = unique("missing"), unique("plain"), unique("compacted")
    kafka_log.create_topic(plain, 2)
    kafka_log.create_topic(compacted, 1, compacted=True)
    with kafka_log.producer() as producer:
        with pytest.raises(UnknownTopicError, match=f"topic '{missing}' does not exist"):
            producer.send(missing, b"v")
        with pytest.raises(UnknownTopicError, match=f"partition 2 does not exist: topic '{plain}' has 2"):
            producer.send(plain, b"v", partition=2)
        with pytest.raises(LogError, match=f"topic '{compacted}' is compacted: every record needs a key"):
            producer.send(compacted, b"v")
        with pytest.raises(RecordTooLargeError):
            producer.send(plain, b"x" * 2_000_000)
        producer.flush(10)  # nothing was queued, so nothing fails


def test_position_tracks_assign_seek_and_poll(kafka_log: KafkaLog, unique: Callable[[str], str]) -> None:
    topic = unique("pos")
    kafka_log.create_topic(topic, 1)
    tp = TopicPartition(topic, 0)
    with kafka_log.producer() as producer:
        for i in range(5):
            producer.produce(topic, str(i).encode())  # one record per batch: watermarks are exact on tansu
    with kafka_log.consumer() as consumer:
        consumer.assign({tp: OFFSET_BEGINNING})
        assert consumer.position(tp) == 0
        consumer.seek(tp, 3)
        assert consumer.position(tp) == 3
        assert [r.value for r in read_records(consumer, 2)] == [b"3", b"4"]
        assert consumer.position(tp) == 5
        consumer.seek(tp, 1)
        assert [r.offset for r in read_records(consumer, 4)] == [1, 2, 3, 4]
        consumer.assign({tp: OFFSET_END})
        assert consumer.position(tp) == 5
        assert consumer.poll(0.2) == []
        with pytest.raises(LogError, match=r"not assigned to this consumer"):
            consumer.seek(TopicPartition(topic, 1), 0)


def test_consumer_without_group_cannot_commit(kafka_log: KafkaLog, unique: Callable[[str], str]) -> None:
    topic = unique("nogroup")
    kafka_log.create_topic(topic, 1)
    with kafka_log.consumer() as consumer:
        consumer.assign({TopicPartition(topic, 0): 0})
        with pytest.raises(LogError, match=r"commit\(\) needs a consumer group"):
            consumer.commit()
        with pytest.raises(LogError, match="without a group cannot subscribe"):
            consumer.subscribe([topic])


def test_assign_mode_commit_is_visible_without_joining(kafka_log: KafkaLog, unique: Callable[[str], str]) -> None:
    topic, group = unique("commit"), unique("group")
    kafka_log.create_topic(topic, 2)
    tp0, tp1 = TopicPartition(topic, 0), TopicPartition(topic, 1)
    with kafka_log.producer() as producer:
        producer.produce(topic, b"a", partition=0)
        producer.produce(topic, b"b", partition=0)
    with kafka_log.consumer(group) as consumer:
        consumer.assign({tp0: 0, tp1: 0})
        assert len(read_records(consumer, 2)) == 2
        consumer.commit()  # current positions
        assert consumer.committed([tp0, tp1]) == {tp0: 2, tp1: 0}
        consumer.commit({tp1: 7})
    assert kafka_log.committed(group, [tp0, tp1, TopicPartition(topic, 5)]) == {
        tp0: 2,
        tp1: 7,
        TopicPartition(topic, 5): None,
    }
    assert kafka_log.committed(unique("other"), [tp0]) == {tp0: None}


def test_delivery_callback_reports_metadata(kafka_log: KafkaLog, unique: Callable[[str], str]) -> None:
    topic = unique("cb")
    kafka_log.create_topic(topic, 1)
    reports: list[tuple[RecordMetadata | None, LogError | None]] = []
    with kafka_log.producer() as producer:
        for i in range(3):
            producer.send(
                topic,
                b"v",
                partition=0,
                timestamp=1000 + i,
                on_delivery=lambda md, e: reports.append((md, e)),
            )
        producer.flush(15)
    assert reports == [(RecordMetadata(topic, 0, i, 1000 + i), None) for i in range(3)]


def test_end_offsets_after_single_record_batches(kafka_log: KafkaLog, unique: Callable[[str], str]) -> None:
    # produce() flushes each record on its own, so every batch holds one record: tansu's watermark
    # bug (last batch's base offset + 1) then gives the right answer too.
    topic = unique("ends")
    kafka_log.create_topic(topic, 3)
    with kafka_log.producer() as producer:
        for partition, count in ((0, 2), (2, 5)):
            for _ in range(count):
                producer.produce(topic, b"v", partition=partition)
    assert kafka_log.end_offsets(topic) == {0: 2, 1: 0, 2: 5}


def test_end_offsets_after_a_batch(kafka_log: KafkaLog, kafka_caps, unique: Callable[[str], str]) -> None:
    kafka_caps.require("watermarks")
    topic = unique("batch-ends")
    kafka_log.create_topic(topic, 1)
    with kafka_log.producer() as producer:
        for _ in range(50):
            producer.send(topic, b"v", partition=0)
        producer.flush(15)
    assert kafka_log.end_offsets(topic) == {0: 50}


def test_a_full_local_queue_makes_sends_wait_not_fail(kafka_log_url: str, unique: Callable[[str], str]) -> None:
    # librdkafka's queue holds two records: every produce after those waits for deliveries to make room.
    topic = unique("full-queue")
    landed: list[int] = []
    with KafkaLog(kafka_log_url, producer_queue_buffering_max_messages=2) as log:
        log.create_topic(topic, 1)
        with log.producer() as producer:
            batch = [(b"k%d" % i, b"%d" % i) for i in range(20)]
            producer.send_batch(topic, 0, batch, on_last_delivery=lambda md, err: landed.append(md.offset))
            for i in range(20, 30):
                producer.send(topic, b"%d" % i, b"k", partition=0)
            producer.flush(30)
        with log.consumer() as consumer:
            consumer.assign({TopicPartition(topic, 0): OFFSET_BEGINNING})
            records = read_records(consumer, 30)
    assert landed == [19]
    assert [r.value for r in records] == [b"%d" % i for i in range(30)]
