"""One topic abstraction for the registry and the streams runtime; see ``base.py``.

``open_log("sqlite:///./data")`` or ``open_log("kafka://host:9092,host2:9092")``.
"""

from __future__ import annotations

import importlib

from streams.log.base import (
    OFFSET_BEGINNING,
    OFFSET_END,
    Capabilities,
    Consumer,
    DeliveryCallback,
    GroupSettings,
    Lease,
    Log,
    LogError,
    LogTimeoutError,
    Producer,
    ProducerFencedError,
    Record,
    RecordColumns,
    RecordMetadata,
    RecordTooLargeError,
    StorageError,
    StorageFullError,
    TopicConfigError,
    TopicExistsError,
    TopicInfo,
    TopicPartition,
    TransactionError,
    TransactionState,
    UnknownTopicError,
)
from streams.log.redact import redact_url

__all__ = [
    "BACKENDS",
    "OFFSET_BEGINNING",
    "OFFSET_END",
    "Capabilities",
    "Consumer",
    "DeliveryCallback",
    "GroupSettings",
    "Lease",
    "Log",
    "LogError",
    "LogTimeoutError",
    "Producer",
    "ProducerFencedError",
    "Record",
    "RecordColumns",
    "RecordMetadata",
    "RecordTooLargeError",
    "StorageError",
    "StorageFullError",
    "TopicConfigError",
    "TopicExistsError",
    "TopicInfo",
    "TopicPartition",
    "TransactionError",
    "TransactionState",
    "UnknownTopicError",
    "open_log",
    "redact_url",
]


# URL scheme -> (module, class): the one place that knows which backends exist. Modules are imported
# on first use, so the Kafka backend (and confluent-kafka) loads only for kafka:// URLs.
BACKENDS: dict[str, tuple[str, str]] = {
    "sqlite": ("streams.log.sqlite", "SqliteLog"),
    "kafka": ("streams.log.kafka", "KafkaLog"),
}


def open_log(url: str, *, groups: GroupSettings | None = None, **options: object) -> Log:
    """Open the backend named by ``url``'s scheme: ``sqlite:///path`` (a directory or a file) or
    ``kafka://h:p,...``. ``groups`` sets consumer-group defaults where the backend has groups; other
    ``options`` go to the backend's constructor."""
    scheme, sep, _ = url.partition("://")
    if not sep or scheme not in BACKENDS:
        known = " or ".join(f"{name}://..." for name in BACKENDS)
        raise ValueError(
            f"unknown log URL {redact_url(url)!r}: expected {known} (sqlite:///path, kafka://host:port[,host:port])"
        )
    module_name, class_name = BACKENDS[scheme]
    backend: type[Log] = getattr(importlib.import_module(module_name), class_name)
    return backend(url, groups=groups, **options)  # type: ignore[call-arg]
