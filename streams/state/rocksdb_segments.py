"""Window and session store segments in RocksDB: one database per store partition, every key prefixed by
its 8-byte segment id, so that dropping an expired segment is one range delete.

Key: segment id, key bytes, time, sub (all big-endian; ``sub`` 4 bytes for windows, 8 for sessions).
Value: the serialized entry (8-byte timestamp, value bytes). The store's metadata lives under a key past
every segment. Decoded entries of recent writes and reads are kept in a bounded object cache, by time:
when it is full the oldest times go first (a window store's oldest windows are the ones closing; a
session store's oldest ends the ones least likely to grow).

Most lookups of a window that is not there are for a key's newest window, about to be written. The store
knows, for the keys it wrote since it opened, the newest time written (``_newest``), and that nothing it did
not write is newer than ``_untracked`` (the newest time when it opened or last restored): a lookup newer
than both cannot hit, and skips RocksDB.

The object cache also holds every entry at a time newer than ``_uncached_upto``: such times were written since
the store opened, and no write skipped them and no eviction dropped them (evictions take the oldest times). A
scan of every key's entries over such times (emitting final results: the windows that just closed) reads the
cache, not RocksDB.
"""

from __future__ import annotations

import shutil
import struct
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import orjson

from streams.state.rocksdb import WriteBatch, open_rocksdb
from streams.state.segments import Entry, TimeKeyedRow, WriteRow, segment_interval

__all__ = ["RocksDBSegments"]

_SEG = struct.Struct(">q")
_META_KEY = b"\xff" * 8 + b"metadata"
_MISSING = object()


class RocksDBSegments:
    persistent = True

    def __init__(self, path: Path, retention_ms: int, sub_size: int, decode: Any, max_cache_entries: int) -> None:
        self.path = path
        self.interval = segment_interval(retention_ms)
        self._sub = struct.Struct(">qi" if sub_size == 4 else ">qq")  # time + sub
        self._suffix = self._sub.size
        self._decode = decode
        self._max_cache = max(max_cache_entries, 0)  # 0: no object cache (the store reads by range only)
        # time -> (key bytes, sub) -> entry (None: known to be absent); ``_cached`` entries in all
        self._cache: dict[int, dict[tuple[bytes, int], Entry | None]] = {}
        self._cached = 0
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = open_rocksdb(path)
        self.metadata: dict[str, int] = {}
        self.observed = -1
        self._newest: dict[bytes, int] = {}
        # The iterator ``fetch`` seeks with, kept from one call to the next until the next write (it reads the
        # database as of its making); making one costs more than a seek.
        self._reader: Any = None
        self._load()
        # (a store written before the newest time was kept with it: no lookup is skipped)
        self._untracked = self.observed if self.observed >= 0 or not self._segment_ids else 2**63 - 1
        # (a store with no object cache: every time)
        self._uncached_upto = self._untracked if self._max_cache else 2**63 - 1

    def _load(self) -> None:
        raw = self._db.get(_META_KEY)
        meta = orjson.loads(raw) if raw is not None else {}
        self.observed = int(meta.pop("_observed", -1))
        self.metadata = {k: int(v) for k, v in meta.items()}
        self._segment_ids = set()
        it = self._db.iter()
        it.seek_to_first()
        while it.valid():
            key = cast(bytes, it.key())
            if key == _META_KEY:
                break
            seg_id = _SEG.unpack_from(key)[0]
            self._segment_ids.add(seg_id)
            it.seek(_SEG.pack(seg_id + 1))

    def _key(self, kb: bytes, t: int, sub: int) -> bytes:
        return _SEG.pack(t // self.interval) + kb + self._sub.pack(t, sub)

    def get(self, kb: bytes, t: int, sub: int) -> Entry | None:
        bucket = self._cache.get(t)
        if bucket is not None:
            entry = bucket.get((kb, sub), _MISSING)
            if entry is not _MISSING:
                return cast("Entry | None", entry)
        if t > self._untracked and t > self._newest.get(kb, -1):
            return None  # newer than anything written under this key: not there (see the module doc)
        vb = self._db.get(_SEG.pack(t // self.interval) + kb + self._sub.pack(t, sub))
        if vb is None:
            return None  # not cached: a window looked up and missing is about to be written
        decoded = self._decode(vb)
        if self._max_cache:
            self._remember(kb, t, sub, decoded)
            if self._cached > self._max_cache:
                self._shrink()
        return decoded

    def get_many(self, kb: bytes, times: Sequence[int], sub: int) -> list[Entry | None]:
        if times and times[0] > self._untracked and times[0] > self._newest.get(kb, -1):
            return [None] * len(times)  # all newer than anything written under this key (a key's first record)
        get = self.get
        return [get(kb, t, sub) for t in times]

    def _remember(self, kb: bytes, t: int, sub: int, entry: Entry | None) -> None:
        bucket = self._cache.get(t)
        if bucket is None:
            bucket = self._cache[t] = {}
        if (kb, sub) not in bucket:
            self._cached += 1
        bucket[(kb, sub)] = entry

    def _shrink(self) -> None:
        """Drop the oldest times until the cache is at most three quarters full."""
        target = self._max_cache * 3 // 4
        for t in sorted(self._cache):
            if self._cached <= target:
                break
            self._cached -= len(self._cache.pop(t))
            if t > self._uncached_upto:
                self._uncached_upto = t

    def _forget_before(self, min_live: int) -> None:
        for t in [t for t in self._cache if t < min_live]:
            self._cached -= len(self._cache.pop(t))

    def _forget_all(self) -> None:
        self._cache.clear()
        self._cached = 0
        self._uncached_upto = max(self._uncached_upto, self.observed)

    def _segments_between(self, t_from: int, t_to: int) -> list[int]:
        first, last = t_from // self.interval, t_to // self.interval
        return sorted(s for s in self._segment_ids if first <= s <= last)

    def fetch(self, kb: bytes, t_from: int, t_to: int) -> list[tuple[int, int, Entry]]:
        if t_from > self._untracked:
            # Everything in range was written since the store opened: nothing under this key is newer than
            # ``_newest`` (a stream-stream join's first record of a key finds nothing, without RocksDB).
            newest = self._newest.get(kb, -1)
            if newest < t_from:
                return []
            t_to = min(t_to, newest)
        out: list[tuple[int, int, Entry]] = []
        start = 8 + len(kb)
        length = start + self._suffix
        unpack, decode = self._sub.unpack_from, self._decode
        lower, upper = _SEG.pack(max(t_from, 0)), _SEG.pack(t_to) + b"\xff" * (self._suffix - 8)
        it = self._reader
        for seg_id in self._segments_between(t_from, t_to):
            if it is None:
                it = self._reader = self._db.iter()
            prefix = _SEG.pack(seg_id) + kb
            last = prefix + upper
            it.seek(prefix + lower)
            while it.valid():
                key = cast(bytes, it.key())
                if key > last:
                    break
                # A longer or shorter key can sort in between: only exact-length matches are ours.
                if len(key) == length and key.startswith(prefix):
                    t, sub = unpack(key, start)
                    out.append((t, sub, decode(cast(bytes, it.value()))))
                it.next()
        # Segments in order, and within one the big-endian (time, sub) suffix: ``out`` is already sorted.
        return out

    def fetch_all(self, t_from: int, t_to: int) -> list[TimeKeyedRow]:
        if t_from > self._uncached_upto:
            return self._fetch_all_cached(t_from, t_to)
        out = []
        suffix = self._suffix
        unpack, decode = self._sub.unpack_from, self._decode
        for seg_id in self._segments_between(t_from, t_to):
            # A segment holds several times, and time comes after the key bytes: the whole segment is
            # read, but only the rows in range are decoded (emitting final results reads one time of it).
            # ``items`` hands over each row in one call (an iterator's key, value and next are three).
            end = _SEG.pack(seg_id + 1)
            for raw_key, vb in self._db.items(from_key=_SEG.pack(seg_id)):
                key = cast(bytes, raw_key)
                if key >= end:
                    break
                n = len(key) - suffix
                t, sub = unpack(key, n)
                if t_from <= t <= t_to:
                    out.append((key[8:n], t, sub, decode(cast(bytes, vb))))
        out.sort(key=lambda row: (row[1], row[0], row[2]))
        return out

    def _fetch_all_cached(self, t_from: int, t_to: int) -> list[TimeKeyedRow]:
        """``fetch_all`` of times the object cache holds every entry of (see the module doc)."""
        out: list[TimeKeyedRow] = []
        cache = self._cache
        for t in sorted(t for t in cache if t_from <= t <= t_to):
            bucket = cache[t]
            for kb, sub in sorted(bucket):
                entry = bucket[(kb, sub)]
                if entry is not None:  # (None: deleted)
                    out.append((kb, t, sub, entry))
        return out

    def write(self, rows: list[WriteRow], metadata: dict[str, int] | None, min_live: int) -> None:
        batch = WriteBatch(raw_mode=True)
        put, delete = batch.put, batch.delete
        seg, pack_sub, interval = _SEG.pack, self._sub.pack, self.interval
        observed = self.observed
        newest = self._newest
        seg_ids = set()
        for kb, t, sub, _entry, vb in rows:
            if t < min_live:
                continue
            s = t // interval
            if vb is None:
                delete(seg(s) + kb + pack_sub(t, sub))
                continue
            put(seg(s) + kb + pack_sub(t, sub), vb)
            seg_ids.add(s)
            if t > observed:
                observed = t
            if t > newest.get(kb, -1):
                newest[kb] = t
        self._segment_ids |= seg_ids
        self.observed = observed
        if self._max_cache:
            self._cache_written(rows, min_live)
        if metadata is not None:
            self.metadata = dict(metadata)
        batch.put(_META_KEY, orjson.dumps({**self.metadata, "_observed": self.observed}))
        self._reader = None
        self._db.write(batch)
        self._drop_expired(min_live)

    def _cache_written(self, rows: list[WriteRow], min_live: int) -> None:
        # The written entries are the ones most likely read next (windows still open): cache them, the last
        # ``_max_cache`` of them; the cached entries of the others are dropped (they were overwritten).
        cache = self._cache
        added = 0
        for kb, t, sub, _entry, _ in rows[: -self._max_cache]:
            bucket = cache.get(t)
            if bucket is not None and bucket.pop((kb, sub), _MISSING) is not _MISSING:
                added -= 1
            if t > self._uncached_upto:
                self._uncached_upto = t
        for kb, t, sub, entry, _ in rows[-self._max_cache :]:  # (``_remember``, inlined: a commit writes many)
            if t < min_live:
                continue
            bucket = cache.get(t)
            if bucket is None:
                bucket = cache[t] = {}
            k = (kb, sub)
            if k not in bucket:
                added += 1
            bucket[k] = entry
        self._cached += added
        if self._cached > self._max_cache:
            self._shrink()

    def restore(self, rows: list[tuple[bytes, int, int, bytes | None]], min_live: int) -> None:
        batch = WriteBatch(raw_mode=True)
        for kb, t, sub, vb in rows:
            if vb is None:
                batch.delete(self._key(kb, t, sub))
            else:
                batch.put(self._key(kb, t, sub), vb)
                self._segment_ids.add(t // self.interval)
                if t > self.observed:
                    self.observed = t
        batch.put(_META_KEY, orjson.dumps({**self.metadata, "_observed": self.observed}))
        self._reader = None
        self._db.write(batch)
        self._forget_all()
        self._untracked = self.observed  # restored rows are not in ``_newest``
        self._drop_expired(min_live)

    def restore_metadata(self, metadata: dict[str, int]) -> None:
        self.metadata = dict(metadata)
        self._reader = None
        self._db.put(_META_KEY, orjson.dumps({**self.metadata, "_observed": self.observed}))

    def _drop_expired(self, min_live: int) -> None:
        expired = sorted(s for s in self._segment_ids if (s + 1) * self.interval <= min_live)
        if not expired:
            return
        self._reader = None
        self._db.delete_range(_SEG.pack(expired[0]), _SEG.pack(expired[-1] + 1))
        self._segment_ids.difference_update(expired)
        self._forget_before((expired[-1] + 1) * self.interval)  # what the dropped segments held
        # A key whose newest entry has expired has none left to find (expired times are never looked up).
        self._newest = {kb: t for kb, t in self._newest.items() if t >= min_live}

    @property
    def segment_ids(self) -> list[int]:
        return sorted(self._segment_ids)

    def count(self) -> int:
        return sum(1 for key in self._db.keys() if key != _META_KEY)  # noqa: SIM118 - an Rdict, not a dict

    def estimate(self) -> int:
        # RocksDB's own figure (it counts the metadata record, and deletes not yet compacted away).
        return self._db.property_int_value("rocksdb.estimate-num-keys") or 0

    def wipe(self) -> None:
        self._reader = None
        self._db.close()
        shutil.rmtree(self.path, ignore_errors=True)
        self._db = open_rocksdb(self.path)
        self._forget_all()
        self.metadata = {}
        self.observed = -1
        self._segment_ids = set()
        self._newest = {}
        self._untracked = -1
        if self._max_cache:
            self._uncached_upto = -1

    def close(self) -> None:
        self._reader = None
        self._db.flush()
        self._db.close()
        self._forget_all()
