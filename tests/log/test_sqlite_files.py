"""The SQLite backend's file: which file a URL names, WAL mode, durability through reopening and SIGKILL,
several log objects and processes on one file."""

from __future__ import annotations

import signal
import sqlite3
import threading
from pathlib import Path

import pytest

from streams.log import (
    OFFSET_BEGINNING,
    TopicPartition,
    open_log,
)
from streams.log.sqlite import SqliteLog, path_from_url
from tests.log.helpers import read_records, run_child


def test_directory_url_gets_log_file_inside(tmp_path: Path) -> None:
    with open_log(f"sqlite:///{tmp_path}/data/nested") as log:
        log.create_topic("t")
    assert (tmp_path / "data" / "nested" / "log.sqlite3").is_file()


@pytest.mark.parametrize("suffix", [".db", ".sqlite", ".sqlite3"])
def test_file_url_is_used_as_is(tmp_path: Path, suffix: str) -> None:
    with open_log(f"sqlite:///{tmp_path}/sub/my{suffix}") as log:
        log.create_topic("t")
    assert (tmp_path / "sub" / f"my{suffix}").is_file()


def test_existing_directory_with_db_suffix_is_a_directory(tmp_path: Path) -> None:
    (tmp_path / "odd.db").mkdir()
    assert path_from_url(f"sqlite:///{tmp_path}/odd.db") == tmp_path / "odd.db" / "log.sqlite3"


def test_relative_and_absolute_urls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert path_from_url("sqlite:///./data") == Path("data/log.sqlite3")
    assert path_from_url("sqlite:///data/x.db") == Path("data/x.db")
    assert path_from_url("sqlite:////abs/path") == Path("/abs/path/log.sqlite3")
    with open_log("sqlite:///./data") as log:
        log.create_topic("t")
    assert (tmp_path / "data" / "log.sqlite3").is_file()


@pytest.mark.parametrize("bad", ["sqlite://", "sqlite:///", "sqlite://host/x", "sqlite:/x"])
def test_bad_url_is_rejected(bad: str) -> None:
    with pytest.raises(ValueError, match="SQLite log URL"):
        path_from_url(bad)


def test_wal_mode_is_persistent(slog: SqliteLog) -> None:
    conn = sqlite3.connect(slog.path)
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        conn.close()


def test_everything_survives_reopening(sqlite_url: str) -> None:
    tp = TopicPartition("t", 1)
    with open_log(sqlite_url) as log:
        log.create_topic("t", 2, compacted=True, config={"retention.ms": "-1"})
        with log.producer() as producer:
            producer.produce("t", b"v", b"k", partition=1, headers=[("h", None)], timestamp=42)
        with log.consumer("g") as consumer:
            consumer.commit({tp: 1})
    with open_log(sqlite_url) as log:
        info = log.describe_topic("t")
        assert info is not None
        assert (info.partitions, info.compacted) == (2, True)
        assert info.config == {"cleanup.policy": "compact", "retention.ms": "-1"}
        assert log.end_offsets("t") == {0: 0, 1: 1}
        assert log.committed("g", [tp]) == {tp: 1}
        with log.consumer() as consumer:
            consumer.assign({tp: OFFSET_BEGINNING})
            (record,) = read_records(consumer, 1)
        assert (record.key, record.value, record.timestamp, record.headers) == (b"k", b"v", 42, (("h", None),))


CRASH_CHILD = """
    import sys
    from streams.log import open_log

    log = open_log(sys.argv[1])
    producer = log.producer()
    i = 0
    while True:
        md = producer.produce("crash", b"value-%d" % i + bytes(i % 200), b"key-%d" % i, partition=i % 2,
                              headers=[("i", b"%d" % i)])
        print(md.partition, md.offset, i, flush=True)
        i += 1
"""


def test_acknowledged_records_survive_sigkill(sqlite_url: str) -> None:
    with open_log(sqlite_url) as log:
        log.create_topic("crash", 2)
    child = run_child(CRASH_CHILD, sqlite_url)
    assert child.stdout is not None
    acked: list[tuple[int, int, int]] = []
    try:
        for line in child.stdout:
            acked.append(tuple(map(int, line.split())))  # type: ignore[arg-type]
            if len(acked) == 300:
                break
        assert len(acked) == 300, child.stderr.read() if child.stderr else ""
    finally:
        child.send_signal(signal.SIGKILL)
        rest, _ = child.communicate(timeout=30)
    # Lines the child printed before it died were acknowledged too; a cut-off last line was not.
    acked += [tuple(map(int, line.split())) for line in rest.splitlines() if len(line.split()) == 3]  # type: ignore[misc]

    conn = sqlite3.connect(path_from_url(sqlite_url))
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()
    with open_log(sqlite_url) as log:
        ends = log.end_offsets("crash")
        with log.consumer() as consumer:
            consumer.assign({TopicPartition("crash", p): OFFSET_BEGINNING for p in (0, 1)})
            records = read_records(consumer, sum(ends.values()))
    found = {(r.partition, r.offset): r for r in records}
    for partition, offset, i in acked:
        record = found[(partition, offset)]
        assert record.value == b"value-%d" % i + bytes(i % 200)
        assert record.key == b"key-%d" % i
        assert record.headers == (("i", b"%d" % i),)
    # Offsets stayed contiguous per partition through the crash.
    for p in (0, 1):
        assert sorted(o for (q, o) in found if q == p) == list(range(ends[p]))


PRODUCER_CHILD = """
    import sys
    from streams.log import open_log

    with open_log(sys.argv[1]) as log, log.producer() as producer:
        for i in range(int(sys.argv[2])):
            producer.produce("shared", b"%d" % i)
"""


def test_consumer_sees_records_from_another_process(slog: SqliteLog, sqlite_url: str) -> None:
    slog.create_topic("shared")
    with slog.consumer() as consumer:
        consumer.assign({TopicPartition("shared", 0): OFFSET_BEGINNING})
        child = run_child(PRODUCER_CHILD, sqlite_url, "40")
        records = read_records(consumer, 40, timeout=60)
        _, err = child.communicate(timeout=60)
        assert child.returncode == 0, err
    assert [r.value for r in records] == [b"%d" % i for i in range(40)]


def test_two_log_objects_on_one_file_wake_each_other(slog: SqliteLog, sqlite_url: str) -> None:
    slog.create_topic("t")
    got: list[bytes | None] = []
    with slog.consumer() as consumer, open_log(sqlite_url) as other:
        consumer.assign({TopicPartition("t", 0): OFFSET_BEGINNING})
        waiting = threading.Thread(target=lambda: got.extend(r.value for r in consumer.poll(timeout=20)))
        waiting.start()
        with other.producer() as producer:
            producer.produce("t", b"hello")
        waiting.join(30)
    assert got == [b"hello"]
