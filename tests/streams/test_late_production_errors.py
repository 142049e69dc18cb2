"""The production exception handler for failures the log reports late: a delivery that fails after the send
(the record is above the output topic's ``max.message.bytes``), so the task's transaction cannot commit.

"fail" stops the app once (no task-loss loop); "continue" drops exactly that output: the task rolls back to
its last commit (stores restored from the committed changelog) and replays without it. The SQLite log checks
``max.message.bytes`` when it writes, at commit, as a broker does; the test broker (tansu) does not enforce
it, so the Kafka runs skip there and run against a real Kafka (SCHEMAKIT_TEST_KAFKA)."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from streams import ProductionError, StreamsBuilder, StreamsError
from streams.app import StreamsApp
from streams.log import Log, Record, RecordTooLargeError, TopicPartition
from streams.task_manager import MAX_FUTILE_REPLAYS
from streams.topology import Topology
from tests.support.broker import KafkaCaps
from tests.support.topics import produce, read_all

LIMIT = 1000  # the output topic's max.message.bytes
FIRST = [("k1", "a")]
REST = [("k2", "big"), ("k1", "b"), ("k3", "c")]  # "big" maps to an output above LIMIT
EXPECTED_OUT = [("k1", "A"), ("k1", "B"), ("k3", "C")]  # the reference minus the dropped output
EXPECTED_COUNTS = {"k1": 2, "k2": 1, "k3": 1}  # the input is counted: only its output is dropped


def shout(value: str) -> str:
    return "x" * (2 * LIMIT) if value == "big" else value.upper()


def topology(src: str, out: str) -> Topology:
    b = StreamsBuilder()
    s = b.stream(src, key=str, value=str)
    s.map_values(shout).to(out, key=str, value=str)
    s.group_by_key().count(store="counts")
    return b.build()


@pytest.fixture
def late_log(log_url: str, request: pytest.FixtureRequest) -> Log:
    if not log_url.startswith("sqlite"):
        caps: KafkaCaps = request.getfixturevalue("kafka_caps")
        caps.require("max_message_bytes")
    lg: Log = request.getfixturevalue("log")
    return lg


class Recording:
    """A production exception handler that keeps every (refused record, error) it is asked about and answers
    ``drop`` (True: leave that output out and go on; False: fail)."""

    def __init__(self, drop: bool) -> None:
        self.calls: list[tuple[Record | None, Exception]] = []
        self.drop = drop

    def __call__(self, record: Record | None, error: Exception) -> bool:
        self.calls.append((record, error))
        return self.drop


def make_app(
    log: Log,
    log_url: str,
    names: Callable[[str], str],
    tmp_path: Path,
    build: Callable[[str, str], Topology] = topology,
    **options: Any,
) -> tuple[StreamsApp, str, str]:
    """``build(src, out)``'s app on a one-partition input and an output that refuses records above LIMIT."""
    src, out = names("in"), names("out")
    log.create_topic(src, 1)
    log.create_topic(out, 1, config={"max.message.bytes": str(LIMIT)})
    app = StreamsApp(
        build(src, out), names("app"), log_url, state_dir=tmp_path / "state", commit_interval_ms=100, **options
    )
    return app, src, out


def outputs(log: Log, topic: str) -> list[tuple[str, str]]:
    return [(r.key.decode(), r.value.decode()) for r in read_all(log, topic, quiet=0.5) if r.key and r.value]


def committed(app: StreamsApp, log: Log, src: str) -> int | None:
    tp = TopicPartition(src, 0)
    return log.committed(app.application_id, [tp])[tp]


def run_past_the_failure(app: StreamsApp, log: Log, src: str) -> None:
    """A first record committed, then the rest, so the failing transaction rolls back to a real commit."""
    produce(log, src, FIRST, value=str.encode)
    assert app.wait_until(lambda a: committed(a, log, src) == 1, 60)
    produce(log, src, REST, value=str.encode)
    assert app.wait_until(lambda a: committed(a, log, src) == 4, 60)
    assert app.wait_until(lambda a: dict(a.store("counts").all()) == EXPECTED_COUNTS, 60)


def test_fail_stops_the_app_once_naming_the_output_and_the_log_error(
    late_log: Log, log_url: str, names: Callable[[str], str], tmp_path: Path
) -> None:
    fail = Recording(drop=False)
    app, src, out = make_app(late_log, log_url, names, tmp_path, production_exception_handler=fail)
    produce(late_log, src, FIRST + REST, value=str.encode)
    expected = (
        rf"task 0_0: cannot send to topic '{out}' partition 0 the output of the records at {src}\[0\] "
        rf"from offset [01]: RecordTooLargeError: .*max.message.bytes"
    )
    with pytest.raises(ProductionError, match=expected) as info:
        app.run()
    assert app.state == "ERROR"
    error = info.value
    assert (error.task_id, error.sink_topic, error.sink_partition) == ("0_0", out, 0)
    assert len(fail.calls) == 1 and app.lost_tasks == 0  # stopped at once: no lose-reassign-fail loop
    assert committed(app, late_log, src) in (None, 1)  # nothing past the failure is committed as consumed
    assert ("k1", "B") not in outputs(late_log, out)


def test_fail_is_the_default(late_log: Log, log_url: str, names: Callable[[str], str], tmp_path: Path) -> None:
    app, src, _ = make_app(late_log, log_url, names, tmp_path)
    produce(late_log, src, FIRST + REST, value=str.encode)
    with pytest.raises(ProductionError, match=r"above the topic's max.message.bytes of 1000|MSG_SIZE_TOO_LARGE"):
        app.run()
    assert app.state == "ERROR" and app.lost_tasks == 0


@pytest.mark.parametrize("guarantee", ["exactly_once_v2", "at_least_once"])
def test_continue_drops_exactly_the_refused_output(
    late_log: Log, log_url: str, names: Callable[[str], str], tmp_path: Path, guarantee: str
) -> None:
    app, src, out = make_app(
        late_log, log_url, names, tmp_path, production_exception_handler="continue", processing_guarantee=guarantee
    )
    with app:
        run_past_the_failure(app, late_log, src)
        assert app.metrics()["task_states"]["0_0"]["dropped_reasons"] == {"production_error": 1}
        assert app.lost_tasks == 0  # rolled back in place, not lost to the group
    got = outputs(late_log, out)
    if guarantee == "exactly_once_v2":
        assert got == EXPECTED_OUT  # read committed: the reference minus the dropped record, exactly
    else:
        # At-least-once: outputs written before the failed transaction may appear twice (replayed), in order.
        assert list(dict.fromkeys(got)) == EXPECTED_OUT
        assert got[0] == ("k1", "A") and got.count(("k1", "A")) == 1  # committed before: never redone


def test_callable_handler_sees_the_refused_output_and_the_log_error(
    late_log: Log, log_url: str, names: Callable[[str], str], tmp_path: Path
) -> None:
    handler = Recording(drop=True)
    app, src, out = make_app(
        late_log, log_url, names, tmp_path, production_exception_handler=handler, processing_guarantee="exactly_once_v2"
    )
    with app:
        run_past_the_failure(app, late_log, src)
    [(record, error)] = handler.calls
    assert record is not None
    assert (record.topic, record.partition, record.key, record.value) == (out, 0, b"k2", b"x" * (2 * LIMIT))
    assert isinstance(error, ProductionError) and isinstance(error.__cause__, RecordTooLargeError)
    assert str(error).startswith(
        f"task 0_0: cannot send to topic '{out}' partition 0 the output of the records at "
        f"{src}[0] from offset 1: RecordTooLargeError: "
    )
    assert outputs(late_log, out) == EXPECTED_OUT


def test_identical_refused_outputs_are_each_dropped_once(
    late_log: Log, log_url: str, names: Callable[[str], str], tmp_path: Path
) -> None:
    """Two equal outputs (same key and value) refused: each occurrence is asked about and dropped once."""
    handler = Recording(drop=True)
    app, src, out = make_app(
        late_log, log_url, names, tmp_path, processing_guarantee="exactly_once_v2", production_exception_handler=handler
    )
    with app:
        produce(late_log, src, [("k2", "big"), ("k1", "a"), ("k2", "big"), ("k3", "c")], value=str.encode)
        assert app.wait_until(lambda a: committed(a, late_log, src) == 4, 60)
        assert app.metrics()["task_states"]["0_0"]["dropped_reasons"] == {"production_error": 2}
        assert dict(app.store("counts").all()) == {"k1": 1, "k2": 2, "k3": 1}
    assert len(handler.calls) == 2 and all(r is not None and r.key == b"k2" for r, _ in handler.calls)
    assert outputs(late_log, out) == [("k1", "A"), ("k3", "C")]


def test_a_replay_that_does_not_reproduce_the_dropped_output_stops_the_app(
    late_log: Log, log_url: str, names: Callable[[str], str], tmp_path: Path
) -> None:
    """A refused output that differs on every replay (built from a counter) can never be left out: after
    MAX_FUTILE_REPLAYS replays that met none of the dropped outputs the app stops instead of looping."""
    replays = itertools.count()

    def counter_built(src: str, out: str) -> Topology:
        b = StreamsBuilder()
        b.stream(src, key=str, value=str).map_values(lambda v: f"{next(replays)}:" + "x" * (2 * LIMIT)).to(out)
        return b.build()

    app, src, out = make_app(late_log, log_url, names, tmp_path, counter_built, production_exception_handler="continue")
    produce(late_log, src, [("k1", "a")], value=str.encode)
    with pytest.raises(
        StreamsError,
        match=rf"task 0_0: {MAX_FUTILE_REPLAYS} replays in a row .* topic '{out}'.*"
        r"does not reproduce its outputs on replay",
    ):
        app.run()
    assert app.state == "ERROR"
    assert next(replays) == MAX_FUTILE_REPLAYS + 1  # the first run and the futile replays, then no more
