"""The processor API: hand-built topologies, state store access, forward(to=), stream-time and
wall-clock punctuators, with the test driver's simulated clock."""

from __future__ import annotations

from typing import Any

import pytest

from streams import (
    InvalidStateStoreError,
    ProcessingError,
    Processor,
    ProcessorContext,
    PunctuationType,
    StoreSpec,
    StreamsBuilder,
    Topology,
    TopologyError,
    TopologyTestDriver,
)


class DedupProcessor(Processor):
    """Forwards a key the first time it is seen; remembers keys in a store."""

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self.seen = context.get_state_store("seen")

    def process(self, key: Any, value: Any) -> None:
        if self.seen.get(key) is None:
            self.seen.put(key, value)
            self.context.forward(key, value)


def test_hand_built_topology_with_store() -> None:
    t = Topology()
    t.add_source("src", "in", key=str, value=str)
    t.add_processor("dedup", DedupProcessor, "src")
    t.add_state_store(StoreSpec("seen", key=str, value=str), "dedup")
    t.add_sink("sink", "out", "dedup", key=str, value=str)
    assert "Processor: dedup (stores: [seen])" in t.describe()
    with TopologyTestDriver(t) as d:
        d.input_topic("in", key=str, value=str).pipe_key_values([("a", "1"), ("a", "2"), ("b", "3")])
        assert d.output_topic("out", key=str, value=str).read_key_values() == [("a", "1"), ("b", "3")]
        assert d.get_key_value_store("seen").get("a") == "1"


def test_store_not_connected_to_processor_is_refused() -> None:
    t = Topology()
    t.add_source("src", "in")
    t.add_processor("p", DedupProcessor, "src")
    t.add_processor("other", DedupProcessor, "src")
    t.add_state_store(StoreSpec("seen"), "other")
    with pytest.raises(InvalidStateStoreError, match="processor 'p' is not connected to store 'seen'"):
        TopologyTestDriver(t)


def test_forward_to_a_named_child() -> None:
    class Router(Processor):
        def process(self, key: Any, value: Any) -> None:
            self.context.forward(key, value, to="big" if value > 10 else "small")

    t = Topology()
    t.add_source("src", "in", key=str, value=int)
    t.add_processor("router", Router, "src")
    t.add_sink("big", "big-out", "router", key=str, value=int)
    t.add_sink("small", "small-out", "router", key=str, value=int)
    with TopologyTestDriver(t) as d:
        d.input_topic("in", key=str, value=int).pipe_key_values([("a", 5), ("b", 50)])
        assert d.output_topic("big-out", key=str, value=int).read_values() == [50]
        assert d.output_topic("small-out", key=str, value=int).read_values() == [5]


def test_forward_to_unknown_child_names_the_children() -> None:
    class Bad(Processor):
        def process(self, key: Any, value: Any) -> None:
            self.context.forward(key, value, to="nope")

    t = Topology().add_source("src", "in").add_processor("bad", Bad, "src").add_sink("s", "out", "bad")
    with TopologyTestDriver(t) as d, pytest.raises(TopologyError, match=r"cannot forward to 'nope'.*\['s'\]"):
        d.input_topic("in").pipe_input("k", "v")


class SumEveryTenSeconds(Processor):
    """Sums values per key; a stream-time punctuator emits and clears the sums every 10 s of event time."""

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self.sums = context.get_state_store("sums")
        self.fired: list[int] = []
        context.schedule(10_000, PunctuationType.STREAM_TIME, self.emit)

    def process(self, key: Any, value: Any) -> None:
        self.sums.put(key, (self.sums.get(key) or 0) + value)

    def emit(self, now: int) -> None:
        self.fired.append(now)
        for key, total in list(self.sums.all()):
            self.context.forward(key, total)
            self.sums.delete(key)


def test_stream_time_punctuation_fires_as_event_time_advances() -> None:
    procs: list[SumEveryTenSeconds] = []

    def supplier() -> SumEveryTenSeconds:
        procs.append(SumEveryTenSeconds())
        return procs[-1]

    b = StreamsBuilder()
    b.add_state_store(StoreSpec("sums", key=str, value=int))
    b.stream("in", key=str, value=int).process(supplier, stores=["sums"], key=str, value=int).to("out")
    with TopologyTestDriver(b.build()) as d:
        topic = d.input_topic("in", key=str, value=int)
        out = d.output_topic("out", key=str, value=int)
        # The first record starts stream time; the punctuator fires after it is processed, then every 10 s.
        topic.pipe_input("a", 1, timestamp=1_000)
        assert out.read_key_values() == [("a", 1)]
        topic.pipe_input("a", 2, timestamp=5_000)
        topic.pipe_input("b", 3, timestamp=9_999)
        assert out.is_empty()
        topic.pipe_input("a", 4, timestamp=11_000)  # reaches 1_000 + 10_000
        assert out.read_key_values() == [("a", 6), ("b", 3)]
        topic.pipe_input("a", 5, timestamp=3_000)  # out of order: stream time stays at 11_000
        assert out.is_empty()
        assert procs[0].fired == [1_000, 11_000]
        # Wall-clock time does not drive a stream-time punctuator.
        d.advance_wall_clock(60_000)
        assert out.is_empty()


def test_wall_clock_punctuation_uses_the_simulated_clock() -> None:
    ticks: list[int] = []

    class Ticker(Processor):
        def init(self, context: ProcessorContext) -> None:
            super().init(context)
            self.cancel = context.schedule(1_000, PunctuationType.WALL_CLOCK_TIME, self.tick)

        def tick(self, now: int) -> None:
            ticks.append(now)
            self.context.forward("tick", now)
            if len(ticks) == 3:
                self.cancel.cancel()

        def process(self, key: Any, value: Any) -> None:
            pass

    t = (
        Topology()
        .add_source("src", "in")
        .add_processor("ticker", Ticker, "src")
        .add_sink("s", "out", "ticker", value=int)
    )
    with TopologyTestDriver(t, wall_clock_ms=5_000) as d:
        d.advance_wall_clock(999)
        assert ticks == []
        d.advance_wall_clock(1)
        assert ticks == [6_000]
        d.advance_wall_clock(2_500)  # one call fires once, then catches up on the grid
        assert ticks == [6_000, 8_500]
        d.advance_wall_clock(500)
        assert ticks == [6_000, 8_500, 9_000]
        d.advance_wall_clock(10_000)  # cancelled
        assert ticks == [6_000, 8_500, 9_000]
        assert d.output_topic("out", value=int).read_values() == [6_000, 8_500, 9_000]


def test_punctuation_interval_must_be_positive() -> None:
    class Bad(Processor):
        def init(self, context: ProcessorContext) -> None:
            context.schedule(0, PunctuationType.WALL_CLOCK_TIME, lambda now: None)

    t = Topology().add_source("src", "in").add_processor("bad", Bad, "src")
    with pytest.raises(ProcessingError, match="interval must be an integer >= 1 ms"):
        TopologyTestDriver(t)


def test_unknown_store_in_driver_is_a_clear_error() -> None:
    b = StreamsBuilder()
    b.stream("in").group_by_key().count(store="c")
    with TopologyTestDriver(b.build()) as d, pytest.raises(Exception, match=r"no store named 'x'; stores: \['c'\]"):
        d.get_key_value_store("x")


def test_processor_reading_another_processors_store_is_refused() -> None:
    class Reader(Processor):
        def init(self, context: ProcessorContext) -> None:
            super().init(context)
            context.get_state_store("c")

        def process(self, key: Any, value: Any) -> None:
            pass

    b = StreamsBuilder()
    s = b.stream("in")
    s.group_by_key().count(store="c")
    s.process(Reader)
    with pytest.raises(InvalidStateStoreError, match="is not connected to store 'c'"):
        TopologyTestDriver(b.build())
