"""``schemakit topic …``: topics of any log (the embedded SQLite one of ``schemakit serve``, or Kafka): list, create,
describe, delete, and a console producer and consumer that encode and decode through a schema registry.

The log is opened with ``streams.log.open_log`` (its URL syntax, its Kafka options and credentials), the same
as ``schemakit serve`` opens its own. Exit status: 0 done, 2 an error (one line on stderr, naming what was wrong).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from schemakit.connection import UsageError
from schemakit.output import add_output_options, guarded, key_values, print_json, table
from schemakit.schema_files import SchemaFileError
from schemakit.topic_log import add_log_options, key_value_pairs, missing_topic, open_topic_log

if TYPE_CHECKING:
    pass

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
        p.set_defaults(handler=guarded(handler, lambda a: f"topic {a.topic_command}", _expected_errors))
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


def _expected_errors() -> tuple[type[Exception], ...]:
    """What a topic command reports as one line: the log's, the registry's and the codecs' errors, bad
    arguments, unreadable files, and ``ValueError`` (the log's argument checks: a bad topic name, a partition
    count below 1)."""
    from serdes import RegistryError, SerializationError
    from streams.log import LogError

    return (LogError, RegistryError, SerializationError, UsageError, SchemaFileError, ValueError)


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
    config = key_value_pairs(args.config, "--config")
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
