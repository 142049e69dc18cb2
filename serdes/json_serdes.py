"""JSON Schema serializers and deserializers (jsonschema + referencing), byte-compatible with confluent-kafka's;
sync and async (``_JsonSerializerBase`` / ``_JsonDeserializerBase`` hold everything but the client calls, as in
``serdes.avro``).

The payload after the 5-byte frame is the UTF-8 JSON document (orjson). Records are validated against the schema
by default (writing: the schema written with; reading: the subject's latest version with ``use_latest_version``,
else the reader schema if given, else the writer's). The validator is compiled once per schema, with
jsonschema-rs deciding validity when it is installed and the schema has no references.

The serializers' common case (a valid dict, a cached plan without rules, no id header) is written once, in
``_JsonSerializerBase._serialize``: it is the sync serializer's ``__call__``, and the async serializer's coroutine
returns its frame (``AsyncFastPathSerializerBase``); anything else takes the general path (``SyncSerializerBase``
/ ``AsyncSerializerBase``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import orjson
from confluent_kafka.serialization import SerializationContext
from jsonschema import exceptions as js_exceptions
from jsonschema.validators import validator_for
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT7

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
from serdes.plans import Plan, load_references, register_or_lookup
from serdes.rules import steps as rule_steps
from serdes.rules.engine import RuleConfig, RuleTarget
from serdes.schema_ids import HeaderFramer
from serdes.strategies import SubjectNameStrategy
from serdes.typed_records import is_record_type, json_decoder, json_encoder, json_schema

__all__ = [
    "AsyncJsonSchemaDeserializer",
    "AsyncJsonSchemaSerializer",
    "JsonSchemaDeserializer",
    "JsonSchemaSerializer",
    "compile_validator",
]

_rs: ModuleType | None
try:  # optional accelerator (a Rust validator); results are the same, only faster
    import jsonschema_rs as _rs
except ImportError:  # pragma: no cover - depends on the environment
    _rs = None

_PREFIX = wire.PREFIX_SIZE
_dumps = orjson.dumps
_loads = orjson.loads


def _as_schema(schema: Any) -> tuple[Schema, type | None]:
    if isinstance(schema, Schema):
        return schema, None
    if is_record_type(schema):
        return Schema(orjson.dumps(json_schema(schema)).decode(), "JSON"), schema
    if isinstance(schema, str):
        orjson.loads(schema)  # fail early on text that is not JSON
        return Schema(schema, "JSON"), None
    if isinstance(schema, (dict, bool)):
        return Schema(orjson.dumps(schema).decode(), "JSON"), None
    raise TypeError(
        f"a JSON schema must be a dataclass/pydantic class, JSON text, dict or Schema, not {type(schema).__name__}"
    )


def _ref_registry(references: Mapping[str, Schema]) -> Registry:
    """A ``referencing`` registry holding every referenced schema by reference name."""
    registry: Registry = Registry()
    for name, target in references.items():
        resource = Resource.from_contents(orjson.loads(target.schema_str), default_specification=DRAFT7)
        registry = registry.with_resource(name, resource)
    return registry


class _Validator:
    """``is_valid`` from jsonschema-rs when it is installed (same verdicts, compiled to native code) for
    schemas without references; the jsonschema validator otherwise, and always for error messages."""

    def __init__(self, doc: Any, py_validator: Any, has_references: bool) -> None:
        self.py = py_validator
        self.is_valid = py_validator.is_valid
        if _rs is not None and not has_references:
            try:
                if isinstance(doc, dict) and "$schema" in doc:
                    rs = _rs.validator_for(doc, validate_formats=False)
                else:
                    rs = _rs.Draft7Validator(doc, validate_formats=False)
                self.is_valid = rs.is_valid
            except (ValueError, TypeError, _rs.ValidationError, _rs.ReferencingError):
                pass  # keep the pure-Python validator

    def iter_errors(self, value: Any) -> Any:
        return self.py.iter_errors(value)


def compile_validator(schema: Schema, references: Mapping[str, Schema] | None = None) -> _Validator:
    """A validator for ``schema`` (draft from ``$schema``, draft-07 when absent); ``references`` are the schemas
    it references by name (``load_validator`` fetches them)."""
    if schema.references and references is None:
        raise ValueError(f"schema references {schema.references[0].name!r}: load it with load_validator")
    doc = orjson.loads(schema.schema_str)
    cls = validator_for(doc, default=validator_for({"$schema": "http://json-schema.org/draft-07/schema#"}))
    try:
        cls.check_schema(doc)
    except js_exceptions.SchemaError as e:
        raise ValueError(f"invalid JSON Schema: {e.message}") from e
    return _Validator(doc, cls(doc, registry=_ref_registry(references or {})), bool(schema.references))


def load_validator(schema: Schema) -> Plan[_Validator]:
    """``compile_validator`` with the schemas ``schema`` references loaded from the registry."""
    references = (yield from load_references(schema)) if schema.references else {}
    return compile_validator(schema, references)


def _validation_message(validator: Any, value: Any) -> str:
    error = js_exceptions.best_match(validator.iter_errors(value))
    if error is None:
        return "invalid"
    where = error.json_path if error.path else "$"
    return f"at {where}: {error.message}"


@dataclass(frozen=True, slots=True)
class _WritePlan:
    """What the serializer resolved for one subject (or one latest schema id)."""

    prefix: bytes  # the 5-byte frame header
    schema_id: int
    validator: _Validator | None  # None when not validating
    rules: rule_steps.Step | None = None  # the schema's WRITE rules (None: it has none)
    encoding: rule_steps.Step | None = None  # its WRITE encodingRules, on the encoded bytes (ENCRYPT_PAYLOAD)


@dataclass(frozen=True, slots=True)
class _ReadPlan:
    """What the deserializer resolved for one writer schema id (and topic, when the reader depends on it)."""

    validator: _Validator | None  # None when not validating
    schema_id: int
    rules: rule_steps.Step | None = None  # migrations, then the reader schema's READ rules (None: none)
    encoding: rule_steps.Step | None = None  # the writer schema's READ encodingRules (ENCRYPT_PAYLOAD)


def _rule_targets(references: Mapping[str, Schema]) -> rule_steps.TargetFactory:
    """How rules see JSON documents: as the plain values orjson reads; field rules follow ``$ref`` into
    ``references`` (the schemas referenced, by reference name)."""
    from serdes.rules.json_walk import json_walker

    docs = {name: orjson.loads(target.schema_str) for name, target in references.items()}

    def target(schema: Schema, schema_id: int | None) -> RuleTarget:
        def walker(selection: Any, condition: bool) -> Any:
            return json_walker(orjson.loads(schema.schema_str), docs, selection, condition)

        return RuleTarget(schema, walker, schema_id=schema_id)

    return target


_rule_target = _rule_targets({})  # schemas without references


def load_rule_target(schema: Schema) -> Plan[rule_steps.TargetFactory]:
    """The rule target factory for ``schema`` with the schemas it references loaded from the registry."""
    if not schema.references:
        return _rule_target
    return _rule_targets((yield from load_references(schema)))


class _JsonSerializerBase(SerializerBase[_WritePlan]):
    """``(obj, ctx) -> bytes``: JSON with the Confluent frame.

    ``schema`` is a dataclass/pydantic class (objects of it are written), or a JSON Schema as text, dict or
    ``Schema`` (dicts and other JSON values are written). Other arguments as for ``AvroSerializer``
    (``use_latest_version``, ``use_latest_with_metadata``, ``use_schema_id`` included), plus ``validate``
    (default True): check each record against the schema before writing, and ``rule_config`` (confluent-kafka's
    ``rule.conf``), ``schema_id_header`` (as for ``AvroSerializer``). The WRITE rules of the schema written with
    run on each record before it is validated.
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
        validate: bool = True,
        to_dict: Callable[[Any, SerializationContext | None], Any] | None = None,
        rule_config: dict[str, Any] | None = None,
        schema_id_header: bool = False,
    ) -> None:
        check_client(client, self._is_async, self)
        self._rule_config = RuleConfig(rule_config, client)
        self._id_header = HeaderFramer(protobuf=False, subject=subject) if schema_id_header else None
        self._choice = SchemaChoice(
            self, "JSON", schema is not None, auto_register, use_latest_version, use_latest_with_metadata, use_schema_id
        )
        self._client = client
        self._auto_register = self._choice.auto_register
        self._normalize = normalize
        self._validate = validate
        self._schema: Schema | None = None
        self._cls: type | None = None
        record_name = None
        self._validator: _Validator | None = None
        if schema is not None:
            self._schema, self._cls = _as_schema(schema)
            doc = orjson.loads(self._schema.schema_str)
            record_name = doc.get("title") if isinstance(doc, dict) else None
            if validate and not self._schema.references:  # compile now: a bad schema fails here
                self._validator = compile_validator(self._schema)
        self._encode = json_encoder(self._cls) if self._cls is not None else None
        self._user_to_dict = to_dict
        capacity = cache_capacity(client)
        self._plans: SubjectPlans[_WritePlan] = SubjectPlans(
            strategy, subject, record_name, capacity, cache=not self._choice.latest.enabled
        )
        self._plans_by_id: BoundedDict[int, _WritePlan] = BoundedDict(capacity)

    @property
    def schema(self) -> Schema | None:
        return self._schema

    def _resolve(self, subject: str, ctx: SerializationContext | None) -> Plan[_WritePlan]:
        if self._choice.chosen:
            schema_id, schema = yield from self._choice.fetch(subject, ctx)
            return (yield from self._plan_for(schema_id, schema, ctx, subject))
        assert self._schema is not None
        if self._validate and self._validator is None:
            self._validator = yield from load_validator(self._schema)
        schema_id = yield from register_or_lookup(subject, self._schema, self._auto_register, self._normalize)
        rules = yield from self._write_rules(subject, self._schema, schema_id)
        return _WritePlan(wire.prefix(schema_id), schema_id, self._validator, *rules)

    def _write_rules(
        self, subject: str | None, schema: Schema, schema_id: int
    ) -> Plan[tuple[rule_steps.Step | None, rule_steps.Step | None]]:
        """The schema's WRITE domain rules and its WRITE encoding rules."""
        if schema.rule_set is None:
            return None, None
        target = yield from load_rule_target(schema)
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
                validator = (yield from load_validator(schema)) if self._validate else None
            except (ValueError, RegistryError) as e:
                raise SerializationError(
                    f"cannot write with schema {schema_id}: {e}", topic=topic_of(ctx), schema_id=schema_id
                ) from e
            rules = yield from self._write_rules(subject, schema, schema_id)
            plan = self._plans_by_id.put(schema_id, _WritePlan(wire.prefix(schema_id), schema_id, validator, *rules))
        return plan

    _general_path: Callable[[Any, SerializationContext | None], Any]  # set by the sync and async serializers

    def _serialize(self, obj: Any, ctx: SerializationContext | None = None) -> Any:
        """The fast path, written once for sync and async: the frame of a dict valid for a cached plan without rules,
        no id header, which awaits nothing; any other record goes to ``_general_path``, whose ``_write`` raises any
        error with its details. ``JsonSchemaSerializer.__call__`` is this method; ``AsyncFastPathSerializerBase``
        says how the async serializer uses it."""
        if type(obj) is dict and self._user_to_dict is None and self._id_header is None:
            plan = self._plans.single
            if plan is None and ctx is not None:
                plan = self._plans.by_ctx.get((ctx.topic, ctx.field))
            if plan is not None and plan.rules is None and plan.encoding is None:
                validator = plan.validator
                if validator is None or validator.is_valid(obj):
                    try:
                        return plan.prefix + _dumps(obj)
                    except Exception:
                        pass
        return self._general_path(obj, ctx)

    def _write(self, obj: Any, plan: _WritePlan, ctx: SerializationContext | None) -> bytes:
        value = obj
        try:
            if self._encode is not None and type(obj) is not dict:
                value = self._encode(obj)
            elif self._user_to_dict is not None:
                value = self._user_to_dict(obj, ctx)
            if plan.rules is not None:
                value = plan.rules(value, ctx, obj)
            body = _dumps(value)
        except SerializationError:
            raise
        except Exception as e:
            raise SerializationError(
                f"cannot encode {type(obj).__name__} as JSON: {type(e).__name__}: {e}",
                topic=topic_of(ctx),
                schema_id=plan.schema_id,
            ) from e
        validator = plan.validator
        if validator is not None and not validator.is_valid(value):
            raise SerializationError(
                f"record does not match the JSON Schema {_validation_message(validator, value)}",
                topic=topic_of(ctx),
                schema_id=plan.schema_id,
            )
        if plan.encoding is not None:
            return plan.prefix + plan.encoding(body, ctx, obj)
        return plan.prefix + body


class JsonSchemaSerializer(_JsonSerializerBase, SyncSerializerBase[_WritePlan]):
    __doc__ = _JsonSerializerBase.__doc__

    __call__ = _JsonSerializerBase._serialize  # the fast path is the call itself
    _general_path = SyncSerializerBase.__call__


class AsyncJsonSchemaSerializer(_JsonSerializerBase, AsyncFastPathSerializerBase[_WritePlan]):
    """``await serializer(obj, ctx) -> bytes``: ``JsonSchemaSerializer`` with an ``AsyncRegistryClient``."""


class _JsonDeserializerBase(DeserializerBase[_ReadPlan]):
    """``(bytes, ctx) -> value``: reads Confluent-framed JSON.

    ``reader``: None (plain JSON values), a dataclass/pydantic class (instances are built) or a JSON Schema
    (validated against it). ``validate`` (default True) checks each record against the reader schema, or the
    writer's when there is none. ``use_latest_version`` / ``use_latest_with_metadata`` take the subject's latest
    version (with those metadata properties) as reader schema; between major versions the JSONata migrations run
    (as for ``AvroDeserializer``), then the READ rules of the reader schema, then validation.
    """

    def __init__(
        self,
        client: RegistryClient | AsyncRegistryClient,
        reader: Any = None,
        *,
        validate: bool = True,
        use_latest_version: bool = False,
        use_latest_with_metadata: dict[str, str] | None = None,
        strategy: str | SubjectNameStrategy = "topic",
        subject: str | None = None,
        from_dict: Callable[[Any, SerializationContext | None], Any] | None = None,
        rule_config: dict[str, Any] | None = None,
    ) -> None:
        check_client(client, self._is_async, self)
        self._client = client
        self._rule_config = RuleConfig(rule_config, client)
        self._validate = validate
        self._cls: type | None = None
        self._reader: Schema | None = None
        self._reader_validator: _Validator | None = None
        if reader is not None:
            self._reader, self._cls = _as_schema(reader)
            if validate and not self._reader.references:
                self._reader_validator = compile_validator(self._reader)
        self._latest = LatestSchema(use_latest_version, use_latest_with_metadata)
        self._follows_latest = self._latest.enabled
        self._key_size = _PREFIX
        self._subjects: SubjectPlans[None] = SubjectPlans(strategy, subject, None)
        self._decode = json_decoder(self._cls) if self._cls is not None else None
        self._from_dict = from_dict
        self._plans: BoundedDict[Any, _ReadPlan] = BoundedDict(cache_capacity(client))

    def _read(self, data: bytes, ctx: SerializationContext | None, plan: _ReadPlan) -> Any:
        if plan.encoding is not None:
            data = data[:_PREFIX] + plan.encoding(data[_PREFIX:], ctx, data)
        try:
            value = _loads(memoryview(data)[_PREFIX:])
        except orjson.JSONDecodeError as e:
            raise SerializationError(
                f"payload is not valid JSON: {e.msg}",
                topic=topic_of(ctx),
                offset=_PREFIX + e.pos,
                schema_id=plan.schema_id,
            ) from e
        if plan.rules is not None:
            value = plan.rules(value, ctx, data)
        validator = plan.validator
        if validator is not None and not validator.is_valid(value):
            raise SerializationError(
                f"record does not match the JSON Schema {_validation_message(validator, value)}",
                topic=topic_of(ctx),
                offset=_PREFIX,
                schema_id=plan.schema_id,
            )
        if self._decode is not None:
            try:
                value = self._decode(value)
            except Exception as e:
                what = self._cls.__name__ if self._cls is not None else "the object"
                raise SerializationError(
                    f"cannot build {what} from the JSON read: {type(e).__name__}: {e}",
                    topic=topic_of(ctx),
                    schema_id=plan.schema_id,
                ) from e
        if self._from_dict is not None:
            value = self._from_dict(value, ctx)
        return value

    def _plan(self, data: bytes, ctx: SerializationContext | None, latest: RegisteredSchema | None) -> Plan[_ReadPlan]:
        topic = topic_of(ctx)
        schema_id = wire.read_schema_id(data, topic)
        writer = yield from writer_schema(schema_id, topic, schema_type="JSON")
        validator: _Validator | None = None
        rules = None
        reader_schema = latest.schema if latest is not None else self._reader or writer
        if rule_steps.has_rules(writer) or rule_steps.has_rules(reader_schema):
            migrations: list[Any] = []
            if latest is not None:
                subject = self._subjects.subject_for(ctx)
                migrations = yield from self._migrations(subject, writer, latest, _rule_target, topic, schema_id)
            try:
                target = yield from load_rule_target(reader_schema)
            except RegistryError as e:
                raise SerializationError(
                    f"cannot load the schemas referenced by the reader schema: {e}", topic=topic, schema_id=schema_id
                ) from e
            read_rules = rule_steps.read_rules(
                reader_schema,
                target,
                self._rule_config,
                latest.schema_id if latest is not None else schema_id,
                self._subjects.subject_or_none(ctx),
            )
            rules = rule_steps.chain(*migrations, read_rules)
        if self._validate:
            try:
                if latest is not None:
                    validator = yield from load_validator(latest.schema)
                elif self._reader is not None:
                    if self._reader_validator is None:
                        self._reader_validator = yield from load_validator(self._reader)
                    validator = self._reader_validator
                else:
                    validator = yield from load_validator(writer)
            except (ValueError, RegistryError) as e:
                raise SerializationError(
                    f"cannot compile the JSON Schema for id {schema_id}: {e}", topic=topic, schema_id=schema_id
                ) from e
        encoding = rule_steps.encoding_rules(
            writer, rule_steps.READ, _rule_target, self._rule_config, schema_id, self._subjects.subject_or_none(ctx)
        )
        return _ReadPlan(validator, schema_id, rules, encoding)


class JsonSchemaDeserializer(_JsonDeserializerBase, SyncDeserializerBase[_ReadPlan]):
    __doc__ = _JsonDeserializerBase.__doc__


class AsyncJsonSchemaDeserializer(_JsonDeserializerBase, AsyncDeserializerBase[_ReadPlan]):
    """``await deserializer(data, ctx)``: ``JsonSchemaDeserializer`` with an ``AsyncRegistryClient``."""
