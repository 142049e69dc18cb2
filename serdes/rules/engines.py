"""The rule engines are optional (``pip install 'schemakit[rules]'``): cel-python for ``CEL`` and ``CEL_FIELD``,
jsonata-python for ``JSONATA``. ``require`` imports one or says in one line which extra installs it."""

from __future__ import annotations

import importlib
from typing import Any


class MissingEngineError(ImportError):
    """A rule needs an engine that is not installed; the message names the extra."""


def require(module: str, package: str, rule_type: str) -> Any:
    """The engine module, or ``MissingEngineError`` naming the extra that installs it."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise MissingEngineError(
            f"{rule_type} rules need {package}, which is not installed: pip install 'schemakit[rules]'"
        ) from e
