"""The DLQ rule action: the failed record goes to a dead-letter topic, then the record fails as with ERROR.

As confluent-kafka's ``DlqAction``: the topic is the rule config's ``dlq.topic``, else the rule's
``params["dlq.topic"]``, else the schema's metadata property; a record being written is sent as JSON (a dict as
it was given, a Protobuf message in its JSON mapping), a record being read as the bytes read; headers are the
record's own plus ``__rule.name``, ``__rule.mode``, ``__rule.subject``, ``__rule.topic`` and
``__rule.exception``. The producer is the rule config's ``producer`` or one made from its other settings
(``bootstrap.servers``...), with ``acks=all``; ``dlq.auto.flush=true`` flushes after every record.
``close()`` (the serde's ``close()``) flushes what was sent and closes the producer it made; a ``producer`` given
in the config is flushed only (it is the caller's).
"""

from __future__ import annotations

import json
import logging
from typing import Any

from serdes.errors import RuleError
from serdes.models import Rule

log = logging.getLogger(__name__)


def _json_default(value: Any) -> Any:
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("latin-1")
    if hasattr(value, "__dataclass_fields__"):
        import dataclasses

        return dataclasses.asdict(value)
    return str(value)


def _payload(record: Any) -> bytes | None:
    if record is None or isinstance(record, bytes):
        return record
    if isinstance(record, (bytearray, memoryview)):
        return bytes(record)
    if isinstance(record, str):
        return record.encode()
    if hasattr(record, "DESCRIPTOR"):  # a Protobuf message
        from google.protobuf import json_format

        return json_format.MessageToJson(record).encode()
    if hasattr(record, "model_dump"):  # pydantic
        record = record.model_dump(mode="json")
    return json.dumps(record, default=_json_default).encode()


def _header(value: Any) -> bytes | None:
    return None if value is None else value if isinstance(value, bytes) else str(value).encode()


class DeadLetterQueue:
    def __init__(self, conf: dict[str, Any]) -> None:
        self.auto_flush = str(conf.get("dlq.auto.flush", "false")).lower() == "true"
        self._producer = conf.get("producer")
        self._owned = self._producer is None  # made here from the settings: closed here too
        self._closed = False
        self._settings = {k: v for k, v in conf.items() if k != "producer" and not k.startswith("dlq.")}

    def _get_producer(self) -> Any:
        if self._closed:
            raise RuntimeError("the serde was closed")
        if self._producer is None:
            from confluent_kafka import Producer

            self._producer = Producer({"acks": "all", "enable.idempotence": False, **self._settings})
        return self._producer

    def send(
        self, topic: str | None, rule: Rule, mode: str, subject: str | None, ctx: Any, record: Any, error: RuleError
    ) -> None:
        if not topic:
            raise RuleError(
                "cannot send to the DLQ: no dlq.topic in the rule config, the rule's params or the schema's metadata",
                rule=rule.name,
                mode=mode,
                topic=getattr(ctx, "topic", None),
            )
        headers: list[tuple[str, bytes | None]] = []
        incoming = getattr(ctx, "headers", None) if ctx is not None else None
        if incoming:
            items = incoming.items() if isinstance(incoming, dict) else incoming
            headers.extend((k, _header(v)) for k, v in items)
        headers += [
            ("__rule.name", _header(rule.name)),
            ("__rule.mode", _header(mode)),
            ("__rule.subject", _header(subject)),
            ("__rule.topic", _header(getattr(ctx, "topic", None))),
            ("__rule.exception", _header(str(error))),
        ]
        try:
            producer = self._get_producer()
            producer.produce(topic, value=_payload(record), headers=headers)
            producer.poll(0)
            if self.auto_flush:
                producer.flush()
        except Exception as e:  # as confluent-kafka: a DLQ failure is logged, the rule still fails
            log.error("could not send the record to DLQ topic %s: %s", topic, e)

    def close(self) -> None:
        """Deliver what was sent (blocks until the broker acknowledged it) and close the producer made here;
        idempotent. Records sent after this are logged as not delivered."""
        if self._closed:
            return
        self._closed = True
        producer = self._producer
        if producer is None:
            return
        if hasattr(producer, "flush"):
            producer.flush()
        if self._owned:
            self._producer = None
            if hasattr(producer, "close"):  # confluent-kafka >= 2.11; older ones close when collected
                producer.close()


__all__ = ["DeadLetterQueue"]
