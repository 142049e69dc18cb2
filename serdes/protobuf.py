"""Protobuf serializers and deserializers (google.protobuf), byte-compatible with confluent-kafka's; sync and
async (``_ProtobufSerializerBase`` / ``_ProtobufDeserializerBase`` hold everything but the client calls, as in
``serdes.avro``).

Frame: 5-byte prefix, the message-index path of the type inside its .proto file, then the message bytes.
Schemas travel as base64 ``FileDescriptorProto``s, as confluent-kafka's serializer sends them: each
imported file is registered first (recursively) under the subject named by its import path, except the
well-known ``google/protobuf/``, ``google/type/`` and ``confluent/`` files. Reading, a writer schema and its
imports are loaded into a descriptor pool of their own (``RegisteredProtoFile``), once per schema id.

The serializers' common case (a message of the class, a cached plan, no rules, no id header) is written once, in
``_ProtobufSerializerBase._serialize``: it is the sync serializer's ``__call__``, and the async serializer's
coroutine returns its frame (``AsyncFastPathSerializerBase``); anything else takes the general path
(``SyncSerializerBase`` / ``AsyncSerializerBase``).
"""

from __future__ import annotations

import base64
import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeGuard

from confluent_kafka.serialization import SerializationContext
from google.protobuf import descriptor_pb2, descriptor_pool, json_format
from google.protobuf.descriptor import Descriptor, FileDescriptor
from google.protobuf.message import DecodeError, Message
from google.protobuf.message_factory import GetMessageClass

from serdes import wire
from serdes.async_client import AsyncRegistryClient
from serdes.base import (
    AsyncDeserializerBase,
    AsyncFastPathSerializerBase,
    DeserializerBase,
    LatestSchema,
    SchemaChoice,
    SerializerBase,
    SubjectPlans,
    SyncDeserializerBase,
    SyncSerializerBase,
    cache_capacity,
    check_client,
    topic_of,
    writer_schema,
)
from serdes.caches import BoundedDict
from serdes.client import RegistryClient
from serdes.errors import RegistryError, SerializationError
from serdes.models import RegisteredSchema, Schema
from serdes.plans import LocalReference, Plan, load_references, register_or_lookup, register_references, run_plan
from serdes.rules import steps as rule_steps
from serdes.rules.engine import RuleConfig, RuleTarget
from serdes.schema_ids import CLASSIC_MAGIC, HeaderFramer
from serdes.strategies import SubjectNameStrategy

__all__ = [
    "AsyncProtobufDeserializer",
    "AsyncProtobufSerializer",
    "ProtobufDeserializer",
    "ProtobufSerializer",
    "RegisteredProtoFile",
    "is_builtin_proto",
    "is_message_class",
    "message_indexes",
]

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


def _local_references(
    fd: FileDescriptor, skip_known: bool
) -> tuple[list[LocalReference], tuple[str, ...], dict[str, FileDescriptor]]:
    """The files ``fd`` imports, transitively, as references to register (dependencies first), the names of its
    direct imports among them, and each file by name."""
    files: dict[str, FileDescriptor] = {}
    order: list[LocalReference] = []

    def registered(deps: Sequence[FileDescriptor]) -> tuple[str, ...]:
        return tuple(d.name for d in deps if not (skip_known and is_builtin_proto(d.name)))

    def visit(dep: FileDescriptor) -> None:
        if dep.name in files:
            return
        files[dep.name] = dep
        for sub in dep.dependencies:
            if not (skip_known and is_builtin_proto(sub.name)):
                visit(sub)
        order.append(LocalReference(dep.name, Schema(_b64(dep), "PROTOBUF"), registered(dep.dependencies)))

    for dep in fd.dependencies:
        if not (skip_known and is_builtin_proto(dep.name)):
            visit(dep)
    return order, registered(fd.dependencies), files


def _rule_target(desc: Descriptor) -> rule_steps.TargetFactory:
    """How rules see messages of ``desc``: field rules walk the message, CEL sees a dict of its fields, JSONata
    its JSON mapping."""
    from serdes.rules import proto_walk

    def target(schema: Schema, schema_id: int | None) -> RuleTarget:
        return RuleTarget(
            schema,
            lambda selection, condition: proto_walk.proto_walker(desc, selection, condition),
            proto_walk.to_value,
            proto_walk.from_value,
            proto_walk.to_json,
            proto_walk.from_json,
            schema_id=schema_id,
        )

    return target


class _ProtobufSerializerBase(SerializerBase[bytes]):
    """``(message, ctx) -> bytes`` for one generated message class.

    Arguments as for ``AvroSerializer`` (``use_latest_version``, ``use_latest_with_metadata``, ``use_schema_id``
    included); ``skip_known_types`` (default True) leaves well-known imports unregistered;
    ``reference_subject_strategy(ctx, file_descriptor) -> subject`` names imported files (default: the import
    path); ``rule_config`` as confluent-kafka's ``rule.conf``; ``schema_id_header`` as for ``AvroSerializer``.
    The WRITE rules of a registered schema written with (``use_latest_*``, ``use_schema_id``) run on each message
    (a transform works on a copy).
    """

    def __init__(
        self,
        client: RegistryClient | AsyncRegistryClient,
        message_type: type[Message],
        *,
        strategy: str | SubjectNameStrategy = "topic",
        subject: str | None = None,
        auto_register: bool | None = None,
        use_latest_version: bool = False,
        use_latest_with_metadata: dict[str, str] | None = None,
        use_schema_id: int | None = None,
        normalize: bool = False,
        skip_known_types: bool = True,
        reference_subject_strategy: Callable[
            [SerializationContext | None, FileDescriptor], str
        ] = reference_subject_name,
        rule_config: dict[str, Any] | None = None,
        schema_id_header: bool = False,
    ) -> None:
        check_client(client, self._is_async, self)
        self._id_header = HeaderFramer(protobuf=True, subject=subject) if schema_id_header else None
        self._rule_config = RuleConfig(rule_config, client)
        self._rules: dict[bytes, rule_steps.Step] = {}  # frame header -> the WRITE rules of its schema
        self._encodings: dict[bytes, rule_steps.Step] = {}  # frame header -> its WRITE encodingRules
        if not is_message_class(message_type):
            raise TypeError(f"{type(self).__name__} needs a generated message class, not {message_type!r}")
        self._choice = SchemaChoice(
            self, "PROTOBUF", True, auto_register, use_latest_version, use_latest_with_metadata, use_schema_id
        )
        self._client = client
        self._auto_register = self._choice.auto_register
        self._cls = message_type
        self._desc = message_type.DESCRIPTOR
        self._indexes = wire.encode_message_indexes(message_indexes(self._desc))
        self._normalize = normalize
        self._local_refs, self._main_uses, self._files = _local_references(self._desc.file, skip_known_types)
        self._ref_subject = reference_subject_strategy
        # A plan here is the frame header alone: prefix + message indexes, to which the message bytes are appended.
        self._plans: SubjectPlans[bytes] = SubjectPlans(
            strategy, subject, self._desc.full_name, cache_capacity(client), cache=not self._choice.latest.enabled
        )

    def _resolve(self, subject: str, ctx: SerializationContext | None) -> Plan[bytes]:
        if self._choice.chosen:
            schema_id, registered = yield from self._choice.fetch(subject, ctx)
            rules = (
                rule_steps.write_rules(registered, _rule_target(self._desc), self._rule_config, schema_id, subject)
                if rule_steps.has_rules(registered)
                else None
            )
            if rules is not None:
                self._rules[wire.prefix(schema_id) + self._indexes] = rules
            encoding = rule_steps.encoding_rules(
                registered, rule_steps.WRITE, _rule_target(self._desc), self._rule_config, schema_id, subject
            )
            if encoding is not None:
                self._encodings[wire.prefix(schema_id) + self._indexes] = encoding
        else:
            done = yield from register_references(
                self._local_refs,
                lambda name: self._ref_subject(ctx, self._files[name]),
                self._auto_register,
                self._normalize,
            )
            schema = Schema(_b64(self._desc.file), "PROTOBUF", tuple(done[n] for n in self._main_uses))
            schema_id = yield from register_or_lookup(subject, schema, self._auto_register, self._normalize)
        return wire.prefix(schema_id) + self._indexes

    _general_path: Callable[[Any, SerializationContext | None], Any]  # set by the sync and async serializers

    def _serialize(self, message: Message | None, ctx: SerializationContext | None = None) -> Any:
        """The fast path, written once for sync and async: the frame of a message of the class with a cached plan,
        no rules and no id header, which awaits nothing; any other record goes to ``_general_path``, whose
        ``_write`` raises any error with its details. ``ProtobufSerializer.__call__`` is this method;
        ``AsyncFastPathSerializerBase`` says how the async serializer uses it."""
        if type(message) is self._cls and not self._rules and not self._encodings and self._id_header is None:
            head = self._plans.single
            if head is None and ctx is not None:
                head = self._plans.by_ctx.get((ctx.topic, ctx.field))
            if head is not None:
                try:
                    return head + message.SerializeToString()  # type: ignore[union-attr]  # not None: its type is _cls
                except Exception:
                    pass
        return self._general_path(message, ctx)

    def _write(self, message: Message, head: bytes, ctx: SerializationContext | None) -> bytes:
        if type(message) is not self._cls and not isinstance(message, self._cls):
            raise SerializationError(
                f"expected a {self._desc.full_name} message, got {type(message).__name__}", topic=topic_of(ctx)
            )
        rules = self._rules.get(head) if self._rules else None
        if rules is not None:
            message = rules(message, ctx, message)
        try:
            body = message.SerializeToString()
        except Exception as e:  # e.g. proto2 required fields missing
            raise SerializationError(
                f"cannot serialize {self._desc.full_name}: {e}",
                topic=topic_of(ctx),
                schema_id=wire.read_schema_id(head),
            ) from e
        encoding = self._encodings.get(head) if self._encodings else None
        return head + (body if encoding is None else encoding(body, ctx, message))


class ProtobufSerializer(_ProtobufSerializerBase, SyncSerializerBase[bytes]):
    __doc__ = _ProtobufSerializerBase.__doc__

    # The fast path is the call itself; its first parameter keeps the name ``message`` (the base has ``obj``).
    __call__ = _ProtobufSerializerBase._serialize  # type: ignore[assignment]
    _general_path = SyncSerializerBase.__call__


class AsyncProtobufSerializer(_ProtobufSerializerBase, AsyncFastPathSerializerBase[bytes]):
    """``await serializer(message, ctx) -> bytes``: ``ProtobufSerializer`` with an ``AsyncRegistryClient``."""


class RegisteredProtoFile:
    """A registered Protobuf schema loaded into a descriptor pool of its own, with everything it imports.

    ``references`` are the schemas it references (transitively, dependencies first, as serialized
    ``FileDescriptorProto``s, by import name: ``load`` fetches them); without them they are fetched with the
    sync ``client``. Well-known imports (``google/protobuf/...``) come from the generated modules. ``file`` is
    the schema's own ``FileDescriptor``, ``message(indexes)`` finds a message by its wire-format index path. The
    deserializers build one per writer schema id; ``serdes.spark`` uses it to find reader messages.
    """

    def __init__(
        self,
        client: RegistryClient | None,
        schema_id: int,
        schema: Schema,
        references: Mapping[str, Schema] | None = None,
    ) -> None:
        if references is None:
            references = run_plan(client, load_references(schema, "serialized")) if schema.references else {}
        self.schema_id = schema_id
        self.schema = schema
        self.pool = descriptor_pool.DescriptorPool()
        self._added: set[str] = set()
        for name, target in references.items():
            self._add(target, name, schema_id)
        self.file = self.pool.FindFileByName(self._add(schema, None, schema_id))

    @classmethod
    def load(cls, schema_id: int, schema: Schema) -> Plan[RegisteredProtoFile]:
        """Fetch the references of ``schema`` and build it (a plan: see ``serdes.base``)."""
        references = yield from load_references(schema, "serialized")
        return cls(None, schema_id, schema, references)

    def _add(self, schema: Schema, ref_name: str | None, schema_id: int) -> str:
        """Add ``schema`` (its references are in the pool already) ; returns the file name it was added under."""
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
    """What the deserializer resolved for one frame header (schema id + message-index path), and with
    ``use_latest_*`` one reader schema id."""

    message_class: type[Message]  # the class the payload is parsed as (the writer's when migrations run)
    payload_start: int  # where the message bytes begin: after prefix and index path
    schema_id: int
    rules: rule_steps.Step | None = None  # migrations, then the READ rules (None: no rules)
    encoding: rule_steps.Step | None = None  # the writer schema's READ encodingRules (ENCRYPT_PAYLOAD)


def _json_target(schema: Schema, schema_id: int | None) -> RuleTarget:
    """How migration rules see a Protobuf record: as the JSON dict it is migrated in (field rules select
    nothing there)."""
    return RuleTarget(schema, lambda selection, condition: None, schema_id=schema_id)


def _reader_message(reader: RegisteredProtoFile, writer: Descriptor, indexes: list[int]) -> Descriptor:
    """The reader schema's message for records of ``writer``: the one of the same name (as confluent-kafka picks
    it), else the one at the writer's index path, else the file's first."""
    try:
        return reader.pool.FindMessageTypeByName(writer.full_name)
    except KeyError:
        pass
    by_name = reader.file.message_types_by_name.get(writer.name)
    if by_name is not None:
        return by_name
    try:
        return reader.message(indexes)
    except IndexError:
        return reader.message([0])


def _migration(steps: Sequence[rule_steps.Step], reader_class: type[Message], schema_id: int) -> rule_steps.Step:
    """The step reading a writer's message as ``reader_class``: its JSON mapping (what confluent-kafka migrates)
    through ``steps``, then parsed as the reader's message."""
    run = rule_steps.chain(*steps)
    assert run is not None
    from serdes.rules import proto_walk

    prototype = reader_class()

    def migrate(message: Message, ctx: SerializationContext | None, original: Any) -> Message:
        value = run(proto_walk.to_json(message), ctx, original)
        try:
            if not isinstance(value, dict):
                raise TypeError(f"the migrations gave a {type(value).__name__}, not an object")
            return proto_walk.from_json(value, prototype)
        except (TypeError, ValueError, json_format.ParseError) as e:
            raise SerializationError(
                f"the record migrated to {reader_class.DESCRIPTOR.full_name} does not fit it: {e}",
                topic=topic_of(ctx),
                schema_id=schema_id,
            ) from e

    return migrate


class _ProtobufDeserializerBase(DeserializerBase[_ReadPlan]):
    """``(bytes, ctx) -> message``.

    With ``message_type`` every payload is parsed as that class (Protobuf's own field-number evolution rules
    apply between writer and reader); without it, the writer schema's message class is built from the
    registry and returned. The READ rules of the writer schema run on each message (``rule_config`` as
    confluent-kafka's ``rule.conf``).

    ``use_latest_version`` / ``use_latest_with_metadata`` take the subject's latest version (with those metadata
    properties; subject named by ``strategy`` / ``subject`` as for ``AvroDeserializer``; under a record-name
    strategy without ``message_type``, by the writer's message name) as the reader schema: records come back as
    its message of the writer's message name (as ``message_type`` when given). Between
    major versions the JSONata migrations run (as for ``AvroDeserializer``) on the writer's message in
    Protobuf's JSON mapping, as confluent-kafka does, and the result is parsed as the reader's message; then the
    READ rules of the reader schema run.
    """

    def __init__(
        self,
        client: RegistryClient | AsyncRegistryClient,
        message_type: type[Message] | None = None,
        *,
        use_latest_version: bool = False,
        use_latest_with_metadata: dict[str, str] | None = None,
        strategy: str | SubjectNameStrategy = "topic",
        subject: str | None = None,
        rule_config: dict[str, Any] | None = None,
    ) -> None:
        check_client(client, self._is_async, self)
        self._rule_config = RuleConfig(rule_config, client)
        if message_type is not None and not is_message_class(message_type):
            raise TypeError(f"{type(self).__name__} needs a generated message class, not {message_type!r}")
        self._client = client
        self._cls = message_type
        self._key_size = 6  # the common single-zero index path makes the first 6 bytes identify the plan
        self._latest = LatestSchema(use_latest_version, use_latest_with_metadata)
        self._follows_latest = self._latest.enabled
        self._subjects: SubjectPlans[None] = SubjectPlans(
            strategy, subject, message_type.DESCRIPTOR.full_name if message_type is not None else None
        )
        capacity = cache_capacity(client)
        self._files: BoundedDict[int, RegisteredProtoFile] = BoundedDict(capacity)
        # keyed by prefix + index-path bytes; with use_latest_* by (those, reader schema id)
        self._plans: BoundedDict[Any, _ReadPlan] = BoundedDict(capacity)

    def _read(self, data: bytes, ctx: SerializationContext | None, plan: _ReadPlan) -> Message:
        payload = data[plan.payload_start :]
        if plan.encoding is not None:
            payload = plan.encoding(payload, ctx, data)
        try:
            message = plan.message_class.FromString(payload)
        except (DecodeError, RuntimeError, ValueError) as e:
            raise SerializationError(
                f"cannot decode Protobuf {plan.message_class.DESCRIPTOR.full_name}: {e}",
                topic=topic_of(ctx),
                offset=plan.payload_start,
                schema_id=plan.schema_id,
            ) from e
        return message if plan.rules is None else plan.rules(message, ctx, data)

    @staticmethod
    def _header(data: bytes, topic: str | None) -> tuple[int, list[int], int]:
        """(schema id, message-index path, where the message bytes start)."""
        schema_id = wire.read_schema_id(data, topic)
        if len(data) == _PREFIX:
            raise SerializationError(
                "payload ends before the Protobuf message indexes", topic=topic, offset=_PREFIX, schema_id=schema_id
            )
        indexes, start = wire.decode_message_indexes(data, _PREFIX, topic, schema_id)
        return schema_id, indexes, start

    def _plan_key(self, data: bytes, ctx: SerializationContext | None) -> bytes:
        return data[: self._header(data, topic_of(ctx))[2]]

    def _lookup(self, data: bytes, ctx: SerializationContext | None) -> _ReadPlan | None:
        # Index paths other than [0] take more than the 6 bytes the first lookup uses: decode them here.
        return None if self._follows_latest else self._plans.get(self._plan_key(data, ctx))

    def _latest_subject(self, data: bytes, ctx: SerializationContext | None) -> Plan[str]:
        # Without message_type a record-name strategy takes the name of the writer's message, from its schema.
        try:
            return (yield from self._subjects.subject_plan(ctx))
        except SerializationError:
            if self._cls is not None:
                raise
        name = (yield from self._writer_message(data, topic_of(ctx)))[0].full_name
        return (yield from self._subjects.subject_plan(ctx, name))

    def _writer_message(self, data: bytes, topic: str | None) -> Plan[tuple[Descriptor, RegisteredProtoFile]]:
        """The message a frame was written with (from its schema id and message-index path), and its file."""
        schema_id, indexes, _ = self._header(data, topic)
        wf = yield from self._file(schema_id, topic)
        try:
            return wf.message(indexes), wf
        except IndexError as e:
            raise SerializationError(str(e), topic=topic, offset=_PREFIX, schema_id=schema_id) from e

    def _file(self, schema_id: int, topic: str | None) -> Plan[RegisteredProtoFile]:
        """Schema ``schema_id`` and its imports in a descriptor pool, loaded once."""
        wf = self._files.get(schema_id)
        if wf is None:
            schema = yield from writer_schema(schema_id, topic, fmt="serialized", schema_type="PROTOBUF")
            try:
                wf = self._files.put(schema_id, (yield from RegisteredProtoFile.load(schema_id, schema)))
            except (ValueError, TypeError, RegistryError) as e:
                raise SerializationError(
                    f"cannot load Protobuf schema {schema_id}: {e}", topic=topic, schema_id=schema_id
                ) from e
        return wf

    def _plan(self, data: bytes, ctx: SerializationContext | None, latest: RegisteredSchema | None) -> Plan[_ReadPlan]:
        topic = topic_of(ctx)
        schema_id, indexes, start = self._header(data, topic)
        desc, wf = yield from self._writer_message(data, topic)
        encoding = rule_steps.encoding_rules(
            wf.schema,
            rule_steps.READ,
            _rule_target(desc),
            self._rule_config,
            schema_id,
            self._subjects.subject_or_none(ctx, desc.full_name),
        )
        if latest is None:
            cls = self._cls if self._cls is not None else GetMessageClass(desc)
            rules = (
                rule_steps.read_rules(
                    wf.schema,
                    _rule_target(desc),
                    self._rule_config,
                    schema_id,
                    self._subjects.subject_or_none(ctx, desc.full_name),
                )
                if rule_steps.has_rules(wf.schema)
                else None
            )
            return _ReadPlan(cls, start, schema_id, rules, encoding)
        subject = self._subjects.subject_for(ctx, desc.full_name)
        reader_desc = _reader_message((yield from self._file(latest.schema_id, topic)), desc, indexes)
        cls = self._cls if self._cls is not None else GetMessageClass(reader_desc)
        if not (rule_steps.has_rules(wf.schema) or rule_steps.has_rules(latest.schema)):
            return _ReadPlan(cls, start, schema_id, None, encoding)
        migrations = yield from self._migrations(subject, wf.schema, latest, _json_target, topic, schema_id)
        read_rules = rule_steps.read_rules(
            latest.schema, _rule_target(reader_desc), self._rule_config, latest.schema_id, subject
        )
        if not migrations:  # the payload is parsed as the reader's message directly
            return _ReadPlan(cls, start, schema_id, read_rules, encoding)
        return _ReadPlan(
            GetMessageClass(desc),
            start,
            schema_id,
            rule_steps.chain(_migration(migrations, cls, schema_id), read_rules),
            encoding,
        )


class ProtobufDeserializer(_ProtobufDeserializerBase, SyncDeserializerBase[_ReadPlan]):
    __doc__ = _ProtobufDeserializerBase.__doc__

    def __call__(self, data: bytes | None, ctx: SerializationContext | None = None) -> Message | None:
        # SyncDeserializerBase's path with _read's common case inlined: a Python call is ~8% of this path.
        if data is None:
            return None
        if type(data) is not bytes:
            data = bytes(data)
        if data[:1] != CLASSIC_MAGIC or (ctx is not None and getattr(ctx, "headers", None)):  # Unframer.needed
            data = self._unframing()(self._client, data, ctx)
        plan = None if self._follows_latest else self._plans.get(data[:6])
        if plan is None:
            plan = self._lookup(data, ctx) or run_plan(self._client, self._resolve(data, ctx))
        if plan.rules is not None or plan.encoding is not None:
            return self._read(data, ctx, plan)
        try:
            return plan.message_class.FromString(data[plan.payload_start :])
        except Exception:
            return self._read(data, ctx, plan)  # raises it with the details


class AsyncProtobufDeserializer(_ProtobufDeserializerBase, AsyncDeserializerBase[_ReadPlan]):
    """``await deserializer(data, ctx)``: ``ProtobufDeserializer`` with an ``AsyncRegistryClient``."""


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
