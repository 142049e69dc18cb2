"""The SQLite backend's producer: its refusals at send and at flush, threads sharing it."""

from __future__ import annotations

import threading

import pytest

from streams.log import (
    RecordTooLargeError,
    UnknownTopicError,
    open_log,
)
from streams.log.sqlite import SqliteLog


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


def test_record_size_limit_is_configurable(sqlite_url: str) -> None:
    with open_log(sqlite_url, max_record_bytes=100) as log, log.producer() as producer:
        log.create_topic("t")
        assert producer.produce("t", b"x" * 90, b"k" * 10).offset == 0
        with pytest.raises(RecordTooLargeError, match="101 bytes"):
            producer.produce("t", b"x" * 91, b"k" * 10)


def test_records_of_a_deleted_topic_fail_at_flush(slog: SqliteLog) -> None:
    slog.create_topic("t")
    errors: list[object] = []
    with slog.producer() as producer:
        producer.send("t", b"v", on_delivery=lambda md, err: errors.append(err))
        slog.delete_topic("t")
        with pytest.raises(UnknownTopicError):
            producer.flush()
    assert len(errors) == 1 and isinstance(errors[0], UnknownTopicError)


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
