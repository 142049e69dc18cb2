"""``SqliteConsumer``: reads the log's file through its own connection.

- A consumer waits on the file's condition variable, which in-process writers notify; writes from other
  processes are noticed by polling ``PRAGMA data_version`` every ``poll_interval`` seconds.
- Group membership: on SQLite one consumer instance owns all partitions of the topics it subscribes
  to (two members of a group each get everything). ``on_assign`` runs inside the first ``poll`` after
  ``subscribe``, as with Kafka, so callers written against one backend work on the other.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from streams.log.base import (
    OFFSET_BEGINNING,
    OFFSET_END,
    Consumer,
    LogError,
    RebalanceCallback,
    Record,
    RecordColumns,
    TopicPartition,
    UnknownTopicError,
    check_offsets,
)
from streams.log.sqlite.connection import (
    OwningLog,
    TopicMeta,
    decode_headers,
    read_group_offsets,
    translated,
    write_group_offsets,
)

__all__ = ["SqliteConsumer"]

#: A record as the consumer's query returns it: offset, key, value, timestamp, encoded headers (or None).
Row = tuple[int, bytes | None, bytes | None, int, bytes | None]

_NEEDS_GROUP = "needs a consumer group: create the consumer with log.consumer(group=...)"


class SqliteConsumer(Consumer):
    """Reads from its own connection. Not thread-safe (like Kafka's consumer): one thread owns it."""

    def __init__(self, log: OwningLog, group: str | None, client_id: str | None) -> None:
        self.group = group
        self.client_id = client_id
        self._log = log
        self._db = log.connect_client()
        self._positions: dict[TopicPartition, int] = {}
        self._topic_ids: dict[str, int] = {}
        self._subscribed: list[str] | None = None
        self._on_assign: RebalanceCallback | None = None
        self._on_revoke: RebalanceCallback | None = None
        self._assign_pending = False
        self._rotation = 0
        self._data_version: tuple[int, int] | None = None
        self._closed = False

    def _check_open(self) -> None:
        if self._closed:
            raise LogError("the consumer is closed")

    def _meta(self, topic: str) -> TopicMeta:
        meta = self._db.topic(topic)
        if meta is None:
            raise UnknownTopicError(f"topic {topic!r} does not exist")
        return meta

    def _resolve(self, tp: TopicPartition, offset: int, meta: TopicMeta) -> int:
        if not 0 <= tp.partition < meta.partitions:
            raise UnknownTopicError(
                f"partition {tp.partition} does not exist: topic {tp.topic!r} has {meta.partitions} partitions"
            )
        if offset == OFFSET_BEGINNING:
            return 0
        if offset == OFFSET_END:
            with self._db.lock:
                row = self._db.conn.execute(
                    "SELECT next_offset FROM partitions WHERE topic_id = ? AND partition = ?",
                    (meta.id, tp.partition),
                ).fetchone()
            return row[0] if row else 0
        if not isinstance(offset, int) or offset < 0:
            raise ValueError(
                f"offset for {tp.topic}[{tp.partition}] must be >= 0, OFFSET_BEGINNING or OFFSET_END, got {offset!r}"
            )
        return offset

    @translated
    def assign(self, partitions: dict[TopicPartition, int]) -> None:
        self._check_open()
        if self._subscribed is not None:
            raise LogError("assign() on a subscribed consumer: use one or the other")
        self._set_assignment(partitions)

    def _set_assignment(self, partitions: dict[TopicPartition, int]) -> None:
        positions: dict[TopicPartition, int] = {}
        topic_ids: dict[str, int] = {}
        for tp, offset in partitions.items():
            meta = self._meta(tp.topic)
            topic_ids[tp.topic] = meta.id
            positions[tp] = self._resolve(tp, offset, meta)
        self._positions = positions
        self._topic_ids = topic_ids
        self._data_version = None

    @translated
    def subscribe(
        self,
        topics: Sequence[str],
        on_assign: RebalanceCallback | None = None,
        on_revoke: RebalanceCallback | None = None,
    ) -> None:
        self._check_open()
        if self.group is None:
            raise LogError(f"subscribe() {_NEEDS_GROUP}")
        if isinstance(topics, str):
            raise TypeError("subscribe() takes a list of topic names, not a string")
        if self._subscribed is None and self._positions:
            raise LogError("subscribe() on a consumer with assigned partitions: use one or the other")
        metas = {t: self._meta(t) for t in topics}
        if self._subscribed is not None:
            self._revoke()
        tps = [TopicPartition(t, p) for t, meta in metas.items() for p in range(meta.partitions)]
        committed = read_group_offsets(self._db, self.group, tps)
        self._set_assignment({tp: OFFSET_BEGINNING if c is None else c for tp, c in committed.items()})
        self._subscribed = list(topics)
        self._on_assign, self._on_revoke = on_assign, on_revoke
        self._assign_pending = True

    def _revoke(self) -> None:
        if self._subscribed is not None and not self._assign_pending and self._on_revoke is not None:
            self._on_revoke(list(self._positions))
        self._positions = {}

    def assignment(self) -> list[TopicPartition]:
        if self._assign_pending:
            return []
        return list(self._positions)

    @translated
    def poll(self, timeout: float = 1.0, max_records: int = 500) -> list[Record]:
        return [
            Record(tp.topic, tp.partition, o, k, v, ts, decode_headers(h) if h else ())
            for tp, rows in self._wait(timeout, max_records)
            for o, k, v, ts, h in rows
        ]

    def poll_runs(self, timeout: float = 1.0, max_records: int = 500) -> list[RecordColumns]:
        # ``poll`` returns one partition's rows after another: its runs are ``poll_columns``' partitions.
        return self.poll_columns(timeout, max_records, headers=True)

    @translated
    def poll_columns(
        self, timeout: float = 1.0, max_records: int = 500, *, headers: bool = False
    ) -> list[RecordColumns]:
        # Straight from the rows, one list per column: no Record per row.
        out = []
        for tp, rows in self._wait(timeout, max_records):
            offsets, keys, values, timestamps, raw_headers = map(list, zip(*rows, strict=True))
            out.append(
                RecordColumns(
                    tp.topic,
                    tp.partition,
                    offsets,
                    keys,
                    values,
                    timestamps,
                    [decode_headers(h) if h else () for h in raw_headers] if headers else None,
                )
            )
        return out

    def _wait(self, timeout: float, max_records: int) -> list[tuple[TopicPartition, list[Row]]]:
        """The rows of the next records per partition (see ``_fetch``), waiting up to ``timeout`` for the first."""
        self._check_open()
        if max_records < 1:
            raise ValueError(f"max_records must be >= 1, got {max_records}")
        if self._assign_pending:
            # Like Kafka: the assignment callback runs inside poll, before any record is returned.
            self._assign_pending = False
            if self._on_assign is not None:
                self._on_assign(list(self._positions))
        deadline = time.monotonic() + max(timeout, 0.0)
        shared = self._db.shared
        while True:
            seq = shared.seq
            fetched = self._fetch(max_records)
            if fetched:
                return fetched
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return []
            with shared.changed:
                if shared.seq == seq:
                    shared.changed.wait(min(remaining, self._log.poll_interval))

    def _fetch(self, max_records: int) -> list[tuple[TopicPartition, list[Row]]]:
        """Up to ``max_records`` rows ``(offset, key, value, timestamp, headers)`` from the assigned partitions, per
        partition in offset order (only partitions with rows), read in one snapshot; the positions move past them."""
        if not self._positions:
            return []
        with self._db.lock:
            conn = self._db.conn
            # Skip the queries when nothing was committed since the last empty fetch (cheap for idle waits).
            # data_version misses commits made on this very connection (an in-memory log has only one): the
            # in-process commit count covers those.
            version = (conn.execute("PRAGMA data_version").fetchone()[0], self._db.shared.seq)
            if version == self._data_version and self._data_version is not None:
                return []
            tps = list(self._positions)
            start = self._rotation % len(tps)
            self._rotation += 1
            out: list[tuple[TopicPartition, list[Row]]] = []
            left = max_records
            conn.execute("BEGIN")  # one snapshot for all partitions
            try:
                for tp in tps[start:] + tps[:start]:
                    if left <= 0:
                        break
                    rows = conn.execute(
                        "SELECT offset, key, value, timestamp, headers FROM records "
                        "WHERE topic_id = ? AND partition = ? AND offset >= ? ORDER BY offset LIMIT ?",
                        (self._topic_ids[tp.topic], tp.partition, self._positions[tp], left),
                    ).fetchall()
                    if rows:
                        out.append((tp, rows))
                        left -= len(rows)
                        self._positions[tp] = rows[-1][0] + 1
            finally:
                conn.execute("COMMIT")
            self._data_version = None if out else version
        return out

    @translated
    def seek(self, tp: TopicPartition, offset: int) -> None:
        self._check_open()
        if tp not in self._positions:
            raise LogError(f"seek on {tp.topic}[{tp.partition}], which is not assigned to this consumer")
        self._positions[tp] = self._resolve(tp, offset, self._meta(tp.topic))
        self._data_version = None

    def position(self, tp: TopicPartition) -> int:
        self._check_open()
        if tp not in self._positions:
            raise LogError(f"position of {tp.topic}[{tp.partition}], which is not assigned to this consumer")
        return self._positions[tp]

    @translated
    def commit(self, offsets: dict[TopicPartition, int] | None = None) -> None:
        self._check_open()
        if self.group is None:
            raise LogError(f"commit() {_NEEDS_GROUP}")
        if offsets is None:
            offsets = dict(self._positions)
        check_offsets(offsets)
        if not offsets:
            return
        with self._db.write() as conn:
            write_group_offsets(conn, self.group, offsets)

    @translated
    def committed(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int | None]:
        self._check_open()
        if self.group is None:
            raise LogError(f"committed() {_NEEDS_GROUP}")
        return read_group_offsets(self._db, self.group, partitions)

    @translated
    def close(self) -> None:
        if self._closed:
            return
        try:
            self._revoke()
        finally:
            self._closed = True
            self._db.close()
