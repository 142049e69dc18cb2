"""Joins of windowed tables (``KTable<Windowed<K>, V>``, the tables of windowed aggregations): Kafka Streams'
``KStreamWindowAggregateTest.testJoin`` as a scenario table. Two hopping-window aggregations (size 10,
advance 5, initial "0", adder ``agg+value``) of ``topic1`` and ``topic2`` are joined with ``p1%p2``; after
each batch of input the test reads what the first table, the second table and the join emitted, keys
printed ``[key@start/end]``, with timestamps.
"""

from __future__ import annotations

from typing import Any

import pytest

from streams import (
    SessionWindows,
    StreamsBuilder,
    TimeWindows,
    TopologyError,
    TopologyTestDriver,
    WindowedSerdes,
)
from tests.streams.scenarios import Row, pipe, read_rows

W10 = WindowedSerdes.time_windowed(str, 10)
Batch = tuple[str, list[Row]]


def windowed_table(b: StreamsBuilder, topic: str, windows: Any, emit: str, store: str) -> Any:
    """``topic`` aggregated per key and window: "0" and the values, joined by "+" (sessions that merge: the
    later aggregate)."""
    windowed = b.stream(topic, key=str, value=str).group_by_key().windowed_by(windows).emit_strategy(emit)
    add = lambda k, v, agg: f"{agg}+{v}"  # noqa: E731
    if isinstance(windows, SessionWindows):
        return windowed.aggregate(lambda: "0", add, lambda k, a, c: c, store=store, value=str)
    return windowed.aggregate(lambda: "0", add, store=store, value=str)


def run_test_join(emit: str, grace: int, batches: list[Batch]) -> list[tuple[list[Row], list[Row], list[Row]]]:
    """testJoin's topology; for each batch (topic, rows): the rows of table 1, table 2 and the join."""
    b = StreamsBuilder()
    windows = TimeWindows.of_size_and_grace(10, grace).advance_by(5)
    t1 = windowed_table(b, "topic1", windows, emit, "topic1-Canonized")
    t2 = windowed_table(b, "topic2", windows, emit, "topic2-Canonized")
    t1.to_stream().to("table1", key=W10, value=str)
    t2.to_stream().to("table2", key=W10, value=str)
    t1.join(t2, lambda p1, p2: f"{p1}%{p2}").to_stream().to("joined", key=W10, value=str)
    out = []
    with TopologyTestDriver(b.build()) as d:
        for topic, rows in batches:
            pipe(d, topic, rows)
            out.append(tuple(read_rows(d, name, W10, str) for name in ("table1", "table2", "joined")))
    return out  # type: ignore[return-value]


def test_kafka_test_join_emitting_every_update() -> None:
    """KStreamWindowAggregateTest.testJoin, ON_WINDOW_UPDATE (grace 100)."""
    steps = run_test_join(
        "on_window_update",
        100,
        [
            ("topic1", [("A", "1", 0), ("B", "2", 1), ("C", "3", 2), ("D", "4", 3), ("A", "1", 9)]),
            ("topic1", [("A", "1", 5), ("B", "2", 6), ("D", "4", 7), ("B", "2", 8), ("C", "3", 9)]),
            ("topic2", [("A", "a", 0), ("B", "b", 1), ("C", "c", 2), ("D", "d", 20), ("A", "a", 20)]),
            ("topic2", [("A", "a", 5), ("B", "b", 6), ("D", "d", 7), ("D", "d", 18), ("A", "a", 21)]),
        ],
    )
    assert steps[0] == (
        [
            ("[A@0/10]", "0+1", 0),
            ("[B@0/10]", "0+2", 1),
            ("[C@0/10]", "0+3", 2),
            ("[D@0/10]", "0+4", 3),
            ("[A@0/10]", "0+1+1", 9),
            ("[A@5/15]", "0+1", 9),
        ],
        [],
        [],
    )
    assert steps[1] == (
        [
            ("[A@0/10]", "0+1+1+1", 9),
            ("[A@5/15]", "0+1+1", 9),
            ("[B@0/10]", "0+2+2", 6),
            ("[B@5/15]", "0+2", 6),
            ("[D@0/10]", "0+4+4", 7),
            ("[D@5/15]", "0+4", 7),
            ("[B@0/10]", "0+2+2+2", 8),
            ("[B@5/15]", "0+2+2", 8),
            ("[C@0/10]", "0+3+3", 9),
            ("[C@5/15]", "0+3", 9),
        ],
        [],
        [],
    )
    assert steps[2] == (
        [],
        [
            ("[A@0/10]", "0+a", 0),
            ("[B@0/10]", "0+b", 1),
            ("[C@0/10]", "0+c", 2),
            ("[D@15/25]", "0+d", 20),
            ("[D@20/30]", "0+d", 20),
            ("[A@15/25]", "0+a", 20),
            ("[A@20/30]", "0+a", 20),
        ],
        [("[A@0/10]", "0+1+1+1%0+a", 9), ("[B@0/10]", "0+2+2+2%0+b", 8), ("[C@0/10]", "0+3+3%0+c", 9)],
    )
    assert steps[3] == (
        [],
        [
            ("[A@0/10]", "0+a+a", 5),
            ("[A@5/15]", "0+a", 5),
            ("[B@0/10]", "0+b+b", 6),
            ("[B@5/15]", "0+b", 6),
            ("[D@0/10]", "0+d", 7),
            ("[D@5/15]", "0+d", 7),
            ("[D@10/20]", "0+d", 18),
            ("[D@15/25]", "0+d+d", 20),
            ("[A@15/25]", "0+a+a", 21),
            ("[A@20/30]", "0+a+a", 21),
        ],
        [
            ("[A@0/10]", "0+1+1+1%0+a+a", 9),
            ("[A@5/15]", "0+1+1%0+a", 9),
            ("[B@0/10]", "0+2+2+2%0+b+b", 8),
            ("[B@5/15]", "0+2+2%0+b", 8),
            ("[D@0/10]", "0+4+4%0+d", 7),
            ("[D@5/15]", "0+4%0+d", 7),
        ],
    )


def test_kafka_test_join_emitting_final_results() -> None:
    """KStreamWindowAggregateTest.testJoin, ON_WINDOW_CLOSE (grace 5)."""
    steps = run_test_join(
        "on_window_close",
        5,
        [
            ("topic1", [("A", "1", 0), ("B", "2", 1), ("C", "3", 2), ("D", "4", 3), ("A", "1", 9), ("A", "1", 15)]),
            (
                "topic1",
                [("A", "1", 10), ("B", "2", 11), ("D", "4", 12), ("B", "2", 13), ("C", "3", 14), ("A", "1", 20)],
            ),
            ("topic2", [("A", "a", 0), ("B", "b", 1), ("C", "c", 2), ("D", "d", 10), ("A", "a", 15)]),
            ("topic2", [("A", "a", 5), ("B", "b", 6), ("D", "d", 7), ("D", "d", 18), ("A", "a", 21)]),
        ],
    )
    assert steps[0] == (
        [("[A@0/10]", "0+1+1", 9), ("[B@0/10]", "0+2", 1), ("[C@0/10]", "0+3", 2), ("[D@0/10]", "0+4", 3)],
        [],
        [],
    )
    assert steps[1] == (
        [("[A@5/15]", "0+1+1", 10), ("[B@5/15]", "0+2+2", 13), ("[C@5/15]", "0+3", 14), ("[D@5/15]", "0+4", 12)],
        [],
        [],
    )
    # Table 2's [0, 10) windows close; table 1's have left its store (stream time 20, retention 15): no join.
    # (Kafka's variant with a caching store still finds them in its cache; without one, as here, it does not.)
    assert steps[2] == ([], [("[A@0/10]", "0+a", 0), ("[B@0/10]", "0+b", 1), ("[C@0/10]", "0+c", 2)], [])
    assert steps[3] == (
        [],
        [("[A@5/15]", "0+a", 5), ("[B@5/15]", "0+b", 6), ("[D@5/15]", "0+d+d", 10)],
        [("[A@5/15]", "0+1+1%0+a", 10), ("[B@5/15]", "0+2+2%0+b", 13), ("[D@5/15]", "0+4%0+d+d", 12)],
    )


def test_left_and_outer_joins_of_windowed_tables() -> None:
    """The same rules as for other tables: a left join keeps table 1's windows without a partner, an outer
    join both sides'; results are keyed by the window, timestamped with the later row."""
    for kind, expected in [
        ("left_join", [("[A@0/10]", "0+1%null", 1), ("[A@0/10]", "0+1%0+a", 2), ("[B@0/10]", "0+2%null", 3)]),
        (
            "outer_join",
            [
                ("[A@0/10]", "0+1%null", 1),
                ("[A@0/10]", "0+1%0+a", 2),
                ("[C@0/10]", "null%0+c", 2),
                ("[B@0/10]", "0+2%null", 3),
            ],
        ),
    ]:
        b = StreamsBuilder()
        windows = TimeWindows.of_size_with_no_grace(10)
        t1 = windowed_table(b, "topic1", windows, "on_window_update", "s1")
        t2 = windowed_table(b, "topic2", windows, "on_window_update", "s2")
        show = lambda p1, p2: f"{'null' if p1 is None else p1}%{'null' if p2 is None else p2}"  # noqa: E731
        getattr(t1, kind)(t2, show).to_stream().to("joined", key=W10, value=str)
        with TopologyTestDriver(b.build()) as d:
            pipe(d, "topic1", [("A", "1", 1)])
            pipe(d, "topic2", [("A", "a", 2), ("C", "c", 2)])
            pipe(d, "topic1", [("B", "2", 3)])
            assert read_rows(d, "joined", W10, str) == expected, kind


def test_joining_a_windowed_table_needs_the_same_windows_on_both_sides() -> None:
    b = StreamsBuilder()
    tumbling = windowed_table(b, "t1", TimeWindows.of_size_with_no_grace(10), "on_window_update", "s1")
    hopping = windowed_table(b, "t2", TimeWindows.of_size_with_no_grace(10).advance_by(5), "on_window_update", "s2")
    other_grace = windowed_table(b, "t3", TimeWindows.of_size_and_grace(10, 7), "on_window_update", "s3")
    sessions = windowed_table(b, "t4", SessionWindows.of_inactivity_gap_with_no_grace(10), "on_window_update", "s4")
    plain = b.table("t5", key=str, value=str)
    for other in (hopping, sessions, plain):
        with pytest.raises(TopologyError, match="needs both tables windowed alike"):
            tumbling.join(other, lambda a, c: a)
    tumbling.join(other_grace, lambda a, c: a)  # the grace does not change which windows there are
    with pytest.raises(TopologyError, match="foreign key needs tables that are not windowed"):
        tumbling.join(other_grace, lambda a, c: a, foreign_key=lambda v: v)


def test_a_join_of_session_windowed_tables_matches_equal_sessions() -> None:
    b = StreamsBuilder()
    windows = SessionWindows.of_inactivity_gap_with_no_grace(5)
    t1 = windowed_table(b, "topic1", windows, "on_window_update", "s1")
    t2 = windowed_table(b, "topic2", windows, "on_window_update", "s2")
    s5 = WindowedSerdes.session_windowed(str)
    t1.join(t2, lambda p1, p2: f"{p1}%{p2}").to_stream().to("joined", key=s5, value=str)
    with TopologyTestDriver(b.build()) as d:
        pipe(d, "topic1", [("A", "1", 10)])
        pipe(d, "topic2", [("A", "a", 10), ("A", "b", 12)])  # [10, 10] merges into [10, 12]: its tombstone joins
        assert read_rows(d, "joined", s5, str) == [
            ("[A@10/10]", "0+1%0+a", 10),
            ("[A@10/10]", None, 10),
        ]
