"""Topic-subject associations (Confluent 8's ``/associations``): which subject holds a resource's key or value
schema, so that a client's ``AssociatedNameStrategy`` finds the subject from the topic instead of deriving it.

**What one is.** A resource (a ``topic``, named ``resourceName`` in ``resourceNamespace``, the Kafka cluster id,
and identified by ``resourceId``) has at most one association of each type (``key``, ``value``), each naming a
subject. ``lifecycle`` is ``WEAK`` (the default) or ``STRONG``: a strong association owns its subject, which no
other association may name, and deleting the association with ``cascadeLifecycle`` deletes the subject too.
``frozen`` (strong associations only, created together with the subject's one schema) cannot be changed or
deleted, except by a cascading delete. The rules, codes and texts are those of Confluent's client-side mock
(``MockSchemaRegistryClient``), which mirrors its server.

**Stored in ``_schemas``.** Each association is an ``ASSOCIATION`` record keyed by (resource type, resource id,
association type) whose value is the association as the API shows it, written through the store like every other
write and applied by ``State``: followers forward the writes (``@leader_only`` routes), every instance reads them,
a restart replays them. Confluent's own server keeps them elsewhere; here the one log already gives replication
and failover.

This module checks requests against the stored associations and writes them; registering a request's schemas and
deleting a strong association's subject are the service's, called by the HTTP route around these checks.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from registry import errors, schemas_topic
from registry.schemas_topic import Key, jdumps
from registry.store import Store

#: the resource types Confluent knows, with the association types each takes
RESOURCE_TYPES: dict[str, tuple[str, ...]] = {"topic": ("key", "value")}
DEFAULT_RESOURCE_TYPE = "topic"
DEFAULT_ASSOCIATION_TYPE = "value"
STRONG, WEAK = "STRONG", "WEAK"
LIFECYCLES = (STRONG, WEAK)
#: ``resourceNamespace`` of a lookup that matches every namespace
NAMESPACE_WILDCARD = "-"


@dataclass(frozen=True, slots=True)
class Wanted:
    """One association a create or update request asks for (``None``: not given)."""

    subject: str
    association_type: str
    lifecycle: str | None
    frozen: bool | None
    with_schema: bool


@dataclass(frozen=True, slots=True)
class Resource:
    name: str
    namespace: str
    id: str
    type: str


def _lifecycle(value: dict[str, Any]) -> str:
    return str(value.get("lifecycle") or WEAK)


def check_lifecycle(lifecycle: str | None) -> None:
    """A lookup's ``lifecycle`` filter: STRONG or WEAK, else 42212."""
    if lifecycle is not None and lifecycle not in LIFECYCLES:
        raise errors.invalid_association_parameters()


@dataclass(frozen=True, slots=True)
class Lookup:
    """A lookup's filters: the resource type (None: any), the association types (none: every one), the
    lifecycle (None: either)."""

    resource_type: str | None
    association_types: list[str] | None = None
    lifecycle: str | None = None

    def matches(self, value: dict[str, Any]) -> bool:
        types = self.association_types or ()
        return (
            (self.resource_type is None or value.get("resourceType") == self.resource_type)
            and (not types or value.get("associationType") in types)
            and (self.lifecycle is None or _lifecycle(value) == self.lifecycle)
        )


class Associations:
    """The associations of one registry instance, over its store's state."""

    def __init__(self, store: Store) -> None:
        self.store = store
        #: held from a write's checks to its last record, so that two writes cannot both pass the checks
        self.lock = asyncio.Lock()

    async def catch_up(self) -> None:
        """Read every record written before now (by any instance), before checking a write against the state."""
        await self.store.barrier()

    # ---- reading ---------------------------------------------------------------------------------------

    def _all(self) -> list[dict[str, Any]]:
        """Every association, in a stable order: by resource, then key before value."""
        values = self.store.state.associations
        return [values[k] for k in sorted(values)]

    def by_resource_name(self, name: str, namespace: str, lookup: Lookup) -> list[dict[str, Any]]:
        return self._found(
            lookup,
            lambda v: (
                v.get("resourceName") == name
                and (namespace == NAMESPACE_WILDCARD or v.get("resourceNamespace") == namespace)
            ),
        )

    def by_resource_id(self, resource_id: str, lookup: Lookup) -> list[dict[str, Any]]:
        return self._found(lookup, lambda v: v.get("resourceId") == resource_id)

    def by_subject(self, subject: str, lookup: Lookup) -> list[dict[str, Any]]:
        return self._found(lookup, lambda v: v.get("subject") == subject)

    def _found(self, lookup: Lookup, chosen: Callable[[dict[str, Any]], bool]) -> list[dict[str, Any]]:
        """The associations ``chosen`` picks that pass ``lookup``'s filters (checked first: 42212)."""
        check_lifecycle(lookup.lifecycle)
        return [v for v in self._all() if chosen(v) and lookup.matches(v)]

    def _has_live_version(self, subject: str) -> bool:
        return any(not v.deleted for v in self.store.state.subjects.get(subject, {}).values())

    # ---- checking a create or update -------------------------------------------------------------------

    def check(self, resource: Resource, wanted: list[Wanted], *, create_only: bool) -> list[dict[str, Any] | None]:
        """Confluent's checks of a create (``create_only``) or create-or-update, in its order; for each wanted
        association, the stored one it would change (None: a new one). Call under ``lock``."""
        if not resource.name:
            raise errors.invalid_association("resourceName", "resource name cannot be empty")
        if not resource.namespace:
            raise errors.invalid_association("resourceNamespace", "resource namespace cannot be empty")
        if not resource.id:
            raise errors.invalid_association("resourceId", "resource id cannot be empty")
        allowed_types = RESOURCE_TYPES.get(resource.type)
        if allowed_types is None:
            raise errors.invalid_association("resourceType", f"unknown resource type '{errors.clip(resource.type)}'")
        if not wanted:
            raise errors.invalid_association("associations", "associations cannot be empty")
        seen: set[str] = set()
        for w in wanted:
            if not w.subject:
                raise errors.invalid_association("subject", "subject cannot be empty")
            if w.association_type not in allowed_types:
                detail = f"resourceType {resource.type} and associationType {w.association_type} don't match"
                raise errors.invalid_association("associationType", detail)
            if w.lifecycle is not None and w.lifecycle not in LIFECYCLES:
                raise errors.invalid_association("lifecycle", "lifecycle must be STRONG or WEAK")
            if w.association_type in seen:
                raise errors.invalid_association("associationType", f"duplicate association type {w.association_type}")
            seen.add(w.association_type)
        for w in wanted:
            if not w.with_schema and not self._has_live_version(w.subject):
                raise errors.no_active_subject_version(w.subject)
        stored = self.store.state.associations
        olds = [stored.get((resource.type, resource.id, w.association_type)) for w in wanted]
        for w, old in zip(wanted, olds, strict=True):
            self._check_against_resource(resource, w, old, create_only=create_only)
        for w in wanted:
            self._check_against_subject(resource, w)
        return olds

    def _check_against_resource(
        self, resource: Resource, w: Wanted, old: dict[str, Any] | None, *, create_only: bool
    ) -> None:
        if old is None:
            if w.frozen:
                if not w.with_schema:
                    detail = "schema must be provided when creating a frozen association"
                    raise errors.invalid_association("frozen", detail)
                if self._has_live_version(w.subject):
                    raise errors.invalid_association(
                        "frozen", "cannot create a frozen association when schemas already exist in the subject"
                    )
                if w.lifecycle != STRONG:
                    raise errors.invalid_association("frozen", "association with lifecycle of WEAK cannot be frozen")
            return
        equivalent = (
            old.get("subject") == w.subject
            and (w.lifecycle is None or w.lifecycle == _lifecycle(old))
            and (w.frozen is None or w.frozen == bool(old.get("frozen")))
        )
        if equivalent:
            return
        if create_only:
            raise errors.association_for_resource_exists(w.association_type, resource.id)
        if old.get("subject") != w.subject:
            raise errors.invalid_association("subject", "subject of association cannot be changed")
        if w.frozen is not None and w.frozen != bool(old.get("frozen")):
            raise errors.invalid_association("frozen", "frozen attribute of association cannot be changed")
        if old.get("frozen"):
            raise errors.association_frozen(w.association_type, w.subject)

    def _check_against_subject(self, resource: Resource, w: Wanted) -> None:
        """A strong association owns its subject: none may be added beside one, nor one beside others."""
        others = [
            v
            for v in self.store.state.associations.values()
            if v.get("subject") == w.subject
            and (v.get("resourceType"), v.get("resourceId"), v.get("associationType"))
            != (resource.type, resource.id, w.association_type)
        ]
        if not others:
            return
        if w.lifecycle == STRONG:
            raise errors.association_for_subject_exists(w.association_type, w.subject)
        if _lifecycle(others[0]) == STRONG:
            raise errors.strong_association_for_subject_exists(w.association_type, w.subject)

    # ---- writing ---------------------------------------------------------------------------------------

    async def _write(self, resource_type: str, resource_id: str, association_type: str, value: bytes | None) -> None:
        key = Key(
            schemas_topic.ASSOCIATION, name=resource_id, resource_type=resource_type, association_type=association_type
        )
        await self.store.write(key.encode(), value, "Association")

    async def put(
        self, resource: Resource, wanted: list[Wanted], olds: list[dict[str, Any] | None]
    ) -> list[dict[str, Any]]:
        """Store the checked associations (an existing one keeps its subject and GUID; its lifecycle and frozen
        change when given); the associations as stored. Call under ``lock``, after ``check``."""
        stored = []
        for w, old in zip(wanted, olds, strict=True):
            value = {
                "subject": w.subject,
                "guid": str(uuid.uuid4()),
                "resourceName": resource.name,
                "resourceNamespace": resource.namespace,
                "resourceId": resource.id,
                "resourceType": resource.type,
                "associationType": w.association_type,
                "lifecycle": w.lifecycle or WEAK,
                "frozen": bool(w.frozen),
            }
            if old is not None:
                value = dict(old)
                if w.lifecycle is not None:
                    value["lifecycle"] = w.lifecycle
                if w.frozen is not None:
                    value["frozen"] = w.frozen
            if value != old:
                await self._write(resource.type, resource.id, w.association_type, jdumps(value).encode())
            stored.append(value)
        return stored

    def to_delete(
        self, resource_id: str, *, resource_type: str, association_types: list[str] | None, cascade: bool
    ) -> list[dict[str, Any]]:
        """The associations a delete removes: 40410 when none, 40908 when one is frozen and the delete does not
        cascade. Call under ``lock``."""
        found = self.by_resource_id(resource_id, Lookup(resource_type, association_types))
        if not found:
            raise errors.association_not_found(resource_id)
        for v in found:
            if v.get("frozen") and not cascade:
                raise errors.association_frozen(str(v.get("associationType")), str(v.get("subject")))
        return found

    async def remove(self, values: list[dict[str, Any]]) -> None:
        for v in values:
            await self._write(str(v["resourceType"]), str(v["resourceId"]), str(v["associationType"]), None)
