"""The ``schemakit`` Spark data source: a ``streams.log`` topic as a batch and streaming source and sink.

Registered by ``serdes.spark.register(spark)`` (``spark_session()`` does it), then::

    spark.read.format("schemakit").option("log", "kafka://broker:9092").option("subscribe", "orders").load()

The classes here are what Spark's Python Data Source API calls; the work is in ``offsets.py`` (planning on the
driver), ``reading.py`` and ``writing.py`` (in the tasks). Streaming offsets are kept as Spark's Kafka source keeps
them in the checkpoint: ``{"orders": {"0": 23, "1": 5}}``, the next offset to read per partition.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    DataSourceStreamArrowWriter,
    DataSourceStreamReader,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, ReadMaxRows, SupportsTriggerAvailableNow
from pyspark.sql.types import StructType

from serdes.spark.datasource.offsets import (
    Bounds,
    OffsetRange,
    bounds_of,
    check_start,
    open_source_log,
    resolve,
    split,
)
from serdes.spark.datasource.options import SinkOptions, SourceOptions, format_offsets
from serdes.spark.datasource.reading import read_range, schema_ddl
from serdes.spark.datasource.writing import WriteReport, check_sink_schema, write_batches
from streams.log import Log

__all__ = ["SchemakitDataSource"]

Offsets = dict[tuple[str, int], int]


@dataclass(frozen=True)
class RangePartition(InputPartition):
    """One Spark input partition: an offset range (pickled to the task)."""

    range: OffsetRange


@dataclass(frozen=True)
class Written(WriterCommitMessage):
    report: WriteReport


def _parse_checkpoint(offsets: dict) -> Offsets:
    return {(topic, int(p)): int(o) for topic, per in offsets.items() for p, o in per.items()}


def _plan(options: SourceOptions, bounds: Bounds, start: Offsets, end: Offsets) -> list[RangePartition]:
    ranges = []
    for tp, stop in sorted(end.items()):
        first = start.get(tp, bounds[tp][0] if tp in bounds else 0)  # a partition added since: from its earliest
        if stop < first:
            raise ValueError(
                f"schemakit data source: {tp[0]}[{tp[1]}]: the ending offset {stop} is before the starting offset "
                f"{first} (was the topic recreated?)"
            )
        ranges.append(OffsetRange(tp[0], tp[1], first, stop))
    return [RangePartition(r) for r in split(ranges, options.max_records_per_partition)]


def _read(options: SourceOptions, partition: InputPartition) -> Iterator[pa.RecordBatch]:
    # With no range to read (every partition empty), Spark still runs one task with a bare InputPartition.
    if not isinstance(partition, RangePartition):
        return iter(())
    return read_range(options, partition.range)


class SchemakitBatchReader(DataSourceReader):
    def __init__(self, options: SourceOptions) -> None:
        self.options = options

    def partitions(self) -> Sequence[InputPartition]:
        options = self.options
        with open_source_log(options.log_url, options.log_options) as log:
            bounds = bounds_of(log, options.topics)
        loss = options.fail_on_data_loss
        start = {
            tp: check_start(tp, o, bounds, fail_on_data_loss=loss, what="starting")
            for tp, o in resolve(options.starting, bounds, name="startingOffsets").items()
        }
        end = {
            tp: check_start(tp, o, bounds, fail_on_data_loss=loss, what="ending")
            for tp, o in resolve(options.ending, bounds, name="endingOffsets").items()
        }
        return _plan(options, bounds, start, end)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return _read(self.options, partition)


class SchemakitStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Micro-batches of the topics' new records; ``maxOffsetsPerTrigger`` caps a batch across partitions in
    proportion to each partition's backlog, as Spark's Kafka source does."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        self._log: Log | None = None
        self._available_now: Offsets | None = None

    def _bounds(self) -> Bounds:
        if self._log is None:
            self._log = open_source_log(self.options.log_url, self.options.log_options)
        return bounds_of(self._log, self.options.topics)

    def initialOffset(self) -> dict:
        bounds = self._bounds()
        start = resolve(self.options.starting, bounds, name="startingOffsets")
        checked = {
            tp: check_start(tp, o, bounds, fail_on_data_loss=self.options.fail_on_data_loss, what="starting")
            for tp, o in start.items()
        }
        return format_offsets(checked)

    def prepareForTriggerAvailableNow(self) -> None:
        self._available_now = {tp: high for tp, (_, high) in self._bounds().items()}

    def getDefaultReadLimit(self) -> ReadLimit:
        limit = self.options.max_offsets_per_trigger
        return ReadAllAvailable() if limit is None else ReadMaxRows(limit)

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        bounds = self._bounds()
        begin = _parse_checkpoint(start)
        latest = {tp: high for tp, (_, high) in bounds.items()}
        if self._available_now is not None:
            latest = {tp: min(high, self._available_now.get(tp, bounds[tp][0])) for tp, high in latest.items()}
        first = {tp: begin.get(tp, bounds[tp][0]) for tp in latest}
        for tp, offset in first.items():
            if tp in begin:
                first[tp] = check_start(
                    tp, offset, bounds, fail_on_data_loss=self.options.fail_on_data_loss, what="next"
                )
        latest = {tp: max(high, first[tp]) for tp, high in latest.items()}
        if isinstance(limit, ReadMaxRows):
            latest = _rate_limit(first, latest, limit.max_rows)
        return format_offsets(latest)

    def reportLatestOffset(self) -> dict | None:
        return format_offsets({tp: high for tp, (_, high) in self._bounds().items()})

    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        begin, stop = _parse_checkpoint(start), _parse_checkpoint(end)
        bounds = self._bounds() if set(stop) - set(begin) else {}
        return _plan(self.options, bounds, begin, stop)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return _read(self.options, partition)

    def commit(self, end: dict) -> None:
        """Nothing to do: the offsets are in Spark's checkpoint, not in the log."""

    def stop(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None


def _rate_limit(first: Offsets, latest: Offsets, max_rows: int) -> Offsets:
    """At most ``max_rows`` offsets in all, shared in proportion to each partition's backlog."""
    backlog = {tp: latest[tp] - first[tp] for tp in latest}
    total = sum(backlog.values())
    if total <= max_rows:
        return latest
    share = {tp: (lag * max_rows) // total for tp, lag in backlog.items()}
    left = max_rows - sum(share.values())
    for tp in sorted(backlog, key=lambda tp: backlog[tp] - share[tp], reverse=True):
        if left <= 0:
            break
        if share[tp] < backlog[tp]:
            share[tp] += 1
            left -= 1
    return {tp: first[tp] + share[tp] for tp in latest}


class SchemakitBatchWriter(DataSourceArrowWriter):
    def __init__(self, options: SinkOptions) -> None:
        self.options = options

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        return Written(write_batches(iterator, self.options))


class SchemakitStreamWriter(DataSourceStreamArrowWriter):
    def __init__(self, options: SinkOptions) -> None:
        self.options = options

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        return Written(write_batches(iterator, self.options))

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Nothing to do: every task flushed its records before it reported success."""

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Nothing to undo: records already sent stay (at-least-once delivery, as Spark's Kafka sink)."""


class SchemakitDataSource(DataSource):
    """``format("schemakit")``: a ``streams.log`` URL (``option("log", ...)``) read and written like Kafka."""

    @classmethod
    def name(cls) -> str:
        return "schemakit"

    def schema(self) -> str:
        options = {str(k).lower(): v for k, v in self.options.items()}
        return schema_ddl(str(options.get("includeheaders", "false")).strip().lower() == "true")

    def reader(self, schema: StructType) -> DataSourceReader:
        return SchemakitBatchReader(SourceOptions.parse(self.options, streaming=False))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return SchemakitStreamReader(SourceOptions.parse(self.options, streaming=True))

    def writer(self, schema: StructType, overwrite: bool) -> SchemakitBatchWriter:
        options = self._sink_options(schema, overwrite)
        return SchemakitBatchWriter(options)

    def streamWriter(self, schema: StructType, overwrite: bool) -> SchemakitStreamWriter:
        return SchemakitStreamWriter(self._sink_options(schema, overwrite=False))

    def _sink_options(self, schema: StructType, overwrite: bool) -> SinkOptions:
        if overwrite:
            raise ValueError('schemakit sink: a log is appended to; use mode("append"), not overwrite')
        options = SinkOptions.parse(self.options)
        check_sink_schema(schema, options)
        return options
