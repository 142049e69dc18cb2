"""``KStream`` and ``KTable``, the DSL's two classes that make each other: a stream becomes a table through an
aggregation (``group_by`` -> ``KGroupedStream`` -> ``count`` ...), and a table a stream through ``to_stream``.

Their operations within a family live beside their family (``KStreamBase`` in ``kstream.py``, ``KTableBase``
in ``ktable.py``, typed ``Self`` so that they return these classes); here are only the operations that leave it,
so that the family modules import one another in one direction and this module imports them all.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from streams.dsl.aggregation import store_spec
from streams.dsl.base import check_callable
from streams.dsl.grouped_stream import KGroupedStream
from streams.dsl.grouped_table import KGroupedTable
from streams.dsl.kstream import KStreamBase
from streams.dsl.ktable import KTableBase
from streams.record_serdes import serde_from
from streams.table_ops import TableRepartitionMapProcessor, TableSourceProcessor, ToStreamProcessor
from streams.topology import StoreSpec

__all__ = ["KStream", "KTable"]


class KStream(KStreamBase):
    """A stream of key-value records. Every method adds a node and returns a new stream."""

    def group_by_key(self, *, key: Any = None, value: Any = None, name: str | None = None) -> KGroupedStream[KTable]:
        """Group by the current key (repartitioning first if the key was changed upstream)."""
        key, value = self._serdes_or_own(key, value)
        return KGroupedStream(self._builder, self.node, key, value, self.repartition_required, name, KTable)

    def group_by(
        self, selector: Callable[[Any, Any], Any], *, key: Any = None, value: Any = None, name: str | None = None
    ) -> KGroupedStream[KTable]:
        """Group by ``selector(key, value)``; always repartitions (the key is new)."""
        check_callable("group_by()", selector)
        selected = self.select_key(selector)
        value = serde_from(value) or self.value_serde
        return KGroupedStream(self._builder, selected.node, serde_from(key), value, True, name, KTable)

    def to_table(
        self,
        *,
        store: str | StoreSpec | None = None,
        kind: str | None = None,
        cache: bool = True,
        name: str | None = None,
    ) -> KTable:
        """This stream as a table (Kafka Streams' ``toTable``): each record is the key's new value (None
        deletes), kept in a store (``store``: its name or spec; queryable by that name). Records with a null
        key are dropped and counted; a stream whose key was changed is repartitioned first."""
        spec = store_spec(self._builder, store, self.key_serde, self.value_serde, cache, kind)
        if store is None:
            spec.name = self._builder.new_name("KSTREAM-TOTABLE-STATE-STORE")
        source = self._join_source(name, "repartition", self.key_serde)
        node = name or self._builder.new_name("KSTREAM-TOTABLE")
        store_name, use_cache = spec.name, spec.cache
        return KTable.stored(
            self._builder, node, source, lambda o: TableSourceProcessor(store_name, use_cache, o), spec, self.key_serde
        )


class KTable(KTableBase):
    """The latest value per key. Updates flow downstream as they happen (merged per key per commit when
    the store caches). A windowed aggregation's table also knows its ``windows``."""

    def group_by(
        self,
        selector: Callable[[Any, Any], tuple[Any, Any]],
        *,
        key: Any = None,
        value: Any = None,
        name: str | None = None,
    ) -> KGroupedTable[KTable]:
        """Re-group the table: ``selector(key, value) -> (group key, group value)``. Aggregations of the
        result subtract a row's old value from its old group and add its new value to its new group, so a
        row that moves between groups leaves the first and joins the second."""
        check_callable("group_by()", selector)
        self._enable_old_values()
        node = self._builder.new_name("KTABLE-SELECT")
        self._builder.topology.add_processor(node, lambda: TableRepartitionMapProcessor(selector), self.node)
        return KGroupedTable(self._builder, node, serde_from(key), serde_from(value), name, KTable)

    def to_stream(self, *, name: str | None = None) -> KStream:
        """The table's updates as a stream (a delete is a record with value None)."""
        node = name or self._builder.new_name("KTABLE-TOSTREAM")
        self._builder.topology.add_processor(node, ToStreamProcessor, self.node)
        return KStream(self._builder, node, self.key_serde, self.value_serde, False)
