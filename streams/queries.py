"""Interactive queries: a read-only view of one state store over the tasks running on this instance."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from streams.errors import InvalidStateStoreError
from streams.log.partitioner import partition_for_key
from streams.state.cache import CachingKeyValueStore
from streams.task import StreamTask

__all__ = ["ReadOnlyStore"]


class ReadOnlyStore:
    """Store ``name`` over ``active_tasks()``; the key's partition (of ``partitions()``, the store's
    sub-topology's task count) decides which task holds it. Both are asked on every read: tasks move."""

    def __init__(self, name: str, active_tasks: Callable[[], Iterable[StreamTask]], partitions: Callable[[], int]):
        self.name = name
        self._active_tasks = active_tasks
        self._partitions = partitions

    def _stores(self) -> dict[int, CachingKeyValueStore]:
        out = {}
        for task in self._active_tasks():
            store = task.stores.get(self.name)
            if store is not None and not store.closed:
                out[task.partition] = store
        return out

    def get(self, key: Any) -> Any:
        stores = self._stores()
        if not stores:
            raise InvalidStateStoreError(f"store {self.name!r} has no running task on this instance")
        some = next(iter(stores.values()))
        partition = partition_for_key(some.key_bytes(key), self._partitions())
        store = stores.get(partition)
        if store is not None:
            return store.peek(key)
        for other in stores.values():  # a custom partitioner may have put it elsewhere
            value = other.peek(key)
            if value is not None:
                return value
        raise InvalidStateStoreError(
            f"key {key!r} of store {self.name!r} is in partition {partition}, whose task runs on another instance"
        )

    def all(self) -> list[tuple[Any, Any]]:
        out: list[tuple[Any, Any]] = []
        for store in self._stores().values():
            out.extend(store.all())
        return out

    def approximate_num_entries(self) -> int:
        return sum(s.approximate_num_entries() for s in self._stores().values())
