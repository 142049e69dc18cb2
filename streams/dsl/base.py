"""What every DSL class stands on: ``Builder``, what the DSL needs of its ``StreamsBuilder`` (a protocol,
so that the DSL does not import the builder), and the check of the callables users pass."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from streams.topology import Topology

if TYPE_CHECKING:
    from streams.dsl.kstream import KStream

__all__ = ["Builder", "check_callable"]


class Builder(Protocol):
    """What the DSL needs of its ``StreamsBuilder``."""

    topology: Topology

    def new_name(self, prefix: str) -> str: ...

    def repartition(self, parent: str, topic: str, partitions: int | None, key: Any, value: Any) -> str: ...

    def stream(self, topics: str | list[str], *, key: Any = None, value: Any = None) -> KStream: ...


def check_callable(what: str, fn: Any) -> None:
    """A ``TypeError`` naming ``what`` unless ``fn`` is callable: at topology-build time, not on the first record."""
    if not callable(fn):
        raise TypeError(f"{what} needs a callable, got {fn!r}")
