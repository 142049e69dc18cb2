"""Writing rows to the log from a Spark task: the sink of the ``schemakit`` data source.

The columns are those Spark's Kafka sink takes: ``value`` (required), ``key``, ``topic``, ``partition``,
``headers``; ``key`` and ``value`` may be ``binary`` or ``string`` (UTF-8). ``option("topic")`` wins over a
``topic`` column, as in Spark. Each task sends its rows with one ``streams.log`` producer (on Kafka idempotent,
``acks=all``) and flushes before it reports success, so a committed task's rows are in the log. A task that fails
after some sends and is retried sends them again: delivery is at least once, as Spark's Kafka sink.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql.types import ArrayType, BinaryType, DataType, IntegerType, StringType, StructType

from serdes.spark.datasource.offsets import open_source_log
from serdes.spark.datasource.options import SinkOptions
from streams.log import LogError, Record

__all__ = ["SinkError", "WriteReport", "check_sink_schema", "write_batches"]

_BYTES_TYPES = (BinaryType, StringType)


class SinkError(LogError):
    """A record could not be written; the message names the topic, the partition and the reason."""


@dataclass(frozen=True)
class WriteReport:
    """What one task wrote: the number of records."""

    records: int


def _type_name(data_type: DataType) -> str:
    return data_type.simpleString()


def check_sink_schema(schema: StructType, options: SinkOptions) -> None:
    """The columns' types, checked on the driver before any task runs (Spark's Kafka sink's rules)."""
    fields = {f.name: f.dataType for f in schema.fields}
    if "value" not in fields:
        raise ValueError("schemakit sink: required column 'value' (binary or string) not found")
    for name in ("key", "value"):
        if name in fields and not isinstance(fields[name], _BYTES_TYPES):
            raise ValueError(
                f"schemakit sink: column {name!r} must be binary or string, not {_type_name(fields[name])}"
            )
    if options.topic is None and "topic" not in fields:
        raise ValueError('schemakit sink: no topic: set option("topic", ...) or give a string column "topic"')
    if "topic" in fields and not isinstance(fields["topic"], StringType):
        raise ValueError(f"schemakit sink: column 'topic' must be string, not {_type_name(fields['topic'])}")
    if "partition" in fields and not isinstance(fields["partition"], IntegerType):
        raise ValueError(f"schemakit sink: column 'partition' must be int, not {_type_name(fields['partition'])}")
    if "headers" in fields:
        headers = fields["headers"]
        ok = (
            isinstance(headers, ArrayType)
            and isinstance(headers.elementType, StructType)
            and [f.name for f in headers.elementType.fields] == ["key", "value"]
            and isinstance(headers.elementType.fields[0].dataType, StringType)
            and isinstance(headers.elementType.fields[1].dataType, BinaryType)
        )
        if not ok:
            raise ValueError(
                "schemakit sink: column 'headers' must be array<struct<key: string, value: binary>>, "
                f"not {_type_name(headers)}"
            )


def _as_bytes(values: list[object]) -> list[bytes | None]:
    return [v.encode() if isinstance(v, str) else v for v in values]  # type: ignore[misc]


def write_batches(batches: Iterable[pa.RecordBatch], options: SinkOptions) -> WriteReport:
    """Send every row of ``batches`` and flush; the first failed record fails the task, naming where it went."""
    failures: list[tuple[Record, LogError]] = []
    sent = 0
    log = open_source_log(options.log_url, options.log_options)
    try:
        producer = log.producer()
        producer.on_delivery_failure = lambda record, error: failures.append((record, error))
        try:
            for batch in batches:
                columns = batch.schema.names
                n = batch.num_rows
                values = _as_bytes(batch.column("value").to_pylist())
                keys = _as_bytes(batch.column("key").to_pylist()) if "key" in columns else [None] * n
                topics = [options.topic] * n if options.topic is not None else batch.column("topic").to_pylist()
                partitions = batch.column("partition").to_pylist() if "partition" in columns else [None] * n
                headers = batch.column("headers").to_pylist() if "headers" in columns else [None] * n
                for i in range(n):
                    topic = topics[i]
                    if topic is None:
                        raise SinkError("schemakit sink: a row has a null topic and no topic option is set")
                    row_headers = headers[i]
                    pairs = None if row_headers is None else [(h["key"], h["value"]) for h in row_headers]
                    try:
                        producer.send(topic, values[i], keys[i], partition=partitions[i], headers=pairs)
                    except LogError as exc:
                        where = "the key's partition" if partitions[i] is None else f"partition {partitions[i]}"
                        raise SinkError(f"schemakit sink: cannot send to {topic!r} {where}: {exc}") from exc
                    sent += 1
            try:
                producer.flush()
            except LogError as exc:
                if not failures:
                    raise SinkError(f"schemakit sink: flushing to {log.safe_url} failed: {exc}") from exc
            if failures:
                record, error = failures[0]
                raise SinkError(
                    f"schemakit sink: {len(failures)} record(s) not written; the first to "
                    f"{record.topic}[{record.partition}]: {error}"
                )
        finally:
            producer.close()
    finally:
        log.close()
    return WriteReport(sent)
