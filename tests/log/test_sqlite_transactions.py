"""Transactions on the SQLite backend: a refused record aborts all, fencing across log objects."""

from __future__ import annotations

import pytest

from streams.log import (
    ProducerFencedError,
    RecordTooLargeError,
    TransactionError,
    open_log,
)
from streams.log.sqlite import SqliteLog


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


def test_fencing_works_across_log_objects(slog: SqliteLog, sqlite_url: str) -> None:
    slog.create_topic("t")
    old = slog.producer("tx")
    old.init_transactions()
    old.begin_transaction()
    old.send("t", b"zombie")
    with open_log(sqlite_url) as other, other.producer("tx") as new:
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
