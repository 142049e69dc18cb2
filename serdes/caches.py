"""Bounded caches: ``LruCache`` for the registry clients' answers, ``BoundedDict`` for the serializers' plans.

Every cache in serdes is bounded by the client's ``cache_capacity`` (confluent-kafka's ``cache.capacity``,
default 1000), so a long-running consumer meeting ever new schema ids or subjects keeps a fixed footprint.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

DEFAULT_CAPACITY = 1000  # confluent-kafka's cache.capacity default

_NEVER = float("inf")


class LruCache(Generic[K, V]):
    """At most ``capacity`` entries, the least recently used evicted first. With ``ttl`` (seconds) an entry
    also expires that long after it was stored; ``ttl=0`` stores nothing. Thread-safe."""

    def __init__(
        self, capacity: int = DEFAULT_CAPACITY, ttl: float | None = None, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if capacity < 1:
            raise ValueError(f"cache capacity must be at least 1, not {capacity}")
        if ttl is not None and ttl < 0:
            raise ValueError(f"cache ttl must be None or >= 0 seconds, not {ttl}")
        self.capacity = capacity
        self.ttl = ttl
        self._clock = clock
        self._entries: OrderedDict[K, tuple[float, V]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: K) -> V | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            if entry[0] is not _NEVER and entry[0] <= self._clock():
                del self._entries[key]
                return None
            self._entries.move_to_end(key)
            return entry[1]

    def put(self, key: K, value: V) -> V:
        if self.ttl == 0:
            return value
        expiry = _NEVER if self.ttl is None else self._clock() + self.ttl
        with self._lock:
            self._entries[key] = (expiry, value)
            self._entries.move_to_end(key)
            while len(self._entries) > self.capacity:
                self._entries.popitem(last=False)
        return value

    def setdefault(self, key: K, value: V) -> V:
        """The cached value for ``key`` if there is one, else ``value`` (stored)."""
        hit = self.get(key)
        return hit if hit is not None else self.put(key, value)

    def discard_where(self, predicate: Callable[[K], bool]) -> None:
        with self._lock:
            for key in [k for k in self._entries if predicate(k)]:
                del self._entries[key]

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)


class BoundedDict(dict[K, V]):
    """A dict of at most ``capacity`` entries: ``put`` past that evicts the entry stored first.

    Reads are plain dict reads, because plans are looked up once per record; eviction is therefore by age,
    not by use (an evicted plan is rebuilt from the client's caches, without a registry call while they hold it).
    """

    __slots__ = ("capacity",)

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        super().__init__()
        if capacity < 1:
            raise ValueError(f"cache capacity must be at least 1, not {capacity}")
        self.capacity = capacity

    def put(self, key: K, value: V) -> V:
        if key not in self and len(self) >= self.capacity:
            try:
                del self[next(iter(self))]
            except (StopIteration, KeyError, RuntimeError):  # another thread changed the dict meanwhile
                pass
        self[key] = value
        return value
