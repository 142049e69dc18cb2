"""The built-in serdes and how serde specs are resolved."""

from __future__ import annotations

import struct

import pytest

from streams.record_serdes import (
    BYTES,
    FLOAT,
    INT,
    JSON,
    STRING,
    CallableSerde,
    bind_deserializer,
    bind_serializer,
    serde_from,
)


def test_builtins_round_trip_and_match_kafka_formats() -> None:
    assert STRING.serialize("héllo", "t", False) == "héllo".encode()
    assert INT.serialize(-2, "t", False) == struct.pack(">q", -2)  # Kafka's LongSerializer
    assert FLOAT.serialize(1.5, "t", False) == struct.pack(">d", 1.5)  # Kafka's DoubleSerializer
    assert JSON.serialize({"a": [1, 2]}, "t", False) == b'{"a":[1,2]}'
    assert BYTES.serialize(b"\x00\x01", "t", False) == b"\x00\x01"
    for serde, value in [(STRING, "x"), (INT, 2**62), (FLOAT, -0.25), (JSON, {"k": None}), (BYTES, b"")]:
        assert serde.deserialize(serde.serialize(value, "t", True), "t", True) == value


def test_none_is_null_both_ways_without_calling_the_serde() -> None:
    calls = []
    pair = CallableSerde(lambda o: calls.append(o) or b"x", lambda d: calls.append(d) or "y")
    for serde in (STRING, INT, FLOAT, JSON, BYTES, pair):
        assert bind_serializer(serde, "t", False)(None) is None
        assert bind_deserializer(serde, "t", False)(None) is None
    assert calls == []


def test_specs_name_builtins() -> None:
    assert serde_from(str) is STRING and serde_from("string") is STRING
    assert serde_from(int) is INT and serde_from("long") is INT
    assert serde_from(float) is FLOAT and serde_from(bytes) is BYTES and serde_from("json") is JSON
    assert serde_from(None) is None


def test_pair_of_callables_and_duck_typed_objects() -> None:
    pair = serde_from((lambda s: s[::-1].encode(), lambda b: b.decode()[::-1]))
    assert pair.deserialize(pair.serialize("abc", "t", False), "t", False) == "abc"

    class Upper:
        def serialize(self, obj: str, topic: str, is_key: bool) -> bytes:
            return f"{topic}:{is_key}:{obj.upper()}".encode()

        def deserialize(self, data: bytes, topic: str, is_key: bool) -> str:
            return data.decode()

    upper = Upper()
    assert serde_from(upper) is upper
    assert bind_serializer(upper, "orders", True)("a") == b"orders:True:A"


def test_wrong_types_and_sizes_are_clear_errors() -> None:
    with pytest.raises(TypeError, match="string serde needs a str, got int"):
        STRING.serialize(3, "t", False)
    with pytest.raises(ValueError, match="exactly 8 bytes"):
        INT.deserialize(b"\x01", "t", False)
    with pytest.raises(TypeError, match="value serde of x: 42 is not a serde"):
        serde_from(42, "value serde of x")
