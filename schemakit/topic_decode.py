"""Keys and values of records read from a topic, as JSON values for ``schemakit topic consume``.

A registry-framed payload (magic byte 0 and the schema id; or the schema's GUID in a ``__key_schema_id`` /
``__value_schema_id`` header or a GUID-framed payload, Confluent 8.x) is decoded by serdes' own deserializers,
picked by the type of the writer schema: Avro and JSON Schema come back as JSON values, Protobuf as its JSON
mapping (field names as in the ``.proto``). Anything else is text when it is UTF-8. What cannot be decoded raises
``Undecodable`` with the reason; the consumer prints those bytes as base64 with it.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import orjson

from serdes import MessageField, RegistryError, RegistryUnavailableError, SerializationContext, SerializationError, wire
from serdes.schema_ids import KEY_HEADER, VALUE_HEADER, Unframer

if TYPE_CHECKING:
    from serdes import RegistryClient
    from streams.log import Record

_GUID_MAGIC = b"\x01"
_CLASSIC_MAGIC = b"\x00"


class Undecodable(Exception):
    """A key or value that could not be decoded; the message says why."""


def as_base64(data: bytes) -> dict[str, str]:
    """Bytes shown in JSON output: ``{"base64": "..."}`` (a decoded value never needs telling apart from it:
    the record's ``undecodable`` member names the parts shown this way)."""
    return {"base64": base64.b64encode(data).decode("ascii")}


def json_default(value: Any) -> Any:
    """What orjson does not write itself: Avro ``bytes``/``fixed`` as Avro's JSON encoding (one character per
    byte, ISO-8859-1), decimals as their exact text."""
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).decode("latin-1")
    if isinstance(value, Decimal):
        return str(value)
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def headers_json(headers: tuple[tuple[str, bytes | None], ...]) -> dict[str, Any]:
    """A record's headers as a JSON object: UTF-8 values as text, others as ``{"base64": ...}``; a name that
    repeats gets the list of its values."""
    out: dict[str, Any] = {}
    for name, raw in headers:
        if raw is None:
            shown: Any = None
        else:
            try:
                shown = raw.decode("utf-8")
            except UnicodeDecodeError:
                shown = as_base64(raw)
        if name in out:
            previous = out[name]
            out[name] = [*previous, shown] if isinstance(previous, list) else [previous, shown]
        else:
            out[name] = shown
    return out


class RecordDecoder:
    """Decodes keys and values, sharing one registry client and one deserializer per schema type.

    Without a registry, framed payloads are reported undecodable (naming their schema id) rather than shown as
    text full of control bytes."""

    def __init__(self, client: RegistryClient | None) -> None:
        self._client = client
        self._unframer = Unframer()
        self._types: dict[int, str] = {}  # schema id -> AVRO / JSON / PROTOBUF
        self._readers: dict[str, Callable[[bytes, SerializationContext], Any]] = {}
        self._contexts: dict[tuple[str, str], SerializationContext] = {}  # (topic, key or value) -> its context

    def shown(self, record: Record) -> dict[str, Any]:
        """The record as ``topic consume`` prints it: ``topic``, ``partition``, ``offset``, ``timestamp``, ``key``,
        ``value``, ``headers``, ``schema_id`` (the value's), ``key_schema_id`` when the key is framed, and
        ``undecodable`` (part -> reason) when a part could not be decoded (that part then shown as base64)."""
        shown: dict[str, Any] = {
            "topic": record.topic,
            "partition": record.partition,
            "offset": record.offset,
            "timestamp": record.timestamp,
            "key": None,
            "value": None,
            "headers": headers_json(record.headers),
            "schema_id": None,
        }
        reasons: dict[str, str] = {}
        for part, data, is_key in (("key", record.key, True), ("value", record.value, False)):
            try:
                decoded, schema_id = self.decode(data, record, is_key)
            except Undecodable as e:
                assert data is not None
                reasons[part] = str(e)
                shown[part] = as_base64(data)
                continue
            shown[part] = decoded
            if schema_id is not None:
                shown["key_schema_id" if is_key else "schema_id"] = schema_id
        if reasons:
            shown["undecodable"] = reasons
        return shown

    @staticmethod
    def dumps(value: Any) -> str:
        """Compact JSON of a shown record or value."""
        return orjson.dumps(value, default=json_default).decode()

    def decode(self, data: bytes | None, record: Record, is_key: bool) -> tuple[Any, int | None]:
        """The record's key (``is_key``) or value as (the JSON value, the writer schema id or None);
        ``Undecodable`` with the reason."""
        if data is None:
            return None, None
        header = KEY_HEADER if is_key else VALUE_HEADER
        has_header = bool(record.headers) and any(name == header for name, _ in record.headers)
        field = MessageField.KEY if is_key else MessageField.VALUE
        first = data[:1]
        if has_header or (first in (_CLASSIC_MAGIC, _GUID_MAGIC) and len(data) >= wire.PREFIX_SIZE):
            if self._client is not None:
                return self._framed(data, record, field, has_header)
            if first == _CLASSIC_MAGIC:
                raise Undecodable(
                    f"registry-framed (schema id {wire.read_schema_id(data)}): pass --registry URL to decode it"
                )
            if has_header:
                raise Undecodable(f"its schema is named in the {header} header: pass --registry URL to decode it")
        try:
            return data.decode("utf-8"), None
        except UnicodeDecodeError as e:
            raise Undecodable(f"neither registry-framed nor UTF-8 text (byte {e.start})") from None

    def _framed(self, data: bytes, record: Record, field: MessageField, has_header: bool) -> tuple[Any, int | None]:
        assert self._client is not None
        topic = record.topic
        try:
            if has_header or data[:1] == _GUID_MAGIC:
                ctx = SerializationContext(topic, field, list(record.headers))
                data = self._unframer(self._client, data, ctx)
            schema_id = wire.read_schema_id(data, topic)
            read = self._reader(self._schema_type(schema_id))
            plain_ctx = self._contexts.get((topic, field))
            if plain_ctx is None:
                plain_ctx = self._contexts[(topic, field)] = SerializationContext(topic, field)
            return read(data, plain_ctx), schema_id
        except RegistryUnavailableError:
            raise  # the registry is down: every record would fail alike, so the command stops
        except (SerializationError, RegistryError) as e:
            raise Undecodable(str(e)) from None

    def _schema_type(self, schema_id: int) -> str:
        found = self._types.get(schema_id)
        if found is None:
            assert self._client is not None
            found = self._types[schema_id] = self._client.get_schema(schema_id).schema_type or "AVRO"
        return found

    def _reader(self, schema_type: str) -> Callable[[bytes, SerializationContext], Any]:
        reader = self._readers.get(schema_type)
        if reader is None:
            reader = self._readers[schema_type] = self._make_reader(schema_type)
        return reader

    def _make_reader(self, schema_type: str) -> Callable[[bytes, SerializationContext], Any]:
        from serdes import AvroDeserializer, JsonSchemaDeserializer, ProtobufDeserializer

        assert self._client is not None
        if schema_type == "AVRO":
            return AvroDeserializer(self._client)
        if schema_type == "JSON":
            return JsonSchemaDeserializer(self._client)
        if schema_type == "PROTOBUF":
            from google.protobuf.json_format import MessageToDict

            protobuf = ProtobufDeserializer(self._client)

            def read(data: bytes, ctx: SerializationContext) -> Any:
                return MessageToDict(protobuf(data, ctx), preserving_proto_field_name=True)

            return read
        raise Undecodable(f"schema type {schema_type} has no deserializer here")
