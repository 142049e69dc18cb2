"""setuptools build hook: put the Spark JVM engine's jar into the wheel when it can be compiled here.

All metadata is in pyproject.toml; this file extends ``build_py``. After the Python files are copied, the
Java sources in ``serdes/spark/java`` are compiled (``serdes/spark/build_jar.py``, loaded by path: the build
environment has none of schemakit's dependencies) into ``serdes/spark/schemakit-spark.jar`` of the build, so
users of the wheel need no JDK. That needs ``javac`` and Spark's jars: pyspark installed in the build environment
(``pip wheel --no-build-isolation .`` from a venv with the spark extra, as ``make wheel`` does) or
``SPARK_HOME``. ``SCHEMAKIT_SPARK_JAR`` says what to do: ``auto`` (default: build the jar when both are there,
else say why not and go on without it), ``require`` (fail the build without them) or ``skip``. A wheel without
the jar still works: ``python -m serdes.spark.build_jar`` builds it after installation, or the Python engine runs.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
MODES = ("auto", "require", "skip")


def _load_build_jar():
    spec = importlib.util.spec_from_file_location("schemakit_build_jar", HERE / "serdes" / "spark" / "build_jar.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class BuildPyWithSparkJar(build_py):
    def run(self) -> None:
        super().run()
        mode = os.environ.get("SCHEMAKIT_SPARK_JAR", "auto").lower()
        if mode not in MODES:
            raise SystemExit(f"SCHEMAKIT_SPARK_JAR must be one of {', '.join(MODES)}, not {mode!r}")
        if mode == "skip":
            return
        build_jar = _load_build_jar()
        jars = build_jar.spark_jars()
        missing = [
            what
            for what, ok in (
                ("javac (a JDK 17+)", shutil.which("javac") is not None),
                ("Spark's jars (pyspark in the build environment, or SPARK_HOME)", jars is not None),
            )
            if not ok
        ]
        if missing:
            message = (
                f"schemakit: the Spark JVM engine's jar is not in this build: no {' and no '.join(missing)}. "
                "Build it after installing with `python -m serdes.spark.build_jar`, or build the wheel with "
                "`pip wheel --no-build-isolation .` where pyspark and a JDK are installed"
            )
            if mode == "require":
                raise SystemExit(message)
            print(message)
            return
        # an editable install uses the source tree, where `make spark-jar` also writes it
        target = build_jar.JAR if self.editable_mode else Path(self.build_lib) / "serdes" / "spark" / build_jar.JAR.name
        if self.editable_mode and build_jar.up_to_date():
            return
        print(f"schemakit: compiling the Spark JVM engine's jar against {jars}")
        build_jar.compile_jar(target, jars)


setup(cmdclass={"build_py": BuildPyWithSparkJar})
