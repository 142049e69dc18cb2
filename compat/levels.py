"""The seven compatibility levels and Confluent's choice of which versions to check against."""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from compat.result import Incompatibility

S = TypeVar("S")

#: checker(reader, writer) -> incompatibilities (empty: the reader can read what the writer wrote)
Checker = Callable[[S, S], list[Incompatibility]]


class CompatibilityLevel(enum.StrEnum):
    NONE = "NONE"
    BACKWARD = "BACKWARD"
    BACKWARD_TRANSITIVE = "BACKWARD_TRANSITIVE"
    FORWARD = "FORWARD"
    FORWARD_TRANSITIVE = "FORWARD_TRANSITIVE"
    FULL = "FULL"
    FULL_TRANSITIVE = "FULL_TRANSITIVE"

    @classmethod
    def parse(cls, text: str) -> CompatibilityLevel:
        """Case-insensitive, as Confluent's ``forName``; ValueError for anything else."""
        return cls(text.strip().upper())

    @property
    def transitive(self) -> bool:
        return self.value.endswith("_TRANSITIVE")

    @property
    def backward(self) -> bool:
        return self.value.startswith(("BACKWARD", "FULL"))

    @property
    def forward(self) -> bool:
        return self.value.startswith(("FORWARD", "FULL"))


class CompatibilityPolicy(enum.StrEnum):
    """Confluent 8's ``compatibilityPolicy`` (subject or global config): which changes count as compatible.

    STRICT (the default) is every check as it always was. LENIENT changes JSON Schema checks only: it also
    accepts changes that reject some data an open content model used to allow, i.e. what a producer
    *following the old schema's declared properties* would not have written — adding an optional property
    (or a required one with a default) to an open object, removing a property from a closed one,
    narrowing or removing ``additionalProperties`` / ``unevaluatedProperties``, and properties not covered
    by a partially open model (``compat.json_schema_changes.COMPATIBLE_CHANGES_LENIENT``). Avro and Protobuf
    checks are the same under both policies, as in Confluent.
    """

    STRICT = "STRICT"
    LENIENT = "LENIENT"

    @classmethod
    def for_name(cls, text: str | None) -> CompatibilityPolicy | None:
        """Confluent's ``CompatibilityPolicy.forName``: case-insensitive; None for None or an unknown name
        (Confluent stores such a value as absent, which checks as STRICT). Confluent's third value,
        LOGICAL (extra Flink/Iceberg logical-type checks), is not supported and also gives None."""
        if text is None:
            return None
        try:
            return cls(text.upper())
        except ValueError:
            return None


@dataclass(frozen=True, slots=True)
class LevelResult(Generic[S]):
    """The incompatibilities of the first failing previous schema (empty list: compatible)."""

    incompatibilities: list[Incompatibility]
    failed_index: int | None = None  # index into ``previous`` of the schema that failed


def check_levels(level: CompatibilityLevel, new: S, previous: Sequence[S], checker: Checker[S]) -> LevelResult[S]:
    """Check ``new`` against ``previous`` (live versions, oldest first) as Confluent does.

    Non-transitive levels compare with the newest previous schema only; transitive levels walk from
    newest to oldest and stop at the first failure. FULL collects both directions' messages.
    """
    if level is CompatibilityLevel.NONE or not previous:
        return LevelResult([])
    indexes = range(len(previous) - 1, -1, -1) if level.transitive else [len(previous) - 1]
    for i in indexes:
        old = previous[i]
        found: list[Incompatibility] = []
        if level.backward:
            found += checker(new, old)  # new reader reads old data
        if level.forward:
            found += [i.for_forward() for i in checker(old, new)]  # old reader reads new data
        if found:
            return LevelResult(found, i)
    return LevelResult([])
