"""The keyed partitioner must match Kafka's Java client (and librdkafka's ``murmur2_random``)."""

from __future__ import annotations

import pytest

from streams.log.partitioner import RoundRobin, murmur2, partition_for_key

# Kafka's own vectors from org.apache.kafka.common.utils.UtilsTest#testMurmur2.
KAFKA_VECTORS = {
    b"21": -973932308,
    b"foobar": -790332482,
    b"a-little-bit-long-string": -985981536,
    b"a-little-bit-longer-string": -1486304829,
    b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
    b"abc": 479470107,
}


@pytest.mark.parametrize(("key", "expected"), KAFKA_VECTORS.items(), ids=[k.decode() for k in KAFKA_VECTORS])
def test_murmur2_matches_kafka_vectors(key: bytes, expected: int) -> None:
    assert murmur2(key) == expected


def test_partition_uses_to_positive_not_abs() -> None:
    # murmur2(b"21") is negative: Java's toPositive masks the sign bit (abs() would give another answer).
    h = murmur2(b"21")
    assert h < 0
    assert partition_for_key(b"21", 7) == (h & 0x7FFFFFFF) % 7 == 1173551340 % 7
    assert partition_for_key(b"21", 7) != abs(h) % 7


def test_every_tail_length_and_empty_key_hash() -> None:
    # Keys of length 0..8 cover every tail branch; the hash must be a signed 32-bit int and stable.
    for n in range(9):
        key = bytes(range(1, n + 1))
        h = murmur2(key)
        assert -(2**31) <= h < 2**31
        assert murmur2(bytearray(key)) == h


def test_partition_for_key_rejects_zero_partitions() -> None:
    with pytest.raises(ValueError, match="num_partitions"):
        partition_for_key(b"k", 0)


def test_round_robin_cycles_per_topic() -> None:
    rr = RoundRobin()
    assert [rr.next("a", 3) for _ in range(5)] == [0, 1, 2, 0, 1]
    assert [rr.next("b", 2) for _ in range(3)] == [0, 1, 0]


@pytest.mark.kafka
def test_same_partitions_as_librdkafka_murmur2_random(kafka_bootstrap: str) -> None:
    """confluent-kafka as the peer: keyed records land on the partitions our partitioner computes."""
    import uuid

    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    topic = f"partitioner-{uuid.uuid4().hex[:12]}"
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=7, replication_factor=1)])[topic].result(timeout=15)
    landed: dict[bytes, int] = {}

    def on_delivery(err: object, msg: object) -> None:
        assert err is None, err
        landed[msg.key()] = msg.partition()  # type: ignore[attr-defined]

    producer = Producer({"bootstrap.servers": kafka_bootstrap, "partitioner": "murmur2_random"})
    keys = [f"key-{i}".encode() for i in range(200)] + list(KAFKA_VECTORS)
    for key in keys:
        producer.produce(topic, b"v", key, on_delivery=on_delivery)
    assert producer.flush(15) == 0
    admin.delete_topics([topic])
    assert landed == {key: partition_for_key(key, 7) for key in keys}
