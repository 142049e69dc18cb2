"""PySpark column functions for registry-framed payloads (``pip install 'schemakit[spark]'``).

    from serdes.spark import from_registry, to_registry, spark_session
    spark = spark_session()                       # local[2] with the JVM engine's jar on spark.jars
    orders = df.select(from_registry("value", "http://registry:8081", subject="orders-value").alias("order"))
    back = orders.select(to_registry("order", "http://registry:8081", subject="orders-value").alias("value"))

See ``functions.py`` for the engines, ``types.py`` for the schema -> Spark type mapping and ``session.py`` for
running on a cluster. Importing this package (or any module in it) without the ``spark`` extra raises one
ImportError naming it; that check only looks the packages up. The names below are imported on first use, so
``python -m serdes.spark.build_jar`` does not load the column functions and their pyarrow/pandas machinery.
The rest of serdes never imports this package.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import Any

# What the spark extra installs (pyproject.toml); pandas is needed by pyspark's Arrow UDFs.
_EXTRA_MODULES = ("pyspark", "pyarrow", "pandas")
_missing = [name for name in _EXTRA_MODULES if importlib.util.find_spec(name) is None]
if _missing:
    raise ImportError(
        f"serdes.spark needs {', '.join(_missing)} (not installed): pip install 'schemakit[spark]'", name=_missing[0]
    )

_EXPORTS = {
    "from_registry": "serdes.spark.functions",
    "to_registry": "serdes.spark.functions",
    "DecodeFailure": "serdes.spark.python_engine",
    "jar_path": "serdes.spark.session",
    "register": "serdes.spark.session",
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
