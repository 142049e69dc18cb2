"""The DSL: ``KStream`` (a record stream), ``KTable`` (latest value per key), ``KGroupedStream`` and
``KGroupedTable`` (ready to aggregate), and the windowed ``TimeWindowedKStream`` / ``SessionWindowedKStream``.

Serdes follow the data: an operation that keeps keys and values as they are (filter, peek, branch,
merge, group_by_key) keeps the serdes; one that computes new ones (map, map_values, ...) drops them, and
the topology's defaults (JSON) apply unless the next sink or store names one. A key-changing operation
(map, flat_map, select_key, group_by) marks the stream so that the next stateful operation reads it
through a repartition topic ``<application_id>-<name>-repartition``. A windowed aggregation's table is
keyed by ``Windowed(key, window)`` and carries the windowed key serde (Kafka Streams' byte layout).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import timedelta
from typing import Any, Protocol

from streams.change import ChangeSerde
from streams.errors import TopologyError
from streams.fk_join import foreign_key_join
from streams.global_table import GlobalKTable, StreamGlobalJoinProcessor
from streams.join_windows import JoinWindows
from streams.ops import (
    BranchProcessor,
    FilterProcessor,
    FlatMapProcessor,
    FlatMapValuesProcessor,
    MapProcessor,
    MapValuesProcessor,
    PassThroughProcessor,
    PeekProcessor,
    SelectKeyProcessor,
)
from streams.processor import Processor
from streams.record_serdes import INT, serde_from
from streams.stream_joins import LeftOrRightSerde, StreamStreamJoinProcessor, StreamTableJoinProcessor
from streams.suppress import Suppressed, SuppressProcessor
from streams.table_joins import JOIN_KINDS, TableJoinProcessor, TableMaterializeProcessor, key_joiner
from streams.table_ops import (
    AggregateProcessor,
    TableAggregateProcessor,
    TableFilterProcessor,
    TableMapValuesProcessor,
    TableOptions,
    TableRepartitionMapProcessor,
    ToStreamProcessor,
)
from streams.topology import (
    Partitioner,
    SessionStoreSpec,
    StoreSpec,
    SuppressionBufferSpec,
    Topology,
    WindowStoreSpec,
)
from streams.window_ops import (
    SessionWindowAggregateProcessor,
    SlidingWindowAggregateProcessor,
    TimeWindowAggregateProcessor,
)
from streams.windowed_serdes import SessionWindowedSerde, TimeWindowedSerde
from streams.windows import EmitStrategy, SessionWindows, SlidingWindows, TimeWindows, to_millis

__all__ = ["KGroupedStream", "KGroupedTable", "KStream", "KTable", "SessionWindowedKStream", "TimeWindowedKStream"]

Windows = TimeWindows | SlidingWindows | SessionWindows


class Builder(Protocol):
    """What the DSL needs of its ``StreamsBuilder``."""

    topology: Topology

    def new_name(self, prefix: str) -> str: ...

    def repartition(self, parent: str, topic: str, partitions: int | None, key: Any, value: Any) -> str: ...

    def stream(self, topics: str | list[str], *, key: Any = None, value: Any = None) -> KStream: ...


def _check_callable(what: str, fn: Any) -> None:
    if not callable(fn):
        raise TypeError(f"{what} needs a callable, got {fn!r}")


class KStream:
    """A stream of key-value records. Every method adds a node and returns a new stream."""

    def __init__(self, builder: Builder, node: str, key: Any, value: Any, repartition_required: bool) -> None:
        self._builder = builder
        self.node = node
        self.key_serde = key
        self.value_serde = value
        self.repartition_required = repartition_required

    def _add(
        self,
        prefix: str,
        supplier: Callable[[], Processor],
        name: str | None,
        *,
        key: Any,
        value: Any,
        repartition: bool | None = None,
        parents: tuple[str, ...] = (),
    ) -> KStream:
        node = name or self._builder.new_name(prefix)
        self._builder.topology.add_processor(node, supplier, *(parents or (self.node,)))
        rep = self.repartition_required if repartition is None else repartition
        return KStream(self._builder, node, key, value, rep)

    # -- stateless -------------------------------------------------------------------------------------

    def filter(self, predicate: Callable[[Any, Any], bool], *, name: str | None = None) -> KStream:
        """Keep records for which ``predicate(key, value)`` is true."""
        _check_callable("filter()", predicate)
        return self._add(
            "KSTREAM-FILTER", lambda: FilterProcessor(predicate), name, key=self.key_serde, value=self.value_serde
        )

    def filter_not(self, predicate: Callable[[Any, Any], bool], *, name: str | None = None) -> KStream:
        _check_callable("filter_not()", predicate)
        return self._add(
            "KSTREAM-FILTER",
            lambda: FilterProcessor(predicate, negate=True),
            name,
            key=self.key_serde,
            value=self.value_serde,
        )

    def map(self, mapper: Callable[[Any, Any], tuple[Any, Any]], *, name: str | None = None) -> KStream:
        """``mapper(key, value) -> (new_key, new_value)``; marks the stream for repartitioning."""
        _check_callable("map()", mapper)
        return self._add("KSTREAM-MAP", lambda: MapProcessor(mapper), name, key=None, value=None, repartition=True)

    def map_values(self, mapper: Callable[[Any], Any], *, name: str | None = None) -> KStream:
        """``mapper(value) -> new_value``; keys stay, so no repartitioning."""
        _check_callable("map_values()", mapper)
        return self._add("KSTREAM-MAPVALUES", lambda: MapValuesProcessor(mapper), name, key=self.key_serde, value=None)

    def flat_map(self, mapper: Callable[[Any, Any], Iterable[tuple[Any, Any]]], *, name: str | None = None) -> KStream:
        """``mapper(key, value) -> iterable of (key, value)``; marks the stream for repartitioning."""
        _check_callable("flat_map()", mapper)
        return self._add(
            "KSTREAM-FLATMAP", lambda: FlatMapProcessor(mapper), name, key=None, value=None, repartition=True
        )

    def flat_map_values(self, mapper: Callable[[Any], Iterable[Any]], *, name: str | None = None) -> KStream:
        """``mapper(value) -> iterable of values``, each with the record's key."""
        _check_callable("flat_map_values()", mapper)
        return self._add(
            "KSTREAM-FLATMAPVALUES", lambda: FlatMapValuesProcessor(mapper), name, key=self.key_serde, value=None
        )

    def peek(self, action: Callable[[Any, Any], None], *, name: str | None = None) -> KStream:
        """Call ``action(key, value)`` for each record and pass it on unchanged."""
        _check_callable("peek()", action)
        return self._add(
            "KSTREAM-PEEK", lambda: PeekProcessor(action), name, key=self.key_serde, value=self.value_serde
        )

    def foreach(self, action: Callable[[Any, Any], None], *, name: str | None = None) -> None:
        """Call ``action(key, value)`` for each record (a terminal operation)."""
        _check_callable("foreach()", action)
        self._add("KSTREAM-FOREACH", lambda: PeekProcessor(action), name, key=None, value=None)

    def select_key(self, selector: Callable[[Any, Any], Any], *, name: str | None = None) -> KStream:
        """New key ``selector(key, value)``, same value; marks the stream for repartitioning."""
        _check_callable("select_key()", selector)
        return self._add(
            "KSTREAM-KEY-SELECT",
            lambda: SelectKeyProcessor(selector),
            name,
            key=None,
            value=self.value_serde,
            repartition=True,
        )

    def branch(self, *predicates: Callable[[Any, Any], bool], name: str | None = None) -> list[KStream]:
        """One stream per predicate; a record goes to the first branch whose predicate holds (or none)."""
        if not predicates:
            raise TopologyError("branch() needs at least one predicate")
        for p in predicates:
            _check_callable("branch()", p)
        preds = list(predicates)
        branch = self._add(
            "KSTREAM-BRANCH", lambda: BranchProcessor(preds), name, key=self.key_serde, value=self.value_serde
        )
        return [
            branch._add(
                "KSTREAM-BRANCHCHILD",
                PassThroughProcessor,
                f"{name}-{i}" if name else None,
                key=self.key_serde,
                value=self.value_serde,
            )
            for i in range(len(preds))
        ]

    def merge(self, other: KStream, *, name: str | None = None) -> KStream:
        """Records of both streams (in arrival order)."""
        if not isinstance(other, KStream) or other._builder is not self._builder:
            raise TopologyError("merge() needs a KStream from the same StreamsBuilder")
        same_key = self.key_serde if self.key_serde is other.key_serde else None
        same_value = self.value_serde if self.value_serde is other.value_serde else None
        return self._add(
            "KSTREAM-MERGE",
            PassThroughProcessor,
            name,
            key=same_key,
            value=same_value,
            repartition=self.repartition_required or other.repartition_required,
            parents=(self.node, other.node),
        )

    def process(
        self,
        supplier: Callable[[], Processor],
        *,
        stores: Iterable[str] = (),
        name: str | None = None,
        key: Any = None,
        value: Any = None,
    ) -> KStream:
        """Run a ``Processor`` (processor API) on the stream; what it forwards is the new stream."""
        _check_callable("process()", supplier)
        out = self._add(
            "KSTREAM-PROCESSOR", supplier, name, key=serde_from(key), value=serde_from(value), repartition=True
        )
        stores = list(stores)
        if stores:
            self._builder.topology.connect_processor_and_state_stores(out.node, stores=stores)
        return out

    # -- sinks and topics ------------------------------------------------------------------------------

    def to(
        self,
        topic: str,
        *,
        key: Any = None,
        value: Any = None,
        partitioner: Partitioner | None = None,
        name: str | None = None,
    ) -> None:
        """Write to ``topic`` (which must exist). ``partitioner(key, value, num_partitions) -> partition``
        overrides the default (murmur2 of the key bytes, as Kafka's Java client)."""
        node = name or self._builder.new_name("KSTREAM-SINK")
        key, value = serde_from(key) or self.key_serde, serde_from(value) or self.value_serde
        self._builder.topology.add_sink(node, topic, self.node, key=key, value=value, partitioner=partitioner)

    def through(
        self, topic: str, *, key: Any = None, value: Any = None, partitioner: Partitioner | None = None
    ) -> KStream:
        """Write to a user-managed ``topic`` and continue from it (a new sub-topology)."""
        key, value = serde_from(key) or self.key_serde, serde_from(value) or self.value_serde
        self.to(topic, key=key, value=value, partitioner=partitioner)
        return self._builder.stream(topic, key=key, value=value)

    def repartition(
        self, *, name: str | None = None, partitions: int | None = None, key: Any = None, value: Any = None
    ) -> KStream:
        """Send the stream through an internal topic ``<application_id>-<name>-repartition`` so that
        records are partitioned by their current key."""
        key, value = serde_from(key) or self.key_serde, serde_from(value) or self.value_serde
        topic = name or self._builder.new_name("KSTREAM-REPARTITION")
        node = self._builder.repartition(self.node, topic, partitions, key, value)
        return KStream(self._builder, node, key, value, False)

    # -- joins ---------------------------------------------------------------------------------------
    # ``other`` decides the kind: a KStream (windowed, needs JoinWindows), a KTable (a lookup per record)
    # or a GlobalKTable (``join(global_table, key_selector, joiner)``).

    def join(
        self,
        other: Any,
        joiner: Callable[..., Any],
        windows: Any = None,
        *,
        with_key: bool = False,
        name: str | None = None,
    ) -> KStream:
        """Inner join: with a ``KStream`` within ``windows`` (``JoinWindows``), or with a ``KTable`` (the
        table's current row for the record's key); ``joiner(value, other)``, or ``joiner(key, value,
        other)`` with ``with_key=True``; a stream whose key was changed is repartitioned first. With a
        ``GlobalKTable``: ``join(global_table, key_selector, joiner)``, where ``key_selector(key, value)``
        gives the global table's key; records without a row are dropped; no co-partitioning is needed (every
        instance holds the whole global table)."""
        return self._join_any("join", other, joiner, windows, with_key, name, left=False)

    def left_join(
        self,
        other: Any,
        joiner: Callable[..., Any],
        windows: Any = None,
        *,
        with_key: bool = False,
        name: str | None = None,
    ) -> KStream:
        """As ``join``, but every record of this stream gives a result: ``other`` is None when nothing
        joined (with a stream: emitted once the record's window has closed, window end + grace)."""
        return self._join_any("left_join", other, joiner, windows, with_key, name, left=True)

    def _join_any(
        self,
        method: str,
        other: Any,
        joiner: Callable[..., Any],
        third: Any,
        with_key: bool,
        name: str | None,
        *,
        left: bool,
    ) -> KStream:
        if isinstance(other, GlobalKTable) or callable(third):
            # join(global_table, key_selector, joiner): the second argument selects the key
            return self._join_global(method, other, joiner, third, with_key, name, left=left)
        return self._join(method, other, joiner, third, with_key, name, left=left, outer=False)

    def _join_global(
        self,
        method: str,
        other: Any,
        key_selector: Callable[[Any, Any], Any],
        joiner: Callable[..., Any],
        with_key: bool,
        name: str | None,
        *,
        left: bool,
    ) -> KStream:
        if not isinstance(other, GlobalKTable):
            raise TypeError(
                f"KStream.{method}() with a key selector needs a GlobalKTable "
                f"(StreamsBuilder.global_table(...)), got {type(other).__name__}"
            )
        if other.builder is not self._builder:
            raise TopologyError(f"KStream.{method}() needs a GlobalKTable from the same StreamsBuilder")
        _check_callable(f"{method}() key selector", key_selector)
        _check_callable(f"{method}() joiner", joiner)
        store, fn = other.store_name, key_joiner(joiner, with_key)
        return self._add(
            "KSTREAM-LEFTJOIN" if left else "KSTREAM-JOIN",
            lambda: StreamGlobalJoinProcessor(store, key_selector, fn, left),
            name,
            key=self.key_serde,
            value=None,
        )

    def outer_join(
        self,
        other: KStream,
        joiner: Callable[..., Any],
        windows: JoinWindows,
        *,
        with_key: bool = False,
        name: str | None = None,
    ) -> KStream:
        """Windowed outer join of two streams: records of either side that join nothing are emitted with
        None for the other side once their window has closed."""
        if not isinstance(other, KStream):
            raise TypeError(f"outer_join() needs a KStream (and JoinWindows), got {other!r}")
        return self._join("outer_join", other, joiner, windows, with_key, name, left=True, outer=True)

    def _join(
        self,
        what: str,
        other: Any,
        joiner: Callable[..., Any],
        windows: JoinWindows | None,
        with_key: bool,
        name: str | None,
        *,
        left: bool,
        outer: bool,
    ) -> KStream:
        _check_callable(f"{what}() joiner", joiner)
        keyed = key_joiner(joiner, with_key)
        if isinstance(other, KStream):
            if not isinstance(windows, JoinWindows):
                raise TypeError(
                    f"{what}() of two streams needs JoinWindows (e.g. JoinWindows."
                    f"of_time_difference_and_grace(...)), got {windows!r}"
                )
            if other._builder is not self._builder:
                raise TopologyError(f"{what}() needs a KStream from the same StreamsBuilder")
            return self._stream_stream_join(other, keyed, windows, name, left, outer)
        if isinstance(other, KTable):
            if windows is not None:
                raise TypeError(f"{what}() with a KTable takes no windows, got {windows!r}")
            if other._builder is not self._builder:
                raise TopologyError(f"{what}() needs a KTable from the same StreamsBuilder")
            return self._stream_table_join(other, keyed, name, left)
        raise TypeError(
            f"{what}() needs a KStream (with JoinWindows), a KTable or a GlobalKTable (with a key "
            f"selector), got {other!r}"
        )

    def _join_source(self, name: str | None, side: str, key: Any) -> str:
        """This stream's node, or, after a key change, the source of its repartition topic, written with
        ``key`` (the join's key serde: the other side's when this stream has none, so that equal keys
        land in equal partitions on both sides)."""
        if not self.repartition_required:
            return self.node
        topic = f"{name}-{side}" if name else self._builder.new_name("KSTREAM-JOIN-REPARTITION")
        return self._builder.repartition(self.node, topic, None, key, self.value_serde)

    def _stream_stream_join(
        self,
        other: KStream,
        joiner: Callable[[Any, Any, Any], Any],
        windows: JoinWindows,
        name: str | None,
        left: bool,
        outer: bool,
    ) -> KStream:
        builder, topology = self._builder, self._builder.topology
        key = self.key_serde if self.key_serde is not None else other.key_serde
        left_src, right_src = self._join_source(name, "left", key), other._join_source(name, "right", key)
        # Kafka Streams' names: a processor that may have to emit the other side's unjoined records is OUTER.
        this_prefix = "KSTREAM-OUTERTHIS" if outer else "KSTREAM-JOINTHIS"
        other_prefix = "KSTREAM-OUTEROTHER" if left else "KSTREAM-JOINOTHER"
        this_node = f"{name}-join-this" if name else builder.new_name(this_prefix)
        other_node = f"{name}-join-other" if name else builder.new_name(other_prefix)
        size, retention = max(windows.size_ms, 0), max(windows.retention_ms, 1)
        this_store, other_store = f"{this_node}-store", f"{other_node}-store"
        outer_store = None
        if left:
            outer_store = f"{name}-outer-shared-join" if name else builder.new_name("KSTREAM-OUTERSHARED")
            outer_store += "-store"
        topology.add_processor(
            this_node,
            lambda: StreamStreamJoinProcessor(this_store, other_store, outer_store, windows, joiner, True, left, outer),
            left_src,
        )
        topology.add_processor(
            other_node,
            lambda: StreamStreamJoinProcessor(
                other_store, this_store, outer_store, windows, joiner, False, outer, left
            ),
            right_src,
        )
        for store, value in ((this_store, self.value_serde), (other_store, other.value_serde)):
            topology.add_state_store(
                WindowStoreSpec(
                    store, key=key, value=value, window_size_ms=size, retention_ms=retention, retain_duplicates=True
                ),
                this_node,
                other_node,
            )
        if outer_store is not None:
            default = topology.default_value
            values = LeftOrRightSerde(self.value_serde or default, other.value_serde or default)
            # Unjoined records wait here until their window closes and are removed once emitted; the
            # retention (twice the longest a record can wait) only bounds what a lost removal would leave.
            wait = max(windows.before_ms, windows.after_ms, 0) + windows.grace_ms
            topology.add_state_store(
                WindowStoreSpec(
                    outer_store,
                    key=key,
                    value=values,
                    window_size_ms=0,
                    retention_ms=2 * wait + 1,
                    retain_duplicates=True,
                ),
                this_node,
                other_node,
            )
        return self._add(
            "KSTREAM-MERGE",
            PassThroughProcessor,
            f"{name}-merge" if name else None,
            key=key,
            value=None,
            repartition=False,
            parents=(this_node, other_node),
        )

    def _stream_table_join(
        self, table: KTable, joiner: Callable[[Any, Any, Any], Any], name: str | None, left: bool
    ) -> KStream:
        table = table._materialized()  # a derived table (filter, map_values, ...) gets a store to look rows up in
        key = self.key_serde if self.key_serde is not None else table.key_serde
        source = self._join_source(name, "left", key)
        store = table.store_name
        assert store is not None
        node = name or self._builder.new_name("KSTREAM-JOIN")
        self._builder.topology.add_processor(node, lambda: StreamTableJoinProcessor(store, joiner, left), source)
        self._builder.topology.connect_processor_and_state_stores(node, stores=[store])
        return KStream(self._builder, node, key, None, False)

    # -- grouping --------------------------------------------------------------------------------------

    def group_by_key(self, *, key: Any = None, value: Any = None, name: str | None = None) -> KGroupedStream:
        """Group by the current key (repartitioning first if the key was changed upstream)."""
        return KGroupedStream(
            self._builder,
            self.node,
            serde_from(key) or self.key_serde,
            serde_from(value) or self.value_serde,
            self.repartition_required,
            name,
        )

    def group_by(
        self, selector: Callable[[Any, Any], Any], *, key: Any = None, value: Any = None, name: str | None = None
    ) -> KGroupedStream:
        """Group by ``selector(key, value)``; always repartitions (the key is new)."""
        _check_callable("group_by()", selector)
        selected = self._add(
            "KSTREAM-KEY-SELECT",
            lambda: SelectKeyProcessor(selector),
            None,
            key=None,
            value=self.value_serde,
            repartition=True,
        )
        return KGroupedStream(
            self._builder, selected.node, serde_from(key), serde_from(value) or self.value_serde, True, name
        )


def _store_spec(
    builder: Builder, store: str | StoreSpec | None, key: Any, value: Any, cache: bool | None, kind: str | None
) -> StoreSpec:
    """A key-value store for an aggregation: the spec given (serdes filled in), or a new one."""
    if isinstance(store, StoreSpec):
        spec = store
        if spec.key is None:
            spec.key = key
        if spec.value is None:
            spec.value = value
    else:
        if store is not None and not isinstance(store, str):
            raise TypeError(f"store must be a name or a StoreSpec, got {store!r}")
        spec = StoreSpec(store or builder.new_name("KSTREAM-AGGREGATE-STATE-STORE"), kind=kind, key=key, value=value)
    if cache is not None:
        spec.cache = cache
    spec.timestamped = True
    return spec


def _repartition_topic(builder: Builder, name: str | None, spec: StoreSpec, named_store: bool, prefix: str) -> str:
    return name or (spec.name if named_store else builder.new_name(prefix + "-STATE-STORE"))


class KGroupedStream:
    """A stream grouped by key, ready for ``count``, ``reduce`` or ``aggregate`` into a table, or for
    ``windowed_by`` to aggregate per time window."""

    def __init__(
        self, builder: Builder, node: str, key: Any, value: Any, repartition_required: bool, name: str | None
    ) -> None:
        self._builder = builder
        self.node = node
        self.key_serde = key
        self.value_serde = value
        self.repartition_required = repartition_required
        self.name = name

    def _source(self, spec: StoreSpec, named_store: bool, prefix: str) -> str:
        """The node aggregations read: this one, or the repartition topic's source."""
        if not self.repartition_required:
            return self.node
        topic = _repartition_topic(self._builder, self.name, spec, named_store, prefix)
        return self._builder.repartition(self.node, topic, None, self.key_serde, self.value_serde)

    def _aggregate(
        self,
        prefix: str,
        initializer: Callable[[], Any] | None,
        adder: Callable[[Any, Any, Any], Any],
        spec: StoreSpec,
        named_store: bool,
    ) -> KTable:
        builder = self._builder
        parent = self._source(spec, named_store, prefix)
        node = builder.new_name(prefix)
        cache = spec.cache
        options = TableOptions()
        builder.topology.add_processor(
            node, lambda: AggregateProcessor(spec.name, initializer, adder, cache, options), parent
        )
        builder.topology.add_state_store(spec, node)
        return KTable(builder, node, spec.name, spec.key, spec.value, options)

    def count(
        self, *, store: str | StoreSpec | None = None, kind: str | None = None, cache: bool | None = None
    ) -> KTable:
        """The number of records per key (as 8-byte longs, like Kafka Streams)."""
        spec = _store_spec(self._builder, store, self.key_serde, INT, cache, kind)
        return self._aggregate("KSTREAM-AGGREGATE", _zero, _count, spec, store is not None)

    def reduce(
        self,
        reducer: Callable[[Any, Any], Any],
        *,
        store: str | StoreSpec | None = None,
        value: Any = None,
        kind: str | None = None,
        cache: bool | None = None,
    ) -> KTable:
        """``reducer(aggregate, value) -> aggregate``, starting from the key's first value."""
        _check_callable("reduce()", reducer)
        spec = _store_spec(self._builder, store, self.key_serde, serde_from(value) or self.value_serde, cache, kind)
        return self._aggregate("KSTREAM-REDUCE", None, _reducing(reducer), spec, store is not None)

    def aggregate(
        self,
        initial: Callable[[], Any],
        add: Callable[[Any, Any, Any], Any],
        *,
        store: str | StoreSpec | None = None,
        value: Any = None,
        kind: str | None = None,
        cache: bool | None = None,
    ) -> KTable:
        """``add(key, value, aggregate) -> aggregate``, starting from ``initial()`` per key."""
        _check_callable("aggregate() initial", initial)
        _check_callable("aggregate() add", add)
        spec = _store_spec(self._builder, store, self.key_serde, serde_from(value), cache, kind)
        return self._aggregate("KSTREAM-AGGREGATE", initial, add, spec, store is not None)

    def windowed_by(self, windows: Windows) -> TimeWindowedKStream | SessionWindowedKStream:
        """Aggregate per window: ``TimeWindows`` (tumbling, hopping) and ``SlidingWindows`` give a
        ``TimeWindowedKStream``, ``SessionWindows`` a ``SessionWindowedKStream``."""
        if isinstance(windows, SessionWindows):
            return SessionWindowedKStream(self, windows, EmitStrategy.ON_WINDOW_UPDATE)
        if isinstance(windows, TimeWindows | SlidingWindows):
            return TimeWindowedKStream(self, windows, EmitStrategy.ON_WINDOW_UPDATE)
        raise TypeError(f"windowed_by() needs TimeWindows, SlidingWindows or SessionWindows, got {windows!r}")


def _zero() -> int:
    return 0


def _count(key: Any, value: Any, agg: int) -> int:
    return agg + 1


def _sum(key: Any, one: int, two: int) -> int:
    return one + two


def _reducing(reducer: Callable[[Any, Any], Any]) -> Callable[[Any, Any, Any], Any]:
    """An aggregator from a reducer: the first value is the aggregate."""

    def add(key: Any, value: Any, agg: Any) -> Any:
        return value if agg is None else reducer(agg, value)

    return add


class _WindowedStream:
    """What ``TimeWindowedKStream`` and ``SessionWindowedKStream`` share: the grouped stream, the window
    store spec, the result table."""

    _prefix = "KSTREAM-AGGREGATE"

    def __init__(self, grouped: KGroupedStream, windows: Windows, emit: EmitStrategy) -> None:
        self._grouped = grouped
        self.windows = windows
        self._emit = emit

    def _emit_final(self, emit_strategy: EmitStrategy | str | None) -> bool:
        strategy = self._emit if emit_strategy is None else EmitStrategy.of(emit_strategy)
        return strategy is EmitStrategy.ON_WINDOW_CLOSE

    def _retention(self, spec: StoreSpec, retention: timedelta | int | None, minimum: int, why: str) -> int:
        if retention is not None:
            ms = to_millis(retention, f"retention of store {spec.name!r}")
        elif isinstance(spec, WindowStoreSpec | SessionStoreSpec) and spec.retention_ms:
            ms = spec.retention_ms
        else:
            ms = minimum
        if ms < minimum:
            raise TopologyError(
                f"the retention period of window store {spec.name!r} must be no smaller than {why}: "
                f"got retention={ms} ms, needs at least {minimum} ms"
            )
        return ms

    def _table(
        self, processor: Callable[[TableOptions], Processor], spec: StoreSpec, named: bool, key_serde: Any
    ) -> KTable:
        grouped, builder = self._grouped, self._grouped._builder
        parent = grouped._source(spec, named, self._prefix)
        node = builder.new_name(self._prefix)
        options = TableOptions()
        builder.topology.add_processor(node, lambda: processor(options), parent)
        builder.topology.add_state_store(spec, node)
        return KTable(builder, node, spec.name, key_serde, spec.value, options, windows=self.windows)

    def _inner_key(self) -> Any:
        key = self._grouped.key_serde
        return key if key is not None else self._grouped._builder.topology.default_key


class TimeWindowedKStream(_WindowedStream):
    """A grouped stream over ``TimeWindows`` or ``SlidingWindows``; aggregations give a table keyed by
    ``Windowed(key, TimeWindow)``."""

    windows: TimeWindows | SlidingWindows

    def emit_strategy(self, strategy: EmitStrategy | str) -> TimeWindowedKStream:
        """``"on_window_update"`` (default: every update) or ``"on_window_close"`` (each window's final
        result, once, when it closes)."""
        return TimeWindowedKStream(self._grouped, self.windows, EmitStrategy.of(strategy))

    def _spec(
        self,
        store: str | StoreSpec | None,
        value: Any,
        cache: bool | None,
        kind: str | None,
        retention: timedelta | int | None,
    ) -> WindowStoreSpec:
        base = _store_spec(self._grouped._builder, store, self._grouped.key_serde, value, cache, kind)
        w = self.windows
        if isinstance(w, TimeWindows):
            size, minimum, why = w.size_ms, w.size_ms + w.grace_ms, "its window size plus the grace period"
        else:
            size = w.time_difference_ms
            minimum, why = 2 * size + w.grace_ms, "2 * time difference plus the grace period"
        ms = self._retention(base, retention, minimum, why)
        return WindowStoreSpec(
            base.name,
            kind=base.kind,
            key=base.key,
            value=base.value,
            logged=base.logged,
            cache=base.cache,
            window_size_ms=size,
            retention_ms=ms,
        )

    def _build(
        self,
        initializer: Callable[[], Any] | None,
        adder: Callable[[Any, Any, Any], Any],
        spec: WindowStoreSpec,
        named: bool,
        emit_strategy: EmitStrategy | str | None,
    ) -> KTable:
        final, cache, w = self._emit_final(emit_strategy), spec.cache, self.windows
        name = spec.name
        key_serde = TimeWindowedSerde(self._inner_key(), spec.window_size_ms)
        if isinstance(w, TimeWindows):
            tw = w
            return self._table(
                lambda o: TimeWindowAggregateProcessor(name, tw, initializer, adder, cache, final, o),
                spec,
                named,
                key_serde,
            )
        sw = w
        return self._table(
            lambda o: SlidingWindowAggregateProcessor(name, sw, initializer, adder, cache, final, o),
            spec,
            named,
            key_serde,
        )

    def count(
        self,
        *,
        store: str | StoreSpec | None = None,
        kind: str | None = None,
        cache: bool | None = None,
        retention: timedelta | int | None = None,
        emit_strategy: EmitStrategy | str | None = None,
    ) -> KTable:
        """Records per key and window. ``retention``: how long windows are kept (default: size + grace;
        sliding windows: 2 * time difference + grace)."""
        spec = self._spec(store, INT, cache, kind, retention)
        return self._build(_zero, _count, spec, store is not None, emit_strategy)

    def reduce(
        self,
        reducer: Callable[[Any, Any], Any],
        *,
        store: str | StoreSpec | None = None,
        value: Any = None,
        kind: str | None = None,
        cache: bool | None = None,
        retention: timedelta | int | None = None,
        emit_strategy: EmitStrategy | str | None = None,
    ) -> KTable:
        _check_callable("reduce()", reducer)
        spec = self._spec(store, serde_from(value) or self._grouped.value_serde, cache, kind, retention)
        return self._build(None, _reducing(reducer), spec, store is not None, emit_strategy)

    def aggregate(
        self,
        initial: Callable[[], Any],
        add: Callable[[Any, Any, Any], Any],
        *,
        store: str | StoreSpec | None = None,
        value: Any = None,
        kind: str | None = None,
        cache: bool | None = None,
        retention: timedelta | int | None = None,
        emit_strategy: EmitStrategy | str | None = None,
    ) -> KTable:
        """``add(key, value, aggregate) -> aggregate`` per window, from ``initial()``."""
        _check_callable("aggregate() initial", initial)
        _check_callable("aggregate() add", add)
        spec = self._spec(store, serde_from(value), cache, kind, retention)
        return self._build(initial, add, spec, store is not None, emit_strategy)


class SessionWindowedKStream(_WindowedStream):
    """A grouped stream over ``SessionWindows``; aggregations give a table keyed by
    ``Windowed(key, SessionWindow)``, in which merged sessions are deleted."""

    windows: SessionWindows

    def emit_strategy(self, strategy: EmitStrategy | str) -> SessionWindowedKStream:
        return SessionWindowedKStream(self._grouped, self.windows, EmitStrategy.of(strategy))

    def _spec(
        self,
        store: str | StoreSpec | None,
        value: Any,
        cache: bool | None,
        kind: str | None,
        retention: timedelta | int | None,
    ) -> SessionStoreSpec:
        base = _store_spec(self._grouped._builder, store, self._grouped.key_serde, value, cache, kind)
        w = self.windows
        ms = self._retention(
            base, retention, w.inactivity_gap_ms + w.grace_ms, "the session inactivity gap plus the grace period"
        )
        return SessionStoreSpec(
            base.name,
            kind=base.kind,
            key=base.key,
            value=base.value,
            logged=base.logged,
            cache=base.cache,
            retention_ms=ms,
        )

    def _build(
        self,
        initializer: Callable[[], Any] | None,
        adder: Callable[[Any, Any, Any], Any],
        merger: Callable[[Any, Any, Any], Any],
        spec: SessionStoreSpec,
        named: bool,
        emit_strategy: EmitStrategy | str | None,
    ) -> KTable:
        final, cache, w, name = self._emit_final(emit_strategy), spec.cache, self.windows, spec.name
        return self._table(
            lambda o: SessionWindowAggregateProcessor(name, w, initializer, adder, merger, cache, final, o),
            spec,
            named,
            SessionWindowedSerde(self._inner_key()),
        )

    def count(
        self,
        *,
        store: str | StoreSpec | None = None,
        kind: str | None = None,
        cache: bool | None = None,
        retention: timedelta | int | None = None,
        emit_strategy: EmitStrategy | str | None = None,
    ) -> KTable:
        """Records per key and session (merged sessions add their counts)."""
        spec = self._spec(store, INT, cache, kind, retention)
        return self._build(_zero, _count, _sum, spec, store is not None, emit_strategy)

    def reduce(
        self,
        reducer: Callable[[Any, Any], Any],
        *,
        store: str | StoreSpec | None = None,
        value: Any = None,
        kind: str | None = None,
        cache: bool | None = None,
        retention: timedelta | int | None = None,
        emit_strategy: EmitStrategy | str | None = None,
    ) -> KTable:
        """``reducer(aggregate, value)``; merging sessions reduces their aggregates the same way."""
        _check_callable("reduce()", reducer)
        spec = self._spec(store, serde_from(value) or self._grouped.value_serde, cache, kind, retention)
        add = _reducing(reducer)
        return self._build(None, add, lambda k, one, two: add(k, two, one), spec, store is not None, emit_strategy)

    def aggregate(
        self,
        initial: Callable[[], Any],
        add: Callable[[Any, Any, Any], Any],
        merge: Callable[[Any, Any, Any], Any],
        *,
        store: str | StoreSpec | None = None,
        value: Any = None,
        kind: str | None = None,
        cache: bool | None = None,
        retention: timedelta | int | None = None,
        emit_strategy: EmitStrategy | str | None = None,
    ) -> KTable:
        """``add(key, value, aggregate)`` per session, from ``initial()``; ``merge(key, agg1, agg2)``
        combines the aggregates of sessions that a record joins together."""
        _check_callable("aggregate() initial", initial)
        _check_callable("aggregate() add", add)
        _check_callable("aggregate() merge", merge)
        spec = self._spec(store, serde_from(value), cache, kind, retention)
        return self._build(initial, add, merge, spec, store is not None, emit_strategy)


class KTable:
    """The latest value per key. Updates flow downstream as they happen (merged per key per commit when
    the store caches). A windowed aggregation's table also knows its ``windows``."""

    def __init__(
        self,
        builder: Builder,
        node: str,
        store_name: str | None,
        key: Any,
        value: Any,
        options: TableOptions | None = None,
        *,
        parent: KTable | None = None,
        windows: Windows | None = None,
    ) -> None:
        self._builder = builder
        self.node = node
        self.store_name = store_name
        self.key_serde = key
        self.value_serde = value
        self.windows = windows
        self._options = options if options is not None else TableOptions()
        self._parent = parent  # where this table's old values come from, if not from its own store

    def _enable_old_values(self) -> None:
        """Have this table's updates carry the value they replace (and its parent's, which it derives them from)."""
        self._options.send_old_values = True
        if self._parent is not None:
            self._parent._enable_old_values()

    def _add(self, prefix: str, supplier: Callable[[TableOptions], Processor], name: str | None, value: Any) -> KTable:
        node = name or self._builder.new_name(prefix)
        options = TableOptions()
        self._builder.topology.add_processor(node, lambda: supplier(options), self.node)
        return KTable(self._builder, node, None, self.key_serde, value, options, parent=self, windows=self.windows)

    def filter(self, predicate: Callable[[Any, Any], bool], *, name: str | None = None) -> KTable:
        """Rows failing ``predicate(key, value)`` become deletes downstream."""
        _check_callable("filter()", predicate)
        return self._add("KTABLE-FILTER", lambda o: TableFilterProcessor(predicate, False, o), name, self.value_serde)

    def filter_not(self, predicate: Callable[[Any, Any], bool], *, name: str | None = None) -> KTable:
        _check_callable("filter_not()", predicate)
        return self._add("KTABLE-FILTER", lambda o: TableFilterProcessor(predicate, True, o), name, self.value_serde)

    def map_values(self, mapper: Callable[[Any], Any], *, name: str | None = None) -> KTable:
        _check_callable("map_values()", mapper)
        return self._add("KTABLE-MAPVALUES", lambda o: TableMapValuesProcessor(mapper, o), name, None)

    def suppress(self, suppressed: Suppressed) -> KTable:
        """Hold back updates: ``Suppressed.until_window_closes()`` (one final result per window of a
        windowed table) or ``Suppressed.until_time_limit(duration)``."""
        if not isinstance(suppressed, Suppressed):
            raise TypeError(f"suppress() needs a Suppressed (Suppressed.until_window_closes()), got {suppressed!r}")
        builder = self._builder
        if suppressed.final and self.windows is None:
            raise TopologyError(
                "suppress(Suppressed.until_window_closes()) needs a windowed table (the result "
                "of windowed_by(...) and an aggregation): only windows close"
            )
        offset = self.windows.close_offset if self.windows is not None else 0

        node = suppressed.name or builder.new_name("KTABLE-SUPPRESS")
        store = f"{suppressed.name}-store" if suppressed.name else builder.new_name("KTABLE-SUPPRESS-STATE-STORE")
        spec = SuppressionBufferSpec(
            store, key=self.key_serde, value=self.value_serde, count_bytes=suppressed.buffer.byte_limit is not None
        )
        options = TableOptions()
        builder.topology.add_processor(node, lambda: SuppressProcessor(store, suppressed, offset, options), self.node)
        builder.topology.add_state_store(spec, node)
        return KTable(builder, node, None, self.key_serde, self.value_serde, options, parent=self, windows=self.windows)

    def group_by(
        self,
        selector: Callable[[Any, Any], tuple[Any, Any]],
        *,
        key: Any = None,
        value: Any = None,
        name: str | None = None,
    ) -> KGroupedTable:
        """Re-group the table: ``selector(key, value) -> (group key, group value)``. Aggregations of the
        result subtract a row's old value from its old group and add its new value to its new group, so a
        row that moves between groups leaves the first and joins the second."""
        _check_callable("group_by()", selector)
        self._enable_old_values()
        node = self._builder.new_name("KTABLE-SELECT")
        self._builder.topology.add_processor(node, lambda: TableRepartitionMapProcessor(selector), self.node)
        return KGroupedTable(self._builder, node, serde_from(key), serde_from(value), name)

    # -- joins -----------------------------------------------------------------------------------------

    def join(
        self,
        other: KTable,
        joiner: Callable[..., Any],
        *,
        foreign_key: Callable[[Any], Any] | None = None,
        with_key: bool = False,
        store: str | StoreSpec | None = None,
        value: Any = None,
        name: str | None = None,
    ) -> KTable:
        """Inner join on the key: a row while both tables have one, ``joiner(value, other)`` (``(key,
        value, other)`` with ``with_key``); a row of either side deleted deletes the result.
        ``foreign_key(value) -> other's key``: join each row with the ``other`` row its value points to
        (Kafka Streams' foreign-key join, KIP-213); the result is keyed as this table. ``store``:
        materialize the result (queryable by that name)."""
        return self._join("inner", other, joiner, foreign_key, with_key, store, value, name)

    def left_join(
        self,
        other: KTable,
        joiner: Callable[..., Any],
        *,
        foreign_key: Callable[[Any], Any] | None = None,
        with_key: bool = False,
        store: str | StoreSpec | None = None,
        value: Any = None,
        name: str | None = None,
    ) -> KTable:
        """As ``join``, but a row of this table without a partner is joined with None."""
        return self._join("left", other, joiner, foreign_key, with_key, store, value, name)

    def outer_join(
        self,
        other: KTable,
        joiner: Callable[..., Any],
        *,
        with_key: bool = False,
        store: str | StoreSpec | None = None,
        value: Any = None,
        name: str | None = None,
    ) -> KTable:
        """A row while either table has one; the missing side is None in ``joiner(value, other)``."""
        return self._join("outer", other, joiner, None, with_key, store, value, name)

    def _materialized(self) -> KTable:
        """This table, or (if it keeps no store) a copy of it that does: a join looks rows up there."""
        if self.store_name is not None:
            return self
        builder = self._builder
        node = builder.new_name("KTABLE-MATERIALIZE")
        spec = StoreSpec(f"{node}-STATE-STORE", key=self.key_serde, value=self.value_serde, cache=False)
        spec.timestamped = True
        options = TableOptions()
        builder.topology.add_processor(node, lambda: TableMaterializeProcessor(spec.name, options), self.node)
        builder.topology.add_state_store(spec, node)
        return KTable(builder, node, spec.name, self.key_serde, self.value_serde, options)

    def _join(
        self,
        kind: str,
        other: KTable,
        joiner: Callable[..., Any],
        foreign_key: Callable[[Any], Any] | None,
        with_key: bool,
        store: str | StoreSpec | None,
        value: Any,
        name: str | None,
    ) -> KTable:
        assert kind in JOIN_KINDS
        method = {"inner": "join", "left": "left_join", "outer": "outer_join"}[kind]
        if not isinstance(other, KTable) or other._builder is not self._builder:
            raise TopologyError(
                f"KTable.{method}() needs a KTable from the same StreamsBuilder, got {type(other).__name__}"
            )
        _check_callable(f"KTable.{method}() joiner", joiner)
        if self.windows is not None or other.windows is not None:
            raise TopologyError(
                f"KTable.{method}() of windowed tables is not supported; join the tables "
                "before windowing, or use to_stream() and a stream join"
            )
        builder, fn = self._builder, key_joiner(joiner, with_key)
        value = serde_from(value)
        spec = None if store is None else _store_spec(builder, store, self.key_serde, value, False, None)
        if foreign_key is not None:
            _check_callable(f"KTable.{method}() foreign_key", foreign_key)
            left, right = self._materialized(), other._materialized()
            left._enable_old_values()
            node, store_name, options = foreign_key_join(builder, kind, left, right, foreign_key, fn, spec, name)
            return KTable(builder, node, store_name, self.key_serde, spec.value if spec else value, options)
        left, right = self._materialized(), other._materialized()
        left._enable_old_values()  # a row that goes away turns into the tombstone of its result
        right._enable_old_values()
        assert left.store_name is not None and right.store_name is not None
        prefix = {"inner": "KTABLE-JOIN", "left": "KTABLE-LEFTJOIN", "outer": "KTABLE-OUTERJOIN"}[kind]
        this = f"{name}-join-this" if name else builder.new_name(prefix + "THIS")
        that = f"{name}-join-other" if name else builder.new_name(prefix + "OTHER")
        result = TableOptions()
        sides = TableOptions() if spec is not None else result  # a materialized result finds old values itself
        lstore, rstore = left.store_name, right.store_name
        topology = builder.topology
        topology.add_processor(this, lambda: TableJoinProcessor(rstore, fn, kind, True, sides), left.node)
        topology.add_processor(that, lambda: TableJoinProcessor(lstore, fn, kind, False, sides), right.node)
        topology.connect_processor_and_state_stores(this, stores=[rstore])
        topology.connect_processor_and_state_stores(that, stores=[lstore])
        merge = name or builder.new_name("KTABLE-MERGE")
        if spec is None:
            topology.add_processor(merge, PassThroughProcessor, this, that)
            return KTable(builder, merge, None, self.key_serde, value, result)
        store_name = spec.name
        topology.add_processor(merge, lambda: TableMaterializeProcessor(store_name, result), this, that)
        topology.add_state_store(spec, merge)
        return KTable(builder, merge, store_name, self.key_serde, spec.value, result)

    def to_stream(self, *, name: str | None = None) -> KStream:
        """The table's updates as a stream (a delete is a record with value None)."""
        node = name or self._builder.new_name("KTABLE-TOSTREAM")
        self._builder.topology.add_processor(node, ToStreamProcessor, self.node)
        return KStream(self._builder, node, self.key_serde, self.value_serde, False)


class KGroupedTable:
    """A re-grouped table, ready for ``count``, ``reduce(add, subtract)`` or ``aggregate(initial, add,
    subtract)``. Updates reach the aggregation through a repartition topic as (new, old) pairs."""

    def __init__(self, builder: Builder, node: str, key: Any, value: Any, name: str | None) -> None:
        self._builder = builder
        self.node = node
        self.key_serde = key
        self.value_serde = value
        self.name = name

    def _aggregate(
        self,
        prefix: str,
        initializer: Callable[[], Any] | None,
        adder: Callable[[Any, Any, Any], Any],
        subtractor: Callable[[Any, Any, Any], Any],
        spec: StoreSpec,
        named_store: bool,
    ) -> KTable:
        builder = self._builder
        topic = _repartition_topic(builder, self.name, spec, named_store, prefix)
        value = self.value_serde if self.value_serde is not None else builder.topology.default_value
        parent = builder.repartition(self.node, topic, None, self.key_serde, ChangeSerde(value))
        node = builder.new_name(prefix)
        cache = spec.cache
        options = TableOptions()
        builder.topology.add_processor(
            node, lambda: TableAggregateProcessor(spec.name, initializer, adder, subtractor, cache, options), parent
        )
        builder.topology.add_state_store(spec, node)
        return KTable(builder, node, spec.name, spec.key, spec.value, options)

    def count(
        self, *, store: str | StoreSpec | None = None, kind: str | None = None, cache: bool | None = None
    ) -> KTable:
        """Rows per group (a row that leaves a group decrements it)."""
        spec = _store_spec(self._builder, store, self.key_serde, INT, cache, kind)
        return self._aggregate("KTABLE-AGGREGATE", _zero, _count, _uncount, spec, store is not None)

    def reduce(
        self,
        add: Callable[[Any, Any], Any],
        subtract: Callable[[Any, Any], Any],
        *,
        store: str | StoreSpec | None = None,
        value: Any = None,
        kind: str | None = None,
        cache: bool | None = None,
    ) -> KTable:
        """``add(aggregate, value)`` for a row joining the group, ``subtract(aggregate, value)`` for one leaving."""
        _check_callable("reduce() add", add)
        _check_callable("reduce() subtract", subtract)
        spec = _store_spec(self._builder, store, self.key_serde, serde_from(value) or self.value_serde, cache, kind)
        return self._aggregate(
            "KTABLE-REDUCE",
            None,
            lambda k, v, agg: add(agg, v),
            lambda k, v, agg: subtract(agg, v),
            spec,
            store is not None,
        )

    def aggregate(
        self,
        initial: Callable[[], Any],
        add: Callable[[Any, Any, Any], Any],
        subtract: Callable[[Any, Any, Any], Any],
        *,
        store: str | StoreSpec | None = None,
        value: Any = None,
        kind: str | None = None,
        cache: bool | None = None,
    ) -> KTable:
        """``add(key, value, aggregate)`` / ``subtract(key, value, aggregate)``, from ``initial()``."""
        _check_callable("aggregate() initial", initial)
        _check_callable("aggregate() add", add)
        _check_callable("aggregate() subtract", subtract)
        spec = _store_spec(self._builder, store, self.key_serde, serde_from(value), cache, kind)
        return self._aggregate("KTABLE-AGGREGATE", initial, add, subtract, spec, store is not None)


def _uncount(key: Any, value: Any, agg: int) -> int:
    return agg - 1
