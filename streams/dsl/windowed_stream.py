"""The windowed streams: ``TimeWindowedKStream`` (``TimeWindows``, ``SlidingWindows``) and
``SessionWindowedKStream`` (``SessionWindows``), grouped streams aggregated per window into a table keyed by
``Windowed(key, window)`` with the windowed key serde (Kafka Streams' byte layout). Generic in the class of
the tables they make (``TableT``), as ``KGroupedStream``."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any, Generic, Self

from streams.dsl.aggregation import GroupedSource, add_one, reducing, store_spec, zero
from streams.dsl.base import check_callable
from streams.dsl.ktable import TableT
from streams.errors import TopologyError
from streams.processor import Processor
from streams.record_serdes import INT, serde_from
from streams.table_ops import TableOptions
from streams.topology import SessionStoreSpec, StoreSpec, WindowStoreSpec
from streams.window_ops import (
    Adder,
    Initializer,
    SessionWindowAggregateProcessor,
    SlidingWindowAggregateProcessor,
    TimeWindowAggregateProcessor,
)
from streams.windowed_serdes import SessionWindowedSerde, TimeWindowedSerde
from streams.windows import EmitStrategy, SessionWindows, SlidingWindows, TimeWindows, Windows, to_millis

__all__ = ["SessionWindowedKStream", "TimeWindowedKStream"]


class _WindowedStream(Generic[TableT]):
    """What ``TimeWindowedKStream`` and ``SessionWindowedKStream`` share: the grouped stream, ``count`` and
    ``reduce``, and the plumbing of every aggregation (its window store and the result table). A subclass
    says how long its windows are kept, which processor aggregates them and how its keys are serialized."""

    _prefix = "KSTREAM-AGGREGATE"

    def __init__(self, grouped: GroupedSource, windows: Windows, emit: EmitStrategy, tables: type[TableT]) -> None:
        self._grouped = grouped
        self.windows = windows
        self._emit = emit
        self._tables = tables

    def emit_strategy(self, strategy: EmitStrategy | str) -> Self:
        """``"on_window_update"`` (default: every update) or ``"on_window_close"`` (each window's final
        result, once, when it closes)."""
        return type(self)(self._grouped, self.windows, EmitStrategy.of(strategy), self._tables)

    def count(
        self,
        *,
        store: str | StoreSpec | None = None,
        kind: str | None = None,
        cache: bool | None = None,
        retention: timedelta | int | None = None,
        emit_strategy: EmitStrategy | str | None = None,
    ) -> TableT:
        """Records per key and window (merged sessions add their counts). ``retention``: how long windows are
        kept (default: size + grace; sliding windows: 2 * time difference + grace; sessions: inactivity gap +
        grace)."""
        return self._aggregate(zero, add_one, _sum, INT, store, kind, cache, retention, emit_strategy)

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
    ) -> TableT:
        """``reducer(aggregate, value)``; merging sessions reduces their aggregates the same way."""
        check_callable("reduce()", reducer)
        add = reducing(reducer)
        return self._aggregate(
            None,
            add,
            lambda k, one, two: add(k, two, one),
            serde_from(value) or self._grouped.value_serde,
            store,
            kind,
            cache,
            retention,
            emit_strategy,
        )

    def _aggregate(
        self,
        initializer: Initializer,
        adder: Adder,
        merger: Adder | None,
        value: Any,
        store: str | StoreSpec | None,
        kind: str | None,
        cache: bool | None,
        retention: timedelta | int | None,
        emit_strategy: EmitStrategy | str | None,
    ) -> TableT:
        """The aggregation's store, its node (reading the repartition topic if the key changed) and table;
        ``merger`` combines the aggregates of sessions that merge (None: time windows, which never do)."""
        grouped = self._grouped
        named = store is not None
        spec = self._window_spec(store_spec(grouped._builder, store, grouped.key_serde, value, cache, kind), retention)
        strategy = self._emit if emit_strategy is None else EmitStrategy.of(emit_strategy)
        processor = self._processor(
            spec.name, initializer, adder, merger, spec.cache, strategy is EmitStrategy.ON_WINDOW_CLOSE
        )
        key = grouped._builder.topology.key_serde(grouped.key_serde)
        parent = grouped._source(spec, named, self._prefix)
        node = grouped._builder.new_name(self._prefix)
        key_serde = self._key_serde(key, spec)
        return self._tables.stored(grouped._builder, node, parent, processor, spec, key_serde, self.windows)

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

    def _window_spec(self, base: StoreSpec, retention: timedelta | int | None) -> StoreSpec:
        """The window or session store made from the key-value spec ``base`` (name, kind, serdes, cache)."""
        raise NotImplementedError

    def _processor(
        self, store: str, initializer: Initializer, adder: Adder, merger: Adder | None, cache: bool, final: bool
    ) -> Callable[[TableOptions], Processor]:
        raise NotImplementedError

    def _key_serde(self, inner: Any, spec: StoreSpec) -> Any:
        """The result table's key serde over the grouped stream's key serde ``inner``."""
        raise NotImplementedError


def _copied(base: StoreSpec) -> dict[str, Any]:
    """What a window or session store takes over from the key-value spec ``store_spec`` made."""
    return {
        "name": base.name,
        "kind": base.kind,
        "key": base.key,
        "value": base.value,
        "logged": base.logged,
        "cache": base.cache,
    }


class TimeWindowedKStream(_WindowedStream[TableT]):
    """A grouped stream over ``TimeWindows`` or ``SlidingWindows``; aggregations give a table keyed by
    ``Windowed(key, TimeWindow)``."""

    windows: TimeWindows | SlidingWindows

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
    ) -> TableT:
        """``add(key, value, aggregate) -> aggregate`` per window, from ``initial()``."""
        check_callable("aggregate() initial", initial)
        check_callable("aggregate() add", add)
        return self._aggregate(initial, add, None, serde_from(value), store, kind, cache, retention, emit_strategy)

    def _window_spec(self, base: StoreSpec, retention: timedelta | int | None) -> WindowStoreSpec:
        w = self.windows
        if isinstance(w, TimeWindows):
            size, minimum, why = w.size_ms, w.size_ms + w.grace_ms, "its window size plus the grace period"
        else:
            size = w.time_difference_ms
            minimum, why = 2 * size + w.grace_ms, "2 * time difference plus the grace period"
        ms = self._retention(base, retention, minimum, why)
        return WindowStoreSpec(**_copied(base), window_size_ms=size, retention_ms=ms)

    def _processor(
        self, store: str, initializer: Initializer, adder: Adder, merger: Adder | None, cache: bool, final: bool
    ) -> Callable[[TableOptions], Processor]:
        w = self.windows
        if isinstance(w, TimeWindows):
            return lambda o: TimeWindowAggregateProcessor(store, initializer, adder, cache, o, w, emit_final=final)
        return lambda o: SlidingWindowAggregateProcessor(store, initializer, adder, cache, o, w, emit_final=final)

    def _key_serde(self, inner: Any, spec: StoreSpec) -> TimeWindowedSerde:
        assert isinstance(spec, WindowStoreSpec)
        return TimeWindowedSerde(inner, spec.window_size_ms)


class SessionWindowedKStream(_WindowedStream[TableT]):
    """A grouped stream over ``SessionWindows``; aggregations give a table keyed by
    ``Windowed(key, SessionWindow)``, in which merged sessions are deleted."""

    windows: SessionWindows

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
    ) -> TableT:
        """``add(key, value, aggregate)`` per session, from ``initial()``; ``merge(key, agg1, agg2)``
        combines the aggregates of sessions that a record joins together."""
        check_callable("aggregate() initial", initial)
        check_callable("aggregate() add", add)
        check_callable("aggregate() merge", merge)
        return self._aggregate(initial, add, merge, serde_from(value), store, kind, cache, retention, emit_strategy)

    def _window_spec(self, base: StoreSpec, retention: timedelta | int | None) -> SessionStoreSpec:
        w = self.windows
        ms = self._retention(
            base, retention, w.inactivity_gap_ms + w.grace_ms, "the session inactivity gap plus the grace period"
        )
        return SessionStoreSpec(**_copied(base), retention_ms=ms)

    def _processor(
        self, store: str, initializer: Initializer, adder: Adder, merger: Adder | None, cache: bool, final: bool
    ) -> Callable[[TableOptions], Processor]:
        w = self.windows
        assert merger is not None
        return lambda o: SessionWindowAggregateProcessor(
            store, initializer, adder, cache, o, w, merger, emit_final=final
        )

    def _key_serde(self, inner: Any, spec: StoreSpec) -> SessionWindowedSerde:
        return SessionWindowedSerde(inner)


def _sum(key: Any, one: int, two: int) -> int:
    return one + two
