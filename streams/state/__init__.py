"""State stores: key-value stores in memory or in RocksDB, with a per-commit record cache and a changelog.

``RocksDBKeyValueStore`` needs the ``[streams]`` extra (rocksdict) and is imported on first use."""

from __future__ import annotations

from typing import TYPE_CHECKING

from streams.state.cache import CachingKeyValueStore
from streams.state.memory import InMemoryKeyValueStore

if TYPE_CHECKING:
    from streams.state.rocksdb import RocksDBKeyValueStore

KeyValueStore = CachingKeyValueStore

__all__ = ["CachingKeyValueStore", "InMemoryKeyValueStore", "KeyValueStore", "RocksDBKeyValueStore"]


def __getattr__(name: str) -> object:
    if name == "RocksDBKeyValueStore":
        from streams.state.rocksdb import RocksDBKeyValueStore

        return RocksDBKeyValueStore
    raise AttributeError(f"module 'streams.state' has no attribute {name!r}")
