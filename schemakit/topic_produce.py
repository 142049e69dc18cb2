"""``schemakit topic produce TOPIC``: records read as JSON lines (stdin or ``--file``) written to a topic.

A line is ``{"key": …, "value": …, "headers": {"name": "text"}, "partition": n, "timestamp": ms}`` (every member
optional), or with ``--value-only`` the value itself. Keys and values are encoded by ``topic_encode``. A line that
cannot be read or encoded stops the command with its line number; the records before it are written.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import orjson

from schemakit.connection import UsageError, add_connection_options, connect
from schemakit.progress import progress_for
from schemakit.topic_encode import FORMATS, Encoder, FieldSpec, encoder_for
from schemakit.topic_log import missing_topic, open_topic_log

_MEMBERS = frozenset({"key", "value", "headers", "partition", "timestamp"})
_FLUSH_EVERY = 10_000  # records held by a log that buffers until flush (SQLite), bounded


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("topic")
    p.add_argument("--file", "-f", type=Path, help="read the JSON lines from this file (default: stdin)")
    p.add_argument("--value-only", action="store_true", help="each line is the value itself (no key, no headers)")
    g = p.add_argument_group("encoding through a schema registry")
    for field in ("value", "key"):
        g.add_argument(
            f"--{field}-format",
            choices=tuple(FORMATS),
            help=f"encode the {field} with the registry (default: a JSON string as its text, other JSON as JSON text)",
        )
    g.add_argument("--subject", help="the value's subject (default TOPIC-value); its latest schema is used")
    g.add_argument("--value-schema", type=Path, metavar="FILE", help="write with this schema (.avsc, .json, .proto)")
    g.add_argument("--key-subject", help="the key's subject (default TOPIC-key)")
    g.add_argument("--key-schema", type=Path, metavar="FILE", help="write keys with this schema")
    g.add_argument(
        "--auto-register",
        action="store_true",
        help="register --value-schema / --key-schema under the subject when it is not there yet",
    )
    add_connection_options(p, prefix="registry-", url_flag="--registry", role="schema")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress line and no summary")


def _lines(stream: IO[bytes]) -> Iterator[tuple[int, bytes]]:
    for number, line in enumerate(stream, 1):
        line = line.strip()
        if line:
            yield number, line


class _Stop(Exception):
    """A line that cannot be written: the command stops there."""


def _record(number: int, line: bytes, value_only: bool) -> dict[str, Any]:
    try:
        parsed = orjson.loads(line)
    except orjson.JSONDecodeError as e:
        raise _Stop(f"line {number}: not JSON ({e})") from None
    if value_only:
        return {"value": parsed}
    if not isinstance(parsed, dict):
        raise _Stop(f"line {number}: expected an object with key, value, headers, partition (or pass --value-only)")
    unknown = sorted(set(parsed) - _MEMBERS)
    if unknown:
        raise _Stop(f"line {number}: unknown member {unknown[0]!r} (known: {', '.join(sorted(_MEMBERS))})")
    return parsed


def _headers(number: int, given: Any) -> list[tuple[str, bytes | None]] | None:
    if given is None:
        return None
    if not isinstance(given, dict):
        raise _Stop(f"line {number}: headers must be an object of name: text")
    out: list[tuple[str, bytes | None]] = []
    for name, value in given.items():
        if value is not None and not isinstance(value, str):
            raise _Stop(f"line {number}: header {name!r} must be text or null")
        out.append((name, None if value is None else value.encode("utf-8")))
    return out


def _int_member(number: int, record: dict[str, Any], name: str) -> int | None:
    value = record.get(name)
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
        raise _Stop(f"line {number}: {name} must be an integer >= 0, got {value!r}")
    return value


def _encode(number: int, part: str, encode: Encoder, value: Any, topic: str) -> bytes | None:
    from serdes import SerializationError

    try:
        return encode(value, topic)
    except (SerializationError, TypeError, ValueError) as e:
        raise _Stop(f"line {number}: {part}: {e}") from None


def cmd_produce(args: argparse.Namespace) -> int:
    if args.value_only and (args.key_format or args.key_subject or args.key_schema):
        raise UsageError("--value-only lines carry no key: drop the --key-* options")
    client = connect(args, prefix="registry_", url_flag="--registry") if args.registry_url else None
    try:
        value_spec = FieldSpec("value", args.value_format, args.subject, args.value_schema)
        key_spec = FieldSpec("key", args.key_format, args.key_subject, args.key_schema)
        with open_topic_log(args) as log:
            info = log.describe_topic(args.topic)
            if info is None:
                raise missing_topic(log, args.topic)
            encode_value = encoder_for(value_spec, client, args.topic, args.auto_register)
            encode_key = encoder_for(key_spec, client, args.topic, args.auto_register)
            if args.file is not None:
                try:
                    stream: IO[bytes] = args.file.open("rb")
                except OSError as e:
                    raise UsageError(f"--file {args.file}: {e.strerror or e}") from None
            else:
                stream = sys.stdin.buffer
            with stream, log.producer() as producer:
                return _produce(args, info.partitions, producer, stream, encode_key, encode_value)
    finally:
        if client is not None:
            client.close()


def _produce(
    args: argparse.Namespace,
    partitions: int,
    producer: Any,
    stream: IO[bytes],
    encode_key: Encoder,
    encode_value: Encoder,
) -> int:
    from schemakit.output import error

    topic = args.topic
    progress = progress_for(args.quiet)
    progress.start(f"producing to {topic}", 0)
    started = time.monotonic()
    count = size = 0
    failed: list[str] = []

    def delivered(md: Any, err: Any) -> None:
        if err is not None and not failed:
            failed.append(str(err))

    stopped: str | None = None
    try:
        for number, line in _lines(stream):
            record = _record(number, line, args.value_only)
            partition = _int_member(number, record, "partition")
            if partition is not None and partition >= partitions:
                raise _Stop(f"line {number}: partition {partition} does not exist ({topic!r} has {partitions})")
            key = _encode(number, "key", encode_key, record.get("key"), topic)
            value = _encode(number, "value", encode_value, record.get("value"), topic)
            producer.send(
                topic,
                value,
                key,
                partition=partition,
                headers=_headers(number, record.get("headers")),
                timestamp=_int_member(number, record, "timestamp"),
                on_delivery=delivered,
            )
            count += 1
            size += len(value or b"") + len(key or b"")
            progress.advance()
            if count % _FLUSH_EVERY == 0:
                producer.flush()
    except _Stop as e:
        stopped = str(e)
    producer.flush()
    progress.finish()
    elapsed = time.monotonic() - started
    if failed:
        error("topic produce", f"a record was not delivered: {failed[0]}")
        return 2
    if stopped is not None:
        error("topic produce", f"{stopped}; stopped there, {count} record{'s' if count != 1 else ''} before it written")
        return 2
    if not args.quiet:
        rate = count / elapsed if elapsed > 0 else 0.0
        sys.stderr.write(
            f"produced {count} record{'s' if count != 1 else ''} ({_size(size)}) to {topic} in {elapsed:.2f}s, "
            f"{rate:,.0f} records/s\n"
        )
    return 0


def _size(n: int) -> str:
    if n < 1024:
        return f"{n} B"
    return f"{n / 1024:.1f} KiB" if n < 1024 * 1024 else f"{n / (1024 * 1024):.1f} MiB"
