"""Session windows, as scenario tables: per key, records less than the inactivity gap apart form one
session ``[first, last]`` (both inclusive). A record within the gap of one or more sessions merges them:
the merged sessions are removed, which downstream sees as deletes (None) of their windowed keys, and the
new session carries the merged aggregate. Results are timestamped with the session end. A record is
dropped when its (merged) session ended more than grace + gap before stream time.

Expected rows from Kafka Streams' ``SuppressScenarioTest`` and ``KStreamSessionWindowAggregateProcessorTest``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from streams import SessionWindow, SessionWindows, StreamsBuilder, TopologyTestDriver, WindowedSerdes
from streams.windows import Windowed
from tests.streams.scenarios import Row, pipe, read_rows, refused_retention, scenario

SESSION_KEYS = WindowedSerdes.session_windowed(str)


def count_sessions(gap: int, grace: int = 0, *, cache: bool = True, final: bool = False, kind: str = "memory"):  # type: ignore[no-untyped-def]
    def build(b: StreamsBuilder) -> None:
        (
            b.stream("in", key=str, value=str)
            .group_by_key()
            .windowed_by(SessionWindows.of_inactivity_gap_and_grace(gap, grace))
            .count(store="sessions", cache=cache, kind=kind, emit_strategy="on_window_close" if final else None)
            .to_stream()
            .to("out")
        )

    return build


# SuppressScenarioTest.shouldSupportFinalResultsForSessionWindows: gap 5, no grace.
INPUT: list[Row] = [
    ("k1", "v1", 0),
    ("k1", "v1", 5),  # within the gap: [0, 0] becomes [0, 5]
    ("k1", "v1", 1),  # out of order, inside [0, 5]
    ("k2", "v1", 11),  # any key advances stream time: [k1@0/5] closes at 5 + 5 + 0
    ("k1", "v1", 5),  # late: its session has closed
    ("k1", "v1", 30),
]


@pytest.mark.parametrize("kind", ["memory", "rocksdb"])
def test_merges_emit_deletes_of_the_merged_sessions(kind: str, tmp_path: Path) -> None:
    b = StreamsBuilder()
    count_sessions(5, cache=False, kind=kind)(b)
    with TopologyTestDriver(b.build(), state_dir=tmp_path) as d:
        pipe(d, "in", INPUT)
        assert read_rows(d, "out", SESSION_KEYS, int) == [
            ("[k1@0/0]", 1, 0),
            ("[k1@0/0]", None, 0),
            ("[k1@0/5]", 2, 5),
            ("[k1@0/5]", None, 5),  # a record inside a session replaces it: delete, then the update
            ("[k1@0/5]", 3, 5),
            ("[k2@11/11]", 1, 11),
            ("[k1@30/30]", 1, 30),
        ]
        assert d.dropped_records == 1
        # The store keeps sessions ending within the retention (gap + grace = 5) of the newest end (30).
        store = d.get_session_store("sessions")
        assert store.fetch("k1") == [(Windowed("k1", SessionWindow(30, 30)), 1)]
        assert store.fetch_session("k2", 11, 11) is None


def test_with_the_cache_a_session_replaced_in_place_emits_only_its_update() -> None:
    """The cache merges the delete and the update of [k1@0/5] (one key) into the update."""
    assert scenario(count_sessions(5), INPUT, key=SESSION_KEYS, value=int) == [
        ("[k1@0/0]", 1, 0),
        ("[k1@0/0]", None, 0),
        ("[k1@0/5]", 2, 5),
        ("[k1@0/5]", 3, 5),
        ("[k2@11/11]", 1, 11),
        ("[k1@30/30]", 1, 30),
    ]


def test_a_record_bridging_two_sessions_merges_them() -> None:
    rows = [("a", "x", 0), ("a", "x", 10), ("a", "x", 5), ("a", "x", 2)]
    assert scenario(count_sessions(5, grace=10, cache=False), rows, key=SESSION_KEYS, value=int) == [
        ("[a@0/0]", 1, 0),
        ("[a@10/10]", 1, 10),  # 10 - 0 > gap: a second session
        ("[a@0/0]", None, 0),  # 5 is within the gap of both: they merge
        ("[a@10/10]", None, 10),
        ("[a@0/10]", 3, 10),
        ("[a@0/10]", None, 10),
        ("[a@0/10]", 4, 10),
    ]


def test_sessions_of_several_keys_and_merging() -> None:
    """KStreamSessionWindowAggregateProcessorTest.shouldHandleMultipleSessionsAndMerging (gap 5 minutes)."""
    gap = 5 * 60 * 1000
    rows = [
        ("a", "1", 0),
        ("b", "1", 0),
        ("c", "1", 0),
        ("d", "1", 0),
        ("d", "2", gap // 2),
        ("a", "2", gap + 1),
        ("b", "2", gap + 1),
        ("a", "3", gap + 1 + gap // 2),
        ("c", "3", gap + 1 + gap // 2),
    ]
    assert scenario(count_sessions(gap), rows, key=SESSION_KEYS, value=int) == [
        ("[a@0/0]", 1, 0),
        ("[b@0/0]", 1, 0),
        ("[c@0/0]", 1, 0),
        ("[d@0/0]", 1, 0),
        ("[d@0/0]", None, 0),
        ("[d@0/150000]", 2, 150000),
        ("[a@300001/300001]", 1, 300001),  # gap + 1 after a's last record: a new session
        ("[b@300001/300001]", 1, 300001),
        ("[a@300001/300001]", None, 300001),
        ("[a@300001/450001]", 2, 450001),
        ("[c@450001/450001]", 1, 450001),
    ]


def test_final_results_of_sessions() -> None:
    """With emit on window close, a session is emitted once stream time passed its end + gap + grace,
    and merged-away sessions never are."""
    rows = [*INPUT, ("k2", "v1", 41)]
    assert scenario(count_sessions(5, final=True), rows, key=SESSION_KEYS, value=int) == [
        ("[k1@0/5]", 3, 5),  # at stream time 11
        ("[k2@11/11]", 1, 11),  # at 30
        ("[k1@30/30]", 1, 30),  # at 41
    ]


def test_session_aggregate_with_merge_and_reduce() -> None:
    def build(b: StreamsBuilder) -> None:
        grouped = b.stream("in", key=str, value=str).group_by_key()
        windowed = grouped.windowed_by(SessionWindows.of_inactivity_gap_with_no_grace(5))
        (
            windowed.aggregate(
                initial=list,
                add=lambda k, v, agg: [*agg, v],
                merge=lambda k, a, b: a + b,
                store="pages",
                value="json",
                cache=False,
            )
            .to_stream()
            .to("pages", value="json")
        )
        windowed.reduce(lambda a, v: a + v, store="joined", cache=False).to_stream().to("joined", value=str)

    b = StreamsBuilder()
    build(b)
    with TopologyTestDriver(b.build()) as d:
        pipe(d, "in", [("u", "home", 0), ("u", "cart", 10), ("u", "pay", 6)])
        assert read_rows(d, "pages", SESSION_KEYS, "json") == [
            ("[u@0/0]", ["home"], 0),
            ("[u@10/10]", ["cart"], 10),
            ("[u@10/10]", None, 10),
            ("[u@6/10]", ["cart", "pay"], 10),  # 6 - 0 > gap: joins only [10, 10]
        ]
        assert read_rows(d, "joined", SESSION_KEYS, str)[-1] == ("[u@6/10]", "cartpay", 10)


def test_session_retention_must_cover_gap_plus_grace() -> None:
    assert (
        "no smaller than the session inactivity gap plus the grace period: got retention=10 ms, needs at least 15 ms"
        in refused_retention(SessionWindows.of_inactivity_gap_and_grace(10, 5), retention=10)
    )
    with pytest.raises(ValueError, match="session inactivity gap must be larger than zero"):
        SessionWindows.of_inactivity_gap_with_no_grace(0)
