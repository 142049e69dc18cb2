"""What a field rule (``CEL_FIELD``) sees of a field, and which fields a rule selects, for every format.

A field has a full name (Avro ``ns.Record.field``, Protobuf ``pkg.Message.field``, JSON ``$.path.field``), its
name, its type name in Confluent's terms (``STRING``, ``INT``, ``RECORD``...), and tags: those written in the
schema (Avro and JSON Schema ``confluent:tags``, Protobuf ``(confluent.field_meta).tags``) plus those the schema's
``metadata.tags`` give to paths matching it (``*`` within a name, ``**`` across names, ``?`` one character). A rule
runs on primitive fields only, and with ``tags`` only on fields that have one of them.

Each format's walker (``avro_walk``, ``json_walk``, ``proto_walk``) is a ``Walker``: built once per schema and
rule, it calls ``visit(field, value, containing_message)`` for every selected field of a message and returns the
message with the values it returned (a transform) or raises ``ConditionFailed`` when one returned False (a
condition). Messages given to a walker are not modified: changed records are copies.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

PRIMITIVES = frozenset({"STRING", "BYTES", "INT", "LONG", "FLOAT", "DOUBLE", "BOOLEAN", "NULL"})


@dataclass(frozen=True, slots=True)
class FieldInfo:
    full_name: str
    name: str
    type_name: str
    tags: frozenset[str]


Visit = Callable[[FieldInfo, Any, Any], Any]
Walker = Callable[[Any, Visit], Any]


class ConditionFailed(Exception):
    """A field condition returned False for the field named ``field`` (its full name)."""

    def __init__(self, field: str) -> None:
        super().__init__(f"field {field}")
        self.field = field


@lru_cache(maxsize=1024)
def _wildcard(pattern: str) -> re.Pattern[str]:
    out = []
    i = 0
    src = pattern.replace("**.*", "**")
    while i < len(src):
        c = src[i]
        if c == "*":
            if src[i + 1 : i + 2] == "*":
                out.append(".*")
                i += 1
            else:
                out.append("[^.]*")
        elif c == "?":
            out.append("[^.]")
        else:
            out.append(re.escape(c))
        i += 1
    return re.compile("".join(out))


def wildcard_match(text: str, pattern: str) -> bool:
    """Confluent's tag-path match: ``*`` within a dotted name, ``**`` across names, ``?`` one character."""
    return _wildcard(pattern).fullmatch(text) is not None


class Selection:
    """Which fields one rule runs on: ``tags`` (empty: every primitive field) against each field's inline tags
    plus those ``metadata_tags`` (path pattern -> tags, the schema's ``metadata.tags``) give it."""

    def __init__(self, rule_tags: Iterable[str], metadata_tags: Mapping[str, Iterable[str]]) -> None:
        self.rule_tags = frozenset(rule_tags)
        self.metadata_tags = {k: frozenset(v) for k, v in metadata_tags.items()}

    def field(self, full_name: str, name: str, type_name: str, inline: Iterable[str]) -> FieldInfo:
        tags = set(inline)
        for pattern, extra in self.metadata_tags.items():
            if wildcard_match(full_name, pattern):
                tags |= extra
        return FieldInfo(full_name, name, type_name, frozenset(tags))

    def selects(self, field: FieldInfo) -> bool:
        if field.type_name not in PRIMITIVES:
            return False
        return not self.rule_tags or not self.rule_tags.isdisjoint(field.tags)
