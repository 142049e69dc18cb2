"""Compatibility rules as pure functions: parsed schemas in, a list of incompatibilities out.

Imports nothing else of schemakit (docs/architecture.md, the layers). A check that would follow schemas
deeper than :data:`compat.limits.MAX_DEPTH` levels raises :class:`SchemaTooDeepError`.
"""

from compat.levels import CompatibilityLevel, CompatibilityPolicy, LevelResult, check_levels
from compat.limits import SchemaTooDeepError
from compat.result import Incompatibility

__all__ = [
    "CompatibilityLevel",
    "CompatibilityPolicy",
    "Incompatibility",
    "LevelResult",
    "SchemaTooDeepError",
    "check_levels",
]
