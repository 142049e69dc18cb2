"""One topic abstraction for the registry and the streams runtime; see ``base.py``.

``open_log("sqlite:///./data")`` or ``open_log("kafka://host:9092,host2:9092")``.
"""

from __future__ import annotations

from streams.log.base import (
    OFFSET_BEGINNING,
    OFFSET_END,
    Consumer,
    Log,
    LogError,
    LogTimeoutError,
    Producer,
    ProducerFencedError,
    Record,
    RecordMetadata,
    RecordTooLargeError,
    TopicConfigError,
    TopicExistsError,
    TopicInfo,
    TopicPartition,
    TransactionError,
    UnknownTopicError,
)

__all__ = [
    "OFFSET_BEGINNING",
    "OFFSET_END",
    "Consumer",
    "Log",
    "LogError",
    "LogTimeoutError",
    "Producer",
    "ProducerFencedError",
    "Record",
    "RecordMetadata",
    "RecordTooLargeError",
    "TopicConfigError",
    "TopicExistsError",
    "TopicInfo",
    "TopicPartition",
    "TransactionError",
    "UnknownTopicError",
    "open_log",
]


def open_log(url: str, **options: object) -> Log:
    """Open the backend named by ``url``: ``sqlite:///path`` (a directory or a file) or ``kafka://h:p,...``."""
    if url.startswith("sqlite://"):
        from streams.log.sqlite import SqliteLog

        return SqliteLog(url, **options)  # type: ignore[arg-type]
    if url.startswith("kafka://"):
        from streams.log.kafka import KafkaLog

        return KafkaLog(url, **options)  # type: ignore[arg-type]
    raise ValueError(f"unknown log URL {url!r}: expected sqlite:///path or kafka://host:port[,host:port]")
