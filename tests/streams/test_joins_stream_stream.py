"""Windowed stream-stream joins (``KStream.join`` / ``left_join`` / ``outer_join`` with ``JoinWindows``),
as scenario tables: input rows (side, key, value, timestamp) in arrival order -> the join's output rows
(key, value, timestamp) after each input, in order.

The expected rows follow Kafka Streams 3.1+ (KIP-633) and are its own tests' expectations where they
exist (``KStreamKStreamLeftJoinTest``, ``KStreamKStreamOuterJoinTest``): a left record at ``t`` joins the
right records in ``[t - before, t + after]``; a result carries the larger timestamp of the two; an
unjoined left/outer record is emitted with None only once stream time has passed its window end + grace,
in timestamp order (right before left at equal timestamps); a record whose window had already ended
when it arrived still joins what the other side holds and, unjoined, is emitted at once.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from streams import JoinWindows, StreamsBuilder, TopologyTestDriver

Event = tuple[str, int, str, int]  # ("L" or "R", key, value, timestamp)
Row = tuple[int, str, int]


def show(left: Any, right: Any) -> str:
    return f"{'null' if left is None else left}+{'null' if right is None else right}"


def build(kind: str, windows: JoinWindows) -> StreamsBuilder:
    b = StreamsBuilder()
    left = b.stream("left", key=int, value=str)
    right = b.stream("right", key=int, value=str)
    getattr(left, kind)(right, show, windows).to("out", key=int, value=str)
    return b


def run(
    kind: str, windows: JoinWindows, steps: list[tuple[list[Event], list[Row]]], *, state_dir: Path | None = None
) -> None:
    """Pipe each step's events and check what the join emitted in response, step by step."""
    with TopologyTestDriver(build(kind, windows).build(), state_dir=state_dir) as d:
        sides = {"L": d.input_topic("left", key=int, value=str), "R": d.input_topic("right", key=int, value=str)}
        out = d.output_topic("out", key=int, value=str)
        for i, (events, expected) in enumerate(steps):
            for side, key, value, ts in events:
                sides[side].pipe_input(key, value, timestamp=ts)
            got = [(r.key, r.value, r.timestamp) for r in out.read_records()]
            assert got == expected, f"step {i}: {events}"


# -- inner join ----------------------------------------------------------------------------------------


def test_inner_join_window_edges_are_inclusive_and_results_take_the_larger_timestamp() -> None:
    run(
        "join",
        JoinWindows.of_time_difference_with_no_grace(100),
        [
            ([("L", 0, "A0", 1000), ("L", 1, "A1", 1000)], []),
            ([("R", 0, "a0", 899)], []),  # 101 before: outside
            ([("R", 0, "b0", 900)], [(0, "A0+b0", 1000)]),  # exactly 100 before
            ([("R", 1, "b1", 1100)], [(1, "A1+b1", 1100)]),  # exactly 100 after
            ([("R", 1, "c1", 1101)], []),  # 101 after: outside
            ([("L", 1, "B1", 1050)], [(1, "B1+b1", 1100), (1, "B1+c1", 1101)]),  # joins every match, oldest first
            ([("R", 2, "x", 1000)], []),  # no partner: an inner join emits nothing, ever
            ([("R", 9, "late", 5000)], []),
        ],
    )


def test_inner_join_with_an_after_only_window() -> None:
    """``before(0)``: a left record joins right records from its own time up to ``after`` later (and a
    right record the left records up to ``after`` earlier)."""
    run(
        "join",
        JoinWindows.of_time_difference_with_no_grace(100).before(0),
        [
            ([("L", 0, "A0", 1000)], []),
            ([("R", 0, "a", 999)], []),
            ([("R", 0, "b", 1000)], [(0, "A0+b", 1000)]),
            ([("R", 0, "c", 1100)], [(0, "A0+c", 1100)]),
            ([("R", 0, "d", 1101)], []),
            ([("L", 0, "B0", 1001)], [(0, "B0+c", 1100), (0, "B0+d", 1101)]),
        ],
    )


def test_inner_join_with_a_before_only_window() -> None:
    """``after(0)``: a left record joins right records from ``before`` earlier up to its own time."""
    run(
        "join",
        JoinWindows.of_time_difference_with_no_grace(100).after(0),
        [
            ([("L", 0, "A0", 1000)], []),
            ([("R", 0, "a", 899)], []),
            ([("R", 0, "b", 900)], [(0, "A0+b", 1000)]),
            ([("R", 0, "c", 1000)], [(0, "A0+c", 1000)]),
            ([("R", 0, "d", 1001)], []),
        ],
    )


def test_duplicates_are_all_kept_and_joined() -> None:
    run(
        "join",
        JoinWindows.of_time_difference_with_no_grace(10),
        [
            ([("L", 0, "A", 5), ("L", 0, "A", 5)], []),
            ([("R", 0, "a", 5)], [(0, "A+a", 5), (0, "A+a", 5)]),
            ([("R", 0, "a", 5)], [(0, "A+a", 5), (0, "A+a", 5)]),
        ],
    )


@pytest.mark.parametrize(
    ("kind", "expected", "dropped"),
    [
        ("join", [], 3),  # an inner join drops every record with a null key or value
        ("left_join", [(None, "A+null", 1)], 2),  # KIP-962: the left side emits its null-key record at once
        ("outer_join", [(None, "A+null", 1), (None, "null+a", 1)], 1),  # ... and an outer join both sides'
    ],
)
def test_null_keys_are_emitted_at_once_by_the_outer_sides_and_the_rest_is_dropped_and_counted(
    kind: str, expected: list[tuple[Any, str, int]], dropped: int
) -> None:
    with TopologyTestDriver(build(kind, JoinWindows.of_time_difference_with_no_grace(10)).build()) as d:
        left, right = d.input_topic("left", key=int, value=str), d.input_topic("right", key=int, value=str)
        left.pipe_input(None, "A", timestamp=1)
        left.pipe_input(1, None, timestamp=1)
        right.pipe_input(None, "a", timestamp=1)
        assert [(r.key, r.value, r.timestamp) for r in d.output_topic("out", key=int, value=str).read_records()] == (
            expected
        )
        assert d.dropped_records == dropped


# -- left join -----------------------------------------------------------------------------------------


def test_left_join_emits_unjoined_records_only_when_their_window_closes() -> None:
    """KStreamKStreamLeftJoinTest.testOrdering: the closed A0 goes out before the join that closed it."""
    run(
        "left_join",
        JoinWindows.of_time_difference_with_no_grace(100),
        [
            ([("L", 0, "A0", 0), ("L", 1, "A1", 100)], []),
            ([("R", 1, "a1", 110)], [(0, "A0+null", 0), (1, "A1+a1", 110)]),
        ],
    )


def test_left_join_waits_for_the_grace_period() -> None:
    """KStreamKStreamLeftJoinTest.testGracePeriod: window 100, grace 10; right records never emit alone."""
    run(
        "left_join",
        JoinWindows.of_time_difference_and_grace(100, 10),
        [
            ([("L", 0, "A0", 0), ("L", 1, "A1", 0)], []),
            ([("R", k, f"a{k}", 101) for k in range(4)], []),  # past the windows' end, not their grace
            ([("R", 0, "dummy", 1201)], [(0, "A0+null", 0), (1, "A1+null", 0)]),
        ],
    )


def test_left_join_out_of_order_records_within_grace_still_join() -> None:
    run(
        "left_join",
        JoinWindows.of_time_difference_and_grace(10, 20),
        [
            ([("L", 0, "A0", 100)], []),
            ([("R", 9, "z", 115)], []),  # stream time 115: A0's window ended at 110, closes at 130
            ([("R", 0, "a0", 95)], [(0, "A0+a0", 100)]),  # out of order, within grace: joins, A0 is not unjoined
            ([("L", 1, "A1", 108)], []),  # its window ends at 118 >= stream time: waits
            ([("R", 9, "z", 131)], []),  # A0 found a partner: nothing to emit; A1's window closes at 138
            ([("R", 9, "z", 139)], [(1, "A1+null", 108)]),
        ],
    )


def test_left_join_late_records_join_what_the_other_side_holds_and_unjoined_ones_go_out_at_once() -> None:
    run(
        "left_join",
        JoinWindows.of_time_difference_with_no_grace(100),
        [
            ([("L", 0, "A", 1000), ("R", 1, "x", 1000)], []),
            ([("L", 1, "B", 850)], [(1, "B+null", 850)]),  # window [750, 950] ended before stream time 1000
            ([("L", 1, "C", 920)], [(1, "C+x", 1000)]),  # window [820, 1020] still open: joins
            ([("R", 2, "y", 880)], []),  # a right record is never emitted by a left join
            ([("L", 2, "E", 790)], [(2, "E+y", 880)]),  # late, but the right store still holds y
            ([("L", 3, "F", 990)], []),  # on time: waits in the outer store
            ([("R", 3, "f", 995)], [(3, "F+f", 995)]),  # ... and is joined, so never emitted with null
            ([("R", 9, "z", 2000)], [(0, "A+null", 1000)]),  # only A was still unjoined
        ],
    )


def test_left_join_with_an_after_only_window_emits_at_the_asymmetric_close() -> None:
    """KStreamKStreamLeftJoinTest.shouldNotEmitLeftJoinResultForAsymmetricWindow (first steps)."""
    run(
        "left_join",
        JoinWindows.of_time_difference_with_no_grace(100).before(0),
        [
            ([("L", 0, "A0", 0), ("L", 1, "A1", 1)], []),
            ([("R", 0, "a0", 100)], [(0, "A0+a0", 100)]),
            ([("R", 1, "a1", 102)], [(1, "A1+null", 1)]),  # A1's window [1, 101] closed at 102
        ],
    )


# -- outer join ----------------------------------------------------------------------------------------


def test_outer_join_orders_unjoined_records_of_both_sides_by_timestamp() -> None:
    """KStreamKStreamOuterJoinTest.testGracePeriod: at equal timestamps the right side comes first."""
    run(
        "outer_join",
        JoinWindows.of_time_difference_and_grace(100, 10),
        [
            ([("L", 0, "A0", 0), ("R", 1, "11", 0)], []),
            ([("L", 1, "A1", 101), ("R", 0, "10", 101)], []),
            ([("R", 0, "100", 112)], [(1, "null+11", 0), (0, "A0+null", 0)]),
        ],
    )


def test_outer_join_emits_closed_records_of_either_processor() -> None:
    """KStreamKStreamOuterJoinTest.testLeftExpiredNonJoinedRecordsAreEmittedByTheRightProcessor."""
    run(
        "outer_join",
        JoinWindows.of_time_difference_and_grace(100, 0),
        [
            ([("L", 0, "A0", 1), ("L", 1, "A1", 2), ("L", 0, "A0-0", 3)], []),
            ([("R", 1, "11", 3)], [(1, "A1+11", 3)]),
            ([("R", 2, "100", 401)], [(0, "A0+null", 1), (0, "A0-0+null", 3)]),
            ([("L", 2, "dummy", 402)], [(2, "dummy+100", 402)]),
        ],
    )


def test_outer_join_with_an_asymmetric_window_closes_each_side_at_its_own_time() -> None:
    """KStreamKStreamOuterJoinTest.testEmitAllNonJoinedResultsForAsymmetricWindow: before 5, after 20, so
    a left record's window ends 20 after it, a right record's 5 after it."""
    run(
        "outer_join",
        JoinWindows.of_time_difference_with_no_grace(5).after(20),
        [
            ([("L", 0, "A0", 29), ("L", 1, "A1", 30), ("R", 2, "12", 31), ("R", 3, "13", 36)], []),
            ([("R", 4, "14", 37)], [(2, "null+12", 31)]),
            ([("R", 5, "15", 50)], [(0, "A0+null", 29), (3, "null+13", 36), (4, "null+14", 37)]),
        ],
    )


def test_outer_join_late_records_of_either_side_go_out_at_once() -> None:
    run(
        "outer_join",
        JoinWindows.of_time_difference_with_no_grace(10),
        [
            ([("L", 0, "A", 100)], []),
            ([("R", 1, "b", 50)], [(1, "null+b", 50)]),
            ([("L", 1, "B", 40)], [(1, "B+b", 50)]),
            ([("L", 2, "C", 30)], [(2, "C+null", 30)]),
        ],
    )


def test_a_restarted_join_resumes_its_stores_and_stream_time(tmp_path: Path) -> None:
    """State (both window stores, the outer store and the join's stream time) survives a restart of the
    driver over the same state directory (RocksDB stores): nothing is emitted twice, nothing is lost."""
    b = StreamsBuilder()
    left, right = b.stream("left", key=int, value=str), b.stream("right", key=int, value=str)
    left.left_join(right, show, JoinWindows.of_time_difference_with_no_grace(100)).to("out", key=int, value=str)
    topology = b.build()
    with TopologyTestDriver(topology, state_dir=tmp_path) as d:
        d.input_topic("left", key=int, value=str).pipe_input(0, "A0", timestamp=0)
        d.input_topic("left", key=int, value=str).pipe_input(1, "A1", timestamp=50)
        d.input_topic("right", key=int, value=str).pipe_input(1, "a1", timestamp=60)
        assert [(r.key, r.value) for r in d.output_topic("out", key=int, value=str).read_records()] == [(1, "A1+a1")]
    with TopologyTestDriver(topology, state_dir=tmp_path) as d:
        d.input_topic("right", key=int, value=str).pipe_input(0, "late", timestamp=90)
        d.input_topic("right", key=int, value=str).pipe_input(9, "z", timestamp=200)
        assert [(r.key, r.value, r.timestamp) for r in d.output_topic("out", key=int, value=str).read_records()] == [
            (0, "A0+late", 90),
        ]
        d.input_topic("left", key=int, value=str).pipe_input(2, "A2", timestamp=150)  # window [50, 250]: waits
        d.input_topic("right", key=int, value=str).pipe_input(9, "z", timestamp=400)
        assert [(r.key, r.value, r.timestamp) for r in d.output_topic("out", key=int, value=str).read_records()] == [
            (2, "A2+null", 150),
        ]


def test_describe_shows_the_join_processors_and_their_stores() -> None:
    text = build("left_join", JoinWindows.of_time_difference_with_no_grace(10)).build().describe()
    assert (
        "Processor: KSTREAM-JOINTHIS-0000000002 (stores: [KSTREAM-JOINTHIS-0000000002-store, "
        "KSTREAM-OUTEROTHER-0000000003-store, KSTREAM-OUTERSHARED-0000000004-store])" in text
    )
    assert "<-- KSTREAM-JOINTHIS-0000000002, KSTREAM-OUTEROTHER-0000000003" in text
    assert text.count("Sub-topology:") == 1


def test_join_windows_validate_their_durations() -> None:
    w = JoinWindows.of_time_difference_and_grace(100, 5).before(-20)
    assert (w.before_ms, w.after_ms, w.grace_ms, w.size_ms) == (-20, 100, 5, 80)
    with pytest.raises(ValueError, match="before \\+ after"):
        JoinWindows.of_time_difference_with_no_grace(10).after(-11)
    with pytest.raises(TypeError, match="JoinWindows"):
        b = StreamsBuilder()
        b.stream("a").join(b.stream("b"), show)
    with pytest.raises(TypeError, match="needs a KStream \\(with JoinWindows\\), a KTable or a GlobalKTable"):
        StreamsBuilder().stream("a").join("b", show, JoinWindows.of_time_difference_with_no_grace(1))


def test_a_record_past_its_window_end_is_emitted_at_once_and_joins_a_partner_within_grace() -> None:
    """Released Kafka Streams (``KStreamKStreamJoin.process``): an unjoined record whose window has ended by
    stream time when it arrives is emitted with None at once, grace or not; it stays in its side's store,
    so a partner that arrives within the grace period still joins it: two results for one record."""
    run(
        "left_join",
        JoinWindows.of_time_difference_and_grace(10, 50),
        [
            ([("L", 9, "X", 100)], []),
            ([("L", 0, "A", 60)], [(0, "A+null", 60)]),  # window [50, 70] ended at stream time 100
            ([("R", 0, "a", 65)], [(0, "A+a", 65)]),  # within grace (closes at 120): joins A as well
            ([("L", 1, "B", 30)], [(1, "B+null", 30)]),  # window [20, 40] closed at 90: late, emitted at once
            ([("R", 1, "b", 35)], []),  # a right record too late for B's window store: no second result
            ([("R", 9, "z", 200)], [(9, "X+null", 100)]),
        ],
    )


def test_outer_join_a_record_past_its_window_end_is_emitted_at_once_on_either_side() -> None:
    """The same for both sides of an outer join (window 10, grace 50)."""
    run(
        "outer_join",
        JoinWindows.of_time_difference_and_grace(10, 50),
        [
            ([("L", 9, "X", 100)], []),
            ([("R", 0, "a", 60)], [(0, "null+a", 60)]),
            ([("L", 0, "A", 65)], [(0, "A+a", 65)]),  # joins a; A's own window [55, 75] has ended too
            ([("L", 1, "B", 95)], []),  # window [85, 105] still open: waits
            ([("R", 9, "z", 200)], [(1, "B+null", 95), (9, "X+null", 100)]),  # z itself waits (on time)
        ],
    )


def test_both_sides_are_repartitioned_after_a_key_change_and_the_joiner_can_take_the_key() -> None:
    b = StreamsBuilder()
    orders = b.stream("orders", key=str, value="json").select_key(lambda k, o: o["ref"])
    payments = b.stream("payments", key=str, value="json").map(lambda k, p: (p["ref"], p["amount"]))
    (
        orders.join(
            payments,
            lambda k, o, amount: f"{k}:{o['n']}:{amount}",
            JoinWindows.of_time_difference_with_no_grace(10),
            with_key=True,
            name="paid",
        ).to("out", key=str, value=str)
    )
    topology = b.build()
    text = topology.describe()
    assert text.count("Sub-topology:") == 3
    assert "(topic: paid-left-repartition)" in text and "(topic: paid-right-repartition)" in text
    assert "Processor: paid-join-this (stores: [paid-join-this-store, paid-join-other-store])" in text
    with TopologyTestDriver(topology) as d:
        d.input_topic("orders", key=str, value="json").pipe_input("o1", {"ref": "r1", "n": 1}, timestamp=100)
        d.input_topic("payments", key=str, value="json").pipe_input("p1", {"ref": "r1", "amount": 5}, timestamp=105)
        d.input_topic("payments", key=str, value="json").pipe_input("p2", {"ref": "r1", "amount": 6}, timestamp=111)
        assert [(r.key, r.value, r.timestamp) for r in d.output_topic("out", key=str, value=str).read_records()] == [
            ("r1", "r1:1:5", 105)
        ]


def test_left_join_with_zero_after_emits_each_record_as_the_next_one_ends_its_window() -> None:
    """KStreamKStreamLeftJoinTest.testLeftJoinedRecordsWithZeroAfterAreEmitted: window 100 ``after(0)``, no
    grace; a left record's window ends at its own time, so each later left record closes the earlier ones."""
    keys = range(4)
    run(
        "left_join",
        JoinWindows.of_time_difference_with_no_grace(100).after(0),
        [
            ([("L", k, f"A{k}", 1000 + k) for k in keys], [(k, f"A{k}+null", 1000 + k) for k in range(3)]),
            ([("R", k, f"a{k}", 999) for k in keys], [(k, f"A{k}+a{k}", 1000 + k) for k in keys]),
            ([("R", k, f"b{k}", 1000) for k in keys], [(k, f"A{k}+b{k}", 1000 + k) for k in keys]),
            ([("R", k, f"c{k}", 1001) for k in keys], [(k, f"A{k}+c{k}", 1000 + k) for k in (1, 2, 3)]),
            ([("R", k, f"d{k}", 1002) for k in keys], [(k, f"A{k}+d{k}", 1000 + k) for k in (2, 3)]),
            ([("R", k, f"e{k}", 1003) for k in keys], [(3, "A3+e3", 1003)]),
            ([("R", k, f"f{k}", 1100) for k in keys], []),
        ],
    )


def test_the_outer_join_emit_throttle_delays_unjoined_records_by_wall_clock_time() -> None:
    """``emit.interval.ms.kstreams.outer.join.spurious.results.fix`` (here 1000 ms against the driver's
    simulated clock): unjoined records whose window closed wait for the next scan, at most one per interval;
    what is emitted, and in which order, does not change."""
    b = build("left_join", JoinWindows.of_time_difference_with_no_grace(100))
    with TopologyTestDriver(b.build(), outer_join_emit_interval_ms=1000) as d:
        left = d.input_topic("left", key=int, value=str)
        out = d.output_topic("out", key=int, value=str)

        def step(key: int, value: str, ts: int) -> list[tuple[int, str, int]]:
            left.pipe_input(key, value, timestamp=ts)
            return [(r.key, r.value, r.timestamp) for r in out.read_records()]

        assert step(0, "A", 0) == []
        assert step(1, "B", 120) == [(0, "A+null", 0)]  # the first scan; the next may run at wall clock 1000
        assert step(2, "C", 240) == []  # B's window closed at 221, but the scan waits for the wall clock
        d.advance_wall_clock(1000)
        assert step(3, "D", 260) == [(1, "B+null", 120)]
        assert step(4, "E", 360) == []  # C closed at 341: throttled again
        d.advance_wall_clock(999)
        assert step(5, "F", 361) == []
        d.advance_wall_clock(1)
        assert step(6, "G", 362) == [(2, "C+null", 240), (3, "D+null", 260)]
        # Throttled, but stream time jumps past the outer store's retention: the waiting records are emitted
        # now rather than lost.
        assert step(7, "H", 10_000) == [(4, "E+null", 360), (5, "F+null", 361), (6, "G+null", 362)]


def test_emit_intervals_default_to_kafkas_and_are_validated() -> None:
    from streams.config import StreamsConfig

    config = StreamsConfig(application_id="app")
    assert (config.outer_join_emit_interval_ms, config.windowed_aggregation_emit_interval_ms) == (1000, 1000)
    with pytest.raises(ValueError, match="emit interval outer_join_ms must be an integer >= 0"):
        StreamsConfig(application_id="app", outer_join_emit_interval_ms=-1)
    with pytest.raises(ValueError, match="emit interval windowed_aggregation_ms must be an integer >= 0"):
        TopologyTestDriver(
            build("join", JoinWindows.of_time_difference_with_no_grace(1)).build(),
            windowed_aggregation_emit_interval_ms=1.5,
        )  # type: ignore[arg-type]
