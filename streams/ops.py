"""The processors behind the DSL operations. Each forwards through one pre-bound call (no per-record
lookup of children), and aggregations serialize the key once per record."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from streams.processor import Processor, ProcessorContext

__all__ = [
    "AggregateProcessor",
    "BranchProcessor",
    "FilterProcessor",
    "FlatMapProcessor",
    "FlatMapValuesProcessor",
    "MapProcessor",
    "MapValuesProcessor",
    "PassThroughProcessor",
    "PeekProcessor",
    "SelectKeyProcessor",
    "TableFilterProcessor",
    "TableMapValuesProcessor",
    "TableSourceProcessor",
]


class _Forwarding(Processor):
    _forward: Callable[[Any, Any], None]

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self._forward = context.forwarder()


class PassThroughProcessor(_Forwarding):
    def process(self, key: Any, value: Any) -> None:
        self._forward(key, value)


class FilterProcessor(_Forwarding):
    def __init__(self, predicate: Callable[[Any, Any], bool], negate: bool = False) -> None:
        self.predicate = predicate
        self.negate = negate

    def process(self, key: Any, value: Any) -> None:
        if bool(self.predicate(key, value)) is not self.negate:
            self._forward(key, value)


class MapProcessor(_Forwarding):
    def __init__(self, mapper: Callable[[Any, Any], tuple[Any, Any]]) -> None:
        self.mapper = mapper

    def process(self, key: Any, value: Any) -> None:
        result = self.mapper(key, value)
        if not isinstance(result, tuple) or len(result) != 2:
            raise TypeError(f"map() function must return a (key, value) tuple, got {result!r:.80}")
        self._forward(result[0], result[1])


class MapValuesProcessor(_Forwarding):
    def __init__(self, mapper: Callable[[Any], Any]) -> None:
        self.mapper = mapper

    def process(self, key: Any, value: Any) -> None:
        self._forward(key, self.mapper(value))


class FlatMapProcessor(_Forwarding):
    def __init__(self, mapper: Callable[[Any, Any], Any]) -> None:
        self.mapper = mapper

    def process(self, key: Any, value: Any) -> None:
        forward = self._forward
        for item in self.mapper(key, value):
            if not isinstance(item, tuple) or len(item) != 2:
                raise TypeError(f"flat_map() function must yield (key, value) tuples, got {item!r:.80}")
            forward(item[0], item[1])


class FlatMapValuesProcessor(_Forwarding):
    def __init__(self, mapper: Callable[[Any], Any]) -> None:
        self.mapper = mapper

    def process(self, key: Any, value: Any) -> None:
        forward = self._forward
        for item in self.mapper(value):
            forward(key, item)


class PeekProcessor(_Forwarding):
    def __init__(self, action: Callable[[Any, Any], None]) -> None:
        self.action = action

    def process(self, key: Any, value: Any) -> None:
        self.action(key, value)
        self._forward(key, value)


class SelectKeyProcessor(_Forwarding):
    def __init__(self, selector: Callable[[Any, Any], Any]) -> None:
        self.selector = selector

    def process(self, key: Any, value: Any) -> None:
        self._forward(self.selector(key, value), value)


class BranchProcessor(Processor):
    """Sends each record to the first branch whose predicate holds (children are the branches, in order)."""

    def __init__(self, predicates: list[Callable[[Any, Any], bool]]) -> None:
        self.predicates = predicates

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self._branches = list(zip(self.predicates, context.child_forwarders(), strict=True))

    def process(self, key: Any, value: Any) -> None:
        for predicate, process in self._branches:
            if predicate(key, value):
                process(key, value)
                return


class AggregateProcessor(_Forwarding):
    """count / reduce / aggregate: ``initializer()`` then ``adder(key, value, aggregate)`` per record.

    Records with a None key or value are dropped (as Kafka Streams does). With the store's cache on,
    the new aggregate is forwarded when the cache flushes (once per key per commit); otherwise at once."""

    def __init__(self, store_name: str, initializer: Callable[[], Any] | None,
                 adder: Callable[[Any, Any, Any], Any], cache: bool) -> None:  # fmt: skip
        self.store_name = store_name
        self.initializer = initializer
        self.adder = adder
        self.cache = cache

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        store = context.get_state_store(self.store_name)
        self._kb = store.key_bytes
        self._kser = store.key_serializer
        self._get = store.get_serialized
        self._put = store.put_serialized
        if self.cache:
            forward = self._forward
            store.listener = lambda key, value, ts: forward(key, value)
            self._emit = None
        else:
            self._emit = self._forward

    def process(self, key: Any, value: Any) -> None:
        if key is None or value is None:
            return
        try:
            kb = self._kser(key)
        except Exception:
            kb = self._kb(key)  # raises the error that names the store and the key
        agg = self._get(kb)
        if agg is None:
            agg = self.initializer() if self.initializer is not None else None
        agg = self.adder(key, value, agg)
        self._put(kb, key, agg)
        if self._emit is not None:
            self._emit(key, agg)


class TableSourceProcessor(_Forwarding):
    """Materializes a topic as a table: the latest value per key (None deletes)."""

    def __init__(self, store_name: str, cache: bool) -> None:
        self.store_name = store_name
        self.cache = cache

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self._store = context.get_state_store(self.store_name)
        if self.cache:
            forward = self._forward
            self._store.listener = lambda key, value, ts: forward(key, value)
            self._emit = None
        else:
            self._emit = self._forward

    def process(self, key: Any, value: Any) -> None:
        if key is None:
            return
        self._store.put(key, value)
        if self._emit is not None:
            self._emit(key, value)


class TableFilterProcessor(_Forwarding):
    """A table filter: a row that fails the predicate becomes a delete (None) downstream."""

    def __init__(self, predicate: Callable[[Any, Any], bool], negate: bool = False) -> None:
        self.predicate = predicate
        self.negate = negate

    def process(self, key: Any, value: Any) -> None:
        if value is not None and bool(self.predicate(key, value)) is not self.negate:
            self._forward(key, value)
        else:
            self._forward(key, None)


class TableMapValuesProcessor(_Forwarding):
    def __init__(self, mapper: Callable[[Any], Any]) -> None:
        self.mapper = mapper

    def process(self, key: Any, value: Any) -> None:
        self._forward(key, None if value is None else self.mapper(value))
