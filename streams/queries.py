"""Interactive queries: read-only views of one state store over the tasks running on this instance.

``read_only_store`` gives the view that fits the store: ``ReadOnlyStore`` (key-value), ``ReadOnlyWindowStore``
or ``ReadOnlySessionStore``. A key's partition (of the store's sub-topology's task count) says which task
holds it; queries over all keys ask every task. Reads run on the caller's thread while stream threads
write, so a read that meets a store mid-change is retried. With standby tasks, partitions whose active task
runs elsewhere are answered from a standby or warm-up replica here, which may be behind (``is_stale``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from streams.errors import InvalidStateStoreError
from streams.log.partitioner import partition_for_key
from streams.task import StreamTask
from streams.topology import SessionStoreSpec, StoreSpec, WindowStoreSpec
from streams.windows import Windowed

__all__ = ["ReadOnlySessionStore", "ReadOnlyStore", "ReadOnlyWindowStore", "read_only_store"]

T = TypeVar("T")
_RETRIES = 5


def _retrying(read: Callable[[], T]) -> T:
    for _ in range(_RETRIES - 1):
        try:
            return read()
        except RuntimeError:  # "dictionary changed size during iteration": the stream thread wrote
            continue
    return read()


class _View:
    """Store ``name`` over ``active_tasks()`` (and, if given, ``standby_tasks()`` for the partitions not
    active here); they and ``partitions()`` are asked on every read: tasks move."""

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

    def _stores(self) -> tuple[dict[int, Any], set[int]]:
        """Partition -> store, and the partitions served by replicas."""
        out: dict[int, Any] = {}
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

    def _partition(self, stores: dict[int, Any], key: Any) -> int:
        some = next(iter(stores.values()))
        return partition_for_key(some.key_bytes(key), self._partitions())

    def _read_key(self, key: Any, read: Callable[[Any], T], empty: T) -> T:
        """``read(store)`` on the store holding ``key`` (or, if a custom partitioner put it elsewhere, the
        first other store where it is not ``empty``)."""
        stores, _ = self._stores()
        if not stores:
            raise InvalidStateStoreError(f"store {self.name!r} has no running task on this instance")
        partition = self._partition(stores, key)
        store = stores.get(partition)
        if store is not None:
            return _retrying(lambda: read(store))
        for other in stores.values():
            value = _retrying(lambda other=other: read(other))  # type: ignore[misc]
            if value != empty:
                return value
        raise InvalidStateStoreError(
            f"key {key!r} of store {self.name!r} is in partition {partition}, whose task runs on another instance"
        )

    def _read_all(self, read: Callable[[Any], list[T]]) -> list[T]:
        out: list[T] = []
        for store in self._stores()[0].values():
            out.extend(_retrying(lambda store=store: read(store)))  # type: ignore[misc]
        return out

    def is_stale(self, key: Any) -> bool:
        """Whether reads of ``key`` are answered by a replica (possibly behind) rather than by the active task."""
        stores, stale = self._stores()
        return bool(stores) and self._partition(stores, key) in stale

    def approximate_num_entries(self) -> int:
        return sum(s.approximate_num_entries() for s in self._stores()[0].values())


class ReadOnlyStore(_View):
    """A key-value store."""

    def get(self, key: Any) -> Any:
        return self._read_key(key, lambda s: s.peek(key), None)

    def all(self) -> list[tuple[Any, Any]]:
        return self._read_all(lambda s: list(s.all()))


class ReadOnlyWindowStore(_View):
    """A window store (Kafka Streams' ``ReadOnlyWindowStore``)."""

    def get(self, key: Any, window_start: int) -> Any:
        return self._read_key(key, lambda s: s.get(key, window_start), None)

    def fetch(self, key: Any, time_from: int, time_to: int) -> list[tuple[int, Any]]:
        return self._read_key(key, lambda s: s.fetch(key, time_from, time_to), [])

    def backward_fetch(self, key: Any, time_from: int, time_to: int) -> list[tuple[int, Any]]:
        return self.fetch(key, time_from, time_to)[::-1]

    def fetch_all(self, time_from: int, time_to: int) -> list[tuple[Windowed, Any]]:
        rows = self._read_all(lambda s: s.fetch_all(time_from, time_to))
        return sorted(rows, key=lambda row: row[0].window.start)

    def backward_fetch_all(self, time_from: int, time_to: int) -> list[tuple[Windowed, Any]]:
        return self.fetch_all(time_from, time_to)[::-1]

    def all(self) -> list[tuple[Windowed, Any]]:
        return sorted(self._read_all(lambda s: s.all()), key=lambda row: row[0].window.start)


class ReadOnlySessionStore(_View):
    """A session store (Kafka Streams' ``ReadOnlySessionStore``)."""

    def fetch(self, key: Any) -> list[tuple[Windowed, Any]]:
        return self._read_key(key, lambda s: s.fetch(key), [])

    def find_sessions(self, key: Any, earliest_end: int, latest_start: int) -> list[tuple[Windowed, Any]]:
        return self._read_key(key, lambda s: s.find_sessions(key, earliest_end, latest_start), [])

    def fetch_session(self, key: Any, session_start: int, session_end: int) -> Any:
        return self._read_key(key, lambda s: s.fetch_session(key, session_start, session_end), None)

    def all(self) -> list[tuple[Windowed, Any]]:
        return sorted(self._read_all(lambda s: s.all()), key=lambda row: row[0].window.end)


View = ReadOnlyStore | ReadOnlyWindowStore | ReadOnlySessionStore


def read_only_store(spec: StoreSpec, active_tasks: Callable[[], Iterable[StreamTask]], partitions: Callable[[], int],
                    standby_tasks: Callable[[], Iterable[StreamTask]] | None = None) -> View:  # fmt: skip
    """The read-only view of the store ``spec`` describes (``standby_tasks``: also answer from replicas)."""
    if isinstance(spec, WindowStoreSpec):
        return ReadOnlyWindowStore(spec.name, active_tasks, partitions, standby_tasks)
    if isinstance(spec, SessionStoreSpec):
        return ReadOnlySessionStore(spec.name, active_tasks, partitions, standby_tasks)
    return ReadOnlyStore(spec.name, active_tasks, partitions, standby_tasks)
