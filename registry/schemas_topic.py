"""The ``_schemas`` topic's record format, byte for byte as Confluent Schema Registry writes it.

Keys are compact JSON with a fixed field order (``keytype`` first, ``magic`` last) because Kafka compacts
by exact key bytes: a tombstone must repeat the bytes of the record it deletes. Readers also accept the
legacy field orders and ``magic`` 0 of older registries; the raw key bytes are kept on every decoded key so
that a hard delete can tombstone exactly what was read.

Values are compact JSON with empty/null fields omitted (Jackson ``NON_EMPTY``); unknown fields are ignored.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from registry import contexts

SCHEMA = "SCHEMA"
CONFIG = "CONFIG"
MODE = "MODE"
NOOP = "NOOP"
DELETE_SUBJECT = "DELETE_SUBJECT"
CLEAR_SUBJECT = "CLEAR_SUBJECT"
CONTEXT = "CONTEXT"
#: schemakit's own: a schema exporter's definition, and its state (paused or not, progress); see
#: ``registry/exporters/records.py``. Confluent keeps exporters in a topic of their own.
EXPORTER = "EXPORTER"
EXPORTER_STATE = "EXPORTER_STATE"
EXPORTER_KEYTYPES = frozenset({EXPORTER, EXPORTER_STATE})
#: schemakit's own: a topic-subject association (Confluent 8's ``/associations``), keyed by resource type, resource
#: id and association type (a resource has at most one association of each type); see ``registry/associations.py``
ASSOCIATION = "ASSOCIATION"
KEYTYPES = frozenset(
    {SCHEMA, CONFIG, MODE, NOOP, DELETE_SUBJECT, CLEAR_SUBJECT, CONTEXT, *EXPORTER_KEYTYPES, ASSOCIATION}
)


def jdumps(obj: Any) -> str:
    """Compact JSON as Jackson writes it: no spaces, non-ASCII kept, ``/`` not escaped."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


@dataclass(frozen=True, slots=True)
class Key:
    """A decoded key. Subjects are normalized qualified names (``registry/contexts.py``); a CONTEXT key names
    its context (``.ctx``) in ``context`` and has no subject."""

    keytype: str
    subject: str | None = None
    version: int | None = None
    raw: bytes = field(default=b"", compare=False)
    context: str | None = None
    #: an EXPORTER or EXPORTER_STATE key's exporter name; an ASSOCIATION key's resource id
    name: str | None = None
    #: an ASSOCIATION key's resource type (``topic``) and association type (``key``, ``value``)
    resource_type: str | None = None
    association_type: str | None = None

    def encode(self) -> bytes:
        """The key bytes today's Confluent registry writes."""
        if self.keytype == SCHEMA:
            body = f'{{"keytype":"SCHEMA","subject":{jdumps(self.subject)},"version":{self.version},"magic":1}}'
        elif self.keytype == NOOP:
            body = '{"keytype":"NOOP","magic":0}'
        elif self.keytype == CONTEXT:  # ContextKey: @JsonPropertyOrder keytype, tenant, context; then magic
            tenant = jdumps(contexts.DEFAULT_TENANT)
            body = f'{{"keytype":"CONTEXT","tenant":{tenant},"context":{jdumps(self.context)},"magic":0}}'
        elif self.keytype in EXPORTER_KEYTYPES:
            body = f'{{"keytype":"{self.keytype}","name":{jdumps(self.name)},"magic":0}}'
        elif self.keytype == ASSOCIATION:
            resource_type, association_type = jdumps(self.resource_type), jdumps(self.association_type)
            body = (
                f'{{"keytype":"ASSOCIATION","resourceType":{resource_type},"resourceId":{jdumps(self.name)},'
                f'"associationType":{association_type},"magic":0}}'
            )
        else:
            body = f'{{"keytype":"{self.keytype}","subject":{jdumps(self.subject)},"magic":0}}'
        return body.encode()


class RecordFormatError(ValueError):
    """A record that is not in Confluent's format; the reader logs and skips it."""


def decode_key(raw: bytes) -> Key:
    try:
        obj = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as e:
        raise RecordFormatError(f"key is not JSON: {raw[:200]!r}") from e
    if not isinstance(obj, dict) or obj.get("keytype") not in KEYTYPES:
        raise RecordFormatError(f"unknown keytype in key {raw[:200]!r}")
    keytype = obj["keytype"]
    magic = obj.get("magic", 0)
    if keytype == SCHEMA:
        if magic not in (0, 1):
            raise RecordFormatError(f"unsupported magic {magic!r} in key {raw[:200]!r}")
        version = obj.get("version")
        if not isinstance(obj.get("subject"), str) or not isinstance(version, int):
            raise RecordFormatError(f"SCHEMA key without subject/version: {raw[:200]!r}")
        return Key(SCHEMA, contexts.normalize(obj["subject"]), version, raw)
    if keytype == CONTEXT:
        context = obj.get("context")
        if not isinstance(context, str) or obj.get("tenant", contexts.DEFAULT_TENANT) != contexts.DEFAULT_TENANT:
            raise RecordFormatError(f"CONTEXT key without a context of the default tenant: {raw[:200]!r}")
        return Key(CONTEXT, None, None, raw, context)
    if keytype in EXPORTER_KEYTYPES:
        if not isinstance(obj.get("name"), str):
            raise RecordFormatError(f"{keytype} key without a name: {raw[:200]!r}")
        return Key(keytype, raw=raw, name=obj["name"])
    if keytype == ASSOCIATION:
        fields = (obj.get("resourceType"), obj.get("resourceId"), obj.get("associationType"))
        if not all(isinstance(f, str) for f in fields):
            raise RecordFormatError(f"ASSOCIATION key without resourceType/resourceId/associationType: {raw[:200]!r}")
        return Key(ASSOCIATION, raw=raw, name=fields[1], resource_type=fields[0], association_type=fields[2])
    subject = obj.get("subject")
    if subject is not None and not isinstance(subject, str):
        raise RecordFormatError(f"subject is not a string in key {raw[:200]!r}")
    return Key(keytype, contexts.normalize(subject) if subject is not None else None, None, raw)


def decode_value(raw: bytes | None) -> dict[str, Any] | None:
    if raw is None:
        return None
    try:
        obj = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as e:
        raise RecordFormatError(f"value is not JSON: {raw[:200]!r}") from e
    if obj is None:
        return None
    if not isinstance(obj, dict):
        raise RecordFormatError(f"value is not a JSON object: {raw[:200]!r}")
    return obj


def _non_empty(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    return {k: v for k, v in pairs if v is not None and v != [] and v != {} and v != ""}


def schema_value(
    *,
    subject: str,
    version: int,
    schema_id: int,
    schema_type: str,
    schema: str,
    references: list[dict[str, Any]],
    metadata: dict[str, Any] | None,
    rule_set: dict[str, Any] | None,
    deleted: bool,
) -> bytes:
    """A SCHEMA value. ``schemaType`` is omitted for AVRO, as Confluent 7.x writes it."""
    obj = _non_empty(
        [
            ("subject", subject),
            ("version", version),
            ("id", schema_id),
            ("schemaType", None if schema_type == "AVRO" else schema_type),
            ("references", references),
            ("metadata", metadata),
            ("ruleSet", rule_set),
            ("schema", schema),
        ]
    )
    obj["deleted"] = deleted
    return jdumps(obj).encode()


#: CONFIG value fields in the order Confluent writes them
CONFIG_FIELDS = (
    "compatibilityLevel",
    "compatibilityPolicy",
    "normalize",
    "compatibilityGroup",
    "defaultMetadata",
    "overrideMetadata",
    "defaultRuleSet",
    "overrideRuleSet",
    "alias",
    "validateFields",
    "validateRules",
)


def config_value(subject: str | None, config: dict[str, Any]) -> bytes:
    pairs: list[tuple[str, Any]] = [("subject", subject)]
    pairs += [(k, config.get(k)) for k in CONFIG_FIELDS]
    obj = {k: v for k, v in pairs if v is not None and v != "" and v != {} and v != []}
    return jdumps(obj).encode()


def mode_value(subject: str | None, mode: str) -> bytes:
    return jdumps(_non_empty([("subject", subject), ("mode", mode)])).encode()


def delete_subject_value(subject: str, version: int) -> bytes:
    return jdumps({"subject": subject, "version": version}).encode()


def clear_subject_value(subject: str) -> bytes:
    return jdumps({"subject": subject}).encode()


def context_value(context: str) -> bytes:
    """A CONTEXT value, written the first time a subject of a non-default context is registered."""
    return jdumps({"tenant": contexts.DEFAULT_TENANT, "context": context}).encode()
