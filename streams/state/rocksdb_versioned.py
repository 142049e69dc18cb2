"""A versioned store's committed versions in RocksDB, its history segmented by time as Kafka's
``RocksDBVersionedStore`` keeps it, so that expired history is dropped a segment at a time (one range delete).

One database per store partition:

- ``b"L" + key bytes`` -> the latest version (``encode_version``: timestamp, flag, value bytes), when it is
  a value; a key whose newest version is a tombstone has none here.
- ``b"S" + segment id (8 bytes) + key bytes + valid_to (8 bytes)`` -> ``encode_version`` of an older version
  (valid from its own timestamp until ``valid_to``), in the segment of ``valid_to // interval``, rows sorted
  by their start too (versions do not overlap). A newest version that is a tombstone is where the row before
  it ends; with no row before it, it is a row of its own with ``valid_to`` equal to its timestamp (Kafka's
  "degenerate" segment value), so that a later older put still sees it.
- ``b"M"`` -> the metadata (the observed stream time).

A read as of ``t`` that the latest version does not answer looks for the key's first row with ``valid_to > t``,
segment by segment from ``t``'s on: that row's version is valid at ``t`` if it started at or before ``t``;
otherwise no version is.
"""

from __future__ import annotations

import shutil
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import orjson

from streams.state.rocksdb import WriteBatch, open_rocksdb
from streams.state.version_timeline import Timeline, VersionedRecord, decode_version, encode_version, prune

__all__ = ["RocksDBVersionHistory"]

_Q = struct.Struct(">q")
_LATEST = b"L"
_SEGMENT = b"S"
_META = b"M"


class RocksDBVersionHistory:
    persistent = True

    def __init__(
        self,
        path: Path,
        segment_interval: int,
        decode_value: Callable[[bytes | None], Any],
        encode_value: Callable[[Any], bytes | None],
    ) -> None:
        self.path = path
        self.interval = segment_interval
        self._decode_value = decode_value
        self._encode_value = encode_value
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = open_rocksdb(path)
        raw = self._db.get(_META)
        self.metadata: dict[str, int] = {k: int(v) for k, v in orjson.loads(raw).items()} if raw is not None else {}
        self._segment_ids = self._scan_segments()

    def _scan_segments(self) -> set[int]:
        ids: set[int] = set()
        it = self._db.iter()
        it.seek(_SEGMENT)
        while it.valid():
            key = cast(bytes, it.key())
            if not key.startswith(_SEGMENT):
                break
            seg = _Q.unpack_from(key, 1)[0]
            ids.add(seg)
            it.seek(_SEGMENT + _Q.pack(seg + 1))
        return ids

    # -- rows ------------------------------------------------------------------------------------------

    def _rows(self, kb: bytes, from_valid_to: int | None = None, first_only: bool = False) -> list[tuple[int, bytes]]:
        """The key's history rows ``(valid_to, encoded version)`` by ``valid_to`` (from ``from_valid_to``)."""
        out: list[tuple[int, bytes]] = []
        length = 1 + 8 + len(kb) + 8
        low = 0 if from_valid_to is None else max(from_valid_to, 0)
        it = None
        for seg in sorted(self._segment_ids):
            if (seg + 1) * self.interval <= low:
                continue
            if it is None:
                it = self._db.iter()
            prefix = _SEGMENT + _Q.pack(seg) + kb
            it.seek(prefix + _Q.pack(low))
            while it.valid():
                key = cast(bytes, it.key())
                if not key.startswith(prefix):
                    break
                if len(key) == length:  # a longer key with this prefix is another key's
                    out.append((_Q.unpack_from(key, length - 8)[0], cast(bytes, it.value())))
                    if first_only:
                        return out
                it.next()
        return out

    def load(self, kb: bytes) -> Timeline:
        decode = self._decode_value
        points: Timeline = []
        ends = -1  # where the newest row's version ends
        for valid_to, raw in self._rows(kb):
            ts, vb = decode_version(raw)
            points.append((ts, decode(vb)))
            ends = valid_to
        latest = self._db.get(_LATEST + kb)
        if latest is not None:
            ts, vb = decode_version(latest)
            points.append((ts, decode(vb)))
        elif points and ends > points[-1][0]:
            points.append((ends, None))  # the newest version is a tombstone, implied by the row before it
        return points

    def latest(self, kb: bytes) -> VersionedRecord | None:
        raw = self._db.get(_LATEST + kb)
        if raw is None:
            return None
        ts, vb = decode_version(raw)
        return VersionedRecord(self._decode_value(vb), ts)

    def as_of(self, kb: bytes, as_of: int, boundary: int) -> VersionedRecord | None:
        latest = self.latest(kb)
        if latest is not None and latest.timestamp <= as_of:
            return latest
        if as_of < boundary:
            return None
        rows = self._rows(kb, as_of + 1, first_only=True)
        if not rows:
            return None
        valid_to, raw = rows[0]
        ts, vb = decode_version(raw)
        if ts > as_of or vb is None:
            return None
        return VersionedRecord(self._decode_value(vb), ts, valid_to)

    def _layout(self, kb: bytes, points: Timeline) -> dict[bytes, bytes]:
        """The database rows of one key's versions."""
        rows: dict[bytes, bytes] = {}
        encode = self._encode_value
        last = len(points) - 1
        for i, (ts, value) in enumerate(points):
            if i < last:
                valid_to = points[i + 1][0]
            elif value is not None:
                rows[_LATEST + kb] = encode_version(ts, encode(value))
                break
            elif last > 0:
                break  # a newest tombstone is where the row before it ends
            else:
                valid_to = ts  # a tombstone alone: a row of its own, ending where it starts
            rows[_SEGMENT + _Q.pack(valid_to // self.interval) + kb + _Q.pack(valid_to)] = encode_version(
                ts, encode(value)
            )
        return rows

    def write(self, changes: dict[bytes, Timeline], metadata: dict[str, int], boundary: int) -> None:
        batch = WriteBatch(raw_mode=True)
        for kb, points in changes.items():
            old = self._layout(kb, self.load(kb))
            new = self._layout(kb, prune(points, boundary))
            for key in old.keys() - new.keys():
                batch.delete(key)
            for key, raw in new.items():
                if old.get(key) != raw:
                    batch.put(key, raw)
                    if key[:1] == _SEGMENT:
                        self._segment_ids.add(_Q.unpack_from(key, 1)[0])
        self.metadata = dict(metadata)
        batch.put(_META, orjson.dumps(self.metadata))
        self._db.write(batch)
        expired = sorted(s for s in self._segment_ids if (s + 1) * self.interval <= boundary)
        if expired:
            self._db.delete_range(_SEGMENT + _Q.pack(expired[0]), _SEGMENT + _Q.pack(expired[-1] + 1))
            self._segment_ids.difference_update(expired)

    def items(self) -> list[tuple[bytes, VersionedRecord]]:
        out = []
        decode = self._decode_value
        it = self._db.iter()
        it.seek(_LATEST)
        while it.valid():
            key = cast(bytes, it.key())
            if not key.startswith(_LATEST):
                break
            ts, vb = decode_version(cast(bytes, it.value()))
            out.append((key[1:], VersionedRecord(decode(vb), ts)))
            it.next()
        return out

    @property
    def segment_ids(self) -> list[int]:
        return sorted(self._segment_ids)

    def estimate(self) -> int:
        return self._db.property_int_value("rocksdb.estimate-num-keys") or 0

    def wipe(self) -> None:
        self._db.close()
        shutil.rmtree(self.path, ignore_errors=True)
        self._db = open_rocksdb(self.path)
        self.metadata = {}
        self._segment_ids = set()

    def close(self) -> None:
        self._db.flush()
        self._db.close()
