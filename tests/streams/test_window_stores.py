"""The window store, session store and suppression buffer contracts, in memory and on RocksDB: the read
API, retention and segment expiry, retained duplicates, the uncommitted layer (rolled back by
``discard_pending``), changelog records and restore from them, and the stream time kept with the data."""

from __future__ import annotations

import random
import struct
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from streams.errors import StateStoreError
from streams.processor import RecordContext
from streams.record_serdes import INT, STRING
from streams.state.buffer import SuppressionBuffer
from streams.state.session import SessionStore
from streams.state.timed import META_KEY
from streams.state.window import WindowStore
from streams.windows import SessionWindow, TimeWindow, Windowed
from tests.streams.stores import Changelog, commit


@pytest.fixture(params=["memory", "rocksdb"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def windows(kind: str, tmp_path: Path) -> Iterator[Callable[..., tuple[WindowStore, Changelog, RecordContext]]]:
    opened: list[WindowStore] = []

    def make(retention: int = 100, size: int = 10, duplicates: bool = False, path: Path | None = None):  # type: ignore[no-untyped-def]
        rc = RecordContext()
        where = (path or tmp_path / "w") if kind == "rocksdb" else None
        store = WindowStore(
            "w",
            STRING,
            INT,
            "app-w-changelog",
            rc,
            retention,
            where,
            1000,
            window_size_ms=size,
            retain_duplicates=duplicates,
        )
        log = Changelog()
        store.changelog = log.writer
        opened.append(store)
        return store, log, rc

    yield make
    for store in opened:
        store.close()


def test_window_store_read_api(windows) -> None:  # type: ignore[no-untyped-def]
    store, _, _ = windows()
    for key, start, value in [("b", 10, 2), ("a", 0, 1), ("a", 10, 3), ("a", 20, 4)]:
        store.put(key, value, start, timestamp=start + 1)
    commit(store)
    store.put("a", 5, 30, timestamp=31)  # uncommitted changes are visible too
    assert store.get("a", 10) == 3
    assert store.get("a", 15) is None
    assert store.fetch("a", 5, 30) == [(10, 3), (20, 4), (30, 5)]
    assert store.backward_fetch("a", 0, 20) == [(20, 4), (10, 3), (0, 1)]
    assert store.fetch_with_timestamps("a", 20, 30) == [(20, 4, 21), (30, 5, 31)]
    assert store.fetch_all(10, 20) == [
        (Windowed("a", TimeWindow(10, 20)), 3),
        (Windowed("b", TimeWindow(10, 20)), 2),
        (Windowed("a", TimeWindow(20, 30)), 4),
    ]
    assert [str(w) for w, _ in store.all()] == ["[a@0/10]", "[a@10/20]", "[b@10/20]", "[a@20/30]", "[a@30/40]"]
    assert str(store.backward_all()[0][0]) == "[a@30/40]"
    store.put("a", None, 10)  # a delete
    assert store.fetch("a", 0, 40) == [(0, 1), (20, 4), (30, 5)]


def test_changelog_layout_and_restore(windows, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    store, log, _ = windows()
    store.put("k", 7, 20, timestamp=25)
    store.stream_time = 25
    commit(store)
    store.put("k", None, 20)
    commit(store)
    # Kafka Streams' window changelog key: key bytes + 8-byte start + 4-byte sequence number; our value:
    # 8-byte timestamp + value bytes. The metadata record carries the stream time.
    assert log.records[0] == (b"k" + struct.pack(">qi", 20, 0), struct.pack(">q", 25) + struct.pack(">q", 7))
    assert log.records[1] == (META_KEY, b'{"stream_time":25}')
    assert log.records[2] == (b"k" + struct.pack(">qi", 20, 0), None)
    fresh = WindowStore("w", STRING, INT, "t", RecordContext(), 100, None, 10, window_size_ms=10)
    fresh.restore_batch(log.records[:2])
    assert fresh.fetch_with_timestamps("k", 0, 100) == [(20, 7, 25)]
    assert fresh.stream_time == 25
    fresh.restore_batch(log.records[2:])
    assert fresh.fetch("k", 0, 100) == []


def _block(block: int, advance: int, windows: dict[int, tuple[int, int] | None]) -> bytes:
    """A block record's value: block, advance, then each start's entry (timestamp, INT value) or -1."""
    out = struct.pack(">qq", block, advance)
    for start, entry in windows.items():
        if entry is None:
            out += struct.pack(">qi", start, -1)
        else:
            out += struct.pack(">qi", start, 16) + struct.pack(">q", entry[1]) + struct.pack(">q", entry[0])
    return out


def test_hopping_windows_log_a_keys_windows_by_block(windows, kind: str, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    store, log, _ = windows(retention=1000, size=30)
    store.changelog_blocks(30, 10)
    block_key = lambda key, start: key + struct.pack(">qi", start, -1)  # noqa: E731
    store.put("k", 5, 10, timestamp=12)
    commit(store)
    # A record at 35 updates windows 10, 20 and 30: one block from its first window, one record.
    for start in (10, 20, 30):
        store.put("k", start, start, timestamp=35)
    store.put("j", 1, 40, timestamp=41)
    commit(store)
    # Changed windows 20 and 40 fit one block from 20, which holds the unchanged window 30 as the store has it;
    # then 0 and 50 need two blocks (the unchanged 10 and 20 read from the store, 60 and 70 absent).
    store.put("k", 21, 20, timestamp=45)
    store.put("k", 41, 40, timestamp=45)
    commit(store)
    store.put("k", 1, 0, timestamp=50)
    store.put("k", 51, 50, timestamp=55)
    commit(store)
    assert log.records == [
        (block_key(b"k", 10), _block(30, 10, {10: (5, 12), 20: None, 30: None})),
        (block_key(b"k", 10), _block(30, 10, {10: (10, 35), 20: (20, 35), 30: (30, 35)})),
        (block_key(b"j", 40), _block(30, 10, {40: (1, 41), 50: None, 60: None})),
        (block_key(b"k", 20), _block(30, 10, {20: (21, 45), 30: (30, 35), 40: (41, 45)})),
        (block_key(b"k", 0), _block(30, 10, {0: (1, 50), 10: (10, 35), 20: (21, 45)})),
        (block_key(b"k", 50), _block(30, 10, {50: (51, 55), 60: None, 70: None})),
    ]
    # A restore reads window records (a changelog written before the store logged blocks) and block records
    # alike, in order; and as compaction leaves them (the newest record per key): the same windows.
    old = [(b"k" + struct.pack(">qi", 0, 0), struct.pack(">q", 3) + struct.pack(">q", 9))]
    compacted = list({k: (k, v) for k, v in old + log.records}.values())
    compacted.sort(key=lambda record: max(i for i, r in enumerate(old + log.records) if r == record))
    for n, records in enumerate((old + log.records, compacted)):
        path = tmp_path / f"fresh-{n}" if kind == "rocksdb" else None
        fresh = WindowStore("w", STRING, INT, "t", RecordContext(), 1000, path, 10, window_size_ms=30)
        try:
            fresh.restore_batch(records)
            assert fresh.fetch_with_timestamps("k", 0, 100) == [
                (0, 1, 50),
                (10, 10, 35),
                (20, 21, 45),
                (30, 30, 35),
                (40, 41, 45),
                (50, 51, 55),
            ]
            assert fresh.fetch("j", 0, 100) == [(40, 1)]
            assert fresh.all() == store.all()
            with pytest.raises(StateStoreError, match="damaged window block"):
                fresh.restore_batch([(block_key(b"k", 0), _block(30, 10, {0: None})[:-2])])
        finally:
            fresh.close()


def test_changelog_blocks_need_an_advance_that_divides_them(windows) -> None:  # type: ignore[no-untyped-def]
    store, _, _ = windows()
    with pytest.raises(StateStoreError, match="advance"):
        store.changelog_blocks(25, 10)


def test_retention_hides_and_segments_drop_expired_windows(windows) -> None:  # type: ignore[no-untyped-def]
    # retention 120 s -> one segment per 60 s (Kafka Streams: half the retention, at least a minute)
    store, _, _ = windows(retention=120_000, size=60_000)
    segments = store._inner
    store.put("k", 1, 0)
    store.put("k", 2, 60_000)
    commit(store)
    assert segments.segment_ids == [0, 1]
    store.put("k", 3, 120_000)
    # newest start 120 s, retention 120 s: the window at 0 has expired, though its segment is still there
    assert store.fetch("k", 0, 10**9) == [(60_000, 2), (120_000, 3)]
    commit(store)
    assert segments.segment_ids == [0, 1, 2]
    assert store.put_entry(b"k", "k", 0, 0, (9, 0)) is False  # an expired window takes no writes
    store.put("k", 4, 180_000)
    commit(store)
    # everything in segment 0 is older than 180 s - 120 s: dropped whole; 60 s has expired but not its segment
    assert segments.segment_ids == [1, 2, 3]
    assert store.fetch("k", 0, 10**9) == [(120_000, 3), (180_000, 4)]


def test_the_entry_estimate_follows_writes_deletes_and_expiry(windows, kind: str) -> None:  # type: ignore[no-untyped-def]
    # Metrics read the estimate from another thread while the task writes: it must not walk the store.
    store, _, _ = windows(retention=120_000, size=60_000)
    store.put("a", 1, 0)
    store.put("b", 1, 0)
    store.put("a", 2, 60_000)
    assert store.estimate_num_entries() == 3  # uncommitted: counted from the changes
    commit(store)
    if kind == "rocksdb":
        assert store.estimate_num_entries() >= 3  # RocksDB's own figure (the metadata record included)
        return
    assert store.estimate_num_entries() == 3
    store.put("a", None, 60_000)
    store.put("a", 3, 0)  # an update of an entry that is there: not a new one
    commit(store)
    assert store.estimate_num_entries() == 2
    store.put("c", 1, 180_000)  # segment 0 (both windows at 0) expires whole
    commit(store)
    assert store.estimate_num_entries() == 1 == store.approximate_num_entries()


def test_retained_duplicates_are_all_kept(windows) -> None:  # type: ignore[no-untyped-def]
    store, log, _ = windows(duplicates=True)
    for value in (1, 2, 3):
        store.put("k", value, 5)
    store.put("k", None, 5)  # ignored: a join buffer has no deletes
    commit(store)
    assert store.fetch("k", 0, 10) == [(5, 1), (5, 2), (5, 3)]
    assert [key[-4:] for key, _ in log.records[:3]] == [struct.pack(">i", n) for n in (1, 2, 3)]


@pytest.mark.parametrize("duplicates", [False, True], ids=["windows", "duplicates"])
def test_scans_by_time_see_committed_and_uncommitted_entries(windows, duplicates: bool) -> None:  # type: ignore[no-untyped-def]
    """``fetch_all`` (what emitting final results scans) merges the committed entries with the uncommitted ones
    of its times, before and after the first scan, across a commit that leaves a change made after its flush
    uncommitted, and after a rollback."""
    store, _, _ = windows(duplicates=duplicates)

    def scan(t_from: int, t_to: int) -> list[tuple[str, int]]:
        return [(str(w), v) for w, v in store.fetch_all(t_from, t_to)]

    store.put("a", 1, 10)
    store.put("b", 2, 20)
    commit(store)
    store.put("c", 3, 10)  # uncommitted, before the first scan
    assert scan(10, 10) == [("[a@10/20]", 1), ("[c@10/20]", 3)]
    store.put("a", 4, 20)  # uncommitted, after it
    store.put("d", 5, 30)
    assert scan(20, 30) == [("[a@20/30]", 4), ("[b@20/30]", 2), ("[d@30/40]", 5)]
    store.flush(None)
    store.put("e", 6, 20)  # changed after the flush: still uncommitted after the persist
    store.persist()
    assert scan(20, 20) == [("[a@20/30]", 4), ("[b@20/30]", 2), ("[e@20/30]", 6)]
    store.put("f", 7, 10)
    store.discard_pending()
    assert scan(0, 40) == [("[a@10/20]", 1), ("[c@10/20]", 3), ("[a@20/30]", 4), ("[b@20/30]", 2), ("[d@30/40]", 5)]
    if not duplicates:
        store.put("c", None, 10)  # a delete, uncommitted
        store.put("b", 8, 20)
        assert scan(10, 20) == [("[a@10/20]", 1), ("[a@20/30]", 4), ("[b@20/30]", 8)]


def test_uncommitted_changes_roll_back(windows) -> None:  # type: ignore[no-untyped-def]
    store, _, _ = windows()
    store.put("k", 1, 10)
    store.stream_time = 12
    commit(store)
    store.put("k", 2, 10)
    store.put("k", 3, 20)
    store.stream_time = 30
    store.flush(None)  # flushed, but the offsets were never committed
    store.discard_pending()
    assert store.fetch("k", 0, 100) == [(10, 1)]
    assert store.stream_time == 12


def test_rocksdb_window_store_keeps_data_and_time_across_reopen(tmp_path: Path) -> None:
    def open_store() -> WindowStore:
        return WindowStore("w", STRING, INT, "t", RecordContext(), 100, tmp_path / "db", 10, window_size_ms=10)

    store = open_store()
    store.put("k", 1, 10, timestamp=11)
    store.set_metadata("emit-final:node", 40)
    store.stream_time = 55
    commit(store)
    store.put("k", 2, 20)  # not committed: gone after the reopen
    store.close()
    again = open_store()
    try:
        assert again.fetch_with_timestamps("k", 0, 100) == [(10, 1, 11)]
        assert again.stream_time == 55 and again.get_metadata("emit-final:node") == 40
        assert again.observed == 10
    finally:
        again.close()


@pytest.mark.parametrize("kind", ["memory", "rocksdb"])
def test_a_negative_window_start_is_refused(kind: str, tmp_path: Path) -> None:
    # Windows start at 0 or later (a Window refuses a negative start, as Kafka's does); a RocksDB store's segment
    # keys sort a negative time after every other and its reopen looped over them.
    path = tmp_path / "db" if kind == "rocksdb" else None
    store = WindowStore("w", STRING, INT, "t", RecordContext(), 1000, path, 10, window_size_ms=10)
    try:
        with pytest.raises(ValueError, match=r"window store 'w': window start -5 of key 'k' is negative"):
            store.put("k", 1, -5)
        store.put("k", 2, 0)
        assert store.fetch_with_timestamps("k", 0, 100) == [(0, 2, 0)]
    finally:
        store.close()


def test_rocksdb_lookups_find_what_an_earlier_run_or_a_restore_wrote(tmp_path: Path) -> None:
    # Lookups newer than anything this store wrote skip RocksDB: never for data it did not write itself.
    def open_store(path: Path) -> WindowStore:
        # a cache of one entry: lookups go to RocksDB
        return WindowStore("w", STRING, INT, "t", RecordContext(), 1000, path, 1, window_size_ms=10)

    store = open_store(tmp_path / "db")
    log = Changelog()
    store.changelog = log.writer
    store.put("k", 1, 100, timestamp=100)
    commit(store)
    store.close()
    again = open_store(tmp_path / "db")
    restored = open_store(tmp_path / "restored")
    try:
        for s in (again, restored):
            s.put("k", 2, 50, timestamp=50)  # an older window, written after the reopen
            s.put("other", 3, 200, timestamp=200)
            commit(s)
            if s is restored:
                s.restore_batch(log.records)
            assert s.get("k", 100) == 1 and s.get("k", 50) == 2 and s.get("other", 200) == 3
            assert s.get("k", 110) is None and s.get("k", 200) is None
            s.put("k", 4, 300, timestamp=300)
            commit(s)
            assert s.fetch("k", 0, 1000) == [(50, 2), (100, 1), (300, 4)]
    finally:
        again.close()
        restored.close()


def test_rocksdb_lookups_after_a_commit_larger_than_the_object_cache_read_its_values(tmp_path: Path) -> None:
    # A commit that writes more windows than the object cache holds caches the last ones written; an entry
    # cached before under one of the others is stale, and must not be read.
    store = WindowStore("w", STRING, INT, "t", RecordContext(), 1000, tmp_path / "db", 2, window_size_ms=10)
    try:
        store.put("a", 1, 300, timestamp=300)
        commit(store)
        assert store.get("a", 300) == 1  # cached
        store.put("a", 2, 300, timestamp=300)  # the first of three changes: not cached by the commit
        store.put("b", 3, 100, timestamp=100)
        store.put("c", 4, 100, timestamp=100)
        commit(store)
        assert (store.get("a", 300), store.get("b", 100), store.get("c", 100)) == (2, 3, 4)
    finally:
        store.close()


@pytest.mark.parametrize("seed", range(4))
def test_rocksdb_scans_by_time_from_the_object_cache_equal_scans_of_rocksdb(seed: int, tmp_path: Path) -> None:
    # Scans of every key's windows over times the object cache holds all of (written since the store opened, not
    # evicted) read the cache; the same operations on a store without a cache (RocksDB always) and in memory give
    # the same rows, through commits (and uncommitted changes), deletes, evictions of a small cache, expiry and a
    # reopen.
    rng = random.Random(seed)

    def open_store(name: str, cache: int) -> WindowStore:
        return WindowStore("w", STRING, INT, "t", RecordContext(), 400, tmp_path / name, cache, window_size_ms=10)

    memory = WindowStore("w", STRING, INT, "t", RecordContext(), 400, None, 0, window_size_ms=10)
    caches = {"none": 0, "small": 7, "large": 10_000}
    stores = {name: open_store(name, cache) for name, cache in caches.items()}
    cached_scans = 0
    try:
        for step in range(60):
            for _ in range(rng.randrange(1, 25)):
                key, start = f"k{rng.randrange(12)}", 10 * max(0, step // 2 + rng.randrange(-3, 2))
                value = None if rng.random() < 0.15 else rng.randrange(100)
                for store in (memory, *stores.values()):
                    store.put(key, value, start, timestamp=start + 1)
            if step % 3 == 0:  # uncommitted changes too
                low = max(0, 10 * (step // 2) - 60)
                for t_from, t_to in ((low, low + 30), (0, 10_000)):
                    expected = memory.all_entries(t_from, t_to)
                    for store in stores.values():
                        assert store.all_entries(t_from, t_to) == expected
            for store in (memory, *stores.values()):
                commit(store)
            if step == 30:  # data written before the open: scanned from RocksDB until written again
                for name, cache in caches.items():
                    stores[name].close()
                    stores[name] = open_store(name, cache)
            low = max(0, 10 * (step // 2) - 60)
            for t_from, t_to in ((low, low + 30), (low + 20, low + 200), (0, 10_000)):
                expected = memory.all_entries(t_from, t_to)
                for store in stores.values():
                    assert store.all_entries(t_from, t_to) == expected
                cached_scans += t_from > stores["large"]._inner._uncached_upto  # type: ignore[attr-defined]
        assert cached_scans > 20
    finally:
        memory.close()
        for store in stores.values():
            store.close()


def test_rocksdb_range_fetches_of_duplicates_find_an_earlier_runs_or_a_restores_data(tmp_path: Path) -> None:
    # A join's range fetch skips RocksDB for a key with nothing written in range since the store opened: never
    # for data written before that (segments of 100 s here, so the fetches span two).
    def open_store(path: Path) -> WindowStore:
        return WindowStore(
            "w", STRING, INT, "t", RecordContext(), 200_000, path, 1000, window_size_ms=0, retain_duplicates=True
        )

    store = open_store(tmp_path / "db")
    log = Changelog()
    store.changelog = log.writer
    for value, t in ((1, 150_000), (2, 150_000), (3, 90_000)):
        store.put("k", value, t, timestamp=t)
    commit(store)
    assert store.fetch("k", 80_000, 200_000) == [(90_000, 3), (150_000, 1), (150_000, 2)]
    assert store.fetch("k", 150_001, 200_000) == [] and store.fetch("nothing", 0, 200_000) == []
    store.close()
    again = open_store(tmp_path / "db")
    restored = open_store(tmp_path / "restored")
    try:
        restored.restore_batch(log.records)
        for s in (again, restored):
            s.put("other", 4, 160_000, timestamp=160_000)
            commit(s)
            assert s.fetch("k", 80_000, 200_000) == [(90_000, 3), (150_000, 1), (150_000, 2)]
            s.put("k", 5, 170_000, timestamp=170_000)
            commit(s)
            assert s.fetch("k", 151_000, 200_000) == [(170_000, 5)]
            assert s.fetch("k", 100_000, 160_000) == [(150_000, 1), (150_000, 2)]
            assert s.fetch("other", 0, 159_999) == []
    finally:
        again.close()
        restored.close()


@pytest.fixture
def sessions(kind: str, tmp_path: Path) -> Iterator[SessionStore]:
    rc = RecordContext()
    store = SessionStore("s", STRING, INT, "t", rc, 100, tmp_path / "s" if kind == "rocksdb" else None, 100)
    store.changelog = Changelog().writer
    yield store
    store.close()


def test_session_store_contract(sessions: SessionStore) -> None:
    def s(key: str, start: int, end: int) -> Windowed:
        return Windowed(key, SessionWindow(start, end))

    sessions.put(s("a", 0, 5), 2)
    sessions.put(s("a", 20, 30), 3)
    sessions.put(s("b", 3, 4), 1)
    commit(sessions)
    sessions.put(s("a", 40, 40), 1)
    assert sessions.fetch_session("a", 20, 30) == 3
    # sessions that end at or after 5 and start at or before 25, by end
    assert sessions.find_sessions("a", 5, 25) == [(s("a", 0, 5), 2), (s("a", 20, 30), 3)]
    assert sessions.backward_find_sessions("a", 6, 100) == [(s("a", 40, 40), 1), (s("a", 20, 30), 3)]
    assert sessions.fetch("b") == [(s("b", 3, 4), 1)]
    assert sessions.find_sessions_ending_between(4, 30) == [(s("b", 3, 4), 1), (s("a", 0, 5), 2), (s("a", 20, 30), 3)]
    sessions.remove(s("a", 20, 30))
    assert sessions.fetch("a") == [(s("a", 0, 5), 2), (s("a", 40, 40), 1)]
    with pytest.raises(Exception, match=r"keyed by Windowed\(key, SessionWindow\)"):
        sessions.put(Windowed("a", TimeWindow(0, 1)), 1)


def test_session_changelog_key_is_key_end_start(sessions: SessionStore) -> None:
    log = Changelog()
    sessions.changelog = log.writer
    sessions.put(Windowed("a", SessionWindow(3, 9)), 2)
    sessions.flush(None)
    assert log.records[0][0] == b"a" + struct.pack(">qq", 9, 3)


def test_suppression_buffer_order_and_restore() -> None:
    rc = RecordContext()
    log = Changelog()
    buffer = SuppressionBuffer("b", STRING, INT, "t", rc, count_bytes=True)
    buffer.changelog = log.writer
    buffer.put(b"x", "x", 1, None, 5, 20)
    buffer.put(b"y", "y", 7, 6, 6, 10)
    buffer.put(b"x", "x", 2, 1, 8, 99)  # keeps its place (due 20) and its prior value; takes the new value
    buffer.stream_time = 8
    buffer.flush(None)
    assert buffer.size_bytes == sum(len(k) + len(v or b"") for k, v in log.records if k != META_KEY)
    restored = SuppressionBuffer("b", STRING, INT, "t", RecordContext(), count_bytes=True)
    restored.restore_batch(log.records)
    assert restored.stream_time == 8 and restored.size_bytes == buffer.size_bytes
    for b in (buffer, restored):
        assert [(u.key, u.new, u.prior, u.timestamp) for u in b.pop_due(15)] == [("y", 7, 6, 6)]
        assert b.min_due == 20
        assert [(u.key, u.new, u.prior, u.timestamp) for u in b.pop_due(20)] == [("x", 2, None, 8)]
        assert len(b) == 0
    buffer.flush(None)
    assert log.records[-2:] == [(b"y", None), (b"x", None)] or log.records[-2:] == [(b"x", None), (b"y", None)]


def test_suppression_buffer_evicts_by_due_time_then_in_buffering_order() -> None:
    # Many keys share a due time (a window's close): they leave in the order they were buffered, also when
    # keys were evicted in between; after a restore, in the order of their changelog records.
    log = Changelog()
    buffer = SuppressionBuffer("b", STRING, INT, "t", RecordContext())
    buffer.changelog = log.writer
    for key, due in [("c", 20), ("a", 10), ("d", 20), ("b", 10), ("e", 30), ("a", 20)]:  # "a" keeps due 10
        buffer.put(key.encode(), key, 1, None, 0, due)
    assert [u.key for u in buffer.pop_due(10)] == ["a", "b"]
    buffer.put(b"f", "f", 1, None, 0, 20)
    buffer.put(b"g", "g", 1, None, 0, 5)
    buffer.flush(None)
    restored = SuppressionBuffer("b", STRING, INT, "t", RecordContext())
    restored.restore_batch(log.records)
    logged = [k.decode() for k, _ in log.records if k != META_KEY]
    for b, same_due in ((buffer, ["c", "d", "f"]), (restored, [k for k in logged if k in "cdf"])):
        assert b.min_due == 5
        assert [(u.key, u.due) for u in b.pop_due(25)] == [("g", 5)] + [(k, 20) for k in same_due]
        assert b.pop_oldest().key == "e" and b.min_due is None and len(b) == 0


def test_suppression_buffer_pops_oldest_across_due_times() -> None:
    # What a full buffer that emits early evicts: the earliest due time first, within it the first buffered.
    buffer = SuppressionBuffer("b", STRING, INT, "t", RecordContext())
    for key, due in [("c", 20), ("a", 10), ("d", 20), ("b", 10)]:
        buffer.put(key.encode(), key, 1, None, 0, due)
    assert [buffer.pop_oldest().key for _ in range(3)] == ["a", "b", "c"]
    assert buffer.min_due == 20 and len(buffer) == 1
    buffer.put(b"e", "e", 1, None, 0, 15)
    assert [(u.key, u.due) for u in buffer.pop_due(20)] == [("e", 15), ("d", 20)]
    assert buffer.min_due is None


def test_keys_that_are_prefixes_of_each_other_stay_apart(kind: str, tmp_path: Path) -> None:
    """Kafka Streams' SessionKeySchemaTest: keys [0], [0, 0], [0, 0, 0] sort into each other's ranges; a
    fetch returns only the key asked for."""
    from streams.record_serdes import BYTES

    path = tmp_path / "prefix" if kind == "rocksdb" else None
    sessions = SessionStore("s", BYTES, INT, "t", RecordContext(), 10**6, path, 100)
    try:
        values = {
            (b"\x00\x00", 0, 0): 1,
            (b"\x00", 0, 0): 2,
            (b"\x00\x00\x00", 0, 0): 3,
            (b"\x00", 10, 20): 4,
            (b"\x00\x00", 10, 20): 5,
            (b"\x00\x00\x00", 10, 20): 6,
        }
        for (key, start, end), value in values.items():
            sessions.put(Windowed(key, SessionWindow(start, end)), value)
        commit(sessions)
        assert [v for _, v in sessions.find_sessions(b"\x00", 0, 10**6)] == [2, 4]
        assert [v for _, v in sessions.find_sessions(b"\x00\x00", 0, 10**6)] == [1, 5]
    finally:
        sessions.close()


def test_a_flush_forwards_in_the_order_of_the_last_changes(windows) -> None:  # type: ignore[no-untyped-def]
    """Forwarded timestamps rise with the input's: a key changed again moves behind keys changed since.
    (A suppression downstream then never sees a later time before an earlier window's last update.)"""
    store, _, rc = windows()
    forwarded: list[tuple[str, int, int]] = []
    store.listener = lambda key, t, sub, entry, old: forwarded.append((key, t, rc.timestamp))
    for key, start, ts in [("a", 0, 1), ("b", 10, 12), ("a", 0, 5), ("c", 10, 15)]:
        rc.timestamp = ts
        store.put(key, ts, start, timestamp=ts)
    store.flush(None)
    assert forwarded == [("b", 10, 12), ("a", 0, 5), ("c", 10, 15)]


def test_key_value_cache_flushes_in_the_order_of_the_last_changes() -> None:
    from streams.state.memory import InMemoryKeyValueStore

    rc = RecordContext()
    store = InMemoryKeyValueStore("kv", STRING, INT, "t", rc)
    flushed: list[str] = []
    store.listener = lambda key, new, old, ts: flushed.append(key)
    for key in ("a", "b", "a"):
        store.put(key, 1)
    store.flush(None)
    assert flushed == ["b", "a"]


def test_session_segments_expire_and_restore_from_the_changelog(kind: str, tmp_path: Path) -> None:
    def s(start: int, end: int) -> Windowed:
        return Windowed("a", SessionWindow(start, end))

    # retention 120 s -> one segment per 60 s of session end
    store = SessionStore(
        "s",
        STRING,
        INT,
        "app-s-changelog",
        RecordContext(),
        120_000,
        tmp_path / "s" if kind == "rocksdb" else None,
        100,
    )
    log = Changelog()
    store.changelog = log.writer
    try:
        store.put(s(0, 10), 1)
        store.put(s(60_000, 60_010), 2)
        commit(store)
        assert store._inner.segment_ids == [0, 1]
        store.put(s(180_000, 180_000), 3)
        commit(store)
        # the session that ended at 10 is older than 180 s - 120 s: its segment is dropped whole;
        # the one that ended at 60_010 is 119_990 ms old and stays
        assert store._inner.segment_ids == [1, 3]
        assert store.fetch("a") == [(s(60_000, 60_010), 2), (s(180_000, 180_000), 3)]
        store.remove(s(60_000, 60_010))
        commit(store)
    finally:
        store.close()
    assert [k for k, _ in log.records] == [
        b"a" + struct.pack(">qq", end, start)
        for start, end in [(0, 10), (60_000, 60_010), (180_000, 180_000), (60_000, 60_010)]
    ]
    fresh = SessionStore("s", STRING, INT, "t", RecordContext(), 120_000, None, 100)
    fresh.restore_batch(log.records[:3])  # expired on the way in: the first session is not kept
    assert fresh._inner.segment_ids == [1, 3]
    assert fresh.fetch("a") == [(s(60_000, 60_010), 2), (s(180_000, 180_000), 3)]
    fresh.restore_batch(log.records[3:])
    assert fresh.fetch("a") == [(s(180_000, 180_000), 3)]
