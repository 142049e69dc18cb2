"""Answer bodies in Confluent's shapes: subject versions, schemas by id, lists, pages.

The default-format bodies are rendered once and kept on the state objects (``Version.rendered``,
``SchemaContent.rendered``), which the state drops when the record changes.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import orjson

from registry.service import Registered
from registry.state import SchemaContent, Version


def dumps(obj: Any) -> bytes:
    """``obj`` as a JSON answer body, in bytes of their own size: orjson's result keeps its whole output buffer
    (4 KiB for a short body, 32 KiB for a 3 KB one), and the bodies answered are kept (pre-rendered on the
    state, and in the read cache): with 10,000 schemas that was ~80 MiB of the registry's RSS.

    A string holding a lone surrogate (a schema's doc or property name echoed in an error or a compatibility
    message) is not UTF-8, which orjson refuses; such a body is written with the surrogate as a ``\\ud800``
    escape, as Confluent's Jackson writes it, so every answer can be sent."""
    try:
        return memoryview(orjson.dumps(obj)).tobytes()
    except orjson.JSONEncodeError:
        return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "backslashreplace")


def page(items: Sequence[Any], offset: int, limit: int) -> list[Any]:
    """Confluent's paging: a negative offset counts as 0, a negative limit means all."""
    offset = max(offset, 0)
    return list(items[offset:] if limit < 0 else items[offset : offset + limit])


def _content_fields(content: SchemaContent, schema_text: str) -> list[tuple[str, Any]]:
    fields: list[tuple[str, Any]] = []
    if content.schema_type != "AVRO":
        fields.append(("schemaType", content.schema_type))
    if content.references:
        fields.append(("references", content.references_json()))
    if content.metadata:
        fields.append(("metadata", content.metadata))
    if content.rule_set:
        fields.append(("ruleSet", content.rule_set))
    fields.append(("schema", schema_text))
    return fields


def version_dict(v: Version, schema_text: str | None = None) -> dict[str, Any]:
    """Confluent's ``Schema``: subject, version, id, guid (8.x), then the content (``schema`` last)."""
    body: dict[str, Any] = {"subject": v.subject, "version": v.version, "id": v.id, "guid": v.content.guid}
    body.update(_content_fields(v.content, v.content.schema if schema_text is None else schema_text))
    return body


_ID_ORDER = {"schemaType": 0, "schema": 1, "references": 2, "metadata": 3, "ruleSet": 4}


def id_dict(content: SchemaContent, schema_text: str | None = None) -> dict[str, Any]:
    """Confluent's ``SchemaString``: guid (8.x), schemaType, schema, references, metadata, ruleSet."""
    fields = _content_fields(content, content.schema if schema_text is None else schema_text)
    return {"guid": content.guid, **dict(sorted(fields, key=lambda kv: _ID_ORDER[kv[0]]))}


def register_dict(r: Registered) -> dict[str, Any]:
    """The register answer: id, version and GUID (Confluent 8.x), and the stored content when the registry
    completed the metadata or rule set the request sent, so the client sees the rules it will run."""
    body: dict[str, Any] = {"id": r.id, "version": r.version, "guid": r.content.guid}
    if r.populated:
        body.update(_content_fields(r.content, r.content.schema))
    return body


def version_body(v: Version) -> bytes:
    if v.rendered is None:
        v.rendered = dumps(version_dict(v))
    return v.rendered


def id_body(content: SchemaContent) -> bytes:
    if content.rendered is None:
        content.rendered = dumps(id_dict(content))
    return content.rendered
