"""JSON Schema serializer and deserializer (jsonschema + referencing), byte-compatible with confluent-kafka's.

The payload after the 5-byte frame is the UTF-8 JSON document (orjson). Records are validated against the schema
by default (writing: the schema written with; reading: the subject's latest version with ``use_latest_version``,
else the reader schema if given, else the writer's). The validator is compiled once per schema, with
jsonschema-rs deciding validity when it is installed and the schema has no references.
"""

from __future__ import annotations

from collections.abc import Callable
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
from serdes.base import SubjectPlans, fetch_writer_schema, topic_of
from serdes.client import RegistryClient
from serdes.errors import RegistryError, SerializationError
from serdes.models import Schema
from serdes.strategies import SubjectNameStrategy
from serdes.typed_records import is_record_type, json_decoder, json_encoder, json_schema

__all__ = ["JsonSchemaDeserializer", "JsonSchemaSerializer"]

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
    raise TypeError(f"a JSON schema must be a dataclass/pydantic class, JSON text, dict or Schema, "
                    f"not {type(schema).__name__}")


def _ref_registry(schema: Schema, client: RegistryClient | None, registry: Registry | None = None) -> Registry:
    """A ``referencing`` registry holding every schema ``schema`` references, by reference name."""
    registry = registry if registry is not None else Registry()
    for ref in schema.references:
        if ref.name in registry:
            continue
        if client is None:
            raise ValueError(f"schema references {ref.name!r}: a registry client is needed to resolve it")
        target = client.get_version(ref.subject, ref.version).schema
        registry = _ref_registry(target, client, registry)
        resource = Resource.from_contents(orjson.loads(target.schema_str), default_specification=DRAFT7)
        registry = registry.with_resource(ref.name, resource)
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


def compile_validator(schema: Schema, client: RegistryClient | None) -> _Validator:
    """A validator for ``schema`` (draft from ``$schema``, draft-07 when absent)."""
    doc = orjson.loads(schema.schema_str)
    cls = validator_for(doc, default=validator_for({"$schema": "http://json-schema.org/draft-07/schema#"}))
    try:
        cls.check_schema(doc)
    except js_exceptions.SchemaError as e:
        raise ValueError(f"invalid JSON Schema: {e.message}") from e
    return _Validator(doc, cls(doc, registry=_ref_registry(schema, client)), bool(schema.references))


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


@dataclass(frozen=True, slots=True)
class _ReadPlan:
    """What the deserializer resolved for one writer schema id (and topic, when the reader depends on it)."""

    validator: _Validator | None  # None when not validating
    schema_id: int


class JsonSchemaSerializer:
    """``(obj, ctx) -> bytes``: JSON with the Confluent frame.

    ``schema`` is a dataclass/pydantic class (objects of it are written), or a JSON Schema as text, dict or
    ``Schema`` (dicts and other JSON values are written). Other arguments as for ``AvroSerializer``, plus
    ``validate`` (default True): check each record against the schema before writing.
    """

    def __init__(self, client: RegistryClient, schema: Any = None, *,
                 strategy: str | SubjectNameStrategy = "topic", subject: str | None = None,
                 auto_register: bool | None = None, use_latest_version: bool = False, normalize: bool = False,
                 validate: bool = True,
                 to_dict: Callable[[Any, SerializationContext | None], Any] | None = None) -> None:
        if schema is None and not use_latest_version:
            raise ValueError("JsonSchemaSerializer needs a schema unless use_latest_version=True")
        if auto_register and use_latest_version:
            raise ValueError("auto_register and use_latest_version exclude each other")
        self._client = client
        self._use_latest = use_latest_version
        self._auto_register = (not use_latest_version) if auto_register is None else auto_register
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
            self._validator = compile_validator(self._schema, client) if validate else None
        self._encode = json_encoder(self._cls) if self._cls is not None else None
        self._user_to_dict = to_dict
        self._plans: SubjectPlans[_WritePlan] = SubjectPlans(client, strategy, subject, record_name)
        self._latest_plans: dict[int, _WritePlan] = {}

    @property
    def schema(self) -> Schema | None:
        return self._schema

    def _build(self, subject: str) -> _WritePlan:
        assert self._schema is not None
        if self._auto_register:
            schema_id = self._client.register(subject, self._schema, self._normalize)
        else:
            schema_id = self._client.lookup(subject, self._schema, self._normalize).schema_id
        return _WritePlan(wire.prefix(schema_id), schema_id, self._validator)

    def _latest_plan(self, ctx: SerializationContext | None) -> _WritePlan:
        subject = self._plans.subject_for(ctx)
        try:
            latest = self._client.get_latest_version(subject)
        except RegistryError as e:
            raise SerializationError(f"no latest version for subject {subject!r}: {e}", topic=topic_of(ctx)) from e
        plan = self._latest_plans.get(latest.schema_id)
        if plan is None:
            validator = compile_validator(latest.schema, self._client) if self._validate else None
            plan = self._latest_plans[latest.schema_id] = _WritePlan(wire.prefix(latest.schema_id), latest.schema_id,
                                                                     validator)
        return plan

    def __call__(self, obj: Any, ctx: SerializationContext | None = None) -> bytes | None:
        if obj is None:
            return None
        plans = self._plans
        plan = self._latest_plan(ctx) if self._use_latest else plans.single
        if plan is None:
            plan = plans.by_ctx.get((ctx.topic, ctx.field)) if ctx is not None and plans.per_topic else None
            if plan is None:
                plan = plans.get(ctx, self._build)
        value = obj
        try:
            if self._encode is not None and type(obj) is not dict:
                value = self._encode(obj)
            elif self._user_to_dict is not None:
                value = self._user_to_dict(obj, ctx)
            body = _dumps(value)
        except Exception as e:
            raise SerializationError(f"cannot encode {type(obj).__name__} as JSON: {type(e).__name__}: {e}",
                                     topic=topic_of(ctx), schema_id=plan.schema_id) from e
        validator = plan.validator
        if validator is not None and not validator.is_valid(value):
            raise SerializationError(f"record does not match the JSON Schema {_validation_message(validator, value)}",
                                     topic=topic_of(ctx), schema_id=plan.schema_id)
        return plan.prefix + body


class JsonSchemaDeserializer:
    """``(bytes, ctx) -> value``: reads Confluent-framed JSON.

    ``reader``: None (plain JSON values), a dataclass/pydantic class (instances are built) or a JSON Schema
    (validated against it). ``validate`` (default True) checks each record against the reader schema, or the
    writer's when there is none. ``use_latest_version`` takes the subject's latest version as reader schema.
    """

    def __init__(self, client: RegistryClient, reader: Any = None, *, validate: bool = True,
                 use_latest_version: bool = False, strategy: str | SubjectNameStrategy = "topic",
                 subject: str | None = None,
                 from_dict: Callable[[Any, SerializationContext | None], Any] | None = None) -> None:
        self._client = client
        self._validate = validate
        self._cls: type | None = None
        self._reader: Schema | None = None
        self._reader_validator: _Validator | None = None
        if reader is not None:
            self._reader, self._cls = _as_schema(reader)
            if validate:
                self._reader_validator = compile_validator(self._reader, client)
        self._use_latest = use_latest_version
        self._subjects: SubjectPlans[None] = SubjectPlans(client, strategy, subject, None)
        self._per_topic = use_latest_version and self._subjects.per_topic
        self._decode = json_decoder(self._cls) if self._cls is not None else None
        self._from_dict = from_dict
        self._plans: dict[Any, _ReadPlan] = {}

    def __call__(self, data: bytes | None, ctx: SerializationContext | None = None) -> Any:
        if data is None:
            return None
        if type(data) is not bytes:
            data = bytes(data)
        key = data[:_PREFIX] if not self._per_topic else (data[:_PREFIX], topic_of(ctx), ctx and ctx.field)
        plan = self._plans.get(key)
        if plan is None:
            plan = self._plan(data, ctx, key)
        try:
            value = _loads(memoryview(data)[_PREFIX:])
        except orjson.JSONDecodeError as e:
            raise SerializationError(f"payload is not valid JSON: {e.msg}", topic=topic_of(ctx),
                                     offset=_PREFIX + e.pos, schema_id=plan.schema_id) from e
        validator = plan.validator
        if validator is not None and not validator.is_valid(value):
            raise SerializationError(
                f"record does not match the JSON Schema {_validation_message(validator, value)}",
                topic=topic_of(ctx), offset=_PREFIX, schema_id=plan.schema_id)
        if self._decode is not None:
            try:
                value = self._decode(value)
            except Exception as e:
                what = self._cls.__name__ if self._cls is not None else "the object"
                raise SerializationError(f"cannot build {what} from the JSON read: {type(e).__name__}: {e}",
                                         topic=topic_of(ctx), schema_id=plan.schema_id) from e
        if self._from_dict is not None:
            value = self._from_dict(value, ctx)
        return value

    def _plan(self, data: bytes, ctx: SerializationContext | None, key: Any) -> _ReadPlan:
        topic = topic_of(ctx)
        schema_id = wire.read_schema_id(data, topic)
        writer = fetch_writer_schema(self._client, schema_id, topic)
        if writer.schema_type != "JSON":
            raise SerializationError(f"schema {schema_id} is {writer.schema_type}, not JSON", topic=topic,
                                     offset=1, schema_id=schema_id)
        validator: _Validator | None = None
        if self._validate:
            try:
                if self._use_latest:
                    latest = self._client.get_latest_version(self._subjects.subject_for(ctx))
                    validator = compile_validator(latest.schema, self._client)
                elif self._reader_validator is not None:
                    validator = self._reader_validator
                else:
                    validator = compile_validator(writer, self._client)
            except (ValueError, RegistryError) as e:
                raise SerializationError(f"cannot compile the JSON Schema for id {schema_id}: {e}", topic=topic,
                                         schema_id=schema_id) from e
        plan = _ReadPlan(validator, schema_id)
        self._plans[key] = plan
        return plan
