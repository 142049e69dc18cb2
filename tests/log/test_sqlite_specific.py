"""Behaviour only the SQLite backend has: file layout, durability, compaction, several processes."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from streams.log import (
    OFFSET_BEGINNING,
    LogError,
    ProducerFencedError,
    RecordTooLargeError,
    StorageError,
    StorageFullError,
    TopicConfigError,
    TopicPartition,
    TransactionError,
    UnknownTopicError,
    open_log,
)
from streams.log.sqlite import SqliteLog, path_from_url
from tests.log.helpers import poll_through, poll_until

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path}/log"


@pytest.fixture
def slog(url: str) -> Iterator[SqliteLog]:
    log = open_log(url)
    assert isinstance(log, SqliteLog)
    yield log
    log.close()


def run_child(script: str, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(script), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=REPO,
    )


# --- URL → file ---------------------------------------------------------------------------------


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


# --- durability and reopening ---------------------------------------------------------------------


def test_everything_survives_reopening(url: str) -> None:
    tp = TopicPartition("t", 1)
    with open_log(url) as log:
        log.create_topic("t", 2, compacted=True, config={"retention.ms": "-1"})
        with log.producer() as producer:
            producer.produce("t", b"v", b"k", partition=1, headers=[("h", None)], timestamp=42)
        with log.consumer("g") as consumer:
            consumer.commit({tp: 1})
    with open_log(url) as log:
        info = log.describe_topic("t")
        assert info is not None
        assert (info.partitions, info.compacted) == (2, True)
        assert info.config == {"cleanup.policy": "compact", "retention.ms": "-1"}
        assert log.end_offsets("t") == {0: 0, 1: 1}
        assert log.committed("g", [tp]) == {tp: 1}
        with log.consumer() as consumer:
            consumer.assign({tp: OFFSET_BEGINNING})
            (record,) = poll_until(consumer, 1)
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


def test_acknowledged_records_survive_sigkill(url: str) -> None:
    with open_log(url) as log:
        log.create_topic("crash", 2)
    child = run_child(CRASH_CHILD, url)
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

    conn = sqlite3.connect(path_from_url(url))
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()
    with open_log(url) as log:
        ends = log.end_offsets("crash")
        with log.consumer() as consumer:
            consumer.assign({TopicPartition("crash", p): OFFSET_BEGINNING for p in (0, 1)})
            records = poll_until(consumer, sum(ends.values()))
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


def test_consumer_sees_records_from_another_process(slog: SqliteLog, url: str) -> None:
    slog.create_topic("shared")
    with slog.consumer() as consumer:
        consumer.assign({TopicPartition("shared", 0): OFFSET_BEGINNING})
        child = run_child(PRODUCER_CHILD, url, "40")
        records = poll_until(consumer, 40, timeout=60)
        _, err = child.communicate(timeout=60)
        assert child.returncode == 0, err
    assert [r.value for r in records] == [b"%d" % i for i in range(40)]


def test_two_log_objects_on_one_file_wake_each_other(slog: SqliteLog, url: str) -> None:
    slog.create_topic("t")
    got: list[bytes | None] = []
    with slog.consumer() as consumer, open_log(url) as other:
        consumer.assign({TopicPartition("t", 0): OFFSET_BEGINNING})
        waiting = threading.Thread(target=lambda: got.extend(r.value for r in consumer.poll(timeout=20)))
        waiting.start()
        with other.producer() as producer:
            producer.produce("t", b"hello")
        waiting.join(30)
    assert got == [b"hello"]


def test_threads_sharing_a_producer_get_unique_contiguous_offsets(slog: SqliteLog) -> None:
    slog.create_topic("t")
    offsets: list[int] = []
    lock = threading.Lock()
    with slog.producer() as producer:

        def work(n: int) -> None:
            for i in range(100):
                if i % 10 == 0:
                    md = producer.produce("t", b"%d-%d" % (n, i))
                    with lock:
                        offsets.append(md.offset)
                else:
                    producer.send("t", b"%d-%d" % (n, i), on_delivery=lambda md, err: offsets.append(md.offset))

        threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        producer.flush()
    assert sorted(offsets) == list(range(400))
    assert slog.end_offsets("t") == {0: 400}


# --- compaction -----------------------------------------------------------------------------------


def test_compaction_keeps_the_newest_record_per_key(slog: SqliteLog) -> None:
    slog.create_topic("c", 2, compacted=True)
    with slog.producer() as producer:
        for version in range(3):
            for key in (b"a", b"b", b"c"):
                producer.send("c", b"%s-%d" % (key, version), key, partition=0)
        producer.send("c", None, b"b", partition=0)  # tombstone for b: offset 9
        producer.send("c", b"other", b"a", partition=1)
        producer.flush()
    assert slog.compact("c") == 7
    assert slog.end_offsets("c") == {0: 10, 1: 1}
    with slog.consumer() as consumer:
        consumer.assign({TopicPartition("c", 0): OFFSET_BEGINNING, TopicPartition("c", 1): OFFSET_BEGINNING})
        records = poll_until(consumer, 4)
    assert sorted((r.partition, r.offset, r.key, r.value) for r in records) == [
        (0, 6, b"a", b"a-2"),
        (0, 8, b"c", b"c-2"),
        (0, 9, b"b", None),
        (1, 0, b"a", b"other"),
    ]
    # Offsets are never reused after compaction deleted rows.
    with slog.producer() as producer:
        assert producer.produce("c", b"new", b"a", partition=0).offset == 10
    assert slog.compact("c") == 1
    assert slog.compact("c") == 0


def test_compacted_topic_rejects_keyless_records(slog: SqliteLog) -> None:
    slog.create_topic("c", compacted=True)
    with slog.producer() as producer, pytest.raises(LogError, match="needs a key"):
        producer.send("c", b"v")


def test_compact_unknown_topic(slog: SqliteLog) -> None:
    with pytest.raises(UnknownTopicError, match="nope"):
        slog.compact("nope")


# --- producer errors ------------------------------------------------------------------------------


def test_send_to_unknown_topic_or_partition(slog: SqliteLog) -> None:
    slog.create_topic("t", 2)
    with slog.producer() as producer:
        with pytest.raises(UnknownTopicError, match="'missing' does not exist"):
            producer.send("missing", b"v")
        with pytest.raises(UnknownTopicError, match="partition 2 does not exist"):
            producer.send("t", b"v", partition=2)


def test_bad_value_types_are_rejected(slog: SqliteLog) -> None:
    slog.create_topic("t")
    with slog.producer() as producer:
        with pytest.raises(TypeError, match="value must be bytes"):
            producer.send("t", "text")  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="key must be bytes"):
            producer.send("t", b"v", 12)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="header 'h' value"):
            producer.send("t", b"v", headers=[("h", 1)])  # type: ignore[list-item]
        producer.send("t", bytearray(b"ok"), memoryview(b"k"))
        assert producer.produce("t", b"v").offset == 1


def test_record_size_limit_is_configurable(url: str) -> None:
    with open_log(url, max_record_bytes=100) as log, log.producer() as producer:
        log.create_topic("t")
        assert producer.produce("t", b"x" * 90, b"k" * 10).offset == 0
        with pytest.raises(RecordTooLargeError, match="101 bytes"):
            producer.produce("t", b"x" * 91, b"k" * 10)


def test_a_bad_max_message_bytes_is_refused_at_create_topic(slog: SqliteLog) -> None:
    for bad in ("0", "-5", "1kb"):
        with pytest.raises(TopicConfigError, match=rf"'t': max.message.bytes must be a positive integer, got '{bad}'"):
            slog.create_topic("t", config={"max.message.bytes": bad})
    assert slog.list_topics() == []


def test_a_failed_transaction_reports_every_delivery_and_writes_nothing(slog: SqliteLog) -> None:
    """The refused record's delivery fails with the log's reason, the others' with the abort (none is written)."""
    slog.create_topic("t", config={"max.message.bytes": "10"})
    reports: list[tuple[object, object]] = []
    with slog.producer("tx") as producer:
        producer.init_transactions()
        producer.begin_transaction()
        producer.send("t", b"small", on_delivery=lambda md, err: reports.append((md, err)))
        producer.send("t", b"x" * 20, b"k", on_delivery=lambda md, err: reports.append((md, err)))
        with pytest.raises(
            TransactionError,
            match=r"the transaction was aborted: delivery to topic 't' partition 0: "
            r"the record is 21 bytes, above the topic's max.message.bytes of 10",
        ):
            producer.commit_transaction()
        assert [(md, type(err)) for md, err in reports] == [(None, TransactionError), (None, RecordTooLargeError)]
        producer.begin_transaction()  # the producer goes on with a new transaction
        producer.send("t", b"ok")
        producer.commit_transaction()
    assert slog.end_offsets("t") == {0: 1}


def test_records_of_a_deleted_topic_fail_at_flush(slog: SqliteLog) -> None:
    slog.create_topic("t")
    errors: list[object] = []
    with slog.producer() as producer:
        producer.send("t", b"v", on_delivery=lambda md, err: errors.append(err))
        slog.delete_topic("t")
        with pytest.raises(UnknownTopicError):
            producer.flush()
    assert len(errors) == 1 and isinstance(errors[0], UnknownTopicError)


def test_recreated_topic_starts_empty(slog: SqliteLog) -> None:
    slog.create_topic("t")
    tp = TopicPartition("t", 0)
    with slog.producer() as producer:
        producer.produce("t", b"old")
        producer.produce("t", b"old")
        with slog.consumer("g") as consumer:
            consumer.commit({tp: 2})
        slog.delete_topic("t")
        slog.create_topic("t", 2)
        assert slog.end_offsets("t") == {0: 0, 1: 0}
        assert slog.committed("g", [tp]) == {tp: None}
        assert producer.produce("t", b"new", partition=1).offset == 0
    with slog.consumer() as consumer:
        consumer.assign({tp: OFFSET_BEGINNING, TopicPartition("t", 1): OFFSET_BEGINNING})
        assert [r.value for r in poll_until(consumer, 1)] == [b"new"]


# --- transactions ---------------------------------------------------------------------------------


def test_transactional_producer_needs_a_transaction(slog: SqliteLog) -> None:
    slog.create_topic("t")
    with slog.producer("tx") as producer:
        producer.init_transactions()
        with pytest.raises(TransactionError, match="begin_transaction"):
            producer.send("t", b"v")
        producer.begin_transaction()
        with pytest.raises(TransactionError, match="commit_transaction"):
            producer.produce("t", b"v")
        producer.flush()  # a no-op inside a transaction: nothing becomes visible
        assert slog.end_offsets("t") == {0: 0}
        producer.abort_transaction()


def test_fencing_works_across_log_objects(slog: SqliteLog, url: str) -> None:
    slog.create_topic("t")
    old = slog.producer("tx")
    old.init_transactions()
    old.begin_transaction()
    old.send("t", b"zombie")
    with open_log(url) as other, other.producer("tx") as new:
        new.init_transactions()
    with pytest.raises(ProducerFencedError, match="fenced"):
        old.commit_transaction()
    with pytest.raises(ProducerFencedError):
        old.send("t", b"again")
    old.close()
    assert slog.end_offsets("t") == {0: 0}


def test_fenced_producer_cannot_begin(slog: SqliteLog) -> None:
    slog.create_topic("t")
    with slog.producer("tx") as old, slog.producer("tx") as new:
        old.init_transactions()
        new.init_transactions()
        with pytest.raises(ProducerFencedError, match="'tx' \\(epoch 0\\) was fenced"):
            old.begin_transaction()
        new.begin_transaction()
        new.send("t", b"v")
        new.commit_transaction()
    assert slog.end_offsets("t") == {0: 1}


# --- consumer groups ------------------------------------------------------------------------------


def test_on_assign_runs_in_the_first_poll_and_every_member_owns_all(slog: SqliteLog) -> None:
    slog.create_topic("t", 3)
    all_tps = [TopicPartition("t", p) for p in range(3)]
    calls: list[str] = []
    with slog.consumer("g") as a, slog.consumer("g") as b:
        a.subscribe(["t"], on_assign=lambda tps: calls.append(f"a:{len(tps)}"))
        b.subscribe(["t"], on_assign=lambda tps: calls.append(f"b:{len(tps)}"))
        assert calls == []
        assert a.assignment() == []
        a.poll(timeout=0)
        b.poll(timeout=0)
        assert calls == ["a:3", "b:3"]
        assert a.assignment() == all_tps == b.assignment()


def test_on_assign_may_seek(slog: SqliteLog) -> None:
    slog.create_topic("t")
    with slog.producer() as producer:
        for i in range(5):
            producer.produce("t", b"%d" % i)
    with slog.consumer("g") as consumer:
        consumer.subscribe(["t"], on_assign=lambda tps: consumer.seek(tps[0], 3))
        assert [r.offset for r in poll_through(consumer, "t", 0, 4)] == [3, 4]


def test_group_calls_need_a_group(slog: SqliteLog) -> None:
    slog.create_topic("t")
    with slog.consumer() as consumer:
        with pytest.raises(LogError, match="needs a consumer group"):
            consumer.subscribe(["t"])
        with pytest.raises(LogError, match="needs a consumer group"):
            consumer.commit({TopicPartition("t", 0): 1})


def test_subscribe_to_unknown_topic(slog: SqliteLog) -> None:
    with slog.consumer("g") as consumer, pytest.raises(UnknownTopicError, match="nope"):
        consumer.subscribe(["nope"])


# --- SQLite's own failures leave as the log's errors -----------------------------------------------


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
        assert [r.value for r in poll_until(consumer, 2)] == [b"first", b"second"]


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
