"""Interactive queries: a read-only view of one state store over the tasks on this instance
(``ReadOnlyStore``), and where every key and store of the application lives (``QueryMetadata``, from the
newest assignment: which instance runs each task, which hold standbys, at which ``application_server``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from streams.errors import InvalidStateStoreError
from streams.group_leader import Assignment
from streams.log.partitioner import partition_for_key
from streams.metadata import Metadata
from streams.serdes import bind_serializer
from streams.state.cache import CachingKeyValueStore
from streams.task import StreamTask
from streams.topology import Topology

__all__ = ["HostInfo", "KeyQueryMetadata", "QueryMetadata", "ReadOnlyStore", "StreamsMetadata"]


@dataclass(frozen=True)
class HostInfo:
    """An instance of the application: its id and its ``application_server`` (None: it serves no queries)."""

    instance: str
    server: str | None


@dataclass(frozen=True)
class KeyQueryMetadata:
    """Where a key of a store lives: the instance running its task (``active``; None while no instance does,
    e.g. during a hand-over), the instances with a standby of it, its partition and task."""

    active: HostInfo | None
    standbys: list[HostInfo]
    partition: int
    task: str


@dataclass(frozen=True)
class StreamsMetadata:
    """One instance: its active and standby tasks and the stores they hold (Kafka Streams' ``StreamsMetadata``)."""

    host: HostInfo
    tasks: list[str] = field(default_factory=list)
    stores: list[str] = field(default_factory=list)
    standby_tasks: list[str] = field(default_factory=list)
    standby_stores: list[str] = field(default_factory=list)


class QueryMetadata:
    """Answers "who has this key / store" from the topology, the resolved ``metadata`` and ``assignment()``
    (asked on every call: assignments change)."""

    def __init__(self, topology: Topology, metadata: Callable[[], Metadata], assignment: Callable[[], Assignment]):
        self._topology = topology
        self._metadata = metadata
        self._assignment = assignment
        self._serializers: dict[str, Callable[[Any], bytes | None]] = {}

    def check_store(self, store: str) -> None:
        if store not in self._topology.stores:
            raise InvalidStateStoreError(f"no store named {store!r}; stores: {sorted(self._topology.stores)}")

    def key_serde(self, store: str) -> Any:
        self.check_store(store)
        spec = self._topology.stores[store]
        return spec.key if spec.key is not None else self._topology.default_key

    def key_bytes(self, store: str, key: Any) -> bytes:
        """``key`` serialized as the store serializes it (what its partition is computed from)."""
        ser = self._serializers.get(store)
        if ser is None:
            changelog = self._metadata().names.changelog(store)
            ser = self._serializers[store] = bind_serializer(self.key_serde(store), changelog, True)
        kb = ser(key)
        if kb is None:
            raise ValueError(f"store {store!r}: keys must not be None")
        return kb

    def partitions(self, store: str) -> int:
        self.check_store(store)
        return self._metadata().store_partitions(store)

    def task_of(self, store: str, partition: int) -> str:
        return f"{self._metadata().store_sub[store]}_{partition}"

    def partition_of(self, store: str, key: Any) -> int:
        return partition_for_key(self.key_bytes(store, key), self.partitions(store))

    def for_partition(self, store: str, partition: int) -> KeyQueryMetadata:
        task = self.task_of(store, partition)
        active: HostInfo | None = None
        standbys: list[HostInfo] = []
        for instance, member in sorted(self._assignment().members.items()):
            if task in member.active:
                active = HostInfo(instance, member.server)
            elif task in member.standby:
                standbys.append(HostInfo(instance, member.server))
        return KeyQueryMetadata(active, standbys, partition, task)

    def for_key(self, store: str, key: Any) -> KeyQueryMetadata:
        return self.for_partition(store, self.partition_of(store, key))

    def all_instances(self) -> list[StreamsMetadata]:
        md = self._metadata()
        stores_of: dict[int, list[str]] = {}
        for store, sub in md.store_sub.items():
            stores_of.setdefault(sub, []).append(store)

        def stores(tasks: list[str]) -> list[str]:
            return sorted({s for t in tasks for s in stores_of.get(int(t.partition("_")[0]), [])})

        return [StreamsMetadata(HostInfo(instance, m.server), list(m.active), stores(m.active), list(m.standby),
                                stores(m.standby))
                for instance, m in sorted(self._assignment().members.items())]  # fmt: skip

    def for_store(self, store: str) -> list[StreamsMetadata]:
        """The instances with an active task or a standby of ``store``."""
        self.check_store(store)
        return [m for m in self.all_instances() if store in m.stores or store in m.standby_stores]


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
        """Partition -> store, and the partitions served by replicas. Tasks still restoring are not among them."""
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

    def partition_stores(self, partitions: Iterable[int]) -> list[tuple[int, CachingKeyValueStore, bool]]:
        """(partition, store, stale) for each of ``partitions``; raises ``InvalidStateStoreError`` naming those
        not served here (their task runs elsewhere, or is restoring)."""
        stores, stale = self._stores()
        wanted = sorted(set(partitions))
        missing = [p for p in wanted if p not in stores]
        if missing:
            raise InvalidStateStoreError(
                f"partitions {missing} of store {self.name!r} are not available on this instance "
                "(their task runs elsewhere or is restoring)"
            )
        return [(p, stores[p], p in stale) for p in wanted]

    def approximate_num_entries(self) -> int:
        return sum(s.approximate_num_entries() for s in self._stores()[0].values())
