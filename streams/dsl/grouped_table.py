"""``KGroupedTable``: a re-grouped table (``KTable.group_by``), aggregated into a table by adding a row's new
value to its group and subtracting its old one. Generic in the class of the tables it makes (``TableT``), as
``KGroupedStream``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic

from streams.change import ChangeSerde
from streams.dsl.aggregation import add_one, repartition_topic, store_spec, zero
from streams.dsl.base import AbstractStream, Builder, check_callable
from streams.dsl.ktable import TableT
from streams.record_serdes import INT, serde_from
from streams.table_ops import TableAggregateProcessor
from streams.topology import StoreSpec

__all__ = ["KGroupedTable"]


class KGroupedTable(AbstractStream, Generic[TableT]):
    """A re-grouped table, ready for ``count``, ``reduce(add, subtract)`` or ``aggregate(initial, add,
    subtract)``. Updates reach the aggregation through a repartition topic as (new, old) pairs."""

    def __init__(
        self, builder: Builder, node: str, key: Any, value: Any, name: str | None, tables: type[TableT]
    ) -> None:
        super().__init__(builder, node, key, value)
        self.name = name
        self._tables = tables

    def _aggregate(
        self,
        prefix: str,
        initializer: Callable[[], Any] | None,
        adder: Callable[[Any, Any, Any], Any],
        subtractor: Callable[[Any, Any, Any], Any],
        spec: StoreSpec,
        named_store: bool,
    ) -> TableT:
        builder = self._builder
        topic = repartition_topic(builder, self.name, spec, named_store, prefix)
        value = builder.topology.value_serde(self.value_serde)
        parent = builder.repartition(self.node, topic, None, self.key_serde, ChangeSerde(value))
        name, cache = spec.name, spec.cache
        return self._tables.stored(
            builder,
            builder.new_name(prefix),
            parent,
            lambda o: TableAggregateProcessor(name, initializer, adder, cache, o, subtractor),
            spec,
            spec.key,
        )

    def count(
        self, *, store: str | StoreSpec | None = None, kind: str | None = None, cache: bool | None = None
    ) -> TableT:
        """Rows per group (a row that leaves a group decrements it)."""
        spec = store_spec(self._builder, store, self.key_serde, INT, cache, kind)
        return self._aggregate("KTABLE-AGGREGATE", zero, add_one, _subtract_one, spec, store is not None)

    def reduce(
        self,
        add: Callable[[Any, Any], Any],
        subtract: Callable[[Any, Any], Any],
        *,
        store: str | StoreSpec | None = None,
        value: Any = None,
        kind: str | None = None,
        cache: bool | None = None,
    ) -> TableT:
        """``add(aggregate, value)`` for a row joining the group, ``subtract(aggregate, value)`` for one leaving."""
        check_callable("reduce() add", add)
        check_callable("reduce() subtract", subtract)
        spec = store_spec(self._builder, store, self.key_serde, serde_from(value) or self.value_serde, cache, kind)
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
    ) -> TableT:
        """``add(key, value, aggregate)`` / ``subtract(key, value, aggregate)``, from ``initial()``."""
        check_callable("aggregate() initial", initial)
        check_callable("aggregate() add", add)
        check_callable("aggregate() subtract", subtract)
        spec = store_spec(self._builder, store, self.key_serde, serde_from(value), cache, kind)
        return self._aggregate("KTABLE-AGGREGATE", initial, add, subtract, spec, store is not None)


def _subtract_one(key: Any, value: Any, agg: int) -> int:
    return agg - 1
