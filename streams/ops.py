"""The processors behind the stateless stream operations of the DSL. Each forwards through one pre-bound
call (no per-record lookup of children). Table operations are in ``table_ops.py``, windowed aggregations
in ``window_ops.py``, suppression in ``suppress.py``.

A built-in processor whose constructor would only keep its arguments declares them as dataclass fields,
``@dataclass(eq=False)``: a processor is one object of one task, compared by identity, never by value."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
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
    "only_child",
    "windowed_sender_below",
]


class Forwarding(Processor):
    """A processor that forwards through ``self._forward`` (bound at init)."""

    _forward: Callable[[Any, Any], None]

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self._forward = context.forwarder()


def only_child(forward: Callable[[Any, Any], None]) -> Any:
    """The one processor that ``forward`` (a ``ProcessorContext.forwarder()``) hands records to, or None when
    it hands them to several or none: what lets a processor ask its child for a shorter path (a final-results
    emission to a sink, ``windowed_sender``)."""
    child = getattr(forward, "__self__", None)
    return child if isinstance(child, Processor) else None


def windowed_sender_below(forward: Callable[[Any, Any], None], inner_key_serde: Any) -> Any:
    """The ``windowed_sender(inner_key_serde)`` of the one processor ``forward`` hands records to (a sink, or
    ``to_stream`` right above one), or None: ``send(windowed key bytes, value, timestamp)``, which writes what
    forwarding ``Windowed(key, window) -> Change(value, None)`` there would write, for a processor that emits
    final results of a window store whose key bytes it holds."""
    make = getattr(only_child(forward), "windowed_sender", None)
    return None if make is None else make(inner_key_serde)


class PassThroughProcessor(Forwarding):
    def process(self, key: Any, value: Any) -> None:
        self._forward(key, value)


@dataclass(eq=False)
class FilterProcessor(Forwarding):
    predicate: Callable[[Any, Any], bool]
    negate: bool = False

    def process(self, key: Any, value: Any) -> None:
        if bool(self.predicate(key, value)) is not self.negate:
            self._forward(key, value)


@dataclass(eq=False)
class MapProcessor(Forwarding):
    mapper: Callable[[Any, Any], tuple[Any, Any]]

    def process(self, key: Any, value: Any) -> None:
        result = self.mapper(key, value)
        if not isinstance(result, tuple) or len(result) != 2:
            raise TypeError(f"map() function must return a (key, value) tuple, got {result!r:.80}")
        self._forward(result[0], result[1])


@dataclass(eq=False)
class MapValuesProcessor(Forwarding):
    mapper: Callable[[Any], Any]

    def process(self, key: Any, value: Any) -> None:
        self._forward(key, self.mapper(value))


@dataclass(eq=False)
class FlatMapProcessor(Forwarding):
    mapper: Callable[[Any, Any], Any]

    def process(self, key: Any, value: Any) -> None:
        forward = self._forward
        for item in self.mapper(key, value):
            if not isinstance(item, tuple) or len(item) != 2:
                raise TypeError(f"flat_map() function must yield (key, value) tuples, got {item!r:.80}")
            forward(item[0], item[1])


@dataclass(eq=False)
class FlatMapValuesProcessor(Forwarding):
    mapper: Callable[[Any], Any]

    def process(self, key: Any, value: Any) -> None:
        forward = self._forward
        for item in self.mapper(value):
            forward(key, item)


@dataclass(eq=False)
class PeekProcessor(Forwarding):
    action: Callable[[Any, Any], None]

    def process(self, key: Any, value: Any) -> None:
        self.action(key, value)
        self._forward(key, value)


@dataclass(eq=False)
class SelectKeyProcessor(Forwarding):
    selector: Callable[[Any, Any], Any]

    def process(self, key: Any, value: Any) -> None:
        self._forward(self.selector(key, value), value)


@dataclass(eq=False)
class BranchProcessor(Processor):
    """Sends each record to the first branch whose predicate holds (children are the branches, in order)."""

    predicates: list[Callable[[Any, Any], bool]]

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self._branches = list(zip(self.predicates, context.child_forwarders(), strict=True))

    def process(self, key: Any, value: Any) -> None:
        for predicate, process in self._branches:
            if predicate(key, value):
                process(key, value)
                return
