"""Session stores: aggregates by (key, session), kept for a retention period after the session's end,
in memory or RocksDB. The API follows Kafka Streams' ``SessionStore``: ``find_sessions`` (a key's
sessions that may overlap a time range), ``fetch_session``, ``fetch`` (all of a key's sessions), ``put``
and ``remove``."""

from __future__ import annotations

from typing import Any

from streams.errors import StateStoreError
from streams.state.segments import Entry
from streams.state.timed import MAX_TIME, TimeKeyedStore
from streams.windows import SessionWindow, Windowed

__all__ = ["SessionStore"]


def _session(session_key: Any) -> Windowed:
    if not isinstance(session_key, Windowed) or not isinstance(session_key.window, SessionWindow):
        raise StateStoreError(f"session stores are keyed by Windowed(key, SessionWindow), got {session_key!r:.80}")
    return session_key


class SessionStore(TimeKeyedStore):
    sub_size = 8  # the session start; the time of an entry is the session end
    # A session that ended exactly ``retention`` (gap + grace) ago is kept: a record that late is still
    # within the gap and the grace, and extends it.
    live_offset = 0

    def _forward_timestamp(self, t: int, sub: int, entry: Entry | None, change_ts: int) -> int:
        return t  # a session's updates (and its removal) carry its end, as Kafka Streams forwards them

    def put(self, session_key: Windowed, aggregate: Any) -> None:
        """Store ``aggregate`` for the session (None removes it)."""
        w = _session(session_key)
        entry = None if aggregate is None else (aggregate, w.window.end)
        self.put_entry(self.key_bytes(w.key), w.key, w.window.end, w.window.start, entry)

    def remove(self, session_key: Windowed) -> None:
        self.put(session_key, None)

    def fetch_session(self, key: Any, session_start: int, session_end: int) -> Any:
        entry = self.get_entry(self.key_bytes(key), session_end, session_start)
        return None if entry is None else entry[0]

    def find_sessions(
        self, key: Any, earliest_session_end: int, latest_session_start: int
    ) -> list[tuple[Windowed, Any]]:
        """``key``'s sessions that end at or after ``earliest_session_end`` and start at or before
        ``latest_session_start``, by end then start."""
        return [
            (Windowed(key, SessionWindow(start, end)), e[0])
            for end, start, e in self.entries(self.key_bytes(key), earliest_session_end, MAX_TIME)
            if start <= latest_session_start
        ]

    def backward_find_sessions(
        self, key: Any, earliest_session_end: int, latest_session_start: int
    ) -> list[tuple[Windowed, Any]]:
        return self.find_sessions(key, earliest_session_end, latest_session_start)[::-1]

    def fetch(self, key: Any) -> list[tuple[Windowed, Any]]:
        """All of ``key``'s sessions."""
        return self.find_sessions(key, 0, MAX_TIME)

    def backward_fetch(self, key: Any) -> list[tuple[Windowed, Any]]:
        return self.fetch(key)[::-1]

    def find_sessions_ending_between(self, earliest_end: int, latest_end: int) -> list[tuple[Windowed, Any]]:
        """Every key's sessions ending in ``[earliest_end, latest_end]``, by end, then key bytes."""
        decode = self.decode_key
        return [
            (Windowed(decode(kb), SessionWindow(start, end)), e[0])
            for kb, end, start, e in self.all_entries(earliest_end, latest_end)
        ]

    def all(self) -> list[tuple[Windowed, Any]]:
        return self.find_sessions_ending_between(0, MAX_TIME)
