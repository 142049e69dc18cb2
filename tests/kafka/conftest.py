"""Fixtures for the Kafka backend's own tests: a KafkaLog on the session's test broker."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator

import pytest

from streams.log.kafka import KafkaLog


@pytest.fixture
def kafka_log(kafka_log_url: str) -> Iterator[KafkaLog]:
    log = KafkaLog(kafka_log_url)
    try:
        yield log
    finally:
        log.close()


@pytest.fixture
def unique() -> Callable[[str], str]:
    """Unique topic / group / transactional-id names, so tests share one broker without interfering."""
    return lambda prefix="t": f"{prefix}-{uuid.uuid4().hex[:12]}"
