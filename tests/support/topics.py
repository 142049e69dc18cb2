"""Creating topics, writing items (or timestamped rows) to a topic and reading a whole topic back, through a
``Log`` (any backend), for the streams tests' inputs and outputs."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

import orjson

from streams.log import OFFSET_BEGINNING, Log, Producer, Record, RecordMetadata, TopicPartition

#: bytes in a record value that every log refuses at the send: above SQLite's record limit (8 MiB) and
#: librdkafka's ``message.max.bytes`` (1 MB)
ABOVE_RECORD_LIMITS = 9 * 1024 * 1024


def create_topics(lg: Log, partitions: int, *topics: str) -> None:
    """Create each of ``topics`` with ``partitions`` partitions."""
    for topic in topics:
        lg.create_topic(topic, partitions)


def produce(
    lg: Log,
    topic: str,
    items: list[tuple[Any, Any]],
    key: Callable[[Any], bytes | None] = str.encode,
    value: Callable[[Any], bytes | None] = orjson.dumps,
) -> dict[Any, tuple[int, int]]:
    """Write (key, value) items; returns where each key landed: key -> (partition, offset)."""
    where: dict[Any, tuple[int, int]] = {}
    with lg.producer() as p:
        for k, v in items:

            def done(md: Any, err: Any, k: Any = k) -> None:
                if md is not None:
                    where[k] = (md.partition, md.offset)

            p.send(topic, value(v), key(k), on_delivery=done)
        p.flush()
    return where


def send_timestamped(
    producer: Producer,
    topic: str,
    rows: Iterable[tuple[str, Any, int]],
    delivered: Callable[[str, RecordMetadata | None], None],
    partition: int | None = None,
) -> None:
    """Send (key, value, timestamp) rows, each value as JSON, then flush; ``delivered(key, metadata)`` hears each
    delivery report (where a test must know what landed: the test broker's end offsets are unreliable)."""
    for key, value, ts in rows:
        producer.send(
            topic,
            orjson.dumps(value),
            key.encode(),
            timestamp=ts,
            partition=partition,
            on_delivery=lambda md, err, key=key: delivered(key, md),
        )
    producer.flush()


def read_all(lg: Log, topic: str, quiet: float = 1.5, timeout: float = 60.0) -> list[Record]:
    """Every record of ``topic``: read from the beginning until nothing arrives for ``quiet`` seconds
    (end offsets are unreliable on the test broker)."""
    return _read(lg, topic, quiet, timeout, stop_at_ends=False)


def read_to_end(lg: Log, topic: str, quiet: float = 1.5, timeout: float = 60.0) -> list[Record]:
    """``read_all``, without its closing wait where a log's end offsets are exact (SQLite, which writes a
    transaction's records only at its commit): the read stops once it reached the ends the topic had when it
    began. On other logs, and where a partition ends in a gap the positions never reach, it is ``read_all``.
    For a topic whose writers are done, or a read a test repeats until it sees what it waits for."""
    return _read(lg, topic, quiet, timeout, stop_at_ends=lg.local_path is not None)


def _read(lg: Log, topic: str, quiet: float, timeout: float, *, stop_at_ends: bool) -> list[Record]:
    info = lg.describe_topic(topic)
    assert info is not None, f"topic {topic} does not exist"
    ends = lg.end_offsets(topic) if stop_at_ends else None
    partitions = [TopicPartition(topic, p) for p in range(info.partitions)]
    out: list[Record] = []
    with lg.consumer() as c:
        c.assign(dict.fromkeys(partitions, OFFSET_BEGINNING))
        deadline = time.monotonic() + timeout
        last = time.monotonic()
        while time.monotonic() - last < quiet and time.monotonic() < deadline:
            if ends is not None and all(c.position(tp) >= ends.get(tp.partition, 0) for tp in partitions):
                break
            batch = c.poll(0.2, 10_000)
            if batch:
                out.extend(batch)
                last = time.monotonic()
    return out


def last_values(
    records: list[Record], key: Callable[[bytes], Any] = bytes.decode, value: Callable[[bytes], Any] = orjson.loads
) -> dict[Any, Any]:
    """The latest value per key, in offset order per partition (keys live in one partition)."""
    out: dict[Any, Any] = {}
    for r in sorted(records, key=lambda r: (r.partition, r.offset)):
        assert r.key is not None
        out[key(r.key)] = None if r.value is None else value(r.value)
    return out
