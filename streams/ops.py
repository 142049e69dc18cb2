"""The processors behind the stateless stream operations of the DSL. Each forwards through one pre-bound
call (no per-record lookup of children). Table operations are in ``table_ops.py``, windowed aggregations
in ``window_ops.py``, suppression in ``suppress.py``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from streams.processor import Processor, ProcessorContext

__all__ = [
    "BranchProcessor",
    "FilterProcessor",
    "FlatMapProcessor",
    "FlatMapValuesProcessor",
    "Forwarding",
    "MapProcessor",
    "MapValuesProcessor",
    "PassThroughProcessor",
    "PeekProcessor",
    "SelectKeyProcessor",
]


class Forwarding(Processor):
    """A processor that forwards through ``self._forward`` (bound at init)."""

    _forward: Callable[[Any, Any], None]

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self._forward = context.forwarder()


class PassThroughProcessor(Forwarding):
    def process(self, key: Any, value: Any) -> None:
        self._forward(key, value)


class FilterProcessor(Forwarding):
    def __init__(self, predicate: Callable[[Any, Any], bool], negate: bool = False) -> None:
        self.predicate = predicate
        self.negate = negate

    def process(self, key: Any, value: Any) -> None:
        if bool(self.predicate(key, value)) is not self.negate:
            self._forward(key, value)


class MapProcessor(Forwarding):
    def __init__(self, mapper: Callable[[Any, Any], tuple[Any, Any]]) -> None:
        self.mapper = mapper

    def process(self, key: Any, value: Any) -> None:
        result = self.mapper(key, value)
        if not isinstance(result, tuple) or len(result) != 2:
            raise TypeError(f"map() function must return a (key, value) tuple, got {result!r:.80}")
        self._forward(result[0], result[1])


class MapValuesProcessor(Forwarding):
    def __init__(self, mapper: Callable[[Any], Any]) -> None:
        self.mapper = mapper

    def process(self, key: Any, value: Any) -> None:
        self._forward(key, self.mapper(value))


class FlatMapProcessor(Forwarding):
    def __init__(self, mapper: Callable[[Any, Any], Any]) -> None:
        self.mapper = mapper

    def process(self, key: Any, value: Any) -> None:
        forward = self._forward
        for item in self.mapper(key, value):
            if not isinstance(item, tuple) or len(item) != 2:
                raise TypeError(f"flat_map() function must yield (key, value) tuples, got {item!r:.80}")
            forward(item[0], item[1])


class FlatMapValuesProcessor(Forwarding):
    def __init__(self, mapper: Callable[[Any], Any]) -> None:
        self.mapper = mapper

    def process(self, key: Any, value: Any) -> None:
        forward = self._forward
        for item in self.mapper(value):
            forward(key, item)


class PeekProcessor(Forwarding):
    def __init__(self, action: Callable[[Any, Any], None]) -> None:
        self.action = action

    def process(self, key: Any, value: Any) -> None:
        self.action(key, value)
        self._forward(key, value)


class SelectKeyProcessor(Forwarding):
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
