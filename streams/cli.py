"""``schemakit streams run | describe | status``: run, draw and watch a streams application.

``run module:app``: ``module:app`` names a ``StreamsApp`` (or a zero-argument callable returning one)
importable from the current directory. The app runs until SIGTERM/SIGINT, then commits and closes; progress
is logged (records processed, restore progress, task assignment) at ``--log-level`` (default INFO).

``describe module:app --format text|mermaid|dot``: the app's topology as Kafka Streams' ``describe()`` text or
as a diagram (``streams/topology_render.py``); ``module:app`` may also name a ``Topology`` or a
``StreamsBuilder``, which starts nothing and opens no log.

``status --url http://instance``: the application's instances and tasks, from the query servers
(``streams/status.py``); ``--output json`` for scripts.

``schemakit/cli.py`` wires ``add_subcommand`` into ``schemakit``; ``python -m streams run module:app`` also works.
"""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import os
import sys
from typing import Any

__all__ = ["add_subcommand", "describe", "load_app", "load_topology", "main", "run", "run_app", "status"]

# streams.topology_render.FORMATS, repeated so that building the parser imports no topology code (a test pins it)
FORMATS = ("text", "mermaid", "dot")


def add_subcommand(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``streams run|describe|status`` to an ``argparse`` sub-parser collection; dispatch with ``run(args)``."""
    streams = subparsers.add_parser("streams", help="run, describe and watch Kafka-Streams-style applications")
    sub = streams.add_subparsers(dest="streams_command", required=True)
    r = sub.add_parser("run", help="run a StreamsApp until SIGTERM/SIGINT")
    r.add_argument("app", metavar="module:app", help="the StreamsApp (or a factory returning one), e.g. billing:app")
    r.add_argument(
        "--log-level",
        default=os.environ.get("SCHEMAKIT_LOG_LEVEL", "INFO"),
        help="DEBUG, INFO, WARNING or ERROR [env SCHEMAKIT_LOG_LEVEL]",
    )
    r.set_defaults(func=run_app)
    d = sub.add_parser("describe", help="print a topology: Kafka's describe() text, or a Mermaid or Graphviz diagram")
    d.add_argument(
        "app",
        metavar="module:app",
        help="a StreamsApp, Topology or StreamsBuilder (or a factory returning one), e.g. billing:app",
    )
    d.add_argument(
        "--format",
        "-f",
        choices=FORMATS,
        default="text",
        help="text (Kafka's describe(), the default), mermaid (a flowchart) or dot (Graphviz)",
    )
    d.set_defaults(func=describe)
    s = sub.add_parser("status", help="instances, tasks, lags and states of a running application")
    s.add_argument("--url", required=True, help="the query server of any instance (its application_server)")
    s.add_argument(
        "--output", "-o", choices=("table", "json"), default="table", help="table (for people) or json (for scripts)"
    )
    s.add_argument("--timeout", type=float, default=5.0, help="seconds to wait for each instance (default 5)")
    s.set_defaults(func=status)
    return streams


def _import(spec: str) -> Any:
    """The object ``module:attribute`` names, importable from the current directory."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"expected module:app (e.g. billing:app), got {spec!r}")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    module = importlib.import_module(module_name)
    try:
        return getattr(module, attr)
    except AttributeError:
        raise ValueError(f"module {module_name!r} has no attribute {attr!r}") from None


def load_app(spec: str) -> Any:
    """Import ``module:attribute`` and return the StreamsApp it names (calling a factory if needed)."""
    from streams.app import StreamsApp

    obj = _import(spec)
    if not isinstance(obj, StreamsApp) and callable(obj):
        obj = obj()
    if not isinstance(obj, StreamsApp):
        raise ValueError(f"{spec} is a {type(obj).__name__}, not a StreamsApp (or a function returning one)")
    return obj


def load_topology(spec: str) -> Any:
    """Import ``module:attribute`` and return the ``Topology`` it names: a StreamsApp's, a StreamsBuilder's
    (built), or the Topology itself; a factory returning any of them is called."""
    from streams.app import StreamsApp
    from streams.builder import StreamsBuilder
    from streams.topology import Topology

    kinds = (StreamsApp, StreamsBuilder, Topology)
    obj = _import(spec)
    if not isinstance(obj, kinds) and callable(obj) and not isinstance(obj, type):
        obj = obj()
    if isinstance(obj, StreamsApp):
        return obj.topology
    if isinstance(obj, StreamsBuilder):
        return obj.build()
    if isinstance(obj, Topology):
        return obj
    raise ValueError(
        f"{spec} is a {type(obj).__name__}, not a StreamsApp, Topology or StreamsBuilder (or a function returning one)"
    )


def run(args: argparse.Namespace) -> int:
    """Run the ``streams`` sub-command ``args`` names."""
    return int(args.func(args))


def run_app(args: argparse.Namespace) -> int:
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


def describe(args: argparse.Namespace) -> int:
    from streams.errors import TopologyError
    from streams.topology_render import render

    try:
        topology = load_topology(args.app)
        text = render(topology.description(), args.format)
    except (ImportError, ValueError, TopologyError) as exc:
        print(f"schemakit streams describe: {exc}", file=sys.stderr)
        return 2
    sys.stdout.write(text)
    return 0


def status(args: argparse.Namespace) -> int:
    from streams.status import StatusError, application_status, status_table

    try:
        found = application_status(args.url, args.timeout)
    except StatusError as exc:
        print(f"schemakit streams status: {exc}", file=sys.stderr)
        return 1
    if args.output == "json":
        sys.stdout.write(json.dumps(found, indent=2) + "\n")
    else:
        sys.stdout.write(status_table(found) + "\n")
    return 0 if all("error" not in inst for inst in found["instances"]) else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m streams")
    add_subcommand(parser.add_subparsers(dest="command", required=True))
    # ``python -m streams run x:app`` and ``python -m streams streams run x:app`` both work (describe, status too).
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in ("run", "describe", "status"):
        argv = ["streams", *argv]
    args = parser.parse_args(argv)
    return int(args.func(args))
