"""Avro serializer and deserializer (fastavro), byte-compatible with confluent-kafka's.

Per subject (serializer, ``_WritePlan``) or per writer schema id (deserializer, ``_ReadPlan``) everything is
resolved once: registry id, 5-byte prefix, fastavro-parsed schemas and named types, the reader schema, the
typed-record converter and a generated encoder/decoder for the schema (``avro_codegen``). The per-record path is
a dict lookup and one call of the generated function; records it cannot take canonically, and reads that need
writer -> reader schema resolution, go through fastavro's compiled ``write_data`` / ``_read_data``
(``fastavro_core``), which decide the result.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import fastavro
from confluent_kafka.serialization import SerializationContext
from fastavro.validation import ValidationError, validate

from serdes import fastavro_core, wire
from serdes.avro_codegen import compile_reader, compile_writer
from serdes.base import SubjectPlans, fetch_writer_schema, topic_of
from serdes.client import RegistryClient
from serdes.errors import RegistryError, SerializationError
from serdes.models import Schema
from serdes.strategies import SubjectNameStrategy
from serdes.typed_records import avro_decoder, avro_encoder, avro_schema, is_record_type

__all__ = ["AvroDeserializer", "AvroSerializer", "parse_avro_schema"]

_BytesIO = io.BytesIO
_PREFIX = wire.PREFIX_SIZE
_write_data = fastavro_core.write_data
_read_data = fastavro_core.read_data
_WRITE_OPTIONS = fastavro_core.WRITE_OPTIONS


def _as_schema(schema: Any) -> tuple[Schema, type | None]:
    """(registry Schema, record class or None) from a class, JSON text, dict/list or Schema."""
    if isinstance(schema, Schema):
        return schema, None
    if is_record_type(schema):
        return Schema(json.dumps(avro_schema(schema), separators=(",", ":"))), schema
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
    raise TypeError(f"an Avro schema must be a dataclass/pydantic class, JSON text, dict or Schema, "
                    f"not {type(schema).__name__}")


def _record_name(schema: Schema) -> str | None:
    doc = json.loads(schema.schema_str)
    if isinstance(doc, dict) and doc.get("type") in ("record", "enum", "fixed") and "name" in doc:
        name = doc["name"]
        ns = doc.get("namespace")
        return f"{ns}.{name}" if ns and "." not in name else name
    return None


def parse_avro_schema(schema: Schema, client: RegistryClient | None = None,
                      named: dict[str, Any] | None = None, _seen: set[str] | None = None) -> tuple[Any, dict]:
    """Parse with fastavro, loading referenced schemas (their named types) from the registry first."""
    named = {} if named is None else named
    seen = set() if _seen is None else _seen
    for ref in schema.references:
        if ref.name in seen:
            continue
        seen.add(ref.name)
        if client is None:
            raise ValueError(f"schema references {ref.name!r}: a registry client is needed to resolve it")
        ref_schema = client.get_version(ref.subject, ref.version).schema
        parse_avro_schema(ref_schema, client, named, seen)
    try:
        parsed = fastavro.parse_schema(json.loads(schema.schema_str), named_schemas=named)
    except (fastavro.schema.SchemaParseException, ValueError, TypeError, KeyError) as e:
        raise ValueError(f"invalid Avro schema: {e}") from e
    return parsed, named


def _strip(schema: Any) -> Any:
    """A parsed schema without fastavro's bookkeeping keys and docs: equal results read the same."""
    if isinstance(schema, dict):
        return {k: _strip(v) for k, v in schema.items() if not k.startswith("__") and k not in ("doc", "aliases")}
    if isinstance(schema, list):
        return [_strip(v) for v in schema]
    return schema


def _no_fast_path(*args: Any) -> Any:
    raise TypeError("no generated encoder/decoder for this schema")


def _fast_writer(parsed: Any, named: dict) -> Callable[[Any, bytearray], None]:
    try:
        return compile_writer(parsed, named)
    except (ValueError, KeyError, TypeError, SyntaxError, RecursionError):
        return _no_fast_path  # fastavro writes every record


def _identity(x: Any) -> Any:
    return x


@dataclass(frozen=True, slots=True)
class _WritePlan:
    """What the serializer resolved for one subject (or one latest schema id)."""

    prefix: bytes  # the 5-byte frame header
    schema_id: int
    schema: Any  # fastavro-parsed writer schema
    named: dict  # its named types, as fastavro's write_data takes them
    encode: Callable[[Any, bytearray], None]  # the generated encoder, or _no_fast_path


@dataclass(frozen=True, slots=True)
class _ReadPlan:
    """What the deserializer resolved for one writer schema id (and topic, when the reader depends on it)."""

    writer: Any  # fastavro-parsed writer schema
    named: dict  # {"writer": ..., "reader": ...} named types, as fastavro's _read_data takes them
    reader: Any  # parsed reader schema, None when the writer's is read as it is
    options: dict  # fastavro read options
    post: Callable[[Any], Any] | None  # record -> typed record / from_dict input; None returns the dict
    schema_id: int
    decode: Callable[[bytes, int], tuple[Any, int]]  # the generated decoder, or _no_fast_path


def _label(schema: Any) -> str:
    """A short name for a (parsed) schema in error messages."""
    if isinstance(schema, dict):
        return f"{schema.get('type')} {schema['name']}" if "name" in schema else str(schema.get("type"))
    if isinstance(schema, list):
        return "union [" + ", ".join(_label(s) for s in schema) + "]"
    return repr(schema)


class AvroSerializer:
    """``(obj, ctx) -> bytes``: Avro with the Confluent frame.

    Args:
        client: the registry client.
        schema: a dataclass/pydantic class (objects of it are written), an Avro schema as JSON text, dict or
            ``Schema`` (dicts are written), or None with ``use_latest_version`` (write with the subject's latest).
        strategy: ``"topic"`` (default), ``"record"``, ``"topic_record"`` or a callable ``(ctx, record_name)``.
        subject: a fixed subject, overriding the strategy (then ``ctx`` is never needed).
        auto_register: register the schema on first use (default True unless ``use_latest_version``);
            False = look it up and fail if it is not registered.
        use_latest_version: write with the subject's latest registered schema and id.
        normalize: ask the registry to normalize the schema when registering / looking up.
        to_dict: optional ``(obj, ctx) -> dict`` for objects that are neither dicts nor typed records.
    """

    def __init__(self, client: RegistryClient, schema: Any = None, *,
                 strategy: str | SubjectNameStrategy = "topic", subject: str | None = None,
                 auto_register: bool | None = None, use_latest_version: bool = False, normalize: bool = False,
                 to_dict: Callable[[Any, SerializationContext | None], dict] | None = None) -> None:
        if schema is None and not use_latest_version:
            raise ValueError("AvroSerializer needs a schema (class, JSON text, dict or Schema) "
                             "unless use_latest_version=True")
        if auto_register and use_latest_version:
            raise ValueError("auto_register and use_latest_version exclude each other")
        self._client = client
        self._use_latest = use_latest_version
        self._auto_register = (not use_latest_version) if auto_register is None else auto_register
        self._normalize = normalize
        self._schema: Schema | None = None
        self._cls: type | None = None
        self._parsed: Any = None
        self._fast: Callable[[Any, bytearray], None] = _no_fast_path
        self._named: dict = {}
        record_name = None
        if schema is not None:
            self._schema, self._cls = _as_schema(schema)
            self._parsed, self._named = parse_avro_schema(self._schema, client)
            self._fast = _fast_writer(self._parsed, self._named)  # compiled once, shared by every subject
            record_name = _record_name(self._schema)
        self._encode: Callable[[Any], Any] | None = avro_encoder(self._cls) if self._cls is not None else None
        self._to_dict = to_dict
        if to_dict is not None and self._encode is None:
            self._encode = dict  # placeholder: marks "convert non-dicts"; _to_dict does the work
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
        return _WritePlan(wire.prefix(schema_id), schema_id, self._parsed, self._named, self._fast)

    def _latest_plan(self, ctx: SerializationContext | None) -> _WritePlan:
        subject = self._plans.subject_for(ctx)
        try:
            latest = self._client.get_latest_version(subject)  # TTL-cached in the client
        except RegistryError as e:
            raise SerializationError(f"no latest version for subject {subject!r}: {e}", topic=topic_of(ctx)) from e
        plan = self._latest_plans.get(latest.schema_id)
        if plan is None:
            parsed, named = parse_avro_schema(latest.schema, self._client)
            plan = self._latest_plans[latest.schema_id] = _WritePlan(
                wire.prefix(latest.schema_id), latest.schema_id, parsed, named, _fast_writer(parsed, named))
        return plan

    def __call__(self, obj: Any, ctx: SerializationContext | None = None) -> bytes | None:
        if obj is None:
            return None
        plans = self._plans
        plan = plans.single
        if plan is None:
            plan = plans.by_ctx.get((ctx.topic, ctx.field)) if ctx is not None else None
            if plan is None:
                plan = self._resolve(ctx)
        encode = self._encode
        if encode is None or type(obj) is dict:
            datum = obj
        else:
            try:
                datum = encode(obj) if self._to_dict is None else self._to_dict(obj, ctx)
            except Exception as e:
                raise self._write_error(obj, obj, plan, ctx, e) from e
        buf = bytearray(plan.prefix)
        try:
            plan.encode(datum, buf)  # the generated encoder: canonical values only, raises on anything else
        except Exception:
            buf = bytearray(plan.prefix)  # fastavro decides: defaults, coercions, or the error
            try:
                _write_data(buf, datum, plan.schema, plan.named, "", _WRITE_OPTIONS)
            except Exception as e:
                raise self._write_error(obj, datum, plan, ctx, e) from e
        return bytes(buf)

    def _resolve(self, ctx: SerializationContext | None) -> _WritePlan:
        if self._use_latest:
            return self._latest_plan(ctx)
        return self._plans.get(ctx, self._build)

    def _write_error(self, obj: Any, datum: Any, plan: _WritePlan, ctx: SerializationContext | None,
                     cause: Exception) -> SerializationError:
        if self._cls is not None and not isinstance(obj, (self._cls, dict)):
            why = f"expected {self._cls.__name__} or dict, got {type(obj).__name__}"
        else:
            try:  # fastavro's validator names the offending field; the compiled writer does not
                validate(datum, plan.schema, raise_errors=True)
                why = f"{type(cause).__name__}: {cause}"
            except ValidationError as ve:
                why = "; ".join(f"field {err.field or '(root)'}: {err.datum!r} is not a valid {_label(err.schema)}"
                                for err in getattr(ve, "errors", ())) or str(ve)
            except Exception as ve:
                why = f"{type(ve).__name__}: {ve}"
        return SerializationError(f"record does not match the Avro schema: {why}", topic=topic_of(ctx),
                                  schema_id=plan.schema_id)


class AvroDeserializer:
    """``(bytes, ctx) -> dict | typed record``: reads Confluent-framed Avro.

    Args:
        client: the registry client.
        reader: None (return dicts in the writer's schema), a dataclass/pydantic class (return instances, the
            writer's data resolved to the class's schema) or a reader schema (JSON text, dict, ``Schema``).
        use_latest_version: use the subject's latest version as the reader schema (needs the subject: ``ctx``
            with the topic strategy, or ``subject=``).
        strategy / subject: how to name the subject, only used with ``use_latest_version``.
        from_dict: optional ``(dict, ctx) -> obj`` applied to every record read.
    """

    def __init__(self, client: RegistryClient, reader: Any = None, *, use_latest_version: bool = False,
                 strategy: str | SubjectNameStrategy = "topic", subject: str | None = None,
                 from_dict: Callable[[dict, SerializationContext | None], Any] | None = None,
                 return_record_name: bool = False) -> None:
        self._client = client
        self._cls: type | None = None
        self._reader: Schema | None = None
        if reader is not None:
            self._reader, self._cls = _as_schema(reader)
        self._use_latest = use_latest_version
        self._subjects: SubjectPlans[None] = SubjectPlans(client, strategy, subject, None)
        self._per_topic = use_latest_version and self._subjects.per_topic
        self._from_dict = from_dict
        typed = self._cls is not None
        # Typed records: several record branches in one union come back as (name, dict) so the converter
        # knows which class to build; unions with one record come back plain.
        self._options = fastavro_core.read_options(return_record_name or typed, typed and not return_record_name)
        self._decode = avro_decoder(self._cls) if self._cls is not None else None
        self._reader_parsed: tuple[Any, dict] | None = None
        self._plans: dict[Any, _ReadPlan] = {}

    def __call__(self, data: bytes | None, ctx: SerializationContext | None = None) -> Any:
        if data is None:
            return None
        if type(data) is not bytes:
            data = bytes(data)
        # The frame header (magic + id) keys the plan, so a bad magic byte or unknown id simply misses.
        key = data[:_PREFIX] if not self._per_topic else (data[:_PREFIX], topic_of(ctx), ctx and ctx.field)
        plan = self._plans.get(key)
        if plan is None:
            plan = self._plan(data, ctx, key)
        try:
            record, end = plan.decode(data, _PREFIX)  # generated decoder; raises on anything unexpected
            if end != len(data):
                raise ValueError("trailing bytes")
        except Exception:
            record = self._read_slow(data, ctx, plan)
        post = plan.post
        if post is None:
            return record
        try:
            return post(record) if self._from_dict is None else self._from_dict(post(record), ctx)
        except Exception as e:
            what = self._cls.__name__ if self._cls is not None else "the object"
            raise SerializationError(f"cannot build {what} from the record read: {type(e).__name__}: {e}",
                                     topic=topic_of(ctx), schema_id=plan.schema_id) from e

    def _read_slow(self, data: bytes, ctx: SerializationContext | None, plan: _ReadPlan) -> Any:
        """fastavro's reader: schema resolution, and the exact result or error for odd payloads."""
        schema_id = plan.schema_id
        bio = _BytesIO(data)
        bio.seek(_PREFIX)
        try:
            record = _read_data(bio, plan.writer, plan.named, plan.reader, plan.options)
        except Exception as e:
            raise SerializationError(f"cannot decode Avro payload with writer schema {schema_id}: "
                                     f"{type(e).__name__}: {e}", topic=topic_of(ctx), offset=bio.tell(),
                                     schema_id=schema_id) from e
        if bio.tell() != len(data):
            raise SerializationError(f"{len(data) - bio.tell()} unread bytes after the Avro record: the payload "
                                     f"does not match writer schema {schema_id}", topic=topic_of(ctx),
                                     offset=bio.tell(), schema_id=schema_id)
        return record

    def _plan(self, data: bytes, ctx: SerializationContext | None, key: Any) -> _ReadPlan:
        topic = topic_of(ctx)
        schema_id = wire.read_schema_id(data, topic)
        writer = fetch_writer_schema(self._client, schema_id, topic)
        if writer.schema_type != "AVRO":
            raise SerializationError(f"schema {schema_id} is {writer.schema_type}, not AVRO", topic=topic,
                                     offset=1, schema_id=schema_id)
        try:
            w_parsed, w_named = parse_avro_schema(writer, self._client)
            reader = self._reader_schema(ctx)
            r_parsed, r_named = (None, {}) if reader is None else reader
        except (ValueError, RegistryError) as e:
            raise SerializationError(f"cannot resolve schemas for id {schema_id}: {e}", topic=topic,
                                     schema_id=schema_id) from e
        if r_parsed is not None and _strip(r_parsed) == _strip(w_parsed):
            r_parsed = None  # same schema: skip fastavro's per-record resolution work
        post = self._decode
        if post is None and self._from_dict is not None:
            post = _identity
        fast: Callable[[bytes, int], tuple[Any, int]] = _no_fast_path
        plain_unions = not self._options["return_record_name"] or self._options["return_record_name_override"]
        if r_parsed is None and plain_unions:  # no resolution: the generated decoder reads what fastavro would
            try:
                fast = compile_reader(w_parsed, w_named, self._options)
            except (ValueError, KeyError, TypeError, SyntaxError, RecursionError):
                fast = _no_fast_path
        plan = _ReadPlan(w_parsed, {"writer": w_named, "reader": r_named}, r_parsed, self._options, post, schema_id,
                         fast)
        self._plans[key] = plan
        return plan

    def _reader_schema(self, ctx: SerializationContext | None) -> tuple[Any, dict] | None:
        if self._use_latest:
            subject = self._subjects.subject_for(ctx)
            latest = self._client.get_latest_version(subject)
            return parse_avro_schema(latest.schema, self._client)
        if self._reader is None:
            return None
        if self._reader_parsed is None:
            self._reader_parsed = parse_avro_schema(self._reader, self._client)
        return self._reader_parsed
