"""Sliding windows (KIP-450), as scenario tables: windows ``[start, start + difference]`` (both ends
inclusive) exist only where records define them. A record creates its left window ``[t - difference,
t]`` (holding every record within a difference before it), updates every existing window it falls into,
and creates the right window ``[t + 1, t + 1 + difference]`` of the record before it when it is the first
record to fall there; a record older than the newest creates its own right window from the records after
it. Records earlier than one difference share the window ``[0, difference]``.

The values per window are Kafka Streams' (``KStreamSlidingWindowAggregateTest``, which checks them per
window start as sets); the tables here also pin the order they are emitted in.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from streams import SlidingWindows, StreamsBuilder, WindowedSerdes
from tests.streams.scenarios import EXPIRED_BY_GRACE_INPUT, Build, Row, piped, read_rows, refused_retention, scenario


def concat(key: str, value: str, agg: str) -> str:
    return agg + "+" + value


def sliding(difference: int, grace: int, *, cache: bool = True, final: bool = False, kind: str = "memory") -> Build:
    def build(b: StreamsBuilder) -> None:
        (
            b.stream("in", key=str, value=str)
            .group_by_key()
            .windowed_by(SlidingWindows.of_time_difference_and_grace(difference, grace))
            .aggregate(
                lambda: "0",
                concat,
                store="s",
                value=str,
                cache=cache,
                kind=kind,
                emit_strategy="on_window_close" if final else "on_window_update",
            )
            .to_stream()
            .to("out", value=str)
        )

    return build


SMALL_INPUT: list[Row] = [
    ("A", "1", 10),
    ("A", "2", 10),
    ("A", "3", 14),
    ("A", "4", 15),
    ("A", "5", 20),
    ("A", "6", 22),
    ("A", "7", 30),
]
SMALL_OUTPUT: list[Row] = [
    ("[A@0/10]", "0+1", 10),  # A@10's left window
    ("[A@0/10]", "0+1+2", 10),  # a second record at 10 joins it
    ("[A@11/21]", "0+3", 14),  # A@14 is the first record in A@10's right window
    ("[A@4/14]", "0+1+2+3", 14),  # A@14's left window starts with the records at 10
    ("[A@11/21]", "0+3+4", 15),
    ("[A@15/25]", "0+4", 15),  # A@14's right window
    ("[A@5/15]", "0+1+2+3+4", 15),
    ("[A@15/25]", "0+4+5", 20),
    ("[A@11/21]", "0+3+4+5", 20),
    ("[A@16/26]", "0+5", 20),
    ("[A@10/20]", "0+1+2+3+4+5", 20),  # both ends inclusive: 10 and 20 are in
    ("[A@16/26]", "0+5+6", 22),
    ("[A@15/25]", "0+4+5+6", 22),
    ("[A@21/31]", "0+6", 22),
    ("[A@12/22]", "0+3+4+5+6", 22),
    ("[A@21/31]", "0+6+7", 30),
    ("[A@23/33]", "0+7", 30),
    ("[A@20/30]", "0+5+6+7", 30),
]
W10 = WindowedSerdes.time_windowed(str, 10)
W50 = WindowedSerdes.time_windowed(str, 50)


@pytest.mark.parametrize("cache", [True, False])
@pytest.mark.parametrize("kind", ["memory", "rocksdb"])
def test_windows_made_by_record_pairs(cache: bool, kind: str, tmp_path: Path) -> None:
    """KStreamSlidingWindowAggregateTest.testAggregateSmallInput: time difference 10, grace 5."""
    assert (
        scenario(sliding(10, 5, cache=cache, kind=kind), SMALL_INPUT, key=W10, value=str, state_dir=tmp_path)
        == SMALL_OUTPUT
    )


def test_final_results_of_sliding_windows() -> None:
    """At stream time 30 with grace 5, windows ending before 25 are closed."""
    assert scenario(sliding(10, 5, final=True), SMALL_INPUT, key=W10, value=str) == [
        ("[A@0/10]", "0+1+2", 10),
        ("[A@4/14]", "0+1+2+3", 14),
        ("[A@5/15]", "0+1+2+3+4", 15),
        ("[A@10/20]", "0+1+2+3+4+5", 20),
        ("[A@11/21]", "0+3+4+5", 20),
        ("[A@12/22]", "0+3+4+5+6", 22),
    ]


EARLY_INPUT: list[Row] = [
    ("A", "1", 0),
    ("A", "2", 5),
    ("A", "3", 6),
    ("A", "4", 3),
    ("A", "5", 13),
    ("A", "6", 10),
    ("A", "7", 70),
]


def test_records_earlier_than_the_time_difference_share_the_first_window() -> None:
    """KStreamSlidingWindowAggregateTest.testEarlyRecordsSmallInput: time difference 50, no grace; every
    record before 50 is in [0, 50]."""
    assert scenario(sliding(50, 0, cache=False), EARLY_INPUT, key=W50, value=str) == [
        ("[A@0/50]", "0+1", 0),
        ("[A@1/51]", "0+2", 5),  # A@0's right window
        ("[A@0/50]", "0+1+2", 5),
        ("[A@1/51]", "0+2+3", 6),
        ("[A@6/56]", "0+3", 6),  # A@5's right window
        ("[A@0/50]", "0+1+2+3", 6),
        ("[A@1/51]", "0+2+3+4", 6),  # A@3, out of order: it is in A@0's right window,
        ("[A@4/54]", "0+2+3", 6),  # and gets a right window of its own from the later records
        ("[A@0/50]", "0+1+2+3+4", 6),
        ("[A@1/51]", "0+2+3+4+5", 13),
        ("[A@4/54]", "0+2+3+5", 13),
        ("[A@6/56]", "0+3+5", 13),
        ("[A@7/57]", "0+5", 13),  # A@6's right window
        ("[A@0/50]", "0+1+2+3+4+5", 13),
        ("[A@1/51]", "0+2+3+4+5+6", 13),
        ("[A@4/54]", "0+2+3+5+6", 13),
        ("[A@6/56]", "0+3+5+6", 13),
        ("[A@7/57]", "0+5+6", 13),
        ("[A@11/61]", "0+5", 13),  # A@10's right window
        ("[A@0/50]", "0+1+2+3+4+5+6", 13),
        ("[A@20/70]", "0+7", 70),
    ]


def test_final_results_of_early_records() -> None:
    assert scenario(sliding(50, 0, final=True), EARLY_INPUT, key=W50, value=str) == [
        ("[A@0/50]", "0+1+2+3+4+5+6", 13),
        ("[A@1/51]", "0+2+3+4+5+6", 13),
        ("[A@4/54]", "0+2+3+5+6", 13),
        ("[A@6/56]", "0+3+5+6", 13),
        ("[A@7/57]", "0+5+6", 13),
        ("[A@11/61]", "0+5", 13),
    ]


@pytest.mark.parametrize("final", [False, True])
def test_windows_closed_by_grace_are_skipped_and_counted(final: bool) -> None:
    """KStreamSlidingWindowAggregateTest.shouldLogAndMeterWhenSkippingExpiredWindowByGrace: difference 10,
    grace 90; at stream time 200 windows ending before 110 are closed: the left windows of 100..105 are
    skipped, and 15 is dropped whole."""
    rows = [*EXPIRED_BY_GRACE_INPUT, ("k", "6", 15), ("k", "101", 300), ("k", "102", 400)]
    with piped(sliding(10, 90, final=final), rows) as d:
        expected = [("[k@190/200]", "0+100", 200), ("[k@290/300]", "0+101", 300)]
        if not final:
            expected.append(("[k@390/400]", "0+102", 400))
        assert read_rows(d, "out", W10, str) == expected
        assert d.dropped_records == 7


def test_sliding_window_retention_must_cover_two_time_differences_plus_grace() -> None:
    assert (
        "must be no smaller than 2 * time difference plus the grace period: got retention=20 ms, needs at least 25 ms"
        in refused_retention(SlidingWindows.of_time_difference_and_grace(10, 5), retention=20)
    )
