"""``KTable.suppress`` as scenario tables, with Kafka Streams' expectations (``SuppressScenarioTest``):
until_time_limit rate-limits a table's updates per key; until_window_closes emits exactly one final
result per window once stream time reaches its close, never a merged-away session; buffer limits emit
early or stop the application.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from streams import (
    BufferConfig,
    SessionWindows,
    SlidingWindows,
    StreamsBuilder,
    StreamsError,
    Suppressed,
    TimeWindows,
    TopologyError,
    TopologyTestDriver,
    WindowedSerdes,
)
from streams.suppress import BufferConfig as NestedBufferConfig
from tests.streams.scenarios import Build, Row, late_and_jumping_rows, pipe, piped, read_rows

#: the table's updates (k1 -> v1, k1 -> v2, k2 -> v1) and the counts per value they make, unsuppressed
UPDATES: list[Row] = [("k1", "v1", 0), ("k1", "v2", 1), ("k2", "v1", 2)]
RAW_COUNTS = [("v1", 1, 0), ("v1", 0, 1), ("v2", 1, 1), ("v1", 1, 2)]


def value_counts(suppressed: Suppressed):  # type: ignore[no-untyped-def]
    """A table of k -> v re-grouped by v and counted; both the raw and the suppressed counts are written."""

    def build(b: StreamsBuilder) -> None:
        counts = (
            b.table("input", key=str, value=str, cache=False)
            .group_by(lambda k, v: (v, k), key=str, value=str)
            .count(store="counts", cache=False)
        )
        counts.suppress(suppressed).to_stream().to("output-suppressed", key=str, value=int)
        counts.to_stream().to("output-raw", key=str, value=int)

    return build


def run(build, rows: list[Row], topic: str = "input") -> TopologyTestDriver:  # type: ignore[no-untyped-def]
    b = StreamsBuilder()
    build(b)
    d = TopologyTestDriver(b.build())
    pipe(d, topic, rows)
    return d


def test_zero_time_limit_emits_every_update_at_once() -> None:
    with run(value_counts(Suppressed.until_time_limit(0)), UPDATES) as d:
        assert read_rows(d, "output-raw", str, int) == RAW_COUNTS
        assert read_rows(d, "output-suppressed", str, int) == RAW_COUNTS
        pipe(d, "input", [("x", "x", 3)])
        assert read_rows(d, "output-suppressed", str, int) == [("x", 1, 3)]
        pipe(d, "input", [("x", "y", 4)])
        assert read_rows(d, "output-suppressed", str, int) == [("x", 0, 4), ("y", 1, 4)]


def test_time_limit_emits_a_keys_latest_update_once_the_limit_passed() -> None:
    with run(value_counts(Suppressed.until_time_limit(2)), UPDATES) as d:
        assert read_rows(d, "output-raw", str, int) == RAW_COUNTS
        # v1 was first held back at 0: due at 2, with its latest count
        assert read_rows(d, "output-suppressed", str, int) == [("v1", 1, 2)]
        pipe(d, "input", [("tick", "tick", 3)])  # stream time 3: v2 (held back at 1) is due
        assert read_rows(d, "output-suppressed", str, int) == [("v2", 1, 1)]
        pipe(d, "input", [("tick", "tock", 4)])
        assert read_rows(d, "output-raw", str, int) == [("tick", 1, 3), ("tick", 0, 4), ("tock", 1, 4)]
        # "tick" is still held back: first held at 3, due at 5
        assert read_rows(d, "output-suppressed", str, int) == []


@pytest.mark.parametrize(
    "limit",
    [
        pytest.param(BufferConfig.max_records(1), id="record-limit"),
        # One buffered count here takes 2-byte key + 8-byte due + 8-byte timestamp + 4-byte prior length
        # + 8-byte prior + 1 flag + 8-byte count: 39 bytes (a first update has no prior: 31).
        pytest.param(BufferConfig.max_bytes(60), id="byte-limit"),
    ],
)
def test_a_full_buffer_emits_the_oldest_early(limit: BufferConfig) -> None:
    suppressed = Suppressed.until_time_limit(2**62, limit.emit_early_when_full())
    with run(value_counts(suppressed), UPDATES) as d:
        # consecutive updates of v1 are merged; the update that overflows the buffer pushes out the oldest
        assert read_rows(d, "output-suppressed", str, int) == [("v1", 0, 1), ("v2", 1, 1)]
        pipe(d, "input", [("x", "x", 3)])
        assert read_rows(d, "output-suppressed", str, int) == [("v1", 1, 2)]


def test_a_full_buffer_that_shuts_down_stops_with_an_error() -> None:
    suppressed = Suppressed.until_time_limit(100, BufferConfig.max_records(1).shut_down_when_full())
    with pytest.raises(
        StreamsError,
        match=r"suppression buffer 'KTABLE-SUPPRESS-STATE-STORE-\d+' exceeded its "
        r"capacity: 2 of 1 records",
    ):
        run(value_counts(suppressed), [("k1", "v1", 0), ("k1", "v2", 1)])


def windowed_counts(windows):  # type: ignore[no-untyped-def]
    def build(b: StreamsBuilder) -> None:
        counts = (
            b.stream("input", key=str, value=str)
            .group_by(lambda k, v: k, key=str)
            .windowed_by(windows)
            .count(store="counts", cache=False)
        )
        counts.suppress(Suppressed.until_window_closes()).to_stream().to("output-suppressed", value=int)
        counts.to_stream().to("output-raw", value=int)

    return build


def final_results(windows, keys, rows: list[Row]) -> tuple[list[Row], list[Row]]:  # type: ignore[no-untyped-def]
    """Counts per key in ``windows`` over ``rows``: every update of a window's count, and the final results
    suppressed until it closes (windowed keys read with the serde ``keys``)."""
    with run(windowed_counts(windows), rows) as d:
        return read_rows(d, "output-raw", keys, int), read_rows(d, "output-suppressed", keys, int)


def k1_at(*timestamps: int) -> list[Row]:
    return [("k1", "v1", ts) for ts in timestamps]


def test_final_results_for_time_windows() -> None:
    """Size 2, grace 1: [0, 2) closes at stream time 3, [2, 4) at 5; the last record (0) is late."""
    raw, final = final_results(
        TimeWindows.of_size_and_grace(2, 1), WindowedSerdes.time_windowed(str, 2), k1_at(0, 1, 2, 1, 0, 5, 0)
    )
    assert raw == [
        ("[k1@0/2]", 1, 0),
        ("[k1@0/2]", 2, 1),
        ("[k1@2/4]", 1, 2),
        ("[k1@0/2]", 3, 1),
        ("[k1@0/2]", 4, 1),
        ("[k1@4/6]", 1, 5),
    ]
    assert final == [("[k1@0/2]", 4, 1), ("[k1@2/4]", 1, 2)]


def test_final_results_for_time_windows_with_a_large_jump() -> None:
    raw, final = final_results(
        TimeWindows.of_size_and_grace(2, 2), WindowedSerdes.time_windowed(str, 2), k1_at(0, 1, 2, 0, 3, 0, 4, 0, 30)
    )
    assert raw == [
        ("[k1@0/2]", 1, 0),
        ("[k1@0/2]", 2, 1),
        ("[k1@2/4]", 1, 2),
        ("[k1@0/2]", 3, 1),
        ("[k1@2/4]", 2, 3),
        ("[k1@0/2]", 4, 1),
        ("[k1@4/6]", 1, 4),
        ("[k1@30/32]", 1, 30),
    ]
    # The jump to 30 closes three windows at once: emitted in window order.
    assert final == [
        ("[k1@0/2]", 4, 1),
        ("[k1@2/4]", 2, 3),
        ("[k1@4/6]", 1, 4),
    ]


def test_final_results_for_sliding_windows() -> None:
    raw, final = final_results(
        SlidingWindows.of_time_difference_and_grace(5, 15),
        WindowedSerdes.time_windowed(str, 5),
        k1_at(10, 11, 10, 13, 10, 24, 5, 7, 90),
    )
    # Kafka Streams' expectation sorted by key and timestamp (SuppressScenarioTest).
    assert sorted(raw, key=lambda r: (r[0], r[2])) == [
        ("[k1@11/16]", 1, 11),
        ("[k1@11/16]", 2, 13),
        ("[k1@12/17]", 1, 13),
        ("[k1@19/24]", 1, 24),
        ("[k1@5/10]", 1, 10),
        ("[k1@5/10]", 2, 10),
        ("[k1@5/10]", 3, 10),
        ("[k1@5/10]", 4, 10),
        ("[k1@5/10]", 5, 10),
        ("[k1@6/11]", 2, 11),
        ("[k1@6/11]", 3, 11),
        ("[k1@6/11]", 4, 11),
        ("[k1@6/11]", 5, 11),
        ("[k1@8/13]", 4, 13),
        ("[k1@8/13]", 5, 13),
        ("[k1@85/90]", 1, 90),
    ]
    assert final == [
        ("[k1@5/10]", 5, 10),
        ("[k1@6/11]", 5, 11),
        ("[k1@8/13]", 5, 13),
        ("[k1@11/16]", 2, 13),
        ("[k1@12/17]", 1, 13),
        ("[k1@19/24]", 1, 24),
    ]


def test_final_results_for_session_windows_skip_merged_sessions() -> None:
    rows = [("k1", "v1", 0), ("k1", "v1", 5), ("k1", "v1", 1), ("k2", "v1", 11), ("k1", "v1", 5), ("k1", "v1", 30)]
    raw, final = final_results(
        SessionWindows.of_inactivity_gap_with_no_grace(5), WindowedSerdes.session_windowed(str), rows
    )
    assert raw == [
        ("[k1@0/0]", 1, 0),
        ("[k1@0/0]", None, 0),
        ("[k1@0/5]", 2, 5),
        ("[k1@0/5]", None, 5),
        ("[k1@0/5]", 3, 5),
        ("[k2@11/11]", 1, 11),
        ("[k1@30/30]", 1, 30),
    ]
    # A session closes at end + gap + grace: [k1@0/5] at 10 (emitted by 11), [k2@11/11] at 16.
    assert final == [("[k1@0/5]", 3, 5), ("[k2@11/11]", 1, 11)]


def test_suppression_before_group_by_sends_the_emitted_values_as_old_values() -> None:
    """SuppressScenarioTest.shouldWorkBeforeGroupBy: the re-grouping downstream subtracts what the
    suppression emitted before, not an update it held back."""

    def build(b: StreamsBuilder) -> None:
        (
            b.table("topic", key=str, value=str)
            .suppress(Suppressed.until_time_limit(10))
            .group_by(lambda k, v: (k, v), key=str, value=str)
            .count(store="c")
            .to_stream()
            .to("output", key=str, value=int)
        )

    with run(build, [("A", "a", 0), ("tick", "tick", 10)], topic="topic") as d:
        assert read_rows(d, "output", str, int) == [("A", 1, 0)]
        pipe(d, "topic", [("A", "b", 11), ("A", "c", 12), ("tick", "tock", 22)])
        # At 22 both are due, in the order they were first held back: "tick" (since 10) with its latest
        # update, then A (since 11): its latest value "c" replaces the emitted "a", so A's count stays 1.
        assert read_rows(d, "output", str, int) == [("tick", 1, 22), ("A", 1, 12)]


def test_until_window_closes_needs_a_windowed_table_and_a_strict_buffer() -> None:
    table = StreamsBuilder().table("t", key=str, value=str)
    with pytest.raises(TopologyError, match="needs a windowed table"):
        table.suppress(Suppressed.until_window_closes())
    with pytest.raises(TopologyError, match="needs a buffer that shuts down when full"):
        Suppressed.until_window_closes(BufferConfig.max_records(10))
    assert Suppressed.BufferConfig is NestedBufferConfig  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "windows",
    [TimeWindows.of_size_and_grace(10, 3), TimeWindows.of_size_and_grace(10, 3).advance_by(4)],
    ids=["tumbling", "hopping"],
)
@pytest.mark.parametrize("rocksdb", [False, True], ids=["memory", "rocksdb"])
def test_final_results_straight_from_the_window_store_equal_the_general_path(
    windows: TimeWindows, rocksdb: bool, tmp_path: Path
) -> None:
    """A cached windowed count whose only child is the suppression hands it each flushed window straight from
    its store (the buffer keyed by the store's key bytes); the same count with a second child forwards windowed
    keys and changes to both. The final results are the same, emitted after the same input record, late records
    and jumps of stream time included."""

    def build(direct: bool) -> Build:
        def topology(b: StreamsBuilder) -> None:
            counts = b.stream("in", key=str, value=str).group_by_key().windowed_by(windows).count(store="counts")
            counts.suppress(Suppressed.until_window_closes()).to_stream().to("finals", value=int)
            if not direct:
                counts.to_stream().to("raw", value=int)

        return topology

    finals = []
    for direct in (True, False):
        state_dir = tmp_path / str(direct) if rocksdb else None
        emitted: list[tuple[int, Row]] = []  # (input record, final result emitted after it)
        with piped(build(direct), [], state_dir=state_dir) as d:
            assert (d.get_window_store("counts").bytes_listener is not None) is direct
            for i, row in enumerate(late_and_jumping_rows(31)):
                pipe(d, "in", [row])
                emitted += [(i, final) for final in read_rows(d, "finals", WindowedSerdes.time_windowed(str, 10), int)]
        finals.append(emitted)
    straight, general = finals
    assert straight == general
    assert len(general) == len({final[0] for _, final in general}) > 100  # one final result per window
