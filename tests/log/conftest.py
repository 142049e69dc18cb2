"""Fixtures of the log tests.

The contract: every test taking ``log`` runs once per backend in ``BACKENDS``. To add a backend, add an entry to
``BACKENDS``: a factory ``(request, tmp_path) -> Log`` that may pull session fixtures with
``request.getfixturevalue``, the capabilities it lacks, and pytest marks. Tests that need a capability call
``log_caps.require("name")`` and are skipped where it is missing.

The backend-specific tests (``test_sqlite_*.py``, ``test_kafka_*.py``) take the backend's own log: ``slog`` (a
``SqliteLog`` in a directory of its own, at ``sqlite_url``) or ``kafka_log`` (a ``KafkaLog`` on the session's
test broker).
"""

from __future__ import annotations

import importlib.util
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from streams.log import Log, open_log
from streams.log.sqlite import SqliteLog
from tests.log.helpers import LogCaps

if TYPE_CHECKING:
    from streams.log.kafka import KafkaLog


@dataclass(frozen=True)
class Backend:
    make: Callable[[pytest.FixtureRequest, Path], Log]
    caps: Callable[[pytest.FixtureRequest], LogCaps]
    marks: tuple[pytest.MarkDecorator, ...] = field(default=())


def _sqlite(request: pytest.FixtureRequest, tmp_path: Path) -> Log:
    return open_log(f"sqlite:///{tmp_path}/log")


def _sqlite_memory(request: pytest.FixtureRequest, tmp_path: Path) -> Log:
    return open_log(f"sqlite:///:memory:{tmp_path.name}-{uuid.uuid4().hex}")


def _kafka(request: pytest.FixtureRequest, tmp_path: Path) -> Log:
    return open_log(request.getfixturevalue("kafka_log_url"))


def _kafka_caps(request: pytest.FixtureRequest) -> LogCaps:
    from tests.support.broker import TANSU_MISSING

    caps = request.getfixturevalue("kafka_caps")
    return LogCaps("kafka", lambda cap: None if caps.has(cap) else TANSU_MISSING[cap])


BACKENDS: dict[str, Backend] = {
    "sqlite": Backend(_sqlite, lambda request: LogCaps("sqlite", lambda cap: None)),
    "sqlite-memory": Backend(_sqlite_memory, lambda request: LogCaps("sqlite", lambda cap: None)),
}

# The Kafka backend joins the contract as soon as it exists; run SQLite only with `-m "not kafka"`.
# Its fixtures (kafka_log_url, kafka_caps) come from tests/conftest.py (on tests/support/broker.py),
# so the whole session shares one broker.
if importlib.util.find_spec("streams.log.kafka") is not None:
    BACKENDS["kafka"] = Backend(_kafka, _kafka_caps, (pytest.mark.kafka,))


@pytest.fixture(params=[pytest.param(name, marks=b.marks, id=name) for name, b in BACKENDS.items()])
def backend(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def log(backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Log]:
    opened = BACKENDS[backend].make(request, tmp_path)
    try:
        yield opened
    finally:
        opened.close()


@pytest.fixture
def log_caps(backend: str, request: pytest.FixtureRequest) -> LogCaps:
    return BACKENDS[backend].caps(request)


@pytest.fixture
def unique() -> Callable[[str], str]:
    """Unique topic, group and transactional-id names, so tests can share one broker."""
    return lambda prefix="t": f"{prefix}-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path}/log"


@pytest.fixture
def slog(sqlite_url: str) -> Iterator[SqliteLog]:
    log = open_log(sqlite_url)
    assert isinstance(log, SqliteLog)
    yield log
    log.close()


@pytest.fixture
def kafka_log(kafka_log_url: str) -> Iterator[KafkaLog]:
    from streams.log.kafka import KafkaLog  # imported where used, as BACKENDS does

    log = KafkaLog(kafka_log_url)
    try:
        yield log
    finally:
        log.close()
