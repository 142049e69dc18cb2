"""``SqliteProducer``: buffers ``send``s in memory; ``flush`` writes the whole buffer in one SQLite transaction,
then fires delivery callbacks: a record whose flush returned is on disk.

A transactional producer keeps its records and group offsets until ``commit_transaction``, which writes both
in one SQLite transaction after checking its epoch; aborted records are never written.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from dataclasses import dataclass, field

from streams.log.base import (
    DeliveryCallback,
    HeaderPairs,
    Headers,
    LogError,
    Producer,
    Record,
    RecordMetadata,
    RecordTooLargeError,
    TopicPartition,
    TransactionError,
    TransactionState,
    UnknownTopicError,
    check_offsets,
)
from streams.log.partitioner import RoundRobin, partition_for_key
from streams.log.sqlite.connection import (
    OwningLog,
    TopicMeta,
    decode_headers,
    encode_headers,
    max_message_bytes,
    translated,
    write_group_offsets,
)

__all__ = ["SqliteProducer"]


def _as_bytes(what: str, data: object) -> bytes | None:
    if data is None or type(data) is bytes:
        return data
    if isinstance(data, bytes | bytearray | memoryview):
        return bytes(data)
    raise TypeError(f"record {what} must be bytes or None, got {type(data).__name__}")


def _normalize_headers(headers: HeaderPairs | None) -> Headers:
    if not headers:
        return ()
    out = []
    for item in headers:
        name, value = item
        if not isinstance(name, str):
            raise TypeError(f"header name must be str, got {type(name).__name__}")
        out.append((name, _as_bytes(f"header {name!r} value", value)))
    return tuple(out)


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def _record_size(key: bytes | None, value: bytes | None, headers: Headers) -> int:
    size = (len(value) if value else 0) + (len(key) if key else 0)
    return size + sum(len(n) + (len(v) if v else 0) for n, v in headers)


@dataclass(slots=True)
class _Pending:
    topic: str
    partition: int
    key: bytes | None
    value: bytes | None
    timestamp: int
    headers: bytes | None
    on_delivery: DeliveryCallback | None
    size: int  # what the topic's max.message.bytes is checked against when the record is written


@dataclass(slots=True)
class _Txn:
    records: list[_Pending] = field(default_factory=list)
    offsets: dict[str, dict[TopicPartition, int]] = field(default_factory=dict)


class _Refused(Exception):
    """A transaction's record the log refused; raised inside the write to roll it back."""

    def __init__(self, error: LogError) -> None:
        self.error = error


class SqliteProducer(Producer):
    """Buffers records in memory; ``flush`` (or ``commit_transaction``) writes them in one transaction."""

    def __init__(self, log: OwningLog, transactional_id: str | None) -> None:
        self._log = log
        self._db = log.connect_client()
        self._transactional_id = transactional_id
        self._buffer: list[_Pending] = []
        self._buffer_lock = threading.Lock()
        self._flush_lock = threading.Lock()
        self._topics: dict[str, TopicMeta] = {}
        self._round_robin = RoundRobin()
        self.transaction = TransactionState(transactional_id)
        self._epoch: int | None = None
        self._txn: _Txn | None = None
        self._closed = False

    # record intake

    @translated
    def send(
        self,
        topic: str,
        value: bytes | None,
        key: bytes | None = None,
        *,
        partition: int | None = None,
        headers: HeaderPairs | None = None,
        timestamp: int | None = None,
        on_delivery: DeliveryCallback | None = None,
    ) -> None:
        if self._closed:
            raise LogError("send on a closed producer")
        value = _as_bytes("value", value)
        key = _as_bytes("key", key)
        hdrs = _normalize_headers(headers)
        size = _record_size(key, value, hdrs)
        if size > self._log.max_record_bytes:
            raise RecordTooLargeError(
                f"record for topic {topic!r} is {size} bytes, above the maximum of "
                f"{self._log.max_record_bytes} bytes (max_record_bytes)"
            )
        meta = self._topic(topic)
        if partition is None:
            if key is not None:
                partition = partition_for_key(key, meta.partitions)
            else:
                partition = self._round_robin.next(topic, meta.partitions)
        elif not isinstance(partition, int):
            raise TypeError(f"partition must be an int, got {type(partition).__name__}")
        elif not 0 <= partition < meta.partitions:
            meta = self._topic(topic, refresh=True)  # the topic may have been re-created since cached
            if not 0 <= partition < meta.partitions:
                raise UnknownTopicError(
                    f"partition {partition} does not exist: topic {topic!r} has {meta.partitions} partitions"
                )
        if meta.compacted and key is None:
            raise LogError(f"topic {topic!r} is compacted: every record needs a key")
        if timestamp is None:
            timestamp = _now_ms()
        pending = _Pending(topic, partition, key, value, timestamp, encode_headers(hdrs), on_delivery, size)
        if self._transactional_id is not None:
            self.transaction.check_send()
            assert self._txn is not None
            self._txn.records.append(pending)
            return
        with self._buffer_lock:
            self._buffer.append(pending)

    def _topic(self, name: str, refresh: bool = False) -> TopicMeta:
        meta = None if refresh else self._topics.get(name)
        if meta is None:
            meta = self._db.topic(name)
            if meta is None:
                raise UnknownTopicError(f"topic {name!r} does not exist: create it first (Log.create_topic)")
            self._topics[name] = meta
        return meta

    @translated
    def flush(self, timeout: float | None = None) -> None:
        """Write everything sent so far in one transaction. Inside a transaction this does nothing: the
        records wait for ``commit_transaction``."""
        with self._flush_lock:
            with self._buffer_lock:
                batch, self._buffer = self._buffer, []
            if batch:
                with self._db.write() as conn:
                    results = self._insert(conn, batch)
                self._report(results)

    def _insert(
        self, conn: sqlite3.Connection, batch: list[_Pending]
    ) -> list[tuple[_Pending, RecordMetadata | None, LogError | None]]:
        ids: dict[str, int | None] = {}
        limits: dict[str, int | None] = {}
        next_offsets: dict[tuple[int, int], int] = {}
        rows: list[tuple[int, int, int, bytes | None, bytes | None, int, bytes | None]] = []
        results: list[tuple[_Pending, RecordMetadata | None, LogError | None]] = []
        for rec in batch:
            if rec.topic not in ids:
                # Re-resolve inside the transaction: the topic may have been deleted or re-created.
                row = conn.execute("SELECT id, config FROM topics WHERE name = ?", (rec.topic,)).fetchone()
                ids[rec.topic] = None if row is None else row[0]
                limits[rec.topic] = None if row is None else max_message_bytes(rec.topic, json.loads(row[1]))
                cached = self._topics.get(rec.topic)
                if cached is not None and (row is None or cached.id != row[0]):
                    self._topics.pop(rec.topic, None)
            topic_id = ids[rec.topic]
            slot = (topic_id, rec.partition) if topic_id is not None else None
            if slot is not None and slot not in next_offsets:
                row = conn.execute(
                    "SELECT next_offset FROM partitions WHERE topic_id = ? AND partition = ?", slot
                ).fetchone()
                if row is None:
                    slot = None
                else:
                    next_offsets[slot] = row[0]
            if slot is None:
                gone = UnknownTopicError(f"topic {rec.topic!r} partition {rec.partition} no longer exists")
                results.append((rec, None, gone))
                continue
            limit = limits[rec.topic]
            if limit is not None and rec.size > limit:
                # Checked when written, as a broker does: the delivery fails after the send was accepted.
                too_large = RecordTooLargeError(
                    f"delivery to topic {rec.topic!r} partition {rec.partition}: the record is {rec.size} bytes, "
                    f"above the topic's max.message.bytes of {limit}"
                )
                results.append((rec, None, too_large))
                continue
            offset = next_offsets[slot]
            next_offsets[slot] = offset + 1
            rows.append((slot[0], slot[1], offset, rec.key, rec.value, rec.timestamp, rec.headers))
            if rec.on_delivery is not None:  # only reports that someone reads are built (hot path)
                results.append((rec, RecordMetadata(rec.topic, rec.partition, offset, rec.timestamp), None))
        conn.executemany(
            "INSERT INTO records (topic_id, partition, offset, key, value, timestamp, headers) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            rows,
        )
        conn.executemany(
            "UPDATE partitions SET next_offset = ? WHERE topic_id = ? AND partition = ?",
            [(nxt, tid, p) for (tid, p), nxt in next_offsets.items()],
        )
        return results

    def _report(
        self, results: list[tuple[_Pending, RecordMetadata | None, LogError | None]], raise_first: bool = True
    ) -> None:
        first_error: LogError | None = None
        callback_error: BaseException | None = None
        failures = self.on_delivery_failure
        for rec, md, err in results:
            if err is not None:
                if first_error is None:
                    first_error = err
                if failures is not None and not isinstance(err, TransactionError):
                    headers = decode_headers(rec.headers)
                    failures(Record(rec.topic, rec.partition, -1, rec.key, rec.value, rec.timestamp, headers), err)
            if rec.on_delivery is not None:
                try:
                    rec.on_delivery(md, err)
                except Exception as exc:  # one failing callback must not starve the others
                    callback_error = callback_error or exc
        if callback_error is not None:
            raise callback_error
        if first_error is not None and raise_first:
            raise first_error

    # transactions

    def _check_epoch(self, conn: sqlite3.Connection) -> None:
        row = conn.execute(
            "SELECT epoch FROM transactional_producers WHERE transactional_id = ?", (self._transactional_id,)
        ).fetchone()
        if row is None or row[0] != self._epoch:
            self._txn = None
            raise self.transaction.fence(f"epoch {self._epoch}")

    @translated
    def init_transactions(self, timeout: float | None = None) -> None:
        self.transaction.init()
        tid = self._transactional_id
        with self._db.write() as conn:
            row = conn.execute(
                "SELECT epoch FROM transactional_producers WHERE transactional_id = ?", (tid,)
            ).fetchone()
            epoch = 0 if row is None else row[0] + 1
            conn.execute(
                "INSERT INTO transactional_producers (transactional_id, epoch) VALUES (?, ?) "
                "ON CONFLICT (transactional_id) DO UPDATE SET epoch = excluded.epoch",
                (tid, epoch),
            )
        self._epoch = epoch
        self.transaction.mark_initialized()

    @translated
    def begin_transaction(self) -> None:
        self.transaction.begin()
        # One cheap read per transaction, so a zombie learns it was fenced before it buffers more work.
        with self._db.lock:
            self._check_epoch(self._db.conn)
        self._txn = _Txn()

    def send_offsets_to_transaction(self, group: str, offsets: dict[TopicPartition, int]) -> None:
        if not group:
            raise ValueError("send_offsets_to_transaction needs a consumer group name")
        check_offsets(offsets)
        self.transaction.check_in_transaction("send_offsets_to_transaction")
        assert self._txn is not None
        self._txn.offsets.setdefault(group, {}).update(offsets)

    @translated
    def commit_transaction(self, timeout: float | None = None) -> None:
        self.transaction.check_in_transaction("commit_transaction")
        txn = self._txn
        assert txn is not None
        with self._flush_lock:
            self._txn = None
            self.transaction.end()
            results: list[tuple[_Pending, RecordMetadata | None, LogError | None]] = []
            try:
                with self._db.write() as conn:
                    self._check_epoch(conn)
                    for group, offsets in txn.offsets.items():
                        write_group_offsets(conn, group, offsets)
                    results = self._insert(conn, txn.records)
                    failed = next((err for _, _, err in results if err is not None), None)
                    if failed is not None:
                        raise _Refused(failed)  # rolls the SQLite transaction back
            except _Refused as refused:
                # All or nothing, as a Kafka transaction with a failed delivery must be aborted: nothing is
                # written; the refused records' deliveries fail with their error, the others' with the abort.
                aborted = TransactionError(f"commit_transaction: the transaction was aborted: {refused.error}")
                self._report([(rec, None, err or aborted) for rec, _, err in results], raise_first=False)
                raise aborted from refused.error
            self._report(results)

    def abort_transaction(self, timeout: float | None = None) -> None:
        self.transaction.check_in_transaction("abort_transaction")
        self._txn = None
        self.transaction.end()

    @translated
    def close(self) -> None:
        if self._closed:
            return
        try:
            if self._transactional_id is None:
                self.flush()
        finally:
            self._closed = True
            self._txn = None
            self._db.close()
