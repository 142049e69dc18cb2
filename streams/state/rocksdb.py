"""The persistent key-value store: RocksDB through rocksdict (raw bytes keys and values), with an
object cache in front so hot keys are deserialized once.

Writes reach RocksDB only in ``persist``, after the task's input offsets are committed: RocksDB never
holds state from uncommitted input, so after a crash the local checkpoint plus the changelog rebuild
exactly the committed state."""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

try:
    from rocksdict import Options, Rdict, WriteBatch
except ImportError as e:  # the one optional package of the runtime
    raise ImportError(
        "RocksDB state stores need rocksdict: pip install 'schemakit[streams]' (or use store kind 'memory')"
    ) from e

from streams.errors import StateStoreError
from streams.state.cache import CachingKeyValueStore

__all__ = ["RocksDBKeyValueStore", "open_rocksdb"]

_MISSING = object()
_OPEN_RETRY_SECONDS = 15.0


def open_rocksdb(path: Path) -> Rdict:
    """Open (creating) a raw-bytes RocksDB at ``path``, waiting briefly for a lock another task still holds."""
    options = Options(raw_mode=True)
    options.create_if_missing(True)
    deadline = time.monotonic() + _OPEN_RETRY_SECONDS
    while True:
        try:
            return Rdict(str(path), options)
        except Exception as exc:
            # A task that just moved between threads of this process may still hold the lock briefly.
            if "lock" not in str(exc).lower() or time.monotonic() > deadline:
                raise StateStoreError(f"cannot open RocksDB store at {path}: {exc}") from exc
            time.sleep(0.05)


class RocksDBKeyValueStore(CachingKeyValueStore):
    persistent = True

    def __init__(self, *args: Any, path: Path, max_cache_entries: int = 100_000, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = open_rocksdb(path)
        self._cache: dict[bytes, Any] = {}  # value objects (None: known absent), clean and dirty
        self._max_cache = max(max_cache_entries, 1)
        self._pending: list[tuple[bytes, bytes | None]] = []

    def _lookup(self, kb: bytes) -> Any:
        value = self._cache.get(kb, _MISSING)
        if value is _MISSING:
            vb = self._db.get(kb)
            value = None if vb is None else self._vde(vb)
            cache = self._cache
            if len(cache) >= self._max_cache:
                self._shrink()
            cache[kb] = value
        return value

    def peek(self, key: Any) -> Any:
        kb = self.key_bytes(key)
        value = self._cache.get(kb, _MISSING)
        if value is _MISSING:
            vb = self._db.get(kb)
            value = None if vb is None else self._vde(vb)
        return self._value(value)

    def _shrink(self) -> None:
        # Drop clean entries; dirty and flushed-but-unpersisted ones are not in RocksDB yet, so they stay.
        cache = self._cache
        keep = {kb: cache[kb] for kb in self._dirty if kb in cache}
        for kb, _ in self._pending:
            if kb in cache:
                keep[kb] = cache[kb]
        self._cache = keep

    def _store(self, kb: bytes, value: Any) -> None:
        self._cache[kb] = value

    def _current(self, kb: bytes) -> Any:
        return self._cache.get(kb)

    def _items(self) -> Iterator[tuple[bytes, Any]]:
        return self._items_between(None, None)

    def _items_between(self, low: bytes | None, high: bytes | None) -> Iterator[tuple[bytes, Any]]:
        # Seek to ``low`` and stop after ``high``: a range reads and deserializes only its own entries.
        vde = self._vde
        merged: dict[bytes, Any] = {}
        # raw_mode: rocksdict's keys are bytes, which its type hints do not say
        for kb, vb in cast("Iterator[tuple[bytes, bytes]]", self._db.items(from_key=low)):
            if high is not None and kb > high:
                break
            merged[kb] = vde(vb)

        def inside(kb: bytes) -> bool:
            return (low is None or kb >= low) and (high is None or kb <= high)

        for kb in list(self._dirty):
            if inside(kb):
                merged[kb] = self._cache.get(kb)
        for kb in [kb for kb, _ in self._pending]:
            if kb not in self._dirty and inside(kb):
                merged[kb] = self._cache.get(kb, merged.get(kb))
        return iter([(kb, v) for kb, v in merged.items() if v is not None])

    def _flushed(self, entries: list[tuple[bytes, bytes | None]]) -> None:
        self._pending.extend(entries)

    def persist(self) -> bool:
        if not self._pending:
            return False
        batch = WriteBatch(raw_mode=True)
        for kb, vb in self._pending:
            if vb is None:
                batch.delete(kb)
            else:
                batch.put(kb, vb)
        self._write(batch)
        self._pending = []
        if len(self._cache) > self._max_cache:
            self._shrink()
        return True

    def _write(self, batch: WriteBatch) -> None:
        # rocksdict raises a bare Exception (a full disk, an I/O error): name the store it failed on.
        try:
            self._db.write(batch)
        except Exception as exc:
            raise StateStoreError(f"cannot write RocksDB store at {self.path}: {exc}") from exc

    def discard_pending(self) -> None:
        self._pending = []
        self._cache = {}

    def restore_batch(self, entries: list[tuple[bytes, bytes | None]]) -> None:
        batch = WriteBatch(raw_mode=True)
        for kb, vb in entries:
            if vb is None:
                batch.delete(kb)
            else:
                batch.put(kb, vb)
        self._write(batch)
        self._cache = {}

    def wipe(self) -> None:
        self._db.close()
        shutil.rmtree(self.path, ignore_errors=True)
        self._db = open_rocksdb(self.path)
        self._cache = {}
        self._pending = []

    def approximate_num_entries(self) -> int:
        return sum(1 for _ in self._items())

    def estimate_num_entries(self) -> int:
        # RocksDB's own estimate, plus the writes not flushed to it yet (may count a key twice).
        estimate = self._db.property_int_value("rocksdb.estimate-num-keys") or 0
        return estimate + len(self._dirty) + len(self._pending)

    def flush_to_disk(self) -> None:
        """Write RocksDB's memtables to files: what a checkpoint written afterwards may rely on (a global
        store, whose writes reach RocksDB directly, checkpoints so)."""
        self._db.flush()

    def close(self) -> None:
        if not self.closed:
            super().close()
            self._cache = {}
            try:
                self._db.flush()
            except Exception as exc:
                raise StateStoreError(f"cannot flush RocksDB store at {self.path}: {exc}") from exc
            finally:
                self._db.close()
