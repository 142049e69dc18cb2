"""The processing and production exception handlers (KIP-1033 / KIP-1034): in the TopologyTestDriver, and
in the app on both logs (SQLite, and the Kafka-protocol test broker)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from streams import (
    ProcessingError,
    Processor,
    ProcessorContext,
    ProductionError,
    PunctuationType,
    StreamsBuilder,
    TopologyTestDriver,
)
from streams.app import StreamsApp
from streams.log import Log, Record, TopicPartition
from streams.topology import Topology
from tests.support.topics import ABOVE_RECORD_LIMITS, create_topics, produce, read_to_end


def shout(value: str) -> str:
    """Upper-cases; raises on ``"poison"``; makes ``"big"`` an output no log takes."""
    if value == "poison":
        raise ValueError("cannot shout poison")
    return "x" * ABOVE_RECORD_LIMITS if value == "big" else value.upper()


def shouting(src: str, out: str) -> Topology:
    b = StreamsBuilder()
    b.stream(src, key=str, value=str).map_values(shout).to(out, key=str, value=str)
    return b.build()


INPUT = [("k1", "a"), ("k2", "poison"), ("k3", "b")]


# -- the TopologyTestDriver ---------------------------------------------------------------------------------


def test_driver_poison_record_goes_to_dead_letter_topic_with_its_headers() -> None:
    with TopologyTestDriver(shouting("in", "out"), processing_exception_handler="dead_letter:dlq") as d:
        topic = d.input_topic("in", key=str, value=str)
        topic.pipe_input("k1", "a")
        topic.pipe_input("k2", "poison", timestamp=7, headers=[("trace", b"t-1")])
        topic.pipe_input("k3", "b")
        assert d.output_topic("out", key=str, value=str).read_key_values() == [("k1", "A"), ("k3", "B")]
        dlq = d.output_topic("dlq", key=bytes, value=bytes).read_records()
        assert len(dlq) == 1
        rec = dlq[0]
        assert (rec.key, rec.value, rec.timestamp) == (b"k2", b"poison", 7)
        assert rec.headers == (
            ("trace", b"t-1"),
            ("schemakit.dlq.topic", b"in"),
            ("schemakit.dlq.partition", b"0"),
            ("schemakit.dlq.offset", b"1"),
            (
                "schemakit.dlq.error",
                b"task 0_0: processing the record at in[0] offset 1 failed: ValueError: cannot shout poison",
            ),
            ("schemakit.dlq.exception", b"ValueError"),
        )
        assert d.tasks[0].dropped_reasons == {"processing_error": 1}


def test_driver_fail_names_topic_partition_offset() -> None:
    with TopologyTestDriver(shouting("in", "out")) as d:
        topic = d.input_topic("in", key=str, value=str)
        topic.pipe_input("k1", "a")
        with pytest.raises(ProcessingError, match=r"record at in\[0\] offset 1 failed: ValueError") as info:
            topic.pipe_input("k2", "poison")
        assert (info.value.topic, info.value.partition, info.value.offset) == ("in", 0, 1)
        assert isinstance(info.value.__cause__, ValueError)


def test_driver_log_and_continue_skips_and_counts() -> None:
    with TopologyTestDriver(shouting("in", "out"), processing_exception_handler="log_and_continue") as d:
        topic = d.input_topic("in", key=str, value=str)
        for k, v in [*INPUT, ("k4", "poison")]:
            topic.pipe_input(k, v)
        assert d.output_topic("out", key=str, value=str).read_values() == ["A", "B"]
        assert (d.tasks[0].dropped, d.tasks[0].dropped_reasons) == (2, {"processing_error": 2})


def test_driver_callable_handler_sees_the_input_record_and_decides() -> None:
    seen: list[tuple[Record, Exception]] = []

    def handler(record: Record, error: Exception) -> bool:
        seen.append((record, error))
        return record.key == b"k2"  # continue past k2, stop on any other

    with TopologyTestDriver(shouting("in", "out"), processing_exception_handler=handler) as d:
        topic = d.input_topic("in", key=str, value=str)
        for k, v in INPUT:
            topic.pipe_input(k, v)
        with pytest.raises(ProcessingError, match=r"offset 3"):
            topic.pipe_input("k9", "poison")
        assert d.output_topic("out", key=str, value=str).read_values() == ["A", "B"]
    assert [(r.topic, r.partition, r.offset, r.key, r.value) for r, _ in seen] == [
        ("in", 0, 1, b"k2", b"poison"),
        ("in", 0, 3, b"k9", b"poison"),
    ]
    assert all(isinstance(e, ProcessingError) and isinstance(e.__cause__, ValueError) for _, e in seen)


def test_driver_handler_that_raises_stops_with_the_record_named() -> None:
    def handler(record: Record, error: Exception) -> bool:
        raise KeyError("no route")

    driver = TopologyTestDriver(shouting("in", "out"), processing_exception_handler=handler)
    with driver, pytest.raises(ProcessingError, match=r"record at in\[0\] offset 0 failed: ValueError") as info:
        driver.input_topic("in", key=str, value=str).pipe_input("k2", "poison")
    assert info.value.__notes__ == ["then the processing error handler raised KeyError: 'no route'"]
    assert isinstance(info.value.__cause__, KeyError)


class TickingProcessor(Processor):
    """Forwards its input; its wall-clock punctuator fails on its first tick and emits ("tick", now) after."""

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self.ticks = 0
        context.schedule(1000, PunctuationType.WALL_CLOCK_TIME, self.tick)

    def process(self, key: Any, value: Any) -> None:
        self.context.forward(key, value)

    def tick(self, now: int) -> None:
        self.ticks += 1
        if self.ticks == 1:
            raise RuntimeError("first tick")
        self.context.forward("tick", str(now))


def ticking() -> Topology:
    t = Topology().add_source("src", "in", key=str, value=str).add_processor("p", TickingProcessor, "src")
    return t.add_sink("sink", "out", "p", key=str, value=str)


def test_driver_punctuation_error_goes_to_the_handler_without_a_record() -> None:
    seen: list[tuple[Record | None, Exception]] = []

    def handler(record: Record | None, error: Exception) -> bool:
        seen.append((record, error))
        return True

    with TopologyTestDriver(ticking(), processing_exception_handler=handler) as d:
        d.advance_wall_clock(1000)
        d.advance_wall_clock(1000)
        assert d.output_topic("out", key=str, value=str).read_key_values() == [("tick", "2000")]
        assert d.tasks[0].dropped_reasons == {"processing_error": 1}
    [(record, error)] = seen
    assert record is None
    assert str(error) == "task 0_0: wall_clock_time punctuation at 1000 failed: first tick"
    # A dead-letter queue has nothing to send for a punctuation: it logs and goes on.
    with TopologyTestDriver(ticking(), processing_exception_handler="dead_letter:dlq") as d:
        d.advance_wall_clock(2000)
        assert d.output_topic("dlq").read_records() == []
    with TopologyTestDriver(ticking()) as d, pytest.raises(ProcessingError, match="punctuation at 1000 failed"):
        d.advance_wall_clock(1000)


def test_bad_handler_specs_are_named(tmp_path: Path) -> None:
    topology = shouting("in", "out")
    url = f"sqlite:///{tmp_path / 'log'}"
    with pytest.raises(ValueError, match=r"processing_exception_handler must be 'fail', 'skip', 'dead_letter:"):
        StreamsApp(topology, "bad", url, state_dir=tmp_path, processing_exception_handler="ignore")
    # The record the log refused would be refused by a dead-letter topic too.
    with pytest.raises(ValueError, match=r"production_exception_handler must be 'fail', 'skip', an ErrorHandler"):
        StreamsApp(topology, "bad", url, state_dir=tmp_path, production_exception_handler="dead_letter:dlq")
    with pytest.raises(ValueError, match=r"DeadLetterQueue needs a topic name"):
        TopologyTestDriver(topology, processing_exception_handler="dead_letter:")


# -- the app, on both logs ----------------------------------------------------------------------------------


def start(
    log: Log, log_url: str, names: Callable[[str], str], tmp_path: Path, items: list[tuple[str, str]], **handlers: Any
) -> tuple[StreamsApp, str, str]:
    """Topics made and ``items`` produced to one input partition; returns the (unstarted) app, input, output."""
    src, out = names("in"), names("out")
    create_topics(log, 1, src, out)
    produce(log, src, items, value=str.encode)
    app = StreamsApp(
        shouting(src, out),
        names("app"),
        log_url,
        state_dir=tmp_path / "state",
        commit_interval_ms=100,
        default_store="memory",
        **handlers,
    )
    return app, src, out


def outputs(log: Log, topic: str) -> list[tuple[str, str]]:
    return [(r.key.decode(), r.value.decode()) for r in read_to_end(log, topic, quiet=0.5) if r.key and r.value]


def dropped(app: StreamsApp) -> dict[str, int]:
    return app.metrics()["task_states"].get("0_0", {}).get("dropped_reasons", {})


def test_poison_record_goes_to_dead_letter_topic_and_processing_continues(
    log: Log, log_url: str, names: Callable[[str], str], tmp_path: Path
) -> None:
    dlq = names("billing-dlq")
    log.create_topic(dlq, 1)
    app, src, out = start(log, log_url, names, tmp_path, INPUT, processing_exception_handler=f"dead_letter:{dlq}")
    with app:
        assert app.wait_until(lambda a: dropped(a) == {"processing_error": 1}, 60)
        produce(log, src, [("k4", "c")], value=str.encode)  # still processing after the poison record
        assert app.wait_until(lambda a: a.metrics()["task_states"]["0_0"]["processed"] == 4, 60)
    assert outputs(log, out) == [("k1", "A"), ("k3", "B"), ("k4", "C")]
    [rec] = read_to_end(log, dlq, quiet=0.5)
    assert (rec.key, rec.value) == (b"k2", b"poison")
    headers = dict(rec.headers)
    assert (headers["schemakit.dlq.topic"], headers["schemakit.dlq.partition"], headers["schemakit.dlq.offset"]) == (
        src.encode(),
        b"0",
        b"1",
    )
    assert headers["schemakit.dlq.exception"] == b"ValueError"
    assert headers["schemakit.dlq.error"].endswith(b"ValueError: cannot shout poison")


def test_processing_fail_stops_the_app_naming_the_record(
    log: Log, log_url: str, names: Callable[[str], str], tmp_path: Path
) -> None:
    app, src, out = start(log, log_url, names, tmp_path, INPUT, processing_exception_handler="fail")
    with pytest.raises(ProcessingError, match=rf"record at {src}\[0\] offset 1 failed: ValueError") as info:
        app.run()
    assert app.state == "ERROR"
    assert (info.value.topic, info.value.partition, info.value.offset) == (src, 0, 1)
    assert outputs(log, out) == [("k1", "A")]
    # Nothing is lost: the poison record is not committed as consumed, so a restart meets it again.
    assert log.committed(app.application_id, [TopicPartition(src, 0)])[TopicPartition(src, 0)] in (None, 1)


def test_log_and_continue_counts_dropped_records(
    log: Log, log_url: str, names: Callable[[str], str], tmp_path: Path
) -> None:
    app, _, out = start(log, log_url, names, tmp_path, INPUT, processing_exception_handler="skip")
    with app:
        assert app.wait_until(lambda a: a.metrics()["task_states"].get("0_0", {}).get("processed") == 3, 60)
        assert dropped(app) == {"processing_error": 1}
        assert app.metrics()["task_states"]["0_0"]["dropped"] == 1
        text = app.metrics_exposition()[0].decode()
        app_id, thread = app.application_id, f"{app.application_id}-StreamThread-0"
        for reason, n in (("deserialization_error", 0), ("processing_error", 1), ("production_error", 0)):
            labels = f'application_id="{app_id}",reason="{reason}",task="0_0",thread="{thread}"'
            assert f"schemakit_streams_task_records_dropped_total{{{labels}}} {n}.0" in text
    assert outputs(log, out) == [("k1", "A"), ("k3", "B")]


@pytest.mark.parametrize("setting", ["fail", "continue"])
def test_production_error_is_handled_per_setting(
    log: Log, log_url: str, names: Callable[[str], str], tmp_path: Path, setting: str
) -> None:
    items = [("k1", "a"), ("k2", "big"), ("k3", "b")]
    app, src, out = start(log, log_url, names, tmp_path, items, production_exception_handler=setting)
    if setting == "fail":
        with pytest.raises(
            ProductionError,
            match=rf"cannot send to topic '{out}' the output of the record at "
            rf"{src}\[0\] offset 1: RecordTooLargeError",
        ) as info:
            app.run()
        assert app.state == "ERROR"
        assert (info.value.sink_topic, info.value.topic, info.value.offset) == (out, src, 1)
        assert outputs(log, out) == [("k1", "A")]
        assert log.committed(app.application_id, [TopicPartition(src, 0)])[TopicPartition(src, 0)] in (None, 1)
        return
    with app:
        assert app.wait_until(lambda a: a.metrics()["task_states"].get("0_0", {}).get("processed") == 3, 60)
        assert dropped(app) == {"production_error": 1}
    assert outputs(log, out) == [("k1", "A"), ("k3", "B")]
