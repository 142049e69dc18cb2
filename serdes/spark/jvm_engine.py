"""The JVM engine: ``from_registry`` as a Catalyst expression (Avro only).

The decoder (``schemakit.spark.AvroRegistryDecoder``, source in ``java/``) is created in the driver's JVM
through py4j from a JSON spec: the reader schema(s) with their named types and subjects, the mapped Spark type,
the registry options (``registry_options.py``), the mode and the optional columns. ``RegistryDecodeExpression``
applies it to the column; it is serialized to the executors with the plan and each executor JVM fetches writer
schemas by id itself and caches them (a static map), so it works the same in local and cluster mode as long as
the jar is on the session's classpath (``spark.jars``). The plan prints as ``from_registry(<col>)``: the spec,
which holds the registry credentials, is not shown.

A Spark Connect session has no py4j gateway (the client may run far from the server's JVM): there the same
expression is built by the server's plugin from an extension expression (``jvm_connect.py``), when the server was
started with it; ``unavailable_reason`` says why not otherwise, and ``from_registry`` then uses the Python engine
(``engine="auto"``) or fails (``engine="jvm"``). Nothing here touches ``sparkContext`` on a Connect session.
"""

from __future__ import annotations

import json
import threading
from typing import Any

from pyspark.sql import Column, SparkSession

from serdes.spark import jvm_connect
from serdes.spark.reader import ReaderSpec, RecordTypesSpec

__all__ = ["DECODER_CLASS", "decode_column", "is_connect", "unavailable_reason"]

DECODER_CLASS = "schemakit.spark.RegistryDecodeExpression"

_lock = threading.Lock()
_available: dict[int, bool] = {}


def _jvm(spark: SparkSession) -> Any:
    """The session's py4j view of the JVM. pyspark has no public API for py4j; ``SparkContext._jvm`` and
    ``_gateway`` are what its own JVM-backed functions use."""
    return spark.sparkContext._jvm


def is_connect(spark: SparkSession) -> bool:
    """Whether ``spark`` is a Spark Connect client session (``pyspark.sql.connect``), without importing Connect's
    modules (they need grpcio) when it is not."""
    return type(spark).__module__.startswith("pyspark.sql.connect.")


def unavailable_reason(spark: SparkSession) -> str | None:
    """Why the JVM engine cannot run on ``spark`` (one sentence), or None when it can."""
    if is_connect(spark):
        return jvm_connect.server_reason(spark)
    return None if _loads_decoder(spark) else _missing_jar(spark)


def _loads_decoder(spark: SparkSession) -> bool:
    """Whether the classic session's JVM can load the decoder class (answer cached per SparkContext)."""
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


def _missing_jar(spark: SparkSession) -> str:
    jars = spark.sparkContext.getConf().get("spark.jars", "")
    return (
        f"the JVM engine's class {DECODER_CLASS} is not on this session's classpath (spark.jars={jars!r}). "
        "Build the session with serdes.spark.spark_session(), or add serdes.spark.jar_path() to spark.jars "
        "(spark-submit --jars) before the session starts"
    )


def decoder_spec(spec: ReaderSpec | RecordTypesSpec, mode: str, error_column: bool, writer_id_column: bool) -> str:
    """The JSON the Java decoder is built from (it holds the registry options: never log it)."""
    branches = spec.branches if isinstance(spec, RecordTypesSpec) else (spec,)
    return json.dumps(
        {
            "registry": spec.registry.jvm_config(),
            "type": json.loads(spec.spark_type.json()),
            "branches": [{"reader": b.reader, "named": list(b.named), "subject": b.subject} for b in branches],
            "branchStruct": isinstance(spec, RecordTypesSpec),
            "failFast": mode == "FAILFAST",
            "errorColumn": error_column,
            "writerIdColumn": writer_id_column,
        }
    )


def decode_column(
    spark: SparkSession,
    col: Column,
    spec: ReaderSpec | RecordTypesSpec,
    mode: str,
    error_column: bool,
    writer_id_column: bool = False,
) -> Column:
    from serdes.spark.types import result_type

    out_type = result_type(spec.spark_type, error_column, writer_id_column)
    if is_connect(spark):
        return jvm_connect.decode_column(col, decoder_spec(spec, mode, error_column, writer_id_column), out_type.json())

    from pyspark.sql.classic.column import Column as ClassicColumn
    from pyspark.sql.classic.column import _to_java_column

    jvm = _jvm(spark).schemakit.spark
    decoder = jvm.AvroRegistryDecoder(decoder_spec(spec, mode, error_column, writer_id_column))
    return ClassicColumn(jvm.RegistryDecodeExpression.column(_to_java_column(col), decoder, out_type.json()))
