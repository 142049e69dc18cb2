"""``schemakit registry diff SUBJECT V1 V2``: what changed between two versions, and at which levels V2 may
follow V1.

The two texts are pretty-printed and diffed line by line. The verdicts are computed here with the registry's
own schema types and rules (the API only checks at the subject's configured level): plain levels check V2
against V1, the ``_TRANSITIVE`` ones against every live version up to V1 as well. For JSON Schema and Protobuf
the changes are also listed with Confluent's change kinds (``FIELD_ADDED #/Order/3``), compatible ones
included.
"""

from __future__ import annotations

import difflib
from typing import TYPE_CHECKING, Any

from registry.schema_types.compatibility import change_kinds, level_verdicts
from schemakit.connection import seg
from schemakit.output import pretty_schema

if TYPE_CHECKING:
    from registry.schema_types import ParsedSchema, ResolvedReference
    from serdes import RegistryClient


class RemoteSchemas:
    """Versions fetched over the API and parsed as stored schemas, references resolved (each fetched once)."""

    def __init__(self, client: RegistryClient) -> None:
        self.client = client
        self._bodies: dict[tuple[str, int | str], dict[str, Any]] = {}

    def body(self, subject: str, version: int | str) -> dict[str, Any]:
        key = (subject, version)
        if key not in self._bodies:
            self._bodies[key] = self.client.request(
                "GET", f"/subjects/{seg(subject)}/versions/{seg(version)}", params={"deleted": True}
            )
        return self._bodies[key]

    def references(self, refs: list[dict[str, Any]], depth: int = 0) -> tuple[ResolvedReference, ...]:
        from registry.schema_types import ResolvedReference

        if depth > 64:
            raise ValueError("references nest deeper than 64 levels (a cycle?)")
        out = []
        for r in refs:
            b = self.body(r["subject"], int(r["version"]))
            out.append(
                ResolvedReference(
                    r["name"],
                    r["subject"],
                    int(b["version"]),
                    b["schema"],
                    b.get("schemaType") or "AVRO",
                    self.references(b.get("references") or [], depth + 1),
                )
            )
        return tuple(out)

    def parsed(self, body: dict[str, Any]) -> ParsedSchema:
        from registry.schema_types import get_schema_type

        schema_type = body.get("schemaType") or "AVRO"
        t = get_schema_type(schema_type)
        if t is None:
            raise ValueError(f"schema type {schema_type} is not supported by this schemakit")
        return t.parse_stored(body["schema"], self.references(body.get("references") or []))


def text_diff(old: dict[str, Any], new: dict[str, Any], context: int = 3) -> list[str]:
    def lines(b: dict[str, Any]) -> list[str]:
        return pretty_schema(b.get("schemaType") or "AVRO", b["schema"]).splitlines()

    def label(b: dict[str, Any]) -> str:
        return f"{b['subject']} version {b['version']} (id {b['id']})"

    return list(difflib.unified_diff(lines(old), lines(new), label(old), label(new), n=context, lineterm=""))


def diff_versions(client: RegistryClient, subject: str, v1: str, v2: str, context: int = 3) -> dict[str, Any]:
    """Everything ``registry diff`` shows, as data."""
    remote = RemoteSchemas(client)
    old, new = remote.body(subject, v1), remote.body(subject, v2)
    old_version, new_version = int(old["version"]), int(new["version"])
    live = client.request("GET", f"/subjects/{seg(subject)}/versions")
    earlier = [n for n in live if n < old_version and n != new_version]
    old_parsed, new_parsed = remote.parsed(old), remote.parsed(new)
    chain = [(n, remote.parsed(remote.body(subject, n))) for n in earlier] + [(old_version, old_parsed)]
    return {
        "subject": subject,
        "old": {"version": old_version, "id": old["id"], "schemaType": old.get("schemaType") or "AVRO"},
        "new": {"version": new_version, "id": new["id"], "schemaType": new.get("schemaType") or "AVRO"},
        "diff": text_diff(old, new, context),
        "changes": change_kinds(old_parsed, new_parsed),
        "levels": level_verdicts(new_parsed, chain),
    }
