"""The DSL: ``KStream`` (a record stream), ``KTable`` (latest value per key) and ``KGroupedStream``.

Serdes follow the data: an operation that keeps keys and values as they are (filter, peek, branch,
merge, group_by_key) keeps the serdes; one that computes new ones (map, map_values, ...) drops them, and
the topology's defaults (JSON) apply unless the next sink or store names one. A key-changing operation
(map, flat_map, select_key, group_by) marks the stream so that the next stateful operation reads it
through a repartition topic ``<application_id>-<name>-repartition``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from streams.errors import TopologyError
from streams.ops import (
    AggregateProcessor,
    BranchProcessor,
    FilterProcessor,
    FlatMapProcessor,
    FlatMapValuesProcessor,
    MapProcessor,
    MapValuesProcessor,
    PassThroughProcessor,
    PeekProcessor,
    SelectKeyProcessor,
    TableFilterProcessor,
    TableMapValuesProcessor,
)
from streams.processor import Processor
from streams.serdes import INT, serde_from
from streams.topology import Partitioner, StoreSpec

if TYPE_CHECKING:
    from streams.builder import StreamsBuilder

__all__ = ["KGroupedStream", "KStream", "KTable"]


def _check_callable(what: str, fn: Any) -> None:
    if not callable(fn):
        raise TypeError(f"{what} needs a callable, got {fn!r}")


class KStream:
    """A stream of key-value records. Every method adds a node and returns a new stream."""

    def __init__(self, builder: StreamsBuilder, node: str, key: Any, value: Any, repartition_required: bool) -> None:
        self._builder = builder
        self.node = node
        self.key_serde = key
        self.value_serde = value
        self.repartition_required = repartition_required

    def _add(self, prefix: str, supplier: Callable[[], Processor], name: str | None, *, key: Any, value: Any,
             repartition: bool | None = None, parents: tuple[str, ...] = ()) -> KStream:  # fmt: skip
        node = name or self._builder.new_name(prefix)
        self._builder.topology.add_processor(node, supplier, *(parents or (self.node,)))
        rep = self.repartition_required if repartition is None else repartition
        return KStream(self._builder, node, key, value, rep)

    # -- stateless -------------------------------------------------------------------------------------

    def filter(self, predicate: Callable[[Any, Any], bool], *, name: str | None = None) -> KStream:
        """Keep records for which ``predicate(key, value)`` is true."""
        _check_callable("filter()", predicate)
        return self._add("KSTREAM-FILTER", lambda: FilterProcessor(predicate), name,
                         key=self.key_serde, value=self.value_serde)  # fmt: skip

    def filter_not(self, predicate: Callable[[Any, Any], bool], *, name: str | None = None) -> KStream:
        _check_callable("filter_not()", predicate)
        return self._add("KSTREAM-FILTER", lambda: FilterProcessor(predicate, negate=True), name,
                         key=self.key_serde, value=self.value_serde)  # fmt: skip

    def map(self, mapper: Callable[[Any, Any], tuple[Any, Any]], *, name: str | None = None) -> KStream:
        """``mapper(key, value) -> (new_key, new_value)``; marks the stream for repartitioning."""
        _check_callable("map()", mapper)
        return self._add("KSTREAM-MAP", lambda: MapProcessor(mapper), name, key=None, value=None, repartition=True)

    def map_values(self, mapper: Callable[[Any], Any], *, name: str | None = None) -> KStream:
        """``mapper(value) -> new_value``; keys stay, so no repartitioning."""
        _check_callable("map_values()", mapper)
        return self._add("KSTREAM-MAPVALUES", lambda: MapValuesProcessor(mapper), name,
                         key=self.key_serde, value=None)  # fmt: skip

    def flat_map(self, mapper: Callable[[Any, Any], Iterable[tuple[Any, Any]]], *, name: str | None = None) -> KStream:
        """``mapper(key, value) -> iterable of (key, value)``; marks the stream for repartitioning."""
        _check_callable("flat_map()", mapper)
        return self._add("KSTREAM-FLATMAP", lambda: FlatMapProcessor(mapper), name, key=None, value=None,
                         repartition=True)  # fmt: skip

    def flat_map_values(self, mapper: Callable[[Any], Iterable[Any]], *, name: str | None = None) -> KStream:
        """``mapper(value) -> iterable of values``, each with the record's key."""
        _check_callable("flat_map_values()", mapper)
        return self._add("KSTREAM-FLATMAPVALUES", lambda: FlatMapValuesProcessor(mapper), name,
                         key=self.key_serde, value=None)  # fmt: skip

    def peek(self, action: Callable[[Any, Any], None], *, name: str | None = None) -> KStream:
        """Call ``action(key, value)`` for each record and pass it on unchanged."""
        _check_callable("peek()", action)
        return self._add("KSTREAM-PEEK", lambda: PeekProcessor(action), name,
                         key=self.key_serde, value=self.value_serde)  # fmt: skip

    def foreach(self, action: Callable[[Any, Any], None], *, name: str | None = None) -> None:
        """Call ``action(key, value)`` for each record (a terminal operation)."""
        _check_callable("foreach()", action)
        self._add("KSTREAM-FOREACH", lambda: PeekProcessor(action), name, key=None, value=None)

    def select_key(self, selector: Callable[[Any, Any], Any], *, name: str | None = None) -> KStream:
        """New key ``selector(key, value)``, same value; marks the stream for repartitioning."""
        _check_callable("select_key()", selector)
        return self._add("KSTREAM-KEY-SELECT", lambda: SelectKeyProcessor(selector), name,
                         key=None, value=self.value_serde, repartition=True)  # fmt: skip

    def branch(self, *predicates: Callable[[Any, Any], bool], name: str | None = None) -> list[KStream]:
        """One stream per predicate; a record goes to the first branch whose predicate holds (or none)."""
        if not predicates:
            raise TopologyError("branch() needs at least one predicate")
        for p in predicates:
            _check_callable("branch()", p)
        preds = list(predicates)
        branch = self._add("KSTREAM-BRANCH", lambda: BranchProcessor(preds), name,
                           key=self.key_serde, value=self.value_serde)  # fmt: skip
        return [branch._add("KSTREAM-BRANCHCHILD", PassThroughProcessor, f"{name}-{i}" if name else None,
                            key=self.key_serde, value=self.value_serde) for i in range(len(preds))]  # fmt: skip

    def merge(self, other: KStream, *, name: str | None = None) -> KStream:
        """Records of both streams (in arrival order)."""
        if not isinstance(other, KStream) or other._builder is not self._builder:
            raise TopologyError("merge() needs a KStream from the same StreamsBuilder")
        same_key = self.key_serde if self.key_serde is other.key_serde else None
        same_value = self.value_serde if self.value_serde is other.value_serde else None
        return self._add("KSTREAM-MERGE", PassThroughProcessor, name, key=same_key, value=same_value,
                         repartition=self.repartition_required or other.repartition_required,
                         parents=(self.node, other.node))  # fmt: skip

    def process(self, supplier: Callable[[], Processor], *, stores: Iterable[str] = (), name: str | None = None,
                key: Any = None, value: Any = None) -> KStream:  # fmt: skip
        """Run a ``Processor`` (processor API) on the stream; what it forwards is the new stream."""
        _check_callable("process()", supplier)
        out = self._add("KSTREAM-PROCESSOR", supplier, name, key=serde_from(key), value=serde_from(value),
                        repartition=True)  # fmt: skip
        stores = list(stores)
        if stores:
            self._builder.topology.connect_processor_and_state_stores(out.node, stores=stores)
        return out

    # -- sinks and topics ------------------------------------------------------------------------------

    def to(self, topic: str, *, key: Any = None, value: Any = None, partitioner: Partitioner | None = None,
           name: str | None = None) -> None:  # fmt: skip
        """Write to ``topic`` (which must exist). ``partitioner(key, value, num_partitions) -> partition``
        overrides the default (murmur2 of the key bytes, as Kafka's Java client)."""
        node = name or self._builder.new_name("KSTREAM-SINK")
        key, value = serde_from(key) or self.key_serde, serde_from(value) or self.value_serde
        self._builder.topology.add_sink(node, topic, self.node, key=key, value=value, partitioner=partitioner)

    def through(self, topic: str, *, key: Any = None, value: Any = None,
                partitioner: Partitioner | None = None) -> KStream:  # fmt: skip
        """Write to a user-managed ``topic`` and continue from it (a new sub-topology)."""
        key, value = serde_from(key) or self.key_serde, serde_from(value) or self.value_serde
        self.to(topic, key=key, value=value, partitioner=partitioner)
        return self._builder.stream(topic, key=key, value=value)

    def repartition(self, *, name: str | None = None, partitions: int | None = None, key: Any = None,
                    value: Any = None) -> KStream:  # fmt: skip
        """Send the stream through an internal topic ``<application_id>-<name>-repartition`` so that
        records are partitioned by their current key."""
        key, value = serde_from(key) or self.key_serde, serde_from(value) or self.value_serde
        topic = name or self._builder.new_name("KSTREAM-REPARTITION")
        node = self._builder.repartition(self.node, topic, partitions, key, value)
        return KStream(self._builder, node, key, value, False)

    # -- grouping --------------------------------------------------------------------------------------

    def group_by_key(self, *, key: Any = None, value: Any = None, name: str | None = None) -> KGroupedStream:
        """Group by the current key (repartitioning first if the key was changed upstream)."""
        return KGroupedStream(self._builder, self.node, serde_from(key) or self.key_serde,
                              serde_from(value) or self.value_serde, self.repartition_required, name)  # fmt: skip

    def group_by(self, selector: Callable[[Any, Any], Any], *, key: Any = None, value: Any = None,
                 name: str | None = None) -> KGroupedStream:  # fmt: skip
        """Group by ``selector(key, value)``; always repartitions (the key is new)."""
        _check_callable("group_by()", selector)
        selected = self._add("KSTREAM-KEY-SELECT", lambda: SelectKeyProcessor(selector), None,
                             key=None, value=self.value_serde, repartition=True)  # fmt: skip
        return KGroupedStream(self._builder, selected.node, serde_from(key),
                              serde_from(value) or self.value_serde, True, name)  # fmt: skip


class KGroupedStream:
    """A stream grouped by key, ready for ``count``, ``reduce`` or ``aggregate`` into a table."""

    def __init__(self, builder: StreamsBuilder, node: str, key: Any, value: Any, repartition_required: bool,
                 name: str | None) -> None:  # fmt: skip
        self._builder = builder
        self.node = node
        self.key_serde = key
        self.value_serde = value
        self.repartition_required = repartition_required
        self.name = name

    def _store(self, store: str | StoreSpec | None, value: Any, cache: bool | None, kind: str | None) -> StoreSpec:
        if isinstance(store, StoreSpec):
            spec = store
            if spec.key is None:
                spec.key = self.key_serde
            if spec.value is None:
                spec.value = value
        else:
            if store is not None and not isinstance(store, str):
                raise TypeError(f"store must be a name or a StoreSpec, got {store!r}")
            name = store or self._builder.new_name("KSTREAM-AGGREGATE-STATE-STORE")
            spec = StoreSpec(name, kind=kind, key=self.key_serde, value=value)
        if cache is not None:
            spec.cache = cache
        return spec

    def _aggregate(self, prefix: str, initializer: Callable[[], Any] | None, adder: Callable[[Any, Any, Any], Any],
                   spec: StoreSpec, named_store: bool) -> KTable:  # fmt: skip
        builder = self._builder
        parent = self.node
        if self.repartition_required:
            topic = self.name or (spec.name if named_store else builder.new_name(prefix + "-STATE-STORE"))
            parent = builder.repartition(parent, topic, None, self.key_serde, self.value_serde)
        node = builder.new_name(prefix)
        cache = spec.cache
        builder.topology.add_processor(node, lambda: AggregateProcessor(spec.name, initializer, adder, cache), parent)
        builder.topology.add_state_store(spec, node)
        return KTable(builder, node, spec.name, spec.key, spec.value)

    def count(self, *, store: str | StoreSpec | None = None, kind: str | None = None,
              cache: bool | None = None) -> KTable:  # fmt: skip
        """The number of records per key (as 8-byte longs, like Kafka Streams)."""
        spec = self._store(store, INT, cache, kind)
        return self._aggregate("KSTREAM-AGGREGATE", _zero, _count, spec, store is not None)

    def reduce(self, reducer: Callable[[Any, Any], Any], *, store: str | StoreSpec | None = None,
               value: Any = None, kind: str | None = None, cache: bool | None = None) -> KTable:  # fmt: skip
        """``reducer(aggregate, value) -> aggregate``, starting from the key's first value."""
        _check_callable("reduce()", reducer)
        spec = self._store(store, serde_from(value) or self.value_serde, cache, kind)

        def add(key: Any, value: Any, agg: Any) -> Any:
            return value if agg is None else reducer(agg, value)

        return self._aggregate("KSTREAM-REDUCE", None, add, spec, store is not None)

    def aggregate(self, initial: Callable[[], Any], add: Callable[[Any, Any, Any], Any], *,
                  store: str | StoreSpec | None = None, value: Any = None, kind: str | None = None,
                  cache: bool | None = None) -> KTable:  # fmt: skip
        """``add(key, value, aggregate) -> aggregate``, starting from ``initial()`` per key."""
        _check_callable("aggregate() initial", initial)
        _check_callable("aggregate() add", add)
        spec = self._store(store, serde_from(value), cache, kind)
        return self._aggregate("KSTREAM-AGGREGATE", initial, add, spec, store is not None)


def _zero() -> int:
    return 0


def _count(key: Any, value: Any, agg: int) -> int:
    return agg + 1


class KTable:
    """The latest value per key. Updates flow downstream as they happen (merged per key per commit when
    the store caches)."""

    def __init__(self, builder: StreamsBuilder, node: str, store_name: str | None, key: Any, value: Any) -> None:
        self._builder = builder
        self.node = node
        self.store_name = store_name
        self.key_serde = key
        self.value_serde = value

    def _add(self, prefix: str, supplier: Callable[[], Processor], name: str | None, value: Any) -> KTable:
        node = name or self._builder.new_name(prefix)
        self._builder.topology.add_processor(node, supplier, self.node)
        return KTable(self._builder, node, None, self.key_serde, value)

    def filter(self, predicate: Callable[[Any, Any], bool], *, name: str | None = None) -> KTable:
        """Rows failing ``predicate(key, value)`` become deletes downstream."""
        _check_callable("filter()", predicate)
        return self._add("KTABLE-FILTER", lambda: TableFilterProcessor(predicate), name, self.value_serde)

    def filter_not(self, predicate: Callable[[Any, Any], bool], *, name: str | None = None) -> KTable:
        _check_callable("filter_not()", predicate)
        return self._add("KTABLE-FILTER", lambda: TableFilterProcessor(predicate, True), name, self.value_serde)

    def map_values(self, mapper: Callable[[Any], Any], *, name: str | None = None) -> KTable:
        _check_callable("map_values()", mapper)
        return self._add("KTABLE-MAPVALUES", lambda: TableMapValuesProcessor(mapper), name, None)

    def to_stream(self, *, name: str | None = None) -> KStream:
        """The table's updates as a stream (a delete is a record with value None)."""
        node = name or self._builder.new_name("KTABLE-TOSTREAM")
        self._builder.topology.add_processor(node, PassThroughProcessor, self.node)
        return KStream(self._builder, node, self.key_serde, self.value_serde, False)
