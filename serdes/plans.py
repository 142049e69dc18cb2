"""Plans: how serializers and deserializers reach the registry without doing I/O themselves.

A *plan* is everything a serde resolves once for a subject or a writer schema id (id, frame header, parsed schema,
generated encoder...). Plans are built by generators (``Plan[T]``) that yield ``ClientCall``s — the name and
arguments of a registry-client method — and are sent back its result (or have its exception thrown in). The sync
serdes run them with ``run_plan`` (calling a ``RegistryClient``), the async ones with ``run_plan_async`` (awaiting
an ``AsyncRegistryClient``), so plan building is written once. Because a ``ClientCall`` names a public client
method, any object with those methods can stand in for the client.

This module also holds the plan steps every format uses: references to load (transitively) and references to
register before the schema that uses them.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from serdes.models import RegisteredSchema, Schema, SchemaReference

T = TypeVar("T")


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


def register_references(
    local: Sequence[LocalReference], subject_for: Callable[[str], str], auto_register: bool, normalize: bool
) -> Plan[dict[str, SchemaReference]]:
    """Register (or, without ``auto_register``, look up) each local reference under ``subject_for(name)``,
    dependencies first (``local`` is in that order), each with references to those it uses; returns the
    ``SchemaReference`` of each by name."""
    done: dict[str, SchemaReference] = {}
    for ref in local:
        schema = Schema(ref.schema.schema_str, ref.schema.schema_type, tuple(done[u] for u in ref.uses))
        subject = subject_for(ref.name)
        registered = yield from (
            register_full(subject, schema, normalize) if auto_register else lookup(subject, schema, normalize)
        )
        done[ref.name] = SchemaReference(ref.name, subject, registered.version)
    return done
