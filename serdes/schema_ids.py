"""Where a record's schema is named, besides the classic 5-byte payload prefix (Confluent 8.x framing):

- in a record header, ``__value_schema_id`` (``__key_schema_id`` for keys): magic byte ``0x01``, the schema's
  16-byte GUID, then for Protobuf the message-index path; the payload is the encoded record alone;
- in the payload, with magic byte ``0x01`` and the GUID instead of ``0x00`` and the id.

Serializers built with ``schema_id_header=True`` write the header form (``HeaderFramer``); every deserializer
accepts all three (``Unframer``): a header or a GUID-framed payload is turned into the classic frame before the
plan lookup, so plans stay keyed by schema id. GUIDs are resolved through the registry client once and kept.
"""

from __future__ import annotations

import uuid
from typing import Any

from confluent_kafka.serialization import MessageField, SerializationContext

from serdes import wire
from serdes.errors import RegistryError, SerializationError
from serdes.plans import ClientCall, Plan, run_plan, run_plan_async

KEY_HEADER = "__key_schema_id"
VALUE_HEADER = "__value_schema_id"
MAGIC_GUID = 1
CLASSIC_MAGIC = b"\x00"  # the first byte of a classic frame (magic byte 0 + id)
_GUID_END = 17  # magic byte + 16-byte GUID


def header_name(ctx: SerializationContext | None) -> str:
    return KEY_HEADER if ctx is not None and ctx.field == MessageField.KEY else VALUE_HEADER


def _header(ctx: SerializationContext | None) -> bytes | None:
    headers = getattr(ctx, "headers", None) if ctx is not None else None
    if not headers:
        return None
    name = header_name(ctx)
    if isinstance(headers, dict):
        value = headers.get(name)
    else:
        value = next((v for k, v in reversed(list(headers)) if k == name), None)
    return bytes(value) if value is not None else None


def _guid_to_id(guid: bytes, topic: str | None) -> Plan[int]:
    """The id of the schema with this GUID in the default context, where deserializers read schema ids."""
    text = str(uuid.UUID(bytes=guid))
    try:
        return (yield ClientCall("get_id_by_guid", (text, ".")))
    except RegistryError as e:
        raise SerializationError(
            f"schema GUID {text} is not known to the registry ({e.message})", topic=topic, offset=1
        ) from e


class Unframer:
    """Turns a header- or GUID-framed record into the classic frame (``0x00`` + id + rest)."""

    def __init__(self) -> None:
        self._ids: dict[bytes, int] = {}  # GUID bytes -> schema id

    @staticmethod
    def needed(data: bytes, ctx: SerializationContext | None) -> bool:
        """Cheap test for the per-record path: the record is not (only) in the classic frame."""
        return data[:1] != CLASSIC_MAGIC or bool(getattr(ctx, "headers", None))

    def plan(self, data: bytes, ctx: SerializationContext | None) -> Plan[bytes]:
        topic = ctx.topic if ctx is not None else None
        head = _header(ctx)
        if head is not None:
            if head[:1] == b"\x00":
                return head + data
            if head[:1] != bytes([MAGIC_GUID]) or len(head) < _GUID_END:
                raise SerializationError(
                    f"bad schema id header {header_name(ctx)}: {head[:_GUID_END].hex()}", topic=topic, offset=0
                )
            schema_id = yield from self._id(head[1:_GUID_END], topic)
            return wire.prefix(schema_id) + head[_GUID_END:] + data
        if data[:1] == bytes([MAGIC_GUID]):
            if len(data) < _GUID_END:
                raise SerializationError(
                    f"payload of {len(data)} bytes is too short for the 17-byte GUID frame",
                    topic=topic,
                    offset=len(data),
                )
            schema_id = yield from self._id(data[1:_GUID_END], topic)
            return wire.prefix(schema_id) + data[_GUID_END:]
        return data

    def _id(self, guid: bytes, topic: str | None) -> Plan[int]:
        schema_id = self._ids.get(guid)
        if schema_id is None:
            schema_id = self._ids[guid] = yield from _guid_to_id(guid, topic)
        return schema_id

    def __call__(self, client: Any, data: bytes, ctx: SerializationContext | None) -> bytes:
        return run_plan(client, self.plan(data, ctx))

    async def unframe_async(self, client: Any, data: bytes, ctx: SerializationContext | None) -> bytes:
        return await run_plan_async(client, self.plan(data, ctx))


class HeaderFramer:
    """Moves the schema id of a classic frame into the record header as the schema's GUID (``0x01`` + GUID, then
    the Protobuf message indexes when ``protobuf``); the payload keeps the encoded record alone. The GUID is asked
    for in the context of ``subject`` (the serializer's fixed subject), where its ids live."""

    def __init__(self, protobuf: bool, subject: str | None = None) -> None:
        self.protobuf = protobuf
        self.subject = subject
        self._guids: dict[int, bytes] = {}

    def plan(self, data: bytes, ctx: SerializationContext | None) -> Plan[bytes]:
        topic = ctx.topic if ctx is not None else None
        headers = getattr(ctx, "headers", None) if ctx is not None else None
        if headers is None:
            raise SerializationError(
                "schema_id_header needs a SerializationContext with headers (a list or dict "
                "the record's headers are taken from)",
                topic=topic,
            )
        schema_id = wire.read_schema_id(data, topic)
        guid = self._guids.get(schema_id)
        if guid is None:
            try:
                text = yield ClientCall("get_guid", (schema_id, self.subject))
            except RegistryError as e:
                raise SerializationError(
                    f"cannot get the GUID of schema {schema_id}: {e}", topic=topic, schema_id=schema_id
                ) from e
            guid = self._guids[schema_id] = uuid.UUID(text).bytes
        start = (
            wire.decode_message_indexes(data, wire.PREFIX_SIZE, topic, schema_id)[1]
            if self.protobuf
            else wire.PREFIX_SIZE
        )
        value = bytes([MAGIC_GUID]) + guid + data[wire.PREFIX_SIZE : start]
        if isinstance(headers, dict):
            headers[header_name(ctx)] = value
        else:
            headers.append((header_name(ctx), value))
        return data[start:]

    def __call__(self, client: Any, data: bytes, ctx: SerializationContext | None) -> bytes:
        return run_plan(client, self.plan(data, ctx))

    async def frame_async(self, client: Any, data: bytes, ctx: SerializationContext | None) -> bytes:
        return await run_plan_async(client, self.plan(data, ctx))
