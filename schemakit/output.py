"""What commands print: ``--output json`` (one JSON document on stdout, for scripts) or ``table`` (for people)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from typing import Any

FORMATS = ("table", "json")


def add_output_options(p: argparse.ArgumentParser, *, suppress: bool = False) -> None:
    p.add_argument(
        "--output",
        "-o",
        choices=FORMATS,
        default=argparse.SUPPRESS if suppress else "table",
        help="table (for people, the default) or json (one JSON document, for scripts)",
    )
    p.add_argument(
        "--quiet",
        "-q",
        action="store_true",
        default=argparse.SUPPRESS if suppress else False,
        help="no progress line and no summary",
    )


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def table(rows: Sequence[Sequence[Any]], header: Sequence[str]) -> str:
    """Columns padded to their widest cell; the last column is not padded."""
    cells = [[str(c) for c in header], *([("" if c is None else str(c)) for c in row] for row in rows)]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    lines = [
        "  ".join(c.ljust(w) for c, w in zip(r[:-1], widths, strict=False)) + ("  " if len(r) > 1 else "") + r[-1]
        for r in cells
    ]
    return "\n".join(line.rstrip() for line in lines)


def pretty_schema(schema_type: str, text: str) -> str:
    """A schema for reading: JSON (Avro, JSON Schema) indented where a line would be too long, so a field is
    one line and a diff shows the fields that changed; Protobuf as stored (already one line a field)."""
    if schema_type in ("AVRO", "JSON"):
        try:
            return pretty_json(json.loads(text))
        except ValueError:
            return text
    return text.rstrip("\n")


def pretty_json(value: Any, width: int = 100, indent: int = 0) -> str:
    """JSON laid out for reading and diffing: the top object, every list of objects (Avro ``fields``, JSON
    Schema ``oneOf``) and every object of objects (JSON Schema ``properties``, ``$defs``) one member a line,
    anything else on one line when it fits in ``width``."""
    flat = json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
    if not isinstance(value, dict | list) or not value:
        return flat
    members = value.values() if isinstance(value, dict) else value
    one_a_line = indent == 0 or all(isinstance(v, dict) for v in members)
    if not one_a_line and indent + len(flat) <= width:
        return flat
    pad = " " * (indent + 2)
    if isinstance(value, dict):
        items = [
            f"{pad}{json.dumps(k, ensure_ascii=False)}: {pretty_json(v, width, indent + 2)}" for k, v in value.items()
        ]
        return "{\n" + ",\n".join(items) + "\n" + " " * indent + "}"
    items = [pad + pretty_json(v, width, indent + 2) for v in value]
    return "[\n" + ",\n".join(items) + "\n" + " " * indent + "]"


def key_values(rows: Sequence[tuple[str, Any]]) -> str:
    """``key  value`` lines, the values aligned."""
    width = max((len(k) for k, _v in rows), default=0)
    return "\n".join(f"{k.ljust(width)}  {v}".rstrip() for k, v in rows)


def error(command: str, message: str) -> None:
    sys.stderr.write(f"schemakit {command}: {message}\n")


def guarded(
    handler: Callable[[argparse.Namespace], int],
    command_of: Callable[[argparse.Namespace], str],
    expected: Callable[[], tuple[type[BaseException], ...]],
) -> Callable[[argparse.Namespace], int]:
    """``handler`` as a command: an ``expected()`` failure (or Ctrl-C) becomes one line on stderr naming
    ``command_of(args)`` and exit status 2, never a traceback. ``expected`` is called only on a failure, so a
    command group need not import the packages whose errors it names (serdes, the log) before a command does."""

    def run(args: argparse.Namespace) -> int:
        try:
            return int(handler(args))
        except KeyboardInterrupt:
            error(command_of(args), "interrupted")
        except expected() as e:  # evaluated only when something was raised
            error(command_of(args), str(e))
        return 2

    return run
