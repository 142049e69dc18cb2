"""The versioned key-value store, in memory and on RocksDB, against Kafka Streams' own expectations: each
scenario is one test of Kafka's ``RocksDBVersionedStoreTest`` (apache/kafka trunk, October 2024: the behaviour
of Kafka 3.5 on, KIP-968's range queries of 3.7 on), with its puts, their expected
return codes and the expected reads, record for record. Every scenario runs three ways: without a commit (the
uncommitted layer answers), committing after every put (the committed history answers), and restored from
the changelog the puts wrote into a fresh store. Then what is particular to schemakit: the changelog format,
``discard_pending``, segments dropped by retention, a RocksDB store reopened, and the task's metric."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from streams.processor import RecordContext
from streams.record_serdes import STRING
from streams.state.versioned import (
    PUT_RETURN_CODE_NOT_PUT,
    PUT_RETURN_CODE_VALID_TO_UNDEFINED,
    VersionedKeyValueStore,
    VersionedRecord,
    decode_version,
)
from streams.topology import VersionedStoreSpec
from tests.streams.stores import Changelog, commit

HISTORY_RETENTION = 300_000
SEGMENT_INTERVAL = HISTORY_RETENTION // 3  # RocksDBVersionedStoreTest's
SI = SEGMENT_INTERVAL
BASE = 10
GRACE = HISTORY_RETENTION  # the history retention doubles as the grace period
LATEST = PUT_RETURN_CODE_VALID_TO_UNDEFINED
NOT_PUT = PUT_RETURN_CODE_NOT_PUT


@pytest.fixture(params=["memory", "rocksdb"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


Factory = Callable[..., tuple[VersionedKeyValueStore, Changelog]]


@pytest.fixture
def make_store(kind: str, tmp_path: Path) -> Iterator[Factory]:
    opened: list[VersionedKeyValueStore] = []

    def make(retention: int = HISTORY_RETENTION, name: str = "v") -> tuple[VersionedKeyValueStore, Changelog]:
        path = tmp_path / name if kind == "rocksdb" else None
        store = VersionedKeyValueStore("v", STRING, STRING, "app-v-changelog", RecordContext(), retention, path, SI)
        changelog = Changelog()
        store.changelog = changelog.writer
        opened.append(store)
        return store, changelog

    yield make
    for store in opened:
        store.close()


# -- scenarios: ("put", key, value, ts, expected return) | ("get", key, expected) | ("as_of", key, t, expected)
#    with expected = (value, timestamp, valid_to or None) or None; ("delete", key, ts, expected (value, ts))

Op = tuple[Any, ...]


def put(k: str, v: str | None, ts: int, ret: int) -> Op:
    return ("put", k, v, ts, ret)


def latest(k: str, v: str | None = None, ts: int = 0) -> Op:
    return ("get", k, None if v is None else (v, ts, None))


def as_of(k: str, t: int, v: str | None = None, ts: int = 0, valid_to: int = LATEST) -> Op:
    return ("as_of", k, t, None if v is None else (v, ts, None if valid_to == LATEST else valid_to))


def delete(k: str, ts: int, expected: tuple[str, int] | None) -> Op:
    return ("delete", k, ts, expected)


def versions(k: str, t_from: int, t_to: int, values: list[str], stamps: list[int], valid_tos: list[int]) -> Op:
    """Kafka's range query (``get(key, from, to, ANY)``: newest first)."""
    expected = [(v, ts, None if vt == LATEST else vt) for v, ts, vt in zip(values, stamps, valid_tos, strict=True)]
    return ("versions", k, t_from, t_to, False, expected)


def ascending(k: str, t_from: int, t_to: int, values: list[str], stamps: list[int], valid_tos: list[int]) -> Op:
    op = versions(k, t_from, t_to, values, stamps, valid_tos)
    return (*op[:4], True, op[5])


MIN, MAX = -(2**63), 2**63 - 1


SCENARIOS: dict[str, list[Op]] = {
    "shouldPutLatest": [
        put("k", "v", BASE, LATEST),
        put("k", "v2", BASE + 1, LATEST),
        latest("k", "v2", BASE + 1),
        as_of("k", BASE, "v", BASE, BASE + 1),
        as_of("k", BASE + 1, "v2", BASE + 1),
        as_of("k", BASE + 2, "v2", BASE + 1),
    ],
    "shouldPutNullAsLatest": [
        put("k", None, BASE, LATEST),
        put("k", None, BASE + 1, LATEST),
        latest("k"),
        as_of("k", BASE),
        as_of("k", BASE + 1),
        as_of("k", BASE + 2),
    ],
    "shouldPutOlderWithNonNullLatest": [
        put("k", "v", BASE, LATEST),
        put("k", "v2", BASE - 2, BASE),
        put("k", "v1", BASE - 1, BASE),
        put("k", "v4", BASE - 4, BASE - 2),
        latest("k", "v", BASE),
        as_of("k", BASE, "v", BASE),
        as_of("k", BASE - 1, "v1", BASE - 1, BASE),
        as_of("k", BASE - 2, "v2", BASE - 2, BASE - 1),
        as_of("k", BASE - 3, "v4", BASE - 4, BASE - 2),
    ],
    "shouldPutOlderWithNullLatest": [
        put("k", None, BASE, LATEST),
        put("k", "v2", BASE - 2, BASE),
        put("k", "v1", BASE - 1, BASE),
        put("k", "v4", BASE - 4, BASE - 2),
        latest("k"),
        as_of("k", BASE),
        as_of("k", BASE - 1, "v1", BASE - 1, BASE),
        as_of("k", BASE - 2, "v2", BASE - 2, BASE - 1),
        as_of("k", BASE - 3, "v4", BASE - 4, BASE - 2),
    ],
    "shouldPutOlderNullWithNonNullLatest": [
        put("k", "v", BASE, LATEST),
        put("k", None, BASE - 2, BASE),
        put("k", None, BASE - 1, BASE),
        put("k", None, BASE - 4, BASE - 2),
        put("k", "v5", BASE - 5, BASE - 4),
        put("k", "v3", BASE - 3, BASE - 2),
        put("k", None, BASE - 6, BASE - 5),
        latest("k", "v", BASE),
        as_of("k", BASE, "v", BASE),
        as_of("k", BASE - 1),
        as_of("k", BASE - 2),
        as_of("k", BASE - 3, "v3", BASE - 3, BASE - 2),
        as_of("k", BASE - 4),
        as_of("k", BASE - 5, "v5", BASE - 5, BASE - 4),
        as_of("k", BASE - 6),
    ],
    "shouldPutOlderNullWithNullLatest": [
        put("k", None, BASE, LATEST),
        put("k", None, BASE - 2, BASE),
        put("k", None, BASE - 1, BASE),
        put("k", None, BASE - 4, BASE - 2),
        put("k", "v3", BASE - 3, BASE - 2),
        put("k", "v5", BASE - 5, BASE - 4),
        put("k", None, BASE - 6, BASE - 5),
        latest("k"),
        as_of("k", BASE),
        as_of("k", BASE - 1),
        as_of("k", BASE - 2),
        as_of("k", BASE - 3, "v3", BASE - 3, BASE - 2),
        as_of("k", BASE - 4),
        as_of("k", BASE - 5, "v5", BASE - 5, BASE - 4),
        as_of("k", BASE - 6),
    ],
    "shouldPutRepeatTimestampAsLatest": [
        put("k", "to_be_replaced", BASE, LATEST),
        put("k", "b", BASE, LATEST),
        latest("k", "b", BASE),
        as_of("k", BASE, "b", BASE),
        as_of("k", BASE - 1),
        put("k", None, BASE, LATEST),
        latest("k"),
        as_of("k", BASE),
        as_of("k", BASE - 1),
        put("k", None, BASE, LATEST),
        latest("k"),
        as_of("k", BASE),
        as_of("k", BASE - 1),
        put("k", "b", BASE, LATEST),
        latest("k", "b", BASE),
        as_of("k", BASE, "b", BASE),
        as_of("k", BASE - 1),
    ],
    "shouldPutRepeatTimestamps": [
        put("k", "to_be_replaced", SI + 20, LATEST),
        put("k", None, SI - 10, SI + 20),
        put("k", "to_be_replaced", SI - 10, SI + 20),
        put("k", None, SI - 10, SI + 20),
        put("k", "to_be_replaced", SI - 1, SI + 20),
        put("k", "to_be_replaced", SI + 1, SI + 20),
        put("k", None, SI - 1, SI + 1),
        put("k", None, SI + 1, SI + 20),
        put("k", None, SI + 10, SI + 20),
        put("k", None, SI + 5, SI + 10),
        put("k", "vp5", SI + 5, SI + 10),
        put("k", "to_be_replaced", SI - 5, SI - 1),
        put("k", "vn5", SI - 5, SI - 1),
        put("k", None, SI + 20, LATEST),
        put("k", None, SI + 20, LATEST),
        put("k", "vn6", SI - 6, SI - 5),
        latest("k"),
        as_of("k", SI + 30),
        as_of("k", SI + 15),
        as_of("k", SI + 6, "vp5", SI + 5, SI + 10),
        as_of("k", SI + 2),
        as_of("k", SI),
        as_of("k", SI - 1),
        as_of("k", SI - 5, "vn5", SI - 5, SI - 1),
        as_of("k", SI - 6, "vn6", SI - 6, SI - 5),
        as_of("k", SI - 8),
    ],
    "shouldPutIntoMultipleSegments": [
        put("k", None, SI - 20, LATEST),
        put("k", "vn10", SI - 10, LATEST),
        put("k", None, SI - 1, LATEST),
        put("k", None, SI + 1, LATEST),
        put("k", "vp10", SI + 10, LATEST),
        put("k", None, SI + 20, LATEST),
        latest("k"),
        as_of("k", SI + 30),
        as_of("k", SI + 15, "vp10", SI + 10, SI + 20),
        as_of("k", SI + 5),
        as_of("k", SI + 2),
        as_of("k", SI),
        as_of("k", SI - 1),
        as_of("k", SI - 5, "vn10", SI - 10, SI - 1),
        as_of("k", SI - 15),
    ],
    "shouldMoveRecordToOlderSegmentDuringPut": [
        put("k", "vp20", SI + 20, LATEST),
        put("k", "vp10", SI + 10, SI + 20),
        put("k", "vn10", SI - 10, SI + 10),
        put("k", "vn2", SI - 2, SI + 10),
        put("k", "vn1", SI - 1, SI + 10),
        put("k", "vp1", SI + 1, SI + 10),
        latest("k", "vp20", SI + 20),
        as_of("k", SI + 30, "vp20", SI + 20),
        as_of("k", SI + 15, "vp10", SI + 10, SI + 20),
        as_of("k", SI + 5, "vp1", SI + 1, SI + 10),
        as_of("k", SI, "vn1", SI - 1, SI + 1),
        as_of("k", SI - 1, "vn1", SI - 1, SI + 1),
        as_of("k", SI - 2, "vn2", SI - 2, SI - 1),
        as_of("k", SI - 5, "vn10", SI - 10, SI - 2),
    ],
    "shouldMoveRecordToOlderSegmentWithNullsDuringPut": [
        put("k", None, SI + 20, LATEST),
        put("k", None, SI - 1, SI + 20),
        put("k", None, SI + 1, SI + 20),
        put("k", None, SI - 10, SI - 1),
        put("k", None, SI + 10, SI + 20),
        put("k", "vp5", SI + 5, SI + 10),
        put("k", "vn5", SI - 5, SI - 1),
        put("k", "vn6", SI - 6, SI - 5),
        latest("k"),
        as_of("k", SI + 30),
        as_of("k", SI + 15),
        as_of("k", SI + 6, "vp5", SI + 5, SI + 10),
        as_of("k", SI + 2),
        as_of("k", SI),
        as_of("k", SI - 1),
        as_of("k", SI - 5, "vn5", SI - 5, SI - 1),
        as_of("k", SI - 6, "vn6", SI - 6, SI - 5),
        as_of("k", SI - 8),
    ],
    "shouldFallThroughToExistingOlderSegmentAsLatestDuringPut": [
        put("k", None, SI - 5, LATEST),
        put("k", "vn6", SI - 6, SI - 5),
        put("k", "vp20", SI + 20, LATEST),
        put("k", None, SI + 10, SI + 20),
        put("k", None, SI - 1, SI + 10),
        put("k", "vn2", SI - 2, SI - 1),
        latest("k", "vp20", SI + 20),
        as_of("k", SI + 30, "vp20", SI + 20),
        as_of("k", SI + 12),
        as_of("k", SI),
        as_of("k", SI - 1),
        as_of("k", SI - 2, "vn2", SI - 2, SI - 1),
        as_of("k", SI - 5),
        as_of("k", SI - 6, "vn6", SI - 6, SI - 5),
    ],
    "shouldPutNonLatestTombstoneIntoNewSegmentWithValidTo": [
        put("k", "vp30", SI + 30, LATEST),
        put("k", None, SI - 10, SI + 30),
        put("k", "vn5", SI - 5, SI + 30),
        put("k", "vn1", SI - 1, SI + 30),
        put("k", None, SI - 2, SI - 1),
        latest("k", "vp30", SI + 30),
        as_of("k", SI + 10, "vn1", SI - 1, SI + 30),
        as_of("k", SI - 1, "vn1", SI - 1, SI + 30),
        as_of("k", SI - 2),
        as_of("k", SI - 5, "vn5", SI - 5, SI - 2),
        as_of("k", SI - 10),
    ],
    "shouldDelete": [
        put("k", "vp20", SI + 20, LATEST),
        put("k", "vp10", SI + 10, SI + 20),
        put("k", "vn10", SI - 10, SI + 10),
        put("k", "vn2", SI - 2, SI + 10),
        delete("k", SI - 5, ("vn10", SI - 10)),
        delete("k", SI + 10, ("vp10", SI + 10)),
        delete("k", SI + 10, None),
        delete("k", SI + 25, ("vp20", SI + 20)),
    ],
    "shouldNotPutExpired": [
        put("k", "v", HISTORY_RETENTION + 10, LATEST),
        put("k1", "v1", HISTORY_RETENTION + 10 - GRACE, LATEST),
        latest("k1", "v1", HISTORY_RETENTION + 10 - GRACE),
        put("k2", "v2", HISTORY_RETENTION + 9 - GRACE, NOT_PUT),
        latest("k2"),
        ("expired", 1),
    ],
    "shouldNotDeleteExpired": [
        put("k1", "v1", 1, LATEST),
        put("k2", "v2", 1, LATEST),
        put("kother", "vother", HISTORY_RETENTION + 10, LATEST),
        delete("k1", HISTORY_RETENTION + 10 - GRACE, ("v1", 1)),
        latest("k1"),
        delete("k2", HISTORY_RETENTION + 9 - GRACE, None),
        latest("k2", "v2", 1),
        ("expired", 1),
    ],
    "shouldGetFromOlderSegments": [
        put("ko", None, SI - 10, LATEST),
        put("ko", None, 2 * SI - 10, LATEST),
        put("ko", None, 3 * SI - 10, LATEST),
        as_of("k", SI - 20),
        put("k", "v", SI - 20, LATEST),
        put("k", None, SI - 10, LATEST),
        as_of("k", SI - 30),
        as_of("k", SI - 15, "v", SI - 20, SI - 10),
        as_of("k", SI - 5),
        put("k", "v2", 3 * SI - 20, LATEST),
        put("k", None, 3 * SI - 10, LATEST),
        as_of("k", SI - 30),
        as_of("k", SI - 15, "v", SI - 20, SI - 10),
        as_of("k", SI - 5),
    ],
    "shouldNotGetExpired": [
        put("k", "v_old", 0, LATEST),
        put("k", "v", SI - 10, LATEST),
        as_of("k", SI - 11, "v_old", 0, SI - 10),
        put("ko", "vo", HISTORY_RETENTION + SI - 11, LATEST),
        as_of("k", SI - 11, "v_old", 0, SI - 10),
        put("ko", "vo2", HISTORY_RETENTION + SI - 10, LATEST),
        as_of("k", SI - 11),
    ],
    "shouldGetExpiredIfLatestValue": [
        put("k", "v", 1, LATEST),
        put("ko", "vo_old", 1, LATEST),
        put("ko", "vo_new", HISTORY_RETENTION + 12, LATEST),
        as_of("k", 10, "v", 1),
        as_of("ko", 10),
    ],
    "shouldDistinguishEmptyAndNull": [
        put("k", None, SI + 20, LATEST),
        put("k", None, SI - 10, SI + 20),
        put("k", None, SI - 1, SI + 20),
        put("k", None, SI + 1, SI + 20),
        put("k", None, SI + 10, SI + 20),
        put("k", "", SI + 5, SI + 10),
        put("k", "", SI - 5, SI - 1),
        put("k", "", SI - 6, SI - 5),
        latest("k"),
        as_of("k", SI + 30),
        as_of("k", SI + 15),
        as_of("k", SI + 6, "", SI + 5, SI + 10),
        as_of("k", SI + 2),
        as_of("k", SI),
        as_of("k", SI - 1),
        as_of("k", SI - 5, "", SI - 5, SI - 1),
        as_of("k", SI - 6, "", SI - 6, SI - 5),
        as_of("k", SI - 8),
    ],
}

SCENARIOS["shouldGetRecordVersionsFromOlderSegments"] = [
    put("ko", None, SI - 10, LATEST),
    put("ko", None, 2 * SI - 10, LATEST),
    put("ko", None, 3 * SI - 10, LATEST),
    versions("k", SI - 20, SI, [], [], []),
    put("k", "v1", SI - 30, LATEST),
    put("k", "v2", SI - 25, LATEST),
    put("k", None, SI - 20, LATEST),
    put("k", None, SI - 15, LATEST),
    put("k", "v3", SI - 10, LATEST),
    put("k", "v4", SI - 5, LATEST),
    versions("k", SI - 40, SI - 35, [], [], []),
    versions(
        "k",
        SI - 30,
        SI - 5,
        ["v4", "v3", "v2", "v1"],
        [SI - 5, SI - 10, SI - 25, SI - 30],
        [LATEST, SI - 5, SI - 20, SI - 25],
    ),
    versions(
        "k", MIN, MAX, ["v4", "v3", "v2", "v1"], [SI - 5, SI - 10, SI - 25, SI - 30], [LATEST, SI - 5, SI - 20, SI - 25]
    ),
    versions("k", SI - 4, SI, ["v4"], [SI - 5], [LATEST]),
    versions("k", SI - 5, SI - 5, ["v4"], [SI - 5], [LATEST]),
    versions("k", SI - 4, SI - 4, ["v4"], [SI - 5], [LATEST]),
    versions("k", SI - 31, SI - 21, ["v2", "v1"], [SI - 25, SI - 30], [SI - 20, SI - 25]),
    versions("k", SI - 24, SI - 11, ["v2"], [SI - 25], [SI - 20]),
    versions("k", SI - 11, SI - 4, ["v4", "v3"], [SI - 5, SI - 10], [LATEST, SI - 5]),
    versions(
        "k",
        SI - 26,
        SI - 5,
        ["v4", "v3", "v2", "v1"],
        [SI - 5, SI - 10, SI - 25, SI - 30],
        [LATEST, SI - 5, SI - 20, SI - 25],
    ),
    versions("k", SI - 15, SI - 10, ["v3"], [SI - 10], [SI - 5]),
    versions("k", SI - 19, SI - 16, [], [], []),
    put("k", "v5", 3 * SI - 30, LATEST),
    put("k", None, 3 * SI - 20, LATEST),
    versions("k", SI - 40, SI - 35, [], [], []),
    versions("k", SI - 30, SI - 26, ["v1"], [SI - 30], [SI - 25]),
    versions("k", SI - 19, SI - 16, [], [], []),
]
SCENARIOS["shouldGetRecordVersionsInAscendingOrder"] = [
    put("k", "v1", SI - 30, LATEST),
    put("k", "v2", SI - 25, LATEST),
    put("k", "v3", SI - 10, LATEST),
    put("k", "v4", SI - 5, LATEST),
    ascending(
        "k",
        SI - 30,
        SI - 5,
        ["v1", "v2", "v3", "v4"],
        [SI - 30, SI - 25, SI - 10, SI - 5],
        [SI - 25, SI - 10, SI - 5, LATEST],
    ),
]
SCENARIOS["shouldGetRecordVersionsFromMultipleOldSegmentsInAscendingOrder"] = [
    put("k", "v1", SI - 10, LATEST),
    put("k", "v2", SI - 5, LATEST),
    put("k", "v3", 2 * SI - 10, LATEST),
    put("k", "v4", 2 * SI - 5, LATEST),
    ascending(
        "k",
        MIN,
        MAX,
        ["v1", "v2", "v3", "v4"],
        [SI - 10, SI - 5, 2 * SI - 10, 2 * SI - 5],
        [SI - 5, 2 * SI - 10, 2 * SI - 5, LATEST],
    ),
]
SCENARIOS["shouldNotGetExpiredRecordVersions"] = [
    put("k", "v_old", 0, LATEST),
    put("k", "v", SI - 10, LATEST),
    versions("k", 0, SI - 11, ["v_old"], [0], [SI - 10]),
    put("ko", "vo", HISTORY_RETENTION + SI - 11, LATEST),
    versions("k", 0, SI - 11, ["v_old"], [0], [SI - 10]),
    put("ko", "vo2", HISTORY_RETENTION + SI - 10, LATEST),
    versions("k", 0, SI - 11, [], [], []),
]
SCENARIOS["shouldGetExpiredIfLatestVersionValue"] = [
    put("k", "v", 1, LATEST),
    put("ko", "vo_old", 1, LATEST),
    put("ko", "vo_new", HISTORY_RETENTION + 12, LATEST),
    versions("k", 0, 10, ["v"], [1], [LATEST]),
    versions("ko", 0, 10, [], [], []),
]

#: Kafka's restore scenarios: changelog records (key, value, timestamp), then reads.
RESTORES: dict[str, tuple[list[tuple[str, str | None, int]], list[Op]]] = {
    "shouldRestore": (
        [
            ("k", "vp20", SI + 20),
            ("k", "vp10", SI + 10),
            ("k", "vn10", SI - 10),
            ("k", "vn2", SI - 2),
            ("k", "vn1", SI - 1),
            ("k", "vp1", SI + 1),
        ],
        SCENARIOS["shouldMoveRecordToOlderSegmentDuringPut"][6:],
    ),
    "shouldRestoreWithNulls": (
        [
            ("k", None, SI + 20),
            ("k", None, SI - 1),
            ("k", None, SI + 1),
            ("k", None, SI - 10),
            ("k", None, SI + 10),
            ("k", "vp5", SI + 5),
            ("k", "vn5", SI - 5),
            ("k", "vn6", SI - 6),
        ],
        SCENARIOS["shouldMoveRecordToOlderSegmentWithNullsDuringPut"][8:],
    ),
    "shouldRestoreWithNullsAndRepeatTimestamps": (
        [(op[1], op[2], op[3]) for op in SCENARIOS["shouldPutRepeatTimestamps"] if op[0] == "put"],
        SCENARIOS["shouldPutRepeatTimestamps"][16:],
    ),
    "shouldNotRestoreExpired": (
        [
            ("k", "v", HISTORY_RETENTION + 10),
            ("k1", "v1", HISTORY_RETENTION + 10 - GRACE),
            ("k2", "v2", HISTORY_RETENTION + 9 - GRACE),
        ],
        [
            latest("k", "v", HISTORY_RETENTION + 10),
            latest("k1", "v1", HISTORY_RETENTION + 10 - GRACE),
            latest("k2"),
            ("expired", 0),
        ],
    ),
    "shouldRestoreEvenIfRecordWouldBeExpiredByEndOfBatch": (
        [("k2", "v2", HISTORY_RETENTION - GRACE), ("k", "v", HISTORY_RETENTION + 10)],
        [latest("k2", "v2", HISTORY_RETENTION - GRACE), latest("k", "v", HISTORY_RETENTION + 10)],
    ),
}


def _record(found: VersionedRecord | None) -> tuple[Any, int, int | None] | None:
    return None if found is None else (found.value, found.timestamp, found.valid_to)


def check(store: VersionedKeyValueStore, op: Op, where: str) -> None:
    if op[0] == "get":
        assert _record(store.get(op[1])) == op[2], f"{where}: get({op[1]!r})"
    elif op[0] == "as_of":
        assert _record(store.get(op[1], as_of=op[2])) == op[3], f"{where}: get({op[1]!r}, as_of={op[2]})"
    elif op[0] == "versions":
        found = [_record(r) for r in store.get_versions(op[1], op[2], op[3], ascending=op[4])]
        assert found == op[5], f"{where}: get_versions({op[1]!r}, {op[2]}, {op[3]})"
    elif op[0] == "expired":
        assert store.expired_puts == op[1], where


def run(store: VersionedKeyValueStore, ops: list[Op], commit_each: bool) -> None:
    for i, op in enumerate(ops):
        where = f"step {i} {op}"
        if op[0] == "put":
            assert store.put(op[1], op[2], op[3]) == op[4], where
        elif op[0] == "delete":
            found = store.delete(op[1], op[2])
            assert (None if found is None else (found.value, found.timestamp)) == op[3], where
        else:
            check(store, op, where)
        if commit_each:
            commit(store)


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_kafka_scenario(make_store: Factory, scenario: str) -> None:
    ops = SCENARIOS[scenario]
    uncommitted, changelog = make_store(name="a")
    run(uncommitted, ops, commit_each=False)
    committed, _ = make_store(name="b")
    run(committed, ops, commit_each=True)
    # The changelog the uncommitted run wrote, replayed into a fresh store, gives the same final reads.
    commit(uncommitted)
    restored, _ = make_store(name="c")
    restored.restore_batch(changelog.records)
    last_write = max(i for i, op in enumerate(ops) if op[0] in ("put", "delete"))
    for i, op in enumerate(ops[last_write + 1 :], last_write + 1):
        if op[0] in ("get", "as_of", "versions"):
            check(restored, op, f"restored, step {i} {op}")


@pytest.mark.parametrize("scenario", sorted(RESTORES))
def test_kafka_restore_scenario(make_store: Factory, scenario: str) -> None:
    records, reads = RESTORES[scenario]
    # The changelog a store writes: each put in order (as Kafka's, where the timestamp is the record's).
    source, changelog = make_store(retention=2**62, name="src")
    source.changelog = changelog.writer
    for key, value, ts in records:
        source.put(key, value, ts)
    source.flush(None)
    store, _ = make_store(name="r")
    store.restore_batch(changelog.records)
    run(store, reads, commit_each=False)
    # In more than one batch, too (Kafka's shouldRestoreMultipleBatches).
    again, _ = make_store(name="r2")
    half = len(changelog.records) // 2
    again.restore_batch(changelog.records[:half])
    again.restore_batch(changelog.records[half:])
    run(again, reads, commit_each=False)


def test_zero_history_retention(make_store: Factory) -> None:
    """Kafka's ``shouldAllowZeroHistoryRetention``."""
    store, _ = make_store(retention=0)
    run(
        store,
        [
            put("k", "v", BASE, LATEST),
            latest("k", "v", BASE),
            as_of("k", BASE, "v", BASE),
            as_of("k", BASE + 1, "v", BASE),
            put("k", "updated", BASE, LATEST),
            latest("k", "updated", BASE),
            as_of("k", BASE, "updated", BASE),
            put("k", "v2", BASE + 2, LATEST),
            latest("k", "v2", BASE + 2),
            as_of("k", BASE + 2, "v2", BASE + 2),
            as_of("k", BASE + 1),
            delete("k", BASE + 3, ("v2", BASE + 2)),
            latest("k"),
            put("k2", "v", BASE + 2, NOT_PUT),
            latest("k2"),
            ("expired", 1),
        ],
        commit_each=True,
    )


def test_changelog_records_every_put_in_order(make_store: Factory) -> None:
    store, changelog = make_store()
    store.put("k", "a", 20)
    store.put("k", "b", 10)
    store.put("k", None, 30)
    assert store.flush(None) == 3
    assert [(kb, raw and decode_version(raw)) for kb, raw in changelog.records] == [
        (b"k", (20, b"a")),
        (b"k", (10, b"b")),
        (b"k", (30, None)),
    ]


def test_discard_pending_returns_to_the_committed_versions(make_store: Factory) -> None:
    store, _ = make_store()
    store.put("k", "a", 10)
    commit(store)
    store.put("k", "b", 20)
    store.put("k", "c", 5)
    store.flush(None)
    store.discard_pending()
    assert store.get("k") == VersionedRecord("a", 10)
    assert store.get("k", as_of=7) is None
    assert store.observed == 10


def test_history_is_dropped_a_segment_at_a_time(make_store: Factory, kind: str) -> None:
    store, _ = make_store(retention=SI)
    store.put("k", "a", 0)
    store.put("k", "b", 10)
    commit(store)
    assert store.get("k", as_of=5) == VersionedRecord("a", 0, 10)
    store.put("other", "x", SI + 10)  # the boundary reaches 10: "a" ended there, and is gone from reads
    commit(store)
    assert store.get("k", as_of=9) is None
    assert store.get("k", as_of=10) == VersionedRecord("b", 10)
    if kind == "rocksdb":
        inner: Any = store._inner
        assert inner.segment_ids == [0]  # "a", ending at 10
        store.put("other", "y", 3 * SI)  # the boundary passes segment 0's end: it is dropped whole
        commit(store)
        assert inner.segment_ids == [3]  # "x", ending at 3 * SI
        assert inner.load(b"k") == [(10, "b")]
        assert inner.load(b"other") == [(SI + 10, "x"), (3 * SI, "y")]


def test_rocksdb_store_reopens_with_its_versions(tmp_path: Path) -> None:
    def open_store() -> VersionedKeyValueStore:
        return VersionedKeyValueStore("v", STRING, STRING, "t", RecordContext(), HISTORY_RETENTION, tmp_path / "v")

    store = open_store()
    store.put("k", "new", 100)
    store.put("k", "old", 50)
    store.put("gone", "x", 60)
    store.put("gone", None, 70)
    commit(store)
    store.close()
    reopened = open_store()
    try:
        assert reopened.observed == 100
        assert reopened.get("k", as_of=60) == VersionedRecord("old", 50, 100)
        assert reopened.get("k") == VersionedRecord("new", 100)
        assert reopened.get("gone") is None
        assert reopened.get("gone", as_of=65) == VersionedRecord("x", 60, 70)
        assert reopened.all() == [("k", "new")]
        assert reopened.put("late", "z", 100 - HISTORY_RETENTION - 1) == NOT_PUT
    finally:
        reopened.close()


def test_spec_checks_and_changelog_config() -> None:
    from datetime import timedelta

    from streams.errors import TopologyError

    spec = VersionedStoreSpec("prices", history_retention=timedelta(minutes=5))
    assert spec.history_retention_ms == 300_000
    assert spec.cache is False
    assert spec.changelog_config() == {
        "cleanup.policy": "compact",
        "min.compaction.lag.ms": str(300_000 + 24 * 60 * 60 * 1000),
    }
    with pytest.raises(TopologyError, match="history_retention is required"):
        VersionedStoreSpec("prices")
    with pytest.raises(TopologyError, match="must not be negative"):
        VersionedStoreSpec("prices", history_retention=-1)


def test_a_value_its_serde_cannot_write_names_the_store() -> None:
    """Every store wraps its value serde's error in one ``SerdeError`` naming the kind of store, the store, the
    value (cut to 80 characters) and its type, and the serde; nothing is put."""
    from streams.errors import SerdeError
    from streams.state.buffer import SuppressionBuffer

    store = VersionedKeyValueStore("prices", STRING, STRING, "app-prices-changelog", RecordContext(), 1000)
    with pytest.raises(SerdeError, match=r"^store 'prices': cannot serialize value 5 \(int\) with StringSerde: "):
        store.put("k", 5, BASE)
    assert store.get("k") is None
    buffer = SuppressionBuffer("held", STRING, STRING, "app-held-changelog", RecordContext())
    with pytest.raises(SerdeError, match=r"^suppression buffer 'held': cannot serialize value 1{80} \(int\) with"):
        buffer.value_bytes(int("1" * 100))
    assert buffer.value_bytes(None) is None
    assert (repr(store), repr(buffer)) == ("VersionedKeyValueStore('prices')", "SuppressionBuffer('held')")


def test_join_buffer_orders_logs_and_restores_its_waiting_records() -> None:
    """The time-ordered buffer of a stream-table join with grace: records leave in (timestamp, key bytes,
    arrival) order once stream time minus the grace reaches them; one already older joins at once (``put``
    is False); the changelog holds exactly the records waiting at the last flush, which a restore brings back."""
    from streams.state.join_buffer import TimeOrderedBuffer

    changelog = Changelog()
    rc = RecordContext()
    buffer = TimeOrderedBuffer("b", STRING, STRING, "app-b-changelog", rc)
    buffer.changelog = changelog.writer

    def waiting_in_changelog() -> set[bytes]:
        state: dict[bytes, bytes | None] = {}
        for kb, vb in changelog.records:
            if len(kb) > 12 and not kb.startswith(b"\x00schemakit"):
                state[kb] = vb
        return {kb[12:] for kb, vb in state.items() if vb is not None}

    assert buffer.put("b", "b1", 10, grace_ms=5)
    assert buffer.put("a", "a1", 10, grace_ms=5)
    assert buffer.put("c", "c1", 6, grace_ms=5)  # within the grace of stream time 10
    assert not buffer.put("d", "d1", 4, grace_ms=5)  # older than 10 - 5: joins at once
    assert buffer.pop_due(5) == []
    buffer.flush(None)
    assert waiting_in_changelog() == {b"a", b"b", b"c"}
    rc.headers = (("trace", b"t-1"),)
    assert buffer.put("a", "a2", 16, grace_ms=5)  # kept with its headers
    rc.headers = ()
    assert buffer.pop_due(5) == [("c", "c1", 6, ()), ("a", "a1", 10, ()), ("b", "b1", 10, ())]
    assert buffer.put("x", "x1", 12, grace_ms=5)
    assert buffer.put("y", "y1", 18, grace_ms=5)
    assert buffer.pop_due(5) == [("x", "x1", 12, ())]  # put and gone between two flushes: never logged
    sent = len(changelog.records)
    buffer.flush(None)
    assert all(kb[12:] != b"x" for kb, _ in changelog.records[sent:])
    assert waiting_in_changelog() == {b"a", b"y"}
    restored = TimeOrderedBuffer("b", STRING, STRING, "app-b-changelog", RecordContext())
    restored.restore_batch(changelog.records)
    assert len(restored) == 2 and restored.observed == 18
    assert not restored.put("e", "e1", 12, grace_ms=5)
    assert restored.put("z", "z1", 30, grace_ms=5)
    assert restored.pop_due(5) == [("a", "a2", 16, (("trace", b"t-1"),)), ("y", "y1", 18, ())]
