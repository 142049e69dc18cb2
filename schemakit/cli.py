"""``schemakit`` COMMAND …: the one console script.

``serve`` (and ``hash-password``) is handed whole to ``registry/cli.py`` before anything else is parsed or
imported, so the bare install starts the registry with nothing of the admin tools loaded. The other commands
build their parsers here (argparse only) and import what they use when they run.
"""

from __future__ import annotations

import argparse
import sys

from schemakit import compat_cmd, registry_cmd, topic_cmd

USAGE_ERROR = 2


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="schemakit",
        description="schemakit: a schema registry, its admin client and offline compatibility checks",
        epilog="`schemakit COMMAND --help` describes each command.",
    )
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    # Listed for --help only: main() hands `schemakit serve …` to registry/cli.py, which owns its options.
    sub.add_parser(
        "serve", help="run the schema registry (Confluent REST API); `schemakit serve --help`", add_help=False
    )
    sub.add_parser("hash-password", help="hash a password for the registry's --users-file", add_help=False)
    registry_cmd.add_parser(sub)
    compat_cmd.add_parser(sub)
    topic_cmd.add_parser(sub)
    from streams.cli import add_subcommand  # `schemakit streams run / describe / status`

    add_subcommand(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    if args_list[:1] in (["serve"], ["hash-password"]):
        from registry.cli import main as serve_main

        return serve_main(args_list)
    args = build_parser().parse_args(args_list)
    if args.command == "streams":
        from streams.cli import run

        return run(args)
    return int(args.handler(args))
