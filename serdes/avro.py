"""Avro serializers and deserializers (fastavro), byte-compatible with confluent-kafka's; sync and async.

Per subject (serializer, ``_WritePlan``) or per writer schema id (deserializer, ``_ReadPlan``) everything is
resolved once: registry id, 5-byte prefix, fastavro-parsed schemas and named types, the reader schema, the
typed-record converter and a generated encoder/decoder for the schema (``avro_codegen``). The per-record path is
a dict lookup and one call of the generated function; records it cannot take canonically, and reads that need
writer -> reader schema resolution, go through fastavro's compiled ``write_data`` / ``_read_data``
(``fastavro_core``), which decide the result.

``_AvroSerializerBase`` / ``_AvroDeserializerBase`` hold all of that; ``AvroSerializer`` / ``AvroDeserializer``
build plans with a ``RegistryClient``, ``AsyncAvroSerializer`` / ``AsyncAvroDeserializer`` with an
``AsyncRegistryClient`` (``serdes.base``), and write the same bytes.
"""

from __future__ import annotations

import dataclasses
import io
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import fastavro
from confluent_kafka.serialization import SerializationContext
from fastavro.validation import ValidationError, validate

from serdes import fastavro_core, wire
from serdes.async_client import AsyncRegistryClient
from serdes.avro_codegen import compile_decoder, compile_encoder
from serdes.avro_guard import payload_guard
from serdes.avro_references import local_references
from serdes.avro_resolver import compile_resolver, strip_schema
from serdes.base import (
    AsyncDeserializerBase,
    AsyncSerializerBase,
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
from serdes.schema_ids import HeaderFramer
from serdes.strategies import SubjectNameStrategy
from serdes.typed_records import avro_decoder, avro_encoder, avro_named_schema, avro_schema, is_record_type

__all__ = [
    "AsyncAvroDeserializer",
    "AsyncAvroSerializer",
    "AvroDeserializer",
    "AvroSerializer",
    "parse_avro",
    "parse_avro_schema",
]

_BytesIO = io.BytesIO
_PREFIX = wire.PREFIX_SIZE
_write_data = fastavro_core.write_data
_read_data = fastavro_core.read_data
_WRITE_OPTIONS = fastavro_core.WRITE_OPTIONS

ReferenceSubjectStrategy = Callable[[SerializationContext | None, str], str]


def _as_schema(schema: Any, references: Sequence[type] = ()) -> tuple[Schema, type | None]:
    """(registry Schema, record class or None) from a class, JSON text, dict/list or Schema. Classes in
    ``references`` are named in a class's schema, not spelled out."""
    if isinstance(schema, Schema):
        return schema, None
    if is_record_type(schema):
        return Schema(json.dumps(avro_schema(schema, references), separators=(",", ":"))), schema
    if isinstance(schema, str):
        try:
            json.loads(schema)
        except json.JSONDecodeError:
            if schema.strip() and schema.strip()[0] not in "{[":
                return Schema(json.dumps(schema)), None  # a bare primitive name like "string"
            raise
        return Schema(schema), None
    if isinstance(schema, (dict, list)):
        return Schema(json.dumps(schema, separators=(",", ":"))), None
    raise TypeError(
        f"an Avro schema must be a dataclass/pydantic class, JSON text, dict or Schema, not {type(schema).__name__}"
    )


def _reference_schema(item: Any, classes: Sequence[type]) -> Schema:
    if isinstance(item, type):
        return Schema(json.dumps(avro_named_schema(item, classes), separators=(",", ":")))
    return _as_schema(item)[0]


def _record_name(schema: Schema) -> str | None:
    doc = json.loads(schema.schema_str)
    if isinstance(doc, dict) and doc.get("type") in ("record", "enum", "fixed") and "name" in doc:
        name = doc["name"]
        ns = doc.get("namespace")
        return f"{ns}.{name}" if ns and "." not in name else name
    return None


def parse_avro(
    schema: Schema, references: Iterable[Schema] = (), named: dict[str, Any] | None = None
) -> tuple[Any, dict]:
    """Parse with fastavro after the schemas it references (dependencies first), which define its named types."""
    named = {} if named is None else named
    for text in [*(r.schema_str for r in references), schema.schema_str]:
        try:
            parsed = fastavro.parse_schema(json.loads(text), named_schemas=named)
        except fastavro.schema.UnknownType as e:
            raise ValueError(
                f"invalid Avro schema: unknown type {e.name!r} (a named type from another schema is "
                f"given as a reference)"
            ) from e
        except (fastavro.schema.SchemaParseException, ValueError, TypeError, KeyError) as e:
            raise ValueError(f"invalid Avro schema: {e}") from e
    return parsed, named


def load_avro(schema: Schema) -> Plan[tuple[Any, dict]]:
    """``parse_avro`` with the schemas ``schema`` references loaded from the registry."""
    refs = (yield from load_references(schema)) if schema.references else {}
    return parse_avro(schema, refs.values())


def parse_avro_schema(
    schema: Schema, client: RegistryClient | None = None, named: dict[str, Any] | None = None
) -> tuple[Any, dict]:
    """Parse with fastavro, loading referenced schemas (their named types) from the registry first."""
    if schema.references and client is None:
        raise ValueError(f"schema references {schema.references[0].name!r}: a registry client is needed to resolve it")
    refs = run_plan(client, load_references(schema)) if schema.references else {}
    return parse_avro(schema, refs.values(), named)


def _no_fast_path(*args: Any) -> Any:
    raise TypeError("no generated encoder/decoder for this schema")


def _generated_encoder(parsed: Any, named: dict) -> Callable[[Any, bytearray], None]:
    try:
        return compile_encoder(parsed, named)
    except (ValueError, KeyError, TypeError, SyntaxError, RecursionError):
        return _no_fast_path  # fastavro writes every record


def _identity(x: Any) -> Any:
    return x


@dataclass(frozen=True, slots=True)
class _CompiledSchema:
    """A parsed schema to write with and its generated encoder (shared by every subject written with it)."""

    schema: Any  # fastavro-parsed
    named: dict  # its named types, as fastavro's write_data takes them
    encode: Callable[[Any, bytearray], None]  # the generated encoder, or _no_fast_path


def _compile(parsed: Any, named: dict) -> _CompiledSchema:
    return _CompiledSchema(parsed, named, _generated_encoder(parsed, named))


@dataclass(frozen=True, slots=True)
class _WritePlan:
    """What the serializer resolved for one subject (or one schema id)."""

    prefix: bytes  # the 5-byte frame header
    schema_id: int
    schema: Any  # fastavro-parsed writer schema
    named: dict  # its named types, as fastavro's write_data takes them
    encode: Callable[[Any, bytearray], None]  # the generated encoder, or _no_fast_path
    rules: rule_steps.Step | None = None  # the schema's WRITE rules (None: it has none)
    encoding: rule_steps.Step | None = None  # its WRITE encodingRules, on the encoded bytes (ENCRYPT_PAYLOAD)


_NO_RULES: tuple[rule_steps.Step | None, rule_steps.Step | None] = (None, None)


def _write_plan(
    schema_id: int, compiled: _CompiledSchema, rules: tuple[rule_steps.Step | None, rule_steps.Step | None] = _NO_RULES
) -> _WritePlan:
    return _WritePlan(wire.prefix(schema_id), schema_id, compiled.schema, compiled.named, compiled.encode, *rules)


def _rule_target(parsed: Any, named: dict) -> rule_steps.TargetFactory:
    """How rules see Avro records of one parsed schema: as the dicts fastavro reads and writes."""
    from serdes.rules.avro_walk import avro_walker

    def target(schema: Schema, schema_id: int | None) -> RuleTarget:
        return RuleTarget(
            schema, lambda selection, condition: avro_walker(parsed, named, selection, condition), schema_id=schema_id
        )

    return target


def _lazy_rule_target(schema: Schema, schema_id: int | None) -> RuleTarget:
    """A target for a version met during a migration (parsed only if one of its rules walks fields)."""
    from serdes.rules.avro_walk import avro_walker

    def walker(selection: Any, condition: bool) -> Any:
        parsed, named = parse_avro(schema)
        return avro_walker(parsed, named, selection, condition)

    return RuleTarget(schema, walker, schema_id=schema_id)


@dataclass(frozen=True, slots=True)
class _ReadPlan:
    """What the deserializer resolved for one writer schema id (and reader schema id, with use_latest)."""

    writer: Any  # fastavro-parsed writer schema
    named: dict  # {"writer": ..., "reader": ...} named types, as fastavro's _read_data takes them
    reader: Any  # parsed reader schema, None when the writer's is read as it is
    options: dict  # fastavro read options
    post: Callable[[Any], Any] | None  # record -> typed record / from_dict input; None returns the dict
    schema_id: int
    decode: Callable[[bytes, int], tuple[Any, int]]  # the generated decoder, or _no_fast_path
    rules: rule_steps.Step | None = None  # migrations, then the reader schema's READ rules (None: none)
    #: the check of payloads fastavro cannot be trusted with (``avro_guard``); None for most schemas
    guard: Callable[[bytes, int, int, str | None], None] | None = None
    encoding: rule_steps.Step | None = None  # the writer schema's READ encodingRules (ENCRYPT_PAYLOAD)


def _label(schema: Any) -> str:
    """A short name for a (parsed) schema in error messages."""
    if isinstance(schema, dict):
        return f"{schema.get('type')} {schema['name']}" if "name" in schema else str(schema.get("type"))
    if isinstance(schema, list):
        return "union [" + ", ".join(_label(s) for s in schema) + "]"
    return repr(schema)


def _by_full_name(ctx: SerializationContext | None, name: str) -> str:
    """Default subject of a referenced Avro named type: its full name."""
    return name


class _AvroSerializerBase(SerializerBase[_WritePlan]):
    """``(obj, ctx) -> bytes``: Avro with the Confluent frame.

    Args:
        client: the registry client (``RegistryClient``; ``AsyncRegistryClient`` for the async serializer).
        schema: a dataclass/pydantic class (objects of it are written), an Avro schema as JSON text, dict or
            ``Schema`` (dicts are written), or None with ``use_latest_version`` / ``use_latest_with_metadata`` /
            ``use_schema_id`` (write with that registered schema).
        strategy: ``"topic"`` (default), ``"record"``, ``"topic_record"``, ``"associated"`` (the registry's
            topic-subject associations; an ``AssociatedNameStrategy`` to configure it) or a callable
            ``(ctx, record_name)``.
        subject: a fixed subject, overriding the strategy (then ``ctx`` is never needed).
        auto_register: register the schema (and its references) on first use (default True unless a registered
            schema is chosen); False = look them up and fail if they are not registered.
        use_latest_version: write with the subject's latest registered schema and id (``use.latest.version``).
        use_latest_with_metadata: write with the subject's newest version whose metadata properties include
            these (``use.latest.with.metadata``).
        use_schema_id: write with this registered schema id (``use.schema.id``); it must be registered under
            the subject.
        normalize: ask the registry to normalize the schema when registering / looking up.
        references: Avro named types the schema uses without defining them: record/enum classes or named
            schemas (JSON text, dict, ``Schema``). Each is registered under ``reference_subject_strategy(ctx,
            full_name)`` (default: its full name) before the schema, which refers to them by name.
        to_dict: optional ``(obj, ctx) -> dict`` for objects that are neither dicts nor typed records.
        rule_config: settings for the schema's data-contract rules, as confluent-kafka's ``rule.conf``
            (``dlq.topic``, ``bootstrap.servers`` or ``producer`` for the DLQ action).
        schema_id_header: put the schema's GUID in the ``__value_schema_id`` / ``__key_schema_id`` record header
            (``ctx.headers``, a list or dict) instead of the id in the payload prefix, as confluent-kafka's
            ``header_schema_id_serializer`` (Confluent 8.x). Every deserializer reads both.

    The WRITE rules of the schema written with (its ``ruleSet``) run on every record before it is encoded.
    """

    def __init__(
        self,
        client: RegistryClient | AsyncRegistryClient,
        schema: Any = None,
        *,
        strategy: str | SubjectNameStrategy = "topic",
        subject: str | None = None,
        auto_register: bool | None = None,
        use_latest_version: bool = False,
        use_latest_with_metadata: dict[str, str] | None = None,
        use_schema_id: int | None = None,
        normalize: bool = False,
        references: Sequence[Any] = (),
        reference_subject_strategy: ReferenceSubjectStrategy = _by_full_name,
        to_dict: Callable[[Any, SerializationContext | None], dict] | None = None,
        rule_config: dict[str, Any] | None = None,
        schema_id_header: bool = False,
    ) -> None:
        check_client(client, self._is_async, self)
        self._rule_config = RuleConfig(rule_config, client)
        self._id_header = HeaderFramer(protobuf=False, subject=subject) if schema_id_header else None
        self._choice = SchemaChoice(
            self, "AVRO", schema is not None, auto_register, use_latest_version, use_latest_with_metadata, use_schema_id
        )
        self._client = client
        self._auto_register = self._choice.auto_register
        self._normalize = normalize
        self._schema: Schema | None = None
        self._cls: type | None = None
        self._compiled: _CompiledSchema | None = None  # our schema (None until loaded when it has references)
        self._local_refs: list[LocalReference] = []
        self._main_uses: tuple[str, ...] = ()
        self._ref_subject = reference_subject_strategy
        record_name = None
        if schema is not None:
            classes = [r for r in references if isinstance(r, type)]
            self._schema, self._cls = _as_schema(schema, classes)
            ref_schemas = [_reference_schema(r, classes) for r in references]
            self._local_refs, self._main_uses = local_references(self._schema, ref_schemas)
            if not self._schema.references:  # nothing to load from the registry: parse now, fail early
                self._compiled = _compile(*parse_avro(self._schema, [r.schema for r in self._local_refs]))
            record_name = _record_name(self._schema)
        elif references:
            raise ValueError("references need the schema that uses them")
        self._encode: Callable[[Any], Any] | None = avro_encoder(self._cls) if self._cls is not None else None
        self._to_dict = to_dict
        if to_dict is not None and self._encode is None:
            self._encode = dict  # placeholder: marks "convert non-dicts"; _to_dict does the work
        capacity = cache_capacity(client)
        self._plans: SubjectPlans[_WritePlan] = SubjectPlans(
            strategy, subject, record_name, capacity, cache=not self._choice.latest.enabled
        )
        self._plans_by_id: BoundedDict[int, _WritePlan] = BoundedDict(capacity)  # registered schemas written

    @property
    def schema(self) -> Schema | None:
        return self._schema

    # -- plans (no I/O: registry calls are yielded) ------------------------------------------------------

    def _own_compiled(self) -> Plan[_CompiledSchema]:
        if self._compiled is None:
            assert self._schema is not None
            refs = yield from load_references(self._schema)
            local = [r.schema for r in self._local_refs]
            self._compiled = _compile(*parse_avro(self._schema, [*refs.values(), *local]))
        return self._compiled

    def _resolve(self, subject: str, ctx: SerializationContext | None) -> Plan[_WritePlan]:
        if self._choice.chosen:
            schema_id, schema = yield from self._choice.fetch(subject, ctx)
            return (yield from self._plan_for(schema_id, schema, ctx, subject))
        assert self._schema is not None
        compiled = yield from self._own_compiled()
        schema = self._schema
        if self._local_refs:
            done = yield from register_references(
                self._local_refs, lambda name: self._ref_subject(ctx, name), self._auto_register, self._normalize
            )
            schema = dataclasses.replace(schema, references=(*schema.references, *(done[n] for n in self._main_uses)))
        schema_id = yield from register_or_lookup(subject, schema, self._auto_register, self._normalize)
        return _write_plan(
            schema_id, compiled, self._write_rules(subject, schema, schema_id, compiled.schema, compiled.named)
        )

    def _write_rules(
        self, subject: str | None, schema: Schema, schema_id: int, parsed: Any, named: dict
    ) -> tuple[rule_steps.Step | None, rule_steps.Step | None]:
        """The schema's WRITE domain rules and its WRITE encoding rules."""
        if schema.rule_set is None:
            return None, None
        target = _rule_target(parsed, named)
        domain = rule_steps.write_rules(schema, target, self._rule_config, schema_id, subject)
        encoding = rule_steps.encoding_rules(schema, rule_steps.WRITE, target, self._rule_config, schema_id, subject)
        return domain, encoding

    def _plan_for(
        self, schema_id: int, schema: Schema, ctx: SerializationContext | None, subject: str | None = None
    ) -> Plan[_WritePlan]:
        """The plan writing with registered schema ``schema_id`` (latest version, or ``use_schema_id``)."""
        plan = self._plans_by_id.get(schema_id)
        if plan is None:
            try:
                parsed, named = yield from load_avro(schema)
            except (ValueError, RegistryError) as e:
                raise SerializationError(
                    f"cannot write with schema {schema_id}: {e}", topic=topic_of(ctx), schema_id=schema_id
                ) from e
            rules = self._write_rules(subject, schema, schema_id, parsed, named)
            plan = self._plans_by_id.put(schema_id, _write_plan(schema_id, _compile(parsed, named), rules))
        return plan

    # -- one record ----------------------------------------------------------------------------------

    def _write(self, obj: Any, plan: _WritePlan, ctx: SerializationContext | None) -> bytes:
        encode = self._encode
        if encode is None or type(obj) is dict:
            datum = obj
        else:
            try:
                datum = encode(obj) if self._to_dict is None else self._to_dict(obj, ctx)
            except Exception as e:
                raise self._write_error(obj, obj, plan, ctx, e) from e
        if plan.rules is not None:
            datum = plan.rules(datum, ctx, obj)
        buf = bytearray(plan.prefix)
        try:
            plan.encode(datum, buf)  # the generated encoder: canonical values only, raises on anything else
        except Exception:
            buf = bytearray(plan.prefix)  # fastavro decides: defaults, coercions, or the error
            try:
                _write_data(buf, datum, plan.schema, plan.named, "", _WRITE_OPTIONS)
            except Exception as e:
                raise self._write_error(obj, datum, plan, ctx, e) from e
        if plan.encoding is not None:
            return plan.prefix + plan.encoding(bytes(buf[_PREFIX:]), ctx, obj)
        return bytes(buf)

    def _write_error(
        self, obj: Any, datum: Any, plan: _WritePlan, ctx: SerializationContext | None, cause: Exception
    ) -> SerializationError:
        if self._cls is not None and not isinstance(obj, (self._cls, dict)):
            why = f"expected {self._cls.__name__} or dict, got {type(obj).__name__}"
        else:
            try:  # fastavro's validator names the offending field; write_data does not
                validate(datum, plan.schema, raise_errors=True)
                why = f"{type(cause).__name__}: {cause}"
            except ValidationError as ve:
                why = "; ".join(
                    f"field {err.field or '(root)'}: {err.datum!r} is not a valid {_label(err.schema)}"
                    for err in getattr(ve, "errors", ())
                ) or str(ve)
            except Exception as ve:
                why = f"{type(ve).__name__}: {ve}"
        return SerializationError(
            f"record does not match the Avro schema: {why}", topic=topic_of(ctx), schema_id=plan.schema_id
        )


class AvroSerializer(_AvroSerializerBase, SyncSerializerBase[_WritePlan]):
    __doc__ = _AvroSerializerBase.__doc__


class AsyncAvroSerializer(_AvroSerializerBase, AsyncSerializerBase[_WritePlan]):
    """``await serializer(obj, ctx) -> bytes``: ``AvroSerializer`` with an ``AsyncRegistryClient`` (same
    arguments, same bytes). Registry calls happen on first use of a subject; later calls do no I/O."""


class _AvroDeserializerBase(DeserializerBase[_ReadPlan]):
    """``(bytes, ctx) -> dict | typed record``: reads Confluent-framed Avro.

    Args:
        client: the registry client (``RegistryClient``; ``AsyncRegistryClient`` for the async deserializer).
        reader: None (return dicts in the writer's schema), a dataclass/pydantic class (return instances, the
            writer's data resolved to the class's schema) or a reader schema (JSON text, dict, ``Schema``).
        use_latest_version: use the subject's latest version as the reader schema (needs the subject: ``ctx``
            with the topic strategy, or ``subject=``); a newer version is picked up after the client's
            ``latest_ttl``.
        use_latest_with_metadata: use the subject's newest version whose metadata properties include these.
        strategy / subject: how to name the subject, only used with ``use_latest_*``.
        from_dict: optional ``(dict, ctx) -> obj`` applied to every record read.
        rule_config: settings for data-contract rules, as confluent-kafka's ``rule.conf`` (see the serializer).

    With a reader schema from the registry (``use_latest_*``) whose major version differs from the writer's, the
    JSONata ``migrationRules`` of the versions between run (UPGRADE or DOWNGRADE) on the record read with the
    writer's schema; then the READ rules of the reader schema (the writer's when there is none) run.
    """

    def __init__(
        self,
        client: RegistryClient | AsyncRegistryClient,
        reader: Any = None,
        *,
        use_latest_version: bool = False,
        use_latest_with_metadata: dict[str, str] | None = None,
        strategy: str | SubjectNameStrategy = "topic",
        subject: str | None = None,
        from_dict: Callable[[dict, SerializationContext | None], Any] | None = None,
        return_record_name: bool = False,
        rule_config: dict[str, Any] | None = None,
    ) -> None:
        check_client(client, self._is_async, self)
        self._client = client
        self._rule_config = RuleConfig(rule_config, client)
        self._cls: type | None = None
        self._reader: Schema | None = None
        self._reader_parsed: tuple[Any, dict] | None = None
        if reader is not None:
            self._reader, self._cls = _as_schema(reader)
            if not self._reader.references:
                self._reader_parsed = parse_avro(self._reader)  # fail early on a bad reader schema
        self._latest = LatestSchema(use_latest_version, use_latest_with_metadata)
        self._follows_latest = self._latest.enabled
        self._key_size = _PREFIX
        self._subjects: SubjectPlans[None] = SubjectPlans(strategy, subject, None)
        self._from_dict = from_dict
        typed = self._cls is not None
        # Typed records: several record branches in one union come back as (name, dict) so the converter
        # knows which class to build; unions with one record come back plain.
        self._options = fastavro_core.read_options(return_record_name or typed, typed and not return_record_name)
        self._decode = avro_decoder(self._cls) if self._cls is not None else None
        # Keyed by the frame header (magic + id), so a bad magic byte or unknown id simply misses; with
        # use_latest_* by (header, reader schema id).
        self._plans: BoundedDict[Any, _ReadPlan] = BoundedDict(cache_capacity(client))

    def _read(self, data: bytes, ctx: SerializationContext | None, plan: _ReadPlan) -> Any:
        if plan.encoding is not None:
            data = data[:_PREFIX] + plan.encoding(data[_PREFIX:], ctx, data)
        if plan.guard is not None:
            plan.guard(data, _PREFIX, plan.schema_id, topic_of(ctx))
        try:
            record, end = plan.decode(data, _PREFIX)  # generated decoder; raises on anything unexpected
            if end != len(data):
                raise ValueError("trailing bytes")
        except Exception:
            record = self._read_slow(data, ctx, plan)
        if plan.rules is not None:
            record = plan.rules(record, ctx, data)
        post = plan.post
        if post is None:
            return record
        try:
            return post(record) if self._from_dict is None else self._from_dict(post(record), ctx)
        except Exception as e:
            what = self._cls.__name__ if self._cls is not None else "the object"
            raise SerializationError(
                f"cannot build {what} from the record read: {type(e).__name__}: {e}",
                topic=topic_of(ctx),
                schema_id=plan.schema_id,
            ) from e

    def _read_slow(self, data: bytes, ctx: SerializationContext | None, plan: _ReadPlan) -> Any:
        """fastavro's reader: schema resolution, and the exact result or error for odd payloads."""
        schema_id = plan.schema_id
        bio = _BytesIO(data)
        bio.seek(_PREFIX)
        try:
            record = _read_data(bio, plan.writer, plan.named, plan.reader, plan.options)
        except Exception as e:
            raise SerializationError(
                f"cannot decode Avro payload with writer schema {schema_id}: {type(e).__name__}: {e}",
                topic=topic_of(ctx),
                offset=bio.tell(),
                schema_id=schema_id,
            ) from e
        if bio.tell() != len(data):
            raise SerializationError(
                f"{len(data) - bio.tell()} unread bytes after the Avro record: the payload "
                f"does not match writer schema {schema_id}",
                topic=topic_of(ctx),
                offset=bio.tell(),
                schema_id=schema_id,
            )
        return record

    def _plan(self, data: bytes, ctx: SerializationContext | None, latest: RegisteredSchema | None) -> Plan[_ReadPlan]:
        topic = topic_of(ctx)
        schema_id = wire.read_schema_id(data, topic)
        writer = yield from writer_schema(schema_id, topic, schema_type="AVRO")
        try:
            w_parsed, w_named = yield from load_avro(writer)
            if latest is not None:
                r_parsed, r_named = yield from load_avro(latest.schema)
            elif self._reader is not None:
                if self._reader_parsed is None:
                    self._reader_parsed = yield from load_avro(self._reader)
                r_parsed, r_named = self._reader_parsed
            else:
                r_parsed, r_named = None, {}
        except (ValueError, RegistryError) as e:
            raise SerializationError(
                f"cannot resolve schemas for id {schema_id}: {e}", topic=topic, schema_id=schema_id
            ) from e
        rules = None
        reader_schema = latest.schema if latest is not None else self._reader or writer
        if rule_steps.has_rules(writer) or rule_steps.has_rules(reader_schema):
            migrations: list[Any] = []
            reader_parsed = (w_parsed, w_named) if r_parsed is None else (r_parsed, r_named)
            if latest is not None:
                subject = self._subjects.subject_for(ctx)
                migrations = yield from self._migrations(subject, writer, latest, _lazy_rule_target, topic, schema_id)
                if migrations:
                    r_parsed, r_named = None, {}  # read as written, then migrated
            read_rules = rule_steps.read_rules(
                reader_schema,
                _rule_target(*reader_parsed),
                self._rule_config,
                latest.schema_id if latest is not None else schema_id,
                self._subjects.subject_or_none(ctx),
            )
            rules = rule_steps.chain(*migrations, read_rules)
        encoding = rule_steps.encoding_rules(
            writer,
            rule_steps.READ,
            _rule_target(w_parsed, w_named),
            self._rule_config,
            schema_id,
            self._subjects.subject_or_none(ctx),
        )
        if r_parsed is not None and strip_schema(r_parsed) == strip_schema(w_parsed):
            r_parsed = None  # same schema: skip fastavro's per-record resolution work
        post = self._decode
        if post is None and self._from_dict is not None:
            post = _identity
        fast: Callable[[bytes, int], tuple[Any, int]] = _no_fast_path
        try:  # the generated decoder (or resolver, for another reader schema) reads what fastavro would
            if r_parsed is None:
                fast = compile_decoder(w_parsed, w_named, self._options)
            else:
                fast = compile_resolver(w_parsed, w_named, r_parsed, r_named, self._options)
        except (ValueError, KeyError, TypeError, SyntaxError, RecursionError):
            fast = _no_fast_path
        return _ReadPlan(
            w_parsed,
            {"writer": w_named, "reader": r_named},
            r_parsed,
            self._options,
            post,
            schema_id,
            fast,
            rules,
            payload_guard(w_parsed, w_named),
            encoding,
        )


class AvroDeserializer(_AvroDeserializerBase, SyncDeserializerBase[_ReadPlan]):
    __doc__ = _AvroDeserializerBase.__doc__


class AsyncAvroDeserializer(_AvroDeserializerBase, AsyncDeserializerBase[_ReadPlan]):
    """``await deserializer(data, ctx)``: ``AvroDeserializer`` with an ``AsyncRegistryClient`` (same arguments,
    same results). Registry calls happen for a schema id not seen before; later calls do no I/O."""
