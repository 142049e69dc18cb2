"""Fixtures for API tests: a confluent-kafka client and an httpx client on the shared server."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import httpx
import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient


@pytest.fixture
def sr(registry_url: str) -> SchemaRegistryClient:
    return SchemaRegistryClient({"url": registry_url})


@pytest.fixture
def http(registry_url: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=registry_url, timeout=30) as c:
        yield c


@pytest.fixture
def subject() -> str:
    return f"s-{uuid.uuid4().hex[:12]}"
