"""Protobuf serializer and deserializer (google.protobuf), byte-compatible with confluent-kafka's.

Frame: 5-byte prefix, the message-index path of the type inside its .proto file, then the message bytes.
Schemas travel as base64 ``FileDescriptorProto``s, as confluent-kafka's serializer sends them: each
imported file is registered first (recursively) under the subject named by its import path, except the
well-known ``google/protobuf/``, ``google/type/`` and ``confluent/`` files. Reading, a writer schema and its
imports are loaded into a descriptor pool of their own (``RegisteredProtoFile``), once per schema id.
"""

from __future__ import annotations

import base64
import importlib
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeGuard

from confluent_kafka.serialization import SerializationContext
from google.protobuf import descriptor_pb2, descriptor_pool
from google.protobuf.descriptor import Descriptor, FileDescriptor
from google.protobuf.message import DecodeError, Message
from google.protobuf.message_factory import GetMessageClass

from serdes import wire
from serdes.base import SubjectPlans, fetch_writer_schema, topic_of
from serdes.client import RegistryClient
from serdes.errors import RegistryError, SerializationError
from serdes.models import Schema, SchemaReference
from serdes.strategies import SubjectNameStrategy

__all__ = ["ProtobufDeserializer", "ProtobufSerializer", "RegisteredProtoFile", "is_builtin_proto", "is_message_class",
           "message_indexes"]

_PREFIX = wire.PREFIX_SIZE


def is_message_class(t: Any) -> TypeGuard[type[Message]]:
    """A generated Protobuf message class (not an instance)."""
    return isinstance(t, type) and issubclass(t, Message)


def is_builtin_proto(path: str) -> bool:
    """Files every client already has, never registered as references."""
    return path.startswith(("google/protobuf/", "google/type/", "confluent/"))


def message_indexes(desc: Descriptor) -> list[int]:
    """The path of ``desc`` in its file: index among top-level messages, then among nested types."""
    path = []
    current = desc
    while current.containing_type is not None:
        parent = current.containing_type
        path.append(list(parent.nested_types).index(current))
        current = parent
    path.append(list(current.file.message_types_by_name.values()).index(current))
    return path[::-1]


def _b64(fd: FileDescriptor) -> str:
    return base64.standard_b64encode(fd.serialized_pb).decode("ascii")


def reference_subject_name(ctx: SerializationContext | None, dep: FileDescriptor) -> str:
    """Default subject of an imported file: its import path (what confluent-kafka uses)."""
    return dep.name


class ProtobufSerializer:
    """``(message, ctx) -> bytes`` for one generated message class.

    Arguments as for ``AvroSerializer``; ``skip_known_types`` (default True) leaves well-known imports
    unregistered; ``reference_subject_strategy(ctx, file_descriptor) -> subject`` names imported files.
    """

    def __init__(self, client: RegistryClient, message_type: type[Message], *,
                 strategy: str | SubjectNameStrategy = "topic", subject: str | None = None,
                 auto_register: bool | None = None, use_latest_version: bool = False, normalize: bool = False,
                 skip_known_types: bool = True,
                 reference_subject_strategy: Callable[[SerializationContext | None, FileDescriptor], str]
                 = reference_subject_name) -> None:
        if not is_message_class(message_type):
            raise TypeError(f"ProtobufSerializer needs a generated message class, not {message_type!r}")
        if auto_register and use_latest_version:
            raise ValueError("auto_register and use_latest_version exclude each other")
        self._client = client
        self._cls = message_type
        self._desc = message_type.DESCRIPTOR
        self._indexes = wire.encode_message_indexes(message_indexes(self._desc))
        self._use_latest = use_latest_version
        self._auto_register = (not use_latest_version) if auto_register is None else auto_register
        self._normalize = normalize
        self._skip_known = skip_known_types
        self._ref_subject = reference_subject_strategy
        # A plan here is the frame header alone: prefix + message indexes, to which the message bytes are appended.
        self._plans: SubjectPlans[bytes] = SubjectPlans(client, strategy, subject, self._desc.full_name)
        self._ctx = threading.local()

    def _references(self, ctx: SerializationContext | None, fd: FileDescriptor) -> tuple[SchemaReference, ...]:
        refs = []
        for dep in fd.dependencies:
            if self._skip_known and is_builtin_proto(dep.name):
                continue
            schema = Schema(_b64(dep), "PROTOBUF", self._references(ctx, dep))
            subject = self._ref_subject(ctx, dep)
            if self._auto_register:
                version = self._client.register_full(subject, schema, self._normalize).version
            else:
                version = self._client.lookup(subject, schema, self._normalize).version
            refs.append(SchemaReference(dep.name, subject, version))
        return tuple(refs)

    def _build(self, subject: str) -> bytes:
        if self._use_latest:
            schema_id = self._client.get_latest_version(subject).schema_id
        else:
            schema = Schema(_b64(self._desc.file), "PROTOBUF", self._references(self._ctx.value, self._desc.file))
            if self._auto_register:
                schema_id = self._client.register(subject, schema, self._normalize)
            else:
                schema_id = self._client.lookup(subject, schema, self._normalize).schema_id
        return wire.prefix(schema_id) + self._indexes

    def __call__(self, message: Message | None, ctx: SerializationContext | None = None) -> bytes | None:
        if message is None:
            return None
        if type(message) is not self._cls and not isinstance(message, self._cls):
            raise SerializationError(f"expected a {self._desc.full_name} message, got {type(message).__name__}",
                                     topic=topic_of(ctx))
        plans = self._plans
        head = plans.single
        if head is None:
            head = plans.by_ctx.get((ctx.topic, ctx.field)) if ctx is not None and plans.per_topic else None
            if head is None:
                self._ctx.value = ctx
                head = plans.get(ctx, self._build)
        try:
            return head + message.SerializeToString()
        except Exception as e:  # e.g. proto2 required fields missing
            raise SerializationError(f"cannot serialize {self._desc.full_name}: {e}", topic=topic_of(ctx),
                                     schema_id=wire.read_schema_id(head)) from e


class RegisteredProtoFile:
    """A registered Protobuf schema loaded into a descriptor pool of its own, with everything it imports.

    References are fetched from the registry (as serialized ``FileDescriptorProto``s) and added first;
    well-known imports (``google/protobuf/...``) come from the generated modules. ``file`` is the schema's own
    ``FileDescriptor``, ``message(indexes)`` finds a message by its wire-format index path. The deserializer
    builds one per writer schema id; ``serdes.spark`` uses it to find reader messages.
    """

    def __init__(self, client: RegistryClient, schema_id: int, schema: Schema) -> None:
        self.schema_id = schema_id
        self.pool = descriptor_pool.DescriptorPool()
        self._added: set[str] = set()
        self.file = self.pool.FindFileByName(self._add(client, schema, None, schema_id))

    def _add(self, client: RegistryClient, schema: Schema, ref_name: str | None, schema_id: int) -> str:
        """Add ``schema`` (after its references) to the pool; returns the file name it was added under."""
        for ref in schema.references:
            if ref.name not in self._added:
                target = client.get_version(ref.subject, ref.version, fmt="serialized").schema
                self._add(client, target, ref.name, schema_id)
        fdp = descriptor_pb2.FileDescriptorProto()
        fdp.ParseFromString(base64.standard_b64decode(schema.schema_str))
        # An imported file must carry the name the importer uses; the main file keeps its own name.
        fdp.name = ref_name or fdp.name or f"schema-{schema_id}.proto"
        for dep in fdp.dependency:  # well-known imports come from the generated modules' default pool
            if dep not in self._added:
                self._add_known(dep)
        self._added.add(fdp.name)
        self.pool.Add(fdp)
        return fdp.name

    def _add_known(self, path: str) -> None:
        try:
            fd = descriptor_pool.Default().FindFileByName(path)
        except KeyError:
            fd = _import_known(path)
        for dep in fd.dependencies:
            if dep.name not in self._added:
                self._add_known(dep.name)
        fdp = descriptor_pb2.FileDescriptorProto.FromString(fd.serialized_pb)
        self._added.add(path)
        self.pool.Add(fdp)

    def message(self, indexes: list[int]) -> Descriptor:
        """The message at ``indexes`` (top-level index, then nested); IndexError when the path does not exist."""
        types = list(self.file.message_types_by_name.values())
        desc = None
        for i in indexes:
            if i >= len(types):
                raise IndexError(f"message index path {indexes} does not exist in the writer schema")
            desc = types[i]
            types = list(desc.nested_types)
        assert desc is not None
        return desc


@dataclass(frozen=True, slots=True)
class _ReadPlan:
    """What the deserializer resolved for one frame header (schema id + message-index path)."""

    message_class: type[Message]
    payload_start: int  # where the message bytes begin: after prefix and index path
    schema_id: int


class ProtobufDeserializer:
    """``(bytes, ctx) -> message``.

    With ``message_type`` every payload is parsed as that class (Protobuf's own field-number evolution rules
    apply between writer and reader); without it, the writer schema's message class is built from the
    registry and returned.
    """

    def __init__(self, client: RegistryClient, message_type: type[Message] | None = None) -> None:
        if message_type is not None and not is_message_class(message_type):
            raise TypeError(f"ProtobufDeserializer needs a generated message class, not {message_type!r}")
        self._client = client
        self._cls = message_type
        self._files: dict[int, RegisteredProtoFile] = {}
        self._plans: dict[bytes, _ReadPlan] = {}  # keyed by prefix + index-path bytes
        self._lock = threading.Lock()

    def __call__(self, data: bytes | None, ctx: SerializationContext | None = None) -> Message | None:
        if data is None:
            return None
        if type(data) is not bytes:
            data = bytes(data)
        # Fast path: the common single-zero index path makes the first 6 bytes identify the plan.
        plan = self._plans.get(data[:6])
        if plan is None:
            plan = self._plan(data, ctx)
        try:
            return plan.message_class.FromString(data[plan.payload_start:])
        except (DecodeError, RuntimeError, ValueError) as e:
            raise SerializationError(f"cannot decode Protobuf {plan.message_class.DESCRIPTOR.full_name}: {e}",
                                     topic=topic_of(ctx), offset=plan.payload_start, schema_id=plan.schema_id) from e

    def _plan(self, data: bytes, ctx: SerializationContext | None) -> _ReadPlan:
        topic = topic_of(ctx)
        schema_id = wire.read_schema_id(data, topic)
        if len(data) == _PREFIX:
            raise SerializationError("payload ends before the Protobuf message indexes", topic=topic,
                                     offset=_PREFIX, schema_id=schema_id)
        indexes, start = wire.decode_message_indexes(data, _PREFIX, topic, schema_id)
        with self._lock:
            wf = self._files.get(schema_id)
            if wf is None:
                writer = fetch_writer_schema(self._client, schema_id, topic, fmt="serialized")
                if writer.schema_type != "PROTOBUF":
                    raise SerializationError(f"schema {schema_id} is {writer.schema_type}, not PROTOBUF",
                                             topic=topic, offset=1, schema_id=schema_id)
                try:
                    wf = self._files[schema_id] = RegisteredProtoFile(self._client, schema_id, writer)
                except (ValueError, TypeError, RegistryError) as e:
                    raise SerializationError(f"cannot load Protobuf writer schema {schema_id}: {e}",
                                             topic=topic, schema_id=schema_id) from e
        plan = self._plans.get(data[:start])
        if plan is not None:
            return plan
        try:
            desc = wf.message(indexes)
        except IndexError as e:
            raise SerializationError(str(e), topic=topic, offset=_PREFIX, schema_id=schema_id) from e
        cls = self._cls if self._cls is not None else GetMessageClass(desc)
        plan = _ReadPlan(cls, start, schema_id)
        # Keyed by frame header + index bytes: for the common [0] path that is the 6 bytes the fast path
        # looks up; longer paths are found here after decoding their indexes.
        self._plans[data[:start]] = plan
        return plan


def _import_known(path: str) -> FileDescriptor:
    """A well-known import (``google/protobuf/timestamp.proto``) is in the default pool only once its generated
    module was imported; a fresh consumer process may not have done that yet, so import it on demand."""
    if path.endswith(".proto"):
        try:
            importlib.import_module(path[: -len(".proto")].replace("/", ".") + "_pb2")
            return descriptor_pool.Default().FindFileByName(path)
        except (ImportError, KeyError):
            pass
    raise ValueError(f"import {path!r} is neither a schema reference nor a known file")
