"""Table-table joins on the primary key: inner, left and outer. Each scenario pipes updates into both
tables and checks the join's updates, in order, with their timestamps (the larger of the two rows').

The inner and outer tables are Kafka Streams' ``KTableKTableInnerJoinTest`` / ``KTableKTableOuterJoinTest``
expectations (``testJoin``: the same inputs, the same outputs); the left join's follows from the same
inputs by ``KTableKTableLeftJoin``'s rules (a result while the left row exists, the right side None if
missing). End to end (SQLite and the test broker, 4 partitions): both join stores come back after a restart.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from streams import StreamsApp, StreamsBuilder, TopologyError, TopologyTestDriver
from streams.log import Log
from tests.streams.scenarios import Row, pipe, read_rows
from tests.support.topics import create_topics, last_values, produce, read_to_end
from tests.support.waiting import wait_for


def tostring(left: Any, right: Any) -> str:
    """Kafka Streams' ``MockValueJoiner.TOSTRING_JOINER``: ``left+right``, a missing side printed null."""
    return f"{'null' if left is None else left}+{'null' if right is None else right}"


def build(kind: str, **kwargs: Any) -> StreamsBuilder:
    b = StreamsBuilder()
    t1 = b.table("topic1", key=int, value=str)
    t2 = b.table("topic2", key=int, value=str)
    joined = getattr(t1, kind)(t2, tostring, **kwargs)
    joined.to_stream().to("output", key=int, value=str)
    return b


KEYS = (0, 1, 2, 3)

# (topic, rows piped) -> rows expected out, per join kind: inner, left, outer.
STEPS: list[tuple[str, list[Row], list[Row], list[Row], list[Row]]] = [
    (
        "topic1",
        [(0, "X0", 5), (1, "X1", 6), (None, "SomeVal", 42)],
        [],
        [(0, "X0+null", 5), (1, "X1+null", 6)],
        [(0, "X0+null", 5), (1, "X1+null", 6)],
    ),
    (
        "topic2",
        [(0, "Y0", 0), (1, "Y1", 10), (None, "AnotherVal", 73)],
        [(0, "X0+Y0", 5), (1, "X1+Y1", 10)],
        [(0, "X0+Y0", 5), (1, "X1+Y1", 10)],
        [(0, "X0+Y0", 5), (1, "X1+Y1", 10)],
    ),
    (
        "topic1",
        [(k, f"XX{k}", 7) for k in KEYS],
        [(0, "XX0+Y0", 7), (1, "XX1+Y1", 10)],
        [(0, "XX0+Y0", 7), (1, "XX1+Y1", 10), (2, "XX2+null", 7), (3, "XX3+null", 7)],
        [(0, "XX0+Y0", 7), (1, "XX1+Y1", 10), (2, "XX2+null", 7), (3, "XX3+null", 7)],
    ),
    (
        "topic2",
        [(k, f"YY{k}", k * 5) for k in KEYS],
        [(0, "XX0+YY0", 7), (1, "XX1+YY1", 7), (2, "XX2+YY2", 10), (3, "XX3+YY3", 15)],
        [(0, "XX0+YY0", 7), (1, "XX1+YY1", 7), (2, "XX2+YY2", 10), (3, "XX3+YY3", 15)],
        [(0, "XX0+YY0", 7), (1, "XX1+YY1", 7), (2, "XX2+YY2", 10), (3, "XX3+YY3", 15)],
    ),
    (
        "topic1",
        [(k, f"XXX{k}", 6) for k in KEYS],
        [(0, "XXX0+YY0", 6), (1, "XXX1+YY1", 6), (2, "XXX2+YY2", 10), (3, "XXX3+YY3", 15)],
        [(0, "XXX0+YY0", 6), (1, "XXX1+YY1", 6), (2, "XXX2+YY2", 10), (3, "XXX3+YY3", 15)],
        [(0, "XXX0+YY0", 6), (1, "XXX1+YY1", 6), (2, "XXX2+YY2", 10), (3, "XXX3+YY3", 15)],
    ),
    # right-side deletes: inner results disappear, left / outer ones lose their right side
    (
        "topic2",
        [(0, None, 5), (1, None, 7)],
        [(0, None, 6), (1, None, 7)],
        [(0, "XXX0+null", 6), (1, "XXX1+null", 7)],
        [(0, "XXX0+null", 6), (1, "XXX1+null", 7)],
    ),
    (
        "topic1",
        [(k, f"XXXX{k}", 13) for k in KEYS],
        [(2, "XXXX2+YY2", 13), (3, "XXXX3+YY3", 15)],
        [(0, "XXXX0+null", 13), (1, "XXXX1+null", 13), (2, "XXXX2+YY2", 13), (3, "XXXX3+YY3", 15)],
        [(0, "XXXX0+null", 13), (1, "XXXX1+null", 13), (2, "XXXX2+YY2", 13), (3, "XXXX3+YY3", 15)],
    ),
    # left-side deletes: every result goes (the outer join keeps the right rows, joined with null)
    (
        "topic1",
        [(0, None, 0), (1, None, 42), (2, None, 5), (3, None, 20)],
        [(2, None, 10), (3, None, 20)],
        [(0, None, 0), (1, None, 42), (2, None, 10), (3, None, 20)],
        [(0, None, 0), (1, None, 42), (2, "null+YY2", 10), (3, "null+YY3", 20)],
    ),
]


@pytest.mark.parametrize("kind, column", [("join", 2), ("left_join", 3), ("outer_join", 4)])
def test_join_scenario_matches_kafka_streams(kind: str, column: int) -> None:
    with TopologyTestDriver(build(kind).build()) as d:
        for i, step in enumerate(STEPS):
            topic, rows = step[0], step[1]
            pipe(d, topic, rows, int, str)
            assert read_rows(d, "output", int, str) == step[column], f"step {i}: {topic} <- {rows}"


def test_outer_join_of_a_right_row_alone_and_its_delete() -> None:
    with TopologyTestDriver(build("outer_join").build()) as d:
        pipe(d, "topic2", [(7, "Y7", 3), (7, None, 4), (8, None, 5)], int, str)
        # the right row alone joins with null; its delete is a tombstone; deleting nothing emits nothing
        assert read_rows(d, "output", int, str) == [(7, "null+Y7", 3), (7, None, 4)]


def test_materialized_result_is_queryable_and_filtered_inputs_are_materialized() -> None:
    b = StreamsBuilder()
    left = b.table("topic1", key=int, value=str).filter(lambda k, v: not v.startswith("skip"))
    right = b.table("topic2", key=int, value=str).map_values(str.upper)
    joined = left.join(right, lambda key, lv, rv: f"{key}:{lv}+{rv}", with_key=True, store="joined", value=str)
    joined.to_stream().to("output", key=int, value=str)
    topology = b.build()
    assert "KTABLE-MATERIALIZE" in topology.describe()  # both derived inputs got a store to look up
    with TopologyTestDriver(topology) as d:
        pipe(d, "topic1", [(1, "a", 1), (2, "b", 2)], int, str)
        pipe(d, "topic2", [(1, "x", 3), (2, "y", 4)], int, str)
        pipe(d, "topic1", [(2, "skip-b", 5)], int, str)  # filtered out: a delete for the join
        assert read_rows(d, "output", int, str) == [(1, "1:a+X", 3), (2, "2:b+Y", 4), (2, None, 5)]
        store = d.get_key_value_store("joined")
        assert dict(store.all()) == {1: "1:a+X"}
        assert store.get_with_timestamp(1) == ("1:a+X", 3)


@pytest.mark.parametrize("materialize", [False, True])
def test_regrouping_a_join_result_subtracts_deleted_results(materialize: bool) -> None:
    """Downstream of the join, a re-grouped count sees old values (from the join, or from its store)."""
    b = StreamsBuilder()
    orders = b.table("topic1", key=int, value=str)
    regions = b.table("topic2", key=int, value=str)
    store = "joined" if materialize else None
    joined = orders.join(regions, lambda o, r: r, store=store, value=str)
    joined.group_by(lambda k, region: (region, k), key=str, value=int).count(store="per-region").to_stream().to(
        "output", key=str, value=int
    )
    with TopologyTestDriver(b.build()) as d:
        pipe(d, "topic1", [(1, "o1", 1), (2, "o2", 2)], int, str)
        pipe(d, "topic2", [(1, "eu", 3), (2, "eu", 4), (1, "us", 5), (2, None, 6)], int, str)
        assert dict(d.get_key_value_store("per-region").all()) == {"eu": 0, "us": 1}
        assert read_rows(d, "output", str, int) == [
            ("eu", 1, 3),
            ("eu", 2, 4),
            ("eu", 1, 5),
            ("us", 1, 5),
            ("eu", 0, 6),
        ]


def test_describe_shows_both_join_sides_in_one_sub_topology() -> None:
    text = build("join", name="orders-with-customers").build().describe()
    assert "Sub-topology: 1" not in text  # both tables' topics are read by one (co-partitioned) task
    assert "Processor: orders-with-customers-join-this (stores: [topic2-STATE-STORE-0000000003])" in text
    assert "Processor: orders-with-customers-join-other (stores: [topic1-STATE-STORE-0000000001])" in text
    assert "<-- orders-with-customers-join-this, orders-with-customers-join-other" in text


def test_bad_join_arguments_fail_clearly() -> None:
    b = StreamsBuilder()
    t1 = b.table("topic1")
    with pytest.raises(TopologyError, match=r"KTable.join\(\) needs a KTable"):
        t1.join(b.stream("s"), tostring)
    with pytest.raises(TypeError, match=r"outer_join\(\) joiner needs a callable"):
        t1.outer_join(b.table("topic2"), "nope")  # type: ignore[arg-type]
    with pytest.raises(TopologyError, match="same StreamsBuilder"):
        t1.left_join(StreamsBuilder().table("x"), tostring)


# -- end to end -------------------------------------------------------------------------------------------


def test_table_join_end_to_end_restores_both_stores_on_restart(
    log: Log, log_url: str, names: Callable[[str], str], tmp_path: Path
) -> None:
    left_t, right_t, out, app_id = names("t1"), names("t2"), names("joined"), names("tt")
    create_topics(log, 4, left_t, right_t, out)
    b = StreamsBuilder()
    b.table(left_t, key=str, value=str).left_join(
        b.table(right_t, key=str, value=str), tostring, store="joined"
    ).to_stream().to(out, key=str, value=str)
    topology = b.build()
    produce(log, left_t, [(f"k{i}", f"L{i}") for i in range(12)], value=str.encode)
    produce(log, right_t, [(f"k{i}", f"R{i}") for i in range(0, 12, 2)], value=str.encode)

    def results() -> dict[str, Any]:
        return last_values(read_to_end(log, out, quiet=0.5), value=lambda v: v.decode())

    def app() -> StreamsApp:
        return StreamsApp(topology, app_id, log_url, state_dir=tmp_path / "s", commit_interval_ms=100)

    expected = {f"k{i}": f"L{i}+R{i}" if i % 2 == 0 else f"L{i}+null" for i in range(12)}
    with app():
        wait_for(lambda: results() == expected, what="every left row joined")
    # Restarted, each side's update joins the other side's row from the restored store.
    produce(log, right_t, [("k1", "R1"), ("k2", None)], value=lambda v: None if v is None else v.encode())
    produce(log, left_t, [("k4", "L4x"), ("k5", None)], value=lambda v: None if v is None else v.encode())
    expected.update({"k1": "L1+R1", "k2": "L2+null", "k4": "L4x+R4"})
    del expected["k5"]
    with app() as a:
        wait_for(lambda: {k: v for k, v in results().items() if v is not None} == expected, what="the updates")
        assert sorted(a.store("joined").all()) == sorted(expected.items())
