"""A least-recently-used map bounded by the bytes its values stand for, not by how many there are.

Caches keyed by client input are bounded this way: a count bound lets a few huge entries (a thousand 1 MB
schemas) take gigabytes. Keys should be digests of that input, never the input itself (its bytes would not
be counted). Thread-safe: the protoc cache is filled from the schema workers.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class ByteLru(Generic[K, V]):
    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.bytes = 0
        self._d: OrderedDict[K, tuple[V, int]] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._d)

    def get(self, key: K) -> V | None:
        with self._lock:
            hit = self._d.get(key)
            if hit is None:
                return None
            self._d.move_to_end(key)
            return hit[0]

    def put(self, key: K, value: V, size: int) -> None:
        """Keep ``value``, which stands for ``size`` bytes; the least recently used entries go to make room.
        A value larger than the whole budget is not kept."""
        if size > self.max_bytes:
            return
        with self._lock:
            old = self._d.pop(key, None)
            if old is not None:
                self.bytes -= old[1]
            self._d[key] = (value, size)
            self.bytes += size
            while self.bytes > self.max_bytes:
                _, (_, dropped) = self._d.popitem(last=False)
                self.bytes -= dropped
