"""The time-ordered buffer of a stream-table join with a grace period (KIP-923; Kafka's
``RocksDBTimeOrderedKeyValueBuffer``): stream records wait here until stream time minus the grace reaches
their timestamp, then leave in (timestamp, key bytes, arrival) order, as Kafka's time-first keys order them.

It lives in memory and is changelogged, so a restarted task gets back exactly the records that were waiting at
its last commit (none joined twice, none lost), with their headers. Changelog record: key = 8-byte timestamp,
4-byte sequence number, the key's bytes; value = the length of the headers (4 bytes), the headers (the SQLite
log's encoding), the value's bytes; a tombstone once the record has left. A record that
arrives and leaves between two commits is never logged. One more record (``META_KEY``) carries the buffer's
observed stream time.
"""

from __future__ import annotations

import heapq
import struct
from typing import TYPE_CHECKING, Any

import orjson

from streams.errors import SerdeError
from streams.log.sqlite.connection import decode_headers, encode_headers
from streams.record_serdes import serde_name
from streams.state.base import ChangelogSink, Headers
from streams.state.store_serdes import StoreSerdes
from streams.state.timed import META_KEY

if TYPE_CHECKING:
    from streams.processor import RecordContext

__all__ = ["TimeOrderedBuffer"]

_HEAD = struct.Struct(">qi")  # timestamp, sequence number
_LEN = struct.Struct(">I")
#: A buffered record: (timestamp, key bytes, seq, key, value, headers); the first three order them.
Waiting = tuple[int, bytes, int, Any, Any, Any]


class TimeOrderedBuffer(StoreSerdes):
    persistent = False
    stream_time = -1  # keeps its own observed time (``observed``), not the task's
    _noun = "join buffer"

    def __init__(self, name: str, key_serde: Any, value_serde: Any, topic: str, record_context: RecordContext):
        super().__init__(name, key_serde, value_serde, topic, record_context)
        self._heap: list[Waiting] = []  # a heap: the smallest is the next to leave
        self._seq = 0
        self._dirty: dict[bytes, Waiting | None] = {}  # changelog key -> the record, None: it left
        self._logged: set[bytes] = set()
        #: The largest timestamp buffered (Kafka's ``observedStreamTime`` of the buffer).
        self.observed = -1
        self._meta_dirty = False
        self.changelog: ChangelogSink | None = None
        self.closed = False

    def __len__(self) -> int:
        return len(self._heap)

    def estimate_num_entries(self) -> int:
        return len(self._heap)

    def put(self, key: Any, value: Any, timestamp: int, grace_ms: int) -> bool:
        """Buffer a record (with the current record's headers) unless it is already older than stream time
        minus ``grace_ms`` (then False: it should join at once, as Kafka's buffer ``put`` answers)."""
        if timestamp > self.observed:
            self.observed = timestamp
            self._meta_dirty = True
        elif self.observed - grace_ms > timestamp:
            return False
        kb = self.key_bytes(key)
        self._seq = seq = (self._seq + 1) & 0x7FFFFFFF
        item = (timestamp, kb, seq, key, value, self._rc.headers)
        heapq.heappush(self._heap, item)
        self._dirty[_HEAD.pack(timestamp, seq) + kb] = item
        return True

    def pop_due(self, grace_ms: int) -> list[tuple[Any, Any, int, Any]]:
        """``(key, value, timestamp, headers)`` of every record at or before stream time minus ``grace_ms``, in
        order."""
        deadline = self.observed - grace_ms
        heap, dirty, logged = self._heap, self._dirty, self._logged
        out = []
        while heap and heap[0][0] <= deadline:
            ts, kb, seq, key, value, headers = heapq.heappop(heap)
            ck = _HEAD.pack(ts, seq) + kb
            if ck in logged:
                dirty[ck] = None
            else:
                dirty.pop(ck, None)  # never logged: no record needed at all
            out.append((key, value, ts, headers))
        return out

    # -- commit protocol -------------------------------------------------------------------------------

    @property
    def dirty_count(self) -> int:
        return len(self._dirty) + self._meta_dirty

    def flush(self, headers: Headers | None) -> int:
        out: list[tuple[bytes, bytes | None]] = []
        logged, vser = self._logged, self._vser
        for ck, entry in self._dirty.items():
            if entry is None:
                out.append((ck, None))
                logged.discard(ck)
                continue
            try:
                vb = vser(entry[4])
            except Exception as exc:
                raise SerdeError(
                    f"join buffer {self.name!r}: cannot serialize the value of key {entry[3]!r} with "
                    f"{serde_name(self.value_serde)}: {exc}"
                ) from exc
            hb = encode_headers(entry[5]) or b""
            out.append((ck, _LEN.pack(len(hb)) + hb + (vb or b"")))
            logged.add(ck)
        self._dirty = {}
        if self._meta_dirty:
            self._meta_dirty = False
            out.append((META_KEY, orjson.dumps({"observed": self.observed})))
        if out and self.changelog is not None:
            self.changelog.send_batch(out, headers)
        return len(out)

    def persist(self) -> bool:
        return False

    def discard_pending(self) -> None:
        """In memory only: a task whose commit failed is closed and restored from the changelog."""
        self._dirty = {}
        self._meta_dirty = False

    def restore_batch(self, entries: list[tuple[bytes, bytes | None]]) -> None:
        waiting: dict[bytes, Waiting] = {_HEAD.pack(item[0], item[2]) + item[1]: item for item in self._heap}
        for ck, vb in entries:
            if ck == META_KEY:
                if vb is not None:
                    self.observed = max(self.observed, int(orjson.loads(vb).get("observed", -1)))
                continue
            if vb is None:
                waiting.pop(ck, None)
                continue
            ts, seq = _HEAD.unpack_from(ck)
            kb = ck[_HEAD.size :]
            (hlen,) = _LEN.unpack_from(vb)
            headers = decode_headers(vb[4 : 4 + hlen])
            waiting[ck] = (ts, kb, seq, self._kde(kb), self._vde(vb[4 + hlen :]), headers)
            self._seq = max(self._seq, seq)
        self._heap = list(waiting.values())
        heapq.heapify(self._heap)
        self._logged = set(waiting)

    def wipe(self) -> None:
        self._heap = []
        self._dirty = {}
        self._logged = set()
        self.observed = -1
        self._meta_dirty = False

    def close(self) -> None:
        self.closed = True
