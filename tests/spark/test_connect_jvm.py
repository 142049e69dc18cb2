"""The JVM engine on a Spark Connect server started with the jar on ``spark.jars`` and its plugin
(``spark.connect.extensions.expression.classes``): ``from_registry`` decodes there with the Catalyst expression,
``engine="auto"`` picks it without a word. One local Connect server for the module (``tests/support/spark_connect.py``).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import pytest

from serdes import AvroSerializer, RegistryClient
from serdes.spark import from_registry, jar_path
from serdes.spark.jvm_connect import PLUGIN_CLASS, PLUGINS_SETTING
from tests.spark.test_log_stream import ORDER_V1, ORDER_V2
from tests.support.spark_connect import connect_server, connect_session


@pytest.fixture(scope="module")
def connect_jvm() -> Iterator[Any]:
    with ExitStack() as stack:
        try:
            url = stack.enter_context(connect_server({"spark.jars": jar_path(), PLUGINS_SETTING: PLUGIN_CLASS}))
        except (RuntimeError, AssertionError) as exc:  # exited, or not listening in time; its stderr says more
            pytest.skip(f"a local Spark Connect server could not start here: {exc}")
        yield stack.enter_context(connect_session(url))


def test_jvm_engine_decodes_two_writer_versions_on_connect(
    connect_jvm: Any, registry_url: str, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    subject = f"connect-jvm-{uuid.uuid4().hex[:8]}-value"
    with RegistryClient(registry_url) as client:
        v1, v2 = AvroSerializer(client, ORDER_V1, subject=subject), AvroSerializer(client, ORDER_V2, subject=subject)
        frames = [
            (0, v1({"customer": "c0", "amount": 10})),
            (1, v2({"customer": "c1", "amount": 11, "channel": "shop"})),
            (2, b"\x00not a frame"),
            (3, None),
        ]
    df = connect_jvm.createDataFrame(frames, "n int, value binary")
    with caplog.at_level(logging.INFO, logger="serdes.spark"):
        auto = df.select("n", from_registry("value", registry_url, subject=subject).alias("o"))
    assert not [r for r in caplog.records if r.name.startswith("serdes.spark")]  # auto took the JVM engine quietly
    jvm = df.select("n", from_registry("value", registry_url, subject=subject, engine="jvm").alias("o"))

    expected = [(0, ("c0", 10, "web")), (1, ("c1", 11, "shop")), (2, None), (3, None)]  # v1 reads the default
    for decoded in (auto, jvm):
        rows = sorted(decoded.collect(), key=lambda r: r.n)
        assert [(r.n, None if r.o is None else tuple(r.o)) for r in rows] == expected

    # the server's plans: the Catalyst expression, where the Python engine has an Arrow UDF node
    python = df.select("n", from_registry("value", registry_url, subject=subject, engine="python").alias("o"))
    capsys.readouterr()
    for decoded in (jvm, python):
        decoded.explain(extended=True)
    jvm_plan, python_plan = capsys.readouterr().out.split("== Parsed Logical Plan ==")[1:]
    assert "from_registry(value" in jvm_plan and "ArrowEvalPython" not in jvm_plan
    assert "ArrowEvalPython" in python_plan
