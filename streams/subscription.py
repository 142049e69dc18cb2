"""The records and keys of a foreign-key join (KIP-213) and their byte layouts.

- ``Subscription(instruction, hash, primary_key)``: a left row (``primary_key``) subscribes to, or
  unsubscribes from, the right row its foreign key points to; it travels keyed by the foreign key.
- ``Response(hash, value)``: the right row's value (None: no row) for a subscriber, keyed by its primary
  key. ``hash`` is the hash of the left value the subscription was made for (None: the left row was
  deleted); the left side drops a response whose hash is no longer its row's (stale, after a change).
- ``CombinedKey(foreign_key, primary_key)``: the key of the right side's subscription store, laid out
  so that all subscribers of one foreign key are one byte range (4-byte length, foreign key bytes,
  primary key bytes), which a prefix scan reads when the right row changes.
"""

from __future__ import annotations

import hashlib
import struct
from enum import IntEnum
from typing import Any, NamedTuple

from streams.errors import SerdeError
from streams.record_serdes import BindingSerde, Deserializer, Serializer, bind_deserializer, bind_serializer

__all__ = [
    "CombinedKey",
    "CombinedKeySerde",
    "Instruction",
    "Response",
    "ResponseSerde",
    "Subscription",
    "SubscriptionSerde",
    "value_hash",
]

_LEN = struct.Struct(">i")
HASH_SIZE = 16
_VERSION = 0


class Instruction(IntEnum):
    """What the right side does with a subscription (Kafka Streams' ``SubscriptionWrapper.Instruction``)."""

    DELETE_KEY_AND_PROPAGATE = 0  # the left row is gone: unsubscribe, answer so the result is deleted
    DELETE_KEY_NO_PROPAGATE = 1  # the foreign key changed: unsubscribe from the old one silently
    PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE = 2  # answer even without a right row (left join; changed key)
    PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE = 3  # answer only with a right row (inner join, same key)


class Subscription(NamedTuple):
    instruction: Instruction
    hash: bytes | None
    primary_key: Any


class Response(NamedTuple):
    hash: bytes | None
    value: Any


class CombinedKey(NamedTuple):
    foreign_key: Any
    primary_key: Any


def value_hash(data: bytes | None) -> bytes:
    """A stable 128-bit hash of a serialized left value."""
    return hashlib.blake2b(data or b"", digest_size=HASH_SIZE).digest()


def _split_hash(data: bytes, at: int, present: bool, topic: str) -> tuple[bytes | None, int]:
    if not present:
        return None, at
    if len(data) < at + HASH_SIZE:
        raise SerdeError(f"topic {topic!r}: a foreign-key join record is truncated (no room for its hash)")
    return data[at : at + HASH_SIZE], at + HASH_SIZE


class SubscriptionSerde(BindingSerde):
    """``[version][instruction][has hash][hash?][primary key bytes]``; the primary key with ``key``."""

    def __init__(self, key: Any) -> None:
        self.key = key

    def bind_serializer(self, topic: str, is_key: bool) -> Serializer:
        kser = bind_serializer(self.key, topic, True)

        def serialize(sub: Any) -> bytes | None:
            if sub is None:
                return None
            h = sub.hash
            head = bytes((_VERSION, int(sub.instruction), 0 if h is None else 1))
            return head + (h or b"") + (kser(sub.primary_key) or b"")

        return serialize

    def bind_deserializer(self, topic: str, is_key: bool) -> Deserializer:
        kde = bind_deserializer(self.key, topic, True)

        def deserialize(data: bytes | None) -> Any:
            if data is None:
                return None
            if len(data) < 3 or data[0] != _VERSION:
                raise SerdeError(f"topic {topic!r}: not a foreign-key join subscription (version {data[:1]!r})")
            h, at = _split_hash(data, 3, data[2] == 1, topic)
            return Subscription(Instruction(data[1]), h, kde(data[at:]))

        return deserialize

    def __repr__(self) -> str:
        return f"SubscriptionSerde({self.key!r})"


class ResponseSerde(BindingSerde):
    """``[version][flags: 1 hash, 2 value][hash?][value bytes?]``; the value with ``value``."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def bind_serializer(self, topic: str, is_key: bool) -> Serializer:
        vser = bind_serializer(self.value, topic, False)

        def serialize(resp: Any) -> bytes | None:
            if resp is None:
                return None
            vb = None if resp.value is None else vser(resp.value)
            flags = (0 if resp.hash is None else 1) | (0 if vb is None else 2)
            return bytes((_VERSION, flags)) + (resp.hash or b"") + (vb or b"")

        return serialize

    def bind_deserializer(self, topic: str, is_key: bool) -> Deserializer:
        vde = bind_deserializer(self.value, topic, False)

        def deserialize(data: bytes | None) -> Any:
            if data is None:
                return None
            if len(data) < 2 or data[0] != _VERSION:
                raise SerdeError(f"topic {topic!r}: not a foreign-key join response (version {data[:1]!r})")
            h, at = _split_hash(data, 2, bool(data[1] & 1), topic)
            return Response(h, vde(data[at:]) if data[1] & 2 else None)

        return deserialize

    def __repr__(self) -> str:
        return f"ResponseSerde({self.value!r})"


class CombinedKeySerde(BindingSerde):
    """``CombinedKey`` as ``[4-byte length of the foreign key bytes][foreign key bytes][primary key bytes]``.
    A ``CombinedKey`` whose primary key is None serializes to the prefix alone (a range's start)."""

    def __init__(self, foreign_key: Any, primary_key: Any) -> None:
        self.foreign_key = foreign_key
        self.primary_key = primary_key

    def bind_serializer(self, topic: str, is_key: bool) -> Serializer:
        fser = bind_serializer(self.foreign_key, topic, True)
        pser = bind_serializer(self.primary_key, topic, True)

        def serialize(ck: Any) -> bytes | None:
            fb = fser(ck.foreign_key) or b""
            pb = b"" if ck.primary_key is None else (pser(ck.primary_key) or b"")
            return _LEN.pack(len(fb)) + fb + pb

        return serialize

    def bind_deserializer(self, topic: str, is_key: bool) -> Deserializer:
        fde = bind_deserializer(self.foreign_key, topic, True)
        pde = bind_deserializer(self.primary_key, topic, True)

        def deserialize(data: bytes | None) -> Any:
            if data is None:
                return None
            (n,) = _LEN.unpack_from(data)
            return CombinedKey(fde(data[4 : 4 + n]), pde(data[4 + n :]))

        return deserialize

    def __repr__(self) -> str:
        return f"CombinedKeySerde({self.foreign_key!r}, {self.primary_key!r})"
