"""``to_registry``'s engine: Spark struct rows -> Confluent-framed payloads, one Arrow batch per call.

The writer schema is resolved (and registered, with ``auto_register``) once on the driver; the spec shipped to
executors holds the frame header and the schema, so executors never call the registry. Records are written by
fastavro's compiled ``write_data`` (``serdes.fastavro_core``), protobuf's ``SerializeToString`` or orjson; JSON
documents are first validated against the schema (as confluent-kafka's JSON serializer does), with the validator
compiled once per worker. A row that does not fit fails the query naming the row and the field (FAILFAST) or
becomes null (PERMISSIVE).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson
import pyarrow as pa
from google.protobuf import descriptor_pb2, descriptor_pool
from google.protobuf.message_factory import GetMessageClass

from serdes import fastavro_core, wire
from serdes.avro import parse_avro_schema
from serdes.client import RegistryClient
from serdes.errors import RegistryError, SerializationError
from serdes.json_serdes import _validation_message, compile_validator
from serdes.models import Schema
from serdes.protobuf import ProtobufSerializer, is_message_class, message_indexes
from serdes.spark.from_spark_values import avro_datum_converter, json_value_converter, protobuf_value_converter
from serdes.spark.python_engine import partition_note
from serdes.spark.reader import avro_references, file_descriptor_set, protobuf_message
from serdes.spark.registry_options import RegistryOptions
from serdes.spark.types import AvroNames

__all__ = ["EncoderSpec", "encode_batch", "encoder_spec"]


@dataclass(frozen=True)
class EncoderSpec:
    kind: str
    header: bytes  # magic + schema id (+ Protobuf message indexes)
    schema: str  # Avro / JSON Schema text; Protobuf: message full name
    named: tuple[str, ...] = ()  # Avro referenced schemas, dependencies first
    descriptors: bytes = b""  # Protobuf FileDescriptorSet
    validate: bool = True  # JSON: check each document against the schema


def encoder_spec(
    registry: RegistryOptions,
    *,
    subject: str,
    version: int | str | None = None,
    schema: Any = None,
    schema_type: str | None = None,
    auto_register: bool = False,
    message: str | None = None,
    validate: bool = True,
) -> EncoderSpec:
    """Resolve the writer schema and its id on the driver."""
    with registry.client() as client:
        try:
            spec = _encoder_spec(client, subject, version, schema, schema_type, auto_register, message)
        except RegistryError as e:
            raise SerializationError(f"to_registry: registry call for subject {subject!r} failed: {e}") from e
    if spec.kind == "JSON":
        compile_validator(Schema(spec.schema, "JSON"), None)  # a schema that does not compile fails here, once
        return EncoderSpec(spec.kind, spec.header, spec.schema, validate=validate)
    return spec


def _encoder_spec(
    client: RegistryClient,
    subject: str,
    version: int | str | None,
    schema: Any,
    schema_type: str | None,
    auto_register: bool,
    message: str | None,
) -> EncoderSpec:
    if is_message_class(schema):
        ser = ProtobufSerializer(client, schema, subject=subject, auto_register=auto_register)
        header = ser(schema())  # an empty message serializes to nothing: what is left is the frame header
        assert header is not None
        desc = schema.DESCRIPTOR
        return EncoderSpec("PROTOBUF", header, desc.full_name, (), file_descriptor_set(desc.file))
    if schema is not None:
        if isinstance(schema, Schema):
            registered_schema = schema
        else:
            kind = (schema_type or "AVRO").upper()
            registered_schema = Schema(schema if isinstance(schema, str) else json.dumps(schema), kind)
        if auto_register:
            schema_id = client.register(subject, registered_schema)
        else:
            schema_id = client.lookup(subject, registered_schema).schema_id
    else:
        registered = (
            client.get_latest_version(subject) if version in (None, "latest") else client.get_version(subject, version)
        )
        registered_schema, schema_id = registered.schema, registered.schema_id
        if registered_schema.schema_type == "PROTOBUF":
            serialized = client.get_version(subject, registered.version, fmt="serialized").schema
            desc = protobuf_message(client, schema_id, serialized, message)
            header = wire.frame(schema_id, b"", message_indexes(desc))
            return EncoderSpec("PROTOBUF", header, desc.full_name, (), file_descriptor_set(desc.file))
    kind = registered_schema.schema_type
    if kind == "AVRO":
        named: list[str] = []
        avro_references(client, registered_schema, named, set())
        return EncoderSpec("AVRO", wire.prefix(schema_id), registered_schema.schema_str, tuple(named))
    if kind == "JSON":
        return EncoderSpec("JSON", wire.prefix(schema_id), registered_schema.schema_str)
    raise ValueError(
        f"to_registry cannot encode with a {kind} schema given as text: pass the generated "
        "Protobuf message class as schema=, or subject= with a registered version"
    )


_lock = threading.Lock()
_encoders: dict[EncoderSpec, Callable[[Any], bytes]] = {}


def _avro_encoder(spec: EncoderSpec) -> Callable[[Any], bytes]:
    named: dict = {}
    names = AvroNames()
    for text in spec.named:
        parse_avro_schema(Schema(text), None, named)
        avro_datum_converter(json.loads(text), names)
    parsed, named = parse_avro_schema(Schema(spec.schema), None, named)
    convert = avro_datum_converter(json.loads(spec.schema), names)
    write = fastavro_core.write_data
    options = fastavro_core.WRITE_OPTIONS
    header = spec.header

    def encode(row: Any) -> bytes:
        buf = bytearray(header)
        write(buf, convert(row) if convert is not None else row, parsed, named, "", options)
        return bytes(buf)

    return encode


def _json_encoder(spec: EncoderSpec) -> Callable[[Any], bytes]:
    convert = json_value_converter(json.loads(spec.schema))
    header = spec.header
    validator = compile_validator(Schema(spec.schema, "JSON"), None) if spec.validate else None

    def encode(row: Any) -> bytes:
        payload = orjson.dumps(convert(row) if convert is not None else row)
        if validator is not None:
            document = orjson.loads(payload)  # what a reader will see (dates and bytes as their JSON strings)
            if not validator.is_valid(document):
                raise SerializationError(
                    f"record does not match the JSON Schema {_validation_message(validator, document)}"
                )
        return header + payload

    return encode


def _protobuf_encoder(spec: EncoderSpec) -> Callable[[Any], bytes]:
    pool = descriptor_pool.DescriptorPool()
    for fdp in descriptor_pb2.FileDescriptorSet.FromString(spec.descriptors).file:
        pool.Add(fdp)
    desc = pool.FindMessageTypeByName(spec.schema)
    cls = GetMessageClass(desc)
    convert = protobuf_value_converter(desc)
    header = spec.header
    return lambda row: header + cls(**convert(row)).SerializeToString()


def encoder_for(spec: EncoderSpec) -> Callable[[Any], bytes]:
    enc = _encoders.get(spec)
    if enc is None:
        with _lock:
            enc = _encoders.get(spec)
            if enc is None:
                build = {"AVRO": _avro_encoder, "JSON": _json_encoder, "PROTOBUF": _protobuf_encoder}[spec.kind]
                enc = _encoders[spec] = build(spec)
    return enc


def encode_batch(spec: EncoderSpec, mode: str, values: pa.Array) -> pa.Array:
    """Entry point of the Arrow UDF: a struct array in, a binary array of framed payloads out."""
    encode = encoder_for(spec)
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    out: list[bytes | None] = []
    for i, row in enumerate(values.to_pylist(maps_as_pydicts="strict")):
        if row is None:
            out.append(None)
            continue
        try:
            out.append(encode(row))
        except Exception as e:  # fastavro / protobuf / orjson each raise their own types for a bad value
            if mode == "PERMISSIVE":
                out.append(None)
                continue
            schema_id = wire.read_schema_id(spec.header)
            reason = str(e) if isinstance(e, SerializationError) else f"{type(e).__name__}: {e}"
            raise SerializationError(
                f"to_registry (FAILFAST): row {i} of the Arrow batch{partition_note()} does not "
                f"fit schema id {schema_id} ({spec.kind}): {reason}",
                schema_id=schema_id,
            ) from e
    return pa.array(out, pa.binary())
