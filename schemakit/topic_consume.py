"""``schemakit topic consume TOPIC``: records printed as JSON lines (``--output table`` for people), keys and values
decoded through the registry (``topic_decode``).

Where reading starts: ``--offset N`` (every partition read, or the one ``--partition`` names), ``--from-beginning``,
or a ``--group``'s committed offsets; otherwise the beginning, or the end with ``--follow``. Without ``--follow``
the command stops once it has read up to the end offsets it saw when it started; with it, at Ctrl-C (or
``--max-messages``). A group's offsets are committed after the records are printed.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import sys
import time
from typing import TYPE_CHECKING, Any, TextIO

from schemakit.connection import UsageError, add_connection_options, connect
from schemakit.topic_log import missing_topic, open_topic_log

if TYPE_CHECKING:
    from schemakit.topic_decode import RecordDecoder
    from streams.log import Consumer, Log, Record, TopicPartition

_BATCH = 500
_WAIT = 1.0  # seconds a poll waits while records are still expected
_SETTLE = 0.2  # once at the end offsets: a poll this long that brings nothing ends the read
_KEY_WIDTH = 24


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("topic")
    start = p.add_mutually_exclusive_group()
    start.add_argument("--from-beginning", action="store_true", help="start at the oldest record (with --follow)")
    start.add_argument("--offset", type=int, metavar="N", help="start at offset N (of --partition, else of each)")
    p.add_argument("--partition", type=int, metavar="P", help="read this partition only")
    p.add_argument("--max-messages", "-n", type=int, metavar="N", help="stop after N records")
    p.add_argument("--group", "-g", help="read as this consumer group: start at its committed offsets, commit")
    p.add_argument("--follow", "-F", action="store_true", help="keep waiting for new records (until Ctrl-C)")
    p.add_argument(
        "--output",
        "-o",
        choices=("json", "table"),
        default="json",
        help="json (one JSON line a record, the default) or table (for people)",
    )
    add_connection_options(p, prefix="registry-", url_flag="--registry", role="schema")
    p.add_argument("--quiet", "-q", action="store_true", help="no summary line at the end")


class _Printer:
    """Writes each record in the chosen form."""

    def __init__(self, out: TextIO, decoder: RecordDecoder, table: bool) -> None:
        self.out = out
        self.decoder = decoder
        self.table = table
        self.undecodable = 0
        if table:
            out.write(f"{'partition':>9}  {'offset':>8}  {'timestamp':<23}  {'key':<{_KEY_WIDTH}}  value\n")

    def record(self, record: Record) -> None:
        shown = self.decoder.shown(record)
        reasons: dict[str, str] | None = shown.get("undecodable")
        if reasons:
            self.undecodable += 1
        self.out.write(self._row(shown, reasons or {}) if self.table else self.decoder.dumps(shown) + "\n")

    def _row(self, shown: dict[str, Any], reasons: dict[str, str]) -> str:
        def cell(part: str) -> str:
            if part in reasons:
                return f"<undecodable: {reasons[part]}>"
            value = shown[part]
            return value if isinstance(value, str) else self.decoder.dumps(value)

        when = dt.datetime.fromtimestamp(shown["timestamp"] / 1000, dt.UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
        key = cell("key")
        if len(key) > _KEY_WIDTH:
            key = key[: _KEY_WIDTH - 1] + "…"
        return f"{shown['partition']:>9}  {shown['offset']:>8}  {when:<23}  {key:<{_KEY_WIDTH}}  {cell('value')}\n"


def _start(args: argparse.Namespace, log: Log, consumer: Consumer, tps: list[TopicPartition]) -> None:
    from streams.log import OFFSET_BEGINNING, OFFSET_END

    if args.group is not None and args.partition is None:
        if args.offset is not None:
            raise UsageError("--offset with --group needs --partition (a group's members share the partitions)")
        # Members start at the group's committed offsets, else at the beginning.
        consumer.subscribe([args.topic])
        return
    default = OFFSET_END if args.follow and not args.from_beginning else OFFSET_BEGINNING
    starts = {tp: default if args.offset is None else args.offset for tp in tps}
    if args.group is not None and args.offset is None and not args.from_beginning:
        committed = consumer.committed(tps)
        starts = {tp: default if committed[tp] is None else committed[tp] for tp in tps}
    consumer.assign(starts)


def _caught_up(consumer: Consumer, ends: dict[int, int] | None) -> bool:
    """Every assigned partition is at the end offset seen at the start. (The test broker may report an end offset
    below the last record's: the empty poll that must follow catching up keeps the read going until nothing more
    arrives.)"""
    if ends is None:
        return False
    assigned = consumer.assignment()
    return bool(assigned) and all(consumer.position(tp) >= ends.get(tp.partition, 0) for tp in assigned)


def cmd_consume(args: argparse.Namespace) -> int:
    from streams.log import TopicPartition

    if args.max_messages is not None and args.max_messages < 1:
        raise UsageError("--max-messages must be at least 1")
    if args.offset is not None and args.offset < 0:
        raise UsageError("--offset must be >= 0")
    client = connect(args, prefix="registry_", url_flag="--registry") if args.registry_url else None
    try:
        with open_topic_log(args) as log:
            info = log.describe_topic(args.topic)
            if info is None:
                raise missing_topic(log, args.topic)
            if args.partition is not None and not 0 <= args.partition < info.partitions:
                raise UsageError(f"partition {args.partition} does not exist ({args.topic!r} has {info.partitions})")
            selected = [args.partition] if args.partition is not None else list(range(info.partitions))
            tps = [TopicPartition(args.topic, p) for p in selected]
            from schemakit.topic_decode import RecordDecoder  # serdes loads when a command reads, not at --help

            printer = _Printer(sys.stdout, RecordDecoder(client), args.output == "table")
            with log.consumer(args.group, client_id="schemakit-topic-consume") as consumer:
                return consume(args, log, consumer, tps, printer)
    finally:
        if client is not None:
            client.close()


def consume(
    args: argparse.Namespace, log: Log, consumer: Consumer, tps: list[TopicPartition], printer: _Printer
) -> int:
    """The read loop: print, commit (with a group), stop at the end offsets seen at the start (unless following)."""
    from streams.log import TopicPartition

    _start(args, log, consumer, tps)
    ends = None if args.follow else log.end_offsets(args.topic)
    wanted = args.max_messages
    started = time.monotonic()
    count = 0
    interrupted = False
    caught_up = _caught_up(consumer, ends)
    try:
        while wanted is None or count < wanted:
            batch = _BATCH if wanted is None else min(_BATCH, wanted - count)
            records = consumer.poll(_SETTLE if caught_up else _WAIT, batch)
            if not records and caught_up:
                break  # at the end offsets, and nothing more came
            for record in records:
                printer.record(record)
            count += len(records)
            if records:
                printer.out.flush()
                if args.group is not None:  # what was printed, and no more (--max-messages may stop mid-poll)
                    consumer.commit({TopicPartition(r.topic, r.partition): r.offset + 1 for r in records})
            if len(records) < batch:  # a full batch is no sign of the end: skip the assignment look-up then
                caught_up = _caught_up(consumer, ends)
    except KeyboardInterrupt:
        interrupted = True
    except BrokenPipeError:  # the reader went away (| head): stop quietly, and let the exit's flush go nowhere
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    if not args.quiet:
        elapsed = time.monotonic() - started
        bad = f" ({printer.undecodable} undecodable)" if printer.undecodable else ""
        sys.stderr.write(
            f"{'interrupted: ' if interrupted else ''}consumed {count} record{'s' if count != 1 else ''} "
            f"from {args.topic} in {elapsed:.2f}s{bad}\n"
        )
    return 0
