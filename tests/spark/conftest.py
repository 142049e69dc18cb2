"""Fixtures for the Spark tests: one local[2] session per test session (``tests/support/spark.py``), the shared
registry, unique subjects, compiled test protos (``tests/spark/protos.py``), and an ``engine`` parameter running
a test on both engines.

The whole directory skips with an install hint when pyspark or a JDK (java + javac) is missing.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest

from serdes import RegistryClient
from tests.spark.protos import PROTOS
from tests.support.protos import compile_modules
from tests.support.spark import missing_prerequisite, start_session

if missing_prerequisite() is not None:
    # The other modules import pyspark: leave them out; test_prerequisites.py reports the skip and its reason.
    collect_ignore_glob = [
        f"test_{name}.py"
        for name in (
            "avro",
            "column_decoder",
            "connect",
            "connect_jvm",
            "engines",
            "json",
            "protobuf",
            "types",
            "writer_and_record_types",
            "registry_auth",
            "log_source",
            "log_stream",
            "log_source_planning",
        )
    ]


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    session = start_session()
    yield session
    session.stop()


@pytest.fixture(params=["python", "jvm"])
def engine(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def client(registry_url: str) -> Iterator[RegistryClient]:
    with RegistryClient(registry_url) as c:
        yield c


@pytest.fixture
def subject() -> str:
    return f"spark-{uuid.uuid4().hex[:12]}-value"


@pytest.fixture(scope="session")
def protos(tmp_path_factory: pytest.TempPathFactory) -> SimpleNamespace:
    """The test .proto files compiled with protoc (grpcio-tools), imported once per session."""
    modules = compile_modules(tmp_path_factory.mktemp("spark-protos"), PROTOS)
    return SimpleNamespace(**{name[len("skspark/") : -len(".proto")]: module for name, module in modules.items()})
