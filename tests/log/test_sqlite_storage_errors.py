"""SQLite's own failures leave the SQLite backend as the log's errors (``StorageError`` and its family)."""

from __future__ import annotations

from pathlib import Path

import pytest

from streams.log import (
    OFFSET_BEGINNING,
    StorageError,
    StorageFullError,
    TopicPartition,
    open_log,
)
from streams.log.sqlite import SqliteLog
from tests.log.helpers import read_records


def test_a_full_database_raises_storage_full_and_writes_nothing(slog: SqliteLog) -> None:
    slog.create_topic("t", 1)
    producer = slog.producer()
    producer.produce("t", b"first", b"k", partition=0)
    # SQLite's own size limit on the producer's connection: the file cannot grow by a single page more
    # (what a full disk does, through the same SQLITE_FULL path).
    conn = producer._db.conn  # type: ignore[attr-defined]
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    conn.execute(f"PRAGMA max_page_count = {pages}")
    with pytest.raises(StorageFullError, match=r"SQLite log .*log\.sqlite3: flush failed: database or disk is full"):
        producer.produce("t", b"x" * 200_000, b"k", partition=0)
    assert slog.end_offsets("t") == {0: 1}
    # Nothing half-written is left behind: once there is room again, the producer goes on where it was.
    conn.execute(f"PRAGMA max_page_count = {pages * 1000}")
    assert producer.produce("t", b"second", b"k", partition=0).offset == 1
    producer.close()
    with slog.consumer() as consumer:
        consumer.assign({TopicPartition("t", 0): OFFSET_BEGINNING})
        assert [r.value for r in read_records(consumer, 2)] == [b"first", b"second"]


def test_a_file_that_is_not_a_database_raises_storage_error(tmp_path: Path) -> None:
    bogus = tmp_path / "broken.db"
    bogus.write_bytes(b"this is not an SQLite database at all" * 200)
    with pytest.raises(StorageError, match=r"SQLite log .*broken\.db: opening failed: file is not a database"):
        open_log(f"sqlite:///{bogus}")


def test_a_refused_write_raises_storage_error(slog: SqliteLog) -> None:
    slog.create_topic("t", 1)
    producer = slog.producer()
    producer._db.conn.execute("PRAGMA query_only = ON")  # type: ignore[attr-defined]  # SQLite refuses writes
    with pytest.raises(StorageError, match="flush failed: attempt to write a readonly database") as caught:
        producer.produce("t", b"v", b"k", partition=0)
    assert not isinstance(caught.value, StorageFullError)
    assert slog.end_offsets("t") == {0: 0}
