"""Interactive queries: read-only views of one state store over the tasks on this instance (``read_only_store``:
``ReadOnlyStore``, ``ReadOnlyWindowStore`` or ``ReadOnlySessionStore``; a read that meets a store mid-change is
retried), and where every key and store of the application lives (``QueryMetadata``, from the
newest assignment: which instance runs each task, which hold standbys, at which ``application_server``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from streams.errors import InvalidStateStoreError
from streams.global_table import ReadOnlyGlobalStore
from streams.group_leader import Assignment
from streams.log.partitioner import partition_for_key
from streams.metadata import Metadata
from streams.record_serdes import bind_serializer
from streams.state.versioned import VersionedRecord
from streams.task import StreamTask
from streams.topology import SessionStoreSpec, StoreSpec, Topology, VersionedStoreSpec, WindowStoreSpec
from streams.windows import Windowed

__all__ = [
    "HostInfo",
    "KeyQueryMetadata",
    "QueryMetadata",
    "ReadOnlySessionStore",
    "ReadOnlyStore",
    "ReadOnlyVersionedStore",
    "ReadOnlyWindowStore",
    "StreamsMetadata",
    "read_only_store",
    "retrying",
]

T = TypeVar("T")
_RETRIES = 5


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
        self._hosts_cache: tuple[Assignment, dict[str, tuple[HostInfo | None, tuple[HostInfo, ...]]]] | None = None

    def check_store(self, store: str) -> None:
        if store not in self._topology.stores and store not in self._topology.global_tables:
            names = sorted([*self._topology.stores, *self._topology.global_tables])
            raise InvalidStateStoreError(f"no store named {store!r}; stores: {names}")

    def is_global(self, store: str) -> bool:
        """Whether ``store`` is a global table's: every instance holds all of it and answers it locally."""
        return store in self._topology.global_tables

    def key_serde(self, store: str) -> Any:
        self.check_store(store)
        spec = self._topology.stores.get(store) or self._topology.global_tables[store]
        return self._topology.key_serde(spec.key)

    def key_bytes(self, store: str, key: Any) -> bytes:
        """``key`` serialized as the store serializes it (what its partition is computed from)."""
        ser = self._serializers.get(store)
        if ser is None:
            glob = self._topology.global_tables.get(store)  # bound to its topic, as its store is
            topic = glob.topic if glob is not None else self._metadata().names.changelog(store)
            ser = self._serializers[store] = bind_serializer(self.key_serde(store), topic, True)
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
        active, standbys = self._hosts_of_tasks().get(task, (None, ()))
        return KeyQueryMetadata(active, list(standbys), partition, task)

    def _hosts_of_tasks(self) -> dict[str, tuple[HostInfo | None, tuple[HostInfo, ...]]]:
        """Task -> (active host, standby hosts) of the newest assignment, worked out once per assignment (a
        routed lookup asks on every request)."""
        assignment = self._assignment()
        cached = self._hosts_cache
        if cached is not None and cached[0] is assignment:
            return cached[1]
        active: dict[str, HostInfo] = {}
        standbys: dict[str, list[HostInfo]] = {}
        for instance, member in sorted(assignment.members.items()):
            host = HostInfo(instance, member.server)
            for task in member.active:
                active[task] = host
            for task in member.standby:
                if task not in member.active:
                    standbys.setdefault(task, []).append(host)
        hosts = {task: (active.get(task), tuple(standbys.get(task, ()))) for task in active.keys() | standbys.keys()}
        self._hosts_cache = (assignment, hosts)
        return hosts

    def for_key(self, store: str, key: Any, local: HostInfo | None = None) -> KeyQueryMetadata:
        """Where ``key`` of ``store`` lives. A global store's key lives on every instance: the answer is the
        ``local`` instance, partition -1 and no task, as Kafka Streams answers ``queryMetadataForKey`` for a
        global store."""
        if self.is_global(store):
            if local is None:
                raise InvalidStateStoreError(f"store {store!r} is a global table's: every instance answers it")
            self.key_bytes(store, key)  # a key the store cannot serialize is still an error
            return KeyQueryMetadata(local, [], -1, "")
        return self.for_partition(store, self.partition_of(store, key))

    def all_instances(self) -> list[StreamsMetadata]:
        md = self._metadata()
        stores_of: dict[int, list[str]] = {}
        for store, sub in md.store_sub.items():
            stores_of.setdefault(sub, []).append(store)

        def stores(tasks: list[str]) -> list[str]:
            return sorted({s for t in tasks for s in stores_of.get(int(t.partition("_")[0]), [])})

        global_stores = sorted(self._topology.global_tables)  # held in full by every instance, as in Kafka Streams
        return [
            StreamsMetadata(
                HostInfo(instance, m.server),
                list(m.active),
                sorted({*stores(m.active), *global_stores}),
                list(m.standby),
                stores(m.standby),
            )
            for instance, m in sorted(self._assignment().members.items())
        ]

    def for_store(self, store: str) -> list[StreamsMetadata]:
        """The instances with an active task or a standby of ``store`` (all of them for a global store)."""
        self.check_store(store)
        return [m for m in self.all_instances() if store in m.stores or store in m.standby_stores]


def retrying(read: Callable[[], T]) -> T:
    """``read()``, again if it met the store mid-change (a read from another thread than the task's)."""
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
        """Partition -> store, and the partitions served by replicas. Tasks still restoring are not among them."""
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
            return retrying(lambda: read(store))
        for other in stores.values():
            value = retrying(lambda other=other: read(other))  # type: ignore[misc]
            if value != empty:
                return value
        raise InvalidStateStoreError(
            f"key {key!r} of store {self.name!r} is in partition {partition}, whose task runs on another instance"
        )

    def _read_all(self, read: Callable[[Any], list[T]]) -> list[T]:
        out: list[T] = []
        for store in self._stores()[0].values():
            out.extend(retrying(lambda store=store: read(store)))  # type: ignore[misc]
        return out

    def is_stale(self, key: Any) -> bool:
        """Whether reads of ``key`` are answered by a replica (possibly behind) rather than by the active task."""
        stores, stale = self._stores()
        return bool(stores) and self._partition(stores, key) in stale

    def partition_stores(self, partitions: Iterable[int]) -> list[tuple[int, Any, bool]]:
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


class ReadOnlyStore(_View):
    """A key-value store."""

    def get(self, key: Any) -> Any:
        return self._read_key(key, lambda s: s.peek(key), None)

    def all(self) -> list[tuple[Any, Any]]:
        return self._read_all(lambda s: list(s.all()))


class ReadOnlyVersionedStore(_View):
    """A versioned key-value store (Kafka Streams' ``VersionedKeyValueStore`` read side)."""

    def get(self, key: Any, as_of: int | None = None) -> VersionedRecord | None:
        """The latest version of ``key`` (``as_of`` None) or the one valid at ``as_of`` (epoch ms)."""
        return self._read_key(key, lambda s: s.get(key, as_of), None)

    def get_versions(
        self, key: Any, time_from: int | None = None, time_to: int | None = None, *, ascending: bool = False
    ) -> list[VersionedRecord]:
        """The versions of ``key`` valid at some time in ``[time_from, time_to]``, newest first."""
        return self._read_key(key, lambda s: s.get_versions(key, time_from, time_to, ascending=ascending), [])

    def all(self) -> list[tuple[Any, Any]]:
        """Every key's latest value."""
        return self._read_all(lambda s: s.all())


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


View = ReadOnlyStore | ReadOnlyVersionedStore | ReadOnlyWindowStore | ReadOnlySessionStore | ReadOnlyGlobalStore


def read_only_store(
    spec: StoreSpec,
    active_tasks: Callable[[], Iterable[StreamTask]],
    partitions: Callable[[], int],
    standby_tasks: Callable[[], Iterable[StreamTask]] | None = None,
) -> View:
    """The read-only view of the store ``spec`` describes (``standby_tasks``: also answer from replicas)."""
    if isinstance(spec, WindowStoreSpec):
        return ReadOnlyWindowStore(spec.name, active_tasks, partitions, standby_tasks)
    if isinstance(spec, SessionStoreSpec):
        return ReadOnlySessionStore(spec.name, active_tasks, partitions, standby_tasks)
    if isinstance(spec, VersionedStoreSpec):
        return ReadOnlyVersionedStore(spec.name, active_tasks, partitions, standby_tasks)
    return ReadOnlyStore(spec.name, active_tasks, partitions, standby_tasks)
