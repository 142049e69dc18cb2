"""Fixtures for the streams tests: a log URL per backend, brokers of a test's own, unique names. Producing
and reading topics is in ``tests/support/topics.py``."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from streams.log import Log, open_log
from tests.support.broker import broker_log_url, running_broker


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
    with running_broker(tmp_path / "tansu.log") as bootstrap:
        yield broker_log_url(bootstrap)


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
