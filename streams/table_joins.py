"""Table-table joins on the primary key (``KTable.join`` / ``left_join`` / ``outer_join``).

Each side of the join is a processor on that side's updates which looks the key up in the OTHER side's
store (both inputs are materialized; the DSL adds a store to an input that has none) and forwards
``Change(new result, old result)`` with the larger of the two rows' timestamps, as Kafka Streams'
``KTableKTableInnerJoin`` / ``LeftJoin`` / ``OuterJoin``. Both inputs always send their old values to the
join, so that a row that disappears can be turned into a tombstone of the result it had produced:

- inner: a result exists while both sides have a row;
- left: while the left side has a row (the joiner sees None for a missing right row);
- outer: while either side has a row (the joiner sees None for the missing one).

An update that had no result before and has none after is not forwarded.

Windowed tables (the tables of windowed aggregations, keyed by ``Windowed``) join the same way, as in Kafka
Streams (``KStreamWindowAggregateTest.testJoin``): a window of one side joins the same key's same window of
the other, looked up in the other side's window (or session) store, so only while that store keeps it
(its retention); both sides must have the same windows.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from streams.change import Change
from streams.processor import ProcessorContext
from streams.state.session import SessionStore
from streams.state.versioned import VersionedKeyValueStore
from streams.state.window import WindowStore
from streams.table_ops import TableOptions, TableProcessor

__all__ = ["JOIN_KINDS", "Joiner", "TableJoinProcessor", "TableMaterializeProcessor", "key_joiner", "row_lookup"]

#: ``(key, left value, right value) -> result``: every joiner normalized to this form.
Joiner = Callable[[Any, Any, Any], Any]

JOIN_KINDS = ("inner", "left", "outer")


def key_joiner(joiner: Callable[..., Any], with_key: bool) -> Joiner:
    """The user's ``(value, other)`` (or ``(key, value, other)`` with ``with_key``) as a ``Joiner``."""
    if with_key:
        return joiner
    return lambda key, left, right: joiner(left, right)


def _required(kind: str) -> tuple[bool, bool]:
    """Which sides a result needs: (left, right)."""
    return {"inner": (True, True), "left": (True, False), "outer": (False, False)}[kind]


def row_lookup(store: Any) -> Callable[[Any], tuple[Any, int] | None]:
    """How a join finds the other side's ``(row, timestamp)`` for a key: by key in a key-value store; by the
    key and window of a ``Windowed`` key in a window store (by window start) or a session store (by end and
    start)."""
    if isinstance(store, SessionStore):

        def session_row(key: Any) -> tuple[Any, int] | None:
            window = key.window
            return store.get_entry(store.key_bytes(key.key), window.end, window.start)

        return session_row
    if isinstance(store, WindowStore):
        return lambda key: store.get_entry(store.key_bytes(key.key), key.window.start)
    return store.get_with_timestamp


class TableJoinProcessor(TableProcessor):
    """One side of a table-table join: ``this`` side's update joined with the other side's current row.

    ``left_side``: this processor sees the left table's updates (else the right's; the joiner's argument
    order is the same for both). ``options``: the join result's, whose downstream may want old values."""

    def __init__(self, other_store: str, joiner: Joiner, kind: str, left_side: bool, options: TableOptions) -> None:
        self.other_store = other_store
        self.joiner = joiner
        self.left_side = left_side
        self.options = options
        need_left, need_right = _required(kind)
        self._need_this, self._need_other = (need_left, need_right) if left_side else (need_right, need_left)

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self._row = row_lookup(context.get_state_store(self.other_store))
        self._rc = context.record_context

    def _result(self, key: Any, this: Any, other: Any) -> Any:
        if this is None and other is None:
            return None
        if (this is None and self._need_this) or (other is None and self._need_other):
            return None
        return self.joiner(key, this, other) if self.left_side else self.joiner(key, other, this)

    def process(self, key: Any, change: Change) -> None:
        if key is None:
            self.context.record_dropped()
            return
        if not change.is_latest:
            self.context.record_dropped()  # an out-of-order update of a versioned table joins nothing (KIP-914)
            return
        found = self._row(key)
        other, other_ts = (None, -1) if found is None else found
        new = self._result(key, change.new, other)
        old = self._result(key, change.old, other)
        if new is None and old is None:
            return  # no result before, none after
        rc = self._rc
        saved = rc.timestamp
        if other_ts > saved:
            rc.timestamp = other_ts
        try:
            self._forward(key, Change(new, old if self._send_old else None))
        finally:
            rc.timestamp = saved


@dataclass(eq=False)
class TableMaterializeProcessor(TableProcessor):
    """Keeps a table's rows in a store (for a join's lookups, or a join result's ``store=``) and passes
    the updates on; with old values asked for downstream, they come from the store."""

    store_name: str
    options: TableOptions

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self._store = context.get_state_store(self.store_name)
        self._versioned = isinstance(self._store, VersionedKeyValueStore)

    def process(self, key: Any, change: Change) -> None:
        if key is None:
            self.context.record_dropped()
            return
        if self._versioned:
            # A version at the update's timestamp; whether it is the latest came with the update.
            store = self._store
            kb = store.key_bytes(key)
            found = store.get_version(kb) if self._send_old else None
            store.put_version(kb, change.new, self.context.record_context.timestamp)
            self._forward(key, type(change)(change.new, None if found is None else found.value))
            return
        old = self._store.get(key) if self._send_old else None
        self._store.put(key, change.new)
        self._forward(key, Change(change.new, old))
