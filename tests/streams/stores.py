"""What the store tests (window, session, versioned stores, the suppression buffer) share: a changelog that keeps
what a store sends, and the task's commit protocol for one store."""

from __future__ import annotations

from typing import Any

from streams.changelog import ChangelogWriter

Sent = list[tuple[bytes, bytes | None]]


class Changelog:
    """A real ChangelogWriter whose sends land in a list (as if the log accepted them at once)."""

    def __init__(self, topic: str = "app-store-changelog") -> None:
        self.records: Sent = []
        self.writer = ChangelogWriter(self._send, topic, 0)

    def _send(self, topic: str, value: bytes | None, key: bytes, **kwargs: Any) -> None:
        self.records.append((key, value))


def commit(store: Any) -> None:
    """The task's commit protocol for one store: flush, (offsets committed), persist."""
    store.flush(None)
    store.persist()
