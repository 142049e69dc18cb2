"""A new schema checked against earlier ones at a level, and the messages Confluent's registry answers with.

Pure functions over parsed schemas, so that the registry and the offline ``schemakit compat check`` give the
same verdicts in the same words: the rules are ``compat/`` (each type's ``check``), the choice of versions is
``compat.check_levels``, and the text is Confluent's verbose compatibility answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from compat import CompatibilityLevel, CompatibilityPolicy, Incompatibility, LevelResult, check_levels
from registry.schema_types import get_schema_type
from registry.schema_types.base import ParsedSchema, SchemaType

#: Confluent compares schema types before anything else
DIFFERENT_TYPE = Incompatibility("TYPE_MISMATCH", "/", "Incompatible because of different schema type")


def check_compatibility(
    schema_type: SchemaType,
    level: CompatibilityLevel,
    new: ParsedSchema,
    previous: Sequence[ParsedSchema],
    *,
    policy: CompatibilityPolicy = CompatibilityPolicy.STRICT,
) -> LevelResult[ParsedSchema]:
    """Check ``new`` (of ``schema_type``) against ``previous`` (live versions, oldest first) at ``level``,
    under the config's ``compatibilityPolicy`` (Confluent 8: LENIENT relaxes some JSON Schema rules).

    A previous schema of another type is never compatible; only its ``schema_type`` is read, so a caller may
    pass it unparsed (``ParsedSchema(other_type, text)``). Raises ``compat.CheckLimitError`` past a check's
    bounds.
    """

    def checker(reader: ParsedSchema, writer: ParsedSchema) -> list[Incompatibility]:
        if reader.schema_type != writer.schema_type:
            return [DIFFERENT_TYPE]
        return schema_type.check(reader, writer, policy)

    return check_levels(level, new, previous, checker)


def compatibility_messages(
    incompatibilities: Sequence[Incompatibility],
    *,
    old_version: int,
    old_schema: str,
    level: CompatibilityLevel,
    validate_fields: bool = False,
) -> list[str]:
    """The ``messages`` of a failed check as Confluent words them (a 409 on register, ``verbose=true``):
    one entry per incompatibility, then the version and text of the schema that failed and the settings."""
    if not incompatibilities:
        return []
    return [
        *(i.confluent_text() for i in incompatibilities),
        f"{{oldSchemaVersion: {old_version}}}",
        f"{{oldSchema: '{old_schema}'}}",
        f"{{validateFields: '{str(validate_fields).lower()}', compatibility: '{level.value}'}}",
    ]


@dataclass
class LevelVerdict:
    """One level's answer when a version is compared with earlier ones (``level_verdicts``)."""

    level: str
    is_compatible: bool
    messages: list[str]  # as Confluent's verbose check words them
    reasons: list[str]  # "KIND path" per incompatibility

    def to_json(self) -> dict[str, Any]:
        return {"is_compatible": self.is_compatible, "messages": self.messages}


def level_verdicts(new: ParsedSchema, chain: Sequence[tuple[int, ParsedSchema]]) -> list[LevelVerdict]:
    """``new`` against ``chain`` ((version, parsed), oldest first, the version compared with last) at each of
    the seven levels: the plain levels check against the last one, the ``_TRANSITIVE`` ones against all."""
    t = get_schema_type(new.schema_type)
    assert t is not None
    out = []
    for level in CompatibilityLevel:
        previous = list(chain) if level.transitive else list(chain[-1:])
        result = check_compatibility(t, level, new, [p for _v, p in previous])
        failed = previous[result.failed_index or 0] if result.incompatibilities else None
        messages = (
            compatibility_messages(
                result.incompatibilities, old_version=failed[0], old_schema=failed[1].canonical, level=level
            )
            if failed
            else []
        )
        out.append(
            LevelVerdict(
                level.value,
                not result.incompatibilities,
                messages,
                [f"{i.kind} {i.path}" for i in result.incompatibilities],
            )
        )
    return out


def change_kinds(old: ParsedSchema, new: ParsedSchema) -> list[str] | None:
    """Every difference with Confluent's kind ("FIELD_ADDED #/Order/3"), compatible ones included, for the
    types whose rules are a diff (None for Avro, whose rules compare reader and writer instead)."""
    if old.schema_type != new.schema_type:
        return None
    if new.schema_type == "JSON":
        from compat import json_schema

        return [f"{d.kind} {d.path}" for d in json_schema.diff(old.parsed, new.parsed)]
    if new.schema_type == "PROTOBUF":
        from compat import protobuf

        return [f"{d.kind} {d.path}" for d in protobuf.diff(old.parsed, new.parsed)]
    return None
