"""What every state store is to the task that owns it, and what a store needs of its changelog.

A task holds its stores by name (key-value, window, session, suppression buffer). It drives them through
the commit protocol (``flush`` -> commit offsets -> ``persist``), restores them from their changelogs
(``restore_batch``), and keeps its stream time in the time-keeping ones (``stream_time``), which
write it with their changes so that a restarted task resumes at the stream time of its last commit.
"""

from __future__ import annotations

from typing import Any, Protocol

__all__ = ["ChangelogSink", "Headers", "StateStore"]

Headers = tuple[tuple[str, bytes], ...]


class ChangelogSink(Protocol):
    """A store's changelog partition (``streams.changelog.ChangelogWriter``)."""

    topic: str
    partition: int
    written_offset: int | None

    def send_batch(self, entries: list[tuple[bytes, bytes | None]], headers: Any) -> None: ...


class StateStore(Protocol):
    name: str
    #: On disk (RocksDB): has a local checkpoint, and writes only committed state (``persist``).
    persistent: bool
    changelog: ChangelogSink | None
    closed: bool
    #: The owning task's stream time, as of the store's last write (-1: unknown). Time-keeping stores
    #: persist it; the others ignore it.
    stream_time: int

    @property
    def dirty_count(self) -> int:
        """Changes (keys) not flushed yet."""

    def flush(self, headers: Headers | None) -> int:
        """Send the changes since the last flush to the changelog (and downstream, for caching stores)."""

    def persist(self) -> bool:
        """The input offsets of the flushed changes were committed: make them durable locally."""

    def discard_pending(self) -> None:
        """The commit failed: forget what was not persisted."""

    def restore_batch(self, entries: list[tuple[bytes, bytes | None]]) -> None:
        """Apply changelog records (key bytes, value bytes or None), oldest first."""

    def estimate_num_entries(self) -> int:
        """About how many entries the store holds (a metric: may be approximate)."""
        ...

    def wipe(self) -> None:
        """Drop all local data."""

    def close(self) -> None: ...
