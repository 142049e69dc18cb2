"""Fixtures for the serdes tests: a client on the shared registry, scripted HTTP servers, unique names, compiled
test protos."""

from __future__ import annotations

import importlib
import ssl
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient

from serdes import MessageField, RegistryClient, SerializationContext
from tests.serdes.http_servers import ScriptedRegistry

PROTOS = {
    # An imported file (registered as a reference under its import path) ...
    "sktest/common/address.proto": """
syntax = "proto3";
package sktest.common;
message Address { string city = 1; int32 zip = 2; }
""",
    # ... and a file importing it and a well-known type, with a nested message and an enum.
    "sktest/shop/order.proto": """
syntax = "proto3";
package sktest.shop;
import "sktest/common/address.proto";
import "google/protobuf/timestamp.proto";
message Customer { string name = 1; }
message Order {
  enum Status { NEW = 0; PAID = 1; }
  message Line { string sku = 1; int32 qty = 2; }
  string id = 1;
  int64 qty = 2;
  Status status = 3;
  repeated Line lines = 4;
  sktest.common.Address address = 5;
  google.protobuf.Timestamp created = 6;
  optional string note = 7;
}
""",
}


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
    """The test .proto files compiled with protoc (grpcio-tools) and imported once per session."""
    from grpc_tools import protoc

    root = tmp_path_factory.mktemp("protos")
    for name, text in PROTOS.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    include = str(Path(protoc.__file__).parent / "_proto")
    rc = protoc.main(["protoc", f"-I{root}", f"-I{include}", f"--python_out={root}", *(str(root / n) for n in PROTOS)])
    assert rc == 0, "protoc failed"
    for d in ("sktest", "sktest/common", "sktest/shop"):
        (root / d / "__init__.py").touch()
    sys.path.insert(0, str(root))
    try:
        address = importlib.import_module("sktest.common.address_pb2")
        order = importlib.import_module("sktest.shop.order_pb2")
    finally:
        sys.path.remove(str(root))
    return SimpleNamespace(address=address, order=order)
