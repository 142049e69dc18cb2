"""Bounds on the work one compatibility check does, whatever the schemas.

The checks walk schemas recursively. Nesting written in one document is bounded by the registry's parse
limits, but references are not: Avro named types, Protobuf message fields and JSON Schema ``$ref`` chains
can lead a walk far deeper than the text is nested, and a type reached along many paths (a diamond of
references, combinations compared pairwise) is compared once per path. So every walk counts:

- its depth, stopped at :data:`MAX_DEPTH` with :class:`SchemaTooDeepError`, well before Python's
  recursion limit (a ``RecursionError`` raised anyway, by a caller already deep in its own stack, is
  turned into the same error: a check never fails with a bare ``RecursionError``);
- its comparisons, stopped at :data:`MAX_COMPARISONS` with :class:`SchemaTooComplexError`, so no schema
  pair costs more than a few seconds of CPU (real schemas stay far below: comparing a ``oneOf`` of 100
  objects of 20 properties with itself takes about 210,000);
- the text of the differences it reports, stopped at :data:`MAX_REPORT_CHARS` with the same error: paths
  repeat their property names, and one long name above many differences would otherwise fill memory.

Both are :class:`CheckLimitError`, for the registry to answer as an invalid schema (422, error code 42201)
with the error's text, which names the limit.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import ParamSpec, TypeVar

#: nested comparisons (record in record, message in message, subschema in subschema) one check follows
MAX_DEPTH = 128
#: comparisons of two (sub)schemas one check makes
MAX_COMPARISONS = 500_000
#: characters of difference paths one check reports
MAX_REPORT_CHARS = 16 * 2**20

P = ParamSpec("P")
R = TypeVar("R")


class CheckLimitError(ValueError):
    """A compatibility check stopped at one of its bounds; ``limit`` is the bound, ``path`` where it stopped."""

    def __init__(self, message: str, limit: int, path: str = "") -> None:
        super().__init__(message + (f" (at '{path}')" if path else ""))
        self.limit = limit
        self.path = path


class SchemaTooDeepError(CheckLimitError):
    """The schemas nest deeper than :data:`MAX_DEPTH` levels along one path of the check."""

    def __init__(self, limit: int = MAX_DEPTH, path: str = "") -> None:
        super().__init__(f"Schema too deeply nested: a compatibility check follows at most {limit} levels", limit, path)


class SchemaTooComplexError(CheckLimitError):
    """The check needs more than :data:`MAX_COMPARISONS` comparisons or reports more than
    :data:`MAX_REPORT_CHARS` characters of differences."""

    def __init__(self, limit: int = MAX_COMPARISONS, path: str = "", what: str = "comparisons") -> None:
        super().__init__(f"Schema too complex: a compatibility check is limited to {limit} {what}", limit, path)


class Walk:
    """The depth and the comparisons of one check so far. ``down`` counts one comparison one level
    deeper and raises past a bound; a walk that raises is abandoned whole, so ``up`` needs no ``finally``."""

    __slots__ = ("comparisons", "level", "max_comparisons", "max_depth", "reported")

    def __init__(self, max_depth: int = MAX_DEPTH, max_comparisons: int = MAX_COMPARISONS) -> None:
        self.level = 0
        self.comparisons = 0
        self.reported = 0
        self.max_depth = max_depth
        self.max_comparisons = max_comparisons

    def down(self, path: Callable[[], str] = str) -> None:
        """``path`` is called only to name the place in an error."""
        if self.level >= self.max_depth:
            raise SchemaTooDeepError(self.max_depth, path())
        if self.comparisons >= self.max_comparisons:
            raise SchemaTooComplexError(self.max_comparisons, path())
        self.level += 1
        self.comparisons += 1

    def up(self) -> None:
        self.level -= 1

    def count(self, comparisons: int, path: Callable[[], str] = str) -> None:
        """Work done without walking (a memoized result copied to another place) counts too."""
        self.comparisons += comparisons
        if self.comparisons > self.max_comparisons:
            raise SchemaTooComplexError(self.max_comparisons, path())

    def report(self, path: str) -> None:
        """Count a reported difference at ``path``."""
        self.reported += len(path)
        if self.reported > MAX_REPORT_CHARS:
            raise SchemaTooComplexError(MAX_REPORT_CHARS, path[:200], "characters of reported differences")


def no_recursion_error(function: Callable[P, R]) -> Callable[P, R]:
    """Decorate a check's entry point: a ``RecursionError`` inside becomes :class:`SchemaTooDeepError`."""

    @wraps(function)
    def guarded(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return function(*args, **kwargs)
        except RecursionError:
            raise SchemaTooDeepError() from None

    return guarded
