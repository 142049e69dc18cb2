"""What every DSL class stands on: ``Builder`` (what the DSL needs of its ``StreamsBuilder``: a protocol, so
that the DSL does not import the builder), ``AbstractStream`` (a node and its serdes: the base of the four
DSL classes) and the check of the callables users pass."""

from __future__ import annotations

from typing import Any, Protocol

from streams.record_serdes import serde_from
from streams.topology import Topology

__all__ = ["AbstractStream", "Builder", "check_callable"]


class Builder(Protocol):
    """What the DSL needs of its ``StreamsBuilder``."""

    topology: Topology
    #: Join nodes that keep records with a null key (left/outer joins, KIP-962): the repartition topics
    #: upstream of one pass such records on; the others drop them.
    relaxed_null_key_joins: set[str]

    def new_name(self, prefix: str) -> str: ...

    def repartition(self, parent: str, topic: str, partitions: int | None, key: Any, value: Any) -> str: ...

    def source(self, topics: list[str], *, key: Any, value: Any, name: str | None = None) -> str: ...


class AbstractStream:
    """A node of the topology being built and the serdes of the records it gives (None: not known here, the
    topology's default applies), as Kafka Streams' ``AbstractStream``: what ``KStream``, ``KTable``,
    ``KGroupedStream`` and ``KGroupedTable`` are made of."""

    def __init__(self, builder: Builder, node: str, key: Any, value: Any) -> None:
        self._builder = builder
        self.node = node
        self.key_serde = key
        self.value_serde = value

    def _serdes_or_own(self, key: Any, value: Any) -> tuple[Any, Any]:
        """The serdes a user named (``key``, ``value``: serde specs, None for not named), else this node's."""
        return serde_from(key) or self.key_serde, serde_from(value) or self.value_serde


def check_callable(what: str, fn: Any) -> None:
    """A ``TypeError`` naming ``what`` unless ``fn`` is callable: at topology-build time, not on the first record."""
    if not callable(fn):
        raise TypeError(f"{what} needs a callable, got {fn!r}")
