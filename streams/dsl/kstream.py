"""The ``KStream`` family: ``KStreamBase``, the stream operations that give a stream (every method adds a
node to the topology and returns the stream after it): stateless operations, sinks and repartitioning, and
the joins (with a stream in ``JoinWindows``, with a table, with a global table). They are typed ``Self``, so
that they return the user's ``KStream``; ``KStream`` itself (``streams/dsl/api.py``) adds grouping, the
operations that leave the family.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import timedelta
from typing import Any, Self

from streams.dsl.base import AbstractStream, Builder, check_callable
from streams.dsl.ktable import KTableBase
from streams.errors import TopologyError
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
from streams.record_serdes import serde_from
from streams.stream_joins import (
    JoinEmission,
    LeftOrRightSerde,
    StreamStreamJoinProcessor,
    StreamTableJoinProcessor,
)
from streams.table_joins import Joiner, key_joiner
from streams.topology import JoinBufferSpec, Partitioner, VersionedStoreSpec, WindowStoreSpec
from streams.windows import to_millis

__all__ = ["KStreamBase"]


class KStreamBase(AbstractStream):
    """A stream of key-value records. Every method adds a node and returns a new stream."""

    def __init__(self, builder: Builder, node: str, key: Any, value: Any, repartition_required: bool) -> None:
        super().__init__(builder, node, key, value)
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
    ) -> Self:
        node = name or self._builder.new_name(prefix)
        self._builder.topology.add_processor(node, supplier, *(parents or (self.node,)))
        rep = self.repartition_required if repartition is None else repartition
        return type(self)(self._builder, node, key, value, rep)

    def _add_same_serdes(self, prefix: str, supplier: Callable[[], Processor], name: str | None) -> Self:
        """A node that passes records on as they are (filter, peek, branch): the stream keeps its serdes."""
        return self._add(prefix, supplier, name, key=self.key_serde, value=self.value_serde)

    # -- stateless -------------------------------------------------------------------------------------

    def filter(self, predicate: Callable[[Any, Any], bool], *, name: str | None = None) -> Self:
        """Keep records for which ``predicate(key, value)`` is true."""
        check_callable("filter()", predicate)
        return self._add_same_serdes("KSTREAM-FILTER", lambda: FilterProcessor(predicate), name)

    def filter_not(self, predicate: Callable[[Any, Any], bool], *, name: str | None = None) -> Self:
        check_callable("filter_not()", predicate)
        return self._add_same_serdes("KSTREAM-FILTER", lambda: FilterProcessor(predicate, negate=True), name)

    def map(self, mapper: Callable[[Any, Any], tuple[Any, Any]], *, name: str | None = None) -> Self:
        """``mapper(key, value) -> (new_key, new_value)``; marks the stream for repartitioning."""
        check_callable("map()", mapper)
        return self._add("KSTREAM-MAP", lambda: MapProcessor(mapper), name, key=None, value=None, repartition=True)

    def map_values(self, mapper: Callable[[Any], Any], *, name: str | None = None) -> Self:
        """``mapper(value) -> new_value``; keys stay, so no repartitioning."""
        check_callable("map_values()", mapper)
        return self._add("KSTREAM-MAPVALUES", lambda: MapValuesProcessor(mapper), name, key=self.key_serde, value=None)

    def flat_map(self, mapper: Callable[[Any, Any], Iterable[tuple[Any, Any]]], *, name: str | None = None) -> Self:
        """``mapper(key, value) -> iterable of (key, value)``; marks the stream for repartitioning."""
        check_callable("flat_map()", mapper)
        return self._add(
            "KSTREAM-FLATMAP", lambda: FlatMapProcessor(mapper), name, key=None, value=None, repartition=True
        )

    def flat_map_values(self, mapper: Callable[[Any], Iterable[Any]], *, name: str | None = None) -> Self:
        """``mapper(value) -> iterable of values``, each with the record's key."""
        check_callable("flat_map_values()", mapper)
        return self._add(
            "KSTREAM-FLATMAPVALUES", lambda: FlatMapValuesProcessor(mapper), name, key=self.key_serde, value=None
        )

    def peek(self, action: Callable[[Any, Any], None], *, name: str | None = None) -> Self:
        """Call ``action(key, value)`` for each record and pass it on unchanged."""
        check_callable("peek()", action)
        return self._add_same_serdes("KSTREAM-PEEK", lambda: PeekProcessor(action), name)

    def foreach(self, action: Callable[[Any, Any], None], *, name: str | None = None) -> None:
        """Call ``action(key, value)`` for each record (a terminal operation)."""
        check_callable("foreach()", action)
        self._add("KSTREAM-FOREACH", lambda: PeekProcessor(action), name, key=None, value=None)

    def select_key(self, selector: Callable[[Any, Any], Any], *, name: str | None = None) -> Self:
        """New key ``selector(key, value)``, same value; marks the stream for repartitioning."""
        check_callable("select_key()", selector)
        return self._add(
            "KSTREAM-KEY-SELECT",
            lambda: SelectKeyProcessor(selector),
            name,
            key=None,
            value=self.value_serde,
            repartition=True,
        )

    def branch(self, *predicates: Callable[[Any, Any], bool], name: str | None = None) -> list[Self]:
        """One stream per predicate; a record goes to the first branch whose predicate holds (or none)."""
        if not predicates:
            raise TopologyError("branch() needs at least one predicate")
        for p in predicates:
            check_callable("branch()", p)
        preds = list(predicates)
        branch = self._add_same_serdes("KSTREAM-BRANCH", lambda: BranchProcessor(preds), name)
        return [
            branch._add_same_serdes("KSTREAM-BRANCHCHILD", PassThroughProcessor, f"{name}-{i}" if name else None)
            for i in range(len(preds))
        ]

    def merge(self, other: Self, *, name: str | None = None) -> Self:
        """Records of both streams (in arrival order)."""
        if not isinstance(other, KStreamBase) or other._builder is not self._builder:
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
    ) -> Self:
        """Run a ``Processor`` (processor API) on the stream; what it forwards is the new stream."""
        check_callable("process()", supplier)
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
        key, value = self._serdes_or_own(key, value)
        self._builder.topology.add_sink(node, topic, self.node, key=key, value=value, partitioner=partitioner)

    def through(
        self, topic: str, *, key: Any = None, value: Any = None, partitioner: Partitioner | None = None
    ) -> Self:
        """Write to a user-managed ``topic`` and continue from it (a new sub-topology)."""
        key, value = self._serdes_or_own(key, value)
        self.to(topic, key=key, value=value, partitioner=partitioner)
        return type(self)(self._builder, self._builder.source([topic], key=key, value=value), key, value, False)

    def repartition(
        self, *, name: str | None = None, partitions: int | None = None, key: Any = None, value: Any = None
    ) -> Self:
        """Send the stream through an internal topic ``<application_id>-<name>-repartition`` so that
        records are partitioned by their current key."""
        key, value = self._serdes_or_own(key, value)
        topic = name or self._builder.new_name("KSTREAM-REPARTITION")
        node = self._builder.repartition(self.node, topic, partitions, key, value)
        return type(self)(self._builder, node, key, value, False)

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
        grace: timedelta | int | None = None,
    ) -> Self:
        """Inner join: with a ``KStream`` within ``windows`` (``JoinWindows``), or with a ``KTable`` (the
        table's current row for the record's key; a versioned table's row as of the record's timestamp;
        ``grace``: stream records wait that long, by stream time, before they join, so that table updates
        arriving late still count (KIP-923; the table must be versioned, its history retention at least the
        grace)); ``joiner(value, other)``, or ``joiner(key, value,
        other)`` with ``with_key=True``; a stream whose key was changed is repartitioned first. With a
        ``GlobalKTable``: ``join(global_table, key_selector, joiner)``, where ``key_selector(key, value)``
        gives the global table's key; records without a row are dropped; no co-partitioning is needed (every
        instance holds the whole global table)."""
        return self._join_any("join", other, joiner, windows, with_key, name, left=False, grace=grace)

    def left_join(
        self,
        other: Any,
        joiner: Callable[..., Any],
        windows: Any = None,
        *,
        with_key: bool = False,
        name: str | None = None,
        grace: timedelta | int | None = None,
    ) -> Self:
        """As ``join``, but every record of this stream gives a result: ``other`` is None when nothing
        joined (with a stream: emitted once the record's window has closed, window end + grace)."""
        return self._join_any("left_join", other, joiner, windows, with_key, name, left=True, grace=grace)

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
        grace: timedelta | int | None = None,
    ) -> Self:
        if grace is not None and not isinstance(other, KTableBase):
            raise TypeError(
                f"{method}() takes grace= only with a versioned KTable (a stream-stream join's grace is in its "
                f"JoinWindows), got {type(other).__name__}"
            )
        if isinstance(other, GlobalKTable) or callable(third):
            # join(global_table, key_selector, joiner): the second argument selects the key
            return self._join_global(method, other, joiner, third, with_key, name, left=left)
        return self._join(method, other, joiner, third, with_key, name, left=left, outer=False, grace=grace)

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
    ) -> Self:
        if not isinstance(other, GlobalKTable):
            raise TypeError(
                f"KStream.{method}() with a key selector needs a GlobalKTable "
                f"(StreamsBuilder.global_table(...)), got {type(other).__name__}"
            )
        if other.builder is not self._builder:
            raise TopologyError(f"KStream.{method}() needs a GlobalKTable from the same StreamsBuilder")
        check_callable(f"{method}() key selector", key_selector)
        check_callable(f"{method}() joiner", joiner)
        store, fn = other.store_name, key_joiner(joiner, with_key)
        joined = self._add(
            "KSTREAM-LEFTJOIN" if left else "KSTREAM-JOIN",
            lambda: StreamGlobalJoinProcessor(store, key_selector, fn, left),
            name,
            key=self.key_serde,
            value=None,
        )
        if left:
            self._builder.relaxed_null_key_joins.add(joined.node)
        return joined

    def outer_join(
        self,
        other: KStreamBase,
        joiner: Callable[..., Any],
        windows: JoinWindows,
        *,
        with_key: bool = False,
        name: str | None = None,
    ) -> Self:
        """Windowed outer join of two streams: records of either side that join nothing are emitted with
        None for the other side once their window has closed."""
        if not isinstance(other, KStreamBase):
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
        grace: timedelta | int | None = None,
    ) -> Self:
        check_callable(f"{what}() joiner", joiner)
        keyed = key_joiner(joiner, with_key)
        if isinstance(other, KStreamBase):
            if not isinstance(windows, JoinWindows):
                raise TypeError(
                    f"{what}() of two streams needs JoinWindows (e.g. JoinWindows."
                    f"of_time_difference_and_grace(...)), got {windows!r}"
                )
            if other._builder is not self._builder:
                raise TopologyError(f"{what}() needs a KStream from the same StreamsBuilder")
            return self._stream_stream_join(other, keyed, windows, name, left, outer)
        if isinstance(other, KTableBase):
            if windows is not None:
                raise TypeError(f"{what}() with a KTable takes no windows, got {windows!r}")
            if other._builder is not self._builder:
                raise TopologyError(f"{what}() needs a KTable from the same StreamsBuilder")
            return self._stream_table_join(other, keyed, name, left, grace, what)
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
        other: KStreamBase,
        joiner: Joiner,
        windows: JoinWindows,
        name: str | None,
        left: bool,
        outer: bool,
    ) -> Self:
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
        emissions: dict[str, JoinEmission] = {}  # per task, shared by the two sides (the emit throttle)
        topology.add_processor(
            this_node,
            lambda: StreamStreamJoinProcessor(
                this_store, other_store, outer_store, windows, joiner, True, left, outer, emissions
            ),
            left_src,
        )
        topology.add_processor(
            other_node,
            lambda: StreamStreamJoinProcessor(
                other_store, this_store, outer_store, windows, joiner, False, outer, left, emissions
            ),
            right_src,
        )
        if left:
            builder.relaxed_null_key_joins.update((this_node, other_node))
        for store, value in ((this_store, self.value_serde), (other_store, other.value_serde)):
            topology.add_state_store(
                WindowStoreSpec(
                    store, key=key, value=value, window_size_ms=size, retention_ms=retention, retain_duplicates=True
                ),
                this_node,
                other_node,
            )
        if outer_store is not None:
            values = LeftOrRightSerde(topology.value_serde(self.value_serde), topology.value_serde(other.value_serde))
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
        self, table: KTableBase, joiner: Joiner, name: str | None, left: bool, grace: timedelta | int | None, what: str
    ) -> Self:
        table = table._materialized()  # a derived table (filter, map_values, ...) gets a store to look rows up in
        key = self.key_serde if self.key_serde is not None else table.key_serde
        store = table.store_name
        assert store is not None
        grace_ms = None if grace is None else self._grace_ms(store, grace, what)
        source = self._join_source(name, "left", key)
        topology = self._builder.topology
        node = name or self._builder.new_name("KSTREAM-JOIN")
        stores = [store]
        buffer = None
        if grace_ms is not None:
            buffer = f"{node}-Buffer" if name else f"{node}-BUFFER-store"
            stores.append(buffer)
        topology.add_processor(
            node, lambda: StreamTableJoinProcessor(store, joiner, left, buffer, grace_ms or 0), source
        )
        if left:
            self._builder.relaxed_null_key_joins.add(node)
        topology.connect_processor_and_state_stores(node, stores=[store])
        if buffer is not None:
            topology.add_state_store(JoinBufferSpec(buffer, key=key, value=self.value_serde), node)
        return type(self)(self._builder, node, key, None, False)

    def _grace_ms(self, store: str, grace: timedelta | int, what: str) -> int:
        """The grace of a stream-table join, checked as Kafka checks it: the table must be versioned, and keep
        its history at least as long as the grace."""
        grace_ms = to_millis(grace, f"{what}() grace")
        spec = self._builder.topology.stores[store]
        if not isinstance(spec, VersionedStoreSpec):
            raise TopologyError(
                f"{what}() with grace={grace_ms} ms: the KTable must be versioned to use a grace period in a "
                f"stream-table join (its store {store!r} is not): materialize it with "
                f"store=VersionedStoreSpec(name, history_retention=...)"
            )
        if spec.history_retention_ms < grace_ms:
            raise TopologyError(
                f"{what}() with grace={grace_ms} ms: history retention must be at least grace period "
                f"(store {store!r} keeps {spec.history_retention_ms} ms)"
            )
        return grace_ms
