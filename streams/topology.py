"""The topology: a DAG of source, processor and sink nodes plus the state stores they use, split into
sub-topologies (parts connected only through topics). ``StreamsBuilder`` builds one; the processor API
can also build one by hand with ``add_source`` / ``add_processor`` / ``add_sink`` / ``add_state_store``.

Internal topics (repartition topics, changelogs) are named without the application id, which
``streams.metadata.TopicNames`` adds: ``<application_id>-<name>-repartition`` and
``<application_id>-<store>-changelog``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from streams.errors import TopologyError
from streams.extractors import TimestampExtractor, extractor_from
from streams.processor import Processor
from streams.record_serdes import JSON, serde_from
from streams.topology_render import NodeDescription, SubTopologyDescription, TopologyDescription, kafka_text
from streams.windows import to_millis

__all__ = [
    "GlobalTableSpec",
    "JoinBufferSpec",
    "ProcessorNode",
    "SessionStoreSpec",
    "SinkNode",
    "SourceNode",
    "StoreSpec",
    "SubTopology",
    "SuppressionBufferSpec",
    "Topology",
    "VersionedStoreSpec",
    "WindowStoreSpec",
    "internal_topic_name",
]

_NAME = re.compile(r"^[A-Za-z0-9._-]{1,200}$")
STORE_KINDS = ("rocksdb", "memory")

Partitioner = Callable[[Any, Any, int], int]


def internal_topic_name(name: str) -> str:
    """An internal topic's name without the application id: a repartition topic's with ``-repartition``;
    a foreign-key join's subscription and response topics (named ``...-topic``) keep their own."""
    return name if name.endswith("-topic") else f"{name}-repartition"


def _check_name(what: str, name: str) -> None:
    if not isinstance(name, str) or not _NAME.match(name):
        raise TopologyError(f"{what} name {name!r} is invalid: use 1-200 characters from [A-Za-z0-9._-]")


@dataclass
class StoreSpec:
    """A key-value store: its name, backend (``"rocksdb"``, ``"memory"``, or None for the app's default),
    serdes (None: the topology's defaults), whether it has a changelog, and whether updates are cached
    (merged per key and forwarded downstream at commit) or forwarded at once."""

    name: str
    kind: str | None = None
    key: Any = None
    value: Any = None
    logged: bool = True
    cache: bool = True
    #: Keep each value's timestamp with it (the DSL's aggregations and tables do, for their results' timestamps).
    timestamped: bool = False

    def __post_init__(self) -> None:
        _check_name("store", self.name)
        if self.kind is not None and self.kind not in STORE_KINDS:
            raise TopologyError(f"store {self.name!r}: kind must be one of {STORE_KINDS}, got {self.kind!r}")
        self.key = serde_from(self.key, f"key serde of store {self.name!r}")
        self.value = serde_from(self.value, f"value serde of store {self.name!r}")

    def changelog_config(self) -> dict[str, str]:
        """The changelog topic's settings: compacted (the latest value per key is the state)."""
        return {"cleanup.policy": "compact"}


_CHANGELOG_EXTRA_RETENTION_MS = 24 * 60 * 60 * 1000


class _ExpiringChangelog:
    """The changelog of a store whose data expires (windows, sessions): compacted, and its records deleted
    after the store's ``retention_ms`` plus a day, as Kafka Streams keeps a windowed changelog's."""

    retention_ms: int

    def changelog_config(self) -> dict[str, str]:
        return {
            "cleanup.policy": "compact,delete",
            "retention.ms": str(self.retention_ms + _CHANGELOG_EXTRA_RETENTION_MS),
        }


def _check_retention(name: str, retention_ms: int, at_least: int, why: str) -> None:
    if not isinstance(retention_ms, int) or retention_ms < at_least:
        raise TopologyError(
            f"the retention period of store {name!r} must be no smaller than {why} "
            f"({at_least} ms), got {retention_ms} ms"
        )


@dataclass
class WindowStoreSpec(_ExpiringChangelog, StoreSpec):
    """A window store: values per (key, window start), kept ``retention_ms`` behind the newest window
    start. ``retain_duplicates`` keeps every put (a stream-stream join's buffer); such a store does not
    cache. Its changelog is compacted and deleted after ``retention_ms`` plus a day."""

    window_size_ms: int = 0
    retention_ms: int = 0
    retain_duplicates: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        if not isinstance(self.window_size_ms, int) or self.window_size_ms < 0:
            raise TopologyError(f"window store {self.name!r}: window_size_ms must be >= 0, got {self.window_size_ms!r}")
        _check_retention(self.name, self.retention_ms, self.window_size_ms, "its window size")
        if self.retain_duplicates:
            self.cache = False


@dataclass
class SessionStoreSpec(_ExpiringChangelog, StoreSpec):
    """A session store: aggregates per (key, session), kept ``retention_ms`` behind the newest session end."""

    retention_ms: int = 0

    def __post_init__(self) -> None:
        super().__post_init__()
        _check_retention(self.name, self.retention_ms, 0, "zero")


@dataclass
class VersionedStoreSpec(StoreSpec):
    """A versioned key-value store (Kafka Streams' ``Stores.persistentVersionedKeyValueStore``, KIP-889): every
    version of a key within ``history_retention`` (a ``timedelta`` or ms) behind the largest timestamp put,
    readable as of a time (``streams/state/versioned.py``). Not cached: each put is logged. Its changelog is
    compacted no sooner than the history retention plus a day after a record is written, as Kafka's."""

    history_retention: Any = None
    #: The history's segment size in ms (None: Kafka's default for the retention).
    segment_interval_ms: int | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.history_retention is None:
            raise TopologyError(f"versioned store {self.name!r}: history_retention is required")
        try:
            self.history_retention = to_millis(self.history_retention, f"history_retention of store {self.name!r}")
        except (TypeError, ValueError) as exc:
            raise TopologyError(str(exc)) from None
        if self.segment_interval_ms is not None and self.segment_interval_ms <= 0:
            raise TopologyError(
                f"versioned store {self.name!r}: segment_interval_ms must be > 0, got {self.segment_interval_ms}"
            )
        self.cache = False
        self.timestamped = False

    @property
    def history_retention_ms(self) -> int:
        return int(self.history_retention)

    def changelog_config(self) -> dict[str, str]:
        lag = self.history_retention_ms + _CHANGELOG_EXTRA_RETENTION_MS
        return {"cleanup.policy": "compact", "min.compaction.lag.ms": str(lag)}


@dataclass
class SuppressionBufferSpec(StoreSpec):
    """The buffer of a ``KTable.suppress``: in memory, changelogged (compacted). ``count_bytes``: track
    its size in bytes (for a ``max_bytes`` limit)."""

    count_bytes: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        self.kind = "memory"
        self.cache = False


@dataclass
class JoinBufferSpec(StoreSpec):
    """The buffer of a stream-table join with a grace period (KIP-923): in memory, changelogged (compacted);
    stream records wait in it in timestamp order (``streams/state/join_buffer.py``)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        self.kind = "memory"
        self.cache = False


@dataclass
class GlobalTableSpec:
    """A global table: ``topic`` read in full by every instance into the store ``store`` (no changelog, no
    tasks; ``streams/global_table.py``), on ``kind`` (``"rocksdb"``, ``"memory"``, None: the app's default)."""

    store: str
    topic: str
    key: Any = None
    value: Any = None
    kind: str | None = None


@dataclass
class _Node:
    name: str
    order: int
    parents: list[str]
    children: list[str] = field(default_factory=list)


@dataclass
class SourceNode(_Node):
    topics: list[str] = field(default_factory=list)
    key: Any = None
    value: Any = None
    internal: bool = False  # topics are repartition topic names, to be prefixed by the application id
    timestamp_extractor: TimestampExtractor | None = None  # None: the application's default


@dataclass
class ProcessorNode(_Node):
    supplier: Callable[[], Processor] | None = None
    stores: list[str] = field(default_factory=list)


@dataclass
class SinkNode(_Node):
    topic: str = ""
    key: Any = None
    value: Any = None
    partitioner: Partitioner | None = None
    internal: bool = False
    #: A repartition sink with no join downstream that keeps null-key records (KIP-962) drops them, as Kafka
    #: Streams' DSL does (set by ``StreamsBuilder.build``).
    drop_null_keys: bool = False


@dataclass
class SubTopology:
    id: int
    nodes: list[_Node]
    stores: list[str]

    @property
    def sources(self) -> list[SourceNode]:
        return [n for n in self.nodes if isinstance(n, SourceNode)]

    @property
    def sinks(self) -> list[SinkNode]:
        return [n for n in self.nodes if isinstance(n, SinkNode)]


@dataclass
class RepartitionTopic:
    name: str
    partitions: int | None = None
    #: As many partitions as the other inputs of the sub-topology reading it (a foreign-key join's topics),
    #: rather than as the inputs of the one writing it.
    sized_by_reader: bool = False


class Topology:
    """A topology under construction (processor API) or built by ``StreamsBuilder.build()``."""

    def __init__(self, *, default_key: Any = JSON, default_value: Any = JSON) -> None:
        self.default_key = serde_from(default_key, "default key serde")
        self.default_value = serde_from(default_value, "default value serde")
        self.nodes: dict[str, _Node] = {}
        self.stores: dict[str, StoreSpec] = {}
        self.repartition_topics: dict[str, RepartitionTopic] = {}
        self.global_tables: dict[str, GlobalTableSpec] = {}  # by store name
        self._source_topics: dict[tuple[str, bool], str] = {}

    def key_serde(self, serde: Any) -> Any:
        """The key serde of a node, store or table whose own is ``serde``: it, or the default where None."""
        return serde if serde is not None else self.default_key

    def value_serde(self, serde: Any) -> Any:
        """The value serde of a node, store or table whose own is ``serde``: it, or the default where None."""
        return serde if serde is not None else self.default_value

    # -- construction ----------------------------------------------------------------------------------

    def _add(self, node: _Node) -> None:
        _check_name("node", node.name)
        if node.name in self.nodes:
            raise TopologyError(f"a node named {node.name!r} already exists in this topology")
        for parent in node.parents:
            p = self.nodes.get(parent)
            if p is None:
                raise TopologyError(f"node {node.name!r}: parent {parent!r} does not exist (add it first)")
            if isinstance(p, SinkNode):
                raise TopologyError(f"node {node.name!r}: parent {parent!r} is a sink, which has no children")
            p.children.append(node.name)
        self.nodes[node.name] = node

    def add_source(
        self,
        name: str,
        *topics: str,
        key: Any = None,
        value: Any = None,
        internal: bool = False,
        timestamp_extractor: Any = None,
    ) -> Topology:
        """Read ``topics``; ``timestamp_extractor``: ``(record, partition_time) -> ms`` for their records
        (None: the application's default, else the log timestamp)."""
        if not topics:
            raise TopologyError(f"source {name!r} needs at least one topic")
        for topic in topics:
            _check_name("topic", topic)
            other = self._source_topics.get((topic, internal))
            if other is not None:
                raise TopologyError(f"topic {topic!r} is already read by source {other!r}; a topic has one source")
            self._source_topics[(topic, internal)] = name
        key = serde_from(key, f"key serde of source {name!r}")
        value = serde_from(value, f"value serde of source {name!r}")
        extractor = extractor_from(timestamp_extractor, f"timestamp_extractor of source {name!r}")
        self._add(
            SourceNode(
                name,
                len(self.nodes),
                [],
                topics=list(topics),
                key=key,
                value=value,
                internal=internal,
                timestamp_extractor=extractor,
            )
        )
        return self

    def add_global_table(self, spec: GlobalTableSpec) -> Topology:
        """Read ``spec.topic`` into the global store ``spec.store`` on every instance."""
        _check_name("store", spec.store)
        _check_name("topic", spec.topic)
        if spec.store in self.stores or spec.store in self.global_tables:
            raise TopologyError(f"a store named {spec.store!r} already exists in this topology")
        other = self._source_topics.get((spec.topic, False))
        if other is not None:
            raise TopologyError(f"topic {spec.topic!r} is already read by source {other!r}; a topic has one source")
        if spec.kind is not None and spec.kind not in STORE_KINDS:
            raise TopologyError(f"global table {spec.store!r}: kind must be one of {STORE_KINDS}, got {spec.kind!r}")
        self._source_topics[(spec.topic, False)] = f"global table {spec.store}"
        spec.key = serde_from(spec.key, f"key serde of global table {spec.store!r}")
        spec.value = serde_from(spec.value, f"value serde of global table {spec.store!r}")
        self.global_tables[spec.store] = spec
        return self

    def add_processor(self, name: str, supplier: Callable[[], Processor], *parents: str) -> Topology:
        if not callable(supplier):
            raise TopologyError(f"processor {name!r}: supplier must be callable and return a Processor")
        if not parents:
            raise TopologyError(f"processor {name!r} needs at least one parent")
        self._add(ProcessorNode(name, len(self.nodes), list(parents), supplier=supplier))
        return self

    def add_sink(
        self,
        name: str,
        topic: str,
        *parents: str,
        key: Any = None,
        value: Any = None,
        partitioner: Partitioner | None = None,
        internal: bool = False,
    ) -> Topology:
        _check_name("topic", topic)
        if not parents:
            raise TopologyError(f"sink {name!r} needs at least one parent")
        self._add(
            SinkNode(
                name,
                len(self.nodes),
                list(parents),
                topic=topic,
                key=serde_from(key, f"key serde of sink {name!r}"),
                value=serde_from(value, f"value serde of sink {name!r}"),
                partitioner=partitioner,
                internal=internal,
            )
        )
        return self

    def add_state_store(self, spec: StoreSpec, *processor_names: str) -> Topology:
        if spec.name in self.stores:
            raise TopologyError(f"a store named {spec.name!r} already exists in this topology")
        self.stores[spec.name] = spec
        self.connect_processor_and_state_stores(*processor_names, stores=[spec.name])
        return self

    def connect_processor_and_state_stores(self, *processor_names: str, stores: list[str]) -> Topology:
        for store in stores:
            if store not in self.stores:
                raise TopologyError(f"store {store!r} does not exist; add it with add_state_store first")
        for pname in processor_names:
            node = self.nodes.get(pname)
            if not isinstance(node, ProcessorNode):
                raise TopologyError(f"cannot connect stores to {pname!r}: no processor of that name")
            for store in stores:
                if store not in node.stores:
                    node.stores.append(store)
        return self

    def add_repartition_topic(self, name: str, partitions: int | None = None, *, sized_by_reader: bool = False) -> None:
        _check_name("repartition topic", name)
        if name in self.repartition_topics:
            raise TopologyError(
                f"repartition topic {name!r} already exists; give the second group_by/repartition its own name"
            )
        if partitions is not None and (not isinstance(partitions, int) or partitions < 1):
            raise TopologyError(f"repartition topic {name!r}: partitions must be an integer >= 1")
        self.repartition_topics[name] = RepartitionTopic(name, partitions, sized_by_reader)

    # -- analysis --------------------------------------------------------------------------------------

    def sub_topologies(self) -> list[SubTopology]:
        """Connected parts (through parent/child links and shared stores), numbered by first node."""
        parent = {name: name for name in self.nodes}

        def find(x: str) -> str:
            while parent[x] != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x

        def union(a: str, b: str) -> None:
            ra, rb = find(a), find(b)
            if ra != rb:
                parent[rb] = ra

        store_users: dict[str, str] = {}
        for node in self.nodes.values():
            for p in node.parents:
                union(node.name, p)
            if isinstance(node, ProcessorNode):
                for store in node.stores:
                    if store in store_users:
                        union(node.name, store_users[store])
                    else:
                        store_users[store] = node.name
        groups: dict[str, list[_Node]] = {}
        for node in sorted(self.nodes.values(), key=lambda n: n.order):
            groups.setdefault(find(node.name), []).append(node)
        result = []
        for i, nodes in enumerate(sorted(groups.values(), key=lambda ns: ns[0].order)):
            if not any(isinstance(n, SourceNode) for n in nodes):
                raise TopologyError(f"nodes {[n.name for n in nodes]} are not connected to any source")
            stores = []
            for n in nodes:
                if isinstance(n, ProcessorNode):
                    stores += [s for s in n.stores if s not in stores]
            result.append(SubTopology(i, nodes, stores))
        unused = set(self.stores) - set(store_users)
        if unused:
            raise TopologyError(f"stores {sorted(unused)} are not connected to any processor")
        return result

    def describe(self) -> str:
        """Sub-topologies with their sources, processors, sinks and stores, in Kafka Streams' ``describe()``
        format (``streams/topology_render.py`` also draws them as Mermaid or Graphviz diagrams)."""
        return kafka_text(self.description())

    def description(self) -> TopologyDescription:
        """The sub-topologies and their nodes as ``describe()`` and the diagrams show them."""
        return _description(self)

    def __str__(self) -> str:
        return self.describe()


def _sub_tree_sizes(children: dict[str, list[str]]) -> dict[str, int]:
    """Each node's size as Kafka counts it: one plus its children's sizes (paths, in a diamond)."""
    sizes: dict[str, int] = {}

    def size(name: str) -> int:
        if name not in sizes:
            sizes[name] = 1 + sum(size(child) for child in children[name])
        return sizes[name]

    for name in children:
        size(name)
    return sizes


def _description(topology: Topology) -> TopologyDescription:
    """The topology's sub-topologies and nodes in Kafka Streams' order (``streams/topology_render.py`` says how)."""
    subs: list[SubTopologyDescription] = []
    for sub in topology.sub_topologies():
        members = {node.name: node for node in sub.nodes}
        sizes = _sub_tree_sizes({name: node.children for name, node in members.items()})

        def ordered(names: Iterable[str], sizes: dict[str, int] = sizes) -> tuple[str, ...]:
            return tuple(sorted(names, key=lambda n: (-sizes[n], n)))

        def linked(names: list[str], sizes: dict[str, int] = sizes) -> tuple[str, ...]:
            return tuple(sorted(names, key=sizes.__getitem__, reverse=True))  # stable: ties stay in the order added

        described: list[NodeDescription] = []
        for name in ordered(members):
            node = members[name]
            successors, predecessors = linked(node.children), linked(node.parents)
            if isinstance(node, SourceNode):
                topics = tuple(internal_topic_name(t) if node.internal else t for t in node.topics)
                described.append(NodeDescription("source", name, topics, node.internal, successors=successors))
            elif isinstance(node, SinkNode):
                topic = internal_topic_name(node.topic) if node.internal else node.topic
                described.append(NodeDescription("sink", name, (topic,), node.internal, predecessors=predecessors))
            else:
                assert isinstance(node, ProcessorNode)
                described.append(
                    NodeDescription(
                        "processor",
                        name,
                        stores=tuple(node.stores),
                        successors=successors,
                        predecessors=predecessors,
                    )
                )
        subs.append(SubTopologyDescription(sub.id, tuple(described)))
    next_id = len(subs)
    for spec in topology.global_tables.values():
        source, processor = f"{spec.store}-source", f"{spec.store}-processor"
        nodes = (
            NodeDescription("source", source, (spec.topic,), successors=(processor,)),
            NodeDescription("processor", processor, stores=(spec.store,), predecessors=(source,)),
        )
        subs.append(SubTopologyDescription(next_id, nodes, global_store=True))
        next_id += 1
    return TopologyDescription(tuple(subs))
