"""The windowed streams: ``TimeWindowedKStream`` (``TimeWindows``, ``SlidingWindows``) and
``SessionWindowedKStream`` (``SessionWindows``), grouped streams aggregated per window into a ``KTable``
keyed by ``Windowed(key, window)`` with the windowed key serde (Kafka Streams' byte layout)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from streams.dsl.aggregation import add_one, reducing, store_spec, zero
from streams.dsl.base import check_callable
from streams.dsl.ktable import KTable
from streams.errors import TopologyError
from streams.processor import Processor
from streams.record_serdes import INT, serde_from
from streams.table_ops import TableOptions
from streams.topology import SessionStoreSpec, StoreSpec, WindowStoreSpec
from streams.window_ops import (
    SessionWindowAggregateProcessor,
    SlidingWindowAggregateProcessor,
    TimeWindowAggregateProcessor,
)
from streams.windowed_serdes import SessionWindowedSerde, TimeWindowedSerde
from streams.windows import EmitStrategy, SessionWindows, SlidingWindows, TimeWindows, to_millis

if TYPE_CHECKING:
    from streams.dsl.grouped_stream import KGroupedStream

__all__ = ["SessionWindowedKStream", "TimeWindowedKStream", "Windows"]

Windows = TimeWindows | SlidingWindows | SessionWindows


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
        base = store_spec(self._grouped._builder, store, self._grouped.key_serde, value, cache, kind)
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
        return self._build(zero, add_one, spec, store is not None, emit_strategy)

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
        check_callable("reduce()", reducer)
        spec = self._spec(store, serde_from(value) or self._grouped.value_serde, cache, kind, retention)
        return self._build(None, reducing(reducer), spec, store is not None, emit_strategy)

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
        check_callable("aggregate() initial", initial)
        check_callable("aggregate() add", add)
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
        base = store_spec(self._grouped._builder, store, self._grouped.key_serde, value, cache, kind)
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
        return self._build(zero, add_one, _sum, spec, store is not None, emit_strategy)

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
        check_callable("reduce()", reducer)
        spec = self._spec(store, serde_from(value) or self._grouped.value_serde, cache, kind, retention)
        add = reducing(reducer)
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
        check_callable("aggregate() initial", initial)
        check_callable("aggregate() add", add)
        check_callable("aggregate() merge", merge)
        spec = self._spec(store, serde_from(value), cache, kind, retention)
        return self._build(initial, add, merge, spec, store is not None, emit_strategy)


def _sum(key: Any, one: int, two: int) -> int:
    return one + two
