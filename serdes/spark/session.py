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
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from serdes.spark.build_jar import INSTALL_HINT, JAR

__all__ = ["jar_path", "spark_session", "with_jar"]


def jar_path() -> str:
    """Path of the JVM engine's jar (package data). Raises FileNotFoundError with the build command if absent."""
    if not Path(JAR).exists():
        raise FileNotFoundError(f"{JAR} is missing: build it with `python -m serdes.spark.build_jar` "
                                f"(needs {INSTALL_HINT.split(': ', 1)[1]})")
    return str(JAR)


def with_jar(builder: SparkSession.Builder) -> SparkSession.Builder:
    """Add the jar to a builder's ``spark.jars`` (keeping jars already listed there)."""
    existing = builder._options.get("spark.jars", "")  # type: ignore[attr-defined]
    jars = [j for j in existing.split(",") if j] + [jar_path()]
    return builder.config("spark.jars", ",".join(dict.fromkeys(jars)))


def spark_session(master: str = "local[2]", app_name: str = "schemakit", conf: dict[str, Any] | None = None,
                  jvm_engine: bool = True) -> SparkSession:
    """A session for ``from_registry``/``to_registry``: the jar on ``spark.jars`` (when ``jvm_engine`` and the
    jar is built) and Python workers on this interpreter. ``conf`` adds Spark settings.

    Like every ``getOrCreate``, an already running session is returned as it is (its classpath cannot change).
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.master(master).appName(app_name)
    if jvm_engine and Path(JAR).exists():
        builder = with_jar(builder)
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    return builder.getOrCreate()
