"""A record written through one registry client and read back through another, sync or async: how the client
tests (authentication, mTLS, ``mock://``) show that a client reaches its registry, both to register a schema and
to fetch one by id (the reader's cache is its own; the two may be one client)."""

from __future__ import annotations

from typing import Any

from serdes import (
    AsyncAvroDeserializer,
    AsyncAvroSerializer,
    AsyncRegistryClient,
    AvroDeserializer,
    AvroSerializer,
    MessageField,
    RegistryClient,
    SerializationContext,
)


def avro_round_trip(writer: RegistryClient, reader: RegistryClient, schema: Any, record: Any, topic: str) -> Any:
    """``record`` serialized with ``schema`` (registered under the topic's value subject) through ``writer``, then
    deserialized through ``reader``."""
    ctx = SerializationContext(topic, MessageField.VALUE)
    return AvroDeserializer(reader)(AvroSerializer(writer, schema)(record, ctx), ctx)


async def avro_round_trip_async(
    writer: AsyncRegistryClient, reader: AsyncRegistryClient, schema: Any, record: Any, topic: str
) -> Any:
    """``avro_round_trip`` with the async serdes."""
    ctx = SerializationContext(topic, MessageField.VALUE)
    return await AsyncAvroDeserializer(reader)(await AsyncAvroSerializer(writer, schema)(record, ctx), ctx)
