"""Scenario tables for windowed operations: pipe (key, value, timestamp) rows through a topology in the
TopologyTestDriver and read its output as (key as Kafka Streams prints it, value, timestamp) rows, in order.

Kafka Streams prints a windowed key as ``[key@start/end]``; the expected tables in the window tests are
written that way so they can be compared line by line with Kafka Streams' own test expectations.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from streams import StreamsBuilder, TopologyTestDriver

Row = tuple[Any, Any, int]


def printed(key: Any) -> Any:
    return str(key) if hasattr(key, "window") else key


def read_rows(driver: TopologyTestDriver, topic: str, key: Any, value: Any) -> list[Row]:
    records = driver.output_topic(topic, key=key, value=value).read_records()
    return [(printed(r.key), r.value, r.timestamp) for r in records]


def pipe(driver: TopologyTestDriver, topic: str, rows: Iterable[Row], key: Any = str, value: Any = str) -> None:
    source = driver.input_topic(topic, key=key, value=value)
    for k, v, ts in rows:
        source.pipe_input(k, v, timestamp=ts)


def scenario(
    build: Callable[[StreamsBuilder], None],
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
    b = StreamsBuilder()
    build(b)
    with TopologyTestDriver(b.build(), state_dir=state_dir) as d:
        pipe(d, "in", rows, in_key, in_value)
        return read_rows(d, out, key, value)
