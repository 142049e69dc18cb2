"""Fixtures for the Spark tests: one local[2] session per test session (with the JVM engine's jar), the shared
registry, unique subjects, compiled test protos, and an ``engine`` parameter running a test on both engines.

The whole directory skips with an install hint when pyspark or a JDK (java + javac) is missing.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import shutil
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from serdes import RegistryClient

JDK_HINT = "Spark tests need a JDK 17 (java and javac): apt-get install openjdk-17-jdk-headless"
SPARK_HINT = "Spark tests need the spark extra: pip install -e '.[spark]'"


def _missing() -> str | None:
    if shutil.which("java") is None or shutil.which("javac") is None:
        return JDK_HINT
    for module in ("pyspark", "pyarrow"):
        if importlib.util.find_spec(module) is None:
            return SPARK_HINT
    return None


MISSING = _missing()
if MISSING is not None:
    # The other modules import pyspark: leave them out; test_prerequisites.py reports the skip and its reason.
    collect_ignore_glob = [
        f"test_{name}.py"
        for name in (
            "avro",
            "column_decoder",
            "engines",
            "json",
            "protobuf",
            "types",
            "writer_and_record_types",
            "registry_auth",
        )
    ]


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    from serdes.spark import build_jar, spark_session

    build_jar.build()
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ["TZ"] = "UTC"  # pyspark turns timestamps into naive datetimes in the local zone
    time.tzset()
    session = spark_session(
        "local[2]",
        "schemakit-tests",
        conf={
            "spark.sql.shuffle.partitions": "2",
            "spark.driver.memory": "768m",
            "spark.ui.enabled": "false",
            "spark.ui.showConsoleProgress": "false",
            "spark.sql.session.timeZone": "UTC",
            "spark.python.worker.reuse": "true",
        },
    )
    session.sparkContext.setLogLevel("ERROR")
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


PROTOS = {
    "skspark/all_types.proto": """
syntax = "proto3";
package skspark;
import "google/protobuf/timestamp.proto";
message Item { string sku = 1; int32 qty = 2; }
message AllTypes {
  enum Color { RED = 0; GREEN = 1; BLUE = 2; }
  int32 i32 = 1;
  sint32 s32 = 2;
  sfixed32 sf32 = 3;
  int64 i64 = 4;
  sint64 s64 = 5;
  sfixed64 sf64 = 6;
  uint32 u32 = 7;
  fixed32 f32 = 8;
  uint64 u64 = 9;
  fixed64 f64 = 10;
  double d = 11;
  float f = 12;
  bool b = 13;
  string s = 14;
  bytes raw = 15;
  Color color = 16;
  Item item = 17;
  repeated Item items = 18;
  repeated int32 numbers = 19;
  repeated Color colors = 20;
  map<string, int64> counts = 21;
  map<string, Item> by_sku = 22;
  google.protobuf.Timestamp at = 23;
  optional string note = 24;
  oneof choice { string text = 25; int32 code = 26; }
}
""",
    "skspark/order_v1.proto": """
syntax = "proto3";
package skspark.v1;
message Order { string id = 1; int64 qty = 2; }
""",
    "skspark/order_v2.proto": """
syntax = "proto3";
package skspark.v2;
message Order { string id = 1; int64 qty = 2; string customer = 3; }
""",
    "skspark/order_v3.proto": """
syntax = "proto3";
package skspark.v3;
message Order { string id = 1; string customer = 3; repeated string tags = 4; }
""",
}


@pytest.fixture(scope="session")
def protos(tmp_path_factory: pytest.TempPathFactory) -> SimpleNamespace:
    """The test .proto files compiled with protoc (grpcio-tools), imported once per session."""
    from grpc_tools import protoc

    root = tmp_path_factory.mktemp("spark-protos")
    for name, text in PROTOS.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    include = str(Path(protoc.__file__).parent / "_proto")
    rc = protoc.main(["protoc", f"-I{root}", f"-I{include}", f"--python_out={root}", *(str(root / n) for n in PROTOS)])
    assert rc == 0, "protoc failed"
    (root / "skspark" / "__init__.py").touch()
    sys.path.insert(0, str(root))
    try:
        names = ("all_types", "order_v1", "order_v2", "order_v3")
        mods = {n: importlib.import_module(f"skspark.{n}_pb2") for n in names}
    finally:
        sys.path.remove(str(root))
    return SimpleNamespace(**mods)
