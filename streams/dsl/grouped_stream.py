"""``KGroupedStream``: a stream grouped by key, aggregated into a table or windowed (``windowed_by``).

Generic in the class of the tables it makes (``TableT``, ``KTable`` as ``KStream.group_by`` makes it), so that
this module does not import the ``KTable`` class, which makes ``KStream``s, which make grouped streams."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic

from streams.dsl.aggregation import GroupedSource, add_one, reducing, store_spec, zero
from streams.dsl.base import Builder, check_callable
from streams.dsl.ktable import TableT
from streams.dsl.windowed_stream import SessionWindowedKStream, TimeWindowedKStream
from streams.record_serdes import INT, serde_from
from streams.table_ops import AggregateProcessor
from streams.topology import StoreSpec
from streams.windows import EmitStrategy, SessionWindows, SlidingWindows, TimeWindows, Windows

__all__ = ["KGroupedStream"]


class KGroupedStream(GroupedSource, Generic[TableT]):
    """A stream grouped by key, ready for ``count``, ``reduce`` or ``aggregate`` into a table, or for
    ``windowed_by`` to aggregate per time window."""

    def __init__(
        self,
        builder: Builder,
        node: str,
        key: Any,
        value: Any,
        repartition_required: bool,
        name: str | None,
        tables: type[TableT],
    ) -> None:
        super().__init__(builder, node, key, value, repartition_required, name)
        self._tables = tables

    def _aggregate(
        self,
        prefix: str,
        initializer: Callable[[], Any] | None,
        adder: Callable[[Any, Any, Any], Any],
        spec: StoreSpec,
        named_store: bool,
    ) -> TableT:
        parent = self._source(spec, named_store, prefix)
        name, cache = spec.name, spec.cache
        return self._tables.stored(
            self._builder,
            self._builder.new_name(prefix),
            parent,
            lambda o: AggregateProcessor(name, initializer, adder, cache, o),
            spec,
            spec.key,
        )

    def count(
        self, *, store: str | StoreSpec | None = None, kind: str | None = None, cache: bool | None = None
    ) -> TableT:
        """The number of records per key (as 8-byte longs, like Kafka Streams)."""
        spec = store_spec(self._builder, store, self.key_serde, INT, cache, kind)
        return self._aggregate("KSTREAM-AGGREGATE", zero, add_one, spec, store is not None)

    def reduce(
        self,
        reducer: Callable[[Any, Any], Any],
        *,
        store: str | StoreSpec | None = None,
        value: Any = None,
        kind: str | None = None,
        cache: bool | None = None,
    ) -> TableT:
        """``reducer(aggregate, value) -> aggregate``, starting from the key's first value."""
        check_callable("reduce()", reducer)
        spec = store_spec(self._builder, store, self.key_serde, serde_from(value) or self.value_serde, cache, kind)
        return self._aggregate("KSTREAM-REDUCE", None, reducing(reducer), spec, store is not None)

    def aggregate(
        self,
        initial: Callable[[], Any],
        add: Callable[[Any, Any, Any], Any],
        *,
        store: str | StoreSpec | None = None,
        value: Any = None,
        kind: str | None = None,
        cache: bool | None = None,
    ) -> TableT:
        """``add(key, value, aggregate) -> aggregate``, starting from ``initial()`` per key."""
        check_callable("aggregate() initial", initial)
        check_callable("aggregate() add", add)
        spec = store_spec(self._builder, store, self.key_serde, serde_from(value), cache, kind)
        return self._aggregate("KSTREAM-AGGREGATE", initial, add, spec, store is not None)

    def windowed_by(self, windows: Windows) -> TimeWindowedKStream[TableT] | SessionWindowedKStream[TableT]:
        """Aggregate per window: ``TimeWindows`` (tumbling, hopping) and ``SlidingWindows`` give a
        ``TimeWindowedKStream``, ``SessionWindows`` a ``SessionWindowedKStream``."""
        if isinstance(windows, SessionWindows):
            return SessionWindowedKStream(self, windows, EmitStrategy.ON_WINDOW_UPDATE, self._tables)
        if isinstance(windows, TimeWindows | SlidingWindows):
            return TimeWindowedKStream(self, windows, EmitStrategy.ON_WINDOW_UPDATE, self._tables)
        raise TypeError(f"windowed_by() needs TimeWindows, SlidingWindows or SessionWindows, got {windows!r}")
