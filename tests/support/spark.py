"""Spark for the tests: whether this machine can run them (a JDK with ``javac``, the spark extra), and the one
local Spark session a test session uses, with the JVM engine's jar built first."""

from __future__ import annotations

import importlib.util
import os
import shutil
import time
from typing import Any

JDK_HINT = "Spark tests need a JDK 17 (java and javac): apt-get install openjdk-17-jdk-headless"
SPARK_HINT = "Spark tests need the spark extra: pip install -e '.[spark]'"

#: the settings of every Spark the tests run: the local session and the Spark Connect server
#: (``spark_connect.py``): two shuffle partitions, a small driver, no UI, UTC, reused Python workers
TEST_CONF = {
    "spark.sql.shuffle.partitions": "2",
    "spark.driver.memory": "768m",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.session.timeZone": "UTC",
    "spark.python.worker.reuse": "true",
}


def missing_prerequisite() -> str | None:
    """Why the Spark tests cannot run here (an install hint), or None when they can."""
    if shutil.which("java") is None or shutil.which("javac") is None:
        return JDK_HINT
    for module in ("pyspark", "pyarrow"):
        if importlib.util.find_spec(module) is None:
            return SPARK_HINT
    return None


def start_session() -> Any:
    """A ``local[2]`` session in UTC with the JVM engine's jar (built here when it is missing or stale)."""
    from serdes.spark import build_jar, spark_session

    build_jar.build()
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ["TZ"] = "UTC"  # pyspark turns timestamps into naive datetimes in the local zone
    time.tzset()
    session = spark_session(
        "local[2]",
        "schemakit-tests",
        conf=TEST_CONF,
    )
    session.sparkContext.setLogLevel("ERROR")
    return session
