"""What happens to a record the runtime cannot handle: one that cannot be deserialized, one whose
processing raised (KIP-1033), or one the log refused to take (KIP-1034's production errors).

Each of the app's three options takes the same specs:

- ``"fail"`` (the default): stop the application with an error naming the topic, partition and offset;
- ``"skip"`` (or ``"log_and_continue"``, ``"continue"``): log, count the record as dropped, go on;
- ``"dead_letter:<topic>"`` or ``DeadLetterQueue("topic")``: send the *input* record, its original key and
  value bytes unchanged, to that topic (which must exist) with headers saying where it came from and why,
  then go on (not for production errors: the record the log refused would be refused again);
- any ``ErrorHandler``, or a callable ``(record, error) -> bool`` returning True to continue.

The record a deserialization or processing handler sees is the input record as read; a production
handler sees the output record that could not be sent (``offset`` -1, ``partition`` -1 when the
partitioner had not chosen one). A production error the log reports late (a delivery that fails after the
send, e.g. above the topic's ``max.message.bytes``) reaches the production handler when the task's
transaction fails (its ``ProductionError`` has ``topic`` None and names the inputs of that transaction instead
of one input record): "fail" stops the application, "continue" rolls the task back to its last commit and
replays it without that output (``streams/task_manager.py``); what a handler sends then is rolled back with
that transaction. A punctuator that raises goes to the
processing handler with ``record`` None (there is no input record; a dead-letter queue then has nothing to
send, logs and continues).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from streams.log.base import Record

__all__ = [
    "DeadLetterQueue",
    "DeserializationHandler",
    "ErrorHandler",
    "LogAndContinue",
    "LogAndFail",
    "handler_from",
]

log = logging.getLogger("streams.handlers")

DLQ_PREFIX = "dead_letter:"
CONTINUE_NAMES = ("skip", "log_and_continue", "continue")


class ErrorHandler:
    """Decides whether processing continues after ``error``; may send the record somewhere."""

    def handle(self, record: Record | None, error: Exception, send: Callable[..., None]) -> bool:
        """``record`` is None only for a punctuation's error."""
        raise NotImplementedError


DeserializationHandler = ErrorHandler  # the name the deserialization path has always used


class LogAndFail(ErrorHandler):
    def handle(self, record: Record | None, error: Exception, send: Callable[..., None]) -> bool:
        return False


class LogAndContinue(ErrorHandler):
    def __init__(self) -> None:
        self.skipped = 0

    def handle(self, record: Record | None, error: Exception, send: Callable[..., None]) -> bool:
        self.skipped += 1
        log.warning("skipping a record: %s", error)
        return True


class DeadLetterQueue(ErrorHandler):
    """Send failed records, key and value bytes unchanged, to ``topic`` (which must exist) and continue.

    Headers added to the record's own: ``schemakit.dlq.topic``, ``.partition``, ``.offset`` (where it was
    read), ``schemakit.dlq.error`` (the message) and ``schemakit.dlq.exception`` (the error's class)."""

    def __init__(self, topic: str) -> None:
        if not isinstance(topic, str) or not topic:
            raise ValueError(f"DeadLetterQueue needs a topic name, got {topic!r}")
        self.topic = topic

    def handle(self, record: Record | None, error: Exception, send: Callable[..., None]) -> bool:
        if record is None:
            log.warning("a punctuation failed; no record to send to dead-letter topic %r: %s", self.topic, error)
            return True
        cause = error.__cause__ if error.__cause__ is not None else error
        headers = [
            *record.headers,
            ("schemakit.dlq.topic", record.topic.encode()),
            ("schemakit.dlq.partition", str(record.partition).encode()),
            ("schemakit.dlq.offset", str(record.offset).encode()),
            ("schemakit.dlq.error", str(error).encode()),
            ("schemakit.dlq.exception", type(cause).__name__.encode()),
        ]
        send(self.topic, record.value, record.key, headers=headers, timestamp=record.timestamp)
        log.warning("sent a failed record to dead-letter topic %r: %s", self.topic, error)
        return True


class _CallableHandler(ErrorHandler):
    def __init__(self, fn: Callable[[Record | None, Exception], bool]) -> None:
        self.fn = fn

    def handle(self, record: Record | None, error: Exception, send: Callable[..., None]) -> bool:
        return bool(self.fn(record, error))


def handler_from(spec: Any, option: str = "deserialization_error_handler", dead_letter: bool = True) -> ErrorHandler:
    """The handler ``spec`` names, for the app option ``option`` (named in the error for a bad spec)."""
    handler: ErrorHandler | None = None
    if spec is None or spec == "fail":
        handler = LogAndFail()
    elif isinstance(spec, str) and spec in CONTINUE_NAMES:
        handler = LogAndContinue()
    elif isinstance(spec, str) and spec.startswith(DLQ_PREFIX):
        handler = DeadLetterQueue(spec[len(DLQ_PREFIX) :])
    elif isinstance(spec, ErrorHandler):
        handler = spec
    elif callable(spec):
        handler = _CallableHandler(spec)
    if handler is None or (isinstance(handler, DeadLetterQueue) and not dead_letter):
        dlq = "'dead_letter:<topic>', DeadLetterQueue(topic), " if dead_letter else ""
        raise ValueError(
            f"{option} must be 'fail', 'skip', {dlq}an ErrorHandler or a callable (record, error) -> bool; got {spec!r}"
        )
    return handler
