"""Value objects exchanged with the registry: schemas, references, registered versions."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class SchemaReference:
    """A named import of another registered schema (``name`` is the import path / full name)."""

    name: str
    subject: str
    version: int

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "subject": self.subject, "version": self.version}


@dataclass(frozen=True)
class Schema:
    """A schema as the registry stores it: text, type (AVRO, JSON, PROTOBUF) and references. Hashable, so it
    keys the client caches."""

    schema_str: str
    schema_type: str = "AVRO"
    references: tuple[SchemaReference, ...] = field(default_factory=tuple)

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {"schema": self.schema_str}
        if self.schema_type != "AVRO":
            body["schemaType"] = self.schema_type
        if self.references:
            body["references"] = [r.to_json() for r in self.references]
        return body

    @classmethod
    def from_json(cls, body: dict[str, Any]) -> Schema:
        refs = tuple(SchemaReference(r["name"], r["subject"], int(r["version"])) for r in body.get("references") or ())
        return cls(body["schema"], body.get("schemaType") or "AVRO", refs)


@dataclass(frozen=True)
class RegisteredSchema:
    """A schema as registered under a subject: its global id and its version in that subject."""

    schema_id: int
    schema: Schema
    subject: str
    version: int
