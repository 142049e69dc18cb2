"""Engine selection, the session helper and the jar, and Structured Streaming (both engines)."""

from __future__ import annotations

import uuid
import zipfile

import pytest
from pyspark.sql import Row

from serdes import AvroSerializer
from serdes.spark import from_registry, jar_path

SCHEMA = {
    "type": "record",
    "name": "Tick",
    "fields": [{"name": "n", "type": "long"}, {"name": "label", "type": ["null", "string"]}],
}


def test_jar_holds_the_decoder_and_the_session_loads_it(spark) -> None:
    with zipfile.ZipFile(jar_path()) as jar:
        assert "schemakit/spark/AvroRegistryDecoder.class" in jar.namelist()
    assert jar_path() in spark.sparkContext.getConf().get("spark.jars")


class _RecordingBuilder:
    """Stands in for SparkSession.Builder: records what is configured."""

    def __init__(self) -> None:
        self.conf: dict[str, str] = {}

    def config(self, key: str, value: str) -> _RecordingBuilder:
        self.conf[key] = value
        return self


def test_with_jar_keeps_the_jars_it_is_given(monkeypatch: pytest.MonkeyPatch) -> None:
    from serdes.spark import session

    monkeypatch.setattr(session, "jar_path", lambda: "/x/schemakit-spark.jar")
    builder = _RecordingBuilder()
    session.with_jar(builder, "a.jar,,b.jar")
    assert builder.conf == {"spark.jars": "a.jar,b.jar,/x/schemakit-spark.jar"}
    session.with_jar(builder, ["/x/schemakit-spark.jar"])
    assert builder.conf == {"spark.jars": "/x/schemakit-spark.jar"}


def test_auto_picks_the_jvm_for_avro_and_python_otherwise(spark, client, registry_url, subject) -> None:
    frame = AvroSerializer(client, SCHEMA, subject=subject)({"n": 1, "label": None})
    df = spark.createDataFrame([(frame,)], "value binary")

    def plan(**kwargs) -> str:
        out = df.select(from_registry("value", registry_url, subject=subject, **kwargs))
        assert out.columns == ["from_registry(value)"]
        return out._jdf.queryExecution().executedPlan().toString()

    assert "ArrowEvalPython" not in plan() and "from_registry(value" in plan()
    assert "ArrowEvalPython" in plan(engine="python")
    with pytest.raises(ValueError, match="mode must be one of PERMISSIVE, FAILFAST"):
        from_registry("value", registry_url, subject=subject, mode="DROPMALFORMED")
    with pytest.raises(ValueError, match="needs subject="):
        from_registry("value", registry_url)


def test_structured_streaming(spark, client, registry_url, subject, engine, tmp_path) -> None:
    ser = AvroSerializer(client, SCHEMA, subject=subject)
    rows = [(k, ser({"n": k, "label": None if k % 2 else f"l{k}"})) for k in range(6)] + [(6, None)]
    spark.createDataFrame(rows, "k int, value binary").coalesce(1).write.parquet(str(tmp_path / "in"))
    name = f"ticks_{uuid.uuid4().hex[:8]}"
    stream = (
        spark.readStream.schema("k int, value binary")
        .parquet(str(tmp_path / "in"))
        .select("k", from_registry("value", registry_url, subject=subject, engine=engine).alias("t"))
    )
    query = (
        stream.writeStream.format("memory")
        .queryName(name)
        .trigger(availableNow=True)
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .start()
    )
    query.awaitTermination(120)
    got = spark.sql(f"select k, t from {name} order by k").collect()
    assert [r.t for r in got] == [Row(n=k, label=None if k % 2 else f"l{k}") for k in range(6)] + [None]
