"""Offset ranges: what each Spark task reads, planned on the driver from the log's watermarks.

A range is ``[start, end)`` of one topic partition. The driver asks the log (through a ``streams.log`` consumer,
the same client the tasks read with) for each partition's earliest and latest offsets, turns ``startingOffsets``
and ``endingOffsets`` into numbers, checks them (``failOnDataLoss``, as Spark's Kafka source) and splits large
ranges (``maxRecordsPerPartition``). Errors name the topic, the partition and the offset.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from serdes.spark.datasource.options import EARLIEST, LATEST, OffsetSpec
from streams.log import OFFSET_BEGINNING, OFFSET_END, Log, LogError, TopicPartition, UnknownTopicError, open_log

__all__ = [
    "Bounds",
    "DataLossError",
    "LogUnavailableError",
    "OffsetRange",
    "bounds_of",
    "check_start",
    "open_source_log",
    "resolve",
    "split",
]

#: Per (topic, partition): the earliest offset still in the log and the offset the next record will get.
Bounds = dict[tuple[str, int], tuple[int, int]]


class DataLossError(LogError):
    """Offsets a query needs are not in the log (deleted, or never written); raised when ``failOnDataLoss``."""


class LogUnavailableError(LogError):
    """The log cannot be opened or does not answer."""


@dataclass(frozen=True)
class OffsetRange:
    """Offsets ``start`` up to (not including) ``end`` of ``topic``'s ``partition``: one Spark task's input."""

    topic: str
    partition: int
    start: int
    end: int

    @property
    def size(self) -> int:
        return self.end - self.start


def open_source_log(url: str, options: Mapping[str, object]) -> Log:
    """``open_log`` with the data source's options, its failures said as "cannot open the log"."""
    try:
        return open_log(url, **options)  # type: ignore[arg-type]  # backend keyword options, checked by the backend
    except (LogError, OSError, TypeError, ValueError) as exc:
        from streams.log import redact_url

        raise LogUnavailableError(f"schemakit data source: cannot open the log {redact_url(url)}: {exc}") from exc


def bounds_of(log: Log, topics: Iterable[str]) -> Bounds:
    """The earliest and latest offsets of every partition of ``topics`` (partitions added since are included).

    The latest offset is the high watermark, and the tasks read uncommitted records up to it, as Spark's Kafka source
    does by default (``isolation.level=read_uncommitted``): a read_committed reader would stop at the last stable
    offset, which the log does not report, and a streaming query would step over records of a transaction still
    open when its batch was planned.

    Raises ``UnknownTopicError`` naming a topic that does not exist and ``LogUnavailableError`` when the log does
    not answer."""
    try:
        # The latest offsets in one request per topic (a consumer asks per partition). The earliest are where a
        # consumer's OFFSET_BEGINNING starts, which is not always ``Log.start_offsets``: on SQLite that moves past
        # compacted records, and compaction is no loss of data.
        high: dict[TopicPartition, int] = {}
        for topic in topics:
            try:
                ends = log.end_offsets(topic)
            except UnknownTopicError:
                raise UnknownTopicError(
                    f"schemakit data source: topic {topic!r} does not exist in {log.safe_url}"
                ) from None
            high.update({TopicPartition(topic, p): offset for p, offset in sorted(ends.items())})
        with log.consumer(read_committed=False) as consumer:
            consumer.assign(dict.fromkeys(high, OFFSET_BEGINNING))
            return {(tp.topic, tp.partition): (consumer.position(tp), end) for tp, end in high.items()}
    except UnknownTopicError:
        raise
    except LogError as exc:
        raise LogUnavailableError(f"schemakit data source: cannot read offsets from {log.safe_url}: {exc}") from exc


def resolve(spec: OffsetSpec, bounds: Bounds, *, name: str) -> dict[tuple[str, int], int]:
    """``startingOffsets`` / ``endingOffsets`` as one offset per partition of ``bounds`` (-2 and -1 resolved).

    JSON must name every partition, as Spark's Kafka source requires."""
    if spec == EARLIEST:
        return {tp: low for tp, (low, _) in bounds.items()}
    if spec == LATEST:
        return {tp: high for tp, (_, high) in bounds.items()}
    assert isinstance(spec, dict)
    given = {(topic, p): offset for topic, offsets in spec.items() for p, offset in offsets.items()}
    missing = sorted(set(bounds) - set(given))
    unknown = sorted(set(given) - set(bounds))
    if unknown:
        topic, partition = unknown[0]
        raise UnknownTopicError(f"schemakit data source: {name} names {topic}[{partition}], which does not exist")
    if missing:
        raise ValueError(
            f"schemakit data source: {name} with offsets per partition must name every partition; missing "
            + ", ".join(f"{t}[{p}]" for t, p in missing)
            + " (use -2 for earliest, -1 for latest)"
        )
    out = {}
    for tp, offset in given.items():
        low, high = bounds[tp]
        out[tp] = low if offset == OFFSET_BEGINNING else high if offset == OFFSET_END else offset
    return out


def check_start(tp: tuple[str, int], offset: int, bounds: Bounds, *, fail_on_data_loss: bool, what: str) -> int:
    """``offset`` where a read of ``tp`` begins or ends, checked against what the log still holds.

    Below the earliest offset the records are gone (retention, deletion); above the latest they do not exist
    (a topic recreated, a wrong offset). With ``failOnDataLoss`` either fails naming topic, partition and offset;
    without, the offset is moved to the nearest one the log has, as Spark's Kafka source does."""
    low, high = bounds[tp]
    topic, partition = tp
    if low <= offset <= high:
        return offset
    if fail_on_data_loss:
        reason = (
            f"records before offset {low} are no longer in the log" if offset < low else f"the latest offset is {high}"
        )
        raise DataLossError(
            f"schemakit data source: {what} offset {offset} of {topic}[{partition}] is out of range: {reason} "
            "(set failOnDataLoss=false to read what is there instead)"
        )
    return low if offset < low else high


def split(ranges: Iterable[OffsetRange], max_records: int | None) -> list[OffsetRange]:
    """Ranges of at most ``max_records`` offsets (``maxRecordsPerPartition``), in order; empty ranges dropped."""
    out: list[OffsetRange] = []
    for r in ranges:
        if r.size <= 0:
            continue
        step = r.size if max_records is None else max_records
        for start in range(r.start, r.end, step):
            out.append(OffsetRange(r.topic, r.partition, start, min(start + step, r.end)))
    return out
