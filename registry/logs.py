"""The registry's log lines: ``text`` (one readable line) or ``json`` (one JSON object per line, for log shippers).

A JSON line has ``time`` (UTC, ISO 8601 with milliseconds), ``level``, ``logger`` and ``message``, then every
extra field the call passed (``log.info("...", extra={"subject": s})``), then ``exception`` (the formatted
traceback) when there is one. Values that are not JSON types are written as their ``str``.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any

FORMATS = ("text", "json")
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
#: attributes every LogRecord has; anything else on a record came from ``extra``
_STANDARD = frozenset(logging.LogRecord("", 0, "", 0, "", None, None).__dict__) | {"message", "asctime"}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC)
            .isoformat(timespec="milliseconds")
            .replace("+00:00", "Z"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in record.__dict__.items():
            if key not in _STANDARD and key not in out and not key.startswith("_"):
                out[key] = value
        if record.exc_info:
            out["exception"] = self.formatException(record.exc_info)
        if record.stack_info:
            out["stack"] = self.formatStack(record.stack_info)
        return json.dumps(out, ensure_ascii=False, default=str)


def configure(level: str = "INFO", fmt: str = "text") -> None:
    """Log to stderr at ``level`` in ``fmt`` (``text`` or ``json``); replaces any handler configured before."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown log format {fmt!r}: expected one of {', '.join(FORMATS)}")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else logging.Formatter(TEXT_FORMAT))
    logging.basicConfig(level=getattr(logging, level.upper(), logging.INFO), handlers=[handler], force=True)
