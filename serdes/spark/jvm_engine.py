"""The JVM engine: ``from_registry`` as a Java UDF column (Avro only).

The decoder object (``schemakit.spark.AvroRegistryDecoder``, source in ``java/``) is created in the driver's
JVM through py4j with the reader schema and registry URL; its Java ``column`` method wraps it with
``org.apache.spark.sql.functions.udf`` and the mapped Spark type (in Java, so that javac rather than py4j picks
the typed overload) and applies it to the column. It is serialized to the executors with the plan; each
executor JVM fetches writer schemas by id itself and caches them (a static map), so it works the same in local
and cluster mode as long as the jar is on the session's classpath (``spark.jars``).
"""

from __future__ import annotations

import threading
from typing import Any

from pyspark.sql import Column, SparkSession

from serdes.spark.reader import ReaderSpec

__all__ = ["DECODER_CLASS", "available", "decode_column", "missing_message"]

DECODER_CLASS = "schemakit.spark.AvroRegistryDecoder"

_lock = threading.Lock()
_available: dict[int, bool] = {}


def _jvm(spark: SparkSession) -> Any:
    """The session's py4j view of the JVM. pyspark has no public API for py4j; ``SparkContext._jvm`` and
    ``_gateway`` are what its own JVM-backed functions use."""
    return spark.sparkContext._jvm


def _java_strings(spark: SparkSession, items: tuple[str, ...]) -> Any:
    """A Java ``String[]`` (py4j converts Python lists to ``java.util.List``, not to arrays)."""
    gateway: Any = spark.sparkContext._gateway
    array = gateway.new_array(_jvm(spark).String, len(items))
    for i, item in enumerate(items):
        array[i] = item
    return array


def available(spark: SparkSession) -> bool:
    """Whether the session's JVM can load the decoder class (answer cached per SparkContext)."""
    key = id(spark.sparkContext)
    hit = _available.get(key)
    if hit is None:
        with _lock:
            try:
                _jvm(spark).org.apache.spark.util.Utils.classForName(DECODER_CLASS, True, False)
                hit = True
            except Exception:  # py4j reports ClassNotFoundException as Py4JJavaError
                hit = False
            _available[key] = hit
    return hit


def missing_message(spark: SparkSession) -> str:
    jars = spark.sparkContext.getConf().get("spark.jars", "")
    return (f"the JVM engine's class {DECODER_CLASS} is not on this session's classpath (spark.jars={jars!r}). "
            "Build the session with serdes.spark.spark_session(), or add serdes.spark.jar_path() to spark.jars "
            "(spark-submit --jars) before the session starts; or use engine='python'.")


def decode_column(spark: SparkSession, col: Column, spec: ReaderSpec, mode: str, error_column: bool) -> Column:
    from pyspark.sql.classic.column import Column as ClassicColumn
    from pyspark.sql.classic.column import _to_java_column

    from serdes.spark.functions import result_type

    named = _java_strings(spark, spec.named)
    decoder = _jvm(spark).schemakit.spark.AvroRegistryDecoder(spec.registry, spec.reader, named, mode == "FAILFAST",
                                                              error_column)
    return ClassicColumn(decoder.column(_to_java_column(col), result_type(spec, error_column).json()))
