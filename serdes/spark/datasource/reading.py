"""Reading one offset range in a Spark task, through a ``streams.log`` consumer, into Arrow record batches.

The rows have the columns of Spark's Kafka source (``SOURCE_SCHEMA``; ``headers`` only with
``includeHeaders=true``). A task reads ``[start, end)`` of one partition and stops at the first record at or past
``end``. Offsets need not be dense: a compacted topic has holes and a transactional producer's commit markers
take offsets no record has, so when no record comes for ``pollTimeoutMs`` the rest of the range is taken for such
a hole. A first record after ``start`` where the log no longer holds ``start`` is data loss (``failOnDataLoss``).
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa

from serdes.spark.datasource.offsets import DataLossError, LogUnavailableError, OffsetRange, open_source_log
from serdes.spark.datasource.options import SourceOptions
from streams.log import OFFSET_BEGINNING, Consumer, Log, LogError, Record, TopicPartition

__all__ = ["HEADERS_TYPE", "SOURCE_SCHEMA", "arrow_schema", "read_range"]

#: The columns of Spark's Kafka source, in its order; ``headers`` is there with ``includeHeaders=true``.
SOURCE_SCHEMA = (
    "key binary, value binary, topic string, partition int, offset long, timestamp timestamp, timestampType int"
)
HEADERS_DDL = "headers array<struct<key: string, value: binary>>"
HEADERS_TYPE = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))
#: Rows per Arrow batch handed to Spark, and records asked of the consumer per poll.
BATCH_ROWS = 4096
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


def _batch(records: list[Record], schema: pa.Schema, include_headers: bool) -> pa.RecordBatch:
    # The columns every row of a range shares are repeated by Arrow, and the timestamps converted there: per row in
    # Python, these cost as much as the poll that read the records.
    n = len(records)
    first = records[0]
    columns = [
        pa.array([r.key for r in records], pa.binary()),
        pa.array([r.value for r in records], pa.binary()),
        pa.repeat(pa.scalar(first.topic, pa.string()), n),
        pa.repeat(pa.scalar(first.partition, pa.int32()), n),
        pa.array([r.offset for r in records], pa.int64()),
        pa.array([r.timestamp for r in records], pa.int64()).cast(_MILLIS).cast(_MICROS),
        pa.repeat(pa.scalar(CREATE_TIME, pa.int32()), n),
    ]
    if include_headers:
        headers = [[{"key": name, "value": value} for name, value in r.headers] for r in records]
        columns.append(pa.array(headers, HEADERS_TYPE))
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
    pending: list[Record] = []
    while next_offset < offsets.end:
        try:
            records = consumer.poll(poll_ms / 1000, max_records=min(BATCH_ROWS, offsets.end - next_offset))
        except LogError as exc:
            raise LogUnavailableError(
                f"schemakit data source: reading {where} at offset {next_offset} from {log.safe_url} failed: {exc}"
            ) from exc
        if not records:
            waited_ms += poll_ms
            if waited_ms >= options.poll_timeout_ms:
                break  # the rest of the range holds no records (compaction, transaction markers)
            continue
        waited_ms = 0
        if records[0].offset > next_offset == offsets.start and options.fail_on_data_loss:
            earliest = _earliest(log, TopicPartition(offsets.topic, offsets.partition))
            if earliest > next_offset:
                raise DataLossError(
                    f"schemakit data source: offset {next_offset} of {where} is no longer in the log (the earliest "
                    f"is {earliest}): records were deleted after the query was planned "
                    "(set failOnDataLoss=false to read what is there instead)"
                )
        for record in records:
            if record.offset >= offsets.end:
                next_offset = offsets.end
                break
            pending.append(record)
            next_offset = record.offset + 1
        if len(pending) >= BATCH_ROWS:
            yield _batch(pending, schema, options.include_headers)
            pending = []
    if pending:
        yield _batch(pending, schema, options.include_headers)
