"""The Confluent wire format, in one place.

A framed payload is ``0x00`` (magic byte), the schema id as a 4-byte big-endian signed int, then for Protobuf
the message-index path as zig-zag varints (count, then each index; the common ``[0]`` is the single byte
``0x00``), then the encoded record. serdes builds and checks frames with this module; the Spark Python engine also reads
the headers of a whole Arrow batch at once with numpy.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

from serdes.errors import SerializationError

MAGIC_BYTE = 0
PREFIX_SIZE = 5  # magic byte + schema id

_ID = struct.Struct(">BI")


def prefix(schema_id: int) -> bytes:
    """The 5-byte frame header for ``schema_id``."""
    if not 0 <= schema_id <= 0x7FFFFFFF:
        raise ValueError(f"schema id {schema_id} does not fit the wire format (0..2^31-1)")
    return _ID.pack(MAGIC_BYTE, schema_id)


def encode_varint(value: int, out: bytearray) -> None:
    """Append ``value`` as a zig-zag varint (Kafka ``ByteUtils.writeVarint``)."""
    n = (value << 1) ^ (value >> 31)
    n &= 0xFFFFFFFF
    while n & ~0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)


def encode_message_indexes(indexes: Sequence[int]) -> bytes:
    """The Protobuf message-index path; ``[0]`` (first top-level message) is the single byte 0x00."""
    if not indexes:
        raise ValueError("a message-index path needs at least one index")
    if len(indexes) == 1 and indexes[0] == 0:
        return b"\x00"
    out = bytearray()
    encode_varint(len(indexes), out)
    for i in indexes:
        encode_varint(i, out)
    return bytes(out)


def read_unsigned_varint(data: bytes, pos: int) -> tuple[int, int]:
    """Read one unsigned base-128 varint at ``pos`` (Protobuf's encoding, and Avro's before its zig-zag step);
    returns (value, next position). ``IndexError`` past the end, ``ValueError`` past 10 bytes."""
    n = shift = 0
    while True:
        b = data[pos]
        pos += 1
        n |= (b & 0x7F) << shift
        if not b & 0x80:
            return n, pos
        shift += 7
        if shift > 63:
            raise ValueError("varint longer than 10 bytes")


def decode_varint(data: bytes, pos: int, topic: str | None = None, schema_id: int | None = None) -> tuple[int, int]:
    """Read one zig-zag varint at ``pos``; returns (value, next position)."""
    shift = 0
    n = 0
    start = pos
    while True:
        if pos >= len(data):
            raise SerializationError(
                "truncated varint in the Protobuf message indexes", topic=topic, offset=start, schema_id=schema_id
            )
        b = data[pos]
        pos += 1
        n |= (b & 0x7F) << shift
        if not b & 0x80:
            break
        shift += 7
        if shift > 28:
            raise SerializationError(
                "varint longer than 5 bytes in the Protobuf message indexes",
                topic=topic,
                offset=start,
                schema_id=schema_id,
            )
    return (n >> 1) ^ -(n & 1), pos


def decode_message_indexes(
    data: bytes, pos: int = PREFIX_SIZE, topic: str | None = None, schema_id: int | None = None
) -> tuple[list[int], int]:
    """Read the message-index path starting at ``pos``; returns (indexes, position of the payload).

    A count of 0 means ``[0]``, as written by the single-byte shortcut.
    """
    count, pos = decode_varint(data, pos, topic, schema_id)
    if count == 0:
        return [0], pos
    if count < 0 or count > len(data) - pos:
        raise SerializationError(
            f"invalid Protobuf message-index count {count}", topic=topic, offset=pos - 1, schema_id=schema_id
        )
    indexes = []
    for _ in range(count):
        i, pos = decode_varint(data, pos, topic, schema_id)
        if i < 0:
            raise SerializationError(
                f"negative Protobuf message index {i}", topic=topic, offset=pos - 1, schema_id=schema_id
            )
        indexes.append(i)
    return indexes, pos


def read_schema_id(data: bytes | bytearray | memoryview | None, topic: str | None = None) -> int:
    """Check the frame header and return the schema id; raises SerializationError for a bad frame."""
    if data is None:
        raise SerializationError("no payload (None) to deserialize", topic=topic, offset=0)
    if len(data) < PREFIX_SIZE:
        raise SerializationError(
            f"payload of {len(data)} bytes is too short for the 5-byte schema-registry frame header",
            topic=topic,
            offset=len(data),
        )
    if data[0] != MAGIC_BYTE:
        raise SerializationError(
            f"unknown magic byte 0x{data[0]:02x} (expected 0x00): not schema-registry framed data",
            topic=topic,
            offset=0,
        )
    return _ID.unpack_from(data, 0)[1]


def frame(schema_id: int, payload: bytes, message_indexes: Sequence[int] | None = None) -> bytes:
    """A whole framed record (handy outside the hot path; serializers cache ``prefix`` instead)."""
    head = prefix(schema_id)
    if message_indexes is not None:
        head += encode_message_indexes(message_indexes)
    return head + payload
