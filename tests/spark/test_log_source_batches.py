"""The size of the Arrow batches a ``schemakit`` data source task hands to Spark (``reading.read_range``), without
Spark: large batches for small records (Spark's cost per batch is large), and about ``BATCH_BYTES`` of values at
most for large ones, every record of the range once, in order."""

from __future__ import annotations

from pathlib import Path

from serdes.spark.datasource.offsets import OffsetRange
from serdes.spark.datasource.options import SourceOptions
from serdes.spark.datasource.reading import BATCH_BYTES, BATCH_ROWS, read_range
from streams.log import open_log


def _read(tmp_path: Path, values: list[bytes]) -> list[list[bytes]]:
    url = f"sqlite:///{tmp_path / 'log.db'}"
    with open_log(url) as log:
        log.create_topic("t", 1)
        with log.producer() as producer:
            for i, value in enumerate(values):
                producer.send("t", value, str(i).encode(), partition=0)
            producer.flush()
    options = SourceOptions.parse({"log": url, "topic": "t"}, streaming=False)
    return [batch.column("value").to_pylist() for batch in read_range(options, OffsetRange("t", 0, 0, len(values)))]


def test_small_records_come_in_batches_of_batch_rows(tmp_path: Path) -> None:
    values = [i.to_bytes(4, "big") for i in range(BATCH_ROWS + 100)]
    batches = _read(tmp_path, values)
    assert [len(b) for b in batches] == [BATCH_ROWS, 100]
    assert [v for b in batches for v in b] == values


def test_large_records_come_in_batches_of_about_batch_bytes(tmp_path: Path) -> None:
    size = 512 * 1024  # 32 of them make BATCH_BYTES
    values = [bytes([i]) * size for i in range(80)]
    batches = _read(tmp_path, values)
    assert [v for b in batches for v in b] == values
    assert len(batches) >= 80 * size // BATCH_BYTES
    assert all(sum(map(len, b)) <= BATCH_BYTES for b in batches), [len(b) for b in batches]
