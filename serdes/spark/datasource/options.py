"""The options of the ``schemakit`` Spark data source, read once on the driver into ``SourceOptions``.

The names and meanings are those of Spark's Kafka source (``spark-sql-kafka``), so a job moves between the two
by changing ``format("kafka")`` to ``format("schemakit")`` and ``kafka.bootstrap.servers`` to ``log``:
``subscribe`` / ``topic`` (comma-separated), ``startingOffsets`` / ``endingOffsets`` (``earliest``, ``latest`` or
JSON per partition with -2 for earliest and -1 for latest), ``failOnDataLoss``, ``maxOffsetsPerTrigger``,
``maxRecordsPerPartition``, ``includeHeaders``, and ``kafka.*`` passed to the Kafka client. ``log.*`` options are
keyword options of the log itself (``log.timeout``, ``log.busy_timeout``). Option names are case-insensitive
(Spark hands them over lower-cased).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from streams.log import OFFSET_BEGINNING, OFFSET_END

__all__ = ["EARLIEST", "LATEST", "OffsetSpec", "SinkOptions", "SourceOptions", "format_offsets"]

EARLIEST = "earliest"
LATEST = "latest"
#: ``earliest``, ``latest``, or per topic, per partition an offset (``OFFSET_BEGINNING`` -2, ``OFFSET_END`` -1).
OffsetSpec = str | dict[str, dict[int, int]]

#: How long a task waits for the records of its offset range before it takes the rest for gaps (see ``reading.py``).
DEFAULT_POLL_TIMEOUT_MS = 5000


def _flag(options: Mapping[str, str], name: str, default: bool) -> bool:
    raw = options.get(name.lower())
    if raw is None:
        return default
    text = str(raw).strip().lower()
    if text not in ("true", "false"):
        raise ValueError(f"schemakit data source: option {name} must be true or false, got {raw!r}")
    return text == "true"


def _positive(options: Mapping[str, str], name: str) -> int | None:
    raw = options.get(name.lower())
    if raw is None:
        return None
    try:
        value = int(str(raw).strip())
    except ValueError:
        value = 0
    if value < 1:
        raise ValueError(f"schemakit data source: option {name} must be a positive integer, got {raw!r}")
    return value


def _option_value(text: str) -> object:
    """A ``log.*`` option's value as the log's constructor takes it: an int or float where it reads as one."""
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def _parse_offsets(name: str, raw: str | None, default: str, topics: list[str], *, streaming: bool) -> OffsetSpec:
    if raw is None:
        return default
    text = str(raw).strip()
    if text.lower() in (EARLIEST, LATEST):
        spec = text.lower()
        if not streaming and name == "startingOffsets" and spec == LATEST:
            raise ValueError("schemakit data source: startingOffsets for batch queries cannot be latest")
        if name == "endingOffsets" and spec == EARLIEST:
            raise ValueError("schemakit data source: endingOffsets cannot be earliest")
        return spec
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError:
        parsed = None
    if not isinstance(parsed, dict) or not all(isinstance(v, dict) for v in parsed.values()):
        raise ValueError(
            f"schemakit data source: {name} must be earliest, latest or JSON such as "
            f'{{"orders":{{"0":23,"1":-2}}}} (-2 earliest, -1 latest), got {text!r}'
        )
    spec_json: dict[str, dict[int, int]] = {}
    for topic, partitions in parsed.items():
        if topic not in topics:
            raise ValueError(f"schemakit data source: {name} names topic {topic!r}, which is not read ({topics})")
        per_partition: dict[int, int] = {}
        for partition, offset in partitions.items():
            if not str(partition).isdigit() or isinstance(offset, bool) or not isinstance(offset, int):
                raise ValueError(f"schemakit data source: {name} for {topic}: bad entry {partition!r}: {offset!r}")
            if offset < OFFSET_BEGINNING or (name == "endingOffsets" and offset == OFFSET_BEGINNING):
                raise ValueError(
                    f"schemakit data source: {name} for {topic}[{partition}]: {offset} is not an offset "
                    f"(-2 earliest{'' if name == 'startingOffsets' else ' is not allowed'}, -1 latest)"
                )
            per_partition[int(partition)] = offset
        spec_json[topic] = per_partition
    return spec_json


def format_offsets(offsets: Mapping[tuple[str, int], int]) -> dict[str, dict[str, int]]:
    """Offsets per (topic, partition) in the JSON form of Spark's Kafka source: ``{"orders": {"0": 23}}``."""
    out: dict[str, dict[str, int]] = {}
    for (topic, partition), offset in sorted(offsets.items()):
        out.setdefault(topic, {})[str(partition)] = offset
    return out


def _log_settings(options: Mapping[str, str]) -> tuple[str, dict[str, object]]:
    url = options.get("log")
    if not url:
        raise ValueError(
            'schemakit data source: option "log" is required: the streams.log URL '
            "(sqlite:///path or kafka://host:port[,host:port])"
        )
    log_options: dict[str, object] = {}
    for key, value in options.items():
        if key.startswith("kafka."):
            if not str(url).startswith("kafka://"):
                raise ValueError(
                    f"schemakit data source: option {key} is a Kafka client option; the log is not kafka://"
                )
            if key == "kafka.isolation.level" and str(value).strip() != "read_uncommitted":
                raise ValueError(
                    "schemakit data source: only kafka.isolation.level=read_uncommitted (Spark's default) is "
                    "supported: the log reports no last stable offset for a read_committed reader to stop at"
                )
            log_options[key[len("kafka.") :]] = str(value)
        elif key.startswith("log."):
            log_options[key[len("log.") :]] = _option_value(str(value))
    return str(url), log_options


@dataclass(frozen=True)
class SourceOptions:
    """What to read: the log, the topics, the offset range, and how to split and check it."""

    log_url: str
    log_options: dict[str, object]
    topics: list[str]
    starting: OffsetSpec
    ending: OffsetSpec
    fail_on_data_loss: bool = True
    include_headers: bool = False
    max_records_per_partition: int | None = None
    max_offsets_per_trigger: int | None = None
    poll_timeout_ms: int = DEFAULT_POLL_TIMEOUT_MS

    @classmethod
    def parse(cls, options: Mapping[str, str], *, streaming: bool) -> SourceOptions:
        options = {str(k).lower(): v for k, v in options.items()}
        url, log_options = _log_settings(options)
        named = [name for name in ("subscribe", "topic") if options.get(name)]
        if len(named) != 1:
            raise ValueError(
                'schemakit data source: give the topics to read with exactly one of "subscribe" or "topic" '
                "(comma-separated names)"
            )
        topics = [t.strip() for t in str(options[named[0]]).split(",") if t.strip()]
        if not topics:
            raise ValueError(f"schemakit data source: option {named[0]} names no topic")
        for unsupported in ("subscribepattern", "assign"):
            if unsupported in options:
                raise ValueError(f"schemakit data source: option {unsupported} is not supported; use subscribe")
        if streaming and "endingoffsets" in options:
            raise ValueError("schemakit data source: endingOffsets is for batch queries only")
        starting = _parse_offsets(
            "startingOffsets",
            options.get("startingoffsets"),
            LATEST if streaming else EARLIEST,
            topics,
            streaming=streaming,
        )
        ending = _parse_offsets("endingOffsets", options.get("endingoffsets"), LATEST, topics, streaming=streaming)
        poll_timeout = _positive(options, "pollTimeoutMs")
        return cls(
            log_url=url,
            log_options=log_options,
            topics=topics,
            starting=starting,
            ending=ending,
            fail_on_data_loss=_flag(options, "failOnDataLoss", True),
            include_headers=_flag(options, "includeHeaders", False),
            max_records_per_partition=_positive(options, "maxRecordsPerPartition"),
            max_offsets_per_trigger=_positive(options, "maxOffsetsPerTrigger"),
            poll_timeout_ms=poll_timeout or DEFAULT_POLL_TIMEOUT_MS,
        )


@dataclass(frozen=True)
class SinkOptions:
    """Where to write: the log and, unless every row has a ``topic`` column, the topic."""

    log_url: str
    log_options: dict[str, object]
    topic: str | None

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> SinkOptions:
        options = {str(k).lower(): v for k, v in options.items()}
        url, log_options = _log_settings(options)
        topic = options.get("topic")
        return cls(url, log_options, str(topic).strip() if topic else None)


# The offsets the JSON form uses for "earliest" and "latest", as Spark's Kafka source and streams.log.
assert (OFFSET_BEGINNING, OFFSET_END) == (-2, -1)
