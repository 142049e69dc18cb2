"""The ``KTable`` family: ``KTableBase``, the table operations that give a table (filter, map_values,
suppress, the joins with other tables, on the key or on a foreign key), typed ``Self`` so that they return
the user's ``KTable``. ``KTable`` itself (``streams/dsl/api.py``) adds the operations that leave the family,
``to_stream`` and ``group_by``.

Every other family makes tables: they build them with ``KTableBase.stored`` on the table class they are
given (``TableT``), so that none of them imports the class that also makes them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, Self, TypeVar

from streams.dsl.aggregation import store_spec
from streams.dsl.base import AbstractStream, Builder, check_callable
from streams.errors import TopologyError
from streams.fk_join import foreign_key_join
from streams.ops import PassThroughProcessor
from streams.processor import Processor
from streams.record_serdes import serde_from
from streams.suppress import Suppressed, SuppressProcessor
from streams.table_joins import JOIN_KINDS, TableJoinProcessor, TableMaterializeProcessor, key_joiner
from streams.table_ops import TableFilterProcessor, TableMapValuesProcessor, TableOptions
from streams.topology import StoreSpec, SuppressionBufferSpec, VersionedStoreSpec
from streams.windows import TimeWindows, Windows

__all__ = ["KTableBase", "TableT"]


class KTableBase(AbstractStream):
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
        parent: KTableBase | None = None,
        windows: Windows | None = None,
    ) -> None:
        super().__init__(builder, node, key, value)
        self.store_name = store_name
        self.windows = windows
        self._options = options if options is not None else TableOptions()
        self._parent = parent  # where this table's old values come from, if not from its own store

    def _enable_old_values(self) -> None:
        """Have this table's updates carry the value they replace (and its parent's, which it derives them from)."""
        self._options.send_old_values = True
        if self._parent is not None:
            self._parent._enable_old_values()

    @classmethod
    def stored(
        cls,
        builder: Builder,
        node: str,
        parent: str,
        processor: Callable[[TableOptions], Processor],
        spec: StoreSpec,
        key: Any,
        windows: Windows | None = None,
    ) -> Self:
        """The table of ``node`` under ``parent``, which keeps its rows in the store ``spec`` (an aggregation, a
        materialized copy): the node's processor is ``processor(options)``; ``key`` is the table's key serde."""
        options = TableOptions()
        builder.topology.add_processor(node, lambda: processor(options), parent)
        builder.topology.add_state_store(spec, node)
        return cls(builder, node, spec.name, key, spec.value, options, windows=windows)

    def _derived(self, node: str, value: Any, options: TableOptions) -> Self:
        """The table of ``node``, a processor under this table that keeps no store of its own."""
        return type(self)(self._builder, node, None, self.key_serde, value, options, parent=self, windows=self.windows)

    def _add(self, prefix: str, supplier: Callable[[TableOptions], Processor], name: str | None, value: Any) -> Self:
        node = name or self._builder.new_name(prefix)
        options = TableOptions()
        self._builder.topology.add_processor(node, lambda: supplier(options), self.node)
        return self._derived(node, value, options)

    def filter(self, predicate: Callable[[Any, Any], bool], *, name: str | None = None) -> Self:
        """Rows failing ``predicate(key, value)`` become deletes downstream."""
        check_callable("filter()", predicate)
        versioned = isinstance(self._source_spec(), VersionedStoreSpec)
        return self._add(
            "KTABLE-FILTER", lambda o: TableFilterProcessor(predicate, False, o, versioned), name, self.value_serde
        )

    def filter_not(self, predicate: Callable[[Any, Any], bool], *, name: str | None = None) -> Self:
        check_callable("filter_not()", predicate)
        versioned = isinstance(self._source_spec(), VersionedStoreSpec)
        return self._add(
            "KTABLE-FILTER", lambda o: TableFilterProcessor(predicate, True, o, versioned), name, self.value_serde
        )

    def map_values(self, mapper: Callable[[Any], Any], *, name: str | None = None) -> Self:
        check_callable("map_values()", mapper)
        return self._add("KTABLE-MAPVALUES", lambda o: TableMapValuesProcessor(mapper, o), name, None)

    def suppress(self, suppressed: Suppressed) -> Self:
        """Hold back updates: ``Suppressed.until_window_closes()`` (one final result per window of a
        windowed table) or ``Suppressed.until_time_limit(duration)``."""
        if not isinstance(suppressed, Suppressed):
            raise TypeError(f"suppress() needs a Suppressed (Suppressed.until_window_closes()), got {suppressed!r}")
        builder = self._builder
        if self.store_name is not None and isinstance(builder.topology.stores[self.store_name], VersionedStoreSpec):
            raise TopologyError(
                f"suppress() is only supported for non-versioned KTables (store {self.store_name!r} is versioned), "
                "as in Kafka Streams"
            )
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
        # Right below a time-windowed aggregation, final results can be derived from its window store at restore.
        windows = self.store_name if suppressed.final and isinstance(self.windows, TimeWindows) else None
        builder.topology.add_processor(
            node, lambda: SuppressProcessor(store, suppressed, offset, options, windows), self.node
        )
        builder.topology.add_state_store(spec, node)
        return self._derived(node, self.value_serde, options)

    # -- joins -----------------------------------------------------------------------------------------

    def join(
        self,
        other: KTableBase,
        joiner: Callable[..., Any],
        *,
        foreign_key: Callable[[Any], Any] | None = None,
        with_key: bool = False,
        store: str | StoreSpec | None = None,
        value: Any = None,
        name: str | None = None,
    ) -> Self:
        """Inner join on the key: a row while both tables have one, ``joiner(value, other)`` (``(key,
        value, other)`` with ``with_key``); a row of either side deleted deletes the result.
        ``foreign_key(value) -> other's key``: join each row with the ``other`` row its value points to
        (Kafka Streams' foreign-key join, KIP-213); the result is keyed as this table. ``store``:
        materialize the result (queryable by that name)."""
        return self._join("inner", other, joiner, foreign_key, with_key, store, value, name)

    def left_join(
        self,
        other: KTableBase,
        joiner: Callable[..., Any],
        *,
        foreign_key: Callable[[Any], Any] | None = None,
        with_key: bool = False,
        store: str | StoreSpec | None = None,
        value: Any = None,
        name: str | None = None,
    ) -> Self:
        """As ``join``, but a row of this table without a partner is joined with None."""
        return self._join("left", other, joiner, foreign_key, with_key, store, value, name)

    def outer_join(
        self,
        other: KTableBase,
        joiner: Callable[..., Any],
        *,
        with_key: bool = False,
        store: str | StoreSpec | None = None,
        value: Any = None,
        name: str | None = None,
    ) -> Self:
        """A row while either table has one; the missing side is None in ``joiner(value, other)``."""
        return self._join("outer", other, joiner, None, with_key, store, value, name)

    def _source_spec(self) -> StoreSpec | None:
        """The store of the nearest table upstream that keeps one (None: none does)."""
        table: KTableBase | None = self
        while table is not None and table.store_name is None:
            table = table._parent
        return None if table is None or table.store_name is None else self._builder.topology.stores[table.store_name]

    def _materialized(self) -> Self:
        """This table, or (if it keeps no store) a copy of it that does: a join looks rows up there."""
        if self.store_name is not None:
            return self
        node = self._builder.new_name("KTABLE-MATERIALIZE")
        spec: StoreSpec
        source = self._source_spec()
        if isinstance(source, VersionedStoreSpec):
            # Derived from a versioned table: versioned alike (Kafka's inherited versioned materialization).
            spec = VersionedStoreSpec(
                f"{node}-STATE-STORE",
                key=self.key_serde,
                value=self.value_serde,
                history_retention=source.history_retention_ms,
                segment_interval_ms=source.segment_interval_ms,
            )
        else:
            spec = StoreSpec(f"{node}-STATE-STORE", key=self.key_serde, value=self.value_serde, cache=False)
            spec.timestamped = True
        return self.stored(
            self._builder, node, self.node, lambda o: TableMaterializeProcessor(spec.name, o), spec, self.key_serde
        )

    def _join(
        self,
        kind: str,
        other: KTableBase,
        joiner: Callable[..., Any],
        foreign_key: Callable[[Any], Any] | None,
        with_key: bool,
        store: str | StoreSpec | None,
        value: Any,
        name: str | None,
    ) -> Self:
        assert kind in JOIN_KINDS
        method = {"inner": "join", "left": "left_join", "outer": "outer_join"}[kind]
        if not isinstance(other, KTableBase) or other._builder is not self._builder:
            raise TopologyError(
                f"KTable.{method}() needs a KTable from the same StreamsBuilder, got {type(other).__name__}"
            )
        check_callable(f"KTable.{method}() joiner", joiner)
        if _without_grace(self.windows) != _without_grace(other.windows):
            raise TopologyError(
                f"KTable.{method}() needs both tables windowed alike (grace aside) or neither windowed: got "
                f"windows {self.windows!r} and {other.windows!r}; window both with the same windows"
            )
        if self.windows is not None and foreign_key is not None:
            raise TopologyError(f"KTable.{method}() with a foreign key needs tables that are not windowed")
        builder, fn = self._builder, key_joiner(joiner, with_key)
        value = serde_from(value)
        spec = None if store is None else store_spec(builder, store, self.key_serde, value, False, None)
        if foreign_key is not None:
            check_callable(f"KTable.{method}() foreign_key", foreign_key)
            left, right = self._materialized(), other._materialized()
            left._enable_old_values()
            node, store_name, options = foreign_key_join(builder, kind, left, right, foreign_key, fn, spec, name)
            return type(self)(builder, node, store_name, self.key_serde, spec.value if spec else value, options)
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
            return type(self)(builder, merge, None, self.key_serde, value, result, windows=self.windows)
        store_name = spec.name
        topology.add_processor(merge, lambda: TableMaterializeProcessor(store_name, result), this, that)
        topology.add_state_store(spec, merge)
        return type(self)(builder, merge, store_name, self.key_serde, spec.value, result, windows=self.windows)


def _without_grace(windows: Windows | None) -> Windows | None:
    """``windows`` with no grace: what decides which windows there are (a join of windowed tables matches
    windows exactly, whatever each side's grace)."""
    return None if windows is None else dataclasses.replace(windows, grace_ms=0)


TableT = TypeVar("TableT", bound=KTableBase)
"""The table class a family makes its tables of: ``KTable`` for the DSL's own classes."""
