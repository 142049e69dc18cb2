"""Fixtures for the streams tests: a log URL per backend, and helpers to produce and read topics."""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from streams.log import OFFSET_BEGINNING, Log, Record, TopicPartition, open_log


@pytest.fixture(params=["sqlite", pytest.param("kafka", marks=pytest.mark.kafka)])
def log_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'log'}"
    return request.getfixturevalue("kafka_log_url")


@pytest.fixture
def private_kafka_log_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A Kafka log URL on a broker of this test's own (the external Kafka when ``SCHEMAKIT_TEST_KAFKA`` is set).

    For the multi-process hand-over and kill -9 tests: late in a full run the session's shared tansu broker
    holds every earlier test's topics in memory, and these tests then timed out waiting for their results in
    two of three full runs while passing alone; a fresh broker makes them depend on nothing before them."""
    from urllib.parse import urlencode

    from tests.support.broker import ENV_EXTERNAL, TEST_CLIENT_OPTIONS, TansuBroker

    if os.environ.get(ENV_EXTERNAL):
        yield request.getfixturevalue("kafka_log_url")
        return
    broker = TansuBroker(tmp_path / "tansu.log")
    broker.start()
    try:
        yield f"kafka://{broker.bootstrap}?{urlencode(TEST_CLIENT_OPTIONS)}"
    finally:
        broker.stop()


@pytest.fixture
def kill_log_url(log_url: str, request: pytest.FixtureRequest) -> str:
    """A kill -9 test's log, or one that timed out late in a full run on the shared broker: on Kafka, a broker
    of its own (see ``private_kafka_log_url``)."""
    return log_url if log_url.startswith("sqlite") else request.getfixturevalue("private_kafka_log_url")


@pytest.fixture
def kill_log(kill_log_url: str) -> Iterator[Log]:
    lg = open_log(kill_log_url)
    yield lg
    lg.close()


@pytest.fixture
def names() -> Callable[[str], str]:
    """Unique topic / application names, so tests sharing one broker never meet."""
    suffix = uuid.uuid4().hex[:8]
    return lambda base: f"{base}-{suffix}"


@pytest.fixture
def log(log_url: str) -> Iterator[Log]:
    lg = open_log(log_url)
    yield lg
    lg.close()


def produce(
    lg: Log,
    topic: str,
    items: list[tuple[Any, Any]],
    key: Callable[[Any], bytes | None] = str.encode,
    value: Callable[[Any], bytes | None] = orjson.dumps,
) -> dict[Any, tuple[int, int]]:
    """Write (key, value) items; returns where each key landed: key -> (partition, offset)."""
    where: dict[Any, tuple[int, int]] = {}
    with lg.producer() as p:
        for k, v in items:

            def done(md: Any, err: Any, k: Any = k) -> None:
                if md is not None:
                    where[k] = (md.partition, md.offset)

            p.send(topic, value(v), key(k), on_delivery=done)
        p.flush()
    return where


def read_all(lg: Log, topic: str, quiet: float = 1.5, timeout: float = 60.0) -> list[Record]:
    """Every record of ``topic``: read from the beginning until nothing arrives for ``quiet`` seconds
    (end offsets are unreliable on the test broker)."""
    info = lg.describe_topic(topic)
    assert info is not None, f"topic {topic} does not exist"
    out: list[Record] = []
    with lg.consumer() as c:
        c.assign({TopicPartition(topic, p): OFFSET_BEGINNING for p in range(info.partitions)})
        deadline = time.monotonic() + timeout
        last = time.monotonic()
        while time.monotonic() - last < quiet and time.monotonic() < deadline:
            batch = c.poll(0.2, 10_000)
            if batch:
                out.extend(batch)
                last = time.monotonic()
    return out


def last_values(
    records: list[Record], key: Callable[[bytes], Any] = bytes.decode, value: Callable[[bytes], Any] = orjson.loads
) -> dict[Any, Any]:
    """The latest value per key, in offset order per partition (keys live in one partition)."""
    out: dict[Any, Any] = {}
    for r in sorted(records, key=lambda r: (r.partition, r.offset)):
        assert r.key is not None
        out[key(r.key)] = None if r.value is None else value(r.value)
    return out


def wait_for(predicate: Callable[[], bool], timeout: float = 60.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")
