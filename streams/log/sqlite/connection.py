"""The SQLite log's database: the file a URL names (or an in-memory database), its tables, the connection every
client opens with its write transaction, the encoding of headers, and SQLite's errors as the log's own.

- Connections to one file in this process share a write lock and a condition variable that every commit
  notifies (``_SharedFile``), so writers queue in Python and waiting consumers wake at once.
- ``sqlite:///:memory:`` is a private in-memory log (nothing on disk); ``sqlite:///:memory:NAME`` is one that
  every log opened with that URL in this process shares while any of them is open. Each SQLite connection to
  ``:memory:`` is a database of its own, so there every producer, consumer and lease shares one connection
  under one lock.
- Every public method of the backend that reaches SQLite wears ``translated``, so an ``sqlite3.Error`` leaves
  as a ``LogError``.
"""

from __future__ import annotations

import functools
import os
import sqlite3
import struct
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

from streams.log.base import (
    Headers,
    LogError,
    LogTimeoutError,
    StorageError,
    StorageFullError,
    TopicConfigError,
    TopicPartition,
)
from streams.log.shared import SharedByName

__all__ = [
    "SCHEMA",
    "Db",
    "TopicMeta",
    "decode_headers",
    "encode_headers",
    "max_message_bytes",
    "memory_dbs",
    "memory_name",
    "path_from_url",
    "read_group_offsets",
    "shared_for",
    "storage_error",
    "translated",
    "write_group_offsets",
]

# --- the database a URL names ---------------------------------------------------------------------

_DB_SUFFIXES = (".db", ".sqlite", ".sqlite3")
_MEMORY = ":memory:"


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


# --- per-file shared state ------------------------------------------------------------------------


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


def shared_for(path: Path) -> _SharedFile:
    key = os.path.realpath(path)
    with _shared_files_lock:
        shared = _shared_files.get(key)
        if shared is None:
            shared = _shared_files[key] = _SharedFile()
        return shared


class _InMemory:
    """One in-memory database: a single connection that every ``Db`` of it shares under one lock, alive while
    any of them is open (``memory_dbs`` counts them)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.conn = sqlite3.connect(_MEMORY, isolation_level=None, check_same_thread=False)
        self.lock = threading.RLock()
        self.shared = _SharedFile()


def _close_memory(db: _InMemory) -> None:
    with db.lock:
        db.conn.close()


#: the in-memory databases, each shared by the ``Db``s of its name (``""``: a private one)
memory_dbs: SharedByName[_InMemory] = SharedByName(_InMemory, _close_memory)


class Db:
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

    def topic(self, name: str) -> TopicMeta | None:
        with self.lock:
            row = self.conn.execute("SELECT id, partitions, compacted FROM topics WHERE name = ?", (name,)).fetchone()
        return None if row is None else TopicMeta(row[0], row[1], bool(row[2]))

    def close(self) -> None:
        if self.memory is not None:
            memory_dbs.release(self.memory)
            return
        with self.lock:
            self.conn.close()


class _WriteTxn:
    """``with db.write() as conn:`` runs the block in one IMMEDIATE transaction, then wakes consumers."""

    def __init__(self, db: Db) -> None:
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


# --- tables ---------------------------------------------------------------------------------------


SCHEMA = """
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


class OwningLog(Protocol):
    """What a producer, consumer or lease asks of the ``SqliteLog`` that made it. The clients are typed against
    this, not the log's class, so the log imports its clients and never the other way round."""

    max_record_bytes: int
    poll_interval: float

    def connect_client(self) -> Db:
        """A connection of the client's own to the log's database."""
        ...


@dataclass(slots=True)
class TopicMeta:
    id: int
    partitions: int
    compacted: bool


def max_message_bytes(name: str, config: dict[str, str]) -> int | None:
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


def read_group_offsets(db: Db, group: str, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int | None]:
    out: dict[TopicPartition, int | None] = {}
    with db.lock:
        for tp in partitions:
            row = db.conn.execute(
                "SELECT offset FROM group_offsets WHERE group_id = ? AND topic = ? AND partition = ?",
                (group, tp.topic, tp.partition),
            ).fetchone()
            out[tp] = None if row is None else row[0]
    return out


def write_group_offsets(conn: sqlite3.Connection, group: str, offsets: dict[TopicPartition, int]) -> None:
    conn.executemany(
        "INSERT INTO group_offsets (group_id, topic, partition, offset) VALUES (?, ?, ?, ?) "
        "ON CONFLICT (group_id, topic, partition) DO UPDATE SET offset = excluded.offset",
        [(group, tp.topic, tp.partition, off) for tp, off in offsets.items()],
    )


# --- header encoding ------------------------------------------------------------------------------

_HNAME = struct.Struct(">H")
_HVALUE = struct.Struct(">i")


def encode_headers(headers: Headers) -> bytes | None:
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


def decode_headers(blob: bytes | None) -> Headers:
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


# --- SQLite's errors as the log's own -------------------------------------------------------------

# SQLite's primary result codes this backend tells apart (https://sqlite.org/rescode.html)
_SQLITE_BUSY, _SQLITE_LOCKED, _SQLITE_FULL = 5, 6, 13


def storage_error(path: Path, doing: str, e: sqlite3.Error) -> LogError:
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
    _db: Db


_F = TypeVar("_F", bound=Callable[..., Any])


def translated(method: _F) -> _F:
    """Public methods wear this: an ``sqlite3.Error`` leaves as the log's own error (``storage_error``), so
    callers handle one family of exceptions whatever the backend."""

    @functools.wraps(method)
    def call(self: _OnFile, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except sqlite3.Error as e:
            raise storage_error(self._db.path, method.__name__, e) from e

    return call  # type: ignore[return-value]
