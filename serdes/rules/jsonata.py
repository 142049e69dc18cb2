"""JSONata expressions for ``JSONATA`` rules (usually ``migrationRules`` between major versions), on
jsonata-python (the ``rules`` extra)."""

from __future__ import annotations

import threading
from typing import Any

from serdes.rules.engines import require


def _plain(value: Any) -> Any:
    """jsonata-python's sequences and maps as plain lists and dicts."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


class JsonataProgram:
    """One JSONata expression, parsed once (``ValueError`` when it does not parse)."""

    def __init__(self, expr: str) -> None:
        jsonata = require("jsonata", "jsonata-python", "JSONATA")
        try:
            self._expr = jsonata.Jsonata(expr)
        except Exception as e:
            raise ValueError(f"invalid JSONata expression {expr!r}: {e}") from e
        self._lock = threading.Lock()  # an evaluation keeps state in the expression object

    def evaluate(self, value: Any) -> Any:
        with self._lock:
            return _plain(self._expr.evaluate(value))
