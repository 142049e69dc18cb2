"""The error types serdes raises: for registry calls, for bytes that cannot be (de)serialized, and for data-contract
rules that stop a record."""

from __future__ import annotations

from confluent_kafka.serialization import SerializationError as _KafkaSerializationError


class RegistryError(Exception):
    """A registry call failed: ``status`` is the HTTP status (-1 when no registry answered), ``error_code``
    the Confluent error code from the body (-1 when the body had none)."""

    def __init__(self, status: int, error_code: int, message: str) -> None:
        super().__init__(f"{message} (HTTP {status}, error code {error_code})")
        self.status = status
        self.error_code = error_code
        self.message = message


class RegistryUnavailableError(RegistryError):
    """No registry URL answered usefully after all retries (connection errors or 408/429/5xx)."""


class OAuthTokenError(RegistryError):
    """No OAuth access token could be obtained from the token endpoint (``status`` is its HTTP status, -1 when
    it did not answer); no registry request was sent."""


class SerializationError(_KafkaSerializationError):
    """A record could not be serialized or a payload could not be deserialized.

    Subclasses confluent-kafka's ``SerializationError`` so code written against its serializers keeps catching
    ours. ``topic``, ``offset`` (byte offset in the payload where the problem is) and ``schema_id`` are set when
    known and are part of the message.
    """

    def __init__(
        self, message: str, *, topic: str | None = None, offset: int | None = None, schema_id: int | None = None
    ) -> None:
        details = []
        if topic is not None:
            details.append(f"topic {topic!r}")
        if schema_id is not None:
            details.append(f"schema id {schema_id}")
        if offset is not None:
            details.append(f"payload offset {offset}")
        text = f"{message} [{', '.join(details)}]" if details else message
        super().__init__(text)
        self.topic = topic
        self.offset = offset
        self.schema_id = schema_id
        self.message = message


class RuleError(SerializationError):
    """A data-contract rule failed (a condition was false, or a rule could not run) and its ``onFailure`` action
    stopped the record: ``rule`` is the rule's name, ``mode`` the mode it ran in (WRITE, READ, UPGRADE,
    DOWNGRADE). A ``SerializationError``, as confluent-kafka raises for the same failure."""

    def __init__(
        self, message: str, *, rule: str, mode: str, topic: str | None = None, schema_id: int | None = None
    ) -> None:
        super().__init__(f"rule {rule!r} ({mode}): {message}", topic=topic, schema_id=schema_id)
        self.rule = rule
        self.mode = mode
