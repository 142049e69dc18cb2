"""Fixtures for the serdes tests: a client on the shared registry, scripted HTTP servers, unique names, compiled
test protos (``tests/serdes/protos.py``)."""

from __future__ import annotations

import ssl
import uuid
from collections.abc import Iterator
from types import SimpleNamespace

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient

from serdes import MessageField, RegistryClient, SerializationContext
from tests.serdes.http_servers import ScriptedRegistry
from tests.serdes.protos import PROTOS
from tests.support.protos import compile_modules


@pytest.fixture
def client(registry_url: str) -> Iterator[RegistryClient]:
    with RegistryClient(registry_url) as c:
        yield c


@pytest.fixture
def ck_client(registry_url: str) -> SchemaRegistryClient:
    """confluent-kafka's own client on the shared registry (the peer in interop tests)."""
    return SchemaRegistryClient({"url": registry_url})


@pytest.fixture
def scripted() -> Iterator:
    """A factory of ``ScriptedRegistry`` servers, all closed at teardown."""
    servers: list[ScriptedRegistry] = []

    def make(*script: tuple[int, object], tls: ssl.SSLContext | None = None) -> ScriptedRegistry:
        s = ScriptedRegistry(list(script), tls)
        servers.append(s)
        return s

    yield make
    for s in servers:
        s.close()


@pytest.fixture
def topic() -> str:
    return f"t-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def value_ctx(topic: str) -> SerializationContext:
    return SerializationContext(topic, MessageField.VALUE)


@pytest.fixture(scope="session")
def protos(tmp_path_factory: pytest.TempPathFactory) -> SimpleNamespace:
    """The test .proto files (``tests/serdes/protos.py``) compiled with protoc and imported once per session."""
    modules = compile_modules(tmp_path_factory.mktemp("protos"), PROTOS)
    return SimpleNamespace(address=modules["sktest/common/address.proto"], order=modules["sktest/shop/order.proto"])
