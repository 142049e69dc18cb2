"""Serdes for windowed keys, byte-compatible with Kafka Streams, so that Java and confluent-kafka
consumers can read the output of windowed aggregations:

- ``TimeWindowedSerde`` (``TimeWindowedSerializer``): the inner key's bytes, then the window start as an
  8-byte big-endian long. The end is not written: the deserializer adds the window size to the start.
- ``SessionWindowedSerde`` (``SessionWindowedSerializer``): the inner key's bytes, then the session end,
  then its start (8-byte big-endian longs).

A windowed aggregation's table carries the right one as its key serde; ``WindowedSerdes`` makes them for
reading its output topic elsewhere (``TopologyTestDriver.output_topic``, another application).
"""

from __future__ import annotations

import struct
from datetime import timedelta
from typing import Any

from streams.errors import SerdeError
from streams.record_serdes import (
    Deserializer,
    Serializer,
    WrappingSerde,
    bind_deserializer,
    bind_serializer,
    serde_from,
)
from streams.windows import SessionWindow, TimeWindow, Windowed, to_millis

__all__ = ["SessionWindowedSerde", "TimeWindowedSerde", "WindowedSerdes", "pack_window_start"]

_LONG = struct.Struct(">q")
#: The window start as a time-windowed key's bytes end with it (``TimeWindowedSerde``: the inner key's bytes, then
#: the start): ``key bytes + pack_window_start(start)`` is the key a sink writes for a window store's key bytes, which
#: final results sent straight from a store or a suppression buffer rely on.
pack_window_start = _LONG.pack
_TWO_LONGS = struct.Struct(">qq")
_IMMUTABLE = (str, bytes, int, float)  # key types whose bytes may be remembered by identity


def _windowed(obj: Any, topic: str) -> Windowed:
    if not isinstance(obj, Windowed):  # (a subclass passes)
        raise SerdeError(f"topic {topic!r}: a windowed key serde needs a Windowed key, got {obj!r:.80}")
    return obj


class _WindowedKeySerde(WrappingSerde):
    """A serde of windowed keys: only the defaults of a single call are its own (a key, any topic)."""

    def serialize(self, obj: Any, topic: str = "", is_key: bool = True) -> bytes | None:
        return super().serialize(obj, topic, is_key)

    def deserialize(self, data: bytes | None, topic: str = "", is_key: bool = True) -> Any:
        return super().deserialize(data, topic, is_key)


class TimeWindowedSerde(_WindowedKeySerde):
    """Keys ``Windowed(key, TimeWindow)``: inner key bytes + 8-byte big-endian window start."""

    def __init__(self, inner: Any, window_size_ms: int | None) -> None:
        super().__init__(inner)
        self.window_size_ms = window_size_ms

    def bind_serializer(self, topic: str, is_key: bool) -> Serializer:
        ser = bind_serializer(self.inner, topic, is_key)
        pack = _LONG.pack
        # (inner key, its bytes) of the last call with an immutable key: a record's windows (hopping) reach
        # here one after another with the same key object. One tuple, replaced whole: safe across threads.
        last: list[tuple[Any, bytes]] = [(None, b"")]

        def serialize(obj: Any) -> bytes | None:
            if obj is None:
                return None
            if type(obj) is not Windowed:
                _windowed(obj, topic)
            key = obj.key
            memo = last[0]
            if key is memo[0] and key is not None:
                return memo[1] + pack(obj.window.start)
            kb = ser(key)
            if kb is None:
                raise SerdeError(f"topic {topic!r}: the key of a windowed key must not be None")
            if type(key) in _IMMUTABLE:
                last[0] = (key, kb)
            return kb + pack(obj.window.start)

        return serialize

    def bind_deserializer(self, topic: str, is_key: bool) -> Deserializer:
        de = bind_deserializer(self.inner, topic, is_key)
        size = self.window_size_ms
        unpack = _LONG.unpack_from

        def deserialize(data: bytes | None) -> Any:
            if data is None:
                return None
            if size is None:
                raise SerdeError(
                    f"topic {topic!r}: reading time-windowed keys needs the window size "
                    "(WindowedSerdes.time_windowed(inner, window_size))"
                )
            if len(data) < 8:
                raise SerdeError(f"topic {topic!r}: a time-windowed key has at least 8 bytes, got {len(data)}")
            (start,) = unpack(data, len(data) - 8)
            return Windowed(de(data[:-8]), TimeWindow(start, start + size))

        return deserialize

    def __repr__(self) -> str:
        return f"TimeWindowedSerde({self.inner!r}, window_size_ms={self.window_size_ms})"


class SessionWindowedSerde(_WindowedKeySerde):
    """Keys ``Windowed(key, SessionWindow)``: inner key bytes + 8-byte end + 8-byte start (big-endian)."""

    def bind_serializer(self, topic: str, is_key: bool) -> Serializer:
        ser = bind_serializer(self.inner, topic, is_key)
        pack = _TWO_LONGS.pack

        def serialize(obj: Any) -> bytes | None:
            if obj is None:
                return None
            if type(obj) is not Windowed:
                _windowed(obj, topic)
            kb = ser(obj.key)
            if kb is None:
                raise SerdeError(f"topic {topic!r}: the key of a windowed key must not be None")
            window = obj.window
            return kb + pack(window.end, window.start)

        return serialize

    def bind_deserializer(self, topic: str, is_key: bool) -> Deserializer:
        de = bind_deserializer(self.inner, topic, is_key)
        unpack = _TWO_LONGS.unpack_from

        def deserialize(data: bytes | None) -> Any:
            if data is None:
                return None
            if len(data) < 16:
                raise SerdeError(f"topic {topic!r}: a session-windowed key has at least 16 bytes, got {len(data)}")
            end, start = unpack(data, len(data) - 16)
            return Windowed(de(data[:-16]), SessionWindow(start, end))

        return deserialize


class WindowedSerdes:
    """Factories named as Kafka Streams' ``WindowedSerdes``; ``inner`` is any serde spec (``str``, ...)."""

    @staticmethod
    def time_windowed(inner: Any, window_size: timedelta | int) -> TimeWindowedSerde:
        return TimeWindowedSerde(
            serde_from(inner, "inner serde of a time-windowed serde"), to_millis(window_size, "window size")
        )

    @staticmethod
    def session_windowed(inner: Any) -> SessionWindowedSerde:
        return SessionWindowedSerde(serde_from(inner, "inner serde of a session-windowed serde"))
