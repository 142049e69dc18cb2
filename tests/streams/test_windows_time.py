"""Tumbling and hopping windows (``TimeWindows``), with Kafka Streams' semantics, as scenario tables:
input (key, value, timestamp) rows -> output (windowed key, value, timestamp) rows, in order.

The expected rows are Kafka Streams' own (``KStreamWindowAggregateTest``, ``SuppressScenarioTest``): windows
are aligned to the epoch and ``[start, end)``; a result carries the largest timestamp of the records in its
window; a record whose window ended more than the grace period before stream time is dropped; with
``emit_strategy="on_window_close"`` each window is emitted once, when stream time reaches end + grace.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from streams import (
    EmitStrategy,
    StreamsBuilder,
    TimeWindows,
    TopologyTestDriver,
    WindowedSerdes,
)
from tests.streams.scenarios import (
    EXPIRED_BY_GRACE_INPUT,
    Build,
    Row,
    pipe,
    piped,
    read_rows,
    refused_retention,
    scenario,
)


def concat(key: str, value: str, agg: str) -> str:
    return agg + "+" + value


def concatenated(windows: TimeWindows, initial: str = "0", **options: Any) -> Build:
    """in -> per key and window, ``initial`` and the values joined by "+" (store "agg"; ``options`` go to
    ``aggregate``) -> out."""

    def build(b: StreamsBuilder) -> None:
        (
            b.stream("in", key=str, value=str)
            .group_by_key()
            .windowed_by(windows)
            .aggregate(lambda: initial, concat, store="agg", value=str, **options)
            .to_stream()
            .to("out", value=str)
        )

    return build


def counted(windows: TimeWindows) -> Build:
    """in -> records per key and window (store "c") -> out."""

    def build(b: StreamsBuilder) -> None:
        b.stream("in", key=str, value=str).group_by_key().windowed_by(windows).count(store="c").to_stream().to("out")

    return build


# KStreamWindowAggregateTest.testAggBasic: hopping windows of 10 advancing by 5, grace 100. The input: a line per
# 5 ms (one hop), then the late records; the output: a line per input record, each window it updated.
HOPPING_INPUT = [
    ("A", "1", 0), ("B", "2", 1), ("C", "3", 2), ("D", "4", 3), ("A", "1", 4),
    ("A", "1", 5), ("B", "2", 6), ("D", "4", 7), ("B", "2", 8), ("C", "3", 9),
    ("A", "1", 10), ("B", "2", 11), ("D", "4", 12), ("B", "2", 13), ("C", "3", 14),
    ("B", "1", 3), ("B", "2", 2), ("B", "3", 9),  # out of order, within grace: old windows are updated
]  # fmt: skip
HOPPING_OUTPUT = [
    ("[A@0/10]", "0+1", 0),
    ("[B@0/10]", "0+2", 1),
    ("[C@0/10]", "0+3", 2),
    ("[D@0/10]", "0+4", 3),
    ("[A@0/10]", "0+1+1", 4),
    ("[A@0/10]", "0+1+1+1", 5), ("[A@5/15]", "0+1", 5),
    ("[B@0/10]", "0+2+2", 6), ("[B@5/15]", "0+2", 6),
    ("[D@0/10]", "0+4+4", 7), ("[D@5/15]", "0+4", 7),
    ("[B@0/10]", "0+2+2+2", 8), ("[B@5/15]", "0+2+2", 8),
    ("[C@0/10]", "0+3+3", 9), ("[C@5/15]", "0+3", 9),
    ("[A@5/15]", "0+1+1", 10), ("[A@10/20]", "0+1", 10),
    ("[B@5/15]", "0+2+2+2", 11), ("[B@10/20]", "0+2", 11),
    ("[D@5/15]", "0+4+4", 12), ("[D@10/20]", "0+4", 12),
    ("[B@5/15]", "0+2+2+2+2", 13), ("[B@10/20]", "0+2+2", 13),
    ("[C@5/15]", "0+3+3", 14), ("[C@10/20]", "0+3", 14),
    ("[B@0/10]", "0+2+2+2+1", 8),  # the late records keep the window's largest timestamp
    ("[B@0/10]", "0+2+2+2+1+2", 8),
    ("[B@0/10]", "0+2+2+2+1+2+3", 9), ("[B@5/15]", "0+2+2+2+2+3", 13),
]  # fmt: skip
W10 = WindowedSerdes.time_windowed(str, 10)


@pytest.mark.parametrize("cache", [True, False])
@pytest.mark.parametrize("kind", ["memory", "rocksdb"])
def test_hopping_windows_overlap_and_take_out_of_order_records_within_grace(
    cache: bool, kind: str, tmp_path: Path
) -> None:
    build = concatenated(TimeWindows.of_size_and_grace(10, 100).advance_by(5), cache=cache, kind=kind)
    # The driver commits after every record, so the cache forwards every update too.
    assert scenario(build, HOPPING_INPUT, key=W10, value=str, state_dir=tmp_path) == HOPPING_OUTPUT


def test_tumbling_window_boundaries_are_start_inclusive_end_exclusive() -> None:
    rows = [("a", "x", 0), ("a", "x", 9), ("a", "x", 10), ("b", "x", 19), ("a", "x", 20)]
    assert scenario(counted(TimeWindows.of_size_with_no_grace(10)), rows, key=W10, value=int) == [
        ("[a@0/10]", 1, 0),
        ("[a@0/10]", 2, 9),
        ("[a@10/20]", 1, 10),
        ("[b@10/20]", 1, 19),
        ("[a@20/30]", 1, 20),
    ]


def test_records_later_than_grace_are_dropped_and_counted() -> None:
    """KStreamWindowAggregateTest.shouldLogAndMeterWhenSkippingExpiredWindowByGrace: tumbling 10, grace 90;
    at stream time 200 the window [100, 110) closed at 110 + 90."""
    build = concatenated(TimeWindows.of_size_and_grace(10, 90), initial="")
    with piped(build, [*EXPIRED_BY_GRACE_INPUT, ("k", "6", 6)]) as d:
        assert read_rows(d, "out", W10, str) == [("[k@200/210]", "+100", 200)]
        assert d.dropped_records == 7


#: KStreamWindowAggregateTest.shouldLogAndMeterWhenSkippingExpiredWindow's input: each record's value is its timestamp
RETENTION_INPUT: list[Row] = [("k", str(ts), ts) for ts in (100, 0, 1, 2, 3, 4, 5, 6, 105, 106)]


def test_retention_and_grace_with_hopping_windows() -> None:
    """KStreamWindowAggregateTest.shouldLogAndMeterWhenSkippingExpiredWindow: size 10, advance 5, grace
    90, retention 100. At stream time 100 window [0, 10) is closed (10 + 90), [5, 15) still open."""
    build = concatenated(TimeWindows.of_size_and_grace(10, 90).advance_by(5), initial="", retention=100)
    with piped(build, RETENTION_INPUT) as d:
        assert read_rows(d, "out", W10, str) == [
            ("[k@95/105]", "+100", 100),
            ("[k@100/110]", "+100", 100),
            ("[k@5/15]", "+5", 5),
            ("[k@5/15]", "+5+6", 6),
            ("[k@100/110]", "+100+105", 105),
            ("[k@105/115]", "+105", 105),
            ("[k@100/110]", "+100+105+106", 106),
            ("[k@105/115]", "+105+106", 106),
        ]
        assert d.dropped_records == 7
        # The store keeps windows starting after the newest start (105) minus the retention (100): [5, 15)
        # has expired from it.
        assert d.get_window_store("agg").fetch("k", 0, 200) == [(95, "+100"), (100, "+100+105+106"), (105, "+105+106")]


def test_emit_on_window_close_emits_each_window_once_when_it_closes() -> None:
    """KIP-825 (KStreamWindowAggregateTest.shouldEmitWithInterval0): size 10, advance 5, grace 5; at D@20
    stream time closes windows ending by 15."""

    def build(b: StreamsBuilder) -> None:
        (
            b.stream("in", key=str, value=str)
            .group_by_key()
            .windowed_by(TimeWindows.of_size_and_grace(10, 5).advance_by(5))
            .emit_strategy(EmitStrategy.on_window_close())
            .aggregate(lambda: "0", concat, store="agg", value=str)
            .to_stream()
            .to("out", value=str)
        )

    rows = [("A", "1", 0), ("A", "1", 5), ("B", "2", 10), ("C", "3", 15), ("D", "4", 20)]
    assert scenario(build, rows, key=W10, value=str) == [
        ("[A@0/10]", "0+1+1", 5),
        ("[A@5/15]", "0+1", 5),
        ("[B@5/15]", "0+2", 10),
    ]


def test_emit_on_window_close_as_an_aggregation_option_and_late_records() -> None:
    """The final-result variant of the retention scenario: at stream time 106 only [5, 15) has closed."""
    windows = TimeWindows.of_size_and_grace(10, 90).advance_by(5)
    build = concatenated(windows, initial="", retention=100, emit_strategy="on_window_close")
    assert scenario(build, RETENTION_INPUT, key=W10, value=str) == [("[k@5/15]", "+5+6", 6)]


def _throttled_final_results(retention: int | None) -> list[list[Row]]:
    """KStreamWindowAggregateTest.shouldEmitWithLargeInterval's input (size 10, advance 5, grace 5, emit final,
    ``emit.interval.ms.kstreams.windowed.aggregation`` 1000): what each step emitted, with the wall clock
    at 0, 10000 and 10100 ms."""
    windows = TimeWindows.of_size_and_grace(10, 5).advance_by(5)
    b = StreamsBuilder()
    concatenated(windows, emit_strategy="on_window_close", retention=retention)(b)
    with TopologyTestDriver(b.build(), windowed_aggregation_emit_interval_ms=1000) as d:
        steps = []
        for wall_clock, rows in [
            (0, [("A", "1", 0), ("A", "1", 5), ("B", "2", 10), ("C", "3", 15)]),
            (10_000, [("D", "4", 20)]),
            (10_100, [("E", "5", 40)]),
        ]:
            d.advance_wall_clock(wall_clock - d.wall_clock_ms)
            pipe(d, "in", rows)
            steps.append(read_rows(d, "out", W10, str))
        return steps


def test_emit_on_window_close_is_throttled_by_wall_clock_time() -> None:
    """KStreamWindowAggregateTest.shouldEmitWithLargeInterval (emit final): the first record takes the
    throttle's turn, so nothing is emitted until the wall clock has moved 1000 ms; then the windows closed
    by then; the next record, 100 ms later, is throttled again (the store keeps the closed windows:
    ``retention`` 1000)."""
    assert _throttled_final_results(1000) == [
        [],
        [("[A@0/10]", "0+1+1", 5), ("[A@5/15]", "0+1", 5), ("[B@5/15]", "0+2", 10)],
        [],
    ]


def test_the_emit_throttle_never_loses_a_closed_window() -> None:
    """The same with the default retention (size + grace), where a window leaves the store as it closes:
    the windows that E@40 closes are emitted at once, throttle or not (Kafka Streams would wait for the next
    turn, its store keeping them for a segment)."""
    assert _throttled_final_results(None)[2] == [
        ("[B@10/20]", "0+2", 10),
        ("[C@10/20]", "0+3", 15),
        ("[C@15/25]", "0+3", 15),
        ("[D@15/25]", "0+4", 20),
        ("[D@20/30]", "0+4", 20),
    ]


def test_emitted_final_results_are_not_emitted_again_after_a_restart(tmp_path: Path) -> None:
    """KStreamWindowAggregateTest.shouldEmitFromLastEmitTime: the last emitted close time is kept with the
    store, so a restarted task goes on from there."""
    build = concatenated(TimeWindows.of_size_and_grace(10, 5).advance_by(5), emit_strategy="on_window_close")
    with piped(build, [("A", "1", 0), ("B", "2", 5), ("C", "3", 15)], state_dir=tmp_path) as d:
        assert read_rows(d, "out", W10, str) == [("[A@0/10]", "0+1", 0), ("[B@0/10]", "0+2", 5)]
    with piped(build, [("D", "4", 25)], state_dir=tmp_path) as d:
        assert read_rows(d, "out", W10, str) == [("[B@5/15]", "0+2", 5), ("[C@10/20]", "0+3", 15)]


def test_stream_time_survives_a_restart_so_late_records_stay_late(tmp_path: Path) -> None:
    """A restarted task resumes at the stream time of its last commit: a record that was late before the
    restart is still late after it (and is not counted into a window that already closed)."""
    build = counted(TimeWindows.of_size_with_no_grace(10))
    with piped(build, [("a", "x", 5), ("a", "x", 25)], state_dir=tmp_path) as d:
        assert read_rows(d, "out", W10, int) == [("[a@0/10]", 1, 5), ("[a@20/30]", 1, 25)]
    with piped(build, [], state_dir=tmp_path) as d:
        assert d.tasks[0].stream_time == 25
        pipe(d, "in", [("a", "x", 7), ("a", "x", 26)])
        assert read_rows(d, "out", W10, int) == [("[a@20/30]", 2, 26)]
        assert d.dropped_records == 1


def test_null_keys_are_dropped_and_counted() -> None:
    with piped(counted(TimeWindows.of_size_with_no_grace(10)), [(None, "x", 1), ("a", "x", 2)]) as d:
        assert read_rows(d, "out", W10, int) == [("[a@0/10]", 1, 2)]
        assert d.dropped_records == 1


def test_retention_shorter_than_size_plus_grace_is_refused() -> None:
    assert (
        "retention period of window store 'c' must be no smaller than its window size plus the grace period: "
        "got retention=50 ms, needs at least 70 ms"
    ) in refused_retention(TimeWindows.of_size_and_grace(60, 10), retention=50)


def test_window_definitions_are_validated() -> None:
    with pytest.raises(ValueError, match="window size must be larger than zero"):
        TimeWindows.of_size_with_no_grace(0)
    with pytest.raises(ValueError, match=r"window advance must be more than zero and at most the size \(10 ms\)"):
        TimeWindows.of_size_with_no_grace(10).advance_by(11)
    with pytest.raises(ValueError, match="window grace must not be negative"):
        TimeWindows.of_size_and_grace(10, -1)
    with pytest.raises(TypeError, match="window size must be a timedelta or integer milliseconds"):
        TimeWindows.of_size_with_no_grace(1.5)  # type: ignore[arg-type]


def test_durations_accept_timedelta() -> None:
    from datetime import timedelta

    w = TimeWindows.of_size_and_grace(timedelta(minutes=1), timedelta(seconds=30)).advance_by(timedelta(seconds=20))
    assert (w.size_ms, w.advance_ms, w.grace_ms) == (60_000, 20_000, 30_000)
    assert list(w.window_starts(65_000)) == [20_000, 40_000, 60_000]
