"""Windowed keys in Kafka Streams' byte layout, so that a Java or confluent-kafka consumer reads the output
of a windowed aggregation: ``TimeWindowedSerializer`` writes the key's bytes and the window start (8-byte
big-endian), ``SessionWindowedSerializer`` the key's bytes, the session end and its start."""

from __future__ import annotations

import struct

import pytest

from streams import (
    SerdeError,
    SessionWindow,
    SessionWindows,
    StreamsBuilder,
    TimeWindow,
    TimeWindows,
    TopologyTestDriver,
    Windowed,
    WindowedSerdes,
)


def test_time_windowed_key_bytes() -> None:
    serde = WindowedSerdes.time_windowed(str, 60_000)
    data = serde.serialize(Windowed("alice", TimeWindow(120_000, 180_000)))
    assert data == b"alice" + b"\x00\x00\x00\x00\x00\x01\xd4\xc0"
    assert serde.deserialize(data) == Windowed("alice", TimeWindow(120_000, 180_000))


def test_time_windowed_serializer_reuses_a_key_only_while_it_cannot_change() -> None:
    """A record's windows are serialized one after another with the same key object: its bytes are made
    once. A mutable key (a JSON object) is serialized anew each time, so a change to it shows."""
    ser = WindowedSerdes.time_windowed(str, 60_000).bind_serializer("t", True)
    key = "alice"
    assert [ser(Windowed(key, TimeWindow(s, s + 60_000))) for s in (0, 60_000)] == [
        b"alice" + struct.pack(">q", 0),
        b"alice" + struct.pack(">q", 60_000),
    ]
    assert ser(Windowed("bob", TimeWindow(0, 60_000))) == b"bob" + struct.pack(">q", 0)
    json_ser = WindowedSerdes.time_windowed("json", 60_000).bind_serializer("t", True)
    user = {"id": 1}
    assert json_ser(Windowed(user, TimeWindow(0, 60_000))) == b'{"id":1}' + struct.pack(">q", 0)
    user["id"] = 2
    assert json_ser(Windowed(user, TimeWindow(0, 60_000))) == b'{"id":2}' + struct.pack(">q", 0)


def test_session_windowed_key_bytes() -> None:
    serde = WindowedSerdes.session_windowed(int)
    data = serde.serialize(Windowed(7, SessionWindow(1_000, 2_500)))
    assert data == struct.pack(">q", 7) + struct.pack(">q", 2_500) + struct.pack(">q", 1_000)
    assert serde.deserialize(data) == Windowed(7, SessionWindow(1_000, 2_500))


def test_a_windowed_count_writes_kafka_streams_keys_to_its_output_topic() -> None:
    """What a consumer that knows nothing of schemakit finds in the topic: raw bytes, decoded by hand."""
    b = StreamsBuilder()
    grouped = b.stream("clicks", key=str, value=str).group_by_key()
    grouped.windowed_by(TimeWindows.of_size_with_no_grace(60_000)).count(store="per-minute").to_stream().to(
        "per-minute", value=int
    )
    grouped.windowed_by(SessionWindows.of_inactivity_gap_with_no_grace(5_000)).count(store="sessions").to_stream().to(
        "sessions", value=int
    )
    with TopologyTestDriver(b.build()) as d:
        clicks = d.input_topic("clicks", key=str, value=str)
        clicks.pipe_input("bob", "/", timestamp=61_000)
        clicks.pipe_input("bob", "/a", timestamp=62_000)
        minute = d.output_topic("per-minute", key=bytes, value=bytes).read_records()[-1]
        assert minute.key == b"bob" + struct.pack(">q", 60_000)
        assert struct.unpack(">q", minute.value) == (2,)
        session = d.output_topic("sessions", key=bytes, value=bytes).read_records()[-1]
        assert session.key == b"bob" + struct.pack(">qq", 62_000, 61_000)


def test_bad_windowed_keys_are_named() -> None:
    with pytest.raises(SerdeError, match=r"topic 'out': a windowed key serde needs a Windowed key, got 'plain'"):
        WindowedSerdes.time_windowed(str, 10).serialize("plain", "out")
    with pytest.raises(SerdeError, match="a session-windowed key has at least 16 bytes, got 3"):
        WindowedSerdes.session_windowed(str).deserialize(b"abc", "out")
    with pytest.raises(SerdeError, match="reading time-windowed keys needs the window size"):
        from streams import TimeWindowedSerde
        from streams.record_serdes import STRING

        TimeWindowedSerde(STRING, None).deserialize(b"k" + bytes(8), "out")
