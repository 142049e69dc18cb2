"""Reading one offset range in a Spark task, through a ``streams.log`` consumer, into Arrow record batches.

The rows have the columns of Spark's Kafka source (``SOURCE_SCHEMA``; ``headers`` only with
``includeHeaders=true``). A task reads ``[start, end)`` of one partition and stops at the first record at or past
``end``. Offsets need not be dense: a compacted topic has holes and a transactional producer's commit markers
take offsets no record has, so when no record comes for ``pollTimeoutMs`` the rest of the range is taken for such
a hole. A first record after ``start`` where the log no longer holds ``start`` is data loss (``failOnDataLoss``).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator

import pyarrow as pa

from serdes.spark.datasource.offsets import DataLossError, LogUnavailableError, OffsetRange, open_source_log
from serdes.spark.datasource.options import SourceOptions
from streams.log import OFFSET_BEGINNING, Consumer, Log, LogError, RecordColumns, TopicPartition

__all__ = ["HEADERS_TYPE", "SOURCE_SCHEMA", "arrow_schema", "read_range"]

#: The columns of Spark's Kafka source, in its order; ``headers`` is there with ``includeHeaders=true``.
SOURCE_SCHEMA = (
    "key binary, value binary, topic string, partition int, offset long, timestamp timestamp, timestampType int"
)
HEADERS_DDL = "headers array<struct<key: string, value: binary>>"
HEADERS_TYPE = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))
#: Rows per Arrow batch handed to Spark at most, and records asked of the consumer per poll. Spark's cost per batch
#: is large: 1,000,000 records read + decoded on local[2] went 205,000 -> 323,000 rows/s from 4,096 to 65,536 rows
#: (``benchmarks/spark_source.py``, one quiet run; 32,768: 294,000).
BATCH_ROWS = 65536
#: ... and about this many value bytes per batch at most, so large records do not make a batch of gigabytes: the
#: first poll asks for ``FIRST_POLL_ROWS`` records, later ones for what fits at the average size read so far.
BATCH_BYTES = 16 * 1024 * 1024
FIRST_POLL_ROWS = 16
#: Kafka's CreateTime: the log keeps a record's timestamp, not its type, and producers set CreateTime.
CREATE_TIME = 0
_MILLIS = pa.timestamp("ms", tz="UTC")  # the log's timestamps
_MICROS = pa.timestamp("us", tz="UTC")  # Spark's


def schema_ddl(include_headers: bool) -> str:
    return f"{SOURCE_SCHEMA}, {HEADERS_DDL}" if include_headers else SOURCE_SCHEMA


def arrow_schema(include_headers: bool) -> pa.Schema:
    fields = [
        ("key", pa.binary()),
        ("value", pa.binary()),
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("offset", pa.int64()),
        ("timestamp", _MICROS),
        ("timestampType", pa.int32()),
    ]
    if include_headers:
        fields.append(("headers", HEADERS_TYPE))
    return pa.schema(fields)


class _Pending:
    """The columns of the rows read but not handed to Spark yet, filled from ``RecordColumns`` a poll at a time."""

    def __init__(self, include_headers: bool) -> None:
        self.keys: list[bytes | None] = []
        self.values: list[bytes | None] = []
        self.offsets: list[int] = []
        self.timestamps: list[int] = []
        self.headers: list[tuple[tuple[str, bytes | None], ...]] | None = [] if include_headers else None
        self.value_bytes = 0

    def __len__(self) -> int:
        return len(self.offsets)

    def add(self, columns: RecordColumns, stop: int) -> int:
        """The first ``stop`` rows of ``columns``; returns their value bytes."""
        self.keys += columns.keys[:stop]
        values = columns.values[:stop]
        self.values += values
        added = sum(map(len, filter(None, values)))  # ~20 ns a record
        self.value_bytes += added
        self.offsets += columns.offsets[:stop]
        self.timestamps += columns.timestamps[:stop]
        if self.headers is not None and columns.headers is not None:
            self.headers += columns.headers[:stop]
        return added

    def batch(self, topic: str, partition: int, schema: pa.Schema) -> pa.RecordBatch:
        # The columns every row of a range shares are repeated by Arrow, and the timestamps converted there: per row
        # in Python, these cost as much as the poll that read the records.
        n = len(self.offsets)
        columns = [
            pa.array(self.keys, pa.binary()),
            pa.array(self.values, pa.binary()),
            pa.repeat(pa.scalar(topic, pa.string()), n),
            pa.repeat(pa.scalar(partition, pa.int32()), n),
            pa.array(self.offsets, pa.int64()),
            pa.array(self.timestamps, pa.int64()).cast(_MILLIS).cast(_MICROS),
            pa.repeat(pa.scalar(CREATE_TIME, pa.int32()), n),
        ]
        if self.headers is not None:
            rows = [[{"key": name, "value": value} for name, value in h] for h in self.headers]
            columns.append(pa.array(rows, HEADERS_TYPE))
        return pa.RecordBatch.from_arrays(columns, schema=schema)


def _earliest(log: Log, tp: TopicPartition) -> int:
    with log.consumer(read_committed=False) as probe:
        probe.assign({tp: OFFSET_BEGINNING})
        return probe.position(tp)


def read_range(options: SourceOptions, offsets: OffsetRange) -> Iterator[pa.RecordBatch]:
    """The records of ``offsets``, as Arrow batches of ``arrow_schema(options.include_headers)``."""
    if offsets.size <= 0:
        return
    schema = arrow_schema(options.include_headers)
    tp = TopicPartition(offsets.topic, offsets.partition)
    where = f"{offsets.topic}[{offsets.partition}]"
    log = open_source_log(options.log_url, options.log_options)
    try:
        consumer = log.consumer(read_committed=False)
        try:
            try:
                consumer.assign({tp: offsets.start})
            except LogError as exc:
                raise LogUnavailableError(
                    f"schemakit data source: cannot read {where} from {log.safe_url}: {exc}"
                ) from exc
            yield from _records(log, consumer, offsets, options, schema, where)
        finally:
            consumer.close()
    finally:
        log.close()


def _records(
    log: Log,
    consumer: Consumer,
    offsets: OffsetRange,
    options: SourceOptions,
    schema: pa.Schema,
    where: str,
) -> Iterator[pa.RecordBatch]:
    next_offset = offsets.start
    waited_ms = 0
    poll_ms = min(500, options.poll_timeout_ms)
    pending = _Pending(options.include_headers)
    read_rows = read_bytes = 0  # of the range so far: the average record size
    while next_offset < offsets.end:
        if not read_rows:
            fits = FIRST_POLL_ROWS
        elif read_bytes:
            fits = max(1, (BATCH_BYTES - pending.value_bytes) * read_rows // read_bytes)
        else:
            fits = BATCH_ROWS  # only empty values so far
        try:
            polled = consumer.poll_columns(
                poll_ms / 1000,
                max_records=min(fits, BATCH_ROWS - len(pending), offsets.end - next_offset),
                headers=options.include_headers,
            )
        except LogError as exc:
            raise LogUnavailableError(
                f"schemakit data source: reading {where} at offset {next_offset} from {log.safe_url} failed: {exc}"
            ) from exc
        if not polled:
            waited_ms += poll_ms
            if waited_ms >= options.poll_timeout_ms:
                break  # the rest of the range holds no records (compaction, transaction markers)
            continue
        waited_ms = 0
        columns = polled[0]  # the consumer reads one partition
        first = columns.offsets[0]
        if first > next_offset == offsets.start and options.fail_on_data_loss:
            earliest = _earliest(log, TopicPartition(offsets.topic, offsets.partition))
            if earliest > next_offset:
                raise DataLossError(
                    f"schemakit data source: offset {next_offset} of {where} is no longer in the log (the earliest "
                    f"is {earliest}): records were deleted after the query was planned "
                    "(set failOnDataLoss=false to read what is there instead)"
                )
        stop = bisect_left(columns.offsets, offsets.end)  # the records of the range; offsets ascend
        read_bytes += pending.add(columns, stop)
        read_rows += stop
        next_offset = offsets.end if stop < len(columns) else columns.offsets[-1] + 1
        if len(pending) >= BATCH_ROWS or pending.value_bytes >= BATCH_BYTES:
            yield pending.batch(offsets.topic, offsets.partition, schema)
            pending = _Pending(options.include_headers)
    if pending:
        yield pending.batch(offsets.topic, offsets.partition, schema)
