"""``Change``: a table update as it travels between table operations — the new value and, where a
downstream operation asked for it, the value it replaces (Kafka Streams' ``Change``).

``ChangeSerde`` carries changes through a repartition topic (``KTable.group_by``) in Kafka Streams' byte
layout: the old value then ``0x00``; the new value then ``0x01``; or a zig-zag varint of the new value's
length, the new value, the old value, then ``0x02``.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from streams.errors import SerdeError
from streams.record_serdes import Deserializer, Serializer, WrappingSerde, bind_deserializer, bind_serializer

__all__ = ["Change", "ChangeSerde", "OutOfOrderChange"]


class Change(NamedTuple):
    new: Any
    old: Any = None

    @property
    def is_latest(self) -> bool:
        """Whether ``new`` is the table's current value (Kafka's ``Change.isLatest``, KIP-914): False only for
        an out-of-order update of a versioned table, which went into its history."""
        return True


class OutOfOrderChange(Change):
    """An update of a versioned table older than its current value: it went into the history, and is not the
    table's value downstream (joins, re-grouping and foreign-key joins skip it; ``to_stream`` passes it on)."""

    __slots__ = ()

    @property
    def is_latest(self) -> bool:
        return False


# ``_new_change(Change, (new, old))`` is ``Change(new, old)`` without the NamedTuple's Python-level ``__new__``
# (~0.3 us of ~0.5 us): for the runtime's paths that make one per window update. Private: it checks nothing
# (any tuple becomes a Change), so it is not for users.
_new_change = tuple.__new__


def _varint(n: int) -> bytes:
    z = (n << 1) ^ (n >> 31)
    out = bytearray()
    while z & ~0x7F:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


def _read_varint(data: bytes) -> tuple[int, int]:
    z = shift = 0
    for i, byte in enumerate(data):
        z |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return (z >> 1) ^ -(z & 1), i + 1
        shift += 7
        if shift > 28:
            break
    raise SerdeError("a change record has a malformed length prefix")


class ChangeSerde(WrappingSerde):
    """Serializes ``Change(new, old)`` with ``inner`` for both values."""

    def bind_serializer(self, topic: str, is_key: bool) -> Serializer:
        ser = bind_serializer(self.inner, topic, is_key)

        def serialize(change: Any) -> bytes | None:
            if change is None:
                return None
            new = None if change.new is None else ser(change.new)
            old = None if change.old is None else ser(change.old)
            if new is not None and old is not None:
                return _varint(len(new)) + new + old + b"\x02"
            if new is not None:
                return new + b"\x01"
            if old is not None:
                return old + b"\x00"
            raise SerdeError(f"topic {topic!r}: a change with neither a new nor an old value cannot be sent")

        return serialize

    def bind_deserializer(self, topic: str, is_key: bool) -> Deserializer:
        de = bind_deserializer(self.inner, topic, is_key)

        def deserialize(data: bytes | None) -> Any:
            if data is None:
                return None
            flag = data[-1:]
            if flag == b"\x01":
                return Change(de(data[:-1]), None)
            if flag == b"\x00":
                return Change(None, de(data[:-1]))
            if flag == b"\x02":
                length, at = _read_varint(data)
                return Change(de(data[at : at + length]), de(data[at + length : -1]))
            raise SerdeError(f"topic {topic!r}: not a change record (flag byte {flag!r})")

        return deserialize
