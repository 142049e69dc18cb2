"""Building a SparkSession that can run both engines.

Local mode: ``spark_session()`` puts the jar on ``spark.jars`` and makes Python workers use this interpreter.

Cluster mode (YARN, Kubernetes, standalone): ship the jar with the application and install schemakit (with
its ``spark`` extra) on every executor's Python, e.g.::

    spark-submit --jars "$(python -c 'import serdes.spark as s; print(s.jar_path())')" app.py

or ``SparkSession.builder.config("spark.jars", jar_path())`` before the first session is created. Spark copies
``spark.jars`` to every executor and adds it to the driver's and executors' classpaths; each executor JVM then
fetches writer schemas from the registry itself, so executors need HTTP access to the registry (for both
engines). The jar holds only schemakit's classes: Avro and Jackson come from Spark's own classpath.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from serdes.spark.build_jar import INSTALL_HINT, JAR

__all__ = ["jar_path", "register", "spark_session", "with_jar"]


def jar_path() -> str:
    """Path of the JVM engine's jar (package data). Raises FileNotFoundError with the build command if absent."""
    if not Path(JAR).exists():
        raise FileNotFoundError(
            f"{JAR} is missing: build it with `python -m serdes.spark.build_jar` "
            f"(needs {INSTALL_HINT.split(': ', 1)[1]})"
        )
    return str(JAR)


def with_jar(builder: SparkSession.Builder, jars: str | Iterable[str] = ()) -> SparkSession.Builder:
    """Set the builder's ``spark.jars`` to ``jars`` (a comma-separated string or a list) plus the JVM engine's jar.

    A builder's settings cannot be read back through pyspark's public API, so pass the other jars the session
    needs here: a ``config("spark.jars", ...)`` before or after this call would replace the whole list.
    """
    listed = jars.split(",") if isinstance(jars, str) else list(jars)
    return builder.config("spark.jars", ",".join(dict.fromkeys([*filter(None, listed), jar_path()])))


def register(spark: SparkSession) -> SparkSession:
    """Register the ``schemakit`` data source (``format("schemakit")``: a ``streams.log`` topic read and written
    like Spark's Kafka source) on ``spark`` and returns it. A Spark Connect session has the same
    ``spark.dataSource.register`` (the class is pickled to the server), so this is the call there too.

    Registration is per session and cheap; registering again replaces the class with the same one."""
    from serdes.spark.datasource.source import SchemakitDataSource

    spark.dataSource.register(SchemakitDataSource)
    return spark


def spark_session(
    master: str = "local[2]", app_name: str = "schemakit", conf: dict[str, Any] | None = None, jvm_engine: bool = True
) -> SparkSession:
    """A session for ``from_registry``/``to_registry`` and ``format("schemakit")`` (registered, see
    ``register``): the jar on ``spark.jars`` (when ``jvm_engine`` and the jar is built) and Python workers on this
    interpreter. ``conf`` adds Spark settings; jars in its ``spark.jars`` are kept next to the engine's.

    Like every ``getOrCreate``, an already running session is returned as it is (its classpath cannot change).
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    conf = dict(conf or {})
    builder = SparkSession.builder.master(master).appName(app_name)
    if jvm_engine and Path(JAR).exists():
        builder = with_jar(builder, conf.pop("spark.jars", ""))
    for key, value in conf.items():
        builder = builder.config(key, value)
    return register(builder.getOrCreate())
