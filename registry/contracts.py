"""Data contracts on the server side, as Confluent Schema Registry handles them: the identity hash of a schema
(which is also its GUID), and how ``metadata`` and ``ruleSet`` are merged at registration.

Metadata and rule sets are kept as JSON dicts, as they were sent. Comparing them follows Confluent's entity
classes rather than the JSON text: a missing and an empty ``tags``/``properties``/``sensitive`` are the same,
tags and sensitive names are sets (sorted), properties and rule params maps (sorted by key), a rule without
``kind`` is a TRANSFORM and without ``mode`` a WRITEREAD. So a client that sends ``"sensitive": []`` (as
confluent-kafka does) finds the schema registered without it, and two registries given the same content compute
the same GUID.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterable
from typing import Any

from registry.schema_types.base import Reference

CONFLUENT_VERSION = "confluent:version"
RULE_GROUPS = ("migrationRules", "domainRules", "encodingRules")


def content_digest(
    schema: str, references: Iterable[Reference], metadata: dict[str, Any] | None, rule_set: dict[str, Any] | None
) -> bytes:
    """Confluent's identity hash (``Schema.updateHash``): MD5 over the canonical string, each reference (name,
    subject, 4-byte big-endian version), then 0x01 and the metadata, then 0x01 and the rule set, each present
    one hashed field by field in its sorted form. The schema type is not hashed."""
    h = hashlib.md5(schema.encode())
    for r in references:
        h.update(r.name.encode())
        h.update(r.subject.encode())
        h.update(r.version.to_bytes(4, "big", signed=True))
    if metadata:
        h.update(b"\x01")
        _hash_metadata(h, metadata)
    if rule_set:
        h.update(b"\x01")
        _hash_rule_set(h, rule_set)
    return h.digest()


def guid_of(digest: bytes) -> str:
    """The schema's GUID: its identity hash written as a UUID (Confluent 8's ``MD5.toString``)."""
    return str(uuid.UUID(bytes=digest))


def digest_of_guid(guid: str) -> bytes | None:
    """The identity hash a GUID names (a UUID, or 32 hex digits as Confluent also accepts); None if neither."""
    try:
        return uuid.UUID(guid).bytes
    except ValueError:
        pass
    try:
        raw = bytes.fromhex(guid)
    except ValueError:
        return None
    return raw if len(raw) == 16 else None


def _strings(values: Any) -> list[str]:
    return sorted({str(v) for v in values or ()})


def _hash_metadata(h: Any, metadata: dict[str, Any]) -> None:
    for key, values in sorted((metadata.get("tags") or {}).items()):
        h.update(key.encode())
        for v in _strings(values):
            h.update(v.encode())
    for key, value in sorted((metadata.get("properties") or {}).items()):
        h.update(key.encode())
        h.update(str(value).encode())
    for v in _strings(metadata.get("sensitive")):
        h.update(v.encode())


def _hash_rule_set(h: Any, rule_set: dict[str, Any]) -> None:
    for group in RULE_GROUPS:
        for rule in rule_set.get(group) or ():
            _hash_rule(h, rule)
    if rule_set.get("enableAt"):
        h.update(str(rule_set["enableAt"]).upper().encode())


def _hash_rule(h: Any, rule: dict[str, Any]) -> None:
    for key, default in (("name", None), ("doc", None), ("kind", "TRANSFORM"), ("mode", "WRITEREAD"), ("type", None)):
        value = rule.get(key) or default
        if value is not None:
            h.update((str(value).upper() if key in ("kind", "mode") else str(value)).encode())
    for tag in _strings(rule.get("tags")):
        h.update(tag.encode())
    for key, value in sorted((rule.get("params") or {}).items()):
        h.update(key.encode())
        h.update(str(value).encode())
    for key in ("expr", "onSuccess", "onFailure"):
        if rule.get(key) is not None:
            h.update(str(rule[key]).encode())
    if rule.get("disabled"):
        h.update(b"\x01")


# ---- merging at registration (Confluent's Metadata.mergeMetadata / RuleSet.mergeRuleSets) ---------------------


def _normalized_metadata(tags: dict[str, Any], properties: dict[str, Any], sensitive: Iterable[Any]) -> dict[str, Any]:
    """Metadata as Confluent writes it: sorted, empty parts left out."""
    out: dict[str, Any] = {}
    if tags:
        out["tags"] = {k: _strings(tags[k]) for k in sorted(tags)}
    if properties:
        out["properties"] = {k: properties[k] for k in sorted(properties)}
    names = _strings(sensitive)
    if names:
        out["sensitive"] = names
    return out


def merge_metadata(old: dict[str, Any] | None, new: dict[str, Any] | None) -> dict[str, Any] | None:
    """``new`` over ``old``: tags and properties by key, sensitive names united."""
    if old is None:
        return new
    if new is None:
        return old
    return _normalized_metadata(
        {**(old.get("tags") or {}), **(new.get("tags") or {})},
        {**(old.get("properties") or {}), **(new.get("properties") or {})},
        [*(old.get("sensitive") or ()), *(new.get("sensitive") or ())],
    )


def merge_rule_sets(old: dict[str, Any] | None, new: dict[str, Any] | None) -> dict[str, Any] | None:
    """``new`` over ``old``, group by group: old rules named like a new one are dropped, the new ones appended."""
    if old is None:
        return new
    if new is None:
        return old
    out: dict[str, Any] = {}
    for group in RULE_GROUPS:
        olds, news = old.get(group) or [], new.get(group) or []
        names = {r.get("name") for r in news}
        merged = [r for r in olds if r.get("name") not in names] + list(news) if olds and news else (news or olds)
        if merged:
            out[group] = merged
    enable_at = new.get("enableAt") or old.get("enableAt")
    if enable_at:
        out["enableAt"] = enable_at
    return out


def with_confluent_version(metadata: dict[str, Any] | None, version: int) -> dict[str, Any]:
    """``metadata`` with ``properties["confluent:version"]`` set to ``version``."""
    metadata = metadata or {}
    return _normalized_metadata(
        metadata.get("tags") or {},
        {**(metadata.get("properties") or {}), CONFLUENT_VERSION: str(version)},
        metadata.get("sensitive") or (),
    )


def merged_contract(
    config: dict[str, Any],
    metadata: dict[str, Any] | None,
    rule_set: dict[str, Any] | None,
    previous: tuple[dict[str, Any] | None, dict[str, Any] | None] | None,
    new_version: int | None,
    version_given: bool,
) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """(metadata, rule set) a registration stores, as Confluent's ``maybeSetMetadataRuleSet``: the request's own
    (or, when it has none, the previous version's) between the config's ``defaultX`` (under) and ``overrideX``
    (over); ``confluent:version`` set to ``new_version`` when the request named a version or the metadata
    already carries one."""
    if previous is not None:
        metadata = metadata if metadata is not None else previous[0]
        rule_set = rule_set if rule_set is not None else previous[1]
    metadata = merge_metadata(merge_metadata(config.get("defaultMetadata"), metadata), config.get("overrideMetadata"))
    rule_set = merge_rule_sets(merge_rule_sets(config.get("defaultRuleSet"), rule_set), config.get("overrideRuleSet"))
    if new_version is not None and (version_given or CONFLUENT_VERSION in ((metadata or {}).get("properties") or {})):
        metadata = with_confluent_version(metadata, new_version)
    return metadata or None, rule_set or None


def has_defaults_or_overrides(config: dict[str, Any]) -> bool:
    return any(config.get(k) for k in ("defaultMetadata", "overrideMetadata", "defaultRuleSet", "overrideRuleSet"))


def group_value(metadata: dict[str, Any] | None, group: str) -> str | None:
    """The value of the ``compatibilityGroup`` property in ``metadata`` (None when absent)."""
    return ((metadata or {}).get("properties") or {}).get(group)
