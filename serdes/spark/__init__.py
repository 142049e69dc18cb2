"""PySpark column functions for registry-framed payloads (``pip install schemakit[spark]``).

    from serdes.spark import from_registry, to_registry, spark_session
    spark = spark_session()                       # local[2] with the JVM engine's jar on spark.jars
    orders = df.select(from_registry("value", "http://registry:8081", subject="orders-value").alias("order"))
    back = orders.select(to_registry("order", "http://registry:8081", subject="orders-value").alias("value"))

See ``functions.py`` for the engines, ``types.py`` for the schema -> Spark type mapping and ``session.py`` for
running on a cluster. Names are imported on first use, so ``python -m serdes.spark.build_jar`` runs without
importing pyspark's SQL machinery.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "from_registry": "serdes.spark.functions",
    "to_registry": "serdes.spark.functions",
    "DecodeFailure": "serdes.spark.python_engine",
    "jar_path": "serdes.spark.session",
    "spark_session": "serdes.spark.session",
    "with_jar": "serdes.spark.session",
    "SchemaMappingError": "serdes.spark.types",
    "avro_to_spark": "serdes.spark.types",
    "json_schema_to_spark": "serdes.spark.types",
    "protobuf_to_spark": "serdes.spark.types",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'serdes.spark' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
