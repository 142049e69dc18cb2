"""Partition choice compatible with Kafka's Java client, so keyed records land where Java/librdkafka
(``murmur2_random``) producers put them and co-partitioning holds across clients and backends."""

from __future__ import annotations

import itertools
import struct
from functools import lru_cache

_SEED = 0x9747B28C
_M = 0x5BD1E995
_MASK = 0xFFFFFFFF


def murmur2(data: bytes) -> int:
    """Kafka's ``Utils.murmur2``: 32-bit MurmurHash2 with seed 0x9747b28c, as a signed Java int."""
    length = len(data)
    h = (_SEED ^ length) & _MASK
    words = length >> 2
    if words:
        for k in struct.unpack_from(f"<{words}I", data):
            k = (k * _M) & _MASK
            k ^= k >> 24
            k = (k * _M) & _MASK
            h = ((h * _M) & _MASK) ^ k
    rest = length & 3
    if rest:
        tail = words << 2
        if rest == 3:
            h ^= data[tail + 2] << 16
        if rest >= 2:
            h ^= data[tail + 1] << 8
        h ^= data[tail]
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h - 0x1_0000_0000 if h & 0x8000_0000 else h


@lru_cache(maxsize=65536)
def partition_for_key(key: bytes, num_partitions: int) -> int:
    """The partition Kafka's default partitioner picks for ``key``: ``toPositive(murmur2(key)) % n``.

    Cached because streams workloads hash the same keys over and over and the hash is pure Python."""
    if num_partitions < 1:
        raise ValueError(f"num_partitions must be >= 1, got {num_partitions}")
    return (murmur2(key) & 0x7FFFFFFF) % num_partitions


class RoundRobin:
    """Partitions for keyless records: each topic cycles through its partitions."""

    def __init__(self) -> None:
        self._counters: dict[str, itertools.count[int]] = {}

    def next(self, topic: str, num_partitions: int) -> int:
        counter = self._counters.get(topic)
        if counter is None:
            counter = self._counters[topic] = itertools.count()
        # next() on itertools.count is atomic under the GIL, so threads sharing a producer are safe.
        return next(counter) % num_partitions
