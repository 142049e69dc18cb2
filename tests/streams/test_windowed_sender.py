"""Final results of a time-windowed count sent straight to the sink below (``windowed_sender``): a suppression's
due windows and an emit-final aggregation's closed windows go to a ``to_stream().to(...)`` sink by the window
store's key bytes and the window start, without a ``Windowed`` key or ``Change`` per result. What the sink writes
must be what forwarding writes: the same records (key and value bytes, timestamps, headers), in the same order,
after the same input record, late records and jumps of stream time included. The path is refused where the
bytes could differ (another inner key serde, a partitioner of the sink's own).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from streams import StreamsBuilder, Suppressed, TimeWindows, TopologyTestDriver, WindowedSerdes
from streams.app import StreamsApp
from streams.errors import ProductionError
from streams.log import Log
from streams.suppress import SuppressProcessor
from streams.window_ops import TimeWindowAggregateProcessor
from tests.streams.scenarios import late_and_jumping_rows
from tests.support.topics import ABOVE_RECORD_LIMITS, create_topics, read_to_end

WINDOWS = {
    "tumbling": TimeWindows.of_size_and_grace(10, 3),
    "hopping": TimeWindows.of_size_and_grace(10, 3).advance_by(4),
}
Output = list[tuple[int, tuple[Any, Any, int, Any]]]  # (input record, (key bytes, value bytes, timestamp, headers))


def finals(windows: TimeWindows, job: str, to_sink: Any) -> StreamsBuilder:
    """The count with final results (``job``: suppress or emit-final), handed as a stream to ``to_sink``."""
    b = StreamsBuilder()
    windowed = b.stream("in", key=str, value=str).group_by_key().windowed_by(windows)
    if job == "suppress":
        table = windowed.count(store="counts").suppress(Suppressed.until_window_closes())
    else:
        table = windowed.count(store="counts", emit_strategy="on_window_close")
    to_sink(table.to_stream())
    return b


def senders(driver: TopologyTestDriver, job: str) -> list[Any]:
    """The ``windowed_sender`` each task's final-results processor took (None: it forwards)."""
    kind = SuppressProcessor if job == "suppress" else TimeWindowAggregateProcessor
    return [p._sender for task in driver.tasks for p in task.processors.values() if isinstance(p, kind)]


def run(builder: StreamsBuilder, job: str, state_dir: Path | None) -> tuple[Output, list[Any]]:
    """Each input record piped alone, with headers of its own, and what followed it."""
    out: Output = []
    with TopologyTestDriver(builder.build(), state_dir=state_dir) as d:
        source = d.input_topic("in", key=str, value=str)
        finals_topic = d.output_topic("finals", key=bytes, value=bytes)
        for i, (key, value, ts) in enumerate(late_and_jumping_rows(47)):
            source.pipe_input(key, value, timestamp=ts, headers=[("h", b"%d" % i)])
            out += [(i, (r.key, r.value, r.timestamp, r.headers)) for r in finals_topic.read_records()]
        return out, senders(d, job)


@pytest.mark.parametrize("rocksdb", [False, True], ids=["memory", "rocksdb"])
@pytest.mark.parametrize("windows", list(WINDOWS), ids=list(WINDOWS))
@pytest.mark.parametrize("job", ["suppress", "emit-final"])
def test_final_results_sent_straight_to_the_sink_equal_the_forwarded_ones(
    job: str, windows: str, rocksdb: bool, tmp_path: Path
) -> None:
    """``to_stream().to()`` right below takes the sink's sender; a ``map_values`` in between (the identity)
    makes the results go through every processor. Both write the same bytes after the same input records."""
    straight, straight_senders = run(
        finals(WINDOWS[windows], job, lambda s: s.to("finals", value=int)),
        job,
        tmp_path / "straight" if rocksdb else None,
    )
    forwarded, forwarded_senders = run(
        finals(WINDOWS[windows], job, lambda s: s.map_values(lambda v: v).to("finals", value=int)),
        job,
        tmp_path / "forwarded" if rocksdb else None,
    )
    assert straight_senders and all(callable(sender) for sender in straight_senders)
    assert forwarded_senders and all(sender is None for sender in forwarded_senders)
    assert straight == forwarded
    assert len(straight) > 100
    # a suppression's results carry no headers; an emit-final aggregation's those of the record that closed them
    assert ({headers for _, (_, _, _, headers) in straight} == {()}) is (job == "suppress")
    assert len({key for _, (key, _, _, _) in straight}) == len(straight)  # one final result per window


@pytest.mark.parametrize("job", ["suppress", "emit-final"])
def test_a_sink_that_writes_other_key_bytes_is_not_sent_to_straight(job: str) -> None:
    """A sink whose windowed key serde has another inner serde (JSON text of the key, not its UTF-8 bytes as
    in the store), or which picks partitions itself, gets the results forwarded, and writes its own bytes."""
    windows = WINDOWS["hopping"]
    json_keys = WindowedSerdes.time_windowed("json", 10)
    by_json, json_senders = run(finals(windows, job, lambda s: s.to("finals", key=json_keys, value=int)), job, None)
    partitioned, partitioned_senders = run(
        finals(windows, job, lambda s: s.to("finals", value=int, partitioner=lambda k, v, n: 0)), job, None
    )
    straight, _ = run(finals(windows, job, lambda s: s.to("finals", value=int)), job, None)
    assert json_senders == [None] and partitioned_senders == [None]
    assert partitioned == straight
    assert [(i, (key[:-8], rest)) for i, (key, *rest) in by_json] == [
        (i, (b'"' + key[:-8] + b'"', rest)) for i, (key, *rest) in straight
    ]


@pytest.mark.parametrize("job", ["suppress", "emit-final"])
def test_final_results_batched_to_the_producer_land_as_forwarded_ones(
    job: str, log: Log, log_url: str, names: Callable[[str], str], tmp_path: Path
) -> None:
    """In an application the straight path hands each batch of final results to the task's producer in one call
    (``send_records``); the forwarded path sends them one by one. Both write the same records to the same
    partitions of a 3-partition topic (each key's partition by its bytes), in the same order, with the same
    timestamps and headers, on SQLite and on the Kafka-protocol test broker."""
    source, straight, forwarded, app_id = names("in"), names("straight"), names("forwarded"), names("finals")
    log.create_topic(source, 1)
    create_topics(log, 3, straight, forwarded)
    windows = TimeWindows.of_size_with_no_grace(10)
    b = StreamsBuilder()
    stream = b.stream(source, key=str, value=str)
    for store, to_sink in (
        ("straight", lambda s: s.to(straight, value=int)),
        ("forwarded", lambda s: s.map_values(lambda v: v).to(forwarded, value=int)),
    ):
        windowed = stream.group_by_key().windowed_by(windows)
        if job == "suppress":
            table = windowed.count(store=store).suppress(Suppressed.until_window_closes())
        else:
            table = windowed.count(store=store, emit_strategy="on_window_close")
        to_sink(table.to_stream())
    base = 1_700_000_000_000  # (a broker's retention deletes records from 1970 at once)
    rows = [(f"k{i % 20}", base + i) for i in range(200)] + [("tick", base + 10_000)]  # the tick closes every window
    with log.producer() as producer:
        for key, ts in rows:
            producer.send(source, b"v", key.encode(), timestamp=ts, headers=[("i", b"%d" % ts)])
        producer.flush()
    app = StreamsApp(b.build(), app_id, log_url, state_dir=tmp_path / "state", commit_interval_ms=100)
    with app:
        assert app.wait_until(lambda a: a.metrics()["processed"] >= len(rows), 60), app.metrics()
    landed = {
        topic: sorted((r.partition, r.offset, r.key, r.value, r.timestamp, r.headers) for r in read_to_end(log, topic))
        for topic in (straight, forwarded)
    }
    assert len(landed[straight]) == 200  # 20 windows of 10 keys each
    assert landed[straight] == landed[forwarded]
    assert len({partition for partition, *_ in landed[straight]}) == 3


@pytest.mark.parametrize("setting", ["fail", "continue"])
def test_a_final_result_the_log_refuses_goes_to_the_production_handler_and_the_rest_are_sent(
    setting: str, log: Log, log_url: str, names: Callable[[str], str], tmp_path: Path
) -> None:
    """The middle one of a batch of three final results is above the log's record size limit (refused at the send):
    "fail" stops the application naming it, with the one before it sent; "continue" drops it alone."""
    source, out, app_id = names("in"), names("out"), names("finals")
    create_topics(log, 1, source, out)
    b = StreamsBuilder()
    counts = b.stream(source, key=str, value=str).group_by_key().windowed_by(TimeWindows.of_size_with_no_grace(10))
    too_large_at_two = (lambda n: b"x" * ABOVE_RECORD_LIMITS if n == 2 else b"%d" % n, int)
    counts.count(store="counts", emit_strategy="on_window_close").to_stream().to(out, value=too_large_at_two)
    base = 1_700_000_000_000
    rows = [("k1", base), ("k2", base + 1), ("k2", base + 2), ("k3", base + 3), ("tick", base + 1000)]
    with log.producer() as producer:
        for key, ts in rows:
            producer.send(source, b"v", key.encode(), timestamp=ts)
        producer.flush()
    app = StreamsApp(
        b.build(),
        app_id,
        log_url,
        state_dir=tmp_path / "state",
        commit_interval_ms=100,
        production_exception_handler=setting,
    )
    if setting == "fail":
        with pytest.raises(ProductionError, match=rf"cannot send to topic '{out}' .*RecordTooLargeError"):
            app.run()
        expected = [b"k1"]
    else:
        with app:
            assert app.wait_until(lambda a: a.metrics()["processed"] >= len(rows), 60), app.metrics()
        expected = [b"k1", b"k3"]
    landed = [(r.key[:-8], r.value, r.timestamp) for r in read_to_end(log, out, quiet=0.5)]
    assert [key for key, _, _ in landed] == expected
    assert all(value == b"1" for _, value, _ in landed)
