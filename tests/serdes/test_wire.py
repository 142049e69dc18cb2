"""The wire format: frame header, Protobuf message indexes, and the frame errors."""

from __future__ import annotations

import io

import pytest
from confluent_kafka.schema_registry._sync.protobuf import ProtobufSerializer as CkProtobufSerializer

from serdes import SerializationError, wire


def test_prefix_is_magic_zero_and_big_endian_id() -> None:
    assert wire.prefix(1) == b"\x00\x00\x00\x00\x01"
    assert wire.prefix(0x01020304) == b"\x00\x01\x02\x03\x04"
    assert wire.read_schema_id(b"\x00\x01\x02\x03\x04payload") == 0x01020304


def test_prefix_rejects_ids_outside_int32() -> None:
    with pytest.raises(ValueError, match="does not fit"):
        wire.prefix(2**31)
    with pytest.raises(ValueError, match="does not fit"):
        wire.prefix(-1)


@pytest.mark.parametrize(
    ("indexes", "encoded"),
    [
        ([0], b"\x00"),
        ([1], b"\x02\x02"),
        ([0, 2], b"\x04\x00\x04"),
        ([3, 1, 0], b"\x06\x06\x02\x00"),
        ([64], b"\x02\x80\x01"),
    ],
)
def test_message_indexes_are_zigzag_varints_with_zero_shortcut(indexes: list[int], encoded: bytes) -> None:
    assert wire.encode_message_indexes(indexes) == encoded
    assert wire.decode_message_indexes(b"\x00\x00\x00\x00\x07" + encoded + b"rest") == (indexes, 5 + len(encoded))


@pytest.mark.parametrize("indexes", [[0], [1], [0, 2], [5, 0, 7], [200, 70000], [0, 0, 0]])
def test_message_indexes_match_confluent_kafka_bytes(indexes: list[int]) -> None:
    theirs = io.BytesIO()
    CkProtobufSerializer._encode_varints(theirs, indexes, zigzag=True)
    assert wire.encode_message_indexes(indexes) == theirs.getvalue()


def test_zero_count_reads_as_first_message() -> None:
    assert wire.decode_message_indexes(b"\x00\x00\x00\x00\x01\x00") == ([0], 6)


def test_frame_joins_prefix_indexes_and_payload() -> None:
    assert wire.frame(7, b"xy") == b"\x00\x00\x00\x00\x07xy"
    assert wire.frame(7, b"xy", [1]) == b"\x00\x00\x00\x00\x07\x02\x02xy"


def test_too_short_frame_names_topic_and_offset() -> None:
    with pytest.raises(SerializationError) as e:
        wire.read_schema_id(b"\x00\x00\x01", topic="orders")
    assert e.value.topic == "orders"
    assert e.value.offset == 3
    assert "too short" in str(e.value) and "'orders'" in str(e.value) and "payload offset 3" in str(e.value)


def test_unknown_magic_byte_names_offset_zero() -> None:
    with pytest.raises(SerializationError) as e:
        wire.read_schema_id(b"\x01\x00\x00\x00\x01abc", topic="orders")
    assert e.value.offset == 0
    assert "unknown magic byte 0x01" in str(e.value)


def test_truncated_message_indexes_raise_with_offset_and_id() -> None:
    with pytest.raises(SerializationError) as e:
        wire.decode_message_indexes(b"\x00\x00\x00\x00\x09\x04\x00\x80", topic="t", schema_id=9)
    assert (e.value.topic, e.value.schema_id, e.value.offset) == ("t", 9, 7)
    assert "truncated varint" in str(e.value)


def test_impossible_index_count_is_rejected() -> None:
    with pytest.raises(SerializationError, match="invalid Protobuf message-index count 50"):
        wire.decode_message_indexes(b"\x00\x00\x00\x00\x09\x64\x00", schema_id=9)


def test_serialization_error_is_confluent_kafkas() -> None:
    from confluent_kafka.serialization import SerializationError as CkSerializationError

    assert issubclass(SerializationError, CkSerializationError)
