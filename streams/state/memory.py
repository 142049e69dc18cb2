"""The in-memory key-value store: a dict from key bytes to value objects. Its state lives only in the
process, so a task that opens it restores the whole changelog."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from streams.state.cache import CachingKeyValueStore

__all__ = ["InMemoryKeyValueStore"]


class InMemoryKeyValueStore(CachingKeyValueStore):
    persistent = False

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._data: dict[bytes, Any] = {}

    def _lookup(self, kb: bytes) -> Any:
        return self._data.get(kb)

    def _store(self, kb: bytes, value: Any) -> None:
        if value is None:
            self._data.pop(kb, None)
        else:
            self._data[kb] = value

    def _items(self) -> Iterator[tuple[bytes, Any]]:
        return iter(list(self._data.items()))

    def approximate_num_entries(self) -> int:
        return len(self._data)

    def restore_batch(self, entries: list[tuple[bytes, bytes | None]]) -> None:
        data = self._data
        vde = self._vde
        for kb, vb in entries:
            if vb is None:
                data.pop(kb, None)
            else:
                data[kb] = vde(vb)

    def restore_values(self, entries: list[tuple[bytes, Any]]) -> None:
        """``restore_batch`` with the values already deserialized (None deletes): for a writer that
        deserializes each record anyway (a global table checks every record), so it is not done twice."""
        data = self._data
        for kb, value in entries:
            if value is None:
                data.pop(kb, None)
            else:
                data[kb] = value

    def wipe(self) -> None:
        self._data.clear()

    def close(self) -> None:
        super().close()
        self._data = {}
