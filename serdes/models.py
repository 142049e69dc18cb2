"""Value objects exchanged with the registry: schemas, references, data-contract metadata and rule sets,
registered versions.

All are frozen and hashable (a ``Schema`` keys the client caches, and its metadata and rules are part of its
identity, as in the registry), so mappings inside them are ``FrozenMap``s; constructors accept plain dicts and
lists. ``to_json`` / ``from_json`` use Confluent's field names and omit empty fields, as Confluent does.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class FrozenMap(Mapping[K, V], Generic[K, V]):
    """An immutable, hashable mapping (values must be hashable)."""

    __slots__ = ("_d",)

    def __init__(self, items: Mapping[K, V] | Iterable[tuple[K, V]] = ()) -> None:
        self._d: dict[K, V] = dict(items)

    def __getitem__(self, key: K) -> V:
        return self._d[key]

    def __iter__(self) -> Iterator[K]:
        return iter(self._d)

    def __len__(self) -> int:
        return len(self._d)

    def __hash__(self) -> int:
        return hash(frozenset(self._d.items()))

    def __repr__(self) -> str:
        return f"FrozenMap({self._d!r})"


@dataclass(frozen=True)
class SchemaReference:
    """A named import of another registered schema (``name`` is the import path / full name)."""

    name: str
    subject: str
    version: int

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "subject": self.subject, "version": self.version}


@dataclass(frozen=True)
class Metadata:
    """A schema's data-contract metadata: ``properties`` (e.g. ``{"owner": "team-a", "major": "2"}``), ``tags``
    (field path -> tag names) and the ``sensitive`` property names."""

    properties: Mapping[str, str] = field(default_factory=FrozenMap)
    tags: Mapping[str, tuple[str, ...]] = field(default_factory=FrozenMap)
    sensitive: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "properties", FrozenMap(self.properties))
        object.__setattr__(self, "tags", FrozenMap({k: tuple(v) for k, v in self.tags.items()}))
        object.__setattr__(self, "sensitive", tuple(self.sensitive))

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {}
        if self.tags:
            body["tags"] = {k: list(v) for k, v in self.tags.items()}
        if self.properties:
            body["properties"] = dict(self.properties)
        if self.sensitive:
            body["sensitive"] = list(self.sensitive)
        return body

    @classmethod
    def from_json(cls, body: dict[str, Any] | None) -> Metadata | None:
        if not body:
            return None
        return cls(body.get("properties") or {}, body.get("tags") or {}, tuple(body.get("sensitive") or ()))


@dataclass(frozen=True)
class Rule:
    """One data-contract rule, with Confluent's fields: ``kind`` CONDITION or TRANSFORM; ``mode`` WRITE, READ,
    WRITEREAD, UPGRADE, DOWNGRADE or UPDOWN; ``type`` the executor (CEL, CEL_FIELD, JSONATA, ...)."""

    name: str
    kind: str
    mode: str
    type: str
    expr: str | None = None
    tags: tuple[str, ...] = ()
    params: Mapping[str, str] = field(default_factory=FrozenMap)
    on_success: str | None = None
    on_failure: str | None = None
    disabled: bool = False
    doc: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "tags", tuple(self.tags))
        object.__setattr__(self, "params", FrozenMap(self.params))

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {"name": self.name}
        if self.doc:
            body["doc"] = self.doc
        body.update(kind=self.kind, mode=self.mode, type=self.type)
        if self.tags:
            body["tags"] = list(self.tags)
        if self.params:
            body["params"] = dict(self.params)
        for key, value in (("expr", self.expr), ("onSuccess", self.on_success), ("onFailure", self.on_failure)):
            if value is not None:
                body[key] = value
        if self.disabled:
            body["disabled"] = True
        return body

    @classmethod
    def from_json(cls, body: dict[str, Any]) -> Rule:
        return cls(
            body["name"],
            body.get("kind") or "TRANSFORM",
            body.get("mode") or "WRITEREAD",
            body.get("type") or "",
            body.get("expr"),
            tuple(body.get("tags") or ()),
            body.get("params") or {},
            body.get("onSuccess"),
            body.get("onFailure"),
            bool(body.get("disabled")),
            body.get("doc"),
        )


@dataclass(frozen=True)
class RuleSet:
    """A schema's rules: ``migration_rules`` (between major versions), ``domain_rules``, ``encoding_rules``."""

    migration_rules: tuple[Rule, ...] = ()
    domain_rules: tuple[Rule, ...] = ()
    encoding_rules: tuple[Rule, ...] = ()
    enable_at: str | None = None  # where the rules run: ALL / CLIENT (here) or elsewhere (skipped here)

    def __post_init__(self) -> None:
        for name in ("migration_rules", "domain_rules", "encoding_rules"):
            object.__setattr__(self, name, tuple(getattr(self, name)))

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {}
        for key, rules in (
            ("migrationRules", self.migration_rules),
            ("domainRules", self.domain_rules),
            ("encodingRules", self.encoding_rules),
        ):
            if rules:
                body[key] = [r.to_json() for r in rules]
        if self.enable_at:
            body["enableAt"] = self.enable_at
        return body

    @classmethod
    def from_json(cls, body: dict[str, Any] | None) -> RuleSet | None:
        if not body:
            return None
        rules = [
            tuple(Rule.from_json(r) for r in body.get(key) or ())
            for key in ("migrationRules", "domainRules", "encodingRules")
        ]
        migration, domain, encoding = rules
        return cls(migration, domain, encoding, body.get("enableAt")) if any(rules) else None


@dataclass(frozen=True)
class Schema:
    """A schema as the registry stores it: text, type (AVRO, JSON, PROTOBUF), references, and the optional
    data-contract ``metadata`` and ``rule_set``. Hashable, so it keys the client caches."""

    schema_str: str
    schema_type: str = "AVRO"
    references: tuple[SchemaReference, ...] = field(default_factory=tuple)
    metadata: Metadata | None = None
    rule_set: RuleSet | None = None

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {"schema": self.schema_str}
        if self.schema_type != "AVRO":
            body["schemaType"] = self.schema_type
        if self.references:
            body["references"] = [r.to_json() for r in self.references]
        if self.metadata is not None:
            body["metadata"] = self.metadata.to_json()
        if self.rule_set is not None:
            body["ruleSet"] = self.rule_set.to_json()
        return body

    @classmethod
    def from_json(cls, body: dict[str, Any]) -> Schema:
        refs = tuple(SchemaReference(r["name"], r["subject"], int(r["version"])) for r in body.get("references") or ())
        return cls(
            body["schema"],
            body.get("schemaType") or "AVRO",
            refs,
            Metadata.from_json(body.get("metadata")),
            RuleSet.from_json(body.get("ruleSet")),
        )


@dataclass(frozen=True)
class RegisteredSchema:
    """A schema as registered under a subject: its global id, its version in that subject, and its GUID when the
    registry gives one (Confluent 8.x)."""

    schema_id: int
    schema: Schema
    subject: str
    version: int
    guid: str | None = None
