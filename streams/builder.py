"""``StreamsBuilder``: the entry point of the DSL; ``build()`` returns the ``Topology``."""

from __future__ import annotations

from typing import Any

from streams.dsl.api import KStream, KTable
from streams.global_table import GlobalKTable
from streams.record_serdes import JSON, serde_from
from streams.table_ops import TableOptions, TableSourceProcessor
from streams.topology import GlobalTableSpec, SinkNode, SourceNode, StoreSpec, Topology, VersionedStoreSpec

__all__ = ["StreamsBuilder"]


class StreamsBuilder:
    """Builds a topology. ``default_key`` / ``default_value`` are the serdes used wherever none is
    given or inherited (JSON unless told otherwise)."""

    def __init__(self, *, default_key: Any = JSON, default_value: Any = JSON) -> None:
        self.topology = Topology(default_key=default_key, default_value=default_value)
        self._index = 0
        self.relaxed_null_key_joins: set[str] = set()
        self._repartition_sinks: list[str] = []

    def new_name(self, prefix: str) -> str:
        name = f"{prefix}-{self._index:010d}"
        self._index += 1
        return name

    def stream(
        self,
        topics: str | list[str],
        *,
        key: Any = None,
        value: Any = None,
        name: str | None = None,
        timestamp_extractor: Any = None,
    ) -> KStream:
        """Records of ``topics`` (a name or a list), read with these serdes. ``timestamp_extractor``:
        ``(record, partition_time) -> ms`` gives each record's event time (``streams.extractors``)."""
        names = [topics] if isinstance(topics, str) else list(topics)
        key, value = serde_from(key, "key serde of stream()"), serde_from(value, "value serde of stream()")
        node = self.source(names, key=key, value=value, name=name, timestamp_extractor=timestamp_extractor)
        return KStream(self, node, key, value, False)

    def source(
        self, topics: list[str], *, key: Any, value: Any, name: str | None = None, timestamp_extractor: Any = None
    ) -> str:
        """Add a source node reading ``topics`` with these serdes; its name."""
        node = name or self.new_name("KSTREAM-SOURCE")
        self.topology.add_source(node, *topics, key=key, value=value, timestamp_extractor=timestamp_extractor)
        return node

    def table(
        self,
        topic: str,
        *,
        key: Any = None,
        value: Any = None,
        store: str | StoreSpec | None = None,
        kind: str | None = None,
        cache: bool = True,
        timestamp_extractor: Any = None,
    ) -> KTable:
        """``topic`` as a table: the latest value per key, kept in a store (queryable by its name). With
        ``store=VersionedStoreSpec(...)`` the table is versioned (KIP-914): every update is kept as a version at
        its timestamp for the history retention, a stream joined with it looks it up as of the stream record's
        timestamp, and an out-of-order update does not become the table's value downstream."""
        key, value = serde_from(key, "key serde of table()"), serde_from(value, "value serde of table()")
        source = self.new_name("KSTREAM-SOURCE")
        self.topology.add_source(source, topic, key=key, value=value, timestamp_extractor=timestamp_extractor)
        if isinstance(store, StoreSpec):
            spec = store
            spec.key = spec.key or key
            spec.value = spec.value or value
        else:
            spec = StoreSpec(
                store or f"{topic}-STATE-STORE-{self._index:010d}", kind=kind, key=key, value=value, cache=cache
            )
        spec.timestamped = not isinstance(spec, VersionedStoreSpec)
        node = self.new_name("KTABLE-SOURCE")
        use_cache = spec.cache
        options = TableOptions()
        self.topology.add_processor(node, lambda: TableSourceProcessor(spec.name, use_cache, options), source)
        self.topology.add_state_store(spec, node)
        return KTable(self, node, spec.name, key, value, options)

    def global_table(
        self, topic: str, *, key: Any = None, value: Any = None, store: str | None = None, kind: str | None = None
    ) -> GlobalKTable:
        """``topic`` as a table that every instance holds in full (all partitions), for streams to join
        with a key selector (``KStream.join(global_table, key_selector, joiner)``). ``store``: its name
        (queryable with ``app.store(name)`` and over HTTP on every instance); ``kind``: ``"rocksdb"`` (with
        an offset checkpoint: a restart reads only the tail) or ``"memory"`` (read from the start at every
        start); None: the app's ``default_store``."""
        key = serde_from(key, "key serde of global_table()")
        value = serde_from(value, "value serde of global_table()")
        if store is not None and not isinstance(store, str):
            raise TypeError(f"global_table() store must be a name, got {store!r}")
        spec = GlobalTableSpec(store or f"{topic}-STATE-STORE-{self._index:010d}", topic, key, value, kind)
        self._index += 1
        self.topology.add_global_table(spec)
        return GlobalKTable(self, spec)

    def add_state_store(self, spec: StoreSpec) -> None:
        """Register a store for processors added with ``KStream.process(..., stores=[name])``."""
        self.topology.add_state_store(spec)

    def repartition(self, parent: str, topic: str, partitions: int | None, key: Any, value: Any) -> str:
        """Add a sink to and a source from the internal topic ``topic``; returns the source node."""
        self.topology.add_repartition_topic(topic, partitions)
        sink = self.new_name("KSTREAM-SINK")
        self.topology.add_sink(sink, topic, parent, key=key, value=value, internal=True)
        self._repartition_sinks.append(sink)
        source = self.new_name("KSTREAM-SOURCE")
        self.topology.add_source(source, topic, key=key, value=value, internal=True)
        return source

    def build(self) -> Topology:
        self.topology.sub_topologies()  # validate now: unconnected stores or nodes are build errors
        self._drop_null_keys_at_repartitions()
        return self.topology

    def _drop_null_keys_at_repartitions(self) -> None:
        """Kafka Streams' DSL (3.7+, KIP-962) drops records with a null key before a repartition topic unless a
        join that keeps them (left/outer) is downstream of it: only such a join can do anything with them."""
        nodes = self.topology.nodes
        readers: dict[str, list[str]] = {}
        for node in nodes.values():
            if isinstance(node, SourceNode) and node.internal:
                for topic in node.topics:
                    readers.setdefault(topic, []).append(node.name)
        reaches: dict[str, bool] = {}

        def reaches_relaxed_join(name: str) -> bool:
            if name in reaches:
                return reaches[name]
            reaches[name] = False  # a cycle (through topics) adds nothing
            node = nodes[name]
            if isinstance(node, SinkNode):  # on through the topic, if it is one of the app's internal topics
                nexts = readers.get(node.topic, []) if node.internal else []
            else:
                nexts = node.children
            found = name in self.relaxed_null_key_joins or any(reaches_relaxed_join(n) for n in nexts)
            reaches[name] = found
            return found

        for sink in self._repartition_sinks:
            node = nodes[sink]
            assert isinstance(node, SinkNode)
            node.drop_null_keys = not reaches_relaxed_join(sink)
