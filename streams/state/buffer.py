"""The suppression buffer: the latest update per key, held until it is due, then evicted in due order.

It lives in memory and is changelogged (compacted), so a restarted task gets back exactly the updates
that were buffered at its last commit: a final result is neither lost nor emitted twice because of the
restart. Changelog record: key = the table key's bytes; value = due time, record timestamp (8-byte
big-endian each), the length of the prior value (4 bytes, -1 for none), the prior value, a flag byte (1:
a new value follows, 0: the update was a delete) and the new value. Evicted keys are deleted (tombstones).

An update to a buffered key keeps its place (its due time) and replaces its value; the prior value (what
downstream saw last) stays, so the update that is finally emitted is ``Change(latest, prior)``.

A buffer that is ``derived`` (final results right below a time-windowed aggregation, ``streams/suppress.py``)
writes no changelog records: what it holds at a commit is what the window store holds, and a restore
rebuilds it from there (``rebuild``).

Keys wait in one queue per due time, in the order they were first buffered; a heap holds the distinct due
times. Final results share few due times (one per window end), so buffering and evicting a key costs a
queue append and pop, not a heap operation among every buffered key.
"""

from __future__ import annotations

import heapq
import struct
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

import orjson

from streams.state.base import ChangelogSink, Headers
from streams.state.store_serdes import StoreSerdes
from streams.state.timed import META_KEY
from streams.windowed_serdes import pack_window_start

if TYPE_CHECKING:
    from streams.processor import RecordContext

__all__ = ["BufferedUpdate", "SuppressionBuffer"]

_HEAD = struct.Struct(">qqi")


class BufferedUpdate:
    __slots__ = ("due", "key", "new", "prior", "seq", "size", "timestamp")

    def __init__(self, key: Any, new: Any, prior: Any, timestamp: int, due: int, seq: int, size: int) -> None:
        self.key = key
        self.new = new
        self.prior = prior
        self.timestamp = timestamp
        self.due = due
        self.seq = seq
        self.size = size


class SuppressionBuffer(StoreSerdes):
    persistent = False
    _noun = "suppression buffer"

    def __init__(
        self,
        name: str,
        key_serde: Any,
        value_serde: Any,
        topic: str,
        record_context: RecordContext,
        count_bytes: bool = False,
    ) -> None:
        super().__init__(name, key_serde, value_serde, topic, record_context)
        self._count_bytes = count_bytes
        self._entries: dict[bytes, BufferedUpdate] = {}
        self._queues: dict[int, deque[bytes]] = {}  # due time -> keys, first buffered first
        self._dues: list[int] = []  # a heap of the due times in ``_queues``
        self._seq = 0
        self._dirty: set[bytes] = set()
        # Keys whose last changelog record holds an update (the buffer as of the last flush): a key buffered
        # and evicted between two flushes never needs a record at all.
        self._logged: set[bytes] = set()
        self._metadata: dict[str, int] = {}
        self._meta_dirty = False
        self.size_bytes = 0
        self.changelog: ChangelogSink | None = None
        self.closed = False
        #: Rebuilt from another store at restore: no changelog records (its changelog topic is still read
        #: at restore, for what a buffer logged before it was derived).
        self.derived = False

    # -- values ----------------------------------------------------------------------------------------

    def _encode(self, u: BufferedUpdate) -> bytes:
        # Once per buffered key and commit: the values are serialized here directly; a serializer that fails is
        # called again through ``value_bytes``, which raises the error naming the buffer.
        vser = self._vser
        try:
            prior = None if u.prior is None else vser(u.prior)
            new = None if u.new is None else vser(u.new)
        except Exception:
            prior = self.value_bytes(u.prior)
            new = self.value_bytes(u.new)
        head = _HEAD.pack(u.due, u.timestamp, -1 if prior is None else len(prior))
        return head + (prior or b"") + (b"\x00" if new is None else b"\x01" + new)

    def _decode(self, key: Any, vb: bytes) -> BufferedUpdate:
        due, ts, prior_len = _HEAD.unpack_from(vb)
        at = _HEAD.size
        prior = None
        if prior_len >= 0:
            prior = self._vde(vb[at : at + prior_len])
            at += prior_len
        new = self._vde(vb[at + 1 :]) if vb[at : at + 1] == b"\x01" else None
        return BufferedUpdate(key, new, prior, ts, due, 0, len(vb) if self._count_bytes else 0)

    # -- buffering -------------------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._entries)

    def estimate_num_entries(self) -> int:
        return len(self._entries)

    @property
    def min_due(self) -> int | None:
        """The earliest due time (a due time's queue is dropped with its last key)."""
        return self._dues[0] if self._dues else None

    def put(self, kb: bytes, key: Any, new: Any, old: Any, timestamp: int, due: int) -> int:
        """Buffer an update of ``key`` (``old``: what downstream saw before it); returns the earliest due time."""
        u = self._entries.get(kb)
        if u is None:
            self._seq += 1
            u = self._entries[kb] = BufferedUpdate(key, new, old, timestamp, due, self._seq, 0)
            self._enqueue(due, kb)
        else:
            u.new, u.timestamp = new, timestamp
        if self._count_bytes:
            self.size_bytes -= u.size
            u.size = len(kb) + len(self._encode(u))
            self.size_bytes += u.size
        if not self.derived:
            self._dirty.add(kb)
        return self._dues[0]

    def put_windows(
        self,
        changes: list[tuple[bytes, Any, int, Any, int]],
        due_offset: int,
        windowed: Callable[[Any, int], Any] | None,
        observed: int,
        emit: Callable[[int], None],
    ) -> int:
        """``put`` for a derived buffer that counts no bytes, of a window store's flushed changes (what a suppression
        gets straight from the store): ``(key bytes, key, window start, entry or None, timestamp)`` each, in order,
        with no prior value; buffered under the store's key bytes and the window start, due at ``start +
        due_offset``. The buffered key, ``windowed(key, start)``, is made when a window is first buffered (None
        without ``windowed``: a suppression that emits by key bytes, ``send_due``). ``observed``, the buffer's
        stream time, follows the timestamps, and ``emit(observed)`` runs as soon as an update is due by it. Returns
        the stream time."""
        entries, queues, dues, pack = self._entries, self._queues, self._dues, pack_window_start
        seq = self._seq
        try:
            for kb, key, start, entry, ts in changes:
                if ts > observed:
                    observed = ts
                bk = kb + pack(start)
                new = None if entry is None else entry[0]
                u = entries.get(bk)
                if u is None:
                    seq += 1
                    due = start + due_offset
                    entries[bk] = BufferedUpdate(
                        None if windowed is None else windowed(key, start), new, None, ts, due, seq, 0
                    )
                    queue = queues.get(due)
                    if queue is None:
                        queue = queues[due] = deque()
                        heapq.heappush(dues, due)
                    queue.append(bk)
                else:
                    u.new, u.timestamp = new, ts
                if dues[0] <= observed:
                    emit(observed)
        finally:
            self._seq = seq
        return observed

    def _enqueue(self, due: int, kb: bytes) -> None:
        queue = self._queues.get(due)
        if queue is None:
            queue = self._queues[due] = deque()
            heapq.heappush(self._dues, due)
        queue.append(kb)

    def pop_due(self, now: int) -> list[BufferedUpdate]:
        """Evict, in due order, every update due at or before ``now``."""
        dues, queues, entries, dirty = self._dues, self._queues, self._entries, self._dirty
        out = []
        size = 0
        while dues and dues[0] <= now:
            keys = queues.pop(heapq.heappop(dues))
            if not self.derived:
                dirty.update(keys)
            for kb in keys:
                u = entries.pop(kb)
                size += u.size
                out.append(u)
        self.size_bytes -= size
        return out

    def send_due(self, now: int, send: Callable[[Iterable[tuple[bytes, Any, int]]], None]) -> None:
        """Evict, in due order, every update of a derived buffer due at or before ``now``, handing the new values
        to one ``send`` call as rows of ``(key bytes, value, timestamp)`` (a delete goes unsent)."""
        send(self._evict_due(now))

    def _evict_due(self, now: int) -> Iterator[tuple[bytes, Any, int]]:
        """``send_due``'s rows, each evicted as it is taken."""
        dues, queues, entries = self._dues, self._queues, self._entries
        size = 0
        try:
            while dues and dues[0] <= now:
                for kb in queues.pop(heapq.heappop(dues)):
                    u = entries.pop(kb)
                    size += u.size
                    if u.new is not None:
                        yield kb, u.new, u.timestamp
        finally:
            self.size_bytes -= size

    def pop_oldest(self) -> BufferedUpdate:
        due = self._dues[0]
        queue = self._queues[due]
        kb = queue.popleft()
        if not queue:
            del self._queues[due]
            heapq.heappop(self._dues)
        u = self._entries.pop(kb)
        self.size_bytes -= u.size
        self._dirty.add(kb)
        return u

    # -- time ------------------------------------------------------------------------------------------

    @property
    def stream_time(self) -> int:
        return self._metadata.get("stream_time", -1)

    @stream_time.setter
    def stream_time(self, value: int) -> None:
        if self._metadata.get("stream_time") != value:
            self._metadata["stream_time"] = value
            self._meta_dirty = True

    # -- commit protocol -------------------------------------------------------------------------------

    @property
    def dirty_count(self) -> int:
        return len(self._dirty) + self._meta_dirty

    def rebuild(self, updates: list[tuple[bytes, BufferedUpdate]]) -> None:
        """Hold exactly ``updates`` (key bytes, update), buffered in that order, and log nothing from now on."""
        self.derived = True
        self._entries, self._queues, self._dues = {}, {}, []
        self.size_bytes = 0
        self._dirty = set()
        for kb, u in updates:
            self._seq += 1
            u.seq = self._seq
            if self._count_bytes:
                u.size = len(kb) + len(self._encode(u))
                self.size_bytes += u.size
            self._entries[kb] = u
            self._enqueue(u.due, kb)

    def flush(self, headers: Headers | None) -> int:
        if self.derived:
            self._dirty = set()
            self._meta_dirty = False
            return 0
        out: list[tuple[bytes, bytes | None]] = []
        logged, entries, encode = self._logged, self._entries, self._encode
        for kb in self._dirty:
            u = entries.get(kb)
            if u is not None:
                out.append((kb, encode(u)))
                logged.add(kb)
            elif kb in logged:
                out.append((kb, None))
                logged.discard(kb)
        self._dirty = set()
        if self._meta_dirty:
            self._meta_dirty = False
            out.append((META_KEY, orjson.dumps(self._metadata)))
        if out and self.changelog is not None:
            self.changelog.send_batch(out, headers)
        return len(out)

    def persist(self) -> bool:
        return False

    def discard_pending(self) -> None:
        """In memory only: a task whose commit failed is closed and restored from the changelog."""
        self._dirty = set()
        self._meta_dirty = False

    def restore_batch(self, entries: list[tuple[bytes, bytes | None]]) -> None:
        for kb, vb in entries:
            if kb == META_KEY:
                if vb is not None:
                    self._metadata = {k: int(v) for k, v in orjson.loads(vb).items()}
                continue
            old = self._entries.pop(kb, None)
            if old is not None:
                self.size_bytes -= old.size
            if vb is not None:
                u = self._decode(self._kde(kb), vb)
                self._seq += 1
                u.seq = self._seq
                if self._count_bytes:
                    u.size = len(kb) + len(vb)
                    self.size_bytes += u.size
                self._entries[kb] = u
        self._queues, self._dues = {}, []
        for u, kb in sorted(((u, kb) for kb, u in self._entries.items()), key=lambda ukb: (ukb[0].due, ukb[0].seq)):
            self._enqueue(u.due, kb)
        self._logged = set(self._entries)

    def wipe(self) -> None:
        self._entries.clear()
        self._queues, self._dues = {}, []
        self._dirty = set()
        self._logged = set()
        self._metadata = {}
        self.size_bytes = 0

    def close(self) -> None:
        self.closed = True
