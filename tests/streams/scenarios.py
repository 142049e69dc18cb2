"""Scenario tables for windowed operations: pipe (key, value, timestamp) rows through a topology in the
TopologyTestDriver and read its output as (key as Kafka Streams prints it, value, timestamp) rows, in order.

Kafka Streams prints a windowed key as ``[key@start/end]``; the expected tables in the window tests are
written that way so they can be compared line by line with Kafka Streams' own test expectations.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from streams import StreamsBuilder, Topology, TopologyError, TopologyTestDriver

Row = tuple[Any, Any, int]
Build = Callable[[StreamsBuilder], None]

#: Kafka Streams' input where windows expire by grace (``shouldLogAndMeterWhenSkippingExpiredWindowByGrace``, for
#: time and sliding windows alike): stream time jumps to 200, then records "0".."5" arrive at 100..105.
EXPIRED_BY_GRACE_INPUT: list[Row] = [("k", "100", 200), *(("k", str(n), 100 + n) for n in range(6))]

#: Kafka Streams' ``KTableAggregateTest.testCount``: rows of a table (key, colour), one changing colour...
COLOUR_ROWS: list[Row] = [
    ("A", "green", 10), ("B", "green", 9), ("A", "blue", 12), ("C", "yellow", 15), ("D", "green", 11)
]  # fmt: skip
#: ...and what counting them by colour sends downstream: a row changing colour leaves its old count first.
COLOUR_COUNTS: list[Row] = [
    ("green", 1, 10), ("green", 2, 10), ("green", 1, 12),
    ("blue", 1, 12), ("yellow", 1, 15), ("green", 2, 12),
]  # fmt: skip


def printed(key: Any) -> Any:
    return str(key) if hasattr(key, "window") else key


def read_rows(driver: TopologyTestDriver, topic: str, key: Any, value: Any) -> list[Row]:
    records = driver.output_topic(topic, key=key, value=value).read_records()
    return [(printed(r.key), r.value, r.timestamp) for r in records]


def pipe(driver: TopologyTestDriver, topic: str, rows: Iterable[Row], key: Any = str, value: Any = str) -> None:
    source = driver.input_topic(topic, key=key, value=value)
    for k, v, ts in rows:
        source.pipe_input(k, v, timestamp=ts)


@contextmanager
def piped(
    build: Build, rows: Iterable[Row], *, state_dir: Path | None = None, key: Any = str, value: Any = str
) -> Iterator[TopologyTestDriver]:
    """The driver of the topology ``build`` makes, once ``rows`` went into topic ``in``."""
    b = StreamsBuilder()
    build(b)
    with TopologyTestDriver(b.build(), state_dir=state_dir) as d:
        pipe(d, "in", rows, key, value)
        yield d


def scenario(
    build: Build,
    rows: Iterable[Row],
    *,
    out: str = "out",
    key: Any = None,
    value: Any = None,
    state_dir: Path | None = None,
    in_key: Any = str,
    in_value: Any = str,
) -> list[Row]:
    """Build, pipe ``rows`` into topic ``in``, and return what ``out`` received."""
    with piped(build, rows, state_dir=state_dir, key=in_key, value=in_value) as d:
        return read_rows(d, out, key, value)


def refused_retention(windows: Any, retention: int) -> str:
    """Why building a windowed count over ``windows`` that keeps its windows only ``retention`` ms is refused."""
    grouped = StreamsBuilder().stream("in", key=str, value=str).group_by_key()
    with pytest.raises(TopologyError) as refused:
        grouped.windowed_by(windows).count(store="c", retention=retention)
    return str(refused.value)


class StreamTableJoin:
    """Kafka's ``KStreamKTableJoinTest`` harness around a built stream-table join: int keys and string values on
    the stream and table topics, the joined records on ``out``."""

    def __init__(self, topology: Topology, stream_topic: str, table_topic: str) -> None:
        self.driver = TopologyTestDriver(topology)
        self.stream = self.driver.input_topic(stream_topic, key=int, value=str)
        self.table = self.driver.input_topic(table_topic, key=int, value=str)
        self.out = self.driver.output_topic("out", key=int, value=str)

    def push_stream(self, n: int, prefix: str) -> None:
        """Stream records ``prefix + k`` with key k at time k, for k in 0..n-1."""
        for k in range(n):
            self.stream.pipe_input(k, f"{prefix}{k}", timestamp=k)

    def results(self) -> list[Row]:
        """The joined records since the last call."""
        return [(r.key, r.value, r.timestamp) for r in self.out.read_records()]


def late_and_jumping_rows(seed: int) -> list[Row]:
    """400 records of 5 keys, time rising 2 a record, some up to 12 late (within and past grace), two jumps."""
    rng = random.Random(seed)
    rows: list[Row] = []
    for i in range(400):
        ts = 2 * i + (100 if i >= 150 else 0) + (300 if i >= 320 else 0)
        rows.append((f"k{rng.randrange(5)}", "v", max(0, ts - rng.choice((0, 0, 0, 0, 3, 5, 12)))))
    return rows
