"""Build the JVM engine's jar: ``python -m serdes.spark.build_jar [--force]``.

Compiles ``serdes/spark/java/**/*.java`` with ``javac --release 17`` against Spark's jars (pyspark's, or
``$SPARK_HOME/jars``: Spark's SQL API, catalyst and Connect server, and the Avro 1.12 jar Spark bundles), and writes
``serdes/spark/schemakit-spark.jar`` (package data). Does nothing when the jar is newer than every source. Exits 1
with an install hint when javac is missing.

The wheel build runs the same compilation (``setup.py``'s build hook calls ``compile_jar``), so a wheel built
where a JDK and Spark's jars are at hand carries the jar and its users need no ``javac``. This module imports
only the standard library at the top: the hook loads it by path, without the ``serdes`` package's dependencies.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCES = HERE / "java"
JAR = HERE / "schemakit-spark.jar"
INSTALL_HINT = (
    "javac (a JDK 17+) is needed to build the Spark JVM engine: on Debian/Ubuntu "
    "`apt-get install openjdk-17-jdk-headless`"
)


def sources() -> list[Path]:
    return sorted(SOURCES.rglob("*.java"))


def up_to_date() -> bool:
    if not JAR.exists():
        return False
    built = JAR.stat().st_mtime
    return all(src.stat().st_mtime <= built for src in sources())


def _holds_spark(jars: Path) -> bool:
    return (
        any(jars.glob("avro-1.*.jar"))
        and any(jars.glob("spark-sql-api_*.jar"))
        and any(jars.glob("spark-catalyst_*.jar"))
        and any(jars.glob("spark-connect_*.jar"))  # the Connect plugin (ConnectDecodePlugin.java)
    )


def spark_jars() -> Path | None:
    """Spark's jar folder: installed pyspark's (found without importing it), else ``$SPARK_HOME/jars``."""
    spec = importlib.util.find_spec("pyspark")
    candidates = [Path(spec.origin).parent / "jars"] if spec is not None and spec.origin else []
    if os.environ.get("SPARK_HOME"):
        candidates.append(Path(os.environ["SPARK_HOME"]) / "jars")
    return next((jars for jars in candidates if _holds_spark(jars)), None)


def build(force: bool = False) -> Path:
    """Compile and package the jar (unless up to date); returns its path."""
    if not force and up_to_date():
        return JAR
    if shutil.which("javac") is None:
        raise SystemExit(INSTALL_HINT)
    jars = spark_jars()
    if jars is None:
        raise SystemExit(
            "Spark's jars (spark-sql-api, spark-catalyst, spark-connect, avro) were not found: install pyspark "
            "(pip install 'schemakit[spark]') or set SPARK_HOME"
        )
    return compile_jar(JAR, jars)


def compile_jar(out: Path, jars: Path) -> Path:
    """Compile the sources against the jars in ``jars`` and write the jar to ``out`` (atomically)."""
    javac = shutil.which("javac")
    if javac is None:
        raise SystemExit(INSTALL_HINT)
    classpath = str(jars / "*")
    with tempfile.TemporaryDirectory(prefix="schemakit-jar-") as tmp:
        classes = Path(tmp) / "classes"
        cmd = [
            javac,
            "--release",
            "17",
            "-encoding",
            "UTF-8",
            "-Xlint:-options",
            "-cp",
            classpath,
            "-d",
            str(classes),
            *map(str, sources()),
        ]
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise SystemExit(f"javac failed:\n{done.stdout}{done.stderr}")
        out.parent.mkdir(parents=True, exist_ok=True)
        partial = out.with_suffix(".jar.tmp")
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as jar:
            jar.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\r\nCreated-By: schemakit build_jar\r\n\r\n")
            for cls in sorted(classes.rglob("*.class")):
                info = zipfile.ZipInfo(cls.relative_to(classes).as_posix(), time.localtime(cls.stat().st_mtime)[:6])
                info.compress_type = zipfile.ZIP_DEFLATED
                jar.writestr(info, cls.read_bytes())
        partial.replace(out)
    return out


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    fresh = not up_to_date()
    path = build(force="--force" in argv)
    print(f"{'built' if fresh or '--force' in argv else 'up to date'}: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
