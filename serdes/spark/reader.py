"""Driver side: turn ``subject`` / ``version`` / ``reader_schema`` into a self-contained, picklable reader spec.

The spec carries everything the executors need except writer schemas: the reader schema text (Avro and JSON)
with the Avro named types it references, or the reader message as a serialized ``FileDescriptorSet``
(Protobuf), plus the Spark type. Executors only call the registry to fetch writer schemas by id (and, for the
writer id column, the version an id has under the subject).

A topic mixing record types (``TopicRecordNameStrategy``: one subject per record type) is read with a
``RecordTypesSpec``: one Avro reader spec per subject, decoded into ``struct<TypeA: ..., TypeB: ...>`` with the
field of the row's record type set (the writer schema's record name picks it).
"""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from google.protobuf import descriptor_pb2
from google.protobuf.descriptor import Descriptor, FileDescriptor
from pyspark.sql.types import DataType, StructField, StructType

from serdes.client import RegistryClient
from serdes.errors import RegistryError
from serdes.models import Schema
from serdes.protobuf import RegisteredProtoFile, is_message_class
from serdes.spark.registry_options import RegistryOptions
from serdes.spark.types import AvroNames, avro_to_spark, json_schema_to_spark, protobuf_to_spark

__all__ = [
    "ReaderSpec",
    "RecordTypesSpec",
    "avro_references",
    "file_descriptor_set",
    "protobuf_message",
    "resolve_reader",
    "resolve_record_types",
]

KINDS = ("AVRO", "JSON", "PROTOBUF")


@dataclass(frozen=True)
class ReaderSpec:
    """What a decode engine needs to know about the reader side (hashable: it keys executor caches)."""

    kind: str  # AVRO, JSON or PROTOBUF
    registry: RegistryOptions  # URL(s) and client options (auth, TLS)
    reader: str  # Avro / JSON Schema text; for Protobuf the message's full name
    named: tuple[str, ...] = ()  # Avro: referenced schemas, dependencies first
    descriptors: bytes = b""  # Protobuf: serialized FileDescriptorSet holding the reader message
    spark_type_json: str = ""
    subject: str | None = None  # the subject the reader came from (writer versions are looked up there)
    #: the subject version's encryption rules (``{"ruleSet": ..., "metadata": ...}`` as JSON), "" without any:
    #: the Python engine decrypts with them, the JVM engine cannot
    encryption: str = ""

    @property
    def encrypted(self) -> bool:
        return bool(self.encryption)

    def reader_schema(self, schema_type: str) -> Schema:
        """The reader schema text with the subject version's rules and metadata (what decrypts)."""
        extra = json.loads(self.encryption) if self.encryption else {}
        return Schema.from_json({"schema": self.reader, "schemaType": schema_type, **extra})

    @property
    def spark_type(self) -> DataType:
        return parse_type(self.spark_type_json)


def parse_type(type_json: str) -> DataType:
    # StructField.fromJson is pyspark's public parser for a type's JSON: read it as a field's type
    field = {"name": "value", "type": json.loads(type_json), "nullable": True, "metadata": {}}
    return StructField.fromJson(field).dataType


@dataclass(frozen=True)
class RecordTypesSpec:
    """Several Avro record types in one column (one subject each): decoded into a struct with a field per type."""

    names: tuple[str, ...]  # the struct's field names, one per record type
    branches: tuple[ReaderSpec, ...]
    kind: str = "AVRO"

    @property
    def registry(self) -> RegistryOptions:
        return self.branches[0].registry

    @property
    def spark_type(self) -> DataType:
        return StructType([StructField(n, b.spark_type, True) for n, b in zip(self.names, self.branches, strict=True)])


def avro_references(client: RegistryClient, schema: Schema, out: list[str], seen: set[str]) -> None:
    """Append the text of every schema ``schema`` references (transitively) to ``out``, dependencies first."""
    for ref in schema.references:
        if ref.name in seen:
            continue
        seen.add(ref.name)
        target = client.get_version(ref.subject, ref.version).schema
        avro_references(client, target, out, seen)
        out.append(target.schema_str)


def file_descriptor_set(fd: FileDescriptor) -> bytes:
    """The file and everything it imports, dependencies first, as a FileDescriptorSet."""
    files: list[FileDescriptor] = []
    seen: set[str] = set()

    def walk(f: FileDescriptor) -> None:
        if f.name in seen:
            return
        seen.add(f.name)
        for dep in f.dependencies:
            walk(dep)
        files.append(f)

    walk(fd)
    fds = descriptor_pb2.FileDescriptorSet()
    for f in files:
        fds.file.add().ParseFromString(f.serialized_pb)
    return fds.SerializeToString()


def protobuf_message(client: RegistryClient, schema_id: int, schema: Schema, message: str | None) -> Descriptor:
    """Message ``message`` (full name; None: the file's first) of a registered schema in serialized form."""
    proto_file = RegisteredProtoFile(client, schema_id, schema)
    if message is None:
        return proto_file.message([0])
    try:
        return proto_file.pool.FindMessageTypeByName(message)
    except KeyError:
        raise ValueError(f"message {message!r} is not defined in schema id {schema_id}") from None


def resolve_reader(
    registry: RegistryOptions,
    *,
    subject: str | None = None,
    version: int | str | None = None,
    reader_schema: Any = None,
    schema_type: str | None = None,
    message: str | None = None,
    client: RegistryClient | None = None,
) -> ReaderSpec:
    """Build the reader spec on the driver.

    ``reader_schema`` pins the reader: an Avro / JSON Schema as text or dict (``schema_type`` says which when no
    subject tells, default AVRO), a ``serdes.Schema``, or a generated Protobuf message class. Otherwise the
    subject's ``version`` (default: latest) is the reader. ``message`` picks a Protobuf message by full name
    (default: the file's first message).
    """
    own = client is None
    client = client or registry.client()
    try:
        return _resolve(client, registry, subject, version, reader_schema, schema_type, message)
    except RegistryError as e:
        what = f"subject {subject!r} version {version or 'latest'}" if subject else "the reader schema"
        raise RegistryError(e.status, e.error_code, f"from_registry: cannot load {what}: {e.message}") from e
    finally:
        if own:
            client.close()


ENCRYPTION_RULES = frozenset({"ENCRYPT", "ENCRYPT_PAYLOAD"})


def encryption_of(schema: Schema) -> str:
    """``schema``'s rule set and metadata as JSON when it has an encryption rule (``ENCRYPT``,
    ``ENCRYPT_PAYLOAD``), else ""."""
    rs = schema.rule_set
    rules = [*rs.domain_rules, *rs.encoding_rules] if rs is not None else []
    if not any((r.type or "").upper() in ENCRYPTION_RULES and not r.disabled for r in rules):
        return ""
    body = schema.to_json()
    return json.dumps({k: body[k] for k in ("ruleSet", "metadata") if k in body}, sort_keys=True)


def _resolve(
    client: RegistryClient,
    registry: RegistryOptions,
    subject: str | None,
    version: int | str | None,
    reader_schema: Any,
    schema_type: str | None,
    message: str | None,
) -> ReaderSpec:
    if is_message_class(reader_schema):
        desc = reader_schema.DESCRIPTOR
        return _protobuf_spec(registry, desc, subject)
    if reader_schema is not None:
        if isinstance(reader_schema, Schema):
            schema = reader_schema
        else:
            kind = (schema_type or (_subject_kind(client, subject) if subject else "AVRO")).upper()
            text = reader_schema if isinstance(reader_schema, str) else json.dumps(reader_schema)
            schema = Schema(text, kind)
        if schema.schema_type == "PROTOBUF":
            raise ValueError(
                "a Protobuf reader_schema must be a generated message class "
                "(or pass subject= and version= to read it from the registry)"
            )
        return _text_spec(client, registry, schema, subject)
    if subject is None:
        raise ValueError("from_registry needs subject= (and optionally version=) or reader_schema=")
    if version is None or version == "latest":
        registered = client.get_latest_version(subject)
    else:
        registered = client.get_version(subject, version)
    if registered.schema.schema_type == "PROTOBUF":
        serialized = client.get_version(subject, registered.version, fmt="serialized")
        spec = _protobuf_spec(
            registry, protobuf_message(client, registered.schema_id, serialized.schema, message), subject
        )
    else:
        spec = _text_spec(client, registry, registered.schema, subject)
    return dataclasses.replace(spec, encryption=encryption_of(registered.schema))


def _subject_kind(client: RegistryClient, subject: str) -> str:
    return client.get_latest_version(subject).schema.schema_type


def _text_spec(client: RegistryClient, registry: RegistryOptions, schema: Schema, subject: str | None) -> ReaderSpec:
    kind = schema.schema_type
    if kind not in KINDS:
        raise ValueError(f"schema type {kind!r} is not one of {', '.join(KINDS)}")
    doc = json.loads(schema.schema_str)
    if kind == "AVRO":
        named: list[str] = []
        avro_references(client, schema, named, set())
        names = AvroNames()
        for text in named:
            avro_to_spark(json.loads(text), names)
        spark_type, _ = avro_to_spark(doc, names)
        return ReaderSpec("AVRO", registry, schema.schema_str, tuple(named), b"", spark_type.json(), subject)
    if schema.references:
        raise ValueError("JSON Schema references are not supported by serdes.spark yet")
    return ReaderSpec("JSON", registry, schema.schema_str, (), b"", json_schema_to_spark(doc).json(), subject)


def _protobuf_spec(registry: RegistryOptions, desc: Descriptor, subject: str | None) -> ReaderSpec:
    spark_type = protobuf_to_spark(desc)
    assert isinstance(spark_type, StructType)
    return ReaderSpec(
        "PROTOBUF", registry, desc.full_name, (), file_descriptor_set(desc.file), spark_type.json(), subject
    )


def resolve_record_types(registry: RegistryOptions, subjects: Sequence[str] | Mapping[str, str]) -> RecordTypesSpec:
    """One reader spec per subject (its latest version, an Avro record), named by the dict's keys or else by the
    records' names (without namespace). Two subjects may not hold the same record, nor two fields the same name."""
    named = dict(subjects) if isinstance(subjects, Mapping) else None
    listed = list(named.values()) if named is not None else list(subjects)
    if not listed or not all(isinstance(s, str) and s for s in listed):
        raise ValueError("subjects= needs one or more subject names (a list, or a dict of field name -> subject)")
    with registry.client() as client:
        specs = [resolve_reader(registry, subject=s, client=client) for s in listed]
    records: dict[str, str] = {}
    for subject, spec in zip(listed, specs, strict=True):
        doc = json.loads(spec.reader)
        if spec.kind != "AVRO" or not isinstance(doc, dict) or doc.get("type") != "record":
            raise ValueError(
                f"subjects=: subject {subject!r} does not hold an Avro record (a topic mixing record "
                f"types is read for Avro records only)"
            )
        full = doc["name"] if "." in doc["name"] else ".".join(filter(None, [doc.get("namespace"), doc["name"]]))
        if full in records:
            raise ValueError(
                f"subjects=: {subject!r} and {records[full]!r} both hold record {full}: a row's record "
                "name could not pick one"
            )
        records[full] = subject
    names = list(named) if named is not None else [full.rpartition(".")[2] for full in records]
    twice = [n for n, count in Counter(names).items() if count > 1]
    if twice:
        raise ValueError(
            f"subjects=: two record types are both named {twice[0]!r}: pass a dict "
            "{field name: subject} to name the struct's fields"
        )
    return RecordTypesSpec(tuple(names), tuple(specs))
