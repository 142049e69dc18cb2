"""Compatibility rules as pure functions: parsed schemas in, a list of incompatibilities out.

Imports nothing else of schemakit (docs/architecture.md, the layers).
"""

from compat.levels import CompatibilityLevel, LevelResult, check_levels
from compat.result import Incompatibility

__all__ = ["CompatibilityLevel", "Incompatibility", "LevelResult", "check_levels"]
