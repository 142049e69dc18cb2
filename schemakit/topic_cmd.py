"""``schemakit topic …``: topics of any log (the embedded SQLite one of ``schemakit serve``, or Kafka): list, create,
describe, delete, and a console producer and consumer that encode and decode through a schema registry.

The log is opened with ``streams.log.open_log`` (its URL syntax, its Kafka options and credentials), the same
as ``schemakit serve`` opens its own. Exit status: 0 done, 2 an error (one line on stderr, naming what was wrong).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from schemakit.connection import UsageError
from schemakit.output import add_output_options, error, key_values, print_json, table
from schemakit.schema_files import SchemaFileError

if TYPE_CHECKING:
    from streams.log import Log

#: what ``schemakit serve`` (``make run``) stores its data in when given no --log
DEFAULT_LOG = "sqlite:///./data"
LOG_ENV = "SCHEMAKIT_LOG"

EPILOG = """\
examples:
  schemakit topic list                                        # the embedded log of `make run` (./data)
  schemakit topic create words --partitions 3 --config cleanup.policy=compact
  schemakit topic describe words --log kafka://localhost:9092
  echo '{"key": "k1", "value": {"id": 1}}' | schemakit topic produce orders \\
      --registry http://localhost:8081 --value-format avro --value-schema order.avsc --auto-register
  schemakit topic consume orders --registry http://localhost:8081 --max-messages 10
  schemakit topic consume orders --follow --group audit -o table

--log takes sqlite:///DIR (default sqlite:///./data, [env SCHEMAKIT_LOG]) or kafka://[user:password@]host:port
[,host:port][?librdkafka.setting=value]; -X KEY=VALUE and --log-config FILE add librdkafka settings (SASL, TLS).
Exit status: 0 done, 2 an error."""


def add_parser(sub: Any) -> None:
    top = sub.add_parser(
        "topic",
        help="list, create, describe and delete topics; produce and consume records (with registry encoding)",
        description="Topics of a log (the embedded SQLite log or Kafka), and a console producer and consumer that "
        "encode and decode Avro, JSON Schema and Protobuf through a schema registry.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_log_options(top)
    cmds = top.add_subparsers(dest="topic_command", required=True, metavar="COMMAND")

    def command(name: str, help: str, handler: Any) -> argparse.ArgumentParser:
        p = cmds.add_parser(name, help=help, description=help[:1].upper() + help[1:] + ".")
        add_log_options(p, suppress=True)
        p.set_defaults(handler=_guarded(handler))
        return p

    p = command("list", "list the topics", cmd_list)
    add_output_options(p)

    p = command("create", "create a topic", cmd_create)
    p.add_argument("topic")
    p.add_argument("--partitions", "-p", type=int, default=1, help="number of partitions (default 1)")
    p.add_argument(
        "--config",
        "-c",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a topic setting (cleanup.policy=compact, retention.ms=…, max.message.bytes=…); repeatable",
    )
    add_output_options(p)

    p = command("describe", "show a topic's partitions, offsets and settings", cmd_describe)
    p.add_argument("topic")
    add_output_options(p)

    p = command("delete", "delete a topic and its records", cmd_delete)
    p.add_argument("topic")

    from schemakit import topic_consume, topic_produce

    topic_produce.add_arguments(command("produce", "write records read as JSON lines", topic_produce.cmd_produce))
    topic_consume.add_arguments(command("consume", "print records as JSON lines, decoded", topic_consume.cmd_consume))


def add_log_options(p: argparse.ArgumentParser, *, suppress: bool = False) -> None:
    """``--log``, ``-X``, ``--log-config``, ``--timeout``: before or after the subcommand (as ``registry``'s)."""
    g = p.add_argument_group("the log")

    def default(value: Any) -> Any:
        return argparse.SUPPRESS if suppress else value

    g.add_argument(
        "--log",
        metavar="URL",
        default=default(os.environ.get(LOG_ENV, DEFAULT_LOG)),
        help=f"sqlite:///DIR or kafka://host:port[,host:port][?setting=value] (default {DEFAULT_LOG}) [env {LOG_ENV}]",
    )
    g.add_argument(
        "-X",
        "--log-option",
        dest="log_options",
        action="append",
        metavar="KEY=VALUE",
        default=default([]),
        help="a librdkafka setting for a kafka:// log (sasl.mechanism=SCRAM-SHA-512, ssl.ca.location=…); repeatable",
    )
    g.add_argument(
        "--log-config",
        type=Path,
        metavar="FILE",
        default=default(None),
        help="librdkafka settings, one KEY=VALUE a line (# comments), as a Kafka client.properties file",
    )
    g.add_argument(
        "--timeout",
        type=float,
        metavar="SECONDS",
        default=default(30.0),
        help="seconds a Kafka admin call or a registry request may take (default 30)",
    )


def _pairs(specs: list[str], option: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for spec in specs:
        key, sep, value = spec.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"{option} takes KEY=VALUE, got {spec!r}")
        out[key.strip()] = value.strip()
    return out


def _log_config_file(path: Path | None) -> dict[str, str]:
    if path is None:
        return {}
    try:
        lines = path.read_text().splitlines()
    except OSError as e:
        raise UsageError(f"--log-config {path}: {e.strerror or e}") from None
    specs = [line.strip() for line in lines if line.strip() and not line.lstrip().startswith(("#", "!"))]
    return _pairs(specs, f"--log-config {path}")


def open_topic_log(args: argparse.Namespace) -> Log:
    """The log ``--log`` names, through ``streams.log.open_log`` (the one parser of log URLs), with the
    librdkafka settings of ``--log-config`` and ``-X`` (which win) for a Kafka log."""
    from streams.log import open_log

    options: dict[str, Any] = {**_log_config_file(args.log_config), **_pairs(args.log_options, "-X")}
    url = args.log
    # Only the Kafka backend takes client settings and an admin timeout; SQLite answers from its file.
    if url.partition("://")[0] == "kafka":
        options["timeout"] = args.timeout
    elif options:
        raise UsageError(f"-X and --log-config are settings of a kafka:// log, not of {url!r}")
    try:
        return open_log(url, **options)
    except ValueError as e:
        raise UsageError(str(e)) from None


def _guarded(handler: Any) -> Any:
    """Run a command; every expected failure becomes one line on stderr and exit status 2, never a traceback."""

    def run(args: argparse.Namespace) -> int:
        from serdes import RegistryError, SerializationError
        from streams.log import LogError

        name = f"topic {args.topic_command}"
        try:
            return int(handler(args))
        except (LogError, RegistryError, SerializationError, UsageError, SchemaFileError) as e:
            error(name, str(e))
        except ValueError as e:  # the log's argument checks: a bad topic name, a partition count below 1
            error(name, str(e))
        except KeyboardInterrupt:
            error(name, "interrupted")
        return 2

    return run


def missing_topic(log: Log, topic: str) -> Exception:
    from streams.log import UnknownTopicError

    return UnknownTopicError(f"topic {topic!r} does not exist in {log.safe_url}")


# ---- commands ----------------------------------------------------------------------------------------------


def cmd_list(args: argparse.Namespace) -> int:
    with open_topic_log(args) as log:
        names = log.list_topics()
    if args.output == "json":
        print_json(names)
    else:
        for name in names:
            print(name)
    return 0


def cmd_create(args: argparse.Namespace) -> int:
    config = _pairs(args.config, "--config")
    with open_topic_log(args) as log:
        info = log.create_topic(args.topic, args.partitions, config=config or None)
    if args.output == "json":
        print_json({"topic": info.name, "partitions": info.partitions, "config": info.config})
    elif not args.quiet:
        print(f"created topic {info.name} ({info.partitions} partition{'s' if info.partitions != 1 else ''})")
    return 0


def cmd_describe(args: argparse.Namespace) -> int:
    with open_topic_log(args) as log:
        info = log.describe_topic(args.topic)
        if info is None:
            raise missing_topic(log, args.topic)
        starts, ends = log.start_offsets(args.topic), log.end_offsets(args.topic)
    partitions = [
        {"partition": p, "start_offset": starts.get(p), "end_offset": ends.get(p)} for p in range(info.partitions)
    ]
    if args.output == "json":
        print_json(
            {"topic": info.name, "partitions": partitions, "compacted": info.compacted, "config": dict(info.config)}
        )
        return 0
    print(key_values([("topic", info.name), ("partitions", info.partitions), ("compacted", info.compacted)]))
    print()
    print(
        table([(p["partition"], p["start_offset"], p["end_offset"]) for p in partitions], ("partition", "start", "end"))
    )
    if info.config:
        print()
        print(key_values(sorted(info.config.items())))
    return 0


def cmd_delete(args: argparse.Namespace) -> int:
    with open_topic_log(args) as log:
        if log.describe_topic(args.topic) is None:
            raise missing_topic(log, args.topic)
        log.delete_topic(args.topic)
    print(f"deleted topic {args.topic}")
    return 0
