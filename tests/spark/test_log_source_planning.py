"""The ``schemakit`` data source's planning without Spark: options as Spark's Kafka source reads them, offsets
resolved against a partition's earliest and latest offsets, ranges split, and a micro-batch capped in proportion
to each partition's backlog."""

from __future__ import annotations

import pytest

from serdes.spark.datasource.offsets import DataLossError, OffsetRange, check_start, resolve, split
from serdes.spark.datasource.options import SourceOptions
from serdes.spark.datasource.source import _rate_limit

BOUNDS = {("orders", 0): (0, 10), ("orders", 1): (4, 6)}


def parse(streaming: bool = False, **options: str) -> SourceOptions:
    return SourceOptions.parse({"log": "sqlite:///x.db", "topic": "orders", **options}, streaming=streaming)


def test_defaults_follow_spark_kafka_source() -> None:
    assert (parse().starting, parse().ending) == ("earliest", "latest")
    assert parse(streaming=True).starting == "latest"
    assert parse(subscribe="a, b", topic="").topics == ["a", "b"]
    kafka = SourceOptions.parse(
        {"log": "kafka://h:9092", "topic": "t", "kafka.security.protocol": "SSL", "log.timeout": "2.5"},
        streaming=False,
    )
    assert kafka.log_options == {"security.protocol": "SSL", "timeout": 2.5}


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"startingOffsets": "latest"}, "startingOffsets for batch queries cannot be latest"),
        ({"endingOffsets": "earliest"}, "endingOffsets cannot be earliest"),
        ({"startingOffsets": '{"other":{"0":1}}'}, "names topic 'other', which is not read"),
        ({"endingOffsets": '{"orders":{"0":-2}}'}, r"endingOffsets for orders\[0\]: -2"),
        ({"startingOffsets": "soon"}, "must be earliest, latest or JSON"),
        ({"maxRecordsPerPartition": "0"}, "maxRecordsPerPartition must be a positive integer"),
        ({"failOnDataLoss": "maybe"}, "failOnDataLoss must be true or false"),
        ({"subscribe": "a"}, 'exactly one of "subscribe" or "topic"'),
    ],
)
def test_bad_options_say_what_is_wrong(options: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse(**options)


def test_kafka_options_on_a_sqlite_log_are_refused() -> None:
    with pytest.raises(ValueError, match=r"kafka\.acks is a Kafka client option"):
        parse(**{"kafka.acks": "all"})


def test_read_committed_is_refused() -> None:
    with pytest.raises(ValueError, match=r"only kafka\.isolation\.level=read_uncommitted"):
        SourceOptions.parse(
            {"log": "kafka://h:9092", "topic": "t", "kafka.isolation.level": "read_committed"}, streaming=False
        )


def test_offsets_resolved_per_partition() -> None:
    assert resolve("earliest", BOUNDS, name="startingOffsets") == {("orders", 0): 0, ("orders", 1): 4}
    assert resolve("latest", BOUNDS, name="endingOffsets") == {("orders", 0): 10, ("orders", 1): 6}
    assert resolve({"orders": {0: -1, 1: 5}}, BOUNDS, name="startingOffsets") == {("orders", 0): 10, ("orders", 1): 5}
    with pytest.raises(ValueError, match=r"must name every partition; missing orders\[1\]"):
        resolve({"orders": {0: 3}}, BOUNDS, name="startingOffsets")


def test_offsets_outside_the_log_fail_or_move_with_fail_on_data_loss() -> None:
    with pytest.raises(
        DataLossError, match=r"starting offset 2 of orders\[1\] is out of range: records before offset 4"
    ):
        check_start(("orders", 1), 2, BOUNDS, fail_on_data_loss=True, what="starting")
    assert check_start(("orders", 1), 2, BOUNDS, fail_on_data_loss=False, what="starting") == 4
    assert check_start(("orders", 1), 9, BOUNDS, fail_on_data_loss=False, what="starting") == 6


def test_split_by_max_records() -> None:
    ranges = [OffsetRange("orders", 0, 0, 10), OffsetRange("orders", 1, 4, 4)]
    assert split(ranges, 4) == [
        OffsetRange("orders", 0, 0, 4),
        OffsetRange("orders", 0, 4, 8),
        OffsetRange("orders", 0, 8, 10),
    ]
    assert split(ranges, None) == ranges[:1]


def test_rate_limit_in_proportion_to_backlog() -> None:
    first = {("t", 0): 0, ("t", 1): 100, ("t", 2): 7}
    latest = {("t", 0): 90, ("t", 1): 130, ("t", 2): 7}
    capped = _rate_limit(first, latest, 12)
    assert capped == {("t", 0): 9, ("t", 1): 103, ("t", 2): 7}  # backlogs 90:30:0 share 12 as 9:3:0
    assert _rate_limit(first, latest, 1000) == latest
    assert sum(_rate_limit(first, latest, 5)[tp] - first[tp] for tp in first) == 5
