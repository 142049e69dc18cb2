"""State stores: key-value stores in memory or in RocksDB, with a per-commit record cache and a changelog."""

from streams.state.cache import CachingKeyValueStore
from streams.state.memory import InMemoryKeyValueStore
from streams.state.rocksdb import RocksDBKeyValueStore

KeyValueStore = CachingKeyValueStore

__all__ = ["CachingKeyValueStore", "InMemoryKeyValueStore", "KeyValueStore", "RocksDBKeyValueStore"]
