"""from_registry / to_registry and the ``schemakit`` data source on a Spark Connect session (Python engine; the
server has no JVM engine plugin: ``test_connect_jvm.py`` has one).

The server is a local ``local[2]`` Connect server in its own process (``tests/support/spark_connect.py``: pyspark
will not start one in a process that has the classic session of the other tests); the client here has no py4j
view of its JVM, as a remote user has none. One server and one session for the module.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer as CkAvroDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext

from serdes.spark import from_registry, register, to_registry
from streams.log import open_log
from tests.spark.test_log_stream import (
    ORDER_V1,
    orders,
    produce_orders,
    reference,
    sink_table,
)
from tests.support.spark_connect import connect_server, connect_session


@pytest.fixture(scope="module")
def connect() -> Iterator[Any]:
    """A Connect client session with the data source registered (``register``, as a Connect user calls it)."""
    with ExitStack() as stack:
        try:
            url = stack.enter_context(connect_server())
        except (RuntimeError, AssertionError) as exc:  # exited, or not listening in time; its stderr says more
            pytest.skip(f"a local Spark Connect server could not start here: {exc}")
        yield register(stack.enter_context(connect_session(url)))


def test_it_is_a_connect_session_without_a_jvm(connect: Any) -> None:
    """What the other tests rely on: the functions below cannot have reached the server's JVM through py4j."""
    from pyspark.errors import PySparkAttributeError

    assert type(connect).__module__ == "pyspark.sql.connect.session"
    with pytest.raises(PySparkAttributeError, match="JVM_ATTRIBUTE_NOT_SUPPORTED"):
        connect.sparkContext  # noqa: B018


def test_read_decode_aggregate_write_on_connect(connect: Any, registry_url: str, tmp_path: Path) -> None:
    """The pipeline of the classic tests, as one batch job: the log read by ``format("schemakit")``, two Avro
    writer versions decoded by ``from_registry`` (Python engine), a windowed aggregation, the sink."""
    from pyspark.sql import functions as F

    log_url = f"sqlite:///{tmp_path}/connect.db"
    source, sink = "orders", "order-totals"
    subject = f"connect-{uuid.uuid4().hex[:8]}-value"
    rows = [*orders(0, 24, minute=0), *orders(24, 9, minute=5)]
    with open_log(log_url) as log:
        log.create_topic(source, 2)
        log.create_topic(sink, 2)
        produce_orders(log, source, registry_url, subject, rows)

        raw = connect.read.format("schemakit").option("log", log_url).option("subscribe", source).load()
        assert sorted(r.offset for r in raw.where("partition = 0").select("offset").collect()) == list(range(17))
        decoded = raw.select(
            "timestamp", from_registry("value", registry_url, subject=subject, mode="FAILFAST").alias("o")
        )
        totals = decoded.groupBy(F.window("timestamp", "1 minute"), F.col("o.customer").alias("customer")).agg(
            F.count("*").alias("orders"),
            F.sum("o.amount").alias("total"),
            F.sum((F.col("o.channel") == "shop").cast("int")).alias("shop"),
        )
        (
            totals.select(
                F.concat_ws("/", F.unix_timestamp("window.start").cast("string"), "customer").alias("key"),
                F.to_json(F.struct("orders", "total", "shop")).alias("value"),
            )
            .write.format("schemakit")
            .option("log", log_url)
            .option("topic", sink)
            .mode("append")
            .save()
        )
        assert sink_table(log, sink) == reference(rows)


def test_to_registry_round_trip_on_connect(connect: Any, registry_url: str) -> None:
    """Rows encoded by ``to_registry`` on Connect: confluent-kafka's own deserializer reads them, and
    ``from_registry`` gives the rows back."""
    from pyspark.sql import functions as F

    subject = f"connect-{uuid.uuid4().hex[:8]}-value"
    people = [("ada", 36), ("grace", 45), ("linus", 28)]
    df = connect.createDataFrame(people, "customer string, amount long")
    framed = df.select(
        "customer",
        to_registry(
            F.struct("customer", "amount"), registry_url, subject=subject, schema=ORDER_V1, auto_register=True
        ).alias("value"),
    )
    back = framed.select(from_registry("value", registry_url, subject=subject).alias("o"), "value").collect()
    assert sorted((r.o.customer, r.o.amount) for r in back) == sorted(people)

    deserializer = CkAvroDeserializer(SchemaRegistryClient({"url": registry_url}))
    ctx = SerializationContext(subject.removesuffix("-value"), MessageField.VALUE)
    assert sorted((d["customer"], d["amount"]) for d in (deserializer(r.value, ctx) for r in back)) == sorted(people)


def test_auto_falls_back_to_python_with_one_line_and_jvm_is_an_error(
    connect: Any, registry_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    from serdes import AvroSerializer, RegistryClient

    subject = f"connect-{uuid.uuid4().hex[:8]}-value"
    with RegistryClient(registry_url) as client:
        frame = AvroSerializer(client, ORDER_V1, subject=subject)({"customer": "c1", "amount": 7})

    with caplog.at_level(logging.INFO, logger="serdes.spark"):
        column = from_registry("value", registry_url, subject=subject)  # engine="auto"
    lines = [r for r in caplog.records if r.name.startswith("serdes.spark")]
    assert len(lines) == 1 and lines[0].levelno == logging.WARNING
    message = lines[0].getMessage()
    assert "Python engine" in message and "spark.connect.extensions.expression.classes" in message
    decoded = connect.createDataFrame([(frame,)], "value binary").select(column.alias("o")).collect()
    assert [(r.o.customer, r.o.amount) for r in decoded] == [("c1", 7)]

    with pytest.raises(RuntimeError, match=r"engine='jvm'.*Spark Connect server does not load the JVM engine"):
        from_registry("value", registry_url, subject=subject, engine="jvm")
