"""Key/value serde pairs: one object holding a serializer and a deserializer for one type, callable with
``(topic, is_key)`` instead of a ``SerializationContext`` (what the streams runtime plugs in)."""

from __future__ import annotations

from typing import Any

from confluent_kafka.serialization import MessageField, SerializationContext

from serdes.avro import AvroDeserializer, AvroSerializer
from serdes.base import ClosedByWith
from serdes.caches import BoundedDict
from serdes.client import RegistryClient
from serdes.json_serdes import JsonSchemaDeserializer, JsonSchemaSerializer
from serdes.protobuf import ProtobufDeserializer, ProtobufSerializer

__all__ = ["AvroSerde", "JsonSchemaSerde", "ProtobufSerde", "Serde"]


class Serde(ClosedByWith):
    """A serializer and a deserializer for the same type.

    ``serializer`` / ``deserializer`` are the ``(obj, ctx)`` / ``(bytes, ctx)`` callables;
    ``serialize(obj, topic, is_key)`` / ``deserialize(data, topic, is_key)`` build (and cache) the context.
    """

    def __init__(self, serializer: Any, deserializer: Any) -> None:
        self.serializer = serializer
        self.deserializer = deserializer
        self._contexts: BoundedDict[tuple[str, bool], SerializationContext] = BoundedDict()

    def context(self, topic: str, is_key: bool = False) -> SerializationContext:
        ctx = self._contexts.get((topic, is_key))
        if ctx is None:
            ctx = self._contexts.put(
                (topic, is_key), SerializationContext(topic, MessageField.KEY if is_key else MessageField.VALUE)
            )
        return ctx

    def serialize(self, obj: Any, topic: str, is_key: bool = False) -> bytes | None:
        return self.serializer(obj, self.context(topic, is_key))

    def deserialize(self, data: bytes | None, topic: str, is_key: bool = False) -> Any:
        return self.deserializer(data, self.context(topic, is_key))

    def close(self) -> None:
        """Close both (their DLQ producers; see ``serdes.base.Closing``); idempotent."""
        for part in (self.serializer, self.deserializer):
            close = getattr(part, "close", None)
            if callable(close):
                close()


class AvroSerde(Serde):
    """``AvroSerde(client, Order)``: Avro for a typed record (or a schema + dicts). Keyword arguments go to
    the serializer, except ``reader`` (defaults to the same type/schema) which goes to the deserializer, and
    ``rule_config`` (rule settings, such as an encryption rule's KMS ``secret``), which goes to both."""

    def __init__(self, client: RegistryClient, schema: Any, *, reader: Any = ..., **serializer_options: Any):
        super().__init__(
            AvroSerializer(client, schema, **serializer_options),
            AvroDeserializer(
                client, schema if reader is ... else reader, rule_config=serializer_options.get("rule_config")
            ),
        )


class JsonSchemaSerde(Serde):
    """``JsonSchemaSerde(client, Order)``: JSON Schema for a typed record (or a schema + dicts); arguments as
    ``AvroSerde``'s."""

    def __init__(self, client: RegistryClient, schema: Any, *, reader: Any = ..., **serializer_options: Any):
        super().__init__(
            JsonSchemaSerializer(client, schema, **serializer_options),
            JsonSchemaDeserializer(
                client, schema if reader is ... else reader, rule_config=serializer_options.get("rule_config")
            ),
        )


class ProtobufSerde(Serde):
    """``ProtobufSerde(client, OrderPb)``: Protobuf for one generated message class (``rule_config`` goes to
    both sides, the other keyword arguments to the serializer)."""

    def __init__(self, client: RegistryClient, message_type: Any, **serializer_options: Any):
        super().__init__(
            ProtobufSerializer(client, message_type, **serializer_options),
            ProtobufDeserializer(client, message_type, rule_config=serializer_options.get("rule_config")),
        )
