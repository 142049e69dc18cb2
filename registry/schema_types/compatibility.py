"""A new schema checked against earlier ones at a level, and the messages Confluent's registry answers with.

Pure functions over parsed schemas, so that the registry and the offline ``schemakit compat check`` give the
same verdicts in the same words: the rules are ``compat/`` (each type's ``check``), the choice of versions is
``compat.check_levels``, and the text is Confluent's verbose compatibility answer.
"""

from __future__ import annotations

from collections.abc import Sequence

from compat import CompatibilityLevel, CompatibilityPolicy, Incompatibility, LevelResult, check_levels
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
