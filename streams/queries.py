"""Interactive queries: a read-only view of one state store over the tasks on this instance."""

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
    sub-topology's task count) decides which task holds it. Both are asked on every read: tasks move.

    With ``standby_tasks``, partitions whose active task runs elsewhere are answered from a standby or
    warm-up replica here, which may be behind the active (``is_stale``)."""

    def __init__(
        self,
        name: str,
        active_tasks: Callable[[], Iterable[StreamTask]],
        partitions: Callable[[], int],
        standby_tasks: Callable[[], Iterable[StreamTask]] | None = None,
    ):
        self.name = name
        self._active_tasks = active_tasks
        self._partitions = partitions
        self._standby_tasks = standby_tasks

    def _stores(self) -> tuple[dict[int, CachingKeyValueStore], set[int]]:
        """Partition -> store, and the partitions served by replicas."""
        out: dict[int, CachingKeyValueStore] = {}
        for task in self._active_tasks():
            store = task.stores.get(self.name)
            if store is not None and not store.closed:
                out[task.partition] = store
        stale: set[int] = set()
        if self._standby_tasks is not None:
            for task in self._standby_tasks():
                store = task.stores.get(self.name)
                if store is not None and not store.closed and task.partition not in out:
                    out[task.partition] = store
                    stale.add(task.partition)
        return out, stale

    def _partition(self, stores: dict[int, CachingKeyValueStore], key: Any) -> int:
        some = next(iter(stores.values()))
        return partition_for_key(some.key_bytes(key), self._partitions())

    def get(self, key: Any) -> Any:
        stores, _ = self._stores()
        if not stores:
            raise InvalidStateStoreError(f"store {self.name!r} has no running task on this instance")
        partition = self._partition(stores, key)
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

    def is_stale(self, key: Any) -> bool:
        """Whether ``get(key)`` is answered by a replica (possibly behind) rather than by the active task."""
        stores, stale = self._stores()
        return bool(stores) and self._partition(stores, key) in stale

    def all(self) -> list[tuple[Any, Any]]:
        out: list[tuple[Any, Any]] = []
        for store in self._stores()[0].values():
            out.extend(store.all())
        return out

    def approximate_num_entries(self) -> int:
        return sum(s.approximate_num_entries() for s in self._stores()[0].values())
