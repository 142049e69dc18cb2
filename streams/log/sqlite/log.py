"""``SqliteLog``: a log stored in one SQLite file (WAL mode, ``synchronous=FULL``); its topics, offsets,
compaction, and the clients it opens.

Layout (``connection.SCHEMA``): a topic row per topic (with an integer id that is never reused, so a re-created
topic starts fresh), one row per partition holding its next offset, and one ``records`` table keyed by
(topic id, partition, offset) WITHOUT ROWID, so a fetch is a range scan of one B-tree.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from pathlib import Path

from streams.log.base import (
    Capabilities,
    GroupSettings,
    Log,
    StorageError,
    TopicExistsError,
    TopicInfo,
    TopicPartition,
    UnknownTopicError,
    check_partitions,
    check_topic_name,
)
from streams.log.sqlite.connection import (
    SCHEMA,
    Db,
    max_message_bytes,
    memory_dbs,
    memory_name,
    path_from_url,
    read_group_offsets,
    shared_for,
    storage_error,
    translated,
)
from streams.log.sqlite.consumer import SqliteConsumer
from streams.log.sqlite.lease import SqliteLease
from streams.log.sqlite.producer import SqliteProducer

__all__ = ["SqliteLog"]

DEFAULT_MAX_RECORD_BYTES = 8 * 1024 * 1024
DEFAULT_POLL_INTERVAL = 0.025
DEFAULT_BUSY_TIMEOUT = 30.0


class SqliteLog(Log):
    """A log stored in one SQLite file. Options: ``max_record_bytes``, ``poll_interval`` (seconds between
    checks for other processes' writes while a consumer waits), ``busy_timeout`` (seconds). ``groups`` is
    accepted for symmetry with Kafka and has no effect: there is no group membership to tune."""

    capabilities = Capabilities(
        group_membership=False, transactions=True, compacts_itself=False, buffers_until_flush=True, leases=True
    )

    def __init__(
        self,
        url: str,
        *,
        max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES,
        poll_interval: float = DEFAULT_POLL_INTERVAL,
        busy_timeout: float = DEFAULT_BUSY_TIMEOUT,
        groups: GroupSettings | None = None,
    ) -> None:
        self.url = url
        self.path = path_from_url(url)
        self.max_record_bytes = max_record_bytes
        self.poll_interval = poll_interval
        self.busy_timeout = busy_timeout
        name = memory_name(url)
        self._memory = None if name is None else memory_dbs.claim(name)
        if self._memory is not None:
            self._shared = self._memory.shared
        else:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as e:
                raise StorageError(f"SQLite log {self.path}: cannot create its directory: {e}") from e
            self._shared = shared_for(self.path)
        try:
            self._db = Db(self.path, self._shared, self.busy_timeout, self._memory)
            with self._db.write() as conn:
                for statement in SCHEMA.split(";"):
                    if statement.strip():
                        conn.execute(statement)
        except sqlite3.Error as e:
            raise storage_error(self.path, "opening", e) from e
        self._closed = False

    def connect_client(self) -> Db:
        memory = None if self._memory is None else memory_dbs.claim_again(self._memory)
        return Db(self.path, self._shared, self.busy_timeout, memory)

    def describe(self) -> str:
        if self._memory is not None:
            return f"sqlite (embedded), in memory{f' ({self._memory.name})' if self._memory.name else ''}"
        return f"sqlite (embedded), data at {self.path.resolve()}"

    @property
    def local_path(self) -> Path | None:
        return None if self._memory is not None else self.path

    # topics

    @translated
    def create_topic(
        self, name: str, partitions: int = 1, *, compacted: bool = False, config: dict[str, str] | None = None
    ) -> TopicInfo:
        check_topic_name(name)
        check_partitions(name, partitions)
        config = dict(config or {})
        if compacted and "compact" not in config.get("cleanup.policy", ""):
            config["cleanup.policy"] = "compact"
        elif "compact" in config.get("cleanup.policy", "").split(","):
            compacted = True
        max_message_bytes(name, config)  # a bad value is refused now, not at the first write
        with self._db.write() as conn:
            if conn.execute("SELECT 1 FROM topics WHERE name = ?", (name,)).fetchone():
                raise TopicExistsError(f"topic {name!r} already exists")
            cur = conn.execute(
                "INSERT INTO topics (name, partitions, compacted, config) VALUES (?, ?, ?, ?)",
                (name, partitions, int(compacted), json.dumps(config, sort_keys=True)),
            )
            conn.executemany(
                "INSERT INTO partitions (topic_id, partition, next_offset) VALUES (?, ?, 0)",
                [(cur.lastrowid, p) for p in range(partitions)],
            )
        return TopicInfo(name, partitions, compacted, config)

    @translated
    def describe_topic(self, name: str) -> TopicInfo | None:
        with self._db.lock:
            row = self._db.conn.execute(
                "SELECT partitions, compacted, config FROM topics WHERE name = ?", (name,)
            ).fetchone()
        if row is None:
            return None
        return TopicInfo(name, row[0], bool(row[1]), json.loads(row[2]))

    @translated
    def delete_topic(self, name: str) -> None:
        with self._db.write() as conn:
            row = conn.execute("SELECT id FROM topics WHERE name = ?", (name,)).fetchone()
            if row is None:
                raise UnknownTopicError(f"cannot delete topic {name!r}: it does not exist")
            conn.execute("DELETE FROM records WHERE topic_id = ?", row)
            conn.execute("DELETE FROM partitions WHERE topic_id = ?", row)
            conn.execute("DELETE FROM topics WHERE id = ?", row)
            # As on Kafka, a deleted topic's committed offsets go with it.
            conn.execute("DELETE FROM group_offsets WHERE topic = ?", (name,))

    @translated
    def list_topics(self) -> list[str]:
        with self._db.lock:
            return [r[0] for r in self._db.conn.execute("SELECT name FROM topics ORDER BY name")]

    # clients

    @translated
    def producer(self, transactional_id: str | None = None) -> SqliteProducer:
        return SqliteProducer(self, transactional_id)

    @translated
    def consumer(
        self, group: str | None = None, *, client_id: str | None = None, read_committed: bool = True
    ) -> SqliteConsumer:
        # read_committed changes nothing: a transaction's records are written only when it commits.
        return SqliteConsumer(self, group, client_id)

    def lease(self, name: str, holder: str, timeout: float) -> SqliteLease:
        return SqliteLease(self, name, holder, timeout)

    # offsets

    @translated
    def end_offsets(self, topic: str) -> dict[int, int]:
        return self._partition_offsets(topic, "p.next_offset")

    @translated
    def start_offsets(self, topic: str) -> dict[int, int]:
        # The partition's next offset where it holds no record (all compacted away, or none written).
        return self._partition_offsets(
            topic,
            "COALESCE((SELECT MIN(r.offset) FROM records r WHERE r.topic_id = p.topic_id "
            "AND r.partition = p.partition), p.next_offset)",
        )

    def _partition_offsets(self, topic: str, offset_sql: str) -> dict[int, int]:
        """``offset_sql`` (an SQL expression over the partition row ``p``) for each partition of ``topic``."""
        with self._db.lock:
            rows = self._db.conn.execute(
                f"SELECT p.partition, {offset_sql} FROM partitions p JOIN topics t ON t.id = p.topic_id "
                "WHERE t.name = ? ORDER BY p.partition",
                (topic,),
            ).fetchall()
        if not rows:
            raise UnknownTopicError(f"topic {topic!r} does not exist")
        return dict(rows)

    @translated
    def committed(self, group: str, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int | None]:
        return read_group_offsets(self._db, group, partitions)

    # compaction

    @translated
    def compact(self, topic: str) -> int:
        """Delete every record superseded by a later record with the same key in the same partition
        (the newest per key stays, tombstones included). Offsets are never reused. Returns how many
        records were deleted."""
        meta = self._db.topic(topic)
        if meta is None:
            raise UnknownTopicError(f"cannot compact topic {topic!r}: it does not exist")
        deleted = 0
        for partition in range(meta.partitions):
            # One partition per transaction keeps the write lock short; the read and the delete share
            # the transaction so a concurrent append cannot be mistaken for superseded.
            with self._db.write() as conn:
                latest: dict[bytes, int] = {}
                doomed: list[tuple[int, int, int]] = []
                for offset, key in conn.execute(
                    "SELECT offset, key FROM records WHERE topic_id = ? AND partition = ? ORDER BY offset",
                    (meta.id, partition),
                ):
                    if key is None:
                        continue
                    previous = latest.get(key)
                    if previous is not None:
                        doomed.append((meta.id, partition, previous))
                    latest[key] = offset
                conn.executemany("DELETE FROM records WHERE topic_id = ? AND partition = ? AND offset = ?", doomed)
                deleted += len(doomed)
        return deleted

    @translated
    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._db.close()
