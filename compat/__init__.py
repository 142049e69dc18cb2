"""Compatibility rules as pure functions: parsed schemas in, a list of incompatibilities out.

Imports nothing else of schemakit (docs/architecture.md, the layers).
"""

from compat.levels import CompatibilityLevel, check_levels
from compat.result import Incompatibility

__all__ = ["CompatibilityLevel", "Incompatibility", "check_levels"]
