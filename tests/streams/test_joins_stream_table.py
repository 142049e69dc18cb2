"""Stream-table joins (``KStream.join`` / ``left_join`` with a ``KTable``), as Kafka Streams' own tests
expect (``KStreamKTableJoinTest``, ``KStreamKTableLeftJoinTest``): each stream record looks up the table's
current row for its key when it is processed and the result keeps the stream record's timestamp; table
updates (and deletes) emit nothing; a left join calls the joiner with None when there is no row (and, as
Kafka 3.7+ does for KIP-962, for a record with a null key); other stream records with a null key or value
are dropped and counted."""

from __future__ import annotations

from typing import Any

import pytest

from streams import StreamsBuilder, TopologyTestDriver
from tests.streams.scenarios import StreamTableJoin

Row = tuple[int, str, int]


def show(value: Any, row: Any) -> str:
    return f"{value}+{'null' if row is None else row}"


class Scenario(StreamTableJoin):
    def __init__(self, left: bool) -> None:
        b = StreamsBuilder()
        table = b.table("table", key=int, value=str)
        stream = b.stream("stream", key=int, value=str)
        (stream.left_join if left else stream.join)(table, show).to("out", key=int, value=str)
        super().__init__(b.build(), "stream", "table")

    def push_table(self, n: int, prefix: str | None) -> None:
        for k in range(n):
            self.table.pipe_input(k, None if prefix is None else f"{prefix}{k}", timestamp=k)


@pytest.fixture(params=[False, True], ids=["join", "left_join"])
def left(request: pytest.FixtureRequest) -> bool:
    return bool(request.param)


def test_table_updates_do_not_emit(left: bool) -> None:
    s = Scenario(left)
    s.push_stream(2, "X")
    assert s.results() == ([(0, "X0+null", 0), (1, "X1+null", 1)] if left else [])
    s.push_table(2, "Y")
    assert s.results() == []
    s.push_stream(4, "X")
    assert s.results() == [(0, "X0+Y0", 0), (1, "X1+Y1", 1)] + ([(2, "X2+null", 2), (3, "X3+null", 3)] if left else [])
    s.push_table(4, "YY")
    assert s.results() == []
    s.push_stream(4, "X")
    assert s.results() == [(0, "X0+YY0", 0), (1, "X1+YY1", 1), (2, "X2+YY2", 2), (3, "X3+YY3", 3)]


def test_table_tombstones_remove_the_row(left: bool) -> None:
    s = Scenario(left)
    s.push_table(4, "Y")
    s.push_stream(4, "X")
    assert s.results() == [(0, "X0+Y0", 0), (1, "X1+Y1", 1), (2, "X2+Y2", 2), (3, "X3+Y3", 3)]
    s.push_table(2, None)  # deletes rows 0 and 1
    assert s.results() == []
    s.push_stream(4, "XX")
    assert s.results() == ([(0, "XX0+null", 0), (1, "XX1+null", 1)] if left else []) + [
        (2, "XX2+Y2", 2),
        (3, "XX3+Y3", 3),
    ]


def test_null_stream_keys_are_kept_by_a_left_join_and_dropped_and_counted_by_an_inner_one(left: bool) -> None:
    """KIP-962 (Kafka 3.7+): a left join emits a null-key record as ``joiner(value, None)``;
    KStreamKTableJoinTest.shouldLogAndMeterWhenSkippingNullLeftKey / ...NullLeftValue: an inner join drops
    both and counts them; a null value is dropped by both."""
    s = Scenario(left)
    s.push_table(1, "Y")
    s.stream.pipe_input(None, "X", timestamp=5)
    s.stream.pipe_input(0, None, timestamp=6)
    assert s.results() == ([(None, "X+null", 5)] if left else [])
    assert s.driver.dropped_records == (1 if left else 2)


def test_the_joiner_can_take_the_key() -> None:
    b = StreamsBuilder()
    table = b.table("table", key=int, value=str)
    b.stream("stream", key=int, value=str).left_join(table, lambda k, v, row: f"{k}:{v}:{row}", with_key=True).to(
        "out", key=int, value=str
    )
    with TopologyTestDriver(b.build()) as d:
        d.input_topic("table", key=int, value=str).pipe_input(1, "t", timestamp=1)
        d.input_topic("stream", key=int, value=str).pipe_input(1, "s", timestamp=2)
        d.input_topic("stream", key=int, value=str).pipe_input(2, "s", timestamp=3)
        assert [(r.key, r.value, r.timestamp) for r in d.output_topic("out", key=int, value=str).read_records()] == [
            (1, "1:s:t", 2),
            (2, "2:s:None", 3),
        ]


def test_a_join_after_a_key_change_repartitions_the_stream() -> None:
    b = StreamsBuilder()
    customers = b.table("customers", key=str, value="json")
    orders = b.stream("orders", key=str, value="json")
    (
        orders.select_key(lambda k, o: o["customer"])
        .left_join(customers, lambda o, c: {**o, "tier": c and c["tier"]})
        .to("enriched", key=str, value="json")
    )
    topology = b.build()
    text = topology.describe()
    assert text.count("Sub-topology:") == 2
    assert "Sink: KSTREAM-SINK-0000000005 (topic: KSTREAM-JOIN-REPARTITION-0000000004-repartition)" in text
    assert ("Processor: KSTREAM-JOIN-0000000007 (stores: [customers-STATE-STORE-0000000001])") in text
    with TopologyTestDriver(topology) as d:
        d.input_topic("customers", key=str, value="json").pipe_input("c1", {"tier": "gold"}, timestamp=1)
        orders_in = d.input_topic("orders", key=str, value="json")
        orders_in.pipe_input("o1", {"customer": "c1", "n": 1}, timestamp=2)
        orders_in.pipe_input("o2", {"customer": "c2", "n": 2}, timestamp=3)
        assert [(r.key, r.value) for r in d.output_topic("enriched", key=str, value="json").read_records()] == [
            ("c1", {"customer": "c1", "n": 1, "tier": "gold"}),
            ("c2", {"customer": "c2", "n": 2, "tier": None}),
        ]


def test_a_derived_table_is_materialized_for_the_lookup() -> None:
    b = StreamsBuilder()
    table = b.table("table", key=int, value=str).filter(lambda k, v: v != "hidden")
    b.stream("stream", key=int, value=str).left_join(table, show).to("out", key=int, value=str)
    with TopologyTestDriver(b.build()) as d:
        rows = d.input_topic("table", key=int, value=str)
        rows.pipe_input(1, "shown", timestamp=1)
        rows.pipe_input(2, "hidden", timestamp=1)
        stream = d.input_topic("stream", key=int, value=str)
        for k in (1, 2):
            stream.pipe_input(k, "X", timestamp=2)
        assert [(r.key, r.value) for r in d.output_topic("out", key=int, value=str).read_records()] == [
            (1, "X+shown"),
            (2, "X+null"),
        ]
    with pytest.raises(TypeError, match="takes no windows"):
        b.stream("s2", key=int, value=str).join(b.table("t2"), show, 10)
