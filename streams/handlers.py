"""What happens to an input record that cannot be deserialized.

``deserialization_error_handler=`` on the app takes ``"fail"`` (the default: stop with an error naming
topic, partition and offset), ``"skip"`` (log and continue), ``DeadLetterQueue("topic")`` (send the
raw record there with headers saying where it came from and why, then continue), or any callable
``(record, error) -> bool`` returning True to continue.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from streams.errors import DeserializationError
from streams.log.base import Record

__all__ = ["DeadLetterQueue", "DeserializationHandler", "LogAndContinue", "LogAndFail", "handler_from"]

log = logging.getLogger("streams.handlers")


class DeserializationHandler:
    """Decides whether processing continues after ``error``; may send the record somewhere."""

    def handle(self, record: Record, error: DeserializationError, send: Callable[..., None]) -> bool:
        raise NotImplementedError


class LogAndFail(DeserializationHandler):
    def handle(self, record: Record, error: DeserializationError, send: Callable[..., None]) -> bool:
        return False


class LogAndContinue(DeserializationHandler):
    def __init__(self) -> None:
        self.skipped = 0

    def handle(self, record: Record, error: DeserializationError, send: Callable[..., None]) -> bool:
        self.skipped += 1
        log.warning("skipping a record that cannot be deserialized: %s", error)
        return True


class DeadLetterQueue(DeserializationHandler):
    """Send undeserializable records, unchanged, to ``topic`` (which must exist) and continue."""

    def __init__(self, topic: str) -> None:
        if not isinstance(topic, str) or not topic:
            raise ValueError(f"DeadLetterQueue needs a topic name, got {topic!r}")
        self.topic = topic

    def handle(self, record: Record, error: DeserializationError, send: Callable[..., None]) -> bool:
        headers = [
            *record.headers,
            ("schemakit.dlq.topic", record.topic.encode()),
            ("schemakit.dlq.partition", str(record.partition).encode()),
            ("schemakit.dlq.offset", str(record.offset).encode()),
            ("schemakit.dlq.error", str(error).encode()),
        ]
        send(self.topic, record.value, record.key, headers=headers, timestamp=record.timestamp)
        log.warning("sent a record that cannot be deserialized to dead-letter topic %r: %s", self.topic, error)
        return True


class _CallableHandler(DeserializationHandler):
    def __init__(self, fn: Callable[[Record, DeserializationError], bool]) -> None:
        self.fn = fn

    def handle(self, record: Record, error: DeserializationError, send: Callable[..., None]) -> bool:
        return bool(self.fn(record, error))


def handler_from(spec: Any) -> DeserializationHandler:
    if spec is None or spec == "fail":
        return LogAndFail()
    if spec == "skip":
        return LogAndContinue()
    if isinstance(spec, DeserializationHandler):
        return spec
    if callable(spec):
        return _CallableHandler(spec)
    raise ValueError(
        f"deserialization_error_handler must be 'fail', 'skip', DeadLetterQueue(topic) or a callable "
        f"(record, error) -> bool; got {spec!r}"
    )
