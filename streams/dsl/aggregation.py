"""What the aggregations of grouped streams, windowed streams and grouped tables share: the spec of the
store their result goes to, the name of the repartition topic they read through, the records of a grouped
stream (``GroupedSource``, what windowed streams aggregate too), and the aggregators that count and reduce."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from streams.dsl.base import AbstractStream, Builder
from streams.topology import StoreSpec, VersionedStoreSpec

__all__ = ["GroupedSource", "add_one", "reducing", "repartition_topic", "store_spec", "zero"]


def store_spec(
    builder: Builder, store: str | StoreSpec | None, key: Any, value: Any, cache: bool | None, kind: str | None
) -> StoreSpec:
    """A key-value store for an aggregation (or a materialized join): the spec given (serdes filled in), or a
    new one. A ``VersionedStoreSpec`` keeps each key's aggregates as versions (KIP-914)."""
    if isinstance(store, StoreSpec):
        spec = store
        if spec.key is None:
            spec.key = key
        if spec.value is None:
            spec.value = value
    else:
        if store is not None and not isinstance(store, str):
            raise TypeError(f"store must be a name or a StoreSpec, got {store!r}")
        spec = StoreSpec(store or builder.new_name("KSTREAM-AGGREGATE-STATE-STORE"), kind=kind, key=key, value=value)
    if isinstance(spec, VersionedStoreSpec):
        return spec  # every aggregate is a version at its timestamp (Kafka: versioned stores do not cache)
    if cache is not None:
        spec.cache = cache
    spec.timestamped = True
    return spec


def repartition_topic(builder: Builder, name: str | None, spec: StoreSpec, named_store: bool, prefix: str) -> str:
    return name or (spec.name if named_store else builder.new_name(prefix + "-STATE-STORE"))


class GroupedSource(AbstractStream):
    """A stream grouped by key, as its aggregations read it: from its node, or, when the key was changed
    upstream (``repartition_required``), from a repartition topic named after ``name`` or the store."""

    def __init__(
        self, builder: Builder, node: str, key: Any, value: Any, repartition_required: bool, name: str | None
    ) -> None:
        super().__init__(builder, node, key, value)
        self.repartition_required = repartition_required
        self.name = name

    def _source(self, spec: StoreSpec, named_store: bool, prefix: str) -> str:
        """The node aggregations read: this one, or the repartition topic's source."""
        if not self.repartition_required:
            return self.node
        topic = repartition_topic(self._builder, self.name, spec, named_store, prefix)
        return self._builder.repartition(self.node, topic, None, self.key_serde, self.value_serde)


def zero() -> int:
    return 0


def add_one(key: Any, value: Any, agg: int) -> int:
    return agg + 1


def reducing(reducer: Callable[[Any, Any], Any]) -> Callable[[Any, Any, Any], Any]:
    """An aggregator from a reducer: the first value is the aggregate."""

    def add(key: Any, value: Any, agg: Any) -> Any:
        return value if agg is None else reducer(agg, value)

    return add
