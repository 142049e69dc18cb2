"""The audit trail: one line per write and per denial, on its own logger (``registry.audit``) so it can be
routed and kept apart from the server's log.

    audit outcome=denied principal=bob mechanism=basic operation=Write resource=Subject:orders \
request="POST /subjects/orders/versions" client=10.0.0.7

``outcome`` is ``allowed`` (a write that passed authorization and is being executed), ``denied`` (403) or
``unauthenticated`` (401, with the reason). The fields are also attached to the record as ``audit`` (a dict) for
structured log formatters.
"""

from __future__ import annotations

import logging
from typing import Any

log = logging.getLogger("registry.audit")


def _quote(value: str) -> str:
    if value and all(c.isprintable() and c not in ' "=' for c in value):
        return value
    escaped = value.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in escaped) + '"'


def record(outcome: str, **fields: Any) -> None:
    """Log one audit line: ``outcome`` first, then the fields in the order given (None fields left out)."""
    kept = {k: str(v) for k, v in fields.items() if v is not None}
    line = " ".join([f"outcome={outcome}", *(f"{k}={_quote(v)}" for k, v in kept.items())])
    log.info("audit %s", line, extra={"audit": {"outcome": outcome, **kept}})
