"""``KTable.group_by``: re-grouping a table. Every row update travels through the repartition topic as
(new, old): the old value is subtracted from the group the row leaves, the new one added to the group it
joins. Expected rows from Kafka Streams' ``KTableAggregateTest``; a result's timestamp is the largest of
the updates it has taken in.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from streams import ProcessingError, StreamsBuilder, TopologyTestDriver
from streams.change import Change, ChangeSerde
from streams.record_serdes import STRING
from tests.streams.scenarios import COLOUR_COUNTS, COLOUR_ROWS, pipe, read_rows


def adder(key: str, value: str, agg: str) -> str:
    return agg + "+" + value


def remover(key: str, value: str, agg: str) -> str:
    return agg + "-" + value


def aggregated(selector, cache: bool = True):  # type: ignore[no-untyped-def]
    def build(b: StreamsBuilder) -> None:
        (
            b.table("topic1", key=str, value=str)
            .group_by(selector, key=str, value=str)
            .aggregate(lambda: "0", adder, remover, store="agg", value=str, cache=cache)
            .to_stream()
            .to("out", key=str, value=str)
        )

    return build


def run(build, rows) -> list:  # type: ignore[no-untyped-def]
    b = StreamsBuilder()
    build(b)
    with TopologyTestDriver(b.build()) as d:
        pipe(d, "topic1", rows)
        return read_rows(d, "out", str, str)


@pytest.mark.parametrize("cache", [True, False])
def test_same_group_updates_subtract_then_add(cache: bool) -> None:
    """KTableAggregateTest.testAggBasic: grouped by the row's own key and value."""
    rows = [
        ("A", "1", 10),
        ("B", "2", 15),
        ("A", "3", 20),
        ("B", "4", 18),
        ("C", "5", 5),
        ("D", "6", 25),
        ("B", "7", 15),
        ("C", "8", 10),
    ]
    assert run(aggregated(lambda k, v: (k, v), cache), rows) == [
        ("A", "0+1", 10),
        ("B", "0+2", 15),
        ("A", "0+1-1+3", 20),
        ("B", "0+2-2+4", 18),
        ("C", "0+5", 5),
        ("D", "0+6", 25),
        ("B", "0+2-2+4-4+7", 18),  # the aggregate keeps its largest timestamp
        ("C", "0+5-5+8", 10),
    ]


def test_rows_moving_between_groups_leave_the_old_one_and_join_the_new_one() -> None:
    """KTableAggregateTest.testAggRepartition: grouped by value; a None pair or key puts a row in no group."""

    def selector(key: str, value: str):  # type: ignore[no-untyped-def]
        if key == "null":
            return None, value
        if key == "NULL":
            return None
        return value, value

    rows = [
        ("A", "1", 10),
        ("A", None, 15),
        ("A", "1", 12),
        ("B", "2", 20),
        ("null", "3", 25),
        ("B", "4", 23),
        ("NULL", "5", 24),
        ("B", "7", 22),
    ]
    assert run(aggregated(selector, cache=False), rows) == [
        ("1", "0+1", 10),
        ("1", "0+1-1", 15),  # A deleted
        ("1", "0+1-1+1", 15),
        ("2", "0+2", 20),
        ("2", "0+2-2", 23),  # B moves from group 2 to group 4: subtracted first,
        ("4", "0+4", 23),  # then added
        ("4", "0+4-4", 23),
        ("7", "0+7", 22),
    ]


def test_count_of_regrouped_rows() -> None:
    """KTableAggregateTest.testCount: colours counted, a row changing colour moves its count."""

    def build(b: StreamsBuilder) -> None:
        (
            b.table("topic1", key=str, value=str)
            .group_by(lambda k, v: (v, v), key=str, value=str)
            .count(store="count")
            .to_stream()
            .to("out", key=str, value=int)
        )

    b = StreamsBuilder()
    build(b)
    with TopologyTestDriver(b.build()) as d:
        pipe(d, "topic1", COLOUR_ROWS)
        assert read_rows(d, "out", str, int) == COLOUR_COUNTS
        assert d.get_key_value_store("count").get("green") == 2


def test_subtraction_comes_before_addition_within_one_group() -> None:
    """KTableAggregateTest.testRemoveOldBeforeAddNew."""

    def build(b: StreamsBuilder) -> None:
        (
            b.table("topic1", key=str, value=str)
            .group_by(lambda k, v: (k[0], k[1]), key=str, value=str)
            .aggregate(
                lambda: "", lambda k, v, agg: agg + v, lambda k, v, agg: agg.replace(v, ""), store="s", value=str
            )
            .to_stream()
            .to("out", key=str, value=str)
        )

    assert run(build, [("11", "A", 10), ("12", "B", 8), ("11", None, 12), ("12", "C", 6)]) == [
        ("1", "1", 10),
        ("1", "12", 10),
        ("1", "2", 12),
        ("1", "2", 12),
    ]


def test_reduce_with_adder_and_subtractor_gives_reference_totals(tmp_path: Path) -> None:
    """Accounts move between regions at random; every region's total matches a recomputation from the
    final table, on RocksDB with the cache."""

    def build(b: StreamsBuilder) -> None:
        (
            b.table("accounts", key=str, value="json")
            .group_by(lambda k, v: (v["region"], v["balance"]), key=str, value=int)
            .reduce(lambda agg, v: agg + v, lambda agg, v: agg - v, store="totals", kind="rocksdb")
            .to_stream()
            .to("totals", key=str, value=int)
        )

    rng = random.Random(11)
    table: dict[str, dict] = {}
    b = StreamsBuilder()
    build(b)
    with TopologyTestDriver(b.build(), state_dir=tmp_path) as d:
        source = d.input_topic("accounts", key=str, value="json")
        for i in range(600):
            account = f"acct-{rng.randrange(40)}"
            if rng.random() < 0.1:
                row = None
                table.pop(account, None)
            else:
                row = {"region": rng.choice(["north", "south", "east", "west"]), "balance": rng.randrange(1000)}
                table[account] = row
            source.pipe_input(account, row, timestamp=i)
        expected: dict[str, int] = {}
        for row in table.values():
            expected[row["region"]] = expected.get(row["region"], 0) + row["balance"]
        latest = d.output_topic("totals", key=str, value=int).read_key_values_to_map()
        assert {k: v for k, v in latest.items() if v} == {k: v for k, v in expected.items() if v}
        store = d.get_key_value_store("totals")
        assert {k: v for k, v in store.all() if v} == {k: v for k, v in expected.items() if v}


def test_changes_travel_in_kafka_streams_byte_layout() -> None:
    serde = ChangeSerde(STRING)
    assert serde.serialize(Change("new", None), "t", False) == b"new\x01"
    assert serde.serialize(Change(None, "old"), "t", False) == b"old\x00"
    both = serde.serialize(Change("new", "older"), "t", False)
    assert both == b"\x06new" + b"older\x02"  # zig-zag varint 3 -> 6
    for change in (Change("new", None), Change(None, "old"), Change("new", "older"), Change("x" * 300, "y")):
        assert serde.deserialize(serde.serialize(change, "t", False), "t", False) == change


def test_a_selector_must_return_a_pair() -> None:
    def build(b: StreamsBuilder) -> None:
        (b.table("topic1", key=str, value=str).group_by(lambda k, v: v, key=str, value=str).count(store="c"))

    with pytest.raises(ProcessingError, match=r"group_by\(\) selector must return a \(key, value\) tuple, got 'x'"):
        run(build, [("a", "x", 1)])
