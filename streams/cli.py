"""``schemakit streams run module:app``: run a streams application from the command line.

``module:app`` names a ``StreamsApp`` (or a zero-argument callable returning one) importable from the
current directory. The app runs until SIGTERM/SIGINT, then commits and closes; progress is logged
(records processed, restore progress, task assignment) at ``--log-level`` (default INFO).
``schemakit/cli.py`` wires ``add_subcommand`` into ``schemakit``; ``python -m streams run module:app`` also works.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
from typing import Any

__all__ = ["add_subcommand", "load_app", "main", "run"]


def add_subcommand(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``streams run`` to an ``argparse`` sub-parser collection; dispatch with ``run(args)``."""
    streams = subparsers.add_parser("streams", help="run Kafka-Streams-style applications")
    sub = streams.add_subparsers(dest="streams_command", required=True)
    r = sub.add_parser("run", help="run a StreamsApp until SIGTERM/SIGINT")
    r.add_argument("app", metavar="module:app", help="the StreamsApp (or a factory returning one), e.g. billing:app")
    r.add_argument(
        "--log-level",
        default=os.environ.get("SCHEMAKIT_LOG_LEVEL", "INFO"),
        help="DEBUG, INFO, WARNING or ERROR [env SCHEMAKIT_LOG_LEVEL]",
    )
    r.set_defaults(func=run)
    return streams


def load_app(spec: str) -> Any:
    """Import ``module:attribute`` and return the StreamsApp it names (calling a factory if needed)."""
    from streams.app import StreamsApp

    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"expected module:app (e.g. billing:app), got {spec!r}")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    module = importlib.import_module(module_name)
    try:
        obj = getattr(module, attr)
    except AttributeError:
        raise ValueError(f"module {module_name!r} has no attribute {attr!r}") from None
    if not isinstance(obj, StreamsApp) and callable(obj):
        obj = obj()
    if not isinstance(obj, StreamsApp):
        raise ValueError(f"{spec} is a {type(obj).__name__}, not a StreamsApp (or a function returning one)")
    return obj


def run(args: argparse.Namespace) -> int:
    level = getattr(logging, str(args.log_level).upper(), None)
    if not isinstance(level, int):
        print(f"schemakit streams: unknown log level {args.log_level!r}", file=sys.stderr)
        return 2
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(threadName)s %(name)s: %(message)s")
    try:
        app = load_app(args.app)
    except (ImportError, ValueError) as exc:
        print(f"schemakit streams run: {exc}", file=sys.stderr)
        return 2
    from streams.errors import StreamsError
    from streams.log import LogError

    try:
        app.run()
    except (StreamsError, LogError) as exc:
        logging.getLogger("streams.cli").error("application %s failed: %s", app.application_id, exc)
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m streams")
    add_subcommand(parser.add_subparsers(dest="command", required=True))
    # ``python -m streams run x:app`` and ``python -m streams streams run x:app`` both work.
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "run":
        argv = ["streams", *argv]
    args = parser.parse_args(argv)
    return int(args.func(args))
