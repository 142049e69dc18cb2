"""What every serializer/deserializer shares, sync or async: registry calls as plan steps, subject naming, the
per-subject plan cache, references, error wording.

A *plan* is everything resolved once for a subject or a writer schema id (id, frame header, parsed schema, generated
encoder...). Plans are built by generators (``Plan[T]``) that do no I/O: they yield ``ClientCall``s — the name and
arguments of a registry-client method — and are sent back its result (or have its exception thrown in). The sync
serializers run them with ``run_plan`` (calling the ``RegistryClient``), the async ones with ``run_plan_async``
(awaiting the ``AsyncRegistryClient``), so plan building is written once. Because a ``ClientCall`` names a public
client method, any object with those methods can stand in for the client.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from confluent_kafka.serialization import SerializationContext

from serdes.caches import DEFAULT_CAPACITY, BoundedDict
from serdes.errors import RegistryError, SerializationError
from serdes.models import RegisteredSchema, Schema, SchemaReference
from serdes.strategies import SubjectNameStrategy, resolve_strategy

T = TypeVar("T")
P = TypeVar("P")


def topic_of(ctx: SerializationContext | None) -> str | None:
    return ctx.topic if ctx is not None else None


def cache_capacity(client: Any) -> int:
    """The client's ``cache_capacity`` (bounds the plan caches too)."""
    return int(getattr(client, "cache_capacity", DEFAULT_CAPACITY))


# -- registry calls as plan steps ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ClientCall:
    """Plan step: call the registry client's method ``method`` with ``args``."""

    method: str
    args: tuple[Any, ...]


Plan = Generator[ClientCall, Any, T]


def get_schema(schema_id: int, subject: str | None = None, fmt: str | None = None) -> Plan[Schema]:
    return (yield ClientCall("get_schema", (schema_id, subject, fmt)))


def get_version(subject: str, version: int, fmt: str | None = None) -> Plan[RegisteredSchema]:
    return (yield ClientCall("get_version", (subject, version, fmt)))


def register(subject: str, schema: Schema, normalize: bool) -> Plan[int]:
    return (yield ClientCall("register", (subject, schema, normalize)))


def register_full(subject: str, schema: Schema, normalize: bool) -> Plan[RegisteredSchema]:
    return (yield ClientCall("register_full", (subject, schema, normalize)))


def lookup(subject: str, schema: Schema, normalize: bool, deleted: bool = False) -> Plan[RegisteredSchema]:
    return (yield ClientCall("lookup", (subject, schema, normalize, deleted)))


def register_or_lookup(subject: str, schema: Schema, auto_register: bool, normalize: bool) -> Plan[int]:
    """The id of ``schema`` in ``subject``: registered there on first use, or (without ``auto_register``) found
    there (40401/40403 when it is not)."""
    if auto_register:
        return (yield from register(subject, schema, normalize))
    return (yield from lookup(subject, schema, normalize)).schema_id


def run_plan(client: Any, plan: Plan[T]) -> T:
    """Build ``plan`` calling the sync ``client``."""
    value: Any = None
    error: Exception | None = None
    while True:
        try:
            call = plan.send(value) if error is None else plan.throw(error)
        except StopIteration as done:
            return done.value
        try:
            value, error = getattr(client, call.method)(*call.args), None
        except Exception as e:
            value, error = None, e


async def run_plan_async(client: Any, plan: Plan[T]) -> T:
    """Build ``plan`` awaiting the async ``client``."""
    value: Any = None
    error: Exception | None = None
    while True:
        try:
            call = plan.send(value) if error is None else plan.throw(error)
        except StopIteration as done:
            return done.value
        try:
            value, error = await getattr(client, call.method)(*call.args), None
        except Exception as e:
            value, error = None, e


# -- references ------------------------------------------------------------------------------------------------


def load_references(schema: Schema, fmt: str | None = None) -> Plan[dict[str, Schema]]:
    """Every schema that ``schema`` references, transitively, by reference name, dependencies first."""
    out: dict[str, Schema] = {}
    yield from _load_into(schema, fmt, out, set())
    return out


def _load_into(schema: Schema, fmt: str | None, out: dict[str, Schema], seen: set[str]) -> Plan[None]:
    for ref in schema.references:
        if ref.name in seen:
            continue
        seen.add(ref.name)
        target = (yield from get_version(ref.subject, ref.version, fmt)).schema
        yield from _load_into(target, fmt, out, seen)
        out[ref.name] = target


@dataclass(frozen=True)
class LocalReference:
    """A schema the serializer registers before the schema that uses it (an imported .proto file, an Avro named
    type): its reference ``name``, its ``schema`` (without references) and the names of the other local
    references it uses itself."""

    name: str
    schema: Schema
    uses: tuple[str, ...] = ()


def register_references(local: Sequence[LocalReference], subject_for: Callable[[str], str], auto_register: bool,
                        normalize: bool) -> Plan[dict[str, SchemaReference]]:
    """Register (or, without ``auto_register``, look up) each local reference under ``subject_for(name)``,
    dependencies first (``local`` is in that order), each with references to those it uses; returns the
    ``SchemaReference`` of each by name."""
    done: dict[str, SchemaReference] = {}
    for ref in local:
        schema = Schema(ref.schema.schema_str, ref.schema.schema_type, tuple(done[u] for u in ref.uses))
        subject = subject_for(ref.name)
        registered = yield from (register_full(subject, schema, normalize) if auto_register
                                 else lookup(subject, schema, normalize))
        done[ref.name] = SchemaReference(ref.name, subject, registered.version)
    return done


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

    def __init__(self, strategy: str | SubjectNameStrategy, subject: str | None, record_name: str | None,
                 capacity: int = DEFAULT_CAPACITY, cache: bool = True) -> None:
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

    def cached(self, ctx: SerializationContext | None) -> P | None:
        if not self.per_topic:
            return self.single
        if ctx is None:
            raise SerializationError("this serializer's subject depends on the topic: pass a SerializationContext "
                                     "(topic, MessageField.KEY/VALUE), or use strategy='record' or subject=...")
        return self.by_ctx.get((ctx.topic, ctx.field))

    def building(self, ctx: SerializationContext | None,
                 build: Callable[[str, SerializationContext | None], Plan[P]]) -> Plan[P]:
        """Build the plan for ``ctx`` and cache it."""
        subject = self.subject_for(ctx)
        try:
            plan = yield from build(subject, ctx)
        except RegistryError as e:
            raise SerializationError(f"schema registry call for subject {subject!r} failed: {e}",
                                     topic=topic_of(ctx)) from e
        if not self.cache:
            return plan
        if not self.per_topic:
            self.single = plan
        else:
            assert ctx is not None
            self.by_ctx.put((ctx.topic, ctx.field), plan)
        return plan

    def get(self, client: Any, ctx: SerializationContext | None,
            build: Callable[[str, SerializationContext | None], Plan[P]]) -> P:
        """The plan for ``ctx``, built on first use with the sync ``client`` (one build at a time)."""
        plan = self.cached(ctx)
        if plan is None:
            with self.lock:
                plan = self.cached(ctx)
                if plan is None:
                    plan = run_plan(client, self.building(ctx, build))
        return plan

    async def aget(self, client: Any, ctx: SerializationContext | None,
                   build: Callable[[str, SerializationContext | None], Plan[P]]) -> P:
        """The plan for ``ctx``, built on first use with the async ``client``."""
        plan = self.cached(ctx)
        if plan is None:
            plan = await run_plan_async(client, self.building(ctx, build))
        return plan


def writer_schema(schema_id: int, topic: str | None, fmt: str | None = None,
                  subject: str | None = None) -> Plan[Schema]:
    """The writer schema for ``schema_id``; an unknown id becomes a SerializationError naming it."""
    try:
        return (yield from get_schema(schema_id, subject, fmt))
    except RegistryError as e:
        if e.status == 404:
            raise SerializationError(f"schema id {schema_id} is not known to the registry ({e.message})",
                                     topic=topic, offset=1, schema_id=schema_id) from e
        raise SerializationError(f"could not fetch writer schema {schema_id}: {e}", topic=topic, offset=1,
                                 schema_id=schema_id) from e


def fetch_writer_schema(client: Any, schema_id: int, topic: str | None, fmt: str | None = None,
                        subject: str | None = None) -> Schema:
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


def check_client(client: Any, is_async: bool, owner: object) -> None:
    """A sync serde needs a sync client and an async one an async client: say so at construction."""
    get = getattr(client, "get_schema", None)
    if get is None:
        raise TypeError(f"{type(owner).__name__} needs a registry client, not {type(client).__name__}")
    if inspect.iscoroutinefunction(get) != is_async:
        wanted = "an AsyncRegistryClient" if is_async else "a RegistryClient (not an async one)"
        raise TypeError(f"{type(owner).__name__} needs {wanted}, not {type(client).__name__}")
