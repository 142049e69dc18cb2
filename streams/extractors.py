"""Timestamp extractors: the event time of each input record, as Kafka Streams' ``TimestampExtractor``.

An extractor is any callable ``(record, partition_time) -> milliseconds``: ``record`` is a
``ConsumedRecord`` (the deserialized key and value, plus topic, partition, offset, the log timestamp and
headers) and ``partition_time`` is the largest timestamp extracted so far from that input partition (-1
before the first). Give one per source (``stream(..., timestamp_extractor=...)``, ``table(...)``) or for
the whole application (``StreamsApp(default_timestamp_extractor=...)``).

Without one, a record's timestamp is its log timestamp, and a negative one stops the task with an error
naming the record (Kafka Streams' default, ``FailOnInvalidTimestamp``). An extractor that returns a negative
timestamp drops the record: logged, and counted in the task's ``dropped_records``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from streams.errors import StreamsError
from streams.log.base import Headers

__all__ = [
    "ConsumedRecord",
    "FailOnInvalidTimestamp",
    "LogAndSkipOnInvalidTimestamp",
    "TimestampExtractor",
    "UsePartitionTimeOnInvalidTimestamp",
    "WallclockTimestampExtractor",
    "extractor_from",
]

log = logging.getLogger("streams.extractors")


@dataclass(frozen=True, slots=True)
class ConsumedRecord:
    """An input record as an extractor sees it."""

    topic: str
    partition: int
    offset: int
    timestamp: int
    key: Any
    value: Any
    headers: Headers = ()


TimestampExtractor = Callable[[ConsumedRecord, int], int]


def _where(record: ConsumedRecord) -> str:
    return f"{record.topic}[{record.partition}] offset {record.offset}"


class FailOnInvalidTimestamp:
    """The record's log timestamp; a negative one is an error naming the record (the default)."""

    def __call__(self, record: ConsumedRecord, partition_time: int) -> int:
        if record.timestamp < 0:
            raise StreamsError(
                f"the record at {_where(record)} has the invalid timestamp {record.timestamp}: use a timestamp "
                "extractor that handles it (LogAndSkipOnInvalidTimestamp, UsePartitionTimeOnInvalidTimestamp)"
            )
        return record.timestamp


class LogAndSkipOnInvalidTimestamp:
    """The record's log timestamp; a record with a negative one is dropped (logged at warning)."""

    def __call__(self, record: ConsumedRecord, partition_time: int) -> int:
        if record.timestamp < 0:
            log.warning("dropping the record at %s: invalid timestamp %d", _where(record), record.timestamp)
        return record.timestamp


class UsePartitionTimeOnInvalidTimestamp:
    """The record's log timestamp; a negative one is replaced by the partition time (an error before the
    partition has a time)."""

    def __call__(self, record: ConsumedRecord, partition_time: int) -> int:
        if record.timestamp >= 0:
            return record.timestamp
        if partition_time < 0:
            raise StreamsError(
                f"the record at {_where(record)} has the invalid timestamp {record.timestamp} and the partition "
                "has no time yet to use instead"
            )
        return partition_time


class WallclockTimestampExtractor:
    """Processing time: the wall clock when the record is processed. Inside an application or the test
    driver it reads their clock (so ``TopologyTestDriver.advance_wall_clock`` moves it)."""

    def __call__(self, record: ConsumedRecord, partition_time: int) -> int:
        return time.time_ns() // 1_000_000


def extractor_from(spec: Any, what: str = "timestamp_extractor") -> TimestampExtractor | None:
    """None (the log timestamp), an extractor instance or class, or any ``(record, partition_time) -> ms``
    callable."""
    if spec is None:
        return None
    if isinstance(spec, type):
        spec = spec()
    if not callable(spec):
        raise TypeError(f"{what} must be a callable (record, partition_time) -> ms, got {spec!r}")
    return spec
