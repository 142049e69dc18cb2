"""The outer layer of window and session stores: typed access through serdes, the uncommitted changes
(Kafka Streams' caching layer) and the changelog (its change-logging layer), over committed
``Segments`` (``streams/state/segments.py``).

Changes stay here until their input offsets are committed: ``flush`` sends each change once to the
changelog (and, through ``listener``, downstream), ``persist`` then writes them into the segments. A
failed commit (or, later, an aborted transaction) drops what is here and the segments hold exactly the
committed state.

Changelog records: key = key bytes + 8-byte time + sub (4 bytes for windows, as Kafka Streams' window
store changelog; 8 for sessions: end, start), value = 8-byte timestamp + value bytes, None for a delete.
One more record, under a reserved key, carries the store's metadata (the task's stream time, and what
processors keep with the store), so a restore brings back the time as well as the data.

A window store of hopping windows (``changelog_blocks``) logs a key's windows by block instead: a block is
every window start in ``[start, start + block)`` (``block``: the window size rounded up to a multiple of the
advance), and a flush covers each key's changed windows with blocks starting at its first changed window not
yet covered. A record updates ``size / advance`` overlapping windows, exactly one block: a key with one record
since the last flush costs one changelog record instead of one per window. Block record: key = key bytes +
8-byte block start + sub ``-1`` (no window record has a negative sub), value = ``block``, ``advance`` (8 bytes
each), then per window start of the block its 8-byte start, a 4-byte length (-1: no window there) and that
many bytes (the serialized entry, as a window record's value). A block record holds every window of its block
as of its flush, so the newest record holding a window, which compaction keeps (the newest of its key, as any
later record of that key holds the window too), has the window's latest value. A restore applies a block
record as one window record per start, in changelog order, so window records (written before a store logged
blocks) and block records restore into the same store.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from streams.errors import SerdeError, StateStoreError
from streams.record_serdes import serde_name
from streams.state.base import ChangelogSink, Headers
from streams.state.segments import Entry, InMemorySegments, Segments, TimeKeyedRow, WriteRow
from streams.state.store_serdes import StoreSerdes

if TYPE_CHECKING:
    from streams.processor import RecordContext

__all__ = ["MAX_TIME", "META_KEY", "BytesListener", "TimeKeyedListener", "TimeKeyedStore"]

META_KEY = b"\x00schemakit.store-metadata\x00"
MAX_TIME = 2**63 - 1
_TS = struct.Struct(">q")
_UNSET = object()
#: The sub of a block record's changelog key (``changelog_blocks``); window records have a sub >= 0.
BLOCK_SUB = -1
_BLOCK_HEAD = struct.Struct(">qq")  # block, advance
_BLOCK_ITEM = struct.Struct(">qi")  # window start, entry length (-1: none)

#: ``listener(key, time, sub, new_entry, old_entry)`` for each flushed change (entries are
#: ``(value, timestamp)`` or None); ``old_entry`` only when ``track_old_values``.
TimeKeyedListener = Callable[[Any, int, int, Entry | None, Entry | None], None]
#: ``(key_bytes, key, time, new_entry, timestamp)``: a window store's flushed change, for a consumer that keys what
#: it keeps by the store's own key bytes (``TimeKeyedStore.bytes_listener``); ``timestamp``: what it is forwarded with.
FlushedChange = tuple[bytes, Any, int, Entry | None, int]
#: ``bytes_listener(changes)``: a flush's changes, in order, in one call.
BytesListener = Callable[[list[FlushedChange]], None]


class TimeKeyedStore(StoreSerdes):
    """Base of ``WindowStore`` and ``SessionStore``. ``path``: a RocksDB directory, or None for memory."""

    sub_size = 4
    #: Entries at or before ``observed - retention + live_offset - 1`` have expired.
    live_offset = 1
    #: Whether entries are looked up one at a time (``get_entry``); if not, RocksDB segments keep no object
    #: cache, which only such lookups read.
    point_reads = True
    #: Set by the processor that writes the store when each change is forwarded downstream (at once, or by the
    #: cache at flush): what lets a final-results suppression below it derive its buffer from the store.
    forwards_changes = False

    def __init__(
        self,
        name: str,
        key_serde: Any,
        value_serde: Any,
        topic: str,
        record_context: RecordContext,
        retention_ms: int,
        path: Path | None = None,
        max_cache_entries: int = 100_000,
    ) -> None:
        super().__init__(name, key_serde, value_serde, topic, record_context)
        self.retention_ms = retention_ms
        self._tsub = struct.Struct(">qi" if self.sub_size == 4 else ">qq")
        self._inner: Segments
        if path is None:
            self._inner = InMemorySegments(retention_ms, self._decode)
        else:
            from streams.state.rocksdb_segments import RocksDBSegments  # rocksdict is the [streams] extra

            cache = max_cache_entries if self.point_reads else 0
            self._inner = RocksDBSegments(path, retention_ms, self.sub_size, self._decode, cache)
        self.persistent = self._inner.persistent
        #: The largest time (window start, session end) written: what retention is measured from.
        self.observed = self._inner.observed
        self._metadata = dict(self._inner.metadata)
        self._meta_dirty = False
        self._pending_meta: dict[str, int] | None = None
        # Uncommitted changes per key bytes: (time, sub) -> entry, None for a delete.
        self._overlay: dict[bytes, dict[tuple[int, int], Entry | None]] = {}
        # No time in ``_overlay`` is older than this (reset when it empties): a read of older times, as emitting
        # final results reads closed windows, need not walk it.
        self._overlay_low = MAX_TIME
        # Time -> (key bytes, time, sub) of each entry at that time in ``_overlay``: what ``all_entries`` reads
        # there, instead of walking every key's changes (an entry leaves the overlay only at persist or discard).
        # Kept from the first ``all_entries`` on (None before): a store that is never scanned pays nothing for it.
        self._overlay_times: dict[int, list[tuple[bytes, int, int]]] | None = None
        # Changed since the last flush, in the order of their last change: (kb, time, sub) -> (key, old entry,
        # timestamp of the change, new entry: the one in ``_overlay``).
        self._dirty: dict[tuple[bytes, int, int], tuple[Any, Entry | None, int, Entry | None]] = {}
        self._pending: list[WriteRow] = []
        self.listener: TimeKeyedListener | None = None
        #: The one processor ``listener`` forwards every flushed change to (its ``process``), set by the processor
        #: that writes the store; None when it forwards to several or not through ``listener``.
        self.flushes_to: Callable[[Any, Any], None] | None = None
        #: Called instead of ``listener`` when set, once per flush with its changes: by that one processor (a
        #: final-results suppression, which keys its buffer by these bytes), so that a flushed change reaches it
        #: without a windowed key, a ``Change`` or a call of its own.
        self.bytes_listener: BytesListener | None = None
        self.track_old_values = False
        self.changelog: ChangelogSink | None = None
        self.closed = False
        # (block, advance) when the changelog holds a key's windows by block (``changelog_blocks``)
        self._blocks: tuple[int, int] | None = None

    def changelog_blocks(self, block_ms: int, advance_ms: int) -> None:
        """Log this store's windows by block of ``block_ms`` (a multiple of ``advance_ms``, the distance between
        window starts): per key changed since the last flush, one changelog record per block its changed windows
        need, holding all the block's windows (see the module doc). Restores read both layouts; this sets only
        what flushes write."""
        if advance_ms <= 0 or block_ms <= 0 or block_ms % advance_ms:
            raise StateStoreError(
                f"store {self.name!r}: changelog blocks of {block_ms} ms need a positive advance dividing them, "
                f"got {advance_ms} ms"
            )
        self._blocks = (block_ms, advance_ms) if block_ms > advance_ms else None

    # -- values ----------------------------------------------------------------------------------------

    def _decode(self, vb: bytes) -> Entry:
        return self._vde(vb[8:]), _TS.unpack_from(vb)[0]

    def _encode(self, key: Any, entry: Entry) -> bytes:
        try:
            vb = self._vser(entry[0])
        except Exception as exc:
            raise SerdeError(
                f"store {self.name!r}: cannot serialize the value of key {key!r} ({type(entry[0]).__name__}) "
                f"with {serde_name(self.value_serde)}: {exc}"
            ) from exc
        return _TS.pack(entry[1]) + (vb or b"")

    # -- time ------------------------------------------------------------------------------------------

    @property
    def min_live(self) -> int:
        """The oldest time still retained: entries at or before ``observed - retention`` have expired."""
        return self.observed - self.retention_ms + self.live_offset

    @property
    def stream_time(self) -> int:
        return self._metadata.get("stream_time", -1)

    @stream_time.setter
    def stream_time(self, value: int) -> None:
        self.set_metadata("stream_time", value)

    def get_metadata(self, name: str, default: int = -1) -> int:
        return self._metadata.get(name, default)

    def set_metadata(self, name: str, value: int) -> None:
        """Keep ``value`` with the store: written with its next changes, restored with them."""
        if self._metadata.get(name) != value:
            self._metadata[name] = value
            self._meta_dirty = True

    # -- entries by key bytes (the processors' path) ---------------------------------------------------

    def get_entry(self, kb: bytes, t: int, sub: int = 0) -> Entry | None:
        """``(value, timestamp)`` at (key, time, sub), or None (also when expired)."""
        if t < self.observed - self.retention_ms + self.live_offset:
            return None
        overlay = self._overlay.get(kb)
        if overlay is not None:
            entry = overlay.get((t, sub), _UNSET)
            if entry is not _UNSET:
                return entry  # type: ignore[return-value]
        return self._inner.get(kb, t, sub)

    def get_entries(self, kb: bytes, times: Sequence[int], sub: int = 0) -> list[Entry | None]:
        """``get_entry`` for each of ``times``, ascending (a record's windows in one call)."""
        min_live = self.observed - self.retention_ms + self.live_offset
        overlay = self._overlay.get(kb)
        inner = self._inner.get
        out: list[Entry | None] = []
        if overlay is None:
            if times and times[0] >= min_live:
                return self._inner.get_many(kb, times, sub)
            return [None if t < min_live else inner(kb, t, sub) for t in times]
        for t in times:
            if t < min_live:
                out.append(None)
            else:
                entry = overlay.get((t, sub), _UNSET)
                out.append(inner(kb, t, sub) if entry is _UNSET else entry)  # type: ignore[arg-type]
        return out

    def put_entry(self, kb: bytes, key: Any, t: int, sub: int, entry: Entry | None) -> bool:
        """Write (or, with None, delete) an entry; False if ``t`` has expired (nothing is written)."""
        return self.put_entries(kb, key, ((t, sub, entry),)) == 1

    def put_entries(self, kb: bytes, key: Any, rows: Iterable[tuple[int, int, Entry | None]]) -> int:
        """``put_entry`` for each ``(time, sub, entry)`` of one key, in order (a record's windows in one
        call); returns how many were written (not expired)."""
        overlay = self._overlay.get(kb)
        if overlay is None:
            overlay = self._overlay[kb] = {}
        dirty = self._dirty
        ts = self._rc.timestamp
        track_old = self.track_old_values
        observed = self.observed
        min_live = observed - self.retention_ms + self.live_offset
        low = self._overlay_low
        times = self._overlay_times
        written = 0
        try:
            for t, sub, entry in rows:
                if t < min_live:
                    continue
                if t < low:
                    low = t
                if t > observed:
                    if t < 0:
                        raise StateStoreError(f"store {self.name!r}: times must not be negative, got {t}")
                    observed = t
                    min_live = observed - self.retention_ms + self.live_offset
                dk = (kb, t, sub)
                prev = dirty.pop(dk, None)  # to the end: flushes go in the order of the last changes (see cache.py)
                if prev is not None:
                    dirty[dk] = (prev[0], prev[1], ts, entry)
                elif track_old:
                    k = (t, sub)
                    dirty[dk] = (key, overlay[k] if k in overlay else self._inner.get(kb, t, sub), ts, entry)
                else:
                    dirty[dk] = (key, None, ts, entry)
                k = (t, sub)
                if times is not None and k not in overlay:
                    at = times.get(t)
                    if at is None:
                        times[t] = [dk]
                    else:
                        at.append(dk)
                overlay[k] = entry
                written += 1
        finally:
            self.observed = observed
            self._overlay_low = low
            if not overlay:
                del self._overlay[kb]
        return written

    def entries(self, kb: bytes, t_from: int, t_to: int) -> list[tuple[int, int, Entry]]:
        """The key's live entries with ``t_from <= time <= t_to``, by (time, sub)."""
        t_from = max(t_from, self.observed - self.retention_ms + self.live_offset, 0)
        t_to = min(t_to, MAX_TIME)
        if t_from > t_to:
            return []
        rows = self._inner.fetch(kb, t_from, t_to)
        overlay = self._overlay.get(kb)
        if not overlay:
            return rows
        merged = {(t, sub): e for t, sub, e in rows}
        for (t, sub), e in overlay.items():
            if t_from <= t <= t_to:
                merged[(t, sub)] = e  # type: ignore[assignment]
        return [(t, sub, e) for (t, sub), e in sorted(merged.items()) if e is not None]

    def all_entries(self, t_from: int, t_to: int) -> list[TimeKeyedRow]:
        """Every key's live entries with ``t_from <= time <= t_to``, by (time, key bytes, sub)."""
        t_from = max(t_from, self.observed - self.retention_ms + self.live_offset, 0)
        t_to = min(t_to, MAX_TIME)
        if t_from > t_to:
            return []
        rows = self._inner.fetch_all(t_from, t_to)
        if not self._overlay or t_to < self._overlay_low:
            return rows
        overlay = self._overlay
        times = self._overlay_times if self._overlay_times is not None else self._index_overlay()
        in_range = sorted(at for at in times if t_from <= at <= t_to)
        if not in_range:
            return rows
        if not rows:  # time by time, each time's (key bytes, time, sub) sorted: they are distinct
            out: list[TimeKeyedRow] = []
            for at in in_range:
                for kb, t, sub in sorted(times[at]):
                    e = overlay[kb][(t, sub)]
                    if e is not None:
                        out.append((kb, t, sub, e))
            return out
        merged: dict[tuple[int, bytes, int], Entry | None] = {(t, kb, sub): e for kb, t, sub, e in rows}
        for at in in_range:
            for kb, t, sub in times[at]:
                merged[(t, kb, sub)] = overlay[kb][(t, sub)]
        return [(kb, t, sub, e) for (t, kb, sub), e in sorted(merged.items()) if e is not None]

    def decode_key(self, kb: bytes) -> Any:
        return self._kde(kb)

    def approximate_num_entries(self) -> int:
        return len(self.all_entries(0, MAX_TIME))

    def estimate_num_entries(self) -> int:
        """A cheap estimate for metrics, which read it from another thread while the task runs: the committed
        entries' estimate plus the changes not yet written to them (which may count an entry twice)."""
        return self._inner.estimate() + len(self._dirty) + len(self._pending)

    # -- commit protocol -------------------------------------------------------------------------------

    @property
    def dirty_count(self) -> int:
        return len(self._dirty) + self._meta_dirty

    def _forward_timestamp(self, t: int, sub: int, entry: Entry | None, change_ts: int) -> int:
        """The timestamp a flushed change is forwarded with: the entry's (a delete: the change's)."""
        return entry[1] if entry is not None else change_ts

    def flush(self, headers: Headers | None) -> int:
        dirty = self._dirty
        if not dirty and not self._meta_dirty:
            return 0
        self._dirty = {}
        tsub = self._tsub.pack
        out: list[tuple[bytes, bytes | None]] = []
        pending = self._pending
        listener = self.listener
        by_bytes = self.bytes_listener
        encode, ts_pack, vser = self._encode, _TS.pack, self._vser
        # Forwarded (with a listener) at the entry's own timestamp unless a subclass forwards another (sessions:
        # their end): no call per entry for it.
        forward_ts = (
            None if type(self)._forward_timestamp is TimeKeyedStore._forward_timestamp else self._forward_timestamp
        )
        rc = self._rc
        saved = rc.timestamp, rc.headers
        rc.headers = ()  # what is forwarded is an aggregate, not an input record
        try:
            # Each change to the changelog, then (a store that forwards its updates, e.g. to a suppression) to
            # ``listener``. One loop for both: it runs once per changed window and commit.
            by_block = self._blocks is not None
            blocks: dict[bytes, dict[int, bytes | None]] = {}
            notify = listener is not None or by_bytes is not None
            changes: list[FlushedChange] = []  # (for ``by_bytes``)
            for (kb, t, sub), (key, old, change_ts, entry) in dirty.items():
                if entry is None:
                    vb = None
                else:
                    try:
                        vb = ts_pack(entry[1]) + (vser(entry[0]) or b"")
                    except Exception:
                        vb = encode(key, entry)  # raises the error that names the store
                if by_block:
                    logged = blocks.get(kb)
                    if logged is None:
                        logged = blocks[kb] = {}
                    logged[t] = vb
                else:
                    out.append((kb + tsub(t, sub), vb))
                pending.append((kb, t, sub, entry, vb))
                if not notify:
                    continue
                if entry is None:
                    # A delete of what downstream never saw (made and removed since the last flush) is not news.
                    if (old if self.track_old_values else self._inner.get(kb, t, sub)) is None:
                        continue
                    forward_at = change_ts if forward_ts is None else forward_ts(t, sub, entry, change_ts)
                else:
                    forward_at = entry[1] if forward_ts is None else forward_ts(t, sub, entry, change_ts)
                if by_bytes is not None:
                    changes.append((kb, key, t, entry, forward_at))
                else:
                    rc.timestamp = forward_at
                    listener(key, t, sub, entry, old)  # type: ignore[misc]  # (not None: checked above)
            if changes:
                by_bytes(changes)  # type: ignore[misc]  # (not None: there are changes)
        finally:
            rc.timestamp, rc.headers = saved
        if blocks:
            self._block_records(blocks, out)
        if self._meta_dirty:
            self._meta_dirty = False
            self._pending_meta = dict(self._metadata)
            out.append((META_KEY, orjson.dumps(self._pending_meta)))
        if self.changelog is not None:
            self.changelog.send_batch(out, headers)
        return len(out)

    def _block_records(
        self, blocks: dict[bytes, dict[int, bytes | None]], out: list[tuple[bytes, bytes | None]]
    ) -> None:
        """The block records of a flush into ``out``: per key, its changed windows (``blocks``: their serialized
        entries by start) covered by blocks, each starting at the first changed window not yet covered and holding
        its unchanged windows too, read from the store."""
        assert self._blocks is not None
        block, advance = self._blocks
        head = _BLOCK_HEAD.pack(block, advance)
        item, ts_pack, vser = _BLOCK_ITEM.pack, _TS.pack, self._vser
        block_key, overlay, inner = self._tsub.pack, self._overlay, self._inner.get
        min_live = self.min_live
        per_block = block // advance
        for kb, logged in blocks.items():
            if len(logged) == per_block:
                first = min(logged)
                if max(logged) - first == block - advance:  # one whole block changed (a key's one record): no reads
                    parts = [head]
                    for t in range(first, first + block, advance):
                        wb = logged[t]
                        parts.append(item(t, -1) if wb is None else item(t, len(wb)) + wb)
                    out.append((kb + block_key(first, BLOCK_SUB), b"".join(parts)))
                    continue
            per_key = overlay.get(kb)
            end = -1  # the first start past the blocks so far
            for start in sorted(logged) if len(logged) > 1 else logged:
                if start < end:
                    continue  # in the block before
                end = start + block
                parts = [head]
                for t in range(start, end, advance):
                    vb = logged.get(t, _UNSET)
                    if vb is _UNSET:  # unchanged since the last flush: as ``get_entry`` reads it
                        entry = None if t < min_live else (per_key.get((t, 0), _UNSET) if per_key else _UNSET)
                        if entry is _UNSET:
                            entry = inner(kb, t, 0)
                        if entry is None:
                            vb = None
                        else:
                            try:
                                vb = ts_pack(entry[1]) + (vser(entry[0]) or b"")  # type: ignore[index]
                            except Exception:
                                vb = self._encode(self._kde(kb), entry)  # type: ignore[arg-type]  # names the store
                    if vb is None:
                        parts.append(item(t, -1))
                    else:
                        parts.append(item(t, len(vb)))  # type: ignore[arg-type]
                        parts.append(vb)  # type: ignore[arg-type]
                out.append((kb + block_key(start, BLOCK_SUB), b"".join(parts)))

    def _index_overlay(self) -> dict[int, list[tuple[bytes, int, int]]]:
        """Set (and return) ``_overlay_times`` of the entries now in ``_overlay``."""
        times: dict[int, list[tuple[bytes, int, int]]] = {}
        for kb, per_key in self._overlay.items():
            for t, sub in per_key:
                at = times.get(t)
                if at is None:
                    times[t] = [(kb, t, sub)]
                else:
                    at.append((kb, t, sub))
        self._overlay_times = times
        return times

    def persist(self) -> bool:
        """Write the flushed changes into the segments (after their input offsets were committed)."""
        pending = self._pending
        if not pending and self._pending_meta is None:
            return False
        self._inner.write(pending, self._pending_meta, self.min_live)
        overlay = self._overlay
        if not self._dirty:
            # Nothing changed since the flush (a commit flushes, then persists): every uncommitted change is in
            # ``pending`` (a change is dirty until a flush moves it there), all of it written now.
            overlay.clear()
        else:
            for kb, t, sub, entry, _ in pending:
                per_key = overlay.get(kb)
                # Only if unchanged since the flush; a later change is still pending a flush.
                if per_key is not None and per_key.get((t, sub), _UNSET) is entry:
                    del per_key[(t, sub)]
                    if not per_key:
                        del overlay[kb]
        if not overlay:
            self._overlay_low = MAX_TIME
        if self._overlay_times is not None:
            self._index_overlay()  # (what is left: changed since the flush)
        self._pending = []
        self._pending_meta = None
        return self.persistent

    def discard_pending(self) -> None:
        """Forget every uncommitted change: the store is back at its last committed state."""
        self._overlay = {}
        self._overlay_low = MAX_TIME
        if self._overlay_times is not None:
            self._overlay_times = {}
        self._dirty = {}
        self._pending = []
        self._pending_meta = None
        self._meta_dirty = False
        self._metadata = dict(self._inner.metadata)
        self.observed = self._inner.observed

    # -- restore ---------------------------------------------------------------------------------------

    def restore_batch(self, entries: list[tuple[bytes, bytes | None]]) -> None:
        size = self._tsub.size
        unpack = self._tsub.unpack_from
        rows = []
        observed = self.observed
        for ck, vb in entries:
            if ck == META_KEY:
                if vb is not None:
                    self._inner.restore_metadata({k: int(v) for k, v in orjson.loads(vb).items()})
                continue
            t, sub = unpack(ck, len(ck) - size)
            if sub == BLOCK_SUB and self.sub_size == 4:
                for t, wb in _block_windows(ck, vb) if vb is not None else ():
                    rows.append((ck[:-size], t, 0, wb))
                    if wb is not None and t > observed:
                        observed = t
                continue
            rows.append((ck[:-size], t, sub, vb))
            if vb is not None and t > observed:
                observed = t
        self.observed = observed
        self._inner.restore(rows, self.min_live)
        self._metadata = dict(self._inner.metadata)

    def wipe(self) -> None:
        self._inner.wipe()
        self.discard_pending()

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._inner.close()
            self._overlay = {}
            self._overlay_times = None


def _block_windows(ck: bytes, vb: bytes) -> list[tuple[int, bytes | None]]:
    """``(window start, serialized entry or None)`` for each window start of a block record."""
    out: list[tuple[int, bytes | None]] = []
    item, at = _BLOCK_ITEM.unpack_from, _BLOCK_HEAD.size
    try:
        block, advance = _BLOCK_HEAD.unpack_from(vb)
        while at < len(vb):
            t, length = item(vb, at)
            at += _BLOCK_ITEM.size
            if length < 0:
                out.append((t, None))
            else:
                out.append((t, vb[at : at + length]))
                at += length
    except struct.error:
        block, advance = 0, 1
    if at != len(vb) or advance <= 0 or len(out) != block // advance:
        raise StateStoreError(f"changelog record {ck!r}: a damaged window block ({len(vb)} bytes)")
    return out
