"""Bounds on the work a compatibility check does for one pair of schemas.

The checks walk schemas recursively. Nesting written in one document is bounded by the registry's parse
limits, but references are not: Avro named types, Protobuf message fields and JSON Schema ``$ref`` chains
can lead a walk far deeper than the text is nested. Every walk therefore counts its depth and stops at
:data:`MAX_DEPTH` with :class:`SchemaTooDeepError`, well before Python's recursion limit; a
``RecursionError`` raised anyway (a caller already deep in its own stack) is turned into the same error,
so a check never fails with a bare ``RecursionError``.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import ParamSpec, TypeVar

#: nested comparisons (record in record, message in message, subschema in subschema) one check may follow
MAX_DEPTH = 128

P = ParamSpec("P")
R = TypeVar("R")


class SchemaTooDeepError(ValueError):
    """The schemas nest deeper than a compatibility check follows. The registry answers this as an
    invalid schema (422, error code 42201) naming the limit; ``limit`` and ``path`` say where it stopped."""

    def __init__(self, limit: int, path: str = "") -> None:
        at = f" at '{path}'" if path else ""
        super().__init__(f"Schema too deeply nested: the compatibility check follows at most {limit} levels{at}")
        self.limit = limit
        self.path = path


class Depth:
    """The current depth of one walk. ``down`` raises :class:`SchemaTooDeepError` past ``limit``.

    A walk that raises is abandoned whole, so ``up`` needs no ``finally``."""

    __slots__ = ("level", "limit")

    def __init__(self, limit: int = MAX_DEPTH) -> None:
        self.level = 0
        self.limit = limit

    def down(self, path: Callable[[], str] = str) -> None:
        """One level deeper; ``path`` is called only to name the place in the error."""
        if self.level >= self.limit:
            raise SchemaTooDeepError(self.limit, path())
        self.level += 1

    def up(self) -> None:
        self.level -= 1


def no_recursion_error(function: Callable[P, R]) -> Callable[P, R]:
    """Decorate a check's entry point: a ``RecursionError`` inside becomes :class:`SchemaTooDeepError`."""

    @wraps(function)
    def guarded(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return function(*args, **kwargs)
        except RecursionError:
            raise SchemaTooDeepError(MAX_DEPTH) from None

    return guarded
