"""What every serializer/deserializer shares, sync or async: subject naming and the per-subject plan cache, which
registered schema a serializer writes with, the per-record call paths (``SyncSerializerBase`` /
``AsyncSerializerBase``, ``AsyncFastPathSerializerBase``, ``SyncDeserializerBase`` / ``AsyncDeserializerBase``),
error wording. How plans reach the registry: ``serdes.plans``.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import Callable
from types import TracebackType
from typing import Any, Generic, Self, TypeVar

from confluent_kafka.serialization import SerializationContext

from serdes.caches import DEFAULT_CAPACITY, BoundedDict
from serdes.errors import RegistryError, SerializationError
from serdes.models import RegisteredSchema, Schema
from serdes.plans import ClientCall, Plan, get_schema, lookup, run_plan, run_plan_async
from serdes.rules import steps as rule_steps
from serdes.rules.engine import RuleConfig
from serdes.schema_ids import CLASSIC_MAGIC, HeaderFramer, Unframer
from serdes.strategies import SubjectNameStrategy, resolve_strategy

P = TypeVar("P")


def topic_of(ctx: SerializationContext | None) -> str | None:
    return ctx.topic if ctx is not None else None


def cache_capacity(client: Any) -> int:
    """The client's ``cache_capacity`` (bounds the plan caches too)."""
    return int(getattr(client, "cache_capacity", DEFAULT_CAPACITY))


# -- subjects and plans ----------------------------------------------------------------------------------------


class SubjectPlans(Generic[P]):
    """Plans cached per subject.

    When the subject depends on the topic, plans are keyed by (topic, key/value field), at most the client's
    ``cache_capacity`` of them; otherwise one plan serves every call. With ``cache=False`` nothing is kept here
    and every call builds (serializers following the latest version; their builds hit caches). Serializers read
    ``single`` and ``by_ctx`` themselves on the hot path and call ``get`` / ``aget`` only on a miss, which build
    the plan with ``build(subject, ctx)``. A registry failure while building becomes a ``SerializationError``
    naming the subject.

    Plans throughout serdes are frozen dataclasses with ``slots=True``: named fields that read as fast as tuple
    indexes on the per-record path (a NamedTuple's named field costs ~10x an index on CPython 3.11).
    """

    def __init__(
        self,
        strategy: str | SubjectNameStrategy,
        subject: str | None,
        record_name: str | None,
        capacity: int = DEFAULT_CAPACITY,
        cache: bool = True,
    ) -> None:
        self.fixed_subject = subject
        self.cache = cache  # False: every call builds (plans that follow the subject's latest version)
        self.strategy, self.per_topic = resolve_strategy(strategy)
        if subject is not None:
            self.per_topic = False
        self.record_name = record_name
        self.lock = threading.Lock()
        self.by_ctx: BoundedDict[tuple[str, str], P] = BoundedDict(capacity)
        self.single: P | None = None

    def subject_for(self, ctx: SerializationContext | None, record_name: str | None = None) -> str:
        if self.fixed_subject is not None:
            return self.fixed_subject
        return self.strategy(ctx, record_name or self.record_name)

    def subject_plan(self, ctx: SerializationContext | None, record_name: str | None = None) -> Plan[str]:
        """The subject, as a plan step: a strategy that asks the registry (``AssociatedNameStrategy.plan``) asks
        it through the serde's client; the others answer at once."""
        if self.fixed_subject is None:
            resolve = getattr(self.strategy, "plan", None)
            if resolve is not None:
                return (yield from resolve(ctx, record_name or self.record_name))
        return self.subject_for(ctx, record_name)

    def subject_or_none(self, ctx: SerializationContext | None, record_name: str | None = None) -> str | None:
        """The subject when it can be named (for rule errors and DLQ headers of a deserializer that needs none)."""
        try:
            return self.subject_for(ctx, record_name)
        except SerializationError:
            return None

    def cached(self, ctx: SerializationContext | None) -> P | None:
        if not self.per_topic:
            return self.single
        if ctx is None:
            raise SerializationError(
                "this serializer's subject depends on the topic: pass a SerializationContext "
                "(topic, MessageField.KEY/VALUE), or use strategy='record' or subject=..."
            )
        return self.by_ctx.get((ctx.topic, ctx.field))

    def building(
        self, ctx: SerializationContext | None, build: Callable[[str, SerializationContext | None], Plan[P]]
    ) -> Plan[P]:
        """Build the plan for ``ctx`` and cache it."""
        subject = yield from self.subject_plan(ctx)
        try:
            plan = yield from build(subject, ctx)
        except RegistryError as e:
            raise SerializationError(
                f"schema registry call for subject {subject!r} failed: {e}", topic=topic_of(ctx)
            ) from e
        if not self.cache:
            return plan
        if not self.per_topic:
            self.single = plan
        else:
            assert ctx is not None
            self.by_ctx.put((ctx.topic, ctx.field), plan)
        return plan

    def get(
        self,
        client: Any,
        ctx: SerializationContext | None,
        build: Callable[[str, SerializationContext | None], Plan[P]],
    ) -> P:
        """The plan for ``ctx``, built on first use with the sync ``client`` (one build at a time)."""
        plan = self.cached(ctx)
        if plan is None:
            with self.lock:
                plan = self.cached(ctx)
                if plan is None:
                    plan = run_plan(client, self.building(ctx, build))
        return plan

    async def aget(
        self,
        client: Any,
        ctx: SerializationContext | None,
        build: Callable[[str, SerializationContext | None], Plan[P]],
    ) -> P:
        """The plan for ``ctx``, built on first use with the async ``client``."""
        plan = self.cached(ctx)
        if plan is None:
            plan = await run_plan_async(client, self.building(ctx, build))
        return plan


def writer_schema(
    schema_id: int,
    topic: str | None,
    fmt: str | None = None,
    subject: str | None = None,
    schema_type: str | None = None,
) -> Plan[Schema]:
    """The writer schema for ``schema_id``; an unknown id, or (given ``schema_type``) a schema of another type,
    becomes a SerializationError naming it."""
    try:
        schema = yield from get_schema(schema_id, subject, fmt)
    except RegistryError as e:
        if e.status == 404:
            raise SerializationError(
                f"schema id {schema_id} is not known to the registry ({e.message})",
                topic=topic,
                offset=1,
                schema_id=schema_id,
            ) from e
        raise SerializationError(
            f"could not fetch writer schema {schema_id}: {e}", topic=topic, offset=1, schema_id=schema_id
        ) from e
    if schema_type is not None and schema.schema_type != schema_type:
        raise SerializationError(
            f"schema {schema_id} is {schema.schema_type}, not {schema_type}", topic=topic, offset=1, schema_id=schema_id
        )
    return schema


def fetch_writer_schema(
    client: Any, schema_id: int, topic: str | None, fmt: str | None = None, subject: str | None = None
) -> Schema:
    """``writer_schema`` with the sync ``client``."""
    return run_plan(client, writer_schema(schema_id, topic, fmt, subject))


class LatestSchema:
    """How a serde finds "the latest" schema of a subject: ``use_latest_version`` (``versions/latest``) or
    ``use_latest_with_metadata`` (the newest version whose metadata has those properties), both cached by the
    client for its ``latest_ttl``."""

    def __init__(self, use_latest_version: bool, use_latest_with_metadata: dict[str, str] | None) -> None:
        if use_latest_with_metadata is not None and not isinstance(use_latest_with_metadata, dict):
            raise TypeError("use_latest_with_metadata must be a dict of metadata properties")
        self.metadata = use_latest_with_metadata
        self.enabled = use_latest_version or use_latest_with_metadata is not None

    def fetch(self, subject: str) -> Plan[RegisteredSchema]:
        if self.metadata is not None:
            return (yield ClientCall("get_latest_with_metadata", (subject, self.metadata, True)))
        return (yield ClientCall("get_latest_version", (subject,)))


class SchemaChoice:
    """Which registered schema a serializer writes with instead of its own, if any: the subject's latest version
    (``use_latest_version``), its newest version with some metadata properties (``use_latest_with_metadata``), or
    a fixed id (``use_schema_id``). Checks the options once; ``auto_register`` is what they leave of it."""

    def __init__(
        self,
        owner: object,
        schema_type: str,
        has_schema: bool,
        auto_register: bool | None,
        use_latest_version: bool,
        use_latest_with_metadata: dict[str, str] | None,
        use_schema_id: int | None,
    ) -> None:
        self.schema_type = schema_type
        self.latest = LatestSchema(use_latest_version, use_latest_with_metadata)
        self.schema_id = use_schema_id
        self.chosen = self.latest.enabled or use_schema_id is not None
        name = type(owner).__name__
        if self.latest.enabled and use_schema_id is not None:
            raise ValueError("use_schema_id and use_latest_version/use_latest_with_metadata exclude each other")
        if not has_schema and not self.chosen:
            raise ValueError(
                f"{name} needs a schema unless it writes a registered one (use_latest_version, "
                f"use_latest_with_metadata or use_schema_id)"
            )
        if auto_register and self.chosen:
            raise ValueError(
                "auto_register and use_latest_version/use_latest_with_metadata/use_schema_id exclude each other"
            )
        self.auto_register = (not self.chosen) if auto_register is None else auto_register

    def fetch(self, subject: str, ctx: SerializationContext | None) -> Plan[tuple[int, Schema]]:
        """(id, schema) to write with (only when ``chosen``). The latest is asked every call: the client caches it
        for its latest_ttl."""
        if self.latest.enabled:
            registered = yield from self.latest.fetch(subject)
            schema_id, schema = registered.schema_id, registered.schema
        else:
            assert self.schema_id is not None
            schema_id = self.schema_id
            schema = yield from get_schema(schema_id, subject)
            yield from lookup(subject, schema, False, True)  # as confluent-kafka: the id must be in the subject
        if schema.schema_type != self.schema_type:
            raise SerializationError(
                f"schema {schema_id} is {schema.schema_type}, not {self.schema_type}",
                topic=topic_of(ctx),
                schema_id=schema_id,
            )
        return schema_id, schema


def check_client(client: Any, is_async: bool, owner: object) -> None:
    """A sync serde needs a sync client and an async one an async client: say so at construction."""
    get = getattr(client, "get_schema", None)
    if get is None:
        raise TypeError(f"{type(owner).__name__} needs a registry client, not {type(client).__name__}")
    if inspect.iscoroutinefunction(get) != is_async:
        wanted = "an AsyncRegistryClient" if is_async else "a RegistryClient (not an async one)"
        raise TypeError(f"{type(owner).__name__} needs {wanted}, not {type(client).__name__}")


# -- closing -------------------------------------------------------------------------------------------------


class ClosedByWith:
    """``with obj:`` calls ``obj.close()`` at the end."""

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


class Closing:
    """What a serde owns and ``close()`` releases: the dead-letter producer its DLQ rules made from
    ``rule_config`` (flushed first, so a record sent to the DLQ just before is delivered). The registry client is
    the caller's (shared between serdes) and stays open. ``close()`` is idempotent; a DLQ rule firing after it
    fails the record as ERROR does, logging that nothing was sent."""

    _rule_config: RuleConfig

    def close(self) -> None:
        self._rule_config.close()


class SyncClosing(Closing, ClosedByWith):
    """``with serde:`` closes it at the end."""


class AsyncClosing(Closing):
    """``await serde.aclose()`` / ``async with serde:``: ``close()`` in a worker thread (flushing blocks)."""

    async def aclose(self) -> None:
        await asyncio.to_thread(self.close)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()


# -- the per-record call paths -------------------------------------------------------------------------------


class SerializerBase(Generic[P]):
    """A serializer: plans per subject (``_plans``, built by ``_resolve(subject, ctx)``), and ``_write(obj, plan,
    ctx)`` for one record. ``SyncSerializerBase`` / ``AsyncSerializerBase`` add the call path."""

    _is_async: bool
    _client: Any
    _plans: SubjectPlans[P]
    _id_header: HeaderFramer | None = None  # schema_id_header=True: the GUID goes in a record header

    def _resolve(self, subject: str, ctx: SerializationContext | None) -> Plan[P]:
        raise NotImplementedError

    def _write(self, obj: Any, plan: P, ctx: SerializationContext | None) -> bytes:
        raise NotImplementedError


class SyncSerializerBase(SerializerBase[P], SyncClosing):
    _is_async = False

    def __call__(self, obj: Any, ctx: SerializationContext | None = None) -> bytes | None:
        if obj is None:
            return None
        plans = self._plans
        plan = plans.single
        if plan is None:
            plan = plans.by_ctx.get((ctx.topic, ctx.field)) if ctx is not None else None
            if plan is None:
                plan = plans.get(self._client, ctx, self._resolve)
        if self._id_header is not None:
            return self._id_header(self._client, self._write(obj, plan, ctx), ctx)
        return self._write(obj, plan, ctx)


class AsyncSerializerBase(SerializerBase[P], AsyncClosing):
    _is_async = True

    async def __call__(self, obj: Any, ctx: SerializationContext | None = None) -> bytes | None:
        if obj is None:
            return None
        plans = self._plans
        plan = plans.single
        if plan is None:
            plan = plans.by_ctx.get((ctx.topic, ctx.field)) if ctx is not None else None
            if plan is None:
                plan = await plans.aget(self._client, ctx, self._resolve)
        if self._id_header is not None:
            return await self._id_header.frame_async(self._client, self._write(obj, plan, ctx), ctx)
        return self._write(obj, plan, ctx)


# What a format's fast path (``_serialize``) gives an async serializer for a record it leaves to the general path.
AWAIT_GENERAL_PATH: Any = object()


class AsyncFastPathSerializerBase(AsyncSerializerBase[P]):
    """The async serializer of a format whose common case is written once, in the format's ``_serialize`` (JSON
    Schema, Protobuf), which is also its sync serializer's ``__call__``: calling it from there would cost the sync
    path a Python call per record (~7% of a Protobuf record). ``_serialize`` returns the frame, or hands the
    record to ``_general_path``: the sync serializer's general path, here a marker, on which the coroutine awaits
    ``AsyncSerializerBase.__call__`` (so an error is raised when awaited, as a coroutine's)."""

    _serialize: Callable[[Any, SerializationContext | None], Any]  # the format's fast path

    def _general_path(self, obj: Any, ctx: SerializationContext | None) -> Any:
        return AWAIT_GENERAL_PATH

    async def __call__(self, obj: Any, ctx: SerializationContext | None = None) -> bytes | None:
        frame = self._serialize(obj, ctx)
        return frame if frame is not AWAIT_GENERAL_PATH else await AsyncSerializerBase.__call__(self, obj, ctx)


class DeserializerBase(Generic[P]):
    """A deserializer: plans keyed by the first ``_key_size`` bytes of the frame (``_plans``, built by
    ``_resolve(data, ctx)``), and ``_read(data, ctx, plan)`` for one payload. ``SyncDeserializerBase`` /
    ``AsyncDeserializerBase`` add the call path.

    ``_resolve`` serves deserializers whose plan depends on the writer schema id (``_plan_key``) and, with
    ``use_latest_*``, on the reader schema: ``_plan(data, ctx, latest)`` builds one, cached by key or by (key,
    reader id).
    """

    _is_async: bool
    _client: Any
    _plans: BoundedDict[Any, P]
    # Set by each deserializer's __init__ (instance attributes, which CPython 3.11 reads fastest per record):
    _key_size: int  # frame bytes that key a plan: magic byte + schema id (5), or those + the index byte (6)
    _follows_latest: bool  # True: ask for the latest reader schema every call (no plan lookup by header alone)
    _latest: LatestSchema
    _subjects: SubjectPlans[None]
    _rule_config: RuleConfig
    _unframer: Unframer | None = None  # made on the first header- or GUID-framed record

    def _unframing(self) -> Unframer:
        if self._unframer is None:
            self._unframer = Unframer()
        return self._unframer

    def _read(self, data: bytes, ctx: SerializationContext | None, plan: P) -> Any:
        raise NotImplementedError

    def _plan(self, data: bytes, ctx: SerializationContext | None, latest: RegisteredSchema | None) -> Plan[P]:
        raise NotImplementedError

    def _lookup(self, data: bytes, ctx: SerializationContext | None) -> P | None:
        """A cached plan the first lookup missed (a longer key), found without I/O; None when there is none."""
        return None

    def _plan_key(self, data: bytes, ctx: SerializationContext | None) -> bytes:
        """The frame bytes a plan depends on (Protobuf adds its message-index path to the header)."""
        return data[: self._key_size]

    def _migrations(
        self,
        subject: str,
        writer: Schema,
        latest: RegisteredSchema,
        target: rule_steps.TargetFactory,
        topic: str | None,
        schema_id: int,
    ) -> Plan[list[rule_steps.Rules]]:
        """The migration steps from ``writer`` (schema ``schema_id``) to the ``latest`` version of ``subject``
        (``rule_steps.migrations``); a registry failure becomes a SerializationError naming them."""
        try:
            return (yield from rule_steps.migrations(subject, writer, latest, target, self._rule_config))
        except RegistryError as e:
            raise SerializationError(
                f"cannot find the migrations from schema {schema_id} to version {latest.version} of {subject!r}: {e}",
                topic=topic,
                schema_id=schema_id,
            ) from e

    def _latest_subject(self, data: bytes, ctx: SerializationContext | None) -> Plan[str]:
        """The subject whose latest version is the reader schema (``use_latest_*``)."""
        return (yield from self._subjects.subject_plan(ctx))

    def _resolve(self, data: bytes, ctx: SerializationContext | None) -> Plan[P]:
        key: Any = self._plan_key(data, ctx)
        latest = None
        if self._follows_latest:
            subject = yield from self._latest_subject(data, ctx)
            try:
                latest = yield from self._latest.fetch(subject)
            except RegistryError as e:
                raise SerializationError(
                    f"cannot get the reader schema (latest of subject {subject!r}): {e}", topic=topic_of(ctx)
                ) from e
            key = (key, latest.schema_id)
        plan = self._plans.get(key)
        if plan is None:
            plan = self._plans.put(key, (yield from self._plan(data, ctx, latest)))
        return plan


class SyncDeserializerBase(DeserializerBase[P], SyncClosing):
    _is_async = False

    def __call__(self, data: bytes | None, ctx: SerializationContext | None = None) -> Any:
        if data is None:
            return None
        if type(data) is not bytes:
            data = bytes(data)
        if data[:1] != CLASSIC_MAGIC or (ctx is not None and getattr(ctx, "headers", None)):  # Unframer.needed
            data = self._unframing()(self._client, data, ctx)
        plan = None if self._follows_latest else self._plans.get(data[: self._key_size])
        if plan is None:
            plan = self._lookup(data, ctx)
            if plan is None:
                plan = run_plan(self._client, self._resolve(data, ctx))
        return self._read(data, ctx, plan)


class AsyncDeserializerBase(DeserializerBase[P], AsyncClosing):
    _is_async = True

    async def __call__(self, data: bytes | None, ctx: SerializationContext | None = None) -> Any:
        if data is None:
            return None
        if type(data) is not bytes:
            data = bytes(data)
        if data[:1] != CLASSIC_MAGIC or (ctx is not None and getattr(ctx, "headers", None)):  # Unframer.needed
            data = await self._unframing().unframe_async(self._client, data, ctx)
        plan = None if self._follows_latest else self._plans.get(data[: self._key_size])
        if plan is None:
            plan = self._lookup(data, ctx)
            if plan is None:
                plan = await run_plan_async(self._client, self._resolve(data, ctx))
        return self._read(data, ctx, plan)
