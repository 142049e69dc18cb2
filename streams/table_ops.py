"""The processors of table operations. Between them a table update travels as ``Change(new, old)``;
``old`` is filled only where a downstream operation asked for it (``TableOptions.send_old_values``, set by
the DSL, as Kafka Streams' ``enableSendingOldValues``): a re-grouped table subtracts the old value from
the group it leaves. ``to_stream`` hands on the new values. ``TableProcessor`` is the base of every processor
that reads those options (the joins' and the suppression's too).

The stores are timestamped (``(value, timestamp)`` per key): an aggregate's timestamp is the largest of
the records it has taken in, a table row's that of its last update, and updates go downstream with it.
Aggregations serialize the key once per record. With its store's cache on, an aggregate forwards each
key's update when the cache flushes (once per key per commit); otherwise at once. ``Aggregating`` holds
what every aggregation processor shares, the windowed ones of ``window_ops.py`` included.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from streams.change import Change, OutOfOrderChange
from streams.errors import ProcessingError
from streams.ops import Forwarding, windowed_sender_below
from streams.processor import ProcessorContext
from streams.state.versioned import PUT_RETURN_CODE_NOT_PUT, PUT_RETURN_CODE_VALID_TO_UNDEFINED, VersionedKeyValueStore

__all__ = [
    "AggregateProcessor",
    "Aggregating",
    "TableAggregateProcessor",
    "TableFilterProcessor",
    "TableMapValuesProcessor",
    "TableOptions",
    "TableProcessor",
    "TableRepartitionMapProcessor",
    "TableSourceProcessor",
    "ToStreamProcessor",
]


@dataclass
class TableOptions:
    """Per table node, shared by the DSL and the node's processors: set while the topology is built,
    read when a processor starts."""

    send_old_values: bool = False


class TableProcessor(Forwarding):
    """A table node's processor: the node's ``options``, read when it starts (``_send_old``: whether the
    updates it forwards carry the value they replace)."""

    options: TableOptions

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self._send_old = self.options.send_old_values


def _cached_forwarder(
    context: ProcessorContext, forward: Callable[[Any, Any], None], send_old: bool
) -> Callable[[Any, Any, Any, int], None]:
    """The flush listener of a timestamped store: forwards each flushed update with its timestamp."""
    rc = context.record_context

    def flushed(key: Any, new: Any, old: Any, ts: int) -> None:
        if new is not None:
            rc.timestamp = new[1]  # the flush restores the record context afterwards
        forward(key, Change(None if new is None else new[0], old[0] if send_old and old is not None else None))

    return flushed


def _emit(context: ProcessorContext, forward: Callable[[Any, Any], None], key: Any, change: Change, ts: int) -> None:
    """Forward at once, with the aggregate's timestamp."""
    rc = context.record_context
    saved = rc.timestamp
    rc.timestamp = ts
    try:
        forward(key, change)
    finally:
        rc.timestamp = saved


@dataclass(eq=False)
class Aggregating(TableProcessor):
    """What the aggregations share (of grouped streams, re-grouped tables, windows): the store, the
    ``initializer`` and ``adder``, and how updates go downstream: when the store's cache flushes, at once,
    or (a windowed aggregation emitting final results only) not at all. A subclass's own settings follow
    these five."""

    store_name: str
    initializer: Callable[[], Any] | None
    adder: Callable[[Any, Any, Any], Any]
    cache: bool
    options: TableOptions
    #: Only each window's final result goes downstream, when the window closes (windowed aggregations).
    emit_final: bool = field(default=False, kw_only=True)

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        store = self._store = context.get_state_store(self.store_name)
        self._kser = store.key_serializer
        self._rc = context.record_context
        self._emit_now = not self.cache and not self.emit_final
        if self.cache and not self.emit_final:
            store.track_old_values = self._send_old
            store.listener = self._flush_listener(context)

    def _flush_listener(self, context: ProcessorContext) -> Callable[..., None]:
        """What the store's cache calls with each flushed update."""
        return _cached_forwarder(context, self._forward, self._send_old)


class AggregateProcessor(Aggregating):
    """count / reduce / aggregate of a grouped stream: ``initializer()`` then ``adder(key, value, agg)``.

    Records with a None key or value are dropped (as Kafka Streams does)."""

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        store = self._store
        self._kb = store.key_bytes
        self._get = store.get_serialized
        self._put = store.put_serialized

    def process(self, key: Any, value: Any) -> None:
        if key is None or value is None:
            self.context.record_dropped()
            return
        try:
            kb = self._kser(key)
        except Exception:
            kb = self._kb(key)  # raises the error that names the store and the key
        ts = self._rc.timestamp
        stored = self._get(kb)
        if stored is None:
            old = None
            agg = self.initializer() if self.initializer is not None else None
        else:
            old = agg = stored[0]
            if stored[1] > ts:
                ts = stored[1]
        agg = self.adder(key, value, agg)
        if self._put(kb, key, (agg, ts)) == PUT_RETURN_CODE_NOT_PUT:
            return  # a versioned store dropped it as older than its history retention: not forwarded either
        if self._emit_now:
            _emit(self.context, self._forward, key, Change(agg, old if self._send_old else None), ts)


@dataclass(eq=False)
class TableSourceProcessor(TableProcessor):
    """Materializes a topic as a table: the latest value per key (None deletes).

    Into a versioned store (KIP-914, as Kafka's ``KTableSource``): every update is a version at its record's
    timestamp; one older than the current value goes into the history and downstream as an
    ``OutOfOrderChange`` (not the table's value); one older than the history retention is dropped (and
    counted) and not forwarded."""

    store_name: str
    cache: bool
    options: TableOptions

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self._store = context.get_state_store(self.store_name)
        self._versioned = isinstance(self._store, VersionedKeyValueStore)
        if self.cache and not self._versioned:
            self._store.track_old_values = self._send_old
            self._store.listener = _cached_forwarder(context, self._forward, self._send_old)
            self._emit = None
        else:
            self._emit = self._forward

    def process(self, key: Any, value: Any) -> None:
        if key is None:
            self.context.record_dropped()
            return
        if self._versioned:
            self._put_version(key, value)
            return
        if self._emit is None:
            self._store.put(key, value)
            return
        old = self._store.get(key) if self._send_old else None
        self._store.put(key, value)
        self._emit(key, Change(value, old))

    def _put_version(self, key: Any, value: Any) -> None:
        store = self._store
        kb = store.key_bytes(key)
        old = store.get_version(kb) if self._send_old else None
        valid_to = store.put_version(kb, value, self.context.record_context.timestamp)
        if valid_to == PUT_RETURN_CODE_NOT_PUT:
            return
        old_value = None if old is None else old.value
        if valid_to == PUT_RETURN_CODE_VALID_TO_UNDEFINED:
            self._forward(key, Change(value, old_value))
        else:
            self._forward(key, OutOfOrderChange(value, old_value))


@dataclass(eq=False)
class TableFilterProcessor(TableProcessor):
    """A table filter: a row that fails the predicate becomes a delete (None) downstream. With old values sent,
    an update invisible before and after is skipped, unless the table filtered is versioned (Kafka's
    ``KTableFilter``: its old value is then the latest version, not the one the update replaced)."""

    predicate: Callable[[Any, Any], bool]
    negate: bool
    options: TableOptions
    versioned_upstream: bool = False

    def _keep(self, key: Any, value: Any) -> Any:
        if value is not None and bool(self.predicate(key, value)) is not self.negate:
            return value
        return None

    def process(self, key: Any, change: Change) -> None:
        new = self._keep(key, change.new)
        if self._send_old:
            old = self._keep(key, change.old)
            if new is None and old is None and not self.versioned_upstream:
                return  # invisible downstream before and after
            self._forward(key, type(change)(new, old))
        else:
            self._forward(key, type(change)(new, None))


@dataclass(eq=False)
class TableMapValuesProcessor(TableProcessor):
    mapper: Callable[[Any], Any]
    options: TableOptions

    def process(self, key: Any, change: Change) -> None:
        mapper = self.mapper
        new = None if change.new is None else mapper(change.new)
        old = None if not self._send_old or change.old is None else mapper(change.old)
        self._forward(key, type(change)(new, old))


class ToStreamProcessor(Forwarding):
    """A table's updates as a stream: the new value (None for a delete)."""

    def process(self, key: Any, change: Change) -> None:
        self._forward(key, change.new)

    def windowed_sender(self, inner_key_serde: Any) -> Callable[[bytes, Any, int], None] | None:
        """Its one child's (a sink's), if it has one: the new value is what this hands on."""
        return windowed_sender_below(self._forward, inner_key_serde)


@dataclass(eq=False)
class TableRepartitionMapProcessor(Forwarding):
    """``KTable.group_by``: ``selector(key, value) -> (group key, value)`` for the new and the old value
    (a None pair, key or value: the row is in no group).

    An update whose group is unchanged travels as one ``Change(new, old)``; one that moves sends the
    subtraction to the old group first, then the addition to the new one (as Kafka Streams)."""

    selector: Callable[[Any, Any], Any]

    def _select(self, key: Any, value: Any) -> tuple[Any, Any] | None:
        if value is None:
            return None
        pair = self.selector(key, value)
        if pair is None:
            return None
        if not isinstance(pair, tuple) or len(pair) != 2:
            raise ProcessingError(f"KTable.group_by() selector must return a (key, value) tuple, got {pair!r:.80}")
        if pair[0] is None or pair[1] is None:
            return None
        return pair

    def process(self, key: Any, change: Change) -> None:
        if key is None:
            raise ProcessingError("a table update with a None key cannot be re-grouped")
        if not change.is_latest:
            return  # an out-of-order update of a versioned table changes no group (Kafka's KTableRepartitionMap)
        new = self._select(key, change.new)
        old = self._select(key, change.old)
        if new is not None and old is not None and new[0] == old[0]:
            self._forward(new[0], Change(new[1], old[1]))
            return
        if old is not None:
            self._forward(old[0], Change(None, old[1]))
        if new is not None:
            self._forward(new[0], Change(new[1], None))


@dataclass(eq=False)
class TableAggregateProcessor(Aggregating):
    """count / reduce / aggregate of a re-grouped table: subtract the old value, add the new one.

    ``initializer`` None (reduce): a group's first value is its aggregate."""

    subtractor: Callable[[Any, Any, Any], Any]

    def process(self, key: Any, change: Change) -> None:
        if key is None:
            raise ProcessingError(f"a re-grouped table update for store {self.store_name!r} has a None key")
        store = self._store
        kb = store.key_bytes(key)
        ts = self._rc.timestamp
        stored = store.get_serialized(kb)
        old_agg = agg = None if stored is None else stored[0]
        if stored is not None and stored[1] > ts:
            ts = stored[1]
        if change.old is not None and agg is not None:
            agg = self.subtractor(key, change.old, agg)
        if change.new is not None:
            if agg is None and self.initializer is not None:
                agg = self.initializer()
            agg = change.new if agg is None else self.adder(key, change.new, agg)
        if store.put_serialized(kb, key, None if agg is None else (agg, ts)) == PUT_RETURN_CODE_NOT_PUT:
            return  # a versioned store dropped it as older than its history retention: not forwarded either
        if self._emit_now:
            _emit(self.context, self._forward, key, Change(agg, old_agg if self._send_old else None), ts)
