"""One key's versions as a timeline (the model of a versioned store, ``versioned.py``, shared with its RocksDB history,
``rocksdb_versioned.py``): finding the version valid at a time, inserting one with Kafka's put answers, pruning
what the history retention no longer covers, and a version's bytes in the changelog and on disk."""

from __future__ import annotations

import struct
from bisect import bisect_right
from dataclasses import dataclass
from typing import Any

__all__ = [
    "PUT_RETURN_CODE_NOT_PUT",
    "PUT_RETURN_CODE_VALID_TO_UNDEFINED",
    "Timeline",
    "VersionedRecord",
    "decode_version",
    "encode_version",
    "find_version",
    "insert_version",
    "prune",
    "versioned_segment_interval",
]

#: ``put``'s answer when the new version is the latest (Kafka's ``PUT_RETURN_CODE_VALID_TO_UNDEFINED``).
PUT_RETURN_CODE_VALID_TO_UNDEFINED = -1
#: ``put``'s answer when the put was older than the history retention and dropped (Kafka's ``..._NOT_PUT``).
PUT_RETURN_CODE_NOT_PUT = -(2**63)

#: One key's versions, oldest first: ``(timestamp, value or None for a tombstone)``.
Timeline = list[tuple[int, Any]]

_HEAD = struct.Struct(">qB")  # timestamp, flag


@dataclass(frozen=True)
class VersionedRecord:
    """A value as of a time: valid from ``timestamp`` until ``valid_to`` (exclusive; None: still the latest)."""

    value: Any
    timestamp: int
    valid_to: int | None = None


def versioned_segment_interval(history_retention_ms: int) -> int:
    """Kafka Streams' default segment interval of a versioned store (``RocksDbVersionedKeyValueBytesStoreSupplier``)."""
    hr = history_retention_ms
    if hr <= 60_000:
        return max(hr // 3, 2_000)
    if hr <= 300_000:
        return max(hr // 5, 20_000)
    if hr <= 3_600_000:
        return max(hr // 12, 60_000)
    return max(hr // 24, 300_000)


def encode_version(ts: int, vb: bytes | None) -> bytes:
    """A version's bytes: timestamp, flag (0: tombstone), value bytes."""
    return _HEAD.pack(ts, 0) if vb is None else _HEAD.pack(ts, 1) + vb


def decode_version(raw: bytes) -> tuple[int, bytes | None]:
    ts, flag = _HEAD.unpack_from(raw)
    return ts, (raw[_HEAD.size :] if flag else None)


def find_version(points: Timeline, as_of: int) -> VersionedRecord | None:
    """The version of ``points`` valid at ``as_of``, or None (none yet, or a tombstone)."""
    i = bisect_right(points, as_of, key=lambda p: p[0])
    if i == 0:
        return None
    ts, value = points[i - 1]
    if value is None:
        return None
    return VersionedRecord(value, ts, points[i][0] if i < len(points) else None)


def insert_version(points: Timeline, ts: int, value: Any) -> int:
    """Set the version at ``ts``; returns its ``valid_to`` (``PUT_RETURN_CODE_VALID_TO_UNDEFINED`` if latest)."""
    i = bisect_right(points, ts, key=lambda p: p[0])
    if i > 0 and points[i - 1][0] == ts:
        points[i - 1] = (ts, value)
    else:
        points.insert(i, (ts, value))
        i += 1
    return points[i][0] if i < len(points) else PUT_RETURN_CODE_VALID_TO_UNDEFINED


def prune(points: Timeline, boundary: int) -> Timeline:
    """``points`` without the versions no read can see any more: those that ended at or before ``boundary``
    (the oldest time still in the history), and a tombstone left alone at or before it."""
    i = bisect_right(points, boundary, key=lambda p: p[0])
    if i > 1:
        points = points[i - 1 :]
    if len(points) == 1 and points[0][1] is None and points[0][0] <= boundary:
        return []
    return points
