"""The pytest plugin installed with schemakit: fixtures giving a real registry without a server.

``schema_registry`` is a ``RegistryClient("mock://")``: the registry service itself runs in-process on a private
log (``registry.embedded``), with the compatibility rules and error codes of the server; each test gets a fresh
one, closed (thread stopped, log removed) after the test. ``schema_registry_url`` is the URL to give to code that
builds its own client (``mock://<name>``: every client naming it shares that registry during the test).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest


@pytest.fixture
def schema_registry_url() -> str:
    return f"mock://test-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def schema_registry(schema_registry_url: str) -> Iterator[object]:
    from serdes import RegistryClient

    with RegistryClient(schema_registry_url) as client:
        yield client
