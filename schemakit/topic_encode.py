"""Keys and values given as JSON to ``schemakit topic produce``, as the bytes written.

With a format (``avro``, ``json``, ``protobuf``) and a registry, a value is encoded by serdes' serializer in
Confluent's wire format, with a schema that is registered already: the subject's latest version, or the schema
file's own version under the subject (found by lookup; registered only when ``--auto-register`` says so, and
otherwise refused with a message that says so). The schema id is settled before the first record, so a mistake
stops the command before anything is written. Without a format a JSON string is written as its UTF-8 text and any
other JSON value as its compact JSON text.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from schemakit.connection import UsageError
from schemakit.schema_files import read_text

if TYPE_CHECKING:
    from serdes import RegisteredSchema, RegistryClient

#: --value-format / --key-format -> the registry's schema type
FORMATS = {"avro": "AVRO", "json": "JSON", "protobuf": "PROTOBUF"}
_SUBJECT_NOT_FOUND = 40401
_SCHEMA_NOT_FOUND = 40403

#: (the record's JSON value, the topic) -> the bytes to write
Encoder = Callable[[Any, str], bytes | None]


@dataclass(frozen=True)
class FieldSpec:
    """How one part of the records (``key`` or ``value``) is encoded, from the command line."""

    field: str  # "key" or "value"
    format: str | None  # avro, json, protobuf; None: text
    subject: str | None
    schema_file: Path | None

    def option(self, name: str) -> str:
        return f"--{self.field}-{name}" if self.field == "key" or name != "subject" else "--subject"


def plain(value: Any, topic: str) -> bytes | None:
    """Without a schema: a string as its UTF-8 text, null as no bytes, anything else as compact JSON."""
    if value is None:
        return None
    if isinstance(value, str):
        return value.encode("utf-8")
    return orjson.dumps(value)


def encoder_for(spec: FieldSpec, client: RegistryClient | None, topic: str, auto_register: bool) -> Encoder:
    """The encoder of ``spec``: text when it names no format, else through the registry (checked now)."""
    if spec.format is None:
        if spec.subject is not None or spec.schema_file is not None:
            raise UsageError(f"{spec.option('subject')} and {spec.option('schema')} need {spec.option('format')}")
        return plain
    if client is None:
        raise UsageError(f"{spec.option('format')} {spec.format} needs --registry URL")
    schema_type = FORMATS[spec.format]
    subject = spec.subject or f"{topic}-{spec.field}"  # Confluent's default: the topic name strategy
    registered = _writer_schema(client, spec, schema_type, subject, auto_register)
    return _serializer(client, spec, schema_type, subject, registered)


def _writer_schema(
    client: RegistryClient, spec: FieldSpec, schema_type: str, subject: str, auto_register: bool
) -> RegisteredSchema:
    from serdes import RegistryError, Schema

    if spec.schema_file is None:
        try:
            latest = client.get_latest_version(subject)
        except RegistryError as e:
            if e.error_code != _SUBJECT_NOT_FOUND:
                raise
            raise UsageError(
                f"subject {subject!r} does not exist in the registry: pass {spec.option('schema')} FILE "
                f"with --auto-register to register one, or name another with {spec.option('subject')}"
            ) from None
        found = latest.schema.schema_type or "AVRO"
        if found != schema_type:
            raise UsageError(
                f"subject {subject!r} holds a {found} schema, not {schema_type} ({spec.option('format')} {spec.format})"
            )
        return latest
    schema = Schema(read_text(spec.schema_file), schema_type)
    if auto_register:
        full = client.register_full(subject, schema)
        return full
    try:
        return client.lookup(subject, schema)
    except RegistryError as e:
        if e.error_code not in (_SUBJECT_NOT_FOUND, _SCHEMA_NOT_FOUND):
            raise
        raise UsageError(
            f"{spec.schema_file} is not registered under subject {subject!r}, and schemas are registered only "
            f"with --auto-register: pass it, or register the schema first (schemakit registry register "
            f"{spec.schema_file} --subject {subject})"
        ) from None


def _serializer(
    client: RegistryClient, spec: FieldSpec, schema_type: str, subject: str, registered: RegisteredSchema
) -> Encoder:
    from serdes import (
        AvroSerializer,
        JsonSchemaSerializer,
        MessageField,
        ProtobufSerializer,
        SerializationContext,
    )

    field = MessageField.KEY if spec.field == "key" else MessageField.VALUE
    schema_id = registered.schema_id
    if schema_type == "AVRO":
        avro = AvroSerializer(client, subject=subject, use_schema_id=schema_id)
        return lambda value, topic: avro(value, SerializationContext(topic, field))
    if schema_type == "JSON":
        json_ser = JsonSchemaSerializer(client, subject=subject, use_schema_id=schema_id)
        return lambda value, topic: json_ser(value, SerializationContext(topic, field))
    from google.protobuf.json_format import ParseDict, ParseError
    from google.protobuf.message_factory import GetMessageClass

    from serdes import SerializationError
    from serdes.protobuf import RegisteredProtoFile

    # The registered file's first message, built from the registry's descriptor (no generated code needed).
    proto_file = RegisteredProtoFile(client, schema_id, client.get_schema(schema_id, fmt="serialized"))
    messages = list(proto_file.file.message_types_by_name.values())
    if not messages:
        raise UsageError(f"the Protobuf schema of subject {subject!r} (id {schema_id}) declares no message")
    message_class = GetMessageClass(messages[0])
    proto = ProtobufSerializer(client, message_class, subject=subject, use_schema_id=schema_id)

    def encode(value: Any, topic: str) -> bytes | None:
        if value is None:
            return None
        try:
            message = ParseDict(value, message_class())
        except ParseError as e:
            raise SerializationError(f"not a {messages[0].full_name} in Protobuf's JSON mapping: {e}") from None
        return proto(message, SerializationContext(topic, field))

    return encode
