"""Compatibility rules as pure functions: parsed schemas in, a list of incompatibilities out.

Imports nothing else of schemakit (docs/architecture.md, the layers). Every check is bounded
(:mod:`compat.limits`): past its depth or work limit it raises a :class:`CheckLimitError`
(:class:`SchemaTooDeepError` or :class:`SchemaTooComplexError`).
"""

from compat.levels import CompatibilityLevel, CompatibilityPolicy, LevelResult, check_levels
from compat.limits import CheckLimitError, SchemaTooComplexError, SchemaTooDeepError
from compat.result import Incompatibility

__all__ = [
    "CheckLimitError",
    "CompatibilityLevel",
    "CompatibilityPolicy",
    "Incompatibility",
    "LevelResult",
    "SchemaTooComplexError",
    "SchemaTooDeepError",
    "check_levels",
]
