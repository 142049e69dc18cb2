"""``range(from, to)`` on the key-value stores (what range queries read): inclusive, in serialized-key order,
open ends, and on RocksDB the writes not yet persisted (dirty, flushed, deletes) over what is on disk."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from streams.processor import RecordContext
from streams.record_serdes import INT, STRING
from streams.state.cache import CachingKeyValueStore
from streams.state.memory import InMemoryKeyValueStore


def _store(kind: str, tmp_path: Path) -> CachingKeyValueStore:
    args: tuple[Any, ...] = ("s", STRING, INT, "app-s-changelog", RecordContext())
    if kind == "memory":
        return InMemoryKeyValueStore(*args)
    from streams.state.rocksdb import RocksDBKeyValueStore

    return RocksDBKeyValueStore(*args, path=tmp_path / "s")


@pytest.mark.parametrize("kind", ["memory", "rocksdb"])
def test_range_inclusive_ordered_open_ends_over_pending_writes(kind: str, tmp_path: Path) -> None:
    store = _store(kind, tmp_path)
    for i in range(20):
        store.put(f"k{i:02d}", i)
    store.flush(None)
    store.persist()  # on disk (RocksDB)
    store.put("k065", 65)
    store.put("k07", 70)
    store.flush(None)  # flushed, not persisted yet
    store.put("k06", None)  # dirty: a delete over what is on disk
    store.put("k07", 7)  # dirty over a flushed value
    assert list(store.range("k05", "k08")) == [("k05", 5), ("k065", 65), ("k07", 7), ("k08", 8)]
    assert list(store.range(None, "k01")) == [("k00", 0), ("k01", 1)]
    assert list(store.range("k18", None)) == [("k18", 18), ("k19", 19)]
    assert list(store.range("k30", "k40")) == []
    assert len(list(store.range())) == 20
    store.close()
