"""The embedded backend: the whole log in one SQLite file (WAL mode, ``synchronous=FULL``).

Layout: a topic row per topic (with an integer id that is never reused, so a re-created topic starts
fresh), one row per partition holding its next offset, and one ``records`` table keyed by
(topic id, partition, offset) WITHOUT ROWID, so a fetch is a range scan of one B-tree.

- A producer buffers ``send``s in memory; ``flush`` writes the whole buffer in one SQLite transaction,
  then fires delivery callbacks: a record whose flush returned is on disk.
- A transactional producer keeps its records and group offsets until ``commit_transaction``, which
  writes both in one SQLite transaction after checking its epoch; aborted records are never written.
- Consumers wait on a per-file condition variable that in-process writers notify; writes from other
  processes are noticed by polling ``PRAGMA data_version`` every ``poll_interval`` seconds.
- Group membership: on SQLite one consumer instance owns all partitions of the topics it subscribes
  to (two members of a group each get everything). ``on_assign`` runs inside the first ``poll`` after
  ``subscribe``, as with Kafka, so callers written against one backend work on the other.
- ``sqlite:///:memory:`` is a private in-memory log (nothing on disk); ``sqlite:///:memory:NAME`` is one that
  every log opened with that URL in this process shares while any of them is open. Each SQLite connection to
  ``:memory:`` is a database of its own, so there every producer, consumer and lease shares one connection
  under one lock.
- Leases (``Log.lease``): a row per name holding the holder and the wall-clock time its lease expires
  (the processes share one machine, so they share the clock). The holder renews it every quarter of the
  timeout; anyone takes a row that expired or was released.
"""

from __future__ import annotations

import functools
import json
import os
import sqlite3
import struct
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

from streams.log.base import (
    OFFSET_BEGINNING,
    OFFSET_END,
    Capabilities,
    Consumer,
    DeliveryCallback,
    GroupSettings,
    Headers,
    Lease,
    Log,
    LogError,
    LogTimeoutError,
    Producer,
    RebalanceCallback,
    Record,
    RecordMetadata,
    RecordTooLargeError,
    StorageError,
    StorageFullError,
    TopicConfigError,
    TopicExistsError,
    TopicInfo,
    TopicPartition,
    TransactionError,
    TransactionState,
    UnknownTopicError,
    check_offsets,
    check_partitions,
    check_topic_name,
)
from streams.log.partitioner import RoundRobin, partition_for_key

DEFAULT_MAX_RECORD_BYTES = 8 * 1024 * 1024
DEFAULT_POLL_INTERVAL = 0.025
DEFAULT_BUSY_TIMEOUT = 30.0
_DB_SUFFIXES = (".db", ".sqlite", ".sqlite3")
_MEMORY = ":memory:"
_NEEDS_GROUP = "needs a consumer group: create the consumer with log.consumer(group=...)"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS topics (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL UNIQUE,
    partitions INTEGER NOT NULL,
    compacted INTEGER NOT NULL,
    config TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS partitions (
    topic_id INTEGER NOT NULL,
    partition INTEGER NOT NULL,
    next_offset INTEGER NOT NULL,
    PRIMARY KEY (topic_id, partition)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS records (
    topic_id INTEGER NOT NULL,
    partition INTEGER NOT NULL,
    offset INTEGER NOT NULL,
    key BLOB,
    value BLOB,
    timestamp INTEGER NOT NULL,
    headers BLOB,
    PRIMARY KEY (topic_id, partition, offset)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS group_offsets (
    group_id TEXT NOT NULL,
    topic TEXT NOT NULL,
    partition INTEGER NOT NULL,
    offset INTEGER NOT NULL,
    PRIMARY KEY (group_id, topic, partition)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS transactional_producers (
    transactional_id TEXT PRIMARY KEY,
    epoch INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS leases (
    name TEXT PRIMARY KEY,
    holder TEXT NOT NULL,
    expires_ms INTEGER NOT NULL
) WITHOUT ROWID;
"""


def path_from_url(url: str) -> Path:
    """``sqlite:///./data`` → ``./data/log.sqlite3``; ``sqlite:////abs/x.db`` → ``/abs/x.db``;
    ``sqlite:///:memory:[name]`` → ``:memory:[name]`` (no file: see ``memory_name``).

    A path ending in .db/.sqlite/.sqlite3 is the database file; anything else is a directory."""
    prefix = "sqlite:///"
    if not url.startswith(prefix) or len(url) == len(prefix):
        raise ValueError(
            f"bad SQLite log URL {url!r}: expected sqlite:///relative/path, sqlite:////abs/path "
            f"or sqlite:///:memory:[name]"
        )
    if memory_name(url) is not None:
        return Path(url[len(prefix) :])
    path = Path(url[len(prefix) :])
    if path.suffix.lower() in _DB_SUFFIXES and not path.is_dir():
        return path
    return path / "log.sqlite3"


def memory_name(url: str) -> str | None:
    """The name of an in-memory log URL (``""`` for a private one), None for a file."""
    rest = url[len("sqlite:///") :]
    return rest[len(_MEMORY) :] if url.startswith("sqlite:///") and rest.startswith(_MEMORY) else None


# --- header and value encoding -------------------------------------------------------------------

_HNAME = struct.Struct(">H")
_HVALUE = struct.Struct(">i")


def _encode_headers(headers: Headers) -> bytes | None:
    if not headers:
        return None
    out = bytearray()
    for name, value in headers:
        raw = name.encode()
        out += _HNAME.pack(len(raw)) + raw
        if value is None:
            out += _HVALUE.pack(-1)
        else:
            out += _HVALUE.pack(len(value)) + value
    return bytes(out)


def _decode_headers(blob: bytes | None) -> Headers:
    if not blob:
        return ()
    out: list[tuple[str, bytes | None]] = []
    pos = 0
    while pos < len(blob):
        (nlen,) = _HNAME.unpack_from(blob, pos)
        pos += 2
        name = blob[pos : pos + nlen].decode()
        pos += nlen
        (vlen,) = _HVALUE.unpack_from(blob, pos)
        pos += 4
        if vlen < 0:
            out.append((name, None))
        else:
            out.append((name, blob[pos : pos + vlen]))
            pos += vlen
    return tuple(out)


def _as_bytes(what: str, data: object) -> bytes | None:
    if data is None or type(data) is bytes:
        return data
    if isinstance(data, bytes | bytearray | memoryview):
        return bytes(data)
    raise TypeError(f"record {what} must be bytes or None, got {type(data).__name__}")


def _normalize_headers(headers: Iterable[tuple[str, bytes | None]] | None) -> Headers:
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


# --- SQLite's errors as the log's own ---------------------------------------------------------

# SQLite's primary result codes this backend tells apart (https://sqlite.org/rescode.html)
_SQLITE_BUSY, _SQLITE_LOCKED, _SQLITE_FULL = 5, 6, 13


def _storage_error(path: Path, doing: str, e: sqlite3.Error) -> LogError:
    """The ``LogError`` that says what ``e`` means for the caller (``doing`` names the operation)."""
    code = getattr(e, "sqlite_errorcode", None)
    primary = code & 0xFF if isinstance(code, int) else None
    text = f"SQLite log {path}: {doing} failed: {e}"
    if primary == _SQLITE_FULL:
        return StorageFullError(f"{text} (no room left for the log's file; nothing was written)")
    if primary in (_SQLITE_BUSY, _SQLITE_LOCKED):
        return LogTimeoutError(f"{text} (another connection held the database for longer than busy_timeout)")
    return StorageError(text)


class _OnFile(Protocol):
    _db: _Db


_F = TypeVar("_F", bound=Callable[..., Any])


def _translated(method: _F) -> _F:
    """Public methods wear this: an ``sqlite3.Error`` leaves as the log's own error (``_storage_error``), so
    callers handle one family of exceptions whatever the backend."""

    @functools.wraps(method)
    def call(self: _OnFile, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except sqlite3.Error as e:
            raise _storage_error(self._db.path, method.__name__, e) from e

    return call  # type: ignore[return-value]


# --- per-file shared state ---------------------------------------------------------------------


class _SharedFile:
    """State shared by every connection to one database file in this process.

    ``write_lock`` serialises this process's writers so they queue on a Python lock instead of SQLite's
    sleep-and-retry busy handler; ``changed`` wakes consumers, ``seq`` lets them detect a missed wake-up."""

    def __init__(self) -> None:
        self.write_lock = threading.Lock()
        self.changed = threading.Condition()
        self.seq = 0

    def notify(self) -> None:
        with self.changed:
            self.seq += 1
            self.changed.notify_all()


_shared_files: dict[str, _SharedFile] = {}
_shared_files_lock = threading.Lock()


def _shared_for(path: Path) -> _SharedFile:
    key = os.path.realpath(path)
    with _shared_files_lock:
        shared = _shared_files.get(key)
        if shared is None:
            shared = _shared_files[key] = _SharedFile()
        return shared


class _InMemory:
    """One in-memory database: a single connection that every ``_Db`` of it shares under one lock, alive while
    any of them is open (``users``)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.conn = sqlite3.connect(_MEMORY, isolation_level=None, check_same_thread=False)
        self.lock = threading.RLock()
        self.shared = _SharedFile()
        self.users = 0


_memory_dbs: dict[str, _InMemory] = {}  # the named ones


def _open_memory(name: str) -> _InMemory:
    """The named in-memory database (created on first use) or, for ``""``, a new private one; claimed once."""
    with _shared_files_lock:
        db = _memory_dbs.get(name) if name else None
        if db is None:
            db = _InMemory(name)
            if name:
                _memory_dbs[name] = db
        db.users += 1
        return db


def _claim_memory(db: _InMemory) -> _InMemory:
    with _shared_files_lock:
        db.users += 1
        return db


def _release_memory(db: _InMemory) -> None:
    with _shared_files_lock:
        db.users -= 1
        if db.users > 0:
            return
        if db.name and _memory_dbs.get(db.name) is db:
            del _memory_dbs[db.name]
    with db.lock:
        db.conn.close()


@dataclass(slots=True)
class _TopicMeta:
    id: int
    partitions: int
    compacted: bool


def _max_message_bytes(name: str, config: dict[str, str]) -> int | None:
    """The topic's ``max.message.bytes`` (Kafka's per-topic record size limit), None when unset."""
    raw = config.get("max.message.bytes")
    if raw is None:
        return None
    try:
        limit = int(raw)
    except (TypeError, ValueError):
        limit = 0
    if limit <= 0:
        raise TopicConfigError(f"topic {name!r}: max.message.bytes must be a positive integer, got {raw!r}")
    return limit


def _record_size(key: bytes | None, value: bytes | None, headers: Headers) -> int:
    size = (len(value) if value else 0) + (len(key) if key else 0)
    return size + sum(len(n) + (len(v) if v else 0) for n, v in headers)


class _Db:
    """One SQLite connection with the pragmas every user needs and a lock for sharing it across threads; for an
    in-memory log, a claim on its one shared connection (``memory``, already claimed by the caller)."""

    def __init__(self, path: Path, shared: _SharedFile, busy_timeout: float, memory: _InMemory | None = None) -> None:
        self.path = path
        self.shared = shared
        self.memory = memory
        if memory is not None:
            self.lock, self.conn = memory.lock, memory.conn
            return
        self.lock = threading.RLock()
        self.conn = sqlite3.connect(path, timeout=busy_timeout, isolation_level=None, check_same_thread=False)
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute("PRAGMA synchronous=FULL")

    def write(self) -> _WriteTxn:
        return _WriteTxn(self)

    def topic(self, name: str) -> _TopicMeta | None:
        with self.lock:
            row = self.conn.execute("SELECT id, partitions, compacted FROM topics WHERE name = ?", (name,)).fetchone()
        return None if row is None else _TopicMeta(row[0], row[1], bool(row[2]))

    def close(self) -> None:
        if self.memory is not None:
            _release_memory(self.memory)
            return
        with self.lock:
            self.conn.close()


class _WriteTxn:
    """``with db.write() as conn:`` runs the block in one IMMEDIATE transaction, then wakes consumers."""

    def __init__(self, db: _Db) -> None:
        self.db = db

    def __enter__(self) -> sqlite3.Connection:
        self.db.lock.acquire()
        self.db.shared.write_lock.acquire()
        try:
            self.db.conn.execute("BEGIN IMMEDIATE")
        except BaseException:
            self.db.shared.write_lock.release()
            self.db.lock.release()
            raise
        return self.db.conn

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        conn = self.db.conn
        try:
            if exc_type is None:
                conn.execute("COMMIT")
            elif conn.in_transaction:
                # SQLite may have rolled back by itself (e.g. on SQLITE_FULL); the error that got us here
                # is the one to report, not a failing ROLLBACK.
                try:
                    conn.execute("ROLLBACK")
                except sqlite3.Error:
                    pass
        finally:
            self.db.shared.write_lock.release()
            self.db.lock.release()
        if exc_type is None:
            self.db.shared.notify()


# --- the log ---------------------------------------------------------------------------------------


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
        self._memory = None if name is None else _open_memory(name)
        if self._memory is not None:
            self._shared = self._memory.shared
        else:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as e:
                raise StorageError(f"SQLite log {self.path}: cannot create its directory: {e}") from e
            self._shared = _shared_for(self.path)
        try:
            self._db = _Db(self.path, self._shared, self.busy_timeout, self._memory)
            with self._db.write() as conn:
                for statement in _SCHEMA.split(";"):
                    if statement.strip():
                        conn.execute(statement)
        except sqlite3.Error as e:
            raise _storage_error(self.path, "opening", e) from e
        self._closed = False

    def _connect(self) -> _Db:
        memory = None if self._memory is None else _claim_memory(self._memory)
        return _Db(self.path, self._shared, self.busy_timeout, memory)

    def describe(self) -> str:
        if self._memory is not None:
            return f"sqlite (embedded), in memory{f' ({self._memory.name})' if self._memory.name else ''}"
        return f"sqlite (embedded), data at {self.path.resolve()}"

    @property
    def local_path(self) -> Path | None:
        return None if self._memory is not None else self.path

    # topics

    @_translated
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
        _max_message_bytes(name, config)  # a bad value is refused now, not at the first write
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

    @_translated
    def describe_topic(self, name: str) -> TopicInfo | None:
        with self._db.lock:
            row = self._db.conn.execute(
                "SELECT partitions, compacted, config FROM topics WHERE name = ?", (name,)
            ).fetchone()
        if row is None:
            return None
        return TopicInfo(name, row[0], bool(row[1]), json.loads(row[2]))

    @_translated
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

    @_translated
    def list_topics(self) -> list[str]:
        with self._db.lock:
            return [r[0] for r in self._db.conn.execute("SELECT name FROM topics ORDER BY name")]

    # clients

    @_translated
    def producer(self, transactional_id: str | None = None) -> SqliteProducer:
        return SqliteProducer(self, transactional_id)

    @_translated
    def consumer(
        self, group: str | None = None, *, client_id: str | None = None, read_committed: bool = True
    ) -> SqliteConsumer:
        # read_committed changes nothing: a transaction's records are written only when it commits.
        return SqliteConsumer(self, group, client_id)

    def lease(self, name: str, holder: str, timeout: float) -> SqliteLease:
        return SqliteLease(self, name, holder, timeout)

    # offsets

    @_translated
    def end_offsets(self, topic: str) -> dict[int, int]:
        with self._db.lock:
            rows = self._db.conn.execute(
                "SELECT p.partition, p.next_offset FROM partitions p JOIN topics t ON t.id = p.topic_id "
                "WHERE t.name = ? ORDER BY p.partition",
                (topic,),
            ).fetchall()
        if not rows:
            raise UnknownTopicError(f"topic {topic!r} does not exist")
        return dict(rows)

    @_translated
    def committed(self, group: str, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int | None]:
        return _read_committed(self._db, group, partitions)

    # compaction

    @_translated
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

    @_translated
    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._db.close()


def _read_committed(db: _Db, group: str, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int | None]:
    out: dict[TopicPartition, int | None] = {}
    with db.lock:
        for tp in partitions:
            row = db.conn.execute(
                "SELECT offset FROM group_offsets WHERE group_id = ? AND topic = ? AND partition = ?",
                (group, tp.topic, tp.partition),
            ).fetchone()
            out[tp] = None if row is None else row[0]
    return out


def _write_group_offsets(conn: sqlite3.Connection, group: str, offsets: dict[TopicPartition, int]) -> None:
    conn.executemany(
        "INSERT INTO group_offsets (group_id, topic, partition, offset) VALUES (?, ?, ?, ?) "
        "ON CONFLICT (group_id, topic, partition) DO UPDATE SET offset = excluded.offset",
        [(group, tp.topic, tp.partition, off) for tp, off in offsets.items()],
    )


# --- leases ----------------------------------------------------------------------------------------


class SqliteLease(Lease):
    """A row in ``leases``. Each lease object has its own token, so two objects of one holder name (a
    restarted process) never mistake each other's lease for their own."""

    def __init__(self, log: SqliteLog, name: str, holder: str, timeout: float) -> None:
        if not name:
            raise ValueError("a lease needs a name")
        if timeout <= 0:
            raise ValueError(f"lease timeout must be > 0 seconds, got {timeout!r}")
        self.name = name
        self.holder = holder
        self.timeout = timeout
        self._token = f"{holder}#{uuid.uuid4().hex[:12]}"
        self._db = log._connect()
        self._expires = 0.0  # wall-clock seconds until which this object holds the lease
        self._renew_at = 0.0
        self._closed = False

    @property
    def held(self) -> bool:
        return not self._closed and time.time() < self._expires

    @_translated
    def poll(self) -> bool:
        if self._closed:
            return False
        now = time.time()
        if now < self._renew_at and now < self._expires:
            return True
        now_ms = int(now * 1000)
        with self._db.lock:
            row = self._db.conn.execute("SELECT holder, expires_ms FROM leases WHERE name = ?", (self.name,)).fetchone()
        if row is not None and row[0] != self._token and row[1] > now_ms:
            self._expires = 0.0
            return False  # someone else holds it: no write, so waiting members cost no fsync
        with self._db.write() as conn:
            row = conn.execute("SELECT holder, expires_ms FROM leases WHERE name = ?", (self.name,)).fetchone()
            if row is not None and row[0] != self._token and row[1] > now_ms:
                self._expires = 0.0
                return False
            conn.execute(
                "INSERT INTO leases (name, holder, expires_ms) VALUES (?, ?, ?) "
                "ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_ms = excluded.expires_ms",
                (self.name, self._token, now_ms + int(self.timeout * 1000)),
            )
        self._expires = now + self.timeout
        self._renew_at = now + self.timeout / 4
        return True

    @_translated
    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            with self._db.write() as conn:
                conn.execute("DELETE FROM leases WHERE name = ? AND holder = ?", (self.name, self._token))
        finally:
            self._expires = 0.0
            self._db.close()


# --- producer --------------------------------------------------------------------------------------


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

    def __init__(self, log: SqliteLog, transactional_id: str | None) -> None:
        self._log = log
        self._db = log._connect()
        self._transactional_id = transactional_id
        self._buffer: list[_Pending] = []
        self._buffer_lock = threading.Lock()
        self._flush_lock = threading.Lock()
        self._topics: dict[str, _TopicMeta] = {}
        self._round_robin = RoundRobin()
        self.transaction = TransactionState(transactional_id)
        self._epoch: int | None = None
        self._txn: _Txn | None = None
        self._closed = False

    # record intake

    @_translated
    def send(
        self,
        topic: str,
        value: bytes | None,
        key: bytes | None = None,
        *,
        partition: int | None = None,
        headers: Iterable[tuple[str, bytes | None]] | None = None,
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
        pending = _Pending(topic, partition, key, value, timestamp, _encode_headers(hdrs), on_delivery, size)
        if self._transactional_id is not None:
            self.transaction.check_send()
            assert self._txn is not None
            self._txn.records.append(pending)
            return
        with self._buffer_lock:
            self._buffer.append(pending)

    def _topic(self, name: str, refresh: bool = False) -> _TopicMeta:
        meta = None if refresh else self._topics.get(name)
        if meta is None:
            meta = self._db.topic(name)
            if meta is None:
                raise UnknownTopicError(f"topic {name!r} does not exist: create it first (Log.create_topic)")
            self._topics[name] = meta
        return meta

    @_translated
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

    @_translated
    def produce(
        self,
        topic: str,
        value: bytes | None,
        key: bytes | None = None,
        *,
        partition: int | None = None,
        headers: Iterable[tuple[str, bytes | None]] | None = None,
        timestamp: int | None = None,
        timeout: float | None = None,
    ) -> RecordMetadata:
        return super().produce(
            topic, value, key, partition=partition, headers=headers, timestamp=timestamp, timeout=timeout
        )

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
                limits[rec.topic] = None if row is None else _max_message_bytes(rec.topic, json.loads(row[1]))
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
                    headers = _decode_headers(rec.headers)
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

    @_translated
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

    @_translated
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

    @_translated
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
                        _write_group_offsets(conn, group, offsets)
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

    @_translated
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


# --- consumer --------------------------------------------------------------------------------------


class SqliteConsumer(Consumer):
    """Reads from its own connection. Not thread-safe (like Kafka's consumer): one thread owns it."""

    def __init__(self, log: SqliteLog, group: str | None, client_id: str | None) -> None:
        self.group = group
        self.client_id = client_id
        self._log = log
        self._db = log._connect()
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

    def _meta(self, topic: str) -> _TopicMeta:
        meta = self._db.topic(topic)
        if meta is None:
            raise UnknownTopicError(f"topic {topic!r} does not exist")
        return meta

    def _resolve(self, tp: TopicPartition, offset: int, meta: _TopicMeta) -> int:
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

    @_translated
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

    @_translated
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
        committed = _read_committed(self._db, self.group, tps)
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

    @_translated
    def poll(self, timeout: float = 1.0, max_records: int = 500) -> list[Record]:
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
            records = self._fetch(max_records)
            if records:
                return records
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return []
            with shared.changed:
                if shared.seq == seq:
                    shared.changed.wait(min(remaining, self._log.poll_interval))

    def _fetch(self, max_records: int) -> list[Record]:
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
            out: list[Record] = []
            conn.execute("BEGIN")  # one snapshot for all partitions
            try:
                for tp in tps[start:] + tps[:start]:
                    left = max_records - len(out)
                    if left <= 0:
                        break
                    rows = conn.execute(
                        "SELECT offset, key, value, timestamp, headers FROM records "
                        "WHERE topic_id = ? AND partition = ? AND offset >= ? ORDER BY offset LIMIT ?",
                        (self._topic_ids[tp.topic], tp.partition, self._positions[tp], left),
                    ).fetchall()
                    if rows:
                        topic, partition = tp.topic, tp.partition
                        out.extend(
                            Record(topic, partition, o, k, v, ts, _decode_headers(h) if h else ())
                            for o, k, v, ts, h in rows
                        )
                        self._positions[tp] = rows[-1][0] + 1
            finally:
                conn.execute("COMMIT")
            self._data_version = None if out else version
        return out

    @_translated
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

    @_translated
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
            _write_group_offsets(conn, self.group, offsets)

    @_translated
    def committed(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int | None]:
        self._check_open()
        if self.group is None:
            raise LogError(f"committed() {_NEEDS_GROUP}")
        return _read_committed(self._db, self.group, partitions)

    @_translated
    def close(self) -> None:
        if self._closed:
            return
        try:
            self._revoke()
        finally:
            self._closed = True
            self._db.close()


__all__ = ["SqliteConsumer", "SqliteLease", "SqliteLog", "SqliteProducer", "path_from_url"]
