"""Event time: timestamp extractors per source and for the whole application, the wall clock, negative
timestamps, and the stream time a task keeps."""

from __future__ import annotations

import pytest

from streams import (
    ConsumedRecord,
    LogAndSkipOnInvalidTimestamp,
    ProcessingError,
    StreamsBuilder,
    StreamsError,
    TimeWindows,
    TopologyTestDriver,
    UsePartitionTimeOnInvalidTimestamp,
    WallclockTimestampExtractor,
    WindowedSerdes,
)
from tests.streams.scenarios import read_rows

W10 = WindowedSerdes.time_windowed(str, 10)


def windowed_count(extractor=None):  # type: ignore[no-untyped-def]
    b = StreamsBuilder()
    (
        b.stream("in", key=str, value="json", timestamp_extractor=extractor)
        .group_by_key()
        .windowed_by(TimeWindows.of_size_with_no_grace(10))
        .count(store="c", cache=False)
        .to_stream()
        .to("out")
    )
    return b.build()


def test_an_extractor_takes_event_time_from_the_value() -> None:
    seen: list[tuple[ConsumedRecord, int]] = []

    def from_value(record: ConsumedRecord, partition_time: int) -> int:
        seen.append((record, partition_time))
        return int(record.value["at"])

    with TopologyTestDriver(windowed_count(from_value)) as d:
        source = d.input_topic("in", key=str, value="json")
        source.pipe_input("k", {"at": 15}, timestamp=1000)
        source.pipe_input("k", {"at": 12}, timestamp=2000)
        # The output carries the extracted time, and stream time is the extracted one.
        assert read_rows(d, "out", W10, int) == [("[k@10/20]", 1, 15), ("[k@10/20]", 2, 15)]
        assert d.tasks[0].stream_time == 15
    assert [(r.key, r.value, r.timestamp, pt) for r, pt in seen] == [
        ("k", {"at": 15}, 1000, -1),
        ("k", {"at": 12}, 2000, 15),
    ]


def test_the_application_default_applies_to_sources_without_one() -> None:
    with TopologyTestDriver(windowed_count(), default_timestamp_extractor=lambda r, pt: r.value["at"]) as d:
        d.input_topic("in", key=str, value="json").pipe_input("k", {"at": 33}, timestamp=0)
        assert read_rows(d, "out", W10, int) == [("[k@30/40]", 1, 33)]


def test_wall_clock_time_follows_the_drivers_clock() -> None:
    with TopologyTestDriver(windowed_count(WallclockTimestampExtractor), wall_clock_ms=5) as d:
        source = d.input_topic("in", key=str, value="json")
        source.pipe_input("k", {}, timestamp=10**6)
        d.advance_wall_clock(20)
        source.pipe_input("k", {}, timestamp=10**6)
        assert read_rows(d, "out", W10, int) == [("[k@0/10]", 1, 5), ("[k@20/30]", 1, 25)]


def test_negative_timestamps() -> None:
    # By default (Kafka Streams' FailOnInvalidTimestamp) a negative log timestamp stops the task.
    invalid = r"in\[0\] offset 0 has the invalid timestamp -5"
    with TopologyTestDriver(windowed_count()) as d, pytest.raises(StreamsError, match=invalid):
        d.input_topic("in", key=str, value="json").pipe_input("k", {}, timestamp=-5)
    # An extractor that returns a negative timestamp drops the record, counted.
    with TopologyTestDriver(windowed_count(LogAndSkipOnInvalidTimestamp())) as d:
        source = d.input_topic("in", key=str, value="json")
        source.pipe_input("k", {}, timestamp=-1)
        source.pipe_input("k", {}, timestamp=3)
        assert read_rows(d, "out", W10, int) == [("[k@0/10]", 1, 3)]
        assert d.dropped_records == 1
    # UsePartitionTimeOnInvalidTimestamp puts it at the partition's time (an error before there is one).
    with TopologyTestDriver(windowed_count(UsePartitionTimeOnInvalidTimestamp)) as d:
        source = d.input_topic("in", key=str, value="json")
        source.pipe_input("k", {}, timestamp=14)
        source.pipe_input("k", {}, timestamp=-1)
        assert read_rows(d, "out", W10, int) == [("[k@10/20]", 1, 14), ("[k@10/20]", 2, 14)]
        with pytest.raises(StreamsError, match="the partition has no time yet"):
            UsePartitionTimeOnInvalidTimestamp()(ConsumedRecord("t", 0, 0, -1, None, None), -1)


def test_an_extractor_must_return_integer_milliseconds() -> None:
    with (
        TopologyTestDriver(windowed_count(lambda r, pt: "soon")) as d,
        pytest.raises(ProcessingError, match=r"timestamp extractor returned 'soon' for the record at in\[0\] offset 0"),
    ):
        d.input_topic("in", key=str, value="json").pipe_input("k", {})
    with pytest.raises(TypeError, match=r"timestamp_extractor of source .* must be a callable"):
        StreamsBuilder().stream("in", timestamp_extractor=42)
