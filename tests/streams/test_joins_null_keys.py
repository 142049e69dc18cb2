"""Records with a null key in joins (KIP-962, Kafka Streams 3.7+; KAFKA-19208, 4.1), as scenario tables of
Kafka Streams' own tests: ``RelaxedNullKeyRequirementJoinTest`` (both inputs go through ``repartition()``
first, joiner ``left|right``) and ``KStreamGlobalKTableLeftJoinTest`` (stream values ``"X0,FKey0"``, whose
second field is the global table's key, or None without one; joiner ``left+right``). A join that emits
unjoined records emits a null-key record at once with None for the other side; inner joins drop it and
count it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from streams import JoinWindows, KStream, StreamsBuilder, TopologyTestDriver

WINDOW = JoinWindows.of_time_difference_and_grace(60_000, 10_000)


def bar(left: Any, right: Any) -> str:
    return f"{'null' if left is None else left}|{'null' if right is None else right}"


def relaxed(join: Callable[[StreamsBuilder, KStream, KStream], KStream]) -> TopologyTestDriver:
    """RelaxedNullKeyRequirementJoinTest's topology: ``left`` and ``right`` repartitioned, joined, to ``out``."""
    b = StreamsBuilder()
    left = b.stream("left", key=str, value=str).repartition()
    right = b.stream("right", key=str, value=str).repartition()
    join(b, left, right).to("out", key=str, value=str)
    return TopologyTestDriver(b.build())


def key_values(d: TopologyTestDriver) -> list[tuple[Any, Any]]:
    return [(r.key, r.value) for r in d.output_topic("out", key=str, value=str).read_records()]


def test_relaxed_left_stream_stream_join() -> None:
    """RelaxedNullKeyRequirementJoinTest.testRelaxedLeftStreamStreamJoin."""
    with relaxed(lambda b, left, right: left.left_join(right, bar, WINDOW)) as d:
        d.input_topic("left", key=str, value=str).pipe_input(None, "leftValue", timestamp=1)
        assert key_values(d) == [(None, "leftValue|null")]
        assert d.dropped_records == 0


def test_relaxed_left_stream_table_join() -> None:
    """RelaxedNullKeyRequirementJoinTest.testRelaxedLeftStreamTableJoin."""
    with relaxed(lambda b, left, right: left.left_join(right.to_table(), bar)) as d:
        d.input_topic("left", key=str, value=str).pipe_input(None, "leftValue", timestamp=1)
        assert key_values(d) == [(None, "leftValue|null")]


def test_relaxed_outer_stream_stream_join() -> None:
    """RelaxedNullKeyRequirementJoinTest.testRelaxedOuterStreamStreamJoin."""
    with relaxed(lambda b, left, right: left.outer_join(right, bar, WINDOW)) as d:
        d.input_topic("right", key=str, value=str).pipe_input(None, "rightValue", timestamp=1)
        d.input_topic("left", key=str, value=str).pipe_input(None, "leftValue", timestamp=2)
        assert key_values(d) == [(None, "null|rightValue"), (None, "leftValue|null")]


def test_relaxed_left_stream_global_table_join() -> None:
    """RelaxedNullKeyRequirementJoinTest.testRelaxedLeftStreamGlobalTableJoin: the key mapper returns None."""

    def join(b: StreamsBuilder, left: KStream, right: KStream) -> KStream:
        return left.left_join(b.global_table("global", key=str, value=str), lambda k, v: None, bar)

    with relaxed(join) as d:
        d.input_topic("left", key=str, value=str).pipe_input(None, "leftValue", timestamp=1)
        assert key_values(d) == [(None, "leftValue|null")]


def test_drop_null_key_records_for_repartition_nodes_with_no_relaxed_join_downstream() -> None:
    """RelaxedNullKeyRequirementJoinTest.testDropNullKeyRecordsForRepartitionNodesWithNoRelaxedJoinDownstream."""
    b = StreamsBuilder()
    b.stream("left", key=str, value=str).repartition().repartition().to("out", key=str, value=str)
    with TopologyTestDriver(b.build()) as d:
        d.input_topic("left", key=str, value=str).pipe_input(None, "leftValue", timestamp=1)
        assert key_values(d) == []


@pytest.mark.parametrize("repartitioned", [False, True], ids=["direct", "repartitioned"])
@pytest.mark.parametrize(
    ("kind", "emitted"),
    [("join", []), ("left_join", [(None, "leftValue|null")]), ("outer_join", [(None, "leftValue|null")])],
)
def test_inner_joins_drop_null_keys_the_others_emit_them(kind: str, emitted: list[Any], repartitioned: bool) -> None:
    """An inner join drops a null-key record and counts it; behind a repartition topic (no join downstream
    keeps it) the record is already filtered out before the topic, uncounted, as Kafka Streams' filter."""
    b = StreamsBuilder()
    left, right = b.stream("left", key=str, value=str), b.stream("right", key=str, value=str)
    if repartitioned:
        left, right = left.repartition(), right.repartition()
    getattr(left, kind)(right, bar, WINDOW).to("out", key=str, value=str)
    with TopologyTestDriver(b.build()) as d:
        d.input_topic("left", key=str, value=str).pipe_input(None, "leftValue", timestamp=1)
        assert key_values(d) == emitted
        assert d.dropped_records == (1 if kind == "join" and not repartitioned else 0)


def test_a_repartition_feeding_a_left_join_and_a_sink_passes_null_keys_to_both() -> None:
    """Kafka Streams decides per repartition topic: one with a null-key-keeping join anywhere downstream
    passes such records on, to every node downstream."""
    b = StreamsBuilder()
    left = b.stream("left", key=str, value=str).repartition()
    left.to("copy", key=str, value=str)
    left.left_join(b.table("table", key=str, value=str), bar).to("out", key=str, value=str)
    with TopologyTestDriver(b.build()) as d:
        d.input_topic("left", key=str, value=str).pipe_input(None, "leftValue", timestamp=1)
        assert key_values(d) == [(None, "leftValue|null")]
        assert [(r.key, r.value) for r in d.output_topic("copy", key=str, value=str).read_records()] == [
            (None, "leftValue")
        ]


# -- KStreamGlobalKTableLeftJoinTest ------------------------------------------------------------------------


class GlobalLeftJoin:
    """The test's topology: ``stream.left_join(global, value's second field or None, left+right)``; both
    input topics start at timestamp 0 and advance 1 ms per record."""

    def __init__(self) -> None:
        b = StreamsBuilder()
        table = b.global_table("globalTable", key=str, value=str)
        stream = b.stream("stream", key=int, value=str)

        def key_mapper(key: Any, value: str) -> str | None:
            tokens = value.split(",")
            return tokens[1] if len(tokens) > 1 else None

        stream.left_join(table, key_mapper, lambda v, row: f"{v}+{'null' if row is None else row}").to(
            "out", key=int, value=str
        )
        self.driver = TopologyTestDriver(b.build())
        self.stream = self.driver.input_topic("stream", key=int, value=str, auto_advance_ms=1)
        self.table = self.driver.input_topic("globalTable", key=str, value=str, auto_advance_ms=1)
        self.out = self.driver.output_topic("out", key=int, value=str)

    def push_stream(self, n: int, prefix: str, *, foreign_key: bool = True, null_key: bool = False) -> None:
        for i in range(n):
            value = f"{prefix}{i}" + (f",FKey{i}" if foreign_key else "")
            self.stream.pipe_input(None if null_key and i == 0 else i, value)

    def push_table(self, n: int, prefix: str | None) -> None:
        for i in range(n):
            self.table.pipe_input(f"FKey{i}", None if prefix is None else f"{prefix}{i}")

    def results(self) -> list[tuple[Any, str, int]]:
        return [(r.key, r.value, r.timestamp) for r in self.out.read_records()]


@pytest.fixture
def global_left() -> Any:
    scenario = GlobalLeftJoin()
    with scenario.driver:
        yield scenario


def test_global_left_join_should_not_join_with_empty_global_table_on_stream_updates(
    global_left: GlobalLeftJoin,
) -> None:
    """KStreamGlobalKTableLeftJoinTest.shouldNotJoinWithEmptyGlobalTableOnStreamUpdates."""
    global_left.push_stream(2, "X")
    assert global_left.results() == [(0, "X0,FKey0+null", 0), (1, "X1,FKey1+null", 1)]


def test_global_left_join_should_not_join_on_global_table_updates(global_left: GlobalLeftJoin) -> None:
    """KStreamGlobalKTableLeftJoinTest.shouldNotJoinOnGlobalTableUpdates."""
    s = global_left
    s.push_stream(2, "X")
    assert s.results() == [(0, "X0,FKey0+null", 0), (1, "X1,FKey1+null", 1)]
    s.push_table(2, "Y")
    assert s.results() == []
    s.push_stream(4, "X")
    assert s.results() == [
        (0, "X0,FKey0+Y0", 2),
        (1, "X1,FKey1+Y1", 3),
        (2, "X2,FKey2+null", 4),
        (3, "X3,FKey3+null", 5),
    ]
    s.push_table(4, "YY")
    assert s.results() == []
    s.push_stream(4, "X")
    assert s.results() == [(i, f"X{i},FKey{i}+YY{i}", 6 + i) for i in range(4)]
    s.push_table(4, "YYY")
    assert s.results() == []


def test_global_left_join_should_join_regardless_if_match_found_on_stream_updates(global_left: GlobalLeftJoin) -> None:
    """KStreamGlobalKTableLeftJoinTest.shouldJoinRegardlessIfMatchFoundOnStreamUpdates."""
    s = global_left
    s.push_table(2, "Y")
    assert s.results() == []
    s.push_stream(4, "X")
    assert s.results() == [
        (0, "X0,FKey0+Y0", 0),
        (1, "X1,FKey1+Y1", 1),
        (2, "X2,FKey2+null", 2),
        (3, "X3,FKey3+null", 3),
    ]


def test_global_left_join_should_clear_global_table_entry_on_null_value_updates(global_left: GlobalLeftJoin) -> None:
    """KStreamGlobalKTableLeftJoinTest.shouldClearGlobalTableEntryOnNullValueUpdates."""
    s = global_left
    s.push_table(4, "Y")
    assert s.results() == []
    s.push_stream(4, "X")
    assert s.results() == [(i, f"X{i},FKey{i}+Y{i}", i) for i in range(4)]
    s.push_table(2, None)
    assert s.results() == []
    s.push_stream(4, "XX")
    assert s.results() == [
        (0, "XX0,FKey0+null", 4),
        (1, "XX1,FKey1+null", 5),
        (2, "XX2,FKey2+Y2", 6),
        (3, "XX3,FKey3+Y3", 7),
    ]


def test_global_left_join_should_join_on_null_key_mapper_values(global_left: GlobalLeftJoin) -> None:
    """KStreamGlobalKTableLeftJoinTest.shouldNotJoinOnNullKeyMapperValues as Kafka 4.1 changed it
    (KAFKA-19208): a key mapper that returns None no longer drops the record; the left join emits it with
    None (Kafka 3.7-4.0 emitted nothing here)."""
    s = global_left
    s.push_table(4, "Y")
    assert s.results() == []
    s.push_stream(4, "XXX", foreign_key=False)
    assert s.results() == [(i, f"XXX{i}+null", i) for i in range(4)]
    assert s.driver.dropped_records == 0


def test_global_left_join_should_join_on_null_key_with_non_null_key_mapper_values(global_left: GlobalLeftJoin) -> None:
    """KStreamGlobalKTableLeftJoinTest.shouldJoinOnNullKeyWithNonNullKeyMapperValues."""
    s = global_left
    s.push_table(4, "Y")
    assert s.results() == []
    s.push_stream(4, "X", null_key=True)
    assert s.results() == [
        (None, "X0,FKey0+Y0", 0),
        (1, "X1,FKey1+Y1", 1),
        (2, "X2,FKey2+Y2", 2),
        (3, "X3,FKey3+Y3", 3),
    ]


def test_global_inner_join_drops_and_counts_a_none_mapped_key() -> None:
    """KStreamKTableJoinProcessor's rule for an inner join: a key mapper that gives None is a dropped record."""
    b = StreamsBuilder()
    table = b.global_table("globalTable", key=str, value=str)
    b.stream("stream", key=int, value=str).join(table, lambda k, v: None, bar).to("out", key=int, value=str)
    with TopologyTestDriver(b.build()) as d:
        d.input_topic("stream", key=int, value=str).pipe_input(1, "X", timestamp=1)
        assert d.output_topic("out", key=int, value=str).read_records() == []
        assert d.dropped_records == 1
